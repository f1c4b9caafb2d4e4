package schemas

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync/atomic"
	"unicode/utf8"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// EncodeIPC writes rec as one Arrow IPC stream (schema, dictionaries, one
// record batch, end-of-stream marker). The output is deterministic: the same
// record gives the same bytes.
func EncodeIPC(rec arrow.Record, mem memory.Allocator) ([]byte, error) {
	if rec == nil {
		return nil, errors.New("schemas: encode ipc: nil record")
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	var buf bytes.Buffer
	buf.Grow(ipcSizeHint(rec))
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(mem))
	if err := w.Write(rec); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("schemas: encode ipc: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("schemas: encode ipc: %w", err)
	}
	return buf.Bytes(), nil
}

// ipcSizeHint is about the size of rec's IPC stream: its columns' bytes
// (as sliced: a slice of a record counts only its rows), and room for the
// schema, the dictionaries and the message headers, so that the encoder's
// buffer is allocated once.
func ipcSizeHint(rec arrow.Record) int {
	size := 1024
	meta := func(m arrow.Metadata) {
		for i, k := range m.Keys() {
			size += len(k) + len(m.Values()[i]) + 16
		}
	}
	meta(rec.Schema().Metadata())
	for _, f := range rec.Schema().Fields() {
		size += len(f.Name) + 64
		meta(f.Metadata)
	}
	for _, c := range rec.Columns() {
		size += arraySizeHint(c)
	}
	return size
}

func arraySizeHint(a arrow.Array) int {
	n := a.Len()
	size := 64 + (n+7)/8 // buffer headers and padding, validity bitmap
	switch a := a.(type) {
	case *array.String:
		offs := a.ValueOffsets()
		size += 4 * len(offs)
		if len(offs) > 0 {
			size += int(offs[len(offs)-1] - offs[0])
		}
	case *array.Dictionary:
		size += 256 + arraySizeHint(a.Indices()) + arraySizeHint(a.Dictionary())
	default:
		if fw, ok := a.DataType().(arrow.FixedWidthDataType); ok {
			size += (n*fw.BitWidth() + 7) / 8
		} else {
			for _, b := range a.Data().Buffers() {
				if b != nil {
					size += b.Len()
				}
			}
		}
	}
	return size
}

// DecodeIPCRecords reads every record batch of an IPC stream without
// validation (for consumers of the sanitized and fit topics, and tests). The
// caller releases the records. Malformed input gives an error, never a panic;
// decoded memory is bounded as in DecodeIPC (DefaultMaxDecodeBytes). On the
// error path buffers allocated before the failure may not be returned to
// mem (use a Go allocator for untrusted input).
func DecodeIPCRecords(data []byte, mem memory.Allocator) (recs []arrow.Record, err error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("schemas: decode ipc: %v", p)
		}
		if err != nil {
			for _, r := range recs {
				r.Release()
			}
			recs = nil
		}
	}()
	if _, err := prescanIPC(data); err != nil {
		return nil, fmt.Errorf("schemas: decode ipc: %w", err)
	}
	lim := &limitAllocator{mem: mem, max: decodeBound(DefaultMaxDecodeBytes, len(data))}
	r, err := ipc.NewReader(bytes.NewReader(data), ipc.WithAllocator(lim))
	if err != nil {
		return nil, fmt.Errorf("schemas: decode ipc: %w", err)
	}
	defer r.Release()
	for r.Next() {
		rec := r.Record()
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := r.Err(); err != nil {
		return recs, fmt.Errorf("schemas: decode ipc: %w", err)
	}
	return recs, nil
}

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
	lim := &limitAllocator{mem: memory.NewGoAllocator(), max: decodeBound(v.maxDecode, len(data))}
	r, sum, err := openIPC(data, lim, lim.max)
	declared = sum.rows
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
	dicts := &dictBudget{seen: map[arrow.ArrayData]bool{}}
	defer func() {
		for _, rec := range ins {
			rec.Release()
		}
	}()
	for r.Next() {
		rec := r.Record()
		rec.Retain()
		ins = append(ins, rec)
		if err := checkLengths(rec); err != nil {
			return whole(ReasonUndecodable, err.Error())
		}
		if err := checkRecord(rec, p.used()); err != nil {
			return whole(ReasonUndecodable, err.Error())
		}
		if err := dictCost(rec, dicts, lim.max); err != nil {
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
		// checkRecord ran on rec as it was read (above)
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

// ipcSummary is what a stream's message headers declare: its record
// batches' rows and its dictionary batches' entries (summed).
type ipcSummary struct {
	rows, dictEntries int64
}

// prescanIPC walks the message framing of an IPC stream and checks that
// every metadata and body length fits in the data, before the Arrow reader
// allocates buffers of those lengths. It returns the rows and dictionary
// entries the batch headers declare.
func prescanIPC(data []byte) (sum ipcSummary, err error) {
	defer func() {
		if err != nil {
			sum = ipcSummary{}
		}
	}()
	pos := 0
	msgs := 0
	for {
		rest := len(data) - pos
		if rest == 0 {
			if msgs == 0 {
				return sum, errors.New("empty message")
			}
			return sum, nil
		}
		if rest < 4 {
			return sum, errors.New("truncated message prefix")
		}
		cid := binary.LittleEndian.Uint32(data[pos:])
		pos += 4
		var mlen uint32
		switch cid {
		case 0:
			if msgs == 0 {
				return sum, errors.New("stream has no schema")
			}
			return sum, trailing(data[pos:])
		case 0xFFFFFFFF:
			if len(data)-pos < 4 {
				return sum, errors.New("truncated message length")
			}
			mlen = binary.LittleEndian.Uint32(data[pos:])
			pos += 4
			if mlen == 0 {
				if msgs == 0 {
					return sum, errors.New("stream has no schema")
				}
				return sum, trailing(data[pos:])
			}
		default:
			mlen = cid // pre-0.15 framing
		}
		if mlen > uint32(len(data)-pos) || mlen > 1<<30 {
			return sum, fmt.Errorf("message %d: metadata length %d exceeds the %d bytes left", msgs, mlen, len(data)-pos)
		}
		meta := data[pos : pos+int(mlen)]
		pos += int(mlen)
		body, err := verifyMessage(meta)
		if err != nil {
			return sum, fmt.Errorf("message %d: %w", msgs, err)
		}
		if body < 0 || body > int64(len(data)-pos) {
			return sum, fmt.Errorf("message %d: body length %d exceeds the %d bytes left", msgs, body, len(data)-pos)
		}
		if ht, n, err := batchLength(meta); err == nil && n > 0 && n < 1<<40 {
			switch ht {
			case fbMsgRecordBatch:
				sum.rows += n
			case fbMsgDictionary:
				sum.dictEntries += n
			}
		}
		pos += int(body)
		msgs++
	}
}

// trailing rejects bytes after the end-of-stream marker: they are either a
// corrupted length or a second, unrelated payload.
func trailing(rest []byte) error {
	if len(rest) > 0 {
		return fmt.Errorf("%d bytes after the end-of-stream marker", len(rest))
	}
	return nil
}

// flatbufBodyLength verifies the flatbuffer-encoded message metadata (see
// verifyMessage) and returns Message.bodyLength.
func flatbufBodyLength(b []byte) (int64, error) {
	return verifyMessage(b)
}

// checkDicts refuses dictionaries whose declared entries alone, at 4 bytes
// an entry (the offset each takes as text, a floor of what reading them
// costs), exceed the decode bound: before Arrow decodes (or decompresses)
// any of them.
func (s ipcSummary) checkDicts(max int64) error {
	if 4*s.dictEntries > max {
		return fmt.Errorf("the dictionary batches declare %d entries, over the decode bound of %d bytes (input.max_decoded_bytes) at 4 bytes an entry", s.dictEntries, max)
	}
	return nil
}

// decodeBound is the decode memory bound for a message of n bytes.
func decodeBound(max int64, n int) int64 { return min(max, 1<<20+256*int64(n)) }

// errDecodeLimit is the panic value of limitAllocator; the Arrow reader
// recovers it into an error.
var errDecodeLimit = errors.New("decoded message exceeds the decode memory bound")

// limitAllocator bounds the bytes outstanding at once.
type limitAllocator struct {
	mem  memory.Allocator
	max  int64
	used atomic.Int64
}

func (l *limitAllocator) Allocate(size int) []byte {
	if size < 0 || l.used.Add(int64(size)) > l.max {
		l.used.Add(-int64(size))
		panic(errDecodeLimit)
	}
	return l.mem.Allocate(size)
}

func (l *limitAllocator) Reallocate(size int, b []byte) []byte {
	delta := int64(size) - int64(len(b))
	if size < 0 || l.used.Add(delta) > l.max {
		l.used.Add(-delta)
		panic(errDecodeLimit)
	}
	return l.mem.Reallocate(size, b)
}

func (l *limitAllocator) Free(b []byte) {
	l.used.Add(-int64(len(b)))
	l.mem.Free(b)
}

// verifyingReader is an ipc.MessageReader that checks each message's framing
// and flatbuffer metadata (verifyMessage) and its lengths against the bytes
// left before Arrow sees it; used for files, whose size is known.
type verifyingReader struct {
	r    io.Reader
	left int64
	mem  memory.Allocator
	msg  *ipc.Message
	refs atomic.Int64
	n    int
}

func newVerifyingReader(r io.Reader, size int64, mem memory.Allocator) *verifyingReader {
	vr := &verifyingReader{r: r, left: size, mem: mem}
	vr.refs.Store(1)
	return vr
}

func (vr *verifyingReader) Retain() { vr.refs.Add(1) }

func (vr *verifyingReader) Release() {
	if vr.refs.Add(-1) == 0 && vr.msg != nil {
		vr.msg.Release()
		vr.msg = nil
	}
}

func (vr *verifyingReader) read(n int64) ([]byte, error) {
	if n < 0 || n > vr.left {
		return nil, fmt.Errorf("message %d: length %d exceeds the %d bytes left", vr.n, n, vr.left)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(vr.r, b); err != nil {
		return nil, fmt.Errorf("message %d: %w", vr.n, err)
	}
	vr.left -= n
	return b, nil
}

// Message returns the next message, io.EOF at the end of the stream.
func (vr *verifyingReader) Message() (*ipc.Message, error) {
	if vr.msg != nil {
		vr.msg.Release()
		vr.msg = nil
	}
	if vr.left == 0 {
		return nil, io.EOF
	}
	pre, err := vr.read(4)
	if err != nil {
		return nil, err
	}
	mlen := binary.LittleEndian.Uint32(pre)
	if mlen == 0xFFFFFFFF {
		if pre, err = vr.read(4); err != nil {
			return nil, err
		}
		mlen = binary.LittleEndian.Uint32(pre)
	}
	if mlen == 0 {
		return nil, io.EOF
	}
	meta, err := vr.read(int64(mlen))
	if err != nil {
		return nil, err
	}
	bodyLen, err := verifyMessage(meta)
	if err != nil {
		return nil, fmt.Errorf("message %d: %w", vr.n, err)
	}
	if bodyLen < 0 || bodyLen > vr.left {
		return nil, fmt.Errorf("message %d: body length %d exceeds the %d bytes left", vr.n, bodyLen, vr.left)
	}
	body := memory.NewResizableBuffer(vr.mem)
	defer body.Release()
	body.Resize(int(bodyLen))
	if _, err := io.ReadFull(vr.r, body.Bytes()); err != nil {
		return nil, fmt.Errorf("message %d: body: %w", vr.n, err)
	}
	vr.left -= bodyLen
	vr.n++
	vr.msg = ipc.NewMessage(memory.NewBufferBytes(meta), body)
	return vr.msg, nil
}

// sliceMessages is an ipc.MessageReader over an IPC stream held in memory
// that prescanIPC has verified (framing, flatbuffers, every length within
// the data): each message's metadata and body are slices of data, not
// copies (the Arrow reader then copies, or decompresses, each buffer out of
// the body into its allocator).
type sliceMessages struct {
	data []byte
	pos  int
	msg  *ipc.Message
}

func (s *sliceMessages) Retain()  {}
func (s *sliceMessages) Release() {}

// Message returns the next message, io.EOF at the end-of-stream marker or
// the end of the data.
func (s *sliceMessages) Message() (*ipc.Message, error) {
	if s.msg != nil {
		s.msg.Release()
		s.msg = nil
	}
	next := func(n int) ([]byte, error) {
		if n < 0 || n > len(s.data)-s.pos {
			return nil, fmt.Errorf("truncated message at byte %d", s.pos)
		}
		b := s.data[s.pos : s.pos+n : s.pos+n]
		s.pos += n
		return b, nil
	}
	if s.pos == len(s.data) {
		return nil, io.EOF
	}
	pre, err := next(4)
	if err != nil {
		return nil, err
	}
	mlen := binary.LittleEndian.Uint32(pre)
	if mlen == 0xFFFFFFFF {
		if pre, err = next(4); err != nil {
			return nil, err
		}
		mlen = binary.LittleEndian.Uint32(pre)
	}
	if mlen == 0 {
		return nil, io.EOF
	}
	if mlen > 1<<30 {
		return nil, fmt.Errorf("message metadata length %d", mlen)
	}
	meta, err := next(int(mlen))
	if err != nil {
		return nil, err
	}
	bodyLen, err := verifyMessage(meta)
	if err != nil {
		return nil, err
	}
	if bodyLen > int64(len(s.data)-s.pos) {
		return nil, fmt.Errorf("message body length %d exceeds the %d bytes left", bodyLen, len(s.data)-s.pos)
	}
	body, err := next(int(bodyLen))
	if err != nil {
		return nil, err
	}
	s.msg = ipc.NewMessage(memory.NewBufferBytes(meta), memory.NewBufferBytes(body))
	return s.msg, nil
}

// ipcRecords is what DecodeIPC reads a message through: an IPC stream
// reader, or a reader of the IPC file format.
type ipcRecords interface {
	Schema() *arrow.Schema
	Next() bool
	Record() arrow.Record
	Err() error
	Release()
}

// openIPC verifies a message value and opens it. A producer may send either
// Arrow format: the stream format (what dpsurv writes), or the file format
// (Feather v2, "ARROW1" ... footer ... "ARROW1", as pyarrow.feather and
// tableToIPC(t, 'file') in JS write it), which is read through its footer.
// Every flatbuffer the Arrow reader will follow is verified first (see
// fbverify.go): the stream's messages, or the file's footer and each message
// a footer block points to.
func openIPC(data []byte, mem memory.Allocator, max int64) (ipcRecords, ipcSummary, error) {
	var sum ipcSummary
	m := len(arrowFileMagic)
	if len(data) < m || !bytes.Equal(data[:m], arrowFileMagic) {
		sum, err := prescanIPC(data)
		if err != nil {
			return nil, sum, fmt.Errorf("arrow ipc: %w%s", err, notArrowHint(data))
		}
		// Dictionaries count against the decode bound before Arrow
		// decodes them: 4 bytes per declared entry (its offset as text)
		// is a floor of what they take.
		if err := sum.checkDicts(max); err != nil {
			return nil, sum, fmt.Errorf("arrow ipc: %w", err)
		}
		r, err := ipc.NewReaderFromMessageReader(&sliceMessages{data: data}, ipc.WithAllocator(mem))
		return r, sum, err
	}
	const errFile = "arrow ipc file (feather)"
	if len(data) < 2*m+2+4 || !bytes.Equal(data[len(data)-m:], arrowFileMagic) {
		return nil, sum, fmt.Errorf("%s: truncated: it does not end with the ARROW1 magic", errFile)
	}
	footerLen := int64(int32(binary.LittleEndian.Uint32(data[len(data)-m-4:])))
	end := int64(len(data)) - int64(m) - 4
	if footerLen <= 0 || footerLen > end-8 {
		return nil, sum, fmt.Errorf("%s: corrupt footer length", errFile)
	}
	blocks, err := verifyFooter(data[end-footerLen : end])
	if err != nil {
		return nil, sum, fmt.Errorf("%s: footer: %w", errFile, err)
	}
	for _, b := range blocks {
		if b.offset < 8 || b.meta < 8 || b.body < 0 || b.offset+int64(b.meta) > end-footerLen || b.body > end-footerLen-b.offset-int64(b.meta) {
			return nil, sum, fmt.Errorf("%s: a footer block lies outside the file", errFile)
		}
		meta, err := prescanBlock(data[b.offset:b.offset+int64(b.meta)+b.body], b.body)
		if err != nil {
			return nil, sum, fmt.Errorf("%s: %w", errFile, err)
		}
		if ht, n, err := batchLength(meta); err == nil && n > 0 && n < 1<<40 {
			switch ht {
			case fbMsgRecordBatch:
				sum.rows += n
			case fbMsgDictionary:
				sum.dictEntries += n
			}
		}
	}
	if err := sum.checkDicts(max); err != nil {
		return nil, sum, fmt.Errorf("%s: %w", errFile, err)
	}
	fr, err := ipc.NewFileReader(bytes.NewReader(data), ipc.WithAllocator(mem))
	if err != nil {
		return nil, sum, fmt.Errorf("%s: %w", errFile, err)
	}
	return &fileRecords{fr: fr, n: fr.NumRecords()}, sum, nil
}

// prescanBlock verifies the one message (metadata prefix, flatbuffer, body)
// a footer block points to.
func prescanBlock(b []byte, body int64) ([]byte, error) {
	pos := 0
	if len(b) >= 4 && binary.LittleEndian.Uint32(b) == 0xFFFFFFFF {
		pos = 4
	}
	if len(b)-pos < 4 {
		return nil, errors.New("truncated message in block")
	}
	mlen := int(int32(binary.LittleEndian.Uint32(b[pos:])))
	pos += 4
	if mlen <= 0 || mlen > len(b)-pos {
		return nil, errors.New("message length exceeds its block")
	}
	meta := b[pos : pos+mlen]
	bl, err := verifyMessage(meta)
	if err != nil {
		return nil, err
	}
	if bl != body {
		return nil, errors.New("message body length disagrees with its footer block")
	}
	return meta, nil
}

type fileRecords struct {
	fr   *ipc.FileReader
	i, n int
	rec  arrow.Record
	err  error
}

func (f *fileRecords) Schema() *arrow.Schema { return f.fr.Schema() }
func (f *fileRecords) Record() arrow.Record  { return f.rec }
func (f *fileRecords) Err() error            { return f.err }
func (f *fileRecords) Release()              { f.fr.Close() }
func (f *fileRecords) Next() bool {
	if f.i >= f.n || f.err != nil {
		return false
	}
	f.rec, f.err = f.fr.Record(f.i)
	f.i++
	return f.err == nil
}

// notArrowHint names the likely cause when bytes on an Arrow topic are not
// Arrow IPC at all: a producer sending JSON or CSV to a topic configured as
// input.format: arrow.
func notArrowHint(data []byte) string {
	t := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(t) == 0 {
		return ""
	}
	switch t[0] {
	case '{', '[':
		return "; the bytes look like JSON: set input.format: json for this topic, or send Arrow IPC"
	}
	line := t
	if k := bytes.IndexByte(line, '\n'); k >= 0 {
		line = line[:k]
	}
	if bytes.IndexByte(line, ',') >= 0 && utf8.Valid(line) && bytes.IndexFunc(line, func(r rune) bool { return r < 0x20 && r != '\t' && r != '\r' }) < 0 {
		return "; the bytes look like CSV text: the service reads Arrow IPC (input.format: arrow) or JSON (input.format: json), convert CSV before producing"
	}
	return ""
}
