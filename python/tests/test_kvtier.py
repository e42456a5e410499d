#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Tests of the Python binding (python/kvtier.py) against the module.

Needs /dev/kvtier (run inside the test VM by tools/vm/run-selftests.sh,
as root); without it every test that needs the module is skipped.

    python3 -m unittest -v tests.test_kvtier    (from python/)
    python3 python/tests/test_kvtier.py         (TAP, as the VM runs it)
"""

import array
import errno
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import kvtier  # noqa: E402

BS = 8192
HAVE_DEV = os.path.exists(kvtier.DEVICE)


def pattern(key, size=BS):
    seed = int(kvtier.Key.of(key)).to_bytes(16, "little")
    return (seed * (size // 16))[:size]


class TestOffline(unittest.TestCase):
    """What works without the module."""

    def test_key_chain_matches_prefix(self):
        a = kvtier.key_chain([1, 2, 3])
        self.assertEqual(len(a), 3)
        self.assertEqual(kvtier.key_chain([1, 2]), a[:2])
        self.assertEqual(kvtier.key_chain([3], prev=a[1]), a[2:])
        self.assertNotEqual(kvtier.key_chain([2, 1])[1], a[1])

    def test_key_chain_known_value(self):
        # kvt_key_chain(NULL, 1), the value examples/kvtier-info prints.
        self.assertEqual(int(kvtier.key_chain([1])[0]),
                         0x249c994694e442543a3c7f8ad167625a)

    def test_key_forms(self):
        k = kvtier.Key(5, 7)
        self.assertEqual(kvtier.Key.of((5, 7)), k)
        self.assertEqual(kvtier.Key.of(5 | 7 << 64), k)
        self.assertEqual(kvtier.Key.of(int(k).to_bytes(16, "little")), k)
        with self.assertRaises(ValueError):
            kvtier.Key.of(b"short")

    def test_names(self):
        self.assertEqual(kvtier.tier_name(kvtier.TIER_DRAM), "dram")
        self.assertEqual(kvtier.tier_name(kvtier.TIER_NVME), "nvme")
        self.assertEqual(kvtier.feature_name(kvtier.F_POOLS), "pools")

    def test_error_is_oserror(self):
        self.assertTrue(issubclass(kvtier.Error, OSError))


@unittest.skipUnless(HAVE_DEV, "no /dev/kvtier (module not loaded)")
class TestPool(unittest.TestCase):

    def setUp(self):
        self.ctx = kvtier.open()
        self.name = "pytest-%d-%s" % (os.getpid(), self._testMethodName[-20:])
        self.pool = self.ctx.create_pool(self.name, block_size=BS,
                                         capacity=64)

    def tearDown(self):
        self.pool.close()
        try:
            self.ctx.destroy_pool(self.name)
        except kvtier.Error:
            pass
        self.ctx.close()

    def test_context(self):
        self.assertIn("pools", self.ctx.features)
        self.assertEqual(self.ctx.api["api"], kvtier.API_VERSION)
        self.assertGreater(self.ctx.api["dram_bytes"], 0)
        self.assertGreaterEqual(self.ctx.fileno(), 0)

    def test_pool_attributes(self):
        self.assertEqual(self.pool.block_size, BS)
        self.assertEqual(self.pool.capacity, 64)
        self.assertEqual(self.pool.name, self.name)
        self.assertGreaterEqual(self.pool.fileno(), 0)

    def test_create_existing_eexist(self):
        with self.assertRaises(kvtier.Error) as cm:
            self.ctx.create_pool(self.name, block_size=BS, capacity=64)
        self.assertEqual(cm.exception.errno, errno.EEXIST)
        # ...unless asked to open it.
        with self.ctx.create_pool(self.name, block_size=BS, capacity=64,
                                  flags=kvtier.POOL_OPEN_EXISTING) as p:
            self.assertEqual(p.block_size, BS)

    def test_create_bad_block_size_einval(self):
        with self.assertRaises(kvtier.Error) as cm:
            self.ctx.create_pool(self.name + "x", block_size=1000, capacity=4)
        self.assertEqual(cm.exception.errno, errno.EINVAL)

    def test_open_destroy_missing_enoent(self):
        for f in (self.ctx.open_pool, self.ctx.destroy_pool):
            with self.assertRaises(kvtier.Error) as cm:
                f("no-such-pool-%d" % os.getpid())
            self.assertEqual(cm.exception.errno, errno.ENOENT)

    def test_put_get_one_buffer_zero_copy(self):
        keys = kvtier.key_chain(range(4))
        src = bytearray(b"".join(pattern(k) for k in keys))
        res = self.pool.put(keys, src)
        self.assertEqual(res.done, 4)
        self.assertEqual(res.status, [0] * 4)
        dst = bytearray(4 * BS)
        res = self.pool.get(keys, dst)
        self.assertEqual(res.done, 4)
        self.assertEqual(dst, src)          # written in place: no copy back
        self.assertEqual(res.tiers, ["dram"] * 4)

    def test_put_get_per_block_buffers(self):
        keys = kvtier.key_chain([7, 8, 9])
        srcs = [pattern(k) for k in keys]              # bytes: read-only
        self.assertEqual(self.pool.put(keys, srcs).done, 3)
        arr = array.array("B", bytes(3 * BS))          # array, memoryviews
        mv = memoryview(arr)
        views = [mv[i * BS:(i + 1) * BS] for i in range(3)]
        self.assertEqual(self.pool.get(keys, views).done, 3)
        self.assertEqual(arr.tobytes(), b"".join(srcs))

    def test_put_existing_and_replace(self):
        key = kvtier.key_chain([42])
        self.assertEqual(self.pool.put(key, bytes(BS)).done, 1)
        res = self.pool.put(key, b"\1" * BS)
        self.assertEqual(res.status, [kvtier.EEXIST])
        self.assertEqual(self.pool.put(key, b"\1" * BS, replace=True).done, 1)
        out = bytearray(BS)
        self.pool.get(key, out)
        self.assertEqual(out, b"\1" * BS)

    def test_get_miss_enoent(self):
        keys = kvtier.key_chain([1, 2])
        self.pool.put(keys[:1], pattern(keys[0]))
        res = self.pool.get(keys, bytearray(2 * BS))
        self.assertEqual(res.done, 1)
        self.assertEqual(res.status, [0, -errno.ENOENT])

    def test_lookup_prefix_and_tiers(self):
        keys = kvtier.key_chain(range(10, 16))
        self.pool.put(keys[:3], b"".join(pattern(k) for k in keys[:3]))
        res = self.pool.lookup(keys, touch=True)
        self.assertEqual(res.done, 3)
        self.assertEqual(res.tier[:3], [kvtier.TIER_DRAM] * 3)
        self.assertEqual(res.tier[3:], [kvtier.TIER_NONE] * 3)
        self.assertEqual(res.addr[3], kvtier.ADDR_NONE)
        self.assertEqual(res.status[3], -errno.ENOENT)

    def test_drop(self):
        keys = kvtier.key_chain([3, 4])
        self.pool.put(keys, bytes(2 * BS))
        self.assertEqual(self.pool.drop(keys[1:]).done, 1)
        self.assertEqual(self.pool.lookup(keys).done, 1)
        self.assertEqual(self.pool.drop(keys[1:]).status, [-errno.ENOENT])

    def test_pin_blocks_drop(self):
        key = kvtier.key_chain([5])
        self.pool.put(key, bytes(BS))
        self.assertEqual(self.pool.pin(key).done, 1)
        self.assertEqual(self.pool.drop(key).status, [-errno.EBUSY])
        self.assertEqual(self.pool.unpin(key).done, 1)
        self.assertEqual(self.pool.drop(key).done, 1)

    def test_stat_counts(self):
        keys = kvtier.key_chain([1, 2, 3])
        self.pool.put(keys, bytes(3 * BS))
        self.pool.get(keys[:2], bytearray(2 * BS))
        st = self.pool.stat()
        self.assertEqual(st.puts, 3)
        self.assertEqual(st.gets, 2)
        self.assertEqual(st.hits, 2)
        self.assertEqual(st.bytes_in, 3 * BS)
        self.assertEqual(st.resident["dram"], 3)
        self.assertEqual(st["capacity"], 64)

    def test_bad_buffers_valueerror(self):
        keys = kvtier.key_chain([1, 2])
        with self.assertRaises(ValueError):
            self.pool.put(keys, bytes(BS))              # one block short
        with self.assertRaises(ValueError):
            self.pool.get(keys, bytes(2 * BS))          # read-only
        with self.assertRaises(ValueError):
            self.pool.get(keys, [bytearray(BS)])        # one buffer short
        with self.assertRaises(ValueError):             # not contiguous
            self.pool.get(keys, memoryview(bytearray(4 * BS))[::2])

    def test_readonly_put_ebadf(self):
        with self.ctx.open_pool(self.name, readonly=True) as ro:
            with self.assertRaises(kvtier.Error) as cm:
                ro.put(kvtier.key_chain([1]), bytes(BS))
            self.assertEqual(cm.exception.errno, errno.EBADF)

    def test_sync_without_nvme_enodev(self):
        if self.ctx.nvme_stat()["attached"]:
            self.skipTest("an NVMe tier is attached")
        with self.assertRaises(kvtier.Error) as cm:
            self.pool.sync()
        self.assertEqual(cm.exception.errno, errno.ENODEV)

    def test_context_managers_close_fds(self):
        before = len(os.listdir("/proc/self/fd"))
        with kvtier.open() as ctx:
            with ctx.open_pool(self.name) as p:
                self.assertEqual(len(os.listdir("/proc/self/fd")), before + 2)
            self.assertTrue(p.closed)
            with self.assertRaises(ValueError):
                p.stat()
        self.assertEqual(len(os.listdir("/proc/self/fd")), before)

    def test_large_batch_chunked(self):
        # More entries than the kernel's batch_max: the library splits.
        n = self.ctx.api["batch_max"] + 5
        keys = kvtier.key_chain(range(n))
        res = self.pool.lookup(keys)
        self.assertEqual(len(res), n)
        self.assertEqual(res.done, 0)


@unittest.skipUnless(HAVE_DEV, "no /dev/kvtier (module not loaded)")
class TestConnectorExample(unittest.TestCase):

    def test_connector_runs_and_verifies(self):
        ex = os.path.join(HERE, "..", "examples", "connector.py")
        r = subprocess.run([sys.executable, ex, "--requests", "40"],
                           capture_output=True, text=True, timeout=300)
        sys.stderr.write(r.stdout + r.stderr)
        self.assertEqual(r.returncode, 0)
        self.assertIn("wrong 0", r.stdout)
        served = int(r.stdout.split("tokens, ")[1].split()[0])
        self.assertGreater(served, 0)


class TapResult(unittest.TextTestResult):
    """unittest's result, printed as TAP (ok N - name [# SKIP reason])."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.n = 0

    def _tap(self, test, ok, extra=""):
        self.n += 1
        print("%s %d - %s%s" % ("ok" if ok else "not ok", self.n,
                                test.id().split(".", 1)[-1], extra),
              flush=True)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._tap(test, True)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._tap(test, False)

    def addError(self, test, err):
        super().addError(test, err)
        self._tap(test, False)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._tap(test, True, " # SKIP " + reason)


def main():
    suite = unittest.defaultTestLoader.loadTestsFromModule(
        sys.modules[__name__])
    print("TAP version 13")
    print("1..%d" % suite.countTestCases(), flush=True)
    runner = unittest.TextTestRunner(stream=sys.stderr, verbosity=0,
                                     resultclass=TapResult)
    res = runner.run(suite)
    return 0 if res.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
