package ledger_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/dpsurv/dpsurv/ledger"
)

// A cumulative window's entry costs 0 as the key's release (post-processing
// of a tree counter charged once) but exposes independently drawn node noise
// when a second lease holder's different value of the same key lands: that
// superseded value is charged at its SupersededEpsilon (review finding 3;
// before, it was charged its Epsilon, 0). The first value stays the release,
// and the charge survives a restart on the memory and file backends.
func TestSupersededCumulativeValueChargedAtHorizonEpsilon(t *testing.T) {
	for _, bc := range localBackends(t) {
		t.Run(bc.name, func(t *testing.T) {
			budget := map[string]float64{"stream": 10}
			scopes := []string{"stream", "aggregate:cum"}
			l1 := open(t, bc.open(t), budget)
			if _, _, err := l1.Charge(testCtx(t), ledger.Entry{Key: "cum/cumulative", Scopes: scopes, Epsilon: 2, Release: []byte(`{"charge":1}`)}); err != nil {
				t.Fatal(err)
			}
			first, replay, err := l1.ReleaseSuperseding(testCtx(t), "cum/60", scopes, 0, 2, constant(`{"draw":"a"}`))
			if err != nil || replay {
				t.Fatalf("release: %v %v", err, replay)
			}
			if got := l1.Spent("stream"); got != 2 {
				t.Fatalf("spent %v after the horizon charge and a cumulative window, want 2", got)
			}
			if err := l1.Close(); err != nil {
				t.Fatal(err)
			}
			// A former lease holder's value of the same window lands late.
			b := bc.open(t)
			if _, err := b.Load(testCtx(t)); err != nil { // positions the file backend at its end
				t.Fatal(err)
			}
			if err := b.Append(testCtx(t), ledger.Entry{Key: "cum/60", Scopes: scopes, Epsilon: 0, SupersededEpsilon: 2, Release: []byte(`{"draw":"b"}`)}); err != nil {
				t.Fatal(err)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			l2 := open(t, bc.open(t), budget)
			t.Cleanup(func() { l2.Close() })
			if got := l2.Spent("stream"); math.Abs(got-4) > 1e-12 {
				t.Fatalf("spent %v with a superseded cumulative value, want 4 (its horizon epsilon charged)", got)
			}
			if got := l2.Spent("aggregate:cum"); math.Abs(got-4) > 1e-12 {
				t.Fatalf("aggregate scope spent %v, want 4", got)
			}
			if v, ok := l2.Lookup("cum/60"); !ok || !bytes.Equal(v, first) {
				t.Fatalf("the release is %s, want the first value %s", v, first)
			}
		})
	}
}
