#!/usr/bin/env bash
# The stream at a fixed rate with two replicas (issue 24).
#
#   scripts/bench_stream.sh [--docs] [rate] [duration] [runs]
#       defaults: 250000 60s 2
#
# Builds dpsurv and runs `dpsurv loadtest --rate RATE --duration DURATION
# --replicas 2 --json` RUNS times, one after the other: the embedded
# broker, two in-process `dpsurv run` replicas in one consumer group, a
# producer at the fixed rate and a consumer of the sanitized topic (the
# latency of a record is its message's production to the sanitized
# message's arrival; docs/operations.md). The machine's 1-minute load
# average (/proc/loadavg) is read before and after every run. Prints each
# run's JSON summary line and then the Markdown table of
# docs/performance.md ("The stream at 250,000 records/s with two
# replicas"); with --docs it also writes that table into
# docs/performance.md between the lines <!-- bench_stream:begin --> and
# <!-- bench_stream:end -->. Takes RUNS x DURATION plus a few seconds each.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench_common.sh
bench_docs_flag "${1:-}"
shift "$docs"
rate=${1:-250000}
duration=${2:-60s}
runs=${3:-2}
bench_begin "$rate $duration $runs"
go build -o "$tmp/dpsurv" ./cmd/dpsurv
start=$(date -u +%Y-%m-%dT%H:%M:%SZ)

# num KEY FILE: the first number after "KEY": in the JSON summary
num() { grep -o "\"$1\":[-0-9.eE+]*" "$2" | head -1 | cut -d: -f2; }
rows=()
for ((r = 1; r <= runs; r++)); do
	l0=$(load)
	if ! "$tmp/dpsurv" loadtest --rate "$rate" --duration "$duration" --replicas 2 --json >"$tmp/run.json" 2>"$tmp/run.err"; then
		cat "$tmp/run.err" >&2
		echo "bench_stream: run $r failed" >&2
		exit 1
	fi
	l1=$(load)
	head -c 600 "$tmp/run.json"
	echo " …"
	f=$tmp/run.json
	rows+=("$(printf '| %d | %s | %.0f | %.0f | %.0f | %.1f ms | %.1f ms | **%.1f ms** | %.0f ms |' "$r" \
		"$(load_range "$l0" "$l1")" \
		"$(num duration_s "$f")" "$(num throughput_records_per_s "$f")" "$(num lost_records "$f")" \
		"$(num p50_ms "$f")" "$(num p95_ms "$f")" "$(num p99_ms "$f")" "$(num max_ms "$f")")")
done
end=$(date -u +%Y-%m-%dT%H:%M:%SZ)

{
	echo "**$rate records/s, two replicas**, $start–$end, commit $commit, $(nproc) processors, \`GOMAXPROCS\` ${GOMAXPROCS:-$(nproc)} (\`scripts/bench_stream.sh $cmdline\`):"
	echo
	echo "| run | load average (1 min) before / after | seconds | records/s sustained | lost | p50 | p95 | p99 (target ≤ 100 ms) | max |"
	echo "|---|---|---|---|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
} >"$tmp/table"
echo
cat "$tmp/table"

if ((docs)); then
	docs_table bench_stream "$tmp/table"
fi
