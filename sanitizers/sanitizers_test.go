package sanitizers

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dpsurv/dpsurv/codecs/arrowipc/arrowipctest"
	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/schemas"
)

var labels = []string{"A", "B", "C"}

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

// canonical builds a batch in the canonical validated layout.
func canonical(t testing.TB, mem memory.Allocator, ids []string, times []float64, events []bool, cohorts []int32, age []float64) arrow.Record {
	t.Helper()
	schema := schemas.CanonicalSchema(schemas.Spec{Cohorts: labels, Covariates: []string{"age"}, TimeUnit: "days"}, false, false)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues(ids, nil)
	b.Field(1).(*array.Float64Builder).AppendValues(times, nil)
	b.Field(2).(*array.BooleanBuilder).AppendValues(events, nil)
	db := b.Field(3).(*array.BinaryDictionaryBuilder)
	lb := array.NewStringBuilder(mem)
	lb.AppendValues(labels, nil)
	la := lb.NewStringArray()
	lb.Release()
	if err := db.InsertStringDictValues(la); err != nil {
		t.Fatal(err)
	}
	la.Release()
	idx := make([]int, len(cohorts))
	for i, c := range cohorts {
		idx[i] = int(c)
	}
	db.AppendIndices(idx, nil)
	b.Field(4).(*array.Float64Builder).AppendValues(age, nil)
	return b.NewRecord()
}

// canonicalRows is canonical of rows(n), released when the test ends.
func canonicalRows(t testing.TB, mem memory.Allocator, n int) arrow.Record {
	t.Helper()
	ids, times, events, cohorts, age := rows(n)
	in := canonical(t, mem, ids, times, events, cohorts, age)
	t.Cleanup(in.Release)
	return in
}

func baseConfig() Config {
	return Config{
		Key: testKey(1), Cohorts: labels, TimeMax: 1000, TimeUnit: "days",
		PseudonymizeID: true,
		Time:           TimeConfig{Mechanism: "te", Epsilon: 0.5, Window: 10},
		Cohort:         CohortConfig{Mechanism: "rrr", Epsilon: 1},
		Public:         []string{"event"},
	}
}

func rows(n int) (ids []string, times []float64, events []bool, cohorts []int32, age []float64) {
	for i := range n {
		ids = append(ids, fmt.Sprintf("patient-%06d", i))
		times = append(times, float64(100+i%700))
		events = append(events, i%3 != 0)
		cohorts = append(cohorts, int32(i%3))
		age = append(age, float64(40+i%50))
	}
	return
}

func newChain(t *testing.T, cfg Config, mem memory.Allocator) *Chain {
	t.Helper()
	c, err := New(cfg, mem)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Release)
	return c
}

func TestConfigErrorsNameTheField(t *testing.T) {
	cases := []struct {
		mutate func(*Config)
		want   string
	}{
		{func(c *Config) { c.Key = nil }, "sanitizers.key_file"},
		{func(c *Config) { c.Key = []byte("short") }, "sanitizers.key_file"},
		{func(c *Config) { c.TimeMax = -1 }, "schema.time_max"},
		{func(c *Config) { c.Cohorts = nil }, "schema.cohorts"},
		{func(c *Config) { c.Time.Window = 0 }, "sanitizers.time.window"},
		{func(c *Config) { c.Time.Epsilon = 0 }, "sanitizers.time.epsilon"},
		{func(c *Config) { c.Time.TargetLoss = 2 }, "sanitizers.time"},
		{func(c *Config) { c.Time.Mechanism = "laplace" }, "sanitizers.time.mechanism"},
		{func(c *Config) { c.Cohort.Epsilon = -1 }, "sanitizers.cohort.epsilon"},
		{func(c *Config) { c.Cohort.Mechanism = "x" }, "sanitizers.cohort.mechanism"},
		{func(c *Config) { c.Public = []string{"event", "id"} }, "schema.public[1]"},
		{func(c *Config) { c.Public = []string{"time"} }, "schema.public"},
	}
	for _, tc := range cases {
		cfg := baseConfig()
		tc.mutate(&cfg)
		_, err := New(cfg, memory.DefaultAllocator)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("want error starting %q, got %v", tc.want, err)
		}
	}
}

func TestGuaranteesReportErratum(t *testing.T) {
	cfg := baseConfig()
	cfg.Time = TimeConfig{Mechanism: "te", Epsilon: 0.1, Window: 10}
	c := newChain(t, cfg, memory.DefaultAllocator)
	var te, rrr *Guarantee
	g := c.Guarantees()
	for i := range g {
		switch g[i].Field {
		case "time":
			te = &g[i]
		case "cohort":
			rrr = &g[i]
		}
	}
	if te == nil || rrr == nil {
		t.Fatalf("guarantees %+v", g)
	}
	if math.Abs(*te.WorstCaseLoss-2.2521) > 1e-3 || te.Kind != KindTI || te.Warning == "" {
		t.Fatalf("te guarantee %+v, loss %v", te, *te.WorstCaseLoss)
	}
	if math.Abs(*rrr.Epsilon-1) > 1e-9 || rrr.Kind != KindLocalDP {
		t.Fatalf("rrr guarantee %+v", rrr)
	}
	// target loss configuration
	cfg.Time = TimeConfig{Mechanism: "te", TargetLoss: 3, Window: 5}
	c2 := newChain(t, cfg, memory.DefaultAllocator)
	for _, g := range c2.Guarantees() {
		if g.Field == "time" && math.Abs(*g.WorstCaseLoss-3) > 1e-6 {
			t.Fatalf("target loss 3 gave %v", *g.WorstCaseLoss)
		}
	}
}

func TestDefaultDenyAndReplayStability(t *testing.T) {
	mem := arrowipctest.CheckedMem(t)
	in := canonicalRows(t, mem, 500)
	ids := in.Column(0).(*array.String)

	c := newChain(t, baseConfig(), mem)
	out1, st, err := c.Apply(in)
	if err != nil {
		t.Fatal(err)
	}
	defer out1.Release()
	if st.Records != 500 || st.ClampedTime != 0 {
		t.Fatalf("stats %+v", st)
	}
	var names []string
	for _, f := range out1.Schema().Fields() {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, ","); got != "id,time,cohort,event" {
		t.Fatalf("output fields %s (age must be dropped, id pseudonymised)", got)
	}
	pid := out1.Column(0).(*array.String)
	for i := range 500 {
		if pid.Value(i) == ids.Value(i) || len(pid.Value(i)) != PseudonymLen {
			t.Fatalf("row %d: id not pseudonymised: %q", i, pid.Value(i))
		}
	}
	if v, _ := out1.Schema().Metadata().GetValue(schemas.MetaSchema); v != schemas.SanitizedSchemaName {
		t.Fatalf("schema metadata %v", out1.Schema().Metadata())
	}

	// Same key: byte-identical output.
	out2, _, err := c.Apply(in)
	if err != nil {
		t.Fatal(err)
	}
	defer out2.Release()
	if !array.RecordEqual(out1, out2) {
		t.Fatal("same records, same key: outputs differ")
	}
	// A second chain with the same key (a restarted consumer) agrees too.
	c3 := newChain(t, baseConfig(), mem)
	out3, _, _ := c3.Apply(in)
	defer out3.Release()
	if !array.RecordEqual(out1, out3) {
		t.Fatal("restarted chain differs")
	}
	// A different key gives different outputs.
	cfg := baseConfig()
	cfg.Key = testKey(2)
	c4 := newChain(t, cfg, mem)
	out4, _, _ := c4.Apply(in)
	defer out4.Release()
	same := 0
	t1, t4 := out1.Column(1).(*array.Int64), out4.Column(1).(*array.Int64)
	for i := range 500 {
		if t1.Value(i) == t4.Value(i) {
			same++
		}
	}
	// P(equal) per row is sum q(d)^2 ~ 0.13 for eps=0.5; 500 rows: expect ~65.
	if same > 150 {
		t.Fatalf("different keys agree on %d/500 times", same)
	}

	// Public covariate on request.
	cfg = baseConfig()
	cfg.Public = []string{"event", "age"}
	c5 := newChain(t, cfg, mem)
	out5, _, _ := c5.Apply(in)
	defer out5.Release()
	if out5.NumCols() != 5 || out5.Schema().Field(4).Name != "age" {
		t.Fatalf("public age missing: %v", out5.Schema())
	}
}

func TestInputValueEntersPRF(t *testing.T) {
	// Two versions of one patient's record (time 100 then 130) must not carry
	// the same noise: otherwise the outputs reveal the exact difference.
	mem := arrowipctest.CheckedMem(t)
	c := newChain(t, baseConfig(), mem)
	const n = 400
	var ids []string
	var t1, t2 []float64
	for i := range n {
		ids = append(ids, fmt.Sprintf("p%d", i))
		t1 = append(t1, 100)
		t2 = append(t2, 130)
	}
	ev := make([]bool, n)
	co := make([]int32, n)
	age := make([]float64, n)
	a := canonical(t, mem, ids, t1, ev, co, age)
	defer a.Release()
	b := canonical(t, mem, ids, t2, ev, co, age)
	defer b.Release()
	oa, sa, _ := c.Apply(a)
	defer oa.Release()
	oa2, sa2, _ := c.Apply(a) // a redelivery is not an update
	oa2.Release()
	ob, sb, _ := c.Apply(b)
	defer ob.Release()
	if sa.Updates != 0 || sa2.Updates != 0 || sb.Updates < n-2 {
		t.Fatalf("updates counted %d, %d, %d; want 0, 0, about %d", sa.Updates, sa2.Updates, sb.Updates, n)
	}
	diff30 := 0
	ta, tb := oa.Column(1).(*array.Int64), ob.Column(1).(*array.Int64)
	for i := range n {
		if tb.Value(i)-ta.Value(i) == 30 {
			diff30++
		}
	}
	// Independent noise: P(D1 == D2) ~ 0.13; shared noise would give n.
	if diff30 > n/3 {
		t.Fatalf("%d/%d updated records reveal the exact difference", diff30, n)
	}
}

func TestTimeNoiseDistributionThroughChain(t *testing.T) {
	mem := arrowipctest.CheckedMem(t)
	cfg := baseConfig()
	cfg.Time = TimeConfig{Mechanism: "te", Epsilon: 0.3, Window: 6}
	c := newChain(t, cfg, mem)
	te, _ := dp.NewTE(0.3, 6)
	const n = 60000
	ids, times, events, cohorts, age := rows(n)
	in := canonical(t, mem, ids, times, events, cohorts, age)
	defer in.Release()
	out, _, err := c.Apply(in)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	counts := make([]float64, 13)
	ot := out.Column(1).(*array.Int64)
	for i := range n {
		counts[ot.Value(i)-int64(times[i])+6]++
	}
	stat := 0.0
	for i, p := range te.PMF() {
		e := p * n
		stat += (counts[i] - e) * (counts[i] - e) / e
	}
	// false-alarm rate 1e-4 with a fixed key
	if crit := (distuv.ChiSquared{K: 12}).Quantile(1 - 1e-4); stat > crit {
		t.Fatalf("chi-square %.1f > %.1f", stat, crit)
	}
	// RRR report frequencies: true label kept with p + (1-p)/n.
	r, _ := dp.NewRRR(1, 3)
	oc := out.Column(2).(*array.Dictionary).Indices().(*array.Int32)
	kept := 0
	for i := range n {
		if oc.Value(i) == cohorts[i] {
			kept++
		}
	}
	pk := r.ReportProb(0, 0)
	sd := math.Sqrt(n * pk * (1 - pk))
	if math.Abs(float64(kept)-n*pk) > 4.5*sd { // two-sided false alarm ~7e-6
		t.Fatalf("kept %d, expected %.0f ± %.0f", kept, n*pk, sd)
	}
}

func TestClampingIntoPublicDomain(t *testing.T) {
	mem := arrowipctest.CheckedMem(t)
	c := newChain(t, baseConfig(), mem)
	in := canonical(t, mem, []string{"a", "b", "c"}, []float64{0, 5000, 999.6}, []bool{true, false, true}, []int32{0, 1, 2}, []float64{1, 2, 3})
	defer in.Release()
	out, st, err := c.Apply(in)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if st.ClampedTime != 1 {
		t.Fatalf("clamped %d, want 1", st.ClampedTime)
	}
	ot := out.Column(1).(*array.Int64)
	for i := range 3 {
		if v := ot.Value(i); v < 0 || v > 1000 {
			t.Fatalf("row %d: %d outside [0,1000]", i, v)
		}
	}
}

func TestApplyRejectsWrongLayout(t *testing.T) {
	mem := arrowipctest.CheckedMem(t)
	c := newChain(t, baseConfig(), mem)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	b.Field(0).(*array.StringBuilder).Append("x")
	rec := b.NewRecord()
	b.Release()
	defer rec.Release()
	if _, _, err := c.Apply(rec); err == nil || !strings.Contains(err.Error(), "sanitize batch") {
		t.Fatalf("want sanitize batch error, got %v", err)
	}
}

// BenchmarkChain measures the sanitizer chain (pseudonym, TE, RRR, public
// event) on in-memory Arrow batches of 4096 records, keyed randomness
// included. Target: >= 2e6 records/s per core.
func BenchmarkChain(b *testing.B) {
	mem := memory.NewGoAllocator()
	in := canonicalRows(b, mem, 4096)
	c, err := New(baseConfig(), mem)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Release()
	b.ResetTimer()
	for b.Loop() {
		out, _, err := c.Apply(in)
		if err != nil {
			b.Fatal(err)
		}
		out.Release()
	}
	b.ReportMetric(float64(b.N)*4096/b.Elapsed().Seconds(), "records/s")
}

// The sanitized time column states the horizon and its rule (issue 19):
// the event flag is published unchanged, so a reader must treat a time at
// time_max as censored there.
func TestSanitizedTimeStatesHorizonRule(t *testing.T) {
	mem := arrowipctest.CheckedMem(t)
	in := canonicalRows(t, mem, 50)
	cfg := baseConfig()
	c := newChain(t, cfg, mem)
	out, _, err := c.Apply(in)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	f, ok := out.Schema().FieldsByName("time")
	if !ok {
		t.Fatal("no time column")
	}
	md := f[0].Metadata
	if v, _ := md.GetValue(MetaTimeMax); v != strconv.FormatInt(int64(cfg.TimeMax), 10) {
		t.Fatalf("%s = %q, want the public time_max %v", MetaTimeMax, v, cfg.TimeMax)
	}
	if v, _ := md.GetValue(MetaHorizonRule); !strings.Contains(v, "censored") || !strings.Contains(v, "event flag is published unchanged") {
		t.Fatalf("%s = %q: want the administrative-censoring rule", MetaHorizonRule, v)
	}
}
