// SPDX-License-Identifier: GPL-2.0
/*
 * Residency: the one place that decides and changes which tier holds a
 * block, between the commands above and the tiers below
 * (Documentation/design.rst, "Layers").
 *
 * It makes room in DRAM (evicting the coldest blocks: a clean one loses
 * its DRAM copy, a dirty one is written to NVMe first or dropped), loads a
 * block from NVMe into DRAM, takes new blocks into DRAM, unlinks blocks and
 * frees their memory, and tells which tier holds a block. It is the only
 * caller of the tier operations (struct kvt_tier_ops). The tiers end their
 * I/O through the hooks it gives every pool (struct kvt_res_hooks), never
 * by calling it by name; and it tells the prefetch engine that I/O ended
 * through the function main.c registers (kvt_res_set_notify()).
 *
 * It tells the pool's event log (events.c) of each change a reader of it
 * sees: a key stored, its tier changed, the key removed. A block's tier
 * there is the one kvt_res_tier() gives; blk->evtier keeps what the log
 * was last told, so a change is told once, by whoever made it.
 *
 * Locking is the index's: pool->lock for block state, pool->map_sem to
 * order freeing a block's pages against faults mapping them.
 */
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/wait_bit.h>
#include "kvt.h"
#include "trace.h"

/* Told when a tier's I/O on a block ended (the prefetch engine). */
static void (*kvt_res_notify)(void);

/**
 * kvt_res_set_notify() - the function told when a tier's I/O ends
 * @fn: called without locks after each read or copy ends, or NULL
 *
 * Set at module load, before any I/O, and cleared at unload once no I/O
 * is left that could end.
 */
void kvt_res_set_notify(void (*fn)(void))
{
	kvt_res_notify = fn;
}

/* ---- what the event log is told ---------------------------------------- */

/*
 * A READY block's key is in the pool now: tell its tier, and the tier of
 * the block it replaces (@from, else 0).
 */
static void kvt_res_stored(struct kvt_pool *pool, u32 addr, u8 from, u16 why)
{
	struct kvt_block *blk = &pool->blocks[addr];
	u32 slot;

	lockdep_assert_held(&pool->lock);
	blk->evtier = kvt_res_tier(pool, addr, &slot);
	kvt_ev_block(pool, addr, KVTIER_EVENT_STORED, blk->evtier, from, why);
}

/*
 * The tier below DRAM that holds a pool's copies: the NVMe log, or the
 * file a weight pool was made from.
 */
static const struct kvt_tier_ops *kvt_res_below(struct kvt_pool *pool)
{
	return pool->file ? &kvt_file_tier : &kvt_nvme_tier;
}

/* A block's tier may have changed: tell the log if it did. */
static void kvt_res_moved(struct kvt_pool *pool, u32 addr, u16 why)
{
	struct kvt_block *blk = &pool->blocks[addr];
	u32 slot, tier;

	lockdep_assert_held(&pool->lock);
	if (blk->state != KVT_BLK_READY || blk->evtier == KVTIER_TIER_NONE)
		return;
	tier = kvt_res_tier(pool, addr, &slot);
	if (tier == blk->evtier)
		return;
	kvt_ev_block(pool, addr, KVTIER_EVENT_MOVED, tier, blk->evtier, why);
	blk->evtier = tier;
}

/* ---- the end of a block's life ------------------------------------------ */

/* Remove a block's pages from every mapping of its pool. */
static void kvt_res_zap(struct kvt_pool *pool, u32 addr)
{
	unmap_mapping_range(pool->inode->i_mapping,
			    (loff_t)addr * pool->block_size, pool->block_size,
			    1);
}

/* Wait out faults that may be mapping a block's pages, then zap them. */
static void kvt_res_unmap(struct kvt_pool *pool, u32 addr)
{
	down_write(&pool->map_sem);
	up_write(&pool->map_sem);
	kvt_res_zap(pool, addr);
}

/**
 * kvt_res_unlink() - a READY block leaves the pool; it becomes DYING
 * @pool: the pool, its lock held
 * @addr: an unpinned READY block
 * @why: KVTIER_EVR_*, for the event log; KVTIER_EVR_REPLACE tells it
 *	 nothing (the new block's STORED does)
 *
 * It leaves the replacement list and the HBM tier. The caller frees it
 * with kvt_res_release() once it has no users: now, if blocks[addr].users
 * is 0, else the last user does (kvt_res_put_user()).
 */
void kvt_res_unlink(struct kvt_pool *pool, u32 addr, u16 why)
{
	struct kvt_block *blk = &pool->blocks[addr];

	lockdep_assert_held(&pool->lock);
	if (blk->evtier != KVTIER_TIER_NONE && why != KVTIER_EVR_REPLACE)
		kvt_ev_block(pool, addr, KVTIER_EVENT_REMOVED, blk->evtier, 0,
			     why);
	blk->evtier = KVTIER_TIER_NONE;
	kvt_policy_remove(pool, addr);
	kvt_hbm_tier.forget(pool, addr);
	kvt_block_unlink(pool, addr);
}

/**
 * kvt_res_drop() - a READY block is dropped: it leaves the pool for good
 * @pool: the pool, its lock held
 * @addr: an unpinned READY block
 *
 * As kvt_res_unlink(), and a copy on NVMe is marked dropped there, so it
 * does not come back at the next attach once the pool is synced.
 */
void kvt_res_drop(struct kvt_pool *pool, u32 addr)
{
	lockdep_assert_held(&pool->lock);
	if (pool->blocks[addr].nloc != KVT_NIL)
		kvt_res_below(pool)->drop(pool, addr);
	kvt_res_unlink(pool, addr, KVTIER_EVR_DROP);
}

/*
 * A block's DRAM pages go: to the next block when they make room for one
 * (@room, see the DRAM tier's retire), else to the allocator.
 */
static void kvt_res_pages_go(struct kvt_pool *pool, struct kvt_block *blk,
			     bool room)
{
	if (room)
		kvt_dram_tier.retire(pool, blk);
	else
		kvt_dram_tier.free(pool, blk);
}

/*
 * Faults that saw the block READY still hold map_sem for read while they
 * install PTEs; waiting for them and then zapping the block's range leaves
 * no mapping of its pages before they go back to the allocator (or, for
 * a block dropped to make room, to the next block: @room).
 */
static void __kvt_res_release(struct kvt_pool *pool, u32 addr, bool room)
{
	struct kvt_block *blk = &pool->blocks[addr];
	bool dram = kvt_in_dram(blk);

	if (dram) {
		kvt_res_unmap(pool, addr);
		kvt_res_pages_go(pool, blk, room);
	}

	spin_lock(&pool->lock);
	if (dram)
		pool->nr_dram--;
	kvt_block_free(pool, addr);
	spin_unlock(&pool->lock);
}

/**
 * kvt_res_release() - free a DYING block's memory and its address
 * @pool: the pool
 * @addr: a DYING block without users, owned by the caller
 */
void kvt_res_release(struct kvt_pool *pool, u32 addr)
{
	__kvt_res_release(pool, addr, false);
}

/**
 * kvt_res_put_user() - drop a user reference taken under pool->lock
 * @pool: the pool, its lock held; dropped on return
 * @addr: the block
 *
 * The last user of a DYING block frees it. Every end of a load or an
 * eviction comes here: it wakes the waiters of this block alone (by the
 * address of its flags, wait_var_event()), and the pool's waiters for room
 * and counters (pool->wq).
 */
void kvt_res_put_user(struct kvt_pool *pool, u32 addr)
	__releases(&pool->lock)
{
	bool release = kvt_block_put_user(pool, addr);

	spin_unlock(&pool->lock);
	/*
	 * The flags were changed under the lock; wake_up_var() looks at the
	 * waitqueue without it: order the two as prepare_to_wait_event()
	 * does on the waiter's side.
	 */
	smp_mb();
	wake_up_var(&pool->blocks[addr].flags);
	/* Ordered by the smp_mb() above, as wq_has_sleeper() would be. */
	if (waitqueue_active(&pool->wq))
		wake_up_all(&pool->wq);
	if (release)
		kvt_res_release(pool, addr);
}

/**
 * kvt_res_forget_nvme() - a block's NVMe copy is gone (its region was
 * reclaimed, or the device detached)
 * @pool: the pool, its lock held
 * @addr: a READY block with an NVMe copy
 * @why: KVTIER_EVR_*: why a block only there leaves
 *
 * A block only on NVMe goes; one in DRAM stays, dirty again.
 */
void kvt_res_forget_nvme(struct kvt_pool *pool, u32 addr, u16 why)
{
	struct kvt_block *blk = &pool->blocks[addr];

	lockdep_assert_held(&pool->lock);
	if (kvt_dram_ready(blk)) {
		blk->nloc = KVT_NIL;
		pool->nr_nvme--;
		pool->nr_dirty++;
		kvt_policy_dirty(pool, addr);
		return;
	}
	/*
	 * Only on NVMe, or its DRAM copy is coming (a load) or going (an
	 * eviction): the end of that frees it.
	 */
	kvt_res_unlink(pool, addr, why);
	/* Nothing in DRAM: freeing it takes no sleeping lock. */
	if (!blk->users)
		kvt_block_free(pool, addr);
}

/**
 * kvt_res_cleaned() - a block in DRAM gained an NVMe copy
 * @pool: the pool, its lock held
 * @addr: a READY block in DRAM whose nloc was just set (written, or a
 *	  copy adopted at attach)
 *
 * Its eviction writes nothing now: the policy may put it first.
 */
void kvt_res_cleaned(struct kvt_pool *pool, u32 addr)
{
	lockdep_assert_held(&pool->lock);
	kvt_policy_clean(pool, addr);
}

/* ---- what the tiers tell ------------------------------------------------ */

static void kvt_res_landed(struct kvt_pool *pool, u32 addr)
{
	struct kvt_block *blk = &pool->blocks[addr];

	lockdep_assert_held(&pool->lock);
	if (!blk->pins && !blk->hold)
		kvt_policy_insert(pool, addr);
	kvt_res_moved(pool, addr, KVTIER_EVR_LOAD);
}

/* The log reclaimed the region of a block's copy. */
static void kvt_res_reclaimed(struct kvt_pool *pool, u32 addr)
{
	kvt_res_forget_nvme(pool, addr, KVTIER_EVR_LOG_RECLAIM);
}

static void kvt_res_io_put(struct kvt_pool *pool, u32 addr)
	__releases(&pool->lock)
{
	kvt_res_put_user(pool, addr);
	if (kvt_res_notify)
		kvt_res_notify();
}

static const struct kvt_res_hooks kvt_res_hooks = {
	.unlink		= kvt_res_unlink,
	.landed		= kvt_res_landed,
	.cleaned	= kvt_res_cleaned,
	.forget_nvme	= kvt_res_reclaimed,
	.moved		= kvt_res_moved,
	.put		= kvt_res_io_put,
};

/**
 * kvt_res_pool_init() - a new pool: its hooks and an empty policy list
 * @pool: the pool, its index made
 */
void kvt_res_pool_init(struct kvt_pool *pool)
{
	pool->res = &kvt_res_hooks;
	kvt_policy_init(pool);
}

/**
 * kvt_res_pool_free() - a dead pool's blocks give their memory back
 * @pool: a pool without files, mappings or I/O
 */
void kvt_res_pool_free(struct kvt_pool *pool)
{
	u32 i;

	if (!pool->blocks)
		return;
	for (i = 0; i < pool->capacity; i++) {
		struct kvt_block *blk = &pool->blocks[i];

		if (blk->state != KVT_BLK_FREE && kvt_in_dram(blk))
			kvt_dram_tier.free(pool, blk);
	}
	kvt_dram_tier.trim(pool);
	kvt_nvme_tier.trim(pool);
}

/* ---- which tier ---------------------------------------------------------- */

/**
 * kvt_res_tier() - the highest tier holding a block
 * @pool: the pool, its lock held
 * @addr: a READY block
 * @slot: out: its HBM slot, or KVT_NIL
 *
 * A block being read into DRAM is still on NVMe; one losing its DRAM copy
 * is still in DRAM.
 *
 * Return: KVTIER_TIER_HBM, KVTIER_TIER_DRAM or KVTIER_TIER_NVME.
 */
u32 kvt_res_tier(struct kvt_pool *pool, u32 addr, u32 *slot)
{
	const struct kvt_block *blk = &pool->blocks[addr];

	lockdep_assert_held(&pool->lock);
	*slot = kvt_hbm_tier.where(pool, addr);
	if (*slot != KVT_NIL)
		return KVTIER_TIER_HBM;
	if (kvt_in_dram(blk) && !(blk->flags & KVT_BF_LOADING))
		return KVTIER_TIER_DRAM;
	return KVTIER_TIER_NVME;
}

/**
 * kvt_res_out_of_reach() - whether a block cannot be read for the moment
 * @pool: the pool, its lock held
 * @addr: a READY block
 *
 * Its only copy is on NVMe, on a device being attached or detached. A miss
 * for LOOKUP as for GET (kvt_res_load()); the block stays.
 */
bool kvt_res_out_of_reach(struct kvt_pool *pool, u32 addr)
{
	lockdep_assert_held(&pool->lock);
	return !kvt_in_dram(&pool->blocks[addr]) &&
	       kvt_hbm_tier.where(pool, addr) == KVT_NIL &&
	       !kvt_res_below(pool)->reachable(pool, addr);
}

/**
 * kvt_res_stat() - blocks each tier holds
 * @pool: the pool, its lock held
 * @resident: out: KVTIER_NR_TIERS counts, by KVTIER_TIER_*
 */
void kvt_res_stat(struct kvt_pool *pool, u64 *resident)
{
	lockdep_assert_held(&pool->lock);
	resident[KVTIER_TIER_DRAM] = pool->nr_dram;
	resident[KVTIER_TIER_NVME] = pool->nr_nvme;
	resident[KVTIER_TIER_HBM] = kvt_hbm_tier.used(pool);
}

/**
 * kvt_res_live() - whether a tier takes blocks now
 * @pool: the pool
 * @tier: KVTIER_TIER_NVME (a device attached) or KVTIER_TIER_HBM (the
 *	  pool has a live arena)
 *
 * Return: true if so.
 */
bool kvt_res_live(struct kvt_pool *pool, u32 tier)
{
	if (tier == KVTIER_TIER_HBM)
		return kvt_hbm_tier.live(pool);
	return kvt_res_below(pool)->live(pool);
}

/**
 * kvt_res_touch() - a block was used: it goes last in line to leave
 * @pool: the pool, its lock held
 * @addr: a READY block
 * @slot: its HBM slot too
 */
void kvt_res_touch(struct kvt_pool *pool, u32 addr, bool slot)
{
	lockdep_assert_held(&pool->lock);
	kvt_policy_touch(pool, addr);
	if (slot)
		kvt_hbm_tier.touch(pool, addr);
}

/**
 * kvt_res_keep() - a block must stay in DRAM: its first pin, or a hold
 * for a prefetch
 * @pool: the pool, its lock held
 * @addr: a READY block
 *
 * It leaves the replacement list, so no eviction picks it.
 */
void kvt_res_keep(struct kvt_pool *pool, u32 addr)
{
	lockdep_assert_held(&pool->lock);
	kvt_policy_remove(pool, addr);
}

/**
 * kvt_res_unkeep() - the last pin or hold of a block went
 * @pool: the pool, its lock held
 * @addr: the block, its pins or hold count just dropped to 0
 *
 * A block READY in DRAM that nothing else keeps is on the replacement list
 * again. One still loading or evicting stays off: the end of that I/O
 * decides (kvt_res_landed()).
 */
void kvt_res_unkeep(struct kvt_pool *pool, u32 addr)
{
	struct kvt_block *blk = &pool->blocks[addr];

	lockdep_assert_held(&pool->lock);
	if (blk->state == KVT_BLK_READY && kvt_dram_ready(blk) &&
	    !blk->pins && !blk->hold)
		kvt_policy_insert(pool, addr);
}

/**
 * kvt_res_ahead() - a block is read ahead for a hint without a hold, or
 * that hint is over
 * @pool: the pool, its lock held
 * @addr: a READY block
 * @on: set or clear
 *
 * While set and the block unused, it ages with the blocks that have no
 * NVMe copy, not on the clean list that eviction takes first
 * (kvt_policy_ahead()); kvt_res_make_room() waits for writes under way
 * rather than take it.
 */
void kvt_res_ahead(struct kvt_pool *pool, u32 addr, bool on)
{
	lockdep_assert_held(&pool->lock);
	kvt_policy_ahead(pool, addr, on);
}

/**
 * kvt_res_is_ahead() - whether kvt_res_ahead() still marks a block
 * @pool: the pool, its lock held
 * @addr: a READY block
 *
 * Return: false once it was used, left DRAM or was cleared.
 */
bool kvt_res_is_ahead(struct kvt_pool *pool, u32 addr)
{
	lockdep_assert_held(&pool->lock);
	return kvt_policy_is_ahead(pool, addr);
}

/* ---- demotion ------------------------------------------------------------ */

/**
 * kvt_res_evict_begin() - start taking a clean block's DRAM copy
 * @pool: the pool, its lock held
 * @addr: a READY block in DRAM with an NVMe copy, without users or flags
 *
 * The block leaves the replacement list and is KVT_BF_EVICTING, with a
 * user reference of its own until the eviction ends: a DROP, a REPLACE or
 * a lost NVMe copy in between unlinks it, and the eviction's end frees
 * it, so its pages are freed once.
 */
void kvt_res_evict_begin(struct kvt_pool *pool, u32 addr)
{
	struct kvt_block *blk = &pool->blocks[addr];

	lockdep_assert_held(&pool->lock);
	blk->flags |= KVT_BF_EVICTING;
	blk->users++;
	kvt_policy_remove(pool, addr);
}

/*
 * The end of an eviction, the block's pages mapped nowhere: to the next
 * block when it makes room for one (@room), else to the allocator.
 */
static void kvt_res_evict_unmapped(struct kvt_pool *pool, u32 addr, bool room)
{
	struct kvt_block *blk = &pool->blocks[addr];

	kvt_res_pages_go(pool, blk, room);
	spin_lock(&pool->lock);
	blk->flags &= ~KVT_BF_EVICTING;
	pool->nr_dram--;
	pool->stats.evictions++;
	trace_kvtier_block_demote(pool, addr);
	kvt_res_moved(pool, addr, room ? KVTIER_EVR_EVICT : KVTIER_EVR_SHRINK);
	kvt_res_put_user(pool, addr);
}

/*
 * Drop the DRAM copy of a block after kvt_res_evict_begin(), to make room;
 * no lock held.
 */
static void kvt_res_evict_dram(struct kvt_pool *pool, u32 addr)
{
	kvt_res_unmap(pool, addr);
	kvt_res_evict_unmapped(pool, addr, true);
}

/**
 * kvt_res_evict_dram_locked() - drop the DRAM copy of a block after
 * kvt_res_evict_begin(), for a caller that holds the pool's map_sem for
 * write (no fault can be mapping the block)
 * @pool: the pool
 * @addr: the block, pool->lock not held
 *
 * The shrinker's way: it takes map_sem with a trylock, so reclaim never
 * waits for a fault that may itself be in reclaim.
 */
void kvt_res_evict_dram_locked(struct kvt_pool *pool, u32 addr)
{
	lockdep_assert_held_write(&pool->map_sem);
	kvt_res_zap(pool, addr);
	kvt_res_evict_unmapped(pool, addr, false);
}

/**
 * kvt_res_rescue() - write a clean victim again before its copy is
 * reclaimed
 * @pool: the pool, its lock held
 * @addr: a clean READY block in DRAM, chosen as a victim
 *
 * A clean block leaving DRAM was used since its copy was written, so it is
 * hotter than the blocks only on NVMe; if that copy is about to be
 * reclaimed, forgetting it makes the block dirty: eviction then writes it
 * again while its data is still in DRAM, which costs a write but no read.
 *
 * Return: true if the block is dirty now.
 */
bool kvt_res_rescue(struct kvt_pool *pool, u32 addr)
{
	lockdep_assert_held(&pool->lock);
	if (!kvt_res_below(pool)->doomed(pool, addr))
		return false;
	/* In DRAM, it stays: no reason is told. */
	kvt_res_forget_nvme(pool, addr, KVTIER_EVR_LOG_RECLAIM);
	return true;
}

/*
 * Evict one DRAM block: a clean one loses its DRAM copy, a dirty one is
 * dropped. Lock held; dropped and retaken.
 */
static void kvt_res_evict_one(struct kvt_pool *pool, u32 victim)
	__must_hold(&pool->lock)
{
	struct kvt_block *blk = &pool->blocks[victim];

	if (blk->nloc != KVT_NIL) {
		kvt_res_evict_begin(pool, victim);
		spin_unlock(&pool->lock);
		kvt_res_evict_dram(pool, victim);
	} else {
		kvt_res_unlink(pool, victim, KVTIER_EVR_EVICT);
		pool->stats.evictions++;
		spin_unlock(&pool->lock);
		__kvt_res_release(pool, victim, true);
	}
	spin_lock(&pool->lock);
}

/**
 * kvt_res_make_room() - find room for one more DRAM block
 * @pool: the pool, its lock held (dropped and retaken while evicting)
 * @addr: a free block address is needed too (a new block, not a load)
 *
 * With an NVMe tier, dirty blocks at the cold end are written first and
 * evicted once clean; the caller may wait for such a write. Without one,
 * the coldest block is dropped.
 *
 * Return: 0 with room for one block (and a free address if asked),
 * -ENOSPC when nothing can be evicted, -EINTR when killed while waiting.
 */
int kvt_res_make_room(struct kvt_pool *pool, bool addr)
	__must_hold(&pool->lock)
{
	u32 victim, events;
	int ret;

	lockdep_assert_held(&pool->lock);
	while (pool->nr_dram >= pool->dram_blocks ||
	       (addr && !kvt_block_has_free(pool))) {
		/* Every address holds a block: only DRAM can be freed. */
		if (pool->nr_dram < pool->dram_blocks)
			return -ENOSPC;

		victim = kvt_policy_victim(pool);
		/*
		 * Blocks being written are skipped: the next block may be one
		 * read ahead and unused, far hotter. Their end leaves clean
		 * blocks to take instead.
		 */
		if (victim != KVT_NIL && pool->nr_wb &&
		    kvt_policy_is_ahead(pool, victim))
			victim = KVT_NIL;
		if (victim != KVT_NIL &&
		    pool->blocks[victim].nloc != KVT_NIL &&
		    !kvt_res_rescue(pool, victim)) {
			kvt_res_evict_one(pool, victim);
			continue;
		}
		if (victim != KVT_NIL && !pool->nr_wb) {
			/* Dirty: write a batch, or drop it if NVMe can't. */
			ret = kvt_res_below(pool)->clean(pool, 0, true);
			if (ret == -EBUSY) {
				/*
				 * Other pools' blocks fill the write queues:
				 * room comes as the writers take them, and a
				 * block dropped now would be lost unsaid.
				 */
				spin_unlock(&pool->lock);
				schedule_timeout_killable(1);
				spin_lock(&pool->lock);
				if (fatal_signal_pending(current))
					return -EINTR;
				continue;
			}
			if (ret <= 0)
				kvt_res_evict_one(pool, victim);
			continue;
		}
		if (!pool->nr_wb && !pool->nr_loading)
			return -ENOSPC;

		/* I/O under way will leave blocks to evict. */
		events = pool->io_events;
		spin_unlock(&pool->lock);
		ret = wait_event_killable(pool->wq,
					  READ_ONCE(pool->io_events) != events);
		spin_lock(&pool->lock);
		if (ret)
			return -EINTR;
	}
	return 0;
}

/* ---- promotion ----------------------------------------------------------- */

/**
 * kvt_res_load() - start reading a block back into DRAM
 * @pool: the pool, its lock held; dropped on return
 * @addr: a READY block only on NVMe, not busy
 *
 * The block is KVT_BF_LOADING until the read is verified; waiters sleep on
 * its flags (wait_var_event()). A block that does not verify is dropped.
 *
 * Return: 0 when the read is under way, or -errno: -ENOENT when its copy
 * is out of reach now (its device is being attached or detached), the
 * block left as it is.
 */
int kvt_res_load(struct kvt_pool *pool, u32 addr)
	__releases(&pool->lock)
{
	struct kvt_block *blk = &pool->blocks[addr];
	int ret;

	/*
	 * A copy out of reach is not lost (the device's attach or detach
	 * takes care of it): reading it now is a miss and the block stays.
	 * No room is made for it either: that may drop a dirty block while
	 * no device can take it.
	 */
	if (!kvt_res_below(pool)->reachable(pool, addr)) {
		spin_unlock(&pool->lock);
		return -ENOENT;
	}

	blk->flags |= KVT_BF_LOADING;
	blk->users++;
	/*
	 * Counted as a load only once it has room: kvt_res_make_room() waits
	 * for loads under way, and this one would never start.
	 */
	ret = kvt_res_make_room(pool, false);
	if (!ret && blk->state != KVT_BLK_READY)
		ret = -ENOENT;
	if (ret)
		goto out_put_user;
	pool->nr_loading++;
	pool->nr_dram++;
	spin_unlock(&pool->lock);

	ret = kvt_dram_tier.alloc(pool, blk);
	if (ret)
		goto out_undo_dram;
	ret = kvt_res_below(pool)->load(pool, addr);
	if (!ret)
		return 0;
	kvt_dram_tier.free(pool, blk);
out_undo_dram:
	spin_lock(&pool->lock);
	pool->nr_dram--;
	pool->nr_loading--;
out_put_user:
	blk->flags &= ~KVT_BF_LOADING;
	pool->io_events++;
	kvt_res_put_user(pool, addr);
	return ret;
}

/**
 * kvt_res_dram() - find a block and have it in DRAM
 * @pool: the pool
 * @key: the block's key
 * @addrp: out: its address
 *
 * Loads a block that is only on NVMe, and waits for loads and evictions
 * under way.
 *
 * Return: with pool->lock held either way: 0 and the block READY, in DRAM
 * and not busy; or -ENOENT, -ENOSPC, -ENOMEM, -EINTR, -EIO.
 */
int kvt_res_dram(struct kvt_pool *pool, const u64 *key, u32 *addrp)
	__acquires(&pool->lock)
{
	struct kvt_block *blk;
	u32 addr;
	int ret;

	spin_lock(&pool->lock);
	for (;;) {
		addr = kvt_block_find(pool, key);
		if (addr == KVT_NIL)
			return -ENOENT;
		blk = &pool->blocks[addr];
		if (kvt_dram_ready(blk)) {
			*addrp = addr;
			return 0;
		}
		ret = 0;
		if (!(blk->flags & KVT_BF_BUSY))
			ret = kvt_res_load(pool, addr);
		else
			spin_unlock(&pool->lock);
		/* Woken by this block's end only (kvt_res_put_user()). */
		if (!ret)
			ret = wait_var_event_killable(&blk->flags,
						      !(READ_ONCE(blk->flags) &
							KVT_BF_BUSY));
		spin_lock(&pool->lock);
		if (ret)
			return ret == -ERESTARTSYS ? -EINTR : ret;
	}
}

/**
 * kvt_res_load_ahead() - start loading a block only on NVMe, not waiting
 * @pool: the pool
 * @key: the block's key
 *
 * For queue depth: a GET or a LOOKUP that loads starts its reads first.
 */
void kvt_res_load_ahead(struct kvt_pool *pool, const u64 *key)
{
	struct kvt_block *blk;
	u32 addr;

	spin_lock(&pool->lock);
	addr = kvt_block_find(pool, key);
	blk = addr == KVT_NIL ? NULL : &pool->blocks[addr];
	if (blk && !kvt_in_dram(blk) && !blk->flags)
		kvt_res_load(pool, addr);
	else
		spin_unlock(&pool->lock);
}

/*
 * The READY block of @key if it is only on NVMe (no DRAM copy, none being
 * loaded) and its copy can be reached now, held as a user; else KVT_NIL.
 * For the reads that leave a block where it is; a weight pool's blocks
 * are read whole into DRAM, as their file tier reads.
 */
static u32 kvt_res_nvme_only_get(struct kvt_pool *pool, const u64 *key)
{
	struct kvt_block *blk;
	u32 addr;

	if (fatal_signal_pending(current))
		return KVT_NIL;
	spin_lock(&pool->lock);
	addr = kvt_block_find(pool, key);
	blk = addr == KVT_NIL ? NULL : &pool->blocks[addr];
	if (!blk || kvt_in_dram(blk) || blk->flags || blk->nloc == KVT_NIL ||
	    blk->users == U16_MAX || pool->file ||
	    !kvt_nvme_tier.reachable(pool, addr))
		addr = KVT_NIL;
	else
		blk->users++;
	spin_unlock(&pool->lock);
	return addr;
}

/**
 * kvt_res_part_begin() - start reading a range of a block straight from NVMe
 * @pool: the pool
 * @key: the block's key
 * @off: the range's first byte
 * @len: its bytes, nonzero, within the block
 * @addrp: out: the block's address; it is held as a user
 *
 * Only for a pool with parts, and a block READY without a DRAM copy (none
 * being loaded either) whose NVMe copy can be reached now.
 *
 * Return: the read, to end with kvt_res_part_end() and put with
 * kvt_res_part_put(); NULL when the block is not such a block or the read
 * could not start: the caller reads the block the usual way.
 */
struct kvt_part_rd *kvt_res_part_begin(struct kvt_pool *pool, const u64 *key,
				       u32 off, u32 len, u32 *addrp)
{
	struct kvt_part_rd *rd;
	u32 addr;

	if (!pool->parts)
		return NULL;
	addr = kvt_res_nvme_only_get(pool, key);
	if (addr == KVT_NIL)
		return NULL;
	rd = kvt_nvme_tier.read_part(pool, addr, off, len);
	if (IS_ERR(rd)) {
		spin_lock(&pool->lock);
		kvt_res_put_user(pool, addr);
		return NULL;
	}
	*addrp = addr;
	return rd;
}

/**
 * kvt_res_part_end() - end a read kvt_res_part_begin() started
 * @pool: the pool
 * @rd: the read
 * @to: user memory for the range
 *
 * Return: 0 with the range verified and copied; -EFAULT or -EINTR when the
 * copy failed; else -errno: the caller reads the block the usual way.
 */
int kvt_res_part_end(struct kvt_pool *pool, struct kvt_part_rd *rd,
		     struct iov_iter *to)
{
	return kvt_nvme_tier.part_end(rd, to);
}

/**
 * kvt_res_part_put() - free a read kvt_res_part_begin() started
 * @pool: the pool
 * @rd: the read, ended or not
 * @addr: its block, whose user reference goes
 */
void kvt_res_part_put(struct kvt_pool *pool, struct kvt_part_rd *rd,
		      u32 addr)
{
	kvt_nvme_tier.part_free(rd);
	spin_lock(&pool->lock);
	kvt_res_put_user(pool, addr);
}

/**
 * kvt_res_direct_begin() - start reading a block only on NVMe into user memory
 * @pool: the pool
 * @key: the block's key
 * @iov: the memory: segments of whole pages, the block size in all
 * @nr_segs: how many
 * @addrp: out: the block's address; it is held as a user
 *
 * For a block READY without a DRAM copy (none being loaded either) whose
 * NVMe copy can be reached now. The block stays where it is.
 *
 * Return: the read, to end with kvt_res_direct_end() and put with
 * kvt_res_direct_put(); NULL when the block is not such a block, or its
 * copy or the memory cannot be read so: the caller reads the usual way.
 */
struct kvt_direct_rd *kvt_res_direct_begin(struct kvt_pool *pool,
					   const u64 *key,
					   const struct iovec *iov,
					   unsigned long nr_segs, u32 *addrp)
{
	struct kvt_direct_rd *rd;
	u32 addr;

	addr = kvt_res_nvme_only_get(pool, key);
	if (addr == KVT_NIL)
		return NULL;
	rd = kvt_nvme_tier.read_user(pool, addr, iov, nr_segs);
	if (IS_ERR(rd)) {
		spin_lock(&pool->lock);
		kvt_res_put_user(pool, addr);
		return NULL;
	}
	*addrp = addr;
	return rd;
}

/**
 * kvt_res_direct_end() - end a read kvt_res_direct_begin() started
 * @pool: the pool
 * @rd: the read
 * @addr: its block
 *
 * A block read so was used: the policy learns it, though it stays on NVMe.
 *
 * Return: 0 with the block's bytes in the caller's memory; -EINTR when
 * killed; else -errno, and the caller reads the block the usual way.
 */
int kvt_res_direct_end(struct kvt_pool *pool, struct kvt_direct_rd *rd,
		       u32 addr)
{
	int ret = kvt_nvme_tier.user_end(rd);

	if (!ret) {
		spin_lock(&pool->lock);
		if (pool->blocks[addr].state == KVT_BLK_READY) {
			kvt_policy_read_back(pool, addr);
			kvt_res_touch(pool, addr, false);
		}
		spin_unlock(&pool->lock);
	}
	return ret;
}

/**
 * kvt_res_direct_put() - free a read kvt_res_direct_begin() started
 * @pool: the pool
 * @rd: the read, ended or not
 * @addr: its block, whose user reference goes
 */
void kvt_res_direct_put(struct kvt_pool *pool, struct kvt_direct_rd *rd,
			u32 addr)
{
	kvt_nvme_tier.user_free(rd);
	spin_lock(&pool->lock);
	kvt_res_put_user(pool, addr);
}

/**
 * kvt_res_stage() - copy a block in DRAM into its HBM slot
 * @pool: the pool
 * @addr: a block; it must be READY in DRAM and not busy
 * @start: a new copy may start; else only report one under way
 *
 * Return: as the HBM tier's stage (1: a copy started).
 */
int kvt_res_stage(struct kvt_pool *pool, u32 addr, bool start)
{
	return kvt_hbm_tier.stage(pool, addr, start);
}

/* ---- new blocks ---------------------------------------------------------- */

/**
 * kvt_res_new() - a new block in DRAM
 * @pool: the pool, its lock held; dropped on return
 * @key: its key
 * @addrp: out: its address
 *
 * Makes room (evicting, maybe waiting), takes a free address and gives it
 * its pages. The block is FILLING, owned by the caller, who publishes it
 * (kvt_res_publish()) or gives it back (kvt_res_new_abort()).
 *
 * Return: 0, -ENOSPC, -EINTR or -ENOMEM.
 */
int kvt_res_new(struct kvt_pool *pool, const u64 *key, u32 *addrp)
	__releases(&pool->lock)
{
	u32 addr;
	int ret;

	ret = kvt_res_make_room(pool, true);
	if (ret) {
		spin_unlock(&pool->lock);
		return ret;
	}
	addr = kvt_block_alloc(pool, key);
	pool->nr_dram++;
	spin_unlock(&pool->lock);

	ret = kvt_dram_tier.alloc(pool, &pool->blocks[addr]);
	if (ret) {
		kvt_res_new_abort(pool, addr);
		return ret;
	}
	*addrp = addr;
	return 0;
}

/**
 * kvt_res_new_abort() - give back a block from kvt_res_new()
 * @pool: the pool, its lock not held
 * @addr: the FILLING block, never published
 */
void kvt_res_new_abort(struct kvt_pool *pool, u32 addr)
{
	kvt_dram_tier.free(pool, &pool->blocks[addr]);
	spin_lock(&pool->lock);
	pool->nr_dram--;
	kvt_block_free(pool, addr);
	spin_unlock(&pool->lock);
}

/**
 * kvt_res_publish() - a filled block becomes visible and evictable
 * @pool: the pool, its lock held
 * @addr: a block from kvt_res_new(), its data in, its key not in the hash
 *	  unless as @old
 * @old: the READY, unpinned block of the same key it replaces, which is
 *	 unlinked (the caller releases it once it has no users), or KVT_NIL
 *
 * Cleans ahead: with DRAM nearly full, dirty blocks are queued for NVMe
 * so that eviction finds clean blocks and never waits.
 */
void kvt_res_publish(struct kvt_pool *pool, u32 addr, u32 old)
{
	u8 from = KVTIER_TIER_NONE;

	lockdep_assert_held(&pool->lock);
	if (old != KVT_NIL) {
		from = pool->blocks[old].evtier;
		kvt_res_unlink(pool, old, KVTIER_EVR_REPLACE);
	}
	kvt_block_hash_add(pool, addr);
	kvt_policy_insert(pool, addr);
	kvt_res_stored(pool, addr, from,
		       old != KVT_NIL ? KVTIER_EVR_REPLACE : KVTIER_EVR_PUT);
	if (!pool->nr_wb && pool->nr_dram + pool->dram_blocks / 8 >=
	    pool->dram_blocks && kvt_res_below(pool)->live(pool))
		kvt_res_below(pool)->clean(pool, 0, false);
}

/* Whether an ADOPT entry can be taken now: its slot, and a new key. */
static int kvt_res_adopt_check(struct kvt_pool *pool,
			       const struct kvtier_adopt *e)
{
	int ret;

	lockdep_assert_held(&pool->lock);
	ret = kvt_hbm_tier.adopt_check(pool, e->slot);
	if (!ret && kvt_block_find(pool, e->key) != KVT_NIL)
		ret = -EEXIST;
	return ret;
}

/**
 * kvt_res_adopt() - take one block made in device memory (an ADOPT entry)
 * @pool: the pool, its lock not held
 * @e: the entry, checked; @e->addr is set on success
 * @um: the block's record, or NULL for none; taken (set to NULL) once the
 *	block is published
 *
 * The block is in its HBM slot only, its DRAM claimed and marked loading
 * until the HBM tier has written it down; readers wait for that as for a
 * read from NVMe.
 *
 * Return: 0; -ENODEV without a live device tier; -EINVAL for a slot past
 * the arena; -EBUSY for a slot in use; -EEXIST for a key in the pool;
 * -ENOSPC, -ENOMEM, -EINTR when no DRAM can be had for it.
 */
int kvt_res_adopt(struct kvt_pool *pool, struct kvtier_adopt *e,
		  struct kvt_umeta **um)
{
	struct kvt_block *blk;
	u32 addr;
	int ret;

	spin_lock(&pool->lock);
	ret = kvt_res_adopt_check(pool, e);
	if (ret) {
		spin_unlock(&pool->lock);
		return ret;
	}
	/* Its DRAM, for the write-down: evicting, maybe waiting. */
	ret = kvt_res_new(pool, e->key, &addr);
	if (ret)
		return ret;
	blk = &pool->blocks[addr];

	/* The lock was dropped: the slot or the key may be taken since. */
	spin_lock(&pool->lock);
	ret = kvt_res_adopt_check(pool, e);
	if (ret) {
		spin_unlock(&pool->lock);
		kvt_res_new_abort(pool, addr);
		return ret;
	}
	/* Published at once, loading: readers wait for the write-down. */
	kvt_block_set_umeta(pool, addr, um);
	kvt_block_hash_add(pool, addr);
	blk->flags |= KVT_BF_LOADING;
	pool->nr_loading++;
	blk->users++;
	spin_unlock(&pool->lock);

	ret = kvt_hbm_tier.adopt(pool, addr, e->slot);
	spin_lock(&pool->lock);
	if (ret) {
		/*
		 * The arena went, or the slot was taken, meanwhile. A DROP or
		 * a replacing PUT may have unlinked the block already (our use
		 * keeps it from being freed): it is unlinked once.
		 */
		blk->flags &= ~KVT_BF_LOADING;
		pool->nr_loading--;
		pool->io_events++;
		if (blk->state == KVT_BLK_READY)
			kvt_res_unlink(pool, addr, KVTIER_EVR_IO_ERROR);
		kvt_res_put_user(pool, addr);
		return ret;
	}
	pool->stats.puts++;
	/* Not told before: readers of the log see it once it is in HBM. */
	if (blk->state == KVT_BLK_READY)
		kvt_res_stored(pool, addr, KVTIER_TIER_NONE, KVTIER_EVR_ADOPT);
	spin_unlock(&pool->lock);
	e->addr = addr;
	return 0;
}

/**
 * kvt_res_sync() - write every dirty block of a pool to NVMe and wait
 * @pool: the pool
 * @written: out: blocks written
 *
 * Return: as the NVMe tier's sync.
 */
int kvt_res_sync(struct kvt_pool *pool, u64 *written)
{
	return kvt_res_below(pool)->sync(pool, written);
}
