// SPDX-License-Identifier: GPL-2.0
/*
 * The layer-wise load of a modeled runtime: see layerwise.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "layerwise.h"
#include "util.h"

struct layerwise_ctx {
	uint32_t cap;			/* blocks */
	uint32_t layers;
	struct kvtier_ring *ring;
	struct kvtier_block *blk;	/* layers x cap entries */
	struct kvtier_batch *batch;	/* one a layer */
	unsigned char *done;		/* a layer's completion reaped */
	int *res;			/* its result */
};

int layerwise_new(uint32_t n, uint32_t layers, struct layerwise_ctx **ctxp)
{
	struct layerwise_ctx *lw = calloc(1, sizeof(*lw));
	int ret = -ENOMEM;

	*ctxp = NULL;
	if (!lw)
		return -ENOMEM;
	lw->cap = n;
	lw->layers = layers;
	lw->blk = calloc((size_t)n * layers, sizeof(*lw->blk));
	lw->batch = calloc(layers, sizeof(*lw->batch));
	lw->done = calloc(layers, 1);
	lw->res = calloc(layers, sizeof(*lw->res));
	if (lw->blk && lw->batch && lw->done && lw->res)
		ret = kvtier_ring_open(&lw->ring, LAYERWISE_DEPTH);
	if (ret) {
		layerwise_free(lw);
		return ret;
	}
	*ctxp = lw;
	return 0;
}

void layerwise_free(struct layerwise_ctx *lw)
{
	if (!lw)
		return;
	kvtier_ring_close(lw->ring);
	free(lw->blk);
	free(lw->batch);
	free(lw->done);
	free(lw->res);
	free(lw);
}

static void compute(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = ns / 1000000000ULL,
		.tv_nsec = ns % 1000000000ULL,
	};

	while (ns && clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

/* Reap what has completed, waiting for one if @wait; queue more layers. */
static int reap(struct layerwise_ctx *lw, struct kvtier_pool *pool,
		uint32_t *next, int wait)
{
	struct kvtier_ring_cqe c[LAYERWISE_DEPTH];
	int got, i, ret;

	got = kvtier_ring_reap(lw->ring, c, LAYERWISE_DEPTH, wait);
	if (got < 0)
		return got;
	for (i = 0; i < got; i++) {
		lw->done[c[i].user_data] = 1;
		lw->res[c[i].user_data] = c[i].res;
	}
	while (got-- > 0 && *next < lw->layers) {
		ret = kvtier_ring_queue(lw->ring, pool, KVTIER_IOC_GET,
					&lw->batch[*next], *next);
		if (ret)
			return ret;
		(*next)++;
	}
	ret = kvtier_ring_submit(lw->ring);
	return ret < 0 ? ret : 0;
}

int layerwise_load(struct layerwise_ctx *lw, struct kvtier_pool *pool,
		   const struct kvtier_key *keys, void *const *bufs,
		   uint32_t n, uint64_t block_bytes, uint64_t compute_ns,
		   struct layerwise *out)
{
	uint64_t lb = block_bytes / lw->layers, t0;
	uint32_t l, i, next = 0;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (!n || n > lw->cap || block_bytes % lw->layers)
		return -EINVAL;
	memset(lw->done, 0, lw->layers);
	for (l = 0; l < lw->layers; l++) {
		struct kvtier_block *b = &lw->blk[(size_t)l * lw->cap];

		for (i = 0; i < n; i++)
			kvtier_block_set(&b[i], &keys[i],
					 (char *)bufs[i] + l * lb);
		kvtier_part_batch(&lw->batch[l], b, n, l * lb, lb);
	}
	out->usable = n;
	for (; next < lw->layers && next < LAYERWISE_DEPTH; next++) {
		ret = kvtier_ring_queue(lw->ring, pool, KVTIER_IOC_GET,
					&lw->batch[next], next);
		if (ret)
			return ret;
	}
	ret = kvtier_ring_submit(lw->ring);
	if (ret < 0)
		return ret;

	for (l = 0; l < lw->layers; l++) {
		t0 = now_ns();
		/* What arrived while computing; then wait for this layer. */
		ret = reap(lw, pool, &next, 0);
		while (!ret && !lw->done[l])
			ret = reap(lw, pool, &next, 1);
		out->stall_ns += now_ns() - t0;
		if (ret)
			break;
		compute(compute_ns);
		out->compute_ns += compute_ns;
	}
	if (ret)
		return ret;

	for (l = 0; l < lw->layers; l++) {
		const struct kvtier_block *b = &lw->blk[(size_t)l * lw->cap];

		if (lw->res[l] < 0)
			return lw->res[l];
		for (i = 0; i < out->usable; i++)
			if (b[i].status)
				break;
		if (i < out->usable && b[i].status != -ENOENT)
			out->bad++;
		out->usable = i;
	}
	return 0;
}
