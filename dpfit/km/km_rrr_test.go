package km

import (
	"math"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
)

// rrrHistogram sanitizes d's cohort labels with mech (seeded) and counts the
// records by reported label.
func rrrHistogram(t *testing.T, d kmData, mech *dp.RRR, src dp.Source, bw, tMax float64) *Histogram {
	t.Helper()
	h, err := NewHistogram(bw, tMax, len(d.labels))
	if err != nil {
		t.Fatal(err)
	}
	for i := range d.time {
		if err := h.Add(d.time[i], d.event[i], mech.Sample(d.cohort[i], src.Uint64())); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// newRRR is the RRR mechanism at epsilon over the given number of labels.
func newRRR(t *testing.T, epsilon float64, labels int) *dp.RRR {
	t.Helper()
	mech, err := dp.NewRRR(epsilon, labels)
	if err != nil {
		t.Fatal(err)
	}
	return mech
}

// rrrRelease is RRRKM on d's records with their labels sanitized by mech
// (seeded), binned at width bw over [0, 5400], with its histogram.
func rrrRelease(t *testing.T, d kmData, mech *dp.RRR, seed uint64, bw float64, opts KMOptions) (*Histogram, KMResult) {
	t.Helper()
	h := rrrHistogram(t, d, mech, dp.NewSeededSource(seed), bw, 5400)
	res, err := RRRKM(h, mech, opts)
	if err != nil {
		t.Fatal(err)
	}
	return h, res
}

// Debiased counts are unbiased: over 400 sanitizations the mean debiased
// event total of every cohort is within 4.5 standard errors of the truth
// (false-alarm rate about 3e-5 over 10 cohorts, normal approximation).
func TestRRRDebiasUnbiased(t *testing.T) {
	d := loadKMData(t, "flchain")
	mech := newRRR(t, 1, len(d.labels))
	truth := make([]float64, len(d.labels))
	for i := range d.time {
		if d.event[i] {
			truth[d.cohort[i]]++
		}
	}
	q, a := mech.ReportProb(0, 1), mech.ReportProb(0, 0)-mech.ReportProb(0, 1)
	src := dp.NewSeededSource(11)
	const reps = 400
	sum := make([]float64, len(truth))
	sq := make([]float64, len(truth))
	naive := make([]float64, len(truth))
	for r := 0; r < reps; r++ {
		h := rrrHistogram(t, d, mech, src, 5400, 5400) // one bin
		deb := debiasRRR(h.Events, 1, q, a)
		for c := range truth {
			sum[c] += deb[c][0]
			sq[c] += deb[c][0] * deb[c][0]
			naive[c] += float64(h.Events[c][0])
		}
	}
	for c := range truth {
		m := sum[c] / reps
		se := math.Sqrt((sq[c]/reps - m*m) / reps)
		if math.Abs(m-truth[c]) > 4.5*se {
			t.Errorf("cohort %d: mean debiased events %.2f, truth %v (se %.2f)", c, m, truth[c], se)
		}
		if c == 9 { // the cohort with the most events: the raw counts are pulled to the mixture
			t.Logf("cohort %d: truth %v, debiased %.1f (se %.2f), raw reported %.1f", c, truth[c], m, se, naive[c]/reps)
			if math.Abs(naive[c]/reps-truth[c]) < 10*se {
				t.Errorf("raw reported counts unexpectedly close to the truth")
			}
		}
	}
}

func TestRRRKM(t *testing.T) {
	d := loadKMData(t, "flchain")
	k := len(d.labels)
	t.Run("metadata", func(t *testing.T) {
		mech := newRRR(t, 2, k)
		_, res := rrrRelease(t, d, mech, 1, 30, KMOptions{})
		if res.Guarantee != "local-dp" || res.Epsilon != mech.Epsilon() || res.Method != MethodRRRKM || res.Neighbouring == "" {
			t.Errorf("metadata %q %v %q %q", res.Guarantee, res.Epsilon, res.Method, res.Neighbouring)
		}
		for _, ck := range append(res.Cohorts, res.Overall) {
			checkCurve(t, "rrr", ck)
		}
		// RRR keeps the totals: the pooled curve is the exact binned curve.
		if e := supError(res.Overall.Curve, d.exactBinned(t, -1, 30)); e > 1e-9 {
			t.Errorf("pooled curve off by %v", e)
		}
	})
	t.Run("near-deterministic labels give the exact curves", func(t *testing.T) {
		mech := newRRR(t, 35, k)
		_, res := rrrRelease(t, d, mech, 2, 1, KMOptions{})
		for c := range d.labels {
			sameCurve(t, "cohort", res.Cohorts[c].Curve, d.exact(t, c), 1e-9)
		}
	})
	t.Run("debiasing beats the raw reported labels", func(t *testing.T) {
		mech := newRRR(t, 2, k)
		var debErr, rawErr float64
		for s := uint64(0); s < 5; s++ {
			h, res := rrrRelease(t, d, mech, 100+s, 30, KMOptions{MaxNoiseStdErr: math.Inf(1)})
			raw, err := NoisyHistogramKM(h, nil, KMOptions{Epsilon: math.Inf(1), AllowNonPrivate: true})
			if err != nil {
				t.Fatal(err)
			}
			for c := range d.labels {
				ex := d.exactBinned(t, c, 30)
				// compare up to the time the raw curve reaches
				debErr += supError(res.Cohorts[c].Curve, ex)
				rawErr += supError(raw.Cohorts[c].Curve, ex)
			}
		}
		n := float64(5 * k)
		t.Logf("flchain, RRR epsilon 2: mean sup error debiased %.3f, raw reported labels %.3f", debErr/n, rawErr/n)
		if debErr >= rawErr {
			t.Errorf("debiased (%.3f) not better than raw (%.3f)", debErr/n, rawErr/n)
		}
	})
	t.Run("errors", func(t *testing.T) {
		mech3, _ := dp.NewRRR(1, 3)
		h := d.histogram(t, 30, 5400)
		if _, err := RRRKM(h, mech3, KMOptions{}); err == nil {
			t.Error("label count mismatch: expected an error")
		}
		if _, err := RRRKM(h, nil, KMOptions{}); err == nil {
			t.Error("nil mechanism: expected an error")
		}
	})
}
