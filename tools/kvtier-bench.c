// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier-bench: the figures of `make bench`, one `name: value` line each.
 * Ratios compare kvtier with the plain-memory or raw-device operation it
 * replaces, both measured in this run on this machine; raw figures follow
 * as extra lines. Always exits 0 once the module answers: a figure that
 * misses its goal is a result, not a failure.
 *
 *   dram_get_vs_memcpy	GET throughput / memcpy throughput, 256 KiB blocks,
 *			batches of 64, the same bytes (goal >= 0.8)
 *   mmap_read_vs_anon	summing 64-bit words of resident blocks through the
 *			pool mmap / of an anonymous buffer (goal >= 0.9)
 *   lookup_1e6_vs_1e3	LOOKUP ns per key with 1e6 resident 4 KiB blocks /
 *			with 1e3 (goal <= 1.5); needs ~3.9 GiB of DRAM
 *			budget (dram_mb=4600, a VM with --mem 6144). The
 *			key hash alone, natively on the host, is
 *			tools/index-bench's lookup_native_1e6_vs_1e3 (make
 *			bench runs it after the VM)
 *   dram_meta_bytes_per_block  STAT.meta_bytes / resident blocks at the
 *			large point (goal <= 64)
 *   put_sg_vs_memcpy	a block held as 64 layer buffers (256 KiB blocks, 4
 *			KiB a layer): the connector's staging memcpy that
 *			gathers it into one buffer / a PUT naming the 64
 *			segments (KVTIER_F_SG), batches of 64 (goal >= 0.8)
 *   get_sg_vs_memcpy	the same for GET: a memcpy scattering one buffer
 *			into the layers / a GET naming them (goal >= 0.8)
 *
 * The NVMe tier's figures, on one emulated drive (KVTIER_BENCH_NVME, else
 * /dev/nvme0n1 when it is a tools/vm/kvtier-vm drive) that the bench
 * overwrites: fio first, on the raw device, then the bench formats and
 * attaches it, and detaches it at the end.
 *
 *   nvme_write_vs_fio	demotion write throughput (NVME_STAT.bytes_written
 *			growth while 512 MiB of 256 KiB blocks are PUT into
 *			a pool with 64 blocks of DRAM, and SYNCed) / fio
 *			sequential 4 MiB writes (tools/fio/nvme-seq-write.fio)
 *   nvme_read_vs_fio	promotion throughput (GET batches of 32 blocks that
 *			are only on NVMe, in random order) / fio random 256
 *			KiB reads at depth 32 (tools/fio/nvme-rand-read.fio)
 *			Each side is the best of 3: three fio runs; the
 *			512 MiB written in three parts, each PUT and SYNCed
 *			and timed; three GET passes over the blocks then only
 *			on NVMe. Absolute figures follow (*_gbps).
 *   nvme_write_vs_fio_verify, nvme_read_vs_fio_verify  the same against
 *			the same fio jobs doing the tier's checksum work too
 *			(verify=crc32c every 256 KiB, written, then checked
 *			on every read; goal >= 0.9)
 *   nvme_read_direct_gbps  the same GET passes with KVTIER_GET_DIRECT (the
 *			device reads into the buffers, the blocks stay on
 *			NVMe), best of 3; nvme_read_direct_vs_read (against
 *			the promoting GETs just before), _vs_fio and
 *			_vs_fio_verify beside it, and its CPU passes
 *			(nvme_read_direct_cpu_passes_per_byte: crc32c only)
 *   nvme_write_commit_gbps  demotion write throughput of blocks stored the
 *			zero-copy way (RESERVE, fill in place, COMMIT, then
 *			SYNC; 256 MiB in three timed parts, the best),
 *			after the read phases; nvme_write_commit_vs_put
 *			(against the PUT phase) and _vs_fio_verify beside
 *			it, and its CPU passes (crc32c only)
 *   nvme_write_busy_share, nvme_read_busy_share  share of each phase the
 *			drive had I/O in flight (io_ticks of /sys/block/DEV/
 *			stat over the phase's time; goal >= 0.9), with fio's
 *			own share beside each (fio_*_busy_share)
 *   nvme_cpu_passes_per_byte  bytes of blocks the CPU copied, checksummed
 *			and had zeroed (/sys/kernel/kvtier/cpu_bytes) over
 *			the bytes the write and the read phase moved (goal
 *			<= 2); each phase's own beside it, with its parts;
 *			nvme_cpu_passes_per_byte_direct the same with the
 *			direct reads' phase as the read phase
 *   nvme_host_waf	NVME_STAT.bytes_written / bytes_demoted
 *   nvme_attach_seconds_1gib  NVME_STAT.attach_ns of a re-attach of the
 *			full 1 GiB drive (index rebuilt from every region)
 *   nvme_verify_errors  of 128 blocks only on NVMe after that re-attach,
 *			those a GET failed or read back wrong (goal 0);
 *			nvme_verify_misses beside it: on the full device the
 *			GETs' evictions write, and the log reclaims the
 *			region of a block LOOKUP listed
 *
 * Lookup and pin (KVTIER_LOOKUP_PIN):
 *
 *   lookup_pin64_vs_lookup64  time of a LOOKUP with PIN of a chain of 64
 *			DRAM-resident 4 KiB blocks / of a plain LOOKUP of the
 *			same chain; the UNPIN that follows each is timed apart
 *			(unpin64_us) (goal <= 2.0)
 *   pinned_read_vs_anon  summing 64-bit words of 64 blocks of 256 KiB
 *			pinned by one LOOKUP with PIN, through the pool mmap
 *			(faulted in by a warm-up pass) / of an anonymous
 *			buffer (goal >= 0.9)
 *
 * Zero-copy store (KVTIER_F_RESERVE):
 *
 *   commit_kernel_copies_per_byte  bytes the module copied
 *			(/sys/kernel/kvtier/cpu_bytes) over the bytes stored
 *			by RESERVE, a fill in place through the reservation
 *			window and COMMIT, 256 KiB blocks in batches of 64
 *			(goal 0)
 *   commit_vs_put	time to store the same blocks by filling a staging
 *			buffer and PUTting it / by RESERVE, fill in place,
 *			COMMIT; best of 5 each (goal >= 1)
 *
 * Layer-wise loads (KVTIER_F_PARTS), on the NVMe bench drive:
 *
 *   layerwise_stall_vs_whole  a modeled runtime's stall before computing a
 *			request whose prefix (32 blocks of 1 MiB, 32 layers
 *			each) is only on NVMe: loading it layer by layer
 *			through io_uring while computing the layers before
 *			(compute as long as the whole load) / loading it
 *			whole first; best of 3 each (goal <= 0.5)
 *
 * io_uring:
 *
 *   uring_lookup64_vs_ioctl64  time of 64 one-key LOOKUPs as 64 SQEs of one
 *			io_uring submission (reaped together) / as 64 ioctls,
 *			resident 4 KiB blocks (goal < 1)
 *
 * The HBM tier:
 *   user_mover_vs_emul	throughput of staging the same 256 DRAM-resident
 *			256 KiB blocks into HBM (one PREFETCH group, target
 *			HBM, waited for) through the user backend with
 *			libkvtier's memcpy mover in a thread / through the
 *			emulated device with hbm_emul_gbps 0; one run each
 *			(goal >= 0.8)
 * Cache events and the census (KVTIER_F_EVENTS):
 *
 *   events_put_rate_vs_no_reader  PUT throughput of 64 KiB blocks (batches
 *			of 16, each block DROPped again after) with one
 *			reader following the pool's events fd, in a process
 *			of its own as a router's would be / with none; the reader and its absence alternate, best
 *			of 3 each (goal >= 0.9). The same with 4 KiB blocks
 *			follows (events_put_rate_vs_no_reader_4k), where an
 *			event is a larger share of a PUT's work.
 *   events_lost_without_overflow  events the readers of those runs, and a
 *			reader made slow on purpose, neither read nor were
 *			told they lost (by OVERFLOW records), against the
 *			log's own count (goal 0)
 *   census_1e6_seconds  a census of the lookup part's pool of 1e6 resident
 *			blocks, in calls of 4096 keys; best of 3
 *
 * The compressed NVMe tier (KVTIER_F_COMPRESS), on the NVMe bench drive,
 * with KV-like blocks (tools/kvgen.c: the keys and values of one layer of
 * random weights applied to token embeddings, 128 tokens of 4 heads of 128
 * a block: 256 KiB):
 *
 *   nvme_compress_ratio_kv_ALG_FMT[_planes]  block bytes / stored bytes of
 *			64 blocks written by a pool compressing with ALG (lz4,
 *			zstd), of FMT (fp16, bf16) KV, with or without byte
 *			planes (KVTIER_COMPRESS_SHUFFLE2)
 *   compressed_write_vs_plain, compressed_read_vs_plain  throughput of PUT
 *			and SYNC of 64 fp16 blocks (the pool's DRAM holds 8),
 *			then of GETs of those only on NVMe, in a pool
 *			compressing with zstd and planes / in a plain one, the
 *			same bytes; best of 3 each; lz4's beside (_lz4)
 *   compressed_host_waf  NVME_STAT bytes_written / bytes_stored over the
 *			compressed pool's writes: the summaries' and pages'
 *			share (goal <= 1.05)
 *
 * The latency of a GET served from NVMe against fio's reads, idle and with
 * writes running: the latency part, tools/bench-latency.c.
 *
 * Every block written or read is checksummed (crc32c) once on the way, so
 * the raw cpu_crc32c_gbps line bounds both throughput figures; under QEMU
 * TCG the instruction is emulated (~0.2 GB/s) and sets them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <nmmintrin.h>

#include <kvtier.h>

#include "kvgen.h"
#include "layerwise.h"
#include "util.h"
#include "bench.h"

#define TRIALS		5

#define COPY_BLOCK	(256ULL << 10)
#define COPY_BATCH	64
#define COPY_BLOCKS	256		/* 64 MiB resident */
#define COPY_ROUNDS	8		/* 512 MiB a trial */

#define LOOKUP_BLOCK	4096ULL
#define LOOKUP_SMALL	1000ULL
#define LOOKUP_LARGE	1000000ULL
#define LOOKUP_BATCH	1024
#define LOOKUP_KEYS	(64 * LOOKUP_BATCH)	/* keys a trial */
#define PUT_BATCH	4096

const char *prog = "kvtier-bench";
struct kvtier_ctx *ctx;
static volatile uint64_t sink;

void figure(const char *name, const char *fmt, double v)
{
	printf("%s: ", name);
	printf(fmt, v);
	putchar('\n');
}

int warn(const char *what, int err)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(-err));
	return err;
}

/*
 * A pool for one measurement, keeping @dram_blocks in DRAM (0: all). The
 * name is removed at once: the pool lives as long as the fd, so nothing is
 * left behind if the bench dies. *@poolp is NULL on failure.
 */
int bench_pool_dram(const char *tag, uint64_t block_size, uint64_t blocks,
		    uint32_t dram_blocks, struct kvtier_pool **poolp)
{
	struct kvtier_pool_params p;
	char name[KVTIER_NAME_MAX];
	int ret;

	*poolp = NULL;
	snprintf(name, sizeof(name), "kvtier-bench-%d-%s", (int)getpid(), tag);
	kvtier_pool_params_init(&p, name, block_size, blocks);
	p.dram_blocks = dram_blocks;
	ret = kvtier_pool_create(ctx, &p, poolp);
	if (ret)
		return ret;
	ret = kvtier_pool_destroy(ctx, name);
	if (ret) {
		kvtier_pool_close(*poolp);
		*poolp = NULL;
		return ret;
	}
	return 0;
}

static int bench_pool(const char *tag, uint64_t block_size, uint64_t blocks,
		      struct kvtier_pool **poolp)
{
	return bench_pool_dram(tag, block_size, blocks, 0, poolp);
}

struct kvtier_key bench_key(uint64_t i)
{
	struct kvtier_key k;

	kvtier_key_chain(NULL, i, &k);
	return k;
}

/* PUT keys [from, to) of the bench key space, each block filled from @buf. */
static int put_range(struct kvtier_pool *pool, uint64_t from, uint64_t to,
		     void *buf, size_t buf_size)
{
	struct kvtier_block *b = calloc(PUT_BATCH, sizeof(*b));
	uint64_t bs = kvtier_pool_block_size(pool), i;
	uint32_t j;
	int ret = 0;

	if (!b)
		return -ENOMEM;
	for (i = from; i < to && !ret; ) {
		uint32_t n = 0, done;

		for (; i < to && n < PUT_BATCH; i++, n++) {
			struct kvtier_key k = bench_key(i);
			size_t off = (i * bs) % buf_size;

			*(uint64_t *)((char *)buf + off) = i;	/* distinct bytes */
			kvtier_block_set(&b[n], &k, (char *)buf + off);
		}
		ret = kvtier_put(pool, b, n, 0, &done);
		for (j = 0; !ret && done != n && j < n; j++)
			ret = b[j].status;	/* the first failed entry */
	}
	free(b);
	return ret;
}

uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static double best_of(const double *v, int n)
{
	double best = v[0];
	int i;

	for (i = 1; i < n; i++)
		if (v[i] < best)
			best = v[i];
	return best;
}

/* ---- put_sg_vs_memcpy and get_sg_vs_memcpy ----------------------------- */

/*
 * Blocks as an engine holds them: SG_LAYERS arrays (one a layer), layer l
 * holding its piece of every block, contiguously. The scatter-gather PUT
 * and GET copy straight between those pieces and the blocks; the baseline
 * is the staging copy a connector does without them.
 */
#define SG_LAYERS	64
#define SG_BLOCKS	64
#define SG_ROUNDS	8

static int bench_sg(void)
{
	const uint64_t piece = COPY_BLOCK / SG_LAYERS;
	const size_t bytes = SG_BLOCKS * COPY_BLOCK;
	static struct kvtier_seg seg[SG_BLOCKS][SG_LAYERS];
	double t_put[TRIALS], t_get[TRIALS], t_gat[TRIALS], t_sca[TRIALS];
	struct kvtier_block blk[SG_BLOCKS];
	struct kvtier_pool *pool = NULL;
	char *lay = MAP_FAILED, *stage = MAP_FAILED;
	uint32_t done, b, l, r;
	int trial, ret;
	uint64_t t, moved;
	size_t i;

	ret = bench_pool("sg", COPY_BLOCK, 2 * SG_BLOCKS, &pool);
	if (ret)
		return warn("create the scatter-gather pool", ret);
	lay = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	stage = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (lay == MAP_FAILED || stage == MAP_FAILED) {
		ret = warn("layer buffers", -errno);
		goto out;
	}
	for (i = 0; i < bytes / 8; i++)
		((uint64_t *)lay)[i] = i * 0x9e3779b97f4a7c15ULL;
	memset(stage, 0, bytes);
	for (b = 0; b < SG_BLOCKS; b++) {
		struct kvtier_key k = bench_key(b);

		for (l = 0; l < SG_LAYERS; l++) {
			seg[b][l].addr = (uintptr_t)lay +
					 (l * SG_BLOCKS + b) * piece;
			seg[b][l].len = piece;
		}
		kvtier_block_set_segs(&blk[b], &k, seg[b], SG_LAYERS);
	}

	for (trial = -1; trial < TRIALS; trial++) {	/* -1: warm-up */
		t = now_ns();
		for (r = 0; r < SG_ROUNDS; r++) {
			ret = kvtier_put(pool, blk, SG_BLOCKS,
					 KVTIER_PUT_REPLACE, &done);
			if (!ret && done != SG_BLOCKS)
				ret = blk[0].status ?: -EIO;
			if (ret) {
				warn("scatter-gather PUT", ret);
				goto out;
			}
		}
		if (trial >= 0)
			t_put[trial] = (now_ns() - t) / 1e9;

		t = now_ns();
		for (r = 0; r < SG_ROUNDS; r++) {
			ret = kvtier_get(pool, blk, SG_BLOCKS, 0, &done);
			if (!ret && done != SG_BLOCKS)
				ret = blk[0].status ?: -EIO;
			if (ret) {
				warn("scatter-gather GET", ret);
				goto out;
			}
		}
		if (trial >= 0)
			t_get[trial] = (now_ns() - t) / 1e9;

		t = now_ns();
		for (r = 0; r < SG_ROUNDS; r++)
			for (b = 0; b < SG_BLOCKS; b++)
				for (l = 0; l < SG_LAYERS; l++)
					memcpy(stage + b * COPY_BLOCK + l * piece,
					       (void *)(uintptr_t)seg[b][l].addr,
					       piece);
		sink += *(volatile uint64_t *)stage;
		if (trial >= 0)
			t_gat[trial] = (now_ns() - t) / 1e9;

		t = now_ns();
		for (r = 0; r < SG_ROUNDS; r++)
			for (b = 0; b < SG_BLOCKS; b++)
				for (l = 0; l < SG_LAYERS; l++)
					memcpy((void *)(uintptr_t)seg[b][l].addr,
					       stage + b * COPY_BLOCK + l * piece,
					       piece);
		sink += *(volatile uint64_t *)lay;
		if (trial >= 0)
			t_sca[trial] = (now_ns() - t) / 1e9;
	}
	moved = (uint64_t)SG_ROUNDS * bytes;
	figure("put_sg_vs_memcpy", "%.3f", best_of(t_gat, TRIALS) / best_of(t_put, TRIALS));
	figure("get_sg_vs_memcpy", "%.3f", best_of(t_sca, TRIALS) / best_of(t_get, TRIALS));
	figure("put_sg_gbps", "%.2f", moved / best_of(t_put, TRIALS) / 1e9);
	figure("get_sg_gbps", "%.2f", moved / best_of(t_get, TRIALS) / 1e9);
	figure("sg_gather_memcpy_gbps", "%.2f", moved / best_of(t_gat, TRIALS) / 1e9);
	figure("sg_scatter_memcpy_gbps", "%.2f", moved / best_of(t_sca, TRIALS) / 1e9);
out:
	if (lay != MAP_FAILED)
		munmap(lay, bytes);
	if (stage != MAP_FAILED)
		munmap(stage, bytes);
	kvtier_pool_close(pool);
	return ret;
}

/* ---- dram_get_vs_memcpy and mmap_read_vs_anon -------------------------- */

static __attribute__((noinline)) uint64_t sum_words(const void *p, size_t bytes)
{
	const uint64_t *w = p;
	uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	size_t i, n = bytes / 8;

	for (i = 0; i + 4 <= n; i += 4) {
		s0 += w[i];
		s1 += w[i + 1];
		s2 += w[i + 2];
		s3 += w[i + 3];
	}
	return s0 + s1 + s2 + s3;
}

/* @bytes of anonymous memory holding a pattern; MAP_FAILED without. */
static void *pattern_buf(size_t bytes)
{
	uint64_t *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t i;

	if (p == MAP_FAILED)
		return p;
	for (i = 0; i < bytes / 8; i++)
		p[i] = i * 0x9e3779b97f4a7c15ULL;
	return p;
}

/* Entries for keys 0 .. @n - 1, no buffers. */
static void bench_keys(struct kvtier_block *b, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct kvtier_key k = bench_key(i);

		kvtier_block_set(&b[i], &k, NULL);
	}
}

/* Map @pool and find @n looked-up blocks of @b in the mapping. */
static int map_blocks(struct kvtier_pool *pool, const struct kvtier_block *b,
		      uint32_t n, struct kvtier_map **map, const void **ptr)
{
	uint32_t i;
	int ret;

	ret = kvtier_map(pool, 0, 0, map);
	for (i = 0; !ret && i < n; i++) {
		ptr[i] = kvtier_block_ptr(*map, b[i].addr);
		if (!ptr[i])
			ret = -ERANGE;
	}
	return ret;
}

/*
 * Best of TRIALS of reading @n COPY_BLOCK blocks @rounds times, through
 * the mapping (@ptr) and from the same bytes in anonymous memory (@src);
 * seconds each. The first, untimed pass faults the mapping in.
 */
static void read_mapped_vs_anon(const void *const *ptr, const char *src,
				uint32_t n, uint32_t rounds, double *map,
				double *anon)
{
	double t_map[TRIALS], t_anon[TRIALS];
	uint64_t t, s;
	uint32_t r, i;
	int trial;

	for (trial = -1; trial < TRIALS; trial++) {
		s = 0;
		t = now_ns();
		for (r = 0; r < rounds; r++)
			for (i = 0; i < n; i++)
				s += sum_words(ptr[i], COPY_BLOCK);
		if (trial >= 0)
			t_map[trial] = (now_ns() - t) / 1e9;
		sink += s;

		s = 0;
		t = now_ns();
		for (r = 0; r < rounds; r++)
			for (i = 0; i < n; i++)
				s += sum_words(src + i * COPY_BLOCK, COPY_BLOCK);
		if (trial >= 0)
			t_anon[trial] = (now_ns() - t) / 1e9;
		sink += s;
	}
	*map = best_of(t_map, TRIALS);
	*anon = best_of(t_anon, TRIALS);
}

static int bench_copy(void)
{
	const size_t batch_bytes = COPY_BATCH * COPY_BLOCK;
	const size_t pool_bytes = COPY_BLOCKS * COPY_BLOCK;
	double t_get[TRIALS], t_cpy[TRIALS], t_map, t_anon;
	struct kvtier_block blk[COPY_BLOCKS];
	const void *ptr[COPY_BLOCKS];
	struct kvtier_pool *pool = NULL;
	struct kvtier_map *map = NULL;
	void *dst = NULL, *src = MAP_FAILED;
	uint64_t bytes = 0, t;
	uint32_t done, i, r, b;
	int trial, ret;

	ret = bench_pool("copy", COPY_BLOCK, COPY_BLOCKS, &pool);
	if (ret)
		return warn("create the 256 KiB pool", ret);
	ret = kvtier_alloc_staging(pool, batch_bytes, &dst);
	if (ret) {
		warn("staging buffer", ret);
		goto out;
	}
	src = pattern_buf(pool_bytes);
	if (src == MAP_FAILED) {
		ret = warn("anonymous buffer", -errno);
		goto out;
	}
	memset(dst, 0, batch_bytes);

	ret = put_range(pool, 0, COPY_BLOCKS, src, pool_bytes);
	if (ret) {
		warn("PUT the 256 KiB blocks", ret);
		goto out;
	}
	bench_keys(blk, COPY_BLOCKS);
	ret = kvtier_lookup(pool, blk, COPY_BLOCKS, 0, &done);
	if (!ret && done != COPY_BLOCKS)
		ret = -ENOENT;
	if (ret) {
		warn("LOOKUP the 256 KiB blocks", ret);
		goto out;
	}
	for (i = 0; i < COPY_BLOCKS; i++)
		blk[i].buf = (uintptr_t)dst + (i % COPY_BATCH) * COPY_BLOCK;

	/* GET and memcpy: batches of 64 blocks into the same buffer. */
	for (trial = -1; trial < TRIALS; trial++) {	/* -1: warm-up */
		t = now_ns();
		for (r = 0; r < COPY_ROUNDS; r++)
			for (b = 0; b < COPY_BLOCKS; b += COPY_BATCH) {
				ret = kvtier_get(pool, blk + b, COPY_BATCH, 0, &done);
				if (!ret && done != COPY_BATCH)
					ret = -ENOENT;
				if (ret) {
					warn("GET", ret);
					goto out;
				}
			}
		if (trial >= 0)
			t_get[trial] = (now_ns() - t) / 1e9;

		t = now_ns();
		for (r = 0; r < COPY_ROUNDS; r++)
			for (b = 0; b < COPY_BLOCKS; b += COPY_BATCH)
				for (i = 0; i < COPY_BATCH; i++)
					memcpy((char *)dst + i * COPY_BLOCK,
					       (char *)src + (b + i) * COPY_BLOCK,
					       COPY_BLOCK);
		sink += *(volatile uint64_t *)dst;
		if (trial >= 0)
			t_cpy[trial] = (now_ns() - t) / 1e9;
	}
	bytes = (uint64_t)COPY_ROUNDS * pool_bytes;
	figure("dram_get_vs_memcpy", "%.3f", best_of(t_cpy, TRIALS) / best_of(t_get, TRIALS));
	figure("dram_get_gbps", "%.2f", bytes / best_of(t_get, TRIALS) / 1e9);
	figure("dram_memcpy_gbps", "%.2f", bytes / best_of(t_cpy, TRIALS) / 1e9);

	/* Reading resident blocks through the mapping vs. anonymous memory. */
	ret = map_blocks(pool, blk, COPY_BLOCKS, &map, ptr);
	if (ret) {
		warn("mmap the pool", ret);
		goto out;
	}
	read_mapped_vs_anon(ptr, src, COPY_BLOCKS, COPY_ROUNDS, &t_map,
			    &t_anon);
	figure("mmap_read_vs_anon", "%.3f", t_anon / t_map);
	figure("mmap_read_gbps", "%.2f", bytes / t_map / 1e9);
	figure("anon_read_gbps", "%.2f", bytes / t_anon / 1e9);
	ret = 0;
out:
	kvtier_unmap(map);
	if (src != MAP_FAILED)
		munmap(src, pool_bytes);
	kvtier_free_staging(pool, dst, batch_bytes);
	kvtier_pool_close(pool);
	return ret;
}

/* ---- lookup_pin64_vs_lookup64 and pinned_read_vs_anon ------------------ */

#define PIN_CHAIN	64
#define PIN_BLOCKS	1024		/* 4 KiB, resident: chains start anywhere */
#define PIN_ROUNDS	2000		/* chains a trial */

/* LOOKUP (with @flags) and UNPIN of chains at random starts; seconds each. */
static int pin_rounds(struct kvtier_pool *pool, struct kvtier_block *b,
		      uint32_t flags, uint64_t *rng, double *t_look,
		      double *t_unpin)
{
	uint64_t t, look = 0, unpin = 0;
	uint32_t r, i, done;
	int ret;

	for (r = 0; r < PIN_ROUNDS; r++) {
		uint64_t first = xorshift(rng) % (PIN_BLOCKS - PIN_CHAIN);

		for (i = 0; i < PIN_CHAIN; i++) {
			struct kvtier_key k = bench_key(first + i);

			kvtier_block_set(&b[i], &k, NULL);
		}
		t = now_ns();
		ret = kvtier_lookup(pool, b, PIN_CHAIN, flags, &done);
		look += now_ns() - t;
		if (!ret && done != PIN_CHAIN)
			ret = -ENOENT;
		if (ret)
			return ret;
		if (!(flags & KVTIER_LOOKUP_PIN))
			continue;
		t = now_ns();
		ret = kvtier_unpin(pool, b, PIN_CHAIN, 0, &done);
		unpin += now_ns() - t;
		if (!ret && done != PIN_CHAIN)
			ret = -EPROTO;
		if (ret)
			return ret;
	}
	*t_look = look / 1e9;
	*t_unpin = unpin / 1e9;
	return 0;
}

static int bench_pin(void)
{
	double t_pin[TRIALS], t_look[TRIALS], t_unpin[TRIALS], t_none;
	double t_map, t_anon;
	const size_t bytes = PIN_CHAIN * COPY_BLOCK;
	struct kvtier_block b[PIN_CHAIN];
	const void *ptr[PIN_CHAIN];
	struct kvtier_pool *pool;
	struct kvtier_map *map = NULL;
	uint64_t rng = 0x70696e;
	void *buf, *src = MAP_FAILED;
	int ret, trial;
	uint32_t done;

	ret = bench_pool("pin", LOOKUP_BLOCK, PIN_BLOCKS, &pool);
	if (ret)
		return warn("create the lookup-and-pin pool", ret);
	buf = calloc(PIN_BLOCKS, LOOKUP_BLOCK);
	ret = buf ? put_range(pool, 0, PIN_BLOCKS, buf,
			      PIN_BLOCKS * LOOKUP_BLOCK) : -ENOMEM;
	free(buf);
	for (trial = -1; trial < TRIALS && !ret; trial++) {	/* -1: warm-up */
		ret = pin_rounds(pool, b, KVTIER_LOOKUP_PIN, &rng,
				 &t_pin[trial < 0 ? 0 : trial],
				 &t_unpin[trial < 0 ? 0 : trial]);
		if (!ret)
			ret = pin_rounds(pool, b, 0, &rng,
					 &t_look[trial < 0 ? 0 : trial], &t_none);
	}
	kvtier_pool_close(pool);
	if (ret)
		return warn("LOOKUP with PIN of resident chains", ret);
	figure("lookup_pin64_vs_lookup64", "%.3f",
	       best_of(t_pin, TRIALS) / best_of(t_look, TRIALS));
	figure("lookup_pin64_us", "%.2f", best_of(t_pin, TRIALS) / PIN_ROUNDS * 1e6);
	figure("lookup64_us", "%.2f", best_of(t_look, TRIALS) / PIN_ROUNDS * 1e6);
	figure("unpin64_us", "%.2f", best_of(t_unpin, TRIALS) / PIN_ROUNDS * 1e6);

	/* Reading blocks pinned by LOOKUP through the mapping vs. anonymous. */
	ret = bench_pool("pinread", COPY_BLOCK, PIN_CHAIN, &pool);
	if (ret)
		return warn("create the 256 KiB pool", ret);
	src = pattern_buf(bytes);
	if (src == MAP_FAILED) {
		ret = warn("anonymous buffer", -errno);
		goto out;
	}
	ret = put_range(pool, 0, PIN_CHAIN, src, bytes);
	bench_keys(b, PIN_CHAIN);
	if (!ret)
		ret = kvtier_lookup(pool, b, PIN_CHAIN, KVTIER_LOOKUP_PIN, &done);
	if (!ret && done != PIN_CHAIN)
		ret = -ENOENT;
	if (!ret)
		ret = map_blocks(pool, b, PIN_CHAIN, &map, ptr);
	if (ret) {
		warn("pin and map the 256 KiB blocks", ret);
		goto out;
	}
	read_mapped_vs_anon(ptr, src, PIN_CHAIN, COPY_ROUNDS * 4, &t_map,
			    &t_anon);
	figure("pinned_read_vs_anon", "%.3f", t_anon / t_map);
	figure("pinned_read_gbps", "%.2f",
	       COPY_ROUNDS * 4.0 * bytes / t_map / 1e9);
	ret = 0;
out:
	kvtier_unmap(map);
	if (src != MAP_FAILED)
		munmap(src, bytes);
	kvtier_pool_close(pool);
	return ret;
}

/* ---- census_1e6_seconds ------------------------------------------------- */

#define CENSUS_PAGE	4096

/* Time a census of @pool, which holds @keys keys; best of 3. */
static void census_time(struct kvtier_pool *pool, uint64_t keys,
			const char *tag)
{
	struct kvtier_census_entry *ent = calloc(CENSUS_PAGE, sizeof(*ent));
	double secs[3];
	uint64_t listed = 0;
	char name[64];
	int trial;

	if (!ent) {
		warn("census", -ENOMEM);
		return;
	}
	for (trial = 0; trial < 3; trial++) {
		struct kvtier_census c = { .cursor = 0 };
		uint64_t t = now_ns();

		listed = 0;
		do {
			c.entries = (uint64_t)(uintptr_t)ent;
			c.count = CENSUS_PAGE;
			c.done = 0;
			if (ioctl(kvtier_pool_fd(pool), KVTIER_IOC_CENSUS, &c)) {
				warn("CENSUS", -errno);
				free(ent);
				return;
			}
			listed += c.done;
		} while (c.cursor != KVTIER_ADDR_NONE);
		secs[trial] = (now_ns() - t) / 1e9;
	}
	free(ent);
	if (listed != keys) {
		fprintf(stderr, "%s: census listed %llu keys of %llu\n", prog,
			(unsigned long long)listed, (unsigned long long)keys);
		return;
	}
	snprintf(name, sizeof(name), "census_%s_seconds", tag);
	figure(name, "%.3f", best_of(secs, 3));
	figure("census_keys_per_s", "%.0f", keys / best_of(secs, 3));
}

/* ---- lookup_1e6_vs_1e3 and dram_meta_bytes_per_block ------------------- */

/* ns per key of LOOKUPs of random keys among the first @resident ones. */
static int lookup_cost(struct kvtier_pool *pool, uint64_t resident,
		       uint64_t *rng, struct kvtier_block *blk,
		       double *ns_per_key)
{
	double t_trial[TRIALS];
	int trial, ret;
	uint32_t i, done;
	uint64_t t;

	for (trial = -1; trial < TRIALS; trial++) {	/* -1: warm-up */
		for (i = 0; i < LOOKUP_KEYS; i++) {
			struct kvtier_key k;

			*rng ^= *rng << 13;
			*rng ^= *rng >> 7;
			*rng ^= *rng << 17;
			k = bench_key(*rng % resident);
			kvtier_block_set(&blk[i], &k, NULL);
		}
		t = now_ns();
		for (i = 0; i < LOOKUP_KEYS; i += LOOKUP_BATCH) {
			ret = kvtier_lookup(pool, blk + i, LOOKUP_BATCH, 0,
					    &done);
			if (!ret && done != LOOKUP_BATCH)
				ret = -ENOENT;
			if (ret)
				return warn("LOOKUP", ret);
		}
		if (trial >= 0)
			t_trial[trial] = (double)(now_ns() - t) / LOOKUP_KEYS;
	}
	*ns_per_key = best_of(t_trial, TRIALS);
	return 0;
}

static uint64_t mem_available(void)
{
	unsigned long long kb = 0;
	char line[256];
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb << 10;
}

static int bench_lookup(void)
{
	uint64_t budget, avail = mem_available(), large, fit;
	struct kvtier_pool_stat st;
	struct kvtier_api api;
	struct kvtier_block *blk;
	struct kvtier_pool *pool;
	double ns_small, ns_large;
	uint64_t rng = 88172645463325252ULL, t;
	void *buf = NULL;
	const size_t buf_size = 1 << 20;
	char b1[32], b2[32];
	int ret;

	kvtier_api_info(ctx, &api);
	budget = free_dram_budget(api.dram_bytes);
	/* Room for the blocks, leaving the VM some memory for itself. */
	fit = budget < avail * 3 / 4 ? budget : avail * 3 / 4;
	/* The budget also holds the pool's index, about 100 bytes an address. */
	large = fit / (LOOKUP_BLOCK + 128);
	if (large > LOOKUP_LARGE)
		large = LOOKUP_LARGE;
	if (large < 10 * LOOKUP_SMALL) {
		fprintf(stderr, "%s: lookup: only %llu blocks of DRAM budget\n",
			prog, (unsigned long long)large);
		return -ENOSPC;
	}

	blk = calloc(LOOKUP_KEYS, sizeof(*blk));
	if (!blk)
		return warn("lookup", -ENOMEM);
	ret = bench_pool("lookup", LOOKUP_BLOCK, large, &pool);
	if (ret) {
		warn("create the 4 KiB pool", ret);
		free(blk);
		return ret;
	}
	ret = kvtier_alloc_staging(pool, buf_size, &buf);
	if (ret) {
		warn("staging buffer", ret);
		goto out;
	}
	memset(buf, 0x5a, buf_size);

	ret = put_range(pool, 0, LOOKUP_SMALL, buf, buf_size);
	if (ret) {
		warn("PUT 1e3 blocks", ret);
		goto out;
	}
	ret = lookup_cost(pool, LOOKUP_SMALL, &rng, blk, &ns_small);
	if (ret)
		goto out;

	t = now_ns();
	ret = put_range(pool, LOOKUP_SMALL, large, buf, buf_size);
	if (ret) {
		warn("PUT the large set", ret);
		goto out;
	}
	t = now_ns() - t;
	ret = lookup_cost(pool, large, &rng, blk, &ns_large);
	if (ret)
		goto out;
	ret = kvtier_stat(pool, &st);
	if (ret) {
		warn("STAT", ret);
		goto out;
	}

	if (large == LOOKUP_LARGE) {
		figure("lookup_1e6_vs_1e3", "%.3f", ns_large / ns_small);
	} else {
		printf("lookup_1e6_vs_1e3: n/a (DRAM budget %s, memory %s: 1e6 blocks of 4 KiB need 3.8 GiB; load with dram_mb=4600 in a VM with --mem 6144)\n",
		       human_bytes(budget, b1, sizeof(b1)),
		       human_bytes(avail, b2, sizeof(b2)));
		printf("lookup_%llu_vs_1e3: %.3f\n", (unsigned long long)large,
		       ns_large / ns_small);
	}
	figure("dram_meta_bytes_per_block", "%.1f",
	       st.resident[KVTIER_TIER_DRAM] ?
	       (double)st.meta_bytes / st.resident[KVTIER_TIER_DRAM] : 0);
	figure("lookup_ns_per_key_1e3", "%.1f", ns_small);
	printf("lookup_ns_per_key_%s: %.1f\n",
	       large == LOOKUP_LARGE ? "1e6" : "large", ns_large);
	printf("lookup_large_resident_blocks: %llu\n",
	       (unsigned long long)st.resident[KVTIER_TIER_DRAM]);
	figure("dram_put_4k_blocks_per_s", "%.0f",
	       (large - LOOKUP_SMALL) / (t / 1e9));
	census_time(pool, large, large == LOOKUP_LARGE ? "1e6" : "large");
	ret = 0;
out:
	kvtier_free_staging(pool, buf, buf_size);
	kvtier_pool_close(pool);
	free(blk);
	return ret;
}

/* ---- events_put_rate_vs_no_reader, events_lost_without_overflow -------- */

#define EV_BLOCKS	1024		/* PUT (and DROPped) a trial */
#define EV_BATCH	16
#define EV_TRIALS	3

/*
 * A reader following an events fd, in a process of its own as a router's
 * would be: it reads until it has the event its parent names on @ctl,
 * then reports what it counted on @res.
 */
struct ev_follower {
	int fd;
	pid_t pid;
	int ctl;		/* parent -> child: the last event */
	int res;		/* child -> parent: struct ev_counts */
	unsigned int slow_us;	/* sleep after each read: made to fall behind */
};

struct ev_counts {
	uint64_t read;		/* events read */
	uint64_t lost;		/* events OVERFLOW records said it lost */
	uint64_t gaps;		/* events neither read nor said lost */
};

static void ev_follow(struct ev_follower *f, int ctl, int res, uint64_t next)
{
	struct pollfd p[2] = { { .fd = f->fd, .events = POLLIN },
			       { .fd = ctl, .events = POLLIN } };
	uint64_t last = UINT64_MAX;
	struct kvtier_event ev[64];
	struct ev_counts c = { 0 };

	while (next <= last) {
		ssize_t n = read(f->fd, ev, sizeof(ev)), i;

		if (n < 0 && errno == EAGAIN) {
			poll(p, last == UINT64_MAX ? 2 : 1, 10);
			if (last == UINT64_MAX && (p[1].revents & POLLIN) &&
			    read(ctl, &last, sizeof(last)) != sizeof(last))
				break;
			continue;
		}
		if (n <= 0)
			break;
		for (i = 0; i < n / (ssize_t)sizeof(ev[0]); i++) {
			if (ev[i].seq != next)
				c.gaps += ev[i].seq > next ?
					  ev[i].seq - next : 1;
			if (ev[i].type == KVTIER_EVENT_OVERFLOW) {
				c.lost += ev[i].lost;
				next = ev[i].seq + ev[i].lost;
			} else {
				c.read++;
				next = ev[i].seq + 1;
			}
		}
		if (f->slow_us)
			usleep(f->slow_us);
	}
	if (next <= last && last != UINT64_MAX)
		c.gaps += last + 1 - next;
	if (write(res, &c, sizeof(c)) != sizeof(c))
		_exit(1);
	_exit(0);
}

static int ev_follow_start(struct kvtier_pool *pool, struct ev_follower *f)
{
	struct kvtier_events e = { .flags = KVTIER_EVENTS_NONBLOCK };
	int ctl[2], res[2];

	if (ioctl(kvtier_pool_fd(pool), KVTIER_IOC_EVENTS, &e))
		return -errno;
	f->fd = e.fd;
	if (pipe(ctl)) {
		close(f->fd);
		return -errno;
	}
	if (pipe(res)) {
		close(ctl[0]);
		close(ctl[1]);
		close(f->fd);
		return -errno;
	}
	f->pid = fork();
	if (!f->pid) {
		close(ctl[1]);
		close(res[0]);
		ev_follow(f, ctl[0], res[1], e.seq);
	}
	close(ctl[0]);
	close(res[1]);
	close(f->fd);
	f->ctl = ctl[1];
	f->res = res[0];
	if (f->pid < 0) {
		close(f->ctl);
		close(f->res);
		return -EAGAIN;
	}
	return 0;
}

/*
 * Stop a follower once it has read up to the log's last event (@last);
 * what it counted.
 */
static int ev_follow_stop(struct ev_follower *f, uint64_t last,
			  struct ev_counts *c)
{
	int status, ret = 0;

	memset(c, 0, sizeof(*c));
	if (write(f->ctl, &last, sizeof(last)) != sizeof(last) ||
	    read(f->res, c, sizeof(*c)) != sizeof(*c))
		ret = -EIO;
	close(f->ctl);
	close(f->res);
	waitpid(f->pid, &status, 0);
	return ret;
}

/* The last event of @pool's log (a census of nothing says it). */
static int ev_last(struct kvtier_pool *pool, uint64_t *last)
{
	struct kvtier_census_entry ent;
	struct kvtier_census c = { .entries = (uintptr_t)&ent, .count = 1 };

	c.cursor = kvtier_pool_capacity(pool);
	if (ioctl(kvtier_pool_fd(pool), KVTIER_IOC_CENSUS, &c))
		return -errno;
	*last = c.seq;
	return 0;
}

/* One trial: PUT and DROP EV_BLOCKS blocks; the PUTs' blocks per second. */
static int ev_trial(struct kvtier_pool *pool, void *buf, uint64_t base,
		    double *rate)
{
	uint64_t bs = kvtier_pool_block_size(pool), t_put = 0, t, i;
	struct kvtier_block b[EV_BATCH];
	uint32_t j, done;
	int ret;

	for (i = 0; i < EV_BLOCKS; i += EV_BATCH) {
		for (j = 0; j < EV_BATCH; j++) {
			struct kvtier_key k = bench_key(base + i + j);

			*(uint64_t *)((char *)buf + j * bs) = base + i + j;
			kvtier_block_set(&b[j], &k, (char *)buf + j * bs);
		}
		t = now_ns();
		ret = kvtier_put(pool, b, EV_BATCH, 0, &done);
		t_put += now_ns() - t;
		if (!ret && done != EV_BATCH)
			ret = -EIO;
		for (j = 0; j < EV_BATCH; j++)
			b[j].buf = 0;
		if (!ret)
			ret = kvtier_drop(pool, b, EV_BATCH, 0, &done);
		if (ret)
			return ret;
	}
	*rate = EV_BLOCKS / (t_put / 1e9);
	return 0;
}

/* PUT rate with one reader following / without; both best of 3. */
static int ev_rates(uint64_t bs, const char *suffix, uint64_t *gaps)
{
	double with[EV_TRIALS], without[EV_TRIALS];
	struct kvtier_pool *pool;
	struct ev_follower f;
	struct ev_counts c;
	char name[96];
	uint64_t last;
	void *buf;
	int trial, ret;

	ret = bench_pool("events", bs, EV_BLOCKS * 2, &pool);
	if (ret)
		return warn("create the events pool", ret);
	ret = kvtier_alloc_staging(pool, bs * EV_BATCH, &buf);
	if (ret) {
		kvtier_pool_close(pool);
		return warn("staging buffer", ret);
	}
	memset(buf, 0x5a, bs * EV_BATCH);
	/* A warm-up: the pool's pages are there from now on. */
	ret = ev_trial(pool, buf, 0, &with[0]);
	for (trial = 0; trial < EV_TRIALS && !ret; trial++) {
		ret = ev_trial(pool, buf, 0, &without[trial]);
		if (ret)
			break;
		memset(&f, 0, sizeof(f));
		ret = ev_follow_start(pool, &f);
		if (ret)
			break;
		ret = ev_trial(pool, buf, 0, &with[trial]);
		if (!ret)
			ret = ev_last(pool, &last);
		if (!ev_follow_stop(&f, ret ? 0 : last, &c))
			*gaps += c.gaps;
		else if (!ret)
			ret = -EIO;
	}
	if (!ret) {
		snprintf(name, sizeof(name), "events_put_rate_vs_no_reader%s",
			 suffix);
		figure(name, "%.3f", best_of(with, EV_TRIALS) /
				     best_of(without, EV_TRIALS));
		snprintf(name, sizeof(name), "events_put_blocks_per_s%s",
			 suffix);
		figure(name, "%.0f", best_of(without, EV_TRIALS));
		snprintf(name, sizeof(name), "events_put_blocks_per_s%s_reader",
			 suffix);
		figure(name, "%.0f", best_of(with, EV_TRIALS));
	} else {
		warn("events trial", ret);
	}
	kvtier_free_staging(pool, buf, bs * EV_BATCH);
	kvtier_pool_close(pool);
	return ret;
}

/* A module parameter's value, or -errno. */
static int read_param_ll(const char *name, long long *v)
{
	char path[128];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "/sys/module/kvtier/parameters/%s", name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	ret = fscanf(f, "%lld", v) == 1 ? 0 : -EINVAL;
	fclose(f);
	return ret;
}

/*
 * A reader that sleeps after every read while 16 rings' worth of events
 * pass: it is lapped, and must be told of every event it lost.
 */
static int ev_slow_reader(uint64_t *gaps, uint64_t *lost)
{
	struct kvtier_pool *pool;
	struct ev_follower f;
	struct ev_counts c;
	long long ring = 4096;
	uint64_t last, i;
	void *buf;
	int ret, r;

	read_param_ll("events_ring", &ring);
	ret = bench_pool("events-slow", 4096, EV_BLOCKS * 2, &pool);
	if (ret)
		return warn("create the events pool", ret);
	ret = kvtier_alloc_staging(pool, 4096 * EV_BATCH, &buf);
	if (ret) {
		kvtier_pool_close(pool);
		return warn("staging buffer", ret);
	}
	memset(&f, 0, sizeof(f));
	f.slow_us = 2000;
	ret = ev_follow_start(pool, &f);
	if (ret) {
		kvtier_free_staging(pool, buf, 4096 * EV_BATCH);
		kvtier_pool_close(pool);
		return warn("events fd", ret);
	}
	for (i = 0; !ret && i < (uint64_t)ring * 16; i += 2 * EV_BLOCKS) {
		double rate;

		ret = ev_trial(pool, buf, i, &rate);
	}
	r = ev_last(pool, &last);
	if (!ret)
		ret = r;
	if (!ev_follow_stop(&f, ret ? 0 : last, &c)) {
		*gaps += c.gaps;
		*lost = c.lost;
	} else if (!ret) {
		ret = -EIO;
	}
	kvtier_free_staging(pool, buf, 4096 * EV_BATCH);
	kvtier_pool_close(pool);
	return ret;
}

static int bench_events(void)
{
	uint64_t gaps = 0, lost = 0;
	int ret;

	ret = ev_rates(64 << 10, "", &gaps);
	if (!ret)
		ret = ev_rates(4 << 10, "_4k", &gaps);
	if (!ret)
		ret = ev_slow_reader(&gaps, &lost);
	if (ret)
		return ret;
	figure("events_lost_without_overflow", "%.0f", gaps);
	figure("events_slow_reader_lost", "%.0f", lost);
	return 0;
}

/* ---- the NVMe tier ----------------------------------------------------- */

#define NVME_BLOCK	(256ULL << 10)
#define NVME_DRAM	64		/* the pool's DRAM share, in blocks */
#define NVME_PUT_BATCH	16		/* 4 MiB a PUT */
#define NVME_WRITE	(512ULL << 20)	/* PUT for the write figure */
#define NVME_QD		32		/* GET batch: reads in flight */
#define NVME_READ	(256ULL << 20)	/* GET for the read figure */
#define NVME_VERIFY	128		/* blocks read back after re-attach */
#define NVME_FILL_MAX	(4ULL << 30)	/* largest device the fill runs on */
#define NVME_TRIALS	3		/* each figure: the best of */
#define GOLDEN		0x9e3779b97f4a7c15ULL

extern char **environ;

static const char * const nvme_figures[] = {
	"nvme_write_vs_fio", "nvme_read_vs_fio", "nvme_host_waf",
	"nvme_attach_seconds_1gib",
};

/* The figures of @fig (NULL: the nvme part's) are n/a, and why. */
static void nvme_na(const char *fig, const char *why)
{
	size_t i;

	if (fig) {
		printf("%s: n/a (%s)\n", fig, why);
		return;
	}
	for (i = 0; i < sizeof(nvme_figures) / sizeof(nvme_figures[0]); i++)
		printf("%s: n/a (%s)\n", nvme_figures[i], why);
}

static const char *skip_space(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

/*
 * Where the value of the first member "@name" after @p starts (a key, not
 * a string value such as "rw" : "write"), or NULL.
 */
const char *json_member(const char *p, const char *name)
{
	char key[40];

	snprintf(key, sizeof(key), "\"%s\"", name);
	while (p && (p = strstr(p, key))) {
		p = skip_space(p + strlen(key));
		if (*p == ':')
			return skip_space(p + 1);
	}
	return NULL;
}

/*
 * jobs[0].@dir.bw_bytes of fio's JSON output: a reader for this one field
 * (the first "@dir" object after "jobs"), not a JSON parser.
 */
static int fio_bw_bytes(const char *json, const char *dir, double *bw)
{
	const char *p = json_member(json, "jobs");
	char *end;

	p = p ? json_member(p, dir) : NULL;
	if (!p || *p != '{')
		return -EINVAL;
	p = json_member(p, "bw_bytes");
	if (!p)
		return -EINVAL;
	*bw = strtod(p, &end);
	return end == p ? -EINVAL : 0;
}

/* The fio job files: $KVTIER_FIO_DIR, else fio/ next to this program. */
static int fio_job_path(const char *job, char *path, size_t size)
{
	const char *dir = getenv("KVTIER_FIO_DIR");
	char exe[PATH_MAX];
	ssize_t n;
	char *slash;

	if (dir && *dir) {
		snprintf(path, size, "%s/%s", dir, job);
	} else {
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n <= 0)
			return -errno;
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
		snprintf(path, size, "%s/fio/%s", exe, job);
	}
	return access(path, R_OK) ? -errno : 0;
}

/*
 * Run `fio --output-format=json [@opt] JOB` (its settings come from the
 * KVTIER_FIO_* environment); its output in *@json, to free.
 */
int run_fio_json(const char *job, const char *opt, char **json)
{
	char path[PATH_MAX + 64], *out = NULL, *argv[5];
	posix_spawn_file_actions_t fa;
	size_t len = 0, cap = 0;
	int pfd[2], status, ret, argc = 0;
	ssize_t n;
	pid_t pid;

	ret = fio_job_path(job, path, sizeof(path));
	if (ret)
		return warn(job, ret);
	argv[argc++] = "fio";
	argv[argc++] = "--output-format=json";
	if (opt)
		argv[argc++] = (char *)opt;
	argv[argc++] = path;
	argv[argc] = NULL;

	if (pipe2(pfd, O_CLOEXEC))
		return warn("pipe", -errno);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], STDOUT_FILENO);
	ret = -posix_spawnp(&pid, "fio", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	if (ret) {
		close(pfd[0]);
		return warn("fio", ret);
	}
	for (;;) {
		if (len + 4096 + 1 > cap) {
			char *p = realloc(out, cap = cap ? 2 * cap : 65536);

			if (!p) {
				ret = -ENOMEM;
				break;
			}
			out = p;
		}
		n = read(pfd[0], out + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += n;
	}
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!ret && (!WIFEXITED(status) || WEXITSTATUS(status))) {
		fprintf(stderr, "%s: fio %s: exit status %d\n", prog, job,
			WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		ret = -EIO;
	}
	if (ret) {
		free(out);
		return ret;
	}
	out[len] = '\0';
	*json = out;
	return 0;
}

/* run_fio_json(), and return jobs[0].@dir.bw_bytes in *@bw. */
static int run_fio(const char *job, const char *opt, const char *dir,
		   double *bw)
{
	char *out;
	int ret = run_fio_json(job, opt, &out);

	if (ret)
		return ret;
	ret = fio_bw_bytes(out, dir, bw);
	if (ret)
		fprintf(stderr, "%s: fio %s: no %s.bw_bytes in its output\n",
			prog, job, dir);
	free(out);
	return ret;
}

void set_env_u64(const char *name, uint64_t v, const char *suffix)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu%s", (unsigned long long)v, suffix);
	setenv(name, buf, 1);
}

/* Word 0 of every page of block @i of @bytes says which block and page. */
void page_stamp(void *blk, uint64_t bytes, uint64_t i)
{
	uint64_t p;

	for (p = 0; p < bytes / 4096; p++)
		*(uint64_t *)((char *)blk + p * 4096) = (i * GOLDEN) ^ p;
}

int page_check(const void *blk, uint64_t bytes, uint64_t i)
{
	uint64_t p;

	for (p = 0; p < bytes / 4096; p++)
		if (*(const uint64_t *)((const char *)blk + p * 4096) !=
		    ((i * GOLDEN) ^ p))
			return -1;
	return 0;
}

/* PUT blocks [from, to) in batches of NVME_PUT_BATCH from @buf. */
static int nvme_put(struct kvtier_pool *pool, uint64_t from, uint64_t to,
		    char *buf)
{
	struct kvtier_block b[NVME_PUT_BATCH];
	uint32_t n, j, done;
	uint64_t i;
	int ret;

	for (i = from; i < to; ) {
		for (n = 0; i < to && n < NVME_PUT_BATCH; i++, n++) {
			struct kvtier_key k = bench_key(i);
			char *p = buf + n * NVME_BLOCK;

			page_stamp(p, NVME_BLOCK, i);
			kvtier_block_set(&b[n], &k, p);
		}
		ret = kvtier_put(pool, b, n, 0, &done);
		for (j = 0; !ret && done != n && j < n; j++)
			ret = b[j].status;
		if (ret)
			return ret;
	}
	return 0;
}

/* Keys of the blocks stored by RESERVE and COMMIT: past every other. */
#define NVME_RESV_KEYS	(1ULL << 40)

/*
 * Store keys NVME_RESV_KEYS + [from, to) the zero-copy way: RESERVE a
 * batch, write each block in place (the bytes nvme_put() gives key i),
 * COMMIT. Returns 0 or -errno.
 */
static int nvme_commit(struct kvtier_pool *pool, struct kvtier_map *win,
		       uint64_t from, uint64_t to)
{
	struct kvtier_block b[NVME_PUT_BATCH];
	uint32_t n, j, done;
	uint64_t i, first;
	int ret;

	for (i = from; i < to; ) {
		first = i;
		for (n = 0; i < to && n < NVME_PUT_BATCH; i++, n++) {
			struct kvtier_key k = bench_key(NVME_RESV_KEYS + i);

			kvtier_block_set(&b[n], &k, NULL);
		}
		ret = kvtier_reserve(pool, b, n, 0, &done);
		if (!ret && done != n)
			ret = b[done].status ?: -ENOSPC;
		if (ret)
			return ret;
		for (j = 0; j < n; j++)
			page_stamp(kvtier_reserved_ptr(win, b[j].addr),
				   NVME_BLOCK, NVME_RESV_KEYS + first + j);
		ret = kvtier_commit(pool, b, n, 0, &done);
		if (!ret && done != n)
			ret = -EIO;
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * The indexes among [0, n) of the blocks that are only on NVMe, in random
 * order. Returns how many, or -errno.
 */
int64_t nvme_only(struct kvtier_pool *pool, uint64_t n, uint64_t *idx,
			 uint64_t *rng)
{
	struct kvtier_block *b = calloc(n, sizeof(*b));
	uint64_t i, m = 0, t;
	int ret;

	if (!b)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct kvtier_key k = bench_key(i);

		kvtier_block_set(&b[i], &k, NULL);
	}
	ret = kvtier_lookup(pool, b, n, 0, NULL);
	for (i = 0; !ret && i < n; i++)
		if (!b[i].status && b[i].tier == KVTIER_TIER_NVME)
			idx[m++] = i;
	free(b);
	if (ret)
		return ret;
	for (i = m; i > 1; i--) {
		uint64_t j = xorshift(rng) % i;

		t = idx[i - 1];
		idx[i - 1] = idx[j];
		idx[j] = t;
	}
	return m;
}

/*
 * GET the blocks idx[0..n) in batches of NVME_QD into @buf, checking each;
 * *@miss counts the blocks that missed, *@bad those that failed otherwise
 * or came back with wrong bytes.
 */
static int nvme_get(struct kvtier_pool *pool, const uint64_t *idx, uint64_t n,
		    char *buf, uint32_t flags, uint64_t *miss, uint64_t *bad)
{
	struct kvtier_block b[NVME_QD];
	uint64_t i;
	uint32_t j, m;
	int ret;

	for (i = 0; i < n; i += m) {
		m = n - i < NVME_QD ? n - i : NVME_QD;
		for (j = 0; j < m; j++) {
			struct kvtier_key k = bench_key(idx[i + j]);

			kvtier_block_set(&b[j], &k, buf + j * NVME_BLOCK);
		}
		ret = kvtier_get(pool, b, m, flags, NULL);
		if (ret)
			return ret;
		for (j = 0; j < m; j++)
			if (b[j].status == -ENOENT)
				(*miss)++;
			else if (b[j].status ||
				 page_check(buf + j * NVME_BLOCK, NVME_BLOCK,
					    idx[i + j]))
				(*bad)++;
	}
	return 0;
}

/*
 * crc32c throughput of one CPU (the SSE4.2 instruction, three streams, as
 * the kernel's crc32c-intel does): every block the NVMe tier writes or
 * reads is checksummed once, so this bounds both NVMe figures. Under QEMU
 * TCG it is emulated, and slow.
 */
__attribute__((target("sse4.2")))
static double crc32c_gbps(const void *buf, size_t len)
{
	const uint64_t *w = buf;
	uint64_t c0 = 0, c1 = 0, c2 = 0, t;
	size_t i, r, rounds = 16;

	t = now_ns();
	for (r = 0; r < rounds; r++)
		for (i = 0; i + 3 <= len / 8; i += 3) {
			c0 = _mm_crc32_u64(c0, w[i]);
			c1 = _mm_crc32_u64(c1, w[i + 1]);
			c2 = _mm_crc32_u64(c2, w[i + 2]);
		}
	t = now_ns() - t;
	sink += c0 ^ c1 ^ c2;
	return (double)rounds * len / t;
}

/*
 * Pick the device, or say why there is none (as figure @fig n/a; NULL: the
 * nvme part's figures); 0 to go ahead.
 */
int nvme_device(char *dev, size_t size, uint64_t *dev_bytes, const char *fig)
{
	const char *env = getenv("KVTIER_BENCH_NVME");
	struct kvtier_nvme_stat ns;
	struct kvtier_api api;
	char why[384];
	int ret;

	kvtier_api_info(ctx, &api);
	if (!(api.supported & KVTIER_F_NVME)) {
		nvme_na(fig, "the module has no NVMe tier");
		return -ENOTTY;
	}
	if (env && (!*env || !strcmp(env, "0"))) {
		snprintf(why, sizeof(why), "KVTIER_BENCH_NVME=%s", env);
		nvme_na(fig, why);
		return -ENODEV;
	}
	snprintf(dev, size, "%s", env ? env : "/dev/nvme0n1");
	if (access(dev, F_OK)) {
		snprintf(why, sizeof(why), "no %s: run in a VM with --nvme 1", dev);
		nvme_na(fig, why);
		return -ENODEV;
	}
	if (!env && !blockdev_is_vm_drive(dev)) {
		snprintf(why, sizeof(why),
			 "%s is not a kvtier-vm drive; name it in KVTIER_BENCH_NVME to let the bench overwrite it",
			 dev);
		nvme_na(fig, why);
		return -EPERM;
	}
	ret = kvtier_nvme_stat(ctx, &ns);
	if (!ret && ns.attached) {
		nvme_na(fig, "a device is attached already; the bench needs to format its own");
		return -EBUSY;
	}
	ret = blockdev_check(dev, dev_bytes);
	if (ret) {
		snprintf(why, sizeof(why), "%s: %s", dev, strerror(-ret));
		nvme_na(fig, why);
		return ret;
	}
	return 0;
}

/*
 * Milliseconds the block device @dev (/dev/NAME) has had I/O in flight
 * (io_ticks, the 10th field of /sys/block/NAME/stat), or -1.
 */
static long long io_ticks_ms(const char *dev)
{
	const char *base = strrchr(dev, '/');
	unsigned long long v[10];
	char path[300];
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/sys/block/%s/stat", base ? base + 1 : dev);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fscanf(f, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
		   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
		   &v[8], &v[9]);
	fclose(f);
	return n == 10 ? (long long)v[9] : -1;
}

/* /sys/kernel/kvtier/cpu_bytes: copied, checksummed, zeroed; 0 if none. */
static int cpu_bytes(double b[3])
{
	FILE *f = fopen("/sys/kernel/kvtier/cpu_bytes", "r");
	int n;

	b[0] = b[1] = b[2] = 0;
	if (!f)
		return -errno;
	n = fscanf(f, "%lf %lf %lf", &b[0], &b[1], &b[2]);
	fclose(f);
	return n == 3 ? 0 : -EINVAL;
}

/* One phase's CPU passes per byte moved, with its parts; their sum. */
static double cpu_passes(const char *phase, const double b0[3],
			 const double b1[3], double moved)
{
	double c = b1[0] - b0[0], k = b1[1] - b0[1], z = b1[2] - b0[2];
	char name[64];

	snprintf(name, sizeof(name), "nvme_%s_cpu_passes_per_byte", phase);
	printf("%s: %.2f (copy %.2f, crc32c %.2f, zero %.2f)\n", name,
	       (c + k + z) / moved, c / moved, k / moved, z / moved);
	return c + k + z;
}

/* The share of @secs since @ticks0 that @dev was busy; a figure line. */
static void busy_share(const char *name, const char *dev, long long ticks0,
		       double secs)
{
	long long ticks = io_ticks_ms(dev);

	if (ticks < 0 || ticks0 < 0 || !(secs > 0))
		printf("%s: n/a (no /sys/block stat for %s)\n", name, dev);
	else
		figure(name, "%.3f", (ticks - ticks0) / 1e3 / secs);
}

/*
 * fio @job NVME_TRIALS times; its best bandwidth in *@bw (0 when a run
 * failed), and the drive's busy share over all the runs as figure @busy
 * (none if NULL).
 */
static void fio_best(const char *job, const char *opt, const char *dir,
		     const char *dev, const char *busy, double *bw)
{
	long long ticks = io_ticks_ms(dev);
	uint64_t t = now_ns();
	double one;
	int i;

	*bw = 0;
	for (i = 0; i < NVME_TRIALS; i++) {
		if (run_fio(job, opt, dir, &one)) {
			*bw = 0;
			return;
		}
		if (one > *bw)
			*bw = one;
	}
	if (busy)
		busy_share(busy, dev, ticks, (now_ns() - t) / 1e9);
}

/*
 * Phase 4 of bench_nvme(): NVME_TRIALS GET passes with @flags, each over
 * the blocks only on NVMe by then (a pass that promotes leaves the last
 * few in DRAM). The best pass's rate in *@rate, the device's over it in
 * *@dev_rate, its blocks in *@best; the bytes all passes moved in *@moved.
 */
static int nvme_read_passes(struct kvtier_pool *pool, uint64_t nw, uint64_t nr,
			    uint64_t *idx, uint64_t *rng, char *gbuf,
			    uint32_t flags, double *rate, double *dev_rate,
			    double *moved, uint64_t *best, uint64_t *miss,
			    uint64_t *bad)
{
	struct kvtier_nvme_stat s0, s1;
	double secs;
	uint64_t t;
	int64_t m;
	int i, ret;

	*rate = *dev_rate = *moved = 0;
	for (i = 0, ret = 0; i < NVME_TRIALS && !ret; i++) {
		uint64_t n = nr;

		m = nvme_only(pool, nw, idx, rng);
		if (m < 0)
			return warn("LOOKUP", m);
		if ((uint64_t)m < n)
			n = m - m % NVME_QD;
		if (!n)
			break;
		kvtier_nvme_stat(ctx, &s0);
		t = now_ns();
		ret = nvme_get(pool, idx, n, gbuf, flags, miss, bad);
		secs = (now_ns() - t) / 1e9;
		kvtier_nvme_stat(ctx, &s1);
		*moved += n * NVME_BLOCK;
		if (!ret && n * NVME_BLOCK / secs > *rate) {
			*rate = n * NVME_BLOCK / secs;
			*dev_rate = (s1.bytes_read - s0.bytes_read) / secs;
			*best = n;
		}
	}
	return ret;
}

static int bench_nvme(void)
{
	const uint64_t put_bytes = NVME_PUT_BATCH * NVME_BLOCK;
	const uint64_t get_bytes = NVME_QD * NVME_BLOCK;
	struct kvtier_nvme_stat s0, s1, sw0;
	struct kvtier_pool_stat ps;
	struct kvtier_pool_params p;
	struct kvtier_pool *pool = NULL;
	char dev[256], name[KVTIER_NAME_MAX], b1[32];
	double fio_w = 0, fio_r = 0, fio_wv = 0, fio_rv = 0, secs, kv_w, kv_r;
	double put_best, dev_r, moved;
	uint64_t t0, nr_best = 0;
	int i;
	double cb0[3], cb1[3], passes = 0, passes_w = 0;
	struct kvtier_map *win = NULL;
	struct kvtier_api api;
	int cpu_ok;
	uint64_t dev_bytes, nw, nr, next, cap, bad = 0, miss = 0, rng = 0x2545f4914f6cdd1dULL;
	uint64_t *idx = NULL;
	char *pbuf = NULL, *gbuf = NULL;
	int64_t m;
	int ret, attached = 0;
	long long ticks;
	uint64_t t;

	if (nvme_device(dev, sizeof(dev), &dev_bytes, NULL))
		return 0;
	nw = (dev_bytes / 2 < NVME_WRITE ? dev_bytes / 2 : NVME_WRITE) / NVME_BLOCK;
	nw -= nw % NVME_PUT_BATCH;
	nr = NVME_READ / NVME_BLOCK;
	if (nr > nw / 2)
		nr = nw / 2;
	nr -= nr % NVME_QD;
	printf("nvme_device: %s (%s)\n", dev, human_bytes(dev_bytes, b1, sizeof(b1)));

	/* 1. fio on the raw device, before kvtier claims it. */
	setenv("KVTIER_FIO_DEV", dev, 1);
	set_env_u64("KVTIER_FIO_SIZE", nw * NVME_BLOCK, "");
	set_env_u64("KVTIER_FIO_IO_SIZE", nr * NVME_BLOCK, "");
	set_env_u64("KVTIER_FIO_BS", NVME_BLOCK, "");
	set_env_u64("KVTIER_FIO_QD", NVME_QD, "");
	setenv("KVTIER_FIO_VERIFY", "0", 1);
	fio_best("nvme-seq-write.fio", NULL, "write", dev,
		 "fio_write_busy_share", &fio_w);
	fio_best("nvme-rand-read.fio", "--readonly", "read", dev,
		 "fio_read_busy_share", &fio_r);
	/* The same, doing the tier's work too: a crc32c a block, checked. */
	setenv("KVTIER_FIO_VERIFY", "crc32c", 1);
	fio_best("nvme-seq-write.fio", NULL, "write", dev, NULL, &fio_wv);
	if (fio_wv > 0)
		fio_best("nvme-rand-read.fio", "--readonly", "read", dev, NULL,
			 &fio_rv);
	if (!(fio_rv > 0))
		fio_wv = fio_rv = 0;

	/* 2. A new store, and a pool whose DRAM share is 64 blocks. */
	ret = kvtier_nvme_attach(ctx, dev, KVTIER_NVME_FORMAT, 0);
	if (ret) {
		char why[384];

		snprintf(why, sizeof(why), "attach %s: %s", dev, strerror(-ret));
		nvme_na(NULL, why);
		return ret;
	}
	attached = 1;
	cap = dev_bytes / NVME_BLOCK + 4 * NVME_DRAM;
	if (cap > KVTIER_CAPACITY_MAX)
		cap = KVTIER_CAPACITY_MAX;
	snprintf(name, sizeof(name), "kvtier-bench-%d-nvme", (int)getpid());
	kvtier_pool_params_init(&p, name, NVME_BLOCK, cap);
	p.dram_blocks = NVME_DRAM;
	ret = kvtier_pool_create(ctx, &p, &pool);
	if (ret) {
		warn("create the NVMe pool", ret);
		goto out;
	}
	ret = kvtier_alloc_staging(pool, put_bytes, (void **)&pbuf);
	if (!ret)
		ret = kvtier_alloc_staging(pool, get_bytes, (void **)&gbuf);
	idx = calloc(cap, sizeof(*idx));
	if (ret || !idx) {
		warn("NVMe buffers", ret ? ret : -ENOMEM);
		goto out;
	}
	memset(pbuf, 0x6b, put_bytes);
	if (__builtin_cpu_supports("sse4.2"))
		figure("cpu_crc32c_gbps", "%.3f", crc32c_gbps(pbuf, put_bytes));

	/*
	 * 3. Demotion: PUT through the small DRAM share, then SYNC; in
	 * NVME_TRIALS parts, each timed: the best part's write rate.
	 */
	cpu_ok = !cpu_bytes(cb0);
	kvtier_nvme_stat(ctx, &sw0);
	ticks = io_ticks_ms(dev);
	t0 = now_ns();
	kv_w = put_best = 0;
	for (i = 0, ret = 0; i < NVME_TRIALS && !ret; i++) {
		uint64_t from = nw / NVME_TRIALS / NVME_PUT_BATCH *
				NVME_PUT_BATCH * i;
		uint64_t to = i + 1 < NVME_TRIALS ?
			      from + nw / NVME_TRIALS / NVME_PUT_BATCH *
				     NVME_PUT_BATCH : nw;

		kvtier_nvme_stat(ctx, &s0);
		t = now_ns();
		ret = nvme_put(pool, from, to, pbuf);
		if (!ret)
			ret = kvtier_sync(pool, NULL);
		secs = (now_ns() - t) / 1e9;
		kvtier_nvme_stat(ctx, &s1);
		if (!ret && (s1.bytes_written - s0.bytes_written) / secs > kv_w)
			kv_w = (s1.bytes_written - s0.bytes_written) / secs;
		if (!ret && (to - from) * NVME_BLOCK / secs > put_best)
			put_best = (to - from) * NVME_BLOCK / secs;
	}
	secs = (now_ns() - t0) / 1e9;
	cpu_ok = cpu_ok && !cpu_bytes(cb1);
	if (!ret)
		busy_share("nvme_write_busy_share", dev, ticks, secs);
	if (!ret && cpu_ok)
		passes = passes_w = cpu_passes("write", cb0, cb1,
					       nw * NVME_BLOCK);
	if (ret) {
		warn("PUT/SYNC through the NVMe tier", ret);
		goto out;
	}
	if (fio_w > 0)
		figure("nvme_write_vs_fio", "%.3f", kv_w / fio_w);
	else
		printf("nvme_write_vs_fio: n/a (fio did not run)\n");
	figure("nvme_write_gbps", "%.3f", kv_w / 1e9);
	figure("fio_seq_write_gbps", "%.3f", fio_w / 1e9);
	if (fio_wv > 0) {
		figure("nvme_write_vs_fio_verify", "%.3f", kv_w / fio_wv);
		figure("fio_seq_write_verify_gbps", "%.3f", fio_wv / 1e9);
	}
	figure("nvme_put_gbps", "%.3f", put_best / 1e9);
	kvtier_stat(pool, &ps);
	figure("nvme_write_blocks_per_region", "%.1f",
	       (double)ps.demotions / (s1.nr_regions - s1.free_regions +
				       s1.reclaimed - sw0.reclaimed));
	if (getenv("KVTIER_BENCH_DEBUG"))
		fprintf(stderr, "write phase: puts %llu demotions %llu evictions %llu drops %llu dram %llu nvme %llu dirty %llu; regions free %u reclaimed %llu lost %llu\n",
			(unsigned long long)ps.puts, (unsigned long long)ps.demotions,
			(unsigned long long)ps.evictions, (unsigned long long)ps.drops,
			(unsigned long long)ps.resident[KVTIER_TIER_DRAM],
			(unsigned long long)ps.resident[KVTIER_TIER_NVME],
			(unsigned long long)ps.dirty, s1.free_regions,
			(unsigned long long)s1.reclaimed,
			(unsigned long long)s1.lost_blocks);

	/*
	 * 4. Promotion: GET batches of blocks that are only on NVMe, in
	 * NVME_TRIALS passes, each over the blocks only on NVMe by then (a
	 * pass leaves the last few in DRAM): the best pass's rate.
	 */
	cpu_ok = cpu_ok && !cpu_bytes(cb0);
	ticks = io_ticks_ms(dev);
	t0 = now_ns();
	ret = nvme_read_passes(pool, nw, nr, idx, &rng, gbuf, 0, &kv_r, &dev_r,
			       &moved, &nr_best, &miss, &bad);
	secs = (now_ns() - t0) / 1e9;
	cpu_ok = cpu_ok && !cpu_bytes(cb1);
	if (!ret && moved)
		busy_share("nvme_read_busy_share", dev, ticks, secs);
	if (!ret && moved && cpu_ok) {
		passes += cpu_passes("read", cb0, cb1, moved);
		figure("nvme_cpu_passes_per_byte", "%.2f",
		       passes / (nw * NVME_BLOCK + moved));
	}
	if (ret || !moved) {
		warn("GET from the NVMe tier", ret ? ret : -ENOENT);
		goto out;
	}
	if (fio_r > 0)
		figure("nvme_read_vs_fio", "%.3f", kv_r / fio_r);
	else
		printf("nvme_read_vs_fio: n/a (fio did not run)\n");
	figure("nvme_read_gbps", "%.3f", kv_r / 1e9);
	figure("fio_rand_read_gbps", "%.3f", fio_r / 1e9);
	if (fio_rv > 0) {
		figure("nvme_read_vs_fio_verify", "%.3f", kv_r / fio_rv);
		figure("fio_rand_read_verify_gbps", "%.3f", fio_rv / 1e9);
	}
	figure("nvme_read_device_gbps", "%.3f", dev_r / 1e9);
	figure("nvme_read_blocks", "%.0f", (double)nr_best);

	/*
	 * 4b. The same GETs read straight into the buffers
	 * (KVTIER_GET_DIRECT): no DRAM, no copy; the blocks stay on NVMe.
	 */
	kvtier_api_info(ctx, &api);
	if (!(api.features & KVTIER_F_DIRECT)) {
		printf("nvme_read_direct_gbps: n/a (no KVTIER_F_DIRECT)\n");
	} else {
		double kv_d, dev_d, moved_d;
		uint64_t nr_d = 0;

		cpu_ok = !cpu_bytes(cb0);
		ticks = io_ticks_ms(dev);
		t0 = now_ns();
		ret = nvme_read_passes(pool, nw, nr, idx, &rng, gbuf,
				       KVTIER_GET_DIRECT, &kv_d, &dev_d,
				       &moved_d, &nr_d, &miss, &bad);
		secs = (now_ns() - t0) / 1e9;
		cpu_ok = cpu_ok && !cpu_bytes(cb1);
		if (ret || !moved_d) {
			warn("GET with KVTIER_GET_DIRECT", ret ? ret : -ENOENT);
			goto out;
		}
		busy_share("nvme_read_direct_busy_share", dev, ticks, secs);
		if (cpu_ok && passes_w > 0)
			figure("nvme_cpu_passes_per_byte_direct", "%.2f",
			       (passes_w + cpu_passes("read_direct", cb0, cb1,
						      moved_d)) /
			       (nw * NVME_BLOCK + moved_d));
		figure("nvme_read_direct_gbps", "%.3f", kv_d / 1e9);
		figure("nvme_read_direct_vs_read", "%.3f", kv_d / kv_r);
		if (fio_r > 0)
			figure("nvme_read_direct_vs_fio", "%.3f", kv_d / fio_r);
		if (fio_rv > 0)
			figure("nvme_read_direct_vs_fio_verify", "%.3f",
			       kv_d / fio_rv);
	}

	/*
	 * 4c. Demotion of blocks stored with no copy in the kernel: RESERVE,
	 * fill in place, COMMIT, SYNC; half of phase 3's bytes, in
	 * NVME_TRIALS parts, each timed: the best part's write rate.
	 */
	ret = kvtier_map_reserved(pool, &win);
	if (ret == -EOPNOTSUPP) {
		printf("nvme_write_commit_gbps: n/a (no KVTIER_F_RESERVE)\n");
		ret = 0;
	} else if (ret) {
		warn("map the reservation window", ret);
		goto out;
	} else {
		uint64_t part = nw / 2 / NVME_TRIALS;
		double kv_c = 0;

		cpu_ok = !cpu_bytes(cb0);
		for (i = 0; i < NVME_TRIALS && !ret; i++) {
			kvtier_nvme_stat(ctx, &s0);
			t = now_ns();
			ret = nvme_commit(pool, win, part * i, part * (i + 1));
			if (!ret)
				ret = kvtier_sync(pool, NULL);
			secs = (now_ns() - t) / 1e9;
			kvtier_nvme_stat(ctx, &s1);
			if (!ret && (s1.bytes_written - s0.bytes_written) /
				    secs > kv_c)
				kv_c = (s1.bytes_written - s0.bytes_written) /
				       secs;
		}
		cpu_ok = cpu_ok && !cpu_bytes(cb1);
		if (ret) {
			warn("RESERVE/COMMIT/SYNC through the NVMe tier", ret);
			goto out;
		}
		if (cpu_ok)
			cpu_passes("write_commit", cb0, cb1,
				   part * NVME_TRIALS * NVME_BLOCK);
		figure("nvme_write_commit_gbps", "%.3f", kv_c / 1e9);
		figure("nvme_write_commit_vs_put", "%.3f", kv_c / kv_w);
		if (fio_wv > 0)
			figure("nvme_write_commit_vs_fio_verify", "%.3f",
			       kv_c / fio_wv);
	}

	/* 5. Fill the device, SYNC, detach, attach: the index rebuild. */
	for (next = nw; ; next += NVME_DRAM) {
		kvtier_nvme_stat(ctx, &s1);
		if (!s1.free_regions || next + NVME_DRAM > cap - 2 * NVME_DRAM ||
		    dev_bytes > NVME_FILL_MAX)
			break;
		ret = nvme_put(pool, next, next + NVME_DRAM, pbuf);
		if (ret) {
			warn("PUT while filling the device", ret);
			goto out;
		}
	}
	ret = kvtier_sync(pool, NULL);
	if (ret) {
		warn("SYNC", ret);
		goto out;
	}
	kvtier_nvme_stat(ctx, &s1);
	figure("nvme_host_waf", "%.4f", s1.bytes_demoted ?
	       (double)s1.bytes_written / s1.bytes_demoted : 0);
	figure("nvme_bytes_written", "%.0f", s1.bytes_written);
	figure("nvme_bytes_demoted", "%.0f", s1.bytes_demoted);
	figure("nvme_reclaimed_regions", "%.0f", s1.reclaimed);
	figure("nvme_lost_blocks", "%.0f", s1.lost_blocks);

	if (dev_bytes > NVME_FILL_MAX) {
		printf("nvme_attach_seconds_1gib: n/a (%s is larger than 4 GiB; the figure is for the VM's 1 GiB drive)\n",
		       dev);
		goto out_verify;
	}
	ret = kvtier_nvme_detach(ctx);
	if (!ret) {
		attached = 0;
		ret = kvtier_nvme_attach(ctx, dev, 0, 0);
		attached = !ret;
	}
	if (ret) {
		warn("detach and attach again", ret);
		goto out;
	}
	kvtier_nvme_stat(ctx, &s1);
	kvtier_stat(pool, &ps);
	if (dev_bytes >> 30 == 1 && !(dev_bytes & ((1ULL << 30) - 1)))
		figure("nvme_attach_seconds_1gib", "%.3f", s1.attach_ns / 1e9);
	else
		printf("nvme_attach_seconds_1gib: n/a (the device has %s)\n",
		       human_bytes(dev_bytes, b1, sizeof(b1)));
	figure("nvme_attach_seconds", "%.3f", s1.attach_ns / 1e9);
	figure("nvme_attach_regions", "%.0f",
	       s1.nr_regions - s1.free_regions);
	figure("nvme_attach_restored_blocks", "%.0f",
	       ps.resident[KVTIER_TIER_NVME]);

out_verify:
	/* 6. Blocks come back right after all that. */
	m = nvme_only(pool, next, idx, &rng);
	if (m < 0) {
		ret = warn("LOOKUP", m);
		goto out;
	}
	miss = 0;
	ret = nvme_get(pool, idx, m < NVME_VERIFY ? m : NVME_VERIFY, gbuf, 0,
		       &miss, &bad);
	if (ret)
		warn("GET after re-attach", ret);
	/*
	 * The device is full: the GETs' evictions write the blocks the
	 * re-attach found in DRAM (dirty again), and the log reclaims its
	 * oldest region for them, so a block LOOKUP listed there can be a
	 * miss by the time its GET comes; wrong bytes never.
	 */
	figure("nvme_verify_errors", "%.0f", bad);
	figure("nvme_verify_misses", "%.0f", miss);
	if (bad)
		fprintf(stderr, "%s: %llu NVMe blocks read back wrong or failed\n",
			prog, (unsigned long long)bad);
out:
	free(idx);
	kvtier_unmap(win);
	if (pool) {
		kvtier_free_staging(pool, pbuf, put_bytes);
		kvtier_free_staging(pool, gbuf, get_bytes);
		kvtier_pool_close(pool);
		kvtier_pool_destroy(ctx, name);
	}
	if (attached) {
		int err = kvtier_nvme_detach(ctx);

		if (err)
			warn("detach", err);
	}
	return ret;
}

/* ---- the compressed NVMe tier ------------------------------------------ */

#define Z_TOKENS	128
#define Z_DISTINCT	4	/* KV blocks generated, each PUT as many keys */
#define Z_BLOCKS	64	/* PUT for each figure */
#define Z_DRAM		8
#define Z_TRIALS	3

struct z_data {
	size_t bs;
	void *blocks[2];	/* Z_DISTINCT blocks each of fp16, bf16 */
};

static int z_data_make(struct z_data *d)
{
	const struct kvgen_params p = {
		.d_model = 256, .kv_heads = 4, .head_dim = 128,
		.vocab = 4096, .seed = 20261206,
	};
	struct kvgen *g;
	int f, i, ret;

	ret = kvgen_new(&p, &g);
	if (ret)
		return ret;
	d->bs = kvgen_block_bytes(g, Z_TOKENS);
	for (f = 0; f < 2; f++) {
		d->blocks[f] = malloc(d->bs * Z_DISTINCT);
		if (!d->blocks[f]) {
			kvgen_free(g);
			return -ENOMEM;
		}
		/* One sequence: each block the next Z_TOKENS positions. */
		for (i = 0; i < Z_DISTINCT; i++)
			kvgen_block(g, i * Z_TOKENS, Z_TOKENS,
				    f ? KVGEN_BF16 : KVGEN_FP16,
				    (char *)d->blocks[f] + i * d->bs);
	}
	kvgen_free(g);
	return 0;
}

/* A pool of the bench drive: compressing with @alg (0: plain), @flags. */
static int z_pool(const struct z_data *d, uint32_t alg, uint32_t flags,
		  const char *tag, struct kvtier_pool **pool)
{
	struct kvtier_pool_params p;
	char name[KVTIER_NAME_MAX];
	int ret;

	snprintf(name, sizeof(name), "kvtier-bench-%d-%s", (int)getpid(), tag);
	kvtier_pool_params_init(&p, name, d->bs, Z_BLOCKS * (Z_TRIALS + 1));
	p.dram_blocks = Z_DRAM;
	ret = alg ? kvtier_pool_create_compressed(ctx, &p, alg, flags, pool) :
		    kvtier_pool_create(ctx, &p, pool);
	if (ret)
		return ret;
	return kvtier_pool_destroy(ctx, name);
}

/* PUT blocks [first, first + Z_BLOCKS) of format @fmt, and SYNC; ns. */
static int z_write(struct kvtier_pool *pool, const struct z_data *d, int fmt,
		   uint64_t first, uint64_t *ns)
{
	char *buf = malloc(d->bs);
	struct kvtier_block b;
	uint64_t i, t = now_ns();
	int ret = buf ? 0 : -ENOMEM;

	for (i = first; !ret && i < first + Z_BLOCKS; i++) {
		struct kvtier_key k = bench_key(3000000 + i);

		memcpy(buf, (char *)d->blocks[fmt] + (i % Z_DISTINCT) * d->bs,
		       d->bs);
		memcpy(buf, &i, sizeof(i));	/* a block of its own */
		kvtier_block_set(&b, &k, buf);
		ret = kvtier_put(pool, &b, 1, 0, NULL) ?: b.status;
	}
	if (!ret)
		ret = kvtier_sync(pool, NULL);
	*ns = now_ns() - t;
	free(buf);
	return ret;
}

/* GET the blocks of [first, first + Z_BLOCKS) only on NVMe; ns, exact. */
static int z_read(struct kvtier_pool *pool, const struct z_data *d, int fmt,
		  uint64_t first, uint64_t *ns)
{
	char *buf = malloc(d->bs), *want = malloc(d->bs);
	struct kvtier_block b;
	uint64_t i, t = 0, t0;
	int ret = buf && want ? 0 : -ENOMEM;

	for (i = first; !ret && i < first + Z_BLOCKS; i++) {
		struct kvtier_key k = bench_key(3000000 + i);

		kvtier_block_set(&b, &k, NULL);
		ret = kvtier_lookup(pool, &b, 1, 0, NULL);
		if (ret || b.status || b.tier != KVTIER_TIER_NVME)
			continue;
		kvtier_block_set(&b, &k, buf);
		t0 = now_ns();
		ret = kvtier_get(pool, &b, 1, 0, NULL) ?: b.status;
		t += now_ns() - t0;
		memcpy(want, (char *)d->blocks[fmt] + (i % Z_DISTINCT) * d->bs,
		       d->bs);
		memcpy(want, &i, sizeof(i));
		if (!ret && memcmp(buf, want, d->bs))
			ret = -EILSEQ;
	}
	*ns = t;
	free(buf);
	free(want);
	return ret;
}

/* The ratio of one compressor, format and planes. */
static int z_ratio(const struct z_data *d, uint32_t alg, int fmt, int planes)
{
	static const char * const algs[] = { "", "lz4", "lz4hc", "zstd" };
	struct kvtier_pool_stat st;
	struct kvtier_pool *pool;
	char name[96];
	uint64_t ns;
	int ret;

	ret = z_pool(d, alg, planes ? KVTIER_COMPRESS_SHUFFLE2 : 0, "ratio",
		     &pool);
	if (ret)
		return warn("compressed pool", ret);
	ret = z_write(pool, d, fmt, 0, &ns) ?: kvtier_stat(pool, &st);
	kvtier_pool_close(pool);
	if (ret)
		return warn("compressed writes", ret);
	snprintf(name, sizeof(name), "nvme_compress_ratio_kv_%s_%s%s",
		 algs[alg], fmt ? "bf16" : "fp16", planes ? "_planes" : "");
	figure(name, "%.3f", st.z_bytes_stored ?
	       (double)st.z_bytes_in / st.z_bytes_stored : 0);
	return 0;
}

/*
 * Write and read throughput of a pool compressing with @alg and planes,
 * and of a plain one, on the same fp16 blocks: best of Z_TRIALS each.
 */
static int z_speed(const struct z_data *d, uint32_t alg, const char *suffix)
{
	double w[2][Z_TRIALS], r[2][Z_TRIALS];
	struct kvtier_nvme_stat n0, n1;
	struct kvtier_pool *pool[2];
	uint64_t ns;
	char name[96];
	int i, t, ret;

	ret = z_pool(d, 0, 0, "plain", &pool[0]);
	if (ret)
		return warn("plain pool", ret);
	ret = z_pool(d, alg, KVTIER_COMPRESS_SHUFFLE2, "z", &pool[1]);
	if (ret) {
		kvtier_pool_close(pool[0]);
		return warn("compressed pool", ret);
	}
	ret = kvtier_nvme_stat(ctx, &n0);
	for (t = 0; !ret && t < Z_TRIALS; t++) {
		for (i = 0; !ret && i < 2; i++) {
			ret = z_write(pool[i], d, 0, t * Z_BLOCKS, &ns);
			w[i][t] = (double)Z_BLOCKS * d->bs / ns;
		}
		for (i = 0; !ret && i < 2; i++) {
			ret = z_read(pool[i], d, 0, t * Z_BLOCKS, &ns);
			r[i][t] = ns ? (double)(Z_BLOCKS - Z_DRAM) * d->bs / ns
				     : 0;
		}
	}
	kvtier_pool_close(pool[0]);
	kvtier_pool_close(pool[1]);
	if (!ret)
		ret = kvtier_nvme_stat(ctx, &n1);
	if (ret)
		return warn("compressed throughput", ret);
	snprintf(name, sizeof(name), "compressed_write_vs_plain%s", suffix);
	figure(name, "%.3f", best_of(w[1], Z_TRIALS) / best_of(w[0], Z_TRIALS));
	snprintf(name, sizeof(name), "compressed_read_vs_plain%s", suffix);
	figure(name, "%.3f", best_of(r[1], Z_TRIALS) / best_of(r[0], Z_TRIALS));
	snprintf(name, sizeof(name), "compressed_write_gbps%s", suffix);
	figure(name, "%.3f", best_of(w[1], Z_TRIALS));
	snprintf(name, sizeof(name), "compressed_read_gbps%s", suffix);
	figure(name, "%.3f", best_of(r[1], Z_TRIALS));
	if (!*suffix) {
		figure("plain_write_gbps", "%.3f", best_of(w[0], Z_TRIALS));
		figure("plain_read_gbps", "%.3f", best_of(r[0], Z_TRIALS));
		/* Both pools wrote: the plain one's stored bytes are its own. */
		figure("compressed_host_waf", "%.4f",
		       (double)(n1.bytes_written - n0.bytes_written) /
		       (n1.bytes_stored - n0.bytes_stored));
	}
	return 0;
}

static int bench_compress(void)
{
	struct z_data d = { 0 };
	char dev[256];
	uint64_t dev_bytes;
	struct kvtier_api api;
	int ret, fmt, planes;

	kvtier_api_info(ctx, &api);
	if (!(api.features & KVTIER_F_COMPRESS)) {
		printf("nvme_compress_ratio_kv: n/a (no KVTIER_F_COMPRESS)\n");
		return 0;
	}
	if (nvme_device(dev, sizeof(dev), &dev_bytes, "nvme_compress_ratio_kv"))
		return 0;
	ret = z_data_make(&d);
	if (ret)
		return warn("KV-like data", ret);
	ret = kvtier_nvme_attach(ctx, dev, KVTIER_NVME_FORMAT, 0);
	if (ret) {
		free(d.blocks[0]);
		free(d.blocks[1]);
		return warn("attach", ret);
	}
	for (fmt = 0; !ret && fmt < 2; fmt++)
		for (planes = 0; !ret && planes < 2; planes++)
			ret = z_ratio(&d, KVTIER_COMPRESS_LZ4, fmt, planes) ?:
			      z_ratio(&d, KVTIER_COMPRESS_ZSTD, fmt, planes);
	if (!ret)
		ret = z_speed(&d, KVTIER_COMPRESS_ZSTD, "");
	if (!ret)
		ret = z_speed(&d, KVTIER_COMPRESS_LZ4, "_lz4");
	kvtier_nvme_detach(ctx);
	free(d.blocks[0]);
	free(d.blocks[1]);
	return ret;
}

/* ---- layerwise_stall_vs_whole ----------------------------------------- */

#define LW_BLOCK	(1ULL << 20)	/* a block: LW_LAYERS layers */
#define LW_LAYERS	32
#define LW_CHAIN	32		/* blocks of the prefix */
#define LW_CHAINS	3		/* prefixes taking turns */
#define LW_TRIALS	3

/* Prefix @c's keys and its entries, every block only on NVMe; -errno. */
static int lw_chain(struct kvtier_pool *pool, uint32_t c,
		    struct kvtier_key *keys, struct kvtier_block *b)
{
	uint32_t i;
	int ret;

	for (i = 0; i < LW_CHAIN; i++) {
		keys[i] = bench_key(1000000 + c * LW_CHAIN + i);
		kvtier_block_set(&b[i], &keys[i], NULL);
	}
	ret = kvtier_lookup(pool, b, LW_CHAIN, 0, NULL);
	for (i = 0; !ret && i < LW_CHAIN; i++)
		if (b[i].status || b[i].tier != KVTIER_TIER_NVME)
			ret = -EAGAIN;
	return ret;
}

/*
 * The modeled runtime of a request whose 32-block prefix is only on NVMe,
 * each block 32 layers of 32 KiB. Whole: GET the prefix, then compute; the
 * stall is the GET. Layer-wise: GET layer l of every block while layer
 * l - 1 is computed (layerwise_load()); the stall is the waits. Compute is
 * as long as the whole load (a layer's share of it): the layer-wise stall
 * is then about one layer's read, where the whole stall is all of them.
 */
static int bench_layerwise(void)
{
	struct kvtier_pool_stat ps0, ps1;
	double whole[LW_TRIALS], layered[LW_TRIALS], c_ns;
	struct kvtier_key keys[LW_CHAIN];
	struct kvtier_block b[LW_CHAIN];
	struct layerwise_ctx *lw = NULL;
	struct kvtier_pool_params p;
	struct kvtier_pool *pool = NULL;
	struct layerwise r;
	char dev[256], name[KVTIER_NAME_MAX];
	void *bufs[LW_CHAIN];
	uint64_t dev_bytes, t0, bad = 0;
	char *buf = NULL;
	uint32_t c, i;
	int ret, t, attached = 0;
	struct kvtier_api api;

	kvtier_api_info(ctx, &api);
	if (!(api.features & KVTIER_F_PARTS)) {
		printf("layerwise_stall_vs_whole: n/a (no KVTIER_F_PARTS)\n");
		return 0;
	}
	if (nvme_device(dev, sizeof(dev), &dev_bytes, "layerwise_stall_vs_whole"))
		return 0;
	ret = kvtier_nvme_attach(ctx, dev, KVTIER_NVME_FORMAT, 0);
	if (ret) {
		printf("layerwise_stall_vs_whole: n/a (attach: %s)\n",
		       strerror(-ret));
		return ret;
	}
	attached = 1;
	snprintf(name, sizeof(name), "kvtier-bench-%d-layers", (int)getpid());
	kvtier_pool_params_init(&p, name, LW_BLOCK, 4 * LW_CHAINS * LW_CHAIN);
	p.dram_blocks = LW_CHAIN;
	ret = kvtier_pool_create_parts(ctx, &p, LW_LAYERS, &pool);
	if (!ret)
		ret = kvtier_alloc_staging(pool, LW_CHAIN * LW_BLOCK,
					   (void **)&buf);
	if (!ret)
		ret = layerwise_new(LW_CHAIN, LW_LAYERS, &lw);
	if (ret) {
		warn("the layer pool", ret);
		goto out;
	}
	for (i = 0; i < LW_CHAIN; i++)
		bufs[i] = buf + i * LW_BLOCK;

	/* The prefixes, durable; each evicts the one before from DRAM. */
	for (c = 0; c < LW_CHAINS; c++) {
		for (i = 0; i < LW_CHAIN; i++) {
			keys[i] = bench_key(1000000 + c * LW_CHAIN + i);
			page_stamp(bufs[i], LW_BLOCK, c * LW_CHAIN + i);
			kvtier_block_set(&b[i], &keys[i], bufs[i]);
		}
		ret = kvtier_put(pool, b, LW_CHAIN, 0, NULL);
		for (i = 0; !ret && i < LW_CHAIN; i++)
			ret = b[i].status;
		if (!ret)
			ret = kvtier_sync(pool, NULL);
		if (ret) {
			warn("PUT the prefixes", ret);
			goto out;
		}
	}

	/* Whole loads: prefix t % 3 is read back, evicting the one before. */
	for (t = 0; t < LW_TRIALS; t++) {
		c = t % LW_CHAINS;
		ret = lw_chain(pool, c, keys, b);
		if (ret)
			break;
		for (i = 0; i < LW_CHAIN; i++)
			kvtier_block_set(&b[i], &keys[i], bufs[i]);
		t0 = now_ns();
		ret = kvtier_get(pool, b, LW_CHAIN, 0, NULL);
		whole[t] = now_ns() - t0;
		for (i = 0; !ret && i < LW_CHAIN; i++)
			bad += b[i].status || page_check(bufs[i], LW_BLOCK, c * LW_CHAIN + i);
		if (ret)
			break;
	}
	if (ret) {
		printf("layerwise_stall_vs_whole: n/a (whole loads: %s)\n",
		       strerror(-ret));
		goto out;
	}
	c_ns = best_of(whole, LW_TRIALS) / LW_LAYERS;

	/*
	 * Layer-wise loads of the two prefixes the last whole load left only
	 * on NVMe, in turns: they stay there.
	 */
	kvtier_stat(pool, &ps0);
	for (t = 0; t < LW_TRIALS; t++) {
		c = t % (LW_CHAINS - 1);
		ret = lw_chain(pool, c, keys, b);
		if (ret)
			break;
		memset(buf, 0, LW_CHAIN * LW_BLOCK);
		ret = layerwise_load(lw, pool, keys, bufs, LW_CHAIN, LW_BLOCK,
				     (uint64_t)c_ns, &r);
		layered[t] = r.stall_ns;
		for (i = 0; !ret && i < LW_CHAIN; i++)
			bad += i >= r.usable || page_check(bufs[i], LW_BLOCK, c * LW_CHAIN + i);
		if (ret)
			break;
	}
	kvtier_stat(pool, &ps1);
	if (ret) {
		printf("layerwise_stall_vs_whole: n/a (layer-wise loads: %s)\n",
		       strerror(-ret));
		goto out;
	}
	figure("layerwise_stall_vs_whole", "%.3f",
	       best_of(layered, LW_TRIALS) / best_of(whole, LW_TRIALS));
	figure("layerwise_stall_ms", "%.2f", best_of(layered, LW_TRIALS) / 1e6);
	figure("whole_stall_ms", "%.2f", best_of(whole, LW_TRIALS) / 1e6);
	figure("layerwise_compute_ms", "%.2f", c_ns * LW_LAYERS / 1e6);
	figure("layerwise_part_reads", "%.0f",
	       (double)(ps1.part_reads - ps0.part_reads));
	figure("layerwise_promotions", "%.0f",
	       (double)(ps1.promotions - ps0.promotions));
	figure("layerwise_verify_errors", "%.0f", (double)bad);
out:
	layerwise_free(lw);
	if (pool) {
		kvtier_free_staging(pool, buf, LW_CHAIN * LW_BLOCK);
		kvtier_pool_close(pool);
		kvtier_pool_destroy(ctx, name);
	}
	if (attached && kvtier_nvme_detach(ctx))
		warn("detach", -EBUSY);
	return ret;
}

#define URING_CMDS	64
#define URING_ROUNDS	2000

/* 64 LOOKUPs of one key each: one io_uring submission vs 64 ioctls. */
static int bench_uring(void)
{
	static struct kvtier_block b[URING_CMDS];
	static struct kvtier_batch cmd[URING_CMDS];
	struct kvtier_ring_cqe cqe[URING_CMDS];
	double t_ring[TRIALS], t_ioctl[TRIALS];
	struct kvtier_pool *pool;
	struct kvtier_ring *ring;
	void *buf;
	int ret, t, r, i, n;

	ret = bench_pool("uring", LOOKUP_BLOCK, URING_CMDS, &pool);
	if (ret)
		return warn("uring pool", ret);
	ret = kvtier_ring_open(&ring, URING_CMDS);
	if (ret) {
		kvtier_pool_close(pool);
		printf("uring_lookup64_vs_ioctl64: n/a (io_uring: %s)\n",
		       strerror(-ret));
		return 0;
	}
	buf = calloc(URING_CMDS, LOOKUP_BLOCK);
	ret = buf ? put_range(pool, 0, URING_CMDS, buf,
			      URING_CMDS * LOOKUP_BLOCK) : -ENOMEM;
	free(buf);
	if (ret)
		goto out;
	for (i = 0; i < URING_CMDS; i++) {
		struct kvtier_key k = bench_key(i);

		kvtier_block_set(&b[i], &k, NULL);
		memset(&cmd[i], 0, sizeof(cmd[i]));
		cmd[i].blocks = (uintptr_t)&b[i];
		cmd[i].count = 1;
	}
	for (t = 0; t < TRIALS && !ret; t++) {
		uint64_t t0 = now_ns();

		for (r = 0; r < URING_ROUNDS && !ret; r++) {
			for (i = 0; i < URING_CMDS && !ret; i++)
				ret = kvtier_ring_queue(ring, pool, KVTIER_IOC_LOOKUP,
							&cmd[i], i);
			if (!ret)
				ret = kvtier_ring_submit(ring) == URING_CMDS ? 0 : -EIO;
			for (n = 0; !ret && n < URING_CMDS; ) {
				int got;

				got = kvtier_ring_reap(ring, cqe, URING_CMDS,
						       URING_CMDS - n);
				if (got < 0)
					ret = got;
				for (i = 0; !ret && i < got; i++)
					if (cqe[i].res)
						ret = cqe[i].res;
				n += got > 0 ? got : 0;
			}
		}
		t_ring[t] = (now_ns() - t0) / 1e9;
		t0 = now_ns();
		for (r = 0; r < URING_ROUNDS && !ret; r++)
			for (i = 0; i < URING_CMDS && !ret; i++)
				ret = kvtier_lookup(pool, &b[i], 1, 0, NULL);
		t_ioctl[t] = (now_ns() - t0) / 1e9;
	}
	if (!ret) {
		figure("uring_lookup64_vs_ioctl64", "%.3f",
		       best_of(t_ring, TRIALS) / best_of(t_ioctl, TRIALS));
		figure("uring_lookup64_us", "%.1f",
		       best_of(t_ring, TRIALS) / URING_ROUNDS * 1e6);
		figure("ioctl_lookup64_us", "%.1f",
		       best_of(t_ioctl, TRIALS) / URING_ROUNDS * 1e6);
	}
out:
	if (ret)
		warn("uring", ret);
	kvtier_ring_close(ring);
	kvtier_pool_close(pool);
	return ret;
}

/* ---- user_mover_vs_emul ----------------------------------------------- */

#define HBM_BLOCK	(256ULL << 10)
#define HBM_BLOCKS	256		/* 64 MiB: within hbm_emul_mb's 256 */
#define HBM_GBPS_PARAM	"/sys/module/kvtier/parameters/hbm_emul_gbps"

struct hbm_mover {
	struct kvtier_mover *m;
	int stop;			/* __atomic */
	int err;
};

static void *hbm_mover_loop(void *arg)
{
	struct hbm_mover *hm = arg;
	int ret;

	while (!__atomic_load_n(&hm->stop, __ATOMIC_ACQUIRE)) {
		ret = kvtier_mover_run(hm->m, 50);
		if (ret == -EPIPE)
			break;
		if (ret < 0) {
			hm->err = ret;
			break;
		}
	}
	return NULL;
}

static int gbps_param(int set)
{
	FILE *f = fopen(HBM_GBPS_PARAM, set >= 0 ? "w" : "r");
	int v = -1;

	if (!f)
		return -1;
	if (set >= 0)
		v = fprintf(f, "%d\n", set) < 0 ? -1 : set;
	else if (fscanf(f, "%d", &v) != 1)
		v = -1;
	if (fclose(f))
		v = -1;
	return v;
}

/*
 * Stage HBM_BLOCKS blocks, PUT first (all in DRAM), into an HBM arena of
 * @backend; *secs the time of the PREFETCH to HBM until its completion. The
 * user arena's bytes are checked against what was PUT.
 */
static int hbm_stage_run(uint32_t backend, const void *buf, double *secs)
{
	const size_t bytes = HBM_BLOCKS * HBM_BLOCK;
	struct kvtier_prefetch_args a = { .group = 1, .tier = KVTIER_TIER_HBM };
	static struct kvtier_hint h[HBM_BLOCKS];
	static struct kvtier_block b[HBM_BLOCKS];
	struct hbm_mover hm = { 0 };
	struct kvtier_hbm_stat st;
	struct kvtier_completion c;
	struct kvtier_pool *pool;
	pthread_t thr;
	void *arena = NULL;
	int ret, mfd = -1, running = 0;
	uint64_t t0;
	uint32_t i, ready;

	ret = bench_pool(backend == KVTIER_HBM_USER ? "hbm-user" : "hbm-emul",
			 HBM_BLOCK, HBM_BLOCKS, &pool);
	if (ret)
		return ret;
	ret = put_range(pool, 0, HBM_BLOCKS, (void *)buf, bytes);
	if (!ret)
		ret = kvtier_hbm_attach(pool, backend, HBM_BLOCKS,
					backend == KVTIER_HBM_USER ?
					&mfd : NULL);
	if (!ret && backend == KVTIER_HBM_USER) {
		ret = posix_memalign(&arena, 4096, bytes) ? -ENOMEM : 0;
		if (ret)
			close(mfd);
		else
			memset(arena, 0, bytes);	/* faulted in before */
		if (!ret)
			ret = kvtier_mover_open(pool, mfd, kvtier_mover_memcpy,
						arena, &hm.m);
		if (!ret)
			ret = -pthread_create(&thr, NULL, hbm_mover_loop, &hm);
		running = !ret;
	}
	for (i = 0; i < HBM_BLOCKS; i++) {
		struct kvtier_key k = bench_key(i);

		kvtier_hint_set(&h[i], &k);
		kvtier_block_set(&b[i], &k, NULL);
	}
	t0 = now_ns();
	if (!ret)
		ret = kvtier_prefetch(pool, h, HBM_BLOCKS, &a, NULL, NULL);
	if (!ret)
		ret = kvtier_wait_group(pool, a.group, &c, 60000);
	*secs = (now_ns() - t0) / 1e9;
	if (!ret && (c.status || c.ready != HBM_BLOCKS))
		ret = c.status ? c.status : -EIO;
	if (!ret)
		ret = kvtier_hbm_stat(pool, &st);
	if (!ret && st.to_dev != HBM_BLOCKS)
		ret = -EIO;
	/* The user arena holds the blocks' bytes, each at its slot. */
	if (!ret && arena)
		ret = kvtier_lookup(pool, b, HBM_BLOCKS, 0, &ready);
	for (i = 0; !ret && arena && i < HBM_BLOCKS; i++)
		if (b[i].tier != KVTIER_TIER_HBM || b[i].slot >= HBM_BLOCKS ||
		    memcmp((char *)arena + b[i].slot * HBM_BLOCK,
			   (const char *)buf + i * HBM_BLOCK, HBM_BLOCK))
			ret = -EIO;
	if (running) {
		__atomic_store_n(&hm.stop, 1, __ATOMIC_RELEASE);
		pthread_join(thr, NULL);
		if (!ret && hm.err)
			ret = hm.err;
	}
	kvtier_mover_close(hm.m);
	free(arena);
	kvtier_pool_close(pool);
	return ret;
}

static int bench_hbm(void)
{
	const size_t bytes = HBM_BLOCKS * HBM_BLOCK;
	double t_user = 0, t_emul = 0;
	int ret, old = gbps_param(-1);
	void *buf;

	if (old > 0 && gbps_param(0) != 0) {
		printf("user_mover_vs_emul: n/a (cannot set hbm_emul_gbps to 0)\n");
		return 0;
	}
	buf = malloc(bytes);
	if (!buf)
		return warn("hbm buffer", -ENOMEM);
	memset(buf, 0x5a, bytes);
	ret = hbm_stage_run(KVTIER_HBM_EMUL, buf, &t_emul);
	if (!ret)
		ret = hbm_stage_run(KVTIER_HBM_USER, buf, &t_user);
	free(buf);
	if (old > 0)
		gbps_param(old);
	if (ret == -EOPNOTSUPP || ret == -ENOTTY) {
		printf("user_mover_vs_emul: n/a (no HBM tier: %s)\n",
		       strerror(-ret));
		return 0;
	}
	if (ret)
		return warn("hbm", ret);
	figure("user_mover_vs_emul", "%.3f", t_emul / t_user);
	figure("hbm_user_stage_gbps", "%.3f", bytes / t_user / 1e9);
	figure("hbm_emul_stage_gbps", "%.3f", bytes / t_emul / 1e9);
	return 0;
}

/* ---- commit_kernel_copies_per_byte and commit_vs_put ------------------ */

#define RESV_BLOCK	COPY_BLOCK
#define RESV_BATCH	64
#define RESV_ROUNDS	4

/* What a runtime writes into a block: its bytes, made here. */
static void resv_fill(void *p, uint64_t key)
{
	uint64_t *w = p;
	size_t i;

	for (i = 0; i < RESV_BLOCK / sizeof(*w); i++)
		w[i] = key ^ i;
}

/* Store RESV_BATCH blocks by RESERVE, fill, COMMIT (or staging + PUT). */
static int resv_batch(struct kvtier_pool *pool, struct kvtier_map *win,
		      char *staging, struct kvtier_block *b, uint64_t first)
{
	uint32_t i, done;
	int ret;

	for (i = 0; i < RESV_BATCH; i++) {
		struct kvtier_key k = bench_key(first + i);

		kvtier_block_set(&b[i], &k,
				 win ? NULL : staging + i * RESV_BLOCK);
		if (!win)
			resv_fill(staging + i * RESV_BLOCK, first + i);
	}
	if (!win) {
		ret = kvtier_put(pool, b, RESV_BATCH, 0, &done);
		return ret ?: done == RESV_BATCH ? 0 : b[0].status ?: -EIO;
	}
	ret = kvtier_reserve(pool, b, RESV_BATCH, 0, &done);
	if (ret || done != RESV_BATCH)
		return ret ?: -ENOSPC;
	for (i = 0; i < RESV_BATCH; i++)
		resv_fill(kvtier_reserved_ptr(win, b[i].addr), first + i);
	ret = kvtier_commit(pool, b, RESV_BATCH, 0, &done);
	return ret ?: done == RESV_BATCH ? 0 : -EIO;
}

/* Time RESV_ROUNDS batches one way; the keys dropped after, untimed. */
static int resv_trial(struct kvtier_pool *pool, struct kvtier_map *win,
		      char *staging, struct kvtier_block *b, double *secs)
{
	uint64_t t = now_ns(), r;
	uint32_t done;
	int ret = 0;

	for (r = 0; r < RESV_ROUNDS && !ret; r++)
		ret = resv_batch(pool, win, staging, b + r * RESV_BATCH,
				 r * RESV_BATCH);
	*secs = (now_ns() - t) / 1e9;
	for (r = 0; r < RESV_ROUNDS * RESV_BATCH; r++)
		b[r].buf = 0;		/* DROP takes keys alone */
	if (!ret)
		ret = kvtier_drop(pool, b, RESV_ROUNDS * RESV_BATCH, 0, &done);
	return ret;
}

static int bench_reserve(void)
{
	const double bytes = (double)RESV_ROUNDS * RESV_BATCH * RESV_BLOCK;
	double t_put[TRIALS], t_resv[TRIALS], c0[3], c1[3], copied = 0;
	struct kvtier_block *b = NULL;
	struct kvtier_map *win = NULL;
	struct kvtier_pool *pool;
	char *staging = NULL;
	int ret, i;

	ret = bench_pool("reserve", RESV_BLOCK, 2 * RESV_ROUNDS * RESV_BATCH,
			 &pool);
	if (ret)
		return warn("create the reserve pool", ret);
	ret = kvtier_map_reserved(pool, &win);
	if (ret == -EOPNOTSUPP) {
		printf("commit_kernel_copies_per_byte: n/a (no KVTIER_F_RESERVE)\n");
		ret = 0;
		goto out;
	}
	if (ret) {
		warn("map the reservation window", ret);
		goto out;
	}
	b = calloc(RESV_ROUNDS * RESV_BATCH, sizeof(*b));
	ret = kvtier_alloc_staging(pool, RESV_BATCH * RESV_BLOCK,
				   (void **)&staging);
	if (ret || !b) {
		warn("staging buffer", ret ?: -ENOMEM);
		goto out;
	}
	memset(staging, 0, RESV_BATCH * RESV_BLOCK);
	for (i = -1; i < TRIALS && !ret; i++) {		/* -1: warm-up */
		double tp, tr;

		ret = resv_trial(pool, NULL, staging, b, &tp);
		if (!ret && cpu_bytes(c0))
			ret = -EIO;
		if (!ret)
			ret = resv_trial(pool, win, staging, b, &tr);
		if (!ret && cpu_bytes(c1))
			ret = -EIO;
		if (ret || i < 0)
			continue;
		copied += c1[0] - c0[0];
		t_put[i] = tp;
		t_resv[i] = tr;
	}
	if (ret) {
		warn("reserve and commit", ret);
		goto out;
	}
	figure("commit_kernel_copies_per_byte", "%.3f",
	       copied / (bytes * TRIALS));
	figure("commit_vs_put", "%.3f",
	       best_of(t_put, TRIALS) / best_of(t_resv, TRIALS));
	figure("commit_store_gbps", "%.3f",
	       bytes / best_of(t_resv, TRIALS) / 1e9);
	figure("put_store_gbps", "%.3f", bytes / best_of(t_put, TRIALS) / 1e9);
out:
	kvtier_free_staging(pool, staging, RESV_BATCH * RESV_BLOCK);
	free(b);
	kvtier_unmap(win);
	kvtier_pool_close(pool);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(void);
	} parts[] = {
		{ "copy", bench_copy },
		{ "sg", bench_sg },
		{ "pin", bench_pin },
		{ "lookup", bench_lookup },
		{ "nvme", bench_nvme },
		{ "uring", bench_uring },
		{ "hbm", bench_hbm },
		{ "reserve", bench_reserve },
		{ "layerwise", bench_layerwise },
		{ "events", bench_events },
		{ "compress", bench_compress },
		{ "latency", bench_latency },
	};
	const size_t nparts = sizeof(parts) / sizeof(parts[0]);
	int ret, i, run[sizeof(parts) / sizeof(parts[0])];
	size_t k;

	for (k = 0; k < nparts; k++)
		run[k] = argc == 1;

	for (i = 1; i < argc; i++) {
		for (k = 0; k < nparts && strcmp(argv[i], parts[k].name); k++)
			;
		if (k < nparts) {
			run[k] = 1;
			continue;
		}
		int help = !strcmp(argv[i], "-h") || !strcmp(argv[i], "--help");

		fprintf(help ? stdout : stderr,
			"usage: %s [copy] [sg] [pin] [lookup] [nvme] [uring] [hbm] [reserve]\n"
			"       [layerwise] [events] [compress] [latency]\n"
			"Prints the DRAM-, NVMe- and HBM-tier figures as 'name: value' lines;\n"
			"the parts named, or all of them.\n"
			"KVTIER_BENCH_NVME=DEV: the drive the NVMe figures overwrite (default:\n"
			"/dev/nvme0n1 if it is a kvtier-vm drive); 0: skip them.\n", prog);
		return help ? 0 : 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	ret = kvtier_open(&ctx, KVTIER_FEATURES_ALL);
	if (ret) {
		fprintf(stderr, "%s: /dev/kvtier: %s\n", prog, strerror(-ret));
		return 1;
	}
	for (k = 0; k < nparts; k++)
		if (run[k])
			parts[k].fn();
	kvtier_close(ctx);
	return 0;
}
