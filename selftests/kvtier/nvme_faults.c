// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier NVMe tier (KVTIER_F_NVME) under faults and on odd devices: two
 * devices and the device limit, a log that wraps round on a small device,
 * faults injected with device-mapper (dm-flakey, the error target,
 * dm-delay; an attach held in its replay), a device too small for what is
 * written, and power cuts at every point of a write log (dm-log-writes).
 *
 * Runs as root on /dev/nvme0n1 (or $KVTIER_NVME_DEV), whose content it
 * destroys, and /dev/nvme1n1 for the cases that need a second drive; the
 * cases are skipped when a device or dm target is missing.
 */
#include <poll.h>

#include "nvme_fixture.h"

/* ==== several devices ==================================================== */

#define DEV2		"/dev/nvme1n1"
#define MULTI_BS	(64 * KST_KIB)
#define MULTI_N		600U

FIXTURE(multi) {
	struct nvt_fix;
};

/* Both devices attached, a pool of 2048 blocks. */
static const struct nvt_cfg multi_cfg = {
	.block_size = MULTI_BS, .tag = "multi", .capacity = 2048,
	.dram_blocks = DRAM, .attach = true, .dev2 = DEV2, .attach2 = true,
};

FIXTURE_SETUP(multi)
{
	nvt_setup(_metadata, NVT_FIX(self), &multi_cfg);
}

FIXTURE_TEARDOWN(multi)
{
	nvt_teardown(NVT_FIX(self));
}

static int nstat_dev(int ctl, __u32 index, struct kvtier_nvme_stat *ns)
{
	memset(ns, 0, sizeof(*ns));
	ns->flags = KVTIER_NVME_STAT_DEV;
	ns->dev_index = index;
	return kst_ioctl(ctl, KVTIER_IOC_NVME_STAT, ns);
}

static int detach_path(int ctl, const char *path)
{
	struct kvtier_nvme_detach d;

	memset(&d, 0, sizeof(d));
	d.path = (__u64)(uintptr_t)path;
	return kst_ioctl(ctl, KVTIER_IOC_NVME_DETACH, &d);
}

/* Two devices: demotion uses both; the sum is the sum of the devices. */
TEST_F_TIMEOUT(multi, demotion_spreads, 240)
{
	struct kvtier_nvme_stat all, d0, d1;
	struct tally t;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, MULTI_BS, 0, MULTI_N, 1,
			       0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(0, nvt_nstat(self->ctl, &all));
	ASSERT_EQ(0, nstat_dev(self->ctl, 0, &d0));
	ASSERT_EQ(0, nstat_dev(self->ctl, 1, &d1));
	TH_LOG("demoted: device 0 %llu MiB, device 1 %llu MiB",
	       (unsigned long long)d0.bytes_demoted >> 20,
	       (unsigned long long)d1.bytes_demoted >> 20);
	EXPECT_EQ(2U, all.attached);
	EXPECT_EQ(1U, d0.attached);
	EXPECT_EQ(1U, d1.attached);
	EXPECT_LT(0ULL, d0.bytes_demoted);
	EXPECT_LT(0ULL, d1.bytes_demoted);
	EXPECT_EQ(d0.bytes_demoted + d1.bytes_demoted, all.bytes_demoted);
	EXPECT_EQ(d0.dev_bytes + d1.dev_bytes, all.dev_bytes);
	EXPECT_EQ(d0.nr_regions + d1.nr_regions, all.nr_regions);
	EXPECT_NE(0, memcmp(d0.uuid, d1.uuid, 16));
	tally_range(self->pfd, self->buf, MULTI_BS, 0, MULTI_N, 1, &t, NULL);
	EXPECT_EQ(MULTI_N, t.exact);
	EXPECT_EQ(0U, t.wrong);
}

/*
 * Detaching one device: blocks only there are misses, the others stay;
 * attached again, its blocks come back exact.
 */
TEST_F_TIMEOUT(multi, detach_one_attach_again, 240)
{
	struct tally t;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, MULTI_BS, 0, MULTI_N, 1,
			       0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(-EBUSY, nvt_attach(self->ctl, DEV2, 0, 0));
	ASSERT_EQ(0, detach_path(self->ctl, DEV2));
	ASSERT_EQ(-ENODEV, detach_path(self->ctl, DEV2));
	ASSERT_EQ(1, nvt_attached(self->ctl));
	tally_range(self->pfd, self->buf, MULTI_BS, 0, MULTI_N, 1, &t, NULL);
	TH_LOG("device 1 detached: %u exact, %u misses", t.exact, t.miss);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0U, t.eio);
	EXPECT_LT(0U, t.exact);
	EXPECT_LT(0U, t.miss);
	EXPECT_EQ(MULTI_N, t.exact + t.miss);

	/* The pool is recorded on it: its blocks there come back. */
	ASSERT_EQ(0, nvt_attach(self->ctl, DEV2, 0, 0));
	ASSERT_EQ(2, nvt_attached(self->ctl));
	tally_range(self->pfd, self->buf, MULTI_BS, 0, MULTI_N, 1, &t, NULL);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(MULTI_N, t.exact);
}

/* A pool created with one device is recorded on a device attached later. */
TEST_F_TIMEOUT(multi, pool_recorded_on_new_device, 240)
{
	struct tally t;

	ASSERT_EQ(0, detach_path(self->ctl, DEV2));
	ASSERT_EQ(0, nvt_attach(self->ctl, DEV2, KVTIER_NVME_FORMAT, 0));
	ASSERT_EQ(0, put_range(self->pfd, self->buf, MULTI_BS, 0, MULTI_N, 1,
			       0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	/* Both gone, then back: every block from one device or the other. */
	close(self->pfd);
	self->pfd = -1;
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(0, nvt_attached(self->ctl));
	ASSERT_EQ(0, nvt_attach(self->ctl, DEV2, 0, 0));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	self->pfd = kst_pool_open(self->ctl, self->name, 0);
	ASSERT_LE(0, self->pfd);
	tally_range(self->pfd, self->buf, MULTI_BS, 0, MULTI_N, 1, &t, NULL);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(MULTI_N, t.exact);
}

/* At most KVTIER_NVME_MAX devices; the same device once. */
TEST_F(multi, device_limit)
{
	static const char * const names[] = { DM_M0, DM_M1, DM_M2, DM_M3 };
	char table[256], path[64];
	unsigned int i;

	if (!nvt_dm_target(NVT_DM_ERROR))
		SKIP(return, "no device-mapper");
	ASSERT_EQ(-EBUSY, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	close(self->pfd);
	self->pfd = -1;
	ASSERT_EQ(0, detach_path(self->ctl, DEV2));
	/* Four 64 MiB slices of the second drive. */
	for (i = 0; i < 4; i++) {
		snprintf(table, sizeof(table), "0 131072 linear %s %u", DEV2,
			 i * 131072);
		ASSERT_EQ(0, nvt_dm_create(names[i], table));
	}
	for (i = 0; i < 4; i++) {
		int want = i < 3 ? 0 : -EBUSY;

		snprintf(path, sizeof(path), "/dev/mapper/%s", names[i]);
		ASSERT_EQ(want, nvt_attach(self->ctl, path, KVTIER_NVME_FORMAT,
					   1024));
	}
	ASSERT_EQ(KVTIER_NVME_MAX, nvt_attached(self->ctl));
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(0, nvt_attached(self->ctl));
}

/* ==== a log that wraps round: a small device ============================ */

FIXTURE(wrap) {
	struct nvt_fix;
	char policy[16];	/* the parameter to put back, if changed */
	char clean_first[8];	/* policy_clean_first to put back, if read */
};

#define WRAP_MIB	64	/* device size */
#define WRAP_BS		(64 * KST_KIB)
#define WRAP_DRAM	32U
#define WRAP_HOT	16U

/* A 64 MiB dm device with 1 MiB regions; a pool of 4096 blocks. */
static const struct nvt_cfg wrap_cfg = {
	.block_size = WRAP_BS, .tag = "wrap", .capacity = 4096,
	.dram_blocks = WRAP_DRAM, .dm = DM_SMALL, .dm_mib = WRAP_MIB,
	.attach = true, .region_kib = 1024, .out = true,
};

FIXTURE_SETUP(wrap)
{
	nvt_setup(_metadata, NVT_FIX(self), &wrap_cfg);
}

FIXTURE_TEARDOWN(wrap)
{
	nvt_teardown(NVT_FIX(self));
	if (self->policy[0])
		kst_write_str(KST_PARAM_DIR "/policy", self->policy);
	if (self->clean_first[0])
		kst_write_str(KST_PARAM_DIR "/policy_clean_first",
			      self->clean_first);
}

/*
 * Blocks in use survive the log wrapping round: a hot set read between
 * batches of cold PUTs keeps its copies out of the regions being reclaimed
 * (rescued while still in DRAM), while cold blocks are reclaimed. With
 * policy=lru, where the hot blocks come round to the cold end as victims
 * and rescue is what keeps them (with seg, the default, they stay in main
 * and are never victims): the pool takes the policy at its first PUT.
 */
TEST_F_TIMEOUT(wrap, hot_blocks_survive, 300)
{
	long long nr = nvme_nr_regions(self->ctl), cold_total;
	__u64 next = 1000, round = 0;
	struct kvtier_nvme_stat ns;
	unsigned int misses = 0;
	struct tally t;
	char *nl;

	ASSERT_LT(0, nr);
	ASSERT_LT(0, kst_read_file(KST_PARAM_DIR "/policy", self->policy,
				   sizeof(self->policy)));
	nl = strchr(self->policy, '\n');
	if (nl)
		*nl = 0;
	ASSERT_EQ(0, kst_write_str(KST_PARAM_DIR "/policy", "lru"));
	ASSERT_EQ(0, put_range(self->pfd, self->buf, WRAP_BS, 0, WRAP_HOT, 1,
			       0));
	/* Enough cold data to go round the log twice and a half. */
	cold_total = nr * (1024 * KST_KIB / WRAP_BS) * 5 / 2;
	while (next - 1000 < (__u64)cold_total) {
		ASSERT_EQ(0, put_range(self->pfd, self->buf, WRAP_BS, next,
				       3 * WRAP_HOT, 1, 0));
		next += 3 * WRAP_HOT;
		tally_range(self->pfd, self->buf, WRAP_BS, 0, WRAP_HOT, 1, &t,
			    NULL);
		ASSERT_EQ(0U, t.wrong);
		if (t.exact != WRAP_HOT && !misses++)
			TH_LOG("round %llu: %u of %u hot blocks exact",
			       (unsigned long long)round, t.exact, WRAP_HOT);
		round++;
	}
	ASSERT_EQ(0, nvt_nstat(self->ctl, &ns));
	TH_LOG("%llu rounds, %llu cold blocks: %llu regions reclaimed, %llu blocks lost, %llu rescued",
	       (unsigned long long)round, (unsigned long long)(next - 1000),
	       (unsigned long long)ns.reclaimed,
	       (unsigned long long)ns.lost_blocks,
	       (unsigned long long)ns.rescued);
	EXPECT_LT((__u64)nr, ns.reclaimed);	/* the log went round */
	EXPECT_LT(0ULL, ns.lost_blocks);	/* cold blocks went */
	EXPECT_LT(0ULL, ns.rescued);
	EXPECT_EQ(0U, misses);
	/* Cold blocks still held read back exact or miss, never wrong. */
	tally_range(self->pfd, self->buf, WRAP_BS, 1000, next - 1000, 1, &t,
		    NULL);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0U, t.eio);
	EXPECT_LT(0U, t.exact);
}

/*
 * Block @k of the relocation cases that compress, of generation 1:
 * kst_fill()'s first 512 bytes over and over.
 */
static void reloc_zfill(void *buf, size_t size, __u64 k)
{
	size_t off;

	kst_fill(buf, 512, K0, k, GEN(1));
	for (off = 512; off < size; off += 512)
		memcpy((char *)buf + off, buf, 512);
}

static int reloc_put(int pfd, void *buf, __u64 first, __u64 n, bool z)
{
	if (z)
		return put_filled(pfd, buf, WRAP_BS, first, n, reloc_zfill);
	return put_range(pfd, buf, WRAP_BS, first, n, 1, 0);
}

/* tally_range() of blocks reloc_put() made; @out: a block's room. */
static void reloc_tally(int pfd, char *buf, char *out, __u64 first,
			__u64 n, bool z, struct tally *t)
{
	__u64 k;
	int ret;

	if (!z) {
		tally_range(pfd, buf, WRAP_BS, first, n, 1, t, NULL);
		return;
	}
	memset(t, 0, sizeof(*t));
	for (k = first; k < first + n; k++) {
		memset(out, 0xa5, WRAP_BS);
		ret = kst_get1(pfd, K0, k, out, NULL);
		if (!ret) {
			reloc_zfill(buf, WRAP_BS, k);
			ret = memcmp(buf, out, WRAP_BS) ? -EILSEQ : 0;
		}
		t->exact += !ret;
		t->miss += ret == -ENOENT;
		t->eio += ret == -EIO;
		t->wrong += ret == -EILSEQ;
		t->other += ret && ret != -ENOENT && ret != -EIO &&
			    ret != -EILSEQ;
	}
}

/*
 * For the relocation cases (policy_clean_first): a pool of the test's
 * own, named @name, which takes the parameter at its first PUT; with
 * @z, it compresses with lz4 and its blocks compress (reloc_zfill());
 * with @parts, its copies carry part tables of that many parts.
 * Set A (keys 0..15) and, with @b, set B (100..115) are pushed out to
 * NVMe only; A is read back, and given back by the shrinker
 * (drop_caches): a stream of cold PUTs would not push it out, blocks
 * cleaned ahead go first. Returns the pool's fd (-ENOPKG: no lz4); *@next
 * is the next cold key.
 */
static int reloc_setup(struct __test_metadata *_metadata,
		       FIXTURE_DATA(wrap) *self, char *name, bool b, bool z,
		       __u32 parts, __u64 *next)
{
	struct kvtier_pool_create c;
	struct tally a;
	int pfd = -1, i;
	__u64 k;

	*next = 1000;
	ASSERT_LT(0, kst_read_file(KST_PARAM_DIR "/policy_clean_first",
				   self->clean_first,
				   sizeof(self->clean_first))) return -1;
	ASSERT_EQ(0, kst_write_str(KST_PARAM_DIR "/policy_clean_first",
				   "Y")) return -1;
	kst_name(name, "reloc");
	kst_create_init(&c, name, WRAP_BS, 4096, WRAP_DRAM);
	if (z)
		c.compress = KVTIER_COMPRESS_LZ4;
	c.parts = parts;
	pfd = kst_create(self->ctl, &c);
	if (pfd == -ENOPKG)
		return pfd;
	ASSERT_LE(0, pfd) return -1;
	ASSERT_EQ(0, reloc_put(pfd, self->buf, 0, WRAP_HOT, z)) return -1;
	if (b)
		ASSERT_EQ(0, reloc_put(pfd, self->buf, 100, WRAP_HOT, z))
			return -1;
	for (k = 0; k < WRAP_HOT; k++) {
		ASSERT_EQ(0, push_out(pfd, self->buf, WRAP_BS, k, next))
			return -1;
		if (b)
			ASSERT_EQ(0, push_out(pfd, self->buf, WRAP_BS,
					      100 + k, next)) return -1;
	}
	reloc_tally(pfd, self->buf, self->out, 0, WRAP_HOT, z, &a);
	ASSERT_EQ(WRAP_HOT, a.exact) return -1;
	for (i = 0, k = 0; i < 5 && k < WRAP_HOT; i++) {
		ASSERT_EQ(0, kst_write_str("/proc/sys/vm/drop_caches", "2"))
			return -1;
		for (k = 0; k < WRAP_HOT; k++)
			if (key_tier(pfd, k) != KVTIER_TIER_NVME)
				break;
	}
	ASSERT_EQ(WRAP_HOT, k) return -1;
	return pfd;
}

/*
 * The end of a relocation case: every block of A (read back) exact, none
 * of B (never read), at least A rescued, nothing wrong; the pool goes.
 */
static void reloc_end(struct __test_metadata *_metadata,
		      FIXTURE_DATA(wrap) *self, int pfd, const char *name,
		      const struct tally *a, const struct tally *b,
		      long long rescued)
{
	EXPECT_EQ(WRAP_HOT, a->exact);
	EXPECT_EQ(0U, b->exact);
	EXPECT_LE((long long)WRAP_HOT, rescued);
	EXPECT_EQ(0U, a->wrong + b->wrong);
	close(pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
}

/*
 * Relocation at reclaim (policy_clean_first): the log runs as a CLOCK.
 * After reloc_setup(), with set B, cold blocks are written for 1.3 times
 * the log: the regions of A and B are reclaimed once, and A, written
 * again then at the head of the log, is not reclaimed again. Every block
 * of A (read back) reads back exact; none of B (never read) does.
 */
TEST_F_TIMEOUT(wrap, read_back_blocks_relocated, 300)
{
	long long nr = nvme_nr_regions(self->ctl), r0, rescued;
	__u64 next, cold, per_region;
	char name[KVTIER_NAME_MAX];
	struct tally a, b;
	int pfd;

	ASSERT_LT(0, nr);
	pfd = reloc_setup(_metadata, self, name, true, false, 0, &next);
	ASSERT_LE(0, pfd);
	per_region = NSTAT(self->ctl, region_bytes) / WRAP_BS;
	cold = nr * per_region * 13 / 10;
	r0 = NSTAT(self->ctl, reclaimed);
	rescued = NSTAT(self->ctl, rescued);
	ASSERT_EQ(0, put_range(pfd, self->buf, WRAP_BS, next, cold, 1, 0));
	r0 = NSTAT(self->ctl, reclaimed) - r0;
	rescued = NSTAT(self->ctl, rescued) - rescued;
	tally_range(pfd, self->buf, WRAP_BS, 0, WRAP_HOT, 1, &a, NULL);
	tally_range(pfd, self->buf, WRAP_BS, 100, WRAP_HOT, 1, &b, NULL);
	TH_LOG("read back: %u/%u exact; not read: %u/%u; %lld of %lld regions reclaimed, %lld blocks rescued",
	       a.exact, WRAP_HOT, b.exact, WRAP_HOT, r0, nr, rescued);
	reloc_end(_metadata, self, pfd, name, &a, &b, rescued);
}

/*
 * After reloc_setup(), synced: where each of A's copies is (@before),
 * then cold blocks for 1.3 times the log, synced, and where each is
 * then (@after, WRAP_HOT of each); *@seq0 the newest sequence of
 * @before, *@rescued the blocks rescued meanwhile.
 */
static void reloc_wrap(struct __test_metadata *_metadata,
		       FIXTURE_DATA(wrap) *self, int pfd, __u64 next,
		       struct nvt_loc *before, struct nvt_loc *after,
		       __u64 *seq0, long long *rescued)
{
	long long nr = nvme_nr_regions(self->ctl);
	__u64 k, cold;

	ASSERT_LT(0, nr);
	*seq0 = 0;
	ASSERT_EQ(0, nvt_sync(pfd, NULL));
	for (k = 0; k < WRAP_HOT; k++) {
		ASSERT_EQ(0, nvt_find_block(self->path, K0, k, &before[k]));
		if (before[k].seq > *seq0)
			*seq0 = before[k].seq;
	}
	cold = nr * (NSTAT(self->ctl, region_bytes) / WRAP_BS) * 13 / 10;
	*rescued = NSTAT(self->ctl, rescued);
	ASSERT_EQ(0, put_range(pfd, self->buf, WRAP_BS, next, cold, 1, 0));
	ASSERT_EQ(0, nvt_sync(pfd, NULL));
	*rescued = NSTAT(self->ctl, rescued) - *rescued;
	for (k = 0; k < WRAP_HOT; k++)
		ASSERT_EQ(0, nvt_find_block(self->path, K0, k, &after[k]));
}

/*
 * The same in a pool that compresses: a compressed copy is relocated as
 * it is stored (checked against its record's keyed crc), under a fresh
 * record. A reads back exact, compressed copies of it in regions written
 * after the cold PUTs began, and again from NVMe after a detach and an
 * attach, which adopt the records the relocation wrote; B is gone.
 */
TEST_F_TIMEOUT(wrap, compressed_copies_relocated, 300)
{
	struct nvt_loc before[WRAP_HOT], after[WRAP_HOT];
	char name[KVTIER_NAME_MAX];
	unsigned int small = 0;
	__u64 next, seq0, k;
	struct tally a, b;
	long long rescued;
	int pfd, i;

	pfd = reloc_setup(_metadata, self, name, true, true, 0, &next);
	if (pfd == -ENOPKG)
		SKIP(return, "no lz4");
	ASSERT_LE(0, pfd);
	reloc_wrap(_metadata, self, pfd, next, before, after, &seq0, &rescued);
	for (k = 0; k < WRAP_HOT; k++)
		small += after[k].seq > seq0 &&
			 after[k].pages < WRAP_BS / KST_PAGE;
	reloc_tally(pfd, self->buf, self->out, 0, WRAP_HOT, true, &a);
	reloc_tally(pfd, self->buf, self->out, 100, WRAP_HOT, true, &b);
	TH_LOG("read back: %u/%u exact, %u compressed and moved; not read: %u/%u; %lld rescued",
	       a.exact, WRAP_HOT, small, b.exact, WRAP_HOT, rescued);
	EXPECT_EQ(WRAP_HOT, a.exact);
	EXPECT_EQ(WRAP_HOT, small);
	EXPECT_EQ(0U, b.exact);
	EXPECT_LE((long long)WRAP_HOT, rescued);
	EXPECT_EQ(0U, a.wrong + b.wrong);
	/* The records as written: A comes back from them. */
	close(pfd);
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(0, nvt_attach(self->ctl, self->path, 0, 0));
	pfd = kst_pool_open(self->ctl, name, 0);
	ASSERT_LE(0, pfd);
	/* Read back above, A is in DRAM: the shrinker gives it back. */
	for (i = 0, k = 0; i < 5 && k < WRAP_HOT; i++) {
		ASSERT_EQ(0, kst_write_str("/proc/sys/vm/drop_caches", "2"));
		for (k = 0; k < WRAP_HOT; k++)
			if (key_tier(pfd, k) != KVTIER_TIER_NVME)
				break;
	}
	EXPECT_EQ(WRAP_HOT, k);
	reloc_tally(pfd, self->buf, self->out, 0, WRAP_HOT, true, &a);
	TH_LOG("after the attach: %u/%u exact", a.exact, WRAP_HOT);
	EXPECT_EQ(WRAP_HOT, a.exact);
	EXPECT_EQ(0U, a.wrong);
	close(pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
}

#define WRAP_PARTS	8U	/* parts of 8 KiB */

/* A GET with KVTIER_GET_PART of bytes [@off, @off + @len) of key @k. */
static int get_part(int pfd, __u64 k, void *buf, __u32 off, __u32 len)
{
	struct kvtier_batch bt;
	struct kvtier_block e;
	int ret;

	kst_blk(&e, K0, k, buf);
	memset(&bt, 0, sizeof(bt));
	bt.blocks = (__u64)(uintptr_t)&e;
	bt.count = 1;
	bt.flags = KVTIER_GET_PART;
	bt.part_off = off;
	bt.part_len = len;
	ret = kst_ioctl(pfd, KVTIER_IOC_GET, &bt);
	return ret ?: e.status;
}

/*
 * The same in a pool with parts: a copy moves with its part table, which
 * does not depend on where the copy is. A's copies are in regions written
 * after the cold PUTs began, each with its table, and a GET of one part of
 * each is served from NVMe by a part read (part_reads), exact: the table
 * came along and verified. B is gone.
 */
TEST_F_TIMEOUT(wrap, parts_copies_relocated, 300)
{
	const __u32 off = 5 * WRAP_BS / WRAP_PARTS, len = 3000;
	unsigned int moved = 0, tabled = 0, served = 0, nvme = 0;
	struct nvt_loc before[WRAP_HOT], after[WRAP_HOT];
	struct kvtier_pool_stat s0, s1;
	char name[KVTIER_NAME_MAX];
	__u64 next, seq0, k;
	struct tally a, b;
	long long rescued;
	int pfd, ret;

	pfd = reloc_setup(_metadata, self, name, true, false, WRAP_PARTS,
			  &next);
	ASSERT_LE(0, pfd);
	reloc_wrap(_metadata, self, pfd, next, before, after, &seq0, &rescued);
	for (k = 0; k < WRAP_HOT; k++) {
		ASSERT_NE(0U, before[k].flags & NVT_REC_PARTS);
		moved += after[k].seq > seq0;
		tabled += after[k].seq > seq0 &&
			  after[k].flags & NVT_REC_PARTS;
	}
	/* One part of each of A, only on NVMe: read in parts, exact. */
	ASSERT_EQ(0, kst_stat(pfd, &s0));
	for (k = 0; k < WRAP_HOT; k++) {
		nvme += key_tier(pfd, k) == KVTIER_TIER_NVME;
		memset(self->out, 0xa5, WRAP_BS);
		ret = get_part(pfd, k, self->out, off, len);
		kst_fill(self->buf, WRAP_BS, K0, k, GEN(1));
		served += !ret && !memcmp(self->out, self->buf + off, len);
	}
	ASSERT_EQ(0, kst_stat(pfd, &s1));
	tally_range(pfd, self->buf, WRAP_BS, 0, WRAP_HOT, 1, &a, NULL);
	tally_range(pfd, self->buf, WRAP_BS, 100, WRAP_HOT, 1, &b, NULL);
	TH_LOG("read back: %u/%u moved, %u with their table; %u/%u on NVMe, %u parts exact, %llu part reads; whole: %u exact; not read: %u/%u; %lld rescued",
	       moved, WRAP_HOT, tabled, nvme, WRAP_HOT, served,
	       (unsigned long long)(s1.part_reads - s0.part_reads), a.exact,
	       b.exact, WRAP_HOT, rescued);
	EXPECT_EQ(WRAP_HOT, moved);
	EXPECT_EQ(WRAP_HOT, tabled);
	EXPECT_EQ(WRAP_HOT, nvme);
	EXPECT_EQ(WRAP_HOT, served);
	EXPECT_EQ((__u64)WRAP_HOT, s1.part_reads - s0.part_reads);
	reloc_end(_metadata, self, pfd, name, &a, &b, rescued);
}

/*
 * Wait until the writer has been idle for 200 ms (nothing written or read
 * on the devices: a relocation reads a copy, then writes it); 0, or
 * -ETIMEDOUT after @secs.
 */
static int writer_quiet(int ctl, double secs)
{
	long long w = -1, r = -1, w1, r1;
	double end = kst_mono() + secs;

	while (kst_mono() < end) {
		w1 = NSTAT(ctl, bytes_written);
		r1 = NSTAT(ctl, bytes_read);
		if (w1 == w && r1 == r)
			return 0;
		w = w1;
		r = r1;
		usleep(200000);
	}
	return -ETIMEDOUT;
}

/*
 * Relocation reads the copy and checks it before it writes it again: a
 * copy that does not verify is dropped, never relocated under a fresh
 * record. After reloc_setup() (with @z, in a pool that compresses), reads
 * of A0's copy are corrupted (dm-flakey over its pages alone, summaries
 * untouched) until relocation has dropped it; A1..A15 are relocated and
 * read back exact.
 */
static void reloc_checks(struct __test_metadata *_metadata,
			 FIXTURE_DATA(wrap) *self, bool z)
{
	long long nr = nvme_nr_regions(self->ctl), lost, rescued;
	__u64 next, cold, per_region, put;
	char name[KVTIER_NAME_MAX], table[1024];
	struct nvt_loc loc;
	bool healed = false;
	long long s0, n0;
	struct tally a;
	int pfd;

	if (!nvt_dm_target(NVT_DM_FLAKEY))
		SKIP(return, "no dm-flakey");
	ASSERT_LT(0, nr);
	pfd = reloc_setup(_metadata, self, name, false, z, 0, &next);
	if (pfd == -ENOPKG)
		SKIP(return, "no lz4");
	ASSERT_LE(0, pfd);

	/*
	 * The writer may still be writing what the setup pushed out, and a
	 * wrap meanwhile relocates A0 (read back, only on NVMe) with good
	 * bytes. SYNC does not wait for a relocation (A0 is not dirty): the
	 * writer idle, nothing is written until the PUTs below, so A0's
	 * copy is where the summaries say when the table goes flakey.
	 */
	ASSERT_EQ(0, nvt_sync(pfd, NULL));
	ASSERT_EQ(0, writer_quiet(self->ctl, 60));
	ASSERT_EQ(0, nvt_find_block("/dev/mapper/" DM_SMALL, K0, 0, &loc));
	/* A compressed copy is stored in fewer pages than a block. */
	if (z)
		ASSERT_GT(WRAP_BS / KST_PAGE, loc.pages);
	s0 = loc.data_off / 512;
	n0 = (long long)loc.pages * KST_PAGE / 512;
	ASSERT_LT(0, n0);
	ASSERT_GT((int)sizeof(table),
		  snprintf(table, sizeof(table),
			   "0 %lld linear %s 0\n"
			   "%lld %lld flakey %s %lld 0 1 5 corrupt_bio_byte 64 r 1 0\n"
			   "%lld %lld linear %s %lld",
			   s0, nvt_dev(), s0, n0, nvt_dev(), s0, s0 + n0,
			   self->sectors - s0 - n0, nvt_dev(), s0 + n0));
	ASSERT_EQ(0, nvt_dm_reload(DM_SMALL, table));
	lost = NSTAT(self->ctl, lost_blocks);
	rescued = NSTAT(self->ctl, rescued);
	per_region = NSTAT(self->ctl, region_bytes) / WRAP_BS;
	cold = nr * per_region * 13 / 10;
	/* A region at a time; healed once A0 is gone. */
	for (put = 0; put < cold; put += per_region) {
		ASSERT_EQ(0, put_range(pfd, self->buf, WRAP_BS, next + put,
				       per_region, 1, 0));
		if (!healed && kst_lookup1(pfd, K0, 0, NULL) == -ENOENT) {
			ASSERT_EQ(0, nvt_dm_reload(DM_SMALL, self->linear));
			healed = true;
		}
	}
	if (!healed)
		ASSERT_EQ(0, nvt_dm_reload(DM_SMALL, self->linear));
	lost = NSTAT(self->ctl, lost_blocks) - lost;
	rescued = NSTAT(self->ctl, rescued) - rescued;
	EXPECT_TRUE(healed);
	EXPECT_EQ(-ENOENT, kst_get1(pfd, K0, 0, self->out, NULL));
	reloc_tally(pfd, self->buf, self->out, 1, WRAP_HOT - 1, z, &a);
	TH_LOG("A0 dropped: %s; A1..A15: %u exact, %u wrong; %lld rescued, %lld blocks lost",
	       healed ? "yes" : "no", a.exact, a.wrong, rescued, lost);
	EXPECT_EQ(WRAP_HOT - 1, a.exact);
	EXPECT_EQ(0U, a.wrong);
	EXPECT_LE((long long)WRAP_HOT - 1, rescued);
	close(pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
}

TEST_F_TIMEOUT(wrap, relocation_checks_the_copy, 300)
{
	reloc_checks(_metadata, self, false);
}

TEST_F_TIMEOUT(wrap, relocation_checks_the_compressed_copy, 300)
{
	reloc_checks(_metadata, self, true);
}

/* A reader of one pool's blocks, straight into its buffer (GET_DIRECT). */
struct direct_reader {
	int pfd;
	__u64 n;		/* keys 0..n-1, generation 1 */
	volatile int stop;
	unsigned int served, nvme, zeroed, untouched, wrong;
};

static void *direct_reader_fn(void *arg)
{
	struct direct_reader *r = arg;
	char *buf = kst_alloc(WRAP_BS);
	__u64 x = 0x9e3779b97f4a7c15ULL, i;
	struct kvtier_block b;
	__u64 k;

	if (!buf) {
		r->wrong++;
		return NULL;
	}
	while (!r->stop) {
		x = kst_mix(x);
		k = x % r->n;
		memset(buf, 0x5a, WRAP_BS);
		kst_blk(&b, K0, k, buf);
		if (kst_batch(r->pfd, KVTIER_IOC_GET, &b, 1, KVTIER_GET_DIRECT,
			      NULL)) {
			r->wrong++;
			continue;
		}
		if (!b.status) {
			if (kst_check_gen(buf, WRAP_BS, K0, k, GEN(1)) != -1) {
				r->wrong++;
				continue;
			}
			r->served++;
			r->nvme += b.tier == KVTIER_TIER_NVME;
			continue;
		}
		/* A failed entry: its buffer untouched, or zeroed. */
		for (i = 1; i < WRAP_BS && buf[i] == buf[0]; i++)
			;
		if (i == WRAP_BS && buf[0] == 0x5a)
			r->untouched++;
		else if (i == WRAP_BS && !buf[0])
			r->zeroed++;
		else
			r->wrong++;
	}
	kst_free(buf, WRAP_BS);
	return NULL;
}

/*
 * Reads into the caller's memory while the log wraps round under another
 * pool's writes: each region is reclaimed and rewritten with the other
 * pool's blocks while this pool's blocks there are being read. A read is
 * this block's exact bytes, or a miss whose buffer holds nothing (left
 * as it was, or zeroed); never the other pool's bytes.
 */
TEST_F_TIMEOUT(wrap, direct_gets_while_log_wraps, 300)
{
	long long nr = nvme_nr_regions(self->ctl), r0;
	struct direct_reader rd = { .pfd = self->pfd, .n = 256 };
	char name[KVTIER_NAME_MAX];
	__u64 total, k;
	pthread_t th;
	int pfd2;

	ASSERT_LT(0, nr);
	ASSERT_EQ(0, put_range(self->pfd, self->buf, WRAP_BS, 0, rd.n, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	kst_name(name, "wrap2");
	pfd2 = kst_pool_create(self->ctl, name, WRAP_BS, 4096, WRAP_DRAM);
	ASSERT_LE(0, pfd2);
	r0 = NSTAT(self->ctl, reclaimed);
	ASSERT_EQ(0, pthread_create(&th, NULL, direct_reader_fn, &rd));
	/* Twice round the log: every region reclaimed and rewritten. */
	total = nr * (1024 * KST_KIB / WRAP_BS) * 2;
	for (k = 0; k < total; k += 16)
		ASSERT_EQ(0, put_range(pfd2, self->buf, WRAP_BS, 1000 + k, 16,
				       2, 0));
	rd.stop = 1;
	pthread_join(th, NULL);
	TH_LOG("%u served (%u from NVMe), %u misses (%u zeroed), %u wrong; %lld regions reclaimed",
	       rd.served, rd.nvme, rd.untouched + rd.zeroed, rd.zeroed,
	       rd.wrong, NSTAT(self->ctl, reclaimed) - r0);
	EXPECT_EQ(0U, rd.wrong);
	EXPECT_LT(0U, rd.nvme);
	EXPECT_LT(nr, NSTAT(self->ctl, reclaimed) - r0);
	close(pfd2);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
}

#define DIRECT_DELAY	"/sys/kernel/debug/kvtier/direct_delay_ms"
#define DIRECT_DELAY_MS	1500

struct slow_get {
	int pfd;
	char *buf;
	struct kvtier_block b;
	int ret;
};

static void *slow_get_fn(void *arg)
{
	struct slow_get *g = arg;

	kst_blk(&g->b, K0, 0, g->buf);
	g->ret = kst_batch(g->pfd, KVTIER_IOC_GET, &g->b, 1, KVTIER_GET_DIRECT,
			   NULL);
	return NULL;
}

/*
 * Reclaim waits for a read into user memory of the region it reclaims. Key
 * 0 sits in the log's first region; the log is filled by another pool up
 * to that region's turn; a GET of key 0 straight into a buffer takes the
 * block's location and then waits DIRECT_DELAY_MS before its bios go
 * (direct_delay_ms); meanwhile more writes make the log reclaim that
 * region. The GET must still read key 0's exact bytes: the region was not
 * written again until the read was done. Without the wait, the read would
 * fetch the other pool's bytes into the buffer, which the check then
 * turns into a miss. Needs the debug kernel's direct_delay_ms.
 */
TEST_F_TIMEOUT(wrap, reclaim_waits_for_direct_read, 300)
{
	struct slow_get g = { .pfd = self->pfd };
	char name[KVTIER_NAME_MAX];
	long long r0;
	pthread_t th;
	__u64 next = 1000;
	int pfd2, i;

	if (access(DIRECT_DELAY, W_OK))
		SKIP(return, "no %s: kernel without CONFIG_FAULT_INJECTION_DEBUG_FS",
		     DIRECT_DELAY);
	g.buf = kst_alloc(WRAP_BS);
	ASSERT_NE(NULL, g.buf);
	/* Keys 0..15 leave DRAM, written first: the first region. */
	ASSERT_EQ(0, put_range(self->pfd, self->buf, WRAP_BS, 0,
			       WRAP_DRAM + 16, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 0));
	kst_name(name, "wrap2");
	pfd2 = kst_pool_create(self->ctl, name, WRAP_BS, 4096, WRAP_DRAM);
	ASSERT_LE(0, pfd2);
	/* Every region used: the next one opened is the first, reclaimed. */
	while (nvme_free_regions(self->ctl) > 0) {
		ASSERT_EQ(0, put_range(pfd2, self->buf, WRAP_BS, next, 8, 2, 0));
		ASSERT_EQ(0, nvt_sync(pfd2, NULL));
		next += 8;
	}
	r0 = NSTAT(self->ctl, reclaimed);
	ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 0));

	ASSERT_EQ(0, kst_write_num(DIRECT_DELAY, DIRECT_DELAY_MS));
	ASSERT_EQ(0, pthread_create(&th, NULL, slow_get_fn, &g));
	usleep(300 * 1000);
	/* Write until the log reclaims a region: the first. */
	for (i = 0; i < 64 && NSTAT(self->ctl, reclaimed) == r0; i++) {
		ASSERT_EQ(0, put_range(pfd2, self->buf, WRAP_BS, next, 8, 2, 0));
		ASSERT_EQ(0, nvt_sync(pfd2, NULL));
		next += 8;
	}
	pthread_join(th, NULL);
	kst_write_num(DIRECT_DELAY, 0);
	EXPECT_LT(r0, NSTAT(self->ctl, reclaimed));
	ASSERT_EQ(0, g.ret);
	EXPECT_EQ(0, g.b.status);
	EXPECT_EQ((__u32)KVTIER_TIER_NVME, g.b.tier);
	EXPECT_EQ(-1, kst_check_gen(g.buf, WRAP_BS, K0, 0, GEN(1)));
	/* And its region is gone now: so is key 0. */
	EXPECT_EQ(-ENOENT, key_tier(self->pfd, 0));
	close(pfd2);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
	kst_free(g.buf, WRAP_BS);
}

#define WRITER_DELAY	"/sys/kernel/debug/kvtier/writer_delay_ms"
#define QFULL_BS		4096U
#define QFULL_A		2500U	/* dirty blocks of A: more than the queue takes */
#define QFULL_B_DRAM	4U

/* SYNC of a pool, in a thread of its own. */
struct bg_sync {
	int pfd;
	int ret;
};

static void *bg_sync_fn(void *arg)
{
	struct bg_sync *b = arg;

	b->ret = nvt_sync(b->pfd, NULL);
	return NULL;
}

/* Pool B's PUT of one more block than its DRAM holds, then its SYNC. */
struct bg_put_sync {
	int pfd;
	void *buf;
	int put, sync;
};

static void *bg_put_sync_fn(void *arg)
{
	struct bg_put_sync *b = arg;

	b->put = put_range(b->pfd, b->buf, QFULL_BS, QFULL_B_DRAM, 1, 1, 0);
	b->sync = nvt_sync(b->pfd, NULL);
	return NULL;
}

/*
 * Another pool's blocks fill the device's write queue (A's SYNC, the
 * writer held back by writer_delay_ms): pool B, its DRAM full of dirty
 * blocks, PUTs one more and SYNCs. The PUT's victim must wait for room
 * in the queue, not be dropped unsaid, and the SYNC must not return 0
 * before B's blocks are written: afterwards none of B is dirty and all
 * of it reads back exact. Needs the debug kernel's writer_delay_ms.
 */
TEST_F_TIMEOUT(wrap, full_write_queue_waits, 300)
{
	struct bg_put_sync pb = { .put = 1, .sync = 1 };
	struct bg_sync sa = { .ret = 1 };
	char na[KVTIER_NAME_MAX], nb[KVTIER_NAME_MAX];
	struct kvtier_pool_stat st;
	pthread_t ta, tb;
	struct tally t;

	if (access(WRITER_DELAY, W_OK))
		SKIP(return, "no %s: kernel without CONFIG_FAULT_INJECTION_DEBUG_FS",
		     WRITER_DELAY);
	kst_name(na, "fullA");
	sa.pfd = kst_pool_create(self->ctl, na, QFULL_BS, 4096, 4096);
	ASSERT_LE(0, sa.pfd);
	ASSERT_EQ(0, put_range(sa.pfd, self->buf, QFULL_BS, 0, QFULL_A, 1, 0));
	kst_name(nb, "fullB");
	pb.pfd = kst_pool_create(self->ctl, nb, QFULL_BS, 64, QFULL_B_DRAM);
	ASSERT_LE(0, pb.pfd);
	pb.buf = kst_alloc(QFULL_BS);
	ASSERT_NE(NULL, pb.buf);
	ASSERT_EQ(0, put_range(pb.pfd, self->buf, QFULL_BS, 0, QFULL_B_DRAM, 1,
			       0));

	/* A's SYNC fills the queue; the writer takes nothing for 4 s. */
	ASSERT_EQ(0, kst_write_str(WRITER_DELAY, "4000"));
	ASSERT_EQ(0, pthread_create(&ta, NULL, bg_sync_fn, &sa));
	usleep(1000 * 1000);
	ASSERT_EQ(0, pthread_create(&tb, NULL, bg_put_sync_fn, &pb));
	usleep(2000 * 1000);
	ASSERT_EQ(0, kst_write_str(WRITER_DELAY, "0"));
	ASSERT_EQ(0, pthread_join(tb, NULL));
	ASSERT_EQ(0, pthread_join(ta, NULL));

	ASSERT_EQ(0, kst_stat(pb.pfd, &st));
	tally_range(pb.pfd, self->buf, QFULL_BS, 0, QFULL_B_DRAM + 1, 1, &t,
		    NULL);
	TH_LOG("B: PUT %d, SYNC %d, %llu dirty after it, %llu evicted, %llu lost; %u/%u exact, %u missing; A's SYNC %d",
	       pb.put, pb.sync, (unsigned long long)st.dirty,
	       (unsigned long long)st.evictions,
	       (unsigned long long)st.lost_blocks, t.exact, QFULL_B_DRAM + 1,
	       t.miss, sa.ret);
	EXPECT_EQ(0, pb.put);
	EXPECT_EQ(0, pb.sync);
	EXPECT_EQ(0ULL, st.dirty);
	EXPECT_EQ(QFULL_B_DRAM + 1, t.exact);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0, sa.ret);
	kst_free(pb.buf, QFULL_BS);
	close(pb.pfd);
	close(sa.pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, nb));
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, na));
}

/* ==== discard: what the log frees, the device is told ==================== */

/*
 * A wrap device of 16 MiB: 15 regions of 1 MiB. The teardown turns the
 * "discard" parameter back on, whatever a case left it at.
 */
FIXTURE(discard) {
	struct nvt_fix;
};

static const struct nvt_cfg discard_cfg = {
	.block_size = WRAP_BS, .tag = "discard", .capacity = 1024,
	.dram_blocks = WRAP_DRAM, .dm = DM_SMALL, .dm_mib = 16,
	.attach = true, .region_kib = 1024,
};

#define DISCARD_PARAM	KST_PARAM_DIR "/discard"
#define DISCARD_FILL	0xa5	/* what the data area holds before the log */
#define DM_SMALL_PATH	"/dev/mapper/" DM_SMALL

FIXTURE_SETUP(discard)
{
	nvt_setup(_metadata, NVT_FIX(self), &discard_cfg);
}

FIXTURE_TEARDOWN(discard)
{
	kst_write_num(DISCARD_PARAM, 1);
	nvt_teardown(NVT_FIX(self));
}

/* Whether block device @path discards: its queue's discard_max_bytes. */
static bool discards(const char *path)
{
	char sys[128], buf[32];
	struct stat st;

	if (stat(path, &st) || !S_ISBLK(st.st_mode))
		return false;
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u/queue/discard_max_bytes",
		 major(st.st_rdev), minor(st.st_rdev));
	return kst_read_file(sys, buf, sizeof(buf)) > 0 && atoll(buf) > 0;
}

/* Whether every byte of [@off, @off + @len) of @path is @byte. */
static bool range_is(const char *path, __u64 off, __u64 len, __u8 byte)
{
	__u8 *buf = kst_alloc(KST_MIB);
	bool same = buf != NULL;
	__u64 n, i;

	for (; same && len; off += n, len -= n) {
		n = len < KST_MIB ? len : KST_MIB;
		same = !nvt_raw_read(path, off, buf, n);
		for (i = 0; same && i < n; i++)
			same = buf[i] == byte;
	}
	kst_free(buf, KST_MIB);
	return same;
}

/* Fill the data area of the store on @path (superblock @sb) with @byte. */
static int fill_data_area(const char *path, const struct nvt_disk_sb *sb,
			  __u8 byte)
{
	__u8 *buf = kst_alloc(sb->region_bytes);
	int ret = buf ? 0 : -ENOMEM;
	__u32 r;

	if (buf)
		memset(buf, byte, sb->region_bytes);
	for (r = 0; !ret && r < sb->nr_regions; r++)
		ret = nvt_raw_write(path, NVT_DATA_OFF + r * sb->region_bytes,
				    buf, sb->region_bytes);
	kst_free(buf, sb->region_bytes);
	return ret;
}

/* A region as replay sees it. */
struct region_walk {
	__u64 seq;		/* of its segments */
	__u64 first_end;	/* page where its first segment ends */
	__u64 end;		/* page where its last one ends */
};

/* Walk region @r into @w: 0, -ENOENT without a segment, or -errno. */
static int region_walk(const char *path, const struct nvt_disk_sb *sb,
		       __u32 r, struct region_walk *w)
{
	__u64 rpages = sb->region_bytes / NVT_DISK_PAGE, nonce = 0;
	__u32 max_recs;
	size_t slen = nvt_summary_len(sb->region_bytes, &max_recs);
	struct nvt_disk_region *dr = kst_alloc(slen);
	int ret = 0;

	if (!dr)
		return -ENOMEM;
	memset(w, 0, sizeof(*w));
	while (w->end < rpages) {
		ret = nvt_seg_read(path, sb, r, w->end, dr, w->seq, nonce);
		if (ret <= 0)
			break;
		w->seq = dr->seq;
		nonce = dr->nonce;
		w->end += nvt_seg_len(sb, dr);
		if (!w->first_end)
			w->first_end = w->end;
	}
	kst_free(dr, slen);
	if (ret < 0)
		return ret;
	return w->end ? 0 : -ENOENT;
}

/*
 * PUT cold blocks until the log has gone once and a half round, and SYNC.
 * Then look at every region past where replay stops. A region written
 * once still holds DISCARD_FILL there. One written again (reclaimed) reads
 * zero there if @discarded, else what it held before: DISCARD_FILL or the
 * first round's segments, never all zero. Return the bytes the reclaimed
 * regions held past their first new segment, which is what they discard
 * (-1 on a failure, logged).
 */
static long long wrap_and_check(struct __test_metadata *_metadata,
				struct nvt_fix *f, bool discarded)
{
	__u32 per_region = 1024 * KST_KIB / WRAP_BS, r, again = 0;
	__u64 n = (__u64)nvme_nr_regions(f->ctl) * per_region * 3 / 2;
	struct region_walk *w;
	long long rest = 0;
	struct nvt_disk_sb sb;
	bool ok = true;

	if (put_range(f->pfd, f->buf, WRAP_BS, 1000, n, 1, 0) ||
	    nvt_sync(f->pfd, NULL) || nvt_read_sb(DM_SMALL_PATH, &sb)) {
		TH_LOG("PUT, SYNC or the superblock failed");
		return -1;
	}
	w = calloc(sb.nr_regions, sizeof(*w));
	if (!w)
		return -1;
	for (r = 0; r < sb.nr_regions && ok; r++)
		ok = !region_walk(DM_SMALL_PATH, &sb, r, &w[r]);
	/* From a FORMAT, seq 1 to nr_regions go to the regions in order. */
	for (r = 0; r < sb.nr_regions && ok; r++) {
		bool reclaimed = w[r].seq > sb.nr_regions;
		__u64 off = NVT_DATA_OFF + r * sb.region_bytes +
			    w[r].end * NVT_DISK_PAGE;
		__u64 len = sb.region_bytes - w[r].end * NVT_DISK_PAGE;
		const char *want;

		again += reclaimed;
		if (reclaimed)
			rest += sb.region_bytes - w[r].first_end * NVT_DISK_PAGE;
		if (!reclaimed) {
			ok = range_is(DM_SMALL_PATH, off, len, DISCARD_FILL);
			want = "the fill";
		} else if (discarded) {
			ok = range_is(DM_SMALL_PATH, off, len, 0);
			want = "zero";
		} else {
			ok = !len || !range_is(DM_SMALL_PATH, off, len, 0);
			want = "what it held";
		}
		if (!ok)
			TH_LOG("region %u (seq %llu, %s): bytes past page %llu are not %s",
			       r, (unsigned long long)w[r].seq,
			       reclaimed ? "written again" : "written once",
			       (unsigned long long)w[r].end, want);
	}
	free(w);
	TH_LOG("%llu blocks put: %u of %u regions written again, %lld bytes past their first segment",
	       (unsigned long long)n, again, sb.nr_regions, rest);
	if (!again || again == sb.nr_regions)
		ok = false;
	return ok ? rest : -1;
}

/*
 * Nothing discarded reads back as a block: every key wrap_and_check() put
 * is exact or a miss. (The reads rescue blocks whose copy is in a region
 * about to be reclaimed: they write, and so reclaim and discard, too.)
 */
static bool reads_exact_or_miss(struct __test_metadata *_metadata,
				struct nvt_fix *f)
{
	__u64 n = (__u64)nvme_nr_regions(f->ctl) *
		  (1024 * KST_KIB / WRAP_BS) * 3 / 2;
	struct tally t;

	tally_range(f->pfd, f->buf, WRAP_BS, 1000, n, 1, &t, NULL);
	TH_LOG("GET after the wrap: %u exact, %u missed, %u wrong, %u EIO, %u other",
	       t.exact, t.miss, t.wrong, t.eio, t.other);
	return !t.wrong && !t.eio && !t.other && t.exact;
}

/*
 * A FORMAT discards the data area; a reclaimed region, what it held past
 * the first segment written there again, once that is durable; the device
 * reads it back zero, the counter says as much, and every block reads
 * back exact or is a miss.
 */
TEST_F_TIMEOUT(discard, format_and_reclaim, 600)
{
	struct kvtier_nvme_stat ns0, ns1;
	struct nvt_disk_sb sb;
	long long rest;

	if (!discards(DM_SMALL_PATH))
		SKIP(return, "%s does not discard", DM_SMALL_PATH);
	/* The setup's FORMAT. */
	ASSERT_EQ(0, nvt_nstat(self->ctl, &ns0));
	ASSERT_EQ(0, nvt_read_sb(DM_SMALL_PATH, &sb));
	EXPECT_EQ((__u64)sb.nr_regions * sb.region_bytes, ns0.bytes_discarded);
	EXPECT_TRUE(range_is(DM_SMALL_PATH, NVT_DATA_OFF,
			     (__u64)sb.nr_regions * sb.region_bytes, 0));

	ASSERT_EQ(0, fill_data_area(DM_SMALL_PATH, &sb, DISCARD_FILL));
	rest = wrap_and_check(_metadata, NVT_FIX(self), true);
	ASSERT_LT(0, rest);
	ASSERT_EQ(0, nvt_nstat(self->ctl, &ns1));
	EXPECT_EQ((__u64)rest, ns1.bytes_discarded - ns0.bytes_discarded);
	EXPECT_TRUE(reads_exact_or_miss(_metadata, NVT_FIX(self)));
}

/* With the parameter off, nothing is discarded, at FORMAT or after. */
TEST_F_TIMEOUT(discard, parameter_off, 600)
{
	struct kvtier_nvme_stat ns;
	struct nvt_disk_sb sb;

	if (!discards(DM_SMALL_PATH))
		SKIP(return, "%s does not discard", DM_SMALL_PATH);
	ASSERT_EQ(0, kst_write_num(DISCARD_PARAM, 0));
	ASSERT_EQ(0, nvt_read_sb(DM_SMALL_PATH, &sb));
	close(self->pfd);
	self->pfd = -1;
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, self->name));
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(0, fill_data_area(DM_SMALL_PATH, &sb, DISCARD_FILL));
	ASSERT_EQ(0, nvt_attach(self->ctl, DM_SMALL_PATH, KVTIER_NVME_FORMAT,
				1024));
	self->pfd = kst_pool_create(self->ctl, self->name, WRAP_BS,
				    discard_cfg.capacity, WRAP_DRAM);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(0, nvt_nstat(self->ctl, &ns));
	EXPECT_EQ(0ULL, ns.bytes_discarded);
	EXPECT_TRUE(range_is(DM_SMALL_PATH, NVT_DATA_OFF + NVT_DISK_PAGE,
			     (__u64)sb.nr_regions * sb.region_bytes -
			     NVT_DISK_PAGE, DISCARD_FILL));

	EXPECT_LT(0, wrap_and_check(_metadata, NVT_FIX(self), false));
	EXPECT_TRUE(reads_exact_or_miss(_metadata, NVT_FIX(self)));
	ASSERT_EQ(0, nvt_nstat(self->ctl, &ns));
	EXPECT_EQ(0ULL, ns.bytes_discarded);
}

/* ==== faults injected with device-mapper ================================ */

FIXTURE(dm) {
	struct nvt_fix;		/* sectors, linear: of DM_FAULT */
};

#define DM_BS	(16 * KST_KIB)
#define DM_PATH	"/dev/mapper/" DM_FAULT

/*
 * DM_FAULT, linear over the whole device, attached; a pool of 512 blocks.
 * The tests swap its table; the teardown puts the linear one back.
 */
static const struct nvt_cfg dm_cfg = {
	.block_size = DM_BS, .tag = "dm", .capacity = 512, .dram_blocks = DRAM,
	.dm_need = NVT_DM_FLAKEY | NVT_DM_ERROR, .dm = DM_FAULT,
	.attach = true, .reattach = true, .heal = true,
};

FIXTURE_SETUP(dm)
{
	nvt_setup(_metadata, NVT_FIX(self), &dm_cfg);
}

FIXTURE_TEARDOWN(dm)
{
	nvt_teardown(NVT_FIX(self));
}

/* A flakey table that is always down, with @features. */
static int dm_flakey(FIXTURE_DATA(dm) *self, const char *features)
{
	char table[512];

	snprintf(table, sizeof(table), "0 %lld flakey %s 0 0 1 %s",
		 self->sectors, nvt_dev(), features);
	return nvt_dm_reload(DM_FAULT, table);
}

static int dm_healthy(FIXTURE_DATA(dm) *self)
{
	return nvt_dm_reload(DM_FAULT, self->linear);
}

/*
 * Write errors: demotions fail, PUT does not; every block is exact or a
 * miss; SYNC reports -EIO (in bounded time); healed, all works again.
 */
TEST_F_TIMEOUT(dm, write_errors, 240)
{
	long long written, demoted;
	struct tally t;
	unsigned int i;

	written = NSTAT(self->ctl, bytes_written);
	demoted = NSTAT(self->ctl, bytes_demoted);
	ASSERT_EQ(0, dm_flakey(self, "1 error_writes"));
	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, 0));
	EXPECT_LT(0, NSTAT(self->ctl, io_errors));
	/* Failed writes wrote nothing and demoted nothing. */
	EXPECT_EQ(written, NSTAT(self->ctl, bytes_written));
	EXPECT_EQ(demoted, NSTAT(self->ctl, bytes_demoted));
	EXPECT_EQ(0, PSTAT(self->pfd, demotions));
	tally_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, &t, NULL);
	TH_LOG("write errors: %u exact, %u miss", t.exact, t.miss);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0U, t.eio);
	EXPECT_EQ(0U, t.other);
	EXPECT_EQ(NPUT, t.exact + t.miss);
	/*
	 * DRAM still serves: a block just PUT reads back exact. (Which of
	 * the blocks before it are left depends on when a failed write-back
	 * took them, all the dirty ones at once when DRAM needed room.)
	 */
	for (i = 90; i < 94; i++) {
		ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, i, 1, 1, 0));
		EXPECT_EQ(0, get_check(self->pfd, self->buf, DM_BS, i, 1));
	}
	EXPECT_EQ(-EIO, nvt_sync_deadline(self->pfd, 15, NULL));

	ASSERT_EQ(0, dm_healthy(self));
	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 100, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync_deadline(self->pfd, 15, NULL));
	EXPECT_EQ(0, PSTAT(self->pfd, dirty));
	tally_range(self->pfd, self->buf, DM_BS, 100, NPUT, 1, &t, NULL);
	EXPECT_EQ(NPUT, t.exact);
	tally_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, &t, NULL);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(NPUT, t.exact + t.miss);
}

/* Every I/O fails: reads of cold blocks are misses, never a hang. */
TEST_F_TIMEOUT(dm, read_errors_are_misses, 240)
{
	int status[NPUT], again[NPUT];
	struct tally t;
	unsigned int i;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(0, dm_flakey(self, "0"));
	tally_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, &t, status);
	TH_LOG("read errors: %u exact, %u miss, %u eio", t.exact, t.miss, t.eio);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0U, t.other);
	/* A read that fails is a miss (userspace-api.rst), not -EIO. */
	EXPECT_EQ(0U, t.eio);
	EXPECT_LE(NCOLD, t.miss + t.eio);
	EXPECT_EQ(t.miss + t.eio, PSTAT(self->pfd, bad_reads));
	EXPECT_LT(0, NSTAT(self->ctl, io_errors));

	/* Healed: what failed is gone, the rest reads exact. */
	ASSERT_EQ(0, dm_healthy(self));
	tally_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, &t, again);
	EXPECT_EQ(0U, t.wrong);
	for (i = 0; i < NPUT; i++) {
		if (again[i] != (status[i] ? -ENOENT : 0))
			TH_LOG("key %u: %d then %d", i, status[i], again[i]);
		ASSERT_EQ(status[i] ? -ENOENT : 0, again[i]);
	}
}

/* Writes silently dropped: what reads back does not verify, a miss. */
TEST_F_TIMEOUT(dm, dropped_writes_are_misses, 240)
{
	struct tally t;

	ASSERT_EQ(0, dm_flakey(self, "1 drop_writes"));
	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, 0));
	EXPECT_LE(NCOLD, PSTAT(self->pfd, demotions));
	tally_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, &t, NULL);
	TH_LOG("dropped writes: %u exact, %u miss", t.exact, t.miss);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0U, t.eio);
	EXPECT_EQ(0U, t.other);
	EXPECT_LE(NCOLD, t.miss);
	EXPECT_EQ(t.miss, PSTAT(self->pfd, bad_reads));

	ASSERT_EQ(0, dm_healthy(self));
	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 100, NPUT, 1, 0));
	tally_range(self->pfd, self->buf, DM_BS, 100, NPUT, 1, &t, NULL);
	EXPECT_EQ(NPUT, t.exact);
}

/* Reads corrupted in flight (dm-flakey corrupt_bio_byte): misses. */
TEST_F_TIMEOUT(dm, corrupted_reads_are_misses, 240)
{
	struct nvt_loc loc;
	struct tally t;
	char *raw;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(0, nvt_find_block(DM_PATH, K0, 0, &loc));
	ASSERT_EQ(0, dm_flakey(self, "5 corrupt_bio_byte 64 r 1 0"));
	/* Does this kernel's dm-flakey corrupt reads at all? */
	raw = kst_alloc(DM_BS);
	ASSERT_NE(NULL, raw);
	ASSERT_EQ(0, nvt_raw_read(DM_PATH, loc.data_off, raw, DM_BS));
	if (kst_check_gen(raw, DM_BS, K0, 0, GEN(1)) == -1) {
		kst_free(raw, DM_BS);
		SKIP(return, "dm-flakey corrupt_bio_byte does not corrupt reads here");
	}
	kst_free(raw, DM_BS);
	tally_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, &t, NULL);
	TH_LOG("corrupted reads: %u exact, %u miss", t.exact, t.miss);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0U, t.eio);
	EXPECT_LE(NCOLD, t.miss);
	EXPECT_EQ(t.miss, PSTAT(self->pfd, bad_reads));
}

/*
 * Put the error target under key @k's copy on the device of @sectors
 * sectors, the rest mapped through; 0 or -errno.
 */
static int dm_fail_block(long long sectors, __u64 k)
{
	struct nvt_loc loc;
	long long s0, n0 = DM_BS / 512;
	char table[1024];
	int ret, len;

	ret = nvt_find_block(DM_PATH, K0, k, &loc);
	if (ret)
		return ret;
	s0 = loc.data_off / 512;
	len = snprintf(table, sizeof(table),
		       "0 %lld linear %s 0\n%lld %lld error\n"
		       "%lld %lld linear %s %lld",
		       s0, nvt_dev(), s0, n0, s0 + n0,
		       sectors - s0 - n0, nvt_dev(), s0 + n0);
	if (len >= (int)sizeof(table))
		return -E2BIG;
	return nvt_dm_reload(DM_FAULT, table);
}

/* An unreadable range under one block: that block alone is a miss. */
TEST_F_TIMEOUT(dm, unreadable_block_is_miss, 240)
{
	struct tally t;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 5));
	ASSERT_EQ(0, dm_fail_block(self->sectors, 5));

	ASSERT_EQ(-ENOENT, get_check(self->pfd, self->buf, DM_BS, 5, 1));
	EXPECT_EQ(1, PSTAT(self->pfd, bad_reads));
	EXPECT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, 5, NULL));
	tally_range(self->pfd, self->buf, DM_BS, 0, 5, 1, &t, NULL);
	EXPECT_EQ(5U, t.exact);
	tally_range(self->pfd, self->buf, DM_BS, 6, NPUT - 6, 1, &t, NULL);
	EXPECT_EQ(NPUT - 6, t.exact);
	EXPECT_EQ(1, PSTAT(self->pfd, bad_reads));
}

/* PREFETCH keys [first, first + n) as group @group; the ioctl's result. */
static int pf_group(int pfd, __u64 first, __u32 n, __u64 group,
		    __u64 deadline, __u32 flags)
{
	struct kvtier_hint h[16];
	struct kvtier_prefetch pf = {
		.hints = (__u64)(uintptr_t)h, .count = n, .group = group,
		.deadline_ns = deadline, .flags = flags,
		.tier = KVTIER_TIER_DRAM,
	};
	__u32 i;

	memset(h, 0, sizeof(h));
	for (i = 0; i < n && i < 16; i++) {
		h[i].key[0] = K0;
		h[i].key[1] = first + i;
	}
	return kst_ioctl(pfd, KVTIER_IOC_PREFETCH, &pf);
}

/*
 * Prefetch over an unreadable block: the group naming it ends with -EIO
 * and says ready only the prefix before it; the groups beside it (one with
 * a deadline, one in the background) end in full; every group ends, none
 * waits for ever; the block is then a miss, the others exact.
 */
TEST_F_TIMEOUT(dm, prefetch_unreadable_block, 240)
{
	struct kvtier_completion c[3], *a = NULL, *b = NULL, *bg = NULL;
	struct pollfd p = { .fd = self->pfd, .events = POLLIN };
	struct timespec ts;
	__u64 deadline;
	int i, got = 0;
	ssize_t n;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	/* A DRAM share of 8: the groups name 8 blocks in all. */
	for (i = 3; i < 32; i++)
		ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, i));
	ASSERT_EQ(0, dm_fail_block(self->sectors, 5));

	clock_gettime(CLOCK_MONOTONIC, &ts);
	deadline = ts.tv_sec * 1000000000ULL + ts.tv_nsec + 30000000000ULL;
	ASSERT_EQ(0, pf_group(self->pfd, 3, 4, 1, deadline, 0));
	ASSERT_EQ(0, pf_group(self->pfd, 20, 2, 2, deadline, 0));
	ASSERT_EQ(0, pf_group(self->pfd, 30, 2, 3, 0,
			      KVTIER_PREFETCH_BACKGROUND));
	while (got < 3) {
		ASSERT_EQ(1, poll(&p, 1, 60000)) TH_LOG("%d of 3 groups ended", got);
		n = read(self->pfd, &c[got], (3 - got) * sizeof(c[0]));
		ASSERT_LT(0, n);
		ASSERT_EQ(0, n % (ssize_t)sizeof(c[0]));
		got += n / sizeof(c[0]);
	}
	for (i = 0; i < 3; i++) {
		if (c[i].group == 1)
			a = &c[i];
		else if (c[i].group == 2)
			b = &c[i];
		else if (c[i].group == 3)
			bg = &c[i];
	}
	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	ASSERT_NE(NULL, bg);
	EXPECT_EQ(-EIO, a->status);
	EXPECT_EQ(2U, a->ready);
	EXPECT_EQ(0, b->status);
	EXPECT_EQ(2U, b->ready);
	EXPECT_EQ(0, bg->status);
	EXPECT_EQ(2U, bg->ready);

	EXPECT_EQ(-ENOENT, get_check(self->pfd, self->buf, DM_BS, 5, 1));
	EXPECT_EQ(1, PSTAT(self->pfd, bad_reads));
	for (i = 0; i < 5; i++)
		EXPECT_EQ(0, get_check(self->pfd, self->buf, DM_BS, i, 1));
	for (i = 20; i < 22; i++)
		EXPECT_EQ(0, get_check(self->pfd, self->buf, DM_BS, i, 1));
}

/* The whole device turns into the error target while attached. */
TEST_F_TIMEOUT(dm, device_fails_while_attached, 240)
{
	char table[256];
	struct tally t;
	unsigned int i;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	snprintf(table, sizeof(table), "0 %lld error", self->sectors);
	ASSERT_EQ(0, nvt_dm_reload(DM_FAULT, table));

	/* PUT never fails because of the device. */
	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 100, NPUT, 1, 0));
	for (i = 100 + NPUT - 4; i < 100 + NPUT; i++) {
		EXPECT_EQ(0, get_check(self->pfd, self->buf, DM_BS, i, 1));
	}
	tally_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, &t, NULL);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0U, t.eio);
	EXPECT_EQ(0U, t.other);
	tally_range(self->pfd, self->buf, DM_BS, 100, NPUT, 1, &t, NULL);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0U, t.eio);
	EXPECT_EQ(0U, t.other);
	EXPECT_LT(0, NSTAT(self->ctl, io_errors));
	/*
	 * The reads above needed DRAM: dirty blocks whose demotion failed
	 * were dropped. A block PUT now is dirty, and cannot be made durable.
	 */
	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 300, 1, 1, 0));
	EXPECT_EQ(-EIO, nvt_sync_deadline(self->pfd, 15, NULL));
	EXPECT_EQ(0, get_check(self->pfd, self->buf, DM_BS, 300, 1));
}

/* Detach while writes fail: it returns (the blocks stay in DRAM). */
TEST_F_TIMEOUT(dm, detach_with_write_errors, 240)
{
	unsigned int i;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 0, DRAM - 2, 1, 0));
	ASSERT_EQ(0, dm_flakey(self, "1 error_writes"));
	ASSERT_EQ(0, nvt_detach_deadline(15));
	ASSERT_EQ(0, nvt_attached(self->ctl));
	for (i = 0; i < DRAM - 2; i++) {
		EXPECT_EQ(0, get_check(self->pfd, self->buf, DM_BS, i, 1));
	}
}

/* SYNC while writes fail: -EIO in bounded time; healed, SYNC works. */
TEST_F_TIMEOUT(dm, sync_write_errors_eio, 240)
{
	__u64 written = 0;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 0, DRAM - 2, 1, 0));
	ASSERT_EQ(0, dm_flakey(self, "1 error_writes"));
	ASSERT_EQ(-EIO, nvt_sync_deadline(self->pfd, 15, NULL));
	EXPECT_EQ(DRAM - 2, PSTAT(self->pfd, dirty));
	ASSERT_EQ(0, dm_healthy(self));
	ASSERT_EQ(0, nvt_sync_deadline(self->pfd, 15, &written));
	EXPECT_EQ(DRAM - 2, written);
	EXPECT_EQ(0, PSTAT(self->pfd, dirty));
}

struct put_arg {
	int pfd;
	__u64 key;
	int ret;
	volatile int done;
};

static void *put_fn(void *arg)
{
	struct put_arg *p = arg;
	void *buf = kst_alloc(DM_BS);

	if (!buf) {
		p->ret = -ENOMEM;
		return NULL;
	}
	p->ret = put_range(p->pfd, buf, DM_BS, p->key, 1, 1, 0);
	p->done = 1;
	kst_free(buf, DM_BS);
	return NULL;
}

/* Blocks being demoted stay readable until their (slow) write is done. */
TEST_F_TIMEOUT(dm, readable_while_written, 240)
{
	struct put_arg p = { .pfd = self->pfd, .key = DRAM };
	char table[512];
	pthread_t th;
	double t0, t1;
	unsigned int i;

	if (!nvt_dm_target(NVT_DM_DELAY))
		SKIP(return, "no dm-delay");
	/* Reads at once, writes after 3 s. */
	snprintf(table, sizeof(table), "0 %lld delay %s 0 0 %s 0 3000",
		 self->sectors, nvt_dev(), nvt_dev());
	ASSERT_EQ(0, nvt_dm_reload(DM_FAULT, table));
	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 0, DRAM, 1, 0));
	/* One more PUT must demote something: it waits for the write. */
	ASSERT_EQ(0, pthread_create(&th, NULL, put_fn, &p));
	usleep(500000);
	t0 = kst_mono();
	for (i = 0; i < DRAM; i++) {
		ASSERT_EQ(0, get_check(self->pfd, self->buf, DM_BS, i, 1));
	}
	t1 = kst_mono();
	/* The PUT was still waiting for the write: they did overlap. */
	EXPECT_EQ(0, p.done);
	pthread_join(th, NULL);
	ASSERT_EQ(0, p.ret);
	TH_LOG("%u GETs during the write took %.2f s", DRAM, t1 - t0);
	ASSERT_GT(1.5, t1 - t0);
	ASSERT_EQ(0, get_check(self->pfd, self->buf, DM_BS, DRAM, 1));
}

/*
 * While an attach replays its log, the blocks it brings back are in the
 * index before their device is published: out of reach, a miss for LOOKUP
 * as for GET. With writes held 3 s, the attach waits that long on its
 * superblock after the replay: a LOOKUP that found the blocks then would
 * see them some 3 s before the attach returns.
 */
#define OR_KEYS		(4 * DRAM)

TEST_F_TIMEOUT(dm, lookup_misses_out_of_reach, 240)
{
	struct kvtier_block e[OR_KEYS];
	volatile double *ret_at;
	double first = 0, t0, now;
	char table[512];
	unsigned int i, nvme;
	__u32 done;
	pid_t pid;

	if (!nvt_dm_target(NVT_DM_DELAY))
		SKIP(return, "no dm-delay");
	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 0, OR_KEYS, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_LE(OR_KEYS - DRAM, RES_NVME(self->pfd));
	ASSERT_EQ(0, nvt_detach(self->ctl));
	/* Reads at once, writes after 3 s. */
	snprintf(table, sizeof(table), "0 %lld delay %s 0 0 %s 0 3000",
		 self->sectors, nvt_dev(), nvt_dev());
	ASSERT_EQ(0, nvt_dm_reload(DM_FAULT, table));

	ret_at = mmap(NULL, KST_PAGE, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ret_at);
	*ret_at = 0;
	t0 = kst_mono();
	pid = kst_fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int ret = nvt_attach(self->ctl, DM_PATH, 0, 0);

		*ret_at = kst_mono();
		_exit(ret ? 1 : 0);
	}
	/* LOOKUP until the attach returns: when were the blocks first seen? */
	while (!*ret_at) {
		for (i = 0; i < OR_KEYS; i++)
			kst_blk(&e[i], K0, i, NULL);
		ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_LOOKUP, e,
				       OR_KEYS, 0, &done));
		now = kst_mono();
		for (i = nvme = 0; i < OR_KEYS; i++)
			nvme += !e[i].status && e[i].tier == KVTIER_TIER_NVME;
		if (nvme && !first)
			first = now;
		usleep(20000);
	}
	ASSERT_EQ(0, kst_wait(pid));
	TH_LOG("attach took %.2f s; NVMe blocks first seen %.2f s before it returned",
	       *ret_at - t0, first ? *ret_at - first : 0.0);
	/* The delay held the attach, or this proves nothing. */
	ASSERT_LT(2.5, *ret_at - t0);
	EXPECT_GT(1.0, first ? *ret_at - first : 0.0);

	/* Published: every block found, and exact. */
	for (i = 0; i < OR_KEYS; i++)
		kst_blk(&e[i], K0, i, NULL);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_LOOKUP, e, OR_KEYS, 0,
			       &done));
	EXPECT_EQ(OR_KEYS, done);
	for (i = 0; i < OR_KEYS; i++)
		EXPECT_EQ(0, get_check(self->pfd, self->buf, DM_BS, i, 1));
	munmap((void *)ret_at, KST_PAGE);
}

/* ==== a device too small for what is written ============================ */

FIXTURE(full) {
	struct nvt_fix;
};

#define FULL_BS		(16 * KST_KIB)
#define FULL_MIB	12

/* A 12 MiB dm device with 1 MiB regions; the tests make the pool. */
static const struct nvt_cfg full_cfg = {
	.block_size = FULL_BS, .tag = "full", .dm_need = NVT_DM_LINEAR,
	.dm = DM_SMALL, .dm_mib = FULL_MIB, .attach = true,
	.region_kib = 1024,
};

FIXTURE_SETUP(full)
{
	nvt_setup(_metadata, NVT_FIX(self), &full_cfg);
	ASSERT_EQ(FULL_MIB - 1, nvme_nr_regions(self->ctl));
}

FIXTURE_TEARDOWN(full)
{
	nvt_teardown(NVT_FIX(self));
}

/* Twice the device: old blocks are lost to reclaim, PUT never fails. */
TEST_F_TIMEOUT(full, wraps_and_reclaims, 300)
{
	const unsigned int n = 1500, dram = 16;
	struct kvtier_nvme_stat ns;
	unsigned int i, newest;
	struct tally t;

	self->pfd = kst_pool_create(self->ctl, self->name, FULL_BS, 2048, dram);
	ASSERT_LE(0, self->pfd);
	for (i = 0; i < n; i++) {
		int ret = put_range(self->pfd, self->buf, FULL_BS, i, 1, 1, 0);

		if (ret)
			TH_LOG("PUT %u: %d", i, ret);
		ASSERT_EQ(0, ret);
	}
	ASSERT_EQ(0, nvt_nstat(self->ctl, &ns));
	TH_LOG("reclaimed %llu regions, lost %llu blocks",
	       (unsigned long long)ns.reclaimed,
	       (unsigned long long)ns.lost_blocks);
	EXPECT_LT(0U, ns.reclaimed);
	EXPECT_LT(0U, ns.lost_blocks);
	EXPECT_EQ(0U, ns.io_errors);

	/*
	 * A FIFO of evicted blocks: what survives is the newest ones, with no
	 * hole (LOOKUP, which moves nothing). A region holds one batch of
	 * evicted blocks, at most the pool's DRAM share (16 here), so at least
	 * one block a region for half of the 11 regions, and the DRAM share,
	 * are there.
	 */
	for (newest = 0; newest < n; newest++)
		if (kst_lookup1(self->pfd, K0, n - 1 - newest, NULL))
			break;
	TH_LOG("the newest %u blocks are there", newest);
	EXPECT_LE(dram + (FULL_MIB - 1) / 2, newest);
	for (i = 0; i + newest < n; i++)
		EXPECT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, i, NULL));

	/*
	 * Reading them back loads old blocks whose regions the next writes
	 * reclaim: some go, but every GET is exact or a miss.
	 */
	tally_range(self->pfd, self->buf, FULL_BS, 0, n, 1, &t, NULL);
	TH_LOG("full: %u exact, %u miss", t.exact, t.miss);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0U, t.eio);
	EXPECT_EQ(0U, t.other);
	EXPECT_EQ(n, t.exact + t.miss);
	EXPECT_LT(0U, t.miss);
	EXPECT_LT(0U, t.exact);
	EXPECT_EQ(0, PSTAT(self->pfd, bad_reads));

	/* The pool keeps working. */
	ASSERT_EQ(0, put_range(self->pfd, self->buf, FULL_BS, n, 100, 2, 0));
	tally_range(self->pfd, self->buf, FULL_BS, n + 100 - dram, dram, 2, &t,
		    NULL);
	EXPECT_EQ(dram, t.exact);
	ASSERT_EQ(0, nvt_sync_deadline(self->pfd, 15, NULL));
}

/*
 * Synced blocks that a full log reclaims are evicted, not failed: SYNC
 * keeps returning 0, and the pool's lost_blocks (stat and sysfs) counts
 * every one of them, as the device's does.
 */
TEST_F_TIMEOUT(full, reclaimed_synced_blocks_counted, 300)
{
	const unsigned int synced = 64, more = 1200, dram = 16;
	long long lost0, lost, v[14];
	unsigned int i, found = 0;
	char path[128];

	self->pfd = kst_pool_create(self->ctl, self->name, FULL_BS, 2048, dram);
	ASSERT_LE(0, self->pfd);
	lost0 = NSTAT(self->ctl, lost_blocks);
	ASSERT_LE(0, lost0);
	ASSERT_EQ(0, put_range(self->pfd, self->buf, FULL_BS, 0, synced, 1, 0));
	ASSERT_EQ(0, nvt_sync_deadline(self->pfd, 30, NULL));
	ASSERT_EQ(0, PSTAT(self->pfd, lost_blocks));

	/* Twice the device behind them: the synced ones are reclaimed. */
	ASSERT_EQ(0, put_range(self->pfd, self->buf, FULL_BS, synced, more, 1,
			       0));
	ASSERT_EQ(0, nvt_sync_deadline(self->pfd, 30, NULL));
	for (i = 0; i < synced + more; i++)
		found += !kst_lookup1(self->pfd, K0, i, NULL);
	for (i = 0; i < synced; i++)
		EXPECT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, i, NULL));

	lost = PSTAT(self->pfd, lost_blocks);
	TH_LOG("%u of %u found, lost_blocks %lld", found, synced + more, lost);
	EXPECT_EQ(synced + more - found, lost);
	EXPECT_LE(synced, lost);
	EXPECT_EQ(lost, NSTAT(self->ctl, lost_blocks) - lost0);
	snprintf(path, sizeof(path), KST_SYSFS_DIR "/pools/%s/stat",
		 self->name);
	/* Its columns: sysfs-kernel-kvtier, lost_blocks the 11th of 14. */
	ASSERT_EQ(14, kst_read_cols(path, v, 14, 0));
	EXPECT_EQ(lost, v[10]);
	/* And the next SYNC still says 0. */
	ASSERT_EQ(0, nvt_sync_deadline(self->pfd, 30, NULL));
	EXPECT_EQ(0, PSTAT(self->pfd, drops));
	EXPECT_EQ(0, PSTAT(self->pfd, bad_reads));
}

/* SYNC of more dirty blocks than the device holds: -ENOSPC, no hang. */
TEST_F_TIMEOUT(full, sync_more_than_fits_enospc, 300)
{
	const unsigned int n = 1024;
	struct tally t;

	self->pfd = kst_pool_create(self->ctl, self->name, FULL_BS, n, n);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(0, put_range(self->pfd, self->buf, FULL_BS, 0, n, 1, 0));
	ASSERT_EQ(-ENOSPC, nvt_sync_deadline(self->pfd, 30, NULL));
	tally_range(self->pfd, self->buf, FULL_BS, 0, n, 1, &t, NULL);
	EXPECT_EQ(n, t.exact);
}

/* ==== power cuts at every point of a write log (dm-log-writes) ========= */

/*
 * dm-log-writes records every write to a device, with FUA and flushes
 * where they happened, on another device
 * (Documentation/admin-guide/device-mapper/log-writes.rst), in the order
 * they became durable on a drive with a volatile write cache: a FUA write
 * when it completes, any other write only with the flush that follows it.
 * Replaying the first N entries onto the device's initial content gives
 * what a power cut that empties the cache leaves after the N-th durable
 * write; the N+1-th may be torn too (a device keeps any part of a write
 * in flight: here its first page, or all of it but the last page). So the
 * cuts test the segment writer's flush ahead of each FUA summary: without
 * it, a cut just after a summary loses the data it names. (A drive
 * without a write cache is nvme-crash.sh's every third round.) The workload: PUT 16 blocks and
 * SYNC; REPLACE them and SYNC; REPLACE half of them again, PUT 16 new ones
 * and SYNC; a mark after each SYNC. Every prefix must attach, bring the
 * pool back, and hold every acknowledged block in its acknowledged
 * generation or a newer one, exact; nothing else may read wrong.
 */

#define LW_MAGIC	0x6a736677736872ULL
#define LW_FLUSH	(1U << 0)
#define LW_DISCARD	(1U << 2)
#define LW_MARK		(1U << 3)
#define LW_MAX		4096

struct lw_super {
	__u64 magic;
	__u64 version;
	__u64 nr_entries;
	__u32 sectorsize;
};

struct lw_entry {
	__u64 sector;
	__u64 nr_sectors;
	__u64 flags;
	__u64 data_len;
};

struct lw_op {
	__u64 off, len;		/* bytes on the device */
	__u64 flags;
	char *data;		/* NULL: zeroes (discard) */
	int mark;		/* 1.. for marks "synced1".., else 0 */
};

#define LW_BS		(16 * KST_KIB)
#define LW_DEV_MIB	32
#define LW_BASE_PATH	"/dev/mapper/" DM_BASE
#define LW_PATH		"/dev/mapper/" DM_LW
#define LW_LOGDEV	"/dev/nvme1n1"
#define LW_POOL		"kst-nvt-replay"

FIXTURE(replay) {
	struct nvt_fix;
	struct lw_op *ops;
	unsigned int nr_ops;
	char *zero;		/* LW_DEV_MIB of zeroes */
};

/* DM_BASE: the first LW_DEV_MIB of the device; the log on LW_LOGDEV. */
static const struct nvt_cfg replay_cfg = {
	.block_size = LW_BS, .dm_need = NVT_DM_LINEAR,
	.dm_extra = "log-writes", .dm = DM_BASE, .dm_mib = LW_DEV_MIB,
	.dev2 = LW_LOGDEV,
};

FIXTURE_SETUP(replay)
{
	char table[256];

	nvt_setup(_metadata, NVT_FIX(self), &replay_cfg);
	self->ops = calloc(LW_MAX, sizeof(*self->ops));
	ASSERT_NE(NULL, self->ops);
	self->zero = kst_alloc(LW_DEV_MIB * KST_MIB);
	ASSERT_NE(NULL, self->zero);
	memset(self->zero, 0, LW_DEV_MIB * KST_MIB);
	/* Initial content: zeroes; an empty log. */
	ASSERT_EQ(0, nvt_raw_write(LW_BASE_PATH, 0, self->zero,
				   LW_DEV_MIB * KST_MIB));
	ASSERT_EQ(0, nvt_raw_write(LW_LOGDEV, 0, self->zero, KST_MIB));
	snprintf(table, sizeof(table), "0 %llu log-writes %s %s",
		 LW_DEV_MIB * KST_MIB / 512, LW_BASE_PATH, LW_LOGDEV);
	ASSERT_EQ(0, nvt_dm_create(DM_LW, table));
}

FIXTURE_TEARDOWN(replay)
{
	unsigned int i;

	if (self->ops)
		for (i = 0; i < self->nr_ops; i++)
			free(self->ops[i].data);
	free(self->ops);
	if (self->zero)
		kst_free(self->zero, LW_DEV_MIB * KST_MIB);
	nvt_teardown(NVT_FIX(self));
}

static int lw_mark(const char *what)
{
	return nvt_sh("dmsetup message %s 0 mark %s", DM_LW, what);
}

/* Read the log into self->ops; 0 or -errno. */
static int lw_parse(FIXTURE_DATA(replay) *self)
{
	size_t len = 16 * KST_MIB;
	char *log = kst_alloc(len);
	struct lw_super sup;
	__u64 pos, i;
	int ret;

	if (!log)
		return -ENOMEM;
	ret = nvt_raw_read(LW_LOGDEV, 0, log, len);
	if (ret)
		goto out;
	memcpy(&sup, log, sizeof(sup));
	ret = -EBADMSG;
	if (sup.magic != LW_MAGIC || sup.sectorsize < 512 ||
	    sup.sectorsize > NVT_DISK_PAGE || sup.nr_entries > LW_MAX)
		goto out;
	pos = sup.sectorsize;
	for (i = 0; i < sup.nr_entries; i++) {
		struct lw_op *op = &self->ops[self->nr_ops];
		struct lw_entry e;

		if (pos + sup.sectorsize > len)
			goto out;
		memcpy(&e, log + pos, sizeof(e));
		pos += sup.sectorsize;
		if (e.flags & LW_MARK) {
			const char *text = log + pos - sup.sectorsize + sizeof(e);

			if (e.data_len >= 7 && !strncmp(text, "synced", 6))
				op->mark = text[6] - '0';
			else
				continue;
		} else if (e.flags & LW_DISCARD) {
			op->off = e.sector * sup.sectorsize;
			op->len = e.nr_sectors * sup.sectorsize;
		} else if (e.nr_sectors) {
			op->off = e.sector * sup.sectorsize;
			op->len = e.nr_sectors * sup.sectorsize;
			if (pos + op->len > len)
				goto out;
			op->data = malloc(op->len);
			if (!op->data) {
				ret = -ENOMEM;
				goto out;
			}
			memcpy(op->data, log + pos, op->len);
			pos += op->len;
		} else {
			continue;	/* a flush: no data */
		}
		op->flags = e.flags;
		self->nr_ops++;
	}
	ret = 0;
out:
	kst_free(log, len);
	return ret;
}

/*
 * The base device as a power cut after op @n left it, with the first
 * @torn bytes of op @n written too.
 */
static int lw_replay(FIXTURE_DATA(replay) *self, unsigned int n, __u64 torn)
{
	int fd, ret = 0;
	unsigned int i;

	fd = open(LW_BASE_PATH, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (pwrite(fd, self->zero, LW_DEV_MIB * KST_MIB, 0) !=
	    (ssize_t)(LW_DEV_MIB * KST_MIB))
		ret = -EIO;
	for (i = 0; !ret && i < n + !!torn; i++) {
		struct lw_op *op = &self->ops[i];
		__u64 len = i < n ? op->len : torn;
		size_t alen = (len + KST_PAGE - 1) & ~(KST_PAGE - 1);
		char *src;

		if (op->mark || !len)
			continue;
		/* O_DIRECT wants aligned memory. */
		src = kst_alloc(alen);
		if (!src) {
			ret = -ENOMEM;
			break;
		}
		if (op->data)
			memcpy(src, op->data, len);
		if (pwrite(fd, src, len, op->off) != (ssize_t)len)
			ret = -EIO;
		kst_free(src, alen);
	}
	if (!ret && fsync(fd))
		ret = -errno;
	close(fd);
	return ret;
}

/* Oldest and newest generation key @k may have after @marks SYNCs. */
static void lw_want(unsigned int k, int marks, __u64 *lo, __u64 *hi)
{
	if (k < 8) {
		*hi = 3;
		*lo = marks;			/* 0: may be absent */
	} else if (k < 16) {
		*hi = 2;
		*lo = marks < 2 ? marks : 2;
	} else {
		*hi = 1;
		*lo = marks >= 3;
	}
}

/* Check the replayed device; 0, or what went wrong (logged). */
static int lw_check(struct __test_metadata *_metadata,
		    FIXTURE_DATA(replay) *self, unsigned int n, __u64 torn,
		    int marks)
{
	int pfd, ret, bad = 0;
	unsigned int k;

	ret = nvt_attach(self->ctl, LW_BASE_PATH, 0, 0);
	if (ret) {
		TH_LOG("cut after op %u + %llu bytes (%d SYNCs done): attach %d", n,
		       (unsigned long long)torn, marks, ret);
		return ret;
	}
	pfd = kst_pool_open(self->ctl, LW_POOL, 0);
	if (pfd < 0) {
		TH_LOG("cut after op %u + %llu bytes (%d SYNCs done): pool open %d",
		       n, (unsigned long long)torn, marks, pfd);
		bad = pfd;
		goto out_detach;
	}
	for (k = 0; k < 32; k++) {
		__u64 lo, hi, gen = 0;

		lw_want(k, marks, &lo, &hi);
		memset(self->buf, 0, LW_BS);
		ret = kst_get1(pfd, K0, k, self->buf, NULL);
		if (!ret && kst_check(self->buf, LW_BS, K0, k, &gen) != -1)
			ret = -EILSEQ;
		if (!ret) {
			gen ^= salt;
			if (gen >= (lo ? lo : 1) && gen <= hi)
				continue;
			TH_LOG("cut after op %u + %llu bytes (%d SYNCs done): key %u generation %llu, want %llu..%llu",
			       n, (unsigned long long)torn, marks, k,
			       (unsigned long long)gen,
			       (unsigned long long)lo, (unsigned long long)hi);
			bad = -EILSEQ;
		} else if (ret != -ENOENT || lo) {
			TH_LOG("cut after op %u + %llu bytes (%d SYNCs done): key %u: %d, want generation %llu..%llu",
			       n, (unsigned long long)torn, marks, k, ret,
			       (unsigned long long)lo,
			       (unsigned long long)hi);
			bad = ret;
		}
	}
	close(pfd);
out_detach:
	nvt_detach(self->ctl);
	/* Forget the pool (detached: the replayed device keeps its slot). */
	kst_pool_destroy(self->ctl, LW_POOL);
	return bad;
}

TEST_F_TIMEOUT(replay, every_power_cut, 600)
{
	unsigned int n, first = 0, failed = 0;
	int pfd, marks = 0;

	/* The workload, through the logging device. */
	ASSERT_EQ(0, nvt_attach(self->ctl, LW_PATH, KVTIER_NVME_FORMAT, 1024));
	pfd = kst_pool_create(self->ctl, LW_POOL, LW_BS, 64, 64);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, lw_mark("created"));
	ASSERT_EQ(0, put_range(pfd, self->buf, LW_BS, 0, 16, 1, 0));
	ASSERT_EQ(0, nvt_sync(pfd, NULL));
	ASSERT_EQ(0, lw_mark("synced1"));
	ASSERT_EQ(0, put_range(pfd, self->buf, LW_BS, 0, 16, 2,
			       KVTIER_PUT_REPLACE));
	ASSERT_EQ(0, nvt_sync(pfd, NULL));
	ASSERT_EQ(0, lw_mark("synced2"));
	ASSERT_EQ(0, put_range(pfd, self->buf, LW_BS, 0, 8, 3,
			       KVTIER_PUT_REPLACE));
	ASSERT_EQ(0, put_range(pfd, self->buf, LW_BS, 16, 16, 1, 0));
	ASSERT_EQ(0, nvt_sync(pfd, NULL));
	ASSERT_EQ(0, lw_mark("synced3"));
	close(pfd);
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, LW_POOL));
	ASSERT_EQ(0, nvt_dm_remove(DM_LW));

	ASSERT_EQ(0, lw_parse(self));
	TH_LOG("%u writes and marks logged", self->nr_ops);
	/*
	 * Cuts from the pool's slot write on (the pool exists on the device):
	 * the last pool table write before the "created" mark. (The format's
	 * table write may reach the log split into page-sized bios too.)
	 */
	for (n = 0; n < self->nr_ops && self->ops[n].mark != 1; n++)
		if (!self->ops[n].mark &&
		    self->ops[n].off >= NVT_POOL_TABLE_OFF &&
		    self->ops[n].off < NVT_POOL_TABLE_OFF +
				       NVT_POOL_SLOTS * sizeof(struct nvt_disk_pool))
			first = n + 1;
	ASSERT_LT(0U, first);
	for (n = first; n <= self->nr_ops; n++) {
		__u64 torn[3] = { 0, NVT_DISK_PAGE, 0 };
		unsigned int t;

		if (self->ops[n - 1].mark)
			marks = self->ops[n - 1].mark;
		/* Op n (if any) torn: its first page, or all but its last. */
		if (n < self->nr_ops && self->ops[n].len > NVT_DISK_PAGE)
			torn[2] = self->ops[n].len - NVT_DISK_PAGE;
		for (t = 0; t < 3; t++) {
			if (t && !torn[2])
				break;
			ASSERT_EQ(0, lw_replay(self, n, torn[t]));
			if (lw_check(_metadata, self, n, torn[t], marks))
				failed++;
		}
	}
	ASSERT_EQ(3, marks);
	ASSERT_EQ(0U, failed);
}

TEST_HARNESS_MAIN
