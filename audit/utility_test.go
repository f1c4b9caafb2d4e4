package audit

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/audit/audittest"
	"github.com/dpsurv/dpsurv/dp"
)

func TestWasserstein1(t *testing.T) {
	cases := []struct {
		name string
		a, b []int64
		want float64
	}{
		{"identical", []int64{3, 1, 2}, []int64{1, 2, 3}, 0},
		{"shift by 3", []int64{0, 5, 9}, []int64{3, 8, 12}, 3},
		{"sizes differ, same distribution", []int64{0, 10}, []int64{0, 0, 10, 10}, 0},
		{"point vs two points", []int64{0}, []int64{0, 2}, 1},
		// quantile functions: a = 0 on (0,1/2], 4 on (1/2,1]; b = 1 on
		// (0,1/3], 2 on (1/3,2/3], 6 on (2/3,1]:
		// 1/3*1 + 1/6*2 + 1/6*2 + 1/3*2 = 5/3
		{"by hand", []int64{0, 4}, []int64{1, 2, 6}, 5.0 / 3},
		{"empty", nil, []int64{1}, math.NaN()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := wasserstein1(tc.a, tc.b); !near(got, tc.want, 1e-12) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestKLDivergence(t *testing.T) {
	// Two bins of width 5 on [0, 9]; a = {1, 2, 7} -> counts (2, 1),
	// b = {8} -> (0, 1); alpha 0.5: P = (2.5, 1.5)/4, Q = (0.5, 1.5)/2.
	p0, p1, q0, q1 := 2.5/4, 1.5/4, 0.5/2, 1.5/2
	want := p0*math.Log(p0/q0) + p1*math.Log(p1/q1)
	cases := []struct {
		name string
		a, b []int64
		w    int64
		want float64
	}{
		{"by hand", []int64{1, 2, 7}, []int64{8}, 5, want},
		{"identical", []int64{1, 2, 7}, []int64{7, 2, 1}, 1, 0},
		{"same shape, other size", []int64{1, 7}, []int64{1, 1, 7, 7}, 5, 0},
		{"empty", []int64{1}, nil, 1, math.NaN()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := klDivergence(tc.a, tc.b, tc.w, 9, 0.5); !near(got, tc.want, 1e-12) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	// Losing records (suppression) costs more than moving them a little.
	orig := []int64{1, 2, 3, 4, 5, 6, 7, 8}
	if lost, moved := klDivergence(orig, orig[:4], 1, 9, 0.5), klDivergence(orig, []int64{2, 3, 4, 5, 6, 7, 8, 9}, 1, 9, 0.5); !(lost > moved) {
		t.Errorf("KL lost %v <= moved %v", lost, moved)
	}
}

// Known shift: every sanitized time is the original + 5. MAE is 5 per
// cohort and pooled; the KM medians shift by exactly 5; the log-rank
// statistic of identical data is 0, of the shifted data positive and small.
func TestMeasureKnownShift(t *testing.T) {
	labels := []string{"a", "b"}
	var times, shifted []int64
	var coh []int
	for i := range 200 {
		times = append(times, int64(10+i))
		shifted = append(shifted, int64(15+i))
		coh = append(coh, i%2)
	}
	orig := makeData(labels, times, coh)
	same, err := Measure(orig, orig, UtilityOptions{})
	if err != nil {
		t.Fatal(err)
	}
	moved, err := Measure(orig, makeData(labels, shifted, coh), UtilityOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if same.KL != 0 || same.MAE != 0 {
		t.Errorf("identical data: KL %v, MAE %v", same.KL, same.MAE)
	}
	if !near(moved.MAE, 5, 1e-12) {
		t.Errorf("pooled MAE %v, want 5", moved.MAE)
	}
	for c := range labels {
		s, m := same.Cohorts[c], moved.Cohorts[c]
		if s.LogRank.ChiSq > 1e-12 || s.MedianShift != 0 || s.NOriginal != 100 || s.NSanitized != 100 {
			t.Errorf("cohort %d identical: %+v", c, s)
		}
		if !near(m.MAE, 5, 1e-12) || !near(m.MedianShift, 5, 1e-12) {
			t.Errorf("cohort %d: MAE %v, median shift %v, want 5 and 5", c, m.MAE, m.MedianShift)
		}
		if !(m.LogRank.ChiSq > 0 && m.LogRank.P > 0.05) || m.LogRank.DF != 1 {
			t.Errorf("cohort %d: log-rank %+v", c, m.LogRank)
		}
		if !(m.KL > 0) {
			t.Errorf("cohort %d: KL %v", c, m.KL)
		}
	}
}

// A cohort missing from the sanitized data gets NaN measures (null in
// JSON), not zeros.
func TestMeasureVanishedCohort(t *testing.T) {
	labels := []string{"a", "b"}
	orig := makeData(labels, []int64{1, 2, 3, 4}, []int{0, 0, 1, 1})
	san := makeData(labels, []int64{1, 2}, []int{0, 0})
	u, err := Measure(orig, san, UtilityOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := u.Cohorts[1]
	if !math.IsNaN(c.KL) || !math.IsNaN(c.MAE) || !math.IsNaN(c.LogRank.ChiSq) || !math.IsNaN(c.MedianSanitized) || c.NSanitized != 0 {
		t.Errorf("vanished cohort: %+v", c)
	}
	if _, err := Measure(orig, san, UtilityOptions{KLBin: -1}); err == nil {
		t.Error("negative kl bin accepted")
	}
}

// With the key, the auditor joins records and the per-record MAE is the
// mean |noise| of the sanitizer (checked against the pmf's mean |D| =
// sum |d| p(d), 3000 records, tolerance 5 standard errors).
func TestPerRecordMAEWithKey(t *testing.T) {
	labels := []string{"a", "b"}
	var times []int64
	var coh []int
	for i := range 3000 {
		times = append(times, int64(100+i%500))
		coh = append(coh, i%2)
	}
	orig := makeData(labels, times, coh)
	san := sanitizeTE(t, orig, 0.3, 10, 1000, testKey)
	ids := make([]string, orig.Len())
	for i := range ids {
		ids[i] = "p" + itoa(i)
	}
	orig.ID = ids
	ps, err := Pseudonyms(testKey, ids)
	if err != nil {
		t.Fatal(err)
	}
	mae, n, err := PerRecordMAE(orig, ps, san)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3000 {
		t.Fatalf("joined %d of 3000", n)
	}
	mean, sq := 0.0, 0.0
	for d, p := range dp.TEPMF(0.3, 10) {
		a := math.Abs(float64(d - 10))
		mean += a * p
		sq += a * a * p
	}
	se := math.Sqrt((sq - mean*mean) / 3000)
	if math.Abs(mae-mean) > 5*se {
		t.Errorf("per-record MAE %v, want %v ± %v", mae, mean, 5*se)
	}
	// A wrong key joins nothing.
	wrong, err := Pseudonyms([]byte("another key, 32 bytes long......"), ids)
	if err != nil {
		t.Fatal(err)
	}
	if _, n, _ := PerRecordMAE(orig, wrong, san); n != 0 {
		t.Errorf("wrong key joined %d records", n)
	}
}

func itoa(i int) string {
	var b []byte
	if i == 0 {
		return "0"
	}
	for i > 0 {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
	}
	return string(b)
}

// The report has the JSON shape of the issue, with null for undefined
// values, and the text form names every cohort.
func TestReportJSONAndText(t *testing.T) {
	labels := []string{"early", "late"}
	orig := interleaved(labels, 400)
	san := sanitizeTE(t, orig, 0.5, 10, 500, testKey)
	k := teKernel(t, 0.5, 10, 500)
	if _, err := Run(orig, san, Config{Kernel: k, Attack: AttackOptions{Resamples: 20}, Key: testKey}, dp.NewSeededSource(5)); err == nil {
		t.Fatal("a key without original ids must fail (nothing to join)")
	}
	orig.ID = make([]string, orig.Len())
	for i := range orig.ID {
		orig.ID[i] = "p" + itoa(i)
	}
	rep, err := Run(orig, san, Config{Kernel: k, Attack: AttackOptions{Resamples: 20}, Key: testKey}, dp.NewSeededSource(5))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	got := audittest.Decode(t, buf.Bytes())
	for _, l := range labels {
		if got.Attack.Precision[l] == nil || got.Attack.PrecisionNonPrivate[l] == nil || got.Utility.LogRank[l] == nil {
			t.Errorf("cohort %s missing in %s", l, buf.String())
		}
	}
	if got.Utility.KL == nil || got.Utility.MAE == nil || got.Utility.MAEPerRecord == nil || got.Utility.Joined == nil || *got.Utility.Joined != 400 {
		t.Errorf("utility incomplete: %s", buf.String())
	}
	if *got.Attack.PrecisionNonPrivate["early"] != 1 {
		t.Errorf("non-private precision %v, want 1", *got.Attack.PrecisionNonPrivate["early"])
	}
	// NaN encodes as null.
	b, err := json.Marshal(map[string]Num{"x": Num(math.NaN()), "y": Num(math.Inf(1)), "z": 0.5})
	if err != nil || string(b) != `{"x":null,"y":null,"z":0.5}` {
		t.Errorf("Num encoding: %s, %v", b, err)
	}
	buf.Reset()
	if err := rep.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"early", "late", "te-sanitizer(epsilon=0.5, window=10)", "non-private", "log-rank", "per-record MAE"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, buf.String())
		}
	}
}
