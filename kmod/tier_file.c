// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier file tier: the blocks of a weight pool (KVTIER_POOL_WEIGHTS).
 *
 * A weight pool holds the bytes of a file, model weights most often: block
 * i is the file's bytes from kvt_file.off + i * block_size, the last one
 * read short and zero-filled. Each block is entered READY at create, with
 * its "copy" in the file: nloc is its index in the file, ndev KVT_FILE_DEV
 * (a device no NVMe slot has, so no walk of the NVMe tier ever takes it).
 * The residency layer evicts such a block as it evicts any clean block,
 * and reads it back through this tier's load, from the pool's own open of
 * the file: by direct I/O where the file system has it (no second copy in
 * the page cache), else buffered.
 *
 * Nothing is ever written to the file, and nothing else may write it while
 * the pool lives: the pool holds write access denied (deny_write_access(),
 * as exec does), so an open for writing or a truncate fails -ETXTBSY. A
 * writer the kernel cannot stop (another host, the block device under the
 * file system) changes the file's size or mtime: each load checks both,
 * before and after its read, and a block read from a changed file is never
 * served: it leaves the pool, a miss from then on. A block in DRAM read
 * before the change keeps the old bytes, so every block served is the old
 * file's, never a mix.
 *
 * Reads run on an unbound workqueue, one synchronous read a work item, as
 * deep as its max_active; each holds the pool and ends through the pool's
 * residency hooks, as an NVMe read does.
 */

#include <linux/bvec.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/workqueue.h>
#include "kvt.h"
#include "trace.h"

/* Reads of all weight pools in flight at once. */
#define KVT_FILE_QD		32
/* Reads of a block that failed with an I/O error, before it is let go. */
#define KVT_FILE_TRIES		2

/**
 * struct kvt_file - a weight pool's file; constant after create
 * @filp: the pool's own open of it (read-only, O_DIRECT where it can)
 * @off: file offset of block 0
 * @size: its size at create
 * @mtime: its mtime at create
 */
struct kvt_file {
	struct file *filp;
	u64 off;
	loff_t size;
	struct timespec64 mtime;
};

/* A block read in flight. */
struct kvt_file_rd {
	struct work_struct work;
	struct kvt_pool *pool;
	u32 addr;
	u32 nloc;
	u64 start;
	struct bio_vec bv[];
};

static struct workqueue_struct *kvt_file_wq;

/* Whether the file is still the one the pool was made from. */
static bool kvt_file_same(const struct kvt_file *f)
{
	struct inode *inode = file_inode(f->filp);
	struct timespec64 mtime = inode->i_mtime;	/* racy: rechecked */

	return i_size_read(inode) == f->size &&
	       timespec64_equal(&mtime, &f->mtime);
}

/* Zero a block's bytes from @from to its end (a read short at EOF). */
static void kvt_file_zero_tail(struct kvt_pool *pool, struct kvt_block *blk,
			       u64 from)
{
	u32 i = from >> PAGE_SHIFT;
	u32 off = offset_in_page(from);

	for (; i < pool->pages_per_block; i++, off = 0)
		memzero_page(kvt_dram_page(pool, blk, i), off, PAGE_SIZE - off);
}

/*
 * Read a block's bytes into its DRAM pages. Return: 0; -ESTALE when the
 * file changed; -EIO (or the file system's error) when the read failed or
 * came back short before the end of the file.
 */
static int kvt_file_read(struct kvt_file_rd *rd)
{
	struct kvt_pool *pool = rd->pool;
	struct kvt_file *f = pool->file;
	struct kvt_block *blk = &pool->blocks[rd->addr];
	u64 start = f->off + (u64)rd->nloc * pool->block_size;
	u64 want = min_t(u64, pool->block_size, f->size - start);
	struct iov_iter iter;
	loff_t pos = start;
	ssize_t ret;
	u32 i;

	for (i = 0; i < pool->pages_per_block; i++) {
		rd->bv[i].bv_page = kvt_dram_page(pool, blk, i);
		rd->bv[i].bv_len = PAGE_SIZE;
		rd->bv[i].bv_offset = 0;
	}
	iov_iter_bvec(&iter, ITER_DEST, rd->bv, pool->pages_per_block,
		      pool->block_size);
	if (!kvt_file_same(f))
		return -ESTALE;
	ret = vfs_iter_read(f->filp, &iter, &pos, 0);
	if (ret < 0)
		return ret;
	if (ret < want)
		return -EIO;
	if (want < pool->block_size)
		kvt_file_zero_tail(pool, blk, want);
	return kvt_file_same(f) ? 0 : -ESTALE;
}

static void kvt_file_rd_work(struct work_struct *work)
{
	struct kvt_file_rd *rd = container_of(work, struct kvt_file_rd, work);
	struct kvt_pool *pool = rd->pool;
	struct kvt_block *blk = &pool->blocks[rd->addr];
	int ret, tries = 0;

	/* The block is LOADING with its pages: nothing else touches them. */
	do {
		ret = kvt_file_read(rd);
	} while (ret && ret != -ESTALE && ++tries < KVT_FILE_TRIES);

	spin_lock(&pool->lock);
	blk->flags &= ~KVT_BF_LOADING;
	pool->nr_loading--;
	pool->io_events++;
	if (blk->state == KVT_BLK_READY) {
		if (!ret) {
			pool->stats.promotions++;
			pool->res->landed(pool, rd->addr);
			trace_kvtier_block_promote(pool, rd->addr);
		} else {
			/* Never serve it: the block is a miss from now on. */
			pool->stats.bad_reads++;
			pool->res->unlink(pool, rd->addr,
					  ret == -ESTALE ? KVTIER_EVR_BAD_READ :
							   KVTIER_EVR_IO_ERROR);
		}
	}
	kvt_res_hook_put(pool, rd->addr);
	kvt_pool_put(pool);
	kvt_lat_add(KVT_LAT_READ, rd->start);
	kvfree(rd);
}

/**
 * kvt_file_load() - start reading a block from the pool's file
 * @pool: a weight pool
 * @addr: a READY block with its DRAM pages, held as a user and LOADING
 *
 * Return: 0, the read under way (it ends through the pool's residency
 * hooks), or -ENOMEM.
 */
static int kvt_file_load(struct kvt_pool *pool, u32 addr)
{
	struct kvt_file_rd *rd;

	rd = kvmalloc(struct_size(rd, bv, pool->pages_per_block), GFP_KERNEL);
	if (!rd)
		return -ENOMEM;
	rd->pool = pool;
	rd->addr = addr;
	rd->nloc = pool->blocks[addr].nloc;	/* constant: set at create */
	rd->start = ktime_get_ns();
	kref_get(&pool->ref);
	INIT_WORK(&rd->work, kvt_file_rd_work);
	queue_work(kvt_file_wq, &rd->work);
	return 0;
}

/**
 * kvt_file_reachable() - whether a block's bytes can be read now
 * @pool: a weight pool, its lock held
 * @addr: a READY block
 *
 * Return: true: the pool holds its file open for its whole life.
 */
static bool kvt_file_reachable(struct kvt_pool *pool, u32 addr)
{
	return true;
}

/**
 * kvt_file_live() - whether the tier takes blocks now
 * @pool: a weight pool
 *
 * Return: true: every block of the pool has its bytes in the file.
 */
static bool kvt_file_live(struct kvt_pool *pool)
{
	return true;
}

/**
 * kvt_file_clean() - queue dirty blocks for writing
 * @pool: a weight pool, its lock held
 * @nr: blocks asked for
 * @victims: needed out now
 *
 * Return: 0: a weight pool has no dirty block.
 */
static int kvt_file_clean(struct kvt_pool *pool, unsigned int nr,
			  bool victims)
{
	return 0;
}

/**
 * kvt_file_doomed() - whether a block's copy is about to be reclaimed
 * @pool: a weight pool, its lock held
 * @addr: a READY block
 *
 * Return: false: the file is never reclaimed.
 */
static bool kvt_file_doomed(struct kvt_pool *pool, u32 addr)
{
	return false;
}

/**
 * kvt_file_sync() - write every dirty block and wait
 * @pool: a weight pool
 * @written: out: 0
 *
 * Return: 0: nothing is ever written.
 */
static int kvt_file_sync(struct kvt_pool *pool, u64 *written)
{
	*written = 0;
	return 0;
}

/**
 * kvt_file_drop() - a block leaves the pool for good
 * @pool: a weight pool, its lock held
 * @addr: the block
 *
 * Nothing to mark: DROP on a weight pool is refused, and a block unlinked
 * otherwise comes back only with a new pool of the file.
 */
static void kvt_file_drop(struct kvt_pool *pool, u32 addr)
{
}

const struct kvt_tier_ops kvt_file_tier = {
	.name		= "file",
	.reachable	= kvt_file_reachable,
	.load		= kvt_file_load,
	.clean		= kvt_file_clean,
	.doomed		= kvt_file_doomed,
	.sync		= kvt_file_sync,
	.drop		= kvt_file_drop,
	.live		= kvt_file_live,
};

/*
 * The pool's own open of the file: by direct I/O where the file system has
 * it (dentry_open() says -EINVAL where it has not), else buffered.
 */
static struct file *kvt_file_reopen(struct file *user)
{
	const int flags = O_RDONLY | O_LARGEFILE;
	struct file *filp;

	filp = dentry_open(&user->f_path, flags | O_DIRECT, current_cred());
	if (filp == ERR_PTR(-EINVAL))
		filp = dentry_open(&user->f_path, flags, current_cred());
	return filp;
}

/**
 * kvt_file_check() - check a weight pool's file fields
 * @pc: the create request, KVTIER_POOL_WEIGHTS or not
 *
 * Return: 0 or -EINVAL. The file itself is checked by kvt_file_open().
 */
int kvt_file_check(const struct kvtier_pool_create *pc)
{
	if (pc->file_flags ||
	    memchr_inv(pc->file_reserved, 0, sizeof(pc->file_reserved)))
		return -EINVAL;
	if (!(pc->flags & KVTIER_POOL_WEIGHTS))
		return pc->file_fd || pc->file_off || pc->file_key ? -EINVAL : 0;
	if (pc->parts || pc->compress || pc->flags & KVTIER_POOL_FAULT_NOLOAD ||
	    !PAGE_ALIGNED(pc->file_off))
		return -EINVAL;
	return 0;
}

/**
 * kvt_file_open() - give a new weight pool its file and its blocks
 * @pool: the pool, not yet registered, its index made
 * @pc: the create request (kvt_file_check() passed)
 *
 * Return: 0; -EBADF for an fd not open for reading; -EINVAL for a file
 * that is not a regular file, or whose size from @pc->file_off is not
 * @pc->capacity blocks; -ETXTBSY when it is open for writing somewhere;
 * -ENOMEM, or what opening it again returns.
 */
int kvt_file_open(struct kvt_pool *pool, const struct kvtier_pool_create *pc)
{
	u64 key[2] = { pc->file_key, 0 };
	struct kvt_umeta *um = NULL;
	struct kvt_file *f;
	struct fd user;
	u32 i, addr;
	int ret;

	user = fdget(pc->file_fd);
	if (!user.file)
		return -EBADF;
	ret = -EBADF;
	if (!(user.file->f_mode & FMODE_READ))
		goto out_fdput;
	ret = -EINVAL;
	if (!S_ISREG(file_inode(user.file)->i_mode))
		goto out_fdput;

	ret = -ENOMEM;
	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		goto out_fdput;
	f->filp = kvt_file_reopen(user.file);
	if (IS_ERR(f->filp)) {
		ret = PTR_ERR(f->filp);
		goto out_free;
	}
	ret = deny_write_access(f->filp);
	if (ret)
		goto out_fput;
	f->off = pc->file_off;
	f->size = i_size_read(file_inode(f->filp));
	f->mtime = file_inode(f->filp)->i_mtime;
	ret = -EINVAL;
	if (f->off >= f->size ||
	    DIV_ROUND_UP_ULL(f->size - f->off, pool->block_size) !=
	    pc->capacity)
		goto out_allow;

	/* Every block is in the file: READY, address i holding block i. */
	for (i = 0; i < pool->capacity; i++) {
		key[1] = i;
		ret = kvt_block_restore(pool, key, KVT_FILE_DEV, i, 0, NULL,
					&um, &addr);
		if (ret)
			goto out_allow;
		if (!(i & 0xfff))
			cond_resched();
	}
	pool->file = f;
	fdput(user);
	return 0;

out_allow:
	allow_write_access(f->filp);
out_fput:
	fput(f->filp);
out_free:
	kfree(f);
out_fdput:
	fdput(user);
	return ret;
}

/**
 * kvt_file_close() - let a dead weight pool's file go
 * @pool: the pool, any pool; without file, nothing is done
 */
void kvt_file_close(struct kvt_pool *pool)
{
	struct kvt_file *f = pool->file;

	if (!f)
		return;
	allow_write_access(f->filp);
	fput(f->filp);
	kfree(f);
	pool->file = NULL;
}

/**
 * kvt_file_mode() - how a pool reads its file
 * @pool: any pool
 *
 * Return: 0 for a pool without file, 1 for one read through the page
 * cache, 2 for one read by direct I/O (sysfs).
 */
int kvt_file_mode(struct kvt_pool *pool)
{
	if (!pool->file)
		return 0;
	return pool->file->filp->f_flags & O_DIRECT ? 2 : 1;
}

int kvt_file_init(void)
{
	kvt_file_wq = alloc_workqueue("kvtier-file", WQ_UNBOUND, KVT_FILE_QD);
	return kvt_file_wq ? 0 : -ENOMEM;
}

void kvt_file_exit(void)
{
	destroy_workqueue(kvt_file_wq);
}
