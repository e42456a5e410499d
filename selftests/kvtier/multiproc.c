// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier between processes: sharing a pool by name, access control by
 * owner/group/mode across uids, concurrent PUT/REPLACE/DROP/GET of the same
 * keys (never a torn block), and SIGKILL in the middle of a PUT loop.
 */
#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "kvtier_test.h"

#define NOBODY	65534
#define UID_A	1000
#define UID_B	1001

FIXTURE(mp) {
	int ctl;
	char name[KVTIER_NAME_MAX];
};

FIXTURE_SETUP(mp)
{
	kst_setup(_metadata);

	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	kst_name(self->name, "mp");
}

FIXTURE_TEARDOWN(mp)
{
	kst_pool_destroy(self->ctl, self->name);
	close(self->ctl);
}

/* Create the test's pool with @mode; the pool fd. */
static int mp_create(FIXTURE_DATA(mp) *self, __u64 bs, __u32 cap, __u32 mode)
{
	struct kvtier_pool_create c;

	kst_create_init(&c, self->name, bs, cap, cap);
	c.mode = mode;
	return kst_create(self->ctl, &c);
}

/*
 * Run @fn(arg) in a child that became uid/gid first (gid == -1: no change
 * of identity); the child's exit code (0 = all expectations held).
 */
static int as_user(uid_t uid, gid_t gid, int (*fn)(void *), void *arg)
{
	pid_t pid = kst_fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (gid != (gid_t)-1 && kst_become(uid, gid))
			_exit(100);
		_exit(fn(arg));
	}
	return kst_wait(pid);
}

struct open_case {
	const char *name;
	__u32 flags;
	int want;	/* 0: the open works, else the -errno */
};

/* Child: open a pool on a fresh control fd; 0 if the result is as wanted. */
static int child_open(void *arg)
{
	struct open_case *oc = arg;
	int ctl = kst_ctl_open(), fd;

	if (ctl < 0)
		return 101;
	fd = kst_pool_open(ctl, oc->name, oc->flags);
	if (fd >= 0) {
		close(fd);
		fd = 0;
	}
	if (fd != oc->want) {
		fprintf(stderr, "# open %s flags %#x: %d, wanted %d\n",
			oc->name, oc->flags, fd, oc->want);
		return 1;
	}
	return 0;
}

static int open_as(uid_t uid, gid_t gid, const char *name, __u32 flags,
		   int want)
{
	struct open_case oc = { .name = name, .flags = flags, .want = want };

	return as_user(uid, gid, child_open, &oc);
}

/* ---- sharing by name --------------------------------------------------- */

struct share_arg {
	const char *name;
	__u64 bs;
	int n;
};

static int child_share(void *arg)
{
	struct share_arg *sa = arg;
	char *buf = kst_alloc(sa->bs);
	int ctl = kst_ctl_open(), fd, i;

	if (!buf || ctl < 0)
		return 101;
	fd = kst_pool_open(ctl, sa->name, 0);
	if (fd < 0)
		return 102;
	for (i = 0; i < sa->n; i++) {
		if (kst_get1(fd, 0x5a, i, buf, NULL))
			return 10 + i;
		if (kst_check_gen(buf, sa->bs, 0x5a, i, 1) != -1)
			return 40 + i;
	}
	/* and leave one for the parent */
	kst_fill(buf, sa->bs, 0x5b, 0, 2);
	if (kst_put1(fd, 0x5b, 0, buf, NULL))
		return 103;
	return 0;
}

TEST_F(mp, child_reads_parent_blocks)
{
	struct share_arg sa = { .name = self->name, .bs = 16 * KST_KIB, .n = 8 };
	char *buf = kst_alloc(sa.bs);
	int pfd, i;

	ASSERT_NE(NULL, buf);
	pfd = mp_create(self, sa.bs, 16, 0600);
	ASSERT_LE(0, pfd);
	for (i = 0; i < sa.n; i++) {
		kst_fill(buf, sa.bs, 0x5a, i, 1);
		ASSERT_EQ(0, kst_put1(pfd, 0x5a, i, buf, NULL));
	}
	ASSERT_EQ(0, as_user(0, (gid_t)-1, child_share, &sa));
	memset(buf, 0, sa.bs);
	ASSERT_EQ(0, kst_get1(pfd, 0x5b, 0, buf, NULL));
	ASSERT_EQ(-1, kst_check_gen(buf, sa.bs, 0x5b, 0, 2));
	close(pfd);
}

/* A pool fd inherited across fork is the same open file. */
TEST_F(mp, inherited_pool_fd)
{
	const __u64 bs = KST_PAGE;
	char *buf = kst_alloc(bs);
	int pfd;
	pid_t pid;

	ASSERT_NE(NULL, buf);
	pfd = mp_create(self, bs, 4, 0600);
	ASSERT_LE(0, pfd);
	pid = kst_fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		kst_fill(buf, bs, 0x5c, 0, 3);
		_exit(kst_put1(pfd, 0x5c, 0, buf, NULL) ? 1 : 0);
	}
	ASSERT_EQ(0, kst_wait(pid));
	ASSERT_EQ(0, kst_get1(pfd, 0x5c, 0, buf, NULL));
	ASSERT_EQ(-1, kst_check_gen(buf, bs, 0x5c, 0, 3));
	close(pfd);
}

/* ---- access control ---------------------------------------------------- */

TEST_F(mp, mode_0600_other_uid_eacces)
{
	int pfd = mp_create(self, KST_PAGE, 4, 0600);

	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, open_as(NOBODY, NOBODY, self->name, KVTIER_POOL_RDONLY,
			     -EACCES));
	ASSERT_EQ(0, open_as(NOBODY, NOBODY, self->name, 0, -EACCES));
	close(pfd);
}

TEST_F(mp, mode_0644_other_uid_rdonly)
{
	int pfd = mp_create(self, KST_PAGE, 4, 0644);

	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, open_as(NOBODY, NOBODY, self->name, KVTIER_POOL_RDONLY,
			     0));
	ASSERT_EQ(0, open_as(NOBODY, NOBODY, self->name, 0, -EACCES));
	close(pfd);
}

TEST_F(mp, mode_0666_other_uid_rdwr)
{
	int pfd = mp_create(self, KST_PAGE, 4, 0666);

	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, open_as(NOBODY, NOBODY, self->name, 0, 0));
	close(pfd);
}

/* Write without read is not enough: read is always needed. */
TEST_F(mp, mode_0622_other_uid_eacces)
{
	int pfd = mp_create(self, KST_PAGE, 4, 0622);

	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, open_as(NOBODY, NOBODY, self->name, 0, -EACCES));
	close(pfd);
}

/* Group bits apply to the pool's group (the creator's, gid 0 here). */
TEST_F(mp, mode_0640_group)
{
	int pfd = mp_create(self, KST_PAGE, 4, 0640);

	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, open_as(UID_A, 0, self->name, KVTIER_POOL_RDONLY, 0));
	ASSERT_EQ(0, open_as(UID_A, 0, self->name, 0, -EACCES));
	ASSERT_EQ(0, open_as(UID_A, UID_A, self->name, KVTIER_POOL_RDONLY,
			     -EACCES));
	close(pfd);
}

/* Data read through a read-only open by another uid is right. */
struct ro_get_arg {
	const char *name;
};

static int child_ro_get(void *arg)
{
	struct ro_get_arg *ra = arg;
	struct kvtier_block b;
	char *buf = kst_alloc(KST_PAGE);
	int ctl = kst_ctl_open(), fd;

	if (!buf || ctl < 0)
		return 101;
	fd = kst_pool_open(ctl, ra->name, KVTIER_POOL_RDONLY);
	if (fd < 0)
		return 102;
	if (kst_get1(fd, 0x5d, 0, buf, NULL))
		return 103;
	if (kst_check_gen(buf, KST_PAGE, 0x5d, 0, 4) != -1)
		return 104;
	kst_fill(buf, KST_PAGE, 0x5d, 1, 4);
	kst_blk(&b, 0x5d, 1, buf);
	if (kst_batch(fd, KVTIER_IOC_PUT, &b, 1, 0, NULL) != -EBADF)
		return 105;
	return 0;
}

TEST_F(mp, other_uid_reads_0644_pool)
{
	struct ro_get_arg ra = { .name = self->name };
	char *buf = kst_alloc(KST_PAGE);
	int pfd = mp_create(self, KST_PAGE, 4, 0644);

	ASSERT_NE(NULL, buf);
	ASSERT_LE(0, pfd);
	kst_fill(buf, KST_PAGE, 0x5d, 0, 4);
	ASSERT_EQ(0, kst_put1(pfd, 0x5d, 0, buf, NULL));
	ASSERT_EQ(0, as_user(NOBODY, NOBODY, child_ro_get, &ra));
	close(pfd);
}

static int child_destroy(void *arg)
{
	struct open_case *oc = arg;
	int ctl = kst_ctl_open(), ret;

	if (ctl < 0)
		return 101;
	ret = kst_pool_destroy(ctl, oc->name);
	if (ret != oc->want) {
		fprintf(stderr, "# destroy %s: %d, wanted %d\n", oc->name,
			ret, oc->want);
		return 1;
	}
	return 0;
}

TEST_F(mp, destroy_by_other_uid_eperm)
{
	struct open_case oc = { .name = self->name, .want = -EPERM };
	int pfd = mp_create(self, KST_PAGE, 4, 0666);

	ASSERT_LE(0, pfd);
	close(pfd);
	ASSERT_EQ(0, as_user(NOBODY, NOBODY, child_destroy, &oc));
	pfd = kst_pool_open(self->ctl, self->name, 0);
	ASSERT_LE(0, pfd);
	close(pfd);
}

/* A pool made by a non-root uid: its owner, and what others may do. */
struct owner_arg {
	const char *name;
	int destroy;	/* destroy it too */
};

static int child_create(void *arg)
{
	struct owner_arg *oa = arg;
	struct kvtier_pool_create c;
	struct kvtier_pool_stat st;
	int ctl = kst_ctl_open(), fd;

	if (ctl < 0)
		return 101;
	kst_create_init(&c, oa->name, KST_PAGE, 4, 4);
	c.mode = 0;
	fd = kst_create(ctl, &c);
	if (fd < 0)
		return 102;
	if (kst_stat(fd, &st))
		return 103;
	if (st.uid != UID_A || st.gid != UID_A || st.mode != 0600)
		return 104;
	close(fd);
	if (oa->destroy && kst_pool_destroy(ctl, oa->name))
		return 105;
	return 0;
}

TEST_F(mp, owner_is_creator)
{
	struct owner_arg oa = { .name = self->name };
	struct open_case oc = { .name = self->name, .want = -EPERM };
	struct kvtier_pool_stat st;
	int pfd;

	ASSERT_EQ(0, as_user(UID_A, UID_A, child_create, &oa));
	/* another uid cannot open or destroy it */
	ASSERT_EQ(0, open_as(UID_B, UID_B, self->name, KVTIER_POOL_RDONLY,
			     -EACCES));
	ASSERT_EQ(0, as_user(UID_B, UID_B, child_destroy, &oc));
	/* the owner can open it again */
	ASSERT_EQ(0, open_as(UID_A, UID_A, self->name, 0, 0));
	/* root can open it (CAP_DAC_OVERRIDE) */
	pfd = kst_pool_open(self->ctl, self->name, 0);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, kst_stat(pfd, &st));
	ASSERT_EQ((__u32)UID_A, st.uid);
	close(pfd);
	/* and destroy it (CAP_SYS_ADMIN): the teardown does */
}

TEST_F(mp, owner_can_destroy)
{
	struct owner_arg oa = { .name = self->name, .destroy = 1 };

	ASSERT_EQ(0, as_user(UID_A, UID_A, child_create, &oa));
	ASSERT_EQ(-ENOENT, kst_pool_open(self->ctl, self->name, 0));
}

/* ---- concurrency ------------------------------------------------------- */

#define CC_BS		(64 * KST_KIB)
#define CC_KEYS		2
#define CC_K0		0xcc
#define CC_SECS		2

/*
 * Writers own generations writer << 32 | n; readers check that every block
 * they get is whole (kst_check: one key, one generation throughout).
 */
struct cc_arg {
	int fd;
	int id;
	bool writer;
	long ops, hits;
	int err;		/* 0 or a code saying what went wrong */
	char what[96];
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *cc_run(void *p)
{
	struct cc_arg *a = p;
	char *buf = kst_alloc(CC_BS);
	double end = now_s() + CC_SECS;
	__u64 gen;
	long n = 0;
	int ret;

	if (!buf) {
		a->err = 1;
		return NULL;
	}
	while (now_s() < end && !a->err) {
		__u64 k1 = n % CC_KEYS;

		n++;
		if (a->writer) {
			gen = ((__u64)a->id << 32) | (__u64)n;
			kst_fill(buf, CC_BS, CC_K0, k1, gen);
			if (n % 7 == 0) {
				ret = kst_drop1(a->fd, CC_K0, k1);
				if (ret && ret != -ENOENT)
					a->err = 2;
			} else if (n % 3 == 0) {
				ret = kst_put1(a->fd, CC_K0, k1, buf, NULL);
				if (ret && ret != -EEXIST)
					a->err = 3;
			} else {
				ret = kst_replace1(a->fd, CC_K0, k1, buf, NULL);
				if (ret && ret != -EBUSY)
					a->err = 4;
			}
		} else {
			memset(buf, 0, 64);
			ret = kst_get1(a->fd, CC_K0, k1, buf, NULL);
			if (ret == 0) {
				a->hits++;
				if (kst_check(buf, CC_BS, CC_K0, k1, &gen) != -1)
					a->err = 5;
				else if (gen >> 32 == 0)
					a->err = 6;
			} else if (ret != -ENOENT) {
				a->err = 7;
			}
		}
		if (a->err)
			snprintf(a->what, sizeof(a->what),
				 "%s %d op %ld key %llu: ret %d",
				 a->writer ? "writer" : "reader", a->id, n,
				 (unsigned long long)k1, ret);
	}
	a->ops = n;
	kst_free(buf, CC_BS);
	return NULL;
}

/* Threads of one process on one fd: 2 writers, 3 readers. */
TEST_F_TIMEOUT(mp, concurrent_threads, 60)
{
	struct cc_arg a[5];
	pthread_t th[5];
	long hits = 0;
	int pfd, i;

	pfd = mp_create(self, CC_BS, 16, 0600);
	ASSERT_LE(0, pfd);
	memset(a, 0, sizeof(a));
	for (i = 0; i < 5; i++) {
		a[i].fd = pfd;
		a[i].id = i + 1;
		a[i].writer = i < 2;
		ASSERT_EQ(0, pthread_create(&th[i], NULL, cc_run, &a[i]));
	}
	for (i = 0; i < 5; i++)
		ASSERT_EQ(0, pthread_join(th[i], NULL));
	for (i = 0; i < 5; i++) {
		if (a[i].err)
			TH_LOG("%s", a[i].what);
		EXPECT_EQ(0, a[i].err);
		if (!a[i].writer)
			hits += a[i].hits;
	}
	/* the race was real: readers saw blocks */
	ASSERT_LT(0, hits);
	close(pfd);
}

/*
 * Processes, each with its own pool fd: 2 writers, 3 readers. Results come
 * back through a shared mapping.
 */
TEST_F_TIMEOUT(mp, concurrent_processes, 60)
{
	struct cc_arg *a;
	pid_t pid[5];
	long hits = 0;
	int pfd, i;

	a = mmap(NULL, 5 * sizeof(*a), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, a);
	pfd = mp_create(self, CC_BS, 16, 0600);
	ASSERT_LE(0, pfd);
	for (i = 0; i < 5; i++) {
		a[i].id = i + 1;
		a[i].writer = i < 2;
		pid[i] = kst_fork();
		ASSERT_LE(0, pid[i]);
		if (pid[i] == 0) {
			int ctl = kst_ctl_open();

			a[i].fd = ctl < 0 ? -1 : kst_pool_open(ctl, self->name,
							       0);
			if (a[i].fd < 0)
				_exit(1);
			cc_run(&a[i]);
			_exit(0);
		}
	}
	for (i = 0; i < 5; i++)
		ASSERT_EQ(0, kst_wait(pid[i]));
	for (i = 0; i < 5; i++) {
		if (a[i].err)
			TH_LOG("%s", a[i].what);
		EXPECT_EQ(0, a[i].err);
		if (!a[i].writer)
			hits += a[i].hits;
	}
	ASSERT_LT(0, hits);
	close(pfd);
	munmap(a, 5 * sizeof(*a));
}

/*
 * SIGKILL a process in the middle of a PUT loop (new keys and replaces of
 * one key): afterwards every block present is whole, the counts agree,
 * and everything can be dropped.
 */
#define KL_BS	(64 * KST_KIB)
#define KL_KEYS	64

TEST_F_TIMEOUT(mp, sigkill_mid_put_loop, 60)
{
	struct kvtier_pool_stat st;
	char *buf = kst_alloc(KL_BS);
	int pfd, pipefd[2], i, found = 0;
	pid_t pid;
	char c;

	ASSERT_NE(NULL, buf);
	/* room for every key, plus the spare block a REPLACE fills first */
	pfd = mp_create(self, KL_BS, KL_KEYS + 2, 0600);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, pipe(pipefd));
	pid = kst_fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct kvtier_block b[4];
		char *cbuf = kst_alloc(4 * KL_BS);
		__u64 gen = 1;

		close(pipefd[0]);
		if (!cbuf)
			_exit(1);
		for (;;) {
			for (i = 0; i < KL_KEYS; i += 2) {
				kst_fill(cbuf, KL_BS, 0x6b, i, gen);
				kst_fill(cbuf + KL_BS, KL_BS, 0x6b, i + 1, gen);
				kst_fill(cbuf + 2 * KL_BS, KL_BS, 0x6c, 0, gen);
				kst_blk(&b[0], 0x6b, i, cbuf);
				kst_blk(&b[1], 0x6b, i + 1, cbuf + KL_BS);
				kst_blk(&b[2], 0x6c, 0, cbuf + 2 * KL_BS);
				kst_batch(pfd, KVTIER_IOC_PUT, b, 3,
					  KVTIER_PUT_REPLACE, NULL);
				gen++;
				if (gen == 8 && write(pipefd[1], "g", 1) != 1)
					_exit(2);
			}
			/* start over: drop the lot, so puts keep running */
			for (i = 0; i < KL_KEYS; i++)
				kst_drop1(pfd, 0x6b, i);
		}
	}
	close(pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	usleep(20000);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(128 + SIGKILL, kst_wait(pid));
	close(pipefd[0]);

	for (i = 0; i < KL_KEYS; i++) {
		int ret = kst_get1(pfd, 0x6b, i, buf, NULL);

		if (ret == -ENOENT)
			continue;
		ASSERT_EQ(0, ret);
		ASSERT_EQ(-1, kst_check(buf, KL_BS, 0x6b, i, NULL));
		found++;
	}
	ASSERT_EQ(0, kst_get1(pfd, 0x6c, 0, buf, NULL));
	ASSERT_EQ(-1, kst_check(buf, KL_BS, 0x6c, 0, NULL));
	found++;

	ASSERT_EQ(0, kst_stat(pfd, &st));
	ASSERT_EQ((__u64)found, st.resident[KVTIER_TIER_DRAM]);
	ASSERT_EQ(0ULL, st.pinned);
	ASSERT_EQ(0ULL, st.evictions);

	for (i = 0; i < KL_KEYS; i++) {
		int ret = kst_drop1(pfd, 0x6b, i);

		ASSERT_TRUE(ret == 0 || ret == -ENOENT);
	}
	ASSERT_EQ(0, kst_drop1(pfd, 0x6c, 0));
	ASSERT_EQ(0LL, kst_resident(pfd));
	/* and the pool takes new blocks */
	kst_fill(buf, KL_BS, 0x6d, 0, 1);
	ASSERT_EQ(0, kst_put1(pfd, 0x6d, 0, buf, NULL));
	close(pfd);
}

/*
 * Several processes create, open, use and destroy the same name at once.
 * Every call gets one of its documented results, and when they are done
 * no pool is left behind (the global pool count is back where it was).
 */
static int name_race_child(const char *name, int id)
{
	double end = now_s() + CC_SECS;
	char *buf = kst_alloc(KST_PAGE);
	int ctl = kst_ctl_open(), fd, ret;
	long n = 0;

	if (ctl < 0 || !buf)
		return 101;
	while (now_s() < end) {
		struct kvtier_pool_create c;

		n++;
		kst_create_init(&c, name, KST_PAGE, 4, 4);
		c.mode = 0;
		switch ((n + id) % 3) {
		case 0:
			c.flags = KVTIER_POOL_OPEN_EXISTING;
			fd = kst_create(ctl, &c);
			if (fd < 0)
				return 10;
			break;
		case 1:
			fd = kst_create(ctl, &c);
			if (fd < 0 && fd != -EEXIST)
				return 11;
			break;
		default:
			fd = kst_pool_open(ctl, name, 0);
			if (fd < 0 && fd != -ENOENT)
				return 12;
			break;
		}
		if (fd >= 0) {
			kst_fill(buf, KST_PAGE, 0x6e, n % 4, n);
			ret = kst_put1(fd, 0x6e, n % 4, buf, NULL);
			if (ret && ret != -EEXIST)
				return 13;
			ret = kst_get1(fd, 0x6e, (n + 1) % 4, buf, NULL);
			if (ret == 0 &&
			    kst_check(buf, KST_PAGE, 0x6e, (n + 1) % 4,
				      NULL) != -1)
				return 14;
			if (ret && ret != -ENOENT)
				return 15;
			close(fd);
		}
		if (n % 2) {
			ret = kst_pool_destroy(ctl, name);
			if (ret && ret != -ENOENT)
				return 16;
		}
	}
	return 0;
}

TEST_F_TIMEOUT(mp, name_race, 60)
{
	long long a[10], b[10];
	pid_t pid[4];
	int i;

	ASSERT_EQ(10, kst_read_cols(KST_SYSFS_DIR "/stat", a, 10, 0));
	for (i = 0; i < 4; i++) {
		pid[i] = kst_fork();
		ASSERT_LE(0, pid[i]);
		if (pid[i] == 0)
			_exit(name_race_child(self->name, i));
	}
	for (i = 0; i < 4; i++)
		EXPECT_EQ(0, kst_wait(pid[i]));
	kst_pool_destroy(self->ctl, self->name);
	ASSERT_EQ(10, kst_read_cols(KST_SYSFS_DIR "/stat", b, 10, 0));
	/* pools, reserved and used DRAM */
	ASSERT_EQ(a[0], b[0]);
	ASSERT_EQ(a[2], b[2]);
	ASSERT_EQ(a[3], b[3]);
}

TEST_HARNESS_MAIN
