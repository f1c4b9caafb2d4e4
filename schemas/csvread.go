package schemas

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/dpsurv/dpsurv/codecs/csvrec"
)

// The CSV file reader. It gives exactly the records encoding/csv gives with
// LazyQuotes and a variable field count (empty lines skipped, \r\n
// normalised, quotes only at the start of a field, "" inside quotes, a bare
// quote kept literally), and validates every cell with the rules of
// fillRawRow (same checks, same order, same dead letters), but it works on
// the bytes of the file:
//
//   - the file is read in chunks cut at record boundaries (at the last
//     newline when the chunk has no quote, by a record scan otherwise), so
//     that the raw text held is a few chunks whatever the file size (the
//     chunker and the record splitting are codecs/csvrec's);
//   - each chunk is split and validated by a worker (one per core), straight
//     into the validator's scratch columns: no per-row map, no per-cell
//     string; integers take a fast exact path, other numbers go through
//     strconv.ParseFloat on the cell bytes; quoted fields are unescaped into
//     a per-chunk arena;
//   - the chunks are merged in file order, where ids are checked against the
//     file-wide id set (one hash table over an arena of id bytes) and the
//     canonical batches built and handed to the callback.
//
// csvread_test.go checks it against the encoding/csv + validateRaw reader it
// replaced, on generated and hostile inputs.

func readCSV(r io.Reader, size int64, v *Validator, batchSize int, fn func(arrow.Record, []DeadLetter) error) error {
	return readCSVWith(r, size, v, batchSize, fn, csvrec.ChunkSize, min(runtime.GOMAXPROCS(0), 8))
}

// csvLayout maps the header to the validator's slots.
type csvLayout struct {
	header            []string
	nfield            int
	id, time, event   int // column index, -1 when absent
	cohort, site, obs int
	cov               []int
	withSite, withObs bool
	dupUsed           string // a used column that appears twice in the header
}

func (v *Validator) csvLayout(header []string) *csvLayout {
	if len(header) > 0 {
		header[0] = strings.TrimPrefix(header[0], "\uFEFF")
	}
	last := make(map[string]int, len(header))
	count := make(map[string]int, len(header))
	for k, h := range header {
		last[h] = k
		count[h]++
	}
	idx := func(name string) int {
		if k, ok := last[name]; ok {
			return k
		}
		return -1
	}
	l := &csvLayout{header: header, nfield: len(header),
		id: idx(v.cols.ID), time: idx(v.cols.Time), event: idx(v.cols.Event), cohort: idx(v.cols.Cohort),
		site: idx(v.cols.Site), obs: idx(v.cols.ObservedAt)}
	for _, c := range v.spec.Covariates {
		l.cov = append(l.cov, idx(c))
	}
	l.withSite, l.withObs = l.site >= 0, l.obs >= 0
	for _, c := range v.slotNames() {
		if count[c] > 1 {
			l.dupUsed = c
			break
		}
	}
	return l
}

// scratchList is the free scratches of one read, shared by the parser's
// workers and the merger.
type scratchList struct {
	mu   sync.Mutex
	free []*scratch
	v    *Validator // its pool lends the first scratches and gets them back
}

func (l *scratchList) get() *scratch {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.free); n > 0 {
		st := l.free[n-1]
		l.free = l.free[:n-1]
		return st
	}
	return l.v.pool.Get().(*scratch)
}

// close gives the free scratches back to the validator's pool.
func (l *scratchList) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, st := range l.free {
		l.v.pool.Put(st)
	}
	l.free = nil
}

func (l *scratchList) put(st *scratch) {
	l.mu.Lock()
	l.free = append(l.free, st)
	l.mu.Unlock()
}

// csvBatch is at most batchSize validated rows of one chunk.
type csvBatch struct {
	st     *scratch
	start  []int32 // offset of each row's record in the chunk
	rowErr map[int]rowFailure
}

// csvChunk is a run of complete records of the file.
type csvChunk struct {
	seq     int
	buf     []byte // the pooled buffer data lives in
	data    []byte
	quotes  bool
	arena   []byte // unescaped quoted records (ids and sites may alias it)
	batches []*csvBatch
	err     error // read error after the chunk (or instead of it when data is nil)
}

// readCSVWith reads with chunks of chunkSize bytes and the given number of
// parsing workers (1: no goroutines).
// size is the file size if known (0 otherwise): it presizes the id set.
func readCSVWith(r io.Reader, size int64, v *Validator, batchSize int, fn func(arrow.Record, []DeadLetter) error, chunkSize, workers int) error {
	return readCSVChunks(r, size, v, batchSize, chunkSize, workers, func(l *csvLayout, rows int, pool *scratchList) chunkMerger {
		return &csvMerger{v: v, l: l, fn: fn, set: newFileIDs(rows), pool: pool}
	})
}

// nextChunk is ck's next chunk, to be parsed.
func nextChunk(ck *csvrec.Chunker, done <-chan struct{}) (*csvChunk, error) {
	c, err := ck.Next(done)
	if err != nil {
		return nil, err
	}
	return &csvChunk{buf: c.Buf, data: c.Data, quotes: c.Quotes}, nil
}

// chunkMerger takes the parsed chunks in file order.
type chunkMerger interface {
	merge(c *csvChunk) error
	rows() int // the rows merged so far
}

// readCSVChunks cuts r into chunks, parses them (on workers when there are
// several) and hands them in file order to the merger newMerger makes for
// the file's header and estimated row count.
func readCSVChunks(r io.Reader, size int64, v *Validator, batchSize, chunkSize, workers int, newMerger func(l *csvLayout, rows int, pool *scratchList) chunkMerger) error {
	ck := csvrec.NewChunker(r, chunkSize, workers+3)
	first, err := nextChunk(ck, nil)
	if errors.Is(err, io.EOF) {
		return errors.New("no header")
	}
	if err != nil {
		return fmt.Errorf("header: %w", err)
	}
	header, pos := csvrec.Header(first.data)
	for header == nil { // only empty lines so far
		ck.Put(first.buf)
		first, err = nextChunk(ck, nil)
		if errors.Is(err, io.EOF) {
			return errors.New("no header")
		}
		if err != nil {
			return fmt.Errorf("header: %w", err)
		}
		header, pos = csvrec.Header(first.data)
	}
	// Estimate the rows from the first chunk's line lengths.
	rows := 0
	if size > 0 && len(first.data) > pos {
		lines := bytes.Count(first.data[pos:], []byte{'\n'}) + 1
		rows = int(min(size/max(int64(len(first.data)-pos)/int64(lines), 1), 1<<31-1))
	}
	first.data = first.data[pos:]
	// Scratches go back to a list of the read, not to the validator's
	// sync.Pool, which drops them at every GC cycle (then reallocated,
	// they would make more cycles).
	pool := &scratchList{v: v}
	defer pool.close()
	l := v.csvLayout(header)
	m := newMerger(l, rows, pool)
	p := &csvParser{v: v, l: l, batchSize: batchSize, pool: pool}
	if ck.Drained() || workers == 1 {
		// One chunk, or one core: parse and merge in turn.
		c := first
		for {
			p.parse(c)
			if err := m.merge(c); err != nil {
				return err
			}
			ck.Put(c.buf)
			if ck.Drained() {
				return nil
			}
			c, err = nextChunk(ck, nil)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("row %d: %w", m.rows(), err)
			}
		}
	}
	return readCSVParallel(ck, first, p, m, workers)
}

// readCSVParallel reads chunks on one goroutine, parses them on workers and
// merges them in order on the caller's goroutine. At most ck.InFlight()
// chunks are in flight.
func readCSVParallel(ck *csvrec.Chunker, first *csvChunk, p *csvParser, m chunkMerger, workers int) error {
	done := make(chan struct{})
	jobs := make(chan *csvChunk, workers)
	results := make(chan *csvChunk, ck.InFlight())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // reader
		defer wg.Done()
		defer close(jobs)
		c, seq := first, 0
		for {
			c.seq = seq
			seq++
			select {
			case jobs <- c:
			case <-done:
				return
			}
			if ck.Drained() {
				return
			}
			var err error
			c, err = nextChunk(ck, done)
			if errors.Is(err, io.EOF) || errors.Is(err, csvrec.ErrCancelled) {
				return
			}
			if err != nil {
				select {
				case results <- &csvChunk{seq: seq, err: err}:
				case <-done:
				}
				return
			}
		}
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wp := *p
			wp.fields, wp.qarena, wp.bounds = nil, nil, nil // each worker its own
			for c := range jobs {
				wp.parse(c)
				select {
				case results <- c:
				case <-done:
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(results) }()
	defer func() {
		close(done)
		for range results { // let the goroutines finish
		}
	}()
	pending := map[int]*csvChunk{}
	want := 0
	for c := range results {
		pending[c.seq] = c
		for {
			c, ok := pending[want]
			if !ok {
				break
			}
			delete(pending, want)
			want++
			if c.data == nil && c.err != nil {
				return fmt.Errorf("row %d: %w", m.rows(), c.err)
			}
			err := m.merge(c)
			ck.Put(c.buf)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// csvParser splits and validates the records of chunks.
type csvParser struct {
	v         *Validator
	l         *csvLayout
	batchSize int
	fields    [][]byte     // fields of a quoted record
	qarena    []byte       // their unescaped bytes
	bounds    []int32      // field starts of the current record, then its end + 1
	pool      *scratchList // shared with the merger
}

func (p *csvParser) parse(c *csvChunk) {
	data := c.data
	var b *csvBatch
	var st *scratch
	l := p.l
	ncov := len(p.v.spec.Covariates)
	i := 0 // row in the current batch
	finish := func() {
		if b != nil {
			st.setLen(i)
		}
	}
	pos := 0
	for pos < len(data) {
		start := pos
		var line []byte
		bd := p.bounds[:0]
		if c.quotes {
			var next int
			var nl bool
			line, next, nl = csvrec.Line(data, pos)
			if len(line) == 0 {
				pos = next
				if !nl {
					break
				}
				continue
			}
			if bytes.IndexByte(line, '"') >= 0 {
				// Unescape the record, then lay its fields out in the
				// chunk's arena, one comma after each: bounds as below.
				var f [][]byte
				f, p.qarena, next = csvrec.ParseRecord(data, pos, p.fields[:0], p.qarena[:0])
				p.fields = f
				base := len(c.arena)
				for _, x := range f {
					bd = append(bd, int32(len(c.arena)-base))
					c.arena = append(c.arena, x...)
					c.arena = append(c.arena, ',')
				}
				bd = append(bd, int32(len(c.arena)-base))
				line = c.arena[base : len(c.arena)-1 : len(c.arena)-1]
			} else {
				bd = append(bd, 0)
				for j, ch := range line {
					if ch == ',' {
						bd = append(bd, int32(j+1))
					}
				}
				bd = append(bd, int32(len(line)+1))
			}
			pos = next
		} else {
			// One pass over the line: field starts, then its end.
			bd = append(bd, 0)
			var j int
			bd, j = csvrec.ScanLine(data, pos, bd)
			end := j
			if j < len(data) {
				pos = j + 1
			} else {
				pos = j
			}
			if end > start && data[end-1] == '\r' {
				end--
			}
			if end == start { // empty line
				continue
			}
			line = data[start:end:end]
			bd = append(bd, int32(end+1-start))
		}
		p.bounds = bd
		if b == nil || i == p.batchSize {
			finish()
			b = &csvBatch{st: p.pool.get()}
			st = b.st
			st.prepare(min(p.batchSize, (len(data)-start)/16+1), ncov, l.withSite, l.withObs)
			c.batches = append(c.batches, b)
			i = 0
		}
		if i == len(st.reason) {
			st.extend(min(p.batchSize, 2*i), l.withSite, l.withObs)
		}
		b.start = append(b.start, int32(start))
		st.reason[i] = rOK
		if l.dupUsed != "" || len(bd)-1 != l.nfield {
			if b.rowErr == nil {
				b.rowErr = map[int]rowFailure{}
			}
			b.rowErr[i] = p.rowFailure(line, bd)
			st.fail(i, b.rowErr[i].reason, 0)
			i++
			continue
		}
		p.fillRow(line, bd, i, st)
		if st.reason[i] == rOK {
			st.hashes[i] = maphash.String(dedupeSeed, st.ids[i])
		}
		i++
	}
	finish()
}

// prepare readies a pooled scratch for up to n rows written by index (the
// parser sets every row's reason; the other columns are read only for
// the rows it sets them for).
func (st *scratch) prepare(n, ncov int, site, obs bool) {
	st.reset(n, ncov, site, obs)
	st.hashes = resize(st.hashes, n)
	st.n = 0
}

// extend grows the row columns of a prepared scratch to n rows.
func (st *scratch) extend(n int, site, obs bool) {
	st.reason = growTo(st.reason, n)
	st.slot = growTo(st.slot, n)
	st.dupOf = growTo(st.dupOf, n)
	st.ids = growTo(st.ids, n)
	st.times = growTo(st.times, n)
	st.events = growTo(st.events, n)
	st.codes = growTo(st.codes, n)
	st.hashes = growTo(st.hashes, n)
	for k := range st.covs {
		st.covs[k] = growTo(st.covs[k], n)
	}
	if site {
		st.sites = growTo(st.sites, n)
	}
	if obs {
		st.obs = growTo(st.obs, n)
	}
}

func growTo[T any](s []T, n int) []T {
	if n <= len(s) {
		return s
	}
	return append(s, make([]T, n-len(s))...)
}

// setLen cuts the row columns of a prepared scratch to its n rows.
func (st *scratch) setLen(n int) {
	st.n = n
	st.reason, st.slot, st.dupOf = st.reason[:n], st.slot[:n], st.dupOf[:n]
	st.ids, st.times, st.events, st.codes = st.ids[:n], st.times[:n], st.events[:n], st.codes[:n]
	st.hashes = st.hashes[:n]
	for k := range st.covs {
		st.covs[k] = st.covs[k][:n]
	}
	if len(st.sites) > 0 {
		st.sites = st.sites[:n]
	}
	if len(st.obs) > 0 {
		st.obs = st.obs[:n]
	}
	st.tmp = st.tmp[:0]
}

// cells returns the fields of a record laid out by bounds (see parse).
func cells(line []byte, bd []int32) [][]byte {
	f := make([][]byte, len(bd)-1)
	for k := range f {
		f[k] = line[bd[k] : bd[k+1]-1]
	}
	return f
}

func (p *csvParser) rowFailure(line []byte, bd []int32) rowFailure {
	f := cells(line, bd)
	rec := make([]string, len(f))
	for k, b := range f {
		rec[k] = string(b)
	}
	row := p.l.rowMap(rec)
	if p.l.dupUsed != "" {
		return rowFailure{reason: rWrongSchema, row: row,
			detail: fmt.Sprintf("csv: column %q appears more than once in the header", p.l.dupUsed)}
	}
	var raw bytes.Buffer
	w := csv.NewWriter(&raw)
	_ = w.Write(rec)
	w.Flush()
	return rowFailure{reason: rUndecodable, row: row, raw: raw.Bytes(),
		detail: fmt.Sprintf("csv: record has %d fields, header has %d", len(rec), p.l.nfield)}
}

func (l *csvLayout) rowMap(rec []string) map[string]any {
	row := make(map[string]any, len(l.header))
	for k, h := range l.header {
		if k < len(rec) {
			row[h] = rec[k]
		}
	}
	return row
}

// bstr views b as a string without a copy; the string must not outlive the
// chunk (ids and sites are copied by build, dead-letter rows are cloned).
func bstr(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// csvCell returns the cell of column k of a record laid out by bounds bd
// (see parse), and false when it is absent or null by the CSV convention
// ("" and NA, surrounding space ignored).
func csvCell(line []byte, bd []int32, k int) ([]byte, bool) {
	if k < 0 {
		return nil, false
	}
	b := line[bd[k] : bd[k+1]-1]
	if n := len(b); n > 0 && b[0] > ' ' && b[0] < 0x7f && b[n-1] > ' ' && b[n-1] < 0x7f && !(n == 2 && b[0] == 'N' && b[1] == 'A') {
		return b, true
	}
	return b, !csvNull(bstr(b))
}

// label is v.labels[string(b)]: a linear search for short label lists.
func (p *csvParser) label(b []byte) (int32, bool) {
	if labels := p.v.spec.Cohorts; len(labels) <= 16 {
		for c, l := range labels {
			if len(l) == len(b) && l == bstr(b) {
				return int32(c), true
			}
		}
		return 0, false
	}
	c, ok := p.v.labels[string(b)]
	return c, ok
}

// fillRow is fillRawRow on CSV cells (same checks, same order).
func (p *csvParser) fillRow(f []byte, bd []int32, i int, st *scratch) {
	l := p.l
	// id
	if b, ok := csvCell(f, bd, l.id); !ok {
		st.fail(i, rMissing, slotID)
	} else {
		s := bstr(b)
		st.ids[i] = s
		if !validID(s) {
			st.fail(i, rInvalidID, slotID)
		}
	}
	// time
	if b, ok := csvCell(f, bd, l.time); !ok {
		st.fail(i, rMissing, slotTime)
	} else if t, ok := csvrec.ParseFloat(b); !ok || !(t >= 0) || t > math.MaxFloat64 {
		st.fail(i, rTime, slotTime)
	} else {
		st.times[i] = t
	}
	// event
	if b, ok := csvCell(f, bd, l.event); !ok {
		st.fail(i, rMissing, slotEvent)
	} else if len(b) == 1 && (b[0] == '0' || b[0] == '1') {
		st.events[i] = b[0] == '1'
	} else if e, ok := rawEvent(string(b)); !ok {
		st.fail(i, rEvent, slotEvent)
	} else {
		st.events[i] = e
	}
	// cohort: the label exactly
	if b, ok := csvCell(f, bd, l.cohort); !ok {
		st.fail(i, rMissing, slotCohort)
	} else if c, ok := p.label(b); !ok {
		st.fail(i, rCohort, slotCohort)
	} else {
		st.codes[i] = c
	}
	for k, col := range l.cov {
		b, present := csvCell(f, bd, col)
		x, ok := csvrec.ParseFloat(b)
		if !present || !ok || math.IsNaN(x) || math.IsInf(x, 0) {
			st.fail(i, rCov, slotCov0+k)
			continue
		}
		st.covs[k][i] = x
	}
	if l.withSite {
		if b, ok := csvCell(f, bd, l.site); !ok {
			st.fail(i, rMissing, slotSite)
		} else {
			st.sites[i] = bstr(b)
		}
	}
	if l.withObs {
		if b, ok := csvCell(f, bd, l.obs); !ok {
			st.fail(i, rMissing, slotObs)
		} else if us, ok := parseTimestamp(bstr(b)); !ok {
			st.fail(i, rObs, slotObs)
		} else {
			st.obs[i] = us
		}
	}
}

// csvMerger takes the parsed chunks in file order.
type csvMerger struct {
	v       *Validator
	l       *csvLayout
	fn      func(arrow.Record, []DeadLetter) error
	set     *fileIDs
	rowBase int
	names   []string
	pool    *scratchList
}

func (m *csvMerger) rows() int { return m.rowBase }

func (m *csvMerger) merge(c *csvChunk) error {
	if m.names == nil {
		m.names = m.v.slotNames()
	}
	for _, b := range c.batches {
		st := b.st
		m.set.dedupe(st, m.rowBase)
		out := m.v.build(st, m.l.withSite, m.l.withObs, nil)
		dead := m.v.deadLetters(st, m.rowBase, m.names, func(i int) map[string]any {
			if f, bad := b.rowErr[i]; bad {
				return f.row
			}
			fs, _, _ := csvrec.ParseRecord(c.data, int(b.start[i]), nil, nil)
			rec := make([]string, len(fs))
			for k, x := range fs {
				rec[k] = string(x)
			}
			return m.l.rowMap(rec)
		})
		withRowFailures(dead, b.rowErr, m.rowBase)
		m.rowBase += st.n
		st.release()
		m.pool.put(st)
		if err := emit(out, dead, m.fn); err != nil {
			return err
		}
	}
	c.batches = nil
	if c.err != nil {
		return fmt.Errorf("row %d: %w", m.rowBase, c.err)
	}
	return nil
}
