package kafkaconn

import "time"

// SetTokenClock makes the OAuth token source of cfg read the time from now,
// so a test moves the client past a token's refresh point without waiting
// for it.
func SetTokenClock(cfg Config, now func() time.Time) error {
	ts, err := cfg.tokenSource()
	if err != nil {
		return err
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.now = now
	return nil
}
