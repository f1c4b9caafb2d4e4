// Package sanitizers holds the per-record local mechanisms applied to
// validated Arrow batches in flight: TE-Sanitizer on the time, revised
// randomized response on the cohort label, a keyed pseudonym for the id, and
// the default-deny projection onto the sanitized schema. Every draw comes from
// a keyed PRF of (key, record id, field, mechanism version, input value), so a
// record sanitizes to the same output every time under the same key.
package sanitizers
