#!/usr/bin/env Rscript
# Golden values for package regression (issue 4).
#
#   Rscript scripts/golden_regression.R [data_dir] [out_dir]
#
# defaults: data_dir = data, out_dir = regression/testdata.
#
# For each shared data set it writes <name>.json with
#  - the discrete-time survival model of mechanisms.md section 5 fitted by
#    glm(binomial(link)) on the explicit person-period expansion, for the
#    logit, cloglog and probit links. Times are clamped into the public
#    [0, time_max] and normalised by time_max; q = 200 intervals,
#    s_i = min(q, max(1, ceiling((t / time_max) * q))); a natural cubic spline
#    baseline with e = 3 equally spaced knots on [0, 1] evaluated at s/q;
#    covariates centred and scaled by the fixed public values below and each
#    row clipped to the unit ball, x / max(1, ||x||) -- exactly what the Go
#    code does;
#  - coxph with Efron and Breslow ties on the raw covariates.
# Convergence tolerances are tightened (glm epsilon 1e-14, coxph eps 1e-12)
# so that both sides report the optimum rather than a stopping point.

# the shared set-up (survival, the configuration) beside this script (run
# by Rscript, or sourced from the repository root)
script_arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
script_dir <- if (length(script_arg) > 0) dirname(sub("^--file=", "", script_arg[1])) else "scripts"
source(file.path(script_dir, "golden_common.R"))

args <- commandArgs(trailingOnly = TRUE)
data_dir <- if (length(args) >= 1) args[1] else "data"
out_dir <- if (length(args) >= 2) args[2] else "regression/testdata"
dir.create(out_dir, showWarnings = FALSE, recursive = TRUE)

str <- function(x) paste0("[", paste0('"', x, '"', collapse = ", "), "]")

for (name in names(sets)) {
  cfg <- sets[[name]]
  d <- read.csv(file.path(data_dir, cfg$file), check.names = FALSE)
  d <- d[complete.cases(d[, c("time", "event", cfg$cov)]), ]
  n <- nrow(d)
  # person-period expansion
  ppx <- person_period(d, cfg)
  y <- ppx$y
  A <- ppx$A
  Zp <- ppx$Zp
  pp <- data.frame(y = y, A, Zp)
  form <- as.formula(paste("y ~ 0 +", paste(c(colnames(A), colnames(Zp)), collapse = " + ")))

  fits <- character(0)
  for (link in c("logit", "cloglog", "probit")) {
    start <- NULL
    if (link != "logit") {
      start <- c(switch(link, cloglog = log(-log(1 - mean(y))), probit = qnorm(mean(y))),
                 rep(0, ncol(A) - 1 + ncol(Zp)))
    }
    g <- glm(form, data = pp, family = binomial(link = link), start = start,
             control = glm.control(epsilon = 1e-14, maxit = 100))
    if (!g$converged) stop(sprintf("%s %s: glm did not converge", name, link))
    co <- unname(coef(g))
    se <- unname(sqrt(diag(vcov(g))))
    fits <- c(fits, sprintf(
      '    {"link": "%s", "alpha": %s, "beta": %s, "se": %s, "loglik": %.17g, "rows": %d}',
      link, num(co[1:e]), num(co[-(1:e)]), num(se), as.numeric(logLik(g)), nrow(pp)))
  }

  coxs <- character(0)
  cf <- as.formula(paste("Surv(time, event) ~", paste(sprintf("`%s`", cfg$cov), collapse = " + ")))
  for (ties in c("efron", "breslow")) {
    cx <- coxph(cf, data = d, ties = ties, control = coxph.control(eps = 1e-12, toler.chol = 1e-13, iter.max = 100))
    coxs <- c(coxs, sprintf(
      '    {"ties": "%s", "beta": %s, "se": %s, "loglik": %s, "iter": %d}',
      ties, num(unname(coef(cx))), num(unname(sqrt(diag(vcov(cx))))), num(cx$loglik), cx$iter))
  }

  json <- paste0(
    "{\n",
    sprintf('  "dataset": "%s",\n', name),
    sprintf('  "file": "%s",\n', cfg$file),
    sprintf('  "covariates": %s,\n', str(cfg$cov)),
    sprintf('  "centre": %s,\n', num(cfg$centre)),
    sprintf('  "scale": %s,\n', num(cfg$scale)),
    sprintf('  "time_max": %.17g,\n', cfg$time_max),
    sprintf('  "intervals": %d,\n', q),
    sprintf('  "knots": %d,\n', e),
    sprintf('  "n": %d,\n', n),
    sprintf('  "clipped_rows": %d,\n', ppx$clipped),
    sprintf('  "r_version": "%s",\n', R.version.string),
    sprintf('  "survival_version": "%s",\n', as.character(packageVersion("survival"))),
    '  "discrete": [\n', paste(fits, collapse = ",\n"), "\n  ],\n",
    '  "cox": [\n', paste(coxs, collapse = ",\n"), "\n  ]\n",
    "}\n")
  writeLines(json, file.path(out_dir, paste0(name, ".json")), sep = "")
  cat(sprintf("%s: n = %d, person-period rows = %d\n", name, n, nrow(pp)))
}
