// Package dp holds the randomness and the exact samplers every private
// mechanism in dpsurv draws from: the Source interface (cryptographic in
// production, seeded only in tests), the keyed PRF that makes per-record noise
// replay-stable, integer samplers (two-sided geometric, clamped geometric,
// randomized response) whose sampled distribution is known exactly, continuous
// noise built from discrete noise, and the exact worst-case privacy loss of
// each mechanism as configured.
//
// Contract: nothing in this package reads math/rand's global source or the
// clock; every draw comes from a Source passed in by the caller.
package dp
