// SPDX-License-Identifier: GPL-2.0
/*
 * Prefetch: hints from the runtime, staged in deadline order.
 *
 * KVTIER_IOC_PREFETCH queues a group: the blocks of one request's prefix,
 * a target tier, a deadline and a priority. One engine (a work item, so it
 * never runs twice at once) takes groups earliest deadline first, priority
 * breaking ties, and starts NVMe reads for their blocks with at most
 * prefetch_qd of its own reads in flight, in chain order within a group.
 * Probable hints (KVTIER_HINT_PROB) come after a group's sure ones, the
 * likeliest first, and kmod/policy.c says for each, when its read would
 * start, whether to read it at all (kvt_policy_hint(): in time for the
 * deadline, above a floor that rises with the engine's queue) and whether
 * to hold it; a hint left unread is settled, not failed.
 * Background groups (KVTIER_PREFETCH_BACKGROUND) come after all others and
 * start reads only while fewer than half of prefetch_qd are in flight.
 * A block already in DRAM is taken as it is; one being read already (by a
 * GET, another group) is waited for, not read twice. Each read's end kicks
 * the engine, which settles the hints whose blocks arrived and ends a group
 * once every hint is settled: a struct kvtier_completion goes to its fd's
 * ring (read(2), poll(2), an eventfd).
 *
 * Protection: a group holds the blocks it brought in or found resident
 * (kvt_block.hold): they are out of the replacement list, as if pinned,
 * until used (GET, PIN, LOOKUP with TOUCH, a fault: kvt_prefetch_used()),
 * until the group is cancelled or its fd closed, or prefetch_hold_ms after
 * the group ended; a probable hint's hold ends at the group's deadline
 * too, if it has one. A pool's held blocks never exceed prefetch_protect_pct
 * of its DRAM share, so hints cannot take the cache; hints past the bound
 * still load, unheld but marked (kvt_res_ahead()): while unused and the
 * group lasts, they age by use with the blocks that have no NVMe copy,
 * not among the clean ones that eviction takes first. Another group's
 * end may clear the mark a live group set.
 *
 * Locking:
 *  - kvt_pf_mutex serializes the engine, cancel and close: the queue (an
 *    rbtree of groups with hints left to start), the active list (groups
 *    waiting for reads, or ended and holding), every group's hints and the
 *    holds they take. The engine sleeps under it (a read may have to wait
 *    for DRAM), so PREFETCH itself never takes it.
 *  - kvt_pf_lock (spinlock) protects what PREFETCH and read(2) touch: the
 *    incoming list, each fd's group list and count, its completion ring and
 *    eventfd.
 *  - Order: kvt_pf_mutex -> kvt_pf_lock, and kvt_pf_mutex -> pool->lock;
 *    kvt_pf_lock and pool->lock are never held together. Holds
 *    (kvt_block.hold, pool->nr_held) are under pool->lock.
 *
 * Lifetime: a group is owned by its fd's list from PREFETCH until it is
 * retired, cancelled or the fd closes, which free it under kvt_pf_mutex; the
 * engine only touches groups under that mutex, so no reference counts.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/eventfd.h>
#include <linux/file.h>
#include <linux/moduleparam.h>
#include <linux/poll.h>
#include <linux/rbtree.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include "kvt.h"
#include "trace.h"

static unsigned int kvt_pf_qd = 32;
module_param_named(prefetch_qd, kvt_pf_qd, uint, 0644);
MODULE_PARM_DESC(prefetch_qd,
		 "NVMe reads the prefetch engine keeps in flight (1 to 1024). Default: 32");

static unsigned int kvt_pf_protect_pct = 50;
module_param_named(prefetch_protect_pct, kvt_pf_protect_pct, uint, 0644);
MODULE_PARM_DESC(prefetch_protect_pct,
		 "Most of a pool's DRAM share prefetched blocks may hold against eviction, in percent (0 to 90). Default: 50");

static unsigned int kvt_pf_hold_ms = 10000;
module_param_named(prefetch_hold_ms, kvt_pf_hold_ms, uint, 0644);
MODULE_PARM_DESC(prefetch_hold_ms,
		 "How long blocks of an ended prefetch group stay protected if unused, in ms. Default: 10000");

/* Hint states. */
enum {
	KVT_PFH_NEW = 0,	/* not looked at by the engine yet */
	KVT_PFH_WAIT,		/* its block is being read */
	KVT_PFH_READY,		/* its block was in the target tier */
	KVT_PFH_FAILED,		/* it could not be read, or went away */
	KVT_PFH_NOSPC,		/* no room held it long enough */
	KVT_PFH_DROPPED,	/* no such block at PREFETCH */
	KVT_PFH_SKIPPED,	/* probable, and the policy left it unread */
};

/* Group states. */
enum {
	KVT_PFG_SETUP = 0,	/* PREFETCH is filling it in: on no list yet */
	KVT_PFG_INCOMING,	/* on kvt_pf_incoming */
	KVT_PFG_QUEUED,		/* in kvt_pf_queue: hints left to start */
	KVT_PFG_WAITING,	/* on kvt_pf_active: reads under way */
	KVT_PFG_ENDED,		/* on kvt_pf_active: completion posted */
};

#define KVT_PF_TRIES		2	/* reads of one hint's block */
#define KVT_PF_SCAN_NS		(10 * NSEC_PER_MSEC)	/* ended groups */

struct kvt_pf_hint {
	u64 key[2];
	u64 start_ns;		/* this group's read of the block started */
	u32 addr;
	u32 prob;		/* in 1/KVT_PROB_ONE */
	u16 idx;		/* in the caller's array */
	u8 state;
	u8 held;		/* this group holds the block */
	u8 ahead;		/* marked read ahead, past the holds' bound */
	u8 loaded;		/* this group's read brought it in */
	u8 tries;		/* reads started */
	u8 htries;		/* copies to HBM started */
};

struct kvt_pf_group {
	struct list_head fd_node;	/* fd->groups, under kvt_pf_lock */
	struct list_head node;		/* incoming or active list */
	struct rb_node rb;		/* kvt_pf_queue */
	struct kvt_pf_fd *fd;
	struct kvt_pool *pool;
	u64 id;
	u64 cookie;
	u64 deadline;		/* the order: the caller's, never before PREFETCH */
	u64 due;		/* the caller's deadline; 0: as soon as possible */
	u64 seq;
	u64 end_ns;
	u32 prio;
	u32 flags;
	u32 tier;			/* KVTIER_TIER_DRAM or _HBM */
	u32 count;
	u32 next;			/* first hint not started */
	u8 state;
	u8 prob_held;			/* a probable hint holds its block */
	struct kvt_pf_hint hints[];
};

static DEFINE_MUTEX(kvt_pf_mutex);
static DEFINE_SPINLOCK(kvt_pf_lock);
static LIST_HEAD(kvt_pf_incoming);
static struct rb_root_cached kvt_pf_queue = RB_ROOT_CACHED;
static LIST_HEAD(kvt_pf_active);
static atomic_t kvt_pf_live = ATOMIC_INIT(0);	/* groups not retired */
static u64 kvt_pf_seq;
static void kvt_pf_run(struct work_struct *work);
static DECLARE_DELAYED_WORK(kvt_pf_work, kvt_pf_run);

/* The engine's counters, for sysfs. */
static struct {
	atomic64_t hints, merged, issued, dropped, ready_blocks, bytes;
	atomic64_t groups, on_time, late, cancelled, expired, failed;
	atomic64_t wasted, unprotected, skipped;
} kvt_pf_stats;

/* One run of the engine: what a hint's plan is made from. */
struct kvt_pf_run {
	u64 now;
	u32 qd;
	u32 inflight;		/* the engine's reads, as counted so far */
};

static void kvt_pf_kick_now(void)
{
	mod_delayed_work(system_unbound_wq, &kvt_pf_work, 0);
}

/**
 * kvt_prefetch_kick() - a block read ended: let the engine look
 *
 * Cheap when no group is live.
 */
void kvt_prefetch_kick(void)
{
	if (atomic_read(&kvt_pf_live))
		kvt_pf_kick_now();
}

/* ---- holds -------------------------------------------------------------- */

static u32 kvt_pf_hold_limit(struct kvt_pool *pool)
{
	return (u64)pool->dram_blocks * min(READ_ONCE(kvt_pf_protect_pct), 90U) /
	       100;
}

/* The hold went: the block may leave DRAM again if nothing keeps it. */
static void kvt_pf_unhold(struct kvt_pool *pool, u32 addr)
{
	pool->nr_held--;
	kvt_res_unkeep(pool, addr);
}

/*
 * Take a hold on a READY block (in DRAM, or about to be read into it);
 * pool->lock held.
 */
static bool kvt_pf_hold(struct kvt_pool *pool, u32 addr)
{
	struct kvt_block *blk = &pool->blocks[addr];

	lockdep_assert_held(&pool->lock);
	if (blk->hold == U8_MAX)
		return false;
	if (!blk->hold) {
		if (pool->nr_held >= kvt_pf_hold_limit(pool))
			return false;
		pool->nr_held++;
		kvt_res_keep(pool, addr);
	}
	blk->hold++;
	return true;
}

/**
 * kvt_prefetch_used() - a block was used: its prefetch protection ends
 * @pool: the pool, its lock held
 * @addr: a READY block
 *
 * Called by GET, PIN, LOOKUP with TOUCH and mmap faults. Every group's
 * hold on the block ends; from now on it ages like any other.
 */
void kvt_prefetch_used(struct kvt_pool *pool, u32 addr)
{
	struct kvt_block *blk = &pool->blocks[addr];

	lockdep_assert_held(&pool->lock);
	if (!blk->hold)
		return;
	blk->hold = 0;
	kvt_pf_unhold(pool, addr);
}

static bool kvt_pf_same(struct kvt_pool *pool, struct kvt_pf_hint *ph)
{
	struct kvt_block *blk = &pool->blocks[ph->addr];

	return blk->state == KVT_BLK_READY && blk->key[0] == ph->key[0] &&
	       blk->key[1] == ph->key[1];
}

static bool kvt_pf_resident(struct kvt_pool *pool, struct kvt_pf_hint *ph,
			    u32 tier)
{
	u32 slot;

	if (ph->addr == KVT_NIL || !kvt_pf_same(pool, ph))
		return false;
	if (tier == KVTIER_TIER_HBM)
		return kvt_res_tier(pool, ph->addr, &slot) == KVTIER_TIER_HBM;
	return kvt_dram_ready(&pool->blocks[ph->addr]);
}

/*
 * Give back what a group holds (@probable: the holds of its probable hints
 * only); kvt_pf_mutex held.
 */
static void kvt_pf_release_holds(struct kvt_pf_group *g, bool probable)
{
	struct kvt_pool *pool = g->pool;
	u32 i;

	spin_lock(&pool->lock);
	for (i = 0; i < g->count; i++) {
		struct kvt_pf_hint *ph = &g->hints[i];
		struct kvt_block *blk;

		if ((!ph->held && !ph->ahead) ||
		    (probable && ph->prob >= KVT_PROB_ONE))
			continue;
		/* Past the bound: a clean block like any other again. */
		if (ph->ahead && kvt_pf_same(pool, ph))
			kvt_res_ahead(pool, ph->addr, false);
		ph->ahead = 0;
		if (!ph->held)
			continue;
		ph->held = 0;
		blk = &pool->blocks[ph->addr];
		/* Used (hold cleared), or gone: nothing to give back. */
		if (!kvt_pf_same(pool, ph) || !blk->hold)
			continue;
		if (ph->loaded)
			atomic64_inc(&kvt_pf_stats.wasted);
		if (!--blk->hold)
			kvt_pf_unhold(pool, ph->addr);
	}
	spin_unlock(&pool->lock);
}

/*
 * A block the group would hold but for the holds' bound: read ahead all
 * the same, and aged with the blocks that have no NVMe copy, not evicted
 * first as a clean one, while it is unused and the group lasts
 * (kvt_res_ahead()); pool->lock held.
 */
static void kvt_pf_ahead(struct kvt_pool *pool, struct kvt_pf_hint *ph)
{
	kvt_res_ahead(pool, ph->addr, true);
	ph->ahead = 1;
}

/* Whether an ended group still protects a block (none: it can go). */
static bool kvt_pf_holding(struct kvt_pf_group *g)
{
	struct kvt_pool *pool = g->pool;
	bool holding = false;
	u32 i;

	spin_lock(&pool->lock);
	for (i = 0; i < g->count && !holding; i++) {
		struct kvt_pf_hint *ph = &g->hints[i];

		/* Only a hint that holds or marks has looked up its block. */
		if (!ph->held && !ph->ahead)
			continue;
		holding = kvt_pf_same(pool, ph) &&
			  ((ph->held && pool->blocks[ph->addr].hold) ||
			   (ph->ahead && kvt_res_is_ahead(pool, ph->addr)));
	}
	spin_unlock(&pool->lock);
	return holding;
}

/* ---- the queue ---------------------------------------------------------- */

static bool kvt_pf_background(const struct kvt_pf_group *g)
{
	return g->flags & KVTIER_PREFETCH_BACKGROUND;
}

/* Background groups after all others; then deadline, priority, age. */
static bool kvt_pf_before(struct kvt_pf_group *a, struct kvt_pf_group *b)
{
	if (kvt_pf_background(a) != kvt_pf_background(b))
		return kvt_pf_background(b);
	if (a->deadline != b->deadline)
		return a->deadline < b->deadline;
	if (a->prio != b->prio)
		return a->prio > b->prio;
	return a->seq < b->seq;
}

static void kvt_pf_enqueue(struct kvt_pf_group *g)
{
	struct rb_node **link = &kvt_pf_queue.rb_root.rb_node, *parent = NULL;
	bool leftmost = true;

	while (*link) {
		struct kvt_pf_group *o = rb_entry(*link, struct kvt_pf_group,
						  rb);

		parent = *link;
		if (kvt_pf_before(g, o)) {
			link = &parent->rb_left;
		} else {
			link = &parent->rb_right;
			leftmost = false;
		}
	}
	rb_link_node(&g->rb, parent, link);
	rb_insert_color_cached(&g->rb, &kvt_pf_queue, leftmost);
	g->state = KVT_PFG_QUEUED;
}

/* Take a group off whatever engine list it is on; both locks held. */
static void kvt_pf_unqueue(struct kvt_pf_group *g)
{
	if (g->state == KVT_PFG_QUEUED)
		rb_erase_cached(&g->rb, &kvt_pf_queue);
	else
		list_del(&g->node);
}

/* ---- completions -------------------------------------------------------- */

/* The prefix of hints whose blocks are in DRAM now. */
static u32 kvt_pf_ready_prefix(struct kvt_pf_group *g)
{
	struct kvt_pool *pool = g->pool;
	u32 i;

	spin_lock(&pool->lock);
	for (i = 0; i < g->count; i++)
		if (!kvt_pf_resident(pool, &g->hints[i], g->tier))
			break;
	spin_unlock(&pool->lock);
	return i;
}

/* Queue a group's completion on its fd; kvt_pf_mutex held. */
static void kvt_pf_post(struct kvt_pf_group *g, int status, u64 now)
{
	struct kvt_pf_fd *fd = g->fd;
	struct kvtier_completion *c;
	u32 ready = kvt_pf_ready_prefix(g);
	bool late = g->due && now > g->due;

	trace_kvtier_prefetch_end(g->pool, g->id, g->count, ready, status);
	/* Counted before the record is seen: a reader's sysfs read agrees. */
	atomic64_inc(&kvt_pf_stats.groups);
	if (status == -ECANCELED)
		atomic64_inc(&kvt_pf_stats.cancelled);
	else if (status == -ETIME)
		atomic64_inc(&kvt_pf_stats.expired);
	else if (late)
		atomic64_inc(&kvt_pf_stats.late);
	else if (!status)
		atomic64_inc(&kvt_pf_stats.on_time);
	if (status == -EIO || status == -ENOSPC)
		atomic64_inc(&kvt_pf_stats.failed);

	spin_lock(&kvt_pf_lock);
	/* Never full: groups live + records unread <= the ring's size. */
	c = &fd->ring[(fd->rhead + fd->rlen) % KVTIER_PREFETCH_GROUPS_MAX];
	if (!WARN_ON_ONCE(fd->rlen >= KVTIER_PREFETCH_GROUPS_MAX)) {
		memset(c, 0, sizeof(*c));
		c->group = g->id;
		c->cookie = g->cookie;
		c->status = status;
		c->ready = ready;
		c->count = g->count;
		c->flags = late ? KVTIER_COMPLETION_LATE : 0;
		c->end_ns = now;
		fd->rlen++;
	}
	if (fd->efd)
		eventfd_signal(fd->efd, 1);
	spin_unlock(&kvt_pf_lock);
	wake_up_interruptible_poll(&fd->wq, EPOLLIN | EPOLLRDNORM);
}

/* End a group that has not ended: post it, keep it (holding) on active. */
static void kvt_pf_end(struct kvt_pf_group *g, int status, u64 now)
{
	kvt_pf_post(g, status, now);
	spin_lock(&kvt_pf_lock);
	kvt_pf_unqueue(g);
	list_add_tail(&g->node, &kvt_pf_active);
	g->state = KVT_PFG_ENDED;
	g->fd->nr_groups--;
	spin_unlock(&kvt_pf_lock);
	g->end_ns = now;
}

/* Free a group: off every list, holds given back; kvt_pf_mutex held. */
static void kvt_pf_free(struct kvt_pf_group *g)
{
	spin_lock(&kvt_pf_lock);
	kvt_pf_unqueue(g);
	list_del(&g->fd_node);
	if (g->state != KVT_PFG_ENDED)
		g->fd->nr_groups--;
	spin_unlock(&kvt_pf_lock);
	atomic_dec(&kvt_pf_live);
	kvt_pf_release_holds(g, false);
	kvfree(g);
}

/* ---- the engine --------------------------------------------------------- */

/*
 * What the policy says of a hint now: KVT_HINT_READ, KVT_HINT_HOLD;
 * pool->lock held.
 */
static u32 kvt_pf_plan(struct kvt_pf_group *g, struct kvt_pf_hint *ph,
		       const struct kvt_pf_run *r)
{
	struct kvt_pool *pool = g->pool;
	bool in_time;
	u32 limit, plan;

	if (ph->prob >= KVT_PROB_ONE)
		return KVT_HINT_READ | KVT_HINT_HOLD;
	in_time = !g->due || r->now + pool->pf_read_ns <= g->due;
	limit = kvt_pf_hold_limit(pool);
	plan = kvt_policy_hint(ph->prob, in_time,
			       (r->inflight + 1) * KVT_POL_SCALE / r->qd,
			       limit ? (u64)pool->nr_held * KVT_POL_SCALE / limit :
				       KVT_POL_SCALE);
	/* Past the deadline a probable block is not held (kvt_pf_run()). */
	if (g->due && r->now >= g->due)
		plan &= ~KVT_HINT_HOLD;
	return plan;
}

/* A read the engine started ended: learn how long reads take. */
static void kvt_pf_learn(struct kvt_pool *pool, struct kvt_pf_hint *ph,
			 u64 now)
{
	u64 took = now - ph->start_ns, est = pool->pf_read_ns;

	ph->start_ns = 0;
	pool->pf_read_ns = est ? est - est / 8 + took / 8 : took;
}

/* Give back a hint's hold on its block; pool->lock held. */
static void kvt_pf_hint_unhold(struct kvt_pool *pool, struct kvt_pf_hint *ph)
{
	struct kvt_block *blk = &pool->blocks[ph->addr];

	lockdep_assert_held(&pool->lock);
	ph->held = 0;
	if (blk->hold && !--blk->hold)
		kvt_pf_unhold(pool, ph->addr);
}

/*
 * Look at one hint and move it on: take blocks that are there, start a read
 * for blocks only on NVMe (if the policy reads them), wait for reads under
 * way. Returns 1 if this group's read of the block is in flight.
 */
static int kvt_pf_step(struct kvt_pf_group *g, struct kvt_pf_hint *ph,
		       const struct kvt_pf_run *r)
{
	struct kvt_pool *pool = g->pool;
	struct kvt_block *blk;
	u32 slot, plan;
	int ret;

	if (ph->state != KVT_PFH_NEW && ph->state != KVT_PFH_WAIT)
		return 0;
	spin_lock(&pool->lock);
	if (ph->state == KVT_PFH_NEW) {
		ph->addr = kvt_block_find(pool, ph->key);
		if (ph->addr == KVT_NIL) {
			spin_unlock(&pool->lock);
			ph->state = KVT_PFH_FAILED;
			return 0;
		}
	}
	blk = &pool->blocks[ph->addr];
	if (!kvt_pf_same(pool, ph)) {
		spin_unlock(&pool->lock);
		ph->state = KVT_PFH_FAILED;
		return 0;
	}
	/*
	 * Hold it from the first look, before it is read: a block that
	 * arrives then never enters the replacement list, so the group's
	 * later reads cannot evict it before the engine sees it.
	 */
	plan = kvt_pf_plan(g, ph, r);
	if (!ph->held && plan & KVT_HINT_HOLD && kvt_pf_hold(pool, ph->addr)) {
		ph->held = 1;
		g->prob_held |= ph->prob < KVT_PROB_ONE;
	}
	if (ph->start_ns && !(blk->flags & KVT_BF_LOADING))
		kvt_pf_learn(pool, ph, r->now);
	if (kvt_dram_ready(blk)) {
		/* In DRAM; for HBM, then from DRAM to a slot. */
		if (g->tier == KVTIER_TIER_HBM &&
		    kvt_res_tier(pool, ph->addr, &slot) != KVTIER_TIER_HBM) {
			spin_unlock(&pool->lock);
			/* Copies that failed are not tried for ever. */
			ret = kvt_res_stage(pool, ph->addr,
					    ph->htries < KVT_PF_TRIES);
			ph->htries += ret == 1;
			if (ret == -ENOSPC)
				ph->state = KVT_PFH_NOSPC;
			else if (ret < 0 && ret != -EAGAIN)
				ph->state = KVT_PFH_FAILED;
			else
				ph->state = KVT_PFH_WAIT;
			return 0;
		}
		if (ph->state == KVT_PFH_NEW)
			atomic64_inc(&kvt_pf_stats.merged);
		ph->state = KVT_PFH_READY;
		atomic64_inc(&kvt_pf_stats.ready_blocks);
		if (!ph->held && plan & KVT_HINT_HOLD) {
			atomic64_inc(&kvt_pf_stats.unprotected);
			kvt_pf_ahead(pool, ph);
		}
		trace_kvtier_prefetch_ready(pool, ph->addr);
		spin_unlock(&pool->lock);
		return 0;
	}
	if (blk->flags & KVT_BF_BUSY) {
		/* A read (ours or not) or an eviction under way: wait. */
		if (ph->state == KVT_PFH_NEW) {
			atomic64_inc(&kvt_pf_stats.merged);
			ph->state = KVT_PFH_WAIT;
		}
		spin_unlock(&pool->lock);
		return ph->loaded && (blk->flags & KVT_BF_LOADING);
	}
	/*
	 * Only on NVMe: never read, or read and evicted before we looked. An
	 * unheld block read once is not read again: it had its chance.
	 */
	if (ph->tries >= KVT_PF_TRIES) {
		spin_unlock(&pool->lock);
		ph->state = KVT_PFH_NOSPC;
		return 0;
	}
	if (!(plan & KVT_HINT_READ) || (ph->tries && !(plan & KVT_HINT_HOLD))) {
		if (ph->held)
			kvt_pf_hint_unhold(pool, ph);
		spin_unlock(&pool->lock);
		ph->state = KVT_PFH_SKIPPED;
		atomic64_inc(&kvt_pf_stats.skipped);
		trace_kvtier_hint_skipped(pool, g->id, ph->idx, ph->prob);
		return 0;
	}
	ph->tries++;
	if (!ph->held && plan & KVT_HINT_HOLD)
		kvt_pf_ahead(pool, ph);
	trace_kvtier_prefetch_issue(pool, ph->addr);
	ret = kvt_res_load(pool, ph->addr);	/* drops pool->lock */
	if (ret) {
		ph->state = ret == -ENOSPC ? KVT_PFH_NOSPC : KVT_PFH_FAILED;
		return 0;
	}
	ph->state = KVT_PFH_WAIT;
	ph->loaded = 1;
	ph->start_ns = r->now;
	atomic64_inc(&kvt_pf_stats.issued);
	atomic64_add(pool->block_size, &kvt_pf_stats.bytes);
	return 1;
}

static int kvt_pf_group_status(struct kvt_pf_group *g, bool *settled)
{
	int status = 0;
	u32 i;

	*settled = true;
	for (i = 0; i < g->count; i++) {
		u8 st = g->hints[i].state;

		if (st == KVT_PFH_NEW || st == KVT_PFH_WAIT)
			*settled = false;
		else if (st == KVT_PFH_FAILED)
			status = -EIO;
		else if (st == KVT_PFH_NOSPC && !status)
			status = -ENOSPC;
	}
	return status;
}

static bool kvt_pf_expired(struct kvt_pf_group *g, u64 now)
{
	return g->flags & KVTIER_PREFETCH_CANCEL_LATE && g->due &&
	       now >= g->due;
}

static void kvt_pf_wake_at(u64 *wake, u64 t)
{
	if (t < *wake)
		*wake = t;
}

/* Move a waiting group on; its reads in flight count in @r->inflight. */
static void kvt_pf_eval(struct kvt_pf_group *g, struct kvt_pf_run *r,
			u64 *wake)
{
	u64 now = r->now;
	bool settled;
	int status;
	u32 i;

	if (kvt_pf_expired(g, now)) {
		kvt_pf_end(g, -ETIME, now);
		return;
	}
	for (i = 0; i < g->count; i++)
		r->inflight += kvt_pf_step(g, &g->hints[i], r);
	status = kvt_pf_group_status(g, &settled);
	if (settled) {
		kvt_pf_end(g, status, now);
		return;
	}
	if (g->flags & KVTIER_PREFETCH_CANCEL_LATE && g->due)
		kvt_pf_wake_at(wake, g->due);
	/* Reads ending kick the engine; an eviction under way does not. */
	kvt_pf_wake_at(wake, now + KVT_PF_SCAN_NS);
}

static void kvt_pf_run(struct work_struct *work)
{
	static u64 last_scan;
	u64 now, wake = U64_MAX, hold_ns;
	struct kvt_pf_group *g, *tmp;
	struct kvt_pf_run r = { };
	struct rb_node *rb;
	bool scan;

	mutex_lock(&kvt_pf_mutex);
	now = ktime_get_ns();
	r.now = now;
	hold_ns = (u64)READ_ONCE(kvt_pf_hold_ms) * NSEC_PER_MSEC;
	r.qd = clamp(READ_ONCE(kvt_pf_qd), 1U, 1024U);

	/* New groups into the queue. */
	spin_lock(&kvt_pf_lock);
	list_for_each_entry_safe(g, tmp, &kvt_pf_incoming, node) {
		list_del(&g->node);
		kvt_pf_enqueue(g);
	}
	spin_unlock(&kvt_pf_lock);

	/*
	 * Groups waiting for reads; ended groups whose holds expired or were
	 * all used (looked at every KVT_PF_SCAN_NS at most: reads end often).
	 */
	scan = now - last_scan >= KVT_PF_SCAN_NS;
	if (scan)
		last_scan = now;
	list_for_each_entry_safe(g, tmp, &kvt_pf_active, node) {
		/* A probable block unused by its deadline: the guess is over. */
		if (g->prob_held && g->due) {
			if (now < g->due) {
				kvt_pf_wake_at(&wake, g->due);
			} else {
				kvt_pf_release_holds(g, true);
				g->prob_held = 0;
			}
		}
		if (g->state == KVT_PFG_WAITING)
			kvt_pf_eval(g, &r, &wake);
		else if (now >= g->end_ns + hold_ns ||
			 (scan && !kvt_pf_holding(g)))
			kvt_pf_free(g);
		else
			kvt_pf_wake_at(&wake, min(g->end_ns + hold_ns,
						  now + KVT_PF_SCAN_NS));
	}

	/*
	 * Queued groups: past a cancelling deadline they end now; the hints
	 * of those already started move on (holds taken as blocks arrive,
	 * their reads counted against the queue depth).
	 */
	for (rb = rb_first_cached(&kvt_pf_queue); rb; ) {
		u32 i;

		g = rb_entry(rb, struct kvt_pf_group, rb);
		rb = rb_next(rb);
		if (kvt_pf_expired(g, now)) {
			kvt_pf_end(g, -ETIME, now);
			continue;
		}
		for (i = 0; i < g->next; i++)
			r.inflight += kvt_pf_step(g, &g->hints[i], &r);
		if (g->flags & KVTIER_PREFETCH_CANCEL_LATE && g->due)
			kvt_pf_wake_at(&wake, g->due);
	}

	/*
	 * Start reads, earliest deadline first; background groups last, with
	 * half the depth at most, the rest kept for groups to come.
	 */
	while (r.inflight < r.qd && (rb = rb_first_cached(&kvt_pf_queue))) {
		u32 limit;

		g = rb_entry(rb, struct kvt_pf_group, rb);
		limit = kvt_pf_background(g) ? max(r.qd / 2, 1U) : r.qd;
		while (g->next < g->count && r.inflight < limit)
			r.inflight += kvt_pf_step(g, &g->hints[g->next++], &r);
		if (g->next < g->count)
			break;
		spin_lock(&kvt_pf_lock);
		rb_erase_cached(&g->rb, &kvt_pf_queue);
		list_add_tail(&g->node, &kvt_pf_active);
		g->state = KVT_PFG_WAITING;
		spin_unlock(&kvt_pf_lock);
		kvt_pf_eval(g, &r, &wake);
	}
	mutex_unlock(&kvt_pf_mutex);

	/* Reads ending kick the engine; deadlines and expiries need a timer. */
	if (wake != U64_MAX) {
		now = ktime_get_ns();
		queue_delayed_work(system_unbound_wq, &kvt_pf_work,
				   wake > now ? nsecs_to_jiffies(wake - now) + 1 :
						0);
	}
}

/* ---- commands ----------------------------------------------------------- */

static int kvt_pf_check(struct kvtier_prefetch *pf)
{
	if (!pf->count || pf->count > KVTIER_BATCH_MAX ||
	    pf->flags & ~KVTIER_PREFETCH_FLAGS || !pf->group ||
	    pf->priority > KVTIER_PRIO_MAX ||
	    memchr_inv(pf->reserved, 0, sizeof(pf->reserved)))
		return -EINVAL;
	if (pf->tier != KVTIER_TIER_DRAM && pf->tier != KVTIER_TIER_HBM)
		return -EINVAL;
	if (pf->flags & KVTIER_PREFETCH_CANCEL_LATE && pf->deadline_ns &&
	    pf->deadline_ns <= ktime_get_ns())
		return -ETIME;
	return 0;
}

/* Resolve the hints; fill their out fields and the group's. */
static u32 kvt_pf_resolve(struct kvt_pool *pool, struct kvtier_prefetch *pf,
			  struct kvtier_hint *uh, struct kvt_pf_group *g)
{
	bool by_addr = pf->flags & KVTIER_PREFETCH_ADDR;
	u32 i, addr, slot, dropped = 0;

	spin_lock(&pool->lock);
	for (i = 0; i < pf->count; i++) {
		struct kvt_pf_hint *ph = &g->hints[i];
		struct kvtier_hint *h = &uh[i];
		struct kvt_block *blk = NULL;

		if (by_addr) {
			addr = h->addr < pool->capacity ? h->addr : KVT_NIL;
			if (addr != KVT_NIL &&
			    pool->blocks[addr].state != KVT_BLK_READY)
				addr = KVT_NIL;
		} else {
			addr = kvt_block_find(pool, h->key);
		}
		ph->addr = addr;
		ph->idx = i;
		ph->prob = h->flags & KVTIER_HINT_PROB ? h->prob : KVT_PROB_ONE;
		if (addr == KVT_NIL) {
			h->status = -ENOENT;
			h->addr = KVTIER_ADDR_NONE;
			h->tier = KVTIER_TIER_NONE;
			ph->state = KVT_PFH_DROPPED;
			dropped++;
			continue;
		}
		blk = &pool->blocks[addr];
		ph->key[0] = blk->key[0];
		ph->key[1] = blk->key[1];
		h->key[0] = blk->key[0];
		h->key[1] = blk->key[1];
		h->status = 0;
		h->addr = addr;
		h->tier = kvt_res_tier(pool, addr, &slot);
		if (h->tier == pf->tier)
			pf->resident++;
		else
			pf->queued++;
	}
	spin_unlock(&pool->lock);
	return dropped;
}

/* Sure hints first, in the caller's order, then the likeliest. */
static int kvt_pf_hint_cmp(const void *a, const void *b)
{
	const struct kvt_pf_hint *x = a, *y = b;

	if (x->prob != y->prob)
		return x->prob > y->prob ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The hints' in fields: -EINVAL, -EOPNOTSUPP, or 0 and whether any is probable. */
static int kvt_pf_check_hints(struct kvt_handle *h,
			      const struct kvtier_hint *uh, u32 count,
			      bool *probable)
{
	bool flagged = false;
	u32 i;

	*probable = false;
	for (i = 0; i < count; i++) {
		const struct kvtier_hint *x = &uh[i];

		if (x->flags & ~KVTIER_HINT_FLAGS ||
		    (!(x->flags & KVTIER_HINT_PROB) && x->prob) ||
		    x->prob > KVTIER_PROB_ONE ||
		    memchr_inv(x->reserved, 0, sizeof(x->reserved)))
			return -EINVAL;
		flagged |= x->flags & KVTIER_HINT_PROB;
		if (x->flags & KVTIER_HINT_PROB && x->prob < KVTIER_PROB_ONE)
			*probable = true;
	}
	return flagged && !(h->features & KVTIER_F_HINT_PROB) ? -EOPNOTSUPP : 0;
}

/**
 * kvt_prefetch_cmd() - KVTIER_IOC_PREFETCH
 * @h: the pool file's handle
 * @pf: the command, copied in; its out fields are filled
 *
 * Never sleeps for I/O: the engine does the work.
 *
 * Return: 0 or -errno (see struct kvtier_prefetch).
 */
int kvt_prefetch_cmd(struct kvt_handle *h, struct kvtier_prefetch *pf)
{
	struct kvt_pf_fd *fd = &h->pf;
	struct kvtier_completion *ring = NULL;
	struct kvtier_hint *uh;
	struct kvt_pf_group *g, *o;
	u64 now = ktime_get_ns();
	u32 i, dropped;
	bool probable;
	size_t len;
	int ret;

	BUILD_BUG_ON(KVT_PROB_ONE != KVTIER_PROB_ONE);
	BUILD_BUG_ON(KVTIER_BATCH_MAX > U16_MAX);
	ret = kvt_pf_check(pf);
	if (ret)
		return ret;
	if (pf->tier == KVTIER_TIER_HBM && (!(h->features & KVTIER_F_HBM) ||
					    !kvt_res_live(h->pool, KVTIER_TIER_HBM)))
		return -EOPNOTSUPP;
	len = array_size(pf->count, sizeof(*uh));
	uh = vmemdup_user(u64_to_user_ptr(pf->hints), len);
	if (IS_ERR(uh))
		return PTR_ERR(uh);
	ret = kvt_pf_check_hints(h, uh, pf->count, &probable);
	if (ret)
		goto out_free_hints;
	ret = -ENOMEM;
	g = kvzalloc(struct_size(g, hints, pf->count), GFP_KERNEL_ACCOUNT);
	if (!g)
		goto out_free_hints;
	if (!READ_ONCE(fd->ring)) {
		ring = kvcalloc(KVTIER_PREFETCH_GROUPS_MAX, sizeof(*ring),
				GFP_KERNEL_ACCOUNT);
		if (!ring)
			goto out_free_group;
	}
	g->fd = fd;
	g->pool = h->pool;
	g->id = pf->group;
	g->cookie = pf->cookie;
	g->prio = pf->priority;
	g->flags = pf->flags;
	g->tier = pf->tier;
	g->count = pf->count;
	g->due = pf->deadline_ns;
	/* A deadline past orders as now: nobody jumps the queue with one. */
	g->deadline = max(pf->deadline_ns, now);

	/*
	 * Claim the id and a place first (the group on no engine list yet),
	 * so that a PREFETCH that fails writes nothing back.
	 */
	spin_lock(&kvt_pf_lock);
	if (!fd->ring) {
		fd->ring = ring;
		ring = NULL;
	}
	/* Each group not ended posts one record: the ring never overflows. */
	ret = -EAGAIN;
	if (fd->nr_groups + fd->rlen >= KVTIER_PREFETCH_GROUPS_MAX)
		goto out_unlock;
	ret = -EEXIST;
	list_for_each_entry(o, &fd->groups, fd_node)
		if (o->id == g->id)
			goto out_unlock;
	g->state = KVT_PFG_SETUP;
	list_add_tail(&g->fd_node, &fd->groups);
	fd->nr_groups++;
	spin_unlock(&kvt_pf_lock);

	pf->queued = 0;
	pf->resident = 0;
	dropped = kvt_pf_resolve(h->pool, pf, uh, g);
	if (copy_to_user(u64_to_user_ptr(pf->hints), uh, len)) {
		spin_lock(&kvt_pf_lock);
		list_del(&g->fd_node);
		fd->nr_groups--;
		spin_unlock(&kvt_pf_lock);
		ret = -EFAULT;
		goto out_free_ring;
	}

	/* The engine's order; the caller's was written back above. */
	if (probable)
		sort(g->hints, g->count, sizeof(g->hints[0]), kvt_pf_hint_cmp,
		     NULL);
	atomic64_add(pf->count, &kvt_pf_stats.hints);
	atomic64_add(dropped, &kvt_pf_stats.dropped);
	trace_kvtier_hint_queued(h->pool, g->id, g->count, g->due);
	for (i = 0; i < g->count; i++)
		if (g->hints[i].state == KVT_PFH_DROPPED)
			trace_kvtier_hint_dropped(h->pool, g->id, i);
	/*
	 * Last use of @g here: once INCOMING, the engine may end the group
	 * and free it before this returns.
	 */
	spin_lock(&kvt_pf_lock);
	g->seq = ++kvt_pf_seq;
	list_add_tail(&g->node, &kvt_pf_incoming);
	g->state = KVT_PFG_INCOMING;
	atomic_inc(&kvt_pf_live);
	spin_unlock(&kvt_pf_lock);
	kvt_pf_kick_now();
	kvfree(uh);
	return 0;

out_unlock:
	spin_unlock(&kvt_pf_lock);
out_free_ring:
	kvfree(ring);
out_free_group:
	kvfree(g);
out_free_hints:
	kvfree(uh);
	return ret;
}

/**
 * kvt_prefetch_cancel() - KVTIER_IOC_CANCEL
 * @h: the pool file's handle
 * @c: the command, copied in; @c->cancelled is filled
 *
 * Return: 0; -EINVAL; -ENOENT when no live group has the id.
 */
int kvt_prefetch_cancel(struct kvt_handle *h, struct kvtier_cancel *c)
{
	struct kvt_pf_group *g, *tmp;
	bool all = c->flags & KVTIER_CANCEL_ALL;
	u64 now = ktime_get_ns();
	bool found = false;
	LIST_HEAD(doomed);

	if (c->flags & ~KVTIER_CANCEL_ALL || c->__pad || c->__pad2 ||
	    memchr_inv(c->reserved, 0, sizeof(c->reserved)) ||
	    all == !!c->group)
		return -EINVAL;
	c->cancelled = 0;

	mutex_lock(&kvt_pf_mutex);
	/* The engine is out; take in new groups so every one is on a list. */
	spin_lock(&kvt_pf_lock);
	list_for_each_entry_safe(g, tmp, &kvt_pf_incoming, node) {
		list_del(&g->node);
		kvt_pf_enqueue(g);
	}
	/*
	 * The fd's list is walked under kvt_pf_lock: a PREFETCH of the same
	 * fd adds its group to it, and takes it off and frees it when its
	 * hints cannot be written back, holding only that lock. The groups
	 * to cancel move to a list of this call's own.
	 */
	list_for_each_entry_safe(g, tmp, &h->pf.groups, fd_node) {
		/* Still being filled in by a PREFETCH: not live yet. */
		if (g->state == KVT_PFG_SETUP ||
		    (!all && g->id != c->group))
			continue;
		list_move_tail(&g->fd_node, &doomed);
	}
	spin_unlock(&kvt_pf_lock);
	list_for_each_entry_safe(g, tmp, &doomed, fd_node) {
		found = true;
		if (g->state != KVT_PFG_ENDED) {
			kvt_pf_post(g, -ECANCELED, now);
			c->cancelled++;
		}
		kvt_pf_free(g);
	}
	mutex_unlock(&kvt_pf_mutex);
	return found || all ? 0 : -ENOENT;
}

/**
 * kvt_prefetch_eventfd() - KVTIER_IOC_EVENTFD
 * @h: the pool file's handle
 * @e: the command
 *
 * Return: 0; -EINVAL; -EBADF or -EINVAL (not an eventfd) from the fd.
 */
int kvt_prefetch_eventfd(struct kvt_handle *h, struct kvtier_eventfd *e)
{
	struct eventfd_ctx *ctx = NULL, *old;

	if (e->flags || memchr_inv(e->reserved, 0, sizeof(e->reserved)) ||
	    e->fd < -1)
		return -EINVAL;
	if (e->fd >= 0) {
		ctx = eventfd_ctx_fdget(e->fd);
		if (IS_ERR(ctx))
			return PTR_ERR(ctx);
	}
	spin_lock(&kvt_pf_lock);
	old = h->pf.efd;
	h->pf.efd = ctx;
	spin_unlock(&kvt_pf_lock);
	if (old)
		eventfd_ctx_put(old);
	return 0;
}

/**
 * kvt_prefetch_read() - read(2) of a pool file: completion records
 * @h: the pool file's handle
 * @buf: user buffer
 * @len: its size
 * @nonblock: O_NONBLOCK
 *
 * Return: bytes read (whole records); -EINVAL if @len holds none; -EAGAIN;
 * -ERESTARTSYS; -EFAULT.
 */
ssize_t kvt_prefetch_read(struct kvt_handle *h, char __user *buf, size_t len,
			  bool nonblock)
{
	struct kvtier_completion recs[8];	/* 384 bytes of stack */
	struct kvt_pf_fd *fd = &h->pf;
	size_t want = min_t(size_t, len / sizeof(recs[0]), ARRAY_SIZE(recs));
	size_t n = 0;
	int ret;

	if (!want)
		return -EINVAL;
	for (;;) {
		spin_lock(&kvt_pf_lock);
		while (n < want && fd->rlen) {
			recs[n++] = fd->ring[fd->rhead];
			fd->rhead = (fd->rhead + 1) % KVTIER_PREFETCH_GROUPS_MAX;
			fd->rlen--;
		}
		spin_unlock(&kvt_pf_lock);
		if (n)
			break;
		if (nonblock)
			return -EAGAIN;
		ret = wait_event_interruptible(fd->wq, READ_ONCE(fd->rlen));
		if (ret)
			return ret;
	}
	if (copy_to_user(buf, recs, n * sizeof(recs[0])))
		return -EFAULT;
	return n * sizeof(recs[0]);
}

/**
 * kvt_prefetch_poll() - poll(2) of a pool file
 * @h: the pool file's handle
 * @file: the file
 * @wait: the poll table
 *
 * Return: EPOLLIN | EPOLLRDNORM while completions are unread.
 */
__poll_t kvt_prefetch_poll(struct kvt_handle *h, struct file *file,
			   poll_table *wait)
{
	poll_wait(file, &h->pf.wq, wait);
	return READ_ONCE(h->pf.rlen) ? EPOLLIN | EPOLLRDNORM : 0;
}

/**
 * kvt_prefetch_init_fd() - set up an open pool file's prefetch state
 * @h: the new handle
 */
void kvt_prefetch_init_fd(struct kvt_handle *h)
{
	INIT_LIST_HEAD(&h->pf.groups);
	init_waitqueue_head(&h->pf.wq);
}

/**
 * kvt_prefetch_release_fd() - a pool file closes: cancel its groups
 * @h: the handle
 *
 * Reads under way go on (their blocks arrive unprotected); nothing is
 * posted, there is nobody to read it.
 */
void kvt_prefetch_release_fd(struct kvt_handle *h)
{
	struct kvt_pf_group *g, *tmp;

	mutex_lock(&kvt_pf_mutex);
	spin_lock(&kvt_pf_lock);
	list_for_each_entry_safe(g, tmp, &kvt_pf_incoming, node) {
		list_del(&g->node);
		kvt_pf_enqueue(g);
	}
	spin_unlock(&kvt_pf_lock);
	list_for_each_entry_safe(g, tmp, &h->pf.groups, fd_node) {
		if (g->state != KVT_PFG_ENDED)
			atomic64_inc(&kvt_pf_stats.cancelled);
		kvt_pf_free(g);
	}
	mutex_unlock(&kvt_pf_mutex);
	if (h->pf.efd)
		eventfd_ctx_put(h->pf.efd);
	kvfree(h->pf.ring);
}

/**
 * kvt_prefetch_show() - the engine's counters, for sysfs
 * @buf: the sysfs page
 *
 * Return: bytes written.
 */
ssize_t kvt_prefetch_show(char *buf)
{
	return sysfs_emit(buf,
			  "hints %lld\nmerged %lld\nissued %lld\ndropped %lld\nready_blocks %lld\nbytes %lld\ngroups %lld\non_time %lld\nlate %lld\ncancelled %lld\nexpired %lld\nfailed %lld\nwasted %lld\nunprotected %lld\nlive %d\nskipped %lld\n",
			  atomic64_read(&kvt_pf_stats.hints),
			  atomic64_read(&kvt_pf_stats.merged),
			  atomic64_read(&kvt_pf_stats.issued),
			  atomic64_read(&kvt_pf_stats.dropped),
			  atomic64_read(&kvt_pf_stats.ready_blocks),
			  atomic64_read(&kvt_pf_stats.bytes),
			  atomic64_read(&kvt_pf_stats.groups),
			  atomic64_read(&kvt_pf_stats.on_time),
			  atomic64_read(&kvt_pf_stats.late),
			  atomic64_read(&kvt_pf_stats.cancelled),
			  atomic64_read(&kvt_pf_stats.expired),
			  atomic64_read(&kvt_pf_stats.failed),
			  atomic64_read(&kvt_pf_stats.wasted),
			  atomic64_read(&kvt_pf_stats.unprotected),
			  atomic_read(&kvt_pf_live),
			  atomic64_read(&kvt_pf_stats.skipped));
}

/**
 * kvt_prefetch_exit() - module unload: the engine is idle (no fd is open)
 */
void kvt_prefetch_exit(void)
{
	cancel_delayed_work_sync(&kvt_pf_work);
}
