// SPDX-License-Identifier: GPL-2.0
/*
 * Replacement policy of the DRAM tier: which evictable block goes first,
 * and whether a dirty one leaving DRAM is worth an NVMe write.
 *
 * The policy sees the READY blocks in DRAM that are not pinned, loading or
 * losing their DRAM copy, through calls made under pool->lock: insert (a
 * block became evictable), touch (it was used), remove (it stopped being
 * evictable), victim (which to evict) and demote (write it or drop it).
 * Blocks being written to NVMe stay in place; victim skips them. The list
 * pool->lru is linked by block address through kvt_block.prev/next.
 *
 * Two policies, picked at load by the "policy" parameter:
 *
 * lru	One list, most recently used at the head; the tail goes first.
 *
 * seg	The default. The same list in two segments: main (head side:
 *	blocks used again since they came in) and probation (tail side:
 *	blocks come in once, inserted at its head). The tail, so
 *	probation, goes first; a touched block goes to the head of main;
 *	main is held to its share of the list by moving its coldest block
 *	to probation. The share adapts: a block that comes back into DRAM
 *	after leaving it (a promotion from NVMe) says which segment was too
 *	small, from the KVT_PB_OUT_* bit it left with: whether it had been
 *	used again since it came in. The NVMe copies are the ghost lists,
 *	at no memory cost. Every call is O(1); the state is one byte per
 *	block (kvt_block.pol, in what was padding) and struct kvt_policy.
 *	tools/policy-sim finds it at or above lru at 52 of 64 traces and
 *	capacities, at most 4.4% below and up to 16% above
 *	(Documentation/design.rst, "Placement policy").
 *
 * A pool also keeps its blocks that have an NVMe copy on a list of their
 * own, pool->clean, and evicts those first: their eviction writes nothing
 * and loses nothing (pol->clean_list, from the parameter
 * policy_clean_first, Y by default; kvt_policy_clean() and
 * kvt_policy_dirty() move blocks between the lists). A block read ahead
 * for a hint that the prefetch engine cannot hold ages on pool->lru
 * instead until used (kvt_policy_ahead()).
 *
 * The prefetch engine asks it too, of a hint that carries a probability
 * (kvt_policy_hint()): read the block or leave it, hold it or not.
 *
 * This file also builds in userspace (tools/policy-sim), on
 * tools/policy-shim.h instead of the kernel headers: see policy.h for
 * what it may use.
 */
#ifdef __KERNEL__
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/string.h>
#include "kvt.h"
#else
#include "policy-shim.h"
#endif

#define KVT_VICTIM_SCAN		256	/* busy blocks skipped at most */
#define KVT_BALANCE_MAX		4	/* main blocks moved per call at most */

int kvt_policy_param = KVT_POLICY_SEG;
bool kvt_policy_clean_param = true;

#ifdef __KERNEL__
static const char * const kvt_policy_names[KVT_POLICY_NR] = {
	[KVT_POLICY_LRU] = "lru",
	[KVT_POLICY_SEG] = "seg",
};

static int kvt_policy_param_set(const char *val, const struct kernel_param *kp)
{
	int i = sysfs_match_string(kvt_policy_names, val);

	if (i < 0)
		return -EINVAL;
	WRITE_ONCE(kvt_policy_param, i);
	return 0;
}

static int kvt_policy_param_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n",
			  kvt_policy_names[READ_ONCE(kvt_policy_param)]);
}

static const struct kernel_param_ops kvt_policy_param_ops = {
	.set = kvt_policy_param_set,
	.get = kvt_policy_param_get,
};

module_param_cb(policy, &kvt_policy_param_ops, NULL, 0644);
MODULE_PARM_DESC(policy,
		 "Replacement policy of the DRAM tier: seg (two segments, adaptive), or lru; a pool takes the one in force when it first stores a block. Default: seg");

module_param_named(policy_clean_first, kvt_policy_clean_param, bool, 0644);
MODULE_PARM_DESC(policy_clean_first,
		 "Run the NVMe log as a CLOCK: evict DRAM blocks that have an NVMe copy first, and keep blocks read back since written when the log reclaims their region; a pool takes the value in force when it first stores a block. Default: Y");
#endif

static struct kvt_policy *kvt_pol(struct kvt_pool *pool)
{
	struct kvt_policy *pol = &pool->pol;

	/* The parameter may change: each pool keeps what it found first. */
	if (!pol->ready) {
		pol->kind = READ_ONCE(kvt_policy_param);
		pol->clean_list = READ_ONCE(kvt_policy_clean_param);
		pol->prob_share = KVT_POL_PROB_INIT;
		pol->last_clean = KVT_NIL;
		pol->ready = 1;
	}
	return pol;
}

/*
 * Whether a block goes on the clean list: it has an NVMe copy, and it is
 * not read ahead and unused (kvt_policy_ahead()).
 */
static bool kvt_wants_clean(const struct kvt_policy *pol,
			    const struct kvt_block *blk)
{
	return pol->clean_list && blk->nloc != KVT_NIL &&
	       !(blk->pol & KVT_PB_AHEAD);
}

/* The list a block is on, or would be on: pool->clean or pool->lru. */
static struct kvt_list *kvt_list_of(struct kvt_pool *pool,
				    const struct kvt_block *blk)
{
	return blk->pol & KVT_PB_CLEAN ? &pool->clean : &pool->lru;
}

static bool kvt_lru_linked(struct kvt_pool *pool, u32 addr)
{
	const struct kvt_block *blk = &pool->blocks[addr];

	return kvt_list_of(pool, blk)->head == addr || blk->prev != KVT_NIL;
}

/* Link @addr into @list after @after, or at its head if @after is KVT_NIL. */
static void kvt_link_after(struct kvt_pool *pool, struct kvt_list *list,
			   u32 after, u32 addr)
{
	struct kvt_block *blk = &pool->blocks[addr];
	u32 next = after == KVT_NIL ? list->head : pool->blocks[after].next;

	blk->prev = after;
	blk->next = next;
	if (after == KVT_NIL)
		list->head = addr;
	else
		pool->blocks[after].next = addr;
	if (next == KVT_NIL)
		list->tail = addr;
	else
		pool->blocks[next].prev = addr;
	list->nr++;
}

static void kvt_unlink(struct kvt_pool *pool, struct kvt_policy *pol,
		       u32 addr)
{
	struct kvt_block *blk = &pool->blocks[addr];
	struct kvt_list *list = kvt_list_of(pool, blk);

	if (blk->pol & KVT_PB_MAIN) {
		if (pol->last_main == addr)
			pol->last_main = blk->prev;
		pol->nr_main--;
		blk->pol &= ~KVT_PB_MAIN;
	}
	if (blk->prev != KVT_NIL)
		pool->blocks[blk->prev].next = blk->next;
	else
		list->head = blk->next;
	if (blk->next != KVT_NIL)
		pool->blocks[blk->next].prev = blk->prev;
	else
		list->tail = blk->prev;
	blk->prev = KVT_NIL;
	blk->next = KVT_NIL;
	blk->pol &= ~KVT_PB_CLEAN;
	list->nr--;
	if (pol->last_clean == addr)
		pol->last_clean = KVT_NIL;
}

/* Hold main to its share: its coldest blocks become probation's hottest. */
static void kvt_balance(struct kvt_pool *pool, struct kvt_policy *pol)
{
	u32 max_main = pool->lru.nr -
		(u32)((u64)pool->lru.nr * pol->prob_share / KVT_POL_SCALE);
	unsigned int moved = 0;

	while (pol->nr_main > max_main && moved++ < KVT_BALANCE_MAX) {
		struct kvt_block *blk = &pool->blocks[pol->last_main];

		blk->pol &= ~KVT_PB_MAIN;
		pol->last_main = blk->prev;
		pol->nr_main--;
	}
}

static void kvt_link_main(struct kvt_pool *pool, struct kvt_policy *pol,
			  u32 addr)
{
	kvt_link_after(pool, &pool->lru, KVT_NIL, addr);
	pool->blocks[addr].pol |= KVT_PB_MAIN;
	if (!pol->nr_main++)
		pol->last_main = addr;
	kvt_balance(pool, pol);
}

static void kvt_link_probation(struct kvt_pool *pool, struct kvt_policy *pol,
			       u32 addr)
{
	kvt_link_after(pool, &pool->lru, pol->nr_main ? pol->last_main : KVT_NIL,
		       addr);
}

/* Onto pool->clean, after @after (KVT_NIL: at its head, just used). */
static void kvt_link_clean(struct kvt_pool *pool, u32 after, u32 addr)
{
	kvt_link_after(pool, &pool->clean, after, addr);
	pool->blocks[addr].pol |= KVT_PB_CLEAN;
}

/* Onto pool->lru, where a block of its history goes (no NVMe copy). */
static void kvt_link_dirty(struct kvt_pool *pool, struct kvt_policy *pol,
			   u32 addr)
{
	if (pol->kind == KVT_POLICY_LRU)
		kvt_link_after(pool, &pool->lru, KVT_NIL, addr);
	else if (pool->blocks[addr].pol & KVT_PB_REF)
		kvt_link_main(pool, pol, addr);
	else
		kvt_link_probation(pool, pol, addr);
}

/* A block is back in DRAM after leaving it: grow the segment it left. */
static void kvt_adapt(struct kvt_policy *pol, struct kvt_block *blk)
{
	if (blk->pol & KVT_PB_OUT_PROB) {
		pol->back_prob++;
		pol->prob_share = min_t(u32, pol->prob_share + KVT_POL_STEP,
					KVT_POL_PROB_MAX);
	} else if (blk->pol & KVT_PB_OUT_MAIN) {
		pol->back_main++;
		pol->prob_share = max_t(u32, pol->prob_share - KVT_POL_STEP,
					KVT_POL_PROB_MIN);
	}
	blk->pol &= ~KVT_PB_OUT;
}

/**
 * kvt_policy_insert() - a block became evictable
 * @pool: the pool, its lock held
 * @addr: a READY block without pins, not in the list
 *
 * A new block goes to the head of probation; one used since it came in
 * (a promoted or unpinned one) to the head of main. With a clean list, a
 * block that has an NVMe copy goes to its head instead.
 */
void kvt_policy_insert(struct kvt_pool *pool, u32 addr)
{
	struct kvt_policy *pol = kvt_pol(pool);
	struct kvt_block *blk = &pool->blocks[addr];

	lockdep_assert_held(&pool->lock);
	if (WARN_ON_ONCE(kvt_lru_linked(pool, addr)))
		return;
	blk->pol &= ~(KVT_PB_MAIN | KVT_PB_CLEAN);
	if (pol->kind != KVT_POLICY_LRU && (blk->pol & KVT_PB_OUT)) {
		kvt_adapt(pol, blk);
		blk->pol |= KVT_PB_REF;
	}
	if (kvt_wants_clean(pol, blk))
		kvt_link_clean(pool, KVT_NIL, addr);
	else
		kvt_link_dirty(pool, pol, addr);
}

/**
 * kvt_policy_remove() - a block stopped being evictable
 * @pool: the pool, its lock held
 * @addr: the block; a no-op if it is not in the list (pinned)
 *
 * A block losing its DRAM copy (KVT_BF_EVICTING) remembers which
 * segment it belonged to, for kvt_policy_insert() to learn from if it
 * comes back.
 */
void kvt_policy_remove(struct kvt_pool *pool, u32 addr)
{
	struct kvt_policy *pol = kvt_pol(pool);
	struct kvt_block *blk = &pool->blocks[addr];

	lockdep_assert_held(&pool->lock);
	if (!kvt_lru_linked(pool, addr))
		return;
	blk->pol &= ~KVT_PB_AHEAD;
	/*
	 * Victims come from probation's tail, and main hands its coldest
	 * blocks to probation before they get there: the segment a block
	 * leaves from says nothing. Whether it was used again since it came
	 * in, main's entry ticket, does: that is the ghost list it joins.
	 */
	if (pol->kind != KVT_POLICY_LRU && (blk->flags & KVT_BF_EVICTING))
		blk->pol = (blk->pol & ~KVT_PB_OUT) |
			   (blk->pol & (KVT_PB_MAIN | KVT_PB_REF) ?
			    KVT_PB_OUT_MAIN : KVT_PB_OUT_PROB);
	kvt_unlink(pool, pol, addr);
}

/**
 * kvt_policy_touch() - a block was used
 * @pool: the pool, its lock held
 * @addr: a READY block; pinned blocks are not in the list and stay out
 */
void kvt_policy_touch(struct kvt_pool *pool, u32 addr)
{
	struct kvt_policy *pol = kvt_pol(pool);
	struct kvt_block *blk = &pool->blocks[addr];
	u8 ahead = blk->pol & KVT_PB_AHEAD;

	lockdep_assert_held(&pool->lock);
	blk->pol = (blk->pol & ~KVT_PB_AHEAD) | KVT_PB_REF;
	if (!kvt_lru_linked(pool, addr))
		return;
	/* Used at last: a block read ahead with a copy is clean again. */
	if (ahead && kvt_wants_clean(pol, blk)) {
		kvt_unlink(pool, pol, addr);
		kvt_link_clean(pool, KVT_NIL, addr);
		return;
	}
	if (blk->pol & KVT_PB_CLEAN) {
		if (pool->clean.head != addr) {
			kvt_unlink(pool, pol, addr);
			kvt_link_clean(pool, KVT_NIL, addr);
		}
		return;
	}
	if (pool->lru.head == addr &&
	    (pol->kind == KVT_POLICY_LRU || (blk->pol & KVT_PB_MAIN)))
		return;
	kvt_unlink(pool, pol, addr);
	kvt_link_dirty(pool, pol, addr);
}

/**
 * kvt_policy_clean() - a block gained an NVMe copy
 * @pool: the pool, its lock held
 * @addr: the block; a no-op if it is not listed, already on the clean
 *	list, or the pool keeps none
 *
 * It was written as a victim, or cleaned ahead from the cold end: to the
 * clean list's cold end, the first to go.
 */
void kvt_policy_clean(struct kvt_pool *pool, u32 addr)
{
	struct kvt_policy *pol = kvt_pol(pool);
	u32 after;

	lockdep_assert_held(&pool->lock);
	/* A fresh copy: reclaim keeps it only if it is read back again. */
	pool->blocks[addr].pol &= ~KVT_PB_READ;
	if (!pol->clean_list || !kvt_lru_linked(pool, addr) ||
	    (pool->blocks[addr].pol & (KVT_PB_CLEAN | KVT_PB_AHEAD)))
		return;
	kvt_unlink(pool, pol, addr);
	/*
	 * The writer takes its batches from the dirty list's cold end,
	 * coldest first, and they end in that order: each goes just before
	 * the block cleaned last while that one is still listed, so that
	 * the batch keeps its order and its coldest goes first.
	 */
	after = pool->clean.tail;
	if (pol->last_clean != KVT_NIL)
		after = pool->blocks[pol->last_clean].prev;
	kvt_link_clean(pool, after, addr);
	pol->last_clean = addr;
}

/**
 * kvt_policy_dirty() - a block lost its NVMe copy
 * @pool: the pool, its lock held
 * @addr: the block; a no-op unless it is on the clean list
 *
 * Reclaim, rescue or a detach took the copy: evicting the block now
 * needs a write, so it goes where kvt_policy_insert() puts a block of
 * its history without one.
 */
void kvt_policy_dirty(struct kvt_pool *pool, u32 addr)
{
	struct kvt_policy *pol = kvt_pol(pool);

	lockdep_assert_held(&pool->lock);
	if (!(pool->blocks[addr].pol & KVT_PB_CLEAN))
		return;
	kvt_unlink(pool, pol, addr);
	kvt_link_dirty(pool, pol, addr);
}

/**
 * kvt_policy_read_back() - a block was read from its NVMe copy
 * @pool: the pool, its lock held
 * @addr: the block, loaded into DRAM or read straight to a caller
 *
 * The copy has been used since it was written: a CLOCK's reference bit,
 * which kvt_policy_relocate() tests and kvt_policy_clean() clears.
 */
void kvt_policy_read_back(struct kvt_pool *pool, u32 addr)
{
	lockdep_assert_held(&pool->lock);
	pool->blocks[addr].pol |= KVT_PB_READ;
}

/**
 * kvt_policy_relocate() - keep a block whose only copy is being reclaimed
 * @pool: the pool, its lock held
 * @addr: a block only on NVMe, its copy in the region the log reclaims
 *
 * With a clean list, the log runs as a CLOCK (Documentation/design.rst,
 * "The log run as a CLOCK"): a copy read back since it was written gets
 * a second chance, written again at the head of the log, and loses its
 * bit; any other goes.
 *
 * Return: true to relocate the block, false to let it go.
 */
bool kvt_policy_relocate(struct kvt_pool *pool, u32 addr)
{
	struct kvt_block *blk = &pool->blocks[addr];

	lockdep_assert_held(&pool->lock);
	if (!kvt_pol(pool)->clean_list || !(blk->pol & KVT_PB_READ))
		return false;
	blk->pol &= ~KVT_PB_READ;
	return true;
}

/**
 * kvt_policy_init() - an empty list for a new pool
 * @pool: the pool
 */
void kvt_policy_init(struct kvt_pool *pool)
{
	pool->lru.head = KVT_NIL;
	pool->lru.tail = KVT_NIL;
	pool->lru.nr = 0;
	pool->clean = pool->lru;
}

/**
 * kvt_policy_next() - walk the evictable blocks from the cold end
 * @pool: the pool, its lock held
 * @addr: KVT_NIL to start, else the block the walk is at (still listed)
 *
 * For the writer (which cleans from where eviction will take) and the
 * shrinker. The walk may skip and come back; it stays valid while the
 * lock is held and the list is not changed. It walks pool->lru, which
 * with a clean list holds only blocks without an NVMe copy: those are
 * what the writer wants, and kvt_policy_next_clean() walks the others.
 *
 * Return: the coldest block to start, else the next hotter one; KVT_NIL
 * at the end.
 */
u32 kvt_policy_next(struct kvt_pool *pool, u32 addr)
{
	lockdep_assert_held(&pool->lock);
	if (addr == KVT_NIL)
		return pool->lru.tail;
	return pool->blocks[addr].prev;
}

/**
 * kvt_policy_next_clean() - walk the clean list from the cold end
 * @pool: the pool, its lock held
 * @addr: KVT_NIL to start, else the block the walk is at (still listed)
 *
 * As kvt_policy_next(), over the blocks that have an NVMe copy.
 *
 * Return: the coldest clean block to start, else the next hotter one;
 * KVT_NIL at the end.
 */
u32 kvt_policy_next_clean(struct kvt_pool *pool, u32 addr)
{
	lockdep_assert_held(&pool->lock);
	if (addr == KVT_NIL)
		return pool->clean.tail;
	return pool->blocks[addr].prev;
}

/* The coldest block of @list not in use, within KVT_VICTIM_SCAN. */
static u32 kvt_victim_of(struct kvt_pool *pool, const struct kvt_list *list)
{
	u32 addr = list->tail;
	unsigned int scanned = 0;

	while (addr != KVT_NIL && scanned++ < KVT_VICTIM_SCAN) {
		const struct kvt_block *blk = &pool->blocks[addr];

		if (!blk->users && !blk->flags)
			return addr;
		addr = pool->blocks[addr].prev;
	}
	return KVT_NIL;
}

/**
 * kvt_policy_victim() - the block to evict next
 * @pool: the pool, its lock held
 *
 * Skips blocks in use: copied out by a GET, or being written to NVMe.
 * A clean block goes before any other.
 *
 * Return: a block address, or KVT_NIL if nothing can be evicted.
 */
u32 kvt_policy_victim(struct kvt_pool *pool)
{
	u32 addr = KVT_NIL;

	lockdep_assert_held(&pool->lock);
	if (pool->clean.nr)
		addr = kvt_victim_of(pool, &pool->clean);
	return addr != KVT_NIL ? addr : kvt_victim_of(pool, &pool->lru);
}

/**
 * kvt_policy_ahead() - a block is read ahead for a hint, or no longer
 * @pool: the pool, its lock held
 * @addr: a READY block, in DRAM or on its way there
 * @on: it is (the prefetch engine could not hold it), or its hint is over
 *
 * A prefetched block the engine cannot hold (the holds' bound) ages like
 * a block without a copy until it is used: at the hot end of pool->lru,
 * not on the clean list, whose blocks go first. There, while the rest of
 * DRAM was dirty, each block such a group staged evicted the one staged
 * before it. Using the block (kvt_policy_touch()) or its leaving the list
 * clears the bit; a hint over unused puts it at the clean list's cold end.
 */
void kvt_policy_ahead(struct kvt_pool *pool, u32 addr, bool on)
{
	struct kvt_policy *pol = kvt_pol(pool);
	struct kvt_block *blk = &pool->blocks[addr];
	bool linked = kvt_lru_linked(pool, addr);

	lockdep_assert_held(&pool->lock);
	if (!on == !(blk->pol & KVT_PB_AHEAD))
		return;
	if (linked)
		kvt_unlink(pool, pol, addr);
	if (on)
		blk->pol |= KVT_PB_AHEAD;
	else
		blk->pol &= ~KVT_PB_AHEAD;
	if (!linked)
		return;
	if (on || !kvt_wants_clean(pol, blk))
		kvt_link_dirty(pool, pol, addr);
	else
		kvt_link_clean(pool, pool->clean.tail, addr);
}

/**
 * kvt_policy_is_ahead() - whether kvt_policy_ahead() still marks a block
 * @pool: the pool, its lock held
 * @addr: a block
 *
 * Return: true until the block is used, leaves the list or is cleared.
 */
bool kvt_policy_is_ahead(struct kvt_pool *pool, u32 addr)
{
	lockdep_assert_held(&pool->lock);
	return pool->blocks[addr].pol & KVT_PB_AHEAD;
}

/**
 * kvt_policy_demote() - is a dirty victim worth an NVMe write
 * @pool: the pool, its lock held
 * @addr: a block chosen by kvt_policy_victim() without an NVMe copy
 *
 * Return: true to write it to NVMe before its DRAM copy goes, false to
 * drop it.
 */
bool kvt_policy_demote(struct kvt_pool *pool, u32 addr)
{
	lockdep_assert_held(&pool->lock);
	return true;
}

/**
 * kvt_policy_hint() - what the prefetch engine does with a hinted block
 * @prob: the chance the runtime uses the block, in 1/KVT_PROB_ONE
 *	(KVT_PROB_ONE: a sure hint)
 * @in_time: a read started now is expected to end before the group's
 *	deadline (true when the group has none)
 * @busy: the engine's reads in flight with this one, in 1/KVT_POL_SCALE of
 *	its queue depth
 * @held: the pool's prefetch holds, in 1/KVT_POL_SCALE of their bound
 *
 * From one half up a hint is as good as sure: read, late or not (a late
 * read is a shorter wait than the demand read that follows a skip), and
 * held. Below, a block is read only if it can arrive in time (a late
 * unlikely block is bandwidth taken from the next group's), and only
 * above a floor that rises with the queue: KVT_PROB_MIN when this read is
 * the only one, a quarter when it fills the queue. The engine asks
 * likeliest first, so under a tight budget the unlikely tail is what goes
 * unread. It is held while holds are plentiful: the bar rises from
 * KVT_PROB_MIN with no hold taken to one half at the bound, so that
 * protection runs out for the unlikely before the likely. Pure: no pool,
 * no lock; tools/policy-sim replays it (--experts).
 *
 * Return: KVT_HINT_READ and KVT_HINT_HOLD bits.
 */
u32 kvt_policy_hint(u32 prob, bool in_time, u32 busy, u32 held)
{
	u32 floor, bar, plan = 0;

	if (prob >= KVT_PROB_ONE / 2)
		return KVT_HINT_READ | KVT_HINT_HOLD;
	busy = min_t(u32, busy, KVT_POL_SCALE);
	held = min_t(u32, held, KVT_POL_SCALE);
	floor = KVT_PROB_MIN + (KVT_PROB_ONE / 4 - KVT_PROB_MIN) * busy /
			       KVT_POL_SCALE;
	bar = max_t(u32, KVT_PROB_MIN, KVT_PROB_ONE / 2 * held / KVT_POL_SCALE);
	if (in_time && prob >= floor)
		plan |= KVT_HINT_READ;
	if (prob >= bar)
		plan |= KVT_HINT_HOLD;
	return plan;
}

/**
 * kvt_policy_check() - check the list against the policy's counts
 * @pool: the pool, its lock held
 *
 * For tests: walks both lists.
 *
 * Return: 0, or -EINVAL if a link, a count or a segment is wrong.
 */
int kvt_policy_check(struct kvt_pool *pool)
{
	struct kvt_policy *pol = kvt_pol(pool);
	u32 addr, prev = KVT_NIL, nr = 0, nr_main = 0;
	bool in_main = true;

	lockdep_assert_held(&pool->lock);
	for (addr = pool->lru.head; addr != KVT_NIL;
	     prev = addr, addr = pool->blocks[addr].next) {
		const struct kvt_block *blk = &pool->blocks[addr];

		if (blk->prev != prev || nr++ > pool->lru.nr ||
		    (blk->pol & KVT_PB_CLEAN))
			return -EINVAL;
		if (blk->pol & KVT_PB_MAIN) {
			if (!in_main)
				return -EINVAL;
			if (++nr_main == pol->nr_main &&
			    pol->last_main != addr)
				return -EINVAL;
		} else {
			in_main = false;
		}
	}
	if (prev != pool->lru.tail || nr != pool->lru.nr ||
	    nr_main != pol->nr_main)
		return -EINVAL;
	for (prev = KVT_NIL, nr = 0, addr = pool->clean.head; addr != KVT_NIL;
	     prev = addr, addr = pool->blocks[addr].next) {
		const struct kvt_block *blk = &pool->blocks[addr];

		if (blk->prev != prev || nr++ > pool->clean.nr ||
		    (blk->pol & (KVT_PB_CLEAN | KVT_PB_MAIN | KVT_PB_AHEAD)) !=
		    KVT_PB_CLEAN || !pol->clean_list)
			return -EINVAL;
	}
	if (prev != pool->clean.tail || nr != pool->clean.nr)
		return -EINVAL;
	if (pol->last_clean != KVT_NIL &&
	    !(pool->blocks[pol->last_clean].pol & KVT_PB_CLEAN))
		return -EINVAL;
	return 0;
}
