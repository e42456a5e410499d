#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""How a vLLM/SGLang-style KV connector would call kvtier.

An inference engine keeps the KV cache of running requests in paged
buffers, one per layer (GPU memory in a real engine; bytearrays here), so
a block is one piece in every layer's buffer. A KV connector
lets it reuse KV blocks computed by earlier requests that share a prefix
(a system prompt, earlier turns of a conversation):

  scheduler, when a request is scheduled:
      lookup    how many leading blocks of its prompt kvtier holds
                (the engine then skips computing those tokens), and pin
                them in the same call so none is evicted before it is read
  scheduler, for requests still queued (a lookahead window):
      prefetch  have the kernel stage their cached blocks that are only
                on NVMe into DRAM by a deadline, while the GPU computes
  worker, before the forward pass:
      wait      for the request's prefetch group, if it has one
      read      the pinned blocks through the pool's mapping into the
                request's pages of every layer (a real engine DMAs from
                that memory to the GPU), then unpin; on a kernel without
                lookup-and-pin (or with --get), get scatters them into the
                layers instead, one segment a layer; with --layerwise,
                get_part loads one layer of every block at a time (the
                engine computes layer l while l + 1 is read; blocks only
                on NVMe are read in parts and stay there)
  worker, after the forward pass:
      reserve   take pool blocks for the new keys, write each block's
      commit    pieces straight into the pool's memory (a real engine DMAs
                them from the GPU into that memory), publish them: the
                kernel copies nothing; on a kernel without reserve (or
                with --put), put stores them instead, the kernel gathering
                each from its layers' pieces (scatter-gather)

Each full block of `block_tokens` tokens is named by a chained key: block
i's key depends on the tokens of blocks 0..i, so equal keys mean equal
prefixes (kvtier.key_chain over a hash of each block's tokens).

Equal tokens are not equal KV, though: the KV of a prefix depends on the
model (and its weights' revision), the tokenizer that made the tokens, and
the KV dtype. With kvtier's block metadata (F_META) every block is stored
with a record of the engine that computed it (a fingerprint of model,
tokenizer and dtype, and the block's token count), and a block whose
record is not this engine's is not a hit: lookup reads the records with
the prefix and the hit ends at the first foreign block. Two engines that
share a pool (or one restarted with another model) can then never load
each other's KV, whatever their keys say.

Run it with the module loaded:  python3 python/examples/connector.py
It replays a few synthetic conversations, checks every byte it gets back
against what the "model" computes, and prints the tokens it saved.
Exit status: 0 when every loaded block verified, 1 otherwise. Run it twice
on one pool (--pool NAME --keep-pool) with another --model the second
time: it refuses the first run's blocks (and with --no-check loads them,
and fails).
"""

import argparse
import collections
import errno
import hashlib
import mmap
import os
import random
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import kvtier  # noqa: E402


def block_ids(tokens, block_tokens):
    """A 64-bit id per full block: a hash of that block's tokens."""
    ids = []
    for i in range(0, len(tokens) - block_tokens + 1, block_tokens):
        h = hashlib.blake2b(digest_size=8)
        h.update(b"".join(t.to_bytes(4, "little")
                          for t in tokens[i:i + block_tokens]))
        ids.append(int.from_bytes(h.digest(), "little"))
    return ids


def engine_fingerprint(model, tokenizer, dtype):
    """What makes KV of equal tokens equal: 32 bytes of hash of the model
    (name and weights' revision), the tokenizer and the KV dtype."""
    h = hashlib.blake2b(digest_size=32, person=b"kvtier-kv-fp")
    for part in (model, tokenizer, dtype):
        h.update(part.encode() + b"\0")
    return h.digest()


def block_record(fingerprint, tokens):
    """A block's metadata record: a tag and version, the tokens it holds
    and the engine's fingerprint: 40 of the META_MAX (64) bytes."""
    return struct.pack("<4sI", b"kvc1", tokens) + fingerprint


class KVConnector:
    """The calls a runtime's connector makes, on one kvtier pool.

    fingerprint: engine_fingerprint() of this engine, stored with every
    block and required of every block loaded (needs F_META); None: no
    records, every block with the right key is taken (a kernel without
    F_META, or --no-check)."""

    def __init__(self, pool, block_tokens, pin=True, reserve=True,
                 fingerprint=None, layerwise=False):
        self.pool = pool
        self.layerwise = layerwise
        self.block_tokens = block_tokens
        self.block_size = pool.block_size
        self.next_group = 0
        self.map = None
        self.record = (block_record(fingerprint, block_tokens)
                       if fingerprint is not None else None)
        self.refused = 0        # blocks found but computed by another engine
        # Reserved blocks are written here: block a at a * block_size.
        self.win = pool.map_reserved() if reserve else None
        if pin:
            # The whole pool, read-only: block a is at a * block_size.
            self.map = memoryview(mmap.mmap(pool.fileno(),
                                            pool.capacity * pool.block_size,
                                            mmap.MAP_SHARED, mmap.PROT_READ))

    def keys(self, tokens):
        return kvtier.key_chain(block_ids(tokens, self.block_tokens))

    def usable(self, found, n=None, count=True):
        """How many of the n (default found.done) leading blocks of a
        lookup or get are this engine's: the prefix ends at the first
        block whose record is not ours (another model, tokenizer or dtype,
        or none). count: add the others to self.refused."""
        n = found.done if n is None else n
        if self.record is None:
            return n
        for i in range(n):
            if found.meta[i] != self.record:
                if count:
                    self.refused += n - i
                return i
        return n

    # ---- scheduler side ----------------------------------------------------

    def get_num_matched_tokens(self, req):
        """On schedule: how many prompt tokens kvtier can serve."""
        req.keys = self.keys(req.tokens)
        if not req.keys:
            req.hit_blocks = 0
            return 0
        # touch: the hit blocks are about to be used, keep them warm; pin:
        # and keep them in DRAM, at hit.addr, until load_kv has read them;
        # meta: with their records, to take only blocks of this engine.
        hit = self.pool.lookup(req.keys, touch=True, pin=bool(self.map),
                               meta=self.record is not None)
        n = self.usable(hit)
        if self.map and n < hit.done:
            self.pool.unpin(req.keys[n:hit.done])     # pinned, not ours
        req.hit_blocks = n
        if self.map:
            req.pinned = req.keys[:n]
            req.hit_addr = hit.addr[:n]
        req.hit_tiers = hit.tiers[:n]
        return n * self.block_tokens

    def prefetch_queued(self, req, deadline_ns):
        """For a request still queued behind the running batch: if part of
        its cached prefix is only on NVMe, ask kvtier to have the prefix in
        DRAM by deadline_ns (one group per request). Returns the blocks
        that need a read (0: nothing to wait for)."""
        keys = self.keys(req.tokens)
        if not keys:
            return 0
        hit = self.pool.lookup(keys,            # no touch: not used yet
                               meta=self.record is not None)
        n = self.usable(hit, count=False)       # counted when scheduled
        if kvtier.TIER_NVME not in hit.tier[:n]:
            return 0
        self.next_group += 1
        try:
            pf = self.pool.prefetch(keys[:n], group=self.next_group,
                                    deadline_ns=deadline_ns,
                                    cookie=req.rid)
        except kvtier.Error as e:
            if e.errno == errno.EAGAIN:         # too many groups in flight
                return 0
            raise
        req.prefetch = pf
        return pf.queued

    def wait_prefetch(self, req, timeout_ms=1000):
        """Before the forward pass: wait for the request's prefetch group
        to end (its blocks are then in DRAM, or it ran late). Returns the
        Completion, or None without a group."""
        pf, req.prefetch = req.prefetch, None
        if pf is None:
            return None
        c = pf.wait(timeout_ms)
        if c is None:                           # give up, GET loads them
            try:
                self.pool.cancel(pf.group)
            except kvtier.Error:
                pass
            c = self.pool.wait_group(pf.group, 0)
        return c

    # ---- worker side -------------------------------------------------------

    def load_kv(self, req, kv):
        """Before the forward pass: bring the hit blocks into the request's
        KV pages, layer by layer (kv: the engine's KVLayers)."""
        n = req.hit_blocks
        if not n:
            return 0
        if self.layerwise:
            return self.load_kv_layers(req, kv)
        if self.map:
            # Pinned at lookup: each layer's piece straight from the
            # pool's memory (a real engine DMAs it to the GPU), then unpin.
            bs = self.block_size
            for i, a in enumerate(req.hit_addr[:n]):
                kv.fill(i, self.map[a * bs:(a + 1) * bs])
            self.pool.unpin(req.pinned)
            req.pinned, req.hit_addr = [], []
            return n
        # GET scatters each block into its layers' pieces (one segment a
        # layer), copying once, with its record: the block may have been
        # replaced since the lookup, and the record comes with the bytes.
        got = self.pool.get(req.keys[:n], [kv.segs(i) for i in range(n)],
                            meta=self.record is not None)
        # A block evicted between lookup and get is a miss, one replaced
        # by another engine's is refused: the engine recomputes from the
        # first of them on.
        ok = next((i for i, st in enumerate(got.status) if st), n)
        return self.usable(got, ok)

    def load_kv_layers(self, req, kv):
        """Layer by layer (vLLM's layer-wise connectors): GET layer l's
        range of every hit block into the layer's pages, then the engine
        computes layer l while it asks for l + 1 (a real one queues a few
        layers ahead on an io_uring, kvtier_part_batch(3), and waits in
        wait_for_layer_load). Returns the blocks every layer of which
        arrived."""
        n, p = req.hit_blocks, kv.piece
        for l, lay in enumerate(kv.layers):
            got = self.pool.get_part(req.keys[:n],
                                     [lay[i * p:(i + 1) * p]
                                      for i in range(n)], l * p, p,
                                     meta=self.record is not None)
            ok = next((i for i, st in enumerate(got.status) if st), n)
            n = self.usable(got, ok, count=l == 0)
            if not n:
                break
            # ... the forward pass computes layer l here ...
        if n and kvtier.TIER_NVME in req.hit_tiers[:n]:
            # Read straight from NVMe, they stayed there: bring them into
            # DRAM for the requests after, off the critical path.
            self.pool.lookup(req.keys[:n], load=True)
        return n

    def save_kv(self, req, kv, first):
        """After the forward pass: store the blocks it computed (from block
        `first` on), each gathered from its layers' pieces by the kernel
        (one segment a layer, no staging copy). Existing keys (another
        request stored them first) are fine."""
        keys = req.keys[first:]
        if not keys:
            return 0
        if not self.win:
            res = self.pool.put(keys, [kv.segs(i)
                                       for i in range(first, len(req.keys))],
                                meta=self.record)
            return sum(1 for s in res.status if s == 0)
        # Zero-copy: reserve blocks for the keys not stored yet, write each
        # layer's piece into the pool's memory, publish them all at once.
        res = self.pool.reserve(keys)
        mine = [(k, a, first + i) for i, (k, a, s)
                in enumerate(zip(keys, res.addr, res.status)) if s == 0]
        if not mine:
            return 0
        bs, p = self.block_size, kv.piece
        for _, a, i in mine:
            for j, seg in enumerate(kv.segs(i)):
                self.win[a * bs + j * p:a * bs + (j + 1) * p] = seg
        done = self.pool.commit([k for k, _, _ in mine],
                                [a for _, a, _ in mine], meta=self.record)
        # Stored meanwhile by another worker: give the block back.
        back = [(k, a) for (k, a, _), s in zip(mine, done.status) if s]
        if back:
            self.pool.abort([k for k, _ in back], [a for _, a in back])
        return done.done

    def close(self):
        if self.win:
            self.win.release()
        if self.map:
            self.map.release()


class KVLayers:
    """The engine's paged KV cache as engines hold it: one buffer per
    layer, page i of every layer holding its piece of block i (in a real
    engine each piece is [2, tokens, heads, head_dim] of K and V)."""

    def __init__(self, pages, block_size, layers):
        self.piece = block_size // layers
        self.layers = [memoryview(bytearray(pages * self.piece))
                       for _ in range(layers)]

    def segs(self, i):
        """Block i as a scatter-gather list: its piece in every layer."""
        p = self.piece
        return [lay[i * p:(i + 1) * p] for lay in self.layers]

    def fill(self, i, block):
        """Scatter a whole block's bytes into page i of the layers."""
        p = self.piece
        for j, lay in enumerate(self.layers):
            lay[i * p:(i + 1) * p] = block[j * p:(j + 1) * p]

    def block(self, i):
        return b"".join(bytes(seg) for seg in self.segs(i))


class Request:
    def __init__(self, rid, tokens):
        self.rid = rid
        self.tokens = tokens
        self.keys = []
        self.hit_blocks = 0
        self.hit_tiers = []
        self.hit_addr = []
        self.pinned = []
        self.prefetch = None


def model_kv(key, block_size, fingerprint=bytes(16)):
    """What the 'forward pass' computes for a block: a function of its key,
    i.e. of its whole prefix, of the position in the block, and of the
    engine (model, tokenizer, dtype), so a wrong block, a layer out of
    place or another engine's block cannot go unnoticed."""
    k = int(key) ^ int.from_bytes(fingerprint[:16], "little")
    return b"".join(((k + j * 0x9E3779B97F4A7C15) % (1 << 128))
                    .to_bytes(16, "little")
                    for j in range(block_size // 16))


def conversations(n_requests, block_tokens, rnd):
    """Synthetic chats: 3 system prompts; each turn appends to its
    conversation, so later turns share every earlier block."""
    systems = [[rnd.randrange(50000) for _ in range(4 * block_tokens)]
               for _ in range(3)]
    chats = []
    for rid in range(n_requests):
        if not chats or rnd.random() < 0.3:
            chats.append(list(rnd.choice(systems)))
        chat = rnd.choice(chats)
        chat.extend(rnd.randrange(50000)
                    for _ in range(rnd.randrange(1, 3 * block_tokens)))
        yield Request(rid, list(chat))
        chat.extend(rnd.randrange(50000) for _ in range(block_tokens))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=60)
    ap.add_argument("--block-tokens", type=int, default=16)
    ap.add_argument("--block-size", type=int, default=16384,
                    help="bytes of KV per block (a multiple of 4096)")
    ap.add_argument("--capacity", type=int, default=1024)
    ap.add_argument("--dram-blocks", type=int, default=0,
                    help="the pool's DRAM share (0: all of it); smaller "
                    "than the working set with an NVMe tier attached, "
                    "blocks come back from NVMe and prefetch matters")
    ap.add_argument("--window", type=int, default=4,
                    help="queued requests whose blocks are prefetched "
                    "(0: no prefetch)")
    ap.add_argument("--budget-ms", type=int, default=20,
                    help="deadline of a queued request's prefetch, per "
                    "request ahead of it")
    ap.add_argument("--layers", type=int, default=8,
                    help="layers of the engine's KV: a block is stored "
                    "from and loaded into one piece per layer (1: one "
                    "buffer, also what runs without scatter-gather)")
    ap.add_argument("--get", action="store_true",
                    help="copy hit blocks with get instead of pinning them "
                    "at lookup and reading them through the mapping")
    ap.add_argument("--layerwise", action="store_true",
                    help="load hit blocks a layer at a time (get_part); "
                    "the pool is made with one part a layer, so blocks "
                    "only on NVMe are read in parts")
    ap.add_argument("--put", action="store_true",
                    help="store new blocks with put instead of reserve, "
                    "fill in place and commit")
    ap.add_argument("--pool", default="connector-example-%d" % os.getpid())
    ap.add_argument("--keep-pool", action="store_true",
                    help="open the pool if it exists, and leave it there "
                    "at the end (for a second run, of another --model)")
    ap.add_argument("--model", default="example-model@rev1",
                    help="the engine's model (and weights' revision): its "
                    "KV differs from another model's for equal tokens")
    ap.add_argument("--tokenizer", default="example-tokenizer@rev1")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--no-check", action="store_true",
                    help="store and check no block metadata: take any "
                    "block of a matching key (what goes wrong without it)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    fp = engine_fingerprint(a.model, a.tokenizer, a.dtype)

    rnd = random.Random(a.seed)
    total = saved = verified = bad = stored = 0
    pf_groups = pf_blocks = pf_late = 0
    with kvtier.open() as ctx:
        layerwise = a.layerwise and "parts" in ctx.features
        layers = a.layers if "sg" in ctx.features else 1
        if layers < 1 or a.block_size % layers:
            ap.error("--layers must divide --block-size")
        pool = ctx.create_pool(a.pool, block_size=a.block_size,
                               capacity=a.capacity,
                               dram_blocks=a.dram_blocks,
                               flags=kvtier.POOL_OPEN_EXISTING
                               if a.keep_pool else 0,
                               parts=layers if layerwise and layers > 1
                               else 0)
        check = not a.no_check and "meta" in ctx.features
        try:
            conn = KVConnector(pool, a.block_tokens,
                               pin=not a.get and not layerwise and
                               "lookup_pin" in ctx.features,
                               reserve=not a.put and
                               "reserve" in ctx.features,
                               fingerprint=fp if check else None,
                               layerwise=layerwise)
            # The engine's paged KV cache, one buffer per layer.
            max_blocks = 64
            kv = KVLayers(max_blocks, a.block_size, layers)
            queue = collections.deque()
            reqs = conversations(a.requests, a.block_tokens, rnd)
            while True:
                # The scheduler's queue: prefetch for requests entering it.
                while len(queue) <= a.window:
                    req = next(reqs, None)
                    if req is None:
                        break
                    if a.window and conn.prefetch_queued(
                            req, kvtier.now_ns() +
                            (len(queue) + 1) * a.budget_ms * 1000000):
                        pf_groups += 1
                        pf_blocks += req.prefetch.queued
                    queue.append(req)
                if not queue:
                    break
                req = queue.popleft()
                total += len(req.tokens)
                conn.get_num_matched_tokens(req)           # schedule
                c = conn.wait_prefetch(req)                # before forward
                pf_late += bool(c and (c.late or c.status))
                nb = min(len(req.keys), max_blocks)
                req.keys = req.keys[:nb]
                req.hit_blocks = min(req.hit_blocks, nb)
                loaded = conn.load_kv(req, kv)              # before forward
                for i in range(loaded):
                    if kv.block(i) == model_kv(req.keys[i], a.block_size,
                                               fp):
                        verified += 1
                    else:
                        bad += 1
                saved += loaded * a.block_tokens
                for i in range(loaded, nb):                 # the forward pass
                    kv.fill(i, model_kv(req.keys[i], a.block_size, fp))
                stored += conn.save_kv(req, kv, loaded)     # after forward
            st = pool.stat()
            conn.close()
        finally:
            pool.close()
            if not a.keep_pool:
                ctx.destroy_pool(a.pool)

    print("connector: %d requests, %d prompt tokens, %d served by kvtier "
          "(%.1f%%)" % (a.requests, total, saved,
                        100.0 * saved / total if total else 0))
    print("connector: blocks stored %d, loaded and verified %d, wrong %d"
          % (stored, verified, bad))
    print("connector: model %s, block metadata %s, blocks of another "
          "engine refused %d" % (a.model, "checked" if check else "off",
                                 conn.refused))
    print("connector: pool puts %d gets %d hits %d misses %d, pinned at "
          "the end %d, resident %s" % (st.puts, st.gets, st.hits, st.misses,
                                       st.pinned, st.resident))
    print("connector: prefetch groups %d, blocks read ahead %d, late or "
          "incomplete %d" % (pf_groups, pf_blocks, pf_late))
    print("connector: loads %s, parts read from NVMe %d"
          % ("layer by layer" if layerwise else "whole", st.part_reads))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
