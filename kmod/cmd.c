// SPDX-License-Identifier: GPL-2.0
/*
 * The commands of a pool file: batched PUT, GET, LOOKUP, DROP, PIN, UNPIN,
 * and STAT.
 *
 * A batch is copied in once, checked whole (a bad field fails the batch
 * with nothing done), run entry by entry (each gets its own status), and
 * copied back once. The user buffers of PUT and GET are each touched once.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/string.h>
#include <linux/overflow.h>
#include <linux/uio.h>
#include "kvt.h"
#include "trace.h"

/* The last pin of a block went: it may leave DRAM again. */
static void kvt_block_unpinned(struct kvt_pool *pool, u32 addr)
{
	lockdep_assert_held(&pool->lock);
	pool->nr_pinned--;
	kvt_res_unkeep(pool, addr);
}

/**
 * kvt_handle_unpin_all() - drop every pin an fd holds
 * @h: the handle of a pool file being released
 */
void kvt_handle_unpin_all(struct kvt_handle *h)
{
	struct kvt_pool *pool = h->pool;
	unsigned long addr;
	void *entry;

	xa_for_each(&h->pins, addr, entry) {
		struct kvt_block *blk = &pool->blocks[addr];

		spin_lock(&pool->lock);
		blk->pins -= xa_to_value(entry);
		if (!blk->pins)
			kvt_block_unpinned(pool, addr);
		spin_unlock(&pool->lock);
	}
}

static void kvt_entry_set(struct kvtier_block *e, int status, u64 addr,
			  u32 tier)
{
	e->status = status;
	e->addr = addr;
	e->tier = tier;
	e->slot = KVTIER_SLOT_NONE;
}

/* A PUT may go ahead over an existing key @old only when replacing it. */
static int kvt_put_conflict(struct kvt_pool *pool, u32 old, bool replace)
{
	if (old == KVT_NIL)
		return 0;
	if (!replace)
		return -EEXIST;
	if (pool->blocks[old].pins)
		return -EBUSY;
	return 0;
}

/**
 * kvt_put_publish() - make a filled block the key's, as a PUT does
 * @pool: the pool, its lock not held
 * @key: the block's key
 * @addr: a FILLING block from kvt_res_new(), its bytes and ncrc in
 * @replace: a block stored under @key meanwhile is replaced
 * @reserved: the block was reserved (pool->nr_reserved counted it)
 * @um: the block's record, or NULL for none; taken (set to NULL) on success
 *
 * A concurrent GET sees the old block or this one whole, each with its
 * record.
 *
 * Return: 0; -EEXIST (@key stored meanwhile, not replacing) or -EBUSY (it
 * is pinned), the block left FILLING and the caller's, and so is @um.
 */
int kvt_put_publish(struct kvt_pool *pool, const u64 *key, u32 addr,
		    bool replace, bool reserved, struct kvt_umeta **um)
{
	bool release_old = false;
	u32 old;
	int ret;

	spin_lock(&pool->lock);
	old = kvt_block_find(pool, key);
	ret = kvt_put_conflict(pool, old, replace);
	if (ret) {
		spin_unlock(&pool->lock);
		return ret;
	}
	if (reserved)
		pool->nr_reserved--;
	pool->stats.puts++;
	pool->stats.bytes_in += pool->block_size;
	kvt_block_set_umeta(pool, addr, um);
	/* The old block, if any, is unlinked in the same breath. */
	kvt_res_publish(pool, addr, old);
	if (old != KVT_NIL)
		release_old = !pool->blocks[old].users;
	spin_unlock(&pool->lock);

	if (release_old)
		kvt_res_release(pool, old);
	return 0;
}

/*
 * The user memory of a PUT or GET entry, as an iov_iter: one buffer is a
 * list of one segment, so both go through the same copy.
 */
struct kvt_umem {
	struct iov_iter iter;
	struct iovec *iov;
	struct iovec fast[UIO_FASTIOV];
};

/* Segments read from the user's list at a time. */
#define KVT_SEG_CHUNK	16

static int kvt_umem_segs(const struct kvtier_block *e, u64 len,
			 struct iovec *iov)
{
	struct kvtier_seg __user *useg = u64_to_user_ptr(e->buf);
	struct kvtier_seg seg[KVT_SEG_CHUNK];
	u64 left = len;
	u32 i, n;

	for (i = 0; i < e->nsegs; i++) {
		n = i % KVT_SEG_CHUNK;
		if (!n && copy_from_user(seg, useg + i,
					 array_size(min_t(u32, e->nsegs - i,
							  KVT_SEG_CHUNK),
						    sizeof(*seg))))
			return -EFAULT;
		if (!seg[n].len || seg[n].len > left)
			return -EINVAL;
		left -= seg[n].len;
		iov[i].iov_base = u64_to_user_ptr(seg[n].addr);
		iov[i].iov_len = seg[n].len;
	}
	return left ? -EINVAL : 0;
}

static void kvt_umem_put(struct kvt_umem *m)
{
	if (m->iov != m->fast)
		kvfree(m->iov);
}

/**
 * kvt_umem_get() - the user memory an entry names
 * @e: a PUT or GET entry
 * @dir: ITER_SOURCE (PUT) or ITER_DEST (GET)
 * @len: the bytes it is for: the block size, or a GET's part_len
 * @m: out: its iterator over @len bytes; kvt_umem_put() it after
 *
 * The segments are only checked here; the copy reads or writes them.
 *
 * Return: 0; -E2BIG for too many segments; -EINVAL for a zero-length
 * segment or lengths that do not add up to @len; -EFAULT for a list that
 * cannot be read; -ENOMEM.
 */
static int kvt_umem_get(const struct kvtier_block *e, unsigned int dir,
			u64 len, struct kvt_umem *m)
{
	u32 nr = e->nsegs ?: 1;
	int ret;

	if (e->nsegs > KVTIER_SEGS_MAX)
		return -E2BIG;
	m->iov = m->fast;
	if (nr > ARRAY_SIZE(m->fast)) {
		m->iov = kvmalloc_array(nr, sizeof(*m->iov), GFP_KERNEL);
		if (!m->iov)
			return -ENOMEM;
	}
	if (e->nsegs) {
		ret = kvt_umem_segs(e, len, m->iov);
		if (ret) {
			kvt_umem_put(m);
			return ret;
		}
	} else {
		m->iov[0].iov_base = u64_to_user_ptr(e->buf);
		m->iov[0].iov_len = len;
	}
	iov_iter_init(&m->iter, dir, m->iov, nr, len);
	return 0;
}

static int kvt_put_iter(struct kvt_pool *pool, struct kvtier_block *e,
			bool replace, struct kvt_umeta **um,
			struct iov_iter *from)
{
	struct kvt_block *blk;
	u32 addr;
	int ret;

	/*
	 * A source that cannot be read fails before a block is taken: taking
	 * one may evict another, which a bad pointer must not cost.
	 */
	if (fatal_signal_pending(current))
		return -EINTR;
	if (fault_in_iov_iter_readable(from, pool->block_size))
		return -EFAULT;

	spin_lock(&pool->lock);
	ret = kvt_put_conflict(pool, kvt_block_find(pool, e->key), replace);
	if (ret) {
		spin_unlock(&pool->lock);
		return ret;
	}
	ret = kvt_res_new(pool, e->key, &addr);
	if (ret)
		return ret;
	blk = &pool->blocks[addr];
	if (kvt_dram_copy_in(pool, blk, from)) {
		ret = fatal_signal_pending(current) ? -EINTR : -EFAULT;
		goto out_abort;
	}

	ret = kvt_put_publish(pool, e->key, addr, replace, false, um);
	if (ret)
		goto out_abort;
	kvt_entry_set(e, 0, addr, KVTIER_TIER_DRAM);
	return 0;

out_abort:
	kvt_res_new_abort(pool, addr);
	return ret;
}

/**
 * kvt_umeta_in() - the record an entry gives, in kernel memory
 * @m: the entry's struct kvtier_meta, or NULL (the batch gives none)
 * @um: out: the record, NULL for none
 *
 * Return: 0; -EMSGSIZE for a record longer than KVTIER_META_MAX; -ENOMEM.
 */
static int kvt_umeta_in(const struct kvtier_meta *m, struct kvt_umeta **um)
{
	*um = NULL;
	if (!m || !m->len)
		return 0;
	if (m->len > KVTIER_META_MAX)
		return -EMSGSIZE;
	*um = kvt_umeta_new(m->data, m->len, GFP_KERNEL_ACCOUNT |
			    __GFP_RETRY_MAYFAIL | __GFP_NOWARN);
	return *um ? 0 : -ENOMEM;
}

static int kvt_put_one(struct kvt_pool *pool, struct kvtier_block *e,
		       bool replace, const struct kvtier_meta *meta)
{
	struct kvt_umeta *um;
	struct kvt_umem m;
	int ret;

	ret = kvt_umem_get(e, ITER_SOURCE, pool->block_size, &m);
	if (ret)
		return ret;
	ret = kvt_umeta_in(meta, &um);
	if (!ret)
		ret = kvt_put_iter(pool, e, replace, &um, &m.iter);
	kfree(um);
	kvt_umem_put(&m);
	return ret;
}

static int kvt_get_iter(struct kvt_pool *pool, struct kvtier_block *e,
			struct kvtier_meta *meta, u32 off, u32 len,
			struct iov_iter *to)
{
	struct kvt_block *blk;
	bool release;
	size_t left;
	u32 addr;
	int ret;

	ret = kvt_res_dram(pool, e->key, &addr);
	if (ret) {
		if (ret == -ENOENT)
			pool->stats.misses++;
		spin_unlock(&pool->lock);
		return ret;
	}
	blk = &pool->blocks[addr];
	if (blk->users == U16_MAX) {
		spin_unlock(&pool->lock);
		return -EBUSY;
	}
	blk->users++;
	pool->stats.hits++;
	kvt_prefetch_used(pool, addr);
	kvt_res_touch(pool, addr, false);
	if (meta)
		kvt_block_umeta_out(pool, addr, meta);
	spin_unlock(&pool->lock);

	left = kvt_dram_copy_out(pool, blk, off, len, to);

	spin_lock(&pool->lock);
	blk->users--;
	release = !blk->users && blk->state == KVT_BLK_DYING;
	if (!left) {
		pool->stats.gets++;
		pool->stats.bytes_out += len;
	}
	spin_unlock(&pool->lock);

	if (release)
		kvt_res_release(pool, addr);
	if (left)
		return fatal_signal_pending(current) ? -EINTR : -EFAULT;
	kvt_entry_set(e, 0, addr, KVTIER_TIER_DRAM);
	return 0;
}

static int kvt_get_one(struct kvt_pool *pool, struct kvtier_block *e,
		       struct kvtier_meta *meta)
{
	struct kvt_umem m;
	int ret;

	ret = kvt_umem_get(e, ITER_DEST, pool->block_size, &m);
	if (ret)
		return ret;
	ret = kvt_get_iter(pool, e, meta, 0, pool->block_size, &m.iter);
	kvt_umem_put(&m);
	if (ret && meta)
		memset(meta, 0, sizeof(*meta));
	return ret;
}

/* Bytes of parts read ahead of the copies, for queue depth. */
#define KVT_PART_AHEAD		(32U << 20)

/*
 * The most a part read of @len bytes holds: the parts that cover them, up
 * to a part more on either side, within the block; and the table's page.
 */
static u64 kvt_part_rd_bytes(struct kvt_pool *pool, u32 len)
{
	u64 part = (u64)DIV_ROUND_UP(pool->pages_per_block, pool->parts) <<
		   PAGE_SHIFT;

	return min_t(u64, round_up(len, PAGE_SIZE) + 2 * part,
		     pool->block_size) + PAGE_SIZE;
}

/*
 * struct kvt_ahead_ops - a GET whose blocks only on NVMe are read ahead of
 * its entries by reads that leave them there: part reads
 * (KVTIER_GET_PART) or reads into the caller's memory (KVTIER_GET_DIRECT)
 * @begin: start entry @e's read; NULL: the entry is read the usual way
 * @end: end a read @begin started, with the range in @to's memory: 0;
 *	 -EFAULT or -EINTR, the entry's status; else -errno, and the entry
 *	 is read the usual way
 * @put: free a read @begin started, and its block's user reference
 * @part_reads: count the entries served so in part_reads
 */
struct kvt_ahead_ops {
	void *(*begin)(struct kvt_pool *pool, struct kvtier_block *e, u32 off,
		       u32 len, u32 *addrp);
	int (*end)(struct kvt_pool *pool, void *rd, u32 addr,
		   struct iov_iter *to);
	void (*put)(struct kvt_pool *pool, void *rd, u32 addr);
	bool part_reads;
};

/*
 * Serve entry @e, the range [@off, @off + @len) of its block: from @rd, the
 * read @ops->begin started (NULL if none), else the usual way.
 */
static int kvt_get_ahead_one(struct kvt_pool *pool, struct kvtier_block *e,
			     struct kvtier_meta *meta, u32 off, u32 len,
			     const struct kvt_ahead_ops *ops, void *rd,
			     u32 addr)
{
	struct kvt_umem m;
	int ret;

	ret = kvt_umem_get(e, ITER_DEST, len, &m);
	if (ret)
		goto out;
	ret = rd ? ops->end(pool, rd, addr, &m.iter) : -EAGAIN;
	if (!ret) {
		/* Held as a user: the block's record is fixed. */
		spin_lock(&pool->lock);
		pool->stats.part_reads += ops->part_reads;
		pool->stats.hits++;
		pool->stats.gets++;
		pool->stats.bytes_out += len;
		if (meta)
			kvt_block_umeta_out(pool, addr, meta);
		spin_unlock(&pool->lock);
		kvt_entry_set(e, 0, addr, KVTIER_TIER_NVME);
	} else if (ret != -EFAULT && ret != -EINTR) {
		/* Not read so, or what was read did not verify. */
		ret = kvt_get_iter(pool, e, meta, off, len, &m.iter);
	}
	kvt_umem_put(&m);
out:
	if (ret && meta)
		memset(meta, 0, sizeof(*meta));
	return ret;
}

/*
 * Run such a GET: reads start up to @ahead entries ahead of the entry
 * being served; each entry ends in order.
 *
 * Return: the entries served.
 */
static u32 kvt_get_ahead(struct kvt_pool *pool, struct kvtier_block *ents,
			 u32 nr, struct kvtier_meta *meta, u32 off, u32 len,
			 u32 ahead, const struct kvt_ahead_ops *ops)
{
	u32 *addrs, i, next = 0, done = 0;
	bool killed;
	void **rds;
	int status;

	/* Without memory to track reads ahead, every block is read as usual. */
	rds = kvcalloc(nr, sizeof(*rds), GFP_KERNEL);
	addrs = kvcalloc(nr, sizeof(*addrs), GFP_KERNEL);
	if (!rds || !addrs)
		next = nr;
	for (i = 0; i < nr; i++) {
		struct kvtier_block *e = &ents[i];

		/* Killed: no more reads, nor loads for the entries left. */
		killed = fatal_signal_pending(current);
		for (; !killed && next < nr && next < i + ahead; next++)
			rds[next] = ops->begin(pool, &ents[next], off, len,
					       &addrs[next]);
		status = killed ? -EINTR :
			 kvt_get_ahead_one(pool, e, meta ? &meta[i] : NULL,
					   off, len, ops, rds ? rds[i] : NULL,
					   addrs ? addrs[i] : KVT_NIL);
		if (killed && meta)
			memset(&meta[i], 0, sizeof(*meta));
		if (rds && rds[i])
			ops->put(pool, rds[i], addrs[i]);
		if (status)
			kvt_entry_set(e, status, KVTIER_ADDR_NONE,
				      KVTIER_TIER_NONE);
		else
			done++;
		e->status = status;
	}
	kvfree(addrs);
	kvfree(rds);
	return done;
}

static void *kvt_get_part_begin(struct kvt_pool *pool, struct kvtier_block *e,
				u32 off, u32 len, u32 *addrp)
{
	return kvt_res_part_begin(pool, e->key, off, len, addrp);
}

static int kvt_get_part_end(struct kvt_pool *pool, void *rd, u32 addr,
			    struct iov_iter *to)
{
	return kvt_res_part_end(pool, rd, to);
}

static void kvt_get_part_put(struct kvt_pool *pool, void *rd, u32 addr)
{
	kvt_res_part_put(pool, rd, addr);
}

static const struct kvt_ahead_ops kvt_part_ahead_ops = {
	.begin		= kvt_get_part_begin,
	.end		= kvt_get_part_end,
	.put		= kvt_get_part_put,
	.part_reads	= true,
};

/*
 * GET with KVTIER_GET_PART: the range [@off, @off + @len) of each block.
 * The blocks only on NVMe are read ahead, in their parts, in a window of
 * KVT_PART_AHEAD bytes; each entry is copied out in order.
 *
 * Return: the entries served.
 */
static u32 kvt_get_parts(struct kvt_pool *pool, struct kvtier_block *ents,
			 u32 nr, u32 off, u32 len, struct kvtier_meta *meta)
{
	u32 ahead = 1;

	/* A pool without parts reads none: its blocks are read whole. */
	if (pool->parts)
		ahead = max_t(u64, 1, KVT_PART_AHEAD /
				      kvt_part_rd_bytes(pool, len));
	return kvt_get_ahead(pool, ents, nr, meta, off, len, ahead,
			     &kvt_part_ahead_ops);
}

/* Start reading an entry's block straight into its buffer, if it can be. */
static void *kvt_get_direct_begin(struct kvt_pool *pool,
				  struct kvtier_block *e, u32 off, u32 len,
				  u32 *addrp)
{
	struct kvt_direct_rd *rd;
	struct kvt_umem m;

	if (kvt_umem_get(e, ITER_DEST, len, &m))
		return NULL;
	rd = kvt_res_direct_begin(pool, e->key, m.iov, m.iter.nr_segs, addrp);
	kvt_umem_put(&m);
	return rd;
}

/* The bytes are in the memory the read pinned: @to is not used. */
static int kvt_get_direct_end(struct kvt_pool *pool, void *rd, u32 addr,
			      struct iov_iter *to)
{
	return kvt_res_direct_end(pool, rd, addr);
}

static void kvt_get_direct_put(struct kvt_pool *pool, void *rd, u32 addr)
{
	kvt_res_direct_put(pool, rd, addr);
}

static const struct kvt_ahead_ops kvt_direct_ahead_ops = {
	.begin	= kvt_get_direct_begin,
	.end	= kvt_get_direct_end,
	.put	= kvt_get_direct_put,
};

/*
 * GET with KVTIER_GET_DIRECT: blocks only on NVMe are read straight into
 * the entries' buffers, ahead of the entries served from DRAM, in a window
 * of KVT_PART_AHEAD bytes; each entry ends in order.
 *
 * Return: the entries served.
 */
static u32 kvt_get_direct(struct kvt_pool *pool, struct kvtier_block *ents,
			  u32 nr, struct kvtier_meta *meta)
{
	return kvt_get_ahead(pool, ents, nr, meta, 0, pool->block_size,
			     max_t(u64, 1, KVT_PART_AHEAD / pool->block_size),
			     &kvt_direct_ahead_ops);
}

static int kvt_drop_one(struct kvt_pool *pool, struct kvtier_block *e)
{
	bool release;
	u32 addr;

	spin_lock(&pool->lock);
	addr = kvt_block_find(pool, e->key);
	if (addr == KVT_NIL) {
		spin_unlock(&pool->lock);
		return -ENOENT;
	}
	if (pool->blocks[addr].pins) {
		spin_unlock(&pool->lock);
		return -EBUSY;
	}
	kvt_res_drop(pool, addr);
	pool->stats.drops++;
	release = !pool->blocks[addr].users;
	spin_unlock(&pool->lock);

	if (release)
		kvt_res_release(pool, addr);
	kvt_entry_set(e, 0, KVTIER_ADDR_NONE, KVTIER_TIER_NONE);
	return 0;
}

/*
 * Pins are counted twice: per block (blk->pins, under pool->lock) and per
 * fd (h->pins, addr -> count, for UNPIN and close). PIN, UNPIN and LOOKUP
 * with PIN run with h->pin_lock held, so the two agree.
 */

/* Pin a block READY in DRAM and not busy: 0, or -EOVERFLOW. */
static int kvt_pin_locked(struct kvt_pool *pool, u32 addr)
{
	struct kvt_block *blk = &pool->blocks[addr];

	lockdep_assert_held(&pool->lock);
	if (blk->pins == U16_MAX)
		return -EOVERFLOW;
	kvt_prefetch_used(pool, addr);
	if (!blk->pins++) {
		pool->nr_pinned++;
		kvt_res_keep(pool, addr);
	}
	return 0;
}

/* Undo kvt_pin_locked(). */
static void kvt_unpin_locked(struct kvt_pool *pool, u32 addr)
{
	lockdep_assert_held(&pool->lock);
	if (!--pool->blocks[addr].pins)
		kvt_block_unpinned(pool, addr);
}

/*
 * Count one more pin, of the block at @xas's index, for the fd: the pins
 * xarray locked, and unlocked meanwhile to allocate a node. 0 or -ENOMEM.
 */
static int kvt_pin_count(struct xa_state *xas)
{
	unsigned long held;
	int ret;

	for (;;) {
		held = xa_to_value(xas_load(xas) ?: xa_mk_value(0));
		xas_store(xas, xa_mk_value(held + 1));
		ret = xas_error(xas);
		if (ret != -ENOMEM)
			return ret;
		xas_unlock(xas);
		ret = xas_nomem(xas, GFP_KERNEL_ACCOUNT) ? 0 : -ENOMEM;
		xas_lock(xas);
		if (ret)
			return ret;
	}
}

/* Count a pin of @addr for the fd; 0 or -ENOMEM. */
static int kvt_pin_record(struct kvt_handle *h, u32 addr)
{
	XA_STATE(xas, &h->pins, addr);
	int ret;

	xas_lock(&xas);
	ret = kvt_pin_count(&xas);
	xas_unlock(&xas);
	if (!ret)
		xas_nomem(&xas, 0);	/* frees a node allocated and not used */
	return ret;
}

static int kvt_pin_one(struct kvt_handle *h, struct kvtier_block *e)
{
	struct kvt_pool *pool = h->pool;
	u32 addr;
	int ret;

	/* Pinned blocks stay in DRAM, for mappings to read. */
	ret = kvt_res_dram(pool, e->key, &addr);
	if (!ret)
		ret = kvt_pin_locked(pool, addr);
	spin_unlock(&pool->lock);
	if (ret)
		return ret;

	/* A pinned block cannot go away: addr stays this key's block. */
	ret = kvt_pin_record(h, addr);
	if (ret) {
		spin_lock(&pool->lock);
		kvt_unpin_locked(pool, addr);
		spin_unlock(&pool->lock);
		return ret;
	}
	kvt_entry_set(e, 0, addr, KVTIER_TIER_DRAM);
	return 0;
}

static int kvt_unpin_one(struct kvt_handle *h, struct kvtier_block *e)
{
	struct kvt_pool *pool = h->pool;
	XA_STATE(xas, &h->pins, 0);
	unsigned long held;
	void *entry;
	u32 addr;
	int ret = 0;

	spin_lock(&pool->lock);
	addr = kvt_block_find(pool, e->key);
	if (addr == KVT_NIL) {
		spin_unlock(&pool->lock);
		return -ENOENT;
	}
	xas_set(&xas, addr);
	xas_lock(&xas);
	entry = xas_load(&xas);
	if (entry) {
		/* Fewer or none: a store that needs no memory. */
		held = xa_to_value(entry);
		xas_store(&xas, held > 1 ? xa_mk_value(held - 1) : NULL);
		kvt_unpin_locked(pool, addr);
	} else {
		ret = -EINVAL;
	}
	xas_unlock(&xas);
	spin_unlock(&pool->lock);
	if (!ret)
		kvt_entry_set(e, 0, addr, KVTIER_TIER_DRAM);
	return ret;
}

/*
 * An entry of LOOKUP with PIN whose block the look itself pinned (it was
 * READY in DRAM); a status no entry leaves with.
 */
#define KVT_PINNED	1

/*
 * Count for the fd the pins the look took, of entries @i on up to @n or
 * the first one it did not pin, under one lock. Returns the index it
 * stopped at; *@err is -ENOMEM when it stopped for want of memory.
 */
static u32 kvt_pin_record_run(struct kvt_handle *h, struct kvtier_block *ents,
			      u32 i, u32 n, int *err)
{
	XA_STATE(xas, &h->pins, 0);

	*err = 0;
	xas_lock(&xas);
	for (; i < n && ents[i].status == KVT_PINNED; i++) {
		xas_set(&xas, ents[i].addr);
		*err = kvt_pin_count(&xas);
		if (*err)
			break;
		ents[i].status = 0;
	}
	xas_unlock(&xas);
	if (!*err)
		xas_nomem(&xas, 0);	/* frees a node allocated and not used */
	return i;
}

/*
 * The reads of a LOOKUP's prefix blocks that are only on NVMe go out ahead
 * of the waits for them, in a window that half the pool's DRAM can hold,
 * as GET's do: more would evict the head of the prefix to read its tail.
 * The first window's go out at once, then entry i + window's as entry i is
 * waited for: this starts entry @i's read, if it is in the prefix.
 */
static void kvt_lookup_ahead(struct kvt_pool *pool,
			     const struct kvtier_block *ents, u32 i, u32 prefix)
{
	if (i < prefix && ents[i].tier == KVTIER_TIER_NVME)
		kvt_res_load_ahead(pool, ents[i].key);
}

/*
 * LOOKUP with PIN, after the look: first to last, count for the fd the
 * pins the look took, and pin the other blocks of the prefix, bringing
 * each into DRAM (their reads go out a window ahead). The prefix ends at
 * the first block that cannot be pinned or counted; the blocks at and
 * after it that the look pinned are unpinned. Each pinned entry then
 * reports the tier its block is in.
 */
static void kvt_lookup_pin(struct kvt_handle *h, struct kvtier_block *ents,
			   u32 window, u32 *prefix)
{
	struct kvt_pool *pool = h->pool;
	bool loaded = false;
	u32 i, j, k, slot;
	int ret = 0;

	for (i = 0; i < *prefix && !ret; ) {
		if (ents[i].status == KVT_PINNED) {
			k = kvt_pin_record_run(h, ents, i, *prefix, &ret);
			for (; i < k; i++)
				kvt_lookup_ahead(pool, ents, i + window,
						 *prefix);
			continue;
		}
		kvt_lookup_ahead(pool, ents, i + window, *prefix);
		ret = kvt_pin_one(h, &ents[i]);
		loaded = true;
		if (!ret)
			ents[i++].status = 0;
	}
	if (i < *prefix) {
		/* Blocks the look pinned at and after the end: unpin them. */
		spin_lock(&pool->lock);
		for (j = i; j < *prefix; j++)
			if (ents[j].status == KVT_PINNED) {
				kvt_unpin_locked(pool, ents[j].addr);
				ents[j].status = 0;
			}
		spin_unlock(&pool->lock);
		kvt_entry_set(&ents[i], ret, KVTIER_ADDR_NONE,
			      KVTIER_TIER_NONE);
		*prefix = i;
	}
	if (!loaded)
		return;	/* each was in DRAM already, its tier as looked up */
	/* Report the tier each pinned block is in now (HBM comes first). */
	spin_lock(&pool->lock);
	for (i = 0; i < *prefix; i++) {
		ents[i].tier = kvt_res_tier(pool, ents[i].addr, &slot);
		ents[i].slot = slot;
	}
	spin_unlock(&pool->lock);
}

/* Keys of a LOOKUP found at once (kvt_index_find_many()). */
#define KVT_LOOKUP_AHEAD	64

static void kvt_lookup(struct kvt_handle *h, struct kvtier_block *ents,
		       u32 count, u32 flags, u32 *prefix)
{
	bool pin = flags & KVTIER_LOOKUP_PIN;
	struct kvt_pool *pool = h->pool;
	u32 i, addr, slot, window, n = 0;
	u32 addrs[KVT_LOOKUP_AHEAD];
	bool in_prefix = true;

	*prefix = 0;
	spin_lock(&pool->lock);
	for (i = 0; i < count; i++) {
		struct kvtier_block *e = &ents[i];

		/* The keys ahead are found together, their records fetched. */
		if (i % KVT_LOOKUP_AHEAD == 0) {
			n = min(count - i, KVT_LOOKUP_AHEAD);
			kvt_index_find_many(pool, e->key, sizeof(*e), n, addrs);
			kvt_block_prefetch(pool, addrs, n);
		}
		addr = addrs[i % KVT_LOOKUP_AHEAD];
		/* One that a GET could not read now is a miss here too. */
		if (addr == KVT_NIL || kvt_res_out_of_reach(pool, addr)) {
			kvt_entry_set(e, -ENOENT, KVTIER_ADDR_NONE,
				      KVTIER_TIER_NONE);
			pool->stats.misses++;
			in_prefix = false;
			continue;
		}
		kvt_entry_set(e, 0, addr, kvt_res_tier(pool, addr, &slot));
		e->slot = slot;
		pool->stats.hits++;
		if (flags & KVTIER_LOOKUP_TOUCH) {
			kvt_prefetch_used(pool, addr);
			kvt_res_touch(pool, addr, true);
		}
		if (!in_prefix)
			continue;
		(*prefix)++;
		/* Pinned by the look that found it, where it can be. */
		if (pin && kvt_dram_ready(&pool->blocks[addr]) &&
		    !kvt_pin_locked(pool, addr))
			e->status = KVT_PINNED;
	}
	spin_unlock(&pool->lock);
	if (!(flags & (KVTIER_LOOKUP_LOAD | KVTIER_LOOKUP_PIN)))
		return;

	/* Bring the prefix into DRAM: reads go out ahead, then each waited. */
	window = min(*prefix, max(1U, pool->dram_blocks / 2));
	for (i = 0; i < window; i++)
		kvt_lookup_ahead(pool, ents, i, *prefix);
	if (pin) {
		kvt_lookup_pin(h, ents, window, prefix);
		return;
	}
	for (i = 0; i < *prefix; i++) {
		struct kvtier_block *e = &ents[i];
		int ret;

		kvt_lookup_ahead(pool, ents, i + window, *prefix);
		if (e->tier == KVTIER_TIER_DRAM)
			continue;
		/* In HBM and written down already: in DRAM too. */
		if (e->tier == KVTIER_TIER_HBM) {
			ret = kvt_res_dram(pool, e->key, &addr);
			spin_unlock(&pool->lock);
			if (!ret)
				continue;
			kvt_entry_set(e, ret, KVTIER_ADDR_NONE,
				      KVTIER_TIER_NONE);
			*prefix = i;
			break;
		}
		ret = kvt_res_dram(pool, e->key, &addr);
		spin_unlock(&pool->lock);
		if (ret) {
			kvt_entry_set(e, ret, KVTIER_ADDR_NONE,
				      KVTIER_TIER_NONE);
			*prefix = i;
			break;
		}
		kvt_entry_set(e, 0, addr, KVTIER_TIER_DRAM);
	}
}

static u32 kvt_batch_flags(unsigned int nr)
{
	switch (nr) {
	case _IOC_NR(KVTIER_IOC_PUT):
	case _IOC_NR(KVTIER_IOC_RESERVE):
	case _IOC_NR(KVTIER_IOC_COMMIT):
		return KVTIER_PUT_REPLACE;
	case _IOC_NR(KVTIER_IOC_GET):
		return KVTIER_GET_PART | KVTIER_GET_DIRECT;
	case _IOC_NR(KVTIER_IOC_LOOKUP):
		return KVTIER_LOOKUP_TOUCH | KVTIER_LOOKUP_LOAD |
		       KVTIER_LOOKUP_PIN;
	}
	return 0;
}

/* The entries of ADOPT are struct kvtier_adopt, of the others kvtier_block. */
static size_t kvt_batch_esize(unsigned int nr)
{
	if (nr == _IOC_NR(KVTIER_IOC_ADOPT))
		return sizeof(struct kvtier_adopt);
	return sizeof(struct kvtier_block);
}

/* An entry's fields, before anything is done: 0 or the batch's -errno. */
static int kvt_entry_check(unsigned int nr, const void *ent, u64 features)
{
	bool has_buf = nr == _IOC_NR(KVTIER_IOC_PUT) ||
		       nr == _IOC_NR(KVTIER_IOC_GET);
	const struct kvtier_adopt *a = ent;
	const struct kvtier_block *e = ent;

	if (nr == _IOC_NR(KVTIER_IOC_ADOPT))
		return a->reserved ? -EINVAL : 0;
	if (has_buf != !!e->buf || (e->nsegs && !has_buf))
		return -EINVAL;
	if (e->nsegs && !(features & KVTIER_F_SG))
		return -EOPNOTSUPP;
	return 0;
}

/* Which way a batch's records (struct kvtier_batch.meta) go. */
enum kvt_meta_dir {
	KVT_META_NONE,		/* the command takes none */
	KVT_META_IN,		/* stored with the blocks */
	KVT_META_OUT,		/* the blocks' returned */
};

static enum kvt_meta_dir kvt_batch_meta_dir(unsigned int nr)
{
	switch (nr) {
	case _IOC_NR(KVTIER_IOC_PUT):
	case _IOC_NR(KVTIER_IOC_COMMIT):
	case _IOC_NR(KVTIER_IOC_ADOPT):
		return KVT_META_IN;
	case _IOC_NR(KVTIER_IOC_GET):
	case _IOC_NR(KVTIER_IOC_LOOKUP):
		return KVT_META_OUT;
	}
	return KVT_META_NONE;
}

/**
 * kvt_batch_meta() - a batch's records, in kernel memory
 * @b: the batch, its @meta nonzero and checked for the command
 * @nr: the command
 *
 * Records going in are read and checked; the array for records going out
 * is checked to be writable (written with zeros, which entries that fail
 * return) before anything is done.
 *
 * Return: @b->count records (kvfree() them), or ERR_PTR(-EFAULT, -EINVAL
 * for a record with flags, -ENOMEM).
 */
static struct kvtier_meta *kvt_batch_meta(const struct kvtier_batch *b,
					  unsigned int nr)
{
	size_t len = array_size(b->count, sizeof(struct kvtier_meta));
	struct kvtier_meta *m;
	u32 i;

	if (kvt_batch_meta_dir(nr) == KVT_META_OUT) {
		m = kvzalloc(len, GFP_KERNEL);
		if (!m)
			return ERR_PTR(-ENOMEM);
		if (copy_to_user(u64_to_user_ptr(b->meta), m, len)) {
			kvfree(m);
			return ERR_PTR(-EFAULT);
		}
		return m;
	}
	m = vmemdup_user(u64_to_user_ptr(b->meta), len);
	if (IS_ERR(m))
		return m;
	for (i = 0; i < b->count; i++) {
		if (m[i].flags) {
			kvfree(m);
			return ERR_PTR(-EINVAL);
		}
	}
	return m;
}

static void *kvt_batch_copy_in(const struct kvtier_batch *b, unsigned int nr,
			       u64 features)
{
	size_t esize = kvt_batch_esize(nr);
	void *ents;
	int ret;
	u32 i;

	if (!b->count || b->count > KVTIER_BATCH_MAX ||
	    b->flags & ~kvt_batch_flags(nr) || b->__pad)
		return ERR_PTR(-EINVAL);
	if (b->meta && !kvt_batch_meta_dir(nr))
		return ERR_PTR(-EINVAL);
	if (b->meta && !(features & KVTIER_F_META))
		return ERR_PTR(-EOPNOTSUPP);

	ents = vmemdup_user(u64_to_user_ptr(b->blocks),
			    array_size(b->count, esize));
	if (IS_ERR(ents))
		return ents;
	for (i = 0; i < b->count; i++) {
		ret = kvt_entry_check(nr, ents + i * esize, features);
		if (ret) {
			kvfree(ents);
			return ERR_PTR(ret);
		}
	}
	/*
	 * The results go back into the same array: make sure it is writable
	 * (writing back what is there) before anything is done.
	 */
	if (copy_to_user(u64_to_user_ptr(b->blocks), ents,
			 array_size(b->count, esize))) {
		kvfree(ents);
		return ERR_PTR(-EFAULT);
	}
	return ents;
}

/* ADOPT: blocks made in device memory (each in HBM at once). */
static u32 kvt_adopt(struct kvt_pool *pool, struct kvtier_adopt *ents,
		     u32 count, const struct kvtier_meta *meta)
{
	struct kvt_umeta *um;
	u32 i, done = 0;

	for (i = 0; i < count; i++) {
		ents[i].addr = KVTIER_ADDR_NONE;
		ents[i].status = kvt_umeta_in(meta ? &meta[i] : NULL, &um);
		if (!ents[i].status)
			ents[i].status = kvt_res_adopt(pool, &ents[i], &um);
		kfree(um);
		done += !ents[i].status;
	}
	return done;
}

/*
 * LOOKUP's records, once the look (and load, and pins) are done: those of
 * the blocks each entry of status 0 names, if still there.
 */
static void kvt_lookup_meta(struct kvt_pool *pool,
			    const struct kvtier_block *ents, u32 count,
			    struct kvtier_meta *meta)
{
	const struct kvt_block *blk;
	u32 i;

	spin_lock(&pool->lock);
	for (i = 0; i < count; i++) {
		if (ents[i].status || ents[i].addr >= pool->capacity)
			continue;
		blk = &pool->blocks[ents[i].addr];
		if ((blk->state == KVT_BLK_READY ||
		     blk->state == KVT_BLK_DYING) &&
		    blk->key[0] == ents[i].key[0] &&
		    blk->key[1] == ents[i].key[1])
			kvt_block_umeta_out(pool, ents[i].addr, &meta[i]);
	}
	spin_unlock(&pool->lock);
}

static int kvt_batch(struct kvt_handle *h, unsigned int nr,
		     struct kvtier_batch *b)
{
	struct kvt_pool *pool = h->pool;
	bool resv = nr == _IOC_NR(KVTIER_IOC_RESERVE) ||
		    nr == _IOC_NR(KVTIER_IOC_COMMIT) ||
		    nr == _IOC_NR(KVTIER_IOC_ABORT);
	bool replace = b->flags & KVTIER_PUT_REPLACE &&
		       (nr == _IOC_NR(KVTIER_IOC_PUT) || resv);
	/* The fd's pins and reservations change under its pin_lock. */
	bool part = nr == _IOC_NR(KVTIER_IOC_GET) && b->flags & KVTIER_GET_PART;
	bool direct = nr == _IOC_NR(KVTIER_IOC_GET) &&
		      b->flags & KVTIER_GET_DIRECT;
	bool pins = nr == _IOC_NR(KVTIER_IOC_PIN) ||
		    nr == _IOC_NR(KVTIER_IOC_UNPIN) || resv ||
		    (nr == _IOC_NR(KVTIER_IOC_LOOKUP) &&
		     b->flags & KVTIER_LOOKUP_PIN);
	struct kvtier_meta *meta = NULL;
	struct kvtier_block *ents;
	struct kvt_umeta *um;
	u32 i, window, done = 0;
	int status;

	/* A weight pool is the file's: nothing is stored or dropped. */
	if (pool->file && (nr == _IOC_NR(KVTIER_IOC_PUT) ||
			   nr == _IOC_NR(KVTIER_IOC_DROP) ||
			   nr == _IOC_NR(KVTIER_IOC_ADOPT) || resv))
		return -EROFS;
	if (h->rdonly && (nr == _IOC_NR(KVTIER_IOC_PUT) ||
			  nr == _IOC_NR(KVTIER_IOC_DROP) ||
			  nr == _IOC_NR(KVTIER_IOC_ADOPT) || resv))
		return -EBADF;
	if (replace && !(h->features & KVTIER_F_REPLACE))
		return -EOPNOTSUPP;
	if (nr == _IOC_NR(KVTIER_IOC_LOOKUP) && b->flags & KVTIER_LOOKUP_PIN &&
	    !(h->features & KVTIER_F_LOOKUP_PIN))
		return -EOPNOTSUPP;
	if (part && !(h->features & KVTIER_F_PARTS))
		return -EOPNOTSUPP;
	if (direct && !(h->features & KVTIER_F_DIRECT))
		return -EOPNOTSUPP;
	if (direct && part)
		return -EINVAL;
	if (part && (!b->part_len ||
		     (u64)b->part_off + b->part_len > pool->block_size))
		return -EINVAL;
	if (!part && (b->part_off || b->part_len))
		return -EINVAL;

	ents = kvt_batch_copy_in(b, nr, h->features);
	if (IS_ERR(ents))
		return PTR_ERR(ents);
	if (b->meta) {
		meta = kvt_batch_meta(b, nr);
		if (IS_ERR(meta)) {
			kvfree(ents);
			return PTR_ERR(meta);
		}
	}

	if (nr == _IOC_NR(KVTIER_IOC_ADOPT)) {
		done = kvt_adopt(pool, (struct kvtier_adopt *)ents, b->count,
				 meta);
		goto out_copy;
	}
	/*
	 * The fd's pins change under its pin_lock, which may be held across
	 * NVMe reads: waiting for it can be killed.
	 */
	if (pins && mutex_lock_killable(&h->pin_lock)) {
		kvfree(meta);
		kvfree(ents);
		return -EINTR;
	}
	if (part) {
		done = kvt_get_parts(pool, ents, b->count, b->part_off,
				     b->part_len, meta);
		goto out_unlock;
	}
	if (direct) {
		done = kvt_get_direct(pool, ents, b->count, meta);
		goto out_unlock;
	}
	if (nr == _IOC_NR(KVTIER_IOC_LOOKUP)) {
		kvt_lookup(h, ents, b->count, b->flags, &done);
		if (meta)
			kvt_lookup_meta(pool, ents, b->count, meta);
		goto out_unlock;
	}

	/*
	 * Reads of blocks only on NVMe go out ahead of the copies, in a
	 * window that half the pool's DRAM can hold, for queue depth.
	 */
	window = 0;
	if (nr == _IOC_NR(KVTIER_IOC_GET) &&
	    kvt_res_live(pool, KVTIER_TIER_NVME))
		window = min(b->count, max(1U, pool->dram_blocks / 2));
	for (i = 0; i < window; i++)
		kvt_res_load_ahead(pool, ents[i].key);

	for (i = 0; i < b->count; i++) {
		struct kvtier_block *e = &ents[i];

		if (window && i + window < b->count)
			kvt_res_load_ahead(pool, ents[i + window].key);
		switch (nr) {
		case _IOC_NR(KVTIER_IOC_PUT):
			status = kvt_put_one(pool, e, replace,
					     meta ? &meta[i] : NULL);
			break;
		case _IOC_NR(KVTIER_IOC_GET):
			status = kvt_get_one(pool, e, meta ? &meta[i] : NULL);
			break;
		case _IOC_NR(KVTIER_IOC_DROP):
			status = kvt_drop_one(pool, e);
			break;
		case _IOC_NR(KVTIER_IOC_PIN):
			status = kvt_pin_one(h, e);
			break;
		case _IOC_NR(KVTIER_IOC_RESERVE):
			status = kvt_reserve_one(h, e, replace);
			break;
		case _IOC_NR(KVTIER_IOC_COMMIT):
			status = kvt_umeta_in(meta ? &meta[i] : NULL, &um);
			if (!status)
				status = kvt_commit_one(h, e, replace, &um);
			kfree(um);
			break;
		case _IOC_NR(KVTIER_IOC_ABORT):
			status = kvt_abort_one(h, e);
			break;
		default:
			status = kvt_unpin_one(h, e);
			break;
		}
		/* A failed COMMIT or ABORT leaves the address to retry with. */
		if (status && (!resv || nr == _IOC_NR(KVTIER_IOC_RESERVE)))
			kvt_entry_set(e, status, KVTIER_ADDR_NONE,
				      KVTIER_TIER_NONE);
		else if (!status)
			done++;
		e->status = status;
	}
out_unlock:
	if (pins)
		mutex_unlock(&h->pin_lock);
out_copy:
	b->done = done;
	status = 0;
	if (copy_to_user(u64_to_user_ptr(b->blocks), ents,
			 array_size(b->count, kvt_batch_esize(nr))))
		status = -EFAULT;
	if (meta && kvt_batch_meta_dir(nr) == KVT_META_OUT &&
	    copy_to_user(u64_to_user_ptr(b->meta), meta,
			 array_size(b->count, sizeof(*meta))))
		status = -EFAULT;
	kvfree(meta);
	kvfree(ents);
	return status;
}

static int kvt_stat(struct kvt_pool *pool, struct kvtier_pool_stat *st)
{
	if (st->flags)
		return -EINVAL;

	memset(st, 0, sizeof(*st));
	st->block_size = pool->block_size;
	st->capacity = pool->capacity;
	st->dram_blocks = pool->dram_blocks;
	st->numa_node = pool->nid;
	st->mode = pool->mode;
	st->uid = from_kuid_munged(current_user_ns(), pool->uid);
	st->gid = from_kgid_munged(current_user_ns(), pool->gid);
	st->meta_bytes = sizeof(*pool) + kvt_block_meta_bytes(pool);
	st->dram_reserved = kvt_pool_dram_bytes(pool->dram_blocks,
						pool->block_size,
						pool->capacity,
						pool->compress);
	st->compress = pool->compress;
	st->compress_flags = pool->compress_flags;

	spin_lock(&pool->lock);
	kvt_res_stat(pool, st->resident);
	st->demotions = pool->stats.demotions;
	st->promotions = pool->stats.promotions;
	st->bad_reads = pool->stats.bad_reads;
	st->lost_blocks = pool->stats.lost_blocks;
	st->parts = pool->parts;
	st->part_reads = pool->stats.part_reads;
	st->z_blocks = pool->stats.z_blocks;
	st->z_raw_blocks = pool->stats.z_raw_blocks;
	st->z_bytes_in = pool->stats.z_bytes_in;
	st->z_bytes_stored = pool->stats.z_bytes_stored;
	st->z_bad = pool->stats.z_bad;
	st->dirty = pool->nr_dirty;
	st->pinned = pool->nr_pinned;
	st->puts = pool->stats.puts;
	st->gets = pool->stats.gets;
	st->hits = pool->stats.hits;
	st->misses = pool->stats.misses;
	st->evictions = pool->stats.evictions;
	st->drops = pool->stats.drops;
	st->bytes_in = pool->stats.bytes_in;
	st->bytes_out = pool->stats.bytes_out;
	spin_unlock(&pool->lock);
	return 0;
}

static int kvt_sync(struct kvt_handle *h, struct kvtier_sync *sy)
{
	u64 written = 0;
	int ret;

	if (sy->flags || sy->__pad ||
	    memchr_inv(sy->reserved, 0, sizeof(sy->reserved)))
		return -EINVAL;
	if (h->rdonly)
		return -EBADF;
	ret = kvt_res_sync(h->pool, &written);
	memset(sy, 0, sizeof(*sy));
	sy->written = written;
	return ret;
}

/* Whether a command may wait for I/O or for room (io_uring punts it). */
static bool kvt_cmd_may_block(unsigned int nr, const struct kvtier_batch *b)
{
	switch (nr) {
	case _IOC_NR(KVTIER_IOC_LOOKUP):
		return b->flags & (KVTIER_LOOKUP_LOAD | KVTIER_LOOKUP_PIN);
	case _IOC_NR(KVTIER_IOC_PREFETCH):
	case _IOC_NR(KVTIER_IOC_CANCEL):
	case _IOC_NR(KVTIER_IOC_EVENTFD):
	case _IOC_NR(KVTIER_IOC_STAT):
	case _IOC_NR(KVTIER_IOC_HBM_STAT):
	case _IOC_NR(KVTIER_IOC_CENSUS):
		return false;
	}
	return true;
}

/**
 * kvt_pool_cmd() - run one command of a pool file
 * @h: the pool file's handle
 * @cmd: KVTIER_IOC_PUT ... KVTIER_IOC_EVENTFD
 * @uarg: user pointer to the command's struct
 * @nonblock: the caller must not wait for I/O (io_uring's first try):
 *	      commands that may are refused with -EAGAIN before doing anything
 *
 * Return: 0 or -errno; -ENOTTY for a command a pool file does not take.
 */
long kvt_pool_cmd(struct kvt_handle *h, unsigned int cmd, void __user *uarg,
		  bool nonblock)
{
	const struct kvt_cmd_info *ci = kvt_cmd_info(cmd, false);
	unsigned int nr = _IOC_NR(cmd);
	union {
		struct kvtier_batch batch;
		struct kvtier_pool_stat stat;
		struct kvtier_sync sync;
		struct kvtier_prefetch prefetch;
		struct kvtier_cancel cancel;
		struct kvtier_eventfd eventfd;
		struct kvtier_hbm_attach hattach;
		struct kvtier_hbm_stat hstat;
		struct kvtier_events events;
		struct kvtier_census census;
	} u;
	struct file *file;
	int ret;

	if (!ci)
		return -ENOTTY;
	if (ci->feature & ~h->features)
		return -EOPNOTSUPP;
	ret = kvt_arg_in(ci, cmd, &u, uarg);
	if (ret)
		return ret;
	if (nonblock && kvt_cmd_may_block(nr, &u.batch))
		return -EAGAIN;

	switch (nr) {
	case _IOC_NR(KVTIER_IOC_STAT):
		ret = kvt_stat(h->pool, &u.stat);
		break;
	case _IOC_NR(KVTIER_IOC_SYNC):
		ret = kvt_sync(h, &u.sync);
		break;
	case _IOC_NR(KVTIER_IOC_PREFETCH):
		ret = kvt_prefetch_cmd(h, &u.prefetch);
		break;
	case _IOC_NR(KVTIER_IOC_CANCEL):
		ret = kvt_prefetch_cancel(h, &u.cancel);
		break;
	case _IOC_NR(KVTIER_IOC_EVENTFD):
		ret = kvt_prefetch_eventfd(h, &u.eventfd);
		break;
	case _IOC_NR(KVTIER_IOC_HBM_ATTACH):
		ret = kvt_hbm_attach_cmd(h, &u.hattach);
		break;
	case _IOC_NR(KVTIER_IOC_HBM_STAT):
		ret = kvt_hbm_stat_cmd(h->pool, &u.hstat);
		break;
	case _IOC_NR(KVTIER_IOC_EVENTS):
		ret = kvt_ev_open(h->pool, &u.events, &file);
		if (ret)
			return ret;
		/* Installed once its number reached userspace. */
		if (kvt_arg_out(ci, cmd, uarg, &u)) {
			put_unused_fd(u.events.fd);
			fput(file);
			return -EFAULT;
		}
		fd_install(u.events.fd, file);
		return 0;
	case _IOC_NR(KVTIER_IOC_CENSUS):
		ret = kvt_census(h, &u.census);
		break;
	default:
		ret = kvt_batch(h, nr, &u.batch);
		break;
	}
	if (ret)
		return ret;
	return kvt_arg_out(ci, cmd, uarg, &u);
}

/**
 * kvt_pool_ioctl() - the commands of a pool file
 * @file: the pool file
 * @cmd: KVTIER_IOC_PUT ... KVTIER_IOC_EVENTFD
 * @arg: user pointer to the command's struct
 *
 * Return: 0 or -errno; -ENOTTY for a command a pool file does not take.
 */
long kvt_pool_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	return kvt_pool_cmd(file->private_data, cmd, (void __user *)arg, false);
}
