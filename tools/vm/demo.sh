#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make run`, inside the VM: load kvtier.ko, show its status, run the demo,
# show the status again, unload.
#
# Environment: KVTIER_PARAMS (module parameters, default dram_mb=512),
# KVTIER_DEMO_ARGS (arguments of tools/kvtier-demo, default "replay").
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
fi

step "rmmod kvtier"
unload
dmesg | grep -E '\] kvtier:' | tail -n 20 || true
