/* SPDX-License-Identifier: GPL-2.0 */
/*
 * policy-online.h: classic single-level online replacement policies, for
 * tools/policy-sim to compare with LRU and Belady's MIN.
 *
 * A cache of @cap blocks over dense keys in [0, nkeys). Each access is
 * O(1) amortized (lfu: O(log cap)), with per-key arrays allocated once by
 * online_new(); nothing is allocated per access. At no time are more
 * than @cap keys resident; ghost entries (keys remembered after eviction)
 * do not count. See policy-online.c for what each policy does.
 */
#ifndef KVTIER_POLICY_ONLINE_H
#define KVTIER_POLICY_ONLINE_H

#include "policy-shim.h"

enum online_kind {
	ONL_SLRU,		/* segmented LRU, 80% protected */
	ONL_2Q,			/* full 2Q: A1in, A1out ghosts, Am */
	ONL_ARC,		/* ARC: T1, T2, B1, B2, adaptive p */
	ONL_S3FIFO,		/* S3-FIFO: small, main, ghost FIFOs */
	ONL_LFU,		/* LFU, counts halved every 16 x @cap accesses */
	ONL_NR,
};

struct online;

/* "slru", "2q", "arc", "s3fifo", "lfu"; NULL for an unknown kind. */
const char *online_name(int kind);

/* The kind called @name, or -1 if there is none. */
int online_kind_of(const char *name);

/* An empty cache; NULL if out of memory or if @kind or @cap is invalid. */
struct online *online_new(int kind, u32 nkeys, u32 cap);

/*
 * Access @key (< nkeys): true on a hit. On a miss the key is admitted,
 * evicting another if the cache is full.
 */
bool online_access(struct online *o, u32 key);

/* Resident keys; never more than cap. */
u32 online_nr(const struct online *o);

/* Whether @key is resident (ghosts are not). */
bool online_has(const struct online *o, u32 key);

/* 0, or -EINVAL if an internal invariant is broken. O(nkeys + cap). */
int online_check(const struct online *o);

void online_free(struct online *o);

#endif /* KVTIER_POLICY_ONLINE_H */
