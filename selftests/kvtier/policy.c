// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier replacement policy: the module and tools/policy-sim decide the
 * same. kmod/policy.c builds into both; this test checks that the module
 * around it calls it as the simulator models.
 *
 * `tools/policy-sim --decisions` generates pool commands (PUT, PUT with
 * REPLACE, GET, LOOKUP with and without TOUCH, DROP, PIN, UNPIN) and prints
 * each with its result and the keys the policy evicted, for the policy the
 * module was loaded with (parameter "policy"; some variants set it to lru
 * or seg for their pool, which takes it at its first PUT) and a pool of
 * dram_blocks blocks without NVMe, where a victim is dropped. The test replays them on
 * a real pool and after each command requires the same result, the same
 * evicted keys (found with LOOKUP without TOUCH, which the policy does not
 * see, and the pool's eviction counter), the same resident and pinned
 * counts; it prints the first divergence.
 *
 * The nvme_* variants do it with an NVMe tier: they attach the device
 * (/dev/nvme0n1 or $KVTIER_NVME_DEV, formatted; skipped without one, or
 * with a device attached already) and SYNC after every command, as the
 * simulator's --nvme model does; a victim then keeps its copy, and the
 * keys that left DRAM are those LOOKUP finds on NVMe. GET and PIN load a
 * block back, and every LOOKUP entry is checked for the tier the model
 * says.
 *
 * The simulator is found next to the test binary (../../tools/policy-sim,
 * the VM sees the host's tree at the same path) or at $KVTIER_POLICY_SIM.
 */
#include <limits.h>
#include "nvme_test.h"

#define BS		KST_PAGE
#define K0		0x901ca7ULL	/* first key word of every block here */
#define OPS		2000
#define LOOKUP_MAX	4		/* keys of one lookup line */
#define CONTEXT		8		/* lines shown before a divergence */

enum {
	OP_PUT, OP_REPLACE, OP_GET, OP_LOOKUP, OP_PEEK, OP_DROP, OP_PIN,
	OP_UNPIN, OP_NR
};

static const char * const op_names[OP_NR] = {
	[OP_PUT] = "put", [OP_REPLACE] = "replace", [OP_GET] = "get",
	[OP_LOOKUP] = "lookup", [OP_PEEK] = "peek", [OP_DROP] = "drop",
	[OP_PIN] = "pin", [OP_UNPIN] = "unpin",
};

/* One line of the simulator: "N OP KEYS RESULT EVICTED". */
struct sim_op {
	int op;
	int res;		/* 0/-errno; lookup and peek: resident prefix */
	unsigned int nkeys, nvictims;
	__u32 keys[LOOKUP_MAX];
	__u32 victims[2];
	char line[96];
};

struct sim_run {
	struct sim_op *ops;
	unsigned int nops;
	__u32 max_key;
	unsigned long long evictions;	/* from the "# end:" line */
	unsigned int resident, present;
	char policy[16];
};

FIXTURE(policy) {
	int ctl, pfd;
	char name[KVTIER_NAME_MAX];
	void *buf;
	struct kvtier_block *probe;	/* dram_blocks + 1 entries */
	struct sim_run sim;
	/* What the simulator says the pool holds. */
	__u32 *resident;		/* keys in DRAM, dense */
	__u32 *pos;			/* key -> index in resident[], or -1 */
	__u16 *pins;			/* key -> pins */
	__u8 *present;			/* key -> found in any tier */
	unsigned int nresident, npinned, npresent;
	char why[1024];
	char loaded[32];		/* the parameter to put back, if set */
	char clean[8];			/* policy_clean_first to put back */
	bool attached;			/* the device, by this test */
};

/*
 * @policy: set the parameter to it for the pool (NULL: as loaded).
 * @nvme: with an NVMe tier, a SYNC after each command.
 * @clean_first: set policy_clean_first to it for the pool (NULL: Y).
 */
FIXTURE_VARIANT(policy) {
	__u32 dram_blocks;
	__u64 seed;
	const char *policy;
	bool nvme;
	const char *clean_first;
};

FIXTURE_VARIANT_ADD(policy, dram16) {
	.dram_blocks = 16,
	.seed = 1,
};

FIXTURE_VARIANT_ADD(policy, dram16_seed2) {
	.dram_blocks = 16,
	.seed = 2,
};

FIXTURE_VARIANT_ADD(policy, dram64) {
	.dram_blocks = 64,
	.seed = 3,
};

/* Two blocks, one of them pinned at times: a REPLACE evicts its own key. */
FIXTURE_VARIANT_ADD(policy, dram2) {
	.dram_blocks = 2,
	.seed = 4,
};

/* One block: while it is pinned, PUT finds nothing to evict (-ENOSPC). */
FIXTURE_VARIANT_ADD(policy, dram1) {
	.dram_blocks = 1,
	.seed = 5,
};

/* Both policies whatever the module was loaded with. */
FIXTURE_VARIANT_ADD(policy, dram16_lru) {
	.dram_blocks = 16,
	.seed = 6,
	.policy = "lru",
};

FIXTURE_VARIANT_ADD(policy, dram16_seg) {
	.dram_blocks = 16,
	.seed = 7,
	.policy = "seg",
};

FIXTURE_VARIANT_ADD(policy, dram2_lru) {
	.dram_blocks = 2,
	.seed = 8,
	.policy = "lru",
};

/* With NVMe: victims keep their copy, GET and PIN load blocks back. */
FIXTURE_VARIANT_ADD(policy, nvme_dram16) {
	.dram_blocks = 16,
	.seed = 11,
	.policy = "seg",
	.nvme = true,
};

FIXTURE_VARIANT_ADD(policy, nvme_dram64) {
	.dram_blocks = 64,
	.seed = 12,
	.policy = "seg",
	.nvme = true,
};

FIXTURE_VARIANT_ADD(policy, nvme_dram2) {
	.dram_blocks = 2,
	.seed = 13,
	.policy = "seg",
	.nvme = true,
};

FIXTURE_VARIANT_ADD(policy, nvme_dram1) {
	.dram_blocks = 1,
	.seed = 14,
	.policy = "seg",
	.nvme = true,
};

FIXTURE_VARIANT_ADD(policy, nvme_dram16_lru) {
	.dram_blocks = 16,
	.seed = 15,
	.policy = "lru",
	.nvme = true,
};

/* No clean list: seg's ghost lists learn from the blocks loaded back. */
FIXTURE_VARIANT_ADD(policy, nvme_dram16_seg_noclean) {
	.dram_blocks = 16,
	.seed = 16,
	.policy = "seg",
	.nvme = true,
	.clean_first = "N",
};

FIXTURE_SETUP(policy)
{
	kst_setup(_metadata);

	self->pfd = -1;
	self->ctl = kst_ctl_open();
	ASSERT_LE(0, self->ctl);
	self->buf = kst_alloc(BS);
	ASSERT_NE(NULL, self->buf);
	self->probe = calloc(variant->dram_blocks + 2, sizeof(*self->probe));
	ASSERT_NE(NULL, self->probe);
}

FIXTURE_TEARDOWN(policy)
{
	if (self->pfd >= 0) {
		close(self->pfd);
		kst_pool_destroy(self->ctl, self->name);
	}
	if (self->attached)
		nvt_detach(self->ctl);
	if (self->loaded[0])
		kst_write_str(KST_PARAM_DIR "/policy", self->loaded);
	if (self->clean[0])
		kst_write_str(KST_PARAM_DIR "/policy_clean_first",
			      self->clean);
	kst_free(self->buf, BS);
	free(self->probe);
	free(self->sim.ops);
	free(self->resident);
	free(self->pos);
	free(self->pins);
	free(self->present);
	close(self->ctl);
}

/* The module's policy parameter ("lru", "seg") into @buf; 0 or -errno. */
static int loaded_policy(char *buf, size_t len)
{
	int ret = kst_read_file(KST_PARAM_DIR "/policy", buf, len);

	if (ret < 0)
		return ret;
	buf[strcspn(buf, "\n")] = '\0';
	return buf[0] ? 0 : -EINVAL;
}

/* NVMe devices attached, or -errno. */
static int nvme_attached(int ctl)
{
	struct kvtier_nvme_stat st;
	int ret;

	memset(&st, 0, sizeof(st));
	ret = kst_ioctl(ctl, KVTIER_IOC_NVME_STAT, &st);
	return ret ? ret : (int)st.attached;
}

/* tools/policy-sim of the tree this binary was built in; 0 or -errno. */
static int sim_path(char *path, size_t len)
{
	const char *env = getenv("KVTIER_POLICY_SIM");
	char exe[PATH_MAX], *slash;
	ssize_t n;

	if (env && *env) {
		snprintf(path, len, "%s", env);
		return access(path, X_OK) ? -errno : 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return -errno;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	if (snprintf(path, len, "%s/../../tools/policy-sim", exe) >= (int)len)
		return -ENAMETOOLONG;
	return access(path, X_OK) ? -errno : 0;
}

/* "1,2,3" or "-" into @keys; the count, or -1. */
static int parse_keys(const char *s, __u32 *keys, unsigned int max)
{
	unsigned int n = 0;
	char *end;

	if (!strcmp(s, "-"))
		return 0;
	for (;;) {
		unsigned long v;

		if (n == max)
			return -1;
		errno = 0;
		v = strtoul(s, &end, 10);
		if (errno || end == s || !v || v > UINT32_MAX)
			return -1;
		keys[n++] = v;
		if (!*end)
			return n;
		if (*end != ',')
			return -1;
		s = end + 1;
	}
}

static int parse_line(const char *line, unsigned int want_n, struct sim_op *o)
{
	char op[16], keys[64], victims[64];
	unsigned int n;
	int k, v;

	if (sscanf(line, "%u %15s %63s %d %63s", &n, op, keys, &o->res,
		   victims) != 5 || n != want_n)
		return -1;
	for (o->op = 0; o->op < OP_NR && strcmp(op, op_names[o->op]); o->op++)
		;
	k = parse_keys(keys, o->keys, LOOKUP_MAX);
	v = parse_keys(victims, o->victims, 2);
	if (o->op == OP_NR || k < 1 || v < 0 ||
	    (k > 1 && o->op != OP_LOOKUP && o->op != OP_PEEK))
		return -1;
	o->nkeys = k;
	o->nvictims = v;
	snprintf(o->line, sizeof(o->line), "%.*s", (int)strcspn(line, "\n"),
		 line);
	return 0;
}

/*
 * Run the simulator and read its commands into @sim; 0, or -1 with the
 * reason in @why.
 */
static int sim_read(struct sim_run *sim, const char *policy, __u32 dram,
		    __u64 seed, bool nvme, const char *clean_first,
		    char *why, size_t whylen)
{
	char path[PATH_MAX], cmd[PATH_MAX + 256], line[256];
	unsigned int comments = 0;
	bool ended = false;
	FILE *f;
	int ret, status;

	memset(sim, 0, sizeof(*sim));
	ret = sim_path(path, sizeof(path));
	if (ret) {
		snprintf(why, whylen, "%.256s: %s (make -C tools policy-sim)",
			 path, strerror(-ret));
		return -1;
	}
	sim->ops = calloc(OPS, sizeof(*sim->ops));
	if (!sim->ops) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	if (snprintf(cmd, sizeof(cmd),
		     "'%s' --decisions --dram-blocks %u --ops %u --seed %llu --policy '%s'%s%s",
		     path, dram, OPS, (unsigned long long)seed, policy,
		     nvme ? " --nvme --clean-first " : "",
		     nvme ? clean_first : "") >=
	    (int)sizeof(cmd)) {
		snprintf(why, whylen, "path too long: %.256s", path);
		return -1;
	}
	f = popen(cmd, "r");
	if (!f) {
		snprintf(why, whylen, "popen %.512s: %s", cmd, strerror(errno));
		return -1;
	}
	ret = 0;
	while (!ret && fgets(line, sizeof(line), f)) {
		struct sim_op *o = &sim->ops[sim->nops];
		unsigned int i;

		if (line[0] == '#') {
			/* The header names the policy; the end, the totals. */
			if (!comments++ && (!strstr(line, " policy=") ||
					    !strstr(line, nvme ? " nvme=1" :
								 " nvme=0")))
				ret = -1;
			if (sscanf(line, "# end: evictions=%llu resident=%u pinned=%*u present=%u",
				   &sim->evictions, &sim->resident,
				   &sim->present) == 3)
				ended = true;
			if (!ret && comments == 1)
				sscanf(strstr(line, " policy=") + 8, "%15s",
				       sim->policy);
			continue;
		}
		if (ended || sim->nops == OPS ||
		    parse_line(line, sim->nops + 1, o)) {
			ret = -1;
			break;
		}
		for (i = 0; i < o->nkeys; i++)
			if (o->keys[i] > sim->max_key)
				sim->max_key = o->keys[i];
		sim->nops++;
	}
	status = pclose(f);
	if (ret) {
		snprintf(why, whylen, "%.512s: cannot parse: %.200s", cmd, line);
		return -1;
	}
	if (status || !ended || sim->nops != OPS ||
	    strcmp(sim->policy, policy)) {
		snprintf(why, whylen,
			 "%.512s: exit status %d, %u commands, %s, policy '%s'",
			 cmd, status, sim->nops, ended ? "ended" : "no end line",
			 sim->policy);
		return -1;
	}
	return 0;
}

static void res_add(FIXTURE_DATA(policy) *self, __u32 k)
{
	if (self->pos[k] != UINT32_MAX)
		return;
	self->pos[k] = self->nresident;
	self->resident[self->nresident++] = k;
}

static void res_del(FIXTURE_DATA(policy) *self, __u32 k)
{
	__u32 i = self->pos[k], last;

	if (i == UINT32_MAX)
		return;
	last = self->resident[--self->nresident];
	self->resident[i] = last;
	self->pos[last] = i;
	self->pos[k] = UINT32_MAX;
}

static void keys_str(char *buf, size_t len, const __u32 *keys,
		     unsigned int n)
{
	size_t off = 0;
	unsigned int i;

	if (!n)
		snprintf(buf, len, "none");
	for (i = 0; i < n && off < len; i++)
		off += snprintf(buf + off, len - off, "%s%u", i ? "," : "",
				keys[i]);
}

/* Sort two keys at most. */
static void sort2(__u32 *k, unsigned int n)
{
	if (n == 2 && k[0] > k[1]) {
		__u32 t = k[0];

		k[0] = k[1];
		k[1] = t;
	}
}

/*
 * Run command @i of the simulator's list on the pool (@nvme: it has an
 * NVMe tier). Returns 0, or -1 with what differed in self->why; @evicted
 * gets the keys the module evicted from DRAM.
 */
static int replay_one(FIXTURE_DATA(policy) *self, unsigned int i, bool nvme,
		      __u64 *evictions, __u32 *evicted, unsigned int *nevicted)
{
	const struct sim_op *o = &self->sim.ops[i];
	struct kvtier_block b[LOOKUP_MAX];
	struct kvtier_pool_stat st;
	unsigned int n, nprobe = 0, missing = 0;
	bool was_resident = self->pos[o->keys[0]] != UINT32_MAX;
	__u32 done, k = o->keys[0];
	bool roomy;
	int res, ret;

	*nevicted = 0;
	switch (o->op) {
	case OP_PUT:
	case OP_REPLACE:
		kst_fill(self->buf, BS, K0, k, i + 1);
		res = kst_one(self->pfd, KVTIER_IOC_PUT, K0, k, self->buf,
			      o->op == OP_REPLACE ? KVTIER_PUT_REPLACE : 0,
			      NULL);
		break;
	case OP_GET:
		res = kst_get1(self->pfd, K0, k, self->buf, NULL);
		if (!res && kst_check(self->buf, BS, K0, k, NULL) >= 0) {
			snprintf(self->why, sizeof(self->why),
				 "GET of key %u returned wrong bytes", k);
			return -1;
		}
		break;
	case OP_LOOKUP:
	case OP_PEEK:
		for (n = 0; n < o->nkeys; n++)
			kst_blk(&b[n], K0, o->keys[n], NULL);
		ret = kst_batch(self->pfd, KVTIER_IOC_LOOKUP, b, o->nkeys,
				o->op == OP_LOOKUP ? KVTIER_LOOKUP_TOUCH : 0,
				&done);
		res = ret ? ret : (int)done;
		for (n = 0; !ret && n < o->nkeys; n++) {
			int want = self->present[o->keys[n]] ? 0 : -ENOENT;
			__u32 tier = self->pos[o->keys[n]] != UINT32_MAX ?
				     KVTIER_TIER_DRAM : KVTIER_TIER_NVME;

			if (b[n].status != want ||
			    (!want && b[n].tier != tier)) {
				snprintf(self->why, sizeof(self->why),
					 "LOOKUP entry %u (key %u): status %d tier %u, simulator's pool says %d tier %u",
					 n, o->keys[n], b[n].status,
					 b[n].tier, want, tier);
				return -1;
			}
		}
		break;
	case OP_DROP:
		res = kst_drop1(self->pfd, K0, k);
		break;
	case OP_PIN:
		res = kst_pin1(self->pfd, K0, k);
		break;
	default:
		res = kst_unpin1(self->pfd, K0, k);
		break;
	}
	if (res != o->res) {
		snprintf(self->why, sizeof(self->why),
			 "result %d (%s), simulator %d", res,
			 res < 0 ? strerror(-res) : "ok", o->res);
		return -1;
	}

	ret = kst_stat(self->pfd, &st);
	if (ret) {
		snprintf(self->why, sizeof(self->why), "STAT: %s",
			 strerror(-ret));
		return -1;
	}
	/*
	 * The keys that left DRAM: LOOKUP without TOUCH of every key there
	 * before (the model is not updated yet) and of the key a PUT made or
	 * a GET or PIN loaded, and the eviction counter. Without NVMe a key
	 * that left is gone; with it, it is found on NVMe.
	 */
	roomy = o->op == OP_PUT || o->op == OP_REPLACE ||
		(nvme && (o->op == OP_GET || o->op == OP_PIN));
	if (roomy) {
		for (n = 0; n < self->nresident; n++)
			kst_blk(&self->probe[nprobe++], K0,
				self->resident[n], NULL);
		if (!res && !was_resident)
			kst_blk(&self->probe[nprobe++], K0, k, NULL);
	}
	if (nprobe) {
		ret = kst_batch(self->pfd, KVTIER_IOC_LOOKUP, self->probe,
				nprobe, 0, NULL);
		if (ret) {
			snprintf(self->why, sizeof(self->why),
				 "LOOKUP of %u keys: %s", nprobe,
				 strerror(-ret));
			return -1;
		}
		for (n = 0; n < nprobe; n++) {
			const struct kvtier_block *e = &self->probe[n];

			if (!e->status && e->tier == KVTIER_TIER_DRAM)
				continue;
			if (nvme ? e->status || e->tier != KVTIER_TIER_NVME :
				   e->status != -ENOENT) {
				snprintf(self->why, sizeof(self->why),
					 "LOOKUP of key %llu: status %d tier %u",
					 (unsigned long long)e->key[1],
					 e->status, e->tier);
				return -1;
			}
			if (*nevicted < 2)
				evicted[*nevicted] = self->probe[n].key[1];
			++*nevicted;
			missing++;
		}
		/* A REPLACE whose room was made by evicting its own key. */
		if (o->op == OP_REPLACE && !res && was_resident &&
		    st.evictions - *evictions == missing + 1 && *nevicted < 2)
			evicted[(*nevicted)++] = k;
	}
	if (st.evictions - *evictions != *nevicted) {
		snprintf(self->why, sizeof(self->why),
			 "%llu evictions counted, %u keys gone",
			 (unsigned long long)(st.evictions - *evictions),
			 *nevicted);
		return -1;
	}
	*evictions = st.evictions;
	if (*nevicted > 2)
		*nevicted = 2;
	return 0;
}

static void present_set(FIXTURE_DATA(policy) *self, __u32 k, bool on)
{
	if (self->present[k] != on)
		self->npresent += on ? 1 : -1;
	self->present[k] = on;
}

/*
 * Apply command @i's outcome, as the simulator gives it, to the model:
 * without NVMe (@nvme false) a victim is gone, with it on NVMe.
 */
static void model_apply(FIXTURE_DATA(policy) *self, unsigned int i,
			bool nvme)
{
	const struct sim_op *o = &self->sim.ops[i];
	__u32 k = o->keys[0];
	unsigned int n;

	for (n = 0; n < o->nvictims; n++) {
		res_del(self, o->victims[n]);
		if (!nvme)
			present_set(self, o->victims[n], false);
	}
	if (o->res)
		return;
	switch (o->op) {
	case OP_PUT:
	case OP_REPLACE:
	case OP_GET:
		/* Made, or (with NVMe) loaded. */
		res_add(self, k);
		present_set(self, k, true);
		break;
	case OP_DROP:
		res_del(self, k);
		present_set(self, k, false);
		break;
	case OP_PIN:
		res_add(self, k);
		if (!self->pins[k]++)
			self->npinned++;
		break;
	case OP_UNPIN:
		if (!--self->pins[k])
			self->npinned--;
		break;
	}
}

static void log_divergence(FIXTURE_DATA(policy) *self, unsigned int i,
			   const char *policy, __u32 dram, __u64 seed)
{
	unsigned int j = i > CONTEXT ? i - CONTEXT : 0;

	fprintf(stderr, "# policy=%s dram_blocks=%u seed=%llu: first divergence at command %u of %u: %s\n",
		policy, dram, (unsigned long long)seed, i + 1, self->sim.nops,
		self->why);
	fprintf(stderr, "# (N OP KEYS RESULT EVICTED, as the simulator ran them)\n");
	for (; j <= i; j++)
		fprintf(stderr, "#  %s %s\n", j == i ? "->" : "  ",
			self->sim.ops[j].line);
}

/*
 * The NVMe variants' device: attached by the test, formatted, unless
 * missing or one is attached already (SKIP). 0, or 1 to skip with the
 * reason in self->why.
 */
static int attach_nvme(FIXTURE_DATA(policy) *self)
{
	int ret = nvme_attached(self->ctl);

	if (ret) {
		snprintf(self->why, sizeof(self->why),
			 ret < 0 ? "NVMe stat: %d" :
				   "%d NVMe device(s) attached already", ret);
		return 1;
	}
	if (access(nvt_dev(), R_OK | W_OK)) {
		snprintf(self->why, sizeof(self->why), "no %s: %s", nvt_dev(),
			 strerror(errno));
		return 1;
	}
	ret = nvt_attach(self->ctl, nvt_dev(), KVTIER_NVME_FORMAT, 0);
	if (ret) {
		snprintf(self->why, sizeof(self->why), "attach %s: %s",
			 nvt_dev(), strerror(-ret));
		return -1;
	}
	self->attached = true;
	return 0;
}

/*
 * The simulator's commands on a pool of dram_blocks DRAM blocks, without
 * NVMe or with it and a SYNC after each command: the same results,
 * evictions and counts, command by command.
 */
TEST_F(policy, same_decisions)
{
	const char *clean_first = variant->clean_first ?: "Y";
	char policy[32];
	__u64 evictions = 0;
	unsigned int i;
	int ret;

	ret = loaded_policy(policy, sizeof(policy));
	ASSERT_EQ(0, ret) TH_LOG("reading " KST_PARAM_DIR "/policy");
	if (variant->policy) {
		/* A pool takes the parameter at its first PUT. */
		snprintf(self->loaded, sizeof(self->loaded), "%s", policy);
		ASSERT_EQ(0, kst_write_str(KST_PARAM_DIR "/policy",
					   variant->policy));
		ret = loaded_policy(policy, sizeof(policy));
		ASSERT_EQ(0, ret);
		ASSERT_STREQ(variant->policy, policy);
	}
	if (variant->nvme) {
		ASSERT_LT(0, kst_read_file(KST_PARAM_DIR "/policy_clean_first",
					   self->clean, sizeof(self->clean)));
		self->clean[strcspn(self->clean, "\n")] = '\0';
		ASSERT_EQ(0, kst_write_str(KST_PARAM_DIR "/policy_clean_first",
					   clean_first));
		ret = attach_nvme(self);
		ASSERT_LE(0, ret) TH_LOG("%s", self->why);
		if (ret)
			SKIP(return, "%s", self->why);
	} else {
		ret = nvme_attached(self->ctl);
		ASSERT_LE(0, ret);
		if (ret)
			SKIP(return, "%d NVMe device(s) attached: victims would be demoted, not dropped",
			     ret);
	}

	ret = sim_read(&self->sim, policy, variant->dram_blocks, variant->seed,
		       variant->nvme, clean_first, self->why,
		       sizeof(self->why));
	ASSERT_EQ(0, ret) TH_LOG("%s", self->why);
	self->resident = calloc(self->sim.max_key + 1, sizeof(__u32));
	self->pos = malloc((self->sim.max_key + 1) * sizeof(__u32));
	self->pins = calloc(self->sim.max_key + 1, sizeof(__u16));
	self->present = calloc(self->sim.max_key + 1, 1);
	ASSERT_NE(NULL, self->resident);
	ASSERT_NE(NULL, self->pos);
	ASSERT_NE(NULL, self->pins);
	ASSERT_NE(NULL, self->present);
	memset(self->pos, 0xff, (self->sim.max_key + 1) * sizeof(__u32));

	/* With NVMe a block stays found: an address for each key. */
	kst_name(self->name, "policy");
	self->pfd = kst_pool_create(self->ctl, self->name, BS,
				    variant->nvme ? self->sim.max_key + 1 :
						    4 * variant->dram_blocks,
				    variant->dram_blocks);
	ASSERT_LE(0, self->pfd);

	for (i = 0; i < self->sim.nops; i++) {
		const struct sim_op *o = &self->sim.ops[i];
		__u32 evicted[2], want[2];
		unsigned int nevicted;
		char a[32], b[32];
		long long resident, pinned;
		struct kvtier_pool_stat st;
		__u64 written;
		bool made;

		ret = replay_one(self, i, variant->nvme, &evictions, evicted,
				 &nevicted);
		if (!ret) {
			memcpy(want, o->victims, sizeof(want));
			sort2(want, o->nvictims);
			sort2(evicted, nevicted);
			if (nevicted != o->nvictims ||
			    memcmp(evicted, want, nevicted * sizeof(__u32))) {
				keys_str(a, sizeof(a), o->victims, o->nvictims);
				keys_str(b, sizeof(b), evicted, nevicted);
				snprintf(self->why, sizeof(self->why),
					 "simulator evicted %s, module %s", a, b);
				ret = -1;
			}
		}
		/* Only the block a PUT made is without a copy. */
		made = !o->res && (o->op == OP_PUT || o->op == OP_REPLACE);
		if (!ret && variant->nvme) {
			ret = nvt_sync(self->pfd, &written);
			if (ret || written != made) {
				snprintf(self->why, sizeof(self->why),
					 "SYNC: %d, %llu blocks written, not %d",
					 ret, (unsigned long long)written, made);
				ret = -1;
			}
		}
		if (!ret) {
			model_apply(self, i, variant->nvme);
			ret = kst_stat(self->pfd, &st);
			if (!ret && variant->nvme &&
			    st.resident[KVTIER_TIER_NVME] != self->npresent) {
				snprintf(self->why, sizeof(self->why),
					 "%llu blocks on NVMe, simulator %u",
					 (unsigned long long)st.resident[KVTIER_TIER_NVME],
					 self->npresent);
				ret = -1;
			}
		}
		if (!ret) {
			resident = kst_resident(self->pfd);
			pinned = kst_pinned(self->pfd);
			if (resident != self->nresident ||
			    pinned != self->npinned) {
				snprintf(self->why, sizeof(self->why),
					 "module holds %lld blocks, %lld pinned; simulator %u, %u",
					 resident, pinned, self->nresident,
					 self->npinned);
				ret = -1;
			}
		}
		if (ret) {
			log_divergence(self, i, policy, variant->dram_blocks,
				       variant->seed);
			ASSERT_EQ(0, ret);
		}
	}
	EXPECT_EQ(self->sim.evictions, evictions);
	EXPECT_EQ(self->sim.resident, self->nresident);
	EXPECT_EQ(self->sim.present, self->npresent);
	TH_LOG("policy=%s dram_blocks=%u seed=%llu%s%s: %u commands, %llu evictions agree",
	       policy, variant->dram_blocks, (unsigned long long)variant->seed,
	       variant->nvme ? " nvme clean_first=" : "",
	       variant->nvme ? clean_first : "", self->sim.nops,
	       (unsigned long long)evictions);
}

/* The module parameters, writable: no pool, no variants. */
FIXTURE(param) {
	int unused;
};

FIXTURE_SETUP(param)
{
	kst_setup(_metadata);
}

FIXTURE_TEARDOWN(param)
{
}

/*
 * The parameter is writable: a name it does not know is refused with
 * EINVAL and changes nothing; a known one is taken.
 */
TEST_F(param, policy_write)
{
	char before[32], now[32];

	ASSERT_EQ(0, loaded_policy(before, sizeof(before)));
	EXPECT_EQ(-EINVAL, kst_write_str(KST_PARAM_DIR "/policy", "bogus"));
	EXPECT_EQ(-EINVAL, kst_write_str(KST_PARAM_DIR "/policy", "\n"));
	ASSERT_EQ(0, loaded_policy(now, sizeof(now)));
	EXPECT_STREQ(before, now);
	ASSERT_EQ(0, kst_write_str(KST_PARAM_DIR "/policy",
				   strcmp(before, "lru") ? "lru" : "seg"));
	ASSERT_EQ(0, loaded_policy(now, sizeof(now)));
	EXPECT_STRNE(before, now);
	ASSERT_EQ(0, kst_write_str(KST_PARAM_DIR "/policy", before));
	ASSERT_EQ(0, loaded_policy(now, sizeof(now)));
	EXPECT_STREQ(before, now);
}

/* reads_first is a bool: anything else is refused with EINVAL. */
TEST_F(param, reads_first_write)
{
	char before[8];

	ASSERT_LT(0, kst_read_file(KST_PARAM_DIR "/reads_first", before,
				   sizeof(before)));
	EXPECT_EQ(-EINVAL, kst_write_str(KST_PARAM_DIR "/reads_first",
					 "maybe"));
	ASSERT_EQ(0, kst_write_str(KST_PARAM_DIR "/reads_first", "N"));
	ASSERT_EQ(0, kst_write_str(KST_PARAM_DIR "/reads_first", before));
}

TEST_HARNESS_MAIN
