package aggregators

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/dpfit"
)

// cumulativeKind is the km kind with window.cumulative: the cumulative
// curve re-published every window through a binary-tree counter
// (dpfit.ContinualKM), epsilon charged once for the horizon. Its params
// and their defaults are km's.
type cumulativeKind struct{ kmKind }

func (cumulativeKind) init(a *aggregate) error {
	t, err := dpfit.NewContinualKM(a.cfg.Params.BinWidth, a.cfg.TimeMax, len(a.cfg.Cohorts), a.cfg.Window.Horizon, a.kmOptions())
	if err != nil {
		return err
	}
	a.tree, a.horizon = t, patientTable{}
	return nil
}

// close steps the tree counter with window s's histogram (drawing that
// node's noise); the caller must have charged the horizon first.
func (cumulativeKind) close(a *aggregate, s int64, h *dpfit.Histogram, src dp.Source) (*closing, error) {
	if a.tree.Releases() >= a.tree.Horizon() {
		return nil, errHorizon
	}
	if _, err := a.tree.Release(src, h); err != nil {
		return nil, fmt.Errorf("aggregate %q: step tree counter: %w", a.cfg.Name, err)
	}
	return &closing{start: s, step: a.tree.Releases(), draw: fmt.Sprintf("%016x%016x", src.Uint64(), src.Uint64())}, nil
}

// loadClosing: a closing cumulative window is its step and draw (already
// in cl); its counts are in the tree counter.
func (cumulativeKind) loadClosing(*aggregate, closingSnap, *closing) error { return nil }

func (cumulativeKind) saveHorizon(a *aggregate, s *aggSnapshot) error {
	b, err := a.tree.MarshalBinary()
	if err != nil {
		return err
	}
	s.Tree = b
	s.Horizon, s.HorizonTracked, s.Foreign = encodePatients(a.horizon), true, a.foreign
	return nil
}

func (cumulativeKind) loadHorizon(a *aggregate, s *aggSnapshot) error {
	if len(s.Tree) == 0 {
		return errors.New("saved state lacks the tree counter")
	}
	if err := a.tree.UnmarshalBinary(s.Tree); err != nil {
		return err
	}
	if a.tree.Releases() > 0 && !s.HorizonTracked {
		// a checkpoint from before horizon-wide patient counting: the
		// patients of the released windows are unknown, and counting
		// them again would exceed the counter's sensitivity.
		return errors.New("saved state lacks the horizon patient table (written by an older version): " +
			"give the cumulative aggregate a new name")
	}
	hp, err := decodePatientsMax(s.Horizon, MaxPatientsPerHorizon)
	if err != nil {
		return fmt.Errorf("horizon patients: %w", err)
	}
	a.horizon, a.foreign = hp, s.Foreign
	for st, tbl := range a.patients { // open windows count their patients
		for fp := range tbl {
			if _, ok := a.horizon[fp]; !ok {
				a.horizon[fp] = uint64(st)
			}
		}
	}
	return nil
}

func (cumulativeKind) messages(a *aggregate, c *closing, _ dp.Source, remaining map[string]float64) ([]FitMessage, error) {
	return a.cumulativeMessages(c, remaining)
}

func (a *aggregate) cumulativeMessages(c *closing, remaining map[string]float64) ([]FitMessage, error) {
	if c.step != a.tree.Releases() {
		return nil, fmt.Errorf("aggregate %q: cumulative window at step %d, counter at %d", a.cfg.Name, c.step, a.tree.Releases())
	}
	res, err := a.tree.Current()
	if err != nil {
		return nil, fmt.Errorf("aggregate %q: %w", a.cfg.Name, err)
	}
	msgs := a.fromKM(c, res, remaining, 0, compositionCumulative)
	for i := range msgs {
		msgs[i].ReleaseIndex, msgs[i].Horizon = c.step, a.cfg.Window.Horizon
		msgs[i].Contribution = ContributionCumulative
	}
	return msgs, nil
}

// cumulativeChargeDoc is the ledger release of a cumulative aggregate's one
// charge (nothing is published from it).
func (a *aggregate) cumulativeChargeDoc(remaining map[string]float64) ([]byte, error) {
	return json.Marshal(map[string]any{
		"aggregate": a.cfg.Name, "kind": a.cfg.Kind, "cumulative": true, "horizon": a.cfg.Window.Horizon,
		"epsilon": a.cfg.Epsilon, "budget_remaining": remaining,
		"note": "one charge for all horizon releases of the binary-tree counter",
	})
}
