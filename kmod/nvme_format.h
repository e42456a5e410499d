/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The on-disk format of the NVMe tier, version 5.
 * Documentation/nvme-format.rst describes it; keep the two in step.
 *
 *   byte 0        superblock (struct kvt_disk_sb), one 4 KiB page
 *   byte 4096     pool table: KVT_POOL_SLOTS entries of struct kvt_disk_pool
 *   byte 1 MiB    regions of region_bytes each, written in order
 *
 * A region holds one or more segments, written one after the other from its
 * start. A segment starts with its summary (struct kvt_disk_region and one
 * struct kvt_disk_rec per block), padded to whole pages, followed by the
 * blocks' data, each starting on a page; the next segment, if any, starts
 * seg_pages after it and carries the same seq and nonce. All integers are
 * little endian; every structure carries a crc32c of itself.
 *
 * Version 1 had one segment per region (seg_page, seg_pages and nonce
 * zero); a reader takes such a region as one segment spanning it. Version 3
 * adds tombstones (KVT_REC_DROP), which versions 1 and 2 never wrote, and
 * writes segments in the order of (seq, seg_page). Version 4 adds the
 * blocks' records (struct kvt_disk_meta) after a summary's records, counted
 * by nr_meta, which older versions wrote as zero. Version 5 adds part
 * tables (KVT_REC_PARTS, struct kvt_disk_parts) and the pool's parts in
 * its pool table entry. Version 6 adds compressed copies (KVT_REC_Z,
 * struct kvt_disk_zhdr) and the pool's compressor in its pool table entry.
 */
#ifndef _KVTIER_NVME_FORMAT_H
#define _KVTIER_NVME_FORMAT_H

#include <linux/types.h>

#define KVT_FORMAT_VERSION	6
#define KVT_FORMAT_VERSION_MIN	1	/* still read */
#define KVT_SB_MAGIC		0x627372656974766bULL	/* "kvtiersb" */
#define KVT_REGION_MAGIC	0x677272656974766bULL	/* "kvtierrg" */
#define KVT_PARTS_MAGIC		0x747072656974766bULL	/* "kvtierpt" */
#define KVT_Z_MAGIC		0x7a74766bU		/* "kvtz" */
#define KVT_DISK_PAGE		4096U
#define KVT_POOL_TABLE_OFF	4096U
#define KVT_POOL_SLOTS		256U
#define KVT_DATA_OFF		0x100000U	/* 1 MiB */
#define KVT_REGION_KIB_DEFAULT	4096U
#define KVT_REGION_KIB_MIN	1024U
#define KVT_REGION_KIB_MAX	65536U

struct kvt_disk_sb {
	__le64 magic;
	__le32 version;
	__le32 flags;
	__u8 uuid[16];
	__le64 dev_bytes;
	__le64 region_bytes;
	__le32 nr_regions;
	__le32 pool_slots;
	__le64 pool_table_off;
	__le64 data_off;
	__le64 generation;	/* incremented at every attach */
	__le32 page_bytes;
	__le32 crc;		/* of the struct, this field zero */
};

struct kvt_disk_pool {
	__le64 id;		/* 0: free slot */
	__u8 name[64];
	__le64 block_size;
	__le32 capacity;
	__le32 dram_blocks;
	__le32 mode;
	__le32 uid;
	__le32 gid;
	__le32 flags;
	__le32 parts;		/* version 5; 0 before */
	__u8 compress;		/* version 6, KVTIER_COMPRESS_*; 0 before */
	__u8 compress_flags;	/* version 6, KVTIER_COMPRESS_SHUFFLE2 */
	__u8 reserved[142];
	__le32 crc;		/* of the struct, this field zero */
};

/*
 * A record: a block's copy, or with KVT_REC_DROP a tombstone. A tombstone
 * has no data (pages 0, crc 0); page is the dropped copy's device page
 * (from the device's start, not the region's) and drop_seq the seq of its
 * region: at attach, once every record is replayed, it removes the key if
 * the key's copy on this device is that copy or an older one.
 *
 * A compressed copy (KVT_REC_Z, version 6) stores z.bytes bytes in its
 * pages (fewer than a raw copy's), which crc covers (keyed); z.dcrc is
 * the crc32c, from 0, of the block they decompress to.
 */
struct kvt_disk_rec {
	__le64 pool_id;
	__le64 key[2];
	__le32 page;		/* first page of the data, from region start */
	__le32 pages;
	__le32 crc;		/* keyed crc32c of the data, see kvt_rec_seed */
	__le32 flags;		/* KVT_REC_* */
	union {
		__le64 drop_seq;	/* tombstone: the dropped copy's seq */
		struct {
			__le32 bytes;	/* KVT_REC_Z: stored bytes */
			__le32 dcrc;	/* KVT_REC_Z: the block's crc */
		} z;
	};
};

#define KVT_REC_DROP		0x1U	/* a tombstone (version 3) */
#define KVT_REC_PARTS		0x2U	/* a part table at page - 1 (version 5) */
#define KVT_REC_Z		0x4U	/* a compressed copy (version 6) */

/*
 * The stored bytes of a compressed copy (version 6) start with this
 * header: the block cut in frames of frame_bytes (the last may be
 * shorter), each compressed on its own, and the stored length of each; the
 * frames' bytes follow one after the other. A frame with KVT_Z_STORED is
 * stored as it is. With KVTIER_COMPRESS_SHUFFLE2 in flags, a frame's
 * bytes are those of its 16-bit elements in two planes, the low bytes,
 * then the high ones, before compression.
 */
struct kvt_disk_zhdr {
	__le32 magic;		/* KVT_Z_MAGIC */
	__u8 algo;		/* KVTIER_COMPRESS_* */
	__u8 flags;		/* KVTIER_COMPRESS_SHUFFLE2 */
	__le16 frames;
	__le32 frame_bytes;
	__le32 flen[];		/* stored bytes of each frame */
};

#define KVT_Z_STORED		0x80000000U

/*
 * A copy's part table (version 5), one page just before its data, written
 * for pools with parts: the block's pages cut in runs of part_pages (the
 * last may be shorter), and the crc32c of each. A reader of some parts
 * reads the table and those parts only. The writer writes a table only
 * when its parts' crcs combine into dcrc, the crc of the whole block; a
 * reader trusts a table that names the block (pool_id, key, and dcrc equal
 * to the crc it knows from the record) and whose crc verifies: a stale,
 * misplaced or torn table never verifies a part.
 */
struct kvt_disk_parts {
	__le64 magic;		/* KVT_PARTS_MAGIC */
	__le64 pool_id;
	__le64 key[2];
	__le32 nr;		/* parts */
	__le32 part_pages;
	__le32 dcrc;		/* crc32c of the block's bytes, from 0 */
	__le32 crc;		/* of the struct and pcrc[nr], this field zero */
	__le32 pcrc[];		/* crc32c of each part's bytes, from 0 */
};

#define KVT_DISK_META_MAX	64	/* KVTIER_META_MAX */

/*
 * The runtime's record of a block (struct kvtier_meta), version 4: the
 * records of a summary's blocks that have one follow its records (block
 * copies and tombstones), in the order of their blocks' records, covered
 * by the summary's crc.
 */
struct kvt_disk_meta {
	__le32 rec;		/* index of the block's record in recs[] */
	__le32 len;		/* bytes of data: 1..KVT_DISK_META_MAX */
	__u8 data[KVT_DISK_META_MAX];
};

/* The summary of one segment; the first segment's is at the region's start. */
struct kvt_disk_region {
	__le64 magic;
	__le64 seq;		/* write order, from 1, never reused */
	__u8 uuid[16];		/* the store's: older formats are ignored */
	__le32 nr;		/* records */
	__le32 summary_bytes;
	__le32 crc;		/* of summary_bytes from magic, this field zero */
	__le32 seg_page;	/* where this segment starts, from region start */
	__le32 seg_pages;	/* its length: summary and data; 0 = the region */
	__le32 nr_meta;		/* struct kvt_disk_meta after recs[nr] */
	__le64 nonce;		/* random per region write, same in each segment */
	struct kvt_disk_rec recs[];
};

#endif /* _KVTIER_NVME_FORMAT_H */
