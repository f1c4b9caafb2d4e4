package inference

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/regression"
	"github.com/dpsurv/dpsurv/synth"
	"gonum.org/v1/gonum/mat"
)

// RegressionConfig sizes the coverage study of the discrete-time
// regression's coefficient intervals (regression.CoefficientIntervals).
//
// World: n records, two covariates uniform on the square inscribed in the
// unit disc (so no row is clipped), a public time domain [0, 1] cut into
// regression.DefaultIntervals (200) intervals, the aggregator's and the
// CLI's default, a constant baseline hazard logit(h) = regressionBaseline
// and beta = (1, -1), so the true alpha of the 3-knot spline baseline is
// (regressionBaseline, 0, 0); each record is censored at a uniform interval
// in 1..200. Every replicate draws a fresh data set, so sampling error
// counts. The study runs at the production defaults (intervals, knots,
// lambda, interval fraction): the Hessian's noise grows with the number of
// intervals (its sensitivity sums over them), so a study at fewer
// intervals would flatter the intervals.
type RegressionConfig struct {
	Method   regression.Method
	Epsilon  float64
	Fraction float64 // IntervalFraction (0: regression.DefaultIntervalFraction)
	Records  int
	Reps     int
	Wald     bool // also fit the non-private MLE and its Wald interval
	// Withheld also measures the limits a release withholds (alpha's;
	// pSGLD's beta), recomputed from each release: a second run of its
	// bootstrap, half of an Ext-Out-Pert release's CPU. Without it
	// AlphaCoverage is NaN and a pSGLD release counts as without limits.
	Withheld bool
	Seed     uint64
	// PSGLDSteps is pSGLD's chain length (regression.PSGLDOptions.Steps);
	// 0: the production default. A smoke run shortens it.
	PSGLDSteps int
}

// RegressionPlan is the study of docs/inference.md's regression table:
// per method the releases per epsilon (each epsilon in {0.5, 1, 2}), the
// records per data set and the seeds; the non-private Wald interval is
// computed beside Ext-Out-Pert. WriteReport and
// TestRegressionCoverageFull run it with the same seeds (the test: without
// the Wald fit, and only pSGLD's first regressionPSGLDTestReps releases).
var RegressionPlan = []struct {
	Method  regression.Method
	Reps    int
	Records int
	Seed    uint64 // of the first epsilon; the others follow
}{
	{regression.MethodOutput, 120, 50000, 60}, // about 0.5 s per release with the Wald fit
	{regression.MethodObjective, 100, 50000, 60},
	{regression.MethodPSGLD, 30, 20000, 80}, // the chain costs about 2 s per release
}

// RegressionCoverage is the outcome of RunRegression.
type RegressionCoverage struct {
	Releases              int
	BetaCovered           int       // of 2 Releases beta intervals
	AlphaCovered          []int     // per alpha coordinate, of AlphaReleases (the withheld bootstrap limits)
	AlphaReleases         int       // releases whose withheld alpha limits were measured (not pSGLD)
	BetaWidth             float64   // mean
	NoiseOnlyCovered      int       // beta, of NoiseOnlyIntervals (Ext-Out-Pert)
	NoiseOnlyIntervals    int       //
	WaldCovered           int       // beta, of 2 Releases (with Wald)
	WaldWidth             float64   // mean
	BetaBias              []float64 // mean of beta_debiased - beta
	Fallbacks, NoInterval int
	AlphaWithheld         int // releases publishing no alpha limits
	BetaWithheld          int // releases with a Hessian but no beta limits (pSGLD: their bootstrap limits are measured)
}

// BetaCoverage is the share of beta intervals holding the true beta.
func (c RegressionCoverage) BetaCoverage() float64 {
	return float64(c.BetaCovered) / float64(2*c.Releases)
}

// AlphaCoverage is the share of alpha intervals holding the true alpha.
func (c RegressionCoverage) AlphaCoverage() float64 {
	var s int
	for _, v := range c.AlphaCovered {
		s += v
	}
	if c.AlphaReleases == 0 {
		return math.NaN()
	}
	return float64(s) / float64(len(c.AlphaCovered)*c.AlphaReleases)
}

// NoiseOnlyCoverage is the noise-only limits' coverage of the true beta
// (NaN without them).
func (c RegressionCoverage) NoiseOnlyCoverage() float64 {
	if c.NoiseOnlyIntervals == 0 {
		return math.NaN()
	}
	return float64(c.NoiseOnlyCovered) / float64(c.NoiseOnlyIntervals)
}

// WaldCoverage is the non-private Wald interval's coverage of the true
// beta (NaN without Wald).
func (c RegressionCoverage) WaldCoverage() float64 {
	if c.WaldWidth == 0 {
		return math.NaN()
	}
	return float64(c.WaldCovered) / float64(2*c.Releases)
}

// regressionBaseline is the study world's baseline logit hazard per
// interval (about 1 event in 20 intervals at x = 0, so most records have
// an event before their censoring).
const regressionBaseline = -3

// The study world's true coefficients: beta = (1, -1) and, the baseline
// hazard being constant, the spline baseline's alpha = (regressionBaseline,
// 0, 0). Read only.
var (
	worldBeta  = []float64{1, -1}
	worldAlpha = []float64{regressionBaseline, 0, 0}
)

// worldRand is the ChaCha8 stream a regression study draws its worlds
// from: seeded by seed, with tag telling apart the studies that share it.
func worldRand(seed uint64, tag byte) *rand.Rand {
	var key [32]byte
	for i := 0; i < 8; i++ {
		key[i] = byte(seed >> (8 * i))
	}
	key[8] = tag
	return rand.New(rand.NewChaCha8(key))
}

// regressionWorld draws one data set of the study's world
// (synth.DiscreteWorld at the production default intervals, the study's
// baseline and beta) with the per-interval hazard g^-1(baseline + beta'x),
// g the link (logit or cloglog).
func regressionWorld(rng *rand.Rand, n int, link regression.Link) regression.Data {
	w := synth.DiscreteWorld{Intervals: regression.DefaultIntervals, Baseline: regressionBaseline, Beta: worldBeta, Cloglog: link == regression.LinkCloglog}
	time, event, x := w.Draw(rng, n)
	return regression.Data{Time: time, Event: event, X: x}
}

// RunRegression runs the coverage study (see RegressionConfig).
func RunRegression(cfg RegressionConfig) (RegressionCoverage, error) {
	if cfg.Fraction == 0 {
		cfg.Fraction = regression.DefaultIntervalFraction
	}
	if cfg.Records < 2 || cfg.Reps < 1 {
		return RegressionCoverage{}, fmt.Errorf("regression coverage: records %d and reps %d", cfg.Records, cfg.Reps)
	}
	rng := worldRand(cfg.Seed, 'r')
	src := dp.NewSeededSource(cfg.Seed ^ 0x5eed)
	beta, alpha := worldBeta, worldAlpha
	out := RegressionCoverage{AlphaCovered: make([]int, len(alpha)), BetaBias: make([]float64, len(beta))}
	base := regression.DiscreteOptions{TimeMax: 1, Intervals: regression.DefaultIntervals, Knots: regression.DefaultKnots, Lambda: regression.DefaultLambda}
	for r := 0; r < cfg.Reps; r++ {
		data := regressionWorld(rng, cfg.Records, regression.LinkLogit)
		if cfg.Wald {
			o := base
			o.Method = regression.MethodMLE
			mle, err := regression.FitDiscrete(data, o, nil)
			if err != nil {
				return out, err
			}
			f := append(append([]float64(nil), mle.Alpha...), mle.Beta...)
			h, err := regression.MeanInformation(data, o, f)
			if err != nil {
				return out, err
			}
			d := len(f)
			var chol mat.Cholesky
			if !chol.Factorize(mat.NewSymDense(d, h)) {
				return out, fmt.Errorf("regression coverage: MLE information not positive definite")
			}
			var inv mat.SymDense
			if err := chol.InverseTo(&inv); err != nil {
				return out, err
			}
			for j, b := range beta {
				k := len(alpha) + j
				se := math.Sqrt(inv.At(k, k) / float64(cfg.Records))
				if math.Abs(f[k]-b) <= 1.959964*se {
					out.WaldCovered++
				}
				out.WaldWidth += 2 * 1.959964 * se / float64(2*cfg.Reps)
			}
		}
		o := base
		o.Method, o.Epsilon, o.IntervalFraction = cfg.Method, cfg.Epsilon, cfg.Fraction
		if cfg.Method == regression.MethodPSGLD {
			o.PSGLD.Steps = cfg.PSGLDSteps
		}
		res, err := regression.FitDiscrete(data, o, src)
		if err != nil {
			return out, err
		}
		out.Releases++
		if res.Fallback {
			out.Fallbacks++
		}
		if res.AlphaLower == nil {
			out.AlphaWithheld++
		}
		if res.BetaLower == nil && res.Hessians != nil && res.BetaDebiased != nil {
			out.BetaWithheld++
		}
		// the limits measured: the release's beta limits; with Withheld,
		// where a release withholds them (pSGLD) and for alpha (withheld
		// from every release, the reasons in coefficient_interval_method)
		// the bootstrap's, recomputed from the release, to justify that
		var lo, hi []float64
		if cfg.Withheld {
			if _, lo, hi, _, err = regression.CoefficientIntervals(res, 0.95, 0); err != nil {
				lo, hi = nil, nil
			}
		}
		e := len(alpha)
		bl, bh := res.BetaLower, res.BetaUpper
		if bl == nil && cfg.Method == regression.MethodPSGLD && lo != nil {
			bl, bh = lo[e:], hi[e:]
		}
		if bl == nil {
			// no interval: counts as a miss (the study measures what an
			// analyst gets)
			out.NoInterval++
			continue
		}
		for j, b := range beta {
			if bl[j] <= b && b <= bh[j] {
				out.BetaCovered++
			}
			out.BetaWidth += (bh[j] - bl[j]) / float64(2*cfg.Reps)
			out.BetaBias[j] += (res.BetaDebiased[j] - b) / float64(cfg.Reps)
			if res.NoiseOnlyBetaLower != nil {
				out.NoiseOnlyIntervals++
				if res.NoiseOnlyBetaLower[j] <= b && b <= res.NoiseOnlyBetaUpper[j] {
					out.NoiseOnlyCovered++
				}
			}
		}
		if cfg.Method == regression.MethodPSGLD || lo == nil {
			continue // pSGLD's alpha: not measured here (0.53-0.71 at 20 intervals)
		}
		out.AlphaReleases++
		for j, a := range alpha {
			if lo[j] <= a && a <= hi[j] {
				out.AlphaCovered[j]++
			}
		}
	}
	return out, nil
}
