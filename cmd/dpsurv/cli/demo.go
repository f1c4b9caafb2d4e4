package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/codecs/arrowipc"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/ops/harness"
	"github.com/dpsurv/dpsurv/sanitizers"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/synth"
)

// demoConfig is the default pipeline the demo runs.
func demoConfig(addrs []string, cohorts []string, timeMax float64) app.Config {
	cfg := harness.StreamConfig(addrs, "dpsurv-demo", "ehr.tte", cohorts, timeMax, 2)
	cfg.Input.Topic = "ehr.tte"
	cfg.Input.Partitions = 4
	cfg.Output.FitTopic = "ehr.tte.fits"
	cfg.HTTP.Listen = "127.0.0.1:0"
	return cfg
}

// demoAggregators adds the central releases the demo shows: a Kaplan–Meier
// and a Weibull aggregate over short processing-time windows, charged to a
// ledger on the embedded broker.
func demoAggregators(cfg *app.Config, window time.Duration) {
	cfg.Aggregators = []app.AggregatorConfig{
		{Name: "km-demo", Kind: "km", Epsilon: 1, Window: app.WindowConfig{Size: window},
			Params: aggregators.KMParams{Method: "hierarchical", BinWidth: 30}},
		{Name: "weibull-demo", Kind: "weibull", Epsilon: 1, Window: app.WindowConfig{Size: window},
			// no noise-aware intervals: each costs about 600 runs of the
			// mechanism per cohort (weibull.WeibullIntervals), longer than
			// the demo's windows
			Params: aggregators.WeibullParams{Method: "lsp", IntervalSims: -1}},
	}
	cfg.Ledger.Topic = "dpsurv.demo.ledger"
	cfg.Ledger.Budget = map[string]float64{"stream": 20}
	cfg.Ledger.CheckpointInterval = time.Second
}

// demoWindow is the demo's default aggregation window. Every record is
// read within about a second, and the demo ends when the window it is read
// in has been released. A window with data costs 2 of the demo's stream
// budget of 20 (km and weibull at epsilon 1): 4 s windows leave a starved
// demo 40 s to read its records before later windows are withheld (2 s
// windows left 20 s, and a demo at nice 19 on a loaded machine ran out);
// a demo slower still ends at the last window its budget admitted
// (demoProgress).
const demoWindow = 4 * time.Second

func runDemo(ctx context.Context, env Env, args []string) error {
	fs := newFlags("demo", env)
	n := fs.Int("n", 20000, "synthetic records (ignored with --input)")
	input := fs.String("input", "", "stream this file (CSV or Arrow, columns id,time,event,cohort) instead of synthetic data")
	cohortsFlag := fs.String("cohorts", "", "public cohort labels (default A,B,C; with --input, required)")
	timeMax := fs.Float64("time-max", 3650, "public time bound")
	// The cap is a safety net, not the demo's length (about 3 s): a demo
	// starved of CPU (a loaded machine, or `nice`) needs well over 20 s
	// for its half CPU-second, and failed under such load with a 20 s cap.
	duration := fs.Duration("duration", 2*time.Minute, "stop after this long at the latest")
	outDir := fs.String("out-dir", "dpsurv-demo", "where plots go")
	window := fs.Duration("window", demoWindow, "aggregation window (whole seconds; 0 turns the central releases off)")
	logLevel := fs.String("log-level", "warn", "service log level (logs go to stderr)")
	if err := parse(fs, args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()
	out := env.Stdout
	log, err := newLogger(env.Stderr, *logLevel)
	if err != nil {
		return err
	}
	defer log.Sync()
	mem := memory.DefaultAllocator

	cohorts := splitList(*cohortsFlag)
	if len(cohorts) == 0 {
		if *input != "" {
			fmt.Fprintln(env.Stderr, "dpsurv demo: --cohorts is required with --input")
			return errUsage
		}
		cohorts = []string{"A", "B", "C"}
	}
	spec := schemas.Spec{Cohorts: cohorts, TimeUnit: "days", Columns: schemas.DefaultColumns()}
	var data synth.Data
	if *input != "" {
		data, err = readCohortFile(*input, spec, mem)
	} else {
		data, err = synth.Generate(synth.Options{N: *n, Cohorts: cohorts, TimeMax: *timeMax, Seed: 2026})
	}
	if err != nil {
		return err
	}

	b, err := broker.Start(broker.Options{Listen: "127.0.0.1:0", Partitions: 4, Logger: log})
	if err != nil {
		return fmt.Errorf("start embedded broker: %w", err)
	}
	defer b.Close()
	fmt.Fprintf(out, "dpsurv demo — embedded Kafka-protocol broker at %s\n", strings.Join(b.Addrs(), ","))
	fmt.Fprintln(out, "PRF key: EPHEMERAL, generated for this run only (a real deployment reads sanitizers.key_file; without it the service refuses to start)")

	cfg := demoConfig(b.Addrs(), cohorts, *timeMax)
	if *window > 0 {
		demoAggregators(&cfg, window.Truncate(time.Second))
	}
	key := app.EphemeralKey()
	g, err := app.Guarantees(cfg, key)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "\nper-record guarantees on the sanitized topic:")
	printGuarantees(out, g)

	if err := kafkaconn.EnsureTopics(ctx, cfg.Kafka, map[string]int{cfg.Input.Topic: 4, cfg.Output.SanitizedTopic: 4, cfg.Output.DeadLetterTopic: 1}, nil); err != nil {
		return err
	}
	msgs, err := harness.Messages(spec, data, 500, mem)
	if err != nil {
		return err
	}
	bad, badRows, err := demoBadMessages(spec, mem)
	if err != nil {
		return err
	}
	msgs = append(msgs, bad...)
	// The aggregators look at the clock every 50 ms (the service's default
	// is 250): the demo ends when its window is released, and a shorter
	// tick releases it sooner after the window closes.
	svc := &app.Service{Config: cfg, Key: key, Log: log, Mem: mem, AggregatorTick: 50 * time.Millisecond}
	svcErr := make(chan error, 1)
	svcCtx, stopSvc := context.WithCancel(ctx)
	defer stopSvc()
	go func() { svcErr <- svc.Run(svcCtx) }()

	if err := harness.Produce(ctx, cfg.Kafka, cfg.Input.Topic, msgs, log); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nproduced %d records in %d Arrow IPC messages to %s, plus a message of %d rows (%d bad: a negative time, an unknown cohort, a repeated id; 1 good) and 1 undecodable message\n",
		len(data.ID), len(msgs)-len(bad), cfg.Input.Topic, badRows+1, badRows)

	// Collect the sanitized and dead-letter topics until everything is
	// accounted for.
	var fits *fitCollector
	if len(cfg.Aggregators) > 0 {
		fits, err = newFitCollector(cfg, log)
		if err != nil {
			return err
		}
		defer fits.close()
	}
	san, dead, reasons, err := collectOutputs(ctx, cfg, len(data.ID), badRows+1, log, mem)
	var releases []map[string]any
	if err == nil && fits != nil {
		// Every record has been read by now; wait for the window the clock
		// is in to close and be released.
		until := time.Now().Truncate(*window).Add(*window)
		names := make([]string, len(cfg.Aggregators))
		for i, a := range cfg.Aggregators {
			names[i] = a.Name
		}
		releases, err = fits.until(ctx, until.Unix(), names, len(cohorts))
	}
	stopSvc()
	if serr := <-svcErr; serr != nil && err == nil {
		err = serr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "sanitized: %d records on %s; dead letters: %d on %s %v\n",
		len(san.Time), cfg.Output.SanitizedTopic, dead, cfg.Output.DeadLetterTopic, reasons)

	// Kaplan–Meier on the sanitized stream: post-processing of the local
	// mechanisms, so it spends no further budget. The labels went through
	// RRR, which pulls every curve toward the pooled one: the release
	// debiases them (demoSanitizedKM).
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", *outDir, err)
	}
	curves, err := demoSanitizedKM(out, san, cohorts, *timeMax, g)
	if err != nil {
		return err
	}
	plotPath := filepath.Join(*outDir, "km_sanitized.png")
	if err := writeFigure(plotPath, demoSanitizedSpec(curves)); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nplot: %s\n", plotPath)
	if fits != nil {
		printStatement(out, fits.statement)
		if err := printReleases(out, releases, *outDir, cohorts); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, "metrics and health were served at http://"+svc.HealthAddr()+"/metrics, /healthz, /readyz while the demo ran")
	return nil
}

// fitCollector reads the fit topic: the releases, and the service's
// per-patient privacy statement (key schemas.PatientStatementKey).
type fitCollector struct {
	c         *harness.Collector
	statement *app.StatementDocument // the latest
}

func newFitCollector(cfg app.Config, log *zap.Logger) (*fitCollector, error) {
	c, err := harness.NewCollector(cfg.Kafka, cfg.Output.FitTopic, "dpsurv-demo-fit-reader", log)
	if err != nil {
		return nil, err
	}
	return &fitCollector{c: c}, nil
}

func (f *fitCollector) close() { f.c.Close() }

// until reads releases until every aggregate named has released each of
// its perWindow messages (one per cohort) of a window ending at or after
// endUnix, or can release no further window because the budget is spent,
// and returns the releases in order. A fast aggregate's later windows do
// not stand in for a slow one's (the Weibull fits run beside the intake
// and may lag the Kaplan–Meier releases). The budget: a demo starved of
// CPU spreads its records over more windows, each charged, and the
// stream budget may run out before the window it waits for; every
// release states the budget left after its charge (budget_remaining,
// which only falls: the demo's budgets are totals), so once the smallest
// seen is below an aggregate's charge (epsilon_charged), that aggregate's
// later windows are withheld and it is done.
func (f *fitCollector) until(ctx context.Context, endUnix int64, aggregates []string, perWindow int) ([]map[string]any, error) {
	var out []map[string]any
	seen := map[string]bool{}
	p := newDemoProgress(endUnix)
	for !p.done(aggregates, perWindow) {
		ms, err := f.c.Next(ctx)
		if err != nil {
			return out, fmt.Errorf("read fit topic: %w", err)
		}
		for _, m := range ms {
			if schemas.IsPatientStatementKey(m.Key) {
				var st app.StatementDocument
				if err := json.Unmarshal(m.Value, &st); err != nil {
					return out, fmt.Errorf("decode privacy statement: %w", err)
				}
				f.statement = &st
				continue
			}
			var r map[string]any
			if err := json.Unmarshal(m.Value, &r); err != nil {
				return out, fmt.Errorf("decode release: %w", err)
			}
			key, _ := r["key"].(string)
			if seen[key] {
				continue // a redelivered duplicate
			}
			seen[key] = true
			out = append(out, r)
			p.observe(r)
		}
	}
	return out, nil
}

// demoProgress is what until has read: the messages of each aggregate's
// windows ending at or after endUnix, each aggregate's charge, and the
// smallest budget left that any release stated.
type demoProgress struct {
	endUnix    int64
	lastWindow map[string]map[string]int // aggregate -> window -> messages of a final window
	charge     map[string]float64        // aggregate -> epsilon_charged
	remaining  float64                   // the smallest budget_remaining seen, over scopes
}

func newDemoProgress(endUnix int64) *demoProgress {
	return &demoProgress{endUnix: endUnix, lastWindow: map[string]map[string]int{}, charge: map[string]float64{}, remaining: math.Inf(1)}
}

// observe takes one release (decoded JSON).
func (p *demoProgress) observe(r map[string]any) {
	a := fmt.Sprint(r["aggregate"])
	if c, ok := r["epsilon_charged"].(float64); ok {
		p.charge[a] = c
	}
	if b, ok := r["budget_remaining"].(map[string]any); ok {
		for _, v := range b {
			if x, ok := v.(float64); ok {
				p.remaining = math.Min(p.remaining, x)
			}
		}
	}
	if we, ok := r["window_end_unix"].(float64); ok && int64(we) >= p.endUnix {
		if p.lastWindow[a] == nil {
			p.lastWindow[a] = map[string]int{}
		}
		p.lastWindow[a][fmt.Sprint(int64(we))]++
	}
}

// done: every aggregate has a final window with perWindow messages, or
// has been seen to charge more than the budget left (its later windows
// are withheld).
func (p *demoProgress) done(aggregates []string, perWindow int) bool {
	for _, a := range aggregates {
		full := false
		for _, n := range p.lastWindow[a] {
			full = full || n >= perWindow
		}
		if c, ok := p.charge[a]; ok && p.remaining < c {
			full = true // spent: its later windows are withheld
		}
		if !full {
			return false
		}
	}
	return len(aggregates) > 0
}

// printStatement prints the per-patient privacy statement the service
// published on the fit topic.
func printStatement(w io.Writer, doc *app.StatementDocument) {
	if doc == nil {
		fmt.Fprintln(w, "\nno per-patient privacy statement on the fit topic")
		return
	}
	st := doc.Statement
	f := func(v *float64) string {
		if v == nil {
			return "unbounded"
		}
		return fmt.Sprintf("%.2f", *v)
	}
	fmt.Fprintf(w, "\nper-patient privacy statement on the fit topic (key %s, `dpsurv statement` for this config):\n", doc.Key)
	fmt.Fprintf(w, "  one patient, everything this service publishes: at most %s with one version of the record, %s with two\n",
		f(st.TotalOneVersion), f(st.TotalTwoVersions))
	fmt.Fprintf(w, "  sanitized topic %.2f per version; central releases %s (%s); relation %s\n",
		st.SanitizedPerVersion, f(st.CentralCap), st.CentralCapScope, st.Relation)
}

func printReleases(w io.Writer, releases []map[string]any, outDir string, cohorts []string) error {
	fmt.Fprintln(w, "\ncentral releases on the fit topic (one per aggregate, window and cohort; charged to the privacy ledger first):")
	f := func(v any) string {
		switch x := v.(type) {
		case nil:
			return "NA"
		case float64:
			return fmt.Sprintf("%.4g", x)
		}
		return fmt.Sprint(v)
	}
	best := map[string][]map[string]any{} // km releases of the window with most records
	var bestWindow string
	bestN := -1.0
	perWindowN := map[string]float64{}
	for _, r := range releases {
		ws := time.Unix(int64(r["window_start_unix"].(float64)), 0).UTC().Format("15:04:05")
		we := time.Unix(int64(r["window_end_unix"].(float64)), 0).UTC().Format("15:04:05")
		budget := ""
		if b, ok := r["budget_remaining"].(map[string]any); ok {
			budget = fmt.Sprintf(" stream budget left %s", f(b["stream"]))
		}
		head := fmt.Sprintf("  %-12s [%s, %s) cohort %-4v", r["aggregate"], ws, we, r["cohort"])
		meta := fmt.Sprintf("epsilon=%s %s, %s;%s", f(r["epsilon"]), r["guarantee"], r["neighbouring"], budget)
		switch r["kind"] {
		case "km":
			fmt.Fprintf(w, "%s n≈%s median %s  (%s)\n", head, f(r["n"]), f(r["median"]), meta)
			k := fmt.Sprint(r["window_start_unix"])
			if n, ok := r["n"].(float64); ok {
				perWindowN[k] += n
				if perWindowN[k] > bestN {
					bestN, bestWindow = perWindowN[k], k
				}
			}
			best[k] = append(best[k], r)
		case "weibull":
			fmt.Fprintf(w, "%s shape %s scale %s (units of time_max)  (%s)\n", head, f(r["shape"]), f(r["scale"]), meta)
		default:
			fmt.Fprintf(w, "%s %v release  (%s)\n", head, r["kind"], meta)
		}
	}
	if bestWindow == "" {
		return nil
	}
	path := filepath.Join(outDir, "km_release.png")
	if err := writeFigure(path, demoReleaseSpec(best[bestWindow], cohorts)); err != nil {
		return err
	}
	fmt.Fprintf(w, "plot of the largest window's KM release: %s\n", path)
	return nil
}

func fmtMedian(m, lo, hi float64) string {
	f := func(v float64) string {
		if math.IsNaN(v) {
			return "NA"
		}
		return fmt.Sprintf("%g", v)
	}
	return fmt.Sprintf("%s days (95%% CI %s–%s)", f(m), f(lo), f(hi))
}

func printGuarantees(w io.Writer, gs []sanitizers.Guarantee) {
	for _, g := range gs {
		line := fmt.Sprintf("  %-7s %-16s kind=%s", g.Field, g.Mechanism, g.Kind)
		if g.Epsilon != nil {
			line += fmt.Sprintf(" epsilon=%g", *g.Epsilon)
		}
		if g.Window != nil {
			line += fmt.Sprintf(" window=%d", *g.Window)
		}
		if g.WorstCaseLoss != nil {
			line += fmt.Sprintf(" worst-case-loss=%.4f", *g.WorstCaseLoss)
		}
		fmt.Fprintln(w, line)
		if g.Warning != "" {
			fmt.Fprintln(w, "          warning: "+g.Warning)
		}
	}
	fmt.Fprintln(w, "  (time-indistinguishability is weaker than local DP: inputs more than 2W apart stay distinguishable)")
}

// demoBadMessages builds the bad input the demo shows being dead-lettered:
// one undecodable message and a batch with a negative time, an unknown
// cohort and a duplicate id (its good row is sanitized).
func demoBadMessages(spec schemas.Spec, mem memory.Allocator) ([]message.Message, int, error) {
	rec, err := schemas.BuildInput(spec,
		[]string{"bad-1", "bad-2", "bad-3", "bad-3"},
		[]float64{-5, 10, 20, 30},
		[]bool{true, true, false, true},
		[]string{spec.Cohorts[0], "not-a-cohort", spec.Cohorts[0], spec.Cohorts[0]}, nil, mem)
	if err != nil {
		return nil, 0, err
	}
	defer rec.Release()
	v, err := arrowipc.Encode(rec, mem)
	if err != nil {
		return nil, 0, err
	}
	return []message.Message{{Key: []byte("bad"), Value: v}, {Key: []byte("garbage"), Value: []byte("this is not arrow")}}, 3, nil
}

func collectOutputs(ctx context.Context, cfg app.Config, wantGood, wantDead int, log *zap.Logger, mem memory.Allocator) (harness.Sanitized, int, map[string]int, error) {
	var san harness.Sanitized
	reasons := map[string]int{}
	dead := 0
	sc, err := harness.NewCollector(cfg.Kafka, cfg.Output.SanitizedTopic, "dpsurv-demo-reader", log)
	if err != nil {
		return san, 0, nil, err
	}
	defer sc.Close()
	dc, err := harness.NewCollector(cfg.Kafka, cfg.Output.DeadLetterTopic, "dpsurv-demo-dlq-reader", log)
	if err != nil {
		return san, 0, nil, err
	}
	defer dc.Close()
	// The demo has exactly one good row among the bad ones (bad-3's first).
	wantGood++
	type dl struct {
		Reason string `json:"reason"`
	}
	errc := make(chan error, 2)
	go func() {
		for dead < wantDead {
			ms, err := dc.Next(ctx)
			if err != nil {
				errc <- fmt.Errorf("read dead letters: %w", err)
				return
			}
			for _, m := range ms {
				var d dl
				_ = json.Unmarshal(m.Value, &d)
				reasons[d.Reason]++
				dead++
			}
		}
		errc <- nil
	}()
	for len(san.Time) < wantGood {
		ms, err := sc.Next(ctx)
		if err != nil {
			return san, dead, reasons, fmt.Errorf("read sanitized topic (%d of %d records so far): %w", len(san.Time), wantGood, err)
		}
		for _, m := range ms {
			if err := san.DecodeSanitized(m.Value, mem); err != nil {
				return san, dead, reasons, err
			}
		}
	}
	if err := <-errc; err != nil {
		return san, dead, reasons, err
	}
	return san, dead, reasons, nil
}

// readCohortFile reads id,time,event,cohort rows through the validator.
func readCohortFile(path string, spec schemas.Spec, mem memory.Allocator) (synth.Data, error) {
	v, err := schemas.NewValidator(spec, mem)
	if err != nil {
		return synth.Data{}, err
	}
	var d synth.Data
	err = schemas.ReadFile(path, v, 8192, func(good arrow.Record, dead []schemas.DeadLetter) error {
		if len(dead) > 0 {
			return fmt.Errorf("%d rows of %s are invalid (%v); the demo wants a clean file", len(dead), path, schemas.CountByReason(dead))
		}
		ids := good.Column(schemas.ColID).(*array.String)
		ts := good.Column(schemas.ColTime).(*array.Float64)
		ev := good.Column(schemas.ColEvent).(*array.Boolean)
		co := good.Column(schemas.ColCohort).(*array.Dictionary).Indices().(*array.Int32)
		for i := range int(good.NumRows()) {
			d.ID = append(d.ID, strings.Clone(ids.Value(i)))
			d.Time = append(d.Time, ts.Value(i))
			d.Event = append(d.Event, ev.Value(i))
			d.Cohort = append(d.Cohort, co.Value(i))
		}
		return nil
	})
	if err != nil {
		return d, fmt.Errorf("read %s: %w", path, err)
	}
	d.Age = make([]float64, len(d.ID))
	return d, nil
}
