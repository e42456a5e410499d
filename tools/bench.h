/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the parts of kvtier-bench share: the library context, the result
 * lines, the bench's key space, the NVMe device it may overwrite, and fio.
 */
#ifndef KVTIER_BENCH_H
#define KVTIER_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include <kvtier.h>

extern const char *prog;
extern struct kvtier_ctx *ctx;

/* One "name: value" result line. */
void figure(const char *name, const char *fmt, double v);
/* Say on stderr that @what failed with -errno @err; returns @err. */
int warn(const char *what, int err);
/*
 * A pool for one measurement, nameless once made, keeping @dram_blocks in
 * DRAM (0: all); 0 or -errno, *@poolp NULL then.
 */
int bench_pool_dram(const char *tag, uint64_t block_size, uint64_t blocks,
		    uint32_t dram_blocks, struct kvtier_pool **poolp);
/* Key @i of the bench's key space. */
struct kvtier_key bench_key(uint64_t i);
uint64_t xorshift(uint64_t *s);

/*
 * The drive the NVMe figures overwrite, in @dev; or why there is none,
 * as a line "@fig: n/a (why)" (NULL: the nvme part's figures). 0 or -errno.
 */
int nvme_device(char *dev, size_t size, uint64_t *dev_bytes, const char *fig);
/* Word 0 of every 4 KiB page of block @i says which block and page. */
void page_stamp(void *blk, uint64_t bytes, uint64_t i);
int page_check(const void *blk, uint64_t bytes, uint64_t i);
/*
 * The indexes among [0, n) of the bench keys that are only on NVMe, in
 * random order, in @idx; how many, or -errno.
 */
int64_t nvme_only(struct kvtier_pool *pool, uint64_t n, uint64_t *idx,
		  uint64_t *rng);

/* fio with a job of tools/fio (KVTIER_FIO_* settings in the environment). */
void set_env_u64(const char *name, uint64_t v, const char *suffix);
int run_fio_json(const char *job, const char *opt, char **json);
/* Where the value of the first member "@name" after @p starts, or NULL. */
const char *json_member(const char *p, const char *name);

/* The parts in files of their own. */
int bench_latency(void);

#endif
