package arrowipc

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// checkArray refuses string columns whose offsets a reader would follow
// out of bounds, for 32- and 64-bit offsets alike.
func TestCheckArrayStringOffsets(t *testing.T) {
	data := []byte("abcdef")
	cases := []struct {
		name string
		offs []int64 // n+1 offsets for n values
		// short drops the last offset from the buffer
		short bool
		want  string
	}{
		{name: "valid", offs: []int64{0, 2, 2, 6}},
		{name: "too short", offs: []int64{0, 2, 2, 6}, short: true, want: "offsets too short"},
		{name: "negative", offs: []int64{-1, 2, 2, 6}, want: "negative offset"},
		{name: "decreasing", offs: []int64{0, 3, 2, 6}, want: "offsets decrease at 2"},
		{name: "beyond data", offs: []int64{0, 2, 2, 7}, want: "offsets beyond data"},
	}
	checked := 0 // malformed arrays the constructor let through
	for _, large := range []bool{false, true} {
		for _, tc := range cases {
			width, typ := 4, arrow.DataType(arrow.BinaryTypes.String)
			if large {
				width, typ = 8, arrow.BinaryTypes.LargeString
			}
			var ob []byte
			for _, o := range tc.offs {
				if large {
					ob = binary.LittleEndian.AppendUint64(ob, uint64(o))
				} else {
					ob = binary.LittleEndian.AppendUint32(ob, uint32(int32(o)))
				}
			}
			n := len(tc.offs) - 1
			if tc.short {
				ob = ob[:len(ob)-width]
			}
			d := array.NewData(typ, n, []*memory.Buffer{nil, memory.NewBufferBytes(ob), memory.NewBufferBytes(data)}, nil, 0, 0)
			arr := makeStringArray(t, d, tc.want != "")
			if arr == nil {
				d.Release()
				continue // the arrow constructor itself refused it
			}
			if tc.want != "" {
				checked++
			}
			err := checkArray(arr, 0)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("large=%v %s: %v", large, tc.name, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("large=%v %s: error %v, want %q", large, tc.name, err, tc.want)
			}
			arr.Release()
			d.Release()
		}
	}
	if checked == 0 {
		t.Fatal("every malformed array was refused by the arrow constructor: checkArray was not exercised")
	}
}

// makeStringArray builds the array of d, or nil where arrow's constructor
// panics on a malformed one (a refusal too).
func makeStringArray(t *testing.T, d arrow.ArrayData, malformed bool) (arr arrow.Array) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			if !malformed {
				t.Fatalf("constructor panicked: %v", r)
			}
			arr = nil
		}
	}()
	return array.MakeFromData(d)
}
