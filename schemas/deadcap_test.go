package schemas

import (
	"bytes"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// Defect 3 (issue 10): row dead letters are capped per message; the rest
// are summarized per reason with their count, and every row is accounted.
func TestMaxDeadRowsSummarizes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	spec := Spec{Cohorts: []string{"a", "b"}, TimeUnit: "days", Columns: DefaultColumns()}
	const n = 5000
	ids := make([]string, n)
	times := make([]float64, n)
	events := make([]bool, n)
	cohorts := make([]string, n)
	for i := range ids {
		ids[i] = "same"
		times[i] = float64(i)
		cohorts[i] = "a"
		if i%10 == 0 {
			times[i] = -1 // invalid_time
		}
		if i == 1 {
			ids[i] = "other"
		}
	}
	rec, err := BuildInput(spec, ids, times, events, cohorts, nil, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	// Two batches in one message: the cap applies to the message.
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(mem))
	for _, r := range []int64{0, n / 2} {
		s := rec.NewSlice(r, r+n/2)
		if err := w.Write(s); err != nil {
			t.Fatal(err)
		}
		s.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, max := range []int{0, 100} {
		v, err := NewValidator(spec, mem)
		if err != nil {
			t.Fatal(err)
		}
		v.SetMaxDeadRows(max)
		out, dead := v.DecodeIPC(buf.Bytes())
		good := int(out.NumRows())
		out.Release()
		rows, verbatim, summaries := 0, 0, 0
		byReason := map[string]int{}
		for _, d := range dead {
			rows += d.Rows()
			byReason[d.Reason] += d.Rows()
			if d.Count > 1 {
				summaries++
				if d.Row != nil {
					t.Errorf("summary with a row")
				}
			} else {
				verbatim++
			}
		}
		if good+rows != n {
			t.Errorf("max %d: %d good + %d dead rows != %d", max, good, rows, n)
		}
		// 500 invalid times (every 10th row, row 0 included); good: row 1
		// ("other") and row 2 (the first valid "same"); the rest duplicates.
		if byReason[ReasonInvalidTime] != 500 || good != 2 {
			t.Errorf("max %d: by reason %v, good %d", max, byReason, good)
		}
		switch max {
		case 0:
			if verbatim != n-2 || summaries != 0 {
				t.Errorf("uncapped: %d verbatim, %d summaries", verbatim, summaries)
			}
		default:
			if verbatim != max || summaries != 2 {
				t.Errorf("cap %d: %d verbatim, %d summaries (want %d and one per reason)", max, verbatim, summaries, max)
			}
		}
	}
}
