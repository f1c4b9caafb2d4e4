#!/usr/bin/env bash
# Private fits beside their non-private twins, at 1 M records (issue 24).
#
#   scripts/bench_private.sh [--docs] [benchtime]
#       default benchtime: 3x
#
# Runs the paired benchmarks BenchmarkKMPrivateVsExact1M (dpfit/km),
# BenchmarkWeibullPrivateVsExact1M (dpfit/weibull) and
# BenchmarkDiscretePrivateVsExact1M (regression) one package after the
# other. Each runs the private fit and its non-private twin in turn in every
# iteration on the same data (internal/benchtest.PairedRatio), so the ratio
# private / non-private comes from one run. The machine's 1-minute load
# average (/proc/loadavg) is read before and after each benchmark. Prints
# the raw benchmark lines and then the Markdown table of docs/performance.md
# ("Private fits beside their non-private twins"); with --docs it also
# writes that table into docs/performance.md between the lines
# <!-- bench_private:begin --> and <!-- bench_private:end -->.
# Takes about a minute on a quiet 2-core machine, several under load.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench_common.sh
bench_docs_flag "${1:-}"
shift "$docs"
benchtime=${1:-3x}
bench_begin "$benchtime"
start=$(date -u +%Y-%m-%dT%H:%M:%SZ)

rows=()
for spec in "dpfit/km KMPrivateVsExact1M|KM by cohort, pointwise intervals, bands, calibrated log-rank" \
	"dpfit/weibull WeibullPrivateVsExact1M|Weibull with its noise-aware shape and scale intervals" \
	"regression DiscretePrivateVsExact1M|discrete-time regression (newton) with its limits, z and p"; do
	pkgbench=${spec%%|*}
	label=${spec#*|}
	pkg=${pkgbench%% *}
	bench=${pkgbench#* }
	l0=$(load)
	go test -run XXX -bench "^Benchmark${bench}\$" -benchtime "$benchtime" "./$pkg/" >"$tmp/out" 2>&1 || {
		cat "$tmp/out" >&2
		echo "bench_private: $pkg $bench failed" >&2
		exit 1
	}
	l1=$(load)
	line=$(grep -E "^Benchmark${bench}(-[0-9]+)?[[:space:]]" "$tmp/out" || true)
	if [[ -z $line ]]; then
		cat "$tmp/out" >&2
		echo "bench_private: no result line for $bench" >&2
		exit 1
	fi
	echo "$line"
	# metric: the value before a unit name on the benchmark's line
	metric() { awk -v u="$1" '{for (i = 2; i < NF; i++) if ($(i+1) == u) print $i}' <<<"$line"; }
	row=$(printf '| %s | %.0f ms / %.0f ms | %.0f ms / %.0f ms | **%.1f× / %.1f×** | %s |' "$label" \
		"$(metric exact-ms/op)" "$(metric exact-cpu-ms/op)" "$(metric private-ms/op)" "$(metric private-cpu-ms/op)" \
		"$(metric private/exact)" "$(metric private/exact-cpu)" \
		"$(load_range "$l0" "$l1")")
	rows+=("$row")
done
end=$(date -u +%Y-%m-%dT%H:%M:%SZ)

{
	echo "**1,000,000 records**, $start–$end, commit $commit, $(nproc) processors, \`-benchtime $benchtime\` (\`scripts/bench_private.sh $cmdline\`):"
	echo
	echo "| fit | non-private: wall / CPU per fit | private: wall / CPU per fit | private ÷ non-private, wall / CPU (target ≤ 3) | load average (1 min) before / after |"
	echo "|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
} >"$tmp/table"
echo
cat "$tmp/table"

if ((docs)); then
	docs_table bench_private "$tmp/table"
fi
