// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libkvtier: chained 128-bit prefix keys (the mix is documented in kvtier.h;
 * changing it changes every key a runtime has stored).
 */
#define KVTIER_LIB_INTERNAL
#include <stddef.h>

#include "kvtier.h"
#include "kvtier_priv.h"

static uint64_t fmix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

void kvtier_key_chain(const struct kvtier_key *prev, uint64_t id,
		      struct kvtier_key *out)
{
	uint64_t p0 = prev ? prev->k[0] : 0, p1 = prev ? prev->k[1] : 0;
	uint64_t h = fmix64(id ^ 0x9e3779b97f4a7c15ULL);

	out->k[0] = fmix64(p0 ^ h);
	out->k[1] = fmix64(p1 + out->k[0] + 0x6a09e667f3bcc909ULL);
}

void kvtier_key_chain_n(const struct kvtier_key *prev, const uint64_t *ids,
			size_t n, struct kvtier_key *out)
{
	size_t i;

	for (i = 0; i < n; i++) {
		kvtier_key_chain(prev, ids[i], &out[i]);
		prev = &out[i];
	}
}
