package eval

// sanitizers: paper 001's comparison of TE-Sanitizer, BinSup and DPTime
// (cohort inference attack, KL, MAE, KM log-rank) and paper 004's
// comparison of RRR and LNTE on the kidney data (pairwise log-rank, median
// survival with CIs), reproduced on the shared data sets. Writes
// OUT/evaluation-sanitizers.md and OUT/img/sanitizers_*.png, deterministically:
// every draw comes from dp.NewSeededSource or a fixed public PRF key
// (evaluation only, never a release).

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dpsurv/dpsurv/audit"
	"github.com/dpsurv/dpsurv/baselines"
	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/survival"
)

func init() {
	register("sanitizers", "TE-Sanitizer vs BinSup vs DPTime (paper 001) and RRR vs LNTE (paper 004): writes OUT/evaluation-sanitizers.md and PNGs", runSanitizers)
}

type sanConfig struct {
	data      string
	out       string
	resamples int
	perCohort int
	draws     int
	seed      uint64
	command   string
	// noFigures writes the page without its figures (their links stay):
	// the page is no function of the figures, so the determinism test's
	// second run skips the PNG rendering, about half its CPU.
	noFigures bool
}

func runSanitizers(args []string, stdout, stderr io.Writer) error {
	cfg, err := sanParse(args, stderr)
	if err != nil {
		return err
	}
	return sanWrite(cfg, stderr)
}

// sanParse reads the command's flags.
func sanParse(args []string, stderr io.Writer) (sanConfig, error) {
	fs := newFlagSet("sanitizers", stderr)
	var cfg sanConfig
	fs.StringVar(&cfg.data, "data", "data", "directory of flchain_tte.csv, lung_tte.csv, kidney_tte.csv")
	fs.StringVar(&cfg.out, "out", "docs", "output directory (the page, and its figures under img/)")
	fs.IntVar(&cfg.resamples, "resamples", 100, "attack: balanced test sets per configuration")
	fs.IntVar(&cfg.perCohort, "per-cohort", 100, "attack: targets per cohort in a test set")
	fs.IntVar(&cfg.draws, "draws", 200, "RRR vs LNTE: repetitions of each mechanism for the summary table")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of dp.NewSeededSource (evaluation only)")
	if err := parseArgs(fs, args); err != nil {
		return cfg, err
	}
	if cfg.resamples < 1 || cfg.perCohort < 1 || cfg.draws < 1 || cfg.seed == 0 {
		return cfg, fmt.Errorf("resamples, per-cohort, draws and seed must be positive")
	}
	cfg.command = sanCommand(args)
	return cfg, nil
}

// sanWrite writes OUT/evaluation-sanitizers.md and its figures.
func sanWrite(cfg sanConfig, stderr io.Writer) error {
	if err := os.MkdirAll(filepath.Join(cfg.out, "img"), 0o755); err != nil {
		return fmt.Errorf("sanitizers: %w", err)
	}
	start := time.Now()
	var page bytes.Buffer
	if err := sanPage(&page, cfg); err != nil {
		return err
	}
	path := filepath.Join(cfg.out, "evaluation-sanitizers.md")
	if err := os.WriteFile(path, page.Bytes(), 0o644); err != nil {
		return fmt.Errorf("sanitizers: %w", err)
	}
	fmt.Fprintf(stderr, "dpsurv-eval sanitizers: wrote %s and its figures in %.1fs\n", path, time.Since(start).Seconds())
	return nil
}

func sanCommand(args []string) string {
	parts := []string{"go run ./cmd/dpsurv-eval sanitizers"}
	for _, a := range args {
		if strings.ContainsAny(a, " \t'\"") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// sanF formats a number with prec decimals ("—" for NaN or Inf).
func sanF(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if s == "-"+strconv.FormatFloat(0, 'f', prec, 64) {
		s = s[1:]
	}
	return s
}

// sanRun is one sanitized data set with the mechanism the adversary
// assumes.
type sanRun struct {
	method, params, guarantee string
	san                       audit.Data
	kernel                    audit.Kernel
	perRecordMAE              float64 // NaN when records cannot be joined
}

// sanResult holds the audit of one run.
type sanResult struct {
	run       sanRun
	precision []float64 // median per cohort
	npriv     []float64
	util      audit.Utility
}

func (r sanResult) precisionStats() (mean, lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	n := 0
	for _, p := range r.precision {
		if math.IsNaN(p) {
			continue
		}
		mean += p
		lo, hi = math.Min(lo, p), math.Max(hi, p)
		n++
	}
	return mean / float64(n), lo, hi
}

func (r sanResult) meanKL() float64 {
	s, n := 0.0, 0
	for _, c := range r.util.Cohorts {
		if !math.IsNaN(c.KL) {
			s += c.KL
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return s / float64(n)
}

// sanAudit runs the attack (every run of a data set sees the same test sets:
// the source is re-seeded) and the utility measures.
func sanAudit(ds *sanDataset, run sanRun, cfg sanConfig) (sanResult, error) {
	priv, err := audit.Scores(ds.data, run.san, run.kernel)
	if err != nil {
		return sanResult{}, err
	}
	np, err := audit.NonPrivateScores(ds.data)
	if err != nil {
		return sanResult{}, err
	}
	ar, err := audit.CohortInference(ds.data, dp.NewSeededSource(cfg.seed), audit.AttackOptions{PerCohort: cfg.perCohort, Resamples: cfg.resamples}, priv, np)
	if err != nil {
		return sanResult{}, err
	}
	u, err := audit.Measure(ds.data, run.san, audit.UtilityOptions{KLBin: 1, TimeMax: ds.tmax})
	if err != nil {
		return sanResult{}, err
	}
	res := sanResult{run: run, util: u}
	for c := range ds.data.Cohorts {
		res.precision = append(res.precision, ar.Results[0].Precision[c].Median)
		res.npriv = append(res.npriv, ar.Results[1].Precision[c].Median)
	}
	return res, nil
}

func sanTE(ds *sanDataset, eps float64, w int) (sanRun, error) {
	key := sanKey(fmt.Sprintf("%s te %g %d", ds.name, eps, w))
	san, err := sanChain(ds.data, ds.tmax, eps, w, 0, key)
	if err != nil {
		return sanRun{}, err
	}
	k, err := audit.NewTEKernel(eps, w, ds.tmax)
	if err != nil {
		return sanRun{}, err
	}
	ps, err := audit.Pseudonyms(key, ds.data.ID)
	if err != nil {
		return sanRun{}, err
	}
	mae, _, err := audit.PerRecordMAE(ds.data, ps, san)
	if err != nil {
		return sanRun{}, err
	}
	return sanRun{method: "TE-Sanitizer", params: fmt.Sprintf("ε=%g, W=%d", eps, w),
		guarantee: fmt.Sprintf("TI, L=%.2f", dp.TEClampedLoss(eps, w, ds.tmax)), san: san, kernel: k, perRecordMAE: mae}, nil
}

func sanBin(ds *sanDataset, method string, eps float64, timeBin, sizeBin int64, seed uint64) (sanRun, error) {
	cfg := baselines.Config{Method: method, Cohorts: ds.data.Cohorts, TimeMax: float64(ds.tmax), TimeUnit: ds.unit,
		TimeBin: timeBin, SizeBin: sizeBin, Epsilon: eps}
	san, _, err := sanBaseline(ds.data, cfg, dp.NewSeededSource(seed))
	if err != nil {
		return sanRun{}, err
	}
	k, err := audit.NewBinKernel(timeBin, ds.tmax, method)
	if err != nil {
		return sanRun{}, err
	}
	r := sanRun{san: san, kernel: k, perRecordMAE: math.NaN()}
	if method == baselines.MethodBinSup {
		r.method, r.params, r.guarantee = "BinSup", fmt.Sprintf("TimeBin=%d, SizeBin=%d", timeBin, sizeBin), "none"
	} else {
		r.method, r.params, r.guarantee = "DPTime", fmt.Sprintf("ε=%g, TimeBin=%d", eps, timeBin), "ε-DP (replace-one)"
	}
	return r, nil
}

func sanPage(w io.Writer, cfg sanConfig) error {
	flchain, err := sanLoad(cfg.data, "flchain", "flchain_tte.csv", "months", 30.4375, 180, nil)
	if err != nil {
		return err
	}
	lung, err := sanLoad(cfg.data, "lung", "lung_tte.csv", "days", 1, 1100, []string{"male", "female"})
	if err != nil {
		return err
	}
	kidney, err := sanLoad(cfg.data, "kidney", "kidney_tte.csv", "days", 1, 600, []string{"Other", "GN", "AN", "PKD"})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, `# Per-record sanitizers (paper 001) and RRR vs LNTE (paper 004): generated tables

<!-- Generated by dpsurv-eval sanitizers; do not edit by hand. -->
<!-- doccmd: full go run ./cmd/dpsurv-eval sanitizers -- regenerates this page (about 10 s idle) -->

Regenerate this page and its figures (about 10 s on 2 cores; deterministic):

    %s

Every random draw comes from `+"`dp.NewSeededSource(%d)`"+` or from a fixed PRF key
derived from a public label: evaluation only, never a release. The data are
the shared sets in `+"`%s`"+`. The prose around the tables, and why our numbers
differ from the papers', is in [evaluation.md](evaluation.md#per-record-sanitizers-paper-001-and-rrr-vs-lnte-paper-004).

**Measures** (package `+"`audit`"+`, the code behind `+"`dpsurv audit`"+`):

* *Attack precision*: paper 001's cohort inference attack. The adversary
  knows a target's true time and the mechanism (its exact pmf), scores every
  cohort by CL(c, t) = Σ P(c | t̂) P(t̂ | t) with P(c | t̂) read off the
  sanitized data, and assigns the targets at or above the 95%% quantile of a
  balanced test set's scores to c. %d targets per cohort (fewer when a cohort
  is smaller: then the size of the smallest cohort), %d test sets; the
  tables give the median precision over test sets. Every method of a data
  set is attacked on the same test sets. Chance is 1/(number of cohorts).
* *KL*: KL(original ‖ sanitized) of the time histograms per cohort, bins of
  one time unit on [0, T_max], 0.5 added to every bin of both histograms
  (identical data give 0; a lost record costs much).
* *MAE*: mean absolute difference of quantile-matched times (the
  Wasserstein-1 distance of the two time distributions). For TE-Sanitizer
  the per-record MAE (records joined through the key) is given as well;
  BinSup and DPTime regenerate records that link to no patient.
* *Log-rank*: χ² (1 df) of the sanitized against the original KM curve of
  a cohort; * marks p ≤ 0.05.

`, cfg.command, cfg.seed, cfg.data, cfg.perCohort, cfg.resamples)

	if err := sanSection1(w, cfg, flchain, lung, kidney); err != nil {
		return err
	}
	if err := sanSection2(w, cfg, flchain); err != nil {
		return err
	}
	if err := sanSection3(w, cfg, lung, flchain); err != nil {
		return err
	}
	return sanSectionRRR(w, cfg, kidney)
}

// Section 1: attack precision on the non-private data (paper 001 Fig. 1).
func sanSection1(w io.Writer, cfg sanConfig, sets ...*sanDataset) error {
	fmt.Fprintf(w, "## 1. Attack precision on the original data (paper 001, Fig. 1)\n\n")
	fmt.Fprintf(w, "| data set | records | cohorts | distinct times | targets per cohort | chance | median precision per cohort |\n|---|---|---|---|---|---|---|\n")
	for _, ds := range sets {
		np, err := audit.NonPrivateScores(ds.data)
		if err != nil {
			return err
		}
		ar, err := audit.CohortInference(ds.data, dp.NewSeededSource(cfg.seed), audit.AttackOptions{PerCohort: cfg.perCohort, Resamples: cfg.resamples}, np)
		if err != nil {
			return err
		}
		distinct := map[int64]bool{}
		for _, t := range ds.data.Time {
			distinct[t] = true
		}
		var per []string
		for c, name := range ds.names {
			per = append(per, fmt.Sprintf("%s %s", name, sanF(ar.Results[0].Precision[c].Median, 2)))
		}
		fmt.Fprintf(w, "| %s (%s) | %d | %d | %d | %d | %s | %s |\n", ds.name, ds.unit, ds.data.Len(), len(ds.data.Cohorts), len(distinct),
			ar.TestPerCohort, sanF(1/float64(len(ds.data.Cohorts)), 2), strings.Join(per, ", "))
	}
	fmt.Fprintln(w)
	return nil
}

// Section 2: the parameter sweep of paper 001 Table I / Fig. 2 on flchain.
func sanSection2(w io.Writer, cfg sanConfig, ds *sanDataset) error {
	fmt.Fprintf(w, "## 2. flchain: privacy and utility across parameters (paper 001, Table I and Fig. 2)\n\n")
	fmt.Fprintf(w, "flchain, %d records, %d cohorts (`flc.grp` deciles), times in months (days / 30.4375, rounded), public T_max = %d months. "+
		"Defaults (the middle of paper 001's Table I): ε = 0.8, W = 10, TimeBin = 1, SizeBin = 5; each block varies one parameter. "+
		"Precision: mean over cohorts of the median precision, and the lowest and highest cohort (chance 0.10); KL: mean over cohorts.\n\n",
		ds.data.Len(), len(ds.data.Cohorts), ds.tmax)
	fmt.Fprintf(w, "| method | parameters | guarantee | precision (mean) | lowest – highest cohort | KL | MAE | per-record MAE | records out |\n|---|---|---|---|---|---|---|---|---|\n")
	np, err := sanAudit(ds, sanRun{method: "none", params: "original data", guarantee: "none", san: ds.data, kernel: audit.IdentityKernel{}, perRecordMAE: 0}, cfg)
	if err != nil {
		return err
	}
	row := func(r sanResult) {
		m, lo, hi := r.precisionStats()
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s – %s | %s | %s | %s | %d |\n", r.run.method, r.run.params, r.run.guarantee,
			sanF(m, 3), sanF(lo, 2), sanF(hi, 2), sanF(r.meanKL(), 4), sanF(r.util.MAE, 2), sanF(r.run.perRecordMAE, 2), r.run.san.Len())
	}
	row(np)
	// A run with a nil kernel is a configuration the exact TE sampler
	// refuses (εW too large: every outcome must keep a probability above
	// 2^-44); it gets a row saying so.
	var runs []sanRun
	for _, eps := range []float64{0.1, 0.2, 0.4, 0.8, 1.6, 3.2} {
		if _, err := dp.NewTE(eps, 10); err != nil {
			runs = append(runs, sanRun{method: "TE-Sanitizer", params: fmt.Sprintf("ε=%g, W=10", eps)})
			continue
		}
		r, err := sanTE(ds, eps, 10)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	// The window sweep: at ε = 0.8 the sampler refuses W >= 50 (every
	// outcome must keep a probability above 2^-44, i.e. εW below about 30),
	// so the large windows run at ε = 0.2.
	for _, ew := range []struct {
		eps float64
		w   int
	}{{0.8, 5}, {0.8, 25}, {0.2, 5}, {0.2, 25}, {0.2, 50}, {0.2, 100}} {
		r, err := sanTE(ds, ew.eps, ew.w)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	for _, tb := range []int64{1, 5, 10} {
		r, err := sanBin(ds, baselines.MethodBinSup, 0, tb, 5, 0)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	for _, sb := range []int64{1, 10, 20} {
		r, err := sanBin(ds, baselines.MethodBinSup, 0, 1, sb, 0)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	for i, eps := range []float64{0.1, 0.2, 0.4, 0.8, 1.6, 3.2} {
		r, err := sanBin(ds, baselines.MethodDPTime, eps, 1, 0, cfg.seed+uint64(i)+1)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	results := map[string]sanResult{}
	for _, r := range runs {
		if r.kernel == nil {
			fmt.Fprintf(w, "| %s | %s | refused by the exact sampler: εW too large (outcome probabilities below 2^-44) | | | | | | |\n", r.method, r.params)
			continue
		}
		res, err := sanAudit(ds, r, cfg)
		if err != nil {
			return err
		}
		results[r.method+" "+r.params] = res
		row(res)
	}
	fmt.Fprintln(w)

	// Per cohort at the defaults.
	te := results["TE-Sanitizer ε=0.8, W=10"]
	bs := results["BinSup TimeBin=1, SizeBin=5"]
	dt := results["DPTime ε=0.8, TimeBin=1"]
	fmt.Fprintf(w, "### Per cohort at the defaults (TE-Sanitizer ε = 0.8, W = 10; BinSup TimeBin = 1, SizeBin = 5; DPTime ε = 0.8)\n\n")
	fmt.Fprintf(w, "| cohort | records | precision: original | TE-Sanitizer | BinSup | DPTime | KL: TE-Sanitizer | BinSup | DPTime | records out: BinSup | DPTime |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for c, name := range ds.names {
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %d | %d |\n", name, te.util.Cohorts[c].NOriginal,
			sanF(np.precision[c], 2), sanF(te.precision[c], 2), sanF(bs.precision[c], 2), sanF(dt.precision[c], 2),
			sanF(te.util.Cohorts[c].KL, 4), sanF(bs.util.Cohorts[c].KL, 4), sanF(dt.util.Cohorts[c].KL, 4),
			bs.util.Cohorts[c].NSanitized, dt.util.Cohorts[c].NSanitized)
	}
	fmt.Fprintln(w)
	return nil
}

// Section 3: KM case studies (paper 001 Tables II/III, Fig. 6).
func sanSection3(w io.Writer, cfg sanConfig, lung, flchain *sanDataset) error {
	fmt.Fprintf(w, "## 3. Kaplan–Meier case studies (paper 001, Tables II and III, Fig. 6)\n\n")
	cases := []struct {
		ds                *sanDataset
		eps               float64
		w                 int
		timeBin, sizeBin  int64
		plotCohorts       []int
		tableName, figure string
		medians           bool
	}{
		{lung, 1, 10, 10, 2, []int{0, 1}, "Table II's parameters (ε = 1, W = 10, SizeBin = 2, TimeBin = 10)", "lung", true},
		// Most flchain cohorts never reach S = 0.5: no median columns.
		{flchain, 1, 10, 1, 5, []int{0, 4, 9}, "Table III's parameters (ε = 1, W = 10, SizeBin = 5, TimeBin = 1)", "flchain", false},
	}
	for _, cs := range cases {
		ds := cs.ds
		fmt.Fprintf(w, "### %s (%d records, times in %s), %s\n\n", ds.name, ds.data.Len(), ds.unit, cs.tableName)
		te, err := sanTE(ds, cs.eps, cs.w)
		if err != nil {
			return err
		}
		bs, err := sanBin(ds, baselines.MethodBinSup, 0, cs.timeBin, cs.sizeBin, 0)
		if err != nil {
			return err
		}
		dt, err := sanBin(ds, baselines.MethodDPTime, cs.eps, cs.timeBin, 0, cfg.seed+100)
		if err != nil {
			return err
		}
		runs := []sanRun{te, bs, dt}
		var header, sep strings.Builder
		header.WriteString("| method | parameters |")
		sep.WriteString("|---|---|")
		for _, n := range ds.names {
			if cs.medians {
				fmt.Fprintf(&header, " %s: χ² | median shift |", n)
				sep.WriteString("---|---|")
			} else {
				fmt.Fprintf(&header, " %s |", n)
				sep.WriteString("---|")
			}
		}
		if cs.medians {
			fmt.Fprintf(w, "Log-rank χ² of the sanitized against the original KM curve per cohort (* p ≤ 0.05), and the shift of the KM median in %s (original medians: ", ds.unit)
			var meds []string
			for c, n := range ds.names {
				km, err := sanKM(ds.data, c)
				if err != nil {
					return err
				}
				meds = append(meds, fmt.Sprintf("%s %s", n, sanF(km.Median, 0)))
			}
			fmt.Fprintf(w, "%s).\n\n", strings.Join(meds, ", "))
		} else {
			fmt.Fprintf(w, "Log-rank χ² of the sanitized against the original KM curve per cohort (* p ≤ 0.05).\n\n")
		}
		fmt.Fprintf(w, "%s\n%s\n", header.String(), sep.String())
		for _, r := range runs {
			u, err := audit.Measure(ds.data, r.san, audit.UtilityOptions{KLBin: 1, TimeMax: ds.tmax})
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "| %s | %s |", r.method, r.params)
			for _, cu := range u.Cohorts {
				star := ""
				if cu.LogRank.P <= 0.05 {
					star = "*"
				}
				if cs.medians {
					fmt.Fprintf(w, " %s%s | %s |", sanF(cu.LogRank.ChiSq, 4), star, sanF(cu.MedianShift, 0))
				} else {
					fmt.Fprintf(w, " %s%s |", sanF(cu.LogRank.ChiSq, 4), star)
				}
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w)
		for _, r := range runs {
			var pairs []sanPair
			for _, c := range cs.plotCohorts {
				ko, err := sanKM(ds.data, c)
				if err != nil {
					return err
				}
				pr := sanPair{label: ds.names[c], orig: ko}
				if kr, err := sanKM(r.san, c); err == nil { // none where the release emptied the cohort
					pr.released, pr.ok = kr, true
				}
				pairs = append(pairs, pr)
			}
			file := fmt.Sprintf("sanitizers_km_%s_%s.png", cs.figure, strings.ToLower(strings.ReplaceAll(r.method, "-", "")))
			title := fmt.Sprintf("%s: original (dashed) vs %s %s (solid)", ds.name, r.method, r.params)
			if err := cfg.plotKM(file, title, "time ("+ds.unit+")", r.method, pairs); err != nil {
				return err
			}
			fmt.Fprintf(w, "![%s KM, %s](img/%s)\n", ds.name, r.method, file)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// sanKM is the Kaplan–Meier curve (95% intervals) of cohort c of d; an
// error for an empty cohort.
func sanKM(d audit.Data, c int) (survival.KMCurve, error) {
	t, e := sanCohort(d, c)
	return survival.KaplanMeier(t, e, 0.95)
}

// sanCohort returns the float times and events of cohort c.
func sanCohort(d audit.Data, c int) ([]float64, []bool) {
	var t []float64
	var e []bool
	for i, k := range d.Cohort {
		if k == c {
			t = append(t, float64(d.Time[i]))
			e = append(e, d.Event[i])
		}
	}
	return t, e
}
