package eval

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKMSupDistance(t *testing.T) {
	tests := []struct {
		name           string
		aT, aS, bT, bS []float64
		end            float64
		want           float64
	}{
		{name: "identical", aT: []float64{1, 2}, aS: []float64{0.8, 0.5}, bT: []float64{1, 2}, bS: []float64{0.8, 0.5}, end: 10, want: 0},
		{name: "early by one step", aT: []float64{0}, aS: []float64{0.9}, bT: []float64{5}, bS: []float64{0.9}, end: 10, want: 0.1},
		{name: "end excludes a later jump", aT: []float64{1, 8}, aS: []float64{0.9, 0.2}, bT: []float64{1}, bS: []float64{0.85}, end: 8, want: 0.05},
		{name: "end includes it", aT: []float64{1, 8}, aS: []float64{0.9, 0.2}, bT: []float64{1}, bS: []float64{0.85}, end: 8.5, want: 0.65},
		{name: "difference between the other curve's jumps", aT: []float64{2}, aS: []float64{0.5}, bT: []float64{1, 3}, bS: []float64{0.9, 0.4}, end: 10, want: 0.4},
		{name: "empty curve is 1", aT: nil, aS: nil, bT: []float64{1}, bS: []float64{0.7}, end: 2, want: 0.3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := kmSupDistance(tc.aT, tc.aS, tc.bT, tc.bS, tc.end)
			if math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("sup = %v, want %v", got, tc.want)
			}
			if back := kmSupDistance(tc.bT, tc.bS, tc.aT, tc.aS, tc.end); math.Abs(back-got) > 1e-12 {
				t.Errorf("not symmetric: %v vs %v", got, back)
			}
		})
	}
}

// TestKMSupDistanceMatchesBinarySearch: the cursor of kmSupDistance gives
// exactly (bit for bit) the supremum of the binary search per point it
// replaced, on random step curves with tied and shared jump points.
func TestKMSupDistanceMatchesBinarySearch(t *testing.T) {
	ref := func(aT, aS, bT, bS []float64, end float64) float64 {
		sup := math.Abs(kmStepAt(aT, aS, 0) - kmStepAt(bT, bS, 0))
		for _, ts := range [][]float64{aT, bT} {
			for _, x := range ts {
				if x >= end {
					break
				}
				sup = math.Max(sup, math.Abs(kmStepAt(aT, aS, x)-kmStepAt(bT, bS, x)))
			}
		}
		return sup
	}
	rng := rand.New(rand.NewPCG(1, 2))
	curve := func() ([]float64, []float64) {
		n := rng.IntN(40)
		tm, sv := make([]float64, n), make([]float64, n)
		x, s := 0.0, 1.0
		for i := range tm {
			x += float64(rng.IntN(3)) // steps of 0 give tied jump points
			s *= rng.Float64()
			tm[i], sv[i] = x, s
		}
		return tm, sv
	}
	for range 2000 {
		aT, aS := curve()
		bT, bS := curve()
		end := float64(rng.IntN(90))
		if got, want := kmSupDistance(aT, aS, bT, bS, end), ref(aT, aS, bT, bS, end); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("sup %v, binary search %v (a %v %v, b %v %v, end %v)", got, want, aT, aS, bT, bS, end)
		}
	}
}

// kmTableRows returns the table rows (lines starting with "| ") after the
// header line that starts with head.
func kmTableRows(t *testing.T, out, head string) [][]string {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, head) {
			continue
		}
		var rows [][]string
		for _, r := range lines[i+2:] {
			if !strings.HasPrefix(r, "| ") {
				break
			}
			cells := strings.Split(strings.Trim(r, "| "), " | ")
			rows = append(rows, cells)
		}
		return rows
	}
	t.Fatalf("no table with header %q in\n%s", head, out)
	return nil
}

// fitsLoadData loads one of the repository's data sets (no covariates) as
// the fit evaluations read it, failing the test if it cannot.
func fitsLoadData(t *testing.T, name string) *fitsData {
	t.Helper()
	d, err := fitsLoadCSV(fitsDataPath(t, name), nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// tableNumber is the number in cell i of a markdown table row, failing the
// test when the cell holds none.
func tableNumber(t *testing.T, row []string, i int) float64 {
	t.Helper()
	var v float64
	if _, err := fmt.Sscan(row[i], &v); err != nil {
		t.Fatalf("cell %q: %v", row[i], err)
	}
	return v
}

// TestKMCommandKidney runs the subcommand end to end on the small kidney
// data set (4 cohorts, 76 records) and checks the output's shape, the
// figures, the -write mode and that a fixed seed reproduces the page.
func TestKMCommandKidney(t *testing.T) {
	t.Parallel() // independent CPU-bound generators: the package uses both cores
	dir := t.TempDir()
	page := filepath.Join(dir, "page.md")
	if err := os.WriteFile(page, []byte("# page\n\nhand-written\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(dir, "img")
	args := []string{"km", "-data", fitsDataPath(t, "kidney_tte.csv"), "-time-max", "600", "-bin-width", "10",
		"-eps", "0.5,2", "-reps", "3", "-bin-widths", "10,30,60", "-sweep-reps", "2",
		"-plots", img, "-plot-eps", "2", "-plot-cohorts", "1,3", "-write", page}
	var stdout, stderr bytes.Buffer
	if code := mainArgs(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("-write printed to stdout: %q", stdout.String())
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	if !strings.HasPrefix(out, "# page\n\nhand-written\n") {
		t.Errorf("hand-written part changed:\n%s", out)
	}
	if !strings.Contains(out, "```sh\n"+fitsCommand("km", args[1:])+"\n```") {
		t.Errorf("page lacks the regenerating command")
	}
	tab := kmTableRows(t, out, "| method | ε |")
	if len(tab) != 1+2*3 {
		t.Fatalf("main table has %d rows, want 7", len(tab))
	}
	if tab[0][1] != "∞" || tab[0][6] != "1" {
		t.Errorf("reference row %v: want ε = ∞ and full coverage", tab[0])
	}
	for _, r := range tab {
		if len(r) != 9 {
			t.Fatalf("row %v has %d cells", r, len(r))
		}
	}
	var bins int
	if i := strings.Index(out, "days ("); i < 0 {
		t.Fatal("no bin count stated")
	} else if _, err := fmt.Sscanf(out[i:], "days (%d bins)", &bins); err != nil || bins < 60 {
		t.Fatalf("bin count %d: %v", bins, err)
	}
	if want := fmt.Sprint(2 * (bins + 1)); tab[6][0] != "LNTE (baseline)" || tab[6][2] != want {
		t.Errorf("LNTE row %v: want total epsilon %s ((bins + 1) x 2)", tab[6], want)
	}
	if tab[5][0] != "hierarchical-histogram KM" || tab[5][2] != "2" {
		t.Errorf("hierarchical row %v: want total epsilon 2", tab[5])
	}
	sweep := kmTableRows(t, out, "| bin width (days) |")
	if len(sweep) != 3 || len(sweep[0]) != 5 {
		t.Errorf("sweep table %v", sweep)
	}
	if n := strings.Count(out, "| bin width (days) |"); n != 2 {
		t.Errorf("%d sweep tables, want 2 (noisy-histogram and hierarchical)", n)
	}
	early := kmTableRows(t, out, "| method | ε | mean sup | median sup | 90% sup | empty |")
	if len(early) != 2*2 || early[1][0] != "hierarchical-histogram KM" {
		t.Errorf("early-domain table %v", early)
	}
	for _, c := range []string{"1", "3"} {
		name := "eval-fits-km-eps2-cohort" + c + ".png"
		png, err := os.ReadFile(filepath.Join(img, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(png, []byte("\x89PNG")) {
			t.Errorf("%s is not a PNG", name)
		}
		if !strings.Contains(out, "](img/"+name+")") {
			t.Errorf("page does not link %s relative to itself", name)
		}
	}
	// Same seed, same page: regenerating replaces the block in place.
	stderr.Reset()
	if code := mainArgs(args, &stdout, &stderr); code != 0 {
		t.Fatalf("second run exit %d: %s", code, stderr.String())
	}
	again, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != out {
		t.Error("a second run with the same seed changed the page")
	}
}

// TestKMUtilityFlchain checks what the table is for on the real data:
// binning alone costs little (exact counts, 30-day bins), and at epsilon = 2
// the noisy-histogram and hierarchical curves are much closer to the exact
// ones than LNTE's (about 0.05 vs 0.3 in the full run). With 3 repetitions x 10 cohorts the
// means have standard errors below 0.01 and 0.05, so the margins below are
// many standard errors wide: the false-alarm rate is negligible (< 1e-6).
func TestKMUtilityFlchain(t *testing.T) {
	d := fitsLoadData(t, "flchain_tte.csv")
	var out bytes.Buffer
	cfg := kmEvalConfig{data: "flchain_tte.csv", timeMax: 5200, binWidth: 30, eps: []float64{2}, reps: 3, seed: 7}
	if err := kmEvaluate(&out, d, cfg, "cmd"); err != nil {
		t.Fatal(err)
	}
	rows := kmTableRows(t, out.String(), "| method | ε |")
	num := func(r []string, i int) float64 { return tableNumber(t, r, i) }
	ref, nh, hk, ln := rows[0], rows[1], rows[2], rows[3]
	t.Logf("mean sup: binned exact %s, noisy-histogram %s, hierarchical %s, LNTE %s", ref[3], nh[3], hk[3], ln[3])
	if v := num(ref, 3); v > 0.03 {
		t.Errorf("binning error %v, want < 0.03 with 30-day bins", v)
	}
	if a, b := num(nh, 3), num(ln, 3); !(a < 0.1 && b > 2*a) {
		t.Errorf("mean sup noisy-histogram %v, LNTE %v: want < 0.1 and LNTE more than twice as far", a, b)
	}
	if a, b := num(hk, 3), num(ln, 3); !(a < 0.1 && b > 2*a) {
		t.Errorf("mean sup hierarchical %v, LNTE %v: want < 0.1 and LNTE more than twice as far", a, b)
	}
	if c := num(nh, 6); c < 0.9 {
		t.Errorf("mean coverage %v at epsilon 2, want > 0.9", c)
	}
}
