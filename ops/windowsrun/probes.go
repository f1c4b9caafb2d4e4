package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/ops"
	"github.com/dpsurv/dpsurv/schemas"
)

// probes measure the run from outside the service: the intake latency of
// each input message (produced -> its sanitized message read back),
// split by whether a window fit was running when it was read, and each
// window's release delay (its first fit message read back - its close).
type probes struct {
	sent     []atomic.Int64 // produce time (Unix ns) of input message i ("batch-i")
	produced atomic.Int64   // records produced so far
	running  atomic.Int64   // dpsurv_aggregator_fits_running, polled

	all, fitting, idle *ops.Histogram
	seen               []atomic.Bool
	sanitized          atomic.Int64

	mu       sync.Mutex
	released map[string]bool      // aggregate/window_start_unix
	delay    map[string][]float64 // by aggregate: seconds after the close
}

func newProbes(messages int) *probes {
	return &probes{sent: make([]atomic.Int64, messages), seen: make([]atomic.Bool, messages),
		all: ops.NewHistogram(), fitting: ops.NewHistogram(), idle: ops.NewHistogram(),
		released: map[string]bool{}, delay: map[string][]float64{}}
}

// pollFits keeps p.running at the service's running fits (every 100 ms).
func (p *probes) pollFits(ctx context.Context, reg *prometheus.Registry) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		p.running.Store(int64(gather(reg, "dpsurv_aggregator_fits_running")[""][0]))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// traceParent is input message i's W3C traceparent header: its trace id
// and parent id are i+1. The service copies a valid trace context to the
// sanitized message (processors/sanitize), which is how the probe finds
// the input message it came from.
func traceParent(i int) message.Header {
	return message.Header{Key: "traceparent", Value: fmt.Appendf(nil, "00-%032x-%016x-01", i+1, i+1)}
}

// messageIndex is the input message index of a sanitized message (-1 if
// it carries no traceparent of traceParent's form).
func messageIndex(m message.Message) int {
	for _, h := range m.Headers {
		if strings.ToLower(h.Key) != "traceparent" {
			continue
		}
		parts := strings.Split(string(h.Value), "-")
		if len(parts) != 4 {
			return -1
		}
		i, err := strconv.ParseInt(parts[2], 16, 64)
		if err != nil {
			return -1
		}
		return int(i) - 1
	}
	return -1
}

// readSanitized measures each input message's intake latency: produced ->
// its sanitized message read back.
func (p *probes) readSanitized(ctx context.Context, conn kafkaconn.Config, topic string) error {
	return ops.FollowTopic(ctx, conn, topic, "windowsrun-intake-probe", nil, func(m message.Message, now time.Time) {
		i := messageIndex(m)
		if i < 0 || i >= len(p.sent) || p.seen[i].Swap(true) {
			return // not ours, or a duplicate
		}
		p.sanitized.Add(1)
		d := now.Sub(time.Unix(0, p.sent[i].Load()))
		p.all.Observe(d, 1)
		if p.running.Load() > 0 {
			p.fitting.Observe(d, 1)
		} else {
			p.idle.Observe(d, 1)
		}
	})
}

func (p *probes) sanitizedMessages() int64 { return p.sanitized.Load() }

// readFits records each window's release delay: the first fit message of
// the window read back, minus the window's close (end + lateness).
func (p *probes) readFits(ctx context.Context, conn kafkaconn.Config, topic string) error {
	return ops.FollowTopic(ctx, conn, topic, "windowsrun-fit-probe", nil, func(m message.Message, now time.Time) {
		if schemas.IsPatientStatementKey(m.Key) {
			return
		}
		var h struct {
			Aggregate       string  `json:"aggregate"`
			WindowStartUnix int64   `json:"window_start_unix"`
			WindowEndUnix   int64   `json:"window_end_unix"`
			LatenessSeconds float64 `json:"lateness_seconds"`
		}
		if json.Unmarshal(m.Value, &h) != nil || h.Aggregate == "" {
			return
		}
		k := aggregators.WindowKey(h.Aggregate, h.WindowStartUnix)
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.released[k] {
			return
		}
		p.released[k] = true
		closed := time.Unix(h.WindowEndUnix, 0).Add(time.Duration(h.LatenessSeconds * float64(time.Second)))
		p.delay[h.Aggregate] = append(p.delay[h.Aggregate], now.Sub(closed).Seconds())
	})
}

// latencyMs summarises an intake histogram in milliseconds.
type latencyMs struct {
	Messages           uint64
	P50, P95, P99, Max float64
}

func (p *probes) latency(h *ops.Histogram) latencyMs {
	ms := func(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Microsecond)) / 1000 }
	return latencyMs{Messages: h.Count(), P50: ms(h.Quantile(0.5)), P95: ms(h.Quantile(0.95)), P99: ms(h.Quantile(0.99)), Max: ms(h.Max())}
}

// delays summarises an aggregate's release delays (seconds after the
// window's close): OverLateness counts the windows published more than
// the window's lateness after their close.
type delays struct {
	Windows            int
	P50, P95, Max      float64
	LatenessSeconds    float64
	OverLateness       int
	OverLatenessWindow []float64 `json:",omitempty"`
}

func (p *probes) delaysOf(agg string, lateness float64) delays {
	p.mu.Lock()
	xs := append([]float64(nil), p.delay[agg]...)
	p.mu.Unlock()
	q := quantiles(xs)
	d := delays{Windows: len(xs), P50: q.P50, P95: q.P95, Max: q.Max, LatenessSeconds: lateness}
	for _, x := range xs {
		if x > lateness {
			d.OverLateness++
			d.OverLatenessWindow = append(d.OverLatenessWindow, math.Round(x*1000)/1000)
		}
	}
	return d
}

type summary struct {
	N                  int
	P50, P95, P99, Max float64
}

// quantiles are the empirical (nearest-rank) quantiles of xs.
func quantiles(xs []float64) summary {
	if len(xs) == 0 {
		return summary{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(s)))) - 1
		return math.Round(s[max(0, i)]*1000) / 1000
	}
	return summary{N: len(s), P50: at(0.5), P95: at(0.95), P99: at(0.99), Max: at(1)}
}

// bucketQuantiles are the upper bounds of the buckets of an unlabelled
// histogram holding its 50th, 95th and 99th percentiles (seconds; -1 if
// beyond the last bucket).
func bucketQuantiles(reg *prometheus.Registry, name string) [3]float64 {
	q := [3]float64{-1, -1, -1}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != name || len(mf.GetMetric()) == 0 {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		n := float64(h.GetSampleCount())
		for i, p := range []float64{0.5, 0.95, 0.99} {
			for _, b := range h.GetBucket() {
				if float64(b.GetCumulativeCount()) >= p*n {
					q[i] = b.GetUpperBound()
					break
				}
			}
		}
	}
	return q
}

// maxBucket is the upper bound of the histogram bucket holding the
// largest observation of an unlabelled histogram (-1 if none).
func maxBucket(reg *prometheus.Registry, name string) float64 {
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			for _, b := range h.GetBucket() {
				if b.GetCumulativeCount() >= h.GetSampleCount() {
					return b.GetUpperBound()
				}
			}
		}
	}
	return -1 // none, or beyond the last bucket
}
