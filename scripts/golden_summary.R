#!/usr/bin/env Rscript
# Golden values for the standard errors, Wald intervals and tests the
# non-private fits print beside their estimates (issue 19, item 6): what
# R's summary() shows.
#
#   Rscript scripts/golden_summary.R [data_dir]
#
# data_dir defaults to data. It writes
#  * regression/testdata/summary_<name>.json for lung, kidney and flchain:
#    - cox: summary(coxph(..., ties = "efron")) on the raw covariates of
#      scripts/golden_regression.R: coef, exp(coef), se(coef), z,
#      Pr(>|z|), lower .95 and upper .95 of exp(coef), and the likelihood
#      ratio test;
#    - discrete: the person-period glm of scripts/golden_regression.R
#      (same public centre/scale, clipping, 200 intervals, 3 knots) for
#      each link: coefficients, the standard errors of vcov(glm) (the
#      EXPECTED information, what summary.glm prints) and of the OBSERVED
#      information (optimHess of the log-likelihood with its analytic
#      gradient; equal to the expected one for the canonical logit link),
#      z and p of summary.glm, and confint.default's Wald limits;
#  * survival/testdata/weibull_se_golden.json: survreg(Surv(t, event) ~ 1,
#    dist = "weibull") on each file and cohort with >= 2 events, times
#    t / max(time) clamped into [exp(-6), 1] (the "clamped" variant of
#    scripts/golden_weibull.R, what `dpsurv fit weibull --epsilon inf`
#    fits): intercept = log(scale), log(sigma) = -log(shape), their
#    standard errors and covariance from vcov(survreg) (observed
#    information), and the Wald 95% limits of shape and scale;
#  * survival/testdata/km_times_summary.csv: summary(survfit(Surv(time,
#    event) ~ cohort), times = ...) for lung (250, 500, 750, 1000) and
#    kidney (200, 400), the times `dpsurv fit km --format table` reports
#    (conf.type "log", R's default): n.risk, survival, std.err, lower,
#    upper, and print(survfit)'s n, events, median and its limits.
# the shared set-up (survival, the configuration) beside this script (run
# by Rscript, or sourced from the repository root)
script_arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
script_dir <- if (length(script_arg) > 0) dirname(sub("^--file=", "", script_arg[1])) else "scripts"
source(file.path(script_dir, "golden_common.R"))

args <- commandArgs(trailingOnly = TRUE)
data_dir <- if (length(args) >= 1) args[1] else "data"

one <- function(x) sprintf("%.17g", x)
z95 <- qnorm(0.975)

for (name in c("lung", "kidney", "flchain")) {
  cfg <- sets[[name]]
  d <- read.csv(file.path(data_dir, cfg$file), check.names = FALSE)
  d <- d[complete.cases(d[, c("time", "event", cfg$cov)]), ]
  n <- nrow(d)

  cf <- as.formula(paste("Surv(time, event) ~", paste(sprintf("`%s`", cfg$cov), collapse = " + ")))
  cx <- coxph(cf, data = d, ties = "efron", control = coxph.control(eps = 1e-12, toler.chol = 1e-13, iter.max = 100))
  sm <- summary(cx)
  co <- sm$coefficients
  ci <- sm$conf.int
  lr <- sm$logtest
  cox <- sprintf(paste0(
    '  "cox": {"ties": "efron", "coef": %s, "exp_coef": %s, "se": %s, "z": %s, "p": %s,\n',
    '          "exp_coef_lower": %s, "exp_coef_upper": %s,\n',
    '          "lr_chisq": %s, "lr_df": %d, "lr_p": %s}'),
    num(unname(co[, "coef"])), num(unname(co[, "exp(coef)"])), num(unname(co[, "se(coef)"])),
    num(unname(co[, "z"])), num(unname(co[, "Pr(>|z|)"])),
    num(unname(ci[, "lower .95"])), num(unname(ci[, "upper .95"])),
    one(unname(lr["test"])), as.integer(lr["df"]), one(unname(lr["pvalue"])))

  ppx <- person_period(d, cfg)
  y <- ppx$y
  M <- cbind(ppx$A, ppx$Zp)
  pp <- data.frame(y = y, M)
  form <- as.formula(paste("y ~ 0 +", paste(colnames(M), collapse = " + ")))

  fits <- character(0)
  for (link in c("logit", "cloglog", "probit")) {
    start <- NULL
    if (link != "logit") {
      start <- c(switch(link, cloglog = log(-log(1 - mean(y))), probit = qnorm(mean(y))),
                 rep(0, ncol(M) - 1))
    }
    fam <- binomial(link = link)
    g <- glm(form, data = pp, family = fam, start = start,
             control = glm.control(epsilon = 1e-14, maxit = 100))
    if (!g$converged) stop(sprintf("%s %s: glm did not converge", name, link))
    b <- unname(coef(g))
    sg <- summary(g)$coefficients
    ll <- function(beta) {
      mu <- fam$linkinv(drop(M %*% beta))
      sum(y * log(mu) + (1 - y) * log(1 - mu))
    }
    gr <- function(beta) {
      eta <- drop(M %*% beta)
      mu <- fam$linkinv(eta)
      drop(crossprod(M, (y - mu) / (mu * (1 - mu)) * fam$mu.eta(eta)))
    }
    H <- optimHess(b, ll, gr, control = list(ndeps = rep(1e-5, length(b))))
    se_obs <- sqrt(diag(solve(-H)))
    cd <- confint.default(g)
    fits <- c(fits, sprintf(paste0(
      '    {"link": "%s", "coef": %s, "se_expected": %s, "se_observed": %s,\n',
      '     "z": %s, "p": %s, "lower": %s, "upper": %s}'),
      link, num(b), num(unname(sg[, "Std. Error"])), num(se_obs),
      num(unname(sg[, "z value"])), num(unname(sg[, "Pr(>|z|)"])),
      num(unname(cd[, 1])), num(unname(cd[, 2]))))
  }

  json <- paste0(
    "{\n",
    '  "generator": "scripts/golden_summary.R",\n',
    sprintf('  "r_version": "%s",\n', R.version.string),
    sprintf('  "survival_version": "%s",\n', as.character(packageVersion("survival"))),
    sprintf('  "dataset": "%s",\n  "n": %d,\n', name, n),
    cox, ",\n",
    '  "discrete": [\n', paste(fits, collapse = ",\n"), "\n  ]\n}\n")
  writeLines(json, file.path("regression/testdata", paste0("summary_", name, ".json")), sep = "")
  cat(sprintf("%s: summary written\n", name))
}

# Weibull: survreg on the clamped, normalised times.
omega <- 6
cases <- character(0)
for (name in c("flchain", "kidney", "lung")) {
  d <- read.csv(file.path(data_dir, paste0(name, "_tte.csv")))
  time_max <- max(d$time)
  subsets <- list(all = rep(TRUE, nrow(d)))
  for (co in sort(unique(d$cohort))) {
    if (sum(d$event[d$cohort == co]) >= 2) subsets[[paste0("cohort=", co)]] <- d$cohort == co
  }
  for (sname in names(subsets)) {
    s <- d[subsets[[sname]], ]
    tt <- pmin(pmax(s$time / time_max, exp(-omega)), 1)
    fit <- survreg(Surv(tt, event) ~ 1, data = s, dist = "weibull",
                   control = survreg.control(rel.tolerance = 1e-14, toler.chol = 1e-15, iter.max = 200))
    v <- vcov(fit)  # rows/cols: (Intercept), Log(scale)
    mu <- unname(coef(fit)[1]); ls <- log(fit$scale)
    se_mu <- sqrt(v[1, 1]); se_ls <- sqrt(v[2, 2])
    cases <- c(cases, paste0(
      "    {\"dataset\": \"", name, "\", \"subset\": \"", sname, "\", \"time_max\": ", one(time_max),
      ", \"omega\": ", one(omega), ", \"n\": ", nrow(s), ", \"events\": ", sum(s$event),
      ", \"intercept\": ", one(mu), ", \"log_sigma\": ", one(ls),
      ", \"se_intercept\": ", one(se_mu), ", \"se_log_sigma\": ", one(se_ls), ", \"cov\": ", one(v[1, 2]),
      ", \"shape\": ", one(exp(-ls)), ", \"shape_lower\": ", one(exp(-ls - z95 * se_ls)),
      ", \"shape_upper\": ", one(exp(-ls + z95 * se_ls)),
      ", \"scale\": ", one(exp(mu)), ", \"scale_lower\": ", one(exp(mu - z95 * se_mu)),
      ", \"scale_upper\": ", one(exp(mu + z95 * se_mu)), "}"))
  }
}
json <- paste0("{\n  \"generator\": \"scripts/golden_summary.R\",\n",
               "  \"r_version\": \"", R.version.string, "\",\n",
               "  \"survival_version\": \"", as.character(packageVersion("survival")), "\",\n",
               "  \"cases\": [\n", paste(cases, collapse = ",\n"), "\n  ]\n}\n")
writeLines(json, "survival/testdata/weibull_se_golden.json", sep = "")
cat("wrote", length(cases), "weibull cases\n")

# KM: summary(fit, times) and print(fit), the rows of the km table.
rows <- list()
meds <- list()
for (cfg in list(list(name = "lung", times = c(250, 500, 750, 1000)),
                 list(name = "kidney", times = c(200, 400)))) {
  d <- read.csv(file.path(data_dir, paste0(cfg$name, "_tte.csv")))
  fit <- survfit(Surv(time, event) ~ cohort, data = d)
  s <- summary(fit, times = cfg$times)
  rows[[length(rows) + 1]] <- data.frame(dataset = cfg$name, cohort = sub("cohort=", "", as.character(s$strata)),
                                         time = s$time, n_risk = s$n.risk, surv = s$surv, std_err = s$std.err,
                                         lower = s$lower, upper = s$upper)
  tb <- summary(fit)$table
  meds[[length(meds) + 1]] <- data.frame(dataset = cfg$name, cohort = sub("cohort=", "", rownames(tb)),
                                         n = tb[, "records"], events = tb[, "events"], median = tb[, "median"],
                                         lcl = tb[, "0.95LCL"], ucl = tb[, "0.95UCL"])
}
write.csv(do.call(rbind, rows), "survival/testdata/km_times_summary.csv", row.names = FALSE, quote = FALSE)
write.csv(do.call(rbind, meds), "survival/testdata/km_print_summary.csv", row.names = FALSE, quote = FALSE)
cat("wrote km summaries\n")
