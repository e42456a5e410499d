// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier selftests: the prefetch commands' rejections (KVTIER_IOC_PREFETCH,
 * CANCEL, EVENTFD, and read(2) of completion records): one bad field a
 * case, its exact errno, and nothing changed afterwards. The model is the
 * reject fixture of blocks.c.
 */
#include <sys/eventfd.h>

#include "prefetch_test.h"

/* ---- rejections: one bad field a case, exact errno, nothing changes ---- */

/*
 * The fixtures below need no NVMe: every command is refused before a block
 * is looked at. Their pool holds keys 0 and 1, in DRAM, and its fd is
 * O_NONBLOCK, so a completion record that should not be there reads at
 * once. After each refusal the test sends the same command without the bad
 * field and it is taken: the refusal was about that one field.
 */
#define RJ_CAP		16U

/* What a refused command must leave as it was. */
struct pf_snap {
	long long live, hints, groups;
};

static void pf_snap(struct pf_snap *s)
{
	s->live = pf_stat("live");
	s->hints = pf_stat("hints");
	s->groups = pf_stat("groups");
}

/* A pool with keys 0 and 1 and an O_NONBLOCK fd; 0 or -errno. */
static int rj_pool(int ctl, char name[KVTIER_NAME_MAX], int *pfd)
{
	char *buf = kst_alloc(KST_PAGE);
	int fd, i, ret = 0;

	if (!buf)
		return -ENOMEM;
	kst_name(name, "pfrj");
	fd = kst_pool_create(ctl, name, KST_PAGE, RJ_CAP, RJ_CAP);
	for (i = 0; fd >= 0 && i < 2 && !ret; i++) {
		kst_fill(buf, KST_PAGE, K0, i, 1);
		ret = kst_put1(fd, K0, i, buf, NULL);
	}
	kst_free(buf, KST_PAGE);
	if (fd < 0)
		return fd;
	if (!ret && fcntl(fd, F_SETFL, O_NONBLOCK))
		ret = -errno;
	*pfd = fd;
	return ret;
}

/* Nothing queued, counted or posted since @before; no record to read. */
static void rj_unchanged(struct __test_metadata *_metadata, int pfd,
			 const struct pf_snap *before)
{
	struct kvtier_completion c;
	struct pf_snap now;

	pf_snap(&now);
	ASSERT_EQ(before->live, now.live);
	ASSERT_EQ(before->hints, now.hints);
	ASSERT_EQ(before->groups, now.groups);
	ASSERT_EQ(-1, read(pfd, &c, sizeof(c)));
	ASSERT_EQ(EAGAIN, errno);
}

/* A PREFETCH of the two keys that completes at once; 0 or -errno. */
static int rj_prefetch(int pfd, __u64 group)
{
	struct kvtier_hint h[2];
	struct kvtier_prefetch pf;

	hint_keys(h, 0, 2);
	pf_init(&pf, h, 2, group, 0, 0);
	return kst_ioctl(pfd, KVTIER_IOC_PREFETCH, &pf);
}

/* ---- PREFETCH ---- */

FIXTURE(pf_reject) {
	int ctl, pfd;
	char name[KVTIER_NAME_MAX];
	struct kvtier_hint h[2];
	struct kvtier_prefetch pf;	/* valid but for the variant's field */
	struct pf_snap before;
};

FIXTURE_VARIANT(pf_reject) {
	void (*bad)(struct kvtier_prefetch *pf);	/* the one bad field */
	int err;
};

static void rj_count_zero(struct kvtier_prefetch *pf)
{
	pf->count = 0;
}

static void rj_count_over_max(struct kvtier_prefetch *pf)
{
	pf->count = KVTIER_BATCH_MAX + 1;
}

static void rj_count_huge(struct kvtier_prefetch *pf)
{
	pf->count = 0xffffffffU;
}

static void rj_flags_unknown(struct kvtier_prefetch *pf)
{
	pf->flags = kst_unknown_bit(KVTIER_PREFETCH_FLAGS);
}

static void rj_flags_bit31(struct kvtier_prefetch *pf)
{
	pf->flags = 1U << 31;
}

static void rj_group_zero(struct kvtier_prefetch *pf)
{
	pf->group = 0;
}

static void rj_tier_none(struct kvtier_prefetch *pf)
{
	pf->tier = KVTIER_TIER_NONE;
}

static void rj_tier_nvme(struct kvtier_prefetch *pf)
{
	pf->tier = KVTIER_TIER_NVME;
}

static void rj_tier_past_last(struct kvtier_prefetch *pf)
{
	pf->tier = KVTIER_NR_TIERS;
}

/* HBM is a tier PREFETCH takes, but this pool has no device tier. */
static void rj_tier_hbm_no_device(struct kvtier_prefetch *pf)
{
	pf->tier = KVTIER_TIER_HBM;
}

static void rj_priority_over_max(struct kvtier_prefetch *pf)
{
	pf->priority = KVTIER_PRIO_MAX + 1;
}

static void rj_reserved0(struct kvtier_prefetch *pf)
{
	pf->reserved[0] = 1;
}

static void rj_reserved1(struct kvtier_prefetch *pf)
{
	pf->reserved[1] = 1ULL << 63;
}

/* A deadline already past, with cancel-at-deadline semantics. */
static void rj_deadline_past(struct kvtier_prefetch *pf)
{
	pf->flags = KVTIER_PREFETCH_CANCEL_LATE;
	pf->deadline_ns = now_ns() - SEC;
}

static struct kvtier_hint *rj_hint1(struct kvtier_prefetch *pf)
{
	return &((struct kvtier_hint *)(uintptr_t)pf->hints)[1];
}

/* An unknown flag in the second hint. */
static void rj_hint_flags(struct kvtier_prefetch *pf)
{
	rj_hint1(pf)->flags = kst_unknown_bit(KVTIER_HINT_FLAGS);
}

static void rj_hint_flags_top(struct kvtier_prefetch *pf)
{
	rj_hint1(pf)->flags = 1U << 31;
}

static void rj_hint_reserved(struct kvtier_prefetch *pf)
{
	rj_hint1(pf)->reserved[1] = 1;
}

/* A probability without KVTIER_HINT_PROB. */
static void rj_hint_prob_no_flag(struct kvtier_prefetch *pf)
{
	rj_hint1(pf)->prob = KVTIER_PROB_ONE / 2;
}

static void rj_hint_prob_over_one(struct kvtier_prefetch *pf)
{
	rj_hint1(pf)->flags = KVTIER_HINT_PROB;
	rj_hint1(pf)->prob = KVTIER_PROB_ONE + 1;
}

static void rj_hints_null(struct kvtier_prefetch *pf)
{
	pf->hints = 0;
}

static void rj_hints_unmapped(struct kvtier_prefetch *pf)
{
	pf->hints = (__u64)(uintptr_t)kst_unmapped_addr();
}

FIXTURE_VARIANT_ADD(pf_reject, count_zero) {
	.bad = rj_count_zero, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(pf_reject, count_over_max) {
	.bad = rj_count_over_max, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(pf_reject, count_huge) {
	.bad = rj_count_huge, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(pf_reject, flags_unknown) {
	.bad = rj_flags_unknown, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(pf_reject, flags_bit31) {
	.bad = rj_flags_bit31, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(pf_reject, group_zero) {
	.bad = rj_group_zero, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(pf_reject, tier_none) {
	.bad = rj_tier_none, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(pf_reject, tier_nvme) {
	.bad = rj_tier_nvme, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(pf_reject, tier_past_last) {
	.bad = rj_tier_past_last, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(pf_reject, tier_hbm_no_device) {
	.bad = rj_tier_hbm_no_device, .err = -EOPNOTSUPP,
};
FIXTURE_VARIANT_ADD(pf_reject, priority_over_max) {
	.bad = rj_priority_over_max, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(pf_reject, reserved0) {
	.bad = rj_reserved0, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(pf_reject, reserved1) {
	.bad = rj_reserved1, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(pf_reject, deadline_past) {
	.bad = rj_deadline_past, .err = -ETIME,
};
FIXTURE_VARIANT_ADD(pf_reject, hint_flags) {
	.bad = rj_hint_flags, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(pf_reject, hint_flags_top) {
	.bad = rj_hint_flags_top, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(pf_reject, hint_reserved) {
	.bad = rj_hint_reserved, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(pf_reject, hint_prob_no_flag) {
	.bad = rj_hint_prob_no_flag, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(pf_reject, hint_prob_over_one) {
	.bad = rj_hint_prob_over_one, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(pf_reject, hints_null) {
	.bad = rj_hints_null, .err = -EFAULT,
};
FIXTURE_VARIANT_ADD(pf_reject, hints_unmapped) {
	.bad = rj_hints_unmapped, .err = -EFAULT,
};

/* Hints whose out fields a refused PREFETCH must not write. */
static void rj_hints(struct kvtier_hint *h)
{
	int i;

	hint_keys(h, 0, 2);
	for (i = 0; i < 2; i++) {
		h[i].addr = 0x5a5a5a5a5a5a5a5aULL;
		h[i].status = 0x7eadbeef;
		h[i].tier = 0xa5a5a5a5;
	}
}

FIXTURE_SETUP(pf_reject)
{
	kst_setup(_metadata);

	self->pfd = -1;
	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	ASSERT_EQ(0, rj_pool(self->ctl, self->name, &self->pfd));
	rj_hints(self->h);
	pf_init(&self->pf, self->h, 2, 5, 0, 0);
	pf_snap(&self->before);
}

FIXTURE_TEARDOWN(pf_reject)
{
	if (self->pfd >= 0)
		close(self->pfd);
	kst_pool_destroy(self->ctl, self->name);
	close(self->ctl);
}

TEST_F(pf_reject, refused)
{
	struct kvtier_completion c;
	int i;

	variant->bad(&self->pf);
	ASSERT_EQ(variant->err,
		  kst_ioctl(self->pfd, KVTIER_IOC_PREFETCH, &self->pf));
	rj_unchanged(_metadata, self->pfd, &self->before);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0x5a5a5a5a5a5a5a5aULL, self->h[i].addr);
		ASSERT_EQ(0x7eadbeef, self->h[i].status);
		ASSERT_EQ(0xa5a5a5a5U, self->h[i].tier);
	}
	/* Without the bad field: taken, both blocks resident. */
	rj_hints(self->h);
	pf_init(&self->pf, self->h, 2, 5, 0, 0);
	ASSERT_EQ(0, kst_ioctl(self->pfd, KVTIER_IOC_PREFETCH, &self->pf));
	ASSERT_EQ(2U, self->pf.resident);
	ASSERT_EQ(0, completion(self->pfd, &c, 10000));
	ASSERT_EQ(5ULL, c.group);
	ASSERT_EQ(0, c.status);
}

/* ---- CANCEL ---- */

/*
 * Group 1 has completed and still holds its blocks (prefetch_hold_ms is
 * raised so it stays live): a refused CANCEL leaves it, CANCEL of group 1
 * frees it.
 */
FIXTURE(cancel_reject) {
	int ctl, pfd;
	char name[KVTIER_NAME_MAX];
	long long hold;
	struct kvtier_cancel cn;	/* valid but for the variant's field */
	struct pf_snap before;
};

FIXTURE_VARIANT(cancel_reject) {
	void (*bad)(struct kvtier_cancel *cn);
	int err;
};

static void rj_cancel_group_unknown(struct kvtier_cancel *cn)
{
	cn->group = 12345;
}

static void rj_cancel_group_zero(struct kvtier_cancel *cn)
{
	cn->group = 0;
}

/* KVTIER_CANCEL_ALL takes no group. */
static void rj_cancel_all_and_group(struct kvtier_cancel *cn)
{
	cn->flags = KVTIER_CANCEL_ALL;
}

static void rj_cancel_flags_unknown(struct kvtier_cancel *cn)
{
	cn->flags = kst_unknown_bit(KVTIER_CANCEL_ALL);
}

static void rj_cancel_flags_bit31(struct kvtier_cancel *cn)
{
	cn->flags = 1U << 31;
}

static void rj_cancel_pad(struct kvtier_cancel *cn)
{
	cn->__pad = 1;
}

static void rj_cancel_pad2(struct kvtier_cancel *cn)
{
	cn->__pad2 = 1;
}

static void rj_cancel_reserved0(struct kvtier_cancel *cn)
{
	cn->reserved[0] = 1;
}

static void rj_cancel_reserved1(struct kvtier_cancel *cn)
{
	cn->reserved[1] = 1ULL << 63;
}

FIXTURE_VARIANT_ADD(cancel_reject, group_unknown) {
	.bad = rj_cancel_group_unknown, .err = -ENOENT,
};
FIXTURE_VARIANT_ADD(cancel_reject, group_zero) {
	.bad = rj_cancel_group_zero, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(cancel_reject, all_and_group) {
	.bad = rj_cancel_all_and_group, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(cancel_reject, flags_unknown) {
	.bad = rj_cancel_flags_unknown, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(cancel_reject, flags_bit31) {
	.bad = rj_cancel_flags_bit31, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(cancel_reject, pad) {
	.bad = rj_cancel_pad, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(cancel_reject, pad2) {
	.bad = rj_cancel_pad2, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(cancel_reject, reserved0) {
	.bad = rj_cancel_reserved0, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(cancel_reject, reserved1) {
	.bad = rj_cancel_reserved1, .err = -EINVAL,
};

FIXTURE_SETUP(cancel_reject)
{
	struct kvtier_completion c;

	kst_setup(_metadata);

	self->pfd = -1;
	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	ASSERT_EQ(0, kst_param("prefetch_hold_ms", &self->hold));
	ASSERT_EQ(0, set_param("prefetch_hold_ms", 600000));
	ASSERT_EQ(0, rj_pool(self->ctl, self->name, &self->pfd));
	ASSERT_EQ(0, rj_prefetch(self->pfd, 1));
	ASSERT_EQ(0, completion(self->pfd, &c, 10000));
	ASSERT_EQ(1ULL, c.group);
	memset(&self->cn, 0, sizeof(self->cn));
	self->cn.group = 1;
	self->cn.cancelled = 0xffffffffU;
	pf_snap(&self->before);
	ASSERT_LE(1, self->before.live);
}

FIXTURE_TEARDOWN(cancel_reject)
{
	set_param("prefetch_hold_ms", self->hold);
	if (self->pfd >= 0)
		close(self->pfd);
	kst_pool_destroy(self->ctl, self->name);
	close(self->ctl);
}

TEST_F(cancel_reject, refused)
{
	variant->bad(&self->cn);
	ASSERT_EQ(variant->err,
		  kst_ioctl(self->pfd, KVTIER_IOC_CANCEL, &self->cn));
	rj_unchanged(_metadata, self->pfd, &self->before);
	/* Without the bad field: group 1 goes (it had ended: 0 cancelled). */
	memset(&self->cn, 0, sizeof(self->cn));
	self->cn.group = 1;
	ASSERT_EQ(0, kst_ioctl(self->pfd, KVTIER_IOC_CANCEL, &self->cn));
	ASSERT_EQ(0U, self->cn.cancelled);
	ASSERT_EQ(self->before.live - 1, pf_stat("live"));
}

/* ---- EVENTFD ---- */

/*
 * An eventfd is registered: after a refused EVENTFD a completion still
 * signals it; the valid command then moves the signal to a second one.
 */
FIXTURE(efd_reject) {
	int ctl, pfd;
	char name[KVTIER_NAME_MAX];
	int efd, efd2, pipe[2];
	struct kvtier_eventfd ev;	/* valid but for the variant's field */
	struct pf_snap before;
};

FIXTURE_VARIANT(efd_reject) {
	void (*bad)(FIXTURE_DATA(efd_reject) *self);
	int err;
};

static void rj_efd_not_open(FIXTURE_DATA(efd_reject) *self)
{
	self->ev.fd = 12345;
}

static void rj_efd_not_eventfd(FIXTURE_DATA(efd_reject) *self)
{
	self->ev.fd = self->pipe[0];
}

static void rj_efd_minus2(FIXTURE_DATA(efd_reject) *self)
{
	self->ev.fd = -2;
}

static void rj_efd_int_min(FIXTURE_DATA(efd_reject) *self)
{
	self->ev.fd = INT32_MIN;
}

static void rj_efd_flags(FIXTURE_DATA(efd_reject) *self)
{
	self->ev.flags = 1;
}

static void rj_efd_flags_bit31(FIXTURE_DATA(efd_reject) *self)
{
	self->ev.flags = 1U << 31;
}

static void rj_efd_reserved0(FIXTURE_DATA(efd_reject) *self)
{
	self->ev.reserved[0] = 1;
}

static void rj_efd_reserved1(FIXTURE_DATA(efd_reject) *self)
{
	self->ev.reserved[1] = 1ULL << 63;
}

FIXTURE_VARIANT_ADD(efd_reject, fd_not_open) {
	.bad = rj_efd_not_open, .err = -EBADF,
};
FIXTURE_VARIANT_ADD(efd_reject, fd_not_eventfd) {
	.bad = rj_efd_not_eventfd, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(efd_reject, fd_minus2) {
	.bad = rj_efd_minus2, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(efd_reject, fd_int_min) {
	.bad = rj_efd_int_min, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(efd_reject, flags) {
	.bad = rj_efd_flags, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(efd_reject, flags_bit31) {
	.bad = rj_efd_flags_bit31, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(efd_reject, reserved0) {
	.bad = rj_efd_reserved0, .err = -EINVAL,
};
FIXTURE_VARIANT_ADD(efd_reject, reserved1) {
	.bad = rj_efd_reserved1, .err = -EINVAL,
};

/* The count an eventfd holds (read and so reset), or -errno. */
static long long efd_count(int efd)
{
	__u64 n;

	if (read(efd, &n, sizeof(n)) != sizeof(n))
		return errno == EAGAIN ? 0 : -errno;
	return (long long)n;
}

/* Complete group @group on @pfd and read its record; 0 or -errno. */
static int rj_complete(int pfd, __u64 group)
{
	struct kvtier_completion c;
	int ret = rj_prefetch(pfd, group);

	if (!ret)
		ret = completion(pfd, &c, 10000);
	if (!ret && c.group != group)
		ret = -EPROTO;
	return ret;
}

FIXTURE_SETUP(efd_reject)
{
	struct kvtier_eventfd ev;

	kst_setup(_metadata);

	self->pfd = -1;
	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	ASSERT_EQ(0, rj_pool(self->ctl, self->name, &self->pfd));
	self->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ASSERT_LE(0, self->efd);
	self->efd2 = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ASSERT_LE(0, self->efd2);
	ASSERT_EQ(0, pipe(self->pipe));
	memset(&ev, 0, sizeof(ev));
	ev.fd = self->efd;
	ASSERT_EQ(0, kst_ioctl(self->pfd, KVTIER_IOC_EVENTFD, &ev));
	memset(&self->ev, 0, sizeof(self->ev));
	self->ev.fd = self->efd2;
	pf_snap(&self->before);
}

FIXTURE_TEARDOWN(efd_reject)
{
	if (self->pfd >= 0)
		close(self->pfd);
	kst_pool_destroy(self->ctl, self->name);
	close(self->efd);
	close(self->efd2);
	close(self->pipe[0]);
	close(self->pipe[1]);
	close(self->ctl);
}

TEST_F(efd_reject, refused)
{
	variant->bad(self);
	ASSERT_EQ(variant->err,
		  kst_ioctl(self->pfd, KVTIER_IOC_EVENTFD, &self->ev));
	rj_unchanged(_metadata, self->pfd, &self->before);
	/* The first eventfd is still the one signalled. */
	ASSERT_EQ(0, rj_complete(self->pfd, 1));
	ASSERT_EQ(1, efd_count(self->efd));
	ASSERT_EQ(0, efd_count(self->efd2));
	/* Without the bad field: the second one is. */
	memset(&self->ev, 0, sizeof(self->ev));
	self->ev.fd = self->efd2;
	ASSERT_EQ(0, kst_ioctl(self->pfd, KVTIER_IOC_EVENTFD, &self->ev));
	ASSERT_EQ(0, rj_complete(self->pfd, 2));
	ASSERT_EQ(0, efd_count(self->efd));
	ASSERT_EQ(1, efd_count(self->efd2));
}

/* ---- what is not a bad field: CANCEL_ALL of none, fd -1, read(2) ---- */

FIXTURE(pf_fd) {
	int ctl, pfd;
	char name[KVTIER_NAME_MAX];
};

FIXTURE_SETUP(pf_fd)
{
	kst_setup(_metadata);

	self->pfd = -1;
	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	ASSERT_EQ(0, rj_pool(self->ctl, self->name, &self->pfd));
}

FIXTURE_TEARDOWN(pf_fd)
{
	if (self->pfd >= 0)
		close(self->pfd);
	kst_pool_destroy(self->ctl, self->name);
	close(self->ctl);
}

/* CANCEL_ALL with nothing live is not an error. */
TEST_F(pf_fd, cancel_all_of_none)
{
	struct kvtier_cancel cn;

	memset(&cn, 0, sizeof(cn));
	cn.flags = KVTIER_CANCEL_ALL;
	cn.cancelled = 0xffffffffU;
	ASSERT_EQ(0, kst_ioctl(self->pfd, KVTIER_IOC_CANCEL, &cn));
	ASSERT_EQ(0U, cn.cancelled);
}

/* fd -1 unregisters: nothing is signalled after it. */
TEST_F(pf_fd, eventfd_minus1_unregisters)
{
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct kvtier_eventfd ev;

	ASSERT_LE(0, efd);
	memset(&ev, 0, sizeof(ev));
	ev.fd = efd;
	ASSERT_EQ(0, kst_ioctl(self->pfd, KVTIER_IOC_EVENTFD, &ev));
	ASSERT_EQ(0, rj_complete(self->pfd, 1));
	ASSERT_EQ(1, efd_count(efd));
	ev.fd = -1;
	ASSERT_EQ(0, kst_ioctl(self->pfd, KVTIER_IOC_EVENTFD, &ev));
	ASSERT_EQ(0, rj_complete(self->pfd, 2));
	ASSERT_EQ(0, efd_count(efd));
	close(efd);
}

/* A buffer shorter than a record is refused; the record stays. */
TEST_F(pf_fd, read_short_buffer)
{
	struct kvtier_completion c;
	char small[sizeof(c) - 1];
	struct pollfd p = { .fd = self->pfd, .events = POLLIN };

	ASSERT_EQ(0, rj_prefetch(self->pfd, 3));
	ASSERT_EQ(1, poll(&p, 1, 10000));
	ASSERT_EQ(-1, read(self->pfd, small, sizeof(small)));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, read(self->pfd, small, 8));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ((ssize_t)sizeof(c), read(self->pfd, &c, sizeof(c)));
	ASSERT_EQ(3ULL, c.group);
}

/* Nothing to read and O_NONBLOCK: -EAGAIN. */
TEST_F(pf_fd, read_empty_nonblock)
{
	struct kvtier_completion c;

	ASSERT_EQ(-1, read(self->pfd, &c, sizeof(c)));
	ASSERT_EQ(EAGAIN, errno);
}

/* Two groups at once: the earlier deadline is staged first. */

TEST_HARNESS_MAIN
