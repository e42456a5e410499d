/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the kvtier selftests.
 *
 * Everything here talks to the module with raw ioctls on the uapi header
 * (no libkvtier), so the tests exercise the ABI itself. Helpers return 0 or
 * a file descriptor on success and -errno on failure; the tests assert on
 * those values, the helpers never assert.
 *
 * The helpers are named kst_ (macros KST_): the module's own functions are
 * kvt_ and libkvtier's kvtier_, and a name defined in two of kmod/, lib/
 * and selftests/ fails tools/names.sh.
 */
#ifndef KVTIER_TEST_H
#define KVTIER_TEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/kvtier.h>

/*
 * The harness defines functions and data that are not static, and the hooks
 * below run at start-up: once in a binary. A test built of several units
 * (fuzz) defines KST_NO_HARNESS in all but the one holding its TEST_F()s,
 * which keeps the helpers up to "running the tests" only.
 */
#ifndef KST_NO_HARNESS
/* The 6.1 harness has an unused parameter; -Wextra would stop the build. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#pragma GCC diagnostic pop
#endif

#define KST_DEV		"/dev/" KVTIER_DEVICE_NAME
#define KST_PARAM_DIR	"/sys/module/kvtier/parameters"
#define KST_SYSFS_DIR	"/sys/kernel/kvtier"

#define KST_PAGE	4096ULL
#define KST_KIB		1024ULL
#define KST_MIB		(1024ULL * 1024ULL)

/*
 * Feature bits: the v1 set every kernel with this ABI supports, and every
 * bit the uapi header in use defines (it grows; tests of an "unknown" bit
 * use one outside KST_F_KNOWN).
 */
#define KST_F_V1	(KVTIER_F_POOLS | KVTIER_F_MMAP | KVTIER_F_NUMA | \
			 KVTIER_F_REPLACE)
#if defined(KVTIER_F_HINT_PROB)
#define KST_F_KNOWN	(KST_F_V1 | KVTIER_F_NVME | KVTIER_F_PREFETCH | \
			 KVTIER_F_URING | KVTIER_F_HBM | KVTIER_F_SG | \
			 KVTIER_F_LOOKUP_PIN | KVTIER_F_RESERVE | KVTIER_F_META | \
			 KVTIER_F_PARTS | KVTIER_F_EVENTS | KVTIER_F_COMPRESS | \
			 KVTIER_F_DIRECT | KVTIER_F_WEIGHTS | KVTIER_F_HINT_PROB)
#elif defined(KVTIER_F_WEIGHTS)
#define KST_F_KNOWN	(KST_F_V1 | KVTIER_F_NVME | KVTIER_F_PREFETCH | \
			 KVTIER_F_URING | KVTIER_F_HBM | KVTIER_F_SG | \
			 KVTIER_F_LOOKUP_PIN | KVTIER_F_RESERVE | KVTIER_F_META | \
			 KVTIER_F_PARTS | KVTIER_F_EVENTS | KVTIER_F_COMPRESS | \
			 KVTIER_F_DIRECT | KVTIER_F_WEIGHTS)
#elif defined(KVTIER_F_DIRECT)
#define KST_F_KNOWN	(KST_F_V1 | KVTIER_F_NVME | KVTIER_F_PREFETCH | \
			 KVTIER_F_URING | KVTIER_F_HBM | KVTIER_F_SG | \
			 KVTIER_F_LOOKUP_PIN | KVTIER_F_RESERVE | KVTIER_F_META | \
			 KVTIER_F_PARTS | KVTIER_F_EVENTS | KVTIER_F_COMPRESS | \
			 KVTIER_F_DIRECT)
#elif defined(KVTIER_F_COMPRESS)
#define KST_F_KNOWN	(KST_F_V1 | KVTIER_F_NVME | KVTIER_F_PREFETCH | \
			 KVTIER_F_URING | KVTIER_F_HBM | KVTIER_F_SG | \
			 KVTIER_F_LOOKUP_PIN | KVTIER_F_RESERVE | KVTIER_F_META | \
			 KVTIER_F_PARTS | KVTIER_F_EVENTS | KVTIER_F_COMPRESS)
#elif defined(KVTIER_F_EVENTS)
#define KST_F_KNOWN	(KST_F_V1 | KVTIER_F_NVME | KVTIER_F_PREFETCH | \
			 KVTIER_F_URING | KVTIER_F_HBM | KVTIER_F_SG | \
			 KVTIER_F_LOOKUP_PIN | KVTIER_F_RESERVE | KVTIER_F_META | \
			 KVTIER_F_PARTS | KVTIER_F_EVENTS)
#elif defined(KVTIER_F_PARTS)
#define KST_F_KNOWN	(KST_F_V1 | KVTIER_F_NVME | KVTIER_F_PREFETCH | \
			 KVTIER_F_URING | KVTIER_F_HBM | KVTIER_F_SG | \
			 KVTIER_F_LOOKUP_PIN | KVTIER_F_RESERVE | KVTIER_F_META | \
			 KVTIER_F_PARTS)
#elif defined(KVTIER_F_META)
#define KST_F_KNOWN	(KST_F_V1 | KVTIER_F_NVME | KVTIER_F_PREFETCH | \
			 KVTIER_F_URING | KVTIER_F_HBM | KVTIER_F_SG | \
			 KVTIER_F_LOOKUP_PIN | KVTIER_F_RESERVE | KVTIER_F_META)
#elif defined(KVTIER_F_RESERVE)
#define KST_F_KNOWN	(KST_F_V1 | KVTIER_F_NVME | KVTIER_F_PREFETCH | \
			 KVTIER_F_URING | KVTIER_F_HBM | KVTIER_F_SG | \
			 KVTIER_F_LOOKUP_PIN | KVTIER_F_RESERVE)
#elif defined(KVTIER_F_LOOKUP_PIN)
#define KST_F_KNOWN	(KST_F_V1 | KVTIER_F_NVME | KVTIER_F_PREFETCH | \
			 KVTIER_F_URING | KVTIER_F_HBM | KVTIER_F_SG | \
			 KVTIER_F_LOOKUP_PIN)
#elif defined(KVTIER_F_SG)
#define KST_F_KNOWN	(KST_F_V1 | KVTIER_F_NVME | KVTIER_F_PREFETCH | \
			 KVTIER_F_URING | KVTIER_F_HBM | KVTIER_F_SG)
#elif defined(KVTIER_F_HBM)
#define KST_F_KNOWN	(KST_F_V1 | KVTIER_F_NVME | KVTIER_F_PREFETCH | \
			 KVTIER_F_URING | KVTIER_F_HBM)
#elif defined(KVTIER_F_PREFETCH)
#define KST_F_KNOWN	(KST_F_V1 | KVTIER_F_NVME | KVTIER_F_PREFETCH | \
			 KVTIER_F_URING)
#elif defined(KVTIER_F_NVME)
#define KST_F_KNOWN	(KST_F_V1 | KVTIER_F_NVME)
#else
#define KST_F_KNOWN	KST_F_V1
#endif

/* Flags each command knows, as far as this header says. */
#define KST_CREATE_FLAGS	(KVTIER_POOL_CREATE_FLAGS | KVTIER_POOL_OPEN_FLAGS)
#if defined(KVTIER_LOOKUP_PIN)
#define KST_LOOKUP_FLAGS	(KVTIER_LOOKUP_TOUCH | KVTIER_LOOKUP_LOAD | \
				 KVTIER_LOOKUP_PIN)
#elif defined(KVTIER_LOOKUP_LOAD)
#define KST_LOOKUP_FLAGS	(KVTIER_LOOKUP_TOUCH | KVTIER_LOOKUP_LOAD)
#else
#define KST_LOOKUP_FLAGS	KVTIER_LOOKUP_TOUCH
#endif

#if defined(KVTIER_GET_DIRECT)
#define KST_GET_FLAGS		(KVTIER_GET_PART | KVTIER_GET_DIRECT)
#else
#define KST_GET_FLAGS		KVTIER_GET_PART
#endif

/* The lowest bit not in @mask (a flag no kernel of this header knows). */
static inline __u64 kst_unknown_bit(__u64 mask)
{
	return ~mask & (mask + 1);
}

/* 0 or -errno of an ioctl. */
static inline int kst_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

/* Command @cmd with its argument size field set to @size bytes. */
static inline unsigned long kst_resize(unsigned long cmd, size_t size)
{
	return _IOC(_IOC_DIR(cmd), _IOC_TYPE(cmd), _IOC_NR(cmd), size);
}

/* A control fd without the handshake, or -errno. */
static inline int kst_ctl_open_raw(void)
{
	int fd = open(KST_DEV, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static inline int kst_api(int ctl, __u64 features, struct kvtier_api *out)
{
	struct kvtier_api api;
	int ret;

	memset(&api, 0, sizeof(api));
	api.api = KVTIER_API_VERSION;
	api.features = features;
	ret = kst_ioctl(ctl, KVTIER_IOC_API, &api);
	if (out)
		*out = api;
	return ret;
}

/* A control fd that has done the handshake for @features, or -errno. */
static inline int kst_ctl_open_with(__u64 features)
{
	int fd = kst_ctl_open_raw();
	int ret;

	if (fd < 0)
		return fd;
	ret = kst_api(fd, features, NULL);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

/* A control fd that has done the handshake, or -errno. */
static inline int kst_ctl_open(void)
{
	return kst_ctl_open_with(KST_F_KNOWN);
}

/* Whether this kernel supports feature @bit (a handshake of its own). */
static inline bool kst_supported(__u64 bit)
{
	struct kvtier_api a;
	int ctl = kst_ctl_open_raw();
	int ret;

	if (ctl < 0)
		return false;
	ret = kst_api(ctl, KST_F_KNOWN, &a);
	close(ctl);
	return !ret && (a.supported & bit);
}

/*
 * A pool name unique to this process: "kst.<tag>.<pid>.<n>". Pools outlive
 * a test process that dies before its teardown, so names never repeat.
 */
static inline void kst_name(char name[KVTIER_NAME_MAX], const char *tag)
{
	static unsigned int seq;

	snprintf(name, KVTIER_NAME_MAX, "kst.%s.%d.%u", tag, (int)getpid(),
		 seq++);
}

/* Copy a pool name into a zeroed name field, truncated to fit. */
static inline void kst_set_name(__u8 dst[KVTIER_NAME_MAX], const char *name)
{
	size_t len = strnlen(name, KVTIER_NAME_MAX - 1);

	memcpy(dst, name, len);
	dst[len] = '\0';
}

/* A valid create request: mode 0600, node -1, no flags. */
static inline void kst_create_init(struct kvtier_pool_create *c,
				   const char *name, __u64 block_size,
				   __u32 capacity, __u32 dram_blocks)
{
	memset(c, 0, sizeof(*c));
	kst_set_name(c->name, name);
	c->block_size = block_size;
	c->capacity = capacity;
	c->dram_blocks = dram_blocks;
	c->mode = 0600;
	c->numa_node = -1;
	c->fd = -1;
}

/* Issue POOL_CREATE; the pool fd or -errno. */
static inline int kst_create(int ctl, struct kvtier_pool_create *c)
{
	int ret = kst_ioctl(ctl, KVTIER_IOC_POOL_CREATE, c);

	return ret ? ret : c->fd;
}

static inline int kst_pool_create(int ctl, const char *name, __u64 block_size,
				  __u32 capacity, __u32 dram_blocks)
{
	struct kvtier_pool_create c;

	kst_create_init(&c, name, block_size, capacity, dram_blocks);
	return kst_create(ctl, &c);
}

static inline int kst_pool_open(int ctl, const char *name, __u32 flags)
{
	struct kvtier_pool_open o;
	int ret;

	memset(&o, 0, sizeof(o));
	kst_set_name(o.name, name);
	o.flags = flags;
	o.fd = -1;
	ret = kst_ioctl(ctl, KVTIER_IOC_POOL_OPEN, &o);
	return ret ? ret : o.fd;
}

static inline int kst_pool_destroy(int ctl, const char *name)
{
	struct kvtier_pool_destroy d;

	memset(&d, 0, sizeof(d));
	kst_set_name(d.name, name);
	return kst_ioctl(ctl, KVTIER_IOC_POOL_DESTROY, &d);
}

static inline void kst_blk(struct kvtier_block *b, __u64 k0, __u64 k1,
			   const void *buf)
{
	memset(b, 0, sizeof(*b));
	b->key[0] = k0;
	b->key[1] = k1;
	b->buf = (__u64)(uintptr_t)buf;
	/* Out fields get values the kernel must overwrite. */
	b->addr = 0x5a5a5a5a5a5a5a5aULL;
	b->status = 0x7eadbeef;
	b->tier = 0xa5a5a5a5;
}

/*
 * A batched command with a metadata array (struct kvtier_batch.meta, NULL:
 * none); 0 or -errno of the whole batch, @done if not NULL.
 */
static inline int kst_batch_meta(int pfd, unsigned long cmd,
				 struct kvtier_block *blocks, __u32 count,
				 __u32 flags, void *meta, __u32 *done)
{
	struct kvtier_batch b;
	int ret;

	memset(&b, 0, sizeof(b));
	b.blocks = (__u64)(uintptr_t)blocks;
	b.count = count;
	b.flags = flags;
	b.meta = (__u64)(uintptr_t)meta;
	b.done = 0xffffffffU;
	ret = kst_ioctl(pfd, cmd, &b);
	if (done)
		*done = b.done;
	return ret;
}

/* A batched command; 0 or -errno of the whole batch, @done if not NULL. */
static inline int kst_batch(int pfd, unsigned long cmd,
			    struct kvtier_block *blocks, __u32 count,
			    __u32 flags, __u32 *done)
{
	return kst_batch_meta(pfd, cmd, blocks, count, flags, NULL, done);
}

/*
 * One-entry batch on key (k0, k1). Returns the batch result; on success
 * the entry status is the return value and @out (if not NULL) gets the
 * entry. So callers can write ASSERT_EQ(-ENOENT, kst_one(...)).
 */
static inline int kst_one(int pfd, unsigned long cmd, __u64 k0, __u64 k1,
			  const void *buf, __u32 flags, struct kvtier_block *out)
{
	struct kvtier_block b;
	__u32 done;
	int ret;

	kst_blk(&b, k0, k1, buf);
	ret = kst_batch(pfd, cmd, &b, 1, flags, &done);
	if (out)
		*out = b;
	if (ret)
		return ret;
	/* done must agree with the single status (LOOKUP: prefix of 1). */
	if ((b.status == 0) != (done == 1))
		return -EPROTO;
	return b.status;
}

#define kst_put1(fd, k0, k1, buf, out) \
	kst_one(fd, KVTIER_IOC_PUT, k0, k1, buf, 0, out)
#define kst_replace1(fd, k0, k1, buf, out) \
	kst_one(fd, KVTIER_IOC_PUT, k0, k1, buf, KVTIER_PUT_REPLACE, out)
#define kst_get1(fd, k0, k1, buf, out) \
	kst_one(fd, KVTIER_IOC_GET, k0, k1, buf, 0, out)
#define kst_lookup1(fd, k0, k1, out) \
	kst_one(fd, KVTIER_IOC_LOOKUP, k0, k1, NULL, 0, out)
#define kst_drop1(fd, k0, k1) \
	kst_one(fd, KVTIER_IOC_DROP, k0, k1, NULL, 0, NULL)
#define kst_pin1(fd, k0, k1) \
	kst_one(fd, KVTIER_IOC_PIN, k0, k1, NULL, 0, NULL)
#define kst_unpin1(fd, k0, k1) \
	kst_one(fd, KVTIER_IOC_UNPIN, k0, k1, NULL, 0, NULL)

static inline int kst_stat(int pfd, struct kvtier_pool_stat *st)
{
	memset(st, 0, sizeof(*st));
	return kst_ioctl(pfd, KVTIER_IOC_STAT, st);
}

/* Blocks resident in DRAM, or -errno. */
static inline long long kst_resident(int pfd)
{
	struct kvtier_pool_stat st;
	int ret = kst_stat(pfd, &st);

	return ret ? ret : (long long)st.resident[KVTIER_TIER_DRAM];
}

/* Pinned blocks, or -errno. */
static inline long long kst_pinned(int pfd)
{
	struct kvtier_pool_stat st;
	int ret = kst_stat(pfd, &st);

	return ret ? ret : (long long)st.pinned;
}

/* ---- block contents ---------------------------------------------------- */

static inline __u64 kst_mix(__u64 x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/*
 * Fill a block for key (k0, k1), generation @gen: word 0 is @gen, words 1
 * and 2 the key, the rest a hash of all three and the word index. A block
 * can then be checked without knowing which writer/generation made it,
 * and a block of another key or a mix of two writes never passes.
 */
static inline void kst_fill(void *buf, size_t size, __u64 k0, __u64 k1,
			    __u64 gen)
{
	__u64 *w = buf;
	size_t i, n = size / sizeof(*w);
	__u64 seed = kst_mix(k0 ^ kst_mix(k1 ^ kst_mix(gen)));

	w[0] = gen;
	w[1] = k0;
	w[2] = k1;
	for (i = 3; i < n; i++)
		w[i] = seed ^ (i * 0x9e3779b97f4a7c15ULL);
}

/*
 * Check a block filled by kst_fill() for key (k0, k1); the generation is
 * read from the block and stored in @gen (if not NULL). Returns -1 if the
 * whole block is right, else the index of the first bad 64-bit word.
 */
static inline long kst_check(const void *buf, size_t size, __u64 k0, __u64 k1,
			     __u64 *gen)
{
	const __u64 *w = buf;
	size_t i, n = size / sizeof(*w);
	__u64 seed;

	if (w[1] != k0)
		return 1;
	if (w[2] != k1)
		return 2;
	seed = kst_mix(k0 ^ kst_mix(k1 ^ kst_mix(w[0])));
	for (i = 3; i < n; i++)
		if (w[i] != (seed ^ (i * 0x9e3779b97f4a7c15ULL)))
			return (long)i;
	if (gen)
		*gen = w[0];
	return -1;
}

/* Check a block made with an expected generation. */
static inline long kst_check_gen(const void *buf, size_t size, __u64 k0,
				 __u64 k1, __u64 want_gen)
{
	__u64 gen = ~want_gen;
	long bad = kst_check(buf, size, k0, k1, &gen);

	if (bad >= 0)
		return bad;
	return gen == want_gen ? -1 : 0;
}

/* ---- memory ------------------------------------------------------------ */

/* Page-aligned anonymous memory, or NULL. */
static inline void *kst_alloc(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static inline void kst_free(void *p, size_t size)
{
	if (p)
		munmap(p, size);
}

/* An address with nothing mapped at it (for -EFAULT tests). */
static inline void *kst_unmapped_addr(void)
{
	void *p = mmap(NULL, 4 * KST_PAGE, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return (void *)(uintptr_t)8;	/* first page is never mapped */
	munmap(p, 4 * KST_PAGE);
	return (char *)p + KST_PAGE;
}

/*
 * A read-only page holding @len bytes of @src, or NULL: an argument the
 * kernel can read but not write its answer to (-EFAULT on the way out).
 */
static inline void *kst_ro_page_with(const void *src, size_t len)
{
	char *p = mmap(NULL, KST_PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memcpy(p, src, len);
	mprotect(p, KST_PAGE, PROT_READ);
	return p;
}

/* ---- SIGBUS probing of a mapping --------------------------------------- */

/* Per thread: SIGBUS from a fault goes to the thread that faulted. */
static __thread sigjmp_buf kst_probe_env;
static __thread volatile sig_atomic_t kst_probe_armed;

static inline void kst_probe_handler(int sig)
{
	if (kst_probe_armed) {
		kst_probe_armed = 0;
		siglongjmp(kst_probe_env, sig);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Catch SIGBUS for the probes below; 0 or -errno. */
static inline int kst_probe_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = kst_probe_handler;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL))
		return -errno;
	return 0;
}

/*
 * Copy @len bytes from @src to @dst, one of them a mapping: 0 if it went,
 * else the signal that stopped it (SIGBUS expected). SIGSEGV is not
 * caught: a test that gets one dies, as it should.
 */
static inline int kst_probe_copy(void *dst, const void *src, size_t len)
{
	int sig, ret = kst_probe_install();

	if (ret)
		return ret;
	sig = sigsetjmp(kst_probe_env, 1);
	if (sig)
		return sig;
	kst_probe_armed = 1;
	memcpy(dst, src, len);
	kst_probe_armed = 0;
	return 0;
}

/* Copy from a mapping into @out: 0, or the signal (SIGBUS). */
static inline int kst_probe_read(const void *map, void *out, size_t len)
{
	return kst_probe_copy(out, map, len);
}

/* Copy into a mapping from @in: 0, or the signal (SIGBUS). */
static inline int kst_probe_write(void *map, const void *in, size_t len)
{
	return kst_probe_copy(map, in, len);
}

/* ---- sysfs ------------------------------------------------------------- */

/* Read a small file into @buf (NUL-terminated); bytes read or -errno. */
static inline int kst_read_file(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	return (int)n;
}

/* Write @s to the file @path; 0 or -errno. */
static inline int kst_write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -errno;
}

/* ---- memory cgroups ------------------------------------------------------ */

#define KST_CG_ROOT	"/sys/fs/cgroup"

/*
 * A child cgroup of this process, "kvt-@tag-PID", with the memory
 * controller, memory.max @max and no swap, its path into @dir: 0, or
 * -ENODEV without a cgroup2 memory controller, or -errno.
 */
static inline int kst_cg_make(char *dir, size_t len, const char *tag,
			      const char *max)
{
	char buf[512];

	if (access(KST_CG_ROOT "/cgroup.controllers", F_OK) &&
	    mount("none", KST_CG_ROOT, "cgroup2", 0, NULL))
		return -ENODEV;
	if (kst_read_file(KST_CG_ROOT "/cgroup.controllers", buf,
			  sizeof(buf)) < 0 || !strstr(buf, "memory"))
		return -ENODEV;
	kst_write_str(KST_CG_ROOT "/cgroup.subtree_control", "+memory");
	snprintf(dir, len, KST_CG_ROOT "/kvt-%s-%d", tag, (int)getpid());
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	snprintf(buf, sizeof(buf), "%s/memory.max", dir);
	if (kst_write_str(buf, max))
		return -ENODEV;
	snprintf(buf, sizeof(buf), "%s/memory.swap.max", dir);
	kst_write_str(buf, "0");
	return 0;
}

/* Move the calling process into cgroup @dir; 0 or -errno. */
static inline int kst_cg_enter(const char *dir)
{
	char procs[300], pidstr[32];

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	snprintf(pidstr, sizeof(pidstr), "%d", (int)getpid());
	return kst_write_str(procs, pidstr);
}

/* The most memory cgroup @dir was ever charged, in bytes, or -errno. */
static inline long long kst_cg_peak(const char *dir)
{
	char path[300], buf[64];
	int ret;

	snprintf(path, sizeof(path), "%s/memory.peak", dir);
	ret = kst_read_file(path, buf, sizeof(buf));
	return ret < 0 ? ret : strtoll(buf, NULL, 10);
}

/* Write a number to a sysfs or debugfs file; 0 or -errno. */
static inline int kst_write_num(const char *path, long long val)
{
	char buf[32];
	int fd, n, ret = 0;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%lld", val);
	if (write(fd, buf, n) != n)
		ret = -errno;
	close(fd);
	return ret;
}

/* A module parameter as a number; 0 or -errno. */
static inline int kst_param(const char *name, long long *val)
{
	char path[256], buf[64], *end;
	int ret;

	snprintf(path, sizeof(path), KST_PARAM_DIR "/%s", name);
	ret = kst_read_file(path, buf, sizeof(buf));
	if (ret < 0)
		return ret;
	errno = 0;
	*val = strtoll(buf, &end, 0);
	if (errno || end == buf)
		return -EINVAL;
	return 0;
}

/*
 * Parse up to @max whitespace-separated numbers of a one-line file; the
 * count parsed or -errno. Fails with -EINVAL on anything not a number
 * or on more than one line. Columns whose bit is set in @octal_mask are
 * read in base 8, the others in base 10.
 */
static inline int kst_read_cols(const char *path, long long *vals, int max,
				unsigned long octal_mask)
{
	char buf[1024], *p, *end;
	int n = 0, ret;

	ret = kst_read_file(path, buf, sizeof(buf));
	if (ret < 0)
		return ret;
	p = buf;
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\n' || *p == '\0')
			break;
		if (n == max)
			return -E2BIG;
		errno = 0;
		vals[n] = strtoll(p, &end, (octal_mask >> n) & 1 ? 8 : 10);
		if (errno || end == p)
			return -EINVAL;
		p = end;
		n++;
	}
	/* Exactly one line. */
	if (*p == '\n' && p[1] != '\0')
		return -EINVAL;
	return n;
}

/* Seconds on the monotonic clock. */
static inline double kst_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- processes --------------------------------------------------------- */

/* Print a small file to stderr, as "# PATH:" and its lines. */
static inline void kst_dump_file(const char *path)
{
	char buf[4096];
	int n = kst_read_file(path, buf, sizeof(buf));

	if (n > 0)
		fprintf(stderr, "# %s:\n%s", path, buf);
}

/*
 * A task's state letter from /proc/PID/task/TID/stat, printed with its
 * user and system times (ticks); '?' when it cannot be read.
 */
static inline char kst_dump_state(const char *path)
{
	char buf[1024], *p;
	unsigned long ut = 0, st = 0;
	char state = '?';

	if (kst_read_file(path, buf, sizeof(buf)) <= 0)
		return state;
	p = strrchr(buf, ')');		/* the name may hold anything */
	if (p && sscanf(p + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			&state, &ut, &st) >= 1)
		fprintf(stderr, "# %s: state %c, utime %lu, stime %lu\n", path,
			state, ut, st);
	return state;
}

/*
 * The pids of @pid's children, space-separated, from /proc/PID/stat of
 * every process: for kernels without CONFIG_PROC_CHILDREN (no
 * /proc/PID/task/TID/children). Returns the length written.
 */
static inline int kst_children_scan(pid_t pid, char *kids, size_t size)
{
	char path[300], buf[512], *p;
	struct dirent *de;
	size_t len = 0;
	int ppid;
	DIR *d = opendir("/proc");

	if (!d)
		return 0;
	kids[0] = '\0';
	while ((de = readdir(d)) && len + 16 < size) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		if (kst_read_file(path, buf, sizeof(buf)) <= 0)
			continue;
		p = strrchr(buf, ')');
		if (p && sscanf(p + 1, " %*c %d", &ppid) == 1 && ppid == pid)
			len += snprintf(kids + len, size - len, "%s ",
					de->d_name);
	}
	closedir(d);
	return (int)len;
}

/*
 * Kernel stacks (and syscalls) of every thread of @pid and of its
 * children, two levels down from @depth 0: what a hung call waits for.
 * A task on a CPU has no stack to read there: for it the kernel is asked
 * for every CPU's backtrace (sysrq l), and the log's tail is printed.
 */
static inline void kst_dump_stacks(pid_t pid, int depth)
{
	char path[320], kids[1024], *k, *save;
	bool running = false, listed = false;
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat",
			 (int)pid, de->d_name);
		/* this thread, reading, is on a CPU itself */
		if (kst_dump_state(path) == 'R' && atoi(de->d_name) != gettid())
			running = true;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stack",
			 (int)pid, de->d_name);
		kst_dump_file(path);
		snprintf(path, sizeof(path), "/proc/%d/task/%s/syscall",
			 (int)pid, de->d_name);
		kst_dump_file(path);
		snprintf(path, sizeof(path), "/proc/%d/task/%s/children",
			 (int)pid, de->d_name);
		listed |= access(path, R_OK) == 0;
		if (depth < 2 && kst_read_file(path, kids, sizeof(kids)) > 0)
			for (k = strtok_r(kids, " \n", &save); k;
			     k = strtok_r(NULL, " \n", &save))
				kst_dump_stacks(atoi(k), depth + 1);
	}
	closedir(d);
	/* No children files (CONFIG_PROC_CHILDREN off): look them up. */
	if (!listed && depth < 2 && kst_children_scan(pid, kids, sizeof(kids)))
		for (k = strtok_r(kids, " \n", &save); k;
		     k = strtok_r(NULL, " \n", &save))
			kst_dump_stacks(atoi(k), depth + 1);
	if (running) {
		int fd = open("/proc/sysrq-trigger", O_WRONLY);

		if (fd >= 0 && write(fd, "l", 1) == 1) {
			usleep(500000);
			fprintf(stderr, "# a task runs: the CPUs' backtraces\n");
			fflush(stderr);
			if (system("dmesg | grep -A40 'sysrq: Show backtrace' | tail -n 120 >&2"))
				fprintf(stderr, "# (no dmesg)\n");
		}
		if (fd >= 0)
			close(fd);
	}
}

/*
 * fork() a child that dies with its parent (so a failed ASSERT in the test
 * never leaves it behind). Children report with _exit(code), never with
 * ASSERT_*.
 */
static inline pid_t kst_fork(void)
{
	pid_t parent = getpid();
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(99);
	}
	return pid;
}

/* Wait for @pid; its exit code, 128 + signal, or -errno. */
static inline int kst_wait(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -ECHILD;
}

/*
 * Drop all privileges and become @uid/@gid (no supplementary groups);
 * 0 or -errno.
 */
static inline int kst_become(uid_t uid, gid_t gid)
{
	if (setgroups(0, NULL))
		return -errno;
	if (setresgid(gid, gid, gid))
		return -errno;
	if (setresuid(uid, uid, uid))
		return -errno;
	return 0;
}

#ifndef KST_NO_HARNESS

/* ---- running the tests ------------------------------------------------ */

/*
 * Every test file ends with the stock TEST_HARNESS_MAIN. What our tests add
 * to it goes through the harness's own hooks, not a main() of ours:
 *
 *  - Every FIXTURE_SETUP() starts with kst_setup(_metadata) (and the NVMe
 *    ones with nvt_setup_check(), which calls it). Without the module
 *    (/dev/kvtier missing) each case is skipped there: the binary prints
 *    "ok N # SKIP /dev/kvtier missing: kvtier not loaded" for every case,
 *    "# Totals: pass:0 fail:0 xfail:0 xpass:0 skip:N error:0", and exits 0
 *    (tools/vm/run-selftests.sh counts N skips from the totals line).
 *
 *  - KVTIER_TEST=WORD[,WORD...] runs only the cases whose "fixture.case"
 *    name contains one of the words; the others are skipped by the same
 *    setup-time SKIP ("not selected by KVTIER_TEST"), so a partial run still
 *    lists every case. The harness of kernel 6.1, which we build against,
 *    takes no command line; later ones have -t/-T/-f/-F/-v/-V/-r/-R for this.
 *
 *  - KVTIER_TEST_TIMEOUT_MIN=SECS raises every case's timeout (the
 *    harness's per-case TEST_F_TIMEOUT value, which the parent's alarm()
 *    uses) to at least SECS: for a slow kernel or a longer fuzz burst. The
 *    harness reads that value in its parent process, after registering the
 *    cases; the one hook there is fork(), so a pthread_atfork() prepare
 *    handler, registered by a constructor, raises the values once, before
 *    the first case is forked.
 */

/*
 * SKIP() from a FIXTURE_SETUP(). The 6.1 harness runs the test body after a
 * setup that called SKIP() (later ones stop there). This leaves the setup
 * the way a failed ASSERT_*() does, through the harness's jump buffer, but
 * with the case marked skipped and not failed: neither the test body nor
 * the teardown runs, and the case is reported "ok N # SKIP <reason>". The
 * setup must not have made anything the teardown would undo.
 */
#define KST_SETUP_SKIP(fmt, ...) \
	SKIP(longjmp(_metadata->env, 1), fmt, ##__VA_ARGS__)

/* Whether @name contains one of the comma-separated words of @want. */
static inline bool kst_test_wanted(const char *want, const char *name)
{
	char word[128];

	while (*want) {
		size_t n = strcspn(want, ",");

		if (n && n < sizeof(word)) {
			memcpy(word, want, n);
			word[n] = '\0';
			if (strstr(name, word))
				return true;
		}
		want += n + !!want[n];
	}
	return false;
}

/*
 * A case about to run out of time says where it is: a thread of its own
 * wakes every KST_TICK_MS and, KST_WATCH_EARLY seconds before the case's
 * timeout, prints the stacks of the case's threads and children. It also
 * prints its longest sleep: a tick that took seconds means the whole
 * guest stood still (a starved vCPU, a stalled host), not the kernel.
 */
#define KST_TICK_MS	200
#define KST_WATCH_EARLY	5

static double kst_watch_gap;	/* the longest tick so far, in seconds */

static void *kst_watch(void *arg)
{
	struct __test_metadata *_metadata = arg;
	double start = kst_mono(), last = start, now;
	double limit = _metadata->timeout - KST_WATCH_EARLY;

	do {
		usleep(KST_TICK_MS * 1000);
		now = kst_mono();
		if (now - last > kst_watch_gap)
			kst_watch_gap = now - last;
		last = now;
	} while (now - start < limit);
	fprintf(stderr, "# %s: %.0f s of its %d s gone; the longest %d-ms tick took %.1f s; stacks:\n",
		_metadata->name, now - start, _metadata->timeout, KST_TICK_MS,
		kst_watch_gap);
	kst_dump_stacks(getpid(), 0);
	fflush(stderr);
	return NULL;
}

/*
 * Start the watcher of the case, with every signal blocked: a signal sent
 * to the process must reach the threads of the test.
 */
static inline void kst_watch_start(struct __test_metadata *_metadata)
{
	sigset_t all, old;
	pthread_t t;

	if (_metadata->timeout <= KST_WATCH_EARLY * 2)
		return;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (!pthread_create(&t, NULL, kst_watch, _metadata))
		pthread_detach(t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/*
 * The first thing of every FIXTURE_SETUP(): skip the case when the module
 * is not loaded or KVTIER_TEST leaves it out (see above); else start the
 * case's watcher.
 */
static inline void kst_setup(struct __test_metadata *_metadata)
{
	const char *want = getenv("KVTIER_TEST");
	char full[512];

	if (access(KST_DEV, F_OK))
		KST_SETUP_SKIP(KST_DEV " missing: kvtier not loaded");
	snprintf(full, sizeof(full), "%s.%s", _metadata->fixture->name,
		 _metadata->name);
	if (want && *want && !kst_test_wanted(want, full))
		KST_SETUP_SKIP("not selected by KVTIER_TEST=%s", want);
	kst_watch_start(_metadata);
}

/* KVTIER_TEST_TIMEOUT_MIN: raise the cases' timeouts, once (see above). */
static void kst_timeout_min(void)
{
	static bool done;
	const char *tmin = getenv("KVTIER_TEST_TIMEOUT_MIN");
	int min = tmin ? atoi(tmin) : 0;
	struct __fixture_metadata *f;
	struct __test_metadata *t;

	if (done)
		return;
	done = true;
	for (f = __fixture_list; f && min > 0; f = f->next)
		for (t = f->tests; t; t = t->next)
			if (t->timeout < min)
				t->timeout = min;
}

static void __attribute__((constructor)) kst_harness_hooks(void)
{
	pthread_atfork(kst_timeout_min, NULL, NULL);
}

#endif /* !KST_NO_HARNESS */

#endif /* KVTIER_TEST_H */
