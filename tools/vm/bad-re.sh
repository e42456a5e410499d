# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Kernel log lines that fail a test run, one definition for every script
# that reads a VM's console or dmesg (kvtier-vm, run-selftests.sh,
# fail-nth.sh, fail-io.sh, selftests/kvtier/nvme-lib.sh); source it. A
# clean boot of Debian's kernel or of the debug kernel prints none of them:
# oopses, BUG and WARNING reports, lockdep ("INFO: possible circular
# locking"), hung tasks and RCU stalls ("INFO: task ... blocked", "INFO:
# rcu ... detected stall"), lockups, KASAN and UBSAN reports, any stack
# dump, slab caches destroyed with objects left, and the module's own
# "leak" message at unload.
# shellcheck disable=SC2034 # used by the scripts that source this file
kvtier_bad_re='Oops|BUG:|WARNING:|INFO: |circular locking|Objects remaining|kvtier:.*leak|general protection|Kernel panic|KASAN|UBSAN|soft lockup|hard LOCKUP|detected stall|Call Trace:'

# kvtier_console_ours CONSOLE: the part of a VM's console log that our code
# can have caused: from "Run /init as init process" on (the whole log when
# the kernel never got there). The kernel's own boot before it runs nothing
# of ours; kvtier-vm shows a complaint there as a note. (Seen once: a KASAN
# report from an interrupt taken during identify_cpu, 7 ms into a boot of
# the debug kernel under TCG.)
kvtier_console_ours() {
	if grep -q 'Run /init as init process' "$1"; then
		sed -n '/Run \/init as init process/,$p' "$1"
	else
		cat "$1"
	fi
}
