// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier eviction and pins: LRU order when a pool's DRAM share is full,
 * what refreshes a block, pins that block eviction and DROP, and pins that
 * go away with the fd (close, SIGKILL).
 */
#include "kvtier_test.h"

#define BS	KST_PAGE
#define CAP	64
#define DRAM	4
#define K0	0xe71c7ULL	/* first key word of every block here */

FIXTURE(evict) {
	int ctl, pfd;
	char name[KVTIER_NAME_MAX];
	char *buf;		/* 16 blocks */
};

FIXTURE_SETUP(evict)
{
	kst_setup(_metadata);

	self->pfd = -1;
	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	kst_name(self->name, "evict");
	self->pfd = kst_pool_create(self->ctl, self->name, BS, CAP, DRAM);
	ASSERT_LE(0, self->pfd);
	self->buf = kst_alloc(16 * BS);
	ASSERT_NE(NULL, self->buf);
}

FIXTURE_TEARDOWN(evict)
{
	if (self->pfd >= 0)
		close(self->pfd);
	kst_pool_destroy(self->ctl, self->name);
	kst_free(self->buf, 16 * BS);
	close(self->ctl);
}

/* Put key i, one PUT each, generation i. */
static int put_keys(FIXTURE_DATA(evict) *self, unsigned int first,
		    unsigned int last)
{
	unsigned int i;
	int ret;

	for (i = first; i <= last; i++) {
		kst_fill(self->buf, BS, K0, i, i);
		ret = kst_put1(self->pfd, K0, i, self->buf, NULL);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Resident keys among 0..n-1 as a bit mask, found with LOOKUP (which does
 * not refresh them); callers check bytes with get_check() where needed.
 */
static long long resident_mask(FIXTURE_DATA(evict) *self, unsigned int n)
{
	struct kvtier_block b[32];
	long long mask = 0;
	unsigned int i;
	__u32 done;
	int ret;

	for (i = 0; i < n; i++)
		kst_blk(&b[i], K0, i, NULL);
	ret = kst_batch(self->pfd, KVTIER_IOC_LOOKUP, b, n, 0, &done);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		if (b[i].status == 0)
			mask |= 1LL << i;
		else if (b[i].status != -ENOENT)
			return -EPROTO;
	}
	return mask;
}

/* GET key i and check its bytes; 0 if right. */
static int get_check(FIXTURE_DATA(evict) *self, int fd, unsigned int i)
{
	int ret;

	memset(self->buf, 0, BS);
	ret = kst_get1(fd, K0, i, self->buf, NULL);
	if (ret)
		return ret;
	return kst_check_gen(self->buf, BS, K0, i, i) == -1 ? 0 : -EILSEQ;
}

static long long stat_field(int fd, size_t off)
{
	struct kvtier_pool_stat st;
	int ret = kst_stat(fd, &st);

	return ret ? ret : (long long)*(__u64 *)((char *)&st + off);
}

#define EVICTIONS(fd)	stat_field(fd, offsetof(struct kvtier_pool_stat, evictions))

/* ---- LRU --------------------------------------------------------------- */

TEST_F(evict, lru_evicts_oldest)
{
	ASSERT_EQ(0, put_keys(self, 0, 3));
	ASSERT_EQ(0xfLL, resident_mask(self, 8));
	ASSERT_EQ(0LL, EVICTIONS(self->pfd));
	ASSERT_EQ(0, put_keys(self, 4, 4));
	ASSERT_EQ(0x1eLL, resident_mask(self, 8));
	ASSERT_EQ(1LL, EVICTIONS(self->pfd));
	ASSERT_EQ((long long)DRAM, kst_resident(self->pfd));
	ASSERT_EQ(-ENOENT, kst_get1(self->pfd, K0, 0, self->buf, NULL));
}

TEST_F(evict, get_refreshes)
{
	ASSERT_EQ(0, put_keys(self, 0, 3));
	ASSERT_EQ(0, get_check(self, self->pfd, 0));
	ASSERT_EQ(0, put_keys(self, 4, 4));
	ASSERT_EQ(0x1dLL, resident_mask(self, 8));	/* 1 went */
	ASSERT_EQ(0, get_check(self, self->pfd, 2));
	ASSERT_EQ(0, put_keys(self, 5, 5));
	ASSERT_EQ(0x35LL, resident_mask(self, 8));	/* then 3 */
}

TEST_F(evict, lookup_does_not_refresh)
{
	ASSERT_EQ(0, put_keys(self, 0, 3));
	ASSERT_EQ(0, kst_lookup1(self->pfd, K0, 0, NULL));
	ASSERT_EQ(0, put_keys(self, 4, 4));
	ASSERT_EQ(0x1eLL, resident_mask(self, 8));
}

TEST_F(evict, lookup_touch_refreshes)
{
	ASSERT_EQ(0, put_keys(self, 0, 3));
	ASSERT_EQ(0, kst_one(self->pfd, KVTIER_IOC_LOOKUP, K0, 0, NULL,
			     KVTIER_LOOKUP_TOUCH, NULL));
	ASSERT_EQ(0, put_keys(self, 4, 4));
	ASSERT_EQ(0x1dLL, resident_mask(self, 8));
}

/* Many more blocks than DRAM: the last DRAM ones stay, bytes intact. */
TEST_F(evict, churn)
{
	unsigned int i;

	ASSERT_EQ(0, put_keys(self, 0, 31));
	ASSERT_EQ(0xfLL << 28, resident_mask(self, 32));
	ASSERT_EQ(28LL, EVICTIONS(self->pfd));
	ASSERT_EQ((long long)DRAM, kst_resident(self->pfd));
	for (i = 28; i < 32; i++)
		ASSERT_EQ(0, get_check(self, self->pfd, i));
}

/* One batch bigger than DRAM: every entry goes in, the last ones stay. */
TEST_F(evict, batch_larger_than_dram)
{
	struct kvtier_block b[8];
	__u32 done;
	int i;

	for (i = 0; i < 8; i++) {
		kst_fill(self->buf + i * BS, BS, K0, i, i);
		kst_blk(&b[i], K0, i, self->buf + i * BS);
	}
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_PUT, b, 8, 0, &done));
	ASSERT_EQ(8U, done);
	ASSERT_EQ(0xf0LL, resident_mask(self, 8));
	for (i = 4; i < 8; i++)
		ASSERT_EQ(0, get_check(self, self->pfd, i));
}

/*
 * A PUT whose source cannot be read fails with -EFAULT before it takes a
 * block: a full DRAM share loses nothing to a batch of bad pointers (each
 * used to evict a block, allocate and zero pages, then fail), and a good
 * entry after them goes in.
 */
TEST_F(evict, bad_source_evicts_nothing)
{
	struct kvtier_block b[8];
	char *gone, *half;
	__u32 done;
	int i;

	gone = mmap(NULL, 4 * BS, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	ASSERT_NE(MAP_FAILED, gone);
	/* A source whose second half is not mapped. */
	half = kst_alloc(2 * BS);
	ASSERT_NE(NULL, half);
	ASSERT_EQ(0, munmap(half + BS, BS));
	ASSERT_EQ(0, put_keys(self, 0, DRAM - 1));
	ASSERT_EQ(0LL, EVICTIONS(self->pfd));

	for (i = 0; i < 7; i++)
		kst_blk(&b[i], K0, 16 + i, gone + (i % 4) * BS);
	kst_blk(&b[7], K0, 23, half + BS / 2);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_PUT, b, 8, 0, &done));
	ASSERT_EQ(0U, done);
	for (i = 0; i < 8; i++)
		ASSERT_EQ(-EFAULT, b[i].status);
	ASSERT_EQ(0LL, EVICTIONS(self->pfd));
	ASSERT_EQ(0xfLL, resident_mask(self, 8));

	/* A good entry after bad ones evicts the oldest, as ever. */
	kst_blk(&b[0], K0, 16, gone);
	kst_fill(self->buf, BS, K0, 24, 24);
	kst_blk(&b[1], K0, 24, self->buf);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_PUT, b, 2, 0, &done));
	ASSERT_EQ(1U, done);
	ASSERT_EQ(-EFAULT, b[0].status);
	ASSERT_EQ(1LL, EVICTIONS(self->pfd));
	ASSERT_EQ(0xeLL, resident_mask(self, 8));
	ASSERT_EQ(0, get_check(self, self->pfd, 24));
	munmap(half, BS);
	munmap(gone, 4 * BS);
}

/* ---- pins -------------------------------------------------------------- */

TEST_F(evict, pinned_not_evicted)
{
	ASSERT_EQ(0, put_keys(self, 0, 3));
	ASSERT_EQ(0, kst_pin1(self->pfd, K0, 0));
	ASSERT_EQ(1LL, kst_pinned(self->pfd));
	/* 4 puts: 1, 2, 3 and then 4 (the oldest unpinned) go */
	ASSERT_EQ(0, put_keys(self, 4, 7));
	ASSERT_EQ(0xe1LL, resident_mask(self, 8));
	ASSERT_EQ(0, get_check(self, self->pfd, 0));
	ASSERT_EQ(4LL, EVICTIONS(self->pfd));
}

TEST_F(evict, all_pinned_put_enospc)
{
	struct kvtier_block b[2];
	__u32 done;
	int i;

	ASSERT_EQ(0, put_keys(self, 0, 3));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, kst_pin1(self->pfd, K0, i));
	ASSERT_EQ(4LL, kst_pinned(self->pfd));
	for (i = 0; i < 2; i++) {
		kst_fill(self->buf + i * BS, BS, K0, 4 + i, 4 + i);
		kst_blk(&b[i], K0, 4 + i, self->buf + i * BS);
	}
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_PUT, b, 2, 0, &done));
	ASSERT_EQ(0U, done);
	ASSERT_EQ(-ENOSPC, b[0].status);
	ASSERT_EQ(-ENOSPC, b[1].status);
	ASSERT_EQ(0xfLL, resident_mask(self, 8));
	ASSERT_EQ(0LL, EVICTIONS(self->pfd));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, get_check(self, self->pfd, i));
}

TEST_F(evict, unpin_makes_evictable)
{
	int i;

	ASSERT_EQ(0, put_keys(self, 0, 3));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, kst_pin1(self->pfd, K0, i));
	ASSERT_EQ(0, kst_unpin1(self->pfd, K0, 2));
	ASSERT_EQ(3LL, kst_pinned(self->pfd));
	ASSERT_EQ(0, put_keys(self, 4, 4));
	ASSERT_EQ(0x1bLL, resident_mask(self, 8));
	/* and now it is full of pins again */
	ASSERT_EQ(0, kst_pin1(self->pfd, K0, 4));
	kst_fill(self->buf, BS, K0, 5, 5);
	ASSERT_EQ(-ENOSPC, kst_put1(self->pfd, K0, 5, self->buf, NULL));
}

/* pinned counts blocks pinned by any fd, once each. */
TEST_F(evict, pin_counts)
{
	struct kvtier_block b[2];
	__u32 done;
	int fd2;

	ASSERT_EQ(0, put_keys(self, 0, 3));
	fd2 = kst_pool_open(self->ctl, self->name, 0);
	ASSERT_LE(0, fd2);

	kst_blk(&b[0], K0, 0, NULL);
	kst_blk(&b[1], K0, 1, NULL);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_PIN, b, 2, 0, &done));
	ASSERT_EQ(2U, done);
	ASSERT_EQ(2LL, kst_pinned(self->pfd));

	ASSERT_EQ(0, kst_pin1(fd2, K0, 1));
	ASSERT_EQ(0, kst_pin1(fd2, K0, 2));
	ASSERT_EQ(3LL, kst_pinned(self->pfd));

	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_UNPIN, b, 2, 0, &done));
	ASSERT_EQ(2U, done);
	/* 1 is still pinned by fd2 */
	ASSERT_EQ(2LL, kst_pinned(self->pfd));
	ASSERT_EQ(-EBUSY, kst_drop1(self->pfd, K0, 1));
	ASSERT_EQ(0, kst_drop1(self->pfd, K0, 0));

	close(fd2);
	ASSERT_EQ(0LL, kst_pinned(self->pfd));
}

TEST_F(evict, unpin_not_pinned_by_this_fd)
{
	int fd2;

	ASSERT_EQ(0, put_keys(self, 0, 1));
	fd2 = kst_pool_open(self->ctl, self->name, 0);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, kst_pin1(self->pfd, K0, 0));
	ASSERT_EQ(-EINVAL, kst_unpin1(fd2, K0, 0));
	ASSERT_EQ(1LL, kst_pinned(self->pfd));
	/* fd2's failed unpin did not take the pin of the first fd */
	ASSERT_EQ(-EBUSY, kst_drop1(fd2, K0, 0));
	close(fd2);
}

TEST_F(evict, unpin_never_pinned)
{
	ASSERT_EQ(0, put_keys(self, 0, 0));
	ASSERT_EQ(-EINVAL, kst_unpin1(self->pfd, K0, 0));
	ASSERT_EQ(0LL, kst_pinned(self->pfd));
}

TEST_F(evict, unpin_unknown)
{
	ASSERT_EQ(-ENOENT, kst_unpin1(self->pfd, K0, 9));
}

TEST_F(evict, pin_unknown)
{
	ASSERT_EQ(-ENOENT, kst_pin1(self->pfd, K0, 9));
	ASSERT_EQ(0LL, kst_pinned(self->pfd));
}

TEST_F(evict, pin_batch_mixed)
{
	struct kvtier_block b[3];
	__u32 done;

	ASSERT_EQ(0, put_keys(self, 0, 1));
	kst_blk(&b[0], K0, 0, NULL);
	kst_blk(&b[1], K0, 7, NULL);
	kst_blk(&b[2], K0, 1, NULL);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_PIN, b, 3, 0, &done));
	ASSERT_EQ(2U, done);
	ASSERT_EQ(0, b[0].status);
	ASSERT_EQ(-ENOENT, b[1].status);
	ASSERT_EQ(0, b[2].status);
	ASSERT_EQ(2LL, kst_pinned(self->pfd));
}

TEST_F(evict, drop_pinned)
{
	ASSERT_EQ(0, put_keys(self, 0, 0));
	ASSERT_EQ(0, kst_pin1(self->pfd, K0, 0));
	ASSERT_EQ(-EBUSY, kst_drop1(self->pfd, K0, 0));
	ASSERT_EQ(0, get_check(self, self->pfd, 0));
	ASSERT_EQ(0, kst_unpin1(self->pfd, K0, 0));
	ASSERT_EQ(0, kst_drop1(self->pfd, K0, 0));
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, 0, NULL));
}

TEST_F(evict, replace_pinned)
{
	ASSERT_EQ(0, put_keys(self, 0, 0));
	ASSERT_EQ(0, kst_pin1(self->pfd, K0, 0));
	kst_fill(self->buf, BS, K0, 0, 99);
	ASSERT_EQ(-EBUSY, kst_replace1(self->pfd, K0, 0, self->buf, NULL));
	ASSERT_EQ(0, get_check(self, self->pfd, 0));
}

/* A pin lives in the fd: closing it frees the block for eviction. */
TEST_F(evict, pins_vanish_on_close)
{
	int fd2 = kst_pool_open(self->ctl, self->name, 0);

	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, put_keys(self, 0, 3));
	ASSERT_EQ(0, kst_pin1(fd2, K0, 0));
	ASSERT_EQ(0, kst_pin1(fd2, K0, 3));
	ASSERT_EQ(2LL, kst_pinned(self->pfd));
	close(fd2);
	ASSERT_EQ(0LL, kst_pinned(self->pfd));
	/* four new blocks push out all four old ones */
	ASSERT_EQ(0, put_keys(self, 4, 7));
	ASSERT_EQ(0xf0LL, resident_mask(self, 8));
}

/* Pins of a process killed with SIGKILL go with it. */
TEST_F(evict, pins_vanish_on_sigkill)
{
	int pipefd[2];
	pid_t pid;
	char c;

	ASSERT_EQ(0, put_keys(self, 0, 3));
	ASSERT_EQ(0, pipe(pipefd));
	pid = kst_fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int ctl = kst_ctl_open(), fd;

		close(pipefd[0]);
		if (ctl < 0)
			_exit(10);
		fd = kst_pool_open(ctl, self->name, 0);
		if (fd < 0)
			_exit(11);
		if (kst_pin1(fd, K0, 1) || kst_pin1(fd, K0, 2))
			_exit(12);
		if (write(pipefd[1], "p", 1) != 1)
			_exit(13);
		for (;;)
			pause();
	}
	close(pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	ASSERT_EQ(2LL, kst_pinned(self->pfd));
	ASSERT_EQ(-EBUSY, kst_drop1(self->pfd, K0, 1));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(128 + SIGKILL, kst_wait(pid));
	ASSERT_EQ(0LL, kst_pinned(self->pfd));
	ASSERT_EQ(0, put_keys(self, 4, 7));
	ASSERT_EQ(0xf0LL, resident_mask(self, 8));
	close(pipefd[0]);
}

TEST_HARNESS_MAIN
