// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier ioctl fuzzer, the generator: the run-wide state, randomness (one
 * splitmix64 sequence per thread), failures, the documented errnos of every
 * command and entry status, guarded buffers and bad pointers, SIGBUS
 * probing of mappings, and the mutation of a command's struct, its size and
 * its pointer in fz_issue().
 */
#define KST_NO_HARNESS

#include <setjmp.h>
#include <stdarg.h>
#include <sys/syscall.h>

#include "fuzz.h"

/* ---- run-wide state, shared with forked children ----------------------- */

struct fz_shared *fz;

unsigned long long fz_seed;
const char *fz_dev;		/* NVMe drive, or NULL */
char fz_names[FZ_NAMES][KVTIER_NAME_MAX];
char fz_oracle_name[KVTIER_NAME_MAX];
/*
 * Attach and detach of this process one at a time: concurrent detaches
 * are nvme_attach's attach.detach_race, so that a failure there does not
 * hide everything else the burst would find.
 */
pthread_mutex_t fz_nvme_lock = PTHREAD_MUTEX_INITIALIZER;
/* The kernel has KVTIER_F_META: batches may carry records. */
bool fz_meta;

unsigned long long fz_env(const char *name, unsigned long long def)
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

bool fz_nonzero(const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--)
		if (*b++)
			return true;
	return false;
}

/* ---- randomness ------------------------------------------------------ */

__u64 fz_rnd(struct fz_thr *t)
{
	/* splitmix64 */
	__u64 z = (t->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

__u32 fz_rn(struct fz_thr *t, __u32 n)
{
	return n ? (__u32)(fz_rnd(t) % n) : 0;
}

/* true with probability pct percent */
bool fz_pct(struct fz_thr *t, unsigned int p)
{
	return fz_rn(t, 1000) < p * 10;
}

/* true with probability p per mille */
bool fz_pml(struct fz_thr *t, unsigned int p)
{
	return fz_rn(t, 1000) < p;
}

__u64 fz_interesting(struct fz_thr *t)
{
	static const __u64 v[] = {
		0, 1, 2, 7, 8, 63, 64, 255, 4095, 4096, 4097, 65536,
		KVTIER_BATCH_MAX, KVTIER_BATCH_MAX + 1, KVTIER_CAPACITY_MAX,
		KVTIER_CAPACITY_MAX + 1, KVTIER_BLOCK_SIZE_MAX,
		KVTIER_BLOCK_SIZE_MAX + 4096, 0x7fffffff, 0x80000000,
		0xffffffff, 0x100000000ULL, 0x7fffffffffffffffULL,
		0x8000000000000000ULL, ~0ULL, ~0ULL - 4095,
	};

	if (fz_pct(t, 20))
		return fz_rnd(t);
	return v[fz_rn(t, sizeof(v) / sizeof(v[0]))];
}

/* ---- failures ---------------------------------------------------------- */

void fz_failf(struct fz_thr *t, const char *fmt, ...)
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

/* The slot of command @nr in a thread's timings; the last for the rest. */
unsigned int fz_cmd_slot(unsigned int nr)
{
	if (nr < 7)
		return nr;
	if (nr >= 0x10 && nr < 0x18)
		return 7 + nr - 0x10;
	return FZ_CMD_SLOTS - 1;
}

const char *fz_cmd_name(unsigned int nr)
{
	static const char * const ctl[] = {
		"API", "POOL_CREATE", "POOL_OPEN", "POOL_DESTROY",
		"NVME_ATTACH", "NVME_DETACH", "NVME_STAT",
	};
	static const char * const pool[] = {
		"PUT", "GET", "LOOKUP", "DROP", "PIN", "UNPIN", "STAT", "SYNC",
		"PREFETCH", "CANCEL", "EVENTFD", "HBM_ATTACH", "HBM_STAT",
		"ADOPT", "RESERVE", "COMMIT", "ABORT", "EVENTS", "CENSUS",
	};

	if (nr < 7)
		return ctl[nr];
	if (nr >= 0x10 && nr <= 0x22)
		return pool[nr - 0x10];
	return "?";
}

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
			/* EBADF, ETXTBSY: a weight pool's file_fd. */
			return err == EEXIST || err == EACCES || err == EMFILE ||
			       err == ENOSPC || err == ENOMEM || err == ENOPKG ||
			       err == EBADF || err == ETXTBSY;
		case 0x02:
			return err == ENOENT || err == EACCES || err == ENOMEM;
		case 0x03:
			return err == ENOENT || err == EPERM;
		case 0x04:
			return err == EPERM || err == EBUSY ||
			       err == EMEDIUMTYPE || err == ENOSPC ||
			       err == ENOENT || err == ENOTBLK || err == EIO ||
			       err == ENOMEM || err == ENOTDIR ||
			       err == ENAMETOOLONG || err == ENOPKG;
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
	case 0x1e: case 0x1f: case 0x20:	/* RESERVE, COMMIT, ABORT */
		return err == EBADF || err == ENOMEM || err == EOPNOTSUPP;
	case 0x21:	/* EVENTS */
		return err == ENOMEM || err == EMFILE || err == ENFILE;
	case 0x22:	/* CENSUS */
		return err == EOPNOTSUPP || err == EINTR || err == ENOMEM;
	}
	return false;
}

/* Entry statuses each block command documents. */
bool fz_status_ok(unsigned int nr, int st)
{
	int err = -st;

	if (st == 0)
		return true;
	switch (nr) {
	case 0x10:
		return err == EEXIST || err == EBUSY || err == ENOSPC ||
		       err == ENOMEM || err == EFAULT || err == EINTR ||
		       err == EMSGSIZE;
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
	case 0x1e:
		return err == EEXIST || err == EDQUOT || err == ENOSPC ||
		       err == ENOMEM || err == EINTR;
	case 0x1f:
		return err == ENOENT || err == EALREADY || err == EEXIST ||
		       err == EBUSY || err == EMSGSIZE;
	case 0x20:
		return err == ENOENT || err == EALREADY;
	}
	return false;
}

int fz_ioctl(struct fz_thr *t, enum fz_fdkind kind, int fd,
	     unsigned long cmd, void *arg)
{
	unsigned int slot = fz_cmd_slot(_IOC_NR(cmd));
	double t0 = kst_mono();
	__u64 ns;
	int ret;

	t->in_cmd = _IOC_NR(cmd);
	ret = kst_ioctl(fd, cmd, arg);
	t->in_cmd = FZ_NO_CMD;
	ns = (__u64)((kst_mono() - t0) * 1e9);
	t->cmd_n[slot]++;
	t->cmd_ns[slot] += ns;
	if (ns > t->cmd_max_ns[slot])
		t->cmd_max_ns[slot] = ns;
	atomic_fetch_add(&fz->calls, 1);
	if (t->child)
		atomic_fetch_add(&fz->child_calls, 1);
	if (ret && !errno_ok(kind, cmd, -ret))
		fz_failf(t, "%s (nr %#x dir %u size %u) on %s fd: %s (%d) is not a documented errno",
			 fz_cmd_name(_IOC_NR(cmd)), (unsigned int)_IOC_NR(cmd),
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
char *fz_guarded(size_t pages, int prot)
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

size_t fz_ents_bytes(void)
{
	size_t b = FZ_ENTS * sizeof(struct kvtier_block);

	return (b + KST_PAGE - 1) & ~(KST_PAGE - 1);
}

/* The entry array placed so that its end touches the guard page. */
struct kvtier_block *fz_ents_tail(struct fz_thr *t, __u32 n)
{
	return (struct kvtier_block *)((char *)t->ents + fz_ents_bytes()) - n;
}

size_t fz_meta_bytes(void)
{
	size_t b = FZ_ENTS * sizeof(struct kvtier_meta);

	return (b + KST_PAGE - 1) & ~(KST_PAGE - 1);
}

/*
 * The record array placed so that its end touches the guard page: a count
 * mutated larger makes the kernel fault on it, not read or write past.
 */
struct kvtier_meta *fz_meta_tail(struct fz_thr *t, __u32 n)
{
	return (struct kvtier_meta *)((char *)t->meta + fz_meta_bytes()) - n;
}

/*
 * The record stored with the block of key (k0, k1) and generation @gen:
 * 0..KVTIER_META_MAX bytes, all a function of the three, so a GET can tell
 * whether a record came with its bytes (word 0 of a block is its gen).
 */
void fz_rec(struct kvtier_meta *m, __u64 k0, __u64 k1, __u64 gen)
{
	__u64 seed = kst_mix(k0 ^ kst_mix(k1 ^ kst_mix(gen ^ 0x6d657461)));
	unsigned int i;

	memset(m, 0, sizeof(*m));
	m->len = (__u32)(seed % (KVTIER_META_MAX + 1));
	for (i = 0; i < m->len; i++)
		m->data[i] = (__u8)(kst_mix(seed + i) >> 11);
}

/*
 * Whether GET's record @m may be that of @block (bytes made by kst_fill()):
 * none, or exactly fz_rec() of its key and generation.
 */
bool fz_rec_ok(const struct kvtier_meta *m, const __u64 *block)
{
	struct kvtier_meta want;

	if (!m->len && !m->flags && !fz_nonzero(m->data, sizeof(m->data)))
		return true;
	fz_rec(&want, block[1], block[2], block[0]);
	return !memcmp(m, &want, sizeof(want));
}

void *fz_buf_of(struct fz_thr *t, int i)
{
	return t->bufs + (size_t)(i % FZ_NBUF) * FZ_BS_MAX;
}

/*
 * A bad user pointer for a buffer of @len bytes; with @ro, possibly a
 * read-only one (fine to read from, so not for PUT buffers).
 */
__u64 fz_bad_ptr(struct fz_thr *t, size_t len, bool ro)
{
	switch (fz_rn(t, ro ? 6 : 5)) {
	case 0:
		return 0;
	case 1:
		return FZ_KPTR + fz_rn(t, 1 << 20) * 8;
	case 2:
		return (__u64)(uintptr_t)t->gap;
	case 3:	/* straddles the guard page */
		return (__u64)(uintptr_t)(t->bufs + FZ_NBUF * FZ_BS_MAX -
					  (len > 8 ? len / 2 : 4));
	case 4:
		return 0x8000000000000000ULL + fz_rnd(t) % 4096;	/* noncanonical */
	}
	return (__u64)(uintptr_t)t->ro;		/* read-only */
}

/* The block size of the pool behind @fd now, 0 if it is none. */
__u64 fz_fd_block_size(int fd)
{
	struct kvtier_pool_stat st;

	memset(&st, 0, sizeof(st));
	if (ioctl(fd, KVTIER_IOC_STAT, &st))
		return 0;
	return st.block_size;
}

/* ---- SIGBUS while touching mappings ------------------------------------ */

static __thread sigjmp_buf *volatile fz_jmp;

void fz_sigbus(int sig, siginfo_t *si, void *uc)
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
int fz_probe(const char *src, void *dst, size_t len)
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
void fz_mutate(struct fz_thr *t, void *p, size_t size)
{
	unsigned char *b = p;
	int n = 1 + fz_rn(t, 3);

	while (n--) {
		size_t off = fz_rn(t, size);
		__u64 v = fz_interesting(t);

		switch (fz_rn(t, 4)) {
		case 0:
			b[off] ^= 1u << fz_rn(t, 8);
			break;
		case 1:
			b[off] = (unsigned char)fz_rnd(t);
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

/* Whether the page of @a or the one after it is mapped in this process. */
static bool fz_mapped(__u64 a)
{
	unsigned char v;
	int i;

	for (i = 0; i < 2; i++, a += KST_PAGE) {
		if (a < KST_PAGE || a >= 0x800000000000ULL)
			continue;
		if (!mincore((void *)(uintptr_t)(a & ~(__u64)(KST_PAGE - 1)),
			     KST_PAGE, &v))
			return true;
	}
	return false;
}

/* Whether @a is in (or a page below) the thread's own entries or buffers. */
static bool fz_own_window(const struct fz_thr *t, __u64 a)
{
	__u64 lo = (__u64)(uintptr_t)t->ents;
	__u64 bl = (__u64)(uintptr_t)t->bufs;

	/* a forked child's copies hold what its parent's threads wrote */
	if (t->child)
		return false;
	return (a + KST_PAGE > lo && a < lo + fz_ents_bytes() + KST_PAGE) ||
	       (a + KST_PAGE > bl &&
		a < bl + (__u64)FZ_NBUF * FZ_BS_MAX + KST_PAGE);
}

/*
 * A mutation that moved a pointer of the struct into memory this process
 * has mapped would have the kernel act there as told: take another
 * thread's valid entries (storing its buffers' bytes under its keys, or
 * writing blocks into buffers it is about to check, which the byte checks
 * blame on the kernel), or read entries out of a stack or the heap and
 * write blocks, records and results wherever the pointers found there
 * lead, so that the process corrupts itself (glibc's "munmap_chunk():
 * invalid pointer" at exit). Such a pointer is made the thread's gap page,
 * which faults. A pointer into the thread's own entries or buffers stays:
 * the thread checks what lands there.
 */
static void fz_own_ptrs(struct fz_thr *t, const void *in, void *arg,
			size_t size)
{
	__u64 gap = (__u64)(uintptr_t)t->gap;
	__u64 was, now;
	size_t off;

	for (off = 0; off + sizeof(now) <= size; off += sizeof(now)) {
		memcpy(&was, (const char *)in + off, sizeof(was));
		memcpy(&now, (char *)arg + off, sizeof(now));
		if (now == was || now == gap || !fz_mapped(now) ||
		    fz_own_window(t, now))
			continue;
		memcpy((char *)arg + off, &gap, sizeof(gap));
		atomic_fetch_add(&fz->ptrs_moved, 1);
	}
}

/*
 * A mutated batch's records must still be those of its entries: records
 * read through a pointer moved by the mutation, or given to entries moved
 * by it, would be stored with blocks they do not describe (which a later
 * GET blames on the kernel), and records written through a moved pointer
 * could land in another thread's memory. So when a mutation changed the
 * blocks or the meta pointer of a batch with records, the records are
 * left unreadable. (fz_bad_ptr() gives meta its bad pointers on purpose.)
 */
static void fz_own_meta(struct fz_thr *t, unsigned long cmd, const void *in,
			void *arg, size_t size)
{
	const size_t off = offsetof(struct kvtier_batch, meta);
	unsigned int nr = _IOC_NR(cmd);
	__u64 meta, meta0, blocks, blocks0;

	if (_IOC_TYPE(cmd) != KVTIER_IOC_MAGIC || nr < 0x10 || nr > 0x20 ||
	    (nr > 0x15 && nr < 0x1d) || size < off + sizeof(meta))
		return;
	memcpy(&meta, (char *)arg + off, sizeof(meta));
	memcpy(&meta0, (const char *)in + off, sizeof(meta0));
	memcpy(&blocks, arg, sizeof(blocks));
	memcpy(&blocks0, in, sizeof(blocks0));
	if (meta && (meta != meta0 || blocks != blocks0)) {
		meta = (__u64)(uintptr_t)t->gap;
		memcpy((char *)arg + off, &meta, sizeof(meta));
	}
}

/*
 * The read-only page back to zeros after a call read its struct there.
 * Left holding it, a raw call handed that page (fz_op_raw, fz_bad_ptr()) would
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
int fz_issue(struct fz_thr *t, enum fz_fdkind kind, int fd,
	     unsigned long cmd, const void *in, size_t ksize, void *out,
	     bool *normal)
{
	size_t usize = ksize;
	char *p = t->arg;
	int ret;

	memset(t->arg, 0, FZ_ARG_PAGES * KST_PAGE);
	memcpy(t->arg, in, ksize);
	*normal = true;
	if (fz_pct(t, 15)) {
		fz_mutate(t, t->arg, ksize);
		if (kind == FD_POOL)
			fz_own_meta(t, cmd, in, t->arg, ksize);
		fz_own_ptrs(t, in, t->arg, ksize);
		*normal = false;
	}
	if (fz_pct(t, 6)) {
		*normal = false;
		switch (fz_rn(t, 5)) {
		case 0:
			usize = ksize - 1 - fz_rn(t, ksize);
			break;
		case 1:
			usize = ksize + 8 * (1 + fz_rn(t, 16));
			break;
		case 2:
			usize = ksize + 8 * (1 + fz_rn(t, 16));
			t->arg[usize - 1 - fz_rn(t, usize - ksize)] = 1;
			break;
		case 3:
			usize = fz_rn(t, 1 << 14);
			break;
		default:
			cmd = _IOC(fz_rn(t, 4), _IOC_TYPE(cmd), _IOC_NR(cmd),
				   _IOC_SIZE(cmd));
			break;
		}
		cmd = _IOC(_IOC_DIR(cmd), _IOC_TYPE(cmd), _IOC_NR(cmd), usize);
	}
	if (fz_pct(t, 5)) {
		*normal = false;
		switch (fz_rn(t, 4)) {
		case 0:	/* unaligned */
			p = t->arg + 1 + fz_rn(t, 7);
			memmove(p, t->arg, usize);
			break;
		case 1:	/* straddles the guard page */
			p = t->arg + FZ_ARG_PAGES * KST_PAGE -
			    (usize > 1 ? fz_rn(t, usize - 1) + 1 : 1);
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
			p = (char *)(uintptr_t)fz_bad_ptr(t, usize, true);
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

