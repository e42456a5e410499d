// SPDX-License-Identifier: GPL-2.0
/*
 * The census of a pool (KVTIER_IOC_CENSUS): its keys with their tier, by
 * cursor, for a router that resynchronises with a node, and the sequence
 * number of the last event of the pool's log the listing reflects.
 *
 * Keys are listed under pool->lock, a chunk at a time; the lock is
 * dropped between chunks. Every change the log is told of happens under
 * that lock, so each chunk is the pool as it was at some event from the
 * first chunk's number on, and a key's tier is the one the log last told
 * (blk->evtier): the listing and the log agree. A key the log has not
 * told of yet (an ADOPT not finished) is left out; its STORED follows.
 */
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include "kvt.h"

/* Keys, and addresses looked at, for one hold of pool->lock. */
#define KVT_CENSUS_CHUNK	256
#define KVT_CENSUS_SCAN		4096

/* One READY block's census entry; pool->lock held. */
static void kvt_census_one(struct kvt_pool *pool, u32 addr,
			   struct kvtier_census_entry *k)
{
	const struct kvt_block *blk = &pool->blocks[addr];
	u32 slot;

	k->key[0] = blk->key[0];
	k->key[1] = blk->key[1];
	k->addr = addr;
	k->tier = blk->evtier;
	k->flags = 0;
	kvt_res_tier(pool, addr, &slot);
	if (slot != KVT_NIL)
		k->flags |= KVTIER_CENSUS_HBM;
	if (kvt_in_dram(blk) && !(blk->flags & KVT_BF_LOADING))
		k->flags |= KVTIER_CENSUS_DRAM;
	if (blk->nloc != KVT_NIL)
		k->flags |= KVTIER_CENSUS_NVME;
	if (blk->pins)
		k->flags |= KVTIER_CENSUS_PINNED;
}

/*
 * List up to @nr keys from *@addr on into @out (and their records into
 * @meta), looking at KVT_CENSUS_SCAN addresses at most; *@addr is where
 * the next chunk starts. pool->lock held.
 */
static u32 kvt_census_chunk(struct kvt_pool *pool, u32 *addr, u32 nr,
			    struct kvtier_census_entry *out, struct kvtier_meta *meta)
{
	u32 end = min_t(u64, pool->capacity, (u64)*addr + KVT_CENSUS_SCAN);
	u32 n = 0, a;

	lockdep_assert_held(&pool->lock);
	for (a = *addr; a < end && n < nr; a++) {
		const struct kvt_block *blk = &pool->blocks[a];

		if (blk->state != KVT_BLK_READY ||
		    blk->evtier == KVTIER_TIER_NONE)
			continue;
		kvt_census_one(pool, a, &out[n]);
		if (meta)
			kvt_block_umeta_out(pool, a, &meta[n]);
		n++;
	}
	*addr = a;
	return n;
}

/**
 * kvt_census() - KVTIER_IOC_CENSUS
 * @h: the pool file
 * @k: the command, copied in; its outputs are set
 *
 * Return: 0; -EINVAL; -EOPNOTSUPP for records without KVTIER_F_META;
 * -EFAULT when an array cannot be written; -ENOMEM.
 */
int kvt_census(struct kvt_handle *h, struct kvtier_census *k)
{
	struct kvtier_census_entry __user *ukeys = u64_to_user_ptr(k->entries);
	struct kvtier_meta __user *umeta = u64_to_user_ptr(k->meta);
	struct kvt_pool *pool = h->pool;
	struct kvtier_meta *meta = NULL;
	struct kvtier_census_entry *keys;
	u32 addr, done = 0, n;
	bool first = true;
	int ret = 0;

	if (k->flags || k->__pad || memchr_inv(k->reserved, 0,
					       sizeof(k->reserved)) ||
	    !k->count || k->count > KVTIER_BATCH_MAX ||
	    (k->cursor > pool->capacity && k->cursor != KVTIER_ADDR_NONE))
		return -EINVAL;
	if (k->meta && !(h->features & KVTIER_F_META))
		return -EOPNOTSUPP;
	/* Nothing of the pool changes: a fault only ends the listing. */
	if (!access_ok(ukeys, array_size(k->count, sizeof(*ukeys))) ||
	    (umeta && !access_ok(umeta, array_size(k->count, sizeof(*umeta)))))
		return -EFAULT;

	keys = kmalloc_array(KVT_CENSUS_CHUNK, sizeof(*keys), GFP_KERNEL);
	if (k->meta)
		meta = kmalloc_array(KVT_CENSUS_CHUNK, sizeof(*meta),
				     GFP_KERNEL);
	if (!keys || (k->meta && !meta)) {
		ret = -ENOMEM;
		goto out_free;
	}

	addr = min_t(u64, k->cursor, pool->capacity);
	while (done < k->count && addr < pool->capacity) {
		spin_lock(&pool->lock);
		if (first)
			k->seq = kvt_ev_seq(pool);
		first = false;
		n = kvt_census_chunk(pool, &addr, min_t(u32, k->count - done,
							KVT_CENSUS_CHUNK),
				     keys, meta);
		spin_unlock(&pool->lock);

		if (copy_to_user(ukeys + done, keys, n * sizeof(*keys)) ||
		    (meta && copy_to_user(umeta + done, meta,
					  n * sizeof(*meta)))) {
			ret = -EFAULT;
			goto out_free;
		}
		done += n;
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto out_free;
		}
		cond_resched();
	}
	/* Nothing looked at (a cursor at the end): the log as it is. */
	if (first) {
		spin_lock(&pool->lock);
		k->seq = kvt_ev_seq(pool);
		spin_unlock(&pool->lock);
	}
	k->cursor = addr < pool->capacity ? addr : KVTIER_ADDR_NONE;
	k->done = done;
	k->log_id = kvt_ev_log_id(pool);

out_free:
	kfree(meta);
	kfree(keys);
	return ret;
}
