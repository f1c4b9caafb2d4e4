# Golden values of TestCoxMeanSurvivalMatchesR (cmd/dpsurv/cli/plot_cox_test.go):
# R 4.2 + survival, run from the repository root: Rscript cmd/dpsurv/cli/testdata/cox_curve.R
# survfit(coxph) at the covariate means, Breslow cumulative hazard (ctype = 1), S = exp(-H) (stype = 2).
suppressMessages(library(survival))
d <- read.csv("data/lung_tte.csv")
d <- d[!is.na(d$ph.ecog) & !is.na(d$age),]
fit <- coxph(Surv(time, event) ~ age + ph.ecog, data = d, ties = "efron")
sf <- survfit(fit, ctype = 1, stype = 2)
i <- which(sf$n.event > 0)
cat(sprintf("%.10g %.12g\n", sf$time[i][c(1, 10, 50, 100)], sf$surv[i][c(1, 10, 50, 100)]))
cat(sprintf("%.12g\n", coef(fit)))
