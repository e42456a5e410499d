// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe tier: reads of a block's copy straight into the caller's memory.
 *
 * GET with KVTIER_GET_DIRECT has the device write a block only on NVMe
 * into the pages of the entry's buffer, pinned for the read, and checks
 * the block's crc on them before the GET says so. No DRAM is taken and no
 * CPU copies the bytes: the one pass over them is the check.
 *
 * Unlike a read into the module's pages, this one puts bytes where the
 * caller sees them before they are verified. So what it reads must be this
 * block's copy, whole or damaged, never what was written since in the same
 * place for another block, maybe of another pool. Only the log's reclaim
 * reuses a place, and:
 *
 *  - a read takes the block's location and counts in the readers of its
 *    region in one pool->lock section, and counts there until its bios
 *    end;
 *  - reclaim forgets every block of the region, each under its pool's
 *    lock, then waits for the region's readers to drain
 *    (kvt_nvme_readers_drain()) before the region is written again.
 *
 * A read that starts after its block was forgotten finds no location. A
 * block reclaim could not forget (a summary it could not read) may still
 * name the region once it is rewritten: the device then stops reads into
 * user memory for good (nvme->direct_off), and they go through DRAM,
 * whose check comes before any byte reaches the caller.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/crc32c.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/wait_bit.h>
#include "nvme.h"

/* struct kvt_direct_rd - a read of one block's copy into user pages */
struct kvt_direct_rd {
	struct kvt_crd crd;		/* its lifetime (nvme_read.c) */
	struct kvt_region *rg;		/* its readers count this read */
	u32 ncrc;			/* the block's crc */
	u32 npages;			/* pinned */
	struct page *pages[];
};

/* Unpin the pages, marked dirty if the device may have written any. */
static void kvt_direct_unpin(struct kvt_direct_rd *rd, bool written)
{
	unpin_user_pages_dirty_lock(rd->pages, rd->npages, written);
	kfree(rd);
}

static void kvt_direct_free(struct kvt_crd *crd)
{
	kvt_direct_unpin(container_of(crd, struct kvt_direct_rd, crd), true);
}

/*
 * A read of region @rg ended, or did not start: the last one wakes
 * reclaim. atomic_dec_and_test() is fully ordered, as wake_up_var() needs
 * between the count and its check of the waitqueue.
 */
static void kvt_direct_reader_put(struct kvt_region *rg)
{
	if (atomic_dec_and_test(&rg->readers))
		wake_up_var(&rg->readers);
}

/* All bios ended: the region may be reused now. */
static void kvt_direct_ended(struct kvt_crd *crd)
{
	kvt_direct_reader_put(container_of(crd, struct kvt_direct_rd,
					   crd)->rg);
}

/*
 * Pin the pages of @iov for the device to write, @max at most: every
 * segment must start on a page and be whole pages long. Return: 0,
 * -EINVAL, or -EFAULT.
 */
static int kvt_direct_pin(struct kvt_direct_rd *rd, u32 max,
			  const struct iovec *iov, unsigned long nr_segs)
{
	unsigned long s;
	int got;

	for (s = 0; s < nr_segs; s++) {
		unsigned long start = (unsigned long)iov[s].iov_base;
		size_t left = iov[s].iov_len >> PAGE_SHIFT;

		if (!PAGE_ALIGNED(start) || !PAGE_ALIGNED(iov[s].iov_len) ||
		    left > max - rd->npages)
			return -EINVAL;
		while (left) {
			got = pin_user_pages_fast(start, left, FOLL_WRITE,
						  rd->pages + rd->npages);
			if (got <= 0)
				return -EFAULT;
			rd->npages += got;
			left -= got;
			start += (unsigned long)got << PAGE_SHIFT;
		}
	}
	return 0;
}

/*
 * Take the block's location and count in its region's readers, in one
 * pool->lock section (see the top of this file). Return: 0 with the read's
 * region and crc set, and its device in *@nvmep, counted in its inflight;
 * -EOPNOTSUPP for a compressed copy; -ENOENT when the block has no copy to
 * read so now.
 */
static int kvt_direct_claim(struct kvt_direct_rd *rd, struct kvt_pool *pool,
			    u32 addr, struct kvt_nvme **nvmep, u64 *off)
{
	struct kvt_block *blk = &pool->blocks[addr];
	struct kvt_nvme *nvme;
	int ret = -ENOENT;
	u32 r;

	spin_lock(&pool->lock);
	if (blk->state != KVT_BLK_READY || blk->nloc == KVT_NIL)
		goto out;
	/* A compressed copy is read into pages of the module's. */
	ret = -EOPNOTSUPP;
	if (pool->zloc && pool->zloc[addr].bytes)
		goto out;
	ret = -ENOENT;
	spin_lock(&kvt_nvme_qlock);
	nvme = kvt_nvmes[blk->ndev];
	r = nvme && kvt_loc_bytes(blk->nloc) >= KVT_DATA_OFF ?
	    kvt_loc_region(nvme, blk->nloc) : U32_MAX;
	if (nvme && r < nvme->nr_regions) {
		atomic_inc(&nvme->regions[r].readers);
		/* Pairs with the barrier of kvt_nvme_readers_drain(). */
		smp_mb__after_atomic();
		if (READ_ONCE(nvme->direct_off)) {
			kvt_direct_reader_put(&nvme->regions[r]);
		} else {
			atomic_inc(&nvme->inflight);
			*nvmep = nvme;
			rd->rg = &nvme->regions[r];
			rd->ncrc = blk->ncrc;
			*off = kvt_loc_bytes(blk->nloc);
			ret = 0;
		}
	}
	spin_unlock(&kvt_nvme_qlock);
out:
	spin_unlock(&pool->lock);
	return ret;
}

/**
 * kvt_nvme_read_user() - start reading a block's copy into user memory
 * @pool: the pool, its lock not held
 * @addr: a READY block without a DRAM copy, held as a user
 * @iov: the memory: segments of whole pages, @pool's block size in all
 * @nr_segs: how many
 *
 * Return: the read, to end with kvt_nvme_user_end() and free with
 * kvt_nvme_user_free(); or an ERR_PTR: -EINVAL (a segment not of whole
 * pages), -EFAULT (memory that cannot be written), -ENOMEM, -EOPNOTSUPP (a
 * compressed copy), -ENOENT (no copy, or none to read so now).
 */
struct kvt_direct_rd *kvt_nvme_read_user(struct kvt_pool *pool, u32 addr,
					 const struct iovec *iov,
					 unsigned long nr_segs)
{
	struct kvt_direct_rd *rd;
	struct kvt_nvme *nvme;
	u64 off;
	int ret;

	rd = kzalloc(struct_size(rd, pages, pool->pages_per_block),
		     GFP_KERNEL);
	if (!rd)
		return ERR_PTR(-ENOMEM);
	ret = kvt_direct_pin(rd, pool->pages_per_block, iov, nr_segs);
	if (!ret && rd->npages != pool->pages_per_block)
		ret = -EINVAL;
	if (!ret)
		ret = kvt_direct_claim(rd, pool, addr, &nvme, &off);
	if (ret) {
		kvt_direct_unpin(rd, false);
		return ERR_PTR(ret);
	}

	kvt_crd_init(&rd->crd, nvme, pool, kvt_direct_ended, kvt_direct_free);
	kvt_fault_direct_delay();
	kvt_crd_submit(&rd->crd, off, rd->pages, rd->npages);
	kvt_crd_submitted(&rd->crd);
	return rd;
}

/**
 * kvt_nvme_user_end() - wait for a read into user memory and verify it there
 * @rd: the read
 *
 * A fatal signal ends the wait: the read is then freed when its bios end.
 *
 * What the device wrote that is not served is zeroed, in the very pages it
 * went to.
 *
 * Return: 0 with the block's bytes in the caller's memory; -EINTR
 * (killed); -EIO for an I/O error, -EBADMSG when the bytes do not verify:
 * the caller then reads the block the usual way, which decides what the
 * copy is worth.
 */
int kvt_nvme_user_end(struct kvt_direct_rd *rd)
{
	u32 i, crc = 0;
	int ret;

	ret = kvt_crd_wait(&rd->crd);
	if (ret == -EINTR)
		return ret;
	if (!ret) {
		for (i = 0; i < rd->npages; i++) {
			void *p = kmap_local_page(rd->pages[i]);

			crc = crc32c(crc, p, PAGE_SIZE);
			kunmap_local(p);
			if (!(i % 64))
				cond_resched();
		}
		atomic64_add((u64)rd->npages << PAGE_SHIFT,
			     &kvt_cpu_bytes[KVT_CPU_CRC]);
		if (crc == rd->ncrc)
			return 0;
		ret = -EBADMSG;
	}
	for (i = 0; i < rd->npages; i++)
		memzero_page(rd->pages[i], 0, PAGE_SIZE);
	atomic64_add((u64)rd->npages << PAGE_SHIFT,
		     &kvt_cpu_bytes[KVT_CPU_ZERO]);
	return ret;
}

/**
 * kvt_nvme_user_free() - give a read into user memory up, ended or not
 * @rd: the read
 *
 * If some of its bios are still in flight (the caller was killed), the last
 * of them frees it, from the device's workqueue.
 */
void kvt_nvme_user_free(struct kvt_direct_rd *rd)
{
	kvt_crd_put(&rd->crd);
}

/**
 * kvt_nvme_readers_drain() - wait for the reads into user memory of a region
 * @nvme: the device; nvme->lock held
 * @r: a region whose blocks reclaim has just forgotten
 * @ret: how reading its chain of summaries ended (-EBADMSG: at its end)
 * @page: and where
 *
 * Reclaim calls this before the region is written again. If the chain
 * ended early (an I/O error, or a summary that no longer verifies short of
 * where its durable segments end), blocks may still name the region, and
 * reads into user memory stop on this device.
 */
void kvt_nvme_readers_drain(struct kvt_nvme *nvme, u32 r, int ret, u32 page)
{
	struct kvt_region *rg = &nvme->regions[r];

	lockdep_assert_held(&nvme->lock);
	if ((ret != -EBADMSG || page < rg->chain) &&
	    !READ_ONCE(nvme->direct_off)) {
		WRITE_ONCE(nvme->direct_off, true);
		pr_warn("%pg: region %u: summaries unreadable; GET reads through DRAM from now on\n",
			nvme->bdev, r);
	}
	/* Pairs with the barrier of kvt_direct_claim(). */
	smp_mb();
	wait_var_event(&rg->readers, !atomic_read(&rg->readers));
}
