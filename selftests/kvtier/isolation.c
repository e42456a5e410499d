// SPDX-License-Identifier: GPL-2.0
/*
 * Tenant isolation: what a process can reach in kvtier is decided by its
 * credentials, like files (Documentation/userspace-api.rst, "Security
 * model"), and every denial has its exact errno.
 *
 *  - POOL_OPEN and POOL_CREATE with KVTIER_POOL_OPEN_EXISTING check the
 *    pool's owner, group and mode: read always, write unless RDONLY;
 *    the owner class decides alone when the caller is the owner, then the
 *    group class (supplementary groups count), then other (-EACCES);
 *    CAP_DAC_OVERRIDE bypasses;
 *  - POOL_DESTROY: the owner or CAP_SYS_ADMIN (-EPERM), whatever the mode;
 *  - a read-only fd: no PUT, DROP, SYNC (-EBADF); no writable mapping
 *    (-EACCES, and mprotect cannot add it); no pool fd can be reopened
 *    through /proc (-ENXIO, whoever holds it);
 *  - NVME_ATTACH, NVME_DETACH need CAP_SYS_ADMIN (-EPERM);
 *  - an fd passed with SCM_RIGHTS keeps the rights it was opened with, no
 *    more and no less;
 *  - keys are scoped to a pool: another pool never finds, drops, pins or
 *    counts them, its mappings never show them; pins are per fd;
 *  - per-pool sysfs files are root's only.
 *
 * The tests run as root in the VM; each tenant is a forked child that took
 * other uids and gids (setresuid/setresgid), or root without a capability.
 */
#include <linux/capability.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <setjmp.h>

#include "kvtier_test.h"

#define UID_A	1000		/* tenant A: owns the pools */
#define UID_B	1001		/* tenant B: another tenant */
#define UID_C	1002		/* tenant C: in A's group */
#define GID_A	2000		/* A's group */
#define GID_B	2001

#define BS	KST_PAGE

/* ---- identities -------------------------------------------------------- */

/* Become @uid with primary group @gid and supplementary @sup (-1: none). */
static int become(uid_t uid, gid_t gid, gid_t sup)
{
	if (setgroups(sup == (gid_t)-1 ? 0 : 1, &sup))
		return -errno;
	if (setresgid(gid, gid, gid))
		return -errno;
	if (setresuid(uid, uid, uid))
		return -errno;
	return 0;
}

/* Root without one capability (effective, permitted and inheritable). */
static int drop_cap(int cap)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -errno;
	d[cap / 32].effective &= ~(1u << (cap % 32));
	d[cap / 32].permitted &= ~(1u << (cap % 32));
	d[cap / 32].inheritable &= ~(1u << (cap % 32));
	if (syscall(SYS_capset, &h, d))
		return -errno;
	return 0;
}

struct who {
	const char *name;
	uid_t uid;
	gid_t gid;
	gid_t sup;
	int drop;	/* root without this capability; -1: none */
};

static const struct who TENANT_A = { "A (owner)", UID_A, GID_A, -1, -1 };
static const struct who TENANT_B = { "B (other)", UID_B, GID_B, -1, -1 };
static const struct who TENANT_C = { "C (group, supplementary)", UID_C, GID_B,
				     GID_A, -1 };
static const struct who TENANT_CP = { "C (group, primary)", UID_C, GID_A, -1,
				      -1 };
static const struct who ROOT_NO_DAC = { "root without CAP_DAC_OVERRIDE", 0, 0,
					-1, CAP_DAC_OVERRIDE };
static const struct who ROOT_NO_ADMIN = { "root without CAP_SYS_ADMIN", 0, 0,
					  -1, CAP_SYS_ADMIN };

static int assume(const struct who *w)
{
	if (w->drop >= 0)
		return drop_cap(w->drop);
	return become(w->uid, w->gid, w->sup);
}

/*
 * Run @fn(arg) in a child as @w; the child's exit code: 0 when all its
 * expectations held, else the line number of the first that did not.
 */
static int as(const struct who *w, int (*fn)(void *), void *arg)
{
	pid_t pid = kst_fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (assume(w))
			_exit(250);
		_exit(fn(arg));
	}
	return kst_wait(pid);
}

/* In a child: report and return the line when @got is not @want. */
#define CHILD_EXPECT(want, got) do { \
	long long __w = (want), __g = (got); \
	if (__w != __g) { \
		fprintf(stderr, "# %s:%d: %s: %lld, wanted %lld\n", \
			__FILE__, __LINE__, #got, __g, __w); \
		return __LINE__ & 0xff ?: 1; \
	} \
} while (0)

/* ---- pools owned by tenant A ------------------------------------------- */

struct mk {
	const char *name;
	__u32 mode;
	__u32 cap;
};

static int child_create(void *arg)
{
	struct mk *m = arg;
	struct kvtier_pool_create c;
	int ctl = kst_ctl_open(), fd;

	CHILD_EXPECT(1, ctl >= 0);
	kst_create_init(&c, m->name, BS, m->cap ?: 8, m->cap ?: 8);
	c.mode = m->mode;
	fd = kst_create(ctl, &c);
	CHILD_EXPECT(1, fd >= 0);
	close(fd);
	close(ctl);
	return 0;
}

/* Tenant A creates pool @name with @mode; it outlives A's process. */
static int a_creates(const char *name, __u32 mode)
{
	struct mk m = { .name = name, .mode = mode };

	return as(&TENANT_A, child_create, &m);
}

FIXTURE(iso) {
	int ctl;
	char name[KVTIER_NAME_MAX];
	char name2[KVTIER_NAME_MAX];
	char *buf;
	char *out;
};

FIXTURE_SETUP(iso)
{
	kst_setup(_metadata);

	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	kst_name(self->name, "iso");
	kst_name(self->name2, "iso");
	self->buf = kst_alloc(BS);
	self->out = kst_alloc(BS);
	ASSERT_NE(NULL, self->buf);
	ASSERT_NE(NULL, self->out);
}

FIXTURE_TEARDOWN(iso)
{
	kst_pool_destroy(self->ctl, self->name);
	kst_pool_destroy(self->ctl, self->name2);
	kst_free(self->buf, BS);
	kst_free(self->out, BS);
	close(self->ctl);
}

/* ---- the open matrix --------------------------------------------------- */

/*
 * What the file model says: the class of the caller (owner, else group,
 * else other) alone decides; read always needed, write unless read-only.
 */
static int want_open(__u32 mode, int class, bool rdonly)
{
	unsigned int bits;

	if (!mode)
		mode = 0600;
	bits = (mode >> (class == 0 ? 6 : class == 1 ? 3 : 0)) & 7;
	if (!(bits & 4))
		return -EACCES;
	if (!rdonly && !(bits & 2))
		return -EACCES;
	return 0;
}

struct open_try {
	const char *name;
	bool rdonly;
	bool existing;	/* through POOL_CREATE with OPEN_EXISTING */
	int want;
};

static int child_open(void *arg)
{
	struct open_try *o = arg;
	struct kvtier_pool_stat st;
	int ctl = kst_ctl_open(), fd;

	CHILD_EXPECT(1, ctl >= 0);
	if (o->existing) {
		struct kvtier_pool_create c;

		/* another geometry: it is the existing pool that opens */
		kst_create_init(&c, o->name, 2 * BS, 3, 3);
		c.flags = KVTIER_POOL_OPEN_EXISTING |
			  (o->rdonly ? KVTIER_POOL_RDONLY : 0);
		fd = kst_create(ctl, &c);
	} else {
		fd = kst_pool_open(ctl, o->name,
				   o->rdonly ? KVTIER_POOL_RDONLY : 0);
	}
	if (o->want) {
		CHILD_EXPECT(o->want, fd);
		return 0;
	}
	CHILD_EXPECT(1, fd >= 0);
	CHILD_EXPECT(0, kst_stat(fd, &st));
	CHILD_EXPECT(UID_A, st.uid);
	CHILD_EXPECT(BS, st.block_size);
	close(fd);
	return 0;
}

/* The same data as iso; its own fixture, so only the matrix varies. */
FIXTURE(modes) {
	int ctl;
	char name[KVTIER_NAME_MAX];
};

FIXTURE_SETUP(modes)
{
	kst_setup(_metadata);

	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	kst_name(self->name, "isom");
}

FIXTURE_TEARDOWN(modes)
{
	kst_pool_destroy(self->ctl, self->name);
	close(self->ctl);
}

FIXTURE_VARIANT(modes) {
	__u32 mode;
};

FIXTURE_VARIANT_ADD(modes, m0000) { .mode = 0 };		/* means 0600 */
FIXTURE_VARIANT_ADD(modes, m0600) { .mode = 0600 };
FIXTURE_VARIANT_ADD(modes, m0400) { .mode = 0400 };
FIXTURE_VARIANT_ADD(modes, m0200) { .mode = 0200 };
FIXTURE_VARIANT_ADD(modes, m0640) { .mode = 0640 };
FIXTURE_VARIANT_ADD(modes, m0660) { .mode = 0660 };
FIXTURE_VARIANT_ADD(modes, m0620) { .mode = 0620 };
FIXTURE_VARIANT_ADD(modes, m0644) { .mode = 0644 };
FIXTURE_VARIANT_ADD(modes, m0666) { .mode = 0666 };
FIXTURE_VARIANT_ADD(modes, m0604) { .mode = 0604 };
FIXTURE_VARIANT_ADD(modes, m0066) { .mode = 0066 };	/* owner shut out */
FIXTURE_VARIANT_ADD(modes, m0006) { .mode = 0006 };
FIXTURE_VARIANT_ADD(modes, m0777) { .mode = 0777 };

/*
 * Every tenant class x read-only/read-write x POOL_OPEN/OPEN_EXISTING
 * against the file model, with root without CAP_DAC_OVERRIDE as "other"
 * and root with it always let in.
 */
TEST_F(modes, open_matrix)
{
	static const struct { const struct who *w; int class; } tries[] = {
		{ &TENANT_A, 0 }, { &TENANT_C, 1 }, { &TENANT_CP, 1 },
		{ &TENANT_B, 2 }, { &ROOT_NO_DAC, 2 },
	};
	struct open_try o = { .name = self->name };
	unsigned int i, ro, ex;
	int pfd;

	ASSERT_EQ(0, a_creates(self->name, variant->mode));
	for (i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		for (ro = 0; ro < 2; ro++) {
			for (ex = 0; ex < 2; ex++) {
				o.rdonly = ro;
				o.existing = ex;
				o.want = want_open(variant->mode,
						   tries[i].class, ro);
				EXPECT_EQ(0, as(tries[i].w, child_open, &o))
					TH_LOG("%s, %s, %s: wanted %d",
					       tries[i].w->name,
					       ro ? "read-only" : "read-write",
					       ex ? "OPEN_EXISTING" : "POOL_OPEN",
					       o.want);
			}
		}
	}
	/* root (CAP_DAC_OVERRIDE) opens whatever the mode */
	pfd = kst_pool_open(self->ctl, self->name, 0);
	ASSERT_LE(0, pfd);
	close(pfd);
}

/* ---- destroy ----------------------------------------------------------- */

struct destroy_try {
	const char *name;
	int want;
};

static int child_destroy(void *arg)
{
	struct destroy_try *d = arg;
	int ctl = kst_ctl_open();

	CHILD_EXPECT(1, ctl >= 0);
	CHILD_EXPECT(d->want, kst_pool_destroy(ctl, d->name));
	return 0;
}

/* Only the owner or CAP_SYS_ADMIN destroys, whatever the mode allows. */
TEST_F(iso, destroy_needs_owner_or_admin)
{
	struct destroy_try d = { .name = self->name, .want = -EPERM };
	int pfd;

	ASSERT_EQ(0, a_creates(self->name, 0666));
	EXPECT_EQ(0, as(&TENANT_B, child_destroy, &d));
	EXPECT_EQ(0, as(&TENANT_C, child_destroy, &d));
	EXPECT_EQ(0, as(&ROOT_NO_ADMIN, child_destroy, &d));
	/* still there, for everyone */
	pfd = kst_pool_open(self->ctl, self->name, 0);
	ASSERT_LE(0, pfd);
	close(pfd);
	/* an unknown name is -ENOENT for anyone: no EPERM before lookup */
	d.name = self->name2;
	d.want = -ENOENT;
	EXPECT_EQ(0, as(&TENANT_B, child_destroy, &d));
	/* the owner may */
	d.name = self->name;
	d.want = 0;
	EXPECT_EQ(0, as(&TENANT_A, child_destroy, &d));
	ASSERT_EQ(-ENOENT, kst_pool_open(self->ctl, self->name, 0));
}

/* Root with CAP_SYS_ADMIN destroys another tenant's pool. */
TEST_F(iso, destroy_by_admin)
{
	ASSERT_EQ(0, a_creates(self->name, 0600));
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, self->name));
	ASSERT_EQ(-ENOENT, kst_pool_open(self->ctl, self->name, 0));
}

/* ---- read-only fds ----------------------------------------------------- */

static sigjmp_buf probe_env;

static void on_segv(int sig)
{
	siglongjmp(probe_env, sig);
}

/* Write one byte at @p; 0 or the signal that stopped it. */
static int probe_write(char *p)
{
	struct sigaction sa = { .sa_handler = on_segv }, old_segv, old_bus;
	int sig;

	sigaction(SIGSEGV, &sa, &old_segv);
	sigaction(SIGBUS, &sa, &old_bus);
	sig = sigsetjmp(probe_env, 1);
	if (!sig)
		*(volatile char *)p = 1;
	sigaction(SIGSEGV, &old_segv, NULL);
	sigaction(SIGBUS, &old_bus, NULL);
	return sig;
}

struct ro_arg {
	const char *name;
	__u64 k1;
};

/* Everything a read-only fd refuses, and what it still does. */
static int ro_checks(int fd, __u64 k0, __u64 k1, __u64 gen)
{
	char *buf = kst_alloc(BS), *map;
	struct kvtier_sync s;
	int i;

	CHILD_EXPECT(1, buf != NULL);
	kst_fill(buf, BS, k0, 99, 1);
	CHILD_EXPECT(-EBADF, kst_put1(fd, k0, 99, buf, NULL));
	CHILD_EXPECT(-EBADF, kst_replace1(fd, k0, k1, buf, NULL));
	CHILD_EXPECT(-EBADF, kst_drop1(fd, k0, k1));
	memset(&s, 0, sizeof(s));
	CHILD_EXPECT(-EBADF, kst_ioctl(fd, KVTIER_IOC_SYNC, &s));
	/* reads work, the block is untouched */
	CHILD_EXPECT(0, kst_get1(fd, k0, k1, buf, NULL));
	CHILD_EXPECT(-1, kst_check_gen(buf, BS, k0, k1, gen));
	CHILD_EXPECT(0, kst_lookup1(fd, k0, k1, NULL));
	CHILD_EXPECT(-ENOENT, kst_lookup1(fd, k0, 99, NULL));
	CHILD_EXPECT(0, kst_pin1(fd, k0, k1));
	CHILD_EXPECT(0, kst_unpin1(fd, k0, k1));
	/* mappings: read only, shared or private, now or later */
	for (i = 0; i < 2; i++) {
		int flags = i ? MAP_PRIVATE : MAP_SHARED;

		map = mmap(NULL, BS, PROT_READ | PROT_WRITE, flags, fd, 0);
		CHILD_EXPECT(1, map == MAP_FAILED);
		CHILD_EXPECT(EACCES, errno);
		map = mmap(NULL, BS, PROT_WRITE, flags, fd, 0);
		CHILD_EXPECT(1, map == MAP_FAILED);
		CHILD_EXPECT(EACCES, errno);
		map = mmap(NULL, BS, PROT_READ, flags, fd, 0);
		CHILD_EXPECT(1, map != MAP_FAILED);
		CHILD_EXPECT(-1, mprotect(map, BS, PROT_READ | PROT_WRITE));
		CHILD_EXPECT(EACCES, errno);
		CHILD_EXPECT(SIGSEGV, probe_write(map));
		munmap(map, BS);
	}
	kst_free(buf, BS);
	return 0;
}

static int child_ro(void *arg)
{
	struct ro_arg *r = arg;
	int ctl = kst_ctl_open(), fd, ret;

	CHILD_EXPECT(1, ctl >= 0);
	fd = kst_pool_open(ctl, r->name, KVTIER_POOL_RDONLY);
	CHILD_EXPECT(1, fd >= 0);
	ret = ro_checks(fd, 0x150, r->k1, 7);
	close(fd);
	return ret;
}

/* A read-only open by another tenant (mode 0644) and by the owner. */
TEST_F(iso, rdonly_fd_refuses_writes)
{
	struct ro_arg r = { .name = self->name, .k1 = 1 };
	int pfd;

	ASSERT_EQ(0, a_creates(self->name, 0644));
	pfd = kst_pool_open(self->ctl, self->name, 0);
	ASSERT_LE(0, pfd);
	kst_fill(self->buf, BS, 0x150, 1, 7);
	ASSERT_EQ(0, kst_put1(pfd, 0x150, 1, self->buf, NULL));
	EXPECT_EQ(0, as(&TENANT_B, child_ro, &r));
	EXPECT_EQ(0, as(&TENANT_A, child_ro, &r));
	/* root's read-only fd too: CAP_DAC_OVERRIDE does not lift RDONLY */
	close(pfd);
	pfd = kst_pool_open(self->ctl, self->name, KVTIER_POOL_RDONLY);
	ASSERT_LE(0, pfd);
	EXPECT_EQ(0, ro_checks(pfd, 0x150, 1, 7));
	close(pfd);
}

/* A read-write fd maps read-only too: mappings never write. */
TEST_F(iso, rdwr_fd_maps_read_only)
{
	char *map;
	int pfd;

	pfd = kst_pool_create(self->ctl, self->name, BS, 4, 4);
	ASSERT_LE(0, pfd);
	map = mmap(NULL, BS, PROT_READ | PROT_WRITE, MAP_SHARED, pfd, 0);
	ASSERT_EQ(MAP_FAILED, map);
	ASSERT_EQ(EACCES, errno);
	map = mmap(NULL, BS, PROT_READ, MAP_SHARED, pfd, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(-1, mprotect(map, BS, PROT_READ | PROT_WRITE));
	ASSERT_EQ(EACCES, errno);
	munmap(map, BS);
	close(pfd);
}

/*
 * A read-only fd cannot become a writable one through /proc/self/fd: the
 * pool inode does not open (ENXIO), so the rights stay those of the open.
 */
TEST_F(iso, rdonly_fd_no_reopen)
{
	char path[64];
	int pfd, fd;

	pfd = kst_pool_create(self->ctl, self->name, BS, 4, 4);
	ASSERT_LE(0, pfd);
	close(pfd);
	pfd = kst_pool_open(self->ctl, self->name, KVTIER_POOL_RDONLY);
	ASSERT_LE(0, pfd);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", pfd);
	fd = open(path, O_RDWR | O_CLOEXEC);
	EXPECT_EQ(-1, fd);
	EXPECT_EQ(ENXIO, errno);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	EXPECT_EQ(-1, fd);
	EXPECT_EQ(ENXIO, errno);
	if (fd >= 0)
		close(fd);
	close(pfd);
}

/*
 * Nor can a holder that is not the pool's creator reopen its fd: -ENXIO as
 * for the creator, not the -EACCES of the pool inode's permission bits.
 */
TEST_F(iso, passed_fd_no_reopen)
{
	struct kvtier_pool_create c;
	pid_t pid;
	int pfd;

	kst_create_init(&c, self->name, BS, 4, 4);
	c.mode = 0666;
	pfd = kst_create(self->ctl, &c);
	ASSERT_LE(0, pfd);
	pid = kst_fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		char path[64];
		int fd;

		if (kst_become(65534, 65534))
			_exit(10);
		prctl(PR_SET_DUMPABLE, 1);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", pfd);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd >= 0 || errno != ENXIO)
			_exit(errno == EACCES ? 11 : 12);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 || errno != ENXIO)
			_exit(errno == EACCES ? 13 : 14);
		/* The fd it holds still works. */
		_exit(kst_resident(pfd) == 0 ? 0 : 15);
	}
	ASSERT_EQ(0, kst_wait(pid));
	close(pfd);
}

/* ---- admin commands ---------------------------------------------------- */

static int child_admin(void *arg)
{
	struct kvtier_nvme_attach a;
	struct kvtier_nvme_detach d;
	struct kvtier_nvme_stat st;
	int ctl = kst_ctl_open();

	(void)arg;
	CHILD_EXPECT(1, ctl >= 0);
	memset(&a, 0, sizeof(a));
	a.path = (__u64)(uintptr_t)"/dev/nvme0n1";
	CHILD_EXPECT(-EPERM, kst_ioctl(ctl, KVTIER_IOC_NVME_ATTACH, &a));
	a.flags = KVTIER_NVME_FORMAT;
	CHILD_EXPECT(-EPERM, kst_ioctl(ctl, KVTIER_IOC_NVME_ATTACH, &a));
	/* even a path that does not exist: no probing of paths */
	a.path = (__u64)(uintptr_t)"/nonexistent";
	CHILD_EXPECT(-EPERM, kst_ioctl(ctl, KVTIER_IOC_NVME_ATTACH, &a));
	memset(&d, 0, sizeof(d));
	CHILD_EXPECT(-EPERM, kst_ioctl(ctl, KVTIER_IOC_NVME_DETACH, &d));
	/* the tier's state is public */
	memset(&st, 0, sizeof(st));
	CHILD_EXPECT(0, kst_ioctl(ctl, KVTIER_IOC_NVME_STAT, &st));
	close(ctl);
	return 0;
}

TEST_F(iso, admin_commands_need_cap_sys_admin)
{
	struct kvtier_nvme_stat before, after;

	memset(&before, 0, sizeof(before));
	ASSERT_EQ(0, kst_ioctl(self->ctl, KVTIER_IOC_NVME_STAT, &before));
	EXPECT_EQ(0, as(&TENANT_B, child_admin, NULL));
	EXPECT_EQ(0, as(&ROOT_NO_ADMIN, child_admin, NULL));
	/* and nothing changed */
	memset(&after, 0, sizeof(after));
	ASSERT_EQ(0, kst_ioctl(self->ctl, KVTIER_IOC_NVME_STAT, &after));
	EXPECT_EQ(before.attached, after.attached);
	EXPECT_EQ(0, memcmp(before.uuid, after.uuid, sizeof(before.uuid)));
}

/* ---- SCM_RIGHTS -------------------------------------------------------- */

static int send_fd(int sock, int fd)
{
	char c = 'f';
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -errno;
}

static int recv_fd(int sock)
{
	char c;
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *cm;
	int fd;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		return -errno;
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -EPROTO;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

struct scm_arg {
	const char *name;
	int sock;
};

/* Tenant B: receives A's read-write fd, then its read-only fd. */
static int child_receiver(void *arg)
{
	struct scm_arg *s = arg;
	char *buf = kst_alloc(BS);
	int ctl = kst_ctl_open(), rw, ro;

	CHILD_EXPECT(1, buf != NULL && ctl >= 0);
	/* by name B gets nothing */
	CHILD_EXPECT(-EACCES, kst_pool_open(ctl, s->name, KVTIER_POOL_RDONLY));
	rw = recv_fd(s->sock);
	CHILD_EXPECT(1, rw >= 0);
	ro = recv_fd(s->sock);
	CHILD_EXPECT(1, ro >= 0);
	/* the read-write fd: everything */
	CHILD_EXPECT(0, kst_get1(rw, 0x5c, 0, buf, NULL));
	CHILD_EXPECT(-1, kst_check_gen(buf, BS, 0x5c, 0, 3));
	kst_fill(buf, BS, 0x5c, 1, 4);
	CHILD_EXPECT(0, kst_put1(rw, 0x5c, 1, buf, NULL));
	CHILD_EXPECT(0, kst_pin1(rw, 0x5c, 1));
	CHILD_EXPECT(0, kst_unpin1(rw, 0x5c, 1));
	/* the read-only one: reads only, as A opened it */
	CHILD_EXPECT(0, kst_get1(ro, 0x5c, 1, buf, NULL));
	CHILD_EXPECT(-1, kst_check_gen(buf, BS, 0x5c, 1, 4));
	CHILD_EXPECT(-EBADF, kst_put1(ro, 0x5c, 2, buf, NULL));
	CHILD_EXPECT(-EBADF, kst_drop1(ro, 0x5c, 0));
	CHILD_EXPECT(0, ro_checks(ro, 0x5c, 0, 3));
	/* holding fds gives no right over the name */
	CHILD_EXPECT(-EPERM, kst_pool_destroy(ctl, s->name));
	CHILD_EXPECT(-EACCES, kst_pool_open(ctl, s->name, KVTIER_POOL_RDONLY));
	close(rw);
	close(ro);
	close(ctl);
	return 0;
}

/* Tenant A: opens its pool both ways and sends the fds. */
static int child_sender(void *arg)
{
	struct scm_arg *s = arg;
	char *buf = kst_alloc(BS);
	int ctl = kst_ctl_open(), rw, ro;

	CHILD_EXPECT(1, buf != NULL && ctl >= 0);
	rw = kst_pool_open(ctl, s->name, 0);
	ro = kst_pool_open(ctl, s->name, KVTIER_POOL_RDONLY);
	CHILD_EXPECT(1, rw >= 0 && ro >= 0);
	kst_fill(buf, BS, 0x5c, 0, 3);
	CHILD_EXPECT(0, kst_put1(rw, 0x5c, 0, buf, NULL));
	CHILD_EXPECT(0, send_fd(s->sock, rw));
	CHILD_EXPECT(0, send_fd(s->sock, ro));
	close(rw);
	close(ro);
	return 0;
}

TEST_F(iso, scm_rights_keeps_rights)
{
	int sv[2], pfd;
	struct scm_arg s = { .name = self->name };
	pid_t rx;

	ASSERT_EQ(0, a_creates(self->name, 0600));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	s.sock = sv[1];
	rx = kst_fork();
	ASSERT_LE(0, rx);
	if (rx == 0) {
		close(sv[0]);
		if (assume(&TENANT_B))
			_exit(250);
		_exit(child_receiver(&s));
	}
	s.sock = sv[0];
	EXPECT_EQ(0, as(&TENANT_A, child_sender, &s));
	EXPECT_EQ(0, kst_wait(rx));
	close(sv[0]);
	close(sv[1]);
	/* what B put through A's fd is in A's pool */
	pfd = kst_pool_open(self->ctl, self->name, KVTIER_POOL_RDONLY);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, kst_get1(pfd, 0x5c, 1, self->out, NULL));
	ASSERT_EQ(-1, kst_check_gen(self->out, BS, 0x5c, 1, 4));
	ASSERT_EQ(0, kst_pinned(pfd));
	close(pfd);
}

/* ---- keys are scoped to a pool ----------------------------------------- */

/*
 * Two tenants' pools, the same keys: each pool sees only its own blocks,
 * with every command, in its counters and through its mapping.
 */
TEST_F(iso, keys_scoped_per_pool)
{
	struct kvtier_pool_stat sa0, sa1, sb;
	struct kvtier_block blk[4];
	char *map;
	__u32 done;
	int pa, pb, i;

	pa = kst_pool_create(self->ctl, self->name, BS, 8, 8);
	ASSERT_LE(0, pa);
	pb = kst_pool_create(self->ctl, self->name2, BS, 8, 8);
	ASSERT_LE(0, pb);
	/* a chain of 4 keys in pool A */
	for (i = 0; i < 4; i++) {
		kst_fill(self->buf, BS, 0xa11, i, 1);
		ASSERT_EQ(0, kst_put1(pa, 0xa11, i, self->buf, NULL));
	}
	ASSERT_EQ(0, kst_stat(pa, &sa0));

	/* pool B finds none of them, whatever the command */
	for (i = 0; i < 4; i++)
		kst_blk(&blk[i], 0xa11, i, NULL);
	ASSERT_EQ(0, kst_batch(pb, KVTIER_IOC_LOOKUP, blk, 4,
			       KVTIER_LOOKUP_TOUCH, &done));
	EXPECT_EQ(0U, done);
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(-ENOENT, blk[i].status);
		EXPECT_EQ(KVTIER_ADDR_NONE, blk[i].addr);
		EXPECT_EQ((__u32)KVTIER_TIER_NONE, blk[i].tier);
	}
	EXPECT_EQ(-ENOENT, kst_get1(pb, 0xa11, 0, self->out, NULL));
	EXPECT_EQ(-ENOENT, kst_pin1(pb, 0xa11, 1));
	EXPECT_EQ(-ENOENT, kst_unpin1(pb, 0xa11, 1));
	EXPECT_EQ(-ENOENT, kst_drop1(pb, 0xa11, 2));
	/* B's misses are B's: A's counters did not move */
	ASSERT_EQ(0, kst_stat(pa, &sa1));
	EXPECT_EQ(sa0.hits, sa1.hits);
	EXPECT_EQ(sa0.misses, sa1.misses);
	EXPECT_EQ(sa0.resident[KVTIER_TIER_DRAM],
		  sa1.resident[KVTIER_TIER_DRAM]);
	ASSERT_EQ(0, kst_stat(pb, &sb));
	EXPECT_EQ(0ULL, sb.resident[KVTIER_TIER_DRAM]);
	EXPECT_EQ(0ULL, sb.hits);

	/* B's mapping shows nothing where A has blocks */
	map = mmap(NULL, 8 * BS, PROT_READ, MAP_SHARED, pb, 0);
	ASSERT_NE(MAP_FAILED, map);
	for (i = 0; i < 8; i++) {
		char c;
		struct sigaction sa = { .sa_handler = on_segv }, old;
		int sig;

		sigaction(SIGBUS, &sa, &old);
		sig = sigsetjmp(probe_env, 1);
		if (!sig)
			c = *(volatile char *)(map + i * BS);
		sigaction(SIGBUS, &old, NULL);
		EXPECT_EQ(SIGBUS, sig) TH_LOG("block %d of B mapped", i);
		(void)c;
	}
	munmap(map, 8 * BS);

	/* the same key in B is a block of its own */
	kst_fill(self->buf, BS, 0xa11, 0, 2);
	ASSERT_EQ(0, kst_put1(pb, 0xa11, 0, self->buf, NULL));
	ASSERT_EQ(0, kst_get1(pa, 0xa11, 0, self->out, NULL));
	EXPECT_EQ(-1, kst_check_gen(self->out, BS, 0xa11, 0, 1));
	ASSERT_EQ(0, kst_get1(pb, 0xa11, 0, self->out, NULL));
	EXPECT_EQ(-1, kst_check_gen(self->out, BS, 0xa11, 0, 2));
	/* dropping it in B leaves A's */
	ASSERT_EQ(0, kst_drop1(pb, 0xa11, 0));
	ASSERT_EQ(0, kst_get1(pa, 0xa11, 0, self->out, NULL));
	EXPECT_EQ(-1, kst_check_gen(self->out, BS, 0xa11, 0, 1));
	/* replacing it in A leaves B without it */
	kst_fill(self->buf, BS, 0xa11, 0, 3);
	ASSERT_EQ(0, kst_replace1(pa, 0xa11, 0, self->buf, NULL));
	EXPECT_EQ(-ENOENT, kst_lookup1(pb, 0xa11, 0, NULL));
	close(pa);
	close(pb);
}

/*
 * Keys scoped across tenants: B, with its own pool, learns nothing of A's
 * keys by LOOKUP or GET, and its PUT of the same key is a new block.
 */
struct probe_arg {
	const char *name;	/* B's own pool */
};

static int child_tenant_probe(void *arg)
{
	struct probe_arg *p = arg;
	struct kvtier_block blk[4];
	char *buf = kst_alloc(BS);
	int ctl = kst_ctl_open(), fd, i;
	__u32 done;

	CHILD_EXPECT(1, buf != NULL && ctl >= 0);
	fd = kst_pool_create(ctl, p->name, BS, 8, 8);
	CHILD_EXPECT(1, fd >= 0);
	for (i = 0; i < 4; i++)
		kst_blk(&blk[i], 0xa12, i, NULL);
	CHILD_EXPECT(0, kst_batch(fd, KVTIER_IOC_LOOKUP, blk, 4,
				  KVTIER_LOOKUP_TOUCH, &done));
	CHILD_EXPECT(0, done);
	for (i = 0; i < 4; i++)
		CHILD_EXPECT(-ENOENT, blk[i].status);
	CHILD_EXPECT(-ENOENT, kst_get1(fd, 0xa12, 0, buf, NULL));
	kst_fill(buf, BS, 0xa12, 0, 9);
	CHILD_EXPECT(0, kst_put1(fd, 0xa12, 0, buf, NULL));
	CHILD_EXPECT(0, kst_get1(fd, 0xa12, 0, buf, NULL));
	CHILD_EXPECT(-1, kst_check_gen(buf, BS, 0xa12, 0, 9));
	close(fd);
	CHILD_EXPECT(0, kst_pool_destroy(ctl, p->name));
	return 0;
}

TEST_F(iso, keys_scoped_across_tenants)
{
	struct probe_arg p = { .name = self->name2 };
	int pa, i;

	ASSERT_EQ(0, a_creates(self->name, 0644));
	pa = kst_pool_open(self->ctl, self->name, 0);
	ASSERT_LE(0, pa);
	for (i = 0; i < 4; i++) {
		kst_fill(self->buf, BS, 0xa12, i, 1);
		ASSERT_EQ(0, kst_put1(pa, 0xa12, i, self->buf, NULL));
	}
	EXPECT_EQ(0, as(&TENANT_B, child_tenant_probe, &p));
	/* A's blocks are untouched */
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, kst_get1(pa, 0xa12, i, self->out, NULL));
		EXPECT_EQ(-1, kst_check_gen(self->out, BS, 0xa12, i, 1));
	}
	close(pa);
}

/* ---- pins are per fd --------------------------------------------------- */

struct pin_arg {
	const char *name;
};

static int child_pin_other(void *arg)
{
	struct pin_arg *p = arg;
	int ctl = kst_ctl_open(), fd;

	CHILD_EXPECT(1, ctl >= 0);
	fd = kst_pool_open(ctl, p->name, 0);
	CHILD_EXPECT(1, fd >= 0);
	/* A's pin is A's: B cannot take it away, nor drop the block */
	CHILD_EXPECT(-EINVAL, kst_unpin1(fd, 0x917, 0));
	CHILD_EXPECT(-EBUSY, kst_drop1(fd, 0x917, 0));
	close(fd);
	return 0;
}

TEST_F(iso, pins_belong_to_their_fd)
{
	struct pin_arg p = { .name = self->name };
	int pfd, w;

	ASSERT_EQ(0, a_creates(self->name, 0666));
	w = kst_pool_open(self->ctl, self->name, 0);
	ASSERT_LE(0, w);
	kst_fill(self->buf, BS, 0x917, 0, 1);
	ASSERT_EQ(0, kst_put1(w, 0x917, 0, self->buf, NULL));
	close(w);
	/* a read-only fd of root's pins; tenant B's own fd cannot unpin */
	pfd = kst_pool_open(self->ctl, self->name, KVTIER_POOL_RDONLY);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, kst_pin1(pfd, 0x917, 0));
	EXPECT_EQ(0, as(&TENANT_B, child_pin_other, &p));
	ASSERT_EQ(1, kst_pinned(pfd));
	/* closing the fd that pinned lets go */
	close(pfd);
	pfd = kst_pool_open(self->ctl, self->name, 0);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, kst_pinned(pfd));
	ASSERT_EQ(0, kst_drop1(pfd, 0x917, 0));
	close(pfd);
}

/* ---- sysfs ------------------------------------------------------------- */

static int child_sysfs(void *arg)
{
	const char *name = arg;
	char path[256], buf[256];

	snprintf(path, sizeof(path), KST_SYSFS_DIR "/pools/%s/stat", name);
	CHILD_EXPECT(-EACCES, kst_read_file(path, buf, sizeof(buf)));
	snprintf(path, sizeof(path), KST_SYSFS_DIR "/pools/%s/config", name);
	CHILD_EXPECT(-EACCES, kst_read_file(path, buf, sizeof(buf)));
	/* the global line is public */
	CHILD_EXPECT(1, kst_read_file(KST_SYSFS_DIR "/stat", buf,
				      sizeof(buf)) > 0);
	return 0;
}

/* A pool's counters are not readable by the other tenants, nor its owner. */
TEST_F(iso, sysfs_pool_files_root_only)
{
	ASSERT_EQ(0, a_creates(self->name, 0644));
	EXPECT_EQ(0, as(&TENANT_B, child_sysfs, self->name));
	EXPECT_EQ(0, as(&TENANT_A, child_sysfs, self->name));
}

TEST_HARNESS_MAIN
