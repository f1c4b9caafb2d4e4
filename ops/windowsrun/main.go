// Command windowsrun streams records at a fixed rate through `dpsurv run`'s
// service (in process, embedded broker, Kafka ledger) with a km and a
// weibull aggregate on the same short windows, and reports per aggregate
// the windows released and withheld, the fit times and the pending windows
// over the run (issue 21: weibull released 0 of 9 windows beside km on 5 s
// windows at 1,000 records/s). docs/performance.md records a 10-minute run:
//
//	go run ./ops/windowsrun -rate 1000 -duration 10m -window 5s -weibull-interval-sims -1
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
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
	flag.Parse()
	if err := run(*rate, *duration, *window, *batch, *drain, *logFile, *sims); err != nil {
		fmt.Fprintln(os.Stderr, "windowsrun:", err)
		os.Exit(1)
	}
}

const (
	kmEps  = 1.0
	wbEps  = 0.5
	budget = 1e6
)

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

func run(rate float64, duration, window time.Duration, batch int, drain time.Duration, logFile string, sims int) error {
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
	cfg.Sanitizers.KeyFile = "(harness)"
	cfg.Sanitizers.Time = sanitizers.TimeConfig{Mechanism: "te", Epsilon: 0.5, Window: 10}
	cfg.Sanitizers.Cohort = sanitizers.CohortConfig{Mechanism: "rrr", Epsilon: 1}
	cfg.Output = app.OutputConfig{SanitizedTopic: "wr.sanitized", DeadLetterTopic: "wr.deadletter", FitTopic: "wr.fits"}
	cfg.HTTP.Listen = ""
	// Both aggregates with their default parameters (weibull: noise-aware
	// intervals on unless -weibull-interval-sims says otherwise).
	cfg.Aggregators = []app.AggregatorConfig{
		{Name: "km", Kind: "km", Epsilon: kmEps, Window: app.WindowConfig{Size: window}},
		{Name: "weibull", Kind: "weibull", Epsilon: wbEps, Window: app.WindowConfig{Size: window},
			Params: aggregators.WeibullParams{IntervalSims: sims}},
	}
	cfg.Ledger = app.LedgerConfig{Topic: "wr.ledger", Budget: map[string]float64{"stream": budget}}
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

	// Sampling: pending windows and running fits every second, the load
	// average every 10 s.
	var (
		mu         sync.Mutex
		maxPending = map[string]float64{}
		loads      []float64
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
		if err := w.Write(ctx, []message.Message{m}); err != nil {
			return fmt.Errorf("produce: %w", err)
		}
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
		return have[aggregators.WindowKey("km", lastStart)] && have[aggregators.WindowKey("weibull", lastStart)] &&
			p["km"][0] == 0 && p["weibull"][0] == 0
	})
	drained := time.Since(end)
	close(sampleStop)
	<-sampled
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
	rep, cerr := ops.CheckReleases(fits, entries, ops.ReleaseOptions{
		Epsilon: map[string]float64{"km": kmEps, "weibull": wbEps}, Cohorts: cohorts, StreamBudget: budget, Complete: true})

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
	}
	out := map[string]any{
		"rate": rate, "duration": duration.String(), "window": window.String(), "records": n,
		"windows_with_data": withData, "production_seconds": produced.Seconds(), "drain_seconds": drained.Seconds(),
		"drained": waited, "weibull_interval_sims": sims, "check_releases_error": fmt.Sprint(cerr), "loadavg_samples": loads,
	}
	mu.Lock()
	defer mu.Unlock()
	for _, agg := range []string{"km", "weibull"} {
		o := aggOut{Released: rel[agg][0], WithheldByReason: map[string]float64{}, MaxPendingWindows: maxPending[agg]}
		for k, v := range wh {
			if strings.HasPrefix(k, agg+"/") && v[0] > 0 {
				o.WithheldByReason[strings.TrimPrefix(k, agg+"/")] = v[0]
				o.Withheld += v[0]
			}
		}
		have := map[int64]bool{}
		for _, s := range rep.Windows[agg] {
			have[s] = true
		}
		o.DistinctLedgerWindow = len(rep.Windows[agg])
		onTopic := map[int64]bool{}
		for _, f := range fits {
			if strings.HasPrefix(string(f.Key), agg+"/") {
				parts := strings.Split(string(f.Key), "/")
				s, _ := strconv.ParseInt(parts[1], 10, 64)
				onTopic[s] = true
			}
		}
		o.WindowsOnFitTopic = len(onTopic)
		for s := firstStart; s <= lastStart; s += sz {
			if !onTopic[s] {
				o.MissingInDataRange = append(o.MissingInDataRange, s)
			}
		}
		q := fitQuantiles(reg)[agg]
		o.FitP50AtMostSeconds, o.FitP95AtMostSeconds, o.FitMaxAtMostSeconds = q[0], q[1], q[2]
		o.FitCount = fs[agg][1]
		if o.FitCount > 0 {
			o.FitMeanSeconds = fs[agg][2] / fs[agg][1]
		}
		out[agg] = o
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	fmt.Println(string(b))
	return nil
}
