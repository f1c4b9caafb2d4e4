package regression

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Data is one window of time-to-event records. Time is in the configured
// unit (days for the shared data sets), Event is true for an observed event
// and false for a censoring, X holds the covariates row by row ([row][cov])
// and Site, optional, names the institution that holds each row (HPPCox).
type Data struct {
	Time  []float64
	Event []bool
	X     [][]float64
	Site  []string
}

// Len is the number of records.
func (d Data) Len() int { return len(d.Time) }

// Covariates is the number of covariates (columns of X), 0 without rows.
func (d Data) Covariates() int {
	if len(d.X) == 0 {
		return 0
	}
	return len(d.X[0])
}

// validate checks the shapes and that every value is finite. It never
// reports a value, only its position.
func (d Data) validate() error {
	n := len(d.Time)
	if n == 0 {
		return errors.New("no records")
	}
	if len(d.Event) != n {
		return fmt.Errorf("event has %d entries, time has %d", len(d.Event), n)
	}
	if len(d.X) != 0 && len(d.X) != n {
		return fmt.Errorf("x has %d rows, time has %d", len(d.X), n)
	}
	if len(d.Site) != 0 && len(d.Site) != n {
		return fmt.Errorf("site has %d entries, time has %d", len(d.Site), n)
	}
	p := d.Covariates()
	for i, t := range d.Time {
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return fmt.Errorf("time of row %d is not finite", i)
		}
	}
	for i, row := range d.X {
		if len(row) != p {
			return fmt.Errorf("row %d has %d covariates, row 0 has %d", i, len(row), p)
		}
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("covariate %d of row %d is not finite", j, i)
			}
		}
	}
	return nil
}

// Guarantee labels (mechanisms.md section 0).
const (
	GuaranteePureDP = "pure-dp"
	// GuaranteePureDPCertified is Ext-Out-Pert's label. Its sensitivity
	// holds for the certified minimiser; whether the fit reaches the
	// certificate (else the release is the fallback, fallback: true) is
	// decided on the data, so the guarantee is conditional on that event:
	// for neighbours of which one certifies and the other does not, the
	// published fallback flag differs with certainty. Not expected for the
	// strongly convex objective on valid data, but not proved away.
	GuaranteePureDPCertified = "pure-dp conditional on certification (whether the fit is certified or released as the fallback is a data-dependent event outside the guarantee)"
	GuaranteeMCMC            = "approximate (mcmc)"
	// GuaranteeObjective is Ext-Obj-Pert's label. Objective perturbation
	// is pure DP for continuous noise b and the exact minimiser; its proof
	// maps b one-to-one onto the output, and for lattice noise (which is
	// all a computer samples exactly) the pre-image under a neighbour is
	// off the lattice, so no exact claim survives. It is therefore not
	// labelled pure-dp.
	GuaranteeObjective = "approximate (objective perturbation: pure-dp for continuous noise and an exact minimiser; b is discrete Laplace on a fine grid)"
	GuaranteeHeuristic = "none (heuristic)"
	GuaranteeNone      = "none (non-private)"
)

// Neighbouring relations written into release metadata.
const (
	NeighbouringReplaceOne = "replace-one (bounded DP: the record count n is public and released)"
	NeighbouringNone       = "none (non-private)"
)

// Epsilon is a privacy budget that marshals to JSON as a number when finite
// and as null for the non-private path (JSON has no infinity; null is the
// encoding of every non-finite number in dpsurv's JSON, and the fit topic's
// epsilon is always a number). It reads back null, and the string "inf"
// older releases wrote, as +Inf.
type Epsilon float64

// MarshalJSON implements json.Marshaler.
func (e Epsilon) MarshalJSON() ([]byte, error) {
	f := float64(e)
	if math.IsInf(f, 1) {
		return []byte(`null`), nil
	}
	if math.IsNaN(f) || math.IsInf(f, -1) {
		return nil, fmt.Errorf("marshal epsilon: %v is not a budget", f)
	}
	return []byte(strconv.FormatFloat(f, 'g', -1, 64)), nil
}

// UnmarshalJSON implements json.Unmarshaler (a number, null or "inf").
func (e *Epsilon) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*e = Epsilon(math.Inf(1))
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if s == "inf" || s == "Inf" || s == "+inf" {
			*e = Epsilon(math.Inf(1))
			return nil
		}
		return fmt.Errorf("unmarshal epsilon: unknown value %q", s)
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("unmarshal epsilon: %w", err)
	}
	*e = Epsilon(f)
	return nil
}

// Scaling is the covariate preprocessing shared by every fit: a per-covariate
// centre and scale, then projection onto the unit ball, x / max(1, ||x||).
// On a private path Centre and Scale are public configuration and must be
// given; they are never derived from the data.
type Scaling struct {
	Centre []float64 `json:"centre,omitempty"`
	Scale  []float64 `json:"scale,omitempty"`
}

func (s Scaling) validate(p int) error {
	if s.Centre != nil && len(s.Centre) != p {
		return fmt.Errorf("centre has %d entries, data has %d covariates", len(s.Centre), p)
	}
	if s.Scale != nil && len(s.Scale) != p {
		return fmt.Errorf("scale has %d entries, data has %d covariates", len(s.Scale), p)
	}
	for j, v := range s.Centre {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("centre %d is not finite", j)
		}
	}
	for j, v := range s.Scale {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("scale %d must be positive and finite", j)
		}
	}
	return nil
}

// apply returns the centred, scaled covariates clipped to the unit ball, as a
// flat row-major n*p slice, and how many rows were clipped.
func (s Scaling) apply(x [][]float64, p int) ([]float64, int) {
	out := make([]float64, len(x)*p)
	clipped := 0
	for i, row := range x {
		z := out[i*p : (i+1)*p]
		var ss float64
		for j, v := range row {
			if s.Centre != nil {
				v -= s.Centre[j]
			}
			if s.Scale != nil {
				v /= s.Scale[j]
			}
			z[j] = v
			ss += v * v
		}
		if nrm := math.Sqrt(ss); nrm > 1 {
			for j := range z {
				z[j] /= nrm
			}
			clipped++
		}
	}
	return out, clipped
}

// dataDerivedScaling is the paper's normalisation (zero mean, then every row
// divided by the largest row norm). It is allowed only on the non-private
// path.
func dataDerivedScaling(x [][]float64, p int) Scaling {
	n := float64(len(x))
	c := make([]float64, p)
	for _, row := range x {
		for j, v := range row {
			c[j] += v / n
		}
	}
	var maxNorm float64
	for _, row := range x {
		var ss float64
		for j, v := range row {
			ss += (v - c[j]) * (v - c[j])
		}
		maxNorm = math.Max(maxNorm, math.Sqrt(ss))
	}
	if maxNorm == 0 {
		maxNorm = 1
	}
	sc := make([]float64, p)
	for j := range sc {
		sc[j] = maxNorm
	}
	return Scaling{Centre: c, Scale: sc}
}
