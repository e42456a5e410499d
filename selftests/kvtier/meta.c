// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier block metadata (KVTIER_F_META): a record of up to KVTIER_META_MAX
 * bytes of the runtime's stored with each block by PUT and COMMIT (struct
 * kvtier_batch.meta), returned by GET and LOOKUP. What a runtime relies on:
 * the record it gets is the one stored with the bytes it gets, exact, with
 * zeros past its length; a failed entry's record is empty whatever the
 * array held; REPLACE gives the key the new block's record (or none); the
 * record follows the block to NVMe, back, into HBM, through detach and
 * attach; each bad request its own errno with nothing done; STAT's
 * meta_bytes counts the records' memory and gives it back.
 *
 * The nvme_* cases run as root on /dev/nvme0n1 (or $KVTIER_NVME_DEV), whose
 * content they destroy, and are skipped without it.
 */
#include <liburing.h>
#include <poll.h>
#include "nvme_fixture.h"

#define M_BS		(4 * KST_KIB)
#define M_CAP		64U
#define M_K0		0x6d6574612d6b30ULL	/* "meta-k0" */
#define M_JUNK		0xa5

/* ---- records --------------------------------------------------------------- */

/* The byte i of key @k1's record: a function of both. */
static __u8 rec_byte(__u64 k1, unsigned int i)
{
	return (__u8)(kst_mix(k1 * 131 + i) >> 17);
}

/*
 * Key @k1's record of @len bytes into @m, with junk past @len (and in the
 * bytes of a too long one) that the kernel must not keep.
 */
static void rec_set(struct kvtier_meta *m, __u64 k1, __u32 len)
{
	unsigned int i;

	memset(m, M_JUNK, sizeof(*m));
	m->len = len;
	m->flags = 0;
	for (i = 0; i < len && i < KVTIER_META_MAX; i++)
		m->data[i] = rec_byte(k1, i);
}

/*
 * 0 if @m is exactly key @k1's record of @len bytes as the kernel returns
 * it (flags 0, zeros past @len); else 1 + the index of the first bad data
 * byte, or -1 for a bad len or flags.
 */
static int rec_check(const struct kvtier_meta *m, __u64 k1, __u32 len)
{
	unsigned int i;

	if (m->len != len || m->flags)
		return -1;
	for (i = 0; i < KVTIER_META_MAX; i++)
		if (m->data[i] != (i < len ? rec_byte(k1, i) : 0))
			return 1 + i;
	return 0;
}

/* The length of key @k1's record in the bigger tests: 0..KVTIER_META_MAX. */
static __u32 rec_len(__u64 k1)
{
	return (__u32)(k1 * 7 % (KVTIER_META_MAX + 1));
}

static void meta_junk(struct kvtier_meta *m, unsigned int n)
{
	memset(m, M_JUNK, n * sizeof(*m));
}

/* ---- a DRAM pool ------------------------------------------------------------ */

FIXTURE(meta) {
	int ctl, pfd;
	char name[KVTIER_NAME_MAX];
	char *buf;			/* 8 blocks */
	struct kvtier_block e[8];
	struct kvtier_meta m[8];
};

#define MBLK(self, i)	((self)->buf + (size_t)(i) * M_BS)

FIXTURE_SETUP(meta)
{
	kst_setup(_metadata);
	self->pfd = -1;
	self->buf = NULL;
	ASSERT_TRUE(kst_supported(KVTIER_F_META));
	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	kst_name(self->name, "meta");
	self->pfd = kst_pool_create(self->ctl, self->name, M_BS, M_CAP, M_CAP);
	ASSERT_LE(0, self->pfd);
	self->buf = kst_alloc(8 * M_BS);
	ASSERT_NE(NULL, self->buf);
}

FIXTURE_TEARDOWN(meta)
{
	if (self->pfd >= 0)
		close(self->pfd);
	kst_pool_destroy(self->ctl, self->name);
	kst_free(self->buf, 8 * M_BS);
	close(self->ctl);
}

/*
 * Entries 0..n-1 of keys (M_K0, first + i), with buffers (PUT and GET, the
 * blocks filled for PUT with generation @gen) or without (@buf false).
 */
static void ents(FIXTURE_DATA(meta) *self, __u64 first, unsigned int n,
		 bool buf, __u64 gen)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (buf && gen)
			kst_fill(MBLK(self, i), M_BS, M_K0, first + i, gen);
		kst_blk(&self->e[i], M_K0, first + i,
			buf ? MBLK(self, i) : NULL);
	}
}

/* A one-entry command on key (M_K0, k1) with record array @m (or NULL). */
static int one_meta(FIXTURE_DATA(meta) *self, unsigned long cmd, __u64 k1,
		    void *buf, __u32 flags, struct kvtier_meta *m)
{
	struct kvtier_block b;
	__u32 done;
	int ret;

	kst_blk(&b, M_K0, k1, buf);
	ret = kst_batch_meta(self->pfd, cmd, &b, 1, flags, m, &done);
	return ret ? ret : b.status;
}

/* Bytes of the pool's block metadata now, or -errno. */
static long long meta_bytes(int pfd)
{
	struct kvtier_pool_stat st;
	int ret = kst_stat(pfd, &st);

	return ret ? ret : (long long)st.meta_bytes;
}

/*
 * PUT four blocks with records of 0, 1, 37 and 64 bytes (junk past each):
 * GET and LOOKUP return each exactly, zeros past its length, flags 0,
 * whatever their arrays held; the plain commands still work.
 */
TEST_F(meta, put_get_roundtrip)
{
	static const __u32 lens[4] = { 0, 1, 37, KVTIER_META_MAX };
	__u32 done;
	int i;

	ents(self, 0, 4, true, 1);
	for (i = 0; i < 4; i++)
		rec_set(&self->m[i], i, lens[i]);
	ASSERT_EQ(0, kst_batch_meta(self->pfd, KVTIER_IOC_PUT, self->e, 4, 0,
				    self->m, &done));
	ASSERT_EQ(4U, done);

	memset(self->buf, 0, 4 * M_BS);
	ents(self, 0, 4, true, 0);
	meta_junk(self->m, 4);
	ASSERT_EQ(0, kst_batch_meta(self->pfd, KVTIER_IOC_GET, self->e, 4, 0,
				    self->m, &done));
	ASSERT_EQ(4U, done);
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, self->e[i].status);
		ASSERT_EQ(-1, kst_check_gen(MBLK(self, i), M_BS, M_K0, i, 1));
		EXPECT_EQ(0, rec_check(&self->m[i], i, lens[i]))
			TH_LOG("GET entry %d", i);
	}

	ents(self, 0, 4, false, 0);
	meta_junk(self->m, 4);
	ASSERT_EQ(0, kst_batch_meta(self->pfd, KVTIER_IOC_LOOKUP, self->e, 4,
				    KVTIER_LOOKUP_TOUCH, self->m, &done));
	ASSERT_EQ(4U, done);
	for (i = 0; i < 4; i++)
		EXPECT_EQ(0, rec_check(&self->m[i], i, lens[i]))
			TH_LOG("LOOKUP entry %d", i);

	/* Without an array: as before the feature. */
	ASSERT_EQ(0, kst_get1(self->pfd, M_K0, 3, MBLK(self, 0), NULL));
	ASSERT_EQ(-1, kst_check_gen(MBLK(self, 0), M_BS, M_K0, 3, 1));
	ASSERT_EQ(0, kst_lookup1(self->pfd, M_K0, 2, NULL));
}

/*
 * A record longer than KVTIER_META_MAX: its entry -EMSGSIZE, nothing
 * stored for it; the others stored with theirs.
 */
TEST_F(meta, too_long)
{
	struct kvtier_pool_stat st;
	__u32 done;

	ents(self, 10, 3, true, 1);
	rec_set(&self->m[0], 10, 5);
	rec_set(&self->m[1], 11, KVTIER_META_MAX + 1);
	rec_set(&self->m[2], 12, KVTIER_META_MAX);
	ASSERT_EQ(0, kst_batch_meta(self->pfd, KVTIER_IOC_PUT, self->e, 3, 0,
				    self->m, &done));
	ASSERT_EQ(2U, done);
	ASSERT_EQ(0, self->e[0].status);
	ASSERT_EQ(-EMSGSIZE, self->e[1].status);
	ASSERT_EQ(KVTIER_ADDR_NONE, self->e[1].addr);
	ASSERT_EQ(0, self->e[2].status);
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, M_K0, 11, NULL));
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	ASSERT_EQ(2ULL, st.puts);
	ASSERT_EQ(2ULL, st.resident[KVTIER_TIER_DRAM]);

	ASSERT_EQ(0, one_meta(self, KVTIER_IOC_LOOKUP, 10, NULL, 0,
			      &self->m[3]));
	ASSERT_EQ(0, rec_check(&self->m[3], 10, 5));
	ASSERT_EQ(0, one_meta(self, KVTIER_IOC_LOOKUP, 12, NULL, 0,
			      &self->m[3]));
	ASSERT_EQ(0, rec_check(&self->m[3], 12, KVTIER_META_MAX));

	/* The largest length there is: the same. */
	rec_set(&self->m[0], 11, 0xffffffffU);
	kst_fill(MBLK(self, 0), M_BS, M_K0, 11, 1);
	ASSERT_EQ(-EMSGSIZE, one_meta(self, KVTIER_IOC_PUT, 11, MBLK(self, 0),
				      0, &self->m[0]));
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, M_K0, 11, NULL));
}

/* A record with a flag set: the whole batch -EINVAL, nothing stored. */
TEST_F(meta, flags_nonzero)
{
	unsigned int bit;
	__u32 done;

	for (bit = 0; bit < 32; bit += 31) {
		ents(self, 20, 2, true, 1);
		rec_set(&self->m[0], 20, 8);
		rec_set(&self->m[1], 21, 8);
		self->m[1].flags = 1U << bit;
		ASSERT_EQ(-EINVAL, kst_batch_meta(self->pfd, KVTIER_IOC_PUT,
						  self->e, 2, 0, self->m,
						  &done));
		ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, M_K0, 20, NULL));
		ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, M_K0, 21, NULL));
		ASSERT_EQ(0LL, kst_resident(self->pfd));
	}
}

/*
 * A pool fd whose control fd did not negotiate KVTIER_F_META: a batch with
 * records is -EOPNOTSUPP, nothing done; without, it works, and a fd that
 * has the feature sees that block without a record.
 */
TEST_F(meta, no_feature)
{
	struct kvtier_api a;
	int ctl, fd;

	ctl = kst_ctl_open_raw();
	ASSERT_LE(0, ctl);
	ASSERT_EQ(0, kst_api(ctl, KST_F_KNOWN & ~KVTIER_F_META, &a));
	ASSERT_EQ(0ULL, a.features & KVTIER_F_META);
	ASSERT_NE(0ULL, a.supported & KVTIER_F_META);
	fd = kst_pool_open(ctl, self->name, 0);
	ASSERT_LE(0, fd);

	kst_fill(MBLK(self, 0), M_BS, M_K0, 30, 1);
	rec_set(&self->m[0], 30, 4);
	kst_blk(&self->e[0], M_K0, 30, MBLK(self, 0));
	ASSERT_EQ(-EOPNOTSUPP, kst_batch_meta(fd, KVTIER_IOC_PUT, self->e, 1,
					      0, self->m, NULL));
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, M_K0, 30, NULL));
	ASSERT_EQ(0, kst_put1(fd, M_K0, 30, MBLK(self, 0), NULL));
	kst_blk(&self->e[0], M_K0, 30, MBLK(self, 1));
	ASSERT_EQ(-EOPNOTSUPP, kst_batch_meta(fd, KVTIER_IOC_GET, self->e, 1,
					      0, self->m, NULL));
	kst_blk(&self->e[0], M_K0, 30, NULL);
	ASSERT_EQ(-EOPNOTSUPP, kst_batch_meta(fd, KVTIER_IOC_LOOKUP, self->e,
					      1, 0, self->m, NULL));
	meta_junk(self->m, 1);
	ASSERT_EQ(0, one_meta(self, KVTIER_IOC_GET, 30, MBLK(self, 1), 0,
			      self->m));
	ASSERT_EQ(0, rec_check(self->m, 30, 0));
	close(fd);
	close(ctl);
}

/*
 * Commands that take no records: DROP, PIN, UNPIN (and RESERVE, ABORT)
 * with an array, even a valid one, are -EINVAL with nothing done.
 */
TEST_F(meta, wrong_command)
{
	struct kvtier_block b;
	__u32 done;

	kst_fill(MBLK(self, 0), M_BS, M_K0, 40, 1);
	ASSERT_EQ(0, kst_put1(self->pfd, M_K0, 40, MBLK(self, 0), NULL));
	rec_set(&self->m[0], 40, 0);

	ASSERT_EQ(-EINVAL, one_meta(self, KVTIER_IOC_DROP, 40, NULL, 0,
				    self->m));
	ASSERT_EQ(0, kst_lookup1(self->pfd, M_K0, 40, NULL));
	ASSERT_EQ(-EINVAL, one_meta(self, KVTIER_IOC_PIN, 40, NULL, 0,
				    self->m));
	ASSERT_EQ(0LL, kst_pinned(self->pfd));
	ASSERT_EQ(0, kst_pin1(self->pfd, M_K0, 40));
	ASSERT_EQ(-EINVAL, one_meta(self, KVTIER_IOC_UNPIN, 40, NULL, 0,
				    self->m));
	ASSERT_EQ(1LL, kst_pinned(self->pfd));
	ASSERT_EQ(0, kst_unpin1(self->pfd, M_K0, 40));

	if (!kst_supported(KVTIER_F_RESERVE))
		return;
	ASSERT_EQ(-EINVAL, one_meta(self, KVTIER_IOC_RESERVE, 41, NULL, 0,
				    self->m));
	ASSERT_EQ(1LL, kst_resident(self->pfd));	/* nothing reserved */
	kst_blk(&b, M_K0, 41, NULL);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_RESERVE, &b, 1, 0, &done));
	ASSERT_EQ(1U, done);
	b.status = 0;
	ASSERT_EQ(-EINVAL, kst_batch_meta(self->pfd, KVTIER_IOC_ABORT, &b, 1,
					  0, self->m, &done));
	/* still reserved: the plain ABORT finds it */
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_ABORT, &b, 1, 0, &done));
	ASSERT_EQ(1U, done);
}

/*
 * An array the kernel cannot read (PUT) or write (GET, LOOKUP): -EFAULT
 * and nothing done, not the entries before the bad part either.
 */
TEST_F(meta, bad_pointer)
{
	struct kvtier_pool_stat st0, st1;
	struct kvtier_meta *m;
	char *p;
	__u32 done;
	int i;

	/* PUT: unmapped; then two records, the second past the mapping. */
	ents(self, 50, 2, true, 1);
	ASSERT_EQ(-EFAULT, kst_batch_meta(self->pfd, KVTIER_IOC_PUT, self->e,
					  2, 0, kst_unmapped_addr(), &done));
	p = mmap(NULL, 2 * KST_PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, munmap(p + KST_PAGE, KST_PAGE));
	m = (struct kvtier_meta *)(p + KST_PAGE) - 1;
	rec_set(m, 50, 3);
	ASSERT_EQ(-EFAULT, kst_batch_meta(self->pfd, KVTIER_IOC_PUT, self->e,
					  2, 0, m, &done));
	munmap(p, KST_PAGE);
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, M_K0, 50, NULL));
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, M_K0, 51, NULL));
	ASSERT_EQ(0, kst_stat(self->pfd, &st0));
	ASSERT_EQ(0ULL, st0.puts);

	/* GET and LOOKUP: a read-only array. */
	ents(self, 50, 2, true, 1);
	for (i = 0; i < 2; i++)
		rec_set(&self->m[i], 50 + i, 9);
	ASSERT_EQ(0, kst_batch_meta(self->pfd, KVTIER_IOC_PUT, self->e, 2, 0,
				    self->m, &done));
	ASSERT_EQ(2U, done);
	meta_junk(self->m, 2);
	m = kst_ro_page_with(self->m, 2 * sizeof(*m));
	ASSERT_NE(NULL, m);
	memset(self->buf, 0x5a, 2 * M_BS);
	ents(self, 50, 2, true, 0);
	ASSERT_EQ(0, kst_stat(self->pfd, &st0));
	ASSERT_EQ(-EFAULT, kst_batch_meta(self->pfd, KVTIER_IOC_GET, self->e,
					  2, 0, m, &done));
	ASSERT_EQ(0x5a5a5a5a5a5a5a5aULL, *(__u64 *)MBLK(self, 0));
	ents(self, 50, 2, false, 0);
	ASSERT_EQ(-EFAULT, kst_batch_meta(self->pfd, KVTIER_IOC_LOOKUP,
					  self->e, 2, KVTIER_LOOKUP_PIN, m,
					  &done));
	ASSERT_EQ(0, kst_stat(self->pfd, &st1));
	ASSERT_EQ(st0.gets, st1.gets);
	ASSERT_EQ(st0.hits, st1.hits);
	ASSERT_EQ(st0.misses, st1.misses);
	ASSERT_EQ(0ULL, st1.pinned);
	/* the read-only page is as it was */
	ASSERT_EQ(M_JUNK, m[0].data[0]);
	munmap(m, KST_PAGE);
}

/*
 * REPLACE gives the key a new block with the new record; a REPLACE with
 * no array, or an empty record, leaves it none. Each record comes with
 * its own bytes.
 */
TEST_F(meta, replace)
{
	__u64 gen;

	kst_fill(MBLK(self, 0), M_BS, M_K0, 60, 1);
	rec_set(&self->m[0], 60, 20);
	ASSERT_EQ(0, one_meta(self, KVTIER_IOC_PUT, 60, MBLK(self, 0), 0,
			      self->m));
	/* A PUT without REPLACE changes neither. */
	kst_fill(MBLK(self, 0), M_BS, M_K0, 60, 2);
	rec_set(&self->m[0], 61, 30);
	ASSERT_EQ(-EEXIST, one_meta(self, KVTIER_IOC_PUT, 60, MBLK(self, 0),
				    0, self->m));
	ASSERT_EQ(0, one_meta(self, KVTIER_IOC_GET, 60, MBLK(self, 1), 0,
			      &self->m[1]));
	ASSERT_EQ(-1, kst_check_gen(MBLK(self, 1), M_BS, M_K0, 60, 1));
	ASSERT_EQ(0, rec_check(&self->m[1], 60, 20));

	/* REPLACE with a record: generation 2, key 61's 30 bytes. */
	ASSERT_EQ(0, one_meta(self, KVTIER_IOC_PUT, 60, MBLK(self, 0),
			      KVTIER_PUT_REPLACE, self->m));
	meta_junk(&self->m[1], 1);
	ASSERT_EQ(0, one_meta(self, KVTIER_IOC_GET, 60, MBLK(self, 1), 0,
			      &self->m[1]));
	ASSERT_EQ(-1, kst_check(MBLK(self, 1), M_BS, M_K0, 60, &gen));
	ASSERT_EQ(2ULL, gen);
	ASSERT_EQ(0, rec_check(&self->m[1], 61, 30));

	/* REPLACE without an array: no record. */
	kst_fill(MBLK(self, 0), M_BS, M_K0, 60, 3);
	ASSERT_EQ(0, kst_replace1(self->pfd, M_K0, 60, MBLK(self, 0), NULL));
	meta_junk(&self->m[1], 1);
	ASSERT_EQ(0, one_meta(self, KVTIER_IOC_LOOKUP, 60, NULL, 0,
			      &self->m[1]));
	ASSERT_EQ(0, rec_check(&self->m[1], 60, 0));

	/* A record again, then REPLACE with an empty one: none. */
	kst_fill(MBLK(self, 0), M_BS, M_K0, 60, 4);
	rec_set(&self->m[0], 60, 1);
	ASSERT_EQ(0, one_meta(self, KVTIER_IOC_PUT, 60, MBLK(self, 0),
			      KVTIER_PUT_REPLACE, self->m));
	kst_fill(MBLK(self, 0), M_BS, M_K0, 60, 5);
	rec_set(&self->m[0], 60, 0);
	ASSERT_EQ(0, one_meta(self, KVTIER_IOC_PUT, 60, MBLK(self, 0),
			      KVTIER_PUT_REPLACE, self->m));
	meta_junk(&self->m[1], 1);
	ASSERT_EQ(0, one_meta(self, KVTIER_IOC_GET, 60, MBLK(self, 1), 0,
			      &self->m[1]));
	ASSERT_EQ(-1, kst_check_gen(MBLK(self, 1), M_BS, M_K0, 60, 5));
	ASSERT_EQ(0, rec_check(&self->m[1], 60, 0));
}

/*
 * A GET and a LOOKUP with missing keys among present ones: a missing
 * entry's record is empty and zeroed whatever the caller left there.
 */
TEST_F(meta, missing)
{
	__u32 done;
	int i;

	ents(self, 70, 4, true, 1);
	for (i = 0; i < 4; i++)
		rec_set(&self->m[i], 70 + i, 10 + i);
	ASSERT_EQ(0, kst_batch_meta(self->pfd, KVTIER_IOC_PUT, self->e, 4, 0,
				    self->m, &done));
	ASSERT_EQ(4U, done);
	ASSERT_EQ(0, kst_drop1(self->pfd, M_K0, 71));
	ASSERT_EQ(0, kst_drop1(self->pfd, M_K0, 73));

	ents(self, 70, 4, true, 0);
	meta_junk(self->m, 4);
	ASSERT_EQ(0, kst_batch_meta(self->pfd, KVTIER_IOC_GET, self->e, 4, 0,
				    self->m, &done));
	ASSERT_EQ(2U, done);
	ASSERT_EQ(-ENOENT, self->e[1].status);
	ASSERT_EQ(-ENOENT, self->e[3].status);
	ASSERT_EQ(0, rec_check(&self->m[0], 70, 10));
	ASSERT_EQ(0, rec_check(&self->m[1], 71, 0));
	ASSERT_EQ(0, rec_check(&self->m[2], 72, 12));
	ASSERT_EQ(0, rec_check(&self->m[3], 73, 0));

	ents(self, 70, 4, false, 0);
	meta_junk(self->m, 4);
	ASSERT_EQ(0, kst_batch_meta(self->pfd, KVTIER_IOC_LOOKUP, self->e, 4,
				    0, self->m, &done));
	ASSERT_EQ(1U, done);
	ASSERT_EQ(0, rec_check(&self->m[0], 70, 10));
	ASSERT_EQ(0, rec_check(&self->m[1], 71, 0));
	ASSERT_EQ(0, rec_check(&self->m[2], 72, 12));
	ASSERT_EQ(0, rec_check(&self->m[3], 73, 0));
}

/*
 * RESERVE, fill through the window, COMMIT with records (one too long: its
 * entry -EMSGSIZE, still reserved): GET returns bytes and records.
 */
TEST_F(meta, commit)
{
	__u64 off = (__u64)M_CAP * M_BS;
	char *win;
	__u32 done;
	int i;

	if (!kst_supported(KVTIER_F_RESERVE))
		SKIP(return, "kvtier without KVTIER_F_RESERVE");
	win = mmap(NULL, (size_t)M_CAP * M_BS, PROT_READ | PROT_WRITE,
		   MAP_SHARED, self->pfd, (off_t)off);
	ASSERT_NE(MAP_FAILED, win);
	ents(self, 80, 3, false, 0);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_RESERVE, self->e, 3, 0,
			       &done));
	ASSERT_EQ(3U, done);
	for (i = 0; i < 3; i++) {
		kst_fill(win + self->e[i].addr * M_BS, M_BS, M_K0, 80 + i, 7);
		rec_set(&self->m[i], 80 + i, i == 1 ? KVTIER_META_MAX + 1 :
			rec_len(80 + i));
		self->e[i].status = 0;
	}
	ASSERT_EQ(0, kst_batch_meta(self->pfd, KVTIER_IOC_COMMIT, self->e, 3,
				    0, self->m, &done));
	ASSERT_EQ(2U, done);
	ASSERT_EQ(-EMSGSIZE, self->e[1].status);
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, M_K0, 81, NULL));
	/* Still reserved: committed now with a record that fits. */
	rec_set(&self->m[1], 81, 2);
	self->e[1].status = 0;
	ASSERT_EQ(0, kst_batch_meta(self->pfd, KVTIER_IOC_COMMIT, &self->e[1],
				    1, 0, &self->m[1], &done));
	ASSERT_EQ(1U, done);
	munmap(win, (size_t)M_CAP * M_BS);

	memset(self->buf, 0, 3 * M_BS);
	ents(self, 80, 3, true, 0);
	meta_junk(self->m, 3);
	ASSERT_EQ(0, kst_batch_meta(self->pfd, KVTIER_IOC_GET, self->e, 3, 0,
				    self->m, &done));
	ASSERT_EQ(3U, done);
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(-1, kst_check_gen(MBLK(self, i), M_BS, M_K0, 80 + i,
					    7));
		ASSERT_EQ(0, rec_check(&self->m[i], 80 + i,
				       i == 1 ? 2 : rec_len(80 + i)));
	}
}

/*
 * STAT's meta_bytes: up with records PUT (by at least their bytes), not
 * with blocks PUT without, and back where it was once they are dropped.
 */
TEST_F(meta, meta_bytes)
{
	long long base, with, now = 0;
	__u32 done;
	int i, tries;

	base = meta_bytes(self->pfd);
	ASSERT_LE(0, base);
	ents(self, 90, 8, true, 1);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_PUT, self->e, 8, 0,
			       &done));
	ASSERT_EQ(8U, done);
	ASSERT_EQ(base, meta_bytes(self->pfd));
	ents(self, 100, 8, true, 1);
	for (i = 0; i < 8; i++)
		rec_set(&self->m[i], 100 + i, KVTIER_META_MAX);
	ASSERT_EQ(0, kst_batch_meta(self->pfd, KVTIER_IOC_PUT, self->e, 8, 0,
				    self->m, &done));
	ASSERT_EQ(8U, done);
	with = meta_bytes(self->pfd);
	ASSERT_LE(base + 8 * KVTIER_META_MAX, with);
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, kst_drop1(self->pfd, M_K0, 100 + i));
	/* A dropped block goes when its last reader does: none here. */
	for (tries = 0; tries < 50; tries++) {
		now = meta_bytes(self->pfd);
		if (now == base)
			break;
		usleep(100000);
	}
	ASSERT_EQ(base, now);
}

/* ---- io_uring ------------------------------------------------------------- */

/* Run @b as @op through @ring; the CQE's res. */
static int uring_run(struct io_uring *ring, int fd, __u32 op,
		     struct kvtier_batch *b)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;
	struct kvtier_uring_cmd *c;
	int res;

	if (!sqe)
		return -EBUSY;
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
	sqe->cmd_op = op;
	c = (struct kvtier_uring_cmd *)sqe->cmd;
	memset(c, 0, sizeof(*c));
	c->arg = (__u64)(uintptr_t)b;
	if (io_uring_submit(ring) != 1 || io_uring_wait_cqe(ring, &cqe))
		return -EIO;
	res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return res;
}

/*
 * PUT with records and GET with records through io_uring: the same
 * records back, written before the CQE; a too long one -EMSGSIZE there
 * too, and a read-only array -EFAULT.
 */
TEST_F(meta, uring)
{
	struct kvtier_batch b;
	struct io_uring ring;
	struct kvtier_meta *ro;
	int i;

	if (!kst_supported(KVTIER_F_URING))
		SKIP(return, "kvtier without KVTIER_F_URING");
	if (io_uring_queue_init(4, &ring, 0))
		SKIP(return, "no io_uring");
	ents(self, 110, 4, true, 1);
	for (i = 0; i < 4; i++)
		rec_set(&self->m[i], 110 + i, i == 2 ? KVTIER_META_MAX + 1 :
			rec_len(110 + i));
	memset(&b, 0, sizeof(b));
	b.blocks = (__u64)(uintptr_t)self->e;
	b.count = 4;
	b.meta = (__u64)(uintptr_t)self->m;
	ASSERT_EQ(0, uring_run(&ring, self->pfd, KVTIER_IOC_PUT, &b));
	ASSERT_EQ(3U, b.done);
	ASSERT_EQ(-EMSGSIZE, self->e[2].status);

	memset(self->buf, 0, 4 * M_BS);
	ents(self, 110, 4, true, 0);
	meta_junk(self->m, 4);
	b.done = 0;
	ASSERT_EQ(0, uring_run(&ring, self->pfd, KVTIER_IOC_GET, &b));
	ASSERT_EQ(3U, b.done);
	for (i = 0; i < 4; i++) {
		if (i == 2) {
			ASSERT_EQ(-ENOENT, self->e[i].status);
			ASSERT_EQ(0, rec_check(&self->m[i], 110 + i, 0));
			continue;
		}
		ASSERT_EQ(-1, kst_check_gen(MBLK(self, i), M_BS, M_K0, 110 + i,
					    1));
		ASSERT_EQ(0, rec_check(&self->m[i], 110 + i, rec_len(110 + i)));
	}

	ents(self, 110, 2, false, 0);
	meta_junk(self->m, 2);
	b.count = 2;
	ASSERT_EQ(0, uring_run(&ring, self->pfd, KVTIER_IOC_LOOKUP, &b));
	ASSERT_EQ(2U, b.done);
	ASSERT_EQ(0, rec_check(&self->m[1], 111, rec_len(111)));

	ro = kst_ro_page_with(self->m, 2 * sizeof(*ro));
	ASSERT_NE(NULL, ro);
	b.meta = (__u64)(uintptr_t)ro;
	ASSERT_EQ(-EFAULT, uring_run(&ring, self->pfd, KVTIER_IOC_LOOKUP, &b));
	munmap(ro, KST_PAGE);
	io_uring_queue_exit(&ring);
}

/* ---- the HBM tier ----------------------------------------------------------- */

/*
 * Blocks staged into an emulated HBM arena: LOOKUP says HBM with their
 * records, GET returns them; an ADOPTed block has the record ADOPT gave.
 */
TEST_F(meta, hbm_resident)
{
	struct kvtier_hbm_attach ha;
	struct kvtier_prefetch pf;
	struct kvtier_completion c;
	struct kvtier_hint h[4];
	struct kvtier_adopt ad;
	struct kvtier_batch b;
	struct pollfd p = { .fd = self->pfd, .events = POLLIN };
	struct timespec ts;
	__u32 done, slot;
	int i, ret;

	if (!kst_supported(KVTIER_F_HBM) || !kst_supported(KVTIER_F_PREFETCH))
		SKIP(return, "kvtier without KVTIER_F_HBM and KVTIER_F_PREFETCH");
	memset(&ha, 0, sizeof(ha));
	ha.backend = KVTIER_HBM_EMUL;
	ha.slots = 8;
	ret = kst_ioctl(self->pfd, KVTIER_IOC_HBM_ATTACH, &ha);
	if (ret == -ENOSPC)
		SKIP(return, "no hbm_emul_mb left");
	ASSERT_EQ(0, ret);

	ents(self, 120, 4, true, 1);
	for (i = 0; i < 4; i++)
		rec_set(&self->m[i], 120 + i, rec_len(120 + i) | 1);
	ASSERT_EQ(0, kst_batch_meta(self->pfd, KVTIER_IOC_PUT, self->e, 4, 0,
				    self->m, &done));
	ASSERT_EQ(4U, done);

	memset(h, 0, sizeof(h));
	for (i = 0; i < 4; i++) {
		h[i].key[0] = M_K0;
		h[i].key[1] = 120 + i;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	memset(&pf, 0, sizeof(pf));
	pf.hints = (__u64)(uintptr_t)h;
	pf.count = 4;
	pf.group = 1;
	pf.tier = KVTIER_TIER_HBM;
	pf.deadline_ns = (ts.tv_sec + 30) * 1000000000ULL + ts.tv_nsec;
	ASSERT_EQ(0, kst_ioctl(self->pfd, KVTIER_IOC_PREFETCH, &pf));
	ASSERT_EQ(1, poll(&p, 1, 60000));
	ASSERT_EQ((ssize_t)sizeof(c), read(self->pfd, &c, sizeof(c)));
	ASSERT_EQ(0, c.status);
	ASSERT_EQ(4U, c.ready);

	ents(self, 120, 4, false, 0);
	meta_junk(self->m, 4);
	ASSERT_EQ(0, kst_batch_meta(self->pfd, KVTIER_IOC_LOOKUP, self->e, 4,
				    0, self->m, &done));
	ASSERT_EQ(4U, done);
	for (i = 0; i < 4; i++) {
		ASSERT_EQ((__u32)KVTIER_TIER_HBM, self->e[i].tier);
		ASSERT_EQ(0, rec_check(&self->m[i], 120 + i,
				       rec_len(120 + i) | 1));
	}
	slot = self->e[3].slot;
	memset(self->buf, 0, 4 * M_BS);
	ents(self, 120, 4, true, 0);
	meta_junk(self->m, 4);
	ASSERT_EQ(0, kst_batch_meta(self->pfd, KVTIER_IOC_GET, self->e, 4, 0,
				    self->m, &done));
	ASSERT_EQ(4U, done);
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(-1, kst_check_gen(MBLK(self, i), M_BS, M_K0, 120 + i,
					    1));
		ASSERT_EQ(0, rec_check(&self->m[i], 120 + i,
				       rec_len(120 + i) | 1));
	}

	/*
	 * ADOPT: key 123 goes, its slot keeps the bytes (hbm.c's
	 * adopt_round_trip); adopted as key 130 with a record of its own.
	 */
	ASSERT_EQ(0, kst_drop1(self->pfd, M_K0, 123));
	memset(&ad, 0, sizeof(ad));
	ad.key[0] = M_K0;
	ad.key[1] = 130;
	ad.slot = slot;
	rec_set(&self->m[0], 130, 33);
	memset(&b, 0, sizeof(b));
	b.blocks = (__u64)(uintptr_t)&ad;
	b.count = 1;
	b.meta = (__u64)(uintptr_t)self->m;
	ASSERT_EQ(0, kst_ioctl(self->pfd, KVTIER_IOC_ADOPT, &b));
	ASSERT_EQ(0, ad.status);
	meta_junk(self->m, 1);
	ASSERT_EQ(0, one_meta(self, KVTIER_IOC_GET, 130, MBLK(self, 0), 0,
			      self->m));
	ASSERT_EQ(-1, kst_check_gen(MBLK(self, 0), M_BS, M_K0, 123, 1));
	ASSERT_EQ(0, rec_check(self->m, 130, 33));
}

/* ---- the NVMe tier ------------------------------------------------------------ */

FIXTURE(nvme) {
	struct nvt_fix;
	struct kvtier_block e[16];
	struct kvtier_meta m[16];
};

FIXTURE_VARIANT(nvme) {
	struct nvt_cfg cfg;
};

FIXTURE_VARIANT_ADD(nvme, b4k) {
	.cfg = NVT_TIER_CFG("meta-nvme", 4 * KST_KIB),
};

FIXTURE_SETUP(nvme)
{
	nvt_setup(_metadata, NVT_FIX(self), &variant->cfg);
	ASSERT_TRUE(kst_supported(KVTIER_F_META));
}

FIXTURE_TEARDOWN(nvme)
{
	nvt_teardown(NVT_FIX(self));
}

/* PUT keys first..first+n-1 (generation @gen) with their records. */
static int put_meta_range(FIXTURE_DATA(nvme) *self, __u64 first, __u32 n,
			  __u64 gen)
{
	__u32 i, done;
	int ret;

	for (i = 0; i < n; i++) {
		kst_fill(self->buf, self->bs, K0, first + i, GEN(gen));
		kst_blk(&self->e[0], K0, first + i, self->buf);
		rec_set(&self->m[0], first + i, rec_len(first + i));
		ret = kst_batch_meta(self->pfd, KVTIER_IOC_PUT, self->e, 1, 0,
				     self->m, &done);
		if (ret || self->e[0].status)
			return ret ? ret : self->e[0].status;
	}
	return 0;
}

/*
 * Keys first..first+n-1 by LOOKUP (@get false, no load) or GET, 16 at a
 * time: how many have their exact record (and with GET, bytes).
 */
static __u32 meta_range_ok(struct __test_metadata *_metadata,
			   FIXTURE_DATA(nvme) *self, __u64 first, __u32 n,
			   bool get, __u32 *on_nvme)
{
	__u32 i, j, c, ok = 0, done;

	if (on_nvme)
		*on_nvme = 0;
	for (i = 0; i < n; i += c) {
		c = n - i < 16 ? n - i : 16;
		for (j = 0; j < c; j++)
			kst_blk(&self->e[j], K0, first + i + j,
				get ? self->out : NULL);
		meta_junk(self->m, c);
		for (j = 0; j < c && get; j++) {
			/* one block at a time: one buffer */
			if (kst_batch_meta(self->pfd, KVTIER_IOC_GET,
					   &self->e[j], 1, 0, &self->m[j],
					   &done))
				continue;
			if (self->e[j].status ||
			    kst_check_gen(self->out, self->bs, K0,
					  first + i + j, GEN(1)) != -1)
				self->m[j].len = ~0U;
		}
		if (!get && kst_batch_meta(self->pfd, KVTIER_IOC_LOOKUP,
					   self->e, c, 0, self->m, &done))
			return 0;
		for (j = 0; j < c; j++) {
			__u64 k = first + i + j;

			if (on_nvme && self->e[j].tier == KVTIER_TIER_NVME)
				(*on_nvme)++;
			if (!self->e[j].status &&
			    !rec_check(&self->m[j], k, rec_len(k)))
				ok++;
			else
				TH_LOG("key %llu: status %d, record len %u (want %u), check %d",
				       (unsigned long long)k, self->e[j].status,
				       self->m[j].len, rec_len(k),
				       rec_check(&self->m[j], k, rec_len(k)));
		}
	}
	return ok;
}

/*
 * Records of blocks demoted to NVMe: LOOKUP returns them for blocks only
 * there, GET brings each back with its record; meta_bytes grew with the
 * records PUT.
 */
TEST_F(nvme, evicted_nvme)
{
	long long before, after;
	__u32 nvme;

	before = PSTAT(self->pfd, meta_bytes);
	ASSERT_LE(0, before);
	ASSERT_EQ(0, put_meta_range(self, 0, NPUT, 1));
	after = PSTAT(self->pfd, meta_bytes);
	ASSERT_LT(before, after);

	EXPECT_EQ(NPUT, meta_range_ok(_metadata, self, 0, NPUT, false, &nvme));
	/* those only on NVMe: at least the ones DRAM cannot hold */
	EXPECT_LE(NCOLD, nvme);
	EXPECT_EQ(NPUT, meta_range_ok(_metadata, self, 0, NPUT, true, NULL));
	EXPECT_LE((long long)NCOLD, PSTAT(self->pfd, promotions));
	EXPECT_EQ(0, PSTAT(self->pfd, bad_reads));
}

/*
 * The records are on the device: after SYNC, detach (which forgets the
 * blocks only there) and attach again, every block is back with its
 * record, read from the device.
 */
TEST_F(nvme, reattach)
{
	__u32 nvme;

	ASSERT_EQ(0, put_meta_range(self, 0, NPUT, 1));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(0, nvt_detach(self->ctl));
	/* Only what DRAM holds is left: the rest is on the device alone. */
	ASSERT_GE((long long)DRAM, RES_DRAM(self->pfd));
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, 0, NULL));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	EXPECT_EQ(NPUT, meta_range_ok(_metadata, self, 0, NPUT, false, &nvme));
	EXPECT_LE(NCOLD, nvme);
	EXPECT_EQ(NPUT, meta_range_ok(_metadata, self, 0, NPUT, true, NULL));
	EXPECT_EQ(0, PSTAT(self->pfd, bad_reads));
}

TEST_HARNESS_MAIN
