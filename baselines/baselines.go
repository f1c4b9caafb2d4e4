package baselines

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/dpfit/km"
	"github.com/dpsurv/dpsurv/schemas"
)

// Method names and guarantee kinds.
const (
	MethodBinSup     = "binsup"
	MethodDPTime     = "dptime"
	GuaranteeBinSup  = "none (heuristic)"
	GuaranteeDPTime  = "pure-dp"
	NeighbouringDP   = "replace-one"
	MetaTimeBin      = "dpsurv.time_bin"
	MetaSizeBin      = "dpsurv.size_bin"
	MetaCohortLabels = "dpsurv.cohorts"
)

// maxReleasedRecords bounds the records a release may regenerate.
const maxReleasedRecords = 1 << 31

// Config configures a baseline sanitizer; all of it is public.
type Config struct {
	// Method is MethodBinSup or MethodDPTime.
	Method string
	// Cohorts is the public label list.
	Cohorts []string
	// TimeMax is the public time domain [0, TimeMax] in TimeUnit.
	TimeMax  float64
	TimeUnit string
	// TimeBin is the bin width in time units (>= 1).
	TimeBin int64
	// SizeBin is BinSup's count threshold (>= 1).
	SizeBin int64
	// Epsilon is DPTime's budget for the whole release (> 0).
	Epsilon float64
}

// Validate checks the configuration; errors name the field.
func (c Config) Validate() error {
	var errs []error
	switch c.Method {
	case MethodBinSup:
		if c.SizeBin < 1 {
			errs = append(errs, fmt.Errorf("size_bin: must be >= 1, got %d", c.SizeBin))
		}
	case MethodDPTime:
		if !(c.Epsilon > 0) || math.IsInf(c.Epsilon, 0) {
			errs = append(errs, fmt.Errorf("epsilon: must be positive and finite, got %v", c.Epsilon))
		}
	default:
		errs = append(errs, fmt.Errorf("method: unknown %q (want %s or %s)", c.Method, MethodBinSup, MethodDPTime))
	}
	if len(c.Cohorts) == 0 {
		errs = append(errs, errors.New("cohorts: at least one label required"))
	}
	if c.TimeBin < 1 {
		errs = append(errs, fmt.Errorf("time_bin: must be >= 1, got %d", c.TimeBin))
	}
	if !(c.TimeMax > 0) || math.IsInf(c.TimeMax, 0) || c.TimeMax > 1<<40 {
		errs = append(errs, fmt.Errorf("time_max: must be positive and finite, got %v", c.TimeMax))
	}
	if c.TimeUnit == "" {
		errs = append(errs, errors.New("time_unit: required"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("baselines config: %w", errors.Join(errs...))
	}
	return nil
}

// Sanitizer counts canonical batches and releases them once.
type Sanitizer struct {
	cfg      Config
	hist     *km.Histogram
	released bool
}

// New validates cfg and returns an empty sanitizer.
func New(cfg Config) (*Sanitizer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	h, err := km.NewHistogram(float64(cfg.TimeBin), cfg.TimeMax, len(cfg.Cohorts))
	if err != nil {
		return nil, fmt.Errorf("baselines: %w", err)
	}
	cfg.Cohorts = append([]string(nil), cfg.Cohorts...)
	return &Sanitizer{cfg: cfg, hist: h}, nil
}

// Add counts a canonical validated batch (schemas.CanonicalSchema: time
// float64, event bool, cohort dictionary whose indices are the label codes
// of Config.Cohorts).
func (s *Sanitizer) Add(rec arrow.Record) error {
	if s.released {
		return errors.New("baselines add: already released")
	}
	if rec.NumCols() <= schemas.ColCohort {
		return errors.New("baselines add: batch is not in the canonical layout")
	}
	times, ok1 := rec.Column(schemas.ColTime).(*array.Float64)
	events, ok2 := rec.Column(schemas.ColEvent).(*array.Boolean)
	coh, ok3 := rec.Column(schemas.ColCohort).(*array.Dictionary)
	if !ok1 || !ok2 || !ok3 {
		return errors.New("baselines add: batch is not in the canonical layout")
	}
	codes, ok := coh.Indices().(*array.Int32)
	if !ok {
		return errors.New("baselines add: cohort indices are not int32")
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		if times.IsNull(i) || events.IsNull(i) || coh.IsNull(i) {
			return fmt.Errorf("baselines add: row %d: null value", i)
		}
		if err := s.AddRecord(times.Value(i), events.Value(i), int(codes.Value(i))); err != nil {
			return fmt.Errorf("baselines add: row %d: %w", i, err)
		}
	}
	return nil
}

// AddRecord counts one record: its time (rounded to the nearest unit,
// clamped into [0, TimeMax]), event flag and cohort code.
func (s *Sanitizer) AddRecord(time float64, event bool, cohort int) error {
	if s.released {
		return errors.New("already released")
	}
	if cohort < 0 || cohort >= len(s.cfg.Cohorts) {
		return errors.New("cohort code out of range")
	}
	if math.IsNaN(time) {
		return errors.New("time is NaN")
	}
	return s.hist.Add(math.Round(time), event, cohort)
}

// Release applies the mechanism to the counts (once). src is used by
// DPTime only and may be nil for BinSup.
func (s *Sanitizer) Release(src dp.Source) (*Release, error) {
	if s.released {
		return nil, errors.New("baselines release: already released (a release is drawn once)")
	}
	var (
		r   *Release
		err error
	)
	switch s.cfg.Method {
	case MethodBinSup:
		r, err = binSup(s.hist, s.cfg)
	case MethodDPTime:
		r, err = dpTime(s.hist, s.cfg, src)
	}
	if err != nil {
		return nil, err
	}
	s.released = true
	return r, nil
}

// Release is the aggregate output of a baseline, with its guarantee.
type Release struct {
	Config       Config `json:"-"`
	Method       string `json:"method"`
	Guarantee    string `json:"guarantee"`
	Neighbouring string `json:"neighbouring,omitempty"`
	// Epsilon is DPTime's budget for the whole release (0 for BinSup).
	Epsilon float64 `json:"epsilon,omitempty"`
	TimeBin int64   `json:"time_bin"`
	SizeBin int64   `json:"size_bin,omitempty"`
	// Events and Censor are the released counts [cohort][bin]; bin b starts
	// at b * TimeBin.
	Events [][]int64 `json:"-"`
	Censor [][]int64 `json:"-"`
	// Clamped counts input times outside [0, TimeMax] (a metric); those
	// beyond TimeMax are censored at it (administrative censoring).
	Clamped int64 `json:"clamped_times"`
	// SuppressedRecords (BinSup) is the number of input records in
	// suppressed bins: the auditor's diagnostic, not part of the release.
	SuppressedRecords int64 `json:"suppressed_records,omitempty"`
	// SuppressedBins (BinSup) counts non-empty (cohort, bin) cells
	// suppressed.
	SuppressedBins int64 `json:"suppressed_bins,omitempty"`
}

func binSup(h *km.Histogram, cfg Config) (*Release, error) {
	k := h.Cohorts()
	r := &Release{Config: cfg, Method: MethodBinSup, Guarantee: GuaranteeBinSup, TimeBin: cfg.TimeBin, SizeBin: cfg.SizeBin,
		Events: make([][]int64, k), Censor: make([][]int64, k), Clamped: h.Clamped + h.CensoredAtHorizon}
	for c := 0; c < k; c++ {
		r.Events[c] = make([]int64, h.Bins)
		r.Censor[c] = make([]int64, h.Bins)
		for b := 0; b < h.Bins; b++ {
			e, n := h.Events[c][b], h.Censor[c][b]
			if e+n == 0 {
				continue
			}
			if e+n < cfg.SizeBin {
				r.SuppressedRecords += e + n
				r.SuppressedBins++
				continue
			}
			r.Events[c][b], r.Censor[c][b] = e, n
		}
	}
	return r, nil
}

func dpTime(h *km.Histogram, cfg Config, src dp.Source) (*Release, error) {
	if src == nil {
		return nil, errors.New("dptime release: nil randomness source")
	}
	k := h.Cohorts()
	r := &Release{Config: cfg, Method: MethodDPTime, Guarantee: GuaranteeDPTime, Neighbouring: NeighbouringDP,
		Epsilon: cfg.Epsilon, TimeBin: cfg.TimeBin, Events: make([][]int64, k), Censor: make([][]int64, k), Clamped: h.Clamped + h.CensoredAtHorizon}
	total := int64(0)
	for c := 0; c < k; c++ {
		r.Events[c] = make([]int64, h.Bins)
		r.Censor[c] = make([]int64, h.Bins)
		for b := 0; b < h.Bins; b++ {
			for _, cell := range []struct {
				in  int64
				out *int64
			}{{h.Events[c][b], &r.Events[c][b]}, {h.Censor[c][b], &r.Censor[c][b]}} {
				v, err := dp.GeometricMechanism(src, cell.in, 2, cfg.Epsilon)
				if err != nil {
					return nil, fmt.Errorf("dptime release: %w", err)
				}
				*cell.out = max(v, 0)
				total += *cell.out
			}
		}
	}
	if total > maxReleasedRecords {
		return nil, fmt.Errorf("dptime release: %d records to regenerate exceed the limit; use wider bins", total)
	}
	return r, nil
}

// Len returns the number of records the release regenerates.
func (r *Release) Len() int64 {
	n := int64(0)
	for c := range r.Events {
		for b := range r.Events[c] {
			n += r.Events[c][b] + r.Censor[c][b]
		}
	}
	return n
}

// Schema returns the sanitized-record schema of Records, with the
// mechanism and guarantee of every field in its metadata.
func (r *Release) Schema() *arrow.Schema {
	ff := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	keys := []string{schemas.MetaMechanism, schemas.MetaGuarantee, MetaTimeBin}
	vals := []string{r.Method, r.Guarantee, strconv.FormatInt(r.TimeBin, 10)}
	switch r.Method {
	case MethodBinSup:
		keys = append(keys, MetaSizeBin)
		vals = append(vals, strconv.FormatInt(r.SizeBin, 10))
	case MethodDPTime:
		keys = append(keys, schemas.MetaEpsilon, schemas.MetaNeighbouring)
		vals = append(vals, ff(r.Epsilon), r.Neighbouring)
	}
	fieldMD := arrow.NewMetadata(keys, vals)
	timeMD := arrow.NewMetadata(append(keys, schemas.MetaTimeUnit), append(vals, r.Config.TimeUnit))
	idMD := arrow.NewMetadata([]string{schemas.MetaMechanism, schemas.MetaGuarantee}, []string{"synthetic sequence number", "none (links to no patient)"})
	fields := []arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String, Metadata: idMD},
		{Name: "time", Type: arrow.PrimitiveTypes.Int64, Metadata: timeMD},
		{Name: "event", Type: arrow.FixedWidthTypes.Boolean, Metadata: fieldMD},
		{Name: "cohort", Type: schemas.CohortType, Metadata: fieldMD},
	}
	return schemas.SanitizedSchema(fields, r.Config.TimeUnit)
}

// EachRecord calls fn for every record the release regenerates: per
// cohort and bin, the released events then censorings, time = bin start.
func (r *Release) EachRecord(fn func(cohort int, time int64, event bool)) {
	for c := range r.Events {
		for b := range r.Events[c] {
			t := int64(b) * r.TimeBin
			for range r.Events[c][b] {
				fn(c, t, true)
			}
			for range r.Censor[c][b] {
				fn(c, t, false)
			}
		}
	}
}

// Records regenerates the released records as one batch (caller releases),
// in EachRecord's order.
func (r *Release) Records(mem memory.Allocator) (arrow.Record, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	n := r.Len()
	if n > maxReleasedRecords {
		return nil, fmt.Errorf("baselines records: %d records exceed the limit", n)
	}
	ib := array.NewStringBuilder(mem)
	defer ib.Release()
	tb := array.NewInt64Builder(mem)
	defer tb.Release()
	eb := array.NewBooleanBuilder(mem)
	defer eb.Release()
	cb := array.NewInt32Builder(mem)
	defer cb.Release()
	ib.Reserve(int(n))
	tb.Reserve(int(n))
	eb.Reserve(int(n))
	cb.Reserve(int(n))
	seq := 0
	prefix := r.Method + "-"
	r.EachRecord(func(cohort int, time int64, event bool) {
		seq++
		ib.Append(prefix + strconv.Itoa(seq))
		tb.Append(time)
		eb.Append(event)
		cb.Append(int32(cohort))
	})
	lb := array.NewStringBuilder(mem)
	lb.AppendValues(r.Config.Cohorts, nil)
	labels := lb.NewArray()
	lb.Release()
	defer labels.Release()
	idx := cb.NewArray()
	defer idx.Release()
	cols := []arrow.Array{ib.NewArray(), tb.NewArray(), eb.NewArray(), array.NewDictionaryArray(schemas.CohortType, idx, labels)}
	defer func() {
		for _, a := range cols {
			a.Release()
		}
	}()
	return array.NewRecord(r.Schema(), cols, n), nil
}
