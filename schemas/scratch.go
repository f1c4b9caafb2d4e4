package schemas

import (
	"hash/maphash"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

// The validator's working state: one scratch per call (pooled), the id
// sets that find duplicates.

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
	st.sites, st.siteNull = optionalColumn(st.sites, st.siteNull, n, site)
	st.obs, st.obsNull = optionalColumn(st.obs, st.obsNull, n, obs)
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

// optionalColumn sizes an optional column's values and null marks for n
// rows, none null, when the batch has the column (on), and empties them
// when it does not.
func optionalColumn[T any](vals []T, nulls []bool, n int, on bool) ([]T, []bool) {
	if !on {
		return vals[:0], nulls[:0]
	}
	vals, nulls = resize(vals, n), resize(nulls, n)
	clear(nulls)
	return vals, nulls
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
