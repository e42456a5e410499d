// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier's compressed NVMe tier (KVTIER_F_COMPRESS), for each compressor,
 * with and without byte planes, with blocks of one frame and of four:
 *
 *  - POOL_CREATE's errnos: the feature not negotiated, an unknown
 *    compressor or flag, a flag without a compressor, parts with one, and
 *    a compressor the kernel cannot load (-ENOPKG: its module refused
 *    through /run/modprobe.d); NVME_ATTACH's -ENOPKG for a device that
 *    records a pool of such a compressor;
 *  - compressible blocks are stored compressed, random ones as they are,
 *    and every one reads back exact, from the device, after a detach and
 *    an attach (the store's record of each copy and of the pool), and
 *    counted in STAT and NVME_STAT;
 *  - a stored byte flipped, in a frame or in the header, is a miss, never
 *    wrong bytes (z_bad, bad_reads);
 *  - read errors of a flaky device are misses or exact blocks;
 *  - a compressor that fails (fail_compress, debug kernels) writes the
 *    block raw, a decompression that fails is a miss.
 *
 * Runs as root on /dev/nvme0n1 (or $KVTIER_NVME_DEV), whose content it
 * destroys; skipped when the device is missing.
 */
#include "nvme_fixture.h"

#define CZ_CAP		64U
#define CZ_DRAM		8U
#define CZ_N		48U		/* blocks PUT by most cases */
#define FAIL_COMPRESS	"/sys/kernel/debug/kvtier/fail_compress/"
#define MODPROBE_CONF	"/run/modprobe.d/kvtier-test-compress.conf"

/*
 * KV-like bytes for block @k: 16-bit elements whose high byte is one of
 * four values and whose low byte is a hash of the key and the element,
 * each 4 KiB page's second half a copy of its first; compressible by
 * every compressor, with or without planes. Word 0 is the key.
 */
static void cz_fill(void *buf, size_t size, __u64 k)
{
	__u8 *b = buf;
	size_t p, i;
	__u64 x;

	for (p = 0; p < size; p += KST_PAGE) {
		for (i = 0; i < KST_PAGE / 2; i += 2) {
			x = kst_mix(k * 0x10001ULL + p + i);
			b[p + i] = x;
			b[p + i + 1] = 0x38 + ((x >> 8) & 3);
		}
		memcpy(b + p + KST_PAGE / 2, b + p, KST_PAGE / 2);
	}
	memcpy(b, &k, sizeof(k));
}

/* Block @k: compressible for even keys, random (kst_fill) for odd ones. */
static void cz_block(void *buf, size_t size, __u64 k)
{
	if (k % 2)
		kst_fill(buf, size, K0, k, GEN(1));
	else
		cz_fill(buf, size, k);
}

static int cz_put(int pfd, void *buf, __u64 bs, __u64 first, __u64 n)
{
	return put_filled(pfd, buf, bs, first, n, cz_block);
}

/* GET key @k: 0 exact, -EILSEQ wrong bytes, or the miss's -errno. */
static int cz_get(int pfd, void *buf, void *want, __u64 bs, __u64 k)
{
	int ret;

	memset(buf, 0xa5, bs);
	ret = kst_get1(pfd, K0, k, buf, NULL);
	if (ret)
		return ret;
	cz_block(want, bs, k);
	return memcmp(buf, want, bs) ? -EILSEQ : 0;
}

struct cz_tally {
	unsigned int exact, miss, wrong, other;
};

static void cz_tally(int pfd, void *buf, void *want, __u64 bs, __u64 n,
		     struct cz_tally *t)
{
	__u64 k;

	memset(t, 0, sizeof(*t));
	for (k = 0; k < n; k++) {
		int ret = cz_get(pfd, buf, want, bs, k);

		if (!ret)
			t->exact++;
		else if (ret == -ENOENT)
			t->miss++;
		else if (ret == -EILSEQ)
			t->wrong++;
		else
			t->other++;
	}
}

/* The tier of key @k: KVTIER_TIER_*, or -errno. */
static int cz_tier(int pfd, __u64 k)
{
	struct kvtier_block b;
	int ret = kst_lookup1(pfd, K0, k, &b);

	return ret ? ret : (int)b.tier;
}

/*
 * Push every block of [0, n) out of DRAM: PUT as many others as DRAM
 * holds (keys from 1000), and SYNC.
 */
static int cz_push_out(int pfd, void *buf, __u64 bs, __u64 n)
{
	__u64 k;
	int ret;

	ret = cz_put(pfd, buf, bs, 1000, CZ_DRAM) ?: nvt_sync(pfd, NULL);
	for (k = 0; !ret && k < n; k++)
		if (cz_tier(pfd, k) != KVTIER_TIER_NVME)
			ret = -EAGAIN;
	return ret;
}

/* PUT keys [0, n), SYNC, and push them all out of DRAM. */
static int cz_store(int pfd, void *buf, __u64 bs, __u64 n)
{
	return cz_put(pfd, buf, bs, 0, n) ?: nvt_sync(pfd, NULL) ?:
	       cz_push_out(pfd, buf, bs, n);
}

FIXTURE(cz) {
	struct nvt_fix;		/* buf, out: one block each */
};

FIXTURE_VARIANT(cz) {
	struct nvt_cfg cfg;
};

#define CZ_CFG(bs, z, zf) {						\
	.block_size = (bs), .out = true, .writer_ok = true,		\
	.tag = "cz", .capacity = CZ_CAP, .dram_blocks = CZ_DRAM,	\
	.attach = true, .reattach = true, .compress = (z),		\
	.compress_flags = (zf),						\
}

FIXTURE_VARIANT_ADD(cz, lz4_b64k) {
	.cfg = CZ_CFG(64 * KST_KIB, KVTIER_COMPRESS_LZ4, 0),
};
FIXTURE_VARIANT_ADD(cz, lz4hc_b256k_planes) {
	.cfg = CZ_CFG(256 * KST_KIB, KVTIER_COMPRESS_LZ4HC,
		      KVTIER_COMPRESS_SHUFFLE2),
};
FIXTURE_VARIANT_ADD(cz, zstd_b256k) {
	.cfg = CZ_CFG(256 * KST_KIB, KVTIER_COMPRESS_ZSTD, 0),
};
FIXTURE_VARIANT_ADD(cz, zstd_b64k_planes) {
	.cfg = CZ_CFG(64 * KST_KIB, KVTIER_COMPRESS_ZSTD,
		      KVTIER_COMPRESS_SHUFFLE2),
};

FIXTURE_SETUP(cz)
{
	nvt_setup(_metadata, NVT_FIX(self), &variant->cfg);
}

FIXTURE_TEARDOWN(cz)
{
	unlink(MODPROBE_CONF);
	nvt_teardown(NVT_FIX(self));
}

/* A create that must fail with @err, and leave no pool. */
static int cz_create(int ctl, const char *name, __u8 z, __u8 zf, __u32 parts)
{
	struct kvtier_pool_create c;
	int fd;

	kst_create_init(&c, name, 64 * KST_KIB, CZ_CAP, CZ_DRAM);
	c.compress = z;
	c.compress_flags = zf;
	c.parts = parts;
	fd = kst_create(ctl, &c);
	if (fd >= 0)
		close(fd);
	return fd < 0 ? fd : 0;
}

/* Every bad POOL_CREATE of a compressed pool, one bad field each. */
TEST_F(cz, create_errnos)
{
	char name[KVTIER_NAME_MAX];
	struct kvtier_pool_stat st;
	int ctl;

	kst_name(name, "cz-bad");
	EXPECT_EQ(-EINVAL, cz_create(self->ctl, name, KVTIER_COMPRESS_MAX + 1,
				     0, 0));
	EXPECT_EQ(-EINVAL, cz_create(self->ctl, name, 255, 0, 0));
	EXPECT_EQ(-EINVAL, cz_create(self->ctl, name, KVTIER_COMPRESS_LZ4,
				     KVTIER_COMPRESS_FLAGS + 1, 0));
	EXPECT_EQ(-EINVAL, cz_create(self->ctl, name, 0,
				     KVTIER_COMPRESS_SHUFFLE2, 0));
	EXPECT_EQ(-EINVAL, cz_create(self->ctl, name, KVTIER_COMPRESS_LZ4, 0,
				     4));
	EXPECT_EQ(-ENOENT, kst_pool_open(self->ctl, name, 0));

	/* Without the feature negotiated. */
	ctl = kst_ctl_open_raw();
	ASSERT_LE(0, ctl);
	ASSERT_EQ(0, kst_api(ctl, KST_F_KNOWN & ~KVTIER_F_COMPRESS, NULL));
	EXPECT_EQ(-EOPNOTSUPP, cz_create(ctl, name, KVTIER_COMPRESS_LZ4, 0,
					 0));
	EXPECT_EQ(0, cz_create(ctl, name, 0, 0, 0));
	close(ctl);
	EXPECT_EQ(0, kst_pool_destroy(self->ctl, name));

	/* The fixture's pool says what it was made with. */
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	EXPECT_EQ(variant->cfg.compress, st.compress);
	EXPECT_EQ(variant->cfg.compress_flags, st.compress_flags);
	EXPECT_EQ(0, st.__pad3);
	EXPECT_EQ(0U, st.__pad4);
}

/*
 * Refuse lz4hc's module (a modprobe.d file in /run) after unloading it:
 * NULL, or why that cannot be done (in use, or built in).
 */
static const char *cz_refuse_lz4hc(void)
{
	nvt_sh("rmmod lz4hc >/dev/null 2>&1");
	if (!nvt_sh("grep -qw '^lz4hc' /proc/modules"))
		return "lz4hc loaded and in use";
	if (!nvt_sh("grep -qx 'name *: lz4hc' /proc/crypto"))
		return "lz4hc built in";
	if (nvt_sh("mkdir -p /run/modprobe.d && printf '%%s\\n' "
		   "'install lz4hc /bin/false' "
		   "'install crypto-lz4hc /bin/false' > " MODPROBE_CONF))
		return "cannot write " MODPROBE_CONF;
	return NULL;
}

/* A compressor the kernel cannot load: -ENOPKG, no pool. */
TEST_F(cz, create_enopkg)
{
	char name[KVTIER_NAME_MAX];
	const char *why;

	if (variant->cfg.compress != KVTIER_COMPRESS_ZSTD ||
	    variant->cfg.block_size != 256 * KST_KIB)
		SKIP(return, "run once, in the zstd_b256k variant");
	why = cz_refuse_lz4hc();
	if (why)
		SKIP(return, "%s", why);
	kst_name(name, "cz-pkg");
	EXPECT_EQ(-ENOPKG, cz_create(self->ctl, name, KVTIER_COMPRESS_LZ4HC,
				     0, 0));
	EXPECT_EQ(-ENOENT, kst_pool_open(self->ctl, name, 0));
	unlink(MODPROBE_CONF);
	/* Loadable again: the same create works. */
	EXPECT_EQ(0, cz_create(self->ctl, name, KVTIER_COMPRESS_LZ4HC, 0, 0));
	kst_pool_destroy(self->ctl, name);
}

/*
 * A device recording a pool whose compressor cannot be loaded is refused
 * with -ENOPKG, not attached without the pool (whose blocks the next
 * writes would reclaim); once the compressor loads, it attaches with
 * every block.
 */
TEST_F(cz, attach_enopkg)
{
	struct cz_tally t;
	const char *why;

	if (variant->cfg.compress != KVTIER_COMPRESS_LZ4HC)
		SKIP(return, "run in the lz4hc variant");
	ASSERT_EQ(0, cz_put(self->pfd, self->buf, self->bs, 0, CZ_N));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	close(self->pfd);
	self->pfd = -1;
	/* Gone from memory, not from the device: lz4hc is unused. */
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, self->name));
	why = cz_refuse_lz4hc();
	if (why) {
		ASSERT_EQ(0, nvt_attach(self->ctl, self->path, 0, 0));
		SKIP(return, "%s", why);
	}
	EXPECT_EQ(-ENOPKG, nvt_attach(self->ctl, self->path, 0, 0));
	EXPECT_EQ(0, nvt_attached(self->ctl));
	EXPECT_EQ(-ENOENT, kst_pool_open(self->ctl, self->name, 0));
	unlink(MODPROBE_CONF);

	ASSERT_EQ(0, nvt_attach(self->ctl, self->path, 0, 0));
	self->pfd = kst_pool_open(self->ctl, self->name, 0);
	ASSERT_LE(0, self->pfd);
	cz_tally(self->pfd, self->buf, self->out, self->bs, CZ_N, &t);
	EXPECT_EQ(CZ_N, t.exact);
	EXPECT_EQ(0U, t.wrong);
}

/*
 * Compressible blocks go to the device compressed, random ones as they
 * are; all read back exact, and the counters say so.
 */
TEST_F(cz, round_trip)
{
	struct kvtier_pool_stat st;
	struct kvtier_nvme_stat ns;
	struct cz_tally t;

	ASSERT_EQ(0, cz_store(self->pfd, self->buf, self->bs, CZ_N));
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	EXPECT_LE((__u64)CZ_N / 2, st.z_blocks);
	EXPECT_LE((__u64)CZ_N / 2, st.z_raw_blocks);
	EXPECT_EQ((st.z_blocks + st.z_raw_blocks) * self->bs, st.z_bytes_in);
	/* Each compressible block saves a quarter at least (cz_fill). */
	EXPECT_GT(st.z_bytes_in - st.z_blocks * self->bs / 4,
		  st.z_bytes_stored);
	EXPECT_EQ(0U, st.z_bad);
	TH_LOG("%llu compressed, %llu raw: %llu bytes stored for %llu (%.2fx)",
	       (unsigned long long)st.z_blocks,
	       (unsigned long long)st.z_raw_blocks,
	       (unsigned long long)st.z_bytes_stored,
	       (unsigned long long)st.z_bytes_in,
	       (double)st.z_bytes_in / st.z_bytes_stored);
	ASSERT_EQ(0, nvt_nstat(self->ctl, &ns));
	EXPECT_GT(ns.bytes_demoted, ns.bytes_stored);
	EXPECT_LT(ns.bytes_written, ns.bytes_demoted);

	cz_tally(self->pfd, self->buf, self->out, self->bs, CZ_N, &t);
	EXPECT_EQ(CZ_N, t.exact);
	EXPECT_EQ(0U, t.wrong);
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	EXPECT_EQ(0U, st.bad_reads);
	EXPECT_LE((__u64)(CZ_N - CZ_DRAM), st.promotions);
}

/* Blocks that do not shrink: all raw, stored as demoted. */
TEST_F(cz, random_stays_raw)
{
	struct kvtier_pool_stat st;
	struct kvtier_nvme_stat ns;
	__u64 k;

	for (k = 1; k < 2 * 16; k += 2)
		ASSERT_EQ(0, cz_put(self->pfd, self->buf, self->bs, k, 1));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	EXPECT_EQ(0U, st.z_blocks);
	EXPECT_EQ(16U, st.z_raw_blocks);
	EXPECT_EQ(st.z_bytes_in, st.z_bytes_stored);
	ASSERT_EQ(0, nvt_nstat(self->ctl, &ns));
	EXPECT_EQ(ns.bytes_demoted, ns.bytes_stored);
	for (k = 1; k < 2 * 16; k += 2)
		EXPECT_EQ(0, cz_get(self->pfd, self->buf, self->out, self->bs,
				    k));
}

/* Detach and attach: the pool's compressor and every copy come back. */
TEST_F(cz, replay)
{
	struct kvtier_pool_stat st;
	struct cz_tally t;

	ASSERT_EQ(0, cz_put(self->pfd, self->buf, self->bs, 0, CZ_N));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	close(self->pfd);
	self->pfd = -1;
	ASSERT_EQ(0, nvt_detach(self->ctl));
	/* Gone from memory, not from the device: attach restores it. */
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, self->name));
	ASSERT_EQ(0, nvt_attach(self->ctl, self->path, 0, 0));
	self->pfd = kst_pool_open(self->ctl, self->name, 0);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	EXPECT_EQ(variant->cfg.compress, st.compress);
	EXPECT_EQ(variant->cfg.compress_flags, st.compress_flags);
	EXPECT_EQ((__u64)CZ_N, st.resident[KVTIER_TIER_NVME]);
	cz_tally(self->pfd, self->buf, self->out, self->bs, CZ_N, &t);
	EXPECT_EQ(CZ_N, t.exact);
	EXPECT_EQ(0U, t.wrong);
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	EXPECT_EQ(0U, st.bad_reads);
}

/*
 * A byte of a compressed copy flipped on the device: in a frame, then in
 * the header of another. Each is a miss, counted; no wrong bytes.
 */
TEST_F(cz, corrupt_copy)
{
	struct kvtier_pool_stat st;
	struct nvt_loc loc;
	struct cz_tally t;

	ASSERT_EQ(0, cz_store(self->pfd, self->buf, self->bs, CZ_N));
	ASSERT_EQ(0, nvt_find_block(self->path, K0, 2, &loc));
	ASSERT_NE(0U, loc.flags & NVT_REC_Z) TH_LOG("key 2 is not compressed");
	ASSERT_EQ(0, nvt_raw_flip(self->path, loc.data_off + 1000, 0x10));
	ASSERT_EQ(0, nvt_find_block(self->path, K0, 4, &loc));
	ASSERT_EQ(0, nvt_raw_flip(self->path, loc.data_off + 12, 0x01));

	cz_tally(self->pfd, self->buf, self->out, self->bs, CZ_N, &t);
	EXPECT_EQ(CZ_N - 2, t.exact);
	EXPECT_EQ(2U, t.miss);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, 2, NULL));
	EXPECT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, 4, NULL));
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	EXPECT_EQ(2U, st.z_bad);
	EXPECT_EQ(2U, st.bad_reads);
}

/* A compressor and a decompressor that fail (debug kernels): raw, miss. */
TEST_F(cz, compressor_fails)
{
	struct kvtier_pool_stat st;
	struct cz_tally t;

	if (access(FAIL_COMPRESS "probability", W_OK))
		SKIP(return, "no " FAIL_COMPRESS " (fault injection)");
	ASSERT_EQ(0, kst_write_num(FAIL_COMPRESS "probability", 100));
	ASSERT_EQ(0, kst_write_num(FAIL_COMPRESS "times", -1));
	ASSERT_EQ(0, cz_put(self->pfd, self->buf, self->bs, 0, 16));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(0, kst_write_num(FAIL_COMPRESS "probability", 0));
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	EXPECT_EQ(0U, st.z_blocks);
	EXPECT_EQ(16U, st.z_raw_blocks);

	/* Compressed copies now, then their decompressions fail. */
	ASSERT_EQ(0, cz_put(self->pfd, self->buf, self->bs, 16, 16));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(0, cz_push_out(self->pfd, self->buf, self->bs, 32));
	ASSERT_EQ(0, kst_write_num(FAIL_COMPRESS "probability", 100));
	cz_tally(self->pfd, self->buf, self->out, self->bs, 32, &t);
	ASSERT_EQ(0, kst_write_num(FAIL_COMPRESS "probability", 0));
	EXPECT_EQ(0U, t.wrong);
	EXPECT_LE(16U + 8U, t.exact);	/* the raw ones, and the odd keys */
	EXPECT_LE(1U, t.miss);
}

/* Read errors of a flaky device: misses or exact blocks, never wrong. */
FIXTURE(czdm) {
	struct nvt_fix;
};

FIXTURE_VARIANT(czdm) {
	struct nvt_cfg cfg;
};

FIXTURE_VARIANT_ADD(czdm, zstd_b64k_planes) {
	.cfg = {
		.block_size = 64 * KST_KIB, .out = true, .writer_ok = true,
		.tag = "czdm", .capacity = CZ_CAP, .dram_blocks = CZ_DRAM,
		.dm_need = NVT_DM_LINEAR | NVT_DM_FLAKEY, .dm = DM_FAULT,
		.dm_mib = 64, .attach = true, .reattach = true, .heal = true,
		.compress = KVTIER_COMPRESS_ZSTD,
		.compress_flags = KVTIER_COMPRESS_SHUFFLE2,
	},
};

FIXTURE_SETUP(czdm)
{
	nvt_setup(_metadata, NVT_FIX(self), &variant->cfg);
}

FIXTURE_TEARDOWN(czdm)
{
	nvt_teardown(NVT_FIX(self));
}

/* A flakey table that is always down, with @features. */
static int czdm_flakey(FIXTURE_DATA(czdm) *self, const char *features)
{
	char table[512];

	snprintf(table, sizeof(table), "0 %lld flakey %s 0 0 1 %s",
		 self->sectors, nvt_dev(), features);
	return nvt_dm_reload(DM_FAULT, table);
}

/* Every read fails: compressed copies are misses, never a hang. */
TEST_F_TIMEOUT(czdm, read_errors_are_misses, 240)
{
	struct cz_tally t;

	ASSERT_EQ(0, cz_store(self->pfd, self->buf, self->bs, CZ_N));
	ASSERT_EQ(0, czdm_flakey(self, "0"));
	cz_tally(self->pfd, self->buf, self->out, self->bs, CZ_N, &t);
	ASSERT_EQ(0, nvt_dm_reload(DM_FAULT, self->linear));
	TH_LOG("read errors: %u exact, %u misses", t.exact, t.miss);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0U, t.other);
	EXPECT_EQ(CZ_N, t.exact + t.miss);
	EXPECT_LE(CZ_N - CZ_DRAM, t.miss);
}

/* Writes silently dropped: what reads back does not verify, a miss. */
TEST_F_TIMEOUT(czdm, dropped_writes_are_misses, 240)
{
	struct cz_tally t;

	ASSERT_EQ(0, czdm_flakey(self, "1 drop_writes"));
	ASSERT_EQ(0, cz_store(self->pfd, self->buf, self->bs, CZ_N));
	cz_tally(self->pfd, self->buf, self->out, self->bs, CZ_N, &t);
	ASSERT_EQ(0, nvt_dm_reload(DM_FAULT, self->linear));
	TH_LOG("dropped writes: %u exact, %u misses", t.exact, t.miss);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0U, t.other);
	EXPECT_EQ(CZ_N, t.exact + t.miss);
	EXPECT_LE(CZ_N - CZ_DRAM, t.miss);
}

TEST_HARNESS_MAIN
