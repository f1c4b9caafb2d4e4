package aggregators

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/dpfit/km"
)

// cumulativeKind is the km kind with window.cumulative: the cumulative
// curve re-published every window through a binary-tree counter
// (km.ContinualKM), epsilon charged once for the horizon. Its params
// and their defaults are km's. It is a counter: its state outlives the
// windows.
type cumulativeKind struct {
	kmKind
	tree *km.ContinualKM
	// horizon maps every patient counted in the horizon to the start (ns,
	// as uint64) of the one window that counts them; it outlives the
	// windows and is checkpointed.
	horizon patientTable
	// epoch is the number of the horizon this tree counts (its ledger
	// charge is cumulativeKey(name, epoch)); 0 until known: restored from
	// the checkpoint, or chosen at the first charge (horizonKey).
	epoch int
}

func (k *cumulativeKind) init(a *aggregate) error {
	t, err := km.NewContinualKM(binWidth(a.cfg), a.cfg.TimeMax, len(a.cfg.Cohorts), a.cfg.Window.Horizon, k.options(a.cfg))
	if err != nil {
		return err
	}
	k.tree, k.horizon = t, patientTable{}
	return nil
}

// plan: the horizon is charged epsilon once (ledger key
// <aggregate>/cumulative) before any node noise is drawn; each window's
// release is post-processing of the charged counter (0 as the key's
// release; the horizon's epsilon if it ends up a second value of the key,
// its node noise then public too), one window at a time.
func (k *cumulativeKind) plan(a *aggregate) plan {
	return plan{epsilon: 0, superseded: a.cfg.ChargedEpsilon(), serial: true,
		charge: cumulativeKey(a.cfg.Name, 1), chargeDoc: func(remaining map[string]float64) ([]byte, error) {
			return k.chargeDoc(a, remaining)
		}}
}

// horizonKey is the ledger key of the charge this tree's horizon needs.
// The ledger, not the checkpoint, is the authority on what was released:
// a tree restored from the checkpoint keeps its horizon's epoch; a tree
// that starts empty (no checkpoint, a lost checkpoint, or an aggregate
// removed from the configuration and put back under its name) while the
// ledger already holds charges of earlier horizons of this name counts a
// new horizon, epoch one past the last charged, which is charged anew —
// its releases are about the same patients as the lost horizon's, so
// reusing that charge would publish a second horizon for the price of one.
// restarted is true when that happened (the caller logs and counts it).
func (k *cumulativeKind) horizonKey(a *aggregate, charged func(key string) bool) (key string, restarted bool) {
	if k.epoch == 0 {
		ep := 1
		for charged(cumulativeKey(a.cfg.Name, ep)) {
			ep++
		}
		k.epoch, restarted = ep, ep > 1
	}
	return cumulativeKey(a.cfg.Name, k.epoch), restarted
}

// add counts the rows into their windows' histograms, each patient once
// for the horizon.
func (k *cumulativeKind) add(a *aggregate, rec arrow.Record, now int64) (AddStats, error) {
	return k.count(a, rec, now, k.horizon)
}

// step steps the tree counter with window s's histogram (drawing that
// node's noise); the caller must have charged the horizon first.
func (k *cumulativeKind) step(a *aggregate, s int64, w window, src dp.Source) (*closing, error) {
	if k.tree.Releases() >= k.tree.Horizon() {
		return nil, errHorizon
	}
	if _, err := k.tree.Release(src, histOf(w)); err != nil {
		return nil, fmt.Errorf("aggregate %q: step tree counter: %w", a.cfg.Name, err)
	}
	return &closing{start: s, step: k.tree.Releases(), draw: fmt.Sprintf("%016x%016x", src.Uint64(), src.Uint64())}, nil
}

func (k *cumulativeKind) save(_ *aggregate, s *aggSnapshot) error {
	b, err := k.tree.MarshalBinary()
	if err != nil {
		return err
	}
	s.Tree = b
	s.Horizon, s.HorizonTracked = encodePatients(k.horizon), true
	if k.epoch > 1 || k.tree.Releases() == 0 {
		// epoch 1 with releases is implied (and so checkpoints of the
		// first horizon keep the bytes of earlier versions)
		s.HorizonEpoch = k.epoch
	}
	return nil
}

func (k *cumulativeKind) load(a *aggregate, s *aggSnapshot) error {
	if len(s.Tree) == 0 {
		return errors.New("saved state lacks the tree counter")
	}
	if err := k.tree.UnmarshalBinary(s.Tree); err != nil {
		return err
	}
	if k.tree.Releases() > 0 && !s.HorizonTracked {
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
	k.horizon = hp
	k.epoch = s.HorizonEpoch
	if k.epoch == 0 && k.tree.Releases() > 0 {
		k.epoch = 1 // a checkpoint from before horizon epochs: its charge is the first key
	}
	for st, tbl := range a.patients { // open windows count their patients
		for fp := range tbl {
			if _, ok := k.horizon[fp]; !ok {
				k.horizon[fp] = uint64(st)
			}
		}
	}
	return nil
}

// bytes is the tree counter's cells (two int64 per cell and kind, one
// histogram per level) and the horizon's patient table.
func (k *cumulativeKind) bytes(a *aggregate) int {
	bins := int(math.Floor(a.cfg.TimeMax/binWidth(a.cfg))) + 1
	levels := 0
	for h := a.cfg.Window.Horizon; h > 0; h >>= 1 {
		levels++
	}
	return 2*8*2*bins*len(a.cfg.Cohorts)*levels + patientTableBytes(k.horizon)
}

func (k *cumulativeKind) release(a *aggregate, c *closing, _ dp.Source, remaining map[string]float64) ([]FitMessage, error) {
	if c.step != k.tree.Releases() {
		return nil, fmt.Errorf("aggregate %q: cumulative window at step %d, counter at %d", a.cfg.Name, c.step, k.tree.Releases())
	}
	res, err := k.tree.Current()
	if err != nil {
		return nil, fmt.Errorf("aggregate %q: %w", a.cfg.Name, err)
	}
	msgs := k.messages(a, c, res, remaining, 0, compositionCumulative)
	for i := range msgs {
		msgs[i].ReleaseIndex, msgs[i].Horizon, msgs[i].HorizonEpoch = c.step, a.cfg.Window.Horizon, k.epoch
		msgs[i].Contribution = ContributionCumulative
		msgs[i].Public = append(msgs[i].Public, "horizon")
	}
	return msgs, nil
}

// chargeDoc is the ledger release of a cumulative aggregate's one charge
// (nothing is published from it).
func (k *cumulativeKind) chargeDoc(a *aggregate, remaining map[string]float64) ([]byte, error) {
	epoch := 1
	if k.epoch > 0 {
		epoch = k.epoch
	}
	doc := map[string]any{
		"aggregate": a.cfg.Name, "kind": a.cfg.Kind, "cumulative": true, "horizon": a.cfg.Window.Horizon,
		"horizon_epoch": epoch, "epsilon": a.cfg.Epsilon, "epsilon_charged": a.cfg.ChargedEpsilon(), "budget_remaining": remaining,
		"note": "one charge for all horizon releases of the binary-tree counter",
	}
	if epoch > 1 {
		doc["note"] = "one charge for all releases of a new horizon: the state of the previous horizon was lost (checkpoint missing or the aggregate removed and re-added), so its patients may be counted again"
	}
	return json.Marshal(doc)
}
