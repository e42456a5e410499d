// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier zero-copy store: RESERVE, fill through the reservation window,
 * COMMIT or ABORT. What a runtime relies on: the bytes it wrote are the
 * block's, copied by nobody (the module's copy counter stays put); no
 * reader and no other fd sees a reserved block; after COMMIT the window
 * no longer writes it; each bad request its own errno, nothing half done;
 * reservations are bounded and end with their fd, SIGKILL included.
 */
#include <sys/uio.h>
#include <liburing.h>
#include "kvtier_test.h"

#define BS	(16 * KST_KIB)
#define CAP	2048
#define DRAM	1024		/* room for reserve_max (256) and more */
#define K0	0x4e5e4fe0ULL

FIXTURE(resv) {
	int ctl, pfd;
	char name[KVTIER_NAME_MAX];
	__u64 off;		/* the window's offset: CAP * BS */
	char *win;		/* the pool fd's window, read-write */
	char *buf;		/* one block */
	long long max;		/* reserve_max */
};

FIXTURE_SETUP(resv)
{
	kst_setup(_metadata);
	self->pfd = -1;
	self->win = NULL;
	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	kst_name(self->name, "resv");
	self->pfd = kst_pool_create(self->ctl, self->name, BS, CAP, DRAM);
	ASSERT_LE(0, self->pfd);
	self->off = (__u64)CAP * BS;
	self->win = mmap(NULL, (size_t)CAP * BS, PROT_READ | PROT_WRITE,
			 MAP_SHARED, self->pfd, (off_t)self->off);
	ASSERT_NE(MAP_FAILED, self->win);
	self->buf = kst_alloc(BS);
	ASSERT_NE(NULL, self->buf);
	ASSERT_EQ(0, kst_param("reserve_max", &self->max));
}

FIXTURE_TEARDOWN(resv)
{
	if (self->win && self->win != MAP_FAILED)
		munmap(self->win, (size_t)CAP * BS);
	if (self->pfd >= 0)
		close(self->pfd);
	kst_pool_destroy(self->ctl, self->name);
	kst_free(self->buf, BS);
	close(self->ctl);
}

/* Reserve keys first..first+n-1 on @fd; each entry's status in @b. */
static int reserve(int fd, struct kvtier_block *b, unsigned int first,
		   unsigned int n, __u32 flags, __u32 *done)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		kst_blk(&b[i], K0, first + i, NULL);
	return kst_batch(fd, KVTIER_IOC_RESERVE, b, n, flags, done);
}

/* COMMIT or ABORT @n entries as RESERVE left them. */
static int finish(int fd, unsigned long cmd, struct kvtier_block *b,
		  unsigned int n, __u32 flags, __u32 *done)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		b[i].status = 0;
	return kst_batch(fd, cmd, b, n, flags, done);
}

static char *slot(FIXTURE_DATA(resv) *self, __u64 addr)
{
	return self->win + addr * BS;
}

/* /sys/kernel/kvtier/cpu_bytes: bytes copied, checksummed, zeroed. */
static int cpu_bytes(long long v[3])
{
	return kst_read_cols(KST_SYSFS_DIR "/cpu_bytes", v, 3, 0) == 3 ?
	       0 : -EIO;
}

/* ---- the round trip ----------------------------------------------------- */

/*
 * Reserve, write the bytes in place, commit: GET returns them, LOOKUP finds
 * the keys in DRAM at the addresses RESERVE gave, STAT counts the PUTs,
 * and the module copied nothing (it checksummed each block once).
 */
TEST_F(resv, fill_commit_get)
{
	struct kvtier_block b[8];
	struct kvtier_pool_stat st;
	long long c0[3], c1[3];
	__u32 done;
	int i;

	ASSERT_EQ(0, cpu_bytes(c0));
	ASSERT_EQ(0, reserve(self->pfd, b, 0, 8, 0, &done));
	ASSERT_EQ(8U, done);
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, b[i].status);
		ASSERT_GT((__u64)CAP, (__u64)b[i].addr);
		ASSERT_EQ((__u32)KVTIER_TIER_DRAM, b[i].tier);
		kst_fill(slot(self, b[i].addr), BS, K0, i, i + 1);
	}
	ASSERT_EQ(0, finish(self->pfd, KVTIER_IOC_COMMIT, b, 8, 0, &done));
	ASSERT_EQ(8U, done);
	ASSERT_EQ(0, cpu_bytes(c1));
	EXPECT_EQ(0LL, c1[0] - c0[0]);		/* copied */
	EXPECT_EQ((long long)(8 * BS), c1[1] - c0[1]);	/* checksummed */

	for (i = 0; i < 8; i++) {
		struct kvtier_block l;

		ASSERT_EQ(0, b[i].status);
		memset(self->buf, 0, BS);
		ASSERT_EQ(0, kst_get1(self->pfd, K0, i, self->buf, NULL));
		ASSERT_EQ(-1, kst_check_gen(self->buf, BS, K0, i, i + 1));
		kst_blk(&l, K0, i, NULL);
		ASSERT_EQ(0, kst_batch(self->pfd, KVTIER_IOC_LOOKUP, &l, 1, 0,
				       &done));
		ASSERT_EQ(b[i].addr, l.addr);
		ASSERT_EQ((__u32)KVTIER_TIER_DRAM, l.tier);
	}
	ASSERT_EQ(0, kst_stat(self->pfd, &st));
	ASSERT_EQ(8ULL, st.puts);
	ASSERT_EQ(8ULL, st.resident[KVTIER_TIER_DRAM]);
}

/* Reserved blocks are nobody's but the fd's window until COMMIT. */
TEST_F(resv, invisible_until_commit)
{
	int other = kst_pool_open(self->ctl, self->name, 0);
	char *owin, *map;
	struct kvtier_block b;
	__u32 done;

	ASSERT_LE(0, other);
	ASSERT_EQ(0, reserve(self->pfd, &b, 1, 1, 0, &done));
	ASSERT_EQ(1U, done);
	memset(slot(self, b.addr), 0x5a, BS);

	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, 1, NULL));
	ASSERT_EQ(-ENOENT, kst_get1(other, K0, 1, self->buf, NULL));
	/* The read-only view of the address: no block there yet. */
	map = mmap(NULL, (size_t)CAP * BS, PROT_READ, MAP_SHARED, other, 0);
	ASSERT_NE(MAP_FAILED, map);
	EXPECT_EQ(SIGBUS, kst_probe_read(map + b.addr * BS, self->buf, 8));
	/* Another fd's window, same pool: not its reservation. */
	owin = mmap(NULL, (size_t)CAP * BS, PROT_READ | PROT_WRITE,
		    MAP_SHARED, other, (off_t)self->off);
	ASSERT_NE(MAP_FAILED, owin);
	EXPECT_EQ(SIGBUS, kst_probe_write(owin + b.addr * BS, self->buf, 8));
	EXPECT_EQ(SIGBUS, kst_probe_read(owin + b.addr * BS, self->buf, 8));

	ASSERT_EQ(0, finish(self->pfd, KVTIER_IOC_COMMIT, &b, 1, 0, &done));
	ASSERT_EQ(1U, done);
	ASSERT_EQ(0, kst_probe_read(map + b.addr * BS, self->buf, BS));
	EXPECT_EQ((char)0x5a, self->buf[0]);
	EXPECT_EQ((char)0x5a, self->buf[BS - 1]);
	munmap(owin, (size_t)CAP * BS);
	munmap(map, (size_t)CAP * BS);
	close(other);
}

/*
 * After COMMIT the window no longer reaches the block: a write there raises
 * SIGBUS and the committed bytes stay; after ABORT likewise, and the key
 * was never there.
 */
TEST_F(resv, window_closes)
{
	struct kvtier_block b[2];
	__u32 done;

	ASSERT_EQ(0, reserve(self->pfd, b, 2, 2, 0, &done));
	ASSERT_EQ(2U, done);
	kst_fill(slot(self, b[0].addr), BS, K0, 2, 7);
	memset(slot(self, b[1].addr), 0x11, BS);
	ASSERT_EQ(0, finish(self->pfd, KVTIER_IOC_COMMIT, b, 1, 0, &done));
	ASSERT_EQ(0, finish(self->pfd, KVTIER_IOC_ABORT, b + 1, 1, 0, &done));
	ASSERT_EQ(1U, done);

	memset(self->buf, 0xee, BS);
	EXPECT_EQ(SIGBUS, kst_probe_write(slot(self, b[0].addr), self->buf,
					  8));
	EXPECT_EQ(SIGBUS, kst_probe_write(slot(self, b[1].addr), self->buf,
					  8));
	ASSERT_EQ(0, kst_get1(self->pfd, K0, 2, self->buf, NULL));
	ASSERT_EQ(-1, kst_check_gen(self->buf, BS, K0, 2, 7));
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, 3, NULL));
	ASSERT_EQ(1LL, kst_resident(self->pfd));
}

/*
 * Another agent writing the window memory by reference, as a DMA engine
 * writes memory registered with it: a child pins the parent's window pages
 * through process_vm_writev() (get_user_pages) and fills the block, which
 * COMMIT then publishes as written.
 */
TEST_F(resv, remote_writer_fills)
{
	struct kvtier_block b;
	pid_t parent = getpid(), pid;
	__u32 done;

	ASSERT_EQ(0, reserve(self->pfd, &b, 20, 1, 0, &done));
	ASSERT_EQ(1U, done);
	pid = kst_fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct iovec local, remote;

		kst_fill(self->buf, BS, K0, 20, 9);
		local.iov_base = self->buf;
		local.iov_len = BS;
		remote.iov_base = slot(self, b.addr);
		remote.iov_len = BS;
		_exit(process_vm_writev(parent, &local, 1, &remote, 1, 0) ==
		      (ssize_t)BS ? 0 : 1);
	}
	ASSERT_EQ(0, kst_wait(pid));
	ASSERT_EQ(0, finish(self->pfd, KVTIER_IOC_COMMIT, &b, 1, 0, &done));
	ASSERT_EQ(1U, done);
	memset(self->buf, 0, BS);
	ASSERT_EQ(0, kst_get1(self->pfd, K0, 20, self->buf, NULL));
	ASSERT_EQ(-1, kst_check_gen(self->buf, BS, K0, 20, 9));
}

/* ---- bad requests -------------------------------------------------------- */

/* COMMIT and ABORT of what this fd does not hold: -ENOENT, -EALREADY. */
TEST_F(resv, commit_errors)
{
	struct kvtier_block b, e;
	__u32 done;

	ASSERT_EQ(0, reserve(self->pfd, &b, 4, 1, 0, &done));
	kst_fill(slot(self, b.addr), BS, K0, 4, 1);

	e = b;				/* another address */
	e.addr = (b.addr + 1) % CAP;
	ASSERT_EQ(0, finish(self->pfd, KVTIER_IOC_COMMIT, &e, 1, 0, &done));
	EXPECT_EQ(0U, done);
	EXPECT_EQ(-ENOENT, e.status);
	e = b;				/* another key */
	e.key[1] = 5;
	ASSERT_EQ(0, finish(self->pfd, KVTIER_IOC_COMMIT, &e, 1, 0, &done));
	EXPECT_EQ(-ENOENT, e.status);
	e = b;				/* past the capacity */
	e.addr = CAP;
	ASSERT_EQ(0, finish(self->pfd, KVTIER_IOC_ABORT, &e, 1, 0, &done));
	EXPECT_EQ(-ENOENT, e.status);
	e = b;				/* another fd */
	{
		int other = kst_pool_open(self->ctl, self->name, 0);

		ASSERT_LE(0, other);
		ASSERT_EQ(0, finish(other, KVTIER_IOC_COMMIT, &e, 1, 0,
				    &done));
		EXPECT_EQ(-ENOENT, e.status);
		close(other);
	}

	e = b;
	ASSERT_EQ(0, finish(self->pfd, KVTIER_IOC_COMMIT, &e, 1, 0, &done));
	ASSERT_EQ(1U, done);
	e = b;				/* double COMMIT */
	ASSERT_EQ(0, finish(self->pfd, KVTIER_IOC_COMMIT, &e, 1, 0, &done));
	EXPECT_EQ(0U, done);
	EXPECT_EQ(-EALREADY, e.status);
	e = b;				/* ABORT after COMMIT */
	ASSERT_EQ(0, finish(self->pfd, KVTIER_IOC_ABORT, &e, 1, 0, &done));
	EXPECT_EQ(-EALREADY, e.status);
	ASSERT_EQ(0, kst_get1(self->pfd, K0, 4, self->buf, NULL));
	ASSERT_EQ(-1, kst_check_gen(self->buf, BS, K0, 4, 1));

	/* An entry with a buffer, or segments: the batch, -EINVAL. */
	kst_blk(&e, K0, 9, self->buf);
	ASSERT_EQ(-EINVAL, kst_batch(self->pfd, KVTIER_IOC_RESERVE, &e, 1, 0,
				     &done));
	/* No such flag. */
	kst_blk(&e, K0, 9, NULL);
	ASSERT_EQ(-EINVAL, kst_batch(self->pfd, KVTIER_IOC_ABORT, &e, 1,
				     KVTIER_PUT_REPLACE, &done));
	ASSERT_EQ(-EINVAL, kst_batch(self->pfd, KVTIER_IOC_RESERVE, &e, 1,
				     KVTIER_LOOKUP_LOAD, &done));
	ASSERT_EQ(1LL, kst_resident(self->pfd));
}

/*
 * A key that is in the pool: RESERVE says -EEXIST unless replacing; a key
 * stored while reserved: COMMIT says -EEXIST and keeps the reservation,
 * which COMMIT with REPLACE then publishes over the stored block.
 */
TEST_F(resv, existing_keys)
{
	struct kvtier_block b;
	__u32 done;

	kst_fill(self->buf, BS, K0, 6, 1);
	ASSERT_EQ(0, kst_put1(self->pfd, K0, 6, self->buf, NULL));
	ASSERT_EQ(0, reserve(self->pfd, &b, 6, 1, 0, &done));
	EXPECT_EQ(0U, done);
	EXPECT_EQ(-EEXIST, b.status);

	ASSERT_EQ(0, reserve(self->pfd, &b, 7, 1, 0, &done));
	ASSERT_EQ(1U, done);
	kst_fill(slot(self, b.addr), BS, K0, 7, 2);
	kst_fill(self->buf, BS, K0, 7, 1);
	ASSERT_EQ(0, kst_put1(self->pfd, K0, 7, self->buf, NULL));
	ASSERT_EQ(0, finish(self->pfd, KVTIER_IOC_COMMIT, &b, 1, 0, &done));
	EXPECT_EQ(0U, done);
	EXPECT_EQ(-EEXIST, b.status);
	/* Still reserved, writable again: write it anew. */
	ASSERT_EQ(0, kst_probe_write(slot(self, b.addr), self->buf, 8));
	kst_fill(slot(self, b.addr), BS, K0, 7, 3);
	ASSERT_EQ(0, finish(self->pfd, KVTIER_IOC_COMMIT, &b, 1,
			    KVTIER_PUT_REPLACE, &done));
	ASSERT_EQ(1U, done);
	ASSERT_EQ(0, kst_get1(self->pfd, K0, 7, self->buf, NULL));
	ASSERT_EQ(-1, kst_check_gen(self->buf, BS, K0, 7, 3));

	/* Pinned: REPLACE says -EBUSY, and the reservation stays. */
	ASSERT_EQ(0, reserve(self->pfd, &b, 6, 1, KVTIER_PUT_REPLACE, &done));
	ASSERT_EQ(1U, done);
	ASSERT_EQ(0, kst_pin1(self->pfd, K0, 6));
	ASSERT_EQ(0, finish(self->pfd, KVTIER_IOC_COMMIT, &b, 1,
			    KVTIER_PUT_REPLACE, &done));
	EXPECT_EQ(-EBUSY, b.status);
	ASSERT_EQ(0, kst_unpin1(self->pfd, K0, 6));
	ASSERT_EQ(0, finish(self->pfd, KVTIER_IOC_ABORT, &b, 1, 0, &done));
	ASSERT_EQ(1U, done);
	ASSERT_EQ(0, kst_get1(self->pfd, K0, 6, self->buf, NULL));
	ASSERT_EQ(-1, kst_check_gen(self->buf, BS, K0, 6, 1));
}

/* A read-only fd reserves nothing and maps no writable window. */
TEST_F(resv, read_only_fd)
{
	int ro = kst_pool_open(self->ctl, self->name, KVTIER_POOL_RDONLY);
	struct kvtier_block b;
	void *p;
	__u32 done;

	ASSERT_LE(0, ro);
	ASSERT_EQ(-EBADF, reserve(ro, &b, 8, 1, 0, &done));
	ASSERT_EQ(-EBADF, finish(ro, KVTIER_IOC_ABORT, &b, 1, 0, &done));
	p = mmap(NULL, BS, PROT_READ | PROT_WRITE, MAP_SHARED, ro,
		 (off_t)self->off);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EACCES, errno);
	/* Read-only it may map, and sees nothing. */
	p = mmap(NULL, BS, PROT_READ, MAP_SHARED, ro, (off_t)self->off);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(SIGBUS, kst_probe_read(p, self->buf, 8));
	munmap(p, BS);
	close(ro);
}

/* Window mappings: shared, and wholly on one side of its start. */
TEST_F(resv, window_mappings)
{
	void *p;

	p = mmap(NULL, BS, PROT_READ | PROT_WRITE, MAP_PRIVATE, self->pfd,
		 (off_t)self->off);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, 2 * BS, PROT_READ, MAP_SHARED, self->pfd,
		 (off_t)(self->off - BS));
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, 2 * BS, PROT_READ | PROT_WRITE, MAP_SHARED, self->pfd,
		 (off_t)(2 * self->off - BS));
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	/* The read-only view stays read-only. */
	p = mmap(NULL, BS, PROT_READ | PROT_WRITE, MAP_SHARED, self->pfd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EACCES, errno);
}

/* ---- bounds -------------------------------------------------------------- */

/*
 * One fd holds reserve_max reservations at most (-EDQUOT), and the pool's
 * reservations half its DRAM share (-ENOSPC); ABORT makes room again.
 */
TEST_F(resv, bounds)
{
	unsigned int n = (unsigned int)self->max, i, got = 0;
	struct kvtier_block *b = calloc(DRAM, sizeof(*b));
	int fds[4];
	__u32 done;

	ASSERT_NE(NULL, b);
	ASSERT_GE(DRAM / 2, (int)n);
	ASSERT_EQ(0, reserve(self->pfd, b, 0, n + 1, 0, &done));
	ASSERT_EQ(n, done);
	EXPECT_EQ(-EDQUOT, b[n].status);
	got = n;

	/* More fds, until the pool's half of DRAM is reserved. */
	for (i = 0; i < 4; i++) {
		fds[i] = kst_pool_open(self->ctl, self->name, 0);
		ASSERT_LE(0, fds[i]);
	}
	for (i = 0; i < 4 && got < DRAM / 2; i++) {
		ASSERT_EQ(0, reserve(fds[i], b + got, 1000 + got, n, 0,
				     &done));
		got += done;
	}
	ASSERT_EQ((unsigned int)DRAM / 2, got);
	ASSERT_EQ(0, reserve(fds[3], b + got, 5000, 1, 0, &done));
	EXPECT_EQ(-ENOSPC, b[got].status);
	/* PUT still has the other half. */
	kst_fill(self->buf, BS, K0, 9999, 1);
	ASSERT_EQ(0, kst_put1(self->pfd, K0, 9999, self->buf, NULL));

	ASSERT_EQ(0, finish(self->pfd, KVTIER_IOC_ABORT, b, 1, 0, &done));
	ASSERT_EQ(1U, done);
	ASSERT_EQ(0, reserve(fds[3], b + got, 5000, 1, 0, &done));
	EXPECT_EQ(1U, done);
	for (i = 0; i < 4; i++)
		close(fds[i]);
	free(b);
}

/* ---- the fd's end ---------------------------------------------------------- */

/* close() gives every reservation back: no block, no DRAM left. */
TEST_F(resv, close_releases)
{
	int fd = kst_pool_open(self->ctl, self->name, 0);
	struct kvtier_block b[16];
	__u32 done;
	char *w;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, reserve(fd, b, 0, 16, 0, &done));
	ASSERT_EQ(16U, done);
	ASSERT_EQ(16LL, kst_resident(self->pfd));
	/* A mapping holds the file: the reservations end with it. */
	w = mmap(NULL, BS, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)(self->off + b[0].addr * BS));
	ASSERT_NE(MAP_FAILED, w);
	memset(w, 1, BS);
	close(fd);
	ASSERT_EQ(16LL, kst_resident(self->pfd));
	munmap(w, BS);
	ASSERT_EQ(0LL, kst_resident(self->pfd));
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, 0, NULL));
}

/* SIGKILL with reservations, written and mapped: nothing is left. */
TEST_F(resv, sigkill_releases)
{
	int pipefd[2];
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(pipefd));
	pid = kst_fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct kvtier_block b[32];
		int fd = kst_pool_open(self->ctl, self->name, 0);
		__u32 done;
		char *w;
		int i;

		if (fd < 0 || reserve(fd, b, 100, 32, 0, &done) || done != 32)
			_exit(1);
		/* The parent's window is not inherited: map its own. */
		w = mmap(NULL, (size_t)CAP * BS, PROT_READ | PROT_WRITE,
			 MAP_SHARED, fd, (off_t)self->off);
		if (w == MAP_FAILED)
			_exit(1);
		for (i = 0; i < 32; i++)
			memset(w + b[i].addr * BS, i, BS);
		if (write(pipefd[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	ASSERT_EQ(32LL, kst_resident(self->pfd));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(128 + SIGKILL, kst_wait(pid));
	close(pipefd[0]);
	ASSERT_EQ(0LL, kst_resident(self->pfd));
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, 100, NULL));
}

/* ---- io_uring ------------------------------------------------------------ */

/* Queue @op on @fd for batch @b of @e[0..n-1] (statuses reset). */
static int uring_batch(struct io_uring *ring, int fd, __u32 op,
		       struct kvtier_batch *b, struct kvtier_block *e,
		       unsigned int n)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct kvtier_uring_cmd *c;
	unsigned int i;

	if (!sqe)
		return -EBUSY;
	for (i = 0; i < n; i++)
		e[i].status = 0;
	memset(b, 0, sizeof(*b));
	b->blocks = (__u64)(uintptr_t)e;
	b->count = n;
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
	sqe->cmd_op = op;
	c = (struct kvtier_uring_cmd *)sqe->cmd;
	memset(c, 0, sizeof(*c));
	c->arg = (__u64)(uintptr_t)b;
	io_uring_sqe_set_data64(sqe, op);
	return 0;
}

/* Submit what is queued and reap @n completions into @res[op's order]. */
static int uring_reap(struct io_uring *ring, unsigned int n, int *res,
		      const __u32 *ops)
{
	struct io_uring_cqe *cqe;
	unsigned int i, j;

	if (io_uring_submit(ring) != (int)n)
		return -EIO;
	for (i = 0; i < n; i++) {
		if (io_uring_wait_cqe(ring, &cqe))
			return -EIO;
		for (j = 0; j < n; j++)
			if (ops[j] == io_uring_cqe_get_data64(cqe))
				res[j] = cqe->res;
		io_uring_cqe_seen(ring, cqe);
	}
	return 0;
}

/*
 * RESERVE, COMMIT and ABORT through io_uring (run by its workers): the
 * reservations are the fd's as by ioctl, the committed bytes are the ones
 * written into the window, the aborted keys are gone, a second COMMIT is
 * -EALREADY per entry; without KVTIER_F_RESERVE the ring refuses them.
 */
TEST_F(resv, uring_reserve_commit_abort)
{
	static const __u32 two[] = { KVTIER_IOC_COMMIT, KVTIER_IOC_ABORT };
	static const __u32 one[] = { KVTIER_IOC_RESERVE };
	struct kvtier_block r[8];
	struct kvtier_batch b[2];
	struct io_uring ring;
	int res[2], i, ctl, fd;
	struct kvtier_api a;
	long long c0[3], c1[3];

	if (io_uring_queue_init(8, &ring, 0))
		SKIP(return, "no io_uring");
	for (i = 0; i < 8; i++)
		kst_blk(&r[i], K0, 20 + i, NULL);
	res[0] = 1;
	ASSERT_EQ(0, uring_batch(&ring, self->pfd, KVTIER_IOC_RESERVE, &b[0],
				 r, 8));
	ASSERT_EQ(0, uring_reap(&ring, 1, res, one));
	ASSERT_EQ(0, res[0]);
	ASSERT_EQ(8U, b[0].done);
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, r[i].status);
		kst_fill(slot(self, r[i].addr), BS, K0, 20 + i, 3);
	}
	ASSERT_EQ(8LL, kst_resident(self->pfd));
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, 20, NULL));

	/* COMMIT six, ABORT two, in one submission. */
	ASSERT_EQ(0, cpu_bytes(c0));
	ASSERT_EQ(0, uring_batch(&ring, self->pfd, KVTIER_IOC_COMMIT, &b[0],
				 r, 6));
	ASSERT_EQ(0, uring_batch(&ring, self->pfd, KVTIER_IOC_ABORT, &b[1],
				 r + 6, 2));
	res[0] = res[1] = 1;
	ASSERT_EQ(0, uring_reap(&ring, 2, res, two));
	ASSERT_EQ(0, res[0]);
	ASSERT_EQ(0, res[1]);
	ASSERT_EQ(6U, b[0].done);
	ASSERT_EQ(2U, b[1].done);
	ASSERT_EQ(0, cpu_bytes(c1));
	EXPECT_EQ(0LL, c1[0] - c0[0]);		/* nothing copied */
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, r[i].status);
	for (i = 0; i < 6; i++) {
		memset(self->buf, 0, BS);
		ASSERT_EQ(0, kst_get1(self->pfd, K0, 20 + i, self->buf, NULL));
		ASSERT_EQ(-1, kst_check_gen(self->buf, BS, K0, 20 + i, 3));
	}
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, 26, NULL));
	ASSERT_EQ(-ENOENT, kst_lookup1(self->pfd, K0, 27, NULL));
	ASSERT_EQ(6LL, kst_resident(self->pfd));

	/* Again: each entry -EALREADY, the command itself 0. */
	res[0] = res[1] = 1;
	ASSERT_EQ(0, uring_batch(&ring, self->pfd, KVTIER_IOC_COMMIT, &b[0],
				 r, 1));
	ASSERT_EQ(0, uring_batch(&ring, self->pfd, KVTIER_IOC_ABORT, &b[1],
				 r + 1, 1));
	ASSERT_EQ(0, uring_reap(&ring, 2, res, two));
	ASSERT_EQ(0, res[0]);
	ASSERT_EQ(0, res[1]);
	ASSERT_EQ(0U, b[0].done);
	ASSERT_EQ(-EALREADY, r[0].status);
	ASSERT_EQ(-EALREADY, r[1].status);

	/* A pool fd whose context did not negotiate KVTIER_F_RESERVE. */
	ctl = kst_ctl_open_raw();
	ASSERT_LE(0, ctl);
	ASSERT_EQ(0, kst_api(ctl, ~0ULL & ~KVTIER_F_RESERVE, &a));
	ASSERT_NE(0ULL, a.features & KVTIER_F_URING);
	fd = kst_pool_open(ctl, self->name, 0);
	ASSERT_LE(0, fd);
	kst_blk(&r[0], K0, 40, NULL);
	r[0].status = 0x7eadbeef;
	ASSERT_EQ(0, uring_batch(&ring, fd, KVTIER_IOC_RESERVE, &b[0], r, 1));
	r[0].status = 0x7eadbeef;
	res[0] = 1;
	ASSERT_EQ(0, uring_reap(&ring, 1, res, one));
	ASSERT_EQ(-EOPNOTSUPP, res[0]);
	ASSERT_EQ(0x7eadbeef, r[0].status);	/* not answered */
	close(fd);
	close(ctl);
	io_uring_queue_exit(&ring);
	ASSERT_EQ(6LL, kst_resident(self->pfd));
}

TEST_HARNESS_MAIN
