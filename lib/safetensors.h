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
 * @header_len:	N, the JSON's length in bytes.
 * @data_off:	the file offset of the data section, 8 + N.
 * @digest:	FNV-1a 64 of the file's size (8 bytes, little-endian) and
 *		of the 8 + N header bytes; never 0.
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

#endif /* KVTIER_SAFETENSORS_H */
