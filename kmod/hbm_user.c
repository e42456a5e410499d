// SPDX-License-Identifier: GPL-2.0
/*
 * HBM backend "user": the runtime's own device arena, moved by its mover.
 *
 * KVTIER_IOC_HBM_ATTACH with KVTIER_HBM_USER returns a mover fd. The kernel
 * posts copies there (read(2): struct kvtier_move); the mover does them
 * with whatever copies device memory (cudaMemcpy, or memcpy for a host
 * arena) and reports each (write(2): struct kvtier_moved). A copy to the
 * device reads the block through the pool's mmap; a copy from the device
 * hands the block's bytes back in the report, which the kernel copies into
 * the DRAM block.
 *
 * A mover that goes away (its fd closed, its process killed) detaches the
 * arena: copies outstanding fail, adopted blocks not yet written down are
 * lost, every other block keeps its DRAM or NVMe copy. A copy not reported
 * within hbm_timeout_ms counts as a timeout and detaches the arena too: a
 * mover that does not answer is taken for dead, so nothing waits forever.
 * Once detached, read(2) returns 0 (end of file) and the mover should exit.
 *
 * Locking: mv->lock protects the lists and @gone; never held with
 * pool->lock.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/moduleparam.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include "hbm.h"

unsigned int kvt_hbm_timeout_ms = 5000;
module_param_named(hbm_timeout_ms, kvt_hbm_timeout_ms, uint, 0644);
MODULE_PARM_DESC(hbm_timeout_ms,
		 "How long a mover may take to report a copy before its arena is detached, in ms. Default: 5000");

struct kvt_mover {
	struct kvt_hbm *hbm;
	spinlock_t lock;		/* the lists, @next_seq and @gone */
	struct list_head posted;	/* not read by the mover yet */
	struct list_head taken;		/* read, not reported */
	u64 next_seq;
	bool gone;			/* detached: nothing more is posted */
	bool timed_out;			/* the watchdog detaches: -ETIMEDOUT */
	wait_queue_head_t wq;
	struct delayed_work watchdog;
};

static int kvt_mover_init(struct kvt_hbm *hbm)
{
	struct kvt_mover *mv = kzalloc(sizeof(*mv), GFP_KERNEL);

	if (!mv)
		return -ENOMEM;
	mv->hbm = hbm;
	spin_lock_init(&mv->lock);
	INIT_LIST_HEAD(&mv->posted);
	INIT_LIST_HEAD(&mv->taken);
	init_waitqueue_head(&mv->wq);
	hbm->priv = mv;
	return 0;
}

static void kvt_mover_fini(struct kvt_hbm *hbm)
{
	kfree(hbm->priv);
	hbm->priv = NULL;
}

static int kvt_mover_copy(struct kvt_hbm *hbm, struct kvt_hbm_copy *c)
{
	struct kvt_mover *mv = hbm->priv;

	spin_lock(&mv->lock);
	if (mv->gone) {
		spin_unlock(&mv->lock);
		return -EPIPE;
	}
	c->seq = ++mv->next_seq;
	list_add_tail(&c->node, &mv->posted);
	spin_unlock(&mv->lock);
	wake_up_interruptible_poll(&mv->wq, EPOLLIN | EPOLLRDNORM);
	return 0;
}

/* Fail every copy not reported, with @status; nothing more is posted. */
static void kvt_mover_fail_all(struct kvt_mover *mv, int status)
{
	struct kvt_hbm_copy *c, *tmp;
	LIST_HEAD(failed);

	spin_lock(&mv->lock);
	mv->gone = true;
	list_splice_init(&mv->posted, &failed);
	list_splice_init(&mv->taken, &failed);
	spin_unlock(&mv->lock);
	wake_up_interruptible_all(&mv->wq);
	list_for_each_entry_safe(c, tmp, &failed, node) {
		list_del_init(&c->node);
		kvt_hbm_copy_done(c, status);
	}
}

static void kvt_mover_detach(struct kvt_hbm *hbm)
{
	struct kvt_mover *mv = hbm->priv;

	kvt_mover_fail_all(mv, READ_ONCE(mv->timed_out) ? -ETIMEDOUT : -EPIPE);
}

/* hbm_timeout_ms in jiffies; below 100 ms a mover could not answer at all. */
static unsigned long kvt_mover_limit(void)
{
	return msecs_to_jiffies(max(100U, READ_ONCE(kvt_hbm_timeout_ms)));
}

/*
 * How often the watchdog looks: a quarter of the limit, and at least every
 * second, so a new value takes effect within one.
 */
static unsigned long kvt_mover_period(void)
{
	return clamp(kvt_mover_limit() / 4, 1UL, (unsigned long)HZ);
}

/* Copies overdue: the mover is taken for dead, the arena detached. */
static void kvt_mover_watchdog(struct work_struct *work)
{
	struct kvt_mover *mv = container_of(to_delayed_work(work),
					    struct kvt_mover, watchdog);
	unsigned long limit = kvt_mover_limit();
	struct kvt_hbm *hbm = mv->hbm;
	struct kvt_hbm_copy *c;
	bool late = false;

	spin_lock(&mv->lock);
	list_for_each_entry(c, &mv->posted, node)
		late |= time_after(jiffies, c->started + limit);
	list_for_each_entry(c, &mv->taken, node)
		late |= time_after(jiffies, c->started + limit);
	spin_unlock(&mv->lock);
	if (late) {
		spin_lock(&hbm->pool->lock);
		hbm->stats.timeouts++;
		spin_unlock(&hbm->pool->lock);
		pr_warn("pool %s: the HBM mover did not answer in %u ms: arena detached\n",
			hbm->pool->name, kvt_hbm_timeout_ms);
		/*
		 * The arena is detached before its copies fail (with
		 * -ETIMEDOUT, see kvt_mover_detach()): a reader woken by the
		 * failure finds it detached.
		 */
		WRITE_ONCE(mv->timed_out, true);
		kvt_hbm_detach(hbm);
		return;
	}
	if (!READ_ONCE(mv->gone))
		schedule_delayed_work(&mv->watchdog, kvt_mover_period());
}

static ssize_t kvt_mover_read(struct file *file, char __user *buf, size_t len,
			      loff_t *ppos)
{
	struct kvt_mover *mv = file->private_data;
	struct kvt_hbm *hbm = mv->hbm;
	struct kvtier_move cmds[16];
	size_t want = min_t(size_t, len / sizeof(cmds[0]), ARRAY_SIZE(cmds));
	struct kvt_hbm_copy *c, *tmp;
	size_t n = 0;
	int ret;

	if (!want)
		return -EINVAL;
	for (;;) {
		spin_lock(&mv->lock);
		list_for_each_entry_safe(c, tmp, &mv->posted, node) {
			if (n == want)
				break;
			cmds[n].seq = c->seq;
			cmds[n].op = c->to_dev ? KVTIER_MOVE_TO_DEV :
						 KVTIER_MOVE_FROM_DEV;
			cmds[n].slot = c->slot;
			cmds[n].addr = c->addr;
			cmds[n].bytes = hbm->pool->block_size;
			cmds[n].flags = 0;
			memset(cmds[n].reserved, 0, sizeof(cmds[n].reserved));
			list_move_tail(&c->node, &mv->taken);
			n++;
		}
		if (n || mv->gone) {
			spin_unlock(&mv->lock);
			break;
		}
		spin_unlock(&mv->lock);
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		ret = wait_event_interruptible(mv->wq,
					       !list_empty(&mv->posted) ||
					       READ_ONCE(mv->gone));
		if (ret)
			return ret;
	}
	/* Detached: end of file. */
	if (!n)
		return 0;
	if (copy_to_user(buf, cmds, n * sizeof(cmds[0])))
		return -EFAULT;
	return n * sizeof(cmds[0]);
}

/* The bytes of a FROM_DEV copy, from the mover's buffer into DRAM. */
static int kvt_mover_fill(struct kvt_hbm *hbm, struct kvt_hbm_copy *c,
			  const void __user *buf)
{
	u32 i;

	for (i = 0; i < hbm->pool->pages_per_block; i++)
		if (copy_from_user(kvt_hbm_block_page(hbm, c->addr, i),
				   buf + (size_t)i * PAGE_SIZE, PAGE_SIZE))
			return -EFAULT;
	return 0;
}

static ssize_t kvt_mover_write(struct file *file, const char __user *buf,
			       size_t len, loff_t *ppos)
{
	struct kvt_mover *mv = file->private_data;
	size_t n = len / sizeof(struct kvtier_moved), i;
	struct kvt_hbm_copy *c, *found;
	struct kvtier_moved r;
	int status;

	if (!n)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (copy_from_user(&r, buf + i * sizeof(r), sizeof(r)))
			return i ? i * sizeof(r) : -EFAULT;
		if (r.__pad || r.status > 0 || r.status < -MAX_ERRNO)
			return i ? i * sizeof(r) : -EINVAL;
		found = NULL;
		spin_lock(&mv->lock);
		list_for_each_entry(c, &mv->taken, node) {
			if (c->seq == r.seq) {
				found = c;
				break;
			}
		}
		if (found && (r.status || found->to_dev ? !!r.buf : !r.buf))
			found = NULL;
		if (found)
			list_del_init(&found->node);
		spin_unlock(&mv->lock);
		if (!found)
			return i ? i * sizeof(r) : -EINVAL;
		status = r.status;
		if (!status && !found->to_dev)
			status = kvt_mover_fill(mv->hbm, found,
						u64_to_user_ptr(r.buf));
		kvt_hbm_copy_done(found, status);
		if (status == -EFAULT)
			return i ? i * sizeof(r) : -EFAULT;
	}
	return n * sizeof(r);
}

static __poll_t kvt_mover_poll(struct file *file, poll_table *wait)
{
	struct kvt_mover *mv = file->private_data;
	__poll_t mask = EPOLLOUT | EPOLLWRNORM;

	poll_wait(file, &mv->wq, wait);
	spin_lock(&mv->lock);
	if (!list_empty(&mv->posted))
		mask |= EPOLLIN | EPOLLRDNORM;
	if (mv->gone)
		mask |= EPOLLHUP;
	spin_unlock(&mv->lock);
	return mask;
}

static int kvt_mover_release(struct inode *inode, struct file *file)
{
	struct kvt_mover *mv = file->private_data;
	struct kvt_hbm *hbm = mv->hbm;
	struct kvt_pool *pool = hbm->pool;

	kvt_hbm_detach(hbm);
	cancel_delayed_work_sync(&mv->watchdog);
	spin_lock(&pool->lock);
	hbm->fd_open = false;
	spin_unlock(&pool->lock);
	kvt_pool_put(pool);
	return 0;
}

static const struct file_operations kvt_mover_fops = {
	.owner		= THIS_MODULE,
	.read		= kvt_mover_read,
	.write		= kvt_mover_write,
	.poll		= kvt_mover_poll,
	.release	= kvt_mover_release,
	.llseek		= noop_llseek,
};

/**
 * kvt_hbm_user_fd() - the mover fd of a user arena
 * @hbm: the tier, just attached
 *
 * The fd holds a reference on the pool; closing it detaches the arena.
 *
 * Return: the fd (O_CLOEXEC) or -errno.
 */
static int kvt_hbm_user_fd(struct kvt_hbm *hbm)
{
	struct kvt_mover *mv = hbm->priv;
	int fd;

	kref_get(&hbm->pool->ref);
	spin_lock(&hbm->pool->lock);
	hbm->fd_open = true;
	spin_unlock(&hbm->pool->lock);
	/*
	 * Armed before the fd exists: once it does, another thread may
	 * close it, and the release's cancel must find the watchdog armed.
	 */
	INIT_DELAYED_WORK(&mv->watchdog, kvt_mover_watchdog);
	schedule_delayed_work(&mv->watchdog, kvt_mover_period());
	fd = anon_inode_getfd("kvtier-mover", &kvt_mover_fops, mv,
			      O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		cancel_delayed_work_sync(&mv->watchdog);
		spin_lock(&hbm->pool->lock);
		hbm->fd_open = false;
		spin_unlock(&hbm->pool->lock);
		kvt_pool_put(hbm->pool);
		return fd;
	}
	return fd;
}

const struct kvt_hbm_ops kvt_hbm_user_ops = {
	.name	= "user",
	.init	= kvt_mover_init,
	.fini	= kvt_mover_fini,
	.copy	= kvt_mover_copy,
	.detach	= kvt_mover_detach,
	.fd	= kvt_hbm_user_fd,
};
