package files

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/schemas"
)

// Source reads a file through a validator (see the package contract).
type Source struct {
	topic  string
	v      *schemas.Validator
	ch     chan decoded
	errc   chan error
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	pending map[int64]decoded
	next    int64 // batches returned
	acked   int64 // batches acknowledged
	ackc    chan struct{}
	empty   arrow.Record // zero-row slice of the first batch
	readErr error
	ended   bool
	closed  bool
}

type decoded struct {
	good arrow.Record
	dead []schemas.DeadLetter
}

var _ message.Source = (*Source)(nil)

// NewSource starts reading path (format by extension, see
// schemas.FormatFromPath) in batches of at most batchSize rows.
func NewSource(path string, v *schemas.Validator, batchSize int) (*Source, error) {
	if v == nil {
		return nil, errors.New("file source: nil validator")
	}
	if _, err := schemas.FormatFromPath(path); err != nil {
		return nil, fmt.Errorf("file source: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Source{
		topic: filepath.Base(path), v: v,
		ch: make(chan decoded, 1), errc: make(chan error, 1), cancel: cancel,
		pending: map[int64]decoded{}, ackc: make(chan struct{}, 1),
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(s.ch)
		s.errc <- schemas.ReadFile(path, v, batchSize, func(good arrow.Record, dead []schemas.DeadLetter) error {
			good.Retain()
			select {
			case s.ch <- decoded{good: good, dead: dead}:
				return nil
			case <-ctx.Done():
				good.Release()
				return ctx.Err()
			}
		})
	}()
	return s, nil
}

// ReadBatch returns the next batch of one message.
func (s *Source) ReadBatch(ctx context.Context) (message.Batch, error) {
	select {
	case d, ok := <-s.ch:
		if ok {
			return s.batch(d), nil
		}
	case <-ctx.Done():
		return message.Batch{}, ctx.Err()
	}
	s.mu.Lock()
	if !s.ended {
		s.ended = true
		s.readErr = <-s.errc
	}
	err := s.readErr
	s.mu.Unlock()
	if err != nil {
		return message.Batch{}, message.Mark(fmt.Errorf("file source %s: %w", s.topic, err), message.ErrFatal)
	}
	// End of input once everything returned is acknowledged.
	for {
		s.mu.Lock()
		done := s.acked >= s.next
		s.mu.Unlock()
		if done {
			return message.Batch{}, fmt.Errorf("file source %s: %w", s.topic, message.ErrEndOfInput)
		}
		select {
		case <-s.ackc:
		case <-ctx.Done():
			return message.Batch{}, ctx.Err()
		}
	}
}

func (s *Source) batch(d decoded) message.Batch {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.empty == nil {
		s.empty = d.good.NewSlice(0, 0)
	}
	seq := s.next
	s.next++
	s.pending[seq] = d
	return message.Batch{
		Messages: []message.Message{{Topic: s.topic, Offset: seq}},
		Ack: func(context.Context) error {
			s.mu.Lock()
			s.acked = max(s.acked, seq+1)
			s.mu.Unlock()
			select {
			case s.ackc <- struct{}{}:
			default:
			}
			return nil
		},
	}
}

// Decode returns the decoded batch msg stands for (sanitize.Decoder); the
// caller releases good. A message it did not return, or one decoded
// before, gives an unprocessable whole-message dead letter.
func (s *Source) Decode(msg message.Message) (good arrow.Record, dead []schemas.DeadLetter) {
	s.mu.Lock()
	d, ok := s.pending[msg.Offset]
	delete(s.pending, msg.Offset)
	s.mu.Unlock()
	if ok && msg.Topic == s.topic {
		return d.good, d.dead
	}
	if ok {
		d.good.Release()
	}
	return emptyRecord(s.v.Schema(false, false)), []schemas.DeadLetter{{Reason: "unprocessable", RowIndex: -1,
		Detail: fmt.Sprintf("file source %s: no batch %d to decode", s.topic, msg.Offset)}}
}

// Empty is a zero-row record of the file's canonical rows (its schema and
// cohort dictionary), for a run that wrote no row; nil before the first
// batch is read. The caller releases it.
func (s *Source) Empty() arrow.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.empty == nil {
		return nil
	}
	s.empty.Retain()
	return s.empty
}

// Connect implements message.Source. The file was opened and its
// decoding started by NewSource (a missing or unreadable file fails
// there), so there is nothing left to connect.
func (s *Source) Connect(context.Context) error { return nil }

// Close stops reading and releases the batches not handed to the
// processor.
func (s *Source) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	for d := range s.ch {
		d.good.Release()
	}
	s.wg.Wait()
	s.mu.Lock()
	for k, d := range s.pending {
		d.good.Release()
		delete(s.pending, k)
	}
	if s.empty != nil {
		s.empty.Release()
		s.empty = nil
	}
	s.mu.Unlock()
	return nil
}

// emptyRecord is a record of schema with no rows.
func emptyRecord(schema *arrow.Schema) arrow.Record {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	return b.NewRecord()
}
