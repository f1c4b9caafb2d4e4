package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/internal/datasets"
)

// malformedLung writes lung in the shapes a new user's files come in: R's
// write.csv2 (semicolons), a tab-separated export, and R's own column names.
func malformedLung(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(datasets.Path(t, "lung_tte.csv"))
	if err != nil {
		t.Fatal(err)
	}
	body := string(b)
	dir := t.TempDir()
	files := map[string]string{
		"semicolon": strings.ReplaceAll(body, ",", ";"),
		"tab":       strings.ReplaceAll(body, ",", "\t"),
		"renamed":   "id,futime,status,group" + body[strings.Index(body, ",age"):],
	}
	out := map[string]string{}
	for name, s := range files {
		p := filepath.Join(dir, name+".csv")
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		out[name] = p
	}
	return out
}

// No release from (almost) nothing (issue 19): the three malformed files
// and a label list that matches no row make every fit and sanitize exit
// non-zero, print nothing on stdout, and say what was found (delimiter,
// columns, reasons with counts, labels) and what fixes it; never Go map
// syntax. On main each of these released a fit of n = 0 with exit 0.
func TestFitAndSanitizeRefuseMalformedInput(t *testing.T) {
	files := malformedLung(t)
	lung := datasets.Path(t, "lung_tte.csv")
	key := apptest.KeyFile(t)
	inputs := []struct {
		name, input string
		extra       []string
		want        []string
	}{
		{"semicolon", files["semicolon"], nil, []string{"';' (semicolon)", "9 column(s)", "ph.ecog", "write.csv"}},
		{"tab", files["tab"], nil, []string{"delimiter tab", "ph.ecog", "write.csv"}},
		{"renamed", files["renamed"], nil, []string{"futime, status, group", `missing "time" (--time-col): perhaps --time-col futime`,
			`missing "event" (--event-col): perhaps --event-col status`, `missing "cohort" (--cohort-col): perhaps --cohort-col group`}},
		{"labels", lung, []string{"--cohorts", "male,female"}, []string{"no valid row", "unknown_cohort", "210", `"cohort" holds the labels 1, 2`, "--cohorts 1,2"}},
	}
	commands := []struct {
		name string
		args []string
	}{
		{"fit km", []string{"fit", "km", "--epsilon", "1", "--time-max", "1000"}},
		{"fit km inf", []string{"fit", "km", "--epsilon", "inf"}},
		{"fit weibull", []string{"fit", "weibull", "--epsilon", "1", "--time-max", "1000", "--interval-sims", "-1"}},
		{"fit discrete", []string{"fit", "discrete", "--epsilon", "inf", "--covariates", "age"}},
		{"fit cox", []string{"fit", "cox", "--epsilon", "inf", "--covariates", "age"}},
		{"sanitize", []string{"sanitize", "--time-max", "1000", "--te-epsilon", "1", "--rrr-epsilon", "1", "--key-file", key}},
	}
	for _, in := range inputs {
		for _, cmd := range commands {
			t.Run(in.name+"/"+cmd.name, func(t *testing.T) {
				args := append(append([]string{}, cmd.args...), "--input", in.input)
				out := ""
				if cmd.name == "sanitize" {
					out = filepath.Join(t.TempDir(), "out.csv")
					args = append(args, "--output", out)
				}
				cohorts := "1,2"
				if in.extra != nil {
					args = append(args, in.extra...)
				} else if cmd.name != "fit km inf" {
					args = append(args, "--cohorts", cohorts)
				}
				o, e, code := run(t, args...)
				if code == 0 || o != "" {
					t.Fatalf("exit %d, stdout %q: want a refusal and no release\nstderr: %s", code, o, e)
				}
				for _, w := range in.want {
					if !strings.Contains(e, w) {
						t.Errorf("stderr lacks %q:\n%s", w, e)
					}
				}
				if strings.Contains(e, "map[") {
					t.Errorf("Go map syntax in the report:\n%s", e)
				}
				if out != "" {
					if _, err := os.Stat(out); err == nil {
						t.Errorf("the refused run left its output %s", out)
					}
				}
			})
		}
	}
}

// More than the public --max-skipped share (10%) of rows skipped is
// refused with the reasons as a table; the flag accepts it, and the skipped
// rows are then reported as the same table.
func TestFitMaxSkipped(t *testing.T) {
	lung := datasets.Path(t, "lung_tte.csv")
	args := []string{"fit", "km", "--input", lung, "--epsilon", "inf", "--cohorts", "1"} // cohort 2's 85 of 210 rows skipped
	o, e, code := run(t, args...)
	if code == 0 || o != "" || !strings.Contains(e, "85 of 210 rows skipped (40.5%), more than the --max-skipped share 0.1") ||
		!strings.Contains(e, "--max-skipped 0.41") {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, o, e)
	}
	o, e, code = run(t, append(args, "--max-skipped", "0.5")...)
	if code != 0 || o == "" {
		t.Fatalf("--max-skipped 0.5: exit %d: %s", code, e)
	}
	lines := strings.Split(strings.TrimSpace(e), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "dpsurv fit: 85 invalid row(s) skipped") ||
		strings.Fields(lines[1])[0] != "reason" || strings.Join(strings.Fields(lines[2])[:2], " ") != "unknown_cohort 85" {
		t.Fatalf("skipped rows not reported as a table:\n%s", e)
	}
}

func TestSniffDelimiter(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		header string
		delim  rune
		cols   int
	}{
		{"id,time,event,cohort\n", ',', 4},
		{"\ufeffid;time;event;cohort\r\n", ';', 4},
		{"id\ttime\tevent\tcohort\n", '\t', 4},
		{`"a;b",time,event,cohort` + "\n", ',', 4}, // a quoted ';' is not a delimiter
		{"id\n", ',', 1},
	} {
		p := filepath.Join(dir, "f.csv")
		if err := os.WriteFile(p, []byte(tc.header+"1,2,3,4\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		sh, err := sniffInput(p)
		if err != nil || sh.delim != tc.delim || len(sh.columns) != tc.cols || !sh.csv {
			t.Errorf("%q: %+v, %v; want delimiter %q, %d columns", tc.header, sh, err, tc.delim, tc.cols)
		}
	}
}
