package eval

// Helpers shared by the fit evaluations (km, weibull, regression): a small
// CSV reader for the shared data sets, flag parsing for lists, and the
// writer that replaces a generated block of docs/evaluation-fits.md.

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// fitsData is a time-to-event data set read from CSV: times, event flags,
// cohort indices into Labels and optional covariate rows.
type fitsData struct {
	Time   []float64
	Event  []bool
	Cohort []int
	// Labels are the distinct cohort labels in numeric (else lexical)
	// order; in the evaluations they play the public, fixed label list.
	Labels     []string
	Covariates []string
	X          [][]float64
}

// fitsLoadCSV reads path (header with time, event, cohort and the named
// covariates). Errors name the row, never a value.
func fitsLoadCSV(path string, covariates []string) (*fitsData, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	defer f.Close()
	d, err := fitsReadCSV(f, covariates)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	return d, nil
}

func fitsReadCSV(r io.Reader, covariates []string) (*fitsData, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("read header: %w", err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(h)] = i
	}
	idx := func(name string) (int, error) {
		i, ok := col[name]
		if !ok {
			return 0, fmt.Errorf("no column %q", name)
		}
		return i, nil
	}
	ti, err := idx("time")
	if err != nil {
		return nil, err
	}
	ei, err := idx("event")
	if err != nil {
		return nil, err
	}
	ci, err := idx("cohort")
	if err != nil {
		return nil, err
	}
	xi := make([]int, len(covariates))
	for j, c := range covariates {
		if xi[j], err = idx(c); err != nil {
			return nil, err
		}
	}
	d := &fitsData{Covariates: append([]string(nil), covariates...)}
	var labels []string
	for row := 1; ; row++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read row %d: %w", row, err)
		}
		t, err := strconv.ParseFloat(strings.TrimSpace(rec[ti]), 64)
		if err != nil || math.IsNaN(t) || math.IsInf(t, 0) || t < 0 {
			return nil, fmt.Errorf("row %d: time is not a finite non-negative number", row)
		}
		var ev bool
		switch strings.TrimSpace(rec[ei]) {
		case "1", "true", "TRUE":
			ev = true
		case "0", "false", "FALSE":
		default:
			return nil, fmt.Errorf("row %d: event is not 0/1", row)
		}
		var x []float64
		if len(xi) > 0 {
			x = make([]float64, len(xi))
			for j, k := range xi {
				v, err := strconv.ParseFloat(strings.TrimSpace(rec[k]), 64)
				if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, fmt.Errorf("row %d: covariate %q is missing or not finite", row, covariates[j])
				}
				x[j] = v
			}
			d.X = append(d.X, x)
		}
		d.Time = append(d.Time, t)
		d.Event = append(d.Event, ev)
		labels = append(labels, strings.TrimSpace(rec[ci]))
	}
	if len(d.Time) == 0 {
		return nil, errors.New("no records")
	}
	seen := map[string]bool{}
	for _, l := range labels {
		if !seen[l] {
			seen[l] = true
			d.Labels = append(d.Labels, l)
		}
	}
	sort.Slice(d.Labels, func(a, b int) bool {
		fa, ea := strconv.ParseFloat(d.Labels[a], 64)
		fb, eb := strconv.ParseFloat(d.Labels[b], 64)
		if ea == nil && eb == nil {
			return fa < fb
		}
		return d.Labels[a] < d.Labels[b]
	})
	pos := make(map[string]int, len(d.Labels))
	for i, l := range d.Labels {
		pos[l] = i
	}
	d.Cohort = make([]int, len(labels))
	for i, l := range labels {
		d.Cohort[i] = pos[l]
	}
	return d, nil
}

// cohort returns the times and event flags of cohort c.
func (d *fitsData) cohort(c int) ([]float64, []bool) {
	var t []float64
	var e []bool
	for i, k := range d.Cohort {
		if k == c {
			t = append(t, d.Time[i])
			e = append(e, d.Event[i])
		}
	}
	return t, e
}

// fitsFloatList parses "0.1,0.5,1"; "inf" is +Inf when allowInf.
func fitsFloatList(s string, allowInf bool) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if allowInf && (f == "inf" || f == "Inf") {
			out = append(out, math.Inf(1))
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("parse list %q: %q is not a finite number", s, f)
		}
		out = append(out, v)
	}
	return out, nil
}

// fitsStringList splits "a,b,c", dropping empty entries.
func fitsStringList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// fitsCommand renders the command line that regenerates a block, exactly as
// it was invoked (arguments quoted when they hold spaces).
func fitsCommand(name string, args []string) string {
	parts := []string{"go run ./cmd/dpsurv-eval", name}
	for _, a := range args {
		if strings.ContainsAny(a, " \t'\"") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// fitsMarkers are the comment lines that delimit a generated block.
func fitsMarkers(name string) (begin, end string) {
	return "<!-- BEGIN generated by dpsurv-eval " + name + " -->",
		"<!-- END generated by dpsurv-eval " + name + " -->"
}

// fitsWriteBlock replaces the block named name in the markdown file at path
// by body (appending the block, with its markers, when the file has none;
// creating the file when it does not exist). The file is replaced
// atomically.
func fitsWriteBlock(path, name string, body []byte) error {
	begin, end := fitsMarkers(name)
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("write block %s: %w", name, err)
	}
	block := append([]byte(begin+"\n"), body...)
	if len(body) > 0 && body[len(body)-1] != '\n' {
		block = append(block, '\n')
	}
	block = append(block, end...)
	var out []byte
	bi := bytes.Index(old, []byte(begin))
	ei := bytes.Index(old, []byte(end))
	switch {
	case bi >= 0 && ei > bi:
		out = append(append(append(out, old[:bi]...), block...), old[ei+len(end):]...)
	case bi >= 0 || ei >= 0:
		return fmt.Errorf("write block %s: %s has an unmatched marker", name, path)
	default:
		out = append(out, old...)
		if len(out) > 0 && out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
		if len(out) > 0 {
			out = append(out, '\n')
		}
		out = append(append(out, block...), '\n')
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".dpsurv-eval-*")
	if err != nil {
		return fmt.Errorf("write block %s: %w", name, err)
	}
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("write block %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write block %s: %w", name, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write block %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write block %s: %w", name, err)
	}
	return nil
}

// fitsReport runs a study whose output is a page block: evaluate writes the
// block (given the command line that regenerates it), which fitsEmit prints
// or puts in the page named by write. Errors are prefixed with name.
func fitsReport(name, write string, args []string, stdout, stderr io.Writer, evaluate func(w io.Writer, command string) error) error {
	var buf bytes.Buffer
	if err := evaluate(&buf, fitsCommand(name, args)); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return fitsEmit(name, write, buf.Bytes(), stdout, stderr)
}

// fitsEmit prints body to stdout, or replaces the block in the page named
// by write (then only a one-line note goes to stderr).
func fitsEmit(name, write string, body []byte, stdout, stderr io.Writer) error {
	if write == "" {
		_, err := stdout.Write(body)
		return err
	}
	if err := fitsWriteBlock(write, name, body); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "dpsurv-eval %s: wrote its block of %s\n", name, write)
	return nil
}

// fitsFmt formats a table number with 3 significant digits ("—" for NaN).
func fitsFmt(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case math.IsInf(v, 1):
		return "∞"
	case v != 0 && (math.Abs(v) >= 1e5 || math.Abs(v) < 1e-3):
		return strconv.FormatFloat(v, 'e', 2, 64)
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

// fitsEpsLabel formats a budget (∞ for the non-private reference).
func fitsEpsLabel(e float64) string {
	if math.IsInf(e, 1) {
		return "∞"
	}
	return strconv.FormatFloat(e, 'g', -1, 64)
}

// fitsQuantile is the type-7 (R default) sample quantile of xs; NaN when
// empty.
func fitsQuantile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	h := p * float64(len(s)-1)
	lo := int(math.Floor(h))
	if lo >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[lo] + (h-float64(lo))*(s[lo+1]-s[lo])
}

func fitsMean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// fitsTotal formats a total budget with 4 significant digits.
func fitsTotal(e float64) string {
	if math.IsInf(e, 1) {
		return "∞"
	}
	return strconv.FormatFloat(e, 'g', 4, 64)
}

// fitsCmdBlock prints the command that regenerates the table that follows.
func fitsCmdBlock(w io.Writer, command string) {
	fmt.Fprintf(w, "Regenerate with:\n\n```sh\n%s\n```\n\n", command)
}
