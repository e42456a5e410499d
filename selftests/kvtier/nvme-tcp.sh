#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The NVMe tier on a namespace reached over NVMe/TCP, and what the kernel's
# own target offers a pod of hosts sharing one namespace, in the VM with
# kvtier loaded (run by tools/vm/run-selftests.sh after the C tests; TAP
# output).
#
# The second NVMe drive ($KVTIER_TCP_DEV, default /dev/nvme1n1) is exported
# by nvmet-tcp on the guest's loopback (configfs, port 4420) and connected
# back with nvme-tcp (/dev/nvme-fabrics). Then:
#
#  - what the target's controller says and does, through NVMe passthrough
#    (nvme-passthru.py): no Compare, no fused Compare and Write, no
#    reservations, atomic writes of one logical block. A pod tier shared
#    by hosts cannot take leases with a compare-and-write or a reservation
#    on this target: Documentation/design.rst, "A namespace shared by
#    hosts", builds on single-block writes instead. A case fails when a
#    kernel's target starts offering either, so that the choice is made
#    again;
#  - kvtierctl formats and attaches the remote namespace, and kvtier-demo
#    replays its built-in trace on it with every GET checked byte for
#    byte: blocks demoted over the fabric come back (promotions), none
#    reads bad: the per-host NVMe tier works over the fabric as it is;
#  - the tier lets it go, the host disconnects, the target goes away, and
#    the kernel log holds no complaint (the runner checks that).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
demo=$top/tools/kvtier-demo
ctl=$top/tools/kvtierctl
cmd=$top/selftests/kvtier/nvme-passthru.py
dev=${KVTIER_TCP_DEV:-/dev/nvme1n1}
nqn=nqn.2026-12.io.kvtier:pod-test
cfs=/sys/kernel/config/nvmet
out=${KVTIER_VM_OUT:-/tmp}/nvme-tcp.out

# shellcheck source=SCRIPTDIR/../../tools/vm/tap.sh
. "$top/tools/vm/tap.sh"
ok() { tap_ok "- $1"; }
not_ok() { tap_not_ok "- $1"; }
finish() { tap_end; exit; }

# The block device of the namespace the host connected to, or nothing.
remote_ns() {
	local b

	for b in /sys/block/nvme*; do
		[[ -e $b/device/subsysnqn && -b /dev/${b##*/} ]] || continue
		if [[ $(<"$b/device/subsysnqn") == "$nqn" ]]; then
			echo "/dev/${b##*/}"
			return
		fi
	done
}

# shellcheck disable=SC2317 # run by the trap
cleanup() {
	local c

	"$ctl" detach >/dev/null 2>&1
	for c in /sys/class/nvme/nvme*; do
		[[ -e $c/subsysnqn && $(<"$c/subsysnqn") == "$nqn" ]] &&
			echo 1 >"$c/delete_controller" 2>/dev/null
	done
	rm -f "$cfs/ports/1/subsystems/$nqn" 2>/dev/null
	rmdir "$cfs/ports/1" 2>/dev/null
	echo 0 >"$cfs/subsystems/$nqn/namespaces/1/enable" 2>/dev/null
	rmdir "$cfs/subsystems/$nqn/namespaces/1" 2>/dev/null
	rmdir "$cfs/subsystems/$nqn" 2>/dev/null
	modprobe -r nvme-tcp nvmet-tcp nvmet 2>/dev/null
}
trap cleanup EXIT

if [[ ! -b $dev ]] || ! modprobe nvmet 2>/dev/null ||
   ! modprobe nvmet-tcp 2>/dev/null || ! modprobe nvme-tcp 2>/dev/null; then
	ok "NVMe/TCP on the loopback # SKIP no $dev, or no nvmet-tcp / nvme-tcp"
	finish
fi
ip link set lo up
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config

# The target: one subsystem, any host, the drive as namespace 1.
if mkdir "$cfs/subsystems/$nqn" &&
   echo 1 >"$cfs/subsystems/$nqn/attr_allow_any_host" &&
   mkdir "$cfs/subsystems/$nqn/namespaces/1" &&
   echo -n "$dev" >"$cfs/subsystems/$nqn/namespaces/1/device_path" &&
   echo 1 >"$cfs/subsystems/$nqn/namespaces/1/enable" &&
   mkdir "$cfs/ports/1" &&
   echo tcp >"$cfs/ports/1/addr_trtype" &&
   echo ipv4 >"$cfs/ports/1/addr_adrfam" &&
   echo 127.0.0.1 >"$cfs/ports/1/addr_traddr" &&
   echo 4420 >"$cfs/ports/1/addr_trsvcid" &&
   ln -s "$cfs/subsystems/$nqn" "$cfs/ports/1/subsystems/$nqn"; then
	ok "nvmet-tcp exports $dev on 127.0.0.1:4420"
else
	not_ok "nvmet-tcp exports $dev on 127.0.0.1:4420"
	finish
fi

# The host side.
ns=
if echo "transport=tcp,traddr=127.0.0.1,trsvcid=4420,nqn=$nqn" \
	>/dev/nvme-fabrics; then
	for _ in $(seq 50); do
		ns=$(remote_ns)
		[[ -n $ns && -b $ns ]] && break
		sleep 0.1
	done
fi
if [[ -n $ns && -b $ns ]]; then
	ok "nvme-tcp connects: $ns"
else
	not_ok "nvme-tcp connects (no block device of $nqn)"
	finish
fi

# What the target offers: Identify Controller, then the commands.
if python3 "$cmd" "$ns" >"$out.cmds" 2>&1; then
	sed 's/^/# /' "$out.cmds"
	while read -r what value; do
		case $what in
		compare|fused_compare_write|reservations)
			if [[ $value == no ]]; then
				ok "the target offers no $what (a pod lease cannot use it)"
			else
				not_ok "the target offers no $what: it does now ($value): design.rst, \"A namespace shared by hosts\", chose without it"
			fi
			;;
		compare_cmd|resv_register_cmd)
			if [[ $value == invalid_opcode ]]; then
				ok "$what is refused: Invalid Command Opcode"
			else
				not_ok "$what is refused: Invalid Command Opcode (got $value)"
			fi
			;;
		atomic_write_blocks)
			if ((value >= 1)); then
				ok "a write of $value logical block(s) is atomic, power fail included (AWUPF)"
			else
				not_ok "a write of one logical block is atomic (AWUPF says $value)"
			fi
			;;
		esac
	done <"$out.cmds"
else
	not_ok "NVMe passthrough to $ns"
	sed 's/^/# /' "$out.cmds"
fi

# The per-host NVMe tier on the remote namespace.
if "$ctl" attach "$ns" --format --force >"$out.attach" 2>&1; then
	ok "kvtierctl attach --format $ns"
else
	not_ok "kvtierctl attach --format $ns"
	sed 's/^/# /' "$out.attach"
	finish
fi
timeout 240 "$demo" replay --nvme "$ns" --compare-hints 8 \
	--compute-us-per-token 0.1 --block-bytes 256K --max-requests 200 \
	--dram-blocks 64 --verify full --no-mmap >"$out" 2>&1
rc=$?
sed 's/^/# /' "$out" | tail -n 20
if ((rc == 0)); then
	ok "a replay over NVMe/TCP: no wrong bytes, no failed PUT (exit 0)"
else
	not_ok "a replay over NVMe/TCP: no wrong bytes, no failed PUT (exit $rc)"
fi
# Both replays' reports: "demotions / promotions (blocks)  D / P" and
# "dirty blocks / bad reads  D / B".
moved=$(awk '/demotions \/ promotions/ { d += $(NF - 2); p += $NF }
	END { print d + 0, p + 0 }' "$out")
read -r dem prom <<<"$moved"
if ((dem > 0 && prom > 0)); then
	ok "blocks went over the fabric and came back: $dem demotions, $prom promotions"
else
	not_ok "blocks went over the fabric and came back ($dem demotions, $prom promotions)"
fi
reads=$(awk '/dirty blocks \/ bad reads/ { s += $NF } END { print s + 0 }' "$out")
if ((reads == 0)); then
	ok "no bad reads over the fabric"
else
	not_ok "no bad reads over the fabric ($reads)"
fi
if timeout 120 "$ctl" detach >"$out.detach" 2>&1; then
	ok "the tier lets the remote namespace go"
else
	not_ok "the tier lets the remote namespace go"
	sed 's/^/# /' "$out.detach"
fi
finish
