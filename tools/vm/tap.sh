# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# TAP results for the host-side test scripts (tools/vm/accel-test.sh,
# selftests/kvtier/nvme-lib.sh's users); source it. Results are numbered as
# they come, and tap_end prints the plan last.

tap_n=0
tap_failed=0

tap_ok() {
	tap_n=$((tap_n + 1))
	echo "ok $tap_n $*"
}

tap_not_ok() {
	tap_n=$((tap_n + 1))
	tap_failed=$((tap_failed + 1))
	echo "not ok $tap_n $*"
}

# tap_check NAME COMMAND...: one result from a command's status.
tap_check() {
	local name=$1
	shift
	if "$@"; then tap_ok "$name"; else tap_not_ok "$name"; fi
}

# tap_end: the plan and a summary; false when a result was "not ok".
tap_end() {
	echo "1..$tap_n"
	echo "# $((tap_n - tap_failed)) passed, $tap_failed failed"
	((tap_failed == 0))
}
