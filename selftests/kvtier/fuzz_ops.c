// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier ioctl fuzzer, the operations: pool slots, the control commands
 * (API, create, open, destroy, NVMe attach, detach and stat, any ioctl
 * number), the block commands on the fuzzed pools, fds and mappings, and
 * forked children killed with SIGKILL in the middle of a command.
 */
#define KST_NO_HARNESS

#include <time.h>

#include "fuzz.h"

/* ---- pool slots -------------------------------------------------------- */

void fz_slot_close(struct fz_thr *t, int i)
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

	fz_slot_close(t, i);
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
	int i, start = fz_rn(t, FZ_SLOTS);

	for (i = 0; i < FZ_SLOTS; i++)
		if (t->s[(start + i) % FZ_SLOTS].fd >= 0)
			return (start + i) % FZ_SLOTS;
	return -1;
}

static const char *pick_name(struct fz_thr *t)
{
	return fz_names[fz_rn(t, FZ_NAMES)];
}

/* ---- control commands -------------------------------------------------- */

void fz_op_api(struct fz_thr *t)
{
	struct kvtier_api a, out;
	bool normal;
	bool raw = fz_pct(t, 50);
	int fd = raw ? t->raw : t->ctl;
	int ret;

	memset(&a, 0, sizeof(a));
	a.api = KVTIER_API_VERSION;
	a.features = fz_pct(t, 80) ? KST_F_KNOWN & fz_rnd(t) : fz_rnd(t);
	/* the handshaken fd says EBUSY; the raw one is not handshaken */
	ret = fz_issue(t, raw ? FD_RAW : FD_CTL, fd, KVTIER_IOC_API, &a,
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
		       fz_nonzero(out.reserved, sizeof(out.reserved))))
		fz_failf(t, "API: outputs (supported %#llx features %#llx)",
			 (unsigned long long)out.supported,
			 (unsigned long long)out.features);
}

void fz_op_create(struct fz_thr *t)
{
	struct kvtier_pool_create c, out;
	static const __u64 bss[] = { 4096, 4096, 4096, 4096, 8192, 8192,
				     16384, 65536 };
	bool normal;
	int ret, i;

	kst_create_init(&c, pick_name(t), bss[fz_rn(t, 8)], 1 + fz_rn(t, 64), 0);
	c.dram_blocks = fz_rn(t, c.capacity + 1);
	if (c.dram_blocks > 16)
		c.dram_blocks = 16;
	c.mode = fz_rn(t, 2) ? 0600 : 0666;
	if (fz_pct(t, 40))
		c.flags |= KVTIER_POOL_OPEN_EXISTING;
	if (fz_pct(t, 20))
		c.flags |= KVTIER_POOL_RDONLY;
	if (fz_pct(t, 10))
		c.flags |= KVTIER_POOL_FAULT_NOLOAD;
	if (fz_pct(t, 10))
		c.numa_node = fz_rn(t, 2);
	/* Layer-wise pools (KVTIER_F_PARTS), and parts it refuses. */
	if (fz_pct(t, 20))
		c.parts = fz_rn(t, 4) ? 2 + fz_rn(t, 15) : fz_rn(t, 300);
	/*
	 * An admin's switch: the pools that store their first block from
	 * now on keep their blocks with an NVMe copy on a list of their own.
	 */
	if (fz_pct(t, 25))
		kst_write_str(KST_PARAM_DIR "/policy_clean_first",
			      fz_rn(t, 2) ? "Y" : "N");
	ret = fz_issue(t, FD_CTL, fz_pct(t, 90) ? t->ctl : t->ctl2,
		       KVTIER_IOC_POOL_CREATE, &c, sizeof(c), &out, &normal);
	if (ret)
		return;
	if (out.fd < 0) {
		fz_failf(t, "POOL_CREATE: 0 and fd %d", out.fd);
		return;
	}
	i = fz_rn(t, FZ_SLOTS);
	slot_take(t, i, out.fd, out.flags & KVTIER_POOL_RDONLY);
	(void)normal;
}

void fz_op_open(struct fz_thr *t)
{
	struct kvtier_pool_open o, out;
	bool normal;
	int ret;

	memset(&o, 0, sizeof(o));
	kst_set_name(o.name, pick_name(t));
	o.flags = fz_pct(t, 30) ? KVTIER_POOL_RDONLY : 0;
	o.fd = -1;
	ret = fz_issue(t, FD_CTL, t->ctl, KVTIER_IOC_POOL_OPEN, &o, sizeof(o),
		       &out, &normal);
	if (ret)
		return;
	if (out.fd < 0) {
		fz_failf(t, "POOL_OPEN: 0 and fd %d", out.fd);
		return;
	}
	slot_take(t, fz_rn(t, FZ_SLOTS), out.fd, out.flags & KVTIER_POOL_RDONLY);
	(void)normal;
}

void fz_op_destroy(struct fz_thr *t)
{
	struct kvtier_pool_destroy d;
	bool normal;

	memset(&d, 0, sizeof(d));
	kst_set_name(d.name, pick_name(t));
	fz_issue(t, FD_CTL, t->ctl, KVTIER_IOC_POOL_DESTROY, &d, sizeof(d), NULL,
		 &normal);
}

void fz_op_nvme_stat(struct fz_thr *t)
{
	struct kvtier_nvme_stat s, out;
	bool normal;
	int ret;

	memset(&s, 0, sizeof(s));
	ret = fz_issue(t, FD_CTL, t->ctl, KVTIER_IOC_NVME_STAT, &s, sizeof(s),
		       &out, &normal);
	if (!ret && normal &&
	    (fz_nonzero(out.reserved, sizeof(out.reserved)) ||
	     out.attached > 1))
		fz_failf(t, "NVME_STAT: attached %u or reserved words set",
			 out.attached);
}

/*
 * Attaches and detaches of the process's threads one at a time. Not in a
 * child of fz_op_fork(): it has one thread, and its copy of the mutex
 * stays locked forever when another thread of the parent held it at the
 * fork.
 */
static void fz_nvme_lock_take(struct fz_thr *t)
{
	if (!t->child)
		pthread_mutex_lock(&fz_nvme_lock);
}

static void fz_nvme_lock_release(struct fz_thr *t)
{
	if (!t->child)
		pthread_mutex_unlock(&fz_nvme_lock);
}

void fz_op_nvme(struct fz_thr *t)
{
	struct kvtier_nvme_attach a;
	struct kvtier_nvme_detach d;
	char path[300];
	int ret;

	if (fz_pct(t, 50)) {
		memset(&d, 0, sizeof(d));
		if (fz_pct(t, 10))
			fz_mutate(t, &d, sizeof(d));
		atomic_fetch_add(&fz->detaching, 1);
		fz_nvme_lock_take(t);
		ret = fz_ioctl(t, FD_CTL, t->ctl, KVTIER_IOC_NVME_DETACH, &d);
		fz_nvme_lock_release(t);
		if (!ret)
			atomic_fetch_add(&fz->detaches, 1);
		atomic_fetch_sub(&fz->detaching, 1);
		return;
	}
	memset(&a, 0, sizeof(a));
	switch (fz_rn(t, 10)) {
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
	if (fz_pct(t, 5))
		a.path = fz_bad_ptr(t, 16, false);
	/* Mostly a fresh store: an old one may bring back dropped keys. */
	a.flags = fz_pct(t, 75) ? KVTIER_NVME_FORMAT : 0;
	if (a.flags && fz_pct(t, 30))
		a.region_kib = 1024U << fz_rn(t, 4);
	if (fz_pct(t, 10)) {
		/* not through fz_issue(): the flags sent must be known here */
		fz_mutate(t, &a.flags, sizeof(a) - offsetof(typeof(a), flags));
		a.flags |= KVTIER_NVME_FORMAT * fz_rn(t, 2);
	}
	if (!(a.flags & KVTIER_NVME_FORMAT)) {
		atomic_fetch_add(&fz->restoring, 1);
		atomic_fetch_add(&fz->restore_epoch, 1);
	}
	fz_nvme_lock_take(t);
	ret = fz_ioctl(t, FD_CTL, t->ctl, KVTIER_IOC_NVME_ATTACH, &a);
	fz_nvme_lock_release(t);
	if (!ret)
		atomic_fetch_add(&fz->attaches, 1);
	if (!(a.flags & KVTIER_NVME_FORMAT)) {
		atomic_fetch_add(&fz->restore_epoch, 1);
		atomic_fetch_sub(&fz->restoring, 1);
	}
}

/* Any ioctl number on any fd, with a random argument. */
void fz_op_raw(struct fz_thr *t)
{
	unsigned long cmd;
	enum fz_fdkind kind;
	int fd, i;
	void *p;

	switch (fz_rn(t, 5)) {
	case 0:
		fd = t->ctl;
		kind = FD_CTL;
		break;
	case 1:
		fd = t->raw;
		kind = FD_RAW;
		break;
	case 2:
		fd = fz_pct(t, 50) ? t->nullfd : FZ_BADFD;
		kind = FD_OTHER;
		break;
	default:
		i = pick_slot(t);
		fd = i < 0 ? t->ctl : t->s[i].fd;
		kind = i < 0 ? FD_CTL : FD_POOL;
		break;
	}
	cmd = _IOC(fz_rn(t, 4), fz_pct(t, 90) ? KVTIER_IOC_MAGIC : fz_rn(t, 256),
		   fz_pct(t, 80) ? fz_rn(t, 0x20) : fz_rn(t, 256), fz_rn(t, 1 << 14));
	memset(t->arg, 0, FZ_ARG_PAGES * KST_PAGE);
	if (fz_pct(t, 50))
		for (i = 0; i < 64; i++)
			t->arg[fz_rn(t, FZ_ARG_PAGES * KST_PAGE)] = fz_rnd(t);
	p = fz_pct(t, 80) ? t->arg : (void *)(uintptr_t)fz_bad_ptr(t, 64, true);
	/*
	 * A random number may be a real command with a valid argument:
	 * creating or opening a pool leaves an fd; batches may use the
	 * zeroed array as is. The errno check is what this is for.
	 */
	if (kind == FD_CTL && _IOC_TYPE(cmd) == KVTIER_IOC_MAGIC &&
	    (_IOC_NR(cmd) == 1 || _IOC_NR(cmd) == 2 || _IOC_NR(cmd) == 4 ||
	     _IOC_NR(cmd) == 5))
		return;	/* the structured ops cover them */
	/* An events fd it would make and lose: fz_op_events() covers it. */
	if (kind == FD_POOL && _IOC_TYPE(cmd) == KVTIER_IOC_MAGIC &&
	    _IOC_NR(cmd) == _IOC_NR(KVTIER_IOC_EVENTS))
		return;
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
	return fz_pct(t, 95) ? fz_rn(t, FZ_KEYS) : fz_rnd(t);
}

/*
 * The bytes [@off, @off + @len) of a block kst_fill() made for key
 * (@k0, @k1), as a GET with KVTIER_GET_PART returns them in @buf: the
 * header (words 0 to 2) checked when the range holds it, and the words of
 * the fill wholly in the range all of that header's fill (else of one
 * fill). -1 when right, else the index of a bad word.
 */
static long fz_check_part(const void *buf, __u64 off, __u64 len, __u64 k0,
			  __u64 k1)
{
	const __u64 golden = 0x9e3779b97f4a7c15ULL;
	__u64 i = (off + 7) / 8, end = (off + len) / 8, seed = 0, w, gen;
	const char *p = buf;
	bool have = false;

	if (!off && len >= 24) {
		memcpy(&gen, p, 8);
		memcpy(&w, p + 8, 8);
		if (w != k0)
			return 1;
		memcpy(&w, p + 16, 8);
		if (w != k1)
			return 2;
		seed = kst_mix(k0 ^ kst_mix(k1 ^ kst_mix(gen)));
		have = true;
	}
	/* Words 0 to 2 are the header, the fill's words follow. */
	if (i < 3)
		i = 3;
	for (; i < end; i++) {
		memcpy(&w, p + i * 8 - off, 8);
		if (!have) {
			seed = w ^ (i * golden);
			have = true;
		} else if (w != (seed ^ (i * golden))) {
			return i;
		}
	}
	return -1;
}

void fz_op_batch(struct fz_thr *t)
{
	static const unsigned long cmds[] = {
		KVTIER_IOC_PUT, KVTIER_IOC_PUT, KVTIER_IOC_GET, KVTIER_IOC_GET,
		KVTIER_IOC_LOOKUP, KVTIER_IOC_DROP, KVTIER_IOC_PIN,
		KVTIER_IOC_UNPIN,
	};
	unsigned long cmd = cmds[fz_rn(t, 8)];
	unsigned int nr = _IOC_NR(cmd);
	bool has_buf = nr == 0x10 || nr == 0x11;
	bool shared = false, normal, bad_ent = false, big;
	struct kvtier_meta *m = NULL;
	struct kvtier_block *e;
	struct kvtier_batch b, out;
	__u32 count, written, i, done, prefix;
	__u64 gens[FZ_NBUF];
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
	if (nr == 0x10 && fz_fd_block_size(fd) != bs)
		return;
	big = bs > FZ_BS_MAX;
	if (big)
		bs = FZ_BS_MAX;	/* a mutated create: buffers too short */

	switch (fz_rn(t, 20)) {
	case 0:
		count = KVTIER_BATCH_MAX;
		shared = true;
		break;
	case 1:
		count = 9 + fz_rn(t, 120);
		shared = true;
		break;
	case 2:
		/*
		 * A count the kernel refuses, unless fz_issue() mutates it into
		 * one it takes: then more entries than buffers go in, so
		 * they share buffer 0 and key 7 like the big batches above
		 * (entry i and i + FZ_NBUF would otherwise share a buffer
		 * holding only the later one's key: a PUT storing one key's
		 * bytes under another, blamed on the kernel by later GETs).
		 */
		count = fz_rn(t, 2) ? 0 : KVTIER_BATCH_MAX + 1 + fz_rn(t, 4);
		shared = count > 0;
		break;
	default:
		count = 1 + fz_rn(t, FZ_NBUF);
		break;
	}
	/*
	 * Blocks larger than the buffers: each entry has the kernel allocate
	 * (and zero) a whole block before its copy faults. Thousands of them
	 * kept one PUT busy for minutes under emulation, a hang to the
	 * watchdog; a few show the same.
	 */
	if (big && count > FZ_NBUF && count <= KVTIER_BATCH_MAX)
		count = FZ_NBUF;
	e = t->ents;
	written = count < FZ_ENTS ? count : FZ_ENTS;
	/*
	 * Records (KVTIER_F_META) with a quarter of the batches: in for PUT,
	 * each the one of its entry's key and bytes (fz_rec()), out for GET
	 * and LOOKUP, where DROP, PIN and UNPIN take none (-EINVAL).
	 */
	if (fz_meta && count && count <= FZ_ENTS && fz_pct(t, 25)) {
		m = fz_meta_tail(t, count);
		memset(m, 0xa5, count * sizeof(*m));
	}
	for (i = 0; i < written; i++) {
		__u64 k0 = shared && nr == 0x10 ? 7 : fz_key0(t);

		kst_blk(&e[i], k0, 0, NULL);
		if (has_buf) {
			e[i].buf = (__u64)(uintptr_t)fz_buf_of(t, shared ? 0 : i);
			if (nr == 0x10 && (!shared || i == 0)) {
				kst_fill(fz_buf_of(t, shared ? 0 : i), bs, k0, 0,
					 ++t->gen);
				gens[shared ? 0 : i] = t->gen;
			}
			if (m && nr == 0x10) {
				fz_rec(&m[i], k0, 0, gens[shared ? 0 : i]);
				/* too long: the entry's -EMSGSIZE */
				if (fz_pml(t, 20))
					m[i].len = KVTIER_META_MAX + 1 +
						   fz_rn(t, 1000);
			}
			if (fz_pml(t, 15)) {
				e[i].buf = fz_bad_ptr(t, bs, nr != 0x10) ?: 8;
				bad_ent = true;
			}
		} else if (fz_pml(t, 5)) {
			e[i].buf = (__u64)(uintptr_t)fz_buf_of(t, 0);
			bad_ent = true;
		}
		/* nsegs is only a field of PUT and GET (checked in sg.c) */
		if (!has_buf && fz_pml(t, 5)) {
			e[i].nsegs = fz_interesting(t) | 1;
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
	if (nr == 0x10 && fz_pct(t, 30))
		b.flags = KVTIER_PUT_REPLACE;
	if (nr == 0x12)
		b.flags = fz_rn(t, 8) & KST_LOOKUP_FLAGS;
	/* A range of each block (KVTIER_GET_PART), or one it refuses. */
	if (nr == 0x11 && fz_pct(t, 25)) {
		b.flags = KVTIER_GET_PART;
		b.part_off = fz_rn(t, 2) ? 0 : fz_rn(t, bs);
		b.part_len = 1 + fz_rn(t, bs - b.part_off);
		if (fz_pct(t, 5)) {
			b.part_len = fz_rn(t, 2) ? 0 : bs - b.part_off + 1 +
						      fz_rn(t, 4096);
			bad_ent = true;
		}
	} else if (fz_pct(t, 2)) {
		/* the fields without the flag */
		b.part_off = fz_rn(t, 2) ? 1 + fz_rn(t, 4096) : 0;
		b.part_len = b.part_off ? 0 : 1 + fz_rn(t, 4096);
		bad_ent = true;
	}
	if (fz_pct(t, 4)) {
		b.flags = 1u << fz_rn(t, 32);
		bad_ent = true;
	}
	if (fz_pct(t, 3)) {
		/* the array straddles the guard page, or read-only */
		if (count && count <= FZ_ENTS && fz_rn(t, 2)) {
			memmove(fz_ents_tail(t, count / 2 + 1), e,
				(count / 2 + 1) * sizeof(*e));
			b.blocks = (__u64)(uintptr_t)fz_ents_tail(t, count / 2 + 1);
		} else {
			b.blocks = fz_bad_ptr(t, count * sizeof(*e), true);
		}
		bad_ent = true;
	}
	if (m) {
		b.meta = (__u64)(uintptr_t)m;
		if (nr > 0x12)
			bad_ent = true;		/* takes no records */
		if (fz_pct(t, 3)) {
			/* a record with a flag: the batch's -EINVAL */
			m[fz_rn(t, count)].flags = 1u << fz_rn(t, 32);
			bad_ent = true;
		}
		if (fz_pct(t, 3)) {
			/*
			 * unreadable, or read-only (GET, LOOKUP: -EFAULT); or
			 * none (0), still a batch whose outputs go unchecked
			 */
			b.meta = fz_bad_ptr(t, count * sizeof(*m), true);
			bad_ent = true;
		}
	}
	/*
	 * Another thread may close this fd and have its number reused by
	 * another pool: the byte check below holds only if the fd is the
	 * pool of that block size before and after the GET.
	 */
	bs_seen = nr == 0x11 ? fz_fd_block_size(fd) : 0;
	ret = fz_issue(t, FD_POOL, fd, cmd, &b, sizeof(b), &out, &normal);
	if (nr == 0x11 && fz_fd_block_size(fd) != bs_seen)
		bs_seen = 0;
	if (b.blocks != (__u64)(uintptr_t)e && count && count <= FZ_ENTS)
		memset(fz_ents_tail(t, count / 2 + 1), 0,
		       (count / 2 + 1) * sizeof(*e));
	if (!ret && normal && b.meta && nr > 0x12)
		fz_failf(t, "%s took records (struct kvtier_batch.meta)",
			 fz_cmd_name(nr));
	if (ret || !normal || bad_ent || b.blocks != (__u64)(uintptr_t)e)
		return;

	/* Outputs agree with themselves. */
	done = 0;
	prefix = 0;
	for (i = 0; i < count; i++) {
		if (!fz_status_ok(nr, e[i].status)) {
			fz_failf(t, "%s entry %u: status %d not documented",
				 fz_cmd_name(nr), i, e[i].status);
			return;
		}
		if (e[i].status) {
			in_prefix = false;
			if (e[i].addr != KVTIER_ADDR_NONE ||
			    e[i].tier != KVTIER_TIER_NONE)
				fz_failf(t, "%s entry %u: status %d, addr %#llx tier %u",
					 fz_cmd_name(nr), i, e[i].status,
					 (unsigned long long)e[i].addr,
					 e[i].tier);
			if (m && nr != 0x10 &&
			    fz_nonzero(&m[i], sizeof(m[i])))
				fz_failf(t, "%s entry %u: status %d, record len %u not empty",
					 fz_cmd_name(nr), i, e[i].status,
					 m[i].len);
			continue;
		}
		if (m && nr != 0x10 &&
		    (m[i].len > KVTIER_META_MAX || m[i].flags ||
		     fz_nonzero(m[i].data + m[i].len,
				KVTIER_META_MAX - m[i].len))) {
			fz_failf(t, "%s entry %u: record len %u flags %#x, or bytes past it",
				 fz_cmd_name(nr), i, m[i].len, m[i].flags);
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
				 fz_cmd_name(nr), i,
				 (unsigned long long)e[i].addr, e[i].tier,
				 t->s[slot].cap);
		/* A range of a block is of one fill of its key. */
		if (nr == 0x11 && b.flags & KVTIER_GET_PART) {
			if (!shared && bs_seen == bs &&
			    fz_check_part(fz_buf_of(t, i), b.part_off,
					  b.part_len, e[i].key[0],
					  e[i].key[1]) != -1)
				fz_failf(t, "GET part [%u, +%u) key %#llx:%#llx: torn, or another key's bytes",
					 b.part_off, b.part_len,
					 (unsigned long long)e[i].key[0],
					 (unsigned long long)e[i].key[1]);
			continue;
		}
		/* Any pool: a block GET returns is whole and of its key. */
		if (nr == 0x11 && !shared && t->s[slot].bs <= FZ_BS_MAX &&
		    bs_seen == bs &&
		    kst_check(fz_buf_of(t, i), bs, e[i].key[0], e[i].key[1],
			      NULL) != -1)
			fz_failf(t, "GET key %#llx:%#llx (bs %llu, addr %llu): bytes of key %#llx:%#llx gen %llu, or torn",
				 (unsigned long long)e[i].key[0],
				 (unsigned long long)e[i].key[1],
				 (unsigned long long)bs,
				 (unsigned long long)e[i].addr,
				 (unsigned long long)((__u64 *)fz_buf_of(t, i))[1],
				 (unsigned long long)((__u64 *)fz_buf_of(t, i))[2],
				 (unsigned long long)((__u64 *)fz_buf_of(t, i))[0]);
		/* ... and the record is the one PUT with those bytes. */
		else if (nr == 0x11 && m && !shared &&
			 t->s[slot].bs <= FZ_BS_MAX && bs_seen == bs &&
			 !fz_rec_ok(&m[i], fz_buf_of(t, i)))
			fz_failf(t, "GET key %#llx:%#llx gen %llu: record len %u is not its bytes'",
				 (unsigned long long)e[i].key[0],
				 (unsigned long long)e[i].key[1],
				 (unsigned long long)((__u64 *)fz_buf_of(t, i))[0],
				 m[i].len);
	}
	if (out.done != (nr == 0x12 ? prefix : done))
		fz_failf(t, "%s: done %u, entries say %u", fz_cmd_name(nr),
			 out.done, nr == 0x12 ? prefix : done);
}

/*
 * Fill a block this thread reserved on @fd through the fd's reservation
 * window, with its key's bytes; false if that did not work (another thread
 * closed the fd and its number now names another pool file: SIGBUS).
 */
static bool fz_fill_reserved(struct fz_thr *t, int fd, __u64 bs, __u32 cap,
			     const struct kvtier_block *e)
{
	bool ok;
	char *w;

	if (bs > FZ_BS_MAX)
		return false;
	w = mmap(NULL, bs, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)((cap + e->addr) * bs));
	atomic_fetch_add(&fz->calls, 1);
	if (w == MAP_FAILED)
		return false;
	kst_fill(fz_buf_of(t, 0), bs, e->key[0], e->key[1], ++t->gen);
	/* fz_probe() copies into the window as well */
	ok = !fz_probe(fz_buf_of(t, 0), w, bs);
	munmap(w, bs);
	return ok;
}

/*
 * Zero-copy store: RESERVE a few keys, fill every block reserved through
 * the fd's reservation window, then COMMIT it, ABORT it, or leave it to
 * the fd's release. Each is filled before any is committed, and only
 * filled ones are left: a mutated command that reaches another entry of
 * this fd (a stale one of t->ents) publishes its key's bytes too, which
 * the GETs of fz_op_batch() check as they check a PUT's. Another thread may close the fd meanwhile and
 * have its number reused: COMMIT and ABORT then find nothing (-ENOENT).
 */
void fz_op_reserve(struct fz_thr *t)
{
	struct kvtier_block *e = t->ents, *one;
	struct kvtier_batch b, out;
	int slot = pick_slot(t), fd, ret;
	__u32 n, i, cap, flags = 0;
	bool normal, filled[FZ_NBUF];
	__u64 bs, gens[FZ_NBUF];

	if (slot < 0)
		return;
	fd = t->s[slot].fd;
	bs = t->s[slot].bs;
	cap = t->s[slot].cap;
	n = 1 + fz_rn(t, FZ_NBUF);
	for (i = 0; i < n; i++)
		kst_blk(&e[i], fz_key0(t), 0, NULL);
	if (fz_pct(t, 20))
		flags = KVTIER_PUT_REPLACE;
	memset(&b, 0, sizeof(b));
	b.blocks = (__u64)(uintptr_t)e;
	b.count = n;
	b.flags = flags;
	ret = fz_issue(t, FD_POOL, fd, KVTIER_IOC_RESERVE, &b, sizeof(b), &out,
		       &normal);
	if (ret || !normal)
		return;
	for (i = 0; i < n; i++) {
		filled[i] = false;
		if (!fz_status_ok(0x1e, e[i].status)) {
			fz_failf(t, "RESERVE entry %u: status %d not documented",
				 i, e[i].status);
			return;
		}
		if (e[i].status)
			continue;
		if (e[i].addr >= cap || e[i].tier != KVTIER_TIER_DRAM) {
			fz_failf(t, "RESERVE entry %u: addr %#llx tier %u (capacity %u)",
				 i, (unsigned long long)e[i].addr, e[i].tier,
				 cap);
			return;
		}
		filled[i] = fz_fill_reserved(t, fd, bs, cap, &e[i]);
		gens[i] = t->gen;	/* the generation it was filled with */
	}
	for (i = 0; i < n; i++) {
		unsigned long cmd = fz_pct(t, 50) ? KVTIER_IOC_COMMIT :
						    KVTIER_IOC_ABORT;

		if (e[i].status)
			continue;
		if (!filled[i]) {
			/* Never left unfilled, nor kept in t->ents. */
			memset(&b, 0, sizeof(b));
			b.blocks = (__u64)(uintptr_t)&e[i];
			b.count = 1;
			ioctl(fd, KVTIER_IOC_ABORT, &b);
			atomic_fetch_add(&fz->calls, 1);
			memset(&e[i], 0, sizeof(e[i]));
			continue;
		}
		if (fz_pct(t, 15))
			continue;		/* the fd's release ends it */
		/*
		 * The entry alone, against the guard page: a count mutated
		 * larger faults (-EFAULT) instead of reaching other entries.
		 */
		one = fz_ents_tail(t, 1);
		*one = e[i];
		memset(&b, 0, sizeof(b));
		b.blocks = (__u64)(uintptr_t)one;
		b.count = 1;
		b.flags = cmd == KVTIER_IOC_COMMIT ? flags : 0;
		/* A COMMIT may give the block its record (fz_rec()). */
		if (fz_meta && cmd == KVTIER_IOC_COMMIT && fz_pct(t, 30)) {
			fz_rec(fz_meta_tail(t, 1), e[i].key[0], e[i].key[1],
			       gens[i]);
			b.meta = (__u64)(uintptr_t)fz_meta_tail(t, 1);
		}
		ret = fz_issue(t, FD_POOL, fd, cmd, &b, sizeof(b), &out,
			       &normal);
		if (ret || !normal)
			continue;
		if (!fz_status_ok(_IOC_NR(cmd), one->status))
			fz_failf(t, "%s: status %d not documented",
				 fz_cmd_name(_IOC_NR(cmd)), one->status);
		/* Not published: give it back. */
		if (one->status == -EEXIST || one->status == -EBUSY ||
		    one->status == -EMSGSIZE) {
			b.flags = 0;
			b.meta = 0;
			fz_issue(t, FD_POOL, fd, KVTIER_IOC_ABORT, &b, sizeof(b),
				 &out, &normal);
		}
	}
}

void fz_op_stat_sync(struct fz_thr *t)
{
	struct kvtier_pool_stat st, sout;
	struct kvtier_sync sy, yout;
	int slot = pick_slot(t), ret;
	bool normal;

	if (slot < 0)
		return;
	if (fz_pct(t, 80)) {
		memset(&st, 0, sizeof(st));
		ret = fz_issue(t, FD_POOL, t->s[slot].fd, KVTIER_IOC_STAT, &st,
			       sizeof(st), &sout, &normal);
		if (ret || !normal)
			return;
		if (sout.block_size != t->s[slot].bs ||
		    sout.capacity != t->s[slot].cap || sout.__pad ||
		    sout.__pad2 || sout.parts == 1 ||
		    sout.parts > KVTIER_PARTS_MAX ||
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
	ret = fz_issue(t, FD_POOL, t->s[slot].fd, KVTIER_IOC_SYNC, &sy,
		       sizeof(sy), &yout, &normal);
	if (ret == -EBADF && normal && !t->s[slot].ro)
		fz_failf(t, "SYNC on a read-write fd: EBADF");
	if (!ret && normal && t->s[slot].ro)
		fz_failf(t, "SYNC on a read-only fd worked");
}

/* ---- events and the census --------------------------------------------- */

/* The events a read returned: whole records, each one of the kinds there are. */
static void fz_check_events(struct fz_thr *t, const struct kvtier_event *ev,
			    ssize_t n)
{
	ssize_t i;

	if (n % (ssize_t)sizeof(*ev)) {
		fz_failf(t, "events read: %zd bytes, not whole records", n);
		return;
	}
	for (i = 0; i < n / (ssize_t)sizeof(*ev); i++) {
		const struct kvtier_event *e = &ev[i];
		bool ok = e->seq && !e->flags &&
			  e->type >= KVTIER_EVENT_STORED &&
			  e->type <= KVTIER_EVENT_OVERFLOW &&
			  e->tier < KVTIER_NR_TIERS && e->from < KVTIER_NR_TIERS &&
			  (e->type == KVTIER_EVENT_OVERFLOW) == !!e->lost &&
			  (i == 0 || e->seq > ev[i - 1].seq);

		if (!ok)
			fz_failf(t, "event %zd: seq %llu type %u tier %u from %u reason %u lost %llu",
				 i, (unsigned long long)e->seq, e->type, e->tier,
				 e->from, e->reason,
				 (unsigned long long)e->lost);
	}
}

/*
 * EVENTS: an events fd, a few reads of every size and of bad buffers,
 * closed again. CENSUS: a page of keys from a random cursor, checked.
 */
void fz_op_events(struct fz_thr *t)
{
	struct kvtier_census_entry ent[64];
	struct kvtier_meta meta[64];
	struct kvtier_event ev[16];
	struct kvtier_census c, cout;
	struct kvtier_events e, eout;
	int slot = pick_slot(t), ret, i;
	bool normal;
	ssize_t n;

	if (slot < 0)
		return;
	if (fz_pct(t, 50)) {
		memset(&e, 0, sizeof(e));
		e.flags = KVTIER_EVENTS_NONBLOCK;
		if (fz_pct(t, 30)) {
			e.flags |= KVTIER_EVENTS_FROM;
			e.seq = 1 + fz_rn(t, 1 << 12);
		}
		ret = fz_issue(t, FD_POOL, t->s[slot].fd, KVTIER_IOC_EVENTS,
			       &e, sizeof(e), &eout, &normal);
		if (ret)
			return;
		if (eout.fd < 0) {
			fz_failf(t, "EVENTS: fd %d", eout.fd);
			return;
		}
		/* A mutated flag may have made it blocking. */
		fcntl(eout.fd, F_SETFL, O_NONBLOCK);
		for (i = 0; i < 3; i++) {
			size_t len = fz_pct(t, 10) ? fz_rn(t, sizeof(ev)) :
						     sizeof(ev);
			void *p = fz_pct(t, 5) ?
				  (void *)(uintptr_t)fz_bad_ptr(t, len, true) :
				  ev;

			n = read(eout.fd, p, len);
			if (n < 0 && errno != EAGAIN &&
			    !(errno == EINVAL && len < sizeof(ev[0])) &&
			    !(errno == EFAULT && p != ev))
				fz_failf(t, "events read of %zu: %s", len,
					 strerror(errno));
			if (n > 0 && p == ev)
				fz_check_events(t, ev, n);
		}
		close(eout.fd);
		return;
	}
	memset(&c, 0, sizeof(c));
	c.entries = (__u64)(uintptr_t)ent;
	c.count = fz_pct(t, 95) ? 1 + fz_rn(t, 64) : fz_rn(t, 64);
	c.cursor = fz_pct(t, 90) ? fz_rn(t, t->s[slot].cap + 1) :
				   t->s[slot].cap + fz_rn(t, 3);
	if (fz_pct(t, 30))
		c.meta = (__u64)(uintptr_t)meta;
	ret = fz_issue(t, FD_POOL, t->s[slot].fd, KVTIER_IOC_CENSUS, &c,
		       sizeof(c), &cout, &normal);
	if (ret || !normal)
		return;
	if (cout.done > c.count ||
	    (cout.cursor != KVTIER_ADDR_NONE &&
	     (cout.cursor <= c.cursor || cout.cursor >= t->s[slot].cap))) {
		fz_failf(t, "CENSUS from %llu: %u of %u, cursor %llu (capacity %u)",
			 (unsigned long long)c.cursor, cout.done, c.count,
			 (unsigned long long)cout.cursor, t->s[slot].cap);
		return;
	}
	for (i = 0; i < (int)cout.done; i++) {
		const struct kvtier_census_entry *k = &ent[i];

		if (k->addr < c.cursor || k->addr >= t->s[slot].cap ||
		    (i && k->addr <= ent[i - 1].addr) ||
		    k->tier < KVTIER_TIER_HBM || k->tier > KVTIER_TIER_NVME ||
		    (k->flags & ~(KVTIER_CENSUS_HBM | KVTIER_CENSUS_DRAM |
				  KVTIER_CENSUS_NVME | KVTIER_CENSUS_PINNED)) ||
		    (cout.cursor != KVTIER_ADDR_NONE && k->addr >= cout.cursor) ||
		    (c.meta && (meta[i].flags || meta[i].len > KVTIER_META_MAX)))
			fz_failf(t, "CENSUS entry %d: addr %llu tier %u flags %#x",
				 i, (unsigned long long)k->addr, k->tier,
				 k->flags);
	}
}

/* ---- fds and mappings -------------------------------------------------- */

void fz_op_fds(struct fz_thr *t)
{
	int i = fz_rn(t, FZ_SLOTS), j, fd;

	switch (fz_rn(t, 3)) {
	case 0:
		fz_slot_close(t, i);
		break;
	case 1:
		j = pick_slot(t);
		if (j < 0 || j == i)
			break;
		fd = fcntl(t->s[j].fd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0)
			break;
		fz_slot_close(t, i);
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

void fz_map_drop(struct fz_thr *t, int i)
{
	if (t->m[i].p)
		munmap(t->m[i].p, t->m[i].len);
	t->m[i].p = NULL;
}

void fz_op_mmap(struct fz_thr *t)
{
	int slot = pick_slot(t), i = fz_rn(t, FZ_MAPS), prot, flags;
	__u64 bs, blocks, off;
	size_t len;
	char *p;

	if (slot < 0)
		return;
	bs = t->s[slot].bs;
	switch (fz_rn(t, 4)) {
	case 0:
		fz_map_drop(t, i);
		return;
	case 1:
		/* touch: resident blocks read, others SIGBUS, nothing else */
		if (t->m[i].p) {
			char tmp[64];
			size_t at = (size_t)fz_rn(t, t->m[i].len / KST_PAGE) *
				    KST_PAGE;

			fz_probe(t->m[i].p + at, tmp, sizeof(tmp));
			if (fz_pct(t, 20) &&
			    !mprotect(t->m[i].p, t->m[i].len,
				      PROT_READ | PROT_WRITE))
				fz_failf(t, "mprotect(PROT_WRITE) of a pool mapping worked");
		}
		return;
	}
	if (t->s[slot].cap > (1u << 20) / 16 || bs > FZ_BS_MAX)
		return;	/* too big to map here */
	blocks = t->s[slot].cap;
	off = fz_rn(t, blocks);
	len = (size_t)(1 + fz_rn(t, blocks - off)) * bs;
	off *= bs;
	prot = PROT_READ;
	flags = fz_pct(t, 85) ? MAP_SHARED : MAP_PRIVATE;
	if (fz_pct(t, 8))
		prot |= PROT_WRITE;
	if (fz_pct(t, 5))
		len += bs;			/* past the end */
	if (fz_pct(t, 3))
		off += 1 + fz_rn(t, 4095);		/* unaligned */
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
	fz_map_drop(t, i);
	t->m[i].p = p;
	t->m[i].len = len;
	t->m[i].slot = slot;
	t->m[i].bs = bs;
	t->m[i].off = off;
}

/* ---- fork, and kill -9 mid-command ------------------------------------- */
void fz_op_fork(struct fz_thr *t)
{
	pid_t pid;
	int rc;

	pid = kst_fork();
	if (pid < 0)
		return;
	if (pid == 0) {
		long n = 10 + fz_rn(t, 60);

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
	if (fz_pct(t, 60)) {
		struct timespec ts = { 0, (long)fz_rn(t, 3000) * 1000 };

		nanosleep(&ts, NULL);
		kill(pid, SIGKILL);
		atomic_fetch_add(&fz->kills, 1);
	}
	rc = kst_wait(pid);
	if (rc != 0 && rc != 128 + SIGKILL)
		fz_failf(t, "child %d ended with %d", (int)pid, rc);
	fz_rn(t, 2);	/* keep the parent's sequence independent of timing */
}

