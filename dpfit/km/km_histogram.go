package km

import (
	"fmt"
	"math"
)

// kmMaxCells bounds cohorts x bins of one histogram (64 Mi cells, 1 GiB of
// counts) so a misconfigured bin width fails early instead of exhausting
// memory.
const kmMaxCells = 1 << 26

// Histogram is the compact sufficient statistic of the Kaplan–Meier fits:
// per cohort, the number of events and of censorings in each time bin
// b = [b*BinWidth, (b+1)*BinWidth) of the public domain [0, TMax]. An
// aggregator keeps one per window; its memory is O(Bins x cohorts),
// independent of the number of records (16 bytes a cell).
//
// The bin width is configuration. Narrow bins keep the time resolution
// (with integer times and BinWidth 1 the non-private curve equals R's
// survfit), but every bin carries its own noise in the private fits, so the
// noise a curve accumulates grows with the number of bins it spans while the
// signal per bin shrinks: choose BinWidth so that a bin holds several events
// of the smallest cohort you intend to report (see NoisyHistogramKM).
type Histogram struct {
	BinWidth float64
	TMax     float64
	Bins     int
	Events   [][]int64 // [cohort][bin]
	Censor   [][]int64 // [cohort][bin]
	// Clamped counts the negative times that Add clamped into the first
	// bin (valid input has none; it is a metric, not a private value).
	Clamped int64
	// CensoredAtHorizon counts the records Add administratively censored
	// at the horizon: a time beyond TMax is counted as a censoring in the
	// last bin, whatever its event flag (mechanisms.md section 0, erratum
	// "time beyond the horizon"). An exact count of private records: a
	// metric, never released by a private fit.
	CensoredAtHorizon int64
}

// NewHistogram returns an empty histogram over [0, tMax] with bins of
// binWidth (Bins = floor(tMax/binWidth) + 1, so tMax itself has a bin) for
// cohorts cohorts. All three are public configuration.
func NewHistogram(binWidth, tMax float64, cohorts int) (*Histogram, error) {
	bins, err := histogramBins(binWidth, tMax, cohorts)
	if err != nil {
		return nil, fmt.Errorf("new histogram: %w", err)
	}
	h := &Histogram{BinWidth: binWidth, TMax: tMax, Bins: bins,
		Events: make([][]int64, cohorts), Censor: make([][]int64, cohorts)}
	flat := make([]int64, 2*bins*cohorts)
	for c := 0; c < cohorts; c++ {
		h.Events[c] = flat[(2*c)*bins : (2*c+1)*bins : (2*c+1)*bins]
		h.Censor[c] = flat[(2*c+1)*bins : (2*c+2)*bins : (2*c+2)*bins]
	}
	return h, nil
}

// histogramBins validates a layout and returns its number of bins.
func histogramBins(binWidth, tMax float64, cohorts int) (int, error) {
	if !(binWidth > 0) || math.IsInf(binWidth, 0) {
		return 0, fmt.Errorf("bin width must be positive and finite, got %v", binWidth)
	}
	if !(tMax >= 0) || math.IsInf(tMax, 0) {
		return 0, fmt.Errorf("time bound must be finite and >= 0, got %v", tMax)
	}
	if cohorts < 1 {
		return 0, fmt.Errorf("need at least one cohort, got %d", cohorts)
	}
	fb := math.Floor(tMax/binWidth) + 1
	if fb*float64(cohorts) > kmMaxCells {
		return 0, fmt.Errorf("%v bins x %d cohorts exceed %d cells (raise the bin width)", fb, cohorts, kmMaxCells)
	}
	return int(fb), nil
}

// Cohorts returns the number of cohorts.
func (h *Histogram) Cohorts() int { return len(h.Events) }

// Bin returns the bin of time t, clamping t into [0, TMax]; clamped reports
// whether it had to.
func (h *Histogram) Bin(t float64) (bin int, clamped bool) {
	if t < 0 {
		return 0, true
	}
	if t > h.TMax {
		return h.Bins - 1, true
	}
	b := int(math.Floor(t / h.BinWidth))
	if b >= h.Bins { // rounding at the top edge
		b = h.Bins - 1
	}
	return b, false
}

// BinStart returns the left edge b*BinWidth of bin b, the time at which the
// fits report the bin's events (so with BinWidth 1 and integer times a bin's
// time is the records' time).
func (h *Histogram) BinStart(b int) float64 { return float64(b) * h.BinWidth }

// Add counts one record: its time, whether it is an event (else a
// censoring), and its cohort index. A time beyond TMax is administratively
// censored at the horizon: (TMax, censored), counted in CensoredAtHorizon,
// never an event at TMax that did not happen there. A negative time is
// clamped to 0 (counted in Clamped).
func (h *Histogram) Add(time float64, event bool, cohort int) error {
	if math.IsNaN(time) {
		return fmt.Errorf("histogram add: time is NaN")
	}
	if cohort < 0 || cohort >= len(h.Events) {
		return fmt.Errorf("histogram add: cohort %d outside [0, %d)", cohort, len(h.Events))
	}
	b, clamped := h.Bin(time)
	event, beyond := CensorAtHorizon(time, event, h.TMax)
	switch {
	case beyond:
		h.CensoredAtHorizon++
	case clamped:
		h.Clamped++
	}
	if event {
		h.Events[cohort][b]++
	} else {
		h.Censor[cohort][b]++
	}
	return nil
}

// sameLayout reports whether o has h's bins and cohorts.
func (h *Histogram) sameLayout(o *Histogram) error {
	if o == nil {
		return fmt.Errorf("nil histogram")
	}
	if o.BinWidth != h.BinWidth || o.TMax != h.TMax || o.Bins != h.Bins || len(o.Events) != len(h.Events) {
		return fmt.Errorf("layout differs (bin width %v/%v, tmax %v/%v, bins %d/%d, cohorts %d/%d)",
			h.BinWidth, o.BinWidth, h.TMax, o.TMax, h.Bins, o.Bins, len(h.Events), len(o.Events))
	}
	if err := h.check(); err != nil {
		return err
	}
	return o.check()
}

// check verifies the slices match Bins (a Histogram may have been built by
// hand or decoded).
func (h *Histogram) check() error {
	if h.Bins < 1 || len(h.Events) < 1 || len(h.Censor) != len(h.Events) {
		return fmt.Errorf("malformed histogram (%d bins, %d event rows, %d censor rows)", h.Bins, len(h.Events), len(h.Censor))
	}
	if !(h.BinWidth > 0) || math.IsInf(h.BinWidth, 0) {
		return fmt.Errorf("malformed histogram: bin width %v", h.BinWidth)
	}
	for c := range h.Events {
		if len(h.Events[c]) != h.Bins || len(h.Censor[c]) != h.Bins {
			return fmt.Errorf("malformed histogram: cohort %d has %d/%d bins, want %d", c, len(h.Events[c]), len(h.Censor[c]), h.Bins)
		}
	}
	return nil
}

// Merge adds o's counts into h (windows or partitions of one stream); the
// layouts must be equal.
func (h *Histogram) Merge(o *Histogram) error {
	if err := h.sameLayout(o); err != nil {
		return fmt.Errorf("histogram merge: %w", err)
	}
	for c := range h.Events {
		he, hc, oe, oc := h.Events[c], h.Censor[c], o.Events[c], o.Censor[c]
		for b := range he {
			he[b] += oe[b]
			hc[b] += oc[b]
		}
	}
	h.Clamped += o.Clamped
	h.CensoredAtHorizon += o.CensoredAtHorizon
	return nil
}

// CensorAtHorizon applies administrative censoring at the public horizon
// tMax: a record followed beyond tMax is, at tMax, alive and under
// observation, so its event flag becomes false (censored); beyond reports
// that the time was past the horizon. Times within [.., tMax] keep their
// flag. Every central fit applies it before any mechanism (it is a
// function of one record, so it costs no privacy); the caller maps the
// time itself to tMax.
func CensorAtHorizon(t float64, event bool, tMax float64) (ev, beyond bool) {
	if t > tMax {
		return false, true
	}
	return event, false
}

// Records returns the number of records counted (exact: not for release).
func (h *Histogram) Records() int64 {
	var n int64
	for c := range h.Events {
		for b := range h.Events[c] {
			n += h.Events[c][b] + h.Censor[c][b]
		}
	}
	return n
}

// MemoryBytes returns the size of the counts, 16 bytes per (cohort, bin).
func (h *Histogram) MemoryBytes() int { return 16 * h.Bins * len(h.Events) }
