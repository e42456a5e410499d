/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Small helpers shared by kvtierctl, kvtier-demo and kvtier-bench.
 */
#ifndef KVTIER_TOOLS_UTIL_H
#define KVTIER_TOOLS_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Sysfs files the module publishes (Documentation/ABI). */
#define KVT_SYSFS_STAT		"/sys/kernel/kvtier/stat"
#define KVT_SYSFS_POOLS		"/sys/kernel/kvtier/pools"
#define KVT_SYSFS_PARAMS	"/sys/module/kvtier/parameters"

/* Column names of the sysfs one-line stat files, in order. */
#define KVT_STAT_COLS \
	"pools dram_budget_bytes dram_reserved_bytes dram_used_bytes puts gets hits misses evictions drops"
#define KVT_POOL_STAT_COLS \
	"resident_dram pinned puts gets hits misses evictions drops bytes_in bytes_out"
#define KVT_POOL_CONFIG_COLS \
	"block_size capacity dram_blocks numa_node mode uid gid"

/**
 * parse_size() - parse a number with an optional K/M/G/T suffix (powers of 2)
 * @s:		the text.
 * @out:	out: the value.
 *
 * Return: 0, or -EINVAL for junk, -ERANGE on overflow.
 */
int parse_size(const char *s, uint64_t *out);

/**
 * parse_u64() - parse a plain number (decimal, 0x hex or 0 octal)
 * @s:		the text.
 * @out:	out: the value.
 *
 * Return: 0 or -EINVAL.
 */
int parse_u64(const char *s, uint64_t *out);

/**
 * now_ns() - CLOCK_MONOTONIC in nanoseconds
 *
 * Return: the time.
 */
uint64_t now_ns(void);

/**
 * read_line() - read the first line of a (sysfs) file, newline stripped
 * @path:	the file.
 * @buf:	out: the line.
 * @size:	size of @buf.
 *
 * Return: 0 or -errno.
 */
int read_line(const char *path, char *buf, size_t size);

/**
 * free_dram_budget() - DRAM budget not yet reserved by pools
 * @fallback:	what to return when /sys/kernel/kvtier/stat cannot be read
 *		(e.g. kvtier_api.dram_bytes, the whole budget).
 *
 * Return: dram_budget_bytes - dram_reserved_bytes, or @fallback.
 */
uint64_t free_dram_budget(uint64_t fallback);

/**
 * human_bytes() - format a byte count as "1.5 GiB"
 * @bytes:	the count.
 * @buf:	out: the text.
 * @size:	size of @buf.
 *
 * Return: @buf.
 */
const char *human_bytes(double bytes, char *buf, size_t size);

/**
 * blockdev_is_vm_drive() - whether a block device is an emulated drive of
 * tools/vm/kvtier-vm (model "QEMU NVMe Ctrl", serial "kvt<N>")
 * @dev:	path of the block device, e.g. "/dev/nvme0n1".
 *
 * The tools write to such a drive unasked (the bench formats it, the demo
 * attaches it); any other device only when the user names it.
 *
 * Return: 1 if it is one, else 0.
 */
int blockdev_is_vm_drive(const char *dev);

/**
 * blockdev_check() - whether a block device can be used exclusively now
 * @dev:	path of the block device.
 * @bytes:	out (optional): its size in bytes.
 *
 * Opens @dev with O_EXCL, as a mount or kvtier's attach would, and closes
 * it again.
 *
 * Return: 0; -EBUSY when something holds it (mounted, claimed by a driver,
 * attached to kvtier); -ENOTBLK when it is not a block device; -errno.
 */
int blockdev_check(const char *dev, uint64_t *bytes);

/*
 * The NVMe tier's latency histograms, /sys/kernel/kvtier/nvme_read_latency
 * and nvme_write_latency (Documentation/ABI): KVT_LAT_BUCKETS log-linear
 * buckets of microseconds, four to each power of two.
 */
#define KVT_LAT_BUCKETS		96

/**
 * lat_hist_read() - read one histogram
 * @op:		"read" or "write".
 * @h:		out: its KVT_LAT_BUCKETS counts.
 *
 * Return: 0, or -errno (-ENOENT from a module without them).
 */
int lat_hist_read(const char *op, uint64_t *h);

/**
 * lat_hist_pct() - a percentile of what a histogram gained
 * @h0:		the counts before, or NULL for none.
 * @h1:		the counts after.
 * @pct:	the percentile, 0 to 100.
 *
 * Return: the upper edge in microseconds of the bucket holding it, or 0
 * when nothing was counted.
 */
double lat_hist_pct(const uint64_t *h0, const uint64_t *h1, double pct);

#endif /* KVTIER_TOOLS_UTIL_H */
