package varint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"testing"
)

// TestDecoderMatchesEncodingBinary reads back what encoding/binary wrote and
// compares every error with binary.ReadUvarint/ReadVarint on the same bytes.
func TestDecoderMatchesEncodingBinary(t *testing.T) {
	var b []byte
	us := []uint64{0, 1, 127, 128, 300, math.MaxUint32, math.MaxUint64}
	is := []int64{0, -1, 1, -64, 64, math.MinInt64, math.MaxInt64}
	for i := range us {
		b = binary.AppendUvarint(b, us[i])
		b = binary.AppendVarint(b, is[i])
		b = binary.LittleEndian.AppendUint64(b, us[i])
	}
	d := NewDecoder(b)
	for i := range us {
		if u, v, w := d.Uvarint(), d.Varint(), d.Uint64(); u != us[i] || v != is[i] || w != us[i] {
			t.Fatalf("value %d: got (%d, %d, %d), want (%d, %d, %d)", i, u, v, w, us[i], is[i], us[i])
		}
	}
	if d.Err() != nil || d.Len() != 0 {
		t.Fatalf("err %v, %d bytes left", d.Err(), d.Len())
	}

	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, io.EOF},
		{"cut short", []byte{0x80, 0x80}, io.ErrUnexpectedEOF},
		{"overflow", bytes.Repeat([]byte{0xff}, 11), ErrOverflow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, refU := binary.ReadUvarint(bytes.NewReader(tc.in))
			_, refI := binary.ReadVarint(bytes.NewReader(tc.in))
			du := NewDecoder(tc.in)
			if du.Uvarint(); !errors.Is(du.Err(), tc.want) || du.Err().Error() != refU.Error() {
				t.Errorf("Uvarint error %v, want %v (binary.ReadUvarint: %v)", du.Err(), tc.want, refU)
			}
			di := NewDecoder(tc.in)
			if di.Varint(); !errors.Is(di.Err(), tc.want) || di.Err().Error() != refI.Error() {
				t.Errorf("Varint error %v, want %v (binary.ReadVarint: %v)", di.Err(), tc.want, refI)
			}
			if du.Uvarint() != 0 || du.Err() == nil {
				t.Errorf("a read after an error must return 0 and keep the error")
			}
		})
	}
	if d := NewDecoder([]byte{1, 2, 3}); d.Uint64() != 0 || !errors.Is(d.Err(), io.ErrUnexpectedEOF) {
		t.Errorf("short word: err %v", d.Err())
	}
}
