package sources

import (
	"fmt"
	"slices"
	"testing"

	"github.com/segmentio/kafka-go/protocol"
	fetchAPI "github.com/segmentio/kafka-go/protocol/fetch"

	"github.com/dpsurv/dpsurv/message"
)

// batch is a test record batch: records at offsets [base, base+n) with
// values "<name>-<offset>".
func batch(name string, pid int64, txn bool, base int64, n int) protocol.RecordReader {
	recs := make([]protocol.Record, n)
	for i := range recs {
		off := base + int64(i)
		recs[i] = protocol.Record{Offset: off, Value: protocol.NewBytes([]byte(fmt.Sprintf("%s-%d", name, off)))}
	}
	attr := protocol.Attributes(0)
	if txn {
		attr |= protocol.Transactional
	}
	return &protocol.RecordBatch{Attributes: attr, BaseOffset: base, ProducerID: pid, Records: protocol.NewRecordReader(recs...)}
}

// marker is a control batch at offset with an abort (commit=false) or
// commit marker of producer pid.
func marker(pid int64, offset int64, commit bool) protocol.RecordReader {
	typ := int16(controlAbort)
	if commit {
		typ = controlCommit
	}
	cr := &protocol.ControlRecord{Offset: offset, Type: typ}
	return &protocol.ControlBatch{Attributes: protocol.Transactional | protocol.Control, BaseOffset: offset, ProducerID: pid,
		Records: protocol.NewRecordReader(cr.Record())}
}

func values(ms []message.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m.Value)
	}
	return out
}

func seq(name string, from, to int64) []string {
	var out []string
	for o := from; o < to; o++ {
		out = append(out, fmt.Sprintf("%s-%d", name, o))
	}
	return out
}

// The Java client's read_committed algorithm on hand-built fetch responses.
func TestDecodeCommitted(t *testing.T) {
	type abort = fetchAPI.ResponseTransaction
	tests := []struct {
		name          string
		batches       []protocol.RecordReader
		aborted       []abort
		fetchOffset   int64
		uncommitted   bool
		want          []string
		next          int64
		nAbort, nCtrl int
	}{
		{
			// The case: a committed transaction, an aborted one, a
			// plain message.
			name: "commit abort plain",
			batches: []protocol.RecordReader{batch("c", 7, true, 0, 20), marker(7, 20, true),
				batch("a", 7, true, 21, 25), marker(7, 46, false), batch("p", -1, false, 47, 5)},
			aborted: []abort{{ProducerID: 7, FirstOffset: 21}},
			want:    slices.Concat(seq("c", 0, 20), seq("p", 47, 52)), next: 52, nAbort: 25, nCtrl: 2,
		},
		{
			name: "read_uncommitted keeps aborted records, drops markers",
			batches: []protocol.RecordReader{batch("c", 7, true, 0, 2), marker(7, 2, true),
				batch("a", 7, true, 3, 2), marker(7, 5, false)},
			aborted: []abort{{ProducerID: 7, FirstOffset: 3}}, uncommitted: true,
			want: slices.Concat(seq("c", 0, 2), seq("a", 3, 5)), next: 6, nCtrl: 2,
		},
		{
			// Two producers interleaved: only the aborting one's records go.
			name: "interleaved producers",
			batches: []protocol.RecordReader{batch("x", 1, true, 0, 3), batch("y", 2, true, 3, 3), batch("x", 1, true, 6, 3),
				marker(2, 9, true), marker(1, 10, false), batch("y", 2, true, 11, 2), marker(2, 13, true)},
			aborted: []abort{{ProducerID: 1, FirstOffset: 0}},
			want:    slices.Concat(seq("y", 3, 6), seq("y", 11, 13)), next: 14, nAbort: 6, nCtrl: 3,
		},
		{
			// The same producer aborts, then commits: the abort marker ends
			// the aborted range, so its next transaction is kept.
			name: "abort then commit by one producer",
			batches: []protocol.RecordReader{batch("a", 5, true, 0, 4), marker(5, 4, false),
				batch("c", 5, true, 5, 4), marker(5, 9, true)},
			aborted: []abort{{ProducerID: 5, FirstOffset: 0}},
			want:    seq("c", 5, 9), next: 10, nAbort: 4, nCtrl: 2,
		},
		{
			// One producer: commit, abort, commit (kafka4beam/brod#659: a
			// client that stops at the producer's first marker returns the
			// aborted middle transaction).
			name: "commit abort commit by one producer",
			batches: []protocol.RecordReader{batch("t1", 1, true, 1, 1), marker(1, 2, true),
				batch("t2", 1, true, 3, 1), marker(1, 4, false), batch("t3", 1, true, 5, 1), marker(1, 6, true)},
			aborted:     []abort{{ProducerID: 1, FirstOffset: 3}},
			fetchOffset: 1,
			want:        []string{"t1-1", "t3-5"}, next: 7, nAbort: 1, nCtrl: 3,
		},
		{
			// A fetch starting inside an aborted transaction: its first
			// offset is before the fetch offset, its records after it are
			// still dropped.
			name:        "fetch inside an aborted transaction",
			batches:     []protocol.RecordReader{batch("a", 4, true, 10, 5), batch("a", 4, true, 15, 5), marker(4, 20, false), batch("p", -1, false, 21, 1)},
			aborted:     []abort{{ProducerID: 4, FirstOffset: 10}},
			fetchOffset: 15,
			want:        []string{"p-21"}, next: 22, nAbort: 5, nCtrl: 1,
		},
		{
			// Aborted transactions listed out of order are sorted first.
			name: "unsorted aborted list",
			batches: []protocol.RecordReader{batch("a", 1, true, 0, 2), marker(1, 2, false),
				batch("b", 1, true, 3, 2), marker(1, 5, false), batch("p", -1, false, 6, 1)},
			aborted: []abort{{ProducerID: 1, FirstOffset: 3}, {ProducerID: 1, FirstOffset: 0}},
			want:    seq("p", 6, 7), next: 7, nAbort: 4, nCtrl: 2,
		},
		{
			// A non-transactional batch of a producer id in the aborted set
			// (idempotent, not transactional) is kept.
			name:    "non-transactional batch kept",
			batches: []protocol.RecordReader{batch("i", 3, false, 0, 2)},
			aborted: []abort{{ProducerID: 3, FirstOffset: 0}},
			want:    seq("i", 0, 2), next: 2,
		},
		{
			// The broker returns whole batches: records before the fetch
			// offset are dropped (and not counted).
			name:        "fetch offset inside a batch",
			batches:     []protocol.RecordReader{batch("c", 7, true, 0, 10), marker(7, 10, true)},
			fetchOffset: 6,
			want:        seq("c", 6, 10), next: 11, nCtrl: 1,
		},
		{
			// Only markers: nothing delivered, the offset still moves past.
			name:        "markers only",
			batches:     []protocol.RecordReader{marker(7, 10, true), marker(8, 11, false)},
			fetchOffset: 10,
			next:        12, nCtrl: 2,
		},
		{
			name:        "empty",
			fetchOffset: 42, next: 42,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &fetchAPI.ResponsePartition{Partition: 3, AbortedTransactions: tc.aborted}
			if tc.batches != nil {
				p.RecordSet.Records = &protocol.RecordStream{Records: tc.batches}
			}
			d, err := decodeCommitted(p, "in", tc.fetchOffset, !tc.uncommitted)
			if err != nil {
				t.Fatal(err)
			}
			if got := values(d.msgs); !slices.Equal(got, tc.want) {
				t.Errorf("delivered %v,\nwant %v", got, tc.want)
			}
			if d.next != tc.next {
				t.Errorf("next = %d, want %d", d.next, tc.next)
			}
			if d.abortedRecords != tc.nAbort || d.controlRecords != tc.nCtrl {
				t.Errorf("skipped %d aborted, %d control; want %d, %d", d.abortedRecords, d.controlRecords, tc.nAbort, tc.nCtrl)
			}
			for _, m := range d.msgs {
				if m.Topic != "in" || m.Partition != 3 {
					t.Fatalf("message labelled %s/%d, want in/3", m.Topic, m.Partition)
				}
			}
		})
	}
}
