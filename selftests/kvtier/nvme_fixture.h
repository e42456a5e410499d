/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the NVMe tier tests (nvme_attach.c, nvme_tier.c, nvme_faults.c)
 * share, on top of nvme_test.h: their constants and the device-mapper
 * devices they make, block helpers that salt their generations per test,
 * SIGBUS probing of a mapping, the writer's fault injection knobs, and one
 * setup and teardown for all their fixtures (nvt_setup(), nvt_teardown()).
 *
 * The tests run as root on /dev/nvme0n1 (or $KVTIER_NVME_DEV), whose
 * content they destroy; the cases are skipped when the device is missing.
 */
#ifndef KVTIER_NVME_FIXTURE_H
#define KVTIER_NVME_FIXTURE_H

#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <sys/sysmacros.h>

#include "nvme_test.h"

#define CAP		256U
#define DRAM		8U

/*
 * The usual variant: the device attached, a pool of CAP blocks of @block
 * bytes, DRAM of them in DRAM, blocks checked by the writer's pattern.
 */
#define NVT_TIER_CFG(name, block) {					\
	.block_size = (block), .out = true, .writer_ok = true,		\
	.tag = (name), .capacity = CAP, .dram_blocks = DRAM,		\
	.attach = true, .reattach = true,				\
}
#define NPUT		64U		/* blocks PUT by most tests */
#define NCOLD		(NPUT - DRAM)	/* of which at least this many demoted */
#define K0		0x6e766d6574657374ULL	/* "nvmetest" */

/* Device-mapper devices these tests create (and remove). */
#define DM_HOLD		"kvt-nvt-hold"
#define DM_FAULT	"kvt-nvt-dm"
#define DM_SMALL	"kvt-nvt-small"
#define DM_ERR		"kvt-nvt-err"
#define DM_BASE		"kvt-nvt-base"
#define DM_LW		"kvt-nvt-lw"
#define DM_M0		"kvt-nvt-m0"	/* slices of the second drive */
#define DM_M1		"kvt-nvt-m1"
#define DM_M2		"kvt-nvt-m2"
#define DM_M3		"kvt-nvt-m3"

/* ---- helpers ------------------------------------------------------------ */

/*
 * Generations are salted per test, so bytes left on the device by an
 * earlier test (same keys, same places) never pass for this test's blocks.
 */
static __u64 salt;
#define GEN(g)	((__u64)(g) ^ salt)

static inline void new_salt(void)
{
	salt = kst_mix((__u64)getpid() << 32 ^ (__u64)(kst_mono() * 1e6)) << 8;
}

/* PUT keys first..first+n-1 of generation @gen; 0 or the first bad status. */
static inline int put_range(int pfd, void *buf, __u64 bs, __u64 first, __u64 n,
			    __u64 gen, __u32 flags)
{
	__u64 k;
	int ret;

	for (k = first; k < first + n; k++) {
		kst_fill(buf, bs, K0, k, GEN(gen));
		ret = kst_one(pfd, KVTIER_IOC_PUT, K0, k, buf, flags, NULL);
		if (ret)
			return ret;
	}
	return 0;
}

/* PUT keys first..first+n-1, block @k made by @fill(@buf, @bs, @k). */
static inline int put_filled(int pfd, void *buf, __u64 bs, __u64 first,
			     __u64 n, void (*fill)(void *buf, size_t size,
						   __u64 k))
{
	__u64 k;
	int ret;

	for (k = first; k < first + n; k++) {
		fill(buf, bs, k);
		ret = kst_one(pfd, KVTIER_IOC_PUT, K0, k, buf, 0, NULL);
		if (ret)
			return ret;
	}
	return 0;
}

/* GET key @k: 0 with the exact bytes of @gen, -EILSEQ on wrong bytes. */
static inline int get_check(int pfd, void *buf, __u64 bs, __u64 k, __u64 gen)
{
	int ret;

	memset(buf, 0xa5, bs);
	ret = kst_get1(pfd, K0, k, buf, NULL);
	if (ret)
		return ret;
	return kst_check_gen(buf, bs, K0, k, GEN(gen)) == -1 ? 0 : -EILSEQ;
}

struct tally {
	unsigned int exact, miss, eio, wrong, other;
	int first_other;
};

/* GET every key of a range and count the outcomes. */
static inline void tally_range(int pfd, void *buf, __u64 bs, __u64 first, __u64 n,
			       __u64 gen, struct tally *t, int *status)
{
	__u64 k;

	memset(t, 0, sizeof(*t));
	for (k = first; k < first + n; k++) {
		int ret = get_check(pfd, buf, bs, k, gen);

		if (status)
			status[k - first] = ret;
		if (!ret)
			t->exact++;
		else if (ret == -ENOENT)
			t->miss++;
		else if (ret == -EIO)
			t->eio++;
		else if (ret == -EILSEQ)
			t->wrong++;
		else if (!t->other++)
			t->first_other = ret;
	}
}

/* LOOKUP keys first..first+n-1 into @b; the batch result. */
static inline int lookup_range(int pfd, struct kvtier_block *b, __u64 first,
			       __u32 n, __u32 flags, __u32 *done)
{
	__u32 i;

	for (i = 0; i < n; i++)
		kst_blk(&b[i], K0, first + i, NULL);
	return kst_batch(pfd, KVTIER_IOC_LOOKUP, b, n, flags, done);
}

/* The tier a key is in by LOOKUP (without touching), or -errno. */
static inline int key_tier(int pfd, __u64 k)
{
	struct kvtier_block b;
	int ret = kst_lookup1(pfd, K0, k, &b);

	return ret ? ret : (int)b.tier;
}

/*
 * PUT new keys (*@next on, generation 1) until key @k has left DRAM; at
 * most 8 x DRAM of them (eviction order is the module's business). 0 once
 * it is out, -EBUSY if it stayed, or a PUT's status.
 */
static inline int push_out(int pfd, void *buf, __u64 bs, __u64 k, __u64 *next)
{
	unsigned int i;
	int ret;

	for (i = 0; i < 8 * DRAM; i++) {
		if (key_tier(pfd, k) != KVTIER_TIER_DRAM)
			return 0;
		ret = put_range(pfd, buf, bs, (*next)++, 1, 1, 0);
		if (ret)
			return ret;
	}
	return key_tier(pfd, k) == KVTIER_TIER_DRAM ? -EBUSY : 0;
}

static inline long long pool_stat_u64(int pfd, size_t off)
{
	struct kvtier_pool_stat st;
	int ret = kst_stat(pfd, &st);

	return ret ? ret : (long long)*(__u64 *)((char *)&st + off);
}

#define PSTAT(fd, field) \
	pool_stat_u64(fd, offsetof(struct kvtier_pool_stat, field))
#define RES_DRAM(fd)	PSTAT(fd, resident[KVTIER_TIER_DRAM])
#define RES_NVME(fd)	PSTAT(fd, resident[KVTIER_TIER_NVME])

static inline long long nvme_stat_u64(int ctl, size_t off)
{
	struct kvtier_nvme_stat st;
	int ret = nvt_nstat(ctl, &st);

	return ret ? ret : (long long)*(__u64 *)((char *)&st + off);
}

/* A __u64 field of struct kvtier_nvme_stat. */
#define NSTAT(ctl, field) \
	nvme_stat_u64(ctl, offsetof(struct kvtier_nvme_stat, field))

/* nr_regions, or -errno. */
static inline long long nvme_nr_regions(int ctl)
{
	struct kvtier_nvme_stat st;
	int ret = nvt_nstat(ctl, &st);

	return ret ? ret : (long long)st.nr_regions;
}

static inline long long nvme_free_regions(int ctl)
{
	struct kvtier_nvme_stat st;
	int ret = nvt_nstat(ctl, &st);

	return ret ? ret : (long long)st.free_regions;
}

/* Sectors of a block device, for dm tables; or -errno. */
static inline long long dev_sectors(const char *path)
{
	long long bytes = nvt_dev_bytes(path);

	return bytes < 0 ? bytes : bytes / 512;
}

/* A linear table over the first @sectors of the device under test. */
static inline void linear_table(char *t, size_t len, long long sectors)
{
	snprintf(t, len, "0 %lld linear %s 0", sectors, nvt_dev());
}

/*
 * Leave nothing from an earlier test: the device detached (the fault
 * devices healed first, so detach can write) and our dm devices gone.
 */
static inline void nvt_reset(int ctl)
{
	/* In removal order: holders before what they hold. */
	static const char * const names[] = { DM_LW, DM_FAULT, DM_SMALL,
					      DM_HOLD, DM_ERR, DM_BASE,
					      DM_M0, DM_M1, DM_M2, DM_M3 };
	char table[256];
	long long s;
	unsigned int i;

	/* The only one that may have a failing table. */
	if (nvt_dm_exists(DM_FAULT)) {
		s = dev_sectors("/dev/mapper/" DM_FAULT);
		if (s > 0) {
			linear_table(table, sizeof(table), s);
			nvt_dm_reload(DM_FAULT, table);
		}
	}
	if (nvt_attached(ctl) >= 1)
		nvt_detach_deadline(120);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (nvt_dm_exists(names[i]))
			nvt_dm_remove(names[i]);
}

/* Superblock uuid of the device under test (zero if none). */
static inline void sb_uuid(__u8 uuid[16])
{
	struct nvt_disk_sb sb;

	memset(uuid, 0, 16);
	if (!nvt_read_sb(nvt_dev(), &sb))
		memcpy(uuid, sb.uuid, 16);
}

/* ---- the segment writer's fault injection ------------------------------ */

/*
 * The writer's fault injection point (kmod/fault.c): present only on a
 * kernel with CONFIG_FAULT_INJECTION_DEBUG_FS (the debug-kernel lane).
 */
#define FAIL_WRITER	"/sys/kernel/debug/kvtier/fail_writer/"

/* Set one of its knobs; 0 or -errno. */
static inline int fail_writer_set(const char *knob, long long v)
{
	char path[128];

	snprintf(path, sizeof(path), FAIL_WRITER "%s", knob);
	return kst_write_num(path, v);
}

/* Read one; the value, or LLONG_MIN. */
static inline long long fail_writer_get(const char *knob)
{
	char path[128];
	long long v;

	snprintf(path, sizeof(path), FAIL_WRITER "%s", knob);
	return kst_read_cols(path, &v, 1, 0) == 1 ? v : LLONG_MIN;
}

/* ---- one setup for every fixture ----------------------------------------- */

/*
 * What an NVMe fixture's setup makes, in this order (each one optional):
 * a control fd, with no device attached and none of the dm devices above
 * left (nvt_reset()); block buffers; a linear dm device over the first
 * @dm_mib MiB of the device (all of it: 0); that dm device, or the device
 * itself, attached with FORMAT; a second device attached too; a pool.
 */
struct nvt_cfg {
	__u64 block_size;	/* of the buffers and of the pool */
	bool out;		/* a second block buffer */
	bool writer_ok;		/* fail_writer probability set to 0 first */
	const char *tag;	/* pool name tag (kst_name()); NULL: no name */
	__u32 capacity;		/* of the pool; 0: no pool made */
	__u32 dram_blocks;
	__u32 parts;		/* of the pool (KVTIER_F_PARTS) */
	__u8 compress;		/* its compressor (KVTIER_F_COMPRESS) */
	__u8 compress_flags;
	unsigned int dm_need;	/* NVT_DM_* targets, else the case is skipped */
	const char *dm_extra;	/* one more dm target, modprobe'd, or skip */
	const char *dm;		/* name of the linear dm device; NULL: none */
	long long dm_mib;	/* its size in MiB; 0: the whole device */
	bool attach;		/* attach the dm device, or the device, FORMAT */
	__u32 region_kib;	/* with this region size */
	const char *dev2;	/* a second device, else the case is skipped */
	bool attach2;		/* attach it too, FORMAT */
	bool reattach;		/* teardown: attach again first if detached */
	bool heal;		/* teardown: the dm device's linear table first */
};

/*
 * The data every NVMe fixture starts with, as an anonymous member
 * (-fms-extensions): FIXTURE(f) { struct nvt_fix; ... }, so that the tests
 * write self->ctl and the setup gets NVT_FIX(self).
 */
struct nvt_fix {
	const struct nvt_cfg *cfg;
	int ctl;		/* control fd */
	int pfd;		/* the pool, or -1 */
	char name[KVTIER_NAME_MAX];	/* its name (destroyed by the teardown) */
	__u64 bs;		/* block size */
	char *buf, *out;	/* one block each */
	const char *path;	/* what is attached: nvt_dev() or the dm device */
	char dm_path[64];	/* /dev/mapper/<cfg->dm> */
	long long sectors;	/* the dm device's size */
	char linear[256];	/* its healthy (linear) table */
};

#define NVT_FIX(self)	((struct nvt_fix *)(self))

/* FIXTURE_SETUP(): skip checks (nvt_setup_check()), then @cfg. */
static inline void nvt_setup(struct __test_metadata *_metadata,
			     struct nvt_fix *f, const struct nvt_cfg *cfg)
{
	struct stat st;

	nvt_setup_check(_metadata);
	if (cfg->dev2 && (stat(cfg->dev2, &st) || !S_ISBLK(st.st_mode) ||
			  !strcmp(nvt_dev(), cfg->dev2)))
		KST_SETUP_SKIP("%s missing (--nvme 2)", cfg->dev2);
	if (cfg->dm_need && !nvt_dm_target(cfg->dm_need))
		KST_SETUP_SKIP("no device-mapper target (mask %#x)",
			       cfg->dm_need);
	if (cfg->dm_extra &&
	    nvt_sh("modprobe dm-%s >/dev/null 2>&1 && "
		   "dmsetup targets | grep -qw '^%s'", cfg->dm_extra,
		   cfg->dm_extra))
		KST_SETUP_SKIP("no dm-%s", cfg->dm_extra);
	new_salt();
	f->cfg = cfg;
	f->pfd = -1;
	/* A test that timed out may have left writer failures on. */
	if (cfg->writer_ok)
		fail_writer_set("probability", 0);
	f->ctl = kst_ctl_open();
	ASSERT_LE(0, f->ctl);
	nvt_reset(f->ctl);
	f->bs = cfg->block_size;
	f->buf = kst_alloc(f->bs);
	ASSERT_NE(NULL, f->buf);
	if (cfg->out) {
		f->out = kst_alloc(f->bs);
		ASSERT_NE(NULL, f->out);
	}
	if (cfg->tag)
		kst_name(f->name, cfg->tag);
	f->path = nvt_dev();
	if (cfg->dm) {
		f->sectors = cfg->dm_mib ? cfg->dm_mib * (long long)(KST_MIB / 512) :
					   dev_sectors(nvt_dev());
		ASSERT_LT(0, f->sectors);
		linear_table(f->linear, sizeof(f->linear), f->sectors);
		ASSERT_EQ(0, nvt_dm_create(cfg->dm, f->linear));
		snprintf(f->dm_path, sizeof(f->dm_path), "/dev/mapper/%s",
			 cfg->dm);
		f->path = f->dm_path;
	}
	if (cfg->attach)
		ASSERT_EQ(0, nvt_attach(f->ctl, f->path, KVTIER_NVME_FORMAT,
					cfg->region_kib));
	if (cfg->attach2)
		ASSERT_EQ(0, nvt_attach(f->ctl, cfg->dev2, KVTIER_NVME_FORMAT,
					0));
	if (cfg->capacity) {
		struct kvtier_pool_create c;

		kst_create_init(&c, f->name, f->bs, cfg->capacity,
				cfg->dram_blocks);
		c.parts = cfg->parts;
		c.compress = cfg->compress;
		c.compress_flags = cfg->compress_flags;
		f->pfd = kst_create(f->ctl, &c);
		ASSERT_LE(0, f->pfd);
	}
}

/*
 * FIXTURE_TEARDOWN(): the pool destroyed (while attached, so that its pool
 * table slot is cleared), and nvt_reset().
 */
static inline void nvt_teardown(struct nvt_fix *f)
{
	const struct nvt_cfg *cfg = f->cfg;

	if (cfg->heal && nvt_dm_exists(cfg->dm))
		nvt_dm_reload(cfg->dm, f->linear);
	if (f->pfd >= 0)
		close(f->pfd);
	if (cfg->tag) {
		if (cfg->reattach && nvt_attached(f->ctl) != 1)
			nvt_attach(f->ctl, f->path, 0, 0);
		kst_pool_destroy(f->ctl, f->name);
	}
	nvt_reset(f->ctl);
	kst_free(f->buf, f->bs);
	kst_free(f->out, f->bs);
	close(f->ctl);
}

#endif /* KVTIER_NVME_FIXTURE_H */
