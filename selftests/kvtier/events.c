// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier cache events and the census (KVTIER_F_EVENTS): what a KV-aware
 * router reads to know what a node holds.
 *
 *  - every bad field of EVENTS and CENSUS, one a case, with its errno, and
 *    nothing made;
 *  - STORED, MOVED, REMOVED and CLEARED for PUT, REPLACE, DROP, eviction
 *    with and without NVMe, reads back from NVMe, detach and attach again,
 *    a copy that does not verify, HBM staging and its slots given back;
 *  - the census: by cursor, with records, and consistent with the events:
 *    a census taken while a writer runs, plus the events after its number,
 *    is the pool; and the tiers it tells are the ones LOOKUP tells;
 *  - bounded readers: a reader lapped by the ring gets one OVERFLOW record
 *    counting exactly what it lost; a reader that never reads, two
 *    thousand readers, readers killed mid-read, a pool gone under its
 *    readers (CLEARED, then end of file); poll(2) and io_uring reads.
 */
#include <poll.h>
#include <sys/resource.h>
#include <liburing.h>

#include "nvme_fixture.h"

#define EV_BS		(16 * KST_KIB)
#define EV_CAP		64U
#define EV_DRAM		8U
#define EV_K0		0x6576656e74737473ULL	/* "eventsts" */
#define EV_SZ		sizeof(struct kvtier_event)

/* ---- helpers -------------------------------------------------------------- */

/* An events fd on @pfd (KVTIER_IOC_EVENTS), or -errno; @out its answer. */
static int et_open(int pfd, __u32 flags, __u64 seq, struct kvtier_events *out)
{
	struct kvtier_events e;
	int ret;

	memset(&e, 0, sizeof(e));
	e.flags = flags;
	e.seq = seq;
	e.fd = -1;
	ret = kst_ioctl(pfd, KVTIER_IOC_EVENTS, &e);
	if (out)
		*out = e;
	return ret ? ret : e.fd;
}

/*
 * Read what an O_NONBLOCK events fd has, up to @max records: their number,
 * or -errno of the first read. 0 at end of file as when nothing is there.
 */
static int et_drain(int fd, struct kvtier_event *ev, int max)
{
	int n = 0;

	while (n < max) {
		ssize_t r = read(fd, ev + n, (size_t)(max - n) * EV_SZ);

		if (r < 0)
			return errno == EAGAIN ? n : (n ? n : -errno);
		if (!r)
			break;
		if (r % EV_SZ)
			return -EPROTO;
		n += r / EV_SZ;
	}
	return n;
}

/* One census of the whole pool in calls of @page keys; done or -errno. */
static int et_census_all(int pfd, __u32 page, struct kvtier_census_entry *ent,
		      int max, __u64 *seq, __u64 *log_id)
{
	struct kvtier_census c;
	__u64 cursor = 0;
	bool first = true;
	int n = 0, ret;

	do {
		if (n + (int)page > max)
			return -ENOSPC;
		memset(&c, 0, sizeof(c));
		c.entries = (__u64)(uintptr_t)(ent + n);
		c.count = page;
		c.cursor = cursor;
		ret = kst_ioctl(pfd, KVTIER_IOC_CENSUS, &c);
		if (ret)
			return ret;
		if (first && seq)
			*seq = c.seq;
		if (first && log_id)
			*log_id = c.log_id;
		first = false;
		n += c.done;
		cursor = c.cursor;
	} while (cursor != KVTIER_ADDR_NONE);
	return n;
}

/*
 * The pool as a router sees it: the tier of each key k1 < EV_CAP * 4 (of
 * key[0] EV_K0), 0 when absent. Keys of another key[0] count as errors.
 */
#define EV_KEYS		(EV_CAP * 4)

struct et_model {
	__u8 tier[EV_KEYS];
	unsigned int alien;	/* a key this pool never had */
	unsigned int bad;	/* an event that contradicts the model */
	__u64 last;		/* the last sequence number applied */
	bool loose;		/* from a census taken while keys changed: an
				 * event may repeat what a later page saw */
};

static void et_model_census(struct et_model *m,
			 const struct kvtier_census_entry *ent, int n)
{
	int i;

	memset(m, 0, sizeof(*m));
	for (i = 0; i < n; i++) {
		if (ent[i].key[0] != EV_K0 || ent[i].key[1] >= EV_KEYS) {
			m->alien++;
			continue;
		}
		m->tier[ent[i].key[1]] = ent[i].tier;
	}
}

/* Apply one event (those up to m->last are skipped). */
static void et_model_apply(struct et_model *m, const struct kvtier_event *ev)
{
	__u64 k = ev->key[1];

	if (ev->type == KVTIER_EVENT_OVERFLOW) {
		m->bad++;
		return;
	}
	if (ev->seq <= m->last)
		return;
	if (ev->seq != m->last + 1 && m->last)
		m->bad++;
	m->last = ev->seq;
	if (ev->type == KVTIER_EVENT_CLEARED) {
		memset(m->tier, 0, sizeof(m->tier));
		return;
	}
	if (ev->key[0] != EV_K0 || k >= EV_KEYS) {
		m->alien++;
		return;
	}
	switch (ev->type) {
	case KVTIER_EVENT_STORED:
		if (!m->loose && m->tier[k] && ev->reason != KVTIER_EVR_REPLACE)
			m->bad++;
		m->tier[k] = ev->tier;
		break;
	case KVTIER_EVENT_MOVED:
		if ((!m->loose && m->tier[k] != ev->from) ||
		    ev->from == ev->tier)
			m->bad++;
		m->tier[k] = ev->tier;
		break;
	case KVTIER_EVENT_REMOVED:
		if (!m->loose && m->tier[k] != ev->tier)
			m->bad++;
		m->tier[k] = 0;
		break;
	default:
		m->bad++;
	}
}

/* The first key of two models that differ, or -1. */
static int et_model_diff(const struct et_model *a, const struct et_model *b)
{
	int k;

	for (k = 0; k < (int)EV_KEYS; k++)
		if (a->tier[k] != b->tier[k])
			return k;
	return -1;
}

/* The model of a census of @pfd now. */
static int et_model_now(int pfd, struct et_model *m, __u64 *seq)
{
	static struct kvtier_census_entry ent[EV_KEYS + 64];
	int n = et_census_all(pfd, 64, ent, EV_KEYS + 64, seq, NULL);

	if (n < 0)
		return n;
	et_model_census(m, ent, n);
	return n;
}

/* The tier LOOKUP tells of key (EV_K0, k), 0 for a miss, or -errno. */
static int et_lookup_tier(int pfd, __u64 k)
{
	struct kvtier_block b;
	int ret = kst_lookup1(pfd, EV_K0, k, &b);

	if (ret == -ENOENT)
		return 0;
	return ret ? ret : (int)b.tier;
}

/* Whether every key's census tier is LOOKUP's: the first that is not, or -1. */
static int et_census_vs_lookup(int pfd, const struct et_model *m)
{
	int k;

	for (k = 0; k < (int)EV_KEYS; k++)
		if (et_lookup_tier(pfd, k) != m->tier[k])
			return k;
	return -1;
}

/*
 * Apply @ev[0..n) to @m: the result must be the pool now, as a census
 * lists it (into @now), and the census's tiers must be LOOKUP's.
 */
static void et_expect_pool(struct __test_metadata *_metadata, int pfd,
			   struct et_model *m, const struct kvtier_event *ev,
			   int n, struct et_model *now)
{
	__u64 seq;
	int i, k;

	for (i = 0; i < n; i++)
		et_model_apply(m, &ev[i]);
	EXPECT_EQ(0U, m->bad);
	EXPECT_EQ(0U, m->alien);
	ASSERT_LE(0, et_model_now(pfd, now, &seq));
	EXPECT_EQ(seq, m->last);
	k = et_model_diff(m, now);
	EXPECT_EQ(-1, k) TH_LOG("key %d: events say tier %u, census %u", k,
				k < 0 ? 0 : m->tier[k],
				k < 0 ? 0 : now->tier[k]);
	k = et_census_vs_lookup(pfd, now);
	EXPECT_EQ(-1, k) TH_LOG("key %d: census %u, LOOKUP %d", k,
				k < 0 ? 0 : now->tier[k],
				k < 0 ? 0 : et_lookup_tier(pfd, k));
}

static int et_put_key(int pfd, void *buf, __u64 bs, __u64 k, __u32 flags)
{
	kst_fill(buf, bs, EV_K0, k, 1);
	return kst_one(pfd, KVTIER_IOC_PUT, EV_K0, k, buf, flags, NULL);
}

/* GET key @k of EV_BS bytes: 0 with its exact bytes, -EILSEQ, or -errno. */
static int et_get_check_key(int pfd, void *buf, __u64 k)
{
	int ret;

	memset(buf, 0xa5, EV_BS);
	ret = kst_get1(pfd, EV_K0, k, buf, NULL);
	if (ret)
		return ret;
	return kst_check_gen(buf, EV_BS, EV_K0, k, 1) == -1 ? 0 : -EILSEQ;
}

/* Events of @type among @ev[0..n), and of those, of @reason (0: any). */
static int et_count_of(const struct kvtier_event *ev, int n, __u16 type,
		    __u16 reason)
{
	int i, c = 0;

	for (i = 0; i < n; i++)
		c += ev[i].type == type && (!reason || ev[i].reason == reason);
	return c;
}

/* Number of open fds of this process. */
static int et_fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* the directory's own */
}

/* The pool's events line in sysfs: seq readers ring overflows lost. */
#define EV_COLS	5

static int et_sysfs(const char *name, long long *v)
{
	char path[256];

	snprintf(path, sizeof(path), KST_SYSFS_DIR "/pools/%s/events", name);
	return kst_read_cols(path, v, EV_COLS, 0) == EV_COLS ? 0 : -EPROTO;
}

/*
 * What the fixtures without NVMe share, as an anonymous member
 * (-fms-extensions): a control fd, a pool of EV_CAP blocks of EV_BS bytes,
 * @dram of them in DRAM, and a block buffer.
 */
struct et_fix {
	int ctl, pfd;
	char name[KVTIER_NAME_MAX];
	char *buf;
};

#define ET_FIX(self)	((struct et_fix *)(self))

static void et_setup(struct __test_metadata *_metadata, struct et_fix *f,
		     const char *tag, __u32 dram)
{
	kst_setup(_metadata);
	f->pfd = -1;
	f->ctl = kst_ctl_open();
	ASSERT_LE(0, f->ctl);
	/* No device attached: an evicted block is gone. */
	ASSERT_EQ(0, nvt_attached(f->ctl));
	kst_name(f->name, tag);
	f->pfd = kst_pool_create(f->ctl, f->name, EV_BS, EV_CAP, dram);
	ASSERT_LE(0, f->pfd);
	f->buf = kst_alloc(EV_BS);
	ASSERT_NE(NULL, f->buf);
}

static void et_teardown(struct et_fix *f)
{
	if (f->pfd >= 0)
		close(f->pfd);
	kst_pool_destroy(f->ctl, f->name);
	kst_free(f->buf, EV_BS);
	close(f->ctl);
}

/* ---- one pool, no NVMe ---------------------------------------------------- */

FIXTURE(ev) {
	struct et_fix;
	long long ring;		/* the events_ring parameter */
};

FIXTURE_SETUP(ev)
{
	et_setup(_metadata, ET_FIX(self), "ev", EV_DRAM);
	ASSERT_EQ(0, kst_param("events_ring", &self->ring));
}

FIXTURE_TEARDOWN(ev)
{
	et_teardown(ET_FIX(self));
}

/* One bad field of EVENTS a case: -EINVAL, and no fd made. */
TEST_F(ev, events_reject)
{
	struct { const char *what; __u32 flags, pad; __u64 seq, r0, r1; } bad[] = {
		{ "unknown flag", KVTIER_EVENTS_FLAGS + 1, 0, 0, 0, 0 },
		{ "high flag", 1U << 31, 0, 0, 0, 0 },
		{ "__pad", 0, 1, 0, 0, 0 },
		{ "reserved[0]", 0, 0, 0, 1, 0 },
		{ "reserved[1]", 0, 0, 0, 0, 1 },
		{ "seq without FROM", 0, 0, 1, 0, 0 },
		{ "FROM 0", KVTIER_EVENTS_FROM, 0, 0, 0, 0 },
		{ "FROM past the next", KVTIER_EVENTS_FROM, 0, 3, 0, 0 },
	};
	struct kvtier_events e;
	int fds = et_fd_count();
	unsigned int i;

	/* One event: the next is 2. */
	ASSERT_EQ(0, et_put_key(self->pfd, self->buf, EV_BS, 1, 0));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&e, 0, sizeof(e));
		e.flags = bad[i].flags;
		e.__pad = bad[i].pad;
		e.seq = bad[i].seq;
		e.reserved[0] = bad[i].r0;
		e.reserved[1] = bad[i].r1;
		e.fd = -7;
		EXPECT_EQ(-EINVAL, kst_ioctl(self->pfd, KVTIER_IOC_EVENTS, &e))
			TH_LOG("%s", bad[i].what);
		EXPECT_EQ(-7, e.fd) TH_LOG("%s", bad[i].what);
	}
	EXPECT_EQ(fds, et_fd_count());
	/* The next one is taken: it is where the reader starts. */
	ASSERT_LE(0, et_open(self->pfd, KVTIER_EVENTS_FROM, 2, &e));
	EXPECT_EQ(2ULL, e.seq);
	EXPECT_EQ((__u32)self->ring, e.ring);
	EXPECT_NE(0ULL, e.log_id);
	close(e.fd);
	EXPECT_EQ(fds, et_fd_count());
}

/* One bad field of CENSUS a case, with its errno; nothing listed. */
TEST_F(ev, census_reject)
{
	struct kvtier_census_entry ent[4];
	struct kvtier_census c;
	struct {
		const char *what;
		int err;
		__u32 count, flags, pad;
		__u64 cursor, r0, entries, meta;
	} bad[] = {
		{ "flags", -EINVAL, 4, 1, 0, 0, 0, 1, 0 },
		{ "__pad", -EINVAL, 4, 0, 1, 0, 0, 1, 0 },
		{ "reserved", -EINVAL, 4, 0, 0, 0, 1, 1, 0 },
		{ "count 0", -EINVAL, 0, 0, 0, 0, 0, 1, 0 },
		{ "count too large", -EINVAL, KVTIER_BATCH_MAX + 1, 0, 0, 0, 0,
		  1, 0 },
		{ "cursor past the capacity", -EINVAL, 4, 0, 0, EV_CAP + 1, 0,
		  1, 0 },
		{ "entries unmapped", -EFAULT, 4, 0, 0, 0, 0, 2, 0 },
		{ "entries NULL", -EFAULT, 4, 0, 0, 0, 0, 0, 0 },
		{ "meta unmapped", -EFAULT, 4, 0, 0, 0, 0, 1, 2 },
	};
	unsigned int i;

	ASSERT_EQ(0, et_put_key(self->pfd, self->buf, EV_BS, 1, 0));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&c, 0, sizeof(c));
		memset(ent, 0x5a, sizeof(ent));
		c.count = bad[i].count;
		c.flags = bad[i].flags;
		c.__pad = bad[i].pad;
		c.cursor = bad[i].cursor;
		c.reserved[0] = bad[i].r0;
		c.entries = bad[i].entries == 1 ? (__u64)(uintptr_t)ent :
			    bad[i].entries == 2 ?
			    (__u64)(uintptr_t)kst_unmapped_addr() : 0;
		c.meta = bad[i].meta == 2 ?
			 (__u64)(uintptr_t)kst_unmapped_addr() : 0;
		c.done = 77;
		EXPECT_EQ(bad[i].err, kst_ioctl(self->pfd, KVTIER_IOC_CENSUS,
						&c)) TH_LOG("%s", bad[i].what);
		EXPECT_EQ(77U, c.done) TH_LOG("%s", bad[i].what);
		/* Refused before anything is listed (a fault may be later). */
		if (bad[i].err == -EINVAL)
			EXPECT_EQ(0x5a5a5a5a5a5a5a5aULL, ent[0].key[0])
				TH_LOG("%s", bad[i].what);
	}
	/* At the capacity, or the end given back: nothing, and the end. */
	for (i = 0; i < 2; i++) {
		memset(&c, 0, sizeof(c));
		c.entries = (__u64)(uintptr_t)ent;
		c.count = 4;
		c.cursor = i ? KVTIER_ADDR_NONE : EV_CAP;
		ASSERT_EQ(0, kst_ioctl(self->pfd, KVTIER_IOC_CENSUS, &c));
		EXPECT_EQ(0U, c.done);
		EXPECT_EQ(KVTIER_ADDR_NONE, c.cursor);
		EXPECT_EQ(1ULL, c.seq);
	}
}

/* Records of a census need KVTIER_F_META. */
TEST_F(ev, census_meta_needs_feature)
{
	struct kvtier_census_entry ent[2];
	struct kvtier_meta meta[2];
	struct kvtier_census c;
	int ctl, pfd;

	ctl = kst_ctl_open_raw();
	ASSERT_LE(0, ctl);
	ASSERT_EQ(0, kst_api(ctl, KST_F_KNOWN & ~KVTIER_F_META, NULL));
	pfd = kst_pool_open(ctl, self->name, KVTIER_POOL_RDONLY);
	ASSERT_LE(0, pfd);
	memset(&c, 0, sizeof(c));
	c.entries = (__u64)(uintptr_t)ent;
	c.meta = (__u64)(uintptr_t)meta;
	c.count = 2;
	ASSERT_EQ(-EOPNOTSUPP, kst_ioctl(pfd, KVTIER_IOC_CENSUS, &c));
	c.meta = 0;
	ASSERT_EQ(0, kst_ioctl(pfd, KVTIER_IOC_CENSUS, &c));
	close(pfd);
	close(ctl);
}

/* read(2): whole records only; nothing there is -EAGAIN without blocking. */
TEST_F(ev, read_sizes)
{
	struct kvtier_event ev[3];
	int fd = et_open(self->pfd, KVTIER_EVENTS_NONBLOCK, 0, NULL);

	ASSERT_LE(0, fd);
	ASSERT_EQ(-1, read(fd, ev, EV_SZ));
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, et_put_key(self->pfd, self->buf, EV_BS, 1, 0));
	ASSERT_EQ(0, et_put_key(self->pfd, self->buf, EV_BS, 2, 0));
	ASSERT_EQ(-1, read(fd, ev, EV_SZ - 1));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, write(fd, ev, EV_SZ));
	ASSERT_EQ(EBADF, errno);
	/* One and a half records of room: one. */
	ASSERT_EQ((ssize_t)EV_SZ, read(fd, ev, EV_SZ + EV_SZ / 2));
	EXPECT_EQ(1ULL, ev[0].seq);
	ASSERT_EQ((ssize_t)EV_SZ, read(fd, ev, sizeof(ev)));
	EXPECT_EQ(2ULL, ev[0].seq);
	/* A buffer that cannot be written loses nothing. */
	ASSERT_EQ(0, et_put_key(self->pfd, self->buf, EV_BS, 3, 0));
	ASSERT_EQ(-1, read(fd, kst_unmapped_addr(), EV_SZ));
	ASSERT_EQ(EFAULT, errno);
	ASSERT_EQ((ssize_t)EV_SZ, read(fd, ev, sizeof(ev)));
	EXPECT_EQ(3ULL, ev[0].seq);
	close(fd);
}

/* PUT, REPLACE and DROP, each told once, in order, with what they did. */
TEST_F(ev, stored_replaced_dropped)
{
	struct kvtier_event ev[16];
	struct kvtier_block b[3];
	struct kvtier_events info;
	long long sys[EV_COLS];
	int fd, n, i;

	fd = et_open(self->pfd, KVTIER_EVENTS_NONBLOCK, 0, &info);
	ASSERT_LE(0, fd);
	ASSERT_EQ(1ULL, info.seq);
	for (i = 0; i < 3; i++) {
		kst_fill(self->buf, EV_BS, EV_K0, i, 1);
		ASSERT_EQ(0, kst_one(self->pfd, KVTIER_IOC_PUT, EV_K0, i,
				     self->buf, 0, &b[i]));
	}
	ASSERT_EQ(0, kst_one(self->pfd, KVTIER_IOC_PUT, EV_K0, 1, self->buf,
			     KVTIER_PUT_REPLACE, &b[1]));
	ASSERT_EQ(0, kst_drop1(self->pfd, EV_K0, 2));
	/* Refused commands tell nothing. */
	ASSERT_EQ(-EEXIST, et_put_key(self->pfd, self->buf, EV_BS, 0, 0));
	ASSERT_EQ(-ENOENT, kst_drop1(self->pfd, EV_K0, 2));

	n = et_drain(fd, ev, 16);
	ASSERT_EQ(5, n);
	for (i = 0; i < n; i++) {
		EXPECT_EQ((__u64)i + 1, ev[i].seq);
		EXPECT_EQ(EV_K0, ev[i].key[0]);
		EXPECT_EQ(0U, ev[i].flags);
		EXPECT_EQ(0ULL, ev[i].lost);
		EXPECT_LT(0ULL, ev[i].time_ns);
		if (i)
			EXPECT_LE(ev[i - 1].time_ns, ev[i].time_ns);
	}
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(KVTIER_EVENT_STORED, ev[i].type);
		EXPECT_EQ((__u64)i, ev[i].key[1]);
		EXPECT_EQ(KVTIER_TIER_DRAM, ev[i].tier);
		EXPECT_EQ(KVTIER_EVR_PUT, ev[i].reason);
		EXPECT_EQ(0, ev[i].from);
	}
	EXPECT_EQ(0, ev[4].from);
	EXPECT_EQ(b[0].addr, ev[0].addr);
	/* A replaced key is stored again, at its new block; no REMOVED. */
	EXPECT_EQ(KVTIER_EVENT_STORED, ev[3].type);
	EXPECT_EQ(KVTIER_EVR_REPLACE, ev[3].reason);
	EXPECT_EQ(KVTIER_TIER_DRAM, ev[3].from);
	EXPECT_EQ(1ULL, ev[3].key[1]);
	EXPECT_EQ(b[1].addr, ev[3].addr);
	EXPECT_EQ(KVTIER_EVENT_REMOVED, ev[4].type);
	EXPECT_EQ(KVTIER_EVR_DROP, ev[4].reason);
	EXPECT_EQ(2ULL, ev[4].key[1]);
	EXPECT_EQ(b[2].addr, ev[4].addr);
	EXPECT_EQ(KVTIER_TIER_DRAM, ev[4].tier);
	ASSERT_EQ(0, et_sysfs(self->name, sys));
	EXPECT_EQ(5, sys[0]);
	EXPECT_EQ(1, sys[1]);
	EXPECT_EQ(self->ring, sys[2]);
	EXPECT_EQ(0, sys[3]);
	close(fd);
	/* No reader: the ring stays for the next one. */
	ASSERT_EQ(0, kst_drop1(self->pfd, EV_K0, 1));
	ASSERT_EQ(0, et_sysfs(self->name, sys));
	EXPECT_EQ(6, sys[0]);
	EXPECT_EQ(0, sys[1]);
	EXPECT_EQ(self->ring, sys[2]);
	/* A reader coming back from where it was loses nothing. */
	fd = et_open(self->pfd, KVTIER_EVENTS_NONBLOCK | KVTIER_EVENTS_FROM, 6,
		     NULL);
	ASSERT_LE(0, fd);
	ASSERT_EQ(1, et_drain(fd, ev, 16));
	EXPECT_EQ(6ULL, ev[0].seq);
	EXPECT_EQ(KVTIER_EVENT_REMOVED, ev[0].type);
	close(fd);
}

/* Without NVMe, blocks evicted from DRAM are removed: exactly the misses. */
TEST_F(ev, evicted_without_nvme)
{
	struct kvtier_event ev[64];
	int fd, n, i, missing = 0;
	__u64 k;

	fd = et_open(self->pfd, KVTIER_EVENTS_NONBLOCK, 0, NULL);
	ASSERT_LE(0, fd);
	for (k = 0; k < EV_DRAM + 5; k++)
		ASSERT_EQ(0, et_put_key(self->pfd, self->buf, EV_BS, k, 0));
	n = et_drain(fd, ev, 64);
	ASSERT_EQ((int)(EV_DRAM + 5 + 5), n);
	EXPECT_EQ((int)(EV_DRAM + 5), et_count_of(ev, n, KVTIER_EVENT_STORED,
					       KVTIER_EVR_PUT));
	EXPECT_EQ(5, et_count_of(ev, n, KVTIER_EVENT_REMOVED, KVTIER_EVR_EVICT));
	for (i = 0; i < n; i++) {
		if (ev[i].type != KVTIER_EVENT_REMOVED)
			continue;
		EXPECT_EQ(KVTIER_TIER_DRAM, ev[i].tier);
		EXPECT_EQ(-ENOENT, kst_lookup1(self->pfd, EV_K0, ev[i].key[1],
					       NULL));
	}
	for (k = 0; k < EV_DRAM + 5; k++)
		missing += kst_lookup1(self->pfd, EV_K0, k, NULL) == -ENOENT;
	EXPECT_EQ(5, missing);
	close(fd);
}

/* The census: every key, by cursor, with records, at the log's number. */
TEST_F(ev, census_pages)
{
	struct kvtier_census_entry ent[EV_CAP];
	struct kvtier_meta meta[EV_CAP];
	struct kvtier_block b;
	struct kvtier_meta in;
	struct kvtier_census c;
	struct kvtier_events info;
	__u64 k, seq, id;
	int n, i, fd;
	bool seen[EV_DRAM] = { false };

	for (k = 0; k < EV_DRAM; k++) {
		memset(&in, 0, sizeof(in));
		in.len = 8;
		memcpy(in.data, &k, 8);
		kst_fill(self->buf, EV_BS, EV_K0, k, 1);
		kst_blk(&b, EV_K0, k, self->buf);
		ASSERT_EQ(0, kst_batch_meta(self->pfd, KVTIER_IOC_PUT, &b, 1, 0,
					    &in, NULL));
		ASSERT_EQ(0, b.status);
	}
	ASSERT_EQ(0, kst_drop1(self->pfd, EV_K0, 3));
	ASSERT_EQ(0, kst_pin1(self->pfd, EV_K0, 5));

	n = et_census_all(self->pfd, 3, ent, EV_CAP, &seq, &id);
	ASSERT_EQ((int)EV_DRAM - 1, n);
	EXPECT_EQ((__u64)EV_DRAM + 1, seq);
	for (i = 0; i < n; i++) {
		k = ent[i].key[1];
		ASSERT_EQ(EV_K0, ent[i].key[0]);
		ASSERT_GT((__u64)EV_DRAM, k);
		EXPECT_NE(3ULL, k);
		EXPECT_FALSE(seen[k]);
		seen[k] = true;
		EXPECT_EQ((__u32)KVTIER_TIER_DRAM, ent[i].tier);
		EXPECT_EQ(KVTIER_CENSUS_DRAM | (k == 5 ? KVTIER_CENSUS_PINNED : 0),
			  ent[i].flags);
		ASSERT_EQ(0, kst_lookup1(self->pfd, EV_K0, k, &b));
		EXPECT_EQ(b.addr, ent[i].addr);
		if (i)
			EXPECT_LT(ent[i - 1].addr, ent[i].addr);
	}
	ASSERT_EQ(0, kst_unpin1(self->pfd, EV_K0, 5));

	/* With records: each key's own. */
	memset(&c, 0, sizeof(c));
	memset(meta, 0x5a, sizeof(meta));
	c.entries = (__u64)(uintptr_t)ent;
	c.meta = (__u64)(uintptr_t)meta;
	c.count = EV_CAP;
	ASSERT_EQ(0, kst_ioctl(self->pfd, KVTIER_IOC_CENSUS, &c));
	ASSERT_EQ((__u32)EV_DRAM - 1, c.done);
	EXPECT_EQ(KVTIER_ADDR_NONE, c.cursor);
	EXPECT_EQ(id, c.log_id);
	for (i = 0; i < (int)c.done; i++) {
		EXPECT_EQ(8U, meta[i].len);
		EXPECT_EQ(0U, meta[i].flags);
		EXPECT_EQ(0, memcmp(meta[i].data, &ent[i].key[1], 8));
		EXPECT_EQ(0, meta[i].data[8]);
	}
	/* The log an events fd reads is the census's. */
	fd = et_open(self->pfd, 0, 0, &info);
	ASSERT_LE(0, fd);
	EXPECT_EQ(id, info.log_id);
	EXPECT_EQ(seq + 1, info.seq);
	close(fd);
}

struct et_writer {
	int pfd;
	char *buf;
	volatile int stop;
	unsigned int ops;
	__u64 rnd;
};

/* PUT, REPLACE and DROP of random keys until told to stop. */
static void *et_writer_main(void *arg)
{
	struct et_writer *w = arg;

	while (!w->stop) {
		__u64 r = w->rnd = kst_mix(w->rnd + 1);
		__u64 k = r % (EV_CAP / 2);

		switch ((r >> 32) % 4) {
		case 0:
		case 1:
			et_put_key(w->pfd, w->buf, EV_BS, k, 0);
			break;
		case 2:
			et_put_key(w->pfd, w->buf, EV_BS, k, KVTIER_PUT_REPLACE);
			break;
		default:
			kst_drop1(w->pfd, EV_K0, k);
		}
		w->ops++;
	}
	return NULL;
}

/*
 * A router's resync: open the events, take a census in small pages while
 * a writer runs, then apply the events after the census's number. Once
 * the writer stops, that is the pool, key for key and tier for tier.
 */
TEST_F(ev, census_then_events)
{
	static struct kvtier_census_entry ent[EV_CAP * 2];
	static struct kvtier_event evs[65536];
	struct et_writer w = { .pfd = self->pfd, .rnd = 42 };
	struct et_model m, now;
	pthread_t t;
	int fd, n, round;
	__u64 seq;

	w.buf = kst_alloc(EV_BS);
	ASSERT_NE(NULL, w.buf);
	for (round = 0; round < 4; round++) {
		fd = et_open(self->pfd, KVTIER_EVENTS_NONBLOCK, 0, NULL);
		ASSERT_LE(0, fd);
		w.stop = 0;
		ASSERT_EQ(0, pthread_create(&t, NULL, et_writer_main, &w));
		usleep(20000);
		n = et_census_all(self->pfd, 2 + round, ent, EV_CAP * 2, &seq,
			       NULL);
		usleep(20000);
		w.stop = 1;
		pthread_join(t, NULL);
		ASSERT_LE(0, n);
		et_model_census(&m, ent, n);
		m.last = seq;
		m.loose = true;
		n = et_drain(fd, evs, 65536);
		ASSERT_LE(0, n);
		ASSERT_GT(65536, n);
		TH_LOG("round %d: %d events", round, n);
		et_expect_pool(_metadata, self->pfd, &m, evs, n, &now);
		close(fd);
	}
	TH_LOG("%u operations of the writer", w.ops);
	kst_free(w.buf, EV_BS);
}

/*
 * A reader lapped by the ring: one OVERFLOW record counting exactly the
 * events it lost, then the ring's oldest on; nothing lost unsaid.
 */
TEST_F(ev, overflow_counts)
{
	long long total = self->ring + 37, got = 0, lost = 0, overflows = 0;
	long long sys[EV_COLS];
	struct kvtier_event *ev = calloc(self->ring + 64, EV_SZ);
	__u64 next = 1;
	int fd, n, i;
	long long op;

	ASSERT_NE(NULL, ev);
	fd = et_open(self->pfd, KVTIER_EVENTS_NONBLOCK, 0, NULL);
	ASSERT_LE(0, fd);
	/* A PUT and a DROP of one key: two events. */
	for (op = 0; op < total; op++) {
		ASSERT_EQ(0, op % 2 ? kst_drop1(self->pfd, EV_K0, 1) :
			     et_put_key(self->pfd, self->buf, EV_BS, 1, 0));
	}
	n = et_drain(fd, ev, self->ring + 64);
	ASSERT_EQ(self->ring + 1, n);
	ASSERT_EQ(KVTIER_EVENT_OVERFLOW, ev[0].type);
	EXPECT_EQ(1ULL, ev[0].seq);
	EXPECT_EQ(37ULL, ev[0].lost);
	EXPECT_EQ(KVTIER_ADDR_NONE, ev[0].addr);
	for (i = 0; i < n; i++) {
		if (ev[i].type == KVTIER_EVENT_OVERFLOW) {
			EXPECT_EQ(next, ev[i].seq);
			next += ev[i].lost;
			lost += ev[i].lost;
			overflows++;
			continue;
		}
		EXPECT_EQ(next, ev[i].seq);
		next = ev[i].seq + 1;
		got++;
	}
	EXPECT_EQ(1, overflows);
	EXPECT_EQ(total, got + lost);
	ASSERT_EQ(0, et_sysfs(self->name, sys));
	EXPECT_EQ(total, sys[0]);
	EXPECT_EQ(1, sys[3]);
	EXPECT_EQ(37, sys[4]);

	/* Lapped again, by less: the loss is counted again, exactly. */
	ASSERT_EQ(1, total % 2);	/* the key is in: a DROP first */
	for (op = 0; op < self->ring + 5; op++)
		ASSERT_EQ(0, op % 2 ? et_put_key(self->pfd, self->buf, EV_BS, 1, 0) :
			     kst_drop1(self->pfd, EV_K0, 1));
	n = et_drain(fd, ev, self->ring + 64);
	ASSERT_EQ(self->ring + 1, n);
	ASSERT_EQ(KVTIER_EVENT_OVERFLOW, ev[0].type);
	EXPECT_EQ(next, ev[0].seq);
	EXPECT_EQ(5ULL, ev[0].lost);
	EXPECT_EQ(next + 5, ev[1].seq);
	close(fd);
	free(ev);
}

/*
 * Lapped by one event, by one short of the ring, by one more than it:
 * each time one OVERFLOW record counting exactly the events lost, then
 * the ring's events in order, the last one the log's.
 */
TEST_F(ev, overflow_sizes)
{
	long long lap[] = { 1, self->ring - 1, self->ring + 1 };
	struct kvtier_event *ev = calloc(self->ring + 64, EV_SZ);
	bool in = false;
	unsigned int i;
	long long op, total;
	int fd, n, j;

	ASSERT_NE(NULL, ev);
	for (i = 0; i < sizeof(lap) / sizeof(lap[0]); i++) {
		struct kvtier_events info;

		fd = et_open(self->pfd, KVTIER_EVENTS_NONBLOCK, 0, &info);
		ASSERT_LE(0, fd);
		total = self->ring + lap[i];
		for (op = 0; op < total; op++, in = !in)
			ASSERT_EQ(0, in ? kst_drop1(self->pfd, EV_K0, 1) :
				     et_put_key(self->pfd, self->buf, EV_BS, 1,
						0)) TH_LOG("lap %lld", lap[i]);
		n = et_drain(fd, ev, self->ring + 64);
		ASSERT_EQ(self->ring + 1, n) TH_LOG("lap %lld", lap[i]);
		EXPECT_EQ(KVTIER_EVENT_OVERFLOW, ev[0].type);
		EXPECT_EQ(info.seq, ev[0].seq);
		EXPECT_EQ((__u64)lap[i], ev[0].lost) TH_LOG("lap %lld", lap[i]);
		for (j = 1; j < n; j++)
			ASSERT_EQ(info.seq + lap[i] + j - 1, ev[j].seq);
		EXPECT_EQ(info.seq + total - 1, ev[n - 1].seq);
		close(fd);
	}
	free(ev);
}

/* FROM: a number still in the ring; one before it; the next one. */
TEST_F(ev, from_seq)
{
	struct kvtier_event ev[32];
	struct kvtier_events info;
	int keep, fd, n;
	__u64 k;

	/* No reader yet: the first reader's ring starts empty. */
	for (k = 0; k < 4; k++)
		ASSERT_EQ(0, et_put_key(self->pfd, self->buf, EV_BS, k, 0));
	keep = et_open(self->pfd, KVTIER_EVENTS_NONBLOCK | KVTIER_EVENTS_FROM,
		       2, &info);
	ASSERT_LE(0, keep);
	EXPECT_EQ(2ULL, info.seq);
	n = et_drain(keep, ev, 32);
	ASSERT_EQ(1, n);
	EXPECT_EQ(KVTIER_EVENT_OVERFLOW, ev[0].type);
	EXPECT_EQ(2ULL, ev[0].seq);
	EXPECT_EQ(3ULL, ev[0].lost);

	for (k = 4; k < 8; k++)
		ASSERT_EQ(0, et_put_key(self->pfd, self->buf, EV_BS, k, 0));
	/* Events 5..8 are in the ring now. */
	fd = et_open(self->pfd, KVTIER_EVENTS_NONBLOCK | KVTIER_EVENTS_FROM, 6,
		     NULL);
	ASSERT_LE(0, fd);
	n = et_drain(fd, ev, 32);
	ASSERT_EQ(3, n);
	EXPECT_EQ(6ULL, ev[0].seq);
	EXPECT_EQ(KVTIER_EVENT_STORED, ev[0].type);
	EXPECT_EQ(5ULL, ev[0].key[1]);
	close(fd);
	fd = et_open(self->pfd, KVTIER_EVENTS_NONBLOCK | KVTIER_EVENTS_FROM, 9,
		     NULL);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, et_drain(fd, ev, 32));
	ASSERT_EQ(0, kst_drop1(self->pfd, EV_K0, 0));
	ASSERT_EQ(1, et_drain(fd, ev, 32));
	EXPECT_EQ(9ULL, ev[0].seq);
	close(fd);
	n = et_drain(keep, ev, 32);
	ASSERT_EQ(5, n);
	EXPECT_EQ(5ULL, ev[0].seq);
	close(keep);
}

/* Two thousand readers, each reads every event once; none slows a PUT. */
TEST_F(ev, many_readers)
{
	enum { NR = 2000, NPUTS = 6 };
	struct kvtier_event ev[NPUTS + 1];
	struct rlimit rl = { NR + 256, NR + 256 };
	int *fds = calloc(NR, sizeof(int));
	int i, n, bad = 0;
	__u64 k;

	ASSERT_NE(NULL, fds);
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	for (i = 0; i < NR; i++) {
		fds[i] = et_open(self->pfd, KVTIER_EVENTS_NONBLOCK, 0, NULL);
		ASSERT_LE(0, fds[i]) TH_LOG("reader %d", i);
	}
	for (k = 0; k < NPUTS; k++)
		ASSERT_EQ(0, et_put_key(self->pfd, self->buf, EV_BS, k, 0));
	for (i = 0; i < NR; i++) {
		n = et_drain(fds[i], ev, NPUTS + 1);
		bad += n != NPUTS || ev[0].seq != 1 ||
		       ev[NPUTS - 1].key[1] != NPUTS - 1;
		close(fds[i]);
	}
	EXPECT_EQ(0, bad);
	free(fds);
}

/*
 * The pool goes under its readers: what was left, then CLEARED, then end
 * of file; poll(2) says so, and a reader blocked in read(2) wakes.
 */
struct et_blocked {
	int fd;
	ssize_t ret;
	struct kvtier_event ev[8];
};

static void *et_blocked_read(void *arg)
{
	struct et_blocked *b = arg;

	b->ret = read(b->fd, b->ev, sizeof(b->ev));
	return NULL;
}

TEST_F(ev, pool_gone)
{
	struct et_blocked bl = { .ret = -2 };
	struct kvtier_event ev[8];
	struct pollfd p;
	pthread_t t;
	int fd, n;

	fd = et_open(self->pfd, KVTIER_EVENTS_NONBLOCK, 0, NULL);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, et_put_key(self->pfd, self->buf, EV_BS, 1, 0));
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, self->name));
	/* Named no more, but open: still the pool. */
	ASSERT_EQ(0, et_put_key(self->pfd, self->buf, EV_BS, 2, 0));
	/* A blocking reader past what is there: it waits for the end. */
	bl.fd = et_open(self->pfd, 0, 0, NULL);
	ASSERT_LE(0, bl.fd);
	ASSERT_EQ(0, pthread_create(&t, NULL, et_blocked_read, &bl));
	usleep(100000);
	EXPECT_EQ(-2, bl.ret);

	close(self->pfd);
	self->pfd = -1;
	pthread_join(t, NULL);
	ASSERT_EQ((ssize_t)EV_SZ, bl.ret);
	EXPECT_EQ(KVTIER_EVENT_CLEARED, bl.ev[0].type);
	EXPECT_EQ(3ULL, bl.ev[0].seq);
	EXPECT_EQ(KVTIER_EVR_DESTROY, bl.ev[0].reason);
	EXPECT_EQ(KVTIER_ADDR_NONE, bl.ev[0].addr);
	EXPECT_EQ(0ULL, bl.ev[0].key[0]);
	/* End of file now, at once, for a blocking reader too. */
	ASSERT_EQ(0, read(bl.fd, ev, sizeof(ev)));
	close(bl.fd);

	n = et_drain(fd, ev, 8);
	ASSERT_EQ(3, n);
	EXPECT_EQ(KVTIER_EVENT_STORED, ev[1].type);
	EXPECT_EQ(KVTIER_EVENT_CLEARED, ev[2].type);
	p.fd = fd;
	p.events = POLLIN;
	ASSERT_EQ(1, poll(&p, 1, 0));
	EXPECT_TRUE(p.revents & POLLHUP);
	EXPECT_FALSE(p.revents & POLLIN);
	ASSERT_EQ(0, read(fd, ev, sizeof(ev)));
	close(fd);
}

/* Readers killed while blocked in read(2): the log and the others go on. */
TEST_F(ev, killed_readers)
{
	struct kvtier_event ev[8];
	pid_t kids[4];
	int fd, i, status;

	fd = et_open(self->pfd, KVTIER_EVENTS_NONBLOCK, 0, NULL);
	ASSERT_LE(0, fd);
	for (i = 0; i < 4; i++) {
		kids[i] = kst_fork();
		ASSERT_LE(0, kids[i]);
		if (!kids[i]) {
			/* Its own reader, and one shared with the parent. */
			int mine = et_open(self->pfd, 0, 0, NULL);
			char *big = malloc(1 << 20);

			if (mine < 0 || !big)
				_exit(1);
			if (!(i % 2))
				fcntl(fd, F_SETFL, 0);
			if (read(i % 2 ? mine : fd, big, 1 << 20) < 0)
				_exit(3);
			_exit(2);
		}
	}
	usleep(200000);
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, kill(kids[i], SIGKILL));
		ASSERT_EQ(kids[i], waitpid(kids[i], &status, 0));
		EXPECT_TRUE(WIFSIGNALED(status));
	}
	fcntl(fd, F_SETFL, O_NONBLOCK);
	ASSERT_EQ(0, et_put_key(self->pfd, self->buf, EV_BS, 1, 0));
	ASSERT_EQ(1, et_drain(fd, ev, 8));
	EXPECT_EQ(1ULL, ev[0].seq);
	close(fd);
}

/* poll(2) wakes at an event; io_uring reads one when it comes. */
TEST_F(ev, poll_and_uring)
{
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct kvtier_event ev[4];
	struct __kernel_timespec ts = { .tv_sec = 10 };
	struct io_uring ring;
	struct pollfd p;
	int fd;

	fd = et_open(self->pfd, 0, 0, NULL);
	ASSERT_LE(0, fd);
	p.fd = fd;
	p.events = POLLIN;
	ASSERT_EQ(0, poll(&p, 1, 0));
	ASSERT_EQ(0, et_put_key(self->pfd, self->buf, EV_BS, 1, 0));
	ASSERT_EQ(1, poll(&p, 1, 1000));
	EXPECT_TRUE(p.revents & POLLIN);
	ASSERT_EQ((ssize_t)EV_SZ, read(fd, ev, sizeof(ev)));

	ASSERT_EQ(0, io_uring_queue_init(4, &ring, 0));
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read(sqe, fd, ev, sizeof(ev), 0);
	ASSERT_EQ(1, io_uring_submit(&ring));
	usleep(50000);
	ASSERT_EQ(-EAGAIN, io_uring_peek_cqe(&ring, &cqe));
	ASSERT_EQ(0, et_put_key(self->pfd, self->buf, EV_BS, 2, 0));
	ASSERT_EQ(0, io_uring_wait_cqe_timeout(&ring, &cqe, &ts));
	EXPECT_EQ((int)EV_SZ, cqe->res);
	EXPECT_EQ(2ULL, ev[0].seq);
	EXPECT_EQ(2ULL, ev[0].key[1]);
	io_uring_cqe_seen(&ring, cqe);

	/* A read in flight when the ring goes: cancelled, nothing left. */
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read(sqe, fd, ev, sizeof(ev), 0);
	ASSERT_EQ(1, io_uring_submit(&ring));
	io_uring_queue_exit(&ring);
	close(fd);
}

/*
 * A reader asleep in read(2) is woken for an event: at once with
 * events_wake_ms 0, a while later with 300 (and not before the event).
 */
TEST_F(ev, wake_ms)
{
	long long saved, ms[] = { 0, 300 };
	struct et_blocked bl;
	pthread_t t;
	unsigned int i;
	double t0;

	ASSERT_EQ(0, kst_param("events_wake_ms", &saved));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, kst_write_num(KST_PARAM_DIR "/events_wake_ms",
					   ms[i]));
		memset(&bl, 0, sizeof(bl));
		bl.ret = -2;
		bl.fd = et_open(self->pfd, 0, 0, NULL);
		ASSERT_LE(0, bl.fd);
		ASSERT_EQ(0, pthread_create(&t, NULL, et_blocked_read, &bl));
		usleep(50000);
		EXPECT_EQ(-2, bl.ret);
		t0 = kst_mono();
		ASSERT_EQ(0, et_put_key(self->pfd, self->buf, EV_BS, i, 0));
		pthread_join(t, NULL);
		EXPECT_EQ((ssize_t)EV_SZ, bl.ret);
		EXPECT_EQ((__u64)i, bl.ev[0].key[1]);
		TH_LOG("events_wake_ms %lld: woken after %.0f ms", ms[i],
		       (kst_mono() - t0) * 1e3);
		if (ms[i])
			EXPECT_LE(ms[i] * 0.9, (kst_mono() - t0) * 1e3);
		close(bl.fd);
	}
	ASSERT_EQ(0, kst_write_num(KST_PARAM_DIR "/events_wake_ms", saved));
}

/* A pool's events and census never name another pool's keys. */
TEST_F(ev, isolation)
{
	struct kvtier_census_entry ent[EV_CAP];
	struct kvtier_event ev[8];
	char other[KVTIER_NAME_MAX];
	int ofd, fd, rd, n;
	__u64 seq;

	kst_name(other, "ev-other");
	ofd = kst_pool_create(self->ctl, other, EV_BS, EV_CAP, EV_DRAM);
	ASSERT_LE(0, ofd);
	/* A read-only pool fd may read the events and list the keys. */
	rd = kst_pool_open(self->ctl, self->name, KVTIER_POOL_RDONLY);
	ASSERT_LE(0, rd);
	fd = et_open(rd, KVTIER_EVENTS_NONBLOCK, 0, NULL);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, et_put_key(ofd, self->buf, EV_BS, 7, 0));
	ASSERT_EQ(0, kst_drop1(ofd, EV_K0, 7));
	ASSERT_EQ(0, et_put_key(ofd, self->buf, EV_BS, 8, 0));
	ASSERT_EQ(0, et_drain(fd, ev, 8));
	ASSERT_EQ(0, et_census_all(rd, 8, ent, EV_CAP, &seq, NULL));
	EXPECT_EQ(0ULL, seq);
	ASSERT_EQ(0, et_put_key(self->pfd, self->buf, EV_BS, 9, 0));
	n = et_drain(fd, ev, 8);
	ASSERT_EQ(1, n);
	EXPECT_EQ(1ULL, ev[0].seq);
	EXPECT_EQ(9ULL, ev[0].key[1]);
	ASSERT_EQ(1, et_census_all(rd, 8, ent, EV_CAP, &seq, NULL));
	EXPECT_EQ(9ULL, ent[0].key[1]);
	close(fd);
	close(rd);
	close(ofd);
	kst_pool_destroy(self->ctl, other);
}

/* ---- with the NVMe tier ----------------------------------------------------- */

FIXTURE(evn) {
	struct nvt_fix;
};

FIXTURE_VARIANT(evn) {
	struct nvt_cfg cfg;
};

FIXTURE_VARIANT_ADD(evn, b16k) {
	.cfg = {
		.block_size = EV_BS, .writer_ok = true, .tag = "evn",
		.capacity = EV_CAP, .dram_blocks = EV_DRAM, .attach = true,
		.reattach = true,
	},
};

FIXTURE_SETUP(evn)
{
	nvt_setup(_metadata, NVT_FIX(self), &variant->cfg);
}

FIXTURE_TEARDOWN(evn)
{
	nvt_teardown(NVT_FIX(self));
}

/*
 * Demotion and promotion are moves, each told once; the log replayed from
 * its start is the census, whose tiers are LOOKUP's.
 */
TEST_F(evn, moves)
{
	static struct kvtier_event ev[4096];
	struct et_model m, now;
	int fd, n, i, k;

	fd = et_open(self->pfd, KVTIER_EVENTS_NONBLOCK, 0, NULL);
	ASSERT_LE(0, fd);
	for (k = 0; k < (int)EV_CAP / 2; k++)
		ASSERT_EQ(0, et_put_key(self->pfd, self->buf, EV_BS, k, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	/* Read the coldest back: NVMe -> DRAM, and others go down. */
	for (k = 0; k < 4; k++)
		ASSERT_EQ(0, kst_get1(self->pfd, EV_K0, k, self->buf, NULL));
	ASSERT_EQ(0, kst_drop1(self->pfd, EV_K0, 10));

	n = et_drain(fd, ev, 4096);
	ASSERT_LT(0, n);
	memset(&m, 0, sizeof(m));
	et_expect_pool(_metadata, self->pfd, &m, ev, n, &now);
	EXPECT_EQ((int)EV_CAP / 2, et_count_of(ev, n, KVTIER_EVENT_STORED, 0));
	EXPECT_LE((int)(EV_CAP / 2 - EV_DRAM),
		  et_count_of(ev, n, KVTIER_EVENT_MOVED, KVTIER_EVR_EVICT));
	EXPECT_EQ(4, et_count_of(ev, n, KVTIER_EVENT_MOVED, KVTIER_EVR_LOAD));
	EXPECT_EQ(0, et_count_of(ev, n, KVTIER_EVENT_REMOVED, KVTIER_EVR_EVICT));
	EXPECT_EQ(1, et_count_of(ev, n, KVTIER_EVENT_REMOVED, KVTIER_EVR_DROP));
	for (i = 0; i < n; i++) {
		if (ev[i].type == KVTIER_EVENT_MOVED &&
		    ev[i].reason == KVTIER_EVR_LOAD) {
			EXPECT_EQ(KVTIER_TIER_NVME, ev[i].from);
			EXPECT_EQ(KVTIER_TIER_DRAM, ev[i].tier);
		}
		if (ev[i].type == KVTIER_EVENT_MOVED &&
		    ev[i].reason == KVTIER_EVR_EVICT) {
			EXPECT_EQ(KVTIER_TIER_DRAM, ev[i].from);
			EXPECT_EQ(KVTIER_TIER_NVME, ev[i].tier);
		}
	}
	close(fd);
}

/*
 * Detach: keys only on NVMe are removed (DETACH); attach again: they are
 * stored again (REPLAY), on NVMe, listed by the census, and read exact.
 */
TEST_F(evn, detach_and_replay)
{
	static struct kvtier_census_entry ent[EV_CAP];
	static struct kvtier_event ev[1024];
	int fd, n, i, removed, replayed, nvme_only = 0;
	struct et_model m, now;
	__u64 seq;
	int k;

	for (k = 0; k < (int)EV_CAP / 2; k++)
		ASSERT_EQ(0, et_put_key(self->pfd, self->buf, EV_BS, k, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_LE(0, et_model_now(self->pfd, &m, &seq));
	for (k = 0; k < (int)EV_KEYS; k++)
		nvme_only += m.tier[k] == KVTIER_TIER_NVME;
	ASSERT_LT(0, nvme_only);
	m.last = seq;

	fd = et_open(self->pfd, KVTIER_EVENTS_NONBLOCK, 0, NULL);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, nvt_detach(self->ctl));
	n = et_drain(fd, ev, 1024);
	ASSERT_LE(0, n);
	removed = et_count_of(ev, n, KVTIER_EVENT_REMOVED, KVTIER_EVR_DETACH);
	EXPECT_EQ(nvme_only, removed);
	EXPECT_EQ(n, removed);
	ASSERT_EQ((int)EV_CAP / 2 - nvme_only,
		  et_census_all(self->pfd, 64, ent, EV_CAP, NULL, NULL));

	ASSERT_EQ(0, nvt_attach(self->ctl, self->path, 0, 0));
	i = n;
	n += et_drain(fd, ev + n, 1024 - n);
	replayed = et_count_of(ev + i, n - i, KVTIER_EVENT_STORED,
			    KVTIER_EVR_REPLAY);
	EXPECT_EQ(nvme_only, replayed);
	for (; i < n; i++)
		EXPECT_EQ(KVTIER_TIER_NVME, ev[i].tier);
	et_expect_pool(_metadata, self->pfd, &m, ev, n, &now);
	for (k = 0; k < (int)EV_CAP / 2; k++)
		EXPECT_EQ(0, et_get_check_key(self->pfd, self->buf, k));
	close(fd);
}

/* A copy that does not verify is removed, BAD_READ, at the GET's miss. */
TEST_F(evn, bad_read)
{
	struct kvtier_event ev[64];
	struct kvtier_block b;
	struct nvt_loc loc;
	int fd, n;
	__u64 k;

	for (k = 0; k < EV_DRAM * 2; k++)
		ASSERT_EQ(0, et_put_key(self->pfd, self->buf, EV_BS, k, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(0, kst_lookup1(self->pfd, EV_K0, 0, &b));
	ASSERT_EQ((__u32)KVTIER_TIER_NVME, b.tier);
	ASSERT_EQ(0, nvt_find_block(self->path, EV_K0, 0, &loc));
	ASSERT_EQ(0, nvt_raw_flip(self->path, loc.data_off + 100, 0x40));

	fd = et_open(self->pfd, KVTIER_EVENTS_NONBLOCK, 0, NULL);
	ASSERT_LE(0, fd);
	ASSERT_EQ(-ENOENT, kst_get1(self->pfd, EV_K0, 0, self->buf, NULL));
	n = et_drain(fd, ev, 64);
	ASSERT_EQ(1, et_count_of(ev, n, KVTIER_EVENT_REMOVED,
			      KVTIER_EVR_BAD_READ));
	EXPECT_EQ(0, et_count_of(ev, n, KVTIER_EVENT_MOVED, KVTIER_EVR_LOAD));
	EXPECT_EQ(0ULL, ev[n - 1].key[1]);
	EXPECT_EQ(KVTIER_TIER_NVME, ev[n - 1].tier);
	close(fd);
}

/* ---- with an HBM arena ----------------------------------------------------- */

#define EV_SLOTS	4U

FIXTURE(evh) {
	struct et_fix;
};

FIXTURE_SETUP(evh)
{
	struct kvtier_hbm_attach a;

	et_setup(_metadata, ET_FIX(self), "evh", EV_CAP);
	memset(&a, 0, sizeof(a));
	a.backend = KVTIER_HBM_EMUL;
	a.slots = EV_SLOTS;
	ASSERT_EQ(0, kst_ioctl(self->pfd, KVTIER_IOC_HBM_ATTACH, &a));
}

FIXTURE_TEARDOWN(evh)
{
	et_teardown(ET_FIX(self));
}

/* Stage @n keys from @first into HBM; the group's completion status. */
static int et_hbm_stage(int pfd, __u64 first, __u32 n, __u64 group)
{
	struct kvtier_hint h[EV_SLOTS];
	struct kvtier_prefetch pf;
	struct kvtier_completion c;
	struct pollfd p = { .fd = pfd, .events = POLLIN };
	struct timespec ts;
	__u32 i;
	int ret;

	memset(h, 0, sizeof(h));
	for (i = 0; i < n; i++) {
		h[i].key[0] = EV_K0;
		h[i].key[1] = first + i;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	memset(&pf, 0, sizeof(pf));
	pf.hints = (__u64)(uintptr_t)h;
	pf.count = n;
	pf.group = group;
	pf.tier = KVTIER_TIER_HBM;
	pf.deadline_ns = (ts.tv_sec + 20) * 1000000000ULL + ts.tv_nsec;
	ret = kst_ioctl(pfd, KVTIER_IOC_PREFETCH, &pf);
	if (ret)
		return ret;
	if (poll(&p, 1, 30000) <= 0)
		return -ETIMEDOUT;
	if (read(pfd, &c, sizeof(c)) != sizeof(c))
		return -errno;
	return c.status;
}

/* Staged into HBM: DRAM -> HBM; slots given back: HBM -> DRAM. */
TEST_F(evh, stage_and_unstage)
{
	struct kvtier_event ev[64];
	struct et_model m, now;
	int fd, n, i;
	__u64 k;

	fd = et_open(self->pfd, KVTIER_EVENTS_NONBLOCK, 0, NULL);
	ASSERT_LE(0, fd);
	for (k = 0; k < 2 * EV_SLOTS; k++)
		ASSERT_EQ(0, et_put_key(self->pfd, self->buf, EV_BS, k, 0));
	ASSERT_EQ(0, et_hbm_stage(self->pfd, 0, EV_SLOTS, 1));
	n = et_drain(fd, ev, 64);
	ASSERT_EQ((int)(3 * EV_SLOTS), n);
	for (i = 2 * EV_SLOTS; i < n; i++) {
		EXPECT_EQ(KVTIER_EVENT_MOVED, ev[i].type);
		EXPECT_EQ(KVTIER_EVR_STAGE, ev[i].reason);
		EXPECT_EQ(KVTIER_TIER_DRAM, ev[i].from);
		EXPECT_EQ(KVTIER_TIER_HBM, ev[i].tier);
		EXPECT_GT((__u64)EV_SLOTS, ev[i].key[1]);
	}
	/* The next four take the slots of the first four. */
	ASSERT_EQ(0, et_hbm_stage(self->pfd, EV_SLOTS, EV_SLOTS, 2));
	n += et_drain(fd, ev + n, 64 - n);
	ASSERT_EQ((int)(5 * EV_SLOTS), n);
	EXPECT_EQ((int)EV_SLOTS, et_count_of(ev, n, KVTIER_EVENT_MOVED,
					  KVTIER_EVR_UNSTAGE));
	EXPECT_EQ((int)(2 * EV_SLOTS), et_count_of(ev, n, KVTIER_EVENT_MOVED,
						KVTIER_EVR_STAGE));
	memset(&m, 0, sizeof(m));
	et_expect_pool(_metadata, self->pfd, &m, ev, n, &now);
	for (k = EV_SLOTS; k < 2 * EV_SLOTS; k++)
		EXPECT_EQ(KVTIER_TIER_HBM, now.tier[k]);
	close(fd);
}

TEST_HARNESS_MAIN
