/* SPDX-License-Identifier: GPL-2.0 */
/*
 * policy-shim.h: what kmod/policy.c needs of the kernel, in userspace.
 *
 * tools/policy-sim compiles kmod/policy.c, unchanged, against this header
 * instead of <linux/...> and kmod/kvt.h, the way the kernel's
 * tools/testing builds lib/ code: the types, WARN_ON_ONCE(), a no-op
 * lockdep_assert_held(), min_t()/max_t(), the errno values, and stand-ins for the parts of
 * struct kvt_pool and struct kvt_block the policy reads and writes (same
 * names, same types). kmod/policy.h lists them; nothing else may be used.
 */
#ifndef KVTIER_POLICY_SHIM_H
#define KVTIER_POLICY_SHIM_H

#include <errno.h>

#include "kshim.h"

#include "../kmod/policy.h"

#define KVT_NIL			U32_MAX

/* As in kmod/kvt.h. */
#define KVT_BF_WB		BIT(0)
#define KVT_BF_LOADING		BIT(1)
#define KVT_BF_EVICTING		BIT(2)

struct kvt_list {
	u32 head;
	u32 tail;
	u32 nr;
};

/* The policy's fields of kmod/kvt.h's struct kvt_block. */
struct kvt_block {
	u32 prev;
	u32 next;
	u32 nloc;
	u16 users;
	u8 flags;
	u8 pol;
};

/* The policy's fields of kmod/kvt.h's struct kvt_pool. */
struct kvt_pool {
	spinlock_t lock;
	struct kvt_block *blocks;
	struct kvt_list lru;
	struct kvt_list clean;
	struct kvt_policy pol;
};

#endif /* KVTIER_POLICY_SHIM_H */
