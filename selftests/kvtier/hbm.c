// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier selftests: the HBM tier, with both backends (FIXTURE_VARIANT):
 * "emul" (kernel memory standing in for device memory) and "user" (an
 * arena in this process, moved by a mover thread through the mover fd).
 *
 * The pool has a small DRAM share and the NVMe drive under test attached,
 * so blocks travel NVMe -> DRAM -> HBM and back down.
 */
#include <poll.h>
#include <pthread.h>

#include "nvme_test.h"

#define BS	(64 * KST_KIB)
#define CAP	512U
#define DRAM	32U
#define SLOTS	16U
#define NPUT	96U
#define MOVER_PATIENCE_MS	60000	/* hbm_timeout_ms, but in mover_timeout */
#define K0	0x68626d7465737431ULL	/* "hbmtest1" */
#define SEC	1000000000ULL

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * SEC + ts.tv_nsec;
}

static int set_param(const char *name, long long val)
{
	char path[256];

	snprintf(path, sizeof(path), KST_PARAM_DIR "/%s", name);
	return kst_write_num(path, val);
}

/* ---- the mover of the user backend ------------------------------------ */

struct mover {
	int fd;			/* the mover fd */
	const char *map;	/* the pool, mapped read-only */
	char *arena;		/* SLOTS blocks: "device memory" */
	char *stage;		/* FROM_DEV bytes on their way back */
	volatile int stop;	/* exit */
	volatile int mute;	/* take commands, answer none */
	volatile int fail;	/* answer every copy with this status */
	unsigned int done;
	pthread_t thread;
};

static void *mover_main(void *arg)
{
	struct mover *m = arg;
	struct kvtier_move cmd[16];

	while (!m->stop) {
		struct pollfd p = { .fd = m->fd, .events = POLLIN };
		ssize_t n;
		int i;

		if (poll(&p, 1, 50) <= 0)
			continue;
		n = read(m->fd, cmd, sizeof(cmd));
		if (n <= 0)
			break;		/* detached: end of file */
		for (i = 0; i < n / (int)sizeof(cmd[0]); i++) {
			struct kvtier_moved r = { .seq = cmd[i].seq };
			char *slot = m->arena + (size_t)cmd[i].slot * BS;

			if (m->mute)
				continue;
			r.status = m->fail;
			if (!r.status && cmd[i].op == KVTIER_MOVE_TO_DEV) {
				memcpy(slot, m->map + cmd[i].addr * BS, BS);
			} else if (!r.status) {
				memcpy(m->stage, slot, BS);
				r.buf = (__u64)(uintptr_t)m->stage;
			}
			if (write(m->fd, &r, sizeof(r)) != sizeof(r))
				return NULL;
			m->done++;
		}
	}
	return NULL;
}

FIXTURE(hbm) {
	int ctl, pfd;
	char name[KVTIER_NAME_MAX];
	char *buf;
	struct mover mv;
	long long timeout;
	bool user;
};

FIXTURE_VARIANT(hbm) {
	__u32 backend;
};

FIXTURE_VARIANT_ADD(hbm, emul) { .backend = KVTIER_HBM_EMUL };
FIXTURE_VARIANT_ADD(hbm, user) { .backend = KVTIER_HBM_USER };

static int hbm_attach(int pfd, __u32 backend, __u32 slots, int *mover_fd)
{
	struct kvtier_hbm_attach a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.backend = backend;
	a.slots = slots;
	ret = kst_ioctl(pfd, KVTIER_IOC_HBM_ATTACH, &a);
	if (!ret && mover_fd)
		*mover_fd = a.mover_fd;
	return ret;
}

static int hbm_stat(int pfd, struct kvtier_hbm_stat *st)
{
	memset(st, 0, sizeof(*st));
	return kst_ioctl(pfd, KVTIER_IOC_HBM_STAT, st);
}

static int put_keys(int pfd, void *buf, __u64 first, __u32 n)
{
	__u32 i;
	int ret;

	for (i = 0; i < n; i++) {
		kst_fill(buf, BS, K0, first + i, 1);
		ret = kst_put1(pfd, K0, first + i, buf, NULL);
		if (ret)
			return ret;
	}
	return 0;
}

/* GET key @k: 0 with the bytes of key @want, -EILSEQ, or -errno. */
static int get_as(int pfd, void *buf, __u64 k, __u64 want)
{
	int ret;

	memset(buf, 0x5a, BS);
	ret = kst_get1(pfd, K0, k, buf, NULL);
	if (ret)
		return ret;
	return kst_check_gen(buf, BS, K0, want, 1) == -1 ? 0 : -EILSEQ;
}

/* PREFETCH keys into HBM and wait; the completion's status and ready. */
static int stage(int pfd, __u64 first, __u32 n, __u64 group, __u32 *ready)
{
	struct kvtier_hint h[64];
	struct kvtier_prefetch pf;
	struct kvtier_completion c;
	struct pollfd p = { .fd = pfd, .events = POLLIN };
	__u32 i;
	int ret;

	memset(h, 0, sizeof(h));
	for (i = 0; i < n; i++) {
		h[i].key[0] = K0;
		h[i].key[1] = first + i;
	}
	memset(&pf, 0, sizeof(pf));
	pf.hints = (__u64)(uintptr_t)h;
	pf.count = n;
	pf.group = group;
	pf.tier = KVTIER_TIER_HBM;
	pf.deadline_ns = now_ns() + 20 * SEC;
	ret = kst_ioctl(pfd, KVTIER_IOC_PREFETCH, &pf);
	if (ret)
		return ret;
	do {
		if (poll(&p, 1, 30000) <= 0)
			return -ETIMEDOUT;
		ret = read(pfd, &c, sizeof(c)) == sizeof(c) ? 0 : -errno;
	} while (!ret && c.group != group);
	if (ret)
		return ret;
	*ready = c.ready;
	return c.status;
}

/* Blocks the pool's stat counts in HBM, or -errno. */
static long long pstat_hbm(int pfd)
{
	struct kvtier_pool_stat st;
	int ret = kst_stat(pfd, &st);

	return ret ? ret : (long long)st.resident[KVTIER_TIER_HBM];
}

static int lookup_slot(int pfd, __u64 k, __u32 *slot)
{
	struct kvtier_block b;
	int ret = kst_lookup1(pfd, K0, k, &b);

	if (ret)
		return ret;
	*slot = b.slot;
	return (int)b.tier;
}

static int adopt(int pfd, __u64 k, __u32 slot)
{
	struct kvtier_adopt e;
	struct kvtier_batch b;
	int ret;

	memset(&e, 0, sizeof(e));
	e.key[0] = K0;
	e.key[1] = k;
	e.slot = slot;
	memset(&b, 0, sizeof(b));
	b.blocks = (__u64)(uintptr_t)&e;
	b.count = 1;
	ret = kst_ioctl(pfd, KVTIER_IOC_ADOPT, &b);
	return ret ? ret : e.status;
}

static void mover_start(FIXTURE_DATA(hbm) *self, int fd)
{
	self->mv.fd = fd;
	self->mv.map = mmap(NULL, (size_t)CAP * BS, PROT_READ, MAP_SHARED,
			    self->pfd, 0);
	self->mv.arena = kst_alloc((size_t)SLOTS * BS);
	self->mv.stage = kst_alloc(BS);
	pthread_create(&self->mv.thread, NULL, mover_main, &self->mv);
}

static void mover_stop(FIXTURE_DATA(hbm) *self)
{
	if (self->mv.fd < 0)
		return;
	self->mv.stop = 1;
	pthread_join(self->mv.thread, NULL);
	close(self->mv.fd);
	self->mv.fd = -1;
}

FIXTURE_SETUP(hbm)
{
	int mfd = -1;

	kst_setup(_metadata);

	self->pfd = -1;
	self->mv.fd = -1;
	self->user = variant->backend == KVTIER_HBM_USER;
	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	ASSERT_EQ(0, kst_param("hbm_timeout_ms", &self->timeout));
	/*
	 * The mover here is a thread of an emulated guest on a host that may
	 * be building a kernel beside it: a vCPU can stall for seconds. Only
	 * mover_timeout tests the watchdog, and sets its own limit.
	 */
	ASSERT_EQ(0, set_param("hbm_timeout_ms", MOVER_PATIENCE_MS));
	if (nvt_attached(self->ctl) >= 1)
		ASSERT_EQ(0, nvt_detach_deadline(120));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	self->buf = kst_alloc(BS);
	ASSERT_NE(NULL, self->buf);
	kst_name(self->name, "hbm");
	self->pfd = kst_pool_create(self->ctl, self->name, BS, CAP, DRAM);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(0, put_keys(self->pfd, self->buf, 0, NPUT));
	ASSERT_EQ(0, hbm_attach(self->pfd, variant->backend, SLOTS, &mfd));
	if (self->user) {
		ASSERT_LE(0, mfd);
		mover_start(self, mfd);
		ASSERT_NE(MAP_FAILED, self->mv.map);
		ASSERT_NE(NULL, self->mv.arena);
	} else {
		ASSERT_EQ(-1, mfd);
	}
}

FIXTURE_TEARDOWN(hbm)
{
	mover_stop(self);
	if (self->mv.map && self->mv.map != MAP_FAILED)
		munmap((void *)self->mv.map, (size_t)CAP * BS);
	set_param("hbm_timeout_ms", self->timeout);
	if (self->pfd >= 0)
		close(self->pfd);
	kst_pool_destroy(self->ctl, self->name);
	if (nvt_attached(self->ctl) >= 1)
		nvt_detach_deadline(120);
	kst_free(self->buf, BS);
	close(self->ctl);
}

/* Bad attaches: exact errnos. */
TEST_F(hbm, attach_errors)
{
	struct kvtier_hbm_attach a;
	char name[KVTIER_NAME_MAX];
	int pfd, ro;

	ASSERT_EQ(-EBUSY, hbm_attach(self->pfd, variant->backend, SLOTS, NULL));
	kst_name(name, "hbm2");
	pfd = kst_pool_create(self->ctl, name, BS, 64, 16);
	ASSERT_LE(0, pfd);
	EXPECT_EQ(-EINVAL, hbm_attach(pfd, 0, SLOTS, NULL));
	EXPECT_EQ(-EINVAL, hbm_attach(pfd, 3, SLOTS, NULL));
	EXPECT_EQ(-EINVAL, hbm_attach(pfd, variant->backend, 0, NULL));
	EXPECT_EQ(-EINVAL, hbm_attach(pfd, variant->backend,
				      KVTIER_HBM_SLOTS_MAX + 1, NULL));
	memset(&a, 0, sizeof(a));
	a.backend = variant->backend;
	a.slots = 1;
	a.flags = 1;
	EXPECT_EQ(-EINVAL, kst_ioctl(pfd, KVTIER_IOC_HBM_ATTACH, &a));
	a.flags = 0;
	a.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, kst_ioctl(pfd, KVTIER_IOC_HBM_ATTACH, &a));
	/* 4 GiB of emulated HBM: more than hbm_emul_mb. */
	EXPECT_EQ(-ENOSPC, hbm_attach(pfd, KVTIER_HBM_EMUL,
				      KVTIER_HBM_SLOTS_MAX, NULL));
	ro = kst_pool_open(self->ctl, name, KVTIER_POOL_RDONLY);
	ASSERT_LE(0, ro);
	EXPECT_EQ(-EBADF, hbm_attach(ro, variant->backend, 1, NULL));
	/* A pool without HBM: PREFETCH to HBM and ADOPT refused. */
	EXPECT_EQ(-ENODEV, adopt(pfd, 1, 0));
	close(ro);
	close(pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
}

/* Blocks only on NVMe go to HBM by PREFETCH; LOOKUP says HBM and where. */
TEST_F(hbm, nvme_to_hbm)
{
	struct kvtier_hbm_stat st;
	__u32 ready = 0, slot, seen = 0, i;

	ASSERT_EQ(KVTIER_TIER_NVME, lookup_slot(self->pfd, 0, &slot));
	ASSERT_EQ((__u32)KVTIER_SLOT_NONE, slot);
	i = stage(self->pfd, 0, 8, 1, &ready);
	if (i) {
		hbm_stat(self->pfd, &st);
		TH_LOG("stage: %d, ready %u; to_dev %llu, errors %llu, timeouts %llu, used %u, mover did %u",
		       (int)i, ready, (unsigned long long)st.to_dev,
		       (unsigned long long)st.copy_errors,
		       (unsigned long long)st.timeouts, st.used, self->mv.done);
	}
	ASSERT_EQ(0U, i);
	EXPECT_EQ(8U, ready);
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(KVTIER_TIER_HBM, lookup_slot(self->pfd, i, &slot));
		ASSERT_GT(SLOTS, slot);
		EXPECT_EQ(0U, seen & (1U << slot));
		seen |= 1U << slot;
		/* The device holds the block's bytes. */
		if (self->user)
			EXPECT_EQ(-1, kst_check_gen(self->mv.arena +
						    (size_t)slot * BS, BS, K0,
						    i, 1));
	}
	ASSERT_EQ(8, pstat_hbm(self->pfd));
	ASSERT_EQ(0, hbm_stat(self->pfd, &st));
	EXPECT_EQ(1U, st.attached);
	EXPECT_EQ(variant->backend, st.backend);
	EXPECT_EQ(SLOTS, st.slots);
	EXPECT_EQ(8U, st.used);
	EXPECT_EQ(8ULL, st.to_dev);
	EXPECT_EQ(0ULL, st.copy_errors);
}

/*
 * A block made in device memory: ADOPT it, it is in HBM at once, and a GET
 * (which waits for the write-down) returns the slot's bytes. The emulated
 * device is filled by staging a block first (its bytes stay in the slot).
 */
TEST_F(hbm, adopt_round_trip)
{
	struct kvtier_hbm_stat st;
	__u32 ready, slot;

	if (self->user) {
		slot = 3;
		kst_fill(self->mv.arena + (size_t)slot * BS, BS, K0, 7, 1);
	} else {
		ASSERT_EQ(0, stage(self->pfd, 7, 1, 2, &ready));
		ASSERT_EQ(KVTIER_TIER_HBM, lookup_slot(self->pfd, 7, &slot));
	}
	/* The key goes, the slot keeps the bytes; adopt them as key 1000. */
	ASSERT_EQ(0, kst_drop1(self->pfd, K0, 7));
	ASSERT_EQ(0, adopt(self->pfd, 1000, slot));
	ASSERT_EQ(KVTIER_TIER_HBM, lookup_slot(self->pfd, 1000, &ready));
	EXPECT_EQ(slot, ready);
	ASSERT_EQ(0, get_as(self->pfd, self->buf, 1000, 7));
	ASSERT_EQ(0, hbm_stat(self->pfd, &st));
	EXPECT_EQ(1ULL, st.adopted);
	EXPECT_EQ(1ULL, st.from_dev);
	/* Written down, still in HBM (inclusive). */
	ASSERT_EQ(KVTIER_TIER_HBM, lookup_slot(self->pfd, 1000, &ready));
}

/* ADOPT's errors. */
TEST_F(hbm, adopt_errors)
{
	struct kvtier_adopt e[2];
	struct kvtier_batch b;
	int ro;

	EXPECT_EQ(-EINVAL, adopt(self->pfd, 2000, SLOTS));
	EXPECT_EQ(-EEXIST, adopt(self->pfd, 0, 0));
	if (self->user)
		kst_fill(self->mv.arena, BS, K0, 2000, 1);
	ASSERT_EQ(0, adopt(self->pfd, 2000, 0));
	EXPECT_EQ(-EBUSY, adopt(self->pfd, 2001, 0));
	EXPECT_EQ(-EEXIST, adopt(self->pfd, 2000, 1));
	memset(e, 0, sizeof(e));
	e[0].key[0] = K0;
	e[0].key[1] = 2002;
	e[0].reserved = 1;
	memset(&b, 0, sizeof(b));
	b.blocks = (__u64)(uintptr_t)e;
	b.count = 1;
	EXPECT_EQ(-EINVAL, kst_ioctl(self->pfd, KVTIER_IOC_ADOPT, &b));
	b.count = 0;
	EXPECT_EQ(-EINVAL, kst_ioctl(self->pfd, KVTIER_IOC_ADOPT, &b));
	ro = kst_pool_open(self->ctl, self->name, KVTIER_POOL_RDONLY);
	ASSERT_LE(0, ro);
	e[0].reserved = 0;
	b.count = 1;
	EXPECT_EQ(-EBADF, kst_ioctl(ro, KVTIER_IOC_ADOPT, &b));
	close(ro);
}

/* Adopted and synced: it comes back from NVMe after a detach and attach. */
TEST_F(hbm, adopted_block_reaches_nvme)
{
	if (self->user)
		kst_fill(self->mv.arena + 5 * BS, BS, K0, 3000, 1);
	else
		return;	/* the emulated slot holds no chosen bytes here */
	ASSERT_EQ(0, adopt(self->pfd, 3000, 5));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	mover_stop(self);
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	ASSERT_EQ(0, get_as(self->pfd, self->buf, 3000, 3000));
}

/* What the arena counted, for a failure's log. */
static void hbm_log(struct __test_metadata *_metadata,
		    FIXTURE_DATA(hbm) *self)
{
	struct kvtier_hbm_stat st;

	if (hbm_stat(self->pfd, &st))
		return;
	TH_LOG("hbm: attached %u used %u of %u, to_dev %llu evictions %llu copy_errors %llu timeouts %llu detached %llu; mover did %u",
	       st.attached, st.used, st.slots, (unsigned long long)st.to_dev,
	       (unsigned long long)st.evictions,
	       (unsigned long long)st.copy_errors,
	       (unsigned long long)st.timeouts,
	       (unsigned long long)st.detached, self->mv.done);
}

/* More blocks than slots: the least recently used slots go; no block does. */
TEST_F(hbm, slots_recycled)
{
	struct kvtier_hbm_stat st;
	__u32 ready = 0, i;
	int ret;

	ASSERT_EQ(0, stage(self->pfd, 0, 12, 3, &ready));
	ret = stage(self->pfd, 12, 12, 4, &ready);
	if (ret)
		hbm_log(_metadata, self);
	ASSERT_EQ(0, ret) TH_LOG("ready %u of 12", ready);
	EXPECT_EQ(12U, ready);
	ASSERT_EQ(0, hbm_stat(self->pfd, &st));
	EXPECT_EQ(SLOTS, st.used);
	EXPECT_EQ(8ULL, st.evictions);
	for (i = 0; i < NPUT; i++)
		ASSERT_EQ(0, get_as(self->pfd, self->buf, i, i));
}

/* A copy the mover reports failed: the block stays where it was. */
TEST_F(hbm, copy_failure_counted)
{
	struct kvtier_hbm_stat st;
	__u32 ready = 0, slot;

	if (!self->user)
		return;
	self->mv.fail = -EIO;
	EXPECT_NE(0, stage(self->pfd, 0, 2, 5, &ready));
	ASSERT_EQ(0, hbm_stat(self->pfd, &st));
	EXPECT_LE(1ULL, st.copy_errors);
	EXPECT_EQ(0U, st.used);
	EXPECT_NE(KVTIER_TIER_HBM, lookup_slot(self->pfd, 0, &slot));
	EXPECT_EQ(0, get_as(self->pfd, self->buf, 0, 0));
	self->mv.fail = 0;
	EXPECT_EQ(0, stage(self->pfd, 0, 2, 6, &ready));
}

/*
 * The mover dies with a write-down outstanding: the arena is detached,
 * the adopted block is lost, everything else stays readable, nothing hangs.
 */
TEST_F(hbm, mover_death)
{
	struct kvtier_hbm_stat st;
	__u32 ready, slot;

	if (!self->user)
		return;
	ASSERT_EQ(0, stage(self->pfd, 0, 4, 7, &ready));
	self->mv.mute = 1;
	ASSERT_EQ(0, adopt(self->pfd, 4000, 9));
	usleep(100000);
	mover_stop(self);
	EXPECT_EQ(-ENOENT, get_as(self->pfd, self->buf, 4000, 4000));
	ASSERT_EQ(0, hbm_stat(self->pfd, &st));
	EXPECT_EQ(0U, st.attached);
	EXPECT_EQ(1ULL, st.detached);
	EXPECT_NE(KVTIER_TIER_HBM, lookup_slot(self->pfd, 0, &slot));
	for (ready = 0; ready < NPUT; ready++)
		ASSERT_EQ(0, get_as(self->pfd, self->buf, ready, ready));
	/* Detached: HBM targets refused; a new arena may be attached. */
	EXPECT_EQ(-ENODEV, adopt(self->pfd, 4001, 0));
	EXPECT_EQ(0, hbm_attach(self->pfd, KVTIER_HBM_EMUL, SLOTS, NULL));
}

/* A mover that does not answer in hbm_timeout_ms is taken for dead. */
TEST_F(hbm, mover_timeout)
{
	struct kvtier_hbm_stat st;
	double t0;

	if (!self->user)
		return;
	ASSERT_EQ(0, set_param("hbm_timeout_ms", 400));
	self->mv.mute = 1;
	ASSERT_EQ(0, adopt(self->pfd, 5000, 2));
	t0 = kst_mono();
	/* The reader waits for the write-down, which times out. */
	EXPECT_EQ(-ENOENT, get_as(self->pfd, self->buf, 5000, 5000));
	EXPECT_GT(10.0, kst_mono() - t0);
	ASSERT_EQ(0, hbm_stat(self->pfd, &st));
	EXPECT_EQ(1ULL, st.timeouts);
	EXPECT_EQ(0U, st.attached);
}

TEST_HARNESS_MAIN
