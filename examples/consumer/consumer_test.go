package main

import (
	"bytes"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/ops/harness"
	"github.com/dpsurv/dpsurv/synth"
)

// The example consumer reads what the real service writes: the service runs
// on the embedded broker with TE-Sanitizer, RRR and one km aggregate; 300
// synthetic records go in; the consumer decodes every sanitized row with its
// guarantees, the three km releases (one per cohort) from the fit topic and
// their curve tables from the fit Arrow topic, and its command-line form
// prints them.
func TestConsumerReadsServiceOutput(t *testing.T) {
	cohorts := []string{"A", "B", "C"}
	cfg := apptest.Config("example", cohorts, 400) // TE ε 0.5, window 10
	cfg.Input.GroupID, cfg.Input.Partitions = "example-svc", 1
	cfg.Sanitizers.Cohort.Epsilon = 2
	cfg.Output = app.OutputConfig{SanitizedTopic: "tte.sanitized", DeadLetterTopic: "tte.dlq", FitTopic: "tte.fits"}
	cfg.Aggregators = []app.AggregatorConfig{
		{Name: "km", Kind: "km", Epsilon: 1, Window: app.WindowConfig{Size: time.Hour}, Params: aggregators.KMParams{BinWidth: 10}},
	}
	cfg.Ledger = app.LedgerConfig{File: filepath.Join(t.TempDir(), "ledger.jsonl"), Budget: map[string]float64{"stream": 10}, CheckpointInterval: time.Hour}
	w0 := time.Unix(1_700_002_800, 0).UTC() // an hour boundary
	// The fixture's context ends at cleanup: the consumers below run after
	// this function returns.
	f := apptest.New(t, cfg, apptest.Timeout(50*time.Second), apptest.Key(bytes.Repeat([]byte{9}, 32)), apptest.FakeClock(w0.Add(time.Minute)))
	ctx, cl := f.Ctx, f.Cluster
	const n = 300
	d, err := synth.Generate(synth.Options{N: n, Cohorts: cohorts, TimeMax: 400, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := harness.Messages(f.Config.Spec(), d, 50, f.Mem)
	if err != nil {
		t.Fatal(err)
	}
	f.Produce("in", msgs)
	f.Run()

	// Each poll reads what the topic holds now, in one group: the next poll
	// reads only what came since.
	toEnd := Until{Idle: 30 * time.Second, End: true}

	// Sanitized topic: every record, with the fields' guarantees.
	var rows [][]string
	var first Table
	if !harness.WaitForEvery(ctx, 30*time.Second, 50*time.Millisecond, func() bool {
		_, _, err := ReadTopic(ctx, cl.Addrs(), "tte.sanitized", "analyst", toEnd, func(m kafka.Message) error {
			b, err := DecodeSanitized(m.Value)
			if err != nil {
				return err
			}
			if first.Schema == "" {
				first = b
			}
			rows = append(rows, b.Rows...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return len(rows) >= n
	}) {
		t.Fatalf("sanitized rows: %d of %d", len(rows), n)
	}
	if len(rows) != n {
		t.Errorf("sanitized rows %d, want %d", len(rows), n)
	}
	if strings.Join(first.Columns, ",") != "id,time,cohort,event" || first.TimeUnit != "days" {
		t.Errorf("columns %v, unit %q", first.Columns, first.TimeUnit)
	}
	byName := map[string]Field{}
	for _, f := range first.Fields {
		byName[f.Name] = f
	}
	if m := byName["time"].Meta; m["dpsurv.mechanism"] != "te-sanitizer" || m["dpsurv.epsilon"] != "0.5" || m["dpsurv.window"] != "10" || m["dpsurv.guarantee"] != "time-indistinguishability" {
		t.Errorf("time metadata %v", m)
	}
	if m := byName["cohort"].Meta; m["dpsurv.mechanism"] != "rrr" || m["dpsurv.guarantee"] != "local-dp" {
		t.Errorf("cohort metadata %v", m)
	}
	for _, r := range rows {
		if len(r[0]) != 32 || strings.HasPrefix(r[0], "p") {
			t.Fatalf("id %q is not a pseudonym", r[0])
		}
		if x, err := strconv.Atoi(r[1]); err != nil || x < 0 || x > 400 {
			t.Fatalf("time %q outside the public domain", r[1])
		}
	}

	// Close the window: one km release per cohort, JSON and Arrow.
	f.Clock.Set(w0.Add(61 * time.Minute))
	fits := map[string]Fit{}
	var statements []Statement
	if !harness.WaitForEvery(ctx, 30*time.Second, 50*time.Millisecond, func() bool {
		_, _, err := ReadTopic(ctx, cl.Addrs(), "tte.fits", "analyst", toEnd, func(m kafka.Message) error {
			if SchemaOf(m.Value) == StatementSchema {
				st, err := DecodeStatement(m.Value)
				if err != nil {
					return err
				}
				statements = append(statements, st)
				return nil
			}
			f, err := DecodeFit(m.Value)
			if err != nil {
				return err
			}
			if f.Key != string(m.Key) {
				t.Errorf("document key %q, message key %q", f.Key, m.Key)
			}
			fits[f.Key] = f
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return len(fits) >= len(cohorts)
	}) {
		t.Fatalf("fit messages: %d", len(fits))
	}
	// The privacy statement: what `dpsurv statement` computes for cfg.
	wantMsg, err := app.StatementMessage(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want, err := DecodeStatement(wantMsg.Value)
	if err != nil {
		t.Fatal(err)
	}
	if len(statements) == 0 {
		t.Fatal("no privacy statement on the fit topic")
	}
	st := statements[0]
	if st.Key != "patient_statement" || st.Line() != want.Line() || st.Markdown != want.Markdown || st.Statement.TotalTwoVersions == nil {
		t.Errorf("statement %q\n%s\nwant %q", st.Line(), st.Markdown, want.Line())
	}
	for _, c := range cohorts {
		k := "km/" + strconv.FormatInt(w0.Unix(), 10) + "/" + c
		f, ok := fits[k]
		if !ok {
			t.Fatalf("no release %s (have %v)", k, fits)
		}
		if f.Kind != "km" || f.Epsilon != 1 || f.Guarantee == "" || f.Cohort != c || len(f.Time) == 0 || len(f.Time) != len(f.Surv) {
			t.Errorf("release %s: %+v", k, f)
		}
		for i, s := range f.Surv {
			if v := float64(s); math.IsNaN(v) || v < 0 || v > 1 || (i > 0 && v > float64(f.Surv[i-1])) {
				t.Fatalf("release %s: surv[%d] = %v", k, i, v)
			}
		}
	}
	curves := 0
	if !harness.WaitForEvery(ctx, 30*time.Second, 50*time.Millisecond, func() bool {
		_, _, err := ReadTopic(ctx, cl.Addrs(), "tte.fits.arrow", "analyst", toEnd, func(m kafka.Message) error {
			c, err := DecodeCurve(m.Value)
			if err != nil {
				return err
			}
			f := fits[c.Meta["dpsurv.key"]]
			if len(c.Rows) != len(f.Time) || c.Columns[0] != "time" || c.Columns[4] != "surv" {
				t.Errorf("curve %s: %d rows (JSON %d), columns %v", c.Meta["dpsurv.key"], len(c.Rows), len(f.Time), c.Columns)
			}
			curves++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return curves >= len(cohorts)
	}) {
		t.Fatalf("curve tables: %d", curves)
	}

	// The command-line form and the JavaScript consumer of docs/analysts.md
	// read the same topics, each in a fresh group; they run side by side,
	// each stopping once it has read every topic to where it ended when it
	// started (everything was published by now).
	t.Run("go", func(t *testing.T) {
		t.Parallel()
		checkGoConsumer(t, cl.Addrs(), n, want.Line())
	})
	t.Run("javascript", func(t *testing.T) {
		t.Parallel()
		checkJSConsumer(t, cl.Addrs(), n, cohorts, want.Line())
	})
}

// checkGoConsumer runs the command-line form in a fresh group: CSV rows
// and a line per release.
func checkGoConsumer(t *testing.T, brokers []string, n int, statement string) {
	var out, errb bytes.Buffer
	if err := run([]string{"-brokers", strings.Join(brokers, ","), "-sanitized-topic", "tte.sanitized", "-fit-topic", "tte.fits",
		"-group", "cli", "-to-end", "-idle", "1m"}, &out, &errb); err != nil {
		t.Fatalf("run: %v\n%s", err, errb.String())
	}
	if got := strings.Count(errb.String(), "(read to its end)"); got != 3 {
		t.Errorf("%d of 3 topics read to their end offsets, want all (the others waited out -idle):\n%s", got, errb.String())
	}
	s := out.String()
	if got := strings.Count(s, "\n") - strings.Count(s, "# ") - 1 - strings.Count(s, "fit km/") - strings.Count(s, "curve km/") - strings.Count(s, "statement patient_statement:"); got != n {
		t.Errorf("CSV data lines %d, want %d", got, n)
	}
	if got := strings.Count(s, statement+"\n"); got != 1 {
		t.Errorf("%d statement lines %q, want 1", got, statement)
	}
	for _, want := range []string{"# tte.sanitized.v1, time unit days", `mechanism "te-sanitizer"`, "id,time,cohort,event", "fit km/", "curve km/"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestDecodeRejectsWrongInput(t *testing.T) {
	cases := []struct {
		name string
		run  func() error
	}{
		{"garbage arrow", func() error { _, err := DecodeSanitized([]byte("not arrow")); return err }},
		{"truncated arrow", func() error { _, err := DecodeCurve([]byte{0xff, 0xff, 0xff, 0xff, 8, 0, 0, 0, 1}); return err }},
		{"garbage json", func() error { _, err := DecodeFit([]byte("{")); return err }},
		{"wrong schema", func() error { _, err := DecodeFit([]byte(`{"schema":"other"}`)); return err }},
		{"statement as a fit", func() error { _, err := DecodeFit([]byte(`{"schema":"dpsurv.patient_statement.v1"}`)); return err }},
		{"fit as a statement", func() error { _, err := DecodeStatement([]byte(`{"schema":"dpsurv.fit.v1"}`)); return err }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.run(); err == nil {
				t.Error("want an error")
			}
		})
	}
	f, err := DecodeFit([]byte(`{"schema":"dpsurv.fit.v1","median":null,"n":12.5,"surv":[1,null]}`))
	if err != nil || !math.IsNaN(float64(f.Median)) || f.N != 12.5 || !math.IsNaN(float64(f.Surv[1])) || f.Median.String() != "NA" {
		t.Errorf("null handling: %+v, %v", f, err)
	}
}
