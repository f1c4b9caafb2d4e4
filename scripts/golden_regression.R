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

suppressPackageStartupMessages(library(survival))

args <- commandArgs(trailingOnly = TRUE)
data_dir <- if (length(args) >= 1) args[1] else "data"
out_dir <- if (length(args) >= 2) args[2] else "regression/testdata"
dir.create(out_dir, showWarnings = FALSE, recursive = TRUE)

q <- 200L
e <- 3L

# public configuration (round numbers, not derived from the data)
sets <- list(
  lung = list(file = "lung_tte.csv", time_max = 1100,
              cov = c("age", "ph.ecog", "ph.karno", "wt.loss"),
              centre = c(60, 1, 80, 10), scale = c(20, 2, 40, 30)),
  kidney = list(file = "kidney_tte.csv", time_max = 600,
                cov = c("age", "female"),
                centre = c(45, 0.5), scale = c(30, 1)),
  flchain = list(file = "flchain_tte.csv", time_max = 5200,
                 cov = c("age", "male", "kappa", "lambda", "creatinine", "mgus"),
                 centre = c(65, 0.5, 1.5, 1.5, 1, 0), scale = c(25, 1, 3, 3, 2, 1)),
  # discrete covariates only (a few dozen patterns): the Go MLE fits it
  # from sufficient statistics per (covariate pattern, interval)
  lung_ecog = list(file = "lung_tte.csv", time_max = 1100,
                   cov = c("ph.ecog", "ph.karno"),
                   centre = c(1, 80), scale = c(2, 40))
)

spline_basis <- function(t, e) {
  k <- (seq_len(e) - 1) / (e - 1)
  d <- function(j, t) (pmax(t - k[j], 0)^3 - pmax(t - k[e], 0)^3) / (k[e] - k[j])
  B <- cbind(1, t)
  if (e > 2) for (j in 1:(e - 2)) B <- cbind(B, d(j, t) - d(e - 1, t))
  colnames(B) <- paste0("b", seq_len(e))
  B
}

num <- function(x) {
  if (length(x) == 0) return("[]")
  paste0("[", paste(sprintf("%.17g", x), collapse = ", "), "]")
}
str <- function(x) paste0("[", paste0('"', x, '"', collapse = ", "), "]")

for (name in names(sets)) {
  cfg <- sets[[name]]
  d <- read.csv(file.path(data_dir, cfg$file), check.names = FALSE)
  d <- d[complete.cases(d[, c("time", "event", cfg$cov)]), ]
  n <- nrow(d)
  X <- as.matrix(d[, cfg$cov])
  Z <- sweep(sweep(X, 2, cfg$centre, "-"), 2, cfg$scale, "/")
  nrm <- sqrt(rowSums(Z^2))
  Z <- Z / pmax(1, nrm)
  tc <- pmin(pmax(d$time, 0), cfg$time_max)
  s <- pmin(q, pmax(1L, as.integer(ceiling((tc / cfg$time_max) * q))))

  # person-period expansion
  id <- rep(seq_len(n), s)
  per <- sequence(s)
  y <- as.integer(per == s[id] & d$event[id] == 1)
  A <- spline_basis(per / q, e)
  Zp <- Z[id, , drop = FALSE]
  colnames(Zp) <- paste0("x", seq_along(cfg$cov))
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
    sprintf('  "clipped_rows": %d,\n', sum(nrm > 1)),
    sprintf('  "r_version": "%s",\n', R.version.string),
    sprintf('  "survival_version": "%s",\n', as.character(packageVersion("survival"))),
    '  "discrete": [\n', paste(fits, collapse = ",\n"), "\n  ],\n",
    '  "cox": [\n', paste(coxs, collapse = ",\n"), "\n  ]\n",
    "}\n")
  writeLines(json, file.path(out_dir, paste0(name, ".json")), sep = "")
  cat(sprintf("%s: n = %d, person-period rows = %d\n", name, n, nrow(pp)))
}
