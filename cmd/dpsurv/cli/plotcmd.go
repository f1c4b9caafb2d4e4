package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/dpsurv/dpsurv/plots"
)

// runPlot is `dpsurv plot`: draws the Kaplan–Meier figure of a saved fit,
// either the JSON that `fit km` prints or fit-topic km messages (JSON, one
// per line as a consumer saves them; the latest window of one aggregate is
// drawn). It draws only what the file holds: post-processing of a release.
func runPlot(_ context.Context, env Env, args []string) error {
	fs := newFlags("plot", env)
	input := fs.String("input", "", "fit JSON: the output of `dpsurv fit km`, or fit-topic km messages (JSON lines); required")
	output := fs.String("output", "", "figure file, .png (1800 px wide) or .svg; required")
	cohortsFlag := fs.String("cohorts", "", "public cohort label list, comma separated: fixes each label's colour (default: the order in the file)")
	unit := fs.String("time-unit", "", "unit of the time axis (default: the release's time_unit, else days)")
	aggregate := fs.String("aggregate", "", "with fit-topic messages: the aggregate to draw (default: the first km aggregate in the file)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *input == "" || *output == "" {
		fmt.Fprintln(env.Stderr, "dpsurv plot: --input and --output are required")
		return errUsage
	}
	f, err := os.Open(*input)
	if err != nil {
		return fmt.Errorf("read %s: %w", *input, err)
	}
	defer f.Close()
	var docs []map[string]any
	dec := json.NewDecoder(f)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return fmt.Errorf("decode %s: %w", *input, err)
		}
		docs = append(docs, m)
	}
	spec, err := plotSpecFromJSON(docs, splitList(*cohortsFlag), *aggregate, filepath.Base(*input))
	if err != nil {
		return fmt.Errorf("%s: %w", *input, err)
	}
	if *unit != "" {
		spec.TimeUnit = *unit
	}
	if err := writeFigure(*output, spec); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "figure: %s (%d cohorts)\n", *output, len(spec.Cohorts))
	return nil
}

// plotSpecFromJSON builds the figure of `fit km` output (one document with
// a cohorts array) or of fit-topic km messages.
func plotSpecFromJSON(docs []map[string]any, labels []string, aggregate, name string) (plots.KMSpec, error) {
	if len(docs) == 0 {
		return plots.KMSpec{}, fmt.Errorf("no JSON document")
	}
	s := plots.KMSpec{TimeUnit: "days", Conf: 0.95, BandMethod: "simulated equal-precision"}
	var rel []map[string]any
	head := docs[0]
	if cs, ok := head["cohorts"].([]any); ok && len(docs) == 1 {
		for _, c := range cs {
			if m, ok := c.(map[string]any); ok {
				rel = append(rel, m)
			}
		}
	} else {
		// Fit-topic messages: km kind, one aggregate, the latest window.
		latest := math.Inf(-1)
		for _, d := range docs {
			if d["kind"] != "km" {
				continue
			}
			if aggregate == "" {
				aggregate, _ = d["aggregate"].(string)
			}
			if d["aggregate"] == aggregate {
				latest = math.Max(latest, jsonFloat(d["window_start_unix"]))
			}
		}
		for _, d := range docs {
			if d["kind"] == "km" && d["aggregate"] == aggregate && (jsonFloat(d["window_start_unix"]) == latest || math.IsInf(latest, -1)) {
				rel = append(rel, d)
			}
		}
		if len(rel) > 0 {
			head = rel[0]
		}
	}
	if len(rel) == 0 {
		return plots.KMSpec{}, fmt.Errorf("no Kaplan–Meier curve (want `dpsurv fit km` JSON or fit-topic messages of kind km)")
	}
	guarantee, _ := head["guarantee"].(string)
	method, _ := head["method"].(string)
	private := guarantee != "" && guarantee != "none (non-private)"
	if u, ok := head["time_unit"].(string); ok && u != "" {
		s.TimeUnit = u
	}
	timeMax := jsonFloat(head["time_max"])
	if private && timeMax > 0 {
		s.XMax = timeMax
	}
	for i, r := range rel {
		label := fmt.Sprint(r["cohort"])
		pos := i
		if len(labels) > 0 {
			pos = labelPosition(labels, label)
		}
		c := releaseKMCohort(r, label, pos, timeMax)
		if !private {
			c.NoiseFrom, c.End = math.NaN(), math.NaN()
		}
		if cf := jsonFloat(r["conf"]); cf > 0 && cf < 1 {
			s.Conf = cf
		}
		if ntsd := jsonFloat(r["noise_tail_sd"]); !math.IsNaN(ntsd) {
			s.NoiseNote = fmt.Sprintf("noise SD of S above %g", ntsd)
		}
		s.Cohorts = append(s.Cohorts, c)
	}
	if private {
		eps := jsonFloat(head["epsilon"])
		s.NoisyCounts = true
		s.Title = fmt.Sprintf("Kaplan–Meier by cohort, private release (ε = %g) — %s", eps, name)
		s.Subtitle = []string{fmt.Sprintf("%s, %s. Everything drawn is the release: curves, intervals, bands and counts carry the privacy noise.", method, guarantee)}
	} else {
		s.Title = "Kaplan–Meier by cohort, non-private reference — " + name
		s.Subtitle = []string{"Exact estimates from the records (no privacy)."}
	}
	return s, nil
}
