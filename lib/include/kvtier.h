/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libkvtier: a thin C library over the kvtier ioctls (uapi/linux/kvtier.h).
 *
 * Every function that can fail returns 0 (or a documented non-negative
 * value) on success and a negative errno on failure; errno itself is never
 * part of the API. Objects (struct kvtier_ctx, struct kvtier_pool,
 * struct kvtier_map) are opaque and own the file descriptors or mappings
 * behind them.
 *
 * A program usually does:
 *
 *	struct kvtier_ctx *ctx;
 *	struct kvtier_pool *pool;
 *	struct kvtier_pool_params p;
 *
 *	kvtier_open(&ctx, KVTIER_F_POOLS | KVTIER_F_MMAP);
 *	kvtier_pool_params_init(&p, "mypool", 256 << 10, 4096);
 *	kvtier_pool_create(ctx, &p, &pool);
 *	... kvtier_lookup(), kvtier_get(), kvtier_put() on
 *	    struct kvtier_block arrays ...
 *	kvtier_pool_close(pool);
 *	kvtier_close(ctx);
 *
 * The library is not thread-safe per object beyond what the kernel gives:
 * the batched commands may be called concurrently on one pool (they are
 * single ioctls), but closing a pool or context while another thread uses
 * it is the caller's bug.
 */
#ifndef KVTIER_LIB_H
#define KVTIER_LIB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/kvtier.h>

#ifdef __cplusplus
extern "C" {
#endif

struct kvtier_ctx;
struct kvtier_pool;
struct kvtier_map;

/**
 * KVTIER_FEATURES_ALL - pass to kvtier_open() to negotiate every feature the
 * running kernel supports (the kernel keeps the bits it has).
 *
 * Every function of a context or of a pool opened through it that needs a
 * feature the context did not negotiate returns -EOPNOTSUPP and does
 * nothing: kvtier_pool_create() with a numa_node (KVTIER_F_NUMA), PUT with
 * KVTIER_PUT_REPLACE (KVTIER_F_REPLACE), kvtier_sync() and the NVMe functions
 * (KVTIER_F_NVME), kvtier_prefetch(), its cancel and eventfd functions
 * (KVTIER_F_PREFETCH), the kvtier_ring_*() commands (KVTIER_F_URING),
 * kvtier_map() (KVTIER_F_MMAP), the HBM functions (KVTIER_F_HBM),
 * scatter-gather entries (KVTIER_F_SG), kvtier_lookup() with
 * KVTIER_LOOKUP_PIN (KVTIER_F_LOOKUP_PIN), the *_meta() functions
 * given records (KVTIER_F_META), and kvtier_events_open() and
 * kvtier_census() (KVTIER_F_EVENTS).
 */
#define KVTIER_FEATURES_ALL	(~0ULL)

/**
 * struct kvtier_key - a 128-bit block key, as in struct kvtier_block.key
 * @k: the two 64-bit halves, k[0] goes to key[0].
 */
struct kvtier_key {
	uint64_t k[2];
};

/**
 * struct kvtier_pool_params - what kvtier_pool_create() asks for
 * @name:	pool name, 1..KVTIER_NAME_MAX-1 bytes of [A-Za-z0-9._-].
 * @block_size:	bytes per block, a multiple of 4096, <= KVTIER_BLOCK_SIZE_MAX.
 * @capacity:	block addresses in the pool, 1..KVTIER_CAPACITY_MAX.
 * @dram_blocks: blocks the pool may keep in DRAM; 0 means @capacity.
 * @mode:	permission bits 0..0777 for other openers; 0 means 0600.
 * @numa_node:	NUMA node of the pool's DRAM, or -1 for the module default.
 * @flags:	KVTIER_POOL_OPEN_EXISTING, KVTIER_POOL_FAULT_NOLOAD (an mmap
 *		fault on a block that is only on NVMe raises SIGBUS instead
 *		of loading it) and/or KVTIER_POOL_RDONLY.
 *
 * Initialise with kvtier_pool_params_init() so that fields added later get
 * their defaults.
 */
struct kvtier_pool_params {
	const char *name;
	uint64_t block_size;
	uint32_t capacity;
	uint32_t dram_blocks;
	uint32_t mode;
	int32_t numa_node;
	uint32_t flags;
};

/* ---- control device ---------------------------------------------------- */

/**
 * kvtier_open() - open /dev/kvtier and do the API handshake
 * @ctxp:	out: the new context.
 * @features:	KVTIER_F_* bits the caller requires, or KVTIER_FEATURES_ALL for
 *		whatever the kernel supports.
 *
 * Opens the control device O_RDWR | O_CLOEXEC once and issues KVTIER_IOC_API
 * with KVTIER_API_VERSION and @features. The context and the pools opened
 * through it can use the features negotiated (kvtier_api_info()'s
 * struct kvtier_api.features) and no others: a command of another fails
 * with -EOPNOTSUPP.
 *
 * Return: 0, or -ENOENT when the module is not loaded, -EOPNOTSUPP when
 * the kernel lacks a feature in @features (other than KVTIER_FEATURES_ALL),
 * -EINVAL when it does not speak KVTIER_API_VERSION, -ENOMEM, or another
 * -errno from open(2)/ioctl(2).
 */
int kvtier_open(struct kvtier_ctx **ctxp, uint64_t features);

/**
 * kvtier_close() - close a context from kvtier_open()
 * @ctx:	the context; NULL is a no-op.
 *
 * Pools opened through @ctx stay valid: they have their own fds.
 */
void kvtier_close(struct kvtier_ctx *ctx);

/**
 * kvtier_ctx_fd() - the control fd of a context
 * @ctx:	the context.
 *
 * Return: the fd, owned by @ctx (do not close it).
 */
int kvtier_ctx_fd(const struct kvtier_ctx *ctx);

/**
 * kvtier_api_info() - the handshake result
 * @ctx:	the context.
 * @api:	out: a copy of struct kvtier_api as the kernel returned it
 *		(negotiated and supported features, command mask, limits).
 *
 * Return: 0.
 */
int kvtier_api_info(const struct kvtier_ctx *ctx, struct kvtier_api *api);

/**
 * kvtier_feature_name() - the name of one feature bit
 * @bit:	a single KVTIER_F_* bit.
 *
 * Return: a static string such as "pools", or NULL for an unknown bit.
 */
const char *kvtier_feature_name(uint64_t bit);

/**
 * kvtier_ioctl_name() - the name of a command by its ioctl number
 * @nr:		_IOC_NR() of the command (the bit index in kvtier_api.ioctls).
 *
 * Return: a static string such as "POOL_CREATE", or NULL if unknown.
 */
const char *kvtier_ioctl_name(unsigned int nr);

/**
 * kvtier_tier_name() - the name of a tier
 * @tier:	KVTIER_TIER_*.
 *
 * Return: "none", "hbm", "dram", "nvme", or "?" for anything else.
 */
const char *kvtier_tier_name(unsigned int tier);

/* ---- pools ------------------------------------------------------------- */

/**
 * kvtier_pool_params_init() - fill pool parameters with defaults
 * @p:		the parameters to fill.
 * @name:	pool name (not copied: must live until kvtier_pool_create()).
 * @block_size:	bytes per block.
 * @capacity:	block addresses.
 *
 * Sets @dram_blocks 0 (= capacity), @mode 0 (= 0600), @numa_node -1 and
 * @flags 0.
 */
void kvtier_pool_params_init(struct kvtier_pool_params *p, const char *name,
			     uint64_t block_size, uint32_t capacity);

/**
 * kvtier_pool_create() - create a pool and open it
 * @ctx:	the context.
 * @p:		the pool's parameters.
 * @poolp:	out: the new pool handle.
 *
 * With KVTIER_POOL_OPEN_EXISTING in @p->flags an existing pool of that name
 * is opened instead (its own configuration wins; read it with
 * kvtier_pool_block_size() or kvtier_stat()).
 *
 * A pool created while an NVMe tier is attached (kvtier_nvme_attach()) is
 * recorded on the device: it persists across module reload and reboot, and
 * comes back by name, with its blocks, at the next attach of that device.
 * Blocks evicted from its DRAM share (@p->dram_blocks) are demoted to NVMe
 * rather than dropped.
 *
 * Return: 0; -EINVAL for a bad name, size, capacity, mode, node or flag;
 * -EEXIST if the name is taken; -EMFILE at max_pools; -ENOSPC if the DRAM
 * budget (dram_mb) cannot hold the DRAM share and the index of @p->capacity
 * addresses (about 100 bytes each), or the device's pool table is full;
 * -EIO if the pool could not be recorded on the device; -ENAMETOOLONG if @p->name does not
 * fit; -ENOMEM.
 */
int kvtier_pool_create(struct kvtier_ctx *ctx,
		       const struct kvtier_pool_params *p,
		       struct kvtier_pool **poolp);

/**
 * kvtier_pool_create_parts() - kvtier_pool_create() for layer-wise loads
 * @ctx:	the context (KVTIER_F_PARTS).
 * @p:		the pool's parameters.
 * @parts:	0, or 2..KVTIER_PARTS_MAX: the parts a block's NVMe copy can
 *		be read in by kvtier_get_part(), each verified on its own
 *		(one per layer, say). A part is block_size / @parts rounded
 *		up to 4096 bytes. Each copy takes one page more on the
 *		device and one more checksum pass when it is written.
 * @poolp:	out: the new pool handle.
 *
 * Return: as kvtier_pool_create(); -EOPNOTSUPP for @parts without
 * KVTIER_F_PARTS; -EINVAL for @parts 1 or above KVTIER_PARTS_MAX.
 */
int kvtier_pool_create_parts(struct kvtier_ctx *ctx,
			     const struct kvtier_pool_params *p,
			     uint32_t parts, struct kvtier_pool **poolp);

/**
 * kvtier_pool_create_compressed() - kvtier_pool_create() for a pool whose
 * NVMe copies are compressed
 * @ctx:	the context (KVTIER_F_COMPRESS).
 * @p:		the pool's parameters.
 * @compress:	KVTIER_COMPRESS_LZ4 (fast), KVTIER_COMPRESS_LZ4HC or
 *		KVTIER_COMPRESS_ZSTD (smaller, slower); 0: none.
 * @flags:	0, or KVTIER_COMPRESS_SHUFFLE2: compress each 16-bit element
 *		as two byte planes (fp16 and bf16 KV).
 * @poolp:	out: the new pool handle.
 *
 * The NVMe writer compresses each block when it writes it (a block that
 * does not save a page is written as it is) and reads decompress it; DRAM
 * holds blocks as they are. kvtier_stat() reports what it saved
 * (z_bytes_in / z_bytes_stored).
 *
 * Return: as kvtier_pool_create(); -EOPNOTSUPP without KVTIER_F_COMPRESS;
 * -EINVAL for an unknown compressor or flag; -ENOPKG when the kernel has
 * no such compressor and cannot load it.
 */
int kvtier_pool_create_compressed(struct kvtier_ctx *ctx,
				  const struct kvtier_pool_params *p,
				  uint32_t compress, uint32_t flags,
				  struct kvtier_pool **poolp);

/**
 * kvtier_pool_open() - open an existing pool by name
 * @ctx:	the context.
 * @name:	pool name.
 * @flags:	0 or KVTIER_POOL_RDONLY.
 * @poolp:	out: the pool handle.
 *
 * Return: 0; -ENOENT for an unknown name; -EACCES when the pool's owner and
 * mode deny the access; -EINVAL for unknown flags; -ENAMETOOLONG; -ENOMEM.
 */
int kvtier_pool_open(struct kvtier_ctx *ctx, const char *name, uint32_t flags,
		     struct kvtier_pool **poolp);

/**
 * kvtier_pool_close() - close a pool handle
 * @pool:	the handle; NULL is a no-op.
 *
 * Closes the pool fd, which drops the pins it holds. The pool itself and
 * its blocks stay until kvtier_pool_destroy(). Mappings made with kvtier_map()
 * stay valid until kvtier_unmap().
 */
void kvtier_pool_close(struct kvtier_pool *pool);

/**
 * kvtier_pool_destroy() - remove a pool by name
 * @ctx:	the context.
 * @name:	pool name.
 *
 * The name disappears at once; the data lives on until the last fd and
 * mapping of the pool are gone.
 *
 * Return: 0; -ENOENT for an unknown name; -EPERM when the caller is neither
 * the owner nor CAP_SYS_ADMIN; -ENAMETOOLONG.
 */
int kvtier_pool_destroy(struct kvtier_ctx *ctx, const char *name);

/**
 * kvtier_pool_fd() - the pool fd
 * @pool:	the pool handle.
 *
 * Return: the fd, owned by @pool (poll it, pass it with SCM_RIGHTS; do not
 * close it).
 */
int kvtier_pool_fd(const struct kvtier_pool *pool);

/**
 * kvtier_pool_block_size() - bytes per block of a pool
 * @pool:	the pool handle.
 *
 * Return: the block size (read from the kernel when the handle was made).
 */
uint64_t kvtier_pool_block_size(const struct kvtier_pool *pool);

/**
 * kvtier_pool_capacity() - block addresses of a pool
 * @pool:	the pool handle.
 *
 * Return: the capacity in blocks.
 */
uint32_t kvtier_pool_capacity(const struct kvtier_pool *pool);

/**
 * kvtier_pool_numa_node() - NUMA node of a pool's DRAM
 * @pool:	the pool handle.
 *
 * Return: the node, or -1 if the pool has no fixed node.
 */
int kvtier_pool_numa_node(const struct kvtier_pool *pool);

/**
 * kvtier_pool_name() - the name the handle was created or opened with
 * @pool:	the pool handle.
 *
 * Return: a NUL-terminated string owned by @pool.
 */
const char *kvtier_pool_name(const struct kvtier_pool *pool);

/**
 * kvtier_stat() - a pool's configuration and counters
 * @pool:	the pool handle.
 * @st:		out: struct kvtier_pool_stat.
 *
 * Return: 0 or -errno from KVTIER_IOC_STAT.
 */
int kvtier_stat(struct kvtier_pool *pool, struct kvtier_pool_stat *st);

/**
 * kvtier_sync() - make a pool's blocks and drops durable on the NVMe tier
 * @pool:	the pool handle (not read-only).
 * @written:	out (optional): blocks written to NVMe by this call; 0 when
 *		the call fails.
 *
 * Writes every block of the pool that has no NVMe copy yet (kvtier_pool_stat
 * .dirty) and waits for the writes. Blocks PUT after the call started may or
 * may not be included. The blocks stay durable as long as the device keeps
 * them: when its log is full it reclaims its oldest region and the blocks
 * only there go, synced or not. That is an eviction, which no kvtier_sync()
 * reports; kvtier_pool_stat .lost_blocks counts it. It also records on the
 * device every kvtier_drop() of the pool made before it and waits: a block
 * dropped before a kvtier_sync() that returns 0 stays dropped after a
 * reload, a reboot or a power cut. A synced block in DRAM has its copy on
 * NVMe too: a pool synced after every request holds about as many distinct
 * blocks as its NVMe share (userspace-api.rst, KVTIER_IOC_SYNC); without a
 * need for durability, leave the writing to eviction.
 *
 * Return: 0; -ENODEV when no NVMe tier is attached; -EBADF on a read-only
 * handle; -EFBIG when the pool's blocks are larger than a region of the
 * device; -ENOSPC when the devices cannot hold them (more dirty blocks than
 * their logs take at once, or the log wrapped all the way round during the
 * call, reclaiming what it wrote); -EIO when a block could not be written,
 * or when a failed write since the previous kvtier_sync() dropped a block
 * that was not yet durable (an eviction could not demote it: acknowledged
 * PUTs are lost), or when a drop could not be recorded and its block may
 * come back (each reported once, as fsync(2) reports a writeback error);
 * -EINTR when killed while waiting.
 */
int kvtier_sync(struct kvtier_pool *pool, uint64_t *written);

/* ---- NVMe tier --------------------------------------------------------- */

/*
 * One block device (an NVMe namespace, or anything with a logical block
 * size of at most 4 KiB) can be attached below DRAM at a time. kvtier keeps
 * a log-structured store on it: blocks evicted from a pool's DRAM share are
 * demoted in large sequential writes and promoted back, verified by a
 * checksum, when a GET, a PIN, a LOOKUP with KVTIER_LOOKUP_LOAD or an mmap
 * fault needs them. The device is opened exclusively; nothing else
 * (a file system, device-mapper) may use it while it is attached.
 *
 * These commands go to the control fd and, except kvtier_nvme_stat(), need
 * CAP_SYS_ADMIN.
 */

/**
 * kvtier_nvme_attach() - attach a block device as the NVMe tier
 * @ctx:	the context (negotiated with KVTIER_F_NVME, or
 *		KVTIER_FEATURES_ALL on a kernel that has it).
 * @path:	path of the block device, e.g. "/dev/nvme0n1".
 * @flags:	0, or KVTIER_NVME_FORMAT to write a new, empty store (every
 *		block and pool recorded on the device is lost).
 * @region_kib:	with KVTIER_NVME_FORMAT: the store's region size in KiB, a
 *		power of two in 1024..65536, or 0 for the default (4096).
 *		Must be 0 without it: an existing store keeps its own.
 *
 * Without KVTIER_NVME_FORMAT a device whose first 4 KiB are zero is
 * formatted, one holding a kvtier store is opened and its pools come back
 * by name with their blocks (the index is rebuilt from the region
 * summaries; kvtier_nvme_stat.attach_ns says how long that took).
 *
 * Return: 0; -EPERM without CAP_SYS_ADMIN; -EBUSY when a device is attached
 * already or @path is in use (mounted, claimed by another driver);
 * -EMEDIUMTYPE when the device holds something else than a kvtier store
 * (format it to use it); -EINVAL for bad flags, a bad @region_kib, a store
 * of another format version, or a logical block size over 4 KiB; -ENOSPC
 * when the device is too small for two regions; -ENOPKG when a pool on it
 * compresses with a compressor the kernel cannot load; -ENOTBLK, -ENOENT
 * and the like from opening @path; -EIO; -ENOMEM.
 */
int kvtier_nvme_attach(struct kvtier_ctx *ctx, const char *path, uint32_t flags,
		       uint32_t region_kib);

/**
 * kvtier_nvme_detach() - detach every NVMe device
 * @ctx:	the context.
 *
 * Writes back the blocks of persistent pools that have no NVMe copy yet,
 * waits for every I/O, then forgets the blocks that were only on NVMe
 * (their pools stay, with what they have in DRAM). The devices can then be
 * used by others, or attached again.
 *
 * Return: 0; -EPERM without CAP_SYS_ADMIN; -ENODEV when none is attached.
 */
int kvtier_nvme_detach(struct kvtier_ctx *ctx);

/**
 * kvtier_nvme_detach_path() - detach one NVMe device
 * @ctx:	the context.
 * @path:	the device, as attached or by another name of the same node.
 *
 * With other devices attached, dirty blocks stay in DRAM; the blocks whose
 * copy is only on this device are forgotten (they come back when it is
 * attached again). With the last device it is kvtier_nvme_detach().
 *
 * Return: 0; -EPERM; -ENODEV when that device is not attached; -ENOENT or
 * -ENOTBLK for a path that names no block device.
 */
int kvtier_nvme_detach_path(struct kvtier_ctx *ctx, const char *path);

/**
 * kvtier_nvme_stat() - the NVMe tier's state and counters
 * @ctx:	the context.
 * @st:		out: struct kvtier_nvme_stat; all zero (attached == 0) when no
 *		device is attached.
 *
 * Counters (bytes_written, bytes_demoted, bytes_read, ...) count from the
 * attach. bytes_written / bytes_demoted is the tier's host write
 * amplification (region summaries, superblock and pool table updates).
 *
 * Return: 0, or -errno from KVTIER_IOC_NVME_STAT (-ENOTTY on a kernel
 * without the NVMe tier).
 */
int kvtier_nvme_stat(struct kvtier_ctx *ctx, struct kvtier_nvme_stat *st);

/**
 * kvtier_nvme_stat_dev() - one NVMe device's state and counters
 * @ctx:	the context.
 * @index:	0..KVTIER_NVME_MAX-1.
 * @st:		out: as kvtier_nvme_stat() for that device alone, with its
 *		dev_major and dev_minor; attached == 0 when the index is not
 *		in use.
 *
 * kvtier_nvme_stat() sums the devices (attached is their number).
 *
 * Return: 0, -EINVAL for an index out of range, or another -errno.
 */
int kvtier_nvme_stat_dev(struct kvtier_ctx *ctx, unsigned int index,
			 struct kvtier_nvme_stat *st);

/* ---- batched block commands -------------------------------------------- */

/*
 * The batched commands take an array of struct kvtier_block. The caller sets
 * key (kvtier_block_set() helps), buf (PUT and GET: a buffer of block_size
 * bytes; other commands: 0) and nsegs = 0 (kvtier_block_set_segs() sets a
 * scatter-gather entry); the kernel fills addr, status and tier of every
 * entry.
 *
 * @n may exceed KVTIER_BATCH_MAX: the library then issues several ioctls of
 * at most the kernel's batch_max entries each, in order. A whole-batch error
 * (the function's return value) then only says that the failing chunk and
 * those after it were not run; earlier chunks took effect.
 *
 * @done, when not NULL, receives the number of entries with status 0 (for
 * kvtier_lookup(): the length of the longest resident prefix).
 *
 * Return (all of them): 0 when every entry has its status (look at each
 * entry's status for per-key errors); -EINVAL for n == 0, bad flags or
 * nonzero reserved fields; -EFAULT for a bad array; -EBADF for PUT or DROP
 * on a read-only pool handle; another -errno from ioctl(2).
 */

/**
 * kvtier_put() - copy blocks into the pool
 * @pool:	the pool handle.
 * @blk:	entries: key and buf in.
 * @n:		number of entries.
 * @flags:	0 or KVTIER_PUT_REPLACE.
 * @done:	out (optional): entries stored.
 *
 * Per-entry status: -EEXIST (key present, no REPLACE), -ENOSPC (nothing
 * evictable: DRAM all pinned or in use, or all of the pool's capacity
 * addresses hold blocks, those only on NVMe included, which are never
 * dropped to make room), -ENOMEM, -EFAULT (bad buf), -EBUSY (replace of a
 * block in use).
 *
 * Return: see above.
 */
int kvtier_put(struct kvtier_pool *pool, struct kvtier_block *blk, uint32_t n,
	       uint32_t flags, uint32_t *done);

/**
 * kvtier_get() - copy blocks out of the pool
 * @pool:	the pool handle.
 * @blk:	entries: key and buf in.
 * @n:		number of entries.
 * @flags:	0, or KVTIER_GET_DIRECT (KVTIER_F_DIRECT).
 * @done:	out (optional): entries copied.
 *
 * A block that is only on NVMe is read back into DRAM first (the reads of
 * a batch are issued ahead of the copies, so a batch is also the queue
 * depth); it then counts in kvtier_pool_stat.promotions. A copy that fails
 * its checksum is never served: the entry is a miss and bad_reads counts it.
 *
 * With KVTIER_GET_DIRECT, a block only on NVMe whose buffer (or each
 * segment) is page-aligned and whole pages long is read by the device
 * straight into it, verified there, and stays on NVMe (entry tier
 * KVTIER_TIER_NVME): no DRAM, no copy. Other blocks are read as without
 * the flag. -EOPNOTSUPP for the batch without KVTIER_F_DIRECT.
 *
 * Per-entry status: -ENOENT (miss), -EFAULT (bad buf), -ENOSPC (no DRAM
 * could be freed for a block on NVMe), -EIO, -EINTR.
 *
 * Return: see above.
 */
int kvtier_get(struct kvtier_pool *pool, struct kvtier_block *blk, uint32_t n,
	       uint32_t flags, uint32_t *done);

/**
 * kvtier_get_part() - copy one byte range of each block out of the pool
 * @pool:	the pool handle (KVTIER_F_PARTS).
 * @blk:	entries: key in, and buf (or nsegs segments) of @len bytes.
 * @meta:	NULL, or out: @n records, as kvtier_get_meta() fills them.
 * @n:		number of entries.
 * @off:	the range's first byte in each block.
 * @len:	its length: nonzero, @off + @len <= block size.
 * @done:	out (optional): entries copied.
 *
 * The layer-wise load: a runtime whose blocks hold its layers one after
 * the other asks for layer L's range of every block of a chain, then
 * L + 1's, and computes layer L while L + 1 is read; through a ring
 * (kvtier_part_batch()) each layer completes on its own. Blocks in DRAM
 * are copied from DRAM. A block only on NVMe, in a pool made with parts
 * (kvtier_pool_create_parts()), is read in the parts that cover the
 * range, each verified against its copy's table, and stays on NVMe
 * (kvtier_pool_stat.part_reads counts them); one whose copy has no table
 * is read whole into DRAM first, like kvtier_get().
 *
 * Return: 0; -EINVAL for a range out of the block or @len 0; -EOPNOTSUPP
 * without KVTIER_F_PARTS; else as kvtier_get(), per entry.
 */
int kvtier_get_part(struct kvtier_pool *pool, struct kvtier_block *blk,
		    struct kvtier_meta *meta, uint32_t n, uint32_t off,
		    uint32_t len, uint32_t *done);

/**
 * kvtier_part_batch() - a GET of one range of each block, for a ring
 * @b:		out: the batch, to give kvtier_ring_queue() with
 *		KVTIER_IOC_GET.
 * @blk:	@n entries, as for kvtier_get_part().
 * @n:		1..batch_max entries.
 * @off:	the range's first byte in each block.
 * @len:	its length.
 */
void kvtier_part_batch(struct kvtier_batch *b, struct kvtier_block *blk,
		       uint32_t n, uint32_t off, uint32_t len);

/**
 * kvtier_lookup() - where a chain of keys lives
 * @pool:	the pool handle.
 * @blk:	entries: key in, buf 0; addr and tier out.
 * @n:		number of entries (a prefix chain, first block first).
 * @flags:	0, KVTIER_LOOKUP_TOUCH (count resident blocks as used) and/or
 *		KVTIER_LOOKUP_LOAD (bring the resident prefix into DRAM,
 *		reading the blocks that are only on NVMe, before returning)
 *		or KVTIER_LOOKUP_PIN (bring it into DRAM and pin each block
 *		of it for this handle, as kvtier_pin() does; needs
 *		KVTIER_F_LOOKUP_PIN).
 * @done:	out (optional): the longest resident prefix of the chain,
 *		counted across chunks when @n exceeds batch_max.
 *
 * A block counts as resident in any tier: tier says which (KVTIER_TIER_DRAM
 * or KVTIER_TIER_NVME). With KVTIER_LOOKUP_LOAD the prefix entries say
 * KVTIER_TIER_DRAM on return, and the prefix ends early at a block that
 * could not be loaded (its status says why: -ENOENT when its copy did not
 * verify, -ENOSPC, -EIO).
 *
 * With KVTIER_LOOKUP_PIN the prefix is also pinned, block by block from the
 * first, so nothing it found can be evicted before the runtime has read it
 * (through kvtier_map(), or a DMA registration of that memory); @done is
 * the number of blocks pinned, and kvtier_unpin() releases them. The prefix
 * ends at the first block that could not be pinned (its status: -ENOENT
 * when it was dropped meanwhile or did not verify, -ENOSPC when every DRAM
 * block is pinned, -EIO, -EOVERFLOW); the entries after it are looked up
 * only. Across chunks (@n above batch_max) only the chunks up to the first
 * incomplete one load and pin.
 *
 * Per-entry status: -ENOENT (not resident).
 *
 * Return: see above.
 */
int kvtier_lookup(struct kvtier_pool *pool, struct kvtier_block *blk,
		  uint32_t n, uint32_t flags, uint32_t *done);

/**
 * kvtier_drop() - remove blocks
 * @pool:	the pool handle.
 * @blk:	entries: key in, buf 0.
 * @n:		number of entries.
 * @flags:	0.
 * @done:	out (optional): entries dropped.
 *
 * Per-entry status: -ENOENT, -EBUSY (pinned). A drop is durable once a
 * kvtier_sync() of the pool returns 0 after it: from then on the block does
 * not come back after a module reload, a reboot or a power cut; until then
 * it may, with its old bytes.
 *
 * Return: see above.
 */
int kvtier_drop(struct kvtier_pool *pool, struct kvtier_block *blk, uint32_t n,
		uint32_t flags, uint32_t *done);

/**
 * kvtier_pin() - keep blocks resident while this pool handle is open
 * @pool:	the pool handle.
 * @blk:	entries: key in, buf 0.
 * @n:		number of entries.
 * @flags:	0.
 * @done:	out (optional): entries pinned.
 *
 * Pins belong to the pool fd and vanish when it is closed. A block only on
 * NVMe is loaded into DRAM first (pinned blocks stay in DRAM). Per-entry
 * status: -ENOENT, -ENOSPC (no DRAM could be freed), -EIO.
 *
 * Return: see above.
 */
int kvtier_pin(struct kvtier_pool *pool, struct kvtier_block *blk, uint32_t n,
	       uint32_t flags, uint32_t *done);

/**
 * kvtier_unpin() - release pins taken with kvtier_pin() on this handle
 * @pool:	the pool handle.
 * @blk:	entries: key in, buf 0.
 * @n:		number of entries.
 * @flags:	0.
 * @done:	out (optional): entries unpinned.
 *
 * Per-entry status: -ENOENT (unknown key), -EINVAL (not pinned by this fd).
 *
 * Return: see above.
 */
int kvtier_unpin(struct kvtier_pool *pool, struct kvtier_block *blk, uint32_t n,
		 uint32_t flags, uint32_t *done);

/**
 * kvtier_block_set() - fill one batch entry
 * @b:		the entry (every field is written).
 * @key:	its key.
 * @buf:	PUT/GET buffer, or NULL for the other commands.
 */
void kvtier_block_set(struct kvtier_block *b, const struct kvtier_key *key,
		      void *buf);

/**
 * kvtier_block_set_segs() - fill one PUT or GET entry whose block is spread
 * over several buffers (scatter-gather: one per layer and K/V, say)
 * @b:		the entry (every field is written).
 * @key:	its key.
 * @segs:	@nsegs segments, copied in this order; their lengths add up to
 *		the pool's block size. They must stay valid until the command
 *		returns.
 * @nsegs:	1 to KVTIER_SEGS_MAX.
 *
 * The kernel copies once, straight between the segments and the block. It
 * needs KVTIER_F_SG negotiated (kvtier_open()): else the batch fails with
 * -EOPNOTSUPP. The entry's status: -EINVAL for lengths that do not add up
 * or a zero-length segment, -E2BIG for more than KVTIER_SEGS_MAX, -EFAULT
 * for a list or segment that cannot be read (PUT) or written (GET); a PUT
 * that fails stores nothing.
 */
void kvtier_block_set_segs(struct kvtier_block *b,
			   const struct kvtier_key *key,
			   const struct kvtier_seg *segs, uint32_t nsegs);

/**
 * kvtier_put1() - PUT one block
 * @pool:	the pool handle.
 * @key:	its key.
 * @buf:	block_size bytes.
 * @flags:	0 or KVTIER_PUT_REPLACE.
 *
 * Return: 0, the entry's status (e.g. -EEXIST) or a whole-batch -errno.
 */
int kvtier_put1(struct kvtier_pool *pool, const struct kvtier_key *key,
		const void *buf, uint32_t flags);

/**
 * kvtier_get1() - GET one block
 * @pool:	the pool handle.
 * @key:	its key.
 * @buf:	out: block_size bytes.
 *
 * Return: 0, -ENOENT on a miss, or another -errno.
 */
int kvtier_get1(struct kvtier_pool *pool, const struct kvtier_key *key,
		void *buf);

/**
 * kvtier_lookup1() - LOOKUP one block
 * @pool:	the pool handle.
 * @key:	its key.
 * @addr:	out (optional): block address, or KVTIER_ADDR_NONE.
 * @tier:	out (optional): KVTIER_TIER_*.
 *
 * Return: 0 when resident, -ENOENT when not, or another -errno.
 */
int kvtier_lookup1(struct kvtier_pool *pool, const struct kvtier_key *key,
		   uint64_t *addr, unsigned int *tier);

/**
 * kvtier_drop1() - DROP one block
 * @pool:	the pool handle.
 * @key:	its key.
 *
 * Return: 0, -ENOENT, -EBUSY, or another -errno.
 */
int kvtier_drop1(struct kvtier_pool *pool, const struct kvtier_key *key);

/* ---- zero-copy store: reserve, fill, commit ------------------------------ */

/**
 * kvtier_reserve() - take blocks for new keys, to fill in place
 * @pool:	the pool handle, opened read-write.
 * @blk:	@n entries: in, each key (buf 0); out, status, addr (the
 *		block's address) and tier.
 * @n:		1..KVTIER_BATCH_MAX.
 * @flags:	0, or KVTIER_PUT_REPLACE to reserve keys in the pool too.
 * @done:	out: entries reserved.
 *
 * Each reserved block belongs to this handle until kvtier_commit() or
 * kvtier_abort(), or until the handle is closed; no reader sees it. Fill it
 * through kvtier_map_reserved() (or a DMA registration of that memory).
 * Entry status: -EEXIST (the key is in the pool), -EDQUOT (the handle holds
 * the most reservations, module parameter reserve_max), -ENOSPC (the pool's
 * reservations hold half its DRAM share, or no DRAM can be freed),
 * -ENOMEM.
 *
 * Return: 0 (see each entry), or -EBADF for a read-only handle,
 * -EOPNOTSUPP without KVTIER_F_RESERVE, -EINVAL for a bad batch.
 */
int kvtier_reserve(struct kvtier_pool *pool, struct kvtier_block *blk,
		   uint32_t n, uint32_t flags, uint32_t *done);

/**
 * kvtier_commit() - publish reserved blocks under their keys
 * @pool:	the pool handle that reserved them.
 * @blk:	@n entries: in, key and addr as kvtier_reserve() left them.
 * @n:		1..KVTIER_BATCH_MAX.
 * @flags:	0, or KVTIER_PUT_REPLACE to replace blocks of the keys.
 * @done:	out: entries committed.
 *
 * The blocks' pages leave the reservation window and the keys become
 * visible at once, as a PUT would make them, without a copy. Call it only
 * after every write into the blocks has ended. Entry status: -ENOENT (no
 * reservation of that key at that address), -EALREADY (committed already),
 * -EEXIST (the key was stored meanwhile; the reservation stays), -EBUSY
 * (replacing a pinned block; it stays too).
 *
 * Return: as kvtier_reserve().
 */
int kvtier_commit(struct kvtier_pool *pool, struct kvtier_block *blk,
		  uint32_t n, uint32_t flags, uint32_t *done);

/**
 * kvtier_abort() - give reserved blocks back
 * @pool:	the pool handle that reserved them.
 * @blk:	@n entries: in, key and addr.
 * @n:		1..KVTIER_BATCH_MAX.
 * @flags:	0.
 * @done:	out: entries given back.
 *
 * Entry status: -ENOENT, -EALREADY, as kvtier_commit().
 *
 * Return: as kvtier_reserve().
 */
int kvtier_abort(struct kvtier_pool *pool, struct kvtier_block *blk,
		 uint32_t n, uint32_t flags, uint32_t *done);

/**
 * kvtier_map_reserved() - map the handle's reservation window read-write
 * @pool:	the pool handle.
 * @mapp:	out: the mapping; free it with kvtier_unmap().
 *
 * Block address a's writable bytes are at kvtier_reserved_ptr(map, a) while
 * this handle holds a reserved; touching any other block there raises
 * SIGBUS. The mapping is not inherited by fork().
 *
 * Return: 0; -EOPNOTSUPP without KVTIER_F_RESERVE; -EACCES for a read-only
 * handle; -EOVERFLOW when the window does not fit the address space;
 * -ENOMEM; another -errno from mmap(2).
 */
int kvtier_map_reserved(struct kvtier_pool *pool, struct kvtier_map **mapp);

/**
 * kvtier_reserved_ptr() - where a reserved block is writable
 * @map:	a mapping from kvtier_map_reserved().
 * @addr:	the block address kvtier_reserve() gave.
 *
 * Return: the block's first byte, or NULL when @addr is beyond the capacity
 * or @map is not a reservation window.
 */
void *kvtier_reserved_ptr(const struct kvtier_map *map, uint64_t addr);

/* ---- block metadata ------------------------------------------------------ */

/*
 * With KVTIER_F_META each block may carry a record of up to KVTIER_META_MAX
 * bytes of the caller's (struct kvtier_meta): the token count, the dtype,
 * a fingerprint of the model and tokenizer that computed the block. It is
 * given when the block is made (kvtier_put_meta(), kvtier_commit_meta(),
 * kvtier_adopt_meta()), returned with it (kvtier_get_meta(),
 * kvtier_lookup_meta()), fixed for the block's life and kept with it in
 * every tier, NVMe and across reload included. The kernel never reads it:
 * comparing it with the runtime's own is the caller's job, and a block
 * whose record is not the runtime's should be treated as a miss.
 *
 * @meta is an array of @n records, entry i's at index i, split into
 * chunks with @blk when @n exceeds batch_max. A NULL @meta is the plain
 * command. Without KVTIER_F_META negotiated a non-NULL @meta fails the
 * batch with -EOPNOTSUPP.
 */

/**
 * kvtier_meta_set() - fill a metadata record
 * @m:		the record (every byte is written).
 * @data:	the record's bytes, or NULL with @len 0.
 * @len:	0..KVTIER_META_MAX; 0: no record.
 *
 * Return: 0, or -EMSGSIZE for @len above KVTIER_META_MAX (@m is then an
 * empty record).
 */
int kvtier_meta_set(struct kvtier_meta *m, const void *data, uint32_t len);

/**
 * kvtier_put_meta() - kvtier_put() storing a record with each block
 * @pool:	the pool handle.
 * @blk:	entries: key and buf in.
 * @meta:	@n records, in; a record of len 0 stores none.
 * @n:		number of entries.
 * @flags:	0 or KVTIER_PUT_REPLACE (the key's new block gets the new
 *		record, or none).
 * @done:	out (optional): entries stored.
 *
 * Per-entry status: as kvtier_put(), and -EMSGSIZE for a record whose len
 * is above KVTIER_META_MAX (nothing stored for that entry).
 *
 * Return: as kvtier_put(); -EINVAL for a record with nonzero flags (nothing
 * stored); -EFAULT for an unreadable @meta (nothing stored); -EOPNOTSUPP
 * without KVTIER_F_META.
 */
int kvtier_put_meta(struct kvtier_pool *pool, struct kvtier_block *blk,
		    const struct kvtier_meta *meta, uint32_t n, uint32_t flags,
		    uint32_t *done);

/**
 * kvtier_get_meta() - kvtier_get() returning each block's record
 * @pool:	the pool handle.
 * @blk:	entries: key and buf in.
 * @meta:	out: @n records; entry i's block's record for each entry of
 *		status 0 (len 0 when it has none), an empty record for the
 *		others. Bytes past len and flags are 0.
 * @n:		number of entries.
 * @flags:	0.
 * @done:	out (optional): entries copied.
 *
 * The record and the bytes come from the same block, even when a REPLACE
 * runs at the same time.
 *
 * Return: as kvtier_get(); -EFAULT for an unwritable @meta (nothing done);
 * -EOPNOTSUPP without KVTIER_F_META.
 */
int kvtier_get_meta(struct kvtier_pool *pool, struct kvtier_block *blk,
		    struct kvtier_meta *meta, uint32_t n, uint32_t flags,
		    uint32_t *done);

/**
 * kvtier_lookup_meta() - kvtier_lookup() returning each block's record
 * @pool:	the pool handle.
 * @blk:	entries: key in, buf 0; addr and tier out.
 * @meta:	out: @n records, as kvtier_get_meta() fills them.
 * @n:		number of entries.
 * @flags:	as kvtier_lookup().
 * @done:	out (optional): as kvtier_lookup().
 *
 * A scheduler checks the records of the resident prefix before it counts
 * the prefix as a hit: the first block whose record is not the runtime's
 * ends it (and with KVTIER_LOOKUP_PIN the blocks from there on are to be
 * unpinned).
 *
 * Return: as kvtier_lookup(); -EFAULT for an unwritable @meta (nothing
 * done); -EOPNOTSUPP without KVTIER_F_META.
 */
int kvtier_lookup_meta(struct kvtier_pool *pool, struct kvtier_block *blk,
		       struct kvtier_meta *meta, uint32_t n, uint32_t flags,
		       uint32_t *done);

/**
 * kvtier_commit_meta() - kvtier_commit() giving each block a record
 * @pool:	the pool handle that reserved the blocks.
 * @blk:	entries: key and addr in, as kvtier_reserve() left them.
 * @meta:	@n records, in.
 * @n:		1..KVTIER_BATCH_MAX.
 * @flags:	0 or KVTIER_PUT_REPLACE.
 * @done:	out (optional): entries committed.
 *
 * Per-entry status: as kvtier_commit(), and -EMSGSIZE for a record above
 * KVTIER_META_MAX (that entry is not committed).
 *
 * Return: as kvtier_commit(); -EINVAL for a record with nonzero flags;
 * -EFAULT for an unreadable @meta; -EOPNOTSUPP without KVTIER_F_META
 * (nothing committed for any of them).
 */
int kvtier_commit_meta(struct kvtier_pool *pool, struct kvtier_block *blk,
		       const struct kvtier_meta *meta, uint32_t n,
		       uint32_t flags, uint32_t *done);

/**
 * kvtier_adopt_meta() - kvtier_adopt() giving each block a record
 * @pool:	the pool handle.
 * @e:		@n entries: key and slot in; status and addr out.
 * @meta:	@n records, in.
 * @n:		1..batch_max.
 * @done:	out (optional): entries adopted.
 *
 * Per-entry status: as kvtier_adopt(), and -EMSGSIZE for a record above
 * KVTIER_META_MAX (that block is not adopted).
 *
 * Return: as kvtier_adopt(); -EINVAL for a record with nonzero flags;
 * -EFAULT for an unreadable @meta; -EOPNOTSUPP without KVTIER_F_META.
 */
int kvtier_adopt_meta(struct kvtier_pool *pool, struct kvtier_adopt *e,
		      const struct kvtier_meta *meta, uint32_t n,
		      uint32_t *done);

/* ---- mmap -------------------------------------------------------------- */

/**
 * kvtier_map() - map a range of a pool's block addresses read-only
 * @pool:	the pool handle.
 * @first:	first block address of the range.
 * @count:	block addresses in the range; 0 means up to the capacity.
 * @mapp:	out: the mapping.
 *
 * Block address a (first <= a < first + count) is at
 * kvtier_block_ptr(map, a). Touching a block that is only on NVMe loads it
 * (or raises SIGBUS in a pool created with KVTIER_POOL_FAULT_NOLOAD);
 * touching an address that holds no block raises SIGBUS. Look the key up
 * first and keep it pinned (kvtier_pin()) while it is read, or eviction may
 * take it away under the reader.
 *
 * Return: 0; -EINVAL when the range is empty or beyond the capacity;
 * -EOVERFLOW when it does not fit the address space; -EOPNOTSUPP without
 * KVTIER_F_MMAP; -ENOMEM; another -errno from mmap(2).
 */
int kvtier_map(struct kvtier_pool *pool, uint64_t first, uint64_t count,
	       struct kvtier_map **mapp);

/**
 * kvtier_unmap() - undo kvtier_map()
 * @map:	the mapping; NULL is a no-op.
 */
void kvtier_unmap(struct kvtier_map *map);

/**
 * kvtier_map_base() - start of a mapping
 * @map:	the mapping.
 *
 * Return: the address of block @first given to kvtier_map().
 */
const void *kvtier_map_base(const struct kvtier_map *map);

/**
 * kvtier_map_len() - length of a mapping in bytes
 * @map:	the mapping.
 *
 * Return: count * block_size.
 */
size_t kvtier_map_len(const struct kvtier_map *map);

/**
 * kvtier_block_ptr() - where a block address lies in a mapping
 * @map:	the mapping.
 * @addr:	a block address, e.g. struct kvtier_block.addr from a LOOKUP.
 *
 * Return: the block's first byte, or NULL when @addr is outside the
 * mapped range (KVTIER_ADDR_NONE included).
 */
const void *kvtier_block_ptr(const struct kvtier_map *map, uint64_t addr);

/* ---- staging buffers (libnuma) ----------------------------------------- */

/**
 * kvtier_alloc_staging() - allocate a buffer near a pool's DRAM
 * @pool:	the pool whose NUMA node the buffer should sit on.
 * @size:	bytes, > 0.
 * @bufp:	out: the buffer, page-aligned, not yet touched.
 *
 * Uses numa_alloc_onnode() when the pool has a node (>= 0) and the system
 * has NUMA support (numa_available() >= 0); otherwise page-aligned
 * memory from posix_memalign(). Free with kvtier_free_staging() on the same
 * pool with the same @size.
 *
 * Return: 0, -EINVAL for @size 0, or -ENOMEM.
 */
int kvtier_alloc_staging(struct kvtier_pool *pool, size_t size, void **bufp);

/**
 * kvtier_free_staging() - free a buffer from kvtier_alloc_staging()
 * @pool:	the pool given to kvtier_alloc_staging().
 * @buf:	the buffer; NULL is a no-op.
 * @size:	the size given to kvtier_alloc_staging().
 */
void kvtier_free_staging(struct kvtier_pool *pool, void *buf, size_t size);

/* ---- keys -------------------------------------------------------------- */

/**
 * kvtier_key_chain() - the key of the next block of a prefix chain
 * @prev:	key of the previous block, or NULL for the first block.
 * @id:		identifier of this block's content (e.g. a hash of its
 *		tokens, or a Mooncake trace hash_id).
 * @out:	out: the key (may alias @prev).
 *
 * With fmix64() the MurmurHash3 64-bit finaliser
 *	(x ^= x >> 33; x *= 0xff51afd7ed558ccd; x ^= x >> 33;
 *	 x *= 0xc4ceb9fe1a85ec53; x ^= x >> 33),
 * p = *prev (or {0, 0} for NULL) and h = fmix64(id ^ 0x9e3779b97f4a7c15):
 *	out.k[0] = fmix64(p.k[0] ^ h)
 *	out.k[1] = fmix64(p.k[1] + out.k[0] + 0x6a09e667f3bcc909)
 * so a block's key depends on its id and every id before it. Deterministic
 * and fast, not collision-resistant against an adversary: a runtime that
 * shares pools between tenants should derive keys from a cryptographic hash
 * of the tokens instead (the kernel does not care how keys are made).
 */
void kvtier_key_chain(const struct kvtier_key *prev, uint64_t id,
		      struct kvtier_key *out);

/**
 * kvtier_key_chain_n() - the keys of a whole chain
 * @prev:	key before the first id, or NULL to start a chain.
 * @ids:	block ids, first block first.
 * @n:		number of ids.
 * @out:	out: @n keys; out[i] = kvtier_key_chain(out[i - 1], ids[i]).
 */
void kvtier_key_chain_n(const struct kvtier_key *prev, const uint64_t *ids,
			size_t n, struct kvtier_key *out);

/* ---- prefetch ------------------------------------------------------------ */

/**
 * kvtier_now_ns() - CLOCK_MONOTONIC now, in nanoseconds: the clock of deadlines
 *
 * Return: the time.
 */
uint64_t kvtier_now_ns(void);

/**
 * kvtier_hint_set() - fill a prefetch hint for a key
 * @h:		the hint (zeroed first).
 * @key:	the block's key.
 */
void kvtier_hint_set(struct kvtier_hint *h, const struct kvtier_key *key);

/**
 * struct kvtier_prefetch_args - a prefetch group's parameters
 * @group:	nonzero id, unique among the pool handle's live groups.
 * @cookie:	returned in the group's completion.
 * @deadline_ns: CLOCK_MONOTONIC time by which the blocks should be in the
 *		tier (kvtier_now_ns() + budget); 0: as soon as possible.
 * @flags:	KVTIER_PREFETCH_ADDR, KVTIER_PREFETCH_CANCEL_LATE,
 *		KVTIER_PREFETCH_BACKGROUND (after every other group).
 * @priority:	0..KVTIER_PRIO_MAX, higher first among equal deadlines.
 * @tier:	target tier; 0 means KVTIER_TIER_DRAM.
 */
struct kvtier_prefetch_args {
	uint64_t group;
	uint64_t cookie;
	uint64_t deadline_ns;
	uint32_t flags;
	uint32_t priority;
	uint32_t tier;
};

/**
 * kvtier_prefetch() - ask for a request's blocks to be staged by a deadline
 * @pool:	the pool handle.
 * @hints:	@n hints in chain order (kvtier_hint_set()); status, tier and
 *		addr come back per hint (-ENOENT: no such block, dropped).
 * @n:		1..batch_max.
 * @a:		the group's parameters.
 * @queued:	out (optional): hints that need a read.
 * @resident:	out (optional): hints already in the tier.
 *
 * Returns at once; the group's end is a struct kvtier_completion read by
 * kvtier_completions() or kvtier_wait_group() (or poll(2)/read(2) on
 * kvtier_pool_fd(), or an eventfd, kvtier_eventfd()). Staged blocks are
 * protected from eviction until used (a GET, a PIN, a LOOKUP with TOUCH, a
 * fault).
 *
 * Return: 0; -EINVAL (count, flags, group 0, tier, priority, a hint's flags
 * or reserved nonzero: fill hints with kvtier_hint_set()); -EOPNOTSUPP (HBM
 * target on a pool without a device tier; the context did not negotiate
 * KVTIER_F_PREFETCH, or KVTIER_F_HBM for an HBM target); -ETIME (KVTIER_PREFETCH_CANCEL_LATE and a deadline past); -EEXIST
 * (group id live); -EAGAIN (KVTIER_PREFETCH_GROUPS_MAX groups live or
 * completions unread); -EFAULT; -ENOMEM.
 */
int kvtier_prefetch(struct kvtier_pool *pool, struct kvtier_hint *hints,
		    uint32_t n, const struct kvtier_prefetch_args *a,
		    uint32_t *queued, uint32_t *resident);

/**
 * kvtier_cancel() - withdraw a prefetch group, or all of the handle's
 * @pool:	the pool handle.
 * @group:	the group; 0 with KVTIER_CANCEL_ALL.
 * @flags:	0 or KVTIER_CANCEL_ALL.
 * @cancelled:	out (optional): groups that had not ended (each gets a
 *		-ECANCELED completion).
 *
 * Return: 0; -ENOENT (no live group with that id); -EINVAL.
 */
int kvtier_cancel(struct kvtier_pool *pool, uint64_t group, uint32_t flags,
		  uint32_t *cancelled);

/**
 * kvtier_eventfd() - signal an eventfd at every prefetch completion
 * @pool:	the pool handle.
 * @efd:	an eventfd(2), or -1 to stop.
 *
 * Return: 0; -EBADF; -EINVAL (not an eventfd).
 */
int kvtier_eventfd(struct kvtier_pool *pool, int efd);

/**
 * kvtier_completions() - read prefetch completions
 * @pool:	the pool handle.
 * @c:		out: up to @max records.
 * @max:	room in @c (>= 1).
 * @timeout_ms:	how long to wait for the first; 0: not at all; -1: forever.
 *
 * Records put aside by kvtier_wait_group() come first.
 *
 * Return: the number of records (0 when the wait ended without one), or
 * -errno.
 */
int kvtier_completions(struct kvtier_pool *pool, struct kvtier_completion *c,
		       uint32_t max, int timeout_ms);

/**
 * kvtier_wait_group() - wait for one group's completion
 * @pool:	the pool handle.
 * @group:	the group.
 * @out:	out: its completion.
 * @timeout_ms:	-1: forever.
 *
 * Completions of other groups read meanwhile are kept for
 * kvtier_completions().
 *
 * Return: 0; -ETIMEDOUT; -ENOMEM; another -errno.
 */
int kvtier_wait_group(struct kvtier_pool *pool, uint64_t group,
		      struct kvtier_completion *out, int timeout_ms);

struct kvtier_ring;

/**
 * kvtier_request_ready() - have a request's cached prefix in DRAM
 * @pool:	the pool handle.
 * @ring:	an idle ring (kvtier_ring_open()) to send LOOKUP and PREFETCH
 *		through, or NULL for ioctls.
 * @keys:	the request's chain of keys, first block first.
 * @n:		1..batch_max keys.
 * @deadline_ns: when the blocks are needed (CLOCK_MONOTONIC), 0: asap.
 * @timeout_ms:	longest wait for the prefetch; -1: forever.
 * @ready:	out: blocks of the prefix in DRAM at the end (0 on error).
 *
 * The flow of a runtime's scheduler for one request: LOOKUP the chain (the
 * prefix cached in any tier); if part of it is only on NVMe, PREFETCH the
 * prefix as one group by @deadline_ns and wait for its completion. On
 * timeout the group is cancelled.
 *
 * Return: 0 (the cached prefix, @ready blocks, is in DRAM); the group's
 * status (-ETIME, -EIO: @ready says how much made it); -ETIMEDOUT; or
 * what LOOKUP or PREFETCH returned.
 */
int kvtier_request_ready(struct kvtier_pool *pool, struct kvtier_ring *ring,
			 const struct kvtier_key *keys, uint32_t n,
			 uint64_t deadline_ns, int timeout_ms, uint32_t *ready);

/* ---- the HBM tier --------------------------------------------------------- */

/**
 * kvtier_hbm_attach() - give a pool a device tier of @slots blocks
 * @pool:	the pool handle (not read-only).
 * @backend:	KVTIER_HBM_EMUL (kernel memory, out of hbm_emul_mb) or
 *		KVTIER_HBM_USER (the caller's arena, moved by a mover).
 * @slots:	1..KVTIER_HBM_SLOTS_MAX.
 * @mover_fd:	out with KVTIER_HBM_USER: the mover fd, for
 *		kvtier_mover_open(); closing it detaches the arena. NULL: the
 *		fd is closed at once (an arena nobody moves is of no use).
 *
 * Return: 0; -EBUSY (the pool has one); -ENOSPC (emulated memory used up);
 * -EBADF (read-only handle); -EINVAL; -ENOMEM.
 */
int kvtier_hbm_attach(struct kvtier_pool *pool, uint32_t backend,
		      uint32_t slots, int *mover_fd);

/**
 * kvtier_hbm_stat() - the pool's device tier: slots, copies, errors
 * @pool:	the pool handle.
 * @st:		out.
 *
 * Return: 0 or -errno.
 */
int kvtier_hbm_stat(struct kvtier_pool *pool, struct kvtier_hbm_stat *st);

/**
 * kvtier_adopt() - take blocks made in device memory
 * @pool:	the pool handle.
 * @e:		@n entries: key and slot in; status and addr out.
 * @n:		1..batch_max.
 * @done:	out (optional): entries adopted.
 *
 * An adopted block is in HBM at once and written down to DRAM (then NVMe)
 * in the background; a GET of it waits for that. Per entry: -EINVAL (slot
 * out of range), -EBUSY (slot in use), -EEXIST (key present), -ENOSPC (no
 * DRAM for the write-down), -ENODEV (no device tier).
 *
 * Return: 0, or -errno for the whole batch.
 */
int kvtier_adopt(struct kvtier_pool *pool, struct kvtier_adopt *e, uint32_t n,
		 uint32_t *done);

struct kvtier_mover;

/*
 * A mover's copy: @op KVTIER_MOVE_TO_DEV copies @bytes from @dram (the
 * block, read-only) into slot @slot of the device arena; KVTIER_MOVE_FROM_DEV
 * copies slot @slot into @dram. 0 or a negative errno.
 */
typedef int (*kvtier_mover_copy_fn)(void *arg, uint32_t op, uint32_t slot,
				    void *dram, uint64_t bytes);

/**
 * kvtier_mover_memcpy() - the reference copy: the arena is host memory
 * @arena:	slots * block_size bytes (the kvtier_mover_open() argument).
 * @op:		KVTIER_MOVE_TO_DEV or KVTIER_MOVE_FROM_DEV.
 * @slot:	the slot.
 * @dram:	the block's bytes (see kvtier_mover_copy_fn).
 * @bytes:	the block size.
 *
 * Return: 0.
 */
int kvtier_mover_memcpy(void *arena, uint32_t op, uint32_t slot, void *dram,
			uint64_t bytes);

/**
 * struct kvtier_cuda_arena - a CUDA device memory arena for kvtier_mover_cuda
 * @lib:	the CUDA runtime, opened at run time.
 * @memcpy_fn:	its cudaMemcpy.
 * @base:	the arena: slots * block_size bytes from cudaMalloc().
 */
struct kvtier_cuda_arena {
	void *lib;
	void *memcpy_fn;
	void *base;
};

/**
 * kvtier_mover_cuda_init() - open the CUDA runtime for a device arena
 * @a:		out.
 * @device_base: the arena's device pointer.
 *
 * libkvtier has no build or link dependency on CUDA: the runtime library
 * (libcudart.so, .so.12, .so.11) is opened with dlopen(3) here.
 *
 * Return: 0; -ENOENT when no CUDA runtime is installed; -ENOSYS when it
 * has no cudaMemcpy.
 */
int kvtier_mover_cuda_init(struct kvtier_cuda_arena *a, void *device_base);

/**
 * kvtier_mover_cuda_fini() - close what kvtier_mover_cuda_init() opened
 * @a:		the arena.
 */
void kvtier_mover_cuda_fini(struct kvtier_cuda_arena *a);

/**
 * kvtier_mover_cuda() - the copy for a CUDA arena (a kvtier_mover_copy_fn)
 * @arg:	a struct kvtier_cuda_arena.
 * @op:		KVTIER_MOVE_TO_DEV (cudaMemcpy host to device) or
 *		KVTIER_MOVE_FROM_DEV (device to host).
 * @slot:	the slot.
 * @dram:	the block's bytes.
 * @bytes:	the block size.
 *
 * Return: 0, -EIO when cudaMemcpy fails, -ENODEV when not initialised.
 */
int kvtier_mover_cuda(void *arg, uint32_t op, uint32_t slot, void *dram,
		      uint64_t bytes);

/**
 * kvtier_mover_open() - a mover for a user arena
 * @pool:	the pool handle (its mapping is the DRAM side of copies).
 * @mover_fd:	from kvtier_hbm_attach(); owned by the mover from now on.
 * @fn:		the copy (kvtier_mover_memcpy, a cudaMemcpy wrapper, ...).
 * @arg:	its first argument.
 * @mp:		out: the mover.
 *
 * Return: 0 or -errno.
 */
int kvtier_mover_open(struct kvtier_pool *pool, int mover_fd,
		      kvtier_mover_copy_fn fn, void *arg,
		      struct kvtier_mover **mp);

/**
 * kvtier_mover_run() - do the copies the kernel posted
 * @m:		the mover.
 * @timeout_ms:	how long to wait for the first; -1 forever.
 *
 * Call it in a loop (a thread of the runtime). A copy that takes longer
 * than the hbm_timeout_ms module parameter detaches the arena.
 *
 * A command with a flag this library does not know is reported failed
 * (-EOPNOTSUPP) without calling the copy function.
 *
 * Return: copies done (0 when the wait ended without one); -EPIPE once the
 * arena is detached; another -errno (a report the kernel refused, after a
 * timeout detached the arena, say). The loop should end on any negative
 * value.
 */
int kvtier_mover_run(struct kvtier_mover *m, int timeout_ms);

/**
 * kvtier_mover_close() - stop moving: the arena is detached
 * @m:		the mover, or NULL.
 *
 * Adopted blocks not yet written down are lost; every other block keeps
 * its DRAM or NVMe copy.
 */
void kvtier_mover_close(struct kvtier_mover *m);

/* ---- events and the census ------------------------------------------------ */

/*
 * With KVTIER_F_EVENTS a pool tells what happens to its keys: each key
 * stored (with its tier), moved between tiers, removed (and why), and the
 * pool's end, in order, numbered from 1 (struct kvtier_event). A router
 * that follows what a node holds opens an events fd, then lists the
 * pool's keys with kvtier_census(), keeps the seq of the listing's first
 * call, and applies every event after that number to what it listed: the
 * result is the pool's key set, kept up to date as events come.
 */

/**
 * kvtier_events_open() - open an events fd on a pool
 * @pool:	the pool handle (any handle, read-only too).
 * @from_seq:	0: from the pool's next event; else the first event wanted,
 *		1 up to the next event's number (KVTIER_EVENTS_FROM). An
 *		event the pool's ring no longer holds is read as one
 *		KVTIER_EVENT_OVERFLOW record first.
 * @flags:	0 or KVTIER_EVENTS_NONBLOCK (the fd is O_NONBLOCK).
 * @out:	out (optional): the kernel's answer: fd, seq (the first event
 *		the fd returns), log_id (the pool's event log: numbers of
 *		another log are unrelated) and ring (events the pool keeps for
 *		its readers).
 *
 * The fd is the caller's (O_CLOEXEC; close(2) it), and lives on its own:
 * it does not keep the pool, and once the pool's last fd and mapping are
 * gone it reads what was left, the KVTIER_EVENT_CLEARED event, then end of
 * file. Read it with kvtier_events_read(), or read(2), poll(2), epoll or
 * io_uring directly (whole struct kvtier_event records).
 *
 * Return: the fd; -EOPNOTSUPP when the context did not negotiate
 * KVTIER_F_EVENTS; -EINVAL for unknown @flags, or @from_seq past the next
 * event; -ENOMEM; -EMFILE, -ENFILE.
 */
int kvtier_events_open(struct kvtier_pool *pool, uint64_t from_seq,
		       uint32_t flags, struct kvtier_events *out);

/**
 * kvtier_events_read() - read a pool's events from an events fd
 * @fd:		an events fd (kvtier_events_open()).
 * @ev:		out: up to @n records.
 * @n:		room in @ev (>= 1).
 * @timeout_ms:	how long to wait for the first record: 0 not at all, -1
 *		forever.
 *
 * Returns what is there at once, up to @n records, in order. A reader the
 * pool's ring lapped reads one KVTIER_EVENT_OVERFLOW record (@seq the first
 * event lost, @lost how many) and then the oldest the ring holds: it
 * should take a census again (kvtier_census()).
 *
 * Return: the number of records; 0 at the end of the log (the pool is
 * gone and its CLEARED event was read); -ETIMEDOUT when none came within
 * @timeout_ms; -EINTR when a signal came first; -EINVAL for @n 0; -EBADF;
 * another -errno of poll(2) or read(2).
 */
ssize_t kvtier_events_read(int fd, struct kvtier_event *ev, size_t n,
			   int timeout_ms);

/**
 * kvtier_census() - list a pool's keys with their tier, by cursor
 * @pool:	the pool handle (any handle, read-only too).
 * @cursor:	in: the block address to go on from, 0 for the start of a
 *		listing; out: where the next call goes on, or
 *		KVTIER_ADDR_NONE when the listing reached the end (a call
 *		given KVTIER_ADDR_NONE lists nothing and returns 0).
 * @ent:	out: the keys, in address order: key, addr, tier (as the
 *		event log last told it) and flags (KVTIER_CENSUS_HBM, _DRAM,
 *		_NVME: where it has copies; KVTIER_CENSUS_PINNED).
 * @meta:	NULL, or out (KVTIER_F_META): each key's record, at the same
 *		index.
 * @n:		room in @ent (and @meta); any number: the library splits it
 *		into calls of at most batch_max.
 * @seq:	out (optional): the last event of the pool's log when this
 *		call began (0: none yet). Keep the one of a listing's first
 *		call (@cursor 0): the listing and the events after it lose
 *		nothing.
 * @log_id:	out (optional): the pool's event log, as kvtier_events_open()
 *		gives it: compare them to know the fd follows this pool.
 *
 * A listing of several calls is consistent with the events after the
 * first call's @seq: apply them in order to everything listed and the
 * result is the pool as of the last event applied. Listing changes
 * nothing in the pool.
 *
 * Return: the number of keys written (fewer than @n only at the end);
 * -EOPNOTSUPP without KVTIER_F_EVENTS, or @meta without KVTIER_F_META;
 * -EINVAL for @n 0 or a @cursor past the pool's capacity; -EFAULT; -EINTR
 * when killed; -ENOMEM.
 */
int kvtier_census(struct kvtier_pool *pool, uint64_t *cursor,
		  struct kvtier_census_entry *ent, struct kvtier_meta *meta,
		  uint32_t n, uint64_t *seq, uint64_t *log_id);

/**
 * kvtier_event_name() - the name of an event type
 * @type:	KVTIER_EVENT_*.
 *
 * Return: "stored", "moved", "removed", "cleared", "overflow", or NULL for
 * an unknown type.
 */
const char *kvtier_event_name(unsigned int type);

/**
 * kvtier_event_reason_name() - the name of an event's reason
 * @reason:	KVTIER_EVR_*.
 *
 * Return: "put", "replace", "adopt", "replay", "load", "evict", "shrink",
 * "stage", "unstage", "drop", "bad_read", "log_reclaim", "io_error",
 * "detach", "destroy", or NULL for 0 or an unknown reason.
 */
const char *kvtier_event_reason_name(unsigned int reason);

/* ---- io_uring ------------------------------------------------------------ */

/**
 * struct kvtier_ring_cqe - a completion reaped from a ring
 * @user_data:	what kvtier_ring_queue() was given.
 * @res:	the command's result, as the ioctl would return it.
 */
struct kvtier_ring_cqe {
	uint64_t user_data;
	int32_t res;
};

/**
 * kvtier_ring_open() - an io_uring for pool commands
 * @ringp:	out: the ring.
 * @entries:	submission queue size.
 *
 * Return: 0 or -errno (io_uring_queue_init()'s).
 */
int kvtier_ring_open(struct kvtier_ring **ringp, unsigned int entries);

/**
 * kvtier_ring_close() - tear a ring down (commands in flight are cancelled)
 * @ring:	the ring, or NULL.
 */
void kvtier_ring_close(struct kvtier_ring *ring);

/**
 * kvtier_ring_fd() - the ring's fd, for poll(2)
 * @ring:	the ring.
 *
 * Return: the fd.
 */
int kvtier_ring_fd(const struct kvtier_ring *ring);

/**
 * kvtier_ring_queue() - queue one pool command on the ring
 * @ring:	the ring.
 * @pool:	the pool handle.
 * @op:		KVTIER_IOC_PUT, KVTIER_IOC_GET, KVTIER_IOC_LOOKUP,
 *		KVTIER_IOC_PREFETCH, or with KVTIER_F_RESERVE
 *		KVTIER_IOC_RESERVE, KVTIER_IOC_COMMIT, KVTIER_IOC_ABORT.
 * @arg:	the command's struct (struct kvtier_batch or struct
 *		kvtier_prefetch) and what it points to; valid until the
 *		command's completion is reaped, and written back by then.
 * @user_data:	returned in the completion.
 *
 * Nothing reaches the kernel before kvtier_ring_submit().
 *
 * Return: 0; -EBUSY when the submission queue is full (submit first).
 */
int kvtier_ring_queue(struct kvtier_ring *ring, struct kvtier_pool *pool,
		      unsigned long op, void *arg, uint64_t user_data);

/**
 * kvtier_ring_submit() - hand the queued commands to the kernel
 * @ring:	the ring.
 *
 * Return: commands submitted, or -errno.
 */
int kvtier_ring_submit(struct kvtier_ring *ring);

/**
 * kvtier_ring_reap() - collect completions
 * @ring:	the ring.
 * @out:	out: up to @max completions.
 * @max:	room in @out.
 * @wait_nr:	wait until at least this many are there (0: do not wait).
 *
 * Return: completions reaped, or -errno.
 */
int kvtier_ring_reap(struct kvtier_ring *ring, struct kvtier_ring_cqe *out,
		     unsigned int max, unsigned int wait_nr);

/* ---- weight pools (KVTIER_F_WEIGHTS) ------------------------------------- */

struct kvtier_weights;

#define KVTIER_TENSOR_NAME_MAX	256
#define KVTIER_TENSOR_DIMS_MAX	8

/**
 * struct kvtier_tensor - one tensor of a weight pool's file
 * @name:	its name in the tensor table (NUL-terminated); a GGUF
 *		stacked expert's slice is "<name>[E]" (below).
 * @dtype:	its safetensors dtype ("F16", "BF16", "F32", "I8", ...), or
 *		its GGUF ggml type's name ("F16", "Q4_K", "Q8_0", "IQ4_XS",
 *		...).
 * @ndim:	dimensions in @shape, 0..KVTIER_TENSOR_DIMS_MAX (GGUF: 1..4).
 * @shape:	its shape, outermost first (a GGUF tensor's ne[] reversed).
 * @offset:	where its bytes start in the pool's address space: block
 *		@offset / block_size, byte @offset % block_size of it (and in
 *		a mapping of the pool, kvtier_map(), at @offset).
 * @bytes:	its length in bytes.
 * @layer:	the layer its name names ("layers.L.", "layer.L.", "h.L.",
 *		"blk.L."), or -1 (embeddings, final norm, head).
 * @expert:	the expert its name names within the layer ("experts.E."),
 *		or the expert of a GGUF slice, or -1.
 *
 * GGUF stacks a MoE layer's experts in one tensor a projection
 * ("blk.L.ffn_gate_exps.weight", ne [in, out, n_expert]): the expert is the
 * outermost dimension, each expert's bytes one contiguous n-th of the
 * tensor's. Such a tensor (a component of its name ends in "_exps", it has
 * two or more dimensions, and bytes) is listed as n entries, one an
 * expert: "<name>[E]", @expert E, @shape without the expert dimension,
 * @offset and @bytes those of its slice; not as itself. So an expert's
 * blocks, prefetches and reads are its own slices'.
 */
struct kvtier_tensor {
	char name[KVTIER_TENSOR_NAME_MAX];
	char dtype[8];
	uint32_t ndim;
	uint64_t shape[KVTIER_TENSOR_DIMS_MAX];
	uint64_t offset;
	uint64_t bytes;
	int32_t layer;
	int32_t expert;
};

/**
 * kvtier_weights_open() - a weight pool of a safetensors or GGUF file
 * @ctx:	the context (KVTIER_F_WEIGHTS).
 * @path:	the model file: GGUF v2 or v3 when it starts with "GGUF"
 *		(the header: metadata, tensor infos; padding to its
 *		alignment; the tensors' bytes), else safetensors (an 8-byte
 *		little-endian header length, a JSON tensor table, the
 *		tensors' bytes).
 * @name:	the pool's name.
 * @block_size:	bytes per block, a multiple of 4096.
 * @dram_blocks: the pool's DRAM share in blocks; 0: the whole file.
 * @wp:		out: the weight pool.
 *
 * Reads and checks the tensor table: every tensor's dtype (or ggml type) is
 * known, its byte range is its shape times its dtype's size (a GGUF
 * tensor's: its blocks times the type's block size), lies in the file, and
 * overlaps no other; a GGUF tensor's offset is a multiple of the file's
 * alignment. GGUF's stacked experts are split into one entry an expert
 * (struct kvtier_tensor). Then creates the pool (or opens the one of that
 * name made from the same file: the same tensor table, size and file,
 * unchanged since, else -ESTALE), block 0 at the file's page that holds
 * the first tensor byte, its capacity the blocks from there to the end of
 * the file, keyed by a digest of the file's size, tensor table and
 * identity (device, inode, mtime): a pool made from another file,
 * or from another version of this one, never answers for it. The pool's
 * mode is 0600 (kvtier_pool_open() by name for other handles).
 *
 * Return: 0; -EBADMSG for a malformed file or a table that lies (offsets
 * past the end, overlapping, a size that does not match the shape, a file
 * shorter than its header says, no tensor with a byte; for GGUF also a
 * version but 2 and 3, an unknown or removed ggml type, an offset off the
 * alignment, a header over 100 MiB); -ESTALE for a pool of that name made
 * from another file; -EINVAL for a @block_size that is
 * 0 or not a multiple of 4096, or a @path that is not a regular file;
 * -EFBIG for more than KVTIER_CAPACITY_MAX blocks (a larger @block_size
 * fits); -ETXTBSY when the file is open for writing (the pool keeps
 * writers out while it lives); -EOPNOTSUPP without KVTIER_F_WEIGHTS; as
 * open(2) and kvtier_pool_create() else.
 */
int kvtier_weights_open(struct kvtier_ctx *ctx, const char *path,
			const char *name, uint64_t block_size,
			uint32_t dram_blocks, struct kvtier_weights **wp);

/**
 * kvtier_weights_close() - close a weight pool handle
 * @w:		the handle; NULL is a no-op.
 *
 * The pool stays, with its name, until kvtier_pool_destroy().
 */
void kvtier_weights_close(struct kvtier_weights *w);

/**
 * kvtier_weights_pool() - the pool of a weight pool handle
 * @w:		the handle.
 *
 * Return: the pool (for kvtier_stat(), kvtier_map(), kvtier_hbm_attach()),
 * owned by @w.
 */
struct kvtier_pool *kvtier_weights_pool(const struct kvtier_weights *w);

/**
 * kvtier_weights_count() - tensors, layers and experts of a weight pool
 * @w:		the handle.
 * @layers:	out (optional): 1 + the highest layer named, or 0.
 * @experts:	out (optional): 1 + the highest expert named, or 0.
 *
 * Return: the number of tensors.
 */
uint32_t kvtier_weights_count(const struct kvtier_weights *w,
			      uint32_t *layers, uint32_t *experts);

/**
 * kvtier_weights_tensor() - one tensor, by index or by name
 * @w:		the handle.
 * @index:	0..kvtier_weights_count() - 1, in the order of the tensors'
 *		bytes in the file (the table's among empty ones); ignored
 *		when @name is set.
 * @name:	the tensor's name, or NULL.
 * @t:		out.
 *
 * Return: 0; -ENOENT for an index past the end or an unknown name.
 */
int kvtier_weights_tensor(const struct kvtier_weights *w, uint32_t index,
			  const char *name, struct kvtier_tensor *t);

/* kvtier_weights_blocks() @expert: every tensor of the layer. */
#define KVTIER_WEIGHTS_ALL	(-2)

/**
 * kvtier_weights_blocks() - the block addresses of a layer or an expert
 * @w:		the handle.
 * @layer:	a layer, or -1 for the tensors of no layer.
 * @expert:	an expert of @layer, -1 for every tensor of the layer but
 *		its experts', or KVTIER_WEIGHTS_ALL for the whole layer.
 * @addrs:	out: the addresses, ascending, each once.
 * @max:	room in @addrs.
 *
 * Return: the number of addresses (which may exceed @max: only @max are
 * written; 0 when the tensors are all empty); -ENOENT when no tensor is
 * of that layer and expert.
 */
int kvtier_weights_blocks(const struct kvtier_weights *w, int32_t layer,
			  int32_t expert, uint64_t *addrs, uint32_t max);

/**
 * kvtier_weights_prefetch() - hint a layer or an expert by a deadline
 * @w:		the handle.
 * @layer:	as kvtier_weights_blocks().
 * @expert:	as kvtier_weights_blocks().
 * @a:		the group (KVTIER_PREFETCH_ADDR is added): one deadline and
 *		priority for the blocks, queued with every other hint of the
 *		pool's, KV or weights, in one deadline order.
 *
 * The blocks go in one group, in one PREFETCH: more of them than the
 * handshake's batch_max (a layer of a large model in small blocks) is
 * -E2BIG, for the caller to hint it by expert, or to use larger blocks.
 *
 * Return: as kvtier_prefetch(); -ENOENT when no tensor is of that layer
 * and expert, or none of them has a byte; -E2BIG as above; -EINVAL for
 * @a NULL.
 */
int kvtier_weights_prefetch(struct kvtier_weights *w, int32_t layer,
			    int32_t expert,
			    const struct kvtier_prefetch_args *a);

/**
 * kvtier_weights_prefetch_experts() - hint the experts a router may pick
 * @w:		the handle.
 * @layer:	a layer with experts.
 * @experts:	@n experts of @layer (>= 0).
 * @prob:	@n probabilities, each the chance that expert is used, in
 *		1/KVTIER_PROB_ONE: the router's top-k and the runners-up, with
 *		their scores; or NULL, every expert needed for sure.
 * @n:		1..KVTIER_BATCH_MAX.
 * @a:		the group, as kvtier_weights_prefetch().
 *
 * The experts' blocks go in one group, each block once (with the highest
 * probability of the experts that share it). With @prob the engine reads
 * the likeliest first and leaves unlikely ones unread when the deadline or
 * its queue leaves no room (struct kvtier_hint, "probable hints"): such a
 * group ends with status 0 and fewer blocks ready than hinted.
 *
 * Return: as kvtier_prefetch(); -EINVAL (@a, @experts NULL, @n 0, an
 * expert below 0, a probability above KVTIER_PROB_ONE); -ENOENT (an expert
 * or the layer does not exist, or has no byte); -E2BIG (more blocks than
 * batch_max); -EOPNOTSUPP (@prob given, and the module has no
 * KVTIER_F_HINT_PROB).
 */
int kvtier_weights_prefetch_experts(struct kvtier_weights *w, int32_t layer,
				    const int32_t *experts,
				    const uint32_t *prob, uint32_t n,
				    const struct kvtier_prefetch_args *a);

/**
 * kvtier_weights_read() - copy a tensor's bytes out of the pool
 * @w:		the handle.
 * @t:		the tensor (kvtier_weights_tensor()).
 * @buf:	@t->bytes of memory.
 *
 * GETs the tensor's blocks (loading those not in DRAM) and copies its
 * range of them.
 *
 * Return: 0; -ENOENT when a block of it is gone (the file changed, a read
 * failed); -EINVAL for a tensor past the end of the pool; as kvtier_get()
 * else. On an error @buf may hold part of the bytes.
 */
int kvtier_weights_read(struct kvtier_weights *w,
			const struct kvtier_tensor *t, void *buf);

#ifdef __cplusplus
}
#endif

#endif /* KVTIER_LIB_H */
