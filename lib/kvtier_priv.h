/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libkvtier internals: the objects behind the opaque handles of kvtier.h.
 * Only the library's own sources define KVTIER_LIB_INTERNAL.
 */
#ifndef KVTIER_LIB_INTERNAL
#error "kvtier_priv.h is private to libkvtier; include <kvtier.h> instead"
#endif

#ifndef KVTIER_PRIV_H
#define KVTIER_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/kvtier.h>

#define KVTIER_DEVICE_PATH	"/dev/" KVTIER_DEVICE_NAME

/**
 * struct kvtier_ctx - an open control fd that has done the handshake
 * @fd:		the control fd.
 * @api:	the handshake result.
 */
struct kvtier_ctx {
	int fd;
	struct kvtier_api api;
};

/**
 * struct kvtier_pool - an open pool fd and the configuration it was opened at
 * @fd:		the pool fd.
 * @batch_max:	most entries one ioctl takes (from the handshake).
 * @block_size:	bytes per block.
 * @capacity:	block addresses.
 * @numa_node:	node of the pool's DRAM, or -1.
 * @name:	NUL-terminated pool name.
 */
struct kvtier_pool {
	int fd;
	uint32_t batch_max;
	uint64_t block_size;
	uint32_t capacity;
	int32_t numa_node;
	char name[KVTIER_NAME_MAX];
	/* Completions read while waiting for another group (prefetch.c). */
	struct kvtier_completion *pend;
	uint32_t npend;
	uint32_t pend_cap;
	uint64_t next_group;	/* kvtier_request_ready()'s group ids */
};

/*
 * POOL_CREATE of @c (its name set from @name here), the new pool fd
 * wrapped in a handle (kvtier.c). For the create paths that fill more of
 * struct kvtier_pool_create than struct kvtier_pool_params has: parts,
 * compression, a weight pool's file (weights.c).
 */
int kvtier_pool_create_cmd(struct kvtier_ctx *ctx, const char *name,
			   struct kvtier_pool_create *c,
			   struct kvtier_pool **poolp);

/**
 * struct kvtier_ring - an io_uring for pool commands (ring.c)
 */
struct kvtier_ring;

int kvtier_ring_run(struct kvtier_ring *ring, struct kvtier_pool *pool,
		    unsigned long op, void *arg);

/*
 * Waits (prefetch.c): the CLOCK_MONOTONIC ns a wait of @timeout_ms ends
 * (UINT64_MAX for -1, forever), and the milliseconds left to it (-1
 * forever, 0 once past), for poll(2).
 */
uint64_t kvtier_deadline(int timeout_ms);
int kvtier_left_ms(uint64_t end);

/**
 * struct kvtier_map - a read-only mapping of a range of block addresses
 * @base:	mapping start, the address of block @first.
 * @len:	mapping length in bytes.
 * @first:	first block address mapped.
 * @count:	block addresses mapped.
 * @block_size:	bytes per block.
 */
struct kvtier_map {
	void *base;
	size_t len;
	uint64_t first;
	uint64_t count;
	uint64_t block_size;
	bool writable;		/* the reservation window */
};

#endif /* KVTIER_PRIV_H */
