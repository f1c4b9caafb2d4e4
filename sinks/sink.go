package sinks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/dpsurv/dpsurv/message"
)

// Writer is a Sink onto an io.Writer: one line per message value.
type Writer struct {
	mu     sync.Mutex
	w      io.Writer
	buf    []byte
	closed bool
}

var _ message.Sink = (*Writer)(nil)

// NewWriter returns a Sink writing message values, one per line, to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("sink closed")

// Write writes the values of msgs, each followed by a newline, in one call
// to the underlying writer.
func (w *Writer) Write(ctx context.Context, msgs []message.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return fmt.Errorf("write sink: %w", ErrClosed)
	}
	if len(msgs) == 0 {
		return nil
	}
	w.buf = w.buf[:0]
	for _, m := range msgs {
		w.buf = append(w.buf, m.Value...)
		w.buf = append(w.buf, '\n')
	}
	if _, err := w.w.Write(w.buf); err != nil {
		return fmt.Errorf("write sink: %w", err)
	}
	if s, ok := w.w.(interface{ Sync() error }); ok {
		// *os.File: flush to the device (ignore stdout/pipes that cannot sync).
		_ = s.Sync()
	}
	return nil
}

// Connect implements message.Sink; there is nothing to connect.
func (w *Writer) Connect(context.Context) error { return nil }

// Close marks the sink closed; it does not close the underlying writer.
func (w *Writer) Close() error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	return nil
}
