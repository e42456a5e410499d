#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the kvtier selftests inside the test VM (tools/vm/kvtier-vm): as root,
# on a kernel where kvtier.ko may be loaded and unloaded freely.
#
#  1. insmod with bad parameters must fail with EINVAL and leave nothing
#     loaded (one case each);
#  2. insmod kmod/kvtier.ko $KVTIER_PARAMS (default dram_mb=512); the
#     other parameters must have the defaults the admin guide and the
#     modprobe.d example say;
#  3. each test binary of selftests/kvtier/TESTS (else every executable
#     there without a dot in its name), in order, then lib/tests/kvt-test
#     when built, selftests/kvtier/top.sh (kvtierctl top),
#     python/tests/test_kvtier.py (the Python binding),
#     selftests/kvtier/trace.sh (tools/trace) and
#     selftests/kvtier/flaky-replay.sh (the loaded replay on a drive behind
#     dm-flakey) and selftests/kvtier/nvme-tcp.sh (the NVMe tier over
#     NVMe/TCP on the loopback), under timeout;
#     its kselftest "# Totals:" line (else a complete TAP plan) gives the
#     case counts; then dmesg since the binary
#     started must hold no BUG/WARNING/lockdep/leak report;
#  4. rmmod kvtier must succeed, and dmesg and the taint flags stay clean.
#
# Counts go to $KVTIER_VM_OUT/selftests.counts ("PASSED FAILED SKIPPED",
# updated as the run goes, so a run cut short by a kernel panic still has
# them), the failed cases' names to selftests.failures, each binary's output
# to selftests/NAME.log, the binary under way and its log to
# selftests.running; selftests.done appears when the run completes.
# Exit status: 0 when nothing failed, else 1.
#
# Environment: KVTIER_PARAMS (module parameters), KVTIER_TEST_TIMEOUT
# (seconds per binary, default 300), KVTIER_TEST_TIMEOUT_MIN (seconds a
# kselftest case gets at least, default 90: the harness's own default of 30
# is shorter than the waits some cases make themselves, which then cannot
# report what they waited for), KVTIER_TESTS (space-separated names to
# run instead of the list), KVTIER_KO and KVTIER_TEST_DIR (another module or
# test directory, to try the runner itself), KVTIER_DEBUG_LANE=1 (the
# debug-kernel lane: top.sh and the Python tests are left to the other).
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
# shellcheck source=SCRIPTDIR/guest-lib.sh
. "$top/tools/vm/guest-lib.sh"

ko=${KVTIER_KO:-$top/kmod/kvtier.ko}
tdir=${KVTIER_TEST_DIR:-$top/selftests/kvtier}
out=${KVTIER_VM_OUT:-/tmp}
read -r -a params <<<"${KVTIER_PARAMS:-dram_mb=512}"
per_test=${KVTIER_TEST_TIMEOUT:-300}
export KVTIER_TEST_TIMEOUT_MIN=${KVTIER_TEST_TIMEOUT_MIN:-90}
logdir=$out/selftests
mkdir -p "$logdir"

npass=0
nfail=0
nskip=0
failures=()
rm -f "$out/selftests.done" "$out/selftests.running"

save_counts() {
	echo "$npass $nfail $nskip" >"$out/selftests.counts"
	if ((${#failures[@]})); then
		printf '%s\n' "${failures[@]}" >"$out/selftests.failures"
	else
		: >"$out/selftests.failures"
	fi
}

pass() {
	npass=$((npass + ${2:-1}))
	echo "kvtier-selftests: ok: $1"
}

fail() {
	nfail=$((nfail + ${2:-1}))
	failures+=("$1")
	echo "kvtier-selftests: FAIL: $1"
}

skip() {
	nskip=$((nskip + ${2:-1}))
	echo "kvtier-selftests: skip: $1"
}

loaded() {
	local m _
	while read -r m _; do
		[[ $m == kvtier ]] && return 0
	done </proc/modules
	return 1
}

# dmesg is checked in slices: each slice starts at a marker line written
# into the kernel log.
bad_re=$kvtier_bad_re
mark=0

dmesg_mark() {
	mark=$((mark + 1))
	echo "kvtier-selftests: mark $mark: $1" >/dev/kmsg
}

# dmesg_check NAME: one case, passed when the slice since the last mark is
# clean.
dmesg_check() {
	local slice hits
	slice=$(dmesg | awk -v m="kvtier-selftests: mark $mark: " 'on { print } index($0, m) { on = 1 }')
	hits=$(grep -E "$bad_re" <<<"$slice" || true)
	if [[ -z $hits ]]; then
		pass "dmesg clean: $1"
		return
	fi
	fail "dmesg clean: $1"
	echo "---- dmesg since $1 began (first 80 lines from the first hit) ----"
	grep -E -m1 -n "$bad_re" <<<"$slice" | cut -d: -f1 |
		{ read -r n; tail -n +"$((n > 5 ? n - 5 : 1))" <<<"$slice" | head -n 80; }
	echo "----"
}

unload() {
	local err
	if err=$(rmmod kvtier 2>&1); then
		pass "rmmod kvtier${1:+ $1}"
	else
		fail "rmmod kvtier${1:+ $1}: $err"
	fi
}

echo "kvtier-selftests: kernel $(uname -r), $(nproc) cpus," \
	"$(find /sys/devices/system/node -maxdepth 1 -name 'node[0-9]*' | wc -l) nodes"

# Taint bits that mean the kernel complained: B bad page (5, also KASAN),
# D died/oops (7), W warning (9), L soft lockup (14). Those set before the
# tests began are the boot's (kvtier-vm reads the console for what came
# after /init); the run is judged by the bits it adds.
taint_bad=$((1 << 5 | 1 << 7 | 1 << 9 | 1 << 14))
taint0=$(cat /proc/sys/kernel/tainted)
if ((taint0 & taint_bad)); then
	echo "kvtier-selftests: note: kernel tainted ($taint0) before the tests began; judged by the bits the run adds"
fi

if [[ ! -e $ko ]]; then
	fail "module $ko not built"
	save_counts
	exit 1
fi
if loaded; then
	echo "kvtier-selftests: kvtier already loaded; unloading it first"
	rmmod kvtier
fi
# insmod does not load the modules kvtier.ko depends on.
if ! kvtier_deps "$ko"; then
	fail "modprobe the modules kvtier.ko depends on: $(modinfo -F depends "$ko")"
fi

# 1. Parameters out of range: EINVAL, nothing loaded.
dmesg_mark "parameter checks"
for p in dram_mb=0 numa_node=99 numa_node=-2 max_pools=0 max_pools=4097 \
	 reserve_max=0 reserve_max=65537 events_ring=0 events_ring=63 \
	 events_ring=100 events_ring=2097152; do
	if err=$(insmod "$ko" "$p" 2>&1); then
		fail "insmod $p is refused (it loaded)"
		rmmod kvtier || true
	elif loaded; then
		fail "insmod $p leaves no module loaded"
		rmmod kvtier || true
	elif [[ $err != *"Invalid argument"* && $err != *"Invalid parameters"* ]]; then
		fail "insmod $p fails with EINVAL (got: $err)"
	else
		pass "insmod $p is refused with EINVAL"
	fi
done
# A valid node other than 0 loads when the VM has one.
if [[ -e /sys/devices/system/node/node1 ]]; then
	if err=$(insmod "$ko" numa_node=1 2>&1); then
		pass "insmod numa_node=1 loads"
		unload "after numa_node=1"
	else
		fail "insmod numa_node=1 loads: $err"
	fi
fi
dmesg_check "parameter checks"
save_counts

# 2. Load.
dmesg_mark "insmod"
if ! err=$(insmod "$ko" "${params[@]}" 2>&1); then
	fail "insmod kvtier.ko ${params[*]}: $err"
	dmesg | tail -n 20
	save_counts
	exit 1
fi
pass "insmod kvtier.ko ${params[*]}"
dmesg_check "insmod"

# The defaults the admin guide ("``NAME`` (TYPE, default VALUE") and the
# modprobe.d example ("# NAME (TYPE, default VALUE") document, against the
# loaded module's: each parameter sysfs shows and not given here must be
# in both, with its value ("none": an unset string, which reads "(null)").
defaults_check() {
	local doc name value have p bad=0
	local given=" ${params[*]%%=*} "
	local -A seen=()

	# shellcheck disable=SC2016 # the backquotes are reStructuredText's
	while read -r doc name value; do
		[[ -r /sys/module/kvtier/parameters/$name ]] || continue
		seen[$doc:$name]=1
		[[ $given == *" $name "* ]] && continue
		have=$(<"/sys/module/kvtier/parameters/$name")
		[[ $value == none ]] && value="(null)"
		if [[ $have != "$value" ]]; then
			echo "parameter $name: $doc says default '$value', the module has '$have'"
			bad=1
		fi
	done < <(sed -n 's/^# \([a-z_]*\) ([a-z]*, default \([^,):]*\)[,):].*/modprobe.d \1 \2/p' \
			"$top/dist/kvtier.modprobe.conf"
		 sed -n 's/^``\([a-z_]*\)`` ([a-z]*, default \(``\)\{0,1\}\([^,)`]*\).*/admin-guide \1 \3/p' \
			"$top/Documentation/admin-guide.rst")
	for p in /sys/module/kvtier/parameters/*; do
		p=${p##*/}
		for doc in modprobe.d admin-guide; do
			[[ -n ${seen[$doc:$p]:-} ]] && continue
			echo "parameter $p: no default in the $doc"
			bad=1
		done
	done
	return $bad
}
if out_defaults=$(defaults_check); then
	pass "parameters have the defaults the admin guide and modprobe.d example document"
else
	fail "parameters have the defaults the admin guide and modprobe.d example document: $out_defaults"
fi

# 3. The tests.
if [[ -n ${KVTIER_TESTS:-} ]]; then
	read -r -a tests <<<"$KVTIER_TESTS"
elif [[ -f $tdir/TESTS ]]; then
	mapfile -t tests < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$tdir/TESTS")
else
	mapfile -t tests < <(find "$tdir" -maxdepth 1 -type f -perm -u+x ! -name '*.*' \
		-printf '%f\n' | sort)
fi
# Userspace checks of the tools, after the C tests (TAP, see below):
# kvtierctl top, the Python binding's unittest, tools/trace and the loaded
# replay on a flaky drive, the NVMe tier over NVMe/TCP. KVTIER_TESTS names
# them "top", "python", "trace", "flaky" and "tcp", and libkvtier's own
# tests "lib".
declare -A user_tests=([top]=$top/selftests/kvtier/top.sh
	[python]=$top/python/tests/test_kvtier.py
	[trace]=$top/selftests/kvtier/trace.sh
	[flaky]=$top/selftests/kvtier/flaky-replay.sh
	[tcp]=$top/selftests/kvtier/nvme-tcp.sh
	[lib]=$top/lib/tests/kvt-test)
user_run=()
if [[ -n ${KVTIER_TESTS:-} ]]; then
	for i in "${!tests[@]}"; do
		if [[ -n ${user_tests[${tests[i]}]:-} ]]; then
			user_run+=("${user_tests[${tests[i]}]}")
			unset 'tests[i]'
		fi
	done
	tests=("${tests[@]}")
elif [[ ${KVTIER_DEBUG_LANE:-0} == 1 ]]; then
	# kvtierctl top's and the binding's checks test userspace: they run in
	# the other lane. tools/trace loads the prefetch engine: it runs here.
	echo "kvtier-selftests: debug lane: top.sh and the Python tests run in the other lane"
	user_run=("${user_tests[trace]}")
else
	user_run=("${user_tests[top]}" "${user_tests[python]}" "${user_tests[trace]}"
		"${user_tests[flaky]}" "${user_tests[tcp]}")
fi
((${#tests[@]} + ${#user_run[@]})) || fail "no test binaries in $tdir"
tests=("${tests[@]/#/$tdir/}")
# libkvtier's own tests run against the module too (TAP, see below).
libtest=$top/lib/tests/kvt-test
if [[ -z ${KVTIER_TESTS:-} && -x $libtest ]]; then
	tests+=("$libtest")
fi
tests+=("${user_run[@]}")

# tap_count LOG: count the top-level TAP results of LOG into tap_pass,
# tap_fail and tap_skip; false unless a plan "1..N" is there and N results.
tap_count() {
	local plan=-1 n=0 l
	tap_pass=0 tap_fail=0 tap_skip=0
	while IFS= read -r l; do
		if [[ $l =~ ^1\.\.([0-9]+) ]]; then
			plan=${BASH_REMATCH[1]}
		elif [[ $l =~ ^not\ ok\ [0-9]+ ]]; then
			n=$((n + 1)) tap_fail=$((tap_fail + 1))
		elif [[ $l =~ ^ok\ [0-9]+ ]]; then
			n=$((n + 1))
			shopt -s nocasematch
			if [[ $l == *"# SKIP"* ]]; then
				tap_skip=$((tap_skip + 1))
			else
				tap_pass=$((tap_pass + 1))
			fi
			shopt -u nocasematch
		fi
	done <"$1"
	((plan >= 0 && n == plan))
}

totals_re='^# Totals: pass:([0-9]+) fail:([0-9]+) xfail:([0-9]+) xpass:([0-9]+) skip:([0-9]+) error:([0-9]+)'

for bin in "${tests[@]}"; do
	t=${bin#"$top"/}
	t=${t#selftests/kvtier/}
	log=$logdir/${t//\//_}.log
	if [[ ! -x $bin ]]; then
		fail "$t: $bin missing or not executable"
		continue
	fi
	echo "kvtier-selftests: running $t"
	# For a run cut short (kernel panic, timeout): which binary it was in.
	echo "$t $log" >"$out/selftests.running"
	dmesg_mark "$t"
	start=$SECONDS
	set +e
	(cd /tmp && timeout -k 10 "$per_test" "$bin") 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	set -e
	secs=$((SECONDS - start))

	totals=$(grep -E "$totals_re" "$log" | tail -n 1 || true)
	if ((rc == 124 || rc == 137)); then
		fail "$t: timed out after ${per_test}s"
	elif [[ $totals =~ $totals_re ]]; then
		p=$((BASH_REMATCH[1] + BASH_REMATCH[3]))
		f=$((BASH_REMATCH[2] + BASH_REMATCH[4] + BASH_REMATCH[6]))
		s=${BASH_REMATCH[5]}
		npass=$((npass + p))
		nskip=$((nskip + s))
		if ((f)); then
			nfail=$((nfail + f))
			while IFS= read -r l; do
				failures+=("$t: ${l#not ok }")
			done < <(grep -E '^ *not ok ' "$log" | grep -v '# SKIP' || true)
		fi
		if ((rc != 0 && rc != 4 && f == 0)); then
			fail "$t: exit status $rc with no failed case"
		fi
		echo "kvtier-selftests: $t: pass $p, fail $f, skip $s (${secs}s, exit $rc)"
	elif tap_count "$log"; then
		# Plain TAP without kselftest's totals: a complete plan.
		npass=$((npass + tap_pass))
		nfail=$((nfail + tap_fail))
		nskip=$((nskip + tap_skip))
		if ((tap_fail)); then
			while IFS= read -r l; do
				failures+=("$t: ${l#not ok }")
			done < <(grep -E '^not ok ' "$log" || true)
		fi
		if ((rc != 0 && rc != 4 && tap_fail == 0)); then
			fail "$t: exit status $rc with no failed case"
		fi
		echo "kvtier-selftests: $t: pass $tap_pass, fail $tap_fail, skip $tap_skip (${secs}s, exit $rc)"
	elif ((rc == 4 || rc == 77)); then
		skip "$t: skipped (exit $rc)"
	else
		fail "$t: no '# Totals:' line nor complete TAP (exit status $rc; crashed?)"
	fi
	dmesg_check "$t"
	save_counts
	if ! loaded; then
		fail "$t: kvtier is still loaded afterwards (the test unloaded it)"
		insmod "$ko" "${params[@]}" || true
	fi
done

# 4. Unload and the final state of the kernel.
echo "rmmod -" >"$out/selftests.running"
dmesg_mark "rmmod"
unload ""
if loaded; then
	fail "kvtier unloaded"
fi
dmesg_check "rmmod and teardown"

# 5. Load/unload cycles (full runs, or KVTIER_TESTS naming "lifecycle"):
#    each loads with the parameters above, creates a pool, refuses rmmod
#    while a process holds it open, then unloads; afterwards no kvtier
#    kmem cache is left and dmesg is clean.
if [[ -z ${KVTIER_TESTS:-} || " $KVTIER_TESTS " == *" lifecycle "* ]] &&
	[[ -x $top/tools/kvtierctl ]]; then
	dmesg_mark "load/unload cycles"
	cyc_ok=0
	for i in $(seq 1 10); do
		insmod "$ko" "${params[@]}" || break
		"$top/tools/kvtierctl" create "kst.cycle.$i" --block-size 64K \
			--capacity 64 >/dev/null || break
		exec {hold}</dev/kvtier
		if rmmod kvtier 2>/dev/null; then
			exec {hold}<&-
			break
		fi
		exec {hold}<&-
		rmmod kvtier || break
		cyc_ok=$i
	done
	if ((cyc_ok == 10)); then
		pass "10 insmod/create/rmmod cycles, rmmod refused while open"
	else
		fail "insmod/create/rmmod cycles: cycle $((cyc_ok + 1)) failed"
		loaded && rmmod kvtier
	fi
	if grep -qiE '^kvt|^kvtier' /proc/slabinfo 2>/dev/null ||
		compgen -G '/sys/kernel/slab/kvt*' >/dev/null; then
		fail "kvtier kmem caches left after unload"
	else
		pass "no kvtier kmem cache after unload"
	fi
	dmesg_check "load/unload cycles"
fi
# The complaints of the run: taint bits it added (see taint0 above).
taint=$(cat /proc/sys/kernel/tainted)
if ((taint & ~taint0 & taint_bad)); then
	fail "kernel taint $taint (before the tests $taint0) gained bad page/oops/warning/soft-lockup bits"
else
	pass "kernel not tainted by oops or warning during the tests (taint $taint, before $taint0)"
fi

save_counts
touch "$out/selftests.done"
if ((${#failures[@]})); then
	echo "kvtier-selftests: failures:"
	printf '  %s\n' "${failures[@]}"
fi
echo "kvtier-selftests: in the VM: pass=$npass fail=$nfail skip=$nskip"
((nfail == 0))
