package sanitizers

import (
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/schemas"
)

// Guarantee kinds (mechanisms.md §0).
const (
	KindLocalDP  = "local-dp"
	KindTI       = "time-indistinguishability"
	KindNone     = "none (declared public)"
	KindPseudo   = "none (keyed pseudonym)"
	MechTE       = "te-sanitizer"
	MechRRR      = "rrr"
	MechPublic   = "public"
	MechPseudo   = "keyed-pseudonym"
	PseudonymLen = 32 // hex characters (128 bits)
)

// Field-level metadata of the sanitized time column: the public horizon
// and the rule for reading times at it.
const (
	MetaTimeMax     = "dpsurv.time_max"
	MetaHorizonRule = "dpsurv.horizon_rule"
)

// HorizonRule is the sanitized time column's dpsurv.horizon_rule. The
// event flag is published as it is (changing it would publish a function
// of the private time outside TE's guarantee), so a record followed beyond
// time_max can show time_max with event 1: analyses treat time_max as a
// censoring time (mechanisms.md section 0, erratum "time beyond the
// horizon"; dpsurv's own estimators do).
const HorizonRule = "administrative censoring at time_max: published times are clamped into [0, time_max] and the event flag is published unchanged, " +
	"so a record followed beyond time_max may show time_max with event 1; treat a time at time_max as censored there (never as an event at time_max)"

// TINote is the time field's dpsurv.note: what time-indistinguishability
// does not promise, and what worst_case_loss covers.
const TINote = "time-indistinguishability: protects the true time only among times within the window W of the published value; true times more than 2W apart are fully distinguishable (weaker than local DP). worst_case_loss is the exact loss of the published value, after the clamp into [0, time_max]"

// TimeConfig configures the mechanism on the time field.
type TimeConfig struct {
	// Mechanism is "te" or "none" (the field is dropped unless public).
	Mechanism string `yaml:"mechanism" json:"mechanism"`
	// Epsilon of TE-Sanitizer; exclusive with TargetLoss.
	Epsilon float64 `yaml:"epsilon" json:"epsilon,omitempty"`
	// TargetLoss asks for the largest epsilon whose worst-case loss of the
	// published (clamped) value, max(L(epsilon, W), epsilon*W), is at most
	// this value.
	TargetLoss float64 `yaml:"target_loss" json:"target_loss,omitempty"`
	Window     int     `yaml:"window" json:"window"`
}

// CohortConfig configures the mechanism on the cohort label.
type CohortConfig struct {
	// Mechanism is "rrr" or "none" (the field is dropped unless public).
	Mechanism string  `yaml:"mechanism" json:"mechanism"`
	Epsilon   float64 `yaml:"epsilon" json:"epsilon,omitempty"`
}

// Config is everything the chain needs; all of it is public configuration
// except Key.
type Config struct {
	Key            []byte
	Cohorts        []string
	TimeMax        float64 // public time domain [0, TimeMax], in TimeUnit
	TimeUnit       string
	PseudonymizeID bool
	Time           TimeConfig
	Cohort         CohortConfig
	// Public lists canonical input fields copied unchanged (event,
	// covariates, site, observed_at; time and cohort only when their
	// mechanism is "none"). The raw id can never be public.
	Public []string
}

// Guarantee describes what one output field promises; it is printed by
// `dpsurv sanitize` and stored in the sanitized schema's metadata.
type Guarantee struct {
	Field         string   `json:"field"`
	Mechanism     string   `json:"mechanism"`
	Epsilon       *float64 `json:"epsilon"`
	Window        *int     `json:"window"`
	WorstCaseLoss *float64 `json:"worst_case_loss"`
	// VersionPairLoss is the exact worst-case loss of two published
	// versions of one record's field (dp.TE/RRR.VersionPairLoss): above
	// 2·WorstCaseLoss, because replay-stable noise publishes a repeat as
	// one draw twice, and on equal outputs a reader cannot tell a repeat
	// from a change.
	VersionPairLoss *float64 `json:"version_pair_loss,omitempty"`
	Kind            string   `json:"kind"`
	// Warning is set when the worst-case loss exceeds the nominal one
	// (TE-Sanitizer with small epsilon: the paper's erratum).
	Warning string `json:"warning,omitempty"`
}

// Stats counts what one Apply did.
type Stats struct {
	Records     int
	ClampedTime int // input times outside [0, TimeMax] moved to the boundary
	// Updates counts records whose id was recently seen with a different
	// time or cohort: each is a further release about that patient, whose
	// cost composes (best effort over a fixed-size table of recent ids).
	Updates int
}

// updateSlots is the size of the recent-id table behind Stats.Updates.
const updateSlots = 1 << 18

// Chain applies the configured per-record mechanisms to canonical validated
// batches (schemas.CanonicalSchema layout: id, time, event, cohort, then
// covariates, site, observed_at by name). It is safe for concurrent use.
type Chain struct {
	cfg      Config
	prf      *dp.PRF
	te       *dp.TE
	rrr      *dp.RRR
	tmax     int64
	outCols  []outCol
	guar     []Guarantee
	dictType *arrow.DictionaryType
	labels   arrow.Array
	mem      memory.Allocator
	recent   []atomic.Uint64 // id fingerprint (high 32 bits) | value fingerprint (low 32)
	touched  atomic.Bool     // keeps the tracker's prefetching loads
	// scratch pools the update tracker's per-batch slots and entries
	// (working memory of Apply, never part of its output).
	scratch sync.Pool
	// offsets holds the pseudonym column's value offsets, i*PseudonymLen
	// for i up to its length, shared read-only by every output batch of at
	// most that many rows (they are the same for every batch).
	offsets atomic.Pointer[memory.Buffer]
}

// trackScratch is the update tracker's working memory for one batch.
type trackScratch struct {
	slots   []uint32
	entries []uint64
}

// pseudonymOffsets is a buffer of the value offsets of an n-row pseudonym
// column (immutable; shared by the batches).
func (c *Chain) pseudonymOffsets(n int) *memory.Buffer {
	if b := c.offsets.Load(); b != nil && b.Len() >= 4*(n+1) {
		return memory.SliceBuffer(b, 0, 4*(n+1))
	}
	offsets := make([]int32, max(n, 2048)+1)
	for i := range offsets {
		offsets[i] = int32(i * PseudonymLen)
	}
	b := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offsets))
	c.offsets.Store(b)
	return memory.SliceBuffer(b, 0, 4*(n+1))
}

type outKind int

const (
	outPseudonym outKind = iota
	outTE
	outRRR
	outCopy
)

type outCol struct {
	kind  outKind
	name  string // canonical input field name
	field arrow.Field
}

// New validates cfg and builds the chain. Errors name the config field.
func New(cfg Config, mem memory.Allocator) (*Chain, error) {
	c := &Chain{cfg: cfg, mem: mem, recent: make([]atomic.Uint64, updateSlots)}
	if len(cfg.Key) == 0 {
		return nil, fmt.Errorf("sanitizers.key_file: no PRF key configured; refusing to start")
	}
	prf, err := dp.NewPRF(cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("sanitizers.key_file: %w", err)
	}
	c.prf = prf
	if len(cfg.Cohorts) < 1 {
		return nil, fmt.Errorf("schema.cohorts: at least one label required")
	}
	if !(cfg.TimeMax > 0) || math.IsInf(cfg.TimeMax, 0) || cfg.TimeMax > 1<<40 {
		return nil, fmt.Errorf("schema.time_max: must be positive and finite, got %v", cfg.TimeMax)
	}
	c.tmax = int64(math.Floor(cfg.TimeMax))
	md := schemas.FieldMetadata
	ff := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	public := map[string]bool{}
	for i, f := range cfg.Public {
		if f == "id" {
			return nil, fmt.Errorf("schema.public[%d]: the raw id can never be public; use sanitizers.pseudonymize_id", i)
		}
		if public[f] {
			return nil, fmt.Errorf("schema.public[%d]: %q listed twice", i, f)
		}
		public[f] = true
	}

	if cfg.PseudonymizeID {
		c.outCols = append(c.outCols, outCol{kind: outPseudonym, name: "id", field: arrow.Field{
			Name: "id", Type: arrow.BinaryTypes.String,
			Metadata: md(schemas.MetaMechanism, MechPseudo, schemas.MetaGuarantee, KindPseudo)}})
		c.guar = append(c.guar, Guarantee{Field: "id", Mechanism: MechPseudo, Kind: KindPseudo})
	}

	switch cfg.Time.Mechanism {
	case "te":
		if public["time"] {
			return nil, fmt.Errorf("schema.public: time is produced by te-sanitizer and cannot also be public")
		}
		eps := cfg.Time.Epsilon
		if cfg.Time.Window < 1 {
			return nil, fmt.Errorf("sanitizers.time.window: must be >= 1, got %d", cfg.Time.Window)
		}
		switch {
		case eps != 0 && cfg.Time.TargetLoss != 0:
			return nil, fmt.Errorf("sanitizers.time: set epsilon or target_loss, not both")
		case cfg.Time.TargetLoss != 0:
			eps, err = dp.TEEpsilonForLoss(cfg.Time.TargetLoss, cfg.Time.Window, c.tmax)
			if err != nil {
				return nil, fmt.Errorf("sanitizers.time.target_loss: %w", err)
			}
		case !(eps > 0):
			return nil, fmt.Errorf("sanitizers.time.epsilon: must be positive, got %v", eps)
		}
		te, err := dp.NewTE(eps, cfg.Time.Window)
		if err != nil {
			return nil, fmt.Errorf("sanitizers.time: %w", err)
		}
		c.te = te
		// The loss of the value actually published, after the clamp into
		// [0, time_max]: exact enumeration of the clamped output pmf.
		loss := te.ClampedLoss(c.tmax)
		w := cfg.Time.Window
		pair := te.VersionPairLoss(c.tmax)
		g := Guarantee{Field: "time", Mechanism: MechTE, Epsilon: &eps, Window: &w, WorstCaseLoss: &loss, VersionPairLoss: &pair, Kind: KindTI}
		if loss > eps*float64(w)+1e-12 {
			g.Warning = fmt.Sprintf("worst-case loss %.4f exceeds epsilon*window = %.4f (paper 001 erratum)", loss, eps*float64(w))
		}
		c.guar = append(c.guar, g)
		c.outCols = append(c.outCols, outCol{kind: outTE, name: "time", field: arrow.Field{
			Name: "time", Type: arrow.PrimitiveTypes.Int64,
			Metadata: md(schemas.MetaMechanism, MechTE, schemas.MetaGuarantee, KindTI, schemas.MetaEpsilon, ff(eps),
				schemas.MetaWindow, strconv.Itoa(w), schemas.MetaWorstCaseLoss, ff(loss), schemas.MetaVersionPairLoss, ff(pair), schemas.MetaTimeUnit, cfg.TimeUnit,
				schemas.MetaNote, TINote, MetaTimeMax, strconv.FormatInt(c.tmax, 10), MetaHorizonRule, HorizonRule)}})
	case "none", "":
		if public["time"] {
			c.outCols = append(c.outCols, outCol{kind: outCopy, name: "time"})
		}
	default:
		return nil, fmt.Errorf("sanitizers.time.mechanism: unknown %q (want te or none)", cfg.Time.Mechanism)
	}

	c.dictType = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	switch cfg.Cohort.Mechanism {
	case "rrr":
		if public["cohort"] {
			return nil, fmt.Errorf("schema.public: cohort is produced by rrr and cannot also be public")
		}
		if len(cfg.Cohorts) < 2 {
			return nil, fmt.Errorf("schema.cohorts: rrr needs at least 2 labels, got %d", len(cfg.Cohorts))
		}
		r, err := dp.NewRRR(cfg.Cohort.Epsilon, len(cfg.Cohorts))
		if err != nil {
			return nil, fmt.Errorf("sanitizers.cohort.epsilon: %w", err)
		}
		c.rrr = r
		e, pair := r.Epsilon(), r.VersionPairLoss()
		c.guar = append(c.guar, Guarantee{Field: "cohort", Mechanism: MechRRR, Epsilon: &e, WorstCaseLoss: &e, VersionPairLoss: &pair, Kind: KindLocalDP})
		c.outCols = append(c.outCols, outCol{kind: outRRR, name: "cohort", field: arrow.Field{
			Name: "cohort", Type: c.dictType,
			Metadata: md(schemas.MetaMechanism, MechRRR, schemas.MetaGuarantee, KindLocalDP, schemas.MetaEpsilon, ff(e),
				schemas.MetaWorstCaseLoss, ff(e), schemas.MetaVersionPairLoss, ff(pair), schemas.MetaRRRP, ff(r.P()))}})
		lb := array.NewStringBuilder(mem)
		lb.AppendValues(cfg.Cohorts, nil)
		c.labels = lb.NewArray()
		lb.Release()
	case "none", "":
		if public["cohort"] {
			c.outCols = append(c.outCols, outCol{kind: outCopy, name: "cohort"})
		}
	default:
		return nil, fmt.Errorf("sanitizers.cohort.mechanism: unknown %q (want rrr or none)", cfg.Cohort.Mechanism)
	}
	// Remaining public fields in a stable order: as listed.
	for _, f := range cfg.Public {
		if f == "time" || f == "cohort" {
			continue
		}
		c.outCols = append(c.outCols, outCol{kind: outCopy, name: f})
	}
	for _, oc := range c.outCols {
		if oc.kind == outCopy {
			c.guar = append(c.guar, Guarantee{Field: oc.name, Mechanism: MechPublic, Kind: KindNone})
		}
	}
	return c, nil
}

// Release frees the chain's Arrow buffers.
func (c *Chain) Release() {
	if c.labels != nil {
		c.labels.Release()
		c.labels = nil
	}
}

// Guarantees lists each output field's guarantee.
func (c *Chain) Guarantees() []Guarantee { return slices.Clone(c.guar) }

// OutputFields names the output columns in order.
func (c *Chain) OutputFields() []string {
	out := make([]string, len(c.outCols))
	for i, oc := range c.outCols {
		out[i] = oc.name
	}
	return out
}

// inputColumn is the batch's field name as a T; the error names the field
// when the batch lacks it, or its type and the one wanted (want).
func inputColumn[T arrow.Array](rec arrow.Record, name, want string) (T, error) {
	var zero T
	idx := rec.Schema().FieldIndices(name)
	if len(idx) == 0 {
		return zero, fmt.Errorf("sanitize batch: input has no field %q", name)
	}
	a := rec.Column(idx[0])
	v, ok := a.(T)
	if !ok {
		return zero, fmt.Errorf("sanitize batch: %s is %s, want %s", name, a.DataType(), want)
	}
	return v, nil
}

// Apply sanitizes one canonical batch. The result is a new record (caller
// releases) with the sanitized schema: only fields a mechanism produced or
// the config declared public. It returns an error (never panics) when the
// batch lacks a field the configuration needs.
func (c *Chain) Apply(rec arrow.Record) (arrow.Record, Stats, error) {
	n := int(rec.NumRows())
	st := Stats{Records: n}
	var (
		ids   *array.String
		times *array.Float64
		codes *array.Int32
		err   error
	)
	if c.prf != nil && (c.te != nil || c.rrr != nil || c.cfg.PseudonymizeID) {
		if ids, err = inputColumn[*array.String](rec, "id", "utf8"); err != nil {
			return nil, st, err
		}
	}
	if c.te != nil {
		if times, err = inputColumn[*array.Float64](rec, "time", "float64"); err != nil {
			return nil, st, err
		}
	}
	if c.rrr != nil {
		d, err := inputColumn[*array.Dictionary](rec, "cohort", "dictionary")
		if err != nil {
			return nil, st, err
		}
		var ok bool
		if codes, ok = d.Indices().(*array.Int32); !ok {
			return nil, st, fmt.Errorf("sanitize batch: cohort indices are %s, want int32", d.Indices().DataType())
		}
		if d.Dictionary().Len() != len(c.cfg.Cohorts) {
			return nil, st, fmt.Errorf("sanitize batch: cohort dictionary has %d labels, config has %d", d.Dictionary().Len(), len(c.cfg.Cohorts))
		}
	}

	var (
		pseudo  []byte
		timeOut []int64
		cohOut  []int32
	)
	if c.cfg.PseudonymizeID {
		pseudo = make([]byte, n*PseudonymLen)
	}
	if c.te != nil {
		timeOut = make([]int64, n)
	}
	if c.rrr != nil {
		cohOut = make([]int32, n)
	}
	// The update tracker's entries are collected and applied after the
	// loop: their table slots are first read in one pass (independent
	// loads, whose cache misses overlap), so that the atomic swaps, each a
	// full barrier, find their lines in cache.
	var slots []uint32
	var entries []uint64
	track := c.te != nil || c.rrr != nil
	if track {
		sc, _ := c.scratch.Get().(*trackScratch)
		if sc == nil {
			sc = new(trackScratch)
		}
		if cap(sc.slots) < n {
			sc.slots, sc.entries = make([]uint32, n), make([]uint64, n)
		}
		slots, entries = sc.slots[:n], sc.entries[:n]
		defer func() {
			if cap(sc.slots) <= 1<<20 { // do not pool very large buffers
				c.scratch.Put(sc)
			}
		}()
	}
	var tagBuf [16]byte
	rs := new(dp.RecordState)
	for i := range n {
		if ids.IsNull(i) {
			return nil, st, fmt.Errorf("sanitize batch: row %d: null id", i)
		}
		if err := rs.Reset(c.prf, ids.Value(i)); err != nil {
			return nil, st, fmt.Errorf("sanitize batch: row %d: %w", i, err)
		}
		idTag, idTag2 := rs.Tag(dp.FieldPseudonym, 1, 0)
		if pseudo != nil {
			putLE(tagBuf[:8], idTag)
			putLE(tagBuf[8:], idTag2)
			hex.Encode(pseudo[i*PseudonymLen:(i+1)*PseudonymLen], tagBuf[:])
		}
		var valTag uint64
		if timeOut != nil {
			t := math.Round(times.Value(i))
			ti := int64(0)
			switch {
			case !(t >= 0): // negative or NaN: validation should have caught it
				st.ClampedTime++
			case t > float64(c.tmax):
				ti = c.tmax
				st.ClampedTime++
			default:
				ti = int64(t)
			}
			u, v := rs.Tag(dp.FieldTime, dp.TEVersion, uint64(ti))
			valTag ^= v
			o := ti + int64(c.te.Sample(u))
			timeOut[i] = min(max(o, 0), c.tmax) // post-processing into the public domain
		}
		if cohOut != nil {
			code := codes.Value(i)
			if code < 0 || int(code) >= len(c.cfg.Cohorts) {
				return nil, st, fmt.Errorf("sanitize batch: row %d: cohort code out of range", i)
			}
			u, v := rs.Tag(dp.FieldCohort, dp.RRRVersion, uint64(code))
			valTag ^= v
			cohOut[i] = int32(c.rrr.Sample(int(code), u))
		}
		if track {
			slots[i] = uint32(idTag2 % updateSlots)
			entries[i] = idTag&^0xffffffff | valTag&0xffffffff
		}
	}
	if track {
		var touch uint64
		for _, j := range slots {
			touch |= c.recent[j].Load()
		}
		c.touched.Store(touch != 0)
		for i, j := range slots {
			entry := entries[i]
			prev := c.recent[j].Swap(entry)
			if prev != 0 && prev != entry && prev>>32 == entry>>32 {
				st.Updates++
			}
		}
	}

	fields := make([]arrow.Field, 0, len(c.outCols))
	cols := make([]arrow.Array, 0, len(c.outCols))
	defer func() {
		for _, a := range cols {
			a.Release()
		}
	}()
	for _, oc := range c.outCols {
		switch oc.kind {
		case outPseudonym:
			data := memory.NewBufferBytes(pseudo)
			off := c.pseudonymOffsets(n)
			ad := array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{nil, off, data}, nil, 0, 0)
			off.Release()
			cols = append(cols, array.NewStringData(ad))
			ad.Release()
			fields = append(fields, oc.field)
		case outTE:
			// the sanitized values become the column's buffer (no copy)
			ad := bufferData(arrow.PrimitiveTypes.Int64, n, arrow.Int64Traits.CastToBytes(timeOut))
			cols = append(cols, array.NewInt64Data(ad))
			ad.Release()
			fields = append(fields, oc.field)
		case outRRR:
			ad := bufferData(arrow.PrimitiveTypes.Int32, n, arrow.Int32Traits.CastToBytes(cohOut))
			idx := array.NewInt32Data(ad)
			ad.Release()
			cols = append(cols, array.NewDictionaryArray(c.dictType, idx, c.labels))
			idx.Release()
			fields = append(fields, oc.field)
		case outCopy:
			a, err := inputColumn[arrow.Array](rec, oc.name, "any type")
			if err != nil {
				return nil, st, err
			}
			a.Retain()
			cols = append(cols, a)
			f := rec.Schema().Field(rec.Schema().FieldIndices(oc.name)[0])
			f.Metadata = arrow.NewMetadata([]string{schemas.MetaMechanism, schemas.MetaGuarantee}, []string{MechPublic, KindNone})
			fields = append(fields, f)
		}
	}
	schema := schemas.SanitizedSchema(fields, c.cfg.TimeUnit)
	out := array.NewRecord(schema, cols, int64(n))
	return out, st, nil
}

func putLE(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (8 * i))
	}
}

// bufferData is the data of a column of n fixed-width values of type typ,
// with no nulls, held in b (no copy).
func bufferData(typ arrow.DataType, n int, b []byte) arrow.ArrayData {
	return array.NewData(typ, n, []*memory.Buffer{nil, memory.NewBufferBytes(b)}, nil, 0, 0)
}
