// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier control fd: the KVTIER_IOC_API handshake, command numbering and
 * struct size rules (uapi/linux/kvtier.h).
 */
#include "kvtier_test.h"

/* Every command of ABI v1, as KVTIER_IOC_API reports it. */
#define KST_IOCTLS_V1 \
	((1ULL << _IOC_NR(KVTIER_IOC_API)) | \
	 (1ULL << _IOC_NR(KVTIER_IOC_POOL_CREATE)) | \
	 (1ULL << _IOC_NR(KVTIER_IOC_POOL_OPEN)) | \
	 (1ULL << _IOC_NR(KVTIER_IOC_POOL_DESTROY)) | \
	 (1ULL << _IOC_NR(KVTIER_IOC_PUT)) | \
	 (1ULL << _IOC_NR(KVTIER_IOC_GET)) | \
	 (1ULL << _IOC_NR(KVTIER_IOC_LOOKUP)) | \
	 (1ULL << _IOC_NR(KVTIER_IOC_DROP)) | \
	 (1ULL << _IOC_NR(KVTIER_IOC_PIN)) | \
	 (1ULL << _IOC_NR(KVTIER_IOC_UNPIN)) | \
	 (1ULL << _IOC_NR(KVTIER_IOC_STAT)))

/* ... and the later ones this header defines. */
#ifdef KVTIER_IOC_NVME_ATTACH
#define KST_IOCTLS_NVME \
	((1ULL << _IOC_NR(KVTIER_IOC_NVME_ATTACH)) | \
	 (1ULL << _IOC_NR(KVTIER_IOC_NVME_DETACH)) | \
	 (1ULL << _IOC_NR(KVTIER_IOC_NVME_STAT)) | \
	 (1ULL << _IOC_NR(KVTIER_IOC_SYNC)))
#else
#define KST_IOCTLS_NVME 0ULL
#endif
#ifdef KVTIER_IOC_PREFETCH
#define KST_IOCTLS_PREFETCH \
	((1ULL << _IOC_NR(KVTIER_IOC_PREFETCH)) | \
	 (1ULL << _IOC_NR(KVTIER_IOC_CANCEL)) | \
	 (1ULL << _IOC_NR(KVTIER_IOC_EVENTFD)))
#else
#define KST_IOCTLS_PREFETCH 0ULL
#endif
#ifdef KVTIER_IOC_ADOPT
#define KST_IOCTLS_HBM \
	((1ULL << _IOC_NR(KVTIER_IOC_HBM_ATTACH)) | \
	 (1ULL << _IOC_NR(KVTIER_IOC_HBM_STAT)) | \
	 (1ULL << _IOC_NR(KVTIER_IOC_ADOPT)))
#else
#define KST_IOCTLS_HBM 0ULL
#endif
#ifdef KVTIER_IOC_RESERVE
#define KST_IOCTLS_RESERVE \
	((1ULL << _IOC_NR(KVTIER_IOC_RESERVE)) | \
	 (1ULL << _IOC_NR(KVTIER_IOC_COMMIT)) | \
	 (1ULL << _IOC_NR(KVTIER_IOC_ABORT)))
#else
#define KST_IOCTLS_RESERVE 0ULL
#endif
#ifdef KVTIER_IOC_CENSUS
#define KST_IOCTLS_EVENTS \
	((1ULL << _IOC_NR(KVTIER_IOC_EVENTS)) | \
	 (1ULL << _IOC_NR(KVTIER_IOC_CENSUS)))
#else
#define KST_IOCTLS_EVENTS 0ULL
#endif
#define KST_IOCTLS_KNOWN	(KST_IOCTLS_V1 | KST_IOCTLS_NVME | \
				 KST_IOCTLS_PREFETCH | KST_IOCTLS_HBM | \
				 KST_IOCTLS_RESERVE | KST_IOCTLS_EVENTS)

/* Command numbers no version of the ABI uses. */
#define KST_NR_UNUSED_CTL	0x0f
#define KST_NR_UNUSED_POOL	0x3f

/* Room for an argument larger than the kernel's struct. */
#define KST_TAIL	64

FIXTURE(api) {
	int ctl;			/* control fd, no handshake yet */
	char name[KVTIER_NAME_MAX];	/* a pool this test may create */
};

FIXTURE_SETUP(api)
{
	kst_setup(_metadata);

	self->ctl = kst_ctl_open_raw();
	ASSERT_LE(0, self->ctl);
	kst_name(self->name, "api");
}

FIXTURE_TEARDOWN(api)
{
	int ctl = kst_ctl_open();

	if (ctl >= 0) {
		kst_pool_destroy(ctl, self->name);
		close(ctl);
	}
	close(self->ctl);
}

static void api_init(struct kvtier_api *a)
{
	memset(a, 0, sizeof(*a));
	a->api = KVTIER_API_VERSION;
}

TEST_F(api, handshake_ok)
{
	struct kvtier_api a;
	long long max_pools, dram_mb;
	int i;

	api_init(&a);
	ASSERT_EQ(0, kst_ioctl(self->ctl, KVTIER_IOC_API, &a));
	ASSERT_EQ((__u32)KVTIER_API_VERSION, a.api);
	ASSERT_EQ(0U, a.flags);
	ASSERT_EQ(0ULL, a.features);
	/* all of v1, nothing this header does not define */
	ASSERT_EQ(KST_F_V1, a.supported & KST_F_V1);
	ASSERT_EQ(0ULL, a.supported & ~KST_F_KNOWN);
	ASSERT_EQ(KST_IOCTLS_V1, a.ioctls & KST_IOCTLS_V1);
	ASSERT_EQ(0ULL, a.ioctls & ~KST_IOCTLS_KNOWN);
	ASSERT_EQ(KVTIER_BLOCK_SIZE_MAX, a.block_size_max);
	ASSERT_EQ((__u32)KVTIER_BATCH_MAX, a.batch_max);
	ASSERT_EQ((__u32)KVTIER_NAME_MAX, a.name_max);
	ASSERT_EQ(0U, a.__pad);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0ULL, a.reserved[i]);

	ASSERT_EQ(0, kst_param("max_pools", &max_pools));
	ASSERT_EQ((__u32)max_pools, a.max_pools);
	ASSERT_EQ(0, kst_param("dram_mb", &dram_mb));
	ASSERT_EQ((__u64)dram_mb << 20, a.dram_bytes);
}

/* Asking for every v1 feature gets them all back. */
TEST_F(api, handshake_features_all)
{
	struct kvtier_api a;

	api_init(&a);
	a.features = KST_F_V1;
	ASSERT_EQ(0, kst_ioctl(self->ctl, KVTIER_IOC_API, &a));
	ASSERT_EQ(KST_F_V1, a.features);
	ASSERT_EQ(KST_F_V1, a.supported & KST_F_V1);
}

/* The negotiated set is what was asked for, not everything supported. */
TEST_F(api, handshake_features_subset)
{
	struct kvtier_api a;

	api_init(&a);
	a.features = KVTIER_F_POOLS | KVTIER_F_REPLACE;
	ASSERT_EQ(0, kst_ioctl(self->ctl, KVTIER_IOC_API, &a));
	ASSERT_EQ(KVTIER_F_POOLS | KVTIER_F_REPLACE, a.features);
	ASSERT_EQ(KST_F_V1, a.supported & KST_F_V1);
}

/* After the handshake the control commands work. */
TEST_F(api, handshake_then_create)
{
	int pfd;

	ASSERT_EQ(0, kst_api(self->ctl, KST_F_KNOWN, NULL));
	pfd = kst_pool_create(self->ctl, self->name, KST_PAGE, 4, 4);
	ASSERT_LE(0, pfd);
	close(pfd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, self->name));
}

TEST_F(api, create_before_handshake)
{
	struct kvtier_pool_create c;

	kst_create_init(&c, self->name, KST_PAGE, 4, 4);
	ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl, KVTIER_IOC_POOL_CREATE, &c));
	/* and it made nothing: a handshaken fd cannot open it */
	ASSERT_EQ(0, kst_api(self->ctl, KST_F_KNOWN, NULL));
	ASSERT_EQ(-ENOENT, kst_pool_open(self->ctl, self->name, 0));
}

TEST_F(api, open_before_handshake)
{
	struct kvtier_pool_open o;
	int ctl2, pfd;

	/* the pool exists, made through another fd */
	ctl2 = kst_ctl_open();
	ASSERT_LE(0, ctl2);
	pfd = kst_pool_create(ctl2, self->name, KST_PAGE, 4, 4);
	ASSERT_LE(0, pfd);
	close(pfd);

	memset(&o, 0, sizeof(o));
	strcpy((char *)o.name, self->name);
	ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl, KVTIER_IOC_POOL_OPEN, &o));
	close(ctl2);
}

TEST_F(api, destroy_before_handshake)
{
	struct kvtier_pool_destroy d;
	int ctl2, pfd;

	ctl2 = kst_ctl_open();
	ASSERT_LE(0, ctl2);
	pfd = kst_pool_create(ctl2, self->name, KST_PAGE, 4, 4);
	ASSERT_LE(0, pfd);
	close(pfd);

	memset(&d, 0, sizeof(d));
	strcpy((char *)d.name, self->name);
	ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl, KVTIER_IOC_POOL_DESTROY, &d));
	/* still there */
	pfd = kst_pool_open(ctl2, self->name, 0);
	ASSERT_LE(0, pfd);
	close(pfd);
	close(ctl2);
}

/* The handshake is per open file. */
TEST_F(api, handshake_is_per_fd)
{
	int ctl2 = kst_ctl_open();
	struct kvtier_pool_create c;

	ASSERT_LE(0, ctl2);
	kst_create_init(&c, self->name, KST_PAGE, 4, 4);
	ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl, KVTIER_IOC_POOL_CREATE, &c));
	close(ctl2);
}

TEST_F(api, second_handshake)
{
	struct kvtier_api a;

	ASSERT_EQ(0, kst_api(self->ctl, KVTIER_F_POOLS, NULL));
	api_init(&a);
	ASSERT_EQ(-EBUSY, kst_ioctl(self->ctl, KVTIER_IOC_API, &a));
	/* the first one still holds: commands get past the handshake check */
	ASSERT_EQ(-ENOENT, kst_pool_open(self->ctl, self->name, 0));
}

TEST_F(api, version_0)
{
	struct kvtier_api a;

	api_init(&a);
	a.api = 0;
	ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl, KVTIER_IOC_API, &a));
}

TEST_F(api, version_2)
{
	struct kvtier_api a;

	api_init(&a);
	a.api = KVTIER_API_VERSION + 1;
	ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl, KVTIER_IOC_API, &a));
}

TEST_F(api, flags_nonzero)
{
	struct kvtier_api a;

	api_init(&a);
	a.flags = 1;
	ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl, KVTIER_IOC_API, &a));
}

TEST_F(api, flags_high_bit)
{
	struct kvtier_api a;

	api_init(&a);
	a.flags = 1U << 31;
	ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl, KVTIER_IOC_API, &a));
}

TEST_F(api, pad_nonzero)
{
	struct kvtier_api a;

	api_init(&a);
	a.__pad = 1;
	ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl, KVTIER_IOC_API, &a));
}

#define API_RESERVED_TEST(i) \
TEST_F(api, reserved##i) \
{ \
	struct kvtier_api a; \
	api_init(&a); \
	a.reserved[i] = 1ULL << (i * 16); \
	ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl, KVTIER_IOC_API, &a)); \
}
API_RESERVED_TEST(0)
API_RESERVED_TEST(1)
API_RESERVED_TEST(2)
API_RESERVED_TEST(3)

/*
 * A feature bit the kernel does not know is not refused: it is left out of
 * the negotiated set, as a feature the kernel lacks.
 */
TEST_F(api, unknown_feature_lowest)
{
	struct kvtier_api a;

	api_init(&a);
	a.features = KVTIER_F_POOLS | kst_unknown_bit(KST_F_KNOWN);
	ASSERT_EQ(0, kst_ioctl(self->ctl, KVTIER_IOC_API, &a));
	ASSERT_EQ(KVTIER_F_POOLS, a.features);
}

TEST_F(api, unknown_feature_bit63)
{
	struct kvtier_api a;

	api_init(&a);
	a.features = 1ULL << 63;
	ASSERT_EQ(0, kst_ioctl(self->ctl, KVTIER_IOC_API, &a));
	ASSERT_EQ(0ULL, a.features);
}

/* A rejected handshake leaves the fd where it was: not handshaken. */
TEST_F(api, rejected_handshake_changes_nothing)
{
	struct kvtier_api a;
	struct kvtier_pool_create c;
	int pfd;

	api_init(&a);
	a.api = 0;
	ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl, KVTIER_IOC_API, &a));
	kst_create_init(&c, self->name, KST_PAGE, 4, 4);
	ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl, KVTIER_IOC_POOL_CREATE, &c));
	ASSERT_EQ(0, kst_api(self->ctl, KST_F_KNOWN, NULL));
	pfd = kst_create(self->ctl, &c);
	ASSERT_LE(0, pfd);
	close(pfd);
}

TEST_F(api, unknown_nr_ctl)
{
	__u8 arg[sizeof(struct kvtier_api)];

	ASSERT_EQ(0, kst_api(self->ctl, KST_F_KNOWN, NULL));
	memset(arg, 0, sizeof(arg));
	ASSERT_EQ(-ENOTTY, kst_ioctl(self->ctl,
				     _IOWR(KVTIER_IOC_MAGIC, KST_NR_UNUSED_POOL,
					   struct kvtier_api), arg));
}

/* A number between the control and pool ranges. */
TEST_F(api, unknown_nr_gap)
{
	__u8 arg[sizeof(struct kvtier_api)];

	ASSERT_EQ(0, kst_api(self->ctl, KST_F_KNOWN, NULL));
	memset(arg, 0, sizeof(arg));
	ASSERT_EQ(-ENOTTY, kst_ioctl(self->ctl,
				     _IOWR(KVTIER_IOC_MAGIC, KST_NR_UNUSED_CTL,
					   struct kvtier_pool_create), arg));
}

TEST_F(api, unknown_nr_pool_fd)
{
	struct kvtier_batch b;
	int pfd;

	ASSERT_EQ(0, kst_api(self->ctl, KST_F_KNOWN, NULL));
	pfd = kst_pool_create(self->ctl, self->name, KST_PAGE, 4, 4);
	ASSERT_LE(0, pfd);
	memset(&b, 0, sizeof(b));
	ASSERT_EQ(-ENOTTY, kst_ioctl(pfd, _IOWR(KVTIER_IOC_MAGIC,
						KST_NR_UNUSED_POOL,
						struct kvtier_batch), &b));
	close(pfd);
}

TEST_F(api, wrong_magic)
{
	struct kvtier_api a;

	api_init(&a);
	ASSERT_EQ(-ENOTTY, kst_ioctl(self->ctl,
				     _IOWR(KVTIER_IOC_MAGIC + 1, 0x00,
					   struct kvtier_api), &a));
	/* and it did not count as the handshake */
	ASSERT_EQ(0, kst_api(self->ctl, KST_F_KNOWN, NULL));
}

TEST_F(api, wrong_magic_pool_fd)
{
	struct kvtier_batch b;
	int pfd;

	ASSERT_EQ(0, kst_api(self->ctl, KST_F_KNOWN, NULL));
	pfd = kst_pool_create(self->ctl, self->name, KST_PAGE, 4, 4);
	ASSERT_LE(0, pfd);
	memset(&b, 0, sizeof(b));
	ASSERT_EQ(-ENOTTY, kst_ioctl(pfd, _IOWR('T', 0x10,
						struct kvtier_batch), &b));
	close(pfd);
}

/* ---- argument size rules ----------------------------------------------- */

TEST_F(api, size_smaller)
{
	struct kvtier_api a;

	api_init(&a);
	ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl,
				     kst_resize(KVTIER_IOC_API, sizeof(a) - 8),
				     &a));
	/* not handshaken by that */
	ASSERT_EQ(0, kst_api(self->ctl, KST_F_KNOWN, NULL));
}

TEST_F(api, size_zero)
{
	struct kvtier_api a;

	api_init(&a);
	ASSERT_EQ(-EINVAL, kst_ioctl(self->ctl,
				     kst_resize(KVTIER_IOC_API, 0), &a));
}

TEST_F(api, size_larger_nonzero_tail_first)
{
	__u8 buf[sizeof(struct kvtier_api) + KST_TAIL];

	memset(buf, 0, sizeof(buf));
	api_init((struct kvtier_api *)buf);
	buf[sizeof(struct kvtier_api)] = 1;
	ASSERT_EQ(-E2BIG, kst_ioctl(self->ctl,
				    kst_resize(KVTIER_IOC_API, sizeof(buf)),
				    buf));
	ASSERT_EQ(0, kst_api(self->ctl, KST_F_KNOWN, NULL));
}

TEST_F(api, size_larger_nonzero_tail_last)
{
	__u8 buf[sizeof(struct kvtier_api) + KST_TAIL];

	memset(buf, 0, sizeof(buf));
	api_init((struct kvtier_api *)buf);
	buf[sizeof(buf) - 1] = 0x80;
	ASSERT_EQ(-E2BIG, kst_ioctl(self->ctl,
				    kst_resize(KVTIER_IOC_API, sizeof(buf)),
				    buf));
}

TEST_F(api, size_larger_zero_tail)
{
	__u8 buf[sizeof(struct kvtier_api) + KST_TAIL];
	struct kvtier_api *a = (struct kvtier_api *)buf;
	size_t i;

	memset(buf, 0, sizeof(buf));
	api_init(a);
	a->features = KVTIER_F_POOLS;
	ASSERT_EQ(0, kst_ioctl(self->ctl,
			       kst_resize(KVTIER_IOC_API, sizeof(buf)), buf));
	ASSERT_EQ(KVTIER_F_POOLS, a->features);
	ASSERT_EQ(KST_F_V1, a->supported & KST_F_V1);
	ASSERT_EQ((__u32)KVTIER_BATCH_MAX, a->batch_max);
	/* the tail the kernel does not know stays as it was */
	for (i = sizeof(*a); i < sizeof(buf); i++)
		ASSERT_EQ(0, buf[i]);
	/* it was the handshake */
	ASSERT_EQ(-EBUSY, kst_api(self->ctl, KST_F_KNOWN, NULL));
}

TEST_F(api, create_size_smaller)
{
	struct kvtier_pool_create c;

	ASSERT_EQ(0, kst_api(self->ctl, KST_F_KNOWN, NULL));
	kst_create_init(&c, self->name, KST_PAGE, 4, 4);
	ASSERT_EQ(-EINVAL,
		  kst_ioctl(self->ctl, kst_resize(KVTIER_IOC_POOL_CREATE,
						  KVTIER_POOL_CREATE_SIZE_VER0 -
						  8), &c));
	ASSERT_EQ(-ENOENT, kst_pool_open(self->ctl, self->name, 0));
	/* The first version's struct, without the weight pool's fields. */
	ASSERT_LE(0, kst_ioctl(self->ctl,
			       kst_resize(KVTIER_IOC_POOL_CREATE,
					  KVTIER_POOL_CREATE_SIZE_VER0), &c));
	close(c.fd);
	ASSERT_EQ(0, kst_pool_destroy(self->ctl, self->name));
}

TEST_F(api, create_size_larger_nonzero_tail)
{
	__u8 buf[sizeof(struct kvtier_pool_create) + KST_TAIL];

	ASSERT_EQ(0, kst_api(self->ctl, KST_F_KNOWN, NULL));
	memset(buf, 0, sizeof(buf));
	kst_create_init((struct kvtier_pool_create *)buf, self->name,
			KST_PAGE, 4, 4);
	buf[sizeof(buf) - 8] = 1;
	ASSERT_EQ(-E2BIG,
		  kst_ioctl(self->ctl, kst_resize(KVTIER_IOC_POOL_CREATE,
						  sizeof(buf)), buf));
	ASSERT_EQ(-ENOENT, kst_pool_open(self->ctl, self->name, 0));
}

TEST_F(api, create_size_larger_zero_tail)
{
	__u8 buf[sizeof(struct kvtier_pool_create) + KST_TAIL];
	struct kvtier_pool_create *c = (struct kvtier_pool_create *)buf;
	struct kvtier_pool_stat st;

	ASSERT_EQ(0, kst_api(self->ctl, KST_F_KNOWN, NULL));
	memset(buf, 0, sizeof(buf));
	kst_create_init(c, self->name, 2 * KST_PAGE, 8, 4);
	ASSERT_EQ(0, kst_ioctl(self->ctl, kst_resize(KVTIER_IOC_POOL_CREATE,
						     sizeof(buf)), buf));
	ASSERT_LE(0, c->fd);
	ASSERT_EQ(0, kst_stat(c->fd, &st));
	ASSERT_EQ(2 * KST_PAGE, st.block_size);
	ASSERT_EQ(8U, st.capacity);
	ASSERT_EQ(4U, st.dram_blocks);
	close(c->fd);
}

TEST_F(api, stat_size_larger_zero_tail)
{
	__u8 buf[sizeof(struct kvtier_pool_stat) + KST_TAIL];
	struct kvtier_pool_stat *st = (struct kvtier_pool_stat *)buf;
	int pfd;

	ASSERT_EQ(0, kst_api(self->ctl, KST_F_KNOWN, NULL));
	pfd = kst_pool_create(self->ctl, self->name, 3 * KST_PAGE, 5, 5);
	ASSERT_LE(0, pfd);
	memset(buf, 0, sizeof(buf));
	ASSERT_EQ(0, kst_ioctl(pfd, kst_resize(KVTIER_IOC_STAT, sizeof(buf)),
			       buf));
	ASSERT_EQ(3 * KST_PAGE, st->block_size);
	ASSERT_EQ(5U, st->capacity);
	close(pfd);
}

TEST_F(api, stat_size_smaller)
{
	struct kvtier_pool_stat st;
	int pfd;

	ASSERT_EQ(0, kst_api(self->ctl, KST_F_KNOWN, NULL));
	pfd = kst_pool_create(self->ctl, self->name, KST_PAGE, 4, 4);
	ASSERT_LE(0, pfd);
	memset(&st, 0, sizeof(st));
	ASSERT_EQ(-EINVAL, kst_ioctl(pfd, kst_resize(KVTIER_IOC_STAT,
				KVTIER_POOL_STAT_SIZE_VER0 - 8), &st));
	/* The first version's struct (an older program's) is answered. */
	ASSERT_EQ(0, kst_ioctl(pfd, kst_resize(KVTIER_IOC_STAT,
				KVTIER_POOL_STAT_SIZE_VER0), &st));
	EXPECT_EQ(KST_PAGE, st.block_size);
	EXPECT_EQ(0U, st.z_blocks);	/* past what it asked for */
	close(pfd);
}

/* Argument pointer the kernel cannot read. */
TEST_F(api, bad_arg_pointer)
{
	ASSERT_EQ(-EFAULT, kst_ioctl(self->ctl, KVTIER_IOC_API,
				     kst_unmapped_addr()));
	ASSERT_EQ(0, kst_api(self->ctl, KST_F_KNOWN, NULL));
}

/*
 * A command that returns -EFAULT because its answer cannot be written
 * back changes nothing ("Outputs are written only on success"; a failed
 * command is one that did not happen): the handshake can be done again.
 * (Found by the fuzzer.)
 */
TEST_F(api, efault_handshake_changes_nothing)
{
	struct kvtier_api a;
	void *ro;

	memset(&a, 0, sizeof(a));
	a.api = KVTIER_API_VERSION;
	ro = kst_ro_page_with(&a, sizeof(a));
	ASSERT_NE(NULL, ro);
	ASSERT_EQ(-EFAULT, kst_ioctl(self->ctl, KVTIER_IOC_API, ro));
	/* no handshake happened: commands still want one, and it works */
	EXPECT_EQ(-EINVAL, kst_pool_destroy(self->ctl, "fz.none"));
	EXPECT_EQ(0, kst_api(self->ctl, KST_F_KNOWN, NULL));
	munmap(ro, KST_PAGE);
}

TEST_HARNESS_MAIN
