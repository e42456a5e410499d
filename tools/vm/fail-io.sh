#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# fail-io.sh BIN: block I/O errors under the NVMe tier, in the debug-kernel
# VM (tools/vm/check.sh runs it after fail-nth.sh, before the kmemleak
# scan). BIN is tools/vm/fail-io.c, built by check.sh.
#
# Sets fail_make_request to fail FAIL_IO_PCT percent (default 10) of the
# bios of the drive (FAIL_IO_DEV, default /dev/nvme0n1; its make-it-fail
# set) while BIN says "# arm" and until it says "# disarm" (at "# fail1":
# only the next bio; at "# failall": every bio); loads kvtier.ko
# ($KVTIER_KO, $KVTIER_PARAMS); unloads it after; dmesg since the start
# must hold no kernel complaint (the block layer's own I/O error lines are
# expected). TAP lines on stdout and in $KVTIER_VM_OUT/fail-io.tap; exit 1
# when one is "not ok".
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=SCRIPTDIR/guest-lib.sh
. "$top/tools/vm/guest-lib.sh"

bin=${1:?usage: fail-io.sh BIN}
ko=${KVTIER_KO:-$top/kmod/kvtier.ko}
read -r -a params <<<"${KVTIER_PARAMS:-dram_mb=512}"
tap=${KVTIER_VM_OUT:-/tmp}/fail-io.tap
dev=${FAIL_IO_DEV:-/dev/nvme0n1}
pct=${FAIL_IO_PCT:-10}
fmr=/sys/kernel/debug/fail_make_request
mif=/sys/block/${dev##*/}/make-it-fail
: >"$tap"

say() {
	echo "$*" | tee -a "$tap"
}

if [[ ! -d $fmr || ! -e $mif ]]; then
	say "not ok - fail-io: no $fmr or $mif (CONFIG_FAIL_MAKE_REQUEST, an NVMe drive)"
	exit 1
fi
echo 0 >"$fmr/verbose"
echo 0 >"$fmr/probability"
echo 1 >"$fmr/interval"
echo -1 >"$fmr/times"
echo 0 >"$mif"

mark="kvtier-fail-io: start $$"
echo "$mark" >/dev/kmsg
if ! err=$(kvtier_load "$ko" "${params[@]}" 2>&1); then
	say "not ok - fail-io: insmod $ko: $err"
	exit 1
fi

log=${tap%.tap}.log
: >"$log"
coproc FIO { FAIL_IO_DEV=$dev "$bin" 2>&1; }
# shellcheck disable=SC2153 # FIO_PID is set by coproc
fio_pid=$FIO_PID
# bash unsets FIO when the program exits: read its output from copies.
exec {rfd}<&"${FIO[0]}" {wfd}>&"${FIO[1]}"
while IFS= read -r line <&"$rfd"; do
	echo "$line" >>"$log"
	case $line in
	"# arm")
		echo "$pct" >"$fmr/probability"
		echo 1 >"$mif"
		echo "# fail_make_request: $pct% of the bios of $dev fail"
		echo arm >&"$wfd"
		;;
	"# fail1")
		echo 1 >"$fmr/times"
		echo 100 >"$fmr/probability"
		echo 1 >"$mif"
		echo "# fail_make_request: the next bio of $dev fails"
		echo fail1 >&"$wfd"
		;;
	"# failall")
		echo 100 >"$fmr/probability"
		echo 1 >"$mif"
		echo "# fail_make_request: every bio of $dev fails"
		echo failall >&"$wfd"
		;;
	"# disarm")
		echo 0 >"$mif"
		echo 0 >"$fmr/probability"
		echo -1 >"$fmr/times"
		echo disarm >&"$wfd"
		;;
	"ok "* | "not ok "*) say "$line" ;;
	*) echo "$line" ;;
	esac
done
wait "$fio_pid" 2>/dev/null
brc=$?
exec {rfd}<&- {wfd}>&-
echo 0 >"$mif"
echo 0 >"$fmr/probability"
fault_script_end fail-io faults "$log" "$bin" "$brc" "$mark"
! grep -q '^not ok ' "$tap"
