package schemas

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/dpsurv/dpsurv/codecs/csvrec/csvrectest"
)

// csvResult is everything a CSV read gives, batch boundaries aside.
type csvResult struct {
	site, obs bool // the batches have a site, an observed_at column
	rows      []canonRow
	dead      []DeadLetter
	err       string
}

func collectCSV(t testing.TB, ncov int, read func(fn func(arrow.Record, []DeadLetter) error) error) csvResult {
	t.Helper()
	var r csvResult
	err := read(func(good arrow.Record, dead []DeadLetter) error {
		r.rows = append(r.rows, readCanonical(t, good, ncov)...)
		r.site, r.obs = SiteIndex(good.Schema()) >= 0, ObservedAtIndex(good.Schema()) >= 0
		r.dead = append(r.dead, dead...)
		return nil
	})
	if err != nil {
		r.err = err.Error()
	}
	return r
}

// compareCSV reads data with the oracle (encoding/csv + validateRaw) and
// with the fast reader under several chunk sizes and worker counts, and
// requires identical rows, dead letters and errors.
func compareCSV(t testing.TB, data []byte, spec Spec, batch int) {
	t.Helper()
	compareCSVChunks(t, data, spec, batch, csvChunkings)
}

// csvChunking is one way of cutting a file for the parallel reader.
type csvChunking struct{ chunk, workers int }

// csvChunkings: one chunk, chunks smaller than a row (7, 13 bytes: a row
// spans several), and chunks of a few rows, over 1 to 4 workers.
var csvChunkings = []csvChunking{{1 << 20, 1}, {7, 1}, {64, 2}, {13, 4}, {1 << 10, 3}}

// compareCSVChunks is compareCSV over the given chunkings.
func compareCSVChunks(t testing.TB, data []byte, spec Spec, batch int, chunkings []csvChunking) {
	t.Helper()
	mem := checkedMem(t)
	v := newTestValidator(t, spec, mem)
	ncov := len(spec.Covariates)
	want := collectCSV(t, ncov, func(fn func(arrow.Record, []DeadLetter) error) error {
		return readCSVOracle(bytes.NewReader(data), v, batch, fn)
	})
	for _, cfg := range chunkings {
		got := collectCSV(t, ncov, func(fn func(arrow.Record, []DeadLetter) error) error {
			return readCSVWith(bytes.NewReader(data), int64(len(data)), v, batch, fn, cfg.chunk, cfg.workers)
		})
		if (got.err == "") != (want.err == "") {
			t.Fatalf("chunk %d workers %d: error %q, oracle %q\ninput %q", cfg.chunk, cfg.workers, got.err, want.err, data)
		}
		if !reflect.DeepEqual(got.rows, want.rows) {
			t.Fatalf("chunk %d workers %d: rows\n%+v\noracle\n%+v\ninput %q", cfg.chunk, cfg.workers, got.rows, want.rows, data)
		}
		if len(got.dead) != len(want.dead) {
			t.Fatalf("chunk %d workers %d: %d dead letters, oracle %d\n%+v\n%+v\ninput %q", cfg.chunk, cfg.workers, len(got.dead), len(want.dead), got.dead, want.dead, data)
		}
		for k := range got.dead {
			if !reflect.DeepEqual(got.dead[k], want.dead[k]) {
				t.Fatalf("chunk %d workers %d: dead letter %d\n%+v\noracle\n%+v\ninput %q", cfg.chunk, cfg.workers, k, got.dead[k], want.dead[k], data)
			}
		}
		// The fit path: the same rows as columns, the same dead counts.
		tab, err := readCSVTable(bytes.NewReader(data), int64(len(data)), v, cfg.chunk, cfg.workers)
		if (err == nil) != (want.err == "") {
			t.Fatalf("chunk %d workers %d: table error %v, oracle %q\ninput %q", cfg.chunk, cfg.workers, err, want.err, data)
		}
		if err == nil {
			wt := tableOf(want, spec)
			if tab.Len() == 0 && len(want.rows) == 0 {
				// No batch shows whether the (empty) site and
				// observed_at columns exist.
				tab.Site, tab.ObservedAt = wt.Site, wt.ObservedAt
			}
			if !reflect.DeepEqual(tab, wt) {
				t.Fatalf("chunk %d workers %d: table\n%+v\noracle\n%+v\ninput %q", cfg.chunk, cfg.workers, tab, wt, data)
			}
		}
	}
}

// tableOf is the Table of a read's good rows and dead letters.
func tableOf(r csvResult, spec Spec) *Table {
	t := &Table{Time: []float64{}, Event: []bool{}, Cohort: []int32{}, X: []float64{}, P: len(spec.Covariates), Dead: map[string]int{}}
	if r.site {
		t.Site = []string{}
	}
	if r.obs {
		t.ObservedAt = []int64{}
	}
	for _, row := range r.rows {
		if r.site {
			t.Site = append(t.Site, row.Site)
		}
		if r.obs {
			t.ObservedAt = append(t.ObservedAt, row.ObsUS)
		}
		t.Time = append(t.Time, row.Time)
		t.Event = append(t.Event, row.Event)
		t.Cohort = append(t.Cohort, int32(slices.Index(spec.Cohorts, row.Cohort)))
		t.X = append(t.X, row.Covs...)
	}
	for _, d := range r.dead {
		t.Dead[d.Reason] += d.Rows()
	}
	return t
}

func TestReadCSVMatchesEncodingCSV(t *testing.T) {
	t.Parallel()
	headers := [][]string{
		{"id", "time", "event", "cohort", "age"},
		{"id", "time", "event", "cohort", "age", "site", "extra"},
		{"id", "time", "event", "cohort", "age", "observed_at"},
		{"id", "time", "event", "cohort", "age", "age"},    // duplicate used column
		{"id", "time", "event", "cohort", "age", "x", "x"}, // duplicate unused column
		{"id", "time", "event", "cohort"},                  // covariate missing
	}
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 150 {
		h := headers[trial%len(headers)]
		data := csvrectest.RandomCSV(r, h)
		compareCSV(t, data, testSpec(), 1+r.IntN(9))
	}
	fixed := []string{
		"id,time,event,cohort,age\n1,2,1,1,3",
		"id,time,event,cohort,age\r\n1,2,1,1,3\r\n\r\n2,3,0,2,4\r",
		"id,time,event,cohort,age\n\"1\n2\",2,1,1,3\n3,4,1,1,5\n",
		"id,time,event,cohort,age\n\"unterminated,2,1,1,3\n3,4,1,1,5\n",
		"id,time,event,cohort,age\n\"a\"b,2,1,1,3\n\"c\"\"\",4,1,1,5\n",
		"id,time,event,cohort,age\n\"a\"\r\n",
		"\"id\",\"time\",event,cohort,age\n1,2,1,1,3\n",
		"\n\nid,time,event,cohort,age\n1,2,1,1,3\n1,2,1,1,3\n",
		"id,time,event,cohort,age,observed_at\n1,2,1,1,3,2024-01-02\n2,2,1,1,3,2024-01-02T03:04:05Z\n3,2,1,1,3,nope\n",
	}
	for _, s := range fixed {
		compareCSV(t, []byte(s), testSpec(), 2)
	}
	compareCSV(t, []byte("id,time,event,cohort,age,site\n1,2,1,1,3,north\n2,2,1,1,3,\n"),
		Spec{Cohorts: []string{"1"}, TimeUnit: "days", Covariates: []string{"age"}, Columns: Columns{Site: "site"}}, 3)
}

func FuzzReadCSV(f *testing.F) {
	f.Add([]byte("id,time,event,cohort,age\n1,2,1,1,3\n\"a,\"\"b\",4,0,2,5\r\n"))
	f.Add([]byte("id,time,event,cohort,age\n\"x\ny\",2,1,1,3"))
	f.Fuzz(func(t *testing.T, data []byte) {
		compareCSV(t, data, testSpec(), 3)
	})
}

// A large file read in parallel gives the rows of the sequential read, and
// a callback error stops it without leaking goroutines (checked by -race
// runs and the test's end).
func TestReadCSVParallelLarge(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	b.WriteString("id,time,event,cohort,age\n")
	for i := range 20000 {
		fmt.Fprintf(&b, "p%07d,%d,%d,%s,%d.%d\n", i%19000, i%3650, i%2, []string{"1", "2", "control"}[i%3], 40+i%40, i%10)
	}
	// Chunks of a few rows to a hundred: the file's 490 KB make 120 to
	// 1,900 chunks, nearly every boundary inside a row, over 1 to 4
	// workers. Chunks smaller than a row (7 and 13 bytes) run on the
	// small inputs of TestReadCSVMatchesEncodingCSV; here they made 70,000
	// chunks of a record each and most of the test's time (3 s, 25 s
	// under -race).
	compareCSVChunks(t, b.Bytes(), testSpec(), 1000, []csvChunking{{1 << 20, 1}, {257, 2}, {1 << 10, 3}, {4093, 4}})
	mem := checkedMem(t)
	v := newTestValidator(t, testSpec(), mem)
	stop := errors.New("stop")
	calls := 0
	err := readCSVWith(bytes.NewReader(b.Bytes()), 0, v, 100, func(arrow.Record, []DeadLetter) error {
		calls++
		if calls == 3 {
			return stop
		}
		return nil
	}, 4096, 2)
	if !errors.Is(err, stop) || calls != 3 {
		t.Errorf("error %v after %d calls, want stop after 3", err, calls)
	}
}

// fileIDs (growing from its smallest table) agrees with a map: the first
// claim of an id wins, later ones get the first row.
func TestFileIDsMatchesMap(t *testing.T) {
	t.Parallel()
	s := newFileIDs(0)
	ref := map[string]int32{}
	r := rand.New(rand.NewPCG(5, 6))
	for row := range int32(60000) {
		id := fmt.Sprintf("id-%d", r.IntN(40000))
		if r.IntN(50) == 0 {
			id = strings.Repeat("x", 200+r.IntN(3)) // long ids (2-byte length)
		}
		first, dup := s.claim(id, maphash.String(dedupeSeed, id), row)
		want, seen := ref[id]
		if !seen {
			ref[id] = row
			want = row
		}
		if dup != seen || first != want {
			t.Fatalf("row %d id %q: claim (%d, %v), want (%d, %v)", row, id, first, dup, want, seen)
		}
	}
	if s.n != len(ref) || len(s.table) < 4*s.n/3 {
		t.Errorf("%d ids in a table of %d; map has %d", s.n, len(s.table), len(ref))
	}
}

// duplicateRows agrees with a map (first row of an id wins) when hashes
// collide (few distinct hashes for many distinct ids) and across many
// groups (more than 2,048 rows).
//
// The two colliding cases run on 5,000 rows: 4 groups of about 1,250
// rows, each probing through a cluster of hundreds of ids, up to 55 ids
// sharing a hash (64 hashes) or all ~900 of a group sharing the low half
// (high), each compared byte by byte. A group's cost grows with its
// square and groups never exceed 2,048 rows, so the 32 groups of the
// former 40,000 rows (7 s of the test's 7.5 s under -race) did the same
// work 8 times over; 70,000 rows of distinct hashes still make 64 groups.
func TestDuplicateRowsMatchesMap(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		n, ids, hashes int
		high           bool // hashes that differ only in their top 32 bits (the pairs keep the low 32)
	}{{0, 1, 1, false}, {1, 1, 1, false}, {100, 60, 5, false}, {5000, 3000, 1 << 30, false}, {5000, 3750, 64, false},
		{70000, 70000, 1 << 30, false}, {5000, 3750, 1 << 20, true}} {
		ids := make([]string, tc.n)
		hashes := make([]uint64, tc.n)
		for i := range ids {
			ids[i] = fmt.Sprintf("id-%d", r.IntN(tc.ids))
			// A hash that depends on the id only, from a small set
			// when tc.hashes is small; spread over the top bits.
			hashes[i] = maphash.String(dedupeSeed, ids[i]) % uint64(tc.hashes) * 0x9E3779B97F4A7C15
			if tc.high {
				hashes[i] = hashes[i]>>32<<32 | 12345
			}
		}
		// The ids' bytes once: the probe compares them often where hashes
		// collide, and a conversion per call would be most of the test.
		idBytes := make([][]byte, len(ids))
		for i, id := range ids {
			idBytes[i] = []byte(id)
		}
		got := duplicateRows(hashes, func(row int32) []byte { return idBytes[row] })
		var want []int32
		seen := map[string]bool{}
		for i, id := range ids {
			if seen[id] {
				want = append(want, int32(i))
			}
			seen[id] = true
		}
		if !slices.Equal(got, want) {
			t.Fatalf("n %d ids %d hashes %d: %d duplicates %v..., want %d", tc.n, tc.ids, tc.hashes, len(got), got[:min(len(got), 5)], len(want))
		}
	}
}

// dropRows removes exactly the given rows.
func TestDropRows(t *testing.T) {
	t.Parallel()
	for _, drop := range [][]int32{{0}, {9}, {0, 9}, {3, 4, 5}, {1, 3, 5, 7, 9}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}} {
		x := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
		var want []int
		for _, v := range x {
			if !slices.Contains(drop, int32(v)) {
				want = append(want, v)
			}
		}
		if got := dropRows(x, drop); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("drop %v: %v, want %v", drop, got, want)
		}
	}
}

// dropRowsStrided removes exactly the given rows of a row-major array,
// for one and several values a row.
func TestDropRowsStrided(t *testing.T) {
	t.Parallel()
	for _, p := range []int{1, 2, 3, 5} {
		for _, drop := range [][]int32{{0}, {9}, {0, 9}, {3, 4, 5}, {1, 3, 5, 7, 9}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}} {
			var x, want []float64
			for r := range 10 {
				for k := range p {
					v := float64(100*r + k)
					x = append(x, v)
					if !slices.Contains(drop, int32(r)) {
						want = append(want, v)
					}
				}
			}
			if got := dropRowsStrided(x, p, drop); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("p %d drop %v: %v, want %v", p, drop, got, want)
			}
		}
	}
}

// appendRows lays rows [a, e) of the columns out row-major after what x
// holds, on the three-column path and the general one.
func TestAppendRows(t *testing.T) {
	t.Parallel()
	for _, p := range []int{1, 2, 3, 4} {
		cols := make([][]float64, p)
		for k := range cols {
			for r := range 7 {
				cols[k] = append(cols[k], float64(10*r+k))
			}
		}
		x := []float64{-1, -2}
		x = appendRows(x, cols, 2, 5)
		x = appendRows(x, cols, 5, 5)
		x = appendRows(x, cols, 6, 7)
		want := []float64{-1, -2}
		for _, r := range []int{2, 3, 4, 6} {
			for k := range p {
				want = append(want, float64(10*r+k))
			}
		}
		if !slices.Equal(x, want) {
			t.Errorf("p %d: %v, want %v", p, x, want)
		}
	}
}
