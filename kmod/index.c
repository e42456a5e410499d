// SPDX-License-Identifier: GPL-2.0
/*
 * The key hash of a pool: from a block's 128-bit key to its address.
 *
 * Open addressing over buckets of one cache line (struct kvt_bucket), of
 * three slots: a key and its block's address. A key's hash picks its home
 * bucket; the key is stored in the first bucket from there on with a free
 * slot, and each full bucket it passes counts it in its overflow. A lookup
 * reads the home bucket, and the next one only while the one at hand has
 * overflow. There is a bucket for every two addresses of the capacity, so
 * a full pool's slots are two thirds taken and nearly every key is in its
 * home bucket: a lookup is one cache line, hit or miss, the key's copy in
 * the bucket sparing the block's record. kvt_index_find_many() overlaps
 * those lines across a batch of keys.
 *
 * Only READY blocks are in the hash (block.c adds and removes them). One
 * source for the module and for userspace: tools/index-bench builds this
 * file unchanged against tools/index-shim.h (kmod/index.h lists what it
 * may use) and times lookups natively.
 */
#ifdef __KERNEL__
#include <linux/bitops.h>
#include <linux/hash.h>
#include <linux/math.h>
#include <linux/prefetch.h>
#include <linux/sched.h>
#include "kvt.h"
#else
#include "index-shim.h"
#endif

/* Addresses of the capacity per bucket (of KVT_BUCKET_SLOTS slots). */
#define KVT_BUCKET_LOAD		2

static u32 kvt_key_hash(const struct kvt_pool *pool, const u64 *key)
{
	u64 h = (key[0] ^ pool->seed ^ (key[1] * GOLDEN_RATIO_64)) *
		GOLDEN_RATIO_64;

	return (u32)(((h >> 32) * pool->nbuckets) >> 32);
}

static u32 kvt_bucket_next(const struct kvt_pool *pool, u32 b)
{
	return b + 1 == pool->nbuckets ? 0 : b + 1;
}

/**
 * kvt_index_buckets() - the bucket count for a capacity
 * @capacity: block addresses of the pool, 1..KVTIER_CAPACITY_MAX
 *
 * Return: how many buckets its key hash has.
 */
u32 kvt_index_buckets(u32 capacity)
{
	return DIV_ROUND_UP(capacity, KVT_BUCKET_LOAD);
}

/**
 * kvt_index_reset() - empty the key hash
 * @pool: a pool whose buckets[] are allocated
 */
void kvt_index_reset(struct kvt_pool *pool)
{
	u32 b, s;

	for (b = 0; b < pool->nbuckets; b++) {
		struct kvt_bucket *bk = &pool->buckets[b];

		for (s = 0; s < KVT_BUCKET_SLOTS; s++)
			bk->addr[s] = KVT_NIL;
		bk->overflow = 0;
		if (!(b & 0xffff))
			cond_resched();
	}
}

/* @key's block from its home bucket @b on; or KVT_NIL. */
static u32 kvt_index_walk(struct kvt_pool *pool, const u64 *key, u32 b)
{
	u32 n, s;

	for (n = 0; n < pool->nbuckets; n++) {
		const struct kvt_bucket *bk = &pool->buckets[b];
		u32 m = 0;

		/* Compared without branches: which slot holds it is random. */
		for (s = 0; s < KVT_BUCKET_SLOTS; s++)
			m |= (u32)(!((bk->key[s][0] ^ key[0]) |
				     (bk->key[s][1] ^ key[1]))) << s;
		/*
		 * The first slot with the key: a free one keeps the key it
		 * had (its address KVT_NIL), but the key cannot be stored
		 * after it, as kvt_index_add() takes the first free slot.
		 */
		if (m)
			return bk->addr[__ffs(m)];
		if (!bk->overflow)
			break;
		b = kvt_bucket_next(pool, b);
	}
	return KVT_NIL;
}

/**
 * kvt_block_find() - the READY block holding a key
 * @pool: the pool, its lock held
 * @key: two u64 words
 *
 * Return: the block address, or KVT_NIL.
 */
u32 kvt_block_find(struct kvt_pool *pool, const u64 *key)
{
	lockdep_assert_held(&pool->lock);
	return kvt_index_walk(pool, key, kvt_key_hash(pool, key));
}

/*
 * How far kvt_index_find_many() runs ahead: a key's bucket is fetched
 * KVT_FIND_AHEAD keys before the key is resolved.
 */
#define KVT_FIND_AHEAD		16

static const u64 *kvt_nth_key(const void *keys, size_t stride, u32 i)
{
	return (const u64 *)((const char *)keys + (size_t)i * stride);
}

/**
 * kvt_index_find_many() - the READY blocks holding a batch of keys
 * @pool: the pool, its lock held
 * @keys: the first key; the others follow @stride bytes apart
 * @stride: bytes from one key to the next
 * @n: how many keys
 * @addrs: out: each key's block address, or KVT_NIL
 *
 * What kvt_block_find() finds for each key, the memory of the keys ahead
 * fetched while the one at hand is resolved, so that their waits overlap:
 * a batch in a large pool waits for memory about as long as one in a pool
 * whose index is in the CPU's caches.
 */
void kvt_index_find_many(struct kvt_pool *pool, const void *keys,
			 size_t stride, u32 n, u32 *addrs)
{
	u32 home[KVT_FIND_AHEAD];
	u32 i, j;

	lockdep_assert_held(&pool->lock);
	for (i = 0; i < n + KVT_FIND_AHEAD; i++) {
		/* Key j's place is reused by key i: resolve j first. */
		j = i - KVT_FIND_AHEAD;
		if (i >= KVT_FIND_AHEAD && j < n)
			addrs[j] = kvt_index_walk(pool,
						  kvt_nth_key(keys, stride, j),
						  home[j % KVT_FIND_AHEAD]);
		if (i < n) {
			home[i % KVT_FIND_AHEAD] =
				kvt_key_hash(pool, kvt_nth_key(keys, stride, i));
			prefetch(&pool->buckets[home[i % KVT_FIND_AHEAD]]);
		}
	}
}

/**
 * kvt_index_add() - add a block to the key hash
 * @pool: the pool, its lock held
 * @addr: a block with its key set, whose key is not in the hash
 */
void kvt_index_add(struct kvt_pool *pool, u32 addr)
{
	const u64 *key = pool->blocks[addr].key;
	u32 home = kvt_key_hash(pool, key);
	u32 b = home, n, s;

	lockdep_assert_held(&pool->lock);
	for (n = 0; n < pool->nbuckets; n++) {
		struct kvt_bucket *bk = &pool->buckets[b];

		for (s = 0; s < KVT_BUCKET_SLOTS; s++)
			if (bk->addr[s] == KVT_NIL)
				goto found;
		b = kvt_bucket_next(pool, b);
	}
	/* More keys than slots: cannot be (kvt_index_buckets()). */
	WARN_ON_ONCE(1);
	return;
found:
	pool->buckets[b].key[s][0] = key[0];
	pool->buckets[b].key[s][1] = key[1];
	pool->buckets[b].addr[s] = addr;
	/* The full buckets it passed count it. */
	for (b = home; n--; b = kvt_bucket_next(pool, b))
		pool->buckets[b].overflow++;
}

/**
 * kvt_index_del() - remove a block from the key hash
 * @pool: the pool, its lock held
 * @addr: a block in the hash
 */
void kvt_index_del(struct kvt_pool *pool, u32 addr)
{
	u32 home = kvt_key_hash(pool, pool->blocks[addr].key);
	u32 b = home, n, s;

	lockdep_assert_held(&pool->lock);
	for (n = 0; n < pool->nbuckets; n++) {
		struct kvt_bucket *bk = &pool->buckets[b];

		for (s = 0; s < KVT_BUCKET_SLOTS; s++) {
			if (bk->addr[s] == addr)
				goto found;
		}
		if (WARN_ON_ONCE(!bk->overflow))
			return;
		b = kvt_bucket_next(pool, b);
	}
	WARN_ON_ONCE(1);
	return;
found:
	pool->buckets[b].addr[s] = KVT_NIL;
	/* The buckets it passed no longer count it. */
	for (b = home; n--; b = kvt_bucket_next(pool, b))
		pool->buckets[b].overflow--;
}
