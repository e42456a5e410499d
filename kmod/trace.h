/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints: one event per block state transition.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM kvtier

#if !defined(_KVTIER_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _KVTIER_TRACE_H

#include <linux/tracepoint.h>
#include "kvtier.h"

DECLARE_EVENT_CLASS(kvtier_block,
		    TP_PROTO(struct kvt_pool *pool, u32 addr),
		    TP_ARGS(pool, addr),
		    TP_STRUCT__entry(__string(pool, pool->name)
				     __field(u32, addr)
				     __field(u64, key0)
				     __field(u64, key1)),
		    TP_fast_assign(__assign_str(pool, pool->name);
				   __entry->addr = addr;
				   __entry->key0 = pool->blocks[addr].key[0];
				   __entry->key1 = pool->blocks[addr].key[1];),
		    TP_printk("pool=%s addr=%u key=%016llx%016llx",
			      __get_str(pool), __entry->addr, __entry->key1,
			      __entry->key0)
);

/* FILLING -> READY: a PUT published the block. */
DEFINE_EVENT(kvtier_block, kvtier_block_ready,
	     TP_PROTO(struct kvt_pool *pool, u32 addr),
	     TP_ARGS(pool, addr));

/* READY -> DYING: dropped, evicted or replaced. */
DEFINE_EVENT(kvtier_block, kvtier_block_unlink,
	     TP_PROTO(struct kvt_pool *pool, u32 addr),
	     TP_ARGS(pool, addr));

/* DRAM -> NVMe: the DRAM copy of a block with a durable NVMe copy went. */
DEFINE_EVENT(kvtier_block, kvtier_block_demote,
	     TP_PROTO(struct kvt_pool *pool, u32 addr),
	     TP_ARGS(pool, addr));

/* NVMe -> DRAM: a block was read back and verified. */
DEFINE_EVENT(kvtier_block, kvtier_block_promote,
	     TP_PROTO(struct kvt_pool *pool, u32 addr),
	     TP_ARGS(pool, addr));

/* dirty -> clean: a block's NVMe copy became durable. */
DEFINE_EVENT(kvtier_block, kvtier_block_written,
	     TP_PROTO(struct kvt_pool *pool, u32 addr),
	     TP_ARGS(pool, addr));

/* DYING -> FREE: memory and address given back. */
DEFINE_EVENT(kvtier_block, kvtier_block_free,
	     TP_PROTO(struct kvt_pool *pool, u32 addr),
	     TP_ARGS(pool, addr));

#endif /* _KVTIER_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
