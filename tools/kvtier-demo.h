/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvtier-demo: requests in the Mooncake trace format, from the built-in
 * generator or from a trace file.
 *
 * One request a line:
 *	{"timestamp": ms, "input_length": tokens, "output_length": tokens,
 *	 "hash_ids": [id, ...]}
 * Each hash id stands for one block of block_tokens (512) input tokens, the
 * last one possibly partial; equal ids at equal positions mean an equal
 * prefix up to and including that block.
 */
#ifndef KVTIER_DEMO_H
#define KVTIER_DEMO_H

#include <stdint.h>
#include <stdio.h>

#define DEMO_BLOCK_TOKENS	512

/**
 * struct request - one trace line
 * @timestamp:	arrival, milliseconds from the start of the trace.
 * @input_length: prompt tokens.
 * @output_length: generated tokens.
 * @ids:	hash ids, one per block of the prompt.
 * @n:		number of @ids.
 * @cap:	allocated entries of @ids.
 */
struct request {
	uint64_t timestamp;
	uint64_t input_length;
	uint64_t output_length;
	uint64_t *ids;
	uint32_t n;
	uint32_t cap;
};

/**
 * struct gen_opts - the generator's knobs
 * @requests:	requests to generate.
 * @seed:	PRNG seed; the same options give the same trace.
 * @system_prompts: distinct system prompts, chosen Zipf-like (prompt k
 *		with weight 1 / (k + 1)).
 * @turns:	most turns per conversation (each gets 1..@turns).
 * @sessions:	conversations open at a time; each request continues one
 *		picked at random.
 * @system_tokens: mean system prompt length (whole blocks, 0.5x..1.5x).
 * @user_tokens: mean new user tokens per turn (0.5x..1.5x).
 * @output_tokens: mean generated tokens per turn (0.5x..1.5x).
 * @rate:	mean requests per second (Poisson arrivals).
 */
struct gen_opts {
	uint64_t requests;
	uint64_t seed;
	uint32_t system_prompts;
	uint32_t turns;
	uint32_t sessions;
	uint32_t system_tokens;
	uint32_t user_tokens;
	uint32_t output_tokens;
	double rate;
};

struct gen;
struct trace;

/** gen_opts_init() - the defaults of `kvtier-demo gen` */
void gen_opts_init(struct gen_opts *o);

/**
 * gen_parse_opt() - take one generator option from the command line
 * @o:		the options.
 * @name:	long option name without "--".
 * @val:	its value.
 *
 * Return: 1 taken, 0 not a generator option, -EINVAL bad value.
 */
int gen_parse_opt(struct gen_opts *o, const char *name, const char *val);

/** gen_usage() - describe the generator options */
void gen_usage(FILE *f);

/**
 * gen_new() - start a generator
 * @o:		options (copied).
 * @gp:		out: the generator.
 *
 * Return: 0, -EINVAL for inconsistent options, -ENOMEM.
 */
int gen_new(const struct gen_opts *o, struct gen **gp);

/**
 * gen_next() - the next request
 * @g:		the generator.
 * @r:		out: the request (its @ids reused and grown as needed).
 *
 * Return: 1 a request, 0 done, -ENOMEM.
 */
int gen_next(struct gen *g, struct request *r);

/** gen_free() - stop a generator (NULL is a no-op) */
void gen_free(struct gen *g);

/**
 * trace_open() - open a Mooncake-format trace file ("-" for stdin)
 * @path:	the file.
 * @tp:		out: the reader.
 *
 * Return: 0 or -errno.
 */
int trace_open(const char *path, struct trace **tp);

/**
 * trace_next() - parse the next non-empty line
 * @t:		the reader.
 * @r:		out: the request.
 *
 * Return: 1 a request, 0 end of file, -EINVAL for a line that is not a
 * request (trace_lineno() says which), -ENOMEM, -EIO.
 */
int trace_next(struct trace *t, struct request *r);

/** trace_lineno() - line number of the last line read */
uint64_t trace_lineno(const struct trace *t);

/** trace_close() - close a reader (NULL is a no-op) */
void trace_close(struct trace *t);

/**
 * request_print() - write one request as a trace line
 * @f:		the stream.
 * @r:		the request.
 */
void request_print(FILE *f, const struct request *r);

/** request_free() - free a request's ids */
void request_free(struct request *r);

/* ---- shared by the commands (kvtier-demo.c) --------------------------- */

struct kvtier_key;

/**
 * fill_block() - the bytes of a block (or a tensor) named by a key
 * @buf:	out: @bytes bytes.
 * @bytes:	a multiple of 8.
 * @k:		the key: word i is (k0 ^ i * 0x9e3779b97f4a7c15) + k1.
 */
void fill_block(void *buf, uint64_t bytes, const struct kvtier_key *k);
/**
 * check_block() - whether @buf holds fill_block()'s bytes of @k
 * @buf:	the bytes.
 * @bytes:	a multiple of 8.
 * @k:		the key.
 * @full:	every word; 0: the first word of each page.
 *
 * Return: 0 if all match.
 */
int check_block(const void *buf, uint64_t bytes, const struct kvtier_key *k,
		int full);
/** row() - one "  name   value" line of a table */
void row(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/** ratio() - @a / @b, 0 when @b is 0 */
double ratio(uint64_t a, uint64_t b);
/**
 * opt_next() - the value of "--name value" or "--name=value" at argv[*i]
 * @argc:	as main()'s.
 * @argv:	as main()'s; a "--name=value" is split in place.
 * @i:		in: the option's index; out: its value's.
 * @name:	out: the name, without "--".
 *
 * Return: the value; NULL, said on stderr, for an argument that is not an
 * option or an option without its value.
 */
const char *opt_next(int argc, char **argv, int *i, char **name);
/**
 * opt_taken() - what a parser said of an option
 * @ret:	its answer: 1 taken, 0 not its option, -EINVAL a bad value.
 * @name:	the option.
 * @val:	its value.
 *
 * Return: 0 when taken; else 2 (bad usage), said on stderr.
 */
int opt_taken(int ret, const char *name, const char *val);

/**
 * cmd_weights() - `kvtier-demo weights` (kvtier-demo-weights.c)
 * @argc:	arguments, "weights" first.
 * @argv:	see @argc.
 *
 * Return: the exit status.
 */
int cmd_weights(int argc, char **argv);

/* ---- the runtime model (kvtier-demo-runtime.c) ------------------------ */

struct kvtier_pool;
struct lookahead;

/**
 * struct hint_stats - what the hints of a replay did
 * @groups:	PREFETCH groups sent.
 * @hints:	hints in them.
 * @dropped:	hints that named no block (not cached: nothing to stage).
 * @need_groups: groups that needed reads and had a deadline ahead.
 * @need_blocks: blocks of those groups: the existing prefix of their
 *		chain.
 * @on_time_blocks: of those, blocks in DRAM when their group ended on
 *		time.
 * @late_groups: such groups that ended late or not in full.
 * @late_out_of_order: of those, groups that ended after a later one (in
 *		deadline order) had ended late.
 * @bg_groups:	background groups sent (--background).
 * @bg_hints:	hints in them.
 * @bg_done:	background groups that ended with status 0.
 */
struct hint_stats {
	uint64_t groups;
	uint64_t hints;
	uint64_t dropped;
	uint64_t need_groups;
	uint64_t need_blocks;
	uint64_t on_time_blocks;
	uint64_t late_groups;
	uint64_t late_out_of_order;
	uint64_t bg_groups;
	uint64_t bg_hints;
	uint64_t bg_done;
};

/* The next request of a source: 1, 0 at the end, or -errno. */
typedef int (*next_fn)(void *arg, struct request *r);

/**
 * lookahead_new() - a runtime's queue of @window requests after the
 * current, and @bg more hinted in the background (0: none)
 */
int lookahead_new(uint32_t window, uint32_t bg, struct lookahead **lap);
/**
 * lookahead_set_tier() - the tier hinted blocks are staged in
 * @la:		the queue.
 * @tier:	KVTIER_TIER_DRAM (the default) or KVTIER_TIER_HBM.
 */
void lookahead_set_tier(struct lookahead *la, uint32_t tier);
/**
 * lookahead_set_budget() - most blocks the window's hints may name at once
 * @la:		the queue.
 * @blocks:	0 (the default): no bound. A request is hinted only once it
 *		and the requests before it in the window name no more than
 *		this; what the target tier holds, so that staging for later
 *		requests does not give back what earlier ones are about to use.
 */
void lookahead_set_budget(struct lookahead *la, uint32_t blocks);
/** lookahead_free() - free it (NULL is a no-op) */
void lookahead_free(struct lookahead *la);
/**
 * lookahead_next() - the next request to serve, read ahead from @fn
 * @la:		the queue.
 * @fn:		the request source; @arg its argument.
 * @arg:	see @fn.
 * @r:		out: the request, valid until the next call.
 *
 * Return: 1, 0 at the end, or -errno.
 */
int lookahead_next(struct lookahead *la, next_fn fn, void *arg,
		   struct request **r);
/**
 * lookahead_hint() - send PREFETCH groups for the requests that entered
 * the window, due when the requests before them will have computed
 * @la:		the queue.
 * @pool:	the pool.
 * @ns_per_token: the modeled compute cost.
 * @batch_max:	most hints in one group.
 *
 * Return: 0 or -errno.
 */
int lookahead_hint(struct lookahead *la, struct kvtier_pool *pool,
		   double ns_per_token, uint32_t batch_max);
/**
 * lookahead_drain() - account the groups' completions
 * @la:		the queue.
 * @pool:	the pool.
 * @timeout_ms:	0: what is there; else wait up to this for the outstanding.
 *
 * Return: 0 or -errno.
 */
int lookahead_drain(struct lookahead *la, struct kvtier_pool *pool,
		    int timeout_ms);
/**
 * lookahead_stalled() - the current request waited @ns for its prefix: not
 * part of what a request takes besides its compute
 */
void lookahead_stalled(struct lookahead *la, uint64_t ns);
/** lookahead_stats() - the figures so far */
const struct hint_stats *lookahead_stats(const struct lookahead *la);
/** request_compute_ns() - the modeled compute of a request */
uint64_t request_compute_ns(const struct request *r, double ns_per_token);
/** sleep_ns() - sleep, CLOCK_MONOTONIC, through signals */
void sleep_ns(uint64_t ns);

#endif /* KVTIER_DEMO_H */
