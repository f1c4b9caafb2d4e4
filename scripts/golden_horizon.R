# Golden values of administrative censoring at a horizon (issue 19), for
# cmd/dpsurv/cli/horizon_test.go: R's survfit and survreg on data/lung_tte.csv
# with every time beyond 100 days censored at 100.
#   Rscript scripts/golden_horizon.R data/lung_tte.csv
suppressMessages(library(survival))
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(if (length(args) > 0) args[1] else "data/lung_tte.csv")
h <- 100
beyond <- d$time > h
d$time[beyond] <- h
d$event[beyond] <- 0
cat(sprintf("censored_at_horizon %d\n", sum(beyond)))
km <- survfit(Surv(time, event) ~ cohort, data = d)
s <- summary(km, times = h, extend = TRUE)
for (i in seq_along(s$strata)) cat(sprintf("surv_at_100 %s %.10f\n", s$strata[i], s$surv[i]))
print(km) # medians: NA (not reached by day 100)
fit <- survreg(Surv(time, event) ~ 1, data = d, dist = "weibull")
cat(sprintf("weibull_shape %.10f\n", 1 / fit$scale))
cat(sprintf("weibull_scale_days %.10f\n", exp(coef(fit)[1])))
