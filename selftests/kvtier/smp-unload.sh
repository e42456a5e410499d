#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kvtier on 4 vCPUs, and module unload under load.
#
# Usage: smp-unload.sh [REPO_ROOT]
#
# Runs on the host; boots the test VM (tools/vm/kvtier-vm) once with 4
# virtual CPUs and a blank emulated NVMe drive:
#
#  - the concurrency stress (selftests/kvtier/stress: 4 threads x 3 pools
#    of verified random operations) with the NVMe tier attached, so
#    evictions demote and GETs promote on 4 CPUs at once;
#  - unload under load, twice: once with the stress running, once with
#    the fuzzer (forks, mmaps, attach/detach, io in flight). While it runs,
#    rmmod must be refused and change nothing; then every process of it
#    is killed with SIGKILL mid-command, and rmmod must succeed
#    within 60 s (fds close as the processes die, I/O and work items
#    drain); no kvtier kmem cache is left and the kernel log stays clean;
#    the module loads again and attaches the same drive.
#
# Prints "ok N name" / "not ok N name" lines and a plan "1..N"; exits 1 if
# anything failed. Environment: KVTIER_KO (module, default kmod/kvtier.ko),
# KVTIER_VM_DIR, KVTIER_SMP_SECS (stress seconds, default 15).

set -uo pipefail

if [[ ${1:-} == --guest ]]; then
	top=$2
	# shellcheck source=nvme-lib.sh
	. "$top/selftests/kvtier/nvme-lib.sh"
	cd "$top" || exit 2
	dev=/dev/nvme0n1
	secs=${KVTIER_SMP_SECS:-15}

	# What still holds the module: its use count, tasks left, their stacks.
	smp_diag() {
		local d
		grep -E '^kvtier' /proc/modules | while IFS= read -r l; do g_note "  $l"; done
		ps -eo pid,pgid,stat,wchan:30,args | grep -v ' \[' |
			while IFS= read -r l; do g_note "  $l"; done
		for d in /proc/[0-9]*; do
			grep -qs kvt "$d/stack" || continue
			g_note "  $d: $(tr '\0' ' ' <"$d/cmdline")"
			while IFS= read -r l; do g_note "    $l"; done <"$d/stack"
		done
		ls -l /proc/*/fd 2>/dev/null | grep -E 'kvtier|anon_inode:kvt' |
			while IFS= read -r l; do g_note "  fd: $l"; done
	}

	# unload_under NAME COMMAND... BINARY: rmmod is refused while it runs;
	# every process of BINARY gets SIGKILL; rmmod works soon after.
	unload_under() {
		local name=$1 pid i alive=1 refused=0 gone=0
		shift
		g_check "$name: insmod" g_load || return
		g_check "$name: attach $dev" "$tool" attach $dev || return
		"$@" >"$KVTIER_VM_OUT/$name.log" 2>&1 &
		pid=$!
		sleep 4
		for i in 1 2 3 4 5; do
			if rmmod kvtier 2>/dev/null; then
				break
			fi
			refused=$i
			kill -0 "$pid" 2>/dev/null || alive=0
			sleep 0.5
		done
		if ((refused == 5)); then
			g_ok "$name: rmmod refused 5 times while it runs"
		else
			g_not_ok "$name: rmmod refused while it runs (went at try $((refused + 1)))"
		fi
		if ((alive)) && kill -0 "$pid" 2>/dev/null; then
			g_ok "$name: the load kept running through the rmmod attempts"
		else
			g_not_ok "$name: the load kept running through the rmmod attempts"
			tail -n 20 "$KVTIER_VM_OUT/$name.log" | while IFS= read -r l; do g_note "  $l"; done
		fi
		# The harness runs each test in a process group of its own, and
		# the fuzzer forks: SIGKILL everything running that binary.
		for i in $(seq 1 50); do
			pkill -KILL -f "${!#}" || break
			sleep 0.1
		done
		wait "$pid" 2>/dev/null
		for i in $(seq 1 60); do
			if rmmod kvtier 2>/dev/null; then
				gone=$i
				break
			fi
			sleep 1
		done
		if ((gone)); then
			g_ok "$name: rmmod after SIGKILL of every process of it (try $gone)"
		else
			g_not_ok "$name: rmmod after SIGKILL of every process of it, within 60 s"
			smp_diag
			return
		fi
		if grep -qiE '^kvt' /proc/slabinfo 2>/dev/null ||
			compgen -G '/sys/kernel/slab/kvt*' >/dev/null; then
			g_not_ok "$name: no kvtier kmem cache after unload"
		else
			g_ok "$name: no kvtier kmem cache after unload"
		fi
		g_check "$name: insmod again" g_load &&
			g_check "$name: the drive attaches again" "$tool" attach $dev &&
			g_check "$name: rmmod" rmmod kvtier
	}

	g_dmesg_mark
	g_check "4 vCPUs online" test "$(nproc)" -ge 4
	g_check "stress: insmod" g_load || exit 0
	g_check "stress: attach $dev (blank, formatted)" "$tool" attach $dev
	g_check "stress on $(nproc) vCPUs, NVMe attached, ${secs} s" \
		env KVTIER_STRESS_SECS="$secs" selftests/kvtier/stress
	g_check "stress: blocks went down to NVMe and back" bash -c \
		"'$tool' nstat | grep -q 'bytes_read=[1-9]'"
	g_check "stress: rmmod" rmmod kvtier
	unload_under "unload under stress" \
		env KVTIER_STRESS_SECS=600 selftests/kvtier/stress
	unload_under "unload under fuzz" \
		env KVTIER_FUZZ_CALLS=100000000 selftests/kvtier/fuzz
	g_check "dmesg clean" g_dmesg_clean
	exit 0
fi

top=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
# shellcheck source=nvme-lib.sh
. "$top/selftests/kvtier/nvme-lib.sh"
self=$top/selftests/kvtier/smp-unload.sh
ndir=${KVTIER_SMP_NVME_DIR:-$top/build/vm/nvme-smp}
results=$(mktemp -d "${TMPDIR:-/tmp}/smp-unload.XXXXXX")
trap 'rm -rf "$results"' EXIT

if [[ ! -e $ko ]]; then
	tap_not_ok "module $ko built"
	tap_end
	exit 1
fi
tap_check "build nvme_tool" build_tool || { tap_end; exit 1; }
lock_dir "$ndir"

rc=0
vm_run "$results/vm.log" --cpus 4 --nvme 1 --nvme-dir "$ndir" --nvme-size 1G \
	--nvme-fresh --timeout 900 --quiet -- bash "$self" --guest "$top" || rc=$?
cp "$vmout/nvme-results" "$results/guest" 2>/dev/null
tap_import "$results/guest" "4 vCPUs"
if ((rc == 0)) && console_clean; then
	tap_ok "VM exit 0, no kernel complaint"
else
	tap_not_ok "VM exit $rc or kernel complaint (see $vmdir/console.log)"
	tail -n 30 "$vmdir/output.log" | sed 's/^/# /'
fi
tap_end
