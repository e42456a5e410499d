/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * kvtier: tiered storage for LLM KV-cache blocks.
 *
 * Two kinds of file descriptor carry this interface:
 *
 *  - the control fd, from open("/dev/kvtier"), takes KVTIER_IOC_API first
 *    and then the pool commands (POOL_CREATE, POOL_OPEN, POOL_DESTROY) and
 *    the NVMe tier's (NVME_ATTACH, NVME_DETACH, NVME_STAT);
 *  - a pool fd, returned by KVTIER_IOC_POOL_CREATE or KVTIER_IOC_POOL_OPEN,
 *    takes the block commands (PUT, GET, LOOKUP, DROP, PIN, UNPIN, STAT,
 *    SYNC), the prefetch commands (PREFETCH, CANCEL, EVENTFD), the HBM
 *    tier's (HBM_ATTACH, HBM_STAT, ADOPT), the zero-copy store's
 *    (RESERVE, COMMIT, ABORT), the events' (EVENTS, KEYS), mmap(2),
 *    read(2)/poll(2) of prefetch completions, and IORING_OP_URING_CMD.
 *
 * HBM_ATTACH with KVTIER_HBM_USER also returns a third kind, the mover fd
 * (read(2) and write(2) of struct kvtier_move and struct kvtier_moved), and
 * KVTIER_IOC_EVENTS a fourth, the events fd (read(2), poll(2) and io_uring
 * reads of struct kvtier_event).
 *
 * Rules every command follows (Documentation/userspace-api.rst):
 *  - unknown ioctl number: -ENOTTY;
 *  - a nonzero reserved field, padding or unknown flag bit: -EINVAL;
 *  - the struct's size is the ioctl number's _IOC_SIZE: every size from
 *    the first version's (KVTIER_*_SIZE_VER0) up is taken; a smaller one
 *    is -EINVAL, fields the caller's struct lacks read as zero, and a
 *    tail the kernel does not know must be zero (else -E2BIG);
 *  - user pointers travel as __u64; a bad one: -EFAULT. A command that
 *    writes results back checks first that it can: an argument it cannot
 *    write is -EFAULT with nothing done;
 *  - a command of a feature not negotiated by KVTIER_IOC_API on the
 *    control fd (a pool fd has its control fd's set): -EOPNOTSUPP;
 *  - time is CLOCK_MONOTONIC nanoseconds.
 */
#ifndef _UAPI_LINUX_KVTIER_H
#define _UAPI_LINUX_KVTIER_H

#include <linux/const.h>
#include <linux/ioctl.h>
#include <linux/types.h>

#define KVTIER_API_VERSION	1

/* Control device node. */
#define KVTIER_DEVICE_NAME	"kvtier"

/*
 * Feature bits, negotiated by KVTIER_IOC_API.
 *
 * KVTIER_F_POOLS: pools of fixed-size blocks named by 128-bit keys, and the
 * batched block commands PUT, GET, LOOKUP, DROP, PIN, UNPIN and STAT.
 *
 * KVTIER_F_MMAP: a pool fd can be mmapped read-only; block address a is at
 * offset a * block_size. A block that is not DRAM-resident raises SIGBUS.
 *
 * KVTIER_F_NUMA: a pool's DRAM comes from the NUMA node given at create time
 * (struct kvtier_pool_create.numa_node), strictly.
 *
 * KVTIER_F_REPLACE: PUT with KVTIER_PUT_REPLACE swaps an existing block for
 * new bytes atomically: a concurrent GET sees the old block or the new one.
 *
 * KVTIER_F_NVME: an NVMe namespace can be attached (KVTIER_IOC_NVME_ATTACH).
 * Blocks evicted from DRAM are then demoted to it instead of dropped, come
 * back on use (GET, LOOKUP with KVTIER_LOOKUP_LOAD, mmap faults), and pools
 * created while it is attached persist across module reload and reboot.
 * KVTIER_IOC_SYNC makes a pool's blocks durable.
 *
 * KVTIER_F_PREFETCH: KVTIER_IOC_PREFETCH takes hints (which blocks a request
 * will need, in which tier, by when); the kernel stages them in deadline
 * order and reports each group's completion through read(2)/poll(2) on the
 * pool fd and an optional eventfd. KVTIER_IOC_CANCEL withdraws a group.
 *
 * KVTIER_F_URING: pool fds take IORING_OP_URING_CMD for PUT, GET, LOOKUP and
 * PREFETCH, and with KVTIER_F_RESERVE for RESERVE, COMMIT and ABORT (struct
 * kvtier_uring_cmd in the SQE's command area).
 *
 * KVTIER_F_HBM: a pool can be given a device tier (KVTIER_IOC_HBM_ATTACH):
 * an arena of slots of device memory, filled and emptied through a backend
 * (KVTIER_HBM_EMUL: kernel memory standing in for a device; KVTIER_HBM_USER:
 * the runtime's own arena, moved by its mover through a mover fd). PREFETCH
 * can target KVTIER_TIER_HBM, LOOKUP reports HBM residency and the slot,
 * and KVTIER_IOC_ADOPT takes blocks made in device memory.
 *
 * KVTIER_F_SG: a PUT or GET entry may name a list of segments instead of one
 * buffer (struct kvtier_block.nsegs, struct kvtier_seg): the kernel copies
 * straight between them and the block, in list order.
 *
 * KVTIER_F_LOOKUP_PIN: LOOKUP with KVTIER_LOOKUP_PIN brings the longest
 * prefix of a chain into DRAM and pins each block of it for the calling fd,
 * in the same command, so the runtime reads them through the mapping (or
 * registers that memory for DMA) knowing they stay, and UNPINs them after.
 *
 * KVTIER_F_RESERVE: zero-copy store. KVTIER_IOC_RESERVE hands out, for new
 * keys, blocks the pool owns, writable through the pool fd's reservation
 * window (KVTIER_RESERVE_WINDOW); the runtime, or a DMA engine writing into
 * that memory, fills them; KVTIER_IOC_COMMIT publishes them, KVTIER_IOC_ABORT
 * gives them back. No reader sees a reserved block. Reservations belong to
 * the pool file and end with it.
 *
 * KVTIER_F_META: block metadata. Each block may carry a record of up to
 * KVTIER_META_MAX bytes of the runtime's (token count, dtype, model and
 * tokenizer fingerprint), given by PUT, COMMIT or ADOPT and returned by GET
 * and LOOKUP through struct kvtier_batch.meta. It stays with the block in
 * every tier and is stored, checksummed, with its NVMe copy.
 *
 * KVTIER_F_PARTS: layer-wise loads. GET with KVTIER_GET_PART copies one
 * byte range of each block (struct kvtier_batch.part_off, part_len), so a
 * runtime loads a chain layer by layer, each layer's GET completing on its
 * own (io_uring). A pool created with parts (struct
 * kvtier_pool_create.parts) writes each NVMe copy with a table of checksums,
 * one a part, so that such a GET reads only the parts it needs from NVMe,
 * each verified before it is served.
 *
 * KVTIER_F_EVENTS: cache events and a key census, for KV-aware routers.
 * KVTIER_IOC_EVENTS on a pool fd returns an events fd, whose read(2) gives
 * the pool's events in order, each with a sequence number: a key stored
 * (with its tier), moved between tiers, removed (and why), the pool
 * cleared. Readers never slow the pool: it keeps its newest events in a
 * ring (module parameter events_ring) that writers never wait on, and a
 * reader that falls behind gets one KVTIER_EVENT_OVERFLOW record naming
 * the events it lost. KVTIER_IOC_CENSUS lists a pool's keys with their tier
 * by cursor, and the sequence number of the last event the listing
 * reflects: a listing and the events after that number lose nothing.
 *
 * KVTIER_F_COMPRESS: a compressed NVMe tier. A pool created with a
 * compressor (struct kvtier_pool_create.compress) has its blocks
 * compressed by the NVMe writer and decompressed when read back: more of
 * them fit on the device, fewer bytes are written. A block that does not
 * shrink by a page is stored as it is. Each compressed copy is checked
 * twice on its way back, its stored bytes and the block they give, so a
 * bad copy or a bad decompression is a miss, never wrong bytes.
 *
 * KVTIER_F_DIRECT: reads straight into the caller's memory. GET with
 * KVTIER_GET_DIRECT reads a block only on NVMe by DMA into the entry's
 * buffer, verifies it there, and leaves it on NVMe: no DRAM is taken, no
 * block is evicted for it, no CPU copies it. For a runtime that keeps what
 * it loads (in HBM) and would not read it from kvtier again soon.
 *
 * KVTIER_F_WEIGHTS: weight pools. A pool created with KVTIER_POOL_WEIGHTS
 * is read-only and holds the bytes of a file (model weights): block i is
 * the file's bytes from struct kvtier_pool_create.file_off + i * block_size,
 * under the key { file_key, i }. Blocks load on use, or ahead of use from
 * PREFETCH hints, from the file by direct I/O into DRAM (and the HBM tier,
 * where attached), and are never written back. While the pool lives, the
 * file cannot be opened for writing or truncated (-ETXTBSY, as a running
 * executable); renaming or unlinking it leaves the pool its bytes. Its
 * size and mtime are taken at create too: a load that finds them changed
 * (a writer the kernel could not stop) is a miss and the block leaves the
 * pool, so a pool never mixes a file's new bytes with its old.
 *
 * KVTIER_F_HINT_PROB: a prefetch hint may carry the chance that its block
 * will be used (KVTIER_HINT_PROB, struct kvtier_hint.prob): a router's
 * top-k with its probabilities. The engine reads a group's likely blocks
 * first and leaves unlikely ones unread when the deadline or the queue
 * leaves no room for them (Documentation/userspace-api.rst, "Probable
 * hints").
 */
#define KVTIER_F_POOLS		_BITULL(0)
#define KVTIER_F_MMAP		_BITULL(1)
#define KVTIER_F_NUMA		_BITULL(2)
#define KVTIER_F_REPLACE	_BITULL(3)
#define KVTIER_F_NVME		_BITULL(4)
#define KVTIER_F_PREFETCH	_BITULL(5)
#define KVTIER_F_URING		_BITULL(6)
#define KVTIER_F_HBM		_BITULL(7)
#define KVTIER_F_SG		_BITULL(8)
#define KVTIER_F_LOOKUP_PIN	_BITULL(9)
#define KVTIER_F_RESERVE	_BITULL(10)
#define KVTIER_F_META		_BITULL(11)
#define KVTIER_F_PARTS		_BITULL(12)
#define KVTIER_F_EVENTS		_BITULL(13)
#define KVTIER_F_COMPRESS	_BITULL(14)
#define KVTIER_F_DIRECT		_BITULL(15)
#define KVTIER_F_WEIGHTS	_BITULL(16)
#define KVTIER_F_HINT_PROB	_BITULL(17)

/**
 * struct kvtier_api - the handshake, first command on a control fd
 * @api:	in: KVTIER_API_VERSION the caller speaks; out: unchanged.
 * @flags:	in: must be 0.
 * @features:	in: feature bits the caller wants (~0ULL: all there are);
 *		out: the negotiated set, those of them this kernel supports.
 *		Only these work on this fd and the pool fds it makes; the
 *		commands, flags and fd operations of any other fail with
 *		-EOPNOTSUPP.
 * @supported:	out: every feature bit this kernel supports.
 * @ioctls:	out: bit (1 << _IOC_NR(cmd)) set for each supported command.
 * @block_size_max: out: largest block size a pool may have, in bytes.
 * @batch_max:	out: most entries one batched command takes.
 * @name_max:	out: size of a pool name buffer, terminating NUL included.
 * @max_pools:	out: the max_pools module parameter.
 * @__pad:	must be 0.
 * @dram_bytes:	out: DRAM budget for all pools (dram_mb module parameter).
 * @reserved:	must be 0.
 *
 * Other commands on a control fd that has not done this fail with -EINVAL.
 * A second handshake on the same fd fails with -EBUSY.
 */
struct kvtier_api {
	__u32 api;
	__u32 flags;
	__u64 features;
	__u64 supported;
	__u64 ioctls;
	__u64 block_size_max;
	__u32 batch_max;
	__u32 name_max;
	__u32 max_pools;
	__u32 __pad;
	__u64 dram_bytes;
	__u64 reserved[4];
};

#define KVTIER_NAME_MAX		64
#define KVTIER_BATCH_MAX	4096
#define KVTIER_BLOCK_SIZE_MAX	(64ULL << 20)
#define KVTIER_SEGS_MAX		1024	/* segments of one PUT/GET entry */
#define KVTIER_PARTS_MAX	256	/* struct kvtier_pool_create.parts */
#define KVTIER_CAPACITY_MAX	_BITUL(24)

/* Pool create flags: if the pool exists, open it instead of -EEXIST. */
#define KVTIER_POOL_OPEN_EXISTING	_BITUL(0)
#define KVTIER_POOL_CREATE_FLAGS	(KVTIER_POOL_OPEN_EXISTING | \
					 KVTIER_POOL_FAULT_NOLOAD | \
					 KVTIER_POOL_WEIGHTS)

/*
 * Pool create flag: an mmap fault on a block that is not in DRAM raises
 * SIGBUS instead of loading it from NVMe.
 */
#define KVTIER_POOL_FAULT_NOLOAD	_BITUL(1)

/*
 * Pool create flag (KVTIER_F_WEIGHTS, else -EOPNOTSUPP): a read-only pool
 * of the blocks of the file struct kvtier_pool_create.file_fd names.
 */
#define KVTIER_POOL_WEIGHTS		_BITUL(2)

/* Pool open/create access flags (the returned pool fd). */
#define KVTIER_POOL_RDONLY	_BITUL(8)	/* no PUT, DROP, SYNC */
#define KVTIER_POOL_OPEN_FLAGS	KVTIER_POOL_RDONLY

/**
 * struct kvtier_pool_create - create a pool, get a pool fd
 * @name:	NUL-terminated name, 1..KVTIER_NAME_MAX-1 bytes of [A-Za-z0-9._-].
 * @block_size:	bytes per block; a multiple of the page size,
 *		<= KVTIER_BLOCK_SIZE_MAX.
 * @capacity:	block addresses in the pool, 1..KVTIER_CAPACITY_MAX.
 * @dram_blocks: blocks the pool may keep in DRAM (0: @capacity). These
 *		and the index of @capacity addresses (about 100 bytes each)
 *		are reserved against the dram_mb budget at create time
 *		(-ENOSPC if short).
 * @flags:	KVTIER_POOL_OPEN_EXISTING, KVTIER_POOL_RDONLY.
 * @mode:	permission bits (0..0777) for opens by other processes;
 *		0 means 0600.
 * @numa_node:	node for the pool's DRAM, or -1 for the numa_node module
 *		parameter. Must be online.
 * @fd:		out: the pool fd (O_CLOEXEC).
 * @parts:	0, or (with KVTIER_F_PARTS, else -EOPNOTSUPP) 2..
 *		KVTIER_PARTS_MAX (else -EINVAL): the parts a block's NVMe
 *		copy can be read in, each checked on its own by a GET with
 *		KVTIER_GET_PART. A part is block_size / @parts rounded up to
 *		the page size; each copy takes one page more on the device,
 *		and the writer one more pass over the bytes. Recorded with
 *		the pool on the device.
 * @compress:	KVTIER_COMPRESS_NONE, or (with KVTIER_F_COMPRESS, else
 *		-EOPNOTSUPP) the compressor of the pool's NVMe copies:
 *		KVTIER_COMPRESS_LZ4, _LZ4HC or _ZSTD; another value, or one
 *		with @parts: -EINVAL. The kernel's compressor of that name
 *		(crypto_acomp) is loaded at create: -ENOPKG when it cannot
 *		be. Recorded with the pool on the device.
 * @compress_flags: 0, or with a compressor KVTIER_COMPRESS_SHUFFLE2
 *		(else -EINVAL).
 * @__pad:	must be 0.
 * @reserved:	must be 0.
 * @file_fd:	with KVTIER_POOL_WEIGHTS: an fd of a regular file open for
 *		reading (else -EBADF; not a regular file: -EINVAL) and open
 *		for writing nowhere (else -ETXTBSY); else 0.
 *		The pool reads the file through its own open of it, by direct
 *		I/O where the file system has it (else through the page
 *		cache), and keeps it open while the pool lives.
 * @file_flags:	must be 0.
 * @file_off:	with KVTIER_POOL_WEIGHTS: the file offset of block 0, a
 *		multiple of the page size below the file's size; @capacity must be
 *		the blocks from there to the end of the file (the last one
 *		read short and zero-filled), else -EINVAL. Else 0.
 * @file_key:	with KVTIER_POOL_WEIGHTS: key[0] of every block (a digest
 *		of the file's tensor table, say); block i is { @file_key, i }
 *		at address i. Else 0.
 * @file_reserved: must be 0.
 *
 * A weight pool (KVTIER_POOL_WEIGHTS) takes none of @parts, @compress and
 * KVTIER_POOL_FAULT_NOLOAD, nor a struct without @file_reserved (-EINVAL);
 * it is not recorded on NVMe devices.
 * PUT, DROP, RESERVE, COMMIT, ADOPT and ABORT on it fail with -EROFS, as
 * does a mapping of its reservation window; GET, LOOKUP, PIN, PREFETCH,
 * SYNC (nothing to write), mmap and the HBM tier work as on any pool; a
 * block only in the file is in KVTIER_TIER_NVME for LOOKUP and STAT. A
 * block whose load fails (an I/O error, a file changed since create) is a
 * miss and leaves the pool (-ENOENT), as a block of the NVMe tier that
 * does not verify; it counts in bad_reads.
 */
struct kvtier_pool_create {
	__u8 name[KVTIER_NAME_MAX];
	__u64 block_size;
	__u32 capacity;
	__u32 dram_blocks;
	__u32 flags;
	__u32 mode;
	__s32 numa_node;
	__s32 fd;
	__u32 parts;
	__u8 compress;
	__u8 compress_flags;
	__u16 __pad;
	__u64 reserved[3];
	/* KVTIER_POOL_CREATE_SIZE_VER0 ends here */
	__s32 file_fd;
	__u32 file_flags;
	__u64 file_off;
	__u64 file_key;
	__u64 file_reserved[2];
};

/* struct kvtier_pool_create.compress */
#define KVTIER_COMPRESS_NONE	0
#define KVTIER_COMPRESS_LZ4	1	/* fast */
#define KVTIER_COMPRESS_LZ4HC	2	/* lz4's format, slower to write */
#define KVTIER_COMPRESS_ZSTD	3	/* smaller, slower */
#define KVTIER_COMPRESS_MAX	KVTIER_COMPRESS_ZSTD

/*
 * struct kvtier_pool_create.compress_flags: compress the bytes of each
 * 16-bit element as two planes, all low bytes then all high bytes (fp16
 * and bf16 KV: the high bytes, sign and exponent, repeat far more than
 * the mantissa bytes beside them).
 */
#define KVTIER_COMPRESS_SHUFFLE2	_BITUL(0)
#define KVTIER_COMPRESS_FLAGS		KVTIER_COMPRESS_SHUFFLE2

/**
 * struct kvtier_pool_open - open an existing pool by name
 * @name:	NUL-terminated name.
 * @flags:	KVTIER_POOL_RDONLY.
 * @fd:		out: the pool fd (O_CLOEXEC).
 * @reserved:	must be 0.
 *
 * Access is checked against the pool's owner, group and mode like a file:
 * read is needed always, write unless KVTIER_POOL_RDONLY (-EACCES).
 */
struct kvtier_pool_open {
	__u8 name[KVTIER_NAME_MAX];
	__u32 flags;
	__s32 fd;
	__u64 reserved[2];
};

/**
 * struct kvtier_pool_destroy - remove a pool's name; its data goes when the
 * last fd and mapping of it are gone
 * @name:	NUL-terminated name.
 * @flags:	must be 0.
 * @__pad:	must be 0.
 * @reserved:	must be 0.
 *
 * Only the owner, or CAP_SYS_ADMIN, may destroy (-EPERM).
 */
struct kvtier_pool_destroy {
	__u8 name[KVTIER_NAME_MAX];
	__u32 flags;
	__u32 __pad;
	__u64 reserved[2];
};

/* Tiers, as reported in struct kvtier_block.tier. */
#define KVTIER_TIER_NONE	0
#define KVTIER_TIER_HBM		1
#define KVTIER_TIER_DRAM	2
#define KVTIER_TIER_NVME	3
#define KVTIER_NR_TIERS		4

#define KVTIER_ADDR_NONE	(~0ULL)

/**
 * struct kvtier_block - one entry of a batched block command
 * @key:	in: the block's 128-bit key.
 * @buf:	in: PUT/GET: user buffer of block_size bytes, or with @nsegs
 *		the user address of @nsegs struct kvtier_seg; other
 *		commands: 0.
 * @addr:	out: block address, or KVTIER_ADDR_NONE.
 * @status:	out: 0 or a negative errno for this entry.
 * @tier:	out: KVTIER_TIER_* where the block lives, or KVTIER_TIER_NONE
 *		(the highest tier holding it: HBM, then DRAM, then NVMe).
 * @slot:	out (LOOKUP): the block's HBM slot when @tier is
 *		KVTIER_TIER_HBM, else KVTIER_SLOT_NONE; ignored on input.
 * @nsegs:	in: PUT/GET: 0 for one buffer, else the number of segments
 *		@buf points to (needs KVTIER_F_SG, else the batch fails with
 *		-EOPNOTSUPP); other commands: must be 0 (-EINVAL).
 *
 * Segments are copied in list order, so the block's bytes run through
 * segment 0, then 1, and so on. Their lengths must add up to the block
 * size. Segments may overlap: a PUT reads the bytes twice, a GET writes
 * them twice and the later segment's bytes are what is left. The entry's
 * status, with nothing stored or counted:
 * -E2BIG for @nsegs above KVTIER_SEGS_MAX; -EINVAL for a zero-length
 * segment or lengths that do not add up to the block size; -EFAULT for a
 * list that cannot be read or a segment that cannot be read (PUT) or
 * written (GET). A GET that faults may have written part of the segments.
 */
struct kvtier_block {
	__u64 key[2];
	__u64 buf;
	__u64 addr;
	__s32 status;
	__u32 tier;
	__u32 slot;
	__u32 nsegs;
};

/**
 * struct kvtier_seg - one segment of a scatter-gather PUT or GET entry
 * @addr:	user address of the segment.
 * @len:	its length in bytes, nonzero.
 */
struct kvtier_seg {
	__u64 addr;
	__u64 len;
};

#define KVTIER_SLOT_NONE	(~0U)

/* PUT flags. */
#define KVTIER_PUT_REPLACE	_BITUL(0)	/* replace an existing key */

/* GET flags. */
#define KVTIER_GET_PART		_BITUL(0)	/* a range of each block */
#define KVTIER_GET_DIRECT	_BITUL(1)	/* NVMe to buffer (F_DIRECT) */

/* LOOKUP flags. */
#define KVTIER_LOOKUP_TOUCH	_BITUL(0)	/* count resident ones as used */
#define KVTIER_LOOKUP_LOAD	_BITUL(1)	/* bring the prefix into DRAM */
#define KVTIER_LOOKUP_PIN	_BITUL(2)	/* ... and pin it (F_LOOKUP_PIN) */

/**
 * struct kvtier_batch - argument of PUT, GET, LOOKUP, DROP, PIN, UNPIN
 * @blocks:	user pointer to @count struct kvtier_block.
 * @count:	1..KVTIER_BATCH_MAX.
 * @flags:	per-command flags (KVTIER_PUT_*, KVTIER_GET_*,
 *		KVTIER_LOOKUP_*), else 0.
 * @done:	out: entries with status 0; for LOOKUP the length of the
 *		longest resident prefix of the chain (with
 *		KVTIER_LOOKUP_LOAD or KVTIER_LOOKUP_PIN, of the prefix
 *		loaded or pinned, which ends early at a block that could
 *		not be).
 * @__pad:	must be 0.
 * @meta:	0, or (with KVTIER_F_META, else -EOPNOTSUPP) a user pointer
 *		to @count struct kvtier_meta, entry i's record at index i:
 *		in for PUT, COMMIT and ADOPT (the record stored with the
 *		block), out for GET and LOOKUP (the block's record, for
 *		each entry of status 0; len 0 for the others). Other
 *		commands: must be 0 (-EINVAL). An array that cannot be read
 *		(in) or written (out): -EFAULT, nothing done.
 * @part_off:	GET with KVTIER_GET_PART (needs KVTIER_F_PARTS, else
 *		-EOPNOTSUPP): the first byte of each block to copy; else 0.
 * @part_len:	GET with KVTIER_GET_PART: bytes to copy from @part_off,
 *		nonzero, @part_off + @part_len <= block_size; else 0. Each
 *		entry's buffer (or segments, adding up to @part_len) takes
 *		that range of its block. Out of range, or nonzero without
 *		the flag: the batch fails with -EINVAL.
 *
 * A GET with KVTIER_GET_PART serves blocks in DRAM from DRAM. A block only
 * on NVMe, of a pool created with parts, is read in the parts that cover
 * the range, each verified against its copy's table, and stays on NVMe; a
 * copy without a table (written before, or by a pool without parts) is
 * read whole into DRAM first, as a plain GET does.
 *
 * A GET with KVTIER_GET_DIRECT (needs KVTIER_F_DIRECT, else -EOPNOTSUPP;
 * not with KVTIER_GET_PART: -EINVAL) serves blocks in DRAM from DRAM. A
 * block only on NVMe whose entry's buffer (or each of its segments) starts
 * on a page boundary and is a whole number of pages long is read by the
 * device straight into that memory, verified there against the block's
 * checksum, and stays only on NVMe: the entry's tier says
 * KVTIER_TIER_NVME. Any other block (a compressed copy, a buffer not so
 * aligned, a copy that did not verify in place) is read as a plain GET
 * reads it. An entry that fails after its buffer was written has its
 * buffer zeroed; the buffer never holds another block's bytes.
 *
 * The command returns 0 once every entry has its status; a failure of
 * the whole batch (bad struct, bad @blocks pointer) returns -errno and
 * changes nothing.
 */
struct kvtier_batch {
	__u64 blocks;
	__u32 count;
	__u32 flags;
	__u32 done;
	__u32 __pad;
	__u64 meta;
	__u32 part_off;
	__u32 part_len;
};

#define KVTIER_META_MAX		64

/**
 * struct kvtier_meta - a block's metadata record
 * @len:	bytes of @data in use, 0..KVTIER_META_MAX; 0: no record. In:
 *		above KVTIER_META_MAX the entry fails with -EMSGSIZE, nothing
 *		stored.
 * @flags:	in: must be 0 (else the batch fails with -EINVAL); out: 0.
 * @data:	the record. In: bytes past @len are ignored; out: they are 0.
 *
 * The kernel keeps the record as given and never reads it: comparing it
 * with the runtime's own (model, tokenizer, dtype) is the runtime's job.
 * A block's record is fixed for its life; REPLACE gives the key a new
 * block, and a concurrent GET sees the old block with the old record or
 * the new one with the new.
 */
struct kvtier_meta {
	__u32 len;
	__u32 flags;
	__u8 data[KVTIER_META_MAX];
};

/**
 * struct kvtier_pool_stat - a pool's configuration and counters
 * @flags:	in: must be 0.
 * @capacity:	out: block addresses.
 * @block_size:	out: bytes per block.
 * @dram_blocks: out: blocks the pool may keep in DRAM.
 * @numa_node:	out: node of its DRAM, -1 for local.
 * @mode:	out: permission bits.
 * @uid:	out: owner.
 * @gid:	out: group.
 * @__pad:	out: 0.
 * @resident:	out: blocks resident per tier, indexed by KVTIER_TIER_*.
 * @pinned:	out: blocks pinned by any fd.
 * @puts:	out: blocks written by PUT.
 * @gets:	out: blocks read by GET.
 * @hits:	out: GET and LOOKUP entries that found their key.
 * @misses:	out: GET and LOOKUP entries that did not.
 * @evictions:	out: blocks that left DRAM to make room (demoted or dropped).
 * @drops:	out: blocks removed by DROP.
 * @bytes_in:	out: bytes written by PUT.
 * @bytes_out:	out: bytes read by GET.
 * @meta_bytes:	out: kernel memory the pool uses for block metadata (its
 *		index, and the blocks' records of KVTIER_F_META).
 * @demotions:	out: blocks written to NVMe.
 * @promotions:	out: blocks read back from NVMe into DRAM (a weight
 *		pool: from its file).
 * @bad_reads:	out: NVMe reads that failed or did not verify (served as
 *		misses); a weight pool: reads of its file that failed or
 *		found it changed.
 * @dirty:	out: DRAM blocks without a durable NVMe copy.
 * @dram_reserved: out: bytes of the dram_mb budget the pool holds: its
 *		DRAM share and its index.
 * @lost_blocks: out: blocks only on NVMe that the device's log reclaimed
 *		(it was full), synced or not: a cache eviction, which no
 *		SYNC reports.
 * @parts:	out: the pool's parts (struct kvtier_pool_create.parts).
 * @__pad2:	out: 0.
 * @part_reads:	out: parts read straight from NVMe by GET with
 *		KVTIER_GET_PART (each a range of one block, verified).
 * @compress:	out: the pool's compressor (struct kvtier_pool_create).
 * @compress_flags: out: its flags.
 * @__pad3:	out: 0.
 * @__pad4:	out: 0.
 * @z_blocks:	out: NVMe copies written compressed.
 * @z_raw_blocks: out: NVMe copies written as they are, in a pool with a
 *		compressor: the block did not shrink by a page (or there was
 *		no memory to try).
 * @z_bytes_in:	out: bytes of the blocks those copies hold.
 * @z_bytes_stored: out: bytes they take on the device (a compressed
 *		copy's exact length, a raw one's block size): @z_bytes_in /
 *		@z_bytes_stored is the compression ratio.
 * @z_bad:	out: compressed copies read back whose stored bytes or
 *		decompressed block did not verify (misses, also counted in
 *		@bad_reads).
 */
struct kvtier_pool_stat {
	__u32 flags;
	__u32 capacity;
	__u64 block_size;
	__u32 dram_blocks;
	__s32 numa_node;
	__u32 mode;
	__u32 uid;
	__u32 gid;
	__u32 __pad;
	__u64 resident[KVTIER_NR_TIERS];
	__u64 pinned;
	__u64 puts;
	__u64 gets;
	__u64 hits;
	__u64 misses;
	__u64 evictions;
	__u64 drops;
	__u64 bytes_in;
	__u64 bytes_out;
	__u64 meta_bytes;
	__u64 demotions;
	__u64 promotions;
	__u64 bad_reads;
	__u64 dirty;
	__u64 dram_reserved;
	__u64 lost_blocks;
	__u32 parts;
	__u32 __pad2;
	__u64 part_reads;
	__u8 compress;
	__u8 compress_flags;
	__u16 __pad3;
	__u32 __pad4;
	__u64 z_blocks;
	__u64 z_raw_blocks;
	__u64 z_bytes_in;
	__u64 z_bytes_stored;
	__u64 z_bad;
};

/**
 * struct kvtier_sync - make a pool's blocks and drops durable
 * @flags:	must be 0.
 * @__pad:	must be 0.
 * @written:	out: blocks written to NVMe by this call.
 * @reserved:	must be 0.
 *
 * Returns once every block that was in the pool when the call started is
 * on NVMe (or gone), and every DROP of the pool made before it is
 * recorded there: a DROP is durable once a SYNC of its pool returns 0
 * after it, and the block does not come back after a reload, a reboot or
 * a power cut (before, it may). They stay there as long as the device keeps them: a
 * full log reclaims its oldest region, and the blocks only there go, synced
 * or not, counted in lost_blocks of struct kvtier_pool_stat and of struct
 * kvtier_nvme_stat but reported by no SYNC (a cache eviction, not an
 * error). -ENODEV without an attached device; -EFBIG if the pool's
 * blocks are larger than a region; -ENOSPC if the devices cannot take them
 * (more dirty blocks than their logs hold at once, or the log wrapped all
 * the way round during the call); -EIO on a write error, by this call or
 * by an eviction since the last SYNC that had to drop a block not yet
 * durable, or for a DROP that could not be recorded (each reported once,
 * as fsync(2) reports a writeback error); -EBADF
 * on a read-only fd.
 */
struct kvtier_sync {
	__u32 flags;
	__u32 __pad;
	__u64 written;
	__u64 reserved[2];
};

/* NVMe attach flags. */
#define KVTIER_NVME_FORMAT	_BITUL(0)	/* write a new, empty store */

/**
 * struct kvtier_nvme_attach - attach a block device as the NVMe tier
 * @path:	user pointer to the NUL-terminated path of a block device.
 * @flags:	KVTIER_NVME_FORMAT.
 * @region_kib:	with KVTIER_NVME_FORMAT: region size in KiB (a power of two,
 *		1024..65536; 0 = 4096). Must be 0 without it.
 * @reserved:	must be 0.
 *
 * Needs CAP_SYS_ADMIN (-EPERM). Up to KVTIER_NVME_MAX devices may be
 * attached at once, each a store of its own; blocks are demoted to the one
 * with the shortest write queue. The device is opened exclusively (-EBUSY
 * if in use, attached already, or KVTIER_NVME_MAX are). A device whose first
 * block is neither zero nor a kvtier superblock is refused with -EMEDIUMTYPE
 * unless KVTIER_NVME_FORMAT is given. Pools recorded on the device come back
 * by name with their blocks; persistent pools already in memory are
 * recorded on it. A device with a pool whose compressor the kernel cannot
 * load is refused with -ENOPKG (its blocks would be lost otherwise).
 */
struct kvtier_nvme_attach {
	__u64 path;
	__u32 flags;
	__u32 region_kib;
	__u64 reserved[4];
};

#define KVTIER_NVME_MAX		4

/**
 * struct kvtier_nvme_detach - detach NVMe devices
 * @flags:	must be 0.
 * @__pad:	must be 0.
 * @path:	user pointer to the NUL-terminated path of the device to
 *		detach, or 0 for all of them.
 * @reserved:	must be 0.
 *
 * Needs CAP_SYS_ADMIN. Writes back every dirty block of the persistent pools
 * (to the devices attached), waits for the device's I/O, then forgets the
 * blocks whose copy is there: those also in DRAM become dirty, those only
 * there are gone until the device is attached again. -ENODEV if none (or
 * not that one) is attached.
 */
struct kvtier_nvme_detach {
	__u32 flags;
	__u32 __pad;
	__u64 path;
	__u64 reserved;
};

/* NVMe stat flags: one device's figures (@dev_index), not the sum. */
#define KVTIER_NVME_STAT_DEV	_BITUL(0)

/**
 * struct kvtier_nvme_stat - the NVMe tier's state and counters
 * @flags:	in: 0 for the sum over the devices attached, or
 *		KVTIER_NVME_STAT_DEV for the one at @dev_index.
 * @attached:	out: devices attached (0: the rest is zero); with
 *		KVTIER_NVME_STAT_DEV, 1 if @dev_index is in use.
 * @dev_bytes:	out: size of the devices.
 * @region_bytes: out: size of a region (of the first device for the sum).
 * @nr_regions:	out: regions on the devices.
 * @free_regions: out: regions holding no data.
 * @bytes_written: out: bytes written to the device, headers included.
 * @bytes_demoted: out: block bytes demoted.
 * @bytes_read:	out: bytes read from the device.
 * @reclaimed:	out: regions reclaimed.
 * @lost_blocks: out: blocks dropped because their region was reclaimed.
 * @rescued:	out: blocks written again, ahead of the reclaim of the
 *		region holding their copy, because they were in use: from
 *		DRAM, or (module parameter policy_clean_first) read from
 *		that region because they were read back since written.
 * @io_errors:	out: failed bios.
 * @attach_ns:	out: how long the attach took (index rebuild included).
 * @uuid:	out: the store's uuid (the first device's for the sum).
 * @dev_index:	in with KVTIER_NVME_STAT_DEV: 0..KVTIER_NVME_MAX-1; else 0.
 * @dev_major:	out with KVTIER_NVME_STAT_DEV: the device's major number.
 * @dev_minor:	out with KVTIER_NVME_STAT_DEV: its minor number.
 * @__pad:	must be 0.
 * @bytes_discarded: out: bytes the devices were told hold nothing: a
 *		formatted store's data area, the rest of each reclaimed region
 *		(module parameter discard). Ignored on input.
 * @bytes_stored: out: bytes the blocks demoted take on the device: equal
 *		to @bytes_demoted but for compressed copies, which take less
 *		(KVTIER_F_COMPRESS). Ignored on input.
 * @reserved:	must be 0.
 *
 * -EINVAL for a @dev_index out of range; an index not in use reads as not
 * attached.
 */
struct kvtier_nvme_stat {
	__u32 flags;
	__u32 attached;
	__u64 dev_bytes;
	__u64 region_bytes;
	__u32 nr_regions;
	__u32 free_regions;
	__u64 bytes_written;
	__u64 bytes_demoted;
	__u64 bytes_read;
	__u64 reclaimed;
	__u64 lost_blocks;
	__u64 io_errors;
	__u64 attach_ns;
	__u8 uuid[16];
	__u64 rescued;
	__u32 dev_index;
	__u32 dev_major;
	__u32 dev_minor;
	__u32 __pad;
	__u64 bytes_discarded;
	__u64 bytes_stored;
	__u64 reserved[1];
};

/**
 * struct kvtier_hint - one block of a prefetch group
 * @key:	in: the block's key (unless KVTIER_PREFETCH_ADDR).
 * @addr:	in with KVTIER_PREFETCH_ADDR: the block address; out: the
 *		block's address, or KVTIER_ADDR_NONE.
 * @status:	out: 0 (queued, or resident already); -ENOENT: no such block,
 *		the hint is dropped (the group goes on without it).
 * @tier:	out: where the block is now (KVTIER_TIER_*).
 * @flags:	in: 0, or KVTIER_HINT_PROB (with KVTIER_F_HINT_PROB); other
 *		bits -EINVAL.
 * @prob:	in with KVTIER_HINT_PROB: the chance that the block will be
 *		used, in 1/KVTIER_PROB_ONE (above it: -EINVAL); without the
 *		flag it must be 0 (-EINVAL) and the block is needed for sure.
 * @reserved:	must be 0 (-EINVAL).
 *
 * Hints are given in chain order: the first block of the request's prefix
 * first. A group's completion reports how long a prefix is resident.
 *
 * A probable hint (KVTIER_HINT_PROB, @prob below KVTIER_PROB_ONE) is a
 * block the runtime may need: an expert its router may pick. The engine
 * takes a group's sure hints first, in the order given, then its probable
 * ones, the likeliest first. From one half up a hint is taken as sure.
 * Below, the engine reads the block only if it can arrive before the
 * group's deadline and its probability clears a floor that rises as the
 * engine's queue fills, and protects it from eviction only while the
 * pool's protection is not scarce (the policy: kmod/policy.c,
 * kvt_policy_hint()). A probable block's protection ends at the group's
 * deadline, if it has one, as well as on use. A hint left unread is settled, not failed: the
 * group ends with status 0 and a @ready below its count, which counts the
 * prefix resident in the engine's order.
 */
struct kvtier_hint {
	__u64 key[2];
	__u64 addr;
	__s32 status;
	__u32 tier;
	__u32 flags;
	__u32 prob;
	__u32 reserved[2];
};

/* Hint flags. */
#define KVTIER_HINT_PROB	_BITUL(0)	/* @prob is given */
#define KVTIER_HINT_FLAGS	KVTIER_HINT_PROB

#define KVTIER_PROB_ONE		65536U	/* probability 1 in @prob */

/* PREFETCH flags. */
#define KVTIER_PREFETCH_ADDR		_BITUL(0)	/* hints name addresses */
#define KVTIER_PREFETCH_CANCEL_LATE	_BITUL(1)	/* cancel at deadline */
#define KVTIER_PREFETCH_BACKGROUND	_BITUL(2)	/* after all others */
#define KVTIER_PREFETCH_FLAGS		(KVTIER_PREFETCH_ADDR | \
					 KVTIER_PREFETCH_CANCEL_LATE | \
					 KVTIER_PREFETCH_BACKGROUND)

#define KVTIER_PRIO_MAX		7

/**
 * struct kvtier_prefetch - stage a group of blocks in a tier by a deadline
 * @hints:	user pointer to @count struct kvtier_hint.
 * @count:	1..KVTIER_BATCH_MAX.
 * @flags:	KVTIER_PREFETCH_ADDR, KVTIER_PREFETCH_CANCEL_LATE,
 *		KVTIER_PREFETCH_BACKGROUND.
 * @group:	nonzero id of the group, unique among the fd's live groups
 *		(-EEXIST); names it for KVTIER_IOC_CANCEL and its completion.
 * @cookie:	returned as is in the group's completion.
 * @deadline_ns: CLOCK_MONOTONIC time by which the blocks should be in
 *		@tier; 0: as soon as possible (never late). With
 *		KVTIER_PREFETCH_CANCEL_LATE a deadline already past is -ETIME.
 * @tier:	KVTIER_TIER_DRAM, or KVTIER_TIER_HBM for a pool with a device
 *		tier (-EOPNOTSUPP without one); anything else -EINVAL.
 * @priority:	0..KVTIER_PRIO_MAX, higher first among equal deadlines.
 * @queued:	out: hints that need I/O.
 * @resident:	out: hints already in @tier.
 * @reserved:	must be 0.
 *
 * Groups are staged earliest deadline first. A KVTIER_PREFETCH_BACKGROUND
 * group (best effort: blocks worth having, none waiting for them) yields to
 * all others: its reads start only when no other group has one to start,
 * with at most half of prefetch_qd in flight, so that a group with a
 * deadline arriving later still finds room; among background groups the
 * deadline orders as for the others. Modules before this flag refuse it
 * with -EINVAL. A group ends when every hinted
 * block that exists is in @tier (status 0, late or not), or at its deadline
 * with KVTIER_PREFETCH_CANCEL_LATE (-ETIME), or when cancelled (-ECANCELED),
 * or when a block could not be read or went away meanwhile (-EIO), or when
 * DRAM could not hold the group's blocks at once (-ENOSPC: more hints than
 * room that eviction can free; the prefix that fitted is reported); each
 * end queues one struct
 * kvtier_completion on the fd. Blocks a group brought in (or found resident)
 * are protected from eviction until used, until the group is cancelled or
 * its fd closed, or prefetch_hold_ms after its end, within a bounded share
 * of the pool's DRAM (prefetch_protect_pct). -EAGAIN: the fd has
 * KVTIER_PREFETCH_GROUPS_MAX groups live or completions unread.
 */
struct kvtier_prefetch {
	__u64 hints;
	__u32 count;
	__u32 flags;
	__u64 group;
	__u64 cookie;
	__u64 deadline_ns;
	__u32 tier;
	__u32 priority;
	__u32 queued;
	__u32 resident;
	__u64 reserved[2];
};

#define KVTIER_PREFETCH_GROUPS_MAX	1024

/* struct kvtier_completion.flags */
#define KVTIER_COMPLETION_LATE	_BITUL(0)	/* ended after its deadline */

/**
 * struct kvtier_completion - the end of a prefetch group, read(2) from the
 * pool fd
 * @group:	the group's id.
 * @cookie:	the group's cookie.
 * @status:	0, -ETIME, -ECANCELED, -EIO or -ENOSPC (see struct
 *		kvtier_prefetch).
 * @ready:	hints, from the first, whose blocks are in the target tier
 *		now: the usable prefix.
 * @count:	hints in the group.
 * @flags:	KVTIER_COMPLETION_LATE.
 * @end_ns:	CLOCK_MONOTONIC time of the end.
 * @reserved:	0.
 *
 * read(2) returns whole records, as many as fit (-EINVAL if not one fits),
 * blocking until one is there unless the fd is O_NONBLOCK (-EAGAIN).
 */
struct kvtier_completion {
	__u64 group;
	__u64 cookie;
	__s32 status;
	__u32 ready;
	__u32 count;
	__u32 flags;
	__u64 end_ns;
	__u64 reserved;
};

/* CANCEL flags. */
#define KVTIER_CANCEL_ALL	_BITUL(0)	/* every group of the fd */

/**
 * struct kvtier_cancel - withdraw prefetch groups of this fd
 * @group:	the group (0 with KVTIER_CANCEL_ALL).
 * @flags:	KVTIER_CANCEL_ALL.
 * @__pad:	must be 0.
 * @cancelled:	out: groups cancelled that had not ended (each queues a
 *		-ECANCELED completion); ended groups only lose their
 *		protection.
 * @__pad2:	must be 0.
 * @reserved:	must be 0.
 *
 * -ENOENT: no live group has that id.
 */
struct kvtier_cancel {
	__u64 group;
	__u32 flags;
	__u32 __pad;
	__u32 cancelled;
	__u32 __pad2;
	__u64 reserved[2];
};

/**
 * struct kvtier_eventfd - signal an eventfd at every prefetch completion
 * @fd:		an eventfd, or -1 to stop.
 * @flags:	must be 0.
 * @reserved:	must be 0.
 */
struct kvtier_eventfd {
	__s32 fd;
	__u32 flags;
	__u64 reserved[2];
};

/**
 * struct kvtier_uring_cmd - the command area of an IORING_OP_URING_CMD SQE
 * @arg:	user pointer to the command's struct, as for the ioctl
 *		(struct kvtier_batch, or struct kvtier_prefetch).
 * @reserved:	must be 0.
 *
 * sqe->cmd_op is the ioctl number: KVTIER_IOC_PUT, KVTIER_IOC_GET,
 * KVTIER_IOC_LOOKUP, KVTIER_IOC_PREFETCH, and with KVTIER_F_RESERVE
 * KVTIER_IOC_RESERVE, KVTIER_IOC_COMMIT, KVTIER_IOC_ABORT (others:
 * -EOPNOTSUPP). The CQE's
 * res is what the ioctl would return; the struct's out fields are written
 * back before the CQE is posted.
 */
struct kvtier_uring_cmd {
	__u64 arg;
	__u64 reserved;
};

/* HBM backends. */
#define KVTIER_HBM_EMUL		1	/* kernel memory (hbm_emul_mb) */
#define KVTIER_HBM_USER		2	/* the runtime's arena and mover */

#define KVTIER_HBM_SLOTS_MAX	65536

/**
 * struct kvtier_hbm_attach - give a pool a device tier
 * @backend:	KVTIER_HBM_EMUL or KVTIER_HBM_USER.
 * @slots:	arena size in blocks, 1..KVTIER_HBM_SLOTS_MAX.
 * @flags:	must be 0.
 * @mover_fd:	out with KVTIER_HBM_USER: the mover's fd (O_CLOEXEC); -1
 *		otherwise.
 * @reserved:	must be 0.
 *
 * On a pool fd that may write (-EBADF otherwise). -EBUSY if the pool has a
 * device tier (a detached one may be replaced once its mover fd is
 * closed); -ENOSPC if an emulated arena does not fit what is left of
 * hbm_emul_mb; -EINVAL; -ENOMEM; -EMFILE/-ENFILE when the mover fd cannot
 * be made (the arena is then left detached).
 */
struct kvtier_hbm_attach {
	__u32 backend;
	__u32 slots;
	__u32 flags;
	__s32 mover_fd;
	__u64 reserved[2];
};

/**
 * struct kvtier_hbm_stat - a pool's device tier
 * @flags:	in: must be 0.
 * @attached:	out: 1 with a live device tier. After a detach it is 0
 *		(and @used too) while the other fields keep the detached
 *		arena's figures, until a new arena replaces them; all zero
 *		when the pool never had one.
 * @backend:	out: KVTIER_HBM_*.
 * @slots:	out: arena size in blocks.
 * @used:	out: slots holding a block (or being filled).
 * @__pad:	out: 0.
 * @to_dev:	out: blocks copied DRAM -> device.
 * @from_dev:	out: blocks copied device -> DRAM (adopted blocks written
 *		down).
 * @adopted:	out: blocks taken by KVTIER_IOC_ADOPT.
 * @evictions:	out: slots given back to make room.
 * @copy_errors: out: copies that failed (the block stayed where it was, or
 *		an adopted block was lost).
 * @timeouts:	out: detaches because the mover did not report a copy
 *		within hbm_timeout_ms (at most one per arena).
 * @detached:	out: detaches, for any reason (mover gone, timeout).
 * @reserved:	must be 0.
 */
struct kvtier_hbm_stat {
	__u32 flags;
	__u32 attached;
	__u32 backend;
	__u32 slots;
	__u32 used;
	__u32 __pad;
	__u64 to_dev;
	__u64 from_dev;
	__u64 adopted;
	__u64 evictions;
	__u64 copy_errors;
	__u64 timeouts;
	__u64 detached;
	__u64 reserved[2];
};

/**
 * struct kvtier_adopt - one block made in device memory
 * @key:	in: its key (not in the pool: -EEXIST).
 * @slot:	in: the slot that holds it (not below the arena size:
 *		-EINVAL; a slot in use: -EBUSY).
 * @status:	out: 0 or a negative errno.
 * @addr:	out: its block address, or KVTIER_ADDR_NONE.
 * @reserved:	must be 0.
 *
 * KVTIER_IOC_ADOPT takes a struct kvtier_batch whose @blocks points to
 * struct kvtier_adopt entries. Each adopted block is in HBM at once and is
 * written down to DRAM in the background (then to NVMe as any other);
 * reading it (GET, a fault) waits for that. Its DRAM is claimed at ADOPT:
 * -ENOSPC when none can be freed. -ENODEV without a device tier.
 */
struct kvtier_adopt {
	__u64 key[2];
	__u32 slot;
	__s32 status;
	__u64 addr;
	__u64 reserved;
};

/*
 * The reservation window of a pool fd: mmap offset
 * (capacity + addr) * block_size is block address addr's writable view
 * while this fd holds a reservation of it (KVTIER_IOC_RESERVE), right after
 * the read-only view of every block (offset addr * block_size). A mapping
 * lies wholly in one of the two; in the window it must be MAP_SHARED. A
 * page of a block the fd does not hold reserved raises SIGBUS.
 *
 * RESERVE, COMMIT and ABORT take a struct kvtier_batch of struct
 * kvtier_block entries whose @buf and @nsegs are 0 (else -EINVAL):
 *
 * RESERVE: in: @key. out: @addr, the block's address (its bytes at
 * KVTIER_RESERVE_WINDOW(capacity, addr, block_size)), @tier DRAM. Its
 * pages come from the pool's DRAM share like a PUT's, evicting if need be,
 * and read as zeros or as bytes of an earlier block of the same pool. Entry
 * status: -EEXIST (the key is in the pool; KVTIER_PUT_REPLACE in the
 * batch's flags reserves it anyway, to replace it), -EDQUOT (the fd holds
 * its most reservations, the module parameter reserve_max), -ENOSPC (the
 * pool's reservations hold half of its DRAM share, or no DRAM can be
 * freed), -ENOMEM.
 *
 * COMMIT: in: @key and @addr as RESERVE gave them (a failed entry keeps
 * them, to retry with). The block's window pages
 * are unmapped, its checksum taken, and the key published as a PUT would:
 * a concurrent GET sees the old block or this one whole. Entry status:
 * -ENOENT (the fd holds no reservation of that key at that address),
 * -EALREADY (that reservation was committed already), -EEXIST (the key was
 * stored meanwhile and the batch has no KVTIER_PUT_REPLACE; the reservation
 * stays), -EBUSY (replacing a pinned block; it stays too). Commit only once
 * every write into the window, a device's included, has ended.
 *
 * ABORT: in: @key and @addr. The block goes back, unpublished. Entry
 * status: -ENOENT, -EALREADY, as COMMIT.
 *
 * A read-only pool fd can do none of them: -EBADF.
 */
#define KVTIER_RESERVE_WINDOW(capacity, addr, block_size)		\
	(((__u64)(capacity) + (addr)) * (block_size))

/* Mover commands (read(2) of a mover fd). */
#define KVTIER_MOVE_TO_DEV	1	/* DRAM block -> slot */
#define KVTIER_MOVE_FROM_DEV	2	/* slot -> DRAM block */

/**
 * struct kvtier_move - a copy the mover must do, read(2) from the mover fd
 * @seq:	its id, to give back in the struct kvtier_moved.
 * @op:		KVTIER_MOVE_TO_DEV or KVTIER_MOVE_FROM_DEV.
 * @slot:	the arena slot.
 * @addr:	the block address: the DRAM side is the pool mmap at
 *		@addr * @bytes (TO_DEV reads it there).
 * @bytes:	the block size.
 * @flags:	0 (a flag will be set only for a mover that asked for it
 *		when its arena was attached).
 * @reserved:	0.
 */
struct kvtier_move {
	__u64 seq;
	__u32 op;
	__u32 slot;
	__u64 addr;
	__u64 bytes;
	__u32 flags;
	__u32 reserved[3];
};

/**
 * struct kvtier_moved - a copy done, write(2) to the mover fd
 * @seq:	the command's.
 * @status:	0, or a negative errno: the copy failed.
 * @__pad:	must be 0.
 * @buf:	FROM_DEV with status 0: user pointer to the block's bytes,
 *		copied from the slot by the mover; the kernel copies them into
 *		the DRAM block. 0 for TO_DEV.
 *
 * write(2) takes whole records and returns the bytes taken; an unknown
 * @seq, a bad @status or @buf: -EINVAL (-EFAULT for an unreadable @buf).
 */
struct kvtier_moved {
	__u64 seq;
	__s32 status;
	__u32 __pad;
	__u64 buf;
};

/* struct kvtier_event.type */
#define KVTIER_EVENT_STORED	1	/* a key entered the pool */
#define KVTIER_EVENT_MOVED	2	/* the highest tier holding it changed */
#define KVTIER_EVENT_REMOVED	3	/* it left the pool */
#define KVTIER_EVENT_CLEARED	4	/* every block left: the pool is gone */
#define KVTIER_EVENT_OVERFLOW	5	/* this reader lost events */

/*
 * struct kvtier_event.reason: why a key was stored (PUT .. REPLAY), moved
 * (LOAD .. UNSTAGE) or removed (DROP .. DETACH), or the pool cleared
 * (DESTROY).
 */
#define KVTIER_EVR_PUT		1	/* PUT or COMMIT of a new key */
#define KVTIER_EVR_REPLACE	2	/* PUT or COMMIT with KVTIER_PUT_REPLACE */
#define KVTIER_EVR_ADOPT	3	/* KVTIER_IOC_ADOPT */
#define KVTIER_EVR_REPLAY	4	/* found on an NVMe device it attached */
#define KVTIER_EVR_LOAD		5	/* read back from NVMe into DRAM */
#define KVTIER_EVR_EVICT	6	/* left DRAM to make room */
#define KVTIER_EVR_SHRINK	7	/* left DRAM under host memory pressure */
#define KVTIER_EVR_STAGE	8	/* copied into its HBM slot */
#define KVTIER_EVR_UNSTAGE	9	/* its HBM slot was given back */
#define KVTIER_EVR_DROP		10	/* KVTIER_IOC_DROP */
#define KVTIER_EVR_BAD_READ	11	/* its NVMe copy failed or did not verify */
#define KVTIER_EVR_LOG_RECLAIM	12	/* the NVMe log reclaimed its only copy */
#define KVTIER_EVR_IO_ERROR	13	/* a copy to NVMe or from HBM failed */
#define KVTIER_EVR_DETACH	14	/* its only copy's device was detached */
#define KVTIER_EVR_DESTROY	15	/* CLEARED: the pool's last file closed */

/**
 * struct kvtier_event - one event of a pool, read(2) from an events fd
 * @seq:	its sequence number: 1 for a pool's first event, then one more
 *		for each. OVERFLOW: the first event lost.
 * @time_ns:	CLOCK_MONOTONIC time it happened.
 * @key:	the block's key; 0 for CLEARED and OVERFLOW.
 * @addr:	the block's address; KVTIER_ADDR_NONE for CLEARED and
 *		OVERFLOW.
 * @type:	KVTIER_EVENT_*.
 * @tier:	STORED: the tier it was stored in; MOVED: the tier it moved
 *		to; REMOVED: the tier it was last in (KVTIER_TIER_*); else 0.
 * @from:	MOVED: the tier it left; STORED with KVTIER_EVR_REPLACE: the
 *		tier of the block it replaced; else 0.
 * @reason:	KVTIER_EVR_*; 0 for OVERFLOW.
 * @flags:	0.
 * @lost:	OVERFLOW: events lost, @seq to @seq + @lost - 1; the next
 *		record is event @seq + @lost. Else 0.
 *
 * The tier is the highest holding the block, as LOOKUP reports it (HBM,
 * then DRAM, then NVMe); a copy written to NVMe while the block stays in
 * DRAM is no move. A key replaced is STORED again (KVTIER_EVR_REPLACE),
 * without a REMOVED before. CLEARED is a pool's last event: every key it
 * held is gone. A key is in the pool from its STORED to its REMOVED.
 */
struct kvtier_event {
	__u64 seq;
	__u64 time_ns;
	__u64 key[2];
	__u64 addr;
	__u16 type;
	__u8 tier;
	__u8 from;
	__u16 reason;
	__u16 flags;
	__u64 lost;
};

/* KVTIER_IOC_EVENTS flags. */
#define KVTIER_EVENTS_FROM	_BITUL(0)	/* start at @seq */
#define KVTIER_EVENTS_NONBLOCK	_BITUL(1)	/* the fd is O_NONBLOCK */
#define KVTIER_EVENTS_FLAGS	(KVTIER_EVENTS_FROM | KVTIER_EVENTS_NONBLOCK)

/**
 * struct kvtier_events - open an events fd on a pool
 * @flags:	KVTIER_EVENTS_FROM, KVTIER_EVENTS_NONBLOCK.
 * @fd:		out: the events fd (O_CLOEXEC).
 * @seq:	in with KVTIER_EVENTS_FROM: the first event wanted, 1 up to
 *		the next event's number (-EINVAL past it); else must be 0.
 *		out: the first event the fd will return.
 * @log_id:	out: the pool's event log: sequence numbers of another log
 *		(the pool made again, or after a module reload) are
 *		unrelated.
 * @ring:	out: events the pool's ring holds (events_ring).
 * @__pad:	must be 0.
 * @reserved:	must be 0.
 *
 * Any pool fd may open one: reading a pool's events needs read access to
 * it, which every pool fd has. The events fd does not keep the pool: once
 * the pool's last fd and mapping are gone, a reader gets what was left,
 * then CLEARED, then end of file (read(2) returns 0, poll(2) EPOLLHUP).
 *
 * read(2) returns whole records, as many as fit (-EINVAL if not one fits),
 * blocking until one is there unless the fd is O_NONBLOCK (-EAGAIN). A
 * reader whose next event left the ring (it was slow, or asked with
 * KVTIER_EVENTS_FROM for one before the ring's oldest) reads one
 * KVTIER_EVENT_OVERFLOW record first, then the oldest the ring holds: it
 * should take a census (KVTIER_IOC_CENSUS) again. -ENOMEM when the ring
 * cannot be allocated; -EMFILE, -ENFILE.
 */
struct kvtier_events {
	__u32 flags;
	__s32 fd;
	__u64 seq;
	__u64 log_id;
	__u32 ring;
	__u32 __pad;
	__u64 reserved[2];
};

/* struct kvtier_census_entry.flags: where the block has copies now. */
#define KVTIER_CENSUS_HBM	_BITUL(0)
#define KVTIER_CENSUS_DRAM	_BITUL(1)
#define KVTIER_CENSUS_NVME	_BITUL(2)
#define KVTIER_CENSUS_PINNED	_BITUL(3)	/* pinned by some fd */

/**
 * struct kvtier_census_entry - one key of a census
 * @key:	the key.
 * @addr:	its block address.
 * @tier:	its tier as the event log last told it (KVTIER_TIER_*).
 * @flags:	KVTIER_CENSUS_*: its copies and pins when it was listed.
 */
struct kvtier_census_entry {
	__u64 key[2];
	__u64 addr;
	__u32 tier;
	__u32 flags;
};

/**
 * struct kvtier_census - a census: list a pool's keys, by cursor
 * @entries:	user pointer to @count struct kvtier_census_entry.
 * @count:	1..KVTIER_BATCH_MAX.
 * @flags:	must be 0.
 * @cursor:	in: the block address to start at (0: the first); out: where
 *		the next call goes on, or KVTIER_ADDR_NONE when the listing
 *		reached the end (given back, it lists nothing). Past the
 *		pool's capacity, other than that: -EINVAL.
 * @seq:	out: the last event of the pool's log when the call began (0:
 *		none yet): the keys listed reflect it and every one before.
 * @log_id:	out: the pool's event log (struct kvtier_events).
 * @meta:	0, or (with KVTIER_F_META, else -EOPNOTSUPP) a user pointer
 *		to @count struct kvtier_meta: each key's record.
 * @done:	out: keys written, at the start of @entries (and @meta).
 * @__pad:	must be 0.
 * @reserved:	must be 0.
 *
 * Keys come in address order, each as it was at event @seq or later (the
 * kernel lists a few hundred at a time). A listing, of one call or of
 * several, is consistent with the pool's events after the @seq of its
 * first call: apply them, in order, to what it listed, and the result is
 * the pool as of the last event applied. A key stored after the listing
 * went past its address shows only in those events. Listing changes
 * nothing: an array that cannot be written is -EFAULT (the listing can be
 * taken again); a task killed meanwhile, -EINTR.
 */
struct kvtier_census {
	__u64 entries;
	__u32 count;
	__u32 flags;
	__u64 cursor;
	__u64 seq;
	__u64 log_id;
	__u64 meta;
	__u32 done;
	__u32 __pad;
	__u64 reserved[2];
};

/*
 * 0xBC has no entry in Documentation/userspace-api/ioctl/ioctl-number.rst
 * (Linux 6.1, nor later ones as of this writing); see
 * Documentation/userspace-api.rst.
 */
/*
 * The size of the first version of each command's struct: a caller built
 * against this header or any later one passes at least this much.
 */
#define KVTIER_API_SIZE_VER0		96
#define KVTIER_POOL_CREATE_SIZE_VER0	128
#define KVTIER_POOL_OPEN_SIZE_VER0	88
#define KVTIER_POOL_DESTROY_SIZE_VER0	88
#define KVTIER_NVME_ATTACH_SIZE_VER0	48
#define KVTIER_NVME_DETACH_SIZE_VER0	24
#define KVTIER_NVME_STAT_SIZE_VER0	152
#define KVTIER_BATCH_SIZE_VER0		40
#define KVTIER_POOL_STAT_SIZE_VER0	216
#define KVTIER_SYNC_SIZE_VER0		32
#define KVTIER_PREFETCH_SIZE_VER0	72
#define KVTIER_CANCEL_SIZE_VER0		40
#define KVTIER_EVENTFD_SIZE_VER0	24
#define KVTIER_HBM_ATTACH_SIZE_VER0	32
#define KVTIER_HBM_STAT_SIZE_VER0	96
#define KVTIER_EVENTS_SIZE_VER0		48
#define KVTIER_CENSUS_SIZE_VER0	72

#define KVTIER_IOC_MAGIC	0xBC

/* Control fd. */
#define KVTIER_IOC_API		_IOWR(KVTIER_IOC_MAGIC, 0x00, struct kvtier_api)
#define KVTIER_IOC_POOL_CREATE	_IOWR(KVTIER_IOC_MAGIC, 0x01, struct kvtier_pool_create)
#define KVTIER_IOC_POOL_OPEN	_IOWR(KVTIER_IOC_MAGIC, 0x02, struct kvtier_pool_open)
#define KVTIER_IOC_POOL_DESTROY	_IOW(KVTIER_IOC_MAGIC, 0x03, struct kvtier_pool_destroy)
#define KVTIER_IOC_NVME_ATTACH	_IOW(KVTIER_IOC_MAGIC, 0x04, struct kvtier_nvme_attach)
#define KVTIER_IOC_NVME_DETACH	_IOW(KVTIER_IOC_MAGIC, 0x05, struct kvtier_nvme_detach)
#define KVTIER_IOC_NVME_STAT	_IOWR(KVTIER_IOC_MAGIC, 0x06, struct kvtier_nvme_stat)

/* Pool fd. */
#define KVTIER_IOC_PUT		_IOWR(KVTIER_IOC_MAGIC, 0x10, struct kvtier_batch)
#define KVTIER_IOC_GET		_IOWR(KVTIER_IOC_MAGIC, 0x11, struct kvtier_batch)
#define KVTIER_IOC_LOOKUP	_IOWR(KVTIER_IOC_MAGIC, 0x12, struct kvtier_batch)
#define KVTIER_IOC_DROP		_IOWR(KVTIER_IOC_MAGIC, 0x13, struct kvtier_batch)
#define KVTIER_IOC_PIN		_IOWR(KVTIER_IOC_MAGIC, 0x14, struct kvtier_batch)
#define KVTIER_IOC_UNPIN	_IOWR(KVTIER_IOC_MAGIC, 0x15, struct kvtier_batch)
#define KVTIER_IOC_STAT		_IOWR(KVTIER_IOC_MAGIC, 0x16, struct kvtier_pool_stat)
#define KVTIER_IOC_SYNC		_IOWR(KVTIER_IOC_MAGIC, 0x17, struct kvtier_sync)
#define KVTIER_IOC_PREFETCH	_IOWR(KVTIER_IOC_MAGIC, 0x18, struct kvtier_prefetch)
#define KVTIER_IOC_CANCEL	_IOWR(KVTIER_IOC_MAGIC, 0x19, struct kvtier_cancel)
#define KVTIER_IOC_EVENTFD	_IOWR(KVTIER_IOC_MAGIC, 0x1a, struct kvtier_eventfd)
#define KVTIER_IOC_HBM_ATTACH	_IOWR(KVTIER_IOC_MAGIC, 0x1b, struct kvtier_hbm_attach)
#define KVTIER_IOC_HBM_STAT	_IOWR(KVTIER_IOC_MAGIC, 0x1c, struct kvtier_hbm_stat)
#define KVTIER_IOC_ADOPT	_IOWR(KVTIER_IOC_MAGIC, 0x1d, struct kvtier_batch)
#define KVTIER_IOC_RESERVE	_IOWR(KVTIER_IOC_MAGIC, 0x1e, struct kvtier_batch)
#define KVTIER_IOC_COMMIT	_IOWR(KVTIER_IOC_MAGIC, 0x1f, struct kvtier_batch)
#define KVTIER_IOC_ABORT	_IOWR(KVTIER_IOC_MAGIC, 0x20, struct kvtier_batch)
#define KVTIER_IOC_EVENTS	_IOWR(KVTIER_IOC_MAGIC, 0x21, struct kvtier_events)
#define KVTIER_IOC_CENSUS	_IOWR(KVTIER_IOC_MAGIC, 0x22, struct kvtier_census)

#endif /* _UAPI_LINUX_KVTIER_H */
