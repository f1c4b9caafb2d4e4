#!/usr/bin/env Rscript
# Golden files for the Kaplan-Meier and log-rank estimators in survival/.
#
# Usage (from the repository root):
#   Rscript scripts/golden_km.R [DATA_DIR] [OUT_DIR]
# defaults: data and survival/testdata.
#
# For every dataset (flchain, kidney, lung) and for the whole data set and each
# cohort it writes survfit(Surv(time, event) ~ 1, conf.type = "log") as
# km_<dataset>_<cohort|all>.csv, the medians with their CIs as R's
# quantile(fit, 0.5) and print(fit) (survmean) compute them in km_medians.csv,
# and survdiff overall and on every two-cohort subset in logrank_overall.csv and
# logrank_pairwise.csv. Synthetic edge cases (flat segment at 0.5, a curve that
# ends at 0.5, S reaching 0, heavy censoring, time 0, fractional case weights
# with robust = FALSE) are written with their input data as km_edge_*.csv.
# Numbers are printed with 17 significant digits; NA and Inf as R spells them.

suppressPackageStartupMessages(library(survival))

args <- commandArgs(trailingOnly = TRUE)
data_dir <- if (length(args) >= 1) args[1] else "data"
out_dir <- if (length(args) >= 2) args[2] else "survival/testdata"
dir.create(out_dir, showWarnings = FALSE, recursive = TRUE)

fmt <- function(x) {
  if (is.character(x)) return(x)
  out <- sprintf("%.17g", x)
  out[is.na(x)] <- "NA"
  out[is.infinite(x) & x > 0] <- "Inf"
  out[is.infinite(x) & x < 0] <- "-Inf"
  out
}

write_table <- function(df, file) {
  df[] <- lapply(df, fmt)
  write.table(df, file.path(out_dir, file), sep = ",", quote = FALSE,
              row.names = FALSE, col.names = TRUE)
}

curve_table <- function(fit) {
  data.frame(time = fit$time, n_risk = fit$n.risk, n_event = fit$n.event,
             n_censor = fit$n.censor, surv = fit$surv, std_err = fit$std.err,
             lower = fit$lower, upper = fit$upper)
}

median_row <- function(fit, dataset, cohort) {
  q <- quantile(fit, 0.5)
  tab <- summary(fit)$table
  data.frame(dataset = dataset, cohort = cohort,
             median = unname(q$quantile), lower = unname(q$lower),
             upper = unname(q$upper),
             print_median = unname(tab["median"]),
             print_lower = unname(tab["0.95LCL"]),
             print_upper = unname(tab["0.95UCL"]))
}

medians <- list()
overall <- list()
pairwise <- list()

for (ds in c("flchain", "kidney", "lung")) {
  d <- read.csv(file.path(data_dir, paste0(ds, "_tte.csv")),
                colClasses = c(cohort = "character"))
  fit <- survfit(Surv(time, event) ~ 1, data = d, conf.type = "log")
  write_table(curve_table(fit), sprintf("km_%s_all.csv", ds))
  medians[[length(medians) + 1]] <- median_row(fit, ds, "all")
  cohorts <- sort(unique(d$cohort))
  for (co in cohorts) {
    sub <- d[d$cohort == co, ]
    fit <- survfit(Surv(time, event) ~ 1, data = sub, conf.type = "log")
    write_table(curve_table(fit), sprintf("km_%s_%s.csv", ds, co))
    medians[[length(medians) + 1]] <- median_row(fit, ds, co)
  }
  sd <- survdiff(Surv(time, event) ~ cohort, data = d)
  df <- sum(sd$exp > 0) - 1
  overall[[length(overall) + 1]] <- data.frame(
    dataset = ds, chisq = sd$chisq, df = df,
    p = pchisq(sd$chisq, df, lower.tail = FALSE))
  for (i in seq_along(cohorts)) for (j in seq_along(cohorts)) if (i < j) {
    sub <- d[d$cohort %in% c(cohorts[i], cohorts[j]), ]
    sd <- survdiff(Surv(time, event) ~ cohort, data = sub)
    df <- sum(sd$exp > 0) - 1
    pairwise[[length(pairwise) + 1]] <- data.frame(
      dataset = ds, a = cohorts[i], b = cohorts[j], chisq = sd$chisq, df = df,
      p = pchisq(sd$chisq, df, lower.tail = FALSE))
  }
}

# Synthetic edge cases. weight != 1 only in "weighted" (robust = FALSE keeps
# the Greenwood variance on the weighted counts).
edge <- list(
  flat_half   = data.frame(time = c(1, 2, 3, 5), event = c(1, 1, 0, 1)),
  ends_half   = data.frame(time = c(1, 2), event = c(1, 0)),
  ends_half2  = data.frame(time = c(1, 1, 3, 4, 4, 6), event = c(0, 1, 1, 0, 0, 0)),
  never_half  = data.frame(time = c(1, 2, 3, 4, 5, 6, 7, 8), event = c(1, 0, 0, 1, 0, 0, 0, 0)),
  all_die     = data.frame(time = c(2, 2, 3, 5, 5, 8), event = c(1, 1, 1, 1, 1, 1)),
  die_then_censor = data.frame(time = c(1, 2, 3, 3, 3, 9), event = c(1, 0, 1, 1, 0, 0)),
  zero_time   = data.frame(time = c(0, 0, 0, 1, 4, 4, 7, 10), event = c(1, 0, 1, 1, 1, 0, 1, 0)),
  single      = data.frame(time = c(5), event = c(1)),
  single_cens = data.frame(time = c(5), event = c(0)),
  ties        = data.frame(time = c(3, 3, 3, 3, 6, 6, 6, 9, 9, 12, 12, 12, 12, 15),
                           event = c(1, 1, 0, 0, 1, 0, 0, 1, 1, 0, 1, 1, 0, 1)),
  weighted    = data.frame(time = c(1, 2, 2, 4, 5, 7, 8, 8, 10, 12),
                           event = c(1, 0, 1, 1, 0, 1, 1, 0, 1, 0))
)
edge_data <- list()
for (nm in names(edge)) {
  e <- edge[[nm]]
  e$weight <- if (nm == "weighted") c(0.5, 1.25, 2, 0.75, 1, 1.5, 0.3, 2.2, 1.1, 0.9) else 1
  edge_data[[length(edge_data) + 1]] <- data.frame(case = nm, e)
  fit <- survfit(Surv(time, event) ~ 1, data = e, weights = weight,
                 conf.type = "log", robust = FALSE)
  write_table(curve_table(fit), sprintf("km_edge_%s.csv", nm))
  medians[[length(medians) + 1]] <- median_row(fit, "edge", nm)
}
write_table(do.call(rbind, edge_data), "km_edge_data.csv")

# Log-rank edge case: group "c" is only censored, at time 0 before the first
# death, so its expected count is 0 and survdiff drops it (df = 1).
lr <- data.frame(time = c(1, 2, 3, 4, 5, 2, 3, 3, 6, 8, 0, 0),
                 event = c(1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 0),
                 group = c("a", "a", "a", "a", "a", "b", "b", "b", "b", "b", "c", "c"))
write_table(lr, "logrank_edge_data.csv")
sd <- survdiff(Surv(time, event) ~ group, data = lr)
df <- sum(sd$exp > 0) - 1
overall[[length(overall) + 1]] <- data.frame(
  dataset = "edge", chisq = sd$chisq, df = df,
  p = pchisq(sd$chisq, df, lower.tail = FALSE))

# survival:::findq (the quantile rule behind quantile(fit) and the median) on
# random step curves, including non-monotone ones (an upper confidence limit
# can rise) with NA values and ties at the probability levels.
set.seed(20240601)
levels <- c(1, 0.9, 0.75, 0.6, 0.5, 0.5, 0.4, 0.25, 0.1, 0)
fq <- list()
for (k in 1:300) {
  n <- sample(1:12, 1)
  tt <- cumsum(sample(1:3, n, replace = TRUE))
  ss <- sample(levels, n, replace = TRUE)
  ss[runif(n) < 0.1] <- NA
  if (k %% 2 == 0) ss <- sort(ss, decreasing = TRUE, na.last = TRUE)
  for (p in c(0, 0.25, 0.5, 0.6, 0.75, 1)) {
    q <- survival:::findq(c(0, tt), c(0, 1 - ss), p, sqrt(.Machine$double.eps))
    fq[[length(fq) + 1]] <- data.frame(case = k, p = p,
      time = paste(fmt(tt), collapse = ";"), surv = paste(fmt(ss), collapse = ";"),
      quantile = q)
  }
}
write_table(do.call(rbind, fq), "km_findq.csv")

write_table(do.call(rbind, medians), "km_medians.csv")
write_table(do.call(rbind, overall), "logrank_overall.csv")
write_table(do.call(rbind, pairwise), "logrank_pairwise.csv")
cat("survival", as.character(packageVersion("survival")), "golden files written to", out_dir, "\n")
