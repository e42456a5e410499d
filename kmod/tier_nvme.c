// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe tier: a log-structured store of blocks on one block device.
 *
 * Blocks leave DRAM by demotion: a writer gathers dirty blocks from the cold
 * end of the pools' replacement lists and writes them, a region at a time,
 * with one summary of what the region holds, in large sequential FUA writes
 * straight from the blocks' pages (no copy, no page cache). Once a region is
 * durable its blocks are clean: their DRAM copies can go at no cost, and they
 * come back on use by a read that is verified against a crc32c keyed with
 * the pool, the key and the region's write sequence, so a stale, misplaced or
 * corrupted copy is a miss, never wrong bytes.
 *
 * Regions are written in order around the device; the next one to write is
 * reclaimed first (its blocks that live nowhere else are dropped). Nothing is
 * overwritten in place except the superblock and the pool table.
 *
 * Tiering is inclusive: a block promoted back to DRAM keeps its NVMe copy,
 * so evicting it again costs no write.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blkdev.h>
#include <linux/bio.h>
#include <linux/crc32c.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/uuid.h>
#include <linux/ktime.h>
#include <linux/workqueue.h>
#include <linux/sched/signal.h>
#include "kvtier.h"
#include "nvme_format.h"
#include "trace.h"

#define KVT_WRITE_QD		4	/* region writes in flight */
#define KVT_SECTORS(bytes)	((bytes) >> SECTOR_SHIFT)

enum kvt_region_state {
	KVT_REGION_FREE = 0,
	KVT_REGION_WRITING,
	KVT_REGION_FULL,
};

struct kvt_region {
	u64 seq;		/* its write sequence, 0 when free */
	u8 state;		/* enum kvt_region_state */
};

/* struct kvt_wb_entry - a block queued for writing */
struct kvt_wb_entry {
	struct kvt_pool *pool;	/* referenced */
	u32 addr;		/* held as a user, KVT_BF_WB set */
	u32 rec;		/* its record in the region, or KVT_NIL */
	bool victim;		/* chosen for eviction, not by SYNC */
};

struct kvt_nvme {
	struct block_device *bdev;
	u8 uuid[16];
	u64 dev_bytes;
	u64 region_bytes;
	u32 nr_regions;
	u32 region_pages;
	u32 summary_pages;	/* pages of the largest summary of a region */
	u32 max_recs;		/* records a summary holds */
	u64 generation;

	/* Protects regions[], head and next_seq: the log's allocation. */
	struct mutex lock;
	struct kvt_region *regions;
	u32 head;			/* next region to write */
	u64 next_seq;
	/* Pool table slots in use, protected by kvt_nvme_lock. */
	DECLARE_BITMAP(slots, KVT_POOL_SLOTS);

	/* Queue of blocks to write, protected by kvt_nvme_qlock. */
	struct kvt_wb_entry *queue;
	u32 qhead;
	u32 qlen;
	u32 qcap;

	struct workqueue_struct *wq;
	struct work_struct write_work;
	atomic_t writes;		/* region writes in flight */
	atomic_t inflight;		/* I/O contexts alive */
	wait_queue_head_t idle;		/* inflight reaches zero */

	atomic64_t bytes_written;
	atomic64_t bytes_demoted;
	atomic64_t bytes_read;
	atomic64_t reclaimed;
	atomic64_t lost_blocks;
	atomic64_t io_errors;
	u64 attach_ns;
};

/*
 * The attached device. Readers in the I/O paths take kvt_nvme_qlock to see
 * it and count themselves in ->inflight before they drop the lock; detach
 * clears it under the lock and then waits for ->inflight to drain.
 */
static struct kvt_nvme *kvt_nvme;
static DEFINE_SPINLOCK(kvt_nvme_qlock);	/* kvt_nvme and its queue */
/*
 * Serializes attach, detach and the pool table. Taken before
 * kvt_pools_lock: pool create and destroy hold it across their
 * registration, attach holds it while it restores pools.
 */
static DEFINE_MUTEX(kvt_nvme_lock);

/**
 * kvt_nvme_lock_table() - hold the NVMe tier steady around a pool's
 * registration (create or destroy)
 */
void kvt_nvme_lock_table(void)
{
	mutex_lock(&kvt_nvme_lock);
}

/**
 * kvt_nvme_unlock_table() - release what kvt_nvme_lock_table() took
 */
void kvt_nvme_unlock_table(void)
{
	mutex_unlock(&kvt_nvme_lock);
}

/* Where a block's data starts, as a byte offset on the device. */
static u64 kvt_loc_bytes(u32 nloc)
{
	return (u64)nloc * KVT_DISK_PAGE;
}

static u64 kvt_region_bytes_off(struct kvt_nvme *nvme, u32 r)
{
	return KVT_DATA_OFF + (u64)r * nvme->region_bytes;
}

static u32 kvt_loc_region(struct kvt_nvme *nvme, u32 nloc)
{
	return div64_u64(kvt_loc_bytes(nloc) - KVT_DATA_OFF,
			 nvme->region_bytes);
}

/* The crc of a record starts from its identity: pool, key and sequence. */
static u32 kvt_rec_seed(u64 pool_id, const u64 *key, u64 seq)
{
	__le64 id[4] = {
		cpu_to_le64(pool_id), cpu_to_le64(key[0]),
		cpu_to_le64(key[1]), cpu_to_le64(seq),
	};

	return crc32c(~0U, id, sizeof(id));
}

static u32 kvt_block_crc(struct kvt_pool *pool, struct kvt_block *blk,
			 u32 seed)
{
	u32 i, len = PAGE_SIZE << blk->order;
	u32 nr = pool->pages_per_block >> blk->order;

	for (i = 0; i < nr; i++) {
		struct page *chunk = kvt_dram_page(pool, blk, i << blk->order);

		seed = crc32c(seed, page_address(chunk), len);
	}
	return seed;
}

/* Synchronous I/O on a kernel buffer (kmalloc or vmalloc). */
static int kvt_nvme_rw(struct kvt_nvme *nvme, blk_opf_t opf, u64 off,
		       void *buf, size_t len)
{
	struct bio *bio;
	size_t done = 0;
	int ret;

	bio = bio_alloc(nvme->bdev, BIO_MAX_VECS, opf, GFP_KERNEL);
	bio->bi_iter.bi_sector = KVT_SECTORS(off);
	while (done < len) {
		void *p = buf + done;
		struct page *page = is_vmalloc_addr(p) ? vmalloc_to_page(p) :
							 virt_to_page(p);
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

static u32 kvt_sb_crc(struct kvt_disk_sb *sb)
{
	__le32 saved = sb->crc;
	u32 crc;

	sb->crc = 0;
	crc = crc32c(~0U, sb, sizeof(*sb));
	sb->crc = saved;
	return crc;
}

static u32 kvt_pool_entry_crc(struct kvt_disk_pool *dp)
{
	__le32 saved = dp->crc;
	u32 crc;

	dp->crc = 0;
	crc = crc32c(~0U, dp, sizeof(*dp));
	dp->crc = saved;
	return crc;
}

static u32 kvt_summary_crc(struct kvt_disk_region *dr, size_t len)
{
	__le32 saved = dr->crc;
	u32 crc;

	dr->crc = 0;
	crc = crc32c(~0U, dr, len);
	dr->crc = saved;
	return crc;
}

static int kvt_nvme_write_sb(struct kvt_nvme *nvme)
{
	struct kvt_disk_sb *sb;
	int ret;

	sb = kzalloc(KVT_DISK_PAGE, GFP_KERNEL);
	if (!sb)
		return -ENOMEM;
	sb->magic = cpu_to_le64(KVT_SB_MAGIC);
	sb->version = cpu_to_le32(KVT_FORMAT_VERSION);
	memcpy(sb->uuid, nvme->uuid, sizeof(sb->uuid));
	sb->dev_bytes = cpu_to_le64(nvme->dev_bytes);
	sb->region_bytes = cpu_to_le64(nvme->region_bytes);
	sb->nr_regions = cpu_to_le32(nvme->nr_regions);
	sb->pool_slots = cpu_to_le32(KVT_POOL_SLOTS);
	sb->pool_table_off = cpu_to_le64(KVT_POOL_TABLE_OFF);
	sb->data_off = cpu_to_le64(KVT_DATA_OFF);
	sb->generation = cpu_to_le64(nvme->generation);
	sb->page_bytes = cpu_to_le32(KVT_DISK_PAGE);
	sb->crc = cpu_to_le32(kvt_sb_crc(sb));
	ret = kvt_nvme_rw(nvme, REQ_OP_WRITE | REQ_FUA, 0, sb, KVT_DISK_PAGE);
	kfree(sb);
	return ret;
}

static void kvt_nvme_geometry(struct kvt_nvme *nvme)
{
	nvme->region_pages = nvme->region_bytes / KVT_DISK_PAGE;
	/* Worst case one record per data page; solve for the summary size. */
	nvme->summary_pages = DIV_ROUND_UP(sizeof(struct kvt_disk_region) +
					   (u64)nvme->region_pages *
					   sizeof(struct kvt_disk_rec),
					   KVT_DISK_PAGE);
	nvme->max_recs = nvme->region_pages - nvme->summary_pages;
}

/* A new, empty store: fresh uuid, zeroed pool table. */
static int kvt_nvme_format(struct kvt_nvme *nvme, u32 region_kib)
{
	void *table;
	int ret;

	if (!region_kib)
		region_kib = KVT_REGION_KIB_DEFAULT;
	if (region_kib < KVT_REGION_KIB_MIN || region_kib > KVT_REGION_KIB_MAX ||
	    !is_power_of_2(region_kib))
		return -EINVAL;
	nvme->region_bytes = (u64)region_kib << 10;
	if (nvme->dev_bytes < KVT_DATA_OFF + 2 * nvme->region_bytes)
		return -ENOSPC;
	nvme->nr_regions = div64_u64(nvme->dev_bytes - KVT_DATA_OFF,
				     nvme->region_bytes);
	generate_random_uuid(nvme->uuid);
	nvme->generation = 0;
	kvt_nvme_geometry(nvme);

	table = kvcalloc(KVT_POOL_SLOTS, sizeof(struct kvt_disk_pool),
			 GFP_KERNEL);
	if (!table)
		return -ENOMEM;
	ret = kvt_nvme_rw(nvme, REQ_OP_WRITE | REQ_FUA, KVT_POOL_TABLE_OFF,
			  table, KVT_POOL_SLOTS * sizeof(struct kvt_disk_pool));
	kvfree(table);
	if (ret)
		return ret;
	return kvt_nvme_write_sb(nvme);
}

static int kvt_nvme_read_sb(struct kvt_nvme *nvme, u32 flags, u32 region_kib)
{
	struct kvt_disk_sb *sb;
	int ret;

	sb = kzalloc(KVT_DISK_PAGE, GFP_KERNEL);
	if (!sb)
		return -ENOMEM;
	ret = kvt_nvme_rw(nvme, REQ_OP_READ, 0, sb, KVT_DISK_PAGE);
	if (ret)
		goto out_free;

	if (flags & KVTIER_NVME_FORMAT || !memchr_inv(sb, 0, KVT_DISK_PAGE)) {
		ret = kvt_nvme_format(nvme, region_kib);
		goto out_free;
	}
	ret = -EMEDIUMTYPE;
	if (le64_to_cpu(sb->magic) != KVT_SB_MAGIC ||
	    le32_to_cpu(sb->crc) != kvt_sb_crc(sb))
		goto out_free;
	ret = -EINVAL;
	if (le32_to_cpu(sb->version) != KVT_FORMAT_VERSION || region_kib ||
	    le32_to_cpu(sb->page_bytes) != KVT_DISK_PAGE ||
	    le64_to_cpu(sb->data_off) != KVT_DATA_OFF ||
	    le64_to_cpu(sb->pool_table_off) != KVT_POOL_TABLE_OFF ||
	    le32_to_cpu(sb->pool_slots) != KVT_POOL_SLOTS)
		goto out_free;
	memcpy(nvme->uuid, sb->uuid, sizeof(nvme->uuid));
	nvme->region_bytes = le64_to_cpu(sb->region_bytes);
	nvme->nr_regions = le32_to_cpu(sb->nr_regions);
	nvme->generation = le64_to_cpu(sb->generation);
	if (nvme->region_bytes < (KVT_REGION_KIB_MIN << 10) ||
	    nvme->region_bytes > (KVT_REGION_KIB_MAX << 10) ||
	    !is_power_of_2(nvme->region_bytes) || nvme->nr_regions < 2 ||
	    KVT_DATA_OFF + nvme->nr_regions * nvme->region_bytes >
	    nvme->dev_bytes)
		goto out_free;
	kvt_nvme_geometry(nvme);
	ret = 0;
out_free:
	kfree(sb);
	return ret;
}

/* Re-create the pools of the pool table. */
static int kvt_nvme_load_pools(struct kvt_nvme *nvme)
{
	size_t len = KVT_POOL_SLOTS * sizeof(struct kvt_disk_pool);
	struct kvt_disk_pool *table;
	unsigned int i;
	int ret;

	table = kvmalloc(len, GFP_KERNEL);
	if (!table)
		return -ENOMEM;
	ret = kvt_nvme_rw(nvme, REQ_OP_READ, KVT_POOL_TABLE_OFF, table, len);
	if (ret)
		goto out_free;

	for (i = 0; i < KVT_POOL_SLOTS; i++) {
		struct kvt_disk_pool *dp = &table[i];
		struct kvt_pool *pool;
		char name[KVTIER_NAME_MAX];

		if (!dp->id)
			continue;
		if (le32_to_cpu(dp->crc) != kvt_pool_entry_crc(dp)) {
			pr_warn("pool table slot %u: bad checksum, ignored\n", i);
			continue;
		}
		/* A pool still in memory (detached and attached again). */
		pool = kvt_pool_get_by_id(le64_to_cpu(dp->id));
		if (pool) {
			pool->table_slot = i;
			set_bit(i, nvme->slots);
			kvt_pool_put(pool);
			continue;
		}
		strscpy(name, dp->name, sizeof(name));
		pool = kvt_pool_restore(name, le64_to_cpu(dp->id),
					le64_to_cpu(dp->block_size),
					le32_to_cpu(dp->capacity),
					le32_to_cpu(dp->dram_blocks),
					le32_to_cpu(dp->mode),
					make_kuid(&init_user_ns,
						  le32_to_cpu(dp->uid)),
					make_kgid(&init_user_ns,
						  le32_to_cpu(dp->gid)),
					le32_to_cpu(dp->flags), i);
		if (IS_ERR(pool)) {
			pr_warn("pool %s not restored: %ld\n", name,
				PTR_ERR(pool));
			continue;
		}
		set_bit(i, nvme->slots);
	}
out_free:
	kvfree(table);
	return ret;
}

struct kvt_region_seq {
	u64 seq;
	u32 region;
};

static int kvt_region_seq_cmp(const void *a, const void *b)
{
	const struct kvt_region_seq *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static size_t kvt_summary_bytes(struct kvt_nvme *nvme)
{
	return (size_t)nvme->summary_pages * KVT_DISK_PAGE;
}

/*
 * Read and check a region's summary (as long as it can be; it says how
 * long it is); 0 and a valid summary, or -errno.
 */
static int kvt_summary_read(struct kvt_nvme *nvme, u32 r,
			    struct kvt_disk_region *dr)
{
	size_t len = kvt_summary_bytes(nvme);
	u32 nr, slen;
	int ret;

	ret = kvt_nvme_rw(nvme, REQ_OP_READ, kvt_region_bytes_off(nvme, r),
			  dr, len);
	if (ret)
		return ret;
	nr = le32_to_cpu(dr->nr);
	slen = le32_to_cpu(dr->summary_bytes);
	if (le64_to_cpu(dr->magic) != KVT_REGION_MAGIC ||
	    memcmp(dr->uuid, nvme->uuid, sizeof(dr->uuid)) ||
	    nr > nvme->max_recs || slen > len || slen % KVT_DISK_PAGE ||
	    slen < struct_size(dr, recs, nr) || !dr->seq ||
	    le32_to_cpu(dr->crc) != kvt_summary_crc(dr, slen))
		return -EBADMSG;
	return 0;
}

/*
 * A dirty DRAM block whose key has a copy on the device (it was detached
 * and attached again): adopt the copy if it holds the same bytes, which the
 * keyed crc tells; a block replaced meanwhile stays dirty.
 */
static void kvt_replay_adopt(struct kvt_pool *pool, u32 addr, u32 nloc,
			     u32 crc, u64 seq)
{
	struct kvt_block *blk = &pool->blocks[addr];
	bool same;

	spin_lock(&pool->lock);
	if (blk->state != KVT_BLK_READY || blk->flags || blk->users == U16_MAX) {
		spin_unlock(&pool->lock);
		return;
	}
	blk->users++;
	spin_unlock(&pool->lock);

	same = kvt_block_crc(pool, blk, kvt_rec_seed(pool->id, blk->key,
						     seq)) == crc;

	spin_lock(&pool->lock);
	if (same && blk->state == KVT_BLK_READY && blk->nloc == KVT_NIL &&
	    !(blk->flags & KVT_BF_WB)) {
		blk->nloc = nloc;
		blk->ncrc = crc;
		pool->nr_nvme++;
		pool->nr_dirty--;
	}
	kvt_block_put_user(pool, addr);
}

static void kvt_replay_region(struct kvt_nvme *nvme, u32 r,
			      struct kvt_disk_region *dr)
{
	u32 first = kvt_region_bytes_off(nvme, r) / KVT_DISK_PAGE;
	struct kvt_pool *pool = NULL;
	u32 i, addr;

	for (i = 0; i < le32_to_cpu(dr->nr); i++) {
		struct kvt_disk_rec *rec = &dr->recs[i];
		u64 key[2] = { le64_to_cpu(rec->key[0]),
			       le64_to_cpu(rec->key[1]) };
		u64 id = le64_to_cpu(rec->pool_id);
		u32 page = le32_to_cpu(rec->page);

		if (!pool || pool->id != id) {
			if (pool)
				kvt_pool_put(pool);
			pool = kvt_pool_get_by_id(id);
		}
		if (!pool || le32_to_cpu(rec->pages) != pool->pages_per_block ||
		    page < le32_to_cpu(dr->summary_bytes) / KVT_DISK_PAGE ||
		    page + pool->pages_per_block > nvme->region_pages)
			continue;
		if (kvt_block_restore(pool, key, first + page,
				      le32_to_cpu(rec->crc), &addr) == -EEXIST)
			kvt_replay_adopt(pool, addr, first + page,
					 le32_to_cpu(rec->crc),
					 le64_to_cpu(dr->seq));
	}
	if (pool)
		kvt_pool_put(pool);
}

/* Rebuild the index: replay every valid region summary, oldest first. */
static int kvt_nvme_rebuild(struct kvt_nvme *nvme)
{
	struct kvt_region_seq *order;
	struct kvt_disk_region *dr;
	u32 r, n = 0, i;
	int ret = -ENOMEM;

	order = kvmalloc_array(nvme->nr_regions, sizeof(*order), GFP_KERNEL);
	dr = kvmalloc(kvt_summary_bytes(nvme), GFP_KERNEL);
	if (!order || !dr)
		goto out_free;

	for (r = 0; r < nvme->nr_regions; r++) {
		ret = kvt_summary_read(nvme, r, dr);
		if (ret == -EBADMSG)
			continue;
		if (ret)
			goto out_free;
		order[n].seq = le64_to_cpu(dr->seq);
		order[n].region = r;
		n++;
	}
	sort(order, n, sizeof(*order), kvt_region_seq_cmp, NULL);

	nvme->head = 0;
	nvme->next_seq = 1;
	for (i = 0; i < n; i++) {
		r = order[i].region;
		ret = kvt_summary_read(nvme, r, dr);
		if (ret)
			goto out_free;
		nvme->regions[r].seq = order[i].seq;
		nvme->regions[r].state = KVT_REGION_FULL;
		kvt_replay_region(nvme, r, dr);
		nvme->next_seq = order[i].seq + 1;
		nvme->head = (r + 1) % nvme->nr_regions;
	}
	ret = 0;
out_free:
	kvfree(dr);
	kvfree(order);
	return ret;
}

/*
 * Reclaim region @r before it is written again: every block whose only
 * copy is there goes, the others become dirty. Caller holds nvme->lock.
 */
static void kvt_region_reclaim(struct kvt_nvme *nvme, u32 r,
			       struct kvt_disk_region *dr)
{
	u32 first = kvt_region_bytes_off(nvme, r) / KVT_DISK_PAGE;
	u32 i;

	if (kvt_summary_read(nvme, r, dr))
		goto out_free;
	for (i = 0; i < le32_to_cpu(dr->nr); i++) {
		struct kvt_disk_rec *rec = &dr->recs[i];
		u64 key[2] = { le64_to_cpu(rec->key[0]),
			       le64_to_cpu(rec->key[1]) };
		struct kvt_pool *pool;
		u32 addr;

		pool = kvt_pool_get_by_id(le64_to_cpu(rec->pool_id));
		if (!pool)
			continue;
		spin_lock(&pool->lock);
		addr = kvt_block_find(pool, key);
		if (addr != KVT_NIL &&
		    pool->blocks[addr].nloc == first + le32_to_cpu(rec->page)) {
			if (!kvt_in_dram(&pool->blocks[addr]))
				atomic64_inc(&nvme->lost_blocks);
			kvt_block_forget_nvme(pool, addr);
		}
		spin_unlock(&pool->lock);
		kvt_pool_put(pool);
	}
out_free:
	nvme->regions[r].seq = 0;
	nvme->regions[r].state = KVT_REGION_FREE;
	atomic64_inc(&nvme->reclaimed);
}

/* A region write in flight. */
struct kvt_wbr {
	struct kvt_nvme *nvme;
	u32 region;
	u64 seq;
	u32 nr;
	atomic_t pending;
	int status;
	struct work_struct done_work;
	struct kvt_disk_region *summary;
	struct kvt_wb_entry ents[];
};

static void kvt_wb_finish(struct kvt_pool *pool, struct kvt_wb_entry *e,
			  u32 nloc, u32 crc, int status)
{
	struct kvt_block *blk = &pool->blocks[e->addr];

	spin_lock(&pool->lock);
	blk->flags &= ~KVT_BF_WB;
	pool->nr_wb--;
	pool->io_events++;
	if (blk->state == KVT_BLK_READY) {
		if (!status && nloc != KVT_NIL) {
			blk->nloc = nloc;
			blk->ncrc = crc;
			pool->nr_nvme++;
			pool->nr_dirty--;
			pool->stats.demotions++;
			trace_kvtier_block_written(pool, e->addr);
		}
		if (status)
			pool->wb_errors++;
		if (status && e->victim && !blk->pins && blk->users == 1) {
			/* A victim that cannot be demoted is dropped. */
			kvt_block_unlink(pool, e->addr);
			pool->stats.evictions++;
		}
	}
	kvt_block_put_user(pool, e->addr);
}

static void kvt_wbr_done(struct work_struct *work)
{
	struct kvt_wbr *wbr = container_of(work, struct kvt_wbr, done_work);
	struct kvt_nvme *nvme = wbr->nvme;
	struct kvt_disk_region *dr = wbr->summary;
	u32 first = kvt_region_bytes_off(nvme, wbr->region) / KVT_DISK_PAGE;
	u32 i;

	mutex_lock(&nvme->lock);
	if (wbr->status) {
		nvme->regions[wbr->region].seq = 0;
		nvme->regions[wbr->region].state = KVT_REGION_FREE;
	} else {
		nvme->regions[wbr->region].state = KVT_REGION_FULL;
	}
	mutex_unlock(&nvme->lock);

	for (i = 0; i < wbr->nr; i++) {
		struct kvt_wb_entry *e = &wbr->ents[i];
		u32 nloc = KVT_NIL, crc = 0;

		if (e->rec != KVT_NIL) {
			nloc = first + le32_to_cpu(dr->recs[e->rec].page);
			crc = le32_to_cpu(dr->recs[e->rec].crc);
		}
		kvt_wb_finish(e->pool, e, nloc, crc, wbr->status);
		kvt_pool_put(e->pool);
	}
	kvfree(wbr->summary);
	kvfree(wbr);
	atomic_dec(&nvme->writes);
	queue_work(nvme->wq, &nvme->write_work);
	/* Detach flushes nvme->wq after this, so nvme outlives the wake. */
	if (atomic_dec_and_test(&nvme->inflight))
		wake_up_all(&nvme->idle);
}

static void kvt_wbr_end_io(struct bio *bio)
{
	struct kvt_wbr *wbr = bio->bi_private;

	if (bio->bi_status) {
		wbr->status = blk_status_to_errno(bio->bi_status);
		atomic64_inc(&wbr->nvme->io_errors);
	}
	bio_put(bio);
	if (atomic_dec_and_test(&wbr->pending))
		queue_work(wbr->nvme->wq, &wbr->done_work);
}

/* Add a physically contiguous range, starting a new bio when one is full. */
static struct bio *kvt_wbr_add(struct kvt_wbr *wbr, struct bio *bio,
			       struct page *page, u32 len)
{
	while (bio_add_page(bio, page, len, 0) != len) {
		struct bio *next;

		next = bio_alloc(wbr->nvme->bdev, BIO_MAX_VECS,
				 bio->bi_opf, GFP_NOIO);
		next->bi_iter.bi_sector = bio_end_sector(bio);
		next->bi_private = wbr;
		next->bi_end_io = kvt_wbr_end_io;
		atomic_inc(&wbr->pending);
		submit_bio(bio);
		bio = next;
	}
	return bio;
}

/* Pick the next region to write, reclaiming it if it holds data. */
static int kvt_region_next(struct kvt_nvme *nvme, struct kvt_wbr *wbr)
{
	int ret = 0;

	mutex_lock(&nvme->lock);
	wbr->region = nvme->head;
	if (nvme->regions[wbr->region].state == KVT_REGION_WRITING) {
		ret = -ENOSPC;		/* the log wrapped onto a write */
		goto out_unlock;
	}
	if (nvme->regions[wbr->region].state == KVT_REGION_FULL)
		kvt_region_reclaim(nvme, wbr->region, wbr->summary);
	nvme->regions[wbr->region].state = KVT_REGION_WRITING;
	nvme->regions[wbr->region].seq = nvme->next_seq;
	wbr->seq = nvme->next_seq++;
	nvme->head = (nvme->head + 1) % nvme->nr_regions;
out_unlock:
	mutex_unlock(&nvme->lock);
	return ret;
}

/* Build and submit one region from the entries in @wbr. */
static void kvt_wbr_submit(struct kvt_wbr *wbr)
{
	struct kvt_nvme *nvme = wbr->nvme;
	struct kvt_disk_region *dr = wbr->summary;
	u32 page, i, n = 0, seed;
	struct bio *bio;
	u64 demoted = 0;
	size_t off, slen;

	atomic_set(&wbr->pending, 1);
	for (i = 0; i < wbr->nr; i++)
		wbr->ents[i].rec = KVT_NIL;
	if (kvt_region_next(nvme, wbr)) {
		wbr->status = -ENOSPC;
		goto out_done;
	}

	/* Blocks dropped since they were queued are not written. */
	for (i = 0; i < wbr->nr; i++) {
		struct kvt_wb_entry *e = &wbr->ents[i];
		struct kvt_pool *pool = e->pool;

		spin_lock(&pool->lock);
		if (pool->blocks[e->addr].state == KVT_BLK_READY)
			e->rec = n++;
		spin_unlock(&pool->lock);
	}
	/* The summary takes the pages its records need; data follows. */
	slen = round_up(struct_size(dr, recs, n), KVT_DISK_PAGE);
	page = slen / KVT_DISK_PAGE;
	memset(dr, 0, slen);

	for (i = 0; i < wbr->nr; i++) {
		struct kvt_wb_entry *e = &wbr->ents[i];
		struct kvt_pool *pool = e->pool;
		struct kvt_block *blk = &pool->blocks[e->addr];
		struct kvt_disk_rec *rec;

		if (e->rec == KVT_NIL)
			continue;
		/* The data is stable: the block is READY and held as a user. */
		rec = &dr->recs[e->rec];
		rec->pool_id = cpu_to_le64(pool->id);
		rec->key[0] = cpu_to_le64(blk->key[0]);
		rec->key[1] = cpu_to_le64(blk->key[1]);
		rec->page = cpu_to_le32(page);
		rec->pages = cpu_to_le32(pool->pages_per_block);
		seed = kvt_rec_seed(pool->id, blk->key, wbr->seq);
		rec->crc = cpu_to_le32(kvt_block_crc(pool, blk, seed));
		page += pool->pages_per_block;
		demoted += pool->block_size;
	}
	dr->magic = cpu_to_le64(KVT_REGION_MAGIC);
	dr->seq = cpu_to_le64(wbr->seq);
	memcpy(dr->uuid, nvme->uuid, sizeof(dr->uuid));
	dr->nr = cpu_to_le32(n);
	dr->summary_bytes = cpu_to_le32(slen);
	dr->crc = cpu_to_le32(kvt_summary_crc(dr, slen));

	bio = bio_alloc(nvme->bdev, BIO_MAX_VECS,
			REQ_OP_WRITE | REQ_FUA | REQ_SYNC, GFP_NOIO);
	off = kvt_region_bytes_off(nvme, wbr->region);
	bio->bi_iter.bi_sector = KVT_SECTORS(off);
	bio->bi_private = wbr;
	bio->bi_end_io = kvt_wbr_end_io;
	for (off = 0; off < slen; off += PAGE_SIZE)
		bio = kvt_wbr_add(wbr, bio, is_vmalloc_addr(dr) ?
				  vmalloc_to_page((void *)dr + off) :
				  virt_to_page((void *)dr + off), PAGE_SIZE);
	for (i = 0; i < wbr->nr; i++) {
		struct kvt_wb_entry *e = &wbr->ents[i];
		struct kvt_pool *pool = e->pool;
		struct kvt_block *blk = &pool->blocks[e->addr];
		u32 chunk, len = PAGE_SIZE << blk->order;

		if (e->rec == KVT_NIL)
			continue;
		for (chunk = 0; chunk < pool->pages_per_block;
		     chunk += 1U << blk->order)
			bio = kvt_wbr_add(wbr, bio,
					  kvt_dram_page(pool, blk, chunk),
					  len);
	}
	atomic_inc(&wbr->pending);
	submit_bio(bio);
	atomic64_add(slen + demoted, &nvme->bytes_written);
	atomic64_add(demoted, &nvme->bytes_demoted);
out_done:
	if (atomic_dec_and_test(&wbr->pending))
		queue_work(nvme->wq, &wbr->done_work);
}

/* Take entries off the queue for one region; kvt_nvme_qlock held. */
static u32 kvt_queue_take(struct kvt_nvme *nvme, struct kvt_wbr *wbr)
{
	u32 pages = nvme->summary_pages;

	wbr->nr = 0;
	while (nvme->qlen && wbr->nr < nvme->max_recs) {
		struct kvt_wb_entry *e = &nvme->queue[nvme->qhead];

		if (pages + e->pool->pages_per_block > nvme->region_pages)
			break;
		pages += e->pool->pages_per_block;
		wbr->ents[wbr->nr++] = *e;
		nvme->qhead = (nvme->qhead + 1) % nvme->qcap;
		nvme->qlen--;
	}
	return wbr->nr;
}

static void kvt_nvme_write_work(struct work_struct *work)
{
	struct kvt_nvme *nvme = container_of(work, struct kvt_nvme,
					     write_work);
	struct kvt_wbr *wbr;

	while (atomic_read(&nvme->writes) < KVT_WRITE_QD) {
		wbr = kvzalloc(struct_size(wbr, ents, nvme->max_recs),
			       GFP_NOIO);
		if (!wbr)
			return;
		wbr->summary = kvmalloc(kvt_summary_bytes(nvme), GFP_NOIO);
		if (!wbr->summary) {
			kvfree(wbr);
			return;
		}
		wbr->nvme = nvme;
		INIT_WORK(&wbr->done_work, kvt_wbr_done);

		spin_lock(&kvt_nvme_qlock);
		if (!kvt_queue_take(nvme, wbr)) {
			spin_unlock(&kvt_nvme_qlock);
			kvfree(wbr->summary);
			kvfree(wbr);
			return;
		}
		spin_unlock(&kvt_nvme_qlock);
		atomic_inc(&nvme->writes);
		atomic_inc(&nvme->inflight);
		kvt_wbr_submit(wbr);
	}
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
 * Return: blocks queued, -ENODEV without a device, -EFBIG if the pool's
 * blocks do not fit in a region.
 */
int kvt_nvme_clean(struct kvt_pool *pool, unsigned int nr, bool victims)
{
	struct kvt_nvme *nvme;
	u32 addr, prev, queued = 0;

	lockdep_assert_held(&pool->lock);
	spin_lock(&kvt_nvme_qlock);
	nvme = kvt_nvme;
	if (!nvme) {
		spin_unlock(&kvt_nvme_qlock);
		return -ENODEV;
	}
	if (pool->pages_per_block > nvme->max_recs) {
		spin_unlock(&kvt_nvme_qlock);
		return -EFBIG;		/* a block larger than a region */
	}
	if (!nr) {
		nr = clamp(nvme->max_recs / pool->pages_per_block, 1U,
			   max(1U, pool->dram_blocks / 4));
		/* Ahead of need, only whole regions: they cost one summary. */
		if (!victims && pool->nr_dirty < nr) {
			spin_unlock(&kvt_nvme_qlock);
			return 0;
		}
	}
	for (addr = pool->lru.tail; addr != KVT_NIL && queued < nr &&
	     nvme->qlen < nvme->qcap; addr = prev) {
		struct kvt_block *blk = &pool->blocks[addr];
		struct kvt_wb_entry *e;

		prev = blk->prev;
		if (blk->nloc != KVT_NIL || blk->flags || blk->users)
			continue;
		/* It keeps its place; eviction skips it until it is clean. */
		blk->flags |= KVT_BF_WB;
		blk->users++;
		pool->nr_wb++;
		kref_get(&pool->ref);
		e = &nvme->queue[(nvme->qhead + nvme->qlen) % nvme->qcap];
		e->pool = pool;
		e->addr = addr;
		e->victim = victims;
		nvme->qlen++;
		queued++;
	}
	if (queued)
		queue_work(nvme->wq, &nvme->write_work);
	spin_unlock(&kvt_nvme_qlock);
	return queued;
}

/* A block read in flight. */
struct kvt_rd {
	struct kvt_nvme *nvme;
	struct kvt_pool *pool;
	u32 addr;
	u32 nloc;
	u32 crc;
	atomic_t pending;
	int status;
	struct work_struct work;
};

static void kvt_rd_done(struct work_struct *work)
{
	struct kvt_rd *rd = container_of(work, struct kvt_rd, work);
	struct kvt_nvme *nvme = rd->nvme;
	struct kvt_pool *pool = rd->pool;
	struct kvt_block *blk = &pool->blocks[rd->addr];
	u64 seq = READ_ONCE(nvme->regions[kvt_loc_region(nvme,
							  rd->nloc)].seq);
	bool ok = false;

	if (!rd->status && seq)
		ok = kvt_block_crc(pool, blk, kvt_rec_seed(pool->id, blk->key,
							   seq)) == rd->crc;
	if (!rd->status)
		atomic64_add(pool->block_size, &nvme->bytes_read);

	spin_lock(&pool->lock);
	blk->flags &= ~KVT_BF_LOADING;
	pool->nr_loading--;
	pool->io_events++;
	if (blk->state == KVT_BLK_READY) {
		if (ok && blk->nloc == rd->nloc) {
			pool->stats.promotions++;
			if (!blk->pins)
				kvt_policy_insert(pool, rd->addr);
			trace_kvtier_block_promote(pool, rd->addr);
		} else {
			/* Never serve it: the block is a miss from now on. */
			pool->stats.bad_reads++;
			kvt_block_unlink(pool, rd->addr);
		}
	}
	kvt_block_put_user(pool, rd->addr);
	kvt_pool_put(pool);
	kfree(rd);
	if (atomic_dec_and_test(&nvme->inflight))
		wake_up_all(&nvme->idle);
}

static void kvt_rd_end_io(struct bio *bio)
{
	struct kvt_rd *rd = bio->bi_private;

	if (bio->bi_status) {
		rd->status = blk_status_to_errno(bio->bi_status);
		atomic64_inc(&rd->nvme->io_errors);
	}
	bio_put(bio);
	if (atomic_dec_and_test(&rd->pending))
		queue_work(rd->nvme->wq, &rd->work);
}

/**
 * kvt_nvme_load() - start reading a block back into DRAM
 * @pool: the pool, its lock held; dropped on return
 * @addr: a READY block only on NVMe, not busy
 *
 * The block is KVT_BF_LOADING until the read is verified; waiters sleep on
 * pool->wq. A block that does not verify is dropped.
 *
 * Return: 0 when the read is under way, or -errno.
 */
int kvt_nvme_load(struct kvt_pool *pool, u32 addr)
	__releases(&pool->lock)
{
	struct kvt_block *blk = &pool->blocks[addr];
	struct kvt_nvme *nvme;
	struct kvt_rd *rd;
	struct bio *bio;
	u32 chunk, len;
	int ret;

	blk->flags |= KVT_BF_LOADING;
	blk->users++;
	pool->nr_loading++;
	ret = kvt_make_room(pool);
	if (!ret && blk->state != KVT_BLK_READY)
		ret = -ENOENT;
	if (ret)
		goto out_put_user;
	pool->nr_dram++;
	spin_unlock(&pool->lock);

	ret = -ENOMEM;
	rd = kzalloc(sizeof(*rd), GFP_KERNEL);
	if (!rd)
		goto out_undo_dram;
	ret = kvt_dram_alloc(pool, blk);
	if (ret)
		goto out_free_rd;

	spin_lock(&kvt_nvme_qlock);
	nvme = kvt_nvme;
	if (nvme)
		atomic_inc(&nvme->inflight);
	spin_unlock(&kvt_nvme_qlock);
	ret = -EIO;
	if (!nvme)
		goto out_free_dram;

	kref_get(&pool->ref);
	rd->nvme = nvme;
	rd->pool = pool;
	rd->addr = addr;
	spin_lock(&pool->lock);
	rd->nloc = blk->nloc;
	rd->crc = blk->ncrc;
	spin_unlock(&pool->lock);
	INIT_WORK(&rd->work, kvt_rd_done);
	atomic_set(&rd->pending, 1);

	len = PAGE_SIZE << blk->order;
	bio = bio_alloc(nvme->bdev, BIO_MAX_VECS, REQ_OP_READ, GFP_NOIO);
	bio->bi_iter.bi_sector = KVT_SECTORS(kvt_loc_bytes(rd->nloc));
	bio->bi_private = rd;
	bio->bi_end_io = kvt_rd_end_io;
	for (chunk = 0; chunk < pool->pages_per_block;
	     chunk += 1U << blk->order) {
		struct page *page = kvt_dram_page(pool, blk, chunk);

		while (bio_add_page(bio, page, len, 0) != len) {
			struct bio *next;

			next = bio_alloc(nvme->bdev, BIO_MAX_VECS, REQ_OP_READ,
					 GFP_NOIO);
			next->bi_iter.bi_sector = bio_end_sector(bio);
			next->bi_private = rd;
			next->bi_end_io = kvt_rd_end_io;
			atomic_inc(&rd->pending);
			submit_bio(bio);
			bio = next;
		}
	}
	atomic_inc(&rd->pending);
	submit_bio(bio);
	if (atomic_dec_and_test(&rd->pending))
		queue_work(nvme->wq, &rd->work);
	return 0;

out_free_dram:
	kvt_dram_free(pool, blk);
out_free_rd:
	kfree(rd);
out_undo_dram:
	spin_lock(&pool->lock);
	pool->nr_dram--;
	/* Without a device the NVMe copy can never be read: it is gone. */
	if (ret == -EIO && blk->state == KVT_BLK_READY)
		kvt_block_unlink(pool, addr);
out_put_user:
	blk->flags &= ~KVT_BF_LOADING;
	pool->nr_loading--;
	pool->io_events++;
	kvt_block_put_user(pool, addr);
	return ret;
}

/**
 * kvt_nvme_sync() - write every dirty block of a pool and wait
 * @pool: the pool
 * @written: out: blocks written
 *
 * Return: 0; -ENODEV without a device; -EIO if a block could not be
 * written; -EINTR if killed while waiting.
 */
int kvt_nvme_sync(struct kvt_pool *pool, u64 *written)
{
	u64 before, errors;
	u32 addr;
	int ret;

	if (!kvt_nvme_attached())
		return -ENODEV;
	spin_lock(&pool->lock);
	before = pool->stats.demotions;
	errors = pool->wb_errors;
	spin_unlock(&pool->lock);

	for (;;) {
		int queued = 0;

		spin_lock(&pool->lock);
		for (addr = 0; addr < pool->capacity; addr++) {
			struct kvt_block *blk = &pool->blocks[addr];
			struct kvt_nvme *nvme;
			struct kvt_wb_entry *e;

			if (blk->state != KVT_BLK_READY || !kvt_in_dram(blk) ||
			    blk->nloc != KVT_NIL || blk->flags)
				continue;
			spin_lock(&kvt_nvme_qlock);
			nvme = kvt_nvme;
			if (!nvme || nvme->qlen == nvme->qcap ||
			    pool->pages_per_block > nvme->max_recs) {
				spin_unlock(&kvt_nvme_qlock);
				if (!nvme || nvme->qlen < nvme->qcap) {
					spin_unlock(&pool->lock);
					return nvme ? -EFBIG : -ENODEV;
				}
				break;
			}
			blk->flags |= KVT_BF_WB;
			blk->users++;
			pool->nr_wb++;
			kref_get(&pool->ref);
			e = &nvme->queue[(nvme->qhead + nvme->qlen) % nvme->qcap];
			e->pool = pool;
			e->addr = addr;
			e->victim = false;
			nvme->qlen++;
			queued++;
			queue_work(nvme->wq, &nvme->write_work);
			spin_unlock(&kvt_nvme_qlock);
		}
		spin_unlock(&pool->lock);

		ret = wait_event_killable(pool->wq, !READ_ONCE(pool->nr_wb));
		if (ret)
			return -EINTR;
		if (!queued)
			break;
	}

	spin_lock(&pool->lock);
	*written = pool->stats.demotions - before;
	errors = pool->wb_errors - errors;
	spin_unlock(&pool->lock);
	return errors ? -EIO : 0;
}

/* Write one pool table slot: read-modify-write of its page. */
static int kvt_nvme_write_pool_slot(struct kvt_nvme *nvme,
				    struct kvt_disk_pool *dp, int slot)
{
	u64 off = KVT_POOL_TABLE_OFF + (u64)slot * sizeof(*dp);
	u64 page_off = round_down(off, KVT_DISK_PAGE);
	void *page;
	int ret;

	page = kmalloc(KVT_DISK_PAGE, GFP_KERNEL);
	if (!page)
		return -ENOMEM;
	ret = kvt_nvme_rw(nvme, REQ_OP_READ, page_off, page, KVT_DISK_PAGE);
	if (!ret) {
		memcpy(page + (off - page_off), dp, sizeof(*dp));
		ret = kvt_nvme_rw(nvme, REQ_OP_WRITE | REQ_FUA, page_off, page,
				  KVT_DISK_PAGE);
	}
	kfree(page);
	return ret;
}

/**
 * kvt_nvme_pool_record() - record a new pool in the device's pool table
 * @pool: a pool being created, under kvt_nvme_lock_table()
 *
 * Return: 0 (also without a device: the pool is then not persistent),
 * -ENOSPC when the table is full, -EIO.
 */
int kvt_nvme_pool_record(struct kvt_pool *pool)
{
	struct kvt_disk_pool *dp;
	struct kvt_nvme *nvme;
	int slot, ret = 0;

	lockdep_assert_held(&kvt_nvme_lock);
	nvme = kvt_nvme;
	if (!nvme)
		return 0;
	dp = kzalloc(sizeof(*dp), GFP_KERNEL);
	if (!dp)
		return -ENOMEM;

	slot = find_first_zero_bit(nvme->slots, KVT_POOL_SLOTS);
	if (slot < KVT_POOL_SLOTS)
		set_bit(slot, nvme->slots);
	ret = -ENOSPC;
	if (slot >= KVT_POOL_SLOTS)
		goto out_free;

	dp->id = cpu_to_le64(pool->id);
	memcpy(dp->name, pool->name, sizeof(dp->name));
	dp->block_size = cpu_to_le64(pool->block_size);
	dp->capacity = cpu_to_le32(pool->capacity);
	dp->dram_blocks = cpu_to_le32(pool->dram_blocks);
	dp->mode = cpu_to_le32(pool->mode);
	dp->uid = cpu_to_le32(from_kuid(&init_user_ns, pool->uid));
	dp->gid = cpu_to_le32(from_kgid(&init_user_ns, pool->gid));
	dp->flags = cpu_to_le32(pool->flags);
	dp->crc = cpu_to_le32(kvt_pool_entry_crc(dp));
	ret = kvt_nvme_write_pool_slot(nvme, dp, slot);
	if (ret)
		clear_bit(slot, nvme->slots);
	else
		pool->table_slot = slot;
out_free:
	kfree(dp);
	return ret;
}

/**
 * kvt_nvme_pool_erase() - remove a destroyed pool from the pool table
 * @pool: the pool, losing its name, under kvt_nvme_lock_table()
 *
 * Its records on the device become garbage, reclaimed with their regions.
 */
void kvt_nvme_pool_erase(struct kvt_pool *pool)
{
	struct kvt_disk_pool *dp;
	struct kvt_nvme *nvme;

	lockdep_assert_held(&kvt_nvme_lock);
	nvme = kvt_nvme;
	if (!nvme || pool->table_slot < 0)
		return;
	dp = kzalloc(sizeof(*dp), GFP_KERNEL);
	if (!dp || kvt_nvme_write_pool_slot(nvme, dp, pool->table_slot))
		pr_warn("pool %s stays in the pool table: it comes back at the next attach\n",
			pool->name);
	kfree(dp);
	clear_bit(pool->table_slot, nvme->slots);
	pool->table_slot = -1;
}

static void kvt_nvme_free(struct kvt_nvme *nvme)
{
	if (nvme->wq)
		destroy_workqueue(nvme->wq);
	kvfree(nvme->queue);
	kvfree(nvme->regions);
	blkdev_put(nvme->bdev, FMODE_READ | FMODE_WRITE | FMODE_EXCL);
	kfree(nvme);
}

/**
 * kvt_nvme_attach() - attach a block device as the NVMe tier
 * @path: path of the block device
 * @flags: KVTIER_NVME_FORMAT
 * @region_kib: region size for a format, 0 for the default
 *
 * Return: 0; -EBUSY (attached already, or the device is in use);
 * -EMEDIUMTYPE (foreign content); -EINVAL; -ENOSPC (too small); -EIO;
 * -ENOMEM; or what opening @path returns.
 */
int kvt_nvme_attach(const char *path, u32 flags, u32 region_kib)
{
	struct kvt_nvme *nvme;
	ktime_t start = ktime_get();
	int ret;

	if (flags & ~KVTIER_NVME_FORMAT ||
	    (region_kib && !(flags & KVTIER_NVME_FORMAT)))
		return -EINVAL;

	mutex_lock(&kvt_nvme_lock);
	ret = -EBUSY;
	if (kvt_nvme)
		goto out_unlock;
	ret = -ENOMEM;
	nvme = kzalloc(sizeof(*nvme), GFP_KERNEL);
	if (!nvme)
		goto out_unlock;
	mutex_init(&nvme->lock);
	atomic_set(&nvme->writes, 0);
	atomic_set(&nvme->inflight, 0);
	init_waitqueue_head(&nvme->idle);
	INIT_WORK(&nvme->write_work, kvt_nvme_write_work);

	nvme->bdev = blkdev_get_by_path(path, FMODE_READ | FMODE_WRITE |
					FMODE_EXCL, &kvt_nvme);
	if (IS_ERR(nvme->bdev)) {
		ret = PTR_ERR(nvme->bdev);
		kfree(nvme);
		goto out_unlock;
	}
	nvme->dev_bytes = bdev_nr_bytes(nvme->bdev);
	ret = -EINVAL;
	if (bdev_logical_block_size(nvme->bdev) > KVT_DISK_PAGE)
		goto out_free;

	ret = kvt_nvme_read_sb(nvme, flags, region_kib);
	if (ret)
		goto out_free;

	ret = -ENOMEM;
	nvme->regions = kvcalloc(nvme->nr_regions, sizeof(*nvme->regions),
				 GFP_KERNEL);
	nvme->qcap = 4 * nvme->max_recs;
	nvme->queue = kvmalloc_array(nvme->qcap, sizeof(*nvme->queue),
				     GFP_KERNEL);
	nvme->wq = alloc_workqueue("kvtier-nvme", WQ_UNBOUND | WQ_MEM_RECLAIM,
				   0);
	if (!nvme->regions || !nvme->queue || !nvme->wq)
		goto out_free;

	ret = kvt_nvme_load_pools(nvme);
	if (ret)
		goto out_free;
	ret = kvt_nvme_rebuild(nvme);
	if (ret)
		goto out_free;
	nvme->generation++;
	ret = kvt_nvme_write_sb(nvme);
	if (ret)
		goto out_free;

	nvme->attach_ns = ktime_to_ns(ktime_sub(ktime_get(), start));
	spin_lock(&kvt_nvme_qlock);
	kvt_nvme = nvme;
	spin_unlock(&kvt_nvme_qlock);
	mutex_unlock(&kvt_nvme_lock);
	pr_info("attached %s: %u regions of %llu KiB, generation %llu, %llu us\n",
		path, nvme->nr_regions, nvme->region_bytes >> 10,
		nvme->generation, nvme->attach_ns / NSEC_PER_USEC);
	return 0;

out_free:
	kvt_nvme_free(nvme);
out_unlock:
	mutex_unlock(&kvt_nvme_lock);
	return ret;
}

static void kvt_nvme_sync_one(struct kvt_pool *pool)
{
	u64 written;

	if (pool->table_slot >= 0 && kvt_nvme_sync(pool, &written))
		pr_warn("pool %s: not every block reached NVMe\n", pool->name);
}

static void kvt_nvme_forget_one(struct kvt_pool *pool)
{
	u32 addr;

	spin_lock(&pool->lock);
	for (addr = 0; addr < pool->capacity; addr++)
		if (pool->blocks[addr].state == KVT_BLK_READY &&
		    pool->blocks[addr].nloc != KVT_NIL)
			kvt_block_forget_nvme(pool, addr);
	pool->table_slot = -1;
	spin_unlock(&pool->lock);
}

/**
 * kvt_nvme_detach() - detach the NVMe tier
 *
 * Writes back the dirty blocks of persistent pools, waits for every I/O,
 * then forgets the blocks that were only on NVMe.
 *
 * Return: 0, or -ENODEV when none is attached.
 */
int kvt_nvme_detach(void)
{
	struct kvt_pool **pools;
	struct kvt_nvme *nvme;
	unsigned int i, nr;

	mutex_lock(&kvt_nvme_lock);
	nvme = kvt_nvme;
	if (!nvme) {
		mutex_unlock(&kvt_nvme_lock);
		return -ENODEV;
	}
	mutex_unlock(&kvt_nvme_lock);
	pools = kvt_pools_get_named(&nr);
	for (i = 0; i < nr; i++)
		kvt_nvme_sync_one(pools[i]);
	kvt_pools_put_named(pools, nr);

	mutex_lock(&kvt_nvme_lock);
	spin_lock(&kvt_nvme_qlock);
	kvt_nvme = NULL;
	spin_unlock(&kvt_nvme_qlock);
	/* Queued blocks are still written; wait for every I/O to end. */
	queue_work(nvme->wq, &nvme->write_work);
	wait_event(nvme->idle, !atomic_read(&nvme->inflight) && !nvme->qlen);
	flush_workqueue(nvme->wq);
	pools = kvt_pools_get_named(&nr);
	for (i = 0; i < nr; i++)
		kvt_nvme_forget_one(pools[i]);
	kvt_pools_put_named(pools, nr);
	kvt_nvme_free(nvme);
	mutex_unlock(&kvt_nvme_lock);
	pr_info("detached\n");
	return 0;
}

/**
 * kvt_nvme_attached() - whether blocks can be demoted now
 *
 * Return: true if a device is attached.
 */
bool kvt_nvme_attached(void)
{
	return READ_ONCE(kvt_nvme);
}

/**
 * kvt_nvme_stat() - the NVMe tier's figures
 * @st: out; zeroed and filled
 */
void kvt_nvme_stat(struct kvtier_nvme_stat *st)
{
	struct kvt_nvme *nvme;
	u32 r;

	memset(st, 0, sizeof(*st));
	mutex_lock(&kvt_nvme_lock);
	nvme = kvt_nvme;
	if (!nvme)
		goto out_unlock;
	st->attached = 1;
	st->dev_bytes = nvme->dev_bytes;
	st->region_bytes = nvme->region_bytes;
	st->nr_regions = nvme->nr_regions;
	mutex_lock(&nvme->lock);
	for (r = 0; r < nvme->nr_regions; r++)
		st->free_regions += nvme->regions[r].state == KVT_REGION_FREE;
	mutex_unlock(&nvme->lock);
	st->bytes_written = atomic64_read(&nvme->bytes_written);
	st->bytes_demoted = atomic64_read(&nvme->bytes_demoted);
	st->bytes_read = atomic64_read(&nvme->bytes_read);
	st->reclaimed = atomic64_read(&nvme->reclaimed);
	st->lost_blocks = atomic64_read(&nvme->lost_blocks);
	st->io_errors = atomic64_read(&nvme->io_errors);
	st->attach_ns = nvme->attach_ns;
	memcpy(st->uuid, nvme->uuid, sizeof(st->uuid));
out_unlock:
	mutex_unlock(&kvt_nvme_lock);
}
