package dpfit

import (
	"math"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
)

func TestLNTEMetadataAndInvariants(t *testing.T) {
	d := loadKMData(t, "lung")
	h := d.histogram(t, 5, 1100)
	for seed := uint64(0); seed < 20; seed++ {
		eps := []float64{0.5, 1, 3}[seed%3]
		res, err := LNTE(h, dp.NewSeededSource(seed), KMOptions{LogRankSims: -1, IntervalSims: -1, Epsilon: eps})
		if err != nil {
			t.Fatal(err)
		}
		if res.Guarantee != "pure-dp (per time point)" || res.Epsilon != eps || res.EpsilonTotal != eps*float64(h.Bins) ||
			res.Neighbouring != "replace-one" || res.Method != MethodLNTE {
			t.Fatalf("metadata: %q eps %v total %v (bins %d) %q", res.Guarantee, res.Epsilon, res.EpsilonTotal, h.Bins, res.Neighbouring)
		}
		for _, ck := range append(res.Cohorts, res.Overall) {
			checkCurve(t, "lnte", ck)
		}
	}
	for _, bad := range []KMOptions{{Epsilon: 0}, {Epsilon: math.Inf(1), AllowNonPrivate: true}, {Epsilon: 1, Conf: 2}} {
		if _, err := LNTE(h, dp.NewSeededSource(1), bad); err == nil {
			t.Errorf("options %+v: expected an error", bad)
		}
	}
	if _, err := LNTE(h, nil, KMOptions{LogRankSims: -1, IntervalSims: -1, Epsilon: 1}); err == nil {
		t.Error("nil source: expected an error")
	}
}

// With negligible noise LNTE is the exact KM; at the papers' budgets its
// clamping collapses the curves (paper 004, Table 2), far below the
// noisy-histogram KM at the same nominal epsilon — which LNTE spends per
// time point.
func TestLNTEBaseline(t *testing.T) {
	d := loadKMData(t, "flchain")
	h := d.histogram(t, 30, 5400)
	res, err := LNTE(h, dp.NewSeededSource(3), KMOptions{LogRankSims: -1, IntervalSims: -1, Epsilon: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	for c := range d.labels {
		if e := supError(res.Cohorts[c].Curve, d.exactBinned(t, c, 30)); e > 1e-6 {
			t.Errorf("cohort %d: LNTE with epsilon 1e9 is off by %v", c, e)
		}
	}
	var lnteErr, histErr float64
	for s := uint64(0); s < 5; s++ {
		l, err := LNTE(h, dp.NewSeededSource(10+s), KMOptions{LogRankSims: -1, IntervalSims: -1, Epsilon: 1})
		if err != nil {
			t.Fatal(err)
		}
		n, err := NoisyHistogramKM(h, dp.NewSeededSource(10+s), KMOptions{LogRankSims: -1, IntervalSims: -1, Epsilon: 1})
		if err != nil {
			t.Fatal(err)
		}
		for c := range d.labels {
			ex := d.exactBinned(t, c, 30)
			lnteErr += supError(l.Cohorts[c].Curve, ex)
			histErr += supError(n.Cohorts[c].Curve, ex)
		}
	}
	k := float64(5 * len(d.labels))
	t.Logf("flchain, epsilon 1, bin 30: mean sup error LNTE %.3f, noisy-histogram %.3f", lnteErr/k, histErr/k)
	if lnteErr < 2*histErr {
		t.Errorf("LNTE (%.3f) expected far worse than the noisy-histogram KM (%.3f)", lnteErr/k, histErr/k)
	}
}
