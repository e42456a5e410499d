// SPDX-License-Identifier: GPL-2.0
/*
 * The key hash of a pool: from a block's 128-bit key to its address.
 *
 * pool->buckets[] holds the address of the first block of each chain, and
 * blocks chain by address through kvt_block.hnext: four bytes a bucket and
 * four a block, no pointers. There are as many buckets as the capacity
 * rounded up to a power of two (kvt_index_bits()), so a full pool has
 * about one block a bucket, and a lookup reads a bucket and then the
 * records of its chain until the key matches.
 *
 * Only READY blocks are in the hash (block.c adds and removes them). One
 * source for the module and for userspace: tools/index-bench builds this
 * file unchanged against tools/index-shim.h (kmod/index.h lists what it
 * may use) and times lookups natively.
 */
#ifdef __KERNEL__
#include <linux/hash.h>
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/sched.h>
#include "kvt.h"
#else
#include "index-shim.h"
#endif

#define KVT_MIN_HASH_BITS	4

static u32 kvt_key_hash(struct kvt_pool *pool, const u64 *key)
{
	return hash_64(key[0] ^ (key[1] * GOLDEN_RATIO_64) ^ pool->seed,
		       pool->hash_bits);
}

/**
 * kvt_index_bits() - the order of the bucket count for a capacity
 * @capacity: block addresses of the pool
 *
 * Return: log2 of the number of buckets.
 */
u32 kvt_index_bits(u32 capacity)
{
	return max_t(u32, KVT_MIN_HASH_BITS, order_base_2(capacity));
}

/**
 * kvt_index_reset() - empty the key hash
 * @pool: a pool whose buckets[] are allocated
 *
 * A block's hnext means something only while the block is in the hash
 * (kvt_index_add() sets it), so only the buckets are reset.
 */
void kvt_index_reset(struct kvt_pool *pool)
{
	u64 i;

	for (i = 0; i < 1ULL << pool->hash_bits; i++) {
		pool->buckets[i] = KVT_NIL;
		if (!(i & 0xffff))
			cond_resched();
	}
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
	u32 addr;

	lockdep_assert_held(&pool->lock);
	for (addr = pool->buckets[kvt_key_hash(pool, key)]; addr != KVT_NIL;
	     addr = pool->blocks[addr].hnext) {
		const struct kvt_block *blk = &pool->blocks[addr];

		if (blk->key[0] == key[0] && blk->key[1] == key[1])
			return addr;
	}
	return KVT_NIL;
}

/**
 * kvt_index_add() - link a block into the key hash
 * @pool: the pool, its lock held
 * @addr: a block with its key set, whose key is not in the hash
 */
void kvt_index_add(struct kvt_pool *pool, u32 addr)
{
	struct kvt_block *blk = &pool->blocks[addr];
	u32 *head = &pool->buckets[kvt_key_hash(pool, blk->key)];

	lockdep_assert_held(&pool->lock);
	blk->hnext = *head;
	*head = addr;
}

/**
 * kvt_index_del() - unlink a block from the key hash
 * @pool: the pool, its lock held
 * @addr: a block in the hash
 */
void kvt_index_del(struct kvt_pool *pool, u32 addr)
{
	struct kvt_block *blk = &pool->blocks[addr];
	u32 *link = &pool->buckets[kvt_key_hash(pool, blk->key)];

	lockdep_assert_held(&pool->lock);
	while (*link != addr) {
		if (WARN_ON_ONCE(*link == KVT_NIL))
			return;
		link = &pool->blocks[*link].hnext;
	}
	*link = blk->hnext;
}
