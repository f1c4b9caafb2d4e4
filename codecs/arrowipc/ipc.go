package arrowipc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"unicode/utf8"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// Encode writes rec as one Arrow IPC stream (schema, dictionaries, one
// record batch, end-of-stream marker). The output is deterministic: the same
// record gives the same bytes.
func Encode(rec arrow.Record, mem memory.Allocator) ([]byte, error) {
	if rec == nil {
		return nil, errors.New("arrowipc: encode: nil record")
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	var buf bytes.Buffer
	buf.Grow(ipcSizeHint(rec))
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(mem))
	if err := w.Write(rec); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("arrowipc: encode: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("arrowipc: encode: %w", err)
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

// DecodeRecords reads every record batch of an IPC stream without
// validation (for consumers of the sanitized and fit topics, and tests). The
// caller releases the records. Malformed input gives an error, never a panic;
// decoded memory is bounded as in schemas' Validator.DecodeIPC
// (DefaultMaxDecodeBytes). On the
// error path buffers allocated before the failure may not be returned to
// mem (use a Go allocator for untrusted input).
func DecodeRecords(data []byte, mem memory.Allocator) (recs []arrow.Record, err error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("arrowipc: decode: %v", p)
		}
		if err != nil {
			for _, r := range recs {
				r.Release()
			}
			recs = nil
		}
	}()
	if _, err := prescanIPC(data); err != nil {
		return nil, fmt.Errorf("arrowipc: decode: %w", err)
	}
	lim := &limitAllocator{mem: mem, max: DecodeBound(DefaultMaxDecodeBytes, len(data))}
	r, err := ipc.NewReader(bytes.NewReader(data), ipc.WithAllocator(lim))
	if err != nil {
		return nil, fmt.Errorf("arrowipc: decode: %w", err)
	}
	defer r.Release()
	for r.Next() {
		rec := r.Record()
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := r.Err(); err != nil {
		return recs, fmt.Errorf("arrowipc: decode: %w", err)
	}
	return recs, nil
}

// Summary is what a stream's message headers declare: its record
// batches' rows and its dictionary batches' entries (summed).
type Summary struct {
	Rows, DictEntries int64
}

// prescanIPC walks the message framing of an IPC stream and checks that
// every metadata and body length fits in the data, before the Arrow reader
// allocates buffers of those lengths. It returns the rows and dictionary
// entries the batch headers declare.
func prescanIPC(data []byte) (sum Summary, err error) {
	defer func() {
		if err != nil {
			sum = Summary{}
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
		meta, body, bodyAt, err := verifiedMessage(data, pos, int(mlen), msgs)
		if err != nil {
			return sum, err
		}
		sum.count(meta)
		pos = bodyAt + int(body)
		msgs++
	}
}

// verifiedMessage is message n of a stream: its flatbuffer metadata, the
// mlen bytes at pos (already checked to fit), verified (verifyMessage),
// and its body length, checked against the bytes left, with the offset at
// which the body starts.
func verifiedMessage(data []byte, pos, mlen, n int) (meta []byte, bodyLen int64, bodyAt int, err error) {
	meta = data[pos : pos+mlen]
	pos += mlen
	bodyLen, err = verifyMessage(meta)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("message %d: %w", n, err)
	}
	if bodyLen < 0 || bodyLen > int64(len(data)-pos) {
		return nil, 0, 0, fmt.Errorf("message %d: body length %d exceeds the %d bytes left", n, bodyLen, len(data)-pos)
	}
	return meta, bodyLen, pos, nil
}

// trailing rejects bytes after the end-of-stream marker: they are either a
// corrupted length or a second, unrelated payload.
func trailing(rest []byte) error {
	if len(rest) > 0 {
		return fmt.Errorf("%d bytes after the end-of-stream marker", len(rest))
	}
	return nil
}

// BodyLength verifies the flatbuffer-encoded metadata of one IPC message
// (see verifyMessage) and returns Message.bodyLength: for tools and tests
// that walk a stream's framing.
func BodyLength(b []byte) (int64, error) {
	return verifyMessage(b)
}

// checkDicts refuses dictionaries whose declared entries alone, at 4 bytes
// an entry (the offset each takes as text, a floor of what reading them
// costs), exceed the decode bound: before Arrow decodes (or decompresses)
// any of them.
// count adds the rows or dictionary entries a message declares in its
// metadata; a length that cannot be read, is not positive or is
// implausibly large (2^40 or more) is not counted.
func (s *Summary) count(meta []byte) {
	if ht, n, err := batchLength(meta); err == nil && n > 0 && n < 1<<40 {
		switch ht {
		case fbMsgRecordBatch:
			s.Rows += n
		case fbMsgDictionary:
			s.DictEntries += n
		}
	}
}

func (s Summary) checkDicts(max int64) error {
	if 4*s.DictEntries > max {
		return fmt.Errorf("the dictionary batches declare %d entries, over the decode bound of %d bytes (input.max_decoded_bytes) at 4 bytes an entry", s.DictEntries, max)
	}
	return nil
}

// DefaultMaxDecodeBytes bounds the memory one decode may allocate for the
// decoded message (protects against compression bombs and forged
// lengths). The effective bound is also at most 1 MiB + 256 x the message
// size (DecodeBound).
const DefaultMaxDecodeBytes = 256 << 20

// DecodeBound is the decode memory bound for a message of n bytes, given
// the configured bound max.
func DecodeBound(max int64, n int) int64 { return min(max, 1<<20+256*int64(n)) }

// errDecodeLimit is the panic value of limitAllocator; the Arrow reader
// recovers it into an error.
var errDecodeLimit = errors.New("decoded message exceeds the decode memory bound")

// NewLimitAllocator returns an allocator of mem's memory that panics with
// an error once more than max bytes are outstanding at once; Arrow's
// readers recover that panic into an error.
func NewLimitAllocator(mem memory.Allocator, max int64) memory.Allocator {
	return &limitAllocator{mem: mem, max: max}
}

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

// Records is what a message or file is read through: an IPC stream
// reader, a reader of the IPC file format, or the zero-copy loader.
type Records interface {
	Schema() *arrow.Schema
	Next() bool
	Record() arrow.Record
	Err() error
	Release()
}

// Open verifies a message value and opens it, its decoded buffers from
// mem (which should bound them: NewLimitAllocator), its dictionaries
// refused before decoding when their declared entries exceed max. A producer may send either
// Arrow format: the stream format (what dpsurv writes), or the file format
// (Feather v2, "ARROW1" ... footer ... "ARROW1", as pyarrow.feather and
// tableToIPC(t, 'file') in JS write it), which is read through its footer.
// Every flatbuffer the Arrow reader will follow is verified first (see
// fbverify.go): the stream's messages, or the file's footer and each message
// a footer block points to.
func Open(data []byte, mem memory.Allocator, max int64) (Records, Summary, error) {
	var sum Summary
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
		sum.count(meta)
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
