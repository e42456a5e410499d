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
 *   POOL_OPEN    failed: a second open works.
 *   POOL_DESTROY succeeded: the pool no longer opens; failed: it does.
 *   LOOKUP       4 stored blocks: entries 0 say DRAM; all 4 intact after.
 *   DROP         4 blocks: an entry that said 0 is a miss after, one that
 *                failed still reads back exact.
 *   PIN, UNPIN   4 blocks: the pool's pinned count moved by the entries
 *                that said 0, and a DROP after gives -EBUSY exactly for
 *                the blocks that are pinned by what the entries said.
 *   STAT         the counters read right when it returns 0.
 *   PREFETCH     4 resident blocks: a call that returned 0 completes
 *                (status 0, 4 ready, its group and cookie); a failed one
 *                leaves no completion.
 *   NVME_ATTACH  (formatting FAIL_NTH_DEV, default /dev/nvme0n1) a call
 *                that said 0 attached (detach works); a failed one left
 *                the device free (attach works after).
 *   SYNC         4 dirty blocks on a pool over that device: a second SYNC
 *                returns 0 and leaves nothing dirty, all 4 intact.
 *   EVENTS       the first events fd of a new pool (it brings the ring): a
 *                call that said 0 gave an fd that reads the events of 4
 *                PUTs after it; a failed one left no fd behind.
 *   CENSUS       4 stored blocks: a call that said 0 listed all 4.
 *
 * Prints TAP, one line per command, then the plan; exit 0 when all
 * passed, 1 otherwise, 4 (skip) without fail-nth or /dev/kvtier.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
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

/* The pool's counters; 0 or -errno. */
static int stat_of(int pfd, struct kvtier_pool_stat *st)
{
	memset(st, 0, sizeof(*st));
	return ioctl(pfd, KVTIER_IOC_STAT, st) ? -errno : 0;
}

/* PUT keys {k0, 0..NB-1} with their pattern; 0 when all were stored. */
static int put_all(int pfd, uint64_t k0)
{
	for (int i = 0; i < NB; i++)
		fill(bufs[i], k0, i);
	if (batch(pfd, KVTIER_IOC_PUT, k0, 1))
		return -1;
	for (int i = 0; i < NB; i++)
		if (blk[i].status)
			return -1;
	return 0;
}

/*
 * GET keys {k0, 0..NB-1}: bit i of the result set when entry i returned
 * its exact bytes, -1 when the call failed; entries that are not exact
 * must be misses (-ENOENT), else "wrong" is set.
 */
static int get_mask(int pfd, uint64_t k0, int *wrong)
{
	int mask = 0;

	memset(bufs, 0, sizeof(bufs));
	if (batch(pfd, KVTIER_IOC_GET, k0, 1))
		return -1;
	for (int i = 0; i < NB; i++) {
		char want[BS];

		fill(want, k0, i);
		if (!blk[i].status && !memcmp(bufs[i], want, BS))
			mask |= 1 << i;
		else if (blk[i].status != -ENOENT)
			*wrong = 1;
	}
	return mask;
}

/* The call's result as entry statuses: -ENOMEM for all when it failed. */
static void statuses(int ret, int st[NB])
{
	for (int i = 0; i < NB; i++)
		st[i] = ret ? ret : blk[i].status;
}

static int walk_open(void)
{
	int n, ret, left;
	struct kvtier_pool_open o;

	for (n = 1; n <= MAX_N && !bad; n++) {
		memset(&o, 0, sizeof(o));
		snprintf((char *)o.name, sizeof(o.name), "failnth-p");
		arm(n);
		ret = ioctl(ctl, KVTIER_IOC_POOL_OPEN, &o) ? -errno : 0;
		left = disarm();
		if (!clean(ret))
			fail("N=%d: POOL_OPEN returned %s", n, strerror(-ret));
		else if (!ret)
			close(o.fd);
		else if (pool_open("failnth-p"))
			fail("N=%d: POOL_OPEN after a failed one fails", n);
		if (left) {
			if (ret)
				fail("N=%d (no injection): POOL_OPEN %s", n, strerror(-ret));
			return n - 1;
		}
	}
	return n - 1;
}

static int walk_destroy(void)
{
	int n, ret, left, fd;

	for (n = 1; n <= MAX_N && !bad; n++) {
		if (pool_create("failnth-d", &fd)) {
			fail("N=%d: setup: create", n);
			break;
		}
		close(fd);
		arm(n);
		ret = pool_destroy("failnth-d");
		left = disarm();
		if (!clean(ret))
			fail("N=%d: POOL_DESTROY returned %s", n, strerror(-ret));
		else if (!ret && pool_open("failnth-d") != -ENOENT)
			fail("N=%d: destroyed, but the pool still opens", n);
		else if (ret && pool_open("failnth-d"))
			fail("N=%d: a failed destroy took the pool away", n);
		pool_destroy("failnth-d");
		if (left) {
			if (ret)
				fail("N=%d (no injection): POOL_DESTROY %s", n, strerror(-ret));
			return n - 1;
		}
	}
	return n - 1;
}

/* LOOKUP of 4 stored blocks: entries 0 say DRAM; all intact after. */
static int walk_lookup(int pfd)
{
	const uint64_t k0 = 0x4c4f4f4b00000000ULL;
	int n, ret, left, st[NB], wrong = 0;

	if (put_all(pfd, k0)) {
		fail("setup: PUT of the blocks to LOOKUP failed");
		return 0;
	}
	for (n = 1; n <= MAX_N && !bad; n++) {
		arm(n);
		ret = batch(pfd, KVTIER_IOC_LOOKUP, k0, 0);
		left = disarm();
		statuses(ret, st);
		for (int i = 0; i < NB; i++) {
			if (!clean(st[i]))
				fail("N=%d: LOOKUP entry %d status %d", n, i, st[i]);
			else if (!st[i] && blk[i].tier != KVTIER_TIER_DRAM)
				fail("N=%d: LOOKUP entry %d tier %u", n, i, blk[i].tier);
			else if (left && st[i])
				fail("N=%d (no injection): LOOKUP entry %d %d", n, i, st[i]);
		}
		if (get_mask(pfd, k0, &wrong) != (1 << NB) - 1 || wrong)
			fail("N=%d: the blocks are not all intact after LOOKUP", n);
		if (left)
			return n - 1;
	}
	return n - 1;
}

/* DROP of 4 blocks: gone exactly when the entry said 0. */
static int walk_drop(int pfd)
{
	int n, ret, left, st[NB], mask, wrong = 0;

	for (n = 1; n <= MAX_N && !bad; n++) {
		uint64_t k0 = 0x44524f5000000000ULL + n;

		if (put_all(pfd, k0)) {
			fail("N=%d: setup: PUT", n);
			break;
		}
		arm(n);
		ret = batch(pfd, KVTIER_IOC_DROP, k0, 0);
		left = disarm();
		statuses(ret, st);
		mask = get_mask(pfd, k0, &wrong);
		for (int i = 0; i < NB; i++) {
			if (!clean(st[i]))
				fail("N=%d: DROP entry %d status %d", n, i, st[i]);
			else if (!st[i] && mask >= 0 && (mask & (1 << i)))
				fail("N=%d: DROP entry %d said 0, the block is there", n, i);
			else if (st[i] && mask >= 0 && !(mask & (1 << i)))
				fail("N=%d: DROP entry %d failed, the block is gone", n, i);
		}
		if (mask < 0 || wrong)
			fail("N=%d: GET after DROP: %s", n, mask < 0 ? "failed" : "wrong bytes");
		batch(pfd, KVTIER_IOC_DROP, k0, 0);
		if (left)
			return n - 1;
	}
	return n - 1;
}

/*
 * PIN (unpin 0) or UNPIN (unpin 1) of 4 blocks; a pinned block cannot be
 * dropped (-EBUSY), so a DROP after the call tells each block's state.
 */
static int walk_pin(int pfd, int unpin)
{
	unsigned long cmd = unpin ? KVTIER_IOC_UNPIN : KVTIER_IOC_PIN;
	struct kvtier_pool_stat st0, st1;
	int n, ret, left, st[NB];

	for (n = 1; n <= MAX_N && !bad; n++) {
		uint64_t k0 = (unpin ? 0x554e50494e000000ULL :
				       0x50494e0000000000ULL) + n;

		if (put_all(pfd, k0) ||
		    (unpin && (batch(pfd, KVTIER_IOC_PIN, k0, 0) ||
			       blk[0].status || blk[3].status))) {
			fail("N=%d: setup", n);
			break;
		}
		if (stat_of(pfd, &st0)) {
			fail("N=%d: STAT", n);
			break;
		}
		arm(n);
		ret = batch(pfd, cmd, k0, 0);
		left = disarm();
		statuses(ret, st);
		if (stat_of(pfd, &st1))
			fail("N=%d: STAT after", n);
		else {
			long long moved = 0;

			for (int i = 0; i < NB; i++)
				moved += !st[i];
			if ((long long)st1.pinned - (long long)st0.pinned !=
			    (unpin ? -moved : moved))
				fail("N=%d: %d entries said 0, pinned went %llu -> %llu",
				     n, (int)moved, (unsigned long long)st0.pinned,
				     (unsigned long long)st1.pinned);
		}
		/* Pinned now: those PIN said 0 to, or UNPIN did not. */
		ret = batch(pfd, KVTIER_IOC_DROP, k0, 0);
		for (int i = 0; i < NB && !ret; i++) {
			int pinned = unpin ? st[i] != 0 : st[i] == 0;
			int want = pinned ? -EBUSY : 0;

			if (!clean(st[i]))
				fail("N=%d: %s entry %d status %d", n,
				     unpin ? "UNPIN" : "PIN", i, st[i]);
			else if (blk[i].status != want)
				fail("N=%d: %s entry %d said %d, DROP gives %d not %d",
				     n, unpin ? "UNPIN" : "PIN", i, st[i],
				     blk[i].status, want);
		}
		if (ret)
			fail("N=%d: DROP after: %s", n, strerror(-ret));
		/* Unpin what is left, drop it. */
		for (int i = 0; i < 4; i++)
			batch(pfd, KVTIER_IOC_UNPIN, k0, 0);
		batch(pfd, KVTIER_IOC_DROP, k0, 0);
		if (left)
			return n - 1;
	}
	return n - 1;
}

static int walk_stat(int pfd)
{
	struct kvtier_pool_stat st;
	int n, ret, left;

	for (n = 1; n <= MAX_N && !bad; n++) {
		arm(n);
		ret = stat_of(pfd, &st);
		left = disarm();
		if (!clean(ret))
			fail("N=%d: STAT returned %s", n, strerror(-ret));
		else if (!ret && (st.capacity != 64 || st.block_size != BS))
			fail("N=%d: STAT says capacity %u block size %llu", n,
			     st.capacity, (unsigned long long)st.block_size);
		if (left)
			return n - 1;
	}
	return n - 1;
}

/* PREFETCH of 4 resident blocks: a group that ends 0, or no group. */
static int walk_prefetch(int pfd)
{
	const uint64_t k0 = 0x5046000000000000ULL;
	struct kvtier_hint h[NB];
	struct kvtier_prefetch pf;
	struct kvtier_completion c;
	struct pollfd pfds;
	int n, ret, left, r;

	if (put_all(pfd, k0)) {
		fail("setup: PUT of the blocks to prefetch failed");
		return 0;
	}
	for (n = 1; n <= MAX_N && !bad; n++) {
		memset(h, 0, sizeof(h));
		for (int i = 0; i < NB; i++) {
			h[i].key[0] = k0;
			h[i].key[1] = i;
		}
		memset(&pf, 0, sizeof(pf));
		pf.hints = (uintptr_t)h;
		pf.count = NB;
		pf.group = n;
		pf.cookie = 0xc0c0 + n;
		pf.tier = KVTIER_TIER_DRAM;
		arm(n);
		ret = ioctl(pfd, KVTIER_IOC_PREFETCH, &pf) ? -errno : 0;
		left = disarm();
		pfds.fd = pfd;
		pfds.events = POLLIN;
		r = poll(&pfds, 1, ret ? 100 : 10000);
		if (!clean(ret)) {
			fail("N=%d: PREFETCH returned %s", n, strerror(-ret));
		} else if (ret && r) {
			fail("N=%d: a failed PREFETCH left a completion", n);
		} else if (!ret && r != 1) {
			fail("N=%d: no completion within 10 s", n);
		} else if (!ret) {
			memset(&c, 0, sizeof(c));
			if (read(pfd, &c, sizeof(c)) != sizeof(c))
				fail("N=%d: read of the completion: %s", n, strerror(errno));
			else if (c.group != (uint64_t)n || c.cookie != pf.cookie ||
				 c.status || c.ready != NB)
				fail("N=%d: completion group %llu status %d ready %u",
				     n, (unsigned long long)c.group, c.status, c.ready);
		}
		if (left)
			return n - 1;
	}
	return n - 1;
}

/* Open fds of this process. */
static int fd_count(void)
{
	char path[64];
	int fd, n = 0;

	for (fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n += !access(path, F_OK);
	}
	return n;
}

/*
 * EVENTS on a new pool each time, so that the ring's allocation is walked
 * too: an fd that reads the events of 4 PUTs, or no fd.
 */
static int walk_events(void)
{
	const uint64_t k0 = 0x4556000000000000ULL;
	struct kvtier_event ev[NB + 1];
	struct kvtier_events e;
	int n, ret, left, fds, pfd;
	ssize_t len;

	for (n = 1; n <= MAX_N && !bad; n++) {
		pool_destroy("failnth-e");
		if (pool_create("failnth-e", &pfd)) {
			fail("N=%d: setup: no pool", n);
			break;
		}
		fds = fd_count();
		memset(&e, 0, sizeof(e));
		e.flags = KVTIER_EVENTS_NONBLOCK;
		e.fd = -1;
		arm(n);
		ret = ioctl(pfd, KVTIER_IOC_EVENTS, &e) ? -errno : 0;
		left = disarm();
		if (!clean(ret)) {
			fail("N=%d: EVENTS returned %s", n, strerror(-ret));
		} else if (ret && fd_count() != fds) {
			fail("N=%d: a failed EVENTS left an fd", n);
		} else if (!ret) {
			if (put_all(pfd, k0))
				fail("N=%d (no injection): PUT failed", n);
			len = read(e.fd, ev, sizeof(ev));
			if (len != NB * (ssize_t)sizeof(ev[0]) ||
			    ev[0].type != KVTIER_EVENT_STORED ||
			    ev[0].key[0] != k0)
				fail("N=%d: the events fd read %zd bytes", n, len);
			close(e.fd);
		}
		close(pfd);
		if (left)
			break;
	}
	pool_destroy("failnth-e");
	return n - 1;
}

/*
 * CENSUS of a pool of 4 stored blocks (its own: the shared pool holds
 * the other walks' blocks too, more than a listing of 8 shows): all 4
 * listed, or nothing.
 */
static int walk_census(void)
{
	const uint64_t k0 = 0x4345000000000000ULL;
	struct kvtier_census_entry ent[2 * NB];
	struct kvtier_census c;
	int n, ret, left, i, mine, pfd;

	pool_destroy("failnth-k");
	if (pool_create("failnth-k", &pfd) || put_all(pfd, k0)) {
		fail("setup: a pool of the blocks to list");
		return 0;
	}
	for (n = 1; n <= MAX_N && !bad; n++) {
		memset(&c, 0, sizeof(c));
		c.entries = (uintptr_t)ent;
		c.count = 2 * NB;
		arm(n);
		ret = ioctl(pfd, KVTIER_IOC_CENSUS, &c) ? -errno : 0;
		left = disarm();
		for (i = 0, mine = 0; !ret && i < (int)c.done; i++)
			mine += ent[i].key[0] == k0;
		if (!clean(ret))
			fail("N=%d: CENSUS returned %s", n, strerror(-ret));
		else if (!ret && (mine != NB || c.done != NB))
			fail("N=%d: CENSUS listed %d of the %d keys (%u entries)",
			     n, mine, NB, c.done);
		if (left)
			break;
	}
	close(pfd);
	pool_destroy("failnth-k");
	return n - 1;
}

static const char *nvme_dev(void)
{
	return getenv("FAIL_NTH_DEV") ?: "/dev/nvme0n1";
}

static int nvme_attach(uint32_t flags)
{
	struct kvtier_nvme_attach a;

	memset(&a, 0, sizeof(a));
	a.path = (uintptr_t)nvme_dev();
	a.flags = flags;
	return ioctl(ctl, KVTIER_IOC_NVME_ATTACH, &a) ? -errno : 0;
}

static int nvme_detach(void)
{
	struct kvtier_nvme_detach d;

	memset(&d, 0, sizeof(d));
	return ioctl(ctl, KVTIER_IOC_NVME_DETACH, &d) ? -errno : 0;
}

/* NVME_ATTACH (formatting): attached, or not and attachable after. */
static int walk_attach(void)
{
	int n, ret, left;

	for (n = 1; n <= MAX_N && !bad; n++) {
		arm(n);
		ret = nvme_attach(KVTIER_NVME_FORMAT);
		left = disarm();
		if (!clean(ret))
			fail("N=%d: NVME_ATTACH returned %s", n, strerror(-ret));
		else if (!ret && nvme_detach())
			fail("N=%d: NVME_ATTACH said 0, detach fails", n);
		else if (ret && nvme_attach(KVTIER_NVME_FORMAT))
			fail("N=%d: attach after a failed one fails", n);
		else if (ret)
			nvme_detach();
		if (left) {
			if (ret)
				fail("N=%d (no injection): NVME_ATTACH %s", n, strerror(-ret));
			return n - 1;
		}
	}
	return n - 1;
}

/* SYNC of 4 dirty blocks: nothing dirty after a second SYNC, all exact. */
static int walk_sync(int pfd)
{
	struct kvtier_pool_stat st;
	struct kvtier_sync sy;
	int n, ret, left, wrong = 0;

	for (n = 1; n <= MAX_N && !bad; n++) {
		uint64_t k0 = 0x53594e4300000000ULL + n;

		if (put_all(pfd, k0)) {
			fail("N=%d: setup: PUT", n);
			break;
		}
		memset(&sy, 0, sizeof(sy));
		arm(n);
		ret = ioctl(pfd, KVTIER_IOC_SYNC, &sy) ? -errno : 0;
		left = disarm();
		if (!clean(ret))
			fail("N=%d: SYNC returned %s", n, strerror(-ret));
		memset(&sy, 0, sizeof(sy));
		if (ioctl(pfd, KVTIER_IOC_SYNC, &sy))
			fail("N=%d: the SYNC after: %s", n, strerror(errno));
		else if (stat_of(pfd, &st) || st.dirty)
			fail("N=%d: %llu dirty after two SYNCs", n,
			     (unsigned long long)st.dirty);
		if (get_mask(pfd, k0, &wrong) != (1 << NB) - 1 || wrong)
			fail("N=%d: the blocks are not all intact after SYNC", n);
		batch(pfd, KVTIER_IOC_DROP, k0, 0);
		if (left) {
			if (ret)
				fail("N=%d (no injection): SYNC %s", n, strerror(-ret));
			return n - 1;
		}
	}
	return n - 1;
}

int main(void)
{
	struct kvtier_api a;
	int pfd, points, failed, ntests = 3;

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
	a.features = ~0ULL;		/* all the kernel has */
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

#define WALK(name, call)			\
	do {					\
		bad = 0;			\
		points = (call);		\
		report(name, points);		\
		failed |= !!bad;		\
		ntests++;			\
	} while (0)

	WALK("POOL_OPEN", walk_open());
	WALK("POOL_DESTROY", walk_destroy());
	WALK("LOOKUP", walk_lookup(pfd));
	WALK("DROP", walk_drop(pfd));
	WALK("PIN", walk_pin(pfd, 0));
	WALK("UNPIN", walk_pin(pfd, 1));
	WALK("STAT", walk_stat(pfd));
	WALK("PREFETCH", walk_prefetch(pfd));
	WALK("CENSUS", walk_census());
	WALK("EVENTS", walk_events());
	close(pfd);
	pool_destroy("failnth-p");

	/* The NVMe tier: attach, then SYNC on a pool over it. */
	nvme_detach();
	WALK("NVME_ATTACH", walk_attach());
	if (nvme_attach(KVTIER_NVME_FORMAT) || pool_create("failnth-s", &pfd)) {
		printf("not ok - fail-nth SYNC: no NVMe tier or pool for it\n");
		failed = 1;
		ntests++;
	} else {
		WALK("SYNC", walk_sync(pfd));
		close(pfd);
		pool_destroy("failnth-s");
	}
	nvme_detach();
	printf("1..%d\n", ntests);
	return failed;
}
