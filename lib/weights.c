// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libkvtier: weight pools (KVTIER_F_WEIGHTS), read-only pools of a model
 * file's bytes.
 *
 * The library reads the file's tensor table (safetensors.c, or gguf.c for
 * a GGUF file) and hands the kernel the file: block i of the pool is the
 * file's bytes from file_off + i * block_size, under the key { file_key, i },
 * at address i. file_off is the page holding the first tensor byte, so the
 * header is mostly not in the pool. file_key is a digest of the file's
 * size, its header and its identity (device, inode, mtime): OPEN_EXISTING
 * of a pool made from another file, or from this one before it changed,
 * finds no block { file_key, 0 } and is refused with -ESTALE.
 */
#define KVTIER_LIB_INTERNAL
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "kvtier.h"
#include "kvtier_priv.h"
#include "safetensors.h"
#include "gguf.h"

#define KVTIER_WEIGHTS_PAGE	4096ULL
/* A GGUF header's first read; then twice as much until it is whole. */
#define KVTIER_WEIGHTS_GGUF_READ	(256ULL << 10)

/**
 * struct kvtier_weights - a weight pool handle
 * @pool:	the pool.
 * @key:	key[0] of its blocks (struct kvtier_pool_create.file_key).
 * @count:	tensors in @t.
 * @layers:	1 + the highest layer a tensor names, or 0.
 * @experts:	1 + the highest expert a tensor names, or 0.
 * @t:		the tensors in data order, offsets in the pool's space.
 */
struct kvtier_weights {
	struct kvtier_pool *pool;
	uint64_t key;
	uint32_t count;
	uint32_t layers;
	uint32_t experts;
	uint64_t features;	/* the handshake's */
	struct kvtier_tensor *t;
};

/* @len bytes at @off, all of them: a file shorter than that -EBADMSG. */
static int kvtier_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;
	ssize_t n;

	while (len) {
		n = pread(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return -EBADMSG;
		p += n;
		len -= n;
		off += n;
	}
	return 0;
}

/*
 * A GGUF file's table: it has no header length, so read a prefix and parse
 * it, twice as long each time the parser asks for more (-ENODATA), which it
 * does only while there is more to read, up to KVTIER_ST_HEADER_MAX.
 */
static int kvtier_weights_gguf(int fd, uint64_t size,
			       struct kvtier_st_table *tab)
{
	uint64_t lim = size < KVTIER_ST_HEADER_MAX ? size : KVTIER_ST_HEADER_MAX;
	uint64_t len = 0, want = lim < KVTIER_WEIGHTS_GGUF_READ ? lim :
				 KVTIER_WEIGHTS_GGUF_READ;
	char *buf = NULL, *p;
	int ret;

	do {
		p = realloc(buf, want);
		if (!p) {
			ret = -ENOMEM;
			break;
		}
		buf = p;
		ret = kvtier_pread_full(fd, buf + len, want - len, len);
		if (ret)
			break;
		len = want;
		ret = kvtier_gguf_parse(buf, len, size, tab);
		want = 2 * len < lim ? 2 * len : lim;
	} while (ret == -ENODATA && len < lim);
	free(buf);
	/* (which the parser says only with more to read) */
	return ret == -ENODATA ? -EBADMSG : ret;
}

/* A safetensors file's table: the length, then the JSON it gives. */
static int kvtier_weights_st(int fd, uint64_t size, const uint8_t head[8],
			     struct kvtier_st_table *tab)
{
	uint64_t n;
	void *buf;
	int ret;

	ret = kvtier_st_header_len(head, size, &n);
	if (ret)
		return ret;
	buf = malloc(8 + n);
	if (!buf)
		return -ENOMEM;
	ret = kvtier_pread_full(fd, buf, 8 + n, 0);
	if (!ret)
		ret = kvtier_st_parse(buf, 8 + n, size, tab);
	free(buf);
	return ret;
}

int kvtier_weights_table(int fd, uint64_t *size, struct kvtier_st_table *tab)
{
	uint8_t head[8];
	uint64_t id[4];
	struct stat st;
	int ret;

	memset(tab, 0, sizeof(*tab));
	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	*size = st.st_size;
	if (*size < sizeof(head))
		return -EBADMSG;
	ret = kvtier_pread_full(fd, head, sizeof(head), 0);
	if (ret)
		return ret;
	if (kvtier_gguf_magic(head))
		ret = kvtier_weights_gguf(fd, *size, tab);
	else
		ret = kvtier_weights_st(fd, *size, head, tab);
	if (ret)
		return ret;

	/*
	 * What the kernel checks at each load is the size and the mtime; not
	 * the ctime, which a chmod or a rename changes.
	 */
	id[0] = st.st_dev;
	id[1] = st.st_ino;
	id[2] = st.st_mtim.tv_sec;
	id[3] = st.st_mtim.tv_nsec;
	tab->digest = kvtier_st_digest(tab->digest, id, sizeof(id));
	if (!tab->digest)
		tab->digest = 1;
	return 0;
}

/*
 * Where the pool starts in the file (@file_off: the page of the first
 * tensor byte) and its blocks to the end of the file; the tensors'
 * offsets become the pool's.
 */
static int kvtier_weights_layout(struct kvtier_weights *w,
				 const struct kvtier_st_table *tab,
				 uint64_t size, uint64_t block_size,
				 uint64_t *file_off, uint32_t *capacity)
{
	uint64_t first = UINT64_MAX, blocks, off;
	uint32_t i;

	for (i = 0; i < tab->count && first == UINT64_MAX; i++)
		if (tab->t[i].bytes)
			first = tab->data_off + tab->t[i].offset;
	/* No tensor has a byte: nothing to make a pool of. */
	if (first == UINT64_MAX)
		return -EBADMSG;
	/* The kernel reads whole pages of the file: its page size. */
	*file_off = first & ~((uint64_t)sysconf(_SC_PAGESIZE) - 1);
	blocks = (size - *file_off + block_size - 1) / block_size;
	if (blocks > KVTIER_CAPACITY_MAX)
		return -EFBIG;
	*capacity = blocks;

	for (i = 0; i < tab->count; i++) {
		struct kvtier_tensor *t = &tab->t[i];

		/* Only an empty tensor can start before the first page. */
		off = tab->data_off + t->offset;
		t->offset = off > *file_off ? off - *file_off : 0;
		if (t->layer >= 0 && (uint32_t)t->layer >= w->layers)
			w->layers = (uint32_t)t->layer + 1;
		if (t->expert >= 0 && (uint32_t)t->expert >= w->experts)
			w->experts = (uint32_t)t->expert + 1;
	}
	return 0;
}

/* That the pool the name opened is this file's: -ESTALE else. */
static int kvtier_weights_check(struct kvtier_weights *w, uint64_t block_size,
				uint32_t capacity)
{
	struct kvtier_key k = { { w->key, 0 } };
	uint64_t addr;
	int ret;

	if (kvtier_pool_block_size(w->pool) != block_size ||
	    kvtier_pool_capacity(w->pool) != capacity)
		return -ESTALE;
	ret = kvtier_lookup1(w->pool, &k, &addr, NULL);
	if (ret == -ENOENT || (!ret && addr != 0))
		return -ESTALE;
	return ret;
}

int kvtier_weights_open(struct kvtier_ctx *ctx, const char *path,
			const char *name, uint64_t block_size,
			uint32_t dram_blocks, struct kvtier_weights **wp)
{
	struct kvtier_pool_create c;
	struct kvtier_st_table tab;
	struct kvtier_weights *w;
	uint64_t size = 0, file_off;
	uint32_t capacity;
	int fd, ret;

	if (!(ctx->api.features & KVTIER_F_WEIGHTS))
		return -EOPNOTSUPP;
	if (!block_size || block_size % KVTIER_WEIGHTS_PAGE)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto out_free_w;
	}
	ret = kvtier_weights_table(fd, &size, &tab);
	if (ret)
		goto out_close_fd;
	ret = kvtier_weights_layout(w, &tab, size, block_size, &file_off,
				    &capacity);
	if (ret)
		goto out_free_table;

	memset(&c, 0, sizeof(c));
	c.block_size = block_size;
	c.capacity = capacity;
	c.dram_blocks = dram_blocks;
	c.flags = KVTIER_POOL_WEIGHTS | KVTIER_POOL_OPEN_EXISTING;
	c.numa_node = -1;
	c.file_fd = fd;
	c.file_off = file_off;
	c.file_key = tab.digest;
	ret = kvtier_pool_create_cmd(ctx, name, &c, &w->pool);
	if (ret)
		goto out_free_table;
	w->key = tab.digest;
	w->features = ctx->api.features;
	ret = kvtier_weights_check(w, block_size, capacity);
	if (ret)
		goto out_close_pool;

	/* The kernel has its own open of the file. */
	close(fd);
	w->t = tab.t;
	w->count = tab.count;
	*wp = w;
	return 0;

out_close_pool:
	kvtier_pool_close(w->pool);
out_free_table:
	kvtier_st_free(&tab);
out_close_fd:
	close(fd);
out_free_w:
	free(w);
	return ret;
}

void kvtier_weights_close(struct kvtier_weights *w)
{
	if (!w)
		return;
	kvtier_pool_close(w->pool);
	free(w->t);
	free(w);
}

struct kvtier_pool *kvtier_weights_pool(const struct kvtier_weights *w)
{
	return w->pool;
}

uint32_t kvtier_weights_count(const struct kvtier_weights *w,
			      uint32_t *layers, uint32_t *experts)
{
	if (layers)
		*layers = w->layers;
	if (experts)
		*experts = w->experts;
	return w->count;
}

int kvtier_weights_tensor(const struct kvtier_weights *w, uint32_t index,
			  const char *name, struct kvtier_tensor *t)
{
	uint32_t i;

	if (name) {
		for (i = 0; i < w->count; i++)
			if (!strcmp(w->t[i].name, name))
				break;
		index = i;
	}
	if (index >= w->count)
		return -ENOENT;
	*t = w->t[index];
	return 0;
}

int kvtier_weights_blocks(const struct kvtier_weights *w, int32_t layer,
			  int32_t expert, uint64_t *addrs, uint32_t max)
{
	uint64_t bs = kvtier_pool_block_size(w->pool), next = 0, a, last;
	const struct kvtier_tensor *t;
	uint32_t i, n = 0;
	bool found = false;

	for (i = 0; i < w->count; i++) {
		t = &w->t[i];
		if (t->layer != layer ||
		    (expert != KVTIER_WEIGHTS_ALL && t->expert != expert))
			continue;
		found = true;
		if (!t->bytes)
			continue;
		/* In data order: no block before the previous tensor's last. */
		a = t->offset / bs;
		last = (t->offset + t->bytes - 1) / bs;
		for (a = a > next ? a : next; a <= last; a++, n++)
			if (n < max)
				addrs[n] = a;
		if (last + 1 > next)
			next = last + 1;
	}
	return found ? (int)n : -ENOENT;
}

/* PREFETCH @n hints by address as the group @a describes. */
static int kvtier_weights_send(struct kvtier_weights *w, struct kvtier_hint *h,
			       uint32_t n, const struct kvtier_prefetch_args *a)
{
	struct kvtier_prefetch_args args = *a;

	args.flags |= KVTIER_PREFETCH_ADDR;
	return kvtier_prefetch(w->pool, h, n, &args, NULL, NULL);
}

int kvtier_weights_prefetch(struct kvtier_weights *w, int32_t layer,
			    int32_t expert,
			    const struct kvtier_prefetch_args *a)
{
	struct kvtier_hint *h;
	uint64_t *addrs;
	uint32_t i;
	int n, ret;

	if (!a)
		return -EINVAL;
	n = kvtier_weights_blocks(w, layer, expert, NULL, 0);
	if (n <= 0)
		return n ? n : -ENOENT;
	if ((uint32_t)n > w->pool->batch_max)
		return -E2BIG;
	addrs = calloc(n, sizeof(*addrs));
	h = calloc(n, sizeof(*h));
	ret = -ENOMEM;
	if (!addrs || !h)
		goto out_free;
	kvtier_weights_blocks(w, layer, expert, addrs, n);
	for (i = 0; i < (uint32_t)n; i++)
		h[i].addr = addrs[i];
	ret = kvtier_weights_send(w, h, n, a);
out_free:
	free(h);
	free(addrs);
	return ret;
}

/* Hints by address, then the likelier first. */
static int kvtier_hint_cmp(const void *x, const void *y)
{
	const struct kvtier_hint *a = x, *b = y;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return a->prob > b->prob ? -1 : a->prob < b->prob;
}

int kvtier_weights_prefetch_experts(struct kvtier_weights *w, int32_t layer,
				    const int32_t *experts,
				    const uint32_t *prob, uint32_t n,
				    const struct kvtier_prefetch_args *a)
{
	uint32_t i, j, nh = 0, total = 0, max = w->pool->batch_max;
	struct kvtier_hint *h;
	uint64_t *addrs;
	int ret, m;

	if (!a || !experts || !n || n > KVTIER_BATCH_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (experts[i] < 0 || (prob && prob[i] > KVTIER_PROB_ONE))
			return -EINVAL;
	if (prob && !(w->features & KVTIER_F_HINT_PROB))
		return -EOPNOTSUPP;
	for (i = 0; i < n; i++) {
		m = kvtier_weights_blocks(w, layer, experts[i], NULL, 0);
		if (m < 0)
			return m;
		total += (uint32_t)m;
		/* Before merging: a block twice still counts twice here. */
		if (total > max)
			return -E2BIG;
	}
	if (!total)
		return -ENOENT;
	addrs = calloc(total, sizeof(*addrs));
	h = calloc(total, sizeof(*h));
	ret = -ENOMEM;
	if (!addrs || !h)
		goto out_free;
	for (i = 0; i < n; i++) {
		m = kvtier_weights_blocks(w, layer, experts[i], addrs, total);
		for (j = 0; j < (uint32_t)m; j++, nh++) {
			h[nh].addr = addrs[j];
			if (prob) {
				h[nh].flags = KVTIER_HINT_PROB;
				h[nh].prob = prob[i];
			}
		}
	}
	/*
	 * One hint a block: a block two experts share (their tensors meet in
	 * it, or the caller named an expert twice) goes once, with the
	 * likelier's probability.
	 */
	qsort(h, nh, sizeof(*h), kvtier_hint_cmp);
	for (i = 0, j = 0; i < nh; i++)
		if (!j || h[i].addr != h[j - 1].addr)
			h[j++] = h[i];
	ret = kvtier_weights_send(w, h, j, a);
out_free:
	free(h);
	free(addrs);
	return ret;
}

int kvtier_weights_read(struct kvtier_weights *w,
			const struct kvtier_tensor *t, void *buf)
{
	uint64_t bs = kvtier_pool_block_size(w->pool);
	uint64_t first, last, end, addr, start;
	uint32_t i, n, chunk = w->pool->batch_max;
	struct kvtier_block *blk;
	struct kvtier_key k;
	char *bounce, *dst;
	uint32_t done;
	int ret;

	if (!t->bytes)
		return 0;
	if (__builtin_add_overflow(t->offset, t->bytes, &end) ||
	    end > (uint64_t)kvtier_pool_capacity(w->pool) * bs)
		return -EINVAL;
	first = t->offset / bs;
	last = (end - 1) / bs;
	if (last - first + 1 < chunk)
		chunk = last - first + 1;
	/* The first and the last block, when the tensor has part of them. */
	bounce = malloc(2 * bs);
	blk = calloc(chunk, sizeof(*blk));
	ret = -ENOMEM;
	if (!bounce || !blk)
		goto out_free;

	for (addr = first; addr <= last; addr += n) {
		n = last - addr + 1 < chunk ? last - addr + 1 : chunk;
		for (i = 0; i < n; i++) {
			start = (addr + i) * bs;
			if (start < t->offset)
				dst = bounce;
			else if (start + bs > end)
				dst = bounce + bs;
			else
				dst = (char *)buf + (start - t->offset);
			k.k[0] = w->key;
			k.k[1] = addr + i;
			kvtier_block_set(&blk[i], &k, dst);
		}
		ret = kvtier_get(w->pool, blk, n, 0, &done);
		for (i = 0; !ret && i < n; i++)
			ret = blk[i].status;
		if (ret)
			goto out_free;
	}

	/* The partial ends, from their copies. */
	if (t->offset % bs) {
		start = t->offset % bs;
		memcpy(buf, bounce + start,
		       bs - start < t->bytes ? bs - start : t->bytes);
	}
	if (end % bs && (first != last || !(t->offset % bs))) {
		start = last * bs;
		memcpy((char *)buf + (start - t->offset), bounce + bs,
		       end - start);
	}
	ret = 0;
out_free:
	free(blk);
	free(bounce);
	return ret;
}
