// SPDX-License-Identifier: GPL-2.0
/*
 * The block index of a pool: block addresses, the free list, the states
 * and user references of blocks, over the key hash (index.c). The bottom
 * layer with index.c, which is all it calls of the module
 * (Documentation/design.rst, "Layers"); what a block's memory and copies
 * become is the residency layer's (residency.c).
 *
 * Every block address has a struct kvt_block in pool->blocks[]. Blocks are
 * chained by address, not by pointer, to keep the metadata per block small.
 * A block moves FREE -> FILLING -> READY -> DYING -> FREE; only READY
 * blocks are in the key hash and visible to commands.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/prefetch.h>
#include <linux/vmalloc.h>
#include "kvt.h"
#include "trace.h"

/*
 * The record's size is a figure of merit (dram_meta_bytes_per_block), and
 * tools/index-bench lays its records out at this size to time lookups as
 * the module walks them: a change here goes there too (KVT_BLOCK_BYTES).
 */
static_assert(sizeof(struct kvt_block) == 64);

/**
 * kvt_block_prefetch() - start fetching the records of blocks
 * @pool: the pool, its lock held
 * @addrs: block addresses, KVT_NIL ones skipped
 * @n: how many
 *
 * For a batch about to read them one after the other: their memory comes
 * in together instead of one wait each.
 */
void kvt_block_prefetch(struct kvt_pool *pool, const u32 *addrs, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		if (addrs[i] != KVT_NIL)
			prefetch(&pool->blocks[addrs[i]]);
}

/* Link a block into the key hash; lock held. */
static void kvt_block_link(struct kvt_pool *pool, u32 addr)
{
	kvt_index_add(pool, addr);
	pool->blocks[addr].state = KVT_BLK_READY;
	pool->nr_ready++;
}

/**
 * kvt_block_hash_add() - make a filled block visible under its key
 * @pool: the pool, its lock held
 * @addr: a FILLING block with its data, whose key is not in the hash
 */
void kvt_block_hash_add(struct kvt_pool *pool, u32 addr)
{
	lockdep_assert_held(&pool->lock);
	kvt_block_link(pool, addr);
	pool->nr_dirty++;
	trace_kvtier_block_ready(pool, addr);
}

/**
 * kvt_block_alloc() - take a free block address
 * @pool: the pool, its lock held
 * @key: the key of the block it will hold
 *
 * The block is FILLING, owned by the caller, without memory: it either
 * enters the hash (kvt_block_hash_add()) or goes back (kvt_block_free()).
 *
 * Return: its address, or KVT_NIL when every address holds a block.
 */
u32 kvt_block_alloc(struct kvt_pool *pool, const u64 *key)
{
	struct kvt_block *blk;
	u32 addr = pool->free;

	lockdep_assert_held(&pool->lock);
	if (addr == KVT_NIL)
		return KVT_NIL;
	blk = &pool->blocks[addr];
	pool->free = blk->next;
	blk->next = KVT_NIL;
	blk->state = KVT_BLK_FILLING;
	blk->key[0] = key[0];
	blk->key[1] = key[1];
	return addr;
}

/**
 * kvt_block_has_free() - whether a block address is free
 * @pool: the pool, its lock held
 *
 * Return: true if kvt_block_alloc() would find one.
 */
bool kvt_block_has_free(struct kvt_pool *pool)
{
	lockdep_assert_held(&pool->lock);
	return pool->free != KVT_NIL;
}

/**
 * kvt_block_free() - give a block address back to the free list
 * @pool: the pool, its lock held
 * @addr: a FILLING or DYING block without users and without memory
 */
void kvt_block_free(struct kvt_pool *pool, u32 addr)
{
	struct kvt_block *blk = &pool->blocks[addr];

	lockdep_assert_held(&pool->lock);
	kvt_block_set_umeta(pool, addr, NULL);
	blk->state = KVT_BLK_FREE;
	blk->flags = 0;
	blk->pol = 0;
	blk->nloc = KVT_NIL;
	blk->next = pool->free;
	pool->free = addr;
	trace_kvtier_block_free(pool, addr);
}

/**
 * kvt_block_restore() - enter a block found on NVMe at attach
 * @pool: the pool
 * @key: its key
 * @ndev: the device it was found on
 * @nloc: device page of its data
 * @ncrc: crc32c of its data started from 0 (see struct kvt_block)
 * @zl: where a compressed copy ends (a pool that compresses), else NULL
 * @um: the record that came with the copy (NULL: none); taken, and set
 *	to NULL, when the copy is
 * @addrp: out: the address of a key in DRAM without an NVMe copy
 *
 * A key only on NVMe already takes the newer copy (records are replayed
 * oldest first). A key in DRAM without an NVMe copy (the device was
 * detached and attached again) is left to the caller, which may adopt the
 * copy once it checked it holds the same bytes.
 *
 * Return: 0; -EEXIST for a key in DRAM without an NVMe copy (its address in
 * @addrp); -ENOSPC when the pool has no free address left.
 */
int kvt_block_restore(struct kvt_pool *pool, const u64 *key, u8 ndev,
		      u32 nloc, u32 ncrc, const struct kvt_zloc *zl,
		      struct kvt_umeta **um, u32 *addrp)
{
	struct kvt_block *blk;
	u32 addr;
	int ret = 0;

	spin_lock(&pool->lock);
	addr = kvt_block_find(pool, key);
	if (addr == KVT_NIL) {
		addr = kvt_block_alloc(pool, key);
		if (addr == KVT_NIL) {
			ret = -ENOSPC;
			goto out_unlock;
		}
		kvt_block_link(pool, addr);
		pool->nr_nvme++;
		/* Told as the residency layer tells a block only on NVMe. */
		pool->blocks[addr].evtier = KVTIER_TIER_NVME;
		kvt_ev_block(pool, addr, KVTIER_EVENT_STORED, KVTIER_TIER_NVME,
			     0, KVTIER_EVR_REPLAY);
	}
	blk = &pool->blocks[addr];
	if (blk->nloc == KVT_NIL && kvt_in_dram(blk)) {
		*addrp = addr;
		ret = -EEXIST;
		goto out_unlock;
	}
	/*
	 * A copy on another device is kept: it may be in use. One on this
	 * device is an older record of the same key (replay goes oldest
	 * first): the newer wins.
	 */
	if (blk->nloc != KVT_NIL && blk->ndev != ndev)
		goto out_unlock;
	blk->ndev = ndev;
	blk->nloc = nloc;
	blk->ncrc = ncrc;
	if (pool->zloc)
		pool->zloc[addr] = *zl;
	/*
	 * The record goes with the copy, unless someone holds the block (a
	 * read of the older copy, the writer): they may be reading the old
	 * record without the lock. Keys name immutable content; it is kept.
	 */
	if (!blk->users)
		kvt_block_set_umeta(pool, addr, um);
out_unlock:
	spin_unlock(&pool->lock);
	return ret;
}

/**
 * kvt_umeta_new() - a block record from the runtime's bytes
 * @data: the record
 * @len: its length, 1..KVTIER_META_MAX
 * @gfp: allocation flags
 *
 * Return: the record, or NULL.
 */
struct kvt_umeta *kvt_umeta_new(const void *data, u32 len, gfp_t gfp)
{
	struct kvt_umeta *um;

	if (WARN_ON_ONCE(!len || len > KVTIER_META_MAX))
		return NULL;
	um = kmalloc(struct_size(um, data, len), gfp);
	if (um) {
		um->len = len;
		memcpy(um->data, data, len);
	}
	return um;
}

/**
 * kvt_block_set_umeta() - give a block its record, freeing the one it had
 * @pool: the pool, its lock held or the block FILLING and the caller's
 * @addr: the block, not READY (its record is fixed while it is)
 * @um: the record, or NULL for none; taken: *@um is set to NULL
 */
void kvt_block_set_umeta(struct kvt_pool *pool, u32 addr,
			 struct kvt_umeta **um)
{
	struct kvt_block *blk = &pool->blocks[addr];
	struct kvt_umeta *old = blk->umeta;

	blk->umeta = um ? *um : NULL;
	if (blk->umeta) {
		atomic64_add(struct_size(blk->umeta, data, blk->umeta->len),
			     &pool->umeta_bytes);
		*um = NULL;
	}
	if (old) {
		atomic64_sub(struct_size(old, data, old->len),
			     &pool->umeta_bytes);
		kfree(old);
	}
}

/**
 * kvt_block_umeta_out() - a block's record, as the uapi returns it
 * @pool: the pool, its lock held
 * @addr: the block
 * @m: out: its record; all zero when it has none
 */
void kvt_block_umeta_out(struct kvt_pool *pool, u32 addr,
			 struct kvtier_meta *m)
{
	const struct kvt_umeta *um = pool->blocks[addr].umeta;

	lockdep_assert_held(&pool->lock);
	memset(m, 0, sizeof(*m));
	if (um) {
		m->len = um->len;
		memcpy(m->data, um->data, um->len);
	}
}

/**
 * kvt_block_unlink() - make a READY block invisible; it becomes DYING
 * @pool: the pool, its lock held
 * @addr: an unpinned READY block, off the replacement list
 *
 * Prefetch holds on it end. The residency layer (kvt_res_unlink()) frees
 * it once it has no users: now, if blocks[addr].users is 0, else the last
 * user does.
 */
void kvt_block_unlink(struct kvt_pool *pool, u32 addr)
{
	struct kvt_block *blk = &pool->blocks[addr];

	lockdep_assert_held(&pool->lock);
	kvt_index_del(pool, addr);
	if (blk->hold) {
		blk->hold = 0;
		pool->nr_held--;
	}
	blk->state = KVT_BLK_DYING;
	pool->nr_ready--;
	if (blk->nloc != KVT_NIL)
		pool->nr_nvme--;
	else if (kvt_in_dram(blk))
		pool->nr_dirty--;
	trace_kvtier_block_unlink(pool, addr);
}

/**
 * kvt_block_put_user() - drop a user reference
 * @pool: the pool, its lock held
 * @addr: the block
 *
 * Return: true when this was the last user of a DYING block: the caller
 * frees it.
 */
bool kvt_block_put_user(struct kvt_pool *pool, u32 addr)
{
	struct kvt_block *blk = &pool->blocks[addr];

	lockdep_assert_held(&pool->lock);
	return !--blk->users && blk->state == KVT_BLK_DYING;
}

/*
 * Lookups land at random in the block array and the key hash: large ones
 * are mapped with huge pages where the architecture can, to spare the TLB.
 * Only huge pages that come without a fight: an index of hundreds of MiB
 * would otherwise compact and reclaim for each of them, one after another,
 * in the pool's creator; it takes small pages instead.
 */
static void *kvt_index_alloc(size_t size)
{
	void *p;

	if (size >= PMD_SIZE) {
		p = vmalloc_huge(size, GFP_KERNEL_ACCOUNT | __GFP_ZERO |
				       __GFP_NORETRY | __GFP_NOWARN);
		if (p)
			return p;
	}
	return kvzalloc(size, GFP_KERNEL_ACCOUNT);
}

/**
 * kvt_block_index_bytes() - memory the index of a pool takes
 * @capacity: the pool's block addresses
 * @z: it compresses: where its compressed copies end too (pool->zloc)
 *
 * Return: bytes of the block array and the key hash.
 */
u64 kvt_block_index_bytes(u32 capacity, bool z)
{
	return (u64)capacity * (sizeof(struct kvt_block) +
				(z ? sizeof(struct kvt_zloc) : 0)) +
	       (u64)kvt_index_buckets(capacity) * sizeof(struct kvt_bucket);
}

/**
 * kvt_block_index_init() - allocate a pool's block array and key hash
 * @pool: a new pool with its capacity set
 *
 * Return: 0 or -ENOMEM.
 */
int kvt_block_index_init(struct kvt_pool *pool)
{
	u32 i;

	pool->nbuckets = kvt_index_buckets(pool->capacity);

	pool->blocks = kvt_index_alloc(array_size(pool->capacity,
						  sizeof(*pool->blocks)));
	if (!pool->blocks)
		return -ENOMEM;
	pool->buckets = kvt_index_alloc(array_size(pool->nbuckets,
						   sizeof(*pool->buckets)));
	if (!pool->buckets) {
		kvfree(pool->blocks);
		pool->blocks = NULL;
		return -ENOMEM;
	}
	if (pool->compress) {
		pool->zloc = kvt_index_alloc(array_size(pool->capacity,
							sizeof(*pool->zloc)));
		if (!pool->zloc) {
			kvfree(pool->buckets);
			kvfree(pool->blocks);
			pool->blocks = NULL;
			return -ENOMEM;
		}
	}

	for (i = 0; i < pool->capacity; i++) {
		pool->blocks[i].prev = KVT_NIL;
		pool->blocks[i].nloc = KVT_NIL;
		pool->blocks[i].next = i + 1;
		if (!(i & 0xffff))
			cond_resched();
	}
	pool->blocks[pool->capacity - 1].next = KVT_NIL;
	kvt_index_reset(pool);
	pool->free = 0;
	pool->index_meta = kvt_block_index_bytes(pool->capacity,
						 pool->compress);
	return 0;
}

/**
 * kvt_block_index_free() - free the index of a dead pool
 * @pool: a pool without files or mappings, whose blocks have given their
 *	  memory back (kvt_res_pool_free())
 */
void kvt_block_index_free(struct kvt_pool *pool)
{
	u32 i;

	if (!pool->blocks)
		return;
	for (i = 0; i < pool->capacity; i++) {
		struct kvt_block *blk = &pool->blocks[i];

		WARN_ON_ONCE(blk->state == KVT_BLK_FILLING || blk->users ||
			     blk->pins || (blk->state != KVT_BLK_FREE &&
					   kvt_in_dram(blk)));
		kvt_block_set_umeta(pool, i, NULL);
	}
	kvfree(pool->zloc);
	kvfree(pool->buckets);
	kvfree(pool->blocks);
	pool->zloc = NULL;
	pool->blocks = NULL;
}

/**
 * kvt_block_meta_bytes() - kernel memory used for a pool's block metadata
 * @pool: the pool
 *
 * Return: bytes of the block array, the key hash, the chunk arrays and the
 * blocks' records.
 */
u64 kvt_block_meta_bytes(struct kvt_pool *pool)
{
	return pool->index_meta + atomic64_read(&pool->chunk_meta) +
	       atomic64_read(&pool->umeta_bytes);
}
