#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make run`, inside the VM: load kvtier.ko, show its status, run the demo,
# show the status again, unload.
#
# Environment: KVTIER_PARAMS (module parameters, default dram_mb=512),
# KVTIER_DEMO_ARGS (arguments of tools/kvtier-demo, default "replay"),
# KVTIER_DEMO_HINT_ARGS (those of the hinted vs unhinted comparison),
# KVTIER_DEMO_HBM_ARGS (those of the same with an HBM tier).
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
# shellcheck source=SCRIPTDIR/guest-lib.sh
. "$top/tools/vm/guest-lib.sh"

read -r -a params <<<"${KVTIER_PARAMS:-dram_mb=512}"
read -r -a demo_args <<<"${KVTIER_DEMO_ARGS:-replay}"

step() {
	echo
	echo "==== $* ===="
}

step "insmod kmod/kvtier.ko ${params[*]}"
kvtier_load kmod/kvtier.ko "${params[@]}"
loaded=1
unload() {
	if ((loaded)); then
		loaded=0
		rmmod kvtier
	fi
}
trap unload EXIT

if [[ -x tools/kvtierctl ]]; then
	step "kvtierctl status"
	tools/kvtierctl status
fi

if [[ -x tools/kvtier-demo ]]; then
	step "kvtier-demo ${demo_args[*]}"
	tools/kvtier-demo "${demo_args[@]}"
	if [[ -x tools/kvtierctl ]]; then
		step "kvtierctl status"
		tools/kvtierctl status
	fi
	# The same trace through a modeled runtime, without and with hints:
	# how long the accelerator waits for blocks to come back from NVMe.
	read -r -a hint_args <<<"${KVTIER_DEMO_HINT_ARGS:---compare-hints 8 --compute-us-per-token 5 --max-requests 300 --dram-blocks 64 --verify sample}"
	step "kvtier-demo replay ${hint_args[*]}"
	tools/kvtier-demo replay "${hint_args[@]}"
	# Three tiers: the prefix must be in HBM (the emulated device, its
	# link held to 1 GB/s); hints stage NVMe -> DRAM -> HBM. An arena of
	# 64 slots is smaller than what the requests use, so that the run
	# without hints waits for blocks (about 130 of them).
	read -r -a hbm_args <<<"${KVTIER_DEMO_HBM_ARGS:---compare-hints 8 --hbm-slots 64 --compute-us-per-token 5 --max-requests 300 --dram-blocks 128 --verify sample}"
	step "kvtier-demo replay ${hbm_args[*]}"
	tools/kvtier-demo replay "${hbm_args[@]}"
	# Layer-wise loads: blocks of 1 MiB hold 16 layers; the runtime
	# computes layer l while l + 1 is read, and waits less than for whole
	# prefixes.
	read -r -a layer_args <<<"${KVTIER_DEMO_LAYER_ARGS:---compare-layers 16 --block-bytes 1048576 --compute-us-per-token 20 --max-requests 200 --dram-blocks 64 --verify sample}"
	step "kvtier-demo replay ${layer_args[*]}"
	tools/kvtier-demo replay "${layer_args[@]}"
fi

step "rmmod kvtier"
unload
dmesg | grep -E '\] kvtier:' | tail -n 20 || true
