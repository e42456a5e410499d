// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe tier: part tables, and reads of some parts of a block's copy.
 *
 * A pool created with parts (struct kvtier_pool_create.parts) has its
 * blocks' copies written with a table of checksums, one a part, in the page
 * just before the data (struct kvt_disk_parts). A GET of a range of each
 * block (KVTIER_GET_PART) reads, for a block only on NVMe, the table and
 * the parts that cover the range, and serves the range once each of them
 * verifies: a runtime that loads a chain layer by layer reads each layer's
 * bytes once, and has the first layer after a part of the time the whole
 * chain takes. The block stays where it is; nothing in DRAM changes.
 *
 * The table costs the writer one more pass over the bytes (the crc32c of
 * each part, checked against the block's crc, so that a DRAM copy that
 * changed since its PUT gets no table) and one page a copy. Whatever a
 * part read cannot trust (no table, a table of another block or of another
 * cut, an I/O error, a part that does not verify) sends the caller to the
 * whole-block read, which decides what the copy is worth.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bio.h>
#include <linux/crc32.h>
#include <linux/crc32c.h>
#include <linux/slab.h>
#include "nvme.h"

/* Pages a part: the pool's parts cut its blocks in runs of as many pages. */
static u32 kvt_part_pages(const struct kvt_pool *pool)
{
	return DIV_ROUND_UP(pool->pages_per_block, pool->parts);
}

/* Parts a block has: at most pool->parts, fewer for small blocks. */
static u32 kvt_parts_nr(const struct kvt_pool *pool)
{
	return DIV_ROUND_UP(pool->pages_per_block, kvt_part_pages(pool));
}

/* Pages of part @i. */
static u32 kvt_part_len(const struct kvt_pool *pool, u32 i)
{
	u32 pp = kvt_part_pages(pool);

	return min(pp, pool->pages_per_block - i * pp);
}

static size_t kvt_parts_bytes(u32 nr)
{
	return struct_size((struct kvt_disk_parts *)NULL, pcrc, nr);
}

/* The table's own crc, computed with its crc field zero. */
static u32 kvt_parts_crc(struct kvt_disk_parts *t, u32 nr)
{
	__le32 saved = t->crc;
	u32 crc;

	t->crc = 0;
	crc = crc32c(~0U, t, kvt_parts_bytes(nr));
	t->crc = saved;
	return crc;
}

/* The crc of the whole block, from its parts' (crc32c is linear). */
static u32 kvt_parts_fold(const struct kvt_pool *pool,
			  const struct kvt_disk_parts *t, u32 nr)
{
	u32 i, crc = le32_to_cpu(t->pcrc[0]);

	for (i = 1; i < nr; i++)
		crc = __crc32c_le_combine(crc, le32_to_cpu(t->pcrc[i]),
					  (size_t)kvt_part_len(pool, i) <<
					  PAGE_SHIFT);
	return crc;
}

/**
 * kvt_parts_build() - fill the part table of a copy about to be written
 * @pool: a pool with parts
 * @blk: a READY block in DRAM, held by the writer: its bytes are stable
 * @page: the table's page
 *
 * Return: true with the table built; false when the parts' crcs do not
 * add up to the block's ncrc, the crc its PUT took: the DRAM copy changed
 * since, and the copy goes without a table (its whole read will not verify
 * either).
 */
bool kvt_parts_build(struct kvt_pool *pool, struct kvt_block *blk,
		     void *page)
{
	u32 nr = kvt_parts_nr(pool), pp = kvt_part_pages(pool), i;
	struct kvt_disk_parts *t = page;

	memset(t, 0, KVT_DISK_PAGE);
	t->magic = cpu_to_le64(KVT_PARTS_MAGIC);
	t->pool_id = cpu_to_le64(pool->id);
	t->key[0] = cpu_to_le64(blk->key[0]);
	t->key[1] = cpu_to_le64(blk->key[1]);
	t->nr = cpu_to_le32(nr);
	t->part_pages = cpu_to_le32(pp);
	t->dcrc = cpu_to_le32(blk->ncrc);
	for (i = 0; i < nr; i++) {
		u32 crc = kvt_dram_crc_pages(pool, blk, i * pp,
					     kvt_part_len(pool, i));

		t->pcrc[i] = cpu_to_le32(crc);
		cond_resched();
	}
	if (kvt_parts_fold(pool, t, nr) != blk->ncrc)
		return false;
	t->crc = cpu_to_le32(kvt_parts_crc(t, nr));
	return true;
}

/* Pages of part reads a pool keeps for its next ones. */
#define KVT_PART_CACHE_PAGES	2048

/*
 * A part read's pages come from the pool's cache when they can: fresh pages
 * are zeroed by the allocator (init_on_alloc) only for the read to write
 * them again, a pass over every byte. The cache holds pages of this pool's
 * reads only, up to KVT_PART_CACHE_PAGES, charged to its memory cgroup, and
 * freed with the pool (kvt_parts_trim()). A page's old bytes are never
 * served: only bytes of a read that ended without error, and verified, are.
 */
static struct page *kvt_part_page_get(struct kvt_pool *pool)
{
	struct mem_cgroup *old;
	struct page *page = NULL;

	spin_lock(&pool->stash_lock);
	if (pool->nr_part_pages)
		page = pool->part_pages[--pool->nr_part_pages];
	spin_unlock(&pool->stash_lock);
	if (page)
		return page;
	old = set_active_memcg(pool->memcg);
	/* At the cgroup's limit the read falls back, nobody is OOM-killed. */
	page = alloc_pages_node(pool->nid, GFP_KERNEL_ACCOUNT |
				__GFP_RETRY_MAYFAIL | __GFP_NOWARN, 0);
	set_active_memcg(old);
	return page;
}

static void kvt_part_page_put(struct kvt_pool *pool, struct page *page)
{
	struct page **cache = NULL;

	/* The cache's array comes with the first page it keeps. */
	if (!READ_ONCE(pool->part_pages))
		cache = kvcalloc(KVT_PART_CACHE_PAGES, sizeof(*cache),
				 GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL |
				 __GFP_NOWARN);
	spin_lock(&pool->stash_lock);
	if (!pool->part_pages) {
		pool->part_pages = cache;
		cache = NULL;
	}
	if (pool->part_pages && pool->nr_part_pages < KVT_PART_CACHE_PAGES) {
		pool->part_pages[pool->nr_part_pages++] = page;
		page = NULL;
	}
	spin_unlock(&pool->stash_lock);
	kvfree(cache);
	if (page)
		__free_page(page);
}

/**
 * kvt_parts_trim() - free the pages a pool keeps for part reads
 * @pool: the pool, no part read under way
 */
void kvt_parts_trim(struct kvt_pool *pool)
{
	u32 i;

	for (i = 0; i < pool->nr_part_pages; i++)
		__free_page(pool->part_pages[i]);
	kvfree(pool->part_pages);
	pool->part_pages = NULL;
	pool->nr_part_pages = 0;
}

/* struct kvt_part_rd - a read of some parts of one block's copy */
struct kvt_part_rd {
	struct kvt_crd crd;		/* its lifetime (nvme_read.c) */
	u64 key[2];
	u32 ncrc;			/* the block's crc */
	u32 first;			/* first part read */
	u32 nr;				/* parts read */
	u32 start;			/* where the range starts, past the table */
	u32 len;			/* its bytes */
	u32 npages;			/* the table's page, then the parts' */
	struct page *pages[];
};

static void kvt_part_rd_free(struct kvt_part_rd *rd)
{
	u32 i;

	for (i = 0; i < rd->npages && rd->pages[i]; i++)
		kvt_part_page_put(rd->crd.pool, rd->pages[i]);
	kfree(rd);
}

static void kvt_part_crd_free(struct kvt_crd *crd)
{
	kvt_part_rd_free(container_of(crd, struct kvt_part_rd, crd));
}

/**
 * kvt_nvme_read_part() - start reading the parts of a copy that cover a range
 * @pool: a pool with parts, its lock not held
 * @addr: a READY block only on NVMe, held as a user
 * @off: the range's first byte in the block
 * @len: its bytes, nonzero, within the block
 *
 * Return: the read, to end with kvt_nvme_part_end() and free with
 * kvt_nvme_part_free(); or an ERR_PTR: -ENOMEM, or -ENOENT when the copy's
 * device is not attached (detached since the residency layer looked).
 */
struct kvt_part_rd *kvt_nvme_read_part(struct kvt_pool *pool, u32 addr,
				       u32 off, u32 len)
{
	struct kvt_block *blk = &pool->blocks[addr];
	u32 pp = kvt_part_pages(pool), first, last, pages, nloc, i;
	struct kvt_nvme *nvme;
	struct kvt_part_rd *rd;
	u8 ndev;

	first = (off >> PAGE_SHIFT) / pp;
	last = ((off + len - 1) >> PAGE_SHIFT) / pp;
	pages = min((last - first + 1) * pp,
		    pool->pages_per_block - first * pp);
	rd = kzalloc(struct_size(rd, pages, pages + 1), GFP_KERNEL);
	if (!rd)
		return ERR_PTR(-ENOMEM);
	rd->crd.pool = pool;
	rd->first = first;
	rd->nr = last - first + 1;
	rd->npages = pages + 1;
	rd->start = off - ((first * pp) << PAGE_SHIFT);
	rd->len = len;
	for (i = 0; i < rd->npages; i++) {
		rd->pages[i] = kvt_part_page_get(pool);
		if (!rd->pages[i]) {
			kvt_part_rd_free(rd);
			return ERR_PTR(-ENOMEM);
		}
	}

	spin_lock(&pool->lock);
	ndev = blk->ndev;
	nloc = blk->nloc;
	rd->ncrc = blk->ncrc;
	rd->key[0] = blk->key[0];
	rd->key[1] = blk->key[1];
	spin_unlock(&pool->lock);
	spin_lock(&kvt_nvme_qlock);
	nvme = kvt_nvmes[ndev];
	if (nvme)
		atomic_inc(&nvme->inflight);
	spin_unlock(&kvt_nvme_qlock);
	if (!nvme) {
		kvt_part_rd_free(rd);
		return ERR_PTR(-ENOENT);
	}

	kvt_crd_init(&rd->crd, nvme, pool, NULL, kvt_part_crd_free);
	/* The table is the page before the data: one read with part 0. */
	if (!first) {
		kvt_crd_submit(&rd->crd, kvt_loc_bytes(nloc - 1), rd->pages,
			       rd->npages);
	} else {
		kvt_crd_submit(&rd->crd, kvt_loc_bytes(nloc - 1), rd->pages,
			       1);
		kvt_crd_submit(&rd->crd, kvt_loc_bytes(nloc + first * pp),
			       rd->pages + 1, pages);
	}
	kvt_crd_submitted(&rd->crd);
	return rd;
}

/**
 * kvt_parts_table_ok() - whether a part table read is a block's
 * @pool: a pool with parts
 * @key: the block's key
 * @ncrc: the block's crc
 * @t: the table, as read from the page before the copy's data
 *
 * Whether @t is the table its writer made for this block: it names the
 * block and its crc, and its own crc verifies. The writer wrote it only if
 * its parts' crcs add up to that crc (kvt_parts_build()), so a table that
 * passes describes the bytes of the block's copy; a stale one (another PUT
 * of the key) names another crc. Folding the parts again here would cost a
 * crc combination a part, for every part read.
 *
 * Return: true if it is.
 */
bool kvt_parts_table_ok(const struct kvt_pool *pool, const u64 *key,
			u32 ncrc, struct kvt_disk_parts *t)
{
	u32 nr = kvt_parts_nr(pool);

	return le64_to_cpu(t->magic) == KVT_PARTS_MAGIC &&
	       le64_to_cpu(t->pool_id) == pool->id &&
	       le64_to_cpu(t->key[0]) == key[0] &&
	       le64_to_cpu(t->key[1]) == key[1] &&
	       le32_to_cpu(t->nr) == nr &&
	       le32_to_cpu(t->part_pages) == kvt_part_pages(pool) &&
	       le32_to_cpu(t->dcrc) == ncrc &&
	       le32_to_cpu(t->crc) == kvt_parts_crc(t, nr);
}

/* Whether the parts read match their crcs in table @t. */
static bool kvt_parts_verify(struct kvt_part_rd *rd,
			     const struct kvt_disk_parts *t)
{
	struct kvt_pool *pool = rd->crd.pool;
	u32 i, j, n, pg = 1;
	u32 crc;

	for (i = 0; i < rd->nr; i++) {
		n = kvt_part_len(pool, rd->first + i);
		for (j = 0, crc = 0; j < n; j++, pg++)
			crc = crc32c(crc, page_address(rd->pages[pg]),
				     PAGE_SIZE);
		if (crc != le32_to_cpu(t->pcrc[rd->first + i]))
			return false;
		cond_resched();
	}
	atomic64_add((u64)(rd->npages - 1) << PAGE_SHIFT,
		     &kvt_cpu_bytes[KVT_CPU_CRC]);
	return true;
}

/**
 * kvt_nvme_part_end() - wait for a part read, verify it, copy the range out
 * @rd: the read
 * @to: user memory for the range
 *
 * A fatal signal ends the wait: the read is then freed when its bios end.
 *
 * Return: 0; -EINTR (killed), or -EFAULT when the copy to @to failed;
 * -EIO for an I/O error, -EBADMSG when the table or a part does not
 * verify: the caller then reads the whole block instead.
 */
int kvt_nvme_part_end(struct kvt_part_rd *rd, struct iov_iter *to)
{
	struct kvt_disk_parts *t = page_address(rd->pages[0]);
	u32 pg = 1 + (rd->start >> PAGE_SHIFT);
	u32 off = offset_in_page(rd->start);
	u32 left = rd->len, n;
	int ret;

	ret = kvt_crd_wait(&rd->crd);
	if (ret)
		return ret;
	if (!kvt_parts_table_ok(rd->crd.pool, rd->key, rd->ncrc, t) ||
	    !kvt_parts_verify(rd, t))
		return -EBADMSG;
	for (; left; left -= n, pg++, off = 0) {
		n = min_t(u32, left, PAGE_SIZE - off);
		if (!kvt_copy_out(page_address(rd->pages[pg]) + off, n, to))
			return fatal_signal_pending(current) ? -EINTR :
							      -EFAULT;
	}
	return 0;
}

/**
 * kvt_nvme_part_free() - give a part read up, ended or not
 * @rd: the read
 *
 * Its bios write into its pages: if some are still in flight (the caller
 * was killed), the last of them frees it, from the device's workqueue.
 */
void kvt_nvme_part_free(struct kvt_part_rd *rd)
{
	kvt_crd_put(&rd->crd);
}
