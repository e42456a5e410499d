/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The HBM tier's internals, shared by tier_hbm.c (placement: slots, their
 * replacement list, staging, adoption, write-down) and its device backends
 * (hbm_emul.c, hbm_user.c). A backend is one file and one ops table: a real
 * GPU backend (dma-buf import, P2P DMA) is another such file.
 */
#ifndef _KVTIER_HBM_H
#define _KVTIER_HBM_H

#include <linux/list.h>
#include <linux/workqueue.h>
#include "kvt.h"

/* Slot states, under pool->lock. */
enum kvt_slot_state {
	KVT_SLOT_FREE = 0,
	KVT_SLOT_TO_DEV,	/* a block is being copied in */
	KVT_SLOT_READY,		/* holds its block's bytes */
	KVT_SLOT_FROM_DEV,	/* adopted: being written down to DRAM */
};

/**
 * struct kvt_hbm_copy - one copy between a DRAM block and a slot
 * @hbm: the tier (its pool referenced while the copy lives)
 * @node: the backend's list of copies in flight
 * @slot: the slot
 * @addr: the block address
 * @to_dev: DRAM -> slot; else slot -> DRAM
 * @seq: the backend's id of it
 * @started: jiffies at submission (timeouts)
 * @status: its result
 * @work: completion in process context
 * @bwork: the backend's, if it needs a work item of its own
 */
struct kvt_hbm_copy {
	struct kvt_hbm *hbm;
	struct list_head node;
	u32 slot;
	u32 addr;
	bool to_dev;
	u64 seq;
	unsigned long started;
	int status;
	struct work_struct work;
	struct work_struct bwork;
};

/**
 * struct kvt_hbm_ops - a device backend
 * @name: for messages
 * @init: set up an arena of hbm->nr_slots slots; 0 or -errno
 * @fini: tear it down; no copy is in flight any more
 * @copy: start a copy; the backend calls kvt_hbm_copy_done() when it ends
 *	  (any context), or returns -errno without calling it
 * @detach: the arena goes (the pool is freed, or its mover went away):
 *	    fail the copies in flight
 * @fd: the fd userspace drives the arena with, installed; or -errno
 *	(NULL: the backend has none)
 */
struct kvt_hbm_ops {
	const char *name;
	int (*init)(struct kvt_hbm *hbm);
	void (*fini)(struct kvt_hbm *hbm);
	int (*copy)(struct kvt_hbm *hbm, struct kvt_hbm_copy *c);
	void (*detach)(struct kvt_hbm *hbm);
	int (*fd)(struct kvt_hbm *hbm);
};

/**
 * struct kvt_hbm - a pool's device tier
 * @pool: its pool
 * @ops: its backend
 * @backend: KVTIER_HBM_*
 * @nr_slots: arena size in blocks
 * @slot_addr: block of each slot, or KVT_NIL
 * @slot_state: enum kvt_slot_state of each slot
 * @prev: replacement list (READY slots) or free list links, by slot
 * @next: see @prev
 * @head: most recently used READY slot
 * @tail: least recently used READY slot
 * @free: first free slot
 * @addr_slot: slot of each block address, or KVT_NIL
 * @used: slots not free
 * @dead: detached: it takes nothing new
 * @fd_open: a mover fd refers to it (it may not be replaced)
 * @copies: copies in flight; its end wakes wait_var_event(&@copies)
 * @stats: counters for KVTIER_IOC_HBM_STAT
 * @priv: the backend's
 *
 * Every field but @copies and what the backend keeps in @priv is
 * protected by pool->lock.
 */
struct kvt_hbm {
	struct kvt_pool *pool;
	const struct kvt_hbm_ops *ops;
	u32 backend;
	u32 nr_slots;
	u32 *slot_addr;
	u8 *slot_state;
	u32 *prev, *next;
	u32 head, tail;
	u32 free;
	u32 *addr_slot;
	u32 used;
	bool dead;
	bool fd_open;
	atomic_t copies;
	struct kvtier_hbm_stat stats;
	void *priv;
};

extern const struct kvt_hbm_ops kvt_hbm_emul_ops;
extern const struct kvt_hbm_ops kvt_hbm_user_ops;
extern unsigned int kvt_hbm_timeout_ms;

void kvt_hbm_copy_done(struct kvt_hbm_copy *c, int status);
void kvt_hbm_detach(struct kvt_hbm *hbm);
void *kvt_hbm_block_page(struct kvt_hbm *hbm, u32 addr, u32 index);

#endif /* _KVTIER_HBM_H */
