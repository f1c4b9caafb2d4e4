package km

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/varint"
)

// ContinualKM re-publishes a cumulative noisy-histogram Kaplan–Meier after
// every window without paying epsilon per window: each (cohort, bin, event
// or censoring) cell's per-window increments go through one TreeCounter, so
// all Horizon releases together are Epsilon-DP (add/remove-one of a record
// anywhere in the stream, sensitivity 1, node noise scale Levels x 1 /
// Epsilon). The unit protected is whatever contributes at most one record
// to the whole stream: a caller protecting patients must count each patient
// in one window only (the aggregators keep a horizon-wide patient table); a
// patient counted in k windows moves k leaves and costs k x Epsilon. Release t's cells carry noise of
// variance popcount(t) x Var(node noise); the curve is then drawn by the
// same signed post-processing as NoisyHistogramKM.
//
// The state (MarshalBinary) holds the drawn noise so that a restart neither
// redraws nor re-spends; it also holds exact partial sums and is as
// sensitive as the input.
type ContinualKM struct {
	binWidth, tMax float64
	bins, cohorts  int
	opts           KMOptions
	counter        *TreeCounter
}

// NewContinualKM prepares continual release over at most horizon windows of
// histograms with the given public layout. opts.Epsilon is the budget of the
// whole stream and must be finite.
func NewContinualKM(binWidth, tMax float64, cohorts, horizon int, opts KMOptions) (*ContinualKM, error) {
	bins, err := histogramBins(binWidth, tMax, cohorts)
	if err != nil {
		return nil, fmt.Errorf("continual km: %w", err)
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("continual km: %w", err)
	}
	if !(o.Epsilon > 0) || math.IsInf(o.Epsilon, 0) {
		return nil, fmt.Errorf("continual km: epsilon must be positive and finite, got %v", o.Epsilon)
	}
	tc, err := NewTreeCounter(horizon, 2*bins*cohorts, KMCellSensitivity, o.Epsilon)
	if err != nil {
		return nil, fmt.Errorf("continual km: %w", err)
	}
	return &ContinualKM{binWidth: binWidth, tMax: tMax, bins: bins, cohorts: cohorts, opts: o, counter: tc}, nil
}

// NewWindow returns an empty histogram with the release's layout, for the
// aggregator to fill with one window's records.
func (c *ContinualKM) NewWindow() (*Histogram, error) {
	return NewHistogram(c.binWidth, c.tMax, c.cohorts)
}

// Releases returns the number of releases made.
func (c *ContinualKM) Releases() int { return c.counter.Steps() }

// Horizon returns the maximum number of releases.
func (c *ContinualKM) Horizon() int { return c.counter.Horizon() }

// Release adds one window's histogram and publishes the cumulative curves.
// After Horizon releases it returns ErrHorizonReached.
func (c *ContinualKM) Release(src dp.Source, window *Histogram) (KMResult, error) {
	if window == nil {
		return KMResult{}, fmt.Errorf("continual km release: nil window")
	}
	if window.BinWidth != c.binWidth || window.TMax != c.tMax || window.Bins != c.bins || window.Cohorts() != c.cohorts {
		return KMResult{}, fmt.Errorf("continual km release: window layout differs from the release's")
	}
	if err := window.check(); err != nil {
		return KMResult{}, fmt.Errorf("continual km release: %w", err)
	}
	inc := make([]int64, c.counter.Cells())
	for k := 0; k < c.cohorts; k++ {
		for b := 0; b < c.bins; b++ {
			i := 2 * (k*c.bins + b)
			inc[i], inc[i+1] = window.Events[k][b], window.Censor[k][b]
		}
	}
	if err := c.counter.Step(src, inc); err != nil {
		return KMResult{}, fmt.Errorf("continual km release: %w", err)
	}
	return c.current()
}

// Current re-publishes the latest release from the stored noisy state (the
// same values as the last Release; nothing is drawn). Before any release it
// is an error.
func (c *ContinualKM) Current() (KMResult, error) {
	if c.counter.Steps() == 0 {
		return KMResult{}, fmt.Errorf("continual km: nothing released yet")
	}
	return c.current()
}

func (c *ContinualKM) current() (KMResult, error) {
	prefix := c.counter.Prefix(nil)
	ev := make([][]float64, c.cohorts)
	ce := make([][]float64, c.cohorts)
	for k := 0; k < c.cohorts; k++ {
		ev[k] = make([]float64, c.bins)
		ce[k] = make([]float64, c.bins)
		for b := 0; b < c.bins; b++ {
			i := 2 * (k*c.bins + b)
			ev[k][b], ce[k][b] = float64(prefix[i]), float64(prefix[i+1])
		}
	}
	t, T := c.counter.Steps(), c.counter.Horizon()
	res := KMResult{
		Method:       MethodTreeKM,
		Epsilon:      c.opts.Epsilon,
		EpsilonTotal: c.opts.Epsilon,
		Guarantee:    GuaranteePureDP,
		Neighbouring: NeighbouringAddRemove,
		BinWidth:     c.binWidth,
		Mechanism: fmt.Sprintf("cumulative noisy-histogram km by binary-tree counter (Chan-Shi-Song): release %d of %d, "+
			"%d levels, two-sided geometric node noise of scale %g; epsilon covers all %d releases",
			t, T, c.counter.Levels(), c.counter.NodeScale(), T),
	}
	layout := &Histogram{BinWidth: c.binWidth, TMax: c.tMax, Bins: c.bins}
	// every cell's noise is independent, of variance NoiseVariance
	res.countNoiseSD = math.Sqrt(2 * float64(c.bins) * c.counter.NoiseVariance())
	if err := fillKMResult(&res, layout, ev, ce, c.counter.NoiseVariance(), c.opts); err != nil {
		return KMResult{}, fmt.Errorf("continual km release: %w", err)
	}
	markUncalibrated(&res)
	return res, nil
}

const continualMagic = "DPCKM001"

// MarshalBinary encodes the layout, options and counter state (drawn noise
// included).
func (c *ContinualKM) MarshalBinary() ([]byte, error) {
	tc, err := c.counter.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("continual km encode: %w", err)
	}
	out := []byte(continualMagic)
	putU := func(v uint64) { out = binary.AppendUvarint(out, v) }
	putU(math.Float64bits(c.binWidth))
	putU(math.Float64bits(c.tMax))
	putU(uint64(c.cohorts))
	putU(math.Float64bits(c.opts.Conf))
	putU(math.Float64bits(c.opts.MaxNoiseStdErr))
	putU(uint64(len(tc)))
	return append(out, tc...), nil
}

// UnmarshalBinary restores a ContinualKM written by MarshalBinary.
func (c *ContinualKM) UnmarshalBinary(data []byte) error {
	if len(data) < len(continualMagic) || string(data[:len(continualMagic)]) != continualMagic {
		return fmt.Errorf("continual km decode: bad magic")
	}
	r := varint.NewDecoder(data[len(continualMagic):])
	getU := r.Uvarint
	bw, tmax := math.Float64frombits(getU()), math.Float64frombits(getU())
	cohorts := getU()
	conf, maxSE := math.Float64frombits(getU()), math.Float64frombits(getU())
	n := getU()
	if err := r.Err(); err != nil {
		return fmt.Errorf("continual km decode: header: %w", err)
	}
	if cohorts > math.MaxInt32 || n != uint64(r.Len()) {
		return fmt.Errorf("continual km decode: malformed header")
	}
	tc := new(TreeCounter)
	if err := tc.UnmarshalBinary(data[len(data)-int(n):]); err != nil {
		return fmt.Errorf("continual km decode: %w", err)
	}
	bins, err := histogramBins(bw, tmax, int(cohorts))
	if err != nil {
		return fmt.Errorf("continual km decode: %w", err)
	}
	if tc.Cells() != 2*bins*int(cohorts) {
		return fmt.Errorf("continual km decode: counter has %d cells, layout needs %d", tc.Cells(), 2*bins*int(cohorts))
	}
	o, err := KMOptions{Epsilon: tc.Epsilon(), Conf: conf, MaxNoiseStdErr: maxSE}.withDefaults()
	if err != nil {
		return fmt.Errorf("continual km decode: %w", err)
	}
	*c = ContinualKM{binWidth: bw, tMax: tmax, bins: bins, cohorts: int(cohorts), opts: o, counter: tc}
	return nil
}
