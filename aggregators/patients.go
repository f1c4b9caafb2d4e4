package aggregators

import (
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/dpfit/km"
	"github.com/dpsurv/dpsurv/varint"
)

// MaxPatientsPerWindow bounds the distinct patients one window keeps a
// contribution for (public configuration, part of every release's
// metadata). A record of a new patient arriving when its window already
// holds this many is not counted (metric
// dpsurv_aggregator_records_skipped_total, reason max_patients); size it
// above any plausible window. While the bound does not bind, each patient
// contributes exactly one record — its latest version — to a window. When
// it binds, one added patient can displace another (two cells change, a 2ε
// loss for an ε release), so a window in which a bound bound is never
// released: it is withheld (dpsurv_releases_withheld_total, reason
// max_patients), and whether a window reached the bound is public. In a
// cumulative aggregate the displaced patient is also marked as seen for
// the horizon, so it cannot count in a later window and displace another
// there (the cascade an independent review measured at 5ε).
const MaxPatientsPerWindow = 1 << 20

// maxPatientsPerWindow and maxPatientsPerHorizon are the bounds in force
// (the constants; tests lower them).
var maxPatientsPerWindow, maxPatientsPerHorizon = MaxPatientsPerWindow, MaxPatientsPerHorizon

// MaxPatientsPerHorizon bounds the distinct patients a cumulative
// aggregate remembers over its horizon (public configuration, stated in
// every cumulative release's contribution). A new patient beyond it is not
// counted (reason max_patients).
const MaxPatientsPerHorizon = 1 << 22

// SkipCumulativeSeen is the skip reason of a record of a patient already
// counted in an earlier window of a cumulative aggregate's horizon: the
// binary-tree counter is calibrated for one contribution per patient in the
// whole stream, so the first window a patient appears in is the one that
// counts them (with the latest version that arrived while it was open).
const SkipCumulativeSeen = "cumulative_seen"

// SkipMaxPatients is the skip reason of a new patient beyond
// MaxPatientsPerWindow.
const SkipMaxPatients = "max_patients"

// PatientKeyBytes is the size of the random key behind the per-window
// patient fingerprints; it lives in the checkpoint, never leaves it.
const PatientKeyBytes = 32

// patientTable maps a patient fingerprint (a keyed PRF of the record id,
// 128 bits) to that patient's contribution to one open window: for a
// histogram window the packed cell (bin, cohort, event), for a discrete
// window the index of its record. It holds no raw id.
type patientTable map[[2]uint64]uint64

// newPatientKey draws a fresh fingerprint key.
func newPatientKey() []byte {
	k := make([]byte, PatientKeyBytes)
	if _, err := crand.Read(k); err != nil {
		panic("aggregators: crypto/rand failed: " + err.Error()) // never on supported platforms
	}
	return k
}

// setPatientKey installs the fingerprint key (from the checkpoint, or new).
func (a *aggregate) setPatientKey(key []byte) error {
	p, err := dp.NewPRF(key)
	if err != nil {
		return fmt.Errorf("aggregate %q: patient key: %w", a.cfg.Name, err)
	}
	a.prf = p
	return nil
}

// fingerprint returns the patient's keyed fingerprint.
func (a *aggregate) fingerprint(id string) ([2]uint64, error) {
	if a.prf == nil {
		if err := a.setPatientKey(newPatientKey()); err != nil {
			return [2]uint64{}, err
		}
	}
	if err := a.rs.Reset(a.prf, id); err != nil {
		return [2]uint64{}, err
	}
	x, y := a.rs.Tag(dp.FieldPseudonym, 1, 0)
	return [2]uint64{x, y}, nil
}

// packCell packs a histogram contribution.
func packCell(bin, cohort int, event bool) uint64 {
	v := uint64(bin)<<32 | uint64(cohort)<<1
	if event {
		v |= 1
	}
	return v
}

// cell returns the histogram cell a packed contribution counts in.
func cell(h *km.Histogram, v uint64) (*int64, error) {
	bin, cohort, event := int(v>>32), int(uint32(v)>>1), v&1 == 1
	if bin >= h.Bins || cohort >= len(h.Events) {
		return nil, errors.New("patient contribution outside the histogram")
	}
	if event {
		return &h.Events[cohort][bin], nil
	}
	return &h.Censor[cohort][bin], nil
}

// encodePatients writes a table as (fingerprint, value) triples: two
// little-endian words and a uvarint.
func encodePatients(t patientTable) []byte {
	if len(t) == 0 {
		return nil
	}
	out := make([]byte, 0, len(t)*20)
	for fp, v := range t {
		out = binary.LittleEndian.AppendUint64(out, fp[0])
		out = binary.LittleEndian.AppendUint64(out, fp[1])
		out = binary.AppendUvarint(out, v)
	}
	return out
}

func decodePatients(b []byte) (patientTable, error) {
	return decodePatientsMax(b, max(maxPatientsPerWindow, MaxPatientsPerWindow))
}

// decodePatientsMax decodes a table of at most limit entries.
func decodePatientsMax(b []byte, limit int) (patientTable, error) {
	t := patientTable{}
	r := varint.NewDecoder(b)
	for r.Len() > 0 {
		if r.Len() < 17 {
			return nil, errors.New("malformed patient table")
		}
		fp := [2]uint64{r.Uint64(), r.Uint64()}
		v := r.Uvarint()
		if r.Err() != nil {
			return nil, errors.New("malformed patient table")
		}
		t[fp] = v
	}
	if len(t) > limit {
		return nil, fmt.Errorf("patient table above its bound %d", limit)
	}
	return t, nil
}

// patientTableBytes estimates a table's memory (Go map entry overhead
// included).
func patientTableBytes(t patientTable) int { return 48 * len(t) }
