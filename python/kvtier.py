# SPDX-License-Identifier: LGPL-2.1-or-later
"""kvtier: a Python binding of libkvtier (ctypes, standard library only).

kvtier keeps the KV-cache blocks of LLM inference in a kernel module with a
DRAM tier and an NVMe tier. This module wraps libkvtier.so.1:

    import kvtier

    with kvtier.open() as ctx:
        with ctx.create_pool("mypool", block_size=64 << 10, capacity=4096,
                             flags=kvtier.POOL_OPEN_EXISTING) as pool:
            keys = kvtier.key_chain([11, 12, 13])   # a prefix chain
            buf = bytearray(3 * pool.block_size)    # or a memoryview, an
            ...                                     # array, a numpy array
            pool.put(keys, buf)
            hit = pool.lookup(keys)                 # hit.done: prefix length
            pool.get(keys[:hit.done], buf)          # copied into buf

Buffers are anything with the buffer protocol, C-contiguous: either one
object of len(keys) * block_size bytes (block i at offset i * block_size),
or a sequence of len(keys) objects of block_size bytes each. The kernel
copies straight from and into their memory (ctypes ``from_buffer``): no
copy is made in Python. GET needs writable buffers; PUT takes read-only
ones too (``bytes`` directly; another read-only buffer is copied once).
In the sequence form an entry may itself be a list or tuple of buffers
whose sizes add up to block_size (scatter-gather, e.g. one per layer and
K/V, at most SEGS_MAX): the kernel copies once between them and the block
(needs F_SG).

Prefetch: a scheduler that knows which blocks a queued request will need
asks for them by a deadline, and the worker waits before its forward pass:

            deadline = kvtier.now_ns() + 50 * 1000000      # in 50 ms
            pf = pool.prefetch(keys[:hit.done], group=req_id,
                               deadline_ns=deadline)
            ...
            c = pool.wait_group(req_id, timeout_ms=1000)   # a Completion
            pool.get(keys[:c.ready], buf)                  # in DRAM now

Block metadata (F_META): each block may carry a record of up to META_MAX
bytes, given when it is stored and returned with it, for the runtime to
tell whose block it is (model, tokenizer, dtype, token count):

            fp = b"llama-3-8b/bf16/tok:5f2a"             # the runtime's
            pool.put(keys, buf, meta=fp)                  # one for each
            hit = pool.lookup(keys, meta=True)
            n = next((i for i in range(hit.done) if hit.meta[i] != fp),
                     hit.done)                            # the usable prefix

Events and the census (F_EVENTS): a router that follows what a pool
holds opens its events, lists its keys, then applies the events after the
listing (Pool.events() has the whole recipe):

            with pool.events() as ev:                  # an iterator
                seq, log_id, entries = pool.census()  # keys and tiers
                for e in ev:                          # Event tuples
                    if e.seq > seq:
                        print(e.type_name, e.key, e.tier_name)

Weight pools (F_WEIGHTS): a safetensors or GGUF model file's bytes as a
read-only pool, its blocks named by tensor, layer and expert (Weights has more):

            with ctx.open_weights("model.safetensors", "llama-w",
                                  block_size=2 << 20) as w:
                pf = w.prefetch(3, group=7, deadline_ns=deadline)
                t = w.tensor("model.layers.3.mlp.experts.5.w1.weight")
                pf.wait(1000)                        # layer 3 in DRAM
                b = w.read(t)                        # its bytes

Errors of a whole call raise ``kvtier.Error``, an ``OSError`` whose
``errno`` is the kernel's (``e.errno == errno.EEXIST``). Batched commands
do not raise for per-entry outcomes (a miss, an existing key): they return
a ``Batch`` with the count ``done`` and each entry's ``status`` (0 or a
negative errno), ``tier`` and ``addr``.

The library is looked up as $KVTIER_LIB (a path), then libkvtier.so.1 on
the loader's path, then ../lib/libkvtier.so.1 next to this file (a build
tree). Debian's python3 is all it needs.
"""

import collections
import ctypes
import errno as _errno
import mmap as _mmap
import os

__all__ = [
    "Error", "Context", "Pool", "Batch", "Key", "Prefetch", "Completion",
    "Mover", "Ready", "Event", "Events", "Census", "CensusEntry",
    "Weights", "Tensor",
    "open", "key_chain", "now_ns", "tier_name", "feature_name",
    "event_name", "event_reason_name",
]

# ---- constants of uapi/linux/kvtier.h ------------------------------------

API_VERSION = 1
DEVICE = "/dev/kvtier"

F_POOLS = 1 << 0
F_MMAP = 1 << 1
F_NUMA = 1 << 2
F_REPLACE = 1 << 3
F_NVME = 1 << 4
F_PREFETCH = 1 << 5
F_URING = 1 << 6
F_HBM = 1 << 7
F_SG = 1 << 8
F_LOOKUP_PIN = 1 << 9
F_RESERVE = 1 << 10
F_META = 1 << 11
F_PARTS = 1 << 12
F_EVENTS = 1 << 13
F_COMPRESS = 1 << 14
F_DIRECT = 1 << 15
F_WEIGHTS = 1 << 16
F_HINT_PROB = 1 << 17
FEATURES_ALL = (1 << 64) - 1        # KVTIER_FEATURES_ALL: what the kernel has

NAME_MAX = 64
BATCH_MAX = 4096
SEGS_MAX = 1024
META_MAX = 64                       # bytes of a block's metadata record
PARTS_MAX = 256                     # parts a pool's blocks are read in
TENSOR_NAME_MAX = 256               # a weight pool's tensor names (with NUL)
TENSOR_DIMS_MAX = 8
WEIGHTS_ALL = -2                    # Weights.blocks(): the whole layer
PROB_ONE = 65536                    # probability 1 in a hint's prob
COMPRESS_NONE = 0                   # a pool's NVMe copies' compressor
COMPRESS_LZ4 = 1
COMPRESS_LZ4HC = 2
COMPRESS_ZSTD = 3
COMPRESS_SHUFFLE2 = 1 << 0          # 16-bit elements as two byte planes

POOL_OPEN_EXISTING = 1 << 0
POOL_FAULT_NOLOAD = 1 << 1
POOL_RDONLY = 1 << 8

TIER_NONE = 0
TIER_HBM = 1
TIER_DRAM = 2
TIER_NVME = 3
NR_TIERS = 4
ADDR_NONE = (1 << 64) - 1
SLOT_NONE = (1 << 32) - 1

PUT_REPLACE = 1 << 0
GET_DIRECT = 1 << 1
LOOKUP_TOUCH = 1 << 0
LOOKUP_LOAD = 1 << 1
LOOKUP_PIN = 1 << 2

NVME_FORMAT = 1 << 0

PREFETCH_ADDR = 1 << 0
PREFETCH_CANCEL_LATE = 1 << 1
PREFETCH_BACKGROUND = 1 << 2
PRIO_MAX = 7
PREFETCH_GROUPS_MAX = 1024
COMPLETION_LATE = 1 << 0
CANCEL_ALL = 1 << 0

HBM_EMUL = 1
HBM_USER = 2
HBM_SLOTS_MAX = 65536
MOVE_TO_DEV = 1
MOVE_FROM_DEV = 2

# Events (struct kvtier_event.type) and why they happened (.reason).
EVENT_STORED = 1
EVENT_MOVED = 2
EVENT_REMOVED = 3
EVENT_CLEARED = 4
EVENT_OVERFLOW = 5
EVR_PUT = 1
EVR_REPLACE = 2
EVR_ADOPT = 3
EVR_REPLAY = 4
EVR_LOAD = 5
EVR_EVICT = 6
EVR_SHRINK = 7
EVR_STAGE = 8
EVR_UNSTAGE = 9
EVR_DROP = 10
EVR_BAD_READ = 11
EVR_LOG_RECLAIM = 12
EVR_IO_ERROR = 13
EVR_DETACH = 14
EVR_DESTROY = 15
EVENTS_FROM = 1 << 0
EVENTS_NONBLOCK = 1 << 1
CENSUS_HBM = 1 << 0
CENSUS_DRAM = 1 << 1
CENSUS_NVME = 1 << 2
CENSUS_PINNED = 1 << 3

# ---- ABI structs -----------------------------------------------------------

_u8, _u16, _u32, _s32, _u64 = (ctypes.c_uint8, ctypes.c_uint16,
                               ctypes.c_uint32, ctypes.c_int32,
                               ctypes.c_uint64)


class _Block(ctypes.Structure):
    """struct kvtier_block"""
    _fields_ = [("key", _u64 * 2), ("buf", _u64), ("addr", _u64),
                ("status", _s32), ("tier", _u32), ("slot", _u32),
                ("nsegs", _u32)]


class _Seg(ctypes.Structure):
    """struct kvtier_seg"""
    _fields_ = [("addr", _u64), ("len", _u64)]


class _Meta(ctypes.Structure):
    """struct kvtier_meta"""
    _fields_ = [("len", _u32), ("flags", _u32), ("data", _u8 * META_MAX)]


class _Api(ctypes.Structure):
    """struct kvtier_api"""
    _fields_ = [("api", _u32), ("flags", _u32), ("features", _u64),
                ("supported", _u64), ("ioctls", _u64),
                ("block_size_max", _u64), ("batch_max", _u32),
                ("name_max", _u32), ("max_pools", _u32), ("_pad", _u32),
                ("dram_bytes", _u64), ("reserved", _u64 * 4)]


class _PoolStat(ctypes.Structure):
    """struct kvtier_pool_stat"""
    _fields_ = [("flags", _u32), ("capacity", _u32), ("block_size", _u64),
                ("dram_blocks", _u32), ("numa_node", _s32), ("mode", _u32),
                ("uid", _u32), ("gid", _u32), ("_pad", _u32),
                ("resident", _u64 * NR_TIERS), ("pinned", _u64),
                ("puts", _u64), ("gets", _u64), ("hits", _u64),
                ("misses", _u64), ("evictions", _u64), ("drops", _u64),
                ("bytes_in", _u64), ("bytes_out", _u64),
                ("meta_bytes", _u64), ("demotions", _u64),
                ("promotions", _u64), ("bad_reads", _u64), ("dirty", _u64),
                ("dram_reserved", _u64), ("lost_blocks", _u64),
                ("parts", _u32), ("_pad2", _u32), ("part_reads", _u64),
                ("compress", _u8), ("compress_flags", _u8), ("_pad3", _u16),
                ("_pad4", _u32), ("z_blocks", _u64), ("z_raw_blocks", _u64),
                ("z_bytes_in", _u64), ("z_bytes_stored", _u64),
                ("z_bad", _u64)]


class _NvmeStat(ctypes.Structure):
    """struct kvtier_nvme_stat"""
    _fields_ = [("flags", _u32), ("attached", _u32), ("dev_bytes", _u64),
                ("region_bytes", _u64), ("nr_regions", _u32),
                ("free_regions", _u32), ("bytes_written", _u64),
                ("bytes_demoted", _u64), ("bytes_read", _u64),
                ("reclaimed", _u64), ("lost_blocks", _u64),
                ("io_errors", _u64), ("attach_ns", _u64),
                ("uuid", _u8 * 16), ("rescued", _u64),
                ("dev_index", _u32), ("dev_major", _u32),
                ("dev_minor", _u32), ("_pad", _u32),
                ("bytes_discarded", _u64), ("bytes_stored", _u64),
                ("reserved", _u64)]


class _Hint(ctypes.Structure):
    """struct kvtier_hint"""
    _fields_ = [("key", _u64 * 2), ("addr", _u64), ("status", _s32),
                ("tier", _u32), ("flags", _u32), ("prob", _u32),
                ("reserved", _u32 * 2)]


class _Completion(ctypes.Structure):
    """struct kvtier_completion"""
    _fields_ = [("group", _u64), ("cookie", _u64), ("status", _s32),
                ("ready", _u32), ("count", _u32), ("flags", _u32),
                ("end_ns", _u64), ("reserved", _u64)]


class _PrefetchArgs(ctypes.Structure):
    """struct kvtier_prefetch_args (lib/include/kvtier.h)"""
    _fields_ = [("group", _u64), ("cookie", _u64), ("deadline_ns", _u64),
                ("flags", _u32), ("priority", _u32), ("tier", _u32)]


class _PoolParams(ctypes.Structure):
    """struct kvtier_pool_params (lib/include/kvtier.h)"""
    _fields_ = [("name", ctypes.c_char_p), ("block_size", _u64),
                ("capacity", _u32), ("dram_blocks", _u32), ("mode", _u32),
                ("numa_node", _s32), ("flags", _u32)]


class _HbmStat(ctypes.Structure):
    """struct kvtier_hbm_stat"""
    _fields_ = [("flags", _u32), ("attached", _u32), ("backend", _u32),
                ("slots", _u32), ("used", _u32), ("__pad", _u32),
                ("to_dev", _u64), ("from_dev", _u64), ("adopted", _u64),
                ("evictions", _u64), ("copy_errors", _u64),
                ("timeouts", _u64), ("detached", _u64),
                ("reserved", _u64 * 2)]


class _Adopt(ctypes.Structure):
    """struct kvtier_adopt"""
    _fields_ = [("key", _u64 * 2), ("slot", _u32), ("status", _s32),
                ("addr", _u64), ("reserved", _u64)]


class _Event(ctypes.Structure):
    """struct kvtier_event"""
    _fields_ = [("seq", _u64), ("time_ns", _u64), ("key", _u64 * 2),
                ("addr", _u64), ("type", ctypes.c_uint16), ("tier", _u8),
                ("from_", _u8), ("reason", ctypes.c_uint16),
                ("flags", ctypes.c_uint16), ("lost", _u64)]


class _Events(ctypes.Structure):
    """struct kvtier_events"""
    _fields_ = [("flags", _u32), ("fd", _s32), ("seq", _u64),
                ("log_id", _u64), ("ring", _u32), ("__pad", _u32),
                ("reserved", _u64 * 2)]


class _CensusEntry(ctypes.Structure):
    """struct kvtier_census_entry"""
    _fields_ = [("key", _u64 * 2), ("addr", _u64), ("tier", _u32),
                ("flags", _u32)]


class _Tensor(ctypes.Structure):
    """struct kvtier_tensor (lib/include/kvtier.h)"""
    _fields_ = [("name", ctypes.c_char * TENSOR_NAME_MAX),
                ("dtype", ctypes.c_char * 8), ("ndim", _u32),
                ("shape", _u64 * TENSOR_DIMS_MAX), ("offset", _u64),
                ("bytes", _u64), ("layer", _s32), ("expert", _s32)]


assert ctypes.sizeof(_Block) == 48
assert ctypes.sizeof(_Event) == 56
assert ctypes.sizeof(_Events) == 48
assert ctypes.sizeof(_CensusEntry) == 32
assert ctypes.sizeof(_Meta) == 72
assert ctypes.sizeof(_HbmStat) == 96
assert ctypes.sizeof(_Adopt) == 40
assert ctypes.sizeof(_Api) == 96
assert ctypes.sizeof(_PoolStat) == 264
assert ctypes.sizeof(_NvmeStat) == 152
assert ctypes.sizeof(_Hint) == 48
assert ctypes.sizeof(_Completion) == 48
assert ctypes.sizeof(_PrefetchArgs) == 40
assert ctypes.sizeof(_Tensor) == 360

# ---- the library -----------------------------------------------------------


def _load():
    here = os.path.dirname(os.path.abspath(__file__))
    tried = []
    for cand in (os.environ.get("KVTIER_LIB"), "libkvtier.so.1",
                 os.path.join(here, "..", "lib", "libkvtier.so.1")):
        if not cand:
            continue
        try:
            return ctypes.CDLL(cand, use_errno=False)
        except OSError as e:
            tried.append("%s: %s" % (cand, e))
    raise ImportError("kvtier: cannot load libkvtier.so.1 (%s)"
                      % "; ".join(tried))


_lib = _load()
_P = ctypes.c_void_p
_PP = ctypes.POINTER(ctypes.c_void_p)
_BP = ctypes.POINTER(_Block)
_U32P = ctypes.POINTER(_u32)


def _proto(name, res, *args):
    f = getattr(_lib, name)
    f.restype = res
    f.argtypes = list(args)
    return f


_kvtier_open = _proto("kvtier_open", ctypes.c_int, _PP, _u64)
_kvtier_close = _proto("kvtier_close", None, _P)
_kvtier_ctx_fd = _proto("kvtier_ctx_fd", ctypes.c_int, _P)
_kvtier_api_info = _proto("kvtier_api_info", ctypes.c_int, _P,
                          ctypes.POINTER(_Api))
_kvtier_feature_name = _proto("kvtier_feature_name", ctypes.c_char_p, _u64)
_kvtier_tier_name = _proto("kvtier_tier_name", ctypes.c_char_p, ctypes.c_uint)
_kvtier_pool_create_parts = _proto("kvtier_pool_create_parts", ctypes.c_int,
                                   _P, ctypes.POINTER(_PoolParams), _u32,
                                   _PP)
_kvtier_pool_create_compressed = _proto("kvtier_pool_create_compressed",
                                        ctypes.c_int, _P,
                                        ctypes.POINTER(_PoolParams), _u32,
                                        _u32, _PP)
_kvtier_pool_open = _proto("kvtier_pool_open", ctypes.c_int, _P,
                           ctypes.c_char_p, _u32, _PP)
_kvtier_pool_close = _proto("kvtier_pool_close", None, _P)
_kvtier_pool_destroy = _proto("kvtier_pool_destroy", ctypes.c_int, _P,
                              ctypes.c_char_p)
_kvtier_pool_fd = _proto("kvtier_pool_fd", ctypes.c_int, _P)
_kvtier_pool_block_size = _proto("kvtier_pool_block_size", _u64, _P)
_kvtier_pool_capacity = _proto("kvtier_pool_capacity", _u32, _P)
_kvtier_pool_numa_node = _proto("kvtier_pool_numa_node", ctypes.c_int, _P)
_kvtier_stat = _proto("kvtier_stat", ctypes.c_int, _P,
                      ctypes.POINTER(_PoolStat))
_kvtier_sync = _proto("kvtier_sync", ctypes.c_int, _P, ctypes.POINTER(_u64))
_kvtier_nvme_stat = _proto("kvtier_nvme_stat", ctypes.c_int, _P,
                           ctypes.POINTER(_NvmeStat))
_kvtier_nvme_attach = _proto("kvtier_nvme_attach", ctypes.c_int, _P,
                             ctypes.c_char_p, _u32, _u32)
_kvtier_nvme_detach = _proto("kvtier_nvme_detach", ctypes.c_int, _P)
_kvtier_now_ns = _proto("kvtier_now_ns", _u64)
_kvtier_prefetch = _proto("kvtier_prefetch", ctypes.c_int, _P,
                          ctypes.POINTER(_Hint), _u32,
                          ctypes.POINTER(_PrefetchArgs), _U32P, _U32P)
_kvtier_cancel = _proto("kvtier_cancel", ctypes.c_int, _P, _u64, _u32, _U32P)
_kvtier_eventfd = _proto("kvtier_eventfd", ctypes.c_int, _P, ctypes.c_int)
_kvtier_completions = _proto("kvtier_completions", ctypes.c_int, _P,
                             ctypes.POINTER(_Completion), _u32, ctypes.c_int)
_kvtier_wait_group = _proto("kvtier_wait_group", ctypes.c_int, _P, _u64,
                            ctypes.POINTER(_Completion), ctypes.c_int)
_kvtier_request_ready = _proto("kvtier_request_ready", ctypes.c_int, _P, _P,
                               ctypes.POINTER(_u64 * 2), _u32, _u64,
                               ctypes.c_int, _U32P)
_kvtier_hbm_attach = _proto("kvtier_hbm_attach", ctypes.c_int, _P, _u32, _u32,
                            ctypes.POINTER(ctypes.c_int))
_kvtier_hbm_stat = _proto("kvtier_hbm_stat", ctypes.c_int, _P,
                          ctypes.POINTER(_HbmStat))
_kvtier_adopt_meta = _proto("kvtier_adopt_meta", ctypes.c_int, _P,
                            ctypes.POINTER(_Adopt), ctypes.POINTER(_Meta),
                            _u32, _U32P)
# int (*kvtier_mover_copy_fn)(void *arg, uint32_t op, uint32_t slot,
#                          void *dram, uint64_t bytes)
_MOVER_COPY_FN = ctypes.CFUNCTYPE(ctypes.c_int, _P, _u32, _u32, _P, _u64)
_kvtier_mover_memcpy_addr = ctypes.cast(_lib.kvtier_mover_memcpy, _P).value
_kvtier_mover_open = _proto("kvtier_mover_open", ctypes.c_int, _P,
                            ctypes.c_int, _P, _P, _PP)
_kvtier_mover_run = _proto("kvtier_mover_run", ctypes.c_int, _P, ctypes.c_int)
_kvtier_mover_close = _proto("kvtier_mover_close", None, _P)
_kvtier_events_open = _proto("kvtier_events_open", ctypes.c_int, _P, _u64,
                             _u32, ctypes.POINTER(_Events))
_kvtier_events_read = _proto("kvtier_events_read", ctypes.c_ssize_t,
                             ctypes.c_int, ctypes.POINTER(_Event),
                             ctypes.c_size_t, ctypes.c_int)
_kvtier_census = _proto("kvtier_census", ctypes.c_int, _P,
                        ctypes.POINTER(_u64), ctypes.POINTER(_CensusEntry),
                        ctypes.POINTER(_Meta), _u32, ctypes.POINTER(_u64),
                        ctypes.POINTER(_u64))
_kvtier_event_name = _proto("kvtier_event_name", ctypes.c_char_p,
                            ctypes.c_uint)
_kvtier_event_reason_name = _proto("kvtier_event_reason_name",
                                   ctypes.c_char_p, ctypes.c_uint)
_kvtier_weights_open = _proto("kvtier_weights_open", ctypes.c_int, _P,
                              ctypes.c_char_p, ctypes.c_char_p, _u64, _u32,
                              _PP)
_kvtier_weights_close = _proto("kvtier_weights_close", None, _P)
_kvtier_weights_pool = _proto("kvtier_weights_pool", _P, _P)
_kvtier_weights_count = _proto("kvtier_weights_count", _u32, _P, _U32P,
                               _U32P)
_kvtier_weights_tensor = _proto("kvtier_weights_tensor", ctypes.c_int, _P,
                                _u32, ctypes.c_char_p,
                                ctypes.POINTER(_Tensor))
_kvtier_weights_blocks = _proto("kvtier_weights_blocks", ctypes.c_int, _P,
                                _s32, _s32, ctypes.POINTER(_u64), _u32)
_kvtier_weights_prefetch = _proto("kvtier_weights_prefetch", ctypes.c_int,
                                  _P, _s32, _s32,
                                  ctypes.POINTER(_PrefetchArgs))
_kvtier_weights_prefetch_experts = _proto(
    "kvtier_weights_prefetch_experts", ctypes.c_int, _P, _s32,
    ctypes.POINTER(_s32), ctypes.POINTER(_u32), _u32,
    ctypes.POINTER(_PrefetchArgs))
_kvtier_weights_read = _proto("kvtier_weights_read", ctypes.c_int, _P,
                              ctypes.POINTER(_Tensor), _P)
_kvtier_key_chain_n = _proto("kvtier_key_chain_n", None,
                             ctypes.POINTER(_u64 * 2),
                             ctypes.POINTER(_u64), ctypes.c_size_t,
                             ctypes.POINTER(_u64 * 2))
# The batched commands share one signature.
_BATCH = {}
for _n in ("put", "get", "lookup", "drop", "pin", "unpin", "reserve",
           "commit", "abort"):
    _BATCH[_n] = _proto("kvtier_" + _n, ctypes.c_int, _P, _BP, _u32, _u32,
                        _U32P)
# ... and those that carry block metadata records another.
_BATCH_META = {}
for _n in ("put", "get", "lookup", "commit"):
    _BATCH_META[_n] = _proto("kvtier_%s_meta" % _n, ctypes.c_int, _P, _BP,
                             ctypes.POINTER(_Meta), _u32, _u32, _U32P)
_kvtier_get_part = _proto("kvtier_get_part", ctypes.c_int, _P, _BP,
                          ctypes.POINTER(_Meta), _u32, _u32, _u32, _U32P)


class Error(OSError):
    """A libkvtier call failed; ``errno`` is the kernel's errno."""


def _check(ret, what):
    if ret < 0:
        raise Error(-ret, os.strerror(-ret), what)
    return ret


def tier_name(tier):
    """'none', 'hbm', 'dram', 'nvme' (KVTIER_TIER_*), or '?'."""
    return _kvtier_tier_name(tier).decode()


def feature_name(bit):
    """The name of one KVTIER_F_* bit ('pools', ...), or None."""
    n = _kvtier_feature_name(bit)
    return n.decode() if n else None


def event_name(etype):
    """The name of an EVENT_* type ('stored', 'moved', 'removed', 'cleared',
    'overflow'), or None."""
    n = _kvtier_event_name(etype)
    return n.decode() if n else None


def event_reason_name(reason):
    """The name of an EVR_* reason ('put', 'replace', 'evict', 'drop',
    ...), or None (for 0 too)."""
    n = _kvtier_event_reason_name(reason)
    return n.decode() if n else None


def now_ns():
    """CLOCK_MONOTONIC now, in nanoseconds: the clock of prefetch deadlines
    and of Completion.end_ns (kvtier_now_ns(3))."""
    return _kvtier_now_ns()


# ---- keys ------------------------------------------------------------------


class Key(tuple):
    """A 128-bit block key: (k0, k1), as struct kvtier_block.key[0..1]."""
    __slots__ = ()

    def __new__(cls, k0, k1=0):
        return tuple.__new__(cls, (k0 & (2**64 - 1), k1 & (2**64 - 1)))

    @classmethod
    def of(cls, key):
        """A Key from a Key, a (k0, k1) pair, a 128-bit int (k0 the low
        64 bits) or 16 bytes (little-endian k0 then k1)."""
        if isinstance(key, Key):
            return key
        if isinstance(key, int):
            return cls(key, key >> 64)
        if isinstance(key, (bytes, bytearray, memoryview)):
            b = bytes(key)
            if len(b) != 16:
                raise ValueError("a key is 16 bytes")
            return cls(int.from_bytes(b[:8], "little"),
                       int.from_bytes(b[8:], "little"))
        k0, k1 = key
        return cls(k0, k1)

    def __int__(self):
        return self[0] | self[1] << 64

    def __repr__(self):
        return "Key(%016x%016x)" % (self[1], self[0])


def key_chain(ids, prev=None):
    """The keys of a prefix chain: key i depends on ids[0..i] (and prev).

    ids are 64-bit block identifiers, e.g. a hash of each block's tokens
    or a Mooncake trace's hash_ids; kvtier_key_chain(3) gives the mix. Keys
    are deterministic, not collision-resistant against an adversary.
    """
    ids = list(ids)
    n = len(ids)
    if not n:
        return []
    arr = (_u64 * n)(*[i & (2**64 - 1) for i in ids])
    out = ((_u64 * 2) * n)()
    p = None
    if prev is not None:
        k = Key.of(prev)
        p = ctypes.pointer((_u64 * 2)(k[0], k[1]))
    _kvtier_key_chain_n(p, arr, n, out)
    return [Key(o[0], o[1]) for o in out]


# ---- results ---------------------------------------------------------------


class Batch:
    """The outcome of a batched command.

    done:   entries with status 0; for lookup() the length of the longest
            resident prefix.
    status: per entry, 0 or a negative errno (-errno.ENOENT: a miss).
    tier:   per entry, TIER_* where the block lives (TIER_NONE if not;
            TIER_HBM when a pool's device tier holds it).
    addr:   per entry, the block address, or ADDR_NONE.
    slot:   per entry (lookup()), the block's HBM slot when its tier is
            TIER_HBM, else SLOT_NONE.
    meta:   per entry, with get(meta=True) or lookup(meta=True): the
            block's metadata record (bytes; b"" when it has none, or the
            entry failed); else None.
    """
    __slots__ = ("done", "status", "tier", "addr", "slot", "meta")

    def __init__(self, done, blocks, meta=None):
        self.done = done
        self.status = [b.status for b in blocks]
        self.tier = [b.tier for b in blocks]
        self.addr = [b.addr for b in blocks]
        self.slot = [b.slot for b in blocks]
        self.meta = ([bytes(m.data[:m.len]) for m in meta]
                     if meta is not None else None)

    def __len__(self):
        return len(self.status)

    @property
    def tiers(self):
        """Tier names per entry: 'hbm', 'dram', 'nvme', 'none'."""
        return [tier_name(t) for t in self.tier]

    def __repr__(self):
        return "Batch(done=%d/%d)" % (self.done, len(self.status))


class Stat(dict):
    """A dict of counters, readable as attributes too (st.puts)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class Prefetch:
    """What PREFETCH said about a group's hints (Pool.prefetch(),
    Weights.prefetch()).

    group:    the group id.
    queued:   hints whose blocks need staging (not in the target tier
              yet: a read into DRAM, and for TIER_HBM a copy to a slot).
    resident: hints whose blocks were in the target tier already.
    status:   per hint, 0 (queued or resident) or -errno.ENOENT (no such
              block: the hint is dropped, the group goes on without it).
    tier:     per hint, TIER_* where the block was (TIER_NONE if absent).
    addr:     per hint, the block address, or ADDR_NONE.

    Of Weights.prefetch(), addr is the blocks hinted, and queued,
    resident, status and tier are None: kvtier_weights_prefetch(3) does
    not report them.

    wait(timeout_ms) waits for the group's Completion (Pool.wait_group()).
    """
    __slots__ = ("group", "queued", "resident", "status", "tier", "addr",
                 "_pool")

    def __init__(self, pool, group, queued, resident, hints, addrs=None):
        self._pool = pool
        self.group = group
        self.queued = queued
        self.resident = resident
        if hints is None:
            self.status = self.tier = None
            self.addr = list(addrs)
            return
        self.status = [h.status for h in hints]
        self.tier = [h.tier for h in hints]
        self.addr = [h.addr for h in hints]

    def __len__(self):
        return len(self.addr)

    @property
    def tiers(self):
        """Tier names per hint: 'hbm', 'dram', 'nvme', 'none' (None when
        tier is)."""
        if self.tier is None:
            return None
        return [tier_name(t) for t in self.tier]

    def wait(self, timeout_ms=-1):
        """The group's Completion, or None if none came in timeout_ms."""
        return self._pool.wait_group(self.group, timeout_ms)

    def __repr__(self):
        return "Prefetch(group=%d, queued=%s, resident=%s, hints=%d)" % (
            self.group, self.queued, self.resident, len(self.addr))


class Completion(collections.namedtuple(
        "Completion", "group cookie status ready count flags end_ns")):
    """The end of a prefetch group (struct kvtier_completion).

    group, cookie: as given to Pool.prefetch().
    status: 0 (every hinted block that exists is in DRAM), -errno.ETIME
            (cancel_late and the deadline passed), -errno.ECANCELED
            (Pool.cancel()), -errno.EIO (a block could not be read or went
            away), -errno.ENOSPC (DRAM could not hold the group at once).
    ready:  hints, from the first, whose blocks are in DRAM now: the usable
            prefix (a dropped hint ends it).
    count:  hints in the group.
    flags:  COMPLETION_LATE when it ended after its deadline (.late).
    end_ns: CLOCK_MONOTONIC time of the end (see now_ns()).
    """
    __slots__ = ()

    @property
    def late(self):
        return bool(self.flags & COMPLETION_LATE)

    @classmethod
    def _of(cls, c):
        return cls(c.group, c.cookie, c.status, c.ready, c.count, c.flags,
                   c.end_ns)


class Ready(collections.namedtuple("Ready", "status ready")):
    """The outcome of Pool.request_ready().

    status: 0 (the cached prefix is in DRAM), or the prefetch group's
            status (-errno.ETIME, -errno.EIO, -errno.ENOSPC), or
            -errno.ETIMEDOUT (the wait ran out; the group was cancelled).
    ready:  blocks of the chain, from the first, in DRAM at the end.
    """
    __slots__ = ()


class Event(collections.namedtuple(
        "Event", "seq time_ns type key addr tier from_tier reason lost")):
    """One event of a pool (struct kvtier_event), read from Events.

    seq:       its number: 1 for the pool's first event, one more each.
               EVENT_OVERFLOW: the first event lost.
    time_ns:   when it happened (CLOCK_MONOTONIC, see now_ns()).
    type:      EVENT_STORED (key is in the pool, in tier), EVENT_MOVED
               (the highest tier holding it went from from_tier to tier),
               EVENT_REMOVED (it left the pool; tier: where it was last),
               EVENT_CLEARED (the pool is gone, with every key: its last
               event), EVENT_OVERFLOW (this reader lost events seq to
               seq + lost - 1: take a census again).
    key:       the block's Key; None for CLEARED and OVERFLOW.
    addr:      its block address; None for CLEARED and OVERFLOW.
    tier:      TIER_HBM, TIER_DRAM or TIER_NVME (see above); else 0.
    from_tier: MOVED: the tier it left; else 0.
    reason:    EVR_*: why (EVR_PUT, EVR_REPLACE, EVR_EVICT, EVR_DROP, ...);
               0 for OVERFLOW.
    lost:      OVERFLOW: the number of events lost; else 0.

    A key replaced is STORED again (EVR_REPLACE) without a REMOVED first.
    """
    __slots__ = ()

    @property
    def type_name(self):
        """'stored', 'moved', 'removed', 'cleared', 'overflow'."""
        return event_name(self.type)

    @property
    def reason_name(self):
        """'put', 'replace', 'evict', 'drop', ... or None."""
        return event_reason_name(self.reason)

    @property
    def tier_name(self):
        return tier_name(self.tier)

    @property
    def from_name(self):
        return tier_name(self.from_tier)

    @classmethod
    def _of(cls, e):
        none = e.type in (EVENT_CLEARED, EVENT_OVERFLOW)
        return cls(e.seq, e.time_ns, e.type,
                   None if none else Key(e.key[0], e.key[1]),
                   None if none or e.addr == ADDR_NONE else e.addr,
                   e.tier, e.from_, e.reason, e.lost)


class Events:
    """An events fd on a pool (Pool.events(), kvtier_events_open(3)).

    Iterate over it for Event tuples, in order: iteration waits for the
    next event (with nonblock=True it stops when none is there now) and
    ends at the end of the log: after the pool's EVENT_CLEARED, once its
    last fd and mapping are gone (the events fd does not keep the pool).
    read(timeout_ms) returns a list instead. Close it, or use it as a
    context manager; fileno() is for select/poll/epoll (readable when an
    event is there; POLLHUP once the pool is gone).

    seq:      the first event the fd returned (it asked for from_seq, or
              the pool's next).
    next_seq: the number of the next event it will return.
    log_id:   the pool's event log: a census (Pool.census()) with the
              same log_id is of this log.
    ring:     events the pool keeps for its readers (the events_ring
              module parameter); a reader further behind gets one
              EVENT_OVERFLOW.
    ended:    True once the end of the log was read.
    """

    def __init__(self, pool, from_seq=0, nonblock=False):
        e = _Events()
        fd = _check(_kvtier_events_open(
            pool._h(), from_seq, EVENTS_NONBLOCK if nonblock else 0,
            ctypes.byref(e)), "events " + pool.name)
        self._fd = fd
        self.nonblock = nonblock
        self.seq = e.seq
        self.next_seq = e.seq
        self.log_id = e.log_id
        self.ring = e.ring
        self.ended = False
        self._buf = (_Event * 256)()
        self._pending = collections.deque()

    def fileno(self):
        if self._fd < 0:
            raise ValueError("kvtier events fd is closed")
        return self._fd

    def read(self, timeout_ms=-1, max=256):
        # pylint: disable=redefined-builtin
        """The events there are, up to max, waiting up to timeout_ms for
        the first (0: not at all, -1: forever). [] when none came, or at
        the end of the log (then ended is True). Raises Error."""
        if max < 1:
            raise ValueError("max must be at least 1")
        if self._pending:
            out = []
            while self._pending and len(out) < max:
                out.append(self._pending.popleft())
            return out
        if self.ended:
            return []
        fd = self.fileno()
        if max > len(self._buf):
            self._buf = (_Event * max)()
        end = None if timeout_ms < 0 else now_ns() + timeout_ms * 1000000
        while True:
            left = -1
            if end is not None:
                left = (end - now_ns() + 999999) // 1000000
                left = left if left > 0 else 0
            n = _kvtier_events_read(fd, self._buf, max, left)
            # A signal: its Python handler runs here, then wait on.
            if n != -_errno.EINTR:
                break
        if n == -_errno.ETIMEDOUT:
            return []
        _check(n, "events read")
        if n == 0:
            self.ended = True
            return []
        out = [Event._of(self._buf[i]) for i in range(n)]
        last = out[-1]
        self.next_seq = last.seq + (last.lost if last.type == EVENT_OVERFLOW
                                    else 1)
        return out

    def __iter__(self):
        return self

    def __next__(self):
        if not self._pending:
            self._pending.extend(self.read(0 if self.nonblock else -1))
            if not self._pending:
                raise StopIteration
        return self._pending.popleft()

    def close(self):
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    @property
    def closed(self):
        return self._fd < 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_fd", -1) >= 0:
            self.close()

    def __repr__(self):
        return "<kvtier.Events next_seq=%d log_id=%016x%s>" % (
            self.next_seq, self.log_id, " closed" if self.closed else "")


class CensusEntry(collections.namedtuple("CensusEntry",
                                         "key addr tier flags meta")):
    """One key of a census (struct kvtier_census_entry).

    key:   its Key.
    addr:  its block address.
    tier:  TIER_*: its tier as the event log last told it.
    flags: CENSUS_HBM, CENSUS_DRAM, CENSUS_NVME (the tiers holding a copy
           of it when it was listed), CENSUS_PINNED.
    meta:  with census(meta=True), its metadata record (bytes, b"" for
           none); else None.
    """
    __slots__ = ()

    @property
    def tier_name(self):
        return tier_name(self.tier)

    @property
    def copies(self):
        """Names of the tiers that hold a copy: ['dram', 'nvme'], ..."""
        return [n for b, n in ((CENSUS_HBM, "hbm"), (CENSUS_DRAM, "dram"),
                               (CENSUS_NVME, "nvme")) if self.flags & b]

    @property
    def pinned(self):
        return bool(self.flags & CENSUS_PINNED)


class Census(collections.namedtuple("Census", "seq log_id entries")):
    """A pool's keys (Pool.census()), unpacked as (seq, log_id, entries).

    seq:     the last event of the pool's log the listing reflects (that of
             its first call; 0: none yet). The listing and the events after
             seq (of an Events with the same log_id) lose nothing: apply
             them in order and the result is the pool.
    log_id:  the pool's event log.
    entries: CensusEntry tuples, in address order.
    """
    __slots__ = ()

    @property
    def keys(self):
        """{Key: tier} of the listing."""
        return {e.key: e.tier for e in self.entries}


class Tensor(collections.namedtuple(
        "Tensor", "name dtype shape offset bytes layer expert")):
    """One tensor of a weight pool (struct kvtier_tensor, Weights.tensor()).

    name:   its name in the file's tensor table (a str); a GGUF stacked
            expert's slice is 'name[e]' (kvtier_weights_open(3)).
    dtype:  its safetensors dtype: 'F16', 'BF16', 'F32', 'I8', ..., or
            its GGUF ggml type's name: 'Q4_K', 'Q8_0', ...
    shape:  its shape, outermost first, a tuple of ints (() for a
            scalar).
    offset: where its bytes start in the pool's address space: block
            offset // block_size, byte offset % block_size of it.
    bytes:  its length in bytes (the shape's product times the dtype's
            size).
    layer:  the layer its name names (the number after 'layers.',
            'layer.', 'h.' or 'blk.'), or -1 (embeddings, final norm,
            head).
    expert: the expert its name names within the layer (the number after
            'experts.'), a GGUF slice's expert, or -1.
    """
    __slots__ = ()

    @classmethod
    def _of(cls, t):
        return cls(t.name.decode("utf-8", "surrogateescape"),
                   t.dtype.decode(), tuple(t.shape[:t.ndim]), t.offset,
                   t.bytes, t.layer, t.expert)

    def _raw(self):
        """The struct kvtier_tensor of this tuple."""
        t = _Tensor()
        t.name = self.name.encode("utf-8", "surrogateescape")
        t.dtype = self.dtype.encode()
        t.ndim = len(self.shape)
        for i, d in enumerate(self.shape):
            t.shape[i] = d
        t.offset = self.offset
        t.bytes = self.bytes
        t.layer = self.layer
        t.expert = self.expert
        return t


# Statuses kvtier_request_ready() returns for a group that ended badly or a
# wait that ran out: results, not errors of the call.
_READY_STATUSES = (-_errno.ETIME, -_errno.EIO, -_errno.ENOSPC,
                   -_errno.ECANCELED, -_errno.ETIMEDOUT)


def _struct_dict(s):
    d = Stat()
    for name, _ in s._fields_:
        if name.startswith("_") or name in ("reserved", "flags"):
            continue
        v = getattr(s, name)
        d[name] = v
    return d


def _prefetch_args(group, deadline_ns, cookie, priority, cancel_late, tier,
                   background):
    """The struct kvtier_prefetch_args of Pool.prefetch()'s arguments."""
    flags = ((PREFETCH_CANCEL_LATE if cancel_late else 0) |
             (PREFETCH_BACKGROUND if background else 0))
    return _PrefetchArgs(group, cookie, deadline_ns, flags, priority, tier)


# ---- buffers ---------------------------------------------------------------


def _addr_of(obj, size, writable, keep):
    """Address of the memory of buffer-protocol @obj, checked to hold
    @size bytes (None: any size but 0), C-contiguous. The ctypes object
    that pins the export is appended to @keep, which must outlive the
    call."""
    if size is None:
        size = memoryview(obj).nbytes
        if not size:
            raise ValueError("empty segment")
    if isinstance(obj, bytes) and not writable:
        if len(obj) != size:
            raise ValueError("buffer of %d bytes, %d expected"
                             % (len(obj), size))
        keep.append(obj)
        return ctypes.cast(ctypes.c_char_p(obj), ctypes.c_void_p).value
    mv = memoryview(obj)
    if not mv.c_contiguous:
        raise ValueError("buffer is not C-contiguous")
    if mv.nbytes != size:
        raise ValueError("buffer of %d bytes, %d expected" % (mv.nbytes, size))
    if mv.readonly:
        if writable:
            raise ValueError("GET needs a writable buffer")
        c = (ctypes.c_char * size).from_buffer_copy(mv)
    else:
        c = (ctypes.c_char * size).from_buffer(mv.cast("B") if mv.ndim != 1
                                               or mv.format != "B" else mv)
    keep.append(c)
    keep.append(mv)
    return ctypes.addressof(c)


def _segs(parts, bs, writable, keep):
    """A struct kvtier_seg array for the buffers of one scatter-gather
    entry: (its address, the number of segments)."""
    if not parts or len(parts) > SEGS_MAX:
        raise ValueError("%d segments (1 to %d)" % (len(parts), SEGS_MAX))
    segs = (_Seg * len(parts))()
    total = 0
    for i, part in enumerate(parts):
        segs[i].addr = _addr_of(part, None, writable, keep)
        segs[i].len = memoryview(part).nbytes
        total += segs[i].len
    if total != bs:
        raise ValueError("segments of %d bytes, %d expected" % (total, bs))
    keep.append(segs)
    return ctypes.addressof(segs), len(parts)


def _bufs(buffers, n, bs, writable, keep):
    """Per-entry (address, nsegs) for n blocks of bs bytes (see module
    doc): nsegs 0 for one buffer, else the address of a segment list."""
    if isinstance(buffers, (list, tuple)):
        if len(buffers) != n:
            raise ValueError("%d buffers for %d keys" % (len(buffers), n))
        return [_segs(b, bs, writable, keep) if isinstance(b, (list, tuple))
                else (_addr_of(b, bs, writable, keep), 0) for b in buffers]
    base = _addr_of(buffers, n * bs, writable, keep)
    return [(base + i * bs, 0) for i in range(n)]


def _meta_in(records, n):
    """A struct kvtier_meta array for n records: a sequence of n bytes-like
    objects (b"" or None: no record), or one for every entry. None stays
    None (the plain command). A record above META_MAX bytes is passed on
    as it is, for the kernel's per-entry -EMSGSIZE."""
    if records is None:
        return None
    if isinstance(records, (bytes, bytearray, memoryview)):
        records = [records] * n
    records = list(records)
    if len(records) != n:
        raise ValueError("%d records for %d keys" % (len(records), n))
    arr = (_Meta * n)()
    for i, r in enumerate(records):
        if r is None:
            continue
        r = bytes(r)
        arr[i].len = len(r)
        ctypes.memmove(arr[i].data, r, min(len(r), META_MAX))
    return arr


# ---- context and pools -----------------------------------------------------


class Context:
    """An open /dev/kvtier after the API handshake (kvtier_open(3))."""

    def __init__(self, features=FEATURES_ALL):
        p = ctypes.c_void_p()
        _check(_kvtier_open(ctypes.byref(p), features), DEVICE)
        self._ctx = p
        api = _Api()
        _kvtier_api_info(self._ctx, ctypes.byref(api))
        self.api = _struct_dict(api)

    def _h(self):
        if not self._ctx:
            raise ValueError("kvtier context is closed")
        return self._ctx

    @property
    def features(self):
        """Names of the features the kernel supports."""
        return [feature_name(1 << b) or "bit%d" % b for b in range(64)
                if self.api["supported"] >> b & 1]

    def fileno(self):
        return _kvtier_ctx_fd(self._h())

    def create_pool(self, name, block_size, capacity, dram_blocks=0, mode=0,
                    numa_node=-1, flags=0, parts=0, compress=COMPRESS_NONE,
                    compress_flags=0):
        """Create a pool and return it open (kvtier_pool_create(3)).

        flags: POOL_OPEN_EXISTING (open it if the name exists),
        POOL_FAULT_NOLOAD, POOL_RDONLY. parts (needs F_PARTS): 0, or
        2..PARTS_MAX parts its blocks' NVMe copies can be read in by
        Pool.get_part() (kvtier_pool_create_parts(3)). compress (needs
        F_COMPRESS; not with parts): COMPRESS_LZ4, COMPRESS_LZ4HC or
        COMPRESS_ZSTD, its NVMe copies' compressor, with compress_flags
        COMPRESS_SHUFFLE2 for fp16/bf16 KV
        (kvtier_pool_create_compressed(3)). Raises Error: EEXIST, EINVAL,
        ENOSPC (DRAM budget), EMFILE (max_pools), ENOPKG (no such
        compressor), ...
        """
        pp = _PoolParams(name.encode(), block_size, capacity, dram_blocks,
                         mode, numa_node, flags)
        p = ctypes.c_void_p()
        if compress or compress_flags:
            if parts:
                raise ValueError("parts and compress do not go together")
            ret = _kvtier_pool_create_compressed(self._h(), ctypes.byref(pp),
                                                 compress, compress_flags,
                                                 ctypes.byref(p))
        else:
            ret = _kvtier_pool_create_parts(self._h(), ctypes.byref(pp),
                                            parts, ctypes.byref(p))
        _check(ret, name)
        return Pool(p, name)

    def open_pool(self, name, readonly=False):
        """Open an existing pool by name (kvtier_pool_open(3)).

        Raises Error: ENOENT, EACCES.
        """
        p = ctypes.c_void_p()
        _check(_kvtier_pool_open(self._h(), name.encode(),
                                 POOL_RDONLY if readonly else 0,
                                 ctypes.byref(p)), name)
        return Pool(p, name)

    def destroy_pool(self, name):
        """Remove a pool's name; its data goes with its last fd
        (kvtier_pool_destroy(3)). Raises Error: ENOENT, EPERM."""
        _check(_kvtier_pool_destroy(self._h(), name.encode()), name)

    def open_weights(self, path, name, block_size, dram_blocks=0):
        """A weight pool of a safetensors or GGUF model file, a Weights
        (kvtier_weights_open(3), needs F_WEIGHTS).

        Reads and checks the file's tensor table, then creates the pool
        `name` of block_size bytes a block (a multiple of 4096) and
        dram_blocks of DRAM (0: the whole file), mode 0600, or opens the
        pool of that name made from the same file (unchanged since). The
        kernel opens the file for itself; while the pool lives the file
        cannot be opened for writing. The pool stays, by name, after
        Weights.close(), until destroy_pool(name).

        Raises Error: EBADMSG (a malformed file, or a table that lies),
        ESTALE (the pool of that name is another file's, or this one's
        before it changed), EINVAL (block_size, not a regular file),
        EFBIG (too many blocks: use larger ones), ETXTBSY (the file is
        open for writing), EOPNOTSUPP (no F_WEIGHTS), ENOENT, EACCES (as
        open(2)), and as create_pool().
        """
        w = ctypes.c_void_p()
        _check(_kvtier_weights_open(self._h(), os.fsencode(path),
                                    name.encode(), block_size, dram_blocks,
                                    ctypes.byref(w)),
               "%s (%s)" % (name, os.fsdecode(path)))
        return Weights(w, name, path)

    def nvme_attach(self, path, format=False, region_kib=0):
        # pylint: disable=redefined-builtin
        """Attach a block device as the NVMe tier (kvtier_nvme_attach(3)).

        format: write a new, empty store (NVME_FORMAT; the device's content
        is lost), with regions of region_kib KiB (0: 4096). Needs
        CAP_SYS_ADMIN. Raises Error: EPERM, EBUSY (a device is attached),
        EMEDIUMTYPE (not a kvtier store and not format), EINVAL, ...
        """
        _check(_kvtier_nvme_attach(self._h(), os.fsencode(path),
                                   NVME_FORMAT if format else 0, region_kib),
               path)

    def nvme_detach(self):
        """Write back, wait for I/O, detach the NVMe tier
        (kvtier_nvme_detach(3)). Raises Error: ENODEV (none attached)."""
        _check(_kvtier_nvme_detach(self._h()), "nvme_detach")

    def nvme_stat(self):
        """The NVMe tier's state and counters (kvtier_nvme_stat(3)), a Stat;
        attached == 0 when none is attached."""
        st = _NvmeStat()
        _check(_kvtier_nvme_stat(self._h(), ctypes.byref(st)), "nvme_stat")
        d = _struct_dict(st)
        d["uuid"] = bytes(st.uuid)
        return d

    def close(self):
        if self._ctx:
            _kvtier_close(self._ctx)
            self._ctx = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_ctx", None):
            self.close()


def open(features=FEATURES_ALL):  # pylint: disable=redefined-builtin
    """Open /dev/kvtier and negotiate @features: a Context.

    Raises Error: ENOENT (module not loaded), EACCES (not in the group
    that owns /dev/kvtier), EOPNOTSUPP (a feature this kernel lacks).
    The context and its pools can use the negotiated features only: the
    others raise EOPNOTSUPP.
    """
    return Context(features)


class Pool:
    """An open pool (a pool fd). Close it, or use it as a context manager;
    the pool and its blocks stay until destroyed."""

    def __init__(self, handle, name):
        self._p = handle
        self.name = name
        self.block_size = _kvtier_pool_block_size(handle)
        self.capacity = _kvtier_pool_capacity(handle)
        self.numa_node = _kvtier_pool_numa_node(handle)

    def _h(self):
        if not self._p:
            raise ValueError("kvtier pool %s is closed" % self.name)
        return self._p

    def fileno(self):
        """The pool fd (owned by the pool: do not close it)."""
        return _kvtier_pool_fd(self._h())

    # One helper runs every batched command: it builds the struct
    # kvtier_block array, calls libkvtier, and reads the entries back.
    def _batch(self, cmd, keys, buffers=None, flags=0, writable=False,
               block_addrs=None, meta_in=None, meta_out=False, part=None):
        keys = list(keys)
        n = len(keys)
        if not n:
            return Batch(0, [], [] if meta_out else None)
        meta = _meta_in(meta_in, n)
        if meta_out:
            meta = (_Meta * n)()
        keep = []
        size = part[1] if part else self.block_size
        addrs = (_bufs(buffers, n, size, writable, keep)
                 if buffers is not None else None)
        if block_addrs is not None and len(block_addrs) != n:
            raise ValueError("%d keys, %d addresses" % (n, len(block_addrs)))
        blocks = (_Block * n)()
        for i, k in enumerate(keys):
            k = Key.of(k)
            b = blocks[i]
            b.key[0] = k[0]
            b.key[1] = k[1]
            if addrs:
                b.buf, b.nsegs = addrs[i]
            if block_addrs is not None:
                b.addr = block_addrs[i]
        done = _u32()
        if part:
            ret = _kvtier_get_part(self._h(), blocks, meta, n, part[0],
                                   part[1], ctypes.byref(done))
        elif meta is None:
            ret = _BATCH[cmd](self._h(), blocks, n, flags, ctypes.byref(done))
        else:
            ret = _BATCH_META[cmd](self._h(), blocks, meta, n, flags,
                                   ctypes.byref(done))
        _check(ret, "%s %s" % (cmd, self.name))
        del keep
        return Batch(done.value, blocks, meta if meta_out else None)

    def put(self, keys, buffers, replace=False, meta=None):
        """Copy blocks into the pool. Per-entry status: -EEXIST (present,
        without replace), -ENOSPC, -ENOMEM, -EBUSY.

        meta (needs F_META, else Error EOPNOTSUPP): each block's metadata
        record, kept with it for its life: a sequence of one bytes-like
        object per key (b"" or None: none), or one for all of them; at
        most META_MAX bytes each (a longer one fails its entry with
        -EMSGSIZE). With replace the key's new block has the new record,
        or none."""
        return self._batch("put", keys, buffers,
                           PUT_REPLACE if replace else 0, meta_in=meta)

    def get(self, keys, buffers, meta=False, direct=False):
        """Copy blocks out of the pool into writable buffers (blocks only
        on NVMe are read back first). Per-entry status: -ENOENT (miss),
        -ENOSPC, -EIO, -EINTR. meta=True (needs F_META): Batch.meta holds
        each block's record, read with its bytes. direct=True (needs
        F_DIRECT): a block only on NVMe whose buffer is page-aligned is
        read by the device straight into it and stays on NVMe
        (Batch.tier TIER_NVME)."""
        return self._batch("get", keys, buffers,
                           GET_DIRECT if direct else 0, writable=True,
                           meta_out=meta)

    def get_part(self, keys, buffers, offset, length, meta=False):
        """Copy bytes [offset, offset + length) of each block into
        writable buffers of length bytes (kvtier_get_part(3), needs
        F_PARTS): a layer of every block of a chain. A block only on NVMe,
        in a pool made with parts, is read in the parts that cover the
        range, verified, and stays on NVMe. Per-entry status as get().
        Raises Error EINVAL for a range out of the block."""
        return self._batch("get", keys, buffers, writable=True,
                           meta_out=meta, part=(offset, length))

    def lookup(self, keys, touch=False, load=False, pin=False, meta=False):
        """Where a chain of keys lives: Batch.done is the longest resident
        prefix, Batch.tier each entry's tier. touch: count the resident
        ones as used (LRU); load: bring the prefix into DRAM first; pin
        (needs F_LOOKUP_PIN): bring it into DRAM and pin each block of it
        for this pool handle in the same command, so none of it is evicted
        before it is read (through map(), Batch.addr); Batch.done is then
        the number pinned, and unpin() releases them. The prefix ends at
        the first block that could not be pinned (its status says why:
        -ENOENT, -ENOSPC, -EIO, -EOVERFLOW). meta=True (needs F_META):
        Batch.meta holds each block's record, for the caller to check
        (a block computed by another model is not a hit)."""
        return self._batch("lookup", keys, None,
                           (LOOKUP_TOUCH if touch else 0) |
                           (LOOKUP_LOAD if load else 0) |
                           (LOOKUP_PIN if pin else 0), meta_out=meta)

    def drop(self, keys):
        """Remove blocks. Per-entry status: -ENOENT, -EBUSY (pinned)."""
        return self._batch("drop", keys)

    def pin(self, keys):
        """Keep blocks resident (in DRAM) while this pool stays open."""
        return self._batch("pin", keys)

    def unpin(self, keys):
        """Release pins taken with pin() on this pool."""
        return self._batch("unpin", keys)

    def reserve(self, keys, replace=False):
        """Zero-copy store (needs F_RESERVE): take a block for each key,
        owned by this pool handle and seen by no reader, to fill in place
        through map_reserved() at Batch.addr, then commit() or abort().
        Per-entry status: -EEXIST (present, without replace), -EDQUOT (the
        handle holds reserve_max), -ENOSPC, -ENOMEM."""
        return self._batch("reserve", keys, None,
                           PUT_REPLACE if replace else 0)

    def commit(self, keys, addrs, replace=False, meta=None):
        """Publish reserved blocks (keys and the addresses reserve()
        gave) as a PUT would, copying nothing; only once every write into
        them has ended. Per-entry status: -ENOENT (not reserved by this
        handle), -EALREADY (committed), -EEXIST (stored meanwhile; still
        reserved), -EBUSY (replacing a pinned block; still reserved),
        -EMSGSIZE (a record above META_MAX). meta: the blocks' records,
        as for put()."""
        return self._batch("commit", keys, None,
                           PUT_REPLACE if replace else 0, block_addrs=addrs,
                           meta_in=meta)

    def abort(self, keys, addrs):
        """Give reserved blocks back unpublished. Per-entry status:
        -ENOENT, -EALREADY."""
        return self._batch("abort", keys, None, block_addrs=addrs)

    def map_reserved(self):
        """This handle's reservation window, read-write (a memoryview of
        capacity * block_size bytes): reserved block a is writable at
        a * block_size. Close it (release()) before closing the pool."""
        size = self.capacity * self.block_size
        return memoryview(_mmap.mmap(self.fileno(), size, _mmap.MAP_SHARED,
                                     _mmap.PROT_READ | _mmap.PROT_WRITE,
                                     offset=size))

    # ---- prefetch --------------------------------------------------------

    def prefetch(self, keys, group, deadline_ns=0, cookie=0, priority=0,
                 cancel_late=False, tier=TIER_DRAM, background=False):
        """Ask for a request's blocks to be in DRAM (or, tier=TIER_HBM,
        in the pool's device tier) by a deadline (kvtier_prefetch(3));
        returns at once with a Prefetch.

        keys:        the chain, first block first (1..BATCH_MAX).
        group:       nonzero id, unique among this pool handle's live groups
                     (an ended group's id is taken until its protection
                     ends, or cancel(group)).
        deadline_ns: CLOCK_MONOTONIC ns (now_ns() + budget); 0: as soon as
                     possible. Groups are staged earliest deadline first.
        cookie:      returned in the group's Completion.
        priority:    0..PRIO_MAX, higher first among equal deadlines.
        cancel_late: end the group at its deadline with -ETIME instead of
                     finishing late.
        tier:        TIER_DRAM, or TIER_HBM: staged NVMe -> DRAM -> HBM
                     (needs a live device tier, hbm_attach()).
        background:  a background group: staged after every other group,
                     with at most half of prefetch_qd in flight.

        The group's end is a Completion: wait_group(), completions(), or
        poll fileno() for readability (or an eventfd, eventfd()). Staged
        blocks are protected from eviction until used (get, pin, lookup
        with touch, an mmap fault), within prefetch_protect_pct of the
        pool's DRAM share.

        Raises Error: EINVAL (no keys, too many, group 0, priority),
        tier), ETIME (cancel_late and a deadline already past), EOPNOTSUPP
        (TIER_HBM without a live device tier), EEXIST (group live), EAGAIN (PREFETCH_GROUPS_MAX groups live or completions
        unread: read some), ENOMEM.
        """
        keys = list(keys)
        n = len(keys)
        hints = (_Hint * max(n, 1))()
        for i, k in enumerate(keys):
            k = Key.of(k)
            hints[i].key[0] = k[0]
            hints[i].key[1] = k[1]
        a = _prefetch_args(group, deadline_ns, cookie, priority, cancel_late,
                           tier, background)
        queued = _u32()
        resident = _u32()
        _check(_kvtier_prefetch(self._h(), hints, n, ctypes.byref(a),
                                ctypes.byref(queued), ctypes.byref(resident)),
               "prefetch %s group %d" % (self.name, group))
        return Prefetch(self, group, queued.value, resident.value,
                        hints[:n])

    def cancel(self, group=None):
        """Withdraw one prefetch group, or every group of this handle
        (group=None); returns how many had not ended (each of those gets
        a -ECANCELED Completion). Ended groups only lose their protection.
        Raises Error: ENOENT (no live group with that id)."""
        n = _u32()
        if group is None:
            _check(_kvtier_cancel(self._h(), 0, CANCEL_ALL, ctypes.byref(n)),
                   "cancel " + self.name)
        else:
            _check(_kvtier_cancel(self._h(), group, 0, ctypes.byref(n)),
                   "cancel %s group %d" % (self.name, group))
        return n.value

    def completions(self, max=16, timeout_ms=0):
        # pylint: disable=redefined-builtin
        """Up to max Completions, waiting up to timeout_ms for the first
        (0: not at all, -1: forever); [] when none came. Those put aside
        by wait_group() come first."""
        if max < 1:
            raise ValueError("max must be at least 1")
        buf = (_Completion * max)()
        n = _check(_kvtier_completions(self._h(), buf, max, timeout_ms),
                   "completions " + self.name)
        return [Completion._of(buf[i]) for i in range(n)]

    def wait_group(self, group, timeout_ms=-1):
        """Wait for one group's Completion (kvtier_wait_group(3)); None if it
        did not come within timeout_ms (-1: forever). Other groups'
        completions read meanwhile are kept for completions()."""
        c = _Completion()
        ret = _kvtier_wait_group(self._h(), group, ctypes.byref(c), timeout_ms)
        if ret == -_errno.ETIMEDOUT:
            return None
        _check(ret, "wait_group %s group %d" % (self.name, group))
        return Completion._of(c)

    def eventfd(self, fd):
        """Have an eventfd (os.eventfd()) signalled at every prefetch
        completion of this handle; None or -1 stops it. Raises Error:
        EBADF, EINVAL (not an eventfd)."""
        _check(_kvtier_eventfd(self._h(), -1 if fd is None else fd),
               "eventfd " + self.name)

    def request_ready(self, keys, deadline_ns=0, timeout_ms=-1):
        """A scheduler's step for one request (kvtier_request_ready(3)):
        LOOKUP the chain; if part of its cached prefix is only on NVMe,
        PREFETCH that prefix as one group by deadline_ns and wait for it
        (cancelled after timeout_ms). Returns Ready(status, ready): status
        0 when the prefix is in DRAM, else the group's status or
        -errno.ETIMEDOUT; ready the blocks from the first in DRAM. Other
        failures (EINVAL, EAGAIN, ...) raise Error."""
        keys = list(keys)
        n = len(keys)
        arr = ((_u64 * 2) * max(n, 1))()
        for i, k in enumerate(keys):
            k = Key.of(k)
            arr[i][0] = k[0]
            arr[i][1] = k[1]
        ready = _u32()
        ret = _kvtier_request_ready(self._h(), None, arr, n, deadline_ns,
                                    timeout_ms, ctypes.byref(ready))
        if ret < 0 and ret not in _READY_STATUSES:
            _check(ret, "request_ready " + self.name)
        return Ready(ret, ready.value)

    def stat(self):
        """The pool's configuration and counters (kvtier_stat(3)), a Stat
        whose 'resident' is a dict by tier name."""
        st = _PoolStat()
        _check(_kvtier_stat(self._h(), ctypes.byref(st)), "stat " + self.name)
        d = _struct_dict(st)
        d["resident"] = {tier_name(t): st.resident[t]
                         for t in range(1, NR_TIERS)}
        return d

    # ---- the HBM tier ------------------------------------------------------

    def hbm_attach(self, backend=HBM_EMUL, slots=1, arena=None, copy=None):
        """Give the pool a device tier of `slots` blocks
        (kvtier_hbm_attach(3)).

        backend=HBM_EMUL: kernel memory stands in for the device (out of
        the hbm_emul_mb module parameter); returns None.

        backend=HBM_USER: the caller's arena, moved by a mover; returns a
        Mover (see Mover) that owns the mover fd: closing it, or losing
        it, detaches the arena. Without `copy` the Mover copies with the
        reference memcpy into a host arena: `arena` (a writable buffer of
        slots * block_size bytes), or a bytearray it makes (Mover.arena).
        With `copy(op, slot, dram)` (dram a memoryview of the block's
        bytes: read it for MOVE_TO_DEV, fill it for MOVE_FROM_DEV) the
        callback does the copy; it returns 0 or a negative errno.

        Raises Error: EBUSY (the pool has a device tier), ENOSPC (emulated
        memory used up), EBADF (read-only pool), EINVAL (backend, slots),
        ENOMEM.
        """
        if backend == HBM_USER:
            fd = ctypes.c_int(-1)
            _check(_kvtier_hbm_attach(self._h(), backend, slots,
                                      ctypes.byref(fd)),
                   "hbm_attach %s" % self.name)
            try:
                return Mover(self, fd.value, slots, arena=arena, copy=copy)
            except BaseException:
                os.close(fd.value)
                raise
        _check(_kvtier_hbm_attach(self._h(), backend, slots, None),
               "hbm_attach %s" % self.name)
        return None

    def hbm_stat(self):
        """The pool's device tier (kvtier_hbm_stat(3)), a Stat: attached,
        backend, slots, used, to_dev, from_dev, adopted, evictions,
        copy_errors, timeouts, detached."""
        st = _HbmStat()
        _check(_kvtier_hbm_stat(self._h(), ctypes.byref(st)),
               "hbm_stat " + self.name)
        d = _struct_dict(st)
        for k in ("flags", "__pad", "reserved"):
            d.pop(k, None)
        return d

    def adopt(self, keys, slots, meta=None):
        """Take blocks made in device memory (kvtier_adopt(3)): keys[i] is in
        slots[i]. Returns a Batch (status, addr per entry; tier TIER_HBM
        and slot for those adopted). Per-entry status: -EINVAL (slot out
        of range), -EBUSY (slot in use), -EEXIST (key present), -ENOSPC
        (no DRAM for the write-down), -ENODEV (no device tier), -EMSGSIZE
        (a record above META_MAX). meta: the blocks' records, as for put().
        Raises Error: EBADF (read-only pool), EINVAL (no entries, too
        many), EFAULT, EOPNOTSUPP (meta without F_META)."""
        keys = list(keys)
        slots = list(slots)
        if len(keys) != len(slots):
            raise ValueError("adopt: %d keys, %d slots"
                             % (len(keys), len(slots)))
        n = len(keys)
        if not n:
            return Batch(0, [])
        ents = (_Adopt * n)()
        for i, k in enumerate(keys):
            k = Key.of(k)
            ents[i].key[0] = k[0]
            ents[i].key[1] = k[1]
            ents[i].slot = slots[i]
        done = _u32()
        _check(_kvtier_adopt_meta(self._h(), ents, _meta_in(meta, n), n,
                                  ctypes.byref(done)),
               "adopt " + self.name)
        blocks = (_Block * n)()
        for i in range(n):
            b = blocks[i]
            b.key[0] = ents[i].key[0]
            b.key[1] = ents[i].key[1]
            b.addr = ents[i].addr
            b.status = ents[i].status
            ok = ents[i].status == 0
            b.tier = TIER_HBM if ok else TIER_NONE
            b.slot = ents[i].slot if ok else SLOT_NONE
        return Batch(done.value, blocks)

    def sync(self):
        """Make the pool's blocks durable on the NVMe tier; returns the
        blocks written. Raises Error: ENODEV (no NVMe tier), EBADF."""
        w = _u64()
        _check(_kvtier_sync(self._h(), ctypes.byref(w)), "sync " + self.name)
        return w.value

    # ---- events and the census ----------------------------------------------

    def events(self, from_seq=0, nonblock=False):
        """An events fd on the pool (needs F_EVENTS): an Events, which
        yields the pool's Event tuples in order (see Events), from the
        pool's next event or, with from_seq, from that one (1 up to the
        next event's number; one the ring no longer holds comes as an
        EVENT_OVERFLOW first). nonblock: iteration ends when no event is
        there now (the fd is O_NONBLOCK). The Events lives on its own: it
        does not keep the pool. Raises Error: EOPNOTSUPP (no F_EVENTS),
        EINVAL (from_seq past the next event), ENOMEM, EMFILE.

        To follow what the pool holds: open the events first, then take a
        census, then apply the events with seq above the census's seq:

            with pool.events() as ev:
                seq, log_id, entries = pool.census()
                keys = {e.key: e.tier for e in entries}
                for e in ev:
                    if e.type == kvtier.EVENT_OVERFLOW:
                        ...                     # census again
                    elif e.seq <= seq:
                        continue
                    elif e.type in (kvtier.EVENT_STORED,
                                    kvtier.EVENT_MOVED):
                        keys[e.key] = e.tier
                    elif e.type == kvtier.EVENT_REMOVED:
                        keys.pop(e.key, None)
        """
        return Events(self, from_seq, nonblock)

    def census(self, meta=False, batch=1024):
        """The pool's keys with their tier (kvtier_census(3), needs
        F_EVENTS): a Census (seq, log_id, entries), listed by cursor in
        calls of batch keys. meta=True (needs F_META): each entry's meta
        is its block's record. Listing changes nothing in the pool.
        Raises Error: EOPNOTSUPP, EINTR (killed), ENOMEM."""
        if batch < 1:
            raise ValueError("batch must be at least 1")
        ents = (_CensusEntry * batch)()
        recs = (_Meta * batch)() if meta else None
        cursor = _u64(0)
        seq = _u64()
        log_id = _u64()
        out = []
        first = None
        while cursor.value != ADDR_NONE:
            n = _check(_kvtier_census(self._h(), ctypes.byref(cursor), ents,
                                      recs, batch, ctypes.byref(seq),
                                      ctypes.byref(log_id)),
                       "census " + self.name)
            if first is None:
                first = (seq.value, log_id.value)
            for i in range(n):
                e = ents[i]
                out.append(CensusEntry(
                    Key(e.key[0], e.key[1]), e.addr, e.tier, e.flags,
                    bytes(recs[i].data[:recs[i].len]) if meta else None))
        return Census(first[0], first[1], out)

    def close(self):
        if self._p:
            _kvtier_pool_close(self._p)
            self._p = None

    @property
    def closed(self):
        return not self._p

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_p", None):
            self.close()

    def __repr__(self):
        return "<kvtier.Pool %s block_size=%d capacity=%d%s>" % (
            self.name, self.block_size, self.capacity,
            " closed" if self.closed else "")


class _WeightsPool(Pool):
    """The pool of a Weights (kvtier_weights_pool(3)): the Weights owns it,
    so close() only forgets it here; Weights.close() closes it."""

    def close(self):
        self._p = None


class Weights:
    """A weight pool: a safetensors or GGUF model file's bytes as a
    read-only pool (Context.open_weights(), kvtier_weights_open(3); needs
    F_WEIGHTS), its blocks named by tensor, layer and expert so that a
    runtime need not know the file's layout:

        with ctx.open_weights("model.safetensors", "llama-w",
                              block_size=2 << 20) as w:
            t = w.tensor("model.layers.0.self_attn.q_proj.weight")
            q = w.read(t)                       # a bytearray of t.bytes
            pf = w.prefetch(1, group=1,         # all of layer 1, by
                            deadline_ns=kvtier.now_ns() + 20000000)  # 20 ms
            ...                                 # layer 0's forward pass
            c = pf.wait(1000)                   # layer 1 is in DRAM

    Close it, or use it as a context manager; the pool stays, by name,
    until Context.destroy_pool(name).

    name:    the pool's name.
    path:    the model file.
    pool:    the pool, a Pool, for stat(), lookup(), wait_group(),
             completions(), cancel(), hbm_attach(), fileno(), ...: owned
             by this Weights (closing it only forgets it; close() closes
             it). Its keys are the library's: address a is block a of the
             file's bytes. It is read-only: put(), drop(), reserve(),
             commit(), abort() and adopt() raise Error EROFS.
    count:   the number of tensors (len() too; iterating yields them).
    layers:  1 + the highest layer a tensor names, or 0.
    experts: 1 + the highest expert a tensor names, or 0.
    """

    def __init__(self, handle, name, path):
        self._w = handle
        self.name = name
        self.path = path
        self.pool = _WeightsPool(ctypes.c_void_p(_kvtier_weights_pool(handle)),
                                 name)
        layers = _u32()
        experts = _u32()
        self.count = _kvtier_weights_count(handle, ctypes.byref(layers),
                                           ctypes.byref(experts))
        self.layers = layers.value
        self.experts = experts.value

    def _h(self):
        if not self._w:
            raise ValueError("kvtier weights %s are closed" % self.name)
        return self._w

    def _tensor(self, which):
        """The struct kvtier_tensor of a name or an index."""
        t = _Tensor()
        if isinstance(which, str):
            ret = _kvtier_weights_tensor(self._h(), 0, which.encode(),
                                         ctypes.byref(t))
        elif 0 <= which < 1 << 32:
            ret = _kvtier_weights_tensor(self._h(), which, None,
                                         ctypes.byref(t))
        else:
            ret = -_errno.ENOENT
        _check(ret, "tensor %s %r" % (self.name, which))
        return t

    def tensor(self, which):
        """One tensor, a Tensor: by name (a str), or by index (0..count - 1,
        in the order of the tensors' bytes in the file). Raises Error:
        ENOENT (no such name or index)."""
        return Tensor._of(self._tensor(which))

    def tensors(self):
        """Every tensor, a list of Tensor, in the order of their bytes in
        the file."""
        return [self.tensor(i) for i in range(self.count)]

    def blocks(self, layer, expert=WEIGHTS_ALL):
        """The addresses of a layer's blocks, ascending, each once (a list;
        kvtier_weights_blocks(3)): expert WEIGHTS_ALL those of every
        tensor of the layer, -1 those of its tensors but its experts', E
        those of expert E's; layer -1 those of the tensors of no layer
        (embeddings, final norm, head). A block two tensors share is in
        both their lists; [] when the tensors are all empty. Raises
        Error: ENOENT (no tensor of that layer and expert)."""
        what = "blocks %s layer %d expert %d" % (self.name, layer, expert)
        n = _check(_kvtier_weights_blocks(self._h(), layer, expert, None, 0),
                   what)
        addrs = (_u64 * max(n, 1))()
        n = _check(_kvtier_weights_blocks(self._h(), layer, expert, addrs, n),
                   what)
        return list(addrs[:n])

    def prefetch(self, layer, expert=WEIGHTS_ALL, *, group, deadline_ns=0,
                 cookie=0, priority=0, cancel_late=False, tier=TIER_DRAM,
                 background=False):
        """Ask for a layer's or an expert's blocks (those of blocks(layer,
        expert)) to be in DRAM, or tier=TIER_HBM in the pool's device
        tier, by a deadline: one prefetch group of address hints
        (kvtier_weights_prefetch(3)), queued with the pool's other
        groups, KV or weights, in one deadline order. The arguments from
        group on are Pool.prefetch()'s (group: nonzero, unique among the
        pool's live groups). Returns a Prefetch whose addr is the blocks
        hinted (queued, resident, status and tier are None); its wait(),
        or the pool's wait_group(), completions(), fileno(), gives the
        group's Completion.

        Raises Error: ENOENT (no tensor of that layer and expert, or none
        with a byte), E2BIG (more blocks than the handshake's batch_max:
        prefetch by expert, or use larger blocks), and as Pool.prefetch().
        """
        a = _prefetch_args(group, deadline_ns, cookie, priority, cancel_late,
                           tier, background)
        _check(_kvtier_weights_prefetch(self._h(), layer, expert,
                                        ctypes.byref(a)),
               "prefetch %s layer %d expert %d group %d"
               % (self.name, layer, expert, group))
        return Prefetch(self.pool, group, None, None, None,
                        self.blocks(layer, expert))

    def prefetch_experts(self, layer, experts, probs=None, *, group,
                         deadline_ns=0, cookie=0, priority=0,
                         cancel_late=False, tier=TIER_DRAM,
                         background=False):
        """Ask for the blocks of some experts of a layer, the ones its
        router may pick, as one prefetch group, each block once
        (kvtier_weights_prefetch_experts(3)). probs: None (every expert
        needed for sure), or one probability per expert, a float in 0..1
        (the router's score; needs F_HINT_PROB): the kernel reads the
        likeliest first and leaves the unlikely unread when the deadline
        or its queue leaves no room, and the group then ends with status
        0 and fewer blocks ready than hinted. The other arguments are
        prefetch()'s. Returns a Prefetch whose addr is the blocks of the
        experts, ascending.

        Raises Error: EINVAL (no expert, one below 0, a probability out of
        0..1, group 0), ENOENT (no such layer or expert), E2BIG (more
        blocks than batch_max), EOPNOTSUPP (probs without F_HINT_PROB),
        and as Pool.prefetch().
        """
        experts = list(experts)
        n = len(experts)
        if probs is not None:
            probs = list(probs)
            if len(probs) != n or any(not 0 <= p <= 1 for p in probs):
                raise Error(_errno.EINVAL, os.strerror(_errno.EINVAL),
                            "prefetch_experts %s: %d probabilities in 0..1"
                            % (self.name, n))
        ex = (_s32 * max(n, 1))(*experts)
        pr = None
        if probs is not None:
            pr = (_u32 * max(n, 1))(*[int(round(p * PROB_ONE))
                                      for p in probs])
        a = _prefetch_args(group, deadline_ns, cookie, priority, cancel_late,
                           tier, background)
        _check(_kvtier_weights_prefetch_experts(self._h(), layer, ex, pr, n,
                                                ctypes.byref(a)),
               "prefetch %s layer %d experts %s group %d"
               % (self.name, layer, experts, group))
        addrs = sorted({a for e in experts for a in self.blocks(layer, e)})
        return Prefetch(self.pool, group, None, None, None, addrs)

    def read(self, tensor, buf=None):
        """Copy a tensor's bytes out of the pool (kvtier_weights_read(3)):
        its blocks are GET (loaded from the file where not in DRAM) and its
        range of them copied. tensor: a Tensor, a name or an index. buf: a
        writable, C-contiguous buffer of exactly its bytes (a bytearray,
        a memoryview slice of a larger arena, a numpy array, ...), else a
        new bytearray; returns buf. Raises Error: ENOENT (no such tensor;
        a block of it is gone: the file changed, a read failed), EINVAL
        (a Tensor past the end of the pool), and as Pool.get(); on an
        error buf may hold part of the bytes."""
        if isinstance(tensor, Tensor):
            t = tensor._raw()
        else:
            t = self._tensor(tensor)
        if buf is None:
            buf = bytearray(t.bytes)
        keep = []
        addr = _addr_of(buf, t.bytes, True, keep)
        _check(_kvtier_weights_read(self._h(), ctypes.byref(t), addr),
               "read %s %s" % (self.name, t.name.decode("utf-8", "replace")))
        del keep
        return buf

    def close(self):
        """Close the handle and its pool; the pool stays, by name, until
        Context.destroy_pool()."""
        if self._w:
            self.pool.close()
            _kvtier_weights_close(self._w)
            self._w = None

    @property
    def closed(self):
        return not self._w

    def __len__(self):
        return self.count

    def __iter__(self):
        return iter(self.tensors())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_w", None):
            self.close()

    def __repr__(self):
        return "<kvtier.Weights %s %s tensors=%d layers=%d experts=%d%s>" % (
            self.name, self.path, self.count, self.layers, self.experts,
            " closed" if self.closed else "")


class Mover:
    """The mover of a user HBM arena (Pool.hbm_attach(HBM_USER)): it does
    the copies the kernel posts on the mover fd (kvtier_mover_open(3)).

    Call run() in a loop, in a thread of its own (the kernel waits for
    each copy; one not reported within the hbm_timeout_ms module parameter
    detaches the arena), until it returns None (the arena was detached).
    close() detaches the arena: adopted blocks not yet written down are
    lost, every other block keeps its DRAM or NVMe copy.

    arena:  the host arena of the reference memcpy copy (a bytearray of
            slots * block_size bytes unless one was given), or None with
            a copy callback.
    """

    def __init__(self, pool, fd, slots, arena=None, copy=None):
        self._m = None
        self._pool = pool
        self.slots = slots
        self.block_size = pool.block_size
        self.arena = None
        self._keep = []
        if copy is None:
            size = slots * self.block_size
            if arena is None:
                arena = bytearray(size)
            self.arena = arena
            addr = _bufs(arena, 1, size, True, self._keep)[0][0]
            fn = _kvtier_mover_memcpy_addr
            arg = addr
        else:
            def _copy(_arg, op, slot, dram, nbytes):
                try:
                    view = memoryview(
                        (ctypes.c_char * nbytes).from_address(dram)).cast("B")
                    return int(copy(op, slot, view) or 0)
                except Exception:  # pylint: disable=broad-except
                    return -_errno.EIO
            fn = _MOVER_COPY_FN(_copy)
            self._keep.append(fn)
            fn = ctypes.cast(fn, _P).value
            arg = None
        m = _P()
        _check(_kvtier_mover_open(pool._h(), fd, fn, arg, ctypes.byref(m)),
               "mover_open " + pool.name)
        self._m = m

    def _h(self):
        if not self._m:
            raise ValueError("kvtier mover is closed")
        return self._m

    def run(self, timeout_ms=-1):
        """Do the copies posted: waits up to timeout_ms (-1: forever) for
        the first. Returns the copies done (0: none came), or None once
        the arena is detached (the loop should end). Raises Error."""
        ret = _kvtier_mover_run(self._h(), timeout_ms)
        if ret == -_errno.EPIPE:
            return None
        return _check(ret, "mover_run " + self._pool.name)

    def close(self):
        """Stop moving: the arena is detached."""
        if self._m:
            _kvtier_mover_close(self._m)
            self._m = None

    @property
    def closed(self):
        return not self._m

    def slot_bytes(self, slot):
        """The bytes of a slot of the host arena (a memoryview)."""
        bs = self.block_size
        return memoryview(self.arena)[slot * bs:(slot + 1) * bs]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_m", None):
            self.close()


# Per-entry statuses are negative errnos; these are the usual ones.
ENOENT = -_errno.ENOENT
EEXIST = -_errno.EEXIST
ETIME = -_errno.ETIME
ECANCELED = -_errno.ECANCELED
