package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestRegressionPresetsMatchGolden: the public preprocessing presets are
// those of the regression package's R golden files, so the tables here and
// the package's agreement with R glm/coxph refer to the same problem.
func TestRegressionPresetsMatchGolden(t *testing.T) {
	for name, p := range regPresets {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "..", "..", "regression", "testdata", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var g struct {
				Covariates []string  `json:"covariates"`
				Centre     []float64 `json:"centre"`
				Scale      []float64 `json:"scale"`
				TimeMax    float64   `json:"time_max"`
			}
			if err := json.Unmarshal(b, &g); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g.Covariates, p.covariates) || !reflect.DeepEqual(g.Centre, p.centre) ||
				!reflect.DeepEqual(g.Scale, p.scale) || g.TimeMax != p.timeMax {
				t.Errorf("preset %+v differs from golden %+v", p, g)
			}
		})
	}
	if _, _, _, err := regLoad("somewhere/unknown_tte.csv"); err == nil || !strings.Contains(err.Error(), "no public preprocessing preset") {
		t.Errorf("unknown data set: %v", err)
	}
}

// TestRegressionCommandKidney runs the subcommand on kidney (76 records)
// with short runs and checks the three tables' shapes, then the Cox
// comparison's figures against the regression package's (lung 5.8%,
// kidney 3.2%).
func TestRegressionCommandKidney(t *testing.T) {
	args := []string{"regression", "-data", fitsDataPath(t, "kidney_tte.csv"), "-eps", "1,6.4", "-reps", "3",
		"-psgld-reps", "1", "-psgld-steps", "300", "-lambdas", "1e-3,1e-1,1", "-sweep-reps", "3",
		"-cox-data", fitsDataPath(t, "kidney_tte.csv") + "," + fitsDataPath(t, "lung_tte.csv"), "-seed", "2"}
	var stdout, stderr bytes.Buffer
	if code := mainArgs(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	if n := strings.Count(out, "```sh\n"+fitsCommand("regression", args[1:])+"\n```"); n != 3 {
		t.Errorf("the regenerating command precedes %d tables, want 3", n)
	}
	sweep := kmTableRows(t, out, "| Λ |")
	if len(sweep) != 3 || len(sweep[0]) != 6 { // no paper column for kidney
		t.Fatalf("sweep table %v", sweep)
	}
	mre := kmTableRows(t, out, "| ε | Ext-Out-Pert |")
	if len(mre) != 2 || len(mre[0]) != 6 { // the last column: noisy Newton
		t.Fatalf("mre table %v", mre)
	}
	for _, r := range mre {
		if r[5] == "—" || r[4] == "—" || r[1] == "—" || r[2] == "—" {
			t.Errorf("missing cell in %v", r)
		}
	}
	cox := kmTableRows(t, out, "| data set |")
	if len(cox) != 2 {
		t.Fatalf("cox table %v", cox)
	}
	want := map[string]float64{"kidney": 3.16, "lung": 5.78}
	for _, r := range cox {
		var re float64
		if _, err := fmt.Sscanf(r[4], "%f%%", &re); err != nil {
			t.Fatalf("cell %q: %v", r[4], err)
		}
		if w, ok := want[r[0]]; !ok || re < w-0.05 || re > w+0.05 {
			t.Errorf("%s: RE %v%%, want %v%%", r[0], re, w)
		}
	}
	// The ridge bias grows with the ridge (a deterministic column).
	var prev float64
	for i, r := range sweep {
		b := tableNumber(t, r, 4)
		if i > 0 && !(b > prev) {
			t.Errorf("ridge bias not increasing: %v", sweep)
		}
		prev = b
	}
}

func TestRegressionCommandErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown data set", []string{"-data", "x/other_tte.csv"}, "no public preprocessing preset"},
		{"zero reps", []string{"-reps", "0"}, "reps"},
		{"bad budget", []string{"-eps", "0.1,-1"}, "must be positive"},
		{"bad list", []string{"-lambdas", "1e-3,abc"}, "not a finite number"},
		{"stray argument", []string{"extra"}, "unexpected arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := mainArgs(append([]string{"regression"}, tc.args...), &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr.String(), tc.want)
			}
		})
	}
}
