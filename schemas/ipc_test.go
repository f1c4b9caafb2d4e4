package schemas

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/codecs/arrowipc"
)

func encode(t testing.TB, rec arrow.Record, mem memory.Allocator) []byte {
	t.Helper()
	b, err := arrowipc.Encode(rec, mem)
	if err != nil {
		t.Fatalf("arrowipc.Encode: %v", err)
	}
	return b
}

func TestIPCRoundTrip(t *testing.T) {
	t.Parallel()
	mem, spec, v := testValidator(t)
	in, err := BuildInput(spec, []string{"a", "b", "c", "a"}, []float64{1, -2, 3, 4}, []bool{true, false, true, true},
		[]string{"control", "1", "9", "2"}, [][]float64{{50, 51, 52, 53}}, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Release()
	data := encode(t, in, mem)
	// Deterministic: the same record gives the same bytes.
	if again := encode(t, in, mem); !bytes.Equal(data, again) {
		t.Error("arrowipc.Encode is not deterministic")
	}
	out, dead := v.DecodeIPC(data)
	defer out.Release()
	got := map[int]string{}
	for _, d := range dead {
		got[d.RowIndex] = d.Reason
	}
	want := map[int]string{1: ReasonInvalidTime, 2: ReasonUnknownCohort, 3: ReasonDuplicateID}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("dead = %v, want %v", got, want)
	}
	rows := readCanonical(t, out, 1)
	if len(rows) != 1 || rows[0].ID != "a" || rows[0].Cohort != "control" || rows[0].Covs[0] != 50 {
		t.Errorf("rows = %+v", rows)
	}
	// The canonical output itself round-trips through IPC unchanged.
	b2 := encode(t, out, mem)
	recs, err := arrowipc.DecodeRecords(b2, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	if len(recs) != 1 || !array.RecordEqual(recs[0], out) || !recs[0].Schema().Equal(out.Schema()) {
		t.Errorf("canonical record changed through IPC")
	}
	if md := recs[0].Schema().Metadata(); md.FindKey(MetaSchema) < 0 {
		t.Error("schema metadata lost through IPC")
	}
	// And a canonical message decodes to the same record.
	out2, dead2 := v.DecodeIPC(b2)
	defer out2.Release()
	if len(dead2) != 0 || !array.RecordEqual(out2, out) {
		t.Errorf("canonical message: %d dead, equal=%v", len(dead2), array.RecordEqual(out2, out))
	}
}

// A stream with several batches: one output, row indices and duplicate
// detection across batches.
func TestDecodeIPCMultiBatch(t *testing.T) {
	t.Parallel()
	mem, spec, v := testValidator(t)
	r1, _ := BuildInput(spec, []string{"a", "b"}, []float64{1, 2}, []bool{true, true}, []string{"1", "2"}, [][]float64{{1, 2}}, mem)
	defer r1.Release()
	r2, _ := BuildInput(spec, []string{"c", "a"}, []float64{3, 4}, []bool{false, true}, []string{"1", "1"}, [][]float64{{3, 4}}, mem)
	defer r2.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(r1.Schema()), ipc.WithAllocator(mem), ipc.WithDictionaryDeltas(true))
	if err := w.Write(r1); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(r2); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out, dead := v.DecodeIPC(buf.Bytes())
	defer out.Release()
	if len(dead) != 1 || dead[0].RowIndex != 3 || dead[0].Reason != ReasonDuplicateID {
		t.Fatalf("dead = %+v", dead)
	}
	var got []string
	for _, r := range readCanonical(t, out, 1) {
		got = append(got, r.ID)
	}
	if !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Errorf("ids = %v", got)
	}
}

func TestDecodeIPCWholeMessageFailures(t *testing.T) {
	t.Parallel()
	mem, spec, v := testValidator(t)
	good, _ := BuildInput(spec, []string{"a", "b"}, []float64{1, 2}, []bool{true, true}, []string{"1", "2"}, [][]float64{{1, 2}}, mem)
	defer good.Release()
	valid := encode(t, good, mem)
	noCohort := mkRecord(t, mem, nil, ids("a"), times(1.0), events(true), ages(1.0))
	defer noCohort.Release()
	strTime := mkRecord(t, mem, nil, ids("a"), typed(times("1"), tString), events(true), cohorts("1"), ages(1.0))
	defer strTime.Release()
	sanitized := mkRecord(t, mem, map[string]string{MetaSchema: SanitizedSchemaName}, ids("a"), times(1.0), events(true), cohorts("1"), ages(1.0))
	defer sanitized.Release()

	lz4 := func() []byte {
		var b bytes.Buffer
		w := ipc.NewWriter(&b, ipc.WithSchema(good.Schema()), ipc.WithAllocator(mem), ipc.WithLZ4())
		if err := w.Write(good); err != nil {
			t.Fatal(err)
		}
		w.Close()
		return b.Bytes()
	}()

	cases := []struct {
		name   string
		data   []byte
		reason string
	}{
		{"empty", nil, ReasonUndecodable},
		{"garbage", []byte("this is not arrow at all"), ReasonUndecodable},
		{"json sent to the arrow topic", []byte(`{"id":"a","time":1}`), ReasonUndecodable},
		{"truncated", valid[:len(valid)/2], ReasonUndecodable},
		{"huge metadata length", append([]byte{0xff, 0xff, 0xff, 0xff, 0xf0, 0xff, 0xff, 0x7f}, valid[8:]...), ReasonUndecodable},
		{"negative legacy length", []byte{0x00, 0x00, 0x00, 0x80, 1, 2, 3, 4}, ReasonUndecodable},
		{"end of stream only", []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, ReasonUndecodable},
		{"compressed body bomb", lz4Bomb(t, lz4), ReasonUndecodable},
		{"missing column", encode(t, noCohort, mem), ReasonMissingField},
		{"wrong type", encode(t, strTime, mem), ReasonWrongSchema},
		{"sanitized schema", encode(t, sanitized, mem), ReasonWrongSchema},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, dead := v.DecodeIPC(tc.data)
			defer out.Release()
			if out.NumRows() != 0 {
				t.Errorf("%d good rows from a failed message", out.NumRows())
			}
			if len(dead) != 1 {
				t.Fatalf("%d dead letters, want 1: %+v", len(dead), dead)
			}
			d := dead[0]
			if d.Reason != tc.reason || d.RowIndex != -1 || !bytes.Equal(d.Raw, tc.data) || d.Detail == "" {
				t.Errorf("dead letter %+v, want reason %s, row -1 and the raw bytes", d, tc.reason)
			}
		})
	}
	// The compressed message itself decodes fine.
	out, dead := v.DecodeIPC(lz4)
	defer out.Release()
	if len(dead) != 0 || out.NumRows() != 2 {
		t.Errorf("lz4 message: %d rows, dead %+v", out.NumRows(), dead)
	}
}

// lz4Bomb rewrites the uncompressed-length prefix of every compressed buffer
// to 2^40 bytes.
func lz4Bomb(t testing.TB, data []byte) []byte {
	t.Helper()
	// The record batch body follows the last message metadata; rewrite each
	// 8-byte length prefix we can find by walking the framing.
	out := append([]byte(nil), data...)
	pos, patched := 0, 0
	for pos+8 <= len(out) {
		if binary.LittleEndian.Uint32(out[pos:]) != 0xFFFFFFFF {
			break
		}
		mlen := int(binary.LittleEndian.Uint32(out[pos+4:]))
		if mlen == 0 {
			break
		}
		meta := out[pos+8 : pos+8+mlen]
		body, err := arrowipc.BodyLength(meta)
		if err != nil {
			t.Fatal(err)
		}
		start := pos + 8 + mlen
		if body >= 8 {
			// Compressed buffers start with an int64 uncompressed length;
			// the first buffer of the body is one of them (8-aligned).
			binary.LittleEndian.PutUint64(out[start:], 1<<40)
			patched++
		}
		pos = start + int(body)
	}
	if patched == 0 {
		t.Fatal("no compressed body found")
	}
	return out
}

// Malformed buffers in an otherwise well-framed message: offsets pointing
// beyond the data must give an undecodable dead letter, not a panic.
func TestDecodeIPCCorruptedBytesNeverPanic(t *testing.T) {
	t.Parallel()
	mem, spec, v := testValidator(t)
	good, _ := BuildInput(spec, []string{"alpha", "beta", "gamma"}, []float64{1, 2, 3}, []bool{true, false, true},
		[]string{"1", "2", "control"}, [][]float64{{1, 2, 3}}, mem)
	defer good.Release()
	valid := encode(t, good, mem)
	// Flip every byte in turn (to 0xFF and to 0x00): each result must be
	// handled, and every row accounted for (good + row dead letters == 3,
	// or one whole-message dead letter).
	for i := range valid {
		for _, b := range []byte{0xff, 0x00, valid[i] ^ 0x80} {
			data := append([]byte(nil), valid...)
			data[i] = b
			out, dead := v.DecodeIPC(data)
			rows := int(out.NumRows())
			whole := len(dead) == 1 && dead[0].RowIndex == -1
			if !whole && rows+len(dead) > 3 {
				t.Errorf("byte %d=%#x: %d good + %d dead rows from a 3-row message", i, b, rows, len(dead))
			}
			if !whole && rows+len(dead) == 0 {
				t.Errorf("byte %d=%#x: every row vanished", i, b)
			}
			out.Release()
		}
	}
}

// legacyFraming rewrites a modern IPC stream (continuation token, length)
// into the pre-0.15 framing (length only), dropping the end-of-stream
// marker when noEOS is set.
func legacyFraming(t *testing.T, data []byte, noEOS bool) []byte {
	t.Helper()
	var out []byte
	for pos := 0; pos < len(data); {
		if binary.LittleEndian.Uint32(data[pos:]) != 0xFFFFFFFF {
			t.Fatalf("no continuation token at byte %d", pos)
		}
		mlen := int(binary.LittleEndian.Uint32(data[pos+4:]))
		pos += 8
		if mlen == 0 {
			if !noEOS {
				out = binary.LittleEndian.AppendUint32(out, 0)
			}
			break
		}
		body, err := arrowipc.BodyLength(data[pos : pos+mlen])
		if err != nil {
			t.Fatal(err)
		}
		out = binary.LittleEndian.AppendUint32(out, uint32(mlen))
		out = append(out, data[pos:pos+mlen+int(body)]...)
		pos += mlen + int(body)
	}
	return out
}

// DecodeIPC reads a stream message in place (sliceMessages): the modern
// framing, the pre-0.15 framing and a stream without its end-of-stream
// marker give the same rows.
func TestDecodeIPCFramings(t *testing.T) {
	t.Parallel()
	mem, spec, v := testValidator(t)
	in, err := BuildInput(spec, []string{"a", "bb", "ccc"}, []float64{1, 2, 3}, []bool{true, false, true},
		[]string{"1", "2", "control"}, [][]float64{{50, 51, 52}}, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Release()
	modern := encode(t, in, mem)
	for name, data := range map[string][]byte{
		"modern":        modern,
		"modern no EOS": modern[:len(modern)-8],
		"legacy":        legacyFraming(t, modern, false),
		"legacy no EOS": legacyFraming(t, modern, true),
	} {
		out, dead := v.DecodeIPC(data)
		if len(dead) > 0 {
			t.Errorf("%s: dead letters %+v", name, dead)
		}
		var ids []string
		for _, r := range readCanonical(t, out, 1) {
			ids = append(ids, r.ID)
		}
		out.Release()
		if !reflect.DeepEqual(ids, []string{"a", "bb", "ccc"}) {
			t.Errorf("%s: ids %v", name, ids)
		}
	}
}
