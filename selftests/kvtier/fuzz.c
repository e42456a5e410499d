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
 * when the VM has one, is attached and detached now and then, and the
 * parameter policy_clean_first flipped before pools are made.
 *
 * Oracles, so that the fuzzer can fail:
 *  - every return is 0 or an errno of the documented set of the command
 *    (Documentation/userspace-api.rst), and so is every entry status;
 *  - batch outputs agree with themselves (done, addr, tier per status),
 *    stat outputs have their reserved words zero;
 *  - every block GET returns, in any pool, is whole and of its key, and
 *    its record (KVTIER_F_META) is none or the one PUT with those bytes;
 *    a failed entry's record is empty;
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
 * (calls of the worker threads, default 100000), KVTIER_FUZZ_SECS (the
 * threads stop after that many seconds if their calls are not done by then,
 * default two thirds of the case's timeout: a slow machine runs fewer calls
 * rather than run out of time; 0: no limit), KVTIER_FUZZ_THREADS (default
 * 4), KVTIER_NVME_DEV (default /dev/nvme0n1, used when it is a
 * block device; KVTIER_FUZZ_NVME=0 leaves it alone). The sequence of calls
 * of each thread follows from the seed; how threads and children interleave
 * does not, so a seed reproduces the run's mix, not its exact timing.
 */
#include <dirent.h>
#include <time.h>

#include "fuzz.h"

/* ---- the oracle pool (thread 0) ---------------------------------------- */

/*
 * Whether key @k may show an older generation, or come back after it went:
 * an attach without format happened since its last change, or is under
 * way, and may have replayed its records (DROP and REPLACE are not logged;
 * nvme-format.rst). A change made while an attach replays does not stop
 * the replay from bringing the key back after it. Or a detach is under
 * way: a block only on that device is a miss to GET but still there to
 * PUT (-EEXIST) until the detach forgets it.
 */
static bool or_lax(struct fz_thr *t, int k)
{
	return atomic_load(&fz->restoring) || atomic_load(&fz->detaching) ||
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
			fz_buf_of(t, i) : NULL);
	memset(&b, 0, sizeof(b));
	b.blocks = (__u64)(uintptr_t)e;
	b.count = n;
	b.flags = flags;
	return fz_ioctl(t, FD_POOL, t->ofd, cmd, &b);
}

static void or_put(struct fz_thr *t, const int *keys, int n, long epoch)
{
	struct kvtier_block *e = t->ents;
	__u32 flags = fz_pct(t, 40) ? KVTIER_PUT_REPLACE : 0;
	__u64 gens[FZ_NBUF];
	int i, bad = -1;

	for (i = 0; i < n; i++) {
		gens[i] = ++t->gen;
		kst_fill(fz_buf_of(t, i), OR_BS, keys[i], OR_K1, gens[i]);
	}
	/* one buffer that faults: that entry must change nothing */
	if (fz_pct(t, 10))
		bad = fz_rn(t, n);
	for (i = 0; i < n; i++)
		kst_blk(&e[i], keys[i], OR_K1, fz_buf_of(t, i));
	if (bad >= 0)
		e[bad].buf = fz_bad_ptr(t, OR_BS, false) ?: FZ_KPTR;
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

/* A pinned block reads right through a mapping. */
static void or_map_check(struct fz_thr *t, int k, __u64 addr)
{
	char *map;

	map = mmap(NULL, OR_BS, PROT_READ, MAP_SHARED, t->ofd, addr * OR_BS);
	atomic_fetch_add(&fz->calls, 1);
	if (map == MAP_FAILED) {
		fz_failf(t, "oracle mmap of a pinned block: %s",
			 strerror(errno));
		return;
	}
	if (fz_probe(map, fz_buf_of(t, 0), OR_BS))
		fz_failf(t, "oracle: SIGBUS on pinned block %llu",
			 (unsigned long long)addr);
	else
		or_seen(t, k, "mmap", 0, fz_buf_of(t, 0));
	munmap(map, OR_BS);
}

static void or_pin(struct fz_thr *t, int k)
{
	struct kvtier_block *e = t->ents;

	if (or_batch(t, KVTIER_IOC_PIN, &k, 1, 0))
		return;
	or_seen(t, k, "PIN", e[0].status, NULL);
	if (e[0].status)
		return;
	t->keys[k].pins++;
	or_map_check(t, k, e[0].addr);
}

/*
 * After a LOOKUP with PIN: the leading entries with status 0 are the
 * prefix, each pinned, in DRAM (or HBM), and readable through a mapping.
 */
static void or_lookup_pinned(struct fz_thr *t, const int *keys, int n)
{
	struct kvtier_block e[FZ_NBUF];
	int i;

	memcpy(e, t->ents, n * sizeof(*e));
	for (i = 0; i < n && !e[i].status; i++) {
		t->keys[keys[i]].pins++;
		if (e[i].tier != KVTIER_TIER_DRAM &&
		    e[i].tier != KVTIER_TIER_HBM)
			fz_failf(t, "oracle LOOKUP PIN key %d: pinned in tier %u",
				 keys[i], e[i].tier);
		else
			or_map_check(t, keys[i], e[i].addr);
	}
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
	int keys[FZ_NBUF], n = 1 + fz_rn(t, 4), i, k;
	long epoch = atomic_load(&fz->restore_epoch);
	unsigned int op = fz_rn(t, 100);

	atomic_fetch_add(&fz->oracle_ops, 1);
	for (i = 0; i < n; i++)
		keys[i] = fz_rn(t, OR_KEYS);
	if (op < 40) {
		or_put(t, keys, n, epoch);
	} else if (op < 70) {
		for (i = 0; i < n; i++)
			memset(fz_buf_of(t, i), 0xee, OR_BS);
		if (or_batch(t, KVTIER_IOC_GET, keys, n, 0))
			return;
		for (i = 0; i < n; i++)
			or_seen(t, keys[i], "GET", e[i].status, fz_buf_of(t, i));
	} else if (op < 80) {
		__u32 flags = fz_rn(t, 4) & KST_LOOKUP_FLAGS;

#ifdef KVTIER_LOOKUP_PIN
		if (or_pinned(t) + n < OR_DRAM / 3 && fz_pct(t, 40))
			flags |= KVTIER_LOOKUP_PIN;
#endif
		if (or_batch(t, KVTIER_IOC_LOOKUP, keys, n, flags))
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
#ifdef KVTIER_LOOKUP_PIN
		if (flags & KVTIER_LOOKUP_PIN)
			or_lookup_pinned(t, keys, n);
#endif
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
		if (k == OR_KEYS || fz_pct(t, 20))
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
		memset(fz_buf_of(t, 0), 0xee, OR_BS);
		if (!or_batch(t, KVTIER_IOC_GET, &k, 1, 0))
			or_seen(t, k, "final GET", t->ents[0].status,
				fz_buf_of(t, 0));
		while (t->keys[k].pins) {
			int pins = t->keys[k].pins;

			or_unpin(t, k);
			if (t->keys[k].pins == pins)
				break;
		}
	}
}

/* ---- the loop ---------------------------------------------------------- */

/* Run op @fn, saying so for the watchdog. */
#define FZ_OP(t, fn)			\
	do {				\
		(t)->in_op = #fn;	\
		fn(t);			\
	} while (0)

void fz_step(struct fz_thr *t)
{
	unsigned int op = fz_rn(t, 1000);

	if (t->id == 0 && !t->child && op < 250) {
		FZ_OP(t, op_oracle);
		return;
	}
	op = fz_rn(t, 1000);
	if (op < 420)
		FZ_OP(t, fz_op_batch);
	else if (op < 450)
		FZ_OP(t, fz_op_reserve);
	else if (op < 505)
		FZ_OP(t, fz_op_stat_sync);
	else if (op < 520)
		FZ_OP(t, fz_op_events);
	else if (op < 600)
		FZ_OP(t, fz_op_create);
	else if (op < 650)
		FZ_OP(t, fz_op_open);
	else if (op < 680)
		FZ_OP(t, fz_op_destroy);
	else if (op < 700)
		FZ_OP(t, fz_op_nvme_stat);
	else if (op < 720)
		FZ_OP(t, fz_op_api);
	else if (op < 820)
		FZ_OP(t, fz_op_raw);
	else if (op < 880)
		FZ_OP(t, fz_op_fds);
	else if (op < 960)
		FZ_OP(t, fz_op_mmap);
	else if (op < 963 && fz_dev && !t->child)
		FZ_OP(t, fz_op_nvme);
	else if (op < 966 && !t->child)
		FZ_OP(t, fz_op_fork);
	else
		FZ_OP(t, fz_op_batch);
}

static int thr_init(struct fz_thr *t, int id)
{
	int i;

	memset(t, 0, sizeof(*t));
	t->id = id;
	t->in_cmd = FZ_NO_CMD;
	t->rng = fz_seed * 0x100000001b3ULL + id;
	t->ofd = -1;
	t->ctl = kst_ctl_open();
	t->ctl2 = kst_ctl_open();
	t->raw = kst_ctl_open_raw();
	t->nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
	t->bufs = fz_guarded(FZ_NBUF * FZ_BS_MAX / KST_PAGE, PROT_READ | PROT_WRITE);
	t->ents = (struct kvtier_block *)fz_guarded(fz_ents_bytes() / KST_PAGE,
						    PROT_READ | PROT_WRITE);
	t->meta = (struct kvtier_meta *)fz_guarded(fz_meta_bytes() / KST_PAGE,
						   PROT_READ | PROT_WRITE);
	t->ro = fz_guarded(1, PROT_READ);
	t->arg = fz_guarded(FZ_ARG_PAGES, PROT_READ | PROT_WRITE);
	t->gap = mmap(NULL, KST_PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		      -1, 0);
	for (i = 0; i < FZ_SLOTS; i++)
		t->s[i].fd = -1;
	if (t->ctl < 0 || t->ctl2 < 0 || t->raw < 0 || t->nullfd < 0 ||
	    !t->bufs || !t->ents || !t->meta || !t->ro || !t->arg ||
	    t->gap == MAP_FAILED)
		return -1;
	return 0;
}

static void thr_fini(struct fz_thr *t)
{
	int i;

	for (i = 0; i < FZ_MAPS; i++)
		fz_map_drop(t, i);
	for (i = 0; i < FZ_SLOTS; i++)
		fz_slot_close(t, i);
	close(t->ctl);
	close(t->ctl2);
	close(t->raw);
	close(t->nullfd);
}

static void *thr_run(void *arg)
{
	struct fz_thr *t = arg;

	t->tid = (int)gettid();
	for (t->call = 0; t->call < t->ncalls && !atomic_load(&fz->stop);
	     t->call++)
		fz_step(t);
	if (t->id == 0)
		FZ_OP(t, oracle_final);
	t->in_op = "done";
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
/*
 * No call ends for FZ_STALL_S seconds (KVTIER_FUZZ_STALL_S): a hang, unless
 * the process used CPU time meanwhile (a slow call, as on a debug kernel
 * under emulation), which may go on to five times as long.
 */
#define FZ_STALL_S	30

/* The process's CPU time so far (all its threads), in clock ticks. */
static unsigned long long fz_cpu_ticks(void)
{
	unsigned long long ut = 0, st = 0;
	char buf[1024], *p;

	if (kst_read_file("/proc/self/stat", buf, sizeof(buf)) <= 0)
		return 0;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return 0;
	return ut + st;
}

/* What each thread not done yet is doing. */
static void fz_stall_report(struct __test_metadata *_metadata,
			    struct fz_thr *thr, const bool *joined, int nthr)
{
	char path[64];
	int i;

	for (i = 0; i < nthr; i++) {
		if (joined[i])
			continue;
		TH_LOG("thread %d (tid %d): call %ld of %ld, in %s, ioctl %s",
		       i, thr[i].tid, thr[i].call, thr[i].ncalls,
		       thr[i].in_op ?: "-", thr[i].in_cmd == FZ_NO_CMD ?
		       "none" : fz_cmd_name(thr[i].in_cmd));
		snprintf(path, sizeof(path), "/proc/self/task/%d/stat",
			 thr[i].tid);
		kst_dump_state(path);
	}
}

FIXTURE(fuzz) {
	int ctl;
	bool attached_before;
	int nbefore;
	long long counted_before;
	char (*before)[KVTIER_NAME_MAX];
	char clean_first[8];	/* the parameter, put back at the end */
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
	fz_meta = kst_supported(KVTIER_F_META);

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
	/* fz_op_create() flips it: pools with and without a clean list. */
	if (kst_read_file(KST_PARAM_DIR "/policy_clean_first",
			  self->clean_first, sizeof(self->clean_first)) <= 0)
		self->clean_first[0] = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fz_sigbus;
	sa.sa_flags = SA_NODEFER | SA_SIGINFO;
	ASSERT_EQ(0, sigaction(SIGBUS, &sa, NULL));
}

FIXTURE_TEARDOWN(fuzz)
{
	if (self->clean_first[0])
		kst_write_str(KST_PARAM_DIR "/policy_clean_first",
			      self->clean_first);
	free(self->before);
	close(self->ctl);
	munmap(fz, sizeof(*fz));
}

/* Where the threads' time in ioctls went, the costliest commands first. */
static void fz_time_report(const struct fz_thr *thr, int nthr)
{
	static const unsigned int nrs[FZ_CMD_SLOTS] = {
		0, 1, 2, 3, 4, 5, 6, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15,
		0x16, 0x17, 0xff,
	};
	__u64 n[FZ_CMD_SLOTS] = { 0 }, ns[FZ_CMD_SLOTS] = { 0 };
	__u64 max[FZ_CMD_SLOTS] = { 0 };
	bool shown[FZ_CMD_SLOTS] = { false };
	int i, k, best, lines;

	for (i = 0; i < nthr; i++)
		for (k = 0; k < FZ_CMD_SLOTS; k++) {
			n[k] += thr[i].cmd_n[k];
			ns[k] += thr[i].cmd_ns[k];
			if (thr[i].cmd_max_ns[k] > max[k])
				max[k] = thr[i].cmd_max_ns[k];
		}
	for (lines = 0; lines < 6; lines++) {
		for (best = -1, k = 0; k < FZ_CMD_SLOTS; k++)
			if (!shown[k] && n[k] && (best < 0 || ns[k] > ns[best]))
				best = k;
		if (best < 0)
			break;
		shown[best] = true;
		fprintf(stderr, "# fuzz: ioctl %s: %llu calls, %.1f s, longest %.0f ms\n",
			fz_cmd_name(nrs[best]), (unsigned long long)n[best],
			ns[best] / 1e9, max[best] / 1e6);
	}
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
	/* two thirds of the case's timeout (KVTIER_TEST_TIMEOUT_MIN raises it) */
	long secs_max = (long)fz_env("KVTIER_FUZZ_SECS",
				     _metadata->timeout * 2 / 3);
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
		unsigned long long cpu = 0;
		int stall = (int)fz_env("KVTIER_FUZZ_STALL_S", FZ_STALL_S);

		for (;;) {
			usleep(200000);
			for (done = 0, i = 0; i < nthr; i++) {
				if (!joined[i] && !pthread_tryjoin_np(th[i], NULL))
					joined[i] = true;
				done += joined[i];
			}
			if (done == nthr)
				break;
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if (secs_max > 0 && t1.tv_sec - t0.tv_sec >= secs_max &&
			    !atomic_exchange(&fz->stop, true))
				fprintf(stderr, "# fuzz: %ld s are up: the threads stop\n",
					secs_max);
			now = atomic_load(&fz->calls);
			still = now == last ? still + 1 : 0;
			last = now;
			if (still == stall * 5) {
				TH_LOG("no call ended for %d s", stall);
				fz_stall_report(_metadata, thr, joined, nthr);
				/* CPU time used in the stall: slow, not stuck */
				if (fz_cpu_ticks() - cpu >= (unsigned long long)
				    sysconf(_SC_CLK_TCK)) {
					TH_LOG("it runs: up to %d s more",
					       4 * stall);
					continue;
				}
			}
			if (still == 1)
				cpu = fz_cpu_ticks();
			if (still == stall * 5 || still >= stall * 25) {
				TH_LOG("a hang: stacks follow");
				kst_dump_stacks(getpid(), 0);
				/* last, so that a log's tail says where it hung */
				TH_LOG("a hang: no call ended for %d s", still / 5);
				fz_stall_report(_metadata, thr, joined, nthr);
				fz_report(_metadata);
				ASSERT_TRUE(false);
			}
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	fprintf(stderr,
		"# fuzz: %ld calls (%ld in %ld children, %ld killed) in %.1f s, %.0f calls/s; oracle %ld ops, %ld hits; nvme %ld attaches, %ld detaches; %ld pointers moved into mapped memory made to fault\n",
		atomic_load(&fz->calls), atomic_load(&fz->child_calls),
		atomic_load(&fz->forks), atomic_load(&fz->kills), secs,
		(double)atomic_load(&fz->calls) / secs,
		atomic_load(&fz->oracle_ops), atomic_load(&fz->oracle_hits),
		atomic_load(&fz->attaches), atomic_load(&fz->detaches),
		atomic_load(&fz->ptrs_moved));
	fz_time_report(thr, nthr);

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
