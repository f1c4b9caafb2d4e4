package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/dpsurv/dpsurv/cmd/dpsurv/budgetfile"
)

// budgetNoteText is what a private fit without --budget-file says about
// repeated runs.
const budgetNoteText = "not recorded: every private run draws fresh noise, so repeated runs on the same data add up their epsilon " +
	"(k runs at epsilon e spend k*e); record and limit them with --budget-file F --budget-total T"

// budgetFlags are the privacy-budget flags of the private fits.
type budgetFlags struct {
	file  *string
	total *float64
	fp    string // the input's fingerprint, once computed
}

func addBudgetFlags(fs *flag.FlagSet) *budgetFlags {
	return &budgetFlags{
		file: fs.String("budget-file", "", "record every private release against the input's SHA-256 in this JSON file, "+
			"and refuse one that would pass the input's total (crash-safe, locked against concurrent fits)"),
		total: fs.Float64("budget-total", 0, "with --budget-file: the total epsilon for this input (needed the first time; "+
			"later runs use the recorded one)"),
	}
}

func (b *budgetFlags) charge0(input, command string, eps float64) budgetfile.Charge {
	return budgetfile.Charge{Fingerprint: b.fp, Input: filepath.Base(input), Command: command, Epsilon: eps, Total: *b.total, Now: time.Now()}
}

func (b *budgetFlags) fingerprint(input string) error {
	if b.fp != "" {
		return nil
	}
	fp, err := budgetfile.Fingerprint(input)
	if err != nil {
		return err
	}
	b.fp = fp
	return nil
}

// check refuses, before any work, a private fit of epsilon eps that the
// budget file would refuse (nothing is recorded).
func (b *budgetFlags) check(input, command string, eps float64) error {
	if *b.file == "" || !(eps > 0) || math.IsInf(eps, 1) {
		return nil
	}
	if err := b.fingerprint(input); err != nil {
		return err
	}
	_, err := budgetfile.Check(*b.file, b.charge0(input, command, eps))
	return err
}

// charge records a private release of epsilon eps after it was computed
// and before it is printed (a refusal discards it unpublished), and adds
// the "budget" object to out. Without --budget-file it adds the note that
// repeated runs add up.
func (b *budgetFlags) charge(env Env, input, command string, eps float64, out map[string]any) error {
	if *b.file == "" {
		out["budget"] = map[string]any{"file": nil, "epsilon": eps, "note": budgetNoteText}
		fmt.Fprintf(env.Stderr, "dpsurv %s: privacy budget %s\n", command, budgetNoteText)
		return nil
	}
	if err := b.fingerprint(input); err != nil {
		return err
	}
	e, err := budgetfile.Spend(*b.file, b.charge0(input, command, eps))
	if err != nil {
		return fmt.Errorf("release withheld: %w", err)
	}
	out["budget"] = map[string]any{"file": *b.file, "input_fingerprint": b.fp, "epsilon": eps,
		"spent": e.Spent, "total": e.Total, "remaining": e.Remaining()}
	return nil
}

// jsonMap turns a result struct into a map (numbers kept exactly), so
// that fields can be added to it.
func jsonMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return m, nil
}
