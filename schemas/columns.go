package schemas

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

func validID(s string) bool { return s != "" && len(s) <= MaxIDBytes && utf8.ValidString(s) }

// MaxIDBytes is the longest id accepted (in bytes): the pseudonym's input
// encoding carries the id length in 16 bits, so a longer id could not be
// sanitized and is dead-lettered as invalid_id by validation.
const MaxIDBytes = 0xffff

// isASCII reports whether b has no byte >= 0x80, eight bytes at a time.
func isASCII(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&0x8080808080808080 != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

type valuer[T any] interface {
	IsNull(int) bool
	Value(int) T
}

// cellStrings is the per-row accessor of a column whose non-null cells read
// as format(value) (ok false for a null row).
func cellStrings[T any](a valuer[T], format func(T) string) func(int) (string, bool) {
	return func(i int) (string, bool) {
		if a.IsNull(i) {
			return "", false
		}
		return format(a.Value(i)), true
	}
}

func strFromInt[T int8 | int16 | int32 | int64](a valuer[T]) func(int) (string, bool) {
	return cellStrings(a, func(v T) string { return strconv.FormatInt(int64(v), 10) })
}

func strFromUint[T uint8 | uint16 | uint32 | uint64](a valuer[T]) func(int) (string, bool) {
	return cellStrings(a, func(v T) string { return strconv.FormatUint(uint64(v), 10) })
}

// dictStrings is the per-row accessor of a dictionary column whose
// dictionary's accessor is inner (ok false for a null row).
func dictStrings(a *array.Dictionary, inner func(int) (string, bool)) func(int) (string, bool) {
	return func(i int) (string, bool) {
		if a.IsNull(i) {
			return "", false
		}
		return inner(a.GetValueIndex(i))
	}
}

// stringGetter returns a per-row accessor for string-like columns (utf8,
// large_utf8, dictionary of those or of ints, any int type as decimal).
// ok is false for nulls. Unsupported types give a getter that reports null.
func stringGetter(arr arrow.Array) func(int) (string, bool) {
	switch a := arr.(type) {
	case *array.String:
		return func(i int) (string, bool) {
			if a.IsNull(i) {
				return "", false
			}
			return a.Value(i), true
		}
	case *array.LargeString:
		return func(i int) (string, bool) {
			if a.IsNull(i) {
				return "", false
			}
			return a.Value(i), true
		}
	case *array.Dictionary:
		return dictStrings(a, stringGetter(a.Dictionary()))
	case *array.Int8:
		return strFromInt[int8](a)
	case *array.Int16:
		return strFromInt[int16](a)
	case *array.Int32:
		return strFromInt[int32](a)
	case *array.Int64:
		return strFromInt[int64](a)
	case *array.Uint8:
		return strFromUint[uint8](a)
	case *array.Uint16:
		return strFromUint[uint16](a)
	case *array.Uint32:
		return strFromUint[uint32](a)
	case *array.Uint64:
		return strFromUint[uint64](a)
	}
	return func(int) (string, bool) { return "", false }
}

func conv[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | float32](dst []float64, src []T) {
	for i, x := range src[:len(dst)] {
		dst[i] = float64(x)
	}
}

// toFloats converts a numeric column into dst (len(dst) == arr.Len()); the
// values at null slots are unspecified. Unsupported types give NaN.
func toFloats(arr arrow.Array, dst []float64) {
	switch a := arr.(type) {
	case *array.Float64:
		copy(dst, a.Float64Values())
	case *array.Float32:
		conv(dst, a.Float32Values())
	case *array.Int8:
		conv(dst, a.Int8Values())
	case *array.Int16:
		conv(dst, a.Int16Values())
	case *array.Int32:
		conv(dst, a.Int32Values())
	case *array.Int64:
		conv(dst, a.Int64Values())
	case *array.Uint8:
		conv(dst, a.Uint8Values())
	case *array.Uint16:
		conv(dst, a.Uint16Values())
	case *array.Uint32:
		conv(dst, a.Uint32Values())
	case *array.Uint64:
		conv(dst, a.Uint64Values())
	default:
		for i := range dst {
			dst[i] = math.NaN()
		}
	}
}

// fillObs reads observed_at into st.obs as microseconds since the epoch (UTC).
func fillObs(col arrow.Array, st *scratch, nullable bool) {
	if nullable {
		// A null is kept as null: read the column, then turn the
		// missing_field failures it gave into nulls.
		fillObs(col, st, false)
		for i := 0; i < st.n; i++ {
			if st.reason[i] == rMissing && st.slot[i] == slotObs && col.IsNull(i) {
				st.reason[i] = rOK
				st.nullObs(i)
			}
		}
		return
	}
	switch a := col.(type) {
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		for i := 0; i < st.n; i++ {
			if a.IsNull(i) {
				st.fail(i, rMissing, slotObs)
				continue
			}
			us, ok := toMicros(int64(a.Value(i)), unit)
			if !ok {
				st.fail(i, rObs, slotObs)
				continue
			}
			st.obs[i] = us
		}
	case *array.Date32:
		for i := 0; i < st.n; i++ {
			if a.IsNull(i) {
				st.fail(i, rMissing, slotObs)
				continue
			}
			st.obs[i] = int64(a.Value(i)) * 86400 * 1e6
		}
	case *array.Date64:
		for i := 0; i < st.n; i++ {
			if a.IsNull(i) {
				st.fail(i, rMissing, slotObs)
				continue
			}
			us, ok := toMicros(int64(a.Value(i)), arrow.Millisecond)
			if !ok {
				st.fail(i, rObs, slotObs)
				continue
			}
			st.obs[i] = us
		}
	default:
		g := stringGetter(col)
		for i := 0; i < st.n; i++ {
			s, ok := g(i)
			if !ok {
				st.fail(i, rMissing, slotObs)
				continue
			}
			us, ok := parseTimestamp(s)
			if !ok {
				st.fail(i, rObs, slotObs)
				continue
			}
			st.obs[i] = us
		}
	}
}

func toMicros(v int64, unit arrow.TimeUnit) (int64, bool) {
	switch unit {
	case arrow.Second:
		if v > math.MaxInt64/1_000_000 || v < math.MinInt64/1_000_000 {
			return 0, false
		}
		return v * 1e6, true
	case arrow.Millisecond:
		if v > math.MaxInt64/1_000 || v < math.MinInt64/1_000 {
			return 0, false
		}
		return v * 1e3, true
	case arrow.Microsecond:
		return v, true
	case arrow.Nanosecond:
		return v / 1e3, true
	}
	return 0, false
}

var timestampLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02",
}

// parseTimestamp parses RFC 3339 (with or without zone; no zone means UTC),
// a space instead of the T, or a date.
func parseTimestamp(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	for _, l := range timestampLayouts {
		if t, err := time.Parse(l, s); err == nil {
			if t.Year() < -290000 || t.Year() > 290000 {
				return 0, false
			}
			return t.UnixMicro(), true
		}
	}
	return 0, false
}

// guardedCell is read(), the value of cell i of arr, where the cell holds
// one: nil for a null or out-of-range cell. It never panics: a cell that
// cannot be read (malformed nested data) is rendered as a marker.
func guardedCell(arr arrow.Array, i int, read func() any) (v any) {
	defer func() {
		if p := recover(); p != nil {
			v = "<unreadable>"
		}
	}()
	if i < 0 || i >= arr.Len() || arr.IsNull(i) {
		return nil
	}
	return read()
}

// cellValue returns a JSON-friendly Go value of one cell (guardedCell).
func cellValue(arr arrow.Array, i int) any {
	return guardedCell(arr, i, func() any { return readCell(arr, i) })
}

// readCell is cellValue of a non-null cell in range.
func readCell(arr arrow.Array, i int) any {
	switch a := arr.(type) {
	case *array.String:
		return strings.Clone(a.Value(i)) // do not alias input memory
	case *array.LargeString:
		return strings.Clone(a.Value(i))
	case *array.Binary:
		return append([]byte(nil), a.Value(i)...)
	case *array.Boolean:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.Float32:
		return float64(a.Value(i))
	case *array.Int8:
		return int64(a.Value(i))
	case *array.Int16:
		return int64(a.Value(i))
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Int64:
		return a.Value(i)
	case *array.Uint8:
		return uint64(a.Value(i))
	case *array.Uint16:
		return uint64(a.Value(i))
	case *array.Uint32:
		return uint64(a.Value(i))
	case *array.Uint64:
		return a.Value(i)
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return a.Value(i).ToTime(unit).UTC().Format(time.RFC3339Nano)
	case *array.Date32:
		return a.Value(i).ToTime().Format("2006-01-02")
	case *array.Date64:
		return a.Value(i).ToTime().UTC().Format(time.RFC3339Nano)
	case *array.Dictionary:
		return cellValue(a.Dictionary(), a.GetValueIndex(i))
	}
	return arr.GetOneForMarshal(i)
}
