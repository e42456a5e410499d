// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier selftests: the rules every command follows that are not about one
 * command.
 *
 *  - feat: KVTIER_IOC_API's negotiated features are what an fd may use. A
 *    command, flag or fd operation of a feature the control fd did not
 *    negotiate is -EOPNOTSUPP, on that control fd and on the pool fds it
 *    made; one feature left out a case, and nothing done.
 *  - size: every command takes every struct size from its first version's
 *    (KVTIER_*_SIZE_VER0) up: one byte less is -EINVAL before the struct
 *    is read, and a nonzero byte past what the kernel knows is -E2BIG.
 *  - ro: a pool-fd command whose argument struct cannot be written back
 *    fails with -EFAULT before it does anything. Each case puts a valid
 *    argument on a page mapped PROT_READ, expects -EFAULT, and shows that
 *    the command had no effect.
 */
#include <sys/eventfd.h>
#include <liburing.h>

#include "prefetch_test.h"

#define AB_CAP		16U

/* A copy of @len bytes of @src on a page of its own, mapped read-only. */
static void *ro_copy(const void *src, size_t len)
{
	char *p = mmap(NULL, KST_PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memcpy(p, src, len);
	if (mprotect(p, KST_PAGE, PROT_READ)) {
		munmap(p, KST_PAGE);
		return NULL;
	}
	return p;
}

static void batch_init(struct kvtier_batch *b, void *ents, __u32 count,
		       __u32 flags)
{
	memset(b, 0, sizeof(*b));
	b->blocks = (__u64)(uintptr_t)ents;
	b->count = count;
	b->flags = flags;
}

static int hbm_attach_emul(int pfd, __u32 slots)
{
	struct kvtier_hbm_attach a;

	memset(&a, 0, sizeof(a));
	a.backend = KVTIER_HBM_EMUL;
	a.slots = slots;
	return kst_ioctl(pfd, KVTIER_IOC_HBM_ATTACH, &a);
}

static int hbm_stat(int pfd, struct kvtier_hbm_stat *st)
{
	memset(st, 0, sizeof(*st));
	return kst_ioctl(pfd, KVTIER_IOC_HBM_STAT, st);
}

static void adopt_init(struct kvtier_adopt *e, __u64 k, __u32 slot)
{
	memset(e, 0, sizeof(*e));
	e->key[0] = K0;
	e->key[1] = k;
	e->slot = slot;
}

/* A __u64 field of a pool's STAT, or -1. */
static long long stat_u64(int pfd, size_t off)
{
	struct kvtier_pool_stat st;

	if (kst_stat(pfd, &st))
		return -1;
	return *(__u64 *)((char *)&st + off);
}

#define STAT_FD(pfd, field) \
	stat_u64(pfd, offsetof(struct kvtier_pool_stat, field))

/* ---- feat: commands of features not negotiated ------------------------ */

FIXTURE(feat) {
	int all;			/* control fd with every feature */
	char name[KVTIER_NAME_MAX];	/* the test's pool */
	char *buf;
};

FIXTURE_SETUP(feat)
{
	kst_setup(_metadata);
	self->all = kst_ctl_open();
	ASSERT_LE(0, self->all);
	kst_name(self->name, "feat");
	self->buf = kst_alloc(KST_PAGE);
	ASSERT_NE(NULL, self->buf);
}

FIXTURE_TEARDOWN(feat)
{
	kst_pool_destroy(self->all, self->name);
	kst_free(self->buf, KST_PAGE);
	close(self->all);
}

/* A control fd that negotiated @features (and checked it got them). */
static int ctl_with(__u64 features)
{
	struct kvtier_api a;
	int fd = kst_ctl_open_raw();

	if (fd < 0)
		return fd;
	if (kst_api(fd, features, &a) || a.features != features) {
		close(fd);
		return -EPROTO;
	}
	return fd;
}

/* The test's pool through a control fd with @features; its fd or -errno. */
static int pool_with(FIXTURE_DATA(feat) *self, __u64 features)
{
	int ctl = ctl_with(features), pfd;

	if (ctl < 0)
		return ctl;
	pfd = kst_pool_create(ctl, self->name, KST_PAGE, AB_CAP, AB_CAP);
	close(ctl);
	return pfd;
}

/* Unknown bits are not refused: the kernel does not have them, that is all. */
TEST_F(feat, unknown_bits_masked)
{
	struct kvtier_api a;
	int ctl = kst_ctl_open_raw();

	ASSERT_LE(0, ctl);
	ASSERT_EQ(0, kst_api(ctl, KVTIER_F_POOLS | 1ULL << 63, &a));
	ASSERT_EQ(KVTIER_F_POOLS, a.features);
	close(ctl);
}

TEST_F(feat, all_ones_gets_supported)
{
	struct kvtier_api a;
	int ctl = kst_ctl_open_raw();

	ASSERT_LE(0, ctl);
	ASSERT_EQ(0, kst_api(ctl, ~0ULL, &a));
	ASSERT_EQ(a.supported, a.features);
	ASSERT_EQ(KST_F_V1, a.features & KST_F_V1);
	close(ctl);
}

TEST_F(feat, no_pools_create)
{
	int ctl = ctl_with(0);

	ASSERT_LE(0, ctl);
	ASSERT_EQ(-EOPNOTSUPP, kst_pool_create(ctl, self->name, KST_PAGE,
					       AB_CAP, AB_CAP));
	ASSERT_EQ(-ENOENT, kst_pool_open(self->all, self->name, 0));
	close(ctl);
}

TEST_F(feat, no_pools_open)
{
	int ctl = ctl_with(0), pfd;

	ASSERT_LE(0, ctl);
	pfd = kst_pool_create(self->all, self->name, KST_PAGE, AB_CAP, AB_CAP);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(-EOPNOTSUPP, kst_pool_open(ctl, self->name, 0));
	close(pfd);
	close(ctl);
}

TEST_F(feat, no_pools_destroy)
{
	int ctl = ctl_with(0), pfd;

	ASSERT_LE(0, ctl);
	pfd = kst_pool_create(self->all, self->name, KST_PAGE, AB_CAP, AB_CAP);
	ASSERT_LE(0, pfd);
	close(pfd);
	ASSERT_EQ(-EOPNOTSUPP, kst_pool_destroy(ctl, self->name));
	pfd = kst_pool_open(self->all, self->name, 0);
	ASSERT_LE(0, pfd);
	close(pfd);
	close(ctl);
}

TEST_F(feat, no_numa_create)
{
	struct kvtier_pool_create c;
	int ctl = ctl_with(KVTIER_F_POOLS), pfd;

	ASSERT_LE(0, ctl);
	kst_create_init(&c, self->name, KST_PAGE, AB_CAP, AB_CAP);
	c.numa_node = 0;
	ASSERT_EQ(-EOPNOTSUPP, kst_create(ctl, &c));
	ASSERT_EQ(-ENOENT, kst_pool_open(self->all, self->name, 0));
	c.numa_node = -1;
	pfd = kst_create(ctl, &c);
	ASSERT_LE(0, pfd);
	close(pfd);
	close(ctl);
}

TEST_F(feat, no_nvme_stat)
{
	struct kvtier_nvme_stat st;
	int ctl = ctl_with(KVTIER_F_POOLS);

	ASSERT_LE(0, ctl);
	memset(&st, 0, sizeof(st));
	ASSERT_EQ(-EOPNOTSUPP, kst_ioctl(ctl, KVTIER_IOC_NVME_STAT, &st));
	ASSERT_EQ(0, kst_ioctl(self->all, KVTIER_IOC_NVME_STAT, &st));
	close(ctl);
}

TEST_F(feat, no_nvme_attach)
{
	struct kvtier_nvme_attach na;
	int ctl = ctl_with(KVTIER_F_POOLS);

	ASSERT_LE(0, ctl);
	memset(&na, 0, sizeof(na));
	na.path = (__u64)(uintptr_t)"/nonexistent";
	ASSERT_EQ(-EOPNOTSUPP, kst_ioctl(ctl, KVTIER_IOC_NVME_ATTACH, &na));
	close(ctl);
}

TEST_F(feat, no_nvme_detach)
{
	struct kvtier_nvme_detach nd;
	struct kvtier_nvme_stat before, after;
	int ctl = ctl_with(KVTIER_F_POOLS);

	ASSERT_LE(0, ctl);
	memset(&before, 0, sizeof(before));
	ASSERT_EQ(0, kst_ioctl(self->all, KVTIER_IOC_NVME_STAT, &before));
	memset(&nd, 0, sizeof(nd));
	ASSERT_EQ(-EOPNOTSUPP, kst_ioctl(ctl, KVTIER_IOC_NVME_DETACH, &nd));
	memset(&after, 0, sizeof(after));
	ASSERT_EQ(0, kst_ioctl(self->all, KVTIER_IOC_NVME_STAT, &after));
	ASSERT_EQ(before.attached, after.attached);
	close(ctl);
}

TEST_F(feat, no_nvme_sync)
{
	struct kvtier_sync sy;
	int pfd = pool_with(self, KVTIER_F_POOLS);

	ASSERT_LE(0, pfd);
	memset(&sy, 0, sizeof(sy));
	ASSERT_EQ(-EOPNOTSUPP, kst_ioctl(pfd, KVTIER_IOC_SYNC, &sy));
	close(pfd);
}

TEST_F(feat, no_replace_put)
{
	char *mine = kst_alloc(KST_PAGE);
	int pfd = pool_with(self, KVTIER_F_POOLS);
	__u64 gen = 0;

	ASSERT_LE(0, pfd);
	ASSERT_NE(NULL, mine);
	kst_fill(self->buf, KST_PAGE, K0, 1, 1);
	ASSERT_EQ(0, kst_put1(pfd, K0, 1, self->buf, NULL));
	kst_fill(self->buf, KST_PAGE, K0, 1, 2);
	ASSERT_EQ(-EOPNOTSUPP, kst_replace1(pfd, K0, 1, self->buf, NULL));
	/* the block has its first bytes */
	ASSERT_EQ(0, kst_get1(pfd, K0, 1, mine, NULL));
	ASSERT_EQ(-1, kst_check(mine, KST_PAGE, K0, 1, &gen));
	ASSERT_EQ(1ULL, gen);
	kst_free(mine, KST_PAGE);
	close(pfd);
}

/* LOOKUP's TOUCH is bit 0 as PUT's REPLACE is: it needs no F_REPLACE. */
TEST_F(feat, no_replace_lookup_touch)
{
	int pfd = pool_with(self, KVTIER_F_POOLS);
	struct kvtier_block b;
	__u32 done = 0;

	ASSERT_LE(0, pfd);
	kst_fill(self->buf, KST_PAGE, K0, 1, 1);
	ASSERT_EQ(0, kst_put1(pfd, K0, 1, self->buf, NULL));
	kst_blk(&b, K0, 1, NULL);
	ASSERT_EQ(0, kst_batch(pfd, KVTIER_IOC_LOOKUP, &b, 1,
			       KVTIER_LOOKUP_TOUCH, &done));
	ASSERT_EQ(1U, done);
	ASSERT_EQ(0, b.status);
	close(pfd);
}

/*
 * LOOKUP's PIN needs F_LOOKUP_PIN: the batch fails before an entry is
 * answered, nothing is pinned. The bit after it is no flag: -EINVAL.
 */
TEST_F(feat, no_lookup_pin)
{
	int pfd = pool_with(self, KVTIER_F_POOLS);
	struct kvtier_block b;
	__u32 done;

	ASSERT_LE(0, pfd);
	kst_fill(self->buf, KST_PAGE, K0, 1, 1);
	ASSERT_EQ(0, kst_put1(pfd, K0, 1, self->buf, NULL));
	kst_blk(&b, K0, 1, NULL);
	ASSERT_EQ(-EOPNOTSUPP, kst_batch(pfd, KVTIER_IOC_LOOKUP, &b, 1,
					 KVTIER_LOOKUP_PIN, &done));
	ASSERT_EQ(0xffffffffU, done);
	ASSERT_EQ(0x7eadbeef, b.status);
	ASSERT_EQ(-EOPNOTSUPP, kst_batch(pfd, KVTIER_IOC_LOOKUP, &b, 1,
					 KVTIER_LOOKUP_PIN | KVTIER_LOOKUP_LOAD |
					 KVTIER_LOOKUP_TOUCH, &done));
	ASSERT_EQ(0x7eadbeef, b.status);
	ASSERT_EQ(0, kst_pinned(pfd));
	ASSERT_EQ(-EINVAL, kst_batch(pfd, KVTIER_IOC_LOOKUP, &b, 1,
				     KVTIER_LOOKUP_PIN << 1, &done));
	/* Plain LOOKUP works; the block was not pinned: DROP takes it. */
	ASSERT_EQ(0, kst_lookup1(pfd, K0, 1, NULL));
	ASSERT_EQ(0, kst_drop1(pfd, K0, 1));
	ASSERT_EQ(0, kst_pinned(pfd));
	close(pfd);
}

TEST_F(feat, no_mmap)
{
	int pfd = pool_with(self, KVTIER_F_POOLS);
	void *p;

	ASSERT_LE(0, pfd);
	p = mmap(NULL, KST_PAGE, PROT_READ, MAP_SHARED, pfd, 0);
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EOPNOTSUPP, errno);
	close(pfd);
}

TEST_F(feat, no_uring)
{
	struct kvtier_block e;
	struct kvtier_batch b;
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct kvtier_uring_cmd *c;
	struct io_uring ring;
	int pfd = pool_with(self, KVTIER_F_POOLS);

	ASSERT_LE(0, pfd);
	if (io_uring_queue_init(4, &ring, 0))
		SKIP(goto out_close, "no io_uring");
	kst_blk(&e, K0, 1, NULL);
	batch_init(&b, &e, 1, 0);
	sqe = io_uring_get_sqe(&ring);
	ASSERT_NE(NULL, sqe);
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, pfd, NULL, 0, 0);
	sqe->cmd_op = KVTIER_IOC_LOOKUP;
	c = (struct kvtier_uring_cmd *)sqe->cmd;
	memset(c, 0, sizeof(*c));
	c->arg = (__u64)(uintptr_t)&b;
	ASSERT_EQ(1, io_uring_submit(&ring));
	ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
	ASSERT_EQ(-EOPNOTSUPP, cqe->res);
	io_uring_cqe_seen(&ring, cqe);
	/* the entry was not answered */
	ASSERT_EQ(0x7eadbeef, e.status);
	io_uring_queue_exit(&ring);
out_close:
	close(pfd);
}

TEST_F(feat, no_prefetch)
{
	struct kvtier_hint h[1];
	struct kvtier_prefetch pf;
	int pfd = pool_with(self, KVTIER_F_POOLS);
	long long hints = pf_stat("hints");

	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, kst_put1(pfd, K0, 0, self->buf, NULL));
	hint_keys(h, 0, 1);
	pf_init(&pf, h, 1, 1, 0, 0);
	ASSERT_EQ(-EOPNOTSUPP, kst_ioctl(pfd, KVTIER_IOC_PREFETCH, &pf));
	ASSERT_EQ(hints, pf_stat("hints"));
	close(pfd);
}

TEST_F(feat, no_prefetch_cancel)
{
	struct kvtier_cancel c;
	int pfd = pool_with(self, KVTIER_F_POOLS);

	ASSERT_LE(0, pfd);
	memset(&c, 0, sizeof(c));
	c.flags = KVTIER_CANCEL_ALL;
	ASSERT_EQ(-EOPNOTSUPP, kst_ioctl(pfd, KVTIER_IOC_CANCEL, &c));
	close(pfd);
}

TEST_F(feat, no_prefetch_eventfd)
{
	struct kvtier_eventfd e;
	int pfd = pool_with(self, KVTIER_F_POOLS);
	int efd = eventfd(0, EFD_CLOEXEC);

	ASSERT_LE(0, pfd);
	ASSERT_LE(0, efd);
	memset(&e, 0, sizeof(e));
	e.fd = efd;
	ASSERT_EQ(-EOPNOTSUPP, kst_ioctl(pfd, KVTIER_IOC_EVENTFD, &e));
	close(efd);
	close(pfd);
}

/* The pool fd keeps its control fd's set after that fd is closed. */
TEST_F(feat, pool_fd_inherits)
{
	struct kvtier_hint h[1];
	struct kvtier_prefetch pf;
	struct kvtier_completion c;
	int limited = pool_with(self, KVTIER_F_POOLS), full;

	ASSERT_LE(0, limited);
	ASSERT_EQ(0, kst_put1(limited, K0, 0, self->buf, NULL));
	hint_keys(h, 0, 1);
	pf_init(&pf, h, 1, 1, 0, 0);
	ASSERT_EQ(-EOPNOTSUPP, kst_ioctl(limited, KVTIER_IOC_PREFETCH, &pf));
	/* the same pool through a control fd that has PREFETCH */
	full = kst_pool_open(self->all, self->name, 0);
	ASSERT_LE(0, full);
	ASSERT_EQ(0, kst_ioctl(full, KVTIER_IOC_PREFETCH, &pf));
	ASSERT_EQ(0, completion(full, &c, 10000));
	ASSERT_EQ(0, c.status);
	close(full);
	close(limited);
}

TEST_F(feat, no_hbm_attach)
{
	struct kvtier_hbm_stat st;
	int pfd = pool_with(self, KVTIER_F_POOLS | KVTIER_F_PREFETCH), full;

	ASSERT_LE(0, pfd);
	ASSERT_EQ(-EOPNOTSUPP, hbm_attach_emul(pfd, 4));
	full = kst_pool_open(self->all, self->name, 0);
	ASSERT_LE(0, full);
	ASSERT_EQ(0, hbm_stat(full, &st));
	ASSERT_EQ(0U, st.attached);
	close(full);
	close(pfd);
}

TEST_F(feat, no_hbm_stat)
{
	struct kvtier_hbm_stat st;
	int pfd = pool_with(self, KVTIER_F_POOLS | KVTIER_F_PREFETCH);

	ASSERT_LE(0, pfd);
	ASSERT_EQ(-EOPNOTSUPP, hbm_stat(pfd, &st));
	close(pfd);
}

TEST_F(feat, no_hbm_adopt)
{
	struct kvtier_adopt e;
	struct kvtier_batch b;
	struct kvtier_hbm_stat st;
	int pfd = pool_with(self, KVTIER_F_POOLS | KVTIER_F_PREFETCH), full;

	ASSERT_LE(0, pfd);
	full = kst_pool_open(self->all, self->name, 0);
	ASSERT_LE(0, full);
	ASSERT_EQ(0, hbm_attach_emul(full, 4));
	adopt_init(&e, 1, 0);
	batch_init(&b, &e, 1, 0);
	ASSERT_EQ(-EOPNOTSUPP, kst_ioctl(pfd, KVTIER_IOC_ADOPT, &b));
	ASSERT_EQ(-ENOENT, kst_lookup1(full, K0, 1, NULL));
	ASSERT_EQ(0, hbm_stat(full, &st));
	ASSERT_EQ(0ULL, st.adopted);
	close(full);
	close(pfd);
}

/*
 * RESERVE, COMMIT, ABORT and the reservation window are of
 * KVTIER_F_RESERVE: without it nothing is reserved, the window not mapped.
 */
TEST_F(feat, no_reserve)
{
	int pfd = pool_with(self, KVTIER_F_POOLS | KVTIER_F_MMAP);
	unsigned long cmds[] = { KVTIER_IOC_RESERVE, KVTIER_IOC_COMMIT,
				 KVTIER_IOC_ABORT };
	struct kvtier_block e;
	__u32 done;
	void *p;
	int i;

	ASSERT_LE(0, pfd);
	for (i = 0; i < 3; i++) {
		kst_blk(&e, K0, 1, NULL);
		ASSERT_EQ(-EOPNOTSUPP, kst_batch(pfd, cmds[i], &e, 1, 0,
						 &done));
	}
	ASSERT_EQ(0LL, kst_resident(pfd));
	/* Past the last block, as before the window was there. */
	p = mmap(NULL, KST_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, pfd,
		 (off_t)(AB_CAP * KST_PAGE));
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	close(pfd);
}

/*
 * EVENTS and CENSUS are of KVTIER_F_EVENTS: without it no events fd is
 * made, nothing is listed.
 */
TEST_F(feat, no_events)
{
	int pfd = pool_with(self, KST_F_KNOWN & ~KVTIER_F_EVENTS);
	struct kvtier_census_entry ent[2];
	struct kvtier_events ev;
	struct kvtier_census c;

	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, kst_put1(pfd, K0, 1, self->buf, NULL));
	memset(&ev, 0, sizeof(ev));
	ev.fd = -1;
	ASSERT_EQ(-EOPNOTSUPP, kst_ioctl(pfd, KVTIER_IOC_EVENTS, &ev));
	ASSERT_EQ(-1, ev.fd);
	memset(&c, 0, sizeof(c));
	memset(ent, 0x5a, sizeof(ent));
	c.entries = (__u64)(uintptr_t)ent;
	c.count = 2;
	ASSERT_EQ(-EOPNOTSUPP, kst_ioctl(pfd, KVTIER_IOC_CENSUS, &c));
	ASSERT_EQ(0U, c.done);
	ASSERT_EQ(0x5a5a5a5a5a5a5a5aULL, ent[0].key[0]);
	close(pfd);
}

/* PREFETCH to HBM is of KVTIER_F_HBM, even where the pool has an arena. */
TEST_F(feat, no_hbm_prefetch_tier)
{
	struct kvtier_hint h[1];
	struct kvtier_prefetch pf;
	int pfd = pool_with(self, KVTIER_F_POOLS | KVTIER_F_PREFETCH), full;
	long long hints = pf_stat("hints");

	ASSERT_LE(0, pfd);
	full = kst_pool_open(self->all, self->name, 0);
	ASSERT_LE(0, full);
	ASSERT_EQ(0, hbm_attach_emul(full, 4));
	ASSERT_EQ(0, kst_put1(pfd, K0, 0, self->buf, NULL));
	hint_keys(h, 0, 1);
	pf_init(&pf, h, 1, 1, 0, 0);
	pf.tier = KVTIER_TIER_HBM;
	ASSERT_EQ(-EOPNOTSUPP, kst_ioctl(pfd, KVTIER_IOC_PREFETCH, &pf));
	ASSERT_EQ(hints, pf_stat("hints"));
	close(full);
	close(pfd);
}

/*
 * Parts are of KVTIER_F_PARTS: a create with parts is -EOPNOTSUPP and
 * makes nothing; without parts it works.
 */
TEST_F(feat, no_parts_create)
{
	struct kvtier_pool_create c;
	struct kvtier_pool_stat st;
	int ctl = ctl_with(KST_F_KNOWN & ~KVTIER_F_PARTS), pfd;

	ASSERT_LE(0, ctl);
	kst_create_init(&c, self->name, 4 * KST_PAGE, AB_CAP, AB_CAP);
	c.parts = 2;
	ASSERT_EQ(-EOPNOTSUPP, kst_create(ctl, &c));
	ASSERT_EQ(-ENOENT, kst_pool_open(self->all, self->name, 0));
	c.parts = KVTIER_PARTS_MAX;
	ASSERT_EQ(-EOPNOTSUPP, kst_create(ctl, &c));
	ASSERT_EQ(-ENOENT, kst_pool_open(self->all, self->name, 0));
	c.parts = 0;
	pfd = kst_create(ctl, &c);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, kst_stat(pfd, &st));
	ASSERT_EQ(0U, st.parts);
	close(pfd);
	close(ctl);
}

/*
 * GET with KVTIER_GET_PART through a pool fd of a control fd without
 * KVTIER_F_PARTS: -EOPNOTSUPP, no entry answered, nothing counted; a
 * plain GET works, and so does the part GET through a fd that has it.
 */
TEST_F(feat, no_parts_get)
{
	int pfd = pool_with(self, KST_F_KNOWN & ~KVTIER_F_PARTS), full;
	char *mine = kst_alloc(KST_PAGE);
	struct kvtier_block e;
	struct kvtier_batch b;

	ASSERT_LE(0, pfd);
	ASSERT_NE(NULL, mine);
	kst_fill(self->buf, KST_PAGE, K0, 1, 1);
	ASSERT_EQ(0, kst_put1(pfd, K0, 1, self->buf, NULL));
	kst_blk(&e, K0, 1, mine);
	batch_init(&b, &e, 1, KVTIER_GET_PART);
	b.part_off = 8;
	b.part_len = 16;
	b.done = 0xffffffffU;
	ASSERT_EQ(-EOPNOTSUPP, kst_ioctl(pfd, KVTIER_IOC_GET, &b));
	ASSERT_EQ(0xffffffffU, b.done);
	ASSERT_EQ(0x7eadbeef, e.status);
	ASSERT_EQ(0, STAT_FD(pfd, gets));
	ASSERT_EQ(0, STAT_FD(pfd, bytes_out));
	ASSERT_EQ(0, kst_get1(pfd, K0, 1, mine, NULL));
	ASSERT_EQ(0, memcmp(self->buf, mine, KST_PAGE));

	full = kst_pool_open(self->all, self->name, 0);
	ASSERT_LE(0, full);
	memset(mine, 0, KST_PAGE);
	kst_blk(&e, K0, 1, mine);
	ASSERT_EQ(0, kst_ioctl(full, KVTIER_IOC_GET, &b));
	ASSERT_EQ(1U, b.done);
	ASSERT_EQ(0, e.status);
	ASSERT_EQ(0, memcmp(self->buf + 8, mine, 16));
	close(full);
	kst_free(mine, KST_PAGE);
	close(pfd);
}

/* ---- size: the first version's size and up ---------------------------- */

FIXTURE(size) {
	int ctl, pfd;
	char name[KVTIER_NAME_MAX];
};

FIXTURE_VARIANT(size) {
	unsigned long cmd;
	size_t ver0;
	bool ctl;		/* a control-fd command */
};

#define SIZE_VARIANT(n, c, v, is_ctl)					\
	FIXTURE_VARIANT_ADD(size, n) { .cmd = (c), .ver0 = (v), .ctl = (is_ctl) }

SIZE_VARIANT(api, KVTIER_IOC_API, KVTIER_API_SIZE_VER0, true);
SIZE_VARIANT(pool_create, KVTIER_IOC_POOL_CREATE,
	     KVTIER_POOL_CREATE_SIZE_VER0, true);
SIZE_VARIANT(pool_open, KVTIER_IOC_POOL_OPEN, KVTIER_POOL_OPEN_SIZE_VER0,
	     true);
SIZE_VARIANT(pool_destroy, KVTIER_IOC_POOL_DESTROY,
	     KVTIER_POOL_DESTROY_SIZE_VER0, true);
SIZE_VARIANT(nvme_attach, KVTIER_IOC_NVME_ATTACH,
	     KVTIER_NVME_ATTACH_SIZE_VER0, true);
SIZE_VARIANT(nvme_detach, KVTIER_IOC_NVME_DETACH,
	     KVTIER_NVME_DETACH_SIZE_VER0, true);
SIZE_VARIANT(nvme_stat, KVTIER_IOC_NVME_STAT, KVTIER_NVME_STAT_SIZE_VER0,
	     true);
SIZE_VARIANT(put, KVTIER_IOC_PUT, KVTIER_BATCH_SIZE_VER0, false);
SIZE_VARIANT(get, KVTIER_IOC_GET, KVTIER_BATCH_SIZE_VER0, false);
SIZE_VARIANT(lookup, KVTIER_IOC_LOOKUP, KVTIER_BATCH_SIZE_VER0, false);
SIZE_VARIANT(drop, KVTIER_IOC_DROP, KVTIER_BATCH_SIZE_VER0, false);
SIZE_VARIANT(pin, KVTIER_IOC_PIN, KVTIER_BATCH_SIZE_VER0, false);
SIZE_VARIANT(unpin, KVTIER_IOC_UNPIN, KVTIER_BATCH_SIZE_VER0, false);
SIZE_VARIANT(stat, KVTIER_IOC_STAT, KVTIER_POOL_STAT_SIZE_VER0, false);
SIZE_VARIANT(sync, KVTIER_IOC_SYNC, KVTIER_SYNC_SIZE_VER0, false);
SIZE_VARIANT(prefetch, KVTIER_IOC_PREFETCH, KVTIER_PREFETCH_SIZE_VER0,
	     false);
SIZE_VARIANT(cancel, KVTIER_IOC_CANCEL, KVTIER_CANCEL_SIZE_VER0, false);
SIZE_VARIANT(eventfd, KVTIER_IOC_EVENTFD, KVTIER_EVENTFD_SIZE_VER0, false);
SIZE_VARIANT(hbm_attach, KVTIER_IOC_HBM_ATTACH, KVTIER_HBM_ATTACH_SIZE_VER0,
	     false);
SIZE_VARIANT(hbm_stat, KVTIER_IOC_HBM_STAT, KVTIER_HBM_STAT_SIZE_VER0,
	     false);
SIZE_VARIANT(adopt, KVTIER_IOC_ADOPT, KVTIER_BATCH_SIZE_VER0, false);
SIZE_VARIANT(reserve, KVTIER_IOC_RESERVE, KVTIER_BATCH_SIZE_VER0, false);
SIZE_VARIANT(commit, KVTIER_IOC_COMMIT, KVTIER_BATCH_SIZE_VER0, false);
SIZE_VARIANT(abort, KVTIER_IOC_ABORT, KVTIER_BATCH_SIZE_VER0, false);
SIZE_VARIANT(events, KVTIER_IOC_EVENTS, KVTIER_EVENTS_SIZE_VER0, false);
SIZE_VARIANT(census, KVTIER_IOC_CENSUS, KVTIER_CENSUS_SIZE_VER0, false);

FIXTURE_SETUP(size)
{
	kst_setup(_metadata);
	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	kst_name(self->name, "size");
	self->pfd = kst_pool_create(self->ctl, self->name, KST_PAGE, 4, 4);
	ASSERT_LE(0, self->pfd);
	/* this header's struct is at least the first version */
	ASSERT_LE(variant->ver0, (size_t)_IOC_SIZE(variant->cmd));
}

FIXTURE_TEARDOWN(size)
{
	close(self->pfd);
	kst_pool_destroy(self->ctl, self->name);
	close(self->ctl);
}

static int size_ioctl(FIXTURE_DATA(size) *self,
		      const FIXTURE_VARIANT(size) *variant, size_t size,
		      void *arg)
{
	return kst_ioctl(variant->ctl ? self->ctl : self->pfd,
			 kst_resize(variant->cmd, size), arg);
}

/* One byte short: refused on the size alone, the struct is not read. */
TEST_F(size, below_ver0)
{
	ASSERT_EQ(-EINVAL, size_ioctl(self, variant, variant->ver0 - 1,
				      kst_unmapped_addr()));
}

/* The first version's size is taken: the struct is read (and faults). */
TEST_F(size, ver0)
{
	ASSERT_EQ(-EFAULT, size_ioctl(self, variant, variant->ver0,
				      kst_unmapped_addr()));
}

/* A nonzero byte past the kernel's struct: -E2BIG, whatever the rest. */
TEST_F(size, tail_nonzero)
{
	size_t len = _IOC_SIZE(variant->cmd) + 8;
	char *buf = calloc(1, len);

	ASSERT_NE(NULL, buf);
	buf[len - 1] = 1;
	ASSERT_EQ(-E2BIG, size_ioctl(self, variant, len, buf));
	free(buf);
}

/* ---- ro: an argument that cannot be written back ---------------------- */

FIXTURE(ro) {
	int ctl, pfd;
	char name[KVTIER_NAME_MAX];
	char *buf;
	void *page;			/* the read-only copy, if any */
};

FIXTURE_SETUP(ro)
{
	kst_setup(_metadata);
	self->page = NULL;
	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	kst_name(self->name, "ro");
	self->pfd = kst_pool_create(self->ctl, self->name, KST_PAGE, AB_CAP,
				    AB_CAP);
	ASSERT_LE(0, self->pfd);
	self->buf = kst_alloc(KST_PAGE);
	ASSERT_NE(NULL, self->buf);
	kst_fill(self->buf, KST_PAGE, K0, 1, 1);
}

FIXTURE_TEARDOWN(ro)
{
	if (self->page)
		munmap(self->page, KST_PAGE);
	close(self->pfd);
	kst_pool_destroy(self->ctl, self->name);
	kst_free(self->buf, KST_PAGE);
	close(self->ctl);
}

/* @cmd with a read-only copy of @arg; the ioctl's 0 or -errno. */
static int ro_ioctl(FIXTURE_DATA(ro) *self, unsigned long cmd,
		    const void *arg, size_t len)
{
	self->page = ro_copy(arg, len);
	if (!self->page)
		return -ENOMEM;
	return kst_ioctl(self->pfd, cmd, self->page);
}

/* A one-entry batch of @cmd on key (K0, k), read-only; 0 or -errno. */
static int ro_batch1(FIXTURE_DATA(ro) *self, unsigned long cmd, __u64 k,
		     const void *buf, __u32 flags, struct kvtier_block *e)
{
	struct kvtier_batch b;

	kst_blk(e, K0, k, buf);
	batch_init(&b, e, 1, flags);
	return ro_ioctl(self, cmd, &b, sizeof(b));
}

#define RO_STAT(self, field)	STAT_FD((self)->pfd, field)

TEST_F(ro, put)
{
	struct kvtier_block e;

	ASSERT_EQ(-EFAULT, ro_batch1(self, KVTIER_IOC_PUT, 1, self->buf, 0,
				     &e));
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, 1, NULL));
	ASSERT_EQ(0, RO_STAT(self, puts));
	/* the entry was not answered either */
	ASSERT_EQ(0x7eadbeef, e.status);
}

TEST_F(ro, get)
{
	struct kvtier_block e;
	char *mine = kst_alloc(KST_PAGE);

	ASSERT_NE(NULL, mine);
	ASSERT_EQ(0, kst_put1(self->pfd, K0, 1, self->buf, NULL));
	ASSERT_EQ(-EFAULT, ro_batch1(self, KVTIER_IOC_GET, 1, mine, 0, &e));
	ASSERT_EQ(0, RO_STAT(self, gets));
	ASSERT_EQ(0, RO_STAT(self, hits));
	ASSERT_EQ(0, RO_STAT(self, bytes_out));
	kst_free(mine, KST_PAGE);
}

TEST_F(ro, lookup)
{
	struct kvtier_block e;

	ASSERT_EQ(0, kst_put1(self->pfd, K0, 1, self->buf, NULL));
	ASSERT_EQ(-EFAULT, ro_batch1(self, KVTIER_IOC_LOOKUP, 1, NULL,
				     KVTIER_LOOKUP_TOUCH, &e));
	ASSERT_EQ(0, RO_STAT(self, hits));
	ASSERT_EQ(0x7eadbeef, e.status);
}

TEST_F(ro, drop)
{
	struct kvtier_block e;

	ASSERT_EQ(0, kst_put1(self->pfd, K0, 1, self->buf, NULL));
	ASSERT_EQ(-EFAULT, ro_batch1(self, KVTIER_IOC_DROP, 1, NULL, 0, &e));
	ASSERT_EQ(0, kst_lookup1(self->pfd, K0, 1, NULL));
	ASSERT_EQ(0, RO_STAT(self, drops));
}

TEST_F(ro, pin)
{
	struct kvtier_block e;

	ASSERT_EQ(0, kst_put1(self->pfd, K0, 1, self->buf, NULL));
	ASSERT_EQ(-EFAULT, ro_batch1(self, KVTIER_IOC_PIN, 1, NULL, 0, &e));
	ASSERT_EQ(0, kst_pinned(self->pfd));
	/* no pin held by this fd: UNPIN says so */
	ASSERT_EQ(-EINVAL, kst_unpin1(self->pfd, K0, 1));
}

/* RESERVE's answer cannot be written back: nothing is reserved. */
TEST_F(ro, reserve)
{
	struct kvtier_block e;

	ASSERT_EQ(-EFAULT, ro_batch1(self, KVTIER_IOC_RESERVE, 1, NULL, 0, &e));
	ASSERT_EQ(0LL, kst_resident(self->pfd));
	kst_blk(&e, K0, 1, NULL);
	ASSERT_EQ(-ENOENT, kst_batch(self->pfd, KVTIER_IOC_ABORT, &e, 1, 0,
				     NULL) ?: e.status);
}

TEST_F(ro, unpin)
{
	struct kvtier_block e;

	ASSERT_EQ(0, kst_put1(self->pfd, K0, 1, self->buf, NULL));
	ASSERT_EQ(0, kst_pin1(self->pfd, K0, 1));
	ASSERT_EQ(-EFAULT, ro_batch1(self, KVTIER_IOC_UNPIN, 1, NULL, 0, &e));
	ASSERT_EQ(1, kst_pinned(self->pfd));
	ASSERT_EQ(-EBUSY, kst_drop1(self->pfd, K0, 1));
	ASSERT_EQ(0, kst_unpin1(self->pfd, K0, 1));
}

/* EVENTS whose fd number cannot be written back makes no fd. */
TEST_F(ro, events)
{
	struct kvtier_events ev;
	int probe;

	memset(&ev, 0, sizeof(ev));
	ASSERT_EQ(-EFAULT, ro_ioctl(self, KVTIER_IOC_EVENTS, &ev, sizeof(ev)));
	/* The lowest free number is still the one it would have taken. */
	probe = dup(0);
	ASSERT_LE(0, probe);
	close(probe);
	memset(&ev, 0, sizeof(ev));
	ASSERT_EQ(0, kst_ioctl(self->pfd, KVTIER_IOC_EVENTS, &ev));
	ASSERT_EQ(probe, ev.fd);
	close(ev.fd);
}

TEST_F(ro, stat)
{
	struct kvtier_pool_stat st;

	memset(&st, 0, sizeof(st));
	ASSERT_EQ(-EFAULT, ro_ioctl(self, KVTIER_IOC_STAT, &st, sizeof(st)));
}

/* Without an NVMe tier SYNC would say -ENODEV: the argument comes first. */
TEST_F(ro, sync)
{
	struct kvtier_sync sy;
	long long dirty;

	ASSERT_EQ(0, kst_put1(self->pfd, K0, 1, self->buf, NULL));
	dirty = RO_STAT(self, dirty);
	memset(&sy, 0, sizeof(sy));
	ASSERT_EQ(-EFAULT, ro_ioctl(self, KVTIER_IOC_SYNC, &sy, sizeof(sy)));
	ASSERT_EQ(dirty, RO_STAT(self, dirty));
}

TEST_F(ro, prefetch)
{
	struct kvtier_hint h[1];
	struct kvtier_prefetch pf;
	struct kvtier_completion c;
	long long hints = pf_stat("hints"), groups = pf_stat("groups");

	ASSERT_EQ(0, kst_put1(self->pfd, K0, 1, self->buf, NULL));
	hint_keys(h, 1, 1);
	pf_init(&pf, h, 1, 1, 0, 0);
	ASSERT_EQ(-EFAULT, ro_ioctl(self, KVTIER_IOC_PREFETCH, &pf,
				    sizeof(pf)));
	/* no group was queued: none ends */
	ASSERT_EQ(-ETIMEDOUT, completion(self->pfd, &c, 1000));
	ASSERT_EQ(hints, pf_stat("hints"));
	ASSERT_EQ(groups, pf_stat("groups"));
}

/*
 * A group kept live by a user HBM arena whose mover never moves: a refused
 * CANCEL leaves it live (its id is taken), a CANCEL that works ends it.
 */
TEST_F(ro, cancel)
{
	struct kvtier_hbm_attach a;
	struct kvtier_hint h[1];
	struct kvtier_prefetch pf;
	struct kvtier_cancel c;

	ASSERT_EQ(0, kst_put1(self->pfd, K0, 1, self->buf, NULL));
	memset(&a, 0, sizeof(a));
	a.backend = KVTIER_HBM_USER;
	a.slots = 4;
	ASSERT_EQ(0, kst_ioctl(self->pfd, KVTIER_IOC_HBM_ATTACH, &a));
	ASSERT_LE(0, a.mover_fd);
	hint_keys(h, 1, 1);
	pf_init(&pf, h, 1, 9, 0, 0);
	pf.tier = KVTIER_TIER_HBM;
	ASSERT_EQ(0, kst_ioctl(self->pfd, KVTIER_IOC_PREFETCH, &pf));
	memset(&c, 0, sizeof(c));
	c.group = 9;
	ASSERT_EQ(-EFAULT, ro_ioctl(self, KVTIER_IOC_CANCEL, &c, sizeof(c)));
	/* group 9 is still live */
	pf_init(&pf, h, 1, 9, 0, 0);
	pf.tier = KVTIER_TIER_HBM;
	ASSERT_EQ(-EEXIST, kst_ioctl(self->pfd, KVTIER_IOC_PREFETCH, &pf));
	/* a CANCEL that can write back is taken (the group ended or not) */
	ASSERT_EQ(0, kst_ioctl(self->pfd, KVTIER_IOC_CANCEL, &c));
	close(a.mover_fd);
}

TEST_F(ro, eventfd)
{
	struct kvtier_eventfd e;
	struct kvtier_hint h[1];
	struct kvtier_prefetch pf;
	struct kvtier_completion c;
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	__u64 n;

	ASSERT_LE(0, efd);
	memset(&e, 0, sizeof(e));
	e.fd = efd;
	ASSERT_EQ(-EFAULT, ro_ioctl(self, KVTIER_IOC_EVENTFD, &e, sizeof(e)));
	/* a completion does not signal it: it was not registered */
	ASSERT_EQ(0, kst_put1(self->pfd, K0, 1, self->buf, NULL));
	hint_keys(h, 1, 1);
	pf_init(&pf, h, 1, 1, 0, 0);
	ASSERT_EQ(0, kst_ioctl(self->pfd, KVTIER_IOC_PREFETCH, &pf));
	ASSERT_EQ(0, completion(self->pfd, &c, 10000));
	ASSERT_EQ(-1, read(efd, &n, sizeof(n)));
	ASSERT_EQ(EAGAIN, errno);
	close(efd);
}

TEST_F(ro, hbm_attach)
{
	struct kvtier_hbm_attach a;
	struct kvtier_hbm_stat st;

	memset(&a, 0, sizeof(a));
	a.backend = KVTIER_HBM_EMUL;
	a.slots = 4;
	ASSERT_EQ(-EFAULT, ro_ioctl(self, KVTIER_IOC_HBM_ATTACH, &a,
				    sizeof(a)));
	ASSERT_EQ(0, hbm_stat(self->pfd, &st));
	ASSERT_EQ(0U, st.attached);
	ASSERT_EQ(0U, st.slots);
	/* and not -EBUSY: there is no arena */
	ASSERT_EQ(0, hbm_attach_emul(self->pfd, 4));
}

TEST_F(ro, hbm_stat)
{
	struct kvtier_hbm_stat st;

	ASSERT_EQ(0, hbm_attach_emul(self->pfd, 4));
	memset(&st, 0, sizeof(st));
	ASSERT_EQ(-EFAULT, ro_ioctl(self, KVTIER_IOC_HBM_STAT, &st,
				    sizeof(st)));
}

TEST_F(ro, adopt)
{
	struct kvtier_hbm_stat st;
	struct kvtier_adopt e;
	struct kvtier_batch b;

	ASSERT_EQ(0, hbm_attach_emul(self->pfd, 4));
	adopt_init(&e, 1, 0);
	batch_init(&b, &e, 1, 0);
	ASSERT_EQ(-EFAULT, ro_ioctl(self, KVTIER_IOC_ADOPT, &b, sizeof(b)));
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, 1, NULL));
	ASSERT_EQ(0, hbm_stat(self->pfd, &st));
	ASSERT_EQ(0ULL, st.adopted);
	ASSERT_EQ(0U, st.used);
}

/* ADOPT's entries go through the batch path: read-only entries, nothing. */
TEST_F(ro, adopt_entries)
{
	struct kvtier_hbm_stat st;
	struct kvtier_adopt e;
	struct kvtier_batch b;

	ASSERT_EQ(0, hbm_attach_emul(self->pfd, 4));
	adopt_init(&e, 1, 0);
	self->page = ro_copy(&e, sizeof(e));
	ASSERT_NE(NULL, self->page);
	batch_init(&b, self->page, 1, 0);
	ASSERT_EQ(-EFAULT, kst_ioctl(self->pfd, KVTIER_IOC_ADOPT, &b));
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, 1, NULL));
	ASSERT_EQ(0, hbm_stat(self->pfd, &st));
	ASSERT_EQ(0ULL, st.adopted);
	ASSERT_EQ(0U, st.used);
}

TEST_HARNESS_MAIN
