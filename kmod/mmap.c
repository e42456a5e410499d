// SPDX-License-Identifier: GPL-2.0
/*
 * mmap of a pool file: block address a is at offset a * block_size.
 *
 * Mappings are read-only and filled on fault with the pages of READY
 * blocks (VM_MIXEDMAP, normal refcounted pages, so move_pages(2) can query
 * their node). A fault on an address without a READY block raises SIGBUS;
 * one on a block only on NVMe loads it first (unless the pool was created
 * with KVTIER_POOL_FAULT_NOLOAD).
 * Before a block's pages are freed, kvt_res_release() zaps its range in
 * every mapping of the pool; see map_sem in struct kvt_pool.
 *
 * Past the last block lies the reservation window (KVTIER_RESERVE_WINDOW):
 * block a's pages again, at offset (capacity + a) * block_size, writable,
 * but only through a mapping of the pool file that holds a reserved
 * (reserve.c); COMMIT and ABORT unmap them.
 */
#include <linux/mm.h>
#include <linux/fs.h>
#include <linux/math64.h>
#include "kvt.h"

#define KVT_FAULT_PAGES		32	/* pages mapped around one fault */

/*
 * Map @nr pages of a block at the fault address, pool->map_sem held (the
 * pages stay while it is).
 */
static vm_fault_t kvt_map_pages(struct vm_fault *vmf, struct page **pages,
				unsigned long nr)
{
	unsigned long num = nr;
	int err;

	err = vm_insert_pages(vmf->vma, vmf->address, pages, &num);
	/* A page already mapped by a racing fault is fine. */
	if (err && num == nr && err != -EBUSY)
		return err == -ENOMEM ? VM_FAULT_OOM : VM_FAULT_SIGBUS;
	return VM_FAULT_NOPAGE;
}

/* A fault in the reservation window: the file's own reserved block. */
static vm_fault_t kvt_window_fault(struct vm_fault *vmf, struct kvt_handle *h,
				   u64 addr, u32 index, unsigned long nr)
{
	struct kvt_pool *pool = h->pool;
	struct page *pages[KVT_FAULT_PAGES];
	unsigned long i;
	vm_fault_t ret;

	if (addr >= pool->capacity)
		return VM_FAULT_SIGBUS;
	down_read(&pool->map_sem);
	if (!kvt_reserve_open(h, addr)) {
		up_read(&pool->map_sem);
		return VM_FAULT_SIGBUS;
	}
	/* Its pages stay while it is open and map_sem is held. */
	for (i = 0; i < nr; i++)
		pages[i] = kvt_dram_page(pool, &pool->blocks[addr], index + i);
	ret = kvt_map_pages(vmf, pages, nr);
	up_read(&pool->map_sem);
	return ret;
}

static vm_fault_t kvt_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct kvt_handle *h = vma->vm_file->private_data;
	struct kvt_pool *pool = h->pool;
	struct page *pages[KVT_FAULT_PAGES];
	struct kvt_block *blk;
	unsigned long nr, i;
	vm_fault_t ret;
	u32 index;
	u64 addr;
	int err;

	addr = div_u64_rem(vmf->pgoff, pool->pages_per_block, &index);

	/* Map ahead to the end of the block, within the VMA. */
	nr = min3((unsigned long)(pool->pages_per_block - index),
		  (vma->vm_end - vmf->address) >> PAGE_SHIFT,
		  (unsigned long)KVT_FAULT_PAGES);
	if (addr >= pool->capacity)
		return kvt_window_fault(vmf, h, addr - pool->capacity, index,
					nr);

	for (;;) {
		u64 key[2];
		u32 found;

		down_read(&pool->map_sem);
		spin_lock(&pool->lock);
		blk = &pool->blocks[addr];
		if (blk->state != KVT_BLK_READY) {
			spin_unlock(&pool->lock);
			up_read(&pool->map_sem);
			return VM_FAULT_SIGBUS;
		}
		if (kvt_dram_ready(blk)) {
			kvt_prefetch_used(pool, addr);
			break;
		}

		/* On NVMe (or on its way): load it, unless told not to. */
		key[0] = blk->key[0];
		key[1] = blk->key[1];
		spin_unlock(&pool->lock);
		up_read(&pool->map_sem);
		if (pool->flags & KVTIER_POOL_FAULT_NOLOAD)
			return VM_FAULT_SIGBUS;
		err = kvt_res_dram(pool, key, &found);
		spin_unlock(&pool->lock);
		if (err)
			return err == -ENOMEM ? VM_FAULT_OOM : VM_FAULT_SIGBUS;
		if (found != addr)
			return VM_FAULT_SIGBUS;
	}
	for (i = 0; i < nr; i++)
		pages[i] = kvt_dram_page(pool, blk, index + i);
	spin_unlock(&pool->lock);

	ret = kvt_map_pages(vmf, pages, nr);
	up_read(&pool->map_sem);
	return ret;
}

static const struct vm_operations_struct kvt_vm_ops = {
	.fault = kvt_vm_fault,
};

/**
 * kvt_pool_mmap() - map a range of a pool's block address space
 * @file: a pool file
 * @vma: the new mapping
 *
 * Return: 0; -EOPNOTSUPP when the pool fd's control fd did not negotiate
 * KVTIER_F_MMAP; -EACCES for a writable mapping of the blocks, or of the
 * window by a read-only fd; -EINVAL for a range across the end of either,
 * a private mapping of the window, or the window without KVTIER_F_RESERVE
 * (past the last block).
 */
int kvt_pool_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct kvt_handle *h = file->private_data;
	struct kvt_pool *pool = h->pool;
	u64 end = (u64)pool->capacity * pool->pages_per_block;
	u64 first = vma->vm_pgoff;

	if (!(h->features & KVTIER_F_MMAP))
		return -EOPNOTSUPP;
	if (first >= end) {
		/* The reservation window: writable, shared, not inherited. */
		if (!(h->features & KVTIER_F_RESERVE))
			return -EINVAL;	/* past the last block, as ever */
		if (h->pool->file)
			return -EROFS;	/* a weight pool takes no blocks */
		first -= end;
		if (!(vma->vm_flags & VM_SHARED))
			return -EINVAL;
		if (h->rdonly && (vma->vm_flags & VM_WRITE))
			return -EACCES;
		if (h->rdonly)
			vma->vm_flags &= ~VM_MAYWRITE;
		vma->vm_flags |= VM_DONTCOPY;
	} else {
		if (vma->vm_flags & VM_WRITE)
			return -EACCES;
		vma->vm_flags &= ~VM_MAYWRITE;
	}
	if (first > end || vma_pages(vma) > end - first)
		return -EINVAL;

	vma->vm_flags |= VM_MIXEDMAP | VM_DONTEXPAND | VM_DONTDUMP;
	vma->vm_ops = &kvt_vm_ops;
	return 0;
}
