// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier LOOKUP with KVTIER_LOOKUP_PIN (KVTIER_F_LOOKUP_PIN): the longest
 * prefix of a chain is brought into DRAM from NVMe and pinned for the
 * calling fd in one command. The prefix ends at a miss or at a block that
 * cannot be pinned (no DRAM left); what follows is not pinned. The pins are
 * the fd's: another fd cannot UNPIN them, close and SIGKILL release them,
 * and a read-only fd may take them. Pinned blocks stay where they are:
 * their pages keep their frames through eviction pressure, compaction and
 * drop_caches, and O_DIRECT I/O straight from the pool mapping reads them.
 * By ioctl and by io_uring, and against a writer and dropper running
 * alongside. Every case runs with 4 KiB and 64 KiB blocks.
 *
 * Runs as root on /dev/nvme0n1 (or $KVTIER_NVME_DEV), whose content it
 * destroys, and /dev/nvme1n1 for the O_DIRECT case; the cases are skipped
 * when a device is missing.
 */
#include <liburing.h>

#include "nvme_fixture.h"

#define DEV2		"/dev/nvme1n1"
#define NPIN		4U		/* the chain most cases pin */
#define PRESSURE	(8 * DRAM)	/* new keys PUT to evict the rest */
#define PM_PRESENT	(1ULL << 63)	/* pagemap: page present */
#define PM_PFN		((1ULL << 55) - 1)	/* its frame */

FIXTURE(pin) {
	struct nvt_fix;		/* buf, out: one block each */
	__u64 next;		/* the next new key for pressure */
	char *map;		/* the pool mapped, or NULL */
};

FIXTURE_VARIANT(pin) {
	struct nvt_cfg cfg;
};

FIXTURE_VARIANT_ADD(pin, b4k) {
	.cfg = NVT_TIER_CFG("pin", 4 * KST_KIB),
};
FIXTURE_VARIANT_ADD(pin, b64k) {
	.cfg = NVT_TIER_CFG("pin", 64 * KST_KIB),
};

FIXTURE_SETUP(pin)
{
	self->map = NULL;
	self->next = 1000;
	nvt_setup(_metadata, NVT_FIX(self), &variant->cfg);
}

FIXTURE_TEARDOWN(pin)
{
	if (self->map)
		munmap(self->map, (size_t)CAP * self->bs);
	nvt_teardown(NVT_FIX(self));
}

/* LOOKUP with PIN of keys first..first+n-1 into @b. */
static int pin_range(int pfd, struct kvtier_block *b, __u64 first, __u32 n,
		     __u32 *done)
{
	return lookup_range(pfd, b, first, n, KVTIER_LOOKUP_PIN, done);
}

/* UNPIN keys first..first+n-1; 0 or the first bad status. */
static int unpin_range(int pfd, __u64 first, __u32 n)
{
	__u64 k;
	int ret;

	for (k = first; k < first + n; k++) {
		ret = kst_unpin1(pfd, K0, k);
		if (ret)
			return ret;
	}
	return 0;
}

/* PRESSURE new keys of generation 1; 0 or a PUT's status. */
static int pressure(FIXTURE_DATA(pin) *self)
{
	int ret = put_range(self->pfd, self->buf, self->bs, self->next,
			    PRESSURE, 1, 0);

	self->next += PRESSURE;
	return ret;
}

/* The whole pool mapped read-only (self->map), or NULL. */
static char *pin_map(FIXTURE_DATA(pin) *self)
{
	void *p = mmap(NULL, (size_t)CAP * self->bs, PROT_READ, MAP_SHARED,
		       self->pfd, 0);

	self->map = p == MAP_FAILED ? NULL : p;
	return self->map;
}

/* Block @addr through @map: 0 with key @k's bytes, SIGBUS, or -EILSEQ. */
static int map_check(const char *map, void *out, __u64 bs, __u64 addr,
		     __u64 k, __u64 gen)
{
	int ret;

	memset(out, 0xa5, bs);
	ret = kst_probe_read(map + addr * bs, out, bs);
	if (ret)
		return ret;
	return kst_check_gen(out, bs, K0, k, GEN(gen)) == -1 ? 0 : -EILSEQ;
}

/*
 * Whether the page at @p is present in this process's page table, by
 * /proc/self/pagemap (@fd); its frame number in @pfn (if not NULL).
 */
static bool present(int fd, const void *p, __u64 *pfn)
{
	__u64 e;

	if (pread(fd, &e, sizeof(e), (uintptr_t)p / KST_PAGE * sizeof(e)) !=
	    sizeof(e))
		return false;
	if (pfn)
		*pfn = e & PM_PFN;
	return e & PM_PRESENT;
}

/*
 * The entries of a prefix pinned from key @first on: status 0, in DRAM, a
 * real address. -1 if all @n are, else the index of the first that is not.
 */
static int pinned_bad(const struct kvtier_block *b, __u64 first, __u32 n)
{
	__u32 i;

	for (i = 0; i < n; i++)
		if (b[i].status || b[i].tier != KVTIER_TIER_DRAM ||
		    b[i].addr >= CAP || b[i].key[0] != K0 ||
		    b[i].key[1] != first + i)
			return (int)i;
	return -1;
}

/*
 * A chain of blocks on NVMe comes into DRAM, pinned: it stays there and
 * exact through the mapping while many more blocks come and go; UNPIN lets
 * it go.
 */
TEST_F_TIMEOUT(pin, brings_prefix_and_pins, 120)
{
	struct kvtier_block b[NPIN], l;
	__u32 i, done;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	/* Nothing dirty: no block is loaded twice (exact promotions). */
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	for (i = 0; i < NPIN; i++)
		ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, i));
	ASSERT_EQ(0, PSTAT(self->pfd, pinned));

	ASSERT_EQ(0, pin_range(self->pfd, b, 0, NPIN, &done));
	ASSERT_EQ(NPIN, done);
	ASSERT_EQ(-1, pinned_bad(b, 0, NPIN));
	ASSERT_EQ(NPIN, PSTAT(self->pfd, pinned));
	ASSERT_EQ(NPIN, PSTAT(self->pfd, promotions));

	ASSERT_EQ(0, pressure(self));
	ASSERT_NE(NULL, pin_map(self));
	for (i = 0; i < NPIN; i++) {
		ASSERT_EQ(0, kst_lookup1(self->pfd, K0, i, &l));
		ASSERT_EQ((__u32)KVTIER_TIER_DRAM, l.tier) TH_LOG("key %u", i);
		ASSERT_EQ(b[i].addr, l.addr);
		ASSERT_EQ(0, map_check(self->map, self->out, self->bs,
				       b[i].addr, i, 1));
	}
	/* Not read again: they never left. */
	ASSERT_EQ(NPIN, PSTAT(self->pfd, promotions));
	ASSERT_EQ(NPIN, PSTAT(self->pfd, pinned));

	ASSERT_EQ(0, unpin_range(self->pfd, 0, NPIN));
	ASSERT_EQ(0, PSTAT(self->pfd, pinned));
	ASSERT_EQ(0, push_out(self->pfd, self->buf, self->bs, 0, &self->next));
	ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 0));
}

/* The prefix ends at a miss; the block after it stays on NVMe, unpinned. */
TEST_F_TIMEOUT(pin, stops_at_miss, 120)
{
	struct kvtier_block b[4];
	__u32 done;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	/* Nothing dirty: the loads need not wait for write-back. */
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	kst_blk(&b[0], K0, 0, NULL);
	kst_blk(&b[1], K0, 1, NULL);
	kst_blk(&b[2], K0, 1000, NULL);	/* never put */
	kst_blk(&b[3], K0, 3, NULL);
	ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_LOOKUP, b, 4,
			       KVTIER_LOOKUP_PIN, &done));
	ASSERT_EQ(2U, done);
	ASSERT_EQ(-1, pinned_bad(b, 0, 2));
	ASSERT_EQ(-ENOENT, b[2].status);
	ASSERT_EQ((__u32)KVTIER_TIER_NONE, b[2].tier);
	ASSERT_EQ(KVTIER_ADDR_NONE, b[2].addr);
	ASSERT_EQ(0, b[3].status);
	ASSERT_EQ((__u32)KVTIER_TIER_NVME, b[3].tier);
	ASSERT_GT((__u64)CAP, b[3].addr);

	ASSERT_EQ(2, PSTAT(self->pfd, pinned));
	ASSERT_EQ(2, PSTAT(self->pfd, promotions));
	ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 3));
	/* Not this fd's pin. */
	ASSERT_EQ(-EINVAL, kst_unpin1(self->pfd, K0, 3));
	ASSERT_EQ(0, unpin_range(self->pfd, 0, 2));
	ASSERT_EQ(0, PSTAT(self->pfd, pinned));
}

/*
 * A chain longer than DRAM: pinned until no DRAM is left, the block that
 * found none says -ENOSPC, and those after it are not pinned.
 */
TEST_F_TIMEOUT(pin, no_room, 120)
{
	struct kvtier_block b[DRAM + 4];
	__u32 i, done;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	for (i = 0; i < DRAM + 4; i++)
		ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, i));

	ASSERT_EQ(0, pin_range(self->pfd, b, 0, DRAM + 4, &done));
	ASSERT_GE(DRAM, done);
	ASSERT_LT(0U, done);
	ASSERT_EQ(-1, pinned_bad(b, 0, done));
	ASSERT_EQ(-ENOSPC, b[done].status);
	ASSERT_EQ((__u32)KVTIER_TIER_NONE, b[done].tier);
	ASSERT_EQ(KVTIER_ADDR_NONE, b[done].addr);
	/* The rest as the look-up saw them: on NVMe. */
	for (i = done + 1; i < DRAM + 4; i++) {
		ASSERT_EQ(0, b[i].status);
		ASSERT_EQ((__u32)KVTIER_TIER_NVME, b[i].tier);
	}
	ASSERT_EQ(done, PSTAT(self->pfd, pinned));
	ASSERT_GE(DRAM, RES_DRAM(self->pfd));
	for (i = done; i < DRAM + 4; i++)
		ASSERT_EQ(-EINVAL, kst_unpin1(self->pfd, K0, i));
	ASSERT_EQ(0, unpin_range(self->pfd, 0, done));
	ASSERT_EQ(0, PSTAT(self->pfd, pinned));
	/* With room again, the next one loads. */
	ASSERT_EQ(0, get_check(self->pfd, self->buf, self->bs, done, 1));
}

/* Pins of another fd: not this one's to UNPIN; its close releases them. */
TEST_F_TIMEOUT(pin, per_fd, 120)
{
	struct kvtier_block b[NPIN];
	__u32 done;
	int fd2;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	fd2 = kst_pool_open(self->ctl, self->name, 0);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, pin_range(fd2, b, 0, NPIN, &done));
	ASSERT_EQ(NPIN, done);
	ASSERT_EQ(-1, pinned_bad(b, 0, NPIN));
	ASSERT_EQ(NPIN, PSTAT(self->pfd, pinned));

	ASSERT_EQ(-EINVAL, kst_unpin1(self->pfd, K0, 0));
	ASSERT_EQ(-EBUSY, kst_drop1(self->pfd, K0, 0));
	ASSERT_EQ(NPIN, PSTAT(self->pfd, pinned));
	ASSERT_EQ(0, pressure(self));
	ASSERT_EQ(KVTIER_TIER_DRAM, key_tier(self->pfd, 0));

	ASSERT_EQ(0, close(fd2));
	ASSERT_EQ(0, PSTAT(self->pfd, pinned));
	ASSERT_EQ(0, push_out(self->pfd, self->buf, self->bs, 0, &self->next));
	ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 0));
	ASSERT_EQ(0, get_check(self->pfd, self->buf, self->bs, 0, 1));
}

/* A read-only pool fd may pin (and UNPIN) as PIN allows it to. */
TEST_F_TIMEOUT(pin, readonly_fd, 120)
{
	struct kvtier_block b[NPIN];
	__u32 done;
	int ro;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ro = kst_pool_open(self->ctl, self->name, KVTIER_POOL_RDONLY);
	ASSERT_LE(0, ro);
	/* It is read-only. */
	kst_fill(self->buf, self->bs, K0, 500, GEN(1));
	ASSERT_EQ(-EBADF, kst_put1(ro, K0, 500, self->buf, NULL));

	ASSERT_EQ(0, pin_range(ro, b, 0, NPIN, &done));
	ASSERT_EQ(NPIN, done);
	ASSERT_EQ(-1, pinned_bad(b, 0, NPIN));
	ASSERT_EQ(NPIN, PSTAT(self->pfd, pinned));
	ASSERT_EQ(0, pressure(self));
	ASSERT_EQ(KVTIER_TIER_DRAM, key_tier(self->pfd, NPIN - 1));
	ASSERT_EQ(-EINVAL, kst_unpin1(self->pfd, K0, 0));
	ASSERT_EQ(0, unpin_range(ro, 0, NPIN));
	ASSERT_EQ(0, PSTAT(self->pfd, pinned));
	close(ro);
}

/* The pins of a process killed with SIGKILL go with it. */
TEST_F_TIMEOUT(pin, killed_releases, 120)
{
	struct kvtier_block b[NPIN];
	__u32 done = 0;
	int pfd[2], ctl, fd;
	pid_t pid;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, pipe(pfd));
	pid = kst_fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* Its own fd: the inherited one is the parent's file too. */
		close(pfd[0]);
		ctl = kst_ctl_open();
		fd = ctl < 0 ? ctl : kst_pool_open(ctl, self->name, 0);
		if (fd < 0)
			_exit(-fd);
		if (pin_range(fd, b, 0, NPIN, &done))
			_exit(101);
		if (write(pfd[1], &done, sizeof(done)) != sizeof(done))
			_exit(102);
		for (;;)
			pause();
	}
	close(pfd[1]);
	ASSERT_EQ((ssize_t)sizeof(done), read(pfd[0], &done, sizeof(done)));
	close(pfd[0]);
	EXPECT_EQ(NPIN, done);
	EXPECT_EQ(NPIN, PSTAT(self->pfd, pinned));
	EXPECT_EQ(-EINVAL, kst_unpin1(self->pfd, K0, 0));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(128 + SIGKILL, kst_wait(pid));

	ASSERT_EQ(0, PSTAT(self->pfd, pinned));
	ASSERT_EQ(0, push_out(self->pfd, self->buf, self->bs, 0, &self->next));
	ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 0));
	ASSERT_EQ(0, kst_drop1(self->pfd, K0, 1));
}

/*
 * The pages of pinned blocks stay mapped, on the same frames, through
 * eviction pressure, compaction and drop_caches: what a DMA registration
 * of the mapping relies on. The control, an unpinned block faulted in the
 * same way, is zapped from the mapping when it is evicted.
 */
TEST_F_TIMEOUT(pin, pages_stay_put, 120)
{
	__u64 ppb = self->bs / KST_PAGE, pfn[NPIN][16], now;
	struct kvtier_block b[NPIN], c;
	const __u64 ctlkey = 500;
	__u32 i, j, done;
	char *p;
	int pm;

	ASSERT_GE(16U, ppb);
	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, pin_range(self->pfd, b, 0, NPIN, &done));
	ASSERT_EQ(NPIN, done);
	ASSERT_EQ(-1, pinned_bad(b, 0, NPIN));
	/* The control: the newest block, in DRAM, not pinned. */
	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, ctlkey, 1, 1,
			       0));
	ASSERT_EQ(0, kst_lookup1(self->pfd, K0, ctlkey, &c));
	ASSERT_EQ((__u32)KVTIER_TIER_DRAM, c.tier);

	ASSERT_NE(NULL, pin_map(self));
	pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, pm);
	for (i = 0; i < NPIN; i++) {
		ASSERT_EQ(0, map_check(self->map, self->out, self->bs,
				       b[i].addr, i, 1));
		p = self->map + b[i].addr * self->bs;
		for (j = 0; j < ppb; j++) {
			ASSERT_TRUE(present(pm, p + j * KST_PAGE, &pfn[i][j]))
				TH_LOG("key %u page %u", i, j);
			ASSERT_NE(0ULL, pfn[i][j]) TH_LOG("PFNs hidden: root?");
		}
	}
	ASSERT_EQ(0, map_check(self->map, self->out, self->bs, c.addr, ctlkey,
			       1));
	p = self->map + c.addr * self->bs;
	for (j = 0; j < ppb; j++)
		ASSERT_TRUE(present(pm, p + j * KST_PAGE, NULL));

	ASSERT_EQ(0, pressure(self));
	ASSERT_EQ(0, push_out(self->pfd, self->buf, self->bs, ctlkey,
			      &self->next));
	ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, ctlkey));
	kst_write_num("/proc/sys/vm/compact_memory", 1);
	kst_write_num("/proc/sys/vm/drop_caches", 3);

	/* The mapping not touched since: what pagemap says is the kernel's. */
	for (i = 0; i < NPIN; i++) {
		p = self->map + b[i].addr * self->bs;
		for (j = 0; j < ppb; j++) {
			ASSERT_TRUE(present(pm, p + j * KST_PAGE, &now))
				TH_LOG("key %u page %u", i, j);
			ASSERT_EQ(pfn[i][j], now);
		}
	}
	p = self->map + c.addr * self->bs;
	for (j = 0; j < ppb; j++)
		ASSERT_FALSE(present(pm, p + j * KST_PAGE, NULL))
			TH_LOG("evicted block still mapped: page %u", j);
	close(pm);
	for (i = 0; i < NPIN; i++)
		ASSERT_EQ(0, map_check(self->map, self->out, self->bs,
				       b[i].addr, i, 1));
	ASSERT_EQ(0, unpin_range(self->pfd, 0, NPIN));
}

/*
 * O_DIRECT writes to another drive straight from the mapping of pinned
 * blocks (the block layer pins the user pages, as a DMA registration
 * does), and read back exact. Eviction pressure before the writes: the
 * pages they read must be the ones that stayed, not blocks loaded again.
 */
TEST_F_TIMEOUT(pin, odirect_from_mapping, 120)
{
	struct kvtier_block b[NPIN];
	long long promotions;
	struct stat st;
	__u32 i, done;
	char *in;
	int fd;

	if (stat(DEV2, &st) || !S_ISBLK(st.st_mode) || !strcmp(nvt_dev(), DEV2))
		SKIP(return, "%s missing (--nvme 2)", DEV2);
	if (nvt_dev_bytes(DEV2) < (long long)(NPIN * self->bs))
		SKIP(return, "%s too small", DEV2);
	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, pin_range(self->pfd, b, 0, NPIN, &done));
	ASSERT_EQ(NPIN, done);
	ASSERT_EQ(-1, pinned_bad(b, 0, NPIN));
	ASSERT_NE(NULL, pin_map(self));
	ASSERT_EQ(0, pressure(self));
	promotions = PSTAT(self->pfd, promotions);
	ASSERT_LE(0, promotions);

	fd = open(DEV2, O_RDWR | O_DIRECT | O_CLOEXEC);
	ASSERT_LE(0, fd);
	for (i = 0; i < NPIN; i++)
		ASSERT_EQ((ssize_t)self->bs,
			  pwrite(fd, self->map + b[i].addr * self->bs,
				 self->bs, i * self->bs));
	ASSERT_EQ(0, fsync(fd));
	ASSERT_EQ(promotions, PSTAT(self->pfd, promotions));

	in = kst_alloc(NPIN * self->bs);
	ASSERT_NE(NULL, in);
	memset(in, 0xa5, NPIN * self->bs);
	ASSERT_EQ((ssize_t)(NPIN * self->bs),
		  pread(fd, in, NPIN * self->bs, 0));
	close(fd);
	for (i = 0; i < NPIN; i++)
		ASSERT_EQ(-1, kst_check_gen(in + i * self->bs, self->bs, K0, i,
					    GEN(1))) TH_LOG("key %u", i);
	kst_free(in, NPIN * self->bs);
	ASSERT_EQ(0, unpin_range(self->pfd, 0, NPIN));
}

/* Through io_uring: the same pins, UNPINned by ioctl on the same fd. */
TEST_F_TIMEOUT(pin, uring, 120)
{
	struct kvtier_block b[NPIN];
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct kvtier_uring_cmd *c;
	struct kvtier_batch batch;
	struct io_uring ring;
	__u32 i;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	if (io_uring_queue_init(4, &ring, 0))
		SKIP(return, "no io_uring");
	for (i = 0; i < NPIN; i++)
		kst_blk(&b[i], K0, i, NULL);
	memset(&batch, 0, sizeof(batch));
	batch.blocks = (__u64)(uintptr_t)b;
	batch.count = NPIN;
	batch.flags = KVTIER_LOOKUP_PIN;
	batch.done = 0xffffffffU;
	sqe = io_uring_get_sqe(&ring);
	ASSERT_NE(NULL, sqe);
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, self->pfd, NULL, 0, 0);
	sqe->cmd_op = KVTIER_IOC_LOOKUP;
	c = (struct kvtier_uring_cmd *)sqe->cmd;
	memset(c, 0, sizeof(*c));
	c->arg = (__u64)(uintptr_t)&batch;
	ASSERT_EQ(1, io_uring_submit(&ring));
	ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
	ASSERT_EQ(0, cqe->res);
	io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);

	ASSERT_EQ(NPIN, batch.done);
	ASSERT_EQ(-1, pinned_bad(b, 0, NPIN));
	ASSERT_EQ(NPIN, PSTAT(self->pfd, pinned));
	ASSERT_EQ(0, pressure(self));
	for (i = 0; i < NPIN; i++)
		ASSERT_EQ(KVTIER_TIER_DRAM, key_tier(self->pfd, i));
	ASSERT_EQ(0, unpin_range(self->pfd, 0, NPIN));
	ASSERT_EQ(0, PSTAT(self->pfd, pinned));
}

/* The writer of the concurrent case: new keys PUT, older ones dropped. */
struct churn {
	int pfd;
	__u64 bs;
	char *buf;
	double until;		/* it stops then */
	unsigned int puts, nospc, errors;
	int first_error;
};

#define CHURN_KEEP	16U	/* its keys alive at a time */

static void churn_error(struct churn *c, int ret)
{
	if (!c->errors++)
		c->first_error = ret;
}

static void *churn_fn(void *arg)
{
	struct churn *c = arg;
	bool put_ok[CHURN_KEEP] = { false };
	__u64 k, first = 2000;
	int ret;

	for (k = first; kst_mono() < c->until; k++) {
		if (k >= first + CHURN_KEEP && put_ok[k % CHURN_KEEP]) {
			ret = kst_drop1(c->pfd, K0, k - CHURN_KEEP);
			if (ret)
				churn_error(c, ret);
		}
		ret = put_range(c->pfd, c->buf, c->bs, k, 1, 1, 0);
		/* No room, for a moment: every victim on its way out. */
		if (ret == -ENOSPC)
			c->nospc++;
		else if (ret)
			churn_error(c, ret);
		else
			c->puts++;
		put_ok[k % CHURN_KEEP] = !ret;
	}
	return NULL;
}

/*
 * LOOKUP with PIN, read through the mapping, UNPIN, in a loop, while
 * another thread PUTs and DROPs other keys: every pinned block reads
 * exact, none raises SIGBUS. A prefix may come short only for want of
 * DRAM (-ENOSPC: the writer's blocks on their way in or out).
 */
TEST_F_TIMEOUT(pin, concurrent, 120)
{
	unsigned int rounds = 0, full = 0, nospc = 0, wrong = 0, sigbus = 0;
	unsigned int errors = 0;
	struct churn c = { 0 };
	struct kvtier_block b[NPIN];
	pthread_t th;
	__u32 i, done;
	int ret;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_NE(NULL, pin_map(self));
	c.pfd = self->pfd;
	c.bs = self->bs;
	c.buf = self->buf;
	c.until = kst_mono() + 2;
	ASSERT_EQ(0, pthread_create(&th, NULL, churn_fn, &c));
	while (kst_mono() < c.until) {
		ret = pin_range(self->pfd, b, 0, NPIN, &done);
		if (ret || done > NPIN) {
			errors++;
			TH_LOG("LOOKUP: %d, done %u", ret, done);
			break;
		}
		rounds++;
		full += done == NPIN;
		if (done < NPIN && b[done].status == -ENOSPC) {
			nospc++;
		} else if (done < NPIN) {
			if (!errors++)
				TH_LOG("entry %u: %d", done, b[done].status);
		}
		for (i = 0; i < done; i++) {
			ret = map_check(self->map, self->out, self->bs,
					b[i].addr, i, 1);
			sigbus += ret == SIGBUS;
			wrong += ret && ret != SIGBUS;
		}
		for (i = 0; i < done; i++) {
			ret = kst_unpin1(self->pfd, K0, i);
			if (ret && !errors++)
				TH_LOG("UNPIN %u: %d", i, ret);
		}
	}
	pthread_join(th, NULL);
	TH_LOG("%u rounds, %u full, %u short of DRAM; %u PUTs, %u short",
	       rounds, full, nospc, c.puts, c.nospc);
	EXPECT_EQ(0U, wrong);
	EXPECT_EQ(0U, sigbus);
	EXPECT_EQ(0U, errors);
	EXPECT_EQ(0U, c.errors) TH_LOG("writer's first error: %d",
				       c.first_error);
	EXPECT_LT(0U, full);
	EXPECT_LT(0U, c.puts);
	ASSERT_EQ(0, PSTAT(self->pfd, pinned));
	for (i = 0; i < NPIN; i++)
		ASSERT_EQ(0, get_check(self->pfd, self->buf, self->bs, i, 1));
}

TEST_HARNESS_MAIN
