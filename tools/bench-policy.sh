#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The body of `make bench-policy`: replay each trace through
# tools/policy-sim (lru, opt, and the module's policy code in its
# DRAM + NVMe hierarchy), write build/policy/NAME.csv, print the tables,
# plot usable hit ratio vs capacity to build/policy/NAME.svg (gnuplot),
# and end with "policy_vs_opt_min: X", the smallest kvtier/opt ratio over
# all traces and capacities.
#
# Environment: KVTIER_TRACES (a directory of Mooncake-format *.jsonl,
# default ../shared/traces; skipped with a message when missing),
# POLICY_CAPS (total capacities in blocks), POLICY_ARGS (more policy-sim
# options, e.g. "--dram-share 0.5 --window 0").
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
traces=${KVTIER_TRACES:-../shared/traces}
caps=${POLICY_CAPS:-1000,2000,5859,8000,12000,16000,24000,32000}
read -r -a args <<<"${POLICY_ARGS:-}"
out=build/policy
mkdir -p "$out"
rm -f "$out"/*.csv "$out"/*.svg

files=()
if compgen -G "$traces/*.jsonl" >/dev/null; then
	files+=("$traces"/*.jsonl)
else
	echo "bench-policy: no traces in $traces (KVTIER_TRACES=DIR): skipped"
fi
tools/kvtier-demo gen >"$out/generated.jsonl"
files+=("$out/generated.jsonl")

plot() {
	local csv=$1 svg=$2 name=$3

	if ! command -v gnuplot >/dev/null; then
		echo "bench-policy: gnuplot not installed (gnuplot-nox): no $svg"
		return
	fi
	gnuplot <<-EOG
	set terminal svg size 800,500 dynamic
	set output "$svg"
	set datafile separator ","
	set title "$name: usable prefix hit ratio"
	set xlabel "capacity (blocks, all tiers)"
	set ylabel "usable hit ratio"
	set key bottom right
	set grid
	plot for [p in "opt lru kvtier kvtier-seg"] "$csv" using 1:(strcol(2) eq p ? \$3 : NaN) with linespoints title p
	EOG
}

for f in "${files[@]}"; do
	name=$(basename "$f" .jsonl)
	tools/policy-sim --trace "$f" --capacities "$caps" "${args[@]}"
	tools/policy-sim --trace "$f" --capacities "$caps" "${args[@]}" --csv \
		>"$out/$name.csv"
	plot "$out/$name.csv" "$out/$name.svg" "$name"
	echo
done

# kvtier / opt at each trace and capacity; the smallest.
awk -F, '
	FNR == 1 { next }
	$2 == "opt" { opt[FILENAME, $1] = $3 }
	$2 == "kvtier" { kv[FILENAME, $1] = $3 }
	END {
		min = -1
		for (k in kv)
			if (opt[k] > 0 && (min < 0 || kv[k] / opt[k] < min))
				min = kv[k] / opt[k]
		printf "policy_vs_opt_min: %.3f\n", min
	}' "$out"/*.csv
echo "bench-policy: CSV and plots in $out/"
