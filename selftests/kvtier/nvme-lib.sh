# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Shared by nvme-persist.sh and nvme-crash.sh (source it after setting $top).
#
# Host side: TAP-like result lines ("ok N name" / "not ok N name"), building
# nvme_tool, and booting the test VM (tools/vm/kvtier-vm) with the NVMe
# backing files of one script. Guest side: results appended to a file in the
# results share, which the host turns into TAP lines after the boot.

: "${top:?set top before sourcing nvme-lib.sh}"
# shellcheck source=SCRIPTDIR/../../tools/vm/bad-re.sh
. "$top/tools/vm/bad-re.sh"

# Used by the scripts that source this file.
# shellcheck disable=SC2034
vm=$top/tools/vm/kvtier-vm
vmdir=${KVTIER_VM_DIR:-$top/build/vm}
# shellcheck disable=SC2034
vmout=$vmdir/out
tool=$top/build/nvme/nvme_tool
ko=${KVTIER_KO:-$top/kmod/kvtier.ko}

# ---- host: TAP ----------------------------------------------------------

# shellcheck source=SCRIPTDIR/../../tools/vm/tap.sh
. "$top/tools/vm/tap.sh"

# tap_import FILE WHAT: the guest's "ok NAME"/"not ok NAME" lines as
# results; other lines are diagnostics ("# ..."). WHAT names the boot when
# it wrote nothing.
tap_import() {
	local l
	[[ -f $1 ]] || { tap_not_ok "$2: the guest wrote no results"; return; }
	while IFS= read -r l; do
		case $l in
		"ok "*) tap_ok "${l#ok }" ;;
		"not ok "*) tap_not_ok "${l#not ok }" ;;
		*) echo "# $l" ;;
		esac
	done <"$1"
}

# ---- host: build and boot ----------------------------------------------

# build_tool: nvme_tool into build/nvme (the selftests Makefile does not
# know it; it is not a kselftest binary).
build_tool() {
	local src=$top/selftests/kvtier
	mkdir -p "$(dirname "$tool")"
	${CC:-cc} -Wall -Wextra -Werror -O2 -g -D_GNU_SOURCE -pthread \
		-I"$top/uapi" -I"$top/build/ksrc/tools/testing/selftests" \
		-o "$tool" "$src/nvme_tool.c" -pthread
}

# vm_run LOG KVTIER-VM-ARGS...: boot; kvtier-vm's own lines go to LOG and
# are shown as TAP comments. Returns its exit status.
vm_run() {
	local log=$1 rc=0
	shift
	"$vm" "$@" >"$log" 2>&1 || rc=$?
	sed 's/^/# /' "$log"
	return "$rc"
}

# lock_dir DIR: hold DIR (the NVMe backing files of one script) for the rest
# of this run, so that two runs of a script never share a drive between
# their boots (kvtier-vm only serializes single boots).
lock_dir() {
	mkdir -p "$1"
	exec 8>"$1/.lock"
	if ! flock -n 8; then
		echo "# waiting for another run using $1"
		flock 8
	fi
}

# console_clean: no kernel complaint in the last boot's console log since
# /init started (kvtier_console_ours).
console_clean() {
	local re=$kvtier_bad_re
	if kvtier_console_ours "$vmdir/console.log" | grep -qE "$re"; then
		kvtier_console_ours "$vmdir/console.log" | grep -nE -A20 "$re" |
			head -n 60 | sed 's/^/# /'
		return 1
	fi
	return 0
}

# ---- guest --------------------------------------------------------------

g_results=${KVTIER_VM_OUT:-/tmp}/nvme-results

g_ok() { echo "ok $*" >>"$g_results"; echo "ok $*"; }
g_not_ok() { echo "not ok $*" >>"$g_results"; echo "not ok $*"; }
g_note() { echo "$*" >>"$g_results"; echo "# $*"; }

# g_check NAME COMMAND...: run it, log its output, one result.
g_check() {
	local name=$1 out rc
	shift
	out=$("$@" 2>&1)
	rc=$?
	[[ -n $out ]] && while IFS= read -r l; do g_note "  $l"; done <<<"$out"
	if ((rc == 0)); then g_ok "$name"; else g_not_ok "$name (exit $rc)"; fi
	return $rc
}

# g_load [PARAM...]: insmod kvtier.ko with its dependencies.
g_load() {
	local deps
	mapfile -t deps < <(modinfo -F depends "$ko" | tr ',' '\n' | sed '/^$/d')
	((${#deps[@]} == 0)) || modprobe -a "${deps[@]}" || return 1
	insmod "$ko" "$@"
}

g_mark=0
# g_dmesg_mark / g_dmesg_clean: no complaint in the kernel log since the mark.
g_dmesg_mark() {
	g_mark=$((g_mark + 1))
	echo "nvme-scripts: mark $g_mark" >/dev/kmsg
}

g_dmesg_clean() {
	local re=$kvtier_bad_re
	local slice
	slice=$(dmesg | awk -v m="nvme-scripts: mark $g_mark" 'on { print } index($0, m) { on = 1 }')
	if grep -qE "$re" <<<"$slice"; then
		grep -E -A20 "$re" <<<"$slice" | head -n 40 | while IFS= read -r l; do g_note "  $l"; done
		return 1
	fi
	return 0
}

# g_stat_field POOL FIELD: one field of "nvme_tool stat POOL".
g_stat_field() {
	"$tool" stat "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}
