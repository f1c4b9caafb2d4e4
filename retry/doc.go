// Package retry is the one exponential backoff of the service: every loop
// that retries an operation (a source read, a sink write, an offset
// commit, the first broker connection) waits with a Backoff.
//
// Contract:
//   - Next returns Min, then doubles on every call up to Max; Reset starts
//     again at Min. A zero Min is 100 ms; a Max below Min is Min.
//   - Wait sleeps Next() unless ctx ends first; it reports whether the
//     full delay elapsed (false: ctx is done).
//   - A Backoff is not safe for concurrent use; each loop owns its own.
package retry
