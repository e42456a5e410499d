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

#endif /* KVTIER_DEMO_H */
