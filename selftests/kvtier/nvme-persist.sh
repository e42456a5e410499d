#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kvtier NVMe tier: pools and blocks persist across module reload and
# reboot, a synced DROP stays dropped, and a block corrupted on the device
# between boots is a miss.
#
# Usage: nvme-persist.sh [REPO_ROOT]
#
# Runs on the host; boots the test VM (tools/vm/kvtier-vm) twice on one
# emulated NVMe drive whose backing file is kept in between:
#
#  boot 1 (blank drive): insmod, attach (a blank device is formatted), three
#    pools, PUT blocks, SYNC some, DROP 100 of them and SYNC, leave others
#    dirty, the third pool's blocks each with a metadata record
#    (KVTIER_F_META); rmmod (which syncs); insmod nvme=/dev/nvme0n1: the
#    pools back by name with their configuration, every block exact (the
#    third's with its record), the dropped ones absent; rmmod.
#  host: flip one byte inside one block's data in the backing file (found
#    through the region summaries) and one in a block of the other pool.
#  boot 2 (same drive): insmod nvme=/dev/nvme0n1: the pools are back; the
#    two corrupted blocks are misses (bad_reads 1 each), the dropped blocks
#    absent, every other block exact, the records too; a pool destroyed
#    then is gone after another reload.
#
# Prints "ok N name" / "not ok N name" lines and a plan "1..N"; exits 1 if
# anything failed. Environment: KVTIER_KO (module to test, default
# kmod/kvtier.ko), KVTIER_VM_DIR, KVTIER_NVME_PERSIST_DIR (backing files,
# default build/vm/nvme-persist).

set -uo pipefail

if [[ ${1:-} == --guest ]]; then
	top=$3
	# shellcheck source=nvme-lib.sh
	. "$top/selftests/kvtier/nvme-lib.sh"
	cd "$top" || exit 2
	dev=/dev/nvme0n1
	A=nvt-persist
	B=nvt-persist2
	C=nvt-persist3

	case $2 in
	boot1)
		g_dmesg_mark
		g_check "boot 1: insmod" g_load || exit 0
		g_check "boot 1: attach a blank device (formatted)" "$tool" attach $dev
		g_check "boot 1: NVMe stat" "$tool" nstat
		g_check "boot 1: create $A (16 KiB blocks, mode 0640)" \
			"$tool" create $A 16384 1024 16 0640
		g_check "boot 1: create $B (64 KiB blocks)" "$tool" create $B 65536 64 4
		g_check "boot 1: PUT 200 blocks into $A" "$tool" put $A 0 200 1
		g_check "boot 1: SYNC $A" "$tool" sync $A
		g_check "boot 1: DROP keys 100..199 of $A" "$tool" drop $A 100 100
		g_check "boot 1: SYNC $A after the drops" "$tool" sync $A
		g_check "boot 1: PUT 20 more into $A, not synced" "$tool" put $A 200 20 1
		g_check "boot 1: PUT 40 blocks into $B, not synced" "$tool" put $B 0 40 1
		g_check "boot 1: create $C (16 KiB blocks, 8 in DRAM)" "$tool" create $C 16384 128 8
		g_check "boot 1: PUT 48 blocks with records into $C" "$tool" put-meta $C 0 48 1
		g_check "boot 1: SYNC $C" "$tool" sync $C
		g_check "boot 1: PUT 16 more with records into $C, not synced" \
			"$tool" put-meta $C 48 16 1
		g_check "boot 1: every block exact before unload" \
			bash -c "'$tool' verify $A 0 100 1 && '$tool' verify $A 200 20 1 && '$tool' verify $B 0 40 1"
		g_check "boot 1: $C: 64 blocks exact with their records before unload" \
			"$tool" verify-meta $C 0 64 1
		g_check "boot 1: $A: dropped keys absent before unload" \
			"$tool" absent $A 100 100
		g_check "boot 1: rmmod (syncs the pools)" rmmod kvtier
		g_check "boot 1: insmod nvme=$dev" g_load nvme=$dev || exit 0
		g_check "boot 1: $A back with its configuration" bash -c \
			"'$tool' stat $A | grep -q 'block_size=16384 capacity=1024 dram_blocks=16 mode=640 uid=0 gid=0'"
		g_check "boot 1: $A blocks only on NVMe after reload" bash -c \
			"'$tool' stat $A | grep -q 'resident_dram=0 resident_nvme=120 dirty=0'"
		g_check "boot 1: $A: the 100 dropped keys stay dropped after reload" \
			"$tool" absent $A 100 100
		g_check "boot 1: $A: the census lists its 120 keys after reload, on NVMe" \
			bash -c "'$tool' census $A 0 100 200 20 | grep -q ': 120 keys, 120 on NVMe'"
		g_check "boot 1: $A: 120 blocks exact after reload" \
			bash -c "'$tool' verify $A 0 100 1 && '$tool' verify $A 200 20 1"
		g_check "boot 1: $B: 40 blocks exact after reload" "$tool" verify $B 0 40 1
		g_check "boot 1: $C: 64 blocks exact with their records after reload" \
			"$tool" verify-meta $C 0 64 1
		g_check "boot 1: $A: no bad reads" \
			test "$(g_stat_field $A bad_reads)" = 0
		g_check "boot 1: rmmod" rmmod kvtier
		g_check "boot 1: dmesg clean" g_dmesg_clean
		;;
	boot2)
		g_dmesg_mark
		g_check "boot 2: insmod nvme=$dev" g_load nvme=$dev || exit 0
		g_check "boot 2: NVMe stat" "$tool" nstat
		g_check "boot 2: $A back with its configuration" bash -c \
			"'$tool' stat $A | grep -q 'block_size=16384 capacity=1024 dram_blocks=16 mode=640 uid=0 gid=0'"
		g_check "boot 2: $A: the corrupted key 7 is a miss, 119 blocks exact" \
			bash -c "'$tool' verify $A 0 100 1 7 && '$tool' verify $A 200 20 1"
		g_check "boot 2: $A: the 100 dropped keys stay dropped after reboot" \
			"$tool" absent $A 100 100
		g_check "boot 2: $A: bad_reads 1" test "$(g_stat_field $A bad_reads)" = 1
		g_check "boot 2: $B: the corrupted key 33 is a miss, 39 blocks exact" \
			"$tool" verify $B 0 40 1 33
		g_check "boot 2: $B: bad_reads 1" test "$(g_stat_field $B bad_reads)" = 1
		g_check "boot 2: $C: 64 blocks exact with their records after reboot" \
			"$tool" verify-meta $C 0 64 1
		g_check "boot 2: destroy $B" "$tool" destroy $B
		g_check "boot 2: rmmod" rmmod kvtier
		g_check "boot 2: insmod nvme=$dev again" g_load nvme=$dev || exit 0
		g_check "boot 2: destroyed $B stays gone" bash -c "! '$tool' exists $B"
		g_check "boot 2: $A still there, key 7 still a miss, drops absent" \
			bash -c "'$tool' verify $A 0 100 1 7 && '$tool' verify $A 200 20 1 && '$tool' absent $A 100 100"
		g_check "boot 2: rmmod" rmmod kvtier
		g_check "boot 2: dmesg clean" g_dmesg_clean
		;;
	esac
	exit 0
fi

top=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
# shellcheck source=nvme-lib.sh
. "$top/selftests/kvtier/nvme-lib.sh"
self=$top/selftests/kvtier/nvme-persist.sh
ndir=${KVTIER_NVME_PERSIST_DIR:-$top/build/vm/nvme-persist}
img=$ndir/kvt0.img
# 1 GiB: far more than the blocks written, so none is lost to reclaim.
vmflags=(--nvme 1 --nvme-dir "$ndir" --nvme-size 1G --timeout 600 --quiet)
results=$(mktemp -d "${TMPDIR:-/tmp}/nvme-persist.XXXXXX")
trap 'rm -rf "$results"' EXIT

if [[ ! -e $ko ]]; then
	tap_not_ok "module $ko built"
	tap_end
	exit 1
fi
tap_check "build nvme_tool" build_tool || { tap_end; exit 1; }
lock_dir "$ndir"

# boot NAME FLAGS...: one boot running the guest part NAME; results imported.
boot() {
	local name=$1 rc=0
	shift
	vm_run "$results/$name.vm" "${vmflags[@]}" "$@" -- \
		bash "$self" --guest "$name" "$top" || rc=$?
	cp "$vmout/nvme-results" "$results/$name" 2>/dev/null
	tap_import "$results/$name" "boot ${name#boot}"
	if ((rc == 0)) && console_clean; then
		tap_ok "boot ${name#boot}: VM exit 0, no kernel complaint"
	else
		tap_not_ok "boot ${name#boot}: VM exit $rc or kernel complaint (see $vmdir/console.log)"
		tail -n 30 "$vmdir/output.log" | sed 's/^/# /'
	fi
}

boot boot1 --nvme-fresh

# Between boots, on the host: corrupt one byte of a block's data.
corrupt() {
	local pool=$1 key=$2 off pages copies
	read -r off pages copies < <("$tool" find "$img" "$key" "$pool") || return 1
	echo "# $pool key $key: data at $off, $pages pages, $copies copies"
	[[ $copies == 1 ]] || return 1
	# In the middle of its second page, so not the words holding the key.
	"$tool" flip "$img" $((off + 4096 + 1000)) 0x40
}
tap_check "host: corrupt nvt-persist key 7 in the backing file" corrupt nvt-persist 7
tap_check "host: corrupt nvt-persist2 key 33 in the backing file" corrupt nvt-persist2 33

boot boot2

tap_end
