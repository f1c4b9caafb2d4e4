package eval

import (
	"bytes"
	"fmt"
	"github.com/dpsurv/dpsurv/internal/datasets"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/audit"
	"github.com/dpsurv/dpsurv/internal/testtier"
)

// The generator runs end to end on the shared data (scaled down: 3 test
// sets of 20 per cohort, 2 draws), writes the page and every figure it links, and is
// deterministic: two runs give the same page byte for byte. The second run
// computes everything the first does but renders no figure (noFigures: the
// page is no function of them; rendering is half a run's CPU).
func TestSanitizersEvaluationDeterministic(t *testing.T) {
	t.Parallel() // independent CPU-bound generators: the package uses both cores
	data := datasets.Dir(t)
	var pages [2][]byte
	// the two runs side by side (each its own directory and page)
	t.Run("runs", func(t *testing.T) {
		for i := range pages {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				out := t.TempDir()
				args := []string{"-data", data, "-out", out, "-resamples", "3", "-per-cohort", "20", "-draws", "2"}
				var stdout, stderr bytes.Buffer
				if i == 0 {
					if code := mainArgs(append([]string{"sanitizers"}, args...), &stdout, &stderr); code != 0 {
						t.Fatalf("exit %d: %s", code, stderr.String())
					}
				} else {
					sanPageNoFigures(t, args)
				}
				page, err := os.ReadFile(filepath.Join(out, "evaluation-sanitizers.md"))
				if err != nil {
					t.Fatal(err)
				}
				pages[i] = bytes.ReplaceAll(page, []byte(out), []byte("OUT"))
				for _, line := range strings.Split(string(page), "\n") {
					if i > 0 || !strings.HasPrefix(line, "![") {
						continue
					}
					img := line[strings.Index(line, "](")+2 : len(line)-1]
					if st, err := os.Stat(filepath.Join(out, img)); err != nil || st.Size() < 1000 {
						t.Errorf("figure %s: %v", img, err)
					}
				}
			})
		}
	})
	if t.Failed() {
		return
	}
	if !bytes.Equal(pages[0], pages[1]) {
		t.Error("two runs with the same seed wrote different pages")
	}
	page := string(pages[0])
	for _, want := range []string{
		"## 1. Attack precision on the original data", "## 2. flchain", "### Per cohort at the defaults",
		"## 3. Kaplan–Meier case studies", "## 4. RRR vs LNTE on kidney", "| TE-Sanitizer | ε=0.8, W=10 |",
		"| BinSup | TimeBin=1, SizeBin=5 |", "| DPTime | ε=0.8, TimeBin=1 |", "refused by the exact sampler",
		"go run ./cmd/dpsurv-eval sanitizers -data " + data,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// The sanity row: BinSup with threshold 1 and unit bins is the
	// identity, so its precision and utility equal the original's.
	var orig, id string
	for _, line := range strings.Split(page, "\n") {
		switch {
		case strings.HasPrefix(line, "| none | original data |"):
			orig = strings.Join(strings.Split(line, "|")[4:8], "|")
		case strings.HasPrefix(line, "| BinSup | TimeBin=1, SizeBin=1 |"):
			id = strings.Join(strings.Split(line, "|")[4:8], "|")
		}
	}
	if orig == "" || orig != id {
		t.Errorf("identity BinSup row %q differs from the original row %q", id, orig)
	}
}

func TestSanitizersFlags(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		{"bad resamples", []string{"sanitizers", "-resamples", "0"}},
		{"stray argument", []string{"sanitizers", "extra"}},
		{"missing data", []string{"sanitizers", "-data", "/nonexistent", "-out", "OUTDIR"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string(nil), tc.args...)
			for i, a := range args {
				if a == "OUTDIR" {
					args[i] = t.TempDir()
				}
			}
			var stdout, stderr bytes.Buffer
			if code := mainArgs(args, &stdout, &stderr); code == 0 {
				t.Error("want a failure")
			}
		})
	}
}

// The baseline subcommand writes a sanitized file that the audit reads,
// with the mechanism in the Arrow field metadata; a seeded DPTime run is
// reproducible.
func TestSanitizersBaselineCommand(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"binsup.csv", []string{"-method", "binsup", "-time-bin", "30", "-size-bin", "2"}},
		{"dptime.arrow", []string{"-method", "dptime", "-epsilon", "1", "-time-bin", "30", "-seed", "4"}},
	} {
		out := filepath.Join(dir, tc.name)
		args := append([]string{"sanitizers-baseline", "-input", datasets.Path(t, "kidney_tte.csv"), "-output", out, "-time-max", "600"}, tc.args...)
		var stdout, stderr bytes.Buffer
		if code := mainArgs(args, &stdout, &stderr); code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.name, code, stderr.String())
		}
		if !strings.Contains(stdout.String(), `"records_in":76`) {
			t.Errorf("%s: summary %s", tc.name, stdout.String())
		}
		first, _ := os.ReadFile(out)
		if code := mainArgs(args, &stdout, &stderr); code != 0 {
			t.Fatal(stderr.String())
		}
		if again, _ := os.ReadFile(out); !bytes.Equal(first, again) {
			t.Errorf("%s: two runs differ", tc.name)
		}
	}
	md, _, err := audit.ArrowFieldMetadata(filepath.Join(dir, "dptime.arrow"), "time")
	if err != nil || md["dpsurv.mechanism"] != "dptime" || md["dpsurv.epsilon"] != "1" || md["dpsurv.time_bin"] != "30" {
		t.Errorf("metadata %v, %v", md, err)
	}
	var stdout, stderr bytes.Buffer
	if code := mainArgs([]string{"sanitizers-baseline", "-method", "kanon", "-input", datasets.Path(t, "kidney_tte.csv"), "-output", filepath.Join(dir, "x.csv"), "-time-max", "600"}, &stdout, &stderr); code == 0 {
		t.Error("unknown method accepted")
	}
}

// TestSanitizersPageMatchesDocs: the committed docs/evaluation-sanitizers.md
// is what its documented command (`go run ./cmd/dpsurv-eval sanitizers -out
// docs`) writes today, line for line except the command line itself. The
// documented command runs in internal/doccmd but into a copy that nothing
// compares; until 2026-11-26 the page still showed numbers from before
// later mechanism changes (and withheld log-rank p-values as p). Full tier
// (the page at its full size, no figures: about 2 CPU-s); regenerate with
// the documented command when it fails.
func TestSanitizersPageMatchesDocs(t *testing.T) {
	t.Parallel()
	testtier.Full(t, "the generated sanitizers page against docs/")
	data := datasets.Dir(t)
	want, err := os.ReadFile(filepath.Join(filepath.Dir(data), "docs", "evaluation-sanitizers.md"))
	if err != nil {
		t.Fatal(err)
	}
	got := sanPageNoFigures(t, []string{"-data", data, "-out", t.TempDir()})
	lines := func(b []byte) []string {
		var keep []string
		for _, l := range strings.Split(string(b), "\n") {
			if !strings.Contains(l, "go run ./cmd/dpsurv-eval sanitizers") {
				keep = append(keep, l)
			}
		}
		return keep
	}
	g, w := lines(bytes.ReplaceAll(got, []byte(data), []byte("data"))), lines(want)
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Fatalf("docs/evaluation-sanitizers.md is stale (regenerate: go run ./cmd/dpsurv-eval sanitizers -out docs); first difference at line %d:\n docs: %s\n  now: %s", i+1, wl, gl)
		}
	}
}

// sanPageNoFigures runs the sanitizers generator with args (which name
// -out) without rendering its figures and returns the page it wrote.
func sanPageNoFigures(t *testing.T, args []string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cfg, err := sanParse(args, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	cfg.noFigures = true
	if err := sanWrite(cfg, &stderr); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	page, err := os.ReadFile(filepath.Join(cfg.out, "evaluation-sanitizers.md"))
	if err != nil {
		t.Fatal(err)
	}
	return page
}
