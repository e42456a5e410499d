/* SPDX-License-Identifier: GPL-2.0 */
/*
 * index-shim.h: what kmod/index.c needs of the kernel, in userspace.
 *
 * tools/index-bench compiles kmod/index.c, unchanged, against this header
 * instead of <linux/...> and kmod/kvt.h: kshim.h's stand-ins, a no-op
 * cond_resched(), prefetch() and __ffs() as the compiler's builtins, the
 * kernel's GOLDEN_RATIO_64 and DIV_ROUND_UP(), and stand-ins for the parts
 * of struct kvt_pool and struct kvt_block the key hash reads and writes
 * (same names, same types). kmod/index.h lists them; nothing else may be
 * used.
 */
#ifndef KVTIER_INDEX_SHIM_H
#define KVTIER_INDEX_SHIM_H

#include <assert.h>

#include "kshim.h"

#define KVT_NIL			U32_MAX
#define cond_resched()		do { } while (0)
#define prefetch(x)		__builtin_prefetch(x)
#define __ffs(x)		((unsigned long)__builtin_ctzl(x))

/* include/linux/hash.h, include/linux/math.h */
#define GOLDEN_RATIO_64		0x61C8864680B583EBull
#define DIV_ROUND_UP(n, d)	(((n) + (d) - 1) / (d))

#include "../kmod/index.h"

/*
 * The key hash's fields of kmod/kvt.h's struct kvt_block, padded to the
 * module's record size (KVT_BLOCK_BYTES; kmod/block.c checks it at build
 * time), so that lookups walk memory laid out as the module's.
 */
#define KVT_BLOCK_BYTES		64
struct kvt_block {
	u64 key[2];
	char rest[KVT_BLOCK_BYTES - 16];
};

/* And of struct kvt_pool. */
struct kvt_pool {
	spinlock_t lock;
	struct kvt_block *blocks;
	struct kvt_bucket *buckets;
	u32 nbuckets;
	u64 seed;
};

#endif /* KVTIER_INDEX_SHIM_H */
