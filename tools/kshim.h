/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kshim.h: the kernel stand-ins that policy-shim.h and index-shim.h share,
 * for module code built unchanged in userspace (kmod/policy.c,
 * kmod/index.c): the integer types, BIT(), U32_MAX, min_t()/max_t(),
 * WARN_ON_ONCE() counted in shim_warnings (so a self-test can fail on any
 * warning), and a spinlock that is a name only (one thread).
 */
#ifndef KVTIER_KSHIM_H
#define KVTIER_KSHIM_H

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

extern unsigned long shim_warnings;
#define WARN_ON_ONCE(cond) ({						\
	bool __c = !!(cond);						\
	if (__c && !shim_warnings++)					\
		fprintf(stderr, "WARNING: %s:%d: %s\n", __FILE__,	\
			__LINE__, #cond);				\
	__c;								\
})

typedef struct { int unused; } spinlock_t;
#define lockdep_assert_held(l)	((void)(l))
#define READ_ONCE(x)		(x)

#endif /* KVTIER_KSHIM_H */
