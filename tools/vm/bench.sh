#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make bench`, inside the VM: load kvtier.ko, run tools/kvtier-bench, print
# its "name: value" result lines (also saved to $KVTIER_VM_OUT/bench.txt),
# unload. Exit status: the benchmark's (0 when there is no benchmark yet).
#
# Environment: KVTIER_PARAMS (module parameters, default dram_mb=512),
# KVTIER_BENCH_ARGS (arguments of tools/kvtier-bench).
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
# shellcheck source=SCRIPTDIR/guest-lib.sh
. "$top/tools/vm/guest-lib.sh"

read -r -a params <<<"${KVTIER_PARAMS:-dram_mb=512}"
read -r -a bench_args <<<"${KVTIER_BENCH_ARGS:-}"
out=${KVTIER_VM_OUT:-/tmp}

if [[ ! -x tools/kvtier-bench ]]; then
	echo "bench: tools/kvtier-bench is not built; nothing to run"
	exit 0
fi

kvtier_load kmod/kvtier.ko "${params[@]}"
trap 'rmmod kvtier' EXIT

echo "bench: kvtier-bench ${bench_args[*]} ($(nproc) cpus, $(uname -r))"
rc=0
tools/kvtier-bench "${bench_args[@]}" 2>&1 | tee "$out/bench.log" || rc=$?

grep -E '^[A-Za-z0-9_.-]+: ' "$out/bench.log" >"$out/bench.txt" || true
echo
echo "==== bench results ===="
cat "$out/bench.txt"
exit "$rc"
