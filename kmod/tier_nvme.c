// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe tier: log-structured stores of blocks, one per block device (up to
 * KVTIER_NVME_MAX attached, each its own log; a block's copy names its
 * device, and dirty blocks go to the device with the shortest queue).
 *
 * Blocks leave DRAM by demotion: a writer gathers dirty blocks from the cold
 * end of the pools' replacement lists and writes them, a region at a time,
 * in large sequential writes straight from the blocks' pages (no copy, no
 * page cache), then the region's summary of what it holds with a cache
 * flush before it and FUA, so that the data is durable before the summary
 * that names it and a torn region is never believed. Once a region is
 * durable its blocks are clean: their DRAM copies can go at no cost, and they
 * come back on use by a read that is verified against a crc32c keyed with
 * the pool, the key and the region's write sequence, so a stale, misplaced or
 * corrupted copy is a miss, never wrong bytes.
 *
 * Regions are written in order around the device; the next one to write is
 * reclaimed first (its blocks that live nowhere else are dropped). Nothing is
 * overwritten in place except the superblock and the pool table. What the
 * log no longer holds is discarded (parameter "discard"): a formatted
 * store's data area, and the rest of a reclaimed region once the first
 * segment written there again is durable, when replay no longer reaches
 * what was beyond it.
 *
 * Tiering is inclusive: a block promoted back to DRAM keeps its NVMe copy,
 * so evicting it again costs no write. The store on the device (superblock,
 * pool table, recovery, attach) is nvme_store.c.
 *
 * A DROP of a block with a copy queues a tombstone naming that copy; it
 * rides in the next segment written, and SYNC writes the pool's and waits
 * for them, so a synced DROP survives reload, reboot and power cut. Segments
 * are written in the order of (seq, page), which is what lets a tombstone
 * name "this copy and older ones" without ever removing a newer PUT.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/crc32.h>
#include <linux/crc32c.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include "nvme.h"
#include "trace.h"

static bool kvt_discard = true;
module_param_named(discard, kvt_discard, bool, 0644);
MODULE_PARM_DESC(discard,
		 "Discard what the NVMe log frees, where the device can (default Y)");

static bool kvt_reads_first = true;
module_param_named(reads_first, kvt_reads_first, bool, 0644);
MODULE_PARM_DESC(reads_first,
		 "While block reads are in flight, write one segment at a time, not 4 (default Y)");

#define KVT_WRITE_QD		4	/* segment writes in flight */
#define KVT_WRITE_QD_READING	1	/* ... while block reads are, reads_first */
/* Blocks in use with a copy in the next 1/8 of the log to reclaim: rewritten */
#define KVT_RESCUE_SHARE	8
#define KVT_READ_TRIES		3	/* tries of a block read that fails */

/**
 * kvt_rec_seed() - where the crc of a record starts
 * @pool_id: the pool's NVMe identity
 * @key: the block's key
 * @seq: the region's write sequence
 *
 * Binding the identity into the checksum makes a stale, misplaced or
 * foreign copy fail verification.
 *
 * Return: the crc32c of the identity.
 */
u32 kvt_rec_seed(u64 pool_id, const u64 *key, u64 seq)
{
	__le64 id[4] = {
		cpu_to_le64(pool_id), cpu_to_le64(key[0]),
		cpu_to_le64(key[1]), cpu_to_le64(seq),
	};

	return crc32c(~0U, id, sizeof(id));
}

/**
 * kvt_rec_crc() - a record's keyed crc, from its block's crc
 * @seed: kvt_rec_seed() of the record
 * @dcrc: the crc32c of the block's bytes started from 0 (its ncrc)
 * @len: the block's size in bytes
 *
 * crc32c is linear: started from @seed, the crc of @len bytes is the crc
 * of @len zero bytes started from @seed xor their crc started from 0.
 *
 * Return: the crc32c of the block's bytes started from @seed.
 */
u32 kvt_rec_crc(u32 seed, u32 dcrc, u64 len)
{
	return __crc32c_le_combine(seed, dcrc, len);
}

/**
 * kvt_rec_dcrc() - a block's crc, from its record's keyed crc
 * @seed: kvt_rec_seed() of the record
 * @crc: the record's crc
 * @len: the block's size in bytes
 *
 * The inverse of kvt_rec_crc().
 *
 * Return: the crc32c of the block's bytes started from 0.
 */
u32 kvt_rec_dcrc(u32 seed, u32 crc, u64 len)
{
	return __crc32c_le_shift(seed, len) ^ crc;
}

struct kvt_nvme *kvt_nvmes[KVTIER_NVME_MAX];
DEFINE_SPINLOCK(kvt_nvme_qlock);

/* The page of a kmalloc'ed or vmalloc'ed buffer's byte @p. */
static struct page *kvt_buf_page(void *p)
{
	return is_vmalloc_addr(p) ? vmalloc_to_page(p) : virt_to_page(p);
}

/**
 * kvt_nvme_rw() - synchronous I/O on a kernel buffer (kmalloc or vmalloc)
 * @nvme: the device
 * @opf: REQ_OP_READ, or REQ_OP_WRITE with flags
 * @off: byte offset on the device, 4 KiB aligned
 * @buf: the buffer
 * @len: its length, 4 KiB aligned
 *
 * Return: 0 or -errno.
 */
int kvt_nvme_rw(struct kvt_nvme *nvme, blk_opf_t opf, u64 off, void *buf,
		size_t len)
{
	struct bio *bio;
	size_t done = 0;
	int ret;

	bio = bio_alloc(nvme->bdev, BIO_MAX_VECS, opf, GFP_KERNEL);
	bio->bi_iter.bi_sector = KVT_SECTORS(off);
	while (done < len) {
		void *p = buf + done;
		struct page *page = kvt_buf_page(p);
		size_t n = min_t(size_t, len - done,
				 PAGE_SIZE - offset_in_page(p));

		if (bio_add_page(bio, page, n, offset_in_page(p)) != n) {
			struct bio *prev = bio;

			bio = bio_alloc(nvme->bdev, BIO_MAX_VECS, opf,
					GFP_KERNEL);
			bio->bi_iter.bi_sector = bio_end_sector(prev);
			bio_chain(prev, bio);
			submit_bio(prev);
			continue;
		}
		done += n;
	}
	ret = submit_bio_wait(bio);
	bio_put(bio);
	if (ret)
		atomic64_inc(&nvme->io_errors);
	else if (op_is_write(opf))
		atomic64_add(len, &nvme->bytes_written);
	else
		atomic64_add(len, &nvme->bytes_read);
	return ret;
}

/**
 * kvt_nvme_discard() - tell the device that a range holds nothing
 * @nvme: the device
 * @off: byte offset, 4 KiB aligned
 * @len: bytes, 4 KiB aligned
 *
 * A no-op with the "discard" parameter off or on a device that does not
 * discard. Synchronous: a write there that follows lands after it. A
 * discard that fails loses nothing (the range is dead), so it is only not
 * counted.
 */
void kvt_nvme_discard(struct kvt_nvme *nvme, u64 off, u64 len)
{
	if (!len || !READ_ONCE(kvt_discard) ||
	    !bdev_max_discard_sectors(nvme->bdev))
		return;
	if (!blkdev_issue_discard(nvme->bdev, KVT_SECTORS(off),
				  KVT_SECTORS(len), GFP_NOIO))
		atomic64_add(len, &nvme->bytes_discarded);
}

/**
 * kvt_summary_crc() - the crc of a region summary
 * @dr: the summary
 * @len: its length
 *
 * Return: the crc32c of @len bytes from @dr, its crc field taken as zero.
 */
u32 kvt_summary_crc(struct kvt_disk_region *dr, size_t len)
{
	__le32 saved = dr->crc;
	u32 crc;

	dr->crc = 0;
	crc = crc32c(~0U, dr, len);
	dr->crc = saved;
	return crc;
}

/**
 * kvt_seg_pages() - the length of a segment
 * @nvme: the device
 * @dr: its valid summary
 *
 * Return: pages of the segment, summary included (a version 1 summary
 * spans its region).
 */
u32 kvt_seg_pages(struct kvt_nvme *nvme, struct kvt_disk_region *dr)
{
	return le32_to_cpu(dr->seg_pages) ?: nvme->region_pages;
}

/**
 * kvt_summary_read() - read and check a segment's summary
 * @nvme: the device
 * @r: the region
 * @page: where the segment starts, in pages from the region's start
 * @dr: a buffer of kvt_summary_bytes()
 *
 * Reads its first page, which says how long the summary is, then the rest
 * of it if any: a region of many small segments (a tombstone's is one page)
 * costs a page each to replay or reclaim, not a largest summary each.
 *
 * Return: 0 and a valid summary of a segment at @page; -EBADMSG if there is
 * none; -EIO.
 */
int kvt_summary_read(struct kvt_nvme *nvme, u32 r, u32 page,
		     struct kvt_disk_region *dr)
{
	size_t len = min_t(size_t, kvt_summary_bytes(nvme),
			   (size_t)(nvme->region_pages - page) * KVT_DISK_PAGE);
	u64 off = kvt_region_bytes_off(nvme, r) + (u64)page * KVT_DISK_PAGE;
	u32 nr, nr_meta, slen, seg;
	int ret;

	ret = kvt_nvme_rw(nvme, REQ_OP_READ, off, dr, KVT_DISK_PAGE);
	if (ret)
		return ret;
	nr = le32_to_cpu(dr->nr);
	nr_meta = le32_to_cpu(dr->nr_meta);
	slen = le32_to_cpu(dr->summary_bytes);
	if (le64_to_cpu(dr->magic) != KVT_REGION_MAGIC ||
	    memcmp(dr->uuid, nvme->uuid, sizeof(dr->uuid)) ||
	    nr > nvme->max_recs || nr_meta > nr || slen > len ||
	    slen % KVT_DISK_PAGE || slen < kvt_summary_len(nr, nr_meta) ||
	    !dr->seq)
		return -EBADMSG;
	if (slen > KVT_DISK_PAGE) {
		ret = kvt_nvme_rw(nvme, REQ_OP_READ, off + KVT_DISK_PAGE,
				  (char *)dr + KVT_DISK_PAGE,
				  slen - KVT_DISK_PAGE);
		if (ret)
			return ret;
	}
	if (le32_to_cpu(dr->crc) != kvt_summary_crc(dr, slen))
		return -EBADMSG;
	seg = kvt_seg_pages(nvme, dr);
	if (le32_to_cpu(dr->seg_page) != page ||
	    (!le32_to_cpu(dr->seg_pages) && page) ||
	    seg < slen / KVT_DISK_PAGE || seg > nvme->region_pages - page)
		return -EBADMSG;
	return 0;
}

/**
 * kvt_segment_read() - read the next segment of a region
 * @nvme: the device
 * @r: the region
 * @page: in: where the segment starts (0: the first); out: where the next
 *	  one would
 * @seq: the region's sequence and @nonce its nonce, read from its first
 *	 segment; later segments must carry both
 * @dr: a buffer of kvt_summary_bytes()
 *
 * A segment that was never written, or whose summary did not reach the
 * device, ends the chain: what follows it is never believed. The nonce,
 * drawn when the region is opened, stops stale bytes from an older write
 * of the region (a block's data, say) from passing for a later segment.
 *
 * Return: 0 and @dr valid; -EBADMSG at the end of the chain; -EIO.
 */
int kvt_segment_read(struct kvt_nvme *nvme, u32 r, u32 *page, u64 seq,
		     struct kvt_disk_region *dr)
{
	u64 nonce = *page ? nvme->regions[r].nonce : 0;
	int ret;

	if (*page >= nvme->region_pages)
		return -EBADMSG;
	ret = kvt_summary_read(nvme, r, *page, dr);
	if (ret)
		return ret;
	if (*page && (le64_to_cpu(dr->seq) != seq ||
		      le64_to_cpu(dr->nonce) != nonce))
		return -EBADMSG;
	if (!*page)
		nvme->regions[r].nonce = le64_to_cpu(dr->nonce);
	*page += kvt_seg_pages(nvme, dr);
	return 0;
}

/**
 * kvt_tomb_new() - a tombstone for a dropped copy
 * @pool: the pool, its lock held
 * @key: the key
 * @nloc: the copy's device page
 * @seq: the seq of its region
 *
 * The pool is referenced and counts it in nr_drops until kvt_tomb_end().
 *
 * Return: the tombstone; NULL without memory, counted in drops_lost (the
 * next SYNC reports -EIO).
 */
static struct kvt_tomb *kvt_tomb_new(struct kvt_pool *pool, const u64 *key,
				     u32 nloc, u64 seq)
{
	struct kvt_tomb *t;

	lockdep_assert_held(&pool->lock);
	t = kmalloc(sizeof(*t), GFP_NOWAIT | __GFP_NOWARN);
	if (!t) {
		pool->drops_lost++;
		return NULL;
	}
	kref_get(&pool->ref);
	t->pool = pool;
	t->key[0] = key[0];
	t->key[1] = key[1];
	t->nloc = nloc;
	t->seq = seq;
	pool->nr_drops++;
	return t;
}

/*
 * Queue a tombstone for the next segment of @nvme, the dropped copy's
 * device. kvt_nvme_qlock held. The writer is not woken: the tombstone
 * rides with the next blocks written, or SYNC and detach wake it.
 */
static void kvt_tomb_queue(struct kvt_nvme *nvme, struct kvt_tomb *t)
{
	lockdep_assert_held(&kvt_nvme_qlock);
	list_add_tail(&t->node, &nvme->tombs);
	nvme->nr_tombs++;
}

/**
 * kvt_tomb_end() - a tombstone's segment write ended, or it never will
 * @t: the tombstone, off every list; freed
 * @status: 0 when it is durable
 */
void kvt_tomb_end(struct kvt_tomb *t, int status)
{
	struct kvt_pool *pool = t->pool;

	spin_lock(&pool->lock);
	pool->nr_drops--;
	if (status)
		pool->drops_lost++;
	spin_unlock(&pool->lock);
	wake_up_all(&pool->wq);
	kvt_pool_put(pool);
	kfree(t);
}

/*
 * A tombstone of region @r, which is being reclaimed: while the region of
 * the copy it names still holds that copy (same seq), the copy could come
 * back at the next attach, so the tombstone is written again at the head
 * of the log; else it is forgotten. nvme->lock held.
 */
static void kvt_tomb_reclaim(struct kvt_nvme *nvme, u32 r,
			     struct kvt_disk_rec *rec)
{
	u64 key[2] = { le64_to_cpu(rec->key[0]), le64_to_cpu(rec->key[1]) };
	u32 nloc = le32_to_cpu(rec->page);
	u64 seq = le64_to_cpu(rec->drop_seq);
	struct kvt_pool *pool;
	struct kvt_tomb *t;
	u32 tr;

	if (kvt_loc_bytes(nloc) < KVT_DATA_OFF)
		return;
	tr = kvt_loc_region(nvme, nloc);
	if (tr == r || tr >= nvme->nr_regions || nvme->regions[tr].seq != seq)
		return;
	pool = nvme->pool_get(le64_to_cpu(rec->pool_id));
	if (!pool)
		return;
	spin_lock(&pool->lock);
	t = kvt_tomb_new(pool, key, nloc, seq);
	if (t) {
		spin_lock(&kvt_nvme_qlock);
		kvt_tomb_queue(nvme, t);
		spin_unlock(&kvt_nvme_qlock);
	}
	spin_unlock(&pool->lock);
	kvt_pool_put(pool);
}

/*
 * Relocation, its first half: whether a block only on NVMe, its copy in
 * the region being reclaimed, is to be kept (kvt_policy_relocate(): read
 * back since it was written). If so it is KVT_BF_MOVING, which readers
 * wait for as for a load, and held as a user, until kvt_relocate() is
 * done with it. pool->lock held.
 */
static bool kvt_relocate_take(struct kvt_pool *pool, u32 addr)
{
	struct kvt_block *blk = &pool->blocks[addr];

	lockdep_assert_held(&pool->lock);
	if (blk->flags || blk->users || kvt_in_dram(blk) ||
	    !kvt_policy_relocate(pool, addr))
		return false;
	blk->flags |= KVT_BF_WB | KVT_BF_MOVING;
	blk->users++;
	pool->nr_wb++;
	return true;
}

/*
 * Bytes of a relocated copy as kvt_relocate() reads them and the writer
 * writes them: the part table's page first in a pool with parts, then the
 * block, or the @zbytes stored of a compressed copy, in whole pages.
 */
static u32 kvt_moved_len(const struct kvt_pool *pool, u32 zbytes)
{
	return (pool->parts ? KVT_DISK_PAGE : 0) +
	       (zbytes ? round_up(zbytes, KVT_DISK_PAGE) : pool->block_size);
}

/*
 * Relocation, its second half, for a block kvt_relocate_take() took: its
 * bytes are read now, while the region (of sequence @seq) still holds
 * them, and checked before anything else: a corrupted copy is never
 * written again under a fresh record. A raw copy is checked against the
 * block's crc; a compressed one, moved as it is stored, against its
 * record's keyed crc. A copy of a pool with parts is read with the page
 * of its part table before it, and the table moves with it if it is the
 * block's (it does not depend on where the copy is), else is zeroed: part
 * reads of the new copy then fall back to whole reads, as for a copy the
 * writer could make no table for. Then they are queued at the head of the write
 * queue, so that the first segment written into the region takes them;
 * the write's end (kvt_wb_finish()) gives the block its new place. No
 * memory, a read that fails or does not verify, a full queue: the block
 * goes, as reclaim lets blocks go. nvme->lock held, pool->lock not.
 */
static void kvt_relocate(struct kvt_nvme *nvme, struct kvt_pool *pool,
			 u32 addr, u64 seq)
{
	struct kvt_block *blk = &pool->blocks[addr];
	u32 toff = pool->parts ? KVT_DISK_PAGE : 0;
	bool ok = false, table = false;
	struct kvt_zloc zl = {};
	struct kvt_wb_entry *e;
	unsigned int noio;
	u32 nloc, ncrc;
	void *buf;

	lockdep_assert_held(&nvme->lock);
	/*
	 * Its copy, as kvt_relocate_take() found it: an unlink meanwhile
	 * leaves nloc as it is, and the block's state is looked at after.
	 */
	spin_lock(&pool->lock);
	nloc = blk->nloc;
	ncrc = blk->ncrc;
	if (pool->zloc)
		zl = pool->zloc[addr];
	spin_unlock(&pool->lock);
	/* A compressed copy: its stored bytes' crc, from its record's. */
	if (zl.bytes)
		ncrc = kvt_rec_dcrc(kvt_rec_seed(pool->id, blk->key, seq),
				    zl.crc, zl.bytes);
	noio = memalloc_noio_save();
	buf = kvmalloc(toff + pool->block_size,
		       GFP_KERNEL | __GFP_NORETRY | __GFP_NOWARN);
	memalloc_noio_restore(noio);
	/* A compressed copy is shorter than the block by a page at least. */
	if (buf && nloc != KVT_NIL && zl.bytes < pool->block_size &&
	    !kvt_nvme_rw(nvme, REQ_OP_READ, kvt_loc_bytes(nloc) - toff, buf,
			 kvt_moved_len(pool, zl.bytes)))
		ok = crc32c(0, buf + toff, zl.bytes ?: pool->block_size) ==
		     ncrc;
	if (ok && toff) {
		table = kvt_parts_table_ok(pool, blk->key, ncrc, buf);
		if (!table)
			memset(buf, 0, toff);
	}

	spin_lock(&pool->lock);
	if (ok && blk->state == KVT_BLK_READY) {
		ok = false;
		spin_lock(&kvt_nvme_qlock);
		if (nvme->qlen < nvme->qcap && !nvme->closing) {
			nvme->qhead = (nvme->qhead + nvme->qcap - 1) %
				      nvme->qcap;
			e = &nvme->queue[nvme->qhead];
			e->pool = pool;
			e->addr = addr;
			e->victim = false;
			e->moved = buf;
			e->moved_z = zl.bytes;
			e->moved_zcrc = ncrc;
			e->moved_table = table;
			nvme->qlen++;
			kref_get(&pool->ref);
			ok = true;
		}
		spin_unlock(&kvt_nvme_qlock);
		if (ok) {
			spin_unlock(&pool->lock);
			return;
		}
	}
	kvfree(buf);
	blk->flags &= ~(KVT_BF_WB | KVT_BF_MOVING);
	pool->nr_wb--;
	pool->io_events++;
	if (blk->state == KVT_BLK_READY) {
		atomic64_inc(&nvme->lost_blocks);
		pool->stats.lost_blocks++;
		pool->res->forget_nvme(pool, addr);
	}
	/* Drops pool->lock; frees the block if it was unlinked. */
	kvt_res_hook_put(pool, addr);
}

/*
 * Forget the blocks of one segment whose only copy is there, but those
 * relocated; carry its tombstones forward where they still matter.
 */
static void kvt_segment_reclaim(struct kvt_nvme *nvme, u32 r,
				struct kvt_disk_region *dr)
{
	u32 first = kvt_region_bytes_off(nvme, r) / KVT_DISK_PAGE;
	u32 i;

	for (i = 0; i < le32_to_cpu(dr->nr); i++) {
		struct kvt_disk_rec *rec = &dr->recs[i];
		u64 key[2] = { le64_to_cpu(rec->key[0]),
			       le64_to_cpu(rec->key[1]) };
		struct kvt_pool *pool;
		u32 addr;

		if (le32_to_cpu(rec->flags) & KVT_REC_DROP) {
			kvt_tomb_reclaim(nvme, r, rec);
			continue;
		}
		pool = nvme->pool_get(le64_to_cpu(rec->pool_id));
		if (!pool)
			continue;
		spin_lock(&pool->lock);
		addr = kvt_block_find(pool, key);
		if (addr != KVT_NIL && pool->blocks[addr].ndev == nvme->index &&
		    pool->blocks[addr].nloc == first + le32_to_cpu(rec->page)) {
			if (kvt_relocate_take(pool, addr)) {
				spin_unlock(&pool->lock);
				kvt_relocate(nvme, pool, addr,
					     le64_to_cpu(dr->seq));
				kvt_pool_put(pool);
				continue;
			}
			/*
			 * Its only copy goes: the device evicts it like a
			 * cache, synced or not. SYNC does not report it (it
			 * was durable when SYNC said so); the counters do.
			 */
			if (!kvt_in_dram(&pool->blocks[addr]) ||
			    pool->blocks[addr].flags & KVT_BF_BUSY) {
				atomic64_inc(&nvme->lost_blocks);
				pool->stats.lost_blocks++;
			}
			pool->res->forget_nvme(pool, addr);
		}
		spin_unlock(&pool->lock);
		kvt_pool_put(pool);
	}
}

/*
 * Reclaim region @r before it is written again: every block whose only
 * copy is there goes, the others become dirty. A block that cannot be
 * forgotten because its summary cannot be read fails verification when
 * read (the region's sequence changes), so it is a miss, not wrong bytes.
 * Caller holds nvme->lock.
 */
static void kvt_region_reclaim(struct kvt_nvme *nvme, u32 r,
			       struct kvt_disk_region *dr)
{
	u32 page = 0;
	int ret;

	for (;;) {
		ret = kvt_segment_read(nvme, r, &page, nvme->regions[r].seq,
				       dr);
		if (ret)
			break;
		kvt_segment_reclaim(nvme, r, dr);
	}
	kvt_nvme_readers_drain(nvme, r, ret, page);
	nvme->regions[r].seq = 0;
	nvme->regions[r].used = 0;
	nvme->regions[r].chain = 0;
	nvme->regions[r].state = KVT_REGION_FREE;
	atomic64_inc(&nvme->reclaimed);
}

/* struct kvt_io - the bios of one region write or one block read */
struct kvt_io {
	struct kvt_nvme *nvme;
	struct workqueue_struct *wq;	/* where work runs: nvme's wq or rwq */
	atomic_t pending;		/* bios in flight, +1 while submitting */
	int status;
	u64 start;			/* ktime_get_ns() at kvt_io_init() */
	struct work_struct work;	/* queued when the last bio ends */
};

static void kvt_io_end_io(struct bio *bio)
{
	struct kvt_io *io = bio->bi_private;

	if (bio->bi_status) {
		io->status = blk_status_to_errno(bio->bi_status);
		atomic64_inc(&io->nvme->io_errors);
	}
	bio_put(bio);
	if (atomic_dec_and_test(&io->pending))
		queue_work(io->wq, &io->work);
}

static void kvt_io_init(struct kvt_io *io, struct kvt_nvme *nvme,
			work_func_t done)
{
	io->nvme = nvme;
	io->wq = nvme->wq;
	io->status = 0;
	io->start = ktime_get_ns();
	atomic_set(&io->pending, 1);
	INIT_WORK(&io->work, done);
}

static struct bio *kvt_io_bio(struct kvt_io *io, blk_opf_t opf,
			      sector_t sector)
{
	struct bio *bio = bio_alloc(io->nvme->bdev, BIO_MAX_VECS, opf,
				    GFP_NOIO);

	bio->bi_iter.bi_sector = sector;
	bio->bi_private = io;
	bio->bi_end_io = kvt_io_end_io;
	return bio;
}

/* Add a physically contiguous range, starting a new bio when one is full. */
static struct bio *kvt_io_add(struct kvt_io *io, struct bio *bio,
			      struct page *page, u32 len)
{
	while (bio_add_page(bio, page, len, 0) != len) {
		struct bio *next = kvt_io_bio(io, bio->bi_opf,
					      bio_end_sector(bio));

		atomic_inc(&io->pending);
		submit_bio(bio);
		bio = next;
	}
	return bio;
}

/* Add a block's DRAM pages, a chunk at a time. */
static struct bio *kvt_io_add_block(struct kvt_io *io, struct bio *bio,
				    struct kvt_pool *pool,
				    struct kvt_block *blk)
{
	u32 chunk;

	for (chunk = 0; chunk < pool->pages_per_block;
	     chunk += 1U << blk->order)
		bio = kvt_io_add(io, bio, kvt_dram_page(pool, blk, chunk),
				 PAGE_SIZE << blk->order);
	return bio;
}

/* Add a kvmalloc'ed buffer of whole pages. */
static struct bio *kvt_io_add_buf(struct kvt_io *io, struct bio *bio,
				  void *buf, u64 len)
{
	u64 off;

	for (off = 0; off < len; off += PAGE_SIZE)
		bio = kvt_io_add(io, bio, kvt_buf_page(buf + off), PAGE_SIZE);
	return bio;
}

/* Submit the last bio (if any) and drop the submitter's count. */
static void kvt_io_submit(struct kvt_io *io, struct bio *bio)
{
	if (bio) {
		atomic_inc(&io->pending);
		submit_bio(bio);
	}
	if (atomic_dec_and_test(&io->pending))
		queue_work(io->wq, &io->work);
}

/* A segment write in flight. */
struct kvt_wbr {
	struct kvt_io io;
	u32 region;
	u32 page;		/* where the segment starts in the region */
	u32 pages;		/* its length, as reserved */
	u64 seq;
	u64 nonce;
	u32 nr;			/* blocks in ents[] */
	struct list_head tombs;	/* tombstones it writes */
	u32 nr_tombs;
	u64 bytes;		/* summary bytes written */
	u64 tables;		/* part table bytes written */
	u64 demoted;		/* block bytes written */
	u64 stored;		/* and the bytes they took (compressed) */
	u64 data;		/* and the pages those took, in bytes */
	bool data_done;		/* the data is durable; the summary goes now */
	bool discard_rest;	/* the first segment of a reclaimed region */
	struct kvt_disk_region *summary;
	struct kvt_wb_entry ents[];
};

/*
 * The writer's memory comes from the page allocator when it can, else from
 * the device's reserve of one segment (mempools made at attach): a segment
 * written from the reserve returns it when it ends, so when no segment of
 * the device is in flight the reserve is full and the writer goes on. A
 * writer that only waited for memory could wait for ever: the memory it
 * needs may be what its writes would let eviction free, and a detach
 * waits for its queue to drain.
 */
static void *kvt_wb_mem_alloc(gfp_t gfp, void *size)
{
	if (kvt_should_fail_writer((size_t)size))
		return NULL;
	return kvmalloc((size_t)size, gfp);
}

static void kvt_wb_mem_free(void *p, void *size)
{
	kvfree(p);
}

static size_t kvt_wbr_bytes(struct kvt_nvme *nvme)
{
	return struct_size((struct kvt_wbr *)NULL, ents, nvme->max_recs);
}

/*
 * Fresh memory (no warning on failure: there is the reserve), or the
 * reserve's without waiting; NULL if neither.
 */
static void *kvt_wb_mem_get(mempool_t *reserve, size_t size)
{
	return kvt_wb_mem_alloc(GFP_NOIO | __GFP_NOWARN, (void *)size) ?:
	       mempool_alloc(reserve, GFP_NOWAIT);
}

/**
 * kvt_nvme_writer_init() - make a device's reserve of writer memory
 * @nvme: a device being attached, its geometry known
 *
 * Return: 0 or -ENOMEM.
 */
int kvt_nvme_writer_init(struct kvt_nvme *nvme)
{
	nvme->wbr_reserve = mempool_create(1, kvt_wb_mem_alloc,
					   kvt_wb_mem_free,
					   (void *)kvt_wbr_bytes(nvme));
	nvme->summary_reserve = mempool_create(1, kvt_wb_mem_alloc,
					       kvt_wb_mem_free,
					       (void *)kvt_summary_bytes(nvme));
	if (!nvme->wbr_reserve || !nvme->summary_reserve) {
		kvt_nvme_writer_exit(nvme);
		return -ENOMEM;
	}
	return 0;
}

/**
 * kvt_nvme_writer_exit() - free the reserve, once no writer runs
 * @nvme: the device
 */
void kvt_nvme_writer_exit(struct kvt_nvme *nvme)
{
	mempool_destroy(nvme->summary_reserve);
	mempool_destroy(nvme->wbr_reserve);
	nvme->summary_reserve = NULL;
	nvme->wbr_reserve = NULL;
}

static void kvt_wbr_free(struct kvt_nvme *nvme, struct kvt_wbr *wbr)
{
	if (wbr->summary)
		mempool_free(wbr->summary, nvme->summary_reserve);
	mempool_free(wbr, nvme->wbr_reserve);
}

static struct kvt_wbr *kvt_wbr_alloc(struct kvt_nvme *nvme)
{
	size_t size = kvt_wbr_bytes(nvme);
	struct kvt_wbr *wbr;

	wbr = kvt_wb_mem_get(nvme->wbr_reserve, size);
	if (!wbr)
		return NULL;
	memset(wbr, 0, size);
	INIT_LIST_HEAD(&wbr->tombs);
	wbr->summary = kvt_wb_mem_get(nvme->summary_reserve,
				      kvt_summary_bytes(nvme));
	if (!wbr->summary) {
		kvt_wbr_free(nvme, wbr);
		return NULL;
	}
	return wbr;
}

/*
 * Where a copy written ends, for a pool that compresses; counted, but
 * for a relocated one (the pool's bytes were counted when first written).
 */
static void kvt_wb_zloc(struct kvt_pool *pool, struct kvt_wb_entry *e)
{
	struct kvt_zloc *zl;

	lockdep_assert_held(&pool->lock);
	if (!pool->zloc)
		return;
	zl = &pool->zloc[e->addr];
	if (e->moved) {
		zl->bytes = e->moved_z;
		zl->crc = e->moved_z ? e->zcrc : 0;
		return;
	}
	zl->bytes = e->z.bytes;
	zl->crc = e->z.pages ? e->zcrc : 0;
	pool->stats.z_bytes_in += pool->block_size;
	if (e->z.pages) {
		pool->stats.z_blocks++;
		pool->stats.z_bytes_stored += e->z.bytes;
	} else {
		pool->stats.z_raw_blocks++;
		pool->stats.z_bytes_stored += pool->block_size;
	}
}

static void kvt_wb_finish(struct kvt_nvme *nvme, struct kvt_pool *pool,
			  struct kvt_wb_entry *e, u32 nloc, u64 seq, int status)
{
	struct kvt_block *blk = &pool->blocks[e->addr];
	struct kvt_tomb *t;

	spin_lock(&pool->lock);
	blk->flags &= ~(KVT_BF_WB | KVT_BF_MOVING);
	pool->nr_wb--;
	pool->io_events++;
	if (blk->state == KVT_BLK_READY && e->moved) {
		/* Relocated: its old copy is gone, the new one is its only. */
		if (!status && nloc != KVT_NIL) {
			blk->nloc = nloc;
			kvt_wb_zloc(pool, e);
			atomic64_inc(&nvme->rescued);
		} else {
			atomic64_inc(&nvme->lost_blocks);
			pool->stats.lost_blocks++;
			pool->res->forget_nvme(pool, e->addr);
		}
	} else if (blk->state == KVT_BLK_READY) {
		if (!status && nloc != KVT_NIL) {
			blk->ndev = nvme->index;
			blk->nloc = nloc;
			pool->nr_nvme++;
			pool->nr_dirty--;
			pool->stats.demotions++;
			kvt_wb_zloc(pool, e);
			trace_kvtier_block_written(pool, e->addr);
			pool->res->cleaned(pool, e->addr);
		}
		if (status)
			pool->wb_errors++;
		if (status && e->victim && !blk->pins && !blk->hold &&
		    blk->users == 1) {
			/*
			 * A victim that cannot be demoted is dropped: its
			 * acknowledged bytes are lost, and the next SYNC
			 * says so.
			 */
			pool->res->unlink(pool, e->addr, KVTIER_EVR_IO_ERROR);
			pool->stats.evictions++;
			pool->wb_lost++;
		}
	} else if (!status && nloc != KVT_NIL) {
		/*
		 * Dropped while its copy was being written: the copy is on
		 * the device now, and no block names it; a tombstone does.
		 */
		t = kvt_tomb_new(pool, blk->key, nloc, seq);
		if (t) {
			spin_lock(&kvt_nvme_qlock);
			kvt_tomb_queue(nvme, t);
			spin_unlock(&kvt_nvme_qlock);
		}
	}
	kvt_res_hook_put(pool, e->addr);
}

/* Second phase of a segment write: its summary, at the segment's start. */
static void kvt_wbr_write_summary(struct kvt_wbr *wbr)
{
	struct kvt_nvme *nvme = wbr->io.nvme;
	void *dr = wbr->summary;
	struct bio *bio;

	/*
	 * The data went without FUA: the flush ahead of the summary makes it
	 * durable first, one cache flush a segment rather than FUA on every
	 * data write. The same work item runs again when the summary's bios
	 * end.
	 */
	atomic_set(&wbr->io.pending, 1);
	bio = kvt_io_bio(&wbr->io, REQ_OP_WRITE | REQ_FUA | REQ_SYNC |
			 (wbr->demoted ? REQ_PREFLUSH : 0),
			 KVT_SECTORS(kvt_region_bytes_off(nvme, wbr->region) +
				     (u64)wbr->page * KVT_DISK_PAGE));
	bio = kvt_io_add_buf(&wbr->io, bio, dr, wbr->bytes);
	kvt_io_submit(&wbr->io, bio);
}

static void kvt_wbr_done(struct work_struct *work)
{
	struct kvt_wbr *wbr = container_of(work, struct kvt_wbr, io.work);
	struct kvt_nvme *nvme = wbr->io.nvme;
	struct kvt_disk_region *dr = wbr->summary;
	u32 first = kvt_region_bytes_off(nvme, wbr->region) / KVT_DISK_PAGE;
	struct kvt_tomb *t, *tn;
	struct kvt_region *rg;
	u32 i;

	/*
	 * The summary is written only once the data it describes is durable:
	 * a power cut in between leaves a region whose summary does not
	 * verify, so recovery never prefers its records to older good ones.
	 */
	if (!wbr->io.status && !wbr->data_done) {
		wbr->data_done = true;
		kvt_wbr_write_summary(wbr);
		return;
	}
	/*
	 * The first segment of a reclaimed region is durable: replay stops
	 * after it now, so what the region held beyond it is dead. The
	 * region is WRITING until below: nothing is appended before the
	 * discard ends.
	 */
	if (!wbr->io.status && wbr->discard_rest) {
		u64 end = (u64)(wbr->page + wbr->pages) * KVT_DISK_PAGE;

		kvt_nvme_discard(nvme, kvt_region_bytes_off(nvme, wbr->region) +
				 end, nvme->region_bytes - end);
	}

	mutex_lock(&nvme->lock);
	rg = &nvme->regions[wbr->region];
	if (wbr->io.status) {
		/* Earlier segments stay valid; nothing is appended after. */
		if (nvme->open == wbr->region)
			nvme->open = KVT_NIL;
		rg->state = wbr->page ? KVT_REGION_FULL : KVT_REGION_FREE;
		if (!wbr->page) {
			rg->seq = 0;
			rg->used = 0;
		}
	} else {
		rg->state = nvme->open == wbr->region ? KVT_REGION_OPEN :
							KVT_REGION_FULL;
		rg->chain = wbr->page + wbr->pages;
		atomic64_add(wbr->bytes + wbr->tables + wbr->data,
			     &nvme->bytes_written);
		atomic64_add(wbr->demoted, &nvme->bytes_demoted);
		atomic64_add(wbr->stored, &nvme->bytes_stored);
	}
	mutex_unlock(&nvme->lock);

	for (i = 0; i < wbr->nr; i++) {
		struct kvt_wb_entry *e = &wbr->ents[i];
		u32 nloc = KVT_NIL;

		if (e->rec != KVT_NIL)
			nloc = first + le32_to_cpu(dr->recs[e->rec].page);
		if (e->table)
			__free_page(e->table);
		kvt_wb_finish(nvme, e->pool, e, nloc, wbr->seq,
			      wbr->io.status);
		kvt_z_release(&e->z);
		kvfree(e->moved);
		kvt_pool_put(e->pool);
	}
	list_for_each_entry_safe(t, tn, &wbr->tombs, node) {
		list_del(&t->node);
		kvt_tomb_end(t, wbr->io.status);
	}
	kvt_lat_add(KVT_LAT_WRITE, wbr->io.start);
	/* Back to the reserve first: the writer may need it to go on. */
	kvt_wbr_free(nvme, wbr);
	atomic_dec(&nvme->writes);
	queue_work(nvme->wq, &nvme->write_work);
	/* Detach flushes nvme->wq after this, so nvme outlives the wake. */
	if (atomic_dec_and_test(&nvme->inflight))
		wake_up_all(&nvme->idle);
}

/* Pages of a segment summary with @nr records, @nr_meta blocks' records. */
static u32 kvt_summary_pages(u32 nr, u32 nr_meta)
{
	return DIV_ROUND_UP(kvt_summary_len(nr, nr_meta), KVT_DISK_PAGE);
}

/*
 * Take entries off the queue for a segment of at most @room pages, summary
 * included, tombstones first (a record each, no data); with @peek, only
 * count them. kvt_nvme_qlock held.
 *
 * Return: the pages the segment takes (0: nothing queued fits).
 */
static u32 kvt_queue_take(struct kvt_nvme *nvme, struct kvt_wbr *wbr,
			  u32 room, bool peek)
{
	u32 data = 0, nr = 0, q = nvme->qhead, left = nvme->qlen, tombs;
	u32 metas = 0, m;

	while (nr < nvme->nr_tombs && nr < nvme->max_recs &&
	       kvt_summary_pages(nr + 1, 0) <= room)
		nr++;
	tombs = nr;
	while (left && nr < nvme->max_recs) {
		struct kvt_wb_entry *e = &nvme->queue[q];
		u32 pages = kvt_nvme_block_pages(e->pool);

		/*
		 * A queued block is held (a user) and READY: its record is
		 * fixed (struct kvt_block), whatever lock is held.
		 */
		m = !!READ_ONCE(e->pool->blocks[e->addr].umeta);
		if (kvt_summary_pages(nr + 1, metas + m) + data + pages > room)
			break;
		metas += m;
		data += pages;
		if (!peek)
			wbr->ents[nr - tombs] = *e;
		nr++;
		q = (q + 1) % nvme->qcap;
		left--;
	}
	if (!nr)
		return 0;
	if (!peek) {
		wbr->nr = nr - tombs;
		nvme->qhead = q;
		nvme->qlen = left;
		wbr->nr_tombs = tombs;
		nvme->nr_tombs -= tombs;
		while (tombs--)
			list_move_tail(nvme->tombs.next, &wbr->tombs);
	}
	return kvt_summary_pages(nr, metas) + data;
}

/* Room left in a region after @used pages, for another segment. */
static bool kvt_region_has_room(struct kvt_nvme *nvme, u32 used)
{
	return nvme->region_pages - used >= kvt_summary_pages(1, 1) + 1;
}

/*
 * Open the next region of the log, reclaiming it if it holds data. A region
 * still open there (the log wrapped round onto it) is closed first.
 * nvme->lock held.
 *
 * Return: 0, or -ENOSPC when a write to that region is still under way.
 */
static int kvt_region_next(struct kvt_nvme *nvme, struct kvt_wbr *wbr)
{
	u32 r = nvme->head;
	struct kvt_region *rg = &nvme->regions[r];

	if (rg->state == KVT_REGION_WRITING)
		return -ENOSPC;
	if (nvme->open == r)
		nvme->open = KVT_NIL;
	/* Its old segments beyond the first new one go once that is in. */
	wbr->discard_rest = rg->state != KVT_REGION_FREE;
	if (wbr->discard_rest)
		kvt_region_reclaim(nvme, r, wbr->summary);
	rg->state = KVT_REGION_WRITING;
	rg->seq = nvme->next_seq++;
	rg->nonce = get_random_u64();
	rg->used = 0;
	nvme->head = (r + 1) % nvme->nr_regions;
	wbr->region = r;
	return 0;
}

/*
 * Fill @wbr with the next segment to write: appended to the open region
 * when the queue fits in what is left of it, else at the start of the next
 * region. Segments of one region are written one at a time, so a segment's
 * summary is never durable before the summaries of those before it.
 *
 * Return: 1 with a segment to submit, counted in nvme->inflight; 0 with
 * nothing to do now; -ENOSPC.
 */
static int kvt_segment_next(struct kvt_nvme *nvme, struct kvt_wbr *wbr)
{
	struct kvt_region *rg = NULL;
	u32 pages;
	int ret = 0;

	mutex_lock(&nvme->lock);
	spin_lock(&kvt_nvme_qlock);
	if (!nvme->qlen && !nvme->nr_tombs)
		goto out_unlock;
	if (nvme->open != KVT_NIL) {
		rg = &nvme->regions[nvme->open];
		/*
		 * While a segment of the open region is being written, only
		 * a batch that fills a region of its own goes ahead, to the
		 * next region, which closes this one; a smaller one waits to
		 * be appended.
		 */
		if (rg->state == KVT_REGION_WRITING) {
			pages = kvt_queue_take(nvme, wbr, nvme->region_pages,
					       true);
			if (kvt_region_has_room(nvme, pages))
				goto out_unlock;
			rg = NULL;
		} else if (!kvt_queue_take(nvme, wbr,
					   nvme->region_pages - rg->used,
					   true)) {
			/* The head of the queue does not fit: close it. */
			rg->state = KVT_REGION_FULL;
			nvme->open = KVT_NIL;
			rg = NULL;
		}
	}
	if (!rg) {
		spin_unlock(&kvt_nvme_qlock);
		ret = kvt_region_next(nvme, wbr);
		spin_lock(&kvt_nvme_qlock);
		if (ret)
			goto out_unlock;
		rg = &nvme->regions[wbr->region];
		/*
		 * The region opened last takes the next segments: one still
		 * being written is closed, so that (seq, page) is the order
		 * in which segments were taken, which replay and tombstones
		 * rely on.
		 */
		nvme->open = wbr->region;
	} else {
		wbr->region = nvme->open;
	}
	wbr->page = rg->used;
	wbr->pages = kvt_queue_take(nvme, wbr, nvme->region_pages - rg->used,
				    false);
	/* A block always fits an empty region (kvt_nvme_clean checks). */
	if (WARN_ON_ONCE(!wbr->pages)) {
		if (nvme->open == wbr->region)
			nvme->open = KVT_NIL;
		rg->state = rg->used ? KVT_REGION_FULL : KVT_REGION_FREE;
		ret = -ENOSPC;
		goto out_unlock;
	}
	/*
	 * Counted in flight in the same kvt_nvme_qlock section that takes
	 * the blocks off the queue: kvt_nvme_idle() never sees the queue
	 * empty with this segment not counted yet.
	 */
	atomic_inc(&nvme->inflight);
	rg->used += wbr->pages;
	rg->state = KVT_REGION_WRITING;
	wbr->seq = rg->seq;
	wbr->nonce = rg->nonce;
	if (nvme->open == wbr->region && !kvt_region_has_room(nvme, rg->used))
		nvme->open = KVT_NIL;
	ret = 1;
out_unlock:
	spin_unlock(&kvt_nvme_qlock);
	mutex_unlock(&nvme->lock);
	return ret;
}

/*
 * A segment took fewer pages than it reserved (its blocks compressed):
 * give the rest back to its region. Nothing is appended to a region while
 * one of its segments is being written, so the rest is the region's end.
 */
static void kvt_segment_shrink(struct kvt_nvme *nvme, struct kvt_wbr *wbr,
			       u32 pages)
{
	mutex_lock(&nvme->lock);
	nvme->regions[wbr->region].used -= wbr->pages - pages;
	wbr->pages = pages;
	mutex_unlock(&nvme->lock);
}

/* Build and submit one segment from the entries in @wbr. */
static void kvt_wbr_submit(struct kvt_wbr *wbr)
{
	struct kvt_nvme *nvme = wbr->io.nvme;
	struct kvt_disk_region *dr = wbr->summary;
	u32 page, i, j, n = 0, seed, nr_meta = 0;
	struct kvt_disk_meta *meta;
	struct kvt_disk_rec *rec;
	struct kvt_tomb *t;
	struct bio *bio;
	u64 demoted = 0, tables = 0, stored = 0, data = 0;
	size_t slen;

	/* Blocks dropped since they were queued are not written. */
	for (i = 0; i < wbr->nr; i++) {
		struct kvt_wb_entry *e = &wbr->ents[i];
		struct kvt_pool *pool = e->pool;

		e->rec = KVT_NIL;
		e->table = NULL;
		memset(&e->z, 0, sizeof(e->z));
		spin_lock(&pool->lock);
		if (pool->blocks[e->addr].state == KVT_BLK_READY &&
		    (e->moved ||
		     !WARN_ON_ONCE(!kvt_in_dram(&pool->blocks[e->addr])))) {
			e->rec = n++;
			nr_meta += !!pool->blocks[e->addr].umeta;
		}
		spin_unlock(&pool->lock);
	}
	/* Compressed, across CPUs, where the pool says so. */
	kvt_z_compress_all(wbr->ents, wbr->nr);
	/* The summary takes the pages its records need; data follows. */
	slen = round_up(kvt_summary_len(n + wbr->nr_tombs, nr_meta),
			KVT_DISK_PAGE);
	page = wbr->page + slen / KVT_DISK_PAGE;
	memset(dr, 0, slen);

	for (i = 0; i < wbr->nr; i++) {
		struct kvt_wb_entry *e = &wbr->ents[i];
		struct kvt_pool *pool = e->pool;
		struct kvt_block *blk = &pool->blocks[e->addr];

		if (e->rec == KVT_NIL)
			continue;
		/* The data is stable: the block is READY and held as a user. */
		rec = &dr->recs[e->rec];
		rec->pool_id = cpu_to_le64(pool->id);
		rec->key[0] = cpu_to_le64(blk->key[0]);
		rec->key[1] = cpu_to_le64(blk->key[1]);
		if (pool->parts && !e->moved) {
			/* Without memory for it, the copy has no table. */
			e->table = alloc_page(GFP_NOIO | __GFP_NOWARN);
			if (e->table &&
			    !kvt_parts_build(pool, blk, page_address(e->table))) {
				__free_page(e->table);
				e->table = NULL;
			}
		}
		if (pool->parts) {
			/* A relocated copy has the table it had, if its own. */
			if (e->moved ? e->moved_table : !!e->table)
				rec->flags = cpu_to_le32(KVT_REC_PARTS);
			page++;
			tables += KVT_DISK_PAGE;
		}
		rec->page = cpu_to_le32(page);
		seed = kvt_rec_seed(pool->id, blk->key, wbr->seq);
		if (!e->moved)
			demoted += pool->block_size;
		if (e->moved_z) {
			/* A compressed copy moved: its bytes, keyed afresh. */
			e->zcrc = kvt_rec_crc(seed, e->moved_zcrc, e->moved_z);
			rec->flags = cpu_to_le32(KVT_REC_Z);
			rec->pages = cpu_to_le32(DIV_ROUND_UP(e->moved_z,
							      KVT_DISK_PAGE));
			rec->crc = cpu_to_le32(e->zcrc);
			rec->z.bytes = cpu_to_le32(e->moved_z);
			rec->z.dcrc = cpu_to_le32(blk->ncrc);
			page += DIV_ROUND_UP(e->moved_z, KVT_DISK_PAGE);
			stored += e->moved_z;
			data += round_up(e->moved_z, KVT_DISK_PAGE);
			continue;
		}
		if (e->z.pages) {
			/* Its stored bytes, keyed; the block's crc beside. */
			e->zcrc = kvt_rec_crc(seed, e->z.crc, e->z.bytes);
			rec->flags = cpu_to_le32(KVT_REC_Z);
			rec->pages = cpu_to_le32(e->z.nr_pages);
			rec->crc = cpu_to_le32(e->zcrc);
			rec->z.bytes = cpu_to_le32(e->z.bytes);
			rec->z.dcrc = cpu_to_le32(blk->ncrc);
			page += e->z.nr_pages;
			stored += e->z.bytes;
			data += (u64)e->z.nr_pages * KVT_DISK_PAGE;
			continue;
		}
		rec->pages = cpu_to_le32(pool->pages_per_block);
		rec->crc = cpu_to_le32(kvt_rec_crc(seed, blk->ncrc,
						   pool->block_size));
		page += pool->pages_per_block;
		stored += pool->block_size;
		data += pool->block_size;
	}
	/* What compression saved is the region's again. */
	if (page - wbr->page < wbr->pages)
		kvt_segment_shrink(nvme, wbr, page - wbr->page);
	/* Tombstones after the blocks: no data, they name the dropped copy. */
	rec = &dr->recs[n];
	list_for_each_entry(t, &wbr->tombs, node) {
		rec->pool_id = cpu_to_le64(t->pool->id);
		rec->key[0] = cpu_to_le64(t->key[0]);
		rec->key[1] = cpu_to_le64(t->key[1]);
		rec->page = cpu_to_le32(t->nloc);
		rec->flags = cpu_to_le32(KVT_REC_DROP);
		rec->drop_seq = cpu_to_le64(t->seq);
		rec++;
	}
	/* The blocks' own records last, in the order of theirs. */
	meta = kvt_summary_meta(dr, n + wbr->nr_tombs);
	for (i = 0; i < wbr->nr; i++) {
		struct kvt_wb_entry *e = &wbr->ents[i];
		const struct kvt_umeta *um;

		if (e->rec == KVT_NIL)
			continue;
		um = e->pool->blocks[e->addr].umeta;
		if (!um)
			continue;
		meta->rec = cpu_to_le32(e->rec);
		meta->len = cpu_to_le32(um->len);
		memcpy(meta->data, um->data, um->len);
		meta++;
	}
	dr->nr_meta = cpu_to_le32(nr_meta);
	dr->magic = cpu_to_le64(KVT_REGION_MAGIC);
	dr->seq = cpu_to_le64(wbr->seq);
	memcpy(dr->uuid, nvme->uuid, sizeof(dr->uuid));
	dr->nr = cpu_to_le32(n + wbr->nr_tombs);
	dr->summary_bytes = cpu_to_le32(slen);
	dr->seg_page = cpu_to_le32(wbr->page);
	dr->seg_pages = cpu_to_le32(wbr->pages);
	dr->nonce = cpu_to_le64(wbr->nonce);
	dr->crc = cpu_to_le32(kvt_summary_crc(dr, slen));

	bio = kvt_io_bio(&wbr->io, REQ_OP_WRITE | REQ_SYNC,
			 KVT_SECTORS(kvt_region_bytes_off(nvme, wbr->region) +
				     (u64)wbr->page * KVT_DISK_PAGE + slen));
	for (i = 0; i < wbr->nr; i++) {
		struct kvt_wb_entry *e = &wbr->ents[i];

		if (e->rec == KVT_NIL)
			continue;
		/*
		 * The page of a table that could not be made is left zero;
		 * a relocated copy's comes with its bytes (e->moved).
		 */
		if (e->pool->parts && !e->moved)
			bio = kvt_io_add(&wbr->io, bio,
					 e->table ?: ZERO_PAGE(0), PAGE_SIZE);
		if (e->z.pages) {
			for (j = 0; j < e->z.nr_pages; j++)
				bio = kvt_io_add(&wbr->io, bio, e->z.pages[j],
						 PAGE_SIZE);
			continue;
		}
		if (e->moved) {
			bio = kvt_io_add_buf(&wbr->io, bio, e->moved,
					     kvt_moved_len(e->pool, e->moved_z));
			continue;
		}
		bio = kvt_io_add_block(&wbr->io, bio, e->pool,
				       &e->pool->blocks[e->addr]);
	}
	wbr->bytes = slen;
	wbr->tables = tables;
	wbr->demoted = demoted;
	wbr->stored = stored;
	wbr->data = data;
	/* A region of no live block has no data: its summary goes at once. */
	if (!n) {
		bio_put(bio);
		bio = NULL;
	}
	kvt_io_submit(&wbr->io, bio);
}

/*
 * Segment writes to keep in flight. Reads first: a GET waiting for its
 * block would otherwise queue behind up to KVT_WRITE_QD segments (15 MiB)
 * in the device; while block reads are in flight only one segment is,
 * and the last read to end starts the writer again (kvt_rd_done()).
 */
static int kvt_write_qd(struct kvt_nvme *nvme)
{
	if (READ_ONCE(kvt_reads_first) && atomic_read(&nvme->reads))
		return KVT_WRITE_QD_READING;
	return KVT_WRITE_QD;
}

/**
 * kvt_nvme_write_work() - the segment writer
 * @work: the device's write_work
 *
 * Packs queued blocks into segments and submits them, kvt_write_qd() at
 * most in flight; each completion queues it again. Out of memory with
 * segments in flight, it stops until one ends; with none, the reserve
 * serves.
 */
void kvt_nvme_write_work(struct work_struct *work)
{
	struct kvt_nvme *nvme = container_of(work, struct kvt_nvme,
					     write_work);
	struct kvt_wbr *wbr;
	int ret;

	while (atomic_read(&nvme->writes) < kvt_write_qd(nvme)) {
		wbr = kvt_wbr_alloc(nvme);
		if (!wbr)
			return;
		kvt_io_init(&wbr->io, nvme, kvt_wbr_done);
		kvt_fault_writer_delay();

		/* A segment it returns is counted in nvme->inflight. */
		ret = kvt_segment_next(nvme, wbr);
		if (ret <= 0) {
			kvt_wbr_free(nvme, wbr);
			return;
		}
		atomic_inc(&nvme->writes);
		kvt_wbr_submit(wbr);
	}
}

/*
 * Queue one dirty block for writing: it is held as a user, flagged
 * KVT_BF_WB, and its pool referenced until the write ends. Both pool->lock
 * and kvt_nvme_qlock held, and room in the queue.
 */
static void kvt_wb_queue(struct kvt_nvme *nvme, struct kvt_pool *pool,
			 u32 addr, bool victim)
{
	struct kvt_block *blk = &pool->blocks[addr];
	struct kvt_wb_entry *e;

	blk->flags |= KVT_BF_WB;
	blk->users++;
	pool->nr_wb++;
	kref_get(&pool->ref);
	e = &nvme->queue[(nvme->qhead + nvme->qlen) % nvme->qcap];
	e->pool = pool;
	e->addr = addr;
	e->victim = victim;
	e->moved = NULL;
	e->moved_z = 0;
	e->moved_table = false;
	nvme->qlen++;
}

/*
 * The device to write a pool's blocks to: attached, not being detached,
 * its regions large enough for them and room in its queue; the least
 * loaded first (queued blocks, and segments being written). kvt_nvme_qlock
 * held. *@err is 0 with one, else says why: -ENODEV (no device attached),
 * -EFBIG (the blocks fit no device's regions) or -EBUSY (the queues are
 * full for now: room comes as the writers take the blocks).
 */
static struct kvt_nvme *kvt_nvme_pick(struct kvt_pool *pool, int *err)
{
	static unsigned int rr;		/* under kvt_nvme_qlock */
	struct kvt_nvme *best = NULL;
	u32 load, best_load = U32_MAX;
	unsigned int n;

	lockdep_assert_held(&kvt_nvme_qlock);
	*err = -ENODEV;
	/* Ties go round robin: the search starts one device further each time. */
	rr++;
	for (n = 0; n < KVTIER_NVME_MAX; n++) {
		struct kvt_nvme *nvme = kvt_nvmes[(rr + n) % KVTIER_NVME_MAX];

		if (!nvme || nvme->closing)
			continue;
		if (*err == -ENODEV)
			*err = -EFBIG;
		if (kvt_nvme_block_pages(pool) > nvme->max_recs)
			continue;
		*err = -EBUSY;
		if (nvme->qlen == nvme->qcap)
			continue;
		/* Blocks queued, and a region's worth per segment in flight. */
		load = nvme->qlen + atomic_read(&nvme->writes) * nvme->max_recs;
		if (load < best_load) {
			best = nvme;
			best_load = load;
		}
	}
	if (best)
		*err = 0;
	return best;
}

/**
 * kvt_nvme_clean() - queue dirty blocks of a pool for writing
 * @pool: the pool, its lock held
 * @nr: most blocks to queue; 0 for a region's worth
 * @victims: the blocks are needed out of DRAM now; else this is cleaning
 *	     ahead, and with @nr 0 only a whole region's worth is queued
 *
 * Blocks are taken from the cold end of the replacement list; they stay in
 * DRAM, readable and in their place on the list, until their write
 * completes; eviction skips them until then.
 *
 * The blocks of one call go to one device (kvt_nvme_pick()).
 *
 * Return: blocks queued, or kvt_nvme_pick()'s -ENODEV, -EFBIG or -EBUSY
 * (every device's queue full of other pools' blocks).
 */
static int kvt_nvme_clean(struct kvt_pool *pool, unsigned int nr,
			  bool victims)
{
	struct kvt_nvme *nvme;
	u32 addr, prev, queued = 0;
	int ret;

	lockdep_assert_held(&pool->lock);
	spin_lock(&kvt_nvme_qlock);
	nvme = kvt_nvme_pick(pool, &ret);
	if (!nvme) {
		spin_unlock(&kvt_nvme_qlock);
		return ret;
	}
	if (!nr) {
		nr = max(1U, nvme->max_recs / kvt_nvme_block_pages(pool));
		/* Ahead of need, only whole regions: they cost one summary. */
		if (!victims && pool->nr_dirty < nr) {
			spin_unlock(&kvt_nvme_qlock);
			return 0;
		}
	}
	for (addr = kvt_policy_next(pool, KVT_NIL); addr != KVT_NIL &&
	     queued < nr && nvme->qlen < nvme->qcap; addr = prev) {
		struct kvt_block *blk = &pool->blocks[addr];

		prev = kvt_policy_next(pool, addr);
		if (blk->nloc != KVT_NIL || blk->flags || blk->users)
			continue;
		/* The list holds DRAM blocks only; writing one not there oopses. */
		if (WARN_ON_ONCE(!kvt_in_dram(blk)))
			continue;
		/* It keeps its place; eviction skips it until it is clean. */
		kvt_wb_queue(nvme, pool, addr, victims);
		queued++;
	}
	if (queued)
		queue_work(nvme->wq, &nvme->write_work);
	spin_unlock(&kvt_nvme_qlock);
	return queued;
}

/**
 * kvt_nvme_doomed() - whether a block's copy is about to be reclaimed
 * @pool: the pool, its lock held
 * @addr: a clean READY block in DRAM, chosen as a victim
 *
 * A copy in one of the nr_regions/KVT_RESCUE_SHARE regions the log writes
 * next would be lost when they are reclaimed: the residency layer forgets
 * it (kvt_res_rescue()), so that eviction writes the block again at the
 * head of the log while its data is still in DRAM.
 *
 * Return: true if so (counted as rescued).
 */
static bool kvt_nvme_doomed(struct kvt_pool *pool, u32 addr)
{
	struct kvt_block *blk = &pool->blocks[addr];
	struct kvt_nvme *nvme;
	bool rescue = false;

	lockdep_assert_held(&pool->lock);
	spin_lock(&kvt_nvme_qlock);
	nvme = blk->nloc != KVT_NIL ? kvt_nvmes[blk->ndev] : NULL;
	if (nvme) {
		u32 nr = nvme->nr_regions, head = READ_ONCE(nvme->head);
		u32 r = kvt_loc_region(nvme, blk->nloc);

		/* A racy read of the head: this is only a heuristic. */
		rescue = r < nr &&
			 (r + nr - head) % nr < max(1U, nr / KVT_RESCUE_SHARE);
		if (rescue)
			atomic64_inc(&nvme->rescued);
	}
	spin_unlock(&kvt_nvme_qlock);
	return rescue;
}

/**
 * kvt_nvme_drop() - a block with a copy is dropped: queue its tombstone
 * @pool: the pool, its lock held
 * @addr: a READY block with an NVMe copy, about to be unlinked
 *
 * The tombstone goes to the copy's device with the next segment written
 * there; SYNC writes it and waits. A copy whose device is not attached
 * (being detached) cannot be marked: that counts in drops_lost, and the
 * next SYNC reports -EIO.
 */
static void kvt_nvme_drop(struct kvt_pool *pool, u32 addr)
{
	struct kvt_block *blk = &pool->blocks[addr];
	struct kvt_nvme *nvme;
	struct kvt_tomb *t;
	u64 seq = 0;
	u32 r;

	lockdep_assert_held(&pool->lock);
	spin_lock(&kvt_nvme_qlock);
	nvme = kvt_nvmes[blk->ndev];
	if (nvme && kvt_loc_bytes(blk->nloc) >= KVT_DATA_OFF) {
		r = kvt_loc_region(nvme, blk->nloc);
		/*
		 * Stable: reclaim forgets this copy, under pool->lock, before
		 * the region's seq changes.
		 */
		if (r < nvme->nr_regions)
			seq = READ_ONCE(nvme->regions[r].seq);
	}
	if (!seq) {
		spin_unlock(&kvt_nvme_qlock);
		pool->drops_lost++;
		return;
	}
	t = kvt_tomb_new(pool, blk->key, blk->nloc, seq);
	if (t)
		kvt_tomb_queue(nvme, t);
	spin_unlock(&kvt_nvme_qlock);
}

/* A block read in flight. */
struct kvt_rd {
	struct kvt_io io;
	struct kvt_pool *pool;
	u32 addr;
	u32 nloc;
	u32 crc;
	u8 ndev;
	u8 tries;		/* reads submitted */
	struct kvt_zloc zl;	/* a compressed copy: its stored bytes */
	struct kvt_zcopy z;	/* read into these pages */
};

/*
 * Read the block's copy into its DRAM pages, or a compressed copy into
 * pages of the read's; kvt_rd_done() runs after.
 */
static void kvt_rd_submit(struct kvt_rd *rd)
{
	struct kvt_pool *pool = rd->pool;
	struct bio *bio;
	u32 i;

	rd->tries++;
	bio = kvt_io_bio(&rd->io, REQ_OP_READ,
			 KVT_SECTORS(kvt_loc_bytes(rd->nloc)));
	if (rd->z.pages) {
		for (i = 0; i < rd->z.nr_pages; i++)
			bio = kvt_io_add(&rd->io, bio, rd->z.pages[i],
					 PAGE_SIZE);
		kvt_io_submit(&rd->io, bio);
		return;
	}
	kvt_io_submit(&rd->io, kvt_io_add_block(&rd->io, bio, pool,
						&pool->blocks[rd->addr]));
}

/*
 * Pages for a compressed copy's stored bytes. Return: 0, or -ENOMEM (the
 * pages taken are freed).
 */
static int kvt_rd_zpages(struct kvt_rd *rd)
{
	u32 nr = DIV_ROUND_UP(rd->zl.bytes, PAGE_SIZE);

	rd->z.pages = kvcalloc(nr, sizeof(*rd->z.pages), GFP_KERNEL);
	if (!rd->z.pages)
		return -ENOMEM;
	for (; rd->z.nr_pages < nr; rd->z.nr_pages++) {
		rd->z.pages[rd->z.nr_pages] = alloc_page(GFP_KERNEL);
		if (!rd->z.pages[rd->z.nr_pages]) {
			kvt_z_release(&rd->z);
			return -ENOMEM;
		}
	}
	rd->z.bytes = rd->zl.bytes;
	return 0;
}

/*
 * A compressed copy read: its stored bytes must be the record's (their
 * keyed crc), and decompress into the block. Return: true if both.
 */
static bool kvt_rd_unzip(struct kvt_rd *rd, u64 seq)
{
	struct kvt_pool *pool = rd->pool;
	struct kvt_block *blk = &pool->blocks[rd->addr];
	u32 seed = kvt_rec_seed(pool->id, blk->key, seq);

	return kvt_z_crc(rd->z.pages, rd->z.bytes, seed) == rd->zl.crc &&
	       !kvt_z_decompress(pool, blk, rd->z.pages, rd->z.bytes);
}

static void kvt_rd_done(struct work_struct *work)
{
	struct kvt_rd *rd = container_of(work, struct kvt_rd, io.work);
	struct kvt_nvme *nvme = rd->io.nvme;
	struct kvt_pool *pool = rd->pool;
	struct kvt_block *blk = &pool->blocks[rd->addr];
	bool ok = false;
	u64 seq = 0;
	u32 r;

	/*
	 * An I/O error may be transient (a reset, a path that failed over):
	 * read again before giving up on an acknowledged block. The block
	 * is still LOADING with its pages, and the device cannot go away
	 * while this read counts in nvme->inflight. A copy that reads but
	 * does not verify is not read again.
	 */
	if (rd->io.status && rd->tries < KVT_READ_TRIES) {
		rd->io.status = 0;
		atomic_set(&rd->io.pending, 1);
		kvt_rd_submit(rd);
		return;
	}

	/* A location from another device (attached since) is out of range. */
	if (kvt_loc_bytes(rd->nloc) >= KVT_DATA_OFF) {
		r = kvt_loc_region(nvme, rd->nloc);
		if (r < nvme->nr_regions)
			seq = READ_ONCE(nvme->regions[r].seq);
	}

	if (!rd->io.status && seq)
		ok = (!rd->z.pages || kvt_rd_unzip(rd, seq)) &&
		     kvt_dram_crc(pool, blk, 0) == rd->crc;
	if (!rd->io.status)
		atomic64_add(rd->z.pages ? round_up(rd->z.bytes, PAGE_SIZE) :
			     pool->block_size, &nvme->bytes_read);

	spin_lock(&pool->lock);
	blk->flags &= ~KVT_BF_LOADING;
	pool->nr_loading--;
	pool->io_events++;
	if (blk->state == KVT_BLK_READY) {
		if (ok && blk->nloc == rd->nloc && blk->ndev == rd->ndev) {
			pool->stats.promotions++;
			kvt_policy_read_back(pool, rd->addr);
			pool->res->landed(pool, rd->addr);
			trace_kvtier_block_promote(pool, rd->addr);
		} else {
			/* Never serve it: the block is a miss from now on. */
			pool->stats.bad_reads++;
			if (rd->z.pages && !rd->io.status)
				pool->stats.z_bad++;
			pool->res->unlink(pool, rd->addr, KVTIER_EVR_BAD_READ);
		}
	}
	kvt_res_hook_put(pool, rd->addr);
	kvt_pool_put(pool);
	kvt_lat_add(KVT_LAT_READ, rd->io.start);
	kvt_z_release(&rd->z);
	kfree(rd);
	/* The writer may have held back for reads (kvt_write_qd()). */
	if (atomic_dec_and_test(&nvme->reads) &&
	    atomic_read(&nvme->writes) < KVT_WRITE_QD && READ_ONCE(nvme->qlen))
		queue_work(nvme->wq, &nvme->write_work);
	/* Detach flushes nvme->rwq after this, so nvme outlives the wake. */
	if (atomic_dec_and_test(&nvme->inflight))
		wake_up_all(&nvme->idle);
}

/**
 * kvt_nvme_reachable() - whether a block's copy can be read now
 * @pool: the pool, its lock held
 * @addr: a READY block only on NVMe
 *
 * A READY block's copy always names a device that is attached, being
 * attached (its log is replayed into the index before the device is
 * published) or being detached (which forgets its copies once its I/O has
 * drained, under kvt_nvme_lock, before the slot can be reused). In the two
 * last cases the copy is not lost, only out of reach for the moment.
 *
 * A hint, as kvt_nvme_live() is: the load looks the device up again under
 * kvt_nvme_qlock and is a miss if it went since.
 *
 * Return: true if its device is attached.
 */
static bool kvt_nvme_reachable(struct kvt_pool *pool, u32 addr)
{
	lockdep_assert_held(&pool->lock);
	return READ_ONCE(kvt_nvmes[pool->blocks[addr].ndev]);
}

/**
 * kvt_nvme_load() - start reading a block's copy into its DRAM pages
 * @pool: the pool, its lock not held
 * @addr: a READY block held as a user, KVT_BF_LOADING, with its pages
 *
 * Its end goes to the pool's kvt_res_hooks: landed, or unlinked when the
 * copy does not verify, then put.
 *
 * Return: 0 when the read is under way; -ENOMEM; -ENOENT when the
 * device of the copy is not attached (detached since the residency layer
 * looked, see kvt_nvme_reachable()): the block is left as it is.
 */
static int kvt_nvme_load(struct kvt_pool *pool, u32 addr)
{
	struct kvt_block *blk = &pool->blocks[addr];
	struct kvt_nvme *nvme;
	struct kvt_rd *rd;

	rd = kzalloc(sizeof(*rd), GFP_KERNEL);
	if (!rd)
		return -ENOMEM;

	spin_lock(&pool->lock);
	rd->ndev = blk->ndev;
	rd->nloc = blk->nloc;
	rd->crc = blk->ncrc;
	if (pool->zloc)
		rd->zl = pool->zloc[addr];
	spin_unlock(&pool->lock);
	if (rd->zl.bytes && kvt_rd_zpages(rd)) {
		kfree(rd);
		return -ENOMEM;
	}
	spin_lock(&kvt_nvme_qlock);
	nvme = kvt_nvmes[rd->ndev];
	if (nvme) {
		atomic_inc(&nvme->inflight);
		atomic_inc(&nvme->reads);
	}
	spin_unlock(&kvt_nvme_qlock);
	/* Detached since the residency layer looked: a miss, the block stays. */
	if (!nvme) {
		kvt_z_release(&rd->z);
		kfree(rd);
		return -ENOENT;
	}

	kref_get(&pool->ref);
	kvt_io_init(&rd->io, nvme, kvt_rd_done);
	rd->io.wq = nvme->rwq;
	rd->pool = pool;
	rd->addr = addr;
	kvt_rd_submit(rd);
	return 0;
}

/*
 * What the devices a pool can write to hold, summed: their regions, the
 * regions they reclaimed so far, and the pool's blocks they can hold at
 * once. kvt_nvme_qlock held. Return: 0, -ENODEV or -EFBIG.
 */
static int kvt_nvme_totals(struct kvt_pool *pool, u64 *regions,
			   u64 *reclaimed, u64 *blocks)
{
	int i, ret;

	*regions = 0;
	*reclaimed = 0;
	*blocks = 0;
	/* Full queues hold nothing back here. */
	kvt_nvme_pick(pool, &ret);
	if (ret && ret != -EBUSY)
		return ret;
	for (i = 0; i < KVTIER_NVME_MAX; i++) {
		struct kvt_nvme *nvme = kvt_nvmes[i];

		if (!nvme || nvme->closing ||
		    kvt_nvme_block_pages(pool) > nvme->max_recs)
			continue;
		*regions += nvme->nr_regions;
		*reclaimed += atomic64_read(&nvme->reclaimed);
		*blocks += (u64)nvme->nr_regions *
			   (nvme->max_recs / kvt_nvme_block_pages(pool));
	}
	return 0;
}

/*
 * Write the tombstones queued so far (those of the pool among them) and
 * wait for the pool's. Return: 0; -EIO if one of the pool's could not be
 * written since the last SYNC that said so; -EINTR if killed.
 */
static int kvt_nvme_sync_drops(struct kvt_pool *pool)
{
	int i, ret = 0;

	spin_lock(&kvt_nvme_qlock);
	for (i = 0; i < KVTIER_NVME_MAX; i++)
		if (kvt_nvmes[i] && kvt_nvmes[i]->nr_tombs)
			queue_work(kvt_nvmes[i]->wq, &kvt_nvmes[i]->write_work);
	spin_unlock(&kvt_nvme_qlock);
	if (wait_event_killable(pool->wq, !READ_ONCE(pool->nr_drops)))
		return -EINTR;
	spin_lock(&pool->lock);
	if (pool->drops_lost != pool->drops_lost_seen) {
		pool->drops_lost_seen = pool->drops_lost;
		ret = -EIO;
	}
	spin_unlock(&pool->lock);
	return ret;
}

/*
 * Queue one of a pool's blocks for SYNC if it is dirty and not busy: 1
 * queued, 0 not to be written, -EBUSY when the queues are full, -ENODEV,
 * -EFBIG. pool->lock held.
 */
static int kvt_sync_queue(struct kvt_pool *pool, u32 addr)
{
	struct kvt_block *blk = &pool->blocks[addr];
	struct kvt_nvme *nvme;
	int ret;

	if (blk->state != KVT_BLK_READY || !kvt_in_dram(blk) ||
	    blk->nloc != KVT_NIL || blk->flags)
		return 0;
	spin_lock(&kvt_nvme_qlock);
	nvme = kvt_nvme_pick(pool, &ret);
	if (!nvme) {
		spin_unlock(&kvt_nvme_qlock);
		return ret;
	}
	kvt_wb_queue(nvme, pool, addr, false);
	queue_work(nvme->wq, &nvme->write_work);
	spin_unlock(&kvt_nvme_qlock);
	return 1;
}

/* Write every dirty block of a pool and wait: kvt_nvme_sync() less drops. */
static int kvt_nvme_sync_blocks(struct kvt_pool *pool, u64 *written)
{
	u64 before, errors, reclaimed0, reclaimed, wrap, cap;
	u32 addr;
	int ret;

	spin_lock(&kvt_nvme_qlock);
	ret = kvt_nvme_totals(pool, &wrap, &reclaimed0, &cap);
	/* More than the devices hold can never be durable at once. */
	if (!ret && (u64)READ_ONCE(pool->nr_dirty) > cap)
		ret = -ENOSPC;
	spin_unlock(&kvt_nvme_qlock);
	if (ret)
		return ret;

	/* Blocks being loaded (adopted ones being written down) first. */
	if (wait_event_killable(pool->wq, !READ_ONCE(pool->nr_loading)))
		return -EINTR;
	spin_lock(&pool->lock);
	before = pool->stats.demotions;
	errors = pool->wb_errors;
	spin_unlock(&pool->lock);

	/*
	 * Queue what is dirty, wait, again: blocks whose copy was reclaimed
	 * meanwhile (other pools filled the log) are dirty again, and the
	 * queues may have been full. A write error ends it; so does a log
	 * that wrapped all the way round.
	 */
	for (;;) {
		int queued = 0;
		bool full;

		/*
		 * The listed blocks coldest first, as eviction would write
		 * them, so that they keep their order on the clean list;
		 * then by address those off the list (pinned, or prefetched
		 * and not used yet).
		 */
		ret = 0;
		spin_lock(&pool->lock);
		for (addr = kvt_policy_next(pool, KVT_NIL);
		     addr != KVT_NIL && ret >= 0;
		     addr = kvt_policy_next(pool, addr)) {
			ret = kvt_sync_queue(pool, addr);
			queued += ret > 0;
		}
		for (addr = 0; addr < pool->capacity && ret >= 0; addr++) {
			ret = kvt_sync_queue(pool, addr);
			queued += ret > 0;
		}
		spin_unlock(&pool->lock);
		full = ret == -EBUSY;
		if (ret < 0 && !full)
			return ret;

		ret = wait_event_killable(pool->wq, !READ_ONCE(pool->nr_wb));
		if (ret)
			return -EINTR;
		spin_lock(&pool->lock);
		*written = pool->stats.demotions - before;
		ret = pool->wb_errors != errors ? -EIO : 0;
		if ((ret || (!queued && !full)) &&
		    pool->wb_lost != pool->wb_lost_seen) {
			pool->wb_lost_seen = pool->wb_lost;
			ret = -EIO;
		}
		spin_unlock(&pool->lock);
		if (ret || (!queued && !full))
			return ret;
		/* Full with none of ours: room comes as the writers go on. */
		if (!queued) {
			schedule_timeout_killable(1);
			if (fatal_signal_pending(current))
				return -EINTR;
		}

		spin_lock(&kvt_nvme_qlock);
		ret = kvt_nvme_totals(pool, &wrap, &reclaimed, &cap);
		if (!ret && reclaimed - reclaimed0 >= wrap)
			ret = -ENOSPC;
		spin_unlock(&kvt_nvme_qlock);
		if (ret)
			return ret;
	}
}

/**
 * kvt_nvme_sync() - write every dirty block and every drop of a pool, and
 * wait
 * @pool: the pool
 * @written: out: blocks written
 *
 * Like fsync(2) after a writeback error, a SYNC that runs to its end
 * reports -EIO once when a failed write dropped a dirty block of the pool
 * since the previous such SYNC (an eviction that could not demote its
 * victim): PUTs it acknowledged are not all there. Likewise for a DROP
 * whose tombstone could not be written: its block may come back.
 *
 * Return: 0; -ENODEV without a device; -EFBIG if the pool's blocks do not
 * fit in a region; -ENOSPC if the devices cannot hold them all; -EIO if a
 * block or a drop could not be written, by this call or since the last
 * SYNC; -EINTR if killed while waiting.
 */
static int kvt_nvme_sync(struct kvt_pool *pool, u64 *written)
{
	int ret = kvt_nvme_sync_blocks(pool, written);

	/* Blocks written, and so copies dropped while they were: the drops. */
	if (ret == -EINTR)
		return ret;
	return kvt_nvme_sync_drops(pool) ?: ret;
}

/**
 * kvt_nvme_live() - whether blocks can be demoted now
 * @pool: any pool
 *
 * Return: true if a device is attached.
 */
static bool kvt_nvme_live(struct kvt_pool *pool)
{
	int i;

	for (i = 0; i < KVTIER_NVME_MAX; i++)
		if (READ_ONCE(kvt_nvmes[i]))
			return true;
	return false;
}

/* The NVMe tier, for the residency layer. */
const struct kvt_tier_ops kvt_nvme_tier = {
	.name		= "nvme",
	.reachable	= kvt_nvme_reachable,
	.load		= kvt_nvme_load,
	.clean		= kvt_nvme_clean,
	.doomed		= kvt_nvme_doomed,
	.sync		= kvt_nvme_sync,
	.drop		= kvt_nvme_drop,
	.live		= kvt_nvme_live,
	.trim		= kvt_parts_trim,
	.read_part	= kvt_nvme_read_part,
	.part_end	= kvt_nvme_part_end,
	.part_free	= kvt_nvme_part_free,
	.read_user	= kvt_nvme_read_user,
	.user_end	= kvt_nvme_user_end,
	.user_free	= kvt_nvme_user_free,
};
