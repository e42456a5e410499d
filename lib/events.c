// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libkvtier: a pool's events (KVTIER_IOC_EVENTS and the events fd) and its
 * census (KVTIER_IOC_CENSUS).
 */
#define KVTIER_LIB_INTERNAL
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/uio.h>

#include "kvtier.h"
#include "kvtier_priv.h"

int kvtier_events_open(struct kvtier_pool *pool, uint64_t from_seq,
		       uint32_t flags, struct kvtier_events *out)
{
	struct kvtier_events e;

	memset(&e, 0, sizeof(e));
	e.flags = flags | (from_seq ? KVTIER_EVENTS_FROM : 0);
	e.seq = from_seq;
	if (ioctl(pool->fd, KVTIER_IOC_EVENTS, &e) < 0)
		return -errno;
	if (out)
		*out = e;
	return e.fd;
}

/*
 * One read of what is there, never blocking, whatever the fd's O_NONBLOCK:
 * poll(2) said readable, but another reader of the fd may have been first.
 */
static ssize_t kvtier_events_read_now(int fd, struct kvtier_event *ev,
				      size_t n)
{
	struct iovec iov = { .iov_base = ev, .iov_len = n * sizeof(*ev) };
	ssize_t len;

	len = preadv2(fd, &iov, 1, -1, RWF_NOWAIT);
	if (len < 0 && errno == EOPNOTSUPP)
		len = read(fd, ev, n * sizeof(*ev));
	return len;
}

ssize_t kvtier_events_read(int fd, struct kvtier_event *ev, size_t n,
			   int timeout_ms)
{
	uint64_t end = kvtier_deadline(timeout_ms);

	if (fd < 0)
		return -EBADF;
	if (!n)
		return -EINVAL;
	if (n > SSIZE_MAX / sizeof(*ev))
		n = SSIZE_MAX / sizeof(*ev);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t len;
		int ret;

		ret = poll(&p, 1, kvtier_left_ms(end));
		if (ret < 0)
			return -errno;
		if (ret > 0) {
			if (p.revents & POLLNVAL)
				return -EBADF;
			/* POLLHUP too: what is left, then 0 at the end. */
			len = kvtier_events_read_now(fd, ev, n);
			if (len >= 0)
				return len / sizeof(*ev);
			if (errno != EAGAIN)
				return -errno;
		}
		if (!kvtier_left_ms(end))
			return -ETIMEDOUT;
	}
}

int kvtier_census(struct kvtier_pool *pool, uint64_t *cursor,
		  struct kvtier_census_entry *ent, struct kvtier_meta *meta,
		  uint32_t n, uint64_t *seq, uint64_t *log_id)
{
	uint32_t total = 0;
	int first = 1;

	if (!n)
		return -EINVAL;
	if (n > INT_MAX)
		n = INT_MAX;
	while (total < n && *cursor != KVTIER_ADDR_NONE) {
		struct kvtier_census c;
		uint32_t chunk = n - total;

		if (chunk > pool->batch_max)
			chunk = pool->batch_max;
		memset(&c, 0, sizeof(c));
		c.entries = (uintptr_t)(ent + total);
		c.count = chunk;
		c.cursor = *cursor;
		c.meta = meta ? (uintptr_t)(meta + total) : 0;
		if (ioctl(pool->fd, KVTIER_IOC_CENSUS, &c) < 0) {
			/* Keys listed stay listed; the next call says why. */
			if (total)
				break;
			return -errno;
		}
		if (first) {
			if (seq)
				*seq = c.seq;
			if (log_id)
				*log_id = c.log_id;
			first = 0;
		}
		total += c.done;
		*cursor = c.cursor;
	}
	return total;
}

const char *kvtier_event_name(unsigned int type)
{
	static const char * const names[] = {
		[KVTIER_EVENT_STORED] = "stored",
		[KVTIER_EVENT_MOVED] = "moved",
		[KVTIER_EVENT_REMOVED] = "removed",
		[KVTIER_EVENT_CLEARED] = "cleared",
		[KVTIER_EVENT_OVERFLOW] = "overflow",
	};

	return type < sizeof(names) / sizeof(names[0]) ? names[type] : NULL;
}

const char *kvtier_event_reason_name(unsigned int reason)
{
	static const char * const names[] = {
		[KVTIER_EVR_PUT] = "put",
		[KVTIER_EVR_REPLACE] = "replace",
		[KVTIER_EVR_ADOPT] = "adopt",
		[KVTIER_EVR_REPLAY] = "replay",
		[KVTIER_EVR_LOAD] = "load",
		[KVTIER_EVR_EVICT] = "evict",
		[KVTIER_EVR_SHRINK] = "shrink",
		[KVTIER_EVR_STAGE] = "stage",
		[KVTIER_EVR_UNSTAGE] = "unstage",
		[KVTIER_EVR_DROP] = "drop",
		[KVTIER_EVR_BAD_READ] = "bad_read",
		[KVTIER_EVR_LOG_RECLAIM] = "log_reclaim",
		[KVTIER_EVR_IO_ERROR] = "io_error",
		[KVTIER_EVR_DETACH] = "detach",
		[KVTIER_EVR_DESTROY] = "destroy",
	};

	return reason < sizeof(names) / sizeof(names[0]) ? names[reason] : NULL;
}
