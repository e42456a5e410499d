// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libkvtier: pool commands through io_uring (IORING_OP_URING_CMD).
 *
 * A ring carries PUT, GET, LOOKUP and PREFETCH for any number of pools:
 * kvtier_ring_queue() fills an SQE (its command area a struct
 * kvtier_uring_cmd pointing at the caller's command struct, which must
 * stay valid until its completion), kvtier_ring_submit() hands them to the
 * kernel in one system call, kvtier_ring_reap() returns completions.
 */
#define KVTIER_LIB_INTERNAL
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <liburing.h>

#include "kvtier.h"
#include "kvtier_priv.h"

struct kvtier_ring {
	struct io_uring ring;
	unsigned int entries;
};

int kvtier_ring_open(struct kvtier_ring **ringp, unsigned int entries)
{
	struct kvtier_ring *ring;
	int ret;

	*ringp = NULL;
	if (!entries)
		return -EINVAL;
	ring = calloc(1, sizeof(*ring));
	if (!ring)
		return -ENOMEM;
	ret = io_uring_queue_init(entries, &ring->ring, 0);
	if (ret) {
		free(ring);
		return ret;
	}
	ring->entries = entries;
	*ringp = ring;
	return 0;
}

void kvtier_ring_close(struct kvtier_ring *ring)
{
	if (!ring)
		return;
	io_uring_queue_exit(&ring->ring);
	free(ring);
}

int kvtier_ring_fd(const struct kvtier_ring *ring)
{
	return ring->ring.ring_fd;
}

int kvtier_ring_queue(struct kvtier_ring *ring, struct kvtier_pool *pool,
		      unsigned long op, void *arg, uint64_t user_data)
{
	struct kvtier_uring_cmd *c;
	struct io_uring_sqe *sqe;

	sqe = io_uring_get_sqe(&ring->ring);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, pool->fd, NULL, 0, 0);
	sqe->cmd_op = op;
	c = (struct kvtier_uring_cmd *)sqe->cmd;
	memset(c, 0, sizeof(*c));
	c->arg = (uintptr_t)arg;
	io_uring_sqe_set_data64(sqe, user_data);
	return 0;
}

int kvtier_ring_submit(struct kvtier_ring *ring)
{
	return io_uring_submit(&ring->ring);
}

int kvtier_ring_reap(struct kvtier_ring *ring, struct kvtier_ring_cqe *out,
		     unsigned int max, unsigned int wait_nr)
{
	struct io_uring_cqe *cqe;
	unsigned int n = 0;
	int ret;

	while (n < max) {
		if (n < wait_nr)
			ret = io_uring_wait_cqe(&ring->ring, &cqe);
		else
			ret = io_uring_peek_cqe(&ring->ring, &cqe);
		if (ret == -EAGAIN)
			break;
		if (ret == -EINTR && n)
			break;
		if (ret)
			return n ? (int)n : ret;
		out[n].user_data = io_uring_cqe_get_data64(cqe);
		out[n].res = cqe->res;
		io_uring_cqe_seen(&ring->ring, cqe);
		n++;
	}
	return n;
}

/*
 * Run one command through the ring and wait for it; completions of other
 * commands in flight are not expected here (kvtier_request_ready() uses a
 * ring of its own caller's, idle).
 */
int kvtier_ring_run(struct kvtier_ring *ring, struct kvtier_pool *pool,
		    unsigned long op, void *arg)
{
	struct kvtier_ring_cqe c;
	int ret;

	ret = kvtier_ring_queue(ring, pool, op, arg, (uintptr_t)arg);
	if (ret)
		return ret;
	ret = kvtier_ring_submit(ring);
	if (ret < 0)
		return ret;
	for (;;) {
		ret = kvtier_ring_reap(ring, &c, 1, 1);
		if (ret < 0)
			return ret;
		if (ret == 1 && c.user_data == (uintptr_t)arg)
			return c.res;
		if (ret == 1)
			return -EBUSY;	/* the ring was not idle */
	}
}
