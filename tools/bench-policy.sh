#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The body of `make bench-policy`: replay each trace through
# tools/policy-sim at each capacity, every policy side by side (lru, opt,
# the module's hierarchy as kvtier (the defaults: policy=seg,
# policy_clean_first=Y), kvtier-lru (policy=lru), kvtier-seg
# (policy_clean_first=N), the kvtier-clean what-if (the clean list without
# relocation), the online slru, 2q, arc, s3fifo and lfu, and sched, which
# knows the runtime's queue), write build/policy/NAME.csv, print one table
# per trace, plot usable hit ratio vs capacity to build/policy/NAME.svg
# (gnuplot), and end with the minimum ratios over all traces and
# capacities, as "name: value":
#
#   policy_vs_lru_min		kvtier / lru of the same total capacity
#   policy_vs_best_online_min	kvtier / the best of lru, slru, 2q, arc,
#				s3fifo and lfu at that trace and capacity
#   policy_vs_opt_min		kvtier / opt
#   seg_vs_*_min		the same for kvtier-seg
#   clean_vs_*_min		the same for kvtier-clean
#
# then tools/policy-sim --experts (MoE expert prefetch policies, default
# workload) with its expert_prob_* ratios.
#
# Traces: each Mooncake-format *.jsonl in KVTIER_TRACES (default
# ../shared/traces; none is fine), the built-in generator's, and every
# shape of tools/trace-shapes.py. POLICY_CAPS (total capacities in
# blocks), POLICY_ARGS (more policy-sim options, e.g. "--window 0").
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
traces=${KVTIER_TRACES:-../shared/traces}
caps=${POLICY_CAPS:-1000,2000,5859,8000,12000,16000,24000,32000}
read -r -a args <<<"${POLICY_ARGS:-}"
out=build/policy
mkdir -p "$out"
rm -f "$out"/*.csv "$out"/*.svg "$out"/*.jsonl

files=()
if compgen -G "$traces/*.jsonl" >/dev/null; then
	files+=("$traces"/*.jsonl)
else
	echo "bench-policy: no traces in $traces (KVTIER_TRACES=DIR)"
fi
tools/kvtier-demo gen >"$out/generated.jsonl"
files+=("$out/generated.jsonl")
for s in $(tools/trace-shapes.py --list); do
	tools/trace-shapes.py "$s" >"$out/$s.jsonl"
	files+=("$out/$s.jsonl")
done

plot() {
	local csv=$1 svg=$2 name=$3

	if ! command -v gnuplot >/dev/null; then
		echo "bench-policy: gnuplot not installed (gnuplot-nox): no $svg"
		return
	fi
	gnuplot <<-EOG
	set terminal svg size 900,540 dynamic
	set output "$svg"
	set datafile separator ","
	set title "$name: usable prefix hit ratio"
	set xlabel "capacity (blocks, all tiers)"
	set ylabel "usable hit ratio"
	set key bottom right
	set grid
	plot for [p in "opt lru kvtier kvtier-lru kvtier-seg arc s3fifo sched"] "$csv" using 1:(strcol(2) eq p ? \$3 : NaN) with linespoints title p
	EOG
}

# One line a capacity, one column a policy, from policy-sim's CSV.
table() {
	awk -F, '
		FNR == 1 { next }
		{
			if (!($1 in seen)) { seen[$1] = 1; caps[nc++] = $1 }
			if (!($2 in pseen)) { pseen[$2] = 1; pols[np++] = $2 }
			u[$1, $2] = $3
		}
		END {
			printf "%9s", "capacity"
			for (j = 0; j < np; j++)
				printf " %12s", pols[j]
			printf "\n"
			for (i = 0; i < nc; i++) {
				printf "%9s", caps[i]
				for (j = 0; j < np; j++)
					printf " %12s", u[caps[i], pols[j]]
				printf "\n"
			}
		}' "$1"
}

for f in "${files[@]}"; do
	name=$(basename "$f" .jsonl)
	tools/policy-sim --trace "$f" --capacities "$caps" "${args[@]}" --csv \
		>"$out/$name.csv"
	echo "$name: usable prefix hit ratio (tools/policy-sim, DRAM share 0.25, window 8)"
	table "$out/$name.csv"
	plot "$out/$name.csv" "$out/$name.svg" "$name"
	echo
done

# The ratios at each trace and capacity; the smallest, and where.
awk -F, '
	function lowest(name, p, v, k) {
		if (!(name in min) || v < min[name]) {
			min[name] = v
			at[name] = k
		}
	}
	FNR == 1 { next }
	{
		k = FILENAME "," $1
		u[k, $2] = $3
		keys[k] = 1
	}
	END {
		n = split("lru slru 2q arc s3fifo lfu", online, " ")
		for (k in keys) {
			best = 0
			for (i = 1; i <= n; i++)
				if (u[k, online[i]] > best)
					best = u[k, online[i]]
			split("kvtier:policy kvtier-seg:seg kvtier-clean:clean", pp, " ")
			for (j in pp) {
				split(pp[j], q, ":")
				v = u[k, q[1]]
				if (u[k, "lru"] > 0)
					lowest(q[2] "_vs_lru_min", q[1], v / u[k, "lru"], k)
				if (best > 0)
					lowest(q[2] "_vs_best_online_min", q[1], v / best, k)
				if (u[k, "opt"] > 0)
					lowest(q[2] "_vs_opt_min", q[1], v / u[k, "opt"], k)
			}
		}
		n = split("policy_vs_lru_min policy_vs_best_online_min policy_vs_opt_min seg_vs_lru_min seg_vs_best_online_min seg_vs_opt_min clean_vs_lru_min clean_vs_best_online_min clean_vs_opt_min", names, " ")
		for (i = 1; i <= n; i++) {
			w = at[names[i]]
			sub(/.*\//, "", w)
			sub(/\.csv,/, " at ", w)
			printf "%s: %.3f (%s blocks)\n", names[i], min[names[i]], w
		}
	}' "$out"/*.csv

# MoE experts streamed through kmod/policy.c's kvt_policy_hint().
echo
tools/policy-sim --experts | tee "$out/experts.txt"
echo "bench-policy: CSV and plots in $out/"
