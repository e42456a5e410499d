// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libkvtier: the GGUF tensor table, read and checked.
 *
 * A GGUF file (ggml's, llama.cpp's) is a header, then padding to its
 * alignment, then the data section its tensor infos index. The header,
 * all of it little-endian: "GGUF", a u32 version (2 or 3), a u64 tensor
 * count, a u64 metadata count, the metadata key-value pairs, the tensor
 * infos. A string is a u64 length and as many bytes. GGUF has no header
 * length: the caller hands over a prefix of the file and, on -ENODATA, a
 * longer one (lib/weights.c).
 *
 * The reader skips the metadata, save a "general.alignment", but checks
 * every type, length and count in it against the bytes the file can have;
 * it turns the tensor infos into the table safetensors.c makes, a stacked
 * MoE tensor ("blk.N.ffn_up_exps.weight") as one entry per expert. Anything
 * wrong is -EBADMSG. It reads no file.
 */
#define KVTIER_LIB_INTERNAL
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvtier.h"
#include "gguf.h"

/* Metadata value types. */
enum {
	GGUF_UINT8, GGUF_INT8, GGUF_UINT16, GGUF_INT16, GGUF_UINT32,
	GGUF_INT32, GGUF_FLOAT32, GGUF_BOOL, GGUF_STRING, GGUF_ARRAY,
	GGUF_UINT64, GGUF_INT64, GGUF_FLOAT64, GGUF_TYPES
};

/* A value's bytes by type; 0: a string's or an array's vary. */
static const uint8_t gguf_value_size[GGUF_TYPES] = {
	1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8,
};

#define GGUF_ALIGN_DEFAULT	32
/* GGML_MAX_DIMS */
#define GGUF_DIMS_MAX		4
/* The fewest bytes a string, an array's head, a pair, a tensor info take. */
#define GGUF_STR_MIN		8
#define GGUF_ARRAY_MIN		(4 + 8)
#define GGUF_KV_MIN		(GGUF_STR_MIN + 1 + 4 + 1)
#define GGUF_INFO_MIN		(GGUF_STR_MIN + 1 + 4 + 8 + 4 + 8)

/*
 * ggml's tensor types by id (enum ggml_type, ggml.h): elements a block
 * and bytes a block (the block_* structs of ggml-common.h). The ids ggml
 * removed (4, 5: Q4_2, Q4_3; 31..33: Q4_0_4_4, Q4_0_4_8, Q4_0_8_8;
 * 36..38: IQ4_NL_4_4, _4_8, _8_8) have no name, and no file may use them.
 */
static const struct {
	char name[8];
	uint16_t block;
	uint16_t size;
} gguf_ggml_types[] = {
	[0] = { "F32", 1, 4 },		[1] = { "F16", 1, 2 },
	[2] = { "Q4_0", 32, 18 },	[3] = { "Q4_1", 32, 20 },
	[6] = { "Q5_0", 32, 22 },	[7] = { "Q5_1", 32, 24 },
	[8] = { "Q8_0", 32, 34 },	[9] = { "Q8_1", 32, 36 },
	[10] = { "Q2_K", 256, 84 },	[11] = { "Q3_K", 256, 110 },
	[12] = { "Q4_K", 256, 144 },	[13] = { "Q5_K", 256, 176 },
	[14] = { "Q6_K", 256, 210 },	[15] = { "Q8_K", 256, 292 },
	[16] = { "IQ2_XXS", 256, 66 },	[17] = { "IQ2_XS", 256, 74 },
	[18] = { "IQ3_XXS", 256, 98 },	[19] = { "IQ1_S", 256, 50 },
	[20] = { "IQ4_NL", 32, 18 },	[21] = { "IQ3_S", 256, 110 },
	[22] = { "IQ2_S", 256, 82 },	[23] = { "IQ4_XS", 256, 136 },
	[24] = { "I8", 1, 1 },		[25] = { "I16", 1, 2 },
	[26] = { "I32", 1, 4 },		[27] = { "I64", 1, 8 },
	[28] = { "F64", 1, 8 },		[29] = { "IQ1_M", 256, 56 },
	[30] = { "BF16", 1, 2 },
	[34] = { "TQ1_0", 256, 54 },	[35] = { "TQ2_0", 256, 66 },
	[39] = { "MXFP4", 32, 17 },
};

#define GGUF_GGML_TYPES	(sizeof(gguf_ggml_types) / sizeof(gguf_ggml_types[0]))

/*
 * The header not yet read: byte @pos of the @len at @buf. The header may
 * not run past @lim, the file's size or KVTIER_ST_HEADER_MAX if less.
 */
struct kvtier_gguf_cur {
	const uint8_t *buf;
	uint64_t pos;
	uint64_t len;
	uint64_t lim;
};

/* That @n more bytes are there: -EBADMSG past @lim, -ENODATA past @len. */
static int gguf_need(const struct kvtier_gguf_cur *c, uint64_t n)
{
	if (n > c->lim - c->pos)
		return -EBADMSG;
	return n > c->len - c->pos ? -ENODATA : 0;
}

/* An @n-byte little-endian integer. */
static int gguf_le(struct kvtier_gguf_cur *c, unsigned int n, uint64_t *v)
{
	int ret = gguf_need(c, n);
	unsigned int i;

	if (ret)
		return ret;
	*v = 0;
	for (i = n; i > 0; i--)
		*v = *v << 8 | c->buf[c->pos + i - 1];
	c->pos += n;
	return 0;
}

static int gguf_u32(struct kvtier_gguf_cur *c, uint32_t *v)
{
	uint64_t x = 0;
	int ret = gguf_le(c, 4, &x);

	*v = x;
	return ret;
}

/* A string of at most @max bytes: *@n of them at *@s. */
static int gguf_str(struct kvtier_gguf_cur *c, uint64_t max,
		    const uint8_t **s, uint64_t *n)
{
	int ret = gguf_le(c, 8, n);

	if (!ret && *n > max)
		ret = -EBADMSG;
	if (!ret)
		ret = gguf_need(c, *n);
	if (ret)
		return ret;
	*s = c->buf + c->pos;
	c->pos += *n;
	return 0;
}

/*
 * Check and skip a value of @type, in @depth arrays: a bool is 0 or 1, an
 * array's count fits in the bytes left (each element takes some), arrays
 * nest at most KVTIER_GGUF_DEPTH_MAX deep.
 */
static int gguf_value(struct kvtier_gguf_cur *c, uint32_t type,
		      unsigned int depth)
{
	uint64_t count, min, i, n;
	const uint8_t *s;
	uint32_t etype;
	int ret;

	if (type >= GGUF_TYPES)
		return -EBADMSG;
	if (type == GGUF_STRING)
		return gguf_str(c, UINT64_MAX, &s, &n);
	if (type != GGUF_ARRAY) {
		ret = gguf_need(c, gguf_value_size[type]);
		if (!ret && type == GGUF_BOOL && c->buf[c->pos] > 1)
			ret = -EBADMSG;
		if (!ret)
			c->pos += gguf_value_size[type];
		return ret;
	}

	if (depth == KVTIER_GGUF_DEPTH_MAX)
		return -EBADMSG;
	ret = gguf_u32(c, &etype);
	if (!ret)
		ret = gguf_le(c, 8, &count);
	if (ret)
		return ret;
	if (etype >= GGUF_TYPES)
		return -EBADMSG;
	min = etype == GGUF_STRING ? GGUF_STR_MIN :
	      etype == GGUF_ARRAY ? GGUF_ARRAY_MIN : gguf_value_size[etype];
	if (count > (c->lim - c->pos) / min)
		return -EBADMSG;
	if (etype != GGUF_STRING && etype != GGUF_ARRAY && etype != GGUF_BOOL) {
		ret = gguf_need(c, count * min);
		if (!ret)
			c->pos += count * min;
		return ret;
	}
	for (i = 0; i < count && !ret; i++)
		ret = gguf_value(c, etype, depth + 1);
	return ret;
}

/*
 * One key-value pair: a key of 1 or more bytes, a value. The alignment is
 * the value of "general.alignment", once, a UINT32, a power of two.
 */
static int gguf_kv(struct kvtier_gguf_cur *c, uint32_t *align, bool *seen)
{
	static const char key_align[] = "general.alignment";
	const uint8_t *key;
	uint32_t type;
	uint64_t n;
	int ret;

	ret = gguf_str(c, UINT64_MAX, &key, &n);
	if (!ret && !n)
		ret = -EBADMSG;
	if (!ret)
		ret = gguf_u32(c, &type);
	if (ret)
		return ret;
	if (n != sizeof(key_align) - 1 || memcmp(key, key_align, n))
		return gguf_value(c, type, 0);
	if (*seen || type != GGUF_UINT32)
		return -EBADMSG;
	*seen = true;
	ret = gguf_u32(c, align);
	if (!ret && (!*align || (*align & (*align - 1))))
		ret = -EBADMSG;
	return ret;
}

/*
 * One tensor info, into @t: a name of 1..KVTIER_TENSOR_NAME_MAX-1 bytes
 * without a NUL, 1..GGUF_DIMS_MAX dimensions (ne[], innermost first, each
 * below 2^63 and so their product), a ggml type whose block divides ne[0],
 * an offset from the data section. @t->shape is ne[] reversed.
 */
static int gguf_info(struct kvtier_gguf_cur *c, struct kvtier_tensor *t)
{
	uint64_t ne[GGUF_DIMS_MAX], n, elems = 1;
	const uint8_t *name;
	uint32_t i, ndim, type;
	int ret;

	memset(t, 0, sizeof(*t));
	ret = gguf_str(c, KVTIER_TENSOR_NAME_MAX - 1, &name, &n);
	if (!ret && (!n || memchr(name, '\0', n)))
		ret = -EBADMSG;
	if (!ret)
		ret = gguf_u32(c, &ndim);
	if (!ret && (!ndim || ndim > GGUF_DIMS_MAX))
		ret = -EBADMSG;
	for (i = 0; !ret && i < ndim; i++)
		ret = gguf_le(c, 8, &ne[i]);
	if (!ret)
		ret = gguf_u32(c, &type);
	if (!ret)
		ret = gguf_le(c, 8, &t->offset);
	if (ret)
		return ret;
	if (type >= GGUF_GGML_TYPES || !gguf_ggml_types[type].name[0] ||
	    ne[0] % gguf_ggml_types[type].block)
		return -EBADMSG;

	for (i = 0; i < ndim; i++) {
		if (ne[i] > INT64_MAX ||
		    __builtin_mul_overflow(elems, ne[i], &elems) ||
		    elems > INT64_MAX)
			return -EBADMSG;
		t->shape[ndim - 1 - i] = ne[i];
	}
	/* ne[0] is whole blocks: so is the product. */
	if (__builtin_mul_overflow(elems / gguf_ggml_types[type].block,
				   (uint64_t)gguf_ggml_types[type].size,
				   &t->bytes))
		return -EBADMSG;
	memcpy(t->name, name, n);
	strcpy(t->dtype, gguf_ggml_types[type].name);
	t->ndim = ndim;
	t->layer = kvtier_st_layer(t->name);
	t->expert = kvtier_st_name_index(t->name, "experts.");
	return 0;
}

/*
 * The experts a tensor stacks: its outermost dimension when a component of
 * its name ends in "_exps" ("blk.N.ffn_gate_exps.weight") and it has two
 * or more, and bytes; else 0 (one entry, as it is).
 */
static uint64_t gguf_experts(const struct kvtier_tensor *t)
{
	const char *s;

	if (t->ndim < 2 || !t->bytes)
		return 0;
	for (s = strstr(t->name, "_exps"); s; s = strstr(s + 1, "_exps"))
		if (s[5] == '.' || s[5] == '\0')
			return t->shape[0];
	return 0;
}

/*
 * Check the tensors' offsets (aligned, in the data section of @data_size
 * bytes), then make the table's entries: a stacked tensor's n experts are
 * n entries, "<name>[e]", each its e-th n-th of the bytes.
 */
static int gguf_slice(struct kvtier_st_table *tab, uint64_t data_size,
		      uint32_t align)
{
	struct kvtier_tensor *out, *t, *s;
	uint64_t total = 0, n, e, each;
	bool stacked = false;
	uint32_t i, j;

	for (i = 0; i < tab->count; i++) {
		t = &tab->t[i];
		if (t->offset % align || t->offset > data_size ||
		    t->bytes > data_size - t->offset)
			return -EBADMSG;
		n = gguf_experts(t);
		stacked |= n > 0;
		total += n ? n : 1;
		if (total > KVTIER_GGUF_ENTRIES_MAX)
			return -EBADMSG;
	}
	if (!stacked)
		return 0;

	out = calloc(total, sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (i = 0, j = 0; i < tab->count; i++) {
		t = &tab->t[i];
		n = gguf_experts(t);
		if (!n) {
			out[j++] = *t;
			continue;
		}
		each = t->bytes / n;
		for (e = 0; e < n; e++, j++) {
			s = &out[j];
			*s = *t;
			if (snprintf(s->name, sizeof(s->name), "%s[%llu]", t->name,
				     (unsigned long long)e) >= (int)sizeof(s->name)) {
				free(out);
				return -EBADMSG;
			}
			s->ndim = t->ndim - 1;
			memmove(s->shape, s->shape + 1, s->ndim * sizeof(s->shape[0]));
			s->shape[s->ndim] = 0;
			s->offset = t->offset + e * each;
			s->bytes = each;
			s->expert = e;
		}
	}
	free(tab->t);
	tab->t = out;
	tab->count = total;
	return 0;
}

bool kvtier_gguf_magic(const void *head)
{
	return !memcmp(head, "GGUF", 4);
}

int kvtier_gguf_parse(const void *buf, size_t len, uint64_t file_size,
		      struct kvtier_st_table *tab)
{
	struct kvtier_gguf_cur c = { .buf = buf };
	uint32_t version, align = GGUF_ALIGN_DEFAULT, cap = 0;
	uint64_t ntensors, nkv, i;
	bool seen = false;
	int ret;

	memset(tab, 0, sizeof(*tab));
	c.lim = file_size < KVTIER_ST_HEADER_MAX ? file_size :
		KVTIER_ST_HEADER_MAX;
	c.len = len < c.lim ? len : c.lim;
	ret = gguf_need(&c, 4);
	if (ret)
		return ret;
	if (!kvtier_gguf_magic(buf))
		return -EBADMSG;
	c.pos = 4;
	ret = gguf_u32(&c, &version);
	if (!ret && version != 2 && version != 3)
		ret = -EBADMSG;
	if (!ret)
		ret = gguf_le(&c, 8, &ntensors);
	if (!ret)
		ret = gguf_le(&c, 8, &nkv);
	if (ret)
		return ret;
	/* Counts the file has no room for: lies, not a short read. */
	if (ntensors > (c.lim - c.pos) / GGUF_INFO_MIN ||
	    nkv > (c.lim - c.pos) / GGUF_KV_MIN)
		return -EBADMSG;

	for (i = 0; i < nkv && !ret; i++)
		ret = gguf_kv(&c, &align, &seen);
	for (i = 0; i < ntensors && !ret; i++) {
		ret = kvtier_st_grow(tab, &cap);
		if (!ret)
			ret = gguf_info(&c, &tab->t[tab->count]);
		if (!ret)
			tab->count++;
	}
	if (ret)
		goto out_free;

	/* The header is at most 100 MiB: no overflow. */
	tab->header_len = c.pos;
	tab->data_off = (c.pos + align - 1) & ~((uint64_t)align - 1);
	if (tab->data_off > file_size)
		ret = -EBADMSG;
	if (!ret)
		ret = gguf_slice(tab, file_size - tab->data_off, align);
	if (!ret)
		ret = kvtier_st_sort(tab);
	if (ret)
		goto out_free;

	tab->digest = kvtier_st_header_digest(file_size, buf, tab->header_len);
	return 0;

out_free:
	kvtier_st_free(tab);
	return ret;
}
