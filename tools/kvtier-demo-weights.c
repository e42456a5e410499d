// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier-demo weights: a model's weights streamed from a file through a
 * weight pool (KVTIER_F_WEIGHTS), with layer and expert hints.
 *
 * The demo writes a safetensors file of a transformer's shape (N decoder
 * layers, each attention and a dense MLP, or with --moe E experts and a
 * router, plus the embeddings, the final norm and the head), every byte a
 * function of its tensor and position, so whatever is read can be checked
 * exactly. It opens the file as a weight pool whose DRAM share is smaller
 * than the model (half of it by default), and runs a modeled forward pass:
 * token after token, stage after stage (the layers, then the head), each
 * stage's weights must be in DRAM before it computes for --compute-us.
 *
 * Before a stage computes, the runtime has the blocks it uses brought in
 * (a PREFETCH group due at once, waited for): that wait is the stall.
 * It then reads each tensor it uses (kvtier_weights_read()) and checks its
 * bytes; the copy is the stand-in for the runtime's own copy to its
 * device and is timed apart from the stall. A MoE layer uses its
 * attention, norms and router, and the top-k experts its router picks:
 * skewed (Zipf over a per-layer order of the experts), seeded, the same
 * in every mode.
 *
 * Modes, each on a fresh pool over the same file and the same tokens:
 *   none	no hints: every miss is a stall.
 *   layer	while a stage computes, hint the --lookahead stages after it
 *		(kvtier_weights_prefetch(), due when they start): a dense
 *		layer whole; a MoE layer without its experts (which ones it
 *		will use is not known).
 *   expert	(MoE) layer hints, and the top-k experts a predictor names
 *		for those stages: the router's choice with probability
 *		--accuracy, else the most popular experts of the layer.
 *   prob	(MoE) layer hints, and the predictor's top-k and as many
 *		runners-up, with their probabilities, as one group of
 *		probable hints (kvtier_weights_prefetch_experts()): the
 *		kernel reads the likeliest first and leaves the unlikely
 *		unread when the deadline leaves no room. A runner-up is, half
 *		the time, a choice of the router's the top-k missed, else a
 *		popular expert; each name carries the probability it is
 *		right, computed from that model: --accuracy for the top-k,
 *		(1 - accuracy) / 2 for a runner-up.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <kvtier.h>

#include "kvtier-demo.h"
#include "util.h"

#define EXIT_USAGE	2
#define EXIT_SKIP	77	/* the module has no weight pools */
#define ENSURE_GROUP	(1ULL << 62)	/* group ids of the waits, apart */
#define ENSURE_CHUNKS	16		/* most groups a stage waits for */
#define WAIT_MS		60000
#define NAME_LEN	96

enum { MODE_NONE, MODE_LAYER, MODE_EXPERT, MODE_PROB, NR_MODES };
static const char *const mode_names[NR_MODES] = {
	"none", "layer", "expert", "prob"
};

/**
 * struct wopts - the options of `kvtier-demo weights`
 * @file:	the model file to write and open.
 * @keep:	leave @file behind.
 * @pool:	the pool's name.
 * @layers:	decoder layers.
 * @hidden:	the model dimension.
 * @ffn:	the MLP's (or each expert's) inner dimension; 0: default.
 * @vocab:	rows of the embeddings and of the head.
 * @experts:	experts a layer, 0: dense.
 * @top_k:	experts the router picks a token and layer.
 * @zipf:	the skew of the experts' popularity.
 * @block_size: bytes a block; 0: default.
 * @dram_blocks: the pool's DRAM share; 0: half the model.
 * @tokens:	tokens of the forward pass; 0: default.
 * @compute_ns: modeled compute of a stage.
 * @lookahead:	stages hinted ahead.
 * @accuracy:	how often the expert predictor is right.
 * @seed:	the generator's seed.
 * @modes:	bit mask of the modes to run; 0: all that apply.
 */
struct wopts {
	const char *file;
	int keep;
	char pool[KVTIER_NAME_MAX];
	uint32_t layers;
	uint32_t hidden;
	uint32_t ffn;
	uint32_t vocab;
	uint32_t experts;
	uint32_t top_k;
	double zipf;
	uint64_t block_size;
	uint64_t dram_blocks;
	uint32_t tokens;
	uint64_t compute_ns;
	uint32_t lookahead;
	double accuracy;
	uint64_t seed;
	unsigned int modes;
};

/* One tensor of the generated file, in file order. */
struct wtensor {
	char name[NAME_LEN];
	uint32_t ndim;
	uint64_t shape[2];
	uint64_t bytes;
	uint64_t off;		/* in the data section */
	int32_t layer;
	int32_t expert;
	struct kvtier_key key;	/* its bytes: fill_block() of this key */
};

/* The tensors a stage uses: one layer's non-expert part, or one expert. */
struct unit {
	uint32_t *idx;
	uint32_t n;
};

/**
 * struct wrun_stats - what one mode's forward pass did
 * @stall_ns:	waits for weights not in DRAM.
 * @compute_ns:	modeled compute.
 * @copy_ns:	reads of the tensors and their checks.
 * @elapsed_ns:	the whole pass.
 * @used_bytes:	bytes of the tensors the stages used.
 * @loaded_bytes: blocks loaded from the file (the pool's promotions).
 * @dev_bytes:	bytes the file's block device read, -1 when unknown.
 * @blocks:	blocks the stages needed.
 * @hit_blocks:	of those, in DRAM when the stage began.
 * @expert_blocks: blocks of experts the stages needed.
 * @expert_hits: of those, in DRAM when the stage began.
 * @hint_groups: hint groups sent.
 * @hint_late:	of those, ended late or short.
 * @hint_refused: hints the pool refused (-EAGAIN, -ENOSPC, -E2BIG).
 * @waits:	stages that waited for blocks.
 * @short_waits: waits whose group ended short (the reads then stalled).
 * @predictions: experts the predictor named.
 * @predicted:	of those, the router's choice.
 * @verify_errors: tensors whose bytes did not check.
 */
struct wrun_stats {
	uint64_t stall_ns;
	uint64_t compute_ns;
	uint64_t copy_ns;
	uint64_t elapsed_ns;
	uint64_t used_bytes;
	uint64_t loaded_bytes;
	int64_t dev_bytes;
	uint64_t blocks;
	uint64_t hit_blocks;
	uint64_t expert_blocks;
	uint64_t expert_hits;
	uint64_t hint_groups;
	uint64_t hint_late;
	uint64_t hint_refused;
	uint64_t waits;
	uint64_t short_waits;
	uint64_t predictions;
	uint64_t predicted;
	uint64_t verify_errors;
};

/**
 * struct wmodel - the generated model and a pass over it
 * @o:		the options.
 * @t:		its tensors, file order.
 * @nt:		number of @t.
 * @kt:		the pool's view of them (kvtier_weights_tensor()).
 * @data_off:	file offset of the data section.
 * @file_bytes:	the file's size.
 * @units:	(layers + 1) x (experts + 1): unit (L, e) at
 *		unit_of(L, e); layer -1 (embeddings, norm, head) last.
 * @perm:	layers x experts: each layer's experts, most popular first.
 * @zipf_cdf:	experts: the popularity of rank r, cumulated.
 * @w:		the weight pool.
 * @pool:	its pool.
 * @has_census:	the context has KVTIER_F_EVENTS (hit shares).
 * @addrs:	scratch of @cap block addresses.
 * @census:	scratch of @cap census entries.
 * @hints:	scratch of @cap hints.
 * @cap:	room in the scratch arrays: the model's blocks.
 * @batch_max:	most hints in one group.
 * @buf:	a buffer for the largest tensor.
 * @seed_key:	the chain the tensors' keys go on from.
 * @next_group:	the next hint group's id.
 * @st:		the current pass's figures.
 */
struct wmodel {
	const struct wopts *o;
	struct wtensor *t;
	uint32_t nt;
	struct kvtier_tensor *kt;
	uint64_t data_off;
	uint64_t file_bytes;
	struct unit *units;
	uint32_t *perm;
	double *zipf_cdf;
	struct kvtier_weights *w;
	struct kvtier_pool *pool;
	int has_census;
	uint64_t *addrs;
	struct kvtier_census_entry *census;
	struct kvtier_hint *hints;
	uint32_t cap;
	uint32_t batch_max;
	void *buf;
	struct kvtier_key seed_key;
	uint64_t next_group;
	struct wrun_stats st;
};

static const char *prog = "kvtier-demo weights";
static volatile sig_atomic_t wstop;

static void on_stop(int sig)
{
	(void)sig;
	wstop = 1;
}

static void wusage(FILE *f)
{
	fprintf(f,
		"usage: kvtier-demo weights [options]\n"
		"\n"
		"Writes a safetensors model (every byte checkable), opens it as a weight\n"
		"pool with a DRAM share smaller than the model, and runs a modeled\n"
		"forward pass over it without hints, with layer hints and (--moe) with\n"
		"layer and predicted-expert hints, printing the stall, the bytes read\n"
		"from the file against the bytes used, and the share of the blocks\n"
		"(and expert blocks) in DRAM when their layer ran. Exit status: 0; 1\n"
		"failure (a byte that does not check included); 2 bad usage; 77 the\n"
		"module has no weight pools (KVTIER_F_WEIGHTS).\n"
		"\n"
		"options (defaults in brackets; dense / --moe where they differ):\n"
		"  --file PATH         the model file, on a file system with O_DIRECT\n"
		"                      [$TMPDIR or /tmp/kvtier-weights-PID.safetensors]\n"
		"  --keep              leave the file behind [removed at the end]\n"
		"  --pool NAME         pool name [kvtier-weights-PID]\n"
		"  --layers N          decoder layers [32]\n"
		"  --hidden H          model dimension, a multiple of 16 [256]\n"
		"  --ffn F             MLP inner dimension, each expert's with --moe,\n"
		"                      a multiple of 4 [768 / 32]\n"
		"  --vocab V           rows of the embeddings and of the head [8192]\n"
		"  --moe               experts instead of a dense MLP\n"
		"  --experts E         experts a layer (implies --moe) [64]\n"
		"  --top-k K           experts the router picks [2]\n"
		"  --zipf S            skew of the experts' popularity, rank r taken\n"
		"                      with weight 1/(r+1)^S [1.0]\n"
		"  --block-size B      bytes a block, a multiple of 4096 [64K / 16K]\n"
		"  --dram-blocks N     the pool's DRAM share [half the model's blocks]\n"
		"  --tokens T          tokens of the forward pass [4 / 32]\n"
		"  --compute-us U      modeled compute of a layer [5000 / 2000]\n"
		"  --lookahead D       stages hinted ahead of the one computing [2]\n"
		"  --accuracy A        how often the expert predictor names the\n"
		"                      router's choice, 0..1 [0.8]\n"
		"  --modes LIST        of none,layer,expert,prob [all that apply]\n"
		"  --seed S            generator seed [1]\n");
}

/* ---- the seeded generator ---------------------------------------------- */

/* A uniform draw in [0, 1) that is a function of its arguments. */
static double draw(uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
	const uint64_t ids[4] = { seed, a, b, c };
	struct kvtier_key k[4];

	kvtier_key_chain_n(NULL, ids, 4, k);	/* a good mix, at hand */
	return (k[3].k[0] >> 11) * (1.0 / 9007199254740992.0);
}

static int has(const uint32_t *v, uint32_t n, uint32_t x)
{
	while (n--)
		if (v[n] == x)
			return 1;
	return 0;
}

/* The router: the top-k experts of layer @layer for token @tok. */
static void route(const struct wmodel *m, uint32_t tok, uint32_t layer,
		  uint32_t *out)
{
	const struct wopts *o = m->o;
	uint32_t j, r, tries;

	for (j = 0; j < o->top_k; j++) {
		for (tries = 0;; tries++) {
			double u = draw(o->seed, tok, layer, j * 131 + tries);

			for (r = 0; r + 1 < o->experts; r++)
				if (u < m->zipf_cdf[r])
					break;
			if (!has(out, j, m->perm[layer * o->experts + r]))
				break;
			if (tries < 64)
				continue;
			for (r = 0; has(out, j, m->perm[layer * o->experts + r]); r++)
				;
			break;
		}
		out[j] = m->perm[layer * o->experts + r];
	}
}

/*
 * The predictor: each of the router's choices with probability
 * --accuracy, else the most popular expert of the layer it has not named
 * (nor is the router's). Counts its right guesses in m->st.predicted.
 */
static void predict(struct wmodel *m, uint32_t tok, uint32_t layer,
		    uint32_t *out)
{
	const struct wopts *o = m->o;
	uint32_t truth[64], j, r = 0;

	route(m, tok, layer, truth);
	m->st.predictions += o->top_k;
	for (j = 0; j < o->top_k; j++) {
		if (draw(o->seed ^ 0x5eed, tok, layer, j) < o->accuracy) {
			out[j] = truth[j];
			m->st.predicted++;
			continue;
		}
		while (r < o->experts &&
		       (has(truth, o->top_k, m->perm[layer * o->experts + r]) ||
			has(out, j, m->perm[layer * o->experts + r])))
			r++;
		/* No other expert left: the router's, after all. */
		out[j] = r < o->experts ? m->perm[layer * o->experts + r] :
			 truth[j];
	}
}

/*
 * The predictor's runners-up for token @tok, layer @layer, after its
 * top-k @named: each router choice the top-k missed, half the time, else
 * the most popular experts not named yet. @out gets top_k of them.
 */
static void runners_up(struct wmodel *m, uint32_t tok, uint32_t layer,
		       const uint32_t *named, uint32_t *out)
{
	const struct wopts *o = m->o;
	uint32_t truth[64], all[128], n = o->top_k, j, r = 0, x;

	route(m, tok, layer, truth);
	memcpy(all, named, o->top_k * sizeof(*all));
	for (j = 0; j < o->top_k && n < 2 * o->top_k; j++)
		if (!has(all, n, truth[j]) &&
		    draw(o->seed ^ 0x2d2d, tok, layer, j) < 0.5)
			all[n++] = truth[j];
	while (n < 2 * o->top_k && r < o->experts) {
		x = m->perm[layer * o->experts + r++];
		if (!has(all, n, x) && !has(truth, o->top_k, x))
			all[n++] = x;
	}
	/* Fewer experts than names: the router's last, again. */
	while (n < 2 * o->top_k)
		all[n++] = truth[o->top_k - 1];
	memcpy(out, all + o->top_k, o->top_k * sizeof(*out));
}

static int popularity_init(struct wmodel *m)
{
	const struct wopts *o = m->o;
	uint32_t l, i;
	double sum = 0;

	m->perm = calloc((size_t)o->layers * o->experts, sizeof(*m->perm));
	m->zipf_cdf = calloc(o->experts, sizeof(*m->zipf_cdf));
	if (!m->perm || !m->zipf_cdf)
		return -ENOMEM;
	for (i = 0; i < o->experts; i++)
		sum += m->zipf_cdf[i] = pow(i + 1, -o->zipf);
	for (i = 0; i < o->experts; i++)
		m->zipf_cdf[i] = (i ? m->zipf_cdf[i - 1] : 0) + m->zipf_cdf[i] / sum;
	/* Each layer's own order: Fisher-Yates from the seed. */
	for (l = 0; l < o->layers; l++) {
		uint32_t *p = m->perm + (size_t)l * o->experts;

		for (i = 0; i < o->experts; i++)
			p[i] = i;
		for (i = o->experts - 1; i > 0; i--) {
			uint32_t k = draw(o->seed ^ 0x9e12, l, i, 0) * (i + 1);
			uint32_t x = p[i];

			p[i] = p[k];
			p[k] = x;
		}
	}
	return 0;
}

/* ---- the model file ---------------------------------------------------- */

static int add_tensor(struct wmodel *m, uint32_t *cap, int32_t layer,
		      int32_t expert, uint64_t rows, uint64_t cols,
		      const char *fmt, ...) __attribute__((format(printf, 7, 8)));

static int add_tensor(struct wmodel *m, uint32_t *cap, int32_t layer,
		      int32_t expert, uint64_t rows, uint64_t cols,
		      const char *fmt, ...)
{
	struct wtensor *t;
	va_list ap;

	if (m->nt == *cap) {
		uint32_t n = *cap ? *cap * 2 : 256;

		t = realloc(m->t, n * sizeof(*t));
		if (!t)
			return -ENOMEM;
		m->t = t;
		*cap = n;
	}
	t = &m->t[m->nt];
	memset(t, 0, sizeof(*t));
	va_start(ap, fmt);
	vsnprintf(t->name, sizeof(t->name), fmt, ap);
	va_end(ap);
	t->ndim = cols ? 2 : 1;
	t->shape[0] = rows;
	t->shape[1] = cols;
	t->bytes = rows * (cols ? cols : 1) * 2;	/* F16 */
	t->off = m->nt ? t[-1].off + t[-1].bytes : 0;
	t->layer = layer;
	t->expert = expert;
	kvtier_key_chain(&m->seed_key, m->nt, &t->key);
	m->nt++;
	return 0;
}

/* The tensors of the model, layer by layer, in file order. */
static int model_layout(struct wmodel *m)
{
	const struct wopts *o = m->o;
	uint64_t h = o->hidden, kv = o->hidden / 4, f = o->ffn;
	uint32_t cap = 0, l, e;
	int ret = 0;

#define T(...)	do { if (!ret) ret = add_tensor(m, &cap, __VA_ARGS__); } while (0)
	kvtier_key_chain(NULL, o->seed, &m->seed_key);
	T(-1, -1, o->vocab, h, "model.embed_tokens.weight");
	for (l = 0; l < o->layers; l++) {
		T(l, -1, h, 0, "model.layers.%u.input_layernorm.weight", l);
		T(l, -1, h, h, "model.layers.%u.self_attn.q_proj.weight", l);
		T(l, -1, kv, h, "model.layers.%u.self_attn.k_proj.weight", l);
		T(l, -1, kv, h, "model.layers.%u.self_attn.v_proj.weight", l);
		T(l, -1, h, h, "model.layers.%u.self_attn.o_proj.weight", l);
		T(l, -1, h, 0, "model.layers.%u.post_attention_layernorm.weight", l);
		if (!o->experts) {
			T(l, -1, f, h, "model.layers.%u.mlp.gate_proj.weight", l);
			T(l, -1, f, h, "model.layers.%u.mlp.up_proj.weight", l);
			T(l, -1, h, f, "model.layers.%u.mlp.down_proj.weight", l);
			continue;
		}
		T(l, -1, o->experts, h, "model.layers.%u.mlp.gate.weight", l);
		for (e = 0; e < o->experts; e++) {
			T(l, e, f, h, "model.layers.%u.mlp.experts.%u.w1.weight", l, e);
			T(l, e, h, f, "model.layers.%u.mlp.experts.%u.w2.weight", l, e);
			T(l, e, f, h, "model.layers.%u.mlp.experts.%u.w3.weight", l, e);
		}
	}
	T(-1, -1, h, 0, "model.norm.weight");
	T(-1, -1, o->vocab, h, "lm_head.weight");
#undef T
	return ret;
}

/* The safetensors header: the JSON table, padded with spaces to 8 bytes. */
static char *model_header(const struct wmodel *m, uint64_t *len)
{
	size_t cap = 256 + (size_t)m->nt * (NAME_LEN + 96), n;
	char *j = malloc(cap);
	uint32_t i;

	if (!j)
		return NULL;
	n = snprintf(j, cap, "{\"__metadata__\":{\"format\":\"pt\"}");
	for (i = 0; i < m->nt; i++) {
		const struct wtensor *t = &m->t[i];

		n += snprintf(j + n, cap - n, ",\"%s\":{\"dtype\":\"F16\",\"shape\":[%llu",
			      t->name, (unsigned long long)t->shape[0]);
		if (t->ndim == 2)
			n += snprintf(j + n, cap - n, ",%llu",
				      (unsigned long long)t->shape[1]);
		n += snprintf(j + n, cap - n, "],\"data_offsets\":[%llu,%llu]}",
			      (unsigned long long)t->off,
			      (unsigned long long)(t->off + t->bytes));
	}
	n += snprintf(j + n, cap - n, "}");
	while (n % 8)
		j[n++] = ' ';
	*len = n;
	return j;
}

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = write(fd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		c += w;
		n -= w;
	}
	return 0;
}

/* Write the file, sync it and drop it from the page cache. */
static int model_write(struct wmodel *m)
{
	uint64_t hlen, le, max = 0;
	char *hdr = model_header(m, &hlen);
	uint32_t i;
	int fd, ret;

	if (!hdr)
		return -ENOMEM;
	for (i = 0; i < m->nt; i++)
		max = m->t[i].bytes > max ? m->t[i].bytes : max;
	m->buf = malloc(max);
	fd = open(m->o->file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (!m->buf || fd < 0) {
		ret = fd < 0 ? -errno : -ENOMEM;
		goto out;
	}
	le = htole64(hlen);
	ret = write_all(fd, &le, 8);
	if (!ret)
		ret = write_all(fd, hdr, hlen);
	for (i = 0; !ret && i < m->nt; i++) {
		fill_block(m->buf, m->t[i].bytes, &m->t[i].key);
		ret = write_all(fd, m->buf, m->t[i].bytes);
	}
	if (!ret && fsync(fd))
		ret = -errno;
	if (!ret)
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	m->data_off = 8 + hlen;
	m->file_bytes = m->data_off + (m->nt ? m->t[m->nt - 1].off +
				       m->t[m->nt - 1].bytes : 0);
out:
	if (fd >= 0)
		close(fd);
	free(hdr);
	return ret;
}

/* Bytes read so far by the block device holding @path; -1: unknown. */
static int64_t dev_read_bytes(const char *path)
{
	unsigned long long sectors;
	char sys[64], line[256];
	struct stat s;

	if (stat(path, &s) || !major(s.st_dev))
		return -1;
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u/stat",
		 major(s.st_dev), minor(s.st_dev));
	if (read_line(sys, line, sizeof(line)) ||
	    sscanf(line, "%*u %*u %llu", &sectors) != 1)
		return -1;
	return (int64_t)sectors * 512;
}

/* ---- the pool's view --------------------------------------------------- */

static struct unit *unit_of(const struct wmodel *m, int32_t layer,
			    int32_t expert)
{
	uint32_t l = layer < 0 ? m->o->layers : (uint32_t)layer;

	return &m->units[(size_t)l * (m->o->experts + 1) + expert + 1];
}

/*
 * Take the pool's tensor table and check it is the file's: names, layers
 * and experts as generated, each tensor at data_off + its offset.
 */
static int model_map(struct wmodel *m)
{
	uint32_t n, layers, experts, i;
	uint64_t block0 = m->data_off / 4096 * 4096;
	size_t nu = (size_t)(m->o->layers + 1) * (m->o->experts + 1);

	n = kvtier_weights_count(m->w, &layers, &experts);
	if (n != m->nt || layers != m->o->layers || experts != m->o->experts) {
		fprintf(stderr, "%s: the pool has %u tensors, %u layers, %u experts; the file %u, %u, %u\n",
			prog, n, layers, experts, m->nt, m->o->layers,
			m->o->experts);
		return -EBADMSG;
	}
	m->kt = calloc(n, sizeof(*m->kt));
	m->units = calloc(nu, sizeof(*m->units));
	if (!m->kt || !m->units)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct kvtier_tensor *k = &m->kt[i];
		const struct wtensor *t = &m->t[i];
		struct unit *u;
		uint32_t *idx;
		int ret = kvtier_weights_tensor(m->w, i, NULL, k);

		if (ret)
			return ret;
		if (strcmp(k->name, t->name) || k->bytes != t->bytes ||
		    k->layer != t->layer || k->expert != t->expert ||
		    k->offset != m->data_off + t->off - block0) {
			fprintf(stderr, "%s: tensor %u: the pool says %s (layer %d, expert %d, %llu bytes at %llu), the file %s (%d, %d, %llu at %llu)\n",
				prog, i, k->name, k->layer, k->expert,
				(unsigned long long)k->bytes,
				(unsigned long long)k->offset, t->name,
				t->layer, t->expert,
				(unsigned long long)t->bytes,
				(unsigned long long)(m->data_off + t->off - block0));
			return -EBADMSG;
		}
		u = unit_of(m, t->layer, t->expert);
		idx = realloc(u->idx, (u->n + 1) * sizeof(*idx));
		if (!idx)
			return -ENOMEM;
		idx[u->n++] = i;
		u->idx = idx;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Append the blocks of unit (@layer, @expert) to m->addrs[*n]. */
static int add_blocks(struct wmodel *m, int32_t layer, int32_t expert,
		      uint32_t *n)
{
	int ret = kvtier_weights_blocks(m->w, layer, expert, m->addrs + *n,
					m->cap - *n);

	if (ret < 0)
		return ret;
	if ((uint32_t)ret > m->cap - *n)
		return -E2BIG;
	*n += ret;
	return 0;
}

/* Sort and deduplicate m->addrs[0..n). */
static uint32_t addrs_unique(struct wmodel *m, uint32_t n)
{
	uint32_t i, k = 0;

	qsort(m->addrs, n, sizeof(*m->addrs), cmp_u64);
	for (i = 0; i < n; i++)
		if (!k || m->addrs[k - 1] != m->addrs[i])
			m->addrs[k++] = m->addrs[i];
	return k;
}

/*
 * How many of the addresses m->addrs[from..to) have a copy in DRAM now:
 * a census of their range.
 */
static uint64_t in_dram(struct wmodel *m, uint32_t from, uint32_t to)
{
	uint64_t cursor, hits = 0;
	uint32_t i, j = 0;
	int got;

	if (!m->has_census || from >= to)
		return 0;
	cursor = m->addrs[from];
	got = kvtier_census(m->pool, &cursor, m->census, NULL,
			    m->addrs[to - 1] - m->addrs[from] + 1, NULL, NULL);
	for (i = from; got > 0 && i < to; i++) {
		while ((int)j < got && m->census[j].addr < m->addrs[i])
			j++;
		if ((int)j < got && m->census[j].addr == m->addrs[i] &&
		    m->census[j].flags & KVTIER_CENSUS_DRAM)
			hits++;
	}
	return hits;
}

/* Read the completions there are; count the hint groups' late ones. */
static int drain(struct wmodel *m)
{
	struct kvtier_completion c[64];
	int n, i;

	do {
		n = kvtier_completions(m->pool, c, 64, 0);
		for (i = 0; i < n; i++)
			if (!(c[i].group & ENSURE_GROUP) &&
			    (c[i].status || c[i].ready < c[i].count ||
			     c[i].flags & KVTIER_COMPLETION_LATE))
				m->st.hint_late++;
	} while (n == 64);
	return n < 0 ? n : 0;
}

/* ---- the forward pass -------------------------------------------------- */

/* The layer of stage @s of a token: the decoder layers, then the head. */
static int32_t stage_layer(const struct wmodel *m, uint32_t s)
{
	return s < m->o->layers ? (int32_t)s : -1;
}

/* Count a hint's PREFETCH: @ret, but a refusal the run goes on after. */
static int hint_count(struct wmodel *m, int ret)
{
	/* No room for the group now, or more blocks than one group takes. */
	if (ret == -EAGAIN || ret == -ENOSPC || ret == -E2BIG) {
		m->st.hint_refused++;
		return 0;
	}
	if (!ret)
		m->st.hint_groups++;
	return ret;
}

static int hint_one(struct wmodel *m, int32_t layer, int32_t expert,
		    uint64_t deadline)
{
	struct kvtier_prefetch_args a = {
		.group = ++m->next_group,
		.deadline_ns = deadline,
	};

	return hint_count(m, kvtier_weights_prefetch(m->w, layer, expert, &a));
}

/* The predictor's top-k and runners-up with probabilities, one group. */
static int hint_probable(struct wmodel *m, uint32_t tok, int32_t layer,
			 uint64_t deadline)
{
	const struct wopts *o = m->o;
	struct kvtier_prefetch_args a = {
		.group = ++m->next_group,
		.deadline_ns = deadline,
	};
	uint32_t e[128], prob[128], k = o->top_k, j;
	int32_t ex[128];

	predict(m, tok, layer, e);
	runners_up(m, tok, layer, e, e + k);
	for (j = 0; j < 2 * k; j++) {
		double p = j < k ? o->accuracy : (1 - o->accuracy) / 2;

		ex[j] = (int32_t)e[j];
		prob[j] = (uint32_t)(p * KVTIER_PROB_ONE);
	}
	return hint_count(m, kvtier_weights_prefetch_experts(m->w, layer, ex,
							     prob, 2 * k, &a));
}

/* The hints for global stage @q, due at @deadline. */
static int hint_stage(struct wmodel *m, int mode, uint64_t q,
		      uint64_t deadline)
{
	uint32_t S = m->o->layers + 1, e[64], j;
	int32_t layer = stage_layer(m, q % S);
	int ret;

	ret = hint_one(m, layer, -1, deadline);
	if (ret || mode < MODE_EXPERT || !m->o->experts || layer < 0)
		return ret;
	if (mode == MODE_PROB)
		return hint_probable(m, q / S, layer, deadline);
	predict(m, q / S, layer, e);
	for (j = 0; !ret && j < m->o->top_k; j++)
		ret = hint_one(m, layer, e[j], deadline);
	return ret;
}

/*
 * Have the blocks of stage @q in DRAM: count those there already, then
 * groups of the rest (batch_max blocks each) due at once, waited for.
 * Return: 1 when a wait ended short (the reads will load what is missing),
 * 0, or -errno.
 */
static int stage_ensure(struct wmodel *m, uint64_t q, const uint32_t *e)
{
	uint32_t S = m->o->layers + 1, n = 0, n_layer, i, c, chunks;
	int32_t layer = stage_layer(m, q % S);
	uint32_t queued[ENSURE_CHUNKS] = { 0 };
	struct kvtier_prefetch_args a = {
		.flags = KVTIER_PREFETCH_ADDR,
		.priority = KVTIER_PRIO_MAX,
	};
	struct kvtier_completion done;
	int ret, ended_short = 0, waited = 0;
	uint64_t t0;

	ret = add_blocks(m, layer, -1, &n);
	n_layer = n;
	for (i = 0; !ret && e && i < m->o->top_k; i++)
		ret = add_blocks(m, layer, e[i], &n);
	if (ret)
		return ret;
	/* The experts' blocks apart (those they share with the layer too). */
	if (e) {
		qsort(m->addrs + n_layer, n - n_layer, sizeof(*m->addrs), cmp_u64);
		m->st.expert_blocks += n - n_layer;
		m->st.expert_hits += in_dram(m, n_layer, n);
	}
	n = addrs_unique(m, n);
	m->st.blocks += n;
	m->st.hit_blocks += in_dram(m, 0, n);
	chunks = (n + m->batch_max - 1) / m->batch_max;
	if (chunks > ENSURE_CHUNKS)
		return -E2BIG;
	memset(m->hints, 0, n * sizeof(*m->hints));
	for (i = 0; i < n; i++)
		m->hints[i].addr = m->addrs[i];

	/*
	 * A group with nothing to read is not waited for (drain() reads its
	 * completion): the layer starts at once.
	 */
	t0 = now_ns();
	for (c = 0; !ret && c < chunks; c++) {
		a.group = ENSURE_GROUP | q * ENSURE_CHUNKS | c;
		ret = kvtier_prefetch(m->pool, m->hints + c * m->batch_max,
				      c + 1 < chunks ? m->batch_max :
				      n - c * m->batch_max, &a, &queued[c], NULL);
	}
	if (ret == -EAGAIN || ret == -ENOSPC) {
		ended_short = 1;	/* the reads load it */
		chunks = c - 1;
		ret = 0;
	}
	for (c = 0; !ret && c < chunks; c++) {
		if (!queued[c])
			continue;
		waited = 1;
		ret = kvtier_wait_group(m->pool, ENSURE_GROUP |
					q * ENSURE_CHUNKS | c, &done, WAIT_MS);
		ended_short |= !ret && (done.status || done.ready < done.count);
	}
	m->st.waits += waited || ended_short;
	m->st.stall_ns += now_ns() - t0;
	return ret ? ret : ended_short;
}

/* Read and check the tensors of unit (@layer, @expert). */
static int read_unit(struct wmodel *m, int32_t layer, int32_t expert)
{
	const struct unit *u = unit_of(m, layer, expert);
	uint32_t i;

	for (i = 0; i < u->n; i++) {
		const struct wtensor *t = &m->t[u->idx[i]];
		int ret = kvtier_weights_read(m->w, &m->kt[u->idx[i]], m->buf);

		if (ret) {
			fprintf(stderr, "%s: read %s: %s\n", prog, t->name,
				strerror(-ret));
			return ret;
		}
		if (check_block(m->buf, t->bytes, &t->key, 1)) {
			fprintf(stderr, "%s: %s: wrong bytes\n", prog, t->name);
			m->st.verify_errors++;
		}
		m->st.used_bytes += t->bytes;
	}
	return 0;
}

/* One stage: wait for its weights, read them, hint ahead, compute. */
static int stage_run(struct wmodel *m, int mode, uint64_t q, uint64_t *hinted)
{
	const struct wopts *o = m->o;
	uint64_t S = o->layers + 1, end = (uint64_t)o->tokens * S, t0, now;
	int32_t layer = stage_layer(m, q % S);
	uint32_t e[64], i;
	int moe = o->experts && layer >= 0, ret;

	if (moe)
		route(m, q / S, layer, e);
	ret = stage_ensure(m, q, moe ? e : NULL);
	if (ret < 0)
		return ret;
	m->st.short_waits += ret;

	t0 = now_ns();
	ret = read_unit(m, layer, -1);
	for (i = 0; !ret && moe && i < o->top_k; i++)
		ret = read_unit(m, layer, e[i]);
	now = now_ns();
	m->st.copy_ns += now - t0;
	if (ret)
		return ret;

	/* While it computes, the stages up to --lookahead ahead. */
	if (mode != MODE_NONE) {
		for (; *hinted <= q + o->lookahead && *hinted < end; ++*hinted)
			if (*hinted > q) {
				ret = hint_stage(m, mode, *hinted, now +
						 (*hinted - q) * o->compute_ns);
				if (ret)
					return ret;
			}
	}
	sleep_ns(o->compute_ns);
	m->st.compute_ns += o->compute_ns;
	return drain(m);
}

/* A fresh pool over the file, a pass in @mode, the pool destroyed. */
static int run_mode(struct kvtier_ctx *ctx, struct wmodel *m, int mode)
{
	const struct wopts *o = m->o;
	uint64_t S = o->layers + 1, q, hinted = 0, t0;
	struct kvtier_pool_stat s0, s1;
	int64_t d0;
	int ret;

	memset(&m->st, 0, sizeof(m->st));
	ret = kvtier_weights_open(ctx, o->file, o->pool, o->block_size,
				  o->dram_blocks, &m->w);
	if (ret) {
		fprintf(stderr, "%s: kvtier_weights_open %s: %s\n", prog,
			o->file, strerror(-ret));
		return ret;
	}
	m->pool = kvtier_weights_pool(m->w);
	if (!m->kt)
		ret = model_map(m);
	if (!ret)
		ret = kvtier_stat(m->pool, &s0);
	d0 = dev_read_bytes(o->file);
	t0 = now_ns();
	for (q = 0; !ret && q < (uint64_t)o->tokens * S; q++) {
		if (wstop) {
			ret = -EINTR;
			break;
		}
		ret = stage_run(m, mode, q, &hinted);
	}
	m->st.elapsed_ns = now_ns() - t0;
	if (!ret)
		ret = kvtier_stat(m->pool, &s1);
	if (!ret) {
		int64_t d1 = dev_read_bytes(o->file);

		m->st.loaded_bytes = (s1.promotions - s0.promotions) *
				     o->block_size;
		m->st.dev_bytes = d0 < 0 || d1 < 0 ? -1 : d1 - d0;
	}
	if (ret && ret != -EINTR)
		fprintf(stderr, "%s: mode %s: %s\n", prog, mode_names[mode],
			strerror(-ret));
	kvtier_cancel(m->pool, 0, KVTIER_CANCEL_ALL, NULL);
	kvtier_weights_close(m->w);
	m->w = NULL;
	m->pool = NULL;
	kvtier_pool_destroy(ctx, o->pool);
	return ret;
}

/* Bytes read from the file: the device's count where there is one. */
static uint64_t read_bytes(const struct wrun_stats *s)
{
	return s->dev_bytes >= 0 ? (uint64_t)s->dev_bytes : s->loaded_bytes;
}

static void print_mode(const struct wmodel *m, int mode,
		       const struct wrun_stats *s)
{
	char b1[32], b2[32], b3[32];
	uint32_t tokens = m->o->tokens;

	printf("==== %s ====\n", mode == MODE_NONE ? "no hints" :
	       mode == MODE_LAYER ? "layer hints" :
	       mode == MODE_EXPERT ? "layer and expert hints" :
	       "layer and probable expert hints");
	row("stall", "%.3f s (%.2f ms a token; %llu of %llu stages waited)",
	    s->stall_ns / 1e9, s->stall_ns / 1e6 / tokens,
	    (unsigned long long)s->waits,
	    (unsigned long long)tokens * (m->o->layers + 1));
	row("compute", "%.3f s", s->compute_ns / 1e9);
	row("reads and checks", "%.3f s", s->copy_ns / 1e9);
	row("elapsed", "%.3f s", s->elapsed_ns / 1e9);
	row("weights used", "%s", human_bytes(s->used_bytes, b1, sizeof(b1)));
	row("loaded by the pool", "%s",
	    human_bytes(s->loaded_bytes, b2, sizeof(b2)));
	if (s->dev_bytes >= 0)
		row("read by the file's device", "%s",
		    human_bytes(s->dev_bytes, b3, sizeof(b3)));
	row("read amplification", "%.3f", ratio(read_bytes(s), s->used_bytes));
	if (m->has_census) {
		row("blocks in DRAM when used", "%.3f (%llu of %llu)",
		    ratio(s->hit_blocks, s->blocks),
		    (unsigned long long)s->hit_blocks,
		    (unsigned long long)s->blocks);
		if (m->o->experts)
			row("expert blocks in DRAM when used", "%.3f (%llu of %llu)",
			    ratio(s->expert_hits, s->expert_blocks),
			    (unsigned long long)s->expert_hits,
			    (unsigned long long)s->expert_blocks);
	}
	if (mode != MODE_NONE)
		row("hint groups", "%llu (%llu late or short, %llu refused)",
		    (unsigned long long)s->hint_groups,
		    (unsigned long long)s->hint_late,
		    (unsigned long long)s->hint_refused);
	if (s->predictions)
		row("experts predicted right", "%llu of %llu",
		    (unsigned long long)s->predicted,
		    (unsigned long long)s->predictions);
	if (s->short_waits)
		row("waits that ended short", "%llu",
		    (unsigned long long)s->short_waits);
	row("tensors with wrong bytes", "%llu",
	    (unsigned long long)s->verify_errors);
	printf("\n");
}

/* Probable expert hints against the top-k as sure ones. */
static void print_prob(const struct wmodel *m, const struct wrun_stats *p,
		       const struct wrun_stats *e)
{
	printf("expert_stall_prob_vs_expert: %.3f (%.3f s / %.3f s)\n",
	       ratio(p->stall_ns, e->stall_ns), p->stall_ns / 1e9,
	       e->stall_ns / 1e9);
	printf("expert_read_amplification_prob: %.3f\n",
	       ratio(read_bytes(p), p->used_bytes));
	if (m->has_census)
		printf("expert_hit_share_prob: %.3f (%llu of %llu blocks)\n",
		       ratio(p->expert_hits, p->expert_blocks),
		       (unsigned long long)p->expert_hits,
		       (unsigned long long)p->expert_blocks);
}

/*
 * The name: value lines: the hinted mode (expert hints with --moe, else
 * layer hints) against none; each ratio with its absolute figures.
 */
static void print_figures(const struct wmodel *m, const struct wrun_stats *r,
			  unsigned int ran)
{
	const char *p = m->o->experts ? "expert" : "weights";
	int best = ran & (1U << MODE_EXPERT) ? MODE_EXPERT : MODE_LAYER;
	const struct wrun_stats *u = &r[MODE_NONE], *h = &r[best];
	char b1[32], b2[32];

	if (!(ran & (1U << MODE_NONE)) || !(ran & (1U << best)))
		return;
	printf("%s_stall_unhinted_s: %.3f\n", p, u->stall_ns / 1e9);
	if (m->o->experts && ran & (1U << MODE_LAYER))
		printf("expert_stall_layer_hinted_s: %.3f\n",
		       r[MODE_LAYER].stall_ns / 1e9);
	printf("%s_stall_hinted_s: %.3f\n", p, h->stall_ns / 1e9);
	printf("%s_stall_hinted_vs_unhinted: %.3f (%.3f s / %.3f s)\n", p,
	       ratio(h->stall_ns, u->stall_ns), h->stall_ns / 1e9,
	       u->stall_ns / 1e9);
	printf("%s_read_amplification: %.3f (%s read / %s used)\n", p,
	       ratio(read_bytes(h), h->used_bytes),
	       human_bytes(read_bytes(h), b1, sizeof(b1)),
	       human_bytes(h->used_bytes, b2, sizeof(b2)));
	printf("%s_read_amplification_unhinted: %.3f\n", p,
	       ratio(read_bytes(u), u->used_bytes));
	if (m->has_census && m->o->experts)
		printf("expert_hit_share: %.3f (%llu of %llu blocks; unhinted %.3f)\n",
		       ratio(h->expert_hits, h->expert_blocks),
		       (unsigned long long)h->expert_hits,
		       (unsigned long long)h->expert_blocks,
		       ratio(u->expert_hits, u->expert_blocks));
	if (best == MODE_EXPERT && ran & (1U << MODE_PROB))
		print_prob(m, &r[MODE_PROB], h);
}

/* ---- options ----------------------------------------------------------- */

static int parse_u32(const char *val, uint32_t *out, uint64_t max)
{
	uint64_t v;

	if (parse_size(val, &v) || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_modes(const char *val, unsigned int *out)
{
	char *s = strdup(val), *tok, *save = NULL;
	int m, ret = 0;

	if (!s)
		return -ENOMEM;
	*out = 0;
	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (m = 0; m < NR_MODES && strcmp(tok, mode_names[m]); m++)
			;
		if (m == NR_MODES)
			ret = -EINVAL;
		else
			*out |= 1U << m;
	}
	free(s);
	return ret ? ret : (*out ? 0 : -EINVAL);
}

static int parse_wopt(struct wopts *o, const char *name, const char *val)
{
	uint64_t v;
	char *end;

	if (!strcmp(name, "file"))
		o->file = val;
	else if (!strcmp(name, "pool"))
		snprintf(o->pool, sizeof(o->pool), "%s", val);
	else if (!strcmp(name, "layers"))
		return parse_u32(val, &o->layers, 4096) || !o->layers ? -EINVAL : 1;
	else if (!strcmp(name, "hidden"))
		return parse_u32(val, &o->hidden, 65536) || !o->hidden ||
		       o->hidden % 16 ? -EINVAL : 1;
	else if (!strcmp(name, "ffn"))
		return parse_u32(val, &o->ffn, 1 << 20) || !o->ffn ||
		       o->ffn % 4 ? -EINVAL : 1;
	else if (!strcmp(name, "vocab"))
		return parse_u32(val, &o->vocab, 1 << 20) || !o->vocab ? -EINVAL : 1;
	else if (!strcmp(name, "experts"))
		return parse_u32(val, &o->experts, 4096) || !o->experts ? -EINVAL : 1;
	else if (!strcmp(name, "top-k"))
		return parse_u32(val, &o->top_k, 64) || !o->top_k ? -EINVAL : 1;
	else if (!strcmp(name, "tokens"))
		return parse_u32(val, &o->tokens, 1 << 20) || !o->tokens ? -EINVAL : 1;
	else if (!strcmp(name, "lookahead"))
		return parse_u32(val, &o->lookahead, 1024) ? -EINVAL : 1;
	else if (!strcmp(name, "block-size"))
		return parse_size(val, &o->block_size) || !o->block_size ||
		       o->block_size % 4096 ? -EINVAL : 1;
	else if (!strcmp(name, "dram-blocks"))
		return parse_size(val, &o->dram_blocks) || !o->dram_blocks ||
		       o->dram_blocks > UINT32_MAX ? -EINVAL : 1;
	else if (!strcmp(name, "compute-us"))
		return parse_u64(val, &v) ? -EINVAL :
		       (o->compute_ns = v * 1000, 1);
	else if (!strcmp(name, "seed"))
		return parse_u64(val, &o->seed) ? -EINVAL : 1;
	else if (!strcmp(name, "modes"))
		return parse_modes(val, &o->modes) ? -EINVAL : 1;
	else if (!strcmp(name, "zipf") || !strcmp(name, "accuracy")) {
		double d = strtod(val, &end);

		if (end == val || *end || !(d >= 0) ||
		    (name[0] == 'a' && d > 1) || d > 16)
			return -EINVAL;
		*(name[0] == 'a' ? &o->accuracy : &o->zipf) = d;
	} else {
		return 0;
	}
	return 1;
}

/* Defaults that depend on --moe, and the checks across options. */
static int wopts_finish(struct wopts *o, int moe)
{
	static char path[256];

	if (moe && !o->experts)
		o->experts = 64;
	if (!o->ffn)
		o->ffn = o->experts ? 32 : 768;
	if (!o->block_size)
		o->block_size = o->experts ? 16 << 10 : 64 << 10;
	if (!o->tokens)
		o->tokens = o->experts ? 32 : 4;
	if (!o->compute_ns)
		o->compute_ns = o->experts ? 2000000 : 5000000;
	if (!o->modes)
		o->modes = o->experts ? 15 : 3;
	if (!o->experts)
		o->modes &= ~(1U << MODE_EXPERT | 1U << MODE_PROB);
	if (!o->pool[0])
		snprintf(o->pool, sizeof(o->pool), "kvtier-weights-%d", getpid());
	if (!o->file) {
		const char *tmp = getenv("TMPDIR");

		snprintf(path, sizeof(path), "%s/kvtier-weights-%d.safetensors",
			 tmp && *tmp ? tmp : "/tmp", getpid());
		o->file = path;
	}
	if (o->experts && o->top_k > o->experts)
		return -EINVAL;
	return o->modes ? 0 : -EINVAL;
}

static void model_free(struct wmodel *m)
{
	size_t i, nu = (size_t)(m->o->layers + 1) * (m->o->experts + 1);

	for (i = 0; m->units && i < nu; i++)
		free(m->units[i].idx);
	free(m->units);
	free(m->kt);
	free(m->t);
	free(m->perm);
	free(m->zipf_cdf);
	free(m->addrs);
	free(m->census);
	free(m->hints);
	free(m->buf);
}

static int weights_run(struct wopts *o)
{
	struct wrun_stats res[NR_MODES];
	struct wmodel m = { .o = o };
	struct kvtier_ctx *ctx = NULL;
	struct kvtier_api api;
	uint64_t model_blocks, wrote = 0;
	unsigned int ran = 0;
	char b1[32], b2[32];
	int ret, mode, rc = 1;

	ret = kvtier_open(&ctx, KVTIER_FEATURES_ALL);
	if (!ret)
		ret = kvtier_api_info(ctx, &api);
	if (ret) {
		fprintf(stderr, "%s: kvtier_open: %s\n", prog, strerror(-ret));
		kvtier_close(ctx);
		return 1;
	}
	if ((api.features & (KVTIER_F_WEIGHTS | KVTIER_F_PREFETCH)) !=
	    (KVTIER_F_WEIGHTS | KVTIER_F_PREFETCH)) {
		printf("%s: skipped: the module has no weight pools (KVTIER_F_WEIGHTS)\n",
		       prog);
		kvtier_close(ctx);
		return EXIT_SKIP;
	}
	m.has_census = !!(api.features & KVTIER_F_EVENTS);
	if (!(api.features & KVTIER_F_HINT_PROB) &&
	    o->modes & (1U << MODE_PROB)) {
		printf("%s: mode prob skipped: the module has no probable hints (KVTIER_F_HINT_PROB)\n",
		       prog);
		o->modes &= ~(1U << MODE_PROB);
	}

	ret = model_layout(&m);
	if (!ret && o->experts)
		ret = popularity_init(&m);
	if (!ret) {
		ret = model_write(&m);
		wrote = 1;
	}
	if (ret) {
		fprintf(stderr, "%s: %s: %s\n", prog, o->file, strerror(-ret));
		goto out;
	}
	model_blocks = (m.file_bytes - m.data_off / 4096 * 4096 +
			o->block_size - 1) / o->block_size;
	if (!o->dram_blocks)
		o->dram_blocks = (model_blocks + 1) / 2;
	m.cap = model_blocks + 64;	/* room for blocks experts share */
	m.batch_max = api.batch_max;
	m.addrs = calloc(m.cap, sizeof(*m.addrs));
	m.census = calloc(m.cap, sizeof(*m.census));
	m.hints = calloc(m.cap, sizeof(*m.hints));
	if (!m.addrs || !m.census || !m.hints) {
		fprintf(stderr, "%s: out of memory\n", prog);
		goto out;
	}

	printf("%s: %u layers, %s, %u tokens; %s in %llu blocks of %s, DRAM share %llu blocks\n",
	       o->file, o->layers, o->experts ? "MoE" : "dense MLP", o->tokens,
	       human_bytes(m.file_bytes, b1, sizeof(b1)),
	       (unsigned long long)model_blocks,
	       human_bytes(o->block_size, b2, sizeof(b2)),
	       (unsigned long long)o->dram_blocks);
	if (o->experts)
		printf("experts: %u a layer, top-%u, Zipf %.2f; predictor accuracy %.2f\n",
		       o->experts, o->top_k, o->zipf, o->accuracy);
	printf("compute %.3f ms a stage (%u layers and the head), hints %u stages ahead\n\n",
	       o->compute_ns / 1e6, o->layers, o->lookahead);

	for (mode = 0; mode < NR_MODES; mode++) {
		if (!(o->modes & (1U << mode)))
			continue;
		ret = run_mode(ctx, &m, mode);
		if (ret)
			goto out;
		res[mode] = m.st;
		ran |= 1U << mode;
		print_mode(&m, mode, &res[mode]);
		if (m.st.verify_errors)
			goto out;
	}
	print_figures(&m, res, ran);
	rc = 0;
out:
	if (wrote && !o->keep)
		unlink(o->file);
	model_free(&m);
	kvtier_close(ctx);
	return rc;
}

int cmd_weights(int argc, char **argv)
{
	struct wopts o = {
		.layers = 32,
		.hidden = 256,
		.vocab = 8192,
		.top_k = 2,
		.zipf = 1.0,
		.lookahead = 2,
		.accuracy = 0.8,
		.seed = 1,
	};
	int i, moe = 0;

	for (i = 1; i < argc; i++) {
		const char *val;
		char *name;

		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			wusage(stdout);
			return 0;
		}
		if (!strcmp(argv[i], "--moe") || !strcmp(argv[i], "--keep")) {
			*(argv[i][2] == 'm' ? &moe : &o.keep) = 1;
			continue;
		}
		val = opt_next(argc, argv, &i, &name);
		if (!val || opt_taken(parse_wopt(&o, name, val), name, val))
			return EXIT_USAGE;
	}
	if (wopts_finish(&o, moe)) {
		fprintf(stderr, "%s: --top-k above --experts, or no mode to run\n", prog);
		return EXIT_USAGE;
	}
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	return weights_run(&o);
}
