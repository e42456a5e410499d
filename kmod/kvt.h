/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvtier internal interfaces.
 *
 * Objects and their lifetimes:
 *
 *  struct kvt_pool	one block address space. Referenced by the registry
 *			while it has a name, by every open pool file, and
 *			by every mapping (through the file). Freed on the
 *			last reference, which frees its blocks.
 *  struct kvt_block	one slot of pool->blocks[], indexed by the block
 *			address. Holds the key, the DRAM pages and the links
 *			of the key hash and the replacement list.
 *  struct kvt_handle	one open pool file: its access mode and its pins.
 *  struct kvt_evlog	a pool's event log (events.c). Referenced by its
 *			pool and by every events fd reading it, so it
 *			outlives the pool while read.
 *
 * Lock order: kvt_nvme_lock -> kvt_pools_lock -> handle->pin_lock ->
 * pool->map_sem -> pool->lock -> kvt_nvme_qlock, pool->lock -> the event
 * log's lock, and pool->lock -> handle->pins' xa_lock (UNPIN); the NVMe writer holds
 * nvme->lock -> kvt_pools_lock while it reclaims a region.
 * The shrinker only trylocks kvt_pools_lock and pool->map_sem (it may run
 * in reclaim under either).
 */
#ifndef _KVT_H
#define _KVT_H

#include <linux/types.h>
#include <linux/spinlock.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/kref.h>
#include <linux/kobject.h>
#include <linux/xarray.h>
#include <linux/wait.h>
#include <linux/kvtier.h>
#include "index.h"
#include "policy.h"

#define KVT_NIL			U32_MAX

/* Block states; a block is visible to commands only when READY. */
enum kvt_block_state {
	KVT_BLK_FREE = 0,	/* on the free list, no memory */
	KVT_BLK_FILLING,	/* a PUT owns it and is copying data in */
	KVT_BLK_READY,		/* in the key hash; readable */
	KVT_BLK_DYING,		/* unlinked; freed when its last user goes */
};

/* Evicted blocks' pages a pool keeps for its next blocks (tier_dram.c). */
#define KVT_STASH_BLOCKS	2

/* A block's DRAM pages, in chunks of 2^order pages. */
union kvt_mem {
	struct page *page;	/* one chunk: its first page */
	struct page **chunks;	/* several chunks: their first pages */
};

/*
 * struct kvt_block - one block address
 *
 * Kept small on purpose: DRAM metadata per block is a figure of merit
 * (dram_meta_bytes_per_block). Links are u32 addresses, not pointers.
 * Every field is protected by pool->lock, except the page contents.
 *
 * ncrc is the crc32c of the block's bytes started from 0, whatever tier
 * holds them: taken by PUT's copy (kvt_dram_copy_in()), by an HBM
 * write-down, or derived from the NVMe record at attach. A record's keyed
 * crc is derived from it (kvt_rec_crc()), so writing a block to NVMe reads
 * none of its bytes, and a read from NVMe is checked against it. It
 * changes only while no write-back of the block can be under way: FILLING
 * (set by the PUT that owns the block, without the lock), LOADING or
 * without a DRAM copy (under pool->lock). So the writer, which holds the
 * block as a user, reads it without the lock, like the page contents.
 *
 * umeta, the runtime's record (struct kvtier_meta), is set before the
 * block is published (FILLING, or at attach) and freed with the block: for
 * the life of a READY block it does not change, so anyone holding the
 * block (a user) reads it without the lock too.
 */
struct kvt_block {
	u64 key[2];
	union kvt_mem mem;
	struct kvt_umeta *umeta;	/* the runtime's record, or NULL */
	u32 prev;		/* replacement list, or free list (next only) */
	u32 next;
	u32 nloc;		/* NVMe copy: device page of its data, or NIL */
	u32 ncrc;		/* crc32c of its bytes, from 0 (struct doc) */
	u16 pins;		/* pins held by all fds */
	u16 users;		/* GETs copying out, I/O in flight */
	u8 state;		/* enum kvt_block_state */
	u8 order;		/* chunk order of mem */
	u8 flags;		/* KVT_BF_* */
	u8 pol;			/* KVT_PB_*: the policy's (policy.h) */
	u8 hold;		/* prefetch groups protecting it */
	u8 ndev;		/* NVMe copy: the device (kvt_nvmes[]) */
	u8 evtier;		/* tier the event log last told (0: none) */
};

/**
 * struct kvt_umeta - a block's record of the runtime's (struct kvtier_meta)
 * @len: bytes of @data, 1..KVTIER_META_MAX
 * @data: the record, as given
 */
struct kvt_umeta {
	u8 len;
	u8 data[];
};

/* Block flags: I/O and transitions in progress on a READY block. */
#define KVT_BF_WB		BIT(0)	/* being written to NVMe */
#define KVT_BF_LOADING		BIT(1)	/* being read from NVMe */
#define KVT_BF_EVICTING		BIT(2)	/* its DRAM copy is going */
#define KVT_BF_MOVING		BIT(3)	/* its only copy is being relocated */
#define KVT_BF_BUSY		(KVT_BF_LOADING | KVT_BF_EVICTING | \
				 KVT_BF_MOVING)

/* The block has DRAM pages (maybe still being read into, or going). */
static inline bool kvt_in_dram(const struct kvt_block *blk)
{
	return blk->mem.page;
}

/* The block's DRAM copy is there to use: not being read, not going. */
static inline bool kvt_dram_ready(const struct kvt_block *blk)
{
	return kvt_in_dram(blk) && !(blk->flags & KVT_BF_BUSY);
}

/* struct kvt_list - a list of blocks linked by address */
struct kvt_list {
	u32 head;		/* most recently used */
	u32 tail;		/* least recently used */
	u32 nr;
};

struct kvt_pool;
struct iov_iter;

/**
 * struct kvt_res_hooks - what a tier tells the residency layer about a
 * block, from the completion of its I/O; each called with pool->lock held
 * @unlink: the block's only good copy is gone: it leaves the pool, for
 *	    the reason given (KVTIER_EVR_BAD_READ, KVTIER_EVR_IO_ERROR)
 * @landed: its DRAM copy arrived and is whole: it may be evicted again
 * @cleaned: its NVMe copy was written and it is still in DRAM: evicting
 *	     it writes nothing now
 * @forget_nvme: its NVMe copy is gone (the region was reclaimed)
 * @moved: the tier took a block in or gave it back (HBM: a slot filled,
 *	   or given back), for the reason given: its tier may have changed
 * @put: the I/O that held it as a user ended; drops pool->lock, frees a
 *	 block unlinked meanwhile, and tells the prefetch engine
 *
 * The tiers sit below the residency layer and never call it by name: it
 * gives each pool these when the pool is made (kvt_res_pool_init()).
 */
struct kvt_res_hooks {
	void (*unlink)(struct kvt_pool *pool, u32 addr, u16 why);
	void (*landed)(struct kvt_pool *pool, u32 addr);
	void (*cleaned)(struct kvt_pool *pool, u32 addr);
	void (*forget_nvme)(struct kvt_pool *pool, u32 addr);
	void (*moved)(struct kvt_pool *pool, u32 addr, u16 why);
	void (*put)(struct kvt_pool *pool, u32 addr);
};

struct kvt_pool_counters {
	u64 puts;
	u64 gets;
	u64 hits;
	u64 misses;
	u64 evictions;
	u64 drops;
	u64 bytes_in;
	u64 bytes_out;
	u64 demotions;
	u64 promotions;
	u64 bad_reads;
	u64 lost_blocks;	/* only on NVMe, dropped when reclaimed */
	u64 part_reads;		/* parts read from NVMe (KVTIER_GET_PART) */
	u64 z_blocks;		/* NVMe copies written compressed */
	u64 z_raw_blocks;	/* ... written raw by a compressing pool */
	u64 z_bytes_in;		/* block bytes of those copies */
	u64 z_bytes_stored;	/* and the bytes they take on the device */
	u64 z_bad;		/* compressed copies that did not verify */
};

/**
 * struct kvt_zloc - where a block's compressed NVMe copy ends
 * @bytes: its stored bytes; 0: the copy is raw
 * @crc: their keyed crc (struct kvt_disk_rec)
 */
struct kvt_zloc {
	u32 bytes;
	u32 crc;
};

struct kvt_pool {
	struct kref ref;
	void (*release)(struct kref *ref);	/* pool.c's, on the last put */
	char name[KVTIER_NAME_MAX];

	/* Configuration, constant after create. */
	u64 block_size;
	u32 pages_per_block;
	u8 chunk_order;		/* preferred chunk order */
	u32 capacity;
	u32 dram_blocks;
	int nid;		/* NUMA_NO_NODE: local */
	umode_t mode;
	kuid_t uid;
	kgid_t gid;
	u64 seed;		/* key hash seed */
	u64 id;			/* identity of its records on NVMe */
	u32 flags;		/* KVTIER_POOL_FAULT_NOLOAD */
	u32 parts;		/* struct kvtier_pool_create.parts */
	u8 compress;		/* KVTIER_COMPRESS_*, its flags below */
	u8 compress_flags;
	/* Entry in each NVMe device's pool table, or -1; kvt_nvme_lock. */
	s16 table_slot[KVTIER_NVME_MAX];
	bool persistent;	/* recorded on every device attached */
	u32 nbuckets;
	struct mem_cgroup *memcg;	/* charged for the pool's memory */
	struct inode *inode;	/* address_space shared by all fds */

	/* Registry membership, protected by kvt_pools_lock. */
	struct list_head node;
	bool named;
	struct kobject *kobj;

	/*
	 * Orders mmap faults (read) against freeing or reusing block memory
	 * (write): a fault installs its PTEs while holding it for read, so
	 * once a block is DYING and the writer has been through, a zap of
	 * the block's range leaves no mapping of its pages.
	 */
	struct rw_semaphore map_sem;

	/*
	 * Protects blocks[], buckets[], lru, free, nr_dram, pinned and
	 * stats. Never held across a copy or an allocation.
	 */
	spinlock_t lock;
	struct kvt_block *blocks;	/* capacity entries, by address */
	struct kvt_zloc *zloc;		/* by address, if it compresses */
	struct kvt_bucket *buckets;	/* the key hash (index.c) */
	struct kvt_list lru;		/* READY, unpinned blocks */
	struct kvt_list clean;		/* the same with an NVMe copy (policy.h) */
	struct kvt_policy pol;		/* the policy's state (policy.h) */
	struct kvt_hbm *hbm;		/* the device tier, or NULL */
	struct kvt_file *file;		/* a weight pool's file, or NULL */
	const struct kvt_res_hooks *res;	/* the residency layer's */
	struct kvt_evlog *events;	/* told under this lock (events.c) */
	u32 free;			/* first FREE address */
	u32 nr_dram;			/* blocks holding DRAM pages */
	u32 nr_ready;
	u32 nr_pinned;
	u32 nr_reserved;		/* FILLING blocks files hold reserved */
	u32 nr_held;			/* blocks with a prefetch hold */
	u32 nr_nvme;			/* READY blocks with an NVMe copy */
	u32 nr_wb;			/* blocks being written to NVMe */
	u32 nr_dirty;			/* READY DRAM blocks without one */
	u64 wb_errors;			/* writes to NVMe that failed */
	u64 wb_lost;			/* dirty blocks dropped on a failed write */
	u64 wb_lost_seen;		/* wb_lost when SYNC last reported it */
	u64 pf_read_ns;			/* prefetch.c's estimate of a read,
					 * written under kvt_pf_mutex too
					 */
	u32 nr_drops;			/* tombstones queued, not yet durable */
	u64 drops_lost;			/* tombstones that could not be written */
	u64 drops_lost_seen;		/* drops_lost when SYNC last reported it */
	u32 nr_loading;			/* blocks being read from NVMe */
	u32 io_events;			/* NVMe reads and writes that ended */
	wait_queue_head_t wq;		/* room, nr_wb, nr_drops, nr_loading */
	struct kvt_pool_counters stats;

	atomic64_t chunk_meta;		/* bytes of chunk arrays */
	atomic64_t umeta_bytes;		/* bytes of the blocks' records */
	u64 index_meta;			/* bytes of blocks[] and buckets[] */

	/* NVMe tier: pages of part reads, for the next ones (stash_lock) */
	struct page **part_pages;
	u32 nr_part_pages;
	/* DRAM tier: pages of evicted blocks, for the next block (stash_lock) */
	spinlock_t stash_lock;
	u32 nr_stash;
	struct kvt_stash {
		union kvt_mem mem;
		u8 order;
	} stash[KVT_STASH_BLOCKS];
};

/*
 * A tier's I/O on a block ended: its user reference goes through the
 * residency hook, which drops pool->lock (said here for sparse, which does
 * not follow the pointer).
 */
static inline void kvt_res_hook_put(struct kvt_pool *pool, u32 addr)
	__releases(&pool->lock)
{
	pool->res->put(pool, addr);
	__release(&pool->lock);
}

/*
 * struct kvt_pf_fd - an open pool file's prefetch groups and completions;
 * everything but @wq under kvt_pf_lock (prefetch.c)
 */
struct kvt_pf_fd {
	struct list_head groups;	/* live groups */
	u32 nr_groups;			/* of which not ended */
	u32 rhead;			/* completion ring */
	u32 rlen;
	struct kvtier_completion *ring;	/* KVTIER_PREFETCH_GROUPS_MAX */
	wait_queue_head_t wq;		/* completions posted */
	struct eventfd_ctx *efd;
};

/* struct kvt_handle - one open pool file */
struct kvt_handle {
	struct kvt_pool *pool;
	bool rdonly;
	u64 features;		/* KVTIER_F_* of the control fd that made it */
	struct mutex pin_lock;	/* protects pins, nr_resv */
	struct xarray pins;	/* address -> pin count (xa value) */
	struct xarray resv;	/* address -> reservation state (reserve.c) */
	u32 nr_resv;		/* blocks it holds reserved */
	struct kvt_pf_fd pf;
};

/* main.c */

/**
 * struct kvt_cmd_info - what every command of both kinds of fd has in common
 * @cmd:	the ioctl number: its _IOC_SIZE is the struct's size in this
 *		kernel, its _IOC_DIR has _IOC_READ when it writes results back
 * @ver0:	size of the struct's first version (KVTIER_*_SIZE_VER0)
 * @ctl:	a command of the control fd (else of a pool fd)
 * @feature:	the KVTIER_F_* bit it needs, 0 for the handshake
 */
struct kvt_cmd_info {
	unsigned int cmd;
	unsigned int ver0;
	bool ctl;
	u64 feature;
};

const struct kvt_cmd_info *kvt_cmd_info(unsigned int cmd, bool ctl);
int kvt_arg_in(const struct kvt_cmd_info *ci, unsigned int cmd, void *karg,
	       void __user *uarg);
int kvt_arg_out(const struct kvt_cmd_info *ci, unsigned int cmd,
		void __user *uarg, const void *karg);
extern int kvt_numa_node;
extern unsigned int kvt_max_pools;
extern u64 kvt_dram_budget;
extern atomic64_t kvt_dram_used;

/* pool.c */
u64 kvt_pool_dram_bytes(u32 dram_blocks, u64 block_size, u32 capacity,
			bool z);
struct kvt_pool *kvt_pool_get_by_id(u64 id);
struct kvt_pool *kvt_pool_restore(const char *name, u64 id, u64 block_size,
				  u32 capacity, u32 dram_blocks, umode_t mode,
				  kuid_t uid, kgid_t gid, u32 flags, u32 parts,
				  u8 compress, u8 compress_flags, int dev,
				  int slot);
struct kvt_pool **kvt_pools_get_named(unsigned int *nr);
void kvt_pools_put_named(struct kvt_pool **pools, unsigned int nr);
int kvt_pools_try_walk(int (*fn)(struct kvt_pool *pool, void *arg),
		       void *arg);
struct file *kvt_pool_create(struct kvtier_pool_create *pc);
struct file *kvt_pool_open(struct kvtier_pool_open *po);
int kvt_pool_destroy(struct kvtier_pool_destroy *pd);
void kvt_pools_destroy_all(void);
int kvt_pool_fs_init(void);
void kvt_pool_fs_exit(void);
void kvt_pools_stat(u32 *nr, u64 *reserved, struct kvt_pool_counters *sum);

/**
 * kvt_pool_put() - drop a pool reference
 * @pool: the pool
 *
 * The last reference frees the pool's blocks and releases its share of
 * the DRAM budget (the release pool.c gave it). Must not be called with
 * kvt_pools_lock held.
 */
static inline void kvt_pool_put(struct kvt_pool *pool)
{
	kref_put(&pool->ref, pool->release);
}

/* reserve.c: zero-copy store */
int kvt_reserve_param_check(void);
bool kvt_reserve_open(struct kvt_handle *h, u64 addr);
int kvt_reserve_one(struct kvt_handle *h, struct kvtier_block *e,
		    bool replace);
int kvt_commit_one(struct kvt_handle *h, struct kvtier_block *e, bool replace,
		   struct kvt_umeta **um);
int kvt_abort_one(struct kvt_handle *h, struct kvtier_block *e);
void kvt_reserve_release(struct kvt_handle *h);

/* block.c: addresses, free list, block state machine (keys: index.c) */
u32 kvt_block_alloc(struct kvt_pool *pool, const u64 *key);
bool kvt_block_has_free(struct kvt_pool *pool);
void kvt_block_prefetch(struct kvt_pool *pool, const u32 *addrs, u32 n);
void kvt_block_free(struct kvt_pool *pool, u32 addr);
void kvt_block_hash_add(struct kvt_pool *pool, u32 addr);
int kvt_block_index_init(struct kvt_pool *pool);
u64 kvt_block_index_bytes(u32 capacity, bool z);
void kvt_block_index_free(struct kvt_pool *pool);
u64 kvt_block_meta_bytes(struct kvt_pool *pool);
void kvt_block_unlink(struct kvt_pool *pool, u32 addr);
int kvt_block_restore(struct kvt_pool *pool, const u64 *key, u8 ndev,
		      u32 nloc, u32 ncrc, const struct kvt_zloc *zl,
		      struct kvt_umeta **um, u32 *addrp);
struct kvt_umeta *kvt_umeta_new(const void *data, u32 len, gfp_t gfp);
void kvt_block_set_umeta(struct kvt_pool *pool, u32 addr,
			 struct kvt_umeta **um);
void kvt_block_umeta_out(struct kvt_pool *pool, u32 addr,
			 struct kvtier_meta *m);
bool kvt_block_put_user(struct kvt_pool *pool, u32 addr);

struct kvt_part_rd;
struct kvt_direct_rd;
struct iovec;

/**
 * struct kvt_tier_ops - what the residency layer asks of a tier
 * @name: for messages
 * @alloc: give a FILLING or loading block its pages (DRAM)
 * @free: take a block's pages back (DRAM)
 * @retire: take back the pages of a block evicted to make room: kept for
 *	    the pool's next block where they can be (DRAM)
 * @trim: free the pages @retire kept (DRAM), or its part reads (NVMe)
 * @reachable: whether a block's copy can be read now; pool->lock held
 *	       (NVMe: its device is attached)
 * @load: read a block's copy into its DRAM pages; the block is held as a
 *	  user and KVT_BF_LOADING; pool->lock not held. 0 when under way
 *	  (the tier ends it through the pool's kvt_res_hooks), or -errno:
 *	  -ENOENT when the copy is out of reach now (NVMe: the device went
 *	  since @reachable), the block left as it is
 * @clean: queue up to nr dirty blocks (0: a batch) for writing, the
 *	   coldest first; victims: needed out now; pool->lock held; the
 *	   blocks queued, or -errno: -EBUSY while the queues are full (NVMe)
 * @doomed: whether a block's copy is about to be reclaimed (NVMe)
 * @sync: write every dirty block of a pool and wait (NVMe)
 * @drop: a block with a copy leaves the pool for good (DROP): the copy
 *	  must not come back at the next attach; pool->lock held (NVMe)
 * @live: whether the tier takes blocks now (NVMe: a device attached)
 * @where: a block's slot, or KVT_NIL; pool->lock held (HBM)
 * @used: blocks the tier holds; pool->lock held (HBM)
 * @touch: a block was used; pool->lock held (HBM)
 * @forget: a block is leaving the pool; pool->lock held (HBM)
 * @stage: copy a block in DRAM into the tier (HBM)
 * @adopt_check: whether a block made in slot @slot can be taken;
 *		 pool->lock held (HBM)
 * @adopt: take the block made in slot @slot as @addr, published and
 *	   held LOADING; its write-down ends through kvt_res_hooks (HBM)
 * @read_part: start reading the parts of a block's copy that cover a byte
 *	       range, into memory of the read's; the block READY, only in
 *	       this tier, held as a user; pool->lock not held. The read, or
 *	       an ERR_PTR (NVMe)
 * @part_end: wait for a @read_part, verify it and copy the range to user
 *	      memory: 0; -EFAULT or -EINTR when the copy failed; else -errno,
 *	      and the caller reads the whole block instead (NVMe)
 * @part_free: free a @read_part, ended or not (NVMe)
 * @read_user: start reading a block's copy straight into user memory
 *	       (pages of @iov, pinned by the read); the block READY, held
 *	       as a user; pool->lock not held. The read, or an ERR_PTR:
 *	       -EINVAL for memory not in whole pages, -EOPNOTSUPP for a
 *	       copy that cannot be read so, -EFAULT, -ENOMEM, -ENOENT (NVMe)
 * @user_end: wait for a @read_user and verify the bytes where they landed:
 *	      0; -EINTR when killed; else -errno, and the caller reads the
 *	      block the usual way (NVMe)
 * @user_free: free a @read_user, ended or not (NVMe)
 *
 * One instance a tier: kvt_dram_tier, kvt_nvme_tier, kvt_hbm_tier, and
 * kvt_file_tier, which stands in for the NVMe tier below the DRAM of a
 * weight pool. Only residency.c calls them; an op a tier does not have is
 * NULL.
 */
struct kvt_tier_ops {
	const char *name;
	int (*alloc)(struct kvt_pool *pool, struct kvt_block *blk);
	void (*free)(struct kvt_pool *pool, struct kvt_block *blk);
	void (*retire)(struct kvt_pool *pool, struct kvt_block *blk);
	void (*trim)(struct kvt_pool *pool);
	bool (*reachable)(struct kvt_pool *pool, u32 addr);
	int (*load)(struct kvt_pool *pool, u32 addr);
	int (*clean)(struct kvt_pool *pool, unsigned int nr, bool victims);
	bool (*doomed)(struct kvt_pool *pool, u32 addr);
	int (*sync)(struct kvt_pool *pool, u64 *written);
	void (*drop)(struct kvt_pool *pool, u32 addr);
	bool (*live)(struct kvt_pool *pool);
	u32 (*where)(struct kvt_pool *pool, u32 addr);
	u32 (*used)(struct kvt_pool *pool);
	void (*touch)(struct kvt_pool *pool, u32 addr);
	void (*forget)(struct kvt_pool *pool, u32 addr);
	int (*stage)(struct kvt_pool *pool, u32 addr, bool start);
	int (*adopt_check)(struct kvt_pool *pool, u32 slot);
	int (*adopt)(struct kvt_pool *pool, u32 addr, u32 slot);
	struct kvt_part_rd *(*read_part)(struct kvt_pool *pool, u32 addr,
					 u32 off, u32 len);
	int (*part_end)(struct kvt_part_rd *rd, struct iov_iter *to);
	void (*part_free)(struct kvt_part_rd *rd);
	struct kvt_direct_rd *(*read_user)(struct kvt_pool *pool, u32 addr,
					   const struct iovec *iov,
					   unsigned long nr_segs);
	int (*user_end)(struct kvt_direct_rd *rd);
	void (*user_free)(struct kvt_direct_rd *rd);
};

extern const struct kvt_tier_ops kvt_dram_tier;
extern const struct kvt_tier_ops kvt_nvme_tier;
extern const struct kvt_tier_ops kvt_hbm_tier;
extern const struct kvt_tier_ops kvt_file_tier;

/* residency.c: which tier holds a block, and moving it */
void kvt_res_pool_init(struct kvt_pool *pool);
void kvt_res_pool_free(struct kvt_pool *pool);
void kvt_res_set_notify(void (*fn)(void));
u32 kvt_res_tier(struct kvt_pool *pool, u32 addr, u32 *slot);
bool kvt_res_out_of_reach(struct kvt_pool *pool, u32 addr);
void kvt_res_stat(struct kvt_pool *pool, u64 *resident);
int kvt_res_make_room(struct kvt_pool *pool, bool addr)
	__must_hold(&pool->lock);
int kvt_res_dram(struct kvt_pool *pool, const u64 *key, u32 *addrp)
	__acquires(&pool->lock);
int kvt_res_load(struct kvt_pool *pool, u32 addr)
	__releases(&pool->lock);
void kvt_res_load_ahead(struct kvt_pool *pool, const u64 *key);
bool kvt_res_live(struct kvt_pool *pool, u32 tier);
int kvt_res_new(struct kvt_pool *pool, const u64 *key, u32 *addrp)
	__releases(&pool->lock);
void kvt_res_new_abort(struct kvt_pool *pool, u32 addr);
void kvt_res_publish(struct kvt_pool *pool, u32 addr, u32 old);
void kvt_res_unlink(struct kvt_pool *pool, u32 addr, u16 why);
void kvt_res_drop(struct kvt_pool *pool, u32 addr);
void kvt_res_release(struct kvt_pool *pool, u32 addr);
void kvt_res_put_user(struct kvt_pool *pool, u32 addr)
	__releases(&pool->lock);
void kvt_res_touch(struct kvt_pool *pool, u32 addr, bool slot);
void kvt_res_keep(struct kvt_pool *pool, u32 addr);
void kvt_res_unkeep(struct kvt_pool *pool, u32 addr);
void kvt_res_ahead(struct kvt_pool *pool, u32 addr, bool on);
bool kvt_res_is_ahead(struct kvt_pool *pool, u32 addr);
void kvt_res_evict_begin(struct kvt_pool *pool, u32 addr);
void kvt_res_evict_dram_locked(struct kvt_pool *pool, u32 addr);
bool kvt_res_rescue(struct kvt_pool *pool, u32 addr);
void kvt_res_forget_nvme(struct kvt_pool *pool, u32 addr, u16 why);
void kvt_res_cleaned(struct kvt_pool *pool, u32 addr);
int kvt_res_sync(struct kvt_pool *pool, u64 *written);
int kvt_res_stage(struct kvt_pool *pool, u32 addr, bool start);
struct kvt_part_rd *kvt_res_part_begin(struct kvt_pool *pool, const u64 *key,
				       u32 off, u32 len, u32 *addrp);
int kvt_res_part_end(struct kvt_pool *pool, struct kvt_part_rd *rd,
		     struct iov_iter *to);
void kvt_res_part_put(struct kvt_pool *pool, struct kvt_part_rd *rd,
		      u32 addr);
struct kvt_direct_rd *kvt_res_direct_begin(struct kvt_pool *pool,
					   const u64 *key,
					   const struct iovec *iov,
					   unsigned long nr_segs, u32 *addrp);
int kvt_res_direct_end(struct kvt_pool *pool, struct kvt_direct_rd *rd,
		       u32 addr);
void kvt_res_direct_put(struct kvt_pool *pool, struct kvt_direct_rd *rd,
			u32 addr);
int kvt_res_adopt(struct kvt_pool *pool, struct kvtier_adopt *e,
		  struct kvt_umeta **um);

/* census.c: KVTIER_IOC_CENSUS */
struct kvtier_census;
int kvt_census(struct kvt_handle *h, struct kvtier_census *k);

/* cmd.c: the batched block commands */
long kvt_pool_ioctl(struct file *file, unsigned int cmd, unsigned long arg);
long kvt_pool_cmd(struct kvt_handle *h, unsigned int cmd, void __user *uarg,
		  bool nonblock);
void kvt_handle_unpin_all(struct kvt_handle *h);
int kvt_put_publish(struct kvt_pool *pool, const u64 *key, u32 addr,
		    bool replace, bool reserved, struct kvt_umeta **um);

/* lat.c */
enum kvt_lat_op { KVT_LAT_READ, KVT_LAT_WRITE, KVT_LAT_NR };
#define KVT_LAT_BUCKETS	96
void kvt_lat_add(enum kvt_lat_op op, u64 start);
ssize_t kvt_lat_show(enum kvt_lat_op op, char *buf);

/* tier_dram.c: and kvt_dram_tier */
/*
 * Bytes the CPU went over for blocks, since load: copied to or from user
 * memory, checksummed, and zeroed by the page allocator for the DRAM tier
 * (/sys/kernel/kvtier/cpu_bytes).
 */
enum kvt_cpu_pass { KVT_CPU_COPY, KVT_CPU_CRC, KVT_CPU_ZERO, KVT_CPU_NR };
extern atomic64_t kvt_cpu_bytes[KVT_CPU_NR];
ssize_t kvt_cpu_bytes_show(char *buf);
u32 kvt_dram_crc(struct kvt_pool *pool, struct kvt_block *blk, u32 seed);
void kvt_dram_zero(struct kvt_pool *pool, struct kvt_block *blk);
size_t kvt_dram_copy_in(struct kvt_pool *pool, struct kvt_block *blk,
			struct iov_iter *from);
bool kvt_copy_out(const void *src, size_t len, struct iov_iter *to);
u32 kvt_dram_crc_pages(struct kvt_pool *pool, struct kvt_block *blk,
		       u32 first, u32 nr);
size_t kvt_dram_copy_out(struct kvt_pool *pool, struct kvt_block *blk,
			 u64 start, u64 len, struct iov_iter *to);
struct page *kvt_dram_page(struct kvt_pool *pool, struct kvt_block *blk,
			   u32 index);

/* policy.c: the replacement policy, declared in policy.h */

/* compress.c: compressed NVMe copies (KVTIER_F_COMPRESS) */
int kvt_z_get(u8 algo);
void kvt_z_put(u8 algo);

/* tier_nvme.c */
struct kvtier_nvme_attach;
struct kvtier_nvme_stat;
int kvt_nvme_attach(const char *path, u32 flags, u32 region_kib);
int kvt_nvme_detach(const char *path);
int kvt_nvme_stat(struct kvtier_nvme_stat *st);
void kvt_nvme_lock_table(void);
void kvt_nvme_unlock_table(void);
int kvt_nvme_pool_record(struct kvt_pool *pool);
void kvt_nvme_pool_erase(struct kvt_pool *pool);

/* prefetch.c */
struct kvtier_prefetch;
struct kvtier_cancel;
struct kvtier_eventfd;
struct poll_table_struct;
int kvt_prefetch_cmd(struct kvt_handle *h, struct kvtier_prefetch *pf);
int kvt_prefetch_cancel(struct kvt_handle *h, struct kvtier_cancel *c);
int kvt_prefetch_eventfd(struct kvt_handle *h, struct kvtier_eventfd *e);
ssize_t kvt_prefetch_read(struct kvt_handle *h, char __user *buf, size_t len,
			  bool nonblock);
__poll_t kvt_prefetch_poll(struct kvt_handle *h, struct file *file,
			   struct poll_table_struct *wait);
void kvt_prefetch_init_fd(struct kvt_handle *h);
void kvt_prefetch_release_fd(struct kvt_handle *h);
void kvt_prefetch_used(struct kvt_pool *pool, u32 addr);
void kvt_prefetch_kick(void);
ssize_t kvt_prefetch_show(char *buf);
void kvt_prefetch_exit(void);

/* tier_file.c: weight pools (KVTIER_POOL_WEIGHTS) */
/* struct kvt_block.ndev of a weight pool's blocks: their copy is the file. */
#define KVT_FILE_DEV	U8_MAX
struct kvt_file;
int kvt_file_check(const struct kvtier_pool_create *pc);
int kvt_file_open(struct kvt_pool *pool, const struct kvtier_pool_create *pc);
void kvt_file_close(struct kvt_pool *pool);
int kvt_file_mode(struct kvt_pool *pool);
int kvt_file_init(void);
void kvt_file_exit(void);

/* tier_hbm.c */
struct kvt_hbm;
struct kvtier_hbm_attach;
struct kvtier_hbm_stat;
struct kvtier_adopt;
void kvt_hbm_pool_free(struct kvt_pool *pool);
int kvt_hbm_attach_cmd(struct kvt_handle *h, struct kvtier_hbm_attach *a);
int kvt_hbm_stat_cmd(struct kvt_pool *pool, struct kvtier_hbm_stat *st);

/* uring.c */
struct io_uring_cmd;
int kvt_pool_uring_cmd(struct io_uring_cmd *ioucmd, unsigned int issue_flags);

/* mmap.c */
int kvt_pool_mmap(struct file *file, struct vm_area_struct *vma);

/* shrinker.c */
int kvt_shrinker_init(void);
void kvt_shrinker_exit(void);

/* events.c: a pool's event log, and the events fds */
struct kvt_evlog;
struct kvtier_events;
int kvt_ev_param_check(void);
struct kvt_evlog *kvt_ev_log_new(void);
void kvt_ev_log_end(struct kvt_evlog *log);
void kvt_ev_block(struct kvt_pool *pool, u32 addr, u16 type, u8 tier, u8 from,
		  u16 reason);
u64 kvt_ev_seq(struct kvt_pool *pool);
u64 kvt_ev_log_id(struct kvt_pool *pool);
ssize_t kvt_ev_show(struct kvt_pool *pool, char *buf);
int kvt_ev_open(struct kvt_pool *pool, struct kvtier_events *e,
		struct file **filep);

/* fault.c */
#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
bool kvt_should_fail_writer(size_t size);
bool kvt_should_fail_compress(void);
void kvt_fault_direct_delay(void);
void kvt_fault_writer_delay(void);
void kvt_fault_init(void);
void kvt_fault_exit(void);
#else
static inline bool kvt_should_fail_writer(size_t size)
{
	return false;
}

static inline bool kvt_should_fail_compress(void)
{
	return false;
}

static inline void kvt_fault_direct_delay(void)
{
}

static inline void kvt_fault_writer_delay(void)
{
}

static inline void kvt_fault_init(void)
{
}

static inline void kvt_fault_exit(void)
{
}
#endif
ssize_t kvt_shrinker_show(char *buf);

/* sysfs.c */
int kvt_sysfs_init(void);
void kvt_sysfs_exit(void);
int kvt_sysfs_pool_add(struct kvt_pool *pool);
void kvt_sysfs_pool_del(struct kvt_pool *pool);

#endif /* _KVT_H */
