#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The loaded replay on a drive that keeps failing, in the VM with kvtier
# loaded (run by tools/vm/run-selftests.sh after the C tests; TAP output).
#
# The second NVMe drive ($KVTIER_FLAKY_DEV, default /dev/nvme1n1) goes
# behind device-mapper: a linear table while kvtierctl formats a store on
# it and attaches it, then dm-flakey, up 1 s and down 1 s, every read
# corrupted while down (corrupt_bio_byte: byte 1 of each read bio set to
# 255), writes passing: reads that come back wrong, which the tier must
# never serve, where an error target's EIO is easier to get right (the C
# cases of nvme_faults do that; all I/O failing would fail the demo's
# pool creation, a write, before there is anything to replay). kvtier-demo replays its built-in trace on it the way the
# bench's loaded replay does (hinted and background groups, little compute
# a token, 256 KiB blocks, a DRAM share of 64 blocks, twice: without hints
# and with), every GET checked byte for byte. Then:
#
#  - the replay ends within its timeout (nothing waits forever) and exits
#    0: no GET returned wrong bytes, no PUT failed;
#  - the faults reached the hinted reads: some deadline groups ended late
#    or short (prefetch_late_group_share > 0), or some background groups
#    did not end in full: a group is reported ready only when every block
#    it names was read and verified (the C case nvme_faults
#    dm.prefetch_unreadable_block checks what one such group reports);
#  - the pools counted bad reads (the tier saw the faults);
#  - the drive detaches, and the kernel log holds no complaint (the
#    runner checks that after each test).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
demo=$top/tools/kvtier-demo
ctl=$top/tools/kvtierctl
dev=${KVTIER_FLAKY_DEV:-/dev/nvme1n1}
name=kvt-flaky-$$
dm=/dev/mapper/$name
out=${KVTIER_VM_OUT:-/tmp}/flaky-replay.out
n=0
nfail=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); nfail=$((nfail + 1)); echo "not ok $n - $1"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

finish() {
	echo "1..$n"
	exit $((nfail ? 1 : 0))
}

# shellcheck disable=SC2317 # run by the trap
cleanup() {
	"$ctl" detach >/dev/null 2>&1
	dmsetup remove --retry "$name" >/dev/null 2>&1
}
trap cleanup EXIT

if [[ ! -b $dev ]] || ! command -v dmsetup >/dev/null ||
   ! modprobe dm-flakey 2>/dev/null; then
	skip "loaded replay on a flaky drive" "no $dev, dmsetup or dm-flakey"
	finish
fi
sectors=$(blockdev --getsz "$dev")

# The store, formatted and attached while the drive works: the demo uses
# the device attached (its own attach would fail while the drive is down).
if dmsetup create "$name" --table "0 $sectors linear $dev 0" >/dev/null &&
   dmsetup mknodes "$name" && [[ -b $dm ]] &&
   "$ctl" attach "$dm" --format --force >"$out.format" 2>&1; then
	ok "kvtierctl attach --format on a linear table over $dev"
else
	not_ok "kvtierctl attach --format on a linear table over $dev"
	sed 's/^/# /' "$out.format" 2>/dev/null
	finish
fi
if dmsetup suspend "$name" &&
   dmsetup load "$name" --table "0 $sectors flakey $dev 0 1 1 5 corrupt_bio_byte 1 r 255 0" &&
   dmsetup resume "$name"; then
	ok "the table is dm-flakey: up 1 s, down 1 s, reads corrupted"
else
	not_ok "the table is dm-flakey: up 1 s, down 1 s, reads corrupted"
	finish
fi

start=$(date +%s)
timeout 240 "$demo" replay --nvme "$dm" --compare-hints 8 --background 8 \
	--compute-us-per-token 0.1 --block-bytes 256K --max-requests 400 \
	--dram-blocks 64 --verify full --no-mmap >"$out" 2>&1
rc=$?
secs=$(($(date +%s) - start))
sed 's/^/# /' "$out" | tail -n 40
if ((rc == 124)); then
	not_ok "the replay ends (still running after 240 s)"
	finish
fi
ok "the replay ends ($secs s)"
if ((rc == 0)); then
	ok "no GET returned wrong bytes, no PUT failed (exit 0)"
else
	not_ok "no GET returned wrong bytes, no PUT failed (exit $rc)"
fi

# Deadline groups that ended late or short, background groups that did
# not end in full ("prefetch_background_groups: N (M ended in full)").
late=$(awk -F': ' '$1 == "prefetch_late_group_share" { print $2 }' "$out")
short=$(awk '$1 == "prefetch_background_groups:" { gsub(/\(/, "", $3); print $2 - $3 }' "$out")
if [[ -n $late && -n $short ]] &&
   awk -v x="$late" -v y="$short" 'BEGIN { exit !(x > 0 || y > 0) }'; then
	ok "hinted groups met the faults: late share $late, $short background groups short"
else
	not_ok "hinted groups met the faults: late share '$late', background groups short '$short'"
fi

# Both replays' reports: "dirty blocks / bad reads  D / B".
errs=$(awk '/dirty blocks \/ bad reads/ { s += $NF } END { print s + 0 }' "$out")
if ((errs > 0)); then
	ok "the tier counted the bad reads ($errs)"
else
	not_ok "the tier counted the bad reads (none in the reports)"
fi

if timeout 120 "$ctl" detach >"$out.detach" 2>&1; then
	ok "the tier lets the drive go"
else
	not_ok "the tier lets the drive go"
	sed 's/^/# /' "$out.detach"
fi
finish
