// SPDX-License-Identifier: GPL-2.0
/*
 * The event log of a pool: what happened to its keys (stored, moved
 * between tiers, removed, the pool cleared), in order, for the routers
 * that follow what a node holds (KVTIER_F_EVENTS), and the events fds
 * that read it.
 *
 * A log belongs to one pool and is told under that pool's lock, so its
 * sequence numbers follow the order of the pool's state changes, and a
 * census taken under the same lock (census.c) names the last event it
 * reflects. Events go into one ring a pool, shared by all its readers: a
 * writer does the same work for one reader as for a thousand and never
 * waits for any. Readers take no lock the writers take: they copy from
 * the ring as a seqcount reader does, then check the writers did not come
 * round meanwhile. Each reader keeps its own place (the next sequence
 * number it wants); one the ring has lapped reads a record saying how many
 * events it lost, then goes on from the oldest the ring holds. The first
 * reader brings the ring, which stays until the pool goes, so a reader
 * that comes back (a router restarted) can go on from where it was; until
 * then, an event only takes a number.
 *
 * A reader asleep waiting for an event is woken events_wake_ms after the
 * first event that finds it so, by a timer, for all the events of that
 * while: writers pay for a wake-up once in that while, not once an event.
 * The events are in the ring at once; only the wake-up waits.
 *
 * The base layer (Documentation/design.rst, "Layers"): it calls no other
 * file of the module. The log outlives its pool while readers hold it:
 * they read what was left, the CLEARED event the pool's end wrote, then
 * end of file.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/uio.h>
#include "kvt.h"

static unsigned int events_ring = 4096;
module_param(events_ring, uint, 0444);
MODULE_PARM_DESC(events_ring,
		 "Events each pool with readers keeps for them (a power of two, 64 to 1048576); a reader further behind loses the oldest. Default: 4096");

static unsigned int events_wake_ms = 10;
module_param(events_wake_ms, uint, 0644);
MODULE_PARM_DESC(events_wake_ms,
		 "How long after an event a reader asleep waiting for one is woken, in ms, so that it wakes once for many (0: at once; above 1000 taken as 1000). Default: 10");

#define KVT_EV_WAKE_MS_MAX	1000
#define KVT_EV_RING_MIN		64
#define KVT_EV_RING_MAX		BIT(20)

/* Records one read(2) gathers from the ring at a time (2 at least). */
#define KVT_EV_CHUNK		64

/**
 * struct kvt_evlog - a pool's event log
 * @ref: the pool's reference and each reader's
 * @lock: serializes writers, and readers coming and going
 * @seq: the last sequence number given (0: none); written under @lock,
 *	 published with a release after its slot is filled, read without it
 * @ring: the newest events, by seq & (@size - 1); NULL before a reader
 * @size: records @ring holds
 * @first: the oldest sequence number @ring holds
 *
 * @ring, @size and @first are set once, by the first reader, so a reader
 * reads them without the lock.
 * @readers: events fds open on the log
 * @dead: the pool is gone; @seq is its CLEARED event
 * @overflows: OVERFLOW records readers were given (no lock)
 * @lost: events they lost, all told (no lock)
 * @id: the log's identity (struct kvtier_events.log_id)
 * @wq: readers waiting for an event
 * @waker: wakes @wq events_wake_ms after the event that armed it
 * @armed: bit 0: @waker is pending (atomic: the timer takes no lock)
 */
struct kvt_evlog {
	struct kref ref;
	spinlock_t lock;		/* see above */
	u64 seq;
	struct kvtier_event *ring;
	u32 size;
	u64 first;
	u32 readers;
	bool dead;
	atomic64_t overflows;
	atomic64_t lost;
	u64 id;
	wait_queue_head_t wq;
	struct timer_list waker;
	unsigned long armed;
};

/**
 * struct kvt_ev_reader - one events fd
 * @log: the log it reads
 * @lock: one read at a time: protects @next
 * @next: the sequence number it returns next
 */
struct kvt_ev_reader {
	struct kvt_evlog *log;
	struct mutex lock;		/* @next */
	u64 next;
};

/**
 * kvt_ev_param_check() - check the events_ring module parameter at load
 *
 * Return: 0, or -EINVAL (with a message) when out of range.
 */
int kvt_ev_param_check(void)
{
	if (events_ring < KVT_EV_RING_MIN || events_ring > KVT_EV_RING_MAX ||
	    !is_power_of_2(events_ring)) {
		pr_err("events_ring=%u is not a power of two in %u..%lu\n",
		       events_ring, KVT_EV_RING_MIN, KVT_EV_RING_MAX);
		return -EINVAL;
	}
	return 0;
}

/* The waker: events came since it was armed. */
static void kvt_ev_wake(struct timer_list *t)
{
	struct kvt_evlog *log = from_timer(log, t, waker);

	clear_bit(0, &log->armed);
	wake_up_interruptible_poll(&log->wq, EPOLLIN | EPOLLRDNORM);
}

/**
 * kvt_ev_log_new() - a new, empty event log, for a new pool
 *
 * Return: the log, holding the pool's reference, or NULL.
 */
struct kvt_evlog *kvt_ev_log_new(void)
{
	struct kvt_evlog *log = kzalloc(sizeof(*log), GFP_KERNEL_ACCOUNT);

	if (!log)
		return NULL;
	kref_init(&log->ref);
	spin_lock_init(&log->lock);
	init_waitqueue_head(&log->wq);
	timer_setup(&log->waker, kvt_ev_wake, 0);
	log->id = get_random_u64();
	return log;
}

static void kvt_ev_log_release(struct kref *ref)
{
	struct kvt_evlog *log = container_of(ref, struct kvt_evlog, ref);

	del_timer_sync(&log->waker);
	kvfree(log->ring);
	kfree(log);
}

/* Put one event in the log; its lock held. */
static void kvt_ev_add(struct kvt_evlog *log, u16 type, const u64 *key,
		       u32 addr, u8 tier, u8 from, u16 reason)
{
	u64 seq = log->seq + 1;
	struct kvtier_event *ev;
	unsigned int wake_ms;

	lockdep_assert_held(&log->lock);
	if (log->ring) {
		ev = &log->ring[seq & (log->size - 1)];
		/* A reader that copies the slot meanwhile sees it is not whole. */
		WRITE_ONCE(ev->seq, 0);
		/* Before the fields change: pairs with kvt_ev_copy()'s rmb. */
		smp_wmb();
		ev->time_ns = ktime_get_ns();
		ev->key[0] = key ? key[0] : 0;
		ev->key[1] = key ? key[1] : 0;
		ev->addr = addr == KVT_NIL ? KVTIER_ADDR_NONE : addr;
		ev->type = type;
		ev->tier = tier;
		ev->from = from;
		ev->reason = reason;
		ev->flags = 0;
		ev->lost = 0;
		/* Whole now: pairs with kvt_ev_gather()'s acquire. */
		smp_store_release(&ev->seq, seq);
	}
	/* Readers take no lock: the slot is whole before its number shows. */
	smp_store_release(&log->seq, seq);
	if (!wq_has_sleeper(&log->wq))
		return;
	/*
	 * Sleepers are woken events_wake_ms later, once for all the events
	 * of that while: a writer pays for a wake-up once in that while, not
	 * once an event, and a reader reads them in one go.
	 */
	wake_ms = min_t(unsigned int, READ_ONCE(events_wake_ms),
			KVT_EV_WAKE_MS_MAX);
	if (!wake_ms)
		wake_up_interruptible_poll(&log->wq, EPOLLIN | EPOLLRDNORM);
	else if (!test_and_set_bit(0, &log->armed))
		mod_timer(&log->waker, jiffies + msecs_to_jiffies(wake_ms));
}

/**
 * kvt_ev_block() - tell a pool's log what happened to a block
 * @pool: the pool, its lock held
 * @addr: the block
 * @type: KVTIER_EVENT_STORED, _MOVED or _REMOVED
 * @tier: the tier it is in (or, REMOVED, was last in)
 * @from: MOVED: the tier it left
 * @reason: KVTIER_EVR_*
 *
 * The block's key is read from its slot: the caller holds the lock that
 * keeps it.
 */
void kvt_ev_block(struct kvt_pool *pool, u32 addr, u16 type, u8 tier, u8 from,
		  u16 reason)
{
	struct kvt_evlog *log = pool->events;

	lockdep_assert_held(&pool->lock);
	spin_lock(&log->lock);
	kvt_ev_add(log, type, pool->blocks[addr].key, addr, tier, from, reason);
	spin_unlock(&log->lock);
}

/**
 * kvt_ev_seq() - the last event a pool's log has numbered
 * @pool: the pool, its lock held (no event can be added meanwhile)
 *
 * Return: its sequence number, 0 before the first.
 */
u64 kvt_ev_seq(struct kvt_pool *pool)
{
	lockdep_assert_held(&pool->lock);
	return READ_ONCE(pool->events->seq);
}

/**
 * kvt_ev_log_id() - a pool's log's identity
 * @pool: the pool
 *
 * Return: struct kvtier_events.log_id.
 */
u64 kvt_ev_log_id(struct kvt_pool *pool)
{
	return pool->events->id;
}

/**
 * kvt_ev_show() - a pool's log in sysfs (pools/<name>/events)
 * @pool: the pool
 * @buf: the page to print into
 *
 * Return: the bytes printed.
 */
ssize_t kvt_ev_show(struct kvt_pool *pool, char *buf)
{
	struct kvt_evlog *log = pool->events;
	u64 seq, overflows, lost;
	u32 readers, size;

	spin_lock(&log->lock);
	seq = log->seq;
	readers = log->readers;
	size = log->size;
	spin_unlock(&log->lock);
	overflows = atomic64_read(&log->overflows);
	lost = atomic64_read(&log->lost);
	return sysfs_emit(buf, "%llu %u %u %llu %llu\n", seq, readers, size,
			  overflows, lost);
}

/**
 * kvt_ev_log_end() - a pool is gone: its last event, and its reference
 * @log: the log, or NULL (a pool that never had one)
 *
 * Readers still holding the log read the events left, this CLEARED one,
 * then end of file.
 */
void kvt_ev_log_end(struct kvt_evlog *log)
{
	if (!log)
		return;
	spin_lock(&log->lock);
	kvt_ev_add(log, KVTIER_EVENT_CLEARED, NULL, KVT_NIL, 0, 0,
		   KVTIER_EVR_DESTROY);
	/* After CLEARED: who sees it dead sees CLEARED too. */
	smp_store_release(&log->dead, true);
	spin_unlock(&log->lock);
	/* End of file for those waiting past it. */
	wake_up_interruptible_poll(&log->wq, EPOLLIN | EPOLLHUP);
	kref_put(&log->ref, kvt_ev_log_release);
}

/* ---- the events fd -------------------------------------------------------- */

/*
 * The oldest event the ring may still hold while @last is the last one
 * published.
 */
static u64 kvt_ev_oldest(struct kvt_evlog *log, u64 last)
{
	u64 oldest = last >= log->size ? last - log->size + 1 : 1;

	return max(oldest, log->first);
}

/* Whether a reader has something to read: an event, a loss, or the end. */
static bool kvt_ev_readable(struct kvt_evlog *log, u64 next)
{
	return READ_ONCE(log->seq) >= next || READ_ONCE(log->dead);
}

/*
 * Copy event @s from the ring into @out without a lock, as a seqcount
 * reader does: the slot's own number says whether it holds @s, whole,
 * before and after the copy.
 */
static bool kvt_ev_copy(struct kvt_evlog *log, u64 s, struct kvtier_event *out)
{
	struct kvtier_event *ev = &log->ring[s & (log->size - 1)];

	/* Pairs with kvt_ev_add()'s release of the slot's number. */
	if (smp_load_acquire(&ev->seq) != s)
		return false;
	/* A writer may come round meanwhile: checked below. */
	data_race(*out = *ev);
	/* The copy before the second look; pairs with kvt_ev_add()'s wmb. */
	smp_rmb();
	return READ_ONCE(ev->seq) == s;
}

/*
 * Gather up to @nr (at least 2) records for a reader at @next, without a
 * lock: an OVERFLOW record first if events it wants left the ring, then
 * the events from there on. *@next becomes the number it wants after them.
 */
static unsigned int kvt_ev_gather(struct kvt_evlog *log, u64 *next,
				  struct kvtier_event *out, unsigned int nr)
{
	u64 last, start, s, n = 0;

	/* Events up to @last are published: pairs with kvt_ev_add(). */
	last = smp_load_acquire(&log->seq);
	if (*next > last)
		return 0;
	start = max(*next, kvt_ev_oldest(log, last));
	for (s = start; s <= last && n < nr - 1; s++) {
		if (kvt_ev_copy(log, s, &out[1 + n])) {
			n++;
			continue;
		}
		/* Written over since: it and every event before it are gone. */
		start = s + 1;
		n = 0;
	}
	if (*next == start) {
		memmove(&out[0], &out[1], n * sizeof(*out));
		*next = start + n;
		return n;
	}
	memset(&out[0], 0, sizeof(out[0]));
	out[0].seq = *next;
	out[0].addr = KVTIER_ADDR_NONE;
	out[0].type = KVTIER_EVENT_OVERFLOW;
	out[0].time_ns = ktime_get_ns();
	out[0].lost = start - *next;
	*next = start + n;
	return n + 1;
}

static ssize_t kvt_ev_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct kvt_ev_reader *r = iocb->ki_filp->private_data;
	bool nonblock = (iocb->ki_flags & IOCB_NOWAIT) ||
			(iocb->ki_filp->f_flags & O_NONBLOCK);
	size_t want = iov_iter_count(to) / sizeof(struct kvtier_event);
	struct kvt_evlog *log = r->log;
	struct kvtier_event *buf;
	bool ended = false;
	ssize_t done = 0;
	int ret = 0;

	if (!want)
		return -EINVAL;
	buf = kmalloc_array(KVT_EV_CHUNK, sizeof(*buf), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	if (nonblock) {
		if (!mutex_trylock(&r->lock)) {
			kfree(buf);
			return -EAGAIN;
		}
	} else if (mutex_lock_interruptible(&r->lock)) {
		kfree(buf);
		return -ERESTARTSYS;
	}

	while (want) {
		u64 next = r->next;
		unsigned int n, i;
		size_t bytes;

		/* One more than wanted: an OVERFLOW record may come first. */
		n = kvt_ev_gather(log, &next, buf,
				  min_t(size_t, want + 1, KVT_EV_CHUNK));
		if (!n) {
			/* Something read, or the end: return what there is. */
			if (done || ended)
				break;
			/* Pairs with kvt_ev_log_end(): one more look first. */
			if (smp_load_acquire(&log->dead)) {
				ended = true;
				continue;
			}
			ret = -EAGAIN;
			if (nonblock)
				break;
			ret = wait_event_interruptible(log->wq,
						       kvt_ev_readable(log,
								       r->next));
			if (ret)
				break;
			continue;
		}
		n = min_t(size_t, n, want);
		bytes = copy_to_iter(buf, n * sizeof(*buf), to);
		/* Only whole records count as read. */
		for (i = 0; i < bytes / sizeof(*buf); i++) {
			if (buf[i].type != KVTIER_EVENT_OVERFLOW) {
				r->next = buf[i].seq + 1;
				continue;
			}
			r->next = buf[i].seq + buf[i].lost;
			atomic64_inc(&log->overflows);
			atomic64_add(buf[i].lost, &log->lost);
		}
		done += i;
		want -= i;
		if (i < n) {
			ret = -EFAULT;
			break;
		}
	}
	mutex_unlock(&r->lock);
	kfree(buf);
	return done ? done * sizeof(*buf) : ret;
}

static __poll_t kvt_ev_poll(struct file *file, poll_table *wait)
{
	struct kvt_ev_reader *r = file->private_data;
	struct kvt_evlog *log = r->log;
	__poll_t mask = 0;

	poll_wait(file, &log->wq, wait);
	if (READ_ONCE(log->seq) >= READ_ONCE(r->next))
		mask |= EPOLLIN | EPOLLRDNORM;
	if (READ_ONCE(log->dead))
		mask |= EPOLLHUP;
	return mask;
}

static int kvt_ev_release(struct inode *inode, struct file *file)
{
	struct kvt_ev_reader *r = file->private_data;
	struct kvt_evlog *log;

	/* A file that never became a reader (kvt_ev_open() failed). */
	if (!r)
		return 0;
	log = r->log;

	spin_lock(&log->lock);
	log->readers--;
	spin_unlock(&log->lock);
	kref_put(&log->ref, kvt_ev_log_release);
	kfree(r);
	return 0;
}

static const struct file_operations kvt_ev_fops = {
	.owner		= THIS_MODULE,
	.read_iter	= kvt_ev_read_iter,
	.poll		= kvt_ev_poll,
	.release	= kvt_ev_release,
	.llseek		= noop_llseek,
};

/**
 * kvt_ev_open() - KVTIER_IOC_EVENTS: an events fd on a pool
 * @pool: the pool
 * @e: the command, copied in; its outputs are set
 * @filep: out: the events file, to install as @e->fd once @e reached
 *	   userspace
 *
 * Return: 0, -EINVAL, -ENOMEM, -EMFILE or -ENFILE; on success @e->fd is a
 * reserved fd number.
 */
int kvt_ev_open(struct kvt_pool *pool, struct kvtier_events *e,
		struct file **filep)
{
	struct kvt_evlog *log = pool->events;
	struct kvtier_event *ring;
	struct kvt_ev_reader *r;
	struct file *file;
	int fd, ret;

	if ((e->flags & ~KVTIER_EVENTS_FLAGS) || e->__pad ||
	    memchr_inv(e->reserved, 0, sizeof(e->reserved)) ||
	    (!(e->flags & KVTIER_EVENTS_FROM) && e->seq) ||
	    ((e->flags & KVTIER_EVENTS_FROM) && !e->seq))
		return -EINVAL;

	/* Numbers only grow: one that is not past the next stays so. */
	if (e->flags & KVTIER_EVENTS_FROM &&
	    e->seq > READ_ONCE(log->seq) + 1)
		return -EINVAL;

	r = kzalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);
	if (!r)
		return -ENOMEM;
	mutex_init(&r->lock);
	r->log = log;

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		ret = fd;
		goto out_free;
	}
	file = anon_inode_getfile("kvtier-events", &kvt_ev_fops, r,
				  O_RDONLY | (e->flags & KVTIER_EVENTS_NONBLOCK ?
					      O_NONBLOCK : 0));
	if (IS_ERR(file)) {
		ret = PTR_ERR(file);
		goto out_put_fd;
	}
	/* io_uring may try a read without blocking, then poll. */
	file->f_mode |= FMODE_NOWAIT;

	/* The first reader brings the ring, allocated without the lock. */
	ring = NULL;
	spin_lock(&log->lock);
	while (!log->ring && !ring) {
		spin_unlock(&log->lock);
		ring = kvmalloc_array(events_ring, sizeof(*ring),
				      GFP_KERNEL_ACCOUNT);
		spin_lock(&log->lock);
		if (!ring && !log->ring) {
			spin_unlock(&log->lock);
			/* Not a reader yet: its release must not run. */
			file->private_data = NULL;
			fput(file);
			put_unused_fd(fd);
			kfree(r);
			return -ENOMEM;
		}
	}
	if (!log->ring) {
		log->ring = ring;
		log->size = events_ring;
		log->first = log->seq + 1;
		ring = NULL;
	}
	log->readers++;
	kref_get(&log->ref);
	r->next = e->flags & KVTIER_EVENTS_FROM ? e->seq : log->seq + 1;
	spin_unlock(&log->lock);
	kvfree(ring);

	e->fd = fd;
	e->seq = r->next;
	e->log_id = log->id;
	e->ring = events_ring;
	*filep = file;
	return 0;

out_put_fd:
	put_unused_fd(fd);
out_free:
	kfree(r);
	return ret;
}
