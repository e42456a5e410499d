// SPDX-License-Identifier: GPL-2.0
/*
 * sysfs: /sys/kernel/kvtier/{stat,prefetch,shrinker,cpu_bytes,
 * nvme_read_latency,nvme_write_latency} and
 * /sys/kernel/kvtier/pools/<name>/{stat,config,events}.
 * Each file is one line of space-separated columns, documented in
 * Documentation/ABI/testing/sysfs-kernel-kvtier.
 */
#include <linux/kobject.h>
#include <linux/sysfs.h>
#include <linux/slab.h>
#include <linux/atomic.h>
#include "kvt.h"

static struct kobject *kvt_kobj;
static struct kobject *kvt_pools_kobj;

static ssize_t stat_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	struct kvt_pool_counters sum;
	u64 reserved;
	u32 nr;

	kvt_pools_stat(&nr, &reserved, &sum);
	return sysfs_emit(buf, "%u %llu %llu %lld %llu %llu %llu %llu %llu %llu\n",
			  nr, kvt_dram_budget, reserved,
			  atomic64_read(&kvt_dram_used), sum.puts, sum.gets,
			  sum.hits, sum.misses, sum.evictions, sum.drops);
}

static struct kobj_attribute kvt_stat_attr = __ATTR_RO(stat);

static ssize_t prefetch_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *buf)
{
	return kvt_prefetch_show(buf);
}

static struct kobj_attribute kvt_prefetch_attr = __ATTR_RO(prefetch);

static ssize_t shrinker_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *buf)
{
	return kvt_shrinker_show(buf);
}

static struct kobj_attribute kvt_shrinker_attr = __ATTR_RO(shrinker);

static ssize_t cpu_bytes_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	return kvt_cpu_bytes_show(buf);
}

static struct kobj_attribute kvt_cpu_bytes_attr = __ATTR_RO(cpu_bytes);

static ssize_t nvme_read_latency_show(struct kobject *kobj,
				      struct kobj_attribute *attr, char *buf)
{
	return kvt_lat_show(KVT_LAT_READ, buf);
}

static struct kobj_attribute kvt_nvme_read_latency_attr =
	__ATTR_RO(nvme_read_latency);

static ssize_t nvme_write_latency_show(struct kobject *kobj,
				       struct kobj_attribute *attr, char *buf)
{
	return kvt_lat_show(KVT_LAT_WRITE, buf);
}

static struct kobj_attribute kvt_nvme_write_latency_attr =
	__ATTR_RO(nvme_write_latency);

/* struct kvt_pool_kobj - a pool's directory; removed before the pool dies */
struct kvt_pool_kobj {
	struct kobject kobj;
	struct kvt_pool *pool;
};

static struct kvt_pool *kvt_kobj_pool(struct kobject *kobj)
{
	return container_of(kobj, struct kvt_pool_kobj, kobj)->pool;
}

static ssize_t pool_stat_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	struct kvt_pool *pool = kvt_kobj_pool(kobj);
	struct kvt_pool_counters c;
	u32 ready, pinned;

	spin_lock(&pool->lock);
	c = pool->stats;
	ready = pool->nr_ready;
	pinned = pool->nr_pinned;
	spin_unlock(&pool->lock);

	return sysfs_emit(buf,
			  "%u %u %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu\n",
			  ready, pinned, c.puts, c.gets, c.hits, c.misses,
			  c.evictions, c.drops, c.bytes_in, c.bytes_out,
			  c.lost_blocks, c.part_reads, c.z_bytes_in,
			  c.z_bytes_stored);
}

static ssize_t pool_config_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	struct kvt_pool *pool = kvt_kobj_pool(kobj);

	return sysfs_emit(buf, "%llu %u %u %d %o %u %u %u %u %u %d\n",
			  pool->block_size, pool->capacity, pool->dram_blocks,
			  pool->nid, pool->mode,
			  from_kuid_munged(&init_user_ns, pool->uid),
			  from_kgid_munged(&init_user_ns, pool->gid),
			  pool->parts, pool->compress, pool->compress_flags,
			  kvt_file_mode(pool));
}

static ssize_t pool_events_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return kvt_ev_show(kvt_kobj_pool(kobj), buf);
}

static struct kobj_attribute kvt_pool_stat_attr =
	__ATTR(stat, 0400, pool_stat_show, NULL);
static struct kobj_attribute kvt_pool_events_attr =
	__ATTR(events, 0400, pool_events_show, NULL);
static struct kobj_attribute kvt_pool_config_attr =
	__ATTR(config, 0400, pool_config_show, NULL);

static struct attribute *kvt_pool_attrs[] = {
	&kvt_pool_stat_attr.attr,
	&kvt_pool_config_attr.attr,
	&kvt_pool_events_attr.attr,
	NULL,
};
ATTRIBUTE_GROUPS(kvt_pool);

static void kvt_pool_kobj_release(struct kobject *kobj)
{
	kfree(container_of(kobj, struct kvt_pool_kobj, kobj));
}

static struct kobj_type kvt_pool_ktype = {
	.release	= kvt_pool_kobj_release,
	.sysfs_ops	= &kobj_sysfs_ops,
	.default_groups	= kvt_pool_groups,
};

/**
 * kvt_sysfs_pool_add() - give a named pool its sysfs directory
 * @pool: the pool, just named
 *
 * A pool works without its directory: failure is logged, not returned.
 *
 * Return: 0 or -errno.
 */
int kvt_sysfs_pool_add(struct kvt_pool *pool)
{
	struct kvt_pool_kobj *pk;
	int ret;

	pk = kzalloc(sizeof(*pk), GFP_KERNEL);
	if (!pk)
		return -ENOMEM;
	pk->pool = pool;
	ret = kobject_init_and_add(&pk->kobj, &kvt_pool_ktype, kvt_pools_kobj,
				   "%s", pool->name);
	if (ret) {
		kobject_put(&pk->kobj);
		pr_warn("kvtier: no sysfs directory for pool %s: %d\n",
			pool->name, ret);
		return ret;
	}
	pool->kobj = &pk->kobj;
	return 0;
}

/**
 * kvt_sysfs_pool_del() - remove a pool's sysfs directory
 * @pool: the pool, losing its name
 *
 * Waits for readers of its files, so none sees the pool after it is gone.
 */
void kvt_sysfs_pool_del(struct kvt_pool *pool)
{
	if (!pool->kobj)
		return;
	kobject_del(pool->kobj);
	kobject_put(pool->kobj);
	pool->kobj = NULL;
}

/**
 * kvt_sysfs_init() - create /sys/kernel/kvtier
 *
 * Return: 0 or -errno.
 */
int kvt_sysfs_init(void)
{
	int ret;

	kvt_kobj = kobject_create_and_add("kvtier", kernel_kobj);
	if (!kvt_kobj)
		return -ENOMEM;
	ret = sysfs_create_file(kvt_kobj, &kvt_stat_attr.attr);
	if (!ret)
		ret = sysfs_create_file(kvt_kobj, &kvt_prefetch_attr.attr);
	if (!ret)
		ret = sysfs_create_file(kvt_kobj, &kvt_shrinker_attr.attr);
	if (!ret)
		ret = sysfs_create_file(kvt_kobj, &kvt_cpu_bytes_attr.attr);
	if (!ret)
		ret = sysfs_create_file(kvt_kobj,
					&kvt_nvme_read_latency_attr.attr);
	if (!ret)
		ret = sysfs_create_file(kvt_kobj,
					&kvt_nvme_write_latency_attr.attr);
	if (ret)
		goto out_put_kobj;
	kvt_pools_kobj = kobject_create_and_add("pools", kvt_kobj);
	if (!kvt_pools_kobj) {
		ret = -ENOMEM;
		goto out_put_kobj;
	}
	return 0;

out_put_kobj:
	kobject_put(kvt_kobj);
	return ret;
}

/**
 * kvt_sysfs_exit() - remove /sys/kernel/kvtier
 */
void kvt_sysfs_exit(void)
{
	kobject_put(kvt_pools_kobj);
	kobject_put(kvt_kobj);
}
