// SPDX-License-Identifier: GPL-2.0
/*
 * Fault injection points, for kernels built with
 * CONFIG_FAULT_INJECTION_DEBUG_FS (the debug-kernel lane); without it they
 * compile to nothing (kvt.h).
 *
 * Each point is a directory under /sys/kernel/debug/kvtier/ with the usual
 * fault_attr knobs: probability, interval, times, space, verbose (0 here by
 * default; Documentation/fault-injection/fault-injection.rst). Failures of
 * calls made by a task are injected with fail-nth, which counts these
 * points too; they also reach what runs in no caller's context:
 *
 *   fail_writer	allocations of the segment writer's memory: fresh
 *			ones in its worker, and its reserve's at attach
 *   fail_compress	compressions (the block is written raw) and
 *			decompressions (the copy is a miss) of the NVMe
 *			tier's copies (KVTIER_F_COMPRESS)
 *
 * And two delays, u32 files in the same directory:
 *
 *   direct_delay_ms	a read into user memory (KVTIER_GET_DIRECT) waits
 *			this long between taking its block's location and
 *			submitting its bios, as behind a slow device queue:
 *			the window in which the log's reclaim must wait for it
 *   writer_delay_ms	the segment writer waits this long before it takes
 *			each segment's blocks off its device's queue, as
 *			behind a slow device: the queue stays full meanwhile
 */
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/fault-inject.h>
#include "kvt.h"

static DECLARE_FAULT_ATTR(kvt_fail_writer);
static DECLARE_FAULT_ATTR(kvt_fail_compress);
static u32 kvt_direct_delay_ms;
static u32 kvt_writer_delay_ms;
static struct dentry *kvt_fault_dir;

/**
 * kvt_should_fail_writer() - whether an allocation of the writer fails
 * @size: the bytes it asks for
 *
 * Return: true to fail it.
 */
bool kvt_should_fail_writer(size_t size)
{
	return should_fail(&kvt_fail_writer, size);
}

/**
 * kvt_should_fail_compress() - whether a compression or decompression fails
 *
 * Return: true to fail it.
 */
bool kvt_should_fail_compress(void)
{
	return should_fail(&kvt_fail_compress, 1);
}

/**
 * kvt_fault_direct_delay() - wait direct_delay_ms, if set
 */
void kvt_fault_direct_delay(void)
{
	u32 ms = READ_ONCE(kvt_direct_delay_ms);

	if (ms)
		msleep(ms);
}

/**
 * kvt_fault_writer_delay() - wait writer_delay_ms, if set
 */
void kvt_fault_writer_delay(void)
{
	u32 ms = READ_ONCE(kvt_writer_delay_ms);

	if (ms)
		msleep(ms);
}

/**
 * kvt_fault_init() - create the points' debugfs files
 *
 * A point that cannot be created is only missing: no error.
 */
void kvt_fault_init(void)
{
	/*
	 * Silent unless asked: fail-nth walks every fault point of a call,
	 * these too, and a stack trace per failure is noise in dmesg.
	 */
	kvt_fail_writer.verbose = 0;
	kvt_fail_compress.verbose = 0;
	kvt_fault_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	fault_create_debugfs_attr("fail_writer", kvt_fault_dir,
				  &kvt_fail_writer);
	fault_create_debugfs_attr("fail_compress", kvt_fault_dir,
				  &kvt_fail_compress);
	debugfs_create_u32("direct_delay_ms", 0600, kvt_fault_dir,
			   &kvt_direct_delay_ms);
	debugfs_create_u32("writer_delay_ms", 0600, kvt_fault_dir,
			   &kvt_writer_delay_ms);
}

/**
 * kvt_fault_exit() - remove them
 */
void kvt_fault_exit(void)
{
	debugfs_remove_recursive(kvt_fault_dir);
}
