package ops

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/codecs/arrowipc"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/ops/harness"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/sinks"
	"github.com/dpsurv/dpsurv/synth"
)

// LoadOptions configures a load run (`dpsurv loadtest`).
type LoadOptions struct {
	// Rate is the target input rate in records/s (fixed-rate mode).
	Rate float64
	// Duration is how long the producer runs at Rate (fixed-rate mode).
	Duration time.Duration
	// MaxRate switches to backlog mode: Records records are produced
	// first, then the replicas drain them as fast as they can.
	MaxRate bool
	Records int
	// Replicas is the number of in-process dpsurv services in one
	// consumer group (default 1).
	Replicas int
	// Partitions of the input and sanitized topics (default max(4,
	// Replicas)).
	Partitions int
	// BatchRecords is records per input message (default 100).
	BatchRecords int
	// MaxBatch is each replica's input.max_batch (messages per processing
	// batch; default the service default).
	MaxBatch int
	// SampleInterval is how often memory is sampled (default 1 s).
	SampleInterval time.Duration
	// DrainTimeout bounds the wait for the last records after the producer
	// stops (default 60 s).
	DrainTimeout time.Duration
	// Log receives the services' logs (default none).
	Log *zap.Logger
	// Progress, when set, gets one line per sample.
	Progress io.Writer
}

// Latency summarises end-to-end latency per record (every record of a
// message has that message's latency).
type Latency struct {
	P50Ms  float64 `json:"p50_ms"`
	P95Ms  float64 `json:"p95_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
	MeanMs float64 `json:"mean_ms"`
}

// Memory is the memory part of a load result.
type Memory struct {
	// Start, Middle and End are the first, middle and last samples.
	Start   MemSample   `json:"start"`
	Middle  MemSample   `json:"middle"`
	End     MemSample   `json:"end"`
	Growth  Growth      `json:"growth"`
	Samples []MemSample `json:"samples"`
}

// LoadResult is what `dpsurv loadtest --json` prints.
type LoadResult struct {
	Mode         string  `json:"mode"` // fixed-rate | max-rate
	Replicas     int     `json:"replicas"`
	Partitions   int     `json:"partitions"`
	BatchRecords int     `json:"batch_records"`
	TargetRate   float64 `json:"target_records_per_s,omitempty"`
	GOMAXPROCS   int     `json:"gomaxprocs"`
	// DurationS is the producing time (fixed rate) or the drain time (max
	// rate); Interrupted is set when an interrupt ended the producing early
	// (what was produced is still drained and accounted for).
	Interrupted      bool    `json:"interrupted,omitempty"`
	DurationS        float64 `json:"duration_s"`
	ProducedMessages int64   `json:"produced_messages"`
	ProducedRecords  int64   `json:"produced_records"`
	// ProducedRecordsPerS is the input rate actually achieved.
	ProducedRecordsPerS float64 `json:"produced_records_per_s"`
	// SanitizedRecords counts distinct records that reached the sanitized
	// topic; LostRecords are produced records that never did.
	SanitizedRecords int64 `json:"sanitized_records"`
	LostRecords      int64 `json:"lost_records"`
	// DuplicateMessages are sanitized messages seen again (redeliveries);
	// MismatchedDuplicates those whose bytes differed (must be 0).
	DuplicateMessages    int64 `json:"duplicate_messages"`
	MismatchedDuplicates int64 `json:"mismatched_duplicates"`
	// ThroughputRecordsPerS is sanitized records per second: over the
	// whole run in fixed-rate mode, over the drain in max-rate mode.
	ThroughputRecordsPerS float64 `json:"throughput_records_per_s"`
	// Latency is produce -> receipt by a consumer of the sanitized topic
	// (fixed-rate mode only; a backlog's latency measures the backlog).
	Latency Latency `json:"latency"`
	// ReplicaRecords is the records each replica acknowledged.
	ReplicaRecords []int64 `json:"replica_records"`
	Memory         Memory  `json:"memory"`
}

const loadGroup = "dpsurv-load"

// RunLoad starts an embedded broker, Replicas in-process services in one
// consumer group and a producer, then measures either a fixed-rate run
// (throughput, end-to-end latency, memory over time) or the drain rate of a
// backlog. Everything runs in this process on loopback, so memory figures
// include the broker, whose topics are capped by retention.bytes in
// fixed-rate mode.
func RunLoad(ctx context.Context, o LoadOptions) (LoadResult, error) {
	if err := o.normalize(); err != nil {
		return LoadResult{}, err
	}
	log := o.Log
	res := LoadResult{Mode: "fixed-rate", Replicas: o.Replicas, Partitions: o.Partitions, BatchRecords: o.BatchRecords,
		TargetRate: o.Rate, GOMAXPROCS: runtime.GOMAXPROCS(0)}
	if o.MaxRate {
		res.Mode, res.TargetRate = "max-rate", 0
	}

	b, err := broker.Start(broker.Options{Listen: "127.0.0.1:0", Partitions: o.Partitions, Logger: log})
	if err != nil {
		return res, fmt.Errorf("loadtest: %w", err)
	}
	defer b.Close()

	cohorts := []string{"A", "B", "C"}
	cfg := loadConfig(b.Addrs(), cohorts, o)
	spec := cfg.Spec()
	gen := newLoadGen(spec, o.BatchRecords)
	sample, err := gen.message(0, time.Now())
	if err != nil {
		return res, fmt.Errorf("loadtest: %w", err)
	}
	// Topics: in fixed-rate mode each partition keeps about 20 s of data
	// (retention.bytes, in segments of a quarter of that: the embedded
	// broker holds segments in memory and frees only whole ones), so its
	// memory stays flat over long runs.
	var topicCfg map[string]string
	if !o.MaxRate {
		perPart := max(256<<10, int(o.Rate/float64(o.BatchRecords)*float64(len(sample.Value))/float64(o.Partitions)*20))
		topicCfg = map[string]string{"retention.bytes": strconv.Itoa(perPart), "segment.bytes": strconv.Itoa(perPart / 4)}
	}
	for name, n := range map[string]int{cfg.Input.Topic: o.Partitions, cfg.Output.SanitizedTopic: o.Partitions, cfg.Output.DeadLetterTopic: 1} {
		if err := b.Kfake().CreateTopic(name, int32(n), topicCfg); err != nil {
			return res, fmt.Errorf("loadtest: create topic %s: %w", name, err)
		}
	}

	// Replicas, gated until the group is stable with all of them.
	gate := make(chan struct{})
	var gateOnce sync.Once
	openGate := func() { gateOnce.Do(func() { close(gate) }) }
	defer openGate()
	key := app.EphemeralKey()
	tracked := make([]*TrackedSource, o.Replicas)
	for i := range tracked {
		tracked[i] = &TrackedSource{Gate: gate}
	}
	svcCtx, stopSvcs := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSvcs()
	svcErr := make(chan error, o.Replicas)
	var svcWG sync.WaitGroup
	for i := range o.Replicas {
		rlog := log.With(zap.Int("replica", i))
		svc := &app.Service{Config: cfg, Key: key, Log: rlog, Mem: memory.DefaultAllocator,
			Transport: &loadTransport{Transport: app.KafkaTransport{Config: cfg, Log: rlog}, tracked: tracked[i]}}
		svcWG.Add(1)
		go func() {
			defer svcWG.Done()
			if err := svc.Run(svcCtx); err != nil {
				svcErr <- fmt.Errorf("replica %d: %w", i, err)
			}
		}()
	}
	stopAll := func() error {
		stopSvcs()
		svcWG.Wait()
		select {
		case err := <-svcErr:
			return err
		default:
			return nil
		}
	}
	defer func() { _ = stopAll() }()
	if _, err := kafkaconn.WaitForGroup(ctx, cfg.Kafka, loadGroup, cfg.Input.Topic, o.Replicas, 90*time.Second); err != nil {
		return res, fmt.Errorf("loadtest: replicas did not form a group: %w", err)
	}

	if o.MaxRate {
		err = runMaxRate(ctx, o, cfg, gen, tracked, openGate, svcErr, &res)
	} else {
		openGate()
		err = runFixedRate(ctx, o, cfg, gen, b, svcErr, &res)
	}
	if serr := stopAll(); err == nil && serr != nil {
		err = serr
	}
	for _, ts := range tracked {
		res.ReplicaRecords = append(res.ReplicaRecords, int64(ts.Stats().AckedMessages)*int64(o.BatchRecords))
	}
	if n := len(res.Memory.Samples); n > 0 {
		res.Memory.Start = res.Memory.Samples[0]
		res.Memory.Middle = res.Memory.Samples[n/2]
		res.Memory.End = res.Memory.Samples[n-1]
	}
	res.Memory.Growth = AnalyzeGrowth(res.Memory.Samples)
	return res, err
}

func (o *LoadOptions) normalize() error {
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.BatchRecords == 0 {
		o.BatchRecords = 100
	}
	if o.Partitions == 0 {
		o.Partitions = max(4, o.Replicas)
	}
	if o.SampleInterval == 0 {
		o.SampleInterval = time.Second
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = 60 * time.Second
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	var errs []error
	if o.Replicas < 1 || o.Replicas > 64 {
		errs = append(errs, fmt.Errorf("replicas must be in [1, 64], got %d", o.Replicas))
	}
	if o.Partitions < o.Replicas {
		errs = append(errs, fmt.Errorf("partitions (%d) must be >= replicas (%d): extra replicas would idle", o.Partitions, o.Replicas))
	}
	if o.BatchRecords < 1 || o.BatchRecords > 100000 {
		errs = append(errs, fmt.Errorf("batch records must be in [1, 100000], got %d", o.BatchRecords))
	}
	if o.MaxBatch < 0 || o.MaxBatch > 10000 {
		errs = append(errs, fmt.Errorf("max batch must be in [0, 10000], got %d", o.MaxBatch))
	}
	if o.SampleInterval < 10*time.Millisecond || o.DrainTimeout < 0 {
		errs = append(errs, errors.New("sample interval must be >= 10ms and drain timeout >= 0"))
	}
	if o.MaxRate {
		if o.Records < o.BatchRecords {
			errs = append(errs, fmt.Errorf("max-rate: records (%d) must be >= batch records (%d)", o.Records, o.BatchRecords))
		}
	} else {
		if !(o.Rate > 0) || o.Rate > 10_000_000 {
			errs = append(errs, fmt.Errorf("rate must be in (0, 1e7] records/s, got %v", o.Rate))
		}
		if o.Duration < time.Second {
			errs = append(errs, fmt.Errorf("duration must be >= 1s, got %v", o.Duration))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("loadtest: %w", err)
	}
	return nil
}

func loadConfig(addrs, cohorts []string, o LoadOptions) app.Config {
	cfg := harness.StreamConfig(addrs, "dpsurv-load", "load", cohorts, 3650, 1)
	cfg.Input.GroupID = loadGroup
	cfg.Input.Partitions = o.Partitions
	if o.MaxBatch > 0 {
		cfg.Input.MaxBatch = o.MaxBatch
	}
	cfg.Log.Level = "error"
	return cfg
}

// loadGen builds input messages with unique ids from a pool of synthetic
// rows. A message's key is "seq/records/produce-unix-nanos"; the service
// copies the key to the sanitized message, which is how the consumer
// measures latency and accounts for every record.
type loadGen struct {
	spec   schemas.Spec
	batch  int
	pool   synth.Data
	labels []string
	ids    []string
}

func newLoadGen(spec schemas.Spec, batch int) *loadGen {
	const poolN = 4096
	pool, _ := synth.Generate(synth.Options{N: poolN, Cohorts: spec.Cohorts, TimeMax: 3650, Seed: 7})
	g := &loadGen{spec: spec, batch: batch, pool: pool, labels: make([]string, batch), ids: make([]string, batch)}
	return g
}

func (g *loadGen) message(seq int64, at time.Time) (message.Message, error) {
	lo := int(seq*int64(g.batch)) % len(g.pool.ID)
	times := make([]float64, g.batch)
	events := make([]bool, g.batch)
	prefix := "lt" + strconv.FormatInt(seq, 36) + "-"
	for i := range g.batch {
		j := (lo + i) % len(g.pool.ID)
		g.ids[i] = prefix + strconv.Itoa(i)
		times[i] = g.pool.Time[j]
		events[i] = g.pool.Event[j]
		g.labels[i] = g.spec.Cohorts[g.pool.Cohort[j]]
	}
	rec, err := schemas.BuildInput(g.spec, g.ids, times, events, g.labels, nil, memory.DefaultAllocator)
	if err != nil {
		return message.Message{}, fmt.Errorf("build load message: %w", err)
	}
	v, err := arrowipc.Encode(rec, memory.DefaultAllocator)
	rec.Release()
	if err != nil {
		return message.Message{}, fmt.Errorf("encode load message: %w", err)
	}
	k := strconv.FormatInt(seq, 10) + "/" + strconv.Itoa(g.batch) + "/" + strconv.FormatInt(at.UnixNano(), 10)
	return message.Message{Key: []byte(k), Value: v}, nil
}

func parseLoadKey(k []byte) (seq int64, records int, at time.Time, ok bool) {
	parts := strings.Split(string(k), "/")
	if len(parts) != 3 {
		return 0, 0, time.Time{}, false
	}
	s, err1 := strconv.ParseInt(parts[0], 10, 64)
	r, err2 := strconv.Atoi(parts[1])
	ns, err3 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || s < 0 || r < 0 {
		return 0, 0, time.Time{}, false
	}
	return s, r, time.Unix(0, ns), true
}

// tally accounts for sanitized messages: distinct records, duplicates and
// whether a duplicate's bytes match the first copy. It keeps one bit per
// sequence number and the hashes of the most recent window messages only,
// so its memory does not grow with the run beyond a bit per message.
type tally struct {
	mu         sync.Mutex
	seen       []uint64
	hashes     map[int64]uint64
	window     int64
	maxSeq     int64
	records    atomic.Int64
	dups       int64
	mismatched int64
	hist       *Histogram // whole run
	interval   *Histogram // since the last sample
	last       atomic.Int64
}

// account writes what the tally saw into res: the duplicates, the records
// that reached the sanitized topic and those lost (produced, never seen).
func (t *tally) account(res *LoadResult) {
	t.mu.Lock()
	res.DuplicateMessages, res.MismatchedDuplicates = t.dups, t.mismatched
	t.mu.Unlock()
	res.SanitizedRecords = t.records.Load()
	res.LostRecords = max(0, res.ProducedRecords-res.SanitizedRecords)
}

func newTally(window int64) *tally {
	return &tally{hashes: map[int64]uint64{}, window: max(window, 1024), hist: NewHistogram(), interval: NewHistogram()}
}

func (t *tally) add(m message.Message, now time.Time, measure bool) {
	seq, n, at, ok := parseLoadKey(m.Key)
	if !ok {
		return
	}
	h := fnv.New64a()
	_, _ = h.Write(m.Value)
	sum := h.Sum64()
	t.mu.Lock()
	w, bit := seq/64, uint64(1)<<(seq%64)
	for int64(len(t.seen)) <= w {
		t.seen = append(t.seen, 0)
	}
	if t.seen[w]&bit != 0 {
		t.dups++
		if prev, ok := t.hashes[seq]; ok && prev != sum {
			t.mismatched++
		}
		t.mu.Unlock()
		return
	}
	t.seen[w] |= bit
	t.hashes[seq] = sum
	if seq > t.maxSeq {
		t.maxSeq = seq
		if len(t.hashes) > int(2*t.window) {
			for s := range t.hashes {
				if s < t.maxSeq-t.window {
					delete(t.hashes, s)
				}
			}
		}
	}
	t.mu.Unlock()
	t.records.Add(int64(n))
	t.last.Store(now.UnixNano())
	if measure {
		d := now.Sub(at)
		t.hist.Observe(d, n)
		t.interval.Observe(d, n)
	}
}

// consume reads the sanitized topic until ctx ends, feeding the tally.
func consume(ctx context.Context, conn kafkaconn.Config, topic, group string, t *tally, measure bool, log *zap.Logger) error {
	return FollowTopic(ctx, conn, topic, group, log, func(m message.Message, now time.Time) { t.add(m, now, measure) })
}

func latencyOf(h *Histogram) Latency {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return Latency{P50Ms: ms(h.Quantile(0.5)), P95Ms: ms(h.Quantile(0.95)), P99Ms: ms(h.Quantile(0.99)),
		MaxMs: ms(h.Max()), MeanMs: ms(h.Mean())}
}

func runFixedRate(ctx context.Context, o LoadOptions, cfg app.Config, gen *loadGen, b *broker.Cluster,
	svcErr <-chan error, res *LoadResult) error {
	msgsPerS := o.Rate / float64(o.BatchRecords)
	tal := newTally(int64(msgsPerS*60) + 1)
	// An interrupt (ctx) ends the producing early; what was produced is
	// still drained and reported, so the consumer, writer and drain run on
	// a context that ctx does not cancel.
	run := context.WithoutCancel(ctx)
	cctx, stopConsumer := context.WithCancel(run)
	defer stopConsumer()
	consErr := make(chan error, 1)
	go func() {
		consErr <- consume(cctx, cfg.Kafka, cfg.Output.SanitizedTopic, loadGroup+"-reader", tal, true, o.Log)
	}()
	if _, err := kafkaconn.WaitForGroup(ctx, cfg.Kafka, loadGroup+"-reader", cfg.Output.SanitizedTopic, 1, 60*time.Second); err != nil {
		return fmt.Errorf("loadtest: sanitized-topic consumer: %w", err)
	}

	w, err := sinks.NewKafka(sinks.KafkaConfig{Conn: cfg.Kafka, Topic: cfg.Input.Topic}, o.Log)
	if err != nil {
		return fmt.Errorf("loadtest: producer: %w", err)
	}
	defer w.Close()

	// Sampler.
	sampCtx, stopSampler := context.WithCancel(run)
	var sampWG sync.WaitGroup
	var samples []MemSample
	start := time.Now()
	sampWG.Add(1)
	go func() {
		defer sampWG.Done()
		tk := time.NewTicker(o.SampleInterval)
		defer tk.Stop()
		for {
			select {
			case <-sampCtx.Done():
				return
			case now := <-tk.C:
				b.Kfake().ApplyRetention()
				s := ReadMem()
				s.At = now.Sub(start).Seconds()
				s.Records = tal.records.Load()
				s.P99Ms = float64(tal.interval.Quantile(0.99)) / float64(time.Millisecond)
				tal.interval.Reset()
				samples = append(samples, s)
				if o.Progress != nil {
					fmt.Fprintf(o.Progress, "t=%5.0fs sanitized=%-9d p99=%7.1fms heap_inuse=%6.1fMiB heap_live=%6.1fMiB goroutines=%d\n",
						s.At, s.Records, s.P99Ms, s.HeapInuseMiB, s.HeapLiveMiB, s.Goroutines)
				}
			}
		}
	}()
	stopSampling := func() {
		stopSampler()
		sampWG.Wait()
		res.Memory.Samples = samples
	}

	// Producer: every tick, send the messages due by now.
	var seq int64
	var prodErr error
	tk := time.NewTicker(10 * time.Millisecond)
	deadline := start.Add(o.Duration)
produce:
	for {
		select {
		case <-ctx.Done():
			res.Interrupted = true
			break produce
		case err := <-svcErr:
			prodErr = err
			break produce
		case err := <-consErr:
			prodErr = fmt.Errorf("loadtest: consumer stopped: %v", err)
			break produce
		case now := <-tk.C:
			if now.After(deadline) {
				now = deadline
			}
			due := int64(now.Sub(start).Seconds()*msgsPerS) + 1
			var batch []message.Message
			for ; seq < due; seq++ {
				m, err := gen.message(seq, time.Now())
				if err != nil {
					prodErr = err
					break produce
				}
				batch = append(batch, m)
			}
			if len(batch) > 0 {
				if err := w.Write(run, batch); err != nil {
					prodErr = fmt.Errorf("loadtest: produce: %w", err)
					break produce
				}
			}
			if !now.Before(deadline) {
				break produce
			}
		}
	}
	tk.Stop()
	produced := time.Since(start)
	res.ProducedMessages = seq
	res.ProducedRecords = seq * int64(o.BatchRecords)
	res.DurationS = produced.Seconds()
	res.ProducedRecordsPerS = float64(res.ProducedRecords) / produced.Seconds()
	if prodErr != nil {
		stopSampling()
		return prodErr
	}
	// Drain: wait until every produced record reached the sanitized topic.
	harness.WaitFor(run, o.DrainTimeout, func() bool { return tal.records.Load() >= res.ProducedRecords })
	stopSampling()
	stopConsumer()
	if err := <-consErr; err != nil {
		return fmt.Errorf("loadtest: %w", err)
	}
	tal.account(res)
	if last := tal.last.Load(); last > 0 {
		res.ThroughputRecordsPerS = float64(res.SanitizedRecords) / time.Unix(0, last).Sub(start).Seconds()
	}
	res.Latency = latencyOf(tal.hist)
	return nil
}

func runMaxRate(ctx context.Context, o LoadOptions, cfg app.Config, gen *loadGen,
	tracked []*TrackedSource, openGate func(), svcErr <-chan error, res *LoadResult) error {
	nMsgs := int64(o.Records / o.BatchRecords)
	w, err := sinks.NewKafka(sinks.KafkaConfig{Conn: cfg.Kafka, Topic: cfg.Input.Topic}, o.Log)
	if err != nil {
		return fmt.Errorf("loadtest: producer: %w", err)
	}
	defer w.Close()
	now := time.Now()
	for lo := int64(0); lo < nMsgs; lo += 64 {
		batch := make([]message.Message, 0, 64)
		for s := lo; s < min(lo+64, nMsgs); s++ {
			m, err := gen.message(s, now)
			if err != nil {
				return err
			}
			batch = append(batch, m)
		}
		if err := w.Write(ctx, batch); err != nil {
			return fmt.Errorf("loadtest: produce backlog: %w", err)
		}
	}
	res.ProducedMessages = nMsgs
	res.ProducedRecords = nMsgs * int64(o.BatchRecords)

	var samples []MemSample
	start := time.Now()
	openGate()
	acked := func() int64 {
		var n int64
		for _, ts := range tracked {
			n += int64(ts.Stats().AckedMessages)
		}
		return n
	}
	tk := time.NewTicker(o.SampleInterval)
	defer tk.Stop()
	poll := time.NewTicker(2 * time.Millisecond)
	defer poll.Stop()
	timeout := time.After(10 * time.Minute)
wait:
	for acked() < nMsgs {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-svcErr:
			return err
		case <-timeout:
			return fmt.Errorf("loadtest: backlog not drained after 10 min (%d of %d messages)", acked(), nMsgs)
		case t := <-tk.C:
			s := ReadMem()
			s.At = t.Sub(start).Seconds()
			s.Records = acked() * int64(o.BatchRecords)
			samples = append(samples, s)
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "t=%5.1fs acked=%-9d heap_inuse=%6.1fMiB heap_live=%6.1fMiB\n", s.At, s.Records, s.HeapInuseMiB, s.HeapLiveMiB)
			}
		case <-poll.C:
			continue wait
		}
	}
	el := time.Since(start)
	res.Memory.Samples = samples
	res.DurationS = el.Seconds()
	res.ThroughputRecordsPerS = float64(res.ProducedRecords) / el.Seconds()
	res.ProducedRecordsPerS = 0

	// Verify (outside the timing) that every record is on the sanitized
	// topic, and that redelivered duplicates are identical.
	tal := newTally(nMsgs)
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	consErr := make(chan error, 1)
	go func() {
		consErr <- consume(cctx, cfg.Kafka, cfg.Output.SanitizedTopic, loadGroup+"-verify", tal, false, o.Log)
	}()
	harness.WaitFor(ctx, o.DrainTimeout, func() bool { return tal.records.Load() >= res.ProducedRecords })
	stop()
	if err := <-consErr; err != nil {
		return fmt.Errorf("loadtest: verify: %w", err)
	}
	tal.account(res)
	return nil
}
