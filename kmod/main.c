// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier: tiered storage for LLM KV-cache blocks.
 *
 * This file is the control plane: module parameters, the /dev/kvtier misc
 * device, the API handshake and the pool commands of the control fd.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/nodemask.h>
#include <linux/mm.h>
#include "kvt.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

static unsigned int dram_mb = 256;
module_param(dram_mb, uint, 0444);
MODULE_PARM_DESC(dram_mb,
		 "DRAM budget for all pools, in MiB (1 to half of RAM). Default: 256");

int kvt_numa_node = NUMA_NO_NODE;
module_param_named(numa_node, kvt_numa_node, int, 0444);
MODULE_PARM_DESC(numa_node,
		 "NUMA node for pool DRAM when a pool asks for none, -1 = local. Default: -1");

unsigned int kvt_max_pools = 64;
module_param_named(max_pools, kvt_max_pools, uint, 0444);
MODULE_PARM_DESC(max_pools, "Most pools that may exist at once (1 to 4096). Default: 64");

static char *nvme;
module_param(nvme, charp, 0444);
MODULE_PARM_DESC(nvme,
		 "Block devices to attach as the NVMe tier at load, comma-separated (at most 4), e.g. /dev/nvme0n1,/dev/nvme1n1; formatted if blank. Default: none");

u64 kvt_dram_budget;
atomic64_t kvt_dram_used = ATOMIC64_INIT(0);

#define KVT_MAX_POOLS_LIMIT	4096

#define KVTIER_F_ALL	(KVTIER_F_POOLS | KVTIER_F_MMAP | KVTIER_F_NUMA | \
			 KVTIER_F_REPLACE | KVTIER_F_NVME | KVTIER_F_PREFETCH | \
			 KVTIER_F_URING | KVTIER_F_HBM | KVTIER_F_SG | \
			 KVTIER_F_LOOKUP_PIN | KVTIER_F_RESERVE | \
			 KVTIER_F_META | KVTIER_F_PARTS | KVTIER_F_EVENTS | \
			 KVTIER_F_COMPRESS | KVTIER_F_DIRECT | \
			 KVTIER_F_WEIGHTS | KVTIER_F_HINT_PROB)

/* Commands a control fd or a pool fd takes, reported by the handshake. */
#define KVT_IOCTL_BIT(cmd)	(1ULL << _IOC_NR(cmd))
#define KVTIER_IOCTLS_ALL						\
	(KVT_IOCTL_BIT(KVTIER_IOC_API) |				\
	 KVT_IOCTL_BIT(KVTIER_IOC_POOL_CREATE) |			\
	 KVT_IOCTL_BIT(KVTIER_IOC_POOL_OPEN) |				\
	 KVT_IOCTL_BIT(KVTIER_IOC_POOL_DESTROY) |			\
	 KVT_IOCTL_BIT(KVTIER_IOC_NVME_ATTACH) |			\
	 KVT_IOCTL_BIT(KVTIER_IOC_NVME_DETACH) |			\
	 KVT_IOCTL_BIT(KVTIER_IOC_NVME_STAT) |				\
	 KVT_IOCTL_BIT(KVTIER_IOC_SYNC) |				\
	 KVT_IOCTL_BIT(KVTIER_IOC_PUT) | KVT_IOCTL_BIT(KVTIER_IOC_GET) | \
	 KVT_IOCTL_BIT(KVTIER_IOC_LOOKUP) |				\
	 KVT_IOCTL_BIT(KVTIER_IOC_DROP) | KVT_IOCTL_BIT(KVTIER_IOC_PIN) | \
	 KVT_IOCTL_BIT(KVTIER_IOC_UNPIN) | KVT_IOCTL_BIT(KVTIER_IOC_STAT) | \
	 KVT_IOCTL_BIT(KVTIER_IOC_PREFETCH) |				\
	 KVT_IOCTL_BIT(KVTIER_IOC_CANCEL) |				\
	 KVT_IOCTL_BIT(KVTIER_IOC_EVENTFD) |				\
	 KVT_IOCTL_BIT(KVTIER_IOC_HBM_ATTACH) |			\
	 KVT_IOCTL_BIT(KVTIER_IOC_HBM_STAT) |				\
	 KVT_IOCTL_BIT(KVTIER_IOC_ADOPT) |				\
	 KVT_IOCTL_BIT(KVTIER_IOC_RESERVE) |				\
	 KVT_IOCTL_BIT(KVTIER_IOC_COMMIT) |				\
	 KVT_IOCTL_BIT(KVTIER_IOC_ABORT) |				\
	 KVT_IOCTL_BIT(KVTIER_IOC_EVENTS) |				\
	 KVT_IOCTL_BIT(KVTIER_IOC_CENSUS))

/* struct kvt_ctl - one open control fd */
struct kvt_ctl {
	struct mutex lock;	/* serializes the handshake against commands */
	bool api_done;
	u64 features;		/* negotiated: what this fd may use */
};

static int kvt_ctl_open(struct inode *inode, struct file *file)
{
	struct kvt_ctl *ctl;

	ctl = kzalloc(sizeof(*ctl), GFP_KERNEL);
	if (!ctl)
		return -ENOMEM;
	mutex_init(&ctl->lock);
	file->private_data = ctl;
	return 0;
}

static int kvt_ctl_release(struct inode *inode, struct file *file)
{
	kfree(file->private_data);
	return 0;
}

static bool kvt_zeroed(const void *p, size_t len)
{
	return !memchr_inv(p, 0, len);
}

static int kvt_api(struct kvt_ctl *ctl, struct kvtier_api *api)
{
	if (api->api != KVTIER_API_VERSION || api->flags || api->__pad ||
	    !kvt_zeroed(api->reserved, sizeof(api->reserved)))
		return -EINVAL;
	if (ctl->api_done)
		return -EBUSY;

	/* Unknown bits are features this kernel does not have: not given. */
	ctl->api_done = true;
	ctl->features = api->features & KVTIER_F_ALL;
	api->features = ctl->features;

	/* Only inputs are kept; every output is set here. */
	api->supported = KVTIER_F_ALL;
	api->ioctls = KVTIER_IOCTLS_ALL;
	api->block_size_max = KVTIER_BLOCK_SIZE_MAX;
	api->batch_max = KVTIER_BATCH_MAX;
	api->name_max = KVTIER_NAME_MAX;
	api->max_pools = kvt_max_pools;
	api->dram_bytes = kvt_dram_budget;
	return 0;
}

/* Every command of the control fd and of a pool fd. */
static const struct kvt_cmd_info kvt_cmds[] = {
	{ KVTIER_IOC_API, KVTIER_API_SIZE_VER0, true, 0 },
	{ KVTIER_IOC_POOL_CREATE, KVTIER_POOL_CREATE_SIZE_VER0,
	  true, KVTIER_F_POOLS },
	{ KVTIER_IOC_POOL_OPEN, KVTIER_POOL_OPEN_SIZE_VER0,
	  true, KVTIER_F_POOLS },
	{ KVTIER_IOC_POOL_DESTROY, KVTIER_POOL_DESTROY_SIZE_VER0,
	  true, KVTIER_F_POOLS },
	{ KVTIER_IOC_NVME_ATTACH, KVTIER_NVME_ATTACH_SIZE_VER0,
	  true, KVTIER_F_NVME },
	{ KVTIER_IOC_NVME_DETACH, KVTIER_NVME_DETACH_SIZE_VER0,
	  true, KVTIER_F_NVME },
	{ KVTIER_IOC_NVME_STAT, KVTIER_NVME_STAT_SIZE_VER0,
	  true, KVTIER_F_NVME },
	{ KVTIER_IOC_PUT, KVTIER_BATCH_SIZE_VER0, false, KVTIER_F_POOLS },
	{ KVTIER_IOC_GET, KVTIER_BATCH_SIZE_VER0, false, KVTIER_F_POOLS },
	{ KVTIER_IOC_LOOKUP, KVTIER_BATCH_SIZE_VER0, false, KVTIER_F_POOLS },
	{ KVTIER_IOC_DROP, KVTIER_BATCH_SIZE_VER0, false, KVTIER_F_POOLS },
	{ KVTIER_IOC_PIN, KVTIER_BATCH_SIZE_VER0, false, KVTIER_F_POOLS },
	{ KVTIER_IOC_UNPIN, KVTIER_BATCH_SIZE_VER0, false, KVTIER_F_POOLS },
	{ KVTIER_IOC_STAT, KVTIER_POOL_STAT_SIZE_VER0, false, KVTIER_F_POOLS },
	{ KVTIER_IOC_SYNC, KVTIER_SYNC_SIZE_VER0, false, KVTIER_F_NVME },
	{ KVTIER_IOC_PREFETCH, KVTIER_PREFETCH_SIZE_VER0,
	  false, KVTIER_F_PREFETCH },
	{ KVTIER_IOC_CANCEL, KVTIER_CANCEL_SIZE_VER0,
	  false, KVTIER_F_PREFETCH },
	{ KVTIER_IOC_EVENTFD, KVTIER_EVENTFD_SIZE_VER0,
	  false, KVTIER_F_PREFETCH },
	{ KVTIER_IOC_HBM_ATTACH, KVTIER_HBM_ATTACH_SIZE_VER0,
	  false, KVTIER_F_HBM },
	{ KVTIER_IOC_HBM_STAT, KVTIER_HBM_STAT_SIZE_VER0, false, KVTIER_F_HBM },
	{ KVTIER_IOC_ADOPT, KVTIER_BATCH_SIZE_VER0, false, KVTIER_F_HBM },
	{ KVTIER_IOC_RESERVE, KVTIER_BATCH_SIZE_VER0, false, KVTIER_F_RESERVE },
	{ KVTIER_IOC_COMMIT, KVTIER_BATCH_SIZE_VER0, false, KVTIER_F_RESERVE },
	{ KVTIER_IOC_ABORT, KVTIER_BATCH_SIZE_VER0, false, KVTIER_F_RESERVE },
	{ KVTIER_IOC_EVENTS, KVTIER_EVENTS_SIZE_VER0, false, KVTIER_F_EVENTS },
	{ KVTIER_IOC_CENSUS, KVTIER_CENSUS_SIZE_VER0, false, KVTIER_F_EVENTS },
};

/**
 * kvt_cmd_info() - look a command up
 * @cmd: the ioctl number (or io_uring cmd_op)
 * @ctl: for the control fd (else for a pool fd)
 *
 * Return: the command's entry, or NULL for a number this kind of fd does
 * not take: another magic, an unknown number, another direction.
 */
const struct kvt_cmd_info *kvt_cmd_info(unsigned int cmd, bool ctl)
{
	unsigned int i;

	if (_IOC_TYPE(cmd) != KVTIER_IOC_MAGIC)
		return NULL;
	for (i = 0; i < ARRAY_SIZE(kvt_cmds); i++) {
		const struct kvt_cmd_info *ci = &kvt_cmds[i];

		if (_IOC_NR(cmd) == _IOC_NR(ci->cmd))
			return ci->ctl == ctl &&
			       _IOC_DIR(cmd) == _IOC_DIR(ci->cmd) ? ci : NULL;
	}
	return NULL;
}

/**
 * kvt_arg_in() - copy a command's struct in, before the command does anything
 * @ci: the command
 * @cmd: its ioctl number, whose _IOC_SIZE is the size of the caller's struct
 * @karg: out: the kernel's copy, _IOC_SIZE(@ci->cmd) bytes
 * @uarg: the caller's struct
 *
 * Every size from the first version's up is taken: a shorter struct's
 * missing fields read as zero, a longer one's tail must be zero (what
 * copy_struct_from_user() does). A command that writes results back
 * first writes back what it read, so that an argument it could not write
 * fails here, with nothing done, and never after the command took effect.
 *
 * Return: 0; -EINVAL for a struct smaller than the first version; -E2BIG
 * for a nonzero tail; -EFAULT when @uarg cannot be read, or written.
 */
int kvt_arg_in(const struct kvt_cmd_info *ci, unsigned int cmd, void *karg,
	       void __user *uarg)
{
	size_t usize = _IOC_SIZE(cmd);
	int ret;

	if (usize < ci->ver0)
		return -EINVAL;
	ret = copy_struct_from_user(karg, _IOC_SIZE(ci->cmd), uarg, usize);
	if (ret)
		return ret;
	if ((_IOC_DIR(ci->cmd) & _IOC_READ) && kvt_arg_out(ci, cmd, uarg, karg))
		return -EFAULT;
	return 0;
}

/**
 * kvt_arg_out() - write a command's results back
 * @ci: the command
 * @cmd: its ioctl number
 * @uarg: the caller's struct
 * @karg: the kernel's copy
 *
 * Writes as much of the struct as both sides know.
 *
 * Return: 0 or -EFAULT.
 */
int kvt_arg_out(const struct kvt_cmd_info *ci, unsigned int cmd,
		void __user *uarg, const void *karg)
{
	if (copy_to_user(uarg, karg, min(_IOC_SIZE(cmd), _IOC_SIZE(ci->cmd))))
		return -EFAULT;
	return 0;
}

static int kvt_ctl_nvme_attach(struct kvtier_nvme_attach *na)
{
	char *path;
	int ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (memchr_inv(na->reserved, 0, sizeof(na->reserved)))
		return -EINVAL;
	path = strndup_user(u64_to_user_ptr(na->path), PATH_MAX);
	if (IS_ERR(path))
		return PTR_ERR(path);
	ret = kvt_nvme_attach(path, na->flags, na->region_kib);
	kfree(path);
	return ret;
}

static int kvt_ctl_nvme_detach(struct kvtier_nvme_detach *nd)
{
	char *path = NULL;
	int ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (nd->flags || nd->__pad || nd->reserved)
		return -EINVAL;
	if (nd->path) {
		path = strndup_user(u64_to_user_ptr(nd->path), PATH_MAX);
		if (IS_ERR(path))
			return PTR_ERR(path);
	}
	ret = kvt_nvme_detach(path);
	kfree(path);
	return ret;
}

/* nvme=: attach each device of the comma-separated list. */
static int __init kvt_nvme_attach_param(void)
{
	char *list, *p, *dev;
	int ret = 0;

	list = kstrdup(nvme, GFP_KERNEL);
	if (!list)
		return -ENOMEM;
	p = list;
	while (!ret && (dev = strsep(&p, ","))) {
		if (!*dev)
			continue;
		ret = kvt_nvme_attach(dev, 0, 0);
		if (ret)
			pr_err("nvme=%s: attach failed: %d\n", dev, ret);
	}
	kfree(list);
	return ret;
}

/*
 * Install a new pool file as an O_CLOEXEC fd once its number has reached
 * userspace, so a fault on the way out leaves no fd behind.
 */
static int kvt_ctl_new_fd(struct kvt_ctl *ctl, const struct kvt_cmd_info *ci,
			  unsigned int cmd, void __user *uarg, void *karg,
			  __s32 *fdp, struct file *file)
{
	struct kvt_handle *h;
	int fd;

	if (IS_ERR(file))
		return PTR_ERR(file);

	/* The pool fd can do what its control fd negotiated, no more. */
	h = file->private_data;
	h->features = ctl->features;
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		fput(file);
		return fd;
	}
	*fdp = fd;
	if (kvt_arg_out(ci, cmd, uarg, karg)) {
		put_unused_fd(fd);
		fput(file);
		return -EFAULT;
	}
	fd_install(fd, file);
	return 0;
}

static long kvt_ctl_ioctl(struct file *file, unsigned int cmd,
			  unsigned long arg)
{
	const struct kvt_cmd_info *ci = kvt_cmd_info(cmd, true);
	struct kvt_ctl *ctl = file->private_data;
	void __user *uarg = (void __user *)arg;
	unsigned int nr = _IOC_NR(cmd);
	union {
		struct kvtier_api api;
		struct kvtier_pool_create create;
		struct kvtier_pool_open open;
		struct kvtier_pool_destroy destroy;
		struct kvtier_nvme_attach attach;
		struct kvtier_nvme_detach detach;
		struct kvtier_nvme_stat nstat;
	} u;
	int ret;

	if (!ci)
		return -ENOTTY;
	ret = kvt_arg_in(ci, cmd, &u, uarg);
	if (ret)
		return ret;

	mutex_lock(&ctl->lock);
	if (nr != _IOC_NR(KVTIER_IOC_API) && !ctl->api_done) {
		ret = -EINVAL;
		goto out_unlock;
	}
	if ((ci->feature & ~ctl->features) ||
	    (nr == _IOC_NR(KVTIER_IOC_POOL_CREATE) &&
	     u.create.numa_node != NUMA_NO_NODE &&
	     !(ctl->features & KVTIER_F_NUMA)) ||
	    (nr == _IOC_NR(KVTIER_IOC_POOL_CREATE) && u.create.parts &&
	     !(ctl->features & KVTIER_F_PARTS)) ||
	    (nr == _IOC_NR(KVTIER_IOC_POOL_CREATE) && u.create.compress &&
	     !(ctl->features & KVTIER_F_COMPRESS)) ||
	    (nr == _IOC_NR(KVTIER_IOC_POOL_CREATE) &&
	     u.create.flags & KVTIER_POOL_WEIGHTS &&
	     !(ctl->features & KVTIER_F_WEIGHTS))) {
		ret = -EOPNOTSUPP;
		goto out_unlock;
	}

	/* A weight pool's fields are not zeros a smaller struct stood for. */
	if (nr == _IOC_NR(KVTIER_IOC_POOL_CREATE) &&
	    u.create.flags & KVTIER_POOL_WEIGHTS &&
	    _IOC_SIZE(cmd) < offsetofend(struct kvtier_pool_create,
					 file_reserved)) {
		ret = -EINVAL;
		goto out_unlock;
	}

	switch (nr) {
	case _IOC_NR(KVTIER_IOC_API):
		ret = kvt_api(ctl, &u.api);
		break;
	case _IOC_NR(KVTIER_IOC_POOL_CREATE):
		ret = kvt_ctl_new_fd(ctl, ci, cmd, uarg, &u, &u.create.fd,
				     kvt_pool_create(&u.create));
		goto out_unlock;
	case _IOC_NR(KVTIER_IOC_POOL_OPEN):
		ret = kvt_ctl_new_fd(ctl, ci, cmd, uarg, &u, &u.open.fd,
				     kvt_pool_open(&u.open));
		goto out_unlock;
	case _IOC_NR(KVTIER_IOC_POOL_DESTROY):
		ret = kvt_pool_destroy(&u.destroy);
		goto out_unlock;
	case _IOC_NR(KVTIER_IOC_NVME_ATTACH):
		ret = kvt_ctl_nvme_attach(&u.attach);
		goto out_unlock;
	case _IOC_NR(KVTIER_IOC_NVME_DETACH):
		ret = kvt_ctl_nvme_detach(&u.detach);
		goto out_unlock;
	case _IOC_NR(KVTIER_IOC_NVME_STAT):
		ret = kvt_nvme_stat(&u.nstat);
		break;
	}
	if (!ret)
		ret = kvt_arg_out(ci, cmd, uarg, &u);
out_unlock:
	mutex_unlock(&ctl->lock);
	return ret;
}

static const struct file_operations kvt_ctl_fops = {
	.owner		= THIS_MODULE,
	.open		= kvt_ctl_open,
	.release	= kvt_ctl_release,
	.unlocked_ioctl	= kvt_ctl_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

static struct miscdevice kvt_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= KVTIER_DEVICE_NAME,
	.fops	= &kvt_ctl_fops,
	.mode	= 0666,
};

static int __init kvt_check_params(void)
{
	u64 ram_mb = (totalram_pages() << PAGE_SHIFT) >> 20;

	if (!dram_mb || dram_mb > ram_mb / 2) {
		pr_err("dram_mb=%u out of range 1..%llu (half of RAM)\n",
		       dram_mb, ram_mb / 2);
		return -EINVAL;
	}
	if (kvt_numa_node != NUMA_NO_NODE &&
	    (kvt_numa_node < 0 || kvt_numa_node >= MAX_NUMNODES ||
	     !node_online(kvt_numa_node))) {
		pr_err("numa_node=%d is not -1 or an online node\n",
		       kvt_numa_node);
		return -EINVAL;
	}
	if (!kvt_max_pools || kvt_max_pools > KVT_MAX_POOLS_LIMIT) {
		pr_err("max_pools=%u out of range 1..%u\n", kvt_max_pools,
		       KVT_MAX_POOLS_LIMIT);
		return -EINVAL;
	}
	if (kvt_reserve_param_check() || kvt_ev_param_check())
		return -EINVAL;
	kvt_dram_budget = (u64)dram_mb << 20;
	return 0;
}

static int __init kvt_init(void)
{
	int ret;

	ret = kvt_check_params();
	if (ret)
		return ret;

	ret = kvt_file_init();
	if (ret)
		return ret;
	/* Reads and copies that end let the prefetch engine look. */
	kvt_res_set_notify(kvt_prefetch_kick);
	ret = kvt_pool_fs_init();
	if (ret)
		goto out_file_exit;

	ret = kvt_sysfs_init();
	if (ret)
		goto out_fs_exit;

	if (nvme) {
		ret = kvt_nvme_attach_param();
		if (ret)
			goto out_nvme_detach;
	}

	ret = kvt_shrinker_init();
	if (ret)
		goto out_nvme_detach;

	kvt_fault_init();
	ret = misc_register(&kvt_misc);
	if (ret)
		goto out_fault_exit;

	pr_info("api %u, dram_mb=%u numa_node=%d max_pools=%u\n",
		KVTIER_API_VERSION, dram_mb, kvt_numa_node, kvt_max_pools);
	return 0;

out_fault_exit:
	kvt_fault_exit();
	kvt_shrinker_exit();
out_nvme_detach:
	kvt_nvme_detach(NULL);
	kvt_pools_destroy_all();
	kvt_sysfs_exit();
out_fs_exit:
	kvt_pool_fs_exit();
out_file_exit:
	kvt_res_set_notify(NULL);
	kvt_file_exit();
	return ret;
}

static void __exit kvt_exit(void)
{
	misc_deregister(&kvt_misc);
	kvt_fault_exit();
	kvt_shrinker_exit();
	/* Persistent pools are written back, to come back at the next load. */
	kvt_nvme_detach(NULL);
	kvt_res_set_notify(NULL);
	kvt_prefetch_exit();
	kvt_pools_destroy_all();
	/* Reads of weight pools hold their pools: the last ones go here. */
	kvt_file_exit();
	kvt_sysfs_exit();
	kvt_pool_fs_exit();
	if (atomic64_read(&kvt_dram_used))
		pr_err("leak: %lld bytes of DRAM still accounted at unload\n",
		       atomic64_read(&kvt_dram_used));
}

module_init(kvt_init);
module_exit(kvt_exit);

MODULE_DESCRIPTION("Tiered storage for LLM KV-cache blocks");
MODULE_LICENSE("GPL");
