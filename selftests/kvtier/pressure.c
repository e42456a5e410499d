// SPDX-License-Identifier: GPL-2.0
/*
 * Memory pressure: the shrinker (kmod/shrinker.c) gives back the DRAM
 * pages of clean blocks (those with a durable NVMe copy) and nothing else.
 *
 * A pool on an attached NVMe device is filled and synced (clean), then a
 * few more blocks are PUT and left dirty, and some clean ones pinned.
 * Reclaim is triggered with /proc/sys/vm/drop_caches (which runs every
 * shrinker) and then with a child that allocates past MemAvailable until
 * reclaim has asked the shrinker for the pool's pages (they are not
 * counted in MemAvailable). Afterwards the pool's DRAM residency is lower,
 * the shrinker's sysfs counters moved, the dirty and pinned blocks are
 * still in DRAM and every block reads back with exact bytes.
 *
 * Needs the NVMe device (skips without it), root.
 */
#include "nvme_test.h"

#define BS		(64 * KST_KIB)
#define NCLEAN		192U
#define NDIRTY		16U
#define NPIN		8U
#define CAP		512U
#define K0		0x5052455353ULL	/* "PRESS" */
#define SHRINK_SYSFS	KST_SYSFS_DIR "/shrinker"
/* How far past MemAvailable allocation_pressure's child may go. */
#define CHILD_EXTRA	(256 * KST_MIB)

/* Shrinker columns: counts, scans, stops, blocks, pages. */
static int shrink_cols(long long v[5])
{
	return kst_read_cols(SHRINK_SYSFS, v, 5, 0) == 5 ? 0 : -EINVAL;
}

static int drop_caches(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, "2", 1) != 1)
		ret = -errno;
	close(fd);
	return ret;
}

static int tier_of(int pfd, __u64 k)
{
	struct kvtier_block b;
	int ret = kst_lookup1(pfd, K0, k, &b);

	return ret ? ret : (int)b.tier;
}

FIXTURE(press) {
	int ctl;
	int pfd;
	char name[KVTIER_NAME_MAX];
	char *buf;
	char clean_first[8];	/* the parameter to put back, if set */
};

FIXTURE_SETUP(press)
{
	nvt_setup_check(_metadata);

	self->pfd = -1;
	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	if (nvt_attached(self->ctl) >= 1)
		ASSERT_EQ(0, nvt_detach_deadline(120));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	kst_name(self->name, "press");
	self->pfd = kst_pool_create(self->ctl, self->name, BS, CAP, CAP);
	ASSERT_LE(0, self->pfd);
	self->buf = kst_alloc(BS);
	ASSERT_NE(NULL, self->buf);
}

FIXTURE_TEARDOWN(press)
{
	if (self->clean_first[0])
		kst_write_str(KST_PARAM_DIR "/policy_clean_first",
			      self->clean_first);
	if (self->pfd >= 0)
		close(self->pfd);
	kst_pool_destroy(self->ctl, self->name);
	if (nvt_attached(self->ctl) >= 1)
		nvt_detach_deadline(120);
	close(self->ctl);
}

/* Fill: NCLEAN synced blocks, NPIN of them pinned, NDIRTY unsynced. */
static int press_fill(int pfd, char *buf)
{
	__u64 written;
	__u32 i;
	int ret;

	for (i = 0; i < NCLEAN; i++) {
		kst_fill(buf, BS, K0, i, 1);
		ret = kst_put1(pfd, K0, i, buf, NULL);
		if (ret)
			return ret;
	}
	ret = nvt_sync_deadline(pfd, 120, &written);
	if (ret)
		return ret;
	for (i = 0; i < NPIN; i++) {
		ret = kst_pin1(pfd, K0, i);
		if (ret)
			return ret;
	}
	for (i = NCLEAN; i < NCLEAN + NDIRTY; i++) {
		kst_fill(buf, BS, K0, i, 2);
		ret = kst_put1(pfd, K0, i, buf, NULL);
		if (ret)
			return ret;
	}
	return 0;
}

/* After reclaim: dirty and pinned in DRAM, everything exact. */
static void verify(struct __test_metadata *_metadata, int pfd, char *buf)
{
	__u64 gen;
	__u32 i;

	for (i = 0; i < NPIN; i++)
		EXPECT_EQ(KVTIER_TIER_DRAM, tier_of(pfd, i));
	for (i = NCLEAN; i < NCLEAN + NDIRTY; i++)
		EXPECT_EQ(KVTIER_TIER_DRAM, tier_of(pfd, i));
	for (i = 0; i < NCLEAN + NDIRTY; i++) {
		memset(buf, 0, BS);
		ASSERT_EQ(0, kst_get1(pfd, K0, i, buf, NULL));
		gen = 0;
		ASSERT_EQ(-1, kst_check(buf, BS, K0, i, &gen)) {
			TH_LOG("block %u corrupt", i);
		}
		ASSERT_EQ(i < NCLEAN ? 1ULL : 2ULL, gen);
	}
}

/* drop_caches runs the shrinker: clean DRAM goes, nothing else does. */
static void drop_caches_sheds(struct __test_metadata *_metadata,
			      FIXTURE_DATA(press) *self)
{
	struct kvtier_pool_stat st;
	long long before[5], after[5];
	long long res0;
	int round;

	ASSERT_EQ(0, press_fill(self->pfd, self->buf));
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	res0 = st.resident[KVTIER_TIER_DRAM];
	ASSERT_EQ(NCLEAN + NDIRTY, res0);
	ASSERT_EQ(NDIRTY, st.dirty);
	ASSERT_EQ(0, shrink_cols(before));

	for (round = 0; round < 5; round++) {
		ASSERT_EQ(0, drop_caches());
		if (kst_resident(self->pfd) <= NDIRTY + NPIN)
			break;
	}
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	TH_LOG("resident %lld -> %llu after %d drop_caches; dirty %llu",
	       res0, (unsigned long long)st.resident[KVTIER_TIER_DRAM],
	       round + 1, (unsigned long long)st.dirty);
	/* Everything clean and unpinned went. */
	EXPECT_EQ(NDIRTY + NPIN, st.resident[KVTIER_TIER_DRAM]);
	EXPECT_EQ(NDIRTY, st.dirty);
	EXPECT_EQ(NPIN, st.pinned);
	ASSERT_EQ(0, shrink_cols(after));
	EXPECT_LE(before[0] + 1, after[0]);
	EXPECT_LE(before[1] + 1, after[1]);
	EXPECT_LE(before[3] + NCLEAN - NPIN, after[3]);
	EXPECT_LE(before[4] + (long long)((NCLEAN - NPIN) * (BS / KST_PAGE)),
		  after[4]);
	verify(_metadata, self->pfd, self->buf);
}

TEST_F(press, drop_caches_sheds_clean_only)
{
	drop_caches_sheds(_metadata, self);
}

/*
 * The same for a pool with parameter policy_clean_first, which keeps its
 * blocks with an NVMe copy on a list of their own: the shrinker finds
 * them there. The pool takes the parameter at its first PUT.
 */
TEST_F(press, drop_caches_clean_list)
{
	ASSERT_LT(0, kst_read_file(KST_PARAM_DIR "/policy_clean_first",
				   self->clean_first,
				   sizeof(self->clean_first)));
	ASSERT_EQ(0, kst_write_str(KST_PARAM_DIR "/policy_clean_first", "Y"));
	drop_caches_sheds(_metadata, self);
}

/*
 * Every DRAM block clean: one drop_caches gives back all of them, and
 * returns. Reclaim counts down what the shrinker's count promised by what
 * each scan says it looked at; a scan that looked at nothing once the
 * blocks were gone, and did not say stop, had it called for ever.
 */
TEST_F(press, drop_caches_all_clean)
{
	struct kvtier_pool_stat st;
	__u64 gen;
	__u32 i;

	for (i = 0; i < NCLEAN; i++) {
		kst_fill(self->buf, BS, K0, i, 1);
		ASSERT_EQ(0, kst_put1(self->pfd, K0, i, self->buf, NULL));
	}
	ASSERT_EQ(0, nvt_sync_deadline(self->pfd, 120, NULL));
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	ASSERT_EQ(0ULL, st.dirty);
	ASSERT_EQ(NCLEAN, kst_resident(self->pfd));
	ASSERT_EQ(0, drop_caches());
	EXPECT_EQ(0, kst_resident(self->pfd));
	for (i = 0; i < NCLEAN; i++) {
		memset(self->buf, 0, BS);
		ASSERT_EQ(0, kst_get1(self->pfd, K0, i, self->buf, NULL));
		gen = 0;
		ASSERT_EQ(-1, kst_check(self->buf, BS, K0, i, &gen));
		ASSERT_EQ(1ULL, gen);
	}
}

/*
 * A child allocates and touches anonymous memory until the kernel must
 * reclaim: the child is not OOM-killed, the shrinker gave back clean
 * blocks of the pool (its counters moved and the pool's DRAM residency
 * fell by no more than the blocks it says it evicted), and nothing of the
 * pool is lost.
 *
 * The pool is mapped and every block faulted in first: a fault allocates
 * page tables while it holds the pool's map_sem, so reclaim (kswapd, or
 * this child's direct reclaim) must not wait for map_sem. On the debug
 * kernel lockdep reported that cycle here before the shrinker took
 * map_sem with a trylock. The mapping stays while reclaim runs, so the
 * shrinker zaps mapped blocks; they read back through it afterwards.
 *
 * Touching all of MemAvailable takes over the harness's default 30 s on
 * the debug kernel (KASAN) under TCG when the host is busy.
 */
TEST_F_TIMEOUT(press, allocation_pressure, 180)
{
	long long before[5], after[5];
	long long avail_kb = 0, res0, res1;
	char line[256];
	char *map;
	FILE *f;
	pid_t pid;
	__u32 i;

	ASSERT_EQ(0, press_fill(self->pfd, self->buf));
	map = mmap(NULL, (size_t)CAP * BS, PROT_READ, MAP_SHARED, self->pfd, 0);
	ASSERT_NE(MAP_FAILED, map);
	for (i = 0; i < NCLEAN + NDIRTY; i++)
		(void)*(volatile char *)(map + (size_t)i * BS);
	res0 = kst_resident(self->pfd);
	ASSERT_EQ(NCLEAN + NDIRTY, res0);
	ASSERT_EQ(0, shrink_cols(before));
	f = fopen("/proc/meminfo", "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %lld kB", &avail_kb) == 1)
			break;
	fclose(f);
	ASSERT_LT(64 * 1024, avail_kb);

	pid = kst_fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/*
		 * Up to just short of MemAvailable, then a MiB at a time
		 * until the shrinker has given back a block. kvtier's pages
		 * are not in MemAvailable, so reclaim runs out of other
		 * things to take and must ask the shrinker (at the latest
		 * before the OOM killer, which takes this child first). A
		 * shrinker that frees nothing ends in OOM or exit 3.
		 */
		size_t first = (size_t)avail_kb * 1024 - 16 * KST_MIB;
		size_t len = first + 16 * KST_MIB + CHILD_EXTRA, off;
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			       -1, 0);
		long long now[5];

		if (p == MAP_FAILED ||
		    kst_write_num("/proc/self/oom_score_adj", 1000))
			_exit(2);
		for (off = 0; off < len; off += KST_PAGE) {
			if (off >= first && !(off % KST_MIB)) {
				if (shrink_cols(now))
					_exit(2);
				if (now[3] > before[3])
					_exit(0);
			}
			p[off] = 1;
		}
		_exit(3);
	}
	/*
	 * Not OOM-killed, and stopped because the shrinker gave a block
	 * back (exit 3: it never did, though the child went past
	 * MemAvailable).
	 */
	EXPECT_EQ(0, kst_wait(pid));
	ASSERT_EQ(0, shrink_cols(after));
	res1 = kst_resident(self->pfd);
	TH_LOG("shrinker: %lld scans, %lld blocks, %lld pages; resident %lld -> %lld",
	       after[1] - before[1], after[3] - before[3],
	       after[4] - before[4], res0, res1);
	/*
	 * How much is up to reclaim, but it asked, and the shrinker freed
	 * clean blocks of this pool: nothing else evicts here (the pool's
	 * DRAM holds all of its capacity), so every block that left DRAM
	 * was one the shrinker counted, and never a dirty or pinned one.
	 */
	EXPECT_LT(before[1], after[1]);
	ASSERT_LT(before[3], after[3]);
	EXPECT_EQ((after[3] - before[3]) * (long long)(BS / KST_PAGE),
		  after[4] - before[4]);
	ASSERT_GT(res0, res1);
	EXPECT_LE(res0 - res1, after[3] - before[3]);
	EXPECT_LE(NDIRTY + NPIN, res1);
	verify(_metadata, self->pfd, self->buf);
	for (i = 0; i < NCLEAN + NDIRTY; i++) {
		__u64 gen = 0;

		ASSERT_EQ(-1, kst_check(map + (size_t)i * BS, BS, K0, i, &gen)) {
			TH_LOG("block %u corrupt through the mapping", i);
		}
		ASSERT_EQ(i < NCLEAN ? 1ULL : 2ULL, gen);
	}
	munmap(map, (size_t)CAP * BS);
}

/* Without NVMe every block is dirty: the shrinker must not touch any. */
FIXTURE(plain) {
	int unused;
};

FIXTURE_SETUP(plain)
{
	nvt_setup_check(_metadata);

	self->unused = 0;
}

FIXTURE_TEARDOWN(plain)
{
}

TEST_F(plain, no_nvme_nothing_dropped)
{
	char name[KVTIER_NAME_MAX];
	long long before[5], after[5];
	int ctl, pfd, i;
	char *buf = kst_alloc(BS);
	__u64 gen;

	ASSERT_NE(NULL, buf);
	ctl = kst_ctl_open();
	ASSERT_LE(0, ctl);
	if (nvt_attached(ctl) >= 1)
		ASSERT_EQ(0, nvt_detach_deadline(120));
	kst_name(name, "pressdirty");
	pfd = kst_pool_create(ctl, name, BS, 64, 64);
	ASSERT_LE(0, pfd);
	for (i = 0; i < 64; i++) {
		kst_fill(buf, BS, K0, i, 3);
		ASSERT_EQ(0, kst_put1(pfd, K0, i, buf, NULL));
	}
	ASSERT_EQ(0, shrink_cols(before));
	ASSERT_EQ(0, drop_caches());
	ASSERT_EQ(0, drop_caches());
	ASSERT_EQ(0, shrink_cols(after));
	EXPECT_EQ(before[3], after[3]);
	EXPECT_EQ(64, kst_resident(pfd));
	for (i = 0; i < 64; i++) {
		ASSERT_EQ(0, kst_get1(pfd, K0, i, buf, NULL));
		ASSERT_EQ(-1, kst_check(buf, BS, K0, i, &gen));
		ASSERT_EQ(3ULL, gen);
	}
	close(pfd);
	EXPECT_EQ(0, kst_pool_destroy(ctl, name));
	close(ctl);
	kst_free(buf, BS);
}

TEST_HARNESS_MAIN
