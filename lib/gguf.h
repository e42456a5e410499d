/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libkvtier internals: the GGUF tensor table (gguf.c).
 *
 * Pure, as safetensors.c: it reads only the bytes it is given, and fills
 * the same struct kvtier_st_table, so the weight pool's layout is the
 * format's business no further. Not exported; the library's sources define
 * KVTIER_LIB_INTERNAL, its tests KVTIER_LIB_TESTS, to include it.
 */
#if !defined(KVTIER_LIB_INTERNAL) && !defined(KVTIER_LIB_TESTS)
#error "gguf.h is private to libkvtier; include <kvtier.h> instead"
#endif

#ifndef KVTIER_GGUF_H
#define KVTIER_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "safetensors.h"

/* The most entries a table holds, stacked experts' slices counted. */
#define KVTIER_GGUF_ENTRIES_MAX		(1U << 20)
/* The deepest arrays of arrays a metadata value may nest. */
#define KVTIER_GGUF_DEPTH_MAX		8

/**
 * kvtier_gguf_magic() - whether a file is GGUF
 * @head:	the file's first 4 bytes.
 *
 * Return: true when they are "GGUF".
 */
bool kvtier_gguf_magic(const void *head);

/**
 * kvtier_gguf_parse() - parse and check a GGUF header
 * @buf:	the file's first @len bytes.
 * @len:	bytes in @buf: any prefix of the file; the header must end
 *		within it (GGUF gives no header length: read a prefix, and more
 *		on -ENODATA).
 * @file_size:	the file's size.
 * @tab:	out: the table; kvtier_st_free() it.
 *
 * GGUF v2 or v3, little-endian: the magic, the version, the tensor and
 * metadata counts, the metadata (checked, skipped but for a UINT32
 * "general.alignment", once, a power of two, default 32), the tensor
 * infos. Keys are 1 or more bytes, string values 0 or more, bools 0 or 1;
 * arrays nest at most KVTIER_GGUF_DEPTH_MAX deep; a count is refused at
 * once when the bytes left could not hold it. The
 * header (through the tensor infos) is at most KVTIER_ST_HEADER_MAX bytes;
 * @tab->header_len is its length, @tab->data_off that rounded up to the
 * alignment, and the data section runs from there to the end of the file.
 * A tensor has 1..4 dimensions, ne[0] a multiple of its ggml type's block,
 * an offset that is a multiple of the alignment, a range in the data
 * section that overlaps no other (empty ones overlap nothing), a name of
 * 1..KVTIER_TENSOR_NAME_MAX-1 bytes, unique.
 *
 * Each entry's dtype is its ggml type's name ("Q4_K"), its shape ne[]
 * reversed (outermost first, as safetensors'). A stacked MoE tensor, one
 * with a name component ending in "_exps" ("blk.3.ffn_up_exps.weight"),
 * two or more dimensions and bytes, is n = ne[n_dims - 1] entries, one an
 * expert: "<name>[e]" (it must fit, and be unique), expert e, the shape
 * without that dimension, its bytes / n at its offset + e * bytes / n.
 * At most KVTIER_GGUF_ENTRIES_MAX entries, in data order.
 *
 * Return: 0; -ENODATA when the header runs past @len, and @len is short of
 * both @file_size and KVTIER_ST_HEADER_MAX (more bytes may complete it);
 * -EBADMSG for anything else wrong; -ENOMEM.
 */
int kvtier_gguf_parse(const void *buf, size_t len, uint64_t file_size,
		      struct kvtier_st_table *tab);

#endif /* KVTIER_GGUF_H */
