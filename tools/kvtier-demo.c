// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier-demo: prefix caching of LLM KV blocks through libkvtier.
 *
 *   kvtier-demo gen [generator options] > trace.jsonl
 *   kvtier-demo replay [--trace FILE|generated] [replay options]
 *
 * replay plays each request the way an inference engine's prefix cache
 * would: compute the chained keys of its hash ids, LOOKUP the chain, PIN
 * and GET the resident prefix (verifying every byte, and through the pool
 * mmap too), PUT the blocks that missed, UNPIN. A block's bytes derive from
 * its key, so any stale, torn or foreign data shows up as a verify error,
 * and the exit status is then 1.
 *
 * With an NVMe tier (--nvme; by default the VM's /dev/nvme0n1), the pool's
 * DRAM share is smaller than the working set: blocks evicted from DRAM are
 * demoted to NVMe, and a prefix found there is promoted back (LOOKUP with
 * KVTIER_LOOKUP_LOAD) before it is pinned and read.
 *
 * With an HBM tier (--hbm-slots), the pool also has a device arena (the
 * emulated one, or a malloc'ed arena moved by libkvtier's memcpy mover in a
 * thread): the runtime model then needs a request's prefix in HBM, and
 * stages it there through PREFETCH with the HBM target.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kvtier.h>

#include "kvtier-demo.h"
#include "layerwise.h"
#include "util.h"

#define EXIT_USAGE	2
#define PAGE		4096
/* Smaller than the generator's working set, so LRU shows against OPT. */
#define DEFAULT_POOL_BLOCKS	2048
/* With NVMe: room for the working set (~9800 blocks), DRAM as above. */
#define DEFAULT_NVME_POOL_BLOCKS 16384
#define DEFAULT_NVME_DEV	"/dev/nvme0n1"
/*
 * The emulated HBM link, GB/s: slow enough that a copy costs time next to
 * the modeled compute (a 64 KiB block standing for 512 tokens: 66 us at
 * 1 GB/s, against ~1 ms of compute at 2 us a token).
 */
#define DEFAULT_HBM_GBPS	1
#define HBM_GBPS_PARAM		"/sys/module/kvtier/parameters/hbm_emul_gbps"
#define HBM_GROUP_BASE		(1ULL << 62)	/* ids apart from the hints' */
#define HBM_WAIT_MS		30000

static const char *prog = "kvtier-demo";
static volatile sig_atomic_t stop;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s gen [generator options] > trace.jsonl\n"
		"       %s replay [--trace FILE|generated] [replay options] [generator options]\n"
		"       %s stats [--trace FILE|generated] [--max-requests N] [generator options]\n"
		"       %s weights [weights options] (%s weights --help)\n"
		"\n"
		"gen writes the built-in workload as a Mooncake trace; replay plays a\n"
		"trace through a kvtier pool and prints what the cache saved; stats\n"
		"describes a trace without the module (size, infinite-cache hit ratio);\n"
		"weights streams a generated model through a weight pool.\n"
		"Exit status: 0, 1 failure (verify errors included), 2 bad usage.\n"
		"\n"
		"replay options:\n"
		"  --trace FILE        Mooncake-format trace, or 'generated' [$KVTIER_TRACE\n"
		"                      if set, else generated]\n"
		"  --block-bytes B     bytes standing for one 512-token block [64K]\n"
		"  --pool-blocks N     pool capacity in blocks [2048, or half the free\n"
		"                      DRAM budget if that is less]\n"
		"  --dram-blocks N     blocks the pool keeps in DRAM [pool-blocks]\n"
		"  --node N            NUMA node of the pool [-1]\n"
		"  --max-requests N    stop after N requests [all]\n"
		"  --verify MODE       full: every byte of every GET; sample: one word\n"
		"                      a page [full]\n"
		"  --no-mmap           do not also check hits through the pool mmap\n"
		"  --pool NAME         pool name [kvtier-demo-PID]\n"
		"  --progress N        a progress line on stderr every N requests [off]\n"
		"  --nvme DEV|none     attach block device DEV as the NVMe tier for the\n"
		"                      replay (needs root), or use the one attached\n"
		"                      already; the pool then has --pool-blocks [16384]\n"
		"                      addresses and a DRAM share of --dram-blocks [2048,\n"
		"                      or half the free DRAM budget if that is less]\n"
		"                      [$KVTIER_DEMO_NVME if set (0: none), else\n"
		"                      " DEFAULT_NVME_DEV " if it is a kvtier-vm drive]\n"
		"  --nvme-format       format DEV (destroys what it holds); without it a\n"
		"                      blank DEV is formatted and a kvtier store reused\n"
		"  --compute-us-per-token US\n"
		"                      the runtime model: requests one at a time, each\n"
		"                      computing input_length x US microseconds after\n"
		"                      its cached prefix is in DRAM; the wait for that\n"
		"                      is the stall [0: no model]\n"
		"  --hints W           with the model: PREFETCH each request's chain\n"
		"                      when it is W requests ahead, due when it starts\n"
		"                      [0: none]\n"
		"  --background B      with hints: also PREFETCH the B requests after\n"
		"                      the window as background groups, which yield\n"
		"                      to the window's; each is hinted again with a\n"
		"                      deadline when it enters the window [0]\n"
		"  --compare-hints W   replay twice on fresh pools, without hints and\n"
		"                      with --hints W, and print stall_hinted_vs_unhinted,\n"
		"                      hinted_ready_by_deadline, prefetch_wasted_share\n"
		"                      and prefetch_needed_read_gbps [off; the model's\n"
		"                      compute defaults to 20 us a token]\n"
		"  --hbm-slots N       give the pool an HBM tier of N slots: the model's\n"
		"                      hints stage into HBM (NVMe -> DRAM -> HBM), and\n"
		"                      a request waits until its prefix is in HBM; with\n"
		"                      --compare-hints prints hbm_stall_hinted_vs_\n"
		"                      unhinted and hbm_hit_share instead [0: none]\n"
		"  --hint-budget N     hint a request only while the window's hints,\n"
		"                      its own with those before it, name at most N\n"
		"                      blocks: staging for later requests then never\n"
		"                      gives back what earlier ones are about to use\n"
		"                      [with --hbm-slots: 3/8 of the slots; else 0,\n"
		"                      no bound]\n"
		"  --layers L          with the model: blocks hold L layers; the model\n"
		"                      computes a request layer by layer while its\n"
		"                      prefix arrives a layer at a time (GET of one\n"
		"                      range of each block through io_uring; the pool\n"
		"                      is made with L parts, so blocks only on NVMe\n"
		"                      are read in parts and stay there); the stall is\n"
		"                      the waits for layers [0: whole blocks]\n"
		"  --compare-layers L  replay twice on fresh pools, without hints: whole\n"
		"                      prefixes, then --layers L; prints\n"
		"                      demo_layerwise_stall_vs_whole [off; the model's\n"
		"                      compute defaults to 20 us a token]\n"
		"  --hbm-backend emul|user\n"
		"                      emul: the module's emulated device; user: a\n"
		"                      malloc'ed arena and libkvtier's memcpy mover in\n"
		"                      a thread [emul]\n"
		"  --hbm-gbps G        emul: write G to hbm_emul_gbps for the replay (0:\n"
		"                      memcpy speed; needs root) [%d]\n"
		"\n", prog, prog, prog, prog, prog, DEFAULT_HBM_GBPS);
	gen_usage(f);
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* ---- block contents ---------------------------------------------------- */

#define GOLDEN	0x9e3779b97f4a7c15ULL

/* Word i of the block with key k: (k0 ^ i * GOLDEN) + k1. */
static inline uint64_t pattern(const struct kvtier_key *k, uint64_t i)
{
	return (k->k[0] ^ (i * GOLDEN)) + k->k[1];
}

void fill_block(void *buf, uint64_t bytes, const struct kvtier_key *k)
{
	uint64_t *w = buf, i, n = bytes / 8;

	for (i = 0; i < n; i++)
		w[i] = pattern(k, i);
}

/* Check every word (full) or the first word of each page; 0 if all match. */
int check_block(const void *buf, uint64_t bytes,
		       const struct kvtier_key *k, int full)
{
	const uint64_t *w = buf;
	uint64_t i, n = bytes / 8, step = full ? 1 : PAGE / 8;
	uint64_t bad = 0;

	for (i = 0; i < n; i += step)
		bad |= w[i] ^ pattern(k, i);
	return bad != 0;
}

/* ---- a set of keys, for the infinite-cache hit ratio ------------------- */

struct keyset {
	struct kvtier_key *slot;	/* {0, 0} is an empty slot */
	uint64_t mask;
	uint64_t used;
};

static int keyset_grow(struct keyset *s)
{
	uint64_t size = s->slot ? (s->mask + 1) * 2 : 1 << 16, i, j;
	struct kvtier_key *slot = calloc(size, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (i = 0; s->slot && i <= s->mask; i++) {
		if (!s->slot[i].k[0] && !s->slot[i].k[1])
			continue;
		for (j = s->slot[i].k[0] & (size - 1); slot[j].k[0] || slot[j].k[1];
		     j = (j + 1) & (size - 1))
			;
		slot[j] = s->slot[i];
	}
	free(s->slot);
	s->slot = slot;
	s->mask = size - 1;
	return 0;
}

/* Insert @k; returns 1 if it was there already, 0 if new, -ENOMEM. */
static int keyset_add(struct keyset *s, const struct kvtier_key *k)
{
	uint64_t j;

	if ((!s->slot || (s->used + 1) * 2 > s->mask + 1) && keyset_grow(s))
		return -ENOMEM;
	for (j = k->k[0] & s->mask; s->slot[j].k[0] || s->slot[j].k[1];
	     j = (j + 1) & s->mask)
		if (s->slot[j].k[0] == k->k[0] && s->slot[j].k[1] == k->k[1])
			return 1;
	s->slot[j] = *k;
	s->used++;
	return 0;
}

/* Prompt tokens covered by the first @blocks blocks of a request. */
static uint64_t prefix_tokens(uint64_t blocks, uint64_t input_length)
{
	uint64_t t = blocks * DEMO_BLOCK_TOKENS;

	return t < input_length ? t : input_length;
}

/*
 * The trace on its own: what an infinite cache would serve (a block hits
 * when its key, and so its whole prefix, was seen before).
 */
struct trace_stats {
	struct keyset seen;
	uint64_t requests;
	uint64_t blocks;
	uint64_t unique_blocks;
	uint64_t tokens;
	uint64_t hit_blocks;
	uint64_t tokens_avoided;
	uint64_t max_blocks;
	uint64_t last_ms;
};

static int trace_account(struct trace_stats *ts, const struct request *r,
			 const struct kvtier_key *keys)
{
	uint64_t hits = 0;
	int known = 1;
	uint32_t i;

	ts->requests++;
	ts->blocks += r->n;
	ts->tokens += r->input_length;
	if (r->n > ts->max_blocks)
		ts->max_blocks = r->n;
	ts->last_ms = r->timestamp;
	for (i = 0; i < r->n; i++) {
		int seen = keyset_add(&ts->seen, &keys[i]);

		if (seen < 0)
			return seen;
		if (!seen)
			ts->unique_blocks++;
		if (known && seen)
			hits++;
		else
			known = 0;
	}
	ts->hit_blocks += hits;
	ts->tokens_avoided += prefix_tokens(hits, r->input_length);
	return 0;
}

/* ---- replay ------------------------------------------------------------ */

struct replay_opts {
	const char *trace;		/* NULL: the generator */
	uint64_t block_bytes;
	uint64_t pool_blocks;
	uint64_t dram_blocks;
	int64_t node;
	uint64_t max_requests;
	uint64_t progress;
	int verify_full;
	int use_mmap;
	char pool[KVTIER_NAME_MAX];
	const char *nvme;		/* NULL: no NVMe tier */
	int nvme_explicit;		/* named by the user, not the default */
	int nvme_format;
	double compute_ns_per_token;	/* the runtime model; 0: none */
	uint32_t hints;			/* lookahead window, requests */
	uint32_t compare_hints;		/* run without, then with, hints */
	uint32_t background;		/* requests after the window, background */
	uint32_t hbm_slots;		/* HBM tier; 0: none */
	uint32_t hint_budget;		/* blocks hinted at once; ~0U: default */
	uint32_t hbm_backend;		/* KVTIER_HBM_EMUL or _USER */
	int hbm_gbps;			/* emul link to set; -1: leave it */
	uint32_t layers;		/* layer-wise loads; 0: whole blocks */
	uint32_t compare_layers;	/* run whole, then with layers */
	struct gen_opts gen;
};

struct replay_stats {
	struct trace_stats trace;	/* requests, blocks, infinite cache */
	uint64_t hit_blocks;		/* usable prefix, served by GET */
	uint64_t tokens_avoided;
	uint64_t gets;
	uint64_t get_lost;		/* resident at LOOKUP, gone at GET */
	uint64_t puts;
	uint64_t put_exists;
	uint64_t put_nospc;
	uint64_t put_failed;		/* any other per-entry error */
	uint64_t pin_failed;
	uint64_t mmap_checked;
	uint64_t verify_errors;
	uint64_t elapsed_ns;
	uint64_t hit_nvme;		/* usable prefix blocks found on NVMe */
	uint64_t load_lost;		/* on NVMe at LOOKUP, not loaded */
	uint64_t stall_ns;		/* waiting for the prefix to load */
	uint64_t stall_blocks;		/* blocks it was waiting for */
	uint64_t compute_ns;		/* modeled compute */
	struct hint_stats hints;	/* of the runtime model's hints */
	uint64_t pf_issued;		/* prefetch reads started (sysfs) */
	uint64_t pf_wasted;		/* ...and never used (sysfs) */
	uint64_t hbm_prefix_blocks;	/* prefix blocks at request starts */
	uint64_t hbm_hit_blocks;	/* ...that were in HBM then */
	uint64_t hbm_stall_ns;		/* waiting for the rest to reach HBM */
	uint64_t hbm_from_dram;		/* blocks waited for: from DRAM */
	uint64_t hbm_from_nvme;		/* ...from NVMe */
	uint64_t hbm_short;		/* not in HBM after the wait */
	struct kvtier_hbm_stat hbm;	/* the tier's counters at the end */
};

struct replay {
	struct replay_opts *o;
	struct replay_stats st;
	struct kvtier_ctx *ctx;
	int nvme_on;			/* an NVMe tier is attached */
	int nvme_ours;			/* ...by us: detach it at the end */
	struct kvtier_nvme_stat ns0;	/* at the start of the replay */
	struct kvtier_pool *pool;
	struct kvtier_map *map;
	struct kvtier_key *keys;
	struct kvtier_block *look;	/* LOOKUP, PIN, UNPIN: buf 0 */
	struct kvtier_block *io;	/* GET, PUT */
	unsigned char *on_nvme;		/* LOOKUP found the entry on NVMe */
	uint32_t cap;			/* entries of keys/look/io/on_nvme */
	void *staging;
	size_t staging_size;
	struct layerwise_ctx *lw;	/* --layers: its ring and entries */
	uint32_t lw_cap;		/* blocks lw takes */
	void **bufs;			/* slot_buf() of each entry, for lw */
	int hbm_on;			/* the pool has an HBM tier */
	struct kvtier_hint *hints;	/* the waits for HBM */
	uint64_t hbm_groups;
	int gbps_old;			/* hbm_emul_gbps to restore; -1 */
	struct kvtier_mover *mover;	/* --hbm-backend user */
	void *arena;
	pthread_t mover_thread;
	int mover_running;
	int mover_stop;			/* __atomic */
	int mover_err;
};

static int replay_reserve(struct replay *rp, uint32_t n)
{
	size_t size = (size_t)n * rp->o->block_bytes;
	uint32_t cap = rp->cap ? rp->cap : 256;
	void *p;
	int ret;

	if (n > rp->cap) {
		while (cap < n)
			cap *= 2;
		p = realloc(rp->keys, cap * sizeof(*rp->keys));
		if (!p)
			return -ENOMEM;
		rp->keys = p;
		p = realloc(rp->look, cap * sizeof(*rp->look));
		if (!p)
			return -ENOMEM;
		rp->look = p;
		p = realloc(rp->io, cap * sizeof(*rp->io));
		if (!p)
			return -ENOMEM;
		rp->io = p;
		p = realloc(rp->on_nvme, cap);
		if (!p)
			return -ENOMEM;
		rp->on_nvme = p;
		p = realloc(rp->hints, cap * sizeof(*rp->hints));
		if (!p)
			return -ENOMEM;
		rp->hints = p;
		p = realloc(rp->bufs, cap * sizeof(*rp->bufs));
		if (!p)
			return -ENOMEM;
		rp->bufs = p;
		rp->cap = cap;
	}
	if (size > rp->staging_size) {
		kvtier_free_staging(rp->pool, rp->staging, rp->staging_size);
		rp->staging = NULL;
		rp->staging_size = 0;
		ret = kvtier_alloc_staging(rp->pool, size, &rp->staging);
		if (ret)
			return ret;
		rp->staging_size = size;
	}
	return 0;
}

static void *slot_buf(struct replay *rp, uint32_t i)
{
	return (char *)rp->staging + (size_t)i * rp->o->block_bytes;
}

/*
 * The runtime needs the prefix, look[0..*prefix), in HBM: what is not there
 * yet is staged by a PREFETCH to HBM due now, and the wait for its
 * completion is the stall. Then a LOOKUP with TOUCH sees where the blocks
 * are (updating look[] and *prefix) and makes their slots recent.
 */
static int hbm_ready(struct replay *rp, uint32_t *prefix)
{
	struct replay_stats *st = &rp->st;
	struct kvtier_prefetch_args a = { 0 };
	struct kvtier_completion c;
	uint32_t n = *prefix, miss = 0, nvme = 0, i;
	uint64_t t0;
	int ret;

	for (i = 0; i < n; i++) {
		if (rp->look[i].tier == KVTIER_TIER_HBM)
			continue;
		miss++;
		nvme += rp->look[i].tier == KVTIER_TIER_NVME;
	}
	st->hbm_prefix_blocks += n;
	st->hbm_hit_blocks += n - miss;
	if (miss) {
		t0 = now_ns();
		for (i = 0; i < n; i++)
			kvtier_hint_set(&rp->hints[i], &rp->keys[i]);
		a.group = HBM_GROUP_BASE + ++rp->hbm_groups;
		a.deadline_ns = t0;
		a.priority = KVTIER_PRIO_MAX;
		a.tier = KVTIER_TIER_HBM;
		ret = kvtier_prefetch(rp->pool, rp->hints, n, &a, NULL, NULL);
		if (!ret)
			ret = kvtier_wait_group(rp->pool, a.group, &c, HBM_WAIT_MS);
		if (ret == -ETIMEDOUT)
			kvtier_cancel(rp->pool, a.group, 0, NULL);
		if (ret)
			return ret;
		/* The accelerator would wait for these: the stall. */
		st->hbm_stall_ns += now_ns() - t0;
		st->hbm_from_dram += miss - nvme;
		st->hbm_from_nvme += nvme;
	}
	ret = kvtier_lookup(rp->pool, rp->look, n, KVTIER_LOOKUP_TOUCH, prefix);
	if (ret)
		return ret;
	for (i = 0; i < *prefix; i++)
		st->hbm_short += rp->look[i].tier != KVTIER_TIER_HBM;
	return 0;
}

/*
 * Blocks a request computed are made on the device: a runtime keeps them in
 * HBM (ADOPT). The model PUTs them, then stages them into HBM at once, not
 * waited for; io[0..n) are the PUT entries.
 */
static int hbm_computed(struct replay *rp, uint32_t n)
{
	struct kvtier_prefetch_args a = { 0 };
	struct kvtier_completion c[64];
	uint32_t i, k = 0;
	int ret;

	if (!rp->hbm_on)
		return 0;
	for (i = 0; i < n; i++) {
		if (rp->io[i].status)
			continue;
		memset(&rp->hints[k], 0, sizeof(rp->hints[k]));
		memcpy(rp->hints[k].key, rp->io[i].key, sizeof(rp->hints[k].key));
		k++;
	}
	if (!k)
		return 0;
	a.group = HBM_GROUP_BASE + ++rp->hbm_groups;
	a.tier = KVTIER_TIER_HBM;
	ret = kvtier_prefetch(rp->pool, rp->hints, k, &a, NULL, NULL);
	if (ret == -EAGAIN)
		ret = 0;	/* too many groups live: go without */
	/* Without hints nobody else reads completions: these are ours. */
	if (!ret && !rp->o->hints) {
		int got;

		do
			got = kvtier_completions(rp->pool, c, 64, 0);
		while (got == 64);
		ret = got < 0 ? got : 0;
	}
	return ret;
}

/*
 * --layers: the model computes the request layer by layer while the prefix,
 * look[0..prefix), arrives a layer at a time (layerwise_load()): the stall
 * is the waits for layers, the compute happens meanwhile. Blocks only on
 * NVMe stay there. Fills io[0..prefix) statuses as a GET would have.
 * Return: the usable prefix, or -errno.
 */
static int replay_layers(struct replay *rp, const struct request *r,
			 uint32_t prefix, uint32_t nio)
{
	struct replay_stats *st = &rp->st;
	uint64_t c = request_compute_ns(r, rp->o->compute_ns_per_token);
	struct layerwise lr;
	uint32_t i;
	int ret;

	if (prefix > rp->lw_cap) {
		layerwise_free(rp->lw);
		rp->lw = NULL;
		rp->lw_cap = 0;
		ret = layerwise_new(rp->cap, rp->o->layers, &rp->lw);
		if (ret)
			return ret;
		rp->lw_cap = rp->cap;
	}
	for (i = 0; i < prefix; i++)
		rp->bufs[i] = slot_buf(rp, i);
	ret = layerwise_load(rp->lw, rp->pool, rp->keys, rp->bufs, prefix,
			     rp->o->block_bytes, c / rp->o->layers, &lr);
	if (ret)
		return ret;
	st->stall_ns += lr.stall_ns;
	st->stall_blocks += nio;
	st->compute_ns += lr.compute_ns;
	st->verify_errors += lr.bad;
	for (i = 0; i < prefix; i++)
		rp->io[i].status = i < lr.usable ? 0 : -ENOENT;
	return lr.usable;
}

static int replay_one(struct replay *rp, const struct request *r)
{
	struct replay_stats *st = &rp->st;
	uint64_t bs = rp->o->block_bytes;
	uint32_t n = r->n, prefix = 0, pinned = 0, usable, nio, i;
	int layered = rp->o->layers && rp->o->compute_ns_per_token > 0;
	int ret;

	ret = replay_reserve(rp, n ? n : 1);
	if (ret)
		return ret;
	kvtier_key_chain_n(NULL, r->ids, n, rp->keys);
	ret = trace_account(&st->trace, r, rp->keys);
	if (ret || !n)
		return ret;
	for (i = 0; i < n; i++)
		kvtier_block_set(&rp->look[i], &rp->keys[i], NULL);

	/* 1. How much of the chain is resident, and in which tier? */
	ret = kvtier_lookup(rp->pool, rp->look, n, 0, &prefix);
	if (ret)
		return ret;
	/* 1a. With an HBM tier, the prefix must be there before compute. */
	if (rp->hbm_on && prefix) {
		ret = hbm_ready(rp, &prefix);
		if (ret)
			return ret;
	}
	for (i = 0, nio = 0; i < prefix; i++) {
		rp->on_nvme[i] = rp->look[i].tier == KVTIER_TIER_NVME;
		nio += rp->on_nvme[i];
	}

	/*
	 * 1'. Or, when some of the prefix is on NVMe, compute it layer by
	 * layer while the prefix arrives.
	 */
	if (layered && nio) {
		ret = replay_layers(rp, r, prefix, nio);
		if (ret < 0)
			return ret;
		usable = ret;
		for (i = 0; i < usable; i++) {
			st->gets++;
			st->hit_nvme += rp->on_nvme[i];
			if (check_block(slot_buf(rp, i), bs, &rp->keys[i],
					rp->o->verify_full))
				st->verify_errors++;
		}
		st->get_lost += usable < prefix;
		st->hit_blocks += usable;
		st->tokens_avoided += prefix_tokens(usable, r->input_length);
		goto computed;
	}

	/* 1b. Promote the part of the prefix on NVMe, its reads all at once. */
	if (nio) {
		uint64_t t0 = now_ns();
		uint32_t loaded;

		ret = kvtier_lookup(rp->pool, rp->look, prefix,
				    KVTIER_LOOKUP_LOAD, &loaded);
		if (ret)
			return ret;
		/* The accelerator would wait for these: the stall. */
		st->stall_ns += now_ns() - t0;
		st->stall_blocks += nio;
		st->load_lost += prefix - loaded;
		prefix = loaded;
	}

	/* 2. Pin the prefix so this request's own PUTs cannot evict it. */
	if (prefix) {
		ret = kvtier_pin(rp->pool, rp->look, prefix, 0, &pinned);
		if (ret)
			return ret;
		st->pin_failed += prefix - pinned;
	}

	/* 3. GET the prefix; it stays usable up to the first failure. */
	usable = 0;
	if (prefix) {
		for (i = 0; i < prefix; i++)
			kvtier_block_set(&rp->io[i], &rp->keys[i], slot_buf(rp, i));
		ret = kvtier_get(rp->pool, rp->io, prefix, 0, NULL);
		if (ret)
			return ret;
		for (i = 0; i < prefix; i++) {
			if (rp->io[i].status) {
				if (rp->io[i].status == -ENOENT)
					st->get_lost++;
				else
					st->verify_errors++;
				break;
			}
			st->gets++;
			st->hit_nvme += rp->on_nvme[i];
			if (check_block(slot_buf(rp, i), bs, &rp->keys[i],
					rp->o->verify_full))
				st->verify_errors++;
		}
		usable = i;
	}

	/* The same blocks through the mapping: one word a page. */
	for (i = 0; rp->map && i < usable; i++) {
		const void *p = rp->look[i].status ? NULL :
				kvtier_block_ptr(rp->map, rp->look[i].addr);

		if (!p) {
			st->verify_errors++;
			continue;
		}
		st->mmap_checked++;
		if (check_block(p, bs, &rp->keys[i], 0))
			st->verify_errors++;
	}
	st->hit_blocks += usable;
	st->tokens_avoided += prefix_tokens(usable, r->input_length);

	/* The modeled prefill: the kernel stages hinted blocks meanwhile. */
	if (rp->o->compute_ns_per_token > 0) {
		uint64_t c = request_compute_ns(r, rp->o->compute_ns_per_token);

		sleep_ns(c);
		st->compute_ns += c;
	}
computed:
	/*
	 * Blocks read layer by layer stayed on NVMe: promote them for the
	 * requests after (a runtime does it in the background; it is not
	 * a stall), as the whole loads of 1b did.
	 */
	if (layered && nio && usable) {
		ret = kvtier_lookup(rp->pool, rp->look, usable,
				    KVTIER_LOOKUP_LOAD, NULL);
		if (ret)
			return ret;
	}

	/* 4. PUT what was not resident: "prefill" computed these blocks. */
	nio = 0;
	for (i = usable; i < n; i++) {
		if (i < prefix ? rp->io[i].status != -ENOENT : !rp->look[i].status)
			continue;	/* resident, just not usable */
		fill_block(slot_buf(rp, nio), bs, &rp->keys[i]);
		kvtier_block_set(&rp->io[nio], &rp->keys[i], slot_buf(rp, nio));
		nio++;
	}
	if (nio) {
		ret = kvtier_put(rp->pool, rp->io, nio, 0, NULL);
		if (ret)
			return ret;
		ret = hbm_computed(rp, nio);
		if (ret)
			return ret;
		for (i = 0; i < nio; i++) {
			switch (rp->io[i].status) {
			case 0:
				st->puts++;
				break;
			case -EEXIST:
				st->put_exists++;
				break;
			case -ENOSPC:
				st->put_nospc++;
				break;
			default:
				st->put_failed++;
			}
		}
	}

	/* 5. Done with the prefix. */
	if (pinned) {
		ret = kvtier_unpin(rp->pool, rp->look, prefix, 0, NULL);
		if (ret)
			return ret;
	}
	return 0;
}

void row(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("  %-34s ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / b : 0;
}

/* The NVMe tier's rows: residency is in the tier loop, this is traffic. */
static void print_nvme_rows(struct replay *rp, const struct kvtier_pool_stat *ps)
{
	const struct kvtier_nvme_stat *n0 = &rp->ns0;
	struct kvtier_nvme_stat n1;
	char b1[32], b2[32];

	row("prefix hit blocks from DRAM / NVMe", "%llu / %llu",
	    (unsigned long long)(rp->st.hit_blocks - rp->st.hit_nvme),
	    (unsigned long long)rp->st.hit_nvme);
	if (rp->st.load_lost)
		row("on NVMe at LOOKUP, not loaded", "%llu",
		    (unsigned long long)rp->st.load_lost);
	row("demotions / promotions (blocks)", "%llu / %llu",
	    (unsigned long long)ps->demotions,
	    (unsigned long long)ps->promotions);
	row("bytes DRAM->NVMe / NVMe->DRAM", "%s / %s",
	    human_bytes((double)ps->demotions * ps->block_size, b1, sizeof(b1)),
	    human_bytes((double)ps->promotions * ps->block_size, b2, sizeof(b2)));
	row("dirty blocks / bad reads", "%llu / %llu",
	    (unsigned long long)ps->dirty, (unsigned long long)ps->bad_reads);
	if (kvtier_nvme_stat(rp->ctx, &n1) || !n1.attached)
		return;
	row("device bytes written / read", "%s / %s  (host WAF %.3f)",
	    human_bytes(n1.bytes_written - n0->bytes_written, b1, sizeof(b1)),
	    human_bytes(n1.bytes_read - n0->bytes_read, b2, sizeof(b2)),
	    ratio(n1.bytes_written - n0->bytes_written,
		  n1.bytes_demoted - n0->bytes_demoted));
	row("device regions used / reclaimed", "%u of %u / %llu",
	    n1.nr_regions - n1.free_regions, n1.nr_regions,
	    (unsigned long long)(n1.reclaimed - n0->reclaimed));
	if (n1.lost_blocks != n0->lost_blocks || n1.io_errors != n0->io_errors)
		row("blocks lost to reclaim / I/O errors", "%llu / %llu",
		    (unsigned long long)(n1.lost_blocks - n0->lost_blocks),
		    (unsigned long long)(n1.io_errors - n0->io_errors));
}

/* The HBM tier's rows: residency is in the tier loop, this is traffic. */
static void print_hbm_rows(struct replay *rp, const struct kvtier_pool_stat *ps)
{
	const struct replay_stats *st = &rp->st;
	const struct kvtier_hbm_stat *h = &st->hbm;
	char b1[32], b2[32];

	row("HBM slots used / arena", "%u / %u  (backend %s)", h->used, h->slots,
	    h->backend == KVTIER_HBM_USER ? "user, memcpy mover" : "emul");
	row("bytes DRAM->HBM / HBM->DRAM", "%s / %s  (%llu / %llu blocks)",
	    human_bytes((double)h->to_dev * ps->block_size, b1, sizeof(b1)),
	    human_bytes((double)h->from_dev * ps->block_size, b2, sizeof(b2)),
	    (unsigned long long)h->to_dev, (unsigned long long)h->from_dev);
	row("HBM slots given back / copy errors", "%llu / %llu",
	    (unsigned long long)h->evictions,
	    (unsigned long long)h->copy_errors);
	if (h->timeouts || h->detached || rp->mover_err)
		row("HBM copy timeouts / detached / mover", "%llu / %llu / %s",
		    (unsigned long long)h->timeouts,
		    (unsigned long long)h->detached,
		    rp->mover_err ? strerror(-rp->mover_err) : "ok");
	row("prefix blocks in HBM at start", "%llu of %llu  (%.3f)",
	    (unsigned long long)st->hbm_hit_blocks,
	    (unsigned long long)st->hbm_prefix_blocks,
	    ratio(st->hbm_hit_blocks, st->hbm_prefix_blocks));
	row("stall (prefix into HBM)", "%.3f s for %llu blocks  (%llu from DRAM, %llu from NVMe)",
	    st->hbm_stall_ns / 1e9,
	    (unsigned long long)(st->hbm_from_dram + st->hbm_from_nvme),
	    (unsigned long long)st->hbm_from_dram,
	    (unsigned long long)st->hbm_from_nvme);
	if (st->hbm_short)
		row("prefix blocks not in HBM after it", "%llu",
		    (unsigned long long)st->hbm_short);
}

static void print_table(struct replay *rp, const struct kvtier_pool_stat *ps)
{
	const struct replay_stats *st = &rp->st;
	const struct trace_stats *ts = &st->trace;
	double secs = st->elapsed_ns / 1e9;
	char b1[32], b2[32];
	unsigned int t;

	printf("\n");
	row("requests", "%llu", (unsigned long long)ts->requests);
	row("blocks (512 tokens each)", "%llu", (unsigned long long)ts->blocks);
	row("unique blocks", "%llu", (unsigned long long)ts->unique_blocks);
	row("prefix hit blocks", "%llu", (unsigned long long)st->hit_blocks);
	row("prefix hit ratio", "%.3f  (infinite cache: %.3f)",
	    ratio(st->hit_blocks, ts->blocks),
	    ratio(ts->hit_blocks, ts->blocks));
	row("prompt tokens", "%llu", (unsigned long long)ts->tokens);
	row("prefill tokens avoided", "%llu  (%.1f%%; infinite cache: %.1f%%)",
	    (unsigned long long)st->tokens_avoided,
	    100 * ratio(st->tokens_avoided, ts->tokens),
	    100 * ratio(ts->tokens_avoided, ts->tokens));
	row("GET blocks / PUT blocks", "%llu / %llu",
	    (unsigned long long)st->gets, (unsigned long long)st->puts);
	row("PUT -EEXIST / -ENOSPC / other", "%llu / %llu / %llu",
	    (unsigned long long)st->put_exists,
	    (unsigned long long)st->put_nospc,
	    (unsigned long long)st->put_failed);
	if (st->get_lost || st->pin_failed)
		row("lost between LOOKUP and GET/PIN", "%llu / %llu",
		    (unsigned long long)st->get_lost,
		    (unsigned long long)st->pin_failed);
	for (t = KVTIER_TIER_HBM; t < KVTIER_NR_TIERS; t++) {
		char name[64];

		snprintf(name, sizeof(name), "bytes in %s (resident blocks)",
			 kvtier_tier_name(t));
		row(name, "%s  (%llu)",
		    human_bytes((double)ps->resident[t] * ps->block_size,
				b1, sizeof(b1)),
		    (unsigned long long)ps->resident[t]);
	}
	if (rp->hbm_on)
		print_hbm_rows(rp, ps);
	row(rp->nvme_on ? "evictions (DRAM copies dropped)" : "evictions", "%llu",
	    (unsigned long long)ps->evictions);
	if (rp->nvme_on)
		print_nvme_rows(rp, ps);
	row("pool gets/hits/misses (kernel)", "%llu / %llu / %llu",
	    (unsigned long long)ps->gets, (unsigned long long)ps->hits,
	    (unsigned long long)ps->misses);
	row("bytes in / out (kernel)", "%s / %s",
	    human_bytes(ps->bytes_in, b1, sizeof(b1)),
	    human_bytes(ps->bytes_out, b2, sizeof(b2)));
	row("blocks checked through mmap", "%llu",
	    (unsigned long long)st->mmap_checked);
	if (st->compute_ns) {
		row("modeled compute", "%.2f s", st->compute_ns / 1e9);
		row("stall (prefix loads from NVMe)", "%.3f s for %llu blocks",
		    st->stall_ns / 1e9, (unsigned long long)st->stall_blocks);
	}
	if (st->hints.groups) {
		row("prefetch groups / hints", "%llu / %llu  (%llu named no block)",
		    (unsigned long long)st->hints.groups,
		    (unsigned long long)st->hints.hints,
		    (unsigned long long)st->hints.dropped);
		row("hinted blocks ready by deadline", "%llu of %llu  (%.3f)",
		    (unsigned long long)st->hints.on_time_blocks,
		    (unsigned long long)st->hints.need_blocks,
		    ratio(st->hints.on_time_blocks, st->hints.need_blocks));
		row("prefetch reads / unused", "%llu / %llu",
		    (unsigned long long)st->pf_issued,
		    (unsigned long long)st->pf_wasted);
	}
	row("verify errors", "%llu", (unsigned long long)st->verify_errors);
	row("elapsed", "%.2f s  (%.0f requests/s, %.0f blocks/s)", secs,
	    secs > 0 ? ts->requests / secs : 0, secs > 0 ? ts->blocks / secs : 0);
}

/* The requests: a trace file, or the generator. Returns an exit status. */
static int open_input(const struct replay_opts *o, struct trace **tr,
		      struct gen **g)
{
	int ret;

	*tr = NULL;
	*g = NULL;
	if (o->trace) {
		ret = trace_open(o->trace, tr);
		if (ret) {
			fprintf(stderr, "%s: %s: %s\n", prog, o->trace, strerror(-ret));
			return 1;
		}
		return 0;
	}
	ret = gen_new(&o->gen, g);
	if (ret) {
		fprintf(stderr, "%s: generator: %s\n", prog, strerror(-ret));
		return EXIT_USAGE;
	}
	return 0;
}

/* 1: a request, 0: no more, -1: an error (reported). */
static int next_request(const struct replay_opts *o, struct trace *tr,
			struct gen *g, struct request *req)
{
	int ret = tr ? trace_next(tr, req) : gen_next(g, req);

	if (ret >= 0)
		return ret;
	if (tr && ret == -EINVAL)
		fprintf(stderr, "%s: %s:%llu: not a trace line\n", prog,
			o->trace, (unsigned long long)trace_lineno(tr));
	else
		fprintf(stderr, "%s: reading requests: %s\n", prog, strerror(-ret));
	return -1;
}

/* The request source of the runtime model's queue. */
struct source {
	const struct replay_opts *o;
	struct trace *tr;
	struct gen *g;
	uint64_t taken;
};

static int source_next(void *arg, struct request *r)
{
	struct source *s = arg;
	int ret;

	if (s->o->max_requests && s->taken >= s->o->max_requests)
		return 0;
	ret = next_request(s->o, s->tr, s->g, r);
	if (ret < 0)
		return -EIO;	/* reported */
	s->taken += ret;
	return ret;
}

/* A prefetch counter of /sys/kernel/kvtier/prefetch, 0 if none. */
static uint64_t prefetch_counter(const char *name)
{
	char line[128], key[64];
	unsigned long long v, found = 0;
	FILE *f = fopen("/sys/kernel/kvtier/prefetch", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %llu", key, &v) == 2 && !strcmp(key, name))
			found = v;
	fclose(f);
	return found;
}

/*
 * Blocks the window's hints may name at once (0: no bound). An HBM arena's
 * LRU gives back the slots staged first, for the requests due first, when
 * later hints stage more than it holds: by default hint no more than 3/8
 * of it; the rest holds what the requests compute and what they use while
 * the next ones stage. Alternating in one VM, 64 slots, three pairs of
 * runs: a budget of 24 stalled 0.024, 0.039, 0.025 of the unhinted run,
 * one of 32 (half) 0.070, 0.048, 0.076; 16 and 48 did worse still.
 */
static uint32_t hint_budget(const struct replay_opts *o, int hbm)
{
	if (o->hint_budget != ~0U)
		return o->hint_budget;
	return hbm ? o->hbm_slots * 3 / 8 : 0;
}

/*
 * The runtime model: requests served one at a time with modeled compute,
 * hints (if any) sent for the window of queued requests. 0, 1 on an error
 * (reported).
 */
static int replay_runtime(struct replay *rp, struct trace *tr, struct gen *g)
{
	struct replay_opts *o = rp->o;
	struct source src = { .o = o, .tr = tr, .g = g };
	uint64_t issued0 = prefetch_counter("issued");
	uint64_t wasted0 = prefetch_counter("wasted");
	struct lookahead *la;
	struct request *r;
	uint32_t batch_max = kvtier_pool_capacity(rp->pool);
	uint64_t stall0;
	int ret, err = 0;

	if (batch_max > KVTIER_BATCH_MAX)
		batch_max = KVTIER_BATCH_MAX;
	ret = lookahead_new(o->hints, o->hints ? o->background : 0, &la);
	if (ret) {
		fprintf(stderr, "%s: %s\n", prog, strerror(-ret));
		return 1;
	}
	if (rp->hbm_on)
		lookahead_set_tier(la, KVTIER_TIER_HBM);
	lookahead_set_budget(la, hint_budget(o, rp->hbm_on));
	while (!stop) {
		ret = lookahead_next(la, source_next, &src, &r);
		if (ret <= 0) {
			err = ret < 0;
			break;
		}
		if (o->hints) {
			ret = lookahead_hint(la, rp->pool, o->compute_ns_per_token,
					     batch_max);
			if (!ret)
				ret = lookahead_drain(la, rp->pool, 0);
			if (ret) {
				fprintf(stderr, "%s: prefetch: %s\n", prog,
					strerror(-ret));
				err = 1;
				break;
			}
		}
		stall0 = rp->st.stall_ns + rp->st.hbm_stall_ns;
		ret = replay_one(rp, r);
		if (ret) {
			fprintf(stderr, "%s: request %llu: %s\n", prog,
				(unsigned long long)rp->st.trace.requests,
				strerror(-ret));
			err = 1;
			break;
		}
		lookahead_stalled(la, rp->st.stall_ns + rp->st.hbm_stall_ns -
				  stall0);
		if (o->progress && rp->st.trace.requests % o->progress == 0)
			fprintf(stderr, "%s: %llu requests, stall %.2f s\n", prog,
				(unsigned long long)rp->st.trace.requests,
				rp->st.stall_ns / 1e9);
	}
	if (o->hints && !lookahead_drain(la, rp->pool, 5000))
		rp->st.hints = *lookahead_stats(la);
	rp->st.pf_issued = prefetch_counter("issued") - issued0;
	rp->st.pf_wasted = prefetch_counter("wasted") - wasted0;
	lookahead_free(la);
	return err;
}

/* What the HBM tier is, and what a copy costs next to the modeled compute. */
static void print_hbm_header(struct replay *rp, uint64_t bs)
{
	const struct replay_opts *o = rp->o;
	char b1[32], b2[32];

	printf("HBM tier: %u slots of %s (%s), backend %s\n", o->hbm_slots,
	       human_bytes(bs, b1, sizeof(b1)),
	       human_bytes((double)o->hbm_slots * bs, b2, sizeof(b2)),
	       o->hbm_backend == KVTIER_HBM_USER ?
	       "user (malloc'ed arena, libkvtier's memcpy mover in a thread)" :
	       "emul (the module's emulated device)");
	if (o->hbm_backend != KVTIER_HBM_EMUL)
		return;
	if (rp->gbps_old < 0 || o->hbm_gbps <= 0) {
		printf("  emulated link at memcpy speed (hbm_emul_gbps %s)\n",
		       rp->gbps_old < 0 ? "not set" : "0");
		return;
	}
	printf("  emulated link held to %d GB/s (hbm_emul_gbps): a block takes %.0f us per copy",
	       o->hbm_gbps, bs / (o->hbm_gbps * 1e3));
	if (o->compute_ns_per_token > 0)
		printf(", %.1f%% of the %.2f ms its %u tokens compute",
		       100 * (bs / (o->hbm_gbps * 1e3)) /
		       (o->compute_ns_per_token * DEMO_BLOCK_TOKENS / 1e3),
		       o->compute_ns_per_token * DEMO_BLOCK_TOKENS / 1e6,
		       DEMO_BLOCK_TOKENS);
	printf("\n");
}

/* Replay every request of @tr or @g through the pool in @rp; print the table. */
static int replay_all(struct replay *rp, struct trace *tr, struct gen *g)
{
	struct replay_opts *o = rp->o;
	struct kvtier_pool_stat ps;
	struct request req = { 0 };
	char b1[32], b2[32];
	int ret, err = 0;
	uint64_t t0;

	ret = kvtier_stat(rp->pool, &ps);
	if (ret) {
		fprintf(stderr, "%s: stat: %s\n", prog, strerror(-ret));
		return 1;
	}
	if (o->use_mmap) {
		ret = kvtier_map(rp->pool, 0, 0, &rp->map);
		if (ret) {
			fprintf(stderr, "%s: mmap: %s\n", prog, strerror(-ret));
			return 1;
		}
	}

	printf("kvtier-demo: replaying %s\n", o->trace ? o->trace : "the built-in generator");
	if (!o->trace)
		printf("  (%llu requests, %u system prompts, up to %u turns, %u sessions, seed %llu)\n",
		       (unsigned long long)o->gen.requests, o->gen.system_prompts,
		       o->gen.turns, o->gen.sessions,
		       (unsigned long long)o->gen.seed);
	printf("pool %s: block %s standing for %u tokens, capacity %u blocks, DRAM %u blocks (%s), node %d\n",
	       o->pool, human_bytes(ps.block_size, b1, sizeof(b1)),
	       DEMO_BLOCK_TOKENS, ps.capacity, ps.dram_blocks,
	       human_bytes((double)ps.dram_blocks * ps.block_size, b2, sizeof(b2)),
	       ps.numa_node);
	if (rp->nvme_on) {
		kvtier_nvme_stat(rp->ctx, &rp->ns0);
		printf("NVMe tier: %s%s, %u regions of %s, %u free\n",
		       rp->nvme_ours ? o->nvme : "attached before the demo",
		       rp->nvme_ours ? " (attached by the demo)" : "",
		       rp->ns0.nr_regions,
		       human_bytes(rp->ns0.region_bytes, b1, sizeof(b1)),
		       rp->ns0.free_regions);
	}

	if (rp->hbm_on)
		print_hbm_header(rp, ps.block_size);

	t0 = now_ns();
	if (o->compute_ns_per_token > 0 || o->hints) {
		printf("runtime model: %.1f us of compute per input token, %s\n",
		       o->compute_ns_per_token / 1000,
		       o->hints ? "hints for the current request and the next ones" :
				  "no hints");
		if (rp->hbm_on)
			printf("  (a request computes once its prefix is in HBM, and the blocks it\n"
			       "   computed are staged into HBM after their PUT, as made on the device;\n"
			       "   hints stage into HBM)\n");
		if (o->hints)
			printf("  (a window of %u queued requests, their hints naming at most %u blocks at once; 0: no bound)\n",
			       o->hints, hint_budget(o, rp->hbm_on));
		err = replay_runtime(rp, tr, g);
	}
	while (!err && !(o->compute_ns_per_token > 0 || o->hints) && !stop &&
	       (!o->max_requests || rp->st.trace.requests < o->max_requests)) {
		ret = next_request(o, tr, g, &req);
		if (ret <= 0) {
			err = ret < 0;
			break;
		}
		ret = replay_one(rp, &req);
		if (ret) {
			fprintf(stderr, "%s: request %llu: %s\n", prog,
				(unsigned long long)rp->st.trace.requests, strerror(-ret));
			err = 1;
			break;
		}
		if (o->progress && rp->st.trace.requests % o->progress == 0)
			fprintf(stderr, "%s: %llu requests, hit ratio %.3f, %.1f s\n",
				prog, (unsigned long long)rp->st.trace.requests,
				ratio(rp->st.hit_blocks, rp->st.trace.blocks),
				(now_ns() - t0) / 1e9);
	}
	rp->st.elapsed_ns = now_ns() - t0;
	request_free(&req);
	if (stop) {
		fprintf(stderr, "%s: interrupted\n", prog);
		err = 1;
	}

	ret = kvtier_stat(rp->pool, &ps);
	if (!ret && rp->hbm_on)
		ret = kvtier_hbm_stat(rp->pool, &rp->st.hbm);
	if (ret) {
		fprintf(stderr, "%s: stat: %s\n", prog, strerror(-ret));
		return 1;
	}
	print_table(rp, &ps);
	if (rp->st.verify_errors || rp->st.put_failed) {
		fprintf(stderr, "%s: FAILED: %llu verify errors, %llu failed PUTs\n",
			prog, (unsigned long long)rp->st.verify_errors,
			(unsigned long long)rp->st.put_failed);
		err = 1;
	}
	return err;
}

/*
 * Pools restored from the device that an earlier demo left behind (it was
 * killed before it could destroy them): kvtier-demo-PID with PID gone.
 */
static void destroy_stale_pools(struct kvtier_ctx *ctx)
{
	struct dirent *de;
	DIR *d = opendir(KVT_SYSFS_POOLS);
	int pid;

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (sscanf(de->d_name, "kvtier-demo-%d", &pid) != 1 || pid <= 0 ||
		    !kill(pid, 0) || errno != ESRCH)
			continue;
		if (!kvtier_pool_destroy(ctx, de->d_name))
			printf("destroyed pool %s, left on the device by an earlier demo\n",
			       de->d_name);
	}
	closedir(d);
}

/*
 * Attach the NVMe tier the options ask for, or find one attached. Returns an
 * exit status: 0 to go on (with rp->nvme_on telling whether there is a
 * tier), else a failure that was reported. A failure on the default device
 * only costs the tier; on a device the user named, it ends the demo.
 */
static int nvme_setup(struct replay *rp, const struct kvtier_api *api)
{
	struct replay_opts *o = rp->o;
	struct kvtier_nvme_stat ns;
	uint32_t flags = o->nvme_format ? KVTIER_NVME_FORMAT : 0;
	int ret;

	if (!o->nvme)
		return 0;
	if (!(api->supported & KVTIER_F_NVME)) {
		fprintf(stderr, "%s: the kernel has no NVMe tier\n", prog);
		return o->nvme_explicit;
	}
	if (!kvtier_nvme_stat(rp->ctx, &ns) && ns.attached) {
		if (o->nvme_explicit || o->nvme_format)
			printf("note: an NVMe tier is attached already; using it, not %s\n",
			       o->nvme);
		rp->nvme_on = 1;
		return 0;
	}
	if (!o->nvme_explicit) {
		if (access(o->nvme, F_OK))
			return 0;	/* no drive, no tier */
		if (!blockdev_is_vm_drive(o->nvme)) {
			printf("note: %s is not a kvtier-vm drive: replaying without NVMe (--nvme %s to use it)\n",
			       o->nvme, o->nvme);
			return 0;
		}
	}

	ret = kvtier_nvme_attach(rp->ctx, o->nvme, flags, 0);
	if (ret == -EMEDIUMTYPE && !o->nvme_explicit) {
		/* The VM's scratch drive, with something else on it. */
		printf("note: %s holds no kvtier store; formatting the VM's scratch drive\n",
		       o->nvme);
		ret = kvtier_nvme_attach(rp->ctx, o->nvme, KVTIER_NVME_FORMAT,
					 0);
	}
	if (ret) {
		fprintf(stderr, "%s: attach %s: %s%s\n", prog, o->nvme,
			strerror(-ret),
			ret == -EMEDIUMTYPE ? " (it holds no kvtier store; --nvme-format overwrites it)" :
			ret == -EPERM ? " (needs root)" :
			ret == -EBUSY ? " (in use)" : "");
		if (o->nvme_explicit)
			return 1;
		printf("note: replaying without NVMe\n");
		return 0;
	}
	rp->nvme_on = 1;
	rp->nvme_ours = 1;
	destroy_stale_pools(rp->ctx);
	return 0;
}

static int read_param(const char *path)
{
	FILE *f = fopen(path, "r");
	int v = -1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static int write_param(const char *path, int v)
{
	FILE *f = fopen(path, "w");
	int ret = 0;

	if (!f)
		return -errno;
	if (fprintf(f, "%d\n", v) < 0)
		ret = -EIO;
	if (fclose(f))
		ret = -errno;
	return ret;
}

/* The user backend's mover: the copies the kernel posts, until told to stop. */
static void *mover_loop(void *arg)
{
	struct replay *rp = arg;
	int ret;

	while (!__atomic_load_n(&rp->mover_stop, __ATOMIC_ACQUIRE)) {
		ret = kvtier_mover_run(rp->mover, 50);
		if (ret == -EPIPE)
			break;		/* detached */
		if (ret < 0) {
			rp->mover_err = ret;
			break;
		}
	}
	return NULL;
}

/* The HBM tier the options ask for. Returns an exit status (reported). */
static int hbm_setup(struct replay *rp, const struct kvtier_api *api)
{
	struct replay_opts *o = rp->o;
	size_t bytes = (size_t)o->hbm_slots * o->block_bytes;
	int ret, mfd = -1;

	rp->gbps_old = -1;
	if (!o->hbm_slots)
		return 0;
	if (!(api->supported & KVTIER_F_HBM)) {
		fprintf(stderr, "%s: the kernel has no HBM tier\n", prog);
		return 1;
	}
	if (o->hbm_backend == KVTIER_HBM_EMUL && o->hbm_gbps >= 0) {
		int old = read_param(HBM_GBPS_PARAM);

		ret = old < 0 ? -ENOENT : write_param(HBM_GBPS_PARAM, o->hbm_gbps);
		if (ret)
			printf("note: cannot set %s: %s; the link is as it was\n",
			       HBM_GBPS_PARAM, strerror(-ret));
		else
			rp->gbps_old = old;
	}
	ret = kvtier_hbm_attach(rp->pool, o->hbm_backend, o->hbm_slots,
				o->hbm_backend == KVTIER_HBM_USER ?
				&mfd : NULL);
	if (ret) {
		fprintf(stderr, "%s: HBM tier of %u slots: %s%s\n", prog,
			o->hbm_slots, strerror(-ret),
			ret == -ENOSPC ? " (more than hbm_emul_mb)" : "");
		return 1;
	}
	rp->hbm_on = 1;
	if (o->hbm_backend != KVTIER_HBM_USER)
		return 0;
	if (posix_memalign(&rp->arena, PAGE, bytes)) {
		close(mfd);
		fprintf(stderr, "%s: HBM arena: %s\n", prog, strerror(ENOMEM));
		return 1;
	}
	memset(rp->arena, 0, bytes);	/* no page faults in the copies */
	ret = kvtier_mover_open(rp->pool, mfd, kvtier_mover_memcpy, rp->arena,
				&rp->mover);
	if (!ret)
		ret = -pthread_create(&rp->mover_thread, NULL, mover_loop, rp);
	if (ret) {
		fprintf(stderr, "%s: HBM mover: %s\n", prog, strerror(-ret));
		return 1;
	}
	rp->mover_running = 1;
	return 0;
}

static void hbm_teardown(struct replay *rp)
{
	if (rp->mover_running) {
		__atomic_store_n(&rp->mover_stop, 1, __ATOMIC_RELEASE);
		pthread_join(rp->mover_thread, NULL);
		rp->mover_running = 0;
	}
	kvtier_mover_close(rp->mover);	/* detaches the arena */
	rp->mover = NULL;
	free(rp->arena);
	rp->arena = NULL;
	if (rp->gbps_old >= 0)
		write_param(HBM_GBPS_PARAM, rp->gbps_old);
	rp->gbps_old = -1;
}

static int cmd_replay(struct replay_opts *o, struct replay_stats *out)
{
	struct kvtier_pool_params pp;
	struct replay rp = { .o = o };
	struct kvtier_api api;
	struct trace *tr = NULL;
	struct gen *g = NULL;
	struct kvtier_ctx *ctx;
	uint32_t parts;
	int ret, rc;

	rc = open_input(o, &tr, &g);
	if (rc)
		return rc;

	ret = kvtier_open(&ctx, KVTIER_FEATURES_ALL);
	if (ret) {
		fprintf(stderr, "%s: /dev/kvtier: %s\n", prog, strerror(-ret));
		rc = 1;
		goto out_close_input;
	}
	kvtier_api_info(ctx, &api);
	if (!(api.features & KVTIER_F_POOLS)) {
		fprintf(stderr, "%s: the kernel does not offer pools\n", prog);
		rc = 1;
		goto out_close_ctx;
	}
	if (!(api.features & KVTIER_F_MMAP))
		o->use_mmap = 0;

	rp.ctx = ctx;
	rc = nvme_setup(&rp, &api);
	if (rc)
		goto out_close_ctx;
	if (rp.nvme_on) {
		/* Addresses for the working set, DRAM for a part of it. */
		if (!o->dram_blocks) {
			o->dram_blocks = free_dram_budget(api.dram_bytes) / 2 / o->block_bytes;
			if (o->dram_blocks > DEFAULT_POOL_BLOCKS)
				o->dram_blocks = DEFAULT_POOL_BLOCKS;
			if (!o->dram_blocks)
				o->dram_blocks = 1;
		}
		if (!o->pool_blocks)
			o->pool_blocks = DEFAULT_NVME_POOL_BLOCKS > o->dram_blocks ?
					 DEFAULT_NVME_POOL_BLOCKS : o->dram_blocks;
	}
	if (!o->pool_blocks && o->dram_blocks)
		o->pool_blocks = o->dram_blocks;
	if (!o->pool_blocks) {
		o->pool_blocks = free_dram_budget(api.dram_bytes) / 2 / o->block_bytes;
		if (o->pool_blocks > DEFAULT_POOL_BLOCKS)
			o->pool_blocks = DEFAULT_POOL_BLOCKS;
		if (!o->pool_blocks)
			o->pool_blocks = 1;
	}
	if (o->pool_blocks > KVTIER_CAPACITY_MAX) {
		fprintf(stderr, "%s: --pool-blocks above %lu\n", prog,
			(unsigned long)KVTIER_CAPACITY_MAX);
		rc = EXIT_USAGE;
		goto out_detach;
	}
	if (!o->pool[0])
		snprintf(o->pool, sizeof(o->pool), "kvtier-demo-%d", (int)getpid());

	kvtier_pool_params_init(&pp, o->pool, o->block_bytes, o->pool_blocks);
	pp.dram_blocks = o->dram_blocks;
	pp.numa_node = o->node;
	parts = o->layers ? o->layers : o->compare_layers;
	if (parts && o->block_bytes % parts) {
		fprintf(stderr, "%s: %u layers do not divide --block-bytes %llu\n",
			prog, parts, (unsigned long long)o->block_bytes);
		rc = EXIT_USAGE;
		goto out_detach;
	}
	ret = kvtier_pool_create_parts(ctx, &pp, parts, &rp.pool);
	if (ret) {
		fprintf(stderr, "%s: create pool %s (block %llu B, %llu blocks): %s\n",
			prog, o->pool, (unsigned long long)o->block_bytes,
			(unsigned long long)o->pool_blocks, strerror(-ret));
		rc = 1;
		goto out_detach;
	}

	rc = hbm_setup(&rp, &api);
	if (!rc)
		rc = replay_all(&rp, tr, g);
	if (out)
		*out = rp.st;
	hbm_teardown(&rp);

	free(rp.st.trace.seen.slot);
	free(rp.keys);
	free(rp.look);
	free(rp.io);
	free(rp.on_nvme);
	free(rp.hints);
	free(rp.bufs);
	layerwise_free(rp.lw);
	kvtier_unmap(rp.map);
	kvtier_free_staging(rp.pool, rp.staging, rp.staging_size);
	kvtier_pool_close(rp.pool);
	ret = kvtier_pool_destroy(ctx, o->pool);
	if (ret) {
		fprintf(stderr, "%s: destroy pool %s: %s\n", prog, o->pool,
			strerror(-ret));
		rc = rc ? rc : 1;
	}
out_detach:
	if (rp.nvme_ours) {
		ret = kvtier_nvme_detach(ctx);
		if (ret) {
			fprintf(stderr, "%s: detach %s: %s\n", prog, o->nvme,
				strerror(-ret));
			rc = rc ? rc : 1;
		}
	}
out_close_ctx:
	kvtier_close(ctx);
out_close_input:
	gen_free(g);
	trace_close(tr);
	return rc;
}

/*
 * The same trace twice through the runtime model, on fresh pools, without
 * hints: loading each prefix whole before computing, then layer by layer
 * while computing (o->compare_layers layers a block).
 */
static int cmd_compare_layers(struct replay_opts *o)
{
	struct replay_stats whole, layered;
	int rc;

	if (!(o->compute_ns_per_token > 0))
		o->compute_ns_per_token = 20000;
	o->hints = 0;
	printf("==== whole prefixes, then compute ====\n");
	/* Pools with parts both times (cmd_replay()): only the load differs. */
	o->layers = 0;
	rc = cmd_replay(o, &whole);
	if (rc)
		return rc;
	o->layers = o->compare_layers;
	o->pool[0] = 0;
	printf("\n==== layer by layer, %u layers a block ====\n", o->layers);
	rc = cmd_replay(o, &layered);
	if (rc)
		return rc;
	printf("\n");
	printf("layers_stall_whole_s: %.3f\n", whole.stall_ns / 1e9);
	printf("layers_stall_layerwise_s: %.3f\n", layered.stall_ns / 1e9);
	printf("demo_layerwise_stall_vs_whole: %.3f\n",
	       ratio(layered.stall_ns, whole.stall_ns));
	printf("layers_stall_blocks: %llu / %llu\n",
	       (unsigned long long)whole.stall_blocks,
	       (unsigned long long)layered.stall_blocks);
	return 0;
}

/*
 * The same trace twice through the runtime model, on fresh pools: without
 * hints, then with a window of o->compare_hints; the figures compare them.
 */
static int cmd_compare(struct replay_opts *o)
{
	struct replay_stats plain, hinted;
	double needed;
	int rc;

	if (!(o->compute_ns_per_token > 0))
		o->compute_ns_per_token = 20000;
	o->hints = 0;
	printf("==== without hints ====\n");
	rc = cmd_replay(o, &plain);
	if (rc)
		return rc;
	o->hints = o->compare_hints;
	o->pool[0] = 0;
	printf("\n==== with hints, a window of %u requests ====\n", o->hints);
	rc = cmd_replay(o, &hinted);
	if (rc)
		return rc;

	/*
	 * What hiding every load takes, from the plain run: its loads over
	 * the time it was busy otherwise (compute, and the rest of each
	 * request: GETs, PUTs, checks), when a prefetch could run.
	 */
	needed = plain.elapsed_ns > plain.stall_ns ?
		 (double)plain.stall_blocks * o->block_bytes /
		 (plain.elapsed_ns - plain.stall_ns) : 0;
	printf("\n");
	if (o->hbm_slots)
		goto hbm;	/* the DRAM figures are those of a run without HBM */
	printf("prefetch_stall_unhinted_s: %.3f\n", plain.stall_ns / 1e9);
	printf("prefetch_stall_hinted_s: %.3f\n", hinted.stall_ns / 1e9);
	printf("stall_hinted_vs_unhinted: %.3f\n",
	       ratio(hinted.stall_ns, plain.stall_ns));
	printf("hinted_ready_by_deadline: %.3f\n",
	       ratio(hinted.hints.on_time_blocks, hinted.hints.need_blocks));
	printf("prefetch_wasted_share: %.3f\n",
	       ratio(hinted.pf_wasted, hinted.pf_issued));
	printf("prefetch_late_group_share: %.3f\n",
	       ratio(hinted.hints.late_groups, hinted.hints.need_groups));
	printf("prefetch_late_out_of_order: %llu\n",
	       (unsigned long long)hinted.hints.late_out_of_order);
	if (o->background)
		printf("prefetch_background_groups: %llu (%llu ended in full)\n",
		       (unsigned long long)hinted.hints.bg_groups,
		       (unsigned long long)hinted.hints.bg_done);
	printf("prefetch_needed_read_gbps: %.3f\n", needed);
	printf("prefetch_sync_read_gbps: %.3f\n",
	       plain.stall_ns ? (double)plain.stall_blocks * o->block_bytes /
				plain.stall_ns : 0);
	return 0;

hbm:
	/* The same, to HBM: the wait until a request's prefix is there. */
	printf("hbm_stall_unhinted_s: %.3f\n", plain.hbm_stall_ns / 1e9);
	printf("hbm_stall_hinted_s: %.3f\n", hinted.hbm_stall_ns / 1e9);
	printf("hbm_stall_hinted_vs_unhinted: %.3f\n",
	       ratio(hinted.hbm_stall_ns, plain.hbm_stall_ns));
	printf("hbm_hit_share: %.3f\n",
	       ratio(hinted.hbm_hit_blocks, hinted.hbm_prefix_blocks));
	printf("hbm_hit_share_unhinted: %.3f\n",
	       ratio(plain.hbm_hit_blocks, plain.hbm_prefix_blocks));
	if (o->hbm_backend == KVTIER_HBM_EMUL)
		printf("hbm_emul_gbps: %d\n", o->hbm_gbps);
	return 0;
}

/* The trace alone, no module needed: size and infinite-cache hit ratio. */
static int cmd_stats(struct replay_opts *o)
{
	struct trace_stats ts = { 0 };
	struct request req = { 0 };
	struct kvtier_key *keys = NULL;
	struct trace *tr;
	struct gen *g;
	uint32_t cap = 0;
	int ret, rc;

	rc = open_input(o, &tr, &g);
	if (rc)
		return rc;
	while (!o->max_requests || ts.requests < o->max_requests) {
		ret = next_request(o, tr, g, &req);
		if (ret <= 0) {
			rc = ret < 0;
			break;
		}
		if (req.n > cap) {
			struct kvtier_key *k;

			k = realloc(keys, req.n * sizeof(*k));
			if (!k) {
				rc = 1;
				break;
			}
			keys = k;
			cap = req.n;
		}
		kvtier_key_chain_n(NULL, req.ids, req.n, keys);
		if (trace_account(&ts, &req, keys)) {
			fprintf(stderr, "%s: out of memory\n", prog);
			rc = 1;
			break;
		}
	}
	printf("%s\n", o->trace ? o->trace : "the built-in generator");
	row("requests", "%llu", (unsigned long long)ts.requests);
	row("span", "%.1f s", ts.last_ms / 1e3);
	row("blocks (512 tokens each)", "%llu", (unsigned long long)ts.blocks);
	row("longest request", "%llu blocks", (unsigned long long)ts.max_blocks);
	row("unique blocks", "%llu", (unsigned long long)ts.unique_blocks);
	row("infinite-cache prefix hit ratio", "%.3f", ratio(ts.hit_blocks, ts.blocks));
	row("prompt tokens", "%llu", (unsigned long long)ts.tokens);
	row("infinite-cache tokens avoided", "%llu  (%.1f%%)",
	    (unsigned long long)ts.tokens_avoided,
	    100 * ratio(ts.tokens_avoided, ts.tokens));
	free(keys);
	free(ts.seen.slot);
	request_free(&req);
	gen_free(g);
	trace_close(tr);
	return rc;
}

static int cmd_gen(const struct gen_opts *o)
{
	struct request r = { 0 };
	struct gen *g;
	int ret;

	ret = gen_new(o, &g);
	if (ret) {
		fprintf(stderr, "%s: generator: %s\n", prog, strerror(-ret));
		return EXIT_USAGE;
	}
	while ((ret = gen_next(g, &r)) > 0)
		request_print(stdout, &r);
	gen_free(g);
	request_free(&r);
	if (ret < 0) {
		fprintf(stderr, "%s: generator: %s\n", prog, strerror(-ret));
		return 1;
	}
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "%s: write: %s\n", prog, strerror(errno));
		return 1;
	}
	return 0;
}

/* "--name value" or "--name=value"; returns the value or NULL. */
static const char *opt_value(int argc, char **argv, int *i, char **name)
{
	char *eq = strchr(argv[*i], '=');

	*name = argv[*i] + 2;
	if (eq) {
		*eq = '\0';
		return eq + 1;
	}
	if (*i + 1 >= argc)
		return NULL;
	return argv[++*i];
}

const char *opt_next(int argc, char **argv, int *i, char **name)
{
	const char *val;

	if (strncmp(argv[*i], "--", 2)) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[*i]);
		return NULL;
	}
	val = opt_value(argc, argv, i, name);
	if (!val)
		fprintf(stderr, "%s: --%s needs a value\n", prog, *name);
	return val;
}

int opt_taken(int ret, const char *name, const char *val)
{
	if (ret > 0)
		return 0;
	if (ret < 0)
		fprintf(stderr, "%s: bad value '%s' for --%s\n", prog, val, name);
	else
		fprintf(stderr, "%s: unknown option --%s\n", prog, name);
	return EXIT_USAGE;
}

static int parse_replay_opt(struct replay_opts *o, const char *name,
			    const char *val)
{
	uint64_t v;

	if (!strcmp(name, "trace")) {
		o->trace = strcmp(val, "generated") ? val : NULL;
	} else if (!strcmp(name, "block-bytes")) {
		if (parse_size(val, &o->block_bytes) || !o->block_bytes ||
		    o->block_bytes % PAGE)
			return -EINVAL;
	} else if (!strcmp(name, "pool-blocks")) {
		if (parse_size(val, &o->pool_blocks) || !o->pool_blocks)
			return -EINVAL;
	} else if (!strcmp(name, "dram-blocks")) {
		if (parse_size(val, &o->dram_blocks) || o->dram_blocks > UINT32_MAX)
			return -EINVAL;
	} else if (!strcmp(name, "node")) {
		if (!strcmp(val, "-1"))
			o->node = -1;
		else if (parse_u64(val, &v) || v > INT32_MAX)
			return -EINVAL;
		else
			o->node = v;
	} else if (!strcmp(name, "max-requests")) {
		if (parse_u64(val, &o->max_requests))
			return -EINVAL;
	} else if (!strcmp(name, "progress")) {
		if (parse_u64(val, &o->progress))
			return -EINVAL;
	} else if (!strcmp(name, "verify")) {
		if (!strcmp(val, "full"))
			o->verify_full = 1;
		else if (!strcmp(val, "sample"))
			o->verify_full = 0;
		else
			return -EINVAL;
	} else if (!strcmp(name, "pool")) {
		if (strlen(val) >= sizeof(o->pool))
			return -EINVAL;
		strcpy(o->pool, val);
	} else if (!strcmp(name, "compute-us-per-token")) {
		char *end;
		double us = strtod(val, &end);

		if (*end || !(us >= 0) || us > 1e6)
			return -EINVAL;
		o->compute_ns_per_token = us * 1000;
	} else if (!strcmp(name, "hints")) {
		if (parse_u64(val, &v) || v > 1024)
			return -EINVAL;
		o->hints = v;
	} else if (!strcmp(name, "background")) {
		if (parse_u64(val, &v) || v > 1024)
			return -EINVAL;
		o->background = v;
	} else if (!strcmp(name, "compare-hints")) {
		if (parse_u64(val, &v) || !v || v > 1024)
			return -EINVAL;
		o->compare_hints = v;
	} else if (!strcmp(name, "compare-layers")) {
		if (parse_u64(val, &v) || v < 2 || v > KVTIER_PARTS_MAX)
			return -EINVAL;
		o->compare_layers = v;
	} else if (!strcmp(name, "hint-budget")) {
		if (parse_u64(val, &v) || v >= UINT32_MAX)
			return -EINVAL;
		o->hint_budget = v;
	} else if (!strcmp(name, "hbm-slots")) {
		if (parse_u64(val, &v) || !v || v > KVTIER_HBM_SLOTS_MAX)
			return -EINVAL;
		o->hbm_slots = v;
	} else if (!strcmp(name, "hbm-backend")) {
		if (!strcmp(val, "emul"))
			o->hbm_backend = KVTIER_HBM_EMUL;
		else if (!strcmp(val, "user"))
			o->hbm_backend = KVTIER_HBM_USER;
		else
			return -EINVAL;
	} else if (!strcmp(name, "layers")) {
		if (parse_u64(val, &v) || v < 2 || v > KVTIER_PARTS_MAX)
			return -EINVAL;
		o->layers = v;
	} else if (!strcmp(name, "hbm-gbps")) {
		if (parse_u64(val, &v) || v > 100000)
			return -EINVAL;
		o->hbm_gbps = v;
	} else if (!strcmp(name, "nvme")) {
		if (!*val)
			return -EINVAL;
		o->nvme = strcmp(val, "none") && strcmp(val, "0") ? val : NULL;
		o->nvme_explicit = 1;
	} else {
		return 0;
	}
	return 1;
}

int main(int argc, char **argv)
{
	struct replay_opts o = {
		.block_bytes = 64 << 10,
		.node = -1,
		.verify_full = 1,
		.use_mmap = 1,
		.hbm_backend = KVTIER_HBM_EMUL,
		.hbm_gbps = DEFAULT_HBM_GBPS,
		.hint_budget = ~0U,
	};
	enum { GEN, REPLAY, STATS } cmd;
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	gen_opts_init(&o.gen);
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "weights"))
		return cmd_weights(argc - 1, argv + 1);
	if (!strcmp(argv[1], "gen")) {
		cmd = GEN;
	} else if (!strcmp(argv[1], "replay") || !strcmp(argv[1], "stats")) {
		cmd = argv[1][0] == 'r' ? REPLAY : STATS;
		o.trace = getenv("KVTIER_TRACE");
		if (o.trace && (!*o.trace || !strcmp(o.trace, "generated")))
			o.trace = NULL;
		/* The NVMe tier: $KVTIER_DEMO_NVME (0: none), else the VM's. */
		o.nvme = getenv("KVTIER_DEMO_NVME");
		if (o.nvme) {
			o.nvme_explicit = 1;
			if (!*o.nvme || !strcmp(o.nvme, "0") || !strcmp(o.nvme, "none"))
				o.nvme = NULL;
		} else {
			o.nvme = DEFAULT_NVME_DEV;
		}
	} else {
		fprintf(stderr, "%s: unknown command '%s'\n", prog, argv[1]);
		usage(stderr);
		return EXIT_USAGE;
	}

	for (i = 2; i < argc; i++) {
		const char *val;
		char *name;
		int ret;

		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		}
		if (cmd == REPLAY && !strcmp(argv[i], "--no-mmap")) {
			o.use_mmap = 0;
			continue;
		}
		if (cmd == REPLAY && !strcmp(argv[i], "--nvme-format")) {
			o.nvme_format = 1;
			continue;
		}
		val = opt_next(argc, argv, &i, &name);
		if (!val)
			return EXIT_USAGE;
		ret = gen_parse_opt(&o.gen, name, val);
		if (!ret && cmd == REPLAY)
			ret = parse_replay_opt(&o, name, val);
		if (!ret && cmd == STATS &&
		    (!strcmp(name, "trace") || !strcmp(name, "max-requests")))
			ret = parse_replay_opt(&o, name, val);
		if (opt_taken(ret, name, val))
			return EXIT_USAGE;
	}

	if (cmd == GEN)
		return cmd_gen(&o.gen);
	if (cmd == STATS)
		return cmd_stats(&o);

	/* Stop cleanly, so that the pool goes and a device we attached is detached. */
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, on_signal);
	if (o.compare_hints)
		return cmd_compare(&o);
	if (o.compare_layers)
		return cmd_compare_layers(&o);
	return cmd_replay(&o, NULL);
}
