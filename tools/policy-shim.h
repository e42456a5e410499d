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
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;

#define BIT(n)			(1U << (n))
#define U32_MAX			UINT32_MAX
#define min_t(t, a, b)		((t)(a) < (t)(b) ? (t)(a) : (t)(b))
#define max_t(t, a, b)		((t)(a) > (t)(b) ? (t)(a) : (t)(b))

/* Counted, so the simulator's self-test can fail on any warning. */
extern unsigned long shim_warnings;
#define WARN_ON_ONCE(cond) ({						\
	bool __c = !!(cond);						\
	if (__c && !shim_warnings++)					\
		fprintf(stderr, "WARNING: %s:%d: %s\n", __FILE__,	\
			__LINE__, #cond);				\
	__c;								\
})

/* One thread: the lock is a name only. */
typedef struct { int unused; } spinlock_t;
#define lockdep_assert_held(l)	((void)(l))
#define READ_ONCE(x)		(x)

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
	struct kvt_policy pol;
};

#endif /* KVTIER_POLICY_SHIM_H */
