package ledger

// Validate checks an entry read from a backend: a non-empty key, a finite
// epsilon >= 0, and at least one scope, none empty. Backends outside this
// package (kafkaledger) call it on every entry they load.
func (e Entry) Validate() error { return e.validate() }
