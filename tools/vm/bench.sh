#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make bench`, inside the VM: load kvtier.ko, run tools/kvtier-bench, print
# its "name: value" result lines (also saved to $KVTIER_VM_OUT/bench.txt),
# unload. Exit status: the benchmark's (0 when there is no benchmark yet).
#
# Environment: KVTIER_PARAMS (module parameters, default dram_mb=512),
# KVTIER_BENCH_ARGS (arguments of tools/kvtier-bench), KVTIER_TRACE (the
# trace of the prefetch comparison, default the built-in generator),
# KVTIER_BENCH_PREFETCH=0 (skip that comparison), KVTIER_BENCH_DEMO_ARGS
# (its kvtier-demo replay arguments), KVTIER_BENCH_LOAD=0 (skip the one
# under load), KVTIER_BENCH_LOAD_ARGS (its arguments), KVTIER_BENCH_HBM=0 (skip the one to
# HBM), KVTIER_BENCH_HBM_ARGS (its arguments), KVTIER_BENCH_LAYERS=0 (skip
# the layer-wise one), KVTIER_BENCH_LAYER_ARGS (its arguments),
# KVTIER_BENCH_WEIGHTS=0 (skip the weight pools), KVTIER_BENCH_WEIGHTS_ARGS
# and KVTIER_BENCH_EXPERT_ARGS (the dense and the MoE kvtier-demo weights
# arguments).
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
KVTIER_BENCH_OUT=$out tools/kvtier-bench "${bench_args[@]}" 2>&1 | tee "$out/bench.log" || rc=$?

# Prefetch: the runtime model over the same trace without and with hints
# ($KVTIER_TRACE, else the built-in generator), on the scratch drive.
if [[ -x tools/kvtier-demo && ${KVTIER_BENCH_PREFETCH:-1} != 0 ]]; then
	read -r -a demo_args <<<"${KVTIER_BENCH_DEMO_ARGS:---compare-hints 8 --compute-us-per-token 2 --max-requests 400 --dram-blocks 64 --verify sample --nvme-format}"
	echo "bench: kvtier-demo replay ${demo_args[*]}"
	tools/kvtier-demo replay "${demo_args[@]}" 2>&1 | tee -a "$out/bench.log" || rc=$?
	# The bandwidth hiding every load needs, against fio's random reads.
	awk -F': ' '/^prefetch_needed_read_gbps: / { n = $2 }
		/^fio_rand_read_gbps: / { f = $2 }
		END { if (n != "" && f > 0)
			printf "prefetch_needed_bw_vs_fio: %.3f\n", n / f }' \
		"$out/bench.log" | tee -a "$out/bench.log"
fi

# Prefetch under load: the same comparison with the compute 20 times
# shorter, 256 KiB blocks and a DRAM share of 64 (PUTs demote all along),
# and background hints for the 8 requests after the window; its figures
# get the suffix _loaded. The load the runtime can make is bounded by its
# own pace (each request's GETs and PUTs): prefetch_needed_bw_vs_fio_loaded
# says how far that is from the drive's read bandwidth.
if [[ -x tools/kvtier-demo && ${KVTIER_BENCH_LOAD:-1} != 0 ]]; then
	read -r -a load_args <<<"${KVTIER_BENCH_LOAD_ARGS:---compare-hints 8 --background 8 --compute-us-per-token 0.1 --block-bytes 256K --max-requests 400 --dram-blocks 64 --verify sample --nvme-format}"
	echo "bench: kvtier-demo replay ${load_args[*]}"
	tools/kvtier-demo replay "${load_args[@]}" 2>&1 |
		sed -E 's/^(prefetch_[a-z_]+|stall_hinted_vs_unhinted|hinted_ready_by_deadline): /\1_loaded: /' |
		tee -a "$out/bench.log" || rc=$?
	awk -F': ' '/^prefetch_needed_read_gbps_loaded: / { n = $2 }
		/^fio_rand_read_gbps: / { f = $2 }
		/^fio_rand_read_verify_gbps: / { v = $2 }
		END { if (n != "" && f > 0)
			printf "prefetch_needed_bw_vs_fio_loaded: %.3f\n", n / f
		      if (n != "" && v > 0)
			printf "prefetch_needed_bw_vs_fio_verify_loaded: %.3f\n", n / v }' \
		"$out/bench.log" | tee -a "$out/bench.log"
fi

# The same to HBM: the emulated device's link held to 1 GB/s, the prefix
# needed in HBM, hints staging NVMe -> DRAM -> HBM. Three runs, each
# replaying without and with hints; the figures are the first run's, and
# hbm_stall_hinted_vs_unhinted_best the best of the three.
if [[ -x tools/kvtier-demo && ${KVTIER_BENCH_HBM:-1} != 0 ]]; then
	read -r -a hbm_args <<<"${KVTIER_BENCH_HBM_ARGS:---compare-hints 8 --hbm-slots 64 --hbm-gbps 1 --compute-us-per-token 2 --max-requests 400 --dram-blocks 256 --verify sample --nvme-format}"
	echo "bench: kvtier-demo replay ${hbm_args[*]} (3 runs)"
	tools/kvtier-demo replay "${hbm_args[@]}" 2>&1 | tee -a "$out/bench.log" || rc=$?
	for i in 2 3; do
		tools/kvtier-demo replay "${hbm_args[@]}" 2>&1 |
			sed -n "s/^hbm_stall_hinted_vs_unhinted: /hbm_stall_hinted_vs_unhinted_run$i: /p" |
			tee -a "$out/bench.log" || rc=$?
	done
	awk -F': ' '/^hbm_stall_hinted_vs_unhinted(_run[23])?: / {
			if (best == "" || $2 + 0 < best) best = $2 + 0 }
		END { if (best != "")
			printf "hbm_stall_hinted_vs_unhinted_best: %.3f\n", best }' \
		"$out/bench.log" | tee -a "$out/bench.log"
fi

# Layer-wise loads in the demo's runtime: 1 MiB blocks of 16 layers.
if [[ -x tools/kvtier-demo && ${KVTIER_BENCH_LAYERS:-1} != 0 ]]; then
	read -r -a layer_args <<<"${KVTIER_BENCH_LAYER_ARGS:---compare-layers 16 --block-bytes 1048576 --compute-us-per-token 20 --max-requests 200 --dram-blocks 64 --verify sample --nvme-format}"
	echo "bench: kvtier-demo replay ${layer_args[*]}"
	tools/kvtier-demo replay "${layer_args[@]}" 2>&1 | tee -a "$out/bench.log" || rc=$?
fi

# Weight pools: kvtier-demo weights streams a generated model twice the
# pool's DRAM share from a file, without and with hints: layer streaming
# (dense), then MoE (top-2 of 64, Zipf popularity, 80% of the experts
# predicted; then the top-2 and two runners-up as probable hints). The file lives on a loop-mounted ext4 in the guest's /tmp,
# which has O_DIRECT (the guest's tmpfs has not). Three runs of each; every
# figure is the best of the three, with its run's absolute figures; the
# runs' tables are in $out/weights-*.log.
weights_bench() {
	local dir mnt kind i r
	local -a args

	dir=$(mktemp -d /tmp/kvtier-weights.XXXXXX) || return 1
	mnt=$dir/mnt
	modprobe -a loop ext4 >/dev/null 2>&1 || true
	if ! { mkdir "$mnt" && truncate -s 512M "$dir/img" &&
		mkfs.ext4 -q -F -b 4096 "$dir/img" >/dev/null 2>&1 &&
		mount -o loop,noatime "$dir/img" "$mnt"; }; then
		echo "bench: kvtier-demo weights: skipped, no loop-mounted ext4 for the model file"
		rm -rf "$dir"
		return 0
	fi
	r=0
	for kind in weights expert; do
		if [[ $kind == weights ]]; then
			read -r -a args <<<"${KVTIER_BENCH_WEIGHTS_ARGS:-}"
		else
			read -r -a args <<<"${KVTIER_BENCH_EXPERT_ARGS:---moe --modes none,expert,prob}"
		fi
		echo "bench: kvtier-demo weights ${args[*]} (3 runs)"
		for i in 1 2 3; do
			tools/kvtier-demo weights --file "$mnt/model.safetensors" \
				"${args[@]}" >"$out/weights-$kind-$i.log" 2>&1 || r=$?
			sed -n "s/^\(${kind}_stall_hinted_vs_unhinted: \)/\1run $i: /p" \
				"$out/weights-$kind-$i.log"
			if ((r == 77)); then
				grep -m1 skipped "$out/weights-$kind-$i.log" | sed 's/^/bench: /'
				r=0
				break 2
			fi
			((r == 0)) || { cat "$out/weights-$kind-$i.log"; break 2; }
		done
		# The best (lowest; highest for the hit share) of each figure.
		awk -F': ' -v kind="$kind" '
			$1 ~ "^" kind "_(stall_hinted_vs_unhinted|read_amplification)$" ||
			$1 ~ "^expert_(hit_share(_prob)?|stall_prob_vs_expert)$" {
				v = $2 + 0
				hi = $1 ~ /hit_share/
				if (!($1 in best) ||
				    (hi ? v > best[$1] : v < best[$1])) {
					best[$1] = v; line[$1] = $0
				}
				if (!($1 in order)) { order[$1] = ++n; names[n] = $1 }
			}
			END { for (i = 1; i <= n; i++) print line[names[i]] }' \
			"$out"/weights-"$kind"-[123].log | tee -a "$out/bench.log"
	done
	# The pool lets go of the file when its last fd closes.
	umount "$mnt" 2>/dev/null || { sleep 1 && umount "$mnt"; } ||
		umount -l "$mnt"
	rm -rf "$dir"
	return "$r"
}

if [[ -x tools/kvtier-demo && ${KVTIER_BENCH_WEIGHTS:-1} != 0 ]]; then
	weights_bench || rc=$?
fi

grep -E '^[A-Za-z0-9_.]+: ' "$out/bench.log" >"$out/bench.txt" || true
echo
echo "==== bench results ===="
cat "$out/bench.txt"
exit "$rc"
