// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libkvtier: prefetch hints, their completions, and a request's
 * LOOKUP -> PREFETCH -> wait flow.
 */
#define KVTIER_LIB_INTERNAL
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "kvtier.h"
#include "kvtier_priv.h"

/* Run a pool command by ioctl, or through @ring when given. */
static int kvtier_pool_run(struct kvtier_pool *pool, struct kvtier_ring *ring,
			   unsigned long cmd, void *arg)
{
	if (ring)
		return kvtier_ring_run(ring, pool, cmd, arg);
	if (ioctl(pool->fd, cmd, arg) < 0)
		return -errno;
	return 0;
}

uint64_t kvtier_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

void kvtier_hint_set(struct kvtier_hint *h, const struct kvtier_key *key)
{
	memset(h, 0, sizeof(*h));
	h->key[0] = key->k[0];
	h->key[1] = key->k[1];
}

static void kvtier_prefetch_fill(struct kvtier_prefetch *pf,
				 struct kvtier_hint *hints, uint32_t n,
				 const struct kvtier_prefetch_args *a)
{
	memset(pf, 0, sizeof(*pf));
	pf->hints = (uintptr_t)hints;
	pf->count = n;
	pf->flags = a->flags;
	pf->group = a->group;
	pf->cookie = a->cookie;
	pf->deadline_ns = a->deadline_ns;
	pf->tier = a->tier ? a->tier : KVTIER_TIER_DRAM;
	pf->priority = a->priority;
}

int kvtier_prefetch(struct kvtier_pool *pool, struct kvtier_hint *hints,
		    uint32_t n, const struct kvtier_prefetch_args *a,
		    uint32_t *queued, uint32_t *resident)
{
	struct kvtier_prefetch pf;
	int ret;

	if (!a)
		return -EINVAL;
	kvtier_prefetch_fill(&pf, hints, n, a);
	ret = kvtier_pool_run(pool, NULL, KVTIER_IOC_PREFETCH, &pf);
	if (!ret && queued)
		*queued = pf.queued;
	if (!ret && resident)
		*resident = pf.resident;
	return ret;
}

int kvtier_cancel(struct kvtier_pool *pool, uint64_t group, uint32_t flags,
		  uint32_t *cancelled)
{
	struct kvtier_cancel c;
	int ret;

	memset(&c, 0, sizeof(c));
	c.group = group;
	c.flags = flags;
	ret = kvtier_pool_run(pool, NULL, KVTIER_IOC_CANCEL, &c);
	if (!ret && cancelled)
		*cancelled = c.cancelled;
	return ret;
}

int kvtier_eventfd(struct kvtier_pool *pool, int efd)
{
	struct kvtier_eventfd e;

	memset(&e, 0, sizeof(e));
	e.fd = efd;
	return kvtier_pool_run(pool, NULL, KVTIER_IOC_EVENTFD, &e);
}

int kvtier_left_ms(uint64_t end)
{
	uint64_t now;

	if (end == UINT64_MAX)
		return -1;
	now = kvtier_now_ns();
	return end > now ? (int)((end - now + 999999) / 1000000) : 0;
}

/* Read what the fd has (at most @max), waiting until @end for one. */
static int kvtier_read_completions(struct kvtier_pool *pool,
				   struct kvtier_completion *c, uint32_t max,
				   uint64_t end)
{
	for (;;) {
		struct pollfd p = { .fd = pool->fd, .events = POLLIN };
		ssize_t len;
		int ret;

		ret = poll(&p, 1, kvtier_left_ms(end));
		if (ret < 0 && errno != EINTR)
			return -errno;
		if (ret > 0) {
			len = read(pool->fd, c, max * sizeof(*c));
			if (len > 0)
				return len / sizeof(*c);
			if (len < 0 && errno != EAGAIN && errno != EINTR)
				return -errno;
		}
		if (!kvtier_left_ms(end))
			return 0;
	}
}

uint64_t kvtier_deadline(int timeout_ms)
{
	if (timeout_ms < 0)
		return UINT64_MAX;
	return kvtier_now_ns() + (uint64_t)timeout_ms * 1000000ULL;
}

int kvtier_completions(struct kvtier_pool *pool, struct kvtier_completion *c,
		       uint32_t max, int timeout_ms)
{
	uint32_t n;

	if (!max)
		return -EINVAL;
	if (pool->npend) {
		n = pool->npend < max ? pool->npend : max;
		memcpy(c, pool->pend, n * sizeof(*c));
		memmove(pool->pend, pool->pend + n,
			(pool->npend - n) * sizeof(*c));
		pool->npend -= n;
		return n;
	}
	return kvtier_read_completions(pool, c, max,
				       kvtier_deadline(timeout_ms));
}

/* Keep a completion for a later kvtier_completions(). */
static int kvtier_pend(struct kvtier_pool *pool,
		       const struct kvtier_completion *c)
{
	if (pool->npend == pool->pend_cap) {
		uint32_t cap = pool->pend_cap ? 2 * pool->pend_cap : 16;
		void *p = realloc(pool->pend, cap * sizeof(*c));

		if (!p)
			return -ENOMEM;
		pool->pend = p;
		pool->pend_cap = cap;
	}
	pool->pend[pool->npend++] = *c;
	return 0;
}

int kvtier_wait_group(struct kvtier_pool *pool, uint64_t group,
		      struct kvtier_completion *out, int timeout_ms)
{
	uint64_t end = kvtier_deadline(timeout_ms);
	struct kvtier_completion c[16];
	uint32_t i;
	int n, ret = -ETIMEDOUT;

	for (i = 0; i < pool->npend; i++) {
		if (pool->pend[i].group != group)
			continue;
		*out = pool->pend[i];
		memmove(pool->pend + i, pool->pend + i + 1,
			(pool->npend - i - 1) * sizeof(*out));
		pool->npend--;
		return 0;
	}
	while (ret == -ETIMEDOUT) {
		n = kvtier_read_completions(pool, c, 16, end);
		if (n < 0)
			return n;
		if (!n)
			return -ETIMEDOUT;
		for (i = 0; i < (uint32_t)n; i++) {
			if (c[i].group == group && ret == -ETIMEDOUT) {
				*out = c[i];
				ret = 0;
			} else if (kvtier_pend(pool, &c[i])) {
				return -ENOMEM;
			}
		}
	}
	return ret;
}

int kvtier_request_ready(struct kvtier_pool *pool, struct kvtier_ring *ring,
			 const struct kvtier_key *keys, uint32_t n,
			 uint64_t deadline_ns, int timeout_ms, uint32_t *ready)
{
	struct kvtier_block *b;
	struct kvtier_hint *h;
	struct kvtier_batch lb;
	struct kvtier_prefetch pf;
	struct kvtier_prefetch_args a;
	struct kvtier_completion c;
	uint32_t i, prefix, in_dram = 0;
	int ret;

	*ready = 0;
	if (!n || n > pool->batch_max)
		return -EINVAL;
	b = calloc(n, sizeof(*b));
	h = calloc(n, sizeof(*h));
	ret = -ENOMEM;
	if (!b || !h)
		goto out_free;

	/* Where the chain is: the prefix resident in any tier. */
	for (i = 0; i < n; i++)
		kvtier_block_set(&b[i], &keys[i], NULL);
	memset(&lb, 0, sizeof(lb));
	lb.blocks = (uintptr_t)b;
	lb.count = n;
	ret = kvtier_pool_run(pool, ring, KVTIER_IOC_LOOKUP, &lb);
	if (ret)
		goto out_free;
	prefix = lb.done;
	while (in_dram < prefix && b[in_dram].tier == KVTIER_TIER_DRAM)
		in_dram++;
	if (in_dram == prefix) {
		*ready = prefix;
		goto out_free;
	}

	/* Stage it by the deadline, and wait for the group to end. */
	for (i = 0; i < prefix; i++)
		kvtier_hint_set(&h[i], &keys[i]);
	memset(&a, 0, sizeof(a));
	a.group = ((uint64_t)getpid() << 32) | ++pool->next_group;
	a.deadline_ns = deadline_ns;
	kvtier_prefetch_fill(&pf, h, prefix, &a);
	ret = kvtier_pool_run(pool, ring, KVTIER_IOC_PREFETCH, &pf);
	if (ret)
		goto out_free;
	ret = kvtier_wait_group(pool, a.group, &c, timeout_ms);
	if (ret == -ETIMEDOUT) {
		kvtier_cancel(pool, a.group, 0, NULL);
		/* Its -ECANCELED record (if any) is of no interest. */
		if (!kvtier_wait_group(pool, a.group, &c, 0))
			ret = -ETIMEDOUT;
		goto out_free;
	}
	if (!ret) {
		*ready = c.ready;
		ret = c.status;
	}
out_free:
	free(b);
	free(h);
	return ret;
}
