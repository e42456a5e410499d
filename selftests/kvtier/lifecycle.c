// SPDX-License-Identifier: GPL-2.0
/*
 * Lifecycle: processes killed with SIGKILL while they hold pins, mappings,
 * io_uring commands in flight and pending prefetches leave nothing behind
 * (no pin, no live prefetch group, the pool destroyable); the module
 * refuses to unload while a pool fd or a mapping is open; a tenant at its
 * memory cgroup limit gets -ENOMEM from PUT while another pool keeps
 * working; creating pools never allocates more than the dram_mb budget,
 * even for a moment (memory.peak of a cgroup). Load/unload cycles are run
 * by tools/vm/run-selftests.sh, which owns the module's parameters.
 */
#include <liburing.h>
#include <sys/syscall.h>
#include <sys/mount.h>
#include "nvme_test.h"

#define BS		(16 * KST_KIB)
#define CAP		256U
#define K0		0x4c494645ULL	/* "LIFE" */

static long long pf_live(void)
{
	char buf[4096], *p;
	int n = kst_read_file(KST_SYSFS_DIR "/prefetch", buf, sizeof(buf));

	if (n < 0)
		return n;
	p = strstr(buf, "live ");
	return p ? atoll(p + 5) : -ENOENT;
}

/* Wait up to @secs for the live prefetch groups to reach 0. */
static long long pf_live_settle(int secs)
{
	long long live = pf_live();
	int i;

	for (i = 0; live > 0 && i < secs * 10; i++) {
		usleep(100000);
		live = pf_live();
	}
	return live;
}

/* Child side: tell the parent it is ready, then wait to be killed. */
static void __attribute__((noreturn)) ready_and_wait(int wfd)
{
	char c = 'r';

	if (write(wfd, &c, 1) != 1)
		_exit(3);
	for (;;)
		pause();
}

static int wait_ready(int rfd)
{
	char c;

	return read(rfd, &c, 1) == 1 && c == 'r' ? 0 : -EIO;
}

static int kill9(pid_t pid)
{
	kill(pid, SIGKILL);
	return kst_wait(pid) == 128 + SIGKILL ? 0 : -ECHILD;
}

static int put_range(int pfd, __u64 first, __u32 n, __u64 gen)
{
	char *buf = kst_alloc(BS);
	__u32 i;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	for (i = 0; i < n && !ret; i++) {
		kst_fill(buf, BS, K0, first + i, gen);
		ret = kst_put1(pfd, K0, first + i, buf, NULL);
	}
	kst_free(buf, BS);
	return ret;
}

FIXTURE(life) {
	int ctl;
	int pfd;
	int pipe[2];
	char name[KVTIER_NAME_MAX];
};

FIXTURE_SETUP(life)
{
	kst_setup(_metadata);

	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	kst_name(self->name, "life");
	self->pfd = kst_pool_create(self->ctl, self->name, BS, CAP, CAP);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(0, pipe(self->pipe));
}

FIXTURE_TEARDOWN(life)
{
	close(self->pipe[0]);
	close(self->pipe[1]);
	if (self->pfd >= 0)
		close(self->pfd);
	kst_pool_destroy(self->ctl, self->name);
	close(self->ctl);
}

/* After a kill: no pins, no live groups, data intact, destroyable. */
static void after_kill(struct __test_metadata *_metadata,
		       FIXTURE_DATA(life) *self, __u32 nkeys)
{
	char *buf = kst_alloc(BS);
	__u64 gen;
	__u32 i;
	int ret;

	ASSERT_NE(NULL, buf);
	EXPECT_EQ(0, kst_pinned(self->pfd));
	EXPECT_EQ(0, pf_live_settle(10));
	for (i = 0; i < nkeys; i++) {
		ret = kst_get1(self->pfd, K0, i, buf, NULL);
		if (ret == -ENOENT)
			continue;
		ASSERT_EQ(0, ret);
		ASSERT_EQ(-1, kst_check(buf, BS, K0, i, &gen));
	}
	kst_free(buf, BS);
	close(self->pfd);
	self->pfd = -1;
	EXPECT_EQ(0, kst_pool_destroy(self->ctl, self->name));
	EXPECT_EQ(-ENOENT, kst_pool_open(self->ctl, self->name, 0));
}

/* Pins held and pages mapped by a killed process go with it. */
TEST_F(life, kill_pins_and_mappings)
{
	int n;

	ASSERT_EQ(0, put_range(self->pfd, 0, 64, 1));
	for (n = 0; n < 4; n++) {
		pid_t pid = kst_fork();

		ASSERT_LE(0, pid);
		if (pid == 0) {
			int fd = kst_pool_open(self->ctl, self->name, 0);
			volatile char *m;
			__u32 i;

			if (fd < 0)
				_exit(1);
			for (i = 0; i < 32; i++)
				if (kst_pin1(fd, K0, i))
					_exit(2);
			m = mmap(NULL, 64 * BS, PROT_READ, MAP_SHARED, fd, 0);
			if (m == MAP_FAILED)
				_exit(4);
			for (i = 0; i < 64; i++)
				(void)m[i * BS];
			/* Another fd with pins, closed by the kill. */
			if (kst_pin1(dup(fd), K0, 40))
				_exit(5);
			ready_and_wait(self->pipe[1]);
		}
		ASSERT_EQ(0, wait_ready(self->pipe[0]));
		EXPECT_LE(32, kst_pinned(self->pfd));
		ASSERT_EQ(0, kill9(pid));
		EXPECT_EQ(0, kst_pinned(self->pfd));
	}
	after_kill(_metadata, self, 64);
}

static struct io_uring_sqe *uring_cmd(struct io_uring *ring, int fd,
				       __u32 op, void *arg, __u64 data)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct kvtier_uring_cmd *c;

	if (!sqe)
		return NULL;
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
	sqe->cmd_op = op;
	c = (struct kvtier_uring_cmd *)sqe->cmd;
	memset(c, 0, sizeof(*c));
	c->arg = (__u64)(uintptr_t)arg;
	io_uring_sqe_set_data64(sqe, data);
	return sqe;
}

/*
 * A process killed with uring_cmds queued and in flight (PUT, GET, PIN
 * batches it never reaps), over and over; the kill lands at a random
 * point.
 */
TEST_F_TIMEOUT(life, kill_inflight_uring, 120)
{
	int n;

	ASSERT_EQ(0, put_range(self->pfd, 0, 64, 1));
	for (n = 0; n < 6; n++) {
		pid_t pid = kst_fork();

		ASSERT_LE(0, pid);
		if (pid == 0) {
			static struct kvtier_block e[3][64];
			static struct kvtier_batch b[3];
			char *in = kst_alloc(64 * BS), *out = kst_alloc(64 * BS);
			int fd = kst_pool_open(self->ctl, self->name, 0);
			struct io_uring ring;
			__u64 round = 0;
			__u32 i;

			if (fd < 0 || !in || !out ||
			    io_uring_queue_init(64, &ring, 0))
				_exit(1);
			for (i = 0; i < 64; i++) {
				kst_fill(in + i * BS, BS, K0, 64 + i, 2);
				kst_blk(&e[0][i], K0, 64 + i, in + i * BS);
				kst_blk(&e[1][i], K0, i, out + i * BS);
				kst_blk(&e[2][i], K0, i, NULL);
			}
			for (i = 0; i < 3; i++) {
				memset(&b[i], 0, sizeof(b[i]));
				b[i].blocks = (__u64)(uintptr_t)e[i];
				b[i].count = 64;
			}
			b[0].flags = KVTIER_PUT_REPLACE;
			for (;;) {
				if (!uring_cmd(&ring, fd, KVTIER_IOC_PUT, &b[0], 0) ||
				    !uring_cmd(&ring, fd, KVTIER_IOC_GET, &b[1], 1) ||
				    !uring_cmd(&ring, fd, KVTIER_IOC_PIN, &b[2], 2))
					break;
				io_uring_submit(&ring);
				if (round++ == 2 &&
				    write(self->pipe[1], "r", 1) != 1)
					_exit(3);
				/* Reap some, leave the rest in flight. */
				io_uring_cq_advance(&ring,
						    io_uring_cq_ready(&ring));
			}
			for (;;)
				pause();
		}
		ASSERT_EQ(0, wait_ready(self->pipe[0]));
		usleep(1000 * (n * 7 % 20));
		ASSERT_EQ(0, kill9(pid));
		/* The ring's work is torn down asynchronously. */
		for (int i = 0; i < 100 && kst_pinned(self->pfd); i++)
			usleep(100000);
		EXPECT_EQ(0, kst_pinned(self->pfd)) {
			TH_LOG("round %d: pins left 10 s after the kill", n);
		}
	}
	after_kill(_metadata, self, 128);
}

/* Pending prefetch groups of a killed process are cancelled and freed. */
TEST_F(life, kill_pending_prefetch)
{
	struct kvtier_api api;
	__u64 written;
	int n;

	n = kst_ctl_open_raw();
	ASSERT_LE(0, n);
	ASSERT_EQ(0, kst_api(n, KST_F_KNOWN, &api));
	close(n);
	if (!(api.supported & KVTIER_F_PREFETCH))
		SKIP(return, "no KVTIER_F_PREFETCH");
	if (access(nvt_dev(), F_OK))
		SKIP(return, "no NVMe device: prefetches would not be pending");
	/* A pool on NVMe whose blocks are mostly only there. */
	close(self->pfd);
	kst_pool_destroy(self->ctl, self->name);
	if (nvt_attached(self->ctl) >= 1)
		ASSERT_EQ(0, nvt_detach_deadline(120));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	self->pfd = kst_pool_create(self->ctl, self->name, BS, CAP, 16);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(0, put_range(self->pfd, 0, 128, 1));
	ASSERT_EQ(0, nvt_sync_deadline(self->pfd, 120, &written));

	for (n = 0; n < 4; n++) {
		pid_t pid = kst_fork();

		ASSERT_LE(0, pid);
		if (pid == 0) {
			static struct kvtier_hint h[128];
			struct kvtier_prefetch pf;
			int fd = kst_pool_open(self->ctl, self->name, 0);
			__u32 g, i;

			if (fd < 0)
				_exit(1);
			for (g = 0; g < 8; g++) {
				memset(h, 0, sizeof(h));
				for (i = 0; i < 16; i++) {
					h[i].key[0] = K0;
					h[i].key[1] = (g * 16 + i) % 128;
				}
				memset(&pf, 0, sizeof(pf));
				pf.hints = (__u64)(uintptr_t)h;
				pf.count = 16;
				pf.group = g + 1;
				pf.cookie = g;
				pf.deadline_ns = 0;
				pf.tier = KVTIER_TIER_DRAM;
				if (kst_ioctl(fd, KVTIER_IOC_PREFETCH, &pf))
					_exit(2);
			}
			ready_and_wait(self->pipe[1]);
		}
		ASSERT_EQ(0, wait_ready(self->pipe[0]));
		ASSERT_EQ(0, kill9(pid));
	}
	after_kill(_metadata, self, 128);
	ASSERT_EQ(0, nvt_detach_deadline(120));
}

static int unload(void)
{
	return syscall(__NR_delete_module, "kvtier", O_NONBLOCK) ? -errno : 0;
}

/*
 * While a pool fd or a mapping lives, the module cannot go; the mapping
 * alone still reads the blocks' bytes (faults after the fds are closed).
 */
TEST_F(life, unload_refused_while_in_use)
{
	struct kvtier_block b;
	__u64 addr[4];
	char *m;
	__u32 i;
	int ret;

	ASSERT_EQ(0, put_range(self->pfd, 0, 4, 1));
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, kst_lookup1(self->pfd, K0, i, &b));
		ASSERT_GT(CAP, b.addr);
		addr[i] = b.addr;
	}
	m = mmap(NULL, (size_t)CAP * BS, PROT_READ, MAP_SHARED, self->pfd, 0);
	ASSERT_NE(MAP_FAILED, m);
	/* One block faulted in while the fds are open, the rest after. */
	ASSERT_EQ(-1, kst_check_gen(m + addr[0] * BS, BS, K0, 0, 1));

	/* ctl and pool fd open, and a mapping. */
	ret = unload();
	EXPECT_TRUE(ret == -EWOULDBLOCK || ret == -EBUSY) {
		TH_LOG("delete_module: %d", ret);
	}
	/* Only the pool fd and the mapping. */
	close(self->ctl);
	self->ctl = -1;
	ret = unload();
	EXPECT_TRUE(ret == -EWOULDBLOCK || ret == -EBUSY);
	/* Only the mapping. */
	close(self->pfd);
	self->pfd = -1;
	ret = unload();
	EXPECT_TRUE(ret == -EWOULDBLOCK || ret == -EBUSY);
	ASSERT_EQ(0, access(KST_DEV, F_OK)) {
		TH_LOG("the module went away under a mapping");
	}
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(-1, kst_check_gen(m + addr[i] * BS, BS, K0, i, 1)) {
			TH_LOG("block %u wrong through the mapping", i);
		}
	}
	munmap(m, (size_t)CAP * BS);
	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
}

/* ---- memory cgroup ------------------------------------------------------ */

static int cg_setup(char *dir, size_t len)
{
	return kst_cg_make(dir, len, "life", "16M");
}

/*
 * What kvt_block_index_bytes() charges for @capacity blocks: a 64-byte
 * record each, and a 64-byte bucket of the key hash for every two.
 */
static long long index_bytes(__u32 capacity)
{
	return (long long)capacity * 64 + ((long long)capacity + 1) / 2 * 64;
}

/*
 * A tenant in a cgroup with memory.max = 16M creates a pool larger than
 * that and PUTs until -ENOMEM; meanwhile the parent's pool (charged to
 * the parent's cgroup) keeps taking PUTs and GETs.
 */
TEST_F(life, memcg_limit_enomem)
{
	char dir[256], cname[KVTIER_NAME_MAX];
	char *buf = kst_alloc(BS);
	int ret, code;
	pid_t pid;
	__u64 gen;
	__u32 i;

	ASSERT_NE(NULL, buf);
	ret = cg_setup(dir, sizeof(dir));
	if (ret)
		SKIP(return, "no cgroup2 memory controller (%d)", ret);
	kst_name(cname, "lifecg");
	pid = kst_fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd;

		if (kst_cg_enter(dir))
			_exit(10);
		/* 64 MiB of blocks: four times the cgroup's limit. */
		fd = kst_pool_create(self->ctl, cname, BS, 4096, 4096);
		if (fd < 0)
			_exit(fd == -ENOMEM ? 0 : 11);
		for (i = 0; i < 4096; i++) {
			kst_fill(buf, BS, K0, i, 1);
			ret = kst_put1(fd, K0, i, buf, NULL);
			if (ret == -ENOMEM)
				break;
			if (ret)
				_exit(12);
		}
		if (i == 4096)
			_exit(13);
		/* Still ENOMEM, and what went in is readable. */
		if (kst_put1(fd, K0, 5000, buf, NULL) != -ENOMEM)
			_exit(14);
		if (i && (kst_get1(fd, K0, 0, buf, NULL) ||
			  kst_check(buf, BS, K0, 0, &gen) != -1))
			_exit(15);
		close(fd);
		_exit(kst_pool_destroy(self->ctl, cname) ? 16 : 0);
	}
	code = kst_wait(pid);
	EXPECT_EQ(0, code);
	/* The parent's pool is unaffected. */
	ASSERT_EQ(0, put_range(self->pfd, 0, 128, 7));
	for (i = 0; i < 128; i++) {
		ASSERT_EQ(0, kst_get1(self->pfd, K0, i, buf, NULL));
		ASSERT_EQ(-1, kst_check(buf, BS, K0, i, &gen));
		ASSERT_EQ(7ULL, gen);
	}
	kst_pool_destroy(self->ctl, cname);
	rmdir(dir);
	kst_free(buf, BS);
}

/*
 * A create takes its share of the budget before it allocates the index:
 * one that would open an existing pool allocates nothing, and creates
 * running at once never hold more index memory than the budget allows
 * (they used to allocate first and be refused after, together enough to
 * OOM the host). The index is charged to the creator's cgroup, so its
 * memory.peak shows what was allocated, even for a moment.
 */
TEST_F(life, create_reserves_before_allocating)
{
	char dir[256], cname[KVTIER_NAME_MAX];
	long long mb, idx, peak;
	__u32 cap;
	int i, ret, code, made;
	pid_t pid[4];

	ret = kst_cg_make(dir, sizeof(dir), "resv", "max");
	if (ret || kst_cg_peak(dir) < 0)
		SKIP(return, "no cgroup2 memory controller with memory.peak (%d)",
		     ret);
	ASSERT_EQ(0, kst_param("dram_mb", &mb));

	/* OPEN_EXISTING of the fixture's pool, asking for the largest index. */
	pid[0] = kst_fork();
	ASSERT_LE(0, pid[0]);
	if (pid[0] == 0) {
		struct kvtier_pool_create c;
		struct kvtier_pool_stat st;
		int fd;

		if (kst_cg_enter(dir))
			_exit(10);
		kst_create_init(&c, self->name, BS, KVTIER_CAPACITY_MAX, 1);
		c.flags = KVTIER_POOL_OPEN_EXISTING;
		fd = kst_create(self->ctl, &c);
		if (fd < 0)
			_exit(11);
		if (kst_stat(fd, &st) || st.capacity != CAP)
			_exit(12);
		_exit(kst_cg_peak(dir) < (16LL << 20) ? 0 : 13);
	}
	code = kst_wait(pid[0]);
	EXPECT_EQ(0, code) TH_LOG("peak %lld MiB (an index of %u blocks is %lld MiB)",
				  kst_cg_peak(dir) >> 20,
				  (unsigned int)KVTIER_CAPACITY_MAX,
				  index_bytes(KVTIER_CAPACITY_MAX) >> 20);
	rmdir(dir);

	/* Four creates at once, each of an index of over half the budget. */
	ASSERT_EQ(0, kst_cg_make(dir, sizeof(dir), "resv4", "max"));
	for (cap = 1024; index_bytes(cap + cap / 16) <= mb * 3 / 5 << 20;)
		cap += cap / 16;
	idx = index_bytes(cap);
	for (i = 0; i < 4; i++) {
		pid[i] = kst_fork();
		ASSERT_LE(0, pid[i]);
		if (pid[i] == 0) {
			int round, fd;

			if (kst_cg_enter(dir))
				_exit(10);
			kst_name(cname, "resv");
			for (round = 0, made = 0; round < 3; round++) {
				struct kvtier_pool_stat st;

				fd = kst_pool_create(self->ctl, cname, KST_PAGE,
						     cap, 1);
				if (fd < 0 && fd != -ENOSPC)
					_exit(11);
				if (fd < 0)
					continue;
				/* Two such indexes cannot fit the budget. */
				if (kst_stat(fd, &st) ||
				    st.meta_bytes * 2 <= (__u64)mb << 20)
					_exit(12);
				close(fd);
				kst_pool_destroy(self->ctl, cname);
				made++;
			}
			_exit(20 + made);
		}
	}
	for (i = 0, made = 0; i < 4; i++) {
		code = kst_wait(pid[i]);
		EXPECT_LE(20, code);
		EXPECT_GE(23, code);
		made += code - 20;
	}
	/* Something was created, so the peak below measured a create. */
	EXPECT_LT(0, made);
	peak = kst_cg_peak(dir);
	EXPECT_GT(idx + idx / 2, peak) TH_LOG("peak %lld MiB, one index %lld MiB",
					      peak >> 20, idx >> 20);
	rmdir(dir);
}

TEST_HARNESS_MAIN
