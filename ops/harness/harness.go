package harness

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/codecs/arrowipc"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/sinks"
	"github.com/dpsurv/dpsurv/sources"
	"github.com/dpsurv/dpsurv/synth"
)

// Messages encodes a cohort as tte.v1 Arrow IPC messages of batch records.
func Messages(spec schemas.Spec, d synth.Data, batch int, mem memory.Allocator) ([]message.Message, error) {
	var out []message.Message
	for lo := 0; lo < len(d.ID); lo += batch {
		hi := min(lo+batch, len(d.ID))
		labels := make([]string, hi-lo)
		for i := lo; i < hi; i++ {
			labels[i-lo] = spec.Cohorts[d.Cohort[i]]
		}
		var covs [][]float64
		if len(spec.Covariates) > 0 {
			covs = [][]float64{d.Age[lo:hi]}
		}
		rec, err := schemas.BuildInput(spec, d.ID[lo:hi], d.Time[lo:hi], d.Event[lo:hi], labels, covs, mem)
		if err != nil {
			return nil, fmt.Errorf("build batch: %w", err)
		}
		b, err := arrowipc.Encode(rec, mem)
		rec.Release()
		if err != nil {
			return nil, fmt.Errorf("encode batch: %w", err)
		}
		out = append(out, message.Message{Key: []byte("batch-" + strconv.Itoa(lo/batch)), Value: b})
	}
	return out, nil
}

// Produce writes messages to topic, durably.
func Produce(ctx context.Context, conn kafkaconn.Config, topic string, msgs []message.Message, log *zap.Logger) error {
	w, err := sinks.NewKafka(sinks.KafkaConfig{Conn: conn, Topic: topic}, log)
	if err != nil {
		return err
	}
	defer w.Close()
	const chunk = 64
	for lo := 0; lo < len(msgs); lo += chunk {
		if err := w.Write(ctx, msgs[lo:min(lo+chunk, len(msgs))]); err != nil {
			return fmt.Errorf("produce to %s: %w", topic, err)
		}
	}
	return nil
}

// Collector reads a topic with its own consumer group.
type Collector struct {
	src *sources.Kafka
}

// NewCollector starts reading topic from the beginning.
func NewCollector(conn kafkaconn.Config, topic, group string, log *zap.Logger) (*Collector, error) {
	src, err := sources.NewKafka(sources.KafkaConfig{Conn: conn, Topic: topic, GroupID: group}, log)
	if err != nil {
		return nil, err
	}
	return &Collector{src: src}, nil
}

// Next returns the next batch of messages, or an error when ctx ends.
func (c *Collector) Next(ctx context.Context) ([]message.Message, error) {
	b, err := c.src.ReadBatch(ctx)
	if err != nil {
		return nil, err
	}
	if err := b.Ack(ctx); err != nil {
		return nil, err
	}
	return b.Messages, nil
}

// Close stops the collector.
func (c *Collector) Close() error { return c.src.Close() }

// Sanitized is the decoded content of sanitized messages.
type Sanitized struct {
	ID     []string
	Time   []float64
	Event  []bool
	Cohort []int32
}

// DecodeSanitized appends the rows of one tte.sanitized.v1 message.
func (s *Sanitized) DecodeSanitized(value []byte, mem memory.Allocator) error {
	recs, err := arrowipc.DecodeRecords(value, mem)
	if err != nil {
		return fmt.Errorf("decode sanitized message: %w", err)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for _, r := range recs {
		sc := r.Schema()
		get := func(name string) arrow.Array {
			if idx := sc.FieldIndices(name); len(idx) > 0 {
				return r.Column(idx[0])
			}
			return nil
		}
		n := int(r.NumRows())
		if a, ok := get("id").(*array.String); ok {
			for i := range n {
				s.ID = append(s.ID, a.Value(i))
			}
		}
		if a, ok := get("time").(*array.Int64); ok {
			for i := range n {
				s.Time = append(s.Time, float64(a.Value(i)))
			}
		}
		if a, ok := get("event").(*array.Boolean); ok {
			for i := range n {
				s.Event = append(s.Event, a.Value(i))
			}
		}
		if a, ok := get("cohort").(*array.Dictionary); ok {
			idx := a.Indices().(*array.Int32)
			for i := range n {
				s.Cohort = append(s.Cohort, idx.Value(i))
			}
		}
	}
	return nil
}

// WaitFor polls cond every 10 ms until it holds or the timeout passes.
func WaitFor(ctx context.Context, timeout time.Duration, cond func() bool) bool {
	return WaitForEvery(ctx, timeout, 10*time.Millisecond, cond)
}

// WaitForEvery polls cond every interval until it holds or the timeout
// passes: a longer interval for a cond that costs a broker round trip or
// a scrape of another process.
func WaitForEvery(ctx context.Context, timeout, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(interval):
		}
	}
	return cond()
}
