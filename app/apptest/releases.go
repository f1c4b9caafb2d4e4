package apptest

import (
	"bytes"
	"encoding/json"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/schemas"
)

// Releases reads a fit topic until every key of want has come, passing
// over the privacy statement. It fails the test on a key outside want and
// on two different releases under one key (a window released twice), and
// returns the releases by key as published and decoded, and how many
// identical copies were read again (redeliveries).
func (r *Reader) Releases(want map[string]bool) (raw map[string][]byte, fits map[string]aggregators.FitMessage, repeats int) {
	t := r.f.T
	t.Helper()
	raw = map[string][]byte{}
	for len(raw) < len(want) {
		for _, m := range r.Next() {
			k := string(m.Key)
			if schemas.IsPatientStatementKey(m.Key) {
				continue // the privacy statement (app/statement_e2e_test.go)
			}
			if !want[k] {
				t.Fatalf("unexpected release key %q", k)
			}
			if prev, ok := raw[k]; ok {
				repeats++
				if !bytes.Equal(prev, m.Value) {
					t.Fatalf("two different releases for %s", k)
				}
				continue
			}
			raw[k] = m.Value
		}
	}
	fits = map[string]aggregators.FitMessage{}
	for k, v := range raw {
		var fit aggregators.FitMessage
		if err := json.Unmarshal(v, &fit); err != nil {
			t.Fatalf("release %s: %v", k, err)
		}
		fits[k] = fit
	}
	return raw, fits, repeats
}
