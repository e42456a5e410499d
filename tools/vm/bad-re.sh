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

# kvtier_complaint_stack CONSOLE: the first complaint's place in one line,
# for summaries that CI shows only the end of: the interrupted RIP's
# function and the task's call trace, innermost first, guessed frames
# ("? ") and interrupt stacks (the stall detector's own) left out,
# "fn < caller < ...", at most 14 frames; nothing when there is no trace.
kvtier_complaint_stack() {
	kvtier_console_ours "$1" | sed -E 's/^\[ *[0-9.]+\] *//' | awk -v re="$kvtier_bad_re" '
		!seen && $0 ~ re { seen = 1 }
		!seen { next }
		/^ *RIP: 0010:/ { if (!rip) { rip = $2; sub(/^0010:/, "", rip) } next }
		/^Call Trace:/ { trace = 1; next }
		!trace { next }
		/^ *<(IRQ|NMI|SOFTIRQ)>/ { irq = 1; next }
		/^ *<\/(IRQ|NMI|SOFTIRQ)>/ { irq = 0; next }
		/^ *<TASK>/ { next }
		/^ *<\/TASK>/ { if (n) exit; next }
		irq || /^ *\? / || /^ *(Code|[A-Z0-9]{2,3}): / { next }
		/^ *[A-Za-z_][A-Za-z0-9_.]*\+0x/ {
			f = $1; sub(/\+0x.*/, "", f)
			if (f !~ /^asm_/ && n < 14) out = out (n++ ? " < " : "") f
			next
		}
		n { exit }
		END { if (rip || n) printf "%s%s%s\n", rip ? "RIP " rip : "", rip && n ? "; " : "", out }'
}
