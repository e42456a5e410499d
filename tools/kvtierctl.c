// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierctl: inspect and administer kvtier (the handshake, module
 * parameters, global and per-pool statistics, pool create/destroy/sync, a
 * pool's events and keys as JSON lines, and the NVMe tier: list candidate
 * namespaces, attach, detach, format).
 *
 * Exit status: 0 success, 1 the operation failed, 2 bad usage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <syslog.h>

#include <nvme/tree.h>
#include <nvme/types.h>

#include <kvtier.h>

#include "util.h"

#define EXIT_USAGE	2
#define MAX_COLS	32
#define CELL		32

static const char *prog = "kvtierctl";

/* kvtierctl-top.c */
int cmd_top(int argc, char **argv);

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s COMMAND [ARGS]\n"
		"\n"
		"  status                      API handshake, features, commands, module\n"
		"                              parameters and global statistics\n"
		"  pools                       list pools (config and stat; needs root)\n"
		"  create NAME --block-size B --capacity N\n"
		"         [--dram-blocks N] [--mode OCTAL] [--node N] [--fault-noload]\n"
		"         [--compress lz4|lz4hc|zstd [--shuffle2]]\n"
		"                              create a pool (sizes take K/M/G suffixes)\n"
		"  destroy NAME                remove a pool's name\n"
		"  stat NAME                   a pool's configuration and counters\n"
		"  sync NAME                   write a pool's dirty blocks to the NVMe tier\n"
		"  top [-i SECS] [-n COUNT] [POOL...]\n"
		"                              per-pool, per-tier rates every SECS seconds\n"
		"                              (like iostat; top --help for the columns)\n"
		"  events NAME [--follow] [--from SEQ]\n"
		"                              a pool's events, one JSON object a line:\n"
		"                              from the next one (or SEQ) to the last there\n"
		"                              is; --follow: until the pool is gone or SIGINT\n"
		"  keys NAME [--meta]          a pool's keys (census), one JSON object a\n"
		"                              line, then {seq, log_id, keys}: the last event\n"
		"                              the listing reflects; --meta: block records\n"
		"\n"
		"NVMe tier (attach, detach and format need root):\n"
		"  nvme                        list NVMe namespaces: model, serial, size,\n"
		"                              LBA format, and who holds each\n"
		"  attach DEV [--format [--region-kib N] [--force]]\n"
		"                              attach block device DEV to the NVMe tier; a\n"
		"                              kvtier store on it comes back with its pools,\n"
		"                              a blank device is formatted; --format writes\n"
		"                              a new, empty store (region size N KiB, a power\n"
		"                              of two in 1024..65536, default 4096)\n"
		"  detach [DEV]                detach DEV, or every device (the last one\n"
		"                              writes back dirty blocks first); up to 4\n"
		"                              devices may be attached, each its own store\n"
		"  format DEV [--region-kib N] [--force]\n"
		"                              write a new, empty store on DEV and detach it\n"
		"                              again (= attach --format, then detach)\n"
		"\n"
		"--format and format destroy what DEV holds. A device that holds neither a\n"
		"kvtier store nor zeros in its first 4 KiB (a file system, a partition\n"
		"table) is only formatted with --force.\n"
		"\n"
		"Exit status: 0 success, 1 failure, 2 bad usage.\n", prog);
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "%s: %s: %s", prog, what, strerror(-err));
	if (err == -ENOENT && !strcmp(what, "/dev/kvtier"))
		fprintf(stderr, " (is the kvtier module loaded?)");
	fputc('\n', stderr);
	return EXIT_FAILURE;
}

/* fail() for the NVMe commands, with what the errno means there. */
static int fail_nvme(const char *what, int err)
{
	const char *hint = NULL;

	switch (err) {
	case -EPERM:
		hint = "needs CAP_SYS_ADMIN";
		break;
	case -EBUSY:
		hint = "a device is attached already, or the device is in use";
		break;
	case -EMEDIUMTYPE:
		hint = "it holds something else than a kvtier store; format it to use it";
		break;
	case -ENODEV:
		hint = "no NVMe tier is attached";
		break;
	case -ENOTTY:
		hint = "this kvtier module has no NVMe tier";
		break;
	case -ENOSPC:
		hint = "too small for the store";
		break;
	}
	fprintf(stderr, "%s: %s: %s%s%s%s\n", prog, what, strerror(-err),
		hint ? " (" : "", hint ? hint : "", hint ? ")" : "");
	return EXIT_FAILURE;
}

static int open_ctx(struct kvtier_ctx **ctx, uint64_t features)
{
	int ret = kvtier_open(ctx, features);

	if (ret)
		return fail("/dev/kvtier", ret);
	return 0;
}

/* Split @line at spaces into at most @max cells; returns the count. */
static int split(char *line, char **cells, int max)
{
	char *save = NULL, *tok;
	int n = 0;

	for (tok = strtok_r(line, " \t", &save); tok && n < max;
	     tok = strtok_r(NULL, " \t", &save))
		cells[n++] = tok;
	return n;
}

/*
 * Print a table: a header row of @ncols names and @nrows rows of cells,
 * each column as wide as its widest cell, numbers right-aligned.
 */
static void print_table(const char *indent, char **names, int ncols,
			char (*rows)[MAX_COLS][CELL], int nrows)
{
	int w[MAX_COLS], c, r;

	for (c = 0; c < ncols; c++) {
		w[c] = strlen(names[c]);
		for (r = 0; r < nrows; r++)
			if ((int)strlen(rows[r][c]) > w[c])
				w[c] = strlen(rows[r][c]);
	}
	printf("%s", indent);
	for (c = 0; c < ncols; c++)
		printf("%s%*s", c ? "  " : "", c ? w[c] : -w[c], names[c]);
	putchar('\n');
	for (r = 0; r < nrows; r++) {
		printf("%s", indent);
		for (c = 0; c < ncols; c++)
			printf("%s%*s", c ? "  " : "", c ? w[c] : -w[c],
			       rows[r][c]);
		putchar('\n');
	}
}

static void print_bits(const char *label, uint64_t mask,
		       const char *(*name)(uint64_t))
{
	unsigned int b;

	printf("%-22s", label);
	if (!mask)
		printf(" (none)");
	for (b = 0; b < 64; b++) {
		const char *n;

		if (!(mask & (1ULL << b)))
			continue;
		n = name(b);
		if (n)
			printf(" %s", n);
		else
			printf(" bit%u", b);
	}
	putchar('\n');
}

static const char *feature_by_bit(uint64_t b)
{
	return kvtier_feature_name(1ULL << b);
}

static const char *ioctl_by_bit(uint64_t b)
{
	return kvtier_ioctl_name(b);
}

static void format_uuid(const uint8_t *u, char *buf, size_t size)
{
	snprintf(buf, size,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
}

/* p50, p99 and p99.9 of the NVMe tier's latency histograms, since load. */
static void print_nvme_latency(void)
{
	static const char *const op[] = { "read", "write" };
	uint64_t h[KVT_LAT_BUCKETS];
	int i;

	for (i = 0; i < 2; i++) {
		if (lat_hist_read(op[i], h) || !lat_hist_pct(NULL, h, 100))
			continue;
		printf("%-22s %s latency p50 %.0f us, p99 %.0f us, p99.9 %.0f us (%s)\n",
		       "", op[i], lat_hist_pct(NULL, h, 50),
		       lat_hist_pct(NULL, h, 99), lat_hist_pct(NULL, h, 99.9),
		       i ? "a segment, to its summary durable" :
			   "a block, to its copy verified");
	}
}

/* The NVMe tier's lines of `status`. */
static void print_nvme_stat(int err, const struct kvtier_nvme_stat *ns)
{
	char b1[32], b2[32], b3[32], uuid[40];

	printf("%-22s", "nvme tier:");
	if (err == -ENOTTY) {
		printf(" not supported by this module\n");
		return;
	}
	if (err) {
		printf(" NVME_STAT: %s\n", strerror(-err));
		return;
	}
	if (!ns->attached) {
		printf(" not attached\n");
		return;
	}
	printf(" attached: %s, %u regions of %s, %u free\n",
	       human_bytes(ns->dev_bytes, b1, sizeof(b1)), ns->nr_regions,
	       human_bytes(ns->region_bytes, b2, sizeof(b2)), ns->free_regions);
	printf("%-22s written %s, demoted %s (host WAF %.3f), read %s\n", "",
	       human_bytes(ns->bytes_written, b1, sizeof(b1)),
	       human_bytes(ns->bytes_demoted, b2, sizeof(b2)),
	       ns->bytes_demoted ? (double)ns->bytes_written / ns->bytes_demoted : 0,
	       human_bytes(ns->bytes_read, b3, sizeof(b3)));
	printf("%-22s discarded %s, stored %s\n", "",
	       human_bytes(ns->bytes_discarded, b1, sizeof(b1)),
	       human_bytes(ns->bytes_stored, b2, sizeof(b2)));
	print_nvme_latency();
	format_uuid(ns->uuid, uuid, sizeof(uuid));
	printf("%-22s reclaimed %llu regions, lost %llu blocks, rescued %llu, %llu I/O errors, attach %.3f s, uuid %s\n",
	       "", (unsigned long long)ns->reclaimed,
	       (unsigned long long)ns->lost_blocks,
	       (unsigned long long)ns->rescued,
	       (unsigned long long)ns->io_errors, ns->attach_ns / 1e9, uuid);
}

/* One line per attached device, when there are several. */
static void print_nvme_devs(const struct kvtier_nvme_stat *dev, int n)
{
	char b1[32], b2[32];
	int i;

	for (i = 0; i < n; i++) {
		if (!dev[i].attached)
			continue;
		printf("%-22s device %d (%u:%u): %s, %u regions, %u free, demoted %s, read %s\n",
		       "", i, dev[i].dev_major, dev[i].dev_minor,
		       human_bytes(dev[i].dev_bytes, b1, sizeof(b1)),
		       dev[i].nr_regions, dev[i].free_regions,
		       human_bytes(dev[i].bytes_demoted, b2, sizeof(b2)),
		       human_bytes(dev[i].bytes_read, b1, sizeof(b1)));
	}
}

static int cmd_status(void)
{
	struct kvtier_nvme_stat ns, dev[KVTIER_NVME_MAX];
	int nvme_err, ndev = 0;
	static const char * const params[] = {
		"dram_mb", "numa_node", "max_pools", "nvme", "events_ring",
	};
	char line[512], path[256], *names[MAX_COLS], *vals[MAX_COLS];
	char cols[] = KVT_STAT_COLS, buf[64];
	char (*row)[MAX_COLS][CELL];
	struct kvtier_api api;
	struct kvtier_ctx *ctx;
	int ret, n, m, i;
	size_t p;

	ret = open_ctx(&ctx, KVTIER_FEATURES_ALL);
	if (ret)
		return ret;
	kvtier_api_info(ctx, &api);
	nvme_err = api.supported & KVTIER_F_NVME ? kvtier_nvme_stat(ctx, &ns) : -ENOTTY;
	while (!nvme_err && ns.attached > 1 && ndev < KVTIER_NVME_MAX &&
	       !kvtier_nvme_stat_dev(ctx, ndev, &dev[ndev]))
		ndev++;
	kvtier_close(ctx);

	printf("%-22s %u\n", "api version", api.api);
	print_bits("features negotiated:", api.features, feature_by_bit);
	print_bits("features supported:", api.supported, feature_by_bit);
	print_bits("commands:", api.ioctls, ioctl_by_bit);
	printf("%-22s block_size_max=%llu (%s) batch_max=%u name_max=%u\n",
	       "limits:", (unsigned long long)api.block_size_max,
	       human_bytes(api.block_size_max, buf, sizeof(buf)),
	       api.batch_max, api.name_max);
	printf("%-22s max_pools=%u dram_bytes=%llu (%s)\n", "",
	       api.max_pools, (unsigned long long)api.dram_bytes,
	       human_bytes(api.dram_bytes, buf, sizeof(buf)));

	printf("%-22s", "module parameters:");
	for (p = 0; p < sizeof(params) / sizeof(params[0]); p++) {
		snprintf(path, sizeof(path), KVT_SYSFS_PARAMS "/%s", params[p]);
		ret = read_line(path, line, sizeof(line));
		printf(" %s=%s", params[p], ret ? "?" :
		       !strcmp(line, "(null)") ? "-" : line);
	}
	putchar('\n');
	print_nvme_stat(nvme_err, &ns);
	print_nvme_devs(dev, ndev);

	ret = read_line(KVT_SYSFS_STAT, line, sizeof(line));
	if (ret) {
		printf("stat: %s: %s\n", KVT_SYSFS_STAT, strerror(-ret));
		return EXIT_FAILURE;
	}
	n = split(cols, names, MAX_COLS);
	m = split(line, vals, MAX_COLS);
	row = calloc(1, sizeof(*row));
	if (!row)
		return fail("status", -ENOMEM);
	/* Print the kernel's columns even if it grew some we do not name. */
	for (i = 0; i < m; i++) {
		if (i >= n)
			names[n++] = "?";
		snprintf((*row)[i], CELL, "%s", vals[i]);
	}
	printf("stat (%s):\n", KVT_SYSFS_STAT);
	print_table("  ", names, m > n ? m : n, row, 1);
	free(row);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char * const *)a, *(char * const *)b);
}

static int cmd_pools(void)
{
	char cfgcols[] = KVT_POOL_CONFIG_COLS, statcols[] = KVT_POOL_STAT_COLS;
	char *names[MAX_COLS], *cells[MAX_COLS], line[512], path[512];
	char (*rows)[MAX_COLS][CELL] = NULL;
	char **pools = NULL;
	int ncfg, nstat, ncols, npools = 0, r, c, ret = 0;
	struct dirent *de;
	DIR *d;

	d = opendir(KVT_SYSFS_POOLS);
	if (!d)
		return fail(KVT_SYSFS_POOLS, -errno);
	while ((de = readdir(d))) {
		char **np;

		if (de->d_name[0] == '.')
			continue;
		np = realloc(pools, (npools + 1) * sizeof(*pools));
		if (!np || !(np[npools] = strdup(de->d_name))) {
			pools = np ? np : pools;
			ret = fail("pools", -ENOMEM);
			goto out;
		}
		pools = np;
		npools++;
	}
	if (!npools) {
		printf("no pools\n");
		goto out;
	}
	qsort(pools, npools, sizeof(*pools), cmp_str);

	names[0] = "name";
	ncfg = split(cfgcols, names + 1, MAX_COLS - 1);
	nstat = split(statcols, names + 1 + ncfg, MAX_COLS - 1 - ncfg);
	ncols = 1 + ncfg + nstat;
	rows = calloc(npools, sizeof(*rows));
	if (!rows) {
		ret = fail("pools", -ENOMEM);
		goto out;
	}
	for (r = 0; r < npools; r++) {
		static const char * const files[] = { "config", "stat" };
		int col = 1, f;

		snprintf(rows[r][0], CELL, "%s", pools[r]);
		for (f = 0; f < 2; f++) {
			int want = f ? nstat : ncfg, got = 0, err;

			snprintf(path, sizeof(path), KVT_SYSFS_POOLS "/%s/%s",
				 pools[r], files[f]);
			err = read_line(path, line, sizeof(line));
			if (err) {
				fprintf(stderr, "%s: %s: %s\n", prog, path,
					strerror(-err));
				ret = EXIT_FAILURE;
			} else {
				got = split(line, cells, MAX_COLS);
			}
			for (c = 0; c < want; c++)
				snprintf(rows[r][col + c], CELL, "%s",
					 c < got ? cells[c] : "-");
			col += want;
		}
	}
	print_table("", names, ncols, rows, npools);
out:
	closedir(d);
	for (r = 0; r < npools; r++)
		free(pools[r]);
	free(pools);
	free(rows);
	return ret;
}

static int cmd_create(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "block-size", required_argument, NULL, 'b' },
		{ "capacity", required_argument, NULL, 'c' },
		{ "dram-blocks", required_argument, NULL, 'd' },
		{ "mode", required_argument, NULL, 'm' },
		{ "node", required_argument, NULL, 'n' },
		{ "fault-noload", no_argument, NULL, 'F' },
		{ "compress", required_argument, NULL, 'z' },
		{ "shuffle2", no_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	static const char * const zname[] = {
		[KVTIER_COMPRESS_LZ4] = "lz4", [KVTIER_COMPRESS_LZ4HC] = "lz4hc",
		[KVTIER_COMPRESS_ZSTD] = "zstd",
	};
	uint32_t compress = 0, zflags = 0, z;
	struct kvtier_pool_params p;
	struct kvtier_pool_stat st;
	struct kvtier_pool *pool;
	struct kvtier_ctx *ctx;
	uint64_t v, bs = 0, cap = 0;
	char *end, what[KVTIER_NAME_MAX + 16];
	long node;
	int opt, li = 0, ret;

	if (argc < 2 || argv[1][0] == '-') {
		fprintf(stderr, "%s: create: missing pool NAME\n", prog);
		return EXIT_USAGE;
	}
	kvtier_pool_params_init(&p, argv[1], 0, 0);
	optind = 2;
	while ((opt = getopt_long(argc, argv, "", opts, &li)) != -1) {
		switch (opt) {
		case 'b':
			if (parse_size(optarg, &bs))
				goto bad_value;
			break;
		case 'c':
			if (parse_size(optarg, &cap) || cap > UINT32_MAX)
				goto bad_value;
			break;
		case 'd':
			if (parse_size(optarg, &v) || v > UINT32_MAX)
				goto bad_value;
			p.dram_blocks = v;
			break;
		case 'm':
			errno = 0;
			v = strtoul(optarg, &end, 8);
			if (errno || *end || !*optarg || v > 07777)
				goto bad_value;
			p.mode = v;
			break;
		case 'n':
			errno = 0;
			node = strtol(optarg, &end, 10);
			if (errno || *end || !*optarg || node < -1 || node > INT32_MAX)
				goto bad_value;
			p.numa_node = node;
			break;
		case 'F':
			p.flags |= KVTIER_POOL_FAULT_NOLOAD;
			break;
		case 'z':
			for (z = 1; z <= KVTIER_COMPRESS_MAX &&
			     strcmp(optarg, zname[z]); z++)
				;
			if (z > KVTIER_COMPRESS_MAX)
				goto bad_value;
			compress = z;
			break;
		case 'S':
			zflags |= KVTIER_COMPRESS_SHUFFLE2;
			break;
		default:
			return EXIT_USAGE;
		}
	}
	if (zflags && !compress) {
		fprintf(stderr, "%s: create: --shuffle2 needs --compress\n",
			prog);
		return EXIT_USAGE;
	}
	if (optind != argc) {
		fprintf(stderr, "%s: create: unexpected argument '%s'\n", prog,
			argv[optind]);
		return EXIT_USAGE;
	}
	if (!bs || !cap) {
		fprintf(stderr, "%s: create: --block-size and --capacity are required\n",
			prog);
		return EXIT_USAGE;
	}
	p.block_size = bs;
	p.capacity = cap;

	ret = open_ctx(&ctx, KVTIER_F_POOLS |
		       (p.numa_node != -1 ? KVTIER_F_NUMA : 0) |
		       (compress ? KVTIER_F_COMPRESS : 0));
	if (ret)
		return ret;
	ret = compress ? kvtier_pool_create_compressed(ctx, &p, compress,
						       zflags, &pool) :
			 kvtier_pool_create(ctx, &p, &pool);
	kvtier_close(ctx);
	snprintf(what, sizeof(what), "create %s", argv[1]);
	if (ret)
		return fail(what, ret);
	ret = kvtier_stat(pool, &st);
	kvtier_pool_close(pool);
	if (ret)
		return fail(what, ret);
	printf("created pool %s: block_size %llu capacity %u dram_blocks %u numa_node %d mode %04o\n",
	       argv[1], (unsigned long long)st.block_size, st.capacity,
	       st.dram_blocks, st.numa_node, st.mode);
	return 0;

bad_value:
	fprintf(stderr, "%s: create: bad value '%s' for --%s\n", prog, optarg,
		opts[li].name);
	return EXIT_USAGE;
}

static int cmd_destroy(int argc, char **argv)
{
	struct kvtier_ctx *ctx;
	int ret;

	if (argc != 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	ret = open_ctx(&ctx, KVTIER_F_POOLS);
	if (ret)
		return ret;
	ret = kvtier_pool_destroy(ctx, argv[1]);
	kvtier_close(ctx);
	if (ret) {
		char what[KVTIER_NAME_MAX + 16];

		snprintf(what, sizeof(what), "destroy %s", argv[1]);
		return fail(what, ret);
	}
	printf("destroyed pool %s\n", argv[1]);
	return 0;
}

static int cmd_stat(int argc, char **argv)
{
	struct kvtier_pool_stat st;
	struct kvtier_pool *pool;
	struct kvtier_ctx *ctx;
	char buf[64];
	unsigned int t;
	int ret;

	if (argc != 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	ret = open_ctx(&ctx, KVTIER_F_POOLS);
	if (ret)
		return ret;
	ret = kvtier_pool_open(ctx, argv[1], KVTIER_POOL_RDONLY, &pool);
	kvtier_close(ctx);
	if (ret)
		return fail(argv[1], ret);
	ret = kvtier_stat(pool, &st);
	kvtier_pool_close(pool);
	if (ret)
		return fail(argv[1], ret);

#define P(fmt, name, val) printf("%-16s " fmt "\n", name, val)
	P("%s", "name", argv[1]);
	P("%llu", "block_size", (unsigned long long)st.block_size);
	P("%u", "capacity", st.capacity);
	P("%u", "dram_blocks", st.dram_blocks);
	P("%d", "numa_node", st.numa_node);
	P("%04o", "mode", st.mode);
	P("%u", "uid", st.uid);
	P("%u", "gid", st.gid);
	for (t = KVTIER_TIER_HBM; t < KVTIER_NR_TIERS; t++) {
		char name[32];

		snprintf(name, sizeof(name), "resident_%s",
			 kvtier_tier_name(t));
		printf("%-16s %llu (%s)\n", name,
		       (unsigned long long)st.resident[t],
		       human_bytes((double)st.resident[t] * st.block_size,
				   buf, sizeof(buf)));
	}
	P("%llu", "pinned", (unsigned long long)st.pinned);
	P("%llu", "puts", (unsigned long long)st.puts);
	P("%llu", "gets", (unsigned long long)st.gets);
	P("%llu", "hits", (unsigned long long)st.hits);
	P("%llu", "misses", (unsigned long long)st.misses);
	P("%llu", "evictions", (unsigned long long)st.evictions);
	P("%llu", "drops", (unsigned long long)st.drops);
	P("%llu", "bytes_in", (unsigned long long)st.bytes_in);
	P("%llu", "bytes_out", (unsigned long long)st.bytes_out);
	P("%llu", "meta_bytes", (unsigned long long)st.meta_bytes);
	P("%llu", "demotions", (unsigned long long)st.demotions);
	P("%llu", "promotions", (unsigned long long)st.promotions);
	P("%llu", "bad_reads", (unsigned long long)st.bad_reads);
	P("%llu", "dirty", (unsigned long long)st.dirty);
	P("%llu", "lost_blocks", (unsigned long long)st.lost_blocks);
	P("%u", "parts", st.parts);
	P("%llu", "part_reads", (unsigned long long)st.part_reads);
	P("%u", "compress", st.compress);
	P("%u", "compress_flags", st.compress_flags);
	P("%llu", "z_blocks", (unsigned long long)st.z_blocks);
	P("%llu", "z_raw_blocks", (unsigned long long)st.z_raw_blocks);
	printf("%-16s %llu (ratio %.3f)\n", "z_bytes_stored",
	       (unsigned long long)st.z_bytes_stored,
	       st.z_bytes_stored ? (double)st.z_bytes_in / st.z_bytes_stored :
				   0);
	P("%llu", "z_bad", (unsigned long long)st.z_bad);
	printf("%-16s %llu (%s)\n", "dram_reserved",
	       (unsigned long long)st.dram_reserved,
	       human_bytes(st.dram_reserved, buf, sizeof(buf)));
#undef P
	return 0;
}

static int cmd_sync(int argc, char **argv)
{
	struct kvtier_pool *pool;
	struct kvtier_ctx *ctx;
	uint64_t written;
	int ret;

	if (argc != 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	ret = open_ctx(&ctx, KVTIER_F_POOLS | KVTIER_F_NVME);
	if (ret)
		return ret;
	ret = kvtier_pool_open(ctx, argv[1], 0, &pool);
	kvtier_close(ctx);
	if (ret)
		return fail(argv[1], ret);
	ret = kvtier_sync(pool, &written);
	kvtier_pool_close(pool);
	if (ret) {
		char what[KVTIER_NAME_MAX + 16];

		snprintf(what, sizeof(what), "sync %s", argv[1]);
		return fail_nvme(what, ret);
	}
	printf("synced pool %s: %llu blocks written\n", argv[1],
	       (unsigned long long)written);
	return 0;
}

/* ---- events and the census --------------------------------------------- */

static volatile sig_atomic_t events_stop;

static void events_on_signal(int sig)
{
	(void)sig;
	events_stop = 1;
}

/* A context with the events feature, and the pool opened read-only. */
static int open_events_pool(const char *name, int meta,
			    struct kvtier_pool **pool)
{
	struct kvtier_ctx *ctx;
	struct kvtier_api api;
	int ret;

	ret = open_ctx(&ctx, KVTIER_FEATURES_ALL);
	if (ret)
		return ret;
	kvtier_api_info(ctx, &api);
	if (!(api.features & KVTIER_F_EVENTS) ||
	    (meta && !(api.features & KVTIER_F_META))) {
		kvtier_close(ctx);
		fprintf(stderr, "%s: %s: this kvtier module has no %s\n", prog,
			name, meta && (api.features & KVTIER_F_EVENTS) ?
			"block metadata (KVTIER_F_META)" :
			"events (KVTIER_F_EVENTS)");
		return EXIT_FAILURE;
	}
	ret = kvtier_pool_open(ctx, name, KVTIER_POOL_RDONLY, pool);
	kvtier_close(ctx);
	if (ret)
		return fail(name, ret);
	return 0;
}

/* A key as 32 hex digits: the number key[0] + key[1] * 2^64. */
static void print_key(const __u64 *key)
{
	printf("\"%016llx%016llx\"", (unsigned long long)key[1],
	       (unsigned long long)key[0]);
}

/* A JSON field: the name as a string, a number when unnamed, or null. */
static void print_name(const char *field, const char *name, unsigned int v)
{
	if (!v)
		printf(",\"%s\":null", field);
	else if (name && strcmp(name, "?"))
		printf(",\"%s\":\"%s\"", field, name);
	else
		printf(",\"%s\":%u", field, v);
}

static void print_event(const struct kvtier_event *e)
{
	printf("{\"seq\":%llu,\"time_ns\":%llu", (unsigned long long)e->seq,
	       (unsigned long long)e->time_ns);
	print_name("type", kvtier_event_name(e->type), e->type);
	printf(",\"key\":");
	print_key(e->key);
	if (e->addr == KVTIER_ADDR_NONE)
		printf(",\"addr\":null");
	else
		printf(",\"addr\":%llu", (unsigned long long)e->addr);
	print_name("tier", kvtier_tier_name(e->tier), e->tier);
	print_name("from", kvtier_tier_name(e->from), e->from);
	print_name("reason", kvtier_event_reason_name(e->reason), e->reason);
	printf(",\"lost\":%llu}\n", (unsigned long long)e->lost);
}

/* The tiers a census entry has copies in, as a JSON array. */
static void print_copies(uint32_t flags)
{
	static const struct {
		uint32_t flag;
		unsigned int tier;
	} copies[] = {
		{ KVTIER_CENSUS_HBM, KVTIER_TIER_HBM },
		{ KVTIER_CENSUS_DRAM, KVTIER_TIER_DRAM },
		{ KVTIER_CENSUS_NVME, KVTIER_TIER_NVME },
	};
	const char *sep = "";
	size_t c;

	printf(",\"copies\":[");
	for (c = 0; c < sizeof(copies) / sizeof(copies[0]); c++) {
		if (!(flags & copies[c].flag))
			continue;
		printf("%s\"%s\"", sep, kvtier_tier_name(copies[c].tier));
		sep = ",";
	}
	printf("]");
}

static int cmd_events(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "follow", no_argument, NULL, 'f' },
		{ "from", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	struct kvtier_event ev[64];
	struct kvtier_pool *pool;
	struct sigaction sa;
	uint64_t from = 0;
	int opt, li = 0, follow = 0, fd, ret = 0;
	ssize_t n, i;

	if (argc < 2 || argv[1][0] == '-') {
		fprintf(stderr, "%s: events: missing pool NAME\n", prog);
		return EXIT_USAGE;
	}
	optind = 2;
	while ((opt = getopt_long(argc, argv, "", opts, &li)) != -1) {
		switch (opt) {
		case 'f':
			follow = 1;
			break;
		case 's':
			if (parse_u64(optarg, &from) || !from) {
				fprintf(stderr, "%s: events: bad value '%s' for --from\n",
					prog, optarg);
				return EXIT_USAGE;
			}
			break;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "%s: events: unexpected argument '%s'\n", prog,
			argv[optind]);
		return EXIT_USAGE;
	}

	ret = open_events_pool(argv[1], 0, &pool);
	if (ret)
		return ret;
	fd = kvtier_events_open(pool, from, 0, NULL);
	/* The events fd does not keep the pool: neither does kvtierctl. */
	kvtier_pool_close(pool);
	if (fd < 0)
		return fail(argv[1], fd);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = events_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	while (!events_stop) {
		n = kvtier_events_read(fd, ev, 64, follow ? -1 : 0);
		if (n == -EINTR)
			continue;
		if (n == -ETIMEDOUT && !follow)
			break;
		if (n < 0) {
			ret = fail(argv[1], n);
			break;
		}
		if (!n)		/* the pool is gone, CLEARED was its last */
			break;
		for (i = 0; i < n; i++)
			print_event(&ev[i]);
		fflush(stdout);
	}
	close(fd);
	return ret;
}

static int cmd_keys(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "meta", no_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 },
	};
	enum { PER_CALL = 1024 };
	struct kvtier_census_entry *ent = NULL;
	struct kvtier_meta *meta = NULL;
	uint64_t cursor = 0, seq = 0, log_id = 0, total = 0, s, id;
	struct kvtier_pool *pool;
	int opt, li = 0, with_meta = 0, ret, n, i, first = 1;
	uint32_t b;

	if (argc < 2 || argv[1][0] == '-') {
		fprintf(stderr, "%s: keys: missing pool NAME\n", prog);
		return EXIT_USAGE;
	}
	optind = 2;
	while ((opt = getopt_long(argc, argv, "", opts, &li)) != -1) {
		if (opt != 'm')
			return EXIT_USAGE;
		with_meta = 1;
	}
	if (optind != argc) {
		fprintf(stderr, "%s: keys: unexpected argument '%s'\n", prog,
			argv[optind]);
		return EXIT_USAGE;
	}

	ret = open_events_pool(argv[1], with_meta, &pool);
	if (ret)
		return ret;
	ent = calloc(PER_CALL, sizeof(*ent));
	if (with_meta)
		meta = calloc(PER_CALL, sizeof(*meta));
	if (!ent || (with_meta && !meta)) {
		ret = fail(argv[1], -ENOMEM);
		goto out;
	}
	while (cursor != KVTIER_ADDR_NONE) {
		n = kvtier_census(pool, &cursor, ent, meta, PER_CALL, &s, &id);
		if (n < 0) {
			ret = fail(argv[1], n);
			goto out;
		}
		/* The listing reflects its first call's event and those after. */
		if (first) {
			seq = s;
			log_id = id;
			first = 0;
		}
		for (i = 0; i < n; i++) {
			printf("{\"key\":");
			print_key(ent[i].key);
			printf(",\"addr\":%llu", (unsigned long long)ent[i].addr);
			print_name("tier", kvtier_tier_name(ent[i].tier),
				   ent[i].tier);
			print_copies(ent[i].flags);
			printf(",\"pinned\":%s",
			       ent[i].flags & KVTIER_CENSUS_PINNED ? "true" : "false");
			if (meta) {
				printf(",\"meta\":\"");
				for (b = 0; b < meta[i].len && b < KVTIER_META_MAX; b++)
					printf("%02x", meta[i].data[b]);
				printf("\"");
			}
			printf("}\n");
		}
		total += n;
	}
	printf("{\"seq\":%llu,\"log_id\":\"%016llx\",\"keys\":%llu}\n",
	       (unsigned long long)seq, (unsigned long long)log_id,
	       (unsigned long long)total);
out:
	free(ent);
	free(meta);
	kvtier_pool_close(pool);
	return ret;
}

/* ---- NVMe tier --------------------------------------------------------- */

/*
 * What the first 4 KiB of a device say. The superblock layout is the
 * module's (kmod/nvme_format.h, Documentation/nvme-format.rst): little-endian
 * magic "kvtiersb", version, flags, uuid, geometry, and a crc32c of the
 * 88-byte struct with its crc field zero.
 */
#define SB_MAGIC	0x627372656974766bULL	/* "kvtiersb" */
#define SB_BYTES	88
#define SB_CRC_OFF	84

enum sb_kind {
	SB_UNREADABLE,
	SB_ZERO,	/* blank: kvtier formats it on attach */
	SB_KVTIER,	/* a kvtier store */
	SB_BAD,		/* kvtier magic, bad checksum */
	SB_OTHER,	/* anything else */
};

struct sb_info {
	enum sb_kind kind;
	int err;		/* SB_UNREADABLE: why */
	uint32_t version;
	uint8_t uuid[16];
	uint64_t dev_bytes;
	uint64_t region_bytes;
	uint32_t nr_regions;
	uint64_t generation;
};

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The kernel's crc32c(): Castagnoli, reflected, no final inversion. */
static uint32_t crc32c(uint32_t crc, const uint8_t *p, size_t len)
{
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = crc >> 1 ^ (0x82f63b78 & -(crc & 1));
	}
	return crc;
}

/* Read the first 4 KiB, bypassing the page cache (kvtier writes with bios). */
static void read_sb(const char *path, struct sb_info *sb)
{
	uint8_t *page = NULL, tmp[SB_BYTES];
	ssize_t n;
	size_t i;
	int fd;

	memset(sb, 0, sizeof(*sb));
	sb->kind = SB_UNREADABLE;
	fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		sb->err = -errno;
		return;
	}
	if (posix_memalign((void **)&page, 4096, 4096)) {
		sb->err = -ENOMEM;
		goto out_close;
	}
	n = pread(fd, page, 4096, 0);
	if (n != 4096) {
		sb->err = n < 0 ? -errno : -EIO;
		goto out_free;
	}
	for (i = 0; i < 4096 && !page[i]; i++)
		;
	if (i == 4096) {
		sb->kind = SB_ZERO;
		goto out_free;
	}
	if (le64(page) != SB_MAGIC) {
		sb->kind = SB_OTHER;
		goto out_free;
	}
	memcpy(tmp, page, SB_BYTES);
	memset(tmp + SB_CRC_OFF, 0, 4);
	sb->kind = crc32c(~0U, tmp, SB_BYTES) == le32(page + SB_CRC_OFF) ?
		   SB_KVTIER : SB_BAD;
	sb->version = le32(page + 8);
	memcpy(sb->uuid, page + 16, 16);
	sb->dev_bytes = le64(page + 32);
	sb->region_bytes = le64(page + 40);
	sb->nr_regions = le32(page + 48);
	sb->generation = le64(page + 72);
out_free:
	free(page);
out_close:
	close(fd);
}

/* Names in /sys/block/NAME/holders, space-separated; 0 if none. */
static int sysfs_holders(const char *name, char *buf, size_t size)
{
	char path[256];
	struct dirent *de;
	size_t len = 0;
	int n = 0;
	DIR *d;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/sys/block/%s/holders", name);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		len += snprintf(buf + len, len < size ? size - len : 0, "%s%s",
				n ? " " : "", de->d_name);
		n++;
	}
	closedir(d);
	return n;
}

/* Whether sysfs path @link names block device @name or a partition of it. */
static int is_dev_or_part(const char *link, const char *name)
{
	const char *base = strrchr(link, '/'), *parent;
	size_t len = strlen(name);

	if (!base)
		return 0;
	if (!strcmp(base + 1, name))
		return 1;
	/* .../block/nvme0n1/nvme0n1p1 */
	for (parent = base - 1; parent > link && *parent != '/'; parent--)
		;
	return *parent == '/' && (size_t)(base - parent - 1) == len &&
	       !strncmp(parent + 1, name, len);
}

/* Where block device @name (or one of its partitions) is mounted, if it is. */
static int mounted_at(const char *name, char *buf, size_t size)
{
	char line[4096], path[64], link[512], mnt[2048];
	unsigned int maj, min;
	int found = 0;
	ssize_t n;
	FILE *f;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		/* id parent maj:min root mountpoint ... */
		if (sscanf(line, "%*u %*u %u:%u %*s %2047s", &maj, &min, mnt) != 3)
			continue;
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", maj, min);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (is_dev_or_part(link, name)) {
			size_t len = strlen(mnt);

			if (len >= size)
				len = size - 1;
			memcpy(buf, mnt, len);
			buf[len] = '\0';
			found = 1;
		}
	}
	fclose(f);
	return found;
}

/* 0 if @path can be opened exclusively now, -EBUSY if claimed, or -errno. */
static int try_exclusive(const char *path)
{
	int fd = open(path, O_RDONLY | O_EXCL | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/*
 * Who holds block device NAME: "kvtier (attached)", "kvtier store", "blank",
 * "holders: dm-0", "mounted on /x", "in use", "other data".
 */
static void describe_holder(const char *name, const struct kvtier_nvme_stat *ns,
			    int have_stat, char *buf, size_t size)
{
	char path[256], uuid[40], what[512], holders[256];
	struct sb_info sb;
	int busy;

	snprintf(path, sizeof(path), "/dev/%s", name);
	read_sb(path, &sb);
	busy = try_exclusive(path) == -EBUSY;

	if (sb.kind == SB_KVTIER) {
		format_uuid(sb.uuid, uuid, sizeof(uuid));
		if (have_stat && ns->attached && busy &&
		    !memcmp(sb.uuid, ns->uuid, sizeof(sb.uuid))) {
			snprintf(buf, size, "kvtier (attached), store %.8s gen %llu",
				 uuid, (unsigned long long)sb.generation);
			return;
		}
		snprintf(what, sizeof(what), "kvtier store %.8s v%u gen %llu, %u x %llu MiB regions",
			 uuid, sb.version, (unsigned long long)sb.generation,
			 sb.nr_regions, (unsigned long long)(sb.region_bytes >> 20));
	} else if (sb.kind == SB_BAD) {
		snprintf(what, sizeof(what), "kvtier superblock with a bad checksum");
	} else if (sb.kind == SB_ZERO) {
		snprintf(what, sizeof(what), "blank");
	} else if (sb.kind == SB_OTHER) {
		snprintf(what, sizeof(what), "other data");
	} else {
		snprintf(what, sizeof(what), "unreadable: %s", strerror(-sb.err));
	}

	if (sysfs_holders(name, holders, sizeof(holders)))
		snprintf(buf, size, "held by %s; %s", holders, what);
	else if (mounted_at(name, holders, sizeof(holders)))
		snprintf(buf, size, "mounted on %s; %s", holders, what);
	else if (busy)
		snprintf(buf, size, "in use (opened exclusively); %s", what);
	else
		snprintf(buf, size, "free; %s", what);
}

struct ns_row {
	char name[64];
	char size[32];
	char lba[48];
	char model[48];
	char serial[32];
};

static void trim(char *s)
{
	size_t n = strlen(s);

	while (n && s[n - 1] == ' ')
		s[--n] = '\0';
}

static void ns_row_fill(nvme_ns_t n, struct ns_row *r)
{
	struct nvme_id_ns id;
	int lba = nvme_ns_get_lba_size(n), meta = nvme_ns_get_meta_size(n);
	char b[32];

	snprintf(r->name, sizeof(r->name), "%s", nvme_ns_get_name(n));
	snprintf(r->size, sizeof(r->size), "%s",
		 human_bytes((double)nvme_ns_get_lba_count(n) * lba, b, sizeof(b)));
	snprintf(r->model, sizeof(r->model), "%s", nvme_ns_get_model(n) ?: "?");
	snprintf(r->serial, sizeof(r->serial), "%s", nvme_ns_get_serial(n) ?: "?");
	trim(r->model);
	trim(r->serial);
	/* The format in use and how many the namespace offers (needs root). */
	if (!nvme_ns_identify(n, &id)) {
		unsigned int f = (id.flbas & NVME_NS_FLBAS_LOWER_MASK) |
				 ((id.flbas & NVME_NS_FLBAS_HIGHER_MASK) >> 1);

		snprintf(r->lba, sizeof(r->lba), "%d+%d (#%u of %u)", lba, meta,
			 f, id.nlbaf + 1);
	} else {
		snprintf(r->lba, sizeof(r->lba), "%d+%d", lba, meta);
	}
}

static int cmp_row(const void *a, const void *b)
{
	return strcmp(((const struct ns_row *)a)->name,
		      ((const struct ns_row *)b)->name);
}

static int cmd_nvme(void)
{
	static const char * const heads[] = {
		"DEV", "SIZE", "LBA+META", "MODEL", "SERIAL", "HOLDER",
	};
	struct kvtier_nvme_stat ns;
	struct ns_row *rows = NULL;
	struct kvtier_ctx *ctx;
	int nrows = 0, i, w[5], have_stat = 0;
	nvme_host_t h;
	nvme_subsystem_t s;
	nvme_ctrl_t c;
	nvme_ns_t n;
	nvme_root_t r;

	r = nvme_create_root(stderr, LOG_ERR);
	if (!r)
		return fail("libnvme", -ENOMEM);
	if (nvme_scan_topology(r, NULL, NULL)) {
		int err = -errno;

		nvme_free_tree(r);
		if (err == -ENOENT) {
			/* No /sys/class/nvme-subsystem: no driver, no devices. */
			printf("no NVMe namespaces (is the nvme driver loaded?)\n");
			return 0;
		}
		return fail("libnvme: scan", err ? err : -EIO);
	}

	/* Namespaces appear under a multipath subsystem or a controller. */
	nvme_for_each_host(r, h) {
		nvme_for_each_subsystem(h, s) {
			nvme_subsystem_for_each_ns(s, n) {
				struct ns_row *p = realloc(rows, (nrows + 1) * sizeof(*p));

				if (!p)
					goto out_nomem;
				rows = p;
				ns_row_fill(n, &rows[nrows++]);
			}
			nvme_subsystem_for_each_ctrl(s, c) {
				nvme_ctrl_for_each_ns(c, n) {
					struct ns_row *p;

					for (i = 0; i < nrows; i++)
						if (!strcmp(rows[i].name, nvme_ns_get_name(n)))
							break;
					if (i < nrows)
						continue;
					p = realloc(rows, (nrows + 1) * sizeof(*p));
					if (!p)
						goto out_nomem;
					rows = p;
					ns_row_fill(n, &rows[nrows++]);
				}
			}
		}
	}
	nvme_free_tree(r);
	r = NULL;

	if (!nrows) {
		printf("no NVMe namespaces\n");
		return 0;
	}
	qsort(rows, nrows, sizeof(*rows), cmp_row);

	if (!kvtier_open(&ctx, KVTIER_FEATURES_ALL)) {
		have_stat = !kvtier_nvme_stat(ctx, &ns);
		kvtier_close(ctx);
	}
	for (i = 0; i < 5; i++)
		w[i] = strlen(heads[i]);
	for (i = 0; i < nrows; i++) {
		const char *cell[5] = { rows[i].name, rows[i].size, rows[i].lba,
					rows[i].model, rows[i].serial };
		int k;

		for (k = 0; k < 5; k++)
			if ((int)strlen(cell[k]) > w[k])
				w[k] = strlen(cell[k]);
	}
	printf("%-*s  %*s  %-*s  %-*s  %-*s  %s\n", w[0], heads[0], w[1], heads[1],
	       w[2], heads[2], w[3], heads[3], w[4], heads[4], heads[5]);
	for (i = 0; i < nrows; i++) {
		char holder[768];

		describe_holder(rows[i].name, &ns, have_stat, holder, sizeof(holder));
		printf("%-*s  %*s  %-*s  %-*s  %-*s  %s\n", w[0], rows[i].name,
		       w[1], rows[i].size, w[2], rows[i].lba, w[3], rows[i].model,
		       w[4], rows[i].serial, holder);
	}
	if (!have_stat)
		printf("(kvtier module not loaded or without an NVMe tier: attachment not checked)\n");
	free(rows);
	return 0;

out_nomem:
	nvme_free_tree(r);
	free(rows);
	return fail("nvme", -ENOMEM);
}

/* Refuse to format a device that holds something else, unless forced. */
static int format_guard(const char *dev, int force)
{
	struct sb_info sb;

	if (force)
		return 0;
	read_sb(dev, &sb);
	if (sb.kind == SB_ZERO || sb.kind == SB_KVTIER || sb.kind == SB_BAD)
		return 0;
	if (sb.kind == SB_UNREADABLE)
		return fail(dev, sb.err);
	fprintf(stderr, "%s: %s holds something else than a kvtier store; add --force to format it\n",
		prog, dev);
	return EXIT_FAILURE;
}

static void print_attached(struct kvtier_ctx *ctx, const char *dev,
			   int formatted)
{
	struct kvtier_nvme_stat ns;
	char b1[32], b2[32];

	if (kvtier_nvme_stat(ctx, &ns) || !ns.attached) {
		printf("attached %s\n", dev);
		return;
	}
	printf("attached %s%s: %s, %u regions of %s (%u free), attach %.3f s\n",
	       dev, formatted ? " (formatted)" : "",
	       human_bytes(ns.dev_bytes, b1, sizeof(b1)), ns.nr_regions,
	       human_bytes(ns.region_bytes, b2, sizeof(b2)), ns.free_regions,
	       ns.attach_ns / 1e9);
}

/* attach DEV [--format] [--region-kib N] [--force]; format DEV [...]. */
static int cmd_attach(int argc, char **argv, int format_only)
{
	static const struct option opts[] = {
		{ "format", no_argument, NULL, 'f' },
		{ "region-kib", required_argument, NULL, 'r' },
		{ "force", no_argument, NULL, 'F' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd = format_only ? "format" : "attach", *dev;
	uint32_t flags = format_only ? KVTIER_NVME_FORMAT : 0, region_kib = 0;
	char what[300];
	struct kvtier_ctx *ctx;
	int opt, li = 0, ret, force = 0;
	uint64_t v;

	/* Options before or after DEV. */
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", opts, &li)) != -1) {
		switch (opt) {
		case 'f':	/* implied by format */
			flags |= KVTIER_NVME_FORMAT;
			break;
		case 'r':
			if (parse_u64(optarg, &v) || v > UINT32_MAX) {
				fprintf(stderr, "%s: %s: bad value '%s' for --region-kib\n",
					prog, cmd, optarg);
				return EXIT_USAGE;
			}
			region_kib = v;
			break;
		case 'F':
			force = 1;
			break;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind == argc) {
		fprintf(stderr, "%s: %s: missing block device DEV\n", prog, cmd);
		return EXIT_USAGE;
	}
	dev = argv[optind++];
	if (optind != argc) {
		fprintf(stderr, "%s: %s: unexpected argument '%s'\n", prog, cmd,
			argv[optind]);
		return EXIT_USAGE;
	}
	if ((region_kib || force) && !(flags & KVTIER_NVME_FORMAT)) {
		fprintf(stderr, "%s: attach: --region-kib and --force go with --format\n",
			prog);
		return EXIT_USAGE;
	}
	if (flags & KVTIER_NVME_FORMAT) {
		ret = format_guard(dev, force);
		if (ret)
			return ret;
	}

	ret = open_ctx(&ctx, KVTIER_F_NVME);
	if (ret)
		return ret;
	snprintf(what, sizeof(what), "%s %s", cmd, dev);
	ret = kvtier_nvme_attach(ctx, dev, flags, region_kib);
	if (ret) {
		kvtier_close(ctx);
		return fail_nvme(what, ret);
	}
	if (!format_only) {
		print_attached(ctx, dev, flags & KVTIER_NVME_FORMAT);
		kvtier_close(ctx);
		return 0;
	}
	ret = kvtier_nvme_detach_path(ctx, dev);
	kvtier_close(ctx);
	if (ret)
		return fail_nvme("format: detach", ret);
	printf("formatted %s: an empty kvtier store, regions of %u KiB; attach it with '%s attach %s'\n",
	       dev, region_kib ? region_kib : 4096, prog, dev);
	return 0;
}

static int cmd_detach(const char *dev)
{
	struct kvtier_ctx *ctx;
	int ret;

	ret = open_ctx(&ctx, KVTIER_F_NVME);
	if (ret)
		return ret;
	ret = dev ? kvtier_nvme_detach_path(ctx, dev) : kvtier_nvme_detach(ctx);
	kvtier_close(ctx);
	if (ret)
		return fail_nvme("detach", ret);
	if (dev)
		printf("detached %s\n", dev);
	else
		printf("detached the NVMe tier\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "status") && argc == 2)
		return cmd_status();
	if (!strcmp(cmd, "pools") && argc == 2)
		return cmd_pools();
	if (!strcmp(cmd, "create"))
		return cmd_create(argc - 1, argv + 1);
	if (!strcmp(cmd, "destroy"))
		return cmd_destroy(argc - 1, argv + 1);
	if (!strcmp(cmd, "stat"))
		return cmd_stat(argc - 1, argv + 1);
	if (!strcmp(cmd, "sync"))
		return cmd_sync(argc - 1, argv + 1);
	if (!strcmp(cmd, "top"))
		return cmd_top(argc - 1, argv + 1);
	if (!strcmp(cmd, "events"))
		return cmd_events(argc - 1, argv + 1);
	if (!strcmp(cmd, "keys"))
		return cmd_keys(argc - 1, argv + 1);
	if (!strcmp(cmd, "nvme") && argc == 2)
		return cmd_nvme();
	if (!strcmp(cmd, "attach"))
		return cmd_attach(argc - 1, argv + 1, 0);
	if (!strcmp(cmd, "format"))
		return cmd_attach(argc - 1, argv + 1, 1);
	if (!strcmp(cmd, "detach") && argc <= 3)
		return cmd_detach(argc == 3 ? argv[2] : NULL);
	fprintf(stderr, "%s: unknown command or arguments: %s\n", prog, cmd);
	usage(stderr);
	return EXIT_USAGE;
}
