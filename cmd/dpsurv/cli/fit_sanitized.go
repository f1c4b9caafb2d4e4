package cli

import (
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/dpsurv/dpsurv/audit"
	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/dpfit/km"
	"github.com/dpsurv/dpsurv/ops/harness"
	"github.com/dpsurv/dpsurv/plots"
	"github.com/dpsurv/dpsurv/sanitizers"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/survival"
)

// metaTimeMax is the metadata key (schema- or time-field-level) a
// sanitized input may carry its public horizon under.
const metaTimeMax = "dpsurv.time_max"

// sourceArrow is sanitizedInput.Source for Arrow inputs.
const sourceArrow = "arrow schema metadata"

// sanitizedInput is what a sanitized input's metadata (the Arrow schema's,
// or the .meta.json written next to a CSV by `dpsurv sanitize`) says about
// the mechanisms that produced it. Public parameters only.
type sanitizedInput struct {
	Source        string // where the metadata was read
	Schema        string
	CohortMech    string
	RRREpsilon    float64 // exact loss of the RRR table
	RRRP          float64
	TimeMech      string
	TEEpsilon     float64
	TEWindow      int
	TimeMax       float64 // NaN when the metadata does not state it
	CohortDropped bool
}

// rrr reports whether the cohort labels went through randomized response.
func (s sanitizedInput) rrr() bool { return s.CohortMech == sanitizers.MechRRR }

// readSanitizedInput reads the mechanism metadata of a fit's input; ok is
// false when the input carries none (an ordinary data file, or a file
// written by `dpsurv gen`, whose metadata names the input schema).
func readSanitizedInput(path string, cols schemas.Columns) (s sanitizedInput, ok bool, err error) {
	s.TimeMax = math.NaN()
	var schemaMD, cohortMD, timeMD map[string]string
	f, ferr := schemas.FormatFromPath(path)
	if ferr == nil && (f == schemas.FormatArrowFile || f == schemas.FormatArrowStream) {
		cohortMD, schemaMD, err = audit.ArrowFieldMetadata(path, cols.Cohort)
		if err != nil {
			return s, false, nil // no cohort column: the reader reports it
		}
		timeMD, _, _ = audit.ArrowFieldMetadata(path, cols.Time)
		s.Source = sourceArrow
	} else {
		sd, found, err := schemas.ReadSidecar(path)
		if err != nil {
			return s, false, err
		}
		if !found {
			return s, false, nil
		}
		schemaMD, cohortMD, timeMD = sd.Schema, sd.Fields[cols.Cohort], sd.Fields[cols.Time]
		s.Source = schemas.SidecarPath(path)
	}
	s.Schema = schemaMD[schemas.MetaSchema]
	s.CohortMech = cohortMD[schemas.MetaMechanism]
	s.TimeMech = timeMD[schemas.MetaMechanism]
	if s.Schema != schemas.SanitizedSchemaName && s.CohortMech != sanitizers.MechRRR && s.TimeMech != sanitizers.MechTE {
		return s, false, nil
	}
	num := func(md map[string]string, key, what string) (float64, error) {
		v, err := strconv.ParseFloat(md[key], 64)
		if err != nil {
			return 0, fmt.Errorf("sanitized input metadata (%s): %s %s: %q is not a number", s.Source, what, key, md[key])
		}
		return v, nil
	}
	if s.rrr() {
		if s.RRREpsilon, err = num(cohortMD, schemas.MetaEpsilon, "cohort"); err != nil {
			return s, false, err
		}
		if s.RRRP, err = num(cohortMD, schemas.MetaRRRP, "cohort"); err != nil {
			return s, false, err
		}
	}
	if s.TimeMech == sanitizers.MechTE {
		if s.TEEpsilon, err = num(timeMD, schemas.MetaEpsilon, "time"); err != nil {
			return s, false, err
		}
		w, err := num(timeMD, schemas.MetaWindow, "time")
		if err != nil {
			return s, false, err
		}
		s.TEWindow = int(w)
	}
	for _, md := range []map[string]string{timeMD, schemaMD} {
		if v, found := md[metaTimeMax]; found {
			if x, err := strconv.ParseFloat(v, 64); err == nil && x > 0 {
				s.TimeMax = x
				break
			}
		}
	}
	return s, true, nil
}

// mechanism returns the RRR mechanism the metadata describes over k labels,
// checking that the label count matches the one the sanitizer used (its
// keep probability p = (e^eps - 1)/(e^eps - 1 + n) determines n).
func (s sanitizedInput) mechanism(k int) (*dp.RRR, error) {
	em1 := math.Expm1(s.RRREpsilon)
	if n := em1 * (1 - s.RRRP) / s.RRRP; math.Abs(n-float64(k)) > 1e-6*n {
		return nil, fmt.Errorf("the input's cohorts went through RRR over %.0f labels (epsilon %g, p %g in %s), but the fit has %d labels: "+
			"pass the sanitizer's label list with --cohorts", math.Round(n), s.RRREpsilon, s.RRRP, s.Source, k)
	}
	m, err := dp.NewRRR(s.RRREpsilon, k)
	if err != nil {
		return nil, fmt.Errorf("rrr from the input's metadata: %w", err)
	}
	if math.Abs(m.P()-s.RRRP) > 1e-9 {
		return nil, fmt.Errorf("rrr from the input's metadata: p %v does not match epsilon %v over %d labels (p %v)", s.RRRP, s.RRREpsilon, k, m.P())
	}
	return m, nil
}

// censorSanitizedAtHorizon applies the horizon rule of dpsurv's estimators on
// sanitized data: a published time at or beyond the public horizon
// timeMax (the sanitizer clamps into [0, time_max], and publishes the
// event flag as it is) is (timeMax, censored). It returns the number of
// records so treated.
func censorSanitizedAtHorizon(time []float64, event []bool, timeMax float64) int {
	n := 0
	for i, t := range time {
		if t >= timeMax {
			time[i], event[i] = timeMax, false
			n++
		}
	}
	return n
}

// sanitizedKM is the debiased Kaplan–Meier of RRR-reported cohorts
// (km.RRRKM: counts debiased with the mechanism's inverse per bin,
// intervals with the debiasing variance), after the horizon rule, with the
// TE-Sanitizer's bounded time noise added to the intervals: each published
// time is within teWindow of the true one, so the true curve lies between
// the published one shifted by -W and +W (for the median: its limits
// widened by W each side). time and event are modified (horizon rule).
func sanitizedKM(time []float64, event []bool, cohort []int32, mech *dp.RRR, timeMax, binWidth float64, teWindow int) (km.KMResult, int, error) {
	censored := censorSanitizedAtHorizon(time, event, timeMax)
	h, err := km.NewHistogram(binWidth, timeMax, mech.Labels())
	if err != nil {
		return km.KMResult{}, 0, fmt.Errorf("--bin-width/--time-max: %w", err)
	}
	for i := range time {
		if err := h.Add(time[i], event[i], int(cohort[i])); err != nil {
			return km.KMResult{}, 0, fmt.Errorf("histogram: %w", err)
		}
	}
	res, err := km.RRRKM(h, mech, km.KMOptions{})
	if err != nil {
		return km.KMResult{}, 0, err
	}
	if teWindow > 0 {
		for i := range res.Cohorts {
			widenForTimeNoise(&res.Cohorts[i].Curve, float64(teWindow))
		}
	}
	return res, censored, nil
}

// widenForTimeNoise widens a curve's pointwise interval and median limits
// for a time noise bounded by w: the lower limit at t is the one at t + w,
// the upper limit the one at t - w (1 before the curve's first time), the
// median limits move out by w.
func widenForTimeNoise(cv *survival.KMCurve, w float64) {
	n := len(cv.Time)
	lo, hi := make([]float64, n), make([]float64, n)
	for i, t := range cv.Time {
		lo[i], hi[i] = cv.Lower[i], 1
		for j := i; j < n && cv.Time[j] <= t+w; j++ {
			if !math.IsNaN(cv.Lower[j]) {
				lo[i] = cv.Lower[j]
			}
		}
		for j := i; j >= 0; j-- {
			if cv.Time[j] <= t-w {
				hi[i] = cv.Upper[j]
				break
			}
		}
	}
	cv.Lower, cv.Upper = lo, hi
	if !math.IsNaN(cv.MedianLower) {
		cv.MedianLower = math.Max(cv.MedianLower-w, 0)
	}
	if !math.IsNaN(cv.MedianUpper) {
		cv.MedianUpper += w
	}
}

// kmSanitizedFlags are fit km's flags the sanitized path reads.
type kmSanitizedFlags struct {
	unit     *string
	fs       *flag.FlagSet
	c        commonFit
	timeMax  *float64
	binWidth *float64
	method   *string
	naive    *bool
	plot     *string
}

// Estimator labels of fit km on a sanitized input.
const (
	estimatorDebiased = "debiased for the RRR on the cohort label (the default on a sanitized input: read from %s); " +
		"intervals include the debiasing variance%s; no new privacy budget (post-processing of the local release)"
	estimatorNaive = "NAIVE (requested with --naive): treats the RRR-reported labels as true; every curve is pulled toward the pooled one " +
		"and its interval ignores the mechanism: biased, not for inference"
)

// fitKMSanitized runs fit km on an input whose metadata says its cohort
// labels went through RRR. done is false (and nothing is written) when
// the input is not such a file; the caller then runs the ordinary fit.
func fitKMSanitized(env Env, f kmSanitizedFlags) (done bool, err error) {
	c := f.c
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if *c.input == "" {
		return false, nil
	}
	si, ok, err := readSanitizedInput(*c.input, c.cols.columns())
	if err != nil {
		return true, err
	}
	if !ok || !si.rrr() {
		if *f.naive {
			fmt.Fprintf(env.Stderr, "dpsurv fit km: --naive applies to an input whose cohort labels went through RRR (its metadata says so); %s has none\n", *c.input)
			return true, errUsage
		}
		return false, nil
	}
	if set["method"] && *f.method != "rrr" && !*f.naive {
		fmt.Fprintf(env.Stderr, "dpsurv fit km: %s is sanitized (cohort labels by RRR, %s): --method %s would treat the reported labels as true.\n"+
			"  Drop --method for the debiased estimator (no new budget), or add --naive --epsilon inf for the naive one.\n", *c.input, si.Source, *f.method)
		return true, errUsage
	}
	if *f.naive && c.eps.set && !c.eps.inf() {
		fmt.Fprintln(env.Stderr, "dpsurv fit km: --naive is the non-private KM of the reported labels (--epsilon inf); a central release on RRR-reported labels would spend budget on a biased curve")
		return true, errUsage
	}
	if !*f.naive && c.eps.set && !c.eps.inf() && math.Abs(c.eps.v-si.RRREpsilon) > 1e-9*math.Max(1, si.RRREpsilon) {
		fmt.Fprintf(env.Stderr, "dpsurv fit km: the input's cohort labels went through RRR at epsilon %g (%s); this fit spends no new budget: drop --epsilon\n", si.RRREpsilon, si.Source)
		return true, errUsage
	}
	spec, err := c.spec()
	if err != nil {
		return true, err
	}
	var d fileData
	if si.Source == sourceArrow {
		d, err = readSanitizedArrow(*c.input, spec.Cohorts, c.cols.columns())
	} else {
		d, err = readFitFile(*c.input, spec)
	}
	if err != nil {
		return true, err
	}
	reportDead(env.Stderr, d)
	labels := d.Labels
	// the public horizon: the flag, else the metadata, else the largest
	// published time (the file is a local release: its values are public)
	tmax, tmaxFrom := *f.timeMax, "--time-max"
	if !(tmax > 0) {
		tmax, tmaxFrom = si.TimeMax, "input metadata ("+metaTimeMax+")"
	}
	if !(tmax > 0) {
		tmax, tmaxFrom = 0, "the largest published time (the input states no horizon; pass --time-max, the sanitizer's)"
		for _, t := range d.Time {
			tmax = math.Max(tmax, t)
		}
	}
	if !(tmax > 0) {
		return true, fmt.Errorf("km: no positive time in %s", *c.input)
	}
	bw := *f.binWidth
	if bw == 0 {
		bw = km.DefaultBinWidth(tmax)
	}
	sanMeta := map[string]any{"metadata": si.Source,
		"cohort": map[string]any{"mechanism": si.CohortMech, "epsilon": si.RRREpsilon, "rrr_p": si.RRRP}}
	if si.TimeMech != "" {
		tm := map[string]any{"mechanism": si.TimeMech}
		if si.TimeMech == sanitizers.MechTE {
			tm["epsilon"], tm["window"] = si.TEEpsilon, si.TEWindow
		}
		sanMeta["time"] = tm
	}
	out := map[string]any{"sanitized_input": sanMeta, "time_max": tmax, "time_max_from": tmaxFrom, "bin_width": bw,
		"epsilon_spent": 0}
	var curves []plots.Curve
	title := ""
	if *f.naive {
		censored := censorSanitizedAtHorizon(d.Time, d.Event, tmax)
		out["method"] = "km (naive)"
		out["estimator"] = estimatorNaive
		out["naive"] = true
		out["epsilon"] = jsonEpsilon(math.Inf(1))
		out["guarantee"] = "none (non-private post-processing of a local release; naive)"
		out["neighbouring"] = nil
		out["censored_at_horizon"] = censored
		out["n"] = len(d.Time)
		var cs []kmCohortJSON
		for k, label := range labels {
			km, ok, err := cohortKM(d, k)
			if err != nil {
				return true, fmt.Errorf("km cohort %s: %w", label, err)
			}
			if !ok {
				continue
			}
			cs = append(cs, kmCurveJSON(label, km))
			curves = append(curves, plots.Curve{Label: label + " (naive)", Time: km.Time, Surv: km.Surv, Lower: km.Lower, Upper: km.Upper})
		}
		out["cohorts"] = cs
		title = "Kaplan–Meier of RRR-reported labels (NAIVE: biased)"
	} else {
		mech, err := si.mechanism(len(labels))
		if err != nil {
			return true, err
		}
		res, censored, err := sanitizedKM(d.Time, d.Event, d.Cohort, mech, tmax, bw, si.TEWindow)
		if err != nil {
			return true, fmt.Errorf("debiased km: %w", err)
		}
		te := ""
		if si.TEWindow > 0 {
			te = fmt.Sprintf(" and the TE-Sanitizer's time noise (|shift| <= window %d: limits moved out by it)", si.TEWindow)
		}
		out["method"] = res.Method
		out["estimator"] = fmt.Sprintf(estimatorDebiased, si.Source, te)
		out["naive"] = false
		out["mechanism"] = res.Mechanism
		out["epsilon"] = si.RRREpsilon
		out["epsilon_total"] = res.EpsilonTotal
		out["guarantee"] = res.Guarantee
		out["neighbouring"] = res.Neighbouring
		public := []string{"time_max", "bin_width", "cohorts", "n (record count)", "events"}
		if si.TimeMech != sanitizers.MechTE {
			public = append(public, "times")
		}
		out["public"] = public
		out["censored_at_horizon"] = censored
		out["n"] = res.N
		var cs []kmPrivateCohortJSON
		for _, ck := range res.Cohorts {
			cs = append(cs, privateCohortJSON(labels[ck.Cohort], ck))
			cv := ck.Curve
			curves = append(curves, plots.Curve{Label: labels[ck.Cohort] + " (debiased)", Time: cv.Time, Surv: cv.Surv, Lower: cv.Lower, Upper: cv.Upper})
		}
		out["cohorts"] = cs
		title = fmt.Sprintf("Kaplan–Meier of a sanitized input, debiased for RRR (epsilon = %g, local)", si.RRREpsilon)
	}
	fmt.Fprintf(env.Stderr, "dpsurv fit km: %s is sanitized (%s): %s\n", *c.input, si.Source, out["estimator"])
	if *f.plot != "" {
		if err := plots.WriteKM(*f.plot, title, *f.unit, curves); err != nil {
			return true, err
		}
	}
	return true, printJSON(env.Stdout, out)
}

// demoSanitizedKM is the demo's release from the sanitized topic: the
// debiased KM of the RRR-reported cohorts (sanitizedKM, as `fit km` on a
// sanitized file), the horizon rule, and the TE window in the intervals;
// the mechanisms' parameters are the sanitizer chain's guarantees.
func demoSanitizedKM(w io.Writer, san harness.Sanitized, cohorts []string, timeMax float64, gs []sanitizers.Guarantee) ([]plots.KMCohort, error) {
	var rrrEps float64
	teWindow := 0
	for _, g := range gs {
		switch {
		case g.Field == "cohort" && g.Mechanism == sanitizers.MechRRR && g.Epsilon != nil:
			rrrEps = *g.Epsilon
		case g.Field == "time" && g.Mechanism == sanitizers.MechTE && g.Window != nil:
			teWindow = *g.Window
		}
	}
	if !(rrrEps > 0) {
		return nil, fmt.Errorf("demo: the sanitized topic's cohort is not randomised by rrr")
	}
	mech, err := dp.NewRRR(rrrEps, len(cohorts))
	if err != nil {
		return nil, err
	}
	tt := slices.Clone(san.Time)
	ee := slices.Clone(san.Event)
	res, censored, err := sanitizedKM(tt, ee, san.Cohort, mech, timeMax, km.DefaultBinWidth(timeMax), teWindow)
	if err != nil {
		return nil, fmt.Errorf("debiased km: %w", err)
	}
	fmt.Fprintln(w, "\nrelease: Kaplan–Meier per cohort from the sanitized topic, debiased for the RRR on the labels")
	fmt.Fprintf(w, "  estimator: %s; intervals include the debiasing variance and the TE window (%d days); %d records at the horizon censored there\n",
		res.Method, teWindow, censored)
	fmt.Fprintln(w, "  guarantee: post-processing of TE-Sanitizer (time-indistinguishability) and RRR (local-dp); no central budget spent")
	var curves []plots.KMCohort
	for _, ck := range res.Cohorts {
		cv := ck.Curve
		fmt.Fprintf(w, "  cohort %-6s n≈%-8.0f median survival %s\n", cohorts[ck.Cohort], ck.N, fmtMedian(math.Round(cv.Median), math.Floor(cv.MedianLower), math.Ceil(cv.MedianUpper)))
		curves = append(curves, plots.KMCohort{Label: cohorts[ck.Cohort], Legend: "cohort " + cohorts[ck.Cohort] + " (sanitized, debiased)",
			Position: ck.Cohort, Time: cv.Time, Surv: cv.Surv, Lower: cv.Lower, Upper: cv.Upper, End: math.NaN(), NoiseFrom: math.NaN()})
	}
	return curves, nil
}
