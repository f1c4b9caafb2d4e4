package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/schemas"
)

// Num is a float64 that encodes NaN and ±Inf as JSON null
// (schemas.AppendNullableFloat, six significant digits).
type Num float64

// MarshalJSON implements json.Marshaler: six significant digits, or null.
func (n Num) MarshalJSON() ([]byte, error) {
	return schemas.AppendNullableFloat(nil, float64(n), 6), nil
}

// Config configures Run.
type Config struct {
	// Kernel is the mechanism the adversary assumes (required).
	Kernel  Kernel
	Attack  AttackOptions
	Utility UtilityOptions
	// Key, when set, joins the records by recomputing pseudonyms and adds
	// the per-record MAE.
	Key []byte
}

// Report is the result of an audit, shaped for `dpsurv audit --json`. Maps
// are keyed by cohort label.
type Report struct {
	Mechanism string      `json:"mechanism"`
	Records   RecordCount `json:"records"`
	Attack    AttackPart  `json:"attack"`
	Utility   UtilityPart `json:"utility"`
	// Cohorts lists the labels in their public order (JSON maps are sorted
	// by key).
	Cohorts []string `json:"cohorts"`
}

// RecordCount is the number of records in each dataset.
type RecordCount struct {
	Original  int `json:"original"`
	Sanitized int `json:"sanitized"`
}

// AttackPart is the attack section of a Report.
type AttackPart struct {
	TestPerCohort int     `json:"test_per_cohort"`
	Resamples     int     `json:"resamples"`
	Quantile      float64 `json:"quantile"`
	// Precision and PrecisionNonPrivate are medians over resamples.
	Precision             map[string]Num    `json:"precision"`
	PrecisionNonPrivate   map[string]Num    `json:"precision_nonprivate"`
	PrecisionCI           map[string][2]Num `json:"precision_ci"`
	PrecisionNonPrivateCI map[string][2]Num `json:"precision_nonprivate_ci"`
}

// UtilityPart is the utility section of a Report.
type UtilityPart struct {
	KL              Num            `json:"kl"`
	MAE             Num            `json:"mae"`
	KLByCohort      map[string]Num `json:"kl_by_cohort"`
	MAEByCohort     map[string]Num `json:"mae_by_cohort"`
	LogRank         map[string]Num `json:"logrank"`
	LogRankP        map[string]Num `json:"logrank_p"`
	MedianOriginal  map[string]Num `json:"median_original"`
	MedianSanitized map[string]Num `json:"median_sanitized"`
	MedianShift     map[string]Num `json:"median_shift"`
	NOriginal       map[string]int `json:"n_original"`
	NSanitized      map[string]int `json:"n_sanitized"`
	// MAEPerRecord and Joined are set with a key (Config.Key).
	MAEPerRecord *Num    `json:"mae_per_record,omitempty"`
	Joined       *int    `json:"joined,omitempty"`
	KLBin        int64   `json:"kl_bin"`
	KLAlpha      float64 `json:"kl_alpha"`
}

// Run audits san against orig: the cohort inference attack (sanitized and
// non-private scores on the same test sets) and the utility measures.
func Run(orig, san Data, cfg Config, src dp.Source) (Report, error) {
	if cfg.Kernel == nil {
		return Report{}, errors.New("audit: no mechanism kernel")
	}
	priv, err := Scores(orig, san, cfg.Kernel)
	if err != nil {
		return Report{}, fmt.Errorf("audit: %w", err)
	}
	npriv, err := NonPrivateScores(orig)
	if err != nil {
		return Report{}, fmt.Errorf("audit: %w", err)
	}
	run, err := CohortInference(orig, src, cfg.Attack, priv, npriv)
	if err != nil {
		return Report{}, fmt.Errorf("audit: %w", err)
	}
	uo, err := cfg.Utility.withDefaults()
	if err != nil {
		return Report{}, fmt.Errorf("audit: utility: %w", err)
	}
	u, err := Measure(orig, san, uo)
	if err != nil {
		return Report{}, fmt.Errorf("audit: %w", err)
	}
	r := Report{
		Mechanism: cfg.Kernel.Name(),
		Records:   RecordCount{Original: orig.Len(), Sanitized: san.Len()},
		Cohorts:   append([]string(nil), orig.Cohorts...),
		Attack: AttackPart{
			TestPerCohort: run.TestPerCohort, Resamples: run.Resamples, Quantile: run.Quantile,
			Precision: map[string]Num{}, PrecisionNonPrivate: map[string]Num{},
			PrecisionCI: map[string][2]Num{}, PrecisionNonPrivateCI: map[string][2]Num{},
		},
		Utility: UtilityPart{
			KL: Num(u.KL), MAE: Num(u.MAE),
			KLByCohort: map[string]Num{}, MAEByCohort: map[string]Num{}, LogRank: map[string]Num{}, LogRankP: map[string]Num{},
			MedianOriginal: map[string]Num{}, MedianSanitized: map[string]Num{}, MedianShift: map[string]Num{},
			NOriginal: map[string]int{}, NSanitized: map[string]int{}, KLBin: uo.KLBin, KLAlpha: uo.Alpha,
		},
	}
	for c, label := range orig.Cohorts {
		p, q := run.Results[0].Precision[c], run.Results[1].Precision[c]
		r.Attack.Precision[label] = Num(p.Median)
		r.Attack.PrecisionNonPrivate[label] = Num(q.Median)
		r.Attack.PrecisionCI[label] = [2]Num{Num(p.Lower), Num(p.Upper)}
		r.Attack.PrecisionNonPrivateCI[label] = [2]Num{Num(q.Lower), Num(q.Upper)}
		cu := u.Cohorts[c]
		r.Utility.KLByCohort[label] = Num(cu.KL)
		r.Utility.MAEByCohort[label] = Num(cu.MAE)
		r.Utility.LogRank[label] = Num(cu.LogRank.ChiSq)
		r.Utility.LogRankP[label] = Num(cu.LogRank.P)
		r.Utility.MedianOriginal[label] = Num(cu.MedianOriginal)
		r.Utility.MedianSanitized[label] = Num(cu.MedianSanitized)
		r.Utility.MedianShift[label] = Num(cu.MedianShift)
		r.Utility.NOriginal[label] = cu.NOriginal
		r.Utility.NSanitized[label] = cu.NSanitized
	}
	if len(cfg.Key) > 0 {
		ps, err := Pseudonyms(cfg.Key, orig.ID)
		if err != nil {
			return Report{}, fmt.Errorf("audit: %w", err)
		}
		mae, n, err := PerRecordMAE(orig, ps, san)
		if err != nil {
			return Report{}, fmt.Errorf("audit: %w", err)
		}
		m := Num(mae)
		r.Utility.MAEPerRecord, r.Utility.Joined = &m, &n
	}
	return r, nil
}

// WriteJSON writes the report as one JSON object.
func (r Report) WriteJSON(w io.Writer) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("audit report: %w", err)
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// WriteText writes the report as readable tables.
func (r Report) WriteText(w io.Writer) error {
	f := func(n Num, prec int) string {
		v := float64(n)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "-"
		}
		return strconv.FormatFloat(v, 'f', prec, 64)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "mechanism assumed by the adversary: %s\n", r.Mechanism)
	fmt.Fprintf(&b, "records: original %d, sanitized %d\n\n", r.Records.Original, r.Records.Sanitized)
	fmt.Fprintf(&b, "cohort inference attack (paper 001): %d targets per cohort, %d resamples, assigned at or above the %g quantile\n",
		r.Attack.TestPerCohort, r.Attack.Resamples, r.Attack.Quantile)
	fmt.Fprintf(&b, "precision: median [2.5%%, 97.5%%] over resamples; chance is 1/%d = %.3f\n\n", len(r.Cohorts), 1/float64(len(r.Cohorts)))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "cohort\tsanitized\t\tnon-private\t\t")
	for _, c := range r.Cohorts {
		p, q := r.Attack.PrecisionCI[c], r.Attack.PrecisionNonPrivateCI[c]
		fmt.Fprintf(tw, "%s\t%s\t[%s, %s]\t%s\t[%s, %s]\t\n", c, f(r.Attack.Precision[c], 3), f(p[0], 3), f(p[1], 3),
			f(r.Attack.PrecisionNonPrivate[c], 3), f(q[0], 3), f(q[1], 3))
	}
	tw.Flush()
	u := r.Utility
	fmt.Fprintf(&b, "\nutility, all records pooled: KL (bins of %d units, pseudo-count %g) %s, pooled MAE (quantile-matched) %s", u.KLBin, u.KLAlpha, f(u.KL, 4), f(u.MAE, 2))
	if u.MAEPerRecord != nil {
		fmt.Fprintf(&b, ", per-record MAE %s over %d joined records", f(*u.MAEPerRecord, 2), *u.Joined)
	}
	b.WriteString("\n\nutility per cohort: each cohort's original times against the sanitized times of the records\n" +
		"whose released label is that cohort (label noise moves records between cohorts, so these are larger)\n\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "cohort\tn orig\tn san\tcohort KL\tcohort MAE\tlog-rank chisq\tp\tmedian orig\tmedian san\tshift\t")
	for _, c := range r.Cohorts {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", c, u.NOriginal[c], u.NSanitized[c], f(u.KLByCohort[c], 4), f(u.MAEByCohort[c], 2),
			f(u.LogRank[c], 3), f(u.LogRankP[c], 3), f(u.MedianOriginal[c], 1), f(u.MedianSanitized[c], 1), f(u.MedianShift[c], 1))
	}
	tw.Flush()
	_, err := io.WriteString(w, b.String())
	return err
}
