// SPDX-License-Identifier: GPL-2.0
/*
 * Reservations: zero-copy store (KVTIER_IOC_RESERVE, COMMIT, ABORT).
 *
 * RESERVE takes a block for a key as a PUT would (FILLING, pages from the
 * pool's DRAM share) but copies nothing: the block belongs to the pool
 * file until COMMIT publishes it or ABORT gives it back, and meanwhile its
 * pages are writable through that file's reservation window (mmap.c). No
 * command and no other file's mapping sees a FILLING block.
 *
 * A file's reservations are an xarray, block address -> state: OPEN (its
 * window pages may be mapped) or SEALED (a COMMIT is taking its checksum;
 * faults refuse it). Both COMMIT and ABORT seal the block, wait out the
 * faults that were mapping its pages (pool->map_sem) and unmap it from the
 * window, so once COMMIT has taken the checksum nothing of the file can
 * write the block through a mapping. A device still writing into pages it
 * pinned is the caller's to have stopped (the uapi header says so); what it
 * writes afterwards cannot reach another pool: the pages stay this block's
 * until they are freed, and pages held elsewhere are never reused
 * (tier_dram.c).
 *
 * Bounds: reserve_max per file (-EDQUOT past it), and the reservations of
 * all files of a pool at most half its DRAM share (-ENOSPC), so PUTs keep
 * room. The file's release aborts what is left (close, SIGKILL).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mm.h>
#include <linux/xarray.h>
#include "kvt.h"

#define KVT_RESV_OPEN		1
#define KVT_RESV_SEALED		2

static unsigned int kvt_reserve_max = 256;
module_param_named(reserve_max, kvt_reserve_max, uint, 0444);
MODULE_PARM_DESC(reserve_max,
		 "Most blocks one pool file may hold reserved (1 to 65536). Default: 256");

/**
 * kvt_reserve_param_check() - whether reserve_max is in range
 *
 * Return: 0 or -EINVAL.
 */
int kvt_reserve_param_check(void)
{
	if (!kvt_reserve_max || kvt_reserve_max > 65536) {
		pr_err("reserve_max=%u out of range 1..65536\n",
		       kvt_reserve_max);
		return -EINVAL;
	}
	return 0;
}

/* The most blocks all files of a pool may hold reserved at once. */
static u32 kvt_reserve_pool_max(struct kvt_pool *pool)
{
	return max(1U, pool->dram_blocks / 2);
}

/**
 * kvt_reserve_open() - whether a file holds @addr reserved and writable
 * @h: the pool file's handle
 * @addr: a block address below the capacity
 *
 * For the window's faults, under pool->map_sem (read).
 *
 * Return: true if so.
 */
bool kvt_reserve_open(struct kvt_handle *h, u64 addr)
{
	return xa_load(&h->resv, addr) == xa_mk_value(KVT_RESV_OPEN);
}

/* Unmap a block's pages from the reservation window of every mapping. */
static void kvt_reserve_unmap(struct kvt_pool *pool, u32 addr)
{
	/* Faults that saw the reservation open end first. */
	down_write(&pool->map_sem);
	up_write(&pool->map_sem);
	unmap_mapping_range(pool->inode->i_mapping,
			    KVTIER_RESERVE_WINDOW(pool->capacity, addr,
						  pool->block_size),
			    pool->block_size, 1);
}

/* Give a reserved block back; it is off the file's xarray already. */
static void kvt_reserve_drop(struct kvt_handle *h, u32 addr)
{
	struct kvt_pool *pool = h->pool;

	spin_lock(&pool->lock);
	pool->nr_reserved--;
	spin_unlock(&pool->lock);
	h->nr_resv--;
	kvt_res_new_abort(pool, addr);
}

/*
 * The reservation a COMMIT or ABORT entry names, sealed: 0, or -ENOENT
 * (none of this key at this address), -EALREADY (it was committed).
 */
static int kvt_reserve_seal(struct kvt_handle *h, struct kvtier_block *e)
{
	struct kvt_pool *pool = h->pool;
	const u64 *key;
	void *entry;
	int ret;

	if (e->addr >= pool->capacity)
		return -ENOENT;
	entry = xa_load(&h->resv, e->addr);
	if (entry != xa_mk_value(KVT_RESV_OPEN)) {
		/* Committed by this file: the key is READY at the address. */
		spin_lock(&pool->lock);
		ret = -ENOENT;
		if (pool->blocks[e->addr].state == KVT_BLK_READY &&
		    kvt_block_find(pool, e->key) == e->addr)
			ret = -EALREADY;
		spin_unlock(&pool->lock);
		return ret;
	}
	/* The file's own FILLING block: its key is stable. */
	key = pool->blocks[e->addr].key;
	if (key[0] != e->key[0] || key[1] != e->key[1])
		return -ENOENT;
	/* Replacing a present entry allocates nothing. */
	xa_store(&h->resv, e->addr, xa_mk_value(KVT_RESV_SEALED), GFP_KERNEL);
	kvt_reserve_unmap(pool, e->addr);
	return 0;
}

/**
 * kvt_reserve_one() - RESERVE one entry
 * @h: the pool file, read-write, its pin_lock held (it orders the file's
 *     reservations: nr_resv)
 * @e: the entry: in @key, out @addr and @tier
 * @replace: reserve a key that is in the pool too
 *
 * Return: 0 or the entry's -errno (the uapi header lists them).
 */
int kvt_reserve_one(struct kvt_handle *h, struct kvtier_block *e,
		    bool replace)
{
	struct kvt_pool *pool = h->pool;
	u32 addr;
	int ret;

	if (h->nr_resv >= kvt_reserve_max)
		return -EDQUOT;
	spin_lock(&pool->lock);
	if (!replace && kvt_block_find(pool, e->key) != KVT_NIL) {
		spin_unlock(&pool->lock);
		return -EEXIST;
	}
	if (pool->nr_reserved >= kvt_reserve_pool_max(pool)) {
		spin_unlock(&pool->lock);
		return -ENOSPC;
	}
	pool->nr_reserved++;
	ret = kvt_res_new(pool, e->key, &addr);
	if (ret)
		goto out_unreserve;
	/*
	 * The window shows the pages as they are: zeroed by the allocator
	 * where the kernel zeroes (init_on_alloc), else zeroed here. Pages
	 * from the pool's stash hold an earlier block of this pool, which
	 * any read-write file of it may read anyway.
	 */
	if (!want_init_on_alloc(GFP_KERNEL))
		kvt_dram_zero(pool, &pool->blocks[addr]);
	ret = xa_insert(&h->resv, addr, xa_mk_value(KVT_RESV_OPEN),
			GFP_KERNEL);
	if (ret) {
		kvt_res_new_abort(pool, addr);
		goto out_unreserve;
	}
	h->nr_resv++;
	e->addr = addr;
	e->tier = KVTIER_TIER_DRAM;
	e->slot = KVTIER_SLOT_NONE;
	return 0;

out_unreserve:
	spin_lock(&pool->lock);
	pool->nr_reserved--;
	spin_unlock(&pool->lock);
	return ret;
}

/**
 * kvt_commit_one() - COMMIT one entry
 * @h: the pool file, its pin_lock held
 * @e: the entry: in @key and @addr
 * @replace: replace a block of the key stored meanwhile
 * @um: the block's record, or NULL for none; taken (set to NULL) on success
 *
 * Return: 0 or the entry's -errno (the uapi header lists them).
 */
int kvt_commit_one(struct kvt_handle *h, struct kvtier_block *e, bool replace,
		   struct kvt_umeta **um)
{
	struct kvt_pool *pool = h->pool;
	struct kvt_block *blk;
	u32 addr;
	int ret;

	ret = kvt_reserve_seal(h, e);
	if (ret)
		return ret;
	addr = e->addr;
	blk = &pool->blocks[addr];
	/* FILLING: its owner sets the checksum without the lock. */
	blk->ncrc = kvt_dram_crc(pool, blk, 0);

	ret = kvt_put_publish(pool, e->key, addr, replace, true, um);
	if (ret) {
		/* It stays reserved, writable again. */
		xa_store(&h->resv, addr, xa_mk_value(KVT_RESV_OPEN),
			 GFP_KERNEL);
		return ret;
	}
	xa_erase(&h->resv, addr);
	h->nr_resv--;
	e->tier = KVTIER_TIER_DRAM;
	e->slot = KVTIER_SLOT_NONE;
	return 0;
}

/**
 * kvt_abort_one() - ABORT one entry
 * @h: the pool file, its pin_lock held
 * @e: the entry: in @key and @addr
 *
 * Return: 0 or the entry's -errno (the uapi header lists them).
 */
int kvt_abort_one(struct kvt_handle *h, struct kvtier_block *e)
{
	int ret = kvt_reserve_seal(h, e);

	if (ret)
		return ret;
	xa_erase(&h->resv, e->addr);
	kvt_reserve_drop(h, e->addr);
	e->tier = KVTIER_TIER_NONE;
	e->slot = KVTIER_SLOT_NONE;
	return 0;
}

/**
 * kvt_reserve_release() - give back every block a file holds reserved
 * @h: the handle of a pool file being released: no mapping of it is left
 *     (each holds the file), so none of its window pages is mapped
 */
void kvt_reserve_release(struct kvt_handle *h)
{
	unsigned long addr;
	void *entry;

	xa_for_each(&h->resv, addr, entry) {
		xa_erase(&h->resv, addr);
		kvt_reserve_drop(h, addr);
	}
	xa_destroy(&h->resv);
}
