// Package km holds the central differentially private Kaplan–Meier
// fits: the noisy-histogram and hierarchical (tree) KM releases, the LNTE
// baseline, KM on a locally sanitized stream (RRR-debiased), log-rank from
// noisy counts and its calibrated p-values, the noise-aware intervals and
// simultaneous bands, and the binary-tree counter for continual release
// (TreeCounter, ContinualKM). Each result states its epsilon, neighbouring
// relation and kind of guarantee. What the KM and Weibull families share
// (the simulations' binomial sampler, the low-information rule, the
// Monte-Carlo p-value bound) is in package km.
//
// Kaplan–Meier contract:
//
//   - Input is a Histogram (events and censorings per cohort and time bin
//     over the public domain [0, TMax]). A time beyond TMax is
//     administratively censored at the horizon, (TMax, censored), and
//     counted (CensoredAtHorizon): never an event at TMax that did not
//     happen there; a negative time is clamped to 0 and counted. Neither
//     sets a bound. Memory is O(bins x cohorts).
//   - Relation: the central KM releases are epsilon-DP under
//     add/remove-one (NeighbouringAddRemove): whether a record is in the
//     window is protected, and so is the record count (released only as
//     the sum of noisy cells). A replaced record is two steps (2 epsilon).
//   - NoisyHistogramKM: two-sided geometric noise of scale 1/epsilon on
//     every cell (L1 sensitivity 1 under add/remove-one), "pure-dp". The noise
//     stays signed through the post-processing; the curve is made monotone
//     once (isotonic regression), clamped into [0, 1], and the released
//     counts satisfy 0 <= d <= n, c >= 0, n' = n - d - c, so
//     survival.KaplanMeierFromCounts reproduces the curve and its Greenwood
//     interval (sampling variability only, kept as SamplingLower/Upper).
//     The released interval, StdErr and the median limits are noise-aware
//     (km_inference.go, km_interval.go: the log-log Greenwood interval
//     widened by the noise's spread of log S below and above the curve,
//     simulated from the released counts), with a simultaneous band
//     (BandLower/BandUpper, km_interval.go); medians are released
//     only where the upper limit reaches 0.5; low-information cohorts are
//     flagged; the log-rank p-values are calibrated by simulating null
//     releases through the same mechanism (logrank_dp.go). Curves are
//     truncated where the noise dominates (KMOptions.MaxNoiseStdErr). Epsilon = +Inf (exact counts)
//     needs AllowNonPrivate and is labelled "none (non-private)".
//   - HierarchicalKM (the default of `dpsurv fit km`): the same histogram
//     released through a 16-ary tree per cohort for events and one for
//     censorings, two-sided geometric noise on every node with level l
//     spending epsilon_l (sum epsilon; each level has L1 sensitivity 1
//     under add/remove-one, so the node vector has levels), "pure-dp".
//     The trees are made consistent by least squares (post-processing) and
//     the inferred bins go through NoisyHistogramKM's post-processing, with
//     the truncation rule using the exact variance of the correlated noise
//     and a second-order bias correction of the product-limit factors.
//     Its at-risk error grows like log(bins) instead of sqrt(bins).
//   - The bin width trades time resolution against noise: every bin carries
//     its own noise, so narrow bins over a long domain with few records per
//     cohort give curves dominated by noise (see NoisyHistogramKM).
//   - LNTE is a baseline only: its epsilon is per (cohort, time point)
//     ("pure-dp (per cohort and time point)", EpsilonTotal =
//     (bins + 1) x epsilon: moving an event between two cohorts' last bins
//     changes 2 bins + 2 counts).
//   - RRRKM debiases counts by reported label with M^-1; "local-dp" for the
//     cohort label only, no extra budget.
//   - Log-rank tests (overall and pairwise) are post-processing of the
//     released counts.
//   - TreeCounter / ContinualKM: cumulative releases after each of at most
//     Horizon windows cost epsilon in total; drawn noise is part of the
//     serialized state and is never redrawn. That state holds exact partial
//     sums and is as sensitive as the input.
//
// All randomness comes from a dp.Source passed in; nothing reads math/rand
// or the clock. Tests use seeded sources; production uses dp.NewSecureSource.
package km
