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
//   - MethodOutput: Ext-Out-Pert (Algorithm 1), guarantee "pure-dp
//     conditional on certification" (GuaranteePureDPCertified).
//   - MethodObjective: Ext-Obj-Pert (Algorithm 2), GuaranteeObjective
//     ("approximate (objective perturbation: ...)"; see below).
//   - MethodPSGLD: Sanitized-EXP sampled by pSGLD (Algorithms 3–4),
//     "approximate (mcmc)": exact only if the sampling were exact.
//   - MethodNewton (noisynewton.go; the default of the CLI and the
//     stream): noisy Newton on per-record clipped score and Hessian sums
//     released by blocks with lattice Laplace noise, pure epsilon-DP, no
//     ridge; Wald limits of every coefficient, z, p and exp(beta) with
//     limits; any link.
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
// MethodMLE. Releases state epsilon, the neighbouring relation
// (replace-one, bounded DP) and the guarantee. All three methods' sensitivities
// are functions of the record count n, so n is public: it is released
// exactly, listed in the release's "public" list (PublicDiscrete) with the
// configuration, and no budget is spent on it; every mechanism parameter
// (noise scale and grid, Delta, epsilon', pSGLD's v and step sizes) is a
// function of those public values. The log-likelihood is reported on the
// non-private path only. Every random draw comes from the dp.Source passed
// in.
//
// Noise (LatticeNoise). Every noise value is sampled exactly on a public
// grid (dp.DiscreteLaplace; no log(u), no float Gaussian):
//   - Ext-Out-Pert releases round_g(f) + g Z per coordinate, Z discrete
//     Laplace with scale (sqrt(d) t' + d g)/epsilon: t' is Lemma 4.3's L2
//     sensitivity t plus 2 CertificateTolerance/Lambda (the computed
//     minimiser is certified within CertificateTolerance/Lambda of the
//     exact one), sqrt(d) t' bounds its L1 sensitivity, d g the rounding to
//     the grid g (a power of two near 2^-20 of the scale). This is exactly
//     epsilon-DP for the values published (TestOutputNoiseWorstCaseRatio).
//     It replaces the paper's K-norm noise (Gamma(d) norm times a uniform
//     direction), which needs continuous sampling; the expected noise norm
//     grows by about sqrt(2).
//   - Ext-Obj-Pert's b is per-coordinate discrete Laplace on a fine grid
//     with the L1 scale sqrt(d) t/epsilon'. Objective perturbation's proof
//     needs continuous noise (it maps b one-to-one onto the output; for a
//     lattice b a neighbour's pre-image is off the lattice), so the method
//     is labelled GuaranteeObjective, not pure-dp.
//   - pSGLD's Langevin noise is an exact discrete Gaussian on a power-of-
//     two grid near 2^-10 of its standard deviation (dp.GaussianOnGrid);
//     its guarantee stays "approximate (mcmc)" (the chain is not run to
//     exact convergence), but no float Gaussian or log(u) is left on the
//     path.
//
// Intervals (hessian.go, inference.go; issue 12). With IntervalFraction
// phi > 0 (logit or cloglog link; cloglog through the bounded-influence
// loss of cloglog_huber.go) the coefficients get (1 - phi) epsilon and the rest
// buys the interval release: three noisy mean Hessians of the loss at
// points computed from the released values (lattice Laplace, replace-one
// L1 sensitivity at a fixed point: HessianL1Sensitivity). From the release
// alone CoefficientIntervals de-biases the ridge estimate through the last
// Hessian and builds 95% intervals of the TRUE coefficients by a seeded
// parametric bootstrap (sampling error, ridge bias, the mechanism's and
// the Hessian's noise). Ext-Out-Pert also keeps NoiseOnlyIntervals
// (released ± the noise quantile; they cover the ridge minimiser, not the
// truth), labelled noise_only_*.
//
// Failures are never retried with fresh noise. A perturbation fit whose
// minimiser misses the gradient certificate, or a pSGLD chain that
// diverges, is released as the fixed fallback: zero plus Ext-Out-Pert
// noise at the same n, lambda and epsilon, "fallback": true, charged like
// any release (retrying until success would publish a value conditioned on
// success). The objectives are strongly convex and Newton converges
// quadratically, so the fallback is not expected on valid data; whether it
// occurs is a function of the data (and, for objective perturbation and
// pSGLD, of the noise), which the exact analysis of output perturbation
// assumes away (TestDiscreteFailureFallback forces it).
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
//     within roundoff of it, and the result must pass the gradient
//     certificate (see Noise above).
//
// Cox (FitCox): Newton–Raphson with step halving from beta = 0 on centred
// covariates as R's coxph, Efron (default) or Breslow ties, standard errors
// from the inverse information; log partial likelihood at 0 and at the
// estimate. With a projection (random or LP-optimal) each site's rows are
// projected and the model is fitted on the pooled z; the result carries the
// guarantee "none (heuristic)". Cost: one radix sort of the times, then
// two linear passes per Newton step (linear predictors; one exp per row
// summed into the risk set); the Efron terms of a run of tied times enter
// through five scalar sums, O(p²) per distinct time.
//
// Evaluation helpers for the docs: EvaluateMRE (MRE by method and budget,
// the paper's Figure 5), LambdaSweep (Table 2), CoxVsDiscrete (Table 3).
package regression
