#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# accel-test.sh [TOP]: kvtier-vm's choice of accelerator, tested with a KVM
# made to fail on purpose (tools/vm/fake-kvm-qemu as KVTIER_VM_QEMU, a
# plain file as /dev/kvm) on any host: the proof boot, its cached verdict,
# a failure in the middle of a run ended at once and retried once under
# TCG, a forced KVTIER_VM_ACCEL=kvm that fails within seconds, and a KVM
# that works being used. Runs on the host; boots the VM (TCG underneath)
# about ten times. TAP on stdout; exit 1 when a case failed.
set -uo pipefail

top=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
vm=$top/tools/vm/kvtier-vm
base=$top/build/accel-test
rm -rf "$base"
mkdir -p "$base"
: >"$base/kvm-dev"

export KVTIER_VM_QEMU=$top/tools/vm/fake-kvm-qemu
export KVTIER_VM_KVM_DEV=$base/kvm-dev
export KVTIER_VM_DIR=$base/vm
export KVTIER_VM_CACHE=$base/cache
export FAKE_KVM_LOG=$base/kvm-runs
unset KVTIER_VM_ACCEL KVTIER_VM_KVM_PROOF_TIMEOUT

# shellcheck source=SCRIPTDIR/tap.sh
. "$top/tools/vm/tap.sh"
ok() {
	tap_ok "- $*"
}
not_ok() {
	tap_not_ok "- $*"
	sed 's/^/# /' "$base/err"
	# The proof boot's own output, and the KVM runs the fake QEMU saw.
	sed 's/^/# proof: /' "$KVTIER_VM_DIR/kvm-proof.log" 2>/dev/null
	sed 's/^/# proof qemu: /' "$KVTIER_VM_DIR/kvm-proof/qemu.log" 2>/dev/null
	sed 's/^/# fake: /' "$FAKE_KVM_LOG" 2>/dev/null
}

# run ACCEL MODE [FRESH]: one boot of `echo accel-test; exit 3`, the cache
# emptied first when FRESH; sets rc, secs, and the output in $base/out and
# $base/err.
run() {
	local t0
	[[ -z ${3:-} ]] || rm -rf "$KVTIER_VM_CACHE"
	: >"$FAKE_KVM_LOG"
	t0=$(date +%s%N)
	rc=0
	KVTIER_VM_ACCEL=$1 FAKE_KVM=$2 "$vm" --timeout 300 --quiet -- \
		'echo accel-test; exit 3' >"$base/out" 2>"$base/err" || rc=$?
	secs=$((($(date +%s%N) - t0) / 1000000000))
	cat "$KVTIER_VM_DIR/output.log" >>"$base/out" 2>/dev/null
}

# kvm_runs: QEMU runs with -accel kvm in the last run().
kvm_runs() {
	wc -l <"$FAKE_KVM_LOG"
}

# ran_under ACCEL: the run's summary line names ACCEL and the command's
# output and status came through.
ran_under() {
	grep -q "^kvtier-vm: $1, .* exit 3$" "$base/err" &&
		grep -qx accel-test "$base/out" && ((rc == 3))
}

verdict() {
	cat "$KVTIER_VM_CACHE"/accel/* 2>/dev/null
}

run kvm internal-error fresh
if ((rc == 125 && secs < 15)) && grep -q "KVM internal error. Suberror: 1; emulation failure" "$base/err" &&
	grep -q 'KVTIER_VM_ACCEL=tcg' "$base/err"; then
	ok "forced KVM, emulation failure at boot: fails in ${secs}s naming KVTIER_VM_ACCEL=tcg"
else
	not_ok "forced KVM, emulation failure at boot: fails within 15s naming KVTIER_VM_ACCEL=tcg (status $rc, ${secs}s)"
fi

run auto internal-error
if ran_under tcg && (($(kvm_runs) == 0)) &&
	grep -q '^kvtier-vm: TCG: KVM fails on .*emulation failure.*(cached in' "$base/err"; then
	ok "auto after a failed proof: TCG from the cached verdict, no KVM boot, one line why"
else
	not_ok "auto after a failed proof: TCG from the cached verdict, no KVM boot, one line why (status $rc, $(kvm_runs) KVM runs)"
fi

run auto internal-error fresh
if ran_under tcg && (($(kvm_runs) == 1)) && ((secs < 60)) &&
	[[ $(verdict) == "tcg: KVM fails on "*"emulation failure"* ]]; then
	ok "auto, emulation failure: one proof boot, then TCG (${secs}s), verdict cached"
else
	not_ok "auto, emulation failure: one proof boot, then TCG, verdict cached (status $rc, $(kvm_runs) KVM runs, ${secs}s, verdict '$(verdict)')"
fi

run auto abort fresh
if ran_under tcg && (($(kvm_runs) == 1)) && grep -q '^kvtier-vm: TCG: .*failed to set MSR' "$base/err"; then
	ok "auto, QEMU aborting under KVM: TCG, with QEMU's reason"
else
	not_ok "auto, QEMU aborting under KVM: TCG, with QEMU's reason (status $rc, $(kvm_runs) KVM runs)"
fi

run kvm hang fresh
if ((rc == 125 && secs < 40)) && grep -q 'did not finish within 20s' "$base/err"; then
	ok "forced KVM, a guest that never boots: fails in ${secs}s (the proof's limit)"
else
	not_ok "forced KVM, a guest that never boots: fails within 40s (status $rc, ${secs}s)"
fi

run auto works fresh
if ran_under kvm && (($(kvm_runs) == 2)) && [[ $(verdict) == kvm ]] &&
	! grep -q 'TCG' "$base/err"; then
	ok "auto, KVM that works: proven once, the run uses it"
else
	not_ok "auto, KVM that works: proven once, the run uses it (status $rc, $(kvm_runs) KVM runs, verdict '$(verdict)')"
fi

run kvm works
if ran_under kvm && (($(kvm_runs) == 1)); then
	ok "forced KVM, proven: the cached verdict, no second proof"
else
	not_ok "forced KVM, proven: the cached verdict, no second proof (status $rc, $(kvm_runs) KVM runs)"
fi

run auto fails-later fresh
if ran_under tcg && (($(kvm_runs) == 2)) && ((secs < 60)) &&
	grep -q 'retrying once under TCG' "$base/err" &&
	[[ $(verdict) == "tcg: KVM fails on "*"emulation failure"* ]]; then
	ok "auto, KVM failing mid-run: ended at once, retried once under TCG (${secs}s), verdict now TCG"
else
	not_ok "auto, KVM failing mid-run: ended at once, retried once under TCG within 60s, verdict TCG (status $rc, $(kvm_runs) KVM runs, ${secs}s, verdict '$(verdict)')"
fi

run tcg hang fresh
if ran_under tcg && (($(kvm_runs) == 0)); then
	ok "KVTIER_VM_ACCEL=tcg never tries KVM"
else
	not_ok "KVTIER_VM_ACCEL=tcg never tries KVM (status $rc, $(kvm_runs) KVM runs)"
fi

tap_end
