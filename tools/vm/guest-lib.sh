# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Helpers for the scripts that run inside the kvtier VM; source it.

# shellcheck source=SCRIPTDIR/bad-re.sh
. "$(dirname "${BASH_SOURCE[0]}")/bad-re.sh"

# kvtier_deps KO: modprobe the modules KO depends on (insmod does not).
kvtier_deps() {
	local deps
	mapfile -t deps < <(modinfo -F depends "$1" | tr ',' '\n' | sed '/^$/d')
	((${#deps[@]} == 0)) || modprobe -a "${deps[@]}"
}

# kvtier_load KO [PARAM=VALUE...]: load KO with its dependencies.
kvtier_load() {
	kvtier_deps "$1" && insmod "$@"
}

# fault_script_end NAME WHAT LOG BIN STATUS MARK: the end both fault
# scripts (fail-nth.sh, fail-io.sh) share: BIN's TAP plan in LOG, rmmod
# kvtier, and dmesg since the line MARK free of kernel complaints
# ($kvtier_bad_re). Reports through the caller's say().
fault_script_end() {
	local name=$1 what=$2 log=$3 bin=$4 brc=$5 mark=$6 re=$kvtier_bad_re err

	grep -qE '^1\.\.[0-9]+$' "$log" ||
		say "not ok - $name: $bin ran to its end (no TAP plan, exit $brc)"
	if err=$(rmmod kvtier 2>&1); then
		say "ok - $name: rmmod kvtier after the $what"
	else
		say "not ok - $name: rmmod kvtier after the $what: $err"
	fi
	if dmesg | sed -n "/$mark/,\$p" | grep -qE "$re"; then
		say "not ok - $name: dmesg clean during the $what"
		dmesg | sed -n "/$mark/,\$p" | grep -E -m1 -A30 "$re"
	else
		say "ok - $name: dmesg clean during the $what"
	fi
}
