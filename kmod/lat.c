// SPDX-License-Identifier: GPL-2.0
/*
 * Latency histograms of the NVMe tier, since load: a block's read, from
 * its submission to its copy verified or given up (retries included), and
 * a segment's write, from its writer taking it to its summary durable.
 * The buckets are log-linear, four to each power of two: bucket i counts
 * the operations that took [lo(i), lo(i + 1)) microseconds, where lo(i) is
 * i below 4 and (4 + i % 4) << (i / 4 - 1) from there (4, 5, 6, 7, 8, 10,
 * 12, 14, 16, 20, ...), so a percentile read off them is within 25%; the
 * last bucket also counts what took longer (from 29 s).
 * /sys/kernel/kvtier/nvme_read_latency and nvme_write_latency show them.
 */
#include <linux/atomic.h>
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/sysfs.h>
#include <linux/timekeeping.h>
#include "kvt.h"

static atomic64_t kvt_lat[KVT_LAT_NR][KVT_LAT_BUCKETS];

/**
 * kvt_lat_add() - count one operation in its histogram
 * @op: KVT_LAT_READ or KVT_LAT_WRITE
 * @start: ktime_get_ns() when it started
 */
void kvt_lat_add(enum kvt_lat_op op, u64 start)
{
	u64 us = (ktime_get_ns() - start) / NSEC_PER_USEC;
	unsigned int i = us, e;

	if (us >= 4) {
		e = ilog2(us);
		i = 4 * (e - 1) + ((us >> (e - 2)) & 3);
	}
	i = min_t(unsigned int, i, KVT_LAT_BUCKETS - 1);
	atomic64_inc(&kvt_lat[op][i]);
}

/**
 * kvt_lat_show() - one histogram as a sysfs line
 * @op: KVT_LAT_READ or KVT_LAT_WRITE
 * @buf: the sysfs page
 *
 * Return: the line's length: KVT_LAT_BUCKETS counts.
 */
ssize_t kvt_lat_show(enum kvt_lat_op op, char *buf)
{
	ssize_t len = 0;
	unsigned int i;

	for (i = 0; i < KVT_LAT_BUCKETS; i++)
		len += sysfs_emit_at(buf, len, "%s%lld", i ? " " : "",
				     atomic64_read(&kvt_lat[op][i]));
	return len + sysfs_emit_at(buf, len, "\n");
}
