// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier ioctl fuzzer: random command sequences on control fds and pool
 * fds, from several threads and from forked children that may be killed
 * with SIGKILL in the middle of a command.
 *
 * Every call takes a valid-looking argument that is then mutated or not:
 * any field (reserved and padding ones included), the size in the ioctl
 * number, counts, flags, and the user pointers (NULL, unaligned, kernel,
 * read-only, straddling an unmapped page). Pool fds are closed, dup'ed,
 * inherited, mmapped, unmapped and their mappings touched; an NVMe drive,
 * when the VM has one, is attached and detached now and then.
 *
 * Oracles, so that the fuzzer can fail:
 *  - every return is 0 or an errno of the documented set of the command
 *    (Documentation/userspace-api.rst), and so is every entry status;
 *  - batch outputs agree with themselves (done, addr, tier per status),
 *    stat outputs have their reserved words zero;
 *  - every block GET returns, in any pool, is whole and of its key;
 *  - an "oracle" pool, driven only by thread 0 with valid commands
 *    interleaved with the random ones, is checked against a shadow model:
 *    GET returns exactly the bytes last PUT for a key, or a miss (evicted
 *    or dropped), and a key once gone never comes back by itself;
 *  - at the end: every pool made by the run can be opened, stat'ed, shows
 *    no pin left and can be destroyed, and the module counts as many pools
 *    as before the run.
 * A kernel BUG/WARNING is caught by the runner's dmesg check.
 *
 * Environment: KVTIER_FUZZ_SEED (default: time and pid), KVTIER_FUZZ_CALLS
 * (calls of the worker threads, default 100000), KVTIER_FUZZ_THREADS
 * (default 4), KVTIER_NVME_DEV (default /dev/nvme0n1, used when it is a
 * block device; KVTIER_FUZZ_NVME=0 leaves it alone). The sequence of calls
 * of each thread follows from the seed; how threads and children interleave
 * does not, so a seed reproduces the run's mix, not its exact timing.
 */
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include <sys/syscall.h>

#include "kvtier_test.h"

#define FZ_THREADS_MAX	8
#define FZ_SLOTS	8		/* pool fds a thread holds */
#define FZ_MAPS		4		/* mappings a thread holds */
#define FZ_NAMES	10		/* pool names the run plays with */
#define FZ_NBUF		8		/* block buffers per thread */
#define FZ_BS_MAX	(64 * KST_KIB)
#define FZ_ENTS		(KVTIER_BATCH_MAX + 1)
#define FZ_ARG_PAGES	5		/* room for _IOC_SIZE up to 16383 */
#define FZ_KEYS		48		/* hot key space of the fuzzed pools */
#define FZ_FAILS	32		/* failures recorded in detail */
#define FZ_KPTR		0xffff888000000000ULL
#define FZ_BADFD	100000

/* The oracle pool: small DRAM share, so blocks come and go. */
#define OR_BS		(4 * KST_KIB)
#define OR_CAP		48
#define OR_DRAM		12
#define OR_KEYS		32
#define OR_K1		0x0c0ffee0ULL

/* ---- run-wide state, shared with forked children ----------------------- */

struct fz_fail {
	int thread;
	long call;
	char what[160];
};

struct fz_shared {
	atomic_int nfail;
	atomic_long calls;		/* every call, children included */
	atomic_long child_calls;
	atomic_long forks, kills;
	atomic_long attaches, detaches;
	/*
	 * Bumped before and after an attach that may bring back blocks of
	 * a store; restoring counts such attaches under way.
	 */
	atomic_long restore_epoch, restoring;
	atomic_long oracle_ops, oracle_hits;
	struct fz_fail fail[FZ_FAILS];
};

static struct fz_shared *fz;

/* Every thread, for telling their memory apart (see fz_own_blocks()). */
static struct fz_thr *fz_thr_all;
static int fz_nthr;
static unsigned long long fz_seed;
static const char *fz_dev;		/* NVMe drive, or NULL */
static char fz_names[FZ_NAMES][KVTIER_NAME_MAX];
static char fz_oracle_name[KVTIER_NAME_MAX];
/*
 * Attach and detach of this process one at a time: concurrent detaches
 * are nvme_attach's attach.detach_race, so that a failure there does not
 * hide everything else the burst would find.
 */
static pthread_mutex_t fz_nvme_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned long long fz_env(const char *name, unsigned long long def)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long x;

	if (!v || !*v)
		return def;
	errno = 0;
	x = strtoull(v, &end, 0);
	return errno || *end ? def : x;
}

static bool nonzero(const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--)
		if (*b++)
			return true;
	return false;
}

/* ---- per-thread state -------------------------------------------------- */

struct fz_slot {
	int fd;			/* -1: empty */
	bool ro;
	__u64 bs;		/* from STAT when it was opened */
	__u32 cap;
};

struct fz_map {
	char *p;		/* NULL: empty */
	size_t len;
	int slot;		/* the slot whose pool it maps, at map time */
	__u64 bs;
	__u64 off;		/* offset in the pool, bytes */
};

struct fz_key {
	bool present;		/* per the model: may be resident */
	__u64 gen, maxgen;	/* last and largest generation PUT */
	long epoch;		/* restore_epoch before the last change */
	int pins;		/* pins thread 0 holds on it */
	const char *gone;	/* what made it absent, at call gone_call */
	long gone_call;
	struct {		/* the last commands on it, for failures */
		long call, epoch, nvme;
		char op;
		int st;
	} h[8];
	unsigned int nh;
};

struct fz_thr {
	int id;
	bool child;
	__u64 rng;
	long call, ncalls;
	int ctl, ctl2, raw;	/* two handshaken control fds, one raw */
	int nullfd;
	struct fz_slot s[FZ_SLOTS];
	struct fz_map m[FZ_MAPS];
	char *bufs;		/* FZ_NBUF * FZ_BS_MAX, guard page after */
	struct kvtier_block *ents; /* FZ_ENTS entries, guard page after */
	char *ro;		/* one read-only page, guard page after */
	char *arg;		/* FZ_ARG_PAGES pages, guard page after */
	char *gap;		/* a PROT_NONE page, never readable */
	__u64 gen;
	/* thread 0: the oracle pool */
	int ofd;
	struct fz_key keys[OR_KEYS];
};

static __u64 rnd(struct fz_thr *t)
{
	/* splitmix64 */
	__u64 z = (t->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static __u32 rn(struct fz_thr *t, __u32 n)
{
	return n ? (__u32)(rnd(t) % n) : 0;
}

/* true with probability pct percent */
static bool pct(struct fz_thr *t, unsigned int p)
{
	return rn(t, 1000) < p * 10;
}

/* true with probability p per mille */
static bool pml(struct fz_thr *t, unsigned int p)
{
	return rn(t, 1000) < p;
}

static __u64 interesting(struct fz_thr *t)
{
	static const __u64 v[] = {
		0, 1, 2, 7, 8, 63, 64, 255, 4095, 4096, 4097, 65536,
		KVTIER_BATCH_MAX, KVTIER_BATCH_MAX + 1, KVTIER_CAPACITY_MAX,
		KVTIER_CAPACITY_MAX + 1, KVTIER_BLOCK_SIZE_MAX,
		KVTIER_BLOCK_SIZE_MAX + 4096, 0x7fffffff, 0x80000000,
		0xffffffff, 0x100000000ULL, 0x7fffffffffffffffULL,
		0x8000000000000000ULL, ~0ULL, ~0ULL - 4095,
	};

	if (pct(t, 20))
		return rnd(t);
	return v[rn(t, sizeof(v) / sizeof(v[0]))];
}

/* ---- failures ---------------------------------------------------------- */

static void fz_failf(struct fz_thr *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fz_failf(struct fz_thr *t, const char *fmt, ...)
{
	char what[sizeof(fz->fail[0].what)];
	va_list ap;
	int n;

	/* formatted first: a child may be killed at any time */
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	n = atomic_fetch_add(&fz->nfail, 1);
	if (n >= FZ_FAILS)
		return;
	fz->fail[n].thread = t->child ? 100 + t->id : t->id;
	fz->fail[n].call = t->call;
	memcpy(fz->fail[n].what, what, sizeof(what));
}

/* ---- the documented errnos --------------------------------------------- */

static const char *cmd_name(unsigned int nr)
{
	static const char * const ctl[] = {
		"API", "POOL_CREATE", "POOL_OPEN", "POOL_DESTROY",
		"NVME_ATTACH", "NVME_DETACH", "NVME_STAT",
	};
	static const char * const pool[] = {
		"PUT", "GET", "LOOKUP", "DROP", "PIN", "UNPIN", "STAT", "SYNC",
	};

	if (nr < 7)
		return ctl[nr];
	if (nr >= 0x10 && nr < 0x18)
		return pool[nr - 0x10];
	return "?";
}

enum fz_fdkind { FD_CTL, FD_RAW, FD_POOL, FD_OTHER };

/*
 * Whether -@err may come back from command @cmd on an fd of kind @kind:
 * the rules every command follows, plus the command's own table.
 */
static bool errno_ok(enum fz_fdkind kind, unsigned long cmd, int err)
{
	unsigned int nr = _IOC_NR(cmd);
	bool real;

	/* Another driver's fd, or the VFS's own ioctls: not ours to judge. */
	if (kind == FD_OTHER || _IOC_TYPE(cmd) != KVTIER_IOC_MAGIC)
		return true;
	if (err == ENOTTY || err == EINVAL || err == EFAULT || err == E2BIG)
		return true;
	if (kind == FD_CTL || kind == FD_RAW) {
		real = nr <= 6;
		if (!real)
			return false;
		if (kind == FD_RAW && nr != 0)
			return false;		/* -EINVAL before the handshake */
		switch (nr) {
		case 0x00:
			return err == EBUSY;
		case 0x01:
			return err == EEXIST || err == EACCES || err == EMFILE ||
			       err == ENOSPC || err == ENOMEM;
		case 0x02:
			return err == ENOENT || err == EACCES || err == ENOMEM;
		case 0x03:
			return err == ENOENT || err == EPERM;
		case 0x04:
			return err == EPERM || err == EBUSY ||
			       err == EMEDIUMTYPE || err == ENOSPC ||
			       err == ENOENT || err == ENOTBLK || err == EIO ||
			       err == ENOMEM || err == ENOTDIR ||
			       err == ENAMETOOLONG;
		case 0x05:
			return err == EPERM || err == ENODEV;
		}
		return false;
	}
	switch (nr) {
	case 0x10: case 0x13:
		return err == EBADF || err == ENOMEM;
	case 0x11: case 0x12: case 0x14: case 0x15:
		return err == ENOMEM;
	case 0x17:
		return err == ENODEV || err == EBADF || err == EIO ||
		       err == EFBIG || err == EINTR || err == ENOSPC;
	case 0x18:	/* PREFETCH */
		return err == EOPNOTSUPP || err == ETIME || err == ENOMEM ||
		       err == EAGAIN || err == EEXIST;
	case 0x19:	/* CANCEL */
		return err == ENOENT;
	case 0x1a:	/* EVENTFD */
		return err == EBADF;
	case 0x1b:	/* HBM_ATTACH */
		return err == EBADF || err == EBUSY || err == ENOSPC ||
		       err == ENOMEM || err == EMFILE || err == ENFILE;
	case 0x1d:	/* ADOPT */
		return err == EBADF || err == ENOMEM;
	}
	return false;
}

/* Entry statuses each block command documents. */
static bool status_ok(unsigned int nr, int st)
{
	int err = -st;

	if (st == 0)
		return true;
	switch (nr) {
	case 0x10:
		return err == EEXIST || err == EBUSY || err == ENOSPC ||
		       err == ENOMEM || err == EFAULT || err == EINTR;
	case 0x11:
		return err == ENOENT || err == EFAULT || err == ENOSPC ||
		       err == ENOMEM || err == EINTR;
	case 0x12:
		return err == ENOENT || err == ENOSPC || err == ENOMEM ||
		       err == EINTR;
	case 0x13:
		return err == ENOENT || err == EBUSY;
	case 0x14:
		return err == ENOENT || err == EOVERFLOW || err == ENOSPC ||
		       err == ENOMEM || err == EINTR;
	case 0x15:
		return err == ENOENT || err == EINVAL;
	}
	return false;
}

static int fz_ioctl(struct fz_thr *t, enum fz_fdkind kind, int fd,
		    unsigned long cmd, void *arg)
{
	int ret;

	ret = kst_ioctl(fd, cmd, arg);
	atomic_fetch_add(&fz->calls, 1);
	if (t->child)
		atomic_fetch_add(&fz->child_calls, 1);
	if (ret && !errno_ok(kind, cmd, -ret))
		fz_failf(t, "%s (nr %#x dir %u size %u) on %s fd: %s (%d) is not a documented errno",
			 cmd_name(_IOC_NR(cmd)), (unsigned int)_IOC_NR(cmd),
			 (unsigned int)_IOC_DIR(cmd),
			 (unsigned int)_IOC_SIZE(cmd),
			 kind == FD_POOL ? "pool" : kind == FD_CTL ? "control" :
			 kind == FD_RAW ? "raw control" : "other",
			 strerror(-ret), ret);
	return ret;
}

/* ---- memory ------------------------------------------------------------ */

/*
 * @pages read-write pages followed by one inaccessible guard page. The
 * guard stays mapped (PROT_NONE): an unmapped one is a hole the next
 * one-page mmap of another thread may fill, and a buffer straddling it
 * would then be read whole, half of it another mapping's bytes.
 */
static char *guarded(size_t pages, int prot)
{
	char *p = mmap(NULL, (pages + 1) * KST_PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	mprotect(p + pages * KST_PAGE, KST_PAGE, PROT_NONE);
	if (prot != (PROT_READ | PROT_WRITE))
		mprotect(p, pages * KST_PAGE, prot);
	return p;
}

static size_t ents_bytes(void)
{
	size_t b = FZ_ENTS * sizeof(struct kvtier_block);

	return (b + KST_PAGE - 1) & ~(KST_PAGE - 1);
}

/* The entry array placed so that its end touches the guard page. */
static struct kvtier_block *ents_tail(struct fz_thr *t, __u32 n)
{
	return (struct kvtier_block *)((char *)t->ents + ents_bytes()) - n;
}

static void *buf_of(struct fz_thr *t, int i)
{
	return t->bufs + (size_t)(i % FZ_NBUF) * FZ_BS_MAX;
}

/*
 * A bad user pointer for a buffer of @len bytes; with @ro, possibly a
 * read-only one (fine to read from, so not for PUT buffers).
 */
static __u64 bad_ptr(struct fz_thr *t, size_t len, bool ro)
{
	switch (rn(t, ro ? 6 : 5)) {
	case 0:
		return 0;
	case 1:
		return FZ_KPTR + rn(t, 1 << 20) * 8;
	case 2:
		return (__u64)(uintptr_t)t->gap;
	case 3:	/* straddles the guard page */
		return (__u64)(uintptr_t)(t->bufs + FZ_NBUF * FZ_BS_MAX -
					  (len > 8 ? len / 2 : 4));
	case 4:
		return 0x8000000000000000ULL + rnd(t) % 4096;	/* noncanonical */
	}
	return (__u64)(uintptr_t)t->ro;		/* read-only */
}

/* The block size of the pool behind @fd now, 0 if it is none. */
static __u64 fd_block_size(int fd)
{
	struct kvtier_pool_stat st;

	memset(&st, 0, sizeof(st));
	if (ioctl(fd, KVTIER_IOC_STAT, &st))
		return 0;
	return st.block_size;
}

/* ---- SIGBUS while touching mappings ------------------------------------ */

static __thread sigjmp_buf *volatile fz_jmp;

static void fz_sigbus(int sig, siginfo_t *si, void *uc)
{
	char msg[96];
	int n;

	(void)uc;
	if (fz_jmp)
		siglongjmp(*fz_jmp, sig);
	n = snprintf(msg, sizeof(msg),
		     "# fuzz: unexpected signal %d at %p (code %d), seed %llu\n",
		     sig, si->si_addr, si->si_code, fz_seed);
	if (write(2, msg, n) < 0)
		n = 0;
	{
		/* the mapping it hit */
		static char maps[1 << 16];
		int fd = open("/proc/self/maps", O_RDONLY);
		ssize_t len = fd < 0 ? 0 : read(fd, maps, sizeof(maps) - 1);
		char *l = maps, *nl;

		maps[len > 0 ? len : 0] = 0;
		for (; *l; l = nl + 1) {
			unsigned long a, b;

			nl = strchr(l, '\n');
			if (!nl)
				break;
			a = strtoul(l, NULL, 16);
			b = strtoul(strchr(l, '-') + 1, NULL, 16);
			if ((unsigned long)si->si_addr >= a &&
			    (unsigned long)si->si_addr < b &&
			    write(2, l, nl + 1 - l) < 0)
				break;
		}
		n = snprintf(msg, sizeof(msg), "# pid %d tid %d\n",
			     (int)getpid(), (int)gettid());
		if (write(2, msg, n) < 0)
			n = 0;
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Read @len bytes at @src into @dst; 0, or SIGBUS. */
static int probe(const char *src, void *dst, size_t len)
{
	sigjmp_buf env;
	int sig;

	sig = sigsetjmp(env, 1);
	if (sig) {
		fz_jmp = NULL;
		return sig;
	}
	fz_jmp = &env;
	/* the reads stay between the two stores */
	__asm__ __volatile__("" ::: "memory");
	memcpy(dst, src, len);
	__asm__ __volatile__("" ::: "memory");
	fz_jmp = NULL;
	return 0;
}

/* ---- struct mutation --------------------------------------------------- */

/* Mutate 1..3 spots of the @size bytes at @p. */
static void mutate(struct fz_thr *t, void *p, size_t size)
{
	unsigned char *b = p;
	int n = 1 + rn(t, 3);

	while (n--) {
		size_t off = rn(t, size);
		__u64 v = interesting(t);

		switch (rn(t, 4)) {
		case 0:
			b[off] ^= 1u << rn(t, 8);
			break;
		case 1:
			b[off] = (unsigned char)rnd(t);
			break;
		case 2:
			off &= ~(size_t)3;
			if (off + 4 <= size)
				memcpy(b + off, &v, 4);
			break;
		default:
			off &= ~(size_t)7;
			if (off + 8 <= size)
				memcpy(b + off, &v, 8);
			break;
		}
	}
}

/*
 * A mutated batch whose array pointer lands in another thread's entries
 * would have the kernel act on that thread's valid entries: storing its
 * buffers' bytes, whatever they hold now, under its keys, or writing
 * blocks into buffers it is about to check. The kernel does what it is
 * told there, and the byte checks would blame it. Such a pointer is made
 * one that faults.
 */
static void fz_own_blocks(struct fz_thr *t, unsigned long cmd, void *arg,
			  size_t size)
{
	unsigned int nr = _IOC_NR(cmd);
	__u64 ptr;
	int i;

	if (_IOC_TYPE(cmd) != KVTIER_IOC_MAGIC || nr < 0x10 || nr > 0x15 ||
	    size < sizeof(ptr))
		return;
	memcpy(&ptr, arg, sizeof(ptr));
	for (i = 0; i < fz_nthr; i++) {
		__u64 lo = (__u64)(uintptr_t)fz_thr_all[i].ents;
		__u64 bl = (__u64)(uintptr_t)fz_thr_all[i].bufs;

		if (&fz_thr_all[i] == t && !t->child)
			continue;
		if ((ptr + 4096 > lo && ptr < lo + ents_bytes() + 4096) ||
		    (ptr + 4096 > bl &&
		     ptr < bl + (__u64)FZ_NBUF * FZ_BS_MAX + 4096)) {
			ptr = 8;
			memcpy(arg, &ptr, sizeof(ptr));
			return;
		}
	}
}

/*
 * The read-only page back to zeros after a call read its struct there.
 * Left holding it, a raw call handed that page (op_raw, bad_ptr()) would
 * run the command again on whatever the thread's entry array holds by
 * then: a PUT of a GET batch's keys with the buffers an older PUT filled,
 * storing those bytes under the new keys as told, which later GETs blamed
 * on the kernel ("GET returned another key's bytes").
 */
static void ro_clear(struct fz_thr *t)
{
	mprotect(t->ro, KST_PAGE, PROT_READ | PROT_WRITE);
	memset(t->ro, 0, KST_PAGE);
	mprotect(t->ro, KST_PAGE, PROT_READ);
}

/*
 * Issue @cmd with the struct of @ksize bytes at t->arg, mutated or not, at
 * a pointer and with a size that may be wrong. The struct is read back into
 * @out; @normal says whether nothing was changed.
 */
static int issue(struct fz_thr *t, enum fz_fdkind kind, int fd,
		 unsigned long cmd, const void *in, size_t ksize, void *out,
		 bool *normal)
{
	size_t usize = ksize;
	char *p = t->arg;
	int ret;

	memset(t->arg, 0, FZ_ARG_PAGES * KST_PAGE);
	memcpy(t->arg, in, ksize);
	*normal = true;
	if (pct(t, 15)) {
		mutate(t, t->arg, ksize);
		if (kind == FD_POOL)
			fz_own_blocks(t, cmd, t->arg, ksize);
		*normal = false;
	}
	if (pct(t, 6)) {
		*normal = false;
		switch (rn(t, 5)) {
		case 0:
			usize = ksize - 1 - rn(t, ksize);
			break;
		case 1:
			usize = ksize + 8 * (1 + rn(t, 16));
			break;
		case 2:
			usize = ksize + 8 * (1 + rn(t, 16));
			t->arg[usize - 1 - rn(t, usize - ksize)] = 1;
			break;
		case 3:
			usize = rn(t, 1 << 14);
			break;
		default:
			cmd = _IOC(rn(t, 4), _IOC_TYPE(cmd), _IOC_NR(cmd),
				   _IOC_SIZE(cmd));
			break;
		}
		cmd = _IOC(_IOC_DIR(cmd), _IOC_TYPE(cmd), _IOC_NR(cmd), usize);
	}
	if (pct(t, 5)) {
		*normal = false;
		switch (rn(t, 4)) {
		case 0:	/* unaligned */
			p = t->arg + 1 + rn(t, 7);
			memmove(p, t->arg, usize);
			break;
		case 1:	/* straddles the guard page */
			p = t->arg + FZ_ARG_PAGES * KST_PAGE -
			    (usize > 1 ? rn(t, usize - 1) + 1 : 1);
			break;
		case 2:	/* read-only: copy in works, copy out faults */
			if (usize <= KST_PAGE) {
				mprotect(t->ro, KST_PAGE,
					 PROT_READ | PROT_WRITE);
				memcpy(t->ro, t->arg, usize);
				mprotect(t->ro, KST_PAGE, PROT_READ);
				p = t->ro;
			}
			break;
		default:
			p = (char *)(uintptr_t)bad_ptr(t, usize, true);
			break;
		}
	}
	ret = fz_ioctl(t, kind, fd, cmd, p);
	if (p == t->ro)
		ro_clear(t);
	if (p != t->arg)
		*normal = false;
	/* What the kernel wrote back: a new fd must not be lost. */
	if (out && p >= t->arg && p + ksize <= t->arg + FZ_ARG_PAGES * KST_PAGE)
		memcpy(out, p, ksize);
	else if (out)
		memset(out, 0xff, ksize);
	return ret;
}

/* ---- pool slots -------------------------------------------------------- */

static void slot_close(struct fz_thr *t, int i)
{
	if (t->s[i].fd >= 0)
		close(t->s[i].fd);
	t->s[i].fd = -1;
}

/* Take a new pool fd into slot @i; learn its geometry. */
static void slot_take(struct fz_thr *t, int i, int fd, bool ro)
{
	struct kvtier_pool_stat st;
	int ret;

	slot_close(t, i);
	ret = kst_stat(fd, &st);
	if (ret) {
		fz_failf(t, "STAT of a new pool fd: %d", ret);
		close(fd);
		return;
	}
	if (fcntl(fd, F_GETFD) != FD_CLOEXEC)
		fz_failf(t, "pool fd %d without FD_CLOEXEC", fd);
	t->s[i].fd = fd;
	t->s[i].ro = ro;
	t->s[i].bs = st.block_size;
	t->s[i].cap = st.capacity;
}

static int pick_slot(struct fz_thr *t)
{
	int i, start = rn(t, FZ_SLOTS);

	for (i = 0; i < FZ_SLOTS; i++)
		if (t->s[(start + i) % FZ_SLOTS].fd >= 0)
			return (start + i) % FZ_SLOTS;
	return -1;
}

static const char *pick_name(struct fz_thr *t)
{
	return fz_names[rn(t, FZ_NAMES)];
}

/* ---- control commands -------------------------------------------------- */

static void op_api(struct fz_thr *t)
{
	struct kvtier_api a, out;
	bool normal;
	bool raw = pct(t, 50);
	int fd = raw ? t->raw : t->ctl;
	int ret;

	memset(&a, 0, sizeof(a));
	a.api = KVTIER_API_VERSION;
	a.features = pct(t, 80) ? KST_F_KNOWN & rnd(t) : rnd(t);
	/* the handshaken fd says EBUSY; the raw one is not handshaken */
	ret = issue(t, raw ? FD_RAW : FD_CTL, fd, KVTIER_IOC_API, &a,
		    sizeof(a), &out, &normal);
	if (ret == -EFAULT && raw) {
		/*
		 * A handshake whose answer could not be written may have
		 * taken effect all the same (the efault_* tests of api.c
		 * and pool.c): start over with a fresh fd.
		 */
		close(t->raw);
		t->raw = kst_ctl_open_raw();
	}
	if (ret)
		return;
	if (!raw) {
		fz_failf(t, "API: a second handshake worked");
		return;
	}
	/* it took the handshake: make a new raw fd */
	close(t->raw);
	t->raw = kst_ctl_open_raw();
	if (normal && (out.supported & ~KST_F_KNOWN ||
		       out.features != (a.features & out.supported) ||
		       out.batch_max != KVTIER_BATCH_MAX ||
		       nonzero(out.reserved, sizeof(out.reserved))))
		fz_failf(t, "API: outputs (supported %#llx features %#llx)",
			 (unsigned long long)out.supported,
			 (unsigned long long)out.features);
}

static void op_create(struct fz_thr *t)
{
	struct kvtier_pool_create c, out;
	static const __u64 bss[] = { 4096, 4096, 4096, 4096, 8192, 8192,
				     16384, 65536 };
	bool normal;
	int ret, i;

	kst_create_init(&c, pick_name(t), bss[rn(t, 8)], 1 + rn(t, 64), 0);
	c.dram_blocks = rn(t, c.capacity + 1);
	if (c.dram_blocks > 16)
		c.dram_blocks = 16;
	c.mode = rn(t, 2) ? 0600 : 0666;
	if (pct(t, 40))
		c.flags |= KVTIER_POOL_OPEN_EXISTING;
	if (pct(t, 20))
		c.flags |= KVTIER_POOL_RDONLY;
	if (pct(t, 10))
		c.flags |= KVTIER_POOL_FAULT_NOLOAD;
	if (pct(t, 10))
		c.numa_node = rn(t, 2);
	ret = issue(t, FD_CTL, pct(t, 90) ? t->ctl : t->ctl2,
		    KVTIER_IOC_POOL_CREATE, &c, sizeof(c), &out, &normal);
	if (ret)
		return;
	if (out.fd < 0) {
		fz_failf(t, "POOL_CREATE: 0 and fd %d", out.fd);
		return;
	}
	i = rn(t, FZ_SLOTS);
	slot_take(t, i, out.fd, out.flags & KVTIER_POOL_RDONLY);
	(void)normal;
}

static void op_open(struct fz_thr *t)
{
	struct kvtier_pool_open o, out;
	bool normal;
	int ret;

	memset(&o, 0, sizeof(o));
	kst_set_name(o.name, pick_name(t));
	o.flags = pct(t, 30) ? KVTIER_POOL_RDONLY : 0;
	o.fd = -1;
	ret = issue(t, FD_CTL, t->ctl, KVTIER_IOC_POOL_OPEN, &o, sizeof(o),
		    &out, &normal);
	if (ret)
		return;
	if (out.fd < 0) {
		fz_failf(t, "POOL_OPEN: 0 and fd %d", out.fd);
		return;
	}
	slot_take(t, rn(t, FZ_SLOTS), out.fd, out.flags & KVTIER_POOL_RDONLY);
	(void)normal;
}

static void op_destroy(struct fz_thr *t)
{
	struct kvtier_pool_destroy d;
	bool normal;

	memset(&d, 0, sizeof(d));
	kst_set_name(d.name, pick_name(t));
	issue(t, FD_CTL, t->ctl, KVTIER_IOC_POOL_DESTROY, &d, sizeof(d), NULL,
	      &normal);
}

static void op_nvme_stat(struct fz_thr *t)
{
	struct kvtier_nvme_stat s, out;
	bool normal;
	int ret;

	memset(&s, 0, sizeof(s));
	ret = issue(t, FD_CTL, t->ctl, KVTIER_IOC_NVME_STAT, &s, sizeof(s),
		    &out, &normal);
	if (!ret && normal &&
	    (nonzero(out.reserved, sizeof(out.reserved)) ||
	     out.attached > 1))
		fz_failf(t, "NVME_STAT: attached %u or reserved words set",
			 out.attached);
}

static void op_nvme(struct fz_thr *t)
{
	struct kvtier_nvme_attach a;
	struct kvtier_nvme_detach d;
	char path[300];
	int ret;

	if (pct(t, 50)) {
		memset(&d, 0, sizeof(d));
		if (pct(t, 10))
			mutate(t, &d, sizeof(d));
		pthread_mutex_lock(&fz_nvme_lock);
		ret = fz_ioctl(t, FD_CTL, t->ctl, KVTIER_IOC_NVME_DETACH, &d);
		pthread_mutex_unlock(&fz_nvme_lock);
		if (!ret)
			atomic_fetch_add(&fz->detaches, 1);
		return;
	}
	memset(&a, 0, sizeof(a));
	switch (rn(t, 10)) {
	case 0:
		snprintf(path, sizeof(path), "/dev/null");
		break;
	case 1:
		snprintf(path, sizeof(path), "/nonexistent/kvtier");
		break;
	case 2:
		snprintf(path, sizeof(path), "/dev/null/x");
		break;
	case 3:
		memset(path, 'a', 290);
		path[0] = '/';
		path[290] = '\0';
		break;
	default:
		snprintf(path, sizeof(path), "%s", fz_dev);
		break;
	}
	a.path = (__u64)(uintptr_t)path;
	if (pct(t, 5))
		a.path = bad_ptr(t, 16, false);
	/* Mostly a fresh store: an old one may bring back dropped keys. */
	a.flags = pct(t, 75) ? KVTIER_NVME_FORMAT : 0;
	if (a.flags && pct(t, 30))
		a.region_kib = 1024U << rn(t, 4);
	if (pct(t, 10)) {
		/* not through issue(): the flags sent must be known here */
		mutate(t, &a.flags, sizeof(a) - offsetof(typeof(a), flags));
		a.flags |= KVTIER_NVME_FORMAT * rn(t, 2);
	}
	if (!(a.flags & KVTIER_NVME_FORMAT)) {
		atomic_fetch_add(&fz->restoring, 1);
		atomic_fetch_add(&fz->restore_epoch, 1);
	}
	pthread_mutex_lock(&fz_nvme_lock);
	ret = fz_ioctl(t, FD_CTL, t->ctl, KVTIER_IOC_NVME_ATTACH, &a);
	pthread_mutex_unlock(&fz_nvme_lock);
	if (!ret)
		atomic_fetch_add(&fz->attaches, 1);
	if (!(a.flags & KVTIER_NVME_FORMAT)) {
		atomic_fetch_add(&fz->restore_epoch, 1);
		atomic_fetch_sub(&fz->restoring, 1);
	}
}

/* Any ioctl number on any fd, with a random argument. */
static void op_raw(struct fz_thr *t)
{
	unsigned long cmd;
	enum fz_fdkind kind;
	int fd, i;
	void *p;

	switch (rn(t, 5)) {
	case 0:
		fd = t->ctl;
		kind = FD_CTL;
		break;
	case 1:
		fd = t->raw;
		kind = FD_RAW;
		break;
	case 2:
		fd = pct(t, 50) ? t->nullfd : FZ_BADFD;
		kind = FD_OTHER;
		break;
	default:
		i = pick_slot(t);
		fd = i < 0 ? t->ctl : t->s[i].fd;
		kind = i < 0 ? FD_CTL : FD_POOL;
		break;
	}
	cmd = _IOC(rn(t, 4), pct(t, 90) ? KVTIER_IOC_MAGIC : rn(t, 256),
		   pct(t, 80) ? rn(t, 0x20) : rn(t, 256), rn(t, 1 << 14));
	memset(t->arg, 0, FZ_ARG_PAGES * KST_PAGE);
	if (pct(t, 50))
		for (i = 0; i < 64; i++)
			t->arg[rn(t, FZ_ARG_PAGES * KST_PAGE)] = rnd(t);
	p = pct(t, 80) ? t->arg : (void *)(uintptr_t)bad_ptr(t, 64, true);
	/*
	 * A random number may be a real command with a valid argument:
	 * creating or opening a pool leaves an fd; batches may use the
	 * zeroed array as is. The errno check is what this is for.
	 */
	if (kind == FD_CTL && _IOC_TYPE(cmd) == KVTIER_IOC_MAGIC &&
	    (_IOC_NR(cmd) == 1 || _IOC_NR(cmd) == 2 || _IOC_NR(cmd) == 4 ||
	     _IOC_NR(cmd) == 5))
		return;	/* the structured ops cover them */
	fz_ioctl(t, kind, fd, cmd, p);
	if (kind == FD_RAW && _IOC_NR(cmd) == 0) {
		/* a handshake may have happened (efault_* tests) */
		close(t->raw);
		t->raw = kst_ctl_open_raw();
	}
}

/* ---- block commands on the fuzzed pools -------------------------------- */

static __u64 fz_key0(struct fz_thr *t)
{
	return pct(t, 95) ? rn(t, FZ_KEYS) : rnd(t);
}

static void op_batch(struct fz_thr *t)
{
	static const unsigned long cmds[] = {
		KVTIER_IOC_PUT, KVTIER_IOC_PUT, KVTIER_IOC_GET, KVTIER_IOC_GET,
		KVTIER_IOC_LOOKUP, KVTIER_IOC_DROP, KVTIER_IOC_PIN,
		KVTIER_IOC_UNPIN,
	};
	unsigned long cmd = cmds[rn(t, 8)];
	unsigned int nr = _IOC_NR(cmd);
	bool has_buf = nr == 0x10 || nr == 0x11;
	bool shared = false, normal, bad_ent = false;
	struct kvtier_block *e;
	struct kvtier_batch b, out;
	__u32 count, written, i, done, prefix;
	bool in_prefix = true;
	int slot = pick_slot(t);
	__u64 bs, bs_seen = 0;
	int fd, ret;

	if (slot < 0)
		return;
	fd = t->s[slot].fd;
	bs = t->s[slot].bs;
	/*
	 * A PUT through an fd number another thread has closed and reused
	 * for a pool of another block size would store bytes from past the
	 * buffer (the kernel takes what it is given): later GETs would then
	 * see torn blocks that no kernel bug made. Skip it.
	 */
	if (nr == 0x10 && fd_block_size(fd) != bs)
		return;
	if (bs > FZ_BS_MAX)
		bs = FZ_BS_MAX;	/* a mutated create: buffers too short */

	switch (rn(t, 20)) {
	case 0:
		count = KVTIER_BATCH_MAX;
		shared = true;
		break;
	case 1:
		count = 9 + rn(t, 120);
		shared = true;
		break;
	case 2:
		/*
		 * A count the kernel refuses, unless issue() mutates it into
		 * one it takes: then more entries than buffers go in, so
		 * they share buffer 0 and key 7 like the big batches above
		 * (entry i and i + FZ_NBUF would otherwise share a buffer
		 * holding only the later one's key: a PUT storing one key's
		 * bytes under another, blamed on the kernel by later GETs).
		 */
		count = rn(t, 2) ? 0 : KVTIER_BATCH_MAX + 1 + rn(t, 4);
		shared = count > 0;
		break;
	default:
		count = 1 + rn(t, FZ_NBUF);
		break;
	}
	e = t->ents;
	written = count < FZ_ENTS ? count : FZ_ENTS;
	for (i = 0; i < written; i++) {
		__u64 k0 = shared && nr == 0x10 ? 7 : fz_key0(t);

		kst_blk(&e[i], k0, 0, NULL);
		if (has_buf) {
			e[i].buf = (__u64)(uintptr_t)buf_of(t, shared ? 0 : i);
			if (nr == 0x10 && (!shared || i == 0))
				kst_fill(buf_of(t, shared ? 0 : i), bs, k0, 0,
					 ++t->gen);
			if (pml(t, 15)) {
				e[i].buf = bad_ptr(t, bs, nr != 0x10) ?: 8;
				bad_ent = true;
			}
		} else if (pml(t, 5)) {
			e[i].buf = (__u64)(uintptr_t)buf_of(t, 0);
			bad_ent = true;
		}
		if (pml(t, 5)) {
			e[i].reserved = interesting(t) | 1;
			bad_ent = true;
		}
	}
	/*
	 * No stale entry past the batch: a mutated count would send it,
	 * with a buffer that now holds another key's bytes. Whoever wrote
	 * it: a batch of a refused count (FZ_ENTS entries), the oracle.
	 */
	if (written < FZ_ENTS)
		memset(&e[written], 0, (FZ_ENTS - written) * sizeof(*e));
	memset(&b, 0, sizeof(b));
	b.blocks = (__u64)(uintptr_t)e;
	b.count = count;
	if (nr == 0x10 && pct(t, 30))
		b.flags = KVTIER_PUT_REPLACE;
	if (nr == 0x12)
		b.flags = rn(t, 4) & KST_LOOKUP_FLAGS;
	if (pct(t, 4)) {
		b.flags = 1u << rn(t, 32);
		bad_ent = true;
	}
	if (pct(t, 3)) {
		/* the array straddles the guard page, or read-only */
		if (count && count <= FZ_ENTS && rn(t, 2)) {
			memmove(ents_tail(t, count / 2 + 1), e,
				(count / 2 + 1) * sizeof(*e));
			b.blocks = (__u64)(uintptr_t)ents_tail(t, count / 2 + 1);
		} else {
			b.blocks = bad_ptr(t, count * sizeof(*e), true);
		}
		bad_ent = true;
	}
	/*
	 * Another thread may close this fd and have its number reused by
	 * another pool: the byte check below holds only if the fd is the
	 * pool of that block size before and after the GET.
	 */
	bs_seen = nr == 0x11 ? fd_block_size(fd) : 0;
	ret = issue(t, FD_POOL, fd, cmd, &b, sizeof(b), &out, &normal);
	if (nr == 0x11 && fd_block_size(fd) != bs_seen)
		bs_seen = 0;
	if (b.blocks != (__u64)(uintptr_t)e && count && count <= FZ_ENTS)
		memset(ents_tail(t, count / 2 + 1), 0,
		       (count / 2 + 1) * sizeof(*e));
	if (ret || !normal || bad_ent || b.blocks != (__u64)(uintptr_t)e)
		return;

	/* Outputs agree with themselves. */
	done = 0;
	prefix = 0;
	for (i = 0; i < count; i++) {
		if (!status_ok(nr, e[i].status)) {
			fz_failf(t, "%s entry %u: status %d not documented",
				 cmd_name(nr), i, e[i].status);
			return;
		}
		if (e[i].status) {
			in_prefix = false;
			if (e[i].addr != KVTIER_ADDR_NONE ||
			    e[i].tier != KVTIER_TIER_NONE)
				fz_failf(t, "%s entry %u: status %d, addr %#llx tier %u",
					 cmd_name(nr), i, e[i].status,
					 (unsigned long long)e[i].addr,
					 e[i].tier);
			continue;
		}
		done++;
		if (in_prefix)
			prefix++;
		if (nr == 0x13) {
			if (e[i].addr != KVTIER_ADDR_NONE)
				fz_failf(t, "DROP entry %u: addr %#llx",
					 i, (unsigned long long)e[i].addr);
			continue;
		}
		if (e[i].addr >= t->s[slot].cap ||
		    (e[i].tier != KVTIER_TIER_DRAM &&
		     e[i].tier != KVTIER_TIER_NVME))
			fz_failf(t, "%s entry %u: addr %#llx tier %u (capacity %u)",
				 cmd_name(nr), i,
				 (unsigned long long)e[i].addr, e[i].tier,
				 t->s[slot].cap);
		/* Any pool: a block GET returns is whole and of its key. */
		if (nr == 0x11 && !shared && t->s[slot].bs <= FZ_BS_MAX &&
		    bs_seen == bs &&
		    kst_check(buf_of(t, i), bs, e[i].key[0], e[i].key[1],
			      NULL) != -1)
			fz_failf(t, "GET key %#llx:%#llx (bs %llu, addr %llu): bytes of key %#llx:%#llx gen %llu, or torn",
				 (unsigned long long)e[i].key[0],
				 (unsigned long long)e[i].key[1],
				 (unsigned long long)bs,
				 (unsigned long long)e[i].addr,
				 (unsigned long long)((__u64 *)buf_of(t, i))[1],
				 (unsigned long long)((__u64 *)buf_of(t, i))[2],
				 (unsigned long long)((__u64 *)buf_of(t, i))[0]);
	}
	if (out.done != (nr == 0x12 ? prefix : done))
		fz_failf(t, "%s: done %u, entries say %u", cmd_name(nr),
			 out.done, nr == 0x12 ? prefix : done);
}

static void op_stat_sync(struct fz_thr *t)
{
	struct kvtier_pool_stat st, sout;
	struct kvtier_sync sy, yout;
	int slot = pick_slot(t), ret;
	bool normal;

	if (slot < 0)
		return;
	if (pct(t, 80)) {
		memset(&st, 0, sizeof(st));
		ret = issue(t, FD_POOL, t->s[slot].fd, KVTIER_IOC_STAT, &st,
			    sizeof(st), &sout, &normal);
		if (ret || !normal)
			return;
		if (sout.block_size != t->s[slot].bs ||
		    sout.capacity != t->s[slot].cap || sout.__pad ||
		    nonzero(sout.reserved, sizeof(sout.reserved)) ||
		    sout.resident[KVTIER_TIER_NONE] ||
		    sout.resident[KVTIER_TIER_HBM] ||
		    sout.resident[KVTIER_TIER_DRAM] > sout.capacity ||
		    sout.pinned > sout.capacity)
			fz_failf(t, "STAT: inconsistent (bs %llu cap %u dram %llu pinned %llu)",
				 (unsigned long long)sout.block_size,
				 sout.capacity,
				 (unsigned long long)sout.resident[KVTIER_TIER_DRAM],
				 (unsigned long long)sout.pinned);
		return;
	}
	memset(&sy, 0, sizeof(sy));
	ret = issue(t, FD_POOL, t->s[slot].fd, KVTIER_IOC_SYNC, &sy,
		    sizeof(sy), &yout, &normal);
	if (ret == -EBADF && normal && !t->s[slot].ro)
		fz_failf(t, "SYNC on a read-write fd: EBADF");
	if (!ret && normal && t->s[slot].ro)
		fz_failf(t, "SYNC on a read-only fd worked");
}

/* ---- fds and mappings -------------------------------------------------- */

static void op_fds(struct fz_thr *t)
{
	int i = rn(t, FZ_SLOTS), j, fd;

	switch (rn(t, 3)) {
	case 0:
		slot_close(t, i);
		break;
	case 1:
		j = pick_slot(t);
		if (j < 0 || j == i)
			break;
		fd = fcntl(t->s[j].fd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0)
			break;
		slot_close(t, i);
		t->s[i] = t->s[j];
		t->s[i].fd = fd;
		break;
	default:
		/* a second control fd, closed and opened again */
		close(t->ctl2);
		t->ctl2 = kst_ctl_open();
		break;
	}
}

static void map_drop(struct fz_thr *t, int i)
{
	if (t->m[i].p)
		munmap(t->m[i].p, t->m[i].len);
	t->m[i].p = NULL;
}

static void op_mmap(struct fz_thr *t)
{
	int slot = pick_slot(t), i = rn(t, FZ_MAPS), prot, flags;
	__u64 bs, blocks, off;
	size_t len;
	char *p;

	if (slot < 0)
		return;
	bs = t->s[slot].bs;
	switch (rn(t, 4)) {
	case 0:
		map_drop(t, i);
		return;
	case 1:
		/* touch: resident blocks read, others SIGBUS, nothing else */
		if (t->m[i].p) {
			char tmp[64];
			size_t at = (size_t)rn(t, t->m[i].len / KST_PAGE) *
				    KST_PAGE;

			probe(t->m[i].p + at, tmp, sizeof(tmp));
			if (pct(t, 20) &&
			    !mprotect(t->m[i].p, t->m[i].len,
				      PROT_READ | PROT_WRITE))
				fz_failf(t, "mprotect(PROT_WRITE) of a pool mapping worked");
		}
		return;
	}
	if (t->s[slot].cap > (1u << 20) / 16 || bs > FZ_BS_MAX)
		return;	/* too big to map here */
	blocks = t->s[slot].cap;
	off = rn(t, blocks);
	len = (size_t)(1 + rn(t, blocks - off)) * bs;
	off *= bs;
	prot = PROT_READ;
	flags = pct(t, 85) ? MAP_SHARED : MAP_PRIVATE;
	if (pct(t, 8))
		prot |= PROT_WRITE;
	if (pct(t, 5))
		len += bs;			/* past the end */
	if (pct(t, 3))
		off += 1 + rn(t, 4095);		/* unaligned */
	p = mmap(NULL, len, prot, flags, t->s[slot].fd, off);
	atomic_fetch_add(&fz->calls, 1);
	if (p == MAP_FAILED) {
		int err = errno;

		if (err != EACCES && err != EINVAL && err != ENOMEM)
			fz_failf(t, "mmap: %s is not a documented errno",
				 strerror(err));
		else if (err == EACCES && !(prot & PROT_WRITE))
			fz_failf(t, "mmap PROT_READ: EACCES");
		return;
	}
	if (prot & PROT_WRITE)
		fz_failf(t, "mmap with PROT_WRITE worked (%s)",
			 flags == MAP_SHARED ? "shared" : "private");
	map_drop(t, i);
	t->m[i].p = p;
	t->m[i].len = len;
	t->m[i].slot = slot;
	t->m[i].bs = bs;
	t->m[i].off = off;
}

/* ---- fork, and kill -9 mid-command ------------------------------------- */

static void fz_step(struct fz_thr *t);

static void op_fork(struct fz_thr *t)
{
	pid_t pid;
	int rc;

	pid = kst_fork();
	if (pid < 0)
		return;
	if (pid == 0) {
		long n = 10 + rn(t, 60);

		t->child = true;
		t->rng ^= 0xc41d;
		/* the raw fd's file is the parent's: a handshake would stick */
		close(t->raw);
		t->raw = kst_ctl_open_raw();
		for (t->call = 0; t->call < n; t->call++)
			fz_step(t);
		_exit(0);
	}
	atomic_fetch_add(&fz->forks, 1);
	if (pct(t, 60)) {
		struct timespec ts = { 0, (long)rn(t, 3000) * 1000 };

		nanosleep(&ts, NULL);
		kill(pid, SIGKILL);
		atomic_fetch_add(&fz->kills, 1);
	}
	rc = kst_wait(pid);
	if (rc != 0 && rc != 128 + SIGKILL)
		fz_failf(t, "child %d ended with %d", (int)pid, rc);
	rn(t, 2);	/* keep the parent's sequence independent of timing */
}

/* ---- the oracle pool (thread 0) ---------------------------------------- */

/*
 * Whether key @k may show an older generation, or come back after it went:
 * an attach without format happened since its last change, or is under
 * way, and may have replayed its records (DROP and REPLACE are not logged;
 * nvme-format.rst). A change made while an attach replays does not stop
 * the replay from bringing the key back after it.
 */
static bool or_lax(struct fz_thr *t, int k)
{
	return atomic_load(&fz->restoring) ||
	       atomic_load(&fz->restore_epoch) != t->keys[k].epoch;
}

/* Note a command's status on oracle key @k, for or_history(). */
static void or_note(struct fz_thr *t, int k, char op, int st)
{
	struct fz_key *m = &t->keys[k];
	unsigned int i = m->nh++ % ARRAY_SIZE(m->h);

	m->h[i].call = t->call;
	m->h[i].op = op;
	m->h[i].st = st;
	m->h[i].epoch = atomic_load(&fz->restore_epoch);
	m->h[i].nvme = atomic_load(&fz->attaches) +
		       atomic_load(&fz->detaches);
}

/* Print the last commands on oracle key @k (thread 0: never killed). */
static void or_history(struct fz_thr *t, int k)
{
	struct fz_key *m = &t->keys[k];
	unsigned int i, n = m->nh < ARRAY_SIZE(m->h) ? m->nh :
			    ARRAY_SIZE(m->h);

	fprintf(stderr, "# oracle key %d, its last commands (call op status restore_epoch nvme_ops):",
		k);
	for (i = m->nh - n; i < m->nh; i++) {
		unsigned int j = i % ARRAY_SIZE(m->h);

		fprintf(stderr, " %ld:%c:%d:%ld:%ld", m->h[j].call,
			m->h[j].op, m->h[j].st, m->h[j].epoch, m->h[j].nvme);
	}
	fprintf(stderr, "; now %ld:%ld\n", atomic_load(&fz->restore_epoch),
		atomic_load(&fz->attaches) + atomic_load(&fz->detaches));
}

/* Check what GET, LOOKUP, PIN or a mapping said about key @k. */
static void or_seen(struct fz_thr *t, int k, const char *what, int st,
		    const void *buf)
{
	struct fz_key *m = &t->keys[k];
	__u64 gen = 0;

	or_note(t, k, what[0], st);
	if (st == -ENOENT) {
		if (m->pins)
			fz_failf(t, "oracle %s key %d: miss while pinned",
				 what, k);
		if (m->present) {
			m->gone = what;
			m->gone_call = t->call;
		}
		m->present = false;	/* gone for good (strict) */
		return;
	}
	if (st)
		return;
	atomic_fetch_add(&fz->oracle_hits, 1);
	if (!m->present && !or_lax(t, k)) {
		fz_failf(t, "oracle %s key %d: present, but a %s at call %ld said it was gone",
			 what, k, m->gone ?: "?", m->gone_call);
		or_history(t, k);
		return;
	}
	m->present = true;
	if (!buf)
		return;
	if (kst_check(buf, OR_BS, k, OR_K1, &gen) != -1) {
		fz_failf(t, "oracle %s key %d: not the bytes of this key (gen word %llu)",
			 what, k, (unsigned long long)*(const __u64 *)buf);
		return;
	}
	if (or_lax(t, k) ? gen == 0 || gen > m->maxgen : gen != m->gen)
		fz_failf(t, "oracle %s key %d: generation %llu, last PUT %llu",
			 what, k, (unsigned long long)gen,
			 (unsigned long long)m->gen);
}

/* One batch of @n keys on the oracle pool; buffers for PUT and GET. */
static int or_batch(struct fz_thr *t, unsigned long cmd, const int *keys,
		    int n, __u32 flags)
{
	struct kvtier_block *e = t->ents;
	struct kvtier_batch b;
	int i;

	for (i = 0; i < n; i++)
		kst_blk(&e[i], keys[i], OR_K1,
			cmd == KVTIER_IOC_PUT || cmd == KVTIER_IOC_GET ?
			buf_of(t, i) : NULL);
	memset(&b, 0, sizeof(b));
	b.blocks = (__u64)(uintptr_t)e;
	b.count = n;
	b.flags = flags;
	return fz_ioctl(t, FD_POOL, t->ofd, cmd, &b);
}

static void or_put(struct fz_thr *t, const int *keys, int n, long epoch)
{
	struct kvtier_block *e = t->ents;
	__u32 flags = pct(t, 40) ? KVTIER_PUT_REPLACE : 0;
	__u64 gens[FZ_NBUF];
	int i, bad = -1;

	for (i = 0; i < n; i++) {
		gens[i] = ++t->gen;
		kst_fill(buf_of(t, i), OR_BS, keys[i], OR_K1, gens[i]);
	}
	/* one buffer that faults: that entry must change nothing */
	if (pct(t, 10))
		bad = rn(t, n);
	for (i = 0; i < n; i++)
		kst_blk(&e[i], keys[i], OR_K1, buf_of(t, i));
	if (bad >= 0)
		e[bad].buf = bad_ptr(t, OR_BS, false) ?: FZ_KPTR;
	{
		struct kvtier_batch b;

		memset(&b, 0, sizeof(b));
		b.blocks = (__u64)(uintptr_t)e;
		b.count = n;
		b.flags = flags;
		if (fz_ioctl(t, FD_POOL, t->ofd, KVTIER_IOC_PUT, &b))
			return;
	}
	for (i = 0; i < n; i++) {
		struct fz_key *m = &t->keys[keys[i]];
		int st = e[i].status;

		or_note(t, keys[i], flags ? 'R' : 'P', st);
		if (i == bad && st != -EFAULT && st != -EEXIST &&
		    st != -EBUSY)
			fz_failf(t, "oracle PUT key %d from a bad buffer: %d",
				 keys[i], st);
		if (i == bad && !st)
			continue;
		if (!st) {
			m->present = true;
			m->gen = gens[i];
			if (gens[i] > m->maxgen)
				m->maxgen = gens[i];
			m->epoch = epoch;
		} else if (st == -EEXIST) {
			if (flags)
				fz_failf(t, "oracle PUT REPLACE key %d: EEXIST",
					 keys[i]);
			else if (!m->present && !or_lax(t, keys[i])) {
				fz_failf(t, "oracle PUT key %d: EEXIST, but it was dropped or missed before",
					 keys[i]);
				or_history(t, keys[i]);
			} else
				m->present = true;
		} else if (st == -EBUSY) {
			if (!flags || !m->pins)
				fz_failf(t, "oracle PUT key %d: EBUSY (replace %u, pins %d)",
					 keys[i], flags, m->pins);
		}
	}
}

static int or_pinned(struct fz_thr *t)
{
	int k, n = 0;

	for (k = 0; k < OR_KEYS; k++)
		n += !!t->keys[k].pins;
	return n;
}

static void or_pin(struct fz_thr *t, int k)
{
	struct kvtier_block *e = t->ents;
	char *map;

	if (or_batch(t, KVTIER_IOC_PIN, &k, 1, 0))
		return;
	or_seen(t, k, "PIN", e[0].status, NULL);
	if (e[0].status)
		return;
	t->keys[k].pins++;
	/* A pinned block reads right through a mapping. */
	map = mmap(NULL, OR_BS, PROT_READ, MAP_SHARED, t->ofd,
		   e[0].addr * OR_BS);
	atomic_fetch_add(&fz->calls, 1);
	if (map == MAP_FAILED) {
		fz_failf(t, "oracle mmap of a pinned block: %s",
			 strerror(errno));
		return;
	}
	if (probe(map, buf_of(t, 0), OR_BS))
		fz_failf(t, "oracle: SIGBUS on pinned block %llu",
			 (unsigned long long)e[0].addr);
	else
		or_seen(t, k, "mmap", 0, buf_of(t, 0));
	munmap(map, OR_BS);
}

static void or_unpin(struct fz_thr *t, int k)
{
	struct kvtier_block *e = t->ents;

	if (or_batch(t, KVTIER_IOC_UNPIN, &k, 1, 0))
		return;
	if (t->keys[k].pins && e[0].status)
		fz_failf(t, "oracle UNPIN key %d: %d with a pin held", k,
			 e[0].status);
	if (!t->keys[k].pins && !e[0].status)
		fz_failf(t, "oracle UNPIN key %d: worked without a pin", k);
	if (!e[0].status && t->keys[k].pins)
		t->keys[k].pins--;
}

static void op_oracle(struct fz_thr *t)
{
	struct kvtier_block *e = t->ents;
	int keys[FZ_NBUF], n = 1 + rn(t, 4), i, k;
	long epoch = atomic_load(&fz->restore_epoch);
	unsigned int op = rn(t, 100);

	atomic_fetch_add(&fz->oracle_ops, 1);
	for (i = 0; i < n; i++)
		keys[i] = rn(t, OR_KEYS);
	if (op < 40) {
		or_put(t, keys, n, epoch);
	} else if (op < 70) {
		for (i = 0; i < n; i++)
			memset(buf_of(t, i), 0xee, OR_BS);
		if (or_batch(t, KVTIER_IOC_GET, keys, n, 0))
			return;
		for (i = 0; i < n; i++)
			or_seen(t, keys[i], "GET", e[i].status, buf_of(t, i));
	} else if (op < 80) {
		if (or_batch(t, KVTIER_IOC_LOOKUP, keys, n,
			     rn(t, 4) & KST_LOOKUP_FLAGS))
			return;
		/*
		 * Every entry comes from one look at the index; a load
		 * (KVTIER_LOOKUP_LOAD) that fails after it makes its entry
		 * a miss, and a later entry of the same key keeps the hit:
		 * the hits happened first.
		 */
		for (i = 0; i < n; i++)
			if (!e[i].status)
				or_seen(t, keys[i], "LOOKUP", 0, NULL);
		for (i = 0; i < n; i++)
			if (e[i].status)
				or_seen(t, keys[i], "LOOKUP", e[i].status,
					NULL);
	} else if (op < 88) {
		if (or_batch(t, KVTIER_IOC_DROP, keys, n, 0))
			return;
		for (i = 0; i < n; i++) {
			struct fz_key *m = &t->keys[keys[i]];
			int st = e[i].status;

			or_note(t, keys[i], 'D', st);
			if (st == -EBUSY && !m->pins)
				fz_failf(t, "oracle DROP key %d: EBUSY, not pinned",
					 keys[i]);
			if (st && m->pins && st != -EBUSY)
				fz_failf(t, "oracle DROP key %d: %d while pinned",
					 keys[i], st);
			if (!st && !m->present && !or_lax(t, keys[i]))
				fz_failf(t, "oracle DROP key %d: dropped a key that was gone",
					 keys[i]);
			if (!st || st == -ENOENT) {
				if (m->present) {
					m->gone = st ? "DROP (ENOENT)" : "DROP";
					m->gone_call = t->call;
				}
				m->present = false;
				m->epoch = epoch;
			}
		}
	} else if (op < 94 && or_pinned(t) < OR_DRAM / 3) {
		or_pin(t, keys[0]);
	} else {
		/* unpin one we hold, or (sometimes) one we do not */
		for (k = 0; k < OR_KEYS; k++)
			if (t->keys[(keys[0] + k) % OR_KEYS].pins)
				break;
		if (k == OR_KEYS || pct(t, 20))
			or_unpin(t, keys[0]);
		else
			or_unpin(t, (keys[0] + k) % OR_KEYS);
	}
}

/* Every key against the model, then the pins go. */
static void oracle_final(struct fz_thr *t)
{
	int k;

	for (k = 0; k < OR_KEYS; k++) {
		memset(buf_of(t, 0), 0xee, OR_BS);
		if (!or_batch(t, KVTIER_IOC_GET, &k, 1, 0))
			or_seen(t, k, "final GET", t->ents[0].status,
				buf_of(t, 0));
		while (t->keys[k].pins) {
			int pins = t->keys[k].pins;

			or_unpin(t, k);
			if (t->keys[k].pins == pins)
				break;
		}
	}
}

/* ---- the loop ---------------------------------------------------------- */

static void fz_step(struct fz_thr *t)
{
	unsigned int op = rn(t, 1000);

	if (t->id == 0 && !t->child && op < 250) {
		op_oracle(t);
		return;
	}
	op = rn(t, 1000);
	if (op < 450)
		op_batch(t);
	else if (op < 520)
		op_stat_sync(t);
	else if (op < 600)
		op_create(t);
	else if (op < 650)
		op_open(t);
	else if (op < 680)
		op_destroy(t);
	else if (op < 700)
		op_nvme_stat(t);
	else if (op < 720)
		op_api(t);
	else if (op < 820)
		op_raw(t);
	else if (op < 880)
		op_fds(t);
	else if (op < 960)
		op_mmap(t);
	else if (op < 963 && fz_dev && !t->child)
		op_nvme(t);
	else if (op < 966 && !t->child)
		op_fork(t);
	else
		op_batch(t);
}

static int thr_init(struct fz_thr *t, int id)
{
	int i;

	memset(t, 0, sizeof(*t));
	t->id = id;
	t->rng = fz_seed * 0x100000001b3ULL + id;
	t->ofd = -1;
	t->ctl = kst_ctl_open();
	t->ctl2 = kst_ctl_open();
	t->raw = kst_ctl_open_raw();
	t->nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
	t->bufs = guarded(FZ_NBUF * FZ_BS_MAX / KST_PAGE, PROT_READ | PROT_WRITE);
	t->ents = (struct kvtier_block *)guarded(ents_bytes() / KST_PAGE,
						 PROT_READ | PROT_WRITE);
	t->ro = guarded(1, PROT_READ);
	t->arg = guarded(FZ_ARG_PAGES, PROT_READ | PROT_WRITE);
	t->gap = mmap(NULL, KST_PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		      -1, 0);
	for (i = 0; i < FZ_SLOTS; i++)
		t->s[i].fd = -1;
	if (t->ctl < 0 || t->ctl2 < 0 || t->raw < 0 || t->nullfd < 0 ||
	    !t->bufs || !t->ents || !t->ro || !t->arg || t->gap == MAP_FAILED)
		return -1;
	return 0;
}

static void thr_fini(struct fz_thr *t)
{
	int i;

	for (i = 0; i < FZ_MAPS; i++)
		map_drop(t, i);
	for (i = 0; i < FZ_SLOTS; i++)
		slot_close(t, i);
	close(t->ctl);
	close(t->ctl2);
	close(t->raw);
	close(t->nullfd);
}

static void *thr_run(void *arg)
{
	struct fz_thr *t = arg;

	for (t->call = 0; t->call < t->ncalls; t->call++)
		fz_step(t);
	if (t->id == 0)
		oracle_final(t);
	return NULL;
}

/* ---- the test ---------------------------------------------------------- */

/* Names of the pools that exist (sysfs); the count. */
static int pool_list(char names[][KVTIER_NAME_MAX], int max)
{
	DIR *d = opendir(KST_SYSFS_DIR "/pools");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' && (!de->d_name[1] ||
		    (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		if (n < max && strlen(de->d_name) < KVTIER_NAME_MAX)
			memcpy(names[n], de->d_name, strlen(de->d_name) + 1);
		n++;
	}
	closedir(d);
	return n;
}

/* Pools that exist, named or not, per /sys/kernel/kvtier/stat. */
static long long pools_counted(void)
{
	long long cols[16];

	if (kst_read_cols(KST_SYSFS_DIR "/stat", cols, 16, 0) < 1)
		return -1;
	return cols[0];
}

static bool in_list(char names[][KVTIER_NAME_MAX], int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

#define FZ_LIST_MAX	4096
#define FZ_STALL_S	30	/* no call ends for this long: a hang */

FIXTURE(fuzz) {
	int ctl;
	bool attached_before;
	int nbefore;
	long long counted_before;
	char (*before)[KVTIER_NAME_MAX];
};

FIXTURE_SETUP(fuzz)
{
	struct sigaction sa;
	struct stat st;
	int i;

	kst_setup(_metadata);

	fz_seed = fz_env("KVTIER_FUZZ_SEED",
			 (unsigned long long)time(NULL) * 1000003ULL ^ getpid());
	fz = mmap(NULL, sizeof(*fz), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, fz);
	memset(fz, 0, sizeof(*fz));
	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);

	fz_dev = getenv("KVTIER_NVME_DEV");
	if (!fz_dev || !*fz_dev)
		fz_dev = "/dev/nvme0n1";
	if (fz_env("KVTIER_FUZZ_NVME", 1) == 0 || stat(fz_dev, &st) ||
	    !S_ISBLK(st.st_mode))
		fz_dev = NULL;
	{
		struct kvtier_nvme_stat ns;

		memset(&ns, 0, sizeof(ns));
		ASSERT_EQ(0, kst_ioctl(self->ctl, KVTIER_IOC_NVME_STAT, &ns));
		self->attached_before = ns.attached;
	}

	for (i = 0; i < FZ_NAMES; i++)
		snprintf(fz_names[i], KVTIER_NAME_MAX, "fz.%d.%d",
			 (int)getpid(), i);
	snprintf(fz_oracle_name, KVTIER_NAME_MAX, "fz.%d.oracle",
		 (int)getpid());

	self->before = calloc(FZ_LIST_MAX, KVTIER_NAME_MAX);
	ASSERT_NE(NULL, self->before);
	self->nbefore = pool_list(self->before, FZ_LIST_MAX);
	ASSERT_LE(0, self->nbefore);
	self->counted_before = pools_counted();
	ASSERT_LE(0, self->counted_before);

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fz_sigbus;
	sa.sa_flags = SA_NODEFER | SA_SIGINFO;
	ASSERT_EQ(0, sigaction(SIGBUS, &sa, NULL));
}

FIXTURE_TEARDOWN(fuzz)
{
	free(self->before);
	close(self->ctl);
	munmap(fz, sizeof(*fz));
}

static void fz_report(struct __test_metadata *_metadata)
{
	int i, n = atomic_load(&fz->nfail);

	for (i = 0; i < n && i < FZ_FAILS; i++)
		TH_LOG("thread %d call %ld: %s", fz->fail[i].thread,
		       fz->fail[i].call, fz->fail[i].what);
	if (n)
		TH_LOG("%d failures; reproduce with KVTIER_FUZZ_SEED=%llu",
		       n, fz_seed);
}

TEST_F_TIMEOUT(fuzz, burst, 300)
{
	long calls = (long)fz_env("KVTIER_FUZZ_CALLS", 100000);
	int nthr = (int)fz_env("KVTIER_FUZZ_THREADS", 4);
	struct fz_thr *thr;
	pthread_t th[FZ_THREADS_MAX];
	char (*after)[KVTIER_NAME_MAX];
	struct timespec t0, t1;
	double secs;
	int i, n, ofd, leftover = 0;
	long long counted = -1;
	int tries;

	if (nthr < 1)
		nthr = 1;
	if (nthr > FZ_THREADS_MAX)
		nthr = FZ_THREADS_MAX;
	fprintf(stderr, "# fuzz: seed %llu, %ld calls, %d threads, nvme %s\n",
		fz_seed, calls, nthr, fz_dev ?: "none");

	thr = mmap(NULL, nthr * sizeof(*thr), PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, thr);
	fz_thr_all = thr;
	fz_nthr = nthr;
	for (i = 0; i < nthr; i++) {
		ASSERT_EQ(0, thr_init(&thr[i], i));
		thr[i].ncalls = calls / nthr + (i < calls % nthr);
	}
	/* the oracle pool */
	{
		struct kvtier_pool_create c;

		kst_create_init(&c, fz_oracle_name, OR_BS, OR_CAP, OR_DRAM);
		ofd = kst_create(self->ctl, &c);
		ASSERT_LE(0, ofd);
		thr[0].ofd = ofd;
	}

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < nthr; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, thr_run, &thr[i]));
	/* A watchdog: calls must keep ending, else it is a hang. */
	{
		bool joined[FZ_THREADS_MAX] = { false };
		long last = -1, now;
		int still = 0, done;

		for (;;) {
			usleep(200000);
			for (done = 0, i = 0; i < nthr; i++) {
				if (!joined[i] && !pthread_tryjoin_np(th[i], NULL))
					joined[i] = true;
				done += joined[i];
			}
			if (done == nthr)
				break;
			now = atomic_load(&fz->calls);
			still = now == last ? still + 1 : 0;
			last = now;
			if (still >= FZ_STALL_S * 5) {
				TH_LOG("no call ended for %d s: a hang; stacks follow",
				       FZ_STALL_S);
				kst_dump_stacks(getpid(), 0);
				fz_report(_metadata);
				ASSERT_TRUE(false);
			}
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	fprintf(stderr,
		"# fuzz: %ld calls (%ld in %ld children, %ld killed) in %.1f s, %.0f calls/s; oracle %ld ops, %ld hits; nvme %ld attaches, %ld detaches\n",
		atomic_load(&fz->calls), atomic_load(&fz->child_calls),
		atomic_load(&fz->forks), atomic_load(&fz->kills), secs,
		(double)atomic_load(&fz->calls) / secs,
		atomic_load(&fz->oracle_ops), atomic_load(&fz->oracle_hits),
		atomic_load(&fz->attaches), atomic_load(&fz->detaches));

	/* Nothing left pinned on the oracle pool once its pins went. */
	EXPECT_EQ(0, kst_pinned(ofd));
	close(ofd);
	for (i = 0; i < nthr; i++)
		thr_fini(&thr[i]);

	/* Every pool the run made: open, stat, no pin, destroy. */
	after = calloc(FZ_LIST_MAX, KVTIER_NAME_MAX);
	ASSERT_NE(NULL, after);
	n = pool_list(after, FZ_LIST_MAX);
	ASSERT_LE(0, n);
	for (i = 0; i < n && i < FZ_LIST_MAX; i++) {
		struct kvtier_pool_stat st;
		int pfd;

		if (in_list(self->before, self->nbefore, after[i]))
			continue;
		leftover++;
		pfd = kst_pool_open(self->ctl, after[i], KVTIER_POOL_RDONLY);
		EXPECT_LE(0, pfd) TH_LOG("open %s", after[i]);
		if (pfd >= 0) {
			EXPECT_EQ(0, kst_stat(pfd, &st));
			EXPECT_EQ(0ULL, st.pinned) TH_LOG("%s pinned", after[i]);
			close(pfd);
		}
		EXPECT_EQ(0, kst_pool_destroy(self->ctl, after[i]))
			TH_LOG("destroy %s", after[i]);
	}
	free(after);
	if (fz_dev && !self->attached_before) {
		struct kvtier_nvme_detach d;

		memset(&d, 0, sizeof(d));
		kst_ioctl(self->ctl, KVTIER_IOC_NVME_DETACH, &d);
	}
	/* Every pool of the run is freed: the module counts as before. */
	for (tries = 0; tries < 50; tries++) {
		counted = pools_counted();
		if (counted == self->counted_before)
			break;
		usleep(20000);
	}
	EXPECT_EQ(self->counted_before, counted);
	fprintf(stderr, "# fuzz: %d pools destroyed at the end\n", leftover);

	fz_report(_metadata);
	EXPECT_EQ(0, atomic_load(&fz->nfail));
	munmap(thr, nthr * sizeof(*thr));
}

TEST_HARNESS_MAIN
