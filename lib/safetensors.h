/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libkvtier internals: the safetensors tensor table (safetensors.c).
 *
 * Pure: it reads only the bytes it is given, so kvt-test exercises it
 * without the module. Not exported (libkvtier.map ends in local: *); the
 * library's sources define KVTIER_LIB_INTERNAL, its tests
 * KVTIER_LIB_TESTS, to include it.
 */
#if !defined(KVTIER_LIB_INTERNAL) && !defined(KVTIER_LIB_TESTS)
#error "safetensors.h is private to libkvtier; include <kvtier.h> instead"
#endif

#ifndef KVTIER_SAFETENSORS_H
#define KVTIER_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "kvtier.h"

/* The longest tensor table read: safetensors' own bound. */
#define KVTIER_ST_HEADER_MAX	(100ULL << 20)

/**
 * struct kvtier_st_table - a parsed tensor table
 * @header_len:	safetensors: N, the JSON's length in bytes; GGUF: the
 *		header's, through the tensor infos.
 * @data_off:	the file offset of the data section: 8 + N; GGUF:
 *		@header_len rounded up to the alignment.
 * @digest:	FNV-1a 64 of the file's size (8 bytes, little-endian) and
 *		of the header bytes (safetensors: the 8 + N; GGUF: the
 *		@header_len); never 0.
 * @count:	tensors in @t.
 * @t:		the tensors by ascending data offset (the table's order
 *		among equal ones); each @offset is the tensor's first byte
 *		relative to @data_off.
 */
struct kvtier_st_table {
	uint64_t header_len;
	uint64_t data_off;
	uint64_t digest;
	uint32_t count;
	struct kvtier_tensor *t;
};

/**
 * kvtier_st_header_len() - the JSON length a file's first 8 bytes give
 * @head:	the file's first 8 bytes.
 * @file_size:	the file's size.
 * @len:	out: N.
 *
 * Return: 0; -EBADMSG when N is 0, above KVTIER_ST_HEADER_MAX or past
 * the end of the file.
 */
int kvtier_st_header_len(const uint8_t head[8], uint64_t file_size,
			 uint64_t *len);

/**
 * kvtier_st_parse() - parse and check a safetensors header
 * @buf:	the file's first @len bytes: the length, then the JSON.
 * @len:	bytes in @buf, 8 + N.
 * @file_size:	the file's size (the data section runs to its end).
 * @tab:	out: the table; kvtier_st_free() it.
 *
 * The JSON must be one object of tensors by name, each exactly
 * {"dtype", "shape", "data_offsets"}, and at most one "__metadata__"
 * object of strings; numbers are non-negative integers; trailing white
 * space pads it. A tensor's dtype is one of safetensors' byte-sized types,
 * its byte count is its shape's product times the dtype's size, its range
 * lies in the data section and overlaps no other (empty ones overlap
 * nothing), its name is 1..KVTIER_TENSOR_NAME_MAX-1 bytes and unique.
 *
 * Return: 0; -EBADMSG for anything else; -ENOMEM.
 */
int kvtier_st_parse(const void *buf, size_t len, uint64_t file_size,
		    struct kvtier_st_table *tab);

/**
 * kvtier_st_free() - free a table's tensors
 * @tab:	the table (kvtier_st_parse()); its fields are zeroed.
 */
void kvtier_st_free(struct kvtier_st_table *tab);

/*
 * Shared with gguf.c.
 */

/**
 * kvtier_st_name_index() - the number a tensor name gives after a tag
 * @name:	the name.
 * @tag:	"experts.", "layers.", ...
 *
 * Return: the number after @tag (at the start of @name or after a '.',
 * then decimal digits, then a '.'), or -1.
 */
int32_t kvtier_st_name_index(const char *name, const char *tag);

/**
 * kvtier_st_layer() - the layer a tensor name names
 * @name:	the name.
 *
 * Return: the number after "layers.", "layer.", "h." or "blk.", or -1.
 */
int32_t kvtier_st_layer(const char *name);

/**
 * kvtier_st_grow() - room in a table for one more tensor
 * @tab:	the table (@tab->t realloc()ed).
 * @cap:	in/out: the tensors @tab->t has room for.
 *
 * Return: 0; -EBADMSG past UINT32_MAX / 2 tensors; -ENOMEM.
 */
int kvtier_st_grow(struct kvtier_st_table *tab, uint32_t *cap);

/**
 * kvtier_st_sort() - put a table in data order, and check it
 * @tab:	the table, its @t in table order.
 *
 * Sorts the tensors by offset (the table's order among equal ones).
 *
 * Return: 0; -EBADMSG when two names are the same or two ranges with
 * bytes overlap; -ENOMEM.
 */
int kvtier_st_sort(struct kvtier_st_table *tab);

/* FNV-1a 64's offset basis: where a digest starts. */
#define KVTIER_ST_DIGEST_INIT	0xcbf29ce484222325ULL

/**
 * kvtier_st_digest() - FNV-1a 64 of @len bytes, continued from @h
 * @h:		KVTIER_ST_DIGEST_INIT, or a digest to go on from.
 * @p:		the bytes.
 * @len:	how many.
 *
 * Return: the digest (may be 0: a key maps 0 to 1).
 */
uint64_t kvtier_st_digest(uint64_t h, const void *p, size_t len);

/**
 * kvtier_st_header_digest() - a table's digest
 * @file_size:	the file's size.
 * @head:	the header's bytes.
 * @len:	how many.
 *
 * Return: FNV-1a 64 of @file_size (8 bytes, little-endian) and of @head;
 * 1 for 0.
 */
uint64_t kvtier_st_header_digest(uint64_t file_size, const void *head,
				 size_t len);

/**
 * kvtier_weights_table() - read and check a model file's tensor table
 * @fd:		the file, open for reading.
 * @size:	out: its size.
 * @tab:	out: the table; kvtier_st_free() it.
 *
 * Not pure: weights.c's, for kvtier_weights_open() and the tests. A GGUF
 * file (kvtier_gguf_magic()) is read by kvtier_gguf_parse(), in longer
 * prefixes while it asks for more; any other as safetensors. The table's
 * digest goes on over the file's identity (device, inode, mtime), so that
 * another file, or this one changed, keys another pool.
 *
 * Return: 0; -EBADMSG for a malformed file; -EINVAL for one that is not
 * regular; -ENOMEM; the -errno of fstat(2) or pread(2).
 */
int kvtier_weights_table(int fd, uint64_t *size, struct kvtier_st_table *tab);

#endif /* KVTIER_SAFETENSORS_H */
