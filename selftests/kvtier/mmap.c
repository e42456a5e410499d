// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier mmap of a pool fd: block address a at offset a * block_size, read
 * only, SIGBUS where no block is resident (also right after DROP and
 * eviction), lifetime of a mapping, and NUMA placement of the pages.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <time.h>

#include "kvtier_test.h"

#define CAP	8
#define DRAM	4

/* ---- fixture ----------------------------------------------------------- */

FIXTURE(mmap) {
	int ctl, pfd;
	char name[KVTIER_NAME_MAX];
	char *buf, *out;	/* one block each */
	char *map;		/* the whole pool, or NULL */
	size_t map_len;
};

FIXTURE_VARIANT(mmap) {
	__u64 block_size;
};

FIXTURE_VARIANT_ADD(mmap, b4k) { .block_size = 4 * KST_KIB };
FIXTURE_VARIANT_ADD(mmap, b12k) { .block_size = 12 * KST_KIB };
FIXTURE_VARIANT_ADD(mmap, b64k) { .block_size = 64 * KST_KIB };
FIXTURE_VARIANT_ADD(mmap, b2m) { .block_size = 2 * KST_MIB };

FIXTURE_SETUP(mmap)
{
	kst_setup(_metadata);

	self->pfd = -1;
	self->map = NULL;
	self->map_len = CAP * variant->block_size;
	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	kst_name(self->name, "mmap");
	self->pfd = kst_pool_create(self->ctl, self->name, variant->block_size,
				    CAP, DRAM);
	ASSERT_LE(0, self->pfd);
	self->buf = kst_alloc(variant->block_size);
	self->out = kst_alloc(variant->block_size);
	ASSERT_NE(NULL, self->buf);
	ASSERT_NE(NULL, self->out);
	ASSERT_EQ(0, kst_probe_install());
}

FIXTURE_TEARDOWN(mmap)
{
	if (self->map)
		munmap(self->map, self->map_len);
	if (self->pfd >= 0)
		close(self->pfd);
	kst_pool_destroy(self->ctl, self->name);
	kst_free(self->buf, variant->block_size);
	kst_free(self->out, variant->block_size);
	close(self->ctl);
}

static void *map_pool(int fd, size_t len, int prot, int flags, off_t off)
{
	void *p = mmap(NULL, len, prot, flags, fd, off);

	return p == MAP_FAILED ? NULL : p;
}

/* Put key (k0, k1) generation gen; its address, or -errno. */
static long long put_at(FIXTURE_DATA(mmap) *self, __u64 bs, __u64 k0,
			__u64 k1, __u64 gen)
{
	struct kvtier_block b;
	int ret;

	kst_fill(self->buf, bs, k0, k1, gen);
	ret = kst_put1(self->pfd, k0, k1, self->buf, &b);
	if (ret)
		return ret;
	return b.addr < CAP ? (long long)b.addr : -ERANGE;
}

/* Read block @addr through the mapping: 0 and bytes in self->out, or sig. */
static int map_read(FIXTURE_DATA(mmap) *self, __u64 bs, long long addr)
{
	return kst_probe_read(self->map + addr * bs, self->out, bs);
}

TEST_F(mmap, read_matches_put)
{
	const __u64 bs = variant->block_size;
	long long addr[DRAM];
	int i;

	for (i = 0; i < DRAM; i++) {
		addr[i] = put_at(self, bs, 0x3a9, i, 10 + i);
		ASSERT_LE(0, addr[i]);
	}
	self->map = map_pool(self->pfd, self->map_len, PROT_READ, MAP_SHARED, 0);
	ASSERT_NE(NULL, self->map);
	for (i = 0; i < DRAM; i++) {
		ASSERT_EQ(0, map_read(self, bs, addr[i]));
		ASSERT_EQ(-1, kst_check_gen(self->out, bs, 0x3a9, i, 10 + i));
	}
	/* a second pass (now faulted in) reads the same */
	for (i = DRAM - 1; i >= 0; i--) {
		ASSERT_EQ(0, map_read(self, bs, addr[i]));
		ASSERT_EQ(-1, kst_check_gen(self->out, bs, 0x3a9, i, 10 + i));
	}
}

/* Blocks put after the mapping was made show up in it. */
TEST_F(mmap, put_after_map)
{
	const __u64 bs = variant->block_size;
	long long a;

	self->map = map_pool(self->pfd, self->map_len, PROT_READ, MAP_SHARED, 0);
	ASSERT_NE(NULL, self->map);
	a = put_at(self, bs, 0x3aa, 0, 1);
	ASSERT_LE(0, a);
	ASSERT_EQ(0, map_read(self, bs, a));
	ASSERT_EQ(-1, kst_check_gen(self->out, bs, 0x3aa, 0, 1));
}

/* A mapping of one block at its offset. */
TEST_F(mmap, map_one_block)
{
	const __u64 bs = variant->block_size;
	long long a;
	char *p;

	ASSERT_LE(0, put_at(self, bs, 0x3ab, 0, 1));
	a = put_at(self, bs, 0x3ab, 1, 2);
	ASSERT_LE(0, a);
	p = map_pool(self->pfd, bs, PROT_READ, MAP_SHARED, a * bs);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, kst_probe_read(p, self->out, bs));
	ASSERT_EQ(-1, kst_check_gen(self->out, bs, 0x3ab, 1, 2));
	munmap(p, bs);
}

TEST_F(mmap, map_rdonly_fd)
{
	const __u64 bs = variant->block_size;
	int ro = kst_pool_open(self->ctl, self->name, KVTIER_POOL_RDONLY);
	long long a;
	char *p;

	ASSERT_LE(0, ro);
	a = put_at(self, bs, 0x3ac, 0, 3);
	ASSERT_LE(0, a);
	p = map_pool(ro, self->map_len, PROT_READ, MAP_SHARED, 0);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, kst_probe_read(p + a * bs, self->out, bs));
	ASSERT_EQ(-1, kst_check_gen(self->out, bs, 0x3ac, 0, 3));
	munmap(p, self->map_len);
	close(ro);
}

TEST_F(mmap, write_shared_eacces)
{
	void *p = mmap(NULL, self->map_len, PROT_READ | PROT_WRITE,
		       MAP_SHARED, self->pfd, 0);

	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EACCES, errno);
}

TEST_F(mmap, write_only_shared_eacces)
{
	void *p = mmap(NULL, self->map_len, PROT_WRITE, MAP_SHARED,
		       self->pfd, 0);

	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EACCES, errno);
}

TEST_F(mmap, mprotect_write_fails)
{
	const __u64 bs = variant->block_size;
	long long a = put_at(self, bs, 0x3ad, 0, 1);

	ASSERT_LE(0, a);
	self->map = map_pool(self->pfd, self->map_len, PROT_READ, MAP_SHARED, 0);
	ASSERT_NE(NULL, self->map);
	ASSERT_EQ(0, map_read(self, bs, a));
	ASSERT_EQ(-1, mprotect(self->map, self->map_len,
			       PROT_READ | PROT_WRITE));
	ASSERT_EQ(EACCES, errno);
	ASSERT_EQ(-1, mprotect(self->map + a * bs, bs, PROT_WRITE));
	ASSERT_EQ(EACCES, errno);
	/* still readable and unchanged */
	ASSERT_EQ(0, map_read(self, bs, a));
	ASSERT_EQ(-1, kst_check_gen(self->out, bs, 0x3ad, 0, 1));
}

TEST_F(mmap, beyond_capacity_len)
{
	void *p = mmap(NULL, self->map_len + variant->block_size, PROT_READ,
		       MAP_SHARED, self->pfd, 0);

	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EINVAL, errno);
}

TEST_F(mmap, beyond_capacity_offset)
{
	void *p = mmap(NULL, variant->block_size, PROT_READ, MAP_SHARED,
		       self->pfd, self->map_len);

	/* With KVTIER_F_RESERVE the reservation window starts there. */
	if (p != MAP_FAILED) {
		munmap(p, variant->block_size);
		p = mmap(NULL, variant->block_size, PROT_READ, MAP_SHARED,
			 self->pfd, 2 * self->map_len);
	}
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EINVAL, errno);
}

/* Starts inside, runs one page past the end. */
TEST_F(mmap, beyond_capacity_straddle)
{
	void *p = mmap(NULL, variant->block_size + KST_PAGE, PROT_READ,
		       MAP_SHARED, self->pfd,
		       self->map_len - variant->block_size);

	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EINVAL, errno);
}

TEST_F(mmap, not_resident_sigbus)
{
	const __u64 bs = variant->block_size;
	long long a = put_at(self, bs, 0x3ae, 0, 1);
	long long other;

	ASSERT_LE(0, a);
	other = (a + 1) % CAP;
	self->map = map_pool(self->pfd, self->map_len, PROT_READ, MAP_SHARED, 0);
	ASSERT_NE(NULL, self->map);
	ASSERT_EQ(SIGBUS, kst_probe_read(self->map + other * bs, self->out, 8));
	/* the last page of that block too */
	ASSERT_EQ(SIGBUS, kst_probe_read(self->map + (other + 1) * bs - 8,
				     self->out, 8));
	ASSERT_EQ(0, map_read(self, bs, a));
}

/*
 * After DROP the mapped block SIGBUSes. A block put later may take the
 * address; then the mapping shows the new block, never the old one.
 */
TEST_F(mmap, drop_then_sigbus)
{
	const __u64 bs = variant->block_size;
	long long a, b;

	a = put_at(self, bs, 0x3af, 0, 1);
	ASSERT_LE(0, a);
	self->map = map_pool(self->pfd, self->map_len, PROT_READ, MAP_SHARED, 0);
	ASSERT_NE(NULL, self->map);
	ASSERT_EQ(0, map_read(self, bs, a));
	ASSERT_EQ(-1, kst_check_gen(self->out, bs, 0x3af, 0, 1));

	ASSERT_EQ(0, kst_drop1(self->pfd, 0x3af, 0));
	ASSERT_EQ(SIGBUS, kst_probe_read(self->map + a * bs, self->out, 8));
	ASSERT_EQ(SIGBUS, map_read(self, bs, a));

	b = put_at(self, bs, 0x3af, 1, 2);
	ASSERT_LE(0, b);
	if (b == a) {
		ASSERT_EQ(0, map_read(self, bs, a));
		ASSERT_EQ(-1, kst_check_gen(self->out, bs, 0x3af, 1, 2));
	} else {
		ASSERT_EQ(SIGBUS, map_read(self, bs, a));
		ASSERT_EQ(0, map_read(self, bs, b));
		ASSERT_EQ(-1, kst_check_gen(self->out, bs, 0x3af, 1, 2));
	}
}

/* Same for eviction: the evicted block's address never shows its bytes. */
TEST_F(mmap, evict_then_sigbus)
{
	const __u64 bs = variant->block_size;
	long long addr[DRAM + 1];
	int i, sig;

	for (i = 0; i < DRAM; i++) {
		addr[i] = put_at(self, bs, 0x3b0, i, i);
		ASSERT_LE(0, addr[i]);
	}
	self->map = map_pool(self->pfd, self->map_len, PROT_READ, MAP_SHARED, 0);
	ASSERT_NE(NULL, self->map);
	for (i = 0; i < DRAM; i++)
		ASSERT_EQ(0, map_read(self, bs, addr[i]));

	/* key 0 is the oldest: it goes */
	addr[DRAM] = put_at(self, bs, 0x3b0, DRAM, DRAM);
	ASSERT_LE(0, addr[DRAM]);
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, 0x3b0, 0, NULL));

	sig = map_read(self, bs, addr[0]);
	if (addr[DRAM] == addr[0]) {
		ASSERT_EQ(0, sig);
		ASSERT_EQ(-1, kst_check_gen(self->out, bs, 0x3b0, DRAM, DRAM));
	} else {
		ASSERT_EQ(SIGBUS, sig);
	}
	for (i = 1; i <= DRAM; i++) {
		ASSERT_EQ(0, map_read(self, bs, addr[i]));
		ASSERT_EQ(-1, kst_check_gen(self->out, bs, 0x3b0, i, i));
	}
}

/*
 * A page of an evicted block that someone still holds (here a pipe, by
 * vmsplice() from the mapping; a DMA registration alike) keeps its bytes:
 * the pages of evicted blocks go to the pool's next blocks only when
 * nobody else holds them.
 */
TEST_F(mmap, evicted_page_held_keeps_bytes)
{
	const __u64 bs = variant->block_size;
	struct iovec iov;
	long long addr;
	int p[2], i;

	addr = put_at(self, bs, 0x3b1, 0, 7);
	ASSERT_LE(0, addr);
	for (i = 1; i < DRAM; i++)
		ASSERT_LE(0, put_at(self, bs, 0x3b1, i, 7));
	self->map = map_pool(self->pfd, self->map_len, PROT_READ, MAP_SHARED, 0);
	ASSERT_NE(NULL, self->map);
	ASSERT_EQ(0, map_read(self, bs, addr));
	ASSERT_EQ(0, pipe(p));
	iov.iov_base = self->map + addr * bs;
	iov.iov_len = KST_PAGE;
	ASSERT_EQ((ssize_t)KST_PAGE, vmsplice(p[1], &iov, 1, 0));

	/* key 0 is the oldest: it goes first, and DRAM blocks come after */
	for (i = DRAM; i < 2 * DRAM; i++)
		ASSERT_LE(0, put_at(self, bs, 0x3b1, i, 8));
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, 0x3b1, 0, NULL));

	memset(self->out, 0, bs);
	ASSERT_EQ((ssize_t)KST_PAGE, read(p[0], self->out, KST_PAGE));
	kst_fill(self->buf, bs, 0x3b1, 0, 7);
	EXPECT_EQ(0, memcmp(self->buf, self->out, KST_PAGE));
	close(p[0]);
	close(p[1]);
}

/* After REPLACE the block's address shows the new bytes. */
TEST_F(mmap, replace_shows_new)
{
	const __u64 bs = variant->block_size;
	struct kvtier_block b;
	long long a = put_at(self, bs, 0x3b1, 0, 1);

	ASSERT_LE(0, a);
	self->map = map_pool(self->pfd, self->map_len, PROT_READ, MAP_SHARED, 0);
	ASSERT_NE(NULL, self->map);
	ASSERT_EQ(0, map_read(self, bs, a));
	kst_fill(self->buf, bs, 0x3b1, 0, 2);
	ASSERT_EQ(0, kst_replace1(self->pfd, 0x3b1, 0, self->buf, &b));
	ASSERT_GT((__u64)CAP, b.addr);
	ASSERT_EQ(0, map_read(self, bs, b.addr));
	ASSERT_EQ(-1, kst_check_gen(self->out, bs, 0x3b1, 0, 2));
	if (b.addr != (__u64)a) {
		int sig = map_read(self, bs, a);

		/* the old address never shows the old bytes */
		if (!sig)
			ASSERT_NE(-1, kst_check_gen(self->out, bs, 0x3b1, 0, 1));
	}
}

/* A mapping outlives its fd and the pool's name. */
TEST_F(mmap, survives_close_and_destroy)
{
	const __u64 bs = variant->block_size;
	long long a = put_at(self, bs, 0x3b2, 0, 5);

	ASSERT_LE(0, a);
	self->map = map_pool(self->pfd, self->map_len, PROT_READ, MAP_SHARED, 0);
	ASSERT_NE(NULL, self->map);
	close(self->pfd);
	self->pfd = -1;
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, self->name));
	ASSERT_EQ(0, map_read(self, bs, a));
	ASSERT_EQ(-1, kst_check_gen(self->out, bs, 0x3b2, 0, 5));
	ASSERT_EQ(SIGBUS, map_read(self, bs, (a + 1) % CAP));
	ASSERT_EQ(0, munmap(self->map, self->map_len));
	self->map = NULL;
}

/* A forked child sees the same mapping. */
TEST_F(mmap, inherited_by_fork)
{
	const __u64 bs = variant->block_size;
	long long a = put_at(self, bs, 0x3b3, 0, 6);
	pid_t pid;

	ASSERT_LE(0, a);
	self->map = map_pool(self->pfd, self->map_len, PROT_READ, MAP_SHARED, 0);
	ASSERT_NE(NULL, self->map);
	pid = kst_fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (map_read(self, bs, a))
			_exit(10);
		if (kst_check_gen(self->out, bs, 0x3b3, 0, 6) != -1)
			_exit(11);
		if (map_read(self, bs, (a + 1) % CAP) != SIGBUS)
			_exit(12);
		_exit(0);
	}
	ASSERT_EQ(0, kst_wait(pid));
}

/*
 * A child with its own fd and mapping killed with SIGKILL: the pool goes
 * on, and the block it had mapped can be dropped and destroyed cleanly.
 */
TEST_F(mmap, sigkill_child_with_mapping)
{
	const __u64 bs = variant->block_size;
	long long a = put_at(self, bs, 0x3b4, 0, 7);
	int pipefd[2];
	pid_t pid;
	char c;

	ASSERT_LE(0, a);
	ASSERT_EQ(0, pipe(pipefd));
	pid = kst_fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int ctl = kst_ctl_open(), fd;
		char *m;

		close(pipefd[0]);
		fd = ctl < 0 ? -1 : kst_pool_open(ctl, self->name,
						  KVTIER_POOL_RDONLY);
		if (fd < 0)
			_exit(10);
		m = map_pool(fd, self->map_len, PROT_READ, MAP_SHARED, 0);
		if (!m)
			_exit(11);
		close(fd);
		close(ctl);
		if (kst_probe_read(m + a * bs, self->out, bs))
			_exit(12);
		if (kst_check_gen(self->out, bs, 0x3b4, 0, 7) != -1)
			_exit(13);
		if (write(pipefd[1], "m", 1) != 1)
			_exit(14);
		for (;;)
			pause();
	}
	close(pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(128 + SIGKILL, kst_wait(pid));
	close(pipefd[0]);

	memset(self->out, 0, bs);
	ASSERT_EQ(0, kst_get1(self->pfd, 0x3b4, 0, self->out, NULL));
	ASSERT_EQ(-1, kst_check_gen(self->out, bs, 0x3b4, 0, 7));
	ASSERT_EQ(0, kst_drop1(self->pfd, 0x3b4, 0));
	ASSERT_EQ(0LL, kst_resident(self->pfd));
}

/* ---- faults racing with DROP / REPLACE / eviction ---------------------- */

#define RACE_BS		(64 * KST_KIB)
#define RACE_CAP	4
#define RACE_K0		0x7ace
#define RACE_KEYS	3
#define RACE_SECS	2
#define RACE_MAXN	(1 << 16)	/* writer operations at most */
#define RACE_WPP	(KST_PAGE / 8)	/* 64-bit words per page */
#define RACE_C		0x9e3779b97f4a7c15ULL

/*
 * The writer's operation n writes generation n of key race_key(n). The
 * readers read pages through the mapping while it runs. A page that is
 * read while its address is being reused may hold runs of words of two
 * blocks (the fault after the zap maps the new block half way through the
 * copy), but every run must be a block the writer made, and no run may be
 * of a generation that was dropped or replaced, or of a PUT that failed,
 * before the read began.
 */
struct race {
	int fd;
	char *map;
	volatile bool stop;
	__u64 seed[RACE_MAXN];		/* kst_fill() seed of generation n */
	char failed[RACE_MAXN];		/* the op of generation n failed */
	long maxn;			/* seeds published so far */
	long dead_below[RACE_KEYS];	/* per key: older ones are gone */
	int err;			/* first problem seen, 0 if none */
	char what[160];
	long pages_ok, pages_bus, torn, ops;
	long done[4];			/* successful ops, by race_op() */
};

/* Key and operation of the writer's step n: a fixed pseudo-random mix. */
static __u64 race_key(long n)
{
	return kst_mix(n) % RACE_KEYS;
}

static int race_op(long n)
{
	return (kst_mix(n) >> 32) % 4;
}

static __u64 race_seed(__u64 k1, __u64 gen)
{
	return kst_mix(RACE_K0 ^ kst_mix(k1 ^ kst_mix(gen)));
}

static void race_fail(struct race *r, const char *what, long a, long b)
{
	if (!__atomic_exchange_n(&r->err, 1, __ATOMIC_RELAXED))
		snprintf(r->what, sizeof(r->what), "%s %ld %ld", what, a, b);
	r->stop = true;
}

/* The generation whose seed is @seed, newest first; -1 if none. */
static long race_gen(struct race *r, __u64 seed)
{
	long n = __atomic_load_n(&r->maxn, __ATOMIC_ACQUIRE);

	for (; n > 0; n--)
		if (r->seed[n] == seed)
			return n;
	return -1;
}

/* Check one page read at block address @a, page @pg. */
static void race_check_page(struct race *r, const __u64 *w, size_t a,
			    size_t pg, const long dead[RACE_KEYS])
{
	size_t first = pg * RACE_WPP, j = pg ? 0 : 3, end;
	int runs = 0;

	while (j < RACE_WPP) {
		__u64 seed = w[j] ^ ((first + j) * RACE_C);
		long gen = race_gen(r, seed);

		for (end = j + 1; end < RACE_WPP; end++)
			if (w[end] != (seed ^ ((first + end) * RACE_C)))
				break;
		if (gen < 0) {
			race_fail(r, "foreign bytes at addr/word", (long)a,
				  (long)(first + j));
			return;
		}
		if (r->failed[gen]) {
			race_fail(r, "bytes of a failed PUT: addr/gen",
				  (long)a, gen);
			return;
		}
		if (gen < dead[race_key(gen)]) {
			race_fail(r, "dropped/replaced block still mapped: "
				  "addr/gen", (long)a, gen);
			return;
		}
		runs++;
		j = end;
	}
	if (runs > 1)
		__atomic_add_fetch(&r->torn, 1, __ATOMIC_RELAXED);
}

static void *race_reader(void *p)
{
	struct race *r = p;
	__u64 page[RACE_WPP];
	long dead[RACE_KEYS];
	long n = 0;
	int k;

	while (!r->stop) {
		size_t a = n % RACE_CAP, pg;

		n++;
		for (pg = 0; pg < RACE_BS / KST_PAGE && !r->stop; pg++) {
			const char *src = r->map + a * RACE_BS + pg * KST_PAGE;

			/* what was gone before this read began */
			for (k = 0; k < RACE_KEYS; k++)
				dead[k] = __atomic_load_n(&r->dead_below[k],
							  __ATOMIC_ACQUIRE);
			if (kst_probe_read(src, page, KST_PAGE)) {
				__atomic_add_fetch(&r->pages_bus, 1,
						   __ATOMIC_RELAXED);
				continue;
			}
			__atomic_add_fetch(&r->pages_ok, 1, __ATOMIC_RELAXED);
			race_check_page(r, page, a, pg, dead);
		}
	}
	return NULL;
}

static double race_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long long stat_evictions(int fd)
{
	struct kvtier_pool_stat st;
	int ret = kst_stat(fd, &st);

	return ret ? ret : (long long)st.evictions;
}

/* Every kind of change has happened at least once. */
static bool race_all_done(struct race *r)
{
	return r->done[0] && r->done[1] && r->done[2] + r->done[3] &&
	       stat_evictions(r->fd) > 0;
}

/* PUT, REPLACE and DROP of three keys in a pool with DRAM for two. */

static void *race_writer(void *p)
{
	struct race *r = p;
	double end = race_now() + RACE_SECS;
	char *buf = kst_alloc(RACE_BS);
	long n = 0;
	int ret;

	if (!buf) {
		race_fail(r, "no memory", 0, 0);
		return NULL;
	}
	/* at least RACE_SECS, longer (on a slow machine) until all happened */
	while (!r->stop && n + 1 < RACE_MAXN &&
	       (race_now() < end ||
		(race_now() < end + 4 * RACE_SECS && !race_all_done(r)))) {
		__u64 k1;

		n++;
		k1 = race_key(n);
		r->seed[n] = race_seed(k1, n);
		__atomic_store_n(&r->maxn, n, __ATOMIC_RELEASE);
		kst_fill(buf, RACE_BS, RACE_K0, k1, n);
		ret = 0;
		switch (race_op(n)) {
		case 0:
			ret = kst_drop1(r->fd, RACE_K0, k1);
			if (ret && ret != -ENOENT)
				race_fail(r, "drop: n/ret", n, ret);
			/* every generation of k1 so far is gone */
			__atomic_store_n(&r->dead_below[k1], n,
					 __ATOMIC_RELEASE);
			break;
		case 1:
			ret = kst_put1(r->fd, RACE_K0, k1, buf, NULL);
			if (ret && ret != -EEXIST)
				race_fail(r, "put: n/ret", n, ret);
			if (ret)
				r->failed[n] = 1;
			break;
		default:
			ret = kst_replace1(r->fd, RACE_K0, k1, buf, NULL);
			if (ret && ret != -EBUSY)
				race_fail(r, "replace: n/ret", n, ret);
			if (ret)
				r->failed[n] = 1;
			/* replaced: only generation n of k1 is left */
			else
				__atomic_store_n(&r->dead_below[k1], n,
						 __ATOMIC_RELEASE);
			break;
		}
		if (!ret)
			r->done[race_op(n)]++;
	}
	r->ops = n;
	r->stop = true;
	kst_free(buf, RACE_BS);
	return NULL;
}

FIXTURE(mrace) {
	int ctl;
	char name[KVTIER_NAME_MAX];
};

FIXTURE_SETUP(mrace)
{
	kst_setup(_metadata);

	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	kst_name(self->name, "mrace");
	ASSERT_EQ(0, kst_probe_install());
}

FIXTURE_TEARDOWN(mrace)
{
	kst_pool_destroy(self->ctl, self->name);
	close(self->ctl);
}

TEST_F_TIMEOUT(mrace, faults_vs_writers, 60)
{
	struct race *r = kst_alloc(sizeof(*r));
	pthread_t th[3];
	int i;

	ASSERT_NE(NULL, r);
	r->fd = kst_pool_create(self->ctl, self->name, RACE_BS, RACE_CAP, 2);
	ASSERT_LE(0, r->fd);
	r->map = map_pool(r->fd, RACE_CAP * RACE_BS, PROT_READ, MAP_SHARED, 0);
	ASSERT_NE(NULL, r->map);

	ASSERT_EQ(0, pthread_create(&th[0], NULL, race_writer, r));
	ASSERT_EQ(0, pthread_create(&th[1], NULL, race_reader, r));
	ASSERT_EQ(0, pthread_create(&th[2], NULL, race_reader, r));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, pthread_join(th[i], NULL));
	if (r->err)
		TH_LOG("%s", r->what);
	ASSERT_EQ(0, r->err);
	/* both outcomes happened, so the race was run */
	ASSERT_LT(0, r->pages_ok);
	ASSERT_LT(0, r->pages_bus);
	/* and every kind of change happened while readers read */
	ASSERT_LT(0, r->done[0]);	/* drops */
	ASSERT_LT(0, r->done[1]);	/* puts */
	ASSERT_LT(0, r->done[2] + r->done[3]);	/* replaces */
	ASSERT_LT(0LL, stat_evictions(r->fd));
	munmap(r->map, RACE_CAP * RACE_BS);
	close(r->fd);
	kst_free(r, sizeof(*r));
}

/* ---- NUMA -------------------------------------------------------------- */

static long kst_move_pages(int count, void **pages, int *status)
{
	return syscall(__NR_move_pages, 0, count, pages, NULL, status, 0);
}

/*
 * Pools on node 1 and on node 0 of a two-node VM: every page of their
 * mapped blocks is on the node asked for (move_pages query mode).
 */
static void numa_check_node(struct __test_metadata *_metadata, int ctl,
			    int node)
{
	const __u64 bs = 16 * KST_KIB;
	const int nblk = 2, npg = (int)(nblk * bs / KST_PAGE);
	struct kvtier_pool_create c;
	struct kvtier_pool_stat st;
	char name[KVTIER_NAME_MAX];
	void *pages[16];
	int status[16];
	char *buf, *map;
	int pfd, i;

	kst_name(name, "numa");
	kst_create_init(&c, name, bs, nblk, nblk);
	c.numa_node = node;
	pfd = kst_create(ctl, &c);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, kst_pool_destroy(ctl, name));
	ASSERT_EQ(0, kst_stat(pfd, &st));
	ASSERT_EQ(node, st.numa_node);

	buf = kst_alloc(bs);
	ASSERT_NE(NULL, buf);
	for (i = 0; i < nblk; i++) {
		kst_fill(buf, bs, 0x4a, i, node);
		ASSERT_EQ(0, kst_put1(pfd, 0x4a, i, buf, NULL));
	}
	map = map_pool(pfd, nblk * bs, PROT_READ, MAP_SHARED, 0);
	ASSERT_NE(NULL, map);
	for (i = 0; i < npg; i++) {
		char c;

		/* fault it in */
		ASSERT_EQ(0, kst_probe_read(map + i * KST_PAGE, &c, 1));
		pages[i] = map + i * KST_PAGE;
		status[i] = -1000;
	}
	ASSERT_EQ(0, kst_move_pages(npg, pages, status));
	for (i = 0; i < npg; i++)
		ASSERT_EQ(node, status[i]);
	munmap(map, nblk * bs);
	kst_free(buf, bs);
	close(pfd);
}

/* TEST() of the 6.1 harness trips -Wunused-parameter: use a fixture. */
FIXTURE(numa) {
	int ctl;
};

FIXTURE_SETUP(numa)
{
	kst_setup(_metadata);

	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
}

FIXTURE_TEARDOWN(numa)
{
	close(self->ctl);
}

TEST_F(numa, placement)
{
	if (access("/sys/devices/system/node/node1", F_OK))
		SKIP(return, "one NUMA node (boot the VM with --numa)");
	numa_check_node(_metadata, self->ctl, 1);
	numa_check_node(_metadata, self->ctl, 0);
}

/* GET of a node-1 pool's block is right too. */
TEST_F(numa, node1_get)
{
	const __u64 bs = 8 * KST_KIB;
	struct kvtier_pool_create c;
	char name[KVTIER_NAME_MAX];
	char *buf;
	int pfd;

	if (access("/sys/devices/system/node/node1", F_OK))
		SKIP(return, "one NUMA node (boot the VM with --numa)");
	kst_name(name, "numa");
	kst_create_init(&c, name, bs, 4, 4);
	c.numa_node = 1;
	pfd = kst_create(self->ctl, &c);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
	buf = kst_alloc(bs);
	ASSERT_NE(NULL, buf);
	kst_fill(buf, bs, 0x4b, 0, 1);
	ASSERT_EQ(0, kst_put1(pfd, 0x4b, 0, buf, NULL));
	memset(buf, 0, bs);
	ASSERT_EQ(0, kst_get1(pfd, 0x4b, 0, buf, NULL));
	ASSERT_EQ(-1, kst_check_gen(buf, bs, 0x4b, 0, 1));
	close(pfd);
}

TEST_HARNESS_MAIN
