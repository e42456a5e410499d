// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * kvt-test: libkvtier's own tests, TAP output.
 *
 * The first tests need no module (keys, names, defaults); the rest run
 * against /dev/kvtier and are skipped when it is absent. The nvme_* tests
 * also need a block device they may format: $KVTIER_TEST_NVME, else
 * /dev/nvme0n1 when it is a tools/vm/kvtier-vm drive (serial kvt<N>); they
 * are skipped without one, when not root, or when another device is
 * attached. The prefetch_* and request_ready tests stage blocks from that
 * device (attached again if an earlier test left it detached); the ring
 * test needs io_uring only; hbm_mover_memcpy attaches a user HBM arena
 * moved by the reference memcpy mover in a thread; the events_* tests
 * rebuild a pool's key set from a census and the events after it, and
 * overflow the events ring (events_ring, read from sysfs). The safetensors_*
 * and gguf_* tests check the tensor table parsers (lib/safetensors.h,
 * lib/gguf.h) with no module, weights_table the reading of a file's table;
 * the weights tests need KVTIER_F_WEIGHTS and write their model files in
 * /tmp. Exit status: 0 all
 * passed, 1 a failure, 4 (kselftest skip) when nothing could run against
 * the module and nothing failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <numa.h>
#include <numaif.h>

#include <kvtier.h>
#define KVTIER_LIB_TESTS
#include "safetensors.h"
#include "gguf.h"

#define KSFT_SKIP	4

static int passed, failed, skipped, ntest;
static int case_failed;
static struct kvtier_ctx *ctx;

#define CHECK(cond) do {						\
	if (!(cond)) {							\
		printf("#   %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
		case_failed = 1;					\
		return;							\
	}								\
} while (0)

#define CHECK_EQ(a, b) do {						\
	long long _a = (long long)(a), _b = (long long)(b);		\
	if (_a != _b) {							\
		printf("#   %s:%d: %s == %lld, expected %s == %lld\n",	\
		       __FILE__, __LINE__, #a, _a, #b, _b);		\
		case_failed = 1;					\
		return;							\
	}								\
} while (0)

/* Why the nvme_* tests cannot run, or NULL when they can (nvme_dev). */
static const char *nvme_skip;
static const char *nvme_dev;

enum { NO_DEV, NEEDS_DEV, NEEDS_NVME, NEEDS_META, NEEDS_EVENTS,
       NEEDS_WEIGHTS };

/* Whether the context negotiated @bit. */
static int has_feature(uint64_t bit)
{
	struct kvtier_api api;

	return ctx && !kvtier_api_info(ctx, &api) && (api.features & bit);
}

static void run(const char *name, void (*fn)(void), int needs)
{
	ntest++;
	if (needs != NO_DEV && !ctx) {
		printf("ok %d %s # SKIP /dev/kvtier not available\n", ntest, name);
		skipped++;
		return;
	}
	if (needs == NEEDS_META && !has_feature(KVTIER_F_META)) {
		printf("ok %d %s # SKIP kvtier without KVTIER_F_META\n", ntest,
		       name);
		skipped++;
		return;
	}
	if (needs == NEEDS_EVENTS && !has_feature(KVTIER_F_EVENTS)) {
		printf("ok %d %s # SKIP kvtier without KVTIER_F_EVENTS\n", ntest,
		       name);
		skipped++;
		return;
	}
	if (needs == NEEDS_WEIGHTS && !has_feature(KVTIER_F_WEIGHTS)) {
		printf("ok %d %s # SKIP kvtier without KVTIER_F_WEIGHTS\n",
		       ntest, name);
		skipped++;
		return;
	}
	if (needs == NEEDS_NVME && nvme_skip) {
		printf("ok %d %s # SKIP %s\n", ntest, name, nvme_skip);
		skipped++;
		return;
	}
	case_failed = 0;
	fn();
	printf("%s %d %s\n", case_failed ? "not ok" : "ok", ntest, name);
	if (case_failed)
		failed++;
	else
		passed++;
}

static char pool_name[KVTIER_NAME_MAX];

static const char *pname(const char *tag)
{
	snprintf(pool_name, sizeof(pool_name), "kvt-test-%d-%s", (int)getpid(), tag);
	return pool_name;
}

/* Block bytes derived from the key, so a GET can be checked. */
static void fill(void *buf, size_t bytes, const struct kvtier_key *k)
{
	uint64_t *w = buf;
	size_t i;

	for (i = 0; i < bytes / 8; i++)
		w[i] = k->k[0] + i * k->k[1];
}

static int check(const void *buf, size_t bytes, const struct kvtier_key *k)
{
	const uint64_t *w = buf;
	size_t i;

	for (i = 0; i < bytes / 8; i++)
		if (w[i] != k->k[0] + i * k->k[1])
			return -1;
	return 0;
}

/* A fresh pool whose name is already removed (it lives as long as the fd). */
static struct kvtier_pool *anon_pool(const char *tag, uint64_t bs, uint32_t cap)
{
	struct kvtier_pool_params p;
	struct kvtier_pool *pool;

	kvtier_pool_params_init(&p, pname(tag), bs, cap);
	if (kvtier_pool_create(ctx, &p, &pool))
		return NULL;
	if (kvtier_pool_destroy(ctx, pool_name)) {
		kvtier_pool_close(pool);
		return NULL;
	}
	return pool;
}

/* ---- no module needed -------------------------------------------------- */

static void test_key_vectors(void)
{
	struct kvtier_key k0, k1, chain[2];
	uint64_t ids[2] = { 0, 1 };

	/* The documented mix; a change here changes every stored key. */
	kvtier_key_chain(NULL, 0, &k0);
	CHECK(k0.k[0] == 0x6393d51c06c618dcULL && k0.k[1] == 0x771bfd0d506e004bULL);
	kvtier_key_chain(&k0, 1, &k1);
	CHECK(k1.k[0] == 0x9aea8d122c0cfd70ULL && k1.k[1] == 0xbe81a49e19c5fcf2ULL);
	kvtier_key_chain_n(NULL, ids, 2, chain);
	CHECK(!memcmp(&chain[0], &k0, sizeof(k0)) && !memcmp(&chain[1], &k1, sizeof(k1)));
	/* out may alias prev */
	kvtier_key_chain(&k0, 1, &k0);
	CHECK(!memcmp(&k0, &k1, sizeof(k0)));
}

static void test_key_prefix(void)
{
	uint64_t a[3] = { 7, 8, 9 }, b[3] = { 7, 8, 10 }, c[3] = { 6, 8, 9 };
	struct kvtier_key ka[3], kb[3], kc[3];

	kvtier_key_chain_n(NULL, a, 3, ka);
	kvtier_key_chain_n(NULL, b, 3, kb);
	kvtier_key_chain_n(NULL, c, 3, kc);
	/* equal prefix, equal keys; a different earlier id changes later keys */
	CHECK(!memcmp(ka, kb, 2 * sizeof(ka[0])));
	CHECK(memcmp(&ka[2], &kb[2], sizeof(ka[0])));
	CHECK(memcmp(&ka[1], &kc[1], sizeof(ka[0])) && memcmp(&ka[2], &kc[2], sizeof(ka[0])));
}

static void test_names(void)
{
	CHECK(!strcmp(kvtier_feature_name(KVTIER_F_POOLS), "pools"));
	CHECK(!strcmp(kvtier_feature_name(KVTIER_F_MMAP), "mmap"));
	CHECK(!strcmp(kvtier_feature_name(KVTIER_F_NUMA), "numa"));
	CHECK(!strcmp(kvtier_feature_name(KVTIER_F_REPLACE), "replace"));
	CHECK(!strcmp(kvtier_feature_name(KVTIER_F_SG), "sg"));
	CHECK(!strcmp(kvtier_feature_name(KVTIER_F_LOOKUP_PIN), "lookup_pin"));
	CHECK(!strcmp(kvtier_feature_name(KVTIER_F_META), "meta"));
	CHECK(!strcmp(kvtier_feature_name(KVTIER_F_DIRECT), "direct"));
	CHECK(!strcmp(kvtier_feature_name(KVTIER_F_WEIGHTS), "weights"));
	CHECK(!strcmp(kvtier_feature_name(KVTIER_F_HINT_PROB), "hint_prob"));
	CHECK(kvtier_feature_name(1ULL << 63) == NULL);
	CHECK(kvtier_feature_name(0) == NULL);
	CHECK(!strcmp(kvtier_ioctl_name(_IOC_NR(KVTIER_IOC_API)), "API"));
	CHECK(!strcmp(kvtier_ioctl_name(_IOC_NR(KVTIER_IOC_LOOKUP)), "LOOKUP"));
	CHECK(!strcmp(kvtier_ioctl_name(_IOC_NR(KVTIER_IOC_STAT)), "STAT"));
	CHECK(!strcmp(kvtier_feature_name(KVTIER_F_NVME), "nvme"));
	CHECK(!strcmp(kvtier_ioctl_name(_IOC_NR(KVTIER_IOC_NVME_ATTACH)), "NVME_ATTACH"));
	CHECK(!strcmp(kvtier_ioctl_name(_IOC_NR(KVTIER_IOC_NVME_STAT)), "NVME_STAT"));
	CHECK(!strcmp(kvtier_ioctl_name(_IOC_NR(KVTIER_IOC_SYNC)), "SYNC"));
	CHECK(kvtier_ioctl_name(63) == NULL);
	CHECK(!strcmp(kvtier_tier_name(KVTIER_TIER_DRAM), "dram"));
	CHECK(!strcmp(kvtier_tier_name(99), "?"));
}

static void test_params_init(void)
{
	struct kvtier_pool_params p;

	memset(&p, 0xff, sizeof(p));
	kvtier_pool_params_init(&p, "x", 8192, 10);
	CHECK(!strcmp(p.name, "x"));
	CHECK_EQ(p.block_size, 8192);
	CHECK_EQ(p.capacity, 10);
	CHECK_EQ(p.dram_blocks, 0);
	CHECK_EQ(p.mode, 0);
	CHECK_EQ(p.numa_node, -1);
	CHECK_EQ(p.flags, 0);
}

static void test_meta_set(void)
{
	static const char fp[] = "llama-3-8b/bf16/tok:5f2a";
	char big[KVTIER_META_MAX + 1];
	struct kvtier_meta m;
	unsigned int i;

	memset(&m, 0xee, sizeof(m));
	CHECK_EQ(kvtier_meta_set(&m, fp, sizeof(fp)), 0);
	CHECK_EQ(m.len, sizeof(fp));
	CHECK_EQ(m.flags, 0);
	CHECK(!memcmp(m.data, fp, sizeof(fp)));
	for (i = sizeof(fp); i < KVTIER_META_MAX; i++)
		CHECK_EQ(m.data[i], 0);
	memset(big, 'x', sizeof(big));
	CHECK_EQ(kvtier_meta_set(&m, big, KVTIER_META_MAX), 0);
	CHECK_EQ(m.len, KVTIER_META_MAX);
	/* too long: -EMSGSIZE, and an empty record, not a truncated one */
	memset(&m, 0xee, sizeof(m));
	CHECK_EQ(kvtier_meta_set(&m, big, sizeof(big)), -EMSGSIZE);
	CHECK_EQ(m.len, 0);
	CHECK_EQ(m.flags, 0);
	for (i = 0; i < KVTIER_META_MAX; i++)
		CHECK_EQ(m.data[i], 0);
	CHECK_EQ(kvtier_meta_set(&m, NULL, 0), 0);
	CHECK_EQ(m.len, 0);
}

/* ---- against the module ------------------------------------------------ */

static void test_open(void)
{
	struct kvtier_api api, all;
	struct kvtier_ctx *c;

	CHECK_EQ(kvtier_api_info(ctx, &all), 0);
	CHECK_EQ(all.api, KVTIER_API_VERSION);
	CHECK_EQ(all.features, all.supported);
	CHECK(all.supported & KVTIER_F_POOLS);
	CHECK(all.ioctls & (1ULL << _IOC_NR(KVTIER_IOC_LOOKUP)));

	CHECK_EQ(kvtier_open(&c, KVTIER_F_POOLS), 0);
	kvtier_api_info(c, &api);
	CHECK_EQ(api.features, KVTIER_F_POOLS);
	CHECK(kvtier_ctx_fd(c) >= 0);
	kvtier_close(c);

	/* a feature the kernel lacks is refused, on the one open */
	CHECK_EQ(kvtier_open(&c, KVTIER_F_POOLS | 1ULL << 62), -EOPNOTSUPP);
	kvtier_close(NULL);

	/* a pool of a context without a feature cannot use it */
	CHECK_EQ(kvtier_open(&c, KVTIER_F_POOLS), 0);
	{
		struct kvtier_pool_params pp;
		struct kvtier_pool *p;
		struct kvtier_hbm_stat hs;

		kvtier_pool_params_init(&pp, "kvt-test.nofeat", 4096, 4);
		CHECK_EQ(kvtier_pool_create(c, &pp, &p), 0);
		CHECK_EQ(kvtier_hbm_stat(p, &hs), -EOPNOTSUPP);
		CHECK_EQ(kvtier_pool_destroy(c, "kvt-test.nofeat"), 0);
		kvtier_pool_close(p);
	}
	kvtier_close(c);
}

static void test_pool_lifecycle(void)
{
	struct kvtier_pool_params p;
	struct kvtier_pool *a, *b;
	char longname[KVTIER_NAME_MAX + 8];

	kvtier_pool_params_init(&p, pname("life"), 8192, 16);
	p.dram_blocks = 8;
	CHECK_EQ(kvtier_pool_create(ctx, &p, &a), 0);
	CHECK_EQ(kvtier_pool_block_size(a), 8192);
	CHECK_EQ(kvtier_pool_capacity(a), 16);
	CHECK(!strcmp(kvtier_pool_name(a), pool_name));
	CHECK(kvtier_pool_fd(a) >= 0);
	CHECK_EQ(kvtier_pool_create(ctx, &p, &b), -EEXIST);

	/* OPEN_EXISTING takes the existing configuration */
	p.flags = KVTIER_POOL_OPEN_EXISTING;
	p.block_size = 4096;
	CHECK_EQ(kvtier_pool_create(ctx, &p, &b), 0);
	CHECK_EQ(kvtier_pool_block_size(b), 8192);
	kvtier_pool_close(b);

	CHECK_EQ(kvtier_pool_open(ctx, pool_name, 0, &b), 0);
	CHECK_EQ(kvtier_pool_capacity(b), 16);
	kvtier_pool_close(b);

	CHECK_EQ(kvtier_pool_destroy(ctx, pool_name), 0);
	CHECK_EQ(kvtier_pool_destroy(ctx, pool_name), -ENOENT);
	CHECK_EQ(kvtier_pool_open(ctx, pool_name, 0, &b), -ENOENT);
	kvtier_pool_close(a);
	kvtier_pool_close(NULL);

	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	kvtier_pool_params_init(&p, longname, 4096, 1);
	CHECK_EQ(kvtier_pool_create(ctx, &p, &b), -ENAMETOOLONG);
	CHECK_EQ(kvtier_pool_open(ctx, longname, 0, &b), -ENAMETOOLONG);
	CHECK_EQ(kvtier_pool_destroy(ctx, longname), -ENAMETOOLONG);
	kvtier_pool_params_init(&p, pname("bad"), 1000, 1);
	CHECK_EQ(kvtier_pool_create(ctx, &p, &b), -EINVAL);
}

static void test_put_get_lookup(void)
{
	enum { N = 8, BS = 8192 };
	uint64_t ids[N] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct kvtier_block blk[N];
	struct kvtier_pool_stat st;
	struct kvtier_key keys[N];
	struct kvtier_pool *pool;
	uint32_t done, i;
	unsigned int tier;
	uint64_t addr;
	char *buf;

	pool = anon_pool("pgl", BS, 32);
	CHECK(pool);
	buf = malloc(N * BS);
	CHECK(buf);
	kvtier_key_chain_n(NULL, ids, N, keys);

	for (i = 0; i < N; i++) {
		fill(buf + i * BS, BS, &keys[i]);
		kvtier_block_set(&blk[i], &keys[i], buf + i * BS);
	}
	CHECK_EQ(kvtier_put(pool, blk, N, 0, &done), 0);
	CHECK_EQ(done, N);
	for (i = 0; i < N; i++)
		CHECK_EQ(blk[i].status, 0);

	/* PUT of a present key: per-entry -EEXIST, batch still 0 */
	CHECK_EQ(kvtier_put(pool, blk, 1, 0, &done), 0);
	CHECK_EQ(done, 0);
	CHECK_EQ(blk[0].status, -EEXIST);
	CHECK_EQ(kvtier_put1(pool, &keys[0], buf, 0), -EEXIST);

	memset(buf, 0, N * BS);
	for (i = 0; i < N; i++)
		kvtier_block_set(&blk[i], &keys[i], buf + i * BS);
	CHECK_EQ(kvtier_get(pool, blk, N, 0, &done), 0);
	CHECK_EQ(done, N);
	for (i = 0; i < N; i++)
		CHECK(!check(buf + i * BS, BS, &keys[i]));

	/* the chain's resident prefix ends at the first hole */
	CHECK_EQ(kvtier_drop1(pool, &keys[5]), 0);
	CHECK_EQ(kvtier_drop1(pool, &keys[5]), -ENOENT);
	for (i = 0; i < N; i++)
		kvtier_block_set(&blk[i], &keys[i], NULL);
	CHECK_EQ(kvtier_lookup(pool, blk, N, 0, &done), 0);
	CHECK_EQ(done, 5);
	CHECK_EQ(blk[4].status, 0);
	CHECK_EQ(blk[4].tier, KVTIER_TIER_DRAM);
	CHECK(blk[4].addr < 32);
	CHECK_EQ(blk[5].status, -ENOENT);
	CHECK_EQ(blk[5].tier, KVTIER_TIER_NONE);
	CHECK(blk[5].addr == KVTIER_ADDR_NONE);
	CHECK_EQ(blk[6].status, 0);

	CHECK_EQ(kvtier_lookup1(pool, &keys[4], &addr, &tier), 0);
	CHECK(addr == blk[4].addr);
	CHECK_EQ(tier, KVTIER_TIER_DRAM);
	CHECK_EQ(kvtier_lookup1(pool, &keys[5], &addr, &tier), -ENOENT);
	CHECK(addr == KVTIER_ADDR_NONE);
	CHECK_EQ(kvtier_get1(pool, &keys[5], buf), -ENOENT);

	/* REPLACE */
	fill(buf, BS, &keys[7]);
	CHECK_EQ(kvtier_put1(pool, &keys[0], buf, KVTIER_PUT_REPLACE), 0);
	memset(buf, 0, BS);
	CHECK_EQ(kvtier_get1(pool, &keys[0], buf), 0);
	CHECK(!check(buf, BS, &keys[7]));

	CHECK_EQ(kvtier_stat(pool, &st), 0);
	CHECK_EQ(st.block_size, BS);
	CHECK_EQ(st.resident[KVTIER_TIER_DRAM], N - 1);
	CHECK_EQ(st.puts, N + 1);

	/* whole-batch errors */
	CHECK_EQ(kvtier_get(pool, blk, 0, 0, &done), -EINVAL);
	CHECK_EQ(kvtier_lookup(pool, blk, 1, 0x80000000u, &done), -EINVAL);

	free(buf);
	kvtier_pool_close(pool);
}

/* More entries than one ioctl takes: the library splits the batch. */
static void test_big_batch(void)
{
	struct kvtier_pool_stat st;
	struct kvtier_api api;
	struct kvtier_block *blk;
	struct kvtier_key *keys;
	struct kvtier_pool *pool;
	uint64_t *ids;
	uint32_t n, i, done, hole;
	char *buf;

	kvtier_api_info(ctx, &api);
	n = api.batch_max + 100;
	pool = anon_pool("big", 4096, n);
	CHECK(pool);
	blk = calloc(n, sizeof(*blk));
	keys = calloc(n, sizeof(*keys));
	ids = calloc(n, sizeof(*ids));
	buf = calloc(1, 4096);
	CHECK(blk && keys && ids && buf);
	for (i = 0; i < n; i++)
		ids[i] = i;
	kvtier_key_chain_n(NULL, ids, n, keys);
	for (i = 0; i < n; i++)
		kvtier_block_set(&blk[i], &keys[i], buf);
	CHECK_EQ(kvtier_put(pool, blk, n, 0, &done), 0);
	CHECK_EQ(done, n);

	for (i = 0; i < n; i++)
		kvtier_block_set(&blk[i], &keys[i], NULL);
	CHECK_EQ(kvtier_lookup(pool, blk, n, 0, &done), 0);
	CHECK_EQ(done, n);

	/* a hole in the second chunk */
	hole = api.batch_max + 7;
	CHECK_EQ(kvtier_drop1(pool, &keys[hole]), 0);
	CHECK_EQ(kvtier_lookup(pool, blk, n, 0, &done), 0);
	CHECK_EQ(done, hole);

	/* a hole in the first chunk: the second chunk adds nothing */
	CHECK_EQ(kvtier_drop1(pool, &keys[10]), 0);
	CHECK_EQ(kvtier_lookup(pool, blk, n, 0, &done), 0);
	CHECK_EQ(done, 10);
	CHECK_EQ(blk[n - 1].status, 0);

	/* PIN likewise: the chunks after the first hole pin nothing */
	for (i = 0; i < n; i++)
		kvtier_block_set(&blk[i], &keys[i], NULL);
	CHECK_EQ(kvtier_lookup(pool, blk, n, KVTIER_LOOKUP_PIN, &done), 0);
	CHECK_EQ(done, 10);
	CHECK_EQ(blk[10].status, -ENOENT);
	CHECK_EQ(blk[n - 1].status, 0);
	CHECK_EQ(kvtier_stat(pool, &st), 0);
	CHECK_EQ(st.pinned, 10);
	CHECK_EQ(kvtier_drop1(pool, &keys[9]), -EBUSY);
	CHECK_EQ(kvtier_unpin(pool, blk, 10, 0, &done), 0);
	CHECK_EQ(done, 10);
	CHECK_EQ(kvtier_stat(pool, &st), 0);
	CHECK_EQ(st.pinned, 0);

	free(blk);
	free(keys);
	free(ids);
	free(buf);
	kvtier_pool_close(pool);
}

/* A block PUT from 32 layers' buffers comes back whole, and into them. */
static void test_segs(void)
{
	static char blk[16384], out[16384], lay[32][512];
	struct kvtier_seg seg[32];
	struct kvtier_block b;
	struct kvtier_pool *pool;
	struct kvtier_key k;
	uint32_t i, done;

	pool = anon_pool("segs", sizeof(blk), 4);
	CHECK(pool);
	kvtier_key_chain(NULL, 7, &k);
	fill(blk, sizeof(blk), &k);
	/* Uneven pieces: 32 segments of 256 .. 768 bytes, in order. */
	for (i = 0; i < 32; i++) {
		seg[i].addr = (uintptr_t)blk + (i / 2) * 1024 + (i % 2) * 256;
		seg[i].len = i % 2 ? 768 : 256;
	}
	kvtier_block_set_segs(&b, &k, seg, 32);
	CHECK_EQ(kvtier_put(pool, &b, 1, 0, &done), 0);
	CHECK_EQ(b.status, 0);
	CHECK_EQ(kvtier_get1(pool, &k, out), 0);
	CHECK_EQ(memcmp(out, blk, sizeof(blk)), 0);

	/* Out into 32 buffers of 512 bytes. */
	for (i = 0; i < 32; i++) {
		seg[i].addr = (uintptr_t)lay[i];
		seg[i].len = sizeof(lay[i]);
	}
	kvtier_block_set_segs(&b, &k, seg, 32);
	CHECK_EQ(kvtier_get(pool, &b, 1, 0, &done), 0);
	CHECK_EQ(b.status, 0);
	CHECK_EQ(memcmp(lay, blk, sizeof(blk)), 0);

	/* A byte short: the entry's -EINVAL, nothing stored. */
	seg[31].len--;
	kvtier_key_chain(NULL, 8, &k);
	kvtier_block_set_segs(&b, &k, seg, 32);
	CHECK_EQ(kvtier_put(pool, &b, 1, 0, &done), 0);
	CHECK_EQ(b.status, -EINVAL);
	CHECK_EQ(kvtier_lookup1(pool, &k, NULL, NULL), -ENOENT);
	kvtier_pool_close(pool);
}

static void test_pin(void)
{
	struct kvtier_pool_stat st;
	struct kvtier_block b;
	struct kvtier_pool *pool;
	struct kvtier_key k;
	uint32_t done;
	char buf[4096] = { 1 };

	pool = anon_pool("pin", 4096, 4);
	CHECK(pool);
	kvtier_key_chain(NULL, 42, &k);
	CHECK_EQ(kvtier_put1(pool, &k, buf, 0), 0);

	kvtier_block_set(&b, &k, NULL);
	CHECK_EQ(kvtier_pin(pool, &b, 1, 0, &done), 0);
	CHECK_EQ(done, 1);
	CHECK_EQ(kvtier_stat(pool, &st), 0);
	CHECK_EQ(st.pinned, 1);
	CHECK_EQ(kvtier_drop1(pool, &k), -EBUSY);

	kvtier_block_set(&b, &k, NULL);
	CHECK_EQ(kvtier_unpin(pool, &b, 1, 0, &done), 0);
	CHECK_EQ(done, 1);
	kvtier_block_set(&b, &k, NULL);
	CHECK_EQ(kvtier_unpin(pool, &b, 1, 0, &done), 0);
	CHECK_EQ(b.status, -EINVAL);
	CHECK_EQ(kvtier_drop1(pool, &k), 0);
	kvtier_block_set(&b, &k, NULL);
	CHECK_EQ(kvtier_pin(pool, &b, 1, 0, &done), 0);
	CHECK_EQ(b.status, -ENOENT);
	kvtier_pool_close(pool);
}

static void test_map(void)
{
	enum { BS = 8192, CAP = 8 };
	struct kvtier_pool *pool;
	struct kvtier_map *map, *part;
	struct kvtier_key k;
	uint64_t addr;
	char *buf;

	pool = anon_pool("map", BS, CAP);
	CHECK(pool);
	buf = malloc(BS);
	CHECK(buf);
	kvtier_key_chain(NULL, 3, &k);
	fill(buf, BS, &k);
	CHECK_EQ(kvtier_put1(pool, &k, buf, 0), 0);
	CHECK_EQ(kvtier_lookup1(pool, &k, &addr, NULL), 0);

	CHECK_EQ(kvtier_map(pool, 0, 0, &map), 0);
	CHECK_EQ(kvtier_map_len(map), BS * CAP);
	CHECK(kvtier_block_ptr(map, addr) == (const char *)kvtier_map_base(map) + addr * BS);
	CHECK(!check(kvtier_block_ptr(map, addr), BS, &k));
	CHECK(kvtier_block_ptr(map, CAP) == NULL);
	CHECK(kvtier_block_ptr(map, KVTIER_ADDR_NONE) == NULL);

	/* a one-block window onto the same block */
	CHECK_EQ(kvtier_map(pool, addr, 1, &part), 0);
	CHECK(kvtier_block_ptr(part, addr) == kvtier_map_base(part));
	CHECK(!check(kvtier_block_ptr(part, addr), BS, &k));
	CHECK(kvtier_block_ptr(part, addr + 1) == NULL);
	kvtier_unmap(part);
	kvtier_unmap(map);
	kvtier_unmap(NULL);

	CHECK_EQ(kvtier_map(pool, CAP, 1, &map), -EINVAL);
	CHECK_EQ(kvtier_map(pool, CAP - 1, 2, &map), -EINVAL);
	free(buf);
	kvtier_pool_close(pool);
}

/* Reserve, fill in place through the window, commit; abort; the map's ptrs. */
static void test_reserve(void)
{
	enum { BS = 8192, CAP = 8 };
	struct kvtier_pool *pool;
	struct kvtier_map *win, *map;
	struct kvtier_block b[2];
	struct kvtier_key k[2];
	uint32_t done;
	char *buf;
	int i;

	pool = anon_pool("reserve", BS, CAP);
	CHECK(pool);
	buf = malloc(BS);
	CHECK(buf);
	CHECK_EQ(kvtier_map_reserved(pool, &win), 0);
	CHECK_EQ(kvtier_map_len(win), BS * CAP);
	for (i = 0; i < 2; i++) {
		kvtier_key_chain(NULL, 70 + i, &k[i]);
		kvtier_block_set(&b[i], &k[i], NULL);
	}
	CHECK_EQ(kvtier_reserve(pool, b, 2, 0, &done), 0);
	CHECK_EQ(done, 2);
	CHECK(kvtier_reserved_ptr(win, b[0].addr) ==
	      (char *)kvtier_map_base(win) + b[0].addr * BS);
	CHECK(kvtier_reserved_ptr(win, CAP) == NULL);
	fill(kvtier_reserved_ptr(win, b[0].addr), BS, &k[0]);
	CHECK_EQ(kvtier_lookup1(pool, &k[0], NULL, NULL), -ENOENT);

	CHECK_EQ(kvtier_commit(pool, b, 1, 0, &done), 0);
	CHECK_EQ(done, 1);
	CHECK_EQ(kvtier_abort(pool, b + 1, 1, 0, &done), 0);
	CHECK_EQ(done, 1);
	CHECK_EQ(kvtier_abort(pool, b + 1, 1, 0, &done), 0);
	CHECK_EQ(b[1].status, -ENOENT);
	CHECK_EQ(kvtier_get1(pool, &k[0], buf), 0);
	CHECK(!check(buf, BS, &k[0]));
	CHECK_EQ(kvtier_lookup1(pool, &k[1], NULL, NULL), -ENOENT);

	/* Through a ring: RESERVE, then COMMIT, each run by io_uring. */
	{
		struct kvtier_ring_cqe cqe;
		struct kvtier_ring *ring;
		struct kvtier_batch rb;

		CHECK_EQ(kvtier_ring_open(&ring, 4), 0);
		kvtier_block_set(&b[1], &k[1], NULL);
		memset(&rb, 0, sizeof(rb));
		rb.blocks = (uintptr_t)&b[1];
		rb.count = 1;
		CHECK_EQ(kvtier_ring_queue(ring, pool, KVTIER_IOC_RESERVE, &rb,
					   7), 0);
		CHECK_EQ(kvtier_ring_submit(ring), 1);
		CHECK_EQ(kvtier_ring_reap(ring, &cqe, 1, 1), 1);
		CHECK_EQ(cqe.res, 0);
		CHECK_EQ(rb.done, 1);
		fill(kvtier_reserved_ptr(win, b[1].addr), BS, &k[1]);
		rb.done = 0;
		CHECK_EQ(kvtier_ring_queue(ring, pool, KVTIER_IOC_COMMIT, &rb,
					   8), 0);
		CHECK_EQ(kvtier_ring_submit(ring), 1);
		CHECK_EQ(kvtier_ring_reap(ring, &cqe, 1, 1), 1);
		CHECK_EQ(cqe.user_data, 8);
		CHECK_EQ(cqe.res, 0);
		CHECK_EQ(rb.done, 1);
		CHECK_EQ(kvtier_get1(pool, &k[1], buf), 0);
		CHECK(!check(buf, BS, &k[1]));
		kvtier_ring_close(ring);
	}

	/* A read-only view is no window. */
	CHECK_EQ(kvtier_map(pool, 0, 0, &map), 0);
	CHECK(kvtier_reserved_ptr(map, 0) == NULL);
	kvtier_unmap(map);
	kvtier_unmap(win);
	free(buf);
	kvtier_pool_close(pool);
}

/* Record i of a test: i bytes (0..KVTIER_META_MAX) derived from @k. */
static void meta_of(struct kvtier_meta *m, const struct kvtier_key *k,
		    uint32_t len)
{
	uint8_t data[KVTIER_META_MAX];
	uint32_t i;

	for (i = 0; i < len; i++)
		data[i] = (uint8_t)(k->k[0] >> (8 * (i % 8))) ^ (uint8_t)i;
	kvtier_meta_set(m, data, len);
}

/* @got is exactly the record meta_of(@k, @len) makes. */
static int meta_is(const struct kvtier_meta *got, const struct kvtier_key *k,
		   uint32_t len)
{
	struct kvtier_meta want;

	meta_of(&want, k, len);
	return !memcmp(got, &want, sizeof(want));
}

/*
 * Records through the *_meta() calls: PUT, GET and LOOKUP, a batch larger
 * than batch_max (each chunk's records where they belong), -EMSGSIZE for
 * one entry, REPLACE with and without one, COMMIT, a miss.
 */
static void test_meta(void)
{
	enum { N = 5, BS = 8192 };
	static const uint32_t lens[N] = { 0, 1, 24, 63, KVTIER_META_MAX };
	struct kvtier_meta m[N], *bm = NULL;
	struct kvtier_block b[N], *bb = NULL;
	struct kvtier_map *win = NULL;
	struct kvtier_pool_stat st;
	struct kvtier_key keys[N], k;
	struct kvtier_pool *pool;
	struct kvtier_api api;
	uint32_t i, n, done;
	char *buf = NULL;

	kvtier_api_info(ctx, &api);
	n = api.batch_max + 3;
	pool = anon_pool("meta", BS, n + 8);
	CHECK(pool);
	buf = malloc(N * BS);
	CHECK(buf);
	for (i = 0; i < N; i++) {
		kvtier_key_chain(NULL, 900 + i, &keys[i]);
		fill(buf + i * BS, BS, &keys[i]);
		kvtier_block_set(&b[i], &keys[i], buf + i * BS);
		meta_of(&m[i], &keys[i], lens[i]);
	}
	/* entry 2 too long: -EMSGSIZE, the others stored */
	m[2].len = KVTIER_META_MAX + 1;
	CHECK_EQ(kvtier_put_meta(pool, b, m, N, 0, &done), 0);
	CHECK_EQ(done, N - 1);
	CHECK_EQ(b[2].status, -EMSGSIZE);
	CHECK_EQ(kvtier_lookup1(pool, &keys[2], NULL, NULL), -ENOENT);
	meta_of(&m[2], &keys[2], lens[2]);
	CHECK_EQ(kvtier_put_meta(pool, b + 2, m + 2, 1, 0, &done), 0);
	CHECK_EQ(done, 1);

	memset(buf, 0, N * BS);
	memset(m, 0xa5, sizeof(m));
	CHECK_EQ(kvtier_get_meta(pool, b, m, N, 0, &done), 0);
	CHECK_EQ(done, N);
	for (i = 0; i < N; i++) {
		CHECK(!check(buf + i * BS, BS, &keys[i]));
		CHECK(meta_is(&m[i], &keys[i], lens[i]));
	}
	for (i = 0; i < N; i++)
		kvtier_block_set(&b[i], &keys[i], NULL);
	memset(m, 0xa5, sizeof(m));
	CHECK_EQ(kvtier_lookup_meta(pool, b, m, N, 0, &done), 0);
	CHECK_EQ(done, N);
	for (i = 0; i < N; i++)
		CHECK(meta_is(&m[i], &keys[i], lens[i]));

	/* REPLACE gives the key the new record; the plain PUT, none */
	kvtier_block_set(&b[0], &keys[4], buf);
	meta_of(&m[0], &keys[4], 7);
	CHECK_EQ(kvtier_put_meta(pool, b, m, 1, KVTIER_PUT_REPLACE, &done), 0);
	CHECK_EQ(done, 1);
	CHECK_EQ(kvtier_get_meta(pool, b, m + 1, 1, 0, &done), 0);
	CHECK(meta_is(&m[1], &keys[4], 7));
	CHECK_EQ(kvtier_put1(pool, &keys[4], buf, KVTIER_PUT_REPLACE), 0);
	CHECK_EQ(kvtier_get_meta(pool, b, m + 1, 1, 0, &done), 0);
	CHECK_EQ(done, 1);
	CHECK_EQ(m[1].len, 0);

	/*
	 * More entries than one ioctl takes: the second chunk's records are
	 * the second chunk's entries'. Key i (a new chain) holds record
	 * i % 65 bytes long; the last 3 entries are the second chunk.
	 */
	bb = calloc(n, sizeof(*bb));
	bm = calloc(n, sizeof(*bm));
	CHECK(bb && bm);
	for (i = 0; i < n; i++) {
		kvtier_key_chain(NULL, 100000 + i, &k);
		kvtier_block_set(&bb[i], &k, buf);
		meta_of(&bm[i], &k, i % (KVTIER_META_MAX + 1));
	}
	CHECK_EQ(kvtier_put_meta(pool, bb, bm, n, 0, &done), 0);
	CHECK_EQ(done, n);
	memset(bm, 0xa5, n * sizeof(*bm));
	for (i = 0; i < n; i++)
		bb[i].buf = 0;
	CHECK_EQ(kvtier_lookup_meta(pool, bb, bm, n, 0, &done), 0);
	CHECK_EQ(done, n);
	for (i = 0; i < n; i++) {
		k.k[0] = bb[i].key[0];
		k.k[1] = bb[i].key[1];
		CHECK(meta_is(&bm[i], &k, i % (KVTIER_META_MAX + 1)));
	}
	CHECK_EQ(kvtier_stat(pool, &st), 0);
	CHECK(st.meta_bytes > 0);

	/* RESERVE, fill in place, COMMIT with a record */
	if (has_feature(KVTIER_F_RESERVE)) {
		CHECK_EQ(kvtier_map_reserved(pool, &win), 0);
		kvtier_key_chain(NULL, 990, &k);
		kvtier_block_set(&b[0], &k, NULL);
		CHECK_EQ(kvtier_reserve(pool, b, 1, 0, &done), 0);
		CHECK_EQ(done, 1);
		fill(kvtier_reserved_ptr(win, b[0].addr), BS, &k);
		meta_of(&m[0], &k, 40);
		CHECK_EQ(kvtier_commit_meta(pool, b, m, 1, 0, &done), 0);
		CHECK_EQ(done, 1);
		kvtier_unmap(win);
		kvtier_block_set(&b[0], &k, buf);
		memset(&m[1], 0xa5, sizeof(m[1]));
		CHECK_EQ(kvtier_get_meta(pool, b, m + 1, 1, 0, &done), 0);
		CHECK_EQ(done, 1);
		CHECK(!check(buf, BS, &k));
		CHECK(meta_is(&m[1], &k, 40));
	}

	/* A miss: an empty record, whatever was there */
	kvtier_key_chain(NULL, 991, &k);
	kvtier_block_set(&b[0], &k, buf);
	memset(&m[0], 0xa5, sizeof(m[0]));
	CHECK_EQ(kvtier_get_meta(pool, b, m, 1, 0, &done), 0);
	CHECK_EQ(b[0].status, -ENOENT);
	CHECK(meta_is(&m[0], &k, 0));

	free(bb);
	free(bm);
	free(buf);
	kvtier_pool_close(pool);
}

/* A context without KVTIER_F_META: records are refused, the batch undone. */
static void test_meta_needs_feature(void)
{
	struct kvtier_pool_params pp;
	struct kvtier_pool *p;
	struct kvtier_block b;
	struct kvtier_meta m;
	struct kvtier_key k;
	struct kvtier_ctx *c;
	static char buf[4096];
	uint32_t done;

	CHECK_EQ(kvtier_open(&c, KVTIER_F_POOLS), 0);
	kvtier_pool_params_init(&pp, pname("nometa"), 4096, 4);
	CHECK_EQ(kvtier_pool_create(c, &pp, &p), 0);
	kvtier_pool_destroy(c, pool_name);
	kvtier_key_chain(NULL, 5, &k);
	kvtier_block_set(&b, &k, buf);
	kvtier_meta_set(&m, "x", 1);
	CHECK_EQ(kvtier_put_meta(p, &b, &m, 1, 0, &done), -EOPNOTSUPP);
	CHECK_EQ(kvtier_lookup1(p, &k, NULL, NULL), -ENOENT);
	/* without records the same handle works */
	CHECK_EQ(kvtier_put_meta(p, &b, NULL, 1, 0, &done), 0);
	CHECK_EQ(done, 1);
	CHECK_EQ(kvtier_get_meta(p, &b, &m, 1, 0, &done), -EOPNOTSUPP);
	kvtier_pool_close(p);
	kvtier_close(c);
}

static void test_staging(void)
{
	struct kvtier_pool_params p;
	struct kvtier_pool *pool;
	void *buf;
	int node;

	pool = anon_pool("stg", 4096, 2);
	CHECK(pool);
	CHECK_EQ(kvtier_alloc_staging(pool, 0, &buf), -EINVAL);
	CHECK_EQ(kvtier_alloc_staging(pool, 3 << 20, &buf), 0);
	CHECK(((uintptr_t)buf & 4095) == 0);
	memset(buf, 0xa5, 3 << 20);
	kvtier_free_staging(pool, buf, 3 << 20);
	kvtier_free_staging(pool, NULL, 0);
	kvtier_pool_close(pool);

	/* a pool with a node: its staging pages sit on that node */
	node = numa_available() >= 0 ? numa_max_node() : 0;
	kvtier_pool_params_init(&p, pname("stgn"), 4096, 2);
	p.numa_node = node;
	CHECK_EQ(kvtier_pool_create(ctx, &p, &pool), 0);
	kvtier_pool_destroy(ctx, pool_name);
	CHECK_EQ(kvtier_pool_numa_node(pool), node);
	CHECK_EQ(kvtier_alloc_staging(pool, 1 << 20, &buf), 0);
	memset(buf, 0x5a, 1 << 20);
	if (numa_available() >= 0) {
		int where = -1;

		CHECK_EQ(get_mempolicy(&where, NULL, 0, (char *)buf + 4096,
				       MPOL_F_NODE | MPOL_F_ADDR), 0);
		CHECK_EQ(where, node);
		printf("# staging on node %d of %d\n", where, numa_max_node() + 1);
	}
	kvtier_free_staging(pool, buf, 1 << 20);
	kvtier_pool_close(pool);
}

static void test_rdonly(void)
{
	struct kvtier_pool_params p;
	struct kvtier_pool *rw, *ro;
	struct kvtier_key k;
	char buf[4096] = { 0 };

	kvtier_pool_params_init(&p, pname("ro"), 4096, 2);
	CHECK_EQ(kvtier_pool_create(ctx, &p, &rw), 0);
	CHECK_EQ(kvtier_pool_open(ctx, pool_name, KVTIER_POOL_RDONLY, &ro), 0);
	kvtier_pool_destroy(ctx, pool_name);
	kvtier_key_chain(NULL, 1, &k);
	CHECK_EQ(kvtier_put1(ro, &k, buf, 0), -EBADF);
	CHECK_EQ(kvtier_put1(rw, &k, buf, 0), 0);
	CHECK_EQ(kvtier_get1(ro, &k, buf), 0);
	CHECK_EQ(kvtier_drop1(ro, &k), -EBADF);
	kvtier_pool_close(ro);
	kvtier_pool_close(rw);
}


/* PUT, GET and LOOKUP through a ring (kvtier_ring_*): the ioctls' results. */
static void test_ring_round_trip(void)
{
	enum { N = 4, BS = 8192 };
	uint64_t ids[N] = { 71, 72, 73, 74 };
	struct kvtier_block pb[N], gb[N], lb[N];
	struct kvtier_batch put, get, look, drop;
	struct kvtier_ring_cqe cqe[4];
	struct kvtier_key keys[N];
	struct kvtier_ring *ring;
	struct kvtier_pool *pool;
	char *in, *out;
	int i, n, res[4] = { 1, 1, 1, 1 };

	pool = anon_pool("ring", BS, 16);
	CHECK(pool);
	CHECK_EQ(kvtier_ring_open(&ring, 0), -EINVAL);
	CHECK_EQ(kvtier_ring_open(&ring, 8), 0);
	CHECK(kvtier_ring_fd(ring) >= 0);
	in = malloc(N * BS);
	out = calloc(N, BS);
	CHECK(in && out);
	kvtier_key_chain_n(NULL, ids, N, keys);
	for (i = 0; i < N; i++) {
		fill(in + i * BS, BS, &keys[i]);
		kvtier_block_set(&pb[i], &keys[i], in + i * BS);
		kvtier_block_set(&gb[i], &keys[i], out + i * BS);
		kvtier_block_set(&lb[i], &keys[i], NULL);
	}
	memset(&put, 0, sizeof(put));
	put.blocks = (uintptr_t)pb;
	put.count = N;
	get = put;
	get.blocks = (uintptr_t)gb;
	look = put;
	look.blocks = (uintptr_t)lb;
	drop = look;

	/* One PUT; then GET, LOOKUP and a DROP (not taken) in one submit. */
	CHECK_EQ(kvtier_ring_queue(ring, pool, KVTIER_IOC_PUT, &put, 0), 0);
	CHECK_EQ(kvtier_ring_submit(ring), 1);
	CHECK_EQ(kvtier_ring_reap(ring, cqe, 4, 1), 1);
	CHECK_EQ(cqe[0].user_data, 0);
	CHECK_EQ(cqe[0].res, 0);
	CHECK_EQ(put.done, N);
	CHECK_EQ(kvtier_ring_queue(ring, pool, KVTIER_IOC_GET, &get, 1), 0);
	CHECK_EQ(kvtier_ring_queue(ring, pool, KVTIER_IOC_LOOKUP, &look, 2), 0);
	CHECK_EQ(kvtier_ring_queue(ring, pool, KVTIER_IOC_DROP, &drop, 3), 0);
	CHECK_EQ(kvtier_ring_submit(ring), 3);
	for (n = 0; n < 3; ) {
		int got = kvtier_ring_reap(ring, cqe, 4, 1);

		CHECK(got > 0);
		for (i = 0; i < got; i++) {
			CHECK(cqe[i].user_data >= 1 && cqe[i].user_data <= 3);
			res[cqe[i].user_data] = cqe[i].res;
		}
		n += got;
	}
	CHECK_EQ(n, 3);
	CHECK_EQ(kvtier_ring_reap(ring, cqe, 4, 0), 0);
	CHECK_EQ(res[1], 0);
	CHECK_EQ(res[2], 0);
	CHECK_EQ(res[3], -EOPNOTSUPP);
	CHECK_EQ(get.done, N);
	CHECK_EQ(look.done, N);
	for (i = 0; i < N; i++) {
		CHECK_EQ(gb[i].status, 0);
		CHECK(!check(out + i * BS, BS, &keys[i]));
		CHECK_EQ(lb[i].tier, KVTIER_TIER_DRAM);
		CHECK(lb[i].addr == gb[i].addr);
	}
	/* Nothing was dropped. */
	CHECK_EQ(kvtier_lookup(pool, lb, N, 0, (uint32_t *)&n), 0);
	CHECK_EQ(n, N);
	/* A present key: the ioctl's per-entry -EEXIST, the command's 0. */
	CHECK_EQ(kvtier_ring_queue(ring, pool, KVTIER_IOC_PUT, &put, 5), 0);
	CHECK_EQ(kvtier_ring_submit(ring), 1);
	CHECK_EQ(kvtier_ring_reap(ring, cqe, 1, 1), 1);
	CHECK_EQ(cqe[0].res, 0);
	CHECK_EQ(put.done, 0);
	CHECK_EQ(pb[0].status, -EEXIST);
	kvtier_ring_close(ring);
	kvtier_ring_close(NULL);
	free(in);
	free(out);
	kvtier_pool_close(pool);
}

/* ---- the NVMe tier ----------------------------------------------------- */

#define NV_BS		(64 << 10)
#define NV_CAP		256
#define NV_DRAM		8
#define NV_N		64		/* blocks PUT, 8x the DRAM share */
#define NV_MORE		4		/* PUT before the SYNC */

static char nv_pool[KVTIER_NAME_MAX];

static int read_sysfs(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	int ok;

	if (!f)
		return -1;
	ok = fgets(buf, size, f) != NULL;
	fclose(f);
	return ok ? 0 : -1;
}

/* Pick the device the nvme_* tests may format, or say why there is none. */
static void nvme_pick(void)
{
	static char why[160];
	const char *env = getenv("KVTIER_TEST_NVME");
	struct kvtier_nvme_stat ns;
	char serial[64];

	nvme_skip = why;
	if (!ctx) {
		snprintf(why, sizeof(why), "/dev/kvtier not available");
		return;
	}
	if (env && (!*env || !strcmp(env, "0"))) {
		snprintf(why, sizeof(why), "KVTIER_TEST_NVME=%s", env);
		return;
	}
	if (!env) {
		env = "/dev/nvme0n1";
		if (access(env, F_OK)) {
			snprintf(why, sizeof(why), "no /dev/nvme0n1");
			return;
		}
		if (read_sysfs("/sys/class/block/nvme0n1/device/serial", serial,
			       sizeof(serial)) || strncmp(serial, "kvt", 3)) {
			snprintf(why, sizeof(why),
				 "/dev/nvme0n1 is not a kvtier-vm drive; set KVTIER_TEST_NVME to let the tests format one");
			return;
		}
	}
	if (geteuid()) {
		snprintf(why, sizeof(why), "not root");
		return;
	}
	if (kvtier_nvme_stat(ctx, &ns)) {
		snprintf(why, sizeof(why), "NVME_STAT fails: no NVMe tier");
		return;
	}
	if (ns.attached) {
		snprintf(why, sizeof(why), "a device is attached already");
		return;
	}
	nvme_dev = env;
	nvme_skip = NULL;
}

/* Attached, as the earlier tests leave it (or as it should be if they failed). */
static int nvme_ensure(void)
{
	struct kvtier_nvme_stat ns;
	int ret;

	if (!kvtier_nvme_stat(ctx, &ns) && ns.attached)
		return 0;
	ret = kvtier_nvme_attach(ctx, nvme_dev, 0, 0);
	if (ret == -EMEDIUMTYPE)
		ret = kvtier_nvme_attach(ctx, nvme_dev, KVTIER_NVME_FORMAT,
					 1024);
	return ret;
}

static void nv_keys(struct kvtier_key *keys, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		kvtier_key_chain(NULL, 0x4e56 + i, &keys[i]);
}

/* GET keys[0..n) in one batch and check every byte; 0 if all came back. */
static int nv_get_check_bs(struct kvtier_pool *pool,
			   const struct kvtier_key *keys, uint32_t n,
			   size_t bs)
{
	struct kvtier_block *blk = calloc(n, sizeof(*blk));
	char *buf = malloc((size_t)n * bs);
	uint32_t i, done = 0;
	int ret = -ENOMEM;

	if (blk && buf) {
		memset(buf, 0, (size_t)n * bs);
		for (i = 0; i < n; i++)
			kvtier_block_set(&blk[i], &keys[i],
					 buf + (size_t)i * bs);
		ret = kvtier_get(pool, blk, n, 0, &done);
		if (!ret && done != n)
			ret = -ENOENT;
		for (i = 0; !ret && i < n; i++)
			if (check(buf + (size_t)i * bs, bs, &keys[i]))
				ret = -EILSEQ;
	}
	free(blk);
	free(buf);
	return ret;
}

static int nv_get_check(struct kvtier_pool *pool, const struct kvtier_key *keys,
			uint32_t n)
{
	return nv_get_check_bs(pool, keys, n, NV_BS);
}

/* Without a device: SYNC and DETACH say so. */
static void test_nvme_absent(void)
{
	struct kvtier_nvme_stat ns;
	struct kvtier_pool_params p;
	struct kvtier_pool *pool, *ro;
	struct kvtier_key k;
	uint64_t written = 99;
	char buf[4096] = { 1 };

	CHECK_EQ(kvtier_nvme_stat(ctx, &ns), 0);
	if (ns.attached) {
		printf("#   a device is attached: nothing to check\n");
		return;
	}
	CHECK_EQ(ns.dev_bytes, 0);
	CHECK_EQ(ns.nr_regions, 0);
	if (!geteuid())
		CHECK_EQ(kvtier_nvme_detach(ctx), -ENODEV);

	kvtier_pool_params_init(&p, pname("nvabs"), 4096, 4);
	CHECK_EQ(kvtier_pool_create(ctx, &p, &pool), 0);
	CHECK_EQ(kvtier_pool_open(ctx, pool_name, KVTIER_POOL_RDONLY, &ro), 0);
	kvtier_pool_destroy(ctx, pool_name);
	/* documented: -ENODEV without a device, whether or not blocks wait */
	CHECK_EQ(kvtier_sync(pool, &written), -ENODEV);
	CHECK_EQ(written, 0);
	kvtier_key_chain(NULL, 5, &k);
	CHECK_EQ(kvtier_put1(pool, &k, buf, 0), 0);
	CHECK_EQ(kvtier_sync(pool, &written), -ENODEV);
	CHECK_EQ(kvtier_sync(ro, NULL), -EBADF);
	kvtier_pool_close(ro);
	kvtier_pool_close(pool);
}

/* Format, geometry, the attach rules; leaves the device attached. */
static void test_nvme_attach(void)
{
	struct kvtier_nvme_stat ns, again;
	uint64_t regions;

	CHECK_EQ(kvtier_nvme_attach(ctx, nvme_dev, KVTIER_NVME_FORMAT, 3000), -EINVAL);
	CHECK_EQ(kvtier_nvme_attach(ctx, nvme_dev, 0, 1024), -EINVAL);
	CHECK_EQ(kvtier_nvme_attach(ctx, nvme_dev, 0x80, 0), -EINVAL);
	CHECK_EQ(kvtier_nvme_attach(ctx, "/dev/null", 0, 0), -ENOTBLK);
	CHECK_EQ(kvtier_nvme_attach(ctx, "", 0, 0), -EINVAL);

	CHECK_EQ(kvtier_nvme_attach(ctx, nvme_dev, KVTIER_NVME_FORMAT, 1024), 0);
	CHECK_EQ(kvtier_nvme_stat(ctx, &ns), 0);
	CHECK_EQ(ns.attached, 1);
	CHECK_EQ(ns.region_bytes, 1 << 20);
	regions = (ns.dev_bytes - (1 << 20)) / (1 << 20);
	CHECK_EQ(ns.nr_regions, regions);
	CHECK_EQ(ns.free_regions, ns.nr_regions);
	CHECK_EQ(ns.bytes_demoted, 0);
	CHECK_EQ(ns.io_errors, 0);
	CHECK(ns.attach_ns > 0);
	CHECK_EQ(kvtier_nvme_attach(ctx, nvme_dev, 0, 0), -EBUSY);

	/* the store stays what it is across detach and attach */
	CHECK_EQ(kvtier_nvme_detach(ctx), 0);
	CHECK_EQ(kvtier_nvme_stat(ctx, &again), 0);
	CHECK_EQ(again.attached, 0);
	CHECK_EQ(kvtier_nvme_detach(ctx), -ENODEV);
	CHECK_EQ(kvtier_nvme_attach(ctx, nvme_dev, 0, 0), 0);
	CHECK_EQ(kvtier_nvme_stat(ctx, &again), 0);
	CHECK_EQ(again.region_bytes, 1 << 20);
	CHECK(!memcmp(again.uuid, ns.uuid, sizeof(ns.uuid)));
}

/* PUT 8x the DRAM share: demoted; GET, LOOKUP_LOAD, mmap: promoted. */
static void test_nvme_demote_promote(void)
{
	struct kvtier_block blk[NV_N];
	struct kvtier_pool_stat st;
	struct kvtier_key keys[NV_N];
	struct kvtier_pool_params p;
	struct kvtier_pool *pool;
	struct kvtier_map *map;
	uint32_t i, done, on_nvme = 0, victim = NV_N;
	char *buf;

	CHECK_EQ(nvme_ensure(), 0);
	snprintf(nv_pool, sizeof(nv_pool), "kvt-test-%d-nvme", (int)getpid());
	kvtier_pool_params_init(&p, nv_pool, NV_BS, NV_CAP);
	p.dram_blocks = NV_DRAM;
	CHECK_EQ(kvtier_pool_create(ctx, &p, &pool), 0);
	buf = malloc((size_t)NV_N * NV_BS);
	CHECK(buf);
	nv_keys(keys, NV_N);
	for (i = 0; i < NV_N; i++) {
		fill(buf + (size_t)i * NV_BS, NV_BS, &keys[i]);
		kvtier_block_set(&blk[i], &keys[i], buf + (size_t)i * NV_BS);
	}
	CHECK_EQ(kvtier_put(pool, blk, NV_N, 0, &done), 0);
	free(buf);
	CHECK_EQ(done, NV_N);

	CHECK_EQ(kvtier_stat(pool, &st), 0);
	CHECK(st.resident[KVTIER_TIER_DRAM] <= NV_DRAM);
	CHECK(st.demotions >= NV_N - NV_DRAM);
	CHECK(st.resident[KVTIER_TIER_NVME] >= NV_N - NV_DRAM);
	CHECK_EQ(st.drops, 0);

	/* every key is resident somewhere; most only on NVMe */
	for (i = 0; i < NV_N; i++)
		kvtier_block_set(&blk[i], &keys[i], NULL);
	CHECK_EQ(kvtier_lookup(pool, blk, NV_N, 0, &done), 0);
	CHECK_EQ(done, NV_N);
	for (i = 0; i < NV_N; i++) {
		CHECK(blk[i].tier == KVTIER_TIER_DRAM ||
		      blk[i].tier == KVTIER_TIER_NVME);
		on_nvme += blk[i].tier == KVTIER_TIER_NVME;
	}
	CHECK(on_nvme >= NV_N - NV_DRAM);

	/* GET brings them back, every byte right */
	CHECK_EQ(nv_get_check(pool, keys, NV_N), 0);
	CHECK_EQ(kvtier_stat(pool, &st), 0);
	CHECK(st.promotions >= on_nvme);
	CHECK_EQ(st.bad_reads, 0);
	CHECK_EQ(st.resident[KVTIER_TIER_NVME], NV_N);	/* inclusive */

	/* LOOKUP_LOAD: the first blocks were read first, so are off DRAM */
	for (i = 0; i < 4; i++)
		kvtier_block_set(&blk[i], &keys[i], NULL);
	CHECK_EQ(kvtier_lookup(pool, blk, 4, 0, &done), 0);
	CHECK_EQ(done, 4);
	CHECK_EQ(blk[0].tier, KVTIER_TIER_NVME);
	CHECK_EQ(kvtier_lookup(pool, blk, 4, KVTIER_LOOKUP_LOAD, &done), 0);
	CHECK_EQ(done, 4);
	for (i = 0; i < 4; i++) {
		CHECK_EQ(blk[i].status, 0);
		CHECK_EQ(blk[i].tier, KVTIER_TIER_DRAM);
	}
	for (i = 0; i < 4; i++)
		kvtier_block_set(&blk[i], &keys[i], NULL);
	CHECK_EQ(kvtier_lookup(pool, blk, 4, 0, &done), 0);
	for (i = 0; i < 4; i++)
		CHECK_EQ(blk[i].tier, KVTIER_TIER_DRAM);

	/* an mmap fault on a block only on NVMe loads it */
	for (i = 0; i < NV_N; i++)
		kvtier_block_set(&blk[i], &keys[i], NULL);
	CHECK_EQ(kvtier_lookup(pool, blk, NV_N, 0, &done), 0);
	for (i = 0; i < NV_N && victim == NV_N; i++)
		if (blk[i].tier == KVTIER_TIER_NVME)
			victim = i;
	CHECK(victim < NV_N);
	CHECK_EQ(kvtier_map(pool, 0, 0, &map), 0);
	CHECK(!check(kvtier_block_ptr(map, blk[victim].addr), NV_BS, &keys[victim]));
	kvtier_unmap(map);
	/* the pool keeps its name for the next tests */
	kvtier_pool_close(pool);
}

/* SYNC writes what has no NVMe copy, and only that. */
static void test_nvme_sync(void)
{
	struct kvtier_pool_stat st;
	struct kvtier_pool_stat before;
	struct kvtier_key keys[NV_N + NV_MORE];
	struct kvtier_pool *pool, *ro;
	uint64_t written;
	char *buf;
	uint32_t i;

	CHECK_EQ(nvme_ensure(), 0);
	CHECK_EQ(kvtier_pool_open(ctx, nv_pool, 0, &pool), 0);
	CHECK_EQ(kvtier_stat(pool, &before), 0);
	nv_keys(keys, NV_N + NV_MORE);
	buf = malloc(NV_BS);
	CHECK(buf);
	for (i = NV_N; i < NV_N + NV_MORE; i++) {
		fill(buf, NV_BS, &keys[i]);
		CHECK_EQ(kvtier_put1(pool, &keys[i], buf, 0), 0);
	}
	free(buf);
	/* the new blocks may be cleaned ahead already; each is written once */
	CHECK_EQ(kvtier_sync(pool, &written), 0);
	CHECK(written <= NV_MORE);
	CHECK_EQ(kvtier_stat(pool, &st), 0);
	CHECK_EQ(st.demotions - before.demotions, NV_MORE);
	CHECK_EQ(st.dirty, 0);
	CHECK_EQ(st.resident[KVTIER_TIER_NVME], NV_N + NV_MORE);
	CHECK_EQ(kvtier_sync(pool, &written), 0);
	CHECK_EQ(written, 0);
	CHECK_EQ(kvtier_pool_open(ctx, nv_pool, KVTIER_POOL_RDONLY, &ro), 0);
	CHECK_EQ(kvtier_sync(ro, &written), -EBADF);
	kvtier_pool_close(ro);
	kvtier_pool_close(pool);
}

/*
 * Detach forgets what is only on NVMe; attach finds it again: the pool by
 * name, every block verified. A destroyed pool stays gone.
 */
static void test_nvme_reattach(void)
{
	struct kvtier_nvme_stat ns;
	struct kvtier_pool_stat st;
	struct kvtier_key keys[NV_N + NV_MORE];
	struct kvtier_pool *pool;

	CHECK_EQ(nvme_ensure(), 0);
	nv_keys(keys, NV_N + NV_MORE);
	CHECK_EQ(kvtier_nvme_detach(ctx), 0);
	CHECK_EQ(kvtier_pool_open(ctx, nv_pool, 0, &pool), 0);
	CHECK_EQ(kvtier_stat(pool, &st), 0);
	CHECK_EQ(st.resident[KVTIER_TIER_NVME], 0);
	CHECK(st.resident[KVTIER_TIER_DRAM] <= NV_DRAM);
	kvtier_pool_close(pool);

	CHECK_EQ(kvtier_nvme_attach(ctx, nvme_dev, 0, 0), 0);
	CHECK_EQ(kvtier_nvme_stat(ctx, &ns), 0);
	CHECK(ns.nr_regions > ns.free_regions);
	CHECK_EQ(kvtier_pool_open(ctx, nv_pool, 0, &pool), 0);
	CHECK_EQ(kvtier_stat(pool, &st), 0);
	printf("#   after re-attach: resident dram %llu nvme %llu, dirty %llu\n",
	       (unsigned long long)st.resident[KVTIER_TIER_DRAM],
	       (unsigned long long)st.resident[KVTIER_TIER_NVME],
	       (unsigned long long)st.dirty);
	CHECK_EQ(st.block_size, NV_BS);
	CHECK_EQ(st.capacity, NV_CAP);
	CHECK_EQ(st.dram_blocks, NV_DRAM);
	CHECK_EQ(st.resident[KVTIER_TIER_NVME], NV_N + NV_MORE);
	CHECK_EQ(st.dirty, 0);
	CHECK_EQ(nv_get_check(pool, keys, NV_N + NV_MORE), 0);
	CHECK_EQ(kvtier_stat(pool, &st), 0);
	CHECK_EQ(st.bad_reads, 0);
	kvtier_pool_close(pool);

	/* destroyed while attached: erased from the device too */
	CHECK_EQ(kvtier_pool_destroy(ctx, nv_pool), 0);
	CHECK_EQ(kvtier_nvme_detach(ctx), 0);
	CHECK_EQ(kvtier_nvme_attach(ctx, nvme_dev, 0, 0), 0);
	CHECK_EQ(kvtier_pool_open(ctx, nv_pool, 0, &pool), -ENOENT);
	CHECK_EQ(kvtier_nvme_detach(ctx), 0);
}

/*
 * A block replaced while the device was away must not get its old NVMe
 * copy back at the next attach: evicted and read again, it has the new
 * bytes, not the old ones.
 */
static void test_nvme_replace_detached(void)
{
	struct kvtier_key keys[3 * NV_DRAM], k;
	struct kvtier_pool_params p;
	struct kvtier_pool *pool;
	char name[KVTIER_NAME_MAX], *buf;
	uint32_t i;
	int ret;

	CHECK_EQ(nvme_ensure(), 0);
	snprintf(name, sizeof(name), "kvt-test-%d-nvrep", (int)getpid());
	kvtier_pool_params_init(&p, name, NV_BS, NV_CAP);
	p.dram_blocks = NV_DRAM;
	CHECK_EQ(kvtier_pool_create(ctx, &p, &pool), 0);
	buf = malloc(NV_BS);
	CHECK(buf);
	kvtier_key_chain(NULL, 0x7e7, &k);		/* old bytes: fill(k) */
	kvtier_key_chain(NULL, 0x7e8, &keys[0]);	/* new bytes: fill(keys[0]) */
	fill(buf, NV_BS, &k);
	CHECK_EQ(kvtier_put1(pool, &k, buf, 0), 0);
	CHECK_EQ(kvtier_sync(pool, NULL), 0);	/* the old bytes are on NVMe */
	CHECK_EQ(kvtier_nvme_detach(ctx), 0);
	fill(buf, NV_BS, &keys[0]);
	CHECK_EQ(kvtier_put1(pool, &k, buf, KVTIER_PUT_REPLACE), 0);
	CHECK_EQ(kvtier_nvme_attach(ctx, nvme_dev, 0, 0), 0);

	/* push it out of DRAM, then read it back */
	for (i = 0; i < 3 * NV_DRAM; i++) {
		kvtier_key_chain(NULL, 0x800 + i, &keys[i]);
		fill(buf, NV_BS, &keys[i]);
		CHECK_EQ(kvtier_put1(pool, &keys[i], buf, 0), 0);
	}
	kvtier_key_chain(NULL, 0x7e8, &keys[0]);
	memset(buf, 0, NV_BS);
	ret = kvtier_get1(pool, &k, buf);
	if (!ret && !check(buf, NV_BS, &k))
		printf("#   GET returned the bytes from before the REPLACE\n");
	if (!ret)
		ret = check(buf, NV_BS, &keys[0]) ? -EILSEQ : 0;
	free(buf);
	kvtier_pool_close(pool);
	CHECK_EQ(kvtier_pool_destroy(ctx, name), 0);
	CHECK_EQ(ret, 0);
}

/*
 * A compressed pool: a bad compressor or flag is -EINVAL, and blocks that
 * compress (each page's halves the same) and blocks that may not (fill())
 * read back exact from NVMe, each written once, compressed or not.
 */
static void test_nvme_compressed(void)
{
	struct kvtier_key keys[2 * NV_DRAM + 2];
	struct kvtier_pool_params p;
	struct kvtier_pool_stat st;
	struct kvtier_pool *pool;
	char name[KVTIER_NAME_MAX], *buf, *out;
	uint32_t i, n = 2 * NV_DRAM + 2;
	size_t off;
	int bad = 0;

	CHECK_EQ(nvme_ensure(), 0);
	snprintf(name, sizeof(name), "kvt-test-%d-nvz", (int)getpid());
	kvtier_pool_params_init(&p, name, NV_BS, NV_CAP);
	p.dram_blocks = NV_DRAM;
	CHECK_EQ(kvtier_pool_create_compressed(ctx, &p, KVTIER_COMPRESS_MAX + 1,
					       0, &pool), -EINVAL);
	CHECK_EQ(kvtier_pool_create_compressed(ctx, &p, KVTIER_COMPRESS_LZ4,
					       0x80, &pool), -EINVAL);
	CHECK_EQ(kvtier_pool_create_compressed(ctx, &p, 0,
					       KVTIER_COMPRESS_SHUFFLE2, &pool),
		 -EINVAL);
	CHECK_EQ(kvtier_pool_create_compressed(ctx, &p, KVTIER_COMPRESS_LZ4,
					       KVTIER_COMPRESS_SHUFFLE2, &pool),
		 0);
	buf = malloc(NV_BS);
	out = malloc(NV_BS);
	CHECK(buf && out);
	for (i = 0; i < n; i++) {
		kvtier_key_chain(NULL, 0x900 + i, &keys[i]);
		fill(buf, NV_BS, &keys[i]);
		for (off = 0; i % 2 == 0 && off < NV_BS; off += 4096)
			memcpy(buf + off + 2048, buf + off, 2048);
		bad |= kvtier_put1(pool, &keys[i], buf, 0);
	}
	bad |= kvtier_sync(pool, NULL);
	for (i = 0; i < n; i++) {
		fill(buf, NV_BS, &keys[i]);
		for (off = 0; i % 2 == 0 && off < NV_BS; off += 4096)
			memcpy(buf + off + 2048, buf + off, 2048);
		memset(out, 0xa5, NV_BS);
		if (kvtier_get1(pool, &keys[i], out) || memcmp(buf, out, NV_BS)) {
			printf("#   key %u: not back exact\n", i);
			bad = 1;
		}
	}
	free(buf);
	free(out);
	CHECK_EQ(kvtier_stat(pool, &st), 0);
	kvtier_pool_close(pool);
	CHECK_EQ(kvtier_pool_destroy(ctx, name), 0);
	CHECK_EQ(bad, 0);
	CHECK_EQ(st.compress, KVTIER_COMPRESS_LZ4);
	CHECK_EQ(st.compress_flags, KVTIER_COMPRESS_SHUFFLE2);
	CHECK(st.z_blocks >= n / 2);
	CHECK_EQ(st.z_blocks + st.z_raw_blocks, n);
	CHECK(st.z_bytes_stored < st.z_bytes_in);
	CHECK_EQ(st.z_bad, 0);
	CHECK_EQ(st.bad_reads, 0);
}


/* ---- prefetch (NVMe tier) ---------------------------------------------- */

#define PF_BS		(64 << 10)
#define PF_CAP		256
#define PF_DRAM		32
#define PF_N		96		/* blocks PUT; the first ones only on NVMe */
#define SEC_NS		1000000000ULL

/*
 * A pool of PF_N blocks whose DRAM share is PF_DRAM: keys[0] and on are
 * only on NVMe, the last ones in DRAM. NULL on failure.
 */
static struct kvtier_pool *pf_pool(const char *tag, struct kvtier_key *keys,
				   char *name)
{
	struct kvtier_pool_params p;
	struct kvtier_pool *pool;
	uint32_t i, tier;
	uint64_t addr;
	char *buf;
	int ok = 1;

	if (nvme_ensure())
		return NULL;
	snprintf(name, KVTIER_NAME_MAX, "kvt-test-%d-%s", (int)getpid(), tag);
	kvtier_pool_params_init(&p, name, PF_BS, PF_CAP);
	p.dram_blocks = PF_DRAM;
	if (kvtier_pool_create(ctx, &p, &pool))
		return NULL;
	buf = malloc(PF_BS);
	for (i = 0; i < PF_N; i++)
		kvtier_key_chain(NULL, 0x5046 + i, &keys[i]);
	for (i = 0; buf && ok && i < PF_N; i++) {
		fill(buf, PF_BS, &keys[i]);
		ok = !kvtier_put1(pool, &keys[i], buf, 0);
	}
	free(buf);
	if (!buf || !ok ||
	    kvtier_lookup1(pool, &keys[0], &addr, &tier) ||
	    tier != KVTIER_TIER_NVME) {
		printf("#   %s: setup failed (key 0 not only on NVMe)\n", tag);
		kvtier_pool_close(pool);
		kvtier_pool_destroy(ctx, name);
		return NULL;
	}
	return pool;
}

/* keys[first..first+n) are in DRAM and GET back exact; 0 if so. */
static int pf_in_dram_exact(struct kvtier_pool *pool,
			    const struct kvtier_key *keys, uint32_t first,
			    uint32_t n)
{
	struct kvtier_block *blk = calloc(n, sizeof(*blk));
	uint32_t i, done;
	int ret = -ENOMEM;

	if (!blk)
		return ret;
	for (i = 0; i < n; i++)
		kvtier_block_set(&blk[i], &keys[first + i], NULL);
	ret = kvtier_lookup(pool, blk, n, 0, &done);
	for (i = 0; !ret && i < n; i++)
		if (blk[i].tier != KVTIER_TIER_DRAM) {
			printf("#   key %u in tier %u, not DRAM\n", first + i,
			       blk[i].tier);
			ret = -EAGAIN;
		}
	free(blk);
	return ret ? ret : nv_get_check_bs(pool, keys + first, n, PF_BS);
}

/*
 * kvtier_prefetch + kvtier_wait_group: NVMe blocks staged, cookie, exact
 * bytes.
 */
static void test_prefetch_wait_group(void)
{
	struct kvtier_key keys[PF_N];
	struct kvtier_hint h[8];
	struct kvtier_prefetch_args a;
	struct kvtier_completion c;
	char name[KVTIER_NAME_MAX];
	struct kvtier_pool *pool;
	uint32_t i, queued = 99, resident = 99;
	uint64_t deadline;

	pool = pf_pool("pfw", keys, name);
	CHECK(pool);
	for (i = 0; i < 8; i++)
		kvtier_hint_set(&h[i], &keys[i]);
	memset(&a, 0, sizeof(a));
	a.group = 7;
	a.cookie = 0x636f6f6b6965ULL;
	deadline = kvtier_now_ns() + 20 * SEC_NS;
	a.deadline_ns = deadline;
	CHECK_EQ(kvtier_prefetch(pool, h, 8, &a, &queued, &resident), 0);
	CHECK_EQ(queued, 8);
	CHECK_EQ(resident, 0);
	for (i = 0; i < 8; i++) {
		CHECK_EQ(h[i].status, 0);
		CHECK_EQ(h[i].tier, KVTIER_TIER_NVME);
	}
	/* the same id while the group lives */
	CHECK_EQ(kvtier_prefetch(pool, h, 1, &a, NULL, NULL), -EEXIST);
	CHECK_EQ(kvtier_wait_group(pool, 7, &c, 30000), 0);
	CHECK_EQ(c.group, 7);
	CHECK(c.cookie == a.cookie);
	CHECK_EQ(c.status, 0);
	CHECK_EQ(c.ready, 8);
	CHECK_EQ(c.count, 8);
	CHECK_EQ(c.flags, 0);
	CHECK(c.end_ns <= deadline);
	CHECK_EQ(pf_in_dram_exact(pool, keys, 0, 8), 0);
	/* nothing else is pending */
	CHECK_EQ(kvtier_wait_group(pool, 7, &c, 0), -ETIMEDOUT);
	kvtier_pool_close(pool);
	CHECK_EQ(kvtier_pool_destroy(ctx, name), 0);
}

/*
 * kvtier_wait_group for the second group keeps the first for
 * kvtier_completions.
 */
static void test_prefetch_completions_kept(void)
{
	struct kvtier_key keys[PF_N];
	struct kvtier_hint h1[4], h2[8];
	struct kvtier_prefetch_args a;
	struct kvtier_completion c, cs[4];
	char name[KVTIER_NAME_MAX];
	struct kvtier_pool *pool;
	uint32_t i;

	pool = pf_pool("pfk", keys, name);
	CHECK(pool);
	/* Group 1: blocks in DRAM, it ends at once. Group 2: on NVMe. */
	for (i = 0; i < 4; i++)
		kvtier_hint_set(&h1[i], &keys[PF_N - 4 + i]);
	for (i = 0; i < 8; i++)
		kvtier_hint_set(&h2[i], &keys[8 + i]);
	memset(&a, 0, sizeof(a));
	a.group = 1;
	a.cookie = 101;
	CHECK_EQ(kvtier_prefetch(pool, h1, 4, &a, NULL, NULL), 0);
	CHECK_EQ(kvtier_wait_group(pool, 999, &c, 300), -ETIMEDOUT);
	a.group = 2;
	a.cookie = 202;
	CHECK_EQ(kvtier_prefetch(pool, h2, 8, &a, NULL, NULL), 0);
	CHECK_EQ(kvtier_wait_group(pool, 2, &c, 30000), 0);
	CHECK_EQ(c.group, 2);
	CHECK_EQ(c.cookie, 202);
	CHECK_EQ(c.status, 0);
	CHECK_EQ(c.ready, 8);
	/* group 1's record, read while waiting for group 2, is still there */
	CHECK_EQ(kvtier_completions(pool, cs, 4, 0), 1);
	CHECK_EQ(cs[0].group, 1);
	CHECK_EQ(cs[0].cookie, 101);
	CHECK_EQ(cs[0].status, 0);
	CHECK_EQ(cs[0].ready, 4);
	CHECK_EQ(kvtier_completions(pool, cs, 4, 0), 0);
	CHECK_EQ(kvtier_completions(pool, cs, 0, 0), -EINVAL);
	CHECK_EQ(pf_in_dram_exact(pool, keys, 8, 8), 0);
	/* cancel: a group not ended gets -ECANCELED; unknown ids -ENOENT */
	for (i = 0; i < 8; i++)
		kvtier_hint_set(&h2[i], &keys[16 + i]);
	a.group = 3;
	a.deadline_ns = kvtier_now_ns() + 60 * SEC_NS;
	CHECK_EQ(kvtier_prefetch(pool, h2, 8, &a, NULL, NULL), 0);
	CHECK_EQ(kvtier_cancel(pool, 3, 0, &i), 0);
	CHECK(i <= 1);
	CHECK_EQ(kvtier_wait_group(pool, 3, &c, 10000), 0);
	CHECK(c.status == (i ? -ECANCELED : 0));
	CHECK_EQ(kvtier_cancel(pool, 3, 0, NULL), -ENOENT);
	CHECK_EQ(kvtier_cancel(pool, 0, KVTIER_CANCEL_ALL, &i), 0);
	CHECK_EQ(i, 0);
	kvtier_pool_close(pool);
	CHECK_EQ(kvtier_pool_destroy(ctx, name), 0);
}

/* kvtier_request_ready, by ioctl and through a ring: the prefix in DRAM. */
static void test_request_ready(void)
{
	struct kvtier_key keys[PF_N], chain[13];
	char name[KVTIER_NAME_MAX];
	struct kvtier_ring *ring;
	struct kvtier_pool *pool;
	uint32_t ready = 99, tier;
	uint64_t addr;

	pool = pf_pool("prr", keys, name);
	CHECK(pool);
	CHECK_EQ(kvtier_ring_open(&ring, 4), 0);

	/* 12 cached blocks only on NVMe, then one that is not cached */
	memcpy(chain, keys, 12 * sizeof(chain[0]));
	kvtier_key_chain(&keys[11], 0xdead, &chain[12]);
	CHECK_EQ(kvtier_request_ready(pool, NULL, chain, 0, 0, 1000, &ready),
		 -EINVAL);
	CHECK_EQ(kvtier_request_ready(pool, NULL, chain, 13,
				      kvtier_now_ns() + 20 * SEC_NS, 30000, &ready), 0);
	CHECK_EQ(ready, 12);
	CHECK_EQ(pf_in_dram_exact(pool, keys, 0, 12), 0);

	/* the same through the ring, on the next 12 */
	memcpy(chain, keys + 12, 12 * sizeof(chain[0]));
	CHECK_EQ(kvtier_lookup1(pool, &chain[0], &addr, &tier), 0);
	CHECK_EQ(tier, KVTIER_TIER_NVME);
	ready = 99;
	CHECK_EQ(kvtier_request_ready(pool, ring, chain, 12,
				      kvtier_now_ns() + 20 * SEC_NS, 30000, &ready), 0);
	CHECK_EQ(ready, 12);
	CHECK_EQ(pf_in_dram_exact(pool, keys, 12, 12), 0);

	/* all in DRAM already: no prefetch, the prefix at once */
	ready = 99;
	CHECK_EQ(kvtier_request_ready(pool, ring, &keys[PF_N - 4], 4, 0, 0,
				      &ready), 0);
	CHECK_EQ(ready, 4);
	/* nothing cached */
	kvtier_key_chain(NULL, 0xbeef, &chain[0]);
	CHECK_EQ(kvtier_request_ready(pool, ring, chain, 1, 0, 0, &ready), 0);
	CHECK_EQ(ready, 0);
	kvtier_ring_close(ring);
	kvtier_pool_close(pool);
	CHECK_EQ(kvtier_pool_destroy(ctx, name), 0);
}

/* ---- the HBM tier: the reference memcpy mover ---------------------------- */

#define HB_BS		(16 * 1024)
#define HB_CAP		64U
#define HB_SLOTS	8U
#define HB_N		6U

struct hb_mover {
	struct kvtier_mover *m;
	volatile int stop;
	int ret;		/* what ended the loop: 0 (stopped), -EPIPE, ... */
	pthread_t thread;
};

static void *hb_mover_main(void *arg)
{
	struct hb_mover *hm = arg;
	int ret;

	while (!hm->stop) {
		ret = kvtier_mover_run(hm->m, 50);
		if (ret < 0) {
			hm->ret = ret;
			break;
		}
	}
	return NULL;
}

/*
 * A user arena in this process, moved by kvtier_mover_memcpy in a thread:
 * PREFETCH to HBM copies DRAM blocks into their slots (the arena holds
 * their bytes; LOOKUP says HBM and the slot), ADOPT takes a block written
 * into a free slot, and GET returns it once the mover has written it down.
 * Closing the mover detaches the arena; every block stays readable.
 */
static void test_hbm_mover_memcpy(void)
{
	struct kvtier_key keys[HB_N], adopted;
	struct kvtier_meta am;
	struct kvtier_block blk[HB_N];
	struct kvtier_hint h[HB_N];
	struct kvtier_hbm_stat st;
	struct kvtier_adopt e[3];
	struct kvtier_prefetch_args a;
	struct kvtier_completion c;
	struct hb_mover hm = { 0 };
	struct kvtier_pool *pool;
	uint32_t i, done, used = 0, free_slot = HB_SLOTS;
	char *buf = NULL, *arena = NULL;
	int mfd = -1, started = 0;

	pool = anon_pool("hbm", HB_BS, HB_CAP);
	CHECK(pool);
	buf = malloc(HB_BS);
	arena = calloc(HB_SLOTS, HB_BS);
	if (!buf || !arena)
		goto out;
	for (i = 0; i < HB_N; i++) {
		kvtier_key_chain(i ? &keys[i - 1] : NULL, 0x48424d + i,
				 &keys[i]);
		fill(buf, HB_BS, &keys[i]);
		if (kvtier_put1(pool, &keys[i], buf, 0))
			goto out;
	}
	if (kvtier_hbm_attach(pool, KVTIER_HBM_USER, HB_SLOTS, &mfd) == -EINVAL) {
		printf("#   no HBM tier in this module\n");
		case_failed = 1;
		goto out;
	}
	if (mfd < 0)
		goto out;
	if (kvtier_mover_open(pool, mfd, kvtier_mover_memcpy, arena, &hm.m)) {
		close(mfd);
		goto out;
	}
	if (pthread_create(&hm.thread, NULL, hb_mover_main, &hm))
		goto out;
	started = 1;

	/* Stage every block: NONE -> HBM by PREFETCH with the HBM target. */
	for (i = 0; i < HB_N; i++)
		kvtier_hint_set(&h[i], &keys[i]);
	memset(&a, 0, sizeof(a));
	a.group = 1;
	a.tier = KVTIER_TIER_HBM;
	if (kvtier_prefetch(pool, h, HB_N, &a, NULL, NULL) ||
	    kvtier_wait_group(pool, 1, &c, 30000) || c.status || c.ready != HB_N) {
		printf("#   prefetch to HBM: status %d, ready %u\n", c.status,
		       c.ready);
		goto out;
	}
	for (i = 0; i < HB_N; i++)
		kvtier_block_set(&blk[i], &keys[i], NULL);
	if (kvtier_lookup(pool, blk, HB_N, 0, &done) || done != HB_N)
		goto out;
	for (i = 0; i < HB_N; i++) {
		if (blk[i].tier != KVTIER_TIER_HBM || blk[i].slot >= HB_SLOTS ||
		    used & (1U << blk[i].slot)) {
			printf("#   key %u: tier %u slot %u\n", i, blk[i].tier,
			       blk[i].slot);
			goto out;
		}
		used |= 1U << blk[i].slot;
		/* The "device" holds the block's bytes. */
		if (check(arena + (size_t)blk[i].slot * HB_BS, HB_BS, &keys[i])) {
			printf("#   slot %u: wrong bytes\n", blk[i].slot);
			goto out;
		}
	}
	for (i = 0; i < HB_SLOTS && free_slot == HB_SLOTS; i++)
		if (!(used & (1U << i)))
			free_slot = i;

	/* A block made on the device: written into a free slot, adopted. */
	kvtier_key_chain(&keys[HB_N - 1], 0xad097, &adopted);
	fill(arena + (size_t)free_slot * HB_BS, HB_BS, &adopted);
	memset(e, 0, sizeof(e));
	e[0].key[0] = adopted.k[0];
	e[0].key[1] = adopted.k[1];
	e[0].slot = free_slot;
	/* With KVTIER_F_META it carries a record, read back with it. */
	meta_of(&am, &adopted, 33);
	if (kvtier_adopt_meta(pool, e, has_feature(KVTIER_F_META) ? &am : NULL,
			      1, &done) || done != 1 || e[0].status ||
	    e[0].addr == KVTIER_ADDR_NONE)
		goto out;
	memset(buf, 0, HB_BS);
	/* GET waits for the write-down (a FROM_DEV copy by the mover). */
	if (kvtier_get1(pool, &adopted, buf) || check(buf, HB_BS, &adopted)) {
		printf("#   adopted block: not read back exact\n");
		goto out;
	}
	if (has_feature(KVTIER_F_META)) {
		kvtier_block_set(&blk[0], &adopted, buf);
		memset(&am, 0xa5, sizeof(am));
		if (kvtier_get_meta(pool, blk, &am, 1, 0, &done) || done != 1 ||
		    !meta_is(&am, &adopted, 33)) {
			printf("#   adopted block: its record not read back\n");
			goto out;
		}
	}
	kvtier_block_set(&blk[0], &adopted, NULL);
	if (kvtier_lookup(pool, blk, 1, 0, &done) ||
	    blk[0].tier != KVTIER_TIER_HBM || blk[0].slot != free_slot)
		goto out;
	/* Exact errnos: a slot in use, a key present, a slot out of range. */
	memset(e, 0, sizeof(e));
	e[0].key[1] = 1;
	e[0].slot = free_slot;
	e[1].key[0] = adopted.k[0];
	e[1].key[1] = adopted.k[1];
	e[1].slot = (free_slot + 1) % HB_SLOTS;
	e[2].key[1] = 2;
	e[2].slot = HB_SLOTS;
	if (kvtier_adopt(pool, e, 3, &done) || done || e[0].status != -EBUSY ||
	    e[1].status != -EEXIST || e[2].status != -EINVAL) {
		printf("#   adopt errors: %d %d %d\n", e[0].status, e[1].status,
		       e[2].status);
		goto out;
	}
	if (kvtier_hbm_stat(pool, &st) || st.attached != 1 ||
	    st.backend != KVTIER_HBM_USER || st.slots != HB_SLOTS ||
	    st.used != HB_N + 1 || st.to_dev != HB_N || st.adopted != 1 ||
	    st.from_dev != 1 || st.copy_errors || st.timeouts) {
		printf("#   hbm stat: used %u to_dev %llu adopted %llu from_dev %llu errors %llu\n",
		       st.used, (unsigned long long)st.to_dev,
		       (unsigned long long)st.adopted,
		       (unsigned long long)st.from_dev,
		       (unsigned long long)st.copy_errors);
		goto out;
	}

	/* The mover goes: the arena is detached, no block is lost. */
	hm.stop = 1;
	pthread_join(hm.thread, NULL);
	started = 0;
	kvtier_mover_close(hm.m);
	hm.m = NULL;
	if (kvtier_hbm_stat(pool, &st) || st.attached || st.used ||
	    st.detached != 1)
		goto out;
	for (i = 0; i < HB_N; i++)
		if (kvtier_get1(pool, &keys[i], buf) || check(buf, HB_BS, &keys[i]))
			goto out;
	if (kvtier_get1(pool, &adopted, buf) || check(buf, HB_BS, &adopted))
		goto out;
	kvtier_block_set(&blk[0], &keys[0], NULL);
	if (kvtier_lookup(pool, blk, 1, 0, &done) ||
	    blk[0].tier != KVTIER_TIER_DRAM || blk[0].slot != KVTIER_SLOT_NONE)
		goto out;
	free(buf);
	free(arena);
	kvtier_pool_close(pool);
	return;
out:
	printf("#   hbm_mover_memcpy failed\n");
	case_failed = 1;
	if (started) {
		hm.stop = 1;
		pthread_join(hm.thread, NULL);
	}
	kvtier_mover_close(hm.m);
	free(buf);
	free(arena);
	kvtier_pool_close(pool);
}

/* ---- events and the census ---------------------------------------------- */

/* A pool's key set as a reader rebuilds it: keys and their tiers. */
struct ev_model {
	struct kvtier_census_entry k[256];
	uint32_t n;
};

static int ev_find(const struct ev_model *m, const __u64 *key)
{
	uint32_t i;

	for (i = 0; i < m->n; i++)
		if (m->k[i].key[0] == key[0] && m->k[i].key[1] == key[1])
			return i;
	return -1;
}

/* Apply one event; -1 for one that cannot happen to this set. */
static int ev_apply(struct ev_model *m, const struct kvtier_event *e)
{
	int i = ev_find(m, e->key);

	switch (e->type) {
	case KVTIER_EVENT_STORED:
	case KVTIER_EVENT_MOVED:
		if (i < 0) {
			if (m->n == 256)
				return -1;
			i = m->n++;
		}
		m->k[i].key[0] = e->key[0];
		m->k[i].key[1] = e->key[1];
		m->k[i].addr = e->addr;
		m->k[i].tier = e->tier;
		return 0;
	case KVTIER_EVENT_REMOVED:
		if (i < 0)
			return -1;
		m->k[i] = m->k[--m->n];
		return 0;
	case KVTIER_EVENT_CLEARED:
		m->n = 0;
		return 0;
	}
	return -1;
}

/* The whole census of @pool into @m; its first call's seq in @seq. */
static int ev_census(struct kvtier_pool *pool, struct ev_model *m,
		     uint64_t *seq, uint32_t per_call)
{
	uint64_t cursor = 0, s, id, first_id = 0;
	int got, calls = 0;

	m->n = 0;
	while (cursor != KVTIER_ADDR_NONE) {
		if (m->n + per_call > 256)
			return -ENOSPC;
		got = kvtier_census(pool, &cursor, m->k + m->n, NULL, per_call,
				    &s, &id);
		if (got < 0)
			return got;
		if (!calls++) {
			*seq = s;
			first_id = id;
		} else if (id != first_id) {
			return -ESTALE;
		}
		m->n += got;
	}
	return 0;
}

/* Whether two key sets are equal, tiers included. */
static int ev_same(const struct ev_model *a, const struct ev_model *b)
{
	uint32_t i;
	int j;

	if (a->n != b->n)
		return 0;
	for (i = 0; i < a->n; i++) {
		j = ev_find(b, a->k[i].key);
		if (j < 0 || b->k[j].tier != a->k[i].tier ||
		    b->k[j].addr != a->k[i].addr)
			return 0;
	}
	return 1;
}

/* Read every event there is now, in order, from seq @next on. */
static int ev_drain(int fd, struct kvtier_event *ev, uint32_t max,
		    uint64_t *next)
{
	uint32_t n = 0, i;
	ssize_t got;

	while (n < max) {
		got = kvtier_events_read(fd, ev + n, max - n, 0);
		if (got == -ETIMEDOUT || got == 0)
			break;
		if (got < 0)
			return got;
		n += got;
	}
	for (i = 0; i < n; i++) {
		if (ev[i].seq != *next)
			return -EILSEQ;
		*next = ev[i].type == KVTIER_EVENT_OVERFLOW ?
			ev[i].seq + ev[i].lost : ev[i].seq + 1;
	}
	return n;
}

static unsigned int events_ring_param(void)
{
	char buf[32];

	if (read_sysfs("/sys/module/kvtier/parameters/events_ring", buf,
		       sizeof(buf)))
		return 0;
	return strtoul(buf, NULL, 10);
}

static void test_event_names(void)
{
	CHECK(!strcmp(kvtier_feature_name(KVTIER_F_EVENTS), "events"));
	CHECK(!strcmp(kvtier_ioctl_name(_IOC_NR(KVTIER_IOC_EVENTS)), "EVENTS"));
	CHECK(!strcmp(kvtier_ioctl_name(_IOC_NR(KVTIER_IOC_CENSUS)), "CENSUS"));
	CHECK(!strcmp(kvtier_event_name(KVTIER_EVENT_STORED), "stored"));
	CHECK(!strcmp(kvtier_event_name(KVTIER_EVENT_MOVED), "moved"));
	CHECK(!strcmp(kvtier_event_name(KVTIER_EVENT_REMOVED), "removed"));
	CHECK(!strcmp(kvtier_event_name(KVTIER_EVENT_CLEARED), "cleared"));
	CHECK(!strcmp(kvtier_event_name(KVTIER_EVENT_OVERFLOW), "overflow"));
	CHECK(kvtier_event_name(0) == NULL);
	CHECK(kvtier_event_name(6) == NULL);
	CHECK(kvtier_event_name(~0U) == NULL);
	CHECK(!strcmp(kvtier_event_reason_name(KVTIER_EVR_PUT), "put"));
	CHECK(!strcmp(kvtier_event_reason_name(KVTIER_EVR_EVICT), "evict"));
	CHECK(!strcmp(kvtier_event_reason_name(KVTIER_EVR_BAD_READ), "bad_read"));
	CHECK(!strcmp(kvtier_event_reason_name(KVTIER_EVR_LOG_RECLAIM),
		      "log_reclaim"));
	CHECK(!strcmp(kvtier_event_reason_name(KVTIER_EVR_DESTROY), "destroy"));
	CHECK(kvtier_event_reason_name(0) == NULL);
	CHECK(kvtier_event_reason_name(16) == NULL);
	CHECK(kvtier_event_reason_name(~0U) == NULL);
	/* not an events fd, not an fd */
	{
		struct kvtier_event e;

		CHECK_EQ(kvtier_events_read(-1, &e, 1, 0), -EBADF);
		CHECK_EQ(kvtier_events_read(0, &e, 0, 0), -EINVAL);
	}
}

/*
 * A census and the events after it are the pool: PUT, REPLACE, DROP and
 * evictions, two readers, an fd from seq 1, and the pool's end.
 */
static void test_events_census(void)
{
	enum { BS = 4096, CAP = 32, DRAM = 8 };
	static struct ev_model model, census;
	struct kvtier_event ev[128];
	struct kvtier_pool_params p;
	struct kvtier_events e, e2;
	struct kvtier_pool *pool;
	struct kvtier_block blk[16], pin;
	struct kvtier_key keys[16];
	uint64_t next = 1, next2 = 1, seq, cursor;
	char buf[BS] = { 0 };
	uint32_t i, done;
	int fd, fd2, n, fl, nlast;

	kvtier_pool_params_init(&p, pname("ev"), BS, CAP);
	p.dram_blocks = DRAM;
	CHECK_EQ(kvtier_pool_create(ctx, &p, &pool), 0);
	CHECK_EQ(kvtier_pool_destroy(ctx, pool_name), 0);

	memset(&e, 0xa5, sizeof(e));
	fd = kvtier_events_open(pool, 0, 0, &e);
	CHECK(fd >= 0);
	CHECK_EQ(e.fd, fd);
	CHECK_EQ(e.seq, 1);
	CHECK_EQ(e.ring, events_ring_param());
	CHECK_EQ(e.flags, 0);
	fl = fcntl(fd, F_GETFD);
	CHECK(fl >= 0 && (fl & FD_CLOEXEC));
	CHECK(!(fcntl(fd, F_GETFL) & O_NONBLOCK));
	CHECK_EQ(kvtier_events_read(fd, ev, 16, 0), -ETIMEDOUT);
	CHECK_EQ(kvtier_events_read(fd, ev, 16, 20), -ETIMEDOUT);

	/* An empty pool's census: nothing, at seq 0 */
	CHECK_EQ(ev_census(pool, &census, &seq, 4), 0);
	CHECK_EQ(census.n, 0);
	CHECK_EQ(seq, 0);

	/* 4 PUTs: 4 STORED, numbered from 1 */
	for (i = 0; i < 4; i++) {
		kvtier_key_chain(NULL, 7000 + i, &keys[i]);
		kvtier_block_set(&blk[i], &keys[i], buf);
	}
	CHECK_EQ(kvtier_put(pool, blk, 4, 0, &done), 0);
	CHECK_EQ(done, 4);
	n = ev_drain(fd, ev, 128, &next);
	CHECK_EQ(n, 4);
	for (i = 0; i < 4; i++) {
		CHECK_EQ(ev[i].type, KVTIER_EVENT_STORED);
		CHECK_EQ(ev[i].reason, KVTIER_EVR_PUT);
		CHECK_EQ(ev[i].tier, KVTIER_TIER_DRAM);
		CHECK_EQ(ev[i].from, 0);
		CHECK_EQ(ev[i].flags, 0);
		CHECK_EQ(ev[i].lost, 0);
		CHECK(ev[i].key[0] == keys[i].k[0] && ev[i].key[1] == keys[i].k[1]);
		CHECK(ev[i].addr == blk[i].addr);
		CHECK(ev[i].time_ns && ev[i].time_ns <= kvtier_now_ns());
		CHECK(!i || ev[i].time_ns >= ev[i - 1].time_ns);
	}

	/* The census reflects them: seq 4, the keys where LOOKUP says */
	CHECK_EQ(ev_census(pool, &census, &seq, 1), 0);
	CHECK_EQ(seq, 4);
	CHECK_EQ(census.n, 4);
	for (i = 0; i < 4; i++) {
		n = ev_find(&census, (const __u64 *)keys[i].k);
		CHECK(n >= 0);
		CHECK(census.k[n].addr == blk[i].addr);
		CHECK_EQ(census.k[n].tier, KVTIER_TIER_DRAM);
		CHECK_EQ(census.k[n].flags, KVTIER_CENSUS_DRAM);
	}
	for (i = 1; i < 4; i++)
		CHECK(census.k[i].addr > census.k[i - 1].addr);
	model = census;

	/* A second reader from seq 1: the ring has kept all of them */
	memset(&e2, 0, sizeof(e2));
	fd2 = kvtier_events_open(pool, 1, KVTIER_EVENTS_NONBLOCK, &e2);
	CHECK(fd2 >= 0);
	CHECK_EQ(e2.seq, 1);
	CHECK(e2.log_id == e.log_id);
	CHECK(fcntl(fd2, F_GETFL) & O_NONBLOCK);

	/* REPLACE: STORED again; DROP: REMOVED; PIN shows in the census */
	CHECK_EQ(kvtier_put1(pool, &keys[0], buf, KVTIER_PUT_REPLACE), 0);
	CHECK_EQ(kvtier_drop1(pool, &keys[1]), 0);
	kvtier_block_set(&pin, &keys[2], NULL);
	CHECK_EQ(kvtier_pin(pool, &pin, 1, 0, &done), 0);
	CHECK_EQ(done, 1);
	n = ev_drain(fd, ev, 128, &next);
	CHECK_EQ(n, 2);
	CHECK_EQ(ev[0].type, KVTIER_EVENT_STORED);
	CHECK_EQ(ev[0].reason, KVTIER_EVR_REPLACE);
	CHECK_EQ(ev[1].type, KVTIER_EVENT_REMOVED);
	CHECK_EQ(ev[1].reason, KVTIER_EVR_DROP);
	CHECK_EQ(ev[1].tier, KVTIER_TIER_DRAM);
	CHECK(ev[1].key[0] == keys[1].k[0] && ev[1].key[1] == keys[1].k[1]);
	for (i = 0; i < (uint32_t)n; i++)
		CHECK_EQ(ev_apply(&model, &ev[i]), 0);
	CHECK_EQ(ev_census(pool, &census, &seq, 2), 0);
	CHECK_EQ(seq, 6);
	CHECK(ev_same(&model, &census));
	n = ev_find(&census, (const __u64 *)keys[2].k);
	CHECK(n >= 0);
	CHECK_EQ(census.k[n].flags, KVTIER_CENSUS_DRAM | KVTIER_CENSUS_PINNED);
	CHECK_EQ(kvtier_unpin(pool, &pin, 1, 0, &done), 0);

	/* Past DRAM's share: evictions (no NVMe tier: REMOVED, evict) */
	for (i = 4; i < 16; i++) {
		kvtier_key_chain(NULL, 7000 + i, &keys[i]);
		kvtier_block_set(&blk[i], &keys[i], buf);
	}
	CHECK_EQ(kvtier_put(pool, blk + 4, 12, 0, &done), 0);
	CHECK_EQ(done, 12);
	n = ev_drain(fd, ev, 128, &next);
	CHECK(n > 12);
	nlast = n;
	{
		uint32_t stored = 0, evicted = 0;

		for (i = 0; i < (uint32_t)n; i++) {
			CHECK_EQ(ev_apply(&model, &ev[i]), 0);
			stored += ev[i].type == KVTIER_EVENT_STORED;
			evicted += ev[i].type == KVTIER_EVENT_REMOVED &&
				   ev[i].reason == KVTIER_EVR_EVICT;
		}
		CHECK_EQ(stored, 12);
		CHECK_EQ(evicted, (uint32_t)n - 12);
	}
	CHECK(model.n > 0 && model.n <= DRAM);
	CHECK_EQ(ev_census(pool, &census, &seq, 3), 0);
	CHECK_EQ(seq, next - 1);
	CHECK(ev_same(&model, &census));

	/* The second reader read the same log from the start */
	{
		static struct kvtier_event all[128];

		/* seq 1..6 before the evictions' drain: the same records */
		n = ev_drain(fd2, all, 128, &next2);
		CHECK_EQ(n, (int)(next - 1));
		CHECK_EQ(all[0].seq, 1);
		CHECK_EQ(n, 6 + nlast);
		CHECK(!memcmp(all + 6, ev, nlast * sizeof(ev[0])));
	}
	CHECK_EQ(kvtier_events_read(fd2, ev, 4, 0), -ETIMEDOUT);

	/* Bad opens: unknown flag, FROM without seq, seq past the next */
	CHECK_EQ(kvtier_events_open(pool, 0, 1U << 7, NULL), -EINVAL);
	CHECK_EQ(kvtier_events_open(pool, 0, KVTIER_EVENTS_FROM, NULL), -EINVAL);
	CHECK_EQ(kvtier_events_open(pool, next + 1, 0, NULL), -EINVAL);
	n = kvtier_events_open(pool, next, 0, NULL);
	CHECK(n >= 0);
	close(n);

	/* Bad census calls */
	cursor = 0;
	CHECK_EQ(kvtier_census(pool, &cursor, census.k, NULL, 0, NULL, NULL),
		 -EINVAL);
	cursor = CAP + 1;
	CHECK_EQ(kvtier_census(pool, &cursor, census.k, NULL, 4, NULL, NULL),
		 -EINVAL);
	cursor = CAP;
	seq = 0;
	CHECK_EQ(kvtier_census(pool, &cursor, census.k, NULL, 4, &seq, NULL),
		 0);
	CHECK(cursor == KVTIER_ADDR_NONE);
	CHECK_EQ(seq, next - 1);
	CHECK_EQ(kvtier_census(pool, &cursor, census.k, NULL, 4, NULL, NULL),
		 0);
	cursor = 0;
	CHECK_EQ(kvtier_census(pool, &cursor, (void *)8, NULL, 4, NULL, NULL),
		 -EFAULT);

	/* The pool's end: what is left, CLEARED, then end of file */
	close(fd2);
	CHECK_EQ(kvtier_drop1(pool, &keys[15]), 0);
	kvtier_pool_close(pool);
	n = 0;
	for (i = 0; i < 50 && !n; i++) {
		n = kvtier_events_read(fd, ev, 128, 100);
		if (n == -ETIMEDOUT)
			n = 0;
	}
	CHECK_EQ(n, 2);
	CHECK_EQ(ev[0].type, KVTIER_EVENT_REMOVED);
	CHECK_EQ(ev[0].reason, KVTIER_EVR_DROP);
	CHECK_EQ(ev[1].type, KVTIER_EVENT_CLEARED);
	CHECK_EQ(ev[1].reason, KVTIER_EVR_DESTROY);
	CHECK_EQ(ev[1].seq, next + 1);
	CHECK(ev[1].addr == KVTIER_ADDR_NONE);
	CHECK(!ev[1].key[0] && !ev[1].key[1]);
	CHECK_EQ(kvtier_events_read(fd, ev, 128, 1000), 0);
	CHECK_EQ(kvtier_events_read(fd, ev, 128, -1), 0);
	close(fd);
}

/*
 * A reader the ring lapped: one OVERFLOW record naming what it lost, the
 * ring's oldest next; a census then events after it are the pool again.
 */
static void test_events_overflow(void)
{
	enum { BS = 4096, NK = 64 };
	static struct ev_model model, census;
	static struct kvtier_event ev[512];
	struct kvtier_block blk[NK];
	struct kvtier_key keys[NK];
	struct kvtier_pool *pool;
	uint64_t seq, total, next;
	unsigned int ring = events_ring_param();
	uint32_t i, j, r, rounds, done, seen = 0;
	int fd, n, fd1;
	char *buf;

	CHECK(ring >= 64);
	/* Room for each REPLACE's new block beside the old one */
	pool = anon_pool("evov", BS, 2 * NK);
	CHECK(pool);
	buf = calloc(NK, BS);
	CHECK(buf);
	for (i = 0; i < NK; i++) {
		kvtier_key_chain(NULL, 8000 + i, &keys[i]);
		kvtier_block_set(&blk[i], &keys[i], buf + i * BS);
	}
	fd = kvtier_events_open(pool, 0, 0, NULL);
	CHECK(fd >= 0);
	/* NK STORED, then rounds of NK REPLACEs: past the ring by a round */
	CHECK_EQ(kvtier_put(pool, blk, NK, 0, &done), 0);
	CHECK_EQ(done, NK);
	rounds = ring / NK + 1;
	for (r = 0; r < rounds; r++) {
		CHECK_EQ(kvtier_put(pool, blk, NK, KVTIER_PUT_REPLACE, &done), 0);
		CHECK_EQ(done, NK);
	}

	/* The reader resyncs: a census (every event so far), then the fd */
	CHECK_EQ(ev_census(pool, &census, &seq, NK), 0);
	total = seq;
	CHECK_EQ(total, (uint64_t)NK * (rounds + 1));
	CHECK_EQ(census.n, NK);
	model = census;
	CHECK_EQ(kvtier_drop1(pool, &keys[3]), 0);
	CHECK_EQ(kvtier_put1(pool, &keys[3], buf, 0), 0);
	CHECK_EQ(kvtier_drop1(pool, &keys[5]), 0);

	/* One OVERFLOW: what the ring lost; then its oldest, in order */
	n = kvtier_events_read(fd, ev, 512, 0);
	CHECK(n > 1);
	CHECK_EQ(ev[0].type, KVTIER_EVENT_OVERFLOW);
	CHECK_EQ(ev[0].seq, 1);
	CHECK_EQ(ev[0].lost, total + 3 - ring);
	CHECK(ev[0].addr == KVTIER_ADDR_NONE);
	CHECK(!ev[0].key[0] && !ev[0].key[1]);
	CHECK_EQ(ev[0].reason, 0);
	next = ev[0].seq + ev[0].lost;
	for (;;) {
		for (j = seen ? 0 : 1; j < (uint32_t)n; j++) {
			CHECK_EQ(ev[j].seq, next);
			CHECK(ev[j].type != KVTIER_EVENT_OVERFLOW);
			next++;
			if (ev[j].seq > seq)
				CHECK_EQ(ev_apply(&model, &ev[j]), 0);
		}
		seen = 1;
		n = kvtier_events_read(fd, ev, 512, 0);
		if (n == -ETIMEDOUT)
			break;
		CHECK(n > 0);
	}
	CHECK_EQ(next, total + 4);
	CHECK_EQ(ev_census(pool, &census, &seq, 7), 0);
	CHECK_EQ(seq, total + 3);
	CHECK(ev_same(&model, &census));
	CHECK_EQ(model.n, NK - 1);

	/* A new reader from seq 1: the ring no longer has it */
	fd1 = kvtier_events_open(pool, 1, 0, NULL);
	CHECK(fd1 >= 0);
	n = kvtier_events_read(fd1, ev, 2, 0);
	CHECK_EQ(n, 2);
	CHECK_EQ(ev[0].type, KVTIER_EVENT_OVERFLOW);
	CHECK_EQ(ev[0].lost, total + 3 - ring);
	CHECK_EQ(ev[1].seq, total + 3 - ring + 1);
	close(fd1);
	close(fd);
	free(buf);
	kvtier_pool_close(pool);
}

/* Read-only handles read events and take the census; records come too. */
static void test_events_rdonly_meta(void)
{
	struct kvtier_census_entry ent[4];
	struct kvtier_pool_params p;
	struct kvtier_pool *rw, *ro;
	struct kvtier_meta m, got[4];
	struct kvtier_event ev[4];
	struct kvtier_key k;
	char buf[4096] = { 0 };
	uint64_t cursor = 0, seq, id;
	int fd;

	kvtier_pool_params_init(&p, pname("evro"), 4096, 4);
	CHECK_EQ(kvtier_pool_create(ctx, &p, &rw), 0);
	CHECK_EQ(kvtier_pool_open(ctx, pool_name, KVTIER_POOL_RDONLY, &ro), 0);
	kvtier_pool_destroy(ctx, pool_name);
	fd = kvtier_events_open(ro, 0, KVTIER_EVENTS_NONBLOCK, NULL);
	CHECK(fd >= 0);
	kvtier_key_chain(NULL, 77, &k);
	if (has_feature(KVTIER_F_META)) {
		struct kvtier_block b;
		uint32_t done;

		kvtier_block_set(&b, &k, buf);
		kvtier_meta_set(&m, "evro-record", 11);
		CHECK_EQ(kvtier_put_meta(rw, &b, &m, 1, 0, &done), 0);
		CHECK_EQ(done, 1);
	} else {
		CHECK_EQ(kvtier_put1(rw, &k, buf, 0), 0);
	}
	CHECK_EQ(kvtier_events_read(fd, ev, 4, 1000), 1);
	CHECK_EQ(ev[0].type, KVTIER_EVENT_STORED);
	memset(got, 0xa5, sizeof(got));
	CHECK_EQ(kvtier_census(ro, &cursor, ent,
			       has_feature(KVTIER_F_META) ? got : NULL, 4,
			       &seq, &id), 1);
	CHECK(cursor == KVTIER_ADDR_NONE);
	CHECK_EQ(seq, 1);
	CHECK(ent[0].key[0] == k.k[0] && ent[0].key[1] == k.k[1]);
	CHECK(ent[0].addr == ev[0].addr);
	if (has_feature(KVTIER_F_META))
		CHECK(!memcmp(&got[0], &m, sizeof(m)));
	close(fd);
	kvtier_pool_close(ro);
	kvtier_pool_close(rw);
}

/* A context without KVTIER_F_EVENTS (or META) is refused. */
static void test_events_need_feature(void)
{
	struct kvtier_census_entry ent[2];
	struct kvtier_pool_params pp;
	struct kvtier_meta m[2];
	struct kvtier_pool *p;
	struct kvtier_ctx *c;
	uint64_t cursor = 0;

	CHECK_EQ(kvtier_open(&c, KVTIER_F_POOLS), 0);
	kvtier_pool_params_init(&pp, pname("noev"), 4096, 4);
	CHECK_EQ(kvtier_pool_create(c, &pp, &p), 0);
	kvtier_pool_destroy(c, pool_name);
	CHECK_EQ(kvtier_events_open(p, 0, 0, NULL), -EOPNOTSUPP);
	CHECK_EQ(kvtier_census(p, &cursor, ent, NULL, 2, NULL, NULL),
		 -EOPNOTSUPP);
	kvtier_pool_close(p);
	kvtier_close(c);

	CHECK_EQ(kvtier_open(&c, KVTIER_F_POOLS | KVTIER_F_EVENTS), 0);
	CHECK_EQ(kvtier_pool_create(c, &pp, &p), 0);
	kvtier_pool_destroy(c, pool_name);
	CHECK_EQ(kvtier_census(p, &cursor, ent, m, 2, NULL, NULL), -EOPNOTSUPP);
	CHECK_EQ(kvtier_census(p, &cursor, ent, NULL, 2, NULL, NULL), 0);
	kvtier_pool_close(p);
	kvtier_close(c);
}

/* ---- safetensors tensor tables and weight pools ------------------------ */

/* A safetensors header in @buf: the little-endian length, then @json. */
static size_t st_header(char *buf, const char *json)
{
	uint64_t n = strlen(json);
	int i;

	for (i = 0; i < 8; i++)
		buf[i] = n >> (8 * i);
	memcpy(buf + 8, json, n);
	return 8 + n;
}

static char st_buf[64 << 10];

/* Parse @json as a file with @data bytes of tensors after the header. */
static int st_parse_json(const char *json, uint64_t data,
			 struct kvtier_st_table *tab)
{
	size_t len = st_header(st_buf, json);

	return kvtier_st_parse(st_buf, len, len + data, tab);
}

static const char st_good[] =
	"{\"__metadata__\":{\"format\":\"pt\",\"q\":\"a\\\"b\\u00e9\"},\n"
	" \"model.embed_tokens.weight\":{\"dtype\":\"BF16\",\"shape\":[16,8],"
	"\"data_offsets\":[0,256]},\n"
	" \"model.layers.1.block_sparse_moe.experts.3.w1.weight\":"
	"{\"data_offsets\":[640,704],\"shape\":[4,4],\"dtype\":\"F32\"},\n"
	" \"model.layers.0.self_attn.q_proj.weight\":{\"dtype\":\"F16\","
	"\"shape\":[8,8],\"data_offsets\":[256,384]},\n"
	" \"model.layers.1.mlp.shared_experts.w\":{\"dtype\":\"I8\","
	"\"shape\":[64],\"data_offsets\":[384,448]},\n"
	" \"transformer.h.12.attn.bias\":{\"dtype\":\"F64\",\"shape\":[8],"
	"\"data_offsets\":[448,512]},\n"
	" \"blk.7.ffn_gate_exps.weight\":{\"dtype\":\"U8\",\"shape\":[128],"
	"\"data_offsets\":[512,640]},\n"
	" \"lm_head.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[],"
	"\"data_offsets\":[704,705]},\n"
	" \"empty\":{\"dtype\":\"BOOL\",\"shape\":[0,3],\"data_offsets\":[705,705]},\n"
	" \"model.nolayers.3.w\":{\"dtype\":\"U8\",\"shape\":[1],"
	"\"data_offsets\":[705,706]},\n"
	" \"na\\u00efve.layer.5.x\":{\"dtype\":\"I64\",\"shape\":[1],"
	"\"data_offsets\":[1024,1032]}\n"
	"}      ";

static void st_expect(const struct kvtier_tensor *t, const char *name,
		      uint64_t offset, uint64_t bytes, int32_t layer,
		      int32_t expert)
{
	if (strcmp(t->name, name) || t->offset != offset || t->bytes != bytes ||
	    t->layer != layer || t->expert != expert) {
		printf("#   got %s @%llu +%llu layer %d expert %d, expected %s @%llu +%llu layer %d expert %d\n",
		       t->name, (unsigned long long)t->offset,
		       (unsigned long long)t->bytes, t->layer, t->expert, name,
		       (unsigned long long)offset, (unsigned long long)bytes,
		       layer, expert);
		case_failed = 1;
	}
}

static void test_safetensors_parse(void)
{
	struct kvtier_st_table tab, again;
	const struct kvtier_tensor *t;
	uint64_t n, digest;

	CHECK_EQ(st_parse_json(st_good, 2048, &tab), 0);
	CHECK_EQ(tab.count, 10);
	CHECK_EQ(tab.header_len, strlen(st_good));
	CHECK_EQ(tab.data_off, 8 + strlen(st_good));
	CHECK(tab.digest != 0);
	/* In data order; the empty tensor before its neighbour, as listed */
	t = tab.t;
	st_expect(&t[0], "model.embed_tokens.weight", 0, 256, -1, -1);
	st_expect(&t[1], "model.layers.0.self_attn.q_proj.weight", 256, 128, 0, -1);
	st_expect(&t[2], "model.layers.1.mlp.shared_experts.w", 384, 64, 1, -1);
	st_expect(&t[3], "transformer.h.12.attn.bias", 448, 64, 12, -1);
	st_expect(&t[4], "blk.7.ffn_gate_exps.weight", 512, 128, 7, -1);
	st_expect(&t[5], "model.layers.1.block_sparse_moe.experts.3.w1.weight",
		  640, 64, 1, 3);
	st_expect(&t[6], "lm_head.weight", 704, 1, -1, -1);
	st_expect(&t[7], "empty", 705, 0, -1, -1);
	st_expect(&t[8], "model.nolayers.3.w", 705, 1, -1, -1);
	st_expect(&t[9], "na\xc3\xafve.layer.5.x", 1024, 8, 5, -1);
	CHECK(!case_failed);
	CHECK(!strcmp(t[0].dtype, "BF16"));
	CHECK_EQ(t[0].ndim, 2);
	CHECK_EQ(t[0].shape[0], 16);
	CHECK_EQ(t[0].shape[1], 8);
	CHECK(!strcmp(t[5].dtype, "F32"));
	CHECK_EQ(t[6].ndim, 0);
	CHECK_EQ(t[7].ndim, 2);
	CHECK_EQ(t[7].shape[0], 0);

	/* The digest: the same bytes and size, the same; another size, not */
	digest = tab.digest;
	kvtier_st_free(&tab);
	CHECK(tab.t == NULL && tab.count == 0);
	CHECK_EQ(st_parse_json(st_good, 2048, &again), 0);
	CHECK(again.digest == digest);
	kvtier_st_free(&again);
	CHECK_EQ(st_parse_json(st_good, 2049, &again), 0);
	CHECK(again.digest != digest);
	kvtier_st_free(&again);

	/* Exactly the data it indexes, and a buffer longer than the header */
	CHECK_EQ(st_parse_json(st_good, 1032, &again), 0);
	kvtier_st_free(&again);
	n = st_header(st_buf, st_good);
	CHECK_EQ(kvtier_st_parse(st_buf, n + 100, n + 1032, &again), 0);
	CHECK_EQ(again.count, 10);
	kvtier_st_free(&again);

	/* No tensors at all is a table (weights_open refuses it) */
	CHECK_EQ(st_parse_json("{}", 0, &again), 0);
	CHECK_EQ(again.count, 0);
	kvtier_st_free(&again);

	/* A name of KVTIER_TENSOR_NAME_MAX - 1 bytes fits */
	{
		static char json[2 * KVTIER_TENSOR_NAME_MAX];
		char name[KVTIER_TENSOR_NAME_MAX];

		memset(name, 'n', sizeof(name) - 1);
		name[sizeof(name) - 1] = '\0';
		snprintf(json, sizeof(json), "{\"%s\":{\"dtype\":\"U8\","
			 "\"shape\":[1],\"data_offsets\":[0,1]}}", name);
		CHECK_EQ(st_parse_json(json, 1, &again), 0);
		CHECK(!strcmp(again.t[0].name, name));
		kvtier_st_free(&again);
	}
}

#define ST_T(name, dtype, shape, offs)					\
	"\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape	\
	",\"data_offsets\":" offs "}"
/* A table of one tensor, "a". */
#define ST_A(dtype, shape, offs)	"{" ST_T("a", dtype, shape, offs) "}"

/* Every malformation, one a case: -EBADMSG and an empty table. */
static void test_safetensors_reject(void)
{
	static const struct {
		const char *why;
		const char *json;
		uint64_t data;
	} bad[] = {
		{ "empty JSON", "", 64 },
		{ "not an object", "[]", 64 },
		{ "unclosed object", "{" ST_T("a", "U8", "[4]", "[0,4]"), 64 },
		{ "trailing comma", "{" ST_T("a", "U8", "[4]", "[0,4]") ",}", 64 },
		{ "trailing bytes", "{" ST_T("a", "U8", "[4]", "[0,4]") "}x", 64 },
		{ "two objects", "{}{}", 64 },
		{ "single quotes", "{'a':{}}", 64 },
		{ "unterminated string", "{\"a", 64 },
		{ "no colon", "{\"a\" {}}", 64 },
		{ "bad escape", "{" ST_T("a\\x", "U8", "[4]", "[0,4]") "}", 64 },
		{ "short \\u", "{" ST_T("a\\u12", "U8", "[4]", "[0,4]") "}", 64 },
		{ "lone surrogate", "{" ST_T("a\\ud800", "U8", "[4]", "[0,4]") "}", 64 },
		{ "low surrogate", "{" ST_T("a\\udc00b", "U8", "[4]", "[0,4]") "}", 64 },
		{ "NUL in a name", "{" ST_T("a\\u0000", "U8", "[4]", "[0,4]") "}", 64 },
		{ "control char", "{" ST_T("a\tb", "U8", "[4]", "[0,4]") "}", 64 },
		{ "empty name", "{" ST_T("", "U8", "[4]", "[0,4]") "}", 64 },
		{ "tensor not an object", "{\"a\":[0,4]}", 64 },
		{ "unknown dtype", ST_A("F17", "[4]", "[0,4]"), 64 },
		{ "lower-case dtype", ST_A("f32", "[1]", "[0,4]"), 64 },
		{ "dtype not a string", "{\"a\":{\"dtype\":4,\"shape\":[4],\"data_offsets\":[0,4]}}", 64 },
		{ "size mismatch", ST_A("F16", "[8,8]", "[0,100]"), 256 },
		{ "size short by one", ST_A("F32", "[4]", "[0,15]"), 64 },
		{ "shape overflow", ST_A("U8", "[4294967296,4294967296,16]", "[0,0]"), 64 },
		{ "too many dims", ST_A("U8", "[1,1,1,1,1,1,1,1,4]", "[0,4]"), 64 },
		{ "offsets past end", ST_A("U8", "[256]", "[0,256]"), 200 },
		{ "begin past end", ST_A("U8", "[0]", "[300,300]"), 200 },
		{ "begin after end", ST_A("U8", "[0]", "[10,5]"), 64 },
		{ "one offset", ST_A("U8", "[4]", "[4]"), 64 },
		{ "three offsets", ST_A("U8", "[4]", "[0,4,8]"), 64 },
		{ "overlap", "{" ST_T("a", "U8", "[128]", "[0,128]") ","
			     ST_T("b", "U8", "[128]", "[64,192]") "}", 256 },
		{ "overlap, listed later", "{" ST_T("b", "U8", "[128]", "[64,192]") ","
			     ST_T("c", "U8", "[16]", "[200,216]") ","
			     ST_T("a", "U8", "[128]", "[0,128]") "}", 256 },
		{ "same range", "{" ST_T("a", "U8", "[4]", "[0,4]") ","
			     ST_T("b", "I8", "[4]", "[0,4]") "}", 64 },
		{ "duplicate name", "{" ST_T("a", "U8", "[4]", "[0,4]") ","
			     ST_T("a", "U8", "[0]", "[8,8]") "}", 64 },
		{ "negative dim", ST_A("U8", "[-4]", "[0,4]"), 64 },
		{ "negative offset", ST_A("U8", "[4]", "[-4,0]"), 64 },
		{ "fraction", ST_A("U8", "[4.0]", "[0,4]"), 64 },
		{ "exponent", ST_A("U8", "[4]", "[0,4e0]"), 64 },
		{ "leading zero", ST_A("U8", "[04]", "[0,4]"), 64 },
		{ "plus sign", ST_A("U8", "[+4]", "[0,4]"), 64 },
		{ "string number", ST_A("U8", "[4]", "[0,\"4\"]"), 64 },
		{ "u64 overflow", ST_A("U8", "[0]", "[18446744073709551616,18446744073709551616]"), 64 },
		{ "missing shape", "{\"a\":{\"dtype\":\"U8\",\"data_offsets\":[0,4]}}", 64 },
		{ "missing dtype", "{\"a\":{\"shape\":[4],\"data_offsets\":[0,4]}}", 64 },
		{ "missing offsets", "{\"a\":{\"dtype\":\"U8\",\"shape\":[4]}}", 64 },
		{ "unknown field", "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4],\"x\":1}}", 64 },
		{ "duplicate field", "{\"a\":{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 64 },
		{ "metadata not strings", "{\"__metadata__\":{\"a\":1}}", 64 },
		{ "metadata not an object", "{\"__metadata__\":\"a\"}", 64 },
		{ "metadata twice", "{\"__metadata__\":{},\"__metadata__\":{}}", 64 },
	};
	static char json[2 * KVTIER_TENSOR_NAME_MAX];
	char name[KVTIER_TENSOR_NAME_MAX + 1];
	struct kvtier_st_table tab;
	uint8_t head[8] = { 0 };
	uint64_t n;
	size_t i, len;
	int ret;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ret = st_parse_json(bad[i].json, bad[i].data, &tab);
		if (ret != -EBADMSG || tab.t || tab.count) {
			printf("#   %s: %d, expected -EBADMSG\n", bad[i].why, ret);
			case_failed = 1;
		}
	}
	CHECK(!case_failed);

	/* Padded with a NUL, not a space */
	len = st_header(st_buf, ST_A("U8", "[4]", "[0,4]"));
	st_buf[len] = '\0';
	st_buf[0]++;
	CHECK_EQ(kvtier_st_parse(st_buf, len + 1, len + 1 + 64, &tab), -EBADMSG);

	/* A name of KVTIER_TENSOR_NAME_MAX bytes: one too long */
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	CHECK_EQ(strlen(name), KVTIER_TENSOR_NAME_MAX);
	snprintf(json, sizeof(json), "{" ST_T("%s", "U8", "[1]", "[0,1]") "}",
		 name);
	CHECK_EQ(st_parse_json(json, 1, &tab), -EBADMSG);

	/* The length: truncated, 0, past the end of the file, too long */
	len = st_header(st_buf, st_good);
	CHECK_EQ(kvtier_st_parse(st_buf, 7, len + 2048, &tab), -EBADMSG);
	CHECK_EQ(kvtier_st_parse(st_buf, len - 1, len + 2048, &tab), -EBADMSG);
	CHECK_EQ(kvtier_st_parse(st_buf, len, len - 1, &tab), -EBADMSG);
	CHECK_EQ(kvtier_st_parse(st_buf, len, 7, &tab), -EBADMSG);
	/* the data section shorter than the table says */
	CHECK_EQ(kvtier_st_parse(st_buf, len, len + 1031, &tab), -EBADMSG);
	CHECK_EQ(kvtier_st_header_len(head, 1 << 20, &n), -EBADMSG);
	head[0] = 16;
	CHECK_EQ(kvtier_st_header_len(head, 24, &n), 0);
	CHECK_EQ(n, 16);
	CHECK_EQ(kvtier_st_header_len(head, 23, &n), -EBADMSG);
	head[0] = 0;
	head[3] = 0x06;		/* 96 MiB: under the bound */
	CHECK_EQ(kvtier_st_header_len(head, 1ULL << 40, &n), 0);
	CHECK_EQ(n, 96ULL << 20);
	head[3] = 0x07;		/* 112 MiB: over it */
	CHECK_EQ(kvtier_st_header_len(head, 1ULL << 40, &n), -EBADMSG);
	head[3] = 0;
	head[7] = 0x80;
	CHECK_EQ(kvtier_st_header_len(head, UINT64_MAX, &n), -EBADMSG);
}

/* A weight pool's file: a table of @json, then @data bytes of pattern. */
static int wt_file(char *path, const char *json, size_t data, char **bytes)
{
	size_t len = st_header(st_buf, json), i;
	char *d = malloc(data);
	int fd;

	if (!d)
		return -1;
	for (i = 0; i < data; i++)
		d[i] = (char)(i * 7 + i / 251);
	strcpy(path, "/tmp/kvt-test-weights.XXXXXX");
	fd = mkstemp(path);
	if (fd < 0 || write(fd, st_buf, len) != (ssize_t)len ||
	    write(fd, d, data) != (ssize_t)data) {
		if (fd >= 0)
			close(fd);
		free(d);
		return -1;
	}
	close(fd);
	*bytes = d;
	return len;
}

/* Addresses @lo..@hi (pool bytes, @hi exclusive) of @bs-byte blocks. */
static uint32_t wt_range(uint64_t *a, uint32_t n, uint64_t lo, uint64_t hi,
			 uint64_t bs)
{
	uint64_t b;

	for (b = lo / bs; b <= (hi - 1) / bs; b++)
		if (!n || a[n - 1] < b)
			a[n++] = b;
	return n;
}

static const char wt_json[] = "{"
	ST_T("embed", "U8", "[5000]", "[0,5000]") ","
	ST_T("model.layers.0.attn.w", "F16", "[3000]", "[5000,11000]") ","
	ST_T("model.layers.0.mlp.experts.0.w", "F32", "[1000]", "[11000,15000]") ","
	ST_T("model.layers.0.mlp.experts.1.w", "F32", "[10,100]", "[15000,19000]") ","
	ST_T("model.layers.1.attn.w", "BF16", "[2048]", "[19000,23096]") ","
	ST_T("lm_head", "U8", "[10]", "[23096,23106]") "}";

/*
 * kvtier_weights_prefetch_experts(): layer 0's two experts (their blocks
 * @d + 11000 .. @d + 19000, one shared at the seam) as one group, each
 * block once, sure or probable; its refusals.
 */
static void test_weights_experts(struct kvtier_weights *w,
				 struct kvtier_pool *pool, uint64_t d,
				 const char *path)
{
	const uint32_t one = KVTIER_PROB_ONE;
	struct kvtier_prefetch_args a = { .group = 78 };
	int32_t ex[3] = { 0, 1, 1 }, bad[2] = { 0, -1 }, none[1] = { 2 };
	uint32_t pr[3] = { one / 4 * 3, one / 8, one / 2 };
	uint32_t over[3] = { one, one, one + 1 };
	struct kvtier_completion c;
	struct kvtier_ctx *c2;
	struct kvtier_weights *w2;
	uint64_t want[16];
	uint32_t n = wt_range(want, 0, d + 11000, d + 19000, 4096);

	CHECK_EQ(kvtier_weights_prefetch_experts(w, 0, ex, NULL, 3, &a), 0);
	CHECK_EQ(kvtier_wait_group(pool, 78, &c, 5000), 0);
	CHECK_EQ(c.status, 0);
	CHECK_EQ(c.count, n);
	if (has_feature(KVTIER_F_HINT_PROB)) {
		a.group = 79;
		CHECK_EQ(kvtier_weights_prefetch_experts(w, 0, ex, pr, 3, &a), 0);
		CHECK_EQ(kvtier_wait_group(pool, 79, &c, 5000), 0);
		CHECK_EQ(c.status, 0);
		CHECK_EQ(c.count, n);
	}
	CHECK_EQ(kvtier_weights_prefetch_experts(w, 0, ex, NULL, 0, &a), -EINVAL);
	CHECK_EQ(kvtier_weights_prefetch_experts(w, 0, NULL, NULL, 1, &a), -EINVAL);
	CHECK_EQ(kvtier_weights_prefetch_experts(w, 0, ex, NULL, 1, NULL), -EINVAL);
	CHECK_EQ(kvtier_weights_prefetch_experts(w, 0, bad, NULL, 2, &a), -EINVAL);
	CHECK_EQ(kvtier_weights_prefetch_experts(w, 0, ex, over, 3, &a), -EINVAL);
	CHECK_EQ(kvtier_weights_prefetch_experts(w, 0, none, NULL, 1, &a), -ENOENT);
	CHECK_EQ(kvtier_weights_prefetch_experts(w, 1, ex, NULL, 1, &a), -ENOENT);
	/* Probabilities need the feature; sure hints do not */
	CHECK_EQ(kvtier_open(&c2, KVTIER_F_POOLS | KVTIER_F_PREFETCH |
			     KVTIER_F_WEIGHTS), 0);
	CHECK_EQ(kvtier_weights_open(c2, path, pool_name, 4096, 0, &w2), 0);
	CHECK_EQ(kvtier_weights_prefetch_experts(w2, 0, ex, pr, 3, &a),
		 -EOPNOTSUPP);
	a.group = 80;
	CHECK_EQ(kvtier_weights_prefetch_experts(w2, 0, ex, NULL, 3, &a), 0);
	CHECK_EQ(kvtier_wait_group(kvtier_weights_pool(w2), 80, &c, 5000), 0);
	kvtier_weights_close(w2);
	kvtier_close(c2);
}

static void test_weights(void)
{
	enum { BS = 4096, DATA = 23106 };
	uint64_t want[16], got[16], d;
	struct kvtier_weights *w, *w2;
	struct kvtier_tensor t;
	struct kvtier_pool *pool;
	struct kvtier_key k;
	uint32_t i, n, layers, experts;
	char path[64], *bytes, *buf;
	struct timespec ts[2];
	int hlen;

	hlen = wt_file(path, wt_json, DATA, &bytes);
	CHECK(hlen > 0);
	d = hlen;
	buf = calloc(1, DATA);
	CHECK(buf);
	CHECK_EQ(kvtier_weights_open(ctx, path, pname("wt"), 1000, 0, &w),
		 -EINVAL);
	CHECK_EQ(kvtier_weights_open(ctx, "/nonexistent/x", pool_name, BS, 0,
				     &w), -ENOENT);
	CHECK_EQ(kvtier_weights_open(ctx, path, pname("wt"), BS, 3, &w), 0);
	pool = kvtier_weights_pool(w);
	/* The header is under 4096 bytes: block 0 at file offset 0 */
	CHECK_EQ(kvtier_pool_block_size(pool), BS);
	CHECK_EQ(kvtier_pool_capacity(pool), (d + DATA + BS - 1) / BS);
	CHECK_EQ(kvtier_weights_count(w, &layers, &experts), 6);
	CHECK_EQ(layers, 2);
	CHECK_EQ(experts, 2);
	CHECK_EQ(kvtier_weights_tensor(w, 1, NULL, &t), 0);
	CHECK(!strcmp(t.name, "model.layers.0.attn.w"));
	CHECK_EQ(t.offset, d + 5000);
	CHECK_EQ(t.bytes, 6000);
	CHECK_EQ(t.layer, 0);
	CHECK_EQ(t.expert, -1);
	CHECK_EQ(kvtier_weights_tensor(w, 0, "model.layers.0.mlp.experts.1.w",
				       &t), 0);
	CHECK_EQ(t.offset, d + 15000);
	CHECK_EQ(t.expert, 1);
	CHECK_EQ(t.ndim, 2);
	CHECK_EQ(kvtier_weights_tensor(w, 6, NULL, &t), -ENOENT);
	CHECK_EQ(kvtier_weights_tensor(w, 0, "nope", &t), -ENOENT);

	/* Blocks: a layer, its experts, the rest; ascending, once each */
	n = wt_range(want, 0, d + 5000, d + 19000, BS);
	CHECK_EQ(kvtier_weights_blocks(w, 0, KVTIER_WEIGHTS_ALL, got, 16), n);
	CHECK(!memcmp(got, want, n * sizeof(*got)));
	CHECK_EQ(kvtier_weights_blocks(w, 0, KVTIER_WEIGHTS_ALL, got, 1), n);
	n = wt_range(want, 0, d + 5000, d + 11000, BS);
	CHECK_EQ(kvtier_weights_blocks(w, 0, -1, got, 16), n);
	CHECK(!memcmp(got, want, n * sizeof(*got)));
	n = wt_range(want, 0, d + 15000, d + 19000, BS);
	CHECK_EQ(kvtier_weights_blocks(w, 0, 1, got, 16), n);
	CHECK(!memcmp(got, want, n * sizeof(*got)));
	n = wt_range(want, 0, d, d + 5000, BS);
	n = wt_range(want, n, d + 23096, d + 23106, BS);
	CHECK_EQ(kvtier_weights_blocks(w, -1, -1, got, 16), n);
	CHECK(!memcmp(got, want, n * sizeof(*got)));
	CHECK_EQ(kvtier_weights_blocks(w, 2, KVTIER_WEIGHTS_ALL, got, 16), -ENOENT);
	CHECK_EQ(kvtier_weights_blocks(w, 0, 2, got, 16), -ENOENT);
	CHECK_EQ(kvtier_weights_blocks(w, 1, 0, got, 16), -ENOENT);

	/* Every tensor's bytes are the file's (DRAM holds 3 blocks of 6) */
	for (i = 0; i < 6; i++) {
		CHECK_EQ(kvtier_weights_tensor(w, i, NULL, &t), 0);
		memset(buf, 0, DATA);
		CHECK_EQ(kvtier_weights_read(w, &t, buf), 0);
		CHECK(!memcmp(buf, bytes + (t.offset - d), t.bytes));
	}
	t.offset = (uint64_t)kvtier_pool_capacity(pool) * BS - 4;
	t.bytes = 8;
	CHECK_EQ(kvtier_weights_read(w, &t, buf), -EINVAL);

	if (has_feature(KVTIER_F_PREFETCH)) {
		struct kvtier_prefetch_args a = { .group = 77 };
		struct kvtier_completion c;

		CHECK_EQ(kvtier_weights_prefetch(w, 1, -1, &a), 0);
		CHECK_EQ(kvtier_wait_group(pool, 77, &c, 5000), 0);
		CHECK_EQ(c.status, 0);
		CHECK_EQ(kvtier_weights_prefetch(w, 5, -1, &a), -ENOENT);
		CHECK_EQ(kvtier_weights_prefetch(w, 1, -1, NULL), -EINVAL);
	}
	if (has_feature(KVTIER_F_PREFETCH))
		test_weights_experts(w, pool, d, path);

	/* Read-only */
	k.k[0] = 1;
	k.k[1] = 2;
	CHECK_EQ(kvtier_put1(pool, &k, buf, 0), -EROFS);

	/* The same file opens the same pool; a changed one is refused */
	CHECK_EQ(kvtier_weights_open(ctx, path, pool_name, BS, 0, &w2), 0);
	CHECK_EQ(kvtier_weights_count(w2, NULL, NULL), 6);
	kvtier_weights_close(w2);
	CHECK_EQ(kvtier_weights_open(ctx, path, pool_name, 2 * BS, 0, &w2),
		 -ESTALE);
	/* (the pool denies writers the file: only its times change) */
	ts[0].tv_sec = ts[1].tv_sec = 1000000;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	CHECK_EQ(utimensat(AT_FDCWD, path, ts, 0), 0);
	CHECK_EQ(kvtier_weights_open(ctx, path, pool_name, BS, 0, &w2), -ESTALE);

	kvtier_weights_close(w);
	kvtier_weights_close(NULL);
	CHECK_EQ(kvtier_pool_destroy(ctx, pool_name), 0);

	/* A file that lies about its offsets */
	unlink(path);
	free(bytes);
	hlen = wt_file(path, ST_A("U8", "[64]", "[0,64]"), 32, &bytes);
	CHECK(hlen > 0);
	CHECK_EQ(kvtier_weights_open(ctx, path, pool_name, BS, 0, &w), -EBADMSG);
	unlink(path);
	free(bytes);
	free(buf);
}

/* A context without KVTIER_F_WEIGHTS is refused before any I/O. */
static void test_weights_need_feature(void)
{
	struct kvtier_weights *w;
	struct kvtier_ctx *c;

	CHECK_EQ(kvtier_open(&c, KVTIER_F_POOLS), 0);
	CHECK_EQ(kvtier_weights_open(c, "/nonexistent", "kvt-test.now", 4096,
				     0, &w), -EOPNOTSUPP);
	kvtier_close(c);
}

/* ---- GGUF tensor tables and weight pools ------------------------------- */

/* ggml tensor types (enum ggml_type) and GGUF value types the tests use. */
enum { GG_F32 = 0, GG_F16 = 1, GG_Q8_0 = 8, GG_Q4_K = 12, GG_BF16 = 30 };
enum {
	GG_UINT8, GG_INT8, GG_UINT16, GG_INT16, GG_UINT32, GG_INT32,
	GG_FLOAT32, GG_BOOL, GG_STRING, GG_ARRAY, GG_UINT64, GG_INT64,
	GG_FLOAT64
};

/* A GGUF file being written: its first gg_len bytes. */
static uint8_t gg_buf[1 << 20];
static size_t gg_len;

static void gg_put(uint64_t v, unsigned int n)
{
	while (n--) {
		gg_buf[gg_len++] = v;
		v >>= 8;
	}
}

static void gg_mem(const void *p, size_t n)
{
	memcpy(gg_buf + gg_len, p, n);
	gg_len += n;
}

static void gg_str(const char *s)
{
	gg_put(strlen(s), 8);
	gg_mem(s, strlen(s));
}

static void gg_head(uint32_t version, uint64_t tensors, uint64_t kvs)
{
	gg_len = 0;
	gg_mem("GGUF", 4);
	gg_put(version, 4);
	gg_put(tensors, 8);
	gg_put(kvs, 8);
}

/* A key and a value's type. */
static void gg_key(const char *key, uint32_t type)
{
	gg_str(key);
	gg_put(type, 4);
}

/* A tensor info: @ne innermost first, as GGUF has it. */
static void gg_tensor(const char *name, uint32_t ndim, const uint64_t *ne,
		      uint32_t type, uint64_t off)
{
	uint32_t i;

	gg_str(name);
	gg_put(ndim, 4);
	for (i = 0; i < ndim; i++)
		gg_put(ne[i], 8);
	gg_put(type, 4);
	gg_put(off, 8);
}

/*
 * Pad to @align, then @data bytes, each a function of its place in the
 * data section (as wt_file()'s): the file's size.
 */
static uint64_t gg_data(uint64_t align, uint64_t data)
{
	uint64_t off = (gg_len + align - 1) / align * align, i;

	memset(gg_buf + gg_len, 0, off - gg_len);
	for (i = 0; i < data; i++)
		gg_buf[off + i] = (uint8_t)(i * 7 + i / 251);
	return off + data;
}

static const struct {
	const char *name;
	uint32_t type, ndim;
	uint64_t ne[4], off;
} gg_moe[] = {
	{ "output.weight", GG_BF16, 1, { 32 }, 11776 },
	{ "blk.1.ffn_gate_exps.weight", GG_Q4_K, 3, { 256, 3, 4 }, 6784 },
	{ "token_embd.weight", GG_Q8_0, 2, { 64, 10 }, 0 },
	{ "blk.0.attn_q.weight", GG_Q4_K, 2, { 256, 4 }, 1024 },
	{ "blk.0.attn_norm.weight", GG_F32, 1, { 256 }, 1600 },
	{ "blk.0.ffn_down.weight", GG_F16, 2, { 256, 8 }, 2624 },
	{ "blk.1.ffn_gate_inp.weight", GG_F32, 2, { 4, 4 }, 6720 },
	{ "blk.1.ffn_down_exps.weight", GG_Q8_0, 3, { 96, 5, 4 }, 8512 },
	{ "blk.1.ffn_gate_shexp.weight", GG_F16, 2, { 256, 2 }, 10560 },
	{ "blk.2.ffn_up_exps.bias", GG_F32, 2, { 8, 2 }, 11584 },
	{ "blk.2.x_exps", GG_F32, 1, { 4 }, 11648 },
	{ "empty", GG_F32, 2, { 0, 3 }, 11712 },
	{ "blk.3.experts.5.w", GG_F16, 1, { 32 }, 11712 },
	{ "blk.2.ffn_gate_expsum", GG_F32, 2, { 4, 2 }, 11840 },
};

#define GG_MOE_N	(sizeof(gg_moe) / sizeof(gg_moe[0]))
#define GG_MOE_DATA	11872

/* Its table: in data order, the stacked experts one entry each. */
static const struct {
	const char *name, *dtype;
	uint64_t off, bytes;
	int32_t layer, expert;
	uint32_t ndim;
	uint64_t shape[2];
} gg_moe_want[] = {
	{ "token_embd.weight", "Q8_0", 0, 680, -1, -1, 2, { 10, 64 } },
	{ "blk.0.attn_q.weight", "Q4_K", 1024, 576, 0, -1, 2, { 4, 256 } },
	{ "blk.0.attn_norm.weight", "F32", 1600, 1024, 0, -1, 1, { 256 } },
	{ "blk.0.ffn_down.weight", "F16", 2624, 4096, 0, -1, 2, { 8, 256 } },
	{ "blk.1.ffn_gate_inp.weight", "F32", 6720, 64, 1, -1, 2, { 4, 4 } },
	{ "blk.1.ffn_gate_exps.weight[0]", "Q4_K", 6784, 432, 1, 0, 2, { 3, 256 } },
	{ "blk.1.ffn_gate_exps.weight[1]", "Q4_K", 7216, 432, 1, 1, 2, { 3, 256 } },
	{ "blk.1.ffn_gate_exps.weight[2]", "Q4_K", 7648, 432, 1, 2, 2, { 3, 256 } },
	{ "blk.1.ffn_gate_exps.weight[3]", "Q4_K", 8080, 432, 1, 3, 2, { 3, 256 } },
	{ "blk.1.ffn_down_exps.weight[0]", "Q8_0", 8512, 510, 1, 0, 2, { 5, 96 } },
	{ "blk.1.ffn_down_exps.weight[1]", "Q8_0", 9022, 510, 1, 1, 2, { 5, 96 } },
	{ "blk.1.ffn_down_exps.weight[2]", "Q8_0", 9532, 510, 1, 2, 2, { 5, 96 } },
	{ "blk.1.ffn_down_exps.weight[3]", "Q8_0", 10042, 510, 1, 3, 2, { 5, 96 } },
	{ "blk.1.ffn_gate_shexp.weight", "F16", 10560, 1024, 1, -1, 2, { 2, 256 } },
	{ "blk.2.ffn_up_exps.bias[0]", "F32", 11584, 32, 2, 0, 1, { 8 } },
	{ "blk.2.ffn_up_exps.bias[1]", "F32", 11616, 32, 2, 1, 1, { 8 } },
	{ "blk.2.x_exps", "F32", 11648, 16, 2, -1, 1, { 4 } },
	{ "empty", "F32", 11712, 0, -1, -1, 2, { 3, 0 } },
	{ "blk.3.experts.5.w", "F16", 11712, 64, 3, 5, 1, { 32 } },
	{ "output.weight", "BF16", 11776, 64, -1, -1, 1, { 32 } },
	{ "blk.2.ffn_gate_expsum", "F32", 11840, 32, 2, -1, 2, { 2, 4 } },
};

#define GG_MOE_ENTRIES	(sizeof(gg_moe_want) / sizeof(gg_moe_want[0]))

/*
 * The MoE model's file in gg_buf, aligned to 64: metadata of every value
 * type (strings, empty ones too, arrays of arrays), and with @big a string
 * of @big bytes; the tensors of gg_moe. Its size.
 */
static uint64_t gg_moe_file(uint32_t version, size_t big)
{
	size_t i;

	gg_head(version, GG_MOE_N, 20 + !!big);
	gg_key("general.architecture", GG_STRING);
	gg_str("llama");
	gg_key("general.name", GG_STRING);
	gg_str("");
	gg_key("t.u8", GG_UINT8);
	gg_put(200, 1);
	gg_key("t.i8", GG_INT8);
	gg_put(-3, 1);
	gg_key("t.u16", GG_UINT16);
	gg_put(60000, 2);
	gg_key("t.i16", GG_INT16);
	gg_put(-300, 2);
	gg_key("t.u32", GG_UINT32);
	gg_put(4000000000U, 4);
	gg_key("t.i32", GG_INT32);
	gg_put(-70000, 4);
	gg_key("t.f32", GG_FLOAT32);
	gg_put(0x3fc00000, 4);
	gg_key("t.bool", GG_BOOL);
	gg_put(1, 1);
	gg_key("t.u64", GG_UINT64);
	gg_put(UINT64_MAX, 8);
	gg_key("t.i64", GG_INT64);
	gg_put(-1, 8);
	gg_key("t.f64", GG_FLOAT64);
	gg_put(0x3ff8000000000000ULL, 8);
	gg_key("general.alignment", GG_UINT32);
	gg_put(64, 4);
	gg_key("tokenizer.ggml.tokens", GG_ARRAY);
	gg_put(GG_STRING, 4);
	gg_put(3, 8);
	gg_str("<s>");
	gg_str("");
	gg_str("h\xc3\xa9llo");
	gg_key("tokenizer.ggml.scores", GG_ARRAY);
	gg_put(GG_FLOAT32, 4);
	gg_put(3, 8);
	for (i = 0; i < 3; i++)
		gg_put(0xbf800000, 4);
	gg_key("t.bools", GG_ARRAY);
	gg_put(GG_BOOL, 4);
	gg_put(3, 8);
	gg_mem("\0\1\1", 3);
	gg_key("t.empty", GG_ARRAY);
	gg_put(GG_UINT64, 4);
	gg_put(0, 8);
	/* [[1, 2], ["x"], [[]]] */
	gg_key("t.nested", GG_ARRAY);
	gg_put(GG_ARRAY, 4);
	gg_put(3, 8);
	gg_put(GG_UINT16, 4);
	gg_put(2, 8);
	gg_put(1, 2);
	gg_put(2, 2);
	gg_put(GG_STRING, 4);
	gg_put(1, 8);
	gg_str("x");
	gg_put(GG_ARRAY, 4);
	gg_put(1, 8);
	gg_put(GG_INT64, 4);
	gg_put(0, 8);
	gg_key("t.last", GG_INT8);
	gg_put(1, 1);
	if (big) {
		gg_key("t.big", GG_STRING);
		gg_put(big, 8);
		memset(gg_buf + gg_len, 'b', big);
		gg_len += big;
	}
	for (i = 0; i < GG_MOE_N; i++)
		gg_tensor(gg_moe[i].name, gg_moe[i].ndim, gg_moe[i].ne,
			  gg_moe[i].type, gg_moe[i].off);
	return gg_data(64, GG_MOE_DATA);
}

/* @t is entry @i of gg_moe_want, at @off + its offset. */
static int gg_moe_is(const struct kvtier_tensor *t, size_t i, uint64_t off)
{
	uint32_t d;

	if (strcmp(t->name, gg_moe_want[i].name) ||
	    strcmp(t->dtype, gg_moe_want[i].dtype) ||
	    t->offset != off + gg_moe_want[i].off ||
	    t->bytes != gg_moe_want[i].bytes ||
	    t->layer != gg_moe_want[i].layer ||
	    t->expert != gg_moe_want[i].expert ||
	    t->ndim != gg_moe_want[i].ndim) {
		printf("#   got %s %s @%llu +%llu layer %d expert %d ndim %u, expected %s\n",
		       t->name, t->dtype, (unsigned long long)t->offset,
		       (unsigned long long)t->bytes, t->layer, t->expert,
		       t->ndim, gg_moe_want[i].name);
		return 0;
	}
	for (d = 0; d < KVTIER_TENSOR_DIMS_MAX; d++) {
		if (t->shape[d] != (d < 2 ? gg_moe_want[i].shape[d] : 0)) {
			printf("#   %s: shape[%u] %llu\n", t->name, d,
			       (unsigned long long)t->shape[d]);
			return 0;
		}
	}
	return 1;
}

/* ggml's types: id, name, elements a block, bytes a block. */
static const struct {
	uint32_t id;
	const char *name;
	uint32_t block, size;
} gg_types[] = {
	{ 0, "F32", 1, 4 }, { 1, "F16", 1, 2 }, { 2, "Q4_0", 32, 18 },
	{ 3, "Q4_1", 32, 20 }, { 6, "Q5_0", 32, 22 }, { 7, "Q5_1", 32, 24 },
	{ 8, "Q8_0", 32, 34 }, { 9, "Q8_1", 32, 36 }, { 10, "Q2_K", 256, 84 },
	{ 11, "Q3_K", 256, 110 }, { 12, "Q4_K", 256, 144 },
	{ 13, "Q5_K", 256, 176 }, { 14, "Q6_K", 256, 210 },
	{ 15, "Q8_K", 256, 292 }, { 16, "IQ2_XXS", 256, 66 },
	{ 17, "IQ2_XS", 256, 74 }, { 18, "IQ3_XXS", 256, 98 },
	{ 19, "IQ1_S", 256, 50 }, { 20, "IQ4_NL", 32, 18 },
	{ 21, "IQ3_S", 256, 110 }, { 22, "IQ2_S", 256, 82 },
	{ 23, "IQ4_XS", 256, 136 }, { 24, "I8", 1, 1 }, { 25, "I16", 1, 2 },
	{ 26, "I32", 1, 4 }, { 27, "I64", 1, 8 }, { 28, "F64", 1, 8 },
	{ 29, "IQ1_M", 256, 56 }, { 30, "BF16", 1, 2 },
	{ 34, "TQ1_0", 256, 54 }, { 35, "TQ2_0", 256, 66 },
	{ 39, "MXFP4", 32, 17 },
};

/* A file of one tensor "t", @ne0 x 3 of @type, at 0: its size. */
static uint64_t gg_one(uint32_t type, uint64_t ne0, uint64_t data)
{
	uint64_t ne[2] = { ne0, 3 };

	gg_head(3, 1, 0);
	gg_tensor("t", 2, ne, type, 0);
	return gg_data(32, data);
}

/* Every ggml type by id, a known one's size, an unknown one refused. */
static void test_gguf_types(void)
{
	struct kvtier_st_table tab;
	uint64_t size;
	uint32_t id;
	size_t i = 0;

	for (id = 0; id < 64; id++) {
		if (i < sizeof(gg_types) / sizeof(gg_types[0]) &&
		    gg_types[i].id == id) {
			size = gg_one(id, 2 * gg_types[i].block,
				      6 * gg_types[i].size);
			CHECK_EQ(kvtier_gguf_parse(gg_buf, size, size, &tab), 0);
			CHECK(!strcmp(tab.t[0].dtype, gg_types[i].name));
			CHECK_EQ(tab.t[0].bytes, 6 * gg_types[i].size);
			CHECK_EQ(tab.t[0].shape[1], 2 * gg_types[i].block);
			kvtier_st_free(&tab);
			/* one byte short of the data it needs */
			CHECK_EQ(kvtier_gguf_parse(gg_buf, size, size - 1, &tab),
				 -EBADMSG);
			if (gg_types[i].block > 1) {
				size = gg_one(id, 2 * gg_types[i].block + 1,
					      6 * gg_types[i].size + 1024);
				CHECK_EQ(kvtier_gguf_parse(gg_buf, size, size, &tab),
					 -EBADMSG);
			}
			i++;
			continue;
		}
		size = gg_one(id, 256, 1 << 16);
		if (kvtier_gguf_parse(gg_buf, size, size, &tab) != -EBADMSG) {
			printf("#   type %u is not refused\n", id);
			case_failed = 1;
		}
	}
	CHECK_EQ(i, 32);
	size = gg_one(UINT32_MAX, 256, 1 << 16);
	CHECK_EQ(kvtier_gguf_parse(gg_buf, size, size, &tab), -EBADMSG);
}

static void test_gguf_parse(void)
{
	char name[KVTIER_TENSOR_NAME_MAX + 8];
	struct kvtier_st_table tab, again;
	uint64_t size, hlen, digest;
	uint64_t ne[3] = { 4, 2, 3 };
	size_t i;

	CHECK(kvtier_gguf_magic("GGUF"));
	CHECK(!kvtier_gguf_magic("GGUG"));
	CHECK(!kvtier_gguf_magic("\0\0\0\0"));

	size = gg_moe_file(3, 0);
	hlen = gg_len;
	CHECK_EQ(kvtier_gguf_parse(gg_buf, hlen, size, &tab), 0);
	CHECK_EQ(tab.header_len, hlen);
	CHECK_EQ(tab.data_off, (hlen + 63) / 64 * 64);
	CHECK_EQ(tab.data_off + GG_MOE_DATA, size);
	CHECK(tab.digest != 0);
	CHECK_EQ(tab.count, GG_MOE_ENTRIES);
	for (i = 0; i < GG_MOE_ENTRIES; i++)
		CHECK(gg_moe_is(&tab.t[i], i, 0));

	/* The digest: the same header and size, the same; else not */
	digest = tab.digest;
	kvtier_st_free(&tab);
	CHECK(tab.t == NULL && tab.count == 0);
	CHECK_EQ(kvtier_gguf_parse(gg_buf, size, size, &again), 0);
	CHECK(again.digest == digest);
	kvtier_st_free(&again);
	CHECK_EQ(kvtier_gguf_parse(gg_buf, size, size + 1, &again), 0);
	CHECK(again.digest != digest);
	kvtier_st_free(&again);
	((uint8_t *)memmem(gg_buf, hlen, "llama", 5))[4] = 'b';
	CHECK_EQ(kvtier_gguf_parse(gg_buf, size, size, &again), 0);
	CHECK(again.digest != digest);
	kvtier_st_free(&again);

	/* Version 2 reads the same; a prefix short of the header asks for more */
	size = gg_moe_file(2, 0);
	CHECK_EQ(kvtier_gguf_parse(gg_buf, size, size, &again), 0);
	CHECK_EQ(again.count, GG_MOE_ENTRIES);
	kvtier_st_free(&again);
	CHECK_EQ(kvtier_gguf_parse(gg_buf, hlen - 1, size, &again), -ENODATA);
	CHECK(again.t == NULL && again.count == 0);

	/* No alignment key: 32. No tensors: a table (weights_open refuses it) */
	gg_head(3, 1, 0);
	gg_tensor("blk.0.ffn_up_exps", 3, ne, GG_F32, 32);
	size = gg_data(32, 32 + 96);
	CHECK_EQ(kvtier_gguf_parse(gg_buf, size, size, &again), 0);
	CHECK_EQ(again.header_len, 89);
	CHECK_EQ(again.data_off, 96);
	CHECK_EQ(again.count, 3);
	CHECK(!strcmp(again.t[2].name, "blk.0.ffn_up_exps[2]"));
	CHECK_EQ(again.t[2].offset, 32 + 64);
	CHECK_EQ(again.t[2].bytes, 32);
	CHECK_EQ(again.t[2].ndim, 2);
	CHECK_EQ(again.t[2].shape[0], 2);
	CHECK_EQ(again.t[2].shape[1], 4);
	kvtier_st_free(&again);
	/* An empty stacked tensor is one entry, of no expert */
	ne[0] = 0;
	gg_head(3, 1, 0);
	gg_tensor("blk.0.ffn_up_exps", 3, ne, GG_F32, 0);
	size = gg_data(32, 0);
	CHECK_EQ(kvtier_gguf_parse(gg_buf, size, size, &again), 0);
	CHECK_EQ(again.count, 1);
	CHECK_EQ(again.t[0].expert, -1);
	CHECK_EQ(again.t[0].ndim, 3);
	kvtier_st_free(&again);
	ne[0] = 4;
	gg_head(3, 0, 0);
	size = gg_data(32, 0);
	CHECK_EQ(kvtier_gguf_parse(gg_buf, size, size, &again), 0);
	CHECK_EQ(again.count, 0);
	kvtier_st_free(&again);

	/* A name of KVTIER_TENSOR_NAME_MAX - 1 bytes fits, and a slice's */
	memset(name, 'n', KVTIER_TENSOR_NAME_MAX - 1);
	name[KVTIER_TENSOR_NAME_MAX - 1] = '\0';
	gg_head(3, 2, 0);
	gg_tensor(name, 1, ne, GG_F32, 0);
	strcpy(name + KVTIER_TENSOR_NAME_MAX - 4 - 5, "_exps");
	gg_tensor(name, 2, ne, GG_F32, 32);
	size = gg_data(32, 64);
	CHECK_EQ(kvtier_gguf_parse(gg_buf, size, size, &again), 0);
	CHECK_EQ(again.count, 3);
	CHECK_EQ(strlen(again.t[0].name), KVTIER_TENSOR_NAME_MAX - 1);
	CHECK_EQ(strlen(again.t[2].name), KVTIER_TENSOR_NAME_MAX - 1);
	CHECK_EQ(again.t[2].expert, 1);
	kvtier_st_free(&again);
}

/* One lie each in gg_lie_file(); GL_NONE is none. */
enum {
	GL_NONE, GL_MAGIC, GL_V1, GL_V4, GL_BE, GL_NT_HUGE, GL_NKV_HUGE,
	GL_NT_MORE, GL_KEY_LEN, GL_KEY_EMPTY, GL_VTYPE, GL_BOOL, GL_ATYPE,
	GL_ACOUNT, GL_U8_COUNT, GL_STR_LEN, GL_NEST, GL_ALIGN0, GL_ALIGN3, GL_ALIGN96,
	GL_ALIGN_U64, GL_ALIGN_TWICE, GL_NAME_EMPTY, GL_NAME_NUL, GL_NAME_LONG,
	GL_SLICE_LONG, GL_NDIM0, GL_NDIM5, GL_BLOCK, GL_TYPE4, GL_TYPE5,
	GL_TYPE31, GL_TYPE33, GL_TYPE36, GL_TYPE_MAX, GL_UNALIGNED, GL_OVERLAP,
	GL_PAST_EOF, GL_OFF_WRAP, GL_DUP, GL_DUP_SLICE, GL_NE_HUGE, GL_PRODUCT,
	GL_BYTES, GL_N
};

static const char * const gl_why[GL_N] = {
	"none", "bad magic", "version 1", "version 4", "big-endian v3",
	"2^63 tensors", "2^63 pairs", "a tensor more than listed",
	"key past EOF", "empty key", "value type 13", "bool 2",
	"array of type 13", "2^63 strings", "2^40 bytes", "string past EOF",
	"arrays one too deep", "alignment 0", "alignment 3", "alignment 96",
	"alignment a UINT64", "alignment twice", "empty name", "NUL in a name",
	"name of 256", "slice name of 256", "0 dims", "5 dims",
	"ne[0] not whole blocks", "type 4", "type 5", "type 31", "type 33",
	"type 36", "type 2^32-1", "offset not aligned", "overlap",
	"past EOF", "offset wraps", "duplicate name", "name of a slice",
	"ne 2^63", "ne product overflows", "bytes overflow",
};

/*
 * A small model with one lie @lie: "a" F32 [8] at 0, a stacked Q8_0
 * [32, 2, 4] at 96 (four experts), "b" F16 [16] at 384, aligned to 32
 * (and to 3 and to 96, which are no alignment),
 * after six pairs (a string, a bool, strings, bytes, arrays nested
 * KVTIER_GGUF_DEPTH_MAX deep, the alignment). The whole file in gg_buf:
 * its size.
 */
static uint64_t gg_lie_file(int lie)
{
	uint64_t ne_a[2] = { 8 }, ne_x[3] = { 32, 2, 4 };
	uint64_t ne_b[5] = { 16, 1, 1, 1, 1 }, off_b;
	char name_a[KVTIER_TENSOR_NAME_MAX + 1] = "a";
	char name_x[KVTIER_TENSOR_NAME_MAX + 1] = "blk.0.ffn_up_exps.weight";
	const char *name_b = "b";
	uint32_t nd_a = 1, nd_b = 1, type_b = GG_F16, i;

	gg_head(lie == GL_V1 ? 1 : lie == GL_V4 ? 4 :
		lie == GL_BE ? 0x03000000 : 3,
		lie == GL_NT_HUGE ? 1ULL << 63 : lie == GL_NT_MORE ? 4 : 3,
		lie == GL_NKV_HUGE ? 1ULL << 63 : lie == GL_ALIGN_TWICE ? 7 : 6);
	if (lie == GL_MAGIC)
		gg_buf[3] = 'G';
	if (lie == GL_KEY_LEN)
		gg_put(1ULL << 40, 8);
	else
		gg_str(lie == GL_KEY_EMPTY ? "" : "general.architecture");
	gg_put(lie == GL_VTYPE ? 13 : GG_STRING, 4);
	gg_str("llama");
	gg_key("t.bool", GG_BOOL);
	gg_put(lie == GL_BOOL ? 2 : 1, 1);
	gg_key("t.strs", GG_ARRAY);
	gg_put(lie == GL_ATYPE ? 13 : GG_STRING, 4);
	gg_put(lie == GL_ACOUNT ? 1ULL << 63 : 3, 8);
	gg_str("x");
	if (lie == GL_STR_LEN)
		gg_put(1ULL << 40, 8);
	else
		gg_str("");
	gg_str("yz");
	gg_key("t.u8s", GG_ARRAY);
	gg_put(GG_UINT8, 4);
	gg_put(lie == GL_U8_COUNT ? 1ULL << 40 : 3, 8);
	gg_mem("abc", 3);
	gg_key("t.nest", GG_ARRAY);
	for (i = 1; i < KVTIER_GGUF_DEPTH_MAX + (lie == GL_NEST); i++) {
		gg_put(GG_ARRAY, 4);
		gg_put(1, 8);
	}
	gg_put(GG_UINT8, 4);
	gg_put(0, 8);
	gg_key("general.alignment", lie == GL_ALIGN_U64 ? GG_UINT64 : GG_UINT32);
	gg_put(lie == GL_ALIGN0 ? 0 : lie == GL_ALIGN3 ? 3 :
	       lie == GL_ALIGN96 ? 96 : 32,
	       lie == GL_ALIGN_U64 ? 8 : 4);
	if (lie == GL_ALIGN_TWICE) {
		gg_key("general.alignment", GG_UINT32);
		gg_put(32, 4);
	}

	if (lie == GL_NAME_EMPTY)
		name_a[0] = '\0';
	if (lie == GL_NAME_LONG) {
		memset(name_a, 'n', KVTIER_TENSOR_NAME_MAX);
		name_a[KVTIER_TENSOR_NAME_MAX] = '\0';
	}
	if (lie == GL_NE_HUGE)
		ne_a[0] = 1ULL << 63;
	if (lie == GL_BYTES)
		ne_a[0] = 1ULL << 62;
	if (lie == GL_PRODUCT) {
		nd_a = 2;
		ne_a[0] = 1ULL << 32;
		ne_a[1] = 1ULL << 32;
	}
	if (lie == GL_NAME_NUL) {
		gg_put(2, 8);
		gg_mem("a", 2);
		gg_put(nd_a, 4);
		gg_put(ne_a[0], 8);
		gg_put(GG_F32, 4);
		gg_put(0, 8);
	} else {
		gg_tensor(name_a, nd_a, ne_a, GG_F32, 0);
	}
	if (lie == GL_SLICE_LONG) {
		memset(name_x, 'x', KVTIER_TENSOR_NAME_MAX - 3);
		strcpy(name_x + KVTIER_TENSOR_NAME_MAX - 3 - 5, "_exps");
	}
	if (lie == GL_BLOCK)
		ne_x[0] = 48;
	gg_tensor(name_x, 3, ne_x, GG_Q8_0, 96);

	name_b = lie == GL_DUP ? "a" :
		 lie == GL_DUP_SLICE ? "blk.0.ffn_up_exps.weight[1]" : "b";
	nd_b = lie == GL_NDIM0 ? 0 : lie == GL_NDIM5 ? 5 : 1;
	type_b = lie == GL_TYPE4 ? 4 : lie == GL_TYPE5 ? 5 :
		 lie == GL_TYPE31 ? 31 : lie == GL_TYPE33 ? 33 :
		 lie == GL_TYPE36 ? 36 : lie == GL_TYPE_MAX ? UINT32_MAX : GG_F16;
	off_b = lie == GL_UNALIGNED ? 372 : lie == GL_OVERLAP ? 352 :
		lie == GL_PAST_EOF ? 416 : lie == GL_OFF_WRAP ? -32ULL : 384;
	gg_tensor(name_b, nd_b, ne_b, type_b, off_b);
	return gg_data(32, 416);
}

/* Every lie, one a case: -EBADMSG and an empty table; none: a table. */
static void test_gguf_reject(void)
{
	static uint8_t good[4096];
	struct kvtier_st_table tab;
	uint64_t size, hlen, p;
	int lie, ret;

	size = gg_lie_file(GL_NONE);
	hlen = gg_len;
	CHECK(size <= sizeof(good));
	memcpy(good, gg_buf, size);
	CHECK_EQ(kvtier_gguf_parse(gg_buf, size, size, &tab), 0);
	CHECK_EQ(tab.count, 6);
	CHECK_EQ(tab.t[1].offset, 96);
	CHECK_EQ(tab.t[4].offset, 96 + 3 * 68);
	CHECK_EQ(tab.t[5].offset, 384);
	kvtier_st_free(&tab);

	for (lie = 1; lie < GL_N; lie++) {
		size = gg_lie_file(lie);
		ret = kvtier_gguf_parse(gg_buf, size, size, &tab);
		if (ret != -EBADMSG || tab.t || tab.count) {
			printf("#   %s: %d, expected -EBADMSG\n", gl_why[lie], ret);
			case_failed = 1;
		}
		/* Seen in the header alone, not taken for a short read */
		ret = kvtier_gguf_parse(gg_buf, gg_len, size, &tab);
		if (ret != (lie == GL_NT_MORE ? -ENODATA : -EBADMSG)) {
			printf("#   %s, the header alone: %d\n", gl_why[lie], ret);
			case_failed = 1;
		}
	}
	CHECK(!case_failed);
	/* More than KVTIER_GGUF_ENTRIES_MAX slices (I8, a byte an expert) */
	{
		uint64_t ne[3] = { 1, 1, KVTIER_GGUF_ENTRIES_MAX + 1ULL };

		gg_head(3, 1, 0);
		gg_tensor("blk.0.x_exps", 3, ne, 24, 0);
		size = gg_data(32, 0) + ne[2] + 4096;
		CHECK_EQ(kvtier_gguf_parse(gg_buf, gg_len, size, &tab), -EBADMSG);
	}
	/* A count the file has no room for is a lie as soon as it is read */
	size = gg_lie_file(GL_NT_HUGE);
	CHECK_EQ(kvtier_gguf_parse(gg_buf, 24, size, &tab), -EBADMSG);
	size = gg_lie_file(GL_NKV_HUGE);
	CHECK_EQ(kvtier_gguf_parse(gg_buf, 24, size, &tab), -EBADMSG);

	/*
	 * Cut anywhere in the header: a prefix of a longer file asks for more,
	 * a file that ends there is a lie; so is one that ends in the data.
	 */
	size = gg_lie_file(GL_NONE);
	CHECK(!memcmp(gg_buf, good, size));
	for (p = 0; p < hlen; p++) {
		ret = kvtier_gguf_parse(gg_buf, p, size, &tab);
		if (ret != -ENODATA || tab.t) {
			printf("#   prefix %llu of %llu: %d\n",
			       (unsigned long long)p, (unsigned long long)size, ret);
			case_failed = 1;
		}
		ret = kvtier_gguf_parse(gg_buf, p, p, &tab);
		if (ret != -EBADMSG || tab.t) {
			printf("#   file of %llu: %d\n", (unsigned long long)p, ret);
			case_failed = 1;
		}
	}
	for (p = hlen; p < size; p++)
		if (kvtier_gguf_parse(gg_buf, p, p, &tab) != -EBADMSG) {
			printf("#   file of %llu parses\n", (unsigned long long)p);
			case_failed = 1;
		}
	CHECK(!case_failed);

	/* The same of the large model (every value type) */
	size = gg_moe_file(3, 0);
	hlen = gg_len;
	for (p = 0; p < hlen; p++)
		if (kvtier_gguf_parse(gg_buf, p, size, &tab) != -ENODATA ||
		    kvtier_gguf_parse(gg_buf, p, p, &tab) != -EBADMSG) {
			printf("#   moe cut at %llu parses\n", (unsigned long long)p);
			case_failed = 1;
		}
	CHECK_EQ(kvtier_gguf_parse(gg_buf, hlen, size - 1, &tab), -EBADMSG);
	CHECK_EQ(kvtier_gguf_parse(gg_buf, hlen, size, &tab), 0);
	kvtier_st_free(&tab);
}

/* gg_buf's first @size bytes as a file in /tmp (@path): 0, or -1. */
static int gg_write(char *path, uint64_t size)
{
	int fd;

	strcpy(path, "/tmp/kvt-test-gguf.XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	if (write(fd, gg_buf, size) != (ssize_t)size) {
		close(fd);
		unlink(path);
		return -1;
	}
	close(fd);
	return 0;
}

/* kvtier_weights_table() of the file at @path. */
static int gg_table(const char *path, uint64_t *size,
		    struct kvtier_st_table *tab)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = kvtier_weights_table(fd, size, tab);
	close(fd);
	return ret;
}

/*
 * kvtier_weights_table(): a GGUF file read whole however long its header
 * (the first read 256 KiB, then twice as much), and a file without the
 * magic read as safetensors.
 */
static void test_weights_table(void)
{
	struct kvtier_st_table tab, want;
	uint64_t size, got_size;
	char path[64], *bytes;
	size_t big, i;
	int hlen, fd;

	for (big = 0; big <= 700 << 10; big += 350 << 10) {
		size = gg_moe_file(3, big);
		CHECK_EQ(kvtier_gguf_parse(gg_buf, size, size, &want), 0);
		CHECK_EQ(gg_write(path, size), 0);
		CHECK_EQ(gg_table(path, &got_size, &tab), 0);
		CHECK_EQ(got_size, size);
		CHECK_EQ(tab.data_off, want.data_off);
		CHECK(tab.digest != want.digest);
		CHECK_EQ(tab.count, GG_MOE_ENTRIES);
		for (i = 0; i < GG_MOE_ENTRIES; i++)
			CHECK(gg_moe_is(&tab.t[i], i, 0));
		kvtier_st_free(&tab);
		kvtier_st_free(&want);
		/* Cut in the header: a lie, not a short read */
		CHECK_EQ(truncate(path, gg_len - 1), 0);
		CHECK_EQ(gg_table(path, &got_size, &tab), -EBADMSG);
		unlink(path);
	}

	/* Not "GGUF": safetensors, this one a lie */
	size = gg_moe_file(3, 0);
	gg_buf[0] = 'g';
	CHECK_EQ(gg_write(path, size), 0);
	CHECK_EQ(gg_table(path, &got_size, &tab), -EBADMSG);
	unlink(path);
	hlen = wt_file(path, wt_json, 23106, &bytes);
	CHECK(hlen > 0);
	free(bytes);
	CHECK_EQ(gg_table(path, &got_size, &tab), 0);
	CHECK_EQ(tab.count, 6);
	kvtier_st_free(&tab);
	unlink(path);

	fd = open("/tmp", O_RDONLY | O_DIRECTORY);
	CHECK(fd >= 0);
	CHECK_EQ(kvtier_weights_table(fd, &got_size, &tab), -EINVAL);
	close(fd);
}

/*
 * A GGUF MoE model as a weight pool: every entry, each stacked expert's
 * slice too, reads its own bytes; blocks and prefetches by expert.
 */
static void test_weights_gguf(void)
{
	enum { BS = 4096 };
	struct kvtier_weights *w, *w2;
	struct kvtier_pool *pool;
	struct kvtier_tensor t;
	uint64_t size, d, want[16], got[16];
	uint32_t i, n, layers, experts;
	int32_t e;
	char path[64];
	uint8_t *buf;

	size = gg_moe_file(3, 0);
	d = (gg_len + 63) / 64 * 64;
	CHECK(d < BS);			/* block 0 at file offset 0 */
	CHECK_EQ(gg_write(path, size), 0);
	buf = malloc(GG_MOE_DATA + 1);
	CHECK(buf);

	CHECK_EQ(kvtier_weights_open(ctx, path, pname("wg"), BS, 2, &w), 0);
	pool = kvtier_weights_pool(w);
	CHECK_EQ(kvtier_pool_capacity(pool), (size + BS - 1) / BS);
	CHECK_EQ(kvtier_weights_count(w, &layers, &experts), GG_MOE_ENTRIES);
	CHECK_EQ(layers, 4);
	CHECK_EQ(experts, 6);

	/* Each entry's bytes, exactly: none before, none after */
	for (i = 0; i < GG_MOE_ENTRIES; i++) {
		CHECK_EQ(kvtier_weights_tensor(w, i, NULL, &t), 0);
		CHECK(gg_moe_is(&t, i, d));
		memset(buf, 0xa5, GG_MOE_DATA + 1);
		CHECK_EQ(kvtier_weights_read(w, &t, buf), 0);
		CHECK(!memcmp(buf, gg_buf + t.offset, t.bytes));
		CHECK_EQ(buf[t.bytes], 0xa5);
	}
	CHECK_EQ(kvtier_weights_tensor(w, 0, "blk.1.ffn_gate_exps.weight[2]",
				       &t), 0);
	CHECK_EQ(t.offset, d + 7648);
	CHECK_EQ(t.expert, 2);
	CHECK_EQ(kvtier_weights_tensor(w, 0, "blk.1.ffn_gate_exps.weight", &t),
		 -ENOENT);

	/* An expert's blocks: its slices of the layer's stacked tensors */
	for (e = 0; e < 4; e++) {
		n = wt_range(want, 0, d + 6784 + 432 * e, d + 7216 + 432 * e, BS);
		n = wt_range(want, n, d + 8512 + 510 * e, d + 9022 + 510 * e, BS);
		CHECK_EQ(kvtier_weights_blocks(w, 1, e, got, 16), n);
		CHECK(!memcmp(got, want, n * sizeof(*got)));
	}
	n = wt_range(want, 0, d + 6720, d + 6784, BS);
	n = wt_range(want, n, d + 10560, d + 11584, BS);
	CHECK_EQ(kvtier_weights_blocks(w, 1, -1, got, 16), n);
	CHECK(!memcmp(got, want, n * sizeof(*got)));
	n = wt_range(want, 0, d + 11616, d + 11648, BS);
	CHECK_EQ(kvtier_weights_blocks(w, 2, 1, got, 16), n);
	CHECK(!memcmp(got, want, n * sizeof(*got)));
	CHECK_EQ(kvtier_weights_blocks(w, 1, 4, got, 16), -ENOENT);
	n = wt_range(want, 0, d + 11712, d + 11776, BS);
	CHECK_EQ(kvtier_weights_blocks(w, 3, 5, got, 16), n);
	CHECK(!memcmp(got, want, n * sizeof(*got)));

	if (has_feature(KVTIER_F_PREFETCH)) {
		struct kvtier_prefetch_args a = { .group = 91 };
		int32_t ex[2] = { 3, 0 };
		struct kvtier_completion c;

		n = wt_range(want, 0, d + 6784, d + 7216, BS);
		n = wt_range(want, n, d + 8080, d + 8512, BS);
		n = wt_range(want, n, d + 8512, d + 9022, BS);
		n = wt_range(want, n, d + 10042, d + 10552, BS);
		CHECK_EQ(kvtier_weights_prefetch_experts(w, 1, ex, NULL, 2, &a), 0);
		CHECK_EQ(kvtier_wait_group(pool, 91, &c, 5000), 0);
		CHECK_EQ(c.status, 0);
		CHECK_EQ(c.count, n);
		ex[0] = 4;
		CHECK_EQ(kvtier_weights_prefetch_experts(w, 1, ex, NULL, 2, &a),
			 -ENOENT);
	}

	/* The same file opens the same pool */
	CHECK_EQ(kvtier_weights_open(ctx, path, pool_name, BS, 0, &w2), 0);
	CHECK_EQ(kvtier_weights_count(w2, NULL, NULL), GG_MOE_ENTRIES);
	kvtier_weights_close(w2);
	kvtier_weights_close(w);
	CHECK_EQ(kvtier_pool_destroy(ctx, pool_name), 0);
	unlink(path);

	/* A GGUF file whose table lies */
	size = gg_lie_file(GL_OVERLAP);
	CHECK_EQ(gg_write(path, size), 0);
	CHECK_EQ(kvtier_weights_open(ctx, path, pool_name, BS, 0, &w), -EBADMSG);
	unlink(path);
	free(buf);
}

int main(void)
{
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* The plan comes last: counted, and missing when a case crashes. */
	printf("TAP version 13\n");
	ret = kvtier_open(&ctx, KVTIER_FEATURES_ALL);
	if (ret) {
		printf("# kvtier_open: %s: device tests skipped\n", strerror(-ret));
		ctx = NULL;
	}
	run("key_vectors", test_key_vectors, NO_DEV);
	run("key_prefix", test_key_prefix, NO_DEV);
	run("names", test_names, NO_DEV);
	run("params_init", test_params_init, NO_DEV);
	run("meta_set", test_meta_set, NO_DEV);
	run("event_names", test_event_names, NO_DEV);
	run("safetensors_parse", test_safetensors_parse, NO_DEV);
	run("safetensors_reject", test_safetensors_reject, NO_DEV);
	run("gguf_types", test_gguf_types, NO_DEV);
	run("gguf_parse", test_gguf_parse, NO_DEV);
	run("gguf_reject", test_gguf_reject, NO_DEV);
	run("weights_table", test_weights_table, NO_DEV);
	run("open", test_open, NEEDS_DEV);
	run("pool_lifecycle", test_pool_lifecycle, NEEDS_DEV);
	run("put_get_lookup", test_put_get_lookup, NEEDS_DEV);
	run("big_batch", test_big_batch, NEEDS_DEV);
	run("segs", test_segs, NEEDS_DEV);
	run("pin", test_pin, NEEDS_DEV);
	run("map", test_map, NEEDS_DEV);
	run("reserve", test_reserve, NEEDS_DEV);
	run("meta", test_meta, NEEDS_META);
	run("meta_needs_feature", test_meta_needs_feature, NEEDS_META);
	run("staging", test_staging, NEEDS_DEV);
	run("rdonly", test_rdonly, NEEDS_DEV);
	run("ring_round_trip", test_ring_round_trip, NEEDS_DEV);
	run("hbm_mover_memcpy", test_hbm_mover_memcpy, NEEDS_DEV);
	run("events_census", test_events_census, NEEDS_EVENTS);
	run("events_overflow", test_events_overflow, NEEDS_EVENTS);
	run("events_rdonly_meta", test_events_rdonly_meta, NEEDS_EVENTS);
	run("events_need_feature", test_events_need_feature, NEEDS_EVENTS);
	run("weights", test_weights, NEEDS_WEIGHTS);
	run("weights_need_feature", test_weights_need_feature, NEEDS_DEV);
	run("weights_gguf", test_weights_gguf, NEEDS_WEIGHTS);
	nvme_pick();
	if (nvme_dev)
		printf("# NVMe tests on %s (formatted)\n", nvme_dev);
	run("nvme_absent", test_nvme_absent, NEEDS_DEV);
	run("nvme_attach", test_nvme_attach, NEEDS_NVME);
	run("nvme_demote_promote", test_nvme_demote_promote, NEEDS_NVME);
	run("nvme_sync", test_nvme_sync, NEEDS_NVME);
	run("nvme_reattach", test_nvme_reattach, NEEDS_NVME);
	run("nvme_replace_detached", test_nvme_replace_detached, NEEDS_NVME);
	run("nvme_compressed", test_nvme_compressed, NEEDS_NVME);
	run("prefetch_wait_group", test_prefetch_wait_group, NEEDS_NVME);
	run("prefetch_completions_kept", test_prefetch_completions_kept,
	    NEEDS_NVME);
	run("request_ready", test_request_ready, NEEDS_NVME);
	/* Leave the tier as we found it: detached, our pools gone. */
	if (nvme_dev) {
		struct kvtier_nvme_stat ns;

		if (nv_pool[0])
			kvtier_pool_destroy(ctx, nv_pool);

		if (!kvtier_nvme_stat(ctx, &ns) && ns.attached)
			kvtier_nvme_detach(ctx);
	}
	kvtier_close(ctx);
	printf("1..%d\n", ntest);
	printf("# kvt-test: %d passed, %d failed, %d skipped\n", passed, failed, skipped);
	if (failed)
		return 1;
	return skipped ? KSFT_SKIP : 0;
}
