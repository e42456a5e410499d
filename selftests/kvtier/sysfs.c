// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier sysfs (Documentation/ABI/testing/sysfs-kernel-kvtier):
 * /sys/kernel/kvtier/stat, cpu_bytes and
 * /sys/kernel/kvtier/pools/<name>/{stat,config}.
 */
#include "kvtier_test.h"

#define G_COLS	10
enum {
	G_POOLS, G_BUDGET, G_RESERVED, G_USED, G_PUTS, G_GETS, G_HITS,
	G_MISSES, G_EVICTIONS, G_DROPS
};

#define P_COLS	14
enum {
	P_RESIDENT, P_PINNED, P_PUTS, P_GETS, P_HITS, P_MISSES, P_EVICTIONS,
	P_DROPS, P_BYTES_IN, P_BYTES_OUT, P_LOST_BLOCKS, P_PART_READS,
	P_Z_BYTES_IN, P_Z_BYTES_STORED
};

#define C_COLS	11
enum {
	C_BS, C_CAP, C_DRAM, C_NODE, C_MODE, C_UID, C_GID, C_PARTS,
	C_COMPRESS, C_COMPRESS_FLAGS, C_FILE
};

#define BS	KST_PAGE

FIXTURE(sysfs) {
	int ctl, pfd;
	char name[KVTIER_NAME_MAX];
	char dir[256], stat[300], config[300];
	char *buf;
};

FIXTURE_SETUP(sysfs)
{
	kst_setup(_metadata);

	self->pfd = -1;
	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	kst_name(self->name, "sysfs");
	snprintf(self->dir, sizeof(self->dir), KST_SYSFS_DIR "/pools/%s",
		 self->name);
	snprintf(self->stat, sizeof(self->stat), "%s/stat", self->dir);
	snprintf(self->config, sizeof(self->config), "%s/config", self->dir);
	self->buf = kst_alloc(8 * BS);
	ASSERT_NE(NULL, self->buf);
}

FIXTURE_TEARDOWN(sysfs)
{
	if (self->pfd >= 0)
		close(self->pfd);
	kst_pool_destroy(self->ctl, self->name);
	kst_free(self->buf, 8 * BS);
	close(self->ctl);
}

static int global(long long v[G_COLS])
{
	int n = kst_read_cols(KST_SYSFS_DIR "/stat", v, G_COLS, 0);

	return n == G_COLS ? 0 : (n < 0 ? n : -EPROTO);
}

static int put_n(FIXTURE_DATA(sysfs) *self, __u64 k0, int first, int n)
{
	int i, ret;

	for (i = first; i < first + n; i++) {
		kst_fill(self->buf, BS, k0, i, 1);
		ret = kst_put1(self->pfd, k0, i, self->buf, NULL);
		if (ret)
			return ret;
	}
	return 0;
}

TEST_F(sysfs, global_format)
{
	long long v[G_COLS + 1], mb;
	char line[512];
	int i;

	ASSERT_LT(0, kst_read_file(KST_SYSFS_DIR "/stat", line, sizeof(line)));
	ASSERT_EQ(G_COLS, kst_read_cols(KST_SYSFS_DIR "/stat", v, G_COLS + 1,
					0));
	for (i = 0; i < G_COLS; i++)
		ASSERT_LE(0, v[i]);
	ASSERT_EQ(0, kst_param("dram_mb", &mb));
	ASSERT_EQ(mb << 20, v[G_BUDGET]);
	ASSERT_LE(v[G_RESERVED], v[G_BUDGET]);
	ASSERT_LE(v[G_USED], v[G_RESERVED]);
	ASSERT_LE(v[G_HITS], v[G_HITS] + v[G_MISSES]);
}

/* The global columns move with what one pool does. */
TEST_F(sysfs, global_counters_move)
{
	long long a[G_COLS], b[G_COLS];
	struct kvtier_pool_stat st;
	struct kvtier_block g[3];
	__u32 done;
	int i;

	ASSERT_EQ(0, global(a));
	self->pfd = kst_pool_create(self->ctl, self->name, BS, 16, 4);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	ASSERT_LT(4 * (long long)BS, (long long)st.dram_reserved);
	ASSERT_EQ(0, global(b));
	ASSERT_EQ(a[G_POOLS] + 1, b[G_POOLS]);
	ASSERT_EQ(a[G_RESERVED] + (long long)st.dram_reserved, b[G_RESERVED]);
	ASSERT_EQ(a[G_USED], b[G_USED]);

	ASSERT_EQ(0, put_n(self, 0x5f, 0, 3));
	ASSERT_EQ(0, global(b));
	ASSERT_EQ(a[G_PUTS] + 3, b[G_PUTS]);
	ASSERT_EQ(a[G_USED] + 3 * (long long)BS, b[G_USED]);

	for (i = 0; i < 3; i++)
		kst_blk(&g[i], 0x5f, i == 2 ? 9 : i, self->buf + i * BS);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_GET, g, 3, 0, &done));
	ASSERT_EQ(2U, done);
	ASSERT_EQ(0, global(b));
	ASSERT_EQ(a[G_GETS] + 2, b[G_GETS]);
	ASSERT_EQ(a[G_HITS] + 2, b[G_HITS]);
	ASSERT_EQ(a[G_MISSES] + 1, b[G_MISSES]);

	ASSERT_EQ(0, kst_drop1(self->pfd, 0x5f, 0));
	ASSERT_EQ(0, global(b));
	ASSERT_EQ(a[G_DROPS] + 1, b[G_DROPS]);
	ASSERT_EQ(a[G_USED] + 2 * (long long)BS, b[G_USED]);

	/* 2 resident + 3 more in a DRAM of 4: one eviction */
	ASSERT_EQ(0, put_n(self, 0x5f, 10, 3));
	ASSERT_EQ(0, global(b));
	ASSERT_EQ(a[G_EVICTIONS] + 1, b[G_EVICTIONS]);
	ASSERT_EQ(a[G_USED] + 4 * (long long)BS, b[G_USED]);

	/* gone: pools, reservation and DRAM back where they were */
	close(self->pfd);
	self->pfd = -1;
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, self->name));
	ASSERT_EQ(0, global(b));
	ASSERT_EQ(a[G_POOLS], b[G_POOLS]);
	ASSERT_EQ(a[G_RESERVED], b[G_RESERVED]);
	ASSERT_EQ(a[G_USED], b[G_USED]);
}

enum { CPU_COPY, CPU_CRC, CPU_ZERO, CPU_COLS };

static int cpu_bytes(long long v[CPU_COLS])
{
	int n = kst_read_cols(KST_SYSFS_DIR "/cpu_bytes", v, CPU_COLS, 0);

	return n == CPU_COLS ? 0 : (n < 0 ? n : -EPROTO);
}

/*
 * cpu_bytes: a PUT copies and checksums its bytes in one go (and has its
 * pages zeroed where init_on_alloc is on); a GET from DRAM copies them
 * only.
 */
TEST_F(sysfs, cpu_bytes_move)
{
	long long a[CPU_COLS], b[CPU_COLS], bs = BS;
	struct kvtier_block g[2];
	__u32 done;

	self->pfd = kst_pool_create(self->ctl, self->name, BS, 16, 4);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(0, cpu_bytes(a));
	ASSERT_EQ(0, put_n(self, 0x6c, 0, 3));
	ASSERT_EQ(0, cpu_bytes(b));
	EXPECT_EQ(a[CPU_COPY] + 3 * bs, b[CPU_COPY]);
	EXPECT_EQ(a[CPU_CRC] + 3 * bs, b[CPU_CRC]);
	EXPECT_TRUE(b[CPU_ZERO] == a[CPU_ZERO] ||
		    b[CPU_ZERO] == a[CPU_ZERO] + 3 * bs)
		TH_LOG("zeroed %lld bytes for 3 blocks of %lld",
		       b[CPU_ZERO] - a[CPU_ZERO], bs);

	kst_blk(&g[0], 0x6c, 0, self->buf);
	kst_blk(&g[1], 0x6c, 2, self->buf + BS);
	ASSERT_EQ(0, cpu_bytes(a));
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_GET, g, 2, 0, &done));
	ASSERT_EQ(2U, done);
	ASSERT_EQ(0, cpu_bytes(b));
	EXPECT_EQ(a[CPU_COPY] + 2 * bs, b[CPU_COPY]);
	EXPECT_EQ(a[CPU_CRC], b[CPU_CRC]);
	EXPECT_EQ(a[CPU_ZERO], b[CPU_ZERO]);
}

/*
 * Blocks dropped to make room hand their pages to the blocks that take
 * it: no zeroing for those (where init_on_alloc is on, the first blocks'
 * pages are zeroed).
 */
TEST_F(sysfs, cpu_bytes_room_reuses_pages)
{
	long long a[CPU_COLS], b[CPU_COLS], bs = BS;
	struct kvtier_pool_stat st;

	self->pfd = kst_pool_create(self->ctl, self->name, BS, 16, 4);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(0, cpu_bytes(a));
	ASSERT_EQ(0, put_n(self, 0x6d, 0, 4));
	ASSERT_EQ(0, cpu_bytes(b));
	TH_LOG("4 blocks of %lld into an empty pool: %lld bytes zeroed",
	       bs, b[CPU_ZERO] - a[CPU_ZERO]);
	ASSERT_EQ(0, cpu_bytes(a));
	ASSERT_EQ(0, put_n(self, 0x6d, 4, 4));
	ASSERT_EQ(0, cpu_bytes(b));
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	ASSERT_EQ(4U, st.evictions);
	TH_LOG("4 blocks of %lld dropped for 4 new: %lld bytes zeroed",
	       bs, b[CPU_ZERO] - a[CPU_ZERO]);
	EXPECT_EQ(a[CPU_ZERO], b[CPU_ZERO]);
	EXPECT_EQ(a[CPU_COPY] + 4 * bs, b[CPU_COPY]);
}

/* A destroyed pool still open is still a pool and still holds its DRAM. */
TEST_F(sysfs, global_destroyed_but_open)
{
	long long a[G_COLS], b[G_COLS];
	struct kvtier_pool_stat st;

	ASSERT_EQ(0, global(a));
	self->pfd = kst_pool_create(self->ctl, self->name, BS, 8, 8);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	ASSERT_EQ(0, put_n(self, 0x60, 0, 2));
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, self->name));
	ASSERT_EQ(0, global(b));
	ASSERT_EQ(a[G_POOLS] + 1, b[G_POOLS]);
	ASSERT_EQ(a[G_RESERVED] + (long long)st.dram_reserved, b[G_RESERVED]);
	ASSERT_EQ(a[G_USED] + 2 * (long long)BS, b[G_USED]);
	close(self->pfd);
	self->pfd = -1;
	ASSERT_EQ(0, global(b));
	ASSERT_EQ(a[G_POOLS], b[G_POOLS]);
	ASSERT_EQ(a[G_RESERVED], b[G_RESERVED]);
	ASSERT_EQ(a[G_USED], b[G_USED]);
}

TEST_F(sysfs, pool_dir_appears)
{
	struct stat st;

	ASSERT_EQ(-1, stat(self->dir, &st));
	self->pfd = kst_pool_create(self->ctl, self->name, BS, 4, 4);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(0, stat(self->dir, &st));
	ASSERT_TRUE(S_ISDIR(st.st_mode));
	ASSERT_EQ(0, stat(self->stat, &st));
	ASSERT_EQ(0400U, st.st_mode & 07777);
	ASSERT_EQ(0U, st.st_uid);
	ASSERT_EQ(0, stat(self->config, &st));
	ASSERT_EQ(0400U, st.st_mode & 07777);
	ASSERT_EQ(0U, st.st_uid);
}

TEST_F(sysfs, pool_dir_gone_after_destroy_and_close)
{
	self->pfd = kst_pool_create(self->ctl, self->name, BS, 4, 4);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(0, access(self->dir, F_OK));
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, self->name));
	close(self->pfd);
	self->pfd = -1;
	ASSERT_EQ(-1, access(self->dir, F_OK));
	ASSERT_EQ(ENOENT, errno);
}

/* The ABI document: the directory goes when the pool is destroyed. */
TEST_F(sysfs, pool_dir_gone_at_destroy)
{
	long long c[C_COLS];
	int fd;

	self->pfd = kst_pool_create(self->ctl, self->name, BS, 4, 4);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, self->name));
	ASSERT_EQ(-1, access(self->dir, F_OK));
	ASSERT_EQ(ENOENT, errno);

	/* a new pool of the same name gets a fresh directory */
	fd = kst_pool_create(self->ctl, self->name, 2 * BS, 4, 4);
	ASSERT_LE(0, fd);
	ASSERT_EQ(C_COLS, kst_read_cols(self->config, c, C_COLS, 0));
	ASSERT_EQ(2 * (long long)BS, c[C_BS]);
	close(fd);
}

TEST_F(sysfs, pool_config)
{
	struct kvtier_pool_create c;
	long long v[C_COLS + 1];
	char line[256];

	kst_create_init(&c, self->name, 3 * BS, 10, 6);
	c.mode = 0640;
	c.numa_node = 0;
	self->pfd = kst_create(self->ctl, &c);
	ASSERT_LE(0, self->pfd);
	ASSERT_LT(0, kst_read_file(self->config, line, sizeof(line)));
	ASSERT_EQ(C_COLS, kst_read_cols(self->config, v, C_COLS + 1,
					1UL << C_MODE));
	ASSERT_EQ(3 * (long long)BS, v[C_BS]);
	ASSERT_EQ(10, v[C_CAP]);
	ASSERT_EQ(6, v[C_DRAM]);
	ASSERT_EQ(0, v[C_NODE]);
	ASSERT_EQ(0640, v[C_MODE]);
	ASSERT_EQ((long long)geteuid(), v[C_UID]);
	ASSERT_EQ((long long)getegid(), v[C_GID]);
	ASSERT_EQ(0, v[C_PARTS]);
	ASSERT_EQ(0, v[C_COMPRESS]);
	ASSERT_EQ(0, v[C_COMPRESS_FLAGS]);
	ASSERT_EQ(0, v[C_FILE]);	/* not a weight pool */
}

/* A pool that compresses shows its compressor and flags last. */
TEST_F(sysfs, pool_config_compress)
{
	struct kvtier_pool_create c;
	long long v[C_COLS + 1];

	kst_create_init(&c, self->name, 4 * BS, 4, 4);
	c.compress = KVTIER_COMPRESS_LZ4;
	c.compress_flags = KVTIER_COMPRESS_SHUFFLE2;
	self->pfd = kst_create(self->ctl, &c);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(C_COLS, kst_read_cols(self->config, v, C_COLS + 1,
					1UL << C_MODE));
	ASSERT_EQ(KVTIER_COMPRESS_LZ4, v[C_COMPRESS]);
	ASSERT_EQ((long long)KVTIER_COMPRESS_SHUFFLE2, v[C_COMPRESS_FLAGS]);
	ASSERT_EQ(0, v[C_PARTS]);
}

/* A pool made with parts shows them in its last column. */
TEST_F(sysfs, pool_config_parts)
{
	struct kvtier_pool_create c;
	long long v[C_COLS + 1];

	kst_create_init(&c, self->name, 4 * BS, 4, 4);
	c.parts = 3;
	self->pfd = kst_create(self->ctl, &c);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(C_COLS, kst_read_cols(self->config, v, C_COLS + 1,
					1UL << C_MODE));
	ASSERT_EQ(4 * (long long)BS, v[C_BS]);
	ASSERT_EQ(3, v[C_PARTS]);
}

/* mode 0 shows as 600; dram_blocks 0 as capacity. */
TEST_F(sysfs, pool_config_defaults)
{
	struct kvtier_pool_create c;
	long long v[C_COLS];

	kst_create_init(&c, self->name, BS, 5, 0);
	c.mode = 0;
	self->pfd = kst_create(self->ctl, &c);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(C_COLS, kst_read_cols(self->config, v, C_COLS,
					1UL << C_MODE));
	ASSERT_EQ(5, v[C_DRAM]);
	ASSERT_EQ(0600, v[C_MODE]);
}

TEST_F(sysfs, pool_stat)
{
	struct kvtier_block g[3];
	long long v[P_COLS + 1];
	char line[512];
	__u32 done;
	int i;

	self->pfd = kst_pool_create(self->ctl, self->name, BS, 8, 8);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(P_COLS, kst_read_cols(self->stat, v, P_COLS + 1, 0));
	for (i = 0; i < P_COLS; i++)
		ASSERT_EQ(0, v[i]);

	ASSERT_EQ(0, put_n(self, 0x61, 0, 3));
	for (i = 0; i < 3; i++)
		kst_blk(&g[i], 0x61, i == 2 ? 7 : i, self->buf + i * BS);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_GET, g, 3, 0, &done));
	ASSERT_EQ(2U, done);
	ASSERT_EQ(0, kst_drop1(self->pfd, 0x61, 0));
	ASSERT_EQ(0, kst_pin1(self->pfd, 0x61, 1));

	ASSERT_LT(0, kst_read_file(self->stat, line, sizeof(line)));
	ASSERT_EQ(P_COLS, kst_read_cols(self->stat, v, P_COLS + 1, 0));
	ASSERT_EQ(2, v[P_RESIDENT]);
	ASSERT_EQ(1, v[P_PINNED]);
	ASSERT_EQ(3, v[P_PUTS]);
	ASSERT_EQ(2, v[P_GETS]);
	ASSERT_EQ(2, v[P_HITS]);
	ASSERT_EQ(1, v[P_MISSES]);
	ASSERT_EQ(0, v[P_EVICTIONS]);
	ASSERT_EQ(1, v[P_DROPS]);
	ASSERT_EQ(3 * (long long)BS, v[P_BYTES_IN]);
	ASSERT_EQ(2 * (long long)BS, v[P_BYTES_OUT]);
}

/* sysfs and the STAT ioctl agree. */
TEST_F(sysfs, pool_stat_matches_ioctl)
{
	struct kvtier_pool_stat st;
	long long v[P_COLS];

	self->pfd = kst_pool_create(self->ctl, self->name, BS, 8, 2);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(0, put_n(self, 0x62, 0, 5));
	ASSERT_EQ(0, kst_get1(self->pfd, 0x62, 4, self->buf, NULL));
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	ASSERT_EQ(P_COLS, kst_read_cols(self->stat, v, P_COLS, 0));
	ASSERT_EQ((long long)st.resident[KVTIER_TIER_DRAM], v[P_RESIDENT]);
	ASSERT_EQ((long long)st.pinned, v[P_PINNED]);
	ASSERT_EQ((long long)st.puts, v[P_PUTS]);
	ASSERT_EQ((long long)st.gets, v[P_GETS]);
	ASSERT_EQ((long long)st.hits, v[P_HITS]);
	ASSERT_EQ((long long)st.misses, v[P_MISSES]);
	ASSERT_EQ((long long)st.evictions, v[P_EVICTIONS]);
	ASSERT_EQ(3, v[P_EVICTIONS]);
	ASSERT_EQ((long long)st.drops, v[P_DROPS]);
	ASSERT_EQ((long long)st.bytes_in, v[P_BYTES_IN]);
	ASSERT_EQ((long long)st.bytes_out, v[P_BYTES_OUT]);
	ASSERT_EQ((long long)st.lost_blocks, v[P_LOST_BLOCKS]);
	ASSERT_EQ((long long)st.part_reads, v[P_PART_READS]);
}

/* Per-pool files are root's: another uid cannot read them. */
TEST_F(sysfs, pool_files_root_only)
{
	pid_t pid;

	self->pfd = kst_pool_create(self->ctl, self->name, BS, 4, 4);
	ASSERT_LE(0, self->pfd);
	pid = kst_fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		char line[256];

		if (kst_become(65534, 65534))
			_exit(100);
		if (kst_read_file(self->stat, line, sizeof(line)) != -EACCES)
			_exit(1);
		if (kst_read_file(self->config, line, sizeof(line)) != -EACCES)
			_exit(2);
		/* the global file is for everyone */
		if (kst_read_file(KST_SYSFS_DIR "/stat", line,
				  sizeof(line)) <= 0)
			_exit(3);
		_exit(0);
	}
	ASSERT_EQ(0, kst_wait(pid));
}

/* "." and ".." would be sysfs directory names that cannot work. */
TEST_F(sysfs, name_dot_rejected)
{
	int ret = kst_pool_create(self->ctl, ".", BS, 4, 4);

	if (ret >= 0) {
		close(ret);
		kst_pool_destroy(self->ctl, ".");
	}
	ASSERT_EQ(-EINVAL, ret);
}

TEST_F(sysfs, name_dotdot_rejected)
{
	int ret = kst_pool_create(self->ctl, "..", BS, 4, 4);

	if (ret >= 0) {
		close(ret);
		kst_pool_destroy(self->ctl, "..");
	}
	ASSERT_EQ(-EINVAL, ret);
}

/* Names that merely contain dots are fine and get their directory. */
TEST_F(sysfs, name_with_dots)
{
	char dir[300];
	int ret;

	strcpy(self->name, "...");
	ret = kst_pool_create(self->ctl, self->name, BS, 4, 4);
	if (ret == -EEXIST)
		SKIP(return, "a pool named ... exists already");
	ASSERT_LE(0, ret);
	self->pfd = ret;
	snprintf(dir, sizeof(dir), KST_SYSFS_DIR "/pools/%s/config",
		 self->name);
	ASSERT_EQ(0, access(dir, F_OK));
}

TEST_HARNESS_MAIN
