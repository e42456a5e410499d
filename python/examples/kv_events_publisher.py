#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Publish a kvtier pool's events as vLLM-style KV event batches over ZeroMQ.

KV-aware routers (those that consume vLLM's KV events: BlockStored,
BlockRemoved, AllBlocksCleared) learn what each inference node holds from
a stream of events. This program follows one kvtier pool through its
events fd (kvtier.Pool.events(), libkvtier-events(3)) and publishes what
happens to its blocks in that format, so such a router can route by what
kvtier holds in HBM, DRAM and on NVMe.

Each message is a ZeroMQ multipart [topic, sequence, payload]: the topic
(--topic, default empty), the batch's sequence number (8 bytes,
big-endian, from 0) and a msgpack array

    [ts, [event, ...]]  or  [ts, [event, ...], data_parallel_rank]

with ts the time of the batch's last event in seconds since the epoch (a
float), and each event a tagged array:

    ["BlockStored", [block_hash, ...], None, [], block_size, None, medium]
    ["BlockRemoved", [block_hash, ...], medium]
    ["AllBlocksCleared"]

(BlockStored: block_hashes, parent_block_hash, token_ids, block_size,
lora_id, medium). A block hash is the block's 16-byte kvtier key as bytes,
little-endian key[0] then key[1] (msgpack integers stop at 64 bits); the
medium is "GPU" for kvtier's HBM tier, "CPU" for DRAM and "DISK" for NVMe.
kvtier does not know tokens, parents or LoRA adapters: those are empty.

How kvtier's events map: a key STORED is a BlockStored in its medium; a
key MOVED between tiers is a BlockStored in the new medium, then a
BlockRemoved from the old; REMOVED is a BlockRemoved from where it was; the
pool's end (CLEARED) is AllBlocksCleared, after which the program exits.
A key replaced in another medium than before is a BlockStored there and a
BlockRemoved from the old. A subscriber that keeps, for each block hash,
the media it is in, holds what the pool holds.

At the start, and whenever it fell behind the pool's event ring (an
OVERFLOW record: events were lost), it resynchronises: it takes a census
of the pool and publishes AllBlocksCleared, then a BlockStored for every
key the census lists, then goes on with the events after the census. It
keeps no pool fd open between censuses (it opens the pool by name for
each), so it never keeps a pool alive.

    python3 kv_events_publisher.py --pool mypool --endpoint tcp://*:5557

A subscriber:

    sock = zmq.Context().socket(zmq.SUB)
    sock.connect("tcp://node:5557")
    sock.setsockopt(zmq.SUBSCRIBE, b"")
    topic, seq, payload = sock.recv_multipart()
    ts, events = msgpack.unpackb(payload)[:2]

Needs Debian's python3-zmq and python3-msgpack, and the kvtier module
with the events feature. Exit status: 0 when the pool ended or on SIGINT
or SIGTERM, 1 on an error, 2 on bad usage.
"""

import argparse
import errno
import os
import signal
import sys
import time

try:
    import msgpack
    import zmq
except ImportError as _e:
    sys.exit("kv_events_publisher: %s (apt-get install python3-zmq "
             "python3-msgpack)" % _e)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import kvtier  # noqa: E402

PROG = "kv_events_publisher"
MEDIUM = {kvtier.TIER_HBM: "GPU", kvtier.TIER_DRAM: "CPU",
          kvtier.TIER_NVME: "DISK"}


class Stop(Exception):
    """SIGINT or SIGTERM."""


def block_hash(key):
    """A key's 16 bytes: key[0] then key[1], little-endian."""
    return key[0].to_bytes(8, "little") + key[1].to_bytes(8, "little")


def log(msg):
    print("%s: %s" % (PROG, msg), file=sys.stderr, flush=True)


class Batch:
    """vLLM events of one message, consecutive ones of a kind and medium
    merged into one with several block hashes."""

    def __init__(self, block_size, max_hashes):
        self.events = []
        self.block_size = block_size
        self.max_hashes = max_hashes

    def _add(self, kind, h, medium):
        last = self.events[-1] if self.events else None
        if (last and last[0] == kind and last[-1] == medium and
                len(last[1]) < self.max_hashes):
            last[1].append(h)
        elif kind == "BlockStored":
            self.events.append([kind, [h], None, [], self.block_size, None,
                                medium])
        else:
            self.events.append([kind, [h], medium])

    def stored(self, h, tier):
        self._add("BlockStored", h, MEDIUM.get(tier))

    def removed(self, h, tier):
        self._add("BlockRemoved", h, MEDIUM.get(tier))

    def cleared(self):
        self.events.append(["AllBlocksCleared"])


class Publisher:

    def __init__(self, args):
        self.args = args
        self.ctx = kvtier.open(kvtier.F_POOLS | kvtier.F_EVENTS)
        self.zctx = zmq.Context()
        self.sock = self.zctx.socket(zmq.XPUB if args.wait_subscribers
                                     else zmq.PUB)
        self.sock.setsockopt(zmq.SNDHWM, args.hwm)
        self.sock.setsockopt(zmq.LINGER, 2000)
        self.sock.bind(args.endpoint)
        self.seq = 0            # the next message's sequence number
        self.tiers = {}         # block hash -> tier, as published
        self.base = 0           # events up to this one are in the census
        self.events = None
        self.resyncs = 0
        self.published = 0      # kvtier events published
        # CLOCK_MONOTONIC (the events' clock) to the epoch.
        self.mono_to_wall = (time.time_ns() -
                             time.clock_gettime_ns(time.CLOCK_MONOTONIC))

    def wait_subscribers(self):
        """XPUB: wait until --wait-subscribers subscriptions came."""
        n = 0
        while n < self.args.wait_subscribers:
            msg = self.sock.recv()
            if msg and msg[0] == 1:
                n += 1

    def send(self, batch, time_ns=None):
        if not batch.events:
            return
        ts = ((time_ns + self.mono_to_wall) / 1e9 if time_ns
              else time.time())
        body = [ts, batch.events]
        if self.args.dp_rank is not None:
            body.append(self.args.dp_rank)
        self.sock.send_multipart([self.args.topic.encode(),
                                  self.seq.to_bytes(8, "big"),
                                  msgpack.packb(body, use_bin_type=True)])
        self.seq += 1

    def new_batch(self):
        return Batch(self.args.block_size, self.args.max_hashes)

    def resync(self, why):
        """A census of the pool, published as AllBlocksCleared and a
        BlockStored for every key; events after its seq follow."""
        self.resyncs += 1
        try:
            with self.ctx.open_pool(self.args.pool, readonly=True) as pool:
                seq, log_id, entries = pool.census()
        except kvtier.Error as e:
            if e.errno != errno.ENOENT:
                raise
            log_id, entries = None, []
        batch = self.new_batch()
        batch.cleared()
        self.tiers = {}
        if log_id != self.events.log_id:
            # The name is gone, or names another pool now: what this one
            # holds cannot be listed. Publish it empty and go on with its
            # events: they end with its CLEARED.
            log("resync (%s): pool %s cannot be listed; published empty"
                % (why, self.args.pool))
            self.base = self.events.next_seq - 1
            self.send(batch)
            return
        self.base = seq
        for e in entries:
            h = block_hash(e.key)
            self.tiers[h] = e.tier
            if len(batch.events) >= self.args.max_events:
                self.send(batch)
                batch = self.new_batch()
            batch.stored(h, e.tier)
        self.send(batch)
        log("resync (%s): census of %d keys at seq %d" % (why, len(entries),
                                                          seq))

    def apply(self, batch, e):
        """Add kvtier event @e to @batch; False at the pool's end."""
        if e.type == kvtier.EVENT_CLEARED:
            batch.cleared()
            self.tiers = {}
            return False
        h = block_hash(e.key)
        old = self.tiers.get(h)
        if e.type in (kvtier.EVENT_STORED, kvtier.EVENT_MOVED):
            batch.stored(h, e.tier)
            if old is None and e.type == kvtier.EVENT_MOVED:
                old = e.from_tier
            if old is not None and old != e.tier:
                batch.removed(h, old)
            self.tiers[h] = e.tier
        elif e.type == kvtier.EVENT_REMOVED:
            batch.removed(h, self.tiers.pop(h, e.tier))
        return True

    def run(self):
        with self.ctx.open_pool(self.args.pool, readonly=True) as pool:
            self.events = pool.events()
        if self.args.wait_subscribers:
            self.wait_subscribers()
        self.resync("start")
        going = True
        while going:
            evs = self.events.read(timeout_ms=-1,
                                   max=self.args.max_events)
            if not evs:         # the end of the log
                break
            batch = self.new_batch()
            last_ns = None
            for e in evs:
                if e.type == kvtier.EVENT_OVERFLOW:
                    if e.seq + e.lost - 1 <= self.base:
                        continue        # lost, but the census had them
                    self.send(batch, last_ns)
                    batch = self.new_batch()
                    self.resync("overflow: %d events lost from seq %d"
                                % (e.lost, e.seq))
                    continue
                if e.seq <= self.base:
                    continue
                going = self.apply(batch, e)
                last_ns = e.time_ns
                self.published += 1
                if not going:
                    break
            self.send(batch, last_ns)
        log("pool %s ended: %d events, %d resyncs, %d messages"
            % (self.args.pool, self.published, self.resyncs, self.seq))

    def close(self):
        if self.events:
            self.events.close()
        self.sock.close()
        self.zctx.term()
        self.ctx.close()


def main():
    ap = argparse.ArgumentParser(
        description="Publish a kvtier pool's events as vLLM-style KV event "
        "batches over ZeroMQ.")
    ap.add_argument("--pool", required=True, help="the pool's name")
    ap.add_argument("--endpoint", default="tcp://*:5557",
                    help="where the PUB socket binds (default %(default)s)")
    ap.add_argument("--topic", default="",
                    help="the topic frame of each message (default empty)")
    ap.add_argument("--block-size", type=int, default=16,
                    help="tokens a block holds, reported in BlockStored "
                    "(default %(default)s)")
    ap.add_argument("--dp-rank", type=int, default=None,
                    help="data_parallel_rank of each batch (default: none)")
    ap.add_argument("--max-events", type=int, default=256,
                    help="events a message holds at most (default "
                    "%(default)s)")
    ap.add_argument("--max-hashes", type=int, default=512,
                    help="block hashes one event holds at most (default "
                    "%(default)s)")
    ap.add_argument("--hwm", type=int, default=100000,
                    help="messages queued for a slow subscriber before "
                    "ZeroMQ drops them (default %(default)s)")
    ap.add_argument("--wait-subscribers", type=int, default=0, metavar="N",
                    help="wait for N subscriptions before the first "
                    "census (an XPUB socket), so none misses it")
    args = ap.parse_args()
    if args.max_events < 1 or args.max_hashes < 1 or args.hwm < 0:
        ap.error("--max-events and --max-hashes must be positive, --hwm "
                 "not negative")

    def stop(_sig, _frame):
        raise Stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    pub = None
    try:
        pub = Publisher(args)
        pub.run()
    except Stop:
        pass
    except (kvtier.Error, zmq.ZMQError) as e:
        log(str(e))
        return 1
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if pub:
            pub.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
