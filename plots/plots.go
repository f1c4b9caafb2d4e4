package plots

import (
	"math"
)

// Curve is one survival curve of a comparison figure (WriteKM): S(t)
// steps at Time (S = 1 before the first); NaN ends it.
type Curve struct {
	Label        string
	Time, Surv   []float64
	Lower, Upper []float64 // optional pointwise band
	Dashed       bool
}

// WriteKM writes a comparison figure of curves (an exact curve against
// private or sanitized ones) to path (.png or .svg), drawn like every
// other figure (BuildKM, Figure.Write): the i-th curve takes colour i of
// the palette, the legend names each curve, xlabel is the time unit.
func WriteKM(path, title, timeUnit string, curves []Curve) error {
	s := KMSpec{Title: title, TimeUnit: timeUnit, Conf: 0.95}
	for i, c := range curves {
		s.Cohorts = append(s.Cohorts, comparisonCohort(c, i))
	}
	f, err := BuildKM(s)
	if err != nil {
		return err
	}
	return f.Write(path)
}

// comparisonCohort converts a Curve, dropping times that do not increase
// (a figure needs a step function) and what follows a NaN.
func comparisonCohort(c Curve, pos int) KMCohort {
	k := KMCohort{Label: c.Label, Legend: c.Label, Position: pos, Dashed: c.Dashed, End: math.NaN(), NoiseFrom: math.NaN()}
	band := len(c.Lower) == len(c.Time) && len(c.Upper) == len(c.Time)
	for i, t := range c.Time {
		if i >= len(c.Surv) || math.IsNaN(c.Surv[i]) || math.IsNaN(t) {
			break
		}
		if n := len(k.Time); n > 0 && !(t > k.Time[n-1]) {
			continue
		}
		k.Time = append(k.Time, t)
		k.Surv = append(k.Surv, c.Surv[i])
		if band {
			k.Lower = append(k.Lower, c.Lower[i])
			k.Upper = append(k.Upper, c.Upper[i])
		}
	}
	return k
}
