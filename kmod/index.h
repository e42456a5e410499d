/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The key hash: from a block's key to its address.
 *
 * index.c builds twice: into the module, and into tools/index-bench, which
 * times lookups natively (lookup_native_1e6_vs_1e3). It may use only what
 * tools/index-shim.h provides in userspace: u32, u64, U32_MAX, KVT_NIL,
 * WARN_ON_ONCE(), lockdep_assert_held(), cond_resched(), prefetch(),
 * __ffs(), DIV_ROUND_UP(), GOLDEN_RATIO_64, and these fields:
 *
 *  struct kvt_block	key[2]
 *  struct kvt_pool	blocks[], buckets[] (nbuckets of them), nbuckets,
 *			seed, lock
 *
 * Whether a block is READY, and what it holds, is block.c's business.
 */
#ifndef _KVT_INDEX_H
#define _KVT_INDEX_H

#ifdef __KERNEL__
#include <linux/build_bug.h>
#include <linux/types.h>
#endif

#define KVT_BUCKET_SLOTS	3

/**
 * struct kvt_bucket - a cache line of the key hash
 * @key: each slot's key
 * @addr: each slot's block, KVT_NIL when the slot is free
 * @overflow: keys whose home bucket comes before this one (or is it) and
 *	      that are stored after it
 */
struct kvt_bucket {
	u64 key[KVT_BUCKET_SLOTS][2];
	u32 addr[KVT_BUCKET_SLOTS];
	u32 overflow;
};

static_assert(sizeof(struct kvt_bucket) == 64, "a bucket is a cache line");

struct kvt_pool;

u32 kvt_index_buckets(u32 capacity);
void kvt_index_reset(struct kvt_pool *pool);
u32 kvt_block_find(struct kvt_pool *pool, const u64 *key);
void kvt_index_find_many(struct kvt_pool *pool, const void *keys,
			 size_t stride, u32 n, u32 *addrs);
void kvt_index_add(struct kvt_pool *pool, u32 addr);
void kvt_index_del(struct kvt_pool *pool, u32 addr);

#endif /* _KVT_INDEX_H */
