#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The body of `make check`, after `make deps`:
#
#  1. build kmod/ from clean with W=1 C=2 (sparse), in a copy of the tree
#     under build/check/tree; any compiler, sparse or modpost warning about
#     our sources fails;
#  2. build lib/, tools/ and selftests/kvtier/ (in place);
#  2a. accel: tools/vm/accel-test.sh, kvtier-vm's choice of accelerator
#     with a KVM made to fail on purpose (TAP lines);
#  2b. install: tools/vm/install-test.sh, make install into a DESTDIR and a
#     program built against it with pkg-config, man pages rendered, make
#     uninstall, make dkms-install in a scratch dkms tree (TAP lines);
#  3. boot the VM (2 NUMA nodes, 2 CPUs, 2 NVMe drives) and run
#     tools/vm/run-selftests.sh in it, on the module built in step 1 (or on
#     kmod/kvtier.ko when step 1 is not run);
#  4. persist: selftests/kvtier/nvme-persist.sh, which boots the VM twice on
#     one NVMe backing file (persistence across reload and reboot, and a
#     record corrupted between boots); each of its TAP lines is a case;
#  5. crash: selftests/kvtier/nvme-crash.sh, power cuts (QEMU killed) during
#     heavy demotion, three rounds (alone: `make check-crash`);
#  5b. smp: selftests/kvtier/smp-unload.sh, the stress on 4 vCPUs with the
#     NVMe tier, and rmmod under load (stress, then the fuzzer) refused,
#     then clean after SIGKILL of the load;
#     with step 3, steps 4-5b run beside it (see side_start), their output
#     shown and counted after step 3's; KVTIER_CHECK_SIDE=0 runs them after;
#  6. checkpatch.pl --strict and kernel-doc on each kernel source file;
#     tools/names.sh: no function or struct defined in two of kmod/, lib/
#     and selftests/kvtier/ (one case); tools/layers.sh: no call from a
#     layer of kmod/ to one above it (one case);
#  7. debug: the debug-kernel lane: the kernel of tools/vm/debug.config,
#     built by tools/vm/debug-kernel.sh when it is not cached (a counted
#     case), then steps kmod, vm (with a kmemleak scan after the selftests;
#     beside it, in a boot of their own, the fail-nth walk, I/O errors from
#     fail_make_request and a kmemleak scan), persist, crash and smp again
#     on that kernel (KASAN, UBSAN, lockdep, kmemleak), their
#     counts added. KVTIER_CHECK_DEBUG=0 leaves the lane out with a
#     "check: SKIP: debug-kernel lane" line, except in CI (CI=true) and
#     with KVTIER_DEBUG_REQUIRED=1, where a lane not run is a failure.
#
# Usage: check.sh [kmod] [build] [accel] [install] [vm] [persist] [crash]
#                 [smp] [style] [debug]
#        (no argument: all, in that order)
#
# Ends with exactly one line "kvtier: N passed, N failed, N skipped" and exits
# non-zero when anything failed.
#
# Environment: KDIR (kernel build tree), MAKE, KVTIER_VM_FLAGS (VM options,
# default "--numa --cpus 2 --nvme 2"), KVTIER_VM_TIMEOUT (seconds, default
# 1800), KVTIER_CHECK_LOGS (log directory, default build/check), and whatever
# tools/vm/run-selftests.sh reads (KVTIER_PARAMS, ...). The debug step:
# KVTIER_CHECK_DEBUG=0 skips the lane (a SKIP line; a failure when CI=true
# or KVTIER_DEBUG_REQUIRED=1), KVTIER_DEBUG_STEPS (default "kmod vm persist crash smp"),
# KVTIER_DEBUG_VM_TIMEOUT (default 5400), KVTIER_DEBUG_TEST_TIMEOUT
# (seconds per selftest binary, default 1200), KVTIER_DEBUG_CASE_TIMEOUT
# (the least a kselftest case gets there, whatever its TEST_F_TIMEOUT:
# KVTIER_TEST_TIMEOUT_MIN, default 120); the fuzz burst there is 40,000
# calls unless KVTIER_FUZZ_CALLS says otherwise.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"

kdir=${KDIR:-/lib/modules/$(tools/vm/kver)/build}
make=${MAKE:-make}
read -r -a vmflags <<<"${KVTIER_VM_FLAGS:---numa --cpus 2 --nvme 2}"
vm_timeout=${KVTIER_VM_TIMEOUT:-1800}
vm_base=${KVTIER_VM_DIR:-$top/build/vm}	# the side steps' VMs: $vm_base-*
faults_built=1
logs=${KVTIER_CHECK_LOGS:-$top/build/check}
rm -rf "$logs"
mkdir -p "$logs"

steps=("$@")
((${#steps[@]})) || steps=(kmod build accel install vm persist crash smp style debug)
for a in "${steps[@]}"; do
	case $a in
	kmod | build | accel | install | vm | persist | style | crash | smp | debug) ;;
	*) echo "usage: ${0##*/} [kmod] [build] [accel] [install] [vm] [persist] [style] [crash] [smp] [debug]" >&2; exit 2 ;;
	esac
done

npass=0
nfail=0
nskip=0
failures=()

# A debug kernel not cached yet builds in the background from the start
# (at nice 19: it takes the CPU time the other steps leave), and the lane
# waits for it.
debug_pid=
if [[ " ${steps[*]} " == *" debug "* && ${KVTIER_CHECK_DEBUG:-1} != 0 ]] &&
	! tools/vm/debug-kernel.sh --path >/dev/null; then
	echo "check: no cached debug kernel: building it in the background (tools/vm/debug-kernel.sh, log in ${logs#"$top"/}/debug-kernel.log)"
	tools/vm/debug-kernel.sh >"$logs/debug-kernel.dir" 2>"$logs/debug-kernel.log" &
	debug_pid=$!
fi

pass() {
	npass=$((npass + 1))
	echo "check: ok: $1"
}

fail() {
	nfail=$((nfail + 1))
	failures+=("$1")
	echo "check: FAIL: $1"
}

skip() {
	nskip=$((nskip + 1))
	echo "check: SKIP: $1"
}

section() {
	echo
	echo "==== $* ===="
}

# 1. The module, warning-free under W=1 and sparse. It is built from clean
# in a copy of the source tree (build/check/tree), so that objects built
# earlier without W=1 cannot hide warnings and the developer's own kmod/
# build is left alone; the VM then tests this very kvtier.ko.
kbuild_ok=1
tree=$logs/tree
step_kmod() {
	local re f files=()

	section "kmod: build with W=1 C=2 ($kdir)"
	mkdir -p "$tree"
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		while IFS= read -r -d '' f; do
			[[ -e $f ]] && files+=("$f")
		done < <(git ls-files -z --cached --others --exclude-standard)
		printf '%s\0' "${files[@]}" | tar --null -T - -cf - | tar -C "$tree" -xf -
	else
		tar --exclude=./build --exclude=./.git -cf - . | tar -C "$tree" -xf -
	fi
	if ! "$make" -C "$tree/kmod" KDIR="$kdir" W=1 C=2 >"$logs/kmod-build.log" 2>&1; then
		kbuild_ok=0
	fi
	sed "s|$tree/||g" "$logs/kmod-build.log"
	# Diagnostics about files under kmod/ (gcc and sparse print
	# path:line[:col]: warning|error: ...), and modpost's.
	re='(^|/)kmod/[^ :]+:[0-9]+(:[0-9]+)?: (warning|error)|^(WARNING|ERROR): modpost:'
	if ((!kbuild_ok)); then
		fail "kmod builds (W=1 C=2)"
	elif grep -qE "$re" "$logs/kmod-build.log"; then
		fail "kmod builds without warnings (W=1 C=2): $(grep -cE "$re" "$logs/kmod-build.log") found"
		grep -E "$re" "$logs/kmod-build.log" | sed "s|$tree/||g" | head -n 40
	else
		pass "kmod builds without warnings (W=1 C=2)"
	fi
	export KVTIER_KO=$tree/kmod/kvtier.ko
}

# 2. The userspace builds (-Werror), one case each.
step_build() {
	local d

	section "userspace builds"
	for d in lib tools selftests/kvtier; do
		if "$make" -C "$d" >"$logs/build-${d//\//-}.log" 2>&1; then
			pass "make -C $d"
		else
			fail "make -C $d"
			tail -n 40 "$logs/build-${d//\//-}.log"
		fi
	done
	# kmod/policy.c in userspace: OPT bounds, LRU, its lists, the online
	# policies (a second).
	if tools/policy-sim --selftest >"$logs/policy-sim.log" 2>&1; then
		pass "tools/policy-sim --selftest"
	else
		fail "tools/policy-sim --selftest"
		tail -n 40 "$logs/policy-sim.log"
	fi
	# kmod/index.c in userspace: keys found at their addresses, removals.
	if tools/index-bench --selftest >"$logs/index-bench.log" 2>&1; then
		pass "tools/index-bench --selftest"
	else
		fail "tools/index-bench --selftest"
		tail -n 40 "$logs/index-bench.log"
	fi
	# The policy lab's generated traces: format, chaining, seeds.
	if tools/trace-shapes.py --check >"$logs/trace-shapes.log" 2>&1; then
		pass "tools/trace-shapes.py --check"
	else
		fail "tools/trace-shapes.py --check"
		tail -n 40 "$logs/trace-shapes.log"
	fi
}

# vm_cut_short STATUS OUTDIR CONSOLE: one line on why a selftest run
# stopped early, for the summary (CI keeps only the end of the output): what
# kvtier-vm's status means, the binary and case under way, and the kernel's
# first complaint.
vm_cut_short() {
	local rc=$1 out=$2 console=$3 why t log c k
	case $rc in
	124) why='timed out' ;;
	125) why='the guest reported no exit status' ;;
	*) why="exit $rc" ;;
	esac
	grep -q 'Kernel panic' "$console" 2>/dev/null && why+=', kernel panic'
	if read -r t log 2>/dev/null <"$out/selftests.running"; then
		why+=" in $t"
		c=$(grep -E '^# +RUN ' "$out/selftests/${log##*/}" 2>/dev/null | tail -n 1 |
			sed -E 's/^# +RUN +//; s/ \.\.\.$//') || true
		[[ -n $c ]] && why+=" ($c)"
	elif [[ -e $out/selftests.counts ]]; then
		why+=' before the first test binary'
	else
		why+=' before the selftests started'
	fi
	# shellcheck source=SCRIPTDIR/bad-re.sh
	. "$top/tools/vm/bad-re.sh"
	k=$(kvtier_console_ours "$console" 2>/dev/null | grep -E -m1 "$kvtier_bad_re" |
		sed -E 's/^\[ *[0-9.]+\] *//' | cut -c1-160) || true
	[[ -n $k ]] && why+="; kernel: $k"
	k=$(kvtier_complaint_stack "$console" 2>/dev/null | cut -c1-600) || true
	[[ -n $k ]] && why+="; at: $k"
	echo "$why; the VM's messages are above"
}

# 3. The selftests in the VM.
#
# On the debug kernel: forget the boot's kmemleak suspects first, then the
# kmemleak scan after the selftests (kvtier.ko unloaded), see
# tools/vm/kmemleak.sh. The fault walks, fail-nth (tools/vm/fail-nth.sh)
# and the NVMe drive's I/O errors (tools/vm/fail-io.sh), run in a boot of
# their own beside it, with a kmemleak scan of their own ("faults", the
# first side step, see side_start), or, with KVTIER_CHECK_SIDE=0, in the
# same boot after the selftests.
step_vm() {
	local vmdir=$vm_base vmrc=0 p=0 f=0 s=0
	local vmout=$vmdir/out
	local counts=$vmout/selftests.counts

	section "VM: tools/vm/run-selftests.sh (${vmflags[*]})"
	if ((!kbuild_ok)); then
		fail "selftests in the VM: not run, the module did not build"
		return
	fi
	local cmd=tools/vm/run-selftests.sh
	if [[ ${KVTIER_DEBUG_LANE:-0} == 1 ]]; then
		cmd='tools/vm/kmemleak.sh clear; tools/vm/run-selftests.sh; rc=$?;'
		if ((faults_built)) && [[ " ${side[*]} " != *" faults "* ]]; then
			cmd+=" $(faults_cmd)"
		fi
		# shellcheck disable=SC2016 # $rc is the guest shell's
		cmd+=' tools/vm/kmemleak.sh check; exit $rc'
		rm -f "$vmout/kmemleak.result" "$vmout/fail-nth.tap" "$vmout/fail-io.tap"
	fi
	tools/vm/kvtier-vm "${vmflags[@]}" --timeout "$vm_timeout" -- "$cmd" || vmrc=$?
	cp "$vmdir/console.log" "$logs/vm-console.log" 2>/dev/null || true
	cp -r "$vmout/selftests" "$logs/" 2>/dev/null || true
	if [[ -s $counts ]] && read -r p f s <"$counts"; then
		npass=$((npass + p))
		nfail=$((nfail + f))
		nskip=$((nskip + s))
		if ((f)); then
			mapfile -t -O "${#failures[@]}" failures < <(sed 's/^/VM: /' \
				"$vmout/selftests.failures" 2>/dev/null)
		fi
	fi
	if [[ ${KVTIER_DEBUG_LANE:-0} == 1 ]]; then
		cp "$vmout/kmemleak.txt" "$logs/" 2>/dev/null || true
		if ((faults_built)) && [[ " ${side[*]} " != *" faults "* ]]; then
			faults_tally "$vmout"
		fi
		kmemleak_tally "$vmout" "the selftests"
	fi
	if [[ ! -e $vmout/selftests.done ]]; then
		fail "selftests in the VM run to the end (VM status $vmrc: $(vm_cut_short "$vmrc" "$vmout" "$logs/vm-console.log"))"
	elif ((vmrc && !f)); then
		# The kernel complained although every counted case passed.
		fail "VM run exits 0 (status $vmrc)"
	fi
}

# The fault walks' programs, built on the host (debug lane); 0 when built.
faults_build() {
	local t ok=0
	for t in fail-nth fail-io; do
		if ! cc -O2 -Wall -Werror -I uapi -o "$logs/$t" tools/vm/$t.c \
			>"$logs/build-$t.log" 2>&1; then
			fail "$t: tools/vm/$t.c builds"
			cat "$logs/build-$t.log"
			ok=1
		fi
	done
	return $ok
}

# The guest's command for the fault walks.
faults_cmd() {
	echo "tools/vm/fail-nth.sh $logs/fail-nth; tools/vm/fail-io.sh $logs/fail-io;"
}

# The fault walks in a boot of their own (a side step): VM in
# $KVTIER_VM_DIR-faults, output in $logs/faults.log.
faults_run() {
	local vmdir=$vm_base-faults
	rm -f "$vmdir/out/kmemleak.result" "$vmdir/out/fail-nth.tap" \
		"$vmdir/out/fail-io.tap"
	KVTIER_VM_DIR=$vmdir nice -n 10 tools/vm/kvtier-vm "${vmflags[@]}" \
		--timeout "$vm_timeout" -- "tools/vm/kmemleak.sh clear; $(faults_cmd) tools/vm/kmemleak.sh check"
}

# Count the fault walks' TAP files in VMOUT.
faults_tally() {
	local vmout=$1 t tap
	cp "$vmout"/fail-nth.* "$vmout"/fail-io.* "$logs/" 2>/dev/null || true
	for t in fail-nth fail-io; do
		tap=$vmout/$t.tap
		if [[ -s $tap ]]; then
			npass=$((npass + $(grep -c '^ok ' "$tap" || true)))
			nfail=$((nfail + $(grep -c '^not ok ' "$tap" || true)))
			mapfile -t -O "${#failures[@]}" failures < <(grep '^not ok ' "$tap")
			# Its last line says whether dmesg stayed clean.
			grep -qE '^(not )?ok .*: dmesg clean' "$tap" ||
				fail "$t: ran to the end (no dmesg line in $t.tap)"
		else
			fail "$t: no result (the VM run did not reach it)"
		fi
	done
}

# The kmemleak scan's result in VMOUT, after WHAT.
kmemleak_tally() {
	local vmout=$1 what=$2
	case $(cat "$vmout/kmemleak.result" 2>/dev/null) in
	ok\ *) pass "kmemleak: no suspected leak after $what" ;;
	skip\ *) fail "kmemleak: $(cut -d' ' -f3- "$vmout/kmemleak.result") ($what)" ;;
	not\ ok*) fail "kmemleak: $(cut -d' ' -f4- "$vmout/kmemleak.result") ($what)" ;;
	*) fail "kmemleak: no scan result after $what (the VM run did not reach it)" ;;
	esac
}

# A host-side test script that boots the VM itself and prints TAP lines.
run_tap_script() {
	local name=$1 script=$2 rc=0

	section "$name: $script"
	if ((!kbuild_ok)); then
		fail "$name: not run, the module did not build"
		return
	fi
	KVTIER_KO=${KVTIER_KO:-kmod/kvtier.ko} bash "$script" "$top" 2>&1 |
		tee "$logs/$name.log" || rc=$?
	tap_tally "$name" "$rc"
}

# Count the TAP lines of $logs/NAME.log, a script's output, which exited
# with status RC.
tap_tally() {
	local name=$1 rc=$2 log=$logs/$1.log p f

	p=$(grep -c '^ok ' "$log" || true)
	f=$(grep -c '^not ok ' "$log" || true)
	npass=$((npass + p))
	nfail=$((nfail + f))
	if ((f)); then
		mapfile -t -O "${#failures[@]}" failures < <(grep '^not ok ' "$log" |
			sed "s/^/$name: /")
	fi
	if ((rc && !f)); then
		fail "$name exits 0 (status $rc)"
	elif ((!p && !f)); then
		fail "$name ran no test"
	fi
}

# 2a. kvtier-vm's accelerator, with a KVM failing on purpose (on the host).
step_accel() {
	run_tap_script accel tools/vm/accel-test.sh
}

# 2b. make install, dkms, man pages, pkg-config (on the host).
step_install() {
	run_tap_script install tools/vm/install-test.sh
}

declare -A tap_scripts=(
	[persist]=selftests/kvtier/nvme-persist.sh
	[crash]=selftests/kvtier/nvme-crash.sh
	[smp]=selftests/kvtier/smp-unload.sh
)

step_persist() {
	run_tap_script persist "${tap_scripts[persist]}"
}

step_crash() {
	run_tap_script crash "${tap_scripts[crash]}"
}

step_smp() {
	run_tap_script smp "${tap_scripts[smp]}"
}

# The steps persist, crash and smp boot VMs of their own: they run beside
# the selftests' VM (step_vm), one after another, at nice 10 (the selftests
# mostly keep one vCPU busy; the side takes the other host CPU), in VM
# directories of their own (KVTIER_VM_DIR-side). Their output is kept and
# shown, and counted, once the selftests are done. KVTIER_CHECK_SIDE=0 runs
# them after the selftests instead.
side=()
side_pid=
side_start() {
	local a
	((kbuild_ok)) || return 0
	(
		export KVTIER_KO=${KVTIER_KO:-kmod/kvtier.ko}
		for a in "${side[@]}"; do
			t0=$SECONDS
			rc=0
			if [[ $a == faults ]]; then
				faults_run >"$logs/$a.log" 2>&1 || rc=$?
			else
				KVTIER_VM_DIR=$vm_base-side nice -n 10 \
					bash "${tap_scripts[$a]}" "$top" \
					>"$logs/$a.log" 2>&1 || rc=$?
			fi
			echo "$rc $((SECONDS - t0))" >"$logs/$a.side"
		done
	) &
	side_pid=$!
}

side_finish() {
	local a rc secs
	[[ -n $side_pid ]] || return 0
	wait "$side_pid" || true
	for a in "${side[@]}"; do
		section "$a: ${tap_scripts[$a]:-fail-nth and fail-io} (beside the selftests' VM)"
		if [[ ! -s $logs/$a.side ]]; then
			fail "$a: ran to the end beside the selftests' VM"
			continue
		fi
		read -r rc secs <"$logs/$a.side"
		cat "$logs/$a.log"
		times+=("$a ${secs}s")
		if [[ $a != faults ]]; then
			tap_tally "$a" "$rc"
			continue
		fi
		local fout=$vm_base-faults/out
		cp "$fout/kmemleak.txt" "$logs/kmemleak-faults.txt" 2>/dev/null || true
		faults_tally "$fout"
		kmemleak_tally "$fout" "the fault walks"
		((rc == 0)) || fail "faults: VM run exits 0 (status $rc)"
	done
}

# 6. Kernel style: checkpatch --strict and kernel-doc, one case per file;
# tools/names.sh, one case.
step_style() {
	local cp=build/ksrc/scripts/checkpatch.pl kd=build/ksrc/scripts/kernel-doc
	local srcs f out

	section "checkpatch --strict, kernel-doc, names"
	# The module, the library and the selftests keep names of their own.
	local names="names: no function or struct defined in two of kmod/, lib/, selftests/"
	if out=$(tools/names.sh 2>&1); then
		pass "$names"
	else
		fail "$names"
		echo "$out"
	fi
	mapfile -t srcs < <(find kmod -maxdepth 1 -type f \( -name '*.c' -o -name '*.h' \) \
		! -name '*.mod.c' | sort)
	srcs+=(uapi/linux/kvtier.h)
	for f in "${srcs[@]}"; do
		if out=$("$cp" --strict --no-tree --terse --quiet --show-types -f "$f" 2>&1); then
			pass "checkpatch --strict $f"
		else
			fail "checkpatch --strict $f"
			echo "$out"
		fi
	done
	for f in "${srcs[@]}"; do
		out=$("$kd" -none "$f" 2>&1 || true)
		if [[ $f == uapi/* ]]; then
			# The uapi header is the frozen contract: its kernel-doc
			# warnings are shown, not counted.
			[[ -z $out ]] || printf 'check: note: kernel-doc %s:\n%s\n' "$f" "$out"
		elif [[ -z $out ]]; then
			pass "kernel-doc $f"
		else
			fail "kernel-doc $f"
			echo "$out"
		fi
	done
	# The layers of kmod/ (Documentation/design.rst): no call up.
	if out=$(tools/layers.sh 2>&1); then
		pass "layers kmod/"
	else
		fail "layers kmod/"
		echo "$out"
	fi
}

# 7. The debug-kernel lane: the same module and tests on the kernel of
# tools/vm/debug-kernel.sh, in a check.sh of its own (logs in
# $logs/debug/, VM state in build/vm-debug/), its counts added to these.
step_debug() {
	local dir sublog=$logs/debug.log rc=0 line p f s dsteps

	section "debug-kernel lane (tools/vm/debug.config)"
	if [[ ${KVTIER_CHECK_DEBUG:-1} == 0 ]]; then
		if [[ ${CI:-} == true || ${KVTIER_DEBUG_REQUIRED:-0} == 1 ]]; then
			fail "debug-kernel lane: not run (KVTIER_CHECK_DEBUG=0), required in CI"
		else
			skip "debug-kernel lane: not run, KVTIER_CHECK_DEBUG=0"
		fi
		return
	fi
	if [[ -n $debug_pid ]]; then
		echo "check: waiting for the debug kernel's build"
		if wait "$debug_pid" && dir=$(cat "$logs/debug-kernel.dir") &&
			[[ -n $dir ]]; then
			pass "debug kernel builds ($(cut -d, -f1 "$dir/build-time"))"
		else
			fail "debug kernel builds (tools/vm/debug-kernel.sh)"
			tail -n 40 "$logs/debug-kernel.log"
			return
		fi
	elif ! dir=$(tools/vm/debug-kernel.sh --path); then
		echo "check: no cached debug kernel: building it (tools/vm/debug-kernel.sh, log in $logs/debug-kernel.log)"
		if dir=$(tools/vm/debug-kernel.sh 2>"$logs/debug-kernel.log"); then
			pass "debug kernel builds ($(cut -d, -f1 "$dir/build-time"))"
		else
			fail "debug kernel builds (tools/vm/debug-kernel.sh)"
			tail -n 40 "$logs/debug-kernel.log"
			return
		fi
	fi
	echo "check: debug kernel $(cat "$dir/kernelrelease") from $dir"
	read -r -a dsteps <<<"${KVTIER_DEBUG_STEPS:-kmod vm persist crash smp}"
	KDIR=$dir/build KVTIER_VM_KERNEL=$dir/bzImage KVTIER_VM_MODULES=$dir/mod \
		KVTIER_VM_DIR=$top/build/vm-debug KVTIER_CHECK_LOGS=$logs/debug \
		KVTIER_DEBUG_LANE=1 KVTIER_FUZZ_CALLS=${KVTIER_FUZZ_CALLS:-40000} \
		KVTIER_VM_TIMEOUT=${KVTIER_DEBUG_VM_TIMEOUT:-5400} \
		KVTIER_TEST_TIMEOUT=${KVTIER_DEBUG_TEST_TIMEOUT:-1200} \
		KVTIER_TEST_TIMEOUT_MIN=${KVTIER_DEBUG_CASE_TIMEOUT:-120} \
		"$top/tools/vm/check.sh" "${dsteps[@]}" 2>&1 | tee "$sublog" || rc=$?
	line=$(grep -E '^kvtier: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$sublog" | tail -n 1 || true)
	if [[ -z $line ]]; then
		fail "debug-kernel lane: check.sh ran to the end (status $rc)"
		return
	fi
	read -r p f s <<<"$(echo "$line" | tr -cs '0-9' ' ')"
	npass=$((npass + p))
	nfail=$((nfail + f))
	nskip=$((nskip + s))
	mapfile -t -O "${#failures[@]}" failures < <(sed -n '/^check: failures:$/,/^check: logs in/p' "$sublog" |
		sed -n 's/^  /debug: /p')
	((!rc || f)) || fail "debug-kernel lane exits 0 (status $rc)"
}

# Each step's wall time, for the summary: where a CI run's time goes.
times=()
if [[ " ${steps[*]} " == *" vm "* && ${KVTIER_CHECK_SIDE:-1} != 0 ]]; then
	[[ ${KVTIER_DEBUG_LANE:-0} != 1 ]] || side+=(faults)
	for a in persist crash smp; do
		[[ " ${steps[*]} " != *" $a "* ]] || side+=("$a")
	done
fi
for a in "${steps[@]}"; do
	[[ " ${side[*]} " != *" $a "* ]] || continue
	t0=$SECONDS
	if [[ $a == vm && ${KVTIER_DEBUG_LANE:-0} == 1 ]] && ! faults_build; then
		# The walks cannot run: counted failed by faults_build.
		faults_built=0
		mapfile -t side < <(printf '%s\n' "${side[@]}" | grep -vx faults || true)
	fi
	[[ $a != vm ]] || side_start
	"step_$a"
	times+=("$a $((SECONDS - t0))s")
	[[ $a != vm ]] || side_finish
done

# The failed selftests' own lines (TH_LOG, assertions), last before the
# summary: CI keeps only the end of the output.
failed_case_lines() {
	local log n=0
	for log in "$logs"/selftests/*.log "$logs"/debug/selftests/*.log; do
		if [[ ! -f $log ]] || ! grep -qE '^ *not ok ' "$log"; then
			continue
		fi
		((n++ < 3)) || break
		echo "check: ${log#"$logs"/}: the failed cases' last lines:"
		grep -E '^ *# [A-Za-z0-9_]+\.c:[0-9]+:|^ *not ok ' "$log" | tail -n 25
		watch_report "$log"
	done
}

# A case that ran out of time: its watcher's line (kst_watch() in
# kvtier_test.h), the states of its tasks, and the innermost frames of
# their stacks, counted.
watch_report() {
	awk '/ s of its [0-9]+ s gone; the longest/ { on = 1 }
	     on && /Test terminated by timeout/ { on = 0 }
	     on { print }' "$1" >"$logs/.watch" || return 0
	if [[ -s $logs/.watch ]]; then
		grep -E ' s gone; the longest' "$logs/.watch" | tail -n 3
		grep -oE 'state [A-Z]' "$logs/.watch" | sort | uniq -c |
			tr -s ' \n' ' '
		echo
		awk '/\/stack:$/ { n = 0; s = ""; next }
		     /^\[<0>\]/ && n < 3 { sub(/^\[<0>\] /, ""); sub(/\+.*/, "");
					  s = s (n++ ? " < " : "") $0
					  if (n == 3) print s; next }
		     n && n < 3 { print s; n = 3 }
		     END { if (n && n < 3) print s }' "$logs/.watch" |
			sort | uniq -c | sort -rn | head -n 12
	fi
	rm -f "$logs/.watch"
}

section "summary"
if ((${#failures[@]})); then
	failed_case_lines
	echo "check: failures:"
	printf '  %s\n' "${failures[@]}"
fi
echo "check: time: ${times[*]} (total $SECONDS s)"
echo "check: logs in ${logs#"$top"/}/ (the VM console: ${logs#"$top"/}/vm-console.log)"
echo "kvtier: $npass passed, $nfail failed, $nskip skipped"
((nfail == 0))
