package inference

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dpsurv/dpsurv/dpfit/km"
	"github.com/dpsurv/dpsurv/plots"
	"github.com/dpsurv/dpsurv/regression"
)

// ReportConfig sizes the studies of WriteReport.
type ReportConfig struct {
	DataName    string
	TimeMax     float64
	Epsilons    []float64
	KMReps      int // bootstrap replicates of the coverage study
	SizeReps    int // releases per epsilon of the size study
	PowerReps   int
	Sims        int // log-rank simulations per release
	SizeRecords int
	Widths      []float64
	WidthReps   int
	// RegReps and RegRecords, when > 0, replace RegressionPlan's releases
	// per cell and records per release (small runs of the generator).
	RegReps, RegRecords int
	// RegPSGLDSteps, when > 0, shortens pSGLD's chain (a smoke run).
	RegPSGLDSteps int
	Seed          uint64
	// Figure is the path of the error-vs-bin-width figure ("" for none) and
	// FigureLink how the markdown refers to it.
	Figure, FigureLink string
	Command            string
}

// tableHead writes a markdown table's header row and the rule under it.
func tableHead(w io.Writer, header string) {
	fmt.Fprintln(w, header)
	fmt.Fprintln(w, strings.Repeat("|---", strings.Count(header, "|")-1)+"|")
}

// writeRows writes a markdown table's rows, one a line.
func writeRows(w io.Writer, rows []string) {
	for _, row := range rows {
		fmt.Fprintln(w, row)
	}
}

func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// WriteReport runs the studies and writes the markdown of docs/inference.md
// (the body of its generated block).
func WriteReport(w io.Writer, d Data, cfg ReportConfig) error {
	fmt.Fprintf(w, "Regenerate with:\n\n```sh\n%s\n```\n\n", cfg.Command)
	bw := km.DefaultBinWidth(cfg.TimeMax)
	fmt.Fprintf(w, "Data `%s` (%d records, %d cohorts); public time bound %g days; default bin width %g days "+
		"(time_max / %d); method hierarchical (the default); seed %d. Every number below is a simulation with stated "+
		"replicate counts: a coverage of 0.95 from n intervals has a binomial standard error of sqrt(0.95 x 0.05 / n).\n\n",
		cfg.DataName, len(d.Time), len(d.Labels), cfg.TimeMax, bw, km.DefaultKMBins, cfg.Seed)

	fmt.Fprintf(w, "### Kaplan–Meier pointwise 95%% intervals\n\n")
	fmt.Fprintf(w, "World: each cohort's records; truth: its full-data KM (at the end of the bin holding t: what a binned "+
		"release estimates; the non-private column uses S(t)). %d bootstrap replicates of every cohort per ε "+
		"(%d intervals per cell). *released* is the interval in `lower`/`upper` (sampling + noise: log-log Greenwood and the "+
		"simulated noise SD below and above the curve, combined by MOVER); *sampling-only* is "+
		"`sampling_lower`/`sampling_upper` (R's log Greenwood interval on the noisy counts, what the release published "+
		"before issue 12); *non-private* is R's log Greenwood interval of the same bootstrap sample, unbinned. *reach*: "+
		"share of curves not truncated before t.\n\n", cfg.KMReps, cfg.KMReps*len(d.Labels))
	tableHead(w, "| ε | t (days) | released | sampling-only | non-private | reach |")
	var medRows, bandRows []string
	for i, eps := range cfg.Epsilons {
		r, err := RunKM(d, KMConfig{Epsilon: eps, TimeMax: cfg.TimeMax, Checkpoints: []float64{365, 730, 1826},
			Reps: cfg.KMReps, Seed: cfg.Seed + uint64(10+i)})
		if err != nil {
			return err
		}
		for _, p := range r.Points {
			fmt.Fprintf(w, "| %g | %g | %s | %s | %s | %s |\n", eps, p.Time, f3(p.Coverage()), f3(p.SamplingCoverage()),
				f3(p.NonPrivateCoverage()), f3(float64(p.Reported)/float64(p.Intervals)))
		}
		b := r.Band
		bandRows = append(bandRows, fmt.Sprintf("| %g | %d | %s | %s | %.0f | %.0f |", eps, b.Curves,
			f3(float64(b.WithBand)/float64(b.Curves)), f3(b.Coverage()), b.FromSum/float64(b.WithBand), b.ToSum/float64(b.WithBand))+
			fmt.Sprintf(" %.2f |", b.CriticalSum/float64(b.WithBand)))
		m := r.Median
		medRows = append(medRows, fmt.Sprintf("| %g | %d | %s | %s | %s | %d / %d | %d / %d |", eps, m.WithMedian,
			f3(float64(m.Covered)/float64(m.WithMedian)), f3(float64(m.NonPrivate)/float64(m.WithMedian)),
			f3(float64(m.Released)/float64(m.WithMedian)), m.False, m.WithoutMedian, m.NonPrivateFalse, m.WithoutMedian))
	}
	fmt.Fprintf(w, "\n### Kaplan–Meier simultaneous 95%% bands\n\nSame replicates. `band_lower`/`band_upper`: S exp(∓ c "+
		"std_err) over [`band_from`, `band_to`] (from the 10th released event to before the noise-dominated tail), c the "+
		"simulated 95%% quantile of the sup of the standardised deviation (mechanism rerun on the released counts plus "+
		"Greenwood sampling paths). *coverage*: the truth (at each bin's end) is inside the band at every released time of "+
		"the range. Means over the curves with a band.\n\n")
	tableHead(w, "| ε | curves | with band | coverage | mean band_from | mean band_to | mean c |")
	writeRows(w, bandRows)
	fmt.Fprintf(w, "\n### Medians\n\nSame replicates. *with median*: (replicate, cohort) pairs whose true curve reaches 0.5; "+
		"*coverage*: [median_lower, median_upper] holds the true median (a null limit is unbounded on its side); "+
		"*released*: share of those with a median; *false medians*: a median released for a cohort whose true curve "+
		"does not reach 0.5 (private / non-private R).\n\n")
	tableHead(w, "| ε | with median | coverage | non-private coverage | released | false medians | non-private false |")
	writeRows(w, medRows)

	fmt.Fprintf(w, "\n### Log-rank test: size under permuted labels\n\n%d releases per ε of %d records drawn with "+
		"replacement and given 3 random labels (no true difference); %d simulated null releases per test; α = 0.05. "+
		"*calibrated* is `logrank.p`; *naive* is `logrank.p_naive` (chi-square of the noisy counts as if exact); "+
		"*non-private* is the exact test on the same records.\n\n", cfg.SizeReps, cfg.SizeRecords, cfg.Sims)
	tableHead(w, "| ε | tests | calibrated | naive | non-private |")
	for i, eps := range cfg.Epsilons {
		r, err := RunLogRank(d, LogRankConfig{Epsilon: eps, TimeMax: cfg.TimeMax, Permute: true, Groups: 3,
			Records: cfg.SizeRecords, Reps: cfg.SizeReps, Sims: cfg.Sims, Seed: cfg.Seed + uint64(100+i)})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "| %g | %d | %s | %s | %s |\n", eps, r.Tests, f3(r.Rate()), f3(r.NaiveRate()), f3(r.NonPrivateRate()))
	}
	fmt.Fprintf(w, "\n### Log-rank test: power\n\n%d bootstrap releases per ε of two real cohorts with a moderate "+
		"difference (full-data chi-square closest to 10); α = 0.05.\n\n", cfg.PowerReps)
	tableHead(w, "| ε | cohorts | full-data χ² | calibrated | naive | non-private |")
	for i, eps := range cfg.Epsilons {
		r, err := RunLogRank(d, LogRankConfig{Epsilon: eps, TimeMax: cfg.TimeMax, Reps: cfg.PowerReps, Sims: cfg.Sims,
			Seed: cfg.Seed + uint64(200+i)})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "| %g | %s vs %s | %.1f | %s | %s | %s |\n", eps, d.Labels[r.Pair[0]], d.Labels[r.Pair[1]], r.PairChiSq,
			f3(r.Rate()), f3(r.NaiveRate()), f3(r.NonPrivateRate()))
	}

	if err := writeRegression(w, cfg); err != nil {
		return err
	}

	fmt.Fprintf(w, "\n### Error against bin width\n\nWhole data released %d times per cell (hierarchical, no bootstrap); "+
		"mean over releases and cohorts of sup |S_release(t) − S_exact(t)| on t = 0, 10, ... up to min(3650 days, "+
		"truncation); *reach*: mean share of [0, 3650] covered.\n\n", cfg.WidthReps)
	cells, err := RunBinWidth(d, BinWidthConfig{Epsilons: cfg.Epsilons, Widths: cfg.Widths, TimeMax: cfg.TimeMax,
		Horizon: 3650, Reps: cfg.WidthReps, Seed: cfg.Seed + 300})
	if err != nil {
		return err
	}
	tableHead(w, "| ε | bin width (days) | bins | mean sup | reach |")
	series := map[float64]*plots.Series{}
	var order []float64
	for _, c := range cells {
		fmt.Fprintf(w, "| %g | %g | %d | %s | %s |\n", c.Epsilon, c.Width, c.Bins, f3(c.MeanSup), f3(c.Reach))
		s, ok := series[c.Epsilon]
		if !ok {
			s = &plots.Series{Label: "ε = " + strconv.FormatFloat(c.Epsilon, 'g', -1, 64)}
			series[c.Epsilon] = s
			order = append(order, c.Epsilon)
		}
		s.X = append(s.X, c.Width)
		s.Y = append(s.Y, c.MeanSup)
	}
	if cfg.Figure != "" {
		var ss []plots.Series
		for _, e := range order {
			ss = append(ss, *series[e])
		}
		if err := plots.WriteLines(cfg.Figure, "Hierarchical KM on "+cfg.DataName+": error against bin width",
			"bin width (days, log scale)", "mean sup |S_DP - S_exact| over [0, 3650]", true, ss); err != nil {
			return err
		}
		fmt.Fprintf(w, "\n![error against bin width](%s)\n", filepath.ToSlash(cfg.FigureLink))
	}
	return nil
}

// writeRegression runs RegressionPlan and writes its table.
func writeRegression(w io.Writer, cfg ReportConfig) error {
	fmt.Fprintf(w, "\n### Regression coefficients (discrete-time)\n\nSynthetic world (`cmd/dpsurv-eval/inference/regression.go`): "+
		"n records per data set (below), two covariates uniform in the unit disc's inscribed square (no row clipped), "+
		"%d intervals on [0, 1] (the default), constant baseline logit %d per interval, β = (1, −1) (true α = (%d, 0, 0) in the "+
		"%d-knot spline basis), uniform censoring; a fresh data set per release; the production defaults: λ = %g, "+
		"`interval_epsilon_fraction` %g. *β coverage* and *width*: `beta_lower`/`beta_upper` (2 per release; a release "+
		"without limits counts as a miss); *bias*: mean `beta_debiased` − β; *withheld α*: coverage of the bootstrap's α "+
		"limits, recomputed from the release — every release withholds them (its note in `coefficient_interval_method`); "+
		"*noise-only*: `noise_only_beta_*`; *Wald*: the non-private MLE ± 1.96 SE on the same data. pSGLD publishes no limits: "+
		"its β columns are the withheld bootstrap limits, recomputed from each release; its α is not measured.\n\n",
		regression.DefaultIntervals, regressionBaseline, regressionBaseline, regression.DefaultKnots, regression.DefaultLambda,
		regression.DefaultIntervalFraction)
	tableHead(w, "| method | ε | n | releases | β coverage | β width | β bias | withheld α | noise-only β | Wald β (width) |")
	for _, s := range RegressionPlan {
		if cfg.RegReps > 0 {
			s.Reps = cfg.RegReps
		}
		if cfg.RegRecords > 0 {
			s.Records = cfg.RegRecords
		}
		for i, eps := range []float64{0.5, 1, 2} {
			c, err := RunRegression(RegressionConfig{Method: s.Method, Epsilon: eps, Records: s.Records, Reps: s.Reps,
				Wald: s.Method == regression.MethodOutput, Withheld: true, Seed: s.Seed + uint64(i),
				PSGLDSteps: cfg.RegPSGLDSteps})
			if err != nil {
				return err
			}
			no, wald, al := "—", "—", "—"
			if v := c.AlphaCoverage(); !math.IsNaN(v) {
				al = f3(v)
			}
			if v := c.NoiseOnlyCoverage(); !math.IsNaN(v) {
				no = f3(v)
			}
			if v := c.WaldCoverage(); !math.IsNaN(v) {
				wald = f3(v) + " (" + f3(c.WaldWidth) + ")"
			}
			fmt.Fprintf(w, "| %s | %g | %d | %d | %s | %s | %+.3f, %+.3f | %s | %s | %s |\n", s.Method, eps, s.Records, c.Releases,
				f3(c.BetaCoverage()), f3(c.BetaWidth), c.BetaBias[0], c.BetaBias[1], al, no, wald)
		}
	}
	return nil
}
