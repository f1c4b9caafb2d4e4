package schemas

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/dpsurv/dpsurv/codecs/jsonrec"
)

// Reason codes of dead letters. They are stable: metrics and dashboards key
// on them.
const (
	ReasonUndecodable      = "undecodable"
	ReasonWrongSchema      = "wrong_schema"
	ReasonMissingField     = "missing_field"
	ReasonInvalidTime      = "invalid_time"
	ReasonInvalidEvent     = "invalid_event"
	ReasonUnknownCohort    = "unknown_cohort"
	ReasonDuplicateID      = "duplicate_id"
	ReasonInvalidCovariate = "invalid_covariate"
	ReasonInvalidID        = "invalid_id"
	// ReasonInvalidObservedAt: an observed_at value that is not a timestamp,
	// a date or an RFC 3339 string.
	ReasonInvalidObservedAt = "invalid_observed_at"
)

// Reasons lists every reason code, for metrics that pre-register labels.
var Reasons = []string{
	ReasonUndecodable, ReasonWrongSchema, ReasonMissingField, ReasonInvalidTime,
	ReasonInvalidEvent, ReasonUnknownCohort, ReasonDuplicateID, ReasonInvalidCovariate,
	ReasonInvalidID, ReasonInvalidObservedAt,
}

// DeadLetter is one rejected row (or a whole rejected message). It carries
// raw patient data: the dead-letter sink is as sensitive as the input topic.
type DeadLetter struct {
	Reason   string         // stable snake_case code, one of the Reason* constants
	Detail   string         // human-readable; names the field, may quote the value (dead-letter path only)
	RowIndex int            // row within the decoded message (or file, for ReadFile); -1 when the whole message failed
	Row      map[string]any // the raw row as decoded (nil when undecodable)
	Raw      []byte         // the raw message bytes when the whole message failed (nil otherwise)
	// Count is the number of rows a summary dead letter stands for (rows
	// beyond the validator's verbatim cap, see SetMaxDeadRows); 0 or 1
	// for a single row. A summary has RowIndex = its first row and no Row.
	// For a whole-message dead letter (RowIndex -1) it is the rows the
	// message declares (its batch headers, its JSON lines), 0 when the
	// bytes give no count.
	Count int
}

// Rows is the number of input rows d stands for: for a whole-message dead
// letter (RowIndex -1) the rows the message declares (Count, 0 when not
// known), Count for a summary, 1 otherwise.
func (d DeadLetter) Rows() int {
	switch {
	case d.RowIndex < 0:
		return max(d.Count, 0)
	case d.Count > 1:
		return d.Count
	}
	return 1
}

// DeadLetterWire is the JSON form of a dead letter (DeadLetter.MarshalJSON),
// as a reader of the dead-letter route decodes it: Count is omitted for a
// single row, RawBase64 is null unless the raw bytes are kept.
type DeadLetterWire struct {
	Reason    string         `json:"reason"`
	Detail    string         `json:"detail"`
	RowIndex  int            `json:"row_index"`
	Row       map[string]any `json:"row"`
	RawBase64 *string        `json:"raw_base64"`
	Count     int            `json:"count,omitempty"`
}

// MarshalJSON renders {"reason","detail","row_index","row","raw_base64"}.
// Non-finite floats in Row are written as the strings "NaN", "+Inf", "-Inf";
// byte slices as base64 strings; times as RFC 3339.
func (d DeadLetter) MarshalJSON() ([]byte, error) {
	out := DeadLetterWire{Reason: d.Reason, Detail: d.Detail, RowIndex: d.RowIndex}
	if d.Count > 1 {
		out.Count = d.Count
	}
	if d.Row != nil {
		out.Row = make(map[string]any, len(d.Row))
		for k, v := range d.Row {
			out.Row[k] = jsonSafe(v)
		}
	}
	if d.Raw != nil {
		s := base64.StdEncoding.EncodeToString(d.Raw)
		out.RawBase64 = &s
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("schemas: marshal dead letter: %w", err)
	}
	return b, nil
}

// jsonSafe converts values json.Marshal rejects or renders poorly.
func jsonSafe(v any) any {
	switch x := v.(type) {
	case float64:
		return finiteOrString(x)
	case float32:
		return finiteOrString(float64(x))
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case []any:
		o := make([]any, len(x))
		for i := range x {
			o[i] = jsonSafe(x[i])
		}
		return o
	case map[string]any:
		o := make(map[string]any, len(x))
		for k, e := range x {
			o[k] = jsonSafe(e)
		}
		return o
	case json.Number:
		// A literal Go's encoding/json (and others) cannot read back
		// into a float64, such as 1e400, is written as a string: a dead
		// letter is JSON every consumer can parse.
		if _, err := strconv.ParseFloat(string(x), 64); err != nil || !jsonrec.IsNumber(string(x)) {
			return string(x)
		}
		return x
	case jsonrec.BadText:
		return x.S
	case jsonrec.RawJSON:
		return string(x)
	case nil, string, bool, []byte,
		int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return x
	default:
		// Anything else (nested Arrow values): keep it if it marshals.
		if _, err := json.Marshal(x); err != nil {
			return fmt.Sprint(x)
		}
		return x
	}
}

func finiteOrString(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return f
}

// CountByReason tallies dead letters by reason code (a summary counts its
// rows).
func CountByReason(dead []DeadLetter) map[string]int {
	m := make(map[string]int)
	for _, d := range dead {
		m[d.Reason] += max(d.Count, 1)
	}
	return m
}

// CapDeadLetters keeps the first k row-level dead letters verbatim and
// folds every later one into one summary per reason (Count rows, RowIndex
// the first of them, no Row). Whole-message dead letters (RowIndex -1) are
// kept. k <= 0 keeps everything. The input order is kept; summaries come
// last.
func CapDeadLetters(dead []DeadLetter, k int) []DeadLetter {
	if k <= 0 {
		return dead
	}
	verbatim := 0
	over := false
	for _, d := range dead {
		if d.RowIndex >= 0 {
			if d.Count > 1 || verbatim >= k {
				over = true
				break
			}
			verbatim++
		}
	}
	if !over {
		return dead
	}
	out := make([]DeadLetter, 0, k+8)
	sums := map[string]int{} // reason -> index in summaries
	verbatim = 0
	var summaries []DeadLetter
	for _, d := range dead {
		if d.RowIndex < 0 || (d.Count <= 1 && verbatim < k) {
			if d.RowIndex >= 0 {
				verbatim++
			}
			out = append(out, d)
			continue
		}
		j, ok := sums[d.Reason]
		if !ok {
			j = len(summaries)
			sums[d.Reason] = j
			summaries = append(summaries, DeadLetter{Reason: d.Reason, RowIndex: d.RowIndex})
		}
		s := &summaries[j]
		s.Count += max(d.Count, 1)
		s.RowIndex = min(s.RowIndex, d.RowIndex)
	}
	for j := range summaries {
		s := &summaries[j]
		s.Detail = summaryDetail(s.Reason, s.Count, s.RowIndex, k)
	}
	return append(out, summaries...)
}

func summaryDetail(reason string, n, first, k int) string {
	return fmt.Sprintf("%d more row(s) failed with %s, the first at row %d; only the first %d failed rows of a message are kept verbatim (replay the source message to see them)", n, reason, first, k)
}
