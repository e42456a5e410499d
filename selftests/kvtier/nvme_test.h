/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the kvtier NVMe tier tests (nvme_attach.c, nvme_tier.c and
 * nvme_faults.c, through nvme_fixture.h) and their helper program
 * (nvme_tool.c), on top of kvtier_test.h.
 *
 *  - the NVMe ioctls (attach, detach, NVMe stat, SYNC) as 0/-errno calls;
 *  - raw access to the device under test with O_DIRECT (the module writes
 *    with bios, so the page cache of the block device is never trusted);
 *  - the on-disk format of Documentation/nvme-format.rst, written out here
 *    from the document (not included from kmod/), so a layout change that
 *    the document does not follow makes these tests fail;
 *  - device-mapper tables (dmsetup) over the device, for fault injection;
 *  - ioctls run in a child with a deadline, so a hang fails one test
 *    instead of the whole run.
 *
 * The device is /dev/nvme0n1, or $KVTIER_NVME_DEV.
 */
#ifndef KVTIER_NVME_TEST_H
#define KVTIER_NVME_TEST_H

#include <stdarg.h>
#include <stdbool.h>
#include <time.h>
#include <linux/fs.h>

#include "kvtier_test.h"

#define NVT_DEV_DEFAULT		"/dev/nvme0n1"

static inline const char *nvt_dev(void)
{
	const char *dev = getenv("KVTIER_NVME_DEV");

	return dev && *dev ? dev : NVT_DEV_DEFAULT;
}

/* ---- on-disk format (Documentation/nvme-format.rst) ------------------- */

#define NVT_SB_MAGIC		0x627372656974766bULL	/* "kvtiersb" */
#define NVT_REGION_MAGIC	0x677272656974766bULL	/* "kvtierrg" */
#define NVT_DISK_PAGE		4096ULL
#define NVT_POOL_TABLE_OFF	4096ULL
#define NVT_POOL_SLOTS		256U
#define NVT_DATA_OFF		(1ULL << 20)

struct nvt_disk_sb {
	__u64 magic;
	__u32 version;
	__u32 flags;
	__u8 uuid[16];
	__u64 dev_bytes;
	__u64 region_bytes;
	__u32 nr_regions;
	__u32 pool_slots;
	__u64 pool_table_off;
	__u64 data_off;
	__u64 generation;
	__u32 page_bytes;
	__u32 crc;
};

struct nvt_disk_pool {
	__u64 id;
	__u8 name[64];
	__u64 block_size;
	__u32 capacity;
	__u32 dram_blocks;
	__u32 mode;
	__u32 uid;
	__u32 gid;
	__u32 flags;
	__u32 parts;		/* version 5; 0 before */
	__u8 reserved[144];
	__u32 crc;
};

struct nvt_disk_rec {
	__u64 pool_id;
	__u64 key[2];
	__u32 page;
	__u32 pages;
	__u32 crc;
	__u32 flags;		/* NVT_REC_DROP, NVT_REC_PARTS */
	__u64 drop_seq;
};

#define NVT_REC_DROP		0x1U	/* a tombstone */
#define NVT_REC_PARTS		0x2U	/* a part table at page - 1 (version 5) */
#define NVT_REC_Z		0x4U	/* a compressed copy (version 6) */

/*
 * Version 5: a copy's part table, the page before its data, for pools
 * made with parts: the block cut in runs of part_pages pages (the last
 * may be shorter) and the crc32c (from 0, no inversion) of each; crc is
 * crc32c(~0, struct and pcrc[nr]) with crc zero, dcrc the whole block's.
 */
#define NVT_PARTS_MAGIC		0x747072656974766bULL	/* "kvtierpt" */

struct nvt_disk_parts {
	__u64 magic;
	__u64 pool_id;
	__u64 key[2];
	__u32 nr;
	__u32 part_pages;
	__u32 dcrc;
	__u32 crc;
	__u32 pcrc[];
};

struct nvt_disk_region {
	__u64 magic;
	__u64 seq;
	__u8 uuid[16];
	__u32 nr;
	__u32 summary_bytes;
	__u32 crc;
	__u32 seg_page;
	__u32 seg_pages;
	__u32 nr_meta;		/* struct nvt_disk_meta after recs[nr] */
	__u64 nonce;
	struct nvt_disk_rec recs[];
};

/* Version 4: a block's record of the runtime's, after the records. */
struct nvt_disk_meta {
	__u32 rec;
	__u32 len;
	__u8 data[64];
};

/* The sizes the format document gives (x86-64: little endian already). */
_Static_assert(sizeof(struct nvt_disk_pool) == 256, "pool table entry");
_Static_assert(sizeof(struct nvt_disk_region) == 64, "region header");
_Static_assert(sizeof(struct nvt_disk_rec) == 48, "region record");
_Static_assert(sizeof(struct nvt_disk_meta) == 72, "block record");
_Static_assert(sizeof(struct nvt_disk_parts) == 48, "part table");

/* ---- the NVMe ioctls --------------------------------------------------- */

static inline int nvt_attach(int ctl, const char *path, __u32 flags,
			     __u32 region_kib)
{
	struct kvtier_nvme_attach a;

	memset(&a, 0, sizeof(a));
	a.path = (__u64)(uintptr_t)path;
	a.flags = flags;
	a.region_kib = region_kib;
	return kst_ioctl(ctl, KVTIER_IOC_NVME_ATTACH, &a);
}

static inline int nvt_detach(int ctl)
{
	struct kvtier_nvme_detach d;

	memset(&d, 0, sizeof(d));
	return kst_ioctl(ctl, KVTIER_IOC_NVME_DETACH, &d);
}

static inline int nvt_nstat(int ctl, struct kvtier_nvme_stat *st)
{
	memset(st, 0, sizeof(*st));
	return kst_ioctl(ctl, KVTIER_IOC_NVME_STAT, st);
}

/* 1 if a device is attached, 0 if not, or -errno. */
static inline int nvt_attached(int ctl)
{
	struct kvtier_nvme_stat st;
	int ret = nvt_nstat(ctl, &st);

	return ret ? ret : (int)st.attached;
}

/* SYNC a pool; blocks written in @written (if not NULL). */
static inline int nvt_sync(int pfd, __u64 *written)
{
	struct kvtier_sync s;
	int ret;

	memset(&s, 0, sizeof(s));
	s.written = 0x5a5a5a5a5a5a5a5aULL;
	ret = kst_ioctl(pfd, KVTIER_IOC_SYNC, &s);
	if (written)
		*written = s.written;
	return ret;
}

/* ---- time and children with deadlines --------------------------------- */

/*
 * Wait for @pid at most @secs seconds; its exit code (or 128 + signal),
 * or -ETIMEDOUT after killing it (SIGKILL) and reaping it.
 */
static inline int nvt_wait_deadline(pid_t pid, double secs)
{
	double end = kst_mono() + secs;
	int status;
	pid_t r;

	for (;;) {
		r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
		if (r < 0)
			return -errno;
		if (kst_mono() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -ETIMEDOUT;
		}
		usleep(20000);
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -ECHILD;
}

/*
 * Result of an ioctl run in a child: the child exits with -ret (0..255);
 * an ioctl result is thus 0 or -errno, or -ETIMEDOUT when the child had
 * to be killed, or -ECHILD when it died otherwise.
 */
static inline int nvt_child_result(int code)
{
	if (code == -ETIMEDOUT)
		return code;
	if (code < 0 || code >= 128)
		return -ECHILD;
	return -code;
}

/* SYNC in a child, killed after @secs. 0, -errno or -ETIMEDOUT. */
static inline int nvt_sync_deadline(int pfd, double secs, __u64 *written)
{
	int pipefd[2], ret;
	__u64 w = 0;
	pid_t pid;

	if (pipe(pipefd))
		return -errno;
	pid = kst_fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		close(pipefd[0]);
		ret = nvt_sync(pfd, &w);
		if (write(pipefd[1], &w, sizeof(w)) != sizeof(w))
			_exit(120);
		_exit(-ret);
	}
	close(pipefd[1]);
	ret = nvt_child_result(nvt_wait_deadline(pid, secs));
	if (read(pipefd[0], &w, sizeof(w)) == sizeof(w) && written)
		*written = w;
	close(pipefd[0]);
	return ret;
}

/* DETACH in a child (which opens its own control fd), killed after @secs. */
static inline int nvt_detach_deadline(double secs)
{
	pid_t pid = kst_fork();
	int ctl;

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		ctl = kst_ctl_open();
		if (ctl < 0)
			_exit(-ctl);
		_exit(-nvt_detach(ctl));
	}
	return nvt_child_result(nvt_wait_deadline(pid, secs));
}

/* ---- raw device access -------------------------------------------------- */

/* Size of a block device (or regular file) in bytes, or -errno. */
static inline long long nvt_dev_bytes(const char *path)
{
	unsigned long long bytes = 0;
	struct stat st;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		ret = -errno;
	else if (S_ISREG(st.st_mode))
		bytes = st.st_size;
	else if (ioctl(fd, BLKGETSIZE64, &bytes))
		ret = -errno;
	close(fd);
	return ret ? ret : (long long)bytes;
}

/*
 * Read or write @len bytes at @off of @path with O_DIRECT (block devices;
 * regular files without it). @off and @len are multiples of 4096; @buf is
 * copied through an aligned bounce buffer. 0 or -errno.
 */
static inline int nvt_raw_io(const char *path, bool write_it, __u64 off,
			     void *buf, size_t len)
{
	struct stat st;
	void *bounce;
	ssize_t n;
	int fd, flags = (write_it ? O_RDWR : O_RDONLY) | O_CLOEXEC;
	int ret = 0;

	if (stat(path, &st))
		return -errno;
	if (S_ISBLK(st.st_mode))
		flags |= O_DIRECT;
	if (off % NVT_DISK_PAGE || len % NVT_DISK_PAGE)
		return -EINVAL;
	bounce = kst_alloc(len);
	if (!bounce)
		return -ENOMEM;
	fd = open(path, flags);
	if (fd < 0) {
		ret = -errno;
		goto out_free;
	}
	if (write_it) {
		memcpy(bounce, buf, len);
		n = pwrite(fd, bounce, len, off);
		if (n == (ssize_t)len && fsync(fd))
			n = -1;
	} else {
		n = pread(fd, bounce, len, off);
		if (n == (ssize_t)len)
			memcpy(buf, bounce, len);
	}
	if (n < 0)
		ret = -errno;
	else if (n != (ssize_t)len)
		ret = -EIO;
	close(fd);
out_free:
	kst_free(bounce, len);
	return ret;
}

static inline int nvt_raw_read(const char *path, __u64 off, void *buf,
			       size_t len)
{
	return nvt_raw_io(path, false, off, buf, len);
}

static inline int nvt_raw_write(const char *path, __u64 off, const void *buf,
				size_t len)
{
	return nvt_raw_io(path, true, off, (void *)buf, len);
}

/* XOR one byte of @path at @off with @mask (read-modify-write of a page). */
static inline int nvt_raw_flip(const char *path, __u64 off, __u8 mask)
{
	__u8 page[NVT_DISK_PAGE];
	__u64 base = off & ~(NVT_DISK_PAGE - 1);
	int ret;

	ret = nvt_raw_read(path, base, page, sizeof(page));
	if (ret)
		return ret;
	page[off - base] ^= mask;
	return nvt_raw_write(path, base, page, sizeof(page));
}

/* crc32c as the kernel's crc32c(): reflected, from @crc, no inversions. */
static inline __u32 nvt_crc32c(__u32 crc, const void *p, size_t len)
{
	static __u32 table[256];
	const __u8 *b = p;
	unsigned int i, j;

	if (!table[1]) {
		for (i = 0; i < 256; i++) {
			__u32 c = i;

			for (j = 0; j < 8; j++)
				c = c >> 1 ^ (0x82f63b78U & -(c & 1));
			table[i] = c;
		}
	}
	while (len--)
		crc = crc >> 8 ^ table[(crc ^ *b++) & 0xff];
	return crc;
}

/* Read the superblock of @path; 0 if it has the kvtier magic, else -errno. */
static inline int nvt_read_sb(const char *path, struct nvt_disk_sb *sb)
{
	__u8 page[NVT_DISK_PAGE];
	int ret = nvt_raw_read(path, 0, page, sizeof(page));

	if (ret)
		return ret;
	memcpy(sb, page, sizeof(*sb));
	return sb->magic == NVT_SB_MAGIC ? 0 : -EMEDIUMTYPE;
}

/* Write @sb over the superblock of @path, with its crc made anew. */
static inline int nvt_write_sb(const char *path, struct nvt_disk_sb *sb)
{
	__u8 page[NVT_DISK_PAGE];
	int ret = nvt_raw_read(path, 0, page, sizeof(page));

	if (ret)
		return ret;
	sb->crc = 0;
	sb->crc = nvt_crc32c(~0U, sb, sizeof(*sb));
	memcpy(page, sb, sizeof(*sb));
	return nvt_raw_write(path, 0, page, sizeof(page));
}

/* Where a block's newest copy lies on a device, from the region summaries. */
struct nvt_loc {
	__u64 data_off;		/* byte offset of its data */
	__u64 region_off;	/* byte offset of its region */
	__u64 seg_off;		/* byte offset of its segment */
	__u32 region;		/* region index */
	__u32 rec;		/* record index in the summary */
	__u32 pages;
	__u32 flags;		/* its record's: NVT_REC_PARTS */
	__u64 seq;
	__u64 pool_id;
	unsigned int copies;	/* records of this key in valid regions */
};

/*
 * The id of pool @name in the pool table of the store on @path: 0 and
 * *@id, -ENOENT when no slot has that name, or -errno.
 */
static inline int nvt_pool_id(const char *path, const char *name, __u64 *id)
{
	size_t len = NVT_POOL_SLOTS * sizeof(struct nvt_disk_pool);
	struct nvt_disk_pool *table = kst_alloc(len);
	unsigned int i;
	int ret;

	if (!table)
		return -ENOMEM;
	ret = nvt_raw_read(path, NVT_POOL_TABLE_OFF, table, len);
	if (!ret) {
		ret = -ENOENT;
		for (i = 0; i < NVT_POOL_SLOTS; i++) {
			if (table[i].id && !strncmp((char *)table[i].name, name,
						    sizeof(table[i].name))) {
				*id = table[i].id;
				ret = 0;
			}
		}
	}
	kst_free(table, len);
	return ret;
}

/*
 * Bytes nvt_seg_read() reads for regions of @region_bytes: the header and
 * one record per page of the region, in whole pages; the most records a
 * summary can hold in that, in *@max_recs.
 */
static inline size_t nvt_summary_len(__u64 region_bytes, __u32 *max_recs)
{
	size_t slen = sizeof(struct nvt_disk_region) +
		      region_bytes / NVT_DISK_PAGE *
		      sizeof(struct nvt_disk_rec);

	slen = (slen + NVT_DISK_PAGE - 1) & ~(NVT_DISK_PAGE - 1);
	*max_recs = (slen - sizeof(struct nvt_disk_region)) /
		    sizeof(struct nvt_disk_rec);
	return slen;
}

/*
 * Read the summary of the segment at @page of region @r of the store on
 * @path (superblock @sb) into @dr (nvt_summary_len() bytes) and check that
 * it is one: the store's uuid, its own page and, after the first (@page
 * > 0), the @seq and @nonce of the region's first, as replay does. 1 if
 * so, 0 if not (the region's segments end before it), or -errno.
 */
static inline int nvt_seg_read(const char *path, const struct nvt_disk_sb *sb,
			       __u32 r, __u64 page, struct nvt_disk_region *dr,
			       __u64 seq, __u64 nonce)
{
	__u64 rpages = sb->region_bytes / NVT_DISK_PAGE;
	__u64 roff = NVT_DATA_OFF + (__u64)r * sb->region_bytes;
	__u32 max_recs;
	size_t len = nvt_summary_len(sb->region_bytes, &max_recs);
	int ret;

	if (len > (rpages - page) * NVT_DISK_PAGE)
		len = (rpages - page) * NVT_DISK_PAGE;
	ret = nvt_raw_read(path, roff + page * NVT_DISK_PAGE, dr, len);
	if (ret)
		return ret;
	return dr->magic == NVT_REGION_MAGIC &&
	       !memcmp(dr->uuid, sb->uuid, sizeof(sb->uuid)) &&
	       dr->nr <= max_recs && dr->seg_page == page &&
	       (!page || (dr->seq == seq && dr->nonce == nonce));
}

/* Pages a segment read by nvt_seg_read() takes (v1 summaries: the region). */
static inline __u64 nvt_seg_len(const struct nvt_disk_sb *sb,
				const struct nvt_disk_region *dr)
{
	return dr->seg_pages ? dr->seg_pages : sb->region_bytes / NVT_DISK_PAGE;
}

/*
 * Find keys (@k0, @k1 + j), j < @n, of pool @pool_id (0: any pool) in the
 * segments of the regions of the store on @path whose summary carries the
 * store's uuid (from its superblock), in one scan; a region's segments
 * follow one another while they carry the first one's seq and nonce. The
 * newest copy of each (highest seq, then the later segment) is returned in
 * @locs[j] (copies 0: not found). 0 when every key was found, -ENOENT when
 * one was not, or -errno.
 */
static inline int nvt_find_blocks_of(const char *path, __u64 pool_id,
				     __u64 k0, __u64 k1, __u32 n,
				     struct nvt_loc *locs)
{
	struct nvt_disk_region *dr;
	struct nvt_disk_sb sb;
	__u32 r, i, max_recs;
	size_t slen;
	int ret;

	memset(locs, 0, n * sizeof(*locs));
	ret = nvt_read_sb(path, &sb);
	if (ret)
		return ret;
	if (!sb.region_bytes || sb.region_bytes % NVT_DISK_PAGE)
		return -EINVAL;
	slen = nvt_summary_len(sb.region_bytes, &max_recs);
	dr = kst_alloc(slen);
	if (!dr)
		return -ENOMEM;
	for (r = 0; r < sb.nr_regions; r++) {
		__u64 roff = NVT_DATA_OFF + (__u64)r * sb.region_bytes;
		__u64 rpages = sb.region_bytes / NVT_DISK_PAGE, seq = 0, nonce = 0;
		__u64 page = 0;

		while (page < rpages) {
			__u64 soff = roff + page * NVT_DISK_PAGE;
			int err = nvt_seg_read(path, &sb, r, page, dr, seq,
					       nonce);

			if (err < 0) {
				ret = err;
				goto out;
			}
			if (!err)
				break;
			seq = dr->seq;
			nonce = dr->nonce;
			for (i = 0; i < dr->nr; i++) {
				const struct nvt_disk_rec *rec = &dr->recs[i];
				struct nvt_loc *loc;

				if (rec->key[0] != k0 || rec->key[1] - k1 >= n ||
				    (pool_id && rec->pool_id != pool_id) ||
				    rec->flags & NVT_REC_DROP)
					continue;
				loc = &locs[rec->key[1] - k1];
				loc->copies++;
				if (loc->seq > dr->seq ||
				    (loc->seq == dr->seq && loc->seg_off > soff))
					continue;
				loc->seq = dr->seq;
				loc->region = r;
				loc->rec = i;
				loc->region_off = roff;
				loc->seg_off = soff;
				loc->data_off = roff +
						(__u64)rec->page * NVT_DISK_PAGE;
				loc->pages = rec->pages;
				loc->flags = rec->flags;
				loc->pool_id = rec->pool_id;
			}
			page += nvt_seg_len(&sb, dr);
		}
	}
	for (i = 0; i < n; i++)
		if (!locs[i].copies)
			ret = -ENOENT;
out:
	kst_free(dr, slen);
	return ret;
}

/* One key: nvt_find_blocks_of() with @n 1. */
static inline int nvt_find_block_of(const char *path, __u64 pool_id,
				    __u64 k0, __u64 k1, struct nvt_loc *loc)
{
	return nvt_find_blocks_of(path, pool_id, k0, k1, 1, loc);
}

static inline int nvt_find_block(const char *path, __u64 k0, __u64 k1,
				 struct nvt_loc *loc)
{
	return nvt_find_block_of(path, 0, k0, k1, loc);
}

/* ---- device-mapper ------------------------------------------------------- */

/* Run a shell command quietly; its exit status, or -1. */
static inline int nvt_sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	int ret;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	ret = system(cmd);
	if (ret == -1 || !WIFEXITED(ret))
		return -1;
	return WEXITSTATUS(ret);
}

/* Write a table (lines separated by '\n') to a file for dmsetup. */
static inline int nvt_dm_table_file(const char *name, const char *table,
				    char *path, size_t len)
{
	FILE *f;

	snprintf(path, len, "/tmp/%s.table", name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "%s\n", table);
	return fclose(f) ? -errno : 0;
}

/* Create device-mapper device @name with @table; 0 when /dev/mapper/@name is there. */
static inline int nvt_dm_create(const char *name, const char *table)
{
	char path[128];
	int ret = nvt_dm_table_file(name, table, path, sizeof(path));

	if (ret)
		return ret;
	/* mknodes also mends a node left by an earlier device of that name. */
	return nvt_sh("dmsetup create %s %s >/dev/null && "
		      "dmsetup mknodes %s && test -b /dev/mapper/%s",
		      name, path, name, name);
}

/*
 * Swap the live table of @name (suspend, load, resume). A file system on
 * it is not frozen for the swap: freezing one on an "error" table fails.
 */
static inline int nvt_dm_reload(const char *name, const char *table)
{
	char path[128];
	int ret = nvt_dm_table_file(name, table, path, sizeof(path));

	if (ret)
		return ret;
	return nvt_sh("dmsetup suspend --nolockfs %s && dmsetup load %s %s && "
		      "dmsetup resume %s", name, name, path, name);
}

static inline int nvt_dm_remove(const char *name)
{
	return nvt_sh("dmsetup remove --retry %s >/dev/null 2>&1", name);
}

/* Whether dm device @name exists (/sys/block/dm-N/dm/name). */
static inline bool nvt_dm_exists(const char *name)
{
	char path[128], buf[160];
	bool found = false;
	int i;

	for (i = 0; i < 256 && !found; i++) {
		snprintf(path, sizeof(path), "/sys/block/dm-%d/dm/name", i);
		if (kst_read_file(path, buf, sizeof(buf)) <= 0)
			continue;
		buf[strcspn(buf, "\n")] = '\0';
		found = !strcmp(buf, name);
	}
	return found;
}

/*
 * The device-mapper targets the tests use, as a mask of NVT_DM_*: probed
 * (their modules loaded) by the first nvt_dm_target() of a test process.
 */
#define NVT_DM_LINEAR	(1U << 0)
#define NVT_DM_ERROR	(1U << 1)
#define NVT_DM_FLAKEY	(1U << 2)
#define NVT_DM_DELAY	(1U << 3)

static unsigned int nvt_dm_targets;
static bool nvt_dm_probed;

static inline void nvt_dm_probe(void)
{
	static const char * const names[] = { "linear", "error", "flakey",
					      "delay" };
	unsigned int i;

	nvt_dm_probed = true;
	if (nvt_sh("command -v dmsetup >/dev/null") != 0)
		return;
	nvt_sh("modprobe -a dm-mod dm-flakey dm-delay >/dev/null 2>&1");
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (nvt_sh("dmsetup targets 2>/dev/null | grep -qw '^%s'",
			   names[i]) == 0)
			nvt_dm_targets |= 1U << i;
}

/* Whether device-mapper target @mask (NVT_DM_*) can be used. */
static inline bool nvt_dm_target(unsigned int mask)
{
	if (!nvt_dm_probed)
		nvt_dm_probe();
	return (nvt_dm_targets & mask) == mask;
}

/* ---- skip when the device is missing ------------------------------------ */

/*
 * The first thing of every FIXTURE_SETUP() of the NVMe tests: kst_setup()
 * (kvtier_test.h), then skip the case when the NVMe device is missing or
 * the module has no NVMe tier.
 */
static inline void nvt_setup_check(struct __test_metadata *_metadata)
{
	struct kvtier_api api;
	struct stat st;
	int ctl, ret;

	kst_setup(_metadata);
	if (stat(nvt_dev(), &st) || !S_ISBLK(st.st_mode))
		KST_SETUP_SKIP("%s missing: boot the VM with --nvme 1",
			       nvt_dev());
	ctl = kst_ctl_open_raw();
	ret = ctl < 0 ? ctl : kst_api(ctl, KST_F_KNOWN, &api);
	if (ctl >= 0)
		close(ctl);
	if (ret || !(api.supported & KVTIER_F_NVME))
		KST_SETUP_SKIP("kvtier without KVTIER_F_NVME");
}

#endif /* KVTIER_NVME_TEST_H */
