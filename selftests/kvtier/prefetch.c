// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier selftests: prefetch hints (KVTIER_IOC_PREFETCH, CANCEL, EVENTFD,
 * completions by read/poll) and io_uring commands (IORING_OP_URING_CMD).
 *
 * Each test attaches the NVMe drive under test, formatted, and fills a pool
 * whose DRAM share is small, so most of its blocks are only on NVMe.
 */
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>

#include "prefetch_test.h"

#define BS	(64 * KST_KIB)
#define CAP	1024U
#define DRAM	32U
#define NPUT	160U		/* keys 0..NPUT-1, generation 1 */

/* PREFETCH keys first..first+n-1 as group @group; the ioctl's result. */
static int prefetch(int pfd, __u64 first, __u32 n, __u64 group,
		    __u64 deadline, __u32 flags, __u32 prio,
		    struct kvtier_prefetch *out)
{
	struct kvtier_hint *h = calloc(n, sizeof(*h));
	struct kvtier_prefetch pf;
	int ret;

	hint_keys(h, first, n);
	pf_init(&pf, h, n, group, deadline, flags);
	pf.priority = prio;
	ret = kst_ioctl(pfd, KVTIER_IOC_PREFETCH, &pf);
	if (out)
		*out = pf;
	free(h);
	return ret;
}

static int key_tier(int pfd, __u64 k)
{
	struct kvtier_block b;
	int ret = kst_lookup1(pfd, K0, k, &b);

	return ret ? ret : (int)b.tier;
}

static unsigned int count_tier(int pfd, __u64 first, __u32 n, int tier)
{
	unsigned int c = 0;
	__u32 i;

	for (i = 0; i < n; i++)
		c += key_tier(pfd, first + i) == tier;
	return c;
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

/* GET key @k: 0 with exact bytes, -EILSEQ on wrong bytes, or -errno. */
static int get_check(int pfd, void *buf, __u64 k)
{
	int ret;

	memset(buf, 0x5a, BS);
	ret = kst_get1(pfd, K0, k, buf, NULL);
	if (ret)
		return ret;
	return kst_check_gen(buf, BS, K0, k, 1) == -1 ? 0 : -EILSEQ;
}

/*
 * PUT @n new blocks from @first, each used once right after (GET): blocks
 * used again, which push every other unprotected block out of DRAM with
 * either policy (lru: they are the most recent; seg: they fill main, and
 * main hands its coldest to probation, which goes first).
 */
static int put_used_keys(int pfd, void *buf, __u64 first, __u32 n)
{
	__u32 i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = put_keys(pfd, buf, first + i, 1);
		if (!ret)
			ret = get_check(pfd, buf, first + i);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Ordering cases queue their groups behind a blocker: a group of 48 blocks
 * only on NVMe (80..127, which those cases do not name), no deadline (so it
 * orders as its PREFETCH time, before every group queued after it), read
 * one at a time with prefetch_qd 1. The groups whose order a case checks
 * are then all queued before the engine gets past the blocker, however
 * long the test is descheduled between two PREFETCHes: a first group of
 * 12 reads was not always enough under emulation. prefetch_hold_ms 0, so
 * its blocks are not held once it ends (the fixture restores it).
 */
#define BLOCKER 99ULL

static int queue_blocker(int pfd)
{
	int ret = set_param("prefetch_qd", 1);

	if (!ret)
		ret = set_param("prefetch_hold_ms", 0);
	return ret ? ret : prefetch(pfd, 80, 48, BLOCKER, 0, 0, 0, NULL);
}

/* The next completion that is not the blocker's. */
static int completion_past(int pfd, struct kvtier_completion *c, int ms)
{
	int ret;

	do
		ret = completion(pfd, c, ms);
	while (!ret && c->group == BLOCKER);
	return ret;
}

FIXTURE(pf) {
	int ctl, pfd;
	char name[KVTIER_NAME_MAX];
	char *buf;
	long long qd, pct, hold;
};

FIXTURE_SETUP(pf)
{
	kst_setup(_metadata);

	self->pfd = -1;
	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	ASSERT_EQ(0, kst_param("prefetch_qd", &self->qd));
	ASSERT_EQ(0, kst_param("prefetch_protect_pct", &self->pct));
	ASSERT_EQ(0, kst_param("prefetch_hold_ms", &self->hold));
	if (nvt_attached(self->ctl) >= 1)
		ASSERT_EQ(0, nvt_detach_deadline(120));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	self->buf = kst_alloc(BS);
	ASSERT_NE(NULL, self->buf);
	kst_name(self->name, "pf");
	self->pfd = kst_pool_create(self->ctl, self->name, BS, CAP, DRAM);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(0, put_keys(self->pfd, self->buf, 0, NPUT));
	/* The first blocks are only on NVMe now. */
	ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 0));
	ASSERT_EQ(KVTIER_TIER_DRAM, key_tier(self->pfd, NPUT - 1));
}

FIXTURE_TEARDOWN(pf)
{
	set_param("prefetch_qd", self->qd);
	set_param("prefetch_protect_pct", self->pct);
	set_param("prefetch_hold_ms", self->hold);
	if (self->pfd >= 0)
		close(self->pfd);
	kst_pool_destroy(self->ctl, self->name);
	if (nvt_attached(self->ctl) >= 1)
		nvt_detach_deadline(120);
	kst_free(self->buf, BS);
	close(self->ctl);
}

/* Blocks only on NVMe are in DRAM by their deadline, exact. */
TEST_F(pf, stages_by_deadline)
{
	__u64 deadline = now_ns() + 10 * SEC;
	struct kvtier_completion c;
	struct kvtier_prefetch pf;
	__u32 i;

	ASSERT_EQ(16U, count_tier(self->pfd, 0, 16, KVTIER_TIER_NVME));
	ASSERT_EQ(0, prefetch(self->pfd, 0, 16, 1, deadline, 0, 0, &pf));
	EXPECT_EQ(16U, pf.queued);
	EXPECT_EQ(0U, pf.resident);
	ASSERT_EQ(0, completion(self->pfd, &c, 20000));
	EXPECT_EQ(1ULL, c.group);
	EXPECT_EQ(1007ULL, c.cookie);
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(16U, c.count);
	EXPECT_EQ(16U, c.ready);
	EXPECT_EQ(0U, c.flags);
	EXPECT_GE(deadline, c.end_ns);
	EXPECT_EQ(16U, count_tier(self->pfd, 0, 16, KVTIER_TIER_DRAM));
	for (i = 0; i < 16; i++)
		ASSERT_EQ(0, get_check(self->pfd, self->buf, i));
}

/* Hints for blocks in DRAM complete at once; the prefix is all of them. */
TEST_F(pf, resident_blocks_complete)
{
	struct kvtier_completion c;
	struct kvtier_prefetch pf;

	ASSERT_EQ(0, prefetch(self->pfd, NPUT - 8, 8, 2, 0, 0, 0, &pf));
	EXPECT_EQ(0U, pf.queued);
	EXPECT_EQ(8U, pf.resident);
	ASSERT_EQ(0, completion(self->pfd, &c, 10000));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(8U, c.ready);
	/* No deadline: never late, and nothing to cancel at. */
	EXPECT_EQ(0U, c.flags);
	ASSERT_EQ(0, prefetch(self->pfd, NPUT - 8, 8, 3, 0,
			      KVTIER_PREFETCH_CANCEL_LATE, 0, NULL));
	ASSERT_EQ(0, completion(self->pfd, &c, 10000));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(0U, c.flags);
	EXPECT_EQ(8U, c.ready);
}

/* A hint for no block is dropped and reported; the prefix stops there. */
TEST_F(pf, unknown_key_dropped)
{
	struct kvtier_completion c;
	struct kvtier_prefetch pf;
	struct kvtier_hint h[4];
	long long dropped = pf_stat("dropped");

	hint_keys(h, 0, 4);
	h[2].key[1] = 999999;
	pf_init(&pf, h, 4, 3, 0, 0);
	ASSERT_EQ(0, kst_ioctl(self->pfd, KVTIER_IOC_PREFETCH, &pf));
	EXPECT_EQ(0, h[0].status);
	EXPECT_EQ((__u32)KVTIER_TIER_NVME, h[0].tier);
	EXPECT_EQ(-ENOENT, h[2].status);
	EXPECT_EQ((__u32)KVTIER_TIER_NONE, h[2].tier);
	EXPECT_EQ(KVTIER_ADDR_NONE, h[2].addr);
	EXPECT_EQ(3U, pf.queued);
	EXPECT_EQ(dropped + 1, pf_stat("dropped"));
	ASSERT_EQ(0, completion(self->pfd, &c, 20000));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(2U, c.ready);
	EXPECT_EQ(4U, c.count);
}

/* Hints may name block addresses; out comes the key. */
TEST_F(pf, hints_by_address)
{
	struct kvtier_completion c;
	struct kvtier_prefetch pf;
	struct kvtier_block b;
	struct kvtier_hint h[2];

	ASSERT_EQ(0, kst_lookup1(self->pfd, K0, 5, &b));
	memset(h, 0, sizeof(h));
	h[0].addr = b.addr;
	h[1].addr = CAP + 5;
	pf_init(&pf, h, 2, 4, 0, KVTIER_PREFETCH_ADDR);
	ASSERT_EQ(0, kst_ioctl(self->pfd, KVTIER_IOC_PREFETCH, &pf));
	EXPECT_EQ(0, h[0].status);
	EXPECT_EQ(K0, h[0].key[0]);
	EXPECT_EQ(5ULL, h[0].key[1]);
	EXPECT_EQ(-ENOENT, h[1].status);
	ASSERT_EQ(0, completion(self->pfd, &c, 20000));
	EXPECT_EQ(1U, c.ready);
	EXPECT_EQ(KVTIER_TIER_DRAM, key_tier(self->pfd, 5));
}

TEST_F(pf, earliest_deadline_first)
{
	struct kvtier_completion c[2];
	__u64 now = now_ns();

	ASSERT_EQ(0, queue_blocker(self->pfd));
	ASSERT_EQ(0, prefetch(self->pfd, 0, 64, 10, now + 60 * SEC, 0, 0,
			      NULL));
	ASSERT_EQ(0, prefetch(self->pfd, 64, 8, 11, now + 30 * SEC, 0, 0,
			      NULL));
	ASSERT_EQ(0, completion_past(self->pfd, &c[0], 60000));
	ASSERT_EQ(0, completion_past(self->pfd, &c[1], 60000));
	EXPECT_EQ(11ULL, c[0].group);
	EXPECT_EQ(10ULL, c[1].group);
	EXPECT_EQ(0, c[0].status);
	EXPECT_LE(c[0].end_ns, c[1].end_ns);
}

/*
 * A background group yields: queued first, with an earlier deadline, it
 * still completes after a group with a deadline and one as soon as
 * possible queued behind it; both of those complete exact and on time.
 */
TEST_F(pf, background_yields)
{
	struct kvtier_completion c[3];
	__u64 now = now_ns();
	int i;

	ASSERT_EQ(0, queue_blocker(self->pfd));
	ASSERT_EQ(0, prefetch(self->pfd, 0, 12, 30, now + 10 * SEC,
			      KVTIER_PREFETCH_BACKGROUND, KVTIER_PRIO_MAX,
			      NULL));
	ASSERT_EQ(0, prefetch(self->pfd, 64, 8, 31, now + 60 * SEC, 0, 0,
			      NULL));
	ASSERT_EQ(0, prefetch(self->pfd, 72, 8, 32, 0, 0, 0, NULL));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, completion_past(self->pfd, &c[i], 60000));
	/* The one as soon as possible orders as its PREFETCH time. */
	EXPECT_EQ(32ULL, c[0].group);
	EXPECT_EQ(31ULL, c[1].group);
	EXPECT_EQ(30ULL, c[2].group);
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(0, c[i].status);
		EXPECT_EQ(c[i].count, c[i].ready);
	}
	EXPECT_EQ(0U, c[1].flags);
	for (i = 64; i < 80; i++)
		EXPECT_EQ(0, get_check(self->pfd, self->buf, i));
}

/* Between background groups, the deadline orders as for the others. */
TEST_F(pf, background_by_deadline)
{
	struct kvtier_completion c[2];
	__u64 now = now_ns();

	ASSERT_EQ(0, queue_blocker(self->pfd));
	ASSERT_EQ(0, prefetch(self->pfd, 0, 16, 40, now + 60 * SEC,
			      KVTIER_PREFETCH_BACKGROUND, 0, NULL));
	ASSERT_EQ(0, prefetch(self->pfd, 64, 8, 41, now + 30 * SEC,
			      KVTIER_PREFETCH_BACKGROUND, 0, NULL));
	ASSERT_EQ(0, completion_past(self->pfd, &c[0], 60000));
	ASSERT_EQ(0, completion_past(self->pfd, &c[1], 60000));
	EXPECT_EQ(41ULL, c[0].group);
	EXPECT_EQ(40ULL, c[1].group);
	EXPECT_EQ(0, c[0].status);
	EXPECT_EQ(0, c[1].status);
}

/* Equal deadlines: the higher priority is staged first. */
TEST_F(pf, priority_breaks_ties)
{
	struct kvtier_completion c[2];
	__u64 deadline = now_ns() + 60 * SEC;

	ASSERT_EQ(0, queue_blocker(self->pfd));
	ASSERT_EQ(0, prefetch(self->pfd, 0, 64, 20, deadline, 0, 0, NULL));
	ASSERT_EQ(0, prefetch(self->pfd, 64, 8, 21, deadline, 0,
			      KVTIER_PRIO_MAX, NULL));
	ASSERT_EQ(0, completion_past(self->pfd, &c[0], 60000));
	ASSERT_EQ(0, completion_past(self->pfd, &c[1], 60000));
	EXPECT_EQ(21ULL, c[0].group);
	EXPECT_EQ(0, c[0].status);
	EXPECT_EQ(20ULL, c[1].group);
}

/* CANCEL stops a group's pending reads and reports -ECANCELED. */
TEST_F(pf, cancel_stops_pending)
{
	struct kvtier_completion c;
	struct kvtier_cancel cn;
	long long issued;

	ASSERT_EQ(0, set_param("prefetch_qd", 1));
	ASSERT_EQ(0, prefetch(self->pfd, 0, 96, 30, now_ns() + 60 * SEC, 0,
			      0, NULL));
	memset(&cn, 0, sizeof(cn));
	cn.group = 30;
	ASSERT_EQ(0, kst_ioctl(self->pfd, KVTIER_IOC_CANCEL, &cn));
	EXPECT_EQ(1U, cn.cancelled);
	ASSERT_EQ(0, completion(self->pfd, &c, 10000));
	EXPECT_EQ(30ULL, c.group);
	EXPECT_EQ(-ECANCELED, c.status);
	EXPECT_GT(96U, c.ready);
	issued = pf_stat("issued");
	usleep(300000);
	EXPECT_EQ(issued, pf_stat("issued"));
	EXPECT_EQ(-ENOENT, kst_ioctl(self->pfd, KVTIER_IOC_CANCEL, &cn));
	EXPECT_EQ(0, pf_stat("live"));
}

/* CANCEL of every group of the fd. */
TEST_F(pf, cancel_all)
{
	struct kvtier_completion c;
	struct kvtier_cancel cn;
	int i;

	ASSERT_EQ(0, set_param("prefetch_qd", 1));
	ASSERT_EQ(0, prefetch(self->pfd, 0, 48, 40, 0, 0, 0, NULL));
	ASSERT_EQ(0, prefetch(self->pfd, 48, 48, 41, 0, 0, 0, NULL));
	memset(&cn, 0, sizeof(cn));
	cn.flags = KVTIER_CANCEL_ALL;
	ASSERT_EQ(0, kst_ioctl(self->pfd, KVTIER_IOC_CANCEL, &cn));
	EXPECT_EQ(2U, cn.cancelled);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, completion(self->pfd, &c, 10000));
		EXPECT_EQ(-ECANCELED, c.status);
	}
}

/*
 * Cancel-at-deadline: a group not staged by then ends with -ETIME.
 *
 * With prefetch_qd 1 the group waits behind a blocker queued first (every
 * block only on NVMe, no deadline, so it orders as now): 128 reads, far
 * longer than the group's deadline. The deadline starts at 2 ms; when it
 * has passed before the PREFETCH got in (the documented -ETIME at
 * submission, nothing queued) it doubles and the PREFETCH is sent again,
 * so every run reaches the expiry of a queued group.
 */
TEST_F(pf, cancel_late_expires)
{
	long long expired = pf_stat("expired");
	__u64 wait_ns, deadline = 0;
	struct kvtier_completion c;
	int i, ret = -ETIME;

	ASSERT_EQ(0, set_param("prefetch_qd", 1));
	ASSERT_EQ(0, prefetch(self->pfd, 0, 128, 49, 0, 0, 0, NULL));
	for (wait_ns = 2000000; ret == -ETIME && wait_ns <= SEC; wait_ns *= 2) {
		deadline = now_ns() + wait_ns;
		ret = prefetch(self->pfd, 0, 96, 50, deadline,
			       KVTIER_PREFETCH_CANCEL_LATE, 0, NULL);
		if (ret == -ETIME) {
			TH_LOG("%llu ms passed before the PREFETCH: -ETIME",
			       (unsigned long long)(wait_ns / 1000000));
			ASSERT_EQ(expired, pf_stat("expired"));
		}
	}
	ASSERT_EQ(0, ret);
	/* The blocker's record may come first. */
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, completion(self->pfd, &c, 60000));
		if (c.group == 50)
			break;
	}
	ASSERT_EQ(50ULL, c.group);
	EXPECT_EQ(-ETIME, c.status);
	EXPECT_GT(96U, c.ready);
	EXPECT_LE(deadline, c.end_ns);
	EXPECT_EQ(expired + 1, pf_stat("expired"));
}

/*
 * Best effort (the default): a late group keeps going and says so. Its 24
 * blocks are all held (prefetch_protect_pct 90 of 32), so that the count
 * of blocks ready at the end is exact (past_the_bound_outlasts_older_dirty_blocks
 * has blocks past the bound).
 */
TEST_F(pf, best_effort_late)
{
	struct kvtier_completion c;
	long long late = pf_stat("late");

	ASSERT_EQ(0, set_param("prefetch_protect_pct", 90));
	ASSERT_EQ(0, set_param("prefetch_qd", 1));
	ASSERT_EQ(0, prefetch(self->pfd, 0, 24, 60, now_ns() + 1000000, 0, 0,
			      NULL));
	ASSERT_EQ(0, completion(self->pfd, &c, 30000));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ((__u32)KVTIER_COMPLETION_LATE, c.flags);
	EXPECT_EQ(24U, c.ready);
	EXPECT_EQ(late + 1, pf_stat("late"));
}

/*
 * A group larger than the holds' bound (prefetch_protect_pct 50 of 32
 * blocks: 16) loads the rest unheld, marked read ahead: until used they
 * age with the blocks that have no NVMe copy, not on the clean list that
 * eviction takes first. Here DRAM holds 8 blocks PUT before the group
 * (dirty) besides it: 8 more PUT after it write and evict those, where
 * clean-first eviction took the 8 read ahead (a read wasted for each).
 */
TEST_F(pf, past_the_bound_outlasts_older_dirty_blocks)
{
	long long unprotected = pf_stat("unprotected");
	struct kvtier_completion c;

	ASSERT_EQ(0, set_param("prefetch_protect_pct", 50));
	ASSERT_EQ(0, set_param("prefetch_qd", 1));
	ASSERT_EQ(0, put_keys(self->pfd, self->buf, NPUT, 8));
	ASSERT_EQ(24U, count_tier(self->pfd, 0, 24, KVTIER_TIER_NVME));
	ASSERT_EQ(0, prefetch(self->pfd, 0, 24, 61, 0, 0, 0, NULL));
	ASSERT_EQ(0, completion(self->pfd, &c, 30000));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(24U, c.ready);
	EXPECT_EQ(unprotected + 8, pf_stat("unprotected"));
	/* DRAM: the group's 24, and the 8 PUT before it. */
	ASSERT_EQ(8U, count_tier(self->pfd, NPUT, 8, KVTIER_TIER_DRAM));
	ASSERT_EQ(0, put_keys(self->pfd, self->buf, NPUT + 8, 8));
	EXPECT_EQ(24U, count_tier(self->pfd, 0, 24, KVTIER_TIER_DRAM));
	EXPECT_EQ(0U, count_tier(self->pfd, NPUT, 8, KVTIER_TIER_DRAM));
	EXPECT_EQ(8U, count_tier(self->pfd, NPUT + 8, 8, KVTIER_TIER_DRAM));
}

/* Closing the fd cancels its groups. */
TEST_F(pf, close_cancels)
{
	long long cancelled = pf_stat("cancelled");
	int fd;

	ASSERT_EQ(0, set_param("prefetch_qd", 1));
	fd = kst_pool_open(self->ctl, self->name, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, prefetch(fd, 0, 96, 70, 0, 0, 0, NULL));
	EXPECT_EQ(1, pf_stat("live"));
	close(fd);
	EXPECT_EQ(cancelled + 1, pf_stat("cancelled"));
	EXPECT_EQ(0, pf_stat("live"));
}

/*
 * CANCEL against PREFETCHes that fail: a PREFETCH whose hints cannot be
 * written back (a read-only array) takes its group off the fd's list and
 * frees it while a CANCEL of the same fd may be walking that list. Two
 * threads PREFETCH so, one CANCELs all, for two seconds; each call says
 * what it should, and the fd and the pool work on.
 */
struct pf_race {
	int pfd;
	struct kvtier_hint *ro;		/* hints, read-only */
	__u64 group;
	volatile bool stop;
	long calls, bad;
};

static void *pf_race_prefetch(void *arg)
{
	struct pf_race *r = arg;
	struct kvtier_prefetch pf;

	while (!r->stop) {
		pf_init(&pf, r->ro, 8, __atomic_add_fetch(&r->group, 1,
							 __ATOMIC_RELAXED),
			0, 0);
		if (kst_ioctl(r->pfd, KVTIER_IOC_PREFETCH, &pf) != -EFAULT)
			__atomic_add_fetch(&r->bad, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&r->calls, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

TEST_F(pf, cancel_races_failing_prefetch)
{
	struct pf_race r = { .pfd = self->pfd, .group = 1000 };
	size_t len = 8 * sizeof(struct kvtier_hint);
	struct kvtier_completion c;
	struct kvtier_cancel cn;
	long cancels = 0, bad = 0;
	pthread_t th[2];
	__u64 end;
	int i;

	r.ro = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, r.ro);
	hint_keys(r.ro, NPUT - 8, 8);		/* in DRAM: nothing to read */
	ASSERT_EQ(0, mprotect(r.ro, len, PROT_READ));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, pthread_create(&th[i], NULL, pf_race_prefetch,
					    &r));
	}
	end = now_ns() + 2000000000ULL;
	while (now_ns() < end) {
		memset(&cn, 0, sizeof(cn));
		cn.flags = KVTIER_CANCEL_ALL;
		if (kst_ioctl(self->pfd, KVTIER_IOC_CANCEL, &cn) ||
		    cn.cancelled)
			bad++;
		cancels++;
	}
	r.stop = true;
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	TH_LOG("%ld failing PREFETCHes, %ld CANCELs", r.calls, cancels);
	EXPECT_EQ(0, r.bad);
	EXPECT_EQ(0, bad);
	EXPECT_LT(0, r.calls);
	munmap(r.ro, len);
	/* Nothing is left behind; the fd takes a group and ends it. */
	EXPECT_EQ(0, pf_stat("live"));
	ASSERT_EQ(0, prefetch(self->pfd, NPUT - 4, 4, 7, 0, 0, 0, NULL));
	ASSERT_EQ(0, completion(self->pfd, &c, 10000));
	EXPECT_EQ(7ULL, c.group);
	EXPECT_EQ(0, c.status);
	ASSERT_EQ(0, get_check(self->pfd, self->buf, 0));
}

/* Prefetched blocks stay in DRAM until used, then age like any other. */
TEST_F(pf, protection_until_used)
{
	struct kvtier_completion c;

	ASSERT_EQ(0, prefetch(self->pfd, 0, 8, 80, 0, 0, 0, NULL));
	ASSERT_EQ(0, completion(self->pfd, &c, 20000));
	ASSERT_EQ(8U, c.ready);
	/* Two DRAMs' worth of new blocks: everything else is pushed out. */
	ASSERT_EQ(0, put_used_keys(self->pfd, self->buf, 1000, 2 * DRAM));
	EXPECT_EQ(8U, count_tier(self->pfd, 0, 8, KVTIER_TIER_DRAM));
	EXPECT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 1000));
	/* Used: the protection ends. */
	for (int i = 0; i < 8; i++)
		ASSERT_EQ(0, get_check(self->pfd, self->buf, i));
	ASSERT_EQ(0, put_used_keys(self->pfd, self->buf, 2000, 2 * DRAM));
	EXPECT_EQ(0U, count_tier(self->pfd, 0, 8, KVTIER_TIER_DRAM));
}

/* Protection is bounded: prefetch_protect_pct of the pool's DRAM. */
TEST_F(pf, protection_bounded)
{
	long long unprot = pf_stat("unprotected");
	struct kvtier_completion c;

	ASSERT_EQ(0, set_param("prefetch_protect_pct", 25));
	ASSERT_EQ(0, prefetch(self->pfd, 0, 24, 90, 0, 0, 0, NULL));
	ASSERT_EQ(0, completion(self->pfd, &c, 30000));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(unprot + 24 - DRAM / 4, pf_stat("unprotected"));
	ASSERT_EQ(0, put_used_keys(self->pfd, self->buf, 1000, 2 * DRAM));
	EXPECT_EQ(DRAM / 4, count_tier(self->pfd, 0, 24, KVTIER_TIER_DRAM));
}

/* More hints than DRAM holds: the group ends, counts say what happened. */
TEST_F(pf, more_hints_than_dram)
{
	struct kvtier_completion c;
	__u32 i;

	ASSERT_EQ(0, prefetch(self->pfd, 0, 96, 100, 0, 0, 0, NULL));
	ASSERT_EQ(0, completion(self->pfd, &c, 60000));
	TH_LOG("96 hints, DRAM %u: status %d, ready prefix %u", DRAM,
	       c.status, c.ready);
	EXPECT_TRUE(c.status == 0 || c.status == -ENOSPC);
	EXPECT_GE(DRAM, c.ready);
	EXPECT_LE(DRAM / 2, c.ready);
	for (i = 0; i < NPUT; i++)
		ASSERT_EQ(0, get_check(self->pfd, self->buf, i));
}

/* Completions make the fd readable (epoll) and signal an eventfd. */
TEST_F(pf, poll_and_eventfd)
{
	struct kvtier_eventfd ev;
	struct kvtier_completion c;
	struct epoll_event e;
	int ep, efd;
	__u64 cnt = 0;

	efd = eventfd(0, EFD_CLOEXEC);
	ASSERT_LE(0, efd);
	memset(&ev, 0, sizeof(ev));
	ev.fd = efd;
	ASSERT_EQ(0, kst_ioctl(self->pfd, KVTIER_IOC_EVENTFD, &ev));
	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	e.events = EPOLLIN;
	e.data.u64 = 42;
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, self->pfd, &e));
	ASSERT_EQ(0, epoll_wait(ep, &e, 1, 0));
	ASSERT_EQ(0, prefetch(self->pfd, 0, 4, 110, 0, 0, 0, NULL));
	ASSERT_EQ(1, epoll_wait(ep, &e, 1, 20000));
	EXPECT_EQ(42ULL, e.data.u64);
	EXPECT_NE(0U, e.events & (__u32)EPOLLIN);
	ASSERT_EQ((ssize_t)sizeof(cnt), read(efd, &cnt, sizeof(cnt)));
	EXPECT_EQ(1ULL, cnt);
	ASSERT_EQ((ssize_t)sizeof(c), read(self->pfd, &c, sizeof(c)));
	EXPECT_EQ(110ULL, c.group);
	ASSERT_EQ(0, epoll_wait(ep, &e, 1, 0));
	close(ep);
	close(efd);
}

/* Group ids are unique per fd; groups and unread records are bounded. */
TEST_F(pf, group_limits)
{
	struct kvtier_completion c[64];
	struct kvtier_prefetch pf;
	struct kvtier_hint h;
	__u32 i, got = 0;
	long long hints;
	int n;

	ASSERT_EQ(0, set_param("prefetch_qd", 1));
	ASSERT_EQ(0, prefetch(self->pfd, 0, 96, 1, 0, 0, 0, NULL));
	/* A PREFETCH that fails writes nothing back and counts nothing. */
	hints = pf_stat("hints");
	hint_keys(&h, 0, 1);
	h.status = 12345;
	pf_init(&pf, &h, 1, 1, 0, 0);
	EXPECT_EQ(-EEXIST, kst_ioctl(self->pfd, KVTIER_IOC_PREFETCH, &pf));
	EXPECT_EQ(12345, h.status);
	EXPECT_EQ(hints, pf_stat("hints"));
	/* Resident blocks: groups that end at once, records left unread. */
	for (i = 2; i <= KVTIER_PREFETCH_GROUPS_MAX; i++)
		ASSERT_EQ(0, prefetch(self->pfd, NPUT - 1, 1, i, 0, 0, 0,
				      NULL));
	EXPECT_EQ(-EAGAIN, prefetch(self->pfd, NPUT - 1, 1, 5000, 0, 0, 0,
				    NULL));
	ASSERT_EQ(0, fcntl(self->pfd, F_SETFL, O_NONBLOCK));
	while (got < KVTIER_PREFETCH_GROUPS_MAX - 1) {
		n = read(self->pfd, c, sizeof(c));
		if (n < 0 && errno == EAGAIN) {
			usleep(10000);
			continue;
		}
		ASSERT_LT(0, n);
		ASSERT_EQ(0, n % (int)sizeof(c[0]));
		got += n / sizeof(c[0]);
	}
	EXPECT_EQ(0, prefetch(self->pfd, NPUT - 1, 1, 5000, 0, 0, 0, NULL));
}

/* A read-only fd may prefetch. */
TEST_F(pf, rdonly_fd_prefetches)
{
	struct kvtier_completion c;
	int fd = kst_pool_open(self->ctl, self->name, KVTIER_POOL_RDONLY);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, prefetch(fd, 0, 4, 120, 0, 0, 0, NULL));
	ASSERT_EQ(0, completion(fd, &c, 20000));
	EXPECT_EQ(4U, c.ready);
	close(fd);
}

/* ---- io_uring ----------------------------------------------------------- */

static struct io_uring_sqe *uring_cmd(struct io_uring *ring, int fd,
				       __u32 op, void *arg, __u64 data)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct kvtier_uring_cmd *c;

	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
	sqe->cmd_op = op;
	c = (struct kvtier_uring_cmd *)sqe->cmd;
	memset(c, 0, sizeof(*c));
	c->arg = (__u64)(uintptr_t)arg;
	io_uring_sqe_set_data64(sqe, data);
	return sqe;
}

/* Submit what is queued and reap @n completions into res[user_data]. */
static int uring_run(struct io_uring *ring, unsigned int n, int *res)
{
	struct io_uring_cqe *cqe;
	unsigned int i;
	int ret;

	ret = io_uring_submit(ring);
	if (ret < 0)
		return ret;
	for (i = 0; i < n; i++) {
		ret = io_uring_wait_cqe(ring, &cqe);
		if (ret)
			return ret;
		res[io_uring_cqe_get_data64(cqe)] = cqe->res;
		io_uring_cqe_seen(ring, cqe);
	}
	return 0;
}

static void batch_init(struct kvtier_batch *b, struct kvtier_block *e,
		       __u32 n, __u32 flags)
{
	memset(b, 0, sizeof(*b));
	b->blocks = (__u64)(uintptr_t)e;
	b->count = n;
	b->flags = flags;
}

/* PUT, GET and LOOKUP through the ring: same results as the ioctls. */
TEST_F(pf, uring_put_get_lookup)
{
	struct kvtier_block pe[4], ge[4], le[4];
	struct kvtier_batch pb, gb, lb;
	struct io_uring ring;
	char *in = kst_alloc(4 * BS), *out = kst_alloc(4 * BS);
	int res[3] = { 1, 1, 1 };
	__u32 i;

	ASSERT_NE(NULL, in);
	ASSERT_NE(NULL, out);
	ASSERT_EQ(0, io_uring_queue_init(8, &ring, 0));
	for (i = 0; i < 4; i++) {
		kst_fill(in + i * BS, BS, K0, 5000 + i, 1);
		kst_blk(&pe[i], K0, 5000 + i, in + i * BS);
		kst_blk(&ge[i], K0, 5000 + i, out + i * BS);
		kst_blk(&le[i], K0, 5000 + i, NULL);
	}
	batch_init(&pb, pe, 4, 0);
	uring_cmd(&ring, self->pfd, KVTIER_IOC_PUT, &pb, 0);
	ASSERT_EQ(0, uring_run(&ring, 1, res));
	ASSERT_EQ(0, res[0]);
	EXPECT_EQ(4U, pb.done);

	batch_init(&gb, ge, 4, 0);
	batch_init(&lb, le, 4, 0);
	uring_cmd(&ring, self->pfd, KVTIER_IOC_GET, &gb, 1);
	uring_cmd(&ring, self->pfd, KVTIER_IOC_LOOKUP, &lb, 2);
	ASSERT_EQ(0, uring_run(&ring, 2, res));
	EXPECT_EQ(0, res[1]);
	EXPECT_EQ(0, res[2]);
	EXPECT_EQ(4U, gb.done);
	EXPECT_EQ(4U, lb.done);
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(0, ge[i].status);
		EXPECT_EQ(-1, kst_check_gen(out + i * BS, BS, K0, 5000 + i, 1));
		EXPECT_EQ((__u32)KVTIER_TIER_DRAM, le[i].tier);
	}
	/* The same errors as the ioctl: a PUT of a key present. */
	batch_init(&pb, pe, 4, 0);
	uring_cmd(&ring, self->pfd, KVTIER_IOC_PUT, &pb, 0);
	ASSERT_EQ(0, uring_run(&ring, 1, res));
	EXPECT_EQ(0, res[0]);
	EXPECT_EQ(0U, pb.done);
	EXPECT_EQ(-EEXIST, pe[0].status);
	io_uring_queue_exit(&ring);
	kst_free(in, 4 * BS);
	kst_free(out, 4 * BS);
}

/* PREFETCH through the ring; its completion on the fd as usual. */
TEST_F(pf, uring_prefetch)
{
	struct kvtier_completion c;
	struct kvtier_prefetch pf;
	struct kvtier_hint h[8];
	struct io_uring ring;
	int res[1] = { 1 };

	ASSERT_EQ(0, io_uring_queue_init(4, &ring, 0));
	hint_keys(h, 0, 8);
	pf_init(&pf, h, 8, 130, 0, 0);
	uring_cmd(&ring, self->pfd, KVTIER_IOC_PREFETCH, &pf, 0);
	ASSERT_EQ(0, uring_run(&ring, 1, res));
	ASSERT_EQ(0, res[0]);
	EXPECT_EQ(8U, pf.queued);
	ASSERT_EQ(0, completion(self->pfd, &c, 20000));
	EXPECT_EQ(130ULL, c.group);
	EXPECT_EQ(8U, c.ready);
	/* A bad one: the ioctl's errno in the CQE. */
	pf_init(&pf, h, 8, 0, 0, 0);
	uring_cmd(&ring, self->pfd, KVTIER_IOC_PREFETCH, &pf, 0);
	ASSERT_EQ(0, uring_run(&ring, 1, res));
	EXPECT_EQ(-EINVAL, res[0]);
	io_uring_queue_exit(&ring);
}

/* Operations not taken, reserved fields, bad pointers, read-only fds. */
TEST_F(pf, uring_bad_commands)
{
	struct kvtier_block e;
	struct kvtier_batch b;
	struct kvtier_pool_stat st;
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	int res[6], ro;

	memset(res, 1, sizeof(res));
	ro = kst_pool_open(self->ctl, self->name, KVTIER_POOL_RDONLY);
	ASSERT_LE(0, ro);
	ASSERT_EQ(0, io_uring_queue_init(8, &ring, 0));
	kst_blk(&e, K0, 0, NULL);
	batch_init(&b, &e, 1, 0);
	memset(&st, 0, sizeof(st));
	uring_cmd(&ring, self->pfd, KVTIER_IOC_DROP, &b, 0);
	uring_cmd(&ring, self->pfd, KVTIER_IOC_STAT, &st, 1);
	uring_cmd(&ring, self->ctl, KVTIER_IOC_LOOKUP, &b, 2);
	uring_cmd(&ring, self->pfd, KVTIER_IOC_LOOKUP,
		  kst_unmapped_addr(), 3);
	sqe = uring_cmd(&ring, self->pfd, KVTIER_IOC_LOOKUP, &b, 4);
	((struct kvtier_uring_cmd *)sqe->cmd)->reserved = 1;
	uring_cmd(&ring, ro, KVTIER_IOC_PUT, &b, 5);
	ASSERT_EQ(0, uring_run(&ring, 6, res));
	EXPECT_EQ(-EOPNOTSUPP, res[0]);
	EXPECT_EQ(-EOPNOTSUPP, res[1]);
	EXPECT_EQ(-EOPNOTSUPP, res[2]);
	EXPECT_EQ(-EFAULT, res[3]);
	EXPECT_EQ(-EINVAL, res[4]);
	EXPECT_EQ(-EBADF, res[5]);
	io_uring_queue_exit(&ring);
	close(ro);
}

#define NFLIGHT	128

/* Many commands in flight at once, blocks on NVMe and in DRAM. */
TEST_F(pf, uring_many_in_flight)
{
	static struct kvtier_block e[NFLIGHT];
	static struct kvtier_batch b[NFLIGHT];
	static int res[NFLIGHT];
	char *out = kst_alloc((size_t)NFLIGHT * BS);
	struct kvtier_pool_stat st;
	struct io_uring ring;
	__u32 i;

	ASSERT_NE(NULL, out);
	/*
	 * The destination is touched first, as a runtime's staging buffers
	 * are: what this case loads is the module (128 GETs in io_uring's
	 * workers at once), not the page allocator. With it untouched, the
	 * workers' faults on its transparent huge pages (a 2 MiB page zeroed
	 * per fault, 32 workers per page at once) stalled a vCPU of the TCG
	 * guest for minutes inside the page allocator, in CI-like runs with
	 * another VM beside it; GETs into untouched memory are the other
	 * cases' business (api, sg, pf.uring_put_get_lookup).
	 */
	memset(out, 0, (size_t)NFLIGHT * BS);
	ASSERT_EQ(0, io_uring_queue_init(NFLIGHT, &ring, 0));
	for (i = 0; i < NFLIGHT; i++) {
		kst_blk(&e[i], K0, i % NPUT, out + (size_t)i * BS);
		batch_init(&b[i], &e[i], 1, 0);
		uring_cmd(&ring, self->pfd, KVTIER_IOC_GET, &b[i], i);
		res[i] = 1;
	}
	ASSERT_EQ(0, uring_run(&ring, NFLIGHT, res));
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	TH_LOG("%u GETs: %llu reads from NVMe, %llu evictions",
	       NFLIGHT, (unsigned long long)st.promotions,
	       (unsigned long long)st.evictions);
	for (i = 0; i < NFLIGHT; i++) {
		ASSERT_EQ(0, res[i]);
		ASSERT_EQ(0, e[i].status);
		ASSERT_EQ(-1, kst_check_gen(out + (size_t)i * BS, BS, K0,
					    i % NPUT, 1));
	}
	io_uring_queue_exit(&ring);
	kst_free(out, (size_t)NFLIGHT * BS);
}

/* A process that exits (or is killed) with commands in flight. */
TEST_F(pf, uring_exit_in_flight)
{
	struct kvtier_pool_stat st;
	int sig;

	for (sig = 0; sig <= SIGKILL; sig += SIGKILL) {
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (!pid) {
			static struct kvtier_block e[64];
			static struct kvtier_batch b[64];
			char *out = kst_alloc((size_t)64 * BS);
			struct io_uring ring;
			int i;

			if (!out || io_uring_queue_init(64, &ring, 0))
				_exit(1);
			memset(out, 0, (size_t)64 * BS);  /* see above */
			for (i = 0; i < 64; i++) {
				kst_blk(&e[i], K0, i, out + (size_t)i * BS);
				batch_init(&b[i], &e[i], 1, 0);
				uring_cmd(&ring, self->pfd, KVTIER_IOC_GET,
					  &b[i], i);
			}
			io_uring_submit(&ring);
			if (sig)
				pause();
			_exit(0);
		}
		if (sig) {
			usleep(20000);
			kill(pid, sig);
		}
		ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	}
	/* Everything still works and reads exact. */
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	EXPECT_EQ(0ULL, st.pinned);
	for (int i = 0; i < 64; i++)
		ASSERT_EQ(0, get_check(self->pfd, self->buf, i));
}

TEST_HARNESS_MAIN
