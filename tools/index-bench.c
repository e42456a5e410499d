// SPDX-License-Identifier: GPL-2.0
/*
 * index-bench: the module's key hash (kmod/index.c, built unchanged on
 * tools/index-shim.h) timed natively on the host, and checked.
 *
 *   index-bench		lookups of random resident keys in a full index
 *				of 1e3 and of 1e6 block addresses, best of 3
 *				trials each, in one run, in batches of 64 as
 *				LOOKUP makes them (kvt_index_find_many()):
 *     lookup_native_ns_per_key_1e3, lookup_native_ns_per_key_1e6
 *     lookup_native_1e6_vs_1e3	their ratio (goal <= 1.5: a lookup in a
 *				large pool costs about what one in a small
 *				pool does)
 *     lookup_native_one_*	the same, one key at a time (kvt_block_find())
 *   index-bench --selftest	every key found at its address, absent keys
 *				and removed ones not found, keys alike but
 *				for one word told apart, every slot taken
 *				(keys far from their home buckets), random
 *				adds and removals against the truth, batches
 *				of every length finding what single lookups
 *				find, a removal of no entry and a key added
 *				to a full hash warned of (the first prints
 *				the one WARNING line); exit status 0 or 1
 *
 * The block records are padded to the module's record size (see
 * tools/index-shim.h), so a lookup walks memory laid out as the module's.
 * LOOKUP in the VM (lookup_1e6_vs_1e3 of kvtier-bench) adds the ioctl,
 * the entries' copies and the tier of each block; this is the index alone.
 */
#include <errno.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>

#include "index-shim.h"
#include "util.h"

_Static_assert(sizeof(struct kvt_block) == KVT_BLOCK_BYTES,
	       "records as large as the module's");

unsigned long shim_warnings;

#define TRIALS		3
#define LOOKUPS		(1U << 20)
#define BATCH		64	/* keys of a LOOKUP resolved at once */

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

/*
 * Zeroed memory laid out as the module's kvt_index_alloc() gives it: in
 * huge pages when it is 2 MiB or more (vmalloc_huge()), so that a lookup
 * meets the TLB misses the module's lookups meet.
 */
static void *index_alloc(size_t bytes)
{
	size_t huge = 2UL << 20;
	void *p;

	if (bytes < huge)
		return calloc(1, bytes ? bytes : 1);
	bytes = (bytes + huge - 1) & ~(huge - 1);
	p = aligned_alloc(huge, bytes);
	if (p) {
		madvise(p, bytes, MADV_HUGEPAGE);
		memset(p, 0, bytes);
	}
	return p;
}

/* @nbuckets: 0 for the module's count */
static int index_init(struct bench_index *x, u32 cap, u32 nbuckets)
{
	memset(x, 0, sizeof(*x));
	x->pool.nbuckets = nbuckets ? nbuckets : kvt_index_buckets(cap);
	x->pool.blocks = index_alloc((size_t)cap * sizeof(struct kvt_block));
	x->pool.buckets = index_alloc((size_t)x->pool.nbuckets *
				      sizeof(struct kvt_bucket));
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
static int bench_one(u32 cap, bool many, double *ns)
{
	u32 got[BATCH], b;
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
		if (many) {
			for (i = 0; i < LOOKUPS; i += BATCH) {
				kvt_index_find_many(&x.pool, &keys[2 * i],
						    2 * sizeof(u64), BATCH,
						    got);
				for (b = 0; b < BATCH; b++)
					bad += got[b] != want[i + b];
			}
		} else {
			for (i = 0; i < LOOKUPS; i++)
				bad += kvt_block_find(&x.pool,
						      &keys[2 * i]) != want[i];
		}
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
	double small, large, one_small, one_large;

	if (bench_one(1000, true, &small) ||
	    bench_one(1000000, true, &large) ||
	    bench_one(1000, false, &one_small) ||
	    bench_one(1000000, false, &one_large))
		return 1;
	printf("lookup_native_ns_per_key_1e3: %.1f\n", small);
	printf("lookup_native_ns_per_key_1e6: %.1f\n", large);
	printf("lookup_native_1e6_vs_1e3: %.3f\n", large / small);
	printf("lookup_native_one_ns_per_key_1e3: %.1f\n", one_small);
	printf("lookup_native_one_ns_per_key_1e6: %.1f\n", one_large);
	printf("lookup_native_one_1e6_vs_1e3: %.3f\n", one_large / one_small);
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

/* Keys left in the buckets, and overflow counts not back to 0. */
static u32 st_left(const struct bench_index *x)
{
	u32 b, s, n = 0;

	for (b = 0; b < x->pool.nbuckets; b++) {
		n += x->pool.buckets[b].overflow != 0;
		for (s = 0; s < KVT_BUCKET_SLOTS; s++)
			n += x->pool.buckets[b].addr[s] != KVT_NIL;
	}
	return n;
}

/* @cap addresses in @nbuckets buckets (0: the module's count). */
static void st_fill_empty(u32 cap, u32 nbuckets)
{
	struct bench_index x;
	u64 key[2];
	u32 a, n;

	if (index_init(&x, cap, nbuckets)) {
		CHECK(0, "no memory for %u", cap);
		return;
	}
	for (a = 0; a < cap; a++)
		index_add(&x, a, a);
	for (a = 0; a < cap; a++) {
		key_of(a, key);
		CHECK(kvt_block_find(&x.pool, key) == a,
		      "cap %u buckets %u: key %u not at its address", cap,
		      x.pool.nbuckets, a);
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
	n = st_left(&x);
	CHECK(!n, "cap %u: %u slots or overflows left at the end", cap, n);
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

	if (index_init(&x, 64, 22)) {
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

/*
 * Random adds and removals at every load up to full, against the truth;
 * a batch of lookups finds what lookups one at a time find.
 */
static void st_random(u32 cap, u32 nbuckets)
{
	struct kvtier_like { u64 key[2]; u32 pad[3]; } *ents;
	u64 rng = 0x2545f4914f6cdd1dULL, key[2];
	u32 *in, *got, a, i, n;
	struct bench_index x;

	ents = calloc(2 * cap, sizeof(*ents));
	in = calloc(cap, sizeof(*in));
	got = calloc(2 * cap, sizeof(*got));
	if (!ents || !in || !got || index_init(&x, cap, nbuckets)) {
		CHECK(0, "no memory for %u", cap);
		goto out_free;
	}
	for (i = 0; i < 40 * cap; i++) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		a = rng % cap;
		if (in[a]) {
			kvt_index_del(&x.pool, a);
			in[a] = 0;
		} else {
			/* A new key each time an address comes back. */
			index_add(&x, a, (u64)i * cap + a);
			in[a] = i + 1;
		}
	}
	for (a = 0, n = 0; a < cap; a++) {
		key_of(in[a] ? (u64)(in[a] - 1) * cap + a : ~(u64)a,
		       ents[n].key);
		n++;
		key_of(((u64)a + 1) << 40, ents[n++].key);	/* absent */
	}
	kvt_index_find_many(&x.pool, ents, sizeof(*ents), n, got);
	for (a = 0; a < cap; a++) {
		memcpy(key, ents[2 * a].key, sizeof(key));
		CHECK(kvt_block_find(&x.pool, key) == (in[a] ? a : KVT_NIL),
		      "cap %u buckets %u: address %u after random changes",
		      cap, x.pool.nbuckets, a);
		CHECK(got[2 * a] == (in[a] ? a : KVT_NIL) &&
		      got[2 * a + 1] == KVT_NIL,
		      "cap %u: the batch found %u, %u for address %u", cap,
		      got[2 * a], got[2 * a + 1], a);
	}
	/* Batches of every length up to the read-ahead and past it. */
	for (n = 0; n <= 40 && n <= 2 * cap; n++) {
		memset(got, 0x55, 2 * cap * sizeof(*got));
		kvt_index_find_many(&x.pool, ents, sizeof(*ents), n, got);
		for (i = 0; i < n; i++)
			CHECK(got[i] == (i & 1 || !in[i / 2] ? KVT_NIL : i / 2),
			      "cap %u: a batch of %u: entry %u", cap, n, i);
	}
	for (a = 0; a < cap; a++)
		if (in[a])
			kvt_index_del(&x.pool, a);
	n = st_left(&x);
	CHECK(!n, "cap %u: %u slots or overflows left at the end", cap, n);
	index_free(&x);
out_free:
	free(ents);
	free(in);
	free(got);
}

static int selftest(void)
{
	static const u32 caps[] = { 1, 2, 3, 17, 1000, 4096, 65537 };
	struct bench_index x;
	size_t i;

	CHECK(kvt_index_buckets(1) == 1 && kvt_index_buckets(2) == 1 &&
	      kvt_index_buckets(3) == 2 && kvt_index_buckets(1000000) == 500000,
	      "kvt_index_buckets: 1 %u, 2 %u, 3 %u, 1e6 %u",
	      kvt_index_buckets(1), kvt_index_buckets(2),
	      kvt_index_buckets(3), kvt_index_buckets(1000000));
	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		st_fill_empty(caps[i], 0);
		/* Every slot taken: keys far from their home buckets. */
		st_fill_empty(caps[i], (caps[i] + KVT_BUCKET_SLOTS - 1) /
				       KVT_BUCKET_SLOTS);
	}
	st_second_word();
	st_random(1000, 0);
	st_random(1000, (1000 + KVT_BUCKET_SLOTS - 1) / KVT_BUCKET_SLOTS);
	st_random(7, 3);
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
	/* A key more than there are slots warns, changes nothing. */
	if (!index_init(&x, 4, 1)) {
		u64 key[2];
		u32 a;

		for (a = 0; a < 4; a++)
			index_add(&x, a, a);
		CHECK(shim_warnings == 2, "adding to a full hash did not warn");
		CHECK(!x.pool.buckets[0].overflow,
		      "adding to a full hash counted an overflow");
		for (a = 0; a < 3; a++) {
			key_of(a, key);
			CHECK(kvt_block_find(&x.pool, key) == a,
			      "key %u lost adding to a full hash", a);
		}
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
