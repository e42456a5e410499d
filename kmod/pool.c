// SPDX-License-Identifier: GPL-2.0
/*
 * Pools: the registry of named pools, their lifetime, access checks and
 * the pool files that userspace holds.
 *
 * A pool file is a pseudo file on a private mount so that every file of one
 * pool shares one inode, hence one address_space: removing a block zaps its
 * pages from every mapping of the pool in one unmap_mapping_range().
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/module.h>
#include <linux/file.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/random.h>
#include <linux/cred.h>
#include <linux/capability.h>
#include <linux/memcontrol.h>
#include <linux/sched/mm.h>
#include <linux/log2.h>
#include "kvt.h"

#define KVTIERFS_MAGIC	0x6b767466	/* "kvtf" */

static struct vfsmount *kvt_mnt;
static struct kmem_cache *kvt_pool_cache;
static struct kmem_cache *kvt_handle_cache;

/* Protects kvt_pools, kvt_nr_pools, kvt_dram_reserved and pool->named. */
static DEFINE_MUTEX(kvt_pools_lock);
static LIST_HEAD(kvt_pools);
static unsigned int kvt_nr_pools;
static u64 kvt_dram_reserved;

static const struct file_operations kvt_pool_fops;
static void kvt_pool_unregister(struct kvt_pool *pool);

/*
 * A pool file is opened by name, through the control fd, and nowhere else:
 * an open of its inode (through /proc/self/fd, say) is refused with -ENXIO
 * whoever asks. Without this, the VFS first checks the permission bits
 * alloc_anon_inode() gave the inode (0600, owned by whoever made the pool),
 * so a holder of a passed fd got -EACCES and its creator -ENXIO.
 */
static int kvt_pool_inode_permission(struct user_namespace *mnt_userns,
				     struct inode *inode, int mask)
{
	if (mask & MAY_OPEN)
		return -ENXIO;
	return generic_permission(mnt_userns, inode, mask);
}

static const struct inode_operations kvt_pool_iops = {
	.permission = kvt_pool_inode_permission,
};

static int kvt_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, KVTIERFS_MAGIC) ? 0 : -ENOMEM;
}

static struct file_system_type kvt_fs_type = {
	.name			= "kvtierfs",
	.init_fs_context	= kvt_fs_init_fs_context,
	.kill_sb		= kill_anon_super,
};

int kvt_pool_fs_init(void)
{
	int ret = -ENOMEM;

	kvt_pool_cache = KMEM_CACHE(kvt_pool, 0);
	if (!kvt_pool_cache)
		return ret;
	kvt_handle_cache = KMEM_CACHE(kvt_handle, 0);
	if (!kvt_handle_cache)
		goto out_pool_cache;

	kvt_mnt = kern_mount(&kvt_fs_type);
	if (IS_ERR(kvt_mnt)) {
		ret = PTR_ERR(kvt_mnt);
		goto out_handle_cache;
	}
	return 0;

out_handle_cache:
	kmem_cache_destroy(kvt_handle_cache);
out_pool_cache:
	kmem_cache_destroy(kvt_pool_cache);
	return ret;
}

void kvt_pool_fs_exit(void)
{
	kern_unmount(kvt_mnt);
	kmem_cache_destroy(kvt_handle_cache);
	kmem_cache_destroy(kvt_pool_cache);
}

/**
 * kvt_pool_dram_bytes() - what a pool reserves of the dram_mb budget
 * @dram_blocks: its DRAM share in blocks
 * @block_size: bytes per block
 * @capacity: block addresses
 * @z: it compresses its NVMe copies (KVTIER_F_COMPRESS)
 *
 * Its share of blocks, and the index that every block address takes in
 * DRAM, whatever the tier of the block.
 *
 * Return: bytes.
 */
u64 kvt_pool_dram_bytes(u32 dram_blocks, u64 block_size, u32 capacity,
			bool z)
{
	return (u64)dram_blocks * block_size +
	       kvt_block_index_bytes(capacity, z);
}

/*
 * Take a new pool's share of the dram_mb budget before its index is
 * allocated: creates running at once must not allocate more than the
 * budget between them, even for a moment. kvt_pool_unreserve() gives it
 * back; so does kvt_pool_free() for a pool that was named.
 */
static int kvt_pool_reserve(u64 dram)
{
	int ret = 0;

	mutex_lock(&kvt_pools_lock);
	if (dram > kvt_dram_budget - kvt_dram_reserved)
		ret = -ENOSPC;
	else
		kvt_dram_reserved += dram;
	mutex_unlock(&kvt_pools_lock);
	return ret;
}

static void kvt_pool_unreserve(u64 dram)
{
	mutex_lock(&kvt_pools_lock);
	kvt_dram_reserved -= dram;
	mutex_unlock(&kvt_pools_lock);
}

/* What a pool asked for will reserve: its DRAM share and its index. */
static u64 kvt_pool_create_bytes(const struct kvtier_pool_create *pc)
{
	return kvt_pool_dram_bytes(pc->dram_blocks ?: pc->capacity,
				   pc->block_size, pc->capacity, pc->compress);
}

static void kvt_pool_free(struct kref *ref)
{
	struct kvt_pool *pool = container_of(ref, struct kvt_pool, ref);

	kvt_hbm_pool_free(pool);
	kvt_res_pool_free(pool);
	kvt_file_close(pool);
	kvt_block_index_free(pool);
	iput(pool->inode);
	mem_cgroup_put(pool->memcg);
	/* Its readers read on: every key went, then the end. */
	kvt_ev_log_end(pool->events);
	if (pool->compress)
		kvt_z_put(pool->compress);

	mutex_lock(&kvt_pools_lock);
	kvt_dram_reserved -= kvt_pool_dram_bytes(pool->dram_blocks,
						 pool->block_size,
						 pool->capacity,
						 pool->compress);
	kvt_nr_pools--;
	mutex_unlock(&kvt_pools_lock);

	kmem_cache_free(kvt_pool_cache, pool);
}

/* Names are what sysfs shows: 1..63 bytes of [A-Za-z0-9._-], not "." "..". */
static int kvt_name_check(const __u8 *name)
{
	size_t len = strnlen(name, KVTIER_NAME_MAX);
	size_t i;

	if (!len || len == KVTIER_NAME_MAX)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		char c = name[i];

		if (!(isascii(c) && isalnum(c)) && c != '.' && c != '_' &&
		    c != '-')
			return -EINVAL;
	}
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	return 0;
}

static struct kvt_pool *kvt_pool_lookup(const char *name)
{
	struct kvt_pool *pool;

	lockdep_assert_held(&kvt_pools_lock);
	list_for_each_entry(pool, &kvt_pools, node)
		if (!strcmp(pool->name, name))
			return pool;
	return NULL;
}

/* File-like access check: MAY_READ / MAY_WRITE against owner, group, other. */
static int kvt_pool_permission(struct kvt_pool *pool, int mask)
{
	umode_t mode = pool->mode;

	if (uid_eq(current_fsuid(), pool->uid))
		mode >>= 6;
	else if (in_group_p(pool->gid))
		mode >>= 3;

	if ((mask & ~mode & 7) == 0)
		return 0;
	if (capable(CAP_DAC_OVERRIDE))
		return 0;
	return -EACCES;
}

static struct file *kvt_pool_new_file(struct kvt_pool *pool, bool rdonly)
{
	struct kvt_handle *h;
	struct file *file;

	h = kmem_cache_zalloc(kvt_handle_cache, GFP_KERNEL);
	if (!h)
		return ERR_PTR(-ENOMEM);
	h->rdonly = rdonly;
	mutex_init(&h->pin_lock);
	xa_init(&h->pins);
	xa_init(&h->resv);
	kvt_prefetch_init_fd(h);

	/* The file's release puts the module reference of its fops. */
	__module_get(THIS_MODULE);
	ihold(pool->inode);
	file = alloc_file_pseudo(pool->inode, kvt_mnt, "kvtier-pool",
				 O_RDWR, &kvt_pool_fops);
	if (IS_ERR(file)) {
		iput(pool->inode);
		module_put(THIS_MODULE);
		kmem_cache_free(kvt_handle_cache, h);
		return file;
	}

	kref_get(&pool->ref);
	h->pool = pool;
	file->private_data = h;
	return file;
}

static int kvt_pool_create_check(const struct kvtier_pool_create *pc)
{
	int ret;

	ret = kvt_name_check(pc->name);
	if (ret)
		return ret;
	if (!pc->block_size || !PAGE_ALIGNED(pc->block_size) ||
	    pc->block_size > KVTIER_BLOCK_SIZE_MAX)
		return -EINVAL;
	if (!pc->capacity || pc->capacity > KVTIER_CAPACITY_MAX ||
	    pc->dram_blocks > pc->capacity)
		return -EINVAL;
	if (pc->flags & ~(KVTIER_POOL_CREATE_FLAGS | KVTIER_POOL_OPEN_FLAGS))
		return -EINVAL;
	if (pc->mode & ~0777)
		return -EINVAL;
	if (pc->numa_node != NUMA_NO_NODE &&
	    (pc->numa_node < 0 || pc->numa_node >= MAX_NUMNODES ||
	     !node_online(pc->numa_node)))
		return -EINVAL;
	if (pc->parts == 1 || pc->parts > KVTIER_PARTS_MAX || pc->__pad ||
	    memchr_inv(pc->reserved, 0, sizeof(pc->reserved)))
		return -EINVAL;
	/* Parts are read from the device as they are: not compressed. */
	if (pc->compress > KVTIER_COMPRESS_MAX ||
	    pc->compress_flags & ~KVTIER_COMPRESS_FLAGS ||
	    (!pc->compress && pc->compress_flags) ||
	    (pc->compress && pc->parts))
		return -EINVAL;
	return kvt_file_check(pc);
}

static struct kvt_pool *kvt_pool_alloc(const struct kvtier_pool_create *pc)
{
	struct kvt_pool *pool;
	int ret, i;

	pool = kmem_cache_zalloc(kvt_pool_cache, GFP_KERNEL);
	if (!pool)
		return ERR_PTR(-ENOMEM);

	kref_init(&pool->ref);
	pool->release = kvt_pool_free;
	strscpy(pool->name, pc->name, sizeof(pool->name));
	pool->block_size = pc->block_size;
	pool->pages_per_block = pc->block_size >> PAGE_SHIFT;
	pool->chunk_order = min_t(unsigned int, __ffs(pool->pages_per_block),
				  MAX_ORDER - 1);
	pool->capacity = pc->capacity;
	pool->dram_blocks = pc->dram_blocks ?: pc->capacity;
	pool->nid = pc->numa_node == NUMA_NO_NODE ? kvt_numa_node :
						    pc->numa_node;
	pool->mode = pc->mode ?: 0600;
	pool->uid = current_fsuid();
	pool->gid = current_fsgid();
	pool->seed = get_random_u64();
	do {
		pool->id = get_random_u64();
	} while (!pool->id);
	pool->flags = pc->flags & KVTIER_POOL_FAULT_NOLOAD;
	pool->parts = pc->parts;
	pool->compress = pc->compress;
	pool->compress_flags = pc->compress_flags;
	for (i = 0; i < KVTIER_NVME_MAX; i++)
		pool->table_slot[i] = -1;
	init_waitqueue_head(&pool->wq);
	INIT_LIST_HEAD(&pool->node);
	init_rwsem(&pool->map_sem);
	spin_lock_init(&pool->lock);
	spin_lock_init(&pool->stash_lock);

	/* Block memory is charged to the creator's memory cgroup. */
	pool->memcg = get_mem_cgroup_from_mm(current->mm);

	pool->events = kvt_ev_log_new();
	if (!pool->events) {
		ret = -ENOMEM;
		goto out_free;
	}
	if (pool->compress) {
		ret = kvt_z_get(pool->compress);
		if (ret)
			goto out_free;
	}
	ret = kvt_block_index_init(pool);
	if (ret)
		goto out_z_put;
	kvt_res_pool_init(pool);

	pool->inode = alloc_anon_inode(kvt_mnt->mnt_sb);
	if (IS_ERR(pool->inode)) {
		ret = PTR_ERR(pool->inode);
		goto out_index_free;
	}
	pool->inode->i_size = (loff_t)pool->capacity * pool->block_size;
	pool->inode->i_op = &kvt_pool_iops;
	if (pc->flags & KVTIER_POOL_WEIGHTS) {
		ret = kvt_file_open(pool, pc);
		if (ret)
			goto out_iput;
	}
	return pool;

out_iput:
	iput(pool->inode);
out_index_free:
	kvt_block_index_free(pool);
out_z_put:
	if (pool->compress)
		kvt_z_put(pool->compress);
out_free:
	kvt_ev_log_end(pool->events);
	mem_cgroup_put(pool->memcg);
	kmem_cache_free(kvt_pool_cache, pool);
	return ERR_PTR(ret);
}

/* Free a pool that never entered the registry, and its reservation. */
static void kvt_pool_discard(struct kvt_pool *pool)
{
	kvt_pool_unreserve(kvt_pool_dram_bytes(pool->dram_blocks,
					       pool->block_size,
					       pool->capacity,
					       pool->compress));
	kvt_res_pool_free(pool);
	kvt_file_close(pool);
	kvt_block_index_free(pool);
	iput(pool->inode);
	mem_cgroup_put(pool->memcg);
	if (pool->compress)
		kvt_z_put(pool->compress);
	kvt_ev_log_end(pool->events);
	kmem_cache_free(kvt_pool_cache, pool);
}

/* Whether one more pool may exist (its bytes are reserved); lock held. */
static int kvt_pool_admit(void)
{
	lockdep_assert_held(&kvt_pools_lock);
	if (kvt_nr_pools >= kvt_max_pools)
		return -EMFILE;
	return 0;
}

/* Give an admitted pool its name; the registry holds its initial ref. */
static void kvt_pool_name(struct kvt_pool *pool)
{
	lockdep_assert_held(&kvt_pools_lock);
	kvt_nr_pools++;
	pool->named = true;
	list_add_tail(&pool->node, &kvt_pools);
	kvt_sysfs_pool_add(pool);
}

/* Check access to a registered pool and take a reference; lock held. */
static int kvt_pool_get_access(struct kvt_pool *pool, bool rdonly)
{
	int ret;

	lockdep_assert_held(&kvt_pools_lock);
	ret = kvt_pool_permission(pool, rdonly ? MAY_READ :
				  MAY_READ | MAY_WRITE);
	if (!ret)
		kref_get(&pool->ref);
	return ret;
}

/* A new file of a pool held by kvt_pool_get_access(), which lets it go. */
static struct file *kvt_pool_file_put(struct kvt_pool *pool, bool rdonly)
{
	struct file *file = kvt_pool_new_file(pool, rdonly);

	kvt_pool_put(pool);
	return file;
}

/* A new file of the pool named @name: -ENOENT, -EACCES, -ENOMEM. */
static struct file *kvt_pool_open_named(const char *name, bool rdonly)
{
	struct kvt_pool *pool;
	int ret = -ENOENT;

	mutex_lock(&kvt_pools_lock);
	pool = kvt_pool_lookup(name);
	if (pool)
		ret = kvt_pool_get_access(pool, rdonly);
	mutex_unlock(&kvt_pools_lock);
	if (ret)
		return ERR_PTR(ret);
	return kvt_pool_file_put(pool, rdonly);
}

/**
 * kvt_pool_create() - create a named pool and return a file for it
 * @pc: the request, checked here
 *
 * Return: a new pool file, or an ERR_PTR: -EINVAL, -EEXIST, -EMFILE,
 * -ENOSPC (DRAM budget), -EACCES, -ENOMEM.
 */
struct file *kvt_pool_create(struct kvtier_pool_create *pc)
{
	bool rdonly = pc->flags & KVTIER_POOL_RDONLY;
	struct kvt_pool *pool, *old;
	struct file *file;
	u64 dram;
	int ret;

	ret = kvt_pool_create_check(pc);
	if (ret)
		return ERR_PTR(ret);
	/* An existing pool is opened without allocating a new one first. */
	if (pc->flags & KVTIER_POOL_OPEN_EXISTING) {
		file = kvt_pool_open_named(pc->name, rdonly);
		if (file != ERR_PTR(-ENOENT))
			return file;
	}

	dram = kvt_pool_create_bytes(pc);
	ret = kvt_pool_reserve(dram);
	if (ret)
		return ERR_PTR(ret);
	pool = kvt_pool_alloc(pc);
	if (IS_ERR(pool)) {
		kvt_pool_unreserve(dram);
		return ERR_CAST(pool);
	}

	kvt_nvme_lock_table();
	mutex_lock(&kvt_pools_lock);
	old = kvt_pool_lookup(pool->name);
	if (old) {
		/* Created by another caller meanwhile. */
		ret = -EEXIST;
		if (!(pc->flags & KVTIER_POOL_OPEN_EXISTING))
			goto out_unlock;
		ret = kvt_pool_get_access(old, rdonly);
		mutex_unlock(&kvt_pools_lock);
		kvt_nvme_unlock_table();
		kvt_pool_discard(pool);
		if (ret)
			return ERR_PTR(ret);
		return kvt_pool_file_put(old, rdonly);
	}
	ret = kvt_pool_admit();
	if (ret)
		goto out_unlock;
	/* With an NVMe tier, the pool is recorded there and persists. */
	ret = kvt_nvme_pool_record(pool);
	if (ret)
		goto out_unlock;

	kvt_pool_name(pool);
	/*
	 * The registry keeps the initial reference; take ours before the
	 * name is visible to a concurrent destroy.
	 */
	kref_get(&pool->ref);
	mutex_unlock(&kvt_pools_lock);
	kvt_nvme_unlock_table();

	file = kvt_pool_new_file(pool, rdonly);
	if (IS_ERR(file))
		kvt_pool_unregister(pool);
	kvt_pool_put(pool);
	return file;

out_unlock:
	mutex_unlock(&kvt_pools_lock);
	kvt_nvme_unlock_table();
	kvt_pool_discard(pool);
	return ERR_PTR(ret);
}

/**
 * kvt_pool_open() - open an existing pool by name
 * @po: the request, checked here
 *
 * Return: a new pool file, or an ERR_PTR: -EINVAL, -ENOENT, -EACCES,
 * -ENOMEM.
 */
struct file *kvt_pool_open(struct kvtier_pool_open *po)
{
	bool rdonly = po->flags & KVTIER_POOL_RDONLY;
	int ret;

	ret = kvt_name_check(po->name);
	if (ret)
		return ERR_PTR(ret);
	if (po->flags & ~KVTIER_POOL_OPEN_FLAGS ||
	    memchr_inv(po->reserved, 0, sizeof(po->reserved)))
		return ERR_PTR(-EINVAL);

	return kvt_pool_open_named(po->name, rdonly);
}

static void kvt_pool_unname(struct kvt_pool *pool)
{
	lockdep_assert_held(&kvt_pools_lock);
	list_del_init(&pool->node);
	pool->named = false;
	kvt_sysfs_pool_del(pool);
}

/**
 * kvt_pool_get_by_id() - a named pool by its NVMe identity
 * @id: the pool's id
 *
 * Return: the pool with a reference, or NULL.
 */
struct kvt_pool *kvt_pool_get_by_id(u64 id)
{
	struct kvt_pool *pool;

	mutex_lock(&kvt_pools_lock);
	list_for_each_entry(pool, &kvt_pools, node) {
		if (pool->id == id) {
			kref_get(&pool->ref);
			mutex_unlock(&kvt_pools_lock);
			return pool;
		}
	}
	mutex_unlock(&kvt_pools_lock);
	return NULL;
}

/**
 * kvt_pools_get_named() - references to every named pool
 * @nr: out: how many
 *
 * Return: an array for kvt_pools_put_named(), or NULL (then @nr is 0).
 */
struct kvt_pool **kvt_pools_get_named(unsigned int *nr)
{
	struct kvt_pool **pools;
	struct kvt_pool *pool;

	*nr = 0;
	mutex_lock(&kvt_pools_lock);
	pools = kmalloc_array(kvt_nr_pools ?: 1, sizeof(*pools), GFP_KERNEL);
	if (pools) {
		list_for_each_entry(pool, &kvt_pools, node) {
			kref_get(&pool->ref);
			pools[(*nr)++] = pool;
		}
	}
	mutex_unlock(&kvt_pools_lock);
	return pools;
}

/**
 * kvt_pools_try_walk() - visit every named pool unless the registry is busy
 * @fn: called on each pool with kvt_pools_lock held (the registry's
 *	reference keeps the pool alive); a nonzero return ends the walk
 * @arg: passed to @fn
 *
 * For memory reclaim (shrinker.c): it never sleeps on kvt_pools_lock, which
 * a task may hold while it allocates.
 *
 * Return: -EBUSY if kvt_pools_lock was taken, else 0.
 */
int kvt_pools_try_walk(int (*fn)(struct kvt_pool *pool, void *arg), void *arg)
{
	struct kvt_pool *pool;

	if (!mutex_trylock(&kvt_pools_lock))
		return -EBUSY;
	list_for_each_entry(pool, &kvt_pools, node)
		if (fn(pool, arg))
			break;
	mutex_unlock(&kvt_pools_lock);
	return 0;
}

/**
 * kvt_pools_put_named() - drop what kvt_pools_get_named() took
 * @pools: the array
 * @nr: its length
 */
void kvt_pools_put_named(struct kvt_pool **pools, unsigned int nr)
{
	while (nr--)
		kvt_pool_put(pools[nr]);
	kfree(pools);
}

/**
 * kvt_pool_restore() - re-create a pool recorded on NVMe
 * @name: its name
 * @id: its NVMe identity
 * @block_size: bytes per block
 * @capacity: block addresses
 * @dram_blocks: its DRAM share
 * @mode: permission bits
 * @uid: owner
 * @gid: group
 * @flags: KVTIER_POOL_FAULT_NOLOAD
 * @parts: its parts (struct kvtier_pool_create)
 * @compress: its compressor
 * @compress_flags: and its flags
 * @dev: the device whose pool table records it
 * @slot: its pool table slot there
 *
 * Return: the named pool (the registry's reference, not the caller's), or
 * an ERR_PTR: -EEXIST, -EMFILE, -ENOSPC, -EINVAL, -ENOMEM, -ENOPKG.
 */
struct kvt_pool *kvt_pool_restore(const char *name, u64 id, u64 block_size,
				  u32 capacity, u32 dram_blocks, umode_t mode,
				  kuid_t uid, kgid_t gid, u32 flags, u32 parts,
				  u8 compress, u8 compress_flags, int dev,
				  int slot)
{
	struct kvtier_pool_create pc = {
		.block_size = block_size,
		.capacity = capacity,
		.dram_blocks = dram_blocks,
		.flags = flags,
		.mode = mode,
		.numa_node = NUMA_NO_NODE,
		.parts = parts,
		.compress = compress,
		.compress_flags = compress_flags,
	};
	struct kvt_pool *pool;
	u64 dram;
	int ret;

	strscpy(pc.name, name, sizeof(pc.name));
	ret = kvt_pool_create_check(&pc);
	if (ret)
		return ERR_PTR(ret);
	dram = kvt_pool_create_bytes(&pc);
	ret = kvt_pool_reserve(dram);
	if (ret)
		return ERR_PTR(ret);
	pool = kvt_pool_alloc(&pc);
	if (IS_ERR(pool)) {
		kvt_pool_unreserve(dram);
		return pool;
	}
	pool->id = id;
	pool->uid = uid;
	pool->gid = gid;
	pool->table_slot[dev] = slot;
	pool->persistent = true;

	mutex_lock(&kvt_pools_lock);
	ret = -EEXIST;
	if (kvt_pool_lookup(pool->name))
		goto out_unlock;
	ret = kvt_pool_admit();
	if (ret)
		goto out_unlock;
	kvt_pool_name(pool);
	mutex_unlock(&kvt_pools_lock);
	return pool;

out_unlock:
	mutex_unlock(&kvt_pools_lock);
	kvt_pool_discard(pool);
	return ERR_PTR(ret);
}

/* Take back the name of a pool whose creation failed late. */
static void kvt_pool_unregister(struct kvt_pool *pool)
{
	bool named;

	kvt_nvme_lock_table();
	mutex_lock(&kvt_pools_lock);
	named = pool->named;
	if (named)
		kvt_pool_unname(pool);
	mutex_unlock(&kvt_pools_lock);
	if (named)
		kvt_nvme_pool_erase(pool);
	kvt_nvme_unlock_table();
	if (named)
		kvt_pool_put(pool);
}

/**
 * kvt_pool_destroy() - remove a pool's name
 * @pd: the request, checked here
 *
 * The pool's memory goes with its last file or mapping.
 *
 * Return: 0, -EINVAL, -ENOENT, -EPERM.
 */
int kvt_pool_destroy(struct kvtier_pool_destroy *pd)
{
	struct kvt_pool *pool;
	int ret;

	ret = kvt_name_check(pd->name);
	if (ret)
		return ret;
	if (pd->flags || pd->__pad ||
	    memchr_inv(pd->reserved, 0, sizeof(pd->reserved)))
		return -EINVAL;

	kvt_nvme_lock_table();
	mutex_lock(&kvt_pools_lock);
	pool = kvt_pool_lookup(pd->name);
	ret = -ENOENT;
	if (!pool)
		goto out_unlock;
	ret = -EPERM;
	if (!uid_eq(current_fsuid(), pool->uid) && !capable(CAP_SYS_ADMIN))
		goto out_unlock;
	kvt_pool_unname(pool);
	mutex_unlock(&kvt_pools_lock);

	kvt_nvme_pool_erase(pool);
	kvt_nvme_unlock_table();
	kvt_pool_put(pool);
	return 0;

out_unlock:
	mutex_unlock(&kvt_pools_lock);
	kvt_nvme_unlock_table();
	return ret;
}

/**
 * kvt_pools_destroy_all() - drop every name at module unload
 *
 * No pool file can be open then (each holds a module reference), so this
 * frees every pool.
 */
void kvt_pools_destroy_all(void)
{
	struct kvt_pool *pool;

	mutex_lock(&kvt_pools_lock);
	while ((pool = list_first_entry_or_null(&kvt_pools, struct kvt_pool,
						node))) {
		kvt_pool_unname(pool);
		mutex_unlock(&kvt_pools_lock);
		kvt_pool_put(pool);
		mutex_lock(&kvt_pools_lock);
	}
	mutex_unlock(&kvt_pools_lock);
}

/**
 * kvt_pools_stat() - global figures for sysfs
 * @nr: out: pools that exist, named or not
 * @reserved: out: DRAM bytes reserved by them
 * @sum: out: the counters of the named pools, added up
 */
void kvt_pools_stat(u32 *nr, u64 *reserved, struct kvt_pool_counters *sum)
{
	struct kvt_pool *pool;

	memset(sum, 0, sizeof(*sum));
	mutex_lock(&kvt_pools_lock);
	*nr = kvt_nr_pools;
	*reserved = kvt_dram_reserved;
	list_for_each_entry(pool, &kvt_pools, node) {
		spin_lock(&pool->lock);
		sum->puts += pool->stats.puts;
		sum->gets += pool->stats.gets;
		sum->hits += pool->stats.hits;
		sum->misses += pool->stats.misses;
		sum->evictions += pool->stats.evictions;
		sum->drops += pool->stats.drops;
		sum->bytes_in += pool->stats.bytes_in;
		sum->bytes_out += pool->stats.bytes_out;
		sum->demotions += pool->stats.demotions;
		sum->promotions += pool->stats.promotions;
		sum->bad_reads += pool->stats.bad_reads;
		spin_unlock(&pool->lock);
	}
	mutex_unlock(&kvt_pools_lock);
}

static int kvt_pool_release(struct inode *inode, struct file *file)
{
	struct kvt_handle *h = file->private_data;

	kvt_prefetch_release_fd(h);
	kvt_handle_unpin_all(h);
	xa_destroy(&h->pins);
	kvt_reserve_release(h);
	kvt_pool_put(h->pool);
	kmem_cache_free(kvt_handle_cache, h);
	return 0;
}

/* read(2): prefetch completion records (struct kvtier_completion). */
static ssize_t kvt_pool_read(struct file *file, char __user *buf, size_t len,
			     loff_t *ppos)
{
	return kvt_prefetch_read(file->private_data, buf, len,
				 file->f_flags & O_NONBLOCK);
}

static __poll_t kvt_pool_poll(struct file *file, poll_table *wait)
{
	return kvt_prefetch_poll(file->private_data, file, wait);
}

static const struct file_operations kvt_pool_fops = {
	.owner		= THIS_MODULE,
	.release	= kvt_pool_release,
	.read		= kvt_pool_read,
	.poll		= kvt_pool_poll,
	.unlocked_ioctl	= kvt_pool_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.uring_cmd	= kvt_pool_uring_cmd,
	.mmap		= kvt_pool_mmap,
	.llseek		= noop_llseek,
};
