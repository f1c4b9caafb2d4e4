package schemas

import (
	"fmt"
	"math"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/codecs/arrowipc"
)

// DecodeIPC decodes one Kafka message value (an Arrow IPC stream: schema and
// one or more record batches) and validates it. Row indices in dead letters
// count rows across the message's batches, and duplicate ids are detected
// across them.
//
// Whole-message failures give exactly one dead letter with RowIndex -1 and
// the raw bytes: undecodable bytes (bad framing, corrupt flatbuffers,
// malformed buffers, decompression beyond the decode-memory bound) and a
// schema that does not fit tte.v1 (missing_field or wrong_schema); keeping
// the raw bytes lets an operator replay the message once the producer is
// fixed. Row-level failures give one dead letter per row.
//
// The message is read in place (its IPC bodies are slices of data, not
// copies); the decoded column buffers, which Arrow copies or decompresses
// out of them, come from the Go allocator (bounded by SetMaxDecodeBytes) so
// that a malformed message cannot leak accounted memory; the returned
// record is allocated from the validator's allocator (a column that needed
// no conversion is passed through from the decoded input).
func (v *Validator) DecodeIPC(data []byte) (out arrow.Record, dead []DeadLetter) {
	var outs []arrow.Record
	var declared int64 // the rows the batch headers declare (0: not known)
	whole := func(reason, detail string) (arrow.Record, []DeadLetter) {
		for _, o := range outs {
			o.Release()
		}
		outs = nil
		return v.empty(false, false), []DeadLetter{{Reason: reason, Detail: detail, RowIndex: -1,
			Raw: append([]byte(nil), data...), Count: int(min(declared, math.MaxInt32))}}
	}
	defer func() {
		if p := recover(); p != nil {
			if out != nil {
				out.Release()
			}
			out, dead = whole(ReasonUndecodable, fmt.Sprintf("message could not be decoded: %v", p))
		}
	}()
	// Bound decoded memory by the message size too: a real message
	// decompresses by far less than 256x, and a forged uncompressed length
	// must not make every bad message cost a huge allocation.
	bound := arrowipc.DecodeBound(v.maxDecode, len(data))
	r, sum, err := arrowipc.Open(data, arrowipc.NewLimitAllocator(memory.NewGoAllocator(), bound), bound)
	declared = sum.Rows
	if err != nil {
		return whole(ReasonUndecodable, err.Error())
	}
	defer r.Release()
	p := v.planFor(r.Schema())
	if p.errReason != rOK {
		return whole(reasonNames[p.errReason], p.errDetail)
	}
	// Read every batch first: a single-batch message (the norm) is then
	// validated with the fast per-batch duplicate check; several batches
	// share one id set. Input buffers come from the Go allocator, so ids may
	// alias them for the duration of the call.
	var ins []arrow.Record
	var dicts arrowipc.DictBudget
	defer func() {
		for _, rec := range ins {
			rec.Release()
		}
	}()
	for r.Next() {
		rec := r.Record()
		rec.Retain()
		ins = append(ins, rec)
		if err := arrowipc.CheckLengths(rec); err != nil {
			return whole(ReasonUndecodable, err.Error())
		}
		if err := arrowipc.CheckColumns(rec, p.used()); err != nil {
			return whole(ReasonUndecodable, err.Error())
		}
		if err := dicts.Add(rec, bound); err != nil {
			return whole(ReasonUndecodable, err.Error())
		}
	}
	if err := r.Err(); err != nil {
		return whole(ReasonUndecodable, err.Error())
	}
	var set *idSet
	if len(ins) > 1 {
		set = &idSet{m: make(map[string]int32)}
	}
	rowBase := 0
	for _, rec := range ins {
		// CheckColumns ran on rec as it was read (above)
		o, d := v.validate(rec, rowBase, set, true)
		for _, x := range d {
			if x.RowIndex < 0 { // the record could not be read
				o.Release()
				return whole(x.Reason, x.Detail)
			}
		}
		outs = append(outs, o)
		dead = append(dead, d...)
		rowBase += int(rec.NumRows())
	}
	dead = CapDeadLetters(dead, v.maxDead)
	switch len(outs) {
	case 0:
		return v.empty(p.withSite, p.withObs), dead
	case 1:
		return outs[0], dead
	}
	out, err = concatRecords(outs, v.mem)
	for _, o := range outs {
		o.Release()
	}
	outs = nil
	if err != nil {
		return whole(ReasonUndecodable, err.Error())
	}
	return out, dead
}

// concatRecords concatenates records of one schema.
func concatRecords(recs []arrow.Record, mem memory.Allocator) (arrow.Record, error) {
	schema := recs[0].Schema()
	cols := make([]arrow.Array, schema.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	parts := make([]arrow.Array, len(recs))
	for c := range cols {
		for k, r := range recs {
			parts[k] = r.Column(c)
		}
		a, err := array.Concatenate(parts, mem)
		if err != nil {
			return nil, fmt.Errorf("schemas: concatenate column %q: %w", schema.Field(c).Name, err)
		}
		cols[c] = a
	}
	return array.NewRecord(schema, cols, rows), nil
}
