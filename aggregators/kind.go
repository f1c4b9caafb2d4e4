package aggregators

import (
	"math"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/dpfit"
)

// kind is what differs between aggregate kinds: one type per kind, one
// file per kind (km.go, cumulative.go, weibull.go, discrete.go). A new
// kind implements it, adds its params (tagged with the kind) to Params
// and is returned by kindOf.
type kind interface {
	// defaults fills the kind's params defaults (the window's are set).
	defaults(c *Config)
	// check validates the kind's params after defaults; each error is a
	// *FieldError relative to the aggregate.
	check(c Config) []error
	// messages draws window c's release: the only place noise is drawn
	// for a window (a cumulative aggregate's noise is drawn when the
	// window is stepped into the counter, closeWindow).
	messages(a *aggregate, c *closing, src dp.Source, remaining map[string]float64) ([]FitMessage, error)
	// exactCount reports whether the kind treats its window's record count
	// as public and releases it exactly (n public, replace-one).
	exactCount(p Params) bool

	// init sets up the kind's state in a new aggregate.
	init(a *aggregate) error
	// open makes the empty state of window s (a.open[s] and the kind's).
	open(a *aggregate, s int64)
	// add counts the rows of a canonical record into their open windows
	// (a.register has run).
	add(a *aggregate, rec arrow.Record, now int64) (AddStats, error)
	// close takes window s (histogram h, nil for discrete) out of the
	// kind's open state into a closing window; the caller has removed it
	// from a.open.
	close(a *aggregate, s int64, h *dpfit.Histogram, src dp.Source) (*closing, error)
	// save encodes open window s's state for the checkpoint; load and
	// loadClosing restore an open and a closing window.
	save(a *aggregate, s int64) histSnap
	load(a *aggregate, o histSnap) error
	loadClosing(a *aggregate, c closingSnap, cl *closing) error
}

// horizonState is implemented by kinds whose state outlives the windows
// (cumulative km: the tree counter and the horizon's patients): their
// part of the checkpoint.
type horizonState interface {
	saveHorizon(a *aggregate, s *aggSnapshot) error
	loadHorizon(a *aggregate, s *aggSnapshot) error
}

// histKind is the window state of the histogram kinds (km, weibull): one
// dpfit.Histogram per open window, counted by addHist.
type histKind struct{}

func (histKind) init(*aggregate) error      { return nil }
func (histKind) open(a *aggregate, s int64) { a.open[s] = a.newHist() }
func (histKind) add(a *aggregate, rec arrow.Record, now int64) (AddStats, error) {
	return a.addHist(rec, now)
}
func (histKind) close(_ *aggregate, s int64, h *dpfit.Histogram, _ dp.Source) (*closing, error) {
	return &closing{start: s, hist: h}, nil
}
func (histKind) save(a *aggregate, s int64) histSnap { return histSnap{Cells: encodeHist(a.open[s])} }
func (histKind) load(a *aggregate, o histSnap) error {
	h := a.newHist()
	if err := decodeHist(h, o.Cells); err != nil {
		return err
	}
	a.open[o.Start] = h
	return nil
}
func (histKind) loadClosing(a *aggregate, c closingSnap, cl *closing) error {
	cl.hist = a.newHist()
	return decodeHist(cl.hist, c.Cells)
}

// kindOf returns the kind of c: km (cumulative when c.Window.Cumulative),
// weibull, discrete, or otherKind for a kind that does not exist (Check
// reports it).
func kindOf(c Config) kind {
	switch c.Kind {
	case KindKM:
		if c.Window.Cumulative {
			return cumulativeKind{}
		}
		return kmKind{}
	case KindWeibull:
		return weibullKind{}
	case KindDiscrete:
		return discreteKind{}
	}
	return otherKind{}
}

// ReleasesExactCount reports whether the aggregate treats its window's
// record count as public and releases it exactly (n public, replace-one):
// kind discrete, and weibull with method saa.
func (c Config) ReleasesExactCount() bool {
	c, _ = c.Resolved()
	return kindOf(c).exactCount(c.Params)
}

// otherKind stands for a kind that does not exist: Check reports the kind
// (and a bad bin width, as for the histogram kinds); nothing is released.
type otherKind struct{ histKind }

func (otherKind) defaults(c *Config) {
	if c.Params.BinWidth == 0 {
		c.Params.BinWidth = 1
	}
}
func (otherKind) check(c Config) []error { return checkBinWidth(c) }
func (otherKind) messages(a *aggregate, _ *closing, _ dp.Source, _ map[string]float64) ([]FitMessage, error) {
	return nil, fieldErr("kind", ErrInvalid, "%q is not km, weibull or discrete", a.cfg.Kind)
}
func (otherKind) exactCount(Params) bool { return false }

// checkBinWidth checks the histogram layout of the km and weibull kinds.
func checkBinWidth(c Config) []error {
	p := c.Params
	if !(p.BinWidth > 0) || math.IsInf(p.BinWidth, 0) {
		return []error{fieldErr("params.bin_width", ErrInvalid, "must be positive and finite, got %v", p.BinWidth)}
	}
	if c.TimeMax > 0 && !math.IsInf(c.TimeMax, 0) && len(c.Cohorts) > 0 {
		if bins := math.Floor(c.TimeMax/p.BinWidth) + 1; bins*float64(len(c.Cohorts)) > 1<<22 {
			return []error{fieldErr("params.bin_width", ErrInvalid, "%v bins x %d cohorts is too many cells per window (raise the bin width)", bins, len(c.Cohorts))}
		}
	}
	return nil
}
