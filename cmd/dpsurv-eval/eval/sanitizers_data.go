package eval

// Data loading and sanitizing helpers of the sanitizers evaluation.

import (
	"crypto/sha256"
	"fmt"
	"math"
	"path/filepath"

	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/audit"
	"github.com/dpsurv/dpsurv/baselines"
	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/sanitizers"
	"github.com/dpsurv/dpsurv/schemas"
)

// sanDataset is one shared data set prepared for the evaluation.
type sanDataset struct {
	name    string
	file    string
	unit    string  // time unit after conversion
	divisor float64 // days per unit (1: days kept)
	tmax    int64   // public time bound, in unit
	names   []string
	data    audit.Data
}

// sanLoad reads dir/file through the audit reader (the same validator as
// dpsurv sanitize) and converts days to the evaluation unit by rounding
// t / divisor to the nearest integer.
func sanLoad(dir, name, file, unit string, divisor float64, tmax int64, names []string) (*sanDataset, error) {
	path := filepath.Join(dir, file)
	labels, err := audit.ScanLabels(path, "cohort")
	if err != nil {
		return nil, err
	}
	d, st, err := audit.ReadFile(path, schemas.Spec{Cohorts: labels, TimeUnit: "days"})
	if err != nil {
		return nil, err
	}
	if st.DeadLettered > 0 {
		return nil, fmt.Errorf("load %s: %d rows rejected", file, st.DeadLettered)
	}
	for i, t := range d.Time {
		d.Time[i] = int64(math.Round(float64(t) / divisor))
		if d.Time[i] > tmax {
			return nil, fmt.Errorf("load %s: a time exceeds the public bound %d %s", file, tmax, unit)
		}
	}
	if names == nil {
		names = labels
	}
	if len(names) != len(labels) {
		return nil, fmt.Errorf("load %s: %d display names for %d cohorts", file, len(names), len(labels))
	}
	return &sanDataset{name: name, file: file, unit: unit, divisor: divisor, tmax: tmax, names: names, data: d}, nil
}

// sanKey derives the fixed PRF key of one evaluation run from a label. It is
// public by construction: evaluation only, never a release.
func sanKey(label string) []byte {
	k := sha256.Sum256([]byte("dpsurv-eval sanitizers (public evaluation key) " + label))
	return k[:]
}

// sanChain runs the production sanitizer chain over d: TE on the time when
// teEps > 0 (else the time is public), RRR on the cohort when rrrEps > 0
// (else the cohort is public), the event public. The result keeps the
// pseudonyms as ids.
func sanChain(d audit.Data, tmax int64, teEps float64, teW int, rrrEps float64, key []byte) (audit.Data, error) {
	mem := memory.NewGoAllocator()
	spec := schemas.Spec{Cohorts: d.Cohorts, TimeUnit: "units"}
	times := make([]float64, d.Len())
	labels := make([]string, d.Len())
	for i := range times {
		times[i] = float64(d.Time[i])
		labels[i] = d.Cohorts[d.Cohort[i]]
	}
	ids := d.ID
	if ids == nil {
		ids = make([]string, d.Len())
		for i := range ids {
			ids[i] = fmt.Sprint(i)
		}
	}
	in, err := schemas.BuildInput(spec, ids, times, d.Event, labels, nil, mem)
	if err != nil {
		return audit.Data{}, err
	}
	defer in.Release()
	v, err := schemas.NewValidator(spec, mem)
	if err != nil {
		return audit.Data{}, err
	}
	good, dead := v.Validate(in)
	defer good.Release()
	if len(dead) > 0 {
		return audit.Data{}, fmt.Errorf("sanitize: %d rows rejected (%s)", len(dead), dead[0].Reason)
	}
	cfg := sanitizers.Config{Key: key, Cohorts: d.Cohorts, TimeMax: float64(tmax), TimeUnit: "units", PseudonymizeID: true, Public: []string{"event"}}
	if teEps > 0 {
		cfg.Time = sanitizers.TimeConfig{Mechanism: "te", Epsilon: teEps, Window: teW}
	} else {
		cfg.Public = append(cfg.Public, "time")
	}
	if rrrEps > 0 {
		cfg.Cohort = sanitizers.CohortConfig{Mechanism: "rrr", Epsilon: rrrEps}
	} else {
		cfg.Public = append(cfg.Public, "cohort")
	}
	chain, err := sanitizers.New(cfg, mem)
	if err != nil {
		return audit.Data{}, err
	}
	defer chain.Release()
	out, _, err := chain.Apply(good)
	if err != nil {
		return audit.Data{}, err
	}
	defer out.Release()
	sc := out.Schema()
	col := func(name string) int { return sc.FieldIndices(name)[0] }
	san := audit.Data{Cohorts: d.Cohorts}
	pid := out.Column(col("id")).(*array.String)
	pe := out.Column(col("event")).(*array.Boolean)
	pc := out.Column(col("cohort")).(*array.Dictionary)
	codes := pc.Indices().(*array.Int32)
	n := int(out.NumRows())
	for i := range n {
		san.ID = append(san.ID, pid.Value(i))
		san.Event = append(san.Event, pe.Value(i))
		san.Cohort = append(san.Cohort, int(codes.Value(i)))
	}
	switch tc := out.Column(col("time")).(type) {
	case *array.Int64:
		san.Time = append(san.Time, tc.Int64Values()...)
	case *array.Float64:
		for _, t := range tc.Float64Values() {
			san.Time = append(san.Time, int64(math.Round(t)))
		}
	default:
		return audit.Data{}, fmt.Errorf("sanitize: unexpected time type %s", tc.DataType())
	}
	return san, nil
}

// sanBaseline applies BinSup or DPTime to d and returns the regenerated
// records.
func sanBaseline(d audit.Data, cfg baselines.Config, src dp.Source) (audit.Data, *baselines.Release, error) {
	s, err := baselines.New(cfg)
	if err != nil {
		return audit.Data{}, nil, err
	}
	for i := range d.Time {
		if err := s.AddRecord(float64(d.Time[i]), d.Event[i], d.Cohort[i]); err != nil {
			return audit.Data{}, nil, err
		}
	}
	rel, err := s.Release(src)
	if err != nil {
		return audit.Data{}, nil, err
	}
	out := audit.Data{Cohorts: d.Cohorts}
	rel.EachRecord(func(cohort int, time int64, event bool) {
		out.Time = append(out.Time, time)
		out.Event = append(out.Event, event)
		out.Cohort = append(out.Cohort, cohort)
	})
	return out, rel, nil
}
