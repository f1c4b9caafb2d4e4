package arrowipc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// Zero-copy loading of Arrow IPC files. Arrow Go v15's IPC reader copies
// every buffer of every record batch out of the message body into a new
// allocation (ipcSource.buffer; it has no zero-copy option: that came with
// arrow-go v18's NewMappedFileReader). For a file held in memory, the
// loader below makes each column buffer a slice of the file's bytes
// instead, after the same checks: every message's framing and flatbuffer
// metadata verified (verifyMessage) before it is read, every field node
// and buffer bounded by the message body, and the columns then validated
// as for any batch (checkRecord on the used columns, value checks in
// validate). It loads the uncompressed little-endian files with flat
// columns (booleans, numbers, dates and times, strings and binaries, and
// dictionaries of those), what feather and pyarrow write by default; any
// other file goes through Arrow's reader (zcUnsupported).

var errZCUnsupported = errors.New("arrow: not loadable without a copy")

// maxBodilessRows bounds the rows of a batch beyond 8 per byte of its body.
const maxBodilessRows = 1024

// Flatbuffer message header types and the metadata version with the V5
// buffer layout (Message.fbs, Schema.fbs).
const (
	fbMsgDictionary  = 2
	fbMsgRecordBatch = 3
	fbMetadataV5     = 4
)

// zcMessage is one verified message of an IPC stream held in memory.
type zcMessage struct {
	kind int
	hdr  fbTable // the header table (Schema, DictionaryBatch or RecordBatch)
	meta []byte
	body []byte
}

// zcMessages splits data (IPC stream messages, as between a file's leading
// magic and its footer) into verified messages.
func zcMessages(data []byte) ([]zcMessage, error) {
	var msgs []zcMessage
	pos := 0
	for n := 0; pos < len(data); n++ {
		if len(data)-pos < 4 {
			return nil, fmt.Errorf("message %d: truncated", n)
		}
		mlen := binary.LittleEndian.Uint32(data[pos:])
		pos += 4
		if mlen == 0xFFFFFFFF {
			if len(data)-pos < 4 {
				return nil, fmt.Errorf("message %d: truncated", n)
			}
			mlen = binary.LittleEndian.Uint32(data[pos:])
			pos += 4
		}
		if mlen == 0 { // end of stream
			break
		}
		if int64(mlen) > int64(len(data)-pos) {
			return nil, fmt.Errorf("message %d: length %d exceeds the %d bytes left", n, mlen, len(data)-pos)
		}
		meta, bodyLen, bodyAt, err := verifiedMessage(data, pos, int(mlen), n)
		if err != nil {
			return nil, err
		}
		pos = bodyAt + int(bodyLen)
		body := data[bodyAt:pos:pos]
		f := &fbuf{b: meta}
		root, _ := f.u32(0)
		msg, err := f.table(int(root)) // verified above
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", n, err)
		}
		version, err := msg.i16(0)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", n, err)
		}
		kind, err := msg.u8(1)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", n, err)
		}
		hdr, _, err := msg.sub(2)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", n, err)
		}
		if version != fbMetadataV5 {
			return nil, errZCUnsupported
		}
		msgs = append(msgs, zcMessage{kind: kind, hdr: hdr, meta: meta, body: body})
	}
	return msgs, nil
}

// i16 reads field k as a little-endian int16 (0 when absent).
func (t fbTable) i16(k int) (int, error) {
	at, err := t.field(k, 2)
	if err != nil || at == 0 {
		return 0, err
	}
	return int(int16(binary.LittleEndian.Uint16(t.f.b[at:]))), nil
}

// zcRecords is a record batch reader over verified messages whose buffers
// alias the messages' bodies.
type zcRecords struct {
	schema *arrow.Schema
	dictID []int64 // per field: its dictionary's id (fields without one: -1)
	dicts  map[int64]arrow.ArrayData
	msgs   []zcMessage
	rec    arrow.Record
	err    error
}

// newZCRecords checks that every message can be loaded without a copy
// (errZCUnsupported otherwise) and reads the schema.
func newZCRecords(data []byte) (*zcRecords, error) {
	msgs, err := zcMessages(data)
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 || msgs[0].kind != fbMsgSchema {
		return nil, errors.New("arrow: the stream does not start with a schema")
	}
	// Arrow decodes the schema (no buffers involved).
	sr, err := ipc.NewReaderFromMessageReader(&oneMessage{msg: ipc.NewMessage(memory.NewBufferBytes(msgs[0].meta), memory.NewBufferBytes(msgs[0].body))})
	if err != nil {
		return nil, fmt.Errorf("arrow: %w", err)
	}
	schema := sr.Schema()
	sr.Release()
	z := &zcRecords{schema: schema, dicts: map[int64]arrow.ArrayData{}, msgs: msgs[1:]}
	if end, err := msgs[0].hdr.i16(0); err != nil || end != 0 { // big-endian
		return nil, errZCUnsupported
	}
	err = msgs[0].hdr.tables(1, func(fd fbTable) error {
		id := int64(-1)
		if d, ok, err := fd.sub(4); err != nil {
			return err
		} else if ok {
			if id, err = d.i64(0); err != nil {
				return err
			}
		}
		z.dictID = append(z.dictID, id)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(z.dictID) != schema.NumFields() {
		return nil, errors.New("arrow: schema fields disagree with the metadata")
	}
	for k, f := range schema.Fields() {
		if !zcType(f.Type) || (z.dictID[k] >= 0) != (f.Type.ID() == arrow.DICTIONARY) {
			return nil, errZCUnsupported
		}
	}
	for _, m := range z.msgs {
		var batch fbTable
		switch m.kind {
		case fbMsgRecordBatch:
			batch = m.hdr
		case fbMsgDictionary:
			if delta, err := m.hdr.u8(2); err != nil || delta != 0 {
				return nil, errZCUnsupported
			}
			b, ok, err := m.hdr.sub(1)
			if err != nil || !ok {
				return nil, fmt.Errorf("arrow: dictionary batch without data")
			}
			batch = b
		default:
			return nil, errZCUnsupported
		}
		if _, compressed, err := batch.sub(3); err != nil || compressed {
			return nil, errZCUnsupported
		}
	}
	return z, nil
}

// zcType reports whether columns of type t are loaded without a copy.
func zcType(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.DICTIONARY:
		d := t.(*arrow.DictionaryType)
		return zcType(d.IndexType) && d.ValueType.ID() != arrow.DICTIONARY && zcType(d.ValueType)
	}
	return zcBuffers(t) > 0 || t.ID() == arrow.NULL
}

// zcBuffers is the number of IPC buffers of a flat type (0: not flat).
func zcBuffers(t arrow.DataType) int {
	switch t.ID() {
	case arrow.BOOL, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64,
		arrow.DATE32, arrow.DATE64, arrow.TIMESTAMP, arrow.TIME32, arrow.TIME64, arrow.DURATION:
		return 2
	case arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return 3
	case arrow.DICTIONARY:
		return zcBuffers(t.(*arrow.DictionaryType).IndexType)
	}
	return 0
}

// batchLoader reads the field nodes and buffers of one RecordBatch table
// in order.
type batchLoader struct {
	nodes, bufs int // positions of the vectors' first elements
	nnode, nbuf int
	inode, ibuf int
	meta, body  []byte
	length      int64
}

func newBatchLoader(batch fbTable, body []byte) (*batchLoader, error) {
	length, err := batch.i64(0)
	if err != nil {
		return nil, err
	}
	nodes, nnode, err := batch.vector(1, 16)
	if err != nil {
		return nil, err
	}
	bufs, nbuf, err := batch.vector(2, 16)
	if err != nil {
		return nil, err
	}
	// Every row of a batch a file can be validated from takes at least a
	// bit of its body (a column of nulls takes none: a forged length would
	// make every row a dead letter from a few bytes).
	if length < 0 || length > 8*int64(len(body))+maxBodilessRows {
		return nil, fmt.Errorf("arrow: batch length %d out of range for a %d-byte body", length, len(body))
	}
	return &batchLoader{nodes: nodes, nnode: nnode, bufs: bufs, nbuf: nbuf, meta: batch.f.b, body: body, length: length}, nil
}

func (l *batchLoader) node() (length, nulls int, err error) {
	if l.inode >= l.nnode {
		return 0, 0, errors.New("arrow: fewer field nodes than fields")
	}
	at := l.nodes + 16*l.inode
	l.inode++
	n := int64(binary.LittleEndian.Uint64(l.meta[at:]))
	nn := int64(binary.LittleEndian.Uint64(l.meta[at+8:]))
	if n < 0 || n > l.length || nn < 0 || nn > n {
		return 0, 0, fmt.Errorf("arrow: field node of length %d with %d nulls in a batch of %d rows", n, nn, l.length)
	}
	return int(n), int(nn), nil
}

// buffer returns the next buffer as a slice of the body (nil when empty).
func (l *batchLoader) buffer() (*memory.Buffer, error) {
	if l.ibuf >= l.nbuf {
		return nil, errors.New("arrow: fewer buffers than the fields need")
	}
	at := l.bufs + 16*l.ibuf
	l.ibuf++
	off := int64(binary.LittleEndian.Uint64(l.meta[at:]))
	n := int64(binary.LittleEndian.Uint64(l.meta[at+8:]))
	if off < 0 || n < 0 || off > int64(len(l.body)) || n > int64(len(l.body))-off {
		return nil, fmt.Errorf("arrow: buffer [%d, +%d) outside the %d-byte body", off, n, len(l.body))
	}
	if n == 0 {
		return nil, nil
	}
	return memory.NewBufferBytes(l.body[off : off+n : off+n]), nil
}

// load reads one flat column of type t (dictionary: its indices, dict
// set on the result).
func (l *batchLoader) load(t arrow.DataType, dict arrow.ArrayData) (arrow.ArrayData, error) {
	n, nulls, err := l.node()
	if err != nil {
		return nil, err
	}
	if t.ID() == arrow.NULL {
		return array.NewData(t, n, nil, nil, n, 0), nil
	}
	bufs := make([]*memory.Buffer, zcBuffers(t))
	for k := range bufs {
		if bufs[k], err = l.buffer(); err != nil {
			return nil, err
		}
	}
	if nulls == 0 {
		bufs[0] = nil
	}
	if dict != nil {
		return array.NewDataWithDictionary(t, n, bufs, nulls, 0, dict.(*array.Data)), nil
	}
	return array.NewData(t, n, bufs, nil, nulls, 0), nil
}

func (z *zcRecords) Schema() *arrow.Schema { return z.schema }
func (z *zcRecords) Record() arrow.Record  { return z.rec }
func (z *zcRecords) Err() error            { return z.err }

func (z *zcRecords) Release() {
	if z.rec != nil {
		z.rec.Release()
		z.rec = nil
	}
	for id, d := range z.dicts {
		d.Release()
		delete(z.dicts, id)
	}
}

// Next loads the next record batch (after the dictionaries before it).
func (z *zcRecords) Next() bool {
	if z.rec != nil {
		z.rec.Release()
		z.rec = nil
	}
	for z.err == nil && len(z.msgs) > 0 {
		m := z.msgs[0]
		z.msgs = z.msgs[1:]
		if m.kind == fbMsgDictionary {
			z.err = z.loadDictionary(m)
			continue
		}
		z.rec, z.err = z.loadRecord(m)
		return z.err == nil
	}
	return false
}

func (z *zcRecords) loadDictionary(m zcMessage) error {
	id, err := m.hdr.i64(0)
	if err != nil {
		return err
	}
	var vt arrow.DataType
	for k, f := range z.schema.Fields() {
		if z.dictID[k] == id {
			vt = f.Type.(*arrow.DictionaryType).ValueType
		}
	}
	if vt == nil {
		return fmt.Errorf("arrow: dictionary id %d is no field's", id)
	}
	batch, _, err := m.hdr.sub(1)
	if err != nil {
		return err
	}
	l, err := newBatchLoader(batch, m.body)
	if err != nil {
		return err
	}
	d, err := l.load(vt, nil)
	if err != nil {
		return fmt.Errorf("dictionary %d: %w", id, err)
	}
	if err := checkArray(array.MakeFromData(d), 1); err != nil {
		d.Release()
		return fmt.Errorf("arrow: dictionary %d: %w", id, err)
	}
	if old, ok := z.dicts[id]; ok {
		old.Release()
	}
	z.dicts[id] = d
	return nil
}

func (z *zcRecords) loadRecord(m zcMessage) (arrow.Record, error) {
	l, err := newBatchLoader(m.hdr, m.body)
	if err != nil {
		return nil, err
	}
	cols := make([]arrow.Array, 0, z.schema.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for k, f := range z.schema.Fields() {
		var dict arrow.ArrayData
		if id := z.dictID[k]; id >= 0 {
			if dict = z.dicts[id]; dict == nil {
				return nil, fmt.Errorf("arrow: column %q: dictionary %d not found", f.Name, id)
			}
		}
		d, err := l.load(f.Type, dict)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", f.Name, err)
		}
		if d.Len() != int(l.length) {
			d.Release()
			return nil, fmt.Errorf("arrow: column %q has %d rows, the batch %d", f.Name, d.Len(), l.length)
		}
		cols = append(cols, array.MakeFromData(d))
		d.Release()
	}
	return array.NewRecord(z.schema, cols, l.length), nil
}

// oneMessage is a MessageReader of one message (the schema).
type oneMessage struct {
	msg  *ipc.Message
	done bool
}

func (o *oneMessage) Message() (*ipc.Message, error) {
	if o.done {
		return nil, io.EOF
	}
	o.done = true
	return o.msg, nil
}
func (o *oneMessage) Retain()  {}
func (o *oneMessage) Release() { o.msg.Release() }
