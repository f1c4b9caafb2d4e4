package cli

import (
	"bufio"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dpsurv/dpsurv/schemas"
)

// DefaultMaxSkipped is the public, documented share of input rows a fit or
// a sanitize run may skip (invalid rows, not used) before it refuses to
// release anything: more than this, or no valid row at all, and the command
// exits non-zero with a report of what it found (--max-skipped changes the
// share; 1 accepts anything, even a run without a valid row).
const DefaultMaxSkipped = 0.10

// labelMinRows is the smallest number of rows a cohort label must have to
// be named in a refusal: a value seen in fewer rows (for instance a column
// of names given as --cohort-col) is not printed.
const labelMinRows = 5

// errRefused marks a run refused for its input (exit status 1, message
// already complete).
var errRefused = errors.New("refused")

// refusal is a refused run's report: printed as it is by Main.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }
func (r *refusal) Unwrap() error { return errRefused }

// addMaxSkipped registers --max-skipped on fs.
func addMaxSkipped(fs *flag.FlagSet) *float64 {
	return fs.Float64("max-skipped", DefaultMaxSkipped,
		"largest share of invalid input rows accepted (skipped, not used) before the run refuses to release anything; 1 accepts anything, even no valid row")
}

// inputShape is what the first line of a CSV input shows: its delimiter
// and columns (as split by that delimiter). Other formats carry their
// schema: Columns is nil.
type inputShape struct {
	path    string
	csv     bool
	delim   rune
	columns []string
}

// delimName names a delimiter for messages.
func delimName(d rune) string {
	switch d {
	case ',':
		return "',' (comma)"
	case ';':
		return "';' (semicolon)"
	case '\t':
		return "tab"
	}
	return fmt.Sprintf("%q", d)
}

// sniffInput reads the header line of a CSV input and detects its
// delimiter among ',', ';' and tab: the one most frequent outside quotes.
func sniffInput(path string) (inputShape, error) {
	sh := inputShape{path: path, delim: ','}
	format, err := schemas.FormatFromPath(path)
	if err != nil || format != schemas.FormatCSV {
		return sh, nil // the reader reports unknown formats
	}
	f, err := os.Open(path)
	if err != nil {
		return sh, nil // the reader reports it, after the flags are checked
	}
	sh.csv = true
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 64<<10).ReadString('\n')
	if err != nil && err != io.EOF {
		return sh, fmt.Errorf("read %s: %w", path, err)
	}
	line = strings.TrimPrefix(line, "\ufeff")
	line = strings.TrimRight(line, "\r\n")
	counts := map[rune]int{}
	quoted := false
	for _, r := range line {
		switch {
		case r == '"':
			quoted = !quoted
		case !quoted && (r == ',' || r == ';' || r == '\t'):
			counts[r]++
		}
	}
	for _, d := range []rune{';', '\t'} {
		if counts[d] > counts[sh.delim] {
			sh.delim = d
		}
	}
	r := csv.NewReader(strings.NewReader(line))
	r.Comma = sh.delim
	r.LazyQuotes = true
	if cols, err := r.Read(); err == nil {
		for i := range cols {
			cols[i] = strings.TrimSpace(cols[i])
		}
		sh.columns = cols
	}
	return sh, nil
}

// describe is the "what was found" line of a refusal.
func (sh inputShape) describe() string {
	base := filepath.Base(sh.path)
	if !sh.csv {
		return fmt.Sprintf("file %s", base)
	}
	cols := sh.columns
	more := ""
	if len(cols) > 20 {
		cols, more = cols[:20], fmt.Sprintf(", ... (%d columns)", len(sh.columns))
	}
	return fmt.Sprintf("file %s: delimiter %s, %d column(s): %s%s", base, delimName(sh.delim), len(sh.columns), strings.Join(cols, ", "), more)
}

// requiredColumn is an input column a command needs and the flag naming it.
type requiredColumn struct{ name, flag string }

func requiredColumns(spec schemas.Spec) []requiredColumn {
	c := spec.Columns.WithDefaults()
	out := []requiredColumn{{c.ID, "--id-col"}, {c.Time, "--time-col"}, {c.Event, "--event-col"}, {c.Cohort, "--cohort-col"}}
	for _, cov := range spec.Covariates {
		out = append(out, requiredColumn{cov, "--covariates"})
	}
	return out
}

// columnHints suggests, for a missing column, header names that usually
// hold it (R's survival data: futime, status, group ...).
var columnHints = map[string][]string{
	"--time-col":   {"time", "futime", "survtime", "stime", "days", "follow", "tte", "duration"},
	"--event-col":  {"event", "status", "death", "dead", "died", "censor", "fail", "relapse"},
	"--cohort-col": {"cohort", "group", "grp", "arm", "sex", "trt", "treat", "strata", "disease"},
	"--id-col":     {"id", "patient", "subject", "record"},
}

// preflight refuses a CSV input the reader cannot use before anything is
// read: a delimiter other than ',' (R's write.csv2, Excel in many
// locales, tab-separated exports) or a required column absent from the
// header. The message names what was found and the option that fixes it.
func preflight(cmd string, sh inputShape, spec schemas.Spec) error {
	if !sh.csv {
		return nil
	}
	var b strings.Builder
	if sh.delim != ',' {
		fmt.Fprintf(&b, "refusing to read %s: it is separated by %s, and dpsurv reads comma-separated CSV\n", filepath.Base(sh.path), delimName(sh.delim))
		fmt.Fprintf(&b, "  found: %s\n", sh.describe())
		fmt.Fprintln(&b, "  fix: write the file with commas: in R write.csv(d, \"file.csv\", row.names = FALSE) (not write.csv2);")
		fmt.Fprintln(&b, "       in Excel save as \"CSV (Comma delimited)\"; or convert it, for example")
		if sh.delim == ';' {
			fmt.Fprintln(&b, "       Rscript -e 'd <- read.csv2(\"in.csv\"); write.csv(d, \"out.csv\", row.names = FALSE)' (also turns decimal commas into points)")
		} else {
			fmt.Fprintln(&b, "       Rscript -e 'd <- read.delim(\"in.tsv\"); write.csv(d, \"out.csv\", row.names = FALSE)'")
		}
		return &refusal{strings.TrimRight(b.String(), "\n")}
	}
	have := map[string]bool{}
	for _, c := range sh.columns {
		have[c] = true
	}
	var missing []requiredColumn
	for _, rc := range requiredColumns(spec) {
		if !have[rc.name] {
			missing = append(missing, rc)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	fmt.Fprintf(&b, "refusing to read %s: required column(s) missing from its header\n", filepath.Base(sh.path))
	fmt.Fprintf(&b, "  found: %s\n", sh.describe())
	for _, m := range missing {
		fmt.Fprintf(&b, "  missing %q (%s)", m.name, m.flag)
		if m.flag == "--covariates" {
			b.WriteString(": name covariates as they appear in the header\n")
			continue
		}
		var hints []string
		for _, c := range sh.columns {
			lc := strings.ToLower(c)
			for _, h := range columnHints[m.flag] {
				if strings.Contains(lc, h) && !slices.Contains(hints, c) {
					hints = append(hints, c)
				}
			}
		}
		if len(hints) > 0 {
			fmt.Fprintf(&b, ": perhaps %s %s", m.flag, hints[0])
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "  fix: name the file's columns with --id-col, --time-col, --event-col, --cohort-col (see dpsurv %s -h)", cmd)
	return &refusal{b.String()}
}

// reasonMeaning explains each skip reason and what usually fixes it.
var reasonMeaning = map[string]string{
	schemas.ReasonMissingField:      "a required value is empty or its column absent",
	schemas.ReasonInvalidTime:       "time is not a finite number >= 0",
	schemas.ReasonInvalidEvent:      "event is not 0/1 or true/false",
	schemas.ReasonUnknownCohort:     "cohort label not in --cohorts",
	schemas.ReasonDuplicateID:       "id already used by an earlier row",
	schemas.ReasonInvalidCovariate:  "covariate empty, NA or not a number",
	schemas.ReasonInvalidID:         "id empty or too long",
	schemas.ReasonInvalidObservedAt: "observed_at not a timestamp",
	schemas.ReasonUndecodable:       "batch could not be decoded",
	schemas.ReasonWrongSchema:       "batch does not have the expected columns",
}

// skipTable renders the skipped rows by reason as an aligned table
// (reason, rows, meaning), most frequent first.
func skipTable(dead map[string]int, indent string) string {
	reasons := make([]string, 0, len(dead))
	for r, n := range dead {
		if n > 0 {
			reasons = append(reasons, r)
		}
	}
	slices.SortFunc(reasons, func(a, b string) int {
		if dead[a] != dead[b] {
			return dead[b] - dead[a]
		}
		return strings.Compare(a, b)
	})
	w := len("reason")
	for _, r := range reasons {
		w = max(w, len(r))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s%-*s  %8s  %s\n", indent, w, "reason", "rows", "meaning")
	for _, r := range reasons {
		fmt.Fprintf(&b, "%s%-*s  %8d  %s\n", indent, w, r, dead[r], reasonMeaning[r])
	}
	return b.String()
}

// skipped is the number of rows skipped.
func skipped(dead map[string]int) int {
	n := 0
	for _, v := range dead {
		n += v
	}
	return n
}

// checkRows refuses a run that used no valid row (unless maxSkipped >= 1),
// or skipped more than the maxSkipped share of its rows, with a report: what was found, the
// reasons with counts, and the options that fix it. what is "fit" or
// "sanitize".
func checkRows(what string, sh inputShape, spec schemas.Spec, used int, dead map[string]int, maxSkipped float64) error {
	skip := skipped(dead)
	total := used + skip
	if (used > 0 || maxSkipped >= 1) && float64(skip) <= maxSkipped*float64(total) {
		return nil
	}
	var b strings.Builder
	if used == 0 {
		fmt.Fprintf(&b, "refusing to %s: no valid row (%d row(s) read, all skipped)\n", what, total)
	} else {
		fmt.Fprintf(&b, "refusing to %s: %d of %d rows skipped (%.1f%%), more than the --max-skipped share %g\n",
			what, skip, total, 100*float64(skip)/float64(total), maxSkipped)
	}
	fmt.Fprintf(&b, "  found: %s\n", sh.describe())
	if skip > 0 {
		b.WriteString("  rows skipped:\n")
		b.WriteString(skipTable(dead, "    "))
	}
	var fixes []string
	if dead[schemas.ReasonUnknownCohort] > 0 {
		col := spec.Columns.WithDefaults().Cohort
		labels, err := frequentLabels(sh, col)
		switch {
		case err == nil && len(labels) > 0:
			fmt.Fprintf(&b, "  column %q holds the labels %s (labels in fewer than %d rows not shown); --cohorts is %s\n",
				col, strings.Join(labels, ", "), labelMinRows, strings.Join(spec.Cohorts, ","))
			fixes = append(fixes, fmt.Sprintf("--cohorts %s (or --cohort-col for another column)", strings.Join(labels, ",")))
		default:
			fixes = append(fixes, fmt.Sprintf("--cohorts with the labels of column %q (the non-private `dpsurv fit km --epsilon inf --input F` lists them), or --cohort-col", col))
		}
	}
	if dead[schemas.ReasonMissingField] > 0 {
		fixes = append(fixes, "--id-col, --time-col, --event-col, --cohort-col name the columns; rows with an empty required value cannot be used")
	}
	if dead[schemas.ReasonInvalidCovariate] > 0 {
		fixes = append(fixes, "drop the covariate with missing values from --covariates, or remove or impute those rows")
	}
	if dead[schemas.ReasonInvalidEvent] > 0 {
		fixes = append(fixes, "--event-col must name a 0/1 (or true/false) column, 1 = the event happened (R's lung status 1/2: use status - 1)")
	}
	if dead[schemas.ReasonInvalidTime] > 0 {
		fixes = append(fixes, "--time-col must name a column of times >= 0 (no dates: convert to durations)")
	}
	if used > 0 {
		fixes = append(fixes, fmt.Sprintf("--max-skipped %.2g accepts this share of skipped rows", float64(skip)/float64(total)+0.005))
	} else {
		fixes = append(fixes, "--max-skipped 1 accepts a run without a valid row")
	}
	for i, f := range fixes {
		if i == 0 {
			fmt.Fprintf(&b, "  fix: %s\n", f)
		} else {
			fmt.Fprintf(&b, "       %s\n", f)
		}
	}
	return &refusal{strings.TrimRight(b.String(), "\n")}
}

// frequentLabels returns the values of a CSV input's column that occur in
// at least labelMinRows rows (at most 20 of them), sorted.
func frequentLabels(sh inputShape, column string) ([]string, error) {
	if !sh.csv {
		return nil, errors.New("not a csv file")
	}
	f, err := os.Open(sh.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReaderSize(f, 1<<20))
	r.Comma = sh.delim
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	header, err := r.Read()
	if err != nil {
		return nil, err
	}
	idx := -1
	for i, h := range header {
		if strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")) == column {
			idx = i
		}
	}
	if idx < 0 {
		return nil, fmt.Errorf("no column %q", column)
	}
	counts := map[string]int{}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if idx < len(rec) && len(counts) <= 1000 {
			counts[strings.TrimSpace(rec[idx])]++
		}
	}
	if len(counts) > 1000 {
		return nil, nil // not a label column
	}
	var out []string
	for v, n := range counts {
		if n >= labelMinRows && v != "" {
			out = append(out, v)
		}
	}
	if len(out) > 20 {
		return nil, nil
	}
	slices.Sort(out)
	return out, nil
}
