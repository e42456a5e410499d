// SPDX-License-Identifier: GPL-2.0
/*
 * Small helpers shared by kvtierctl, kvtier-demo and kvtier-bench.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <linux/fs.h>

#include "util.h"

int parse_u64(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K':
		shift = 10;
		break;
	case 'm': case 'M':
		shift = 20;
		break;
	case 'g': case 'G':
		shift = 30;
		break;
	case 't': case 'T':
		shift = 40;
		break;
	case '\0':
		break;
	default:
		return -EINVAL;
	}
	if (shift) {
		end++;
		if (*end == 'i' || *end == 'I')
			end++;
		if (*end == 'b' || *end == 'B')
			end++;
		if (*end)
			return -EINVAL;
		if (v > (~0ULL >> shift))
			return -ERANGE;
	}
	*out = v << shift;
	return 0;
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

int read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	size_t len;

	if (!f)
		return -errno;
	if (!fgets(buf, size, f)) {
		int ret = ferror(f) ? -EIO : -ENODATA;

		fclose(f);
		return ret;
	}
	fclose(f);
	len = strlen(buf);
	if (len && buf[len - 1] == '\n')
		buf[len - 1] = '\0';
	return 0;
}

uint64_t free_dram_budget(uint64_t fallback)
{
	unsigned long long pools, budget, reserved;
	char line[512];

	if (!read_line(KVT_SYSFS_STAT, line, sizeof(line)) &&
	    sscanf(line, "%llu %llu %llu", &pools, &budget, &reserved) == 3 &&
	    reserved <= budget)
		return budget - reserved;
	return fallback;
}

const char *human_bytes(double bytes, char *buf, size_t size)
{
	static const char * const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned int i = 0;

	while (bytes >= 1024 && i < sizeof(unit) / sizeof(unit[0]) - 1) {
		bytes /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, size, "%.0f %s", bytes, unit[i]);
	else
		snprintf(buf, size, "%.1f %s", bytes, unit[i]);
	return buf;
}

int blockdev_is_vm_drive(const char *dev)
{
	char real[PATH_MAX], path[PATH_MAX + 64], model[128], serial[128];
	const char *name;

	if (!realpath(dev, real))
		return 0;
	name = strrchr(real, '/');
	name = name ? name + 1 : real;
	snprintf(path, sizeof(path), "/sys/class/block/%s/device/model", name);
	if (read_line(path, model, sizeof(model)))
		return 0;
	snprintf(path, sizeof(path), "/sys/class/block/%s/device/serial", name);
	if (read_line(path, serial, sizeof(serial)))
		return 0;
	return !strncmp(model, "QEMU NVMe Ctrl", 14) &&
	       !strncmp(serial, "kvt", 3);
}

int blockdev_check(const char *dev, uint64_t *bytes)
{
	struct stat st;
	int fd, ret = 0;

	fd = open(dev, O_RDONLY | O_EXCL | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		ret = -errno;
	else if (!S_ISBLK(st.st_mode))
		ret = -ENOTBLK;
	else if (bytes && ioctl(fd, BLKGETSIZE64, bytes))
		ret = -errno;
	close(fd);
	return ret;
}

int lat_hist_read(const char *op, uint64_t *h)
{
	char path[128];
	FILE *f;
	int i, n = 0;

	snprintf(path, sizeof(path), "/sys/kernel/kvtier/nvme_%s_latency", op);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	for (i = 0; i < KVT_LAT_BUCKETS; i++)
		n += fscanf(f, "%llu", (unsigned long long *)&h[i]) == 1;
	fclose(f);
	return n == KVT_LAT_BUCKETS ? 0 : -EINVAL;
}

/* Bucket i's lower edge in microseconds. */
static double lat_bucket_lo(int i)
{
	return i < 4 ? i : (double)((4ULL + i % 4) << (i / 4 - 1));
}

double lat_hist_pct(const uint64_t *h0, const uint64_t *h1, double pct)
{
	uint64_t total = 0, sum = 0;
	int i;

	for (i = 0; i < KVT_LAT_BUCKETS; i++)
		total += h1[i] - (h0 ? h0[i] : 0);
	for (i = 0; i < KVT_LAT_BUCKETS && total; i++) {
		sum += h1[i] - (h0 ? h0[i] : 0);
		if (sum * 100.0 >= total * pct)
			return lat_bucket_lo(i + 1);
	}
	return 0;
}
