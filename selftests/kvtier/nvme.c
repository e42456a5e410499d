// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier NVMe tier (KVTIER_F_NVME): attach and its rejections, demotion of
 * evicted blocks and their promotion by GET, LOOKUP with KVTIER_LOOKUP_LOAD
 * and mmap faults, SYNC, detach and attach again, the on-disk format, the
 * integrity checks (a corrupted, misplaced or unreadable copy is a miss,
 * never wrong bytes), faults injected with device-mapper (dm-flakey, the
 * error target, dm-delay), a device too small for what is written, and a
 * segment writer out of memory (the debug kernel's fail_writer point).
 *
 * Runs as root on /dev/nvme0n1 (or $KVTIER_NVME_DEV), whose content it
 * destroys; skipped when the device is missing. Persistence across module
 * reload and reboot is tested by nvme-persist.sh and nvme-crash.sh.
 */
#include "nvme_fixture.h"

/* ==== attach, detach, NVMe stat, SYNC: every rejection =================== */

FIXTURE(attach) {
	struct nvt_fix;		/* buf: one 4 KiB page */
};

static const struct nvt_cfg attach_cfg = {
	.block_size = NVT_DISK_PAGE,
};

FIXTURE_SETUP(attach)
{
	nvt_setup(_metadata, NVT_FIX(self), &attach_cfg);
}

FIXTURE_TEARDOWN(attach)
{
	nvt_teardown(NVT_FIX(self));
}

TEST_F(attach, api_advertises_nvme)
{
	struct kvtier_api api;
	int ctl = kvt_ctl_open_raw();

	ASSERT_LE(0, ctl);
	ASSERT_EQ(0, kvt_api(ctl, KVTIER_F_NVME, &api));
	EXPECT_EQ(KVTIER_F_NVME, api.features);
	EXPECT_TRUE(!!(api.supported & KVTIER_F_NVME));
	EXPECT_TRUE(!!(api.ioctls & (1ULL << _IOC_NR(KVTIER_IOC_NVME_ATTACH))));
	EXPECT_TRUE(!!(api.ioctls & (1ULL << _IOC_NR(KVTIER_IOC_NVME_DETACH))));
	EXPECT_TRUE(!!(api.ioctls & (1ULL << _IOC_NR(KVTIER_IOC_NVME_STAT))));
	EXPECT_TRUE(!!(api.ioctls & (1ULL << _IOC_NR(KVTIER_IOC_SYNC))));
	close(ctl);
}

/* The NVMe commands follow the ioctl rules: handshake, fd kind, sizes. */
TEST_F(attach, ioctl_rules)
{
	struct {
		struct kvtier_nvme_attach a;
		__u64 tail;
	} big;
	struct kvtier_nvme_attach a;
	struct kvtier_sync sy;
	char name[KVTIER_NAME_MAX];
	int raw, pfd;

	/* Before KVTIER_IOC_API: -EINVAL. */
	raw = kvt_ctl_open_raw();
	ASSERT_LE(0, raw);
	ASSERT_EQ(-EINVAL, nvt_attach(raw, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	ASSERT_EQ(-EINVAL, nvt_detach(raw));
	close(raw);
	ASSERT_EQ(0, nvt_attached(self->ctl));

	/* Smaller than v1: -EINVAL; larger with a nonzero tail: -E2BIG. */
	memset(&a, 0, sizeof(a));
	a.path = (__u64)(uintptr_t)nvt_dev();
	a.flags = KVTIER_NVME_FORMAT;
	ASSERT_EQ(-EINVAL, kvt_ioctl(self->ctl, kvt_resize(KVTIER_IOC_NVME_ATTACH,
							   sizeof(a) - 8), &a));
	memset(&big, 0, sizeof(big));
	big.a = a;
	big.tail = 1;
	ASSERT_EQ(-E2BIG, kvt_ioctl(self->ctl, kvt_resize(KVTIER_IOC_NVME_ATTACH,
							  sizeof(big)), &big));
	ASSERT_EQ(0, nvt_attached(self->ctl));
	big.tail = 0;
	ASSERT_EQ(0, kvt_ioctl(self->ctl, kvt_resize(KVTIER_IOC_NVME_ATTACH,
						     sizeof(big)), &big));
	ASSERT_EQ(1, nvt_attached(self->ctl));

	/* SYNC is a pool command, ATTACH a control command. */
	memset(&sy, 0, sizeof(sy));
	ASSERT_EQ(-ENOTTY, kvt_ioctl(self->ctl, KVTIER_IOC_SYNC, &sy));
	kvt_name(name, "rules");
	pfd = kvt_pool_create(self->ctl, name, KVT_PAGE, 16, 16);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(-ENOTTY, kvt_ioctl(pfd, KVTIER_IOC_NVME_ATTACH, &a));
	ASSERT_EQ(-EINVAL, kvt_ioctl(pfd, kvt_resize(KVTIER_IOC_SYNC,
						     sizeof(sy) - 8), &sy));
	close(pfd);
	ASSERT_EQ(0, kvt_pool_destroy(self->ctl, name));
}

/* Without CAP_SYS_ADMIN: -EPERM, and nothing is written to the device. */
TEST_F(attach, nonroot_eperm)
{
	__u8 before[16], after[16];
	pid_t pid;

	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	ASSERT_EQ(0, nvt_detach(self->ctl));
	sb_uuid(before);

	pid = kvt_fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int ctl;

		if (kvt_become(65534, 65534))
			_exit(10);
		ctl = kvt_ctl_open();
		if (ctl < 0)
			_exit(11);
		if (nvt_attach(ctl, nvt_dev(), 0, 0) != -EPERM)
			_exit(12);
		if (nvt_attach(ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0) != -EPERM)
			_exit(13);
		if (nvt_detach(ctl) != -EPERM)
			_exit(14);
		_exit(0);
	}
	ASSERT_EQ(0, kvt_wait(pid));
	ASSERT_EQ(0, nvt_attached(self->ctl));
	sb_uuid(after);
	ASSERT_EQ(0, memcmp(before, after, 16));

	/* Detach of an attached device by an unprivileged user. */
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	pid = kvt_fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int ctl;

		if (kvt_become(1000, 1000))
			_exit(10);
		ctl = kvt_ctl_open();
		if (ctl < 0)
			_exit(11);
		_exit(nvt_detach(ctl) == -EPERM ? 0 : 12);
	}
	ASSERT_EQ(0, kvt_wait(pid));
	ASSERT_EQ(1, nvt_attached(self->ctl));
}

/* Foreign content: -EMEDIUMTYPE and untouched; FORMAT takes it. */
TEST_F(attach, foreign_content_emediumtype)
{
	char *back = kvt_alloc(NVT_DISK_PAGE);
	unsigned int i;

	ASSERT_NE(NULL, back);
	for (i = 0; i < NVT_DISK_PAGE; i++)
		self->buf[i] = (char)(i * 37 + 11);
	ASSERT_EQ(0, nvt_raw_write(nvt_dev(), 0, self->buf, NVT_DISK_PAGE));

	ASSERT_EQ(-EMEDIUMTYPE, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	ASSERT_EQ(0, nvt_attached(self->ctl));
	ASSERT_EQ(0, nvt_raw_read(nvt_dev(), 0, back, NVT_DISK_PAGE));
	ASSERT_EQ(0, memcmp(self->buf, back, NVT_DISK_PAGE));

	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	ASSERT_EQ(1, nvt_attached(self->ctl));
	ASSERT_EQ(0, nvt_detach(self->ctl));
	/* Its own store is not foreign. */
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	ASSERT_EQ(0, nvt_detach(self->ctl));
	kvt_free(back, NVT_DISK_PAGE);
}

/* A kvtier superblock whose checksum fails is foreign too. */
TEST_F(attach, corrupt_superblock_emediumtype)
{
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	ASSERT_EQ(0, nvt_detach(self->ctl));
	/* One bit of the uuid (offset 16). */
	ASSERT_EQ(0, nvt_raw_flip(nvt_dev(), 16, 0x01));
	ASSERT_EQ(-EMEDIUMTYPE, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	ASSERT_EQ(0, nvt_attached(self->ctl));
	ASSERT_EQ(0, nvt_raw_flip(nvt_dev(), 16, 0x01));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
}

/* A blank device is formatted with the documented geometry. */
TEST_F(attach, blank_device_formats)
{
	long long bytes = nvt_dev_bytes(nvt_dev());
	struct kvtier_nvme_stat ns;
	struct nvt_disk_sb sb;
	size_t tlen = NVT_POOL_SLOTS * 256;
	char *table = kvt_alloc(tlen);
	__u8 zero[16] = { 0 };
	size_t i;

	ASSERT_LT(0, bytes);
	ASSERT_NE(NULL, table);
	/* A pool table full of junk, then a zero first page. */
	memset(table, 0xff, tlen);
	ASSERT_EQ(0, nvt_raw_write(nvt_dev(), NVT_POOL_TABLE_OFF, table, tlen));
	memset(self->buf, 0, NVT_DISK_PAGE);
	ASSERT_EQ(0, nvt_raw_write(nvt_dev(), 0, self->buf, NVT_DISK_PAGE));

	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	ASSERT_EQ(0, nvt_nstat(self->ctl, &ns));
	EXPECT_EQ(1U, ns.attached);
	EXPECT_EQ((__u64)bytes, ns.dev_bytes);
	EXPECT_EQ(4 * KVT_MIB, ns.region_bytes);
	EXPECT_EQ((bytes - NVT_DATA_OFF) / (4 * KVT_MIB), ns.nr_regions);
	EXPECT_EQ(ns.nr_regions, ns.free_regions);
	EXPECT_NE(0, memcmp(ns.uuid, zero, 16));
	EXPECT_EQ(0U, ns.lost_blocks);
	EXPECT_EQ(0U, ns.io_errors);

	ASSERT_EQ(0, nvt_read_sb(nvt_dev(), &sb));
	EXPECT_EQ(2U, sb.version);
	EXPECT_EQ(0, memcmp(sb.uuid, ns.uuid, 16));
	EXPECT_EQ((__u64)bytes, sb.dev_bytes);
	EXPECT_EQ(ns.region_bytes, sb.region_bytes);
	EXPECT_EQ(ns.nr_regions, sb.nr_regions);
	EXPECT_EQ(NVT_POOL_SLOTS, sb.pool_slots);
	EXPECT_EQ(NVT_POOL_TABLE_OFF, sb.pool_table_off);
	EXPECT_EQ(NVT_DATA_OFF, sb.data_off);
	EXPECT_EQ(NVT_DISK_PAGE, sb.page_bytes);

	/* The junk pool table was wiped. */
	ASSERT_EQ(0, nvt_raw_read(nvt_dev(), NVT_POOL_TABLE_OFF, table, tlen));
	for (i = 0; i < tlen; i++)
		if (table[i])
			break;
	EXPECT_EQ(tlen, i);
	kvt_free(table, tlen);
}

/* The superblock's generation grows at every attach. */
TEST_F(attach, generation_increments)
{
	struct nvt_disk_sb sb;
	__u64 gen;

	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	ASSERT_EQ(0, nvt_read_sb(nvt_dev(), &sb));
	gen = sb.generation;
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	ASSERT_EQ(0, nvt_read_sb(nvt_dev(), &sb));
	ASSERT_EQ(gen + 1, sb.generation);
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	ASSERT_EQ(0, nvt_read_sb(nvt_dev(), &sb));
	ASSERT_EQ(gen + 2, sb.generation);
}

/* FORMAT with each valid region size: the geometry follows. */
TEST_F(attach, format_region_sizes)
{
	static const __u32 kib[] = { 0, 1024, 2048, 16384, 65536 };
	long long bytes = nvt_dev_bytes(nvt_dev());
	struct kvtier_nvme_stat ns;
	unsigned int i;

	ASSERT_LT(0, bytes);
	for (i = 0; i < sizeof(kib) / sizeof(kib[0]); i++) {
		__u64 rb = (kib[i] ? kib[i] : 4096) * KVT_KIB;

		if ((__u64)bytes < NVT_DATA_OFF + 2 * rb)
			continue;
		ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(),
					KVTIER_NVME_FORMAT, kib[i]));
		ASSERT_EQ(0, nvt_nstat(self->ctl, &ns));
		EXPECT_EQ(rb, ns.region_bytes);
		EXPECT_EQ((bytes - NVT_DATA_OFF) / rb, ns.nr_regions);
		ASSERT_EQ(0, nvt_detach(self->ctl));
		/* Attached again without FORMAT, it keeps that geometry. */
		ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
		ASSERT_EQ(0, nvt_nstat(self->ctl, &ns));
		EXPECT_EQ(rb, ns.region_bytes);
		ASSERT_EQ(0, nvt_detach(self->ctl));
	}
}

TEST_F(attach, bad_flags_einval)
{
	ASSERT_EQ(-EINVAL, nvt_attach(self->ctl, nvt_dev(), 1U << 1, 0));
	ASSERT_EQ(-EINVAL, nvt_attach(self->ctl, nvt_dev(), 1U << 31, 0));
	ASSERT_EQ(-EINVAL, nvt_attach(self->ctl, nvt_dev(),
				      KVTIER_NVME_FORMAT | 1U << 7, 0));
	ASSERT_EQ(0, nvt_attached(self->ctl));
}

TEST_F(attach, region_kib_without_format_einval)
{
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(-EINVAL, nvt_attach(self->ctl, nvt_dev(), 0, 1024));
	/* Even the default size: it must be 0 without FORMAT. */
	ASSERT_EQ(-EINVAL, nvt_attach(self->ctl, nvt_dev(), 0, 4096));
	ASSERT_EQ(0, nvt_attached(self->ctl));
}

/* Bad region sizes: -EINVAL, and the store on the device is untouched. */
TEST_F(attach, bad_region_kib_einval)
{
	static const __u32 bad[] = { 1, 512, 1000, 1023, 1536, 3072, 4095,
				     65535, 131072, 1U << 31 };
	__u8 before[16], after[16];
	unsigned int i;

	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	ASSERT_EQ(0, nvt_detach(self->ctl));
	sb_uuid(before);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int ret = nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT,
				     bad[i]);

		if (ret != -EINVAL)
			TH_LOG("region_kib %u: %d", bad[i], ret);
		ASSERT_EQ(-EINVAL, ret);
		ASSERT_EQ(0, nvt_attached(self->ctl));
	}
	sb_uuid(after);
	ASSERT_EQ(0, memcmp(before, after, 16));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
}

TEST_F(attach, reserved_nonzero_einval)
{
	struct kvtier_nvme_attach a;
	unsigned int i;

	for (i = 0; i < 4; i++) {
		memset(&a, 0, sizeof(a));
		a.path = (__u64)(uintptr_t)nvt_dev();
		a.flags = KVTIER_NVME_FORMAT;
		a.reserved[i] = 1;
		ASSERT_EQ(-EINVAL, kvt_ioctl(self->ctl, KVTIER_IOC_NVME_ATTACH, &a));
	}
	ASSERT_EQ(0, nvt_attached(self->ctl));
}

TEST_F(attach, bad_path)
{
	struct kvtier_nvme_attach a;

	memset(&a, 0, sizeof(a));
	ASSERT_EQ(-EFAULT, kvt_ioctl(self->ctl, KVTIER_IOC_NVME_ATTACH, &a));
	a.path = (__u64)(uintptr_t)kvt_unmapped_addr();
	ASSERT_EQ(-EFAULT, kvt_ioctl(self->ctl, KVTIER_IOC_NVME_ATTACH, &a));
	ASSERT_EQ(-ENOENT, nvt_attach(self->ctl, "/nonexistent/kvtier", 0, 0));
	ASSERT_EQ(-ENOTBLK, nvt_attach(self->ctl, "/dev/null", 0, 0));
	ASSERT_EQ(-ENOTBLK, nvt_attach(self->ctl, "/proc/version", 0, 0));
	ASSERT_EQ(0, nvt_attached(self->ctl));
}

/* A second attach: -EBUSY, even with FORMAT, which must not format. */
TEST_F(attach, second_attach_ebusy)
{
	struct kvtier_nvme_stat ns;
	__u8 disk[16];

	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	ASSERT_EQ(0, nvt_nstat(self->ctl, &ns));
	ASSERT_EQ(-EBUSY, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	ASSERT_EQ(-EBUSY, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	ASSERT_EQ(-EBUSY, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT,
				     1024));
	ASSERT_EQ(1, nvt_attached(self->ctl));
	sb_uuid(disk);
	ASSERT_EQ(0, memcmp(ns.uuid, disk, 16));
	ASSERT_EQ((long long)(4 * KVT_MIB), NSTAT(self->ctl, region_bytes));
}

/* A device held by a device-mapper table: -EBUSY. */
TEST_F(attach, device_in_use_ebusy)
{
	char table[256];

	if (!nvt_dm_target(NVT_DM_LINEAR))
		SKIP(return, "no device-mapper");
	linear_table(table, sizeof(table), 8192);
	ASSERT_EQ(0, nvt_dm_create(DM_HOLD, table));
	ASSERT_EQ(-EBUSY, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	ASSERT_EQ(-EBUSY, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	ASSERT_EQ(0, nvt_attached(self->ctl));
	ASSERT_EQ(0, nvt_dm_remove(DM_HOLD));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
}

/* An attached device is held exclusively. */
TEST_F(attach, attached_device_is_exclusive)
{
	char table[256];
	int fd;

	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	fd = open(nvt_dev(), O_RDONLY | O_EXCL | O_CLOEXEC);
	ASSERT_EQ(-1, fd);
	ASSERT_EQ(EBUSY, errno);
	if (nvt_dm_target(NVT_DM_LINEAR)) {
		linear_table(table, sizeof(table), 8192);
		ASSERT_NE(0, nvt_dm_create(DM_HOLD, table));
		nvt_dm_remove(DM_HOLD);
	}
	ASSERT_EQ(0, nvt_detach(self->ctl));
	fd = open(nvt_dev(), O_RDONLY | O_EXCL | O_CLOEXEC);
	ASSERT_LE(0, fd);
	close(fd);
}

/* Too small for the superblock, the table and two regions: -ENOSPC. */
TEST_F(attach, too_small_enospc)
{
	char table[256];

	if (!nvt_dm_target(NVT_DM_LINEAR))
		SKIP(return, "no device-mapper");
	/* 2 MiB: 1 MiB of header and one 1 MiB region. */
	linear_table(table, sizeof(table), 4096);
	ASSERT_EQ(0, nvt_dm_create(DM_SMALL, table));
	ASSERT_EQ(-ENOSPC, nvt_attach(self->ctl, "/dev/mapper/" DM_SMALL,
				      KVTIER_NVME_FORMAT, 1024));
	ASSERT_EQ(0, nvt_attached(self->ctl));
}

/* A device whose every I/O fails: attach reports -EIO. */
TEST_F(attach, unreadable_device_eio)
{
	char table[256];
	long long s = dev_sectors(nvt_dev());

	if (!nvt_dm_target(NVT_DM_ERROR))
		SKIP(return, "no dm error target");
	ASSERT_LT(0, s);
	snprintf(table, sizeof(table), "0 %lld error", s);
	ASSERT_EQ(0, nvt_dm_create(DM_ERR, table));
	ASSERT_EQ(-EIO, nvt_attach(self->ctl, "/dev/mapper/" DM_ERR, 0, 0));
	ASSERT_EQ(-EIO, nvt_attach(self->ctl, "/dev/mapper/" DM_ERR,
				   KVTIER_NVME_FORMAT, 0));
	ASSERT_EQ(0, nvt_attached(self->ctl));
}

TEST_F(attach, detach_none_enodev)
{
	ASSERT_EQ(-ENODEV, nvt_detach(self->ctl));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(-ENODEV, nvt_detach(self->ctl));
}

TEST_F(attach, detach_bad_fields_einval)
{
	struct kvtier_nvme_detach d;

	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	memset(&d, 0, sizeof(d));
	d.flags = 1;
	ASSERT_EQ(-EINVAL, kvt_ioctl(self->ctl, KVTIER_IOC_NVME_DETACH, &d));
	memset(&d, 0, sizeof(d));
	d.__pad = 1;
	ASSERT_EQ(-EINVAL, kvt_ioctl(self->ctl, KVTIER_IOC_NVME_DETACH, &d));
	memset(&d, 0, sizeof(d));
	d.reserved = 1;
	ASSERT_EQ(-EINVAL, kvt_ioctl(self->ctl, KVTIER_IOC_NVME_DETACH, &d));
	/* A path: unreadable, not a device, a device not attached. */
	memset(&d, 0, sizeof(d));
	d.path = (__u64)(uintptr_t)kvt_unmapped_addr();
	ASSERT_EQ(-EFAULT, kvt_ioctl(self->ctl, KVTIER_IOC_NVME_DETACH, &d));
	d.path = (__u64)(uintptr_t)"/nonexistent/kvtier";
	ASSERT_EQ(-ENOENT, kvt_ioctl(self->ctl, KVTIER_IOC_NVME_DETACH, &d));
	d.path = (__u64)(uintptr_t)"/dev/null";
	ASSERT_EQ(-ENOTBLK, kvt_ioctl(self->ctl, KVTIER_IOC_NVME_DETACH, &d));
	d.path = (__u64)(uintptr_t)"/dev/nvme1n1";
	if (!access("/dev/nvme1n1", F_OK) &&
	    strcmp(nvt_dev(), "/dev/nvme1n1")) {
		ASSERT_EQ(-ENODEV, kvt_ioctl(self->ctl, KVTIER_IOC_NVME_DETACH,
					     &d));
	}
	ASSERT_EQ(1, nvt_attached(self->ctl));
	ASSERT_EQ(0, nvt_detach(self->ctl));
}

TEST_F(attach, nvme_stat)
{
	struct kvtier_nvme_stat ns;
	struct stat sb;
	unsigned char *p = (unsigned char *)&ns;
	size_t i;

	/* Detached: attached 0 and every other field zero. */
	memset(&ns, 0, sizeof(ns));
	ASSERT_EQ(0, kvt_ioctl(self->ctl, KVTIER_IOC_NVME_STAT, &ns));
	for (i = 0; i < sizeof(ns); i++)
		if (p[i])
			break;
	ASSERT_EQ(sizeof(ns), i);

	memset(&ns, 0, sizeof(ns));
	ns.flags = 2;
	ASSERT_EQ(-EINVAL, kvt_ioctl(self->ctl, KVTIER_IOC_NVME_STAT, &ns));
	for (i = 0; i < sizeof(ns.reserved) / sizeof(ns.reserved[0]); i++) {
		memset(&ns, 0, sizeof(ns));
		ns.reserved[i] = 1;
		ASSERT_EQ(-EINVAL, kvt_ioctl(self->ctl, KVTIER_IOC_NVME_STAT, &ns));
	}
	memset(&ns, 0, sizeof(ns));
	ns.__pad = 1;
	ASSERT_EQ(-EINVAL, kvt_ioctl(self->ctl, KVTIER_IOC_NVME_STAT, &ns));
	/* An index only with KVTIER_NVME_STAT_DEV, and in range. */
	memset(&ns, 0, sizeof(ns));
	ns.dev_index = 1;
	ASSERT_EQ(-EINVAL, kvt_ioctl(self->ctl, KVTIER_IOC_NVME_STAT, &ns));
	ns.flags = KVTIER_NVME_STAT_DEV;
	ns.dev_index = KVTIER_NVME_MAX;
	ASSERT_EQ(-EINVAL, kvt_ioctl(self->ctl, KVTIER_IOC_NVME_STAT, &ns));

	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	ASSERT_EQ(0, nvt_nstat(self->ctl, &ns));
	ASSERT_EQ(1U, ns.attached);
	ASSERT_LT(0U, ns.nr_regions);
	/* Format and attach wrote the superblock and the pool table. */
	ASSERT_LE(NVT_DISK_PAGE, ns.bytes_written);
	ASSERT_EQ(0U, ns.bytes_demoted);

	/* Device 0 is this one; device 1 is not in use. */
	memset(&ns, 0, sizeof(ns));
	ns.flags = KVTIER_NVME_STAT_DEV;
	ASSERT_EQ(0, kvt_ioctl(self->ctl, KVTIER_IOC_NVME_STAT, &ns));
	ASSERT_EQ(1U, ns.attached);
	ASSERT_EQ((__u32)KVTIER_NVME_STAT_DEV, ns.flags);
	ASSERT_EQ(0, stat(nvt_dev(), &sb));
	ASSERT_EQ(major(sb.st_rdev), ns.dev_major);
	ASSERT_EQ(minor(sb.st_rdev), ns.dev_minor);
	memset(&ns, 0, sizeof(ns));
	ns.flags = KVTIER_NVME_STAT_DEV;
	ns.dev_index = 1;
	ASSERT_EQ(0, kvt_ioctl(self->ctl, KVTIER_IOC_NVME_STAT, &ns));
	ASSERT_EQ(0U, ns.attached);
	ASSERT_EQ(0ULL, ns.dev_bytes);
}

TEST_F(attach, sync_without_device_enodev)
{
	char name[KVTIER_NAME_MAX];
	int pfd;

	kvt_name(name, "nosync");
	pfd = kvt_pool_create(self->ctl, name, KVT_PAGE, 16, 16);
	ASSERT_LE(0, pfd);
	/* An empty pool. */
	EXPECT_EQ(-ENODEV, nvt_sync(pfd, NULL));
	ASSERT_EQ(0, put_range(pfd, self->buf, KVT_PAGE, 0, 4, 1, 0));
	EXPECT_EQ(-ENODEV, nvt_sync(pfd, NULL));
	close(pfd);
	ASSERT_EQ(0, kvt_pool_destroy(self->ctl, name));
}

TEST_F(attach, sync_bad_fields_einval)
{
	char name[KVTIER_NAME_MAX];
	struct kvtier_sync s;
	int pfd;

	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	kvt_name(name, "syncbad");
	pfd = kvt_pool_create(self->ctl, name, KVT_PAGE, 16, 16);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, put_range(pfd, self->buf, KVT_PAGE, 0, 4, 1, 0));

	memset(&s, 0, sizeof(s));
	s.flags = 1;
	EXPECT_EQ(-EINVAL, kvt_ioctl(pfd, KVTIER_IOC_SYNC, &s));
	memset(&s, 0, sizeof(s));
	s.__pad = 1;
	EXPECT_EQ(-EINVAL, kvt_ioctl(pfd, KVTIER_IOC_SYNC, &s));
	memset(&s, 0, sizeof(s));
	s.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, kvt_ioctl(pfd, KVTIER_IOC_SYNC, &s));
	memset(&s, 0, sizeof(s));
	s.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, kvt_ioctl(pfd, KVTIER_IOC_SYNC, &s));
	/* Nothing was written by the rejected calls. */
	EXPECT_EQ(4, PSTAT(pfd, dirty));
	EXPECT_EQ(0, PSTAT(pfd, demotions));

	memset(&s, 0, sizeof(s));
	EXPECT_EQ(0, kvt_ioctl(pfd, KVTIER_IOC_SYNC, &s));
	EXPECT_EQ(4U, s.written);
	close(pfd);
	ASSERT_EQ(0, kvt_pool_destroy(self->ctl, name));
}

/*
 * Blocks larger than a region cannot be demoted: evicting them drops them,
 * PUT still works, and SYNC says so with -EFBIG (userspace-api.rst).
 */
TEST_F(attach, block_larger_than_region)
{
	const __u64 bs = 8 * KVT_MIB;
	char name[KVTIER_NAME_MAX];
	char *buf = kvt_alloc(bs);
	int pfd;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	kvt_name(name, "huge");
	pfd = kvt_pool_create(self->ctl, name, bs, 8, 2);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, put_range(pfd, buf, bs, 0, 3, 1, 0));
	EXPECT_EQ(0, get_check(pfd, buf, bs, 1, 1));
	EXPECT_EQ(0, get_check(pfd, buf, bs, 2, 1));
	EXPECT_EQ(-ENOENT, get_check(pfd, buf, bs, 0, 1));
	EXPECT_EQ(0, NSTAT(self->ctl, bytes_demoted));
	EXPECT_EQ(-EFBIG, nvt_sync(pfd, NULL));
	close(pfd);
	kvt_free(buf, bs);
	ASSERT_EQ(0, kvt_pool_destroy(self->ctl, name));
}

/* ==== the tier: demotion, promotion, SYNC, detach and attach =========== */


FIXTURE(tier) {
	struct nvt_fix;		/* buf, out: one block each */
};

/* The device attached, a pool of CAP blocks, DRAM of them in DRAM. */
#define TIER_CFG(block) {						\
	.block_size = (block), .out = true, .writer_ok = true,		\
	.tag = "nvme", .capacity = CAP, .dram_blocks = DRAM,		\
	.attach = true, .reattach = true,				\
}

FIXTURE_VARIANT(tier) {
	struct nvt_cfg cfg;
};

FIXTURE_VARIANT_ADD(tier, b4k) { .cfg = TIER_CFG(4 * KVT_KIB) };
FIXTURE_VARIANT_ADD(tier, b64k) { .cfg = TIER_CFG(64 * KVT_KIB) };

FIXTURE_SETUP(tier)
{
	nvt_setup(_metadata, NVT_FIX(self), &variant->cfg);
}

FIXTURE_TEARDOWN(tier)
{
	nvt_teardown(NVT_FIX(self));
}

/* Evicted blocks go to NVMe and come back exact on GET. */
TEST_F(tier, demote_and_promote)
{
	struct kvtier_pool_stat st;
	struct kvtier_nvme_stat ns;
	struct tally t;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, kvt_stat(self->pfd, &st));
	EXPECT_GE(DRAM, st.resident[KVTIER_TIER_DRAM]);
	EXPECT_LE(NCOLD, st.resident[KVTIER_TIER_NVME]);
	EXPECT_LE(NCOLD, st.demotions);
	EXPECT_EQ(NPUT, st.puts);
	EXPECT_EQ(0U, st.promotions);
	EXPECT_EQ(0U, st.bad_reads);
	EXPECT_GE(DRAM, st.dirty);

	ASSERT_EQ(0, nvt_nstat(self->ctl, &ns));
	EXPECT_LE(NCOLD * self->bs, ns.bytes_demoted);
	EXPECT_LT(ns.bytes_demoted, ns.bytes_written);
	EXPECT_GT(ns.nr_regions, ns.free_regions);

	tally_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, &t, NULL);
	EXPECT_EQ(NPUT, t.exact);
	EXPECT_EQ(0U, t.wrong);
	ASSERT_EQ(0, kvt_stat(self->pfd, &st));
	EXPECT_LE(NCOLD, st.promotions);
	EXPECT_EQ(0U, st.bad_reads);
	EXPECT_EQ(0U, st.misses);
	EXPECT_GE(DRAM, st.resident[KVTIER_TIER_DRAM]);
	EXPECT_EQ(NPUT, st.resident[KVTIER_TIER_NVME]);
	ASSERT_LE((long long)(NCOLD * self->bs), NSTAT(self->ctl, bytes_read));

	/* A second pass reads them all again, still exact. */
	tally_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, &t, NULL);
	EXPECT_EQ(NPUT, t.exact);
}

/*
 * A pool whose every address holds a block: blocks only on NVMe still come
 * back (a load needs DRAM room, not an address).
 */
TEST_F(tier, full_pool_reads_back)
{
	char name[KVTIER_NAME_MAX];
	struct tally t;
	int pfd;

	kvt_name(name, "fullpool");
	pfd = kvt_pool_create(self->ctl, name, self->bs, 32, DRAM);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, put_range(pfd, self->buf, self->bs, 0, 32, 1, 0));
	/* No address left for a new key. */
	ASSERT_EQ(-ENOSPC, put_range(pfd, self->buf, self->bs, 32, 1, 1, 0));
	ASSERT_EQ(KVTIER_TIER_NVME, key_tier(pfd, 0));
	EXPECT_EQ(0, get_check(pfd, self->buf, self->bs, 0, 1));
	tally_range(pfd, self->buf, self->bs, 0, 32, 1, &t, NULL);
	EXPECT_EQ(32U, t.exact);
	if (t.other)
		TH_LOG("first error: %d", t.first_other);
	close(pfd);
	ASSERT_EQ(0, kvt_pool_destroy(self->ctl, name));
}

/* PIN of a block only on NVMe loads it and keeps it in DRAM. */
TEST_F(tier, pin_loads_and_holds)
{
	struct kvtier_block b;
	__u64 next = 200;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 0));
	ASSERT_EQ(0, kvt_one(self->pfd, KVTIER_IOC_PIN, K0, 0, NULL, 0, &b));
	ASSERT_EQ((__u32)KVTIER_TIER_DRAM, b.tier);
	ASSERT_EQ(1, PSTAT(self->pfd, promotions));
	/* Many more blocks come and go; the pinned one stays. */
	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 100, 4 * DRAM, 1, 0));
	ASSERT_EQ(KVTIER_TIER_DRAM, key_tier(self->pfd, 0));
	ASSERT_EQ(0, get_check(self->pfd, self->buf, self->bs, 0, 1));
	ASSERT_EQ(1, PSTAT(self->pfd, promotions));
	ASSERT_EQ(0, kvt_unpin1(self->pfd, K0, 0));
	ASSERT_EQ(0, push_out(self->pfd, self->buf, self->bs, 0, &next));
	ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 0));
	ASSERT_EQ(0, get_check(self->pfd, self->buf, self->bs, 0, 1));
}

/* DROP of a block only on NVMe: gone, and counted out of the tier. */
TEST_F(tier, drop_nvme_block)
{
	long long nvme;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 0));
	nvme = RES_NVME(self->pfd);
	ASSERT_EQ((long long)NPUT, nvme);
	ASSERT_EQ(0, kvt_drop1(self->pfd, K0, 0));
	ASSERT_EQ(-ENOENT, kvt_lookup1(self->pfd, K0, 0, NULL));
	ASSERT_EQ(-ENOENT, get_check(self->pfd, self->buf, self->bs, 0, 1));
	ASSERT_EQ(nvme - 1, RES_NVME(self->pfd));
	/* And one also in DRAM. */
	ASSERT_EQ(KVTIER_TIER_DRAM, key_tier(self->pfd, NPUT - 1));
	ASSERT_EQ(0, kvt_drop1(self->pfd, K0, NPUT - 1));
	ASSERT_EQ(nvme - 2, RES_NVME(self->pfd));
	ASSERT_EQ(0, PSTAT(self->pfd, dirty));
	/* The address can be used again. */
	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, 1, 3, 0));
	ASSERT_EQ(0, get_check(self->pfd, self->buf, self->bs, 0, 3));
}

/* Plain LOOKUP reports the tier and reads nothing. */
TEST_F(tier, lookup_reports_nvme_tier)
{
	struct kvtier_block b[NPUT];
	unsigned int i, nvme = 0, dram = 0;
	long long read0;
	__u32 done;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	read0 = NSTAT(self->ctl, bytes_read);
	ASSERT_LE(0, read0);
	ASSERT_EQ(0, lookup_range(self->pfd, b, 0, NPUT, 0, &done));
	ASSERT_EQ(NPUT, done);
	for (i = 0; i < NPUT; i++) {
		ASSERT_EQ(0, b[i].status);
		ASSERT_NE(KVTIER_ADDR_NONE, b[i].addr);
		if (b[i].tier == KVTIER_TIER_NVME)
			nvme++;
		else if (b[i].tier == KVTIER_TIER_DRAM)
			dram++;
	}
	EXPECT_EQ(NPUT, nvme + dram);
	EXPECT_LE(NCOLD, nvme);
	EXPECT_EQ(dram, RES_DRAM(self->pfd));
	/* The oldest is cold, the newest hot. */
	EXPECT_EQ((__u32)KVTIER_TIER_NVME, b[0].tier);
	EXPECT_EQ((__u32)KVTIER_TIER_DRAM, b[NPUT - 1].tier);
	/* TOUCH does not load either. */
	ASSERT_EQ(0, lookup_range(self->pfd, b, 0, 4, KVTIER_LOOKUP_TOUCH, &done));
	ASSERT_EQ(4U, done);
	EXPECT_EQ((__u32)KVTIER_TIER_NVME, b[0].tier);
	EXPECT_EQ(0, PSTAT(self->pfd, promotions));
	EXPECT_EQ(read0, NSTAT(self->ctl, bytes_read));
}

/* LOOKUP with LOAD brings the prefix to DRAM. */
TEST_F(tier, lookup_load_brings_prefix)
{
	struct kvtier_block b[4];
	unsigned int i;
	__u32 done;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, i));
	}
	ASSERT_EQ(0, lookup_range(self->pfd, b, 0, 4, KVTIER_LOOKUP_LOAD, &done));
	ASSERT_EQ(4U, done);
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(0, b[i].status);
		EXPECT_EQ((__u32)KVTIER_TIER_DRAM, b[i].tier);
		EXPECT_NE(KVTIER_ADDR_NONE, b[i].addr);
	}
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(KVTIER_TIER_DRAM, key_tier(self->pfd, i));
	}
	ASSERT_EQ(4, PSTAT(self->pfd, promotions));
	/* GETs now hit DRAM: exact and no more reads. */
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, get_check(self->pfd, self->buf, self->bs, i, 1));
	}
	ASSERT_EQ(4, PSTAT(self->pfd, promotions));
	ASSERT_EQ(0, PSTAT(self->pfd, bad_reads));
}

/* LOAD stops at the first miss: what follows it stays on NVMe. */
TEST_F(tier, lookup_load_stops_at_miss)
{
	struct kvtier_block b[5];
	__u32 done;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	kvt_blk(&b[0], K0, 0, NULL);
	kvt_blk(&b[1], K0, 1, NULL);
	kvt_blk(&b[2], K0, 1000, NULL);	/* never put */
	kvt_blk(&b[3], K0, 3, NULL);
	kvt_blk(&b[4], K0, 4, NULL);
	ASSERT_EQ(0, kvt_batch(self->pfd, KVTIER_IOC_LOOKUP, b, 5,
			       KVTIER_LOOKUP_LOAD, &done));
	ASSERT_EQ(2U, done);
	EXPECT_EQ((__u32)KVTIER_TIER_DRAM, b[0].tier);
	EXPECT_EQ((__u32)KVTIER_TIER_DRAM, b[1].tier);
	EXPECT_EQ(-ENOENT, b[2].status);
	EXPECT_EQ((__u32)KVTIER_TIER_NONE, b[2].tier);
	EXPECT_EQ(KVTIER_ADDR_NONE, b[2].addr);
	EXPECT_EQ(0, b[3].status);
	EXPECT_EQ((__u32)KVTIER_TIER_NVME, b[3].tier);
	EXPECT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 3));
	EXPECT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 4));
	EXPECT_EQ(2, PSTAT(self->pfd, promotions));
}

/* A fault on a block only on NVMe loads it; evicted and faulted again. */
TEST_F(tier, mmap_fault_loads)
{
	size_t len = (size_t)CAP * self->bs;
	struct kvtier_block b;
	__u64 next = 100;
	char *map;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, kvt_lookup1(self->pfd, K0, 0, &b));
	ASSERT_EQ((__u32)KVTIER_TIER_NVME, b.tier);
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, self->pfd, 0);
	ASSERT_NE(MAP_FAILED, map);

	ASSERT_EQ(0, probe_read(map + b.addr * self->bs, self->out, self->bs));
	kvt_fill(self->buf, self->bs, K0, 0, GEN(1));
	ASSERT_EQ(0, memcmp(self->buf, self->out, self->bs));
	ASSERT_EQ(1, PSTAT(self->pfd, promotions));
	ASSERT_EQ(KVTIER_TIER_DRAM, key_tier(self->pfd, 0));

	/* Push it out again (new keys), then fault it back. */
	ASSERT_EQ(0, push_out(self->pfd, self->buf, self->bs, 0, &next));
	ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 0));
	memset(self->out, 0, self->bs);
	ASSERT_EQ(0, probe_read(map + b.addr * self->bs, self->out, self->bs));
	kvt_fill(self->buf, self->bs, K0, 0, GEN(1));
	ASSERT_EQ(0, memcmp(self->buf, self->out, self->bs));
	ASSERT_EQ(2, PSTAT(self->pfd, promotions));
	munmap(map, len);
}

/* KVTIER_POOL_FAULT_NOLOAD: SIGBUS until something else loads it. */
TEST_F(tier, mmap_fault_noload_sigbus)
{
	char name[KVTIER_NAME_MAX];
	struct kvtier_pool_create c;
	struct kvtier_block b;
	size_t len = (size_t)CAP * self->bs;
	char *map;
	int pfd;

	kvt_name(name, "noload");
	kvt_create_init(&c, name, self->bs, CAP, DRAM);
	c.flags = KVTIER_POOL_FAULT_NOLOAD;
	pfd = kvt_create(self->ctl, &c);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, put_range(pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, kvt_lookup1(pfd, K0, 0, &b));
	ASSERT_EQ((__u32)KVTIER_TIER_NVME, b.tier);
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, pfd, 0);
	ASSERT_NE(MAP_FAILED, map);

	EXPECT_EQ(SIGBUS, probe_read(map + b.addr * self->bs, self->out, 8));
	EXPECT_EQ(SIGBUS, probe_read(map + (b.addr + 1) * self->bs - 8,
				     self->out, 8));
	EXPECT_EQ(0, PSTAT(pfd, promotions));
	EXPECT_EQ(KVTIER_TIER_NVME, key_tier(pfd, 0));

	/* GET loads it; the mapping then reads the same bytes. */
	ASSERT_EQ(0, get_check(pfd, self->buf, self->bs, 0, 1));
	ASSERT_EQ(0, probe_read(map + b.addr * self->bs, self->out, self->bs));
	ASSERT_EQ(0, memcmp(self->buf, self->out, self->bs));
	munmap(map, len);
	close(pfd);
	ASSERT_EQ(0, kvt_pool_destroy(self->ctl, name));
}

struct cget {
	int pfd;
	__u64 bs, key;
	pthread_barrier_t *bar;
	int result;
};

static void *cget_fn(void *arg)
{
	struct cget *c = arg;
	void *buf = kvt_alloc(c->bs);

	if (!buf) {
		c->result = -ENOMEM;
		return NULL;
	}
	pthread_barrier_wait(c->bar);
	c->result = get_check(c->pfd, buf, c->bs, c->key, 1);
	kvt_free(buf, c->bs);
	return NULL;
}

#define NTHREADS	8

/* Concurrent GETs of one block only on NVMe: one read, all exact. */
TEST_F(tier, concurrent_gets_share_one_read)
{
	struct cget c[NTHREADS];
	pthread_t th[NTHREADS];
	pthread_barrier_t bar;
	__u64 key;
	int i;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	for (key = 0; key < 6; key++) {
		long long before = PSTAT(self->pfd, promotions);

		ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, key));
		ASSERT_EQ(0, pthread_barrier_init(&bar, NULL, NTHREADS));
		for (i = 0; i < NTHREADS; i++) {
			c[i] = (struct cget){ .pfd = self->pfd, .bs = self->bs,
					      .key = key, .bar = &bar };
			ASSERT_EQ(0, pthread_create(&th[i], NULL, cget_fn, &c[i]));
		}
		for (i = 0; i < NTHREADS; i++)
			pthread_join(th[i], NULL);
		pthread_barrier_destroy(&bar);
		for (i = 0; i < NTHREADS; i++) {
			if (c[i].result)
				TH_LOG("key %llu thread %d: %d",
				       (unsigned long long)key, i, c[i].result);
			ASSERT_EQ(0, c[i].result);
		}
		ASSERT_EQ(before + 1, PSTAT(self->pfd, promotions));
	}
	ASSERT_EQ(0, PSTAT(self->pfd, bad_reads));
}

/* SYNC writes every dirty block; a second SYNC writes nothing. */
TEST_F(tier, sync_clears_dirty)
{
	char name[KVTIER_NAME_MAX];
	struct kvtier_pool_stat st;
	__u64 written = 0;
	int pfd;

	kvt_name(name, "sync");
	pfd = kvt_pool_create(self->ctl, name, self->bs, 32, 32);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, put_range(pfd, self->buf, self->bs, 0, 20, 1, 0));
	ASSERT_EQ(0, kvt_stat(pfd, &st));
	ASSERT_LT(0U, st.dirty);
	ASSERT_GE(20U, st.dirty);
	ASSERT_EQ(20U, st.dirty + st.demotions);

	ASSERT_EQ(0, nvt_sync(pfd, &written));
	EXPECT_EQ(st.dirty, written);
	ASSERT_EQ(0, kvt_stat(pfd, &st));
	EXPECT_EQ(0U, st.dirty);
	EXPECT_EQ(20U, st.demotions);
	EXPECT_EQ(20U, st.resident[KVTIER_TIER_NVME]);
	EXPECT_EQ(20U, st.resident[KVTIER_TIER_DRAM]);

	ASSERT_EQ(0, nvt_sync(pfd, &written));
	EXPECT_EQ(0U, written);
	EXPECT_EQ(20, PSTAT(pfd, demotions));
	/* Clean blocks are still served from DRAM, exact. */
	for (int k = 0; k < 20; k++) {
		ASSERT_EQ(0, get_check(pfd, self->buf, self->bs, k, 1));
	}
	/* A replaced block is dirty again until the next SYNC. */
	ASSERT_EQ(0, put_range(pfd, self->buf, self->bs, 3, 1, 2,
			       KVTIER_PUT_REPLACE));
	EXPECT_EQ(1, PSTAT(pfd, dirty));
	ASSERT_EQ(0, nvt_sync(pfd, &written));
	EXPECT_EQ(1U, written);
	EXPECT_EQ(0, PSTAT(pfd, dirty));
	close(pfd);
	ASSERT_EQ(0, kvt_pool_destroy(self->ctl, name));
}

struct writer {
	int pfd;
	__u64 bs;
	volatile int stop;
	double until;
	unsigned long puts;
	int err;
};

static void *writer_fn(void *arg)
{
	struct writer *w = arg;
	void *buf = kvt_alloc(w->bs);
	__u64 i;

	if (!buf) {
		w->err = -ENOMEM;
		return NULL;
	}
	for (i = 0; !w->stop && nvt_now() < w->until; i++) {
		/* 64 keys: with the test's 64, the pool's 256 addresses do. */
		__u64 k = 1000 + i % NPUT;
		int ret;

		kvt_fill(buf, w->bs, K0, k, GEN(i + 2));
		ret = kvt_one(w->pfd, KVTIER_IOC_PUT, K0, k, buf,
			      KVTIER_PUT_REPLACE, NULL);
		if (ret) {
			w->err = ret;
			break;
		}
		w->puts++;
	}
	kvt_free(buf, w->bs);
	return NULL;
}

/*
 * SYNC returns once what was there when it started is durable, even while
 * a writer keeps dirtying blocks (it must not chase the writer forever).
 */
TEST_F_TIMEOUT(tier, sync_with_concurrent_puts, 120)
{
	struct writer w = { .pfd = self->pfd, .bs = self->bs };
	struct tally t;
	double t0, t1;
	pthread_t th;
	int ret;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	w.until = nvt_now() + 25;
	ASSERT_EQ(0, pthread_create(&th, NULL, writer_fn, &w));
	usleep(200000);
	t0 = nvt_now();
	ret = nvt_sync_deadline(self->pfd, 15, NULL);
	t1 = nvt_now();
	w.stop = 1;
	pthread_join(th, NULL);
	TH_LOG("SYNC took %.1f s during %lu PUTs", t1 - t0, w.puts);
	ASSERT_EQ(0, w.err);
	ASSERT_EQ(0, ret);
	/* It returned while the writer was still going. */
	ASSERT_LT(t1, w.until - 1);
	/* Nothing reads back wrong (losses are capacity_kept's business). */
	tally_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, &t, NULL);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0U, t.other);
	EXPECT_EQ(NPUT, t.exact + t.miss);
}

/*
 * The device keeps what is evicted until it is full: writing a small part
 * of its capacity through a small DRAM share loses nothing.
 */
TEST_F_TIMEOUT(tier, capacity_kept, 120)
{
	long long dev = NSTAT(self->ctl, dev_bytes);
	char name[KVTIER_NAME_MAX];
	struct tally t;
	__u64 n = 1200;
	int pfd;

	ASSERT_LT(0, dev);
	/* At most a quarter of the device. */
	if (n * self->bs > (__u64)dev / 4)
		n = dev / 4 / self->bs;
	kvt_name(name, "capacity");
	pfd = kvt_pool_create(self->ctl, name, self->bs, n + 16, DRAM);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, put_range(pfd, self->buf, self->bs, 0, n, 1, 0));
	TH_LOG("%llu blocks of %llu KiB put: %lld regions reclaimed, %lld blocks lost",
	       (unsigned long long)n, (unsigned long long)self->bs >> 10,
	       NSTAT(self->ctl, reclaimed), NSTAT(self->ctl, lost_blocks));
	EXPECT_EQ(0, NSTAT(self->ctl, lost_blocks));
	tally_range(pfd, self->buf, self->bs, 0, n, 1, &t, NULL);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(n, t.exact);
	close(pfd);
	ASSERT_EQ(0, kvt_pool_destroy(self->ctl, name));
}

/*
 * A pool whose DRAM share is much smaller than a region: each eviction
 * writes a few blocks, appended to the open region as a segment, so the
 * device holds far more than one DRAM's worth per region and nothing is
 * lost while the device has room.
 */
TEST_F_TIMEOUT(tier, small_dram_packs_regions, 240)
{
	long long dev = NSTAT(self->ctl, dev_bytes);
	long long nr = nvme_nr_regions(self->ctl);
	long long rb = NSTAT(self->ctl, region_bytes);
	char name[KVTIER_NAME_MAX];
	long long used, need;
	struct kvtier_nvme_stat ns;
	struct tally t;
	__u64 n;
	int pfd;

	ASSERT_LT(0, dev);
	ASSERT_LT(0, nr);
	/* More than one DRAM's worth per region: what regions of one write held. */
	n = nr * DRAM * 3 / 2;
	if (n * self->bs > (__u64)dev / 2)
		n = dev / 2 / self->bs;
	kvt_name(name, "smalldram");
	pfd = kvt_pool_create(self->ctl, name, self->bs, n + 16, DRAM);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, put_range(pfd, self->buf, self->bs, 0, n, 1, 0));
	ASSERT_EQ(0, nvt_sync(pfd, NULL));
	ASSERT_EQ(0, nvt_nstat(self->ctl, &ns));
	used = ns.nr_regions - ns.free_regions;
	need = (n * self->bs + rb - 1) / rb;
	TH_LOG("%llu blocks of %llu KiB, DRAM %u: %lld regions used (%lld of data), %lld lost, host WAF %.3f",
	       (unsigned long long)n, (unsigned long long)self->bs >> 10,
	       DRAM, used, need, (long long)ns.lost_blocks,
	       (double)ns.bytes_written / (double)ns.bytes_demoted);
	EXPECT_EQ(0ULL, ns.lost_blocks);
	EXPECT_EQ(0ULL, ns.reclaimed);
	/* Segment summaries take a page per DRAM's worth at most. */
	EXPECT_GE(need * (DRAM + 1) / DRAM + 2, used);
	tally_range(pfd, self->buf, self->bs, 0, n, 1, &t, NULL);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(n, t.exact);
	close(pfd);
	ASSERT_EQ(0, kvt_pool_destroy(self->ctl, name));
}

/* REPLACE of a block that has an NVMe copy: the old copy never returns. */
TEST_F(tier, replace_not_undone_by_eviction)
{
	__u64 k, next = 100;
	struct tally t;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	/* Keys 0..3 only on NVMe, 60..63 in DRAM with an NVMe copy. */
	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, 4, 2,
			       KVTIER_PUT_REPLACE));
	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 60, 4, 2,
			       KVTIER_PUT_REPLACE));
	/* Evict them all. */
	for (k = 0; k < NPUT; k++) {
		ASSERT_EQ(0, push_out(self->pfd, self->buf, self->bs, k, &next));
	}
	tally_range(self->pfd, self->buf, self->bs, 0, 4, 2, &t, NULL);
	EXPECT_EQ(4U, t.exact);
	tally_range(self->pfd, self->buf, self->bs, 60, 4, 2, &t, NULL);
	EXPECT_EQ(4U, t.exact);
	tally_range(self->pfd, self->buf, self->bs, 4, 56, 1, &t, NULL);
	EXPECT_EQ(56U, t.exact);

	/* And after detach and attach (the log is replayed oldest first). */
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	for (k = 0; k < NPUT; k++) {
		ASSERT_EQ(0, push_out(self->pfd, self->buf, self->bs, k, &next));
	}
	tally_range(self->pfd, self->buf, self->bs, 0, 4, 2, &t, NULL);
	EXPECT_EQ(4U, t.exact);
	tally_range(self->pfd, self->buf, self->bs, 60, 4, 2, &t, NULL);
	EXPECT_EQ(4U, t.exact);
}

struct reader {
	int pfd;
	__u64 bs;
	volatile int stop;
	unsigned long gets, hits, wrong;
	int err;
};

/* GET keys 0..NPUT-1 round and round: every hit whole and of its key. */
static void *reader_fn(void *arg)
{
	struct reader *r = arg;
	void *buf = kvt_alloc(r->bs);
	__u64 i;

	if (!buf) {
		r->err = -ENOMEM;
		return NULL;
	}
	for (i = 0; !r->stop; i++) {
		__u64 k = (i * 37) % NPUT;
		int ret = kvt_get1(r->pfd, K0, k, buf, NULL);

		r->gets++;
		if (ret == -ENOENT)
			continue;
		if (ret) {
			r->err = ret;
			break;
		}
		r->hits++;
		if (kvt_check(buf, r->bs, K0, k, NULL) != -1)
			r->wrong++;
	}
	kvt_free(buf, r->bs);
	return NULL;
}

/*
 * DROP and REPLACE of blocks whose DRAM copy is being evicted (a reader
 * keeps loading blocks back, so clean ones are evicted all the time):
 * each block's pages are freed once, nothing reads back wrong, and the
 * residency counts come back to zero once every key is dropped.
 */
TEST_F_TIMEOUT(tier, drop_races_eviction, 120)
{
	struct reader r = { .pfd = self->pfd, .bs = self->bs };
	__u64 gen[NPUT], k, i, ops = 0;
	struct kvtier_pool_stat st;
	struct tally t;
	pthread_t th;
	double until;
	int ret = 0;

	for (k = 0; k < NPUT; k++)
		gen[k] = 1;
	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(0, pthread_create(&th, NULL, reader_fn, &r));
	until = nvt_now() + 4;
	for (i = 0; nvt_now() < until && !ret; i++) {
		k = kvt_mix(i ^ salt) % NPUT;
		if (i % 3 == 0) {
			ret = kvt_drop1(self->pfd, K0, k);
			if (ret == -ENOENT)
				ret = 0;
		}
		if (!ret) {
			kvt_fill(self->buf, self->bs, K0, k, GEN(++gen[k]));
			ret = kvt_one(self->pfd, KVTIER_IOC_PUT, K0, k,
				      self->buf, KVTIER_PUT_REPLACE, NULL);
		}
		/* Clean again, so that evictions keep happening. */
		if (!ret && i % 16 == 15)
			ret = nvt_sync(self->pfd, NULL);
		ops++;
	}
	r.stop = 1;
	pthread_join(th, NULL);
	TH_LOG("%llu drops and replaces, %lu GETs (%lu hits) alongside",
	       (unsigned long long)ops, r.gets, r.hits);
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, r.err);
	EXPECT_EQ(0UL, r.wrong);
	EXPECT_LT(0UL, r.hits);

	/* Each key holds its last generation (or was evicted unwritten). */
	for (k = 0; k < NPUT; k++) {
		tally_range(self->pfd, self->out, self->bs, k, 1, gen[k], &t,
			    NULL);
		EXPECT_EQ(0U, t.wrong + t.other) TH_LOG("key %llu",
							 (unsigned long long)k);
	}
	ASSERT_EQ(0, kvt_stat(self->pfd, &st));
	EXPECT_GE(DRAM, st.resident[KVTIER_TIER_DRAM]);
	for (k = 0; k < NPUT; k++) {
		ret = kvt_drop1(self->pfd, K0, k);
		EXPECT_TRUE(!ret || ret == -ENOENT);
	}
	ASSERT_EQ(0, kvt_stat(self->pfd, &st));
	EXPECT_EQ(0U, st.resident[KVTIER_TIER_DRAM]);
	EXPECT_EQ(0U, st.resident[KVTIER_TIER_NVME]);
	EXPECT_EQ(0U, st.dirty);
}

/* Detach forgets what is only on NVMe; attach brings the pool back whole. */
TEST_F(tier, reattach_reopens_pool)
{
	struct kvtier_block b[NPUT];
	struct kvtier_pool_stat st;
	unsigned int i, in_dram = 0;
	__u64 written = 1;
	struct tally t;
	__u32 done;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	close(self->pfd);
	self->pfd = -1;
	ASSERT_EQ(0, nvt_detach(self->ctl));

	/* Detached: the pool lives on in DRAM, nothing on NVMe. */
	self->pfd = kvt_pool_open(self->ctl, self->name, 0);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(0, kvt_stat(self->pfd, &st));
	EXPECT_EQ(0U, st.resident[KVTIER_TIER_NVME]);
	EXPECT_GE(DRAM, st.resident[KVTIER_TIER_DRAM]);
	EXPECT_EQ(st.resident[KVTIER_TIER_DRAM], st.dirty);
	lookup_range(self->pfd, b, 0, NPUT, 0, &done);
	for (i = 0; i < NPUT; i++) {
		if (b[i].status == 0) {
			EXPECT_EQ((__u32)KVTIER_TIER_DRAM, b[i].tier);
			in_dram++;
		} else {
			EXPECT_EQ(-ENOENT, b[i].status);
		}
	}
	EXPECT_EQ(st.resident[KVTIER_TIER_DRAM], in_dram);
	close(self->pfd);
	self->pfd = -1;

	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	self->pfd = kvt_pool_open(self->ctl, self->name, 0);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(0, kvt_stat(self->pfd, &st));
	/* Every block has its durable copy again. */
	EXPECT_EQ(NPUT, st.resident[KVTIER_TIER_NVME]);
	EXPECT_EQ(0U, st.dirty);
	tally_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, &t, NULL);
	EXPECT_EQ(NPUT, t.exact);
	EXPECT_EQ(0, PSTAT(self->pfd, bad_reads));
	ASSERT_EQ(0, nvt_sync(self->pfd, &written));
	EXPECT_EQ(0U, written);
	/* Dropping all of them leaves the counters at zero. */
	for (i = 0; i < NPUT; i++) {
		ASSERT_EQ(0, kvt_drop1(self->pfd, K0, i));
	}
	ASSERT_EQ(0, kvt_stat(self->pfd, &st));
	EXPECT_EQ(0U, st.resident[KVTIER_TIER_NVME]);
	EXPECT_EQ(0U, st.resident[KVTIER_TIER_DRAM]);
	EXPECT_EQ(0U, st.dirty);
}

/* A block replaced while detached is not confused with its old copy. */
TEST_F(tier, replace_while_detached)
{
	__u64 next = 100;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(KVTIER_TIER_DRAM, key_tier(self->pfd, NPUT - 1));
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, NPUT - 1, 1, 2,
			       KVTIER_PUT_REPLACE));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	/* Push it out of DRAM, then read it back. */
	ASSERT_EQ(0, push_out(self->pfd, self->buf, self->bs, NPUT - 1, &next));
	ASSERT_EQ(0, get_check(self->pfd, self->buf, self->bs, NPUT - 1, 2));
}

/* What the format document says is where it says. */
TEST_F_TIMEOUT(tier, on_disk_layout, 120)
{
	size_t tlen = NVT_POOL_SLOTS * sizeof(struct nvt_disk_pool);
	struct nvt_disk_pool *table = kvt_alloc(tlen), *mine = NULL;
	struct kvtier_nvme_stat ns;
	struct nvt_disk_sb sb;
	struct nvt_loc locs[NPUT];
	unsigned int i;
	int find;

	ASSERT_NE(NULL, table);
	ASSERT_EQ(0, put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(0, nvt_nstat(self->ctl, &ns));

	ASSERT_EQ(0, nvt_read_sb(nvt_dev(), &sb));
	EXPECT_EQ(0, memcmp(sb.uuid, ns.uuid, 16));
	EXPECT_EQ(ns.region_bytes, sb.region_bytes);
	EXPECT_EQ(ns.nr_regions, sb.nr_regions);

	ASSERT_EQ(0, nvt_raw_read(nvt_dev(), NVT_POOL_TABLE_OFF, table, tlen));
	for (i = 0; i < NVT_POOL_SLOTS; i++)
		if (table[i].id && !strcmp((char *)table[i].name, self->name))
			mine = &table[i];
	ASSERT_NE(NULL, mine);
	EXPECT_EQ(self->bs, mine->block_size);
	EXPECT_EQ(CAP, mine->capacity);
	EXPECT_EQ(DRAM, mine->dram_blocks);
	EXPECT_EQ(0600U, mine->mode);
	EXPECT_EQ(getuid(), mine->uid);
	EXPECT_EQ(getgid(), mine->gid);

	find = nvt_find_blocks_of(nvt_dev(), 0, K0, 0, NPUT, locs);
	ASSERT_TRUE(find == 0 || find == -ENOENT);
	for (i = 0; i < NPUT; i++) {
		struct nvt_loc loc = locs[i];
		int ret = loc.copies ? 0 : -ENOENT;
		long bad = -2;
		/* One copy, this pool's, inside its region after the summary. */
		bool ok = !ret && loc.copies == 1 && loc.pool_id == mine->id &&
			  loc.pages == self->bs / NVT_DISK_PAGE && loc.seq >= 1 &&
			  loc.region_off < loc.data_off &&
			  loc.data_off + self->bs <= loc.region_off + ns.region_bytes;

		if (ok && !nvt_raw_read(nvt_dev(), loc.data_off, self->out,
					self->bs))
			bad = kvt_check_gen(self->out, self->bs, K0, i, GEN(1));
		if (!ok || bad != -1)
			TH_LOG("key %u: find %d, copies %u, pool %llx (table %llx), pages %u, seq %llu, region at %llu, data at %llu, bad word %ld",
			       i, ret, loc.copies,
			       (unsigned long long)loc.pool_id,
			       (unsigned long long)mine->id, loc.pages,
			       (unsigned long long)loc.seq,
			       (unsigned long long)loc.region_off,
			       (unsigned long long)loc.data_off, bad);
		ASSERT_TRUE(ok);
		ASSERT_EQ(-1, bad);
	}

	/* Destroying the pool clears its slot. */
	close(self->pfd);
	self->pfd = -1;
	ASSERT_EQ(0, kvt_pool_destroy(self->ctl, self->name));
	ASSERT_EQ(0, nvt_raw_read(nvt_dev(), NVT_POOL_TABLE_OFF, table, tlen));
	ASSERT_EQ(0U, table[mine - table].id);
	kvt_free(table, tlen);
}

/* A pool destroyed while attached does not come back at the next attach. */
TEST_F(tier, destroyed_pool_not_restored)
{
	char name[KVTIER_NAME_MAX];
	int pfd;

	kvt_name(name, "gone");
	pfd = kvt_pool_create(self->ctl, name, self->bs, CAP, DRAM);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, put_range(pfd, self->buf, self->bs, 0, 16, 1, 0));
	ASSERT_EQ(0, nvt_sync(pfd, NULL));
	close(pfd);
	ASSERT_EQ(0, kvt_pool_destroy(self->ctl, name));
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	ASSERT_EQ(-ENOENT, kvt_pool_open(self->ctl, name, 0));
	/* A new pool of that name starts empty (another pool id). */
	pfd = kvt_pool_create(self->ctl, name, self->bs, CAP, DRAM);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(-ENOENT, kvt_lookup1(pfd, K0, 0, NULL));
	close(pfd);
	ASSERT_EQ(0, kvt_pool_destroy(self->ctl, name));
}

/*
 * Put NPUT blocks, SYNC, and detach: keys 0..NCOLD-1 are then only on the
 * device (checked by LOOKUP before the detach).
 */
static int cold_and_detached(FIXTURE_DATA(tier) *self)
{
	int ret, k;

	ret = put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0);
	if (!ret)
		ret = nvt_sync(self->pfd, NULL);
	for (k = 0; !ret && k < 4; k++)
		if (key_tier(self->pfd, k) != KVTIER_TIER_NVME)
			ret = -EPROTO;
	if (!ret)
		ret = nvt_detach(self->ctl);
	return ret;
}

/* One flipped byte in a block's data: a miss, counted in bad_reads. */
TEST_F(tier, corrupt_data_is_miss)
{
	struct nvt_loc loc;
	struct tally t;

	ASSERT_EQ(0, cold_and_detached(self));
	ASSERT_EQ(0, nvt_find_block(nvt_dev(), K0, 0, &loc));
	ASSERT_EQ(0, nvt_raw_read(nvt_dev(), loc.data_off, self->out, self->bs));
	ASSERT_EQ(-1, kvt_check_gen(self->out, self->bs, K0, 0, GEN(1)));
	ASSERT_EQ(0, nvt_raw_flip(nvt_dev(), loc.data_off + self->bs / 2 + 5,
				  0x10));

	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	ASSERT_EQ(0, PSTAT(self->pfd, bad_reads));
	ASSERT_EQ(-ENOENT, get_check(self->pfd, self->buf, self->bs, 0, 1));
	ASSERT_EQ(1, PSTAT(self->pfd, bad_reads));
	/* Dropped: a plain miss from now on. */
	ASSERT_EQ(-ENOENT, kvt_lookup1(self->pfd, K0, 0, NULL));
	ASSERT_EQ(-ENOENT, get_check(self->pfd, self->buf, self->bs, 0, 1));
	ASSERT_EQ(1, PSTAT(self->pfd, bad_reads));
	tally_range(self->pfd, self->buf, self->bs, 1, NPUT - 1, 1, &t, NULL);
	EXPECT_EQ(NPUT - 1, t.exact);
	EXPECT_EQ(1, PSTAT(self->pfd, bad_reads));
}

/* The same through LOOKUP with LOAD and through an mmap fault. */
TEST_F(tier, corrupt_data_load_and_fault)
{
	size_t len = (size_t)CAP * self->bs;
	struct kvtier_block b[3];
	struct nvt_loc loc;
	__u32 done;
	char *map;
	int k;

	ASSERT_EQ(0, cold_and_detached(self));
	for (k = 1; k <= 2; k++) {
		ASSERT_EQ(0, nvt_find_block(nvt_dev(), K0, k, &loc));
		ASSERT_EQ(0, nvt_raw_flip(nvt_dev(), loc.data_off + 100, 0x01));
	}
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));

	/* LOOKUP LOAD [0, 1, 3]: 0 loads, 1 fails to verify and ends it. */
	kvt_blk(&b[0], K0, 0, NULL);
	kvt_blk(&b[1], K0, 1, NULL);
	kvt_blk(&b[2], K0, 3, NULL);
	ASSERT_EQ(0, kvt_batch(self->pfd, KVTIER_IOC_LOOKUP, b, 3,
			       KVTIER_LOOKUP_LOAD, &done));
	EXPECT_EQ(1U, done);
	EXPECT_EQ((__u32)KVTIER_TIER_DRAM, b[0].tier);
	EXPECT_NE(0, b[1].status);
	EXPECT_EQ((__u32)KVTIER_TIER_NONE, b[1].tier);
	EXPECT_EQ(1, PSTAT(self->pfd, bad_reads));
	EXPECT_EQ(-ENOENT, kvt_lookup1(self->pfd, K0, 1, NULL));

	/* A fault on key 2 (corrupt): SIGBUS, never wrong bytes. */
	ASSERT_EQ(0, kvt_lookup1(self->pfd, K0, 2, &b[0]));
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, self->pfd, 0);
	ASSERT_NE(MAP_FAILED, map);
	EXPECT_EQ(SIGBUS, probe_read(map + b[0].addr * self->bs, self->out,
				     self->bs));
	EXPECT_EQ(2, PSTAT(self->pfd, bad_reads));
	EXPECT_EQ(-ENOENT, kvt_lookup1(self->pfd, K0, 2, NULL));
	munmap(map, len);
	ASSERT_EQ(0, get_check(self->pfd, self->buf, self->bs, 0, 1));
	ASSERT_EQ(0, get_check(self->pfd, self->buf, self->bs, 3, 1));
}

/* A region whose summary is corrupt is empty: its blocks are misses. */
TEST_F_TIMEOUT(tier, corrupt_summary_drops_region, 120)
{
	__u64 in_region[NPUT] = { 0 };
	struct nvt_loc loc, locs[NPUT];
	unsigned int k;
	int ret;

	ASSERT_EQ(0, cold_and_detached(self));
	/* One scan of the device for all of them: 64 are slow under KASAN. */
	ASSERT_EQ(0, nvt_find_blocks_of(nvt_dev(), 0, K0, 0, NPUT, locs));
	loc = locs[0];
	for (k = 0; k < NPUT; k++)
		in_region[k] = locs[k].region == loc.region;
	/* One bit of the first record's key. */
	ASSERT_EQ(0, nvt_raw_flip(nvt_dev(), loc.region_off + 64 + 8, 0x80));

	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	for (k = 0; k < NPUT; k++) {
		ret = get_check(self->pfd, self->buf, self->bs, k, 1);
		if (ret && !(ret == -ENOENT && in_region[k]))
			TH_LOG("key %u (in the region: %llu): %d", k,
			       (unsigned long long)in_region[k], ret);
		if (ret == -ENOENT) {
			ASSERT_TRUE(!!in_region[k]);
		} else {
			ASSERT_EQ(0, ret);
		}
	}
	ASSERT_EQ(-ENOENT, get_check(self->pfd, self->buf, self->bs, 0, 1));
	/* Nothing was read that did not verify: the region was skipped. */
	EXPECT_EQ(0, PSTAT(self->pfd, bad_reads));
}

/* Another block's bytes at a block's place: a miss. */
TEST_F(tier, misplaced_copy_is_miss)
{
	struct nvt_loc a, b;

	ASSERT_EQ(0, cold_and_detached(self));
	ASSERT_EQ(0, nvt_find_block(nvt_dev(), K0, 0, &a));
	ASSERT_EQ(0, nvt_find_block(nvt_dev(), K0, 1, &b));
	ASSERT_EQ(0, nvt_raw_read(nvt_dev(), a.data_off, self->out, self->bs));
	ASSERT_EQ(0, nvt_raw_write(nvt_dev(), b.data_off, self->out, self->bs));

	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	ASSERT_EQ(-ENOENT, get_check(self->pfd, self->buf, self->bs, 1, 1));
	ASSERT_EQ(1, PSTAT(self->pfd, bad_reads));
	ASSERT_EQ(0, get_check(self->pfd, self->buf, self->bs, 0, 1));
}

/*
 * Every fresh allocation of the segment writer fails: it goes on from the
 * device's reserve, one segment at a time. Evictions still demote instead
 * of dropping, SYNC ends, every block comes back exact and detach does not
 * wait for ever (a writer that gave up left its queue full and them all
 * waiting). Needs the fail_writer point; skipped without it.
 */
TEST_F_TIMEOUT(tier, writer_out_of_memory, 180)
{
	const long long times = 1000000;
	struct kvtier_pool_stat st;
	long long left;
	struct tally t;
	int put, sync;

	if (access(FAIL_WRITER "times", W_OK))
		SKIP(return, "no %s: kernel without CONFIG_FAULT_INJECTION_DEBUG_FS",
		     FAIL_WRITER);
	ASSERT_EQ(0, fail_writer_set("verbose", 0));
	ASSERT_EQ(0, fail_writer_set("interval", 1));
	ASSERT_EQ(0, fail_writer_set("times", times));
	ASSERT_EQ(0, fail_writer_set("probability", 100));
	put = put_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, 0);
	sync = put ? put : nvt_sync_deadline(self->pfd, 60, NULL);
	left = fail_writer_get("times");
	ASSERT_EQ(0, fail_writer_set("probability", 0));
	ASSERT_EQ(0, put);
	ASSERT_EQ(0, sync);
	/* Failures were injected: every segment came from the reserve. */
	EXPECT_LT(left, times);
	EXPECT_LE(0, left);
	TH_LOG("%lld writer allocations failed", times - left);

	ASSERT_EQ(0, kvt_stat(self->pfd, &st));
	EXPECT_EQ(0U, st.dirty);
	EXPECT_LE(NCOLD, st.demotions);
	EXPECT_EQ(NPUT, st.resident[KVTIER_TIER_NVME]);
	tally_range(self->pfd, self->buf, self->bs, 0, NPUT, 1, &t, NULL);
	EXPECT_EQ(NPUT, t.exact);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0, nvt_detach_deadline(60));
}

/* ==== several devices ==================================================== */

#define DEV2		"/dev/nvme1n1"
#define MULTI_BS	(64 * KVT_KIB)
#define MULTI_N		600U

FIXTURE(multi) {
	struct nvt_fix;
};

/* Both devices attached, a pool of 2048 blocks. */
static const struct nvt_cfg multi_cfg = {
	.block_size = MULTI_BS, .tag = "multi", .capacity = 2048,
	.dram_blocks = DRAM, .attach = true, .dev2 = DEV2, .attach2 = true,
};

FIXTURE_SETUP(multi)
{
	nvt_setup(_metadata, NVT_FIX(self), &multi_cfg);
}

FIXTURE_TEARDOWN(multi)
{
	nvt_teardown(NVT_FIX(self));
}

static int nstat_dev(int ctl, __u32 index, struct kvtier_nvme_stat *ns)
{
	memset(ns, 0, sizeof(*ns));
	ns->flags = KVTIER_NVME_STAT_DEV;
	ns->dev_index = index;
	return kvt_ioctl(ctl, KVTIER_IOC_NVME_STAT, ns);
}

static int detach_path(int ctl, const char *path)
{
	struct kvtier_nvme_detach d;

	memset(&d, 0, sizeof(d));
	d.path = (__u64)(uintptr_t)path;
	return kvt_ioctl(ctl, KVTIER_IOC_NVME_DETACH, &d);
}

/* Two devices: demotion uses both; the sum is the sum of the devices. */
TEST_F_TIMEOUT(multi, demotion_spreads, 240)
{
	struct kvtier_nvme_stat all, d0, d1;
	struct tally t;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, MULTI_BS, 0, MULTI_N, 1,
			       0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(0, nvt_nstat(self->ctl, &all));
	ASSERT_EQ(0, nstat_dev(self->ctl, 0, &d0));
	ASSERT_EQ(0, nstat_dev(self->ctl, 1, &d1));
	TH_LOG("demoted: device 0 %llu MiB, device 1 %llu MiB",
	       (unsigned long long)d0.bytes_demoted >> 20,
	       (unsigned long long)d1.bytes_demoted >> 20);
	EXPECT_EQ(2U, all.attached);
	EXPECT_EQ(1U, d0.attached);
	EXPECT_EQ(1U, d1.attached);
	EXPECT_LT(0ULL, d0.bytes_demoted);
	EXPECT_LT(0ULL, d1.bytes_demoted);
	EXPECT_EQ(d0.bytes_demoted + d1.bytes_demoted, all.bytes_demoted);
	EXPECT_EQ(d0.dev_bytes + d1.dev_bytes, all.dev_bytes);
	EXPECT_EQ(d0.nr_regions + d1.nr_regions, all.nr_regions);
	EXPECT_NE(0, memcmp(d0.uuid, d1.uuid, 16));
	tally_range(self->pfd, self->buf, MULTI_BS, 0, MULTI_N, 1, &t, NULL);
	EXPECT_EQ(MULTI_N, t.exact);
	EXPECT_EQ(0U, t.wrong);
}

/*
 * Detaching one device: blocks only there are misses, the others stay;
 * attached again, its blocks come back exact.
 */
TEST_F_TIMEOUT(multi, detach_one_attach_again, 240)
{
	struct tally t;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, MULTI_BS, 0, MULTI_N, 1,
			       0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(-EBUSY, nvt_attach(self->ctl, DEV2, 0, 0));
	ASSERT_EQ(0, detach_path(self->ctl, DEV2));
	ASSERT_EQ(-ENODEV, detach_path(self->ctl, DEV2));
	ASSERT_EQ(1, nvt_attached(self->ctl));
	tally_range(self->pfd, self->buf, MULTI_BS, 0, MULTI_N, 1, &t, NULL);
	TH_LOG("device 1 detached: %u exact, %u misses", t.exact, t.miss);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0U, t.eio);
	EXPECT_LT(0U, t.exact);
	EXPECT_LT(0U, t.miss);
	EXPECT_EQ(MULTI_N, t.exact + t.miss);

	/* The pool is recorded on it: its blocks there come back. */
	ASSERT_EQ(0, nvt_attach(self->ctl, DEV2, 0, 0));
	ASSERT_EQ(2, nvt_attached(self->ctl));
	tally_range(self->pfd, self->buf, MULTI_BS, 0, MULTI_N, 1, &t, NULL);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(MULTI_N, t.exact);
}

/* A pool created with one device is recorded on a device attached later. */
TEST_F_TIMEOUT(multi, pool_recorded_on_new_device, 240)
{
	struct tally t;

	ASSERT_EQ(0, detach_path(self->ctl, DEV2));
	ASSERT_EQ(0, nvt_attach(self->ctl, DEV2, KVTIER_NVME_FORMAT, 0));
	ASSERT_EQ(0, put_range(self->pfd, self->buf, MULTI_BS, 0, MULTI_N, 1,
			       0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	/* Both gone, then back: every block from one device or the other. */
	close(self->pfd);
	self->pfd = -1;
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(0, nvt_attached(self->ctl));
	ASSERT_EQ(0, nvt_attach(self->ctl, DEV2, 0, 0));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	self->pfd = kvt_pool_open(self->ctl, self->name, 0);
	ASSERT_LE(0, self->pfd);
	tally_range(self->pfd, self->buf, MULTI_BS, 0, MULTI_N, 1, &t, NULL);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(MULTI_N, t.exact);
}

/* At most KVTIER_NVME_MAX devices; the same device once. */
TEST_F(multi, device_limit)
{
	static const char * const names[] = { DM_M0, DM_M1, DM_M2, DM_M3 };
	char table[256], path[64];
	unsigned int i;

	if (!nvt_dm_target(NVT_DM_ERROR))
		SKIP(return, "no device-mapper");
	ASSERT_EQ(-EBUSY, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	close(self->pfd);
	self->pfd = -1;
	ASSERT_EQ(0, detach_path(self->ctl, DEV2));
	/* Four 64 MiB slices of the second drive. */
	for (i = 0; i < 4; i++) {
		snprintf(table, sizeof(table), "0 131072 linear %s %u", DEV2,
			 i * 131072);
		ASSERT_EQ(0, nvt_dm_create(names[i], table));
	}
	for (i = 0; i < 4; i++) {
		int want = i < 3 ? 0 : -EBUSY;

		snprintf(path, sizeof(path), "/dev/mapper/%s", names[i]);
		ASSERT_EQ(want, nvt_attach(self->ctl, path, KVTIER_NVME_FORMAT,
					   1024));
	}
	ASSERT_EQ(KVTIER_NVME_MAX, nvt_attached(self->ctl));
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(0, nvt_attached(self->ctl));
}

/* ==== a log that wraps round: a small device ============================ */

FIXTURE(wrap) {
	struct nvt_fix;
};

#define WRAP_MIB	64	/* device size */
#define WRAP_BS		(64 * KVT_KIB)
#define WRAP_DRAM	32U
#define WRAP_HOT	16U

/* A 64 MiB dm device with 1 MiB regions; a pool of 4096 blocks. */
static const struct nvt_cfg wrap_cfg = {
	.block_size = WRAP_BS, .tag = "wrap", .capacity = 4096,
	.dram_blocks = WRAP_DRAM, .dm = DM_SMALL, .dm_mib = WRAP_MIB,
	.attach = true, .region_kib = 1024,
};

FIXTURE_SETUP(wrap)
{
	nvt_setup(_metadata, NVT_FIX(self), &wrap_cfg);
}

FIXTURE_TEARDOWN(wrap)
{
	nvt_teardown(NVT_FIX(self));
}

/*
 * Blocks in use survive the log wrapping round: a hot set read between
 * batches of cold PUTs keeps its copies out of the regions being reclaimed
 * (rescued while still in DRAM), while cold blocks are reclaimed.
 */
TEST_F_TIMEOUT(wrap, hot_blocks_survive, 300)
{
	long long nr = nvme_nr_regions(self->ctl), cold_total;
	__u64 next = 1000, round = 0;
	struct kvtier_nvme_stat ns;
	unsigned int misses = 0;
	struct tally t;

	ASSERT_LT(0, nr);
	ASSERT_EQ(0, put_range(self->pfd, self->buf, WRAP_BS, 0, WRAP_HOT, 1,
			       0));
	/* Enough cold data to go round the log twice and a half. */
	cold_total = nr * (1024 * KVT_KIB / WRAP_BS) * 5 / 2;
	while (next - 1000 < (__u64)cold_total) {
		ASSERT_EQ(0, put_range(self->pfd, self->buf, WRAP_BS, next,
				       3 * WRAP_HOT, 1, 0));
		next += 3 * WRAP_HOT;
		tally_range(self->pfd, self->buf, WRAP_BS, 0, WRAP_HOT, 1, &t,
			    NULL);
		ASSERT_EQ(0U, t.wrong);
		if (t.exact != WRAP_HOT && !misses++)
			TH_LOG("round %llu: %u of %u hot blocks exact",
			       (unsigned long long)round, t.exact, WRAP_HOT);
		round++;
	}
	ASSERT_EQ(0, nvt_nstat(self->ctl, &ns));
	TH_LOG("%llu rounds, %llu cold blocks: %llu regions reclaimed, %llu blocks lost, %llu rescued",
	       (unsigned long long)round, (unsigned long long)(next - 1000),
	       (unsigned long long)ns.reclaimed,
	       (unsigned long long)ns.lost_blocks,
	       (unsigned long long)ns.rescued);
	EXPECT_LT((__u64)nr, ns.reclaimed);	/* the log went round */
	EXPECT_LT(0ULL, ns.lost_blocks);	/* cold blocks went */
	EXPECT_LT(0ULL, ns.rescued);
	EXPECT_EQ(0U, misses);
	/* Cold blocks still held read back exact or miss, never wrong. */
	tally_range(self->pfd, self->buf, WRAP_BS, 1000, next - 1000, 1, &t,
		    NULL);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0U, t.eio);
	EXPECT_LT(0U, t.exact);
}

/* ==== faults injected with device-mapper ================================ */

FIXTURE(dm) {
	struct nvt_fix;		/* sectors, linear: of DM_FAULT */
};

#define DM_BS	(16 * KVT_KIB)
#define DM_PATH	"/dev/mapper/" DM_FAULT

/*
 * DM_FAULT, linear over the whole device, attached; a pool of 512 blocks.
 * The tests swap its table; the teardown puts the linear one back.
 */
static const struct nvt_cfg dm_cfg = {
	.block_size = DM_BS, .tag = "dm", .capacity = 512, .dram_blocks = DRAM,
	.dm_need = NVT_DM_FLAKEY | NVT_DM_ERROR, .dm = DM_FAULT,
	.attach = true, .reattach = true, .heal = true,
};

FIXTURE_SETUP(dm)
{
	nvt_setup(_metadata, NVT_FIX(self), &dm_cfg);
}

FIXTURE_TEARDOWN(dm)
{
	nvt_teardown(NVT_FIX(self));
}

/* A flakey table that is always down, with @features. */
static int dm_flakey(FIXTURE_DATA(dm) *self, const char *features)
{
	char table[512];

	snprintf(table, sizeof(table), "0 %lld flakey %s 0 0 1 %s",
		 self->sectors, nvt_dev(), features);
	return nvt_dm_reload(DM_FAULT, table);
}

static int dm_healthy(FIXTURE_DATA(dm) *self)
{
	return nvt_dm_reload(DM_FAULT, self->linear);
}

/*
 * Write errors: demotions fail, PUT does not; every block is exact or a
 * miss; SYNC reports -EIO (in bounded time); healed, all works again.
 */
TEST_F_TIMEOUT(dm, write_errors, 240)
{
	long long written, demoted;
	struct tally t;
	unsigned int i;

	written = NSTAT(self->ctl, bytes_written);
	demoted = NSTAT(self->ctl, bytes_demoted);
	ASSERT_EQ(0, dm_flakey(self, "1 error_writes"));
	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, 0));
	EXPECT_LT(0, NSTAT(self->ctl, io_errors));
	/* Failed writes wrote nothing and demoted nothing. */
	EXPECT_EQ(written, NSTAT(self->ctl, bytes_written));
	EXPECT_EQ(demoted, NSTAT(self->ctl, bytes_demoted));
	EXPECT_EQ(0, PSTAT(self->pfd, demotions));
	tally_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, &t, NULL);
	TH_LOG("write errors: %u exact, %u miss", t.exact, t.miss);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0U, t.eio);
	EXPECT_EQ(0U, t.other);
	EXPECT_EQ(NPUT, t.exact + t.miss);
	for (i = NPUT - 4; i < NPUT; i++) {
		EXPECT_EQ(0, get_check(self->pfd, self->buf, DM_BS, i, 1));
	}
	EXPECT_EQ(-EIO, nvt_sync_deadline(self->pfd, 15, NULL));

	ASSERT_EQ(0, dm_healthy(self));
	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 100, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync_deadline(self->pfd, 15, NULL));
	EXPECT_EQ(0, PSTAT(self->pfd, dirty));
	tally_range(self->pfd, self->buf, DM_BS, 100, NPUT, 1, &t, NULL);
	EXPECT_EQ(NPUT, t.exact);
	tally_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, &t, NULL);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(NPUT, t.exact + t.miss);
}

/* Every I/O fails: reads of cold blocks are misses, never a hang. */
TEST_F_TIMEOUT(dm, read_errors_are_misses, 240)
{
	int status[NPUT], again[NPUT];
	struct tally t;
	unsigned int i;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(0, dm_flakey(self, "0"));
	tally_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, &t, status);
	TH_LOG("read errors: %u exact, %u miss, %u eio", t.exact, t.miss, t.eio);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0U, t.other);
	/* A read that fails is a miss (userspace-api.rst), not -EIO. */
	EXPECT_EQ(0U, t.eio);
	EXPECT_LE(NCOLD, t.miss + t.eio);
	EXPECT_EQ(t.miss + t.eio, PSTAT(self->pfd, bad_reads));
	EXPECT_LT(0, NSTAT(self->ctl, io_errors));

	/* Healed: what failed is gone, the rest reads exact. */
	ASSERT_EQ(0, dm_healthy(self));
	tally_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, &t, again);
	EXPECT_EQ(0U, t.wrong);
	for (i = 0; i < NPUT; i++) {
		if (again[i] != (status[i] ? -ENOENT : 0))
			TH_LOG("key %u: %d then %d", i, status[i], again[i]);
		ASSERT_EQ(status[i] ? -ENOENT : 0, again[i]);
	}
}

/* Writes silently dropped: what reads back does not verify, a miss. */
TEST_F_TIMEOUT(dm, dropped_writes_are_misses, 240)
{
	struct tally t;

	ASSERT_EQ(0, dm_flakey(self, "1 drop_writes"));
	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, 0));
	EXPECT_LE(NCOLD, PSTAT(self->pfd, demotions));
	tally_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, &t, NULL);
	TH_LOG("dropped writes: %u exact, %u miss", t.exact, t.miss);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0U, t.eio);
	EXPECT_EQ(0U, t.other);
	EXPECT_LE(NCOLD, t.miss);
	EXPECT_EQ(t.miss, PSTAT(self->pfd, bad_reads));

	ASSERT_EQ(0, dm_healthy(self));
	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 100, NPUT, 1, 0));
	tally_range(self->pfd, self->buf, DM_BS, 100, NPUT, 1, &t, NULL);
	EXPECT_EQ(NPUT, t.exact);
}

/* Reads corrupted in flight (dm-flakey corrupt_bio_byte): misses. */
TEST_F_TIMEOUT(dm, corrupted_reads_are_misses, 240)
{
	struct nvt_loc loc;
	struct tally t;
	char *raw;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(0, nvt_find_block(DM_PATH, K0, 0, &loc));
	ASSERT_EQ(0, dm_flakey(self, "5 corrupt_bio_byte 64 r 1 0"));
	/* Does this kernel's dm-flakey corrupt reads at all? */
	raw = kvt_alloc(DM_BS);
	ASSERT_NE(NULL, raw);
	ASSERT_EQ(0, nvt_raw_read(DM_PATH, loc.data_off, raw, DM_BS));
	if (kvt_check_gen(raw, DM_BS, K0, 0, GEN(1)) == -1) {
		kvt_free(raw, DM_BS);
		SKIP(return, "dm-flakey corrupt_bio_byte does not corrupt reads here");
	}
	kvt_free(raw, DM_BS);
	tally_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, &t, NULL);
	TH_LOG("corrupted reads: %u exact, %u miss", t.exact, t.miss);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0U, t.eio);
	EXPECT_LE(NCOLD, t.miss);
	EXPECT_EQ(t.miss, PSTAT(self->pfd, bad_reads));
}

/* An unreadable range under one block: that block alone is a miss. */
TEST_F_TIMEOUT(dm, unreadable_block_is_miss, 240)
{
	long long s0, n0;
	struct nvt_loc loc;
	struct tally t;
	char table[1024];
	int len;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	ASSERT_EQ(KVTIER_TIER_NVME, key_tier(self->pfd, 5));
	ASSERT_EQ(0, nvt_find_block(DM_PATH, K0, 5, &loc));
	s0 = loc.data_off / 512;
	n0 = DM_BS / 512;
	len = snprintf(table, sizeof(table),
		       "0 %lld linear %s 0\n%lld %lld error\n"
		       "%lld %lld linear %s %lld",
		       s0, nvt_dev(), s0, n0, s0 + n0,
		       self->sectors - s0 - n0, nvt_dev(), s0 + n0);
	ASSERT_GT((int)sizeof(table), len);
	ASSERT_EQ(0, nvt_dm_reload(DM_FAULT, table));

	ASSERT_EQ(-ENOENT, get_check(self->pfd, self->buf, DM_BS, 5, 1));
	EXPECT_EQ(1, PSTAT(self->pfd, bad_reads));
	EXPECT_EQ(-ENOENT, kvt_lookup1(self->pfd, K0, 5, NULL));
	tally_range(self->pfd, self->buf, DM_BS, 0, 5, 1, &t, NULL);
	EXPECT_EQ(5U, t.exact);
	tally_range(self->pfd, self->buf, DM_BS, 6, NPUT - 6, 1, &t, NULL);
	EXPECT_EQ(NPUT - 6, t.exact);
	EXPECT_EQ(1, PSTAT(self->pfd, bad_reads));
}

/* The whole device turns into the error target while attached. */
TEST_F_TIMEOUT(dm, device_fails_while_attached, 240)
{
	char table[256];
	struct tally t;
	unsigned int i;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, 0));
	ASSERT_EQ(0, nvt_sync(self->pfd, NULL));
	snprintf(table, sizeof(table), "0 %lld error", self->sectors);
	ASSERT_EQ(0, nvt_dm_reload(DM_FAULT, table));

	/* PUT never fails because of the device. */
	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 100, NPUT, 1, 0));
	for (i = 100 + NPUT - 4; i < 100 + NPUT; i++) {
		EXPECT_EQ(0, get_check(self->pfd, self->buf, DM_BS, i, 1));
	}
	tally_range(self->pfd, self->buf, DM_BS, 0, NPUT, 1, &t, NULL);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0U, t.eio);
	EXPECT_EQ(0U, t.other);
	tally_range(self->pfd, self->buf, DM_BS, 100, NPUT, 1, &t, NULL);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0U, t.eio);
	EXPECT_EQ(0U, t.other);
	EXPECT_LT(0, NSTAT(self->ctl, io_errors));
	/*
	 * The reads above needed DRAM: dirty blocks whose demotion failed
	 * were dropped. A block PUT now is dirty, and cannot be made durable.
	 */
	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 300, 1, 1, 0));
	EXPECT_EQ(-EIO, nvt_sync_deadline(self->pfd, 15, NULL));
	EXPECT_EQ(0, get_check(self->pfd, self->buf, DM_BS, 300, 1));
}

/* Detach while writes fail: it returns (the blocks stay in DRAM). */
TEST_F_TIMEOUT(dm, detach_with_write_errors, 240)
{
	unsigned int i;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 0, DRAM - 2, 1, 0));
	ASSERT_EQ(0, dm_flakey(self, "1 error_writes"));
	ASSERT_EQ(0, nvt_detach_deadline(15));
	ASSERT_EQ(0, nvt_attached(self->ctl));
	for (i = 0; i < DRAM - 2; i++) {
		EXPECT_EQ(0, get_check(self->pfd, self->buf, DM_BS, i, 1));
	}
}

/* SYNC while writes fail: -EIO in bounded time; healed, SYNC works. */
TEST_F_TIMEOUT(dm, sync_write_errors_eio, 240)
{
	__u64 written = 0;

	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 0, DRAM - 2, 1, 0));
	ASSERT_EQ(0, dm_flakey(self, "1 error_writes"));
	ASSERT_EQ(-EIO, nvt_sync_deadline(self->pfd, 15, NULL));
	EXPECT_EQ(DRAM - 2, PSTAT(self->pfd, dirty));
	ASSERT_EQ(0, dm_healthy(self));
	ASSERT_EQ(0, nvt_sync_deadline(self->pfd, 15, &written));
	EXPECT_EQ(DRAM - 2, written);
	EXPECT_EQ(0, PSTAT(self->pfd, dirty));
}

struct put_arg {
	int pfd;
	__u64 key;
	int ret;
	volatile int done;
};

static void *put_fn(void *arg)
{
	struct put_arg *p = arg;
	void *buf = kvt_alloc(DM_BS);

	if (!buf) {
		p->ret = -ENOMEM;
		return NULL;
	}
	p->ret = put_range(p->pfd, buf, DM_BS, p->key, 1, 1, 0);
	p->done = 1;
	kvt_free(buf, DM_BS);
	return NULL;
}

/* Blocks being demoted stay readable until their (slow) write is done. */
TEST_F_TIMEOUT(dm, readable_while_written, 240)
{
	struct put_arg p = { .pfd = self->pfd, .key = DRAM };
	char table[512];
	pthread_t th;
	double t0, t1;
	unsigned int i;

	if (!nvt_dm_target(NVT_DM_DELAY))
		SKIP(return, "no dm-delay");
	/* Reads at once, writes after 3 s. */
	snprintf(table, sizeof(table), "0 %lld delay %s 0 0 %s 0 3000",
		 self->sectors, nvt_dev(), nvt_dev());
	ASSERT_EQ(0, nvt_dm_reload(DM_FAULT, table));
	ASSERT_EQ(0, put_range(self->pfd, self->buf, DM_BS, 0, DRAM, 1, 0));
	/* One more PUT must demote something: it waits for the write. */
	ASSERT_EQ(0, pthread_create(&th, NULL, put_fn, &p));
	usleep(500000);
	t0 = nvt_now();
	for (i = 0; i < DRAM; i++) {
		ASSERT_EQ(0, get_check(self->pfd, self->buf, DM_BS, i, 1));
	}
	t1 = nvt_now();
	/* The PUT was still waiting for the write: they did overlap. */
	EXPECT_EQ(0, p.done);
	pthread_join(th, NULL);
	ASSERT_EQ(0, p.ret);
	TH_LOG("%u GETs during the write took %.2f s", DRAM, t1 - t0);
	ASSERT_GT(1.5, t1 - t0);
	ASSERT_EQ(0, get_check(self->pfd, self->buf, DM_BS, DRAM, 1));
}

/* ==== a device too small for what is written ============================ */

FIXTURE(full) {
	struct nvt_fix;
};

#define FULL_BS		(16 * KVT_KIB)
#define FULL_MIB	12

/* A 12 MiB dm device with 1 MiB regions; the tests make the pool. */
static const struct nvt_cfg full_cfg = {
	.block_size = FULL_BS, .tag = "full", .dm_need = NVT_DM_LINEAR,
	.dm = DM_SMALL, .dm_mib = FULL_MIB, .attach = true,
	.region_kib = 1024,
};

FIXTURE_SETUP(full)
{
	nvt_setup(_metadata, NVT_FIX(self), &full_cfg);
	ASSERT_EQ(FULL_MIB - 1, nvme_nr_regions(self->ctl));
}

FIXTURE_TEARDOWN(full)
{
	nvt_teardown(NVT_FIX(self));
}

/* Twice the device: old blocks are lost to reclaim, PUT never fails. */
TEST_F_TIMEOUT(full, wraps_and_reclaims, 300)
{
	const unsigned int n = 1500, dram = 16;
	struct kvtier_nvme_stat ns;
	unsigned int i, newest;
	struct tally t;

	self->pfd = kvt_pool_create(self->ctl, self->name, FULL_BS, 2048, dram);
	ASSERT_LE(0, self->pfd);
	for (i = 0; i < n; i++) {
		int ret = put_range(self->pfd, self->buf, FULL_BS, i, 1, 1, 0);

		if (ret)
			TH_LOG("PUT %u: %d", i, ret);
		ASSERT_EQ(0, ret);
	}
	ASSERT_EQ(0, nvt_nstat(self->ctl, &ns));
	TH_LOG("reclaimed %llu regions, lost %llu blocks",
	       (unsigned long long)ns.reclaimed,
	       (unsigned long long)ns.lost_blocks);
	EXPECT_LT(0U, ns.reclaimed);
	EXPECT_LT(0U, ns.lost_blocks);
	EXPECT_EQ(0U, ns.io_errors);

	/*
	 * A FIFO of evicted blocks: what survives is the newest ones, with no
	 * hole (LOOKUP, which moves nothing). A region holds one batch of
	 * evicted blocks, at most the pool's DRAM share (16 here), so at least
	 * one block a region for half of the 11 regions, and the DRAM share,
	 * are there.
	 */
	for (newest = 0; newest < n; newest++)
		if (kvt_lookup1(self->pfd, K0, n - 1 - newest, NULL))
			break;
	TH_LOG("the newest %u blocks are there", newest);
	EXPECT_LE(dram + (FULL_MIB - 1) / 2, newest);
	for (i = 0; i + newest < n; i++)
		EXPECT_EQ(-ENOENT, kvt_lookup1(self->pfd, K0, i, NULL));

	/*
	 * Reading them back loads old blocks whose regions the next writes
	 * reclaim: some go, but every GET is exact or a miss.
	 */
	tally_range(self->pfd, self->buf, FULL_BS, 0, n, 1, &t, NULL);
	TH_LOG("full: %u exact, %u miss", t.exact, t.miss);
	EXPECT_EQ(0U, t.wrong);
	EXPECT_EQ(0U, t.eio);
	EXPECT_EQ(0U, t.other);
	EXPECT_EQ(n, t.exact + t.miss);
	EXPECT_LT(0U, t.miss);
	EXPECT_LT(0U, t.exact);
	EXPECT_EQ(0, PSTAT(self->pfd, bad_reads));

	/* The pool keeps working. */
	ASSERT_EQ(0, put_range(self->pfd, self->buf, FULL_BS, n, 100, 2, 0));
	tally_range(self->pfd, self->buf, FULL_BS, n + 100 - dram, dram, 2, &t,
		    NULL);
	EXPECT_EQ(dram, t.exact);
	ASSERT_EQ(0, nvt_sync_deadline(self->pfd, 15, NULL));
}

/* SYNC of more dirty blocks than the device holds: -ENOSPC, no hang. */
TEST_F_TIMEOUT(full, sync_more_than_fits_enospc, 300)
{
	const unsigned int n = 1024;
	struct tally t;

	self->pfd = kvt_pool_create(self->ctl, self->name, FULL_BS, n, n);
	ASSERT_LE(0, self->pfd);
	ASSERT_EQ(0, put_range(self->pfd, self->buf, FULL_BS, 0, n, 1, 0));
	ASSERT_EQ(-ENOSPC, nvt_sync_deadline(self->pfd, 30, NULL));
	tally_range(self->pfd, self->buf, FULL_BS, 0, n, 1, &t, NULL);
	EXPECT_EQ(n, t.exact);
}

/* ==== power cuts at every point of a write log (dm-log-writes) ========= */

/*
 * dm-log-writes records every write to a device, in completion order with
 * FUA and flushes where they happened, on another device
 * (Documentation/admin-guide/device-mapper/log-writes.rst). Replaying the
 * first N entries onto the device's initial content gives what a power cut
 * after the N-th completed write leaves; the N+1-th may be torn too (a
 * device keeps any part of a write in flight: here its first page, or all
 * of it but the last page). The workload: PUT 16 blocks and
 * SYNC; REPLACE them and SYNC; REPLACE half of them again, PUT 16 new ones
 * and SYNC; a mark after each SYNC. Every prefix must attach, bring the
 * pool back, and hold every acknowledged block in its acknowledged
 * generation or a newer one, exact; nothing else may read wrong.
 */

#define LW_MAGIC	0x6a736677736872ULL
#define LW_FLUSH	(1U << 0)
#define LW_DISCARD	(1U << 2)
#define LW_MARK		(1U << 3)
#define LW_MAX		4096

struct lw_super {
	__u64 magic;
	__u64 version;
	__u64 nr_entries;
	__u32 sectorsize;
};

struct lw_entry {
	__u64 sector;
	__u64 nr_sectors;
	__u64 flags;
	__u64 data_len;
};

struct lw_op {
	__u64 off, len;		/* bytes on the device */
	__u64 flags;
	char *data;		/* NULL: zeroes (discard) */
	int mark;		/* 1.. for marks "synced1".., else 0 */
};

#define LW_BS		(16 * KVT_KIB)
#define LW_DEV_MIB	32
#define LW_BASE_PATH	"/dev/mapper/" DM_BASE
#define LW_PATH		"/dev/mapper/" DM_LW
#define LW_LOGDEV	"/dev/nvme1n1"
#define LW_POOL		"kst-nvt-replay"

FIXTURE(replay) {
	struct nvt_fix;
	struct lw_op *ops;
	unsigned int nr_ops;
	char *zero;		/* LW_DEV_MIB of zeroes */
};

/* DM_BASE: the first LW_DEV_MIB of the device; the log on LW_LOGDEV. */
static const struct nvt_cfg replay_cfg = {
	.block_size = LW_BS, .dm_need = NVT_DM_LINEAR,
	.dm_extra = "log-writes", .dm = DM_BASE, .dm_mib = LW_DEV_MIB,
	.dev2 = LW_LOGDEV,
};

FIXTURE_SETUP(replay)
{
	char table[256];

	nvt_setup(_metadata, NVT_FIX(self), &replay_cfg);
	self->ops = calloc(LW_MAX, sizeof(*self->ops));
	ASSERT_NE(NULL, self->ops);
	self->zero = kvt_alloc(LW_DEV_MIB * KVT_MIB);
	ASSERT_NE(NULL, self->zero);
	memset(self->zero, 0, LW_DEV_MIB * KVT_MIB);
	/* Initial content: zeroes; an empty log. */
	ASSERT_EQ(0, nvt_raw_write(LW_BASE_PATH, 0, self->zero,
				   LW_DEV_MIB * KVT_MIB));
	ASSERT_EQ(0, nvt_raw_write(LW_LOGDEV, 0, self->zero, KVT_MIB));
	snprintf(table, sizeof(table), "0 %llu log-writes %s %s",
		 LW_DEV_MIB * KVT_MIB / 512, LW_BASE_PATH, LW_LOGDEV);
	ASSERT_EQ(0, nvt_dm_create(DM_LW, table));
}

FIXTURE_TEARDOWN(replay)
{
	unsigned int i;

	if (self->ops)
		for (i = 0; i < self->nr_ops; i++)
			free(self->ops[i].data);
	free(self->ops);
	if (self->zero)
		kvt_free(self->zero, LW_DEV_MIB * KVT_MIB);
	nvt_teardown(NVT_FIX(self));
}

static int lw_mark(const char *what)
{
	return nvt_sh("dmsetup message %s 0 mark %s", DM_LW, what);
}

/* Read the log into self->ops; 0 or -errno. */
static int lw_parse(FIXTURE_DATA(replay) *self)
{
	size_t len = 16 * KVT_MIB;
	char *log = kvt_alloc(len);
	struct lw_super sup;
	__u64 pos, i;
	int ret;

	if (!log)
		return -ENOMEM;
	ret = nvt_raw_read(LW_LOGDEV, 0, log, len);
	if (ret)
		goto out;
	memcpy(&sup, log, sizeof(sup));
	ret = -EBADMSG;
	if (sup.magic != LW_MAGIC || sup.sectorsize < 512 ||
	    sup.sectorsize > NVT_DISK_PAGE || sup.nr_entries > LW_MAX)
		goto out;
	pos = sup.sectorsize;
	for (i = 0; i < sup.nr_entries; i++) {
		struct lw_op *op = &self->ops[self->nr_ops];
		struct lw_entry e;

		if (pos + sup.sectorsize > len)
			goto out;
		memcpy(&e, log + pos, sizeof(e));
		pos += sup.sectorsize;
		if (e.flags & LW_MARK) {
			const char *text = log + pos - sup.sectorsize + sizeof(e);

			if (e.data_len >= 7 && !strncmp(text, "synced", 6))
				op->mark = text[6] - '0';
			else
				continue;
		} else if (e.flags & LW_DISCARD) {
			op->off = e.sector * sup.sectorsize;
			op->len = e.nr_sectors * sup.sectorsize;
		} else if (e.nr_sectors) {
			op->off = e.sector * sup.sectorsize;
			op->len = e.nr_sectors * sup.sectorsize;
			if (pos + op->len > len)
				goto out;
			op->data = malloc(op->len);
			if (!op->data) {
				ret = -ENOMEM;
				goto out;
			}
			memcpy(op->data, log + pos, op->len);
			pos += op->len;
		} else {
			continue;	/* a flush: no data */
		}
		op->flags = e.flags;
		self->nr_ops++;
	}
	ret = 0;
out:
	kvt_free(log, len);
	return ret;
}

/*
 * The base device as a power cut after op @n left it, with the first
 * @torn bytes of op @n written too.
 */
static int lw_replay(FIXTURE_DATA(replay) *self, unsigned int n, __u64 torn)
{
	int fd, ret = 0;
	unsigned int i;

	fd = open(LW_BASE_PATH, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (pwrite(fd, self->zero, LW_DEV_MIB * KVT_MIB, 0) !=
	    (ssize_t)(LW_DEV_MIB * KVT_MIB))
		ret = -EIO;
	for (i = 0; !ret && i < n + !!torn; i++) {
		struct lw_op *op = &self->ops[i];
		__u64 len = i < n ? op->len : torn;
		size_t alen = (len + KVT_PAGE - 1) & ~(KVT_PAGE - 1);
		char *src;

		if (op->mark || !len)
			continue;
		/* O_DIRECT wants aligned memory. */
		src = kvt_alloc(alen);
		if (!src) {
			ret = -ENOMEM;
			break;
		}
		if (op->data)
			memcpy(src, op->data, len);
		if (pwrite(fd, src, len, op->off) != (ssize_t)len)
			ret = -EIO;
		kvt_free(src, alen);
	}
	if (!ret && fsync(fd))
		ret = -errno;
	close(fd);
	return ret;
}

/* Oldest and newest generation key @k may have after @marks SYNCs. */
static void lw_want(unsigned int k, int marks, __u64 *lo, __u64 *hi)
{
	if (k < 8) {
		*hi = 3;
		*lo = marks;			/* 0: may be absent */
	} else if (k < 16) {
		*hi = 2;
		*lo = marks < 2 ? marks : 2;
	} else {
		*hi = 1;
		*lo = marks >= 3;
	}
}

/* Check the replayed device; 0, or what went wrong (logged). */
static int lw_check(struct __test_metadata *_metadata,
		    FIXTURE_DATA(replay) *self, unsigned int n, __u64 torn,
		    int marks)
{
	int pfd, ret, bad = 0;
	unsigned int k;

	ret = nvt_attach(self->ctl, LW_BASE_PATH, 0, 0);
	if (ret) {
		TH_LOG("cut after op %u + %llu bytes (%d SYNCs done): attach %d", n,
		       (unsigned long long)torn, marks, ret);
		return ret;
	}
	pfd = kvt_pool_open(self->ctl, LW_POOL, 0);
	if (pfd < 0) {
		TH_LOG("cut after op %u + %llu bytes (%d SYNCs done): pool open %d",
		       n, (unsigned long long)torn, marks, pfd);
		bad = pfd;
		goto out_detach;
	}
	for (k = 0; k < 32; k++) {
		__u64 lo, hi, gen = 0;

		lw_want(k, marks, &lo, &hi);
		memset(self->buf, 0, LW_BS);
		ret = kvt_get1(pfd, K0, k, self->buf, NULL);
		if (!ret && kvt_check(self->buf, LW_BS, K0, k, &gen) != -1)
			ret = -EILSEQ;
		if (!ret) {
			gen ^= salt;
			if (gen >= (lo ? lo : 1) && gen <= hi)
				continue;
			TH_LOG("cut after op %u + %llu bytes (%d SYNCs done): key %u generation %llu, want %llu..%llu",
			       n, (unsigned long long)torn, marks, k,
			       (unsigned long long)gen,
			       (unsigned long long)lo, (unsigned long long)hi);
			bad = -EILSEQ;
		} else if (ret != -ENOENT || lo) {
			TH_LOG("cut after op %u + %llu bytes (%d SYNCs done): key %u: %d, want generation %llu..%llu",
			       n, (unsigned long long)torn, marks, k, ret,
			       (unsigned long long)lo,
			       (unsigned long long)hi);
			bad = ret;
		}
	}
	close(pfd);
out_detach:
	nvt_detach(self->ctl);
	/* Forget the pool (detached: the replayed device keeps its slot). */
	kvt_pool_destroy(self->ctl, LW_POOL);
	return bad;
}

TEST_F_TIMEOUT(replay, every_power_cut, 600)
{
	unsigned int n, first = 0, failed = 0;
	int pfd, marks = 0;

	/* The workload, through the logging device. */
	ASSERT_EQ(0, nvt_attach(self->ctl, LW_PATH, KVTIER_NVME_FORMAT, 1024));
	pfd = kvt_pool_create(self->ctl, LW_POOL, LW_BS, 64, 64);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, lw_mark("created"));
	ASSERT_EQ(0, put_range(pfd, self->buf, LW_BS, 0, 16, 1, 0));
	ASSERT_EQ(0, nvt_sync(pfd, NULL));
	ASSERT_EQ(0, lw_mark("synced1"));
	ASSERT_EQ(0, put_range(pfd, self->buf, LW_BS, 0, 16, 2,
			       KVTIER_PUT_REPLACE));
	ASSERT_EQ(0, nvt_sync(pfd, NULL));
	ASSERT_EQ(0, lw_mark("synced2"));
	ASSERT_EQ(0, put_range(pfd, self->buf, LW_BS, 0, 8, 3,
			       KVTIER_PUT_REPLACE));
	ASSERT_EQ(0, put_range(pfd, self->buf, LW_BS, 16, 16, 1, 0));
	ASSERT_EQ(0, nvt_sync(pfd, NULL));
	ASSERT_EQ(0, lw_mark("synced3"));
	close(pfd);
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(0, kvt_pool_destroy(self->ctl, LW_POOL));
	ASSERT_EQ(0, nvt_dm_remove(DM_LW));

	ASSERT_EQ(0, lw_parse(self));
	TH_LOG("%u writes and marks logged", self->nr_ops);
	/*
	 * Cuts from the pool's slot write on (the pool exists on the device):
	 * the last pool table write before the "created" mark. (The format's
	 * table write may reach the log split into page-sized bios too.)
	 */
	for (n = 0; n < self->nr_ops && self->ops[n].mark != 1; n++)
		if (!self->ops[n].mark &&
		    self->ops[n].off >= NVT_POOL_TABLE_OFF &&
		    self->ops[n].off < NVT_POOL_TABLE_OFF +
				       NVT_POOL_SLOTS * sizeof(struct nvt_disk_pool))
			first = n + 1;
	ASSERT_LT(0U, first);
	for (n = first; n <= self->nr_ops; n++) {
		__u64 torn[3] = { 0, NVT_DISK_PAGE, 0 };
		unsigned int t;

		if (self->ops[n - 1].mark)
			marks = self->ops[n - 1].mark;
		/* Op n (if any) torn: its first page, or all but its last. */
		if (n < self->nr_ops && self->ops[n].len > NVT_DISK_PAGE)
			torn[2] = self->ops[n].len - NVT_DISK_PAGE;
		for (t = 0; t < 3; t++) {
			if (t && !torn[2])
				break;
			ASSERT_EQ(0, lw_replay(self, n, torn[t]));
			if (lw_check(_metadata, self, n, torn[t], marks))
				failed++;
		}
	}
	ASSERT_EQ(3, marks);
	ASSERT_EQ(0U, failed);
}

TEST_HARNESS_MAIN
