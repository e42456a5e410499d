// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier-bench latency: the latency of a GET served from NVMe, as a
 * distribution, beside fio's reads of the same size at the same depth.
 *
 * A pool of LAT_BLOCKS blocks of 64 KiB whose DRAM share holds LAT_DRAM is
 * filled and synced; then, at depths 1, 8 and 32 (that many threads, each
 * GETting one block at a time), LAT_SAMPLES GETs of blocks only on NVMe,
 * each block once, each timed around its ioctl; three such trials a depth,
 * and fio's three runs, each side's lowest p99 kept (best of 3). The same again with a
 * second pool writing meanwhile (PUT batches of 4 MiB through a DRAM share
 * of 4 MiB, 32 MiB/s at most: the segment writer demoting). fio runs after, on the raw
 * device: tools/fio/nvme-lat-read.fio at the same block size and depths,
 * then nvme-lat-mixed.fio, whose writer is held to the rate the tier's
 * demotions reached.
 *
 *   nvme_get_p99_vs_fio_p99  the largest over the depths of GET's p99 / fio's
 *			(goal <= 2); each depth's beside it (_qdN)
 *   nvme_get_p99_under_writes_vs_idle  the largest over the depths of GET's
 *			p99 with the writer running / without (goal <= 3)
 *   nvme_get_{p50,p99,p999}_us_qdN[_writes], fio_read_*_us_qdN[_writes]
 *			the absolute figures, microseconds
 *   nvme_lat_writes_overlap  share of the loaded GETs taken while the writer
 *			was still writing (it has the device's free space
 *			only; below 1 the loaded figures are flattered)
 *   nvme_read_io_p99_us_qdN[_writes]  the module's own histogram
 *			(/sys/kernel/kvtier/nvme_read_latency) over each
 *			depth's GETs: a block's read from its submission to
 *			its copy verified, the upper edge of the bucket
 *			holding its p99 (buckets are 25% wide)
 *   nvme_read_io_p99_under_writes_vs_idle  the largest over the depths of
 *			that p99 with the writer running / without: the
 *			device's share of GET's, without the CPU's
 *   nvme_read_io_p99_vs_fio_p99  the largest over the depths of that p99
 *			(idle) / fio's: the read without the caller's wait
 *			for a CPU, which under QEMU TCG is most of GET's tail
 *			at depth 32 (32 threads on 2 emulated CPUs)
 *   nvme_get_ring_p99_vs_fio_p99  the same GETs (idle) from one thread
 *			through io_uring, the depth's GETs in flight at once, as
 *			fio keeps its depth: the largest over the depths of
 *			their p99 / fio's (goal <= 2); nvme_get_ring_*_us_qdN
 *			beside
 *   nvme_get_sleeps_per_get_qdN  the reader threads' voluntary context
 *			switches (getrusage) per GET, idle, in the trial kept:
 *			a GET that waits for its read sleeps once; more is
 *			wakeups meant for other GETs' blocks
 *   nvme_get_p99_reads_first_vs_not  the largest over the depths of the
 *			loaded GET's p99 with the module parameter reads_first
 *			on (the writer keeps one segment in flight while block
 *			reads are) / off (four): its trials alternate, on and
 *			off, best of 3 each; the figures with it off end in
 *			_writes_rf0
 *
 * Then writes alone, the drive's volatile write cache on and off as the
 * kernel sees it (/sys/block/DEV/queue/write_cache "write back" or "write
 * through": the block layer then drops the segment writer's flush and
 * FUA, as for a drive with power-loss protection), 96 MiB PUT and SYNCed
 * a trial, best of 3 each, alternating:
 *
 *   nvme_write_wc_on_vs_off  the device write rate with the cache on / off:
 *			what the flush ahead of each summary and the FUA
 *			summary cost; nvme_write_gbps_wc_{on,off} and the
 *			segments' p99 (nvme_segment_p99_us_wc_{on,off}) beside
 *
 * With KVTIER_BENCH_OUT set, the percentiles go to $KVTIER_BENCH_OUT/
 * latency.csv too (series,qd,percentile,us), for tools/bench-plot.sh.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <kvtier.h>

#include "bench.h"
#include "util.h"

#define LAT_BLOCK	(64ULL << 10)
#define LAT_BLOCKS	4096ULL		/* 256 MiB to read from */
#define LAT_DRAM	64		/* the reader pool's DRAM share */
#define LAT_SAMPLES	2000		/* GETs at each depth, a trial */
#define LAT_TRIALS	3		/* each side: the best of */
#define LAT_W_BLOCK	(256ULL << 10)
#define LAT_W_BATCH	16		/* 4 MiB a writer PUT */
#define LAT_W_DRAM	16
#define LAT_W_RATE	(32ULL << 20)	/* the writer's bytes/s at most */
#define LAT_FIO_WBS	(1ULL << 20)	/* nvme-lat-mixed.fio's writes */
#define LAT_WC_BYTES	(96ULL << 20)	/* a write trial, cache on or off */

static const int lat_qd[] = { 1, 8, 32 };
#define LAT_NQD		(sizeof(lat_qd) / sizeof(lat_qd[0]))

static const double lat_pct[] = {
	1, 5, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9,
};
#define LAT_NPCT	(sizeof(lat_pct) / sizeof(lat_pct[0]))
#define LAT_P50		4
#define LAT_P99		8
#define LAT_P999	10

enum { LAT_IDLE, LAT_WRITES, LAT_NCOND };
static const char *const lat_cond[] = { "", "_writes" };

/* Percentiles of one series, microseconds; 0 when not measured. */
struct lat_pcts {
	double us[LAT_NPCT];
	double sleeps;		/* the threads' voluntary switches a GET */
};

struct lat_run {
	struct kvtier_pool *pool;
	const uint64_t *idx;	/* blocks only on NVMe, random order */
	uint64_t nidx;
	uint64_t next;		/* the next of idx to take */
	double *us;		/* a sample each */
	uint64_t bad;		/* missed, failed or wrong bytes */
	int err;
	pthread_mutex_t lock;
	const volatile int *writing;	/* the writer is still writing */
	uint64_t overlap;	/* samples taken while it was */
	uint64_t sleeps;	/* the threads' voluntary context switches */
};

struct lat_writer {
	struct kvtier_pool *pool;
	uint64_t key0;		/* its first key */
	uint64_t blocks;	/* its budget */
	volatile int stop;
	volatile int writing;
	uint64_t written;	/* blocks PUT */
	double secs;
	int err;
};

static int lat_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentiles of @n samples (sorted here). */
static void lat_pcts_of(double *us, uint64_t n, struct lat_pcts *p)
{
	size_t i;

	memset(p, 0, sizeof(*p));
	if (!n)
		return;
	qsort(us, n, sizeof(*us), lat_cmp);
	for (i = 0; i < LAT_NPCT; i++) {
		uint64_t rank = (uint64_t)(lat_pct[i] / 100 * n + 0.999999);

		p->us[i] = us[rank ? rank - 1 : 0];
	}
}

static void *lat_reader(void *arg)
{
	struct lat_run *r = arg;
	char *buf = aligned_alloc(4096, LAT_BLOCK);
	struct rusage ru0, ru1;
	struct kvtier_block b;
	uint64_t i, t;
	int ret;

	if (!buf) {
		r->err = -ENOMEM;
		return NULL;
	}
	getrusage(RUSAGE_THREAD, &ru0);
	for (;;) {
		int during;

		pthread_mutex_lock(&r->lock);
		i = r->next < r->nidx && !r->err ? r->next++ : UINT64_MAX;
		pthread_mutex_unlock(&r->lock);
		if (i == UINT64_MAX)
			break;
		struct kvtier_key k = bench_key(r->idx[i]);

		kvtier_block_set(&b, &k, buf);
		during = r->writing && *r->writing;
		t = now_ns();
		ret = kvtier_get(r->pool, &b, 1, 0, NULL);
		t = now_ns() - t;
		during = during && r->writing && *r->writing;
		pthread_mutex_lock(&r->lock);
		if (ret && !r->err)
			r->err = ret;
		else if (b.status || page_check(buf, LAT_BLOCK, r->idx[i]))
			r->bad++;
		r->us[i] = t / 1e3;
		r->overlap += during;
		pthread_mutex_unlock(&r->lock);
	}
	getrusage(RUSAGE_THREAD, &ru1);
	pthread_mutex_lock(&r->lock);
	r->sleeps += ru1.ru_nvcsw - ru0.ru_nvcsw;
	pthread_mutex_unlock(&r->lock);
	free(buf);
	return NULL;
}

/*
 * LAT_SAMPLES GETs at depth @qd; their percentiles in *@p, and the p99 of
 * the module's own read histogram over them in *@io99 (0 if none).
 */
static int lat_gets(struct kvtier_pool *pool, int qd, uint64_t samples,
		    uint64_t *idx, uint64_t *rng, const volatile int *writing,
		    struct lat_pcts *p, double *io99, uint64_t *overlap,
		    uint64_t *bad)
{
	uint64_t h0[KVT_LAT_BUCKETS], h1[KVT_LAT_BUCKETS];
	int hist;
	struct lat_run r = {
		.pool = pool, .idx = idx, .writing = writing,
		.lock = PTHREAD_MUTEX_INITIALIZER,
	};
	pthread_t th[32];
	int64_t m;
	int i, n = 0;

	m = nvme_only(pool, LAT_BLOCKS, idx, rng);
	if (m < 0)
		return warn("LOOKUP", (int)m);
	r.nidx = (uint64_t)m < samples ? (uint64_t)m : samples;
	if (r.nidx < samples / 2) {
		fprintf(stderr, "%s: latency: only %lld blocks only on NVMe\n",
			prog, (long long)m);
		return -ENOENT;
	}
	r.us = calloc(r.nidx, sizeof(*r.us));
	if (!r.us)
		return -ENOMEM;
	hist = lat_hist_read("read", h0);
	for (i = 0; i < qd; i++)
		if (!pthread_create(&th[n], NULL, lat_reader, &r))
			n++;
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	*io99 = !hist && !lat_hist_read("read", h1) ?
		lat_hist_pct(h0, h1, 99) : 0;
	if (n < qd && !r.err)
		r.err = -EAGAIN;
	if (!r.err) {
		lat_pcts_of(r.us, r.nidx, p);
		p->sleeps = (double)r.sleeps / r.nidx;
	}
	*overlap += r.overlap;
	*bad += r.bad;
	free(r.us);
	return r.err;
}

/*
 * The same GETs from one thread through io_uring, @qd in flight, the way
 * fio keeps its depth: no thread per GET waiting for a CPU to come back
 * to. kmod/uring.c reissues a GET in one of io_uring's workers, where it
 * may wait; each is timed from its queueing to its completion reaped.
 * Percentiles in *@p.
 */
static int lat_ring_gets(struct kvtier_pool *pool, int qd, uint64_t samples,
			 uint64_t *idx, uint64_t *rng, struct lat_pcts *p,
			 uint64_t *bad)
{
	struct kvtier_block b[32];
	struct kvtier_batch bt[32];
	struct kvtier_ring_cqe c[32];
	uint64_t t0[32], which[32], next = 0, done = 0, nidx;
	uint32_t free_slot[32], nfree = 0;
	struct kvtier_ring *ring = NULL;
	double *us = NULL;
	char *buf = NULL;
	int64_t m;
	int i, got, ret;

	if (qd < 1 || qd > 32)
		return -EINVAL;
	m = nvme_only(pool, LAT_BLOCKS, idx, rng);
	if (m < 0)
		return warn("LOOKUP", (int)m);
	nidx = (uint64_t)m < samples ? (uint64_t)m : samples;
	if (nidx < samples / 2)
		return -ENOENT;
	us = calloc(nidx, sizeof(*us));
	buf = aligned_alloc(4096, (size_t)qd * LAT_BLOCK);
	ret = us && buf ? kvtier_ring_open(&ring, qd) : -ENOMEM;
	for (i = qd - 1; i >= 0; i--)
		free_slot[nfree++] = i;
	while (!ret && done < nidx) {
		while (nfree && next < nidx) {
			uint32_t sl = free_slot[--nfree];
			struct kvtier_key k = bench_key(idx[next]);

			kvtier_block_set(&b[sl], &k, buf + sl * LAT_BLOCK);
			memset(&bt[sl], 0, sizeof(bt[sl]));
			bt[sl].blocks = (uintptr_t)&b[sl];
			bt[sl].count = 1;
			which[sl] = next++;
			t0[sl] = now_ns();
			ret = kvtier_ring_queue(ring, pool, KVTIER_IOC_GET,
						&bt[sl], sl);
			if (ret)
				break;
		}
		if (ret || (ret = kvtier_ring_submit(ring)) < 0)
			break;
		got = kvtier_ring_reap(ring, c, 32, 1);
		if (got < 0) {
			ret = got;
			break;
		}
		ret = 0;
		for (i = 0; i < got; i++) {
			uint32_t sl = c[i].user_data;

			us[which[sl]] = (now_ns() - t0[sl]) / 1e3;
			if (c[i].res || b[sl].status ||
			    page_check(buf + sl * LAT_BLOCK, LAT_BLOCK,
				       idx[which[sl]]))
				(*bad)++;
			free_slot[nfree++] = sl;
			done++;
		}
	}
	/* On an error, reap what is in flight: it writes into buf and bt. */
	while (ring && nfree < (uint32_t)qd) {
		got = kvtier_ring_reap(ring, c, 32, 1);
		if (got <= 0)
			break;
		nfree += got;
	}
	if (!ret)
		lat_pcts_of(us, nidx, p);
	kvtier_ring_close(ring);
	free(buf);
	free(us);
	return ret;
}

/*
 * lat_gets() LAT_TRIALS times: the trial of the lowest p99 in *@p, *@io99,
 * as each side of a ratio is the best of 3.
 */
static int lat_best_gets(struct kvtier_pool *pool, int qd, uint64_t *idx,
			 uint64_t *rng, const volatile int *writing,
			 struct lat_pcts *p, double *io99, uint64_t *overlap,
			 uint64_t *bad)
{
	struct lat_pcts one;
	double io1;
	int t, ret = 0;

	memset(p, 0, sizeof(*p));
	*io99 = 0;
	for (t = 0; t < LAT_TRIALS && !ret; t++) {
		ret = lat_gets(pool, qd, LAT_SAMPLES, idx, rng, writing, &one,
			       &io1, overlap, bad);
		if (!ret && (!p->us[LAT_P99] || one.us[LAT_P99] < p->us[LAT_P99])) {
			*p = one;
			*io99 = io1;
		}
	}
	return ret;
}

/* The module parameter reads_first, set to @on: 0, or -errno. */
static int lat_reads_first(int on)
{
	FILE *f = fopen("/sys/module/kvtier/parameters/reads_first", "w");
	int ret;

	if (!f)
		return -errno;
	ret = fputs(on ? "Y\n" : "N\n", f) < 0 ? -EIO : 0;
	if (fclose(f) && !ret)
		ret = -errno;
	return ret;
}

/*
 * The loaded GETs at depth @qd, reads_first on and off in turns, a trial
 * each, LAT_TRIALS times: each side's best in @on and @off. A trial is
 * LAT_SAMPLES / 2 GETs here, so that the writer's budget lasts as long as
 * without the turns. A module that has no such parameter gets the loaded
 * GETs alone, @off left zero.
 */
static int lat_best_gets_ab(struct kvtier_pool *pool, int qd, uint64_t *idx,
			    uint64_t *rng, const volatile int *writing,
			    struct lat_pcts *on, double *io_on,
			    struct lat_pcts *off, double *io_off,
			    uint64_t *overlap, uint64_t *bad, uint64_t *trials)
{
	struct lat_pcts *best[2] = { off, on };
	double *io99[2] = { io_off, io_on };
	int t, rf, ret = 0;

	memset(on, 0, sizeof(*on));
	memset(off, 0, sizeof(*off));
	*io_on = *io_off = 0;
	if (lat_reads_first(1))
		return lat_best_gets(pool, qd, idx, rng, writing, on, io_on,
				     overlap, bad);
	for (t = 0; t < LAT_TRIALS && !ret; t++)
		for (rf = 1; rf >= 0 && !ret; rf--) {
			struct lat_pcts one;
			double io1;

			ret = lat_reads_first(rf);
			if (!ret)
				ret = lat_gets(pool, qd, LAT_SAMPLES / 2, idx,
					       rng, writing, &one, &io1,
					       overlap, bad);
			if (!ret && (!best[rf]->us[LAT_P99] ||
				     one.us[LAT_P99] < best[rf]->us[LAT_P99])) {
				*best[rf] = one;
				*io99[rf] = io1;
			}
			*trials += 1;
		}
	lat_reads_first(1);
	return ret;
}

static void *lat_write_loop(void *arg)
{
	struct lat_writer *w = arg;
	char *buf = aligned_alloc(4096, LAT_W_BATCH * LAT_W_BLOCK);
	struct kvtier_block b[LAT_W_BATCH];
	uint64_t t = now_ns(), i;
	uint32_t j, done;
	double ahead;

	if (!buf) {
		w->err = -ENOMEM;
		w->writing = 0;
		return NULL;
	}
	memset(buf, 0x5a, LAT_W_BATCH * LAT_W_BLOCK);
	while (!w->stop && w->written + LAT_W_BATCH <= w->blocks) {
		for (j = 0; j < LAT_W_BATCH; j++) {
			struct kvtier_key k;

			i = w->key0 + w->written + j;
			kvtier_key_chain(NULL, i ^ 0x7761726d00000000ULL, &k);
			*(uint64_t *)(buf + j * LAT_W_BLOCK) = i;
			kvtier_block_set(&b[j], &k, buf + j * LAT_W_BLOCK);
		}
		w->err = kvtier_put(w->pool, b, LAT_W_BATCH, 0, &done);
		if (!w->err && done != LAT_W_BATCH)
			w->err = -EIO;
		if (w->err)
			break;
		w->written += LAT_W_BATCH;
		/* Held to LAT_W_RATE: the same write load on each side. */
		ahead = w->written * LAT_W_BLOCK * 1e9 / LAT_W_RATE -
			(double)(now_ns() - t);
		if (ahead > 0) {
			struct timespec ts = {
				.tv_sec = (time_t)(ahead / 1e9),
				.tv_nsec = (long)fmod(ahead, 1e9),
			};

			nanosleep(&ts, NULL);
		}
	}
	if (!w->err)
		w->err = kvtier_sync(w->pool, NULL);
	w->secs = (now_ns() - t) / 1e9;
	w->writing = 0;
	free(buf);
	return NULL;
}

/* PUT the reader's blocks, stamped, and SYNC them. */
static int lat_fill(struct kvtier_pool *pool)
{
	char *buf = aligned_alloc(4096, LAT_W_BATCH * LAT_BLOCK);
	struct kvtier_block b[LAT_W_BATCH];
	uint64_t i;
	uint32_t j, done;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	for (i = 0; i < LAT_BLOCKS && !ret; i += LAT_W_BATCH) {
		for (j = 0; j < LAT_W_BATCH; j++) {
			struct kvtier_key k = bench_key(i + j);

			page_stamp(buf + j * LAT_BLOCK, LAT_BLOCK, i + j);
			kvtier_block_set(&b[j], &k, buf + j * LAT_BLOCK);
		}
		ret = kvtier_put(pool, b, LAT_W_BATCH, 0, &done);
		if (!ret && done != LAT_W_BATCH)
			ret = -EIO;
	}
	free(buf);
	return ret ? ret : kvtier_sync(pool, NULL);
}

/* /sys/block/NAME/queue/write_cache of /dev/NAME @dev. */
static void wc_path(const char *dev, char *path, size_t size)
{
	const char *base = strrchr(dev, '/');

	snprintf(path, size, "/sys/block/%s/queue/write_cache",
		 base ? base + 1 : dev);
}

static int wc_set(const char *path, const char *mode)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -errno;
	ret = fputs(mode, f) < 0 ? -EIO : 0;
	if (fclose(f) && !ret)
		ret = -errno;
	return ret;
}

/*
 * One write trial: @blocks blocks PUT through the writer pool (its keys
 * from @*next on) and SYNCed; the device's write rate in *@gbps and the
 * p99 of the segments' write latency in *@p99.
 */
static int wc_trial(struct kvtier_pool *pool, uint64_t blocks, uint64_t *next,
		    double *gbps, double *p99)
{
	struct lat_writer w = { .pool = pool, .blocks = blocks };
	uint64_t h0[KVT_LAT_BUCKETS], h1[KVT_LAT_BUCKETS];
	struct kvtier_nvme_stat s0, s1;
	int hist = lat_hist_read("write", h0);

	w.key0 = *next;
	kvtier_nvme_stat(ctx, &s0);
	lat_write_loop(&w);
	kvtier_nvme_stat(ctx, &s1);
	*next += w.written;
	if (w.err)
		return w.err;
	*gbps = w.secs > 0 ? (s1.bytes_written - s0.bytes_written) / w.secs / 1e9 : 0;
	*p99 = !hist && !lat_hist_read("write", h1) ?
	       lat_hist_pct(h0, h1, 99) : 0;
	return 0;
}

/*
 * The write-back protocol's cost: demotion with the drive's volatile
 * write cache on (the segment's flush and FUA summary go to the drive)
 * and off as the kernel sees it ("write through": the block layer drops
 * flushes and FUA, as for a drive without a volatile cache or with
 * power-loss protection); LAT_TRIALS trials each, alternating, best kept.
 */
static void lat_wc(const char *dev, uint64_t blocks)
{
	double gbps[2] = { 0, 0 }, p99[2] = { 0, 0 }, g, p;
	static const char *const mode[2] = { "write back", "write through" };
	struct kvtier_pool *pool = NULL;
	char path[300], was[32];
	uint64_t next = 0;
	int t, m, ret;

	wc_path(dev, path, sizeof(path));
	if (read_line(path, was, sizeof(was)) || strcmp(was, mode[0])) {
		printf("nvme_write_wc_on_vs_off: n/a (%s: no volatile write cache)\n",
		       dev);
		return;
	}
	ret = bench_pool_dram("lat-wc", LAT_W_BLOCK,
			      (LAT_TRIALS * 2 + 1) * blocks + LAT_W_DRAM,
			      LAT_W_DRAM, &pool);
	for (t = 0; !ret && t < 2 * LAT_TRIALS; t++) {
		m = t % 2;
		ret = wc_set(path, mode[m]);
		if (!ret)
			ret = wc_trial(pool, blocks, &next, &g, &p);
		if (!ret && g > gbps[m]) {
			gbps[m] = g;
			p99[m] = p;
		}
	}
	wc_set(path, mode[0]);
	if (pool)
		kvtier_pool_close(pool);
	if (ret || !(gbps[1] > 0)) {
		printf("nvme_write_wc_on_vs_off: n/a (%s)\n",
		       strerror(ret ? -ret : EIO));
		return;
	}
	figure("nvme_write_wc_on_vs_off", "%.3f", gbps[0] / gbps[1]);
	figure("nvme_write_gbps_wc_on", "%.3f", gbps[0]);
	figure("nvme_write_gbps_wc_off", "%.3f", gbps[1]);
	if (p99[0] > 0 && p99[1] > 0) {
		figure("nvme_segment_p99_us_wc_on", "%.0f", p99[0]);
		figure("nvme_segment_p99_us_wc_off", "%.0f", p99[1]);
	}
}

/* jobs[0].read.lat_ns.percentile of fio's output, in microseconds. */
static int fio_pcts(const char *json, struct lat_pcts *p)
{
	const char *q = json_member(json, "jobs");
	size_t i;

	q = q ? json_member(q, "read") : NULL;
	q = q ? json_member(q, "lat_ns") : NULL;
	q = q ? json_member(q, "percentile") : NULL;
	if (!q)
		return -EINVAL;
	for (i = 0; i < LAT_NPCT; i++) {
		char key[32];
		const char *v;

		snprintf(key, sizeof(key), "%f", lat_pct[i]);
		v = json_member(q, key);
		if (!v)
			return -EINVAL;
		p->us[i] = strtod(v, NULL) / 1e3;
	}
	return 0;
}

/* fio @job at depth @qd LAT_TRIALS times: the lowest p99's run in *@p. */
static int lat_fio(const char *job, int qd, struct lat_pcts *p)
{
	struct lat_pcts one;
	char *json;
	int t, ret = 0;

	memset(p, 0, sizeof(*p));
	set_env_u64("KVTIER_FIO_QD", qd, "");
	for (t = 0; t < LAT_TRIALS && !ret; t++) {
		ret = run_fio_json(job, strcmp(job, "nvme-lat-read.fio") ?
				   NULL : "--readonly", &json);
		if (ret)
			break;
		ret = fio_pcts(json, &one);
		if (ret)
			fprintf(stderr, "%s: fio %s: no read.lat_ns.percentile\n",
				prog, job);
		else if (!p->us[LAT_P99] || one.us[LAT_P99] < p->us[LAT_P99])
			*p = one;
		free(json);
	}
	if (ret)
		memset(p, 0, sizeof(*p));
	return ret;
}

static void lat_csv(FILE *csv, const char *series, int qd,
		    const struct lat_pcts *p)
{
	size_t i;

	if (!csv || !p->us[LAT_NPCT - 1])
		return;
	for (i = 0; i < LAT_NPCT; i++)
		fprintf(csv, "%s,%d,%g,%.1f\n", series, qd, lat_pct[i], p->us[i]);
}

static void lat_figures(const char *who, int qd, const char *cond,
			const struct lat_pcts *p)
{
	static const struct { const char *name; int i; } f[] = {
		{ "p50", LAT_P50 }, { "p99", LAT_P99 }, { "p999", LAT_P999 },
	};
	char name[96];
	size_t i;

	if (!p->us[LAT_NPCT - 1])
		return;
	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		snprintf(name, sizeof(name), "%s_%s_us_qd%d%s", who, f[i].name,
			 qd, cond);
		figure(name, "%.0f", p->us[f[i].i]);
	}
}

/* Figure @name: the largest of @qd's ratios @a[qd] / @b[qd], each beside. */
static void lat_ratios(const char *name, const struct lat_pcts *a,
		       const struct lat_pcts *b)
{
	char one[96];
	double worst = 0, r;
	size_t q;

	for (q = 0; q < LAT_NQD; q++) {
		if (!a[q].us[LAT_P99] || !b[q].us[LAT_P99])
			continue;
		r = a[q].us[LAT_P99] / b[q].us[LAT_P99];
		snprintf(one, sizeof(one), "%s_qd%d", name, lat_qd[q]);
		figure(one, "%.2f", r);
		if (r > worst)
			worst = r;
	}
	if (worst > 0)
		figure(name, "%.2f", worst);
	else
		printf("%s: n/a (not measured)\n", name);
}

/*
 * nvme_read_io_p99_under_writes_vs_idle: the same as GET's from the
 * module's histogram, the device's read and its check only, without what
 * the caller's CPU does around it.
 */
static void io_ratio(double io99[LAT_NCOND][LAT_NQD],
		     struct lat_pcts fio[LAT_NCOND][LAT_NQD])
{
	double worst = 0, vs_fio = 0;
	size_t q;

	for (q = 0; q < LAT_NQD; q++) {
		if (io99[LAT_IDLE][q] > 0 &&
		    io99[LAT_WRITES][q] / io99[LAT_IDLE][q] > worst)
			worst = io99[LAT_WRITES][q] / io99[LAT_IDLE][q];
		if (fio[LAT_IDLE][q].us[LAT_P99] > 0 &&
		    io99[LAT_IDLE][q] / fio[LAT_IDLE][q].us[LAT_P99] > vs_fio)
			vs_fio = io99[LAT_IDLE][q] / fio[LAT_IDLE][q].us[LAT_P99];
	}
	if (worst > 0)
		figure("nvme_read_io_p99_under_writes_vs_idle", "%.2f", worst);
	if (vs_fio > 0)
		figure("nvme_read_io_p99_vs_fio_p99", "%.2f", vs_fio);
}

int bench_latency(void)
{
	struct lat_pcts kv[LAT_NCOND][LAT_NQD], fio[LAT_NCOND][LAT_NQD];
	struct lat_pcts rf0[LAT_NQD];	/* loaded, reads_first off */
	struct lat_pcts ring[LAT_NQD];	/* idle, one thread, io_uring */
	double io_rf0[LAT_NQD];
	struct kvtier_pool *pool = NULL, *wpool = NULL;
	struct lat_writer w = { 0 };
	struct kvtier_nvme_stat s0, s1;
	uint64_t dev_bytes, rng = 0x9e3779b97f4a7c15ULL, bad = 0;
	uint64_t overlap = 0, loaded = 0, *idx = NULL;
	double io99[LAT_NCOND][LAT_NQD];
	double wrate = 0;
	const char *outdir = getenv("KVTIER_BENCH_OUT");
	FILE *csv = NULL;
	pthread_t wth;
	char dev[256];
	size_t q;
	int ret, attached = 0;

	memset(kv, 0, sizeof(kv));
	memset(fio, 0, sizeof(fio));
	memset(io99, 0, sizeof(io99));
	memset(rf0, 0, sizeof(rf0));
	memset(ring, 0, sizeof(ring));
	memset(io_rf0, 0, sizeof(io_rf0));
	if (nvme_device(dev, sizeof(dev), &dev_bytes, "nvme_get_p99_vs_fio_p99"))
		return 0;
	if (dev_bytes < LAT_BLOCKS * LAT_BLOCK * 2) {
		printf("nvme_get_p99_vs_fio_p99: n/a (%s is smaller than 512 MiB)\n",
		       dev);
		return 0;
	}
	idx = calloc(LAT_BLOCKS, sizeof(*idx));
	if (!idx)
		return warn("latency", -ENOMEM);

	/* 1. The tier: a reader pool filled and synced, then the GETs. */
	ret = kvtier_nvme_attach(ctx, dev, KVTIER_NVME_FORMAT, 0);
	if (ret) {
		warn("attach", ret);
		goto out;
	}
	attached = 1;
	ret = bench_pool_dram("lat", LAT_BLOCK, LAT_BLOCKS + LAT_DRAM, LAT_DRAM,
			      &pool);
	if (!ret)
		ret = lat_fill(pool);
	if (ret) {
		warn("latency: the reader pool", ret);
		goto out;
	}
	for (q = 0; q < LAT_NQD && !ret; q++)
		ret = lat_best_gets(pool, lat_qd[q], idx, &rng, NULL,
				    &kv[LAT_IDLE][q], &io99[LAT_IDLE][q],
				    &overlap, &bad);
	if (ret) {
		warn("latency: GET", ret);
		goto out;
	}
	for (q = 0; q < LAT_NQD && !ret; q++)
		for (int t = 0; t < LAT_TRIALS && !ret; t++) {
			struct lat_pcts one;

			ret = lat_ring_gets(pool, lat_qd[q], LAT_SAMPLES, idx,
					    &rng, &one, &bad);
			if (!ret && (!ring[q].us[LAT_P99] ||
				     one.us[LAT_P99] < ring[q].us[LAT_P99]))
				ring[q] = one;
		}
	if (ret) {
		warn("latency: GET through io_uring", ret);
		goto out;
	}

	/*
	 * 2. The same with a writer demoting meanwhile, into the space the
	 * reader's blocks leave (the log must not wrap onto them).
	 */
	kvtier_nvme_stat(ctx, &s0);
	w.blocks = s0.free_regions * s0.region_bytes * 3 / 4 / LAT_W_BLOCK;
	ret = bench_pool_dram("lat-w", LAT_W_BLOCK, w.blocks + LAT_W_DRAM,
			      LAT_W_DRAM, &wpool);
	if (ret) {
		warn("latency: the writer pool", ret);
		goto out;
	}
	w.pool = wpool;
	w.writing = 1;
	if (pthread_create(&wth, NULL, lat_write_loop, &w)) {
		ret = warn("latency: writer", -EAGAIN);
		goto out;
	}
	for (q = 0; q < LAT_NQD && !ret; q++) {
		uint64_t trials = 0;

		ret = lat_best_gets_ab(pool, lat_qd[q], idx, &rng, &w.writing,
				       &kv[LAT_WRITES][q], &io99[LAT_WRITES][q],
				       &rf0[q], &io_rf0[q], &overlap, &bad,
				       &trials);
		loaded += trials ? trials * (LAT_SAMPLES / 2) :
				   LAT_TRIALS * LAT_SAMPLES;
	}
	w.stop = 1;
	pthread_join(wth, NULL);
	kvtier_nvme_stat(ctx, &s1);
	if (!ret && w.err)
		ret = warn("latency: writer PUT", w.err);
	if (ret)
		goto out;
	wrate = w.secs > 0 ? (s1.bytes_written - s0.bytes_written) / w.secs : 0;
	figure("nvme_lat_writes_overlap", "%.3f", (double)overlap / loaded);
	figure("nvme_lat_write_gbps", "%.3f", wrate / 1e9);
	figure("nvme_lat_bad_reads", "%.0f", bad);

	/* 3. Writes alone, the drive's write cache on and off. */
	kvtier_pool_close(pool);
	kvtier_pool_close(wpool);
	pool = wpool = NULL;
	lat_wc(dev, LAT_WC_BYTES / LAT_W_BLOCK);

	/* 4. fio on the raw device, after the tier let it go. */
	ret = kvtier_nvme_detach(ctx);
	if (ret) {
		warn("detach", ret);
		goto out;
	}
	attached = 0;
	setenv("KVTIER_FIO_DEV", dev, 1);
	set_env_u64("KVTIER_FIO_SIZE", LAT_BLOCKS * LAT_BLOCK, "");
	set_env_u64("KVTIER_FIO_BS", LAT_BLOCK, "");
	set_env_u64("KVTIER_FIO_IO_SIZE", LAT_SAMPLES * LAT_BLOCK, "");
	set_env_u64("KVTIER_FIO_WSIZE",
		    (dev_bytes - LAT_BLOCKS * LAT_BLOCK) / LAT_FIO_WBS * LAT_FIO_WBS,
		    "");
	set_env_u64("KVTIER_FIO_WRATE", wrate > 1e6 ? (uint64_t)wrate : 1000000,
		    "");
	setenv("KVTIER_FIO_VERIFY", "0", 1);
	setenv("KVTIER_FIO_PCT", "1:5:10:25:50:75:90:95:99:99.5:99.9", 1);
	{
		char *json;

		if (!run_fio_json("nvme-seq-write.fio", NULL, &json))
			free(json);
	}
	for (q = 0; q < LAT_NQD; q++) {
		lat_fio("nvme-lat-read.fio", lat_qd[q], &fio[LAT_IDLE][q]);
		lat_fio("nvme-lat-mixed.fio", lat_qd[q], &fio[LAT_WRITES][q]);
	}

	/* 5. The figures. */
	lat_ratios("nvme_get_p99_vs_fio_p99", kv[LAT_IDLE], fio[LAT_IDLE]);
	lat_ratios("nvme_get_p99_under_writes_vs_idle", kv[LAT_WRITES],
		   kv[LAT_IDLE]);
	lat_ratios("fio_p99_under_writes_vs_idle", fio[LAT_WRITES],
		   fio[LAT_IDLE]);
	io_ratio(io99, fio);
	lat_ratios("nvme_get_ring_p99_vs_fio_p99", ring, fio[LAT_IDLE]);
	lat_ratios("nvme_get_p99_reads_first_vs_not", kv[LAT_WRITES], rf0);
	for (q = 0; q < LAT_NQD; q++) {
		char s[48];

		lat_figures("nvme_get", lat_qd[q], "_writes_rf0", &rf0[q]);
		lat_figures("nvme_get_ring", lat_qd[q], "", &ring[q]);
		snprintf(s, sizeof(s), "nvme_get_sleeps_per_get_qd%d",
			 lat_qd[q]);
		figure(s, "%.2f", kv[LAT_IDLE][q].sleeps);
		snprintf(s, sizeof(s), "nvme_read_io_p99_us_qd%d_writes_rf0",
			 lat_qd[q]);
		if (io_rf0[q] > 0)
			figure(s, "%.0f", io_rf0[q]);
	}
	if (outdir && *outdir) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/latency.csv", outdir);
		csv = fopen(path, "w");
		if (csv)
			fprintf(csv, "series,qd,percentile,us\n");
	}
	for (int c = 0; c < LAT_NCOND; c++)
		for (q = 0; q < LAT_NQD; q++) {
			char s[48];

			snprintf(s, sizeof(s), "nvme_read_io_p99_us_qd%d%s",
				 lat_qd[q], lat_cond[c]);
			if (io99[c][q] > 0)
				figure(s, "%.0f", io99[c][q]);

			lat_figures("nvme_get", lat_qd[q], lat_cond[c], &kv[c][q]);
			lat_figures("fio_read", lat_qd[q], lat_cond[c], &fio[c][q]);
			snprintf(s, sizeof(s), "kvtier%s", lat_cond[c]);
			lat_csv(csv, s, lat_qd[q], &kv[c][q]);
			snprintf(s, sizeof(s), "fio%s", lat_cond[c]);
			lat_csv(csv, s, lat_qd[q], &fio[c][q]);
			if (c == LAT_IDLE)
				lat_csv(csv, "kvtier_ring", lat_qd[q],
					&ring[q]);
		}
	if (csv)
		fclose(csv);
out:
	if (pool)
		kvtier_pool_close(pool);
	if (wpool)
		kvtier_pool_close(wpool);
	if (attached)
		kvtier_nvme_detach(ctx);
	free(idx);
	if (ret)
		printf("nvme_get_p99_vs_fio_p99: n/a (%s)\n", strerror(-ret));
	return ret;
}
