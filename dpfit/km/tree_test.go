package km

import (
	"encoding"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
)

func TestTreeCounterLevelsAndScale(t *testing.T) {
	tests := []struct {
		horizon, levels int
	}{{1, 1}, {2, 2}, {3, 2}, {4, 3}, {7, 3}, {8, 4}, {16, 5}, {1000, 10}, {1024, 11}}
	for _, tc := range tests {
		c, err := NewTreeCounter(tc.horizon, 3, 2, 0.5)
		if err != nil {
			t.Fatal(err)
		}
		if c.Levels() != tc.levels {
			t.Errorf("horizon %d: %d levels, want %d (= floor(log2 T) + 1)", tc.horizon, c.Levels(), tc.levels)
		}
		if want := float64(tc.levels) * 2 / 0.5; c.NodeScale() != want {
			t.Errorf("horizon %d: node scale %v, want levels x sensitivity / epsilon = %v", tc.horizon, c.NodeScale(), want)
		}
	}
}

// Without noise the counter releases the exact prefix sums, whatever the
// increments; every step touches one node per level.
func TestTreeCounterExactPrefix(t *testing.T) {
	const horizon, cells = 37, 5
	c, err := NewTreeCounter(horizon, cells, 1, 1e9) // node noise is 0 with overwhelming probability
	if err != nil {
		t.Fatal(err)
	}
	src := dp.NewSeededSource(3)
	sum := make([]int64, cells)
	for step := 1; step <= horizon; step++ {
		inc := make([]int64, cells)
		for k := range inc {
			inc[k] = int64(dp.Uint64n(src, 20)) - 5
			sum[k] += inc[k]
		}
		if err := c.Step(src, inc); err != nil {
			t.Fatal(err)
		}
		got := c.Prefix(nil)
		for k := range sum {
			if got[k] != sum[k] {
				t.Fatalf("step %d cell %d: prefix %d, want %d", step, k, got[k], sum[k])
			}
		}
	}
	if err := c.Step(src, make([]int64, cells)); !errors.Is(err, ErrHorizonReached) {
		t.Errorf("step beyond the horizon: %v, want ErrHorizonReached", err)
	}
}

// The released error at step t is the sum of popcount(t) independent node
// noises: its variance is popcount(t) * 2a/(1-a)^2 with a = exp(-1/scale).
// Over 4000 cells, each step's sample variance is within 5 standard errors
// of that (relative SE sqrt((kurtosis-1)/n) <= sqrt(5/4000), kurtosis <= 6;
// false-alarm rate about 1e-5 over the 16 steps, normal approximation), the
// mean within 5 standard errors of 0, and variances of steps 8 and 15 (1 and
// 4 nodes) differ as predicted, so a counter that redrew or pooled noise
// differently would fail.
func TestTreeCounterErrorVariance(t *testing.T) {
	const horizon, cells = 16, 4000
	c, err := NewTreeCounter(horizon, cells, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	v := discreteLaplaceVariance(c.NodeScale())
	src := dp.NewSeededSource(21)
	zero := make([]int64, cells)
	for step := 1; step <= horizon; step++ {
		if err := c.Step(src, zero); err != nil {
			t.Fatal(err)
		}
		p := c.Prefix(nil)
		var s, s2 float64
		for _, x := range p {
			s += float64(x)
			s2 += float64(x) * float64(x)
		}
		mean := s / cells
		sv := s2/cells - mean*mean
		want := float64(bits.OnesCount(uint(step))) * v
		if c.NoiseVariance() != want {
			t.Errorf("step %d: NoiseVariance %v, want %v", step, c.NoiseVariance(), want)
		}
		relSE := math.Sqrt(5.0 / cells)
		if math.Abs(sv/want-1) > 5*relSE {
			t.Errorf("step %d: error variance %.1f, theory %.1f (ratio %.3f)", step, sv, want, sv/want)
		}
		if math.Abs(mean) > 5*math.Sqrt(want/cells) {
			t.Errorf("step %d: mean error %.2f", step, mean)
		}
		if step == 8 || step == 15 {
			t.Logf("step %d (%d nodes): error variance %.1f, theory %.1f", step, bits.OnesCount(uint(step)), sv, want)
		}
	}
}

// Serialise and restore: the restored counter releases the same values
// (noise is stored, not redrawn), and continuing both with the same
// randomness gives identical releases.
func TestTreeCounterSerialisation(t *testing.T) {
	const horizon, cells = 20, 7
	orig, err := NewTreeCounter(horizon, cells, 2, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	src := dp.NewSeededSource(5)
	inc := func(step int) []int64 {
		out := make([]int64, cells)
		for k := range out {
			out[k] = int64((step*7 + k*3) % 5)
		}
		return out
	}
	for step := 1; step <= 7; step++ {
		if err := orig.Step(src, inc(step)); err != nil {
			t.Fatal(err)
		}
	}
	before := orig.Prefix(nil)
	restored := roundTrip[TreeCounter](t, orig)
	after := restored.Prefix(nil)
	for k := range before {
		if before[k] != after[k] {
			t.Fatalf("cell %d: %d before, %d after restore", k, before[k], after[k])
		}
	}
	if restored.Steps() != 7 || restored.Horizon() != horizon || restored.Cells() != cells || restored.Epsilon() != 0.8 {
		t.Fatalf("restored header: steps %d horizon %d cells %d eps %v", restored.Steps(), restored.Horizon(), restored.Cells(), restored.Epsilon())
	}
	srcA, srcB := dp.NewSeededSource(99), dp.NewSeededSource(99)
	for step := 8; step <= horizon; step++ {
		if err := orig.Step(srcA, inc(step)); err != nil {
			t.Fatal(err)
		}
		if err := restored.Step(srcB, inc(step)); err != nil {
			t.Fatal(err)
		}
		a, b := orig.Prefix(nil), restored.Prefix(nil)
		for k := range a {
			if a[k] != b[k] {
				t.Fatalf("step %d cell %d: original %d, restored %d", step, k, a[k], b[k])
			}
		}
	}
	// The noise is part of the state: a fresh counter fed the same data with
	// other randomness releases different values at step 7.
	other, _ := NewTreeCounter(horizon, cells, 2, 0.8)
	osrc := dp.NewSeededSource(6)
	for step := 1; step <= 7; step++ {
		if err := other.Step(osrc, inc(step)); err != nil {
			t.Fatal(err)
		}
	}
	same := true
	for k, x := range other.Prefix(nil) {
		same = same && x == before[k]
	}
	if same {
		t.Error("different randomness gave identical releases")
	}
}

func TestTreeCounterRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		horizon, cells       int
		sensitivity, epsilon float64
	}{
		{"zero horizon", 0, 1, 1, 1}, {"zero cells", 4, 0, 1, 1}, {"zero epsilon", 4, 1, 1, 0},
		{"Inf epsilon", 4, 1, 1, math.Inf(1)}, {"NaN sensitivity", 4, 1, math.NaN(), 1},
		{"negative sensitivity", 4, 1, -1, 1}, {"scale too large", 4, 1, 1, 1e-12},
		{"too many cells", 1 << 20, 1 << 24, 1, 1},
	} {
		if _, err := NewTreeCounter(tc.horizon, tc.cells, tc.sensitivity, tc.epsilon); err == nil {
			t.Errorf("%s: expected an error", tc.name)
		}
	}
	c, err := NewTreeCounter(4, 3, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Step(dp.NewSeededSource(1), []int64{1, 2}); err == nil {
		t.Error("wrong increment length: expected an error")
	}
	if err := c.Step(nil, []int64{1, 2, 3}); err == nil {
		t.Error("nil source: expected an error")
	}
	if c.Steps() != 0 {
		t.Errorf("a rejected step was counted")
	}
	if err := c.Step(dp.NewSeededSource(1), []int64{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	blob, _ := c.MarshalBinary()
	corrupt := map[string][]byte{
		"empty":       nil,
		"bad magic":   append([]byte("XXTREE01"), blob[8:]...),
		"truncated":   blob[:len(blob)-3],
		"trailing":    append(append([]byte(nil), blob...), 0, 0),
		"header only": blob[:12],
	}
	for name, b := range corrupt {
		var r TreeCounter
		if err := r.UnmarshalBinary(b); err == nil {
			t.Errorf("%s: expected a decode error", name)
		}
	}
	// huge declared size with little data must fail before allocating
	huge := []byte(treeMagic)
	for _, v := range []uint64{1 << 30, 1 << 30, math.Float64bits(1), math.Float64bits(1), 0} {
		huge = appendUvarint(huge, v)
	}
	var r TreeCounter
	if err := r.UnmarshalBinary(huge); err == nil {
		t.Error("huge declared size: expected an error")
	}
}

func appendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// Continual release: with negligible noise every cumulative release equals
// the exact KM of the windows so far; a restored release re-publishes the
// same curves and continues identically.
func TestContinualKM(t *testing.T) {
	d := loadKMData(t, "lung")
	const windows = 6
	ck, err := NewContinualKM(1, 1100, len(d.labels), windows, KMOptions{LogRankSims: -1, IntervalSims: -1, Epsilon: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	src := dp.NewSeededSource(4)
	for w := 0; w < windows; w++ {
		win, err := ck.NewWindow()
		if err != nil {
			t.Fatal(err)
		}
		var sub kmData
		sub.labels = d.labels
		for i := range d.time {
			if i%windows <= w { // cumulative data after window w
				sub.time = append(sub.time, d.time[i])
				sub.event = append(sub.event, d.event[i])
				sub.cohort = append(sub.cohort, d.cohort[i])
			}
			if i%windows == w {
				if err := win.Add(d.time[i], d.event[i], d.cohort[i]); err != nil {
					t.Fatal(err)
				}
			}
		}
		res, err := ck.Release(src, win)
		if err != nil {
			t.Fatal(err)
		}
		if res.Guarantee != GuaranteePureDP || res.Method != MethodTreeKM || res.EpsilonTotal != 1e9 {
			t.Fatalf("metadata %q %q %v", res.Guarantee, res.Method, res.EpsilonTotal)
		}
		for c := range d.labels {
			sameCurve(t, fmt.Sprintf("window %d cohort %d", w, c), res.Cohorts[c].Curve, sub.exact(t, c), 1e-9)
		}
	}
	win, _ := ck.NewWindow()
	if _, err := ck.Release(src, win); !errors.Is(err, ErrHorizonReached) {
		t.Errorf("release beyond the horizon: %v", err)
	}
}

func TestContinualKMRestore(t *testing.T) {
	d := loadKMData(t, "flchain")
	const windows = 8
	orig, err := NewContinualKM(30, 5400, len(d.labels), windows, KMOptions{LogRankSims: -1, IntervalSims: -1, Epsilon: 2})
	if err != nil {
		t.Fatal(err)
	}
	window := func(w int) *Histogram {
		h, err := orig.NewWindow()
		if err != nil {
			t.Fatal(err)
		}
		for i := range d.time {
			if i%windows == w {
				if err := h.Add(d.time[i], d.event[i], d.cohort[i]); err != nil {
					t.Fatal(err)
				}
			}
		}
		return h
	}
	src := dp.NewSeededSource(8)
	var last KMResult
	for w := 0; w < 3; w++ {
		if last, err = orig.Release(src, window(w)); err != nil {
			t.Fatal(err)
		}
		for _, c := range append(last.Cohorts, last.Overall) {
			checkCurve(t, "continual", c)
		}
	}
	restored := roundTrip[ContinualKM](t, orig)
	again, err := restored.Current()
	if err != nil {
		t.Fatal(err)
	}
	for c := range last.Cohorts {
		sameCurve(t, "restored", again.Cohorts[c].Curve, last.Cohorts[c].Curve, 0)
	}
	if again.Mechanism != last.Mechanism || restored.Releases() != 3 || restored.Horizon() != windows {
		t.Errorf("restored state: %q vs %q, %d releases", again.Mechanism, last.Mechanism, restored.Releases())
	}
	a, b := dp.NewSeededSource(50), dp.NewSeededSource(50)
	for w := 3; w < windows; w++ {
		ra, err := orig.Release(a, window(w))
		if err != nil {
			t.Fatal(err)
		}
		rb, err := restored.Release(b, window(w))
		if err != nil {
			t.Fatal(err)
		}
		for c := range ra.Cohorts {
			sameCurve(t, fmt.Sprintf("window %d", w), rb.Cohorts[c].Curve, ra.Cohorts[c].Curve, 0)
		}
	}
	blob, err := orig.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var bad ContinualKM
	if err := bad.UnmarshalBinary(blob[:len(blob)-1]); err == nil {
		t.Error("truncated state: expected an error")
	}
	if _, err := (&ContinualKM{counter: mustTree(t)}).Current(); err == nil {
		t.Error("Current before any release: expected an error")
	}
	other, _ := NewHistogram(10, 5400, len(d.labels))
	if _, err := orig.Release(src, other); err == nil {
		t.Error("window with another layout: expected an error")
	}
	if _, err := NewContinualKM(1, 100, 2, 4, KMOptions{LogRankSims: -1, IntervalSims: -1, Epsilon: math.Inf(1), AllowNonPrivate: true}); err == nil {
		t.Error("continual release needs a finite epsilon")
	}
}

func mustTree(t *testing.T) *TreeCounter {
	t.Helper()
	c, err := NewTreeCounter(2, 1, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// roundTrip is orig marshalled and unmarshalled into a new T.
func roundTrip[T any, P interface {
	*T
	encoding.BinaryUnmarshaler
}](t *testing.T, orig encoding.BinaryMarshaler) *T {
	t.Helper()
	blob, err := orig.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	restored := new(T)
	if err := P(restored).UnmarshalBinary(blob); err != nil {
		t.Fatal(err)
	}
	return restored
}
