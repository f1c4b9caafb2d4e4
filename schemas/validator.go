package schemas

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/codecs/arrowipc"
)

// Internal reason codes (index into reasonNames).
const (
	rOK uint8 = iota
	rMissing
	rInvalidID
	rDup
	rTime
	rEvent
	rCohort
	rCov
	rObs
	rUndecodable
	rWrongSchema
)

var reasonNames = [...]string{
	rOK:          "",
	rMissing:     ReasonMissingField,
	rInvalidID:   ReasonInvalidID,
	rDup:         ReasonDuplicateID,
	rTime:        ReasonInvalidTime,
	rEvent:       ReasonInvalidEvent,
	rCohort:      ReasonUnknownCohort,
	rCov:         ReasonInvalidCovariate,
	rObs:         ReasonInvalidObservedAt,
	rUndecodable: ReasonUndecodable,
	rWrongSchema: ReasonWrongSchema,
}

// Slots: the logical fields a row is checked for, in check order.
const (
	slotID = iota
	slotTime
	slotEvent
	slotCohort
	slotSite
	slotObs
	slotCov0 // covariate k is slotCov0 + k
)

// DefaultMaxDecodeBytes bounds the memory one DecodeIPC call may allocate for
// the decoded message (protects against compression bombs and forged
// lengths). The effective bound is also at most 1 MiB + 256 x the message
// size.
const DefaultMaxDecodeBytes = arrowipc.DefaultMaxDecodeBytes

// Validator checks tte.v1 batches against a Spec and converts the good rows
// into the canonical schema. It is safe for concurrent use.
type Validator struct {
	spec      Spec
	cols      Columns
	mem       memory.Allocator
	labels    map[string]int32
	intLabels map[int64]int32
	schemas   [8]*arrow.Schema // index: withSite | withObs<<1 | siteDict<<2
	maxDecode int64
	maxDead   int       // verbatim row dead letters per call; 0: all
	pool      sync.Pool // *scratch
}

// NewValidator validates spec and returns a Validator whose output records
// are allocated from mem (memory.DefaultAllocator when nil).
func NewValidator(spec Spec, mem memory.Allocator) (*Validator, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("schemas: new validator: %w", err)
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	spec.Cohorts = append([]string(nil), spec.Cohorts...)
	spec.Covariates = append([]string(nil), spec.Covariates...)
	spec.Columns = spec.Columns.WithDefaults()
	v := &Validator{
		spec:      spec,
		cols:      spec.Columns,
		mem:       mem,
		labels:    make(map[string]int32, len(spec.Cohorts)),
		intLabels: make(map[int64]int32),
		maxDecode: DefaultMaxDecodeBytes,
	}
	for i, c := range spec.Cohorts {
		v.labels[c] = int32(i)
		if x, err := strconv.ParseInt(c, 10, 64); err == nil && strconv.FormatInt(x, 10) == c {
			v.intLabels[x] = int32(i)
		}
	}
	for k := range v.schemas {
		v.schemas[k] = canonicalSchema(spec, k&1 != 0, k&2 != 0, k&4 != 0)
	}
	v.pool.New = func() any { return new(scratch) }
	return v, nil
}

// Spec returns the validator's spec (with default column names filled in).
func (v *Validator) Spec() Spec { return v.spec }

// SetMaxDecodeBytes changes the per-message decode memory bound of DecodeIPC
// (default DefaultMaxDecodeBytes). Call it before using the validator.
func (v *Validator) SetMaxDecodeBytes(n int64) {
	if n > 0 {
		v.maxDecode = n
	}
}

// SetMaxDeadRows bounds the row-level dead letters kept verbatim (with the
// row) per message: later failed rows are folded into one summary dead
// letter per reason (see CapDeadLetters), so that a message of many bad
// rows costs memory in proportion to n, not to n row maps. 0 (the default)
// keeps every row. Call it before using the validator.
func (v *Validator) SetMaxDeadRows(n int) {
	if n >= 0 {
		v.maxDead = n
	}
}

// Schema returns the canonical schema the validator produces.
func (v *Validator) Schema(withSite, withObservedAt bool) *arrow.Schema {
	return v.schemas[schemaKey(withSite, withObservedAt)]
}

func schemaKey(site, obs bool) int { return schemaKeyDict(site, obs, false) }

func schemaKeyDict(site, obs, siteDict bool) int {
	k := 0
	if siteDict && site {
		k |= 4
	}
	if site {
		k |= 1
	}
	if obs {
		k |= 2
	}
	return k
}

// Validate checks rec (any tte.v1-compatible record) and returns the good
// rows in canonical form plus one dead letter per bad row. The returned
// record is never nil (it may have zero rows); the caller releases it.
// A record whose schema lacks a required column gives every row as a dead
// letter with missing_field; a wrong column type or a foreign schema name or
// time unit in the metadata gives wrong_schema. A malformed record (buffers
// inconsistent with its length) gives one undecodable dead letter with
// RowIndex -1.
func (v *Validator) Validate(rec arrow.Record) (arrow.Record, []DeadLetter) {
	return v.validate(rec, 0, nil, false)
}

// validate is Validate of rows rowBase... of a message or file, sharing the
// id set (nil: one batch). checked says the caller has already run
// arrowipc.CheckColumns on rec's used columns (DecodeIPC does, as it
// decodes).
func (v *Validator) validate(rec arrow.Record, rowBase int, set *idSet, checked bool) (out arrow.Record, dead []DeadLetter) {
	defer func() {
		if p := recover(); p != nil {
			if out != nil {
				out.Release()
			}
			out = v.empty(false, false)
			dead = []DeadLetter{{Reason: ReasonUndecodable, RowIndex: -1,
				Detail: fmt.Sprintf("record could not be read: %v", p)}}
		}
	}()
	if rec == nil {
		return v.empty(false, false), nil
	}
	p := v.planFor(rec.Schema())
	n := int(rec.NumRows())
	if p.errReason != rOK {
		dead = make([]DeadLetter, 0, min(n, max(v.maxDead, 1)+1))
		for i := range n {
			if v.maxDead > 0 && i >= v.maxDead {
				dead = append(dead, DeadLetter{Reason: reasonNames[p.errReason], RowIndex: rowBase + i, Count: n - i,
					Detail: summaryDetail(reasonNames[p.errReason], n-i, rowBase+i, v.maxDead)})
				break
			}
			dead = append(dead, DeadLetter{Reason: reasonNames[p.errReason], Detail: p.errDetail,
				RowIndex: rowBase + i, Row: v.rowMap(rec, i)})
		}
		return v.empty(false, false), dead
	}
	if !checked {
		if err := arrowipc.CheckColumns(rec, p.used()); err != nil {
			return v.empty(p.withSite, p.withObs), []DeadLetter{{Reason: ReasonUndecodable, RowIndex: -1,
				Detail: err.Error()}}
		}
	}
	st := v.pool.Get().(*scratch)
	defer func() { st.release(); v.pool.Put(st) }()
	st.reset(n, len(v.spec.Covariates), p.withSite, p.withObs)
	v.fillRecord(rec, &p, st)
	st.dedupe(set, rowBase)
	reuse := v.reusable(rec, &p, st)
	out = v.build(st, p.withSite, p.withObs, reuse)
	dead = v.deadLetters(st, rowBase, v.slotNames(), func(i int) map[string]any { return v.rowMap(rec, i) })
	return out, dead
}
