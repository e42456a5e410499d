/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The NVMe tier's internals, shared by nvme_store.c (the store on the
 * device: superblock, pool table, recovery, attach and detach) and
 * tier_nvme.c (moving blocks: the region writer, verified reads, sync).
 */
#ifndef _KVTIER_NVME_H
#define _KVTIER_NVME_H

#include <linux/blkdev.h>
#include <linux/mempool.h>
#include <linux/workqueue.h>
#include "kvt.h"
#include "nvme_format.h"

#define KVT_SECTORS(bytes)	((bytes) >> SECTOR_SHIFT)

enum kvt_region_state {
	KVT_REGION_FREE = 0,
	KVT_REGION_WRITING,	/* a segment is being written */
	KVT_REGION_OPEN,	/* durable segments, room for more */
	KVT_REGION_FULL,
};

struct kvt_region {
	u64 seq;		/* its write sequence, 0 when free */
	u64 nonce;		/* in each of its segments' summaries */
	u32 used;		/* pages taken by its segments */
	u32 chain;		/* pages of its durable segments, in a row */
	atomic_t readers;	/* reads into user memory (nvme_direct.c) */
	u8 state;		/* enum kvt_region_state */
};

/**
 * struct kvt_zcopy - the stored bytes of a compressed copy
 * @pages: their pages, the last zero-padded; NULL: none (a raw copy)
 * @nr_pages: pages taken
 * @bytes: stored bytes
 * @crc: their crc32c from 0
 */
struct kvt_zcopy {
	struct page **pages;
	u32 nr_pages;
	u32 bytes;
	u32 crc;
};

/* struct kvt_wb_entry - a block queued for writing */
struct kvt_wb_entry {
	struct kvt_pool *pool;	/* referenced */
	u32 addr;		/* held as a user, KVT_BF_WB set */
	u32 rec;		/* its record in the region, or KVT_NIL */
	struct page *table;	/* its part table (pools with parts), or NULL */
	struct kvt_zcopy z;	/* its compressed copy (KVTIER_F_COMPRESS) */
	u32 zcrc;		/* the keyed crc of z's bytes */
	bool victim;		/* chosen for eviction, not by SYNC */
	/*
	 * The bytes of a block only on NVMe relocated at reclaim (verified,
	 * kvmalloc'ed; the block is KVT_BF_MOVING), or NULL: the writer
	 * writes them instead of the block's DRAM pages, and frees them.
	 */
	void *moved;
	/*
	 * With @moved, of a pool that compresses: the stored bytes of the
	 * compressed copy @moved holds (written as they are, under a fresh
	 * record), or 0: @moved holds the block's own bytes, written raw;
	 * and their crc32c started from 0, checked when they were read.
	 */
	u32 moved_z;
	u32 moved_zcrc;
	/*
	 * With @moved, of a pool with parts: @moved starts with the page of
	 * the copy's part table, the block's bytes after it; the table is
	 * written as it was read, and the record says so if it is the
	 * block's (kvt_parts_table_ok()), else the page was zeroed.
	 */
	bool moved_table;
};

/*
 * struct kvt_tomb - a tombstone waiting for a segment: a dropped block's
 * copy must not come back at the next attach
 */
struct kvt_tomb {
	struct list_head node;
	struct kvt_pool *pool;	/* referenced; its nr_drops counts this */
	u64 key[2];
	u32 nloc;		/* the dropped copy's device page */
	u64 seq;		/* and its region's seq */
};

struct kvt_nvme {
	struct block_device *bdev;
	/*
	 * The named pool of an NVMe identity, referenced, or NULL: the
	 * registry's lookup, given at attach (reclaim resolves records).
	 */
	struct kvt_pool *(*pool_get)(u64 id);
	u8 index;			/* in kvt_nvmes[] */
	bool closing;			/* no new writes: being detached */
	bool detaching;			/* kvt_nvme_lock: a detach owns it */
	/*
	 * Reclaim could not read a summary: blocks may still name regions
	 * written since, so no more reads go straight to user memory.
	 */
	bool direct_off;
	u8 uuid[16];
	u64 dev_bytes;
	u64 region_bytes;
	u32 nr_regions;
	u32 region_pages;
	u32 summary_pages;	/* pages of the largest summary of a region */
	u32 max_recs;		/* records a summary holds */
	u64 generation;

	/* Protects regions[], head, open and next_seq: the log's allocation. */
	struct mutex lock;
	struct kvt_region *regions;
	u32 head;			/* next region to write */
	u32 open;			/* region taking segments, or KVT_NIL */
	u64 next_seq;
	/* Pool table slots in use, protected by kvt_nvme_lock. */
	DECLARE_BITMAP(slots, KVT_POOL_SLOTS);

	/* Queue of blocks to write, protected by kvt_nvme_qlock. */
	struct kvt_wb_entry *queue;
	u32 qhead;
	u32 qlen;
	u32 qcap;
	/* Tombstones to write, also protected by kvt_nvme_qlock. */
	struct list_head tombs;
	u32 nr_tombs;

	struct workqueue_struct *wq;
	/*
	 * Block reads end on a queue of their own, of high priority: a
	 * GET's check of its copy goes ahead of the writer's work and of
	 * the tasks PUTting.
	 */
	struct workqueue_struct *rwq;
	struct work_struct write_work;
	/* The writer's memory of one segment, when the allocator has none. */
	mempool_t *wbr_reserve;
	mempool_t *summary_reserve;
	atomic_t writes;		/* region writes in flight */
	atomic_t reads;			/* block reads in flight */
	atomic_t inflight;		/* I/O contexts alive */
	wait_queue_head_t idle;		/* inflight reaches zero */

	atomic64_t bytes_written;
	atomic64_t bytes_demoted;
	atomic64_t bytes_read;
	atomic64_t reclaimed;
	atomic64_t lost_blocks;
	atomic64_t rescued;
	atomic64_t io_errors;
	atomic64_t bytes_discarded;
	atomic64_t bytes_stored;
	u64 attach_ns;
};

/*
 * The attached devices. Readers in the I/O paths take kvt_nvme_qlock to see
 * them and count themselves in ->inflight before they drop the lock; the
 * writer counts a segment in the section that takes its blocks off the
 * queue. Detach clears a slot under the lock and then waits until the
 * queue is empty and ->inflight drained, both read under the lock.
 */
extern struct kvt_nvme *kvt_nvmes[KVTIER_NVME_MAX];
extern spinlock_t kvt_nvme_qlock;	/* kvt_nvmes[] and their queues */

/* Where a block's data starts, as a byte offset on the device. */
static inline u64 kvt_loc_bytes(u32 nloc)
{
	return (u64)nloc * KVT_DISK_PAGE;
}

static inline u64 kvt_region_bytes_off(struct kvt_nvme *nvme, u32 r)
{
	return KVT_DATA_OFF + (u64)r * nvme->region_bytes;
}

static inline u32 kvt_loc_region(struct kvt_nvme *nvme, u32 nloc)
{
	return div64_u64(kvt_loc_bytes(nloc) - KVT_DATA_OFF,
			 nvme->region_bytes);
}

static inline size_t kvt_summary_bytes(struct kvt_nvme *nvme)
{
	return (size_t)nvme->summary_pages * KVT_DISK_PAGE;
}

/* Bytes of a summary of @nr records, @nr_meta of blocks with a record. */
static inline size_t kvt_summary_len(u32 nr, u32 nr_meta)
{
	return struct_size((struct kvt_disk_region *)NULL, recs, nr) +
	       (size_t)nr_meta * sizeof(struct kvt_disk_meta);
}

/* A summary's block records: after its records. */
static inline struct kvt_disk_meta *kvt_summary_meta(struct kvt_disk_region *dr,
						     u32 nr)
{
	return (struct kvt_disk_meta *)&dr->recs[nr];
}

/* nvme_store.c */
int kvt_nvme_rw(struct kvt_nvme *nvme, blk_opf_t opf, u64 off, void *buf,
		size_t len);
u32 kvt_summary_crc(struct kvt_disk_region *dr, size_t len);
int kvt_summary_read(struct kvt_nvme *nvme, u32 r, u32 page,
		     struct kvt_disk_region *dr);
int kvt_segment_read(struct kvt_nvme *nvme, u32 r, u32 *page, u64 seq,
		     struct kvt_disk_region *dr);
u32 kvt_seg_pages(struct kvt_nvme *nvme, struct kvt_disk_region *dr);

/* tier_nvme.c */
void kvt_nvme_discard(struct kvt_nvme *nvme, u64 off, u64 len);
u32 kvt_rec_seed(u64 pool_id, const u64 *key, u64 seq);
u32 kvt_rec_crc(u32 seed, u32 dcrc, u64 len);
u32 kvt_rec_dcrc(u32 seed, u32 crc, u64 len);
void kvt_nvme_write_work(struct work_struct *work);
int kvt_nvme_writer_init(struct kvt_nvme *nvme);
void kvt_nvme_writer_exit(struct kvt_nvme *nvme);
void kvt_tomb_end(struct kvt_tomb *t, int status);

/**
 * struct kvt_crd - a read made for a caller that may give it up
 * @nvme: its device, counted in its inflight
 * @pool: its pool, referenced
 * @pending: bios in flight, +1 while submitting
 * @status: the errno of a bio that failed, else 0
 * @bytes: bytes the bios read
 * @done: the bios ended (complete_all())
 * @refs: the caller's, and the bios'
 * @free_work: the bios' reference was the last
 * @ended: called when the last bio ended, or NULL
 * @free: frees what holds it
 *
 * Embedded in struct kvt_part_rd and struct kvt_direct_rd (nvme_read.c).
 */
struct kvt_crd {
	struct kvt_nvme *nvme;
	struct kvt_pool *pool;
	atomic_t pending;
	int status;
	u64 bytes;
	struct completion done;
	refcount_t refs;
	struct work_struct free_work;
	void (*ended)(struct kvt_crd *crd);
	void (*free)(struct kvt_crd *crd);
};

/* nvme_read.c */
void kvt_crd_init(struct kvt_crd *crd, struct kvt_nvme *nvme,
		  struct kvt_pool *pool, void (*ended)(struct kvt_crd *crd),
		  void (*free)(struct kvt_crd *crd));
void kvt_crd_submit(struct kvt_crd *crd, u64 off, struct page **pages,
		    u32 nr);
void kvt_crd_submitted(struct kvt_crd *crd);
int kvt_crd_wait(struct kvt_crd *crd);
void kvt_crd_put(struct kvt_crd *crd);

/* nvme_part.c */
bool kvt_parts_build(struct kvt_pool *pool, struct kvt_block *blk,
		     void *page);
bool kvt_parts_table_ok(const struct kvt_pool *pool, const u64 *key,
			u32 ncrc, struct kvt_disk_parts *t);
struct kvt_part_rd *kvt_nvme_read_part(struct kvt_pool *pool, u32 addr,
				       u32 off, u32 len);
int kvt_nvme_part_end(struct kvt_part_rd *rd, struct iov_iter *to);
void kvt_nvme_part_free(struct kvt_part_rd *rd);
void kvt_parts_trim(struct kvt_pool *pool);

/* nvme_direct.c */
struct kvt_direct_rd *kvt_nvme_read_user(struct kvt_pool *pool, u32 addr,
					 const struct iovec *iov,
					 unsigned long nr_segs);
int kvt_nvme_user_end(struct kvt_direct_rd *rd);
void kvt_nvme_user_free(struct kvt_direct_rd *rd);
void kvt_nvme_readers_drain(struct kvt_nvme *nvme, u32 r, int ret,
			    u32 page);

/* compress.c */
int kvt_z_compress(struct kvt_pool *pool, struct kvt_block *blk,
		   struct kvt_zcopy *z);
void kvt_z_compress_all(struct kvt_wb_entry *ents, u32 n);
void kvt_z_release(struct kvt_zcopy *z);
u32 kvt_z_crc(struct page **pages, u32 bytes, u32 seed);
int kvt_z_decompress(struct kvt_pool *pool, struct kvt_block *blk,
		     struct page **pages, u32 bytes);

/*
 * Device pages a copy of the pool's blocks takes at most: its part table
 * too (a compressed copy takes fewer).
 */
static inline u32 kvt_nvme_block_pages(const struct kvt_pool *pool)
{
	return pool->pages_per_block + !!pool->parts;
}

#endif /* _KVTIER_NVME_H */
