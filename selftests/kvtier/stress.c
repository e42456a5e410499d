// SPDX-License-Identifier: GPL-2.0
/*
 * Concurrency stress: NTHREADS threads x NPOOLS pools of random verified
 * operations (PUT, GET, DROP, LOOKUP, PIN, UNPIN, REPLACE, PREFETCH) for
 * KVTIER_STRESS_SECS seconds (default 20). Each thread owns its keys
 * (key[0] = its id) and has its own fd on each pool, so the oracle is
 * exact: a GET returns the bytes of the last PUT of that key or misses
 * (pools hold fewer blocks than keys, so evictions happen), and misses
 * after a DROP. A seed is printed; KVTIER_STRESS_SEED replays it.
 */
#include <pthread.h>
#include <time.h>
#include "kvtier_test.h"

#define NTHREADS	4
#define NPOOLS		3
#define NKEYS		96		/* per thread and pool */
#define BS		(8 * KST_KIB)
#define CAP		256U
#define DRAM		128U		/* < NTHREADS * NKEYS: evictions */
#define MAXPINS		4

struct key_state {
	__u64 gen;		/* last PUT; 0: absent (never PUT or dropped) */
	__u64 alt;		/* a REPLACE with an unclear result: gen or alt */
	__u32 pins;		/* held by this thread's fd */
};

struct worker {
	int id;
	int fd[NPOOLS];
	__u64 seed;
	double end;
	unsigned long ops, gets, hits, misses, errors, prefetches;
	char msg[256];
	struct key_state k[NPOOLS][NKEYS];
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static __u64 rnd(__u64 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

#define BAD(w, ...) do { \
	if (!(w)->errors++) \
		snprintf((w)->msg, sizeof((w)->msg), __VA_ARGS__); \
} while (0)

static void *work(void *arg)
{
	struct worker *w = arg;
	char *buf = kst_alloc(BS), *out = kst_alloc(BS);
	__u64 gen_next = 1, k0 = 0x5354000000ULL + w->id, g;
	__u32 npins = 0;

	if (!buf || !out) {
		BAD(w, "no memory");
		return NULL;
	}
	while (now() < w->end && w->errors < 10) {
		int p = rnd(&w->seed) % NPOOLS, op = rnd(&w->seed) % 16;
		__u32 key = rnd(&w->seed) % NKEYS;
		struct key_state *ks = &w->k[p][key];
		int fd = w->fd[p], ret;

		w->ops++;
		switch (op) {
		case 0: case 1: case 2:		/* PUT */
			g = gen_next++;
			kst_fill(buf, BS, k0, key, g);
			ret = kst_put1(fd, k0, key, buf, NULL);
			if (!ret) {
				/* It may have been evicted: a PUT is fine. */
				ks->gen = g;
				ks->alt = 0;
			} else if (ret == -EEXIST) {
				if (!ks->gen)
					BAD(w, "PUT of absent key %u: EEXIST", key);
			} else if (ret != -ENOSPC && ret != -ENOMEM) {
				BAD(w, "PUT: %d", ret);
			}
			break;
		case 3: case 4:			/* REPLACE */
			g = gen_next++;
			kst_fill(buf, BS, k0, key, g);
			ret = kst_replace1(fd, k0, key, buf, NULL);
			if (!ret) {
				ks->gen = g;
				ks->alt = 0;
			} else if (ret == -EBUSY || ret == -ENOSPC ||
				   ret == -ENOMEM) {
				/* Old bytes, new ones or a miss may follow. */
				if (ks->gen)
					ks->alt = g;
			} else {
				BAD(w, "REPLACE: %d", ret);
			}
			break;
		case 5: case 6: case 7: case 8:	/* GET */
			w->gets++;
			memset(out, 0, BS);
			ret = kst_get1(fd, k0, key, out, NULL);
			if (ret == -ENOENT) {
				w->misses++;
				if (ks->pins)
					BAD(w, "GET of pinned key %u missed", key);
				break;
			}
			if (ret) {
				BAD(w, "GET: %d", ret);
				break;
			}
			w->hits++;
			g = 0;
			if (kst_check(out, BS, k0, key, &g) != -1)
				BAD(w, "GET key %u: bad bytes (gen %llu)", key,
				    (unsigned long long)g);
			else if (!ks->gen)
				BAD(w, "GET of absent key %u hit gen %llu",
				    key, (unsigned long long)g);
			else if (g != ks->gen && g != ks->alt)
				BAD(w, "GET key %u: gen %llu, want %llu",
				    key, (unsigned long long)g,
				    (unsigned long long)ks->gen);
			else if (ks->alt) {
				ks->gen = g;
				ks->alt = 0;
			}
			break;
		case 9:				/* DROP */
			if (ks->pins)
				break;
			ret = kst_drop1(fd, k0, key);
			if (ret && ret != -ENOENT)
				BAD(w, "DROP: %d", ret);
			else
				ks->gen = ks->alt = 0;
			break;
		case 10: case 11:		/* LOOKUP */
			ret = kst_lookup1(fd, k0, key, NULL);
			if (ret && ret != -ENOENT)
				BAD(w, "LOOKUP: %d", ret);
			if (!ret && !ks->gen)
				BAD(w, "LOOKUP of absent key %u hit", key);
			if (ret == -ENOENT && ks->pins)
				BAD(w, "LOOKUP of pinned key %u missed", key);
			break;
		case 12:			/* PIN */
			if (npins >= MAXPINS)
				break;
			ret = kst_pin1(fd, k0, key);
			if (!ret) {
				if (!ks->gen)
					BAD(w, "PIN of absent key %u", key);
				ks->pins++;
				npins++;
			} else if (ret != -ENOENT && ret != -ENOSPC &&
				   ret != -ENOMEM && ret != -EBUSY) {
				BAD(w, "PIN: %d", ret);
			}
			break;
		case 13: case 14:		/* UNPIN */
			if (!ks->pins)
				break;
			ret = kst_unpin1(fd, k0, key);
			if (ret)
				BAD(w, "UNPIN of pinned key %u: %d", key, ret);
			ks->pins--;
			npins--;
			break;
		default: {			/* PREFETCH, then drain */
			struct kvtier_hint h[4];
			struct kvtier_prefetch pf;
			struct kvtier_completion c;
			int i;

			memset(h, 0, sizeof(h));
			for (i = 0; i < 4; i++) {
				h[i].key[0] = k0;
				h[i].key[1] = (key + i) % NKEYS;
			}
			memset(&pf, 0, sizeof(pf));
			pf.hints = (__u64)(uintptr_t)h;
			pf.count = 4;
			pf.group = w->ops;
			pf.tier = KVTIER_TIER_DRAM;
			ret = kst_ioctl(fd, KVTIER_IOC_PREFETCH, &pf);
			/*
			 * -EAGAIN: the fd has KVTIER_PREFETCH_GROUPS_MAX
			 * groups live or unread. Anything else is a bug
			 * (-ENOTTY would be a dispatcher that lost the
			 * command, -EOPNOTSUPP is for the HBM tier only).
			 */
			if (!ret)
				w->prefetches++;
			else if (ret != -EAGAIN)
				BAD(w, "PREFETCH: %d", ret);
			while (read(fd, &c, sizeof(c)) == sizeof(c))
				;
			break;
		}
		}
	}
	kst_free(buf, BS);
	kst_free(out, BS);
	return NULL;
}

FIXTURE(stress) {
	int unused;
};

FIXTURE_SETUP(stress)
{
	kst_setup(_metadata);

	self->unused = 0;
}

FIXTURE_TEARDOWN(stress)
{
}

/*
 * KVTIER_STRESS_SECS can ask for up to ten minutes of load (smp-unload.sh
 * runs it until it kills it): the harness's default 30 s must not end it.
 */
TEST_F_TIMEOUT(stress, random_verified_ops, 900)
{
	static struct worker w[NTHREADS];
	char names[NPOOLS][KVTIER_NAME_MAX];
	pthread_t th[NTHREADS];
	const char *env;
	double secs = 20, t0;
	unsigned long ops = 0, gets = 0, hits = 0, errs = 0, pfs = 0;
	__u64 seed;
	int ctl, pfd[NPOOLS], i, p;

	env = getenv("KVTIER_STRESS_SECS");
	if (env && *env)
		secs = atof(env);
	env = getenv("KVTIER_STRESS_SEED");
	seed = env && *env ? strtoull(env, NULL, 0) :
			     (__u64)time(NULL) * 2654435761ULL + getpid();
	TH_LOG("seed %llu (KVTIER_STRESS_SEED), %g s, %d threads x %d pools",
	       (unsigned long long)seed, secs, NTHREADS, NPOOLS);
	ctl = kst_ctl_open();
	ASSERT_LE(0, ctl);
	for (p = 0; p < NPOOLS; p++) {
		kst_name(names[p], "stress");
		pfd[p] = kst_pool_create(ctl, names[p], BS, CAP, DRAM);
		ASSERT_LE(0, pfd[p]);
	}
	t0 = now();
	for (i = 0; i < NTHREADS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].id = i;
		w[i].seed = seed + i * 0x9e3779b97f4a7c15ULL ?: 1;
		w[i].end = t0 + secs;
		for (p = 0; p < NPOOLS; p++) {
			/* O_NONBLOCK: drain completions without waiting. */
			w[i].fd[p] = kst_pool_open(ctl, names[p], 0);
			ASSERT_LE(0, w[i].fd[p]);
			fcntl(w[i].fd[p], F_SETFL, O_NONBLOCK);
		}
		ASSERT_EQ(0, pthread_create(&th[i], NULL, work, &w[i]));
	}
	for (i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		ops += w[i].ops;
		gets += w[i].gets;
		hits += w[i].hits;
		errs += w[i].errors;
		pfs += w[i].prefetches;
		if (w[i].errors)
			TH_LOG("thread %d: %lu errors, first: %s", i,
			       w[i].errors, w[i].msg);
	}
	TH_LOG("%lu ops in %.1f s, %lu GETs (%lu hits), %lu PREFETCHes",
	       ops, now() - t0, gets, hits, pfs);
	EXPECT_EQ(0UL, errs);
	EXPECT_LT(1000UL, ops);
	/* One op in sixteen is a PREFETCH: some must have been taken. */
	EXPECT_LT(0UL, pfs);
	for (i = 0; i < NTHREADS; i++)
		for (p = 0; p < NPOOLS; p++)
			close(w[i].fd[p]);
	for (p = 0; p < NPOOLS; p++) {
		EXPECT_EQ(0, kst_pinned(pfd[p]));
		close(pfd[p]);
		EXPECT_EQ(0, kst_pool_destroy(ctl, names[p]));
	}
	close(ctl);
}

TEST_HARNESS_MAIN
