// Package budgetfile records the privacy budget that private fits spend on
// an input file, against the file's fingerprint (SHA-256 of its bytes), and
// refuses a release that would pass the total stated for that input.
//
// The file is JSON, updated atomically (written to a temporary file in the
// same directory, synced, renamed over the old one, directory synced), so a
// crash leaves the old or the new state, never a torn one. Concurrent
// updates (two fits at once, from any process) are serialised by an
// exclusive lock on a companion file, PATH.lock: the lock is taken before
// the file is read and released after it is replaced.
//
// The file holds public bookkeeping only: fingerprints, totals, the
// epsilon of each release, its command and the input's base name. No
// record value, no result.
package budgetfile
