// Package varint decodes the compact binary encodings of dpsurv's state
// snapshots (histogram cells, patient tables, tree counters): unsigned and
// signed varints (encoding/binary's format) and little-endian 64-bit words,
// read from a byte slice with the first error kept. It is the one decoder
// those formats share; encoders use binary.AppendUvarint/AppendVarint.
//
// Contract: a Decoder never panics and never reads past its slice. After
// the first error every read returns 0 and Err keeps that error: io.EOF when
// a read starts at the end of the data, io.ErrUnexpectedEOF when a value is
// cut short, ErrOverflow when a varint does not fit 64 bits (the errors of
// binary.ReadUvarint and binary.ReadVarint).
package varint

import (
	"encoding/binary"
	"errors"
	"io"
)

// ErrOverflow reports a varint longer than 64 bits.
var ErrOverflow = errors.New("binary: varint overflows a 64-bit integer")

// Decoder reads values from a byte slice.
type Decoder struct {
	b   []byte
	err error
}

// NewDecoder reads b (not copied).
func NewDecoder(b []byte) *Decoder { return &Decoder{b: b} }

// Err is the first error met, or nil.
func (d *Decoder) Err() error { return d.err }

// Len is the number of unread bytes.
func (d *Decoder) Len() int { return len(d.b) }

func (d *Decoder) fail(n int) {
	switch {
	case len(d.b) == 0:
		d.err = io.EOF
	case n == 0:
		d.err = io.ErrUnexpectedEOF
	default:
		d.err = ErrOverflow
	}
}

// Uvarint reads an unsigned varint.
func (d *Decoder) Uvarint() uint64 { return next(d, binary.Uvarint) }

// Varint reads a signed (zig-zag) varint.
func (d *Decoder) Varint() int64 { return next(d, binary.Varint) }

// next reads one varint with read (binary.Uvarint or binary.Varint).
func next[T uint64 | int64](d *Decoder, read func([]byte) (T, int)) T {
	if d.err != nil {
		return 0
	}
	v, n := read(d.b)
	if n <= 0 {
		d.fail(n)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// Uint64 reads a little-endian 64-bit word.
func (d *Decoder) Uint64() uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		if len(d.b) == 0 {
			d.err = io.EOF
		} else {
			d.err = io.ErrUnexpectedEOF
		}
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}
