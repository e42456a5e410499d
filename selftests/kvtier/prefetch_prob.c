// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier selftests: probable prefetch hints (KVTIER_F_HINT_PROB), the
 * chance a block is used carried with its hint, and what the engine does
 * with it (kmod/policy.c, kvt_policy_hint()).
 *
 * The blocks come from a weight pool over a file (KVTIER_F_WEIGHTS): each
 * one is read from the file when it is needed, so whether the engine read
 * a block shows in LOOKUP's tier, and no NVMe is needed.
 *
 *  - order: a group's sure hints first, then the likeliest; the
 *    completion's ready prefix counts in that order;
 *  - late: past the deadline, hints below one half are left unread
 *    (skipped), sure and likely ones read; the group ends with status 0;
 *  - floor: a hint of 1/65536 is left unread with the engine idle, one of
 *    1/16 read;
 *  - resident: a probable block in DRAM already is taken, whatever its
 *    probability;
 *  - hold: a block of one half or more is protected until used; one below
 *    while the pool's holds are few, not when they near their bound, and
 *    GETs of other blocks push it out; a probable hold ends at the
 *    deadline;
 *  - not_negotiated: KVTIER_HINT_PROB without the feature, -EOPNOTSUPP.
 */
#include "prefetch_test.h"

#define FKEY		0x70726f6268696e74ULL	/* "probhint" */
#define BS		(64 * KST_KIB)
#define CAP		32U
#define DRAM		8U
#define SURE		UINT32_MAX	/* pp_hint(): no KVTIER_HINT_PROB */
#define ONE		KVTIER_PROB_ONE

FIXTURE(prob) {
	int ctl, pfd;
	char name[KVTIER_NAME_MAX];
	char path[64];
	char *buf;
	char *data;	/* the file's bytes */
};

/* A file of CAP blocks at @path, its bytes kept in @buf; 0 or -errno. */
static int pp_write_file(const char *path, char *buf)
{
	int fd, ret = 0;

	kst_fill(buf, CAP * BS, FKEY, 0, 1);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		ret = -errno;
	else if (pwrite(fd, buf, CAP * BS, 0) != (ssize_t)(CAP * BS))
		ret = -EIO;
	if (fd >= 0)
		close(fd);
	return ret;
}

FIXTURE_SETUP(prob)
{
	struct kvtier_pool_create c;
	int fd;

	kst_setup(_metadata);
	self->ctl = -1;
	self->pfd = -1;
	self->buf = NULL;
	self->data = NULL;
	self->path[0] = '\0';
	if (!kst_supported(KVTIER_F_HINT_PROB) ||
	    !kst_supported(KVTIER_F_WEIGHTS))
		KST_SETUP_SKIP("kvtier without KVTIER_F_HINT_PROB");
	snprintf(self->path, sizeof(self->path), "/tmp/kvtier-prob.%d",
		 getpid());
	self->data = kst_alloc(CAP * BS);
	ASSERT_NE(NULL, self->data);
	ASSERT_EQ(0, pp_write_file(self->path, self->data));
	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	kst_name(self->name, "prob");
	fd = open(self->path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	kst_create_init(&c, self->name, BS, CAP, DRAM);
	c.flags = KVTIER_POOL_WEIGHTS;
	c.file_fd = fd;
	c.file_key = FKEY;
	self->pfd = kst_create(self->ctl, &c);
	close(fd);
	ASSERT_LE(0, self->pfd);
	self->buf = kst_alloc(BS);
	ASSERT_NE(NULL, self->buf);
}

FIXTURE_TEARDOWN(prob)
{
	if (self->buf)
		kst_free(self->buf, BS);
	if (self->data)
		kst_free(self->data, CAP * BS);
	if (self->pfd >= 0)
		close(self->pfd);
	if (self->ctl >= 0) {
		kst_pool_destroy(self->ctl, self->name);
		close(self->ctl);
	}
	if (self->path[0])
		unlink(self->path);
}

static void pp_hint(struct kvtier_hint *h, __u32 addr, __u32 prob)
{
	memset(h, 0, sizeof(*h));
	h->addr = addr;
	if (prob != SURE) {
		h->flags = KVTIER_HINT_PROB;
		h->prob = prob;
	}
}

/* PREFETCH @n hints by address as group @group, and its completion. */
static int pp_run(int pfd, struct kvtier_hint *h, __u32 n, __u64 group,
		  __u64 deadline, struct kvtier_completion *c)
{
	struct kvtier_prefetch pf;
	int ret;

	pf_init(&pf, h, n, group, deadline, KVTIER_PREFETCH_ADDR);
	ret = kst_ioctl(pfd, KVTIER_IOC_PREFETCH, &pf);
	return ret ? ret : completion(pfd, c, 60000);
}

/* The tier LOOKUP reports for block @a, without a use. */
static int pp_tier(int pfd, __u32 a)
{
	struct kvtier_block b;
	int ret = kst_lookup1(pfd, FKEY, a, &b);

	return ret ? ret : (int)b.tier;
}

/* GET block @a into self->buf, and check it against the file's bytes. */
static int pp_get(FIXTURE_DATA(prob) *self, __u32 a)
{
	int ret = kst_get1(self->pfd, FKEY, a, self->buf, NULL);

	if (ret)
		return ret;
	return memcmp(self->buf, self->data + (size_t)a * BS, BS) ? -EBADMSG : 0;
}

/*
 * The likeliest after the sure: with the unlikely hint first in the
 * caller's order and left unread, the ready prefix still counts the two
 * read.
 */
TEST_F(prob, order)
{
	long long skipped = pf_stat("skipped");
	struct kvtier_completion c;
	struct kvtier_hint h[3];

	pp_hint(&h[0], 0, 1);
	pp_hint(&h[1], 1, SURE);
	pp_hint(&h[2], 2, ONE / 4 * 3);
	ASSERT_EQ(0, pp_run(self->pfd, h, 3, 1, 0, &c));
	ASSERT_EQ(0, c.status);
	ASSERT_EQ(3U, c.count);
	ASSERT_EQ(2U, c.ready);
	ASSERT_EQ(KVTIER_TIER_NVME, pp_tier(self->pfd, 0));
	ASSERT_EQ(KVTIER_TIER_DRAM, pp_tier(self->pfd, 1));
	ASSERT_EQ(KVTIER_TIER_DRAM, pp_tier(self->pfd, 2));
	ASSERT_EQ(skipped + 1, pf_stat("skipped"));
	ASSERT_EQ(0, pp_get(self, 2));
}

/* Past its deadline a group reads its sure and likely blocks only. */
TEST_F(prob, late)
{
	long long skipped = pf_stat("skipped");
	struct kvtier_completion c;
	struct kvtier_hint h[3];

	pp_hint(&h[0], 10, ONE / 5 * 2);
	pp_hint(&h[1], 11, SURE);
	pp_hint(&h[2], 12, ONE / 2);
	ASSERT_EQ(0, pp_run(self->pfd, h, 3, 2, now_ns() - SEC, &c));
	ASSERT_EQ(0, c.status);
	ASSERT_EQ(KVTIER_COMPLETION_LATE, c.flags & KVTIER_COMPLETION_LATE);
	ASSERT_EQ(2U, c.ready);
	ASSERT_EQ(KVTIER_TIER_NVME, pp_tier(self->pfd, 10));
	ASSERT_EQ(KVTIER_TIER_DRAM, pp_tier(self->pfd, 11));
	ASSERT_EQ(KVTIER_TIER_DRAM, pp_tier(self->pfd, 12));
	ASSERT_EQ(skipped + 1, pf_stat("skipped"));
	/* In time, the same hints are all read. */
	ASSERT_EQ(0, pp_run(self->pfd, h, 3, 3, now_ns() + 60 * SEC, &c));
	ASSERT_EQ(0, c.status);
	ASSERT_EQ(3U, c.ready);
	ASSERT_EQ(skipped + 1, pf_stat("skipped"));
}

/* The floor with no read in flight: 1/32. */
TEST_F(prob, floor)
{
	long long skipped = pf_stat("skipped");
	struct kvtier_completion c;
	struct kvtier_hint h;

	pp_hint(&h, 5, 1);
	ASSERT_EQ(0, pp_run(self->pfd, &h, 1, 4, 0, &c));
	ASSERT_EQ(0, c.status);
	ASSERT_EQ(0U, c.ready);
	ASSERT_EQ(KVTIER_TIER_NVME, pp_tier(self->pfd, 5));
	ASSERT_EQ(skipped + 1, pf_stat("skipped"));
	pp_hint(&h, 6, ONE / 16);
	ASSERT_EQ(0, pp_run(self->pfd, &h, 1, 5, 0, &c));
	ASSERT_EQ(0, c.status);
	ASSERT_EQ(1U, c.ready);
	ASSERT_EQ(KVTIER_TIER_DRAM, pp_tier(self->pfd, 6));
	ASSERT_EQ(skipped + 1, pf_stat("skipped"));
	ASSERT_EQ(0, pp_get(self, 6));
}

/* A block in DRAM is taken, however unlikely. */
TEST_F(prob, resident)
{
	long long skipped = pf_stat("skipped");
	struct kvtier_completion c;
	struct kvtier_hint h;

	ASSERT_EQ(0, pp_get(self, 7));
	pp_hint(&h, 7, 0);
	ASSERT_EQ(0, pp_run(self->pfd, &h, 1, 6, 0, &c));
	ASSERT_EQ(0, c.status);
	ASSERT_EQ(1U, c.ready);
	ASSERT_EQ(skipped, pf_stat("skipped"));
}

/*
 * @pre blocks prefetched sure (held, of a bound of DRAM / 2), then block 20
 * with @prob, then GETs of others until DRAM is full and one more: held,
 * block 20 stays; else it goes first (seen once, unused).
 */
static void pp_hold(struct __test_metadata *_metadata,
		    FIXTURE_DATA(prob) *self, __u32 pre, __u32 prob, int tier)
{
	struct kvtier_completion c;
	struct kvtier_hint h[DRAM];
	__u32 i;

	for (i = 0; i < pre; i++)
		pp_hint(&h[i], 24 + i, SURE);
	if (pre) {
		ASSERT_EQ(0, pp_run(self->pfd, h, pre, 9, 0, &c));
		ASSERT_EQ(pre, c.ready);
	}
	pp_hint(&h[0], 20, prob);
	ASSERT_EQ(0, pp_run(self->pfd, h, 1, 7, 0, &c));
	ASSERT_EQ(0, c.status);
	ASSERT_EQ(1U, c.ready);
	for (i = 0; i < DRAM - pre; i++)
		ASSERT_EQ(0, pp_get(self, i));
	ASSERT_EQ(tier, pp_tier(self->pfd, 20));
	for (i = 0; i < pre; i++)
		ASSERT_EQ(KVTIER_TIER_DRAM, pp_tier(self->pfd, 24 + i));
}

TEST_F(prob, hold_likely)
{
	pp_hold(_metadata, self, DRAM / 2 - 1, ONE / 2, KVTIER_TIER_DRAM);
}

/* Holds few: the bar is low. */
TEST_F(prob, hold_unlikely_while_few)
{
	pp_hold(_metadata, self, 0, ONE / 10 * 3, KVTIER_TIER_DRAM);
}

/* 3 of 4 holds taken: the bar is at 3/8. */
TEST_F(prob, hold_not_unlikely_near_bound)
{
	pp_hold(_metadata, self, DRAM / 2 - 1, ONE / 10 * 3, KVTIER_TIER_NVME);
}

/* A probable hold ends at the group's deadline: the guess is over. */
TEST_F(prob, hold_ends_at_deadline)
{
	struct kvtier_completion c;
	struct kvtier_hint h;
	__u64 due = now_ns() + SEC;
	__u32 i;

	pp_hint(&h, 20, ONE / 10 * 3);
	ASSERT_EQ(0, pp_run(self->pfd, &h, 1, 7, due, &c));
	ASSERT_EQ(0, c.status);
	ASSERT_EQ(1U, c.ready);
	ASSERT_EQ(0UL, c.flags & KVTIER_COMPLETION_LATE);
	while (now_ns() < due + SEC / 10)
		usleep(10000);
	for (i = 0; i < DRAM; i++)
		ASSERT_EQ(0, pp_get(self, i));
	ASSERT_EQ(KVTIER_TIER_NVME, pp_tier(self->pfd, 20));
}

/* Without the feature the flag is refused, and nothing is queued. */
TEST_F(prob, not_negotiated)
{
	int ctl = kst_ctl_open_with(KST_F_KNOWN & ~KVTIER_F_HINT_PROB), pfd;
	long long hints = pf_stat("hints");
	struct kvtier_completion c;
	struct kvtier_prefetch pf;
	struct kvtier_hint h;

	ASSERT_LE(0, ctl);
	pfd = kst_pool_open(ctl, self->name, 0);
	ASSERT_LE(0, pfd);
	pp_hint(&h, 3, ONE);
	pf_init(&pf, &h, 1, 8, 0, KVTIER_PREFETCH_ADDR);
	ASSERT_EQ(-EOPNOTSUPP, kst_ioctl(pfd, KVTIER_IOC_PREFETCH, &pf));
	ASSERT_EQ(hints, pf_stat("hints"));
	pp_hint(&h, 3, SURE);
	ASSERT_EQ(0, pp_run(pfd, &h, 1, 8, 0, &c));
	ASSERT_EQ(1U, c.ready);
	close(pfd);
	close(ctl);
}

TEST_HARNESS_MAIN
