#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tools/trace in the VM with kvtier loaded (run by tools/vm/run-selftests.sh
# after the C tests; TAP output):
#
#  - kvtier-trace record captures the kvtier events and kvtier's ioctl
#    entries while kvtier-demo replays a generated Mooncake trace (through
#    the NVMe tier when the VM has a drive), and removes its tracefs
#    instance afterwards;
#  - kvtier-trace mooncake turns the capture back into a Mooncake trace:
#    one request per replayed request, every key linked to its chain, and
#    (nearly) every request's hash_ids equal to the original's; without the
#    syscall events too;
#  - tools/trace/kvtier-lat.bt, when bpftrace is installed, prints the
#    per-tier histograms.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
out=${KVTIER_VM_OUT:-/tmp}/trace
rec=$top/tools/trace/kvtier-trace
demo=$top/tools/kvtier-demo
n=0
nfail=0
mkdir -p "$out"

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); nfail=$((nfail + 1)); echo "not ok $n - $1"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else not_ok "$name"; fi
}

if [[ ! -e /sys/kernel/tracing/trace_pipe ]]; then
	echo "1..0 # SKIP no tracefs"
	exit 4
fi

requests=300
"$demo" gen --requests "$requests" >"$out/gen.jsonl"
nvme=(--nvme none)
if [[ -b /dev/nvme0n1 ]]; then
	# A small DRAM share: blocks are demoted and promoted back.
	nvme=(--nvme /dev/nvme0n1 --nvme-format --pool-blocks 4096 --dram-blocks 256)
fi
replay=("$demo" replay --trace "$out/gen.jsonl" "${nvme[@]}" --verify sample --no-mmap)

"$rec" record -o "$out/rec.txt" -- "${replay[@]}" >"$out/replay.log" 2>&1
rc=$?
check "kvtier-trace record -- kvtier-demo replay exits 0 (got $rc)" test "$rc" = 0
ready=$(grep -c 'kvtier_block_ready:' "$out/rec.txt")
ioctls=$(grep -c 'sys_ioctl(' "$out/rec.txt")
promotes=$(grep -c 'kvtier_block_promote:' "$out/rec.txt")
echo "# captured: $ready ready, $promotes promote, $ioctls ioctl lines"
check "capture has kvtier_block_ready and ioctl entries" test "$ready" -gt 0 -a "$ioctls" -gt 0
left=$(find /sys/kernel/tracing/instances -maxdepth 1 -name 'kvtier-trace-*' | wc -l)
check "the tracefs instance is removed" test "$left" = 0

# compare CONVERTED: requests, and how many have the original's hash_ids.
compare() {
	/usr/bin/python3 - "$out/gen.jsonl" "$1" <<'PY'
import json, sys
g = [tuple(json.loads(l)["hash_ids"]) for l in open(sys.argv[1])]
c = [json.loads(l) for l in open(sys.argv[2])]
orig = set(g)
exact = sum(1 for r in c if tuple(r["hash_ids"]) in orig)
mono = all(a["timestamp"] <= b["timestamp"] for a, b in zip(c, c[1:]))
print(len(c), exact, int(mono))
PY
}

"$rec" mooncake -i "$out/rec.txt" -o "$out/conv.jsonl" --stats 2>"$out/stats.txt"
sed 's/^/# /' "$out/stats.txt"
read -r nreq exact mono < <(compare "$out/conv.jsonl")
echo "# converted: $nreq requests, $exact with the original hash_ids"
check "mooncake: $requests requests (got $nreq)" test "$nreq" = "$requests"
check "mooncake: >= 95% of requests have the original hash_ids ($exact)" \
	test $((exact * 100)) -ge $((requests * 95))
check "mooncake: timestamps in order" test "$mono" = 1
check "mooncake: every key linked to its chain" \
	grep -qE ' ([0-9]+) distinct keys, \1 linked' "$out/stats.txt"
head -n 2 "$out/conv.jsonl" | sed 's/^/# /'

grep -v 'sys_ioctl(' "$out/rec.txt" >"$out/rec-nosys.txt"
"$rec" mooncake -i "$out/rec-nosys.txt" -o "$out/conv-nosys.jsonl"
read -r nreq2 exact2 _ < <(compare "$out/conv-nosys.jsonl")
echo "# without syscall events: $nreq2 requests, $exact2 with the original hash_ids"
check "mooncake without syscall events: >= 80% of requests exact ($exact2)" \
	test $((exact2 * 100)) -ge $((requests * 80))

if command -v bpftrace >/dev/null; then
	timeout 300 bpftrace "$top/tools/trace/kvtier-lat.bt" -c \
		"${replay[*]} --max-requests 150" >"$out/lat.txt" 2>&1
	rc=$?
	grep -E '^@|^\[' "$out/lat.txt" | head -n 40 | sed 's/^/# /'
	check "kvtier-lat.bt runs (exit $rc)" test "$rc" = 0
	check "kvtier-lat.bt: GET and PUT histograms by tier" \
		grep -qE '^@cmd_us\[GET, (dram|nvme)\]' "$out/lat.txt"
	check "kvtier-lat.bt: PUT histogram" grep -qE '^@cmd_us\[PUT, ' "$out/lat.txt"
else
	skip "kvtier-lat.bt" "bpftrace not installed"
fi

echo "1..$n"
((nfail == 0))
