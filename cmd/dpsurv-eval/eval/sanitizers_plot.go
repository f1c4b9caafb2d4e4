package eval

// KM figures of the sanitizers evaluation: for each cohort the original
// curve (dashed) and the curve of a mechanism's output (solid) in the same
// colour.

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/dpsurv/dpsurv/plots"
	"github.com/dpsurv/dpsurv/survival"
)

// sanPair is one cohort's original and released curve.
type sanPair struct {
	label    string
	orig     survival.KMCurve
	released survival.KMCurve
	ok       bool // released curve exists
}

// plotKM writes the figure OUT/img/file (sanPlotKM), or nothing with
// noFigures.
func (cfg sanConfig) plotKM(file, title, timeUnit, releasedName string, pairs []sanPair) error {
	if cfg.noFigures {
		return nil
	}
	return sanPlotKM(filepath.Join(cfg.out, "img", file), title, timeUnit, releasedName, pairs)
}

// sanPlotKM writes a figure of the pairs (plots.BuildKM): per cohort the
// original curve dashed and the released one solid, in the cohort's
// colour.
func sanPlotKM(path, title, timeUnit, releasedName string, pairs []sanPair) error {
	// The caller names the axis "time (UNIT)"; the figure wants the unit.
	timeUnit = strings.TrimSuffix(strings.TrimPrefix(timeUnit, "time ("), ")")
	s := plots.KMSpec{Title: title, TimeUnit: timeUnit, Conf: 0.95}
	for i, pr := range pairs {
		c := plots.KMCohort{Label: pr.label + " original", Legend: pr.label + " original", Position: i, Time: pr.orig.Time, Surv: pr.orig.Surv,
			Dashed: true, End: math.NaN(), NoiseFrom: math.NaN()}
		s.Cohorts = append(s.Cohorts, c)
		if pr.ok {
			s.Cohorts = append(s.Cohorts, plots.KMCohort{Label: pr.label + " " + releasedName, Legend: pr.label + " " + releasedName,
				Position: i, Time: pr.released.Time, Surv: pr.released.Surv, End: math.NaN(), NoiseFrom: math.NaN()})
		}
	}
	f, err := plots.BuildKM(s)
	if err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return f.Write(path)
}
