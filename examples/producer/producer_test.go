package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/segmentio/kafka-go"

	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/schemas"
)

// The example producer's messages, in both Arrow IPC formats, pass the
// service's validator unchanged: every lung row is good, and the run
// command sends them through a real (embedded) broker.
func TestProducerMessagesPassValidation(t *testing.T) {
	data := filepath.Join("..", "..", "data", "lung_tte.csv")
	for _, format := range []string{"stream", "file"} {
		t.Run(format, func(t *testing.T) {
			msgs, err := Encode(data, []string{"age"}, 64, format, "days")
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) != 4 { // 210 rows in messages of 64
				t.Fatalf("%d messages, want 4", len(msgs))
			}
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			v, err := schemas.NewValidator(schemas.Spec{Cohorts: []string{"1", "2"}, TimeUnit: "days", Covariates: []string{"age"}}, mem)
			if err != nil {
				t.Fatal(err)
			}
			good := 0
			for i, m := range msgs {
				if format == "file" && !bytes.HasPrefix(m, []byte("ARROW1")) {
					t.Fatalf("message %d is not in the file format", i)
				}
				rec, dead := v.DecodeIPC(m)
				good += int(rec.NumRows())
				rec.Release()
				if len(dead) > 0 {
					t.Fatalf("message %d: dead letters %+v", i, dead)
				}
			}
			if good != 210 {
				t.Errorf("good rows %d, want 210", good)
			}
		})
	}
}

func TestProducerSendsToBroker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, _ := brokertest.Start(t, broker.Options{Partitions: 1})
	if err := kafkaconn.EnsureTopics(ctx, kafkaconn.Config{Brokers: cl.Addrs()}, map[string]int{"ehr.tte": 1}, nil); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	args := []string{"-brokers", strings.Join(cl.Addrs(), ","), "-topic", "ehr.tte", "-input", filepath.Join("..", "..", "data", "kidney_tte.csv"), "-rows", "50"}
	if err := run(ctx, args, &out, &errb); err != nil {
		t.Fatalf("run: %v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "sent 2 messages") {
		t.Fatalf("output %q", out.String())
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: cl.Addrs(), Topic: "ehr.tte", Partition: 0, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	for i := 0; i < 2; i++ {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Key) != string(rune('0'+i)) {
			t.Errorf("key %q, want a sequence number", m.Key)
		}
	}
}
