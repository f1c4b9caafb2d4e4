// Package regression holds survival regression: the discrete-time
// model with a natural-cubic-spline baseline (non-private MLE and the DP
// methods of Nguyen & Hui, paper 000) and Cox proportional hazards with Efron
// or Breslow ties, on raw covariates or on HPPCox projections (paper 003,
// package projection).
//
// Discrete-time model (mechanisms.md section 5). FitDiscrete with
//   - MethodMLE: maximum likelihood by Newton–Raphson with the exact Hessian
//     (links logit, cloglog, probit); equals R glm(binomial(link)) on the
//     person-period expansion (testdata/, scripts/golden_regression.R).
//   - MethodOutput: Ext-Out-Pert (Algorithm 1), guarantee "pure-dp".
//   - MethodObjective: Ext-Obj-Pert (Algorithm 2), "pure-dp".
//   - MethodPSGLD: Sanitized-EXP sampled by pSGLD (Algorithms 3–4),
//     "approximate (mcmc)": exact only if the sampling were exact.
//
// The likelihood is never expanded into person-period rows: a record is
// (interval s_i, event, covariates); the per-interval baseline alpha'A_s is
// computed once per evaluation and each record walks its own intervals
// (cloglog factorises and uses prefix sums over s instead), with
// interval-indexed sums contracted with A_s at the end. pSGLD minibatches
// records and evaluates each one's loss the same way.
//
// Public bounds. A private fit needs the public time domain [0, TimeMax]
// and uses the public per-covariate centre and scale of Scaling (identity
// if nil); rows are clipped to the unit ball. Data-derived normalisation
// (DataDerivedScaling, TimeMax = 0) is refused unless the method is
// MethodMLE. Releases state epsilon (total, fit and count parts), the
// neighbouring relation (replace-one) and the guarantee; the record count
// n is released as a two-sided geometric noisy count (CountEpsilon, 5% of
// Epsilon by default); the log-likelihood is reported on the non-private
// path only. Every random draw comes from the dp.Source passed in.
//
// Choices and errata beyond mechanisms.md:
//   - Ext-Obj-Pert's Jacobian term uses (||A_s||^2 + 1)/(4 n (Lambda+Delta))
//     where the paper and mechanisms.md write sqrt(||A_s||^2 + 1): the
//     eigenvalue of h x x' is h ||x||^2, so the sqrt form understates the
//     loss (JacobianLoss; TestJacobianLossErratum).
//   - pSGLD's update has drift (eps_t/2) G grad; the paper's line 8 omits the
//     1/2 and samples pi^2 (twice the nominal epsilon at exact sampling).
//   - pSGLD step size StepScale (StepOffset + t)^-tau with StepScale = 1/n by
//     default (the paper's t^-tau moves f by about n in one step and
//     diverges); the zero-initialised squared-gradient average is
//     bias-corrected (Adam style) unless NoBiasCorrection.
//   - A pSGLD epoch is one pass over the data (n/k steps), with at least
//     DefaultMinSteps steps; the paper's epoch is n steps.
//   - Sanitized-EXP targets the minimiser of sum C_v(l), not the MLE: tanh
//     down-weights high-loss records. The gap is 2.7% (flchain), 11.5%
//     (lung), 27% (kidney) in MRE at epsilon -> infinity.
//   - The perturbation methods assume the exact minimiser; Newton stops
//     within roundoff of it. Noise vectors are float64 (Gamma norm as a sum
//     of exponentials, polar-method Gaussian direction), not grid-snapped.
//
// Cox (FitCox): Newton–Raphson with step halving from beta = 0 on centred
// covariates as R's coxph, Efron (default) or Breslow ties, standard errors
// from the inverse information; log partial likelihood at 0 and at the
// estimate. With a projection (random or LP-optimal) each site's rows are
// projected and the model is fitted on the pooled z; the result carries the
// guarantee "none (heuristic)".
//
// Evaluation helpers for the docs: EvaluateMRE (MRE by method and budget,
// the paper's Figure 5), LambdaSweep (Table 2), CoxVsDiscrete (Table 3).
package regression
