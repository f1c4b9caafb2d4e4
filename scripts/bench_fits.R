#!/usr/bin/env Rscript
# The R side of the fit benchmarks in docs/performance.md (issue 14): the
# same job `dpsurv fit` does on a file from `dpsurv gen --covariates 3`,
# read with data.table::fread (or read.csv with reader=base).
#
#   Rscript scripts/bench_fits.R JOB FILE [reader]
#
# JOB: km       Kaplan–Meier by cohort (survfit) + log-rank (survdiff)
#      cox      coxph, Efron ties, age + female + bmi
#      weibull  survreg(dist = "weibull"), no covariates
#      discrete discrete-time logistic model by glm on the person-period
#               rows: q = 20 intervals of time_max = 3650, a natural cubic
#               spline baseline with 3 knots, covariates centred by
#               (60, 0.5, 28), scaled by (40, 1, 20) and clipped to the unit
#               ball (what `dpsurv fit discrete --epsilon inf` fits).
# reader: fread (default) or base (read.csv).
# Prints a one-line summary so that the work cannot be skipped.

suppressPackageStartupMessages({
  library(survival)
  library(data.table)
})
args <- commandArgs(trailingOnly = TRUE)
if (length(args) < 2) stop("usage: bench_fits.R km|cox|weibull|discrete FILE [fread|base]")
job <- args[1]
file <- args[2]
reader <- if (length(args) >= 3) args[3] else "fread"
d <- if (reader == "base") read.csv(file) else fread(file, showProgress = FALSE)

if (job == "km") {
  fit <- survfit(Surv(time, event) ~ cohort, data = d)
  lr <- survdiff(Surv(time, event) ~ cohort, data = d)
  med <- summary(fit)$table[, "median"]
  cat(sprintf("km: n = %d, medians %s, log-rank chisq %.6g\n", nrow(d), paste(med, collapse = " "), lr$chisq))
} else if (job == "cox") {
  fit <- coxph(Surv(time, event) ~ age + female + bmi, data = d, ties = "efron")
  cat(sprintf("cox: beta %s, loglik %.10g\n", paste(sprintf("%.8g", coef(fit)), collapse = " "), fit$loglik[2]))
} else if (job == "weibull") {
  fit <- survreg(Surv(time, event) ~ 1, data = d, dist = "weibull")
  cat(sprintf("weibull: shape %.8g, scale %.8g, loglik %.10g\n", 1 / fit$scale, exp(coef(fit)[1]), fit$loglik[1]))
} else if (job == "discrete") {
  q <- 20L
  time_max <- 3650
  X <- as.matrix(d[, c("age", "female", "bmi")])
  Z <- sweep(sweep(X, 2, c(60, 0.5, 28), "-"), 2, c(40, 1, 20), "/")
  Z <- Z / pmax(1, sqrt(rowSums(Z^2)))
  tc <- pmin(pmax(d$time, 0), time_max)
  s <- pmin(q, pmax(1L, as.integer(ceiling((tc / time_max) * q))))
  id <- rep(seq_len(nrow(d)), s)
  per <- sequence(s)
  y <- as.integer(per == s[id] & d$event[id] == 1)
  k <- c(0, 0.5, 1)
  dd <- function(j, t) (pmax(t - k[j], 0)^3 - pmax(t - k[3], 0)^3) / (k[3] - k[j])
  tt <- per / q
  pp <- data.table(y = y, b1 = 1, b2 = tt, b3 = dd(1, tt) - dd(2, tt),
                   x1 = Z[id, 1], x2 = Z[id, 2], x3 = Z[id, 3])
  rm(id, per, y, tt)
  fit <- glm(y ~ 0 + b1 + b2 + b3 + x1 + x2 + x3, data = pp, family = binomial())
  cat(sprintf("discrete: %d person-period rows, beta %s\n", nrow(pp),
              paste(sprintf("%.8g", coef(fit)[4:6]), collapse = " ")))
} else {
  stop("unknown job ", job)
}
