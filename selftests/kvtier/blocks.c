// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier block commands on a pool fd: PUT, GET, LOOKUP, DROP, STAT, the
 * per-entry statuses, and every whole-batch rejection for every command.
 */
#include <stdbool.h>

#include "kvtier_test.h"

#define BS	(2 * KST_PAGE)
#define CAP	64

FIXTURE(blocks) {
	int ctl, pfd;
	char name[KVTIER_NAME_MAX];
	char *buf;		/* CAP blocks */
};

FIXTURE_SETUP(blocks)
{
	kst_setup(_metadata);

	self->pfd = -1;
	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	kst_name(self->name, "blocks");
	self->pfd = kst_pool_create(self->ctl, self->name, BS, CAP, CAP);
	ASSERT_LE(0, self->pfd);
	self->buf = kst_alloc(CAP * BS);
	ASSERT_NE(NULL, self->buf);
}

FIXTURE_TEARDOWN(blocks)
{
	if (self->pfd >= 0)
		close(self->pfd);
	kst_pool_destroy(self->ctl, self->name);
	kst_free(self->buf, CAP * BS);
	close(self->ctl);
}

#define BLK(self, i)	((self)->buf + (size_t)(i) * BS)

/* Put keys (k0, first .. first + n - 1), generation gen, one batch. */
static int put_range(FIXTURE_DATA(blocks) *self, __u64 k0, unsigned int first,
		     unsigned int n, __u64 gen, struct kvtier_block *out)
{
	struct kvtier_block b[CAP];
	unsigned int i;
	__u32 done;
	int ret;

	for (i = 0; i < n; i++) {
		kst_fill(BLK(self, i), BS, k0, first + i, gen);
		kst_blk(&b[i], k0, first + i, BLK(self, i));
	}
	ret = kst_batch(self->pfd, KVTIER_IOC_PUT, b, n, 0, &done);
	if (ret)
		return ret;
	if (out)
		memcpy(out, b, n * sizeof(*b));
	return done == n ? 0 : -EPROTO;
}

TEST_F(blocks, put_get)
{
	struct kvtier_block b;

	kst_fill(BLK(self, 0), BS, 1, 2, 3);
	ASSERT_EQ(0, kst_put1(self->pfd, 1, 2, BLK(self, 0), &b));
	ASSERT_EQ((__u32)KVTIER_TIER_DRAM, b.tier);
	ASSERT_GT((__u64)CAP, b.addr);
	memset(BLK(self, 1), 0xee, BS);
	ASSERT_EQ(0, kst_get1(self->pfd, 1, 2, BLK(self, 1), &b));
	ASSERT_EQ((__u32)KVTIER_TIER_DRAM, b.tier);
	ASSERT_EQ(-1, kst_check_gen(BLK(self, 1), BS, 1, 2, 3));
	ASSERT_EQ(0, memcmp(BLK(self, 0), BLK(self, 1), BS));
}

TEST_F(blocks, put_get_batch)
{
	struct kvtier_block b[32], g[32];
	__u32 done;
	int i, j;

	ASSERT_EQ(0, put_range(self, 0xabc, 100, 32, 7, b));
	for (i = 0; i < 32; i++) {
		ASSERT_EQ(0, b[i].status);
		ASSERT_EQ((__u32)KVTIER_TIER_DRAM, b[i].tier);
		ASSERT_GT((__u64)CAP, b[i].addr);
		for (j = 0; j < i; j++)
			ASSERT_NE(b[j].addr, b[i].addr);
	}
	memset(self->buf, 0, 32 * BS);
	/* every other key first, then the rest */
	for (i = 0; i < 32; i++)
		kst_blk(&g[i], 0xabc, 100 + (i * 2 % 32) + (i >= 16),
			BLK(self, i));
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_GET, g, 32, 0, &done));
	ASSERT_EQ(32U, done);
	for (i = 0; i < 32; i++) {
		int k = (i * 2 % 32) + (i >= 16);

		ASSERT_EQ(0, g[i].status);
		ASSERT_EQ(b[k].addr, g[i].addr);
		ASSERT_EQ(-1, kst_check_gen(BLK(self, i), BS, 0xabc, 100 + k,
					    7));
	}
	ASSERT_EQ(32LL, kst_resident(self->pfd));
}

/* All 128 bits of the key count. */
TEST_F(blocks, keys_are_128_bit)
{
	static const __u64 keys[][2] = {
		{ 1, 2 }, { 2, 1 }, { 1, 2 | (1ULL << 63) },
		{ 1 | (1ULL << 63), 2 }, { 0, 0 }, { ~0ULL, ~0ULL },
	};
	unsigned int i, n = ARRAY_SIZE(keys);

	for (i = 0; i < n; i++) {
		kst_fill(BLK(self, 0), BS, keys[i][0], keys[i][1], i);
		ASSERT_EQ(0, kst_put1(self->pfd, keys[i][0], keys[i][1],
				      BLK(self, 0), NULL));
	}
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, kst_get1(self->pfd, keys[i][0], keys[i][1],
				      BLK(self, 0), NULL));
		ASSERT_EQ(-1, kst_check_gen(BLK(self, 0), BS, keys[i][0],
					    keys[i][1], i));
	}
	ASSERT_EQ((long long)n, kst_resident(self->pfd));
}

TEST_F(blocks, get_miss)
{
	struct kvtier_block b;
	__u32 done;

	kst_blk(&b, 5, 5, BLK(self, 0));
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_GET, &b, 1, 0, &done));
	ASSERT_EQ(0U, done);
	ASSERT_EQ(-ENOENT, b.status);
	ASSERT_EQ(KVTIER_ADDR_NONE, b.addr);
	ASSERT_EQ((__u32)KVTIER_TIER_NONE, b.tier);
}

TEST_F(blocks, get_mixed)
{
	struct kvtier_block b[4];
	__u32 done;
	int i;

	ASSERT_EQ(0, put_range(self, 6, 0, 1, 1, NULL));
	ASSERT_EQ(0, put_range(self, 6, 2, 1, 1, NULL));
	memset(self->buf, 0, 4 * BS);
	for (i = 0; i < 4; i++)
		kst_blk(&b[i], 6, i, BLK(self, i));
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_GET, b, 4, 0, &done));
	ASSERT_EQ(2U, done);
	ASSERT_EQ(0, b[0].status);
	ASSERT_EQ(-ENOENT, b[1].status);
	ASSERT_EQ(0, b[2].status);
	ASSERT_EQ(-ENOENT, b[3].status);
	ASSERT_EQ(KVTIER_ADDR_NONE, b[1].addr);
	ASSERT_EQ(KVTIER_ADDR_NONE, b[3].addr);
	ASSERT_EQ(-1, kst_check_gen(BLK(self, 0), BS, 6, 0, 1));
	ASSERT_EQ(-1, kst_check_gen(BLK(self, 2), BS, 6, 2, 1));
}

TEST_F(blocks, put_exists)
{
	struct kvtier_block b;

	kst_fill(BLK(self, 0), BS, 8, 8, 1);
	ASSERT_EQ(0, kst_put1(self->pfd, 8, 8, BLK(self, 0), NULL));
	kst_fill(BLK(self, 0), BS, 8, 8, 2);
	ASSERT_EQ(-EEXIST, kst_put1(self->pfd, 8, 8, BLK(self, 0), &b));
	ASSERT_EQ(0, kst_get1(self->pfd, 8, 8, BLK(self, 1), NULL));
	ASSERT_EQ(-1, kst_check_gen(BLK(self, 1), BS, 8, 8, 1));
	ASSERT_EQ(1LL, kst_resident(self->pfd));
}

/* The same key twice in one batch: the second is -EEXIST. */
TEST_F(blocks, put_duplicate_in_batch)
{
	struct kvtier_block b[2];
	__u32 done;

	kst_fill(BLK(self, 0), BS, 9, 9, 1);
	kst_fill(BLK(self, 1), BS, 9, 9, 2);
	kst_blk(&b[0], 9, 9, BLK(self, 0));
	kst_blk(&b[1], 9, 9, BLK(self, 1));
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_PUT, b, 2, 0, &done));
	ASSERT_EQ(1U, done);
	ASSERT_EQ(0, b[0].status);
	ASSERT_EQ(-EEXIST, b[1].status);
	ASSERT_EQ(0, kst_get1(self->pfd, 9, 9, BLK(self, 2), NULL));
	ASSERT_EQ(-1, kst_check_gen(BLK(self, 2), BS, 9, 9, 1));
}

TEST_F(blocks, replace)
{
	struct kvtier_pool_stat st;

	ASSERT_EQ(0, put_range(self, 10, 0, 4, 1, NULL));
	kst_fill(BLK(self, 0), BS, 10, 2, 2);
	ASSERT_EQ(0, kst_replace1(self->pfd, 10, 2, BLK(self, 0), NULL));
	memset(self->buf, 0, 4 * BS);
	ASSERT_EQ(0, kst_get1(self->pfd, 10, 2, BLK(self, 0), NULL));
	ASSERT_EQ(-1, kst_check_gen(BLK(self, 0), BS, 10, 2, 2));
	/* the others are untouched */
	ASSERT_EQ(0, kst_get1(self->pfd, 10, 1, BLK(self, 1), NULL));
	ASSERT_EQ(-1, kst_check_gen(BLK(self, 1), BS, 10, 1, 1));
	ASSERT_EQ(0, kst_get1(self->pfd, 10, 3, BLK(self, 3), NULL));
	ASSERT_EQ(-1, kst_check_gen(BLK(self, 3), BS, 10, 3, 1));
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	ASSERT_EQ(4ULL, st.resident[KVTIER_TIER_DRAM]);
}

/* REPLACE in a batch: each entry swapped, done counts them. */
TEST_F(blocks, replace_batch)
{
	struct kvtier_block b[8];
	__u32 done;
	int i;

	ASSERT_EQ(0, put_range(self, 11, 0, 8, 1, NULL));
	for (i = 0; i < 8; i++) {
		kst_fill(BLK(self, i), BS, 11, i, 100 + i);
		kst_blk(&b[i], 11, i, BLK(self, i));
	}
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_PUT, b, 8,
			       KVTIER_PUT_REPLACE, &done));
	ASSERT_EQ(8U, done);
	memset(self->buf, 0, 8 * BS);
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, kst_get1(self->pfd, 11, i, BLK(self, i), NULL));
		ASSERT_EQ(-1, kst_check_gen(BLK(self, i), BS, 11, i, 100 + i));
	}
	ASSERT_EQ(8LL, kst_resident(self->pfd));
}

/* ---- LOOKUP ------------------------------------------------------------ */

/* A chain 0..7 with block 3 missing: prefix 3, every entry has a status. */
TEST_F(blocks, lookup_prefix_hole)
{
	struct kvtier_block p[8], l[8];
	__u32 done;
	int i;

	ASSERT_EQ(0, put_range(self, 12, 0, 3, 1, p));
	ASSERT_EQ(0, put_range(self, 12, 4, 4, 1, p + 4));
	for (i = 0; i < 8; i++)
		kst_blk(&l[i], 12, i, NULL);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_LOOKUP, l, 8, 0, &done));
	ASSERT_EQ(3U, done);
	for (i = 0; i < 8; i++) {
		if (i == 3) {
			ASSERT_EQ(-ENOENT, l[i].status);
			ASSERT_EQ(KVTIER_ADDR_NONE, l[i].addr);
			ASSERT_EQ((__u32)KVTIER_TIER_NONE, l[i].tier);
			continue;
		}
		ASSERT_EQ(0, l[i].status);
		ASSERT_EQ(p[i].addr, l[i].addr);
		ASSERT_EQ((__u32)KVTIER_TIER_DRAM, l[i].tier);
	}
}

TEST_F(blocks, lookup_all_resident)
{
	struct kvtier_block l[6];
	__u32 done;
	int i;

	ASSERT_EQ(0, put_range(self, 13, 0, 6, 1, NULL));
	for (i = 0; i < 6; i++)
		kst_blk(&l[i], 13, i, NULL);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_LOOKUP, l, 6, 0, &done));
	ASSERT_EQ(6U, done);
}

TEST_F(blocks, lookup_first_missing)
{
	struct kvtier_block l[6];
	__u32 done;
	int i;

	ASSERT_EQ(0, put_range(self, 14, 1, 5, 1, NULL));
	for (i = 0; i < 6; i++)
		kst_blk(&l[i], 14, i, NULL);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_LOOKUP, l, 6, 0, &done));
	ASSERT_EQ(0U, done);
	ASSERT_EQ(-ENOENT, l[0].status);
	for (i = 1; i < 6; i++)
		ASSERT_EQ(0, l[i].status);
}

/* LOOKUP reports the address PUT gave and reads no bytes. */
TEST_F(blocks, lookup_tier_addr)
{
	struct kvtier_block p, l;

	kst_fill(BLK(self, 0), BS, 15, 1, 1);
	ASSERT_EQ(0, kst_put1(self->pfd, 15, 1, BLK(self, 0), &p));
	ASSERT_EQ(0, kst_lookup1(self->pfd, 15, 1, &l));
	ASSERT_EQ(p.addr, l.addr);
	ASSERT_EQ((__u32)KVTIER_TIER_DRAM, l.tier);
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, 15, 2, &l));
	ASSERT_EQ(KVTIER_ADDR_NONE, l.addr);
	ASSERT_EQ((__u32)KVTIER_TIER_NONE, l.tier);
}

/* The largest batch is accepted. */
TEST_F(blocks, lookup_batch_max)
{
	struct kvtier_block *l;
	__u32 done, i;

	l = calloc(KVTIER_BATCH_MAX, sizeof(*l));
	ASSERT_NE(NULL, l);
	ASSERT_EQ(0, put_range(self, 16, 0, 8, 1, NULL));
	for (i = 0; i < KVTIER_BATCH_MAX; i++)
		kst_blk(&l[i], 16, i, NULL);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_LOOKUP, l,
			       KVTIER_BATCH_MAX, 0, &done));
	ASSERT_EQ(8U, done);
	ASSERT_EQ(0, l[7].status);
	ASSERT_EQ(-ENOENT, l[8].status);
	ASSERT_EQ(-ENOENT, l[KVTIER_BATCH_MAX - 1].status);
	free(l);
}

/*
 * A batch longer than the keys LOOKUP finds at once, present and absent
 * keys mixed, some of them dropped and stored again (at other addresses):
 * every entry gets its own key's answer.
 */
TEST_F(blocks, lookup_batch_each_entry)
{
	struct kvtier_block p[CAP], d, *l;
	__u32 done, i, j, prefix;
	const __u32 n = 300;

	l = calloc(n, sizeof(*l));
	ASSERT_NE(NULL, l);
	ASSERT_EQ(0, put_range(self, 18, 0, CAP, 1, p));
	for (j = 5; j < CAP; j += 9) {
		kst_blk(&d, 18, j, NULL);
		ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_DROP, &d, 1, 0,
				       &done));
	}
	for (j = 5; j < CAP; j += 18)
		ASSERT_EQ(0, put_range(self, 18, j, 1, 2, &p[j]));
	for (i = 0; i < n; i++)
		kst_blk(&l[i], 18, (i * 37 + 11) % 150, NULL);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_LOOKUP, l, n, 0, &done));
	for (i = 0, prefix = 0; i < n; i++) {
		bool in;

		j = (i * 37 + 11) % 150;
		in = j < CAP && (j < 5 || (j - 5) % 9 || !((j - 5) % 18));
		if (in && prefix == i)
			prefix++;
		if (!in) {
			EXPECT_EQ(-ENOENT, l[i].status) TH_LOG("entry %u", i);
			EXPECT_EQ(KVTIER_ADDR_NONE, l[i].addr);
			continue;
		}
		EXPECT_EQ(0, l[i].status) TH_LOG("entry %u, key %u", i, j);
		EXPECT_EQ(p[j].addr, l[i].addr) TH_LOG("entry %u, key %u", i,
						       j);
	}
	EXPECT_EQ(prefix, done);
	free(l);
}

/*
 * The key hash kept full: every address holds a block while one key at a
 * time is dropped and a new one stored, many times over the capacity, so
 * that keys sit past their home buckets and leave them again. Each live
 * key is found at its address with its bytes, each dropped one misses.
 */
TEST_F(blocks, index_churn_full_pool)
{
	static unsigned char isl[41 * CAP];
	struct kvtier_block l[CAP], b;
	__u32 live[CAP], addr[CAP], done, i, round, next = CAP;
	__u64 rng = 0x853c49e6748fea9bULL, gen;

	for (i = 0; i < CAP; i++) {
		kst_fill(BLK(self, 0), BS, 19, i, 1);
		ASSERT_EQ(0, kst_put1(self->pfd, 19, i, BLK(self, 0), &b));
		live[i] = i;
		addr[i] = b.addr;
	}
	for (round = 0; round < 40 * CAP; round++) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		i = rng % CAP;
		ASSERT_EQ(0, kst_drop1(self->pfd, 19, live[i]));
		ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, 19, live[i], &b));
		kst_fill(BLK(self, 0), BS, 19, next, 1);
		ASSERT_EQ(0, kst_put1(self->pfd, 19, next, BLK(self, 0), &b));
		live[i] = next++;
		addr[i] = b.addr;
		if (round % CAP)
			continue;
		for (i = 0; i < CAP; i++)
			kst_blk(&l[i], 19, live[i], NULL);
		ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_LOOKUP, l, CAP, 0,
				       &done));
		ASSERT_EQ((__u32)CAP, done) TH_LOG("round %u", round);
		for (i = 0; i < CAP; i++)
			ASSERT_EQ(addr[i], l[i].addr);
	}
	for (i = 0; i < CAP; i++) {
		ASSERT_EQ(0, kst_get1(self->pfd, 19, live[i], BLK(self, 0),
				      NULL));
		ASSERT_EQ(-1, kst_check(BLK(self, 0), BS, 19, live[i], &gen));
	}
	/* Every key ever stored: found if and only if it is live. */
	memset(isl, 0, sizeof(isl));
	for (i = 0; i < CAP; i++)
		isl[live[i]] = 1;
	for (i = 0; i < next; i++)
		ASSERT_EQ(isl[i] ? 0 : -ENOENT,
			  kst_lookup1(self->pfd, 19, i, &b)) TH_LOG("key %u", i);
}

/* ---- DROP -------------------------------------------------------------- */

TEST_F(blocks, drop)
{
	struct kvtier_block d[2];
	__u32 done;

	ASSERT_EQ(0, put_range(self, 17, 0, 3, 1, NULL));
	kst_blk(&d[0], 17, 0, NULL);
	kst_blk(&d[1], 17, 2, NULL);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_DROP, d, 2, 0, &done));
	ASSERT_EQ(2U, done);
	ASSERT_EQ(0, d[0].status);
	ASSERT_EQ(0, d[1].status);
	ASSERT_EQ(-ENOENT, kst_get1(self->pfd, 17, 0, BLK(self, 0), NULL));
	ASSERT_EQ(-ENOENT, kst_get1(self->pfd, 17, 2, BLK(self, 0), NULL));
	ASSERT_EQ(0, kst_get1(self->pfd, 17, 1, BLK(self, 0), NULL));
	ASSERT_EQ(-1, kst_check_gen(BLK(self, 0), BS, 17, 1, 1));
	ASSERT_EQ(1LL, kst_resident(self->pfd));
}

TEST_F(blocks, drop_miss)
{
	struct kvtier_block d[2];
	__u32 done;

	ASSERT_EQ(0, put_range(self, 18, 0, 1, 1, NULL));
	kst_blk(&d[0], 18, 1, NULL);
	kst_blk(&d[1], 18, 0, NULL);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_DROP, d, 2, 0, &done));
	ASSERT_EQ(1U, done);
	ASSERT_EQ(-ENOENT, d[0].status);
	ASSERT_EQ(0, d[1].status);
	ASSERT_EQ(-ENOENT, kst_drop1(self->pfd, 18, 0));
	ASSERT_EQ(0LL, kst_resident(self->pfd));
}

TEST_F(blocks, drop_then_put)
{
	ASSERT_EQ(0, put_range(self, 19, 0, 1, 1, NULL));
	ASSERT_EQ(0, kst_drop1(self->pfd, 19, 0));
	ASSERT_EQ(0, put_range(self, 19, 0, 1, 2, NULL));
	memset(BLK(self, 0), 0, BS);
	ASSERT_EQ(0, kst_get1(self->pfd, 19, 0, BLK(self, 0), NULL));
	ASSERT_EQ(-1, kst_check_gen(BLK(self, 0), BS, 19, 0, 2));
}

/* ---- STAT -------------------------------------------------------------- */

TEST_F(blocks, stat_counters)
{
	struct kvtier_block g[5];
	struct kvtier_pool_stat st;
	__u32 done;
	int i;

	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	ASSERT_EQ(0ULL, st.puts);
	ASSERT_EQ(0ULL, st.gets);
	ASSERT_EQ(0ULL, st.bytes_in);

	ASSERT_EQ(0, put_range(self, 20, 0, 4, 1, NULL));
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	ASSERT_EQ(4ULL, st.puts);
	ASSERT_EQ(4ULL, st.resident[KVTIER_TIER_DRAM]);
	ASSERT_EQ(0ULL, st.resident[KVTIER_TIER_HBM]);
	ASSERT_EQ(0ULL, st.resident[KVTIER_TIER_NVME]);
	ASSERT_EQ(4 * BS, st.bytes_in);
	ASSERT_EQ(0ULL, st.gets);

	/* 3 hits, 2 misses */
	for (i = 0; i < 5; i++)
		kst_blk(&g[i], 20, i == 4 ? 9 : i, BLK(self, i));
	g[3].key[1] = 8;
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_GET, g, 5, 0, &done));
	ASSERT_EQ(3U, done);
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	/* gets: blocks read; hits/misses: GET and LOOKUP entries */
	ASSERT_EQ(3ULL, st.hits);
	ASSERT_EQ(2ULL, st.misses);
	ASSERT_EQ(3ULL, st.gets);
	ASSERT_EQ(3 * BS, st.bytes_out);
	ASSERT_EQ(4ULL, st.puts);

	/* LOOKUP: one hit, one miss, nothing read */
	kst_blk(&g[0], 20, 0, NULL);
	kst_blk(&g[1], 20, 7, NULL);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_LOOKUP, g, 2, 0, &done));
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	ASSERT_EQ(4ULL, st.hits);
	ASSERT_EQ(3ULL, st.misses);
	ASSERT_EQ(3ULL, st.gets);
	ASSERT_EQ(3 * BS, st.bytes_out);

	ASSERT_EQ(0, kst_drop1(self->pfd, 20, 1));
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	ASSERT_EQ(1ULL, st.drops);
	ASSERT_EQ(3ULL, st.resident[KVTIER_TIER_DRAM]);
	ASSERT_EQ(0ULL, st.evictions);
	ASSERT_EQ(0ULL, st.pinned);
	ASSERT_EQ(BS, st.block_size);
	ASSERT_EQ((__u32)CAP, st.capacity);
	ASSERT_EQ((__u32)CAP, st.dram_blocks);
	/* a pool without parts, never read in parts */
	ASSERT_EQ(0U, st.parts);
	ASSERT_EQ(0U, st.__pad2);
	ASSERT_EQ(0ULL, st.part_reads);
}

TEST_F(blocks, stat_reject_flags)
{
	struct kvtier_pool_stat st;

	memset(&st, 0, sizeof(st));
	st.flags = 1;
	ASSERT_EQ(-EINVAL, kst_ioctl(self->pfd, KVTIER_IOC_STAT, &st));
}

/*
 * The fields after flags are all out: what the caller left in them is
 * not read, and each one is written (no reserved input is left to check).
 */
TEST_F(blocks, stat_out_fields_overwritten)
{
	struct kvtier_pool_stat st;

	memset(&st, 0xa5, sizeof(st));
	st.flags = 0;
	ASSERT_EQ(0, kst_ioctl(self->pfd, KVTIER_IOC_STAT, &st));
	ASSERT_EQ(BS, st.block_size);
	ASSERT_EQ(0U, st.__pad);
	ASSERT_EQ(0U, st.parts);
	ASSERT_EQ(0U, st.__pad2);
	ASSERT_EQ(0ULL, st.part_reads);
	ASSERT_EQ(0ULL, st.lost_blocks);
}

/* ---- bad buffers: per entry -EFAULT ------------------------------------ */

TEST_F(blocks, put_bad_buf_entry)
{
	struct kvtier_block b[3];
	__u32 done;
	int i;

	for (i = 0; i < 3; i++) {
		kst_fill(BLK(self, i), BS, 21, i, 1);
		kst_blk(&b[i], 21, i, BLK(self, i));
	}
	b[1].buf = (__u64)(uintptr_t)kst_unmapped_addr();
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_PUT, b, 3, 0, &done));
	ASSERT_EQ(2U, done);
	ASSERT_EQ(0, b[0].status);
	ASSERT_EQ(-EFAULT, b[1].status);
	ASSERT_EQ(0, b[2].status);
	ASSERT_EQ(KVTIER_ADDR_NONE, b[1].addr);
	/* the failed one is not there, the others are whole */
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, 21, 1, NULL));
	ASSERT_EQ(-ENOENT, kst_get1(self->pfd, 21, 1, BLK(self, 4), NULL));
	ASSERT_EQ(0, kst_get1(self->pfd, 21, 0, BLK(self, 4), NULL));
	ASSERT_EQ(-1, kst_check_gen(BLK(self, 4), BS, 21, 0, 1));
	ASSERT_EQ(0, kst_get1(self->pfd, 21, 2, BLK(self, 4), NULL));
	ASSERT_EQ(-1, kst_check_gen(BLK(self, 4), BS, 21, 2, 1));
	ASSERT_EQ(2LL, kst_resident(self->pfd));
}

/*
 * A buffer whose first page is readable and second is not: the copy fails
 * half way and the key must still be absent, then a good PUT works.
 */
TEST_F(blocks, put_half_bad_buf)
{
	char *p = mmap(NULL, BS, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(MAP_FAILED, p);
	kst_fill(p, BS, 22, 0, 1);
	ASSERT_EQ(0, munmap(p + KST_PAGE, BS - KST_PAGE));
	ASSERT_EQ(-EFAULT, kst_put1(self->pfd, 22, 0, p, NULL));
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, 22, 0, NULL));
	ASSERT_EQ(0LL, kst_resident(self->pfd));
	munmap(p, KST_PAGE);

	ASSERT_EQ(0, put_range(self, 22, 0, 1, 2, NULL));
	ASSERT_EQ(0, kst_get1(self->pfd, 22, 0, BLK(self, 1), NULL));
	ASSERT_EQ(-1, kst_check_gen(BLK(self, 1), BS, 22, 0, 2));
}

/* A failed REPLACE keeps the old block. */
TEST_F(blocks, replace_bad_buf_keeps_old)
{
	ASSERT_EQ(0, put_range(self, 23, 0, 1, 1, NULL));
	ASSERT_EQ(-EFAULT, kst_replace1(self->pfd, 23, 0, kst_unmapped_addr(),
					NULL));
	memset(BLK(self, 0), 0, BS);
	ASSERT_EQ(0, kst_get1(self->pfd, 23, 0, BLK(self, 0), NULL));
	ASSERT_EQ(-1, kst_check_gen(BLK(self, 0), BS, 23, 0, 1));
}

TEST_F(blocks, get_bad_buf_entry)
{
	struct kvtier_block b[3];
	__u32 done;
	int i;

	ASSERT_EQ(0, put_range(self, 24, 0, 3, 1, NULL));
	memset(self->buf, 0, 3 * BS);
	for (i = 0; i < 3; i++)
		kst_blk(&b[i], 24, i, BLK(self, i));
	b[1].buf = (__u64)(uintptr_t)kst_unmapped_addr();
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_GET, b, 3, 0, &done));
	ASSERT_EQ(2U, done);
	ASSERT_EQ(0, b[0].status);
	ASSERT_EQ(-EFAULT, b[1].status);
	ASSERT_EQ(0, b[2].status);
	ASSERT_EQ(-1, kst_check_gen(BLK(self, 0), BS, 24, 0, 1));
	ASSERT_EQ(-1, kst_check_gen(BLK(self, 2), BS, 24, 2, 1));
	/* the block is still there */
	ASSERT_EQ(0, kst_get1(self->pfd, 24, 1, BLK(self, 1), NULL));
	ASSERT_EQ(-1, kst_check_gen(BLK(self, 1), BS, 24, 1, 1));
}

TEST_F(blocks, get_readonly_buf)
{
	char *p = mmap(NULL, BS, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, put_range(self, 25, 0, 1, 1, NULL));
	ASSERT_EQ(-EFAULT, kst_get1(self->pfd, 25, 0, p, NULL));
	munmap(p, BS);
}

/* ---- read-only pool fd ------------------------------------------------- */

TEST_F(blocks, rdonly_put)
{
	int ro = kst_pool_open(self->ctl, self->name, KVTIER_POOL_RDONLY);
	struct kvtier_block b;

	ASSERT_LE(0, ro);
	kst_fill(BLK(self, 0), BS, 26, 0, 1);
	kst_blk(&b, 26, 0, BLK(self, 0));
	ASSERT_EQ(-EBADF, kst_batch(ro, KVTIER_IOC_PUT, &b, 1, 0, NULL));
	ASSERT_EQ(-EBADF, kst_batch(ro, KVTIER_IOC_PUT, &b, 1,
				    KVTIER_PUT_REPLACE, NULL));
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, 26, 0, NULL));
	close(ro);
}

TEST_F(blocks, rdonly_drop)
{
	int ro = kst_pool_open(self->ctl, self->name, KVTIER_POOL_RDONLY);
	struct kvtier_block b;

	ASSERT_LE(0, ro);
	ASSERT_EQ(0, put_range(self, 27, 0, 1, 1, NULL));
	kst_blk(&b, 27, 0, NULL);
	ASSERT_EQ(-EBADF, kst_batch(ro, KVTIER_IOC_DROP, &b, 1, 0, NULL));
	ASSERT_EQ(0, kst_lookup1(self->pfd, 27, 0, NULL));
	close(ro);
}

TEST_F(blocks, rdonly_get_lookup_stat)
{
	int ro = kst_pool_open(self->ctl, self->name, KVTIER_POOL_RDONLY);
	struct kvtier_pool_stat st;

	ASSERT_LE(0, ro);
	ASSERT_EQ(0, put_range(self, 28, 0, 2, 1, NULL));
	memset(self->buf, 0, 2 * BS);
	ASSERT_EQ(0, kst_get1(ro, 28, 1, BLK(self, 0), NULL));
	ASSERT_EQ(-1, kst_check_gen(BLK(self, 0), BS, 28, 1, 1));
	ASSERT_EQ(0, kst_lookup1(ro, 28, 0, NULL));
	ASSERT_EQ(0, kst_stat(ro, &st));
	ASSERT_EQ(2ULL, st.resident[KVTIER_TIER_DRAM]);
	close(ro);
}

/* Two pools never share keys. */
TEST_F(blocks, pools_isolated)
{
	char name2[KVTIER_NAME_MAX];
	int pfd2;

	kst_name(name2, "blocks");
	pfd2 = kst_pool_create(self->ctl, name2, BS, 4, 4);
	ASSERT_LE(0, pfd2);
	/* destroyed now: lives as long as pfd2 */
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name2));
	ASSERT_EQ(0, put_range(self, 29, 0, 1, 1, NULL));
	ASSERT_EQ(-ENOENT, kst_get1(pfd2, 29, 0, BLK(self, 1), NULL));
	kst_fill(BLK(self, 1), BS, 29, 0, 2);
	ASSERT_EQ(0, kst_put1(pfd2, 29, 0, BLK(self, 1), NULL));
	ASSERT_EQ(0, kst_get1(self->pfd, 29, 0, BLK(self, 2), NULL));
	ASSERT_EQ(-1, kst_check_gen(BLK(self, 2), BS, 29, 0, 1));
	ASSERT_EQ(0, kst_get1(pfd2, 29, 0, BLK(self, 2), NULL));
	ASSERT_EQ(-1, kst_check_gen(BLK(self, 2), BS, 29, 0, 2));
	close(pfd2);
}

/* ---- whole-batch rejections, per command -------------------------------- */

/*
 * Every test below sends one bad field (or pointer) with otherwise valid
 * entries and asserts the exact errno and that the pool did not change.
 * Present keys: (1, 1), (1, 2). Absent keys: (2, 1), (2, 2).
 */
FIXTURE(reject) {
	int ctl, pfd;
	char name[KVTIER_NAME_MAX];
	char *buf;			/* 2 blocks */
	struct kvtier_block e[2];	/* valid entries for the command */
	struct kvtier_pool_stat before;
};

/* What struct kvtier_batch.meta is to a command (KVTIER_F_META). */
enum kst_meta_dir {
	KST_META_NONE,		/* must be 0 (-EINVAL) */
	KST_META_IN,		/* records read: PUT */
	KST_META_OUT,		/* records written: GET, LOOKUP */
};

FIXTURE_VARIANT(reject) {
	unsigned long cmd;
	__u64 known_flags;	/* the flag bits the command knows */
	bool buf;		/* entries carry a buffer (PUT, GET) */
	bool absent;		/* entries name absent keys (PUT) */
	bool pin;		/* pin the present keys first (UNPIN) */
	enum kst_meta_dir meta;
};

FIXTURE_VARIANT_ADD(reject, put) {
	.cmd = KVTIER_IOC_PUT, .known_flags = KVTIER_PUT_REPLACE, .buf = true, .absent = true,
	.meta = KST_META_IN,
};
FIXTURE_VARIANT_ADD(reject, get) {
	.cmd = KVTIER_IOC_GET, .known_flags = KST_GET_FLAGS, .buf = true,
	.meta = KST_META_OUT,
};
FIXTURE_VARIANT_ADD(reject, lookup) {
	.cmd = KVTIER_IOC_LOOKUP, .known_flags = KST_LOOKUP_FLAGS,
	.meta = KST_META_OUT,
};
FIXTURE_VARIANT_ADD(reject, drop) {
	.cmd = KVTIER_IOC_DROP,
};
FIXTURE_VARIANT_ADD(reject, pin) {
	.cmd = KVTIER_IOC_PIN,
};
FIXTURE_VARIANT_ADD(reject, unpin) {
	.cmd = KVTIER_IOC_UNPIN, .pin = true,
};

#undef BLK
#define BLK(self, i)	((self)->buf + (size_t)(i) * KST_PAGE)

static void reject_entries(FIXTURE_DATA(reject) *self,
			   const FIXTURE_VARIANT(reject) *variant)
{
	int i;

	for (i = 0; i < 2; i++) {
		kst_fill(BLK(self, i), KST_PAGE, variant->absent ? 2 : 1, i + 1,
			 9);
		kst_blk(&self->e[i], variant->absent ? 2 : 1, i + 1,
			variant->buf ? BLK(self, i) : NULL);
	}
}

FIXTURE_SETUP(reject)
{
	struct kvtier_block b[2];
	__u32 done;
	int i;

	kst_setup(_metadata);

	self->pfd = -1;
	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	kst_name(self->name, "reject");
	self->pfd = kst_pool_create(self->ctl, self->name, KST_PAGE, 16, 16);
	ASSERT_LE(0, self->pfd);
	self->buf = kst_alloc(2 * KST_PAGE);
	ASSERT_NE(NULL, self->buf);

	for (i = 0; i < 2; i++) {
		kst_fill(BLK(self, i), KST_PAGE, 1, i + 1, 1);
		kst_blk(&b[i], 1, i + 1, BLK(self, i));
	}
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_PUT, b, 2, 0, &done));
	ASSERT_EQ(2U, done);
	if (variant->pin) {
		for (i = 0; i < 2; i++)
			kst_blk(&b[i], 1, i + 1, NULL);
		ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_PIN, b, 2, 0,
				       &done));
		ASSERT_EQ(2U, done);
	}
	reject_entries(self, variant);
	ASSERT_EQ(0, kst_stat(self->pfd, &self->before));
}

FIXTURE_TEARDOWN(reject)
{
	if (self->pfd >= 0)
		close(self->pfd);
	kst_pool_destroy(self->ctl, self->name);
	kst_free(self->buf, 2 * KST_PAGE);
	close(self->ctl);
}

/* The pool is as the setup left it: same counters, same keys. */
static void reject_unchanged(struct __test_metadata *_metadata,
			     FIXTURE_DATA(reject) *self)
{
	struct kvtier_pool_stat st;
	int i;

	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	ASSERT_EQ(self->before.resident[KVTIER_TIER_DRAM],
		  st.resident[KVTIER_TIER_DRAM]);
	ASSERT_EQ(self->before.pinned, st.pinned);
	ASSERT_EQ(self->before.puts, st.puts);
	ASSERT_EQ(self->before.gets, st.gets);
	ASSERT_EQ(self->before.hits, st.hits);
	ASSERT_EQ(self->before.misses, st.misses);
	ASSERT_EQ(self->before.drops, st.drops);
	ASSERT_EQ(self->before.bytes_in, st.bytes_in);
	ASSERT_EQ(self->before.bytes_out, st.bytes_out);
	for (i = 1; i <= 2; i++) {
		ASSERT_EQ(0, kst_lookup1(self->pfd, 1, i, NULL));
		ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, 2, i, NULL));
	}
}

/* Send the batch @b with entries @blocks; expect @err and no change. */
static void reject_send(struct __test_metadata *_metadata,
			FIXTURE_DATA(reject) *self,
			const FIXTURE_VARIANT(reject) *variant,
			struct kvtier_batch *b, int err)
{
	ASSERT_EQ(err, kst_ioctl(self->pfd, variant->cmd, b));
	reject_unchanged(_metadata, self);
}

static void batch_init(struct kvtier_batch *b, void *blocks, __u32 count)
{
	memset(b, 0, sizeof(*b));
	b->blocks = (__u64)(uintptr_t)blocks;
	b->count = count;
}

/* The valid batch works (so the rejections below are about one field). */
TEST_F(reject, valid_batch_accepted)
{
	struct kvtier_batch b;

	batch_init(&b, self->e, 2);
	ASSERT_EQ(0, kst_ioctl(self->pfd, variant->cmd, &b));
	ASSERT_EQ(2U, b.done);
	ASSERT_EQ(0, self->e[0].status);
	ASSERT_EQ(0, self->e[1].status);
}

TEST_F(reject, count_zero)
{
	struct kvtier_batch b;

	batch_init(&b, self->e, 0);
	reject_send(_metadata, self, variant, &b, -EINVAL);
}

TEST_F(reject, count_over_max)
{
	struct kvtier_block *e = calloc(KVTIER_BATCH_MAX + 1, sizeof(*e));
	struct kvtier_batch b;
	int i;

	ASSERT_NE(NULL, e);
	for (i = 0; i <= KVTIER_BATCH_MAX; i++)
		e[i] = self->e[i & 1];
	batch_init(&b, e, KVTIER_BATCH_MAX + 1);
	reject_send(_metadata, self, variant, &b, -EINVAL);
	free(e);
}

TEST_F(reject, count_huge)
{
	struct kvtier_batch b;

	batch_init(&b, self->e, 0xffffffffU);
	reject_send(_metadata, self, variant, &b, -EINVAL);
}

TEST_F(reject, flags_unknown)
{
	struct kvtier_batch b;

	batch_init(&b, self->e, 2);
	b.flags = kst_unknown_bit(variant->known_flags);
	reject_send(_metadata, self, variant, &b, -EINVAL);
}

TEST_F(reject, flags_bit31)
{
	struct kvtier_batch b;

	batch_init(&b, self->e, 2);
	b.flags = 1U << 31;
	reject_send(_metadata, self, variant, &b, -EINVAL);
}

TEST_F(reject, pad)
{
	struct kvtier_batch b;

	batch_init(&b, self->e, 2);
	b.__pad = 1;
	reject_send(_metadata, self, variant, &b, -EINVAL);
}

/*
 * part_off and part_len are GET's with KVTIER_GET_PART (parts.c): without
 * the flag, any command, nonzero is -EINVAL.
 */
TEST_F(reject, part_off)
{
	struct kvtier_batch b;

	batch_init(&b, self->e, 2);
	b.part_off = 1U << 31;
	reject_send(_metadata, self, variant, &b, -EINVAL);
}

TEST_F(reject, part_len)
{
	struct kvtier_batch b;

	batch_init(&b, self->e, 2);
	b.part_len = 1;
	reject_send(_metadata, self, variant, &b, -EINVAL);
}

/*
 * The metadata array, wrong for the command: PUT's cannot be read; GET's
 * and LOOKUP's can be read but not written (their records could not be
 * stored, so nothing is done); DROP, PIN and UNPIN take none, and a valid
 * array of empty records is -EINVAL there. (meta.c has the rest.)
 */
TEST_F(reject, meta)
{
	struct kvtier_meta m[2];
	struct kvtier_batch b;
	void *ro = NULL;

	if (!kst_supported(KVTIER_F_META))
		SKIP(return, "kvtier without KVTIER_F_META");
	memset(m, 0, sizeof(m));
	batch_init(&b, self->e, 2);
	switch (variant->meta) {
	case KST_META_IN:
		b.meta = (__u64)(uintptr_t)kst_unmapped_addr();
		reject_send(_metadata, self, variant, &b, -EFAULT);
		break;
	case KST_META_OUT:
		ro = kst_ro_page_with(m, sizeof(m));
		ASSERT_NE(NULL, ro);
		b.meta = (__u64)(uintptr_t)ro;
		reject_send(_metadata, self, variant, &b, -EFAULT);
		munmap(ro, KST_PAGE);
		break;
	case KST_META_NONE:
		b.meta = (__u64)(uintptr_t)m;
		reject_send(_metadata, self, variant, &b, -EINVAL);
		break;
	}
}

/*
 * The second entry has nsegs set where no command but PUT and GET takes
 * it: the first is not applied either. (PUT and GET: sg.c.)
 */
TEST_F(reject, entry_nsegs)
{
	struct kvtier_batch b;

	if (variant->buf)
		SKIP(return, "nsegs is valid on PUT and GET (sg.c)");
	self->e[1].nsegs = 1;
	batch_init(&b, self->e, 2);
	reject_send(_metadata, self, variant, &b, -EINVAL);
}

/* PUT/GET: an entry with buf 0; others: an entry with a buf. */
TEST_F(reject, entry_buf)
{
	struct kvtier_batch b;

	self->e[1].buf = variant->buf ? 0 : (__u64)(uintptr_t)BLK(self, 1);
	batch_init(&b, self->e, 2);
	reject_send(_metadata, self, variant, &b, -EINVAL);
}

TEST_F(reject, blocks_null)
{
	struct kvtier_batch b;

	batch_init(&b, NULL, 2);
	reject_send(_metadata, self, variant, &b, -EFAULT);
}

TEST_F(reject, blocks_unmapped)
{
	struct kvtier_batch b;

	batch_init(&b, kst_unmapped_addr(), 2);
	reject_send(_metadata, self, variant, &b, -EFAULT);
}

/* The array starts readable and runs into an unmapped page. */
TEST_F(reject, blocks_partly_unmapped)
{
	char *p = mmap(NULL, 2 * KST_PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct kvtier_block *e;
	struct kvtier_batch b;

	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, munmap(p + KST_PAGE, KST_PAGE));
	e = (struct kvtier_block *)(p + KST_PAGE) - 1;
	e[0] = self->e[0];
	batch_init(&b, e, 2);
	reject_send(_metadata, self, variant, &b, -EFAULT);
	munmap(p, KST_PAGE);
}

/*
 * The array is readable but not writable: the statuses cannot be stored,
 * so the batch fails with -EFAULT and must not have been applied.
 */
TEST_F(reject, blocks_readonly)
{
	struct kvtier_block *e = mmap(NULL, KST_PAGE, PROT_READ | PROT_WRITE,
				      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct kvtier_batch b;

	ASSERT_NE(MAP_FAILED, e);
	e[0] = self->e[0];
	e[1] = self->e[1];
	ASSERT_EQ(0, mprotect(e, KST_PAGE, PROT_READ));
	batch_init(&b, e, 2);
	reject_send(_metadata, self, variant, &b, -EFAULT);
	munmap(e, KST_PAGE);
}

TEST_F(reject, size_smaller)
{
	struct kvtier_batch b;

	batch_init(&b, self->e, 2);
	ASSERT_EQ(-EINVAL, kst_ioctl(self->pfd,
				     kst_resize(variant->cmd, sizeof(b) - 8),
				     &b));
	reject_unchanged(_metadata, self);
}

TEST_F(reject, size_larger_nonzero_tail)
{
	__u8 buf[sizeof(struct kvtier_batch) + 16];

	memset(buf, 0, sizeof(buf));
	batch_init((struct kvtier_batch *)buf, self->e, 2);
	buf[sizeof(buf) - 1] = 1;
	ASSERT_EQ(-E2BIG, kst_ioctl(self->pfd,
				    kst_resize(variant->cmd, sizeof(buf)),
				    buf));
	reject_unchanged(_metadata, self);
}

TEST_F(reject, size_larger_zero_tail)
{
	__u8 buf[sizeof(struct kvtier_batch) + 16];
	struct kvtier_batch *b = (struct kvtier_batch *)buf;

	memset(buf, 0, sizeof(buf));
	batch_init(b, self->e, 2);
	ASSERT_EQ(0, kst_ioctl(self->pfd,
			       kst_resize(variant->cmd, sizeof(buf)), buf));
	ASSERT_EQ(2U, b->done);
	ASSERT_EQ(0, self->e[0].status);
	ASSERT_EQ(0, self->e[1].status);
}

TEST_HARNESS_MAIN
