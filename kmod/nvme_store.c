// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe tier, the store: what is on a device besides the blocks' data, and
 * the devices' life in the module.
 *
 * Each attached device (up to KVTIER_NVME_MAX) is a store of its own: its
 * superblock and pool table are the only things written in place. Attach
 * reads them, re-creates the pools of the table (a pool already in memory
 * is the same pool), records the persistent pools it lacks, and rebuilds
 * the index by replaying every valid segment summary in write order (the
 * newest copy of a key on the device wins; a copy on another device is
 * kept), then applies the tombstones of dropped copies. Detach writes
 * back the persistent pools when it takes the last device, and waits for
 * the device's I/O and tombstones. Documentation/nvme-format.rst has the
 * layout.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blkdev.h>
#include <linux/bio.h>
#include <linux/crc32c.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/uuid.h>
#include <linux/ktime.h>
#include "nvme.h"

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
	u32 pages;

	nvme->region_pages = nvme->region_bytes / KVT_DISK_PAGE;
	/*
	 * Worst case one record per data page; solve for the summary size.
	 * That bounds the records of a summary (as in version 3, whose
	 * stores are read alike); a summary of as many blocks that each
	 * carry a record of the runtime's is larger, and it is that size
	 * that summaries are read into and built in.
	 */
	pages = DIV_ROUND_UP(kvt_summary_len(nvme->region_pages, 0),
			     KVT_DISK_PAGE);
	nvme->max_recs = nvme->region_pages - pages;
	nvme->summary_pages = DIV_ROUND_UP(kvt_summary_len(nvme->max_recs,
							   nvme->max_recs),
					   KVT_DISK_PAGE);
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
	/* What the device held is nobody's now. */
	kvt_nvme_discard(nvme, KVT_DATA_OFF,
			 (u64)nvme->nr_regions * nvme->region_bytes);

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
	if (le32_to_cpu(sb->version) < KVT_FORMAT_VERSION_MIN ||
	    le32_to_cpu(sb->version) > KVT_FORMAT_VERSION || region_kib ||
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
		/* A pool in memory: attached again, or on another device. */
		pool = kvt_pool_get_by_id(le64_to_cpu(dp->id));
		if (pool) {
			pool->table_slot[nvme->index] = i;
			pool->persistent = true;
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
					le32_to_cpu(dp->flags),
					le32_to_cpu(dp->parts), dp->compress,
					dp->compress_flags, nvme->index, i);
		/*
		 * A pool whose compressor cannot be loaded would lose its
		 * blocks to the next writes: the device is refused instead.
		 */
		if (PTR_ERR_OR_ZERO(pool) == -ENOPKG) {
			pr_warn("pool %s: no compressor %u, device not attached\n",
				name, dp->compress);
			ret = -ENOPKG;
			break;
		}
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

/*
 * A dirty DRAM block whose key has a copy on the device (it was detached
 * and attached again): adopt the copy if it holds the same bytes, which
 * the crc of its record tells (@dcrc, derived from it) without reading the
 * block, with where a compressed copy ends (@zl); a block replaced
 * meanwhile stays dirty.
 */
static void kvt_replay_adopt(struct kvt_pool *pool, u32 addr, u8 ndev,
			     u32 nloc, u32 dcrc, const struct kvt_zloc *zl)
{
	struct kvt_block *blk = &pool->blocks[addr];

	/* The same bytes: the same crc (struct kvt_block's ncrc). */
	spin_lock(&pool->lock);
	if (blk->state == KVT_BLK_READY && !blk->flags &&
	    blk->nloc == KVT_NIL && kvt_in_dram(blk) && blk->ncrc == dcrc) {
		blk->ndev = ndev;
		blk->nloc = nloc;
		if (pool->zloc)
			pool->zloc[addr] = *zl;
		pool->nr_nvme++;
		pool->nr_dirty--;
		kvt_res_cleaned(pool, addr);
	}
	spin_unlock(&pool->lock);
}

/* struct kvt_replay - what replay keeps until every record is in */
struct kvt_replay {
	struct kvt_disk_rec *drops;	/* the tombstones met */
	u32 nr_drops;
	u32 max_drops;
};

/* Keep a tombstone for kvt_replay_drops(). */
static int kvt_replay_keep(struct kvt_replay *rp, struct kvt_disk_rec *rec)
{
	if (rp->nr_drops == rp->max_drops) {
		u32 max = max(64U, rp->max_drops * 2);
		struct kvt_disk_rec *drops;

		drops = kvmalloc_array(max, sizeof(*drops), GFP_KERNEL);
		if (!drops)
			return -ENOMEM;
		if (rp->nr_drops)
			memcpy(drops, rp->drops, rp->nr_drops * sizeof(*drops));
		kvfree(rp->drops);
		rp->drops = drops;
		rp->max_drops = max;
	}
	rp->drops[rp->nr_drops++] = *rec;
	return 0;
}

/*
 * Apply the tombstones, once every record is replayed: replay goes region
 * by region, and a tombstone must never be undone by a record of the copy
 * it names that comes later in that order. A tombstone removes its key's
 * copy on this device if that copy is the one it names or an older one,
 * in (seq, page) order, which is the order segments are written in; a
 * newer PUT of the key stays.
 */
static void kvt_replay_drops(struct kvt_nvme *nvme, struct kvt_replay *rp)
{
	struct kvt_pool *pool = NULL;
	u32 i;

	for (i = 0; i < rp->nr_drops; i++) {
		struct kvt_disk_rec *rec = &rp->drops[i];
		u64 key[2] = { le64_to_cpu(rec->key[0]),
			       le64_to_cpu(rec->key[1]) };
		u64 id = le64_to_cpu(rec->pool_id);
		u64 seq = le64_to_cpu(rec->drop_seq), cseq;
		u32 nloc = le32_to_cpu(rec->page), addr, r;
		struct kvt_block *blk;

		if (!pool || pool->id != id) {
			if (pool)
				kvt_pool_put(pool);
			pool = kvt_pool_get_by_id(id);
		}
		if (!pool)
			continue;
		spin_lock(&pool->lock);
		addr = kvt_block_find(pool, key);
		blk = addr != KVT_NIL ? &pool->blocks[addr] : NULL;
		if (blk && blk->state == KVT_BLK_READY &&
		    blk->nloc != KVT_NIL && blk->ndev == nvme->index &&
		    kvt_loc_bytes(blk->nloc) >= KVT_DATA_OFF) {
			r = kvt_loc_region(nvme, blk->nloc);
			cseq = r < nvme->nr_regions ? nvme->regions[r].seq : 0;
			/* Only on NVMe, it goes; in DRAM, it is dirty again. */
			if (cseq < seq || (cseq == seq && blk->nloc <= nloc))
				kvt_res_forget_nvme(pool, addr,
						    KVTIER_EVR_DROP);
		}
		spin_unlock(&pool->lock);
	}
	if (pool)
		kvt_pool_put(pool);
}

/*
 * The record of the runtime's that came with block record @i, if any:
 * @k is a cursor into the summary's records of blocks, which follow the
 * order of theirs. A malformed one (a length out of range) is taken as
 * none.
 *
 * Return: 0 with *@um the record or NULL; -ENOMEM.
 */
static int kvt_replay_meta(struct kvt_disk_region *dr, u32 i, u32 *k,
			   struct kvt_umeta **um)
{
	u32 nr = le32_to_cpu(dr->nr), nr_meta = le32_to_cpu(dr->nr_meta);
	struct kvt_disk_meta *meta = kvt_summary_meta(dr, nr);
	u32 len;

	*um = NULL;
	while (*k < nr_meta && le32_to_cpu(meta[*k].rec) < i)
		(*k)++;
	if (*k >= nr_meta || le32_to_cpu(meta[*k].rec) != i)
		return 0;
	len = le32_to_cpu(meta[*k].len);
	if (!len || len > KVT_DISK_META_MAX)
		return 0;
	*um = kvt_umeta_new(meta[*k].data, len, GFP_KERNEL_ACCOUNT);
	return *um ? 0 : -ENOMEM;
}

static int kvt_replay_segment(struct kvt_nvme *nvme, u32 r,
			      struct kvt_disk_region *dr,
			      struct kvt_replay *rp)
{
	u32 first = kvt_region_bytes_off(nvme, r) / KVT_DISK_PAGE;
	u32 start = le32_to_cpu(dr->seg_page);
	u32 data = start + le32_to_cpu(dr->summary_bytes) / KVT_DISK_PAGE;
	u32 end = start + kvt_seg_pages(nvme, dr);
	u64 seq = le64_to_cpu(dr->seq);
	struct kvt_pool *pool = NULL;
	u32 i, k = 0, addr, dcrc, pages;
	struct kvt_zloc zl;
	struct kvt_umeta *um;
	int ret = 0;

	for (i = 0; i < le32_to_cpu(dr->nr); i++) {
		struct kvt_disk_rec *rec = &dr->recs[i];
		u64 key[2] = { le64_to_cpu(rec->key[0]),
			       le64_to_cpu(rec->key[1]) };
		u64 id = le64_to_cpu(rec->pool_id);
		u32 page = le32_to_cpu(rec->page);
		u32 flags = le32_to_cpu(rec->flags);

		if (flags & KVT_REC_DROP) {
			if (!rec->pages && kvt_replay_keep(rp, rec)) {
				ret = -ENOMEM;
				break;
			}
			continue;
		}
		/* A record of a kind this version does not know. */
		if (flags & ~(KVT_REC_PARTS | KVT_REC_Z) ||
		    (flags & KVT_REC_PARTS && flags & KVT_REC_Z))
			continue;
		if (!pool || pool->id != id) {
			if (pool)
				kvt_pool_put(pool);
			pool = kvt_pool_get_by_id(id);
		}
		if (!pool)
			continue;
		/* A part table is the page before the data, in the segment. */
		pages = le32_to_cpu(rec->pages);
		if (page < data + !!(flags & KVT_REC_PARTS) || pages > end ||
		    page > end - pages)
			continue;
		if (flags & KVT_REC_Z) {
			/* Fewer pages than the block, all but the last full. */
			zl.bytes = le32_to_cpu(rec->z.bytes);
			zl.crc = le32_to_cpu(rec->crc);
			dcrc = le32_to_cpu(rec->z.dcrc);
			if (!pool->compress || !pages ||
			    pages >= pool->pages_per_block ||
			    DIV_ROUND_UP(zl.bytes, KVT_DISK_PAGE) != pages)
				continue;
		} else {
			if (pages != pool->pages_per_block)
				continue;
			zl.bytes = 0;
			zl.crc = 0;
			dcrc = kvt_rec_dcrc(kvt_rec_seed(id, key, seq),
					    le32_to_cpu(rec->crc),
					    pool->block_size);
		}
		ret = kvt_replay_meta(dr, i, &k, &um);
		if (ret)
			break;
		/* A copy adopted by a block in DRAM: that block has its own. */
		if (kvt_block_restore(pool, key, nvme->index, first + page,
				      dcrc, &zl, &um, &addr) == -EEXIST)
			kvt_replay_adopt(pool, addr, nvme->index, first + page,
					 dcrc, &zl);
		kfree(um);
	}
	if (pool)
		kvt_pool_put(pool);
	return ret;
}

/*
 * Rebuild the index: replay every valid segment summary, regions oldest
 * first, each region's segments in the order they were written; then the
 * tombstones.
 */
static int kvt_nvme_rebuild(struct kvt_nvme *nvme)
{
	struct kvt_replay rp = { };
	struct kvt_region_seq *order;
	struct kvt_disk_region *dr;
	u32 r, n = 0, i;
	int ret = -ENOMEM;

	order = kvmalloc_array(nvme->nr_regions, sizeof(*order), GFP_KERNEL);
	dr = kvmalloc(kvt_summary_bytes(nvme), GFP_KERNEL);
	if (!order || !dr)
		goto out_free;

	for (r = 0; r < nvme->nr_regions; r++) {
		ret = kvt_summary_read(nvme, r, 0, dr);
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
		u32 page = 0;

		r = order[i].region;
		while (!(ret = kvt_segment_read(nvme, r, &page, order[i].seq,
						dr))) {
			ret = kvt_replay_segment(nvme, r, dr, &rp);
			if (ret)
				goto out_free;
		}
		if (ret != -EBADMSG)
			goto out_free;
		if (!page)
			continue;	/* changed under us: not a region now */
		nvme->regions[r].seq = order[i].seq;
		nvme->regions[r].used = nvme->region_pages;
		nvme->regions[r].chain = page;
		nvme->regions[r].state = KVT_REGION_FULL;
		nvme->next_seq = order[i].seq + 1;
		nvme->head = (r + 1) % nvme->nr_regions;
	}
	kvt_replay_drops(nvme, &rp);
	ret = 0;
out_free:
	kvfree(rp.drops);
	kvfree(dr);
	kvfree(order);
	return ret;
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

/* Record @pool in @nvme's pool table. kvt_nvme_lock held. */
static int kvt_nvme_record_on(struct kvt_nvme *nvme, struct kvt_pool *pool)
{
	struct kvt_disk_pool *dp;
	int slot, ret;

	if (pool->table_slot[nvme->index] >= 0)
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
	dp->parts = cpu_to_le32(pool->parts);
	dp->compress = pool->compress;
	dp->compress_flags = pool->compress_flags;
	dp->crc = cpu_to_le32(kvt_pool_entry_crc(dp));
	ret = kvt_nvme_write_pool_slot(nvme, dp, slot);
	if (ret)
		clear_bit(slot, nvme->slots);
	else
		pool->table_slot[nvme->index] = slot;
out_free:
	kfree(dp);
	return ret;
}

/* Clear @pool's slot in @nvme's pool table. kvt_nvme_lock held. */
static void kvt_nvme_erase_on(struct kvt_nvme *nvme, struct kvt_pool *pool)
{
	int slot = pool->table_slot[nvme->index];
	struct kvt_disk_pool *dp;

	if (slot < 0)
		return;
	dp = kzalloc(sizeof(*dp), GFP_KERNEL);
	if (!dp || kvt_nvme_write_pool_slot(nvme, dp, slot))
		pr_warn("pool %s stays in the pool table of device %u: it comes back at its next attach\n",
			pool->name, nvme->index);
	kfree(dp);
	clear_bit(slot, nvme->slots);
	pool->table_slot[nvme->index] = -1;
}

/**
 * kvt_nvme_pool_record() - record a new pool in the attached devices' pool
 * tables
 * @pool: a pool being created, under kvt_nvme_lock_table()
 *
 * Return: 0 (also without a device: the pool is then not persistent),
 * -ENOSPC when a table is full, -EIO.
 */
int kvt_nvme_pool_record(struct kvt_pool *pool)
{
	int i, ret;

	lockdep_assert_held(&kvt_nvme_lock);
	/* A weight pool's blocks are its file's: it comes back from there. */
	if (pool->file)
		return 0;
	for (i = 0; i < KVTIER_NVME_MAX; i++) {
		if (!kvt_nvmes[i])
			continue;
		ret = kvt_nvme_record_on(kvt_nvmes[i], pool);
		if (ret) {
			kvt_nvme_pool_erase(pool);
			return ret;
		}
		pool->persistent = true;
	}
	return 0;
}

/**
 * kvt_nvme_pool_erase() - remove a destroyed pool from the pool tables
 * @pool: the pool, losing its name, under kvt_nvme_lock_table()
 *
 * Its records on the devices become garbage, reclaimed with their regions.
 */
void kvt_nvme_pool_erase(struct kvt_pool *pool)
{
	int i;

	lockdep_assert_held(&kvt_nvme_lock);
	for (i = 0; i < KVTIER_NVME_MAX; i++)
		if (kvt_nvmes[i])
			kvt_nvme_erase_on(kvt_nvmes[i], pool);
	pool->persistent = false;
}

static void kvt_nvme_free(struct kvt_nvme *nvme)
{
	struct kvt_tomb *t, *tn;

	/* Detach waits until they are written: none should be left here. */
	list_for_each_entry_safe(t, tn, &nvme->tombs, node) {
		list_del(&t->node);
		kvt_tomb_end(t, -ENODEV);
	}
	if (nvme->rwq)
		destroy_workqueue(nvme->rwq);
	if (nvme->wq)
		destroy_workqueue(nvme->wq);
	kvt_nvme_writer_exit(nvme);
	kvfree(nvme->queue);
	kvfree(nvme->regions);
	blkdev_put(nvme->bdev, FMODE_READ | FMODE_WRITE | FMODE_EXCL);
	kfree(nvme);
}

/*
 * Forget what the pools have on @nvme: their copies there (a block in DRAM
 * becomes dirty, one only there goes) and their pool table slots.
 */
static void kvt_nvme_forget(struct kvt_nvme *nvme)
{
	struct kvt_pool **pools;
	unsigned int i, nr;
	u32 addr;

	pools = kvt_pools_get_named(&nr);
	for (i = 0; i < nr; i++) {
		struct kvt_pool *pool = pools[i];

		spin_lock(&pool->lock);
		for (addr = 0; addr < pool->capacity; addr++)
			if (pool->blocks[addr].state == KVT_BLK_READY &&
			    pool->blocks[addr].nloc != KVT_NIL &&
			    pool->blocks[addr].ndev == nvme->index)
				kvt_res_forget_nvme(pool, addr,
						    KVTIER_EVR_DETACH);
		pool->table_slot[nvme->index] = -1;
		spin_unlock(&pool->lock);
	}
	kvt_pools_put_named(pools, nr);
}

/* Record on a device being attached the persistent pools it lacks. */
static int kvt_nvme_record_all(struct kvt_nvme *nvme)
{
	struct kvt_pool **pools;
	unsigned int i, nr;
	int ret = 0;

	pools = kvt_pools_get_named(&nr);
	for (i = 0; i < nr && !ret; i++)
		if (pools[i]->persistent)
			ret = kvt_nvme_record_on(nvme, pools[i]);
	kvt_pools_put_named(pools, nr);
	return ret;
}

/**
 * kvt_nvme_attach() - attach a block device to the NVMe tier
 * @path: path of the block device
 * @flags: KVTIER_NVME_FORMAT
 * @region_kib: region size for a format, 0 for the default
 *
 * Return: 0; -EBUSY (attached already, KVTIER_NVME_MAX devices are, or the
 * device is in use); -EMEDIUMTYPE (foreign content); -EINVAL; -ENOSPC (too
 * small); -EIO; -ENOMEM; or what opening @path returns.
 */
int kvt_nvme_attach(const char *path, u32 flags, u32 region_kib)
{
	struct kvt_nvme *nvme;
	ktime_t start = ktime_get();
	int ret, i, index = -1;

	if (flags & ~KVTIER_NVME_FORMAT ||
	    (region_kib && !(flags & KVTIER_NVME_FORMAT)))
		return -EINVAL;

	mutex_lock(&kvt_nvme_lock);
	for (i = KVTIER_NVME_MAX - 1; i >= 0; i--)
		if (!kvt_nvmes[i])
			index = i;
	ret = -EBUSY;
	if (index < 0)
		goto out_unlock;
	ret = -ENOMEM;
	nvme = kzalloc(sizeof(*nvme), GFP_KERNEL);
	if (!nvme)
		goto out_unlock;
	nvme->index = index;
	nvme->pool_get = kvt_pool_get_by_id;
	mutex_init(&nvme->lock);
	nvme->open = KVT_NIL;
	INIT_LIST_HEAD(&nvme->tombs);
	atomic_set(&nvme->writes, 0);
	atomic_set(&nvme->inflight, 0);
	atomic_set(&nvme->reads, 0);
	init_waitqueue_head(&nvme->idle);
	INIT_WORK(&nvme->write_work, kvt_nvme_write_work);

	/* One holder for all: an attached device opens again (-EBUSY below). */
	nvme->bdev = blkdev_get_by_path(path, FMODE_READ | FMODE_WRITE |
					FMODE_EXCL, kvt_nvmes);
	if (IS_ERR(nvme->bdev)) {
		ret = PTR_ERR(nvme->bdev);
		kfree(nvme);
		goto out_unlock;
	}
	for (i = 0; i < KVTIER_NVME_MAX; i++) {
		if (kvt_nvmes[i] && kvt_nvmes[i]->bdev == nvme->bdev) {
			blkdev_put(nvme->bdev, FMODE_READ | FMODE_WRITE |
				   FMODE_EXCL);
			kfree(nvme);
			ret = -EBUSY;
			goto out_unlock;
		}
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
	nvme->wq = alloc_workqueue("kvtier-nvme%d", WQ_UNBOUND | WQ_MEM_RECLAIM,
				   0, index);
	nvme->rwq = alloc_workqueue("kvtier-nvme%d-rd", WQ_UNBOUND |
				    WQ_MEM_RECLAIM | WQ_HIGHPRI, 0, index);
	if (!nvme->regions || !nvme->queue || !nvme->wq || !nvme->rwq ||
	    kvt_nvme_writer_init(nvme))
		goto out_free;

	ret = kvt_nvme_load_pools(nvme);
	if (!ret)
		ret = kvt_nvme_record_all(nvme);
	if (ret)
		goto out_forget_pools;
	ret = kvt_nvme_rebuild(nvme);
	if (ret)
		goto out_forget_pools;
	nvme->generation++;
	ret = kvt_nvme_write_sb(nvme);
	if (ret)
		goto out_forget_pools;

	nvme->attach_ns = ktime_to_ns(ktime_sub(ktime_get(), start));
	spin_lock(&kvt_nvme_qlock);
	kvt_nvmes[index] = nvme;
	spin_unlock(&kvt_nvme_qlock);
	mutex_unlock(&kvt_nvme_lock);
	pr_info("attached %s as device %d: %u regions of %llu KiB, generation %llu, %llu us\n",
		path, index, nvme->nr_regions, nvme->region_bytes >> 10,
		nvme->generation, nvme->attach_ns / NSEC_PER_USEC);
	return 0;

out_forget_pools:
	kvt_nvme_forget(nvme);
out_free:
	kvt_nvme_free(nvme);
out_unlock:
	mutex_unlock(&kvt_nvme_lock);
	return ret;
}

static void kvt_nvme_sync_one(struct kvt_pool *pool)
{
	u64 written;

	if (pool->persistent && kvt_res_sync(pool, &written))
		pr_warn("pool %s: not every block reached NVMe\n", pool->name);
}

/*
 * Nothing queued for @nvme and no I/O of its in flight. Both are read in
 * one kvt_nvme_qlock section, the one in which the writer takes blocks off
 * the queue and counts its segment in flight: read apart, the queue could
 * be seen empty just after a segment left it and the count as it was just
 * before (a detach then freed the workqueue under that segment's bios).
 */
static bool kvt_nvme_idle(struct kvt_nvme *nvme)
{
	bool idle;

	spin_lock(&kvt_nvme_qlock);
	idle = !nvme->qlen && !nvme->nr_tombs &&
	       !atomic_read(&nvme->inflight);
	spin_unlock(&kvt_nvme_qlock);
	return idle;
}

/* Detach one device; kvt_nvme_lock held, and released meanwhile. */
static void kvt_nvme_detach_one(struct kvt_nvme *nvme)
{
	struct kvt_pool **pools;
	unsigned int i, nr;
	bool last = true;

	lockdep_assert_held(&kvt_nvme_lock);
	nvme->detaching = true;
	for (i = 0; i < KVTIER_NVME_MAX; i++)
		if (kvt_nvmes[i] && kvt_nvmes[i] != nvme)
			last = false;
	/*
	 * Dirty blocks stay in DRAM while another device remains; with the
	 * last one, the persistent pools are written back for the next
	 * attach. No new write goes to a device being detached otherwise.
	 */
	spin_lock(&kvt_nvme_qlock);
	nvme->closing = !last;
	spin_unlock(&kvt_nvme_qlock);
	if (last) {
		mutex_unlock(&kvt_nvme_lock);
		pools = kvt_pools_get_named(&nr);
		for (i = 0; i < nr; i++)
			kvt_nvme_sync_one(pools[i]);
		kvt_pools_put_named(pools, nr);
		mutex_lock(&kvt_nvme_lock);
	}

	spin_lock(&kvt_nvme_qlock);
	kvt_nvmes[nvme->index] = NULL;
	spin_unlock(&kvt_nvme_qlock);
	/* Queued blocks are still written; wait for every I/O to end. */
	queue_work(nvme->wq, &nvme->write_work);
	wait_event(nvme->idle, kvt_nvme_idle(nvme));
	flush_workqueue(nvme->rwq);
	flush_workqueue(nvme->wq);
	kvt_nvme_forget(nvme);
	pr_info("detached device %u\n", nvme->index);
	kvt_nvme_free(nvme);
}

/**
 * kvt_nvme_detach() - detach devices from the NVMe tier
 * @path: the device to detach, or NULL for all
 *
 * Writes back the dirty blocks of persistent pools when the last device
 * goes, waits for the device's I/O, then forgets the copies it holds.
 *
 * Return: 0; -ENODEV when none (or not @path) is attached; or what looking
 * @path up returns.
 */
int kvt_nvme_detach(const char *path)
{
	dev_t devt = 0;
	int i, ret;

	if (path) {
		ret = lookup_bdev(path, &devt);
		if (ret)
			return ret;
	}
	mutex_lock(&kvt_nvme_lock);
	ret = -ENODEV;
	for (i = 0; i < KVTIER_NVME_MAX; i++) {
		struct kvt_nvme *nvme = kvt_nvmes[i];

		/* One being detached by another caller is theirs. */
		if (!nvme || nvme->detaching ||
		    (path && nvme->bdev->bd_dev != devt))
			continue;
		kvt_nvme_detach_one(nvme);
		ret = 0;
	}
	mutex_unlock(&kvt_nvme_lock);
	return ret;
}

/* Add one device's figures to @st. kvt_nvme_lock held. */
static void kvt_nvme_stat_add(struct kvt_nvme *nvme,
			      struct kvtier_nvme_stat *st)
{
	u32 r;

	if (!st->attached++) {
		st->region_bytes = nvme->region_bytes;
		memcpy(st->uuid, nvme->uuid, sizeof(st->uuid));
	}
	st->dev_bytes += nvme->dev_bytes;
	st->nr_regions += nvme->nr_regions;
	mutex_lock(&nvme->lock);
	for (r = 0; r < nvme->nr_regions; r++)
		st->free_regions += nvme->regions[r].state == KVT_REGION_FREE;
	mutex_unlock(&nvme->lock);
	st->bytes_written += atomic64_read(&nvme->bytes_written);
	st->bytes_demoted += atomic64_read(&nvme->bytes_demoted);
	st->bytes_read += atomic64_read(&nvme->bytes_read);
	st->reclaimed += atomic64_read(&nvme->reclaimed);
	st->lost_blocks += atomic64_read(&nvme->lost_blocks);
	st->rescued += atomic64_read(&nvme->rescued);
	st->io_errors += atomic64_read(&nvme->io_errors);
	st->bytes_discarded += atomic64_read(&nvme->bytes_discarded);
	st->bytes_stored += atomic64_read(&nvme->bytes_stored);
	st->attach_ns += nvme->attach_ns;
}

/**
 * kvt_nvme_stat() - the NVMe tier's figures
 * @st: in: flags and dev_index (checked here); out: zeroed and filled, for
 *	one device or summed over all
 *
 * Return: 0 or -EINVAL.
 */
int kvt_nvme_stat(struct kvtier_nvme_stat *st)
{
	u32 index = st->dev_index;
	bool one = st->flags & KVTIER_NVME_STAT_DEV;
	int i;

	if (st->flags & ~KVTIER_NVME_STAT_DEV || st->__pad ||
	    memchr_inv(st->reserved, 0, sizeof(st->reserved)) ||
	    (one ? index >= KVTIER_NVME_MAX : index))
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	mutex_lock(&kvt_nvme_lock);
	for (i = 0; i < KVTIER_NVME_MAX; i++) {
		struct kvt_nvme *nvme = kvt_nvmes[i];

		if (!nvme || (one && i != index))
			continue;
		kvt_nvme_stat_add(nvme, st);
		if (one) {
			st->dev_major = MAJOR(nvme->bdev->bd_dev);
			st->dev_minor = MINOR(nvme->bdev->bd_dev);
		}
	}
	mutex_unlock(&kvt_nvme_lock);
	if (one) {
		st->flags = KVTIER_NVME_STAT_DEV;
		st->dev_index = index;
	}
	return 0;
}
