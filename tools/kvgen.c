// SPDX-License-Identifier: GPL-2.0
/*
 * kvgen: KV-like bytes, kvgen.h says what and why.
 *
 * x_t = embedding(token_t) + sinusoid(pos_t); k_t = RoPE(x_t W_k, pos_t),
 * v_t = x_t W_v, per head. What it leaves out of a real model, and what
 * that does to compression, is said in Documentation/design.rst,
 * "Compressed copies".
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvgen.h"

struct kvgen {
	struct kvgen_params p;
	uint32_t kv_dim;	/* kv_heads * head_dim */
	float *emb;		/* vocab x d_model */
	float *wk, *wv;		/* d_model x kv_dim */
	float *x, *k, *v;	/* one token's */
	uint64_t rng;
};

static uint64_t kvgen_next(uint64_t *s)
{
	uint64_t x = (*s += 0x9e3779b97f4a7c15ULL);

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Uniform in (0, 1). */
static double kvgen_unit(uint64_t *s)
{
	return ((kvgen_next(s) >> 11) + 0.5) / 9007199254740992.0;
}

/* Standard normal (Box-Muller). */
static float kvgen_normal(uint64_t *s)
{
	double u = kvgen_unit(s), v = kvgen_unit(s);

	return (float)(sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v));
}

int kvgen_new(const struct kvgen_params *p, struct kvgen **gp)
{
	struct kvgen *g;
	size_t i, nw;
	float sd;

	if (!p->d_model || !p->kv_heads || !p->head_dim || p->head_dim % 2 ||
	    !p->vocab)
		return -EINVAL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->p = *p;
	g->kv_dim = p->kv_heads * p->head_dim;
	g->rng = p->seed;
	nw = (size_t)p->d_model * g->kv_dim;
	g->emb = malloc(sizeof(float) * p->vocab * p->d_model);
	g->wk = malloc(sizeof(float) * nw);
	g->wv = malloc(sizeof(float) * nw);
	g->x = malloc(sizeof(float) * p->d_model);
	g->k = malloc(sizeof(float) * g->kv_dim);
	g->v = malloc(sizeof(float) * g->kv_dim);
	if (!g->emb || !g->wk || !g->wv || !g->x || !g->k || !g->v) {
		kvgen_free(g);
		return -ENOMEM;
	}
	for (i = 0; i < (size_t)p->vocab * p->d_model; i++)
		g->emb[i] = kvgen_normal(&g->rng);
	sd = 1.0f / sqrtf((float)p->d_model);
	for (i = 0; i < nw; i++) {
		g->wk[i] = sd * kvgen_normal(&g->rng);
		g->wv[i] = sd * kvgen_normal(&g->rng);
	}
	*gp = g;
	return 0;
}

void kvgen_free(struct kvgen *g)
{
	if (!g)
		return;
	free(g->emb);
	free(g->wk);
	free(g->wv);
	free(g->x);
	free(g->k);
	free(g->v);
	free(g);
}

size_t kvgen_block_bytes(const struct kvgen *g, uint32_t tokens)
{
	return (size_t)tokens * 2 * g->kv_dim * sizeof(uint16_t);
}

/* IEEE half, rounded to nearest even; saturates to infinity. */
static uint16_t kvgen_fp16(float f)
{
	uint32_t x;
	uint32_t sign, exp, man;

	memcpy(&x, &f, sizeof(x));
	sign = (x >> 16) & 0x8000;
	exp = (x >> 23) & 0xff;
	man = x & 0x7fffff;
	if (exp == 0xff)
		return sign | 0x7c00 | (man ? 0x200 : 0);
	if (exp > 142)				/* >= 2^16: infinity */
		return sign | 0x7c00;
	if (exp < 113) {			/* below 2^-14: subnormal */
		uint32_t shift;

		if (exp < 102)
			return sign;
		man |= 0x800000;
		shift = 126 - exp;
		x = man >> shift;
		if ((man >> (shift - 1)) & 1 &&
		    (x & 1 || man & ((1U << (shift - 1)) - 1)))
			x++;
		return sign | x;
	}
	x = ((exp - 112) << 10) | (man >> 13);
	if (man & 0x1000 && (x & 1 || man & 0xfff))
		x++;			/* may carry into the exponent: fine */
	return sign | x;
}

/* bfloat16: the high half of the float, rounded to nearest even. */
static uint16_t kvgen_bf16(float f)
{
	uint32_t x;

	memcpy(&x, &f, sizeof(x));
	x += 0x7fff + ((x >> 16) & 1);
	return x >> 16;
}

/* One token's key and value (g->k, g->v) at position @pos. */
static void kvgen_token(struct kvgen *g, uint32_t pos)
{
	const struct kvgen_params *p = &g->p;
	/* Log-uniform: token t comes back about 1/t as often. */
	uint32_t tok = (uint32_t)(pow(p->vocab, kvgen_unit(&g->rng))) - 1;
	uint32_t i, j, h;

	for (i = 0; i < p->d_model; i++) {
		double freq = pow(10000.0, -(double)(i & ~1U) / p->d_model);

		g->x[i] = g->emb[(size_t)tok * p->d_model + i] +
			  (float)(i & 1 ? cos(pos * freq) : sin(pos * freq));
	}
	for (j = 0; j < g->kv_dim; j++) {
		g->k[j] = 0;
		g->v[j] = 0;
	}
	for (i = 0; i < p->d_model; i++) {
		const float *wk = g->wk + (size_t)i * g->kv_dim;
		const float *wv = g->wv + (size_t)i * g->kv_dim;
		float xi = g->x[i];

		for (j = 0; j < g->kv_dim; j++) {
			g->k[j] += xi * wk[j];
			g->v[j] += xi * wv[j];
		}
	}
	/* RoPE, NeoX's halves: dims d and d + head_dim / 2 of each head. */
	for (h = 0; h < p->kv_heads; h++) {
		float *k = g->k + h * p->head_dim;
		uint32_t half = p->head_dim / 2;

		for (j = 0; j < half; j++) {
			double a = pos * pow(10000.0, -2.0 * j / p->head_dim);
			float c = (float)cos(a), s = (float)sin(a);
			float k0 = k[j], k1 = k[j + half];

			k[j] = k0 * c - k1 * s;
			k[j + half] = k0 * s + k1 * c;
		}
	}
}

void kvgen_block(struct kvgen *g, uint32_t pos, uint32_t tokens,
		 enum kvgen_fmt fmt, void *out)
{
	uint16_t *keys = out, *vals = keys + (size_t)tokens * g->kv_dim;
	uint32_t t, j;

	for (t = 0; t < tokens; t++) {
		kvgen_token(g, pos + t);
		for (j = 0; j < g->kv_dim; j++) {
			size_t at = (size_t)t * g->kv_dim + j;

			keys[at] = fmt == KVGEN_FP16 ? kvgen_fp16(g->k[j]) :
						       kvgen_bf16(g->k[j]);
			vals[at] = fmt == KVGEN_FP16 ? kvgen_fp16(g->v[j]) :
						       kvgen_bf16(g->v[j]);
		}
	}
}
