# Golden values of the Weibull band in `fit weibull --epsilon inf --plot`
# (cmd/dpsurv/cli/plot.go weibullWaldBand): survreg's Weibull fit of lung
# cohort 1 on times / time_max (1022, the largest time), and the 95%
# pointwise band of S(t) by the delta method on log(-log S) with survreg's
# vcov, mapped to (log shape, log scale). Run from the repository root:
#   Rscript cmd/dpsurv/cli/testdata/plot_weibull_band.R > cmd/dpsurv/cli/testdata/plot_weibull_band.golden
# Output: "shape K scale L" then one line "t S lower upper" per time.
library(survival)
d <- read.csv("data/lung_tte.csv")
d <- d[d$cohort == 1, ]
tmax <- 1022
d$u <- d$time / tmax
f <- survreg(Surv(u, event) ~ 1, data = d, dist = "weibull")
mu <- unname(coef(f)[1])
V <- vcov(f) # rows/cols: (Intercept) = log scale, Log(scale) = -log shape
k <- 1 / f$scale
Vaa <- V[2, 2]; Vbb <- V[1, 1]; Vab <- -V[1, 2]
z <- qnorm(0.975)
cat(sprintf("shape %.12g scale %.12g\n", k, exp(mu)))
for (t in c(50, 200, 400, 800)) {
  g <- k * (log(t / tmax) - mu)
  sd <- sqrt(g^2 * Vaa - 2 * g * k * Vab + k^2 * Vbb)
  cat(sprintf("%g %.12g %.12g %.12g\n", t, exp(-exp(g)), exp(-exp(g + z * sd)), exp(-exp(g - z * sd))))
}
