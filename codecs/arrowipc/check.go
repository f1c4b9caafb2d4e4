package arrowipc

import (
	"fmt"
	"math"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/bitutil"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// Checks of decoded batches, before their values are read: Arrow's reader
// trusts a batch's field nodes and buffers, so a forged length or offset
// would make a later read go out of range.

// CheckLengths verifies that every column has the record's length.
func CheckLengths(rec arrow.Record) error {
	for c, col := range rec.Columns() {
		if int64(col.Len()) != rec.NumRows() {
			return fmt.Errorf("column %q has %d rows, the batch %d", rec.Schema().Field(c).Name, col.Len(), rec.NumRows())
		}
	}
	return nil
}

// CheckColumns verifies that the used columns' buffers are consistent with
// their lengths, so that reading them cannot go out of bounds. A column
// that makes Arrow's array constructors panic while it is checked (a
// dictionary whose buffers contradict its length) is malformed too: the
// panic is returned as an error.
func CheckColumns(rec arrow.Record, used []int) (err error) {
	c := -1
	defer func() {
		if p := recover(); p != nil {
			name := "?"
			if c >= 0 {
				name = rec.Schema().Field(c).Name
			}
			err = fmt.Errorf("column %q is malformed: %v", name, p)
		}
	}()
	for _, c = range used {
		if err := checkArray(rec.Column(c), 0); err != nil {
			return fmt.Errorf("column %q is malformed: %w", rec.Schema().Field(c).Name, err)
		}
	}
	return nil
}

// checkNulls checks the declared null count against the validity bitmap:
// a count that is negative (other than "unknown" over a full bitmap),
// larger than the length, or different from the bitmap's, would make a
// later NullN or bitmap read go out of range (an encoder crash) or let
// nulls through as values.
func checkNulls(d arrow.ArrayData, off, n int, bufs []*memory.Buffer) error {
	if d.DataType().ID() == arrow.NULL {
		return nil
	}
	nulls := d.NullN()
	var bitmap []byte
	if len(bufs) > 0 && bufs[0] != nil {
		bitmap = bufs[0].Bytes()
	}
	hasBitmap := len(bitmap) > 0
	switch {
	case nulls < array.UnknownNullCount || nulls > n:
		return fmt.Errorf("null count %d outside [0, %d]", nulls, n)
	case nulls == 0:
		return nil
	case !hasBitmap:
		return fmt.Errorf("null count %d without a validity bitmap", nulls)
	case len(bitmap)*8 < off+n:
		return fmt.Errorf("validity bitmap too short")
	case nulls > 0:
		if actual := n - bitutil.CountSetBits(bitmap, off, n); actual != nulls {
			return fmt.Errorf("null count %d disagrees with the validity bitmap (%d nulls)", nulls, actual)
		}
	}
	return nil
}

// checkOffsets checks the n+1 offsets of a string array of n values
// ending at end (width bytes per offset; offsets is called once the buffer
// is known to hold them): non-negative, non-decreasing, and within the
// data buffer.
func checkOffsets[T int32 | int64](n, end, width int, offsets func() []T, bufLen func(int) int) error {
	if n == 0 {
		return nil
	}
	if bufLen(1) < width*(end+1) {
		return fmt.Errorf("offsets too short")
	}
	offs := offsets()
	prev := offs[0]
	if prev < 0 {
		return fmt.Errorf("negative offset")
	}
	for i := 1; i <= n; i++ {
		o := offs[i]
		if o < prev {
			return fmt.Errorf("offsets decrease at %d", i)
		}
		prev = o
	}
	if int64(prev) > int64(bufLen(2)) {
		return fmt.Errorf("offsets beyond data")
	}
	return nil
}

func checkArray(arr arrow.Array, depth int) error {
	if depth > 2 {
		return fmt.Errorf("nesting too deep")
	}
	d := arr.Data()
	off, n := d.Offset(), d.Len()
	if off < 0 || n < 0 {
		return fmt.Errorf("negative offset or length")
	}
	end := off + n
	bufs := d.Buffers()
	bufLen := func(k int) int {
		if k >= len(bufs) || bufs[k] == nil {
			return 0
		}
		return bufs[k].Len()
	}
	if len(bufs) > 0 && bufLen(0) > 0 && bufLen(0)*8 < end {
		return fmt.Errorf("validity bitmap too short")
	}
	if err := checkNulls(d, off, n, bufs); err != nil {
		return err
	}
	dt := arr.DataType()
	switch dt.ID() {
	case arrow.BOOL:
		if n > 0 && bufLen(1)*8 < end {
			return fmt.Errorf("boolean values too short")
		}
	case arrow.STRING:
		return checkOffsets(n, end, 4, arr.(*array.String).ValueOffsets, bufLen)
	case arrow.LARGE_STRING:
		return checkOffsets(n, end, 8, arr.(*array.LargeString).ValueOffsets, bufLen)
	case arrow.DICTIONARY:
		a := arr.(*array.Dictionary)
		if err := checkArray(a.Indices(), depth+1); err != nil {
			return fmt.Errorf("indices: %w", err)
		}
		dict := a.Dictionary()
		if err := checkArray(dict, depth+1); err != nil {
			return fmt.Errorf("dictionary: %w", err)
		}
		m := dict.Len()
		if ix, ok := a.Indices().(*array.Int32); ok && a.NullN() == 0 {
			// the common case (what dpsurv and pyarrow write), one tight pass
			for i, j := range ix.Int32Values() {
				if uint32(j) >= uint32(m) {
					return fmt.Errorf("dictionary index out of range at row %d", i)
				}
			}
			return nil
		}
		ig := IntGetter(a.Indices())
		for i := 0; i < n; i++ {
			if a.IsNull(i) {
				continue
			}
			j, ok := ig(i)
			if !ok || j < 0 || j >= int64(m) {
				return fmt.Errorf("dictionary index out of range at row %d", i)
			}
		}
	default:
		if fw, ok := dt.(arrow.FixedWidthDataType); ok && dt.ID() != arrow.BOOL {
			w := fw.BitWidth() / 8
			if n > 0 && bufLen(1) < w*end {
				return fmt.Errorf("values too short")
			}
		}
	}
	return nil
}

// DictBudget is what a message's dictionaries have counted so far against
// the decode bound (each dictionary once, however many batches share it).
// The zero value is ready to use.
type DictBudget struct {
	seen map[arrow.ArrayData]bool
	used int64
}

// Add counts the dictionaries of rec's columns against max: a
// dictionary costs its decoded buffers plus 4 bytes per entry (the offsets
// of its entries as text), what reading it may take. A dictionary far
// longer than its batch is the shape of a memory attack (a few bytes
// compressed, millions of entries), so it counts however little its
// buffers hold.
func (b *DictBudget) Add(rec arrow.Record, max int64) error {
	for c, col := range rec.Columns() {
		a, ok := col.(*array.Dictionary)
		if !ok {
			continue
		}
		d := a.Dictionary()
		if b.seen == nil {
			b.seen = map[arrow.ArrayData]bool{}
		}
		if b.seen[d.Data()] {
			continue
		}
		b.seen[d.Data()] = true
		cost := 4 * int64(d.Len())
		for _, buf := range d.Data().Buffers() {
			if buf != nil {
				cost += int64(buf.Len())
			}
		}
		b.used += cost
		if b.used > max {
			return fmt.Errorf("the dictionary of column %q (%d entries, %d bytes) takes the message's dictionaries to %d bytes, over the decode bound of %d (input.max_decoded_bytes)",
				rec.Schema().Field(c).Name, d.Len(), cost, b.used, max)
		}
	}
	return nil
}

// intValues is the per-row accessor of integer values that all fit in
// int64.
func intValues[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32](vals []T) func(int) (int64, bool) {
	return func(i int) (int64, bool) { return int64(vals[i]), true }
}

// IntGetter returns a per-row accessor for an integer column of any width
// (a dictionary's indices, an int id or cohort column); its second result is
// false when a uint64 value does not fit in int64, and for any other type.
func IntGetter(arr arrow.Array) func(int) (int64, bool) {
	switch a := arr.(type) {
	case *array.Int8:
		return intValues(a.Int8Values())
	case *array.Int16:
		return intValues(a.Int16Values())
	case *array.Int32:
		return intValues(a.Int32Values())
	case *array.Int64:
		return intValues(a.Int64Values())
	case *array.Uint8:
		return intValues(a.Uint8Values())
	case *array.Uint16:
		return intValues(a.Uint16Values())
	case *array.Uint32:
		return intValues(a.Uint32Values())
	case *array.Uint64:
		return func(i int) (int64, bool) {
			x := a.Value(i)
			return int64(x), x <= math.MaxInt64
		}
	}
	return func(int) (int64, bool) { return 0, false }
}
