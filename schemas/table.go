package schemas

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

// Table is the good rows of a whole file as columns: the input of the fits.
// It has exactly the rows ReadFile's good batches have, in file order (the
// same validation, duplicate ids removed the same way: the first good row
// with an id keeps it).
type Table struct {
	Time   []float64
	Event  []bool
	Cohort []int32 // index into the spec's cohort labels
	// X is the covariates row-major, in the spec's order: row i's are
	// X[i*P : (i+1)*P] (the layout the regression fits take, built while
	// the chunks are merged: no transpose afterwards).
	X          []float64
	P          int      // the number of covariates
	Site       []string // nil when the file has no site column
	ObservedAt []int64  // microseconds since the epoch (UTC); nil when the file has no observed_at column
	// Dead counts the rows dead-lettered, by reason (the Reason*
	// constants); a batch of an Arrow file that fails as a whole (a dead
	// letter with RowIndex -1) counts once.
	Dead map[string]int
}

// Len is the number of rows.
func (t *Table) Len() int { return len(t.Time) }

// ReadTable reads a whole file (any format ReadFile reads) into a Table.
// Memory is that of the columns kept plus about 24 bytes and the id's
// bytes per good row while the file is read (the ids are not kept).
//
// A CSV file does not go through Arrow batches: its chunks are parsed and
// validated on one worker per core and appended to the columns, and the
// duplicate ids are found once at the end (the good rows' id hashes
// partitioned into cache-sized groups, each checked with a small table),
// instead of a file-wide hash-table probe per row.
func ReadTable(path string, v *Validator) (*Table, error) {
	if v == nil {
		return nil, errors.New("schemas: read table: nil validator")
	}
	format, err := FormatFromPath(path)
	if err != nil {
		return nil, err
	}
	if format != FormatCSV {
		t, err := readTableBatches(path, v)
		if err != nil {
			return nil, err
		}
		return t, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("schemas: read table: %w", err)
	}
	defer f.Close()
	var size int64
	if fi, serr := f.Stat(); serr == nil {
		size = fi.Size()
	}
	t, err := readCSVTable(f, size, v, tableChunkSize, min(runtime.GOMAXPROCS(0), 8))
	if err != nil {
		return nil, fmt.Errorf("schemas: read table %s: %w", filepath.Base(path), err)
	}
	return t, nil
}

func newTable(v *Validator, site, obs bool, rows int) *Table {
	rows = min(rows+rows/16, 1<<24) // a presize only: the estimate and a margin
	t := &Table{Dead: map[string]int{},
		Time: make([]float64, 0, rows), Event: make([]bool, 0, rows), Cohort: make([]int32, 0, rows),
		P: len(v.spec.Covariates)}
	t.X = make([]float64, 0, rows*t.P)
	if site {
		t.Site = []string{}
	}
	if obs {
		t.ObservedAt = []int64{}
	}
	return t
}

// readTableBatches builds the table from ReadFile's canonical batches.
func readTableBatches(path string, v *Validator) (*Table, error) {
	var t *Table
	err := ReadFile(path, v, 1<<16, func(good arrow.Record, dead []DeadLetter) error {
		s := good.Schema()
		si, oi := SiteIndex(s), ObservedAtIndex(s)
		if t == nil {
			t = newTable(v, si >= 0, oi >= 0, 0)
		}
		for _, d := range dead {
			t.Dead[d.Reason] += max(d.Rows(), 1)
		}
		n := int(good.NumRows())
		t.Time = append(t.Time, good.Column(ColTime).(*array.Float64).Float64Values()...)
		ev := good.Column(ColEvent).(*array.Boolean)
		for i := range n {
			t.Event = append(t.Event, ev.Value(i))
		}
		t.Cohort = append(t.Cohort, good.Column(ColCohort).(*array.Dictionary).Indices().(*array.Int32).Int32Values()...)
		if t.P > 0 {
			cols := make([][]float64, t.P)
			for k := range cols {
				cols[k] = good.Column(ColCohort + 1 + k).(*array.Float64).Float64Values()
			}
			t.X = appendRows(t.X, cols, 0, n)
		}
		if si >= 0 && t.Site != nil {
			site := good.Column(si).(*array.String)
			for i := range n {
				t.Site = append(t.Site, strings.Clone(site.Value(i)))
			}
		}
		if oi >= 0 && t.ObservedAt != nil {
			obs := good.Column(oi).(*array.Timestamp)
			for i := range n {
				t.ObservedAt = append(t.ObservedAt, int64(obs.Value(i)))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if t == nil {
		t = newTable(v, false, false, 0)
	}
	return t, nil
}

// readCSVTable is readCSVWith into a Table.
func readCSVTable(r io.Reader, size int64, v *Validator, chunkSize, workers int) (*Table, error) {
	var m *tableMerger
	err := readCSVChunks(r, size, v, 1<<16, chunkSize, workers, func(l *csvLayout, rows int, pool *scratchList) chunkMerger {
		t := newTable(v, l.withSite, l.withObs, rows)
		n := cap(t.Time)
		m = &tableMerger{l: l, pool: pool, t: t,
			hashes: make([]uint64, 0, n), idEnd: make([]int, 0, n), ids: make([]byte, 0, 12*n)}
		return m
	})
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("no header")
	}
	m.removeDuplicates()
	return m.t, nil
}

// tableMerger appends the good rows of each chunk to the table and keeps
// their id hashes and bytes for the duplicate check at the end.
type tableMerger struct {
	l      *csvLayout
	pool   *scratchList
	t      *Table
	rowN   int      // rows merged (file rows, good and bad)
	hashes []uint64 // per table row: the id's hash
	ids    []byte   // the ids' bytes, one after the other
	idEnd  []int    // per table row: end of its id in ids
	sites  map[string]string
}

func (m *tableMerger) rows() int { return m.rowN }

func (m *tableMerger) merge(c *csvChunk) error {
	t := m.t
	for _, b := range c.batches {
		st := b.st
		// Copy each run of good rows column by column.
		for a := 0; a < st.n; {
			if r := st.reason[a]; r != rOK {
				t.Dead[reasonNames[r]]++
				a++
				continue
			}
			e := a + 1
			for e < st.n && st.reason[e] == rOK {
				e++
			}
			t.Time = append(t.Time, st.times[a:e]...)
			t.Event = append(t.Event, st.events[a:e]...)
			t.Cohort = append(t.Cohort, st.codes[a:e]...)
			t.X = appendRows(t.X, st.covs, a, e)
			if m.l.withSite {
				for _, s := range st.sites[a:e] {
					t.Site = append(t.Site, m.intern(s))
				}
			}
			if m.l.withObs {
				t.ObservedAt = append(t.ObservedAt, st.obs[a:e]...)
			}
			m.hashes = append(m.hashes, st.hashes[a:e]...)
			for i := a; i < e; i++ {
				m.ids = append(m.ids, st.id(i)...)
				m.idEnd = append(m.idEnd, len(m.ids))
			}
			a = e
		}
		m.rowN += st.n
		st.release()
		m.pool.put(st)
	}
	c.batches = nil
	if c.err != nil {
		return fmt.Errorf("row %d: %w", m.rowN, c.err)
	}
	return nil
}

// intern returns a copy of s that outlives the chunk, one per distinct
// site.
func (m *tableMerger) intern(s string) string {
	if m.sites == nil {
		m.sites = map[string]string{}
	}
	if c, ok := m.sites[s]; ok {
		return c
	}
	c := strings.Clone(s)
	m.sites[c] = c
	return c
}

func (m *tableMerger) id(row int32) []byte {
	start := 0
	if row > 0 {
		start = m.idEnd[row-1]
	}
	return m.ids[start:m.idEnd[row]]
}

// removeDuplicates drops every row whose id an earlier row has.
func (m *tableMerger) removeDuplicates() {
	dups := duplicateRows(m.hashes, m.id)
	m.hashes, m.ids, m.idEnd = nil, nil, nil
	if len(dups) == 0 {
		return
	}
	t := m.t
	t.Dead[ReasonDuplicateID] += len(dups)
	t.Time = dropRows(t.Time, dups)
	t.Event = dropRows(t.Event, dups)
	t.Cohort = dropRows(t.Cohort, dups)
	t.X = dropRowsStrided(t.X, t.P, dups)
	if t.Site != nil {
		t.Site = dropRows(t.Site, dups)
	}
	if t.ObservedAt != nil {
		t.ObservedAt = dropRows(t.ObservedAt, dups)
	}
}

// dropRows removes the rows drop (ascending) from x, in place.
func dropRows[T any](x []T, drop []int32) []T {
	w := int(drop[0])
	for k, d := range drop {
		end := len(x)
		if k+1 < len(drop) {
			end = int(drop[k+1])
		}
		w += copy(x[w:], x[int(d)+1:end])
	}
	clear(x[w:])
	return x[:w]
}

// appendRows appends rows [a, e) of the columns cols to x, row-major.
func appendRows(x []float64, cols [][]float64, a, e int) []float64 {
	p := len(cols)
	if p == 0 || e <= a {
		return x
	}
	w := len(x)
	x = slices.Grow(x, (e-a)*p)[:w+(e-a)*p]
	switch p {
	case 3: // dpsurv gen's covariates: the columns' loads interleaved
		c0, c1, c2 := cols[0][a:e], cols[1][a:e], cols[2][a:e]
		dst := x[w:]
		for i := range c0 {
			r := dst[3*i : 3*i+3 : 3*i+3]
			r[0], r[1], r[2] = c0[i], c1[i], c2[i]
		}
	default:
		for k, col := range cols {
			dst := x[w+k:]
			for i, v := range col[a:e] {
				dst[i*p] = v
			}
		}
	}
	return x
}

// dropRowsStrided removes the rows drop (ascending) from the row-major x
// of p values a row, in place.
func dropRowsStrided(x []float64, p int, drop []int32) []float64 {
	if p == 0 {
		return x
	}
	w := int(drop[0]) * p
	for k, d := range drop {
		end := len(x)
		if k+1 < len(drop) {
			end = int(drop[k+1]) * p
		}
		w += copy(x[w:], x[(int(d)+1)*p:end])
	}
	clear(x[w:])
	return x[:w]
}

// duplicateRows returns, in ascending order, the rows whose id (hash
// hashes[r], bytes id(r)) equals an earlier row's. The rows are grouped by
// the top bits of their hash (a stable counting sort, so each group is in
// row order) into groups of about 2,000, and each group is checked with an
// open-addressing table of a few kilobytes that stays in the cache: about
// two sequential passes and one cached probe per row, where a file-wide
// table costs a cache miss per row. It holds 8 bytes per row meanwhile.
func duplicateRows(hashes []uint64, id func(int32) []byte) []int32 {
	n := len(hashes)
	if n > math.MaxInt32 {
		panic("schemas: more than 2^31 rows") // the columns alone would be 70 GB
	}
	bits := 0
	for n>>bits > 2048 && bits < 16 {
		bits++
	}
	shift := uint(64 - bits) // x >> 64 is 0 in Go: one group when bits is 0
	count := make([]int32, 1<<bits+1)
	for _, h := range hashes {
		count[h>>shift+1]++
	}
	for g := 1; g < len(count); g++ {
		count[g] += count[g-1]
	}
	// The (hash, row) pairs, grouped: each group is then read in order.
	// A pair keeps the hash's low 32 bits (the group is its top bits, the
	// slot its low ones): an equal low half only sends the probe on to
	// compare the ids' bytes, which decide.
	type pair struct {
		h uint32
		r int32
	}
	pairs := make([]pair, n)
	next := slices.Clone(count[:1<<bits])
	for r, h := range hashes {
		g := h >> shift
		pairs[next[g]] = pair{uint32(h), int32(r)}
		next[g]++
	}
	var dups []int32
	var table []pair // row + 1; 0 is empty
	for g := 0; g < 1<<bits; g++ {
		group := pairs[count[g]:count[g+1]]
		size := 16
		for size < 2*len(group) {
			size <<= 1
		}
		table = resize(table, size)
		clear(table)
		mask := uint32(size - 1)
		for _, p := range group {
			for j := p.h & mask; ; j = (j + 1) & mask {
				s := &table[j]
				if s.r == 0 {
					*s = pair{p.h, p.r + 1}
					break
				}
				if s.h == p.h && string(id(s.r-1)) == string(id(p.r)) {
					dups = append(dups, p.r)
					break
				}
			}
		}
	}
	slices.Sort(dups)
	return dups
}

// tableChunkSize is ReadTable's chunk size: smaller than ReadFile's, since
// the rows of the chunks in flight are held in scratches (about 70 bytes a
// row) until merged, and fresh memory costs its page faults.
var tableChunkSize = 256 << 10
