/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints: one event per block state transition.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM kvtier

#if !defined(_KVTIER_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _KVTIER_TRACE_H

#include <linux/tracepoint.h>
#include "kvt.h"

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

/* Prefetch: the engine started a read of a hinted block. */
DEFINE_EVENT(kvtier_block, kvtier_prefetch_issue,
	     TP_PROTO(struct kvt_pool *pool, u32 addr),
	     TP_ARGS(pool, addr));

/* Prefetch: a hinted block is in the target tier. */
DEFINE_EVENT(kvtier_block, kvtier_prefetch_ready,
	     TP_PROTO(struct kvt_pool *pool, u32 addr),
	     TP_ARGS(pool, addr));

/* HBM: a block's bytes reached its slot. */
DEFINE_EVENT(kvtier_block, kvtier_hbm_in,
	     TP_PROTO(struct kvt_pool *pool, u32 addr),
	     TP_ARGS(pool, addr));

/* HBM: an adopted block was written down to DRAM. */
DEFINE_EVENT(kvtier_block, kvtier_hbm_out,
	     TP_PROTO(struct kvt_pool *pool, u32 addr),
	     TP_ARGS(pool, addr));

/* Prefetch: a group of hints was queued. */
TRACE_EVENT(kvtier_hint_queued,
	    TP_PROTO(struct kvt_pool *pool, u64 group, u32 count,
		     u64 deadline),
	    TP_ARGS(pool, group, count, deadline),
	    TP_STRUCT__entry(__string(pool, pool->name)
			     __field(u64, group)
			     __field(u32, count)
			     __field(u64, deadline)),
	    TP_fast_assign(__assign_str(pool, pool->name);
			   __entry->group = group;
			   __entry->count = count;
			   __entry->deadline = deadline;),
	    TP_printk("pool=%s group=%llu count=%u deadline=%llu",
		      __get_str(pool), __entry->group, __entry->count,
		      __entry->deadline)
);

/* Prefetch: a hint named no block; the group goes on without it. */
TRACE_EVENT(kvtier_hint_dropped,
	    TP_PROTO(struct kvt_pool *pool, u64 group, u32 index),
	    TP_ARGS(pool, group, index),
	    TP_STRUCT__entry(__string(pool, pool->name)
			     __field(u64, group)
			     __field(u32, index)),
	    TP_fast_assign(__assign_str(pool, pool->name);
			   __entry->group = group;
			   __entry->index = index;),
	    TP_printk("pool=%s group=%llu index=%u", __get_str(pool),
		      __entry->group, __entry->index)
);

/* Prefetch: the policy left a probable hint's block unread. */
TRACE_EVENT(kvtier_hint_skipped,
	    TP_PROTO(struct kvt_pool *pool, u64 group, u32 index, u32 prob),
	    TP_ARGS(pool, group, index, prob),
	    TP_STRUCT__entry(__string(pool, pool->name)
			     __field(u64, group)
			     __field(u32, index)
			     __field(u32, prob)),
	    TP_fast_assign(__assign_str(pool, pool->name);
			   __entry->group = group;
			   __entry->index = index;
			   __entry->prob = prob;),
	    TP_printk("pool=%s group=%llu index=%u prob=%u", __get_str(pool),
		      __entry->group, __entry->index, __entry->prob)
);

/* Prefetch: a group ended (completed, expired, cancelled or failed). */
TRACE_EVENT(kvtier_prefetch_end,
	    TP_PROTO(struct kvt_pool *pool, u64 group, u32 count, u32 ready,
		     int status),
	    TP_ARGS(pool, group, count, ready, status),
	    TP_STRUCT__entry(__string(pool, pool->name)
			     __field(u64, group)
			     __field(u32, count)
			     __field(u32, ready)
			     __field(int, status)),
	    TP_fast_assign(__assign_str(pool, pool->name);
			   __entry->group = group;
			   __entry->count = count;
			   __entry->ready = ready;
			   __entry->status = status;),
	    TP_printk("pool=%s group=%llu count=%u ready=%u status=%d",
		      __get_str(pool), __entry->group, __entry->count,
		      __entry->ready, __entry->status)
);

#endif /* _KVTIER_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
