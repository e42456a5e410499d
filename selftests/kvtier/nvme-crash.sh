#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kvtier NVMe tier: power cut during heavy demotion.
#
# Usage: nvme-crash.sh [REPO_ROOT]
#
# Runs on the host. Each round boots the test VM with kvtier attached to one
# emulated NVMe drive (nvme=/dev/nvme0n1 at load) and a writer (nvme_tool
# writer) that PUTs patterned 16 KiB blocks into pool crash<R>: keys 0..4095
# over and over with PUT REPLACE, pass p writing generation p, 1024 blocks in
# DRAM, so eviction demotes all the time; it SYNCs every 8 batches of 16 and
# logs to the results share what each successful SYNC covered. Before that it
# PUTs keys 4096..4111, SYNCs, DROPs them and SYNCs. 2 to 6 seconds (random)
# after its first acknowledged SYNC, QEMU is killed (SIGKILL: no unload, no
# flush by the guest). A second boot on the same backing file loads the module
# again and checks pool crash<R>: every block acknowledged by a SYNC is there,
# in the acknowledged generation or a newer one (REPLACE is not logged, see
# Documentation/nvme-format.rst), every block there has exact bytes, and the
# dropped keys are absent (check takes a key past 4095 as wrong). Even rounds'
# pools compress their NVMe copies (lz4, KVTIER_F_COMPRESS), so the cut also
# lands among compressed records. The pools of earlier rounds are checked for
# exact bytes only: the log may have wrapped over them since. Every third
# round's drive has no volatile write cache: QEMU writes it through
# (O_DSYNC) and the guest's queue says "write through", so the block layer
# drops the writer's flushes and FUA, as for a drive with power-loss
# protection. (Killing QEMU cannot empty a drive's write cache: what it
# holds is the host's page cache, which outlives QEMU. Cuts that empty one
# are replayed by nvme_faults.c: replay.every_power_cut.)
# The drive is blank for round 1 and carries the earlier rounds' pools after.
# (A power cut after every single write of a smaller workload, torn writes
# included, is replayed deterministically by nvme_faults.c:
# replay.every_power_cut.)
#
# Prints "ok N name" / "not ok N name" lines and a plan "1..N"; exits 1 if
# anything failed. Environment: KVTIER_KO, KVTIER_VM_DIR,
# KVTIER_CRASH_ROUNDS (default 3), KVTIER_NVME_CRASH_DIR (backing files,
# default build/vm/nvme-crash), KVTIER_CRASH_SEED (for $RANDOM).

set -uo pipefail

if [[ ${1:-} == --guest ]]; then
	top=$3
	# shellcheck source=nvme-lib.sh
	. "$top/selftests/kvtier/nvme-lib.sh"
	cd "$top" || exit 2
	dev=/dev/nvme0n1
	round=$4

	case $2 in
	writer)
		g_check "round $round writer: insmod nvme=$dev" g_load nvme=$dev || exit 0
		g_check "round $round writer: NVMe stat" "$tool" nstat
		# Runs until QEMU is killed; even rounds compress (lz4); every
		# third round's drive has no write cache.
		((round % 2)) || export KVTIER_TOOL_COMPRESS=lz4
		if ! ((round % 3)); then
			g_check "round $round writer: no volatile write cache" \
				bash -c "echo 'write through' >/sys/block/${dev#/dev/}/queue/write_cache"
		fi
		"$tool" writer "crash$round" "$KVTIER_VM_OUT/acked.$5.$round" 8 4096 1024
		g_not_ok "round $round writer: the writer stopped: exit $?"
		;;
	verify)
		shift 5
		g_dmesg_mark
		g_check "round $round verify: insmod nvme=$dev" g_load nvme=$dev || exit 0
		g_check "round $round verify: NVMe stat" "$tool" nstat
		# Arguments: PASS:UPTO:MAXGEN of each round's pool (PASS 0
		# asks no block to be there).
		r=1
		for acked in "$@"; do
			IFS=: read -r pass upto maxgen <<<"$acked"
			if ((pass)); then
				what="blocks acknowledged up to pass $pass key $upto there, all exact"
			else
				what="no block wrong"
			fi
			g_check "round $round verify: pool crash$r back" "$tool" exists "crash$r" &&
				g_check "round $round verify: crash$r: $what" \
					"$tool" check "crash$r" "$pass" "$upto" 4096 "$maxgen"
			r=$((r + 1))
		done
		g_check "round $round verify: rmmod" rmmod kvtier
		g_check "round $round verify: dmesg clean" g_dmesg_clean
		;;
	esac
	exit 0
fi

top=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
# shellcheck source=nvme-lib.sh
. "$top/selftests/kvtier/nvme-lib.sh"
self=$top/selftests/kvtier/nvme-crash.sh
ndir=${KVTIER_NVME_CRASH_DIR:-$top/build/vm/nvme-crash}
rounds=${KVTIER_CRASH_ROUNDS:-3}
RANDOM=${KVTIER_CRASH_SEED:-$$}
results=$(mktemp -d "${TMPDIR:-/tmp}/nvme-crash.XXXXXX")
vmpid=
trap 'rm -rf "$results"; [[ -n $vmpid ]] && kill "$vmpid" 2>/dev/null' EXIT

if [[ ! -e $ko ]]; then
	tap_not_ok "module $ko built"
	tap_end
	exit 1
fi
tap_check "build nvme_tool" build_tool || { tap_end; exit 1; }
lock_dir "$ndir"

# The QEMU process of kvtier-vm $1: its child "timeout", whose child is qemu.
qemu_pid() {
	local t
	t=$(pgrep -P "$1" -x timeout | head -n 1)
	[[ -n $t ]] && pgrep -P "$t" | head -n 1
}

acked=()
for ((round = 1; round <= rounds; round++)); do
	fresh=()
	((round == 1)) && fresh=(--nvme-fresh)
	cache=()
	((round % 3)) || cache=(--nvme-cache writethrough)
	tag=$$
	marker=$vmout/acked.$tag.$round.started

	# Boot with the writer; no --timeout kill before ours (30 min cap).
	"$vm" --nvme 1 --nvme-dir "$ndir" --nvme-size 4G "${fresh[@]}" "${cache[@]}" \
		--timeout 1800 --quiet -- \
		bash "$self" --guest writer "$top" "$round" "$tag" \
		>"$results/w$round.log" 2>&1 &
	vmpid=$!
	# Wait for the first acknowledged SYNC (the VM may first wait for the
	# runner's lock).
	started=0
	for ((i = 0; i < 36000; i++)); do
		[[ -e $marker ]] && { started=1; break; }
		kill -0 "$vmpid" 2>/dev/null || break
		sleep 0.1
	done
	if ((!started)); then
		wait "$vmpid"
		vmpid=
		cp "$vmout/nvme-results" "$results/w$round" 2>/dev/null
		tap_import "$results/w$round" "round $round"
		tap_not_ok "round $round: the writer started"
		tail -n 30 "$results/w$round.log" | sed 's/^/# /'
		break
	fi
	delay=$((2 + RANDOM % 5))
	sleep "$delay"
	q=$(qemu_pid "$vmpid")
	if [[ -z $q ]]; then
		tap_not_ok "round $round: found QEMU to kill"
		wait "$vmpid"
		vmpid=
		break
	fi
	kill -KILL "$q"
	wait "$vmpid"
	vmpid=
	cp "$vmout/nvme-results" "$results/w$round" 2>/dev/null
	tap_import "$results/w$round" "round $round"
	read -r pass upto < <(tail -n 1 "$vmout/acked.$tag.$round" 2>/dev/null)
	pass=${pass:-0} upto=${upto:-0}
	# Earlier rounds' pools: exact bytes only; this round's: its last ack.
	# The writer got at most one pass further than its last ack.
	for ((j = 0; j < ${#acked[@]}; j++)); do
		acked[j]=0:0:${acked[j]##*:}
	done
	acked+=("$pass:$upto:$((pass + 1))")
	echo "# round $round: QEMU killed ${delay}s after the first SYNC; $(wc -l <"$vmout/acked.$tag.$round" 2>/dev/null || echo 0) SYNCs acknowledged, the last in pass $pass at key $upto"
	if ((pass > 0)); then
		tap_ok "round $round: SYNCs acknowledged before the power cut"
	else
		tap_not_ok "round $round: SYNCs acknowledged before the power cut"
	fi
	if console_clean; then
		tap_ok "round $round writer: no kernel complaint before the power cut"
	else
		tap_not_ok "round $round writer: no kernel complaint before the power cut"
	fi

	rc=0
	vm_run "$results/v$round.vm" --nvme 1 --nvme-dir "$ndir" "${cache[@]}" --timeout 900 \
		--quiet -- bash "$self" --guest verify "$top" "$round" "$tag" \
		"${acked[@]}" || rc=$?
	cp "$vmout/nvme-results" "$results/v$round" 2>/dev/null
	tap_import "$results/v$round" "round $round"
	if ((rc == 0)) && console_clean; then
		tap_ok "round $round verify: VM exit 0, no kernel complaint"
	else
		tap_not_ok "round $round verify: VM exit $rc or kernel complaint"
		tail -n 30 "$vmdir/output.log" | sed 's/^/# /'
	fi
done

tap_end
