// SPDX-License-Identifier: GPL-2.0
/*
 * Compression of the NVMe tier's copies (KVTIER_F_COMPRESS), under
 * tier_nvme.c as nvme_part.c is.
 *
 * A block is compressed in frames of KVT_Z_FRAME bytes, each on its own
 * (the kernel's software compressors take at most 128 KiB a call), with
 * the kernel's compression API (crypto_acomp: lz4, lz4hc, zstd, and a
 * hardware compressor that registers one of those names). Its stored
 * bytes are a header (struct kvt_disk_zhdr: the frames' stored lengths)
 * and the frames one after the other, in pages of the writer's, the last
 * one zero-padded; a frame that does not shrink is stored as it is. With
 * KVTIER_COMPRESS_SHUFFLE2 a frame's 16-bit elements are compressed as
 * two byte planes, low bytes then high ones. A block whose stored bytes
 * would not save a page is not compressed: the writer writes it raw.
 *
 * Reading back, the frames are decompressed into the block's DRAM pages;
 * the reader (tier_nvme.c) has checked the stored bytes before and checks
 * the block's own crc after, so a bad copy or a bad decompression is a
 * miss.
 *
 * Each compressor's contexts (a request, and a buffer each way) are made
 * when the first pool using it is created and shared by its pools: about
 * one a CPU, taken and given back by the writer's jobs and the reads. The
 * writer compresses a segment's blocks across CPUs, a job each on an
 * unbound workqueue made for it (the writer frees memory: its jobs must
 * run under memory pressure too).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <crypto/acompress.h>
#include <linux/crc32c.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include "nvme.h"

#define KVT_Z_FRAME		(64U << 10)
/* Room for a frame that grows: lz4's and zstd's bounds are far below. */
#define KVT_Z_OUT		(2 * KVT_Z_FRAME)
#define KVT_Z_CTX_MAX		16

/* struct kvt_zctx - one request of a compressor, and its buffers */
struct kvt_zctx {
	struct list_head node;
	struct acomp_req *req;
	struct crypto_wait wait;
	u8 *plane;		/* KVT_Z_FRAME: a frame's bytes, as compressed */
	u8 *out;		/* KVT_Z_OUT: what the compressor gives */
};

/**
 * struct kvt_zalg - a compressor and its contexts, shared by its pools
 * @name: its crypto_acomp name
 * @tfm: the transform, while @users
 * @users: pools using it, under kvt_z_mutex
 * @lock: protects @free
 * @free: contexts not in use
 * @wq: waiters for a context
 * @nr: contexts made
 */
struct kvt_zalg {
	const char *name;
	struct crypto_acomp *tfm;
	unsigned int users;
	spinlock_t lock;		/* @free */
	struct list_head free;
	wait_queue_head_t wq;
	unsigned int nr;
};

static struct kvt_zalg kvt_zalgs[KVTIER_COMPRESS_MAX + 1] = {
	[KVTIER_COMPRESS_LZ4] = { .name = "lz4" },
	[KVTIER_COMPRESS_LZ4HC] = { .name = "lz4hc" },
	[KVTIER_COMPRESS_ZSTD] = { .name = "zstd" },
};

/* Protects the users of every compressor, and kvt_z_wq. */
static DEFINE_MUTEX(kvt_z_mutex);
static unsigned int kvt_z_users;
static struct workqueue_struct *kvt_z_wq;

static void kvt_zctx_free(struct kvt_zctx *c)
{
	if (c->req)
		acomp_request_free(c->req);
	kvfree(c->plane);
	kvfree(c->out);
	kfree(c);
}

static struct kvt_zctx *kvt_zctx_new(struct kvt_zalg *za)
{
	struct kvt_zctx *c = kzalloc(sizeof(*c), GFP_KERNEL);

	if (!c)
		return NULL;
	c->req = acomp_request_alloc(za->tfm);
	c->plane = kvmalloc(KVT_Z_FRAME, GFP_KERNEL);
	c->out = kvmalloc(KVT_Z_OUT, GFP_KERNEL);
	if (!c->req || !c->plane || !c->out) {
		kvt_zctx_free(c);
		return NULL;
	}
	crypto_init_wait(&c->wait);
	acomp_request_set_callback(c->req, CRYPTO_TFM_REQ_MAY_BACKLOG,
				   crypto_req_done, &c->wait);
	return c;
}

static void kvt_zalg_free(struct kvt_zalg *za)
{
	struct kvt_zctx *c, *n;

	list_for_each_entry_safe(c, n, &za->free, node)
		kvt_zctx_free(c);
	INIT_LIST_HEAD(&za->free);
	za->nr = 0;
	crypto_free_acomp(za->tfm);
	za->tfm = NULL;
}

/* Load a compressor and make its contexts; kvt_z_mutex held. */
static int kvt_zalg_init(struct kvt_zalg *za)
{
	unsigned int i, n = min_t(unsigned int, num_online_cpus() + 1,
				  KVT_Z_CTX_MAX);
	struct kvt_zctx *c;

	spin_lock_init(&za->lock);
	INIT_LIST_HEAD(&za->free);
	init_waitqueue_head(&za->wq);
	za->tfm = crypto_alloc_acomp(za->name, 0, 0);
	if (IS_ERR(za->tfm)) {
		int ret = PTR_ERR(za->tfm);

		za->tfm = NULL;
		pr_warn("compressor %s: %d\n", za->name, ret);
		/* Not there, and its module not loadable. */
		return ret == -ENOENT ? -ENOPKG : ret;
	}
	for (i = 0; i < n; i++) {
		c = kvt_zctx_new(za);
		if (!c) {
			kvt_zalg_free(za);
			return -ENOMEM;
		}
		list_add(&c->node, &za->free);
		za->nr++;
	}
	return 0;
}

/**
 * kvt_z_get() - a new pool compresses with @algo: load the compressor
 * @algo: KVTIER_COMPRESS_LZ4 .. KVTIER_COMPRESS_MAX
 *
 * Return: 0; -ENOPKG when the kernel has no such compressor and cannot
 * load it; -ENOMEM.
 */
int kvt_z_get(u8 algo)
{
	struct kvt_zalg *za = &kvt_zalgs[algo];
	int ret = 0;

	if (WARN_ON_ONCE(!algo || algo > KVTIER_COMPRESS_MAX))
		return -EINVAL;
	mutex_lock(&kvt_z_mutex);
	if (!kvt_z_users) {
		kvt_z_wq = alloc_workqueue("kvtier_z", WQ_UNBOUND |
					   WQ_MEM_RECLAIM, 0);
		if (!kvt_z_wq) {
			ret = -ENOMEM;
			goto out_unlock;
		}
	}
	if (!za->users)
		ret = kvt_zalg_init(za);
	if (!ret) {
		za->users++;
		kvt_z_users++;
	} else if (!kvt_z_users) {
		destroy_workqueue(kvt_z_wq);
		kvt_z_wq = NULL;
	}
out_unlock:
	mutex_unlock(&kvt_z_mutex);
	return ret;
}

/**
 * kvt_z_put() - a pool that compressed with @algo is gone
 * @algo: as given to kvt_z_get()
 *
 * Its writes and reads have ended (they held the pool).
 */
void kvt_z_put(u8 algo)
{
	struct kvt_zalg *za = &kvt_zalgs[algo];

	mutex_lock(&kvt_z_mutex);
	if (!--za->users)
		kvt_zalg_free(za);
	if (!--kvt_z_users) {
		destroy_workqueue(kvt_z_wq);
		kvt_z_wq = NULL;
	}
	mutex_unlock(&kvt_z_mutex);
}

static struct kvt_zctx *kvt_zctx_get(struct kvt_zalg *za)
{
	struct kvt_zctx *c;

	spin_lock(&za->lock);
	while (!(c = list_first_entry_or_null(&za->free, struct kvt_zctx,
					      node))) {
		spin_unlock(&za->lock);
		wait_event(za->wq, !list_empty_careful(&za->free));
		spin_lock(&za->lock);
	}
	list_del(&c->node);
	spin_unlock(&za->lock);
	return c;
}

static void kvt_zctx_put(struct kvt_zalg *za, struct kvt_zctx *c)
{
	spin_lock(&za->lock);
	list_add(&c->node, &za->free);
	spin_unlock(&za->lock);
	wake_up(&za->wq);
}

/* Copy @len bytes of a block from byte @off into @buf, or back (@in). */
static void kvt_z_block_bytes(struct kvt_pool *pool, struct kvt_block *blk,
			      u64 off, void *buf, u32 len, bool in)
{
	while (len) {
		struct page *page = kvt_dram_page(pool, blk, off >> PAGE_SHIFT);
		u32 poff = offset_in_page(off);
		u32 n = min_t(u32, len, PAGE_SIZE - poff);
		void *p = kmap_local_page(page);

		if (in)
			memcpy(p + poff, buf, n);
		else
			memcpy(buf, p + poff, n);
		kunmap_local(p);
		buf += n;
		off += n;
		len -= n;
	}
}

/* The 16-bit elements of @len bytes as two planes: low bytes, high bytes. */
static void kvt_z_shuffle(u8 *dst, const u8 *src, u32 len)
{
	u32 i, half = len / 2;

	for (i = 0; i < half; i++) {
		dst[i] = src[2 * i];
		dst[half + i] = src[2 * i + 1];
	}
}

static void kvt_z_unshuffle(u8 *dst, const u8 *src, u32 len)
{
	u32 i, half = len / 2;

	for (i = 0; i < half; i++) {
		dst[2 * i] = src[i];
		dst[2 * i + 1] = src[half + i];
	}
}

/* Run one request of @c: @slen bytes at @src into c->out; its length. */
static int kvt_z_run(struct kvt_zctx *c, const void *src, u32 slen,
		     void *dst, u32 dlen, bool compress, u32 *outlen)
{
	struct scatterlist sgs, sgd;
	int ret;

	sg_init_one(&sgs, src, slen);
	sg_init_one(&sgd, dst, dlen);
	acomp_request_set_params(c->req, &sgs, &sgd, slen, dlen);
	ret = crypto_wait_req(compress ? crypto_acomp_compress(c->req) :
					 crypto_acomp_decompress(c->req),
			      &c->wait);
	*outlen = c->req->dlen;
	return ret;
}

/* Bytes of the header of a copy of @frames frames. */
static u32 kvt_z_hdr_bytes(u32 frames)
{
	return struct_size((struct kvt_disk_zhdr *)NULL, flen, frames);
}

/* Copy @len stored bytes of a copy from byte @off to @buf, or back (@in). */
static void kvt_z_stored_bytes(struct page **pages, u32 off, void *buf,
			       u32 len, bool in)
{
	while (len) {
		u32 n = min_t(u32, len, PAGE_SIZE - off % PAGE_SIZE);
		void *p = page_address(pages[off / PAGE_SIZE]) + off % PAGE_SIZE;

		if (in)
			memcpy(p, buf, n);
		else
			memcpy(buf, p, n);
		buf += n;
		off += n;
		len -= n;
	}
}

/*
 * Append @len bytes to a copy being made: pages are taken as it grows,
 * never more than @max. Return: 0, or -E2BIG past @max, -ENOMEM.
 */
static int kvt_z_append(struct kvt_zcopy *z, const void *buf, u32 len,
			u32 max)
{
	while (len) {
		u32 poff = z->bytes % PAGE_SIZE, n;

		if (!poff) {
			if (z->nr_pages == max)
				return -E2BIG;
			z->pages[z->nr_pages] = alloc_page(GFP_NOIO |
							   __GFP_NOWARN);
			if (!z->pages[z->nr_pages])
				return -ENOMEM;
			z->nr_pages++;
		}
		n = min_t(u32, len, PAGE_SIZE - poff);
		memcpy(page_address(z->pages[z->nr_pages - 1]) + poff, buf, n);
		z->bytes += n;
		buf += n;
		len -= n;
	}
	return 0;
}

/**
 * kvt_z_release() - free what kvt_z_compress() made
 * @z: the copy; emptied
 */
void kvt_z_release(struct kvt_zcopy *z)
{
	while (z->nr_pages)
		__free_page(z->pages[--z->nr_pages]);
	kvfree(z->pages);
	z->pages = NULL;
	z->bytes = 0;
}

/**
 * kvt_z_compress() - compress a block for its NVMe copy
 * @pool: the pool, which compresses
 * @blk: a READY block in DRAM, held as a user (its bytes do not change)
 * @z: out: its stored bytes, in pages (free them with kvt_z_release())
 *
 * Return: 0; -E2BIG when it does not save a page (the writer writes it
 * raw); -ENOMEM; another -errno of the compressor. On error @z is empty.
 */
int kvt_z_compress(struct kvt_pool *pool, struct kvt_block *blk,
		   struct kvt_zcopy *z)
{
	struct kvt_zalg *za = &kvt_zalgs[pool->compress];
	u32 frames = DIV_ROUND_UP(pool->block_size, KVT_Z_FRAME);
	u32 max = pool->pages_per_block - 1, f, len, out;
	struct kvt_disk_zhdr *hdr;
	struct kvt_zctx *c;
	const void *src;
	int ret = 0;

	memset(z, 0, sizeof(*z));
	if (!max || kvt_should_fail_compress())
		return !max ? -E2BIG : -EIO;
	hdr = kzalloc(kvt_z_hdr_bytes(frames), GFP_NOIO | __GFP_NOWARN);
	z->pages = kvcalloc(max, sizeof(*z->pages), GFP_NOIO | __GFP_NOWARN);
	if (!hdr || !z->pages) {
		kfree(hdr);
		kvfree(z->pages);
		z->pages = NULL;
		return -ENOMEM;
	}
	hdr->magic = cpu_to_le32(KVT_Z_MAGIC);
	hdr->algo = pool->compress;
	hdr->flags = pool->compress_flags;
	hdr->frames = cpu_to_le16(frames);
	hdr->frame_bytes = cpu_to_le32(KVT_Z_FRAME);
	/* The header's room first: its lengths are known at the end. */
	ret = kvt_z_append(z, hdr, kvt_z_hdr_bytes(frames), max);

	c = kvt_zctx_get(za);
	for (f = 0; !ret && f < frames; f++) {
		len = min_t(u64, KVT_Z_FRAME,
			    pool->block_size - (u64)f * KVT_Z_FRAME);
		kvt_z_block_bytes(pool, blk, (u64)f * KVT_Z_FRAME, c->out, len,
				  false);
		if (pool->compress_flags & KVTIER_COMPRESS_SHUFFLE2)
			kvt_z_shuffle(c->plane, c->out, len);
		else
			memcpy(c->plane, c->out, len);
		ret = kvt_z_run(c, c->plane, len, c->out, KVT_Z_OUT, true,
				&out);
		/* A frame that does not shrink is stored as it is. */
		if (ret || out >= len) {
			ret = 0;
			out = len;
			src = c->plane;
			hdr->flen[f] = cpu_to_le32(out | KVT_Z_STORED);
		} else {
			src = c->out;
			hdr->flen[f] = cpu_to_le32(out);
		}
		ret = kvt_z_append(z, src, out, max);
	}
	kvt_zctx_put(za, c);
	/* The header in its place, with the frames' lengths (a page or more). */
	if (!ret)
		kvt_z_stored_bytes(z->pages, 0, hdr, kvt_z_hdr_bytes(frames), true);
	kfree(hdr);
	if (ret) {
		kvt_z_release(z);
		return ret;
	}
	/* The rest of the last page: zeros on the device. */
	if (z->bytes % PAGE_SIZE)
		memzero_page(z->pages[z->nr_pages - 1], z->bytes % PAGE_SIZE,
			     PAGE_SIZE - z->bytes % PAGE_SIZE);
	z->crc = kvt_z_crc(z->pages, z->bytes, 0);
	return 0;
}

/**
 * kvt_z_crc() - the crc32c of a copy's stored bytes
 * @pages: its pages
 * @bytes: its length
 * @seed: where the crc starts
 *
 * Return: the crc.
 */
u32 kvt_z_crc(struct page **pages, u32 bytes, u32 seed)
{
	u32 i;

	for (i = 0; bytes; i++) {
		u32 n = min_t(u32, bytes, PAGE_SIZE);

		seed = crc32c(seed, page_address(pages[i]), n);
		bytes -= n;
	}
	return seed;
}

/**
 * kvt_z_decompress() - a compressed copy's stored bytes into its block
 * @pool: the pool, which compresses
 * @blk: the block, LOADING with its DRAM pages, held by the read
 * @pages: the stored bytes, read and checked (their crc)
 * @bytes: their length
 *
 * Return: 0 with the block's bytes in its pages (to be checked against
 * its crc by the caller); -EBADMSG for a header or a frame that does not
 * decompress to its length.
 */
int kvt_z_decompress(struct kvt_pool *pool, struct kvt_block *blk,
		     struct page **pages, u32 bytes)
{
	struct kvt_zalg *za = &kvt_zalgs[pool->compress];
	u32 frames = DIV_ROUND_UP(pool->block_size, KVT_Z_FRAME);
	u32 hbytes = kvt_z_hdr_bytes(frames), off, f, len, flen, out;
	struct kvt_disk_zhdr *hdr;
	struct kvt_zctx *c;
	int ret = 0;

	if (bytes < hbytes || kvt_should_fail_compress())
		return -EBADMSG;
	hdr = kmalloc(hbytes, GFP_NOIO);
	if (!hdr)
		return -ENOMEM;
	kvt_z_stored_bytes(pages, 0, hdr, hbytes, false);
	if (le32_to_cpu(hdr->magic) != KVT_Z_MAGIC ||
	    hdr->algo != pool->compress ||
	    hdr->flags != pool->compress_flags ||
	    le16_to_cpu(hdr->frames) != frames ||
	    le32_to_cpu(hdr->frame_bytes) != KVT_Z_FRAME) {
		kfree(hdr);
		return -EBADMSG;
	}

	c = kvt_zctx_get(za);
	for (f = 0, off = hbytes; !ret && f < frames; f++) {
		len = min_t(u64, KVT_Z_FRAME,
			    pool->block_size - (u64)f * KVT_Z_FRAME);
		flen = le32_to_cpu(hdr->flen[f]);
		ret = -EBADMSG;
		if ((flen & ~KVT_Z_STORED) > min(len, bytes - off))
			break;
		if (flen & KVT_Z_STORED) {
			if (flen != (len | KVT_Z_STORED))
				break;
			kvt_z_stored_bytes(pages, off, c->plane, len, false);
			off += len;
		} else {
			kvt_z_stored_bytes(pages, off, c->out, flen, false);
			off += flen;
			if (kvt_z_run(c, c->out, flen, c->plane, KVT_Z_FRAME,
				      false, &out) || out != len)
				break;
		}
		if (pool->compress_flags & KVTIER_COMPRESS_SHUFFLE2) {
			kvt_z_unshuffle(c->out, c->plane, len);
			kvt_z_block_bytes(pool, blk, (u64)f * KVT_Z_FRAME,
					  c->out, len, true);
		} else {
			kvt_z_block_bytes(pool, blk, (u64)f * KVT_Z_FRAME,
					  c->plane, len, true);
		}
		ret = 0;
	}
	kvt_zctx_put(za, c);
	kfree(hdr);
	/* Every byte stored is some frame's. */
	return ret ?: off == bytes ? 0 : -EBADMSG;
}

/* struct kvt_zjob - one block of a segment to compress */
struct kvt_zjob {
	struct work_struct work;
	struct kvt_wb_entry *e;
	atomic_t *left;
	struct completion *done;
};

static void kvt_zjob_fn(struct work_struct *work)
{
	struct kvt_zjob *j = container_of(work, struct kvt_zjob, work);
	struct kvt_pool *pool = j->e->pool;

	kvt_z_compress(pool, &pool->blocks[j->e->addr], &j->e->z);
	if (atomic_dec_and_test(j->left))
		complete(j->done);
}

/**
 * kvt_z_compress_all() - compress the blocks of a segment, across CPUs
 * @ents: the segment's entries: those with a record (e->rec), of a pool
 *	  that compresses, are compressed into e->z, but relocated ones
 *	  (e->moved: written as they were stored)
 * @n: how many
 *
 * The blocks are READY in DRAM and held as users. Sleeps until all are
 * done; a copy left empty (it did not save a page, or no memory) is
 * written raw. Without memory for the jobs, compresses them here, one
 * after the other.
 */
void kvt_z_compress_all(struct kvt_wb_entry *ents, u32 n)
{
	DECLARE_COMPLETION_ONSTACK(done);
	struct kvt_zjob *jobs;
	u32 i, nr = 0;
	atomic_t left;

	for (i = 0; i < n; i++)
		nr += ents[i].rec != KVT_NIL && ents[i].pool->compress &&
		      !ents[i].moved;
	if (!nr)
		return;
	jobs = kvmalloc_array(nr, sizeof(*jobs), GFP_NOIO | __GFP_NOWARN);
	/* One job counts for the loop itself: none ends the wait early. */
	atomic_set(&left, 1);
	for (i = 0, nr = 0; i < n; i++) {
		struct kvt_wb_entry *e = &ents[i];

		if (e->rec == KVT_NIL || !e->pool->compress || e->moved)
			continue;
		if (!jobs) {
			kvt_z_compress(e->pool, &e->pool->blocks[e->addr],
				       &e->z);
			continue;
		}
		jobs[nr] = (struct kvt_zjob){ .e = e, .left = &left,
					      .done = &done };
		INIT_WORK(&jobs[nr].work, kvt_zjob_fn);
		atomic_inc(&left);
		queue_work(kvt_z_wq, &jobs[nr].work);
		nr++;
	}
	if (!atomic_dec_and_test(&left))
		wait_for_completion(&done);
	kvfree(jobs);
}
