// Package privacy holds no production code. Its tests are the project's
// privacy test suite (issue 11):
//
//   - for every mechanism whose published output space is finite, the
//     worst-case privacy ratio of the value actually published — after every
//     clamp and rounding, from the table the sampler actually uses — is
//     computed by exact enumeration, independently of the mechanism's own
//     loss computation, and checked against the epsilon or loss its release
//     states (TE-Sanitizer with the clamp into [0, time_max], RRR here; the
//     KM trees' noisy node counts in package dpfit,
//     TestHierarchicalKMWorstCaseLoss, which needs the trees' internals);
//   - a source linter fails if floating-point noise (a float uniform, a
//     log of a uniform, a float Gaussian, math/rand) appears outside an
//     explicit allow-list of non-private and evaluation files.
package privacy
