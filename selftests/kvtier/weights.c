// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier weight pools (KVTIER_F_WEIGHTS): a read-only pool of the bytes of
 * a file, block i from file_off + i * block_size under { file_key, i }.
 *
 *  - wcreate: POOL_CREATE's rejections, one bad field each, and the pool
 *    not created after;
 *  - wro: every write refused (-EROFS), the mapping read-only;
 *  - wbytes, on tmpfs (no direct I/O in 6.1: buffered reads) and on ext4
 *    on a loop device (direct I/O), block 0 at offset 0 and further in: the
 *    bytes of every block against the file's, the short last block zero
 *    filled, LOOKUP's tiers, eviction and reload, PREFETCH by address, the
 *    mapping, writers locked out, the file's identity changed, the file
 *    unlinked or renamed over, the file let go when the pool goes;
 *  - wdm: ext4 over a device-mapper device switched to "error" mid-load:
 *    misses, never wrong bytes.
 *
 * The file's bytes: word w (bytes 8w..8w+7) of generation g is
 * kst_mix(g << 48 ^ w), so every 8 bytes differ, and every block.
 */
#include <sys/statfs.h>
#include <linux/magic.h>

#include "prefetch_test.h"

#define FKEY		0x7765696768747321ULL	/* "weights!" */
#define BS		(64 * KST_KIB)

/* wbytes: a file of a few MiB, its size no multiple of anything. */
#define WSIZE		(3 * KST_MIB + 12345)
#define WDRAM		16U
#define WBATCH		8U

/* wcreate, wro: a file of 2 blocks and 3 pages. */
#define RSIZE		(2 * BS + 3 * KST_PAGE)
#define RCAP		3U

/* wdm: a file of 1 MiB and 100 bytes: 17 blocks. */
#define DSIZE		(KST_MIB + 100)
#define DCAP		17U

static __u32 wt_blocks(__u64 size, __u64 off)
{
	return (__u32)((size - off + BS - 1) / BS);
}

/* ---- the file ------------------------------------------------------------ */

/* @len bytes of generation @gen's file, from its start. */
static void wt_pattern(char *buf, size_t len, __u64 gen)
{
	size_t i;

	for (i = 0; i < len; i += 8) {
		__u64 w = kst_mix(gen << 48 ^ (i / 8));

		memcpy(buf + i, &w, len - i < 8 ? len - i : 8);
	}
}

/*
 * Write @size bytes of generation @gen to a new file @path, synced, its
 * pages dropped from the page cache; the bytes in *@data (kst_alloc()ed,
 * if @data). 0 or -errno.
 */
static int wt_write_file(const char *path, size_t size, __u64 gen,
			 char **data)
{
	char *buf = kst_alloc(size);
	int fd, ret = 0;

	if (!buf)
		return -ENOMEM;
	wt_pattern(buf, size, gen);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
	} else {
		if (pwrite(fd, buf, size, 0) != (ssize_t)size || fsync(fd))
			ret = errno ? -errno : -EIO;
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
	}
	if (ret || !data)
		kst_free(buf, size);
	else
		*data = buf;
	return ret;
}

/*
 * Whether @blk is block @i of a pool of @data (@size bytes) from @off: -1,
 * else the offset of its first wrong byte (past the file's end: not zero).
 */
static long wt_check(const char *blk, const char *data, __u64 size,
		     __u64 off, __u32 i)
{
	__u64 start = off + (__u64)i * BS;
	__u64 n = start >= size ? 0 : size - start < BS ? size - start : BS;
	__u64 j;

	for (j = 0; j < n; j++)
		if (blk[j] != data[start + j])
			return (long)j;
	for (; j < BS; j++)
		if (blk[j])
			return (long)j;
	return -1;
}

/* ---- the file system under test ----------------------------------------- */

enum wt_fs { WT_TMPFS, WT_EXT4, WT_EXT4_DM };

struct wt_mnt {
	char dir[64];		/* a new directory under /tmp */
	char mnt[96];		/* dir/mnt: the file system's root */
	char img[96];		/* dir/img: ext4's image */
	char loop[64];		/* WT_EXT4_DM: the loop device */
	char dm[48];		/* WT_EXT4_DM: the dm device's name */
	bool mounted;
};

/* Run a shell command and read its first line of output; 0 or -1. */
static int wt_sh_line(char *out, size_t len, const char *cmd)
{
	FILE *p = popen(cmd, "r");
	int ret = -1;

	if (!p)
		return -1;
	if (fgets(out, (int)len, p)) {
		out[strcspn(out, "\n")] = '\0';
		ret = 0;
	}
	if (pclose(p) != 0)
		ret = -1;
	return ret;
}

/* The sectors of ext4's image: 16 MiB (mkfs and mount once a case). */
#define WT_IMG_SECTORS	(16 * KST_MIB / 512)

/*
 * A fresh file system of kind @fs at @m->mnt: 0; -ENODEV when this
 * machine cannot make one (the case is skipped); -errno.
 */
static int wt_mount(struct wt_mnt *m, enum wt_fs fs)
{
	char table[160], dev[96];

	memset(m, 0, sizeof(*m));
	strcpy(m->dir, "/tmp/kst-wt.XXXXXX");
	if (!mkdtemp(m->dir))
		return -errno;
	snprintf(m->mnt, sizeof(m->mnt), "%s/mnt", m->dir);
	snprintf(m->img, sizeof(m->img), "%s/img", m->dir);
	if (mkdir(m->mnt, 0755))
		return -errno;
	if (fs == WT_TMPFS) {
		if (mount("kst-wt", m->mnt, "tmpfs", 0, "size=64m"))
			return -errno;
		m->mounted = true;
		return 0;
	}
	if (nvt_sh("command -v mkfs.ext4 >/dev/null && command -v losetup >/dev/null"))
		return -ENODEV;
	nvt_sh("modprobe -a loop ext4 >/dev/null 2>&1");
	if (nvt_sh("truncate -s %llu %s", WT_IMG_SECTORS * 512, m->img))
		return -EIO;
	if (fs == WT_EXT4) {
		snprintf(dev, sizeof(dev), "%s", m->img);
	} else {
		if (!nvt_dm_target(NVT_DM_LINEAR | NVT_DM_ERROR))
			return -ENODEV;
		snprintf(table, sizeof(table), "losetup -f --show %s", m->img);
		if (wt_sh_line(m->loop, sizeof(m->loop), table))
			return -ENODEV;
		snprintf(m->dm, sizeof(m->dm), "kst-wt-%d", (int)getpid());
		snprintf(table, sizeof(table), "0 %llu linear %s 0",
			 WT_IMG_SECTORS, m->loop);
		if (nvt_dm_create(m->dm, table))
			return -ENODEV;
		snprintf(dev, sizeof(dev), "/dev/mapper/%s", m->dm);
	}
	if (nvt_sh("mkfs.ext4 -q -F -b 4096 %s >/dev/null 2>&1", dev) ||
	    nvt_sh("mount -o noatime%s %s %s", fs == WT_EXT4 ? ",loop" : "",
		   dev, m->mnt))
		return -ENODEV;
	m->mounted = true;
	return 0;
}

/* Unmount @m->mnt, waiting up to @secs for it to be let go; 0 or -errno. */
static int wt_umount(struct wt_mnt *m, double secs)
{
	double end = kst_mono() + secs;

	if (!m->mounted)
		return 0;
	while (umount2(m->mnt, 0)) {
		if (errno != EBUSY || kst_mono() > end)
			return -errno;
		usleep(20000);
	}
	m->mounted = false;
	return 0;
}

/* Everything wt_mount() made, gone (a file system still busy: detached). */
static void wt_unmount(struct wt_mnt *m)
{
	if (m->mounted && wt_umount(m, 5))
		umount2(m->mnt, MNT_DETACH);
	m->mounted = false;
	if (m->dm[0])
		nvt_dm_remove(m->dm);
	if (m->loop[0])
		nvt_sh("losetup -d %s", m->loop);
	if (m->dir[0]) {
		unlink(m->img);
		rmdir(m->mnt);
		rmdir(m->dir);
	}
}

/* ---- pools -------------------------------------------------------------- */

static void wt_create_init(struct kvtier_pool_create *c, const char *name,
			   int fd, __u64 off, __u32 cap, __u32 dram)
{
	kst_create_init(c, name, BS, cap, dram);
	c->flags = KVTIER_POOL_WEIGHTS;
	c->file_fd = fd;
	c->file_off = off;
	c->file_key = FKEY;
}

/* A weight pool of the file @path from @off; its fd or -errno. */
static int wt_pool(int ctl, const char *name, const char *path, __u64 off,
		   __u32 cap, __u32 dram)
{
	struct kvtier_pool_create c;
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	wt_create_init(&c, name, fd, off, cap, dram);
	ret = kst_create(ctl, &c);
	close(fd);
	return ret;
}

/*
 * GET blocks @first .. @first + @n - 1 (n <= WBATCH) into @buf: 0 and each
 * entry's status in @status (if not NULL), or the batch's -errno.
 */
static int wt_get(int pfd, __u32 first, __u32 n, char *buf, int *status)
{
	struct kvtier_block b[WBATCH];
	__u32 i, done;
	int ret;

	for (i = 0; i < n; i++)
		kst_blk(&b[i], FKEY, first + i, buf + (size_t)i * BS);
	ret = kst_batch(pfd, KVTIER_IOC_GET, b, n, 0, &done);
	for (i = 0; !ret && status && i < n; i++)
		status[i] = b[i].status;
	return ret;
}

/* The tier LOOKUP reports for block @i (its address checked), or -errno. */
static int wt_tier(int pfd, __u32 i)
{
	struct kvtier_block b;
	int ret = kst_lookup1(pfd, FKEY, i, &b);

	if (ret)
		return ret;
	return b.addr == i ? (int)b.tier : -EPROTO;
}

/* ---- what every case has ---------------------------------------------- */

/*
 * A control fd with every feature, a pool name, a fresh file system with
 * the file "w" of generation 1 on it, and a buffer; the pool and an fd of
 * the file are the case's (closed by wt_env_end()).
 */
struct wt_env {
	int ctl, pfd, fd;
	char name[KVTIER_NAME_MAX];
	char path[128];
	char *data;		/* the file's bytes */
	__u64 size;
	char *buf;
	size_t buf_len;
	struct wt_mnt m;
};

static void wt_env_begin(struct __test_metadata *_metadata, struct wt_env *e,
			 const char *tag, enum wt_fs fs, __u64 size,
			 size_t buf_len)
{
	int ret;

	kst_setup(_metadata);
	if (!kst_supported(KVTIER_F_WEIGHTS))
		KST_SETUP_SKIP("kvtier without KVTIER_F_WEIGHTS");
	ret = wt_mount(&e->m, fs);
	if (ret == -ENODEV) {
		wt_unmount(&e->m);
		KST_SETUP_SKIP("no ext4 on a loop or dm device here");
	}
	e->pfd = -1;
	e->fd = -1;
	e->ctl = kst_ctl_open();
	e->size = size;
	e->buf_len = buf_len;
	ASSERT_EQ(0, ret);
	ASSERT_LE(0, e->ctl);
	kst_name(e->name, tag);
	snprintf(e->path, sizeof(e->path), "%s/w", e->m.mnt);
	ASSERT_EQ(0, wt_write_file(e->path, size, 1, &e->data));
	e->buf = kst_alloc(buf_len);
	ASSERT_NE(NULL, e->buf);
}

static void wt_env_end(struct wt_env *e)
{
	if (e->pfd >= 0)
		close(e->pfd);
	if (e->fd >= 0)
		close(e->fd);
	kst_pool_destroy(e->ctl, e->name);
	wt_unmount(&e->m);
	kst_free(e->data, e->size);
	kst_free(e->buf, e->buf_len);
	close(e->ctl);
}

/* ---- create: one bad field each, nothing created ------------------------ */

FIXTURE(wcreate) {
	struct wt_env e;
};

FIXTURE_SETUP(wcreate)
{
	wt_env_begin(_metadata, &self->e, "wcreate", WT_TMPFS, RSIZE, BS);
	self->e.fd = open(self->e.path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->e.fd);
}

FIXTURE_TEARDOWN(wcreate)
{
	wt_env_end(&self->e);
}

/* Create with @c: @err, and no pool of that name after. */
static void wt_reject(struct __test_metadata *_metadata,
		      FIXTURE_DATA(wcreate) *self,
		      struct kvtier_pool_create *c, int err)
{
	int ret = kst_create(self->e.ctl, c);

	if (ret >= 0)
		close(ret);
	ASSERT_EQ(err, ret);
	ASSERT_EQ(-ENOENT, kst_pool_open(self->e.ctl, self->e.name, 0));
}

/* The valid request works: so each rejection below is about its field. */
TEST_F(wcreate, valid)
{
	struct kvtier_pool_create c;
	struct kvtier_pool_stat st;
	int pfd;

	wt_create_init(&c, self->e.name, self->e.fd, 0, RCAP, 0);
	pfd = kst_create(self->e.ctl, &c);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, kst_stat(pfd, &st));
	EXPECT_EQ(RCAP, st.capacity);
	EXPECT_EQ(BS, st.block_size);
	EXPECT_EQ(RCAP, st.dram_blocks);
	EXPECT_EQ(0ULL, st.resident[KVTIER_TIER_DRAM]);
	close(pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->e.ctl, self->e.name));
	/* From a page in: the same 3 blocks, the last one a page shorter. */
	wt_create_init(&c, self->e.name, self->e.fd, KST_PAGE, RCAP, 1);
	pfd = kst_create(self->e.ctl, &c);
	ASSERT_LE(0, pfd);
	close(pfd);
}

#define WT_REJECT(test, err, ...)					\
TEST_F(wcreate, test)							\
{									\
	struct kvtier_pool_create c;					\
	wt_create_init(&c, self->e.name, self->e.fd, 0, RCAP, 0);		\
	__VA_ARGS__;							\
	wt_reject(_metadata, self, &c, err);				\
}

/* Create with the file fd @fd, which this closes: @err, nothing made. */
static void wt_reject_fd(struct __test_metadata *_metadata,
			 FIXTURE_DATA(wcreate) *self, int fd, int err)
{
	struct kvtier_pool_create c;

	ASSERT_LE(0, fd);
	wt_create_init(&c, self->e.name, fd, 0, RCAP, 0);
	wt_reject(_metadata, self, &c, err);
	close(fd);
}

/* The file's fd: not one, not open for reading, not a regular file. */
WT_REJECT(fd_minus1, -EBADF, c.file_fd = -1)
WT_REJECT(fd_closed, -EBADF, c.file_fd = dup(self->e.fd); close(c.file_fd))

TEST_F(wcreate, fd_wronly)
{
	wt_reject_fd(_metadata, self, open(self->e.path, O_WRONLY | O_CLOEXEC),
		     -EBADF);
}

TEST_F(wcreate, fd_opath)
{
	wt_reject_fd(_metadata, self, open(self->e.path, O_PATH | O_CLOEXEC),
		     -EBADF);
}

TEST_F(wcreate, fd_directory)
{
	wt_reject_fd(_metadata, self,
		     open(self->e.m.mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC),
		     -EINVAL);
}

TEST_F(wcreate, fd_chardev)
{
	wt_reject_fd(_metadata, self, open("/dev/zero", O_RDONLY | O_CLOEXEC),
		     -EINVAL);
}

/* file_off: a page multiple, below the size. */
WT_REJECT(off_512, -EINVAL, c.file_off = 512)
WT_REJECT(off_page_plus_8, -EINVAL, c.file_off = KST_PAGE + 8)
WT_REJECT(off_at_size, -EINVAL, c.file_off = RSIZE; c.capacity = 1; c.dram_blocks = 1)
WT_REJECT(off_past_size, -EINVAL, c.file_off = RSIZE + KST_PAGE; c.capacity = 1;
	  c.dram_blocks = 1)
WT_REJECT(off_huge, -EINVAL, c.file_off = ~(KST_PAGE - 1))

/* capacity: exactly the blocks from file_off to the end. */
WT_REJECT(capacity_plus_one, -EINVAL, c.capacity = RCAP + 1)
WT_REJECT(capacity_minus_one, -EINVAL, c.capacity = RCAP - 1; c.dram_blocks = 0)
/* From 3 pages in, 2 blocks are left: 3 is one too many. */
WT_REJECT(capacity_of_off0_with_off, -EINVAL, c.file_off = 3 * KST_PAGE)

/* file_flags and file_reserved must be 0. */
WT_REJECT(file_flags_1, -EINVAL, c.file_flags = 1)
WT_REJECT(file_flags_bit31, -EINVAL, c.file_flags = 1U << 31)
WT_REJECT(file_reserved0, -EINVAL, c.file_reserved[0] = 1)
WT_REJECT(file_reserved1, -EINVAL, c.file_reserved[1] = 1ULL << 63)

/* File fields without KVTIER_POOL_WEIGHTS. */
WT_REJECT(no_weights_fd, -EINVAL, c.flags = 0; c.file_key = 0)
WT_REJECT(no_weights_off, -EINVAL, c.flags = 0; c.file_fd = 0; c.file_key = 0;
	  c.file_off = KST_PAGE)
WT_REJECT(no_weights_key, -EINVAL, c.flags = 0; c.file_fd = 0)
WT_REJECT(no_weights_flags, -EINVAL, c.flags = 0; c.file_fd = 0; c.file_key = 0;
	  c.file_flags = 1)

/* What a weight pool does not take. */
WT_REJECT(weights_parts, -EINVAL, c.parts = 2)
WT_REJECT(weights_compress, -EINVAL, c.compress = KVTIER_COMPRESS_LZ4)
WT_REJECT(weights_fault_noload, -EINVAL, c.flags |= KVTIER_POOL_FAULT_NOLOAD)

/* A control fd that did not negotiate KVTIER_F_WEIGHTS. */
TEST_F(wcreate, not_negotiated)
{
	struct kvtier_pool_create c;
	int ctl = kst_ctl_open_with(KST_F_KNOWN & ~KVTIER_F_WEIGHTS), ret;

	ASSERT_LE(0, ctl);
	wt_create_init(&c, self->e.name, self->e.fd, 0, RCAP, 0);
	ret = kst_create(ctl, &c);
	if (ret >= 0)
		close(ret);
	ASSERT_EQ(-EOPNOTSUPP, ret);
	ASSERT_EQ(-ENOENT, kst_pool_open(ctl, self->e.name, 0));
	close(ctl);
}

/* The first version's struct has no file fields: fd 0 is not meant. */
TEST_F(wcreate, struct_without_file_fields)
{
	struct kvtier_pool_create c;
	int ret;

	wt_create_init(&c, self->e.name, self->e.fd, 0, RCAP, 0);
	ret = kst_ioctl(self->e.ctl, kst_resize(KVTIER_IOC_POOL_CREATE,
						KVTIER_POOL_CREATE_SIZE_VER0),
			&c);
	if (ret >= 0)
		close(c.fd);
	ASSERT_EQ(-EINVAL, ret);
	ASSERT_EQ(-ENOENT, kst_pool_open(self->e.ctl, self->e.name, 0));
}

/*
 * A file someone has open for writing: the pool denies writers for its
 * life, so it cannot be made while one is there (kmod/tier_file.c).
 */
TEST_F(wcreate, file_open_for_writing)
{
	struct kvtier_pool_create c;
	int w = open(self->e.path, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, w);
	wt_create_init(&c, self->e.name, self->e.fd, 0, RCAP, 0);
	wt_reject(_metadata, self, &c, -ETXTBSY);
	close(w);
}

/* ---- writes refused ------------------------------------------------------ */

FIXTURE(wro) {
	struct wt_env e;
};

FIXTURE_SETUP(wro)
{
	wt_env_begin(_metadata, &self->e, "wro", WT_TMPFS, RSIZE, BS);
	self->e.pfd = wt_pool(self->e.ctl, self->e.name, self->e.path, 0,
			      RCAP, 0);
	ASSERT_LE(0, self->e.pfd);
	/* Block 0 in DRAM, 1 and 2 in the file. */
	ASSERT_EQ(0, kst_get1(self->e.pfd, FKEY, 0, self->e.buf, NULL));
	ASSERT_EQ(-1, wt_check(self->e.buf, self->e.data, RSIZE, 0, 0));
}

FIXTURE_TEARDOWN(wro)
{
	wt_env_end(&self->e);
}

/* The pool as the setup left it: every block the file's, nothing stored. */
static void wro_unchanged(struct __test_metadata *_metadata,
			  FIXTURE_DATA(wro) *self)
{
	struct kvtier_pool_stat st;
	__u32 i;

	ASSERT_EQ(0, kst_stat(self->e.pfd, &st));
	EXPECT_EQ(0ULL, st.puts);
	EXPECT_EQ(0ULL, st.drops);
	EXPECT_EQ(0ULL, st.bytes_in);
	ASSERT_EQ(-ENOENT, kst_lookup1(self->e.pfd, FKEY, RCAP, NULL));
	for (i = 0; i < RCAP; i++) {
		ASSERT_EQ(0, kst_get1(self->e.pfd, FKEY, i, self->e.buf, NULL));
		ASSERT_EQ(-1, wt_check(self->e.buf, self->e.data, RSIZE, 0, i));
	}
}

/* @cmd with one entry of key { @k0, @k1 }, buffer @buf, @flags: -EROFS. */
static void wro_refused(struct __test_metadata *_metadata,
			FIXTURE_DATA(wro) *self, unsigned long cmd, __u64 k0,
			__u64 k1, void *buf, __u32 flags)
{
	struct kvtier_block b;

	kst_blk(&b, k0, k1, buf);
	ASSERT_EQ(-EROFS, kst_batch(self->e.pfd, cmd, &b, 1, flags, NULL));
	wro_unchanged(_metadata, self);
}

TEST_F(wro, put_new_key)
{
	kst_fill(self->e.buf, BS, FKEY, RCAP, 1);
	wro_refused(_metadata, self, KVTIER_IOC_PUT, FKEY, RCAP, self->e.buf, 0);
}

TEST_F(wro, put_other_key)
{
	kst_fill(self->e.buf, BS, 1, 2, 1);
	wro_refused(_metadata, self, KVTIER_IOC_PUT, 1, 2, self->e.buf, 0);
}

TEST_F(wro, put_replace)
{
	kst_fill(self->e.buf, BS, FKEY, 1, 1);
	wro_refused(_metadata, self, KVTIER_IOC_PUT, FKEY, 1, self->e.buf,
		    KVTIER_PUT_REPLACE);
}

TEST_F(wro, drop_resident)
{
	wro_refused(_metadata, self, KVTIER_IOC_DROP, FKEY, 0, NULL, 0);
}

TEST_F(wro, drop_in_file)
{
	wro_refused(_metadata, self, KVTIER_IOC_DROP, FKEY, 2, NULL, 0);
}

TEST_F(wro, reserve)
{
	if (!kst_supported(KVTIER_F_RESERVE))
		SKIP(return, "kvtier without KVTIER_F_RESERVE");
	wro_refused(_metadata, self, KVTIER_IOC_RESERVE, FKEY, RCAP, NULL, 0);
}

TEST_F(wro, reserve_replace)
{
	if (!kst_supported(KVTIER_F_RESERVE))
		SKIP(return, "kvtier without KVTIER_F_RESERVE");
	wro_refused(_metadata, self, KVTIER_IOC_RESERVE, FKEY, 1, NULL,
		    KVTIER_PUT_REPLACE);
}

/* COMMIT and ABORT of what no RESERVE gave: -EROFS before -ENOENT. */
TEST_F(wro, commit)
{
	if (!kst_supported(KVTIER_F_RESERVE))
		SKIP(return, "kvtier without KVTIER_F_RESERVE");
	wro_refused(_metadata, self, KVTIER_IOC_COMMIT, FKEY, 1, NULL, 0);
}

TEST_F(wro, abort)
{
	if (!kst_supported(KVTIER_F_RESERVE))
		SKIP(return, "kvtier without KVTIER_F_RESERVE");
	wro_refused(_metadata, self, KVTIER_IOC_ABORT, FKEY, 1, NULL, 0);
}

/* ADOPT into an emulated device tier the weight pool has. */
TEST_F(wro, adopt)
{
	struct kvtier_hbm_attach a;
	struct kvtier_adopt e;
	struct kvtier_batch b;

	if (!kst_supported(KVTIER_F_HBM))
		SKIP(return, "kvtier without KVTIER_F_HBM");
	memset(&a, 0, sizeof(a));
	a.backend = KVTIER_HBM_EMUL;
	a.slots = 2;
	ASSERT_EQ(0, kst_ioctl(self->e.pfd, KVTIER_IOC_HBM_ATTACH, &a));
	memset(&e, 0, sizeof(e));
	e.key[0] = FKEY;
	e.key[1] = RCAP;
	e.slot = 0;
	memset(&b, 0, sizeof(b));
	b.blocks = (__u64)(uintptr_t)&e;
	b.count = 1;
	ASSERT_EQ(-EROFS, kst_ioctl(self->e.pfd, KVTIER_IOC_ADOPT, &b));
	wro_unchanged(_metadata, self);
}

/*
 * A writable shared mapping of the blocks: -EACCES, as on any pool (the
 * blocks' view is read-only everywhere); of the reservation window, where
 * a weight pool has nothing to reserve: -EROFS.
 */
TEST_F(wro, mmap_shared_writable)
{
	void *p;

	p = mmap(NULL, RCAP * BS, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->e.pfd, 0);
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EACCES, errno);
	if (kst_supported(KVTIER_F_RESERVE)) {
		p = mmap(NULL, BS, PROT_READ | PROT_WRITE, MAP_SHARED,
			 self->e.pfd, KVTIER_RESERVE_WINDOW(RCAP, 0, BS));
		ASSERT_EQ(MAP_FAILED, p);
		ASSERT_EQ(EROFS, errno);
	}
	wro_unchanged(_metadata, self);
}

/* A read-only mapping cannot be made writable. */
TEST_F(wro, mprotect_write)
{
	char *p = mmap(NULL, RCAP * BS, PROT_READ, MAP_SHARED, self->e.pfd, 0);

	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(-1, mprotect(p, BS, PROT_READ | PROT_WRITE));
	ASSERT_EQ(EACCES, errno);
	ASSERT_EQ(0, kst_probe_read(p, self->e.buf, BS));
	ASSERT_EQ(-1, wt_check(self->e.buf, self->e.data, RSIZE, 0, 0));
	munmap(p, RCAP * BS);
}

/* ---- the bytes, on tmpfs and ext4, from offset 0 and further in ----------- */

FIXTURE(wbytes) {
	struct wt_env e;
	__u32 cap;
};

FIXTURE_VARIANT(wbytes) {
	enum wt_fs fs;
	__u64 off;
};

FIXTURE_VARIANT_ADD(wbytes, tmpfs_off0) { .fs = WT_TMPFS, .off = 0 };
FIXTURE_VARIANT_ADD(wbytes, tmpfs_off3p) { .fs = WT_TMPFS, .off = 3 * KST_PAGE };
FIXTURE_VARIANT_ADD(wbytes, ext4_off0) { .fs = WT_EXT4, .off = 0 };
FIXTURE_VARIANT_ADD(wbytes, ext4_off257p) { .fs = WT_EXT4, .off = 257 * KST_PAGE };

FIXTURE_SETUP(wbytes)
{
	struct statfs sf;

	wt_env_begin(_metadata, &self->e, "wbytes", variant->fs, WSIZE,
		     WBATCH * BS);
	ASSERT_EQ(0, statfs(self->e.m.mnt, &sf));
	ASSERT_EQ(variant->fs == WT_TMPFS ? TMPFS_MAGIC : EXT4_SUPER_MAGIC,
		  (long)sf.f_type);
	self->cap = wt_blocks(WSIZE, variant->off);
	self->e.pfd = wt_pool(self->e.ctl, self->e.name, self->e.path,
			      variant->off, self->cap, WDRAM);
	ASSERT_LE(0, self->e.pfd);
}

FIXTURE_TEARDOWN(wbytes)
{
	wt_env_end(&self->e);
}

/*
 * GET blocks @first .. @first + @n - 1 and check them against generation
 * 1 of the file: every entry's status 0 and its bytes exact.
 */
static void wb_get_exact(struct __test_metadata *_metadata,
			 FIXTURE_DATA(wbytes) *self,
			 const FIXTURE_VARIANT(wbytes) *variant, __u32 first,
			 __u32 n)
{
	int status[WBATCH];
	__u32 i;

	memset(self->e.buf, 0xa5, (size_t)n * BS);
	ASSERT_EQ(0, wt_get(self->e.pfd, first, n, self->e.buf, status));
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, status[i]) {
			TH_LOG("block %u", first + i);
		}
		ASSERT_EQ(-1, wt_check(self->e.buf + (size_t)i * BS, self->e.data,
				       WSIZE, variant->off, first + i)) {
			TH_LOG("block %u", first + i);
		}
	}
}

/* Every block, in batches of WBATCH, exact. */
static void wb_get_all(struct __test_metadata *_metadata,
		       FIXTURE_DATA(wbytes) *self,
		       const FIXTURE_VARIANT(wbytes) *variant)
{
	__u32 i, n;

	for (i = 0; i < self->cap; i += n) {
		n = self->cap - i < WBATCH ? self->cap - i : WBATCH;
		wb_get_exact(_metadata, self, variant, i, n);
	}
}

/* Every block is the file's; the last one's bytes past the end are 0. */
TEST_F(wbytes, get_every_block)
{
	__u64 tail = WSIZE - variant->off - (__u64)(self->cap - 1) * BS;
	struct kvtier_pool_stat st;
	__u32 i;

	ASSERT_LT(0ULL, tail);
	ASSERT_GT(BS, tail);
	wb_get_all(_metadata, self, variant);
	/* The short last block, once more on its own: zero past the end. */
	memset(self->e.buf, 0xa5, BS);
	ASSERT_EQ(0, kst_get1(self->e.pfd, FKEY, self->cap - 1, self->e.buf, NULL));
	for (i = tail; i < BS; i++)
		ASSERT_EQ(0, self->e.buf[i]);
	ASSERT_EQ(0, memcmp(self->e.buf, self->e.data + WSIZE - tail, tail));
	ASSERT_EQ(0, kst_stat(self->e.pfd, &st));
	EXPECT_EQ(self->cap + 1ULL, st.gets);
	EXPECT_EQ(0ULL, st.bad_reads);
	EXPECT_GE(WDRAM, st.resident[KVTIER_TIER_DRAM]);
}

/* LOOKUP: in the file before the first GET (NVME), in DRAM after. */
TEST_F(wbytes, lookup_tiers)
{
	__u32 last = self->cap - 1;

	ASSERT_EQ(KVTIER_TIER_NVME, wt_tier(self->e.pfd, 0));
	ASSERT_EQ(KVTIER_TIER_NVME, wt_tier(self->e.pfd, last));
	wb_get_exact(_metadata, self, variant, 0, 1);
	wb_get_exact(_metadata, self, variant, last, 1);
	ASSERT_EQ(KVTIER_TIER_DRAM, wt_tier(self->e.pfd, 0));
	ASSERT_EQ(KVTIER_TIER_DRAM, wt_tier(self->e.pfd, last));
	ASSERT_EQ(KVTIER_TIER_NVME, wt_tier(self->e.pfd, 1));
	/* Keys no block has: past the last, another file_key. */
	ASSERT_EQ(-ENOENT, kst_lookup1(self->e.pfd, FKEY, self->cap, NULL));
	ASSERT_EQ(-ENOENT, kst_lookup1(self->e.pfd, FKEY + 1, 0, NULL));
	ASSERT_EQ(-ENOENT, kst_get1(self->e.pfd, FKEY, self->cap, self->e.buf,
				    NULL));
}

/* DRAM holds WDRAM of the blocks: two passes evict and reload, exact. */
TEST_F(wbytes, reread_after_eviction)
{
	struct kvtier_pool_stat st;

	ASSERT_LT(WDRAM, self->cap);
	wb_get_all(_metadata, self, variant);
	ASSERT_EQ(KVTIER_TIER_NVME, wt_tier(self->e.pfd, 0));
	wb_get_all(_metadata, self, variant);
	ASSERT_EQ(0, kst_stat(self->e.pfd, &st));
	EXPECT_LE(2ULL * (self->cap - WDRAM), st.evictions);
	EXPECT_GE(WDRAM, st.resident[KVTIER_TIER_DRAM]);
	EXPECT_EQ(0ULL, st.bad_reads);
}

/* PREFETCH by address loads the blocks: then LOOKUP says DRAM, exact. */
TEST_F(wbytes, prefetch_addr)
{
	struct kvtier_hint h[WBATCH];
	struct kvtier_prefetch pf;
	struct kvtier_completion c;
	__u32 i, first = self->cap - WBATCH;

	if (!kst_supported(KVTIER_F_PREFETCH))
		SKIP(return, "kvtier without KVTIER_F_PREFETCH");
	memset(h, 0, sizeof(h));
	for (i = 0; i < WBATCH; i++)
		h[i].addr = first + i;
	pf_init(&pf, h, WBATCH, 1, 0, KVTIER_PREFETCH_ADDR);
	ASSERT_EQ(0, kst_ioctl(self->e.pfd, KVTIER_IOC_PREFETCH, &pf));
	for (i = 0; i < WBATCH; i++) {
		ASSERT_EQ(0, h[i].status);
		ASSERT_EQ(FKEY, h[i].key[0]);
		ASSERT_EQ(first + i, h[i].key[1]);
	}
	ASSERT_EQ(0, completion(self->e.pfd, &c, 60000));
	ASSERT_EQ(1ULL, c.group);
	ASSERT_EQ(0, c.status);
	ASSERT_EQ(WBATCH, c.ready);
	for (i = 0; i < WBATCH; i++)
		ASSERT_EQ(KVTIER_TIER_DRAM, wt_tier(self->e.pfd, first + i));
	ASSERT_EQ(KVTIER_TIER_NVME, wt_tier(self->e.pfd, 0));
	wb_get_exact(_metadata, self, variant, first, WBATCH);
}

/*
 * PREFETCH into an emulated device tier: blocks go from the file to DRAM
 * to a slot; LOOKUP says HBM, the tier counted its copies, and a GET
 * still gives the file's bytes.
 */
TEST_F(wbytes, prefetch_hbm)
{
	struct kvtier_hint h[WBATCH];
	struct kvtier_hbm_attach at;
	struct kvtier_hbm_stat st;
	struct kvtier_prefetch pf;
	struct kvtier_completion c;
	struct kvtier_block b;
	__u32 i;

	if (!kst_supported(KVTIER_F_HBM) || !kst_supported(KVTIER_F_PREFETCH))
		SKIP(return, "kvtier without KVTIER_F_HBM");
	memset(&at, 0, sizeof(at));
	at.backend = KVTIER_HBM_EMUL;
	at.slots = WBATCH;
	ASSERT_EQ(0, kst_ioctl(self->e.pfd, KVTIER_IOC_HBM_ATTACH, &at));
	memset(h, 0, sizeof(h));
	for (i = 0; i < WBATCH; i++)
		h[i].addr = 2 + i;
	pf_init(&pf, h, WBATCH, 1, now_ns() + 60 * SEC, KVTIER_PREFETCH_ADDR);
	pf.tier = KVTIER_TIER_HBM;
	ASSERT_EQ(0, kst_ioctl(self->e.pfd, KVTIER_IOC_PREFETCH, &pf));
	ASSERT_EQ(0, completion(self->e.pfd, &c, 60000));
	ASSERT_EQ(0, c.status);
	ASSERT_EQ(WBATCH, c.ready);
	for (i = 0; i < WBATCH; i++) {
		ASSERT_EQ(0, kst_lookup1(self->e.pfd, FKEY, 2 + i, &b));
		ASSERT_EQ((__u32)KVTIER_TIER_HBM, b.tier);
		ASSERT_GT(WBATCH, b.slot);
	}
	memset(&st, 0, sizeof(st));
	ASSERT_EQ(0, kst_ioctl(self->e.pfd, KVTIER_IOC_HBM_STAT, &st));
	ASSERT_EQ((__u64)WBATCH, st.to_dev);
	ASSERT_EQ(0ULL, st.copy_errors);
	wb_get_exact(_metadata, self, variant, 2, WBATCH);
}

/*
 * The read-only mapping shows the file's bytes: of resident blocks, and of
 * a block a fault loads.
 */
TEST_F(wbytes, mmap_read)
{
	size_t len = (size_t)self->cap * BS;
	__u32 last = self->cap - 1;
	char *p;

	wb_get_exact(_metadata, self, variant, 0, 1);
	wb_get_exact(_metadata, self, variant, last, 1);
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, self->e.pfd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, kst_probe_read(p, self->e.buf, BS));
	ASSERT_EQ(-1, wt_check(self->e.buf, self->e.data, WSIZE, variant->off, 0));
	ASSERT_EQ(0, kst_probe_read(p + (size_t)last * BS, self->e.buf, BS));
	ASSERT_EQ(-1, wt_check(self->e.buf, self->e.data, WSIZE, variant->off,
			       last));
	ASSERT_EQ(KVTIER_TIER_NVME, wt_tier(self->e.pfd, 5));
	ASSERT_EQ(0, kst_probe_read(p + 5 * BS, self->e.buf, BS));
	ASSERT_EQ(-1, wt_check(self->e.buf, self->e.data, WSIZE, variant->off, 5));
	ASSERT_EQ(KVTIER_TIER_DRAM, wt_tier(self->e.pfd, 5));
	munmap(p, len);
}

/* On ext4 the pool reads by direct I/O: no page of the file is cached. */
TEST_F(wbytes, ext4_no_page_cache)
{
	size_t pages = (WSIZE + KST_PAGE - 1) / KST_PAGE, i, cached = 0;
	unsigned char *vec;
	void *p;
	int fd;

	if (variant->fs != WT_EXT4)
		SKIP(return, "tmpfs has no direct I/O: it is the page cache");
	wb_get_all(_metadata, self, variant);
	fd = open(self->e.path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	p = mmap(NULL, WSIZE, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	vec = calloc(pages, 1);
	ASSERT_NE(NULL, vec);
	ASSERT_EQ(0, mincore(p, WSIZE, vec));
	for (i = 0; i < pages; i++)
		cached += vec[i] & 1;
	EXPECT_EQ(0UL, cached);
	free(vec);
	munmap(p, WSIZE);
	close(fd);
}

/* The pool's sysfs config says how it reads its file: 2 direct, 1 cached. */
TEST_F(wbytes, sysfs_config_file)
{
	long long v[11];
	char path[128];

	snprintf(path, sizeof(path), "/sys/kernel/kvtier/pools/%s/config",
		 self->e.name);
	ASSERT_EQ(11, kst_read_cols(path, v, 11, 1UL << 4));
	ASSERT_EQ(variant->fs == WT_EXT4 ? 2 : 1, v[10]);
}

/* Nobody may write the file while the pool lives; after, they may. */
TEST_F(wbytes, writers_locked_out)
{
	double end;
	int fd;

	ASSERT_EQ(-1, open(self->e.path, O_WRONLY | O_CLOEXEC));
	ASSERT_EQ(ETXTBSY, errno);
	ASSERT_EQ(-1, open(self->e.path, O_RDWR | O_CLOEXEC));
	ASSERT_EQ(ETXTBSY, errno);
	ASSERT_EQ(-1, truncate(self->e.path, KST_PAGE));
	ASSERT_EQ(ETXTBSY, errno);
	wb_get_all(_metadata, self, variant);

	close(self->e.pfd);
	self->e.pfd = -1;
	ASSERT_EQ(0, kst_pool_destroy(self->e.ctl, self->e.name));
	end = kst_mono() + 5;
	while ((fd = open(self->e.path, O_WRONLY | O_CLOEXEC)) < 0 &&
	       errno == ETXTBSY && kst_mono() < end)
		usleep(20000);
	ASSERT_LE(0, fd);
	close(fd);
}

/*
 * The file changed under the pool (its mtime, as a writer the kernel
 * cannot stop leaves it): each block not in DRAM is a miss (-ENOENT), once
 * counted in bad_reads, and leaves the pool; blocks in DRAM keep the old
 * bytes.
 */
TEST_F(wbytes, file_changed)
{
	struct kvtier_pool_stat st;
	struct timespec ts[2];
	int status[WBATCH];
	struct stat sb;
	__u32 i;

	wb_get_exact(_metadata, self, variant, 0, 4);
	ASSERT_EQ(0, stat(self->e.path, &sb));
	ts[0] = sb.st_atim;
	ts[1] = sb.st_mtim;
	ts[1].tv_sec += 1;
	ASSERT_EQ(0, utimensat(AT_FDCWD, self->e.path, ts, 0));

	ASSERT_EQ(0, wt_get(self->e.pfd, 4, WBATCH, self->e.buf, status));
	for (i = 0; i < WBATCH; i++)
		ASSERT_EQ(-ENOENT, status[i]);
	ASSERT_EQ(0, kst_stat(self->e.pfd, &st));
	ASSERT_EQ((__u64)WBATCH, st.bad_reads);
	/* Gone: a miss with no read, and LOOKUP does not find them. */
	ASSERT_EQ(0, wt_get(self->e.pfd, 4, WBATCH, self->e.buf, status));
	for (i = 0; i < WBATCH; i++) {
		ASSERT_EQ(-ENOENT, status[i]);
		ASSERT_EQ(-ENOENT, wt_tier(self->e.pfd, 4 + i));
	}
	ASSERT_EQ(0, kst_stat(self->e.pfd, &st));
	ASSERT_EQ((__u64)WBATCH, st.bad_reads);
	/* The blocks in DRAM: the old bytes. */
	wb_get_exact(_metadata, self, variant, 0, 4);
	/* The mtime put back: the blocks that left do not come back. */
	ts[1].tv_sec -= 1;
	ASSERT_EQ(0, utimensat(AT_FDCWD, self->e.path, ts, 0));
	ASSERT_EQ(-ENOENT, kst_get1(self->e.pfd, FKEY, 4, self->e.buf, NULL));
}

/* The file unlinked while the pool lives: it still serves its bytes. */
TEST_F(wbytes, file_unlinked)
{
	usleep(20000);		/* the unlink's ctime: not the file's */
	ASSERT_EQ(0, unlink(self->e.path));
	wb_get_all(_metadata, self, variant);
	wb_get_all(_metadata, self, variant);
}

/*
 * Another file renamed over the name: the pool serves the old file's
 * bytes; a pool made from the name now has the new file's.
 */
TEST_F(wbytes, file_renamed_over)
{
	char tmp[160], name2[KVTIER_NAME_MAX];
	char *data2 = NULL;
	int pfd2;

	snprintf(tmp, sizeof(tmp), "%s.new", self->e.path);
	usleep(20000);
	ASSERT_EQ(0, wt_write_file(tmp, WSIZE, 2, &data2));
	ASSERT_EQ(0, rename(tmp, self->e.path));
	wb_get_all(_metadata, self, variant);

	kst_name(name2, "wbytes");
	pfd2 = wt_pool(self->e.ctl, name2, self->e.path, variant->off, self->cap,
		       WDRAM);
	ASSERT_LE(0, pfd2);
	kst_pool_destroy(self->e.ctl, name2);
	ASSERT_EQ(0, kst_get1(pfd2, FKEY, 1, self->e.buf, NULL));
	EXPECT_EQ(-1, wt_check(self->e.buf, data2, WSIZE, variant->off, 1));
	ASSERT_EQ(0, kst_get1(self->e.pfd, FKEY, 1, self->e.buf, NULL));
	EXPECT_EQ(-1, wt_check(self->e.buf, self->e.data, WSIZE, variant->off, 1));
	close(pfd2);
	kst_free(data2, WSIZE);
}

/* The pool gone, its file is let go: the file system unmounts. */
TEST_F(wbytes, file_released)
{
	wb_get_exact(_metadata, self, variant, 0, WBATCH);
	close(self->e.pfd);
	self->e.pfd = -1;
	ASSERT_EQ(-EBUSY, wt_umount(&self->e.m, 0));
	ASSERT_EQ(0, kst_pool_destroy(self->e.ctl, self->e.name));
	ASSERT_EQ(0, wt_umount(&self->e.m, 5));
}

/* ---- an I/O error mid-load: ext4 on a dm device switched to "error" ----- */

FIXTURE(wdm) {
	struct wt_env e;
};

FIXTURE_SETUP(wdm)
{
	wt_env_begin(_metadata, &self->e, "wdm", WT_EXT4_DM, DSIZE,
		     WBATCH * BS);
	ASSERT_EQ(DCAP, wt_blocks(DSIZE, 0));
	self->e.pfd = wt_pool(self->e.ctl, self->e.name, self->e.path, 0,
			      DCAP, 0);
	ASSERT_LE(0, self->e.pfd);
}

/* The device's table back to "linear" over the loop device; 0 or not. */
static int wdm_linear(struct wt_mnt *m)
{
	char table[96];

	snprintf(table, sizeof(table), "0 %llu linear %s 0", WT_IMG_SECTORS,
		 m->loop);
	return nvt_dm_reload(m->dm, table);
}

FIXTURE_TEARDOWN(wdm)
{
	if (self->e.m.dm[0])
		wdm_linear(&self->e.m);
	wt_env_end(&self->e);
}

TEST_F(wdm, io_error_mid_load)
{
	struct kvtier_pool_stat st;
	int status[WBATCH];
	char table[96];
	__u32 i;

	ASSERT_EQ(0, wt_get(self->e.pfd, 0, 4, self->e.buf, status));
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, status[i]);
		ASSERT_EQ(-1, wt_check(self->e.buf + (size_t)i * BS, self->e.data,
				       DSIZE, 0, i));
	}
	snprintf(table, sizeof(table), "0 %llu error", WT_IMG_SECTORS);
	ASSERT_EQ(0, nvt_dm_reload(self->e.m.dm, table));

	memset(self->e.buf, 0xa5, WBATCH * BS);
	ASSERT_EQ(0, wt_get(self->e.pfd, 4, WBATCH, self->e.buf, status));
	for (i = 0; i < WBATCH; i++)
		ASSERT_EQ(-ENOENT, status[i]);
	ASSERT_EQ(0, kst_stat(self->e.pfd, &st));
	ASSERT_EQ((__u64)WBATCH, st.bad_reads);
	/* DRAM still serves what it holds. */
	ASSERT_EQ(0, wt_get(self->e.pfd, 0, 4, self->e.buf, status));
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, status[i]);
		ASSERT_EQ(-1, wt_check(self->e.buf + (size_t)i * BS, self->e.data,
				       DSIZE, 0, i));
	}

	/* The device back: the blocks that failed stay gone, the rest load. */
	ASSERT_EQ(0, wdm_linear(&self->e.m));
	ASSERT_EQ(-ENOENT, kst_get1(self->e.pfd, FKEY, 4, self->e.buf, NULL));
	ASSERT_EQ(-ENOENT, wt_tier(self->e.pfd, 4 + WBATCH - 1));
	for (i = 4 + WBATCH; i < DCAP; i++) {
		ASSERT_EQ(0, kst_get1(self->e.pfd, FKEY, i, self->e.buf, NULL));
		ASSERT_EQ(-1, wt_check(self->e.buf, self->e.data, DSIZE, 0, i));
	}
	ASSERT_EQ(0, kst_stat(self->e.pfd, &st));
	ASSERT_EQ((__u64)WBATCH, st.bad_reads);
}

TEST_HARNESS_MAIN
