// SPDX-License-Identifier: GPL-2.0
/*
 * HBM backend "emul": kernel memory standing in for device memory.
 *
 * The arena is vmalloc'ed, out of a budget of hbm_emul_mb for all pools;
 * userspace cannot map it, so its bytes change only through the backend's
 * copies, as with a real device. Each arena is one link: its copies run one
 * at a time, in order, on an ordered workqueue; with hbm_emul_gbps (and
 * hbm_emul_lat_us) set, each also takes the time a PCIe-like link would, so
 * the link's bandwidth is capped and benchmarks see device-like costs.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>
#include "hbm.h"

static unsigned int kvt_emul_mb = 256;
module_param_named(hbm_emul_mb, kvt_emul_mb, uint, 0444);
MODULE_PARM_DESC(hbm_emul_mb,
		 "Kernel memory for emulated HBM arenas, all pools together, in MiB. Default: 256");

static unsigned int kvt_emul_gbps;
module_param_named(hbm_emul_gbps, kvt_emul_gbps, uint, 0644);
MODULE_PARM_DESC(hbm_emul_gbps,
		 "Bandwidth the emulated HBM link is held to, in GB/s; 0 = as fast as memcpy. Default: 0");

static unsigned int kvt_emul_lat_us;
module_param_named(hbm_emul_lat_us, kvt_emul_lat_us, uint, 0644);
MODULE_PARM_DESC(hbm_emul_lat_us,
		 "Latency added to each emulated HBM copy, in microseconds. Default: 0");

static atomic64_t kvt_emul_used = ATOMIC64_INIT(0);

struct kvt_emul {
	void *arena;
	u64 bytes;
	struct workqueue_struct *wq;
};

static int kvt_emul_init(struct kvt_hbm *hbm)
{
	u64 bytes = (u64)hbm->nr_slots * hbm->pool->block_size;
	u64 budget = (u64)kvt_emul_mb << 20;
	struct kvt_emul *em;

	if (atomic64_add_return(bytes, &kvt_emul_used) > budget) {
		atomic64_sub(bytes, &kvt_emul_used);
		return -ENOSPC;
	}
	em = kzalloc(sizeof(*em), GFP_KERNEL);
	if (em)
		em->arena = vzalloc(bytes);
	if (em && em->arena)
		em->wq = alloc_ordered_workqueue("kvtier-hbm-emul",
						 WQ_MEM_RECLAIM);
	if (!em || !em->arena || !em->wq) {
		if (em)
			vfree(em->arena);
		kfree(em);
		atomic64_sub(bytes, &kvt_emul_used);
		return -ENOMEM;
	}
	em->bytes = bytes;
	hbm->priv = em;
	return 0;
}

static void kvt_emul_fini(struct kvt_hbm *hbm)
{
	struct kvt_emul *em = hbm->priv;

	destroy_workqueue(em->wq);
	vfree(em->arena);
	atomic64_sub(em->bytes, &kvt_emul_used);
	kfree(em);
	hbm->priv = NULL;
}

/* The time the modeled link takes for @bytes. */
static void kvt_emul_link(u64 bytes)
{
	unsigned int gbps = READ_ONCE(kvt_emul_gbps);
	u64 us = READ_ONCE(kvt_emul_lat_us);

	if (gbps)
		us += div_u64(bytes, (u64)gbps * 1000);
	if (us)
		usleep_range(us, us + us / 8 + 1);
}

static void kvt_emul_work(struct work_struct *work)
{
	struct kvt_hbm_copy *c = container_of(work, struct kvt_hbm_copy, bwork);
	struct kvt_hbm *hbm = c->hbm;
	struct kvt_emul *em = hbm->priv;
	u64 bs = hbm->pool->block_size;
	void *slot = em->arena + (u64)c->slot * bs;
	u32 i;

	for (i = 0; i < hbm->pool->pages_per_block; i++) {
		void *page = kvt_hbm_block_page(hbm, c->addr, i);

		if (c->to_dev)
			memcpy(slot + (u64)i * PAGE_SIZE, page, PAGE_SIZE);
		else
			memcpy(page, slot + (u64)i * PAGE_SIZE, PAGE_SIZE);
		cond_resched();
	}
	kvt_emul_link(bs);
	kvt_hbm_copy_done(c, 0);
}

static int kvt_emul_copy(struct kvt_hbm *hbm, struct kvt_hbm_copy *c)
{
	struct kvt_emul *em = hbm->priv;

	INIT_WORK(&c->bwork, kvt_emul_work);
	queue_work(em->wq, &c->bwork);
	return 0;
}

/* Copies in flight finish on their own (memory does not go away). */
static void kvt_emul_detach(struct kvt_hbm *hbm)
{
}

const struct kvt_hbm_ops kvt_hbm_emul_ops = {
	.name	= "emul",
	.init	= kvt_emul_init,
	.fini	= kvt_emul_fini,
	.copy	= kvt_emul_copy,
	.detach	= kvt_emul_detach,
};
