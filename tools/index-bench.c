// SPDX-License-Identifier: GPL-2.0
/*
 * index-bench: the module's key hash (kmod/index.c, built unchanged on
 * tools/index-shim.h) timed natively on the host, and checked.
 *
 *   index-bench		lookups of random resident keys in a full index
 *				of 1e3 and of 1e6 block addresses, best of 3
 *				trials each, in one run:
 *     lookup_native_ns_per_key_1e3, lookup_native_ns_per_key_1e6
 *     lookup_native_1e6_vs_1e3	their ratio (goal <= 1.5: a lookup in a
 *				large pool costs about what one in a small
 *				pool does)
 *   index-bench --selftest	every key found at its address, absent keys
 *				and removed ones not found, keys alike but
 *				for one word told apart, long chains, a
 *				removal of no entry warned of (the one
 *				WARNING it prints); exit status 0 or 1
 *
 * The block records are padded to the module's record size (see
 * tools/index-shim.h), so a lookup walks memory laid out as the module's.
 * LOOKUP in the VM (lookup_1e6_vs_1e3 of kvtier-bench) adds the ioctl,
 * the entries' copies and the tier of each block; this is the index alone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "index-shim.h"
#include "util.h"

_Static_assert(sizeof(struct kvt_block) == KVT_BLOCK_BYTES,
	       "records as large as the module's");

unsigned long shim_warnings;

#define TRIALS		3
#define LOOKUPS		(1U << 20)

/* An index of block addresses. */
struct bench_index {
	struct kvt_pool pool;
};

static u64 mix64(u64 z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* The key of block @i: two words as a chained prefix hash gives them. */
static void key_of(u64 i, u64 *key)
{
	key[0] = mix64(i * 2 + 1);
	key[1] = mix64(i * 2 + 2);
}

static int index_init(struct bench_index *x, u32 cap, u32 bits)
{
	memset(x, 0, sizeof(*x));
	x->pool.hash_bits = bits ? bits : kvt_index_bits(cap);
	x->pool.blocks = calloc(cap, sizeof(struct kvt_block));
	x->pool.buckets = calloc((size_t)1 << x->pool.hash_bits, sizeof(u32));
	if (!x->pool.blocks || !x->pool.buckets) {
		free(x->pool.blocks);
		free(x->pool.buckets);
		return -ENOMEM;
	}
	x->pool.seed = mix64(cap);
	kvt_index_reset(&x->pool);
	return 0;
}

static void index_free(struct bench_index *x)
{
	free(x->pool.blocks);
	free(x->pool.buckets);
}

static void index_add(struct bench_index *x, u32 a, u64 i)
{
	key_of(i, x->pool.blocks[a].key);
	kvt_index_add(&x->pool, a);
}

/* ---- the bench ---------------------------------------------------------- */

/* ns per lookup of random resident keys in a full index of @cap. */
static int bench_one(u32 cap, double *ns)
{
	u64 *keys = malloc((size_t)LOOKUPS * 2 * sizeof(u64));
	u32 *want = malloc((size_t)LOOKUPS * sizeof(u32));
	u64 rng = 0x9e3779b97f4a7c15ULL, t, best = 0;
	struct bench_index x;
	u32 a, i, bad = 0;
	int trial;

	if (!keys || !want || index_init(&x, cap, 0)) {
		free(keys);
		free(want);
		return -ENOMEM;
	}
	for (a = 0; a < cap; a++)
		index_add(&x, a, a);
	/* The keys to look up, made before the clock starts. */
	for (i = 0; i < LOOKUPS; i++) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		want[i] = rng % cap;
		key_of(want[i], &keys[2 * i]);
	}
	for (trial = -1; trial < TRIALS; trial++) {	/* -1: warm-up */
		t = now_ns();
		for (i = 0; i < LOOKUPS; i++)
			bad += kvt_block_find(&x.pool, &keys[2 * i]) != want[i];
		t = now_ns() - t;
		if (trial >= 0 && (!best || t < best))
			best = t;
	}
	index_free(&x);
	free(keys);
	free(want);
	if (bad) {
		fprintf(stderr, "index-bench: %u lookups found the wrong block\n",
			bad);
		return -EILSEQ;
	}
	*ns = (double)best / LOOKUPS;
	return 0;
}

static int bench(void)
{
	double small, large;

	if (bench_one(1000, &small) || bench_one(1000000, &large))
		return 1;
	printf("lookup_native_ns_per_key_1e3: %.1f\n", small);
	printf("lookup_native_ns_per_key_1e6: %.1f\n", large);
	printf("lookup_native_1e6_vs_1e3: %.3f\n", large / small);
	return 0;
}

/* ---- the self-test ------------------------------------------------------ */

static int fails;

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "index-bench: selftest: " __VA_ARGS__);	\
		fputc('\n', stderr);					\
		fails++;						\
	}								\
} while (0)

/* @cap addresses in buckets of order @bits (0: the module's). */
static void st_fill_empty(u32 cap, u32 bits)
{
	struct bench_index x;
	u64 key[2];
	u32 a, n;

	if (index_init(&x, cap, bits)) {
		CHECK(0, "no memory for %u", cap);
		return;
	}
	for (a = 0; a < cap; a++)
		index_add(&x, a, a);
	for (a = 0; a < cap; a++) {
		key_of(a, key);
		CHECK(kvt_block_find(&x.pool, key) == a,
		      "cap %u bits %u: key %u not at its address", cap,
		      x.pool.hash_bits, a);
	}
	for (a = cap; a < cap + 64; a++) {
		key_of(a, key);
		CHECK(kvt_block_find(&x.pool, key) == KVT_NIL,
		      "cap %u: absent key %u found", cap, a);
	}
	/* Every other one goes, then the rest, in another order. */
	for (a = 0; a < cap; a += 2)
		kvt_index_del(&x.pool, a);
	for (a = 0; a < cap; a++) {
		key_of(a, key);
		CHECK(kvt_block_find(&x.pool, key) == (a & 1 ? a : KVT_NIL),
		      "cap %u: key %u after removing the even ones", cap, a);
	}
	for (a = cap; a-- > 0; )
		if (a & 1)
			kvt_index_del(&x.pool, a);
	for (n = 0, a = 0; a < 1U << x.pool.hash_bits; a++)
		n += x.pool.buckets[a] != KVT_NIL;
	CHECK(!n, "cap %u: %u buckets not empty at the end", cap, n);
	/* A key comes back at another address. */
	if (cap > 1) {
		index_add(&x, cap - 1, 0);
		key_of(0, key);
		CHECK(kvt_block_find(&x.pool, key) == cap - 1,
		      "cap %u: key 0 not found at its new address", cap);
	}
	index_free(&x);
}

/* Keys that differ only in their second word are told apart. */
static void st_second_word(void)
{
	struct bench_index x;
	u64 key[2];
	u32 a;

	if (index_init(&x, 64, 1)) {
		CHECK(0, "no memory");
		return;
	}
	for (a = 0; a < 64; a++) {
		x.pool.blocks[a].key[0] = 42;
		x.pool.blocks[a].key[1] = mix64(a);
		kvt_index_add(&x.pool, a);
	}
	for (a = 0; a < 64; a++) {
		key[0] = 42;
		key[1] = mix64(a);
		CHECK(kvt_block_find(&x.pool, key) == a,
		      "key (42, %u) not at its address", a);
		key[0] = 43;
		CHECK(kvt_block_find(&x.pool, key) == KVT_NIL,
		      "key (43, %u) found", a);
	}
	index_free(&x);
}

static int selftest(void)
{
	static const u32 caps[] = { 1, 2, 3, 17, 1000, 4096, 65537 };
	struct bench_index x;
	size_t i;

	CHECK(kvt_index_bits(1) == 4 && kvt_index_bits(16) == 4 &&
	      kvt_index_bits(17) == 5 && kvt_index_bits(1000000) == 20,
	      "kvt_index_bits: 1 %u, 16 %u, 17 %u, 1e6 %u",
	      kvt_index_bits(1), kvt_index_bits(16), kvt_index_bits(17),
	      kvt_index_bits(1000000));
	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		st_fill_empty(caps[i], 0);
		st_fill_empty(caps[i], 1);	/* long chains, two buckets */
	}
	st_second_word();
	CHECK(!shim_warnings, "%lu warnings", shim_warnings);

	/* Removing an address that is not in the hash warns, changes nothing. */
	if (!index_init(&x, 8, 1)) {
		u64 key[2];

		index_add(&x, 0, 0);
		key_of(1, x.pool.blocks[1].key);
		kvt_index_del(&x.pool, 1);
		key_of(0, key);
		CHECK(shim_warnings == 1, "a removal of no entry did not warn");
		CHECK(kvt_block_find(&x.pool, key) == 0,
		      "a removal of no entry changed the hash");
		index_free(&x);
	}
	if (fails) {
		fprintf(stderr, "index-bench: selftest: %d failures\n", fails);
		return 1;
	}
	printf("index-bench: selftest: ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--selftest"))
		return selftest();
	if (argc != 1) {
		fprintf(stderr, "usage: index-bench [--selftest]\n");
		return 2;
	}
	return bench();
}
