/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The replacement policy: its per-pool state and its calls.
 *
 * policy.c builds twice: into the module, and into tools/policy-sim, which
 * replays traces through it. It may use only what tools/policy-shim.h
 * provides in userspace: u8..u64, BIT(), U32_MAX, min()/max(),
 * WARN_ON_ONCE(), lockdep_assert_held(), READ_ONCE(), and these fields:
 *
 *  struct kvt_block	prev, next (list links by address), users, flags
 *			(KVT_BF_*), pol (KVT_PB_*), nloc (KVT_NIL: no NVMe
 *			copy)
 *  struct kvt_pool	blocks[], lru and clean (struct kvt_list), pol (below),
 *			lock
 *
 * Everything else about blocks and pools stays out of the policy.
 */
#ifndef _KVT_POLICY_H
#define _KVT_POLICY_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/bits.h>
#endif

struct kvt_pool;

/* The policies; the module parameter "policy" picks one at load. */
enum kvt_policy_kind {
	KVT_POLICY_LRU = 0,	/* one list, least recently used first */
	KVT_POLICY_SEG,		/* two segments, adaptive */
	KVT_POLICY_NR,
};

/* kvt_block.pol: the policy's bits of a block, kept while it is on NVMe. */
#define KVT_PB_MAIN		BIT(0)	/* in the main segment */
#define KVT_PB_REF		BIT(1)	/* used again since it was written */
#define KVT_PB_OUT_PROB		BIT(2)	/* left DRAM seen once */
#define KVT_PB_OUT_MAIN		BIT(3)	/* left DRAM used again (main's) */
#define KVT_PB_OUT		(KVT_PB_OUT_PROB | KVT_PB_OUT_MAIN)
#define KVT_PB_CLEAN		BIT(4)	/* on pool->clean */
#define KVT_PB_READ		BIT(5)	/* read from NVMe since written there */
#define KVT_PB_AHEAD		BIT(6)	/* read ahead for a hint, unused since */

/* Probation share of the list, in 1/KVT_POL_SCALE: start, and bounds. */
#define KVT_POL_SCALE		1024U
#define KVT_POL_PROB_INIT	512U
#define KVT_POL_PROB_MIN	64U
#define KVT_POL_PROB_MAX	960U
#define KVT_POL_STEP		8U

/**
 * struct kvt_policy - per-pool state of the policy (zero is valid)
 * @kind: enum kvt_policy_kind; taken from the parameter at first use.
 * @ready: @kind and @prob_share are set.
 * @clean_list: blocks with an NVMe copy are kept on pool->clean, and
 *	evicted first, and a block read back from NVMe since its copy was
 *	written is relocated when the log reclaims that copy's region
 *	(kvt_policy_relocate()); taken from the parameter
 *	"policy_clean_first" at first use (Y by default; tools/policy-sim's
 *	kvtier-seg clears it).
 * @last_clean: the block kvt_policy_clean() linked last, while it is on
 *	pool->clean; else KVT_NIL.
 * @nr_main: blocks of pool->lru in the main segment (the head side).
 * @last_main: the coldest main block; meaningful while @nr_main.
 * @prob_share: probation's share of the list, in 1/KVT_POL_SCALE; moved
 *	by blocks that come back to DRAM after leaving it.
 * @back_prob: blocks come back that had left DRAM seen once.
 * @back_main: blocks come back that had left DRAM used again.
 *
 * pool->lru holds the evictable DRAM blocks, hottest first: the main
 * segment (blocks used again since they came in), then probation (blocks
 * come in once). kvt_policy_victim() takes the tail, so probation goes
 * first, and the NVMe writer cleans from the same tail (kvt_policy_next()).
 * With @clean_list, the blocks that have an NVMe copy are on pool->clean
 * instead, hottest first, and go before any of pool->lru: their eviction
 * writes nothing and loses nothing. Only policy.c reads or links the
 * lists.
 */
struct kvt_policy {
	u8 kind;
	u8 ready;
	u16 prob_share;
	u8 clean_list;
	u32 last_clean;
	u32 nr_main;
	u32 last_main;
	u32 back_prob;
	u32 back_main;
};

/* kvt_policy_hint(): probabilities, and what to do with a hinted block. */
#define KVT_PROB_ONE		65536U	/* KVTIER_PROB_ONE */
#define KVT_PROB_MIN		(KVT_PROB_ONE / 32)
#define KVT_HINT_READ		BIT(0)	/* read it if it is not in DRAM */
#define KVT_HINT_HOLD		BIT(1)	/* protect it until it is used */

void kvt_policy_init(struct kvt_pool *pool);
u32 kvt_policy_next(struct kvt_pool *pool, u32 addr);
u32 kvt_policy_next_clean(struct kvt_pool *pool, u32 addr);
void kvt_policy_insert(struct kvt_pool *pool, u32 addr);
void kvt_policy_touch(struct kvt_pool *pool, u32 addr);
void kvt_policy_remove(struct kvt_pool *pool, u32 addr);
void kvt_policy_clean(struct kvt_pool *pool, u32 addr);
void kvt_policy_dirty(struct kvt_pool *pool, u32 addr);
void kvt_policy_read_back(struct kvt_pool *pool, u32 addr);
bool kvt_policy_relocate(struct kvt_pool *pool, u32 addr);
u32 kvt_policy_victim(struct kvt_pool *pool);
void kvt_policy_ahead(struct kvt_pool *pool, u32 addr, bool on);
bool kvt_policy_is_ahead(struct kvt_pool *pool, u32 addr);
bool kvt_policy_demote(struct kvt_pool *pool, u32 addr);
u32 kvt_policy_hint(u32 prob, bool in_time, u32 busy, u32 held);
int kvt_policy_check(struct kvt_pool *pool);
extern int kvt_policy_param;
extern bool kvt_policy_clean_param;

#endif /* _KVT_POLICY_H */
