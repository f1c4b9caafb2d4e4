package sources

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/segmentio/kafka-go/protocol"
	fetchAPI "github.com/segmentio/kafka-go/protocol/fetch"

	"github.com/dpsurv/dpsurv/message"
)

// Control record types (the second int16 of a control record's key).
const (
	controlAbort  = 0
	controlCommit = 1
)

// decoded is what one partition of a fetch response yields: the records to
// deliver, in offset order, and the offset to fetch (and commit) after
// everything the response held — delivered or skipped.
type decoded struct {
	msgs []message.Message
	// next is the offset after the last record the response held, at
	// least the fetch offset: records skipped as aborted or control move it
	// on too, so that the group's commits pass them.
	next int64
	// abortedRecords and controlRecords count the records dropped at or
	// after the fetch offset: aborted transactional records and control
	// records (commit and abort markers).
	abortedRecords, controlRecords int
}

// decodeCommitted turns one partition of a read_committed fetch response
// into the records a consumer may see, with the Java client's algorithm
// (Fetcher/CompletedFetch, KIP-98):
//
//   - the partition's aborted transactions (producer id, first offset) are
//     sorted by first offset;
//   - walking the batches in offset order, every aborted transaction whose
//     first offset is at or before the batch's last offset puts its
//     producer id in the aborted set;
//   - a control batch holding an abort marker removes its producer id from
//     the set; control batches are never delivered;
//   - every record of a transactional batch whose producer id is in the
//     aborted set is dropped;
//   - records before the fetch offset (a batch straddling it) are dropped;
//   - next moves past every record seen, delivered or not.
//
// With readCommitted false (read_uncommitted), only control batches are
// dropped. topic and partition label the messages.
func decodeCommitted(p *fetchAPI.ResponsePartition, topic string, fetchOffset int64, readCommitted bool) (decoded, error) {
	out := decoded{next: fetchOffset}
	if p.RecordSet.Records == nil {
		return out, nil
	}
	var batches []protocol.RecordReader
	if s, ok := p.RecordSet.Records.(*protocol.RecordStream); ok {
		batches = s.Records
	} else {
		batches = []protocol.RecordReader{p.RecordSet.Records}
	}
	aborted := append([]fetchAPI.ResponseTransaction(nil), p.AbortedTransactions...)
	sort.SliceStable(aborted, func(i, j int) bool { return aborted[i].FirstOffset < aborted[j].FirstOffset })
	abortedPIDs := map[int64]bool{}
	// consumeUpTo adds the producers of the aborted transactions that start
	// at or before offset.
	consumeUpTo := func(offset int64) {
		for len(aborted) > 0 && aborted[0].FirstOffset <= offset {
			abortedPIDs[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
	}
	part := int(p.Partition)
	for _, b := range batches {
		recs, err := readRecords(b)
		if err != nil {
			return out, fmt.Errorf("decode partition %d batch: %w", part, err)
		}
		if len(recs) == 0 {
			continue
		}
		last := recs[len(recs)-1].offset
		out.next = max(out.next, last+1)
		switch b := b.(type) {
		case *protocol.ControlBatch:
			if readCommitted {
				consumeUpTo(last)
				if recs[0].control == controlAbort {
					delete(abortedPIDs, b.ProducerID)
				}
			}
			out.controlRecords += countFrom(recs, fetchOffset)
			continue
		case *protocol.RecordBatch:
			if readCommitted && b.Attributes.Transactional() {
				consumeUpTo(last)
				if abortedPIDs[b.ProducerID] {
					out.abortedRecords += countFrom(recs, fetchOffset)
					continue
				}
			}
		}
		for _, r := range recs {
			if r.offset < fetchOffset {
				continue
			}
			out.msgs = append(out.msgs, message.Message{Topic: topic, Partition: part, Offset: r.offset,
				Key: r.key, Value: r.value, Headers: r.headers, Time: r.time})
		}
	}
	return out, nil
}

func countFrom(recs []record, from int64) int {
	n := 0
	for _, r := range recs {
		if r.offset >= from {
			n++
		}
	}
	return n
}

// record is a copy of one protocol.Record (the protocol package reuses its
// buffers once the next record is read).
type record struct {
	offset     int64
	key, value []byte
	headers    []message.Header
	time       time.Time
	control    int16 // control batches: the record type (abort 0, commit 1)
}

// readRecords copies every record of a batch. A control record's key is
// version (int16) then type (int16).
func readRecords(b protocol.RecordReader) ([]record, error) {
	_, isControl := b.(*protocol.ControlBatch)
	var out []record
	for {
		r, err := b.ReadRecord()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		rec := record{offset: r.Offset, time: r.Time}
		if rec.key, err = readBytes(r.Key); err != nil {
			return out, fmt.Errorf("record %d key: %w", r.Offset, err)
		}
		if rec.value, err = readBytes(r.Value); err != nil {
			return out, fmt.Errorf("record %d value: %w", r.Offset, err)
		}
		if isControl {
			if len(rec.key) < 4 {
				return out, fmt.Errorf("control record %d: key of %d bytes, want 4", r.Offset, len(rec.key))
			}
			rec.control = int16(uint16(rec.key[2])<<8 | uint16(rec.key[3]))
		}
		if len(r.Headers) > 0 {
			rec.headers = make([]message.Header, len(r.Headers))
			for i, h := range r.Headers {
				rec.headers[i] = message.Header{Key: h.Key, Value: append([]byte(nil), h.Value...)}
			}
		}
		out = append(out, rec)
	}
}

// readBytes copies b and releases it; nil stays nil.
func readBytes(b protocol.Bytes) ([]byte, error) {
	if b == nil {
		return nil, nil
	}
	defer b.Close()
	return protocol.ReadAll(b)
}
