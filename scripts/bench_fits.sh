#!/usr/bin/env bash
# Fits on a file, dpsurv against R (survival + data.table::fread), process
# to process, paired and interleaved (the order alternates every round).
#
#   scripts/bench_fits.sh [rows] [rounds] [jobs]     # defaults: 1000000 3 "km cox weibull discrete"
#
# Needs R with survival and data.table (Debian: r-base-core r-cran-survival
# r-cran-data.table). Builds dpsurv, generates the file with
# `dpsurv gen --covariates 3` in a temporary directory and measures every
# run with /usr/bin/time -v: wall seconds, CPU seconds (user + system) and
# maximum resident set size. Prints one line per run, then the medians and
# the ratios R / dpsurv. Job km-base is the KM job with R's read.csv; a job
# name ending in -dpsurv (discrete-dpsurv) runs dpsurv only (R's glm on the
# person-period rows of 10 M records needs tens of GB).
# Slow: about 10 minutes for 1,000,000 rows and 3 rounds on 2 cores, about
# 30 for 10,000,000.
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-1000000}
rounds=${2:-3}
jobs=${3:-km cox weibull discrete}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/dpsurv" ./cmd/dpsurv
"$tmp/dpsurv" gen --n "$rows" --covariates 3 --seed 1 --output "$tmp/gen.csv" 2>/dev/null
echo "# $(date -u +%FT%TZ) rows=$rows bytes=$(stat -c %s "$tmp/gen.csv") nproc=$(nproc) load=$(cut -d' ' -f1-3 /proc/loadavg)"

dpsurv_cmd() {
	local f="$tmp/gen.csv"
	case $1 in
	km | km-base) echo "$tmp/dpsurv fit km --input $f --cohorts A,B,C --epsilon inf" ;;
	cox) echo "$tmp/dpsurv fit cox --input $f --cohorts A,B,C --covariates age,female,bmi --epsilon inf" ;;
	weibull) echo "$tmp/dpsurv fit weibull --input $f --cohorts A,B,C --epsilon inf" ;;
	discrete) echo "$tmp/dpsurv fit discrete --input $f --cohorts A,B,C --covariates age,female,bmi --epsilon inf --intervals 20 --time-max 3650 --centre 60,0.5,28 --scale 40,1,20" ;;
	esac
}
r_cmd() {
	case $1 in
	km-base) echo "Rscript scripts/bench_fits.R km $tmp/gen.csv base" ;;
	*) echo "Rscript scripts/bench_fits.R $1 $tmp/gen.csv" ;;
	esac
}
# measure TOOL JOB CMD...: prints "tool job wall cpu rss_mib"
measure() {
	local tool=$1 job=$2
	shift 2
	/usr/bin/time -v -o "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err" || {
		echo "$tool $job failed:" >&2
		cat "$tmp/err" >&2
		return 1
	}
	awk -v tool="$tool" -v job="$job" '
		/Elapsed \(wall clock\)/ { n = split($NF, a, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + a[i] }
		/User time/ { u = $NF } /System time/ { s = $NF }
		/Maximum resident set size/ { m = $NF / 1024 }
		END { printf "%s %s %.2f %.2f %.0f\n", tool, job, w, u + s, m }' "$tmp/time"
}
: >"$tmp/runs"
for r in $(seq "$rounds"); do
	for job in $jobs; do
		if [[ $job == *-dpsurv ]]; then
			measure dpsurv "${job%-dpsurv}" $(dpsurv_cmd "${job%-dpsurv}") | tee -a "$tmp/runs"
			continue
		fi
		if ((r % 2)); then
			measure dpsurv "$job" $(dpsurv_cmd "$job") | tee -a "$tmp/runs"
			measure R "$job" $(r_cmd "$job") | tee -a "$tmp/runs"
		else
			measure R "$job" $(r_cmd "$job") | tee -a "$tmp/runs"
			measure dpsurv "$job" $(dpsurv_cmd "$job") | tee -a "$tmp/runs"
		fi
	done
done
echo "# medians over $rounds rounds: job, dpsurv wall s / cpu s / MiB, R wall s / cpu s / MiB, ratio R/dpsurv wall, cpu"
Rscript -e '
x <- read.table(commandArgs(TRUE)[1], col.names = c("tool", "job", "wall", "cpu", "rss"))
for (j in unique(x$job)) {
  m <- function(t, v) { y <- x[x$tool == t & x$job == j, v]; if (length(y)) median(y) else NA }
  cat(sprintf("%-8s dpsurv %6.2f %6.2f %6.0f   R %7.2f %7.2f %6.0f   ratio %5.1f %5.1f\n", j,
    m("dpsurv", "wall"), m("dpsurv", "cpu"), m("dpsurv", "rss"), m("R", "wall"), m("R", "cpu"), m("R", "rss"),
    m("R", "wall") / m("dpsurv", "wall"), m("R", "cpu") / m("dpsurv", "cpu")))
}' "$tmp/runs"
