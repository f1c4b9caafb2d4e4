package ops

import (
	"context"
	"sync"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/processors/sanitize"
)

// loadTransport is a load-test replica's transport: the service's Kafka
// transport with its input source tracked (and gated) and each sanitized
// message given back the key of the input message it came from, found by
// its dpsurv-source header. That key is the latency probe (sequence
// number, record count and produce time; no patient data). The service
// itself never copies an input key to the sanitized topic.
type loadTransport struct {
	app.Transport
	tracked *TrackedSource
	keys    sync.Map // sanitize.SourcePosition -> input key, until the batch is acked
}

func (t *loadTransport) Source(ctx context.Context, role app.Role) (message.Source, error) {
	src, err := t.Transport.Source(ctx, role)
	if err != nil || role != app.RoleInput {
		return src, err
	}
	// Set before the service's first read (Run opens the source first).
	t.tracked.Source = &keyRecorder{Source: src, keys: &t.keys}
	return t.tracked, nil
}

func (t *loadTransport) Sink(ctx context.Context, role app.Role, maxMessageBytes int) (message.Sink, error) {
	sink, err := t.Transport.Sink(ctx, role, maxMessageBytes)
	if err != nil || role != app.RoleSanitized {
		return sink, err
	}
	return &keyRestorer{Sink: sink, keys: &t.keys}, nil
}

// keyRecorder records the key of every input message until its batch is
// acknowledged.
type keyRecorder struct {
	message.Source
	keys *sync.Map
}

func (r *keyRecorder) ReadBatch(ctx context.Context) (message.Batch, error) {
	b, err := r.Source.ReadBatch(ctx)
	if err != nil {
		return b, err
	}
	pos := make([]string, len(b.Messages))
	for i, m := range b.Messages {
		pos[i] = sanitize.SourcePosition(m)
		r.keys.Store(pos[i], m.Key)
	}
	ack := b.Ack
	b.Ack = func(ctx context.Context) error {
		err := ack(ctx)
		for _, p := range pos {
			r.keys.Delete(p)
		}
		return err
	}
	return b, nil
}

// Unwrap lets the service's stall monitor reach the group reader.
func (r *keyRecorder) Unwrap() message.Source { return r.Source }

// keyRestorer writes each message with its input message's key.
type keyRestorer struct {
	message.Sink
	keys *sync.Map
}

func (w *keyRestorer) Write(ctx context.Context, msgs []message.Message) error {
	out := make([]message.Message, len(msgs))
	for i, m := range msgs {
		out[i] = m
		for _, h := range m.Headers {
			if h.Key == sanitize.HeaderSource {
				if k, ok := w.keys.Load(string(h.Value)); ok {
					out[i].Key = k.([]byte)
				}
				break
			}
		}
	}
	return w.Sink.Write(ctx, out)
}
