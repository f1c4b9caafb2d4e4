package files

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/codecs/arrowipc"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/schemas"
)

// RecordSink writes messages holding Arrow IPC streams (the sanitized
// stream) as records to a CSV, Arrow IPC or JSON-lines file.
type RecordSink struct {
	path   string
	rename map[string]string
	mem    memory.Allocator

	mu   sync.Mutex
	w    *schemas.FileWriter
	rows int
}

var _ message.Sink = (*RecordSink)(nil)

// NewRecordSink writes to path (format by extension); rename maps schema
// field names to output column names (schemas.NewFileWriter). The file is
// created on the first write (or by Ensure).
func NewRecordSink(path string, rename map[string]string, mem memory.Allocator) *RecordSink {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return &RecordSink{path: path, rename: rename, mem: mem}
}

// Connect implements message.Sink. The file is created on the first write
// (or by Ensure), not here: an unused sink leaves no file behind.
func (s *RecordSink) Connect(context.Context) error { return nil }

// Write implements message.Sink.
func (s *RecordSink) Write(_ context.Context, msgs []message.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		recs, err := arrowipc.DecodeRecords(m.Value, s.mem)
		if err != nil {
			return message.Mark(fmt.Errorf("record sink %s: decode: %w", s.path, err), message.ErrFatal)
		}
		for i, r := range recs {
			if err == nil {
				err = s.write(r)
			}
			recs[i].Release()
		}
		if err != nil {
			return message.Mark(fmt.Errorf("record sink %s: %w", s.path, err), message.ErrFatal)
		}
	}
	return nil
}

func (s *RecordSink) write(r arrow.Record) error {
	if s.w == nil {
		w, err := schemas.NewFileWriter(s.path, r.Schema(), s.rename, s.mem)
		if err != nil {
			return err
		}
		s.w = w
	}
	if err := s.w.Write(r); err != nil {
		return err
	}
	s.rows += int(r.NumRows())
	return nil
}

// Ensure writes rec (creating the file) if nothing was written yet: a
// run without a record to write still leaves an output with its schema.
func (s *RecordSink) Ensure(rec arrow.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w != nil {
		return nil
	}
	if err := s.write(rec); err != nil {
		return fmt.Errorf("record sink %s: %w", s.path, err)
	}
	return nil
}

// Rows is the number of records written.
func (s *RecordSink) Rows() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rows
}

// Close finishes the file (footer, sidecar); a sink never written to
// leaves no file.
func (s *RecordSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		return nil
	}
	w := s.w
	s.w = nil
	if err := w.Close(); err != nil {
		return fmt.Errorf("record sink %s: %w", s.path, err)
	}
	return nil
}

// LineSink writes each message value as one line (JSON lines for dead
// letters). The file (mode 0600: dead letters hold raw records) is created,
// truncating any old one, on the first write.
type LineSink struct {
	path string

	mu     sync.Mutex
	f      *os.File
	w      *bufio.Writer
	lines  int
	opened bool
}

var _ message.Sink = (*LineSink)(nil)

// NewLineSink writes to path.
func NewLineSink(path string) *LineSink { return &LineSink{path: path} }

// Connect implements message.Sink. The file is created on the first
// write, not here: a run without dead letters leaves no dead-letter file.
func (s *LineSink) Connect(context.Context) error { return nil }

// Write implements message.Sink.
func (s *LineSink) Write(_ context.Context, msgs []message.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(msgs) == 0 {
		return nil
	}
	if s.f == nil {
		f, err := os.OpenFile(s.path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err != nil {
			return message.Mark(fmt.Errorf("line sink: %w", err), message.ErrFatal)
		}
		s.f, s.w, s.opened = f, bufio.NewWriter(f), true
	}
	for _, m := range msgs {
		s.w.Write(m.Value)
		if err := s.w.WriteByte('\n'); err != nil {
			return message.Mark(fmt.Errorf("line sink %s: %w", s.path, err), message.ErrFatal)
		}
		s.lines++
	}
	if err := s.w.Flush(); err != nil {
		return message.Mark(fmt.Errorf("line sink %s: %w", s.path, err), message.ErrFatal)
	}
	return nil
}

// Opened reports whether the file was created (something was written).
func (s *LineSink) Opened() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opened
}

// Lines is the number of lines written.
func (s *LineSink) Lines() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lines
}

// Close flushes and closes the file.
func (s *LineSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	ferr := s.w.Flush()
	cerr := s.f.Close()
	s.f, s.w = nil, nil
	if ferr != nil {
		return fmt.Errorf("line sink %s: %w", s.path, ferr)
	}
	if cerr != nil {
		return fmt.Errorf("line sink %s: %w", s.path, cerr)
	}
	return nil
}
