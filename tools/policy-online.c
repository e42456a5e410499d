// SPDX-License-Identifier: GPL-2.0
/*
 * policy-online.c: classic single-level online replacement policies.
 *
 *  slru	segmented LRU: misses enter probation at MRU; a hit in
 *		probation moves the key to protected MRU; protected (80% of
 *		the cache) overflows by demoting its LRU key to probation
 *		MRU; the victim is probation's LRU key (protected's when
 *		probation is empty).
 *  2q		full 2Q (Johnson & Shasha, VLDB '94): A1in a FIFO of new
 *		keys (Kin = 25% of the cache), A1out a FIFO of keys evicted
 *		from A1in (Kout = 50%, ghosts), Am an LRU of keys seen again
 *		after leaving A1in. A miss found in A1out goes to Am, any
 *		other miss to A1in; a hit in A1in changes nothing. The
 *		victim is A1in's oldest while |A1in| > Kin, else Am's LRU.
 *  arc		ARC (Megiddo & Modha, FAST '03), per the paper's Fig. 4;
 *		p is an integer, each delta |B2|/|B1| or |B1|/|B2| rounded
 *		down, and at least 1.
 *  s3fifo	S3-FIFO (Yang et al., SOSP '23): a small FIFO (10%) for
 *		new keys, a main FIFO (the rest), a ghost FIFO of keys
 *		with as many entries as main can hold; 2-bit frequencies.
 *		Small's oldest key moves to main if it was accessed while
 *		in small (frequency reset), else becomes a ghost; main's
 *		oldest key is reinserted with its frequency less one while
 *		that is not zero, else evicted. A miss found in the ghost
 *		FIFO goes to main. Main is evicted from while it is over
 *		its share or small is empty.
 *  lfu		LFU with aging: a key enters with count 1 and gains 1 per
 *		hit; after every LFU_AGE_CAPS x @cap accesses the counts of
 *		all resident keys are halved at once (O(cap) every cap
 *		accesses, so O(1) amortized; the heap is rebuilt, since
 *		halving can make ties). The victim has the smallest count,
 *		ties going to the least recently used: a binary min-heap on
 *		(count, last access), indexed by key; O(log cap) an access.
 *
 * Shares round down but leave no segment empty that the cache has room
 * for: with 1 to 3 blocks, slru protects 1, 1, 2; 2q has Kin 1 and Kout
 * 1; s3fifo's small FIFO has 1 block and main the rest (none for a
 * 1-block cache: keys accessed in small still pass through main on their
 * way out), its ghost FIFO at least 1 entry.
 *
 * The list policies share one set of doubly linked lists, threaded
 * through per-key prev[] and next[] arrays: a key is on at most one list
 * at a time, and where[] says which. Lists 0 and 1 hold the resident
 * keys; lists 2 and 3 are ghosts.
 */
#include <stdlib.h>
#include <string.h>

#include "policy-online.h"

#define ONL_NIL		U32_MAX
#define ONL_LISTS	4

/* The lists of each policy. The resident ones are 0 and 1. */
enum {
	SLRU_PROB = 0, SLRU_PROT,
	Q_A1IN = 0, Q_AM, Q_A1OUT,
	ARC_T1 = 0, ARC_T2, ARC_B1, ARC_B2,
	S3_SMALL = 0, S3_MAIN, S3_GHOST,
};

#define S3_FREQ_MAX	3

struct onl_list {
	u32 head;		/* MRU, newest */
	u32 tail;		/* LRU, oldest */
	u32 nr;
};

/* lfu: a heap entry; @prio as LFU_STAMP_BITS describes. */
struct onl_ent {
	u64 prio;
	u32 key;
};

/**
 * struct online - one cache
 * @kind: enum online_kind.
 * @nkeys: keys are < @nkeys.
 * @cap: resident keys at most.
 * @nlists: lists the kind uses.
 * @lim: per-list bound (slru: protected; 2q: Kin, Kout; s3fifo: small,
 *	main, ghost); 0 where unused.
 * @l: the lists.
 * @prev: toward the head, per key.
 * @next: toward the tail, per key.
 * @where: list + 1 holding each key; 0: none (lfu: 1 while in the heap).
 * @freq: s3fifo: the 2-bit access count of each key.
 * @p: arc: target size of T1.
 * @heap: lfu: the resident keys, a min-heap on (aged count, last access).
 * @pos: lfu: each resident key's index in @heap.
 * @now: lfu: accesses so far.
 * @hn: lfu: keys in @heap.
 * @tick: lfu: accesses since counts were last halved.
 */
struct online {
	int kind;
	u32 nkeys;
	u32 cap;
	u32 nlists;
	u32 lim[ONL_LISTS];
	struct onl_list l[ONL_LISTS];
	u32 *prev;
	u32 *next;
	u8 *where;
	u8 *freq;
	u32 p;
	struct onl_ent *heap;
	u32 *pos;
	u64 now;
	u32 hn;
	u64 tick;
};

static const char *const onl_names[ONL_NR] = {
	[ONL_SLRU]	= "slru",
	[ONL_2Q]	= "2q",
	[ONL_ARC]	= "arc",
	[ONL_S3FIFO]	= "s3fifo",
	[ONL_LFU]	= "lfu",
};

const char *online_name(int kind)
{
	return kind >= 0 && kind < ONL_NR ? onl_names[kind] : NULL;
}

int online_kind_of(const char *name)
{
	int i;

	for (i = 0; i < ONL_NR; i++)
		if (name && !strcmp(name, onl_names[i]))
			return i;
	return -1;
}

/* ---- lists --------------------------------------------------------------- */

static void onl_del(struct online *o, u32 k)
{
	struct onl_list *l = &o->l[o->where[k] - 1];

	if (o->prev[k] != ONL_NIL)
		o->next[o->prev[k]] = o->next[k];
	else
		l->head = o->next[k];
	if (o->next[k] != ONL_NIL)
		o->prev[o->next[k]] = o->prev[k];
	else
		l->tail = o->prev[k];
	o->where[k] = 0;
	l->nr--;
}

/* Put @k, on no list, at the head of list @i. */
static void onl_add(struct online *o, u32 i, u32 k)
{
	struct onl_list *l = &o->l[i];

	o->prev[k] = ONL_NIL;
	o->next[k] = l->head;
	if (l->head != ONL_NIL)
		o->prev[l->head] = k;
	else
		l->tail = k;
	l->head = k;
	o->where[k] = i + 1;
	l->nr++;
}

static void onl_move(struct online *o, u32 i, u32 k)
{
	onl_del(o, k);
	onl_add(o, i, k);
}

/* Take the tail of list @i (not empty) off it; return the key. */
static u32 onl_pop(struct online *o, u32 i)
{
	u32 k = o->l[i].tail;

	onl_del(o, k);
	return k;
}

/* Put @k at the head of ghost list @i, dropping its oldest past @lim. */
static void onl_ghost(struct online *o, u32 i, u32 k)
{
	onl_add(o, i, k);
	if (o->l[i].nr > o->lim[i])
		onl_pop(o, i);
}

static u32 onl_resident(const struct online *o)
{
	return o->l[0].nr + o->l[1].nr;
}

/* ---- slru ---------------------------------------------------------------- */

static bool slru_access(struct online *o, u32 k)
{
	switch (o->where[k]) {
	case SLRU_PROT + 1:
		onl_move(o, SLRU_PROT, k);
		return true;
	case SLRU_PROB + 1:
		onl_move(o, SLRU_PROT, k);
		if (o->l[SLRU_PROT].nr > o->lim[SLRU_PROT])
			onl_add(o, SLRU_PROB, onl_pop(o, SLRU_PROT));
		return true;
	}
	if (onl_resident(o) >= o->cap)
		onl_pop(o, o->l[SLRU_PROB].nr ? SLRU_PROB : SLRU_PROT);
	onl_add(o, SLRU_PROB, k);
	return false;
}

/* ---- 2q ------------------------------------------------------------------ */

/* Make room for one key: the paper's reclaimfor(). */
static void q2_reclaim(struct online *o)
{
	if (onl_resident(o) < o->cap)
		return;
	/* An empty Am happens only when Kin >= cap, i.e. cap == 1. */
	if (o->l[Q_A1IN].nr > o->lim[Q_A1IN] || !o->l[Q_AM].nr)
		onl_ghost(o, Q_A1OUT, onl_pop(o, Q_A1IN));
	else
		onl_pop(o, Q_AM);
}

static bool q2_access(struct online *o, u32 k)
{
	switch (o->where[k]) {
	case Q_AM + 1:
		onl_move(o, Q_AM, k);
		return true;
	case Q_A1IN + 1:
		return true;
	case Q_A1OUT + 1:
		onl_del(o, k);
		q2_reclaim(o);
		onl_add(o, Q_AM, k);
		return false;
	}
	q2_reclaim(o);
	onl_add(o, Q_A1IN, k);
	return false;
}

/* ---- arc ----------------------------------------------------------------- */

/* The paper's REPLACE(x, p): push T1's or T2's LRU key to its ghost list. */
static void arc_replace(struct online *o, bool in_b2)
{
	u32 t1 = o->l[ARC_T1].nr;

	/* An empty T2 cannot happen here (the cache is full); be safe. */
	if ((t1 && (t1 > o->p || (in_b2 && t1 == o->p))) ||
	    !o->l[ARC_T2].nr)
		onl_add(o, ARC_B1, onl_pop(o, ARC_T1));
	else
		onl_add(o, ARC_B2, onl_pop(o, ARC_T2));
}

static bool arc_access(struct online *o, u32 k)
{
	u32 b1 = o->l[ARC_B1].nr, b2 = o->l[ARC_B2].nr, c = o->cap;
	u32 d, l1, tot;

	switch (o->where[k]) {
	case ARC_T1 + 1:
	case ARC_T2 + 1:
		/* Case I. */
		onl_move(o, ARC_T2, k);
		return true;
	case ARC_B1 + 1:
		/* Case II: B1 is the more useful; grow T1's target. */
		d = b1 >= b2 ? 1 : b2 / b1;
		o->p = min_t(u32, o->p + d, c);
		arc_replace(o, false);
		onl_move(o, ARC_T2, k);
		return false;
	case ARC_B2 + 1:
		/* Case III: shrink it. */
		d = b2 >= b1 ? 1 : b1 / b2;
		o->p = o->p > d ? o->p - d : 0;
		arc_replace(o, true);
		onl_move(o, ARC_T2, k);
		return false;
	}
	/* Case IV: in no list. */
	l1 = o->l[ARC_T1].nr + b1;
	tot = onl_resident(o) + b1 + b2;
	if (l1 >= c) {
		if (o->l[ARC_T1].nr < c) {
			onl_pop(o, ARC_B1);
			arc_replace(o, false);
		} else {
			onl_pop(o, ARC_T1);
		}
	} else if (tot >= c) {
		if (tot >= 2 * c)
			onl_pop(o, ARC_B2);
		arc_replace(o, false);
	}
	onl_add(o, ARC_T1, k);
	return false;
}

/* ---- s3fifo -------------------------------------------------------------- */

/* Move small's oldest keys on until one leaves the cache or small is empty. */
static void s3_evict_small(struct online *o)
{
	while (o->l[S3_SMALL].nr) {
		u32 t = onl_pop(o, S3_SMALL);

		if (o->freq[t]) {
			o->freq[t] = 0;
			onl_add(o, S3_MAIN, t);
		} else {
			onl_ghost(o, S3_GHOST, t);
			return;
		}
	}
}

/* Reinsert main's oldest keys, each losing one, until one has none left. */
static void s3_evict_main(struct online *o)
{
	while (o->l[S3_MAIN].nr) {
		u32 t = onl_pop(o, S3_MAIN);

		if (!o->freq[t])
			return;
		o->freq[t]--;
		onl_add(o, S3_MAIN, t);
	}
}

static bool s3_access(struct online *o, u32 k)
{
	bool ghost;

	switch (o->where[k]) {
	case S3_SMALL + 1:
	case S3_MAIN + 1:
		if (o->freq[k] < S3_FREQ_MAX)
			o->freq[k]++;
		return true;
	}
	ghost = o->where[k] == S3_GHOST + 1;
	if (ghost)
		onl_del(o, k);
	/* Small may empty into main without freeing a block: go round. */
	while (onl_resident(o) >= o->cap) {
		if (o->l[S3_MAIN].nr > o->lim[S3_MAIN] || !o->l[S3_SMALL].nr)
			s3_evict_main(o);
		else
			s3_evict_small(o);
	}
	o->freq[k] = 0;
	onl_add(o, ghost ? S3_MAIN : S3_SMALL, k);
	return false;
}

/* ---- lfu ---------------------------------------------------------------- */

/*
 * A heap entry's priority: the count above LFU_STAMP_BITS bits of last
 * access time, so one compare orders by count, then by recency. Counts
 * saturate at 2^24 - 1; the time wraps after 2^40 accesses.
 */
#define LFU_STAMP_BITS	40
#define LFU_STAMP_MASK	((1ULL << LFU_STAMP_BITS) - 1)
#define LFU_ONE		(1ULL << LFU_STAMP_BITS)
#define LFU_CNT_MAX	((~0ULL) >> LFU_STAMP_BITS)

/*
 * Counts are halved after every LFU_AGE_CAPS x cap accesses: at 1, counts
 * of all but the hottest keys stay 0 or 1 and lfu is LRU; at 16 it beats
 * every other policy here on a Zipf stream.
 */
#define LFU_AGE_CAPS	16

static void lfu_set(struct online *o, u32 i, struct onl_ent e)
{
	o->heap[i] = e;
	o->pos[e.key] = i;
}

static void lfu_up(struct online *o, u32 i)
{
	struct onl_ent e = o->heap[i];

	while (i && e.prio < o->heap[(i - 1) / 2].prio) {
		lfu_set(o, i, o->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	lfu_set(o, i, e);
}

static void lfu_down(struct online *o, u32 i)
{
	struct onl_ent e = o->heap[i];
	u32 c;

	for (;;) {
		c = 2 * i + 1;
		if (c >= o->hn)
			break;
		if (c + 1 < o->hn && o->heap[c + 1].prio < o->heap[c].prio)
			c++;
		if (o->heap[c].prio >= e.prio)
			break;
		lfu_set(o, i, o->heap[c]);
		i = c;
	}
	lfu_set(o, i, e);
}

/* Halve every resident count, then restore the heap (ties may reorder). */
static void lfu_age(struct online *o)
{
	u64 p;
	u32 i;

	for (i = 0; i < o->hn; i++) {
		p = o->heap[i].prio;
		o->heap[i].prio = (p & LFU_STAMP_MASK) |
				  (p >> (LFU_STAMP_BITS + 1) << LFU_STAMP_BITS);
	}
	for (i = o->hn / 2; i-- > 0; )
		lfu_down(o, i);
}

static bool lfu_access(struct online *o, u32 k)
{
	bool hit = o->where[k];
	u64 now = ++o->now & LFU_STAMP_MASK;
	struct onl_ent e;
	u32 i;

	if (hit) {
		i = o->pos[k];
		e = o->heap[i];
		if (e.prio >> LFU_STAMP_BITS < LFU_CNT_MAX)
			e.prio += LFU_ONE;
		e.prio = (e.prio & ~LFU_STAMP_MASK) | now;
		o->heap[i] = e;
		/* Count and time only grow: the key can only sink. */
		lfu_down(o, i);
	} else {
		if (o->hn >= o->cap) {
			o->where[o->heap[0].key] = 0;
			if (--o->hn) {
				lfu_set(o, 0, o->heap[o->hn]);
				lfu_down(o, 0);
			}
		}
		e.prio = LFU_ONE | now;
		e.key = k;
		o->where[k] = 1;
		lfu_set(o, o->hn++, e);
		lfu_up(o, o->hn - 1);
	}
	if (++o->tick >= (u64)o->cap * LFU_AGE_CAPS) {
		o->tick = 0;
		lfu_age(o);
	}
	return hit;
}

/* ---- the interface ------------------------------------------------------- */

struct online *online_new(int kind, u32 nkeys, u32 cap)
{
	size_t n = nkeys ? nkeys : 1;
	struct online *o;
	u32 i;

	if (kind < 0 || kind >= ONL_NR || !cap)
		return NULL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->kind = kind;
	o->nkeys = nkeys;
	o->cap = cap;
	for (i = 0; i < ONL_LISTS; i++)
		o->l[i].head = o->l[i].tail = ONL_NIL;
	o->where = calloc(n, 1);
	if (!o->where)
		goto fail;

	switch (kind) {
	case ONL_SLRU:
		o->nlists = 2;
		/* At most cap - 1, so probation keeps a block (cap > 1). */
		o->lim[SLRU_PROT] = max_t(u32, (u64)cap * 4 / 5, 1);
		break;
	case ONL_2Q:
		o->nlists = 3;
		o->lim[Q_A1IN] = max_t(u32, cap / 4, 1);
		o->lim[Q_A1OUT] = max_t(u32, cap / 2, 1);
		break;
	case ONL_ARC:
		o->nlists = 4;
		break;
	case ONL_S3FIFO:
		o->nlists = 3;
		o->lim[S3_SMALL] = max_t(u32, cap / 10, 1);
		o->lim[S3_MAIN] = cap - o->lim[S3_SMALL];
		o->lim[S3_GHOST] = max_t(u32, o->lim[S3_MAIN], 1);
		o->freq = calloc(n, 1);
		if (!o->freq)
			goto fail;
		break;
	case ONL_LFU:
		o->heap = malloc(min_t(size_t, cap, n) * sizeof(*o->heap));
		o->pos = malloc(n * sizeof(u32));
		if (!o->heap || !o->pos)
			goto fail;
		return o;
	}

	o->prev = malloc(n * sizeof(u32));
	o->next = malloc(n * sizeof(u32));
	if (!o->prev || !o->next)
		goto fail;
	for (i = 0; i < nkeys; i++)
		o->prev[i] = o->next[i] = ONL_NIL;
	return o;
fail:
	online_free(o);
	return NULL;
}

void online_free(struct online *o)
{
	if (!o)
		return;
	free(o->prev);
	free(o->next);
	free(o->where);
	free(o->freq);
	free(o->heap);
	free(o->pos);
	free(o);
}

bool online_access(struct online *o, u32 key)
{
	switch (o->kind) {
	case ONL_SLRU:
		return slru_access(o, key);
	case ONL_2Q:
		return q2_access(o, key);
	case ONL_ARC:
		return arc_access(o, key);
	case ONL_S3FIFO:
		return s3_access(o, key);
	default:
		return lfu_access(o, key);
	}
}

u32 online_nr(const struct online *o)
{
	return o->kind == ONL_LFU ? o->hn : onl_resident(o);
}

bool online_has(const struct online *o, u32 key)
{
	u8 w = o->where[key];

	return w == 1 || w == 2;
}

/* ---- invariants ---------------------------------------------------------- */

/* List @i: links both ways, tags, length, and (s3fifo) frequencies. */
static int onl_check_list(const struct online *o, u32 i)
{
	const struct onl_list *l = &o->l[i];
	u32 k, prev = ONL_NIL, n = 0;

	for (k = l->head; k != ONL_NIL; prev = k, k = o->next[k]) {
		if (k >= o->nkeys || n++ >= l->nr || o->where[k] != i + 1 ||
		    o->prev[k] != prev)
			return -EINVAL;
		if (o->freq && o->freq[k] > S3_FREQ_MAX)
			return -EINVAL;
	}
	return n == l->nr && l->tail == prev ? 0 : -EINVAL;
}

static int lfu_check(const struct online *o)
{
	u32 i, k;

	if (o->hn > o->cap)
		return -EINVAL;
	for (i = 0; i < o->hn; i++) {
		k = o->heap[i].key;
		if (k >= o->nkeys || o->where[k] != 1 || o->pos[k] != i)
			return -EINVAL;
		if (i && o->heap[i].prio < o->heap[(i - 1) / 2].prio)
			return -EINVAL;
	}
	return 0;
}

int online_check(const struct online *o)
{
	u32 tagged[ONL_LISTS + 1] = { 0 };
	u32 i, c = o->cap, res;

	/* Every tagged key is on its list (the walks see the converse). */
	for (i = 0; i < o->nkeys; i++) {
		if (o->where[i] > ONL_LISTS)
			return -EINVAL;
		tagged[o->where[i]]++;
	}
	if (o->kind == ONL_LFU)
		return tagged[1] == o->hn && tagged[1] + tagged[0] == o->nkeys ?
		       lfu_check(o) : -EINVAL;
	for (i = 0; i < ONL_LISTS; i++) {
		if (i >= o->nlists && o->l[i].nr)
			return -EINVAL;
		if (tagged[i + 1] != o->l[i].nr || onl_check_list(o, i))
			return -EINVAL;
	}
	res = onl_resident(o);
	if (res > c)
		return -EINVAL;

	switch (o->kind) {
	case ONL_SLRU:
		return o->l[SLRU_PROT].nr <= o->lim[SLRU_PROT] ? 0 : -EINVAL;
	case ONL_2Q:
		return o->l[Q_A1OUT].nr <= o->lim[Q_A1OUT] ? 0 : -EINVAL;
	case ONL_ARC:
		/* The paper's invariants of DBL(2c) and of ARC's lists. */
		if (o->p > c || o->l[ARC_T1].nr + o->l[ARC_B1].nr > c ||
		    res + o->l[ARC_B1].nr + o->l[ARC_B2].nr > 2 * (u64)c)
			return -EINVAL;
		if (res < c && (o->l[ARC_B1].nr || o->l[ARC_B2].nr))
			return -EINVAL;
		return 0;
	case ONL_S3FIFO:
		/* Main may run over its share by what small has just moved. */
		return o->l[S3_GHOST].nr <= o->lim[S3_GHOST] ? 0 : -EINVAL;
	}
	return -EINVAL;
}
