/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvgen: KV-like bytes to measure compression on. Random bytes do not
 * compress and zeros compress absurdly; neither is KV. These are the keys
 * and values of one attention layer with random weights applied to token
 * embeddings, as an engine holds them in its cache (fp16 or bf16).
 */
#ifndef KVGEN_H
#define KVGEN_H

#include <stddef.h>
#include <stdint.h>

enum kvgen_fmt { KVGEN_FP16, KVGEN_BF16 };

/**
 * struct kvgen_params - the layer
 * @d_model:	width of the embeddings.
 * @kv_heads:	key/value heads.
 * @head_dim:	width of a head (even).
 * @vocab:	tokens there are; a sequence draws them log-uniformly, so
 *		that some come back often, as in text.
 * @seed:	of the weights, the embeddings and the tokens.
 */
struct kvgen_params {
	uint32_t d_model;
	uint32_t kv_heads;
	uint32_t head_dim;
	uint32_t vocab;
	uint64_t seed;
};

struct kvgen;

/**
 * kvgen_new() - a layer of random weights, and token embeddings
 * @p:		its shape.
 * @g:		out: the generator.
 *
 * Embeddings and weights are normal (weights of variance 1/d_model), so
 * keys and values come out about normal, as a model's do near its first
 * layers.
 *
 * Return: 0, -EINVAL, -ENOMEM.
 */
int kvgen_new(const struct kvgen_params *p, struct kvgen **g);

/** kvgen_free() - free a generator */
void kvgen_free(struct kvgen *g);

/**
 * kvgen_block_bytes() - bytes of @tokens tokens' keys and values
 * @g:		the generator.
 * @tokens:	tokens.
 *
 * Return: bytes.
 */
size_t kvgen_block_bytes(const struct kvgen *g, uint32_t tokens);

/**
 * kvgen_block() - the keys, then the values, of @tokens tokens
 * @g:		the generator.
 * @pos:	position of the first token in its sequence (rotary keys).
 * @tokens:	tokens, drawn at random.
 * @fmt:	KVGEN_FP16 or KVGEN_BF16.
 * @out:	kvgen_block_bytes() bytes: the keys of the tokens, [token]
 *		[head][dim], rotated by their position (RoPE), then their
 *		values alike, without rotation.
 */
void kvgen_block(struct kvgen *g, uint32_t pos, uint32_t tokens,
		 enum kvgen_fmt fmt, void *out);

#endif /* KVGEN_H */
