#!/usr/bin/env Rscript
# Golden values for the non-private Weibull MLE (survival/weibull.go).
#
# Usage (from the repository root):
#   Rscript scripts/golden_weibull.R [DATA_DIR]
# DATA_DIR defaults to data. The script
#   * copies the columns time,event,cohort of flchain_tte.csv, kidney_tte.csv
#     and lung_tte.csv to survival/testdata/weibull_<name>.csv (the Go tests
#     read these copies, so they run without the shared tree), and
#   * fits survreg(Surv(time, event) ~ 1, dist = "weibull") on every case and
#     writes survival/testdata/weibull_golden.json.
#
# Cases, per file: the whole file ("all") and every cohort with >= 2 events,
# each under three time transformations:
#   "normalised": t / time_max with time_max = the file's maximum time;
#                 records with t <= 0 are dropped (survreg rejects them).
#   "raw":        t in days, records with t <= 0 dropped.
#   "clamped":    t / time_max clamped into [exp(-omega), 1], omega = 6 (the
#                 view the DP fits see; zero times are kept and clamped).
# Shape p = 1 / fit$scale, scale lambda = exp(intercept); loglik is survreg's
# (it includes the log-time Jacobian, i.e. it is the log-likelihood of t).
# The convergence tolerance is tightened so that the golden values are
# accurate well beyond the 1e-9 the Go tests demand.
suppressPackageStartupMessages(library(survival))

args <- commandArgs(trailingOnly = TRUE)
data_dir <- if (length(args) >= 1) args[1] else "data"
out_dir <- "survival/testdata"
omega <- 6

num <- function(x) sprintf("%.17g", x)

cases <- list()
for (name in c("flchain", "kidney", "lung")) {
  d <- read.csv(file.path(data_dir, paste0(name, "_tte.csv")))
  d <- d[, c("time", "event", "cohort")]
  write.csv(d, file.path(out_dir, paste0("weibull_", name, ".csv")),
            row.names = FALSE, quote = FALSE)
  time_max <- max(d$time)
  subsets <- list(all = rep(TRUE, nrow(d)))
  for (co in sort(unique(d$cohort))) {
    if (sum(d$event[d$cohort == co]) >= 2) {
      subsets[[paste0("cohort=", co)]] <- d$cohort == co
    }
  }
  for (sname in names(subsets)) {
    s <- d[subsets[[sname]], ]
    for (variant in c("normalised", "raw", "clamped")) {
      if (variant == "normalised") {
        keep <- s$time > 0
        tt <- s$time[keep] / time_max
        ev <- s$event[keep]
        tm <- time_max
      } else if (variant == "raw") {
        keep <- s$time > 0
        tt <- s$time[keep]
        ev <- s$event[keep]
        tm <- 1
      } else {
        tt <- pmin(pmax(s$time / time_max, exp(-omega)), 1)
        ev <- s$event
        tm <- time_max
      }
      fit <- survreg(Surv(tt, ev) ~ 1, dist = "weibull",
                     control = survreg.control(rel.tolerance = 1e-14,
                                               toler.chol = 1e-15,
                                               iter.max = 200))
      cases[[length(cases) + 1]] <- paste0(
        "    {\"dataset\": \"", name, "\", \"subset\": \"", sname,
        "\", \"variant\": \"", variant, "\", \"time_max\": ", num(tm),
        ", \"omega\": ", num(omega),
        ", \"n\": ", length(tt), ", \"events\": ", sum(ev),
        ", \"shape\": ", num(1 / fit$scale),
        ", \"scale\": ", num(exp(unname(coef(fit)[1]))),
        ", \"loglik\": ", num(fit$loglik[2]),
        ", \"iterations\": ", fit$iter, "}")
    }
  }
}

json <- paste0("{\n  \"generator\": \"scripts/golden_weibull.R\",\n",
               "  \"r_version\": \"", R.version.string, "\",\n",
               "  \"survival_version\": \"", as.character(packageVersion("survival")), "\",\n",
               "  \"cases\": [\n", paste(cases, collapse = ",\n"), "\n  ]\n}\n")
writeLines(json, file.path(out_dir, "weibull_golden.json"), sep = "")
cat("wrote", length(cases), "cases to", file.path(out_dir, "weibull_golden.json"), "\n")
