// Package projection holds the HPPCox covariate projections of paper 003
// (Yu et al. 2008): each site maps a record's covariates x (length d) to
// z = B'x (length m < d) and shares only z, time and event; a Cox model is
// then fitted on the pooled z (regression.FitCox with a projection).
//
//   - Random: B has independent N(0, 1/m) entries (the paper's baseline).
//   - Optimal: A = BB' solves the linear program of mechanisms.md section 6.
//     Each site samples a public number of triplets (i, j, k) of its own
//     records with |t_i - t_j| < |t_i - t_k| and shares only the matrices
//     C_ijk = (x_i-x_k)(x_i-x_k)' - (x_i-x_j)(x_i-x_j)' (SiteConstraints); a
//     coordinator solves min sum xi + lambda sum_l ||A_l||_1 subject to
//     <A, C_ijk> >= 1 - xi, xi >= 0 and diagonal dominance (which makes A
//     positive semidefinite) with gonum's simplex (Optimal), drops the zero
//     rows and columns (feature selection), and takes B = V_m D_m^(1/2) from
//     the eigendecomposition of what remains.
//
// Contract: no projection here is a privacy mechanism. A projection of
// fewer dimensions is not invertible in general, but nothing bounds what
// the shared z (or C_ijk) reveal about a record; every result carries the
// guarantee "none (heuristic)". All randomness (triplet sampling, Gaussian
// entries) comes from the dp.Source passed in.
package projection
