// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier layer-wise loads (KVTIER_F_PARTS): GET with KVTIER_GET_PART copies
 * the range [part_off, part_off + part_len) of each block into the entry's
 * buffer or segments. What a runtime relies on: the exact bytes of the
 * range and not one byte more, per entry (a miss or a bad entry does not
 * stop the others); tier DRAM for a block copied from DRAM, NVMe for one
 * read straight from its copy; the block's record (KVTIER_F_META) with it;
 * each bad request its own errno with nothing done.
 *
 * A pool made with parts (struct kvtier_pool_create.parts) writes each NVMe
 * copy with a table of its parts' checksums, the page before the data
 * (format version 5). A part GET of a block only on NVMe reads the table
 * and the parts that cover the range, nothing else, serves the range once
 * they verify, and leaves the block on NVMe (stat.part_reads counts it, not
 * promotions). A copy whose table cannot be trusted is read whole, as a
 * plain GET does, and a copy whose data is bad is a miss (bad_reads),
 * never wrong bytes. A pool without parts serves part GETs by whole loads.
 * Part reads race with REPLACE, DROP and eviction without a wrong byte, and
 * those a GET starts ahead of its copies hold a bounded amount of memory.
 *
 * The dram cases need only the module. The nvme and ahead cases run as root
 * on /dev/nvme0n1 (or $KVTIER_NVME_DEV), whose content they destroy, and are
 * skipped without it; ahead needs the cgroup2 memory controller.
 */
#include <liburing.h>
#include <sys/mount.h>
#include "nvme_fixture.h"

#define PT_TAIL		64	/* poisoned bytes after each entry's range */
#define PT_POISON	0xc5
#define PT_GAP		3	/* poisoned bytes after each segment */
#define PT_NONE		0xffffffffU
#define PT_N		16U	/* entries of a batch, at most */
#define PT_SEGS		8U	/* segments of an entry, at most */
#define PT_K0		0x7061727473ULL	/* "parts" */
#define PT_MISS		999U	/* a key never PUT */

/* An entry's buffer: a range of up to a block, then PT_TAIL bytes. */
#define PT_SLOT(bs)	((size_t)(bs) + PT_TAIL)

#define PT_ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* ---- helpers --------------------------------------------------------------- */

/* Entry @i on key (@k0, @k1): buffer slot @i of @buf, poisoned. */
static void pt_ent(struct kvtier_block *e, char *buf, __u64 bs,
		   unsigned int i, __u64 k0, __u64 k1)
{
	char *slot = buf + i * PT_SLOT(bs);

	memset(slot, PT_POISON, PT_SLOT(bs));
	kst_blk(&e[i], k0, k1, slot);
}

static char *pt_slot(char *buf, __u64 bs, unsigned int i)
{
	return buf + i * PT_SLOT(bs);
}

/*
 * A GET with KVTIER_GET_PART (and @flags) of @n entries and records @m
 * (or NULL) for the range (@off, @len); 0 or -errno of the batch, @done.
 */
static int pt_get(int pfd, struct kvtier_block *e, __u32 n, __u32 flags,
		  __u32 off, __u32 len, struct kvtier_meta *m, __u32 *done)
{
	struct kvtier_batch b;
	int ret;

	memset(&b, 0, sizeof(b));
	b.blocks = (__u64)(uintptr_t)e;
	b.count = n;
	b.flags = KVTIER_GET_PART | flags;
	b.meta = (__u64)(uintptr_t)m;
	b.part_off = off;
	b.part_len = len;
	b.done = PT_NONE;
	ret = kst_ioctl(pfd, KVTIER_IOC_GET, &b);
	if (done)
		*done = b.done;
	return ret;
}

/*
 * Whether @buf holds bytes [@off, @off + @len) of key (@k0, @k1),
 * generation @gen (kst_fill(), remade in @ref), then PT_TAIL bytes of
 * poison: -1 if so, else the offset in @buf of the first bad byte.
 */
static long pt_bad(const char *buf, char *ref, __u64 bs, __u64 k0, __u64 k1,
		   __u64 gen, __u32 off, __u32 len)
{
	size_t i;

	kst_fill(ref, bs, k0, k1, gen);
	if (memcmp(buf, ref + off, len))
		for (i = 0; i < len; i++)
			if (buf[i] != ref[off + i])
				return (long)i;
	for (i = len; i < len + PT_TAIL; i++)
		if ((__u8)buf[i] != PT_POISON)
			return (long)i;
	return -1;
}

/* Whether the first @len bytes at @p are all poison. */
static bool pt_poisoned(const char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if ((__u8)p[i] != PT_POISON)
			return false;
	return true;
}

/*
 * Segments of uneven lengths, adding up to @total, in @area with PT_GAP
 * poisoned bytes after each (the area poisoned first); their number.
 */
static __u32 pt_segs(struct kvtier_seg *segs, char *area, size_t area_len,
		     __u32 total)
{
	static const __u32 lens[] = { 1, 4095, 4097, 3, 10000, 511 };
	__u32 i, n = 0, sum = 0;
	size_t off = 0;

	memset(area, PT_POISON, area_len);
	for (i = 0; i < PT_ARRAY_SIZE(lens) && sum + lens[i] < total; i++) {
		segs[n].addr = (__u64)(uintptr_t)(area + off);
		segs[n].len = lens[i];
		sum += lens[i];
		off += lens[i] + PT_GAP;
		n++;
	}
	segs[n].addr = (__u64)(uintptr_t)(area + off);
	segs[n].len = total - sum;
	return n + 1;
}

/* The segments' bytes into @out, in list order; false if a gap changed. */
static bool pt_gather(const struct kvtier_seg *segs, __u32 n, char *out)
{
	__u32 i;

	for (i = 0; i < n; i++) {
		const char *s = (const char *)(uintptr_t)segs[i].addr;

		memcpy(out, s, segs[i].len);
		out += segs[i].len;
		if (!pt_poisoned(s + segs[i].len, PT_GAP))
			return false;
	}
	return true;
}

/* ---- records (KVTIER_F_META) ------------------------------------------------- */

static __u8 pt_rec_byte(__u64 k1, unsigned int i)
{
	return (__u8)(kst_mix(k1 * 257 + i) >> 23);
}

static __u32 pt_rec_len(__u64 k1)
{
	return (__u32)(k1 * 11 % KVTIER_META_MAX) + 1;
}

static void pt_rec_set(struct kvtier_meta *m, __u64 k1)
{
	unsigned int i;

	memset(m, 0, sizeof(*m));
	m->len = pt_rec_len(k1);
	for (i = 0; i < m->len; i++)
		m->data[i] = pt_rec_byte(k1, i);
}

/* Whether @m is key @k1's record (@len 0: none), zeros past its length. */
static bool pt_rec_ok(const struct kvtier_meta *m, __u64 k1, __u32 len)
{
	unsigned int i;

	if (m->len != len || m->flags)
		return false;
	for (i = 0; i < KVTIER_META_MAX; i++)
		if (m->data[i] != (i < len ? pt_rec_byte(k1, i) : 0))
			return false;
	return true;
}

/* ---- io_uring ------------------------------------------------------------------ */

/*
 * Queue @nb part GETs at once, batch i for the range (@off[i], @len[i]) of
 * the @n entries @e[i]; wait for all of them. 0 with each CQE's res in
 * @res[i] (by user_data), or -errno of the ring.
 */
static int pt_uring_parts(int pfd, unsigned int nb, struct kvtier_block **e,
			  __u32 n, const __u32 *off, const __u32 *len,
			  struct kvtier_batch *b, int *res)
{
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	unsigned int i;
	int ret;

	ret = io_uring_queue_init(2 * nb, &ring, 0);
	if (ret)
		return ret;
	for (i = 0; i < nb; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
		struct kvtier_uring_cmd *c;

		if (!sqe) {
			ret = -EBUSY;
			goto out;
		}
		memset(&b[i], 0, sizeof(b[i]));
		b[i].blocks = (__u64)(uintptr_t)e[i];
		b[i].count = n;
		b[i].flags = KVTIER_GET_PART;
		b[i].part_off = off[i];
		b[i].part_len = len[i];
		b[i].done = PT_NONE;
		io_uring_prep_rw(IORING_OP_URING_CMD, sqe, pfd, NULL, 0, 0);
		sqe->cmd_op = KVTIER_IOC_GET;
		sqe->user_data = i;
		c = (struct kvtier_uring_cmd *)sqe->cmd;
		memset(c, 0, sizeof(*c));
		c->arg = (__u64)(uintptr_t)&b[i];
		res[i] = -EINPROGRESS;
	}
	if (io_uring_submit(&ring) != (int)nb) {
		ret = -EIO;
		goto out;
	}
	for (i = 0; i < nb; i++) {
		ret = io_uring_wait_cqe(&ring, &cqe);
		if (ret)
			goto out;
		if (cqe->user_data >= nb) {
			ret = -EPROTO;
			goto out;
		}
		res[cqe->user_data] = cqe->res;
		io_uring_cqe_seen(&ring, cqe);
	}
out:
	io_uring_queue_exit(&ring);
	return ret;
}

/* ==== the DRAM tier ========================================================== */

#define D_BS		(64 * KST_KIB)
#define D_CAP		32U
#define D_KEYS		8U	/* keys 1..D_KEYS PUT by the setup */

FIXTURE(dram) {
	int ctl, pfd;
	char name[KVTIER_NAME_MAX];
	char *buf;			/* PT_N slots */
	char *ref;			/* a block */
	char *area;			/* segments */
	size_t area_len;
	__u64 addr[D_KEYS + 1];		/* each key's, by k1 */
	struct kvtier_block e[PT_N];
	struct kvtier_seg segs[4][PT_SEGS];
};

FIXTURE_VARIANT(dram) {
	__u32 parts;	/* of the pool: the same for blocks in DRAM */
};

FIXTURE_VARIANT_ADD(dram, p0) {
	.parts = 0,
};
FIXTURE_VARIANT_ADD(dram, p8) {
	.parts = 8,
};

FIXTURE_SETUP(dram)
{
	struct kvtier_pool_create c;
	struct kvtier_block b;
	__u64 k;

	kst_setup(_metadata);
	self->pfd = -1;
	ASSERT_TRUE(kst_supported(KVTIER_F_PARTS));
	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	kst_name(self->name, "parts");
	kst_create_init(&c, self->name, D_BS, D_CAP, D_CAP);
	c.parts = variant->parts;
	self->pfd = kst_create(self->ctl, &c);
	ASSERT_LE(0, self->pfd);
	self->buf = kst_alloc(PT_N * PT_SLOT(D_BS));
	self->ref = kst_alloc(D_BS);
	self->area_len = 4 * (D_BS + PT_SEGS * PT_GAP);
	self->area = kst_alloc(self->area_len);
	ASSERT_NE(NULL, self->buf);
	ASSERT_NE(NULL, self->ref);
	ASSERT_NE(NULL, self->area);
	for (k = 1; k <= D_KEYS; k++) {
		kst_fill(self->ref, D_BS, PT_K0, k, 1);
		ASSERT_EQ(0, kst_put1(self->pfd, PT_K0, k, self->ref, &b));
		self->addr[k] = b.addr;
	}
}

FIXTURE_TEARDOWN(dram)
{
	if (self->pfd >= 0)
		close(self->pfd);
	kst_pool_destroy(self->ctl, self->name);
	kst_free(self->buf, PT_N * PT_SLOT(D_BS));
	kst_free(self->ref, D_BS);
	kst_free(self->area, self->area_len);
	close(self->ctl);
}

/* Area @i of the fixture's segment areas. */
static char *d_area(FIXTURE_DATA(dram) *self, unsigned int i)
{
	return self->area + i * (self->area_len / 4);
}

static const struct pt_range {
	__u32 off, len;
} d_ranges[] = {
	{ 0, D_BS },				/* the whole block */
	{ 0, 1 },				/* its first byte */
	{ D_BS - 1, 1 },			/* its last byte */
	{ 2 * KST_PAGE, 2 * KST_PAGE },		/* one part of 8 */
	{ KST_PAGE - 1, 2 },			/* across a page */
	{ 2 * KST_PAGE - 3, 2 * KST_PAGE + 6 },	/* across two parts' ends */
	{ 12345, 30001 },			/* odd both */
	{ 7, D_BS - 7 },			/* to the end */
};

/*
 * Each range of keys 1, 2, a miss, 3 and 4: the exact bytes and not one
 * more, tier DRAM, the key's address; the miss -ENOENT, its buffer
 * untouched. gets, hits and misses count entries; bytes_out the range's
 * length an entry; nothing is read in parts.
 */
TEST_F(dram, ranges)
{
	static const __u64 keys[] = { 1, 2, PT_MISS, 3, 4 };
	struct kvtier_pool_stat a, b;
	unsigned int r, i;
	__u32 done;

	for (r = 0; r < PT_ARRAY_SIZE(d_ranges); r++) {
		__u32 off = d_ranges[r].off, len = d_ranges[r].len;

		for (i = 0; i < PT_ARRAY_SIZE(keys); i++)
			pt_ent(self->e, self->buf, D_BS, i, PT_K0, keys[i]);
		ASSERT_EQ(0, kst_stat(self->pfd, &a));
		ASSERT_EQ(0, pt_get(self->pfd, self->e, PT_ARRAY_SIZE(keys), 0,
				    off, len, NULL, &done));
		ASSERT_EQ(0, kst_stat(self->pfd, &b));
		ASSERT_EQ(4U, done);
		for (i = 0; i < PT_ARRAY_SIZE(keys); i++) {
			const char *slot = pt_slot(self->buf, D_BS, i);
			struct kvtier_block *e = &self->e[i];
			long bad;

			if (keys[i] == PT_MISS) {
				ASSERT_EQ(-ENOENT, e->status);
				ASSERT_EQ(KVTIER_ADDR_NONE, e->addr);
				ASSERT_EQ((__u32)KVTIER_TIER_NONE, e->tier);
				ASSERT_TRUE(pt_poisoned(slot, PT_SLOT(D_BS)));
				continue;
			}
			bad = pt_bad(slot, self->ref, D_BS, PT_K0, keys[i], 1,
				     off, len);
			if (e->status || bad != -1)
				TH_LOG("range %u (%u, %u) key %llu: status %d, first bad byte %ld",
				       r, off, len, (unsigned long long)keys[i],
				       e->status, bad);
			ASSERT_EQ(0, e->status);
			ASSERT_EQ(-1, bad);
			ASSERT_EQ((__u32)KVTIER_TIER_DRAM, e->tier);
			ASSERT_EQ(self->addr[keys[i]], e->addr);
		}
		ASSERT_EQ(a.gets + 4, b.gets);
		ASSERT_EQ(a.hits + 4, b.hits);
		ASSERT_EQ(a.misses + 1, b.misses);
		ASSERT_EQ(a.bytes_out + 4ULL * len, b.bytes_out);
		ASSERT_EQ(a.puts, b.puts);
		ASSERT_EQ(0ULL, b.part_reads);
		ASSERT_EQ(variant->parts, b.parts);
	}
	/* The blocks are as they were: a plain GET of one is whole. */
	ASSERT_EQ(0, kst_get1(self->pfd, PT_K0, 3, self->buf, NULL));
	ASSERT_EQ(-1, kst_check_gen(self->buf, D_BS, PT_K0, 3, 1));
}

/*
 * Segments take the range in list order and must add up to part_len: a
 * list one byte long or short, or as long as the block, is that entry's
 * -EINVAL with its memory untouched; the others in the batch are served.
 * An entry whose buffer cannot be written is its -EFAULT alone.
 */
TEST_F(dram, segments)
{
	const __u32 off = 12345, len = 30001;
	struct kvtier_pool_stat a, b;
	__u32 n[4], done, i;
	long bad;

	/* 0: right; 1: a byte long; 2: a byte short; 3: the block's size */
	n[0] = pt_segs(self->segs[0], d_area(self, 0), self->area_len / 4, len);
	n[1] = pt_segs(self->segs[1], d_area(self, 1), self->area_len / 4,
		       len + 1);
	n[2] = pt_segs(self->segs[2], d_area(self, 2), self->area_len / 4,
		       len - 1);
	n[3] = pt_segs(self->segs[3], d_area(self, 3), self->area_len / 4,
		       D_BS);
	pt_ent(self->e, self->buf, D_BS, 0, PT_K0, 1);
	for (i = 0; i < 4; i++) {
		pt_ent(self->e, self->buf, D_BS, 1 + i, PT_K0, 2 + i);
		self->e[1 + i].buf = (__u64)(uintptr_t)self->segs[i];
		self->e[1 + i].nsegs = n[i];
	}
	pt_ent(self->e, self->buf, D_BS, 5, PT_K0, 6);
	self->e[5].buf = (__u64)(uintptr_t)kst_unmapped_addr();
	pt_ent(self->e, self->buf, D_BS, 6, PT_K0, 7);

	ASSERT_EQ(0, kst_stat(self->pfd, &a));
	ASSERT_EQ(0, pt_get(self->pfd, self->e, 7, 0, off, len, NULL, &done));
	ASSERT_EQ(0, kst_stat(self->pfd, &b));
	ASSERT_EQ(3U, done);

	ASSERT_EQ(0, self->e[0].status);
	ASSERT_EQ(-1, pt_bad(pt_slot(self->buf, D_BS, 0), self->ref, D_BS,
			     PT_K0, 1, 1, off, len));
	ASSERT_EQ(0, self->e[1].status);
	ASSERT_EQ((__u32)KVTIER_TIER_DRAM, self->e[1].tier);
	/* gather into slot 1, with a poisoned tail for pt_bad() */
	memset(pt_slot(self->buf, D_BS, 1), PT_POISON, PT_SLOT(D_BS));
	ASSERT_TRUE(pt_gather(self->segs[0], n[0],
			      pt_slot(self->buf, D_BS, 1)));
	bad = pt_bad(pt_slot(self->buf, D_BS, 1), self->ref, D_BS, PT_K0, 2, 1,
		     off, len);
	ASSERT_EQ(-1, bad);
	for (i = 1; i < 4; i++) {
		ASSERT_EQ(-EINVAL, self->e[1 + i].status);
		ASSERT_EQ(KVTIER_ADDR_NONE, self->e[1 + i].addr);
		ASSERT_EQ((__u32)KVTIER_TIER_NONE, self->e[1 + i].tier);
		ASSERT_TRUE(pt_poisoned(d_area(self, i), self->area_len / 4));
	}
	ASSERT_EQ(-EFAULT, self->e[5].status);
	ASSERT_EQ(0, self->e[6].status);
	ASSERT_EQ(-1, pt_bad(pt_slot(self->buf, D_BS, 6), self->ref, D_BS,
			     PT_K0, 7, 1, off, len));
	ASSERT_EQ(a.gets + 3, b.gets);
	ASSERT_EQ(a.bytes_out + 3ULL * len, b.bytes_out);
}

/* The block's record comes with its range; a miss's record is empty. */
TEST_F(dram, meta)
{
	static const __u64 keys[] = { 20, PT_MISS, 22 };
	struct kvtier_meta m[3];
	const __u32 off = 5000, len = 777;
	__u32 done, i;

	if (!kst_supported(KVTIER_F_META))
		SKIP(return, "kvtier without KVTIER_F_META");
	for (i = 0; i < 3; i += 2) {
		kst_fill(self->ref, D_BS, PT_K0, keys[i], 3);
		kst_blk(&self->e[0], PT_K0, keys[i], self->ref);
		pt_rec_set(&m[0], keys[i]);
		ASSERT_EQ(0, kst_batch_meta(self->pfd, KVTIER_IOC_PUT, self->e,
					    1, 0, m, &done));
		ASSERT_EQ(0, self->e[0].status);
	}
	for (i = 0; i < 3; i++)
		pt_ent(self->e, self->buf, D_BS, i, PT_K0, keys[i]);
	memset(m, 0xa5, sizeof(m));
	ASSERT_EQ(0, pt_get(self->pfd, self->e, 3, 0, off, len, m, &done));
	ASSERT_EQ(2U, done);
	ASSERT_EQ(-ENOENT, self->e[1].status);
	ASSERT_TRUE(pt_rec_ok(&m[1], PT_MISS, 0));
	for (i = 0; i < 3; i += 2) {
		ASSERT_EQ(0, self->e[i].status);
		ASSERT_EQ(-1, pt_bad(pt_slot(self->buf, D_BS, i), self->ref,
				     D_BS, PT_K0, keys[i], 3, off, len));
		ASSERT_TRUE(pt_rec_ok(&m[i], keys[i], pt_rec_len(keys[i])));
	}
}

/*
 * Four layers of keys 1..8 through io_uring, queued at once: each batch
 * completes with its layer, exact.
 */
TEST_F(dram, uring_layers)
{
	struct kvtier_block e[4][D_KEYS], *ents[4];
	struct kvtier_pool_stat a, b;
	struct kvtier_batch bt[4];
	__u32 off[4], len[4], l, k;
	char *mem;
	int res[4];

	if (!kst_supported(KVTIER_F_URING))
		SKIP(return, "kvtier without KVTIER_F_URING");
	mem = kst_alloc(4 * D_KEYS * PT_SLOT(D_BS));
	ASSERT_NE(NULL, mem);
	for (l = 0; l < 4; l++) {
		off[l] = l * (D_BS / 4);
		len[l] = D_BS / 4;
		ents[l] = e[l];
		for (k = 0; k < D_KEYS; k++)
			pt_ent(e[l], mem + l * D_KEYS * PT_SLOT(D_BS), D_BS,
			       k, PT_K0, 1 + k);
	}
	ASSERT_EQ(0, kst_stat(self->pfd, &a));
	ASSERT_EQ(0, pt_uring_parts(self->pfd, 4, ents, D_KEYS, off, len, bt,
				    res));
	ASSERT_EQ(0, kst_stat(self->pfd, &b));
	for (l = 0; l < 4; l++) {
		ASSERT_EQ(0, res[l]);
		ASSERT_EQ(D_KEYS, bt[l].done);
		for (k = 0; k < D_KEYS; k++) {
			ASSERT_EQ(0, e[l][k].status);
			ASSERT_EQ((__u32)KVTIER_TIER_DRAM, e[l][k].tier);
			ASSERT_EQ(-1, pt_bad(pt_slot(mem + l * D_KEYS *
						     PT_SLOT(D_BS), D_BS, k),
					     self->ref, D_BS, PT_K0, 1 + k, 1,
					     off[l], len[l]));
		}
	}
	ASSERT_EQ(a.gets + 4 * D_KEYS, b.gets);
	ASSERT_EQ(a.bytes_out + (__u64)D_KEYS * D_BS, b.bytes_out);
	kst_free(mem, 4 * D_KEYS * PT_SLOT(D_BS));
}

/* ---- rejections: one bad field each, nothing answered, copied or counted -- */

/*
 * @cmd (GET, PUT or LOOKUP) on @pfd, a batch of keys 1 and 50 (absent) with
 * @flags and the range (@off, @len), must fail with @err: no entry
 * answered, no buffer written, nothing counted, key 50 not stored.
 */
static void d_reject(struct __test_metadata *_metadata,
		     FIXTURE_DATA(dram) *self, int pfd, unsigned long cmd,
		     __u32 flags, __u32 off, __u32 len, int err)
{
	struct kvtier_pool_stat a, b;
	struct kvtier_batch bt;
	unsigned int i;

	pt_ent(self->e, self->buf, D_BS, 0, PT_K0, 1);
	pt_ent(self->e, self->buf, D_BS, 1, PT_K0, 50);
	if (cmd == KVTIER_IOC_LOOKUP) {
		self->e[0].buf = 0;
		self->e[1].buf = 0;
	}
	ASSERT_EQ(0, kst_stat(self->pfd, &a));
	memset(&bt, 0, sizeof(bt));
	bt.blocks = (__u64)(uintptr_t)self->e;
	bt.count = 2;
	bt.flags = flags;
	bt.part_off = off;
	bt.part_len = len;
	bt.done = PT_NONE;
	ASSERT_EQ(err, kst_ioctl(pfd, cmd, &bt));
	ASSERT_EQ(PT_NONE, bt.done);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0x7eadbeef, self->e[i].status);
		ASSERT_TRUE(pt_poisoned(pt_slot(self->buf, D_BS, i),
					PT_SLOT(D_BS)));
	}
	ASSERT_EQ(0, kst_stat(self->pfd, &b));
	ASSERT_EQ(a.gets, b.gets);
	ASSERT_EQ(a.hits, b.hits);
	ASSERT_EQ(a.misses, b.misses);
	ASSERT_EQ(a.bytes_out, b.bytes_out);
	ASSERT_EQ(a.puts, b.puts);
	ASSERT_EQ(a.part_reads, b.part_reads);
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, PT_K0, 50, NULL));
}

#define D_REJECT(test, cmd, flags, off, len, err)			\
TEST_F(dram, test)							\
{									\
	d_reject(_metadata, self, self->pfd, cmd, flags, off, len, err); \
}

#define D_GET	KVTIER_IOC_GET
#define D_PART	KVTIER_GET_PART

D_REJECT(reject_len_zero, D_GET, D_PART, 0, 0, -EINVAL)
D_REJECT(reject_len_zero_off, D_GET, D_PART, 4096, 0, -EINVAL)
D_REJECT(reject_past_end, D_GET, D_PART, D_BS - 8, 9, -EINVAL)
D_REJECT(reject_off_at_end, D_GET, D_PART, D_BS, 1, -EINVAL)
D_REJECT(reject_len_over_block, D_GET, D_PART, 0, D_BS + 1, -EINVAL)
/* off + len wraps around 32 bits: still past the end */
D_REJECT(reject_off_wraps, D_GET, D_PART, 0xffffffffU, 2, -EINVAL)
D_REJECT(reject_len_wraps, D_GET, D_PART, 1, 0xffffffffU, -EINVAL)
/* unknown GET flags, with a valid range or without */
D_REJECT(reject_flag_unknown, D_GET, D_PART | kst_unknown_bit(KST_GET_FLAGS),
	 0, 8, -EINVAL)
D_REJECT(reject_flag_unknown_alone, D_GET, kst_unknown_bit(KST_GET_FLAGS), 0,
	 0, -EINVAL)
#ifdef KVTIER_GET_DIRECT
/* a range and a read into the caller's memory do not go together */
D_REJECT(reject_part_direct, D_GET, D_PART | KVTIER_GET_DIRECT, 0, 8, -EINVAL)
#endif
D_REJECT(reject_flag_bit31, D_GET, D_PART | 1U << 31, 0, 8, -EINVAL)
/* the range without the flag */
D_REJECT(reject_get_len_no_flag, D_GET, 0, 0, 8, -EINVAL)
D_REJECT(reject_get_off_no_flag, D_GET, 0, 8, 0, -EINVAL)
/* PUT has no parts, REPLACE being bit 0 too; nor has LOOKUP */
D_REJECT(reject_put_range, KVTIER_IOC_PUT, 0, 0, 8, -EINVAL)
D_REJECT(reject_put_off, KVTIER_IOC_PUT, 0, 8, 0, -EINVAL)
D_REJECT(reject_put_replace_range, KVTIER_IOC_PUT, KVTIER_PUT_REPLACE, 0, 8,
	 -EINVAL)
D_REJECT(reject_lookup_range, KVTIER_IOC_LOOKUP, 0, 8, 8, -EINVAL)

/* The valid batch of the cases above is taken (they are about one field). */
TEST_F(dram, reject_valid_taken)
{
	__u32 done;

	pt_ent(self->e, self->buf, D_BS, 0, PT_K0, 1);
	pt_ent(self->e, self->buf, D_BS, 1, PT_K0, 50);
	ASSERT_EQ(0, pt_get(self->pfd, self->e, 2, 0, 0, 8, NULL, &done));
	ASSERT_EQ(1U, done);
	ASSERT_EQ(0, self->e[0].status);
	ASSERT_EQ(-ENOENT, self->e[1].status);
}

/* A pool fd of a control fd that did not negotiate KVTIER_F_PARTS. */
TEST_F(dram, reject_no_feature)
{
	struct kvtier_api api;
	int ctl = kst_ctl_open_raw(), fd;
	__u32 done;

	ASSERT_LE(0, ctl);
	ASSERT_EQ(0, kst_api(ctl, KST_F_KNOWN & ~KVTIER_F_PARTS, &api));
	ASSERT_EQ(0ULL, api.features & KVTIER_F_PARTS);
	ASSERT_NE(0ULL, api.supported & KVTIER_F_PARTS);
	fd = kst_pool_open(ctl, self->name, 0);
	ASSERT_LE(0, fd);
	d_reject(_metadata, self, fd, D_GET, D_PART, 0, 8, -EOPNOTSUPP);
	d_reject(_metadata, self, fd, D_GET, D_PART, 8, D_BS - 8,
		 -EOPNOTSUPP);
	/* a plain GET works there */
	ASSERT_EQ(0, kst_get1(fd, PT_K0, 1, self->buf, NULL));
	ASSERT_EQ(-1, kst_check_gen(self->buf, D_BS, PT_K0, 1, 1));
	/* and the part GET through the fixture's fd, which has it */
	pt_ent(self->e, self->buf, D_BS, 0, PT_K0, 1);
	ASSERT_EQ(0, pt_get(self->pfd, self->e, 1, 0, 8, D_BS - 8, NULL,
			    &done));
	ASSERT_EQ(1U, done);
	close(fd);
	close(ctl);
}

/* ==== the NVMe tier ========================================================== */

#define N_KEYS		16U	/* keys 0..N_KEYS-1: only on NVMe after cold() */
#define N_LAYERS	8U

FIXTURE(nvme) {
	struct nvt_fix;
	char *slots;		/* PT_N slots */
	char *ref;		/* a block */
	__u32 pp;		/* pages a part */
	struct kvtier_block e[PT_N];
};

FIXTURE_VARIANT(nvme) {
	struct nvt_cfg cfg;
};

#define PT_NVME_CFG(block, nparts) {					\
	.block_size = (block), .out = true, .writer_ok = true,		\
	.tag = "parts", .capacity = CAP, .dram_blocks = DRAM,		\
	.parts = (nparts), .attach = true, .reattach = true,		\
}

/* 16 pages in 8 parts of 2. */
FIXTURE_VARIANT_ADD(nvme, b64k_p8) {
	.cfg = PT_NVME_CFG(64 * KST_KIB, 8),
};
/* 10 pages in 3 parts: 4, 4 and 2 pages; layers cut across them. */
FIXTURE_VARIANT_ADD(nvme, b40k_p3) {
	.cfg = PT_NVME_CFG(40 * KST_KIB, 3),
};

FIXTURE_SETUP(nvme)
{
	__u32 pages;

	nvt_setup(_metadata, NVT_FIX(self), &variant->cfg);
	ASSERT_TRUE(kst_supported(KVTIER_F_PARTS));
	pages = self->bs / KST_PAGE;
	self->pp = (pages + variant->cfg.parts - 1) / variant->cfg.parts;
	self->slots = kst_alloc(PT_N * PT_SLOT(self->bs));
	self->ref = kst_alloc(self->bs);
	ASSERT_NE(NULL, self->slots);
	ASSERT_NE(NULL, self->ref);
}

FIXTURE_TEARDOWN(nvme)
{
	kst_free(self->slots, PT_N * PT_SLOT(self->bs));
	kst_free(self->ref, self->bs);
	nvt_teardown(NVT_FIX(self));
}

/* Layer @l of N_LAYERS: its range of the block, unaligned in b40k. */
static void n_layer(__u64 bs, __u32 l, __u32 *off, __u32 *len)
{
	*off = (__u32)(bs * l / N_LAYERS);
	*len = (__u32)(bs * (l + 1) / N_LAYERS) - *off;
}

/* The device pages a part read of (@off, @len) reads: parts and table. */
static __u64 n_pages_read(FIXTURE_DATA(nvme) *self, __u32 off, __u32 len)
{
	__u32 pages = self->bs / KST_PAGE;
	__u32 first = off / KST_PAGE / self->pp;
	__u32 last = (off + len - 1) / KST_PAGE / self->pp;
	__u32 n = (last - first + 1) * self->pp;

	if (n > pages - first * self->pp)
		n = pages - first * self->pp;
	return n + 1;
}

/*
 * PUT keys 0..NPUT-1 (generation 1) and SYNC: keys 0..N_KEYS-1 are then
 * only on NVMe (checked by LOOKUP).
 */
static int n_cold(FIXTURE_DATA(nvme) *self)
{
	int ret;
	__u64 k;

	ret = put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0);
	if (!ret)
		ret = nvt_sync(self->pfd, NULL);
	for (k = 0; !ret && k < N_KEYS; k++)
		if (key_tier(self->pfd, k) != KVTIER_TIER_NVME)
			ret = -EPROTO;
	return ret;
}

/*
 * Part GET of keys @keys[0..@n-1] (generation @gen, PT_MISS: a miss) for
 * (@off, @len) on @pfd; each served entry exact and of tier @tier, each
 * miss -ENOENT with its buffer untouched. The number served, or -1.
 */
static int n_get(struct __test_metadata *_metadata,
		 FIXTURE_DATA(nvme) *self, int pfd, const __u64 *keys,
		 __u32 n, __u64 gen, __u32 off, __u32 len, __u32 tier)
{
	__u32 i, done;
	int served = 0;

	for (i = 0; i < n; i++)
		pt_ent(self->e, self->slots, self->bs, i, K0, keys[i]);
	if (pt_get(pfd, self->e, n, 0, off, len, NULL, &done))
		return -1;
	for (i = 0; i < n; i++) {
		const char *slot = pt_slot(self->slots, self->bs, i);
		struct kvtier_block *e = &self->e[i];
		long bad = -1;

		if (keys[i] == PT_MISS) {
			if (e->status != -ENOENT ||
			    !pt_poisoned(slot, PT_SLOT(self->bs)))
				return -1;
			continue;
		}
		if (!e->status)
			bad = pt_bad(slot, self->ref, self->bs, K0, keys[i],
				     GEN(gen), off, len);
		if (e->status || bad != -1 || e->tier != tier) {
			TH_LOG("(%u, %u) key %llu: status %d, tier %u (want %u), bad byte %ld",
			       off, len, (unsigned long long)keys[i],
			       e->status, e->tier, tier, bad);
			return -1;
		}
		served++;
	}
	return (__u32)served == done ? served : -1;
}

/* Keys @first..@first+@n-1 into @keys. */
static void n_keys(__u64 *keys, __u64 first, __u32 n)
{
	__u32 i;

	for (i = 0; i < n; i++)
		keys[i] = first + i;
}

/*
 * The layer-wise load: every layer of keys 0..N_KEYS-1, blocks only on
 * NVMe, each read in the parts that cover it (the table page and those
 * parts, no more), exact, tier NVMe; the blocks stay only on NVMe: no
 * promotion, DRAM unchanged, LOOKUP says NVMe. part_reads counts each
 * entry, and the GET counters as for any GET.
 */
TEST_F_TIMEOUT(nvme, layers_stay_on_nvme, 180)
{
	struct kvtier_pool_stat a, b;
	__u64 keys[N_KEYS], pages = 0;
	long long read0;
	__u32 l, off, len;
	__u64 k;

	ASSERT_EQ(0, n_cold(self));
	n_keys(keys, 0, N_KEYS);
	ASSERT_EQ(0, kst_stat(self->pfd, &a));
	read0 = NSTAT(self->ctl, bytes_read);
	ASSERT_LE(0, read0);
	for (l = 0; l < N_LAYERS; l++) {
		n_layer(self->bs, l, &off, &len);
		ASSERT_EQ((int)N_KEYS, n_get(_metadata, self, self->pfd, keys,
					     N_KEYS, 1, off, len,
					     KVTIER_TIER_NVME));
		pages += N_KEYS * n_pages_read(self, off, len);
	}
	ASSERT_EQ(0, kst_stat(self->pfd, &b));
	EXPECT_EQ(a.part_reads + N_KEYS * N_LAYERS, b.part_reads);
	EXPECT_EQ(a.promotions, b.promotions);
	EXPECT_EQ(a.bad_reads, b.bad_reads);
	EXPECT_EQ(a.resident[KVTIER_TIER_DRAM], b.resident[KVTIER_TIER_DRAM]);
	EXPECT_EQ(a.resident[KVTIER_TIER_NVME], b.resident[KVTIER_TIER_NVME]);
	EXPECT_EQ(a.gets + N_KEYS * N_LAYERS, b.gets);
	EXPECT_EQ(a.hits + N_KEYS * N_LAYERS, b.hits);
	EXPECT_EQ(a.bytes_out + N_KEYS * self->bs, b.bytes_out);
	EXPECT_EQ(a.demotions, b.demotions);
	EXPECT_EQ(read0 + (long long)(pages * KST_PAGE),
		  NSTAT(self->ctl, bytes_read));
	for (k = 0; k < N_KEYS; k++)
		ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, k));
	/* Still whole: a plain GET loads and serves the block. */
	ASSERT_EQ(0, get_check(self->pfd, self->buf, self->bs, 5, 1));
	ASSERT_EQ((long long)b.promotions + 1, PSTAT(self->pfd, promotions));
}

/*
 * Ranges across part boundaries, the whole block, single bytes at either
 * end: the exact bytes, each read in the parts that cover it.
 */
TEST_F_TIMEOUT(nvme, ranges_across_parts, 180)
{
	const __u32 pb = self->pp * KST_PAGE, bs = self->bs;
	const struct pt_range ranges[] = {
		{ 0, bs },
		{ 0, 1 },
		{ bs - 1, 1 },
		{ pb - 1, 2 },
		{ pb - 100, 300 },
		{ pb - KST_PAGE, pb + KST_PAGE + 1 },
		{ 3, bs - 6 },
		{ bs - pb + 5, pb - 5 },
		{ 2 * pb - 7, bs - 2 * pb + 7 },
	};
	struct kvtier_pool_stat a, b;
	__u64 keys[8];
	long long read0;
	__u64 pages = 0;
	unsigned int r;

	ASSERT_EQ(0, n_cold(self));
	n_keys(keys, 4, 8);
	ASSERT_EQ(0, kst_stat(self->pfd, &a));
	read0 = NSTAT(self->ctl, bytes_read);
	for (r = 0; r < PT_ARRAY_SIZE(ranges); r++) {
		ASSERT_EQ(8, n_get(_metadata, self, self->pfd, keys, 8, 1,
				   ranges[r].off, ranges[r].len,
				   KVTIER_TIER_NVME));
		pages += 8 * n_pages_read(self, ranges[r].off, ranges[r].len);
	}
	ASSERT_EQ(0, kst_stat(self->pfd, &b));
	EXPECT_EQ(a.part_reads + 8 * PT_ARRAY_SIZE(ranges), b.part_reads);
	EXPECT_EQ(a.promotions, b.promotions);
	EXPECT_EQ(read0 + (long long)(pages * KST_PAGE),
		  NSTAT(self->ctl, bytes_read));
}

/*
 * One batch of a block only on NVMe, one in DRAM (and clean on NVMe), a
 * miss, another on NVMe, and the first again: NVMe, DRAM, -ENOENT, NVMe,
 * NVMe. The block in DRAM is served from DRAM.
 */
TEST_F(nvme, mixed_batch)
{
	const __u64 keys[] = { 0, NPUT - 1, PT_MISS, 1, 0 };
	static const __u32 tiers[] = { KVTIER_TIER_NVME, KVTIER_TIER_DRAM,
				       KVTIER_TIER_NONE, KVTIER_TIER_NVME,
				       KVTIER_TIER_NVME };
	const __u32 off = self->pp * KST_PAGE - 10, len = 20;
	struct kvtier_pool_stat a, b;
	__u32 done, i;

	ASSERT_EQ(0, n_cold(self));
	ASSERT_EQ(KVTIER_TIER_DRAM, key_tier(self->pfd, NPUT - 1));
	for (i = 0; i < 5; i++)
		pt_ent(self->e, self->slots, self->bs, i, K0, keys[i]);
	ASSERT_EQ(0, kst_stat(self->pfd, &a));
	ASSERT_EQ(0, pt_get(self->pfd, self->e, 5, 0, off, len, NULL, &done));
	ASSERT_EQ(0, kst_stat(self->pfd, &b));
	ASSERT_EQ(4U, done);
	for (i = 0; i < 5; i++) {
		ASSERT_EQ(tiers[i], self->e[i].tier);
		if (keys[i] == PT_MISS) {
			ASSERT_EQ(-ENOENT, self->e[i].status);
			continue;
		}
		ASSERT_EQ(0, self->e[i].status);
		ASSERT_EQ(-1, pt_bad(pt_slot(self->slots, self->bs, i),
				     self->ref, self->bs, K0, keys[i], GEN(1),
				     off, len));
	}
	EXPECT_EQ(a.part_reads + 3, b.part_reads);
	EXPECT_EQ(a.misses + 1, b.misses);
	EXPECT_EQ(a.hits + 4, b.hits);
	EXPECT_EQ(a.promotions, b.promotions);
	EXPECT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 0));
}

/*
 * Entries that fail while their part reads are under way: segments that do
 * not add up to part_len (-EINVAL) and a buffer that cannot be written
 * (-EFAULT) end their reads unused; the entry after them is served, the
 * blocks stay on NVMe, nothing is counted for them, and the device, its
 * reads drained, detaches.
 */
TEST_F(nvme, failed_entries_end_their_reads)
{
	const __u32 off = self->pp * KST_PAGE - 100, len = 200;
	struct kvtier_seg segs[2];
	struct kvtier_pool_stat a, b;
	char *area = pt_slot(self->slots, self->bs, 4);
	__u32 done, i;

	ASSERT_EQ(0, n_cold(self));
	for (i = 0; i < 3; i++)
		pt_ent(self->e, self->slots, self->bs, i, K0, i);
	segs[0].addr = (__u64)(uintptr_t)area;
	segs[0].len = len / 2;
	segs[1].addr = (__u64)(uintptr_t)(area + len);
	segs[1].len = len / 2 + 1;
	memset(area, PT_POISON, 2 * len + 8);
	self->e[0].buf = (__u64)(uintptr_t)segs;
	self->e[0].nsegs = 2;
	self->e[1].buf = (__u64)(uintptr_t)kst_unmapped_addr();
	ASSERT_EQ(0, kst_stat(self->pfd, &a));
	ASSERT_EQ(0, pt_get(self->pfd, self->e, 3, 0, off, len, NULL, &done));
	ASSERT_EQ(0, kst_stat(self->pfd, &b));
	ASSERT_EQ(1U, done);
	ASSERT_EQ(-EINVAL, self->e[0].status);
	ASSERT_TRUE(pt_poisoned(area, 2 * len + 8));
	ASSERT_EQ(-EFAULT, self->e[1].status);
	ASSERT_EQ((__u32)KVTIER_TIER_NONE, self->e[1].tier);
	ASSERT_EQ(0, self->e[2].status);
	ASSERT_EQ(-1, pt_bad(pt_slot(self->slots, self->bs, 2), self->ref,
			     self->bs, K0, 2, GEN(1), off, len));
	EXPECT_EQ(a.part_reads + 1, b.part_reads);
	EXPECT_EQ(a.gets + 1, b.gets);
	EXPECT_EQ(a.bytes_out + len, b.bytes_out);
	EXPECT_EQ(a.promotions, b.promotions);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, i));
	/* nothing is left counted in the device's reads */
	ASSERT_EQ(0, nvt_detach_deadline(60));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	ASSERT_EQ(1, n_get(_metadata, self, self->pfd, (const __u64[]){ 0 }, 1,
			   1, off, len, KVTIER_TIER_NVME));
}

/*
 * Processes killed while their part GETs read (every layer of the cold
 * blocks, over and over) leak nothing: afterwards every layer still reads
 * exact (from NVMe, or from DRAM where a whole load the killed GET fell
 * back to got there first), the device detaches (no read left counted in
 * it), and once every key is dropped every address is free again: the
 * pool takes a PUT for each (a block held by a lost user reference is
 * never freed).
 */
TEST_F_TIMEOUT(nvme, killed_part_gets_leak_nothing, 300)
{
	__u32 off, len, done, i, l;
	int round, st;
	pid_t pid;

	ASSERT_EQ(0, n_cold(self));
	for (round = 0; round < 12; round++) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			for (;;) {
				for (l = 0; l < N_LAYERS; l++) {
					n_layer(self->bs, l, &off, &len);
					for (i = 0; i < N_KEYS; i++)
						pt_ent(self->e, self->slots,
						       self->bs, i, K0, i);
					pt_get(self->pfd, self->e, N_KEYS, 0,
					       off, len, NULL, &done);
				}
			}
		}
		usleep(1000 + round * 4000);
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(pid, waitpid(pid, &st, 0));
		ASSERT_TRUE(WIFSIGNALED(st));
	}
	for (l = 0; l < N_LAYERS; l++) {
		n_layer(self->bs, l, &off, &len);
		for (i = 0; i < N_KEYS; i++)
			pt_ent(self->e, self->slots, self->bs, i, K0, i);
		ASSERT_EQ(0, pt_get(self->pfd, self->e, N_KEYS, 0, off, len,
				    NULL, &done));
		ASSERT_EQ(N_KEYS, done);
		for (i = 0; i < N_KEYS; i++) {
			ASSERT_EQ(-1, pt_bad(pt_slot(self->slots, self->bs, i),
					     self->ref, self->bs, K0, i, GEN(1),
					     off, len));
			ASSERT_TRUE(self->e[i].tier == KVTIER_TIER_NVME ||
				    self->e[i].tier == KVTIER_TIER_DRAM);
		}
	}
	ASSERT_EQ(0, nvt_detach_deadline(60));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	for (i = 0; i < NPUT; i++)
		ASSERT_EQ(0, kst_drop1(self->pfd, K0, i));
	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 1000, CAP, 2,
			       0));
}

/*
 * Records (KVTIER_F_META) of blocks read in parts from NVMe: each entry
 * gets its block's record with its range, a miss an empty one.
 */
TEST_F(nvme, meta_from_nvme)
{
	const __u64 keys[] = { 3, PT_MISS, 5, 6 };
	const __u32 off = 4 * KST_PAGE + 1, len = 3 * KST_PAGE;
	struct kvtier_pool_stat a, b;
	struct kvtier_meta m[4];
	__u32 done, i;
	__u64 k;

	if (!kst_supported(KVTIER_F_META))
		SKIP(return, "kvtier without KVTIER_F_META");
	for (k = 0; k < NPUT; k++) {
		kst_fill(self->buf, self->bs, K0, k, GEN(1));
		kst_blk(&self->e[0], K0, k, self->buf);
		pt_rec_set(&m[0], k);
		ASSERT_EQ(0, kst_batch_meta(self->pfd, KVTIER_IOC_PUT, self->e,
					    1, 0, m, &done));
		ASSERT_EQ(0, self->e[0].status);
	}
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	for (i = 0; i < 4; i++)
		pt_ent(self->e, self->slots, self->bs, i, K0, keys[i]);
	memset(m, 0xa5, sizeof(m));
	ASSERT_EQ(0, kst_stat(self->pfd, &a));
	ASSERT_EQ(0, pt_get(self->pfd, self->e, 4, 0, off, len, m, &done));
	ASSERT_EQ(0, kst_stat(self->pfd, &b));
	ASSERT_EQ(3U, done);
	EXPECT_EQ(a.part_reads + 3, b.part_reads);
	for (i = 0; i < 4; i++) {
		if (keys[i] == PT_MISS) {
			ASSERT_EQ(-ENOENT, self->e[i].status);
			ASSERT_TRUE(pt_rec_ok(&m[i], PT_MISS, 0));
			continue;
		}
		ASSERT_EQ(0, self->e[i].status);
		ASSERT_EQ((__u32)KVTIER_TIER_NVME, self->e[i].tier);
		ASSERT_EQ(-1, pt_bad(pt_slot(self->slots, self->bs, i),
				     self->ref, self->bs, K0, keys[i], GEN(1),
				     off, len));
		ASSERT_TRUE(pt_rec_ok(&m[i], keys[i], pt_rec_len(keys[i])));
	}
}

/*
 * Cuts at the ends of the range parts takes: KVTIER_PARTS_MAX parts of a
 * block of as many pages (a part a page), more parts than pages (16 KiB:
 * still a part a page), and 2 parts of 3 pages (2 and 1). Single bytes at
 * either end, a byte each side of the first cut, the whole block: exact,
 * each read in the parts that cover it.
 */
TEST_F_TIMEOUT(nvme, parts_extremes, 180)
{
	static const struct {
		__u64 bs;
		__u32 parts, pp;
	} cuts[] = {
		{ KVTIER_PARTS_MAX * KST_PAGE, KVTIER_PARTS_MAX, 1 },
		{ 4 * KST_PAGE, KVTIER_PARTS_MAX, 1 },
		{ 3 * KST_PAGE, 2, 2 },
	};
	size_t mlen = KVTIER_PARTS_MAX * KST_PAGE + PT_TAIL;
	char *blk = kst_alloc(mlen), *ref = kst_alloc(mlen);
	unsigned int c, r;

	ASSERT_NE(NULL, blk);
	ASSERT_NE(NULL, ref);
	for (c = 0; c < PT_ARRAY_SIZE(cuts); c++) {
		const __u64 bs = cuts[c].bs;
		const __u32 cut = cuts[c].pp * KST_PAGE;
		const struct pt_range ranges[] = {
			{ 0, 1 }, { bs - 1, 1 }, { cut - 1, 2 }, { 0, bs },
		};
		struct kvtier_pool_create pc;
		char name[KVTIER_NAME_MAX];
		struct kvtier_pool_stat st;
		long long read0;
		__u64 k, reads = 0;
		int pfd;

		kst_name(name, "cuts");
		kst_create_init(&pc, name, bs, 32, 4);
		pc.parts = cuts[c].parts;
		pfd = kst_create(self->ctl, &pc);
		ASSERT_LE(0, pfd);
		ASSERT_EQ(0, put_range(pfd, blk, bs, 0, 16, 1, 0));
		ASSERT_EQ(0, nvt_sync(pfd, NULL));
		for (k = 0; k < 8; k++)
			ASSERT_EQ(KVTIER_TIER_NVME, key_tier(pfd, k));
		read0 = NSTAT(self->ctl, bytes_read);
		for (r = 0; r < PT_ARRAY_SIZE(ranges); r++) {
			__u32 off = ranges[r].off, len = ranges[r].len;
			__u32 first = off / KST_PAGE / cuts[c].pp;
			__u32 last = (off + len - 1) / KST_PAGE / cuts[c].pp;
			__u64 pages = (last - first + 1) * cuts[c].pp;

			if (pages > bs / KST_PAGE - first * cuts[c].pp)
				pages = bs / KST_PAGE - first * cuts[c].pp;
			for (k = 0; k < 8; k++) {
				__u32 done;

				memset(blk, PT_POISON, len + PT_TAIL);
				kst_blk(&self->e[0], K0, k, blk);
				ASSERT_EQ(0, pt_get(pfd, self->e, 1, 0, off,
						    len, NULL, &done));
				ASSERT_EQ(0, self->e[0].status);
				ASSERT_EQ((__u32)KVTIER_TIER_NVME,
					  self->e[0].tier);
				ASSERT_EQ(-1, pt_bad(blk, ref, bs, K0, k,
						     GEN(1), off, len));
				reads += (pages + 1) * KST_PAGE;
			}
		}
		ASSERT_EQ(0, kst_stat(pfd, &st));
		EXPECT_EQ(cuts[c].parts, st.parts);
		EXPECT_EQ(8 * PT_ARRAY_SIZE(ranges), st.part_reads);
		EXPECT_EQ(0ULL, st.promotions);
		EXPECT_EQ(read0 + (long long)reads, NSTAT(self->ctl, bytes_read));
		close(pfd);
		ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
	}
	kst_free(blk, mlen);
	kst_free(ref, mlen);
}

/*
 * A pool without parts: its copies have no table, so a part GET of a block
 * only on NVMe reads it whole into DRAM (a promotion), then serves the
 * range from DRAM; nothing counts as a part read.
 */
TEST_F_TIMEOUT(nvme, pool_without_parts, 120)
{
	const __u32 off = self->pp * KST_PAGE - 100, len = 300;
	char name[KVTIER_NAME_MAX];
	struct kvtier_pool_stat a, b;
	struct nvt_loc loc;
	__u64 keys[8], id;
	int pfd;

	kst_name(name, "noparts");
	pfd = kst_pool_create(self->ctl, name, self->bs, CAP, DRAM);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, put_range(pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(pfd, NULL));
	n_keys(keys, 0, 8);
	for (id = 0; id < 8; id++)
		ASSERT_EQ(KVTIER_TIER_NVME, key_tier(pfd, id));
	/* its copies have no table */
	ASSERT_EQ(0, nvt_pool_id(nvt_dev(), name, &id));
	ASSERT_EQ(0, nvt_find_block_of(nvt_dev(), id, K0, 0, &loc));
	ASSERT_EQ(0U, loc.flags & NVT_REC_PARTS);
	ASSERT_EQ(0, kst_stat(pfd, &a));
	ASSERT_EQ(0U, a.parts);
	ASSERT_EQ(8, n_get(_metadata, self, pfd, keys, 8, 1, off, len,
			   KVTIER_TIER_DRAM));
	ASSERT_EQ(0, kst_stat(pfd, &b));
	EXPECT_EQ(0ULL, b.part_reads);
	EXPECT_EQ(a.promotions + 8, b.promotions);
	EXPECT_EQ(a.bad_reads, b.bad_reads);
	EXPECT_EQ(a.bytes_out + 8 * len, b.bytes_out);
	EXPECT_EQ(KVTIER_TIER_DRAM, key_tier(pfd, 7));
	close(pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
}

/*
 * The format: each copy's record says it has a table, the page before its
 * data, which names the pool and the key and holds the crc32c of each part
 * as the device has them, of the whole block and of itself; the pool
 * table records the pool's parts.
 */
TEST_F_TIMEOUT(nvme, on_disk_table, 120)
{
	size_t tlen = NVT_POOL_SLOTS * sizeof(struct nvt_disk_pool);
	struct nvt_disk_pool *table = kst_alloc(tlen);
	struct nvt_disk_parts *t = kst_alloc(NVT_DISK_PAGE);
	__u32 pages = self->bs / KST_PAGE, nr, i, k;
	struct nvt_loc locs[N_KEYS];
	__u64 id;

	ASSERT_NE(NULL, table);
	ASSERT_NE(NULL, t);
	ASSERT_EQ(0, n_cold(self));
	ASSERT_EQ(0, nvt_pool_id(nvt_dev(), self->name, &id));
	ASSERT_EQ(0, nvt_raw_read(nvt_dev(), NVT_POOL_TABLE_OFF, table, tlen));
	for (i = 0; i < NVT_POOL_SLOTS; i++)
		if (table[i].id == id)
			break;
	ASSERT_GT(NVT_POOL_SLOTS, i);
	ASSERT_EQ(variant->cfg.parts, table[i].parts);

	nr = (pages + self->pp - 1) / self->pp;
	ASSERT_EQ(0, nvt_find_blocks_of(nvt_dev(), id, K0, 0, N_KEYS, locs));
	for (k = 0; k < N_KEYS; k++) {
		__u32 crc, whole;

		ASSERT_EQ(NVT_REC_PARTS, locs[k].flags);
		ASSERT_EQ(pages, locs[k].pages);
		ASSERT_EQ(0, nvt_raw_read(nvt_dev(), locs[k].data_off,
					  self->out, self->bs));
		ASSERT_EQ(-1, kst_check_gen(self->out, self->bs, K0, k,
					    GEN(1)));
		ASSERT_EQ(0, nvt_raw_read(nvt_dev(),
					  locs[k].data_off - NVT_DISK_PAGE, t,
					  NVT_DISK_PAGE));
		ASSERT_EQ(NVT_PARTS_MAGIC, t->magic);
		ASSERT_EQ(id, t->pool_id);
		ASSERT_EQ(K0, t->key[0]);
		ASSERT_EQ(k, t->key[1]);
		ASSERT_EQ(nr, t->nr);
		ASSERT_EQ(self->pp, t->part_pages);
		whole = nvt_crc32c(0, self->out, self->bs);
		ASSERT_EQ(whole, t->dcrc);
		for (i = 0; i < nr; i++) {
			__u32 n = pages - i * self->pp;

			if (n > self->pp)
				n = self->pp;
			ASSERT_EQ(nvt_crc32c(0, self->out + i * self->pp *
					    KST_PAGE, n * KST_PAGE),
				  t->pcrc[i]);
		}
		crc = t->crc;
		t->crc = 0;
		ASSERT_EQ(crc, nvt_crc32c(~0U, t, sizeof(*t) +
					 nr * sizeof(t->pcrc[0])));
	}
	kst_free(t, NVT_DISK_PAGE);
	kst_free(table, tlen);
}

/*
 * After detach and attach (the log replayed), the copies keep their
 * tables: part reads go on, exact, the blocks staying on NVMe.
 */
TEST_F_TIMEOUT(nvme, reattach_replay, 120)
{
	struct kvtier_pool_stat a, b;
	__u64 keys[N_KEYS];
	__u32 off, len;

	ASSERT_EQ(0, n_cold(self));
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, 0, NULL));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 0));
	n_keys(keys, 0, N_KEYS);
	n_layer(self->bs, 3, &off, &len);
	ASSERT_EQ(0, kst_stat(self->pfd, &a));
	ASSERT_EQ((int)N_KEYS, n_get(_metadata, self, self->pfd, keys, N_KEYS,
				     1, off, len, KVTIER_TIER_NVME));
	ASSERT_EQ(0, kst_stat(self->pfd, &b));
	EXPECT_EQ(a.part_reads + N_KEYS, b.part_reads);
	EXPECT_EQ(a.promotions, b.promotions);
	EXPECT_EQ(a.bad_reads, b.bad_reads);
	EXPECT_EQ(variant->cfg.parts, b.parts);
}

/*
 * A pool destroyed while detached stays in the device's pool table: the
 * next attach makes it again from there, parts and all, and its blocks
 * are read in parts.
 */
TEST_F_TIMEOUT(nvme, restored_pool_keeps_parts, 120)
{
	struct kvtier_pool_stat st;
	__u64 keys[N_KEYS];
	__u32 off, len;

	ASSERT_EQ(0, n_cold(self));
	close(self->pfd);
	self->pfd = -1;
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, self->name));
	ASSERT_EQ(-ENOENT, kst_pool_open(self->ctl, self->name, 0));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	self->pfd = kst_pool_open(self->ctl, self->name, 0);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	ASSERT_EQ(variant->cfg.parts, st.parts);
	ASSERT_EQ(self->bs, st.block_size);
	ASSERT_EQ(0ULL, st.part_reads);
	n_keys(keys, 0, N_KEYS);
	n_layer(self->bs, N_LAYERS - 1, &off, &len);
	ASSERT_EQ((int)N_KEYS, n_get(_metadata, self, self->pfd, keys, N_KEYS,
				     1, off, len, KVTIER_TIER_NVME));
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	EXPECT_EQ((__u64)N_KEYS, st.part_reads);
	EXPECT_EQ(0ULL, st.promotions);
}

/*
 * One flipped byte in part 1 of key 0's copy: part 0 still verifies on its
 * own and is served; a range in part 1 is a miss (the part does not
 * verify, the whole read that follows does not either: bad_reads), never
 * wrong bytes, and the block is gone. Key 1, in the same batch, is fine.
 */
TEST_F_TIMEOUT(nvme, corrupt_part_is_miss, 120)
{
	const __u32 pb = self->pp * KST_PAGE;
	const __u64 keys[] = { 0, 1 };
	struct kvtier_pool_stat a, b;
	struct nvt_loc loc;
	__u64 id, rest[N_KEYS - 2];
	__u32 done;

	ASSERT_EQ(0, n_cold(self));
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(0, nvt_pool_id(nvt_dev(), self->name, &id));
	ASSERT_EQ(0, nvt_find_block_of(nvt_dev(), id, K0, 0, &loc));
	ASSERT_EQ(0, nvt_raw_flip(nvt_dev(), loc.data_off + pb + 777, 0x08));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));

	ASSERT_EQ(0, kst_stat(self->pfd, &a));
	ASSERT_EQ(1, n_get(_metadata, self, self->pfd, keys, 1, 1, 16,
			   pb - 32, KVTIER_TIER_NVME));
	ASSERT_EQ((long long)a.part_reads + 1, PSTAT(self->pfd, part_reads));

	pt_ent(self->e, self->slots, self->bs, 0, K0, 0);
	pt_ent(self->e, self->slots, self->bs, 1, K0, 1);
	ASSERT_EQ(0, pt_get(self->pfd, self->e, 2, 0, pb + 700, 200, NULL,
			    &done));
	ASSERT_EQ(1U, done);
	ASSERT_EQ(-ENOENT, self->e[0].status);
	ASSERT_EQ((__u32)KVTIER_TIER_NONE, self->e[0].tier);
	ASSERT_TRUE(pt_poisoned(pt_slot(self->slots, self->bs, 0),
				PT_SLOT(self->bs)));
	ASSERT_EQ(0, self->e[1].status);
	ASSERT_EQ((__u32)KVTIER_TIER_NVME, self->e[1].tier);
	ASSERT_EQ(-1, pt_bad(pt_slot(self->slots, self->bs, 1), self->ref,
			     self->bs, K0, 1, GEN(1), pb + 700, 200));
	ASSERT_EQ(0, kst_stat(self->pfd, &b));
	EXPECT_EQ(a.bad_reads + 1, b.bad_reads);
	EXPECT_EQ(a.part_reads + 2, b.part_reads);
	EXPECT_EQ(a.misses + 1, b.misses);
	EXPECT_EQ(a.promotions, b.promotions);

	/* Gone: a plain miss from now on, for any range. */
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, 0, NULL));
	pt_ent(self->e, self->slots, self->bs, 0, K0, 0);
	ASSERT_EQ(0, pt_get(self->pfd, self->e, 1, 0, 0, 16, NULL, &done));
	ASSERT_EQ(0U, done);
	ASSERT_EQ(-ENOENT, self->e[0].status);
	n_keys(rest, 2, N_KEYS - 2);
	ASSERT_EQ((int)N_KEYS - 2, n_get(_metadata, self, self->pfd, rest,
					 N_KEYS - 2, 1, pb + 700, 200,
					 KVTIER_TIER_NVME));
	EXPECT_EQ((long long)a.bad_reads + 1, PSTAT(self->pfd, bad_reads));
}

/*
 * Tables that cannot be trusted send the reader to the whole copy, which
 * is good: key 1's part crc and key 2's magic are flipped; their ranges
 * come back exact through a load into DRAM (promotions, no part read, no
 * bad read). Key 3, untouched, is read in parts in the same batch.
 */
TEST_F_TIMEOUT(nvme, corrupt_table_falls_back, 120)
{
	const __u64 keys[] = { 1, 2, 3 };
	static const __u32 tiers[] = { KVTIER_TIER_DRAM, KVTIER_TIER_DRAM,
				       KVTIER_TIER_NVME };
	const __u32 off = self->pp * KST_PAGE - 50, len = 100;
	struct kvtier_pool_stat a, b;
	struct nvt_loc locs[3];
	__u32 done, i;
	__u64 id;

	ASSERT_EQ(0, n_cold(self));
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(0, nvt_pool_id(nvt_dev(), self->name, &id));
	ASSERT_EQ(0, nvt_find_blocks_of(nvt_dev(), id, K0, 1, 3, locs));
	/* pcrc[0] of key 1, the magic of key 2 */
	ASSERT_EQ(0, nvt_raw_flip(nvt_dev(), locs[0].data_off - NVT_DISK_PAGE +
				  offsetof(struct nvt_disk_parts, pcrc) + 1,
				  0x40));
	ASSERT_EQ(0, nvt_raw_flip(nvt_dev(), locs[1].data_off - NVT_DISK_PAGE,
				  0x01));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));

	for (i = 0; i < 3; i++)
		pt_ent(self->e, self->slots, self->bs, i, K0, keys[i]);
	ASSERT_EQ(0, kst_stat(self->pfd, &a));
	ASSERT_EQ(0, pt_get(self->pfd, self->e, 3, 0, off, len, NULL, &done));
	ASSERT_EQ(0, kst_stat(self->pfd, &b));
	ASSERT_EQ(3U, done);
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, self->e[i].status);
		ASSERT_EQ(tiers[i], self->e[i].tier);
		ASSERT_EQ(-1, pt_bad(pt_slot(self->slots, self->bs, i),
				     self->ref, self->bs, K0, keys[i], GEN(1),
				     off, len));
	}
	EXPECT_EQ(a.part_reads + 1, b.part_reads);
	EXPECT_EQ(a.promotions + 2, b.promotions);
	EXPECT_EQ(a.bad_reads, b.bad_reads);
	EXPECT_EQ(a.misses, b.misses);
	EXPECT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 3));
}

/*
 * NVMe stat's bytes_written counts what goes to the device, the copies'
 * part tables with the data and the summaries: a SYNC of 32 blocks writes
 * 32 blocks, 32 table pages and at least one summary page.
 */
TEST_F_TIMEOUT(nvme, tables_counted_written, 120)
{
	struct kvtier_nvme_stat a, b;
	struct kvtier_pool_create c;
	char name[KVTIER_NAME_MAX];
	__u64 written = 0;
	int pfd;

	kst_name(name, "written");
	kst_create_init(&c, name, self->bs, 32, 32);
	c.parts = variant->cfg.parts;
	pfd = kst_create(self->ctl, &c);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, nvt_nstat(self->ctl, &a));
	ASSERT_EQ(0, put_range(pfd, self->buf, self->bs, 0, 32, 1, 0));
	ASSERT_EQ(0, nvt_sync(pfd, &written));
	ASSERT_EQ(0, nvt_nstat(self->ctl, &b));
	EXPECT_EQ(32ULL, written);
	EXPECT_EQ(a.bytes_demoted + 32 * self->bs, b.bytes_demoted);
	EXPECT_LE(a.bytes_written + 32 * (self->bs + NVT_DISK_PAGE) +
		  NVT_DISK_PAGE, b.bytes_written);
	close(pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
}

/*
 * A block replaced after its copy was written: its range comes from DRAM
 * while it is there, then from its new copy and that copy's table, never
 * from the old one.
 */
TEST_F_TIMEOUT(nvme, replaced_block_new_table, 120)
{
	const __u32 off = self->pp * KST_PAGE - 3, len = 6;
	const __u64 key0[] = { 0 };
	__u64 next = 200;

	ASSERT_EQ(0, n_cold(self));
	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, 1, 2,
			       KVTIER_PUT_REPLACE));
	ASSERT_EQ(1, n_get(_metadata, self, self->pfd, key0, 1, 2, off, len,
			   KVTIER_TIER_DRAM));
	ASSERT_EQ(0, push_out(self->pfd, self->buf, self->bs, 0, &next));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 0));
	ASSERT_EQ(1, n_get(_metadata, self, self->pfd, key0, 1, 2, off, len,
			   KVTIER_TIER_NVME));
	ASSERT_EQ(1, n_get(_metadata, self, self->pfd, key0, 1, 2, 0,
			   self->bs, KVTIER_TIER_NVME));
	EXPECT_EQ(2, PSTAT(self->pfd, part_reads));
}

struct race {
	int pfd;
	__u64 bs;
	volatile int stop;
	unsigned long reads, misses, wrong, errors;
	char first[200];	/* the first wrong or failed read */
};

/*
 * Part GETs of keys 0..N_KEYS-1 at random ranges, until told to stop: each
 * a miss (dropped) or the exact range of generation 1 or 2 (the ones the
 * writer PUTs), never anything else.
 */
static void *race_reader(void *arg)
{
	struct race *r = arg;
	char *buf = kst_alloc(r->bs + PT_TAIL), *ref = kst_alloc(r->bs);
	__u64 x = kst_mix((__u64)(uintptr_t)&buf);
	struct kvtier_block e;

	if (!buf || !ref) {
		r->errors++;
		return NULL;
	}
	while (!r->stop) {
		__u64 k = (x = kst_mix(x)) % N_KEYS;
		__u32 off = (x = kst_mix(x)) % r->bs;
		__u32 len = 1 + (x = kst_mix(x)) % (r->bs - off);
		__u32 done;
		int ret;

		memset(buf, PT_POISON, len + PT_TAIL);
		kst_blk(&e, K0, k, buf);
		ret = pt_get(r->pfd, &e, 1, 0, off, len, NULL, &done);
		if (!ret && e.status == -ENOENT) {
			r->misses++;
			continue;
		}
		if (!ret && !e.status &&
		    (pt_bad(buf, ref, r->bs, K0, k, GEN(1), off, len) == -1 ||
		     pt_bad(buf, ref, r->bs, K0, k, GEN(2), off, len) == -1)) {
			r->reads++;
			continue;
		}
		if (ret || e.status)
			r->errors++;
		else
			r->wrong++;
		if (!r->first[0])
			snprintf(r->first, sizeof(r->first),
				 "key %llu (%u, %u): ret %d, status %d, tier %u",
				 (unsigned long long)k, off, len, ret, e.status,
				 e.tier);
	}
	kst_free(buf, r->bs + PT_TAIL);
	kst_free(ref, r->bs);
	return NULL;
}

/*
 * Part GETs race with what moves blocks under them: REPLACE (generations 1
 * and 2 in turn), DROP, and PUTs of other keys that evict the replaced
 * blocks to NVMe again, with new copies and tables. Every read is a miss
 * or exact; the reads from NVMe were many.
 */
TEST_F_TIMEOUT(nvme, races_replace_drop_evict, 120)
{
	struct race r = { .pfd = self->pfd, .bs = self->bs };
	pthread_t th[2];
	__u64 x = 7, filler = 0;
	unsigned long ops = 0;
	double end;
	int i, ret;

	ASSERT_EQ(0, n_cold(self));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, race_reader, &r));
	end = kst_mono() + 4;
	while (kst_mono() < end) {
		__u64 k = (x = kst_mix(x)) % N_KEYS, op = (x = kst_mix(x)) % 10;

		if (op < 4) {
			ret = put_range(self->pfd, self->buf, self->bs, k, 1,
					1 + ops % 2, KVTIER_PUT_REPLACE);
		} else if (op < 6) {
			ret = kst_drop1(self->pfd, K0, k);
			if (ret == -ENOENT)
				ret = 0;
		} else {
			ret = put_range(self->pfd, self->buf, self->bs,
					1000 + filler++ % 64, 1, 1,
					KVTIER_PUT_REPLACE);
		}
		if (ret)
			break;
		ops++;
	}
	r.stop = 1;
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	TH_LOG("%lu writes; reads: %lu exact, %lu misses, %lu wrong, %lu failed; part_reads %lld",
	       ops, r.reads, r.misses, r.wrong, r.errors,
	       PSTAT(self->pfd, part_reads));
	if (r.first[0])
		TH_LOG("first: %s", r.first);
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0UL, r.wrong);
	ASSERT_EQ(0UL, r.errors);
	ASSERT_LT(0UL, r.reads);
	ASSERT_LT(0, PSTAT(self->pfd, part_reads));
	ASSERT_EQ(0, PSTAT(self->pfd, bad_reads));
}

/*
 * The layer-wise load through io_uring: four layers of keys 0..7, only on
 * NVMe, queued at once, each batch completing with its layer, exact.
 */
TEST_F_TIMEOUT(nvme, uring_layers, 120)
{
	struct kvtier_block e[4][8], *ents[4];
	struct kvtier_pool_stat a, b;
	struct kvtier_batch bt[4];
	size_t per = 8 * PT_SLOT(self->bs);
	__u32 off[4], len[4], l, k;
	char *mem;
	int res[4];

	if (!kst_supported(KVTIER_F_URING))
		SKIP(return, "kvtier without KVTIER_F_URING");
	ASSERT_EQ(0, n_cold(self));
	mem = kst_alloc(4 * per);
	ASSERT_NE(NULL, mem);
	for (l = 0; l < 4; l++) {
		off[l] = (__u32)(self->bs * l / 4);
		len[l] = (__u32)(self->bs * (l + 1) / 4) - off[l];
		ents[l] = e[l];
		for (k = 0; k < 8; k++)
			pt_ent(e[l], mem + l * per, self->bs, k, K0, k);
	}
	ASSERT_EQ(0, kst_stat(self->pfd, &a));
	ASSERT_EQ(0, pt_uring_parts(self->pfd, 4, ents, 8, off, len, bt, res));
	ASSERT_EQ(0, kst_stat(self->pfd, &b));
	for (l = 0; l < 4; l++) {
		ASSERT_EQ(0, res[l]);
		ASSERT_EQ(8U, bt[l].done);
		for (k = 0; k < 8; k++) {
			ASSERT_EQ(0, e[l][k].status);
			ASSERT_EQ((__u32)KVTIER_TIER_NVME, e[l][k].tier);
			ASSERT_EQ(-1, pt_bad(pt_slot(mem + l * per, self->bs,
						     k),
					     self->ref, self->bs, K0, k,
					     GEN(1), off[l], len[l]));
		}
	}
	EXPECT_EQ(a.part_reads + 32, b.part_reads);
	EXPECT_EQ(a.promotions, b.promotions);
	EXPECT_EQ(a.bytes_out + 8 * self->bs, b.bytes_out);
	kst_free(mem, 4 * per);
}

/* ==== reads ahead, in memory =============================================== */

#define A_BS		(8 * KST_MIB)	/* 2048 pages: 2 parts of 4 MiB */
#define A_N		64U		/* entries of the batch */
#define A_LIMIT		(128 * KST_MIB)	/* what their reads may hold at once */

FIXTURE(ahead) {
	struct nvt_fix;
	char cg[256];
};

/* The device attached with regions that hold a copy of A_BS; no pool. */
FIXTURE_VARIANT(ahead) {
	struct nvt_cfg cfg;
};

FIXTURE_VARIANT_ADD(ahead, b8m_p2) {
	.cfg = {
		.block_size = A_BS, .writer_ok = true, .tag = "ahead",
		.attach = true, .region_kib = 32768, .reattach = true,
	},
};

FIXTURE_SETUP(ahead)
{
	nvt_setup(_metadata, NVT_FIX(self), &variant->cfg);
	ASSERT_TRUE(kst_supported(KVTIER_F_PARTS));
	if (kst_cg_make(self->cg, sizeof(self->cg), "parts", "max"))
		self->cg[0] = '\0';
}

FIXTURE_TEARDOWN(ahead)
{
	nvt_teardown(NVT_FIX(self));
	if (self->cg[0])
		rmdir(self->cg);
}

/*
 * In cgroup @cg: a pool of A_BS blocks in 2 parts, key 0 only on NVMe, and
 * a part GET of one byte of it by A_N entries. Reports the rise of the
 * cgroup's memory.peak over the GET through @fd; exits 0, else the step
 * that failed.
 */
static int a_child(FIXTURE_DATA(ahead) *self, int fd)
{
	struct kvtier_pool_create c;
	struct kvtier_block e[A_N];
	struct kvtier_pool_stat st;
	char *out;
	long long peak0, rise;
	__u32 done, i;
	int pfd;

	if (kst_cg_enter(self->cg))
		return 10;
	kst_create_init(&c, self->name, A_BS, 4, 1);
	c.parts = 2;
	pfd = kst_create(self->ctl, &c);
	if (pfd < 0)
		return 11;
	if (put_range(pfd, self->buf, A_BS, 0, 2, 1, 0) ||
	    nvt_sync(pfd, NULL) || key_tier(pfd, 0) != KVTIER_TIER_NVME)
		return 12;
	out = kst_alloc(KST_PAGE);
	if (!out)
		return 13;
	memset(out, PT_POISON, KST_PAGE);
	for (i = 0; i < A_N; i++)
		kst_blk(&e[i], K0, 0, out + i);
	peak0 = kst_cg_peak(self->cg);
	if (peak0 < 0)
		return 14;
	if (pt_get(pfd, e, A_N, 0, 12345, 1, NULL, &done) || done != A_N)
		return 15;
	rise = kst_cg_peak(self->cg) - peak0;
	kst_fill(self->buf, A_BS, K0, 0, GEN(1));
	for (i = 0; i < A_N; i++)
		if (e[i].tier != KVTIER_TIER_NVME || out[i] != self->buf[12345])
			return 16;
	if (kst_stat(pfd, &st) || st.part_reads != A_N || st.promotions)
		return 17;
	if (write(fd, &rise, sizeof(rise)) != sizeof(rise))
		return 18;
	close(pfd);
	return 0;
}

/*
 * The reads of a part GET go out ahead of its copies in a window of bytes:
 * a window counted in the range's bytes, not the parts' it reads, would
 * have a GET of one byte of each of A_N blocks in parts of 4 MiB hold A_N
 * x 4 MiB at once. The memory the reads take is charged to the pool's
 * cgroup: its peak over the GET stays under A_LIMIT.
 */
TEST_F_TIMEOUT(ahead, window_counts_parts, 300)
{
	long long rise = -1;
	int fds[2], code;
	pid_t pid;

	if (!self->cg[0])
		SKIP(return, "no cgroup2 memory controller");
	ASSERT_EQ(0, pipe(fds));
	pid = kst_fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(fds[0]);
		_exit(a_child(self, fds[1]));
	}
	close(fds[1]);
	code = kst_wait(pid);
	if (read(fds[0], &rise, sizeof(rise)) != sizeof(rise))
		rise = -1;
	close(fds[0]);
	TH_LOG("memory.peak rose %lld MiB over the GET", rise >> 20);
	ASSERT_EQ(0, code);
	ASSERT_LE(0, rise);
	ASSERT_GT((long long)A_LIMIT, rise);
}

TEST_HARNESS_MAIN
