# What scripts/golden_regression.R and scripts/golden_summary.R share: the
# JSON number format, the public configuration of the discrete-time model
# (round numbers, not derived from the data) and its person-period
# expansion -- exactly what the Go code does. Sourced, not run.

suppressPackageStartupMessages(library(survival))

num <- function(x) {
  if (length(x) == 0) return("[]")
  paste0("[", paste(sprintf("%.17g", x), collapse = ", "), "]")
}

q <- 200L
e <- 3L

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

# person_period expands the complete cases d of set cfg: covariates centred
# and scaled by the public values and each row clipped to the unit ball,
# x / max(1, ||x||); times clamped into [0, time_max] and normalised,
# s_i = min(q, max(1, ceiling((t / time_max) * q))); one row per patient
# and interval 1..s_i with outcome y (the event in the last interval), the
# spline baseline A at s/q and the covariates Zp (columns x1, x2, ...).
# clipped counts the rows the clipping shortened.
person_period <- function(d, cfg) {
  X <- as.matrix(d[, cfg$cov])
  Z <- sweep(sweep(X, 2, cfg$centre, "-"), 2, cfg$scale, "/")
  nrm <- sqrt(rowSums(Z^2))
  Z <- Z / pmax(1, nrm)
  tc <- pmin(pmax(d$time, 0), cfg$time_max)
  s <- pmin(q, pmax(1L, as.integer(ceiling((tc / cfg$time_max) * q))))
  id <- rep(seq_len(nrow(d)), s)
  per <- sequence(s)
  y <- as.integer(per == s[id] & d$event[id] == 1)
  A <- spline_basis(per / q, e)
  Zp <- Z[id, , drop = FALSE]
  colnames(Zp) <- paste0("x", seq_along(cfg$cov))
  list(y = y, A = A, Zp = Zp, clipped = sum(nrm > 1))
}
