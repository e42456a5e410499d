#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Plot kvtier-bench's latency part: the latency of a GET served from NVMe
# against fio's reads, idle and with writes running, one panel a queue
# depth, percentiles on a "nines" axis (50, 90, 99, 99.9).
#
# Usage: tools/bench-plot.sh LATENCY.csv OUT.svg
# LATENCY.csv: series,qd,percentile,us (kvtier-bench latency with
# KVTIER_BENCH_OUT set; `make bench` leaves it in build/latency.csv).
set -euo pipefail

csv=${1:?usage: bench-plot.sh LATENCY.csv OUT.svg}
svg=${2:?usage: bench-plot.sh LATENCY.csv OUT.svg}

if ! command -v gnuplot >/dev/null; then
	echo "bench-plot: gnuplot not installed (gnuplot-nox): no $svg"
	exit 0
fi
mapfile -t qds < <(awk -F, 'NR > 1 { print $2 }' "$csv" | sort -nu)
if ((${#qds[@]} == 0)); then
	echo "bench-plot: $csv holds no latencies: no $svg"
	exit 0
fi

{
	cat <<-EOG
	set terminal svg size $((420 * ${#qds[@]})),460 dynamic
	set output "$svg"
	set datafile separator ","
	set multiplot layout 1,${#qds[@]} title "GET from NVMe vs fio reads, 64 KiB blocks"
	set logscale y
	set xlabel "percentile"
	set ylabel "latency (us)"
	set xtics ("50" 0.301, "90" 1, "99" 2, "99.9" 3)
	set xrange [0:3.1]
	set key top left
	set grid
	nines(p) = -log10(1 - p / 100)
	EOG
	for qd in "${qds[@]}"; do
		cat <<-EOG
		set title "queue depth $qd"
		plot for [s in "kvtier kvtier_ring kvtier_writes fio fio_writes"] "$csv" \
			using (strcol(1) eq s && \$2 == $qd ? nines(\$3) : NaN):4 \
			with linespoints title s
		EOG
	done
	echo "unset multiplot"
} | gnuplot
echo "bench-plot: $svg"
