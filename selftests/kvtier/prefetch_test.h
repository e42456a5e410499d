/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the prefetch tests (prefetch.c, prefetch_reject.c), on top of
 * nvme_test.h: hints of the tests' keys, PREFETCH arguments, the engine's
 * sysfs counters and parameters, completion records.
 */
#ifndef KVTIER_PREFETCH_TEST_H
#define KVTIER_PREFETCH_TEST_H

#include <poll.h>

#include "nvme_test.h"

#define K0	0x7072656665746368ULL	/* "prefetch" */
#define SEC	1000000000ULL

static inline __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * SEC + ts.tv_nsec;
}

/* Write a module parameter; 0 or -errno. */
static inline int set_param(const char *name, long long val)
{
	char path[256];

	snprintf(path, sizeof(path), KST_PARAM_DIR "/%s", name);
	return kst_write_num(path, val);
}

/* A counter of /sys/kernel/kvtier/prefetch ("name value" lines). */
static inline long long pf_stat(const char *name)
{
	char buf[2048], *p;
	size_t len = strlen(name);

	if (kst_read_file(KST_SYSFS_DIR "/prefetch", buf, sizeof(buf)) < 0)
		return -1;
	for (p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, name, len) && p[len] == ' ')
			return strtoll(p + len + 1, NULL, 10);
	return -1;
}

static inline void hint_keys(struct kvtier_hint *h, __u64 first, __u32 n)
{
	__u32 i;

	memset(h, 0, n * sizeof(*h));
	for (i = 0; i < n; i++) {
		h[i].key[0] = K0;
		h[i].key[1] = first + i;
	}
}

static inline void pf_init(struct kvtier_prefetch *pf,
			   struct kvtier_hint *h, __u32 n, __u64 group, __u64 deadline, __u32 flags)
{
	memset(pf, 0, sizeof(*pf));
	pf->hints = (__u64)(uintptr_t)h;
	pf->count = n;
	pf->group = group;
	pf->cookie = group * 1000 + 7;
	pf->deadline_ns = deadline;
	pf->flags = flags;
	pf->tier = KVTIER_TIER_DRAM;
}

/* One completion record within @ms; 0, -ETIMEDOUT or -errno. */
static inline int completion(int pfd, struct kvtier_completion *c, int ms)
{
	struct pollfd p = { .fd = pfd, .events = POLLIN };
	ssize_t n;
	int ret = poll(&p, 1, ms);

	if (ret < 0)
		return -errno;
	if (!ret)
		return -ETIMEDOUT;
	n = read(pfd, c, sizeof(*c));
	if (n < 0)
		return -errno;
	return n == sizeof(*c) ? 0 : -EIO;
}

#endif /* KVTIER_PREFETCH_TEST_H */
