// SPDX-License-Identifier: GPL-2.0
/*
 * fail-nth: fail, one at a time, every fault-injection point (slab and page
 * allocations) that one kvtier command goes through, and check that each
 * failure gives a clean errno and leaves the pool consistent. Run by
 * tools/vm/fail-nth.sh in the debug-kernel VM (CONFIG_FAULT_INJECTION,
 * failslab and fail_page_alloc set to fail sleeping allocations too).
 *
 * For N = 1, 2, ...: write N to /proc/thread-self/fail-nth, issue the
 * command, read fail-nth back. 0 means the N-th fault point of the call was
 * failed: the command must have returned 0 (it recovered) or -ENOMEM, each
 * batch entry 0 or -ENOMEM, and the state after must be what that outcome
 * says (checked with further commands, no injection). A positive value
 * means the call has fewer than N points: the walk is over.
 *
 *   POOL_CREATE  failed: the name is free (POOL_OPEN -ENOENT) and a second
 *                create succeeds; succeeded: the pool opens.
 *   PUT          a batch of 4 new keys: each entry stored (GET returns its
 *                bytes) exactly when its status is 0; a failed call stores
 *                nothing.
 *   GET          4 stored blocks: an entry with status 0 has the right
 *                bytes, and a GET after it returns all 4 intact.
 *
 * Prints TAP, one line per command; exit 0 when all passed, 1 otherwise,
 * 4 (skip) without fail-nth or /dev/kvtier.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/kvtier.h>

#define BS	4096
#define NB	4
#define MAX_N	5000

static int nth_fd = -1;
static int ctl = -1;
static int bad;
static char why[512];

static void fail(const char *fmt, ...)
{
	va_list ap;

	if (bad++)
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
}

static void arm(int n)
{
	char b[16];
	int l = snprintf(b, sizeof(b), "%d", n);

	if (pwrite(nth_fd, b, l, 0) != l) {
		perror("fail-nth: write");
		exit(1);
	}
}

/* Disarm; return what was left of the count (0: a fault was injected). */
static int disarm(void)
{
	char b[16] = "";
	ssize_t l = pread(nth_fd, b, sizeof(b) - 1, 0);

	if (l <= 0 || pwrite(nth_fd, "0", 1, 0) != 1) {
		perror("fail-nth: read");
		exit(1);
	}
	return atoi(b);
}

static void fill(char *buf, uint64_t k0, uint64_t k1)
{
	for (int i = 0; i < BS; i += 16) {
		memcpy(buf + i, &k0, 8);
		memcpy(buf + i + 8, &k1, 8);
	}
}

static int pool_create(const char *name, int *fd)
{
	struct kvtier_pool_create c;

	memset(&c, 0, sizeof(c));
	snprintf((char *)c.name, sizeof(c.name), "%s", name);
	c.block_size = BS;
	c.capacity = 64;
	c.mode = 0600;
	c.numa_node = -1;
	if (ioctl(ctl, KVTIER_IOC_POOL_CREATE, &c))
		return -errno;
	*fd = c.fd;
	return 0;
}

static int pool_destroy(const char *name)
{
	struct kvtier_pool_destroy d;

	memset(&d, 0, sizeof(d));
	snprintf((char *)d.name, sizeof(d.name), "%s", name);
	return ioctl(ctl, KVTIER_IOC_POOL_DESTROY, &d) ? -errno : 0;
}

static int pool_open(const char *name)
{
	struct kvtier_pool_open o;

	memset(&o, 0, sizeof(o));
	snprintf((char *)o.name, sizeof(o.name), "%s", name);
	if (ioctl(ctl, KVTIER_IOC_POOL_OPEN, &o))
		return -errno;
	close(o.fd);
	return 0;
}

static struct kvtier_block blk[NB];
static char bufs[NB][BS];

/* A batch over keys {k0, 0..NB-1}; returns 0 or -errno of the call. */
static int batch(int pfd, unsigned long cmd, uint64_t k0, int with_bufs)
{
	struct kvtier_batch b;

	memset(blk, 0, sizeof(blk));
	for (int i = 0; i < NB; i++) {
		blk[i].key[0] = k0;
		blk[i].key[1] = i;
		blk[i].buf = with_bufs ? (uintptr_t)bufs[i] : 0;
	}
	memset(&b, 0, sizeof(b));
	b.blocks = (uintptr_t)blk;
	b.count = NB;
	return ioctl(pfd, cmd, &b) ? -errno : 0;
}

static int clean(int ret)
{
	return ret == 0 || ret == -ENOMEM;
}

static void report(const char *what, int points)
{
	if (bad)
		printf("not ok - fail-nth %s: %s\n", what, why);
	else
		printf("ok - fail-nth %s: %d fault points, each failure clean\n",
		       what, points);
	fflush(stdout);
}

static int walk_create(void)
{
	int n, ret, left, fd = -1;

	for (n = 1; n <= MAX_N && !bad; n++) {
		arm(n);
		ret = pool_create("failnth-c", &fd);
		left = disarm();
		if (left) {
			if (ret)
				fail("N=%d (no injection): create %s", n, strerror(-ret));
			else
				close(fd);
			pool_destroy("failnth-c");
			return n - 1;
		}
		if (!clean(ret)) {
			fail("N=%d: create returned %s, not 0 or ENOMEM", n, strerror(-ret));
		} else if (ret) {
			ret = pool_open("failnth-c");
			if (ret != -ENOENT)
				fail("N=%d: after a failed create, open gives %s, not ENOENT",
				     n, strerror(-ret));
			ret = pool_create("failnth-c", &fd);
			if (ret)
				fail("N=%d: create after a failed one: %s", n, strerror(-ret));
			else
				close(fd);
		} else {
			close(fd);
			ret = pool_open("failnth-c");
			if (ret)
				fail("N=%d: injected create succeeded, open: %s",
				     n, strerror(-ret));
		}
		pool_destroy("failnth-c");
	}
	return n - 1;
}

static int walk_put(int pfd)
{
	int n, ret, left, st[NB];

	for (n = 1; n <= MAX_N && !bad; n++) {
		uint64_t k0 = 0x5055540000000000ULL + n;

		for (int i = 0; i < NB; i++)
			fill(bufs[i], k0, i);
		arm(n);
		ret = batch(pfd, KVTIER_IOC_PUT, k0, 1);
		left = disarm();
		for (int i = 0; i < NB; i++)
			st[i] = ret ? -1 : blk[i].status;
		if (!clean(ret))
			fail("N=%d: PUT returned %s", n, strerror(-ret));
		for (int i = 0; i < NB && !ret; i++)
			if (!clean(st[i]))
				fail("N=%d: PUT entry %d status %d", n, i, st[i]);
		if (left && (ret || st[0] || st[1] || st[2] || st[3]))
			fail("N=%d (no injection): PUT failed", n);
		/* What was stored is exactly what the statuses said. */
		memset(bufs, 0, sizeof(bufs));
		ret = batch(pfd, KVTIER_IOC_GET, k0, 1);
		if (ret)
			fail("N=%d: GET after PUT: %s", n, strerror(-ret));
		for (int i = 0; i < NB && !ret; i++) {
			char want[BS];

			fill(want, k0, i);
			if (st[i] == 0 && (blk[i].status || memcmp(bufs[i], want, BS)))
				fail("N=%d: entry %d stored (status 0) but GET gives %d%s",
				     n, i, blk[i].status,
				     blk[i].status ? "" : " with other bytes");
			if (st[i] != 0 && blk[i].status != -ENOENT)
				fail("N=%d: entry %d failed (%d) but GET gives %d, not -ENOENT",
				     n, i, st[i], blk[i].status);
		}
		batch(pfd, KVTIER_IOC_DROP, k0, 0);
		if (left)
			return n - 1;
	}
	return n - 1;
}

static int walk_get(int pfd)
{
	const uint64_t k0 = 0x4745540000000000ULL;
	int n, ret, left = 0;

	for (int i = 0; i < NB; i++)
		fill(bufs[i], k0, i);
	if (batch(pfd, KVTIER_IOC_PUT, k0, 1) || blk[0].status || blk[3].status) {
		fail("setup: PUT of the blocks to GET failed");
		return 0;
	}
	for (n = 1; n <= MAX_N && !bad; n++) {
		for (int pass = 0; pass < 2; pass++) {
			memset(bufs, 0, sizeof(bufs));
			if (!pass)
				arm(n);
			ret = batch(pfd, KVTIER_IOC_GET, k0, 1);
			if (!pass)
				left = disarm();
			if (!clean(ret))
				fail("N=%d: GET returned %s", n, strerror(-ret));
			for (int i = 0; i < NB && !ret; i++) {
				char want[BS];

				fill(want, k0, i);
				if (!clean(blk[i].status))
					fail("N=%d: GET entry %d status %d", n, i, blk[i].status);
				else if (!blk[i].status && memcmp(bufs[i], want, BS))
					fail("N=%d%s: GET entry %d: wrong bytes", n,
					     pass ? ", the GET after" : "", i);
				else if ((pass || left) && blk[i].status)
					fail("N=%d: %s: entry %d status %d", n,
					     pass ? "the GET after" : "no injection",
					     i, blk[i].status);
			}
			if ((pass || left) && ret)
				fail("N=%d: %s: %s", n,
				     pass ? "the GET after" : "no injection", strerror(-ret));
		}
		if (left)
			return n - 1;
	}
	return n - 1;
}

int main(void)
{
	struct kvtier_api a;
	int pfd, points, failed;

	setvbuf(stdout, NULL, _IOLBF, 0);
	nth_fd = open("/proc/thread-self/fail-nth", O_RDWR);
	ctl = open("/dev/kvtier", O_RDWR | O_CLOEXEC);
	if (nth_fd < 0 || ctl < 0) {
		printf("# SKIP fail-nth: %s\n", nth_fd < 0 ?
		       "no /proc/thread-self/fail-nth (CONFIG_FAULT_INJECTION)" :
		       "no /dev/kvtier");
		return 4;
	}
	memset(&a, 0, sizeof(a));
	a.api = KVTIER_API_VERSION;
	if (ioctl(ctl, KVTIER_IOC_API, &a)) {
		perror("KVTIER_IOC_API");
		return 1;
	}
	memset(bufs, 0, sizeof(bufs));	/* no page faults in the calls */

	points = walk_create();
	report("POOL_CREATE", points);
	failed = !!bad;

	bad = 0;
	pool_destroy("failnth-p");
	if (pool_create("failnth-p", &pfd)) {
		printf("not ok - fail-nth PUT: cannot create its pool\n");
		printf("not ok - fail-nth GET: cannot create its pool\n");
		return 1;
	}
	points = walk_put(pfd);
	report("PUT", points);
	failed |= !!bad;

	bad = 0;
	points = walk_get(pfd);
	report("GET", points);
	failed |= !!bad;

	close(pfd);
	pool_destroy("failnth-p");
	return failed;
}
