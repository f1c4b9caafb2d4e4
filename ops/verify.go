package ops

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/codecs/arrowipc"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/ops/harness"
	"github.com/dpsurv/dpsurv/processors/sanitize"
)

// Row is one sanitized record as the fault tests compare it.
type Row struct {
	Time   float64
	Cohort int32
	Event  bool
}

// Reference sanitizes input messages with one in-process chain built from
// cfg and key, and returns the row each record must become, by pseudonym.
// Every replica of a service with the same config and key must produce
// exactly these rows, however often a record is redelivered. Messages with
// dead letters are an error (the fault tests use clean input).
func Reference(cfg app.Config, key []byte, msgs []message.Message) (map[string]Row, error) {
	mem := memory.NewGoAllocator()
	v, chain, err := cfg.Stages(key, mem)
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	defer chain.Release()
	want := map[string]Row{}
	n := 0
	for i, m := range msgs {
		good, dead := v.DecodeIPC(m.Value)
		if len(dead) > 0 {
			good.Release()
			return nil, fmt.Errorf("reference: message %d has %d dead letters", i, len(dead))
		}
		n += int(good.NumRows())
		out, _, err := chain.Apply(good)
		good.Release()
		if err != nil {
			return nil, fmt.Errorf("reference: %w", err)
		}
		b, err := arrowipc.Encode(out, mem)
		out.Release()
		if err != nil {
			return nil, fmt.Errorf("reference: %w", err)
		}
		var s harness.Sanitized
		if err := s.DecodeSanitized(b, mem); err != nil {
			return nil, fmt.Errorf("reference: %w", err)
		}
		for j, id := range s.ID {
			want[id] = Row{Time: s.Time[j], Cohort: s.Cohort[j], Event: s.Event[j]}
		}
	}
	if len(want) != n {
		return nil, fmt.Errorf("reference: %d distinct pseudonyms for %d records", len(want), n)
	}
	return want, nil
}

// Outcome is what CollectExact saw on the sanitized topic.
type Outcome struct {
	// Distinct counts sanitized messages by source position; Duplicates
	// counts messages seen again (redeliveries), all byte-identical.
	Distinct, Duplicates int
}

// ErrMismatch marks a sanitized topic that does not match the reference.
var ErrMismatch = errors.New("sanitized topic does not match the reference")

// CollectExact reads topic (from the start, in its own consumer group)
// until every record in want has arrived. It fails with ErrMismatch when a
// record is unknown, differs from want, is sanitized two ways, or when a
// redelivered message (same dpsurv-source header) is not byte-identical to
// its first copy; and with the context's error, naming how far it got,
// when records are missing at the deadline.
func CollectExact(ctx context.Context, conn kafkaconn.Config, topic, group string, want map[string]Row) (Outcome, error) {
	mem := memory.NewGoAllocator()
	col, err := harness.NewCollector(conn, topic, group, zap.NewNop())
	if err != nil {
		return Outcome{}, fmt.Errorf("collect %s: %w", topic, err)
	}
	defer col.Close()
	got := make(map[string]Row, len(want))
	bySource := map[string][]byte{}
	var out Outcome
	for len(got) < len(want) {
		ms, err := col.Next(ctx)
		if err != nil {
			return out, fmt.Errorf("collect %s: %w (have %d of %d records)", topic, err, len(got), len(want))
		}
		for _, m := range ms {
			src := ""
			for _, h := range m.Headers {
				if h.Key == sanitize.HeaderSource {
					src = string(h.Value)
				}
			}
			if src == "" {
				return out, fmt.Errorf("collect %s: message without %s header: %w", topic, sanitize.HeaderSource, ErrMismatch)
			}
			if prev, ok := bySource[src]; ok {
				out.Duplicates++
				if !bytes.Equal(prev, m.Value) {
					return out, fmt.Errorf("collect %s: redelivered message from %s is not byte-identical: %w", topic, src, ErrMismatch)
				}
				continue
			}
			bySource[src] = bytes.Clone(m.Value)
			out.Distinct++
			var s harness.Sanitized
			if err := s.DecodeSanitized(m.Value, mem); err != nil {
				return out, fmt.Errorf("collect %s: %w", topic, err)
			}
			for i, id := range s.ID {
				row := Row{Time: s.Time[i], Cohort: s.Cohort[i], Event: s.Event[i]}
				w, ok := want[id]
				switch {
				case !ok:
					return out, fmt.Errorf("collect %s: a record with an unknown pseudonym: %w", topic, ErrMismatch)
				case row != w:
					return out, fmt.Errorf("collect %s: a record differs from the single-process reference: %w", topic, ErrMismatch)
				}
				if prev, ok := got[id]; ok && prev != row {
					return out, fmt.Errorf("collect %s: one record sanitized two ways: %w", topic, ErrMismatch)
				}
				got[id] = row
			}
		}
	}
	return out, nil
}
