// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierctl top: per-pool, per-tier rates, refreshed every interval like
 * `iostat 1`.
 *
 * Every interval it lists the pools (/sys/kernel/kvtier/pools/), opens each
 * read-only for a moment and takes its counters with KVTIER_IOC_STAT
 * (resident blocks per tier, puts, gets, hits, misses, evictions,
 * demotions, promotions, bytes), the global DRAM figures from
 * /sys/kernel/kvtier/stat and the NVMe tier's traffic with
 * KVTIER_IOC_NVME_STAT. A report shows the differences to the previous
 * sample divided by the time between them, so the first report comes one
 * interval after the start. Pool fds are closed again at once: top holds
 * no pool alive and blocks no unload between samples.
 *
 * A pool the caller may not open (its mode, EACCES) shows "-" for its
 * figures; a pool seen for the first time, or re-created under the same
 * name (a counter went down), shows "-" for its rates until the next
 * report.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <kvtier.h>

#include "util.h"

#define TOP_MAX_POOLS	4096

/* struct top_pool - one pool's last sample */
struct top_pool {
	char name[KVTIER_NAME_MAX];
	struct kvtier_pool_stat st;
	uint64_t t_ns;		/* when st was taken */
	int err;		/* 0, or why it could not be sampled */
	int have_prev;		/* prev and prev_ns are a sample of this pool */
	struct kvtier_pool_stat prev;
	uint64_t prev_ns;
};

/* struct top_state - everything one report needs */
struct top_state {
	struct kvtier_ctx *ctx;
	char **only;		/* pool names given on the command line */
	int nr_only;
	struct top_pool *pools;
	int nr_pools;
	/* global */
	int nvme_err;
	struct kvtier_nvme_stat ns, ns_prev;
	int have_ns_prev;
	uint64_t g_ns, g_prev_ns;
	uint64_t dram_budget, dram_reserved, dram_used;
	int have_sys;
};

static int top_usage(FILE *f)
{
	fprintf(f,
		"usage: kvtierctl top [-i SECS] [-n COUNT] [POOL...]\n"
		"\n"
		"Per-pool, per-tier rates every SECS seconds (default 1, fractions\n"
		"allowed), COUNT reports (default: until interrupted), of every pool\n"
		"or of the POOLs named. The first report comes after one interval.\n"
		"\n"
		"  puts/s gets/s hits/s miss/s  blocks per second (hits and misses of\n"
		"                               GET and LOOKUP entries); hit%% of them\n"
		"  evict/s                      blocks that left DRAM to make room\n"
		"  demote/s promote/s           blocks written to / read back from NVMe\n"
		"  inMiB/s outMiB/s             bytes written by PUT / read by GET\n"
		"  dram nvme                    blocks resident in each tier now\n"
		"  dramMiB nvmeMiB              the same in MiB\n"
		"  pinned dirty                 pinned blocks; DRAM blocks without an\n"
		"                               NVMe copy\n");
	return f == stderr ? 2 : 0;
}

static int top_wanted(const struct top_state *s, const char *name)
{
	int i;

	if (!s->nr_only)
		return 1;
	for (i = 0; i < s->nr_only; i++)
		if (!strcmp(s->only[i], name))
			return 1;
	return 0;
}

static struct top_pool *top_find(struct top_state *s, const char *name)
{
	int i;

	for (i = 0; i < s->nr_pools; i++)
		if (!strcmp(s->pools[i].name, name))
			return &s->pools[i];
	return NULL;
}

static int cmp_pool(const void *a, const void *b)
{
	return strcmp(((const struct top_pool *)a)->name,
		      ((const struct top_pool *)b)->name);
}

/* Any counter below its previous value: the name is another pool now. */
static int top_went_back(const struct kvtier_pool_stat *c,
			 const struct kvtier_pool_stat *p)
{
	return c->puts < p->puts || c->gets < p->gets || c->hits < p->hits ||
	       c->misses < p->misses || c->evictions < p->evictions ||
	       c->demotions < p->demotions || c->promotions < p->promotions ||
	       c->bytes_in < p->bytes_in || c->bytes_out < p->bytes_out ||
	       c->block_size != p->block_size || c->capacity != p->capacity;
}

/* Take a sample of every pool, and of the global figures. */
static int top_sample(struct top_state *s)
{
	struct top_pool *np;
	struct dirent *de;
	char line[512];
	int n = 0;
	DIR *d;

	d = opendir(KVT_SYSFS_POOLS);
	if (!d)
		return -errno;
	np = calloc(TOP_MAX_POOLS, sizeof(*np));
	if (!np) {
		closedir(d);
		return -ENOMEM;
	}
	while ((de = readdir(d)) && n < TOP_MAX_POOLS) {
		struct top_pool *p = &np[n], *old;
		struct kvtier_pool *pool;

		if (de->d_name[0] == '.' || !top_wanted(s, de->d_name) ||
		    strlen(de->d_name) >= KVTIER_NAME_MAX)
			continue;
		snprintf(p->name, sizeof(p->name), "%s", de->d_name);
		p->err = kvtier_pool_open(s->ctx, p->name, KVTIER_POOL_RDONLY, &pool);
		if (!p->err) {
			p->err = kvtier_stat(pool, &p->st);
			p->t_ns = now_ns();
			kvtier_pool_close(pool);
		}
		if (p->err == -ENOENT)	/* destroyed since the listing */
			continue;
		old = top_find(s, p->name);
		if (!p->err && old && !old->err &&
		    !top_went_back(&p->st, &old->st)) {
			p->prev = old->st;
			p->prev_ns = old->t_ns;
			p->have_prev = 1;
		}
		n++;
	}
	closedir(d);
	qsort(np, n, sizeof(*np), cmp_pool);
	free(s->pools);
	s->pools = np;
	s->nr_pools = n;

	s->g_prev_ns = s->g_ns;
	s->g_ns = now_ns();
	s->ns_prev = s->ns;
	s->have_ns_prev = !s->nvme_err && s->ns.attached;
	s->nvme_err = kvtier_nvme_stat(s->ctx, &s->ns);
	if (!s->nvme_err && (!s->ns.attached ||
			     s->ns.bytes_written < s->ns_prev.bytes_written ||
			     s->ns.bytes_read < s->ns_prev.bytes_read))
		s->have_ns_prev = 0;	/* detached or attached again */

	s->have_sys = 0;
	if (!read_line(KVT_SYSFS_STAT, line, sizeof(line))) {
		unsigned long long budget, reserved;
		long long used;
		unsigned int pools;

		if (sscanf(line, "%u %llu %llu %lld", &pools, &budget, &reserved,
			   &used) == 4) {
			s->dram_budget = budget;
			s->dram_reserved = reserved;
			s->dram_used = used > 0 ? used : 0;
			s->have_sys = 1;
		}
	}
	return 0;
}

static double rate(uint64_t cur, uint64_t prev, double secs)
{
	return secs > 0 ? (double)(cur - prev) / secs : 0;
}

static void top_report(const struct top_state *s)
{
	static const char * const hdr[] = {
		"puts/s", "gets/s", "hits/s", "miss/s", "hit%", "evict/s",
		"demote/s", "promote/s", "inMiB/s", "outMiB/s", "dram", "nvme",
		"dramMiB", "nvmeMiB", "pinned", "dirty",
	};
	const int nhdr = sizeof(hdr) / sizeof(hdr[0]);
	char b1[32], b2[32], b3[32], when[32];
	int w = 16, i, c;
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(when, sizeof(when), "%F %T", &tm);
	printf("kvtier top  %s  pools %d", when, s->nr_pools);
	if (s->have_sys)
		printf("  DRAM used %s, reserved %s of %s",
		       human_bytes(s->dram_used, b1, sizeof(b1)),
		       human_bytes(s->dram_reserved, b2, sizeof(b2)),
		       human_bytes(s->dram_budget, b3, sizeof(b3)));
	if (s->nvme_err)
		printf("  NVMe: -");
	else if (!s->ns.attached)
		printf("  NVMe: not attached");
	else if (s->have_ns_prev) {
		double secs = (s->g_ns - s->g_prev_ns) / 1e9;

		printf("  NVMe: write %.1f MiB/s, read %.1f MiB/s, %u of %u regions free",
		       rate(s->ns.bytes_written, s->ns_prev.bytes_written, secs) / 1048576,
		       rate(s->ns.bytes_read, s->ns_prev.bytes_read, secs) / 1048576,
		       s->ns.free_regions, s->ns.nr_regions);
	} else {
		printf("  NVMe: attached, %u of %u regions free",
		       s->ns.free_regions, s->ns.nr_regions);
	}
	putchar('\n');

	for (i = 0; i < s->nr_pools; i++)
		if ((int)strlen(s->pools[i].name) > w)
			w = strlen(s->pools[i].name);
	printf("%-*s", w, "pool");
	for (c = 0; c < nhdr; c++)
		printf(" %9s", hdr[c]);
	putchar('\n');

	for (i = 0; i < s->nr_pools; i++) {
		const struct top_pool *p = &s->pools[i];
		const struct kvtier_pool_stat *st = &p->st, *pv = &p->prev;
		double secs = (p->t_ns - p->prev_ns) / 1e9, mib;
		uint64_t look;

		printf("%-*s", w, p->name);
		if (p->err) {
			for (c = 0; c < nhdr; c++)
				printf(" %9s", "-");
			printf("  (%s)\n", strerror(-p->err));
			continue;
		}
		if (p->have_prev) {
			look = (st->hits - pv->hits) + (st->misses - pv->misses);
			printf(" %9.1f %9.1f %9.1f %9.1f",
			       rate(st->puts, pv->puts, secs),
			       rate(st->gets, pv->gets, secs),
			       rate(st->hits, pv->hits, secs),
			       rate(st->misses, pv->misses, secs));
			if (look)
				printf(" %9.1f", 100.0 * (st->hits - pv->hits) / look);
			else
				printf(" %9s", "-");
			printf(" %9.1f %9.1f %9.1f %9.2f %9.2f",
			       rate(st->evictions, pv->evictions, secs),
			       rate(st->demotions, pv->demotions, secs),
			       rate(st->promotions, pv->promotions, secs),
			       rate(st->bytes_in, pv->bytes_in, secs) / 1048576,
			       rate(st->bytes_out, pv->bytes_out, secs) / 1048576);
		} else {
			for (c = 0; c < 10; c++)
				printf(" %9s", "-");
		}
		mib = st->block_size / 1048576.0;
		printf(" %9llu %9llu %9.1f %9.1f %9llu %9llu\n",
		       (unsigned long long)st->resident[KVTIER_TIER_DRAM],
		       (unsigned long long)st->resident[KVTIER_TIER_NVME],
		       st->resident[KVTIER_TIER_DRAM] * mib,
		       st->resident[KVTIER_TIER_NVME] * mib,
		       (unsigned long long)st->pinned,
		       (unsigned long long)st->dirty);
	}
	if (!s->nr_pools)
		printf("(no pools)\n");
	putchar('\n');
	fflush(stdout);
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = ns / 1000000000ULL,
		.tv_nsec = ns % 1000000000ULL,
	};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/**
 * cmd_top() - kvtierctl top
 * @argc:	arguments, "top" first.
 * @argv:	the arguments.
 *
 * Return: the exit status.
 */
int cmd_top(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct top_state s = { 0 };
	double interval = 1;
	uint64_t count = 0, done = 0, next;
	char *end;
	int c, ret;

	while ((c = getopt_long(argc, argv, "i:n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			errno = 0;
			interval = strtod(optarg, &end);
			if (errno || *end || !(interval >= 0.01) || interval > 86400) {
				fprintf(stderr, "kvtierctl: top: bad interval %s (0.01 to 86400 seconds)\n",
					optarg);
				return 2;
			}
			break;
		case 'n':
			if (parse_u64(optarg, &count) || !count) {
				fprintf(stderr, "kvtierctl: top: bad count %s (1 or more)\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			return top_usage(stdout);
		default:
			return top_usage(stderr);
		}
	}
	s.only = argv + optind;
	s.nr_only = argc - optind;

	ret = kvtier_open(&s.ctx, KVTIER_FEATURES_ALL);
	if (ret) {
		fprintf(stderr, "kvtierctl: /dev/kvtier: %s%s\n", strerror(-ret),
			ret == -ENOENT ? " (is the kvtier module loaded?)" : "");
		return 1;
	}
	ret = top_sample(&s);
	next = now_ns();
	while (!ret && (!count || done < count)) {
		uint64_t t;

		next += (uint64_t)(interval * 1e9);
		t = now_ns();
		if (next > t)
			sleep_ns(next - t);
		ret = top_sample(&s);
		if (ret)
			break;
		top_report(&s);
		done++;
	}
	if (ret)
		fprintf(stderr, "kvtierctl: top: %s: %s\n", KVT_SYSFS_POOLS,
			strerror(-ret));
	free(s.pools);
	kvtier_close(s.ctx);
	return ret ? 1 : 0;
}
