package aggregators

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"

	"github.com/dpsurv/dpsurv/dpfit/km"
	"github.com/dpsurv/dpsurv/schemas"
	"github.com/dpsurv/dpsurv/varint"
)

// The window state of the histogram kinds (km, cumulative km, weibull):
// a km.Histogram per window, its layout checked by checkBinWidth.

// histWindow is a histogram kind's window state.
type histWindow struct{ *km.Histogram }

func (w histWindow) snapshot() (cells, records []byte) { return encodeHist(w.Histogram), nil }
func (w histWindow) bytes() int                        { return w.MemoryBytes() }

// histOf returns the histogram of a histogram kind's window (nil for
// none).
func histOf(w window) *km.Histogram {
	h, _ := w.(histWindow)
	return h.Histogram
}

// histKind is the window state of the histogram kinds (km, cumulative km,
// weibull): one km.Histogram per window, counted by count. It keeps
// the window add used last (hot path cache), so a kind embedding it is
// returned by kindOf as a new value for every aggregate.
type histKind struct{ last *histCache }

// histCache is the window the last row was counted in.
type histCache struct {
	start int64
	hist  *km.Histogram
	table patientTable
}

func newHistKind() histKind { return histKind{last: &histCache{}} }

func (histKind) open(a *aggregate) window { return histWindow{newHist(a.cfg)} }
func (k histKind) add(a *aggregate, rec arrow.Record, now int64) (AddStats, error) {
	return k.count(a, rec, now, nil)
}
func (histKind) restore(a *aggregate, cells, _ []byte) (window, error) {
	h := newHist(a.cfg)
	if err := decodeHist(h, cells); err != nil {
		return nil, err
	}
	return histWindow{h}, nil
}

// encodeHist writes the non-zero cells as (index delta, count) uvarint
// pairs; cell index = (cohort*2 + kind)*bins + bin, kind 0 = events.
func encodeHist(h *km.Histogram) []byte {
	out := []byte{}
	last := -1
	for c := range h.Events {
		for k, row := range [2][]int64{h.Events[c], h.Censor[c]} {
			for b, v := range row {
				if v == 0 {
					continue
				}
				idx := (c*2+k)*h.Bins + b
				out = binary.AppendUvarint(out, uint64(idx-last))
				out = binary.AppendUvarint(out, uint64(v))
				last = idx
			}
		}
	}
	return out
}

// decodeHist fills an empty histogram of the right layout.
func decodeHist(h *km.Histogram, data []byte) error {
	total := 2 * h.Bins * len(h.Events)
	idx := -1
	r := varint.NewDecoder(data)
	for r.Len() > 0 {
		d := r.Uvarint()
		if r.Err() != nil || d == 0 || d > uint64(total) {
			return errors.New("malformed histogram cells")
		}
		v := r.Uvarint()
		if r.Err() != nil || v > 1<<62 {
			return errors.New("malformed histogram cells")
		}
		idx += int(d)
		if idx >= total {
			return errors.New("histogram cell out of range")
		}
		c, rest := idx/(2*h.Bins), idx%(2*h.Bins)
		if rest < h.Bins {
			h.Events[c][rest] = int64(v)
		} else {
			h.Censor[c][rest-h.Bins] = int64(v)
		}
	}
	return nil
}

// binned is implemented by the params of the histogram kinds.
type binned interface{ binWidth() float64 }

// binWidth is the histogram bin width of c's params (0 for a kind without
// a histogram).
func binWidth(c Config) float64 {
	if b, ok := c.Params.(binned); ok {
		return b.binWidth()
	}
	return 0
}

// newHist returns an empty window histogram of c's layout.
func newHist(c Config) *km.Histogram {
	h, err := km.NewHistogram(binWidth(c), c.TimeMax, len(c.Cohorts))
	if err != nil {
		// The layout was validated in newAggregate.
		panic(fmt.Sprintf("aggregate %q: histogram layout: %v", c.Name, err))
	}
	return h
}

// count counts the rows of a canonical record into the histograms of
// their windows (km, cumulative km, weibull). horizon, when not nil, maps
// every patient counted in a cumulative horizon to the start (ns, as
// uint64) of the one window that counts them: a patient in it is not
// counted again.
func (k histKind) count(a *aggregate, rec arrow.Record, now int64, horizon patientTable) (AddStats, error) {
	var st AddStats
	dict, ok := rec.Column(schemas.ColCohort).(*array.Dictionary)
	if !ok {
		return st, errors.New("record is not in the canonical schema")
	}
	codes, ok := dict.Indices().(*array.Int32)
	if !ok {
		return st, errors.New("cohort column is not int32-indexed")
	}
	r, ok, err := a.rowsOf(rec, now, &st)
	if !ok {
		return st, err
	}
	for i := range r.n {
		s := r.window(a, i)
		h, tbl := k.last.hist, k.last.table
		// a window closed (dropped) since is before closedBefore, and
		// never reopens
		if s != k.last.start || h == nil || s < a.closedBefore {
			h = histOf(a.open[s])
			tbl = a.patients[s]
			if h != nil && tbl == nil {
				tbl = patientTable{}
				a.patients[s] = tbl
			}
			*k.last = histCache{start: s, hist: h, table: tbl}
		}
		if h == nil {
			a.notOpen(&st, s, now)
			continue
		}
		t := r.times.Value(i)
		cohort := int(codes.Value(i))
		if math.IsNaN(t) || cohort < 0 || cohort >= h.Cohorts() {
			return st, fmt.Errorf("row %d: time or cohort out of range", i)
		}
		fp, err := a.fingerprint(r.ids.Value(i))
		if err != nil {
			return st, fmt.Errorf("row %d: %w", i, err)
		}
		bin, _ := h.Bin(t)
		// The patient's cell is the one Histogram.Add counts: beyond the
		// horizon, a censoring in the last bin.
		ev, _ := km.CensorAtHorizon(t, r.events.Value(i), h.TMax)
		v := packCell(bin, cohort, ev)
		if prev, ok := tbl[fp]; ok {
			// One patient, one record per window: the latest version
			// replaces the one counted.
			if prev == v {
				st.Repeated++
				continue
			}
			old, err := cell(h, prev)
			if err != nil {
				return st, err
			}
			nw, _ := cell(h, v)
			*old--
			*nw++
			tbl[fp] = v
			st.Replaced++
			continue
		}
		if horizon != nil {
			// Cumulative: one contribution per patient for the whole
			// horizon (the tree counter's sensitivity 1), not per window.
			if _, seen := horizon[fp]; seen {
				st.skip(SkipCumulativeSeen, 1)
				continue
			}
			if len(horizon) >= maxPatientsPerHorizon {
				st.skip(SkipMaxPatients, 1)
				a.capped[s] = true
				continue
			}
		}
		if len(tbl) >= maxPatientsPerWindow {
			st.skip(SkipMaxPatients, 1)
			// The bound binds: the window is withheld (closeDue), and in a
			// cumulative horizon the excluded patient has used its one
			// contribution, so it cannot displace another later.
			a.capped[s] = true
			if horizon != nil {
				horizon[fp] = uint64(s)
			}
			continue
		}
		if t > h.TMax {
			st.CensoredAtHorizon++
		}
		if err := h.Add(t, ev, cohort); err != nil {
			return st, err
		}
		tbl[fp] = v
		if horizon != nil {
			horizon[fp] = uint64(s)
		}
		st.Counted++
	}
	return st, nil
}

// checkBinWidth checks the histogram layout of the km and weibull kinds.
func checkBinWidth(c Config) []error {
	w := binWidth(c)
	if !(w > 0) || math.IsInf(w, 0) {
		return []error{fieldErr("params.bin_width", ErrInvalid, "must be positive and finite, got %v", w)}
	}
	if c.TimeMax > 0 && !math.IsInf(c.TimeMax, 0) && len(c.Cohorts) > 0 {
		if bins := math.Floor(c.TimeMax/w) + 1; bins*float64(len(c.Cohorts)) > 1<<22 {
			return []error{fieldErr("params.bin_width", ErrInvalid, "%v bins x %d cohorts is too many cells per window (raise the bin width)", bins, len(c.Cohorts))}
		}
	}
	return nil
}
