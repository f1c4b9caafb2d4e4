package arrowipc

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The Arrow Go IPC reader trusts the flatbuffer metadata: vector lengths
// size its allocations (make([]Field, n)) and child references drive its
// recursion, so a forged length can exhaust memory and a cyclic reference can
// overflow the stack — both fatal, not recoverable panics. verifyMessage
// checks, before the reader sees a message, that every table, vector and
// string the reader follows lies inside the metadata buffer, that field
// nesting is shallow and acyclic, and that no type is used whose metadata
// drives further unchecked allocations (unions, views, run-end encoding).

const (
	fbMaxDepth  = 32
	fbMaxFields = 4096
)

var errFB = errors.New("corrupt message metadata")

type fbuf struct {
	b      []byte
	fields int
}

type fbTable struct {
	f     *fbuf
	pos   int
	vt    int
	vtLen int
}

func (f *fbuf) u16(off int) (int, bool) {
	if off < 0 || off+2 > len(f.b) {
		return 0, false
	}
	return int(binary.LittleEndian.Uint16(f.b[off:])), true
}

func (f *fbuf) u32(off int) (uint32, bool) {
	if off < 0 || off+4 > len(f.b) {
		return 0, false
	}
	return binary.LittleEndian.Uint32(f.b[off:]), true
}

func (f *fbuf) table(pos int) (fbTable, error) {
	soff, ok := f.u32(pos)
	if !ok {
		return fbTable{}, fmt.Errorf("%w: table out of bounds", errFB)
	}
	vt := pos - int(int32(soff))
	vtLen, ok := f.u16(vt)
	if !ok || vtLen < 4 || vtLen%2 != 0 || vt+vtLen > len(f.b) {
		return fbTable{}, fmt.Errorf("%w: vtable out of bounds", errFB)
	}
	tabLen, _ := f.u16(vt + 2)
	if pos+tabLen > len(f.b) {
		return fbTable{}, fmt.Errorf("%w: table extends beyond metadata", errFB)
	}
	return fbTable{f: f, pos: pos, vt: vt, vtLen: vtLen}, nil
}

// field returns the absolute position of field k (0 when absent) after
// checking that size bytes fit there.
func (t fbTable) field(k, size int) (int, error) {
	slot := 4 + 2*k
	if slot+2 > t.vtLen {
		return 0, nil
	}
	fo, _ := t.f.u16(t.vt + slot)
	if fo == 0 {
		return 0, nil
	}
	at := t.pos + fo
	if at+size > len(t.f.b) {
		return 0, fmt.Errorf("%w: field %d out of bounds", errFB, k)
	}
	return at, nil
}

func (t fbTable) u8(k int) (int, error) {
	at, err := t.field(k, 1)
	if err != nil || at == 0 {
		return 0, err
	}
	return int(t.f.b[at]), nil
}

func (t fbTable) i64(k int) (int64, error) {
	at, err := t.field(k, 8)
	if err != nil || at == 0 {
		return 0, err
	}
	return int64(binary.LittleEndian.Uint64(t.f.b[at:])), nil
}

// ref follows the offset stored in field k; 0 when absent.
func (t fbTable) ref(k int) (int, error) {
	at, err := t.field(k, 4)
	if err != nil || at == 0 {
		return 0, err
	}
	uo, _ := t.f.u32(at)
	target := at + int(uo)
	if int(uo) < 0 || target >= len(t.f.b) {
		return 0, fmt.Errorf("%w: reference of field %d out of bounds", errFB, k)
	}
	return target, nil
}

func (t fbTable) sub(k int) (fbTable, bool, error) {
	p, err := t.ref(k)
	if err != nil || p == 0 {
		return fbTable{}, false, err
	}
	st, err := t.f.table(p)
	return st, err == nil, err
}

// vector checks the vector in field k (elements of elem bytes) and returns
// the position of its first element and its length.
func (t fbTable) vector(k, elem int) (int, int, error) {
	p, err := t.ref(k)
	if err != nil || p == 0 {
		return 0, 0, err
	}
	n, ok := t.f.u32(p)
	if !ok || int64(n)*int64(elem) > int64(len(t.f.b)-p-4) {
		return 0, 0, fmt.Errorf("%w: vector of field %d out of bounds", errFB, k)
	}
	return p + 4, int(n), nil
}

// tables checks a vector of tables and calls fn on each.
func (t fbTable) tables(k int, fn func(fbTable) error) error {
	start, n, err := t.vector(k, 4)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		at := start + 4*i
		uo, _ := t.f.u32(at)
		st, err := t.f.table(at + int(uo))
		if err != nil {
			return err
		}
		if err := fn(st); err != nil {
			return err
		}
	}
	return nil
}

func (t fbTable) str(k int) error {
	_, _, err := t.vector(k, 1)
	return err
}

func verifyKeyValues(t fbTable, k int) error {
	return t.tables(k, func(kv fbTable) error {
		if err := kv.str(0); err != nil {
			return err
		}
		return kv.str(1)
	})
}

// Flatbuffer type codes (arrow format Schema.fbs).
const (
	fbMsgSchema = 1
	fbUnion     = 14
	fbRunEnd    = 22
)

func verifyField(t fbTable, depth int) error {
	t.f.fields++
	if depth > fbMaxDepth || t.f.fields > fbMaxFields {
		return fmt.Errorf("%w: field nesting too deep or too many fields", errFB)
	}
	if err := t.str(0); err != nil { // name
		return err
	}
	tt, err := t.u8(2)
	if err != nil {
		return err
	}
	if tt == fbUnion || tt >= fbRunEnd {
		return fmt.Errorf("unsupported arrow type code %d in schema", tt)
	}
	if _, _, err := t.sub(3); err != nil { // type table
		return err
	}
	if d, ok, err := t.sub(4); err != nil { // dictionary encoding
		return err
	} else if ok {
		if _, _, err := d.sub(1); err != nil { // index type
			return err
		}
	}
	if err := t.tables(5, func(c fbTable) error { return verifyField(c, depth+1) }); err != nil {
		return err
	}
	return verifyKeyValues(t, 6)
}

// verifyMessage verifies one Message flatbuffer and returns its body length.
func verifyMessage(b []byte) (int64, error) {
	f := &fbuf{b: b}
	root, ok := f.u32(0)
	if !ok {
		return 0, fmt.Errorf("%w: no root", errFB)
	}
	msg, err := f.table(int(root))
	if err != nil {
		return 0, err
	}
	ht, err := msg.u8(1)
	if err != nil {
		return 0, err
	}
	body, err := msg.i64(3)
	if err != nil {
		return 0, err
	}
	if err := verifyKeyValues(msg, 4); err != nil {
		return 0, err
	}
	hdr, present, err := msg.sub(2)
	if err != nil {
		return 0, err
	}
	if !present {
		return 0, fmt.Errorf("%w: message has no header", errFB)
	}
	if ht == fbMsgSchema {
		if err := verifySchemaTable(hdr); err != nil {
			return 0, err
		}
	}
	return body, nil
}

// verifySchemaTable checks a Schema table (fields, metadata, features).
func verifySchemaTable(hdr fbTable) error {
	if err := hdr.tables(1, func(fd fbTable) error { return verifyField(fd, 0) }); err != nil {
		return err
	}
	if err := verifyKeyValues(hdr, 2); err != nil {
		return err
	}
	_, _, err := hdr.vector(3, 8)
	return err
}

// fbBlock is a footer Block: where one message of an IPC file lies.
type fbBlock struct {
	offset, body int64
	meta         int32
}

// verifyFooter verifies the Footer flatbuffer of an Arrow IPC file (its
// schema as verifyMessage does, its block vectors in bounds) and returns
// the dictionary and record batch blocks.
func verifyFooter(b []byte) (blocks []fbBlock, err error) {
	f := &fbuf{b: b}
	root, ok := f.u32(0)
	if !ok {
		return nil, fmt.Errorf("%w: no footer root", errFB)
	}
	ft, err := f.table(int(root))
	if err != nil {
		return nil, err
	}
	sc, present, err := ft.sub(1)
	if err != nil {
		return nil, err
	}
	if !present {
		return nil, fmt.Errorf("%w: footer has no schema", errFB)
	}
	if err := verifySchemaTable(sc); err != nil {
		return nil, err
	}
	if err := verifyKeyValues(ft, 4); err != nil {
		return nil, err
	}
	for _, k := range []int{2, 3} { // dictionaries, record batches
		start, n, err := ft.vector(k, 24)
		if err != nil {
			return nil, err
		}
		for i := 0; i < n; i++ {
			at := start + 24*i
			blocks = append(blocks, fbBlock{
				offset: int64(binary.LittleEndian.Uint64(b[at:])),
				meta:   int32(binary.LittleEndian.Uint32(b[at+8:])),
				body:   int64(binary.LittleEndian.Uint64(b[at+16:])),
			})
		}
	}
	return blocks, nil
}

// batchLength returns the header type of a verified Message flatbuffer
// and, for a record batch, its row count, for a dictionary batch its
// number of entries (0 otherwise or when absent). It reads what the
// producer declares, before any buffer is decoded.
func batchLength(b []byte) (ht int, length int64, err error) {
	f := &fbuf{b: b}
	root, ok := f.u32(0)
	if !ok {
		return 0, 0, fmt.Errorf("%w: no root", errFB)
	}
	msg, err := f.table(int(root))
	if err != nil {
		return 0, 0, err
	}
	if ht, err = msg.u8(1); err != nil {
		return 0, 0, err
	}
	hdr, present, err := msg.sub(2)
	if err != nil || !present {
		return ht, 0, err
	}
	switch ht {
	case fbMsgRecordBatch:
		length, err = hdr.i64(0)
	case fbMsgDictionary:
		rb, present, serr := hdr.sub(1)
		if serr != nil || !present {
			return ht, 0, serr
		}
		length, err = rb.i64(0)
	}
	return ht, length, err
}
