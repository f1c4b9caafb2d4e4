package inference

import (
	"testing"

	"github.com/dpsurv/dpsurv/internal/datasets"
)

func flchain(t testing.TB) Data {
	t.Helper()
	d, err := Load(datasets.Path(t, "flchain_tte.csv"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestTmpKM(t *testing.T) {
	d := flchain(t)
	for _, eps := range []float64{0.5, 1, 2} {
		r, err := RunKM(d, KMConfig{Epsilon: eps, TimeMax: 5400, Checkpoints: []float64{365, 730, 1826}, Reps: 60, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range r.Points {
			t.Logf("eps %v t %v: reported %d/%d cov %.3f samp %.3f np %.3f", eps, p.Time, p.Reported, p.Intervals, p.Coverage(), p.SamplingCoverage(), p.NonPrivateCoverage())
		}
		t.Logf("median %+v", r.Median)
	}
}
