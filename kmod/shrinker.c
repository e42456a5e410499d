// SPDX-License-Identifier: GPL-2.0
/*
 * The shrinker: clean DRAM-tier memory back to the host under pressure.
 *
 * A clean block has a durable copy on NVMe (blk->nloc != KVT_NIL): its DRAM
 * pages can go without losing anything, and a later GET, LOOKUP with load,
 * prefetch or fault promotes it back. Under memory pressure the kernel asks
 * this shrinker for such pages; it drops the DRAM copies of clean blocks
 * from the cold end of each pool's replacement list, the way kvt_evict_one()
 * does when a pool needs room. It never touches a dirty block (the only copy
 * of acknowledged data), a pinned one (userspace holds its address), one a
 * prefetch group holds, one a command is using, or one with I/O or a
 * transition in flight.
 *
 * Reclaim may run in any task that allocates, including one that holds
 * kvt_pools_lock (pool create) or a pool's map_sem for read (an mmap fault
 * inserting pages): the shrinker only trylocks those and stops
 * (SHRINK_STOP) when they are taken. It allocates nothing and waits for no
 * I/O. It is not memory-cgroup aware: a tenant at its memory.max is not
 * shrunk on its own behalf (its PUTs get -ENOMEM), only global pressure
 * makes the pools give memory back.
 *
 * /sys/kernel/kvtier/shrinker shows what it did, in one line of columns:
 * count calls, scan calls, scans stopped on a busy lock, blocks evicted,
 * pages freed.
 */
#include <linux/mm.h>
#include <linux/fs.h>
#include <linux/shrinker.h>
#include <linux/sysfs.h>
#include <linux/atomic.h>
#include "kvt.h"

/* Ineligible blocks skipped at the cold end of a list before giving up. */
#define KVT_SHRINK_SKIP		256

/* What the shrinker did, for sysfs and the tests. */
static atomic64_t kvt_shrink_counts;
static atomic64_t kvt_shrink_scans;
static atomic64_t kvt_shrink_stops;
static atomic64_t kvt_shrink_blocks;
static atomic64_t kvt_shrink_pages;

/* A clean block the shrinker may take the DRAM copy of. */
static bool kvt_shrinkable(const struct kvt_block *blk)
{
	return blk->state == KVT_BLK_READY && kvt_in_dram(blk) &&
	       blk->nloc != KVT_NIL && !blk->pins && !blk->hold &&
	       !blk->users && !blk->flags;
}

static int kvt_shrink_count_pool(struct kvt_pool *pool, void *arg)
{
	unsigned long *count = arg;
	u32 clean, busy;

	/*
	 * An estimate without a walk: DRAM blocks less dirty, pinned and
	 * held ones (those may overlap, so this may count low; the scan
	 * checks each block).
	 */
	spin_lock(&pool->lock);
	clean = pool->nr_dram - min(pool->nr_dram, pool->nr_dirty);
	busy = pool->nr_pinned + pool->nr_held + pool->nr_loading +
	       pool->nr_wb + pool->nr_reserved;
	clean -= min(clean, busy);
	spin_unlock(&pool->lock);
	*count += (unsigned long)clean * pool->pages_per_block;
	return 0;
}

static unsigned long kvt_shrink_count(struct shrinker *s,
				      struct shrink_control *sc)
{
	unsigned long count = 0;

	atomic64_inc(&kvt_shrink_counts);
	if (kvt_pools_try_walk(kvt_shrink_count_pool, &count))
		return 0;
	return count ?: SHRINK_EMPTY;
}

/* struct kvt_shrink - one scan's progress */
struct kvt_shrink {
	unsigned long want;	/* pages still to free */
	unsigned long freed;	/* pages freed */
	unsigned long scanned;	/* pages looked at */
	bool contended;		/* a pool's map_sem was busy */
};

/* A walk of one of the policy's lists, from its cold end. */
typedef u32 (*kvt_shrink_next_t)(struct kvt_pool *pool, u32 addr);

static u32 kvt_shrink_walk(struct kvt_pool *pool, struct kvt_shrink *sk,
			   kvt_shrink_next_t next, unsigned int *skipped)
	__must_hold(&pool->lock)
{
	u32 addr = next(pool, KVT_NIL);

	while (addr != KVT_NIL && (*skipped)++ < KVT_SHRINK_SKIP) {
		struct kvt_block *blk = &pool->blocks[addr];
		u32 prev = next(pool, addr);

		sk->scanned += pool->pages_per_block;
		if (kvt_shrinkable(blk) && !kvt_res_rescue(pool, addr))
			return addr;
		addr = prev;
	}
	return KVT_NIL;
}

/*
 * The coldest shrinkable block of a pool, or KVT_NIL: from the clean list
 * first, where a pool keeps one (policy_clean_first), which holds only
 * blocks with an NVMe copy; the other list holds the rest.
 */
static u32 kvt_shrink_victim(struct kvt_pool *pool, struct kvt_shrink *sk)
	__must_hold(&pool->lock)
{
	unsigned int skipped = 0;
	u32 addr;

	addr = kvt_shrink_walk(pool, sk, kvt_policy_next_clean, &skipped);
	if (addr == KVT_NIL)
		addr = kvt_shrink_walk(pool, sk, kvt_policy_next, &skipped);
	return addr;
}

/*
 * Faults hold map_sem for read while they insert pages, and may allocate
 * (page tables) and so enter reclaim: an eviction that waited for map_sem
 * here could wait for this very task, or for one that waits for reclaim.
 * So the shrinker takes map_sem only with a trylock and keeps it for write
 * over its evictions of the pool: no fault can be mapping a block then,
 * and kvt_res_evict_dram_locked() only zaps. The zap takes the
 * mapping's i_mmap_rwsem for write; a successful trylock of it first
 * proves this task does not hold it (reclaim from inside an mmap or
 * munmap of this pool).
 */
static bool kvt_shrink_lock(struct kvt_pool *pool)
{
	struct address_space *mapping = pool->inode->i_mapping;

	if (!down_write_trylock(&pool->map_sem))
		return false;
	if (!i_mmap_trylock_read(mapping)) {
		up_write(&pool->map_sem);
		return false;
	}
	i_mmap_unlock_read(mapping);
	return true;
}

static int kvt_shrink_pool(struct kvt_pool *pool, void *arg)
{
	struct kvt_shrink *sk = arg;
	u32 addr;

	if (!READ_ONCE(pool->nr_nvme))
		return 0;
	if (!kvt_shrink_lock(pool)) {
		sk->contended = true;
		return 0;
	}

	spin_lock(&pool->lock);
	while (sk->freed < sk->want) {
		addr = kvt_shrink_victim(pool, sk);
		if (addr == KVT_NIL)
			break;
		kvt_res_evict_begin(pool, addr);
		spin_unlock(&pool->lock);
		kvt_res_evict_dram_locked(pool, addr);
		sk->freed += pool->pages_per_block;
		atomic64_inc(&kvt_shrink_blocks);
		cond_resched();
		spin_lock(&pool->lock);
	}
	spin_unlock(&pool->lock);
	up_write(&pool->map_sem);
	return sk->freed >= sk->want;
}

static unsigned long kvt_shrink_scan(struct shrinker *s,
				     struct shrink_control *sc)
{
	struct kvt_shrink sk = { .want = sc->nr_to_scan };

	atomic64_inc(&kvt_shrink_scans);
	if (kvt_pools_try_walk(kvt_shrink_pool, &sk)) {
		atomic64_inc(&kvt_shrink_stops);
		return SHRINK_STOP;
	}
	sc->nr_scanned = sk.scanned;
	atomic64_add(sk.freed, &kvt_shrink_pages);
	/*
	 * Nothing freed: stop. The caller counts down what count_objects
	 * promised by nr_scanned, which is 0 when no block was looked at;
	 * going on would call again for ever.
	 */
	if (!sk.freed) {
		atomic64_inc(&kvt_shrink_stops);
		return SHRINK_STOP;
	}
	return sk.freed;
}

static struct shrinker kvt_shrinker = {
	.count_objects	= kvt_shrink_count,
	.scan_objects	= kvt_shrink_scan,
	.seeks		= DEFAULT_SEEKS,
};

/**
 * kvt_shrinker_show() - the line of /sys/kernel/kvtier/shrinker
 * @buf: the sysfs page
 *
 * Return: bytes written.
 */
ssize_t kvt_shrinker_show(char *buf)
{
	return sysfs_emit(buf, "%lld %lld %lld %lld %lld\n",
			  atomic64_read(&kvt_shrink_counts),
			  atomic64_read(&kvt_shrink_scans),
			  atomic64_read(&kvt_shrink_stops),
			  atomic64_read(&kvt_shrink_blocks),
			  atomic64_read(&kvt_shrink_pages));
}

/**
 * kvt_shrinker_init() - register the shrinker
 *
 * Return: 0 or -errno.
 */
int kvt_shrinker_init(void)
{
	return register_shrinker(&kvt_shrinker, "kvtier");
}

/**
 * kvt_shrinker_exit() - unregister the shrinker; no scan runs after it
 */
void kvt_shrinker_exit(void)
{
	unregister_shrinker(&kvt_shrinker);
}
