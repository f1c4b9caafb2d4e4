package sinks_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/sinks"
	"github.com/dpsurv/dpsurv/sources"
)

// BenchmarkPassthrough measures consume -> re-produce -> ack of ~64 KB
// messages between two topics on the embedded broker (one op = one
// message). The input is produced before the timer starts. Run e.g. with
// -benchtime=4000x to bound the broker's memory (it keeps both topics).
func BenchmarkPassthrough(b *testing.B) {
	const size = 64 << 10
	c, conn := brokertest.Start(b, broker.Options{Topics: map[string]int{"in": 4, "out": 4}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	b.Cleanup(cancel)

	in, err := sinks.NewKafka(sinks.KafkaConfig{Conn: conn, Topic: "in"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	value := make([]byte, size)
	for i := range value {
		value[i] = byte(i*131 + i>>8) // fixed, poorly compressible pattern
	}
	n := b.N
	for i := 0; i < n; {
		chunk := make([]message.Message, 0, 256)
		for ; i < n && len(chunk) < cap(chunk); i++ {
			chunk = append(chunk, message.Message{Key: []byte(fmt.Sprint(i)), Value: value})
		}
		if err := in.Write(ctx, chunk); err != nil {
			b.Fatal(err)
		}
	}
	_ = in.Close()

	src, err := sources.NewKafka(sources.KafkaConfig{Conn: conn, Topic: "in", GroupID: "bench", MaxBatch: 256}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = src.Close() })
	out, err := sinks.NewKafka(sinks.KafkaConfig{Conn: conn, Topic: "out"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = out.Close() })

	b.SetBytes(size)
	b.ResetTimer()
	start := time.Now()
	done := 0
	for done < n {
		batch, err := src.ReadBatch(ctx)
		if err != nil {
			b.Fatal(err)
		}
		msgs := make([]message.Message, len(batch.Messages))
		for i, m := range batch.Messages {
			msgs[i] = message.Message{Key: m.Key, Value: m.Value, Headers: m.Headers}
		}
		if err := out.Write(ctx, msgs); err != nil {
			b.Fatal(err)
		}
		if err := batch.Ack(ctx); err != nil {
			b.Fatal(err)
		}
		done += len(batch.Messages)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(done)/elapsed.Seconds(), "msgs/s")
	if got := highWatermarks(c, "out"); got < int64(n) {
		b.Fatalf("out holds %d messages, want %d", got, n)
	}
}
