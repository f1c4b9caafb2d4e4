package kafkaconn_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/sources"
)

// TestWaitForGroup watches a consumer group form: one reader joins and
// owns all partitions; waiting for two members times out with a message
// that says what the group looks like.
func TestWaitForGroup(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	_, conn := brokertest.Start(t, broker.Options{Topics: map[string]int{"g.in": 3}})
	src, err := sources.NewKafka(sources.KafkaConfig{Conn: conn, Topic: "g.in", GroupID: "g"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	// The reader joins in the background once it is asked for data.
	rctx, stopRead := context.WithCancel(ctx)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		_, _ = src.ReadBatch(rctx)
	}()
	t.Cleanup(func() { stopRead(); <-readDone })

	tests := []struct {
		name    string
		members int
		timeout time.Duration
		wantErr string
	}{
		{"one member owns all partitions", 1, 20 * time.Second, ""},
		// Long enough for a describe to answer on a loaded machine (the
		// message reports the last state seen).
		{"two members never come", 2, 3 * time.Second, "want 2 members each with partitions, have state \"Stable\" with 1 members"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, err := kafkaconn.WaitForGroup(ctx, conn, "g", "g.in", tc.members, tc.timeout)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Members) != 1 || len(st.Members[0].Partitions) != 3 || st.Assigned() != 1 {
				t.Fatalf("group %+v, want one member with partitions 0-2", st)
			}
		})
	}
	if st, err := kafkaconn.DescribeGroup(ctx, conn, "no-such-group", "g.in"); err != nil || len(st.Members) != 0 {
		t.Fatalf("unknown group: %+v, %v; want no members and no error", st, err)
	}
}
