// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier pools: POOL_CREATE / POOL_OPEN / POOL_DESTROY, their rejections,
 * lifetime (unlink semantics), limits (max_pools, dram_mb) and block sizes.
 */
#include "kvtier_test.h"

#define POOL_MAX_NAMES	8

FIXTURE(pool) {
	int ctl;
	char name[KVTIER_NAME_MAX];		/* the main pool of the test */
	char extra[POOL_MAX_NAMES][KVTIER_NAME_MAX];	/* more, if any */
	int nr_extra;
};

FIXTURE_SETUP(pool)
{
	kst_setup(_metadata);

	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	kst_name(self->name, "pool");
}

FIXTURE_TEARDOWN(pool)
{
	int i;

	kst_pool_destroy(self->ctl, self->name);
	for (i = 0; i < self->nr_extra; i++)
		kst_pool_destroy(self->ctl, self->extra[i]);
	close(self->ctl);
}

/* Another pool name, destroyed by the teardown. */
static const char *pool_extra(FIXTURE_DATA(pool) *self)
{
	char *name = self->extra[self->nr_extra++];

	kst_name(name, "pool");
	return name;
}

static int is_cloexec(int fd)
{
	int fl = fcntl(fd, F_GETFD);

	return fl < 0 ? -errno : !!(fl & FD_CLOEXEC);
}

/* ---- create ------------------------------------------------------------ */

TEST_F(pool, create)
{
	struct kvtier_pool_stat st;
	int pfd, i;

	pfd = kst_pool_create(self->ctl, self->name, 2 * KST_PAGE, 32, 16);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, kst_stat(pfd, &st));
	ASSERT_EQ(2 * KST_PAGE, st.block_size);
	ASSERT_EQ(32U, st.capacity);
	ASSERT_EQ(16U, st.dram_blocks);
	ASSERT_EQ(0600U, st.mode);
	ASSERT_EQ((__u32)geteuid(), st.uid);
	ASSERT_EQ((__u32)getegid(), st.gid);
	for (i = 0; i < KVTIER_NR_TIERS; i++)
		ASSERT_EQ(0ULL, st.resident[i]);
	ASSERT_EQ(0ULL, st.pinned);
	ASSERT_EQ(0ULL, st.puts);
	ASSERT_EQ(0ULL, st.gets);
	ASSERT_EQ(0ULL, st.evictions);
	ASSERT_EQ(0U, st.parts);
	ASSERT_EQ(0U, st.__pad2);
	ASSERT_EQ(0ULL, st.part_reads);
	close(pfd);
}

/* parts 2 and KVTIER_PARTS_MAX are taken, and STAT reports them. */
TEST_F(pool, create_parts)
{
	static const __u32 parts[] = { 2, 8, KVTIER_PARTS_MAX };
	struct kvtier_pool_create c;
	struct kvtier_pool_stat st;
	unsigned int i;
	int pfd;

	for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		/* a block of 1 page has 1 part whatever the pool asks */
		kst_create_init(&c, self->name, (i + 1) * KST_PAGE, 8, 4);
		c.parts = parts[i];
		pfd = kst_create(self->ctl, &c);
		ASSERT_LE(0, pfd);
		ASSERT_EQ(0, kst_stat(pfd, &st));
		ASSERT_EQ(parts[i], st.parts);
		ASSERT_EQ(0U, st.__pad2);
		ASSERT_EQ(0ULL, st.part_reads);
		ASSERT_EQ((i + 1) * KST_PAGE, st.block_size);
		close(pfd);
		ASSERT_EQ(0, kst_pool_destroy(self->ctl, self->name));
	}
}

TEST_F(pool, create_fd_cloexec)
{
	int pfd = kst_pool_create(self->ctl, self->name, KST_PAGE, 4, 4);

	ASSERT_LE(0, pfd);
	ASSERT_EQ(1, is_cloexec(pfd));
	close(pfd);
}

TEST_F(pool, open_fd_cloexec)
{
	int pfd = kst_pool_create(self->ctl, self->name, KST_PAGE, 4, 4);
	int pfd2;

	ASSERT_LE(0, pfd);
	pfd2 = kst_pool_open(self->ctl, self->name, 0);
	ASSERT_LE(0, pfd2);
	ASSERT_NE(pfd, pfd2);
	ASSERT_EQ(1, is_cloexec(pfd2));
	close(pfd2);
	pfd2 = kst_pool_open(self->ctl, self->name, KVTIER_POOL_RDONLY);
	ASSERT_LE(0, pfd2);
	ASSERT_EQ(1, is_cloexec(pfd2));
	close(pfd2);
	close(pfd);
}

TEST_F(pool, dram_blocks_zero_means_capacity)
{
	struct kvtier_pool_stat st;
	int pfd = kst_pool_create(self->ctl, self->name, KST_PAGE, 12, 0);

	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, kst_stat(pfd, &st));
	ASSERT_EQ(12U, st.capacity);
	ASSERT_EQ(12U, st.dram_blocks);
	close(pfd);
}

TEST_F(pool, mode_zero_means_0600)
{
	struct kvtier_pool_create c;
	struct kvtier_pool_stat st;
	int pfd;

	kst_create_init(&c, self->name, KST_PAGE, 4, 4);
	c.mode = 0;
	pfd = kst_create(self->ctl, &c);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, kst_stat(pfd, &st));
	ASSERT_EQ(0600U, st.mode);
	close(pfd);
}

TEST_F(pool, mode_kept)
{
	struct kvtier_pool_create c;
	struct kvtier_pool_stat st;
	int pfd;

	kst_create_init(&c, self->name, KST_PAGE, 4, 4);
	c.mode = 0751;
	pfd = kst_create(self->ctl, &c);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, kst_stat(pfd, &st));
	ASSERT_EQ(0751U, st.mode);
	close(pfd);
}

TEST_F(pool, numa_node0)
{
	struct kvtier_pool_create c;
	struct kvtier_pool_stat st;
	int pfd;

	kst_create_init(&c, self->name, KST_PAGE, 4, 4);
	c.numa_node = 0;
	pfd = kst_create(self->ctl, &c);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, kst_stat(pfd, &st));
	ASSERT_EQ(0, st.numa_node);
	close(pfd);
}

/* The longest name (63 bytes) and every allowed character class. */
TEST_F(pool, name_longest)
{
	char name[KVTIER_NAME_MAX];
	int pfd, pfd2, n;

	n = (int)strlen(self->name);
	memcpy(name, self->name, n);
	memset(name + n, 'x', sizeof(name) - 1 - n);
	name[sizeof(name) - 1] = '\0';
	strcpy(self->name, name);
	ASSERT_EQ(KVTIER_NAME_MAX - 1, (int)strlen(self->name));

	pfd = kst_pool_create(self->ctl, self->name, KST_PAGE, 4, 4);
	ASSERT_LE(0, pfd);
	pfd2 = kst_pool_open(self->ctl, self->name, 0);
	ASSERT_LE(0, pfd2);
	close(pfd2);
	close(pfd);
}

TEST_F(pool, name_charset)
{
	size_t len = strlen(self->name);
	int pfd;

	ASSERT_GT(KVTIER_NAME_MAX - 12, (int)len);
	strcpy(self->name + len, "-AZaz09._-");
	pfd = kst_pool_create(self->ctl, self->name, KST_PAGE, 4, 4);
	ASSERT_LE(0, pfd);
	close(pfd);
}

/*
 * The index of every block address is counted in the dram_mb budget: the
 * largest capacity with one DRAM block either fits the budget, and STAT
 * says what it holds, or is refused with -ENOSPC (never kernel memory
 * outside the budget).
 */
TEST_F(pool, capacity_max)
{
	struct kvtier_pool_stat st;
	long long glob[10];
	__u64 left;
	int pfd, ret;

	/* The module's own file: missing or short is a failure, not a skip. */
	ret = kst_read_cols(KST_SYSFS_DIR "/stat", glob, 10, 0);
	ASSERT_EQ(10, ret) {
		TH_LOG("%s/stat: %d", KST_SYSFS_DIR, ret);
	}
	left = glob[1] - glob[2];
	pfd = kst_pool_create(self->ctl, self->name, KST_PAGE,
			      KVTIER_CAPACITY_MAX, 1);
	if (pfd == -ENOSPC) {
		/* a key, links and a page pointer: 40 bytes at least */
		ASSERT_GT((__u64)KVTIER_CAPACITY_MAX * 40, left);
		return;
	}
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, kst_stat(pfd, &st));
	ASSERT_EQ((__u32)KVTIER_CAPACITY_MAX, st.capacity);
	ASSERT_EQ(1U, st.dram_blocks);
	ASSERT_LE((__u64)KVTIER_CAPACITY_MAX * 40 + KST_PAGE, st.dram_reserved);
	ASSERT_LE(st.dram_reserved, left);
	close(pfd);
}

/* ---- create rejections: one bad field each, and nothing is created ---- */

#define CREATE_REJECT(test, err, ...) \
TEST_F(pool, test) \
{ \
	struct kvtier_pool_create c; \
	int ret; \
	kst_create_init(&c, self->name, 2 * KST_PAGE, 16, 8); \
	__VA_ARGS__; \
	ret = kst_create(self->ctl, &c); \
	if (ret >= 0) \
		close(ret); \
	ASSERT_EQ(err, ret); \
	ASSERT_EQ(-ENOENT, kst_pool_open(self->ctl, self->name, 0)); \
}

CREATE_REJECT(reject_name_empty, -EINVAL, memset(c.name, 0, sizeof(c.name)))
CREATE_REJECT(reject_name_unterminated, -EINVAL,
	      memset(c.name, 'a', sizeof(c.name)))
CREATE_REJECT(reject_name_slash, -EINVAL, c.name[3] = '/')
CREATE_REJECT(reject_name_space, -EINVAL, c.name[3] = ' ')
CREATE_REJECT(reject_name_high_byte, -EINVAL, c.name[3] = 0xc3)
CREATE_REJECT(reject_name_newline, -EINVAL, c.name[3] = '\n')
CREATE_REJECT(reject_block_size_zero, -EINVAL, c.block_size = 0)
CREATE_REJECT(reject_block_size_unaligned, -EINVAL,
	      c.block_size = KST_PAGE + 512)
CREATE_REJECT(reject_block_size_half_page, -EINVAL, c.block_size = 2048)
CREATE_REJECT(reject_block_size_too_big, -EINVAL,
	      c.block_size = KVTIER_BLOCK_SIZE_MAX + KST_PAGE)
CREATE_REJECT(reject_block_size_2_pow_44, -EINVAL, c.block_size = 1ULL << 44)
CREATE_REJECT(reject_capacity_zero, -EINVAL, c.capacity = 0; c.dram_blocks = 0)
CREATE_REJECT(reject_capacity_too_big, -EINVAL,
	      c.capacity = KVTIER_CAPACITY_MAX + 1; c.dram_blocks = 1)
CREATE_REJECT(reject_dram_over_capacity, -EINVAL, c.dram_blocks = 17)
CREATE_REJECT(reject_flags_unknown_lowest, -EINVAL,
	      c.flags = kst_unknown_bit(KST_CREATE_FLAGS))
CREATE_REJECT(reject_flags_unknown_bit31, -EINVAL, c.flags = 1U << 31)
CREATE_REJECT(reject_mode_sticky, -EINVAL, c.mode = 01600)
CREATE_REJECT(reject_mode_setuid, -EINVAL, c.mode = 04600)
CREATE_REJECT(reject_mode_file_type, -EINVAL, c.mode = S_IFREG | 0600)
CREATE_REJECT(reject_numa_minus2, -EINVAL, c.numa_node = -2)
CREATE_REJECT(reject_numa_999, -EINVAL, c.numa_node = 999)
CREATE_REJECT(reject_reserved0, -EINVAL, c.reserved[0] = 1)
CREATE_REJECT(reject_reserved1, -EINVAL, c.reserved[1] = 1ULL << 32)
CREATE_REJECT(reject_reserved2, -EINVAL, c.reserved[2] = 1ULL << 63)
CREATE_REJECT(reject_parts_1, -EINVAL, c.parts = 1)
CREATE_REJECT(reject_parts_over_max, -EINVAL,
	      c.parts = KVTIER_PARTS_MAX + 1)
CREATE_REJECT(reject_parts_all_ones, -EINVAL, c.parts = 0xffffffffU)
CREATE_REJECT(reject_pad, -EINVAL, c.__pad = 1)
CREATE_REJECT(reject_pad_with_parts, -EINVAL, c.parts = 2; c.__pad = 1U << 15)
CREATE_REJECT(reject_compress_unknown, -EINVAL,
	      c.compress = KVTIER_COMPRESS_MAX + 1)
CREATE_REJECT(reject_compress_flag_unknown, -EINVAL,
	      c.compress = KVTIER_COMPRESS_LZ4;
	      c.compress_flags = KVTIER_COMPRESS_FLAGS + 1)
CREATE_REJECT(reject_compress_flags_alone, -EINVAL,
	      c.compress_flags = KVTIER_COMPRESS_SHUFFLE2)
CREATE_REJECT(reject_compress_with_parts, -EINVAL,
	      c.compress = KVTIER_COMPRESS_LZ4; c.parts = 2)

/* A create that asks for more DRAM than the whole dram_mb budget. */
static void create_over_budget(struct __test_metadata *_metadata,
			       FIXTURE_DATA(pool) *self, __u32 dram_blocks)
{
	struct kvtier_pool_create c;
	long long mb = 0;
	int ret;

	ASSERT_EQ(0, kst_param("dram_mb", &mb));
	kst_create_init(&c, self->name, KVTIER_BLOCK_SIZE_MAX, 1, 1);
	c.capacity = (__u32)(((__u64)mb << 20) / KVTIER_BLOCK_SIZE_MAX + 1);
	c.dram_blocks = dram_blocks ? c.capacity : 0;
	ret = kst_create(self->ctl, &c);
	if (ret >= 0)
		close(ret);
	ASSERT_EQ(-ENOSPC, ret);
	ASSERT_EQ(-ENOENT, kst_pool_open(self->ctl, self->name, 0));
}

TEST_F(pool, reject_over_dram_budget)
{
	create_over_budget(_metadata, self, 1);
}

/* Same, with dram_blocks 0 standing for capacity. */
TEST_F(pool, reject_over_dram_budget_implicit)
{
	create_over_budget(_metadata, self, 0);
}

/*
 * A create that returns -EFAULT because its answer (the fd) cannot be
 * written back changes nothing: the pool does not exist, and the name can
 * be created after. (Found by the fuzzer.)
 */
TEST_F(pool, efault_create_changes_nothing)
{
	struct kvtier_pool_create c;
	void *ro;
	int pfd;

	kst_create_init(&c, self->name, KST_PAGE, 4, 4);
	ro = kst_ro_page_with(&c, sizeof(c));
	ASSERT_NE(NULL, ro);
	ASSERT_EQ(-EFAULT, kst_ioctl(self->ctl, KVTIER_IOC_POOL_CREATE, ro));
	pfd = kst_pool_open(self->ctl, self->name, 0);
	EXPECT_EQ(-ENOENT, pfd);
	if (pfd >= 0)
		close(pfd);
	kst_pool_destroy(self->ctl, self->name);
	/* and the name can be created now */
	pfd = kst_create(self->ctl, &c);
	EXPECT_LE(0, pfd);
	if (pfd >= 0)
		close(pfd);
	kst_pool_destroy(self->ctl, self->name);
	munmap(ro, KST_PAGE);
}

/* ---- existing names ---------------------------------------------------- */

TEST_F(pool, exists)
{
	int pfd = kst_pool_create(self->ctl, self->name, KST_PAGE, 4, 4);
	int ret;

	ASSERT_LE(0, pfd);
	ret = kst_pool_create(self->ctl, self->name, KST_PAGE, 4, 4);
	if (ret >= 0)
		close(ret);
	ASSERT_EQ(-EEXIST, ret);
	close(pfd);
}

/* -EEXIST even when the second create asks for something else. */
TEST_F(pool, exists_other_geometry)
{
	int pfd = kst_pool_create(self->ctl, self->name, KST_PAGE, 4, 4);
	int ret;

	ASSERT_LE(0, pfd);
	close(pfd);
	ret = kst_pool_create(self->ctl, self->name, 4 * KST_PAGE, 8, 2);
	if (ret >= 0)
		close(ret);
	ASSERT_EQ(-EEXIST, ret);
}

TEST_F(pool, open_existing_flag_opens)
{
	struct kvtier_pool_create c;
	struct kvtier_block b;
	void *buf = kst_alloc(KST_PAGE);
	int pfd, pfd2;

	ASSERT_NE(NULL, buf);
	pfd = kst_pool_create(self->ctl, self->name, KST_PAGE, 4, 4);
	ASSERT_LE(0, pfd);
	kst_fill(buf, KST_PAGE, 7, 8, 1);
	ASSERT_EQ(0, kst_put1(pfd, 7, 8, buf, NULL));

	kst_create_init(&c, self->name, KST_PAGE, 4, 4);
	c.flags = KVTIER_POOL_OPEN_EXISTING;
	pfd2 = kst_create(self->ctl, &c);
	ASSERT_LE(0, pfd2);
	ASSERT_NE(pfd, pfd2);
	ASSERT_EQ(1, is_cloexec(pfd2));
	memset(buf, 0, KST_PAGE);
	ASSERT_EQ(0, kst_get1(pfd2, 7, 8, buf, &b));
	ASSERT_EQ(-1, kst_check_gen(buf, KST_PAGE, 7, 8, 1));
	close(pfd2);
	close(pfd);
	kst_free(buf, KST_PAGE);
}

TEST_F(pool, open_existing_flag_creates)
{
	struct kvtier_pool_create c;
	struct kvtier_pool_stat st;
	int pfd;

	kst_create_init(&c, self->name, 3 * KST_PAGE, 6, 3);
	c.flags = KVTIER_POOL_OPEN_EXISTING;
	pfd = kst_create(self->ctl, &c);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, kst_stat(pfd, &st));
	ASSERT_EQ(3 * KST_PAGE, st.block_size);
	ASSERT_EQ(6U, st.capacity);
	ASSERT_EQ(3U, st.dram_blocks);
	close(pfd);
}

/* ---- open / destroy ---------------------------------------------------- */

TEST_F(pool, open_unknown)
{
	ASSERT_EQ(-ENOENT, kst_pool_open(self->ctl, self->name, 0));
}

TEST_F(pool, destroy_unknown)
{
	ASSERT_EQ(-ENOENT, kst_pool_destroy(self->ctl, self->name));
}

TEST_F(pool, destroy_twice)
{
	int pfd = kst_pool_create(self->ctl, self->name, KST_PAGE, 4, 4);

	ASSERT_LE(0, pfd);
	close(pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, self->name));
	ASSERT_EQ(-ENOENT, kst_pool_destroy(self->ctl, self->name));
	ASSERT_EQ(-ENOENT, kst_pool_open(self->ctl, self->name, 0));
}

#define OPEN_REJECT(test, ...) \
TEST_F(pool, test) \
{ \
	struct kvtier_pool_open o; \
	int pfd = kst_pool_create(self->ctl, self->name, KST_PAGE, 4, 4); \
	ASSERT_LE(0, pfd); \
	memset(&o, 0, sizeof(o)); \
	kst_set_name(o.name, self->name); \
	__VA_ARGS__; \
	ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl, KVTIER_IOC_POOL_OPEN, &o)); \
	close(pfd); \
}

OPEN_REJECT(open_reject_flags_unknown_lowest,
	    o.flags = kst_unknown_bit(KVTIER_POOL_OPEN_FLAGS))
OPEN_REJECT(open_reject_flags_open_existing,
	    o.flags = KVTIER_POOL_OPEN_EXISTING)
OPEN_REJECT(open_reject_flags_bit31, o.flags = 1U << 31)
OPEN_REJECT(open_reject_reserved0, o.reserved[0] = 1)
OPEN_REJECT(open_reject_reserved1, o.reserved[1] = 1ULL << 40)

#define DESTROY_REJECT(test, ...) \
TEST_F(pool, test) \
{ \
	struct kvtier_pool_destroy d; \
	int pfd = kst_pool_create(self->ctl, self->name, KST_PAGE, 4, 4); \
	ASSERT_LE(0, pfd); \
	close(pfd); \
	memset(&d, 0, sizeof(d)); \
	kst_set_name(d.name, self->name); \
	__VA_ARGS__; \
	ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl, KVTIER_IOC_POOL_DESTROY, &d)); \
	pfd = kst_pool_open(self->ctl, self->name, 0); \
	ASSERT_LE(0, pfd); \
	close(pfd); \
}

DESTROY_REJECT(destroy_reject_flags, d.flags = 1)
DESTROY_REJECT(destroy_reject_pad, d.__pad = 1)
DESTROY_REJECT(destroy_reject_reserved0, d.reserved[0] = 1)
DESTROY_REJECT(destroy_reject_reserved1, d.reserved[1] = 1ULL << 63)

/* ---- lifetime ---------------------------------------------------------- */

/* Blocks stay when every fd is closed; a new fd by name finds them. */
TEST_F(pool, data_outlives_fds)
{
	size_t bs = 2 * KST_PAGE;
	struct kvtier_block b[3];
	char *buf = kst_alloc(3 * bs);
	__u32 done;
	int pfd, i;

	ASSERT_NE(NULL, buf);
	pfd = kst_pool_create(self->ctl, self->name, bs, 8, 8);
	ASSERT_LE(0, pfd);
	for (i = 0; i < 3; i++) {
		kst_fill(buf + i * bs, bs, 0x1234, i, 5);
		kst_blk(&b[i], 0x1234, i, buf + i * bs);
	}
	ASSERT_EQ(0, kst_batch(pfd, KVTIER_IOC_PUT, b, 3, 0, &done));
	ASSERT_EQ(3U, done);
	close(pfd);
	close(self->ctl);

	memset(buf, 0, 3 * bs);
	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	pfd = kst_pool_open(self->ctl, self->name, KVTIER_POOL_RDONLY);
	ASSERT_LE(0, pfd);
	for (i = 0; i < 3; i++)
		kst_blk(&b[i], 0x1234, i, buf + i * bs);
	ASSERT_EQ(0, kst_batch(pfd, KVTIER_IOC_GET, b, 3, 0, &done));
	ASSERT_EQ(3U, done);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(-1, kst_check_gen(buf + i * bs, bs, 0x1234, i, 5));
	close(pfd);
	kst_free(buf, 3 * bs);
}

/*
 * Destroy removes the name only: the open fd keeps working, the name can
 * be created again as a new, empty pool, and the two do not mix.
 */
TEST_F(pool, destroy_while_open)
{
	void *buf = kst_alloc(KST_PAGE);
	int pfd, pfd2;

	ASSERT_NE(NULL, buf);
	pfd = kst_pool_create(self->ctl, self->name, KST_PAGE, 8, 8);
	ASSERT_LE(0, pfd);
	kst_fill(buf, KST_PAGE, 1, 1, 1);
	ASSERT_EQ(0, kst_put1(pfd, 1, 1, buf, NULL));

	ASSERT_EQ(0, kst_pool_destroy(self->ctl, self->name));
	ASSERT_EQ(-ENOENT, kst_pool_open(self->ctl, self->name, 0));

	/* the old fd still works, both ways */
	kst_fill(buf, KST_PAGE, 1, 2, 1);
	ASSERT_EQ(0, kst_put1(pfd, 1, 2, buf, NULL));
	memset(buf, 0, KST_PAGE);
	ASSERT_EQ(0, kst_get1(pfd, 1, 1, buf, NULL));
	ASSERT_EQ(-1, kst_check_gen(buf, KST_PAGE, 1, 1, 1));

	/* a new pool under the old name is a different, empty pool */
	pfd2 = kst_pool_create(self->ctl, self->name, KST_PAGE, 8, 8);
	ASSERT_LE(0, pfd2);
	ASSERT_EQ(-ENOENT, kst_get1(pfd2, 1, 1, buf, NULL));
	kst_fill(buf, KST_PAGE, 1, 1, 2);
	ASSERT_EQ(0, kst_put1(pfd2, 1, 1, buf, NULL));
	memset(buf, 0, KST_PAGE);
	ASSERT_EQ(0, kst_get1(pfd, 1, 1, buf, NULL));
	ASSERT_EQ(-1, kst_check_gen(buf, KST_PAGE, 1, 1, 1));
	ASSERT_EQ(1LL, kst_resident(pfd2));
	ASSERT_EQ(2LL, kst_resident(pfd));
	close(pfd2);
	close(pfd);
	kst_free(buf, KST_PAGE);
}

/* ---- limits ------------------------------------------------------------ */

/* Create pools until max_pools is reached: -EMFILE, and room again after. */
TEST_F_TIMEOUT(pool, max_pools, 120)
{
	char (*names)[KVTIER_NAME_MAX];
	long long max_pools;
	int n, i, ret = 0;

	ASSERT_EQ(0, kst_param("max_pools", &max_pools));
	ASSERT_LT(0, max_pools);
	names = calloc(max_pools + 2, sizeof(*names));
	ASSERT_NE(NULL, names);

	for (n = 0; n <= max_pools; n++) {
		kst_name(names[n], "max");
		ret = kst_pool_create(self->ctl, names[n], KST_PAGE, 1, 1);
		if (ret < 0)
			break;
		close(ret);
	}
	/* other pools may exist, so fewer than max_pools may fit */
	EXPECT_EQ(-EMFILE, ret);
	EXPECT_LE(n, max_pools);
	if (n > 0) {
		/* the last name was never created */
		EXPECT_EQ(-ENOENT, kst_pool_open(self->ctl, names[n], 0));
		/* one freed slot makes room for one more */
		EXPECT_EQ(0, kst_pool_destroy(self->ctl, names[0]));
		ret = kst_pool_create(self->ctl, names[n], KST_PAGE, 1, 1);
		EXPECT_LE(0, ret);
		if (ret >= 0) {
			close(ret);
			n++;
		}
	}
	for (i = 1; i < n; i++)
		kst_pool_destroy(self->ctl, names[i]);
	free(names);
}

/*
 * dram_blocks * block_size and the index are reserved from the dram_mb
 * budget at create, and given back when the pool is gone.
 */
TEST_F(pool, dram_budget_reserved)
{
	long long before[10], after[10];
	struct kvtier_pool_stat st;
	const __u64 bs = KST_MIB;
	const char *b_name = pool_extra(self);
	__u64 avail, left;
	int pfd, ret;

	ret = kst_read_cols(KST_SYSFS_DIR "/stat", before, 10, 0);
	if (ret < 3)
		SKIP(return, "no " KST_SYSFS_DIR "/stat (%d)", ret);
	ASSERT_LE(before[2], before[1]);
	avail = (before[1] - before[2]) / bs;
	if (avail < 4)
		SKIP(return, "less than 4 MiB of dram budget left");

	/* half of what is left, in 1 MiB blocks */
	pfd = kst_pool_create(self->ctl, self->name, bs, avail / 2, avail / 2);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, kst_stat(pfd, &st));
	ASSERT_LE(avail / 2 * bs, st.dram_reserved);
	ASSERT_EQ(10, kst_read_cols(KST_SYSFS_DIR "/stat", after, 10, 0));
	ASSERT_EQ(before[2] + (long long)st.dram_reserved, after[2]);

	/* one block more than is left does not fit */
	left = after[1] - after[2];
	ret = kst_pool_create(self->ctl, b_name, bs, left / bs + 1,
			      left / bs + 1);
	if (ret >= 0)
		close(ret);
	ASSERT_EQ(-ENOSPC, ret);

	/* destroyed but open: still reserved */
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, self->name));
	ASSERT_EQ(10, kst_read_cols(KST_SYSFS_DIR "/stat", after, 10, 0));
	ASSERT_EQ(before[2] + (long long)st.dram_reserved, after[2]);

	/* gone: the budget is back */
	close(pfd);
	ASSERT_EQ(10, kst_read_cols(KST_SYSFS_DIR "/stat", after, 10, 0));
	ASSERT_EQ(before[2], after[2]);
	ret = kst_pool_create(self->ctl, b_name, bs, avail / 2 + 1,
			      avail / 2 + 1);
	ASSERT_LE(0, ret);
	close(ret);
}

/* ---- block sizes ------------------------------------------------------- */

FIXTURE(bsize) {
	int ctl, pfd;
	char name[KVTIER_NAME_MAX];
	char *buf;
};

FIXTURE_VARIANT(bsize) {
	__u64 block_size;
	unsigned int count;	/* blocks the tests put */
};

FIXTURE_VARIANT_ADD(bsize, b4k) { .block_size = 4 * KST_KIB, .count = 16 };
FIXTURE_VARIANT_ADD(bsize, b12k) { .block_size = 12 * KST_KIB, .count = 8 };
FIXTURE_VARIANT_ADD(bsize, b64k) { .block_size = 64 * KST_KIB, .count = 8 };
FIXTURE_VARIANT_ADD(bsize, b2m) { .block_size = 2 * KST_MIB, .count = 4 };

FIXTURE_SETUP(bsize)
{
	kst_setup(_metadata);

	self->pfd = -1;
	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	kst_name(self->name, "bsize");
	self->buf = kst_alloc(variant->block_size * variant->count);
	ASSERT_NE(NULL, self->buf);
	self->pfd = kst_pool_create(self->ctl, self->name, variant->block_size,
				    2 * variant->count, variant->count);
	ASSERT_LE(0, self->pfd);
}

FIXTURE_TEARDOWN(bsize)
{
	if (self->pfd >= 0)
		close(self->pfd);
	kst_pool_destroy(self->ctl, self->name);
	kst_free(self->buf, variant->block_size * variant->count);
	close(self->ctl);
}

/* Put count blocks in one batch, get them back in reverse in another. */
TEST_F(bsize, round_trip)
{
	const __u64 bs = variant->block_size;
	const unsigned int n = variant->count;
	struct kvtier_block b[16];
	__u64 seen = 0;
	__u32 done;
	unsigned int i;

	for (i = 0; i < n; i++) {
		kst_fill(self->buf + i * bs, bs, bs, i, 3);
		kst_blk(&b[i], bs, i, self->buf + i * bs);
	}
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_PUT, b, n, 0, &done));
	ASSERT_EQ(n, done);
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, b[i].status);
		ASSERT_EQ((__u32)KVTIER_TIER_DRAM, b[i].tier);
		ASSERT_GT(2ULL * n, b[i].addr);
		/* addresses are distinct */
		ASSERT_EQ(0ULL, seen & (1ULL << b[i].addr));
		seen |= 1ULL << b[i].addr;
	}

	memset(self->buf, 0, bs * n);
	for (i = 0; i < n; i++)
		kst_blk(&b[i], bs, n - 1 - i, self->buf + i * bs);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_GET, b, n, 0, &done));
	ASSERT_EQ(n, done);
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, b[i].status);
		ASSERT_EQ(-1, kst_check_gen(self->buf + i * bs, bs, bs,
					    n - 1 - i, 3));
	}
}

TEST_F(bsize, stat)
{
	const __u64 bs = variant->block_size;
	struct kvtier_pool_stat st;
	unsigned int i;

	for (i = 0; i < variant->count; i++) {
		kst_fill(self->buf, bs, 9, i, 0);
		ASSERT_EQ(0, kst_put1(self->pfd, 9, i, self->buf, NULL));
	}
	ASSERT_EQ(0, kst_get1(self->pfd, 9, 0, self->buf, NULL));
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	ASSERT_EQ(bs, st.block_size);
	ASSERT_EQ(2 * variant->count, st.capacity);
	ASSERT_EQ(variant->count, st.dram_blocks);
	ASSERT_EQ((__u64)variant->count, st.resident[KVTIER_TIER_DRAM]);
	ASSERT_EQ((__u64)variant->count, st.puts);
	ASSERT_EQ(1ULL, st.hits);
	ASSERT_EQ(bs * variant->count, st.bytes_in);
	ASSERT_EQ(bs, st.bytes_out);
}

TEST_F(bsize, replace)
{
	const __u64 bs = variant->block_size;
	struct kvtier_block b;

	kst_fill(self->buf, bs, 4, 4, 1);
	ASSERT_EQ(0, kst_put1(self->pfd, 4, 4, self->buf, NULL));
	kst_fill(self->buf, bs, 4, 4, 2);
	ASSERT_EQ(-EEXIST, kst_put1(self->pfd, 4, 4, self->buf, NULL));
	ASSERT_EQ(0, kst_replace1(self->pfd, 4, 4, self->buf, &b));
	ASSERT_EQ((__u32)KVTIER_TIER_DRAM, b.tier);
	memset(self->buf, 0, bs);
	ASSERT_EQ(0, kst_get1(self->pfd, 4, 4, self->buf, NULL));
	ASSERT_EQ(-1, kst_check_gen(self->buf, bs, 4, 4, 2));
	ASSERT_EQ(1LL, kst_resident(self->pfd));
}

/* The largest block: 64 MiB, one put and one get. */
TEST_F_TIMEOUT(pool, block_64m, 180)
{
	const __u64 bs = KVTIER_BLOCK_SIZE_MAX;
	struct kvtier_pool_stat st;
	char *in, *out;
	int pfd, ret;

	pfd = kst_pool_create(self->ctl, self->name, bs, 1, 1);
	if (pfd == -ENOSPC)
		SKIP(return, "dram_mb budget too small for a 64 MiB block");
	ASSERT_LE(0, pfd);
	in = kst_alloc(bs);
	out = kst_alloc(bs);
	if (!in || !out)
		SKIP(return, "no memory for 2 x 64 MiB buffers");
	kst_fill(in, bs, 64, 64, 64);
	ret = kst_put1(pfd, 64, 64, in, NULL);
	if (ret == -ENOMEM)
		SKIP(return, "kernel memory short for a 64 MiB block");
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, kst_get1(pfd, 64, 64, out, NULL));
	ASSERT_EQ(-1, kst_check_gen(out, bs, 64, 64, 64));
	ASSERT_EQ(0, kst_stat(pfd, &st));
	ASSERT_EQ(bs, st.bytes_in);
	ASSERT_EQ(bs, st.bytes_out);
	close(pfd);
	kst_free(in, bs);
	kst_free(out, bs);
}

TEST_HARNESS_MAIN
