// SPDX-License-Identifier: GPL-2.0
/*
 * policy-sim: replay Mooncake-format traces through placement policies.
 *
 *   policy-sim --trace FILE|generated --capacities N,N,... [options]
 *   policy-sim --decisions --dram-blocks C --ops N [--seed S] [--policy P]
 *		[--nvme [--clean-first Y|N]]
 *   policy-sim --experts [--qd N,N,...] [options]
 *   policy-sim --selftest
 *
 * For each total capacity N (blocks, over all tiers) and each policy, it
 * replays the requests and prints the usable prefix hit ratio: a block
 * counts only if it and every earlier block of its request hit, in any
 * tier. The policies:
 *
 *  lru		one LRU list over N blocks (its top N x dram-share in DRAM)
 *  opt		Belady's MIN with bypass over N blocks, offline: evict (or
 *		do not admit) the block used again furthest in the future
 *  kvtier	the module's hierarchy as it runs by default: DRAM of
 *		N x dram-share blocks run by kmod/policy.c with policy=seg
 *		and policy_clean_first=Y (clean DRAM blocks evicted first,
 *		from the policy's clean list), demoting to an NVMe log of
 *		the rest, in regions reclaimed oldest first and run as a
 *		CLOCK (a block read back since it was written is written
 *		again when its region is reclaimed, for a read and a write),
 *		hot clean victims rescued
 *  kvtier-lru	the same with policy=lru
 *  kvtier-seg	the same with policy_clean_first=N: no clean list, no
 *		relocation (the module's default until the clean list was)
 *  kvtier-clean	what-if: the clean list without relocation
 *  slru, 2q, arc, s3fifo, lfu
 *		classic online policies over N blocks (tools/policy-online.c)
 *  sched	LRU over N blocks that knows the runtime's queue: a block
 *		the next --window requests use is evicted last
 *
 * The kvtier* rows run kmod/policy.c itself, compiled against
 * policy-shim.h; the hierarchy around it follows kmod/cmd.c and
 * kmod/tier_nvme.c. The runtime model sends, before each request, a
 * LOOKUP with TOUCH and LOAD for the request --window requests ahead (its
 * queue), as the prefetch hints would.
 *
 * --decisions prints, command by command, what kmod/policy.c decides for a
 * pool without NVMe, or with one (--nvme) and a SYNC after each command;
 * selftests/kvtier/policy requires the module to decide the same (see
 * decisions() below).
 *
 * --experts replays a generated mixture-of-experts decode that streams its
 * experts from NVMe, through kmod/policy.c's kvt_policy_hint() (what the
 * prefetch engine does with a probable hint) and replacement: no hints,
 * the predictor's top-k or all its candidates as sure hints, all with
 * their probabilities, and the router's own choice (see ex_load_init()).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvtier-demo.h"
#include "policy-online.h"
#include "policy-shim.h"
#include "util.h"

#define NIL		UINT32_MAX
#define MAX_CAPS	64

unsigned long shim_warnings;

/* ---- the trace, as dense key numbers ------------------------------------ */

struct trace_set {
	u32 nreq;
	u32 nacc;
	u32 nkeys;
	u32 *req_off;		/* nreq + 1 offsets into key[] */
	u32 *key;		/* dense key of each access */
	u32 *next;		/* index of the next access of the key, or NIL */
};

struct idmap {
	u64 *ids;
	u32 *vals;
	u64 mask;
	u32 nr;
};

static u64 mix64(u64 x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

static int idmap_grow(struct idmap *m)
{
	u64 size = m->mask ? (m->mask + 1) * 2 : 1024, i;
	u64 *ids = malloc(size * sizeof(*ids));
	u32 *vals = malloc(size * sizeof(*vals));

	if (!ids || !vals) {
		free(ids);
		free(vals);
		return -ENOMEM;
	}
	for (i = 0; i < size; i++)
		vals[i] = NIL;
	for (i = 0; m->mask && i <= m->mask; i++) {
		u64 j;

		if (m->vals[i] == NIL)
			continue;
		for (j = mix64(m->ids[i]) & (size - 1); vals[j] != NIL;
		     j = (j + 1) & (size - 1))
			;
		ids[j] = m->ids[i];
		vals[j] = m->vals[i];
	}
	free(m->ids);
	free(m->vals);
	m->ids = ids;
	m->vals = vals;
	m->mask = size - 1;
	return 0;
}

/* The dense number of @id, a new one if unseen; NIL when out of memory. */
static u32 idmap_get(struct idmap *m, u64 id)
{
	u64 j;

	if ((u64)(m->nr + 1) * 2 > m->mask + 1 && idmap_grow(m))
		return NIL;
	for (j = mix64(id) & m->mask; m->vals[j] != NIL; j = (j + 1) & m->mask)
		if (m->ids[j] == id)
			return m->vals[j];
	m->ids[j] = id;
	m->vals[j] = m->nr;
	return m->nr++;
}

static void trace_set_free(struct trace_set *t)
{
	free(t->req_off);
	free(t->key);
	free(t->next);
	memset(t, 0, sizeof(*t));
}

static int grow(void **p, u32 *cap, u32 need, size_t size)
{
	u32 c = *cap ? *cap : 1024;
	void *q;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	q = realloc(*p, (size_t)c * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

static int trace_set_add(struct trace_set *t, struct idmap *m, u32 *cap_req,
			 u32 *cap_acc, const struct request *r)
{
	u32 i;

	if (grow((void **)&t->req_off, cap_req, t->nreq + 2, sizeof(u32)) ||
	    grow((void **)&t->key, cap_acc, t->nacc + r->n, sizeof(u32)))
		return -ENOMEM;
	if (!t->nreq)
		t->req_off[0] = 0;
	for (i = 0; i < r->n; i++) {
		u32 k = idmap_get(m, r->ids[i]);

		if (k == NIL)
			return -ENOMEM;
		t->key[t->nacc++] = k;
	}
	t->req_off[++t->nreq] = t->nacc;
	return 0;
}

static int trace_set_finish(struct trace_set *t, struct idmap *m)
{
	u32 *last, i;

	t->nkeys = m->nr;
	free(m->ids);
	free(m->vals);
	memset(m, 0, sizeof(*m));
	t->next = malloc(((size_t)t->nacc + 1) * sizeof(u32));
	last = malloc(((size_t)t->nkeys + 1) * sizeof(u32));
	if (!t->next || !last) {
		free(last);
		return -ENOMEM;
	}
	for (i = 0; i < t->nkeys; i++)
		last[i] = NIL;
	for (i = t->nacc; i-- > 0;) {
		t->next[i] = last[t->key[i]];
		last[t->key[i]] = i;
	}
	free(last);
	return 0;
}

/* Load a trace file, or the built-in generator's requests ("generated"). */
static int trace_set_load(struct trace_set *t, const char *path,
			  const struct gen_opts *go, u64 max_req)
{
	struct request r = { 0 };
	struct trace *tr = NULL;
	struct gen *g = NULL;
	struct idmap m = { 0 };
	u32 cap_req = 0, cap_acc = 0;
	int ret;

	memset(t, 0, sizeof(*t));
	if (!strcmp(path, "generated"))
		ret = gen_new(go, &g);
	else
		ret = trace_open(path, &tr);
	if (ret)
		return ret;
	while (t->nreq < max_req) {
		ret = g ? gen_next(g, &r) : trace_next(tr, &r);
		if (ret <= 0)
			break;
		ret = trace_set_add(t, &m, &cap_req, &cap_acc, &r);
		if (ret)
			break;
	}
	if (ret == -EINVAL && tr)
		fprintf(stderr, "policy-sim: %s:%llu: not a trace line\n", path,
			(unsigned long long)trace_lineno(tr));
	request_free(&r);
	gen_free(g);
	trace_close(tr);
	if (!ret && !t->nreq)
		ret = -ENODATA;
	if (!ret)
		ret = trace_set_finish(t, &m);
	free(m.ids);
	free(m.vals);
	if (ret)
		trace_set_free(t);
	return ret;
}

/* ---- results -------------------------------------------------------------- */

struct result {
	u64 usable;		/* usable hits */
	u64 usable_dram;	/* of which served from DRAM */
	u64 hits;		/* block hits, usable or not */
	u64 reads;		/* blocks read from NVMe (promotions) */
	u64 writes;		/* blocks written to NVMe (demotions) */
	/* Sampled over the second half of the replay, in blocks: */
	u64 samples;
	u64 held;		/* distinct keys held, any tier */
	u64 dup;		/* in DRAM with an NVMe copy too */
	u64 dead;		/* NVMe log slots holding no block */
};

/* Census every this many requests, over the second half of the replay. */
#define CENSUS_EVERY	16

static bool census_now(const struct trace_set *t, u32 r)
{
	return r >= t->nreq / 2 && r % CENSUS_EVERY == 0;
}

struct sim_opts {
	double dram_share;
	u32 region_blocks;
	u32 window;
	u32 rescue_share;
	u64 block_bytes;
	u32 sync_every;
	u32 protect_pct;	/* prefetch_protect_pct */
};

/* ---- single level: LRU ---------------------------------------------------- */

struct lru1 {
	u32 cap, nr, head, tail;
	u32 *prev, *next;
	u8 *in;
};

static int lru1_init(struct lru1 *l, u32 nkeys, u32 cap)
{
	u32 i;

	memset(l, 0, sizeof(*l));
	l->cap = cap;
	l->head = l->tail = NIL;
	l->prev = malloc((size_t)nkeys * sizeof(u32));
	l->next = malloc((size_t)nkeys * sizeof(u32));
	l->in = calloc(nkeys ? nkeys : 1, 1);
	if (!l->prev || !l->next || !l->in)
		return -ENOMEM;
	for (i = 0; i < nkeys; i++)
		l->prev[i] = l->next[i] = NIL;
	return 0;
}

static void lru1_free(struct lru1 *l)
{
	free(l->prev);
	free(l->next);
	free(l->in);
}

static void lru1_unlink(struct lru1 *l, u32 k)
{
	if (l->prev[k] != NIL)
		l->next[l->prev[k]] = l->next[k];
	else
		l->head = l->next[k];
	if (l->next[k] != NIL)
		l->prev[l->next[k]] = l->prev[k];
	else
		l->tail = l->prev[k];
	l->in[k] = 0;
	l->nr--;
}

static void lru1_push(struct lru1 *l, u32 k)
{
	l->prev[k] = NIL;
	l->next[k] = l->head;
	if (l->head != NIL)
		l->prev[l->head] = k;
	else
		l->tail = k;
	l->head = k;
	l->in[k] = 1;
	l->nr++;
}

/* Access @k: true on a hit; *evicted is the key pushed out, or NIL. */
static bool lru1_access(struct lru1 *l, u32 k, u32 *evicted)
{
	bool hit = l->in[k];

	*evicted = NIL;
	if (!l->cap)
		return false;
	if (hit)
		lru1_unlink(l, k);
	lru1_push(l, k);
	if (l->nr > l->cap) {
		*evicted = l->tail;
		lru1_unlink(l, l->tail);
	}
	return hit;
}

/* ---- single level: Belady's MIN with bypass ------------------------------- */

struct heap_ent {
	u32 nu;			/* next use */
	u32 key;
};

struct opt1 {
	u32 cap, nr;
	u32 *nu;		/* cached key's next use */
	u8 *in;
	struct heap_ent *h;	/* max-heap by nu; stale entries skipped */
	u32 hn, hcap;
};

static int opt1_init(struct opt1 *o, u32 nkeys, u32 cap)
{
	memset(o, 0, sizeof(*o));
	o->cap = cap;
	o->nu = malloc(((size_t)nkeys + 1) * sizeof(u32));
	o->in = calloc(nkeys ? nkeys : 1, 1);
	return o->nu && o->in ? 0 : -ENOMEM;
}

static void opt1_free(struct opt1 *o)
{
	free(o->nu);
	free(o->in);
	free(o->h);
}

static int opt1_push(struct opt1 *o, u32 nu, u32 key)
{
	u32 i;

	if (grow((void **)&o->h, &o->hcap, o->hn + 1, sizeof(*o->h)))
		return -ENOMEM;
	i = o->hn++;
	while (i && o->h[(i - 1) / 2].nu < nu) {
		o->h[i] = o->h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	o->h[i].nu = nu;
	o->h[i].key = key;
	return 0;
}

static void opt1_pop(struct opt1 *o)
{
	struct heap_ent last = o->h[--o->hn];
	u32 i = 0, c;

	while ((c = 2 * i + 1) < o->hn) {
		if (c + 1 < o->hn && o->h[c + 1].nu > o->h[c].nu)
			c++;
		if (o->h[c].nu <= last.nu)
			break;
		o->h[i] = o->h[c];
		i = c;
	}
	if (o->hn)
		o->h[i] = last;
}

/* The cached key used furthest ahead (the heap top, stale ones dropped). */
static const struct heap_ent *opt1_top(struct opt1 *o)
{
	while (o->hn) {
		const struct heap_ent *e = &o->h[0];

		if (o->in[e->key] && o->nu[e->key] == e->nu)
			return e;
		opt1_pop(o);
	}
	return NULL;
}

/*
 * Access @k, used next at @nu (NIL: never): true on a hit. A block not
 * used again leaves at once; a miss is not admitted when every cached
 * block is used sooner (bypass). *evicted: a key pushed out, or NIL.
 */
static int opt1_access(struct opt1 *o, u32 k, u32 nu, u32 *evicted,
		       bool *hit)
{
	const struct heap_ent *top;

	*evicted = NIL;
	*hit = o->in[k];
	if (*hit) {
		if (nu == NIL) {
			o->in[k] = 0;
			o->nr--;
			return 0;
		}
		o->nu[k] = nu;
		return opt1_push(o, nu, k);
	}
	if (nu == NIL || !o->cap)
		return 0;
	if (o->nr >= o->cap) {
		top = opt1_top(o);
		if (!top || top->nu <= nu)
			return 0;		/* bypass */
		*evicted = top->key;
		o->in[top->key] = 0;
		o->nr--;
		opt1_pop(o);
	}
	o->in[k] = 1;
	o->nu[k] = nu;
	o->nr++;
	return opt1_push(o, nu, k);
}

/* ---- single-level runs: all of it, and its DRAM share on top -------------- */

enum {
	POL_LRU, POL_OPT, POL_KVTIER, POL_KVTIER_LRU, POL_KVTIER_SEG,
	POL_KVTIER_CLEAN,
	POL_ONLINE,	/* + enum online_kind */
	POL_SCHED = POL_ONLINE + ONL_NR,
	POL_NR
};

static const char * const pol_names[POL_NR] = {
	[POL_LRU] = "lru",
	[POL_OPT] = "opt",
	[POL_KVTIER] = "kvtier",
	[POL_KVTIER_LRU] = "kvtier-lru",
	[POL_KVTIER_SEG] = "kvtier-seg",
	[POL_KVTIER_CLEAN] = "kvtier-clean",
	[POL_ONLINE + ONL_SLRU] = "slru",
	[POL_ONLINE + ONL_2Q] = "2q",
	[POL_ONLINE + ONL_ARC] = "arc",
	[POL_ONLINE + ONL_S3FIFO] = "s3fifo",
	[POL_ONLINE + ONL_LFU] = "lfu",
	[POL_SCHED] = "sched",
};

/* One level over all N blocks: no DRAM share of their own to report. */
static bool pol_one_level(int pol)
{
	return pol >= POL_ONLINE;
}

static u32 dram_blocks(u32 cap, double share)
{
	double d = floor(cap * share + 0.5);

	return d < 1 ? 1 : d > cap ? cap : (u32)d;
}

/*
 * A stack policy over the total capacity, and the same over the DRAM share:
 * a hit of the small one is served by DRAM (the contents nest), one of the
 * large one only by NVMe. Blocks leaving the small one while staying in the
 * large one are demotions.
 */
static int run_single(const struct trace_set *t, int pol, u32 cap,
		      const struct sim_opts *so, struct result *res)
{
	u32 c1 = dram_blocks(cap, so->dram_share), r, i, ev;
	struct lru1 l[2];
	struct opt1 o[2];
	int ret = -ENOMEM;

	memset(res, 0, sizeof(*res));
	memset(l, 0, sizeof(l));
	memset(o, 0, sizeof(o));
	if (pol == POL_LRU ? lru1_init(&l[0], t->nkeys, cap) ||
			     lru1_init(&l[1], t->nkeys, c1) :
			     opt1_init(&o[0], t->nkeys, cap) ||
			     opt1_init(&o[1], t->nkeys, c1))
		goto out;
	for (r = 0; r < t->nreq; r++) {
		bool prefix = true;

		for (i = t->req_off[r]; i < t->req_off[r + 1]; i++) {
			u32 k = t->key[i];
			bool hit, hit1;

			if (pol == POL_LRU) {
				hit = lru1_access(&l[0], k, &ev);
				hit1 = lru1_access(&l[1], k, &ev);
				if (ev != NIL && l[0].in[ev])
					res->writes++;
			} else {
				if (opt1_access(&o[0], k, t->next[i], &ev, &hit) ||
				    opt1_access(&o[1], k, t->next[i], &ev, &hit1))
					goto out;
				if (ev != NIL && o[0].in[ev])
					res->writes++;
			}
			res->hits += hit;
			res->reads += hit && !hit1;
			prefix = prefix && hit;
			res->usable += prefix;
			res->usable_dram += prefix && hit1;
		}
		if (census_now(t, r)) {
			res->samples++;
			res->held += pol == POL_LRU ? l[0].nr : o[0].nr;
		}
	}
	ret = 0;
out:
	lru1_free(&l[0]);
	lru1_free(&l[1]);
	opt1_free(&o[0]);
	opt1_free(&o[1]);
	return ret;
}

/* One of tools/policy-online.c's policies over all @cap blocks. */
static int run_online(const struct trace_set *t, int kind, u32 cap,
		      struct result *res)
{
	struct online *o = online_new(kind, t->nkeys, cap);
	u32 r, i;

	memset(res, 0, sizeof(*res));
	if (!o)
		return -ENOMEM;
	for (r = 0; r < t->nreq; r++) {
		bool prefix = true;

		for (i = t->req_off[r]; i < t->req_off[r + 1]; i++) {
			bool hit = online_access(o, t->key[i]);

			res->hits += hit;
			prefix = prefix && hit;
			res->usable += prefix;
		}
		if (census_now(t, r)) {
			res->samples++;
			res->held += online_nr(o);
		}
	}
	online_free(o);
	return 0;
}

/*
 * LRU that knows the runtime's queue, as the prefetch hints tell it: the
 * victim is the least recently used block that none of the next @window
 * requests (nor the rest of this one) uses; the coldest of all if every
 * block is wanted. Belady within the window, LRU beyond it.
 */
static int run_sched(const struct trace_set *t, u32 cap,
		     const struct sim_opts *so, struct result *res)
{
	u32 *nu = malloc(((size_t)t->nkeys + 1) * sizeof(u32));
	struct lru1 l;
	u32 r, i;
	int ret = -ENOMEM;

	memset(res, 0, sizeof(*res));
	memset(&l, 0, sizeof(l));
	if (!nu || lru1_init(&l, t->nkeys, cap))
		goto out;
	for (r = 0; r < t->nreq; r++) {
		u32 end = t->req_off[min_t(u32, r + 1 + so->window, t->nreq)];
		bool prefix = true;

		for (i = t->req_off[r]; i < t->req_off[r + 1]; i++) {
			u32 k = t->key[i], v;
			bool hit = l.in[k];

			if (!hit && l.nr == cap) {
				for (v = l.tail; v != NIL && nu[v] < end;
				     v = l.prev[v])
					;
				lru1_unlink(&l, v == NIL ? l.tail : v);
			}
			/* Hit or admitted: now the most recently used. */
			lru1_access(&l, k, &v);
			nu[k] = t->next[i];
			res->hits += hit;
			prefix = prefix && hit;
			res->usable += prefix;
		}
		if (census_now(t, r)) {
			res->samples++;
			res->held += l.nr;
		}
	}
	ret = 0;
out:
	lru1_free(&l);
	free(nu);
	return ret;
}

/* ---- the module's hierarchy around kmod/policy.c --------------------------- */

struct hier {
	struct kvt_pool pool;
	const struct sim_opts *so;
	u32 c1, nr_dram;
	u32 *addr_of;		/* key -> block address, or NIL */
	u32 *key_of;		/* block address -> key */
	u8 *dram;		/* block address -> has a DRAM copy */
	u32 *free;		/* free addresses (a stack) */
	u32 nfree;
	/* The NVMe log: slots by region; cur is being filled. */
	u32 nslots, rblocks, nregions, cur, fill;
	u32 *slot;		/* slot -> block address, or NIL */
	u8 *used;		/* region -> holds data (written since) */
	u32 *carry;		/* blocks being relocated */
	u8 *held;		/* block address -> held for a hint */
	u32 nr_held, max_held;
	struct result *res;
	/* All but kvtier-seg: clean victims first. */
	bool clock;
	/* kvtier, kvtier-lru: referenced copies rewritten at reclaim. */
	bool relocate;
	u8 *ref;		/* block address -> read back since written */
};

static void hier_free(struct hier *h)
{
	free(h->pool.blocks);
	free(h->addr_of);
	free(h->key_of);
	free(h->dram);
	free(h->free);
	free(h->slot);
	free(h->used);
	free(h->carry);
	free(h->held);
	free(h->ref);
}

static int hier_init(struct hier *h, const struct trace_set *t, u32 cap,
		     int kind, bool clock, const struct sim_opts *so,
		     struct result *res)
{
	u32 c2, naddr, i;

	memset(h, 0, sizeof(*h));
	h->so = so;
	h->res = res;
	h->c1 = dram_blocks(cap, so->dram_share);
	c2 = cap - h->c1;
	h->rblocks = so->region_blocks < c2 ? so->region_blocks : c2;
	h->nregions = h->rblocks ? c2 / h->rblocks : 0;
	h->nslots = h->nregions * h->rblocks;
	h->cur = h->nregions ? h->nregions - 1 : 0;
	h->fill = h->rblocks;
	naddr = h->c1 + h->nslots + 1;
	h->pool.blocks = calloc(naddr, sizeof(*h->pool.blocks));
	h->addr_of = malloc(((size_t)t->nkeys + 1) * sizeof(u32));
	h->key_of = calloc(naddr, sizeof(u32));
	h->dram = calloc(naddr, 1);
	h->free = malloc((size_t)naddr * sizeof(u32));
	h->slot = malloc(((size_t)h->nslots + 1) * sizeof(u32));
	h->used = calloc(h->nregions + 1, 1);
	h->carry = malloc(((size_t)h->nslots + 1) * sizeof(u32));
	h->held = calloc(naddr, 1);
	h->max_held = (u64)h->c1 * (so->protect_pct < 90 ? so->protect_pct : 90) /
		      100;
	h->clock = clock;
	h->ref = calloc(naddr, 1);
	if (!h->pool.blocks || !h->addr_of || !h->key_of || !h->dram ||
	    !h->free || !h->slot || !h->used || !h->carry || !h->ref ||
	    !h->held)
		return -ENOMEM;
	for (i = 0; i < t->nkeys; i++)
		h->addr_of[i] = NIL;
	for (i = 0; i < naddr; i++) {
		h->pool.blocks[i].prev = h->pool.blocks[i].next = NIL;
		h->pool.blocks[i].nloc = NIL;
		h->free[h->nfree++] = naddr - 1 - i;
	}
	for (i = 0; i < h->nslots; i++)
		h->slot[i] = NIL;
	kvt_policy_init(&h->pool);
	memset(&h->pool.pol, 0, sizeof(h->pool.pol));
	/* The pool takes both at first use, as the module's pools do. */
	kvt_policy_param = kind;
	kvt_policy_clean_param = clock;
	return 0;
}

/* kvt_block_unlink() + kvt_block_release(): the block goes. */
static void hier_drop(struct hier *h, u32 a)
{
	struct kvt_block *blk = &h->pool.blocks[a];

	kvt_policy_remove(&h->pool, a);
	if (h->dram[a]) {
		h->dram[a] = 0;
		h->nr_dram--;
	}
	if (blk->nloc != NIL)
		h->slot[blk->nloc] = NIL;
	h->addr_of[h->key_of[a]] = NIL;
	blk->nloc = NIL;
	blk->flags = 0;
	blk->pol = 0;
	h->ref[a] = 0;
	h->free[h->nfree++] = a;
}

/*
 * kvt_region_next(): the next region to fill, reclaimed if it holds data.
 * With relocation (kvtier, kvtier-lru) it keeps the blocks only there that
 * were read back since they were written: read, their bit cleared, and
 * written again first (kvt_relocate() queues them at the head of the write
 * queue). Those that do not fit spill into the next region, which is
 * reclaimed in turn, until one has room for the write that asked.
 */
static void hier_next_region(struct hier *h)
{
	u32 s, first, ncarry = 0;

	do {
		h->cur = (h->cur + 1) % h->nregions;
		h->fill = 0;
		first = h->cur * h->rblocks;
		for (s = first; h->used[h->cur] && s < first + h->rblocks;
		     s++) {
			u32 a = h->slot[s];

			if (a == NIL)
				continue;
			h->slot[s] = NIL;
			h->pool.blocks[a].nloc = NIL;
			if (!h->dram[a] && h->relocate && h->ref[a]) {
				h->ref[a] = 0;
				h->carry[ncarry++] = a;
				h->res->reads++;
				continue;
			}
			/* kvt_block_forget_nvme(): only on NVMe, it goes. */
			if (!h->dram[a])
				hier_drop(h, a);
			else
				kvt_policy_dirty(&h->pool, a);
		}
		h->used[h->cur] = 0;
		for (; ncarry && h->fill < h->rblocks; h->fill++) {
			u32 a = h->carry[--ncarry];

			h->slot[first + h->fill] = a;
			h->pool.blocks[a].nloc = first + h->fill;
			h->used[h->cur] = 1;
			h->res->writes++;
		}
	} while (h->fill == h->rblocks);
}

static void hier_write(struct hier *h, u32 a)
{
	u32 s;

	if (h->fill == h->rblocks)
		hier_next_region(h);
	s = h->cur * h->rblocks + h->fill++;
	h->used[h->cur] = 1;
	h->slot[s] = a;
	h->pool.blocks[a].nloc = s;
	h->ref[a] = 0;
	h->res->writes++;
	kvt_policy_clean(&h->pool, a);
}

/*
 * kvt_nvme_rescue(): a clean victim whose copy is in the next
 * nregions/rescue_share regions to be reclaimed is written again instead.
 */
static bool hier_rescue(struct hier *h, u32 a)
{
	u32 nloc = h->pool.blocks[a].nloc, next, r, span;

	if (!h->so->rescue_share || nloc == NIL)
		return false;
	next = (h->cur + 1) % h->nregions;
	r = nloc / h->rblocks;
	span = h->nregions / h->so->rescue_share;
	if ((r + h->nregions - next) % h->nregions >= (span ? span : 1))
		return false;
	h->slot[nloc] = NIL;
	h->pool.blocks[a].nloc = NIL;
	kvt_policy_dirty(&h->pool, a);
	return true;
}

/*
 * The victim, kvt_policy_victim(): with a clean list (all but kvtier-seg),
 * the coldest block with an NVMe copy (evicting it loses nothing) that no
 * queued request was hinted for (kvt_policy_ahead(), as the prefetch
 * engine marks the blocks it reads past its holds' bound; the module
 * holds the others off the lists, until they are used); else the coldest
 * without a copy; else a hinted one.
 */
static u32 hier_victim(struct hier *h)
{
	return kvt_policy_victim(&h->pool);
}

/* kvt_make_room(): evict until DRAM has room for one more block. */
static int hier_make_room(struct hier *h)
{
	while (h->nr_dram >= h->c1) {
		u32 v = hier_victim(h);
		struct kvt_block *blk;

		if (v == NIL)
			return -ENOSPC;
		blk = &h->pool.blocks[v];
		hier_rescue(h, v);
		if (blk->nloc == NIL) {
			if (!h->nslots || !kvt_policy_demote(&h->pool, v)) {
				hier_drop(h, v);
				continue;
			}
			hier_write(h, v);
		}
		/* kvt_evict_one() of a clean block: its DRAM copy goes. */
		blk->flags |= KVT_BF_EVICTING;
		kvt_policy_remove(&h->pool, v);
		blk->flags = 0;
		h->dram[v] = 0;
		h->nr_dram--;
	}
	return 0;
}

/* A block only on NVMe comes into DRAM (kvt_nvme_load); false if it went. */
static int hier_promote(struct hier *h, u32 k)
{
	u32 a = h->addr_of[k];
	int ret = hier_make_room(h);

	if (ret)
		return ret;
	/* Room was made by writing: the block's own region may be gone. */
	if (h->addr_of[k] != a || h->pool.blocks[a].nloc == NIL)
		return 0;
	h->dram[a] = 1;
	h->nr_dram++;
	h->ref[a] = 1;
	h->res->reads++;
	kvt_policy_insert(&h->pool, a);
	return 1;
}

/* A PUT of a missing block. */
static int hier_put(struct hier *h, u32 k)
{
	int ret = hier_make_room(h);
	struct kvt_block *blk;
	u32 a;

	if (ret)
		return ret;
	if (!h->nfree)
		return -ENOSPC;
	a = h->free[--h->nfree];
	blk = &h->pool.blocks[a];
	blk->prev = blk->next = blk->nloc = NIL;
	blk->flags = 0;
	blk->pol = 0;
	h->addr_of[k] = a;
	h->key_of[a] = k;
	h->dram[a] = 1;
	h->nr_dram++;
	kvt_policy_insert(&h->pool, a);
	return 0;
}

/*
 * The hints for a queued request, as LOOKUP with TOUCH and PREFETCH of its
 * resident prefix: each block is loaded and touched, then held off the
 * lists until used while the holds stay within --protect-pct of DRAM (the
 * engine's bound), else marked read ahead (kvt_policy_ahead()).
 */
static int hier_hint(struct hier *h, const struct trace_set *t, u32 r)
{
	u32 i;
	int ret;

	for (i = t->req_off[r]; i < t->req_off[r + 1]; i++) {
		u32 k = t->key[i], a = h->addr_of[k];

		if (a == NIL)
			return 0;
		if (!h->dram[a]) {
			ret = hier_promote(h, k);
			if (ret <= 0)
				return ret;
			a = h->addr_of[k];
		}
		kvt_policy_touch(&h->pool, a);
		if (h->held[a])
			continue;
		if (h->nr_held < h->max_held) {
			kvt_policy_remove(&h->pool, a);
			h->held[a] = 1;
			h->nr_held++;
		} else {
			kvt_policy_ahead(&h->pool, a, true);
		}
	}
	return 0;
}

/* SYNC: every DRAM block without a copy written, coldest first. */
static void hier_sync(struct hier *h)
{
	u32 a, prev;

	if (!h->nslots)
		return;
	for (a = kvt_policy_next(&h->pool, NIL); a != NIL; a = prev) {
		prev = kvt_policy_next(&h->pool, a);
		if (h->dram[a] && h->pool.blocks[a].nloc == NIL)
			hier_write(h, a);
	}
}

/*
 * What the hierarchy of total capacity @cap holds now: distinct keys, keys
 * in DRAM with an NVMe copy too, and NVMe capacity holding no block (slots
 * freed in regions not yet reclaimed, the rest of the region being filled,
 * capacity short of a whole region).
 */
static void hier_census(const struct hier *h, u32 cap, struct result *res)
{
	u32 naddr = h->c1 + h->nslots + 1, a, s, live = 0;

	res->samples++;
	res->held += naddr - h->nfree;
	for (a = 0; a < naddr; a++)
		res->dup += h->dram[a] && h->pool.blocks[a].nloc != NIL;
	for (s = 0; s < h->nslots; s++)
		live += h->slot[s] != NIL;
	res->dead += cap - h->c1 - live;
}

static int run_hier(const struct trace_set *t, int pol, u32 cap,
		    const struct sim_opts *so, struct result *res)
{
	struct hier h;
	u32 r, i;
	int ret;

	memset(res, 0, sizeof(*res));
	ret = hier_init(&h, t, cap, pol == POL_KVTIER_LRU ? KVT_POLICY_LRU :
			KVT_POLICY_SEG, pol != POL_KVTIER_SEG, so, res);
	h.relocate = pol != POL_KVTIER_SEG && pol != POL_KVTIER_CLEAN;
	for (r = 0; !ret && r < t->nreq; r++) {
		bool prefix = true;

		if (so->window && r + so->window < t->nreq)
			ret = hier_hint(&h, t, r + so->window);
		for (i = t->req_off[r]; !ret && i < t->req_off[r + 1]; i++) {
			u32 k = t->key[i], a = h.addr_of[k];
			bool hit = false, dram = false;

			if (a != NIL && h.dram[a]) {
				/* Used: its hold, if any, ends (unkeep). */
				if (h.held[a]) {
					h.held[a] = 0;
					h.nr_held--;
					kvt_policy_insert(&h.pool, a);
				}
				/* GET, or a PUT that finds it (LOOKUP touched) */
				kvt_policy_touch(&h.pool, a);
				hit = dram = true;
			} else if (a != NIL && prefix) {
				/* GET of the prefix: promote, then use */
				ret = hier_promote(&h, k);
				if (ret > 0) {
					kvt_policy_touch(&h.pool, h.addr_of[k]);
					hit = true;
					ret = 0;
				}
			}
			/* A miss, or beyond the prefix and only on NVMe. */
			if (!ret && !hit && h.addr_of[k] == NIL)
				ret = hier_put(&h, k);
			if (h.addr_of[k] != NIL)
				kvt_policy_ahead(&h.pool, h.addr_of[k],
						 false);
			res->hits += hit;
			prefix = prefix && hit;
			res->usable += prefix;
			res->usable_dram += prefix && dram;
		}
		if (!ret && so->sync_every && (r + 1) % so->sync_every == 0)
			hier_sync(&h);
		if (!ret && census_now(t, r))
			hier_census(&h, cap, res);
	}
	if (!ret && shim_warnings)
		ret = -EFAULT;
	hier_free(&h);
	return ret;
}

static int run_policy(const struct trace_set *t, int pol, u32 cap,
		      const struct sim_opts *so, struct result *res)
{
	if (pol == POL_LRU || pol == POL_OPT)
		return run_single(t, pol, cap, so, res);
	if (pol == POL_SCHED)
		return run_sched(t, cap, so, res);
	if (pol >= POL_ONLINE)
		return run_online(t, pol - POL_ONLINE, cap, res);
	return run_hier(t, pol, cap, so, res);
}

/* ---- decisions: the module's command path, op by op --------------------- */

/*
 * policy-sim --decisions replays a generated sequence of pool commands
 * through kmod/policy.c the way kmod/cmd.c and kmod/block.c call it for a
 * pool of dram_blocks blocks with no NVMe tier, and prints each command,
 * its result and the keys it evicted. selftests/kvtier/policy runs the same
 * commands on a real pool and requires the same results and evictions: the
 * module and the simulator make the same decisions.
 *
 * With --nvme, the pool has an NVMe tier and the runtime SYNCs after every
 * command, so that every block has a copy when the next one starts (the
 * log large enough never to reclaim): a victim is clean, and loses its
 * DRAM copy only (kvt_res_evict_one()); EVICTED names the keys that left
 * DRAM. A block only on NVMe is still found: GET and PIN load it first
 * (kvt_res_load(): room made, then kvt_policy_read_back() and, as it
 * lands, kvt_policy_insert(); -ENOSPC without room), LOOKUP with TOUCH
 * touches it where it is. SYNC writes the block a PUT made, and its
 * completion calls kvt_policy_clean() (kvt_res_cleaned()); with
 * --clean-first Y, the default, as the module's policy_clean_first, that
 * puts it on the clean list, whose blocks go first.
 *
 * The calls, as the module makes them without NVMe:
 *  PUT		kvt_put_one(): -EEXIST (no REPLACE) or -EBUSY (pinned) for a
 *		key present; kvt_make_room() evicts kvt_policy_victim() while
 *		DRAM is full (kvt_block_unlink(): remove), -ENOSPC if nothing
 *		is evictable; at publish a replaced block still present is
 *		unlinked (remove), the new one inserted, the old one freed.
 *  GET		kvt_get_one(): touch, or -ENOENT.
 *  LOOKUP	kvt_lookup(): with TOUCH, touch each key found, in order.
 *  DROP	kvt_drop_one(): -EBUSY if pinned, else unlink (remove).
 *  PIN		kvt_pin_one(): the first pin removes.
 *  UNPIN	kvt_unpin_one(): -EINVAL if this fd holds no pin; the last
 *		pin going inserts (kvt_block_unpinned()).
 */

enum {
	DEC_PUT, DEC_REPLACE, DEC_GET, DEC_LOOKUP, DEC_PEEK, DEC_DROP,
	DEC_PIN, DEC_UNPIN
};

static const char * const dec_names[] = {
	[DEC_PUT] = "put", [DEC_REPLACE] = "replace", [DEC_GET] = "get",
	[DEC_LOOKUP] = "lookup", [DEC_PEEK] = "peek", [DEC_DROP] = "drop",
	[DEC_PIN] = "pin", [DEC_UNPIN] = "unpin",
};

#define DEC_LOOKUP_MAX	4	/* keys of one LOOKUP */

struct dec {
	struct kvt_pool pool;
	bool nvme;		/* an NVMe tier, and SYNC after each command */
	const char *broken;	/* what the model met and cannot say */
	u32 dram;		/* pool->dram_blocks */
	u32 nr_dram;		/* pool->nr_dram */
	u32 naddr;
	u8 *in_dram;		/* block address -> has a DRAM copy */
	u32 npresent;		/* keys found, in any tier */
	u64 loads;		/* blocks read back into DRAM */
	u32 *addr_of;		/* key -> block address, or NIL */
	u32 *key_of;		/* block address -> key */
	u16 *pins;		/* block address -> pins (all by one fd) */
	u32 *free;		/* free addresses (a stack) */
	u32 nfree;
	u32 *order;		/* dec_sync()'s blocks */
	u32 *pinned;		/* keys pinned, for UNPIN to pick from */
	u32 npinned, max_pinned;
	u32 nkeys;		/* keys 1..nkeys made so far */
	u64 evictions;		/* kvtier_pool_stat.evictions */
	u32 victims[2];		/* keys the current command evicted */
	u32 nvictims;
};

static void dec_free(struct dec *d)
{
	free(d->pool.blocks);
	free(d->in_dram);
	free(d->addr_of);
	free(d->key_of);
	free(d->pins);
	free(d->free);
	free(d->order);
	free(d->pinned);
}

static int dec_init(struct dec *d, u32 dram, u32 nops, int kind, bool nvme,
		    bool clean_first)
{
	/*
	 * DRAM's blocks, and one more while a REPLACE holds old and new;
	 * with NVMe, a block for each PUT at most.
	 */
	u32 naddr = nvme ? dram + nops + 1 : dram + 1, i;

	memset(d, 0, sizeof(*d));
	d->nvme = nvme;
	d->dram = dram;
	d->naddr = naddr;
	d->max_pinned = dram / 4 ? dram / 4 : 1;
	d->pool.blocks = calloc(naddr, sizeof(*d->pool.blocks));
	d->in_dram = calloc(naddr, 1);
	d->addr_of = malloc(((size_t)nops + 2) * sizeof(u32));
	d->key_of = calloc(naddr, sizeof(u32));
	d->pins = calloc(naddr, sizeof(u16));
	d->free = malloc((size_t)naddr * sizeof(u32));
	d->order = malloc((size_t)naddr * sizeof(u32));
	d->pinned = malloc((size_t)naddr * sizeof(u32));
	if (!d->pool.blocks || !d->in_dram || !d->addr_of || !d->key_of ||
	    !d->pins || !d->free || !d->order || !d->pinned)
		return -ENOMEM;
	for (i = 0; i < nops + 2; i++)
		d->addr_of[i] = NIL;
	for (i = 0; i < naddr; i++) {
		d->pool.blocks[i].prev = NIL;
		d->pool.blocks[i].next = NIL;
		d->pool.blocks[i].nloc = NIL;
		d->free[d->nfree++] = naddr - 1 - i;
	}
	kvt_policy_init(&d->pool);
	memset(&d->pool.pol, 0, sizeof(d->pool.pol));
	/* The pool takes both at its first PUT, as the module's do. */
	kvt_policy_param = kind;
	kvt_policy_clean_param = clean_first;
	return 0;
}

/* kvt_block_unlink(): out of the key hash and the policy's list. */
static void dec_unlink(struct dec *d, u32 a)
{
	kvt_policy_remove(&d->pool, a);
	d->addr_of[d->key_of[a]] = NIL;
	d->npresent--;
}

/* kvt_block_release(): the address is free again. */
static void dec_release(struct dec *d, u32 a)
{
	struct kvt_block *blk = &d->pool.blocks[a];

	blk->flags = 0;
	blk->pol = 0;
	blk->nloc = NIL;
	d->free[d->nfree++] = a;
	if (d->in_dram[a])
		d->nr_dram--;
	d->in_dram[a] = 0;
}

/*
 * kvt_res_make_room(): without NVMe the victim is dropped; with it, a clean
 * victim loses its DRAM copy (kvt_res_evict_begin(), then the eviction's
 * end) and stays found on NVMe.
 */
static int dec_make_room(struct dec *d)
{
	while (d->nr_dram >= d->dram) {
		u32 v = kvt_policy_victim(&d->pool);
		struct kvt_block *blk;

		if (v == NIL)
			return -ENOSPC;
		blk = &d->pool.blocks[v];
		if (d->nvictims < 2)
			d->victims[d->nvictims] = d->key_of[v];
		d->nvictims++;
		d->evictions++;
		if (!d->nvme) {
			dec_unlink(d, v);
			dec_release(d, v);
			continue;
		}
		/* The module would write a dirty one first, and wait. */
		if (blk->nloc == NIL) {
			d->broken = "a dirty victim";
			return -ENOSPC;
		}
		blk->flags |= KVT_BF_EVICTING;
		kvt_policy_remove(&d->pool, v);
		blk->flags = 0;
		d->in_dram[v] = 0;
		d->nr_dram--;
	}
	return 0;
}

/*
 * kvt_res_load() of a block only on NVMe: room first (its failure leaves
 * the block as it is), then the read's end (kvt_nvme_read_end()).
 */
static int dec_load(struct dec *d, u32 a)
{
	int ret = dec_make_room(d);

	if (ret)
		return ret;
	d->in_dram[a] = 1;
	d->nr_dram++;
	d->loads++;
	kvt_policy_read_back(&d->pool, a);
	kvt_policy_insert(&d->pool, a);
	return 0;
}

/*
 * KVTIER_IOC_SYNC after a command: the blocks without a copy, those on the
 * policy's list coldest first (kvt_policy_next()), then those off it by
 * address (kvt_sync_queue()), written in one segment; its end cleans them
 * in that order. Return: blocks written.
 */
static u32 dec_sync(struct dec *d)
{
	u32 a, n = 0, i, *order = d->order;

	for (a = kvt_policy_next(&d->pool, NIL); a != NIL;
	     a = kvt_policy_next(&d->pool, a))
		if (d->pool.blocks[a].nloc == NIL)
			order[n++] = a;
	for (a = 0; a < d->naddr; a++)
		if (d->in_dram[a] && d->pool.blocks[a].nloc == NIL &&
		    d->pins[a])
			order[n++] = a;
	for (i = 0; i < n; i++) {
		d->pool.blocks[order[i]].nloc = 0;
		kvt_policy_clean(&d->pool, order[i]);
	}
	return n;
}

static int dec_put(struct dec *d, u32 k, bool replace)
{
	u32 a, old = d->addr_of[k];
	int ret;

	if (old != NIL && !replace)
		return -EEXIST;
	if (old != NIL && d->pins[old])
		return -EBUSY;
	ret = dec_make_room(d);
	if (ret)
		return ret;
	if (!d->nfree)
		return -ENOSPC;
	a = d->free[--d->nfree];
	d->in_dram[a] = 1;
	d->nr_dram++;
	/* Publish: the old block (unless evicted meanwhile) goes first. */
	old = d->addr_of[k];
	if (old != NIL)
		dec_unlink(d, old);
	d->addr_of[k] = a;
	d->key_of[a] = k;
	d->npresent++;
	kvt_policy_insert(&d->pool, a);
	if (old != NIL)
		dec_release(d, old);
	return 0;
}

static int dec_get(struct dec *d, u32 k)
{
	u32 a = d->addr_of[k];
	int ret;

	if (a == NIL)
		return -ENOENT;
	if (!d->in_dram[a]) {
		ret = dec_load(d, a);
		if (ret)
			return ret;
	}
	kvt_policy_touch(&d->pool, a);
	return 0;
}

/* LOOKUP, with TOUCH or not: the resident prefix. */
static int dec_lookup(struct dec *d, const u32 *keys, u32 n, bool touch)
{
	bool in_prefix = true;
	u32 i, prefix = 0;

	for (i = 0; i < n; i++) {
		u32 a = d->addr_of[keys[i]];

		if (a == NIL) {
			in_prefix = false;
			continue;
		}
		if (touch)
			kvt_policy_touch(&d->pool, a);
		prefix += in_prefix;
	}
	return prefix;
}

static int dec_drop(struct dec *d, u32 k)
{
	u32 a = d->addr_of[k];

	if (a == NIL)
		return -ENOENT;
	if (d->pins[a])
		return -EBUSY;
	dec_unlink(d, a);
	dec_release(d, a);
	return 0;
}

static int dec_pin(struct dec *d, u32 k)
{
	u32 a = d->addr_of[k];
	int ret;

	if (a == NIL)
		return -ENOENT;
	/* kvt_pin_one(): pinned blocks are in DRAM. */
	if (!d->in_dram[a]) {
		ret = dec_load(d, a);
		if (ret)
			return ret;
	}
	if (!d->pins[a]++) {
		kvt_policy_remove(&d->pool, a);
		d->pinned[d->npinned++] = k;
	}
	return 0;
}

static int dec_unpin(struct dec *d, u32 k)
{
	u32 a = d->addr_of[k], i;

	if (a == NIL)
		return -ENOENT;
	if (!d->pins[a])
		return -EINVAL;
	if (--d->pins[a])
		return 0;
	for (i = 0; d->pinned[i] != k; i++)
		;
	d->pinned[i] = d->pinned[--d->npinned];
	kvt_policy_insert(&d->pool, a);
	return 0;
}

/*
 * A key made earlier, skewed: half the time one of the last dram_blocks
 * made (recent), else the first ones most (a hot set), u^3 over all.
 */
static u32 dec_old_key(struct dec *d, u64 r)
{
	u32 span = d->dram < d->nkeys ? d->dram : d->nkeys;
	double u;

	if (r & 1)
		return d->nkeys - (u32)((r >> 1) % span);
	u = (double)(r >> 11) / (double)(1ULL << 53);
	return 1 + (u32)(d->nkeys * u * u * u);
}

static void dec_print_keys(FILE *f, const u32 *keys, u32 n)
{
	u32 i;

	if (!n) {
		fputc('-', f);
		return;
	}
	for (i = 0; i < n; i++)
		fprintf(f, "%s%u", i ? "," : "", keys[i]);
}

/*
 * Generate @nops commands from @seed and run them: one line each,
 *   N OP KEYS RESULT EVICTED
 * N counts from 1; OP one of dec_names; KEYS a key number or, for lookup
 * and peek (LOOKUP without TOUCH), a comma list; RESULT 0 or -errno, for
 * lookup and peek the resident prefix; EVICTED the keys evicted, in order,
 * or "-"; with @nvme, the keys that left DRAM, and a SYNC follows, which
 * writes the block a PUT or REPLACE made (none else). Lines starting with #
 * are comments; the last one is
 *   # end: evictions=E resident=R pinned=P present=N loads=L
 * (resident: blocks in DRAM; present: found in any tier).
 */
static int decisions(FILE *f, u32 dram, u32 nops, u64 seed, int kind,
		     bool nvme, bool clean_first)
{
	u64 rng = mix64(seed ^ 0x6b767469657221ULL);
	struct dec d;
	u32 n;
	int ret;

	ret = dec_init(&d, dram, nops, kind, nvme, clean_first);
	if (ret) {
		dec_free(&d);
		return ret;
	}
	fprintf(f, "# policy-sim decisions: policy=%s dram_blocks=%u ops=%u seed=%llu nvme=%d clean_first=%c\n",
		kind == KVT_POLICY_SEG ? "seg" : "lru", dram, nops,
		(unsigned long long)seed, nvme, clean_first ? 'Y' : 'N');
	for (n = 1; n <= nops; n++) {
		u32 keys[DEC_LOOKUP_MAX], nk = 1, i, p;
		int op, res;

		rng = mix64(rng + n);
		p = rng % 100;
		rng = mix64(rng);
		if (!d.nkeys || p < 30)
			op = DEC_PUT;
		else if (p < 58)
			op = DEC_GET;
		else if (p < 72)
			op = DEC_LOOKUP;
		else if (p < 75)
			op = DEC_PEEK;
		else if (p < 80)
			op = DEC_REPLACE;
		else if (p < 84)
			op = DEC_PUT;		/* a key made before */
		else if (p < 89)
			op = DEC_DROP;
		else if (p < 94)
			op = d.npinned < d.max_pinned ? DEC_PIN : DEC_GET;
		else
			op = d.npinned ? DEC_UNPIN : DEC_GET;

		if (op == DEC_PUT && (!d.nkeys || p < 30))
			keys[0] = ++d.nkeys;
		else if (op == DEC_UNPIN)
			keys[0] = d.pinned[rng % d.npinned];
		else
			keys[0] = dec_old_key(&d, rng);
		if (op == DEC_LOOKUP || op == DEC_PEEK) {
			/* A chain: the key and the ones made after it. */
			nk = 1 + (rng >> 40) % DEC_LOOKUP_MAX;
			for (i = 1; i < nk && keys[i - 1] < d.nkeys; i++)
				keys[i] = keys[i - 1] + 1;
			nk = i;
		}

		d.nvictims = 0;
		switch (op) {
		case DEC_PUT:
		case DEC_REPLACE:
			res = dec_put(&d, keys[0], op == DEC_REPLACE);
			break;
		case DEC_GET:
			res = dec_get(&d, keys[0]);
			break;
		case DEC_LOOKUP:
		case DEC_PEEK:
			res = dec_lookup(&d, keys, nk, op == DEC_LOOKUP);
			break;
		case DEC_DROP:
			res = dec_drop(&d, keys[0]);
			break;
		case DEC_PIN:
			res = dec_pin(&d, keys[0]);
			break;
		default:
			res = dec_unpin(&d, keys[0]);
			break;
		}
		if (nvme && dec_sync(&d) != (!res && (op == DEC_PUT || op == DEC_REPLACE)))
			d.broken = "SYNC wrote other blocks";
		if (d.nvictims > 1 || kvt_policy_check(&d.pool) ||
		    shim_warnings || d.broken) {
			fprintf(stderr, "policy-sim: decisions: op %u: %u evictions, list %s, %lu warnings%s%s\n",
				n, d.nvictims,
				kvt_policy_check(&d.pool) ? "broken" : "ok",
				shim_warnings, d.broken ? ", " : "",
				d.broken ? d.broken : "");
			dec_free(&d);
			return -EFAULT;
		}
		fprintf(f, "%u %s ", n, dec_names[op]);
		dec_print_keys(f, keys, nk);
		fprintf(f, " %d ", res);
		dec_print_keys(f, d.victims, d.nvictims);
		fputc('\n', f);
	}
	fprintf(f, "# end: evictions=%llu resident=%u pinned=%u present=%u loads=%llu\n",
		(unsigned long long)d.evictions, d.nr_dram, d.npinned,
		d.npresent, (unsigned long long)d.loads);
	dec_free(&d);
	return 0;
}

/* ---- experts: MoE expert streaming through kvt_policy_hint() ------------- */

/*
 * --experts: a MoE decode streams its experts (B blocks each) from NVMe
 * into a DRAM run by kmod/policy.c (seg); other weights are left out. Each
 * layer ranks its experts at random, rank r weighing 1/(r+1)^zipf; the
 * router draws a (token, layer)'s top-k by weight without replacement. The
 * predictor names each of the k with probability --accuracy, else a wrong
 * expert drawn by weight (guess slots), then the most popular not named
 * (filler slots: they catch some missed ones). A slot's probability is the
 * share of its names the router chose over the run (calibrated slot by
 * slot, honest on average); the list goes likeliest first.
 *
 * A layer computes for --compute, due when the one before ends; a read
 * takes --read-time, --qd at once, a due layer's first. As layer s starts,
 * the runtime hints s + --lookahead, due at its start if nothing stalls.
 * The engine goes earliest deadline first, a group's hints in list order,
 * and asks kvt_policy_hint() about a block not in DRAM when a read could
 * start (busy: servers busy over qd); one in DRAM or on its way is taken.
 * Held blocks are off the replacement list until used or their layer ran,
 * at most half of DRAM (prefetch_protect_pct=50); hints not started by
 * then are dropped. A due layer pins its experts, reads those missing and
 * waits: the stall. Printed: hit (expert blocks in DRAM when due), stall
 * (over compute time), reads and wasted (read, then evicted or left at the
 * end unused) per expert block used.
 */

#define EX_MAX_K	8
#define EX_MAX_C	32
#define EX_MAX_LA	16
#define EX_MAX_H	256	/* hints of a group: candidates x blocks */
#define EX_HOLD		BIT(0)	/* ex_blk.keep: a group holds it */
#define EX_PIN		BIT(1)	/* its layer is due */

enum { EXP_NONE, EXP_TOPK, EXP_ALL, EXP_PROB, EXP_ORACLE, EXP_NR };
enum { EX_OUT, EX_LOADING, EX_IN };

static const char * const exp_names[EXP_NR] = {
	"none", "topk", "all", "prob", "oracle",
};

struct ex_opts {
	u32 layers, experts, top_k, tokens, cand, blocks, lookahead, dram, qd;
	u32 qds[MAX_CAPS], nqd;
	double zipf, acc, compute, read_time;
	u64 seed;
};

static const struct ex_opts ex_defaults = {
	.layers = 16, .experts = 64, .top_k = 2, .tokens = 256, .cand = 6,
	.blocks = 1, .lookahead = 2, .qds = { 4 }, .nqd = 1, .zipf = 1.0,
	.acc = 0.8, .compute = 1.0, .read_time = 0.25, .seed = 1,
};

struct ex_res {
	u64 used, hits, reads, wasted;
	double stall;
};

struct ex_load {
	u32 steps;		/* tokens x layers */
	u16 *perm;		/* layer x rank -> expert */
	double *w;		/* rank -> weight */
	u8 *mark;		/* expert -> 1 chosen | 2 named (scratch) */
	u16 *truth;		/* step x top_k -> expert */
	u16 *named;		/* step x cand -> expert, by slot */
	u32 order[EX_MAX_C];	/* slots, likeliest first */
	u32 prob[EX_MAX_C];	/* slot -> probability */
};

/* The options fit together; the default DRAM. Else what is wrong. */
static const char *ex_check(struct ex_opts *o)
{
	u64 nblk = (u64)o->layers * o->experts * o->blocks;
	u32 i, qd = 0;

	for (i = 0; i < o->nqd; i++)
		qd = max_t(u32, qd, o->qds[i]);
	if (nblk > 1 << 24 || (u64)o->tokens * o->layers > 1 << 24 ||
	    o->top_k > EX_MAX_K || o->cand > EX_MAX_C ||
	    o->lookahead > EX_MAX_LA || o->cand * o->blocks > EX_MAX_H)
		return "too large (top-k <= 8, candidates x blocks <= 256, lookahead <= 16)";
	if (o->cand < o->top_k || o->experts < o->top_k + o->cand)
		return "want top-k <= candidates <= experts - top-k";
	if (o->lookahead >= o->layers || !(o->compute > 0) ||
	    !(o->read_time > 0))
		return "want lookahead < layers, compute and read-time > 0";
	if (!o->dram)
		o->dram = max_t(u32, nblk / 4, 1);
	if (qd > 1024 || o->dram < 2 * (qd + 2 * o->top_k * o->blocks) + 2)
		return "DRAM too small for the queue and top-k (or qd > 1024)";
	return NULL;
}

static double ex_unit(u64 *rng)
{
	*rng += 0x9e3779b97f4a7c15ULL;
	return (double)(mix64(*rng) >> 11) / (double)(1ULL << 53);
}

/* An expert of @layer by weight, none that l->mark marks. */
static u32 ex_draw(const struct ex_load *l, const struct ex_opts *o,
		   u32 layer, u64 *rng)
{
	const u16 *perm = &l->perm[layer * o->experts];
	double sum = 0, u;
	u32 r, last = 0;

	for (r = 0; r < o->experts; r++)
		sum += l->mark[perm[r]] ? 0 : l->w[r];
	u = ex_unit(rng) * sum;
	for (r = 0; r < o->experts && u >= 0; r++) {
		if (l->mark[perm[r]])
			continue;
		last = perm[r];
		u -= l->w[r];
	}
	return last;
}

/* One (token, layer): the router's choice, the predictor's slots. */
static void ex_sample(const struct ex_load *l, const struct ex_opts *o,
		      u32 layer, u64 *rng, u16 *truth, u16 *named)
{
	const u16 *perm = &l->perm[layer * o->experts];
	u32 i, r = 0;

	memset(l->mark, 0, o->experts);
	for (i = 0; i < o->top_k; i++) {
		truth[i] = ex_draw(l, o, layer, rng);
		l->mark[truth[i]] = 1;
	}
	for (i = 0; i < o->top_k; i++) {
		named[i] = ex_unit(rng) < o->acc ? truth[i] :
			   ex_draw(l, o, layer, rng);
		l->mark[named[i]] |= 2;
	}
	for (; i < o->cand; i++) {
		while (l->mark[perm[r]] & 2)
			r++;
		named[i] = perm[r];
		l->mark[named[i]] |= 2;
	}
}

static void ex_load_free(struct ex_load *l)
{
	free(l->perm);
	free(l->w);
	free(l->mark);
	free(l->truth);
	free(l->named);
}

static int ex_load_init(struct ex_load *l, const struct ex_opts *o)
{
	u64 rng = mix64(o->seed ^ 0x6578706572747321ULL), n[EX_MAX_C] = { 0 };
	u32 i, j, s;

	memset(l, 0, sizeof(*l));
	l->steps = o->tokens * o->layers;
	l->perm = malloc((size_t)o->layers * o->experts * sizeof(u16));
	l->w = malloc(o->experts * sizeof(double));
	l->mark = malloc(o->experts);
	l->truth = malloc((size_t)l->steps * o->top_k * sizeof(u16));
	l->named = malloc((size_t)l->steps * o->cand * sizeof(u16));
	if (!l->perm || !l->w || !l->mark || !l->truth || !l->named)
		return -ENOMEM;
	for (i = 0; i < o->experts; i++)
		l->w[i] = pow(i + 1, -o->zipf);
	for (i = 0; i < o->layers * o->experts; i++) {
		j = i - i % o->experts +
		    (u32)(ex_unit(&rng) * (i % o->experts + 1));
		if (j != i)	/* Fisher-Yates, inside out */
			l->perm[i] = l->perm[j];
		l->perm[j] = i % o->experts;
	}
	for (s = 0; s < l->steps; s++) {
		u16 *named = &l->named[(size_t)s * o->cand];

		ex_sample(l, o, s % o->layers, &rng,
			  &l->truth[(size_t)s * o->top_k], named);
		for (i = 0; i < o->cand; i++)
			n[i] += l->mark[named[i]] & 1;
	}
	for (i = 0; i < o->cand; i++) {
		l->prob[i] = (u32)((double)n[i] / l->steps * KVT_PROB_ONE + 0.5);
		for (j = i; j && l->prob[l->order[j - 1]] < l->prob[i]; j--)
			l->order[j] = l->order[j - 1];
		l->order[j] = i;
	}
	return 0;
}

struct ex_blk {
	u8 state, keep, fresh;	/* EX_*; EX_HOLD | EX_PIN; read, unused */
	double ready;		/* when its read ends */
};

struct ex_group {
	u32 n, next;		/* hints, and the next to look at */
	double due;
	u32 blk[EX_MAX_H], prob[EX_MAX_H];
};

struct ex_sim {
	const struct ex_opts *o;
	const struct ex_load *l;
	struct ex_res *res;
	int pol;
	struct kvt_pool pool;
	struct ex_blk *b;
	double *srv;		/* server -> free from */
	u32 *reads, nreads;	/* blocks being read */
	u32 nr_dram, nr_held;
	u32 gfirst, glast;	/* steps of the live groups */
	struct ex_group g[EX_MAX_LA + 1];
	double now;
};

static u32 ex_block(const struct ex_opts *o, u32 step, u32 e, u32 i)
{
	return ((step % o->layers) * o->experts + e) * o->blocks + i;
}

/* Set or clear @why on block @a: off the replacement list while kept. */
static void ex_keep(struct ex_sim *x, u32 a, u8 why, bool on)
{
	struct ex_blk *k = &x->b[a];
	u8 was = k->keep;

	if (on == !!(was & why) ||
	    (on && why == EX_HOLD && x->nr_held >= x->o->dram / 2))
		return;
	k->keep ^= why;
	if (why == EX_HOLD)
		x->nr_held += on ? 1 : -1;
	if (k->state == EX_IN && !was && k->keep)
		kvt_policy_remove(&x->pool, a);
	else if (k->state == EX_IN && was && !k->keep)
		kvt_policy_insert(&x->pool, a);
}

/* Room made (kvt_make_room()), read @a on the server free first, from @at. */
static int ex_read(struct ex_sim *x, u32 a, double at)
{
	u32 i, s = 0;

	for (; x->nr_dram >= x->o->dram; x->nr_dram--) {
		u32 v = kvt_policy_victim(&x->pool);

		if (v == NIL)
			return -ENOSPC;
		x->pool.blocks[v].flags = KVT_BF_EVICTING;
		kvt_policy_remove(&x->pool, v);
		x->pool.blocks[v].flags = 0;
		x->b[v].state = EX_OUT;
		x->res->wasted += x->b[v].fresh;
		x->b[v].fresh = 0;
	}
	for (i = 1; i < x->o->qd; i++)
		if (x->srv[i] < x->srv[s])
			s = i;
	x->srv[s] = max_t(double, at, x->srv[s]) + x->o->read_time;
	x->b[a].ready = x->srv[s];
	x->b[a].state = EX_LOADING;
	x->b[a].fresh = 1;
	x->reads[x->nreads++] = a;
	x->nr_dram++;
	x->res->reads++;
	return 0;
}

/*
 * kvt_policy_hint() as kmod/prefetch.c asks it: @busy reads in flight
 * besides this one, the holds against their bound (half of DRAM).
 */
static u32 ex_plan(const struct ex_sim *x, u32 p, bool in_time, u32 busy)
{
	u32 lim = x->o->dram / 2;

	return kvt_policy_hint(p, in_time,
			       (busy + 1) * KVT_POL_SCALE / x->o->qd,
			       lim ? x->nr_held * KVT_POL_SCALE / lim :
				     KVT_POL_SCALE);
}

/* The engine at x->now: groups in deadline order, hints in list order. */
static void ex_issue(struct ex_sim *x)
{
	u32 s, i, busy, f;

	for (s = x->gfirst; s < x->glast; s++) {
		struct ex_group *g = &x->g[s % (EX_MAX_LA + 1)];

		for (; g->next < g->n; g->next++) {
			u32 a = g->blk[g->next], p = g->prob[g->next];

			f = ex_plan(x, p, true, 0);
			if (x->b[a].state == EX_OUT) {
				for (i = 0, busy = 0; i < x->o->qd; i++)
					busy += x->srv[i] > x->now;
				if (busy == x->o->qd)
					return;
				f = ex_plan(x, p, x->now + x->o->read_time <=
					    g->due, busy);
				if (!(f & KVT_HINT_READ))
					continue;
				if (ex_read(x, a, x->now))
					return;		/* no room yet */
			}
			if (f & KVT_HINT_HOLD)
				ex_keep(x, a, EX_HOLD, true);
		}
	}
}

/* Run until @to: reads end, the engine starts more; at @to, none. */
static void ex_advance(struct ex_sim *x, double to)
{
	for (;;) {
		double t = to;
		u32 i = 0, a;

		while (i < x->nreads) {
			a = x->reads[i];
			if (x->b[a].ready > x->now) {
				t = min_t(double, t, x->b[a].ready);
				i++;
				continue;
			}
			x->reads[i] = x->reads[--x->nreads];
			x->b[a].state = EX_IN;
			if (!x->b[a].keep)
				kvt_policy_insert(&x->pool, a);
		}
		if (x->now >= to)
			return;
		ex_issue(x);
		for (i = 0; i < x->nreads; i++)
			t = min_t(double, t, x->b[x->reads[i]].ready);
		x->now = t;
	}
}

/* The runtime hints @step, due at @due. */
static void ex_hint(struct ex_sim *x, u32 step, double due)
{
	const struct ex_opts *o = x->o;
	const struct ex_load *l = x->l;
	struct ex_group *g = &x->g[step % (EX_MAX_LA + 1)];
	u32 n = x->pol == EXP_ALL || x->pol == EXP_PROB ? o->cand :
		x->pol == EXP_NONE ? 0 : o->top_k, i, j, e;

	g->n = 0;
	g->next = 0;
	g->due = due;
	x->glast = step + 1;
	for (i = 0; i < n; i++) {
		e = x->pol == EXP_ORACLE ? l->truth[(size_t)step * o->top_k + i] :
		    l->named[(size_t)step * o->cand + l->order[i]];
		for (j = 0; j < o->blocks; j++, g->n++) {
			g->blk[g->n] = ex_block(o, step, e, j);
			g->prob[g->n] = x->pol == EXP_PROB ?
					l->prob[l->order[i]] : KVT_PROB_ONE;
		}
	}
}

/* Layer @step is due now: pin, read what is missing, wait, use. */
static int ex_step(struct ex_sim *x, u32 step)
{
	const struct ex_opts *o = x->o;
	const u16 *truth = &x->l->truth[(size_t)step * o->top_k];
	struct ex_group *g = &x->g[step % (EX_MAX_LA + 1)];
	u32 n = o->top_k * o->blocks, a[EX_MAX_K * 64], i;
	double due = x->now, start = due;

	for (i = 0; i < n; i++) {
		a[i] = ex_block(o, step, truth[i / o->blocks], i % o->blocks);
		x->res->hits += x->b[a[i]].state == EX_IN;
		ex_keep(x, a[i], EX_PIN, true);
	}
	for (i = 0; i < n; i++) {
		if (x->b[a[i]].state == EX_OUT && ex_read(x, a[i], due))
			return -ENOSPC;
		if (x->b[a[i]].state != EX_IN)
			start = max_t(double, start, x->b[a[i]].ready);
	}
	ex_advance(x, start);
	x->res->stall += start - due;
	x->res->used += n;
	for (i = 0; i < n; i++) {
		ex_keep(x, a[i], EX_HOLD, false);
		ex_keep(x, a[i], EX_PIN, false);
		kvt_policy_touch(&x->pool, a[i]);
		x->b[a[i]].fresh = 0;
	}
	for (i = 0; i < g->n; i++)	/* the layer has run: its group ends */
		ex_keep(x, g->blk[i], EX_HOLD, false);
	x->gfirst = step + 1;
	if (step + o->lookahead < x->l->steps)
		ex_hint(x, step + o->lookahead,
			start + o->lookahead * o->compute);
	ex_advance(x, start + o->compute);
	return 0;
}

static int ex_run(const struct ex_load *l, const struct ex_opts *o, int pol,
		  struct ex_res *res)
{
	u32 nblk = o->layers * o->experts * o->blocks, a, s;
	struct ex_sim x = { .o = o, .l = l, .res = res, .pol = pol };
	int ret = -ENOMEM;

	memset(res, 0, sizeof(*res));
	x.pool.blocks = calloc(nblk, sizeof(*x.pool.blocks));
	x.b = calloc(nblk, sizeof(*x.b));
	x.srv = calloc(o->qd, sizeof(*x.srv));
	x.reads = calloc(o->qd + o->top_k * o->blocks, sizeof(u32));
	if (!x.pool.blocks || !x.b || !x.srv || !x.reads)
		goto out;
	for (a = 0; a < nblk; a++) {
		x.pool.blocks[a].prev = NIL;
		x.pool.blocks[a].next = NIL;
		x.pool.blocks[a].nloc = NIL;
	}
	kvt_policy_init(&x.pool);
	kvt_policy_param = KVT_POLICY_SEG;
	kvt_policy_clean_param = false;
	for (s = 0; s < o->lookahead && s < l->steps; s++)
		ex_hint(&x, s, s * o->compute);
	for (ret = 0, s = 0; !ret && s < l->steps; s++)
		ret = ex_step(&x, s);
	for (a = 0; a < nblk; a++)
		res->wasted += x.b[a].fresh;
	if (!ret && (kvt_policy_check(&x.pool) || shim_warnings))
		ret = -EFAULT;
out:
	free(x.pool.blocks);
	free(x.b);
	free(x.srv);
	free(x.reads);
	return ret;
}

/* The table, then "expert_prob_NAME: a/b (a / b)" (_qdN: one of a sweep). */
static void ex_print(const struct ex_opts *o, const struct ex_load *l,
		     const struct ex_res *r)
{
	static const char * const ratio[] = {
		"stall_vs_topk", "stall_vs_all", "reads_vs_all",
	};
	double st[EXP_NR], u, a[3], b[3];
	char sfx[16] = "";
	u32 i;
	int p;

	printf("experts: %u layers x %u experts x %u blocks, top-%u, zipf %g, ",
	       o->layers, o->experts, o->blocks, o->top_k, o->zipf);
	printf("%u tokens, seed %llu\n", o->tokens, (unsigned long long)o->seed);
	printf("predictor: %u candidates, accuracy %g, probabilities", o->cand,
	       o->acc);
	for (i = 0; i < o->cand; i++)
		printf(" %.3f", (double)l->prob[l->order[i]] / KVT_PROB_ONE);
	printf("\nDRAM %u blocks, compute %g, read %g, qd %u (%g reads a layer), lookahead %u\n",
	       o->dram, o->compute, o->read_time, o->qd,
	       o->qd * o->compute / o->read_time, o->lookahead);
	printf("%-8s %7s %7s %7s %7s\n", "policy", "hit", "stall", "reads",
	       "wasted");
	for (p = 0; p < EXP_NR; p++) {
		u = r[p].used ? r[p].used : 1;
		st[p] = r[p].stall / (l->steps * o->compute);
		printf("%-8s %7.4f %7.4f %7.4f %7.4f\n", exp_names[p],
		       r[p].hits / u, st[p], r[p].reads / u, r[p].wasted / u);
	}
	if (o->nqd > 1)
		snprintf(sfx, sizeof(sfx), "_qd%u", o->qd);
	a[0] = st[EXP_PROB];
	a[1] = st[EXP_PROB];
	a[2] = r[EXP_PROB].reads;
	b[0] = st[EXP_TOPK];
	b[1] = st[EXP_ALL];
	b[2] = r[EXP_ALL].reads;
	for (i = 0; i < 3; i++) {
		printf("expert_prob_%s%s: %.3f", ratio[i], sfx,
		       b[i] > 0 ? a[i] / b[i] : a[i] > 0 ? INFINITY : 1.0);
		if (i < 2)
			printf(" (%.4f / %.4f)", a[i], b[i]);
		putchar('\n');
	}
}

/* The workload once; every policy at each queue depth. */
static int experts(struct ex_opts *o)
{
	struct ex_res res[EXP_NR];
	struct ex_load l;
	u32 q;
	int p, ret;

	ret = ex_load_init(&l, o);
	for (q = 0; !ret && q < o->nqd; q++) {
		o->qd = o->qds[q];
		for (p = 0; !ret && p < EXP_NR; p++)
			ret = ex_run(&l, o, p, &res[p]);
		if (!ret && q)
			putchar('\n');
		if (!ret)
			ex_print(o, &l, res);
	}
	ex_load_free(&l);
	return ret;
}

/* ---- self-test ------------------------------------------------------------ */

static int st_fail;

#define ST_CHECK(cond, ...) do {					\
	if (!(cond)) {							\
		fprintf(stderr, "selftest: FAIL %s:%d: ", __FILE__,	\
			__LINE__);					\
		fprintf(stderr, __VA_ARGS__);				\
		fputc('\n', stderr);					\
		st_fail++;						\
	}								\
} while (0)

static int st_trace(struct trace_set *t, const u64 *ids, const u32 *lens,
		    u32 nreq)
{
	struct request r = { 0 };
	struct idmap m = { 0 };
	u32 cap_req = 0, cap_acc = 0, i, off = 0;
	int ret = 0;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < nreq && !ret; i++) {
		r.ids = (u64 *)ids + off;
		r.n = lens[i];
		off += lens[i];
		ret = trace_set_add(t, &m, &cap_req, &cap_acc, &r);
	}
	return ret ? ret : trace_set_finish(t, &m);
}

/* Usable prefix hits on a crafted chain, every policy, room for all. */
static void st_usable(const struct sim_opts *so)
{
	static const u64 ids[] = { 1, 2, 3, 1, 2, 4, 5, 2, 3, 1, 2, 3 };
	static const u32 lens[] = { 3, 3, 3, 3 };
	struct trace_set t;
	struct result res;
	int pol;

	ST_CHECK(!st_trace(&t, ids, lens, 4), "trace");
	for (pol = 0; pol < POL_NR; pol++) {
		ST_CHECK(!run_policy(&t, pol, 64, so, &res), "run %s",
			 pol_names[pol]);
		/* 2 (1 2 of 1 2 4) + 0 (5 misses) + 3 (1 2 3) */
		ST_CHECK(res.usable == 5, "%s: usable %llu, want 5",
			 pol_names[pol], (unsigned long long)res.usable);
		ST_CHECK(res.hits == 7, "%s: hits %llu, want 7",
			 pol_names[pol], (unsigned long long)res.hits);
	}
	trace_set_free(&t);
}

/* The fast LRU against a slow one: an array kept in recency order. */
static void st_lru_reference(void)
{
	u64 ids[4000], rng = 7;
	u32 lens[400], i, j, cap;
	struct trace_set t;

	for (i = 0; i < 400; i++)
		lens[i] = 10;
	for (i = 0; i < 4000; i++) {
		rng = mix64(rng + i);
		ids[i] = rng % 97;
	}
	ST_CHECK(!st_trace(&t, ids, lens, 400), "trace");
	for (cap = 1; cap <= 64; cap *= 4) {
		u32 ref[64], n = 0, ev;
		u64 hits = 0, refhits = 0;
		struct lru1 l;

		ST_CHECK(!lru1_init(&l, t.nkeys, cap), "init");
		for (i = 0; i < t.nacc; i++) {
			u32 k = t.key[i];

			hits += lru1_access(&l, k, &ev);
			for (j = 0; j < n && ref[j] != k; j++)
				;
			if (j < n) {
				refhits++;
			} else if (n < cap) {
				j = n++;
			} else {
				j = n - 1;
			}
			memmove(&ref[1], &ref[0], j * sizeof(u32));
			ref[0] = k;
		}
		ST_CHECK(hits == refhits, "lru cap %u: %llu hits, ref %llu",
			 cap, (unsigned long long)hits,
			 (unsigned long long)refhits);
		lru1_free(&l);
	}
	trace_set_free(&t);
}

/*
 * On generated (prefix-consistent) traces: OPT is at least every policy,
 * and the module's hierarchy with policy=lru and no NVMe is LRU exactly.
 * (policy=seg is not: it is checked against the module by --decisions.)
 */
static void st_opt_bound(void)
{
	static const u32 caps[] = { 8, 30, 100, 300, 1000 };
	static const double shares[] = { 0.25, 1.0 };
	struct sim_opts so = { .region_blocks = 4, .rescue_share = 8,
			       .block_bytes = 1, .protect_pct = 50 };
	struct gen_opts go;
	struct trace_set t;
	u32 c, s, seed;
	int pol;

	for (seed = 1; seed <= 3; seed++) {
		gen_opts_init(&go);
		go.requests = 600;
		go.sessions = 24;
		go.seed = seed;
		go.system_tokens = 1024;
		ST_CHECK(!trace_set_load(&t, "generated", &go, UINT64_MAX),
			 "gen");
		for (s = 0; s < 2; s++)
			for (c = 0; c < 5; c++) {
				struct result res[POL_NR];

				so.dram_share = shares[s];
				so.window = seed - 1;
				for (pol = 0; pol < POL_NR; pol++)
					ST_CHECK(!run_policy(&t, pol, caps[c],
							     &so, &res[pol]),
						 "run");
				ST_CHECK(res[POL_OPT].usable == res[POL_OPT].hits,
					 "opt: usable %llu != hits %llu",
					 (unsigned long long)res[POL_OPT].usable,
					 (unsigned long long)res[POL_OPT].hits);
				for (pol = 0; pol < POL_NR; pol++)
					ST_CHECK(res[POL_OPT].usable >=
						 res[pol].usable,
						 "seed %u cap %u: opt %llu < %s %llu",
						 seed, caps[c],
						 (unsigned long long)res[POL_OPT].usable,
						 pol_names[pol],
						 (unsigned long long)res[pol].usable);
				if (shares[s] == 1.0 && !so.window)
					ST_CHECK(res[POL_KVTIER_LRU].usable ==
						 res[POL_LRU].usable,
						 "cap %u: kvtier-lru %llu != lru %llu",
						 caps[c],
						 (unsigned long long)res[POL_KVTIER_LRU].usable,
						 (unsigned long long)res[POL_LRU].usable);
			}
		trace_set_free(&t);
	}
}

/* An empty pool of @n blocks run by policy @kind, for the list checks. */
static void st_pool(struct kvt_pool *pool, struct kvt_block *blocks, u32 n,
		    int kind)
{
	u32 a;

	memset(pool, 0, sizeof(*pool));
	for (a = 0; a < n; a++) {
		blocks[a].prev = blocks[a].next = blocks[a].nloc = NIL;
		blocks[a].users = blocks[a].flags = blocks[a].pol = 0;
	}
	pool->blocks = blocks;
	kvt_policy_init(pool);
	kvt_policy_param = kind;
	kvt_policy_clean_param = false;
}

/*
 * seg's ghost lists. A DRAM of 16 blocks; 64 blocks come in one after the
 * other, each used again at once (so each goes to main, and main hands
 * its coldest to probation), each insert past 16 evicting the victim (its
 * DRAM copy lost: the block stays on NVMe). Blocks 0 to 7 then come back.
 * They had been used again, so main was too small: they must count as
 * back from main, and probation's share shrink a step each. (It used to
 * grow: by the time a block is a victim, main has handed it to probation,
 * and the segment it left from was all it remembered.)
 */
static void st_seg_ghosts(void)
{
	struct kvt_block blocks[64];
	struct kvt_pool pool;
	u32 a, v, share;

	st_pool(&pool, blocks, 64, KVT_POLICY_SEG);
	for (a = 0; a < 64; a++) {
		if (pool.lru.nr == 16) {
			v = kvt_policy_victim(&pool);
			blocks[v].flags = KVT_BF_EVICTING;
			kvt_policy_remove(&pool, v);
			blocks[v].flags = 0;
		}
		kvt_policy_insert(&pool, a);
		kvt_policy_touch(&pool, a);
	}
	share = pool.pol.prob_share;
	for (a = 0; a < 8; a++) {
		v = kvt_policy_victim(&pool);
		blocks[v].flags = KVT_BF_EVICTING;
		kvt_policy_remove(&pool, v);
		blocks[v].flags = 0;
		kvt_policy_insert(&pool, a);
	}
	ST_CHECK(pool.pol.back_main == 8 && pool.pol.back_prob == 0 &&
		 pool.pol.prob_share == share - 8 * KVT_POL_STEP,
		 "seg ghosts: back main %u prob %u, share %u (from %u)",
		 pool.pol.back_main, pool.pol.back_prob, pool.pol.prob_share,
		 share);
	ST_CHECK(!kvt_policy_check(&pool), "seg ghosts: list broken");
}

/*
 * The online policies on two streams: hot keys (a quarter of the
 * accesses on 1/16 of the keys) and a hot set of 50 keys mixed with a
 * cyclic scan of 3000. Checked on every access: the resident count never
 * exceeds the capacity, a hit was resident before, a key accessed is
 * resident after, and the policy's own invariants. On the scan, the
 * scan-resistant ones (2q, arc, s3fifo, slru) must beat LRU at 100 blocks.
 */
static void st_online(void)
{
	static const u32 caps[] = { 1, 2, 3, 10, 100 };
	u32 nkeys = 3050, c, i, ev;
	int kind, stream;

	for (kind = 0; kind < ONL_NR; kind++)
		for (stream = 0; stream < 2; stream++)
			for (c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
				struct online *o = online_new(kind, nkeys,
							      caps[c]);
				u64 rng = 11, hits = 0, lhits = 0;
				struct lru1 l;

				ST_CHECK(o && !lru1_init(&l, nkeys, caps[c]),
					 "online_new");
				for (i = 0; i < 20000; i++) {
					u32 k;
					bool had, hit;

					rng = mix64(rng + i);
					if (stream == 0)
						k = rng % 4 ? rng % nkeys :
						    rng % (nkeys / 16);
					else
						k = rng % 2 ? 3000 + rng % 50 :
						    i / 2 % 3000;
					had = online_has(o, k);
					hit = online_access(o, k);
					hits += hit;
					lhits += lru1_access(&l, k, &ev);
					if (hit != had || !online_has(o, k) ||
					    online_nr(o) > caps[c] ||
					    (i % 97 == 0 && online_check(o))) {
						ST_CHECK(0, "%s cap %u access %u: hit %d had %d nr %u",
							 online_name(kind),
							 caps[c], i, hit, had,
							 online_nr(o));
						break;
					}
				}
				if (stream == 1 && caps[c] == 100 &&
				    kind != ONL_LFU)
					ST_CHECK(hits > lhits,
						 "%s: %llu hits on the scan, lru %llu",
						 online_name(kind),
						 (unsigned long long)hits,
						 (unsigned long long)lhits);
				lru1_free(&l);
				online_free(o);
			}
}

/*
 * Random calls into kmod/policy.c for a pool of policy @kind, with or
 * without a clean list, its lists checked after each: blocks gaining and
 * losing NVMe copies too. A block with a copy is on the clean list exactly
 * when the pool keeps one, and the victim is a clean block while there is
 * one.
 */
static void st_policy_run(int kind, bool clean, u64 *rng)
{
	struct kvt_block blocks[64];
	struct kvt_pool pool;
	u8 linked[64] = { 0 };
	int n;

	st_pool(&pool, blocks, 64, kind);
	kvt_policy_clean_param = clean;
	for (n = 0; n < 20000; n++) {
		u32 a, op;

		*rng = mix64(*rng + n);
		a = *rng % 64;
		op = (*rng >> 8) % 7;
		if (op == 0 && !linked[a]) {
			blocks[a].nloc = *rng & BIT(21) ? a : NIL;
			kvt_policy_insert(&pool, a);
			linked[a] = 1;
		} else if (op == 1) {
			kvt_policy_touch(&pool, a);
		} else if (op == 2 && linked[a]) {
			if (*rng & BIT(20))
				blocks[a].flags = KVT_BF_EVICTING;
			kvt_policy_remove(&pool, a);
			blocks[a].flags = 0;
			linked[a] = 0;
		} else if (op == 3) {
			a = kvt_policy_victim(&pool);
			ST_CHECK(a == NIL ? !pool.lru.nr && !pool.clean.nr :
				 linked[a] && (!pool.clean.nr ||
					       (blocks[a].pol & KVT_PB_CLEAN)),
				 "victim %u", a);

		} else if (op == 4 && blocks[a].nloc == NIL) {
			blocks[a].nloc = a;
			kvt_policy_clean(&pool, a);
		} else if (op == 5 && blocks[a].nloc != NIL) {
			blocks[a].nloc = NIL;
			kvt_policy_dirty(&pool, a);
		} else if (op == 6) {
			kvt_policy_ahead(&pool, a, *rng & BIT(22));
		}
		/* On the clean list: a copy, not read ahead unused. */
		for (a = 0; a < 64; a++)
			if (linked[a] && !(blocks[a].pol & KVT_PB_CLEAN) !=
			    !(clean && blocks[a].nloc != NIL &&
			      !(blocks[a].pol & KVT_PB_AHEAD)))
				break;
		if (a < 64 || kvt_policy_check(&pool)) {
			ST_CHECK(0, "kind %d clean %d: list broken at op %d (block %u)",
				 kind, clean, n, a);
			break;
		}
	}
}

/*
 * Batches written from the dirty list's cold end, coldest first, end in
 * that order: the clean list gives them back as victims in the same
 * order, a later batch after what is left of an earlier one, both before
 * a clean block used since (12, promoted), then the dirty list's.
 */
static void st_policy_batches(int kind)
{
	static const u32 want[] = { 0, 1, 2, 3, 4, 5, 6, 7, 12, 8 };
	struct kvt_block blocks[16];
	struct kvt_pool pool;
	unsigned int i, b;
	u32 a, v;

	st_pool(&pool, blocks, 16, kind);
	kvt_policy_clean_param = true;
	blocks[12].nloc = 12;
	kvt_policy_insert(&pool, 12);
	for (a = 0; a < 12; a++)
		kvt_policy_insert(&pool, a);
	for (i = 0, b = 0; b < 2; b++) {
		for (a = 0; a < 4; a++) {
			v = kvt_policy_next(&pool, NIL);
			blocks[v].nloc = v;
			kvt_policy_clean(&pool, v);
		}
		/* The first batch's two coldest go before the second ends. */
		for (; i < sizeof(want) / sizeof(want[0]) && (b || i < 2); i++) {
			v = kvt_policy_victim(&pool);
			ST_CHECK(v == want[i], "kind %d: victim %u, not %u",
				 kind, v, want[i]);
			kvt_policy_remove(&pool, v);
		}
	}
	ST_CHECK(!kvt_policy_check(&pool), "kind %d: lists broken", kind);
}

static void st_policy_lists(void)
{
	u64 rng = 42;
	int kind;

	for (kind = 0; kind < KVT_POLICY_NR; kind++) {
		st_policy_run(kind, false, &rng);
		st_policy_run(kind, true, &rng);
		st_policy_batches(kind);
	}
	ST_CHECK(!shim_warnings, "%lu warnings", shim_warnings);
}

/*
 * The --decisions model: its lists stay sound, pins and all, any size,
 * with NVMe and without (with the clean list for seg, without for lru).
 */
static void st_decisions(void)
{
	static const u32 drams[] = { 1, 2, 16 };
	FILE *f = fopen("/dev/null", "w");
	int kind;
	u32 c;

	ST_CHECK(f, "/dev/null");
	for (kind = 0; f && kind < KVT_POLICY_NR; kind++)
		for (c = 0; c < 6; c++)
			ST_CHECK(!decisions(f, drams[c % 3], 3000, c + 1, kind,
					    c >= 3, kind),
				 "decisions kind %d dram %u nvme %d", kind,
				 drams[c % 3], c >= 3);
	if (f)
		fclose(f);
}

/*
 * kvt_policy_hint(): from one half up (a sure hint too) a hint is read
 * and held, late or not, however busy the queue and full the holds.
 * Below, it is never read late, and read in time exactly from a floor
 * (found by bisection) that never falls as the queue fills: KVT_PROB_MIN
 * idle, a quarter full and past; it is held exactly from a bar that
 * never falls as holds fill: KVT_PROB_MIN with none, one half at the
 * bound (no probable hint below one half then).
 */
static u32 st_bisect(u32 busy, u32 held, u32 bit)
{
	u32 lo = 0, hi = KVT_PROB_ONE / 2, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (kvt_policy_hint(mid, true, busy, held) & bit)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static void st_hint(void)
{
	u32 v, lo, prev = 0, prev_bar = 0, p, f, bar;
	int fails = st_fail;

	for (v = 0; v <= 2 * KVT_POL_SCALE && fails == st_fail; v++) {
		for (p = 0; p < 8; p++)
			ST_CHECK(kvt_policy_hint(p < 4 ? KVT_PROB_ONE / 2 + p * 9000 :
						 p < 7 ? KVT_PROB_ONE + p : U32_MAX,
						 p & 1, v, 2 * KVT_POL_SCALE - v) ==
				 (KVT_HINT_READ | KVT_HINT_HOLD),
				 "hint: likely %u, in_time %u busy %u", p, p & 1, v);
		lo = st_bisect(v, 0, KVT_HINT_READ);
		ST_CHECK(lo >= prev && (v || lo == KVT_PROB_MIN) &&
			 (v < KVT_POL_SCALE || lo == KVT_PROB_ONE / 4),
			 "hint: floor %u at busy %u, %u before", lo, v, prev);
		prev = lo;
		bar = st_bisect(0, v, KVT_HINT_HOLD);
		ST_CHECK(bar >= prev_bar && (v || bar == KVT_PROB_MIN) &&
			 (v < KVT_POL_SCALE || bar == KVT_PROB_ONE / 2),
			 "hint: hold bar %u at held %u, %u before", bar, v,
			 prev_bar);
		prev_bar = bar;
		for (p = v % 61; v % 128 == 0 && p < KVT_PROB_ONE / 2; p += 61) {
			f = kvt_policy_hint(p, true, v, v);
			if (!(f & KVT_HINT_READ) !=
			    (p < st_bisect(v, v, KVT_HINT_READ)) ||
			    !(f & KVT_HINT_HOLD) !=
			    (p < st_bisect(v, v, KVT_HINT_HOLD)) ||
			    kvt_policy_hint(p, false, v, v) != (f & KVT_HINT_HOLD)) {
				ST_CHECK(0, "hint: prob %u busy/held %u: %#x", p,
					 v, f);
				break;
			}
		}
	}
	ST_CHECK(kvt_policy_hint(KVT_PROB_ONE / 2 - 1, true, 0,
				 KVT_POL_SCALE) == KVT_HINT_READ &&
		 kvt_policy_hint(KVT_PROB_ONE / 2, false, KVT_POL_SCALE,
				 KVT_POL_SCALE) == (KVT_HINT_READ | KVT_HINT_HOLD),
		 "hint: one half");
}

/* Every --experts policy on @o; 0 or -errno. */
static int st_ex_run(struct ex_opts *o, struct ex_res *r)
{
	struct ex_load l;
	int p, ret;

	ret = ex_check(o) ? -EINVAL : ex_load_init(&l, o);
	for (p = 0; !ret && p < EXP_NR; p++)
		ret = ex_run(&l, o, p, &r[p]);
	ex_load_free(&l);
	return ret;
}

/*
 * --experts, tiny. A perfect predictor naming just the top-k makes topk,
 * prob and oracle the same sure hints, so the same replay, even with reads
 * late (one a layer for up to 4 blocks). Without hints each miss is read
 * on demand and used. With room to spare (16 reads a layer for at most 4),
 * prob reads in time what topk does, and more: at least its hits. The
 * replay is deterministic.
 */
static void st_experts(void)
{
	struct ex_res r[EXP_NR], again[EXP_NR];
	struct ex_opts o = ex_defaults;
	int p;

	o.layers = 4;
	o.experts = 8;
	o.tokens = 48;
	o.cand = 2;
	o.acc = 1;
	o.blocks = 2;
	o.dram = 32;
	o.qd = 1;
	o.read_time = 1;
	ST_CHECK(!st_ex_run(&o, r), "experts: run");
	for (p = EXP_TOPK; p < EXP_ORACLE; p++)
		ST_CHECK(p == EXP_ALL || !memcmp(&r[p], &r[EXP_ORACLE], sizeof(*r)),
			 "experts: perfect: %s hits %llu, oracle %llu",
			 exp_names[p], (unsigned long long)r[p].hits,
			 (unsigned long long)r[EXP_ORACLE].hits);
	ST_CHECK(r[EXP_NONE].hits + r[EXP_NONE].reads == r[EXP_NONE].used &&
		 !r[EXP_NONE].wasted && r[EXP_NONE].stall > 0 &&
		 r[EXP_ORACLE].hits > r[EXP_NONE].hits, "experts: none");
	o.experts = 16;
	o.cand = 4;
	o.acc = 0.8;
	o.blocks = 1;
	o.dram = 20;
	o.qd = 4;
	o.read_time = 0.25;
	ST_CHECK(!st_ex_run(&o, r) && !st_ex_run(&o, again), "experts: run");
	ST_CHECK(r[EXP_PROB].hits >= r[EXP_TOPK].hits &&
		 !memcmp(r, again, sizeof(r)), "experts: prob %llu hits, topk %llu",
		 (unsigned long long)r[EXP_PROB].hits,
		 (unsigned long long)r[EXP_TOPK].hits);
}

static int selftest(void)
{
	struct sim_opts so = { .dram_share = 0.25, .region_blocks = 4,
			       .window = 0, .rescue_share = 8,
			       .block_bytes = 1, .protect_pct = 50 };

	st_usable(&so);
	so.window = 2;
	st_usable(&so);
	st_lru_reference();
	st_opt_bound();
	st_policy_lists();
	st_seg_ghosts();
	st_online();
	st_decisions();
	st_hint();
	st_experts();
	printf("selftest: %s\n", st_fail ? "FAIL" : "ok");
	return st_fail ? 1 : 0;
}

/* ---- command line ---------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: policy-sim --trace FILE|generated --capacities N,N,... [options]\n"
		"       policy-sim --decisions --dram-blocks C --ops N [--seed S] [--policy lru|seg]\n"
		"                  [--nvme [--clean-first Y|N]]\n"
		"       policy-sim --experts [--qd N,N,...] [options]\n"
		"       policy-sim --selftest\n"
		"\n"
		"Replays a Mooncake-format trace (or the built-in generator's requests)\n"
		"through each policy at each total capacity, in blocks over all tiers, and\n"
		"prints the usable prefix hit ratio (a block counts only if every earlier\n"
		"block of its request hit too), the shares of those hits served by DRAM\n"
		"and by NVMe, and the bytes moved between the tiers.\n"
		"\n"
		"  --trace FILE|generated  the requests ('-' for stdin)\n"
		"  --capacities N,N,...    total capacities in blocks\n"
		"  --policies P,P,...      of lru, opt, kvtier, kvtier-lru, kvtier-seg,\n"
		"                          kvtier-clean, slru, 2q, arc, s3fifo, lfu,\n"
		"                          sched [all]\n"
		"  --dram-share F          DRAM's share of each capacity, the rest NVMe\n"
		"                          [0.25]; 1 for DRAM only\n"
		"  --region-blocks N       blocks per NVMe log region [64: 4 MiB regions\n"
		"                          of 64 KiB blocks]\n"
		"  --window W              requests ahead the runtime hints (LOOKUP with\n"
		"                          TOUCH and LOAD) [8]; 0 for none\n"
		"  --rescue-share S        rewrite clean victims whose copy is in the\n"
		"                          oldest 1/S of a wrapped log [8]; 0 for never\n"
		"  --sync-every N          the runtime SYNCs after every N requests (the\n"
		"                          kvtier rows write every block without a copy,\n"
		"                          coldest first) [0: never]\n"
		"  --protect-pct P         prefetch_protect_pct: hinted blocks held off\n"
		"                          the lists, in percent of DRAM; the others are\n"
		"                          marked read ahead [50]\n"
		"  --block-bytes B         bytes of one block, for bytes_moved [64K]\n"
		"  --max-requests N        replay the first N requests\n"
		"  --csv                   CSV instead of a table\n"
		"  --selftest              check the simulator and the policy code\n"
		"\n"
		"--decisions generates N pool commands (PUT, PUT with REPLACE, GET, LOOKUP\n"
		"with and without TOUCH, DROP, PIN, UNPIN) from the seed, runs them through\n"
		"kmod/policy.c as the module does for a pool of C DRAM blocks without NVMe,\n"
		"and prints one line a command: 'N OP KEYS RESULT EVICTED' (RESULT 0 or\n"
		"-errno, for lookup and peek the resident prefix; EVICTED the keys evicted\n"
		"or '-'). selftests/kvtier/policy replays them on the module.\n"
		"  --policy P              lru or seg [lru]\n"
		"  --nvme                  the pool has an NVMe tier and a SYNC follows\n"
		"                          each command: victims keep their copy, EVICTED\n"
		"                          names the keys that left DRAM\n"
		"  --clean-first Y|N       policy_clean_first of the pool [Y]\n"
		"\n"
		"--experts replays a generated MoE decode streaming its experts from NVMe\n"
		"through kmod/policy.c's kvt_policy_hint() and replacement, and prints for\n"
		"each prefetch policy (none, topk, all, prob, oracle) the hit share, stall\n"
		"over compute time, blocks read and wasted per block used, then the\n"
		"expert_prob_* ratios; a set for each --qd. '--experts N' sets the\n"
		"experts of a layer too. Options [defaults]:\n"
		"  --layers N [16] --experts N [64] --top-k K [2] --zipf S [1.0]\n"
		"  --tokens T [256] --candidates C [6] --accuracy A [0.8]\n"
		"  --expert-blocks B [1] --dram-blocks N [a quarter] --seed S [1]\n"
		"  --compute T [1.0] --read-time T [0.25] --qd N,N,... [4]\n"
		"  --lookahead L [2]         layers ahead the runtime hints\n");
	gen_usage(f);
}

static int parse_caps(const char *s, u32 *caps, u32 *n)
{
	char *end;

	*n = 0;
	while (*s) {
		unsigned long v;

		errno = 0;
		v = strtoul(s, &end, 10);
		if (errno || end == s || !v || v >= UINT32_MAX / 2 ||
		    *n >= MAX_CAPS)
			return -EINVAL;
		caps[(*n)++] = v;
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			return -EINVAL;
	}
	return *n ? 0 : -EINVAL;
}

static int parse_policies(const char *s, bool *on)
{
	char buf[256], *tok, *save;
	int p;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	memset(on, 0, POL_NR * sizeof(*on));
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (p = 0; p < POL_NR && strcmp(tok, pol_names[p]); p++)
			;
		if (p == POL_NR)
			return -EINVAL;
		on[p] = true;
	}
	return 0;
}

/* An --experts option: 1 if taken, 0 if not one, -EINVAL. */
static int ex_parse_opt(struct ex_opts *o, const char *name, const char *val)
{
	static const struct {
		const char *name;
		size_t off;
		double max;	/* 0: a whole number from 1 to 65535 */
	} opts[] = {
		{ "layers", offsetof(struct ex_opts, layers), 0 },
		{ "experts", offsetof(struct ex_opts, experts), 0 },
		{ "top-k", offsetof(struct ex_opts, top_k), 0 },
		{ "tokens", offsetof(struct ex_opts, tokens), 0 },
		{ "candidates", offsetof(struct ex_opts, cand), 0 },
		{ "expert-blocks", offsetof(struct ex_opts, blocks), 0 },
		{ "lookahead", offsetof(struct ex_opts, lookahead), 0 },
		{ "zipf", offsetof(struct ex_opts, zipf), 8 },
		{ "accuracy", offsetof(struct ex_opts, acc), 1 },
		{ "compute", offsetof(struct ex_opts, compute), 1e6 },
		{ "read-time", offsetof(struct ex_opts, read_time), 1e6 },
	};
	size_t i;
	char *end;
	double d;

	if (!strcmp(name, "qd"))
		return parse_caps(val, o->qds, &o->nqd) ? -EINVAL : 1;
	for (i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		if (strcmp(name, opts[i].name))
			continue;
		errno = 0;
		d = strtod(val, &end);
		if (errno || *end || !(d >= 0) ||
		    d > (opts[i].max ? opts[i].max : 65535) ||
		    (!opts[i].max && (d < 1 || d != floor(d))))
			return -EINVAL;
		if (opts[i].max)
			*(double *)((char *)o + opts[i].off) = d;
		else
			*(u32 *)((char *)o + opts[i].off) = d;
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sim_opts so = { .dram_share = 0.25, .region_blocks = 64,
			       .window = 8, .rescue_share = 8,
			       .block_bytes = 65536, .protect_pct = 50 };
	u64 max_req = UINT64_MAX, v;
	const char *trace = NULL;
	bool csv = false, on[POL_NR];
	bool dec = false, ex = false, dec_nvme = false, dec_clean = true;
	u64 dec_dram = 0, dec_ops = 0;
	int dec_kind = KVT_POLICY_LRU;
	u32 caps[MAX_CAPS], ncaps = 0, c;
	double worst = INFINITY;
	struct trace_set t;
	struct ex_opts xo = ex_defaults;
	struct gen_opts go;
	const char *why;
	int i, ret;

	gen_opts_init(&go);
	for (i = 0; i < POL_NR; i++)
		on[i] = true;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *val;
		char *end;

		if (!strcmp(a, "--selftest"))
			return selftest();
		if (!strcmp(a, "--csv")) {
			csv = true;
			continue;
		}
		if (!strcmp(a, "--decisions")) {
			dec = true;
			continue;
		}
		if (!strcmp(a, "--nvme")) {
			dec_nvme = true;
			continue;
		}
		/* The mode; with a number, the experts of a layer too. */
		if (!strcmp(a, "--experts")) {
			ex = true;
			if (i + 1 >= argc || !strncmp(argv[i + 1], "--", 2))
				continue;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		if (strncmp(a, "--", 2) || i + 1 >= argc) {
			usage(stderr);
			return 2;
		}
		val = argv[++i];
		a += 2;
		ret = 0;
		if (!strcmp(a, "trace")) {
			trace = val;
		} else if (!strcmp(a, "capacities")) {
			ret = parse_caps(val, caps, &ncaps);
		} else if (!strcmp(a, "policies")) {
			ret = parse_policies(val, on);
		} else if (!strcmp(a, "dram-share")) {
			errno = 0;
			so.dram_share = strtod(val, &end);
			if (errno || *end || !(so.dram_share > 0) ||
			    so.dram_share > 1)
				ret = -EINVAL;
		} else if (!strcmp(a, "region-blocks")) {
			ret = parse_u64(val, &v) || !v || v > 1 << 20 ?
			      -EINVAL : 0;
			so.region_blocks = v;
		} else if (!strcmp(a, "window")) {
			ret = parse_u64(val, &v) || v > 1 << 20 ? -EINVAL : 0;
			so.window = v;
		} else if (!strcmp(a, "sync-every")) {
			ret = parse_u64(val, &v) || v > 1 << 20 ? -EINVAL : 0;
			so.sync_every = v;
		} else if (!strcmp(a, "protect-pct")) {
			ret = parse_u64(val, &v) || v > 90 ? -EINVAL : 0;
			so.protect_pct = v;
		} else if (!strcmp(a, "rescue-share")) {
			ret = parse_u64(val, &v) || v > 1 << 20 ? -EINVAL : 0;
			so.rescue_share = v;
		} else if (!strcmp(a, "block-bytes")) {
			ret = parse_size(val, &so.block_bytes) ? -EINVAL : 0;
		} else if (!strcmp(a, "max-requests")) {
			ret = parse_u64(val, &max_req) ? -EINVAL : 0;
		} else if (!strcmp(a, "dram-blocks")) {
			ret = parse_u64(val, &dec_dram) || !dec_dram ||
			      dec_dram > 1 << 20 ? -EINVAL : 0;
		} else if (!strcmp(a, "ops")) {
			ret = parse_u64(val, &dec_ops) || dec_ops > 1 << 24 ?
			      -EINVAL : 0;
		} else if (!strcmp(a, "policy")) {
			if (!strcmp(val, "lru"))
				dec_kind = KVT_POLICY_LRU;
			else if (!strcmp(val, "seg"))
				dec_kind = KVT_POLICY_SEG;
			else
				ret = -EINVAL;
		} else if (!strcmp(a, "clean-first")) {
			dec_clean = !strcmp(val, "Y");
			ret = dec_clean || !strcmp(val, "N") ? 0 : -EINVAL;
		} else {
			ret = ex_parse_opt(&xo, a, val);
			if (!ret)
				ret = gen_parse_opt(&go, a, val);
			ret = ret == 1 ? 0 : ret ? ret : -ENOENT;
		}
		if (ret) {
			fprintf(stderr, "policy-sim: %s --%s%s%s\n",
				ret == -ENOENT ? "unknown option" : "bad value for",
				a, ret == -ENOENT ? "" : " ", ret == -ENOENT ? "" : val);
			return 2;
		}
	}
	if (ex) {
		xo.seed = go.seed;
		xo.dram = dec_dram;
		why = trace || ncaps || dec ? "no trace or --decisions with it" :
		      ex_check(&xo);
		if (why)
			fprintf(stderr, "policy-sim: --experts: %s\n", why);
		ret = why ? -EINVAL : experts(&xo);
		if (ret && !why)
			fprintf(stderr, "policy-sim: experts: %s\n", strerror(-ret));
		return why ? 2 : ret || fflush(stdout) ? 1 : 0;
	}
	if (dec) {
		if (!dec_dram || trace || ncaps) {
			usage(stderr);
			return 2;
		}
		ret = decisions(stdout, dec_dram, dec_ops, go.seed, dec_kind,
				dec_nvme, dec_clean);
		if (ret)
			fprintf(stderr, "policy-sim: decisions: %s\n",
				strerror(-ret));
		return ret || fflush(stdout) ? 1 : 0;
	}
	if (!trace || !ncaps) {
		usage(stderr);
		return 2;
	}
	ret = trace_set_load(&t, trace, &go, max_req);
	if (ret) {
		fprintf(stderr, "policy-sim: %s: %s\n", trace, strerror(-ret));
		return 1;
	}

	if (csv)
		printf("capacity_blocks,policy,usable_hit_ratio,dram_share,nvme_share,bytes_moved,held,dup,dead\n");
	else
		printf("%s: %u requests, %u blocks, %u distinct; DRAM share %g, region %u blocks, window %u\n"
		       "%9s %-12s %7s %7s %6s %6s %12s %6s %6s %6s\n", trace,
		       t.nreq, t.nacc, t.nkeys, so.dram_share,
		       so.region_blocks, so.window, "capacity", "policy",
		       "usable", "vs_opt", "dram", "nvme", "MiB_moved", "held",
		       "dup", "dead");
	for (c = 0; c < ncaps; c++) {
		struct result res[POL_NR];
		int p;

		for (p = 0; p < POL_NR; p++) {
			if (!on[p] && p != POL_OPT)
				continue;
			ret = run_policy(&t, p, caps[c], &so, &res[p]);
			if (ret) {
				fprintf(stderr, "policy-sim: %s at %u: %s\n",
					pol_names[p], caps[c], strerror(-ret));
				trace_set_free(&t);
				return 1;
			}
		}
		for (p = 0; p < POL_NR; p++) {
			double u, opt, dram, nvme, moved, n, held, dup, dead;

			if (!on[p])
				continue;
			u = (double)res[p].usable / t.nacc;
			opt = (double)res[POL_OPT].usable / t.nacc;
			dram = res[p].usable ?
			       (double)res[p].usable_dram / res[p].usable : 0;
			nvme = res[p].usable ? 1 - dram : 0;
			moved = (double)(res[p].reads + res[p].writes) *
				so.block_bytes;
			/* Census: mean shares of the capacity. */
			n = res[p].samples ? (double)res[p].samples * caps[c] : 1;
			held = res[p].held / n;
			dup = res[p].dup / n;
			dead = res[p].dead / n;
			if (p == POL_KVTIER && opt > 0 && u / opt < worst)
				worst = u / opt;
			if (csv && pol_one_level(p))
				printf("%u,%s,%.4f,,,,%.4f,,\n", caps[c],
				       pol_names[p], u, held);
			else if (csv)
				printf("%u,%s,%.4f,%.4f,%.4f,%.0f,%.4f,%.4f,%.4f\n",
				       caps[c], pol_names[p], u, dram, nvme,
				       moved, held, dup, dead);
			else if (pol_one_level(p))
				printf("%9u %-12s %7.4f %7.3f %6s %6s %12s %6.3f %6s %6s\n",
				       caps[c], pol_names[p], u,
				       opt > 0 ? u / opt : 0, "-", "-", "-",
				       held, "-", "-");
			else
				printf("%9u %-12s %7.4f %7.3f %6.3f %6.3f %12.1f %6.3f %6.3f %6.3f\n",
				       caps[c], pol_names[p], u,
				       opt > 0 ? u / opt : 0, dram, nvme,
				       moved / (1 << 20), held, dup, dead);
		}
	}
	if (!csv && on[POL_KVTIER] && worst != INFINITY)
		printf("kvtier_vs_opt_min: %.3f\n", worst);
	trace_set_free(&t);
	return 0;
}
