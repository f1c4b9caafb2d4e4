package app

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/schemas"
)

// flakySink refuses its first `fail` writes, then keeps what it is given.
type flakySink struct {
	mu    sync.Mutex
	fail  int
	got   []message.Message
	wrote chan struct{}
}

func (f *flakySink) Connect(context.Context) error { return nil }
func (f *flakySink) Close() error                  { return nil }
func (f *flakySink) Write(_ context.Context, msgs []message.Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail > 0 {
		f.fail--
		return errors.New("fit topic down")
	}
	f.got = append(f.got, msgs...)
	f.wrote <- struct{}{}
	return nil
}

// A fit topic that refuses the statement when the aggregators' holder
// starts does not stop the start: the statement is retried in the
// background until it is published, and it is the configuration's
// statement (app.StatementMessage). In a synctest bubble: the retry
// backoff runs on the bubble's fake clock, not the machine's.
func TestStatementRetriedWhenTheFitTopicRefusesIt(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testStatementRetriedWhenTheFitTopicRefusesIt)
}

func testStatementRetriedWhenTheFitTopicRefusesIt(t *testing.T) {
	cfg := parseKMConfig(t, "{dead_letter_topic: dlq, fit_topic: fits}", "{stream: 1}")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := &Service{Config: cfg, Log: zap.NewNop()}
	sink := &flakySink{fail: 2, wrote: make(chan struct{}, 4)}
	fits := &serialSink{Sink: sink}
	s.publishStatementAtStart(ctx, cfg, fits) // refused: queued for the background
	rctx, rcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); s.republishStatements(rctx, cfg, fits) }()
	select {
	case <-sink.wrote:
	case <-ctx.Done():
		t.Fatal("the statement was never published after the fit topic recovered")
	}
	rcancel()
	<-done
	want, err := StatementMessage(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.got) != 1 || string(sink.got[0].Key) != schemas.PatientStatementKey || !bytes.Equal(sink.got[0].Value, want.Value) || sink.fail != 0 {
		t.Fatalf("published %d messages (refusals left %d), want the statement once", len(sink.got), sink.fail)
	}
}
