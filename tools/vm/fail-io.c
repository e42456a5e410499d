// SPDX-License-Identifier: GPL-2.0
/*
 * fail-io: block I/O errors injected under the NVMe tier with the block
 * layer's fail_make_request (the drive's make-it-fail set, a probability in
 * /sys/kernel/debug/fail_make_request), and what kvtier must do about them:
 * clean errnos, never a wrong byte, a store that works again once the
 * faults stop, and a log that still replays. Run by tools/vm/fail-io.sh in
 * the debug-kernel VM (CONFIG_FAIL_MAKE_REQUEST).
 *
 *   1. attach DEV formatted; a pool of 16 KiB blocks, 16 in DRAM; PUT keys
 *      0..299 and SYNC: all durable (no faults yet).
 *   2. faults on (the wrapper arms them when told "# arm", disarms at "# disarm", on
 *      stdin/stdout): rounds of PUT REPLACE of keys 300..599, GETs of every
 *      key (loads from NVMe fail at random) and SYNC. Every status must be
 *      a documented one (PUT: 0, -ENOSPC, -ENOMEM, -EIO; GET: 0, -ENOENT,
 *      -EIO, -ENOMEM, -ENOSPC; SYNC: 0, -EIO, -ENOSPC) and every GET that
 *      returns 0 must hold the bytes of the key's last acknowledged PUT.
 *      A block whose copy could not be read (three tries) is a miss from
 *      then on (never served half read), so misses are counted, not failed.
 *   3. faults off: every key exact or a miss; PUT keys 600..699, SYNC must
 *      return 0, all 100 exact;
 *   4. exactly one bio fails ("# fail1": probability 100, times 1) while a
 *      GET loads a block only on NVMe: the read is tried again and the GET
 *      returns the exact bytes (a transient error loses nothing);
 *   5. every bio fails ("# failall") while 48 more keys are PUT into the 16
 *      DRAM blocks: evictions cannot demote their dirty victims and drop
 *      them, so some acknowledged PUTs are lost; the next SYNC must say so
 *      with -EIO (as fsync(2) reports a writeback error), the one after
 *      return 0, and the blocks that stayed be exact;
 *   6. detach and attach again (no format): the log written through the
 *      faults replays, keys 600..699 exact.
 *
 * Prints TAP; exit 0 when all passed, 1 otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/kvtier.h>

#define BS		(16 * 1024)
#define CAP		1024
#define DRAM		16
#define NKEYS		700	/* keys 0..699; 700..747 for step 5 */
#define NLOST		48
#define K0		0xf417ULL
#define ROUNDS		4

static int ctl = -1, pfd = -1, ntest, nfail;
static uint64_t gen[NKEYS + NLOST];		/* last acknowledged PUT, 0: none */
static char buf[BS];

static void tap(int ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void tap(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - fail-io: ", ok ? "" : "not ", ++ntest);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	nfail += !ok;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

static void fill(uint64_t k, uint64_t g)
{
	uint64_t *w = (uint64_t *)buf;
	size_t i;

	w[0] = k;
	w[1] = g;
	for (i = 2; i < BS / 8; i++)
		w[i] = mix(k * 0x9e3779b97f4a7c15ULL + g * 31 + i);
}

/* 0 when buf holds key @k's bytes of generation @g. */
static int check(uint64_t k, uint64_t g)
{
	const uint64_t *w = (const uint64_t *)buf;
	size_t i;

	if (w[0] != k || w[1] != g)
		return -1;
	for (i = 2; i < BS / 8; i++)
		if (w[i] != mix(k * 0x9e3779b97f4a7c15ULL + g * 31 + i))
			return -1;
	return 0;
}

static int one(unsigned long cmd, uint64_t k, __u32 flags)
{
	struct kvtier_block b;
	struct kvtier_batch bt;

	memset(&b, 0, sizeof(b));
	b.key[0] = K0;
	b.key[1] = k;
	b.buf = (uintptr_t)buf;
	memset(&bt, 0, sizeof(bt));
	bt.blocks = (uintptr_t)&b;
	bt.count = 1;
	bt.flags = flags;
	if (ioctl(pfd, cmd, &bt))
		return -errno;
	return b.status;
}

/* The tier a key's block is in (LOOKUP, no load), or -errno. */
static int tier_of(uint64_t k)
{
	struct kvtier_block b;
	struct kvtier_batch bt;

	memset(&b, 0, sizeof(b));
	b.key[0] = K0;
	b.key[1] = k;
	memset(&bt, 0, sizeof(bt));
	bt.blocks = (uintptr_t)&b;
	bt.count = 1;
	if (ioctl(pfd, KVTIER_IOC_LOOKUP, &bt))
		return -errno;
	return b.status ? b.status : (int)b.tier;
}

static int put(uint64_t k, uint64_t g)
{
	int ret;

	fill(k, g);
	ret = one(KVTIER_IOC_PUT, k, KVTIER_PUT_REPLACE);
	if (!ret)
		gen[k] = g;
	return ret;
}

static int sync_pool(void)
{
	struct kvtier_sync s;

	memset(&s, 0, sizeof(s));
	return ioctl(pfd, KVTIER_IOC_SYNC, &s) ? -errno : 0;
}

static int in(int v, const int *set, int n)
{
	while (n--)
		if (set[n] == v)
			return 1;
	return 0;
}

struct tally {
	unsigned int exact, miss, eio, wrong, other;
	int first_other;
};

/* GET keys [first, end): count outcomes; a miss forgets the key. */
static void get_all(unsigned int first, unsigned int end, struct tally *t)
{
	static const int ok_get[] = { 0, -ENOENT, -EIO, -ENOMEM, -ENOSPC };
	unsigned int k;
	int ret;

	memset(t, 0, sizeof(*t));
	for (k = first; k < end; k++) {
		if (!gen[k])
			continue;
		memset(buf, 0xa5, BS);
		ret = one(KVTIER_IOC_GET, k, 0);
		if (!ret && check(k, gen[k]))
			t->wrong++;
		else if (!ret)
			t->exact++;
		else if (ret == -ENOENT)
			t->miss++, gen[k] = 0;
		else if (ret == -EIO)
			t->eio++;
		else if (!in(ret, ok_get, 5) && !t->other++)
			t->first_other = ret;
	}
}

static int attach(__u32 flags)
{
	struct kvtier_nvme_attach a;
	const char *dev = getenv("FAIL_IO_DEV") ?: "/dev/nvme0n1";

	memset(&a, 0, sizeof(a));
	a.path = (uintptr_t)dev;
	a.flags = flags;
	return ioctl(ctl, KVTIER_IOC_NVME_ATTACH, &a) ? -errno : 0;
}

static int detach(void)
{
	struct kvtier_nvme_detach d;

	memset(&d, 0, sizeof(d));
	return ioctl(ctl, KVTIER_IOC_NVME_DETACH, &d) ? -errno : 0;
}

static unsigned long long io_errors(void)
{
	struct kvtier_nvme_stat st;

	memset(&st, 0, sizeof(st));
	if (ioctl(ctl, KVTIER_IOC_NVME_STAT, &st))
		return 0;
	return st.io_errors;
}

static int open_pool(int create)
{
	struct kvtier_pool_create c;
	struct kvtier_pool_open o;

	if (create) {
		memset(&c, 0, sizeof(c));
		snprintf((char *)c.name, sizeof(c.name), "fail-io");
		c.block_size = BS;
		c.capacity = CAP;
		c.dram_blocks = DRAM;
		c.mode = 0600;
		c.numa_node = -1;
		if (ioctl(ctl, KVTIER_IOC_POOL_CREATE, &c))
			return -errno;
		return c.fd;
	}
	memset(&o, 0, sizeof(o));
	snprintf((char *)o.name, sizeof(o.name), "fail-io");
	o.fd = -1;
	if (ioctl(ctl, KVTIER_IOC_POOL_OPEN, &o))
		return -errno;
	return o.fd;
}

/* The wrapper arms or disarms the faults; wait for its answer. */
static void handshake(const char *what)
{
	char line[64];

	printf("# %s\n", what);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin) || strncmp(line, what, strlen(what)))
		fprintf(stderr, "fail-io: no answer to %s\n", what);
}

int main(void)
{
	static const int ok_put[] = { 0, -ENOSPC, -ENOMEM, -EIO };
	static const int ok_sync[] = { 0, -EIO, -ENOSPC };
	struct kvtier_api api;
	unsigned long long err0, err1;
	unsigned int k, r, put_bad = 0, sync_bad = 0, puts_ok = 0, syncs_ok = 0;
	unsigned int wrong = 0, misses = 0, eios = 0, other = 0, acked, lost;
	int ret, first_bad = 0;
	struct tally t;

	ctl = open("/dev/kvtier", O_RDWR | O_CLOEXEC);
	memset(&api, 0, sizeof(api));
	api.api = KVTIER_API_VERSION;
	api.features = ~0ULL;		/* all the kernel has */
	if (ctl < 0 || ioctl(ctl, KVTIER_IOC_API, &api)) {
		tap(0, "open /dev/kvtier and handshake: %s", strerror(errno));
		return 1;
	}
	detach();
	ret = attach(KVTIER_NVME_FORMAT);
	tap(!ret, "attach the drive, formatted (%d)", ret);
	if (ret)
		return 1;
	pfd = open_pool(1);
	tap(pfd >= 0, "create a pool (%d)", pfd);
	if (pfd < 0)
		return 1;

	/* 1. Durable before the faults. */
	for (k = 0, ret = 0; k < 300 && !ret; k++)
		ret = put(k, 1);
	tap(!ret, "PUT keys 0..299 (%d)", ret);
	ret = sync_pool();
	tap(!ret, "SYNC them (%d)", ret);
	err0 = io_errors();

	/* 2. Faults on. */
	handshake("arm");
	for (r = 1; r <= ROUNDS; r++) {
		for (k = 300; k < 600; k++) {
			ret = put(k, r);
			if (!ret)
				puts_ok++;
			else if (!in(ret, ok_put, 4) && !put_bad++)
				first_bad = ret;
		}
		get_all(0, 600, &t);
		wrong += t.wrong;
		misses += t.miss;
		eios += t.eio;
		other += t.other;
		ret = sync_pool();
		if (!ret)
			syncs_ok++;
		else if (!in(ret, ok_sync, 3) && !sync_bad++)
			first_bad = ret;
	}
	handshake("disarm");
	err1 = io_errors();
	printf("# under faults: %llu I/O errors; %u PUTs acknowledged; GETs: %u misses, %u -EIO; %u of %u SYNCs returned 0\n",
	       err1 - err0, puts_ok, misses, eios, syncs_ok, ROUNDS);
	tap(err1 > err0, "faults were injected (%llu I/O errors counted)",
	    err1 - err0);
	tap(!wrong, "no GET under faults returned wrong bytes (%u did)", wrong);
	tap(!put_bad && !sync_bad && !other,
	    "every status under faults a documented one (%u PUT, %u SYNC, %u GET not; first %d)",
	    put_bad, sync_bad, other, first_bad);

	/* 3. Faults off: exact or a miss, and a store that works. */
	get_all(0, 600, &t);
	printf("# after: %u exact, %u misses, %u -EIO\n", t.exact, t.miss, t.eio);
	tap(!t.wrong && !t.eio && !t.other,
	    "after the faults every key exact or a miss (%u wrong, %u -EIO, %u other)",
	    t.wrong, t.eio, t.other);
	for (k = 600, ret = 0; k < NKEYS && !ret; k++)
		ret = put(k, 7);
	tap(!ret, "PUT keys 600..699 after the faults (%d)", ret);
	ret = sync_pool();
	tap(!ret, "SYNC after the faults returns 0 (%d)", ret);
	get_all(600, NKEYS, &t);
	tap(t.exact == 100, "keys 600..699 exact (%u)", t.exact);

	/* 4. Exactly one bio fails: a block read is tried again, not lost. */
	for (k = 600; k < NKEYS && tier_of(k) != KVTIER_TIER_NVME; k++)
		;
	tap(k < NKEYS, "a key only on NVMe (%u)", k);
	if (k < NKEYS) {
		err0 = io_errors();
		handshake("fail1");
		memset(buf, 0xa5, BS);
		ret = one(KVTIER_IOC_GET, k, 0);
		handshake("disarm");
		err1 = io_errors();
		tap(err1 == err0 + 1, "its first read failed (%llu I/O errors)",
		    err1 - err0);
		tap(!ret && !check(k, gen[k]),
		    "the GET read it again: exact, not a miss (%d)", ret);
	}

	/* 5. Every write fails: evictions drop dirty victims; SYNC says so. */
	handshake("failall");
	for (k = NKEYS, acked = 0, put_bad = 0; k < NKEYS + NLOST; k++) {
		ret = put(k, 9);
		if (!ret)
			acked++;
		else if (!in(ret, ok_put, 4) && !put_bad++)
			first_bad = ret;
	}
	handshake("disarm");
	get_all(NKEYS, NKEYS + NLOST, &t);
	lost = t.miss;
	ret = sync_pool();
	printf("# every write failing: %u of %u PUTs acknowledged, %u of them lost\n",
	       acked, NLOST, t.miss);
	tap(!put_bad && !t.wrong && !t.eio && !t.other,
	    "PUTs while every write fails: documented statuses, no wrong bytes (%u, %u, %u, %u)",
	    put_bad, t.wrong, t.eio, t.other);
	tap(t.miss > 0, "failed demotions dropped acknowledged blocks (%u)",
	    t.miss);
	tap(ret == -EIO, "the SYNC after that returns -EIO (%d)", ret);
	ret = sync_pool();
	tap(!ret, "the SYNC after it returns 0 (%d)", ret);
	get_all(NKEYS, NKEYS + NLOST, &t);
	tap(t.exact == acked - lost && !t.wrong,
	    "the %u blocks that stayed are exact (%u exact, %u miss, %u wrong)",
	    acked - lost, t.exact, t.miss, t.wrong);
	close(pfd);
	ret = detach();
	tap(!ret, "detach (%d)", ret);
	ret = attach(0);
	tap(!ret, "attach again, no format: the log replays (%d)", ret);
	pfd = open_pool(0);
	tap(pfd >= 0, "the pool is back (%d)", pfd);
	if (pfd >= 0) {
		get_all(600, NKEYS, &t);
		tap(t.exact == 100,
		    "keys 600..699 exact after the replay (%u exact, %u miss, %u wrong)",
		    t.exact, t.miss, t.wrong);
		close(pfd);
	}
	if (pfd >= 0) {
		struct kvtier_pool_destroy d;

		memset(&d, 0, sizeof(d));
		snprintf((char *)d.name, sizeof(d.name), "fail-io");
		ioctl(ctl, KVTIER_IOC_POOL_DESTROY, &d);
	}
	detach();
	printf("1..%d\n", ntest);
	return nfail ? 1 : 0;
}
