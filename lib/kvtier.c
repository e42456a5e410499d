// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libkvtier: control device, pools, batched block commands and mmap.
 */
#define KVTIER_LIB_INTERNAL
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "kvtier.h"
#include "kvtier_priv.h"

static int kvtier_ioctl(int fd, unsigned long cmd, void *arg)
{
	if (ioctl(fd, cmd, arg) < 0)
		return -errno;
	return 0;
}

/* Open the control device and do the handshake asking for @features. */
static int kvtier_handshake(uint64_t features, int *fdp, struct kvtier_api *api)
{
	int fd, ret;

	fd = open(KVTIER_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;

	memset(api, 0, sizeof(*api));
	api->api = KVTIER_API_VERSION;
	api->features = features;
	ret = kvtier_ioctl(fd, KVTIER_IOC_API, api);
	if (ret) {
		close(fd);
		return ret;
	}
	*fdp = fd;
	return 0;
}

int kvtier_open(struct kvtier_ctx **ctxp, uint64_t features)
{
	struct kvtier_ctx *ctx;
	int ret;

	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;

	/*
	 * The kernel keeps the bits it knows of those asked for and answers
	 * with them: KVTIER_FEATURES_ALL (~0) gets all it has, in one
	 * handshake.
	 */
	ret = kvtier_handshake(features, &ctx->fd, &ctx->api);
	if (ret)
		goto out_free_ctx;
	if (features != KVTIER_FEATURES_ALL && ctx->api.features != features) {
		ret = -EOPNOTSUPP;
		goto out_close_fd;
	}
	*ctxp = ctx;
	return 0;

out_close_fd:
	close(ctx->fd);
out_free_ctx:
	free(ctx);
	return ret;
}

void kvtier_close(struct kvtier_ctx *ctx)
{
	if (!ctx)
		return;
	close(ctx->fd);
	free(ctx);
}

int kvtier_ctx_fd(const struct kvtier_ctx *ctx)
{
	return ctx->fd;
}

int kvtier_api_info(const struct kvtier_ctx *ctx, struct kvtier_api *api)
{
	*api = ctx->api;
	return 0;
}

const char *kvtier_feature_name(uint64_t bit)
{
	switch (bit) {
	case KVTIER_F_POOLS:
		return "pools";
	case KVTIER_F_MMAP:
		return "mmap";
	case KVTIER_F_NUMA:
		return "numa";
	case KVTIER_F_REPLACE:
		return "replace";
	case KVTIER_F_NVME:
		return "nvme";
	case KVTIER_F_PREFETCH:
		return "prefetch";
	case KVTIER_F_URING:
		return "uring";
	case KVTIER_F_HBM:
		return "hbm";
	case KVTIER_F_SG:
		return "sg";
	case KVTIER_F_LOOKUP_PIN:
		return "lookup_pin";
	case KVTIER_F_RESERVE:
		return "reserve";
	case KVTIER_F_META:
		return "meta";
	case KVTIER_F_PARTS:
		return "parts";
	case KVTIER_F_EVENTS:
		return "events";
	case KVTIER_F_COMPRESS:
		return "compress";
	case KVTIER_F_DIRECT:
		return "direct";
	case KVTIER_F_WEIGHTS:
		return "weights";
	case KVTIER_F_HINT_PROB:
		return "hint_prob";
	}
	return NULL;
}

const char *kvtier_ioctl_name(unsigned int nr)
{
	static const struct {
		unsigned long cmd;
		const char *name;
	} cmds[] = {
		{ KVTIER_IOC_API, "API" },
		{ KVTIER_IOC_POOL_CREATE, "POOL_CREATE" },
		{ KVTIER_IOC_POOL_OPEN, "POOL_OPEN" },
		{ KVTIER_IOC_POOL_DESTROY, "POOL_DESTROY" },
		{ KVTIER_IOC_NVME_ATTACH, "NVME_ATTACH" },
		{ KVTIER_IOC_NVME_DETACH, "NVME_DETACH" },
		{ KVTIER_IOC_NVME_STAT, "NVME_STAT" },
		{ KVTIER_IOC_PUT, "PUT" },
		{ KVTIER_IOC_GET, "GET" },
		{ KVTIER_IOC_LOOKUP, "LOOKUP" },
		{ KVTIER_IOC_DROP, "DROP" },
		{ KVTIER_IOC_PIN, "PIN" },
		{ KVTIER_IOC_UNPIN, "UNPIN" },
		{ KVTIER_IOC_STAT, "STAT" },
		{ KVTIER_IOC_SYNC, "SYNC" },
		{ KVTIER_IOC_PREFETCH, "PREFETCH" },
		{ KVTIER_IOC_CANCEL, "CANCEL" },
		{ KVTIER_IOC_EVENTFD, "EVENTFD" },
		{ KVTIER_IOC_HBM_ATTACH, "HBM_ATTACH" },
		{ KVTIER_IOC_HBM_STAT, "HBM_STAT" },
		{ KVTIER_IOC_ADOPT, "ADOPT" },
		{ KVTIER_IOC_RESERVE, "RESERVE" },
		{ KVTIER_IOC_COMMIT, "COMMIT" },
		{ KVTIER_IOC_ABORT, "ABORT" },
		{ KVTIER_IOC_EVENTS, "EVENTS" },
		{ KVTIER_IOC_CENSUS, "CENSUS" },
	};
	size_t i;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (_IOC_NR(cmds[i].cmd) == nr)
			return cmds[i].name;
	return NULL;
}

const char *kvtier_tier_name(unsigned int tier)
{
	static const char * const names[KVTIER_NR_TIERS] = {
		[KVTIER_TIER_NONE] = "none",
		[KVTIER_TIER_HBM] = "hbm",
		[KVTIER_TIER_DRAM] = "dram",
		[KVTIER_TIER_NVME] = "nvme",
	};

	return tier < KVTIER_NR_TIERS ? names[tier] : "?";
}

/* ---- pools ------------------------------------------------------------- */

void kvtier_pool_params_init(struct kvtier_pool_params *p, const char *name,
			     uint64_t block_size, uint32_t capacity)
{
	memset(p, 0, sizeof(*p));
	p->name = name;
	p->block_size = block_size;
	p->capacity = capacity;
	p->numa_node = -1;
}

static int kvtier_copy_name(__u8 dst[KVTIER_NAME_MAX], const char *name)
{
	size_t len = strlen(name);

	if (len >= KVTIER_NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(dst, name, len + 1);
	return 0;
}

/* Wrap a fresh pool fd in a handle, its configuration read back by STAT. */
static int kvtier_pool_new(struct kvtier_ctx *ctx, int fd, const char *name,
			   struct kvtier_pool **poolp)
{
	struct kvtier_pool_stat st;
	struct kvtier_pool *pool;
	int ret;

	pool = calloc(1, sizeof(*pool));
	if (!pool) {
		ret = -ENOMEM;
		goto out_close_fd;
	}
	pool->fd = fd;
	pool->batch_max = ctx->api.batch_max ? ctx->api.batch_max : KVTIER_BATCH_MAX;
	/* length checked by kvtier_copy_name() */
	strcpy(pool->name, name);

	ret = kvtier_stat(pool, &st);
	if (ret)
		goto out_free_pool;
	pool->block_size = st.block_size;
	pool->capacity = st.capacity;
	pool->numa_node = st.numa_node;
	*poolp = pool;
	return 0;

out_free_pool:
	free(pool);
out_close_fd:
	close(fd);
	return ret;
}

int kvtier_pool_create(struct kvtier_ctx *ctx,
		       const struct kvtier_pool_params *p,
		       struct kvtier_pool **poolp)
{
	return kvtier_pool_create_parts(ctx, p, 0, poolp);
}

int kvtier_pool_create_cmd(struct kvtier_ctx *ctx, const char *name,
			   struct kvtier_pool_create *c,
			   struct kvtier_pool **poolp)
{
	int ret;

	ret = kvtier_copy_name(c->name, name);
	if (ret)
		return ret;
	ret = kvtier_ioctl(ctx->fd, KVTIER_IOC_POOL_CREATE, c);
	if (ret)
		return ret;
	return kvtier_pool_new(ctx, c->fd, name, poolp);
}

/* POOL_CREATE with what struct kvtier_pool_params has no room for. */
static int kvtier_pool_create_ext(struct kvtier_ctx *ctx,
				  const struct kvtier_pool_params *p,
				  uint32_t parts, uint32_t compress,
				  uint32_t compress_flags,
				  struct kvtier_pool **poolp)
{
	struct kvtier_pool_create c;

	if (compress > UINT8_MAX || compress_flags > UINT8_MAX)
		return -EINVAL;
	memset(&c, 0, sizeof(c));
	c.block_size = p->block_size;
	c.capacity = p->capacity;
	c.dram_blocks = p->dram_blocks;
	c.flags = p->flags;
	c.mode = p->mode;
	c.numa_node = p->numa_node;
	c.parts = parts;
	c.compress = compress;
	c.compress_flags = compress_flags;
	return kvtier_pool_create_cmd(ctx, p->name, &c, poolp);
}

int kvtier_pool_create_parts(struct kvtier_ctx *ctx,
			     const struct kvtier_pool_params *p,
			     uint32_t parts, struct kvtier_pool **poolp)
{
	return kvtier_pool_create_ext(ctx, p, parts, 0, 0, poolp);
}

int kvtier_pool_create_compressed(struct kvtier_ctx *ctx,
				  const struct kvtier_pool_params *p,
				  uint32_t compress, uint32_t flags,
				  struct kvtier_pool **poolp)
{
	return kvtier_pool_create_ext(ctx, p, 0, compress, flags, poolp);
}

int kvtier_pool_open(struct kvtier_ctx *ctx, const char *name, uint32_t flags,
		     struct kvtier_pool **poolp)
{
	struct kvtier_pool_open o;
	int ret;

	memset(&o, 0, sizeof(o));
	ret = kvtier_copy_name(o.name, name);
	if (ret)
		return ret;
	o.flags = flags;
	ret = kvtier_ioctl(ctx->fd, KVTIER_IOC_POOL_OPEN, &o);
	if (ret)
		return ret;
	return kvtier_pool_new(ctx, o.fd, name, poolp);
}

void kvtier_pool_close(struct kvtier_pool *pool)
{
	if (!pool)
		return;
	close(pool->fd);
	free(pool->pend);
	free(pool);
}

int kvtier_pool_destroy(struct kvtier_ctx *ctx, const char *name)
{
	struct kvtier_pool_destroy d;
	int ret;

	memset(&d, 0, sizeof(d));
	ret = kvtier_copy_name(d.name, name);
	if (ret)
		return ret;
	return kvtier_ioctl(ctx->fd, KVTIER_IOC_POOL_DESTROY, &d);
}

int kvtier_pool_fd(const struct kvtier_pool *pool)
{
	return pool->fd;
}

uint64_t kvtier_pool_block_size(const struct kvtier_pool *pool)
{
	return pool->block_size;
}

uint32_t kvtier_pool_capacity(const struct kvtier_pool *pool)
{
	return pool->capacity;
}

int kvtier_pool_numa_node(const struct kvtier_pool *pool)
{
	return pool->numa_node;
}

const char *kvtier_pool_name(const struct kvtier_pool *pool)
{
	return pool->name;
}

int kvtier_stat(struct kvtier_pool *pool, struct kvtier_pool_stat *st)
{
	memset(st, 0, sizeof(*st));
	return kvtier_ioctl(pool->fd, KVTIER_IOC_STAT, st);
}

int kvtier_sync(struct kvtier_pool *pool, uint64_t *written)
{
	struct kvtier_sync s;
	int ret;

	memset(&s, 0, sizeof(s));
	ret = kvtier_ioctl(pool->fd, KVTIER_IOC_SYNC, &s);
	if (written)
		*written = ret ? 0 : s.written;
	return ret;
}

/* ---- NVMe tier --------------------------------------------------------- */

int kvtier_nvme_attach(struct kvtier_ctx *ctx, const char *path, uint32_t flags,
		       uint32_t region_kib)
{
	struct kvtier_nvme_attach a;

	if (!path || !*path)
		return -EINVAL;
	memset(&a, 0, sizeof(a));
	a.path = (uintptr_t)path;
	a.flags = flags;
	a.region_kib = region_kib;
	return kvtier_ioctl(ctx->fd, KVTIER_IOC_NVME_ATTACH, &a);
}

int kvtier_nvme_detach(struct kvtier_ctx *ctx)
{
	struct kvtier_nvme_detach d;

	memset(&d, 0, sizeof(d));
	return kvtier_ioctl(ctx->fd, KVTIER_IOC_NVME_DETACH, &d);
}

int kvtier_nvme_detach_path(struct kvtier_ctx *ctx, const char *path)
{
	struct kvtier_nvme_detach d;

	if (!path || !*path)
		return -EINVAL;
	memset(&d, 0, sizeof(d));
	d.path = (uintptr_t)path;
	return kvtier_ioctl(ctx->fd, KVTIER_IOC_NVME_DETACH, &d);
}

int kvtier_nvme_stat_dev(struct kvtier_ctx *ctx, unsigned int index,
			 struct kvtier_nvme_stat *st)
{
	memset(st, 0, sizeof(*st));
	st->flags = KVTIER_NVME_STAT_DEV;
	st->dev_index = index;
	return kvtier_ioctl(ctx->fd, KVTIER_IOC_NVME_STAT, st);
}

int kvtier_nvme_stat(struct kvtier_ctx *ctx, struct kvtier_nvme_stat *st)
{
	memset(st, 0, sizeof(*st));
	return kvtier_ioctl(ctx->fd, KVTIER_IOC_NVME_STAT, st);
}

/* ---- batched block commands -------------------------------------------- */

/*
 * Issue @cmd over @blk (and its records @meta, or NULL) in chunks of at
 * most batch_max entries. For LOOKUP, *@done is the resident prefix of the
 * whole chain: chunks after the first one with a miss still run (every
 * entry gets its status) but add nothing.
 */
static int kvtier_batch_part(struct kvtier_pool *pool, unsigned long cmd,
			     struct kvtier_block *blk,
			     const struct kvtier_meta *meta, uint32_t n,
			     uint32_t flags, uint32_t part_off,
			     uint32_t part_len, uint32_t *done)
{
	int prefix = cmd == KVTIER_IOC_LOOKUP;
	uint32_t off = 0, total = 0;
	int broken = 0;

	if (!n)
		return -EINVAL;
	do {
		struct kvtier_batch b;
		uint32_t chunk = n - off;
		int ret;

		if (chunk > pool->batch_max)
			chunk = pool->batch_max;
		memset(&b, 0, sizeof(b));
		b.blocks = (uintptr_t)(blk + off);
		b.count = chunk;
		b.meta = meta ? (uintptr_t)(meta + off) : 0;
		b.flags = flags;
		b.part_off = part_off;
		b.part_len = part_len;
		/* Past the end of a LOOKUP's prefix: look only. */
		if (prefix && broken)
			b.flags &= ~(KVTIER_LOOKUP_LOAD | KVTIER_LOOKUP_PIN);
		ret = kvtier_ioctl(pool->fd, cmd, &b);
		if (ret) {
			if (done)
				*done = total;
			return ret;
		}
		if (!prefix || !broken)
			total += b.done;
		if (b.done < chunk)
			broken = 1;
		off += chunk;
	} while (off < n);

	if (done)
		*done = total;
	return 0;
}

static int kvtier_batch(struct kvtier_pool *pool, unsigned long cmd,
			struct kvtier_block *blk, const struct kvtier_meta *meta,
			uint32_t n, uint32_t flags, uint32_t *done)
{
	return kvtier_batch_part(pool, cmd, blk, meta, n, flags, 0, 0, done);
}

int kvtier_put(struct kvtier_pool *pool, struct kvtier_block *blk, uint32_t n,
	       uint32_t flags, uint32_t *done)
{
	return kvtier_batch(pool, KVTIER_IOC_PUT, blk, NULL, n, flags, done);
}

int kvtier_get(struct kvtier_pool *pool, struct kvtier_block *blk, uint32_t n,
	       uint32_t flags, uint32_t *done)
{
	return kvtier_batch(pool, KVTIER_IOC_GET, blk, NULL, n, flags, done);
}

int kvtier_lookup(struct kvtier_pool *pool, struct kvtier_block *blk,
		  uint32_t n, uint32_t flags, uint32_t *done)
{
	return kvtier_batch(pool, KVTIER_IOC_LOOKUP, blk, NULL, n, flags, done);
}

int kvtier_drop(struct kvtier_pool *pool, struct kvtier_block *blk, uint32_t n,
		uint32_t flags, uint32_t *done)
{
	return kvtier_batch(pool, KVTIER_IOC_DROP, blk, NULL, n, flags, done);
}

int kvtier_pin(struct kvtier_pool *pool, struct kvtier_block *blk, uint32_t n,
	       uint32_t flags, uint32_t *done)
{
	return kvtier_batch(pool, KVTIER_IOC_PIN, blk, NULL, n, flags, done);
}

int kvtier_unpin(struct kvtier_pool *pool, struct kvtier_block *blk, uint32_t n,
		 uint32_t flags, uint32_t *done)
{
	return kvtier_batch(pool, KVTIER_IOC_UNPIN, blk, NULL, n, flags, done);
}

int kvtier_reserve(struct kvtier_pool *pool, struct kvtier_block *blk,
		   uint32_t n, uint32_t flags, uint32_t *done)
{
	return kvtier_batch(pool, KVTIER_IOC_RESERVE, blk, NULL, n, flags, done);
}

int kvtier_commit(struct kvtier_pool *pool, struct kvtier_block *blk,
		  uint32_t n, uint32_t flags, uint32_t *done)
{
	return kvtier_batch(pool, KVTIER_IOC_COMMIT, blk, NULL, n, flags, done);
}

int kvtier_abort(struct kvtier_pool *pool, struct kvtier_block *blk,
		 uint32_t n, uint32_t flags, uint32_t *done)
{
	return kvtier_batch(pool, KVTIER_IOC_ABORT, blk, NULL, n, flags, done);
}

int kvtier_put_meta(struct kvtier_pool *pool, struct kvtier_block *blk,
		    const struct kvtier_meta *meta, uint32_t n, uint32_t flags,
		    uint32_t *done)
{
	return kvtier_batch(pool, KVTIER_IOC_PUT, blk, meta, n, flags, done);
}

int kvtier_get_meta(struct kvtier_pool *pool, struct kvtier_block *blk,
		    struct kvtier_meta *meta, uint32_t n, uint32_t flags,
		    uint32_t *done)
{
	return kvtier_batch(pool, KVTIER_IOC_GET, blk, meta, n, flags, done);
}

int kvtier_get_part(struct kvtier_pool *pool, struct kvtier_block *blk,
		    struct kvtier_meta *meta, uint32_t n, uint32_t off,
		    uint32_t len, uint32_t *done)
{
	return kvtier_batch_part(pool, KVTIER_IOC_GET, blk, meta, n,
				 KVTIER_GET_PART, off, len, done);
}

void kvtier_part_batch(struct kvtier_batch *b, struct kvtier_block *blk,
		       uint32_t n, uint32_t off, uint32_t len)
{
	memset(b, 0, sizeof(*b));
	b->blocks = (uintptr_t)blk;
	b->count = n;
	b->flags = KVTIER_GET_PART;
	b->part_off = off;
	b->part_len = len;
}

int kvtier_lookup_meta(struct kvtier_pool *pool, struct kvtier_block *blk,
		       struct kvtier_meta *meta, uint32_t n, uint32_t flags,
		       uint32_t *done)
{
	return kvtier_batch(pool, KVTIER_IOC_LOOKUP, blk, meta, n, flags, done);
}

int kvtier_commit_meta(struct kvtier_pool *pool, struct kvtier_block *blk,
		       const struct kvtier_meta *meta, uint32_t n,
		       uint32_t flags, uint32_t *done)
{
	return kvtier_batch(pool, KVTIER_IOC_COMMIT, blk, meta, n, flags, done);
}

int kvtier_meta_set(struct kvtier_meta *m, const void *data, uint32_t len)
{
	memset(m, 0, sizeof(*m));
	if (len > KVTIER_META_MAX)
		return -EMSGSIZE;
	if (len)
		memcpy(m->data, data, len);
	m->len = len;
	return 0;
}

void kvtier_block_set(struct kvtier_block *b, const struct kvtier_key *key,
		      void *buf)
{
	memset(b, 0, sizeof(*b));
	b->key[0] = key->k[0];
	b->key[1] = key->k[1];
	b->buf = (uintptr_t)buf;
	b->addr = KVTIER_ADDR_NONE;
}

void kvtier_block_set_segs(struct kvtier_block *b,
			   const struct kvtier_key *key,
			   const struct kvtier_seg *segs, uint32_t nsegs)
{
	kvtier_block_set(b, key, (void *)segs);
	b->nsegs = nsegs;
}

/* One-entry batch: the whole-batch error, else the entry's status. */
static int kvtier_one(struct kvtier_pool *pool, unsigned long cmd,
		      struct kvtier_block *b, uint32_t flags)
{
	int ret = kvtier_batch(pool, cmd, b, NULL, 1, flags, NULL);

	return ret ? ret : b->status;
}

int kvtier_put1(struct kvtier_pool *pool, const struct kvtier_key *key,
		const void *buf, uint32_t flags)
{
	struct kvtier_block b;

	kvtier_block_set(&b, key, (void *)buf);
	return kvtier_one(pool, KVTIER_IOC_PUT, &b, flags);
}

int kvtier_get1(struct kvtier_pool *pool, const struct kvtier_key *key,
		void *buf)
{
	struct kvtier_block b;

	kvtier_block_set(&b, key, buf);
	return kvtier_one(pool, KVTIER_IOC_GET, &b, 0);
}

int kvtier_lookup1(struct kvtier_pool *pool, const struct kvtier_key *key,
		   uint64_t *addr, unsigned int *tier)
{
	struct kvtier_block b;
	int ret;

	kvtier_block_set(&b, key, NULL);
	ret = kvtier_one(pool, KVTIER_IOC_LOOKUP, &b, 0);
	if (addr)
		*addr = ret ? KVTIER_ADDR_NONE : b.addr;
	if (tier)
		*tier = ret ? KVTIER_TIER_NONE : b.tier;
	return ret;
}

int kvtier_drop1(struct kvtier_pool *pool, const struct kvtier_key *key)
{
	struct kvtier_block b;

	kvtier_block_set(&b, key, NULL);
	return kvtier_one(pool, KVTIER_IOC_DROP, &b, 0);
}

/* ---- mmap -------------------------------------------------------------- */

/*
 * Map @count blocks from @first at file offset @off: the read-only view
 * (PROT_READ) or the reservation window (@writable).
 */
static int map_blocks(struct kvtier_pool *pool, uint64_t first,
		      uint64_t count, uint64_t bytes, uint64_t off,
		      bool writable, struct kvtier_map **mapp)
{
	struct kvtier_map *map = calloc(1, sizeof(*map));
	void *base;

	if (!map)
		return -ENOMEM;
	base = mmap(NULL, bytes, writable ? PROT_READ | PROT_WRITE : PROT_READ,
		    MAP_SHARED, pool->fd, (off_t)off);
	if (base == MAP_FAILED) {
		int ret = -errno;

		free(map);
		return ret;
	}
	map->base = base;
	map->len = bytes;
	map->first = first;
	map->count = count;
	map->block_size = pool->block_size;
	map->writable = writable;
	*mapp = map;
	return 0;
}

int kvtier_map(struct kvtier_pool *pool, uint64_t first, uint64_t count,
	       struct kvtier_map **mapp)
{
	uint64_t bytes;

	if (first >= pool->capacity)
		return -EINVAL;
	if (!count)
		count = pool->capacity - first;
	if (count > pool->capacity - first)
		return -EINVAL;
	if (__builtin_mul_overflow(count, pool->block_size, &bytes) ||
	    bytes > SIZE_MAX ||
	    first > (uint64_t)INT64_MAX / pool->block_size)
		return -EOVERFLOW;
	return map_blocks(pool, first, count, bytes, first * pool->block_size,
			  false, mapp);
}

void kvtier_unmap(struct kvtier_map *map)
{
	if (!map)
		return;
	munmap(map->base, map->len);
	free(map);
}

const void *kvtier_map_base(const struct kvtier_map *map)
{
	return map->base;
}

size_t kvtier_map_len(const struct kvtier_map *map)
{
	return map->len;
}

const void *kvtier_block_ptr(const struct kvtier_map *map, uint64_t addr)
{
	if (addr < map->first || addr - map->first >= map->count)
		return NULL;
	return (const char *)map->base + (addr - map->first) * map->block_size;
}

int kvtier_map_reserved(struct kvtier_pool *pool, struct kvtier_map **mapp)
{
	uint64_t bytes;

	if (__builtin_mul_overflow((uint64_t)pool->capacity, pool->block_size,
				   &bytes) || bytes > SIZE_MAX ||
	    bytes > (uint64_t)INT64_MAX / 2)
		return -EOVERFLOW;
	/* The window: KVTIER_RESERVE_WINDOW(capacity, 0, block_size). */
	return map_blocks(pool, 0, pool->capacity, bytes, bytes, true, mapp);
}

void *kvtier_reserved_ptr(const struct kvtier_map *map, uint64_t addr)
{
	if (!map->writable || addr >= map->count)
		return NULL;
	return (char *)map->base + addr * map->block_size;
}
