// SPDX-License-Identifier: GPL-2.0
/*
 * HBM tier: device memory above DRAM, in the same block address space.
 *
 * A pool may be given an arena of slots of its block size in device memory
 * (KVTIER_IOC_HBM_ATTACH). The kernel decides which block occupies which
 * slot; the bytes move through a backend (struct kvt_hbm_ops): hbm_emul.c
 * (kernel memory standing in for a device) or hbm_user.c (the runtime's
 * arena, copied by its mover process).
 *
 * Inclusive: a block in a slot also has its DRAM copy (or a durable NVMe
 * one, once DRAM evicted it), so giving a slot back never loses a block.
 * The one exception is a block made in device memory (KVTIER_IOC_ADOPT):
 * it is in its slot only, with its DRAM claimed and marked loading, until
 * the backend has written it down; readers wait for that as for a read
 * from NVMe. A slot is filled by PREFETCH with the HBM target: the engine
 * brings the block to DRAM first, then asks for it here (kvt_hbm_stage()).
 * Slots are given back least recently used first (LOOKUP with TOUCH makes
 * a slot recent) when a new block needs one.
 *
 * Locking: the slot tables live under pool->lock; a copy in flight holds
 * its block as a user (its DRAM pages stay), a reference on the pool, and
 * counts in hbm->copies, which detach waits to drain.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/file.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/sched/signal.h>
#include <linux/wait_bit.h>
#include "hbm.h"
#include "trace.h"

/* ---- the slot tables (pool->lock held) ---------------------------------- */

static void kvt_slot_lru_add(struct kvt_hbm *hbm, u32 s)
{
	hbm->prev[s] = KVT_NIL;
	hbm->next[s] = hbm->head;
	if (hbm->head != KVT_NIL)
		hbm->prev[hbm->head] = s;
	else
		hbm->tail = s;
	hbm->head = s;
}

static void kvt_slot_lru_del(struct kvt_hbm *hbm, u32 s)
{
	if (hbm->prev[s] != KVT_NIL)
		hbm->next[hbm->prev[s]] = hbm->next[s];
	else
		hbm->head = hbm->next[s];
	if (hbm->next[s] != KVT_NIL)
		hbm->prev[hbm->next[s]] = hbm->prev[s];
	else
		hbm->tail = hbm->prev[s];
	hbm->prev[s] = KVT_NIL;
	hbm->next[s] = KVT_NIL;
}

/* Give a slot back: it holds no block any more. */
static void kvt_slot_free(struct kvt_hbm *hbm, u32 s)
{
	u32 addr = hbm->slot_addr[s];

	if (hbm->slot_state[s] == KVT_SLOT_READY)
		kvt_slot_lru_del(hbm, s);
	if (addr != KVT_NIL && hbm->addr_slot[addr] == s)
		hbm->addr_slot[addr] = KVT_NIL;
	hbm->slot_addr[s] = KVT_NIL;
	hbm->slot_state[s] = KVT_SLOT_FREE;
	/* The free list is linked both ways too: ADOPT takes a given slot. */
	hbm->prev[s] = KVT_NIL;
	hbm->next[s] = hbm->free;
	if (hbm->free != KVT_NIL)
		hbm->prev[hbm->free] = s;
	hbm->free = s;
	hbm->used--;
}

/* Take slot @s, which is free, off the free list. */
static void kvt_slot_take(struct kvt_hbm *hbm, u32 s)
{
	if (hbm->prev[s] != KVT_NIL)
		hbm->next[hbm->prev[s]] = hbm->next[s];
	else
		hbm->free = hbm->next[s];
	if (hbm->next[s] != KVT_NIL)
		hbm->prev[hbm->next[s]] = hbm->prev[s];
	hbm->prev[s] = KVT_NIL;
	hbm->next[s] = KVT_NIL;
	hbm->used++;
}

/*
 * A free slot, giving back the least recently used one if need be (its
 * block's tier changes: the residency layer is told).
 */
static u32 kvt_slot_get(struct kvt_hbm *hbm)
{
	struct kvt_pool *pool = hbm->pool;
	u32 s = hbm->free, addr;

	if (s == KVT_NIL && hbm->tail != KVT_NIL) {
		addr = hbm->slot_addr[hbm->tail];
		kvt_slot_free(hbm, hbm->tail);
		hbm->stats.evictions++;
		if (addr != KVT_NIL)
			pool->res->moved(pool, addr, KVTIER_EVR_UNSTAGE);
		s = hbm->free;
	}
	if (s != KVT_NIL)
		kvt_slot_take(hbm, s);
	return s;
}

/**
 * kvt_hbm_block_page() - a page of a block's DRAM copy, for a backend
 * @hbm: the tier
 * @addr: the block, held by the copy
 * @index: page within the block
 *
 * Return: the page's kernel address.
 */
void *kvt_hbm_block_page(struct kvt_hbm *hbm, u32 addr, u32 index)
{
	struct kvt_pool *pool = hbm->pool;

	return page_address(kvt_dram_page(pool, &pool->blocks[addr], index));
}

/**
 * kvt_hbm_where() - a block's HBM slot
 * @pool: the pool, its lock held
 * @addr: the block
 *
 * Return: its slot when it is in HBM (or being written down from it), else
 * KVT_NIL.
 */
static u32 kvt_hbm_where(struct kvt_pool *pool, u32 addr)
{
	struct kvt_hbm *hbm = pool->hbm;
	u32 s;

	lockdep_assert_held(&pool->lock);
	if (!hbm || hbm->dead)
		return KVT_NIL;
	s = hbm->addr_slot[addr];
	if (s == KVT_NIL || (hbm->slot_state[s] != KVT_SLOT_READY &&
			     hbm->slot_state[s] != KVT_SLOT_FROM_DEV))
		return KVT_NIL;
	return s;
}

/**
 * kvt_hbm_live() - whether a pool has a device tier that takes blocks
 * @pool: the pool
 *
 * Return: true if so.
 */
static bool kvt_hbm_live(struct kvt_pool *pool)
{
	bool live;

	spin_lock(&pool->lock);
	live = pool->hbm && !pool->hbm->dead;
	spin_unlock(&pool->lock);
	return live;
}

/**
 * kvt_hbm_used() - blocks in a pool's HBM slots
 * @pool: the pool, its lock held
 *
 * Return: the slots in use, 0 without a live device tier.
 */
static u32 kvt_hbm_used(struct kvt_pool *pool)
{
	lockdep_assert_held(&pool->lock);
	return pool->hbm && !pool->hbm->dead ? pool->hbm->used : 0;
}

/**
 * kvt_hbm_touch() - a block in HBM was used: its slot goes last
 * @pool: the pool, its lock held
 * @addr: the block
 */
static void kvt_hbm_touch(struct kvt_pool *pool, u32 addr)
{
	struct kvt_hbm *hbm = pool->hbm;
	u32 s;

	lockdep_assert_held(&pool->lock);
	if (!hbm || hbm->dead)
		return;
	s = hbm->addr_slot[addr];
	if (s != KVT_NIL && hbm->slot_state[s] == KVT_SLOT_READY &&
	    hbm->head != s) {
		kvt_slot_lru_del(hbm, s);
		kvt_slot_lru_add(hbm, s);
	}
}

/**
 * kvt_hbm_forget() - a block is leaving the pool: its slot goes too
 * @pool: the pool, its lock held
 * @addr: the block being unlinked
 *
 * A slot whose copy is in flight is given back when the copy ends.
 */
static void kvt_hbm_forget(struct kvt_pool *pool, u32 addr)
{
	struct kvt_hbm *hbm = pool->hbm;
	u32 s;

	lockdep_assert_held(&pool->lock);
	if (!hbm)
		return;
	s = hbm->addr_slot[addr];
	if (s != KVT_NIL && hbm->slot_state[s] == KVT_SLOT_READY)
		kvt_slot_free(hbm, s);
}

/* ---- copies --------------------------------------------------------------- */

static void kvt_hbm_copy_work(struct work_struct *work)
{
	struct kvt_hbm_copy *c = container_of(work, struct kvt_hbm_copy, work);
	struct kvt_hbm *hbm = c->hbm;
	struct kvt_pool *pool = hbm->pool;
	struct kvt_block *blk = &pool->blocks[c->addr];
	u32 crc = 0;
	bool mine;

	/* Written down: its bytes are new to DRAM, their crc with them. */
	if (!c->to_dev && !c->status)
		crc = kvt_dram_crc(pool, blk, 0);
	spin_lock(&pool->lock);
	mine = hbm->slot_addr[c->slot] == c->addr;
	if (c->to_dev) {
		if (mine && !c->status && !hbm->dead &&
		    blk->state == KVT_BLK_READY) {
			hbm->slot_state[c->slot] = KVT_SLOT_READY;
			kvt_slot_lru_add(hbm, c->slot);
			hbm->stats.to_dev++;
			trace_kvtier_hbm_in(pool, c->addr);
		} else {
			if (mine)
				kvt_slot_free(hbm, c->slot);
			if (c->status)
				hbm->stats.copy_errors++;
		}
	} else {
		blk->flags &= ~KVT_BF_LOADING;
		pool->nr_loading--;
		pool->io_events++;
		if (!c->status && blk->state == KVT_BLK_READY) {
			/* Written down: in DRAM (dirty) and still in HBM. */
			blk->ncrc = crc;
			pool->res->landed(pool, c->addr);
			hbm->stats.from_dev++;
			trace_kvtier_hbm_out(pool, c->addr);
			if (mine && !hbm->dead) {
				hbm->slot_state[c->slot] = KVT_SLOT_READY;
				kvt_slot_lru_add(hbm, c->slot);
				mine = false;
			}
		} else if (blk->state == KVT_BLK_READY) {
			/* Only in the slot, and the slot failed: it is lost. */
			hbm->stats.copy_errors++;
			pool->res->unlink(pool, c->addr, KVTIER_EVR_IO_ERROR);
		}
		if (mine)
			kvt_slot_free(hbm, c->slot);
	}
	/* In HBM now, or no more (its slot given back): the block's tier. */
	pool->res->moved(pool, c->addr, c->to_dev ? KVTIER_EVR_STAGE :
						    KVTIER_EVR_UNSTAGE);
	/* Drops pool->lock; frees a block unlinked meanwhile. */
	kvt_res_hook_put(pool, c->addr);
	kfree(c);
	/*
	 * The last copy's end may let a detach return and the arena be
	 * freed: its waiters are found by address (wake_up_var()), so
	 * nothing of @hbm is touched after the count drops.
	 */
	if (atomic_dec_and_test(&hbm->copies))
		wake_up_var(&hbm->copies);
	kvt_pool_put(pool);
}

/**
 * kvt_hbm_copy_done() - a backend ends a copy
 * @c: the copy
 * @status: 0 or -errno
 *
 * Any context; the bookkeeping runs from a work item.
 */
void kvt_hbm_copy_done(struct kvt_hbm_copy *c, int status)
{
	c->status = status;
	INIT_WORK(&c->work, kvt_hbm_copy_work);
	queue_work(system_unbound_wq, &c->work);
}

/*
 * Start copy @c of block @addr, held as a user with its slot set up, and
 * counted in hbm->copies. On failure the copy is ended as failed.
 */
static void kvt_hbm_submit(struct kvt_hbm *hbm, struct kvt_hbm_copy *c,
			   u32 slot, u32 addr, bool to_dev)
{
	int ret;

	c->hbm = hbm;
	c->slot = slot;
	c->addr = addr;
	c->to_dev = to_dev;
	c->started = jiffies;
	INIT_LIST_HEAD(&c->node);
	kref_get(&hbm->pool->ref);
	ret = hbm->ops->copy(hbm, c);
	if (ret)
		kvt_hbm_copy_done(c, ret);
}

/**
 * kvt_hbm_stage() - copy a block in DRAM into a slot
 * @pool: the pool
 * @addr: a block; it must be READY in DRAM and not busy
 * @start: a new copy may start; else only report one under way
 *
 * Return: 1 when a copy started; 0 when the block is in HBM or on its way
 * there already; -ENODEV without a live device tier; -ENOSPC when every
 * slot is busy; -EAGAIN when the block is not in DRAM (any more); -EIO when
 * no copy is under way and @start is false; -ENOMEM.
 */
static int kvt_hbm_stage(struct kvt_pool *pool, u32 addr, bool start)
{
	struct kvt_block *blk = &pool->blocks[addr];
	struct kvt_hbm_copy *c;
	struct kvt_hbm *hbm;
	int ret;
	u32 s;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	spin_lock(&pool->lock);
	hbm = pool->hbm;
	ret = -ENODEV;
	if (!hbm || hbm->dead)
		goto out_unlock;
	ret = 0;
	if (hbm->addr_slot[addr] != KVT_NIL)
		goto out_unlock;
	ret = -EIO;
	if (!start)
		goto out_unlock;
	ret = -EAGAIN;
	if (blk->state != KVT_BLK_READY || !kvt_in_dram(blk) ||
	    blk->flags & KVT_BF_BUSY || blk->users == U16_MAX)
		goto out_unlock;
	ret = -ENOSPC;
	s = kvt_slot_get(hbm);
	if (s == KVT_NIL)
		goto out_unlock;
	hbm->slot_addr[s] = addr;
	hbm->slot_state[s] = KVT_SLOT_TO_DEV;
	hbm->addr_slot[addr] = s;
	blk->users++;
	atomic_inc(&hbm->copies);
	spin_unlock(&pool->lock);
	kvt_hbm_submit(hbm, c, s, addr, true);
	return 1;

out_unlock:
	spin_unlock(&pool->lock);
	kfree(c);
	return ret;
}

/* ---- commands ------------------------------------------------------------ */

static void kvt_hbm_free_tables(struct kvt_hbm *hbm)
{
	kvfree(hbm->slot_addr);
	kvfree(hbm->slot_state);
	kvfree(hbm->prev);
	kvfree(hbm->next);
	kvfree(hbm->addr_slot);
	kfree(hbm);
}

static struct kvt_hbm *kvt_hbm_alloc(struct kvt_pool *pool, u32 slots)
{
	struct kvt_hbm *hbm = kzalloc(sizeof(*hbm), GFP_KERNEL_ACCOUNT);
	u32 i;

	if (!hbm)
		return NULL;
	hbm->pool = pool;
	hbm->nr_slots = slots;
	hbm->slot_addr = kvmalloc_array(slots, sizeof(u32), GFP_KERNEL_ACCOUNT);
	hbm->slot_state = kvzalloc(slots, GFP_KERNEL_ACCOUNT);
	hbm->prev = kvmalloc_array(slots, sizeof(u32), GFP_KERNEL_ACCOUNT);
	hbm->next = kvmalloc_array(slots, sizeof(u32), GFP_KERNEL_ACCOUNT);
	hbm->addr_slot = kvmalloc_array(pool->capacity, sizeof(u32),
					GFP_KERNEL_ACCOUNT);
	if (!hbm->slot_addr || !hbm->slot_state || !hbm->prev || !hbm->next ||
	    !hbm->addr_slot) {
		kvt_hbm_free_tables(hbm);
		return NULL;
	}
	for (i = 0; i < slots; i++) {
		hbm->slot_addr[i] = KVT_NIL;
		hbm->prev[i] = i ? i - 1 : KVT_NIL;
		hbm->next[i] = i + 1 < slots ? i + 1 : KVT_NIL;
	}
	for (i = 0; i < pool->capacity; i++)
		hbm->addr_slot[i] = KVT_NIL;
	hbm->free = 0;
	hbm->head = KVT_NIL;
	hbm->tail = KVT_NIL;
	atomic_set(&hbm->copies, 0);
	hbm->stats.attached = 1;
	hbm->stats.slots = slots;
	return hbm;
}

/**
 * kvt_hbm_detach() - the arena goes: nothing new, copies failed, slots freed
 * @hbm: the tier
 *
 * Adopted blocks not yet written down are lost; every other block keeps
 * its DRAM or NVMe copy. Sleeps until the copies in flight have ended.
 */
void kvt_hbm_detach(struct kvt_hbm *hbm)
{
	struct kvt_pool *pool = hbm->pool;
	u32 s;

	spin_lock(&pool->lock);
	if (hbm->dead) {
		spin_unlock(&pool->lock);
		wait_var_event(&hbm->copies, !atomic_read(&hbm->copies));
		return;
	}
	/* Detached from here on: whoever sees a copy fail sees it so. */
	hbm->dead = true;
	hbm->stats.detached++;
	hbm->stats.attached = 0;
	spin_unlock(&pool->lock);

	hbm->ops->detach(hbm);
	wait_var_event(&hbm->copies, !atomic_read(&hbm->copies));

	spin_lock(&pool->lock);
	for (s = 0; s < hbm->nr_slots; s++) {
		u32 addr = hbm->slot_addr[s];

		if (hbm->slot_state[s] != KVT_SLOT_READY)
			continue;
		kvt_slot_free(hbm, s);
		if (addr != KVT_NIL)
			pool->res->moved(pool, addr, KVTIER_EVR_UNSTAGE);
	}
	spin_unlock(&pool->lock);
	pr_info("pool %s: HBM arena (%s, %u slots) detached\n", pool->name,
		hbm->ops->name, hbm->nr_slots);
}

/* Detach and free a tier nobody can reach any more. */
static void kvt_hbm_destroy(struct kvt_hbm *hbm)
{
	kvt_hbm_detach(hbm);
	hbm->ops->fini(hbm);
	kvt_hbm_free_tables(hbm);
}

/**
 * kvt_hbm_pool_free() - the pool is being freed: its device tier goes
 * @pool: the pool, with no reference left
 */
void kvt_hbm_pool_free(struct kvt_pool *pool)
{
	if (pool->hbm)
		kvt_hbm_destroy(pool->hbm);
	pool->hbm = NULL;
}

/**
 * kvt_hbm_attach_cmd() - KVTIER_IOC_HBM_ATTACH
 * @h: the pool file's handle
 * @a: the command, copied in; @a->mover_fd is filled
 *
 * Return: 0 or -errno (see struct kvtier_hbm_attach).
 */
int kvt_hbm_attach_cmd(struct kvt_handle *h, struct kvtier_hbm_attach *a)
{
	struct kvt_pool *pool = h->pool;
	struct kvt_hbm *hbm, *old = NULL;
	int ret, fd = -1;

	if (a->flags || memchr_inv(a->reserved, 0, sizeof(a->reserved)) ||
	    !a->slots || a->slots > KVTIER_HBM_SLOTS_MAX ||
	    (a->backend != KVTIER_HBM_EMUL && a->backend != KVTIER_HBM_USER))
		return -EINVAL;
	if (h->rdonly)
		return -EBADF;

	hbm = kvt_hbm_alloc(pool, a->slots);
	if (!hbm)
		return -ENOMEM;
	hbm->backend = a->backend;
	hbm->stats.backend = a->backend;
	hbm->ops = a->backend == KVTIER_HBM_EMUL ? &kvt_hbm_emul_ops :
						   &kvt_hbm_user_ops;
	ret = hbm->ops->init(hbm);
	if (ret) {
		kvt_hbm_free_tables(hbm);
		return ret;
	}

	spin_lock(&pool->lock);
	/* A dead arena may be replaced, once its mover has let it go. */
	if (pool->hbm && (!pool->hbm->dead || pool->hbm->fd_open)) {
		spin_unlock(&pool->lock);
		hbm->ops->fini(hbm);
		kvt_hbm_free_tables(hbm);
		return -EBUSY;
	}
	old = pool->hbm;
	pool->hbm = hbm;
	spin_unlock(&pool->lock);
	/* A dead arena replaced: nothing reaches it but its copies' ends. */
	if (old)
		kvt_hbm_destroy(old);

	if (a->backend == KVTIER_HBM_USER) {
		fd = hbm->ops->fd(hbm);
		if (fd < 0) {
			kvt_hbm_detach(hbm);
			return fd;
		}
	}
	a->mover_fd = fd;
	return 0;
}

/**
 * kvt_hbm_stat_cmd() - KVTIER_IOC_HBM_STAT
 * @pool: the pool
 * @st: the command, copied in, and filled
 *
 * Return: 0 or -EINVAL.
 */
int kvt_hbm_stat_cmd(struct kvt_pool *pool, struct kvtier_hbm_stat *st)
{
	if (st->flags || memchr_inv(st->reserved, 0, sizeof(st->reserved)))
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	spin_lock(&pool->lock);
	if (pool->hbm) {
		*st = pool->hbm->stats;
		st->used = pool->hbm->used;
		if (pool->hbm->dead) {
			st->attached = 0;
			st->used = 0;
		}
	}
	spin_unlock(&pool->lock);
	return 0;
}

/**
 * kvt_hbm_adopt_check() - whether a block made in a slot can be taken
 * @pool: the pool, its lock held
 * @slot: the slot
 *
 * Return: 0; -ENODEV without a live device tier; -EINVAL for a slot past
 * the arena; -EBUSY for a slot in use.
 */
static int kvt_hbm_adopt_check(struct kvt_pool *pool, u32 slot)
{
	struct kvt_hbm *hbm = pool->hbm;

	lockdep_assert_held(&pool->lock);
	if (!hbm || hbm->dead)
		return -ENODEV;
	if (slot >= hbm->nr_slots)
		return -EINVAL;
	if (hbm->slot_state[slot] != KVT_SLOT_FREE)
		return -EBUSY;
	return 0;
}

/**
 * kvt_hbm_adopt() - take a block made in device memory (ADOPT)
 * @pool: the pool, its lock not held
 * @addr: the block, published, held as a user and KVT_BF_LOADING, with
 *	  its DRAM pages for the write-down
 * @slot: the slot it was made in
 *
 * The slot is the block's; the write-down to DRAM starts, and ends through
 * the pool's kvt_res_hooks.
 *
 * Return: 0, or -errno from kvt_hbm_adopt_check() or -ENOMEM with nothing
 * started.
 */
static int kvt_hbm_adopt(struct kvt_pool *pool, u32 addr, u32 slot)
{
	struct kvt_hbm_copy *c;
	struct kvt_hbm *hbm;
	int ret;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	spin_lock(&pool->lock);
	ret = kvt_hbm_adopt_check(pool, slot);
	if (ret) {
		spin_unlock(&pool->lock);
		kfree(c);
		return ret;
	}
	hbm = pool->hbm;
	kvt_slot_take(hbm, slot);
	hbm->slot_addr[slot] = addr;
	hbm->slot_state[slot] = KVT_SLOT_FROM_DEV;
	hbm->addr_slot[addr] = slot;
	hbm->stats.adopted++;
	atomic_inc(&hbm->copies);
	spin_unlock(&pool->lock);

	kvt_hbm_submit(hbm, c, slot, addr, false);
	return 0;
}

/* The HBM tier, for the residency layer. */
const struct kvt_tier_ops kvt_hbm_tier = {
	.name		= "hbm",
	.live		= kvt_hbm_live,
	.where		= kvt_hbm_where,
	.used		= kvt_hbm_used,
	.touch		= kvt_hbm_touch,
	.forget		= kvt_hbm_forget,
	.stage		= kvt_hbm_stage,
	.adopt_check	= kvt_hbm_adopt_check,
	.adopt		= kvt_hbm_adopt,
};
