/* SPDX-License-Identifier: GPL-2.0 */
/*
 * index-shim.h: what kmod/index.c needs of the kernel, in userspace.
 *
 * tools/index-bench compiles kmod/index.c, unchanged, against this header
 * instead of <linux/...> and kmod/kvt.h: kshim.h's stand-ins, a no-op
 * cond_resched(), hash_64() and order_base_2() as the kernel defines them,
 * and stand-ins for the parts of struct kvt_pool and struct kvt_block the
 * key hash reads and writes (same names, same types). kmod/index.h lists
 * them; nothing else may be used.
 */
#ifndef KVTIER_INDEX_SHIM_H
#define KVTIER_INDEX_SHIM_H

#include "kshim.h"

#define KVT_NIL			U32_MAX
#define cond_resched()		do { } while (0)

/* include/linux/hash.h */
#define GOLDEN_RATIO_64		0x61C8864680B583EBull
static inline u32 hash_64(u64 val, unsigned int bits)
{
	return (u32)(val * GOLDEN_RATIO_64 >> (64 - bits));
}

/* include/linux/log2.h, for n >= 1 */
static inline u32 order_base_2(u64 n)
{
	return n > 1 ? 64 - __builtin_clzll(n - 1) : 0;
}

#include "../kmod/index.h"

/*
 * The key hash's fields of kmod/kvt.h's struct kvt_block, padded to the
 * module's record size (KVT_BLOCK_BYTES; kmod/block.c checks it at build
 * time), so that lookups walk memory laid out as the module's.
 */
#define KVT_BLOCK_BYTES		64
struct kvt_block {
	u64 key[2];
	u32 hnext;
	char rest[KVT_BLOCK_BYTES - 20];
};

/* And of struct kvt_pool. */
struct kvt_pool {
	spinlock_t lock;
	struct kvt_block *blocks;
	u32 *buckets;
	u32 hash_bits;
	u64 seed;
};

#endif /* KVTIER_INDEX_SHIM_H */
