package km

import (
	"math"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
)

func TestLogRankFromKM(t *testing.T) {
	d := loadKMData(t, "kidney")
	h := d.histogram(t, 1, 600)
	// the release's counts and log-rank are the subject: no interval
	// simulation (it draws from its own stream, after the counts)
	res, err := NoisyHistogramKM(h, dp.NewSeededSource(1), KMOptions{Epsilon: 2, IntervalSims: -1})
	if err != nil {
		t.Fatal(err)
	}
	lr, pw, err := LogRankFromKM(res)
	if err != nil {
		t.Fatal(err)
	}
	k := len(d.labels)
	if len(pw) != k*(k-1)/2 || !(lr.P >= 0 && lr.P <= 1 || math.IsNaN(lr.P)) {
		t.Errorf("%d pairs, p %v", len(pw), lr.P)
	}
	if lr.ChiSq != res.LogRank.ChiSq && !math.IsNaN(lr.ChiSq) {
		t.Errorf("release log-rank %v, recomputed %v", res.LogRank.ChiSq, lr.ChiSq)
	}
	bad := []struct {
		name string
		mod  func(r *KMResult)
	}{
		{"one cohort", func(r *KMResult) { r.Cohorts = r.Cohorts[:1] }},
		{"ragged grid", func(r *KMResult) { r.Cohorts[1].BinNRisk = r.Cohorts[1].BinNRisk[:3] }},
		{"no counts", func(r *KMResult) { r.Cohorts[0].BinNRisk, r.Cohorts[0].BinNEvent = nil, nil }},
		{"events above at risk", func(r *KMResult) {
			r.Cohorts[0].BinNEvent = append([]float64(nil), r.Cohorts[0].BinNEvent...)
			r.Cohorts[0].BinNEvent[0] = r.Cohorts[0].BinNRisk[0] + 1
		}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			r := res
			r.Cohorts = append([]CohortKM(nil), res.Cohorts...)
			tc.mod(&r)
			if _, _, err := LogRankFromKM(r); err == nil {
				t.Fatal("expected an error")
			}
			attachLogRank(&r)
			if len(r.Cohorts) >= 2 && (r.LogRankNote == "" || !math.IsNaN(r.LogRank.P) || r.Pairwise != nil) {
				t.Errorf("a failed test must leave NaN and a note: %+v %q", r.LogRank, r.LogRankNote)
			}
		})
	}
}
