// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier NVMe tier (KVTIER_F_NVME), the tier at work: demotion of evicted
 * blocks and their promotion by GET, PIN, DROP, LOOKUP with
 * KVTIER_LOOKUP_LOAD and mmap faults, SYNC, detach and attach again, the
 * on-disk format, the integrity checks (a corrupted or misplaced copy is a
 * miss, never wrong bytes), and a segment writer out of memory (the debug
 * kernel's fail_writer point). Every case runs with 4 KiB and 64 KiB
 * blocks.
 *
 * Runs as root on /dev/nvme0n1 (or $KVTIER_NVME_DEV), whose content it
 * destroys; the cases are skipped when the device is missing.
 */
#include <liburing.h>
#include "nvme_fixture.h"

/* ==== the tier: demotion, promotion, SYNC, detach and attach =========== */


FIXTURE(tier) {
	struct nvt_fix;		/* buf, out: one block each */
};

FIXTURE_VARIANT(tier) {
	struct nvt_cfg cfg;
};

FIXTURE_VARIANT_ADD(tier, b4k) {
	.cfg = NVT_TIER_CFG("nvme", 4 * KST_KIB),
};
FIXTURE_VARIANT_ADD(tier, b64k) {
	.cfg = NVT_TIER_CFG("nvme", 64 * KST_KIB),
};

FIXTURE_SETUP(tier)
{
	nvt_setup(_metadata, NVT_FIX(self), &variant->cfg);
}

FIXTURE_TEARDOWN(tier)
{
	nvt_teardown(NVT_FIX(self));
}

/* Evicted blocks go to NVMe and come back exact on GET. */
TEST_F(tier, demote_and_promote)
{
	struct kvtier_pool_stat st;
	struct kvtier_nvme_stat ns;
	struct tally t;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	EXPECT_GE(DRAM, st.resident[KVTIER_TIER_DRAM]);
	EXPECT_LE(NCOLD, st.resident[KVTIER_TIER_NVME]);
	EXPECT_LE(NCOLD, st.demotions);
	EXPECT_EQ(NPUT, st.puts);
	EXPECT_EQ(0U, st.promotions);
	EXPECT_EQ(0U, st.bad_reads);
	EXPECT_GE(DRAM, st.dirty);

	ASSERT_EQ(0, nvt_nstat(self->ctl, &ns));
	EXPECT_LE(NCOLD * self->bs, ns.bytes_demoted);
	EXPECT_LT(ns.bytes_demoted, ns.bytes_written);
	EXPECT_GT(ns.nr_regions, ns.free_regions);

	tally_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, &t, NULL);
	EXPECT_EQ(NPUT, t.exact);
	EXPECT_EQ(0U, t.wrong);
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	EXPECT_LE(NCOLD, st.promotions);
	EXPECT_EQ(0U, st.bad_reads);
	EXPECT_EQ(0U, st.misses);
	EXPECT_GE(DRAM, st.resident[KVTIER_TIER_DRAM]);
	EXPECT_EQ(NPUT, st.resident[KVTIER_TIER_NVME]);
	ASSERT_LE((long long)(NCOLD * self->bs), NSTAT(self->ctl, bytes_read));

	/* A second pass reads them all again, still exact. */
	tally_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, &t, NULL);
	EXPECT_EQ(NPUT, t.exact);
}

/*
 * A pool whose every address holds a block: blocks only on NVMe still come
 * back (a load needs DRAM room, not an address).
 */
TEST_F(tier, full_pool_reads_back)
{
	char name[KVTIER_NAME_MAX];
	struct tally t;
	int pfd;

	kst_name(name, "fullpool");
	pfd = kst_pool_create(self->ctl, name, self->bs, 32, DRAM);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, put_range(pfd, self->buf, self->bs, 0, 32, 1, 0));
	/* No address left for a new key. */
	ASSERT_EQ(-ENOSPC, put_range(pfd, self->buf, self->bs, 32, 1, 1, 0));
	ASSERT_EQ(KVTIER_TIER_NVME, key_tier(pfd, 0));
	EXPECT_EQ(0, get_check(pfd, self->buf, self->bs, 0, 1));
	tally_range(pfd, self->buf, self->bs, 0, 32, 1, &t, NULL);
	EXPECT_EQ(32U, t.exact);
	if (t.other)
		TH_LOG("first error: %d", t.first_other);
	close(pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
}

/* ==== GET with KVTIER_GET_DIRECT: NVMe straight to the caller ========== */

#define DIRECT_N	8U	/* entries a batch */

/* /sys/kernel/kvtier/cpu_bytes: bytes copied, checksummed, zeroed. */
static int cpu_bytes(long long v[3])
{
	return kst_read_cols(KST_SYSFS_DIR "/cpu_bytes", v, 3, 0) == 3 ?
	       0 : -EIO;
}

/*
 * GET keys @first.. with KVTIER_GET_DIRECT, DIRECT_N a batch, into @bufs
 * (DIRECT_N blocks, each filled with 0x5a first); count entries served
 * from NVMe and exact ones. Return: the batch's result, or -EILSEQ when a
 * served entry is not exact.
 */
static int direct_get(int pfd, char *bufs, __u64 bs, __u64 first, __u32 n,
		      __u64 gen, __u32 *nvme, __u32 *exact)
{
	struct kvtier_block b[DIRECT_N];
	__u32 i, done;
	int ret;

	memset(bufs, 0x5a, DIRECT_N * bs);
	for (i = 0; i < n; i++)
		kst_blk(&b[i], K0, first + i, bufs + i * bs);
	ret = kst_batch(pfd, KVTIER_IOC_GET, b, n, KVTIER_GET_DIRECT, &done);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		if (b[i].status)
			continue;
		if (kst_check_gen(bufs + i * bs, bs, K0, first + i,
				  GEN(gen)) != -1)
			return -EILSEQ;
		*exact += 1;
		*nvme += b[i].tier == KVTIER_TIER_NVME;
	}
	return 0;
}

/*
 * PUT keys 0..NPUT-1 (generation 1) and SYNC: the number of keys from 0 on
 * that are only on NVMe then, 0 if a command failed.
 */
static __u32 put_cold(int pfd, void *buf, __u64 bs)
{
	__u32 cold = 0;

	if (put_range(pfd, buf, bs, 0, NPUT, 1, 0) || nvt_sync(pfd, NULL))
		return 0;
	while (cold < NPUT && key_tier(pfd, cold) == KVTIER_TIER_NVME)
		cold++;
	return cold;
}

/*
 * Blocks only on NVMe are read into the caller's buffers and stay there:
 * no promotion, no CPU copy; blocks in DRAM are served from DRAM.
 */
TEST_F(tier, direct_get_stays_on_nvme)
{
	__u32 nvme = 0, exact = 0, k, cold;
	long long c0[3], c1[3], hits;
	char *bufs;

	bufs = kst_alloc(DIRECT_N * self->bs);
	ASSERT_NE(NULL, bufs);
	cold = put_cold(self->pfd, self->buf, self->bs);
	ASSERT_LE(2 * DIRECT_N, cold);
	cold -= cold % DIRECT_N;

	/* The coldest keys first: only on NVMe. */
	hits = PSTAT(self->pfd, hits);
	ASSERT_EQ(0, cpu_bytes(c0));
	for (k = 0; k < cold; k += DIRECT_N)
		ASSERT_EQ(0, direct_get(self->pfd, bufs, self->bs, k, DIRECT_N,
					1, &nvme, &exact));
	ASSERT_EQ(0, cpu_bytes(c1));
	EXPECT_EQ(cold, exact);
	EXPECT_EQ(cold, nvme);
	EXPECT_EQ(0, c1[0] - c0[0]);	/* nothing copied */
	EXPECT_LE((long long)(cold * self->bs), c1[1] - c0[1]);
	EXPECT_EQ(0, PSTAT(self->pfd, promotions));
	EXPECT_EQ(0, PSTAT(self->pfd, bad_reads));
	EXPECT_EQ((long long)cold, PSTAT(self->pfd, hits) - hits);
	for (k = 0; k < cold; k++)
		ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, k));

	/* All of them: those in DRAM come from DRAM. */
	nvme = exact = 0;
	for (k = 0; k < NPUT; k += DIRECT_N)
		ASSERT_EQ(0, direct_get(self->pfd, bufs, self->bs, k,
					NPUT - k < DIRECT_N ? NPUT - k :
					DIRECT_N, 1, &nvme,
					&exact));
	EXPECT_EQ(NPUT, exact);
	EXPECT_LE(cold, nvme);
	EXPECT_GT(NPUT, nvme);
	EXPECT_EQ(0, PSTAT(self->pfd, promotions));
	kst_free(bufs, DIRECT_N * self->bs);
}

/*
 * GET with KVTIER_GET_DIRECT through a pool fd of a control fd that did
 * not negotiate KVTIER_F_DIRECT: the batch fails with -EOPNOTSUPP, and a
 * plain GET works there.
 */
TEST_F(tier, direct_get_needs_feature)
{
	struct kvtier_api api;
	struct kvtier_block b;
	int ctl = kst_ctl_open_raw(), fd;

	ASSERT_LE(0, ctl);
	ASSERT_EQ(0, kst_api(ctl, KST_F_KNOWN & ~KVTIER_F_DIRECT, &api));
	ASSERT_EQ(0ULL, api.features & KVTIER_F_DIRECT);
	ASSERT_NE(0ULL, api.supported & KVTIER_F_DIRECT);
	fd = kst_pool_open(ctl, self->name, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, 1, 1, 0));
	kst_blk(&b, K0, 0, self->out);
	EXPECT_EQ(-EOPNOTSUPP, kst_batch(fd, KVTIER_IOC_GET, &b, 1,
					 KVTIER_GET_DIRECT, NULL));
	kst_blk(&b, K0, 0, self->out);
	EXPECT_EQ(0, kst_batch(fd, KVTIER_IOC_GET, &b, 1, 0, NULL));
	EXPECT_EQ(0, b.status);
	EXPECT_EQ(-1, kst_check_gen(self->out, self->bs, K0, 0, GEN(1)));
	close(fd);
	close(ctl);
}

/*
 * The same through io_uring: two batches queued at once, run by the
 * ring's workers, whose reads go into this process's pages.
 */
TEST_F(tier, direct_get_through_uring)
{
	struct kvtier_block e[2][DIRECT_N];
	struct kvtier_batch b[2];
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	__u32 i, j;
	char *bufs;

	bufs = kst_alloc(2 * DIRECT_N * self->bs);
	ASSERT_NE(NULL, bufs);
	ASSERT_LE(2 * DIRECT_N, put_cold(self->pfd, self->buf, self->bs));

	ASSERT_EQ(0, io_uring_queue_init(4, &ring, 0));
	for (i = 0; i < 2; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
		struct kvtier_uring_cmd *c;

		ASSERT_NE(NULL, sqe);
		for (j = 0; j < DIRECT_N; j++)
			kst_blk(&e[i][j], K0, i * DIRECT_N + j,
				bufs + (i * DIRECT_N + j) * self->bs);
		memset(&b[i], 0, sizeof(b[i]));
		b[i].blocks = (__u64)(uintptr_t)e[i];
		b[i].count = DIRECT_N;
		b[i].flags = KVTIER_GET_DIRECT;
		io_uring_prep_rw(IORING_OP_URING_CMD, sqe, self->pfd, NULL, 0,
				 0);
		sqe->cmd_op = KVTIER_IOC_GET;
		sqe->user_data = i;
		c = (struct kvtier_uring_cmd *)sqe->cmd;
		memset(c, 0, sizeof(*c));
		c->arg = (__u64)(uintptr_t)&b[i];
	}
	ASSERT_EQ(2, io_uring_submit(&ring));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
		EXPECT_EQ(0, cqe->res);
		io_uring_cqe_seen(&ring, cqe);
	}
	io_uring_queue_exit(&ring);
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(DIRECT_N, b[i].done);
		for (j = 0; j < DIRECT_N; j++) {
			__u64 k = i * DIRECT_N + j;

			EXPECT_EQ(0, e[i][j].status);
			EXPECT_EQ((__u32)KVTIER_TIER_NVME, e[i][j].tier);
			EXPECT_EQ(-1, kst_check_gen(bufs + k * self->bs,
						    self->bs, K0, k, GEN(1)));
		}
	}
	EXPECT_EQ(0, PSTAT(self->pfd, promotions));
	kst_free(bufs, 2 * DIRECT_N * self->bs);
}

/*
 * A buffer the device cannot be given (not on a page boundary), and a
 * segment list with one that is not whole pages: read through DRAM, exact.
 * With KVTIER_GET_PART: -EINVAL.
 */
TEST_F(tier, direct_get_unaligned_reads_dram)
{
	struct kvtier_seg seg[2];
	struct kvtier_block b;
	char *raw;

	raw = kst_alloc(self->bs + KST_PAGE);
	ASSERT_NE(NULL, raw);
	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 0));
	ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 1));

	kst_blk(&b, K0, 0, raw + 512);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_GET, &b, 1,
			       KVTIER_GET_DIRECT, NULL));
	ASSERT_EQ(0, b.status);
	EXPECT_EQ(KVTIER_TIER_DRAM, (int)b.tier);
	EXPECT_EQ(-1, kst_check_gen(raw + 512, self->bs, K0, 0, GEN(1)));
	EXPECT_EQ(1, PSTAT(self->pfd, promotions));

	seg[0].addr = (__u64)(uintptr_t)raw;
	seg[0].len = 512;
	seg[1].addr = (__u64)(uintptr_t)(raw + KST_PAGE);
	seg[1].len = self->bs - seg[0].len;
	kst_blk(&b, K0, 1, seg);
	b.nsegs = 2;
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_GET, &b, 1,
			       KVTIER_GET_DIRECT, NULL));
	ASSERT_EQ(0, b.status);
	EXPECT_EQ(KVTIER_TIER_DRAM, (int)b.tier);
	EXPECT_EQ(2, PSTAT(self->pfd, promotions));

	kst_blk(&b, K0, 2, self->out);
	EXPECT_EQ(-EINVAL, kst_batch(self->pfd, KVTIER_IOC_GET, &b, 1,
				     KVTIER_GET_DIRECT | KVTIER_GET_PART,
				     NULL));
	kst_free(raw, self->bs + KST_PAGE);
}

/* PIN of a block only on NVMe loads it and keeps it in DRAM. */
TEST_F(tier, pin_loads_and_holds)
{
	struct kvtier_block b;
	__u64 next = 200;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 0));
	ASSERT_EQ(0, kst_one(self->pfd, KVTIER_IOC_PIN, K0, 0, NULL, 0, &b));
	ASSERT_EQ((__u32)KVTIER_TIER_DRAM, b.tier);
	ASSERT_EQ(1, PSTAT(self->pfd, promotions));
	/* Many more blocks come and go; the pinned one stays. */
	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 100, 4 * DRAM, 1, 0));
	ASSERT_EQ(KVTIER_TIER_DRAM, key_tier(self->pfd, 0));
	ASSERT_EQ(0, get_check(self->pfd, self->buf, self->bs, 0, 1));
	ASSERT_EQ(1, PSTAT(self->pfd, promotions));
	ASSERT_EQ(0, kst_unpin1(self->pfd, K0, 0));
	ASSERT_EQ(0, push_out(self->pfd, self->buf, self->bs, 0, &next));
	ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 0));
	ASSERT_EQ(0, get_check(self->pfd, self->buf, self->bs, 0, 1));
}

/* DROP of a block only on NVMe: gone, and counted out of the tier. */
TEST_F(tier, drop_nvme_block)
{
	long long nvme;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 0));
	nvme = RES_NVME(self->pfd);
	ASSERT_EQ((long long)NPUT, nvme);
	ASSERT_EQ(0, kst_drop1(self->pfd, K0, 0));
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, 0, NULL));
	ASSERT_EQ(-ENOENT, get_check(self->pfd, self->buf, self->bs, 0, 1));
	ASSERT_EQ(nvme - 1, RES_NVME(self->pfd));
	/* And one also in DRAM. */
	ASSERT_EQ(KVTIER_TIER_DRAM, key_tier(self->pfd, NPUT - 1));
	ASSERT_EQ(0, kst_drop1(self->pfd, K0, NPUT - 1));
	ASSERT_EQ(nvme - 2, RES_NVME(self->pfd));
	ASSERT_EQ(0, PSTAT(self->pfd, dirty));
	/* The address can be used again. */
	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, 1, 3, 0));
	ASSERT_EQ(0, get_check(self->pfd, self->buf, self->bs, 0, 3));
}

/* Plain LOOKUP reports the tier and reads nothing. */
TEST_F(tier, lookup_reports_nvme_tier)
{
	struct kvtier_block b[NPUT];
	unsigned int i, nvme = 0, dram = 0;
	long long read0;
	__u32 done;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	read0 = NSTAT(self->ctl, bytes_read);
	ASSERT_LE(0, read0);
	ASSERT_EQ(0, lookup_range(self->pfd, b, 0, NPUT, 0, &done));
	ASSERT_EQ(NPUT, done);
	for (i = 0; i < NPUT; i++) {
		ASSERT_EQ(0, b[i].status);
		ASSERT_NE(KVTIER_ADDR_NONE, b[i].addr);
		if (b[i].tier == KVTIER_TIER_NVME)
			nvme++;
		else if (b[i].tier == KVTIER_TIER_DRAM)
			dram++;
	}
	EXPECT_EQ(NPUT, nvme + dram);
	EXPECT_LE(NCOLD, nvme);
	EXPECT_EQ(dram, RES_DRAM(self->pfd));
	/* The oldest is cold, the newest hot. */
	EXPECT_EQ((__u32)KVTIER_TIER_NVME, b[0].tier);
	EXPECT_EQ((__u32)KVTIER_TIER_DRAM, b[NPUT - 1].tier);
	/* TOUCH does not load either. */
	ASSERT_EQ(0, lookup_range(self->pfd, b, 0, 4, KVTIER_LOOKUP_TOUCH, &done));
	ASSERT_EQ(4U, done);
	EXPECT_EQ((__u32)KVTIER_TIER_NVME, b[0].tier);
	EXPECT_EQ(0, PSTAT(self->pfd, promotions));
	EXPECT_EQ(read0, NSTAT(self->ctl, bytes_read));
}

/* LOOKUP with LOAD brings the prefix to DRAM. */
TEST_F(tier, lookup_load_brings_prefix)
{
	struct kvtier_block b[4];
	unsigned int i;
	__u32 done;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, i));
	}
	ASSERT_EQ(0, lookup_range(self->pfd, b, 0, 4, KVTIER_LOOKUP_LOAD, &done));
	ASSERT_EQ(4U, done);
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(0, b[i].status);
		EXPECT_EQ((__u32)KVTIER_TIER_DRAM, b[i].tier);
		EXPECT_NE(KVTIER_ADDR_NONE, b[i].addr);
	}
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(KVTIER_TIER_DRAM, key_tier(self->pfd, i));
	}
	ASSERT_EQ(4, PSTAT(self->pfd, promotions));
	/* GETs now hit DRAM: exact and no more reads. */
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, get_check(self->pfd, self->buf, self->bs, i, 1));
	}
	ASSERT_EQ(4, PSTAT(self->pfd, promotions));
	ASSERT_EQ(0, PSTAT(self->pfd, bad_reads));
}

/*
 * LOAD stops at the first miss: what follows it stays on NVMe. The blocks
 * are synced first: while the DRAM blocks are being written back, the only
 * one eviction may take is a block this LOOKUP has just loaded, which is
 * then read twice (seen on the debug kernel: 3 promotions for 2 blocks).
 */
TEST_F(tier, lookup_load_stops_at_miss)
{
	struct kvtier_block b[5];
	__u32 done;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	kst_blk(&b[0], K0, 0, NULL);
	kst_blk(&b[1], K0, 1, NULL);
	kst_blk(&b[2], K0, 1000, NULL);	/* never put */
	kst_blk(&b[3], K0, 3, NULL);
	kst_blk(&b[4], K0, 4, NULL);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_LOOKUP, b, 5,
			       KVTIER_LOOKUP_LOAD, &done));
	ASSERT_EQ(2U, done);
	EXPECT_EQ((__u32)KVTIER_TIER_DRAM, b[0].tier);
	EXPECT_EQ((__u32)KVTIER_TIER_DRAM, b[1].tier);
	EXPECT_EQ(-ENOENT, b[2].status);
	EXPECT_EQ((__u32)KVTIER_TIER_NONE, b[2].tier);
	EXPECT_EQ(KVTIER_ADDR_NONE, b[2].addr);
	EXPECT_EQ(0, b[3].status);
	EXPECT_EQ((__u32)KVTIER_TIER_NVME, b[3].tier);
	EXPECT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 3));
	EXPECT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 4));
	EXPECT_EQ(2, PSTAT(self->pfd, promotions));
}

/*
 * A prefix twice the DRAM share loads block by block: each read once, not
 * evicted by the reads of the blocks after it before it was waited for
 * (reading them all at once read each twice). Give or take two: reads
 * land in any order, and a block whose read landed before an older one's
 * may be the least recently used when the window moves on.
 */
TEST_F(tier, lookup_load_reads_each_once)
{
	struct kvtier_block b[2 * DRAM];
	long long before, reads;
	unsigned int i;
	__u32 done;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	for (i = 0; i < 2 * DRAM; i++) {
		ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, i));
	}
	before = PSTAT(self->pfd, promotions);
	ASSERT_EQ(0, lookup_range(self->pfd, b, 0, 2 * DRAM, KVTIER_LOOKUP_LOAD,
				  &done));
	ASSERT_EQ(2 * DRAM, done);
	for (i = 0; i < 2 * DRAM; i++) {
		EXPECT_EQ(0, b[i].status);
		EXPECT_EQ((__u32)KVTIER_TIER_DRAM, b[i].tier);
	}
	reads = PSTAT(self->pfd, promotions) - before;
	EXPECT_LE(2 * DRAM, reads);
	EXPECT_GE(2 * DRAM + 2, reads);
	/* The last ones loaded are the ones left, exact. */
	for (i = DRAM + DRAM / 2; i < 2 * DRAM; i++) {
		ASSERT_EQ(0, get_check(self->pfd, self->buf, self->bs, i, 1));
	}
	EXPECT_EQ(reads, PSTAT(self->pfd, promotions) - before);
}

/* A fault on a block only on NVMe loads it; evicted and faulted again. */
TEST_F(tier, mmap_fault_loads)
{
	size_t len = (size_t)CAP * self->bs;
	struct kvtier_block b;
	__u64 next = 100;
	char *map;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, kst_lookup1(self->pfd, K0, 0, &b));
	ASSERT_EQ((__u32)KVTIER_TIER_NVME, b.tier);
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, self->pfd, 0);
	ASSERT_NE(MAP_FAILED, map);

	ASSERT_EQ(0, kst_probe_read(map + b.addr * self->bs, self->out, self->bs));
	kst_fill(self->buf, self->bs, K0, 0, GEN(1));
	ASSERT_EQ(0, memcmp(self->buf, self->out, self->bs));
	ASSERT_EQ(1, PSTAT(self->pfd, promotions));
	ASSERT_EQ(KVTIER_TIER_DRAM, key_tier(self->pfd, 0));

	/* Push it out again (new keys), then fault it back. */
	ASSERT_EQ(0, push_out(self->pfd, self->buf, self->bs, 0, &next));
	ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 0));
	memset(self->out, 0, self->bs);
	ASSERT_EQ(0, kst_probe_read(map + b.addr * self->bs, self->out, self->bs));
	kst_fill(self->buf, self->bs, K0, 0, GEN(1));
	ASSERT_EQ(0, memcmp(self->buf, self->out, self->bs));
	ASSERT_EQ(2, PSTAT(self->pfd, promotions));
	munmap(map, len);
}

/* KVTIER_POOL_FAULT_NOLOAD: SIGBUS until something else loads it. */
TEST_F(tier, mmap_fault_noload_sigbus)
{
	char name[KVTIER_NAME_MAX];
	struct kvtier_pool_create c;
	struct kvtier_block b;
	size_t len = (size_t)CAP * self->bs;
	char *map;
	int pfd;

	kst_name(name, "noload");
	kst_create_init(&c, name, self->bs, CAP, DRAM);
	c.flags = KVTIER_POOL_FAULT_NOLOAD;
	pfd = kst_create(self->ctl, &c);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, put_range(pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, kst_lookup1(pfd, K0, 0, &b));
	ASSERT_EQ((__u32)KVTIER_TIER_NVME, b.tier);
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, pfd, 0);
	ASSERT_NE(MAP_FAILED, map);

	EXPECT_EQ(SIGBUS, kst_probe_read(map + b.addr * self->bs, self->out, 8));
	EXPECT_EQ(SIGBUS, kst_probe_read(map + (b.addr + 1) * self->bs - 8,
				     self->out, 8));
	EXPECT_EQ(0, PSTAT(pfd, promotions));
	EXPECT_EQ(KVTIER_TIER_NVME, key_tier(pfd, 0));

	/* GET loads it; the mapping then reads the same bytes. */
	ASSERT_EQ(0, get_check(pfd, self->buf, self->bs, 0, 1));
	ASSERT_EQ(0, kst_probe_read(map + b.addr * self->bs, self->out, self->bs));
	ASSERT_EQ(0, memcmp(self->buf, self->out, self->bs));
	munmap(map, len);
	close(pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
}

struct cget {
	int pfd;
	__u64 bs, key;
	pthread_barrier_t *bar;
	int result;
};

static void *cget_fn(void *arg)
{
	struct cget *c = arg;
	void *buf = kst_alloc(c->bs);

	if (!buf) {
		c->result = -ENOMEM;
		return NULL;
	}
	pthread_barrier_wait(c->bar);
	c->result = get_check(c->pfd, buf, c->bs, c->key, 1);
	kst_free(buf, c->bs);
	return NULL;
}

#define NTHREADS	8

/* Concurrent GETs of one block only on NVMe: one read, all exact. */
TEST_F(tier, concurrent_gets_share_one_read)
{
	struct cget c[NTHREADS];
	pthread_t th[NTHREADS];
	pthread_barrier_t bar;
	__u64 key;
	int i;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	for (key = 0; key < 6; key++) {
		long long before = PSTAT(self->pfd, promotions);

		ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, key));
		ASSERT_EQ(0, pthread_barrier_init(&bar, NULL, NTHREADS));
		for (i = 0; i < NTHREADS; i++) {
			c[i] = (struct cget){ .pfd = self->pfd, .bs = self->bs,
					      .key = key, .bar = &bar };
			ASSERT_EQ(0, pthread_create(&th[i], NULL, cget_fn, &c[i]));
		}
		for (i = 0; i < NTHREADS; i++)
			pthread_join(th[i], NULL);
		pthread_barrier_destroy(&bar);
		for (i = 0; i < NTHREADS; i++) {
			if (c[i].result)
				TH_LOG("key %llu thread %d: %d",
				       (unsigned long long)key, i, c[i].result);
			ASSERT_EQ(0, c[i].result);
		}
		ASSERT_EQ(before + 1, PSTAT(self->pfd, promotions));
	}
	ASSERT_EQ(0, PSTAT(self->pfd, bad_reads));
}

/* SYNC writes every dirty block; a second SYNC writes nothing. */
TEST_F(tier, sync_clears_dirty)
{
	char name[KVTIER_NAME_MAX];
	struct kvtier_pool_stat st;
	__u64 written = 0;
	int pfd;

	kst_name(name, "sync");
	pfd = kst_pool_create(self->ctl, name, self->bs, 32, 32);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, put_range(pfd, self->buf, self->bs, 0, 20, 1, 0));
	ASSERT_EQ(0, kst_stat(pfd, &st));
	ASSERT_LT(0U, st.dirty);
	ASSERT_GE(20U, st.dirty);
	ASSERT_EQ(20U, st.dirty + st.demotions);

	ASSERT_EQ(0, nvt_sync(pfd, &written));
	EXPECT_EQ(st.dirty, written);
	ASSERT_EQ(0, kst_stat(pfd, &st));
	EXPECT_EQ(0U, st.dirty);
	EXPECT_EQ(20U, st.demotions);
	EXPECT_EQ(20U, st.resident[KVTIER_TIER_NVME]);
	EXPECT_EQ(20U, st.resident[KVTIER_TIER_DRAM]);

	ASSERT_EQ(0, nvt_sync(pfd, &written));
	EXPECT_EQ(0U, written);
	EXPECT_EQ(20, PSTAT(pfd, demotions));
	/* Clean blocks are still served from DRAM, exact. */
	for (int k = 0; k < 20; k++) {
		ASSERT_EQ(0, get_check(pfd, self->buf, self->bs, k, 1));
	}
	/* A replaced block is dirty again until the next SYNC. */
	ASSERT_EQ(0, put_range(pfd, self->buf, self->bs, 3, 1, 2,
			       KVTIER_PUT_REPLACE));
	EXPECT_EQ(1, PSTAT(pfd, dirty));
	ASSERT_EQ(0, nvt_sync(pfd, &written));
	EXPECT_EQ(1U, written);
	EXPECT_EQ(0, PSTAT(pfd, dirty));
	close(pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
}

/* Which block left DRAM for one more, and what it cost. */
struct clean_first {
	int victim;		/* the key that left DRAM, or -1 */
	long long dirty;	/* blocks in DRAM without a copy after */
};

/*
 * The pool's dirty count once it is @want, else after @secs: writes
 * queued by an eviction end in the background.
 */
static long long dirty_settles(int pfd, long long want, double secs)
{
	double until = kst_mono() + secs;
	long long dirty;

	while ((dirty = PSTAT(pfd, dirty)) != want && kst_mono() < until)
		usleep(10000);
	return dirty;
}

/*
 * Four blocks written by SYNC and used again since, four PUT after them
 * and not written, then one more PUT in a DRAM of 8.
 */
static void clean_first_run(struct __test_metadata *_metadata,
			    FIXTURE_DATA(tier) *self, const char *param,
			    double secs, struct clean_first *cf)
{
	char name[KVTIER_NAME_MAX];
	int pfd;
	__u64 k;

	cf->victim = -1;
	ASSERT_EQ(0, kst_write_str(KST_PARAM_DIR "/policy_clean_first",
				   param));
	kst_name(name, "cleanfirst");
	pfd = kst_pool_create(self->ctl, name, self->bs, 32, DRAM);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, put_range(pfd, self->buf, self->bs, 0, 4, 1, 0));
	ASSERT_EQ(0, nvt_sync(pfd, NULL));
	ASSERT_EQ(0, put_range(pfd, self->buf, self->bs, 4, 4, 1, 0));
	for (k = 0; k < 4; k++)
		ASSERT_EQ(0, get_check(pfd, self->buf, self->bs, k, 1));
	/* Nothing written ahead: too few dirty blocks for a region. */
	ASSERT_EQ(4, PSTAT(pfd, dirty));
	ASSERT_EQ(0, put_range(pfd, self->buf, self->bs, 8, 1, 1, 0));
	/*
	 * 4 to 8 are dirty; 1 once the eviction's writes of 4 to 7 end,
	 * which takes well under the 2 s given where none is expected.
	 */
	cf->dirty = dirty_settles(pfd, 1, secs);
	for (k = 0; k < 9; k++) {
		int tier = key_tier(pfd, k);

		ASSERT_LE(KVTIER_TIER_DRAM, tier);
		if (tier == KVTIER_TIER_DRAM)
			continue;
		ASSERT_EQ(-1, cf->victim);
		cf->victim = k;
	}
	/* Every block still reads back exact. */
	for (k = 0; k < 9; k++)
		ASSERT_EQ(0, get_check(pfd, self->buf, self->bs, k, 1));
	close(pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
}

/*
 * Parameter policy_clean_first: a pool that takes it evicts the coldest
 * block with an NVMe copy, and writes nothing, though colder blocks have
 * none. A pool without it evicts from the cold end, whose dirty blocks it
 * writes first (then takes a clean one while they are being written).
 * Blocks 4 to 8 are dirty after the PUT; without the parameter 4 to 7
 * are written.
 */
TEST_F(tier, clean_first_evicts_written)
{
	struct clean_first on, off;
	char was[8];

	ASSERT_LT(0, kst_read_file(KST_PARAM_DIR "/policy_clean_first", was,
				   sizeof(was)));
	clean_first_run(_metadata, self, "Y", 2, &on);
	clean_first_run(_metadata, self, "N", 20, &off);
	kst_write_str(KST_PARAM_DIR "/policy_clean_first", was);
	/* The coldest of the four written, and nothing more written. */
	EXPECT_EQ(0, on.victim);
	EXPECT_EQ(5, on.dirty);
	/* The four dirty ones written. */
	EXPECT_NE(-1, off.victim);
	EXPECT_EQ(1, off.dirty);
}

struct writer {
	int pfd;
	__u64 bs;
	volatile int stop;
	double until;
	unsigned long puts;
	int err;
};

static void *writer_fn(void *arg)
{
	struct writer *w = arg;
	void *buf = kst_alloc(w->bs);
	__u64 i;

	if (!buf) {
		w->err = -ENOMEM;
		return NULL;
	}
	for (i = 0; !w->stop && kst_mono() < w->until; i++) {
		/* 64 keys: with the test's 64, the pool's 256 addresses do. */
		__u64 k = 1000 + i % NPUT;
		int ret;

		kst_fill(buf, w->bs, K0, k, GEN(i + 2));
		ret = kst_one(w->pfd, KVTIER_IOC_PUT, K0, k, buf,
			      KVTIER_PUT_REPLACE, NULL);
		if (ret) {
			w->err = ret;
			break;
		}
		w->puts++;
	}
	kst_free(buf, w->bs);
	return NULL;
}

/*
 * SYNC returns once what was there when it started is durable, even while
 * a writer keeps dirtying blocks (it must not chase the writer forever).
 */
TEST_F_TIMEOUT(tier, sync_with_concurrent_puts, 120)
{
	struct writer w = { .pfd = self->pfd, .bs = self->bs };
	struct tally t;
	double t0, t1;
	pthread_t th;
	int ret;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	w.until = kst_mono() + 25;
	ASSERT_EQ(0, pthread_create(&th, NULL, writer_fn, &w));
	usleep(200000);
	t0 = kst_mono();
	ret = nvt_sync_deadline(self->pfd, 15, NULL);
	t1 = kst_mono();
	w.stop = 1;
	pthread_join(th, NULL);
	TH_LOG("SYNC took %.1f s during %lu PUTs", t1 - t0, w.puts);
	ASSERT_EQ(0, w.err);
	ASSERT_EQ(0, ret);
	/* It returned while the writer was still going. */
	ASSERT_LT(t1, w.until - 1);
	/* Nothing reads back wrong (losses are capacity_kept's business). */
	tally_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, &t, NULL);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0U, t.other);
	EXPECT_EQ(NPUT, t.exact + t.miss);
}

/*
 * The device keeps what is evicted until it is full: writing a small part
 * of its capacity through a small DRAM share loses nothing.
 */
TEST_F_TIMEOUT(tier, capacity_kept, 120)
{
	long long dev = NSTAT(self->ctl, dev_bytes);
	char name[KVTIER_NAME_MAX];
	struct tally t;
	__u64 n = 1200;
	int pfd;

	ASSERT_LT(0, dev);
	/* At most a quarter of the device. */
	if (n * self->bs > (__u64)dev / 4)
		n = dev / 4 / self->bs;
	kst_name(name, "capacity");
	pfd = kst_pool_create(self->ctl, name, self->bs, n + 16, DRAM);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, put_range(pfd, self->buf, self->bs, 0, n, 1, 0));
	TH_LOG("%llu blocks of %llu KiB put: %lld regions reclaimed, %lld blocks lost",
	       (unsigned long long)n, (unsigned long long)self->bs >> 10,
	       NSTAT(self->ctl, reclaimed), NSTAT(self->ctl, lost_blocks));
	EXPECT_EQ(0, NSTAT(self->ctl, lost_blocks));
	tally_range(pfd, self->buf, self->bs, 0, n, 1, &t, NULL);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(n, t.exact);
	close(pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
}

/*
 * capacity counts the blocks of every tier: once every address holds a
 * block, most of them only on NVMe and none pinned, a PUT is -ENOSPC
 * (userspace-api.rst), and takes nothing away; a DROP frees an address.
 */
TEST_F_TIMEOUT(tier, put_full_capacity_enospc, 120)
{
	const __u32 cap = 4 * DRAM;
	char name[KVTIER_NAME_MAX];
	struct tally t;
	int pfd;

	kst_name(name, "fullcap");
	pfd = kst_pool_create(self->ctl, name, self->bs, cap, DRAM);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, put_range(pfd, self->buf, self->bs, 0, cap, 1, 0));
	ASSERT_LE(cap - DRAM, RES_NVME(pfd));
	ASSERT_EQ(0, PSTAT(pfd, pinned));

	ASSERT_EQ(-ENOSPC, put_range(pfd, self->buf, self->bs, cap, 1, 1, 0));
	tally_range(pfd, self->buf, self->bs, 0, cap, 1, &t, NULL);
	EXPECT_EQ(cap, t.exact);
	EXPECT_EQ(-ENOENT, key_tier(pfd, cap));

	ASSERT_EQ(0, kst_drop1(pfd, K0, 0));
	ASSERT_EQ(0, put_range(pfd, self->buf, self->bs, cap, 1, 1, 0));
	EXPECT_EQ(0, get_check(pfd, self->buf, self->bs, cap, 1));
	close(pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
}

/*
 * A pool whose DRAM share is much smaller than a region: each eviction
 * writes a few blocks, appended to the open region as a segment, so the
 * device holds far more than one DRAM's worth per region and nothing is
 * lost while the device has room.
 */
TEST_F_TIMEOUT(tier, small_dram_packs_regions, 240)
{
	long long dev = NSTAT(self->ctl, dev_bytes);
	long long nr = nvme_nr_regions(self->ctl);
	long long rb = NSTAT(self->ctl, region_bytes);
	char name[KVTIER_NAME_MAX];
	long long used, need;
	struct kvtier_nvme_stat ns;
	struct tally t;
	__u64 n;
	int pfd;

	ASSERT_LT(0, dev);
	ASSERT_LT(0, nr);
	/* More than one DRAM's worth per region: what regions of one write held. */
	n = nr * DRAM * 3 / 2;
	if (n * self->bs > (__u64)dev / 2)
		n = dev / 2 / self->bs;
	kst_name(name, "smalldram");
	pfd = kst_pool_create(self->ctl, name, self->bs, n + 16, DRAM);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, put_range(pfd, self->buf, self->bs, 0, n, 1, 0));
	ASSERT_EQ(0, nvt_sync(pfd, NULL));
	ASSERT_EQ(0, nvt_nstat(self->ctl, &ns));
	used = ns.nr_regions - ns.free_regions;
	need = (n * self->bs + rb - 1) / rb;
	TH_LOG("%llu blocks of %llu KiB, DRAM %u: %lld regions used (%lld of data), %lld lost, host WAF %.3f",
	       (unsigned long long)n, (unsigned long long)self->bs >> 10,
	       DRAM, used, need, (long long)ns.lost_blocks,
	       (double)ns.bytes_written / (double)ns.bytes_demoted);
	EXPECT_EQ(0ULL, ns.lost_blocks);
	EXPECT_EQ(0ULL, ns.reclaimed);
	/* Segment summaries take a page per DRAM's worth at most. */
	EXPECT_GE(need * (DRAM + 1) / DRAM + 2, used);
	tally_range(pfd, self->buf, self->bs, 0, n, 1, &t, NULL);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(n, t.exact);
	close(pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
}

/* REPLACE of a block that has an NVMe copy: the old copy never returns. */
TEST_F(tier, replace_not_undone_by_eviction)
{
	__u64 k, next = 100;
	struct tally t;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	/* Keys 0..3 only on NVMe, 60..63 in DRAM with an NVMe copy. */
	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, 4, 2,
			       KVTIER_PUT_REPLACE));
	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 60, 4, 2,
			       KVTIER_PUT_REPLACE));
	/* Evict them all. */
	for (k = 0; k < NPUT; k++) {
		ASSERT_EQ(0, push_out(self->pfd, self->buf, self->bs, k, &next));
	}
	tally_range(self->pfd, self->buf, self->bs, 0, 4, 2, &t, NULL);
	EXPECT_EQ(4U, t.exact);
	tally_range(self->pfd, self->buf, self->bs, 60, 4, 2, &t, NULL);
	EXPECT_EQ(4U, t.exact);
	tally_range(self->pfd, self->buf, self->bs, 4, 56, 1, &t, NULL);
	EXPECT_EQ(56U, t.exact);

	/* And after detach and attach (the log is replayed oldest first). */
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	for (k = 0; k < NPUT; k++) {
		ASSERT_EQ(0, push_out(self->pfd, self->buf, self->bs, k, &next));
	}
	tally_range(self->pfd, self->buf, self->bs, 0, 4, 2, &t, NULL);
	EXPECT_EQ(4U, t.exact);
	tally_range(self->pfd, self->buf, self->bs, 60, 4, 2, &t, NULL);
	EXPECT_EQ(4U, t.exact);
}

struct reader {
	int pfd;
	__u64 bs;
	volatile int stop;
	unsigned long gets, hits, wrong;
	int err;
};

/* GET keys 0..NPUT-1 round and round: every hit whole and of its key. */
static void *reader_fn(void *arg)
{
	struct reader *r = arg;
	void *buf = kst_alloc(r->bs);
	__u64 i;

	if (!buf) {
		r->err = -ENOMEM;
		return NULL;
	}
	for (i = 0; !r->stop; i++) {
		__u64 k = (i * 37) % NPUT;
		int ret = kst_get1(r->pfd, K0, k, buf, NULL);

		r->gets++;
		if (ret == -ENOENT)
			continue;
		if (ret) {
			r->err = ret;
			break;
		}
		r->hits++;
		if (kst_check(buf, r->bs, K0, k, NULL) != -1)
			r->wrong++;
	}
	kst_free(buf, r->bs);
	return NULL;
}

/*
 * DROP and REPLACE of blocks whose DRAM copy is being evicted (a reader
 * keeps loading blocks back, so clean ones are evicted all the time):
 * each block's pages are freed once, nothing reads back wrong, and the
 * residency counts come back to zero once every key is dropped.
 */
TEST_F_TIMEOUT(tier, drop_races_eviction, 120)
{
	struct reader r = { .pfd = self->pfd, .bs = self->bs };
	__u64 gen[NPUT], k, i, ops = 0;
	struct kvtier_pool_stat st;
	struct tally t;
	pthread_t th;
	double until;
	int ret = 0;

	for (k = 0; k < NPUT; k++)
		gen[k] = 1;
	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(0, pthread_create(&th, NULL, reader_fn, &r));
	until = kst_mono() + 4;
	for (i = 0; kst_mono() < until && !ret; i++) {
		k = kst_mix(i ^ salt) % NPUT;
		if (i % 3 == 0) {
			ret = kst_drop1(self->pfd, K0, k);
			if (ret == -ENOENT)
				ret = 0;
		}
		if (!ret) {
			kst_fill(self->buf, self->bs, K0, k, GEN(++gen[k]));
			ret = kst_one(self->pfd, KVTIER_IOC_PUT, K0, k,
				      self->buf, KVTIER_PUT_REPLACE, NULL);
		}
		/* Clean again, so that evictions keep happening. */
		if (!ret && i % 16 == 15)
			ret = nvt_sync(self->pfd, NULL);
		ops++;
	}
	r.stop = 1;
	pthread_join(th, NULL);
	TH_LOG("%llu drops and replaces, %lu GETs (%lu hits) alongside",
	       (unsigned long long)ops, r.gets, r.hits);
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, r.err);
	EXPECT_EQ(0UL, r.wrong);
	EXPECT_LT(0UL, r.hits);

	/* Each key holds its last generation (or was evicted unwritten). */
	for (k = 0; k < NPUT; k++) {
		tally_range(self->pfd, self->out, self->bs, k, 1, gen[k], &t,
			    NULL);
		EXPECT_EQ(0U, t.wrong + t.other) TH_LOG("key %llu",
							 (unsigned long long)k);
	}
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	EXPECT_GE(DRAM, st.resident[KVTIER_TIER_DRAM]);
	for (k = 0; k < NPUT; k++) {
		ret = kst_drop1(self->pfd, K0, k);
		EXPECT_TRUE(!ret || ret == -ENOENT);
	}
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	EXPECT_EQ(0U, st.resident[KVTIER_TIER_DRAM]);
	EXPECT_EQ(0U, st.resident[KVTIER_TIER_NVME]);
	EXPECT_EQ(0U, st.dirty);
}

/* Detach forgets what is only on NVMe; attach brings the pool back whole. */
TEST_F(tier, reattach_reopens_pool)
{
	struct kvtier_block b[NPUT];
	struct kvtier_pool_stat st;
	unsigned int i, in_dram = 0;
	__u64 written = 1;
	struct tally t;
	__u32 done;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	close(self->pfd);
	self->pfd = -1;
	ASSERT_EQ(0, nvt_detach(self->ctl));

	/* Detached: the pool lives on in DRAM, nothing on NVMe. */
	self->pfd = kst_pool_open(self->ctl, self->name, 0);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	EXPECT_EQ(0U, st.resident[KVTIER_TIER_NVME]);
	EXPECT_GE(DRAM, st.resident[KVTIER_TIER_DRAM]);
	EXPECT_EQ(st.resident[KVTIER_TIER_DRAM], st.dirty);
	lookup_range(self->pfd, b, 0, NPUT, 0, &done);
	for (i = 0; i < NPUT; i++) {
		if (b[i].status == 0) {
			EXPECT_EQ((__u32)KVTIER_TIER_DRAM, b[i].tier);
			in_dram++;
		} else {
			EXPECT_EQ(-ENOENT, b[i].status);
		}
	}
	EXPECT_EQ(st.resident[KVTIER_TIER_DRAM], in_dram);
	close(self->pfd);
	self->pfd = -1;

	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	self->pfd = kst_pool_open(self->ctl, self->name, 0);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	/* Every block has its durable copy again. */
	EXPECT_EQ(NPUT, st.resident[KVTIER_TIER_NVME]);
	EXPECT_EQ(0U, st.dirty);
	tally_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, &t, NULL);
	EXPECT_EQ(NPUT, t.exact);
	EXPECT_EQ(0, PSTAT(self->pfd, bad_reads));
	ASSERT_EQ(0, nvt_sync(self->pfd, &written));
	EXPECT_EQ(0U, written);
	/* Dropping all of them leaves the counters at zero. */
	for (i = 0; i < NPUT; i++) {
		ASSERT_EQ(0, kst_drop1(self->pfd, K0, i));
	}
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	EXPECT_EQ(0U, st.resident[KVTIER_TIER_NVME]);
	EXPECT_EQ(0U, st.resident[KVTIER_TIER_DRAM]);
	EXPECT_EQ(0U, st.dirty);
}

/* A block replaced while detached is not confused with its old copy. */
TEST_F(tier, replace_while_detached)
{
	__u64 next = 100;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(KVTIER_TIER_DRAM, key_tier(self->pfd, NPUT - 1));
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, NPUT - 1, 1, 2,
			       KVTIER_PUT_REPLACE));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	/* Push it out of DRAM, then read it back. */
	ASSERT_EQ(0, push_out(self->pfd, self->buf, self->bs, NPUT - 1, &next));
	ASSERT_EQ(0, get_check(self->pfd, self->buf, self->bs, NPUT - 1, 2));
}

/* What the format document says is where it says. */
TEST_F_TIMEOUT(tier, on_disk_layout, 120)
{
	size_t tlen = NVT_POOL_SLOTS * sizeof(struct nvt_disk_pool);
	struct nvt_disk_pool *table = kst_alloc(tlen), *mine = NULL;
	struct kvtier_nvme_stat ns;
	struct nvt_disk_sb sb;
	struct nvt_loc locs[NPUT];
	unsigned int i;
	int find;

	ASSERT_NE(NULL, table);
	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(0, nvt_nstat(self->ctl, &ns));

	ASSERT_EQ(0, nvt_read_sb(nvt_dev(), &sb));
	EXPECT_EQ(0, memcmp(sb.uuid, ns.uuid, 16));
	EXPECT_EQ(ns.region_bytes, sb.region_bytes);
	EXPECT_EQ(ns.nr_regions, sb.nr_regions);

	ASSERT_EQ(0, nvt_raw_read(nvt_dev(), NVT_POOL_TABLE_OFF, table, tlen));
	for (i = 0; i < NVT_POOL_SLOTS; i++)
		if (table[i].id && !strcmp((char *)table[i].name, self->name))
			mine = &table[i];
	ASSERT_NE(NULL, mine);
	EXPECT_EQ(self->bs, mine->block_size);
	EXPECT_EQ(CAP, mine->capacity);
	EXPECT_EQ(DRAM, mine->dram_blocks);
	EXPECT_EQ(0600U, mine->mode);
	EXPECT_EQ(getuid(), mine->uid);
	EXPECT_EQ(getgid(), mine->gid);
	EXPECT_EQ(0U, mine->parts);

	find = nvt_find_blocks_of(nvt_dev(), 0, K0, 0, NPUT, locs);
	ASSERT_TRUE(find == 0 || find == -ENOENT);
	for (i = 0; i < NPUT; i++) {
		struct nvt_loc loc = locs[i];
		int ret = loc.copies ? 0 : -ENOENT;
		long bad = -2;
		/* One copy, this pool's, inside its region after the summary. */
		bool ok = !ret && loc.copies == 1 && loc.pool_id == mine->id &&
			  loc.pages == self->bs / NVT_DISK_PAGE && loc.seq >= 1 &&
			  !(loc.flags & NVT_REC_PARTS) &&
			  loc.region_off < loc.data_off &&
			  loc.data_off + self->bs <= loc.region_off + ns.region_bytes;

		if (ok && !nvt_raw_read(nvt_dev(), loc.data_off, self->out,
					self->bs))
			bad = kst_check_gen(self->out, self->bs, K0, i, GEN(1));
		if (!ok || bad != -1)
			TH_LOG("key %u: find %d, copies %u, pool %llx (table %llx), pages %u, seq %llu, region at %llu, data at %llu, bad word %ld",
			       i, ret, loc.copies,
			       (unsigned long long)loc.pool_id,
			       (unsigned long long)mine->id, loc.pages,
			       (unsigned long long)loc.seq,
			       (unsigned long long)loc.region_off,
			       (unsigned long long)loc.data_off, bad);
		ASSERT_TRUE(ok);
		ASSERT_EQ(-1, bad);
	}

	/* Destroying the pool clears its slot. */
	close(self->pfd);
	self->pfd = -1;
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, self->name));
	ASSERT_EQ(0, nvt_raw_read(nvt_dev(), NVT_POOL_TABLE_OFF, table, tlen));
	ASSERT_EQ(0U, table[mine - table].id);
	kst_free(table, tlen);
}

/* A pool destroyed while attached does not come back at the next attach. */
TEST_F(tier, destroyed_pool_not_restored)
{
	char name[KVTIER_NAME_MAX];
	int pfd;

	kst_name(name, "gone");
	pfd = kst_pool_create(self->ctl, name, self->bs, CAP, DRAM);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, put_range(pfd, self->buf, self->bs, 0, 16, 1, 0));
	ASSERT_EQ(0, nvt_sync(pfd, NULL));
	close(pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	ASSERT_EQ(-ENOENT, kst_pool_open(self->ctl, name, 0));
	/* A new pool of that name starts empty (another pool id). */
	pfd = kst_pool_create(self->ctl, name, self->bs, CAP, DRAM);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(-ENOENT, kst_lookup1(pfd, K0, 0, NULL));
	close(pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
}

/*
 * Put NPUT blocks, SYNC, and detach: keys 0..NCOLD-1 are then only on the
 * device (checked by LOOKUP before the detach).
 */
static int cold_and_detached(FIXTURE_DATA(tier) *self)
{
	int ret, k;

	ret = put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0);
	if (!ret)
		ret = nvt_sync(self->pfd, NULL);
	for (k = 0; !ret && k < 4; k++)
		if (key_tier(self->pfd, k) != KVTIER_TIER_NVME)
			ret = -EPROTO;
	if (!ret)
		ret = nvt_detach(self->ctl);
	return ret;
}

/* One flipped byte in a block's data: a miss, counted in bad_reads. */
TEST_F(tier, corrupt_data_is_miss)
{
	struct nvt_loc loc;
	struct tally t;

	ASSERT_EQ(0, cold_and_detached(self));
	ASSERT_EQ(0, nvt_find_block(nvt_dev(), K0, 0, &loc));
	ASSERT_EQ(0, nvt_raw_read(nvt_dev(), loc.data_off, self->out, self->bs));
	ASSERT_EQ(-1, kst_check_gen(self->out, self->bs, K0, 0, GEN(1)));
	ASSERT_EQ(0, nvt_raw_flip(nvt_dev(), loc.data_off + self->bs / 2 + 5,
				  0x10));

	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	ASSERT_EQ(0, PSTAT(self->pfd, bad_reads));
	ASSERT_EQ(-ENOENT, get_check(self->pfd, self->buf, self->bs, 0, 1));
	ASSERT_EQ(1, PSTAT(self->pfd, bad_reads));
	/* Dropped: a plain miss from now on. */
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, 0, NULL));
	ASSERT_EQ(-ENOENT, get_check(self->pfd, self->buf, self->bs, 0, 1));
	ASSERT_EQ(1, PSTAT(self->pfd, bad_reads));
	tally_range(self->pfd, self->buf, self->bs, 1, NPUT - 1, 1, &t, NULL);
	EXPECT_EQ(NPUT - 1, t.exact);
	EXPECT_EQ(1, PSTAT(self->pfd, bad_reads));
}

/*
 * The same read straight into the caller's buffer: the bytes that landed
 * there do not verify, the block is read again through DRAM, which drops
 * it; the buffer is left zeroed, not with the bad bytes.
 */
TEST_F(tier, direct_get_corrupt_is_miss)
{
	struct kvtier_block b;
	struct nvt_loc loc;
	__u64 i;

	ASSERT_EQ(0, cold_and_detached(self));
	ASSERT_EQ(0, nvt_find_block(nvt_dev(), K0, 0, &loc));
	ASSERT_EQ(0, nvt_raw_flip(nvt_dev(), loc.data_off + self->bs / 2 + 5,
				  0x10));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));

	memset(self->out, 0x5a, self->bs);
	kst_blk(&b, K0, 0, self->out);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_GET, &b, 1,
			       KVTIER_GET_DIRECT, NULL));
	ASSERT_EQ(-ENOENT, b.status);
	for (i = 0; i < self->bs && !self->out[i]; i++)
		;
	EXPECT_EQ(self->bs, i);
	EXPECT_EQ(1, PSTAT(self->pfd, bad_reads));
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, 0, NULL));

	/* The others come straight from NVMe, exact. */
	kst_blk(&b, K0, 1, self->out);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_GET, &b, 1,
			       KVTIER_GET_DIRECT, NULL));
	ASSERT_EQ(0, b.status);
	EXPECT_EQ(KVTIER_TIER_NVME, (int)b.tier);
	EXPECT_EQ(-1, kst_check_gen(self->out, self->bs, K0, 1, GEN(1)));
}

/* The same through LOOKUP with LOAD and through an mmap fault. */
TEST_F_TIMEOUT(tier, corrupt_data_load_and_fault, 120)
{
	size_t len = (size_t)CAP * self->bs;
	struct kvtier_block b[3];
	struct nvt_loc locs[2];
	__u32 done;
	char *map;
	int k;

	ASSERT_EQ(0, cold_and_detached(self));
	/* Keys 1 and 2 in one scan of the device (slow under KASAN). */
	ASSERT_EQ(0, nvt_find_blocks_of(nvt_dev(), 0, K0, 1, 2, locs));
	for (k = 0; k < 2; k++)
		ASSERT_EQ(0, nvt_raw_flip(nvt_dev(), locs[k].data_off + 100, 0x01));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));

	/* LOOKUP LOAD [0, 1, 3]: 0 loads, 1 fails to verify and ends it. */
	kst_blk(&b[0], K0, 0, NULL);
	kst_blk(&b[1], K0, 1, NULL);
	kst_blk(&b[2], K0, 3, NULL);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_LOOKUP, b, 3,
			       KVTIER_LOOKUP_LOAD, &done));
	EXPECT_EQ(1U, done);
	EXPECT_EQ((__u32)KVTIER_TIER_DRAM, b[0].tier);
	EXPECT_NE(0, b[1].status);
	EXPECT_EQ((__u32)KVTIER_TIER_NONE, b[1].tier);
	EXPECT_EQ(1, PSTAT(self->pfd, bad_reads));
	EXPECT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, 1, NULL));

	/* A fault on key 2 (corrupt): SIGBUS, never wrong bytes. */
	ASSERT_EQ(0, kst_lookup1(self->pfd, K0, 2, &b[0]));
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, self->pfd, 0);
	ASSERT_NE(MAP_FAILED, map);
	EXPECT_EQ(SIGBUS, kst_probe_read(map + b[0].addr * self->bs, self->out,
				     self->bs));
	EXPECT_EQ(2, PSTAT(self->pfd, bad_reads));
	EXPECT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, 2, NULL));
	munmap(map, len);
	ASSERT_EQ(0, get_check(self->pfd, self->buf, self->bs, 0, 1));
	ASSERT_EQ(0, get_check(self->pfd, self->buf, self->bs, 3, 1));
}

/* A region whose summary is corrupt is empty: its blocks are misses. */
TEST_F_TIMEOUT(tier, corrupt_summary_drops_region, 120)
{
	__u64 in_region[NPUT] = { 0 };
	struct nvt_loc loc, locs[NPUT];
	unsigned int k;
	int ret;

	ASSERT_EQ(0, cold_and_detached(self));
	/* One scan of the device for all of them: 64 are slow under KASAN. */
	ASSERT_EQ(0, nvt_find_blocks_of(nvt_dev(), 0, K0, 0, NPUT, locs));
	loc = locs[0];
	for (k = 0; k < NPUT; k++)
		in_region[k] = locs[k].region == loc.region;
	/* One bit of the first record's key. */
	ASSERT_EQ(0, nvt_raw_flip(nvt_dev(), loc.region_off + 64 + 8, 0x80));

	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	for (k = 0; k < NPUT; k++) {
		ret = get_check(self->pfd, self->buf, self->bs, k, 1);
		if (ret && !(ret == -ENOENT && in_region[k]))
			TH_LOG("key %u (in the region: %llu): %d", k,
			       (unsigned long long)in_region[k], ret);
		if (ret == -ENOENT) {
			ASSERT_TRUE(!!in_region[k]);
		} else {
			ASSERT_EQ(0, ret);
		}
	}
	ASSERT_EQ(-ENOENT, get_check(self->pfd, self->buf, self->bs, 0, 1));
	/* Nothing was read that did not verify: the region was skipped. */
	EXPECT_EQ(0, PSTAT(self->pfd, bad_reads));
}

/* Another block's bytes at a block's place: a miss. */
TEST_F(tier, misplaced_copy_is_miss)
{
	struct nvt_loc a, b;

	ASSERT_EQ(0, cold_and_detached(self));
	ASSERT_EQ(0, nvt_find_block(nvt_dev(), K0, 0, &a));
	ASSERT_EQ(0, nvt_find_block(nvt_dev(), K0, 1, &b));
	ASSERT_EQ(0, nvt_raw_read(nvt_dev(), a.data_off, self->out, self->bs));
	ASSERT_EQ(0, nvt_raw_write(nvt_dev(), b.data_off, self->out, self->bs));

	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	ASSERT_EQ(-ENOENT, get_check(self->pfd, self->buf, self->bs, 1, 1));
	ASSERT_EQ(1, PSTAT(self->pfd, bad_reads));
	ASSERT_EQ(0, get_check(self->pfd, self->buf, self->bs, 0, 1));
}

/*
 * Every fresh allocation of the segment writer fails: it goes on from the
 * device's reserve, one segment at a time. Evictions still demote instead
 * of dropping, SYNC ends, every block comes back exact and detach does not
 * wait for ever (a writer that gave up left its queue full and them all
 * waiting). Needs the fail_writer point; skipped without it.
 */
TEST_F_TIMEOUT(tier, writer_out_of_memory, 180)
{
	const long long times = 1000000;
	struct kvtier_pool_stat st;
	long long left;
	struct tally t;
	int put, sync;

	if (access(FAIL_WRITER "times", W_OK))
		SKIP(return, "no %s: kernel without CONFIG_FAULT_INJECTION_DEBUG_FS",
		     FAIL_WRITER);
	ASSERT_EQ(0, fail_writer_set("verbose", 0));
	ASSERT_EQ(0, fail_writer_set("interval", 1));
	ASSERT_EQ(0, fail_writer_set("times", times));
	ASSERT_EQ(0, fail_writer_set("probability", 100));
	put = put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0);
	sync = put ? put : nvt_sync_deadline(self->pfd, 60, NULL);
	left = fail_writer_get("times");
	ASSERT_EQ(0, fail_writer_set("probability", 0));
	ASSERT_EQ(0, put);
	ASSERT_EQ(0, sync);
	/* Failures were injected: every segment came from the reserve. */
	EXPECT_LT(left, times);
	EXPECT_LE(0, left);
	TH_LOG("%lld writer allocations failed", times - left);

	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	EXPECT_EQ(0U, st.dirty);
	EXPECT_LE(NCOLD, st.demotions);
	EXPECT_EQ(NPUT, st.resident[KVTIER_TIER_NVME]);
	tally_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, &t, NULL);
	EXPECT_EQ(NPUT, t.exact);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0, nvt_detach_deadline(60));
}

/* ==== a load that cannot get DRAM ======================================== */

FIXTURE(pinned) {
	struct nvt_fix;
};

/* The device attached; a pool of 8 blocks of 4 KiB, 2 of them in DRAM. */
static const struct nvt_cfg pinned_cfg = {
	.block_size = KST_PAGE, .tag = "pinned", .capacity = 8,
	.dram_blocks = 2, .attach = true,
};

FIXTURE_SETUP(pinned)
{
	nvt_setup(_metadata, NVT_FIX(self), &pinned_cfg);
}

FIXTURE_TEARDOWN(pinned)
{
	nvt_teardown(NVT_FIX(self));
}

/*
 * Found by the fuzzer's burst (seed 2): a block only on NVMe is wanted
 * while every DRAM block of its pool is pinned. Nothing can be evicted, so
 * GET must end with -ENOSPC ("no DRAM can be freed: all pinned or busy");
 * it must not wait for I/O that nobody started. Run in a child with a
 * deadline.
 */
static int child_get_status(int pfd, __u64 k0, __u64 k1)
{
	char *buf = kst_alloc(KST_PAGE);

	if (!buf)
		return 101;
	return -kst_get1(pfd, k0, k1, buf, NULL);
}

TEST_F_TIMEOUT(pinned, load_all_pinned, 120)
{
	char *buf = self->buf;
	int pfd = self->pfd;
	int rc, i;
	pid_t pid;
	__u64 written;
	struct kvtier_sync sy;
	struct kvtier_block blk;

	/* two blocks, durable; a third evicts the older one to NVMe */
	for (i = 0; i < 2; i++) {
		kst_fill(buf, KST_PAGE, 0x1b, i, 1);
		ASSERT_EQ(0, kst_put1(pfd, 0x1b, i, buf, NULL));
	}
	memset(&sy, 0, sizeof(sy));
	ASSERT_EQ(0, kst_ioctl(pfd, KVTIER_IOC_SYNC, &sy));
	written = sy.written;
	EXPECT_EQ(2ULL, written);
	kst_fill(buf, KST_PAGE, 0x1b, 2, 1);
	ASSERT_EQ(0, kst_put1(pfd, 0x1b, 2, buf, NULL));
	ASSERT_EQ(0, kst_lookup1(pfd, 0x1b, 0, &blk));
	ASSERT_EQ((__u32)KVTIER_TIER_NVME, blk.tier);
	/* every DRAM block pinned */
	ASSERT_EQ(0, kst_pin1(pfd, 0x1b, 1));
	ASSERT_EQ(0, kst_pin1(pfd, 0x1b, 2));
	pid = kst_fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(child_get_status(pfd, 0x1b, 0));
	for (i = 0; i < 200; i++) {
		if (waitpid(pid, &rc, WNOHANG) == pid)
			break;
		usleep(100000);
	}
	if (i == 200) {
		kst_dump_stacks(pid, 1);
		kill(pid, SIGKILL);
		waitpid(pid, &rc, 0);
	}
	EXPECT_LT(i, 200) TH_LOG("GET of an NVMe block, all DRAM pinned: hangs");
	if (i < 200)
		EXPECT_EQ(ENOSPC, WEXITSTATUS(rc));
	/* unpinned, it loads */
	ASSERT_EQ(0, kst_unpin1(pfd, 0x1b, 1));
	ASSERT_EQ(0, kst_get1(pfd, 0x1b, 0, buf, NULL));
	EXPECT_EQ(-1, kst_check_gen(buf, KST_PAGE, 0x1b, 0, 1));
}

/* The device's completed cache flushes (/sys/block/DEV/stat), or -errno. */
static long long dev_flushes(const char *dev)
{
	unsigned long long v[16];
	const char *name = strrchr(dev, '/');
	char path[128], buf[512];
	int ret;

	snprintf(path, sizeof(path), "/sys/block/%s/stat", name ? name + 1 : dev);
	ret = kst_read_file(path, buf, sizeof(buf));
	if (ret < 0)
		return ret;
	/* reads (4), writes (4), in flight, io ticks, queue time, discards (4), flushes */
	if (sscanf(buf, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
		   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
		   &v[8], &v[9], &v[10], &v[11], &v[12], &v[13], &v[14],
		   &v[15]) != 16)
		return -ENODATA;
	return (long long)v[15];
}

/*
 * Block data goes without FUA; a cache flush ahead of each segment's
 * summary makes it durable before the summary that names it. Without the
 * flush, a drive with a volatile write cache could keep a summary through
 * a power cut and lose the data it vouches for.
 */
TEST_F(tier, segment_summary_after_flush)
{
	const char *name = strrchr(nvt_dev(), '/');
	char path[128], wc[32] = "";
	long long before, after;
	__u32 i;

	snprintf(path, sizeof(path), "/sys/block/%s/queue/write_cache",
		 name ? name + 1 : nvt_dev());
	if (kst_read_file(path, wc, sizeof(wc)) < 0 ||
	    strncmp(wc, "write back", 10))
		SKIP(return, "no volatile write cache (%s): flushes are no-ops",
		     wc);
	before = dev_flushes(nvt_dev());
	ASSERT_LE(0, before);
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, i, 1, 1,
				       0));
		ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	}
	after = dev_flushes(nvt_dev());
	TH_LOG("8 segments of one block: %lld cache flushes", after - before);
	EXPECT_LE(8, after - before);
}

/* ==== latency histograms ================================================ */

#define LAT_BUCKETS	96

/* Bucket i's lower edge in us: log-linear, four buckets a power of two. */
static long long lat_lo(int i)
{
	return i < 4 ? i : (long long)(4 + i % 4) << (i / 4 - 1);
}

/* The sum of one histogram of /sys/kernel/kvtier/nvme_*_latency. */
static int lat_hist(const char *op, long long h[LAT_BUCKETS], long long *sum)
{
	char path[128];
	int i, n;

	snprintf(path, sizeof(path), KST_SYSFS_DIR "/nvme_%s_latency", op);
	n = kst_read_cols(path, h, LAT_BUCKETS, 0);
	if (n != LAT_BUCKETS)
		return n < 0 ? n : -EPROTO;
	for (*sum = 0, i = 0; i < LAT_BUCKETS; i++)
		*sum += h[i];
	return 0;
}

/* The first bucket past @us that gained, or -1. */
static int lat_beyond(const long long *a, const long long *b, double us)
{
	int i;

	for (i = 0; i < LAT_BUCKETS; i++)
		if ((double)lat_lo(i) > us && a[i] != b[i])
			return i;
	return -1;
}

/*
 * nvme_write_latency counts the segments written, nvme_read_latency one
 * read a block loaded, each in the bucket of its microseconds: none in a
 * bucket whose lower edge is beyond the whole phase's time.
 */
TEST_F(tier, latency_histograms)
{
	long long a[LAT_BUCKETS], b[LAT_BUCKETS], sa, sb;
	struct kvtier_pool_stat s0, s1;
	double t, us;
	struct tally tl;
	int i;

	ASSERT_EQ(0, lat_hist("write", a, &sa));
	t = kst_mono();
	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	us = (kst_mono() - t) * 1e6;
	ASSERT_EQ(0, lat_hist("write", b, &sb));
	EXPECT_LE(1, sb - sa);
	i = lat_beyond(a, b, us);
	EXPECT_EQ(-1, i)
		TH_LOG("write bucket %d (%lld us) gained %lld in a phase of %.0f us",
		       i, lat_lo(i), b[i] - a[i], us);

	ASSERT_EQ(0, kst_stat(self->pfd, &s0));
	ASSERT_EQ(0, lat_hist("read", a, &sa));
	t = kst_mono();
	tally_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, &tl, NULL);
	us = (kst_mono() - t) * 1e6;
	ASSERT_EQ(0, lat_hist("read", b, &sb));
	ASSERT_EQ(0, kst_stat(self->pfd, &s1));
	EXPECT_EQ(NPUT, tl.exact);
	EXPECT_LE(NCOLD, s1.promotions - s0.promotions);
	EXPECT_EQ((long long)(s1.promotions - s0.promotions +
			      s1.bad_reads - s0.bad_reads), sb - sa);
	i = lat_beyond(a, b, us);
	EXPECT_EQ(-1, i)
		TH_LOG("read bucket %d (%lld us) gained %lld in a phase of %.0f us",
		       i, lat_lo(i), b[i] - a[i], us);
}

TEST_HARNESS_MAIN
