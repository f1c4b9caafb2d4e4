package regression

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/internal/testtier"
	"github.com/dpsurv/dpsurv/synth"
)

// newtonWorld is the study world of docs/inference.md (synth.DiscreteWorld,
// as cmd/dpsurv-eval/inference draws it): q = 200 intervals, a constant
// baseline (logit or cloglog -3), x uniform in [-0.707, 0.707]^2,
// beta = (1, -1), censoring uniform on the intervals.
func newtonWorld(src rand.Source, n int, link Link) Data {
	w := synth.DiscreteWorld{Intervals: DefaultIntervals, Baseline: -3, Beta: []float64{1, -1}, Cloglog: link == LinkCloglog}
	time, event, x := w.Draw(src, n)
	return Data{Time: time, Event: event, X: x}
}

// mleWaldSE returns the MLE and its Wald standard errors (inverse observed
// information).
func mleWaldSE(t *testing.T, d Data, link Link) (DiscreteResult, []float64) {
	t.Helper()
	mle, se, err := studyMLE(d, link)
	if err != nil {
		t.Fatal(err)
	}
	return mle, se
}

// studyMLE is mleWaldSE without t (for the study's workers).
func studyMLE(d Data, link Link) (DiscreteResult, []float64, error) {
	opts := DiscreteOptions{Method: MethodMLE, Link: link, TimeMax: 1}
	mle, err := FitDiscrete(d, opts, nil)
	if err != nil {
		return DiscreteResult{}, nil, err
	}
	f := append(append([]float64{}, mle.Alpha...), mle.Beta...)
	info, err := MeanInformation(d, opts, f)
	if err != nil {
		return DiscreteResult{}, nil, err
	}
	k := len(f)
	var inv mat.Dense
	if err := inv.Inverse(mat.NewDense(k, k, info)); err != nil {
		return DiscreteResult{}, nil, err
	}
	se := make([]float64, k)
	for j := range se {
		se[j] = math.Sqrt(inv.At(j, j) / float64(d.Len()))
	}
	return mle, se, nil
}

// TestNewtonReproducesMLE: with a negligible noise (epsilon 1e6) the
// noisy Newton iterate is the MLE and its standard errors the Wald ones.
func TestNewtonReproducesMLE(t *testing.T) {
	t.Parallel()
	for _, link := range []Link{LinkLogit, LinkCloglog} {
		d := newtonWorld(rand.NewPCG(3, 7), 20000, link)
		mle, se := mleWaldSE(t, d, link)
		res, err := FitDiscrete(d, DiscreteOptions{Method: MethodNewton, Link: link, Epsilon: 1e6, TimeMax: 1}, dp.NewSeededSource(5))
		if err != nil {
			t.Fatal(err)
		}
		for j := range mle.Beta {
			if math.Abs(res.Beta[j]-mle.Beta[j]) > 0.1*se[3+j] {
				t.Errorf("%s: beta[%d] = %v, MLE %v (se %v)", link, j, res.Beta[j], mle.Beta[j], se[3+j])
			}
			if r := res.BetaSE[j] / se[3+j]; math.Abs(r-1) > 0.02 {
				t.Errorf("%s: beta se[%d] %v, Wald %v", link, j, res.BetaSE[j], se[3+j])
			}
			if math.Abs(res.HazardRatio[j]-math.Exp(res.Beta[j])) > 1e-12 || !(res.HazardRatioLower[j] < res.HazardRatio[j] && res.HazardRatio[j] < res.HazardRatioUpper[j]) {
				t.Errorf("%s: hazard ratio %v [%v, %v] for beta %v", link, res.HazardRatio[j], res.HazardRatioLower[j], res.HazardRatioUpper[j], res.Beta[j])
			}
		}
		if res.AlphaLower == nil || res.IntervalMethod != IntervalNewton || res.Guarantee != GuaranteePureDP {
			t.Errorf("%s: alpha limits %v, method %q, guarantee %q", link, res.AlphaLower, res.IntervalMethod, res.Guarantee)
		}
	}
}

// newtonCoverage runs reps releases per (link, epsilon) cell of the study
// world and returns the counts of covering beta and alpha intervals (alpha
// against the true (-3, 0, 0): the constant baseline is in the spline
// span) and the ratio of the private releases' mean beta width to the
// MLE's mean Wald width; the Wald width, a function of the design that
// hardly moves between data sets of one size, is taken from the first
// min(reps, waldReps) data sets (the MLE costs as much as a release).
// Release r draws its data and noise from seeds of r alone, so the
// releases run on GOMAXPROCS workers (parallelReps, whose own streams are
// not used; half of a release's CPU is serial: the data, the replay) and
// the figures do not depend on the order; they are summed in release
// order.
func newtonCoverage(t *testing.T, link Link, eps float64, n, reps, waldReps int, seed uint64) (betaCov, alphaCov int, ratio float64) {
	t.Helper()
	trueAlpha := []float64{-3, 0, 0}
	trueBeta := []float64{1, -1}
	nw := min(reps, waldReps)
	type one struct {
		res DiscreteResult
		se  []float64
	}
	out := make([]one, reps)
	err := parallelReps(reps, dp.NewSeededSource(seed), func(r int, _ dp.Source) error {
		d := newtonWorld(rand.NewPCG(seed+uint64(r), 7), n, link)
		o := &out[r]
		var err error
		o.res, err = FitDiscrete(d, DiscreteOptions{Method: MethodNewton, Link: link, Epsilon: eps, TimeMax: 1}, dp.NewSeededSource(seed+uint64(r)+1000))
		if err == nil && r < nw {
			_, o.se, err = studyMLE(d, link)
		}
		if err != nil {
			return fmt.Errorf("rep %d: %w", r, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var width, wald float64
	for r, o := range out {
		res := o.res
		if res.BetaLower == nil {
			t.Fatalf("rep %d: no intervals: %s", r, res.IntervalMethod)
		}
		if r < nw {
			for j := range trueBeta {
				wald += 2 * 1.959963984540054 * o.se[3+j] / float64(2*nw)
			}
		}
		for j, b := range trueBeta {
			if res.BetaLower[j] <= b && b <= res.BetaUpper[j] {
				betaCov++
			}
			width += (res.BetaUpper[j] - res.BetaLower[j]) / float64(2*reps)
		}
		for j, a := range trueAlpha {
			if res.AlphaLower[j] <= a && a <= res.AlphaUpper[j] {
				alphaCov++
			}
		}
	}
	return betaCov, alphaCov, width / wald
}

// newtonWaldReps is how many data sets of a cell the study fits the MLE
// on for the Wald width; the -short test fits 1 per link (at n = 50,000
// the Wald width moves well under 1% between data sets, the bound is 2x).
const newtonWaldReps = 8

// TestNewtonCoverageShort is the -short version of the coverage study: n =
// 50,000, epsilon 1, logit and cloglog, 12 releases each (48 beta
// intervals, 72 alpha intervals). At a true coverage of 0.95 the count of
// covering beta intervals is <= 40 with probability 0.0024 (binomial; the
// false-alarm rate); at a true alpha coverage of 0.90 the count of
// covering alpha intervals is <= 57 with probability 0.0046. The upper
// end is not tested here: at 48 intervals all 48 cover with probability
// 0.085 at a true 0.95 (the full study tests it). Measured at these seeds
// with issue 20's calibration: beta 47/48, alpha 68/72, width ratio 1.41
// (logit) and 1.31 (cloglog). The mean beta width must be at most 2x the
// MLE's Wald width. About 2 s of CPU (1.5-1.9 CPU-s measured at load 7;
// 2.1-2.4 before the direct records' leaner terms and the PCG event
// draws, 2.8-3.4 before the cheaper clipped sums, load 15).
func TestNewtonCoverageShort(t *testing.T) {
	t.Parallel() // heavy: runs beside the other heavy tests
	const reps = 12
	var cov, acov int
	for i, link := range []Link{LinkLogit, LinkCloglog} {
		c, a, ratio := newtonCoverage(t, link, 1, 50000, reps, 1, uint64(100*i))
		t.Logf("%s eps 1: beta coverage %d/%d, alpha %d/%d, width ratio %.2f", link, c, 2*reps, a, 3*reps, ratio)
		if ratio > 2 {
			t.Errorf("%s: mean beta width %.2f x the Wald width, want <= 2", link, ratio)
		}
		cov += c
		acov += a
	}
	if cov <= 40 {
		t.Errorf("beta coverage %d/48: below 0.95 (P(<= 40) = 0.0024 at 0.95)", cov)
	}
	if acov <= 57 {
		t.Errorf("alpha coverage %d/72: below 0.90 (P(<= 57) = 0.0046 at 0.90)", acov)
	}
}

// TestNewtonCoverageStudy is the full study of issue 20: n = 50,000,
// epsilon in {0.5, 1, 2}, logit and cloglog, newtonStudyReps = 400
// releases per cell (800 beta intervals, 1200 alpha intervals): beta
// coverage in [0.93, 0.975] per cell, alpha coverage >= 0.88 per cell,
// mean beta width <= 2x the Wald width at epsilon 1 (the ratio is logged
// at every epsilon, with whether the cell is inside issue 20's band
// [0.93, 0.97]).
//
// The band, binomial (a release's two intervals counted as independent):
// issue 20's [0.93, 0.97] at 800 intervals has a false-alarm rate of
// 0.0075 per cell at a true 0.95 (0.044 over the six cells; at the former
// 100 releases per cell it was 0.14 per cell, 0.60 over six: no test).
// The limits measure 0.960 pooled (4610 of 4800 intervals at these
// seeds), and at a true 0.960 [0.93, 0.97] fails 0.057 per cell, 0.30
// over six: it would test the draw. [0.93, 0.975] is the tightest upper
// end whose false-alarm rate is at most 0.05 over the six cells both at a
// true 0.95 (0.0055 per cell, 0.033 over six) and at the measured 0.96
// (0.0083, 0.049). Alpha: issue 20 asks >= 0.90; at 1200 intervals a count
// below 0.88 has probability 0.011 at a true 0.90 (measured 0.957-0.975).
//
// Measured at these seeds (beta coverage, alpha coverage, width ratio to
// Wald): logit 0.5: 0.954, 0.958, 2.50; logit 1: 0.955, 0.975, 1.42;
// logit 2: 0.958, 0.970, 1.12; cloglog 0.5: 0.969, 0.967, 2.44; cloglog
// 1: 0.964, 0.963, 1.42; cloglog 2: 0.964, 0.957, 1.13: every beta cell
// inside issue 20's [0.93, 0.97]; alpha is held by an upper bound
// (newtonNoiseCov: the baseline's own rule) and is conservative. The
// limits before issue 20's calibration, recomputed on the first 120
// releases of every cell (they are post-processing): beta 0.971, 0.971,
// 0.975, 0.975, 0.988, 0.958 (0.973 pooled), alpha 0.947, 0.969, 0.956,
// 0.961, 0.967, 0.922, width ratio 2.67, 1.57, 1.20, 2.63, 1.57, 1.20; the
// calibrated ones on the same releases: beta 0.958, 0.971, 0.971, 0.967,
// 0.975, 0.950 (0.965), alpha 0.950, 0.972, 0.969, 0.961, 0.967, 0.936,
// 2.47, 1.44, 1.12, 2.43, 1.44, 1.13.
//
// Cost: 2,400 releases and 48 MLE fits on GOMAXPROCS workers
// (newtonCoverage): about 164 CPU-s measured (about 0.065 s per release;
// the package's whole full tier 178 CPU-s from its built test binary, 423
// s wall at nice 10 on the shared 2-core machine at a load of 7-10), from
// 199 before the logit records certified unclipped skipped their
// alpha-clip pieces and the world's event draws took the PCG directly
// (synth.DiscreteWorld.Draw; -25% on a 96-release sample of the cells,
// old and new binaries run in turn), and about 290 before the cheaper
// clipped sums; all give these figures bit for bit. make stats runs it;
// skipped under -race and -short.
func TestNewtonCoverageStudy(t *testing.T) {
	testtier.Heavy(t, "noisy Newton coverage study")
	reps := newtonStudyReps
	for i, link := range []Link{LinkLogit, LinkCloglog} {
		for k, eps := range []float64{0.5, 1, 2} {
			c, a, ratio := newtonCoverage(t, link, eps, 50000, reps, newtonWaldReps, uint64(10000*(3*i+k+1)))
			f := float64(c) / float64(2*reps)
			t.Logf("%s eps %v: beta coverage %d/%d (%.3f, in issue 20's [0.93, 0.97]: %v), alpha %d/%d (%.3f), width ratio %.2f",
				link, eps, c, 2*reps, f, f >= 0.93 && f <= 0.97, a, 3*reps, float64(a)/float64(3*reps), ratio)
			if f < 0.93 || f > 0.975 {
				t.Errorf("%s eps %v: beta coverage %.3f outside [0.93, 0.975]", link, eps, f)
			}
			if fa := float64(a) / float64(3*reps); fa < 0.88 {
				t.Errorf("%s eps %v: alpha coverage %.3f below 0.88", link, eps, fa)
			}
			if eps == 1 && ratio > 2 {
				t.Errorf("%s eps 1: width ratio %.2f > 2", link, ratio)
			}
		}
	}
}

// newtonStudyReps is the releases per cell of TestNewtonCoverageStudy.
const newtonStudyReps = 400
