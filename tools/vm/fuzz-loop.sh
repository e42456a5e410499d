#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# fuzz-loop.sh [RUNS]: the fuzzer's burst RUNS times (default 14), each on
# a freshly loaded module, inside the kvtier VM; rare failures need many
# runs to show. From the host:
#
#   tools/vm/kvtier-vm --nvme 2 --cpus 2 -- tools/vm/fuzz-loop.sh 24
#
# Loads kvtier.ko ($KVTIER_KO, $KVTIER_PARAMS, default dram_mb=512); the
# burst takes the fuzzer's own environment (KVTIER_FUZZ_CALLS, ...). Each
# run prints its TAP result, the fuzzer's failure lines (seed, oracle key
# histories) and any kernel complaint in dmesg; rmmod must work after it.
# Ends with "fuzz-loop: F of RUNS failed" and exits 1 when F > 0.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=SCRIPTDIR/guest-lib.sh
. "$top/tools/vm/guest-lib.sh"

runs=${1:-14}
ko=${KVTIER_KO:-$top/kmod/kvtier.ko}
read -r -a params <<<"${KVTIER_PARAMS:-dram_mb=512}"
fuzz=$top/selftests/kvtier/fuzz
out=${KVTIER_VM_OUT:-/tmp}/fuzz-loop.out
re=$kvtier_bad_re
failed=0

for ((i = 1; i <= runs; i++)); do
	bad=0
	if ! kvtier_load "$ko" "${params[@]}"; then
		echo "fuzz-loop: run $i: insmod failed"
		failed=$((failed + 1))
		continue
	fi
	dmesg -C
	timeout "${FUZZ_LOOP_TIMEOUT:-600}" "$fuzz" -t burst >"$out" 2>&1 ||
		bad=1
	grep -E '^(ok|not ok) 1 |fuzz\.c:|^# oracle key' "$out" |
		grep -v 'pools destroyed' | sed "s/^/run $i: /"
	if dmesg | grep -qE "$re"; then
		echo "run $i: kernel complaint:"
		dmesg | grep -E -m1 -A20 "$re"
		bad=1
	fi
	if ! rmmod kvtier; then
		echo "run $i: rmmod kvtier failed"
		bad=1
	fi
	failed=$((failed + bad))
done
echo "fuzz-loop: $failed of $runs failed"
((failed == 0))
