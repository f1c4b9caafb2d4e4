package schemas

import (
	"fmt"
	"hash/maphash"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/bitutil"
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

// scratch holds per-call working state; pooled.
type scratch struct {
	n      int
	reason []uint8
	slot   []uint16
	dupOf  []int32
	ids    []string
	// idCol, when set, holds the ids instead of ids (an input utf8
	// column: no per-row copy of string headers, nothing to clear);
	// idsEmpty says ids holds no references to drop.
	idCol    *array.String
	idsEmpty bool
	times    []float64
	events   []bool
	codes    []int32
	covs     [][]float64
	sites    []string
	obs      []int64
	// siteNull and obsNull mark null values of a nullable optional
	// column (Spec.NullableSite, NullableObservedAt); anySiteNull and
	// anyObsNull say whether any is set.
	siteNull, obsNull       []bool
	anySiteNull, anyObsNull bool
	// siteDict, when set, is the input site column's dictionary and
	// siteIdx each row's index into it: the site column is built as a
	// dictionary of the entries the good rows use (never a per-row copy).
	siteDict arrow.Array
	siteIdx  []int32
	tmp      []float64
	hashes   []uint64 // CSV reader: maphash of each good row's id (dedupeSeed)
	keep     []int32
	table    []int32
}

func (st *scratch) reset(n, ncov int, site, obs bool) {
	st.n = n
	st.reason = resize(st.reason, n)
	clear(st.reason)
	st.slot = resize(st.slot, n)
	st.dupOf = resize(st.dupOf, n)
	st.ids = resize(st.ids, n)
	st.idCol, st.idsEmpty = nil, false
	st.times = resize(st.times, n)
	st.events = resize(st.events, n)
	st.codes = resize(st.codes, n)
	st.tmp = resize(st.tmp, n)
	if cap(st.covs) < ncov {
		st.covs = make([][]float64, ncov)
	}
	st.covs = st.covs[:ncov]
	for k := range st.covs {
		st.covs[k] = resize(st.covs[k], n)
	}
	if site {
		st.sites = resize(st.sites, n)
		st.siteNull = resize(st.siteNull, n)
		clear(st.siteNull)
	} else {
		st.sites = st.sites[:0]
		st.siteNull = st.siteNull[:0]
	}
	if obs {
		st.obs = resize(st.obs, n)
		st.obsNull = resize(st.obsNull, n)
		clear(st.obsNull)
	} else {
		st.obs = st.obs[:0]
		st.obsNull = st.obsNull[:0]
	}
	st.anySiteNull, st.anyObsNull = false, false
	st.siteDict, st.siteIdx = nil, st.siteIdx[:0]
	st.keep = st.keep[:0]
}

// nullSite marks row i's site null (a nullable site).
func (st *scratch) nullSite(i int) { st.siteNull[i], st.anySiteNull = true, true }

// nullObs marks row i's observed_at null (a nullable observed_at).
func (st *scratch) nullObs(i int) { st.obsNull[i], st.anyObsNull = true, true }

// release drops references into input memory before the scratch is pooled.
func (st *scratch) release() {
	if !st.idsEmpty {
		clear(st.ids)
	}
	st.idCol = nil
	st.siteDict = nil
	clear(st.sites)
	// Do not pool very large buffers.
	if cap(st.reason) > 1<<20 {
		*st = scratch{}
	}
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// id is row i's id.
func (st *scratch) id(i int) string {
	if st.idCol != nil {
		return st.idCol.Value(i)
	}
	return st.ids[i]
}

// idStrings is the ids as a slice (filled from idCol when set).
func (st *scratch) idStrings() []string {
	if st.idCol != nil && st.idsEmpty {
		for i := range st.n {
			if st.reason[i] == rOK {
				st.ids[i] = st.idCol.Value(i)
			}
		}
		st.idsEmpty = false
	}
	return st.ids
}

// fail records the first failure of row i.
func (st *scratch) fail(i int, r uint8, slot int) {
	if st.reason[i] == rOK {
		st.reason[i] = r
		st.slot[i] = uint16(slot)
	}
}

// idSet is the set of ids already released; shared across the batches of one
// message or file (cross=true: keys are cloned since input memory is
// released between batches).
type idSet struct {
	m     map[string]int32
	cross bool
	file  *fileIDs // instead of m: the file-wide set of the file readers (ids copied into its arena)
}

// dedupe marks every good row whose id was already seen as a duplicate.
// Only good rows claim ids, so a bad row followed by its corrected version
// in the same batch lets the corrected one through.
func (st *scratch) dedupe(set *idSet, rowBase int) {
	if set == nil {
		st.dedupeLocal(rowBase)
		return
	}
	if set.file != nil {
		for i := 0; i < st.n; i++ {
			if st.reason[i] != rOK {
				continue
			}
			id := st.id(i)
			if first, dup := set.file.claim(id, maphash.String(dedupeSeed, id), int32(rowBase+i)); dup {
				st.reason[i] = rDup
				st.slot[i] = slotID
				st.dupOf[i] = first
			}
		}
		return
	}
	for i := 0; i < st.n; i++ {
		if st.reason[i] != rOK {
			continue
		}
		id := st.id(i)
		if first, dup := set.m[id]; dup {
			st.reason[i] = rDup
			st.slot[i] = slotID
			st.dupOf[i] = first
			continue
		}
		if set.cross {
			id = strings.Clone(id) // input memory does not outlive the batch
		}
		set.m[id] = int32(rowBase + i)
	}
}

var dedupeSeed = maphash.MakeSeed()

// dedupeLocal is dedupe within one batch, with an open-addressing table of
// row indices (one hash per row; no per-row allocation).
func (st *scratch) dedupeLocal(rowBase int) {
	size := 16
	for size < 2*st.n {
		size <<= 1
	}
	st.table = resize(st.table, size)
	for j := range st.table {
		st.table[j] = -1
	}
	mask := uint64(size - 1)
	for i := 0; i < st.n; i++ {
		if st.reason[i] != rOK {
			continue
		}
		id := st.id(i)
		j := maphash.String(dedupeSeed, id) & mask
		for {
			s := st.table[j]
			if s < 0 {
				st.table[j] = int32(i)
				break
			}
			if st.id(int(s)) == id {
				st.reason[i] = rDup
				st.slot[i] = slotID
				st.dupOf[i] = int32(rowBase) + s
				break
			}
			j = (j + 1) & mask
		}
	}
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
// checkRecord on rec's used columns (DecodeIPC does, as it decodes).
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

// plan locates the columns of one input schema.
type plan struct {
	id, time, event, cohort, site, obs int
	cov                                []int
	withSite, withObs                  bool
	errReason                          uint8
	errDetail                          string
}

func (p *plan) used() []int {
	u := []int{p.id, p.time, p.event, p.cohort}
	u = append(u, p.cov...)
	if p.site >= 0 {
		u = append(u, p.site)
	}
	if p.obs >= 0 {
		u = append(u, p.obs)
	}
	return u
}

// slotNames returns the input column name of every slot.
func (v *Validator) slotNames() []string {
	names := []string{v.cols.ID, v.cols.Time, v.cols.Event, v.cols.Cohort, v.cols.Site, v.cols.ObservedAt}
	return append(names, v.spec.Covariates...)
}

type typeClass int

const (
	clsID typeClass = iota
	clsTime
	clsEvent
	clsCohort
	clsCov
	clsSite
	clsObs
)

func (v *Validator) planFor(s *arrow.Schema) plan {
	p := plan{id: -1, time: -1, event: -1, cohort: -1, site: -1, obs: -1}
	md := s.Metadata()
	if i := md.FindKey(MetaSchema); i >= 0 && md.Values()[i] != InputSchemaName {
		p.errReason = rWrongSchema
		p.errDetail = fmt.Sprintf("schema metadata %s is %q, want %q", MetaSchema, md.Values()[i], InputSchemaName)
		return p
	}
	if i := md.FindKey(MetaTimeUnit); i >= 0 && md.Values()[i] != v.spec.TimeUnit {
		p.errReason = rWrongSchema
		p.errDetail = fmt.Sprintf("schema metadata %s is %q, configured time unit is %q", MetaTimeUnit, md.Values()[i], v.spec.TimeUnit)
		return p
	}
	find := func(name string, cls typeClass, required bool) int {
		if p.errReason != rOK {
			return -1
		}
		idx := s.FieldIndices(name)
		switch {
		case len(idx) == 0:
			if required {
				p.errReason = rMissing
				p.errDetail = fmt.Sprintf("column %q not found in input schema", name)
			}
			return -1
		case len(idx) > 1:
			p.errReason = rWrongSchema
			p.errDetail = fmt.Sprintf("column %q appears %d times in input schema", name, len(idx))
			return -1
		}
		dt := s.Field(idx[0]).Type
		if !accepts(cls, dt) {
			p.errReason = rWrongSchema
			p.errDetail = fmt.Sprintf("column %q has unsupported type %s", name, dt)
			return -1
		}
		return idx[0]
	}
	p.id = find(v.cols.ID, clsID, true)
	p.time = find(v.cols.Time, clsTime, true)
	p.event = find(v.cols.Event, clsEvent, true)
	p.cohort = find(v.cols.Cohort, clsCohort, true)
	p.cov = make([]int, len(v.spec.Covariates))
	for k, c := range v.spec.Covariates {
		p.cov[k] = find(c, clsCov, true)
	}
	// An optional column outside the configuration is not looked at.
	if !v.spec.SkipSite {
		p.site = find(v.cols.Site, clsSite, v.spec.RequireSite)
	}
	if !v.spec.SkipObservedAt {
		p.obs = find(v.cols.ObservedAt, clsObs, v.spec.RequireObservedAt)
	}
	// A nullable column the message lacks is in the output, all null.
	p.withSite = p.site >= 0 || v.spec.NullableSite && p.errReason == rOK
	p.withObs = p.obs >= 0 || v.spec.NullableObservedAt && p.errReason == rOK
	return p
}

func isInt(id arrow.Type) bool {
	switch id {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

func isFloat(id arrow.Type) bool { return id == arrow.FLOAT32 || id == arrow.FLOAT64 }

func isString(id arrow.Type) bool { return id == arrow.STRING || id == arrow.LARGE_STRING }

func accepts(cls typeClass, dt arrow.DataType) bool {
	id := dt.ID()
	dictOf := func(ok func(arrow.Type) bool) bool {
		d, isDict := dt.(*arrow.DictionaryType)
		return isDict && ok(d.ValueType.ID())
	}
	strOrInt := func(t arrow.Type) bool { return isString(t) || isInt(t) }
	switch cls {
	case clsID, clsSite, clsCohort:
		return strOrInt(id) || dictOf(strOrInt)
	case clsTime, clsCov:
		return isInt(id) || isFloat(id)
	case clsEvent:
		return id == arrow.BOOL || isInt(id) || isFloat(id)
	case clsObs:
		return id == arrow.TIMESTAMP || id == arrow.DATE32 || id == arrow.DATE64 || isString(id) || dictOf(isString)
	}
	return false
}

// fillRecord reads every used column of rec into st, marking failures.
func (v *Validator) fillRecord(rec arrow.Record, p *plan, st *scratch) {
	n := st.n
	// id
	switch a := rec.Column(p.id).(type) {
	case *array.String:
		// All-ASCII data (the norm) needs no per-value UTF-8 check.
		ascii := isASCII(a.ValueBytes())
		st.idCol, st.idsEmpty = a, true
		for i := 0; i < n; i++ {
			if a.IsNull(i) {
				st.fail(i, rMissing, slotID)
				continue
			}
			s := a.Value(i)
			if s == "" || len(s) > MaxIDBytes || (!ascii && !utf8.ValidString(s)) {
				st.fail(i, rInvalidID, slotID)
			}
		}
	default:
		g := stringGetter(a)
		for i := 0; i < n; i++ {
			s, ok := g(i)
			if !ok {
				st.fail(i, rMissing, slotID)
				continue
			}
			st.ids[i] = s
			if !validID(s) {
				st.fail(i, rInvalidID, slotID)
			}
		}
	}
	// time
	tcol := rec.Column(p.time)
	toFloats(tcol, st.times)
	for i, t := range st.times {
		if tcol.IsNull(i) {
			st.fail(i, rMissing, slotTime)
		} else if !(t >= 0) || t > math.MaxFloat64 {
			st.fail(i, rTime, slotTime)
		}
	}
	// event
	switch a := rec.Column(p.event).(type) {
	case *array.Boolean:
		for i := 0; i < n; i++ {
			if a.IsNull(i) {
				st.fail(i, rMissing, slotEvent)
				continue
			}
			st.events[i] = a.Value(i)
		}
	default:
		toFloats(a, st.tmp)
		for i, x := range st.tmp {
			switch {
			case a.IsNull(i):
				st.fail(i, rMissing, slotEvent)
			case x == 0:
				st.events[i] = false
			case x == 1:
				st.events[i] = true
			default:
				st.fail(i, rEvent, slotEvent)
			}
		}
	}
	// cohort
	v.fillCohort(rec.Column(p.cohort), st)
	// covariates
	for k, ci := range p.cov {
		col := rec.Column(ci)
		dst := st.covs[k]
		toFloats(col, dst)
		for i, x := range dst {
			if col.IsNull(i) || math.IsNaN(x) || math.IsInf(x, 0) {
				st.fail(i, rCov, slotCov0+k)
			}
		}
	}
	switch {
	case p.site >= 0:
		v.fillSite(rec.Column(p.site), st)
	case p.withSite: // nullable, absent
		for i := range n {
			st.nullSite(i)
		}
	}
	switch {
	case p.obs >= 0:
		fillObs(rec.Column(p.obs), st, v.spec.NullableObservedAt)
	case p.withObs: // nullable, absent
		for i := range n {
			st.nullObs(i)
		}
	}
}

// fillSite reads the site column. A dictionary keeps its entries where they
// are: each row records its index (st.siteIdx), and build makes a
// dictionary of the entries the good rows use, so that an entry is copied
// at most once however many rows point at it.
func (v *Validator) fillSite(col arrow.Array, st *scratch) {
	n := st.n
	nullable := v.spec.NullableSite
	missing := func(i int) {
		if nullable {
			st.nullSite(i)
		} else {
			st.fail(i, rMissing, slotSite)
		}
	}
	if a, ok := col.(*array.Dictionary); ok {
		dict := a.Dictionary()
		ig := intGetter(a.Indices())
		st.siteDict = dict
		st.siteIdx = resize(st.siteIdx, n)
		for i := range n {
			j, _ := ig(i) // in range: checkRecord checked every index
			st.siteIdx[i] = int32(j)
			if a.IsNull(i) || dict.IsNull(int(j)) {
				missing(i)
			}
		}
		return
	}
	g := stringGetter(col)
	for i := range n {
		s, ok := g(i)
		if !ok {
			missing(i)
			continue
		}
		st.sites[i] = s
	}
}

func (v *Validator) fillCohort(col arrow.Array, st *scratch) {
	n := st.n
	switch a := col.(type) {
	case *array.Dictionary:
		// Map each dictionary entry to a label code once: all of them
		// when the dictionary is no longer than the batch, else the
		// entries the rows use (a dictionary far longer than its batch
		// must not cost a pass over every entry).
		dict := a.Dictionary()
		g := stringGetter(dict)
		code := func(j int) int32 {
			if s, ok := g(j); ok {
				if c, found := v.labels[s]; found {
					return c
				}
			}
			return -1
		}
		if dict.Len() > 2*n+16 {
			byRow := sparseCodes(a, n, code)
			for i := 0; i < n; i++ {
				if a.IsNull(i) || dict.IsNull(a.GetValueIndex(i)) {
					st.fail(i, rMissing, slotCohort)
					continue
				}
				st.codes[i] = byRow[i]
				if byRow[i] < 0 {
					st.fail(i, rCohort, slotCohort)
				}
			}
			return
		}
		codes := make([]int32, dict.Len())
		for j := range codes {
			codes[j] = code(j)
		}
		if ix, ok := a.Indices().(*array.Int32); ok {
			raw := ix.Int32Values()
			for i := 0; i < n; i++ {
				if a.IsNull(i) || dict.IsNull(int(raw[i])) {
					st.fail(i, rMissing, slotCohort)
					continue
				}
				c := codes[raw[i]]
				st.codes[i] = c
				if c < 0 {
					st.fail(i, rCohort, slotCohort)
				}
			}
			return
		}
		for i := 0; i < n; i++ {
			if a.IsNull(i) {
				st.fail(i, rMissing, slotCohort)
				continue
			}
			j := a.GetValueIndex(i)
			if dict.IsNull(j) {
				st.fail(i, rMissing, slotCohort)
				continue
			}
			c := codes[j]
			st.codes[i] = c
			if c < 0 {
				st.fail(i, rCohort, slotCohort)
			}
		}
	case *array.String:
		for i := 0; i < n; i++ {
			if a.IsNull(i) {
				st.fail(i, rMissing, slotCohort)
				continue
			}
			c, found := v.labels[a.Value(i)]
			if !found {
				st.fail(i, rCohort, slotCohort)
				continue
			}
			st.codes[i] = c
		}
	default:
		if isInt(a.DataType().ID()) {
			ig := intGetter(a)
			for i := 0; i < n; i++ {
				if a.IsNull(i) {
					st.fail(i, rMissing, slotCohort)
					continue
				}
				x, exact := ig(i)
				c, found := v.intLabels[x]
				if !found || !exact {
					st.fail(i, rCohort, slotCohort)
					continue
				}
				st.codes[i] = c
			}
			return
		}
		g := stringGetter(a)
		for i := 0; i < n; i++ {
			s, ok := g(i)
			if !ok {
				st.fail(i, rMissing, slotCohort)
				continue
			}
			c, found := v.labels[s]
			if !found {
				st.fail(i, rCohort, slotCohort)
				continue
			}
			st.codes[i] = c
		}
	}
}

// reuse marks canonical-typed input columns that can be passed through
// without a copy (only when every row is good).
type reuse struct {
	id, time, event, site, obs arrow.Array
	cov                        []arrow.Array
}

func (v *Validator) reusable(rec arrow.Record, p *plan, st *scratch) *reuse {
	for _, r := range st.reason {
		if r != rOK {
			return nil
		}
	}
	r := &reuse{cov: make([]arrow.Array, len(p.cov))}
	if a, ok := rec.Column(p.id).(*array.String); ok {
		r.id = a
	}
	if a, ok := rec.Column(p.time).(*array.Float64); ok {
		r.time = a
	}
	if a, ok := rec.Column(p.event).(*array.Boolean); ok {
		r.event = a
	}
	for k, ci := range p.cov {
		if a, ok := rec.Column(ci).(*array.Float64); ok {
			r.cov[k] = a
		}
	}
	if p.site >= 0 {
		if a, ok := rec.Column(p.site).(*array.String); ok {
			r.site = a
		}
	}
	if p.obs >= 0 {
		if a, ok := rec.Column(p.obs).(*array.Timestamp); ok && arrow.TypeEqual(a.DataType(), ObservedAtType) {
			r.obs = a
		}
	}
	return r
}

// empty returns a zero-row canonical record.
func (v *Validator) empty(site, obs bool) arrow.Record {
	st := &scratch{}
	st.reset(0, len(v.spec.Covariates), site, obs)
	return v.build(st, site, obs, nil)
}

// build assembles the canonical record from the good rows of st. Columns
// are written straight into Arrow buffers (no builders): a gather of the
// good rows, or the input array itself when every row is good and its type
// is already canonical.
func (v *Validator) build(st *scratch, site, obs bool, ru *reuse) arrow.Record {
	keep := st.keep[:0]
	for i, r := range st.reason {
		if r == rOK {
			keep = append(keep, int32(i))
		}
	}
	st.keep = keep
	k := len(keep)
	siteDict := site && st.siteDict != nil
	schema := v.schemas[schemaKeyDict(site, obs, siteDict)]
	cols := make([]arrow.Array, 0, schema.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	mem := v.mem
	// pass returns a retained input array usable as is, or nil.
	pass := func(get func(*reuse) arrow.Array) arrow.Array {
		if ru == nil || k != st.n {
			return nil
		}
		a := get(ru)
		if a != nil {
			a.Retain()
		}
		return a
	}
	or := func(a arrow.Array, build func() arrow.Array) arrow.Array {
		if a != nil {
			return a
		}
		return build()
	}
	cols = append(cols,
		or(pass(func(r *reuse) arrow.Array { return r.id }), func() arrow.Array { return gatherStrings(mem, st.idStrings(), keep) }),
		or(pass(func(r *reuse) arrow.Array { return r.time }), func() arrow.Array {
			return gatherFixed(mem, arrow.PrimitiveTypes.Float64, st.times, keep)
		}),
		or(pass(func(r *reuse) arrow.Array { return r.event }), func() arrow.Array { return gatherBools(mem, st.events, keep) }),
		v.buildCohort(st.codes, keep),
	)
	for c := range st.covs {
		cols = append(cols, or(pass(func(r *reuse) arrow.Array { return r.cov[c] }), func() arrow.Array {
			return gatherFixed(mem, arrow.PrimitiveTypes.Float64, st.covs[c], keep)
		}))
	}
	if site {
		cols = append(cols, or(pass(func(r *reuse) arrow.Array { return r.site }), func() arrow.Array {
			if siteDict {
				return gatherDict(mem, st.siteDict, st.siteIdx, nullsOf(st.anySiteNull, st.siteNull), keep)
			}
			return withNulls(mem, gatherStrings(mem, st.sites, keep), nullsOf(st.anySiteNull, st.siteNull), keep)
		}))
	}
	if obs {
		cols = append(cols, or(pass(func(r *reuse) arrow.Array { return r.obs }), func() arrow.Array {
			return withNulls(mem, gatherFixed(mem, ObservedAtType, st.obs, keep), nullsOf(st.anyObsNull, st.obsNull), keep)
		}))
	}
	return array.NewRecord(schema, cols, int64(k))
}

// newBuffer allocates an n-byte buffer from mem.
func newBuffer(mem memory.Allocator, n int) *memory.Buffer {
	b := memory.NewResizableBuffer(mem)
	b.Resize(n)
	return b
}

// makeArray wraps buffers (consumed) into an array of type dt and length n.
func makeArray(dt arrow.DataType, n int, bufs ...*memory.Buffer) arrow.Array {
	data := array.NewData(dt, n, bufs, nil, 0, 0)
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	defer data.Release()
	return array.MakeFromData(data)
}

// gatherFixed copies src[keep] into a new non-null array of a fixed-width
// type whose Go representation is T (float64, int32, int64 timestamps).
func gatherFixed[T float64 | int32 | int64](mem memory.Allocator, dt arrow.DataType, src []T, keep []int32) arrow.Array {
	size := int(unsafe.Sizeof(T(0)))
	buf := newBuffer(mem, size*len(keep))
	if len(keep) > 0 {
		dst := unsafe.Slice((*T)(unsafe.Pointer(&buf.Bytes()[0])), len(keep))
		if len(keep) == len(src) {
			copy(dst, src)
		} else {
			for j, i := range keep {
				dst[j] = src[i]
			}
		}
	}
	return makeArray(dt, len(keep), nil, buf)
}

func gatherBools(mem memory.Allocator, src []bool, keep []int32) arrow.Array {
	buf := newBuffer(mem, int(bitutil.BytesForBits(int64(len(keep)))))
	bits := buf.Bytes()
	clear(bits)
	for j, i := range keep {
		if src[i] {
			bitutil.SetBit(bits, j)
		}
	}
	return makeArray(arrow.FixedWidthTypes.Boolean, len(keep), nil, buf)
}

func gatherStrings(mem memory.Allocator, src []string, keep []int32) arrow.Array {
	total := 0
	for _, i := range keep {
		total += len(src[i])
	}
	if total > math.MaxInt32 {
		panic("schemas: string column exceeds 2 GiB") // recovered by validate
	}
	offBuf := newBuffer(mem, 4*(len(keep)+1))
	dataBuf := newBuffer(mem, total)
	offs := arrow.Int32Traits.CastFromBytes(offBuf.Bytes())
	data := dataBuf.Bytes()
	pos := 0
	offs[0] = 0
	for j, i := range keep {
		pos += copy(data[pos:], src[i])
		offs[j+1] = int32(pos)
	}
	return makeArray(arrow.BinaryTypes.String, len(keep), nil, offBuf, dataBuf)
}

func (v *Validator) buildCohort(codes []int32, keep []int32) arrow.Array {
	idx := gatherFixed(v.mem, arrow.PrimitiveTypes.Int32, codes, keep)
	defer idx.Release()
	dict := cohortDictionary(v.mem, v.spec.Cohorts)
	defer dict.Release()
	return array.NewDictionaryArray(CohortType, idx, dict)
}

func cohortDictionary(mem memory.Allocator, labels []string) arrow.Array {
	keep := make([]int32, len(labels))
	for i := range keep {
		keep[i] = int32(i)
	}
	return gatherStrings(mem, labels, keep)
}

// deadLetters builds one dead letter per failed row, the rows beyond the
// verbatim cap (SetMaxDeadRows) folded into one summary per reason.
func (v *Validator) deadLetters(st *scratch, rowBase int, names []string, row func(int) map[string]any) []DeadLetter {
	var dead []DeadLetter
	var sums [len(reasonNames)]int // reason -> 1 + index in dead
	for i, r := range st.reason {
		if r == rOK {
			continue
		}
		if v.maxDead > 0 && len(dead) >= v.maxDead {
			if j := sums[r]; j > 0 {
				dead[j-1].Count++
				continue
			}
			dead = append(dead, DeadLetter{Reason: reasonNames[r], RowIndex: rowBase + i, Count: 1})
			sums[r] = len(dead)
			continue
		}
		m := row(i)
		slot := int(st.slot[i])
		name := ""
		if slot < len(names) {
			name = names[slot]
		}
		dead = append(dead, DeadLetter{
			Reason:   reasonNames[r],
			Detail:   detail(r, name, m, int(st.dupOf[i])),
			RowIndex: rowBase + i,
			Row:      m,
		})
	}
	for _, j := range sums {
		if j > 0 {
			d := &dead[j-1]
			d.Detail = summaryDetail(d.Reason, d.Count, d.RowIndex, v.maxDead)
		}
	}
	return dead
}

func detail(r uint8, name string, row map[string]any, dupOf int) string {
	val, present := row[name]
	q := func() string {
		if !present {
			return "absent"
		}
		return fmt.Sprintf("%#v", jsonSafe(val))
	}
	switch r {
	case rMissing:
		return fmt.Sprintf("field %q is null or absent", name)
	case rInvalidID:
		return fmt.Sprintf("field %q must be a non-empty UTF-8 string or an integer, got %s", name, q())
	case rDup:
		return fmt.Sprintf("field %q: id %s already appeared in row %d", name, q(), dupOf)
	case rTime:
		return fmt.Sprintf("field %q must be a finite number >= 0, got %s", name, q())
	case rEvent:
		return fmt.Sprintf("field %q must be 0, 1, true or false, got %s", name, q())
	case rCohort:
		return fmt.Sprintf("field %q: label %s is not in the configured cohort list", name, q())
	case rCov:
		return fmt.Sprintf("covariate %q must be a finite number, got %s", name, q())
	case rObs:
		return fmt.Sprintf("field %q must be a timestamp, a date or an RFC 3339 string, got %s", name, q())
	}
	return fmt.Sprintf("field %q: %s", name, reasonNames[r])
}
