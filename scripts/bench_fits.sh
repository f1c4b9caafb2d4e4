#!/usr/bin/env bash
# Fits on a file, dpsurv against R (survival + data.table::fread), process
# to process, paired and interleaved (the order alternates every round).
#
#   scripts/bench_fits.sh [--docs] [rows] [rounds] [jobs]
#       defaults: 1000000 3 "km cox weibull discrete"
#
# Needs R with survival and data.table (Debian: r-base-core r-cran-survival
# r-cran-data.table). Builds dpsurv, generates the file with
# `dpsurv gen --covariates 3` in a temporary directory and measures every
# run with /usr/bin/time -v: wall seconds, CPU seconds (user + system) and
# maximum resident set size, with the machine's 1-minute load average
# (/proc/loadavg) read just before and just after the run. Prints one line
# per run, then per job the medians, the median of the per-round ratios
# R / dpsurv (each round's two runs are a pair) and the range of the load
# over the job's runs, then the same as the Markdown table of
# docs/performance.md ("Fits on files against R"). With --docs it also
# writes that table into docs/performance.md, between the lines
# <!-- bench_fits:begin --> and <!-- bench_fits:end -->.
#
# Job km-base is the KM job with R's read.csv; a job name ending in
# -dpsurv (discrete-dpsurv) runs dpsurv only (R's glm on the person-period
# rows of 10 M records needs tens of GB).
# Slow: about 5 minutes for 1,000,000 rows and 3 rounds on a quiet 2-core
# machine (R's side is nearly all of it), about 30 for 10,000,000; a loaded
# machine multiplies both.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench_common.sh
bench_docs_flag "${1:-}"
shift "$docs"
rows=${1:-1000000}
rounds=${2:-3}
jobs=${3:-km cox weibull discrete}
bench_begin "$rows $rounds \"$jobs\""
go build -o "$tmp/dpsurv" ./cmd/dpsurv
"$tmp/dpsurv" gen --n "$rows" --covariates 3 --seed 1 --output "$tmp/gen.csv" 2>/dev/null
start=$(date -u +%FT%TZ)
echo "# $start rows=$rows bytes=$(stat -c %s "$tmp/gen.csv") nproc=$(nproc) commit=$commit load=$(cut -d' ' -f1-3 /proc/loadavg)"

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
# measure TOOL JOB ROUND CMD...: prints "tool job round wall cpu rss_mib load_before load_after"
measure() {
	local tool=$1 job=$2 round=$3 before
	shift 3
	before=$(load)
	/usr/bin/time -v -o "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err" || {
		echo "$tool $job failed:" >&2
		cat "$tmp/err" >&2
		return 1
	}
	awk -v tool="$tool" -v job="$job" -v round="$round" -v lb="$before" -v la="$(load)" '
		/Elapsed \(wall clock\)/ { n = split($NF, a, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + a[i] }
		/User time/ { u = $NF } /System time/ { s = $NF }
		/Maximum resident set size/ { m = $NF / 1024 }
		END { printf "%s %s %d %.2f %.2f %.0f %s %s\n", tool, job, round, w, u + s, m, lb, la }' "$tmp/time"
}
: >"$tmp/runs"
for r in $(seq "$rounds"); do
	for job in $jobs; do
		if [[ $job == *-dpsurv ]]; then
			measure dpsurv "${job%-dpsurv}" "$r" $(dpsurv_cmd "${job%-dpsurv}") | tee -a "$tmp/runs"
			continue
		fi
		if ((r % 2)); then
			measure dpsurv "$job" "$r" $(dpsurv_cmd "$job") | tee -a "$tmp/runs"
			measure R "$job" "$r" $(r_cmd "$job") | tee -a "$tmp/runs"
		else
			measure R "$job" "$r" $(r_cmd "$job") | tee -a "$tmp/runs"
			measure dpsurv "$job" "$r" $(dpsurv_cmd "$job") | tee -a "$tmp/runs"
		fi
	done
done
end=$(date -u +%FT%TZ)
echo "# $end load=$(cut -d' ' -f1-3 /proc/loadavg)"
Rscript -e '
args <- commandArgs(TRUE)
x <- read.table(args[1], col.names = c("tool", "job", "round", "wall", "cpu", "rss", "lb", "la"))
label <- c(km = "KM by cohort + log-rank", "km-base" = "the same against `read.csv`",
           cox = "Cox PH (Efron), 3 covariates", weibull = "Weibull MLE",
           discrete = "discrete-time MLE (q = 20)")
cat("# job: dpsurv wall s / cpu s / MiB, R wall s / cpu s / MiB (medians); median of the paired ratios R/dpsurv, wall / cpu; load during the runs\n")
tab <- character(0)
for (j in unique(x$job)) {
  d <- x[x$tool == "dpsurv" & x$job == j, ]
  r <- x[x$tool == "R" & x$job == j, ]
  m <- function(y, v) if (nrow(y)) median(y[[v]]) else NA
  pr <- merge(d, r, by = "round", suffixes = c(".d", ".r"))
  rw <- if (nrow(pr)) median(pr$wall.r / pr$wall.d) else NA
  rc <- if (nrow(pr)) median(pr$cpu.r / pr$cpu.d) else NA
  ld <- range(c(d$lb, d$la, r$lb, r$la))
  cat(sprintf("%-8s dpsurv %6.2f %6.2f %6.0f   R %7.2f %7.2f %6.0f   ratio %5.1f %5.1f   load %.1f-%.1f\n", j,
    m(d, "wall"), m(d, "cpu"), m(d, "rss"), m(r, "wall"), m(r, "cpu"), m(r, "rss"), rw, rc, ld[1], ld[2]))
  lab <- if (is.na(label[j])) j else label[j]
  rside <- if (nrow(r)) sprintf("%.2f s / %.2f s / %.0f MiB", m(r, "wall"), m(r, "cpu"), m(r, "rss")) else "not run"
  ratio <- if (nrow(pr)) sprintf("**%.1f× / %.1f×**", rw, rc) else ""
  tab <- c(tab, sprintf("| %s | %.2f s / %.2f s / %.0f MiB | %s | %s | %.1f–%.1f |", lab,
    m(d, "wall"), m(d, "cpu"), m(d, "rss"), rside, ratio, ld[1], ld[2]))
}
rounds <- length(unique(x$round))
md <- c(
  sprintf("**%s rows**, %s–%s, %d interleaved round%s, commit %s, %s processors (`scripts/bench_fits.sh %s`):",
    format(as.numeric(args[3]), big.mark = ",", scientific = FALSE), args[4], args[5], rounds,
    if (rounds == 1) "" else "s", args[6], args[7], args[8]),
  "",
  "| job | dpsurv wall / CPU / max RSS | R wall / CPU / max RSS | ratio R ÷ dpsurv, wall / CPU (median of the paired rounds) | load average (1 min) over the runs |",
  "|---|---|---|---|---|",
  tab)
cat("\n", md, sep = "\n")
writeLines(md, args[2])
' "$tmp/runs" "$tmp/table.md" "$rows" "$start" "$end" "$commit" "$(nproc)" "$cmdline"
if ((docs)); then
	docs_table bench_fits "$tmp/table.md"
fi
