#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kvtierctl top, in the VM with kvtier loaded (run by
# tools/vm/run-selftests.sh after the C tests; TAP output): while
# kvtier-demo replays into a pool of its own, `kvtierctl top -n 2 -i 1`
# prints two reports, each with a row for that pool, and its PUT, GET and
# hit rates are above zero; bad arguments exit 2.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
ctl=$top/tools/kvtierctl
pool=kvt-top-$$
out=${KVTIER_VM_OUT:-/tmp}/top.out
n=0
nfail=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); nfail=$((nfail + 1)); echo "not ok $n - $1"; }

for bad in "-n 0" "-i 0" "-i x" "--bogus"; do
	# shellcheck disable=SC2086
	"$ctl" top $bad >/dev/null 2>&1
	rc=$?
	if ((rc == 2)); then ok "top $bad exits 2"; else not_ok "top $bad exits 2 (got $rc)"; fi
done

# Traffic: the built-in workload, DRAM only, long enough to outlast top.
"$top/tools/kvtier-demo" replay --pool "$pool" --nvme none --no-mmap \
	--verify sample --requests 100000 >"$out.demo" 2>&1 &
demo=$!
for _ in $(seq 300); do
	[[ -e /sys/kernel/kvtier/pools/$pool ]] && break
	sleep 0.1
done
if [[ -e /sys/kernel/kvtier/pools/$pool ]]; then
	ok "kvtier-demo created pool $pool"
else
	not_ok "kvtier-demo created pool $pool"
	cat "$out.demo"
fi

start=$EPOCHREALTIME
"$ctl" top -n 2 -i 1 >"$out" 2>&1
rc=$?
secs=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
kill -TERM "$demo" 2>/dev/null
wait "$demo"
sed 's/^/# /' "$out"

if ((rc == 0)); then ok "top -n 2 -i 1 exits 0 (${secs}s)"; else not_ok "top -n 2 -i 1 exits 0 (got $rc)"; fi
reports=$(grep -c '^kvtier top ' "$out")
if ((reports == 2)); then ok "two reports"; else not_ok "two reports (got $reports)"; fi
rows=$(grep -c "^$pool " "$out")
if ((rows == 2)); then ok "a row for $pool in each report"; else not_ok "a row for $pool in each report (got $rows)"; fi
# Columns: pool puts/s gets/s hits/s miss/s hit% ...
if awk -v p="$pool" '$1 == p && $2 > 0 && $3 > 0 && $4 > 0 { n++ } END { exit !(n >= 1) }' "$out"; then
	ok "nonzero puts/s, gets/s and hits/s for $pool"
else
	not_ok "nonzero puts/s, gets/s and hits/s for $pool"
fi
if [[ ! -e /sys/kernel/kvtier/pools/$pool ]]; then
	ok "pool $pool gone after the demo"
else
	not_ok "pool $pool gone after the demo"
	"$ctl" destroy "$pool"
fi

echo "1..$n"
((nfail == 0))
