package aggregators

import (
	"errors"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"

	"github.com/dpsurv/dpsurv/schemas"
)

// What every kind's add reads from a canonical record, and how it assigns
// the record's rows to windows (the kinds keep what they count: hist.go,
// discrete.go).

// rows are the canonical columns of a record every kind reads.
type rows struct {
	n      int
	ids    *array.String
	times  *array.Float64
	events *array.Boolean
	// obs is observed_at, each row's window on event time; nil on
	// processing time, where every row is in the window of now.
	obs *array.Timestamp
	cur int64 // the window of now
}

// rowsOf reads rec's canonical columns for the aggregate. ok false: the
// aggregate windows on event time and rec has no observed_at; every row
// is counted in st as skipped (SkipNoObservedAt).
func (a *aggregate) rowsOf(rec arrow.Record, now int64, st *AddStats) (r rows, ok bool, err error) {
	r = rows{n: int(rec.NumRows()), cur: a.windowStart(now)}
	var ok0, ok1, ok2 bool
	r.ids, ok0 = rec.Column(schemas.ColID).(*array.String)
	r.times, ok1 = rec.Column(schemas.ColTime).(*array.Float64)
	r.events, ok2 = rec.Column(schemas.ColEvent).(*array.Boolean)
	if !ok0 || !ok1 || !ok2 {
		return r, false, errors.New("record is not in the canonical schema")
	}
	if a.cfg.Window.Time == TimeEvent {
		if i := schemas.ObservedAtIndex(rec.Schema()); i >= 0 {
			r.obs, _ = rec.Column(i).(*array.Timestamp)
		}
		if r.obs == nil {
			st.skip(SkipNoObservedAt, r.n)
			return r, false, nil
		}
	}
	return r, true, nil
}

// window is the start of row i's window.
func (r rows) window(a *aggregate, i int) int64 {
	if r.obs == nil {
		return r.cur
	}
	return a.windowStart(int64(r.obs.Value(i)) * int64(time.Microsecond)) // canonical unit: microseconds
}

// notOpen counts a row whose window s is not open: late when the window
// has closed (it never reopens), else one that has not started by the
// clock.
func (a *aggregate) notOpen(st *AddStats, s, now int64) {
	if s+a.size+a.late <= now || s < a.closedBefore {
		st.Late++
		return
	}
	st.skip(SkipFutureObservedAt, 1)
}

// skip counts k rows not counted for reason.
func (st *AddStats) skip(reason string, k int) {
	if st.Skipped == nil {
		st.Skipped = map[string]int{}
	}
	st.Skipped[reason] += k
}
