package inference

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/dpfit/weibull"
	"github.com/dpsurv/dpsurv/survival"
)

// WeibullConfig is one coverage study of the noise-aware Weibull intervals
// (weibull.WeibullIntervals) of LSP+TLL releases: Reps bootstrap replicates of
// every cohort of the data (the world: each cohort's records; the truth:
// the non-private MLE of the full cohort, times divided by TimeMax and
// clamped as the release does), each released at Epsilon.
type WeibullConfig struct {
	Epsilon float64
	TimeMax float64
	Reps    int
	Seed    uint64
	// Sims is passed to weibull.WeibullIntervalOptions (0: the default).
	Sims int
	// Cohorts limits the study to the first Cohorts cohorts (0: all).
	Cohorts int
}

// WeibullCoverage counts the intervals of one study.
type WeibullCoverage struct {
	Intervals int
	// ShapeCovered, ScaleCovered: the private intervals covering the truth.
	ShapeCovered, ScaleCovered int
	// NonPrivateShape, NonPrivateScale: the non-private Wald intervals
	// (log scale, observed information) of the bootstrap sample's MLE.
	NonPrivateShape, NonPrivateScale int
	// NonPrivateFits: bootstrap samples with a finite MLE.
	NonPrivateFits int
	// ShapeWidth, ScaleWidth: median widths of the private intervals
	// (normalised units); NonPrivateShapeWidth, NonPrivateScaleWidth: of
	// the Wald intervals.
	ShapeWidth, ScaleWidth, NonPrivateShapeWidth, NonPrivateScaleWidth float64
}

// ShapeCoverage returns ShapeCovered/Intervals.
func (c WeibullCoverage) ShapeCoverage() float64 {
	return float64(c.ShapeCovered) / float64(c.Intervals)
}

// ScaleCoverage returns ScaleCovered/Intervals.
func (c WeibullCoverage) ScaleCoverage() float64 {
	return float64(c.ScaleCovered) / float64(c.Intervals)
}

// NonPrivateShapeCoverage returns NonPrivateShape/NonPrivateFits.
func (c WeibullCoverage) NonPrivateShapeCoverage() float64 {
	return float64(c.NonPrivateShape) / float64(c.NonPrivateFits)
}

// NonPrivateScaleCoverage returns NonPrivateScale/NonPrivateFits.
func (c WeibullCoverage) NonPrivateScaleCoverage() float64 {
	return float64(c.NonPrivateScale) / float64(c.NonPrivateFits)
}

// RunWeibull runs a Weibull coverage study.
func RunWeibull(d Data, cfg WeibullConfig) (WeibullCoverage, error) {
	var out WeibullCoverage
	wc := weibull.WeibullConfig{Epsilon: cfg.Epsilon, TimeMax: cfg.TimeMax}.WithDefaults()
	inf := wc
	inf.Epsilon = math.Inf(1)
	groups := d.byCohort()
	if cfg.Cohorts > 0 && cfg.Cohorts < len(groups) {
		groups = groups[:cfg.Cohorts]
	}
	truth := make([]weibull.WeibullFit, len(groups))
	for c, idx := range groups {
		tt, ee := subset(d, idx)
		cm, err := survival.CompressChecked(tt, ee)
		if err != nil {
			return out, fmt.Errorf("truth of cohort %d: %w", c, err)
		}
		if truth[c], err = weibull.FitWeibull(nil, cm, inf, ""); err != nil {
			return out, fmt.Errorf("truth of cohort %d: %w", c, err)
		}
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x77b1))
	var ws, wl, nws, nwl []float64
	z := 1.959963984540054
	for r := 0; r < cfg.Reps; r++ {
		for c, idx := range groups {
			tt, ee := d.resample(rng, idx)
			cm, err := survival.CompressChecked(tt, ee)
			if err != nil {
				return out, err
			}
			src := dp.NewSeededSource(cfg.Seed*1_000_003 + uint64(r*len(groups)+c))
			fit, err := weibull.FitWeibullLSP(src, cm, wc)
			if err != nil {
				return out, fmt.Errorf("replicate %d cohort %d: %w", r, c, err)
			}
			iv, err := weibull.WeibullIntervals(fit, weibull.WeibullIntervalOptions{Sims: cfg.Sims})
			if err != nil {
				return out, fmt.Errorf("replicate %d cohort %d: %w", r, c, err)
			}
			tr := truth[c]
			out.Intervals++
			if within(tr.Shape, iv.ShapeLower, iv.ShapeUpper) {
				out.ShapeCovered++
			}
			if within(tr.Scale, iv.ScaleLower, iv.ScaleUpper) {
				out.ScaleCovered++
			}
			ws = append(ws, iv.ShapeUpper-iv.ShapeLower)
			wl = append(wl, iv.ScaleUpper-iv.ScaleLower)
			// non-private: Wald on the log scale from the observed information
			m, err := weibull.FitWeibull(nil, cm, inf, "")
			if err != nil {
				continue
			}
			sa, sb, ok := weibullLogSE(cm, wc, m.Shape, m.Scale)
			if !ok {
				continue
			}
			out.NonPrivateFits++
			lo, hi := m.Shape*math.Exp(-z*sa), m.Shape*math.Exp(z*sa)
			if within(tr.Shape, lo, hi) {
				out.NonPrivateShape++
			}
			nws = append(nws, hi-lo)
			lo, hi = m.Scale*math.Exp(-z*sb), m.Scale*math.Exp(z*sb)
			if within(tr.Scale, lo, hi) {
				out.NonPrivateScale++
			}
			nwl = append(nwl, hi-lo)
		}
	}
	out.ShapeWidth, out.ScaleWidth = Median(ws), Median(wl)
	out.NonPrivateShapeWidth, out.NonPrivateScaleWidth = Median(nws), Median(nwl)
	return out, nil
}

// weibullLogSE returns the standard errors of ln(shape) and ln(scale) from
// the observed information of the Weibull log-likelihood on the normalised,
// clamped times (central finite differences in (ln p, ln lambda)).
func weibullLogSE(c survival.Compressed, cfg weibull.WeibullConfig, p, lambda float64) (sa, sb float64, ok bool) {
	lo := math.Exp(-cfg.Omega)
	ll := func(a, b float64) float64 {
		p, l := math.Exp(a), math.Exp(b)
		s := 0.0
		for i, raw := range c.Time {
			t := min(max(raw/cfg.TimeMax, lo), 1)
			z := math.Log(t) - math.Log(l)
			s += c.Events[i]*(math.Log(p)+(p-1)*math.Log(t)-p*math.Log(l)) - c.Count[i]*math.Exp(p*z)
		}
		return s
	}
	a0, b0 := math.Log(p), math.Log(lambda)
	h := 1e-4
	f0 := ll(a0, b0)
	haa := (ll(a0+h, b0) - 2*f0 + ll(a0-h, b0)) / (h * h)
	hbb := (ll(a0, b0+h) - 2*f0 + ll(a0, b0-h)) / (h * h)
	hab := (ll(a0+h, b0+h) - ll(a0+h, b0-h) - ll(a0-h, b0+h) + ll(a0-h, b0-h)) / (4 * h * h)
	det := haa*hbb - hab*hab
	if !(haa < 0) || !(det > 0) {
		return 0, 0, false
	}
	// inverse of the negative Hessian
	return math.Sqrt(-hbb / det), math.Sqrt(-haa / det), true
}

// Median is the sample median of x, the mean of the middle two for an even
// count (NaN when empty; NaN entries sort first).
func Median(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := slices.Clone(x)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// WeibullReportConfig sizes WriteWeibullReport.
type WeibullReportConfig struct {
	DataName string
	TimeMax  float64
	Epsilons []float64
	Reps     int // bootstrap releases per cohort and epsilon
	Sims     int // simulated releases per candidate shape (0: default)
	Seed     uint64
	Command  string
}

// WriteWeibullReport runs the Weibull coverage study at each epsilon (seed
// Seed+40+i, as TestWeibullIntervalCoverageFull with Seed 0) and writes its
// markdown table.
func WriteWeibullReport(w io.Writer, d Data, cfg WeibullReportConfig) error {
	fmt.Fprintf(w, "Regenerate with:\n\n```sh\n%s\n```\n\n", cfg.Command)
	fmt.Fprintf(w, "### Weibull shape and scale 95%% intervals (LSP+TLL)\n\n"+
		"Data `%s` (%d records, %d cohorts); public time bound %g days; LSP+TLL with the default omega 6, gamma 10, "+
		"500 rungs. World: each cohort's records; truth: the cohort's full-data non-private MLE (times / time_max, "+
		"clamped as the release does; scale in units of time_max). %d bootstrap releases of every cohort per ε "+
		"(%d intervals per row). *released* is `shape_lower`/`shape_upper` and `scale_lower`/`scale_upper` "+
		"(test inversion through the mechanism, %s simulated releases per candidate shape); *non-private* is the Wald "+
		"interval (log scale, observed information) of the bootstrap sample's MLE. Widths are medians. A coverage of "+
		"0.95 from n intervals has a binomial standard error of sqrt(0.95 x 0.05 / n).\n\n",
		cfg.DataName, len(d.Time), len(d.Labels), cfg.TimeMax, cfg.Reps, cfg.Reps*len(d.Labels), simsLabel(cfg.Sims))
	tableHead(w, "| ε | intervals | shape coverage | shape width | non-private | non-private width | scale coverage | scale width | non-private | non-private width |")
	for i, eps := range cfg.Epsilons {
		r, err := RunWeibull(d, WeibullConfig{Epsilon: eps, TimeMax: cfg.TimeMax, Reps: cfg.Reps, Sims: cfg.Sims,
			Seed: cfg.Seed + uint64(40+i)})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "| %g | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", eps, r.Intervals,
			f3(r.ShapeCoverage()), g3(r.ShapeWidth), f3(r.NonPrivateShapeCoverage()), g3(r.NonPrivateShapeWidth),
			f3(r.ScaleCoverage()), g3(r.ScaleWidth), f3(r.NonPrivateScaleCoverage()), g3(r.NonPrivateScaleWidth))
	}
	return nil
}

func simsLabel(s int) string {
	if s == 0 {
		return strconv.Itoa(weibull.DefaultWeibullIntervalSims)
	}
	return strconv.Itoa(s)
}

// g3 formats a width with 3 significant digits (exponent form when huge).
func g3(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }
