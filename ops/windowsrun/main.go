// Command windowsrun streams records at a fixed rate through `dpsurv run`'s
// service (in process, embedded broker, Kafka ledger) with a km, a weibull
// and (by default) a discrete aggregate on the same windows, and reports
// per aggregate the windows released and withheld, the fit times, the
// pending windows over the run and each window's release delay (the time
// from its close, end + lateness, to its first fit message read back from
// the fit topic), and for the intake the latency from producing an input
// message to reading its sanitized message back (overall and while a
// window fit runs), the aggregators' backlog in records and the time a
// Tick held the aggregators' intake (issue 21: weibull released 0 of 9
// windows beside km on 5 s windows at 1,000 records/s; issue 24: no window
// fit blocks the intake or delays a release past the window's lateness).
// docs/performance.md records the runs:
//
//	go run ./ops/windowsrun -rate 1000 -duration 10m -window 5s -weibull-interval-sims -1 -discrete=false
//	go run ./ops/windowsrun -rate 1000 -duration 5m -window 30s -lateness 30s
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/ops"
	"github.com/dpsurv/dpsurv/ops/harness"
	"github.com/dpsurv/dpsurv/sanitizers"
	"github.com/dpsurv/dpsurv/sinks"
	"github.com/dpsurv/dpsurv/synth"
)

func main() {
	rate := flag.Float64("rate", 1000, "input records per second")
	duration := flag.Duration("duration", 10*time.Minute, "how long to produce")
	window := flag.Duration("window", 5*time.Second, "window size of both aggregates")
	batch := flag.Int("batch", 100, "records per input message")
	drain := flag.Duration("drain", 10*time.Minute, "how long to wait after production for the last windows")
	logFile := flag.String("log", "windowsrun.log", "service log (warn and above)")
	sims := flag.Int("weibull-interval-sims", 0, "the weibull aggregate's params.interval_sims (0: default, noise-aware intervals on; -1: off)")
	lateness := flag.Duration("lateness", 0, "window lateness of every aggregate (a window closes at its end + lateness)")
	discrete := flag.Bool("discrete", true, "add a discrete aggregate (default params: newton, q = 200; covariate age)")
	flag.Parse()
	o := options{rate: *rate, duration: *duration, window: *window, lateness: *lateness, batch: *batch, drain: *drain,
		logFile: *logFile, sims: *sims, discrete: *discrete}
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "windowsrun:", err)
		os.Exit(1)
	}
}

const (
	kmEps  = 1.0
	wbEps  = 0.5
	dtEps  = 1.0
	budget = 1e6
)

type options struct {
	rate                       float64
	duration, window, lateness time.Duration
	batch                      int
	drain                      time.Duration
	logFile                    string
	sims                       int
	discrete                   bool
}

func loadavg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return math.NaN()
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return f
}

// gather sums a metric's samples by the aggregate label ("" without it),
// and for histograms returns count and sum.
func gather(reg *prometheus.Registry, name string) map[string][3]float64 {
	out := map[string][3]float64{}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			agg := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "aggregate" {
					agg = l.GetValue()
				}
				if l.GetName() == "reason" {
					agg += "/" + l.GetValue()
				}
			}
			v := out[agg]
			switch {
			case m.GetHistogram() != nil:
				v[1] += float64(m.GetHistogram().GetSampleCount())
				v[2] += m.GetHistogram().GetSampleSum()
			case m.GetCounter() != nil:
				v[0] += m.GetCounter().GetValue()
			default:
				v[0] += m.GetGauge().GetValue()
			}
			out[agg] = v
		}
	}
	return out
}

// fitQuantiles returns the upper bounds of the histogram buckets holding
// the 50th and 95th percentile and the largest observation of each
// aggregate's fit times.
func fitQuantiles(reg *prometheus.Registry) map[string][3]float64 {
	out := map[string][3]float64{}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "dpsurv_aggregator_fit_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			agg := m.GetLabel()[0].GetValue()
			h := m.GetHistogram()
			n := float64(h.GetSampleCount())
			if n == 0 {
				continue
			}
			var q [3]float64
			q[2] = math.Inf(1)
			set := [2]bool{}
			for _, b := range h.GetBucket() {
				c := float64(b.GetCumulativeCount())
				for i, p := range []float64{0.5, 0.95} {
					if !set[i] && c >= p*n {
						q[i], set[i] = b.GetUpperBound(), true
					}
				}
				if c >= n && q[2] == math.Inf(1) {
					q[2] = b.GetUpperBound()
				}
			}
			out[agg] = q
		}
	}
	return out
}

// run runs the service and the probes and writes the report (one JSON
// object) to stdout.
func run(o options, stdout io.Writer) error {
	rate, duration, window, batch, drain, logFile, sims := o.rate, o.duration, o.window, o.batch, o.drain, o.logFile, o.sims
	ctx := context.Background()
	cl, err := broker.Start(broker.Options{Partitions: 4})
	if err != nil {
		return err
	}
	defer cl.Close()
	conn := kafkaconn.Config{Brokers: cl.Addrs(), ClientID: "windowsrun"}
	cfg := app.DefaultConfig()
	cfg.Kafka = conn
	cfg.Input = app.InputConfig{Topic: "wr.in", GroupID: "windowsrun", Format: "arrow", MaxBatch: 64, Partitions: 4}
	cohorts := []string{"A", "B"}
	cfg.Schema = app.SchemaConfig{TimeUnit: "days", TimeMax: 4000, Cohorts: cohorts, Public: []string{"event"}}
	if o.discrete {
		cfg.Schema.Covariates = []string{"age"} // synth: uniform on [40, 80]
	}
	cfg.Sanitizers.KeyFile = "(harness)"
	cfg.Sanitizers.Time = sanitizers.TimeConfig{Mechanism: "te", Epsilon: 0.5, Window: 10}
	cfg.Sanitizers.Cohort = sanitizers.CohortConfig{Mechanism: "rrr", Epsilon: 1}
	cfg.Output = app.OutputConfig{SanitizedTopic: "wr.sanitized", DeadLetterTopic: "wr.deadletter", FitTopic: "wr.fits"}
	cfg.HTTP.Listen = ""
	// Both aggregates with their default parameters (weibull: noise-aware
	// intervals on unless -weibull-interval-sims says otherwise).
	win := app.WindowConfig{Size: window, Lateness: o.lateness}
	cfg.Aggregators = []app.AggregatorConfig{
		{Name: "km", Kind: "km", Epsilon: kmEps, Window: win},
		{Name: "weibull", Kind: "weibull", Epsilon: wbEps, Window: win,
			Params: aggregators.WeibullParams{IntervalSims: sims}},
	}
	aggs := []string{"km", "weibull"}
	if o.discrete {
		// The discrete kind's default params (method newton, q = 200
		// intervals, 3 knots, max_records 200,000) on one covariate with
		// its public centre and scale.
		cfg.Aggregators = append(cfg.Aggregators, app.AggregatorConfig{Name: "discrete", Kind: "discrete", Epsilon: dtEps, Window: win,
			Params: aggregators.DiscreteParams{Covariates: []string{"age"}, Centre: []float64{60}, Scale: []float64{20}}})
		aggs = append(aggs, "discrete")
	}
	// The sanitized topic already makes presence and counts public: the
	// discrete aggregate's exact n adds nothing (docs/aggregators.md).
	cfg.Ledger = app.LedgerConfig{Topic: "wr.ledger", Budget: map[string]float64{"stream": budget}, AllowPublicCounts: o.discrete}
	if err := cfg.Validate(); err != nil {
		return err
	}
	lf, err := os.Create(logFile)
	if err != nil {
		return err
	}
	defer lf.Close()
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(lf), zapcore.WarnLevel))
	reg := prometheus.NewRegistry()
	svc := &app.Service{Config: cfg, Key: []byte(strings.Repeat("k", 32)), Log: log, Registry: reg}

	n := int(rate * duration.Seconds())
	d, err := synth.Generate(synth.Options{N: n, Cohorts: cohorts, TimeMax: 4000, Seed: 21, IDPrefix: "wr"})
	if err != nil {
		return err
	}
	msgs, err := harness.Messages(cfg.Spec(), d, batch, memory.NewGoAllocator())
	if err != nil {
		return err
	}
	if err := kafkaconn.EnsureTopics(ctx, conn, map[string]int{cfg.Input.Topic: 4}, nil); err != nil {
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- svc.Run(sctx) }()
	if !harness.WaitFor(ctx, time.Minute, svc.Ready) {
		return fmt.Errorf("service not ready")
	}

	// Probes: the sanitized topic (intake latency per input message) and
	// the fit topic (each window's release delay), read as they are
	// written; running fits polled every 100 ms.
	pr := newProbes(len(msgs))
	pctx, pstop := context.WithCancel(ctx)
	defer pstop()
	var probes sync.WaitGroup
	probes.Add(3)
	go func() { defer probes.Done(); pr.pollFits(pctx, reg) }()
	go func() {
		defer probes.Done()
		if err := pr.readSanitized(pctx, conn, cfg.Output.SanitizedTopic); err != nil {
			fmt.Fprintln(os.Stderr, "windowsrun: sanitized probe:", err)
		}
	}()
	go func() {
		defer probes.Done()
		if err := pr.readFits(pctx, conn, cfg.Output.FitTopic); err != nil {
			fmt.Fprintln(os.Stderr, "windowsrun: fit probe:", err)
		}
	}()

	// Sampling: pending windows, running fits and the aggregators' backlog
	// every second, the load average every 10 s.
	var (
		mu         sync.Mutex
		maxPending = map[string]float64{}
		loads      []float64
		backlog    []float64
	)
	sampleStop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-sampleStop:
				return
			case <-t.C:
			}
			mu.Lock()
			for agg, v := range gather(reg, "dpsurv_aggregator_pending_windows") {
				maxPending[agg] = math.Max(maxPending[agg], v[0])
			}
			if p := pr.produced.Load(); p > 0 {
				backlog = append(backlog, float64(p)-gather(reg, "dpsurv_aggregator_records_total")["km"][0])
			}
			if i%10 == 0 {
				loads = append(loads, loadavg())
			}
			if i%30 == 0 {
				fmt.Fprintf(os.Stderr, "%4ds: releases %v pending %v fits running %v load %.1f\n", i,
					gather(reg, "dpsurv_releases_total"), gather(reg, "dpsurv_aggregator_pending_windows"),
					gather(reg, "dpsurv_aggregator_fits_running")[""][0], loadavg())
			}
			mu.Unlock()
		}
	}()

	w, err := sinks.NewKafka(sinks.KafkaConfig{Conn: conn, Topic: cfg.Input.Topic}, nil)
	if err != nil {
		return err
	}
	every := time.Duration(float64(batch) / rate * float64(time.Second))
	start := time.Now()
	next := start
	for i, m := range msgs {
		m.Headers = append(m.Headers, traceParent(i)) // the probe's handle on its sanitized message
		pr.sent[i].Store(time.Now().UnixNano())
		if err := w.Write(ctx, []message.Message{m}); err != nil {
			return fmt.Errorf("produce: %w", err)
		}
		pr.produced.Add(int64(min(batch, n-i*batch)))
		next = start.Add(time.Duration(i+1) * every)
		time.Sleep(time.Until(next))
	}
	w.Close()
	produced := time.Since(start)
	end := time.Now()
	fmt.Fprintf(os.Stderr, "produced %d records in %v\n", n, produced.Round(time.Millisecond))

	// Wait until both aggregates have released (or withheld) the window
	// holding the end of production and nothing is pending.
	lastStart := end.Truncate(window).Unix()
	waited := harness.WaitFor(ctx, drain, func() bool {
		lag, err := ops.GroupLag(ctx, conn, cfg.AggregatorGroupID(), cfg.Input.Topic)
		if err != nil || lag != 0 {
			return false
		}
		es, err := ops.ReadLedger(ctx, conn, cfg.Ledger.Topic)
		if err != nil {
			return false
		}
		have := map[string]bool{}
		for _, e := range es {
			have[e.Key] = true
		}
		p := gather(reg, "dpsurv_aggregator_pending_windows")
		for _, agg := range aggs {
			if !have[aggregators.WindowKey(agg, lastStart)] || p[agg][0] != 0 {
				return false
			}
		}
		return true
	})
	drained := time.Since(end)
	close(sampleStop)
	<-sampled
	// The probes read what the fit and sanitized topics hold by now.
	harness.WaitFor(ctx, 30*time.Second, func() bool { return pr.sanitizedMessages() >= int64(len(msgs)) })
	time.Sleep(2 * time.Second) // the fit probe's last fetch (a measurement, not a test)
	pstop()
	probes.Wait()
	stop()
	if err := <-done; err != nil {
		return fmt.Errorf("service: %w", err)
	}
	fits, err := ops.ReadTopic(ctx, conn, cfg.Output.FitTopic)
	if err != nil {
		return err
	}
	entries, err := ops.ReadLedger(ctx, conn, cfg.Ledger.Topic)
	if err != nil {
		return err
	}
	// km and weibull (add/remove-one) are charged their replace-one cost
	// beside the sanitized topic (ReplaceOneAccounting).
	rep, cerr := ops.CheckReleases(fits, entries, ops.ReleaseOptions{
		Epsilon: map[string]float64{"km": kmEps, "weibull": wbEps, "discrete": dtEps},
		Charged: map[string]float64{"km": 2 * kmEps, "weibull": 2 * wbEps},
		Pooled:  map[string]bool{"discrete": true}, Cohorts: cohorts, StreamBudget: budget, Complete: true})

	// Windows with data: from the window of the first record read to the
	// window of the last (processing time).
	firstStart := start.Truncate(window).Unix()
	sz := int64(window / time.Second)
	withData := int((lastStart-firstStart)/sz) + 1
	rel := gather(reg, "dpsurv_releases_total")
	wh := gather(reg, "dpsurv_releases_withheld_total")
	fs := gather(reg, "dpsurv_aggregator_fit_seconds")
	type aggOut struct {
		Released, Withheld   float64
		WithheldByReason     map[string]float64
		WindowsOnFitTopic    int
		MissingInDataRange   []int64
		FitCount             float64
		FitMeanSeconds       float64
		FitP50AtMostSeconds  float64
		FitP95AtMostSeconds  float64
		FitMaxAtMostSeconds  float64
		MaxPendingWindows    float64
		DistinctLedgerWindow int
		// ReleaseDelay: each window's first fit message read back from
		// the fit topic minus its close (window end + lateness).
		ReleaseDelay delays
	}
	tick := gather(reg, "dpsurv_aggregator_tick_seconds")[""]
	out := map[string]any{
		"rate": rate, "duration": duration.String(), "window": window.String(), "lateness": o.lateness.String(), "records": n,
		"windows_with_data": withData, "production_seconds": produced.Seconds(), "drain_seconds": drained.Seconds(),
		"drained": waited, "weibull_interval_sims": sims, "check_releases_error": fmt.Sprint(cerr), "loadavg_samples": loads,
		"intake_latency_ms":                     pr.latency(pr.all),
		"intake_latency_during_fits_ms":         pr.latency(pr.fitting),
		"intake_latency_no_fit_ms":              pr.latency(pr.idle),
		"aggregator_backlog_records":            quantiles(backlog),
		"aggregator_tick_count":                 tick[1],
		"aggregator_tick_mean_ms":               1000 * tick[2] / math.Max(1, tick[1]),
		"aggregator_tick_max_at_most_ms":        1000 * maxBucket(reg, "dpsurv_aggregator_tick_seconds"),
		"aggregator_tick_p50_p95_p99_at_most_s": bucketQuantiles(reg, "dpsurv_aggregator_tick_seconds"),
	}
	mu.Lock()
	defer mu.Unlock()
	for _, agg := range aggs {
		a := aggOut{Released: rel[agg][0], WithheldByReason: map[string]float64{}, MaxPendingWindows: maxPending[agg]}
		for k, v := range wh {
			if strings.HasPrefix(k, agg+"/") && v[0] > 0 {
				a.WithheldByReason[strings.TrimPrefix(k, agg+"/")] = v[0]
				a.Withheld += v[0]
			}
		}
		have := map[int64]bool{}
		for _, s := range rep.Windows[agg] {
			have[s] = true
		}
		a.DistinctLedgerWindow = len(rep.Windows[agg])
		onTopic := map[int64]bool{}
		for _, f := range fits {
			if strings.HasPrefix(string(f.Key), agg+"/") {
				parts := strings.Split(string(f.Key), "/")
				s, _ := strconv.ParseInt(parts[1], 10, 64)
				onTopic[s] = true
			}
		}
		a.WindowsOnFitTopic = len(onTopic)
		for s := firstStart; s <= lastStart; s += sz {
			if !onTopic[s] {
				a.MissingInDataRange = append(a.MissingInDataRange, s)
			}
		}
		q := fitQuantiles(reg)[agg]
		a.FitP50AtMostSeconds, a.FitP95AtMostSeconds, a.FitMaxAtMostSeconds = q[0], q[1], q[2]
		a.ReleaseDelay = pr.delaysOf(agg, o.lateness.Seconds())
		a.FitCount = fs[agg][1]
		if a.FitCount > 0 {
			a.FitMeanSeconds = fs[agg][2] / fs[agg][1]
		}
		out[agg] = a
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	fmt.Fprintln(stdout, string(b))
	return nil
}
