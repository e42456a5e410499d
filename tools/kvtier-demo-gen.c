// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier-demo: the built-in generator of prefix-sharing requests
 * (multi-turn chats that share system prompts) and a small hand-written
 * parser of Mooncake trace lines.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvtier-demo.h"
#include "util.h"

/* ---- requests ---------------------------------------------------------- */

static int request_reserve(struct request *r, uint32_t n)
{
	uint64_t *ids;
	uint32_t cap;

	if (n <= r->cap)
		return 0;
	cap = r->cap ? r->cap : 64;
	while (cap < n)
		cap *= 2;
	ids = realloc(r->ids, cap * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	r->ids = ids;
	r->cap = cap;
	return 0;
}

static int request_push(struct request *r, uint64_t id)
{
	int ret = request_reserve(r, r->n + 1);

	if (ret)
		return ret;
	r->ids[r->n++] = id;
	return 0;
}

void request_print(FILE *f, const struct request *r)
{
	uint32_t i;

	fprintf(f, "{\"timestamp\": %llu, \"input_length\": %llu, \"output_length\": %llu, \"hash_ids\": [",
		(unsigned long long)r->timestamp,
		(unsigned long long)r->input_length,
		(unsigned long long)r->output_length);
	for (i = 0; i < r->n; i++)
		fprintf(f, "%s%llu", i ? ", " : "", (unsigned long long)r->ids[i]);
	fputs("]}\n", f);
}

void request_free(struct request *r)
{
	free(r->ids);
	memset(r, 0, sizeof(*r));
}

/* ---- generator --------------------------------------------------------- */

/*
 * A conversation: the ids of the whole blocks of its context so far (its
 * system prompt, then every earlier turn's prompt), and how many tokens the
 * context holds, generated answers included. The next turn's prompt is the
 * context plus new user tokens; its blocks up to the last whole block of the
 * previous prompt keep their ids, the rest get new ones.
 */
struct conv {
	struct request ctx;	/* ids of the whole blocks, and input_length */
	uint64_t tokens;	/* context tokens, last answer included */
	uint32_t turns_left;
};

struct gen {
	struct gen_opts o;
	uint64_t rng;
	uint64_t made;
	uint64_t next_id;	/* internal ids: prompts first */
	uint64_t *out_id;	/* internal id -> id in order of first use */
	uint64_t out_cap;
	uint64_t next_out;
	double now_ms;
	struct request *prompts;	/* ids of each system prompt */
	double *zipf_cdf;
	struct conv *convs;
};

void gen_opts_init(struct gen_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->requests = 4000;
	o->seed = 1;
	o->system_prompts = 8;
	o->turns = 8;
	o->sessions = 512;
	o->system_tokens = 2048;
	o->user_tokens = 600;
	o->output_tokens = 300;
	o->rate = 20;
}

int gen_parse_opt(struct gen_opts *o, const char *name, const char *val)
{
	static const struct {
		const char *name;
		size_t off;
	} u32s[] = {
		{ "system-prompts", offsetof(struct gen_opts, system_prompts) },
		{ "turns", offsetof(struct gen_opts, turns) },
		{ "sessions", offsetof(struct gen_opts, sessions) },
		{ "system-tokens", offsetof(struct gen_opts, system_tokens) },
		{ "user-tokens", offsetof(struct gen_opts, user_tokens) },
		{ "output-tokens", offsetof(struct gen_opts, output_tokens) },
	};
	uint64_t v;
	size_t i;
	char *end;

	if (!strcmp(name, "requests"))
		return parse_u64(val, &o->requests) ? -EINVAL : 1;
	if (!strcmp(name, "seed"))
		return parse_u64(val, &o->seed) ? -EINVAL : 1;
	if (!strcmp(name, "rate")) {
		errno = 0;
		o->rate = strtod(val, &end);
		return errno || *end || !(o->rate > 0) ? -EINVAL : 1;
	}
	for (i = 0; i < sizeof(u32s) / sizeof(u32s[0]); i++) {
		if (strcmp(name, u32s[i].name))
			continue;
		if (parse_u64(val, &v) || v > UINT32_MAX)
			return -EINVAL;
		*(uint32_t *)((char *)o + u32s[i].off) = v;
		return 1;
	}
	return 0;
}

void gen_usage(FILE *f)
{
	struct gen_opts d;

	gen_opts_init(&d);
	fprintf(f,
		"generator options (defaults in brackets):\n"
		"  --requests N        requests to generate [%llu]\n"
		"  --seed S            PRNG seed [%llu]\n"
		"  --system-prompts K  distinct system prompts, Zipf-popular [%u]\n"
		"  --turns T           most turns per conversation [%u]\n"
		"  --sessions C        conversations open at a time [%u]\n"
		"  --system-tokens N   mean system prompt tokens [%u]\n"
		"  --user-tokens N     mean new user tokens per turn [%u]\n"
		"  --output-tokens N   mean answer tokens per turn [%u]\n"
		"  --rate R            mean requests per second [%g]\n",
		(unsigned long long)d.requests, (unsigned long long)d.seed,
		d.system_prompts, d.turns, d.sessions, d.system_tokens,
		d.user_tokens, d.output_tokens, d.rate);
}

/* splitmix64: small, fast and good enough for a workload generator. */
static uint64_t rnd(struct gen *g)
{
	uint64_t z = (g->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double rnd01(struct gen *g)
{
	return (rnd(g) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform in [mean / 2, mean * 3 / 2], at least 1. */
static uint64_t rnd_around(struct gen *g, uint64_t mean)
{
	uint64_t lo = mean / 2, v;

	v = lo + (mean ? rnd(g) % (mean + 1) : 0);
	return v ? v : 1;
}

static uint32_t pick_prompt(struct gen *g)
{
	double u = rnd01(g);
	uint32_t k;

	for (k = 0; k + 1 < g->o.system_prompts; k++)
		if (u < g->zipf_cdf[k])
			break;
	return k;
}

static int conv_start(struct gen *g, struct conv *c)
{
	const struct request *p = &g->prompts[pick_prompt(g)];

	c->ctx.n = 0;
	if (request_reserve(&c->ctx, p->n))
		return -ENOMEM;
	memcpy(c->ctx.ids, p->ids, p->n * sizeof(*p->ids));
	c->ctx.n = p->n;
	c->ctx.input_length = p->input_length;
	c->tokens = p->input_length;
	c->turns_left = 1 + rnd(g) % g->o.turns;
	return 0;
}

int gen_new(const struct gen_opts *o, struct gen **gp)
{
	double sum = 0, acc = 0;
	struct gen *g;
	uint32_t k, i;

	if (!o->system_prompts || !o->turns || !o->sessions || !(o->rate > 0))
		return -EINVAL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->o = *o;
	g->rng = o->seed;
	g->prompts = calloc(o->system_prompts, sizeof(*g->prompts));
	g->zipf_cdf = calloc(o->system_prompts, sizeof(*g->zipf_cdf));
	g->convs = calloc(o->sessions, sizeof(*g->convs));
	if (!g->prompts || !g->zipf_cdf || !g->convs)
		goto out_free;

	for (k = 0; k < o->system_prompts; k++)
		sum += 1.0 / (k + 1);
	for (k = 0; k < o->system_prompts; k++) {
		struct request *p = &g->prompts[k];
		uint64_t blocks;

		acc += 1.0 / (k + 1);
		g->zipf_cdf[k] = acc / sum;
		blocks = rnd_around(g, o->system_tokens) / DEMO_BLOCK_TOKENS;
		if (!blocks)
			blocks = 1;
		p->input_length = blocks * DEMO_BLOCK_TOKENS;
		for (i = 0; i < blocks; i++)
			if (request_push(p, g->next_id++))
				goto out_free;
	}
	for (i = 0; i < o->sessions; i++)
		if (conv_start(g, &g->convs[i]))
			goto out_free;
	*gp = g;
	return 0;

out_free:
	gen_free(g);
	return -ENOMEM;
}

/*
 * Trace ids number blocks in order of first appearance, as in the Mooncake
 * traces; internally the system prompts take the first ids.
 */
static int gen_out_id(struct gen *g, uint64_t *id)
{
	if (*id >= g->out_cap) {
		uint64_t cap = g->out_cap ? g->out_cap : 1024, i;
		uint64_t *p;

		while (cap <= *id)
			cap *= 2;
		p = realloc(g->out_id, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		for (i = g->out_cap; i < cap; i++)
			p[i] = UINT64_MAX;
		g->out_id = p;
		g->out_cap = cap;
	}
	if (g->out_id[*id] == UINT64_MAX)
		g->out_id[*id] = g->next_out++;
	*id = g->out_id[*id];
	return 0;
}

int gen_next(struct gen *g, struct request *r)
{
	struct conv *c;
	uint64_t keep, blocks, user, out;
	uint32_t i;

	if (g->made >= g->o.requests)
		return 0;
	c = &g->convs[rnd(g) % g->o.sessions];
	if (!c->turns_left && conv_start(g, c))
		return -ENOMEM;

	user = rnd_around(g, g->o.user_tokens);
	out = rnd_around(g, g->o.output_tokens);
	r->timestamp = (uint64_t)g->now_ms;
	r->input_length = c->tokens + user;
	r->output_length = out;
	blocks = (r->input_length + DEMO_BLOCK_TOKENS - 1) / DEMO_BLOCK_TOKENS;
	if (blocks > UINT32_MAX || request_reserve(r, blocks))
		return -ENOMEM;

	/* Whole blocks of the previous prompt stay; the rest are new. */
	keep = c->ctx.n;
	r->n = 0;
	for (i = 0; i < blocks; i++)
		r->ids[r->n++] = i < keep ? c->ctx.ids[i] : g->next_id++;

	/* Remember this prompt's whole blocks for the next turn. */
	keep = r->input_length / DEMO_BLOCK_TOKENS;
	if (request_reserve(&c->ctx, keep))
		return -ENOMEM;
	memcpy(c->ctx.ids, r->ids, keep * sizeof(*r->ids));
	c->ctx.n = keep;
	c->tokens = r->input_length + out;
	c->turns_left--;

	for (i = 0; i < r->n; i++)
		if (gen_out_id(g, &r->ids[i]))
			return -ENOMEM;

	g->now_ms += -log(1.0 - rnd01(g)) * 1000.0 / g->o.rate;
	g->made++;
	return 1;
}

void gen_free(struct gen *g)
{
	uint32_t i;

	if (!g)
		return;
	if (g->prompts)
		for (i = 0; i < g->o.system_prompts; i++)
			request_free(&g->prompts[i]);
	if (g->convs)
		for (i = 0; i < g->o.sessions; i++)
			request_free(&g->convs[i].ctx);
	free(g->prompts);
	free(g->zipf_cdf);
	free(g->convs);
	free(g->out_id);
	free(g);
}

/* ---- trace parser ------------------------------------------------------ */

struct trace {
	FILE *f;
	char *line;
	size_t size;
	uint64_t lineno;
};

int trace_open(const char *path, struct trace **tp)
{
	struct trace *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->f = strcmp(path, "-") ? fopen(path, "re") : stdin;
	if (!t->f) {
		int ret = -errno;

		free(t);
		return ret;
	}
	*tp = t;
	return 0;
}

uint64_t trace_lineno(const struct trace *t)
{
	return t->lineno;
}

void trace_close(struct trace *t)
{
	if (!t)
		return;
	if (t->f != stdin)
		fclose(t->f);
	free(t->line);
	free(t);
}

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	return p;
}

/* A non-negative integer (a JSON number without sign, fraction or exponent). */
static const char *parse_uint(const char *p, uint64_t *v)
{
	uint64_t x = 0;

	if (!isdigit((unsigned char)*p))
		return NULL;
	while (isdigit((unsigned char)*p)) {
		if (x > (UINT64_MAX - 9) / 10)
			return NULL;
		x = x * 10 + (*p++ - '0');
	}
	*v = x;
	return p;
}

/* A string: copy up to @size - 1 bytes of it (escapes kept as written). */
static const char *parse_string(const char *p, char *out, size_t size)
{
	size_t n = 0;

	if (*p++ != '"')
		return NULL;
	while (*p && *p != '"') {
		if (*p == '\\' && p[1])
			p++;
		if (out && n + 1 < size)
			out[n++] = *p;
		p++;
	}
	if (*p != '"')
		return NULL;
	if (out)
		out[n] = '\0';
	return p + 1;
}

/* Skip any JSON value (for keys this tool does not use). */
static const char *skip_value(const char *p, int depth)
{
	p = skip_ws(p);
	if (depth > 32)
		return NULL;
	if (*p == '"')
		return parse_string(p, NULL, 0);
	if (*p == '{' || *p == '[') {
		char close = *p == '{' ? '}' : ']';

		p = skip_ws(p + 1);
		if (*p == close)
			return p + 1;
		for (;;) {
			if (close == '}') {
				p = parse_string(skip_ws(p), NULL, 0);
				if (!p)
					return NULL;
				p = skip_ws(p);
				if (*p++ != ':')
					return NULL;
			}
			p = skip_value(p, depth + 1);
			if (!p)
				return NULL;
			p = skip_ws(p);
			if (*p == close)
				return p + 1;
			if (*p++ != ',')
				return NULL;
		}
	}
	/* number, true, false, null */
	if (!*p || !strchr("-0123456789tfn", *p))
		return NULL;
	while (*p && (isalnum((unsigned char)*p) || strchr("+-.", *p)))
		p++;
	return p;
}

/* "hash_ids": [n, n, ...] */
static const char *parse_ids(const char *p, struct request *r)
{
	uint64_t v;

	r->n = 0;
	if (*p++ != '[')
		return NULL;
	p = skip_ws(p);
	if (*p == ']')
		return p + 1;
	for (;;) {
		p = parse_uint(skip_ws(p), &v);
		if (!p || request_push(r, v))
			return NULL;
		p = skip_ws(p);
		if (*p == ']')
			return p + 1;
		if (*p++ != ',')
			return NULL;
	}
}

static int parse_line(const char *p, struct request *r)
{
	int have_ids = 0, have_in = 0;
	char key[32];

	r->timestamp = r->input_length = r->output_length = 0;
	r->n = 0;
	p = skip_ws(p);
	if (*p++ != '{')
		return -EINVAL;
	p = skip_ws(p);
	if (*p == '}')
		return -EINVAL;
	for (;;) {
		p = parse_string(skip_ws(p), key, sizeof(key));
		if (!p)
			return -EINVAL;
		p = skip_ws(p);
		if (*p++ != ':')
			return -EINVAL;
		p = skip_ws(p);
		if (!strcmp(key, "timestamp")) {
			p = parse_uint(p, &r->timestamp);
		} else if (!strcmp(key, "input_length")) {
			p = parse_uint(p, &r->input_length);
			have_in = 1;
		} else if (!strcmp(key, "output_length")) {
			p = parse_uint(p, &r->output_length);
		} else if (!strcmp(key, "hash_ids")) {
			p = parse_ids(p, r);
			have_ids = 1;
		} else {
			p = skip_value(p, 0);
		}
		if (!p)
			return -EINVAL;
		p = skip_ws(p);
		if (*p == '}')
			break;
		if (*p++ != ',')
			return -EINVAL;
	}
	if (*skip_ws(p + 1))
		return -EINVAL;
	if (!have_ids)
		return -EINVAL;
	if (!have_in)
		r->input_length = (uint64_t)r->n * DEMO_BLOCK_TOKENS;
	return 0;
}

int trace_next(struct trace *t, struct request *r)
{
	ssize_t len;

	for (;;) {
		errno = 0;
		len = getline(&t->line, &t->size, t->f);
		if (len < 0)
			return errno == ENOMEM ? -ENOMEM : ferror(t->f) ? -EIO : 0;
		t->lineno++;
		if (*skip_ws(t->line))
			break;
	}
	return parse_line(t->line, r) ? -EINVAL : 1;
}
