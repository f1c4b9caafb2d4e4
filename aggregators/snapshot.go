package aggregators

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
)

const snapshotVersion = 1

// snapshot is the checkpoint: input positions plus every aggregate's window
// state. It holds exact counts — as sensitive as the input topic.
type snapshot struct {
	Version     int                     `json:"version"`
	Topic       string                  `json:"topic"`
	Offsets     map[string]int64        `json:"offsets"` // partition -> next offset to count
	Aggregates  map[string]*aggSnapshot `json:"aggregates"`
	Unpublished []string                `json:"unpublished"` // ledger keys released but not yet written
	// PatientKey keys the per-window patient fingerprints (patients.go);
	// absent in checkpoints written before per-patient counting.
	PatientKey []byte `json:"patient_key,omitempty"`
}

type aggSnapshot struct {
	Fingerprint  string        `json:"fingerprint"`
	ClosedBefore int64         `json:"closed_before_ns"`
	Open         []histSnap    `json:"open"`
	Closing      []closingSnap `json:"closing"`
	Tree         []byte        `json:"tree,omitempty"`
	// Horizon is a cumulative aggregate's horizon-wide patient table
	// (encodePatients; values are window starts).
	Horizon []byte `json:"horizon_patients,omitempty"`
	// HorizonTracked marks a checkpoint written with the horizon table
	// (an empty table is omitted).
	HorizonTracked bool `json:"horizon_tracked,omitempty"`
	// HorizonEpoch is the number of the horizon the tree counts (0 in
	// checkpoints from before epochs: the first).
	HorizonEpoch int `json:"horizon_epoch,omitempty"`
	// Foreign: see aggregate.foreign.
	Foreign bool `json:"foreign_cumulative,omitempty"`
}

type histSnap struct {
	Start int64  `json:"start_ns"`
	Cells []byte `json:"cells"`
	// Records is a discrete window's record state (discreteWindow.encode).
	Records []byte `json:"records,omitempty"`
	// Patients is the window's patient table (encodePatients).
	Patients []byte `json:"patients,omitempty"`
	// Capped: a patient bound bound in the window (it is withheld).
	Capped bool `json:"capped,omitempty"`
}

type closingSnap struct {
	Start   int64  `json:"start_ns"`
	Cells   []byte `json:"cells,omitempty"`
	Step    int    `json:"step,omitempty"`
	Draw    string `json:"draw,omitempty"`
	Records []byte `json:"records,omitempty"`
	// Withhold is closing.withhold (a window withheld unfitted).
	Withhold string `json:"withhold,omitempty"`
}

func (a *aggregate) snapshot() (*aggSnapshot, error) {
	s := &aggSnapshot{Fingerprint: a.cfg.Fingerprint(), ClosedBefore: a.closedBefore, Open: []histSnap{}, Closing: []closingSnap{}}
	starts := make([]int64, 0, len(a.open))
	for st := range a.open {
		starts = append(starts, st)
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	for _, st := range starts {
		o := histSnap{Start: st, Patients: encodePatients(a.patients[st]), Capped: a.capped[st]}
		o.Cells, o.Records = a.open[st].snapshot()
		s.Open = append(s.Open, o)
	}
	for _, c := range a.closing {
		cs := closingSnap{Start: c.start, Step: c.step, Draw: c.draw, Withhold: c.withhold}
		if c.w != nil {
			cs.Cells, cs.Records = c.w.snapshot()
		}
		s.Closing = append(s.Closing, cs)
	}
	s.Foreign = a.foreign
	if a.counter != nil {
		if err := a.counter.save(a, s); err != nil {
			return nil, fmt.Errorf("aggregate %q: %w", a.cfg.Name, err)
		}
	}
	return s, nil
}

func (a *aggregate) restore(s *aggSnapshot) error {
	if fp := a.cfg.Fingerprint(); s.Fingerprint != fp {
		return fmt.Errorf("aggregate %q: its configuration changed since the state was saved (fingerprint %s, saved %s): "+
			"give the changed aggregate a new name; its old window keys are in the ledger", a.cfg.Name, fp, s.Fingerprint)
	}
	a.closedBefore = s.ClosedBefore
	for _, o := range s.Open {
		if len(o.Patients) > 0 {
			pt, err := decodePatients(o.Patients)
			if err != nil {
				return fmt.Errorf("aggregate %q: open window %d: %w", a.cfg.Name, o.Start, err)
			}
			a.patients[o.Start] = pt
		}
		w, err := a.kind.restore(a, o.Cells, o.Records)
		if err != nil {
			return fmt.Errorf("aggregate %q: open window %d: %w", a.cfg.Name, o.Start, err)
		}
		a.open[o.Start] = w
		if o.Capped {
			a.capped[o.Start] = true
		}
	}
	for _, c := range s.Closing {
		cl := &closing{start: c.Start, step: c.Step, draw: c.Draw, withhold: c.Withhold}
		if a.counter == nil && c.Withhold == "" { // a counter kind's closing window is in its counter
			w, err := a.kind.restore(a, c.Cells, c.Records)
			if err != nil {
				return fmt.Errorf("aggregate %q: closing window %d: %w", a.cfg.Name, c.Start, err)
			}
			cl.w = w
		}
		a.closing = append(a.closing, cl)
	}
	a.foreign = s.Foreign
	if a.counter != nil {
		if err := a.counter.load(a, s); err != nil {
			return fmt.Errorf("aggregate %q: %w", a.cfg.Name, err)
		}
	}
	return nil
}

func offsetsToJSON(m map[int]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for p, o := range m {
		out[strconv.Itoa(p)] = o
	}
	return out
}

func offsetsFromJSON(m map[string]int64) (map[int]int64, error) {
	out := make(map[int]int64, len(m))
	for k, o := range m {
		p, err := strconv.Atoi(k)
		if err != nil || p < 0 || o < 0 {
			return nil, fmt.Errorf("malformed offset %q: %d", k, o)
		}
		out[p] = o
	}
	return out, nil
}

func decodeSnapshot(b []byte) (*snapshot, error) {
	var s snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("decode aggregator state: %w", err)
	}
	if s.Version != snapshotVersion {
		return nil, fmt.Errorf("decode aggregator state: version %d, want %d", s.Version, snapshotVersion)
	}
	return &s, nil
}
