// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier ioctl fuzzer, shared by its three units: the constants, the
 * run-wide and per-thread state, and the functions each unit gives the
 * others. fuzz_gen.c holds the run-wide state, randomness, the documented
 * errnos, memory and the mutation of structs; fuzz_ops.c the operations on
 * control and pool fds; fuzz.c the oracle pool, the loop and the test.
 */
#ifndef KVTIER_FUZZ_H
#define KVTIER_FUZZ_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>

/* fuzz_gen.c and fuzz_ops.c define KST_NO_HARNESS: see kvtier_test.h. */
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
	/*
	 * Detaches under way: the copies on the device are out of reach, a
	 * miss, while their blocks stay until the detach forgets them.
	 */
	atomic_long detaching;
	atomic_long oracle_ops, oracle_hits;
	atomic_long ptrs_moved;		/* mutated pointers made to fault */
	atomic_bool stop;		/* the time is up: threads end now */
	struct fz_fail fail[FZ_FAILS];
};

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

#define FZ_NO_CMD	(~0u)

/* Commands timed apart: the 7 control ones, the 8 pool ones, the rest. */
#define FZ_CMD_SLOTS	16

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
	struct kvtier_meta *meta; /* FZ_ENTS records, guard page after */
	char *ro;		/* one read-only page, guard page after */
	char *arg;		/* FZ_ARG_PAGES pages, guard page after */
	char *gap;		/* a PROT_NONE page, never readable */
	__u64 gen;
	/* for the watchdog: the op and the ioctl under way (FZ_NO_CMD: none) */
	int tid;
	const char *volatile in_op;
	volatile unsigned int in_cmd;
	/* where the time went, by command (fz_cmd_slot()) */
	__u64 cmd_n[FZ_CMD_SLOTS], cmd_ns[FZ_CMD_SLOTS], cmd_max_ns[FZ_CMD_SLOTS];
	/* thread 0: the oracle pool */
	int ofd;
	struct fz_key keys[OR_KEYS];
};

enum fz_fdkind { FD_CTL, FD_RAW, FD_POOL, FD_OTHER };

/* Run-wide state, in fuzz_gen.c. */
extern struct fz_shared *fz;
extern unsigned long long fz_seed;
extern const char *fz_dev;
extern char fz_names[FZ_NAMES][KVTIER_NAME_MAX];
extern char fz_oracle_name[KVTIER_NAME_MAX];
extern pthread_mutex_t fz_nvme_lock;
extern bool fz_meta;

/* ---- fuzz_gen.c -------------------------------------------------------- */

unsigned long long fz_env(const char *name, unsigned long long def);
unsigned int fz_cmd_slot(unsigned int nr);
bool fz_nonzero(const void *p, size_t n);
__u64 fz_rnd(struct fz_thr *t);
__u32 fz_rn(struct fz_thr *t, __u32 n);
bool fz_pct(struct fz_thr *t, unsigned int p);
bool fz_pml(struct fz_thr *t, unsigned int p);
__u64 fz_interesting(struct fz_thr *t);
void fz_failf(struct fz_thr *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
const char *fz_cmd_name(unsigned int nr);
bool fz_status_ok(unsigned int nr, int st);
int fz_ioctl(struct fz_thr *t, enum fz_fdkind kind, int fd,
	     unsigned long cmd, void *arg);
char *fz_guarded(size_t pages, int prot);
size_t fz_ents_bytes(void);
struct kvtier_block *fz_ents_tail(struct fz_thr *t, __u32 n);
size_t fz_meta_bytes(void);
struct kvtier_meta *fz_meta_tail(struct fz_thr *t, __u32 n);
void fz_rec(struct kvtier_meta *m, __u64 k0, __u64 k1, __u64 gen);
bool fz_rec_ok(const struct kvtier_meta *m, const __u64 *block);
void *fz_buf_of(struct fz_thr *t, int i);
__u64 fz_bad_ptr(struct fz_thr *t, size_t len, bool ro);
__u64 fz_fd_block_size(int fd);
void fz_sigbus(int sig, siginfo_t *si, void *uc);
int fz_probe(const char *src, void *dst, size_t len);
void fz_mutate(struct fz_thr *t, void *p, size_t size);
int fz_issue(struct fz_thr *t, enum fz_fdkind kind, int fd,
	     unsigned long cmd, const void *in, size_t ksize, void *out,
	     bool *normal);

/* ---- fuzz_ops.c -------------------------------------------------------- */

void fz_slot_close(struct fz_thr *t, int i);
void fz_op_api(struct fz_thr *t);
void fz_op_create(struct fz_thr *t);
void fz_op_open(struct fz_thr *t);
void fz_op_destroy(struct fz_thr *t);
void fz_op_nvme_stat(struct fz_thr *t);
void fz_op_nvme(struct fz_thr *t);
void fz_op_raw(struct fz_thr *t);
void fz_op_batch(struct fz_thr *t);
void fz_op_stat_sync(struct fz_thr *t);
void fz_op_reserve(struct fz_thr *t);
void fz_op_events(struct fz_thr *t);
void fz_op_fds(struct fz_thr *t);
void fz_map_drop(struct fz_thr *t, int i);
void fz_op_mmap(struct fz_thr *t);
void fz_op_fork(struct fz_thr *t);

/* ---- fuzz.c ------------------------------------------------------------ */

void fz_step(struct fz_thr *t);

#endif /* KVTIER_FUZZ_H */
