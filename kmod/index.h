/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The key hash: from a block's key to its address.
 *
 * index.c builds twice: into the module, and into tools/index-bench, which
 * times lookups natively (lookup_native_1e6_vs_1e3). It may use only what
 * tools/index-shim.h provides in userspace: u32, u64, U32_MAX, max_t(),
 * WARN_ON_ONCE(), lockdep_assert_held(), cond_resched(), hash_64(),
 * GOLDEN_RATIO_64, order_base_2(), and these fields:
 *
 *  struct kvt_block	key[2], hnext (the next address in the chain, set
 *			while the block is in the hash)
 *  struct kvt_pool	blocks[], buckets[] (chain heads, 1 << hash_bits),
 *			hash_bits, seed, lock
 *
 * Whether a block is READY, and what it holds, is block.c's business.
 */
#ifndef _KVT_INDEX_H
#define _KVT_INDEX_H

#ifdef __KERNEL__
#include <linux/types.h>
#endif

struct kvt_pool;

u32 kvt_index_bits(u32 capacity);
void kvt_index_reset(struct kvt_pool *pool);
u32 kvt_block_find(struct kvt_pool *pool, const u64 *key);
void kvt_index_add(struct kvt_pool *pool, u32 addr);
void kvt_index_del(struct kvt_pool *pool, u32 addr);

#endif /* _KVT_INDEX_H */
