#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# fail-nth.sh BIN: the fault-injection walk of the debug-kernel lane, run in
# the VM (tools/vm/check.sh runs it after run-selftests.sh, before the
# kmemleak scan, so leaks on error paths are found too).
#
# Makes failslab and fail_page_alloc fail sleeping (GFP_KERNEL) allocations
# too, without messages; loads kvtier.ko ($KVTIER_KO, $KVTIER_PARAMS); runs
# BIN (tools/vm/fail-nth.c, built by check.sh), which walks every fault
# point of POOL_CREATE, PUT, GET, POOL_OPEN, POOL_DESTROY, LOOKUP, DROP,
# PIN, UNPIN, STAT, PREFETCH, CENSUS, EVENTS, NVME_ATTACH and SYNC (the
# last two on /dev/nvme0n1, FAIL_NTH_DEV); unloads the module; dmesg since the
# start must hold no kernel complaint. TAP lines on stdout and in
# $KVTIER_VM_OUT/fail-nth.tap; exit 1 when one is "not ok".
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=SCRIPTDIR/guest-lib.sh
. "$top/tools/vm/guest-lib.sh"

bin=${1:?usage: fail-nth.sh BIN}
ko=${KVTIER_KO:-$top/kmod/kvtier.ko}
read -r -a params <<<"${KVTIER_PARAMS:-dram_mb=512}"
tap=${KVTIER_VM_OUT:-/tmp}/fail-nth.tap
dbg=/sys/kernel/debug
: >"$tap"
nfail=0

say() {
	echo "$*" | tee -a "$tap"
	[[ $1 != not ]] || nfail=$((nfail + 1))
}

for f in failslab fail_page_alloc; do
	if [[ ! -d $dbg/$f ]]; then
		say "not ok - fail-nth: no $dbg/$f (CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC)"
		exit 1
	fi
	echo 0 >"$dbg/$f/verbose"
	echo N >"$dbg/$f/ignore-gfp-wait"
done
echo N >"$dbg/fail_page_alloc/ignore-gfp-highmem"
echo 0 >"$dbg/fail_page_alloc/min-order"

mark="kvtier-fail-nth: start $$"
echo "$mark" >/dev/kmsg
if ! err=$(kvtier_load "$ko" "${params[@]}" 2>&1); then
	say "not ok - fail-nth: insmod $ko: $err"
	exit 1
fi
log=${tap%.tap}.log
"$bin" >"$log" 2>&1
brc=$?
cat "$log"
grep -E '^(not )?ok ' "$log" >>"$tap"
nfail=$(grep -c '^not ok ' "$tap")
fault_script_end fail-nth walk "$log" "$bin" "$brc" "$mark"
((nfail == 0))
