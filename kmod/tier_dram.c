// SPDX-License-Identifier: GPL-2.0
/*
 * DRAM tier: the pages that hold a block.
 *
 * A block is an array of chunks of 2^order pages each. The pool prefers
 * the largest order that divides the block (up to MAX_ORDER - 1) and falls
 * back to single pages when high-order memory is short. Each chunk is
 * split into order-0 pages right away, so every page can be mapped into
 * userspace and refcounted on its own; a chunk stays physically contiguous
 * so copies run over it in one go.
 *
 * Pages come from the pool's NUMA node (strictly, with __GFP_THISNODE) and
 * are charged to the memory cgroup of the process that created the pool:
 * the pool's owner pays for what the pool holds, whoever writes it.
 */
#include <linux/mm.h>
#include <linux/gfp.h>
#include <linux/slab.h>
#include <linux/highmem.h>
#include <linux/uaccess.h>
#include <linux/uio.h>
#include <linux/sched/mm.h>
#include <linux/memcontrol.h>
#include <linux/crc32c.h>
#include <linux/sysfs.h>
#include "kvt.h"

static unsigned int kvt_nr_chunks(struct kvt_pool *pool, unsigned int order)
{
	return pool->pages_per_block >> order;
}

atomic64_t kvt_cpu_bytes[KVT_CPU_NR];

/**
 * kvt_cpu_bytes_show() - /sys/kernel/kvtier/cpu_bytes
 * @buf: the sysfs page
 *
 * Return: the line's length: bytes copied, checksummed, zeroed.
 */
ssize_t kvt_cpu_bytes_show(char *buf)
{
	return sysfs_emit(buf, "%lld %lld %lld\n",
			  atomic64_read(&kvt_cpu_bytes[KVT_CPU_COPY]),
			  atomic64_read(&kvt_cpu_bytes[KVT_CPU_CRC]),
			  atomic64_read(&kvt_cpu_bytes[KVT_CPU_ZERO]));
}

static struct page *kvt_chunk(struct kvt_pool *pool, struct kvt_block *blk,
			      unsigned int i)
{
	if (kvt_nr_chunks(pool, blk->order) == 1)
		return blk->mem.page;
	return blk->mem.chunks[i];
}

static void kvt_chunk_free(struct page *page, unsigned int order)
{
	unsigned int i;

	/* put_page: a page may still be held by a GUP user of a mapping. */
	for (i = 0; i < 1U << order; i++)
		put_page(nth_page(page, i));
}

static struct page *kvt_chunk_alloc(struct kvt_pool *pool, unsigned int order)
{
	/*
	 * __GFP_RETRY_MAYFAIL: a pool at its memory cgroup's limit fails the
	 * PUT with -ENOMEM instead of waking the cgroup's OOM killer.
	 */
	gfp_t gfp = GFP_KERNEL_ACCOUNT | __GFP_NOWARN | __GFP_RETRY_MAYFAIL;
	struct page *page;

	if (order)
		gfp |= __GFP_NORETRY;
	if (pool->nid == NUMA_NO_NODE) {
		page = alloc_pages(gfp, order);
	} else {
		page = alloc_pages_node(pool->nid, gfp | __GFP_THISNODE,
					order);
	}
	if (page && order)
		split_page(page, order);
	/* init_on_alloc (Debian's default) zeroes every page it hands out */
	if (page && want_init_on_alloc(gfp))
		atomic64_add(PAGE_SIZE << order, &kvt_cpu_bytes[KVT_CPU_ZERO]);
	return page;
}

static int kvt_dram_alloc_order(struct kvt_pool *pool, struct kvt_block *blk,
				unsigned int order)
{
	unsigned int nr = kvt_nr_chunks(pool, order);
	struct page **chunks;
	unsigned int i;

	if (nr == 1) {
		blk->mem.page = kvt_chunk_alloc(pool, order);
		return blk->mem.page ? 0 : -ENOMEM;
	}

	/* Like the pages (kvt_chunk_alloc()): -ENOMEM, not the OOM killer. */
	chunks = kvmalloc_array(nr, sizeof(*chunks), GFP_KERNEL_ACCOUNT |
				__GFP_RETRY_MAYFAIL | __GFP_NOWARN);
	if (!chunks)
		return -ENOMEM;
	for (i = 0; i < nr; i++) {
		chunks[i] = kvt_chunk_alloc(pool, order);
		if (!chunks[i])
			goto out_free_chunks;
		cond_resched();
	}
	blk->mem.chunks = chunks;
	atomic64_add(nr * sizeof(*chunks), &pool->chunk_meta);
	return 0;

out_free_chunks:
	while (i--)
		kvt_chunk_free(chunks[i], order);
	kvfree(chunks);
	return -ENOMEM;
}

/**
 * kvt_dram_free() - give a block's pages back
 * @pool: the pool
 * @blk: a block with memory that no mapping and no command uses
 */
static void kvt_dram_free(struct kvt_pool *pool, struct kvt_block *blk)
{
	unsigned int nr = kvt_nr_chunks(pool, blk->order);
	unsigned int i;

	if (!kvt_in_dram(blk))
		return;
	for (i = 0; i < nr; i++)
		kvt_chunk_free(kvt_chunk(pool, blk, i), blk->order);
	if (nr > 1) {
		kvfree(blk->mem.chunks);
		atomic64_sub(nr * sizeof(*blk->mem.chunks), &pool->chunk_meta);
	}
	blk->mem.page = NULL;
	atomic64_sub(pool->block_size, &kvt_dram_used);
}

/*
 * Pages of a block evicted to make room go to the pool's next block, not
 * back to the allocator, which would zero them again (init_on_alloc) for
 * that block's bytes to overwrite: the stash, up to KVT_STASH_BLOCKS, is
 * filled by evictions that make room (kvt_dram_retire()) and emptied by the
 * allocations that follow. Its pages stay charged to the pool's memory
 * cgroup and counted in kvt_dram_used; they are within the pool's DRAM
 * share, which the evicted block no longer uses. Only this pool's blocks
 * ever had them, and a new block is wholly written before it is READY.
 */
static bool kvt_dram_unstash(struct kvt_pool *pool, struct kvt_block *blk)
{
	struct kvt_stash *s;
	bool got = false;

	spin_lock(&pool->stash_lock);
	if (pool->nr_stash) {
		s = &pool->stash[--pool->nr_stash];
		blk->mem = s->mem;
		blk->order = s->order;
		got = true;
	}
	spin_unlock(&pool->stash_lock);
	return got;
}

/* Whether nobody else holds a page of the block (a GUP user of a mapping). */
static bool kvt_dram_sole(struct kvt_pool *pool, struct kvt_block *blk)
{
	unsigned int i, j, nr = kvt_nr_chunks(pool, blk->order);

	for (i = 0; i < nr; i++) {
		struct page *chunk = kvt_chunk(pool, blk, i);

		for (j = 0; j < 1U << blk->order; j++)
			if (page_ref_count(nth_page(chunk, j)) != 1)
				return false;
	}
	return true;
}

/**
 * kvt_dram_retire() - take back the pages of a block evicted to make room
 * @pool: the pool
 * @blk: a block with memory that no mapping and no command uses
 *
 * They go to the stash for the pool's next block, unless it is full or a
 * page is still held elsewhere (its bytes must not change under that
 * holder): then they are freed.
 */
static void kvt_dram_retire(struct kvt_pool *pool, struct kvt_block *blk)
{
	bool kept = false;

	if (!kvt_in_dram(blk))
		return;
	if (kvt_dram_sole(pool, blk)) {
		spin_lock(&pool->stash_lock);
		if (pool->nr_stash < KVT_STASH_BLOCKS) {
			pool->stash[pool->nr_stash].mem = blk->mem;
			pool->stash[pool->nr_stash].order = blk->order;
			pool->nr_stash++;
			kept = true;
		}
		spin_unlock(&pool->stash_lock);
	}
	if (kept)
		blk->mem.page = NULL;
	else
		kvt_dram_free(pool, blk);
}

/**
 * kvt_dram_trim() - free the pages a pool keeps for its next blocks
 * @pool: the pool
 */
static void kvt_dram_trim(struct kvt_pool *pool)
{
	struct kvt_block tmp = { };

	while (kvt_dram_unstash(pool, &tmp)) {
		kvt_dram_free(pool, &tmp);
		tmp.mem.page = NULL;
	}
}

/**
 * kvt_dram_alloc() - give a block its pages
 * @pool: the pool
 * @blk: a FILLING block without memory, owned by the caller
 *
 * Pages an eviction kept come first (kvt_dram_retire()).
 *
 * Return: 0 or -ENOMEM (node or memory cgroup out of memory).
 */
static int kvt_dram_alloc(struct kvt_pool *pool, struct kvt_block *blk)
{
	struct mem_cgroup *old_memcg;
	int ret;

	if (kvt_dram_unstash(pool, blk))
		return 0;
	old_memcg = set_active_memcg(pool->memcg);

	blk->order = pool->chunk_order;
	ret = kvt_dram_alloc_order(pool, blk, blk->order);
	if (ret && blk->order) {
		blk->order = 0;
		ret = kvt_dram_alloc_order(pool, blk, 0);
	}
	set_active_memcg(old_memcg);
	if (!ret)
		atomic64_add(pool->block_size, &kvt_dram_used);
	return ret;
}

/* The DRAM tier, for the residency layer. */
const struct kvt_tier_ops kvt_dram_tier = {
	.name	= "dram",
	.alloc	= kvt_dram_alloc,
	.free	= kvt_dram_free,
	.retire	= kvt_dram_retire,
	.trim	= kvt_dram_trim,
};

/*
 * The checksum of a block filled from user memory is taken piece by piece
 * right behind the copy, while the piece is still in the CPU's cache: the
 * bytes are read from memory once, not once more when they are written to
 * NVMe.
 */
#define KVT_CRC_PIECE		(64 * 1024)

/*
 * Copies to and from user memory run with page faults disabled; the pages
 * a copy stops at are faulted in through get_user_pages' path
 * (fault_in_iov_iter_*), which asks for the access it needs, and the copy
 * goes on. A fault is then never taken in the middle of a copy: it cannot
 * spin there (an io_uring worker of an exiting process was once seen
 * faulting on its destination for minutes, never reaching a check for its
 * SIGKILL), a fatal signal is seen between any two tries, and a fault on
 * a mapping of this module (the source or destination is a pool's
 * mapping) runs with nothing of the copy's held. KVT_COPY_TRIES tries in
 * a row that move nothing although the pages were faulted in end it.
 */
#define KVT_COPY_TRIES		8

/* Copy @n bytes of a block to user memory; false when it could not. */
static bool kvt_copy_piece_out(const void *src, size_t n, struct iov_iter *to)
{
	unsigned int stuck = 0;
	size_t done;

	while (n) {
		/* A killed task's memory is not written. */
		if (fatal_signal_pending(current))
			return false;
		pagefault_disable();
		done = copy_to_iter(src, n, to);
		pagefault_enable();
		src += done;
		n -= done;
		if (!n)
			break;
		stuck = done ? 0 : stuck + 1;
		if (stuck > KVT_COPY_TRIES ||
		    fault_in_iov_iter_writeable(to, n) == n)
			return false;
		cond_resched();
	}
	return true;
}

/* Copy @n bytes of user memory into a block; false when it could not. */
static bool kvt_copy_piece_in(void *dst, size_t n, struct iov_iter *from)
{
	unsigned int stuck = 0;
	size_t done;

	while (n) {
		/* A killed task's memory is not read. */
		if (fatal_signal_pending(current))
			return false;
		pagefault_disable();
		done = copy_from_iter(dst, n, from);
		pagefault_enable();
		dst += done;
		n -= done;
		if (!n)
			break;
		stuck = done ? 0 : stuck + 1;
		if (stuck > KVT_COPY_TRIES ||
		    fault_in_iov_iter_readable(from, n) == n)
			return false;
		cond_resched();
	}
	return true;
}

/**
 * kvt_dram_copy_in() - fill a block from user memory
 * @pool: the pool
 * @blk: a FILLING block with memory
 * @from: block_size bytes of user memory: one buffer or a segment list
 *
 * Sets the block's ncrc, the crc32c of its bytes (see struct kvt_block).
 *
 * Return: bytes not copied; 0 on success.
 */
size_t kvt_dram_copy_in(struct kvt_pool *pool, struct kvt_block *blk,
			struct iov_iter *from)
{
	size_t len = PAGE_SIZE << blk->order, off, n;
	unsigned int i, nr = kvt_nr_chunks(pool, blk->order);
	u32 crc = 0;

	for (i = 0; i < nr; i++) {
		void *dst = page_address(kvt_chunk(pool, blk, i));

		for (off = 0; off < len; off += n) {
			n = min_t(size_t, len - off, KVT_CRC_PIECE);
			if (!kvt_copy_piece_in(dst + off, n, from))
				return (size_t)(nr - i) * len - off;
			crc = crc32c(crc, dst + off, n);
		}
		cond_resched();
	}
	blk->ncrc = crc;
	atomic64_add(pool->block_size, &kvt_cpu_bytes[KVT_CPU_COPY]);
	atomic64_add(pool->block_size, &kvt_cpu_bytes[KVT_CPU_CRC]);
	return 0;
}

/**
 * kvt_dram_crc() - the crc32c of a block's DRAM copy
 * @pool: the pool
 * @blk: a block in DRAM, its bytes stable (held by the caller)
 * @seed: where the crc starts
 *
 * Return: the crc32c of the block's bytes, started from @seed.
 */
u32 kvt_dram_crc(struct kvt_pool *pool, struct kvt_block *blk, u32 seed)
{
	u32 i, len = PAGE_SIZE << blk->order;
	u32 nr = kvt_nr_chunks(pool, blk->order);

	for (i = 0; i < nr; i++)
		seed = crc32c(seed, page_address(kvt_chunk(pool, blk, i)), len);
	atomic64_add(pool->block_size, &kvt_cpu_bytes[KVT_CPU_CRC]);
	return seed;
}

/**
 * kvt_copy_out() - copy kernel memory to user memory, the way blocks are
 * @src: the bytes
 * @len: how many
 * @to: user memory: one buffer or a segment list
 *
 * Return: true when all of it was copied.
 */
bool kvt_copy_out(const void *src, size_t len, struct iov_iter *to)
{
	size_t off, n;

	for (off = 0; off < len; off += n) {
		n = min_t(size_t, len - off, KVT_CRC_PIECE);
		if (!kvt_copy_piece_out(src + off, n, to))
			return false;
		cond_resched();
	}
	atomic64_add(len, &kvt_cpu_bytes[KVT_CPU_COPY]);
	return true;
}

/**
 * kvt_dram_copy_out() - copy a range of a block to user memory
 * @pool: the pool
 * @blk: a READY block the caller holds as a user
 * @start: the first byte, < block_size
 * @len: bytes from @start, within the block
 * @to: @len bytes of user memory: one buffer or a segment list
 *
 * Return: bytes not copied; 0 on success.
 */
size_t kvt_dram_copy_out(struct kvt_pool *pool, struct kvt_block *blk,
			 u64 start, u64 len, struct iov_iter *to)
{
	size_t clen = PAGE_SIZE << blk->order, off, n;
	u64 left = len;
	unsigned int i = start / clen;

	off = start % clen;
	for (; left; i++, off = 0) {
		const void *src = page_address(kvt_chunk(pool, blk, i));

		for (; off < clen && left; off += n, left -= n) {
			n = min3(clen - off, (size_t)KVT_CRC_PIECE,
				 (size_t)left);
			if (!kvt_copy_piece_out(src + off, n, to))
				return left;
		}
		cond_resched();
	}
	atomic64_add(len, &kvt_cpu_bytes[KVT_CPU_COPY]);
	return 0;
}

/**
 * kvt_dram_crc_pages() - the crc32c of a run of a block's pages
 * @pool: the pool
 * @blk: a block in DRAM, its bytes stable (held by the caller)
 * @first: the first page, < pages_per_block
 * @nr: pages from @first, within the block
 *
 * Return: their crc32c, started from 0.
 */
u32 kvt_dram_crc_pages(struct kvt_pool *pool, struct kvt_block *blk,
		       u32 first, u32 nr)
{
	u32 i, crc = 0;

	for (i = 0; i < nr; i++)
		crc = crc32c(crc, page_address(kvt_dram_page(pool, blk,
							     first + i)),
			     PAGE_SIZE);
	atomic64_add((u64)nr << PAGE_SHIFT, &kvt_cpu_bytes[KVT_CPU_CRC]);
	return crc;
}

/**
 * kvt_dram_zero() - zero a block's DRAM copy
 * @pool: the pool
 * @blk: a FILLING block with memory, owned by the caller
 */
void kvt_dram_zero(struct kvt_pool *pool, struct kvt_block *blk)
{
	u32 i, nr = kvt_nr_chunks(pool, blk->order);

	for (i = 0; i < nr; i++) {
		memset(page_address(kvt_chunk(pool, blk, i)), 0,
		       PAGE_SIZE << blk->order);
		cond_resched();
	}
	atomic64_add(pool->block_size, &kvt_cpu_bytes[KVT_CPU_ZERO]);
}

/**
 * kvt_dram_page() - one page of a block
 * @pool: the pool
 * @blk: a block with memory
 * @index: page index in the block, < pages_per_block
 *
 * Return: the page.
 */
struct page *kvt_dram_page(struct kvt_pool *pool, struct kvt_block *blk,
			   u32 index)
{
	return nth_page(kvt_chunk(pool, blk, index >> blk->order),
			index & ((1U << blk->order) - 1));
}
