// SPDX-License-Identifier: GPL-2.0
/*
 * Replacement policy: least recently used.
 *
 * The policy sees the READY blocks in DRAM that are not pinned, loading or
 * losing their DRAM copy, through four calls made under pool->lock: insert
 * (a block became evictable), touch (it was used), remove (it stopped
 * being evictable) and victim (which to evict). Blocks being written to
 * NVMe stay in place; victim skips them. The list is linked by block
 * address through kvt_block.prev/next.
 */
#include "kvtier.h"

#define KVT_VICTIM_SCAN		256	/* busy blocks skipped at most */

static bool kvt_lru_linked(struct kvt_pool *pool, u32 addr)
{
	return pool->lru.head == addr || pool->blocks[addr].prev != KVT_NIL;
}

/**
 * kvt_policy_insert() - a block became evictable
 * @pool: the pool, its lock held
 * @addr: a READY block without pins, not in the list
 */
void kvt_policy_insert(struct kvt_pool *pool, u32 addr)
{
	struct kvt_block *blk = &pool->blocks[addr];

	lockdep_assert_held(&pool->lock);
	if (WARN_ON_ONCE(kvt_lru_linked(pool, addr)))
		return;
	blk->prev = KVT_NIL;
	blk->next = pool->lru.head;
	if (pool->lru.head != KVT_NIL)
		pool->blocks[pool->lru.head].prev = addr;
	else
		pool->lru.tail = addr;
	pool->lru.head = addr;
	pool->lru.nr++;
}

/**
 * kvt_policy_remove() - a block stopped being evictable
 * @pool: the pool, its lock held
 * @addr: the block; a no-op if it is not in the list (pinned)
 */
void kvt_policy_remove(struct kvt_pool *pool, u32 addr)
{
	struct kvt_block *blk = &pool->blocks[addr];

	lockdep_assert_held(&pool->lock);
	if (!kvt_lru_linked(pool, addr))
		return;
	if (blk->prev != KVT_NIL)
		pool->blocks[blk->prev].next = blk->next;
	else
		pool->lru.head = blk->next;
	if (blk->next != KVT_NIL)
		pool->blocks[blk->next].prev = blk->prev;
	else
		pool->lru.tail = blk->prev;
	blk->prev = KVT_NIL;
	blk->next = KVT_NIL;
	pool->lru.nr--;
}

/**
 * kvt_policy_touch() - a block was used
 * @pool: the pool, its lock held
 * @addr: a READY block; pinned blocks are not in the list and stay out
 */
void kvt_policy_touch(struct kvt_pool *pool, u32 addr)
{
	lockdep_assert_held(&pool->lock);
	if (pool->lru.head == addr || !kvt_lru_linked(pool, addr))
		return;
	kvt_policy_remove(pool, addr);
	kvt_policy_insert(pool, addr);
}

/**
 * kvt_policy_victim() - the block to evict next
 * @pool: the pool, its lock held
 *
 * Skips blocks in use: copied out by a GET, or being written to NVMe.
 *
 * Return: a block address, or KVT_NIL if nothing can be evicted.
 */
u32 kvt_policy_victim(struct kvt_pool *pool)
{
	u32 addr = pool->lru.tail;
	unsigned int scanned = 0;

	lockdep_assert_held(&pool->lock);
	while (addr != KVT_NIL && scanned++ < KVT_VICTIM_SCAN) {
		const struct kvt_block *blk = &pool->blocks[addr];

		if (!blk->users && !blk->flags)
			return addr;
		addr = pool->blocks[addr].prev;
	}
	return KVT_NIL;
}
