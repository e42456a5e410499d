// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier NVMe tier (KVTIER_F_NVME), the commands: attach and each of its
 * rejections, the geometry FORMAT writes, the device held exclusively,
 * detach, NVMe stat and SYNC with their bad fields, blocks larger than a
 * region, a synced DROP that stays dropped across detach and attach, a
 * store of the previous format version.
 *
 * Runs as root on /dev/nvme0n1 (or $KVTIER_NVME_DEV), whose content it
 * destroys; the cases are skipped when the device is missing. The tier
 * itself is tested by nvme_tier, faults and odd devices by nvme_faults,
 * persistence across module reload and reboot by nvme-persist.sh and
 * nvme-crash.sh.
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
	int ctl = kst_ctl_open_raw();

	ASSERT_LE(0, ctl);
	ASSERT_EQ(0, kst_api(ctl, KVTIER_F_NVME, &api));
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
	raw = kst_ctl_open_raw();
	ASSERT_LE(0, raw);
	ASSERT_EQ(-EINVAL, nvt_attach(raw, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	ASSERT_EQ(-EINVAL, nvt_detach(raw));
	close(raw);
	ASSERT_EQ(0, nvt_attached(self->ctl));

	/* Smaller than v1: -EINVAL; larger with a nonzero tail: -E2BIG. */
	memset(&a, 0, sizeof(a));
	a.path = (__u64)(uintptr_t)nvt_dev();
	a.flags = KVTIER_NVME_FORMAT;
	ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl, kst_resize(KVTIER_IOC_NVME_ATTACH,
							   sizeof(a) - 8), &a));
	memset(&big, 0, sizeof(big));
	big.a = a;
	big.tail = 1;
	ASSERT_EQ(-E2BIG, kst_ioctl(self->ctl, kst_resize(KVTIER_IOC_NVME_ATTACH,
							  sizeof(big)), &big));
	ASSERT_EQ(0, nvt_attached(self->ctl));
	big.tail = 0;
	ASSERT_EQ(0, kst_ioctl(self->ctl, kst_resize(KVTIER_IOC_NVME_ATTACH,
						     sizeof(big)), &big));
	ASSERT_EQ(1, nvt_attached(self->ctl));

	/* SYNC is a pool command, ATTACH a control command. */
	memset(&sy, 0, sizeof(sy));
	ASSERT_EQ(-ENOTTY, kst_ioctl(self->ctl, KVTIER_IOC_SYNC, &sy));
	kst_name(name, "rules");
	pfd = kst_pool_create(self->ctl, name, KST_PAGE, 16, 16);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(-ENOTTY, kst_ioctl(pfd, KVTIER_IOC_NVME_ATTACH, &a));
	ASSERT_EQ(-EINVAL, kst_ioctl(pfd, kst_resize(KVTIER_IOC_SYNC,
						     sizeof(sy) - 8), &sy));
	close(pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
}

/* Without CAP_SYS_ADMIN: -EPERM, and nothing is written to the device. */
TEST_F(attach, nonroot_eperm)
{
	__u8 before[16], after[16];
	pid_t pid;

	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	ASSERT_EQ(0, nvt_detach(self->ctl));
	sb_uuid(before);

	pid = kst_fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int ctl;

		if (kst_become(65534, 65534))
			_exit(10);
		ctl = kst_ctl_open();
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
	ASSERT_EQ(0, kst_wait(pid));
	ASSERT_EQ(0, nvt_attached(self->ctl));
	sb_uuid(after);
	ASSERT_EQ(0, memcmp(before, after, 16));

	/* Detach of an attached device by an unprivileged user. */
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	pid = kst_fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int ctl;

		if (kst_become(1000, 1000))
			_exit(10);
		ctl = kst_ctl_open();
		if (ctl < 0)
			_exit(11);
		_exit(nvt_detach(ctl) == -EPERM ? 0 : 12);
	}
	ASSERT_EQ(0, kst_wait(pid));
	ASSERT_EQ(1, nvt_attached(self->ctl));
}

/* Foreign content: -EMEDIUMTYPE and untouched; FORMAT takes it. */
TEST_F(attach, foreign_content_emediumtype)
{
	char *back = kst_alloc(NVT_DISK_PAGE);
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
	kst_free(back, NVT_DISK_PAGE);
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
	char *table = kst_alloc(tlen);
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
	EXPECT_EQ(4 * KST_MIB, ns.region_bytes);
	EXPECT_EQ((bytes - NVT_DATA_OFF) / (4 * KST_MIB), ns.nr_regions);
	EXPECT_EQ(ns.nr_regions, ns.free_regions);
	EXPECT_NE(0, memcmp(ns.uuid, zero, 16));
	EXPECT_EQ(0U, ns.lost_blocks);
	EXPECT_EQ(0U, ns.io_errors);

	ASSERT_EQ(0, nvt_read_sb(nvt_dev(), &sb));
	EXPECT_EQ(6U, sb.version);
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
	kst_free(table, tlen);
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
		__u64 rb = (kib[i] ? kib[i] : 4096) * KST_KIB;

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
		ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl, KVTIER_IOC_NVME_ATTACH, &a));
	}
	ASSERT_EQ(0, nvt_attached(self->ctl));
}

TEST_F(attach, bad_path)
{
	struct kvtier_nvme_attach a;

	memset(&a, 0, sizeof(a));
	ASSERT_EQ(-EFAULT, kst_ioctl(self->ctl, KVTIER_IOC_NVME_ATTACH, &a));
	a.path = (__u64)(uintptr_t)kst_unmapped_addr();
	ASSERT_EQ(-EFAULT, kst_ioctl(self->ctl, KVTIER_IOC_NVME_ATTACH, &a));
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
	ASSERT_EQ((long long)(4 * KST_MIB), NSTAT(self->ctl, region_bytes));
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
	ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl, KVTIER_IOC_NVME_DETACH, &d));
	memset(&d, 0, sizeof(d));
	d.__pad = 1;
	ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl, KVTIER_IOC_NVME_DETACH, &d));
	memset(&d, 0, sizeof(d));
	d.reserved = 1;
	ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl, KVTIER_IOC_NVME_DETACH, &d));
	/* A path: unreadable, not a device, a device not attached. */
	memset(&d, 0, sizeof(d));
	d.path = (__u64)(uintptr_t)kst_unmapped_addr();
	ASSERT_EQ(-EFAULT, kst_ioctl(self->ctl, KVTIER_IOC_NVME_DETACH, &d));
	d.path = (__u64)(uintptr_t)"/nonexistent/kvtier";
	ASSERT_EQ(-ENOENT, kst_ioctl(self->ctl, KVTIER_IOC_NVME_DETACH, &d));
	d.path = (__u64)(uintptr_t)"/dev/null";
	ASSERT_EQ(-ENOTBLK, kst_ioctl(self->ctl, KVTIER_IOC_NVME_DETACH, &d));
	d.path = (__u64)(uintptr_t)"/dev/nvme1n1";
	if (!access("/dev/nvme1n1", F_OK) &&
	    strcmp(nvt_dev(), "/dev/nvme1n1")) {
		ASSERT_EQ(-ENODEV, kst_ioctl(self->ctl, KVTIER_IOC_NVME_DETACH,
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
	ASSERT_EQ(0, kst_ioctl(self->ctl, KVTIER_IOC_NVME_STAT, &ns));
	for (i = 0; i < sizeof(ns); i++)
		if (p[i])
			break;
	ASSERT_EQ(sizeof(ns), i);

	memset(&ns, 0, sizeof(ns));
	ns.flags = 2;
	ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl, KVTIER_IOC_NVME_STAT, &ns));
	for (i = 0; i < sizeof(ns.reserved) / sizeof(ns.reserved[0]); i++) {
		memset(&ns, 0, sizeof(ns));
		ns.reserved[i] = 1;
		ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl, KVTIER_IOC_NVME_STAT, &ns));
	}
	memset(&ns, 0, sizeof(ns));
	ns.__pad = 1;
	ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl, KVTIER_IOC_NVME_STAT, &ns));
	/* An index only with KVTIER_NVME_STAT_DEV, and in range. */
	memset(&ns, 0, sizeof(ns));
	ns.dev_index = 1;
	ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl, KVTIER_IOC_NVME_STAT, &ns));
	ns.flags = KVTIER_NVME_STAT_DEV;
	ns.dev_index = KVTIER_NVME_MAX;
	ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl, KVTIER_IOC_NVME_STAT, &ns));

	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	ASSERT_EQ(0, nvt_nstat(self->ctl, &ns));
	ASSERT_EQ(1U, ns.attached);
	ASSERT_LT(0U, ns.nr_regions);
	/* Format and attach wrote the superblock and the pool table. */
	ASSERT_LE(NVT_DISK_PAGE, ns.bytes_written);
	ASSERT_EQ(0U, ns.bytes_demoted);
	/* An output field is no input: what the last call left is taken. */
	ASSERT_EQ(0, kst_ioctl(self->ctl, KVTIER_IOC_NVME_STAT, &ns));
	ns.bytes_discarded = ~0ULL;
	ASSERT_EQ(0, kst_ioctl(self->ctl, KVTIER_IOC_NVME_STAT, &ns));
	ASSERT_NE(~0ULL, ns.bytes_discarded);

	/* Device 0 is this one; device 1 is not in use. */
	memset(&ns, 0, sizeof(ns));
	ns.flags = KVTIER_NVME_STAT_DEV;
	ASSERT_EQ(0, kst_ioctl(self->ctl, KVTIER_IOC_NVME_STAT, &ns));
	ASSERT_EQ(1U, ns.attached);
	ASSERT_EQ((__u32)KVTIER_NVME_STAT_DEV, ns.flags);
	ASSERT_EQ(0, stat(nvt_dev(), &sb));
	ASSERT_EQ(major(sb.st_rdev), ns.dev_major);
	ASSERT_EQ(minor(sb.st_rdev), ns.dev_minor);
	memset(&ns, 0, sizeof(ns));
	ns.flags = KVTIER_NVME_STAT_DEV;
	ns.dev_index = 1;
	ASSERT_EQ(0, kst_ioctl(self->ctl, KVTIER_IOC_NVME_STAT, &ns));
	ASSERT_EQ(0U, ns.attached);
	ASSERT_EQ(0ULL, ns.dev_bytes);
}

TEST_F(attach, sync_without_device_enodev)
{
	char name[KVTIER_NAME_MAX];
	int pfd;

	kst_name(name, "nosync");
	pfd = kst_pool_create(self->ctl, name, KST_PAGE, 16, 16);
	ASSERT_LE(0, pfd);
	/* An empty pool. */
	EXPECT_EQ(-ENODEV, nvt_sync(pfd, NULL));
	ASSERT_EQ(0, put_range(pfd, self->buf, KST_PAGE, 0, 4, 1, 0));
	EXPECT_EQ(-ENODEV, nvt_sync(pfd, NULL));
	close(pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
}

TEST_F(attach, sync_bad_fields_einval)
{
	char name[KVTIER_NAME_MAX];
	struct kvtier_sync s;
	int pfd;

	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	kst_name(name, "syncbad");
	pfd = kst_pool_create(self->ctl, name, KST_PAGE, 16, 16);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, put_range(pfd, self->buf, KST_PAGE, 0, 4, 1, 0));

	memset(&s, 0, sizeof(s));
	s.flags = 1;
	EXPECT_EQ(-EINVAL, kst_ioctl(pfd, KVTIER_IOC_SYNC, &s));
	memset(&s, 0, sizeof(s));
	s.__pad = 1;
	EXPECT_EQ(-EINVAL, kst_ioctl(pfd, KVTIER_IOC_SYNC, &s));
	memset(&s, 0, sizeof(s));
	s.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, kst_ioctl(pfd, KVTIER_IOC_SYNC, &s));
	memset(&s, 0, sizeof(s));
	s.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, kst_ioctl(pfd, KVTIER_IOC_SYNC, &s));
	/* Nothing was written by the rejected calls. */
	EXPECT_EQ(4, PSTAT(pfd, dirty));
	EXPECT_EQ(0, PSTAT(pfd, demotions));

	memset(&s, 0, sizeof(s));
	EXPECT_EQ(0, kst_ioctl(pfd, KVTIER_IOC_SYNC, &s));
	EXPECT_EQ(4U, s.written);
	close(pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
}

/*
 * Blocks larger than a region cannot be demoted: evicting them drops them,
 * PUT still works, and SYNC says so with -EFBIG (userspace-api.rst).
 */
TEST_F(attach, block_larger_than_region)
{
	const __u64 bs = 8 * KST_MIB;
	char name[KVTIER_NAME_MAX];
	char *buf = kst_alloc(bs);
	int pfd;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	kst_name(name, "huge");
	pfd = kst_pool_create(self->ctl, name, bs, 8, 2);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, put_range(pfd, buf, bs, 0, 3, 1, 0));
	EXPECT_EQ(0, get_check(pfd, buf, bs, 1, 1));
	EXPECT_EQ(0, get_check(pfd, buf, bs, 2, 1));
	EXPECT_EQ(-ENOENT, get_check(pfd, buf, bs, 0, 1));
	EXPECT_EQ(0, NSTAT(self->ctl, bytes_demoted));
	EXPECT_EQ(-EFBIG, nvt_sync(pfd, NULL));
	close(pfd);
	kst_free(buf, bs);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
}

/*
 * NVME_DETACH from several control fds at once: exactly one detaches, the
 * others get -ENODEV, and the kernel stays sane. Detach lets go of its lock
 * while it writes back the pools; a second detach must not tear down the
 * same device again. Pools with dirty blocks make that window wide.
 * (Found by the fuzzer.)
 */
#define DR_THREADS	4
#define DR_BS		(64 * KST_KIB)
#define DR_BLOCKS	64

struct dr_arg {
	pthread_barrier_t *bar;
	int ret;
};

static void *dr_detach(void *arg)
{
	struct dr_arg *a = arg;
	struct kvtier_nvme_detach d;
	int ctl = kst_ctl_open();

	memset(&d, 0, sizeof(d));
	pthread_barrier_wait(a->bar);
	a->ret = ctl < 0 ? ctl : kst_ioctl(ctl, KVTIER_IOC_NVME_DETACH, &d);
	if (ctl >= 0)
		close(ctl);
	return NULL;
}

TEST_F_TIMEOUT(attach, detach_race, 240)
{
	struct kvtier_nvme_attach a;
	pthread_barrier_t bar;
	pthread_t th[DR_THREADS];
	struct dr_arg args[DR_THREADS];
	char name[KVTIER_NAME_MAX];
	char *buf;
	int round, i, pfd, ok, enodev;

	buf = kst_alloc(DR_BS);
	ASSERT_NE(NULL, buf);
	for (round = 0; round < 3; round++) {
		memset(&a, 0, sizeof(a));
		a.path = (__u64)(uintptr_t)nvt_dev();
		a.flags = KVTIER_NVME_FORMAT;
		ASSERT_EQ(0, kst_ioctl(self->ctl, KVTIER_IOC_NVME_ATTACH, &a));
		/* recorded on the device, with dirty blocks to write back */
		kst_name(name, "detrace");
		pfd = kst_pool_create(self->ctl, name, DR_BS, DR_BLOCKS,
				      DR_BLOCKS);
		ASSERT_LE(0, pfd);
		for (i = 0; i < DR_BLOCKS; i++) {
			kst_fill(buf, DR_BS, 0xd7, i, round);
			ASSERT_EQ(0, kst_put1(pfd, 0xd7, i, buf, NULL));
		}
		ASSERT_EQ(0, pthread_barrier_init(&bar, NULL, DR_THREADS));
		for (i = 0; i < DR_THREADS; i++) {
			args[i].bar = &bar;
			args[i].ret = 1;
			ASSERT_EQ(0, pthread_create(&th[i], NULL, dr_detach,
						    &args[i]));
		}
		ok = 0;
		enodev = 0;
		for (i = 0; i < DR_THREADS; i++) {
			ASSERT_EQ(0, pthread_join(th[i], NULL));
			ok += args[i].ret == 0;
			enodev += args[i].ret == -ENODEV;
		}
		pthread_barrier_destroy(&bar);
		EXPECT_EQ(1, ok) TH_LOG("round %d: %d detaches worked", round,
					ok);
		EXPECT_EQ(DR_THREADS - 1, enodev);
		/* the blocks are still there (in DRAM) */
		for (i = 0; i < DR_BLOCKS; i++) {
			ASSERT_EQ(0, kst_get1(pfd, 0xd7, i, buf, NULL));
			ASSERT_EQ(-1, kst_check_gen(buf, DR_BS, 0xd7, i, round));
		}
		close(pfd);
		ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
	}
	kst_free(buf, DR_BS);
}

/*
 * Detach and attach again (without FORMAT) while other processes read:
 * every block comes back. Attach replays the log into the index before the
 * device is published; a read of a replayed block in between used to find
 * no device, take its copy for lost and unlink the block, which stayed
 * missing until the next attach (an outside client lost about one block in
 * ten a cycle).
 */
#define RR_BS		(16 * KST_KIB)
#define RR_DRAM		32U
#define RR_KEYS		400U
#define RR_READERS	3
#define RR_CYCLES	6
#define RR_K0		0x7265617474616368ULL	/* "reattach" */

/* GET (even readers) or LOOKUP with LOAD (odd) random keys until *@stop. */
static int rr_reader(int pfd, int n, volatile int *stop)
{
	char *buf = kst_alloc(RR_BS);
	__u64 x = getpid();
	int ret;

	if (!buf)
		return 10;
	while (!*stop) {
		__u64 k = (x = kst_mix(x)) % RR_KEYS;

		if (n & 1) {
			struct kvtier_block b;

			kst_blk(&b, RR_K0, k, NULL);
			ret = kst_batch(pfd, KVTIER_IOC_LOOKUP, &b, 1,
					KVTIER_LOOKUP_LOAD, NULL);
			if (ret)
				return 11;
			continue;
		}
		ret = kst_get1(pfd, RR_K0, k, buf, NULL);
		/* A miss while detached is fine; wrong bytes never are. */
		if (!ret && kst_check_gen(buf, RR_BS, RR_K0, k, 1) != -1)
			return 12;
		if (ret && ret != -ENOENT)
			return 13;
	}
	kst_free(buf, RR_BS);
	return 0;
}

static unsigned int rr_found(int pfd, struct kvtier_block *b)
{
	unsigned int i, found = 0;
	__u32 done;

	for (i = 0; i < RR_KEYS; i++)
		kst_blk(&b[i], RR_K0, i, NULL);
	if (kst_batch(pfd, KVTIER_IOC_LOOKUP, b, RR_KEYS, 0, &done))
		return 0;
	for (i = 0; i < RR_KEYS; i++)
		found += !b[i].status;
	return found;
}

TEST_F_TIMEOUT(attach, reattach_under_reads, 600)
{
	struct kvtier_block *b = calloc(RR_KEYS, sizeof(*b));
	char *buf = kst_alloc(RR_BS);
	pid_t pid[RR_READERS];
	char name[KVTIER_NAME_MAX];
	volatile int *stop;
	unsigned int i, cycle, found;
	int pfd;

	ASSERT_NE(NULL, b);
	ASSERT_NE(NULL, buf);
	stop = mmap(NULL, KST_PAGE, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, stop);
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	kst_name(name, "rereads");
	pfd = kst_pool_create(self->ctl, name, RR_BS, 2 * RR_KEYS, RR_DRAM);
	ASSERT_LE(0, pfd);
	for (i = 0; i < RR_KEYS; i++) {
		kst_fill(buf, RR_BS, RR_K0, i, 1);
		ASSERT_EQ(0, kst_put1(pfd, RR_K0, i, buf, NULL));
	}
	ASSERT_EQ(0, nvt_sync(pfd, NULL));
	ASSERT_LE(RR_KEYS - RR_DRAM, RES_NVME(pfd));

	*stop = 0;
	for (i = 0; i < RR_READERS; i++) {
		pid[i] = kst_fork();
		ASSERT_LE(0, pid[i]);
		if (pid[i] == 0)
			_exit(rr_reader(pfd, i, stop));
	}
	for (cycle = 0; cycle < RR_CYCLES; cycle++) {
		ASSERT_EQ(0, nvt_detach(self->ctl));
		usleep(kst_mix(cycle + salt) % 150000);
		ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
		found = rr_found(pfd, b);
		EXPECT_EQ(RR_KEYS, found) TH_LOG("cycle %u: %u of %u found",
						 cycle, found, RR_KEYS);
	}
	*stop = 1;
	for (i = 0; i < RR_READERS; i++)
		EXPECT_EQ(0, kst_wait(pid[i]));

	/* Quiet now: all there, and exact. */
	EXPECT_EQ(RR_KEYS, rr_found(pfd, b));
	for (i = 0; i < RR_KEYS; i++) {
		memset(buf, 0xa5, RR_BS);
		ASSERT_EQ(0, kst_get1(pfd, RR_K0, i, buf, NULL));
		ASSERT_EQ(-1, kst_check_gen(buf, RR_BS, RR_K0, i, 1));
	}
	EXPECT_EQ(0, PSTAT(pfd, bad_reads));
	close(pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
	munmap((void *)stop, KST_PAGE);
	kst_free(buf, RR_BS);
	free(b);
}

/* ==== a synced DROP stays dropped ======================================== */

#define DD_BS		(16 * KST_KIB)
#define DD_KEYS		64U
#define DD_DRAM		8U
#define DD_DROPPED	24U		/* keys 0..DD_DROPPED-1 */
#define DD_AGAIN	40U		/* dropped, then PUT again */
#define DD_K0		0x6e7674647270ULL	/* "nvtdrp" */

/*
 * DROP and SYNC, detach, attach without format: replay must not bring the
 * dropped keys back (their records are still valid on the device), and a
 * key dropped then PUT again keeps its new bytes.
 */
TEST_F_TIMEOUT(attach, synced_drop_stays_dropped, 240)
{
	char *buf = kst_alloc(DD_BS);
	char name[KVTIER_NAME_MAX];
	unsigned int i, back = 0;
	int pfd, ret;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	kst_name(name, "drops");
	pfd = kst_pool_create(self->ctl, name, DD_BS, 4 * DD_KEYS, DD_DRAM);
	ASSERT_LE(0, pfd);
	for (i = 0; i < DD_KEYS; i++) {
		kst_fill(buf, DD_BS, DD_K0, i, 1);
		ASSERT_EQ(0, kst_put1(pfd, DD_K0, i, buf, NULL));
	}
	ASSERT_EQ(0, nvt_sync(pfd, NULL));
	ASSERT_LE(DD_KEYS - DD_DRAM, RES_NVME(pfd));

	/* Dropped with copies on the device, some in DRAM too. */
	for (i = 0; i < DD_DROPPED; i++)
		ASSERT_EQ(0, kst_drop1(pfd, DD_K0, i));
	ASSERT_EQ(0, kst_drop1(pfd, DD_K0, DD_AGAIN));
	kst_fill(buf, DD_BS, DD_K0, DD_AGAIN, 2);
	ASSERT_EQ(0, kst_put1(pfd, DD_K0, DD_AGAIN, buf, NULL));
	ASSERT_EQ(0, nvt_sync(pfd, NULL));

	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));

	for (i = 0; i < DD_DROPPED; i++) {
		ret = kst_get1(pfd, DD_K0, i, buf, NULL);
		if (ret != -ENOENT && !back++)
			TH_LOG("dropped key %u: %d, want -ENOENT", i, ret);
	}
	EXPECT_EQ(0U, back) TH_LOG("%u of %u dropped keys came back", back,
				    DD_DROPPED);
	for (i = DD_DROPPED; i < DD_KEYS; i++) {
		memset(buf, 0xa5, DD_BS);
		ASSERT_EQ(0, kst_get1(pfd, DD_K0, i, buf, NULL))
			TH_LOG("key %u", i);
		EXPECT_EQ(-1, kst_check_gen(buf, DD_BS, DD_K0, i,
					    i == DD_AGAIN ? 2 : 1))
			TH_LOG("key %u: wrong bytes", i);
	}
	EXPECT_EQ(0, PSTAT(pfd, bad_reads));

	/* And again: the tombstones hold across a second replay. */
	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	for (i = 0; i < DD_DROPPED; i++)
		EXPECT_EQ(-ENOENT, kst_get1(pfd, DD_K0, i, buf, NULL))
			TH_LOG("key %u back after a second attach", i);
	memset(buf, 0xa5, DD_BS);
	ASSERT_EQ(0, kst_get1(pfd, DD_K0, DD_AGAIN, buf, NULL));
	EXPECT_EQ(-1, kst_check_gen(buf, DD_BS, DD_K0, DD_AGAIN, 2));
	close(pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
	kst_free(buf, DD_BS);
}

/* ==== a store of the previous format version ============================= */

#define OV_BS		(16 * KST_KIB)
#define OV_KEYS		32U

/*
 * A store that says it is version 5 (the last before compressed copies):
 * it attaches, its pool comes back uncompressed with every block exact,
 * and it carries the current version from that attach on.
 */
TEST_F_TIMEOUT(attach, previous_version_attaches, 120)
{
	char *buf = kst_alloc(OV_BS);
	char name[KVTIER_NAME_MAX];
	struct kvtier_pool_stat st;
	struct nvt_disk_sb sb;
	unsigned int i;
	int pfd;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0));
	kst_name(name, "v5");
	pfd = kst_pool_create(self->ctl, name, OV_BS, 2 * OV_KEYS, 4);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, put_range(pfd, buf, OV_BS, 0, OV_KEYS, 1, 0));
	ASSERT_EQ(0, nvt_sync(pfd, NULL));
	close(pfd);
	ASSERT_EQ(0, nvt_detach(self->ctl));

	ASSERT_EQ(0, nvt_read_sb(nvt_dev(), &sb));
	ASSERT_EQ(6U, sb.version);
	sb.version = 5;
	ASSERT_EQ(0, nvt_write_sb(nvt_dev(), &sb));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	ASSERT_EQ(0, nvt_read_sb(nvt_dev(), &sb));
	EXPECT_EQ(6U, sb.version);

	pfd = kst_pool_open(self->ctl, name, 0);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, kst_stat(pfd, &st));
	EXPECT_EQ(KVTIER_COMPRESS_NONE, st.compress);
	EXPECT_EQ(0U, st.z_blocks);
	for (i = 0; i < OV_KEYS; i++)
		EXPECT_EQ(0, get_check(pfd, buf, OV_BS, i, 1))
			TH_LOG("key %u", i);
	EXPECT_EQ(0, PSTAT(pfd, bad_reads));
	close(pfd);
	kst_free(buf, OV_BS);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
}

/*
 * A region of many small segments, each written by a SYNC: one block and
 * its summary page, then a tombstone alone (one page). Replay reads each
 * summary for what it says it is, not the largest a summary can be (768
 * KiB in a 64 MiB region): it reads about what was written.
 */
#define SS_SEGS		300U
#define SS_BS		(4 * KST_KIB)
#define SS_K0		0x6e7673736567ULL	/* "nvsseg" */

TEST_F_TIMEOUT(attach, replay_reads_what_summaries_hold, 300)
{
	struct kvtier_nvme_stat ns;
	char *buf = kst_alloc(SS_BS);
	char name[KVTIER_NAME_MAX];
	__u64 written;
	unsigned int i;
	int pfd;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT,
				65536));
	kst_name(name, "segs");
	pfd = kst_pool_create(self->ctl, name, SS_BS, 2 * SS_SEGS, 16);
	ASSERT_LE(0, pfd);
	for (i = 0; i < SS_SEGS; i++) {
		kst_fill(buf, SS_BS, SS_K0, i, 1);
		ASSERT_EQ(0, kst_put1(pfd, SS_K0, i, buf, NULL));
		ASSERT_EQ(0, nvt_sync(pfd, NULL));
		ASSERT_EQ(0, kst_drop1(pfd, SS_K0, i));
		ASSERT_EQ(0, nvt_sync(pfd, NULL));
	}
	/* One key stays, to show the replay read the chain to its end. */
	kst_fill(buf, SS_BS, SS_K0, SS_SEGS, 1);
	ASSERT_EQ(0, kst_put1(pfd, SS_K0, SS_SEGS, buf, NULL));
	ASSERT_EQ(0, nvt_sync(pfd, NULL));
	ASSERT_EQ(0, nvt_nstat(self->ctl, &ns));
	written = ns.bytes_written;

	ASSERT_EQ(0, nvt_detach(self->ctl));
	ASSERT_EQ(0, nvt_attach(self->ctl, nvt_dev(), 0, 0));
	ASSERT_EQ(0, nvt_nstat(self->ctl, &ns));
	TH_LOG("%u segments: %llu KiB written, replay read %llu KiB in %llu ms",
	       2 * SS_SEGS + 1, (unsigned long long)written >> 10,
	       (unsigned long long)ns.bytes_read >> 10,
	       (unsigned long long)ns.attach_ns / 1000000);
	/* The superblock, pool table and each region's first page, besides. */
	EXPECT_GE(written + (4 << 20) + ns.nr_regions * KST_PAGE,
		  ns.bytes_read);
	memset(buf, 0xa5, SS_BS);
	ASSERT_EQ(0, kst_get1(pfd, SS_K0, SS_SEGS, buf, NULL));
	EXPECT_EQ(-1, kst_check_gen(buf, SS_BS, SS_K0, SS_SEGS, 1));
	for (i = 0; i < SS_SEGS; i += 37)
		EXPECT_EQ(-ENOENT, kst_get1(pfd, SS_K0, i, buf, NULL))
			TH_LOG("dropped key %u is back", i);
	close(pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, name));
	kst_free(buf, SS_BS);
}

TEST_HARNESS_MAIN
