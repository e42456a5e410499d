// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier scatter-gather PUT and GET (KVTIER_F_SG): an entry names a list of
 * segments; the bytes run through them in list order. Round trips against
 * plain buffers, by ioctl and by io_uring, every rejection with its errno
 * and nothing stored or counted, and the feature's negotiation.
 */
#include <stdbool.h>
#include <liburing.h>

#include "kvtier_test.h"

#define BS	(16 * KST_PAGE)
#define CAP	16
#define NSEG	256
#define GAP	3		/* bytes between segments, left untouched */
#define POISON	0xa7
#define K0	0x5347ULL

FIXTURE(sg) {
	int ctl, pfd;
	char name[KVTIER_NAME_MAX];
	char *ref;		/* a block, plain */
	char *out;		/* a block, plain */
	char *scat;		/* NSEG segments with gaps */
	size_t scat_len;
	struct kvtier_seg segs[NSEG];
};

/* Uneven lengths, 1 .. 400 bytes, the last one what is left of BS. */
static void sg_layout(FIXTURE_DATA(sg) *self)
{
	size_t off = 0, sum = 0;
	int i;

	for (i = 0; i < NSEG; i++) {
		__u64 len = i < NSEG - 1 ? 1 + (i * 7919ULL) % 400 : BS - sum;

		self->segs[i].addr = (__u64)(uintptr_t)(self->scat + off);
		self->segs[i].len = len;
		sum += len;
		off += len + GAP;
	}
}

FIXTURE_SETUP(sg)
{
	kst_setup(_metadata);

	self->pfd = -1;
	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	kst_name(self->name, "sg");
	self->pfd = kst_pool_create(self->ctl, self->name, BS, CAP, CAP);
	ASSERT_LE(0, self->pfd);
	self->ref = kst_alloc(BS);
	self->out = kst_alloc(BS);
	self->scat_len = BS + NSEG * GAP;
	self->scat = kst_alloc(self->scat_len);
	ASSERT_NE(NULL, self->ref);
	ASSERT_NE(NULL, self->out);
	ASSERT_NE(NULL, self->scat);
	kst_fill(self->ref, BS, K0, 1, 7);
	memset(self->scat, POISON, self->scat_len);
	sg_layout(self);
}

FIXTURE_TEARDOWN(sg)
{
	if (self->pfd >= 0)
		close(self->pfd);
	kst_pool_destroy(self->ctl, self->name);
	kst_free(self->ref, BS);
	kst_free(self->out, BS);
	kst_free(self->scat, self->scat_len);
	close(self->ctl);
}

/* Copy a plain block into the segments, or back out of them. */
static void sg_scatter(const struct kvtier_seg *segs, int n, const char *blk)
{
	int i;

	for (i = 0; i < n; i++) {
		memcpy((void *)(uintptr_t)segs[i].addr, blk, segs[i].len);
		blk += segs[i].len;
	}
}

static void sg_gather(const struct kvtier_seg *segs, int n, char *blk)
{
	int i;

	for (i = 0; i < n; i++) {
		memcpy(blk, (void *)(uintptr_t)segs[i].addr, segs[i].len);
		blk += segs[i].len;
	}
}

/* Whether every gap after a segment still holds the poison. */
static bool sg_gaps_intact(FIXTURE_DATA(sg) *self)
{
	int i, j;

	for (i = 0; i < NSEG; i++) {
		const unsigned char *g = (const unsigned char *)(uintptr_t)
			(self->segs[i].addr + self->segs[i].len);

		for (j = 0; j < GAP; j++)
			if (g[j] != POISON)
				return false;
	}
	return true;
}

/* One entry on key (K0, k) with @n segments at @segs; the batch's result. */
static int sg_one(int pfd, unsigned long cmd, __u64 k,
		  const struct kvtier_seg *segs, __u32 n,
		  struct kvtier_block *e)
{
	kst_blk(e, K0, k, segs);
	e->nsegs = n;
	return kst_batch(pfd, cmd, e, 1, 0, NULL);
}

static long long sg_stat(int pfd, size_t off)
{
	struct kvtier_pool_stat st;

	if (kst_stat(pfd, &st))
		return -1;
	return *(__u64 *)((char *)&st + off);
}

#define SG_STAT(self, field) \
	sg_stat((self)->pfd, offsetof(struct kvtier_pool_stat, field))

/* A PUT of @n segments that must fail with @err, leaving nothing behind. */
static void sg_put_rejected(struct __test_metadata *_metadata,
			    FIXTURE_DATA(sg) *self,
			    const struct kvtier_seg *segs, __u32 n, int err)
{
	struct kvtier_block e;

	ASSERT_EQ(0, sg_one(self->pfd, KVTIER_IOC_PUT, 1, segs, n, &e));
	ASSERT_EQ(err, e.status);
	ASSERT_EQ(KVTIER_ADDR_NONE, e.addr);
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, 1, NULL));
	ASSERT_EQ(0, SG_STAT(self, puts));
	ASSERT_EQ(0, SG_STAT(self, bytes_in));
	ASSERT_EQ(0, kst_resident(self->pfd));
}

/* A GET of @n segments of a stored block that must fail with @err. */
static void sg_get_rejected(struct __test_metadata *_metadata,
			    FIXTURE_DATA(sg) *self,
			    const struct kvtier_seg *segs, __u32 n, int err)
{
	struct kvtier_block e;

	ASSERT_EQ(0, kst_put1(self->pfd, K0, 1, self->ref, NULL));
	ASSERT_EQ(0, sg_one(self->pfd, KVTIER_IOC_GET, 1, segs, n, &e));
	ASSERT_EQ(err, e.status);
	ASSERT_EQ(0, SG_STAT(self, gets));
	ASSERT_EQ(0, SG_STAT(self, bytes_out));
	/* the block itself is unharmed */
	ASSERT_EQ(0, kst_get1(self->pfd, K0, 1, self->out, NULL));
	ASSERT_EQ(0, memcmp(self->ref, self->out, BS));
}

TEST_F(sg, put_sg_get_plain)
{
	struct kvtier_block e;

	sg_scatter(self->segs, NSEG, self->ref);
	ASSERT_EQ(0, sg_one(self->pfd, KVTIER_IOC_PUT, 1, self->segs, NSEG,
			    &e));
	ASSERT_EQ(0, e.status);
	ASSERT_EQ(KVTIER_TIER_DRAM, (int)e.tier);
	ASSERT_EQ(0, kst_get1(self->pfd, K0, 1, self->out, NULL));
	ASSERT_EQ(-1, kst_check_gen(self->out, BS, K0, 1, 7));
	ASSERT_EQ(0, memcmp(self->ref, self->out, BS));
	ASSERT_EQ(1, SG_STAT(self, puts));
	ASSERT_EQ((long long)BS, SG_STAT(self, bytes_in));
}

TEST_F(sg, put_plain_get_sg)
{
	struct kvtier_block e;

	ASSERT_EQ(0, kst_put1(self->pfd, K0, 1, self->ref, NULL));
	ASSERT_EQ(0, sg_one(self->pfd, KVTIER_IOC_GET, 1, self->segs, NSEG,
			    &e));
	ASSERT_EQ(0, e.status);
	sg_gather(self->segs, NSEG, self->out);
	ASSERT_EQ(0, memcmp(self->ref, self->out, BS));
	ASSERT_TRUE(sg_gaps_intact(self));
	ASSERT_EQ(1, SG_STAT(self, gets));
	ASSERT_EQ((long long)BS, SG_STAT(self, bytes_out));
}

/* Plain and SG entries in one batch, both ways. */
TEST_F(sg, mixed_batch)
{
	struct kvtier_block e[2];
	__u32 done;

	sg_scatter(self->segs, NSEG, self->ref);
	kst_blk(&e[0], K0, 1, self->segs);
	e[0].nsegs = NSEG;
	kst_blk(&e[1], K0, 2, self->ref);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_PUT, e, 2, 0, &done));
	ASSERT_EQ(2U, done);
	memset(self->scat, POISON, self->scat_len);
	kst_blk(&e[0], K0, 2, self->segs);
	e[0].nsegs = NSEG;
	kst_blk(&e[1], K0, 1, self->out);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_GET, e, 2, 0, &done));
	ASSERT_EQ(2U, done);
	ASSERT_EQ(0, memcmp(self->ref, self->out, BS));
	sg_gather(self->segs, NSEG, self->out);
	ASSERT_EQ(0, memcmp(self->ref, self->out, BS));
}

/* KVTIER_SEGS_MAX segments is the limit, and it is taken. */
TEST_F(sg, segs_max)
{
	struct kvtier_seg *segs = calloc(KVTIER_SEGS_MAX, sizeof(*segs));
	struct kvtier_block e;
	int i;

	ASSERT_NE(NULL, segs);
	for (i = 0; i < KVTIER_SEGS_MAX; i++) {
		/* backwards: block byte order is list order, not address */
		segs[i].addr = (__u64)(uintptr_t)self->out +
			       (KVTIER_SEGS_MAX - 1 - i) * (BS / KVTIER_SEGS_MAX);
		segs[i].len = BS / KVTIER_SEGS_MAX;
	}
	sg_scatter(segs, KVTIER_SEGS_MAX, self->ref);
	ASSERT_EQ(0, sg_one(self->pfd, KVTIER_IOC_PUT, 1, segs,
			    KVTIER_SEGS_MAX, &e));
	ASSERT_EQ(0, e.status);
	ASSERT_EQ(0, kst_get1(self->pfd, K0, 1, self->scat, NULL));
	ASSERT_EQ(0, memcmp(self->ref, self->scat, BS));
	free(segs);
}

TEST_F(sg, uring_put_get)
{
	struct kvtier_block e[2];
	struct kvtier_batch b[2];
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	int i;

	if (io_uring_queue_init(4, &ring, 0))
		SKIP(return, "no io_uring");
	sg_scatter(self->segs, NSEG, self->ref);
	kst_blk(&e[0], K0, 1, self->segs);
	e[0].nsegs = NSEG;
	kst_blk(&e[1], K0, 1, self->segs);
	e[1].nsegs = NSEG;
	for (i = 0; i < 2; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
		struct kvtier_uring_cmd *c;

		ASSERT_NE(NULL, sqe);
		memset(&b[i], 0, sizeof(b[i]));
		b[i].blocks = (__u64)(uintptr_t)&e[i];
		b[i].count = 1;
		io_uring_prep_rw(IORING_OP_URING_CMD, sqe, self->pfd, NULL, 0,
				 0);
		sqe->cmd_op = i ? KVTIER_IOC_GET : KVTIER_IOC_PUT;
		c = (struct kvtier_uring_cmd *)sqe->cmd;
		memset(c, 0, sizeof(*c));
		c->arg = (__u64)(uintptr_t)&b[i];
		ASSERT_EQ(1, io_uring_submit(&ring));
		ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
		ASSERT_EQ(0, cqe->res);
		io_uring_cqe_seen(&ring, cqe);
		ASSERT_EQ(0, e[i].status);
		ASSERT_EQ(1U, b[i].done);
		/* the GET writes into freshly poisoned segments */
		if (!i)
			memset(self->scat, POISON, self->scat_len);
	}
	io_uring_queue_exit(&ring);
	sg_gather(self->segs, NSEG, self->out);
	ASSERT_EQ(0, memcmp(self->ref, self->out, BS));
	ASSERT_TRUE(sg_gaps_intact(self));
}

/*
 * Overlapping segments: a PUT reads the same bytes twice; a GET writes
 * them twice, and the later segment's bytes are what is left.
 */
TEST_F(sg, overlap)
{
	struct kvtier_seg two[2] = {
		{ (__u64)(uintptr_t)self->ref, BS / 2 },
		{ (__u64)(uintptr_t)self->ref, BS / 2 },
	};
	struct kvtier_block e;

	ASSERT_EQ(0, sg_one(self->pfd, KVTIER_IOC_PUT, 1, two, 2, &e));
	ASSERT_EQ(0, e.status);
	ASSERT_EQ(0, kst_get1(self->pfd, K0, 1, self->out, NULL));
	ASSERT_EQ(0, memcmp(self->out, self->ref, BS / 2));
	ASSERT_EQ(0, memcmp(self->out + BS / 2, self->ref, BS / 2));

	kst_fill(self->ref, BS, K0, 2, 9);
	ASSERT_EQ(0, kst_put1(self->pfd, K0, 2, self->ref, NULL));
	memset(self->out, POISON, BS);
	two[0].addr = two[1].addr = (__u64)(uintptr_t)self->out;
	ASSERT_EQ(0, sg_one(self->pfd, KVTIER_IOC_GET, 2, two, 2, &e));
	ASSERT_EQ(0, e.status);
	ASSERT_EQ(0, memcmp(self->out, self->ref + BS / 2, BS / 2));
}

TEST_F(sg, put_lengths_short)
{
	self->segs[NSEG - 1].len--;
	sg_put_rejected(_metadata, self, self->segs, NSEG, -EINVAL);
}

TEST_F(sg, put_lengths_long)
{
	self->segs[NSEG - 1].len++;
	sg_put_rejected(_metadata, self, self->segs, NSEG, -EINVAL);
}

/* Lengths whose sum wraps around to block_size. */
TEST_F(sg, put_lengths_wrap)
{
	struct kvtier_seg two[2] = {
		{ (__u64)(uintptr_t)self->ref, ~0ULL },
		{ (__u64)(uintptr_t)self->ref, BS + 1 },
	};

	sg_put_rejected(_metadata, self, two, 2, -EINVAL);
}

TEST_F(sg, put_zero_length)
{
	self->segs[NSEG - 1].len += self->segs[5].len;
	self->segs[5].len = 0;
	sg_put_rejected(_metadata, self, self->segs, NSEG, -EINVAL);
}

TEST_F(sg, put_too_many)
{
	struct kvtier_seg *segs = calloc(KVTIER_SEGS_MAX + 1, sizeof(*segs));
	int i;

	ASSERT_NE(NULL, segs);
	for (i = 0; i <= KVTIER_SEGS_MAX; i++) {
		segs[i].addr = (__u64)(uintptr_t)self->ref;
		segs[i].len = 1;
	}
	segs[KVTIER_SEGS_MAX].len = BS - KVTIER_SEGS_MAX;
	sg_put_rejected(_metadata, self, segs, KVTIER_SEGS_MAX + 1, -E2BIG);
	free(segs);
}

TEST_F(sg, put_list_unmapped)
{
	sg_put_rejected(_metadata, self, kst_unmapped_addr(), NSEG, -EFAULT);
}

/* The list runs into an unmapped page after its first chunks. */
TEST_F(sg, put_list_partly_unmapped)
{
	char *two = kst_alloc(2 * KST_PAGE);
	struct kvtier_seg *tail;
	int n = NSEG - 16;

	ASSERT_NE(NULL, two);
	ASSERT_EQ(0, munmap(two + KST_PAGE, KST_PAGE));
	tail = (struct kvtier_seg *)(two + KST_PAGE) - n;
	memcpy(tail, self->segs, n * sizeof(*tail));
	sg_put_rejected(_metadata, self, tail, NSEG, -EFAULT);
	munmap(two, KST_PAGE);
}

/* The last segment cannot be read: the copy faults at the end. */
TEST_F(sg, put_seg_unmapped)
{
	self->segs[NSEG - 1].addr = (__u64)(uintptr_t)kst_unmapped_addr();
	sg_put_rejected(_metadata, self, self->segs, NSEG, -EFAULT);
}

/* Neither is a kernel address. */
TEST_F(sg, put_seg_kernel)
{
	self->segs[100].addr = 0xffff888000000000ULL;
	sg_put_rejected(_metadata, self, self->segs, NSEG, -EFAULT);
}

/* A replacing PUT that faults leaves the old block in place. */
TEST_F(sg, replace_seg_unmapped)
{
	struct kvtier_block e;

	ASSERT_EQ(0, kst_put1(self->pfd, K0, 1, self->ref, NULL));
	self->segs[NSEG - 1].addr = (__u64)(uintptr_t)kst_unmapped_addr();
	kst_blk(&e, K0, 1, self->segs);
	e.nsegs = NSEG;
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_PUT, &e, 1,
			       KVTIER_PUT_REPLACE, NULL));
	ASSERT_EQ(-EFAULT, e.status);
	ASSERT_EQ(0, kst_get1(self->pfd, K0, 1, self->out, NULL));
	ASSERT_EQ(0, memcmp(self->ref, self->out, BS));
	ASSERT_EQ(1, SG_STAT(self, puts));
}

TEST_F(sg, get_lengths_short)
{
	self->segs[0].len--;
	sg_get_rejected(_metadata, self, self->segs, NSEG, -EINVAL);
}

TEST_F(sg, get_zero_length)
{
	self->segs[1].len += self->segs[0].len;
	self->segs[0].len = 0;
	sg_get_rejected(_metadata, self, self->segs, NSEG, -EINVAL);
}

TEST_F(sg, get_too_many)
{
	sg_get_rejected(_metadata, self, self->segs, KVTIER_SEGS_MAX + 1,
			-E2BIG);
}

TEST_F(sg, get_list_unmapped)
{
	sg_get_rejected(_metadata, self, kst_unmapped_addr(), NSEG, -EFAULT);
}

TEST_F(sg, get_seg_unmapped)
{
	self->segs[NSEG - 1].addr = (__u64)(uintptr_t)kst_unmapped_addr();
	sg_get_rejected(_metadata, self, self->segs, NSEG, -EFAULT);
}

/* A segment that can be read but not written. */
TEST_F(sg, get_seg_readonly)
{
	void *ro = kst_ro_page_with(self->ref, KST_PAGE);

	ASSERT_NE(NULL, ro);
	self->segs[1].addr = (__u64)(uintptr_t)ro;
	ASSERT_GE(KST_PAGE, self->segs[1].len);
	sg_get_rejected(_metadata, self, self->segs, NSEG, -EFAULT);
	munmap(ro, KST_PAGE);
}

/* nsegs belongs to PUT and GET: the other commands refuse the batch. */
TEST_F(sg, nsegs_on_other_commands)
{
	static const unsigned long cmds[] = {
		KVTIER_IOC_LOOKUP, KVTIER_IOC_DROP, KVTIER_IOC_PIN,
		KVTIER_IOC_UNPIN,
	};
	struct kvtier_block e;
	unsigned int i;

	ASSERT_EQ(0, kst_put1(self->pfd, K0, 1, self->ref, NULL));
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		kst_blk(&e, K0, 1, NULL);
		e.nsegs = 1;
		ASSERT_EQ(-EINVAL, kst_batch(self->pfd, cmds[i], &e, 1, 0,
					     NULL));
		ASSERT_EQ(0x7eadbeefU, (__u32)e.status);
	}
	/* still there, unpinned */
	ASSERT_EQ(0, kst_pinned(self->pfd));
	ASSERT_EQ(0, kst_drop1(self->pfd, K0, 1));
}

/* A control fd that did not ask for KVTIER_F_SG. */
FIXTURE(nosg) {
	int ctl, pfd;
	char name[KVTIER_NAME_MAX];
	char *buf;
};

FIXTURE_SETUP(nosg)
{
	struct kvtier_api api;

	kst_setup(_metadata);
	self->pfd = -1;
	self->ctl = kst_ctl_open_raw();
	ASSERT_LE(0, self->ctl);
	ASSERT_EQ(0, kst_api(self->ctl, KST_F_KNOWN & ~(KVTIER_F_SG |
			     KVTIER_F_REPLACE), &api));
	ASSERT_NE(0ULL, api.supported & KVTIER_F_SG);
	ASSERT_EQ(0ULL, api.features & KVTIER_F_SG);
	kst_name(self->name, "nosg");
	self->pfd = kst_pool_create(self->ctl, self->name, BS, CAP, CAP);
	ASSERT_LE(0, self->pfd);
	self->buf = kst_alloc(BS);
	ASSERT_NE(NULL, self->buf);
}

FIXTURE_TEARDOWN(nosg)
{
	if (self->pfd >= 0)
		close(self->pfd);
	kst_pool_destroy(self->ctl, self->name);
	kst_free(self->buf, BS);
	close(self->ctl);
}

/* Refused like another feature not asked for (KVTIER_F_REPLACE). */
TEST_F(nosg, put_get_refused)
{
	struct kvtier_seg seg = { (__u64)(uintptr_t)self->buf, BS };
	int replace_err;
	struct kvtier_block e;

	kst_fill(self->buf, BS, K0, 1, 1);
	replace_err = kst_replace1(self->pfd, K0, 1, self->buf, NULL);
	ASSERT_EQ(-EOPNOTSUPP, replace_err);
	ASSERT_EQ(replace_err, sg_one(self->pfd, KVTIER_IOC_PUT, 1, &seg, 1,
				      &e));
	ASSERT_EQ(0x7eadbeefU, (__u32)e.status);
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, 1, NULL));
	ASSERT_EQ(0, kst_put1(self->pfd, K0, 1, self->buf, NULL));
	ASSERT_EQ(replace_err, sg_one(self->pfd, KVTIER_IOC_GET, 1, &seg, 1,
				      &e));
	ASSERT_EQ(0x7eadbeefU, (__u32)e.status);
	/* plain entries still work */
	ASSERT_EQ(0, kst_get1(self->pfd, K0, 1, self->buf, NULL));
}

TEST_HARNESS_MAIN
