// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libkvtier: the safetensors tensor table, read and checked.
 *
 * A safetensors file is an 8-byte little-endian length N, N bytes of JSON
 * (an object of tensors by name, and an optional "__metadata__" object of
 * strings), then the data section the tensors' "data_offsets" index. The
 * JSON reader here knows only that shape and is strict about it: anything
 * else, a number that is not a non-negative integer, a table whose sizes,
 * offsets or names do not add up, is -EBADMSG. It reads no file: the
 * caller hands it the bytes (lib/weights.c, and kvt-test with bad ones).
 */
#define KVTIER_LIB_INTERNAL
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kvtier.h"
#include "safetensors.h"

/* The JSON not yet read: [p, end). */
struct kvtier_json {
	const char *p;
	const char *end;
};

static void json_ws(struct kvtier_json *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' ||
				 *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

/* Consume @c, after white space. */
static int json_expect(struct kvtier_json *j, char c)
{
	json_ws(j);
	if (j->p == j->end || *j->p != c)
		return -EBADMSG;
	j->p++;
	return 0;
}

static bool json_digit(const struct kvtier_json *j)
{
	return j->p < j->end && *j->p >= '0' && *j->p <= '9';
}

/*
 * Open an object or array (@open): 1 when a member follows, 0 when it is
 * empty (its close, @close, consumed).
 */
static int json_open(struct kvtier_json *j, char open, char close)
{
	if (json_expect(j, open))
		return -EBADMSG;
	json_ws(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		return 0;
	}
	return 1;
}

/* After a member: 1 when another follows (',' consumed), 0 at @close. */
static int json_more(struct kvtier_json *j, char close)
{
	json_ws(j);
	if (j->p < j->end && *j->p == ',') {
		j->p++;
		return 1;
	}
	return json_expect(j, close) ? -EBADMSG : 0;
}

static int json_hex4(struct kvtier_json *j, uint32_t *v)
{
	int i;

	if (j->end - j->p < 4)
		return -EBADMSG;
	*v = 0;
	for (i = 0; i < 4; i++) {
		char c = *j->p++;

		*v <<= 4;
		if (c >= '0' && c <= '9')
			*v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			*v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			*v |= c - 'A' + 10;
		else
			return -EBADMSG;
	}
	return 0;
}

/* A \u escape (the "\u" read): a code point, surrogate pairs joined. */
static int json_escape_u(struct kvtier_json *j, uint32_t *cp)
{
	uint32_t lo;

	if (json_hex4(j, cp))
		return -EBADMSG;
	if (*cp >= 0xdc00 && *cp <= 0xdfff)
		return -EBADMSG;
	if (*cp < 0xd800 || *cp > 0xdbff)
		return 0;
	if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u')
		return -EBADMSG;
	j->p += 2;
	if (json_hex4(j, &lo) || lo < 0xdc00 || lo > 0xdfff)
		return -EBADMSG;
	*cp = 0x10000 + ((*cp - 0xd800) << 10) + (lo - 0xdc00);
	return 0;
}

static size_t utf8_put(uint32_t cp, char *u)
{
	if (cp < 0x80) {
		u[0] = cp;
		return 1;
	}
	if (cp < 0x800) {
		u[0] = 0xc0 | cp >> 6;
		u[1] = 0x80 | (cp & 0x3f);
		return 2;
	}
	if (cp < 0x10000) {
		u[0] = 0xe0 | cp >> 12;
		u[1] = 0x80 | (cp >> 6 & 0x3f);
		u[2] = 0x80 | (cp & 0x3f);
		return 3;
	}
	u[0] = 0xf0 | cp >> 18;
	u[1] = 0x80 | (cp >> 12 & 0x3f);
	u[2] = 0x80 | (cp >> 6 & 0x3f);
	u[3] = 0x80 | (cp & 0x3f);
	return 4;
}

/* One character of a string (the opening quote read); 0 at its end. */
static int json_char(struct kvtier_json *j, char u[4], size_t *n)
{
	static const char esc[] = "\"\"\\\\//b\bf\fn\nr\rt\t";
	unsigned char c;
	uint32_t cp;
	size_t i;

	if (j->p == j->end)
		return -EBADMSG;
	c = *j->p++;
	if (c == '"')
		return 0;
	if (c < 0x20)
		return -EBADMSG;
	*n = 1;
	u[0] = c;
	if (c != '\\')
		return 1;
	if (j->p == j->end)
		return -EBADMSG;
	c = *j->p++;
	if (c == 'u') {
		if (json_escape_u(j, &cp))
			return -EBADMSG;
		*n = utf8_put(cp, u);
		return 1;
	}
	for (i = 0; i + 1 < sizeof(esc); i += 2) {
		if (esc[i] == c) {
			u[0] = esc[i + 1];
			return 1;
		}
	}
	return -EBADMSG;
}

/*
 * A string, decoded into @out (@max bytes with its NUL: longer, or one
 * with a NUL, is -EBADMSG), or only checked when @out is NULL.
 */
static int json_string(struct kvtier_json *j, char *out, size_t max)
{
	size_t len = 0, n;
	char u[4];
	int ret;

	if (json_expect(j, '"'))
		return -EBADMSG;
	while ((ret = json_char(j, u, &n)) > 0) {
		if (!out)
			continue;
		if (len + n >= max || memchr(u, '\0', n))
			return -EBADMSG;
		memcpy(out + len, u, n);
		len += n;
	}
	if (ret)
		return ret;
	if (out)
		out[len] = '\0';
	return 0;
}

/* A non-negative integer: no sign, fraction, exponent or leading 0. */
static int json_u64(struct kvtier_json *j, uint64_t *v)
{
	json_ws(j);
	if (!json_digit(j))
		return -EBADMSG;
	*v = 0;
	if (*j->p == '0') {
		j->p++;
		if (json_digit(j))
			return -EBADMSG;
	}
	while (json_digit(j)) {
		if (__builtin_mul_overflow(*v, 10, v) ||
		    __builtin_add_overflow(*v, (uint64_t)(*j->p - '0'), v))
			return -EBADMSG;
		j->p++;
	}
	if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E'))
		return -EBADMSG;
	return 0;
}

/* An array of at most @max integers. */
static int json_u64_array(struct kvtier_json *j, uint64_t *v, uint32_t max,
			  uint32_t *n)
{
	int ret = json_open(j, '[', ']');

	*n = 0;
	while (ret > 0) {
		if (*n == max || json_u64(j, &v[*n]))
			return -EBADMSG;
		(*n)++;
		ret = json_more(j, ']');
	}
	return ret;
}

/* ---- the tensor table ------------------------------------------------- */

static const struct {
	const char *name;
	uint32_t size;
} kvtier_st_dtypes[] = {
	{ "BOOL", 1 }, { "U8", 1 }, { "I8", 1 },
	{ "F8_E5M2", 1 }, { "F8_E4M3", 1 }, { "F8_E8M0", 1 },
	{ "U16", 2 }, { "I16", 2 }, { "F16", 2 }, { "BF16", 2 },
	{ "U32", 4 }, { "I32", 4 }, { "F32", 4 },
	{ "U64", 8 }, { "I64", 8 }, { "F64", 8 },
};

static uint32_t kvtier_st_dtype_size(const char *dtype)
{
	size_t i;

	for (i = 0; i < sizeof(kvtier_st_dtypes) / sizeof(kvtier_st_dtypes[0]); i++)
		if (!strcmp(kvtier_st_dtypes[i].name, dtype))
			return kvtier_st_dtypes[i].size;
	return 0;
}

int32_t kvtier_st_name_index(const char *name, const char *tag)
{
	size_t tlen = strlen(tag);
	const char *s, *d;
	uint64_t v;

	for (s = strstr(name, tag); s; s = strstr(s + 1, tag)) {
		if (s != name && s[-1] != '.')
			continue;
		d = s + tlen;
		if (*d < '0' || *d > '9')
			continue;
		for (v = 0; *d >= '0' && *d <= '9' && v <= INT32_MAX; d++)
			v = v * 10 + (*d - '0');
		if (*d == '.' && v <= INT32_MAX)
			return v;
	}
	return -1;
}

int32_t kvtier_st_layer(const char *name)
{
	static const char * const tags[] = { "layers.", "layer.", "h.", "blk." };
	int32_t l;
	size_t i;

	for (i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
		l = kvtier_st_name_index(name, tags[i]);
		if (l >= 0)
			return l;
	}
	return -1;
}

/*
 * One tensor's entry: exactly "dtype", "shape" and "data_offsets", in any
 * order, checked against the data section of @data_size bytes. Its
 * @offset is the first byte's, from the data section.
 */
static int kvtier_st_tensor(struct kvtier_json *j, struct kvtier_tensor *t,
			    uint64_t data_size)
{
	enum { DTYPE = 1, SHAPE = 2, OFFSETS = 4 };
	uint64_t off[2], bytes;
	unsigned int seen = 0, bit;
	uint32_t i, n = 0, size;
	char key[16];
	int ret;

	ret = json_open(j, '{', '}');
	while (ret > 0) {
		if (json_string(j, key, sizeof(key)) || json_expect(j, ':'))
			return -EBADMSG;
		if (!strcmp(key, "dtype")) {
			bit = DTYPE;
			ret = json_string(j, t->dtype, sizeof(t->dtype));
		} else if (!strcmp(key, "shape")) {
			bit = SHAPE;
			ret = json_u64_array(j, t->shape, KVTIER_TENSOR_DIMS_MAX,
					     &t->ndim);
		} else if (!strcmp(key, "data_offsets")) {
			bit = OFFSETS;
			ret = json_u64_array(j, off, 2, &n);
		} else {
			return -EBADMSG;
		}
		if (ret || (seen & bit))
			return -EBADMSG;
		seen |= bit;
		ret = json_more(j, '}');
	}
	if (ret || seen != (DTYPE | SHAPE | OFFSETS) || n != 2)
		return -EBADMSG;

	size = kvtier_st_dtype_size(t->dtype);
	if (!size)
		return -EBADMSG;
	bytes = size;
	for (i = 0; i < t->ndim; i++)
		if (__builtin_mul_overflow(bytes, t->shape[i], &bytes))
			return -EBADMSG;
	if (off[0] > off[1] || off[1] > data_size || off[1] - off[0] != bytes)
		return -EBADMSG;
	t->offset = off[0];
	t->bytes = bytes;
	t->layer = kvtier_st_layer(t->name);
	t->expert = kvtier_st_name_index(t->name, "experts.");
	return 0;
}

/* "__metadata__": an object of strings, checked and skipped. */
static int kvtier_st_metadata(struct kvtier_json *j)
{
	int ret = json_open(j, '{', '}');

	while (ret > 0) {
		if (json_string(j, NULL, 0) || json_expect(j, ':') ||
		    json_string(j, NULL, 0))
			return -EBADMSG;
		ret = json_more(j, '}');
	}
	return ret;
}

int kvtier_st_grow(struct kvtier_st_table *tab, uint32_t *cap)
{
	struct kvtier_tensor *t;
	uint32_t n;

	if (tab->count < *cap)
		return 0;
	if (*cap >= UINT32_MAX / 2)
		return -EBADMSG;
	n = *cap ? 2 * *cap : 64;
	t = realloc(tab->t, (size_t)n * sizeof(*t));
	if (!t)
		return -ENOMEM;
	tab->t = t;
	*cap = n;
	return 0;
}

static int kvtier_st_cmp_offset(const void *a, const void *b)
{
	const struct kvtier_tensor *x = *(const struct kvtier_tensor * const *)a;
	const struct kvtier_tensor *y = *(const struct kvtier_tensor * const *)b;

	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	/* One array: its order is the table's. */
	return x < y ? -1 : x > y;
}

static int kvtier_st_cmp_name(const void *a, const void *b)
{
	const struct kvtier_tensor *x = *(const struct kvtier_tensor * const *)a;
	const struct kvtier_tensor *y = *(const struct kvtier_tensor * const *)b;

	return strcmp(x->name, y->name);
}

int kvtier_st_sort(struct kvtier_st_table *tab)
{
	struct kvtier_tensor **ref, *sorted;
	uint64_t end = 0;
	uint32_t i, n = tab->count;
	int ret = -ENOMEM;

	if (!n)
		return 0;
	ref = calloc(n, sizeof(*ref));
	sorted = calloc(n, sizeof(*sorted));
	if (!ref || !sorted)
		goto out_free;
	for (i = 0; i < n; i++)
		ref[i] = &tab->t[i];

	ret = -EBADMSG;
	qsort(ref, n, sizeof(*ref), kvtier_st_cmp_name);
	for (i = 1; i < n; i++)
		if (!strcmp(ref[i - 1]->name, ref[i]->name))
			goto out_free;

	qsort(ref, n, sizeof(*ref), kvtier_st_cmp_offset);
	for (i = 0; i < n; i++) {
		if (ref[i]->bytes) {
			if (ref[i]->offset < end)
				goto out_free;
			end = ref[i]->offset + ref[i]->bytes;
		}
		sorted[i] = *ref[i];
	}
	free(tab->t);
	tab->t = sorted;
	sorted = NULL;
	ret = 0;
out_free:
	free(sorted);
	free(ref);
	return ret;
}

uint64_t kvtier_st_digest(uint64_t h, const void *p, size_t len)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

uint64_t kvtier_st_header_digest(uint64_t file_size, const void *head,
				 size_t len)
{
	uint8_t size_le[8];
	uint64_t h;
	int i;

	for (i = 0; i < 8; i++)
		size_le[i] = file_size >> (8 * i);
	h = kvtier_st_digest(KVTIER_ST_DIGEST_INIT, size_le, 8);
	h = kvtier_st_digest(h, head, len);
	return h ? h : 1;
}

int kvtier_st_header_len(const uint8_t head[8], uint64_t file_size,
			 uint64_t *len)
{
	uint64_t n = 0;
	int i;

	for (i = 7; i >= 0; i--)
		n = n << 8 | head[i];
	if (!n || n > KVTIER_ST_HEADER_MAX || file_size < 8 ||
	    n > file_size - 8)
		return -EBADMSG;
	*len = n;
	return 0;
}

int kvtier_st_parse(const void *buf, size_t len, uint64_t file_size,
		    struct kvtier_st_table *tab)
{
	struct kvtier_json j;
	uint32_t cap = 0;
	bool meta = false;
	uint64_t n;
	int ret;

	memset(tab, 0, sizeof(*tab));
	if (len < 8 || kvtier_st_header_len(buf, file_size, &n) ||
	    len - 8 < n)
		return -EBADMSG;
	tab->header_len = n;
	tab->data_off = 8 + n;
	j.p = (const char *)buf + 8;
	j.end = j.p + n;

	ret = json_open(&j, '{', '}');
	while (ret > 0) {
		char name[KVTIER_TENSOR_NAME_MAX];
		struct kvtier_tensor *t;

		ret = -EBADMSG;
		if (json_string(&j, name, sizeof(name)) || !name[0] ||
		    json_expect(&j, ':'))
			goto out_free;
		if (!strcmp(name, "__metadata__")) {
			if (meta || kvtier_st_metadata(&j))
				goto out_free;
			meta = true;
		} else {
			ret = kvtier_st_grow(tab, &cap);
			if (ret)
				goto out_free;
			t = &tab->t[tab->count];
			memset(t, 0, sizeof(*t));
			strcpy(t->name, name);
			ret = kvtier_st_tensor(&j, t, file_size - tab->data_off);
			if (ret)
				goto out_free;
			tab->count++;
		}
		ret = json_more(&j, '}');
	}
	json_ws(&j);
	if (ret || j.p != j.end) {
		ret = -EBADMSG;
		goto out_free;
	}
	ret = kvtier_st_sort(tab);
	if (ret)
		goto out_free;

	tab->digest = kvtier_st_header_digest(file_size, buf, tab->data_off);
	return 0;

out_free:
	kvtier_st_free(tab);
	return ret;
}

void kvtier_st_free(struct kvtier_st_table *tab)
{
	free(tab->t);
	memset(tab, 0, sizeof(*tab));
}
