// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier-demo: the runtime model of `replay --compute-us-per-token`.
 *
 * A runtime serves requests one at a time on one accelerator. Request i
 * computes for input_length x the per-token cost; before it starts, the
 * blocks of its cached prefix must be in DRAM, and the accelerator stalls
 * while they are read from NVMe. With hints, the runtime looks --hints
 * requests ahead in its queue: when a request enters that window it sends
 * one PREFETCH group for its chain, due when the requests before it will
 * have computed (a deadline in CLOCK_MONOTONIC: their compute and, for
 * each, the time a request has taken besides its compute, averaged over
 * the requests so far), and the kernel stages the blocks while the
 * accelerator computes. The figures compare the stall
 * with and without hints on the same trace.
 *
 * With --background B, the runtime also sends the B requests after the
 * window a background group each (KVTIER_PREFETCH_BACKGROUND, due at their
 * predicted start): blocks worth staging while the engine has room, which
 * yield to the window's groups; each request is hinted again, with a
 * deadline, when it enters the window.
 *
 * With an HBM tier (--hbm-slots), the prefix must be in HBM instead: the
 * groups target KVTIER_TIER_HBM (NVMe -> DRAM -> HBM), and the stall is
 * the wait for what of the prefix is not in HBM when the request starts.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kvtier.h>
#include "kvtier-demo.h"
#include "util.h"

#define GROUP_RING	4096	/* groups tracked; far more than in flight */
#define GROUP_BG	(1ULL << 62)	/* background groups' ids */

struct group_info {
	uint64_t seq;		/* request sequence + 1, 0: slot free */
	uint32_t need;		/* existing prefix that needed reading */
};

struct lookahead {
	uint32_t window;
	uint32_t bg;		/* requests after the window, hinted background */
	uint32_t tier;		/* the groups' target, KVTIER_TIER_* */
	uint32_t budget;	/* most blocks hinted at once; 0: no bound */
	struct request *q;	/* window + 1 requests, q[head] the current */
	uint32_t head;
	uint32_t len;
	uint64_t seq;		/* sequence number of q[head] */
	uint64_t hinted;	/* requests below this were hinted */
	uint64_t bg_hinted;	/* and below this in the background */
	uint64_t late_last;	/* the latest late group's sequence + 1 */
	uint64_t started_ns;	/* when the current request was taken */
	uint64_t compute_ns;	/* its modeled compute */
	uint64_t stalled_ns;	/* and its stall */
	uint64_t extra_ns;	/* a request's time past its compute, averaged */
	int done;		/* the source ran dry */
	struct group_info groups[GROUP_RING];
	uint32_t outstanding;
	struct kvtier_key *keys;
	struct kvtier_hint *hints;
	uint32_t cap;
	struct hint_stats st;
};

int lookahead_new(uint32_t window, uint32_t bg, struct lookahead **lap)
{
	struct lookahead *la = calloc(1, sizeof(*la));

	*lap = NULL;
	if (!la)
		return -ENOMEM;
	la->window = window;
	la->bg = bg;
	la->tier = KVTIER_TIER_DRAM;
	la->q = calloc(window + bg + 1, sizeof(*la->q));
	if (!la->q) {
		free(la);
		return -ENOMEM;
	}
	*lap = la;
	return 0;
}

void lookahead_free(struct lookahead *la)
{
	uint32_t i;

	if (!la)
		return;
	for (i = 0; i <= la->window + la->bg; i++)
		request_free(&la->q[i]);
	free(la->q);
	free(la->keys);
	free(la->hints);
	free(la);
}

void lookahead_set_tier(struct lookahead *la, uint32_t tier)
{
	la->tier = tier;
}

void lookahead_set_budget(struct lookahead *la, uint32_t blocks)
{
	la->budget = blocks;
}

const struct hint_stats *lookahead_stats(const struct lookahead *la)
{
	return &la->st;
}

static struct request *slot(struct lookahead *la, uint32_t i)
{
	return &la->q[(la->head + i) % (la->window + la->bg + 1)];
}

int lookahead_next(struct lookahead *la, next_fn fn, void *arg,
		   struct request **r)
{
	int ret;

	if (la->len) {		/* the previous current one is done */
		uint64_t t = now_ns(), spent = t - la->started_ns;

		/*
		 * What a request takes besides its compute (its GETs, PUTs,
		 * the host's work): a runtime knows its step times, and due
		 * times that leave them out are early by as much.
		 */
		spent = spent > la->compute_ns + la->stalled_ns ?
			spent - la->compute_ns - la->stalled_ns : 0;
		la->extra_ns = la->extra_ns ? (7 * la->extra_ns + spent) / 8 :
					      spent;
		la->head = (la->head + 1) % (la->window + la->bg + 1);
		la->len--;
		la->seq++;
	}
	while (!la->done && la->len <= la->window + la->bg) {
		ret = fn(arg, slot(la, la->len));
		if (ret < 0)
			return ret;
		if (!ret) {
			la->done = 1;
			break;
		}
		la->len++;
	}
	if (!la->len)
		return 0;
	*r = slot(la, 0);
	la->started_ns = now_ns();
	la->compute_ns = 0;
	la->stalled_ns = 0;
	return 1;
}

void lookahead_stalled(struct lookahead *la, uint64_t ns)
{
	la->stalled_ns += ns;
}

uint64_t request_compute_ns(const struct request *r, double ns_per_token)
{
	return (uint64_t)(r->input_length * ns_per_token);
}

static int reserve(struct lookahead *la, uint32_t n)
{
	void *p;

	if (n <= la->cap)
		return 0;
	p = realloc(la->keys, n * sizeof(*la->keys));
	if (!p)
		return -ENOMEM;
	la->keys = p;
	p = realloc(la->hints, n * sizeof(*la->hints));
	if (!p)
		return -ENOMEM;
	la->hints = p;
	la->cap = n;
	return 0;
}

/* One group for request @r, due at @deadline; background if @bg. */
static int hint_one(struct lookahead *la, struct kvtier_pool *pool,
		    const struct request *r, uint64_t seq, uint64_t deadline,
		    uint32_t batch_max, int bg)
{
	struct kvtier_prefetch_args a = { 0 };
	struct group_info *gi = &la->groups[seq % GROUP_RING];
	struct group_info bgi = { 0 };
	uint32_t n = r->n < batch_max ? r->n : batch_max, i, exist;
	uint32_t queued = 0, resident = 0;
	int ret;

	if (!n)
		return 0;
	ret = reserve(la, n);
	if (ret)
		return ret;
	kvtier_key_chain_n(NULL, r->ids, n, la->keys);
	for (i = 0; i < n; i++)
		kvtier_hint_set(&la->hints[i], &la->keys[i]);
	if (bg) {
		gi = &bgi;	/* only counted */
	} else if (gi->seq) {
		/* Its group is long gone unread; forget it. */
		la->outstanding--;
		gi->seq = 0;
	}
	a.group = (seq + 1) | (bg ? GROUP_BG : 0);
	a.cookie = seq;
	a.deadline_ns = deadline;
	a.tier = la->tier;
	a.flags = bg ? KVTIER_PREFETCH_BACKGROUND : 0;
	ret = kvtier_prefetch(pool, la->hints, n, &a, &queued, &resident);
	if (ret == -EAGAIN)
		return 0;	/* too many groups live: go without */
	if (ret)
		return ret;
	for (exist = 0; exist < n && !la->hints[exist].status; exist++)
		;
	if (bg) {
		la->st.bg_groups++;
		la->st.bg_hints += n;
		la->outstanding++;
		return 0;
	}
	la->st.groups++;
	la->st.hints += n;
	la->st.dropped += n - queued - resident;
	gi->seq = seq + 1;
	/*
	 * Only groups that needed reads, and were due later than at once,
	 * say anything about deadlines.
	 */
	gi->need = queued && deadline ? exist : 0;
	la->outstanding++;
	return 0;
}

int lookahead_hint(struct lookahead *la, struct kvtier_pool *pool,
		   double ns_per_token, uint32_t batch_max)
{
	uint64_t t = now_ns(), blocks = 0;
	uint32_t i;
	int ret;

	/*
	 * The current request starts now; each later one when those before
	 * end, each taking its compute and what requests took besides.
	 */
	la->compute_ns = la->len ? request_compute_ns(slot(la, 0), ns_per_token) :
				   0;
	for (i = 0; i < la->len; i++) {
		const struct request *r = slot(la, i);
		uint64_t seq = la->seq + i;

		/* Later ones wait until what comes first fits with them. */
		blocks += r->n;
		if (la->budget && i && blocks > la->budget)
			break;
		if (i <= la->window && seq >= la->hinted) {
			ret = hint_one(la, pool, r, seq, i ? t : 0, batch_max, 0);
			if (ret)
				return ret;
			la->hinted = seq + 1;
		} else if (i > la->window && seq >= la->bg_hinted) {
			ret = hint_one(la, pool, r, seq, t, batch_max, 1);
			if (ret)
				return ret;
			la->bg_hinted = seq + 1;
		}
		t += request_compute_ns(r, ns_per_token) + la->extra_ns;
	}
	return 0;
}

static void account(struct lookahead *la, const struct kvtier_completion *c)
{
	struct group_info *gi = &la->groups[(c->group - 1) % GROUP_RING];

	if (c->group & GROUP_BG) {
		la->st.bg_done += !c->status;
		la->outstanding--;
		return;
	}
	if (gi->seq != c->group)
		return;
	if (gi->need) {
		la->st.need_groups++;
		la->st.need_blocks += gi->need;
		if (!(c->flags & KVTIER_COMPLETION_LATE) && !c->status) {
			la->st.on_time_blocks += c->ready < gi->need ?
						 c->ready : gi->need;
		} else {
			la->st.late_groups++;
			/* Late ones should end in deadline (= sequence) order. */
			if (c->group < la->late_last)
				la->st.late_out_of_order++;
			else
				la->late_last = c->group;
		}
	}
	gi->seq = 0;
	la->outstanding--;
}

int lookahead_drain(struct lookahead *la, struct kvtier_pool *pool,
		    int timeout_ms)
{
	struct kvtier_completion c[64];
	int n, i;

	do {
		n = kvtier_completions(pool, c, 64, la->outstanding ? timeout_ms : 0);
		if (n < 0)
			return n;
		for (i = 0; i < n; i++)
			account(la, &c[i]);
	} while (n == 64 || (timeout_ms > 0 && n > 0 && la->outstanding));
	return 0;
}

void sleep_ns(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = ns / 1000000000ULL,
		.tv_nsec = ns % 1000000000ULL,
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}
