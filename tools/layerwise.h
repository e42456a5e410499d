/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The layer-wise load of a modeled runtime (kvtier-demo replay --layers,
 * kvtier-bench layerwise): a prefix's blocks hold the runtime's layers one
 * after the other, and the runtime computes layer l while l + 1 is read.
 */
#ifndef KVTIER_TOOLS_LAYERWISE_H
#define KVTIER_TOOLS_LAYERWISE_H

#include <stdint.h>
#include <kvtier.h>

#define LAYERWISE_DEPTH	4	/* layers read ahead of the one computed */

/**
 * struct layerwise - what one layer-wise load of a prefix cost
 * @stall_ns:	time the runtime waited for a layer's bytes.
 * @compute_ns:	modeled compute, @layers times the per-layer cost.
 * @usable:	blocks of the prefix whose every layer arrived.
 * @bad:	entries that failed other than as a miss.
 */
struct layerwise {
	uint64_t stall_ns;
	uint64_t compute_ns;
	uint32_t usable;
	uint32_t bad;
};

struct layerwise_ctx;

/**
 * layerwise_new() - a ring and entries for loads of up to @n blocks
 * @n:		most blocks of a prefix.
 * @layers:	layers a block holds, each block_size / @layers bytes.
 * @ctxp:	out: the context.
 *
 * Return: 0 or -errno.
 */
int layerwise_new(uint32_t n, uint32_t layers, struct layerwise_ctx **ctxp);

/** layerwise_free() - free it (NULL is a no-op) */
void layerwise_free(struct layerwise_ctx *lw);

/**
 * layerwise_load() - load a prefix layer by layer, computing meanwhile
 * @lw:		the context.
 * @pool:	the pool (KVTIER_F_PARTS, KVTIER_F_URING).
 * @keys:	the prefix's keys.
 * @bufs:	a whole-block buffer for each; layer l lands at l x its size.
 * @n:		blocks, at most layerwise_new()'s.
 * @block_bytes: the pool's block size.
 * @compute_ns:	modeled compute of one layer; 0: none.
 * @out:	what it cost.
 *
 * GETs each layer's range of every block (KVTIER_GET_PART) through an
 * io_uring, LAYERWISE_DEPTH layers ahead; the stall is the time spent
 * waiting for layer l's completion before computing it.
 *
 * Return: 0 or -errno (a ring failure; per-entry failures are in @out).
 */
int layerwise_load(struct layerwise_ctx *lw, struct kvtier_pool *pool,
		   const struct kvtier_key *keys, void *const *bufs,
		   uint32_t n, uint64_t block_bytes, uint64_t compute_ns,
		   struct layerwise *out);

#endif /* KVTIER_TOOLS_LAYERWISE_H */
