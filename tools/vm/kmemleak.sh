#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kmemleak.sh clear|check: the kmemleak part of the debug-kernel lane, run
# inside the VM around tools/vm/run-selftests.sh (tools/vm/check.sh does).
#
#   clear   scan once, then forget every suspect found so far (boot-time
#           allocations kmemleak cannot follow), so that `check` reports
#           only what leaked while the tests ran.
#   check   scan twice (an object seen unreferenced by one scan only, e.g.
#           a pointer that sat in a register, is not reported), save the
#           report to $KVTIER_VM_OUT/kmemleak.txt and write one line to
#           $KVTIER_VM_OUT/kmemleak.result and stdout:
#             ok - kmemleak: no suspected leak
#             not ok - kmemleak: N suspected leaks (M with kvtier frames ...)
#             skip - kmemleak: ... (a kernel without CONFIG_DEBUG_KMEMLEAK)
#           Exit status 1 on "not ok". Any new suspect fails: the kernel
#           does not leak on its own while the tests run, and kvtier.ko is
#           unloaded by then, so its frames show as bare addresses
#           ("[<ffffffffa00052f7>] 0xffffffffa00052f7", no symbol): those
#           are counted as kvtier's.
set -uo pipefail

f=/sys/kernel/debug/kmemleak
out=${KVTIER_VM_OUT:-/tmp}
result=$out/kmemleak.result

say() {
	echo "$*" | tee "$result"
}

case ${1:-} in
clear)
	[[ -w $f ]] || { echo "kmemleak: no $f, nothing to clear"; exit 0; }
	echo scan >"$f" && echo clear >"$f"
	;;
check)
	if [[ ! -w $f ]]; then
		say "skip - kmemleak: no $f (kernel without CONFIG_DEBUG_KMEMLEAK, or kmemleak disabled at boot)"
		exit 0
	fi
	# A kmemleak that turned itself off (out of its early pool, an
	# internal error) refuses writes: that is not a clean bill.
	if ! { echo scan >"$f"; } 2>/dev/null; then
		say "not ok - kmemleak: scan refused, kmemleak is disabled (see dmesg)"
		exit 1
	fi
	sleep 1
	echo scan >"$f"
	cat "$f" >"$out/kmemleak.txt"
	n=$(grep -c '^unreferenced object' "$out/kmemleak.txt" || true)
	if ((n == 0)); then
		say "ok - kmemleak: no suspected leak"
		exit 0
	fi
	k=$(awk '/^unreferenced object/ { if (hit) k++; hit = 0 }
		/kvtier|\] 0x[0-9a-f]+$/ { hit = 1 }
		END { if (hit) k++; print k + 0 }' "$out/kmemleak.txt")
	say "not ok - kmemleak: $n suspected leaks ($k with kvtier frames or unloaded-module addresses), in kmemleak.txt"
	head -n 60 "$out/kmemleak.txt"
	exit 1
	;;
*)
	echo "usage: ${0##*/} clear|check" >&2
	exit 2
	;;
esac
