// SPDX-License-Identifier: GPL-2.0
/*
 * nvme_tool: the helper of the kvtier NVMe persistence scripts
 * (nvme-persist.sh, nvme-crash.sh). Blocks hold the deterministic pattern of
 * kst_fill() for key (NVT_TOOL_K0, n) and a generation, so any run can tell
 * exact bytes from wrong ones without remembering what it wrote.
 *
 *   nvme_tool attach DEV [format [REGION_KIB]]
 *   nvme_tool detach
 *   nvme_tool nstat
 *   nvme_tool create POOL BS CAP DRAM [MODE]     create, or open if it exists
 *   nvme_tool put POOL FIRST COUNT [GEN]
 *   nvme_tool put-meta POOL FIRST COUNT [GEN]
 *       PUT, each block with its record (KVTIER_F_META): 0..64 bytes
 *       derived from the key and the generation
 *   nvme_tool sync POOL
 *   nvme_tool stat POOL                          one line of name=value
 *   nvme_tool census POOL FIRST COUNT [FIRST COUNT...]
 *       the census (KVTIER_IOC_CENSUS) lists exactly the keys of the
 *       ranges, each once; prints "census POOL: N keys, N on NVMe"
 *   nvme_tool verify POOL FIRST COUNT [GEN] [MISS...]
 *       every key exact, except the MISS keys, which must be misses
 *   nvme_tool verify-meta POOL FIRST COUNT [GEN]
 *       every key exact, with the record put-meta gave it
 *   nvme_tool drop POOL FIRST COUNT
 *   nvme_tool absent POOL FIRST COUNT            every key a miss
 *   nvme_tool writer POOL LOG [SYNC_EVERY [KEYS [DRAM]]]
 *       PUT (REPLACE) keys 0..KEYS-1 (16 KiB blocks) over and over, pass p
 *       writing generation p, into a pool of KEYS + 64 addresses with DRAM
 *       of them in DRAM, and SYNC every SYNC_EVERY batches of 16 (defaults
 *       8, 4096, 1024); after each SYNC that returns 0, append "PASS UPTO"
 *       to LOG (and fsync it): the pass and the keys of it written before
 *       the SYNC started. First, keys KEYS..KEYS+15 are PUT, synced,
 *       dropped and synced: check wants them absent. Runs until killed;
 *       creates LOG.started after the first acknowledged SYNC.
 *   nvme_tool check POOL PASS UPTO KEYS MAXGEN
 *       after a crash, with the last line of the writer's LOG: every
 *       acknowledged block (of keys 0..KEYS-1) there in its acknowledged
 *       generation or a newer one, every block present exact and of a
 *       generation 1..MAXGEN (PASS 0: nothing acknowledged)
 *   nvme_tool destroy POOL
 *   nvme_tool exists POOL                        exit 0 if it opens, 1 if not
 *   nvme_tool find FILE KEY [POOL]               newest copy of a key (of a
 *       pool) on a device or backing file: "DATA_OFFSET PAGES COPIES"
 *   nvme_tool flip FILE OFFSET [MASK]            xor one byte
 *
 * With KVTIER_TOOL_COMPRESS=lz4 (or lz4hc, zstd) in the environment, the
 * writer's pool compresses its NVMe copies (KVTIER_F_COMPRESS), and the
 * blocks of any pool that compresses hold the pattern in the first half
 * of each 4 KiB page and a copy of it in the second, so that they do
 * compress (and read back checked alike).
 *
 * Exit status 0 when the command did what it says, 1 when a check failed,
 * 2 on usage or setup errors.
 */
/* kselftest_harness.h defines functions a program like this does not use. */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "nvme_test.h"

#define NVT_TOOL_K0	0x6b7674746f6f6c00ULL	/* "kvttool" */
#define BATCH		16
#define WRITER_BS	(16 * KST_KIB)

static const char *prog = "nvme_tool";


static void __attribute__((noreturn)) die(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

/* The algorithm KVTIER_TOOL_COMPRESS names (KVTIER_COMPRESS_NONE if unset). */
static __u8 tool_compress(void)
{
	static const char * const names[] = {
		[KVTIER_COMPRESS_LZ4] = "lz4",
		[KVTIER_COMPRESS_LZ4HC] = "lz4hc",
		[KVTIER_COMPRESS_ZSTD] = "zstd",
	};
	const char *env = getenv("KVTIER_TOOL_COMPRESS");
	__u8 i;

	if (!env || !*env)
		return KVTIER_COMPRESS_NONE;
	for (i = KVTIER_COMPRESS_LZ4; i <= KVTIER_COMPRESS_MAX; i++)
		if (!strcmp(env, names[i]))
			return i;
	die(2, "KVTIER_TOOL_COMPRESS=%s: not lz4, lz4hc or zstd", env);
}

/* A pool's blocks are compressible (its STAT says it compresses). */
static bool tool_z(int pfd)
{
	struct kvtier_pool_stat st;

	return !kst_stat(pfd, &st) && st.compress;
}

/* kst_fill(), each page's second half then a copy of its first (@z). */
static void tool_fill(void *buf, __u64 bs, __u64 k, __u64 gen, bool z)
{
	__u64 p;

	kst_fill(buf, bs, NVT_TOOL_K0, k, gen);
	for (p = 0; z && p < bs; p += KST_PAGE)
		memcpy((char *)buf + p + KST_PAGE / 2, (char *)buf + p,
		       KST_PAGE / 2);
}

/* kst_check() of a block tool_fill() made: -1 if right, else >= 0. */
static long tool_check(const void *buf, __u64 bs, __u64 k, __u64 *gen,
		       bool z)
{
	__u64 g;
	long bad;
	void *want;

	if (!z)
		return kst_check(buf, bs, NVT_TOOL_K0, k, gen);
	memcpy(&g, buf, sizeof(g));
	want = malloc(bs);
	if (!want)
		die(2, "no memory");
	tool_fill(want, bs, k, g, true);
	bad = memcmp(buf, want, bs) ? 0 : -1;
	free(want);
	if (bad == -1 && gen)
		*gen = g;
	return bad;
}

static unsigned long long num(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end)
		die(2, "not a number: %s", s);
	return v;
}

static int ctl_open(void)
{
	int ctl = kst_ctl_open();

	if (ctl < 0)
		die(2, "open %s: %s", KST_DEV, strerror(-ctl));
	return ctl;
}

static int pool_open(int ctl, const char *name)
{
	int pfd = kst_pool_open(ctl, name, 0);

	if (pfd < 0)
		die(2, "open pool %s: %s", name, strerror(-pfd));
	return pfd;
}

static __u64 pool_bs(int pfd)
{
	struct kvtier_pool_stat st;
	int ret = kst_stat(pfd, &st);

	if (ret)
		die(2, "STAT: %s", strerror(-ret));
	return st.block_size;
}

/* The record of key @k, generation @gen (put-meta, verify-meta). */
static void key_meta(struct kvtier_meta *m, __u64 k, __u64 gen)
{
	__u64 seed = kst_mix(k ^ kst_mix(gen));
	unsigned int i;

	memset(m, 0, sizeof(*m));
	m->len = (__u32)((k * 7 + gen) % (KVTIER_META_MAX + 1));
	for (i = 0; i < m->len; i++)
		m->data[i] = (__u8)(kst_mix(seed + i) >> 23);
}

/*
 * PUT keys first..first+count-1 in batches, with their records if @meta;
 * 0 or the first failure.
 */
static int put_keys(int pfd, __u64 bs, __u64 first, __u64 count, __u64 gen,
		    bool meta)
{
	struct kvtier_meta m[BATCH];
	struct kvtier_block b[BATCH];
	char *bufs = kst_alloc(BATCH * bs);
	__u64 k, n, i;
	__u32 done;
	int ret = 0;
	bool z;

	if (!bufs)
		return -ENOMEM;
	z = tool_z(pfd);
	for (k = first; k < first + count && !ret; k += n) {
		n = first + count - k < BATCH ? first + count - k : BATCH;
		for (i = 0; i < n; i++) {
			tool_fill(bufs + i * bs, bs, k + i, gen, z);
			kst_blk(&b[i], NVT_TOOL_K0, k + i, bufs + i * bs);
			key_meta(&m[i], k + i, gen);
		}
		ret = kst_batch_meta(pfd, KVTIER_IOC_PUT, b, n, 0,
				     meta ? m : NULL, &done);
		for (i = 0; !ret && i < n; i++)
			if (b[i].status)
				ret = b[i].status;
	}
	kst_free(bufs, BATCH * bs);
	return ret;
}

/* GET one key: 0 exact (gen in *gen), -EILSEQ wrong bytes, or -errno. */
static int get_key(int pfd, void *buf, __u64 bs, __u64 k, __u64 *gen)
{
	long bad;
	int ret;

	memset(buf, 0x5a, bs);
	ret = kst_get1(pfd, NVT_TOOL_K0, k, buf, NULL);
	if (ret)
		return ret;
	bad = tool_check(buf, bs, k, gen, tool_z(pfd));
	return bad == -1 ? 0 : -EILSEQ;
}

static int cmd_attach(int argc, char **argv)
{
	__u32 flags = 0, kib = 0;
	int ret;

	if (argc < 1)
		die(2, "attach DEV [format [REGION_KIB]]");
	if (argc >= 2) {
		if (strcmp(argv[1], "format"))
			die(2, "attach: expected 'format', not %s", argv[1]);
		flags = KVTIER_NVME_FORMAT;
	}
	if (argc >= 3)
		kib = num(argv[2]);
	ret = nvt_attach(ctl_open(), argv[0], flags, kib);
	if (ret)
		die(1, "attach %s: %s", argv[0], strerror(-ret));
	return 0;
}

static int cmd_detach(void)
{
	int ret = nvt_detach(ctl_open());

	if (ret)
		die(1, "detach: %s", strerror(-ret));
	return 0;
}

static int cmd_nstat(void)
{
	struct kvtier_nvme_stat ns;
	int ret = nvt_nstat(ctl_open(), &ns), i;

	if (ret)
		die(1, "NVME_STAT: %s", strerror(-ret));
	printf("attached=%u dev_bytes=%llu region_bytes=%llu nr_regions=%u free_regions=%u bytes_written=%llu bytes_read=%llu reclaimed=%llu lost_blocks=%llu io_errors=%llu attach_us=%llu uuid=",
	       ns.attached, (unsigned long long)ns.dev_bytes,
	       (unsigned long long)ns.region_bytes, ns.nr_regions,
	       ns.free_regions, (unsigned long long)ns.bytes_written,
	       (unsigned long long)ns.bytes_read,
	       (unsigned long long)ns.reclaimed,
	       (unsigned long long)ns.lost_blocks,
	       (unsigned long long)ns.io_errors,
	       (unsigned long long)ns.attach_ns / 1000);
	for (i = 0; i < 16; i++)
		printf("%02x", ns.uuid[i]);
	printf("\n");
	return 0;
}

static int cmd_create(int argc, char **argv)
{
	struct kvtier_pool_create c;
	int ctl = ctl_open(), ret;

	if (argc < 4)
		die(2, "create POOL BS CAP DRAM [MODE]");
	kst_create_init(&c, argv[0], num(argv[1]), num(argv[2]), num(argv[3]));
	if (argc >= 5)
		c.mode = num(argv[4]);
	c.flags = KVTIER_POOL_OPEN_EXISTING;
	ret = kst_create(ctl, &c);
	if (ret < 0)
		die(1, "create %s: %s", argv[0], strerror(-ret));
	return 0;
}

/* put POOL FIRST COUNT [GEN], and put-meta: the same with records. */
static int cmd_put(int argc, char **argv, bool meta)
{
	int pfd, ret;

	if (argc < 3)
		die(2, "put%s POOL FIRST COUNT [GEN]", meta ? "-meta" : "");
	pfd = pool_open(ctl_open(), argv[0]);
	ret = put_keys(pfd, pool_bs(pfd), num(argv[1]), num(argv[2]),
		       argc >= 4 ? num(argv[3]) : 1, meta);
	if (ret)
		die(1, "put: %s", strerror(-ret));
	return 0;
}

static int cmd_verify_meta(int argc, char **argv)
{
	unsigned long long first, count, gen, k, exact = 0, bad = 0;
	struct kvtier_meta got, want;
	struct kvtier_block b;
	__u64 bs, g;
	__u32 done;
	char *buf;
	int pfd, ret;

	if (argc < 3)
		die(2, "verify-meta POOL FIRST COUNT [GEN]");
	pfd = pool_open(ctl_open(), argv[0]);
	first = num(argv[1]);
	count = num(argv[2]);
	gen = argc >= 4 ? num(argv[3]) : 1;
	bs = pool_bs(pfd);
	buf = kst_alloc(bs);
	if (!buf)
		die(2, "no memory");
	for (k = first; k < first + count; k++) {
		const char *why = NULL;

		memset(buf, 0x5a, bs);
		memset(&got, 0xa5, sizeof(got));
		kst_blk(&b, NVT_TOOL_K0, k, buf);
		ret = kst_batch_meta(pfd, KVTIER_IOC_GET, &b, 1, 0, &got, &done);
		if (!ret)
			ret = b.status;
		key_meta(&want, k, gen);
		if (ret)
			why = strerror(-ret);
		else if (tool_check(buf, bs, k, &g, tool_z(pfd)) != -1 ||
			 g != gen)
			why = "WRONG BYTES";
		else if (memcmp(&got, &want, sizeof(got)))
			why = "WRONG RECORD";
		if (!why)
			exact++;
		else if (++bad <= 10)
			printf("verify-meta %s: key %llu: %s (record len %u, want %u)\n",
			       argv[0], k, why, got.len, want.len);
	}
	printf("verify-meta %s: %llu exact with their records, %llu not\n",
	       argv[0], exact, bad);
	kst_free(buf, bs);
	return bad ? 1 : 0;
}

static int cmd_drop(int argc, char **argv)
{
	unsigned long long k, first, count;
	int pfd, ret;

	if (argc < 3)
		die(2, "drop POOL FIRST COUNT");
	pfd = pool_open(ctl_open(), argv[0]);
	first = num(argv[1]);
	count = num(argv[2]);
	for (k = first; k < first + count; k++) {
		ret = kst_drop1(pfd, NVT_TOOL_K0, k);
		if (ret)
			die(1, "drop key %llu: %s", k, strerror(-ret));
	}
	return 0;
}

static int cmd_absent(int argc, char **argv)
{
	unsigned long long k, first, count, bad = 0;
	__u64 bs, got;
	char *buf;
	int pfd, ret;

	if (argc < 3)
		die(2, "absent POOL FIRST COUNT");
	pfd = pool_open(ctl_open(), argv[0]);
	first = num(argv[1]);
	count = num(argv[2]);
	bs = pool_bs(pfd);
	buf = kst_alloc(bs);
	if (!buf)
		die(2, "no memory");
	for (k = first; k < first + count; k++) {
		ret = get_key(pfd, buf, bs, k, &got);
		if (ret != -ENOENT && ++bad <= 10)
			printf("absent %s: key %llu: %s (want a miss)\n", argv[0],
			       k, ret == -EILSEQ ? "WRONG BYTES" :
			       ret ? strerror(-ret) : "exact");
	}
	printf("absent %s: %llu of %llu keys present\n", argv[0], bad, count);
	kst_free(buf, bs);
	return bad ? 1 : 0;
}

static int cmd_sync(int argc, char **argv)
{
	__u64 written = 0;
	int pfd, ret;

	if (argc < 1)
		die(2, "sync POOL");
	pfd = pool_open(ctl_open(), argv[0]);
	ret = nvt_sync(pfd, &written);
	if (ret)
		die(1, "SYNC %s: %s", argv[0], strerror(-ret));
	printf("written=%llu\n", (unsigned long long)written);
	return 0;
}

static int cmd_stat(int argc, char **argv)
{
	struct kvtier_pool_stat st;
	int pfd, ret;

	if (argc < 1)
		die(2, "stat POOL");
	pfd = pool_open(ctl_open(), argv[0]);
	ret = kst_stat(pfd, &st);
	if (ret)
		die(1, "STAT: %s", strerror(-ret));
	printf("block_size=%llu capacity=%u dram_blocks=%u mode=%o uid=%u gid=%u resident_dram=%llu resident_nvme=%llu dirty=%llu demotions=%llu promotions=%llu bad_reads=%llu misses=%llu meta_bytes=%llu\n",
	       (unsigned long long)st.block_size, st.capacity, st.dram_blocks,
	       st.mode, st.uid, st.gid,
	       (unsigned long long)st.resident[KVTIER_TIER_DRAM],
	       (unsigned long long)st.resident[KVTIER_TIER_NVME],
	       (unsigned long long)st.dirty, (unsigned long long)st.demotions,
	       (unsigned long long)st.promotions,
	       (unsigned long long)st.bad_reads, (unsigned long long)st.misses,
	       (unsigned long long)st.meta_bytes);
	return 0;
}

static int cmd_census(int argc, char **argv)
{
	struct kvtier_census_entry ent[256];
	__u64 cursor = 0, listed = 0, nvme = 0, want = 0, k;
	unsigned long long bad = 0;
	struct kvtier_census c;
	unsigned char *seen;
	int pfd, i, j;

	if (argc < 3 || !(argc % 2))
		die(2, "census POOL FIRST COUNT [FIRST COUNT...]");
	pfd = pool_open(ctl_open(), argv[0]);
	seen = calloc(KVTIER_CAPACITY_MAX, 1);
	if (!seen)
		die(2, "no memory");
	for (i = 1; i < argc; i += 2)
		for (k = num(argv[i]); k < num(argv[i]) + num(argv[i + 1]); k++)
			if (k < KVTIER_CAPACITY_MAX && !seen[k]++)
				want++;
	do {
		memset(&c, 0, sizeof(c));
		c.entries = (__u64)(uintptr_t)ent;
		c.count = 256;
		c.cursor = cursor;
		if (kst_ioctl(pfd, KVTIER_IOC_CENSUS, &c))
			die(1, "CENSUS %s: %s", argv[0], strerror(errno));
		for (j = 0; j < (int)c.done; j++) {
			k = ent[j].key[1];
			listed++;
			nvme += ent[j].tier == KVTIER_TIER_NVME;
			if (ent[j].key[0] != NVT_TOOL_K0 ||
			    k >= KVTIER_CAPACITY_MAX || seen[k] != 1) {
				printf("census %s: key %llu not wanted, or twice\n",
				       argv[0], (unsigned long long)k);
				bad++;
				continue;
			}
			seen[k] = 2;
		}
		cursor = c.cursor;
	} while (cursor != KVTIER_ADDR_NONE);
	free(seen);
	printf("census %s: %llu keys, %llu on NVMe\n", argv[0],
	       (unsigned long long)listed, (unsigned long long)nvme);
	return bad || listed != want ? 1 : 0;
}

static int cmd_verify(int argc, char **argv)
{
	unsigned long long first, count, gen, k, exact = 0, miss = 0, bad = 0;
	__u64 bs, got;
	char *buf;
	int pfd, ret, i;

	if (argc < 3)
		die(2, "verify POOL FIRST COUNT [GEN] [MISS...]");
	pfd = pool_open(ctl_open(), argv[0]);
	first = num(argv[1]);
	count = num(argv[2]);
	gen = argc >= 4 ? num(argv[3]) : 1;
	bs = pool_bs(pfd);
	buf = kst_alloc(bs);
	if (!buf)
		die(2, "no memory");
	for (k = first; k < first + count; k++) {
		bool want_miss = false;

		for (i = 4; i < argc; i++)
			if (num(argv[i]) == k)
				want_miss = true;
		ret = get_key(pfd, buf, bs, k, &got);
		if (!ret && got != gen)
			ret = -EILSEQ;
		if (ret == -ENOENT)
			miss++;
		else if (!ret)
			exact++;
		if ((want_miss ? ret != -ENOENT : ret != 0) && ++bad <= 10) {
			printf("verify %s: key %llu: %s (want %s)\n", argv[0], k,
			       ret == -EILSEQ ? "WRONG BYTES" :
			       ret ? strerror(-ret) : "exact",
			       want_miss ? "a miss" : "exact");
		}
	}
	printf("verify %s: %llu exact, %llu miss, %llu unexpected\n", argv[0],
	       exact, miss, bad);
	kst_free(buf, bs);
	return bad ? 1 : 0;
}

/* PUT keys first..first+count-1 of @gen over what is there (REPLACE). */
static int replace_keys(int pfd, __u64 bs, __u64 first, __u64 count,
			__u64 gen, char *bufs)
{
	struct kvtier_block b[BATCH];
	bool z = tool_z(pfd);
	__u32 done;
	__u64 i;
	int ret;

	for (i = 0; i < count; i++) {
		tool_fill(bufs + i * bs, bs, first + i, gen, z);
		kst_blk(&b[i], NVT_TOOL_K0, first + i, bufs + i * bs);
	}
	ret = kst_batch(pfd, KVTIER_IOC_PUT, b, count, KVTIER_PUT_REPLACE, &done);
	for (i = 0; !ret && i < count; i++)
		ret = b[i].status;
	return ret;
}

static int cmd_writer(int argc, char **argv)
{
	unsigned long long sync_every, keys, dram, pass = 1, k = 0, batches = 0;
	struct kvtier_pool_create c;
	char started[4096], *bufs;
	bool announced = false;
	int ctl, pfd, log, ret;

	if (argc < 2)
		die(2, "writer POOL LOG [SYNC_EVERY [KEYS [DRAM]]]");
	sync_every = argc >= 3 ? num(argv[2]) : 8;
	keys = argc >= 4 ? num(argv[3]) : 4096;
	dram = argc >= 5 ? num(argv[4]) : 1024;
	if (!sync_every || keys < BATCH || !dram || dram > keys)
		die(2, "writer: bad SYNC_EVERY, KEYS or DRAM");
	ctl = ctl_open();
	/* Room to spare for REPLACE (and a full pool is another test). */
	kst_create_init(&c, argv[0], WRITER_BS, keys + 64, dram);
	c.flags = KVTIER_POOL_OPEN_EXISTING;
	c.compress = tool_compress();
	pfd = kst_create(ctl, &c);
	if (pfd < 0)
		die(2, "create %s: %s", argv[0], strerror(-pfd));
	log = open(argv[1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (log < 0)
		die(2, "open %s: %s", argv[1], strerror(errno));
	snprintf(started, sizeof(started), "%s.started", argv[1]);
	bufs = kst_alloc(BATCH * WRITER_BS);
	if (!bufs)
		die(2, "no memory");

	/* Blocks on the device, dropped and synced: they must stay gone. */
	ret = replace_keys(pfd, WRITER_BS, keys, BATCH, 1, bufs);
	if (!ret)
		ret = nvt_sync(pfd, NULL);
	for (k = keys; !ret && k < keys + BATCH; k++)
		ret = kst_drop1(pfd, NVT_TOOL_K0, k);
	if (!ret)
		ret = nvt_sync(pfd, NULL);
	if (ret)
		die(1, "PUT, SYNC, DROP, SYNC of keys %llu..: %s", keys,
		    strerror(-ret));
	k = 0;

	for (;;) {
		__u64 n = keys - k < BATCH ? keys - k : BATCH;

		ret = replace_keys(pfd, WRITER_BS, k, n, pass, bufs);
		if (ret)
			die(1, "PUT pass %llu key %llu: %s", pass, k,
			    strerror(-ret));
		k += n;
		if (k == keys) {
			k = 0;
			pass++;
		}
		if (++batches % sync_every == 0) {
			/* What was put before the SYNC started. */
			unsigned long long p = pass, upto = k;
			char line[64];
			int len;

			ret = nvt_sync(pfd, NULL);
			if (ret)
				die(1, "SYNC in pass %llu: %s", p, strerror(-ret));
			len = snprintf(line, sizeof(line), "%llu %llu\n", p, upto);
			if (write(log, line, len) != len || fsync(log))
				die(2, "write %s: %s", argv[1], strerror(errno));
			if (!announced) {
				int fd = open(started, O_WRONLY | O_CREAT |
					      O_CLOEXEC, 0644);

				if (fd >= 0) {
					fsync(fd);
					close(fd);
				}
				announced = true;
			}
		}
	}
}

/*
 * After a crash. The last acknowledged SYNC came in pass PASS with keys
 * below UPTO written in that pass: those must hold generation PASS or
 * newer, the others PASS - 1 or newer (0: nothing required). Every block
 * present must be one of keys 0..KEYS-1, exact for the generation it
 * holds, 1..MAXGEN (the writer never got further).
 */
static int cmd_check(int argc, char **argv)
{
	unsigned long long pass, upto, keys, maxgen, k, present = 0, wrong = 0;
	unsigned long long lost = 0;
	unsigned long long stale = 0;
	struct kvtier_pool_stat st;
	struct kvtier_block *b;
	__u64 bs, gen;
	char *buf;
	int pfd, ret;
	__u32 i, n, done;

	if (argc < 5)
		die(2, "check POOL PASS UPTO KEYS MAXGEN");
	pfd = pool_open(ctl_open(), argv[0]);
	pass = num(argv[1]);
	upto = num(argv[2]);
	keys = num(argv[3]);
	maxgen = num(argv[4]);
	ret = kst_stat(pfd, &st);
	if (ret)
		die(2, "STAT: %s", strerror(-ret));
	bs = st.block_size;
	buf = kst_alloc(bs);
	b = calloc(KVTIER_BATCH_MAX, sizeof(*b));
	if (!buf || !b)
		die(2, "no memory");
	for (k = 0; k < st.capacity; k += n) {
		n = st.capacity - k < KVTIER_BATCH_MAX ? st.capacity - k :
							 KVTIER_BATCH_MAX;
		for (i = 0; i < n; i++)
			kst_blk(&b[i], NVT_TOOL_K0, k + i, NULL);
		ret = kst_batch(pfd, KVTIER_IOC_LOOKUP, b, n, 0, &done);
		if (ret)
			die(2, "LOOKUP: %s", strerror(-ret));
		for (i = 0; i < n; i++) {
			unsigned long long key = k + i;
			unsigned long long want = key < upto ? pass : pass - 1;

			if (!pass || key >= keys)
				want = 0;
			gen = 0;
			ret = b[i].status;
			if (!ret) {
				ret = get_key(pfd, buf, bs, key, &gen);
				if (!ret && (gen < 1 || gen > maxgen ||
					     key >= keys))
					ret = -EILSEQ;
			}
			if (!ret) {
				present++;
				if (gen >= want)
					continue;
				if (++stale <= 10)
					printf("check %s: acknowledged key %llu: generation %llu, want %llu or newer\n",
					       argv[0], key, (unsigned long long)gen,
					       want);
				continue;
			}
			/* The writer dropped and synced keys past KEYS. */
			if (ret != -ENOENT && ++wrong <= 10)
				printf("check %s: key %llu: %s\n", argv[0], key,
				       key >= keys ? "dropped and synced, but there" :
				       ret == -EILSEQ ? "WRONG BYTES" :
				       strerror(-ret));
			if (want && ++lost <= 10)
				printf("check %s: acknowledged key %llu: %s\n",
				       argv[0], key, strerror(-ret));
		}
	}
	ret = kst_stat(pfd, &st);
	printf("check %s: acked pass %llu up to key %llu: present %llu, wrong or failed %llu, acked but lost %llu, acked but older %llu, bad_reads %llu, compress %u\n",
	       argv[0], pass, upto, present, wrong, lost, stale,
	       ret ? 0ULL : (unsigned long long)st.bad_reads,
	       ret ? 0U : st.compress);
	return wrong || lost || stale ? 1 : 0;
}

static int cmd_destroy(int argc, char **argv)
{
	int ret;

	if (argc < 1)
		die(2, "destroy POOL");
	ret = kst_pool_destroy(ctl_open(), argv[0]);
	if (ret)
		die(1, "destroy %s: %s", argv[0], strerror(-ret));
	return 0;
}

static int cmd_exists(int argc, char **argv)
{
	int pfd;

	if (argc < 1)
		die(2, "exists POOL");
	pfd = kst_pool_open(ctl_open(), argv[0], 0);
	if (pfd == -ENOENT)
		return 1;
	if (pfd < 0)
		die(2, "open %s: %s", argv[0], strerror(-pfd));
	return 0;
}

static int cmd_find(int argc, char **argv)
{
	struct nvt_loc loc;
	__u64 id = 0;
	int ret;

	if (argc < 2)
		die(2, "find FILE KEY [POOL]");
	if (argc >= 3) {
		ret = nvt_pool_id(argv[0], argv[2], &id);
		if (ret)
			die(1, "pool %s in %s: %s", argv[2], argv[0],
			    strerror(-ret));
	}
	ret = nvt_find_block_of(argv[0], id, NVT_TOOL_K0, num(argv[1]), &loc);
	if (ret)
		die(1, "find key %s in %s: %s", argv[1], argv[0], strerror(-ret));
	printf("%llu %u %u\n", (unsigned long long)loc.data_off, loc.pages,
	       loc.copies);
	return 0;
}

static int cmd_flip(int argc, char **argv)
{
	int ret;

	if (argc < 2)
		die(2, "flip FILE OFFSET [MASK]");
	ret = nvt_raw_flip(argv[0], num(argv[1]),
			   argc >= 3 ? num(argv[2]) : 0x01);
	if (ret)
		die(1, "flip %s at %s: %s", argv[0], argv[1], strerror(-ret));
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2)
		die(2, "usage: nvme_tool COMMAND ARGS... (see nvme_tool.c)");
	cmd = argv[1];
	argc -= 2;
	argv += 2;
	if (!strcmp(cmd, "attach"))
		return cmd_attach(argc, argv);
	if (!strcmp(cmd, "detach"))
		return cmd_detach();
	if (!strcmp(cmd, "nstat"))
		return cmd_nstat();
	if (!strcmp(cmd, "create"))
		return cmd_create(argc, argv);
	if (!strcmp(cmd, "put"))
		return cmd_put(argc, argv, false);
	if (!strcmp(cmd, "put-meta"))
		return cmd_put(argc, argv, true);
	if (!strcmp(cmd, "verify-meta"))
		return cmd_verify_meta(argc, argv);
	if (!strcmp(cmd, "drop"))
		return cmd_drop(argc, argv);
	if (!strcmp(cmd, "absent"))
		return cmd_absent(argc, argv);
	if (!strcmp(cmd, "sync"))
		return cmd_sync(argc, argv);
	if (!strcmp(cmd, "stat"))
		return cmd_stat(argc, argv);
	if (!strcmp(cmd, "census"))
		return cmd_census(argc, argv);
	if (!strcmp(cmd, "verify"))
		return cmd_verify(argc, argv);
	if (!strcmp(cmd, "writer"))
		return cmd_writer(argc, argv);
	if (!strcmp(cmd, "check"))
		return cmd_check(argc, argv);
	if (!strcmp(cmd, "destroy"))
		return cmd_destroy(argc, argv);
	if (!strcmp(cmd, "exists"))
		return cmd_exists(argc, argv);
	if (!strcmp(cmd, "find"))
		return cmd_find(argc, argv);
	if (!strcmp(cmd, "flip"))
		return cmd_flip(argc, argv);
	die(2, "unknown command %s", cmd);
}
