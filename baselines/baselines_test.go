package baselines

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/audit"
	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/schemas"
)

func newSan(t *testing.T, cfg Config) *Sanitizer {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// BinSup on known counts: bins of 10 on [0, 49], threshold 3. Cohort 0 has
// 4 records in bin 0 (3 events) and 2 in bin 1 (suppressed); cohort 1 has 3
// censorings in bin 4 (time 49 and one clamped from 70).
func TestBinSupKnownCounts(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	s := newSan(t, Config{Method: MethodBinSup, Cohorts: []string{"a", "b"}, TimeMax: 49, TimeUnit: "days", TimeBin: 10, SizeBin: 3})
	recs := []struct {
		t float64
		e bool
		c int
	}{{0, true, 0}, {3, true, 0}, {9.4, true, 0}, {9, false, 0}, {10, true, 0}, {19, true, 0},
		{41, false, 1}, {49, false, 1}, {70, false, 1}}
	for _, r := range recs {
		if err := s.AddRecord(r.t, r.e, r.c); err != nil {
			t.Fatal(err)
		}
	}
	rel, err := s.Release(nil)
	if err != nil {
		t.Fatal(err)
	}
	if rel.SuppressedRecords != 2 || rel.SuppressedBins != 1 || rel.Clamped != 1 || rel.Len() != 7 {
		t.Errorf("suppressed %d records in %d bins, clamped %d, len %d", rel.SuppressedRecords, rel.SuppressedBins, rel.Clamped, rel.Len())
	}
	if !reflect.DeepEqual(rel.Events[0], []int64{3, 0, 0, 0, 0}) || !reflect.DeepEqual(rel.Censor[0], []int64{1, 0, 0, 0, 0}) ||
		!reflect.DeepEqual(rel.Censor[1], []int64{0, 0, 0, 0, 3}) {
		t.Errorf("released %v %v / %v %v", rel.Events[0], rel.Censor[0], rel.Events[1], rel.Censor[1])
	}
	rec, err := rel.Records(mem)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	times := rec.Column(1).(*array.Int64).Int64Values()
	events := rec.Column(2).(*array.Boolean)
	coh := rec.Column(3).(*array.Dictionary)
	if !reflect.DeepEqual(times, []int64{0, 0, 0, 0, 40, 40, 40}) {
		t.Errorf("times %v", times)
	}
	var ev []bool
	var labels []string
	for i := 0; i < events.Len(); i++ {
		ev = append(ev, events.Value(i))
		labels = append(labels, coh.ValueStr(i))
	}
	if !reflect.DeepEqual(ev, []bool{true, true, true, false, false, false, false}) ||
		!reflect.DeepEqual(labels, []string{"a", "a", "a", "a", "b", "b", "b"}) {
		t.Errorf("events %v cohorts %v", ev, labels)
	}
	f := rec.Schema().Field(1)
	if v, _ := f.Metadata.GetValue(schemas.MetaMechanism); v != MethodBinSup {
		t.Errorf("time metadata %v", f.Metadata)
	}
	if v, _ := f.Metadata.GetValue(schemas.MetaGuarantee); v != GuaranteeBinSup {
		t.Errorf("guarantee %q", v)
	}
	if _, err := s.Release(nil); err == nil {
		t.Error("second release accepted")
	}
	if err := s.AddRecord(1, true, 0); err == nil {
		t.Error("add after release accepted")
	}
}

// DPTime's released count of an empty cell is max(Z, 0) with Z two-sided
// geometric of scale 2/epsilon: P(0) = 1/(1+a), P(k) = (1-a)/(1+a) a^k,
// a = exp(-epsilon/2). 2 cohorts x 1000 bins x 2 cells = 4000 draws at
// epsilon = 1 against that law by chi-square (cells 0..6 and >= 7, 7 df,
// critical value 24.32 at the 0.1% level; fixed seed).
func TestDPTimeNoiseLaw(t *testing.T) {
	const eps = 1.0
	s := newSan(t, Config{Method: MethodDPTime, Cohorts: []string{"a", "b"}, TimeMax: 999, TimeUnit: "days", TimeBin: 1, Epsilon: eps})
	rel, err := s.Release(dp.NewSeededSource(42))
	if err != nil {
		t.Fatal(err)
	}
	if rel.Guarantee != GuaranteeDPTime || rel.Neighbouring != NeighbouringDP || rel.Epsilon != eps {
		t.Errorf("release metadata %+v", rel)
	}
	obs := make([]float64, 8)
	n := 0.0
	for c := range rel.Events {
		for b := range rel.Events[c] {
			for _, v := range []int64{rel.Events[c][b], rel.Censor[c][b]} {
				if v < 0 {
					t.Fatalf("negative count %d", v)
				}
				obs[min(v, 7)]++
				n++
			}
		}
	}
	a := math.Exp(-eps / 2)
	chi := 0.0
	tail := 1.0
	for k := range 7 {
		p := (1 - a) / (1 + a) * math.Pow(a, float64(k))
		if k == 0 {
			p = 1 / (1 + a)
		}
		tail -= p
		chi += (obs[k] - n*p) * (obs[k] - n*p) / (n * p)
	}
	chi += (obs[7] - n*tail) * (obs[7] - n*tail) / (n * tail)
	if chi > 24.32 {
		t.Errorf("chi-square %.2f on 7 df; observed %v", chi, obs)
	}
	// The phantom records of empty cells: mean of max(Z, 0) is a/(1-a^2).
	if want := n * a / (1 - a*a); math.Abs(float64(rel.Len())-want) > 5*math.Sqrt(want*3) {
		t.Errorf("phantom records %d, want about %.0f", rel.Len(), want)
	}
}

// With a negligible noise scale (epsilon 1e4 -> scale 2e-4) DPTime
// releases the exact counts.
func TestDPTimeLargeEpsilonIsExact(t *testing.T) {
	s := newSan(t, Config{Method: MethodDPTime, Cohorts: []string{"a"}, TimeMax: 20, TimeUnit: "days", TimeBin: 5, Epsilon: 1e4})
	for _, x := range []float64{1, 2, 6, 20} {
		if err := s.AddRecord(x, x != 2, 0); err != nil {
			t.Fatal(err)
		}
	}
	rel, err := s.Release(dp.NewSeededSource(1))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rel.Events[0], []int64{1, 1, 0, 0, 1}) || !reflect.DeepEqual(rel.Censor[0], []int64{1, 0, 0, 0, 0}) {
		t.Errorf("events %v censor %v", rel.Events[0], rel.Censor[0])
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{Method: MethodBinSup, Cohorts: []string{"a"}, TimeMax: 10, TimeUnit: "days", TimeBin: 1, SizeBin: 5}
	cases := []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"method", func(c *Config) { c.Method = "k-anon" }, "method"},
		{"size bin", func(c *Config) { c.SizeBin = 0 }, "size_bin"},
		{"epsilon", func(c *Config) { c.Method = MethodDPTime; c.Epsilon = math.Inf(1) }, "epsilon"},
		{"time bin", func(c *Config) { c.TimeBin = 0 }, "time_bin"},
		{"time max", func(c *Config) { c.TimeMax = 0 }, "time_max"},
		{"cohorts", func(c *Config) { c.Cohorts = nil }, "cohorts"},
		{"unit", func(c *Config) { c.TimeUnit = "" }, "time_unit"},
	}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error %v, want one naming %s", err, tc.field)
			}
		})
	}
	s := newSan(t, Config{Method: MethodDPTime, Cohorts: []string{"a"}, TimeMax: 10, TimeUnit: "days", TimeBin: 1, Epsilon: 1})
	if _, err := s.Release(nil); err == nil {
		t.Error("dptime without a source accepted")
	}
	if err := s.AddRecord(math.NaN(), true, 0); err == nil {
		t.Error("NaN time accepted")
	}
	if err := s.AddRecord(1, true, 3); err == nil {
		t.Error("bad cohort accepted")
	}
}

// End to end on a file: the baseline's CSV output keeps the input's column
// names, reads back through the audit reader with the same spec, and the
// audit's bin kernel sees precision 1/2 for cohorts the bins merge (each
// bin of width 2 holds one record of each cohort: BinSup with threshold 1
// keeps them all, and the attacker cannot tell them apart).
func TestSanitizeFileRoundTripAndAudit(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.csv")
	var b strings.Builder
	b.WriteString("pid,days,status,grp\n")
	for i := range 400 {
		b.WriteString(strings.Join([]string{itoa(i), itoa(i), itoa(i % 3 % 2), []string{"x", "y"}[i%2]}, ","))
		b.WriteString("\n")
	}
	b.WriteString("bad,row,with,junk\n")
	if err := os.WriteFile(in, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := schemas.Spec{Cohorts: []string{"x", "y"}, TimeUnit: "days", Columns: schemas.Columns{ID: "pid", Time: "days", Event: "status", Cohort: "grp"}}
	for _, out := range []string{"out.csv", "out.arrow"} {
		t.Run(out, func(t *testing.T) {
			path := filepath.Join(dir, out)
			sum, err := SanitizeFile(in, path, spec, Config{Method: MethodBinSup, Cohorts: spec.Cohorts, TimeMax: 500, TimeUnit: "days", TimeBin: 2, SizeBin: 1}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if sum.RecordsIn != 401 || sum.DeadLettered != 1 || sum.RecordsOut != 400 {
				t.Errorf("summary %+v", sum)
			}
			if strings.HasSuffix(out, ".csv") {
				head, _ := os.ReadFile(path)
				if !strings.HasPrefix(string(head), "pid,days,status,grp\n") {
					t.Errorf("header %q", strings.SplitN(string(head), "\n", 2)[0])
				}
			} else {
				md, _, err := audit.ArrowFieldMetadata(path, "days")
				if err != nil || md[MetaTimeBin] != "2" || md[schemas.MetaMechanism] != MethodBinSup {
					t.Errorf("arrow metadata %v, %v", md, err)
				}
			}
			orig, _, err := audit.ReadFile(in, spec)
			if err != nil {
				t.Fatal(err)
			}
			san, _, err := audit.ReadFile(path, spec)
			if err != nil {
				t.Fatal(err)
			}
			if san.Len() != 400 {
				t.Fatalf("read back %d records", san.Len())
			}
			k, err := audit.NewBinKernel(2, 500, "binsup")
			if err != nil {
				t.Fatal(err)
			}
			rep, err := audit.Run(orig, san, audit.Config{Kernel: k, Attack: audit.AttackOptions{Resamples: 20}}, dp.NewSeededSource(3))
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range spec.Cohorts {
				if p := float64(rep.Attack.Precision[l]); p != 0.5 {
					t.Errorf("cohort %s: precision %v, want 0.5", l, p)
				}
				if p := float64(rep.Attack.PrecisionNonPrivate[l]); p != 1 {
					t.Errorf("cohort %s: non-private precision %v, want 1", l, p)
				}
			}
			if mae := float64(rep.Utility.MAE); mae != 0.5 {
				t.Errorf("MAE %v, want 0.5 (every odd time moves down by 1)", mae)
			}
		})
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for i > 0 {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
	}
	return string(b)
}
