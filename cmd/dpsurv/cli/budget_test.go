package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dpsurv/dpsurv/cmd/dpsurv/budgetfile"
)

func budgetOf(t *testing.T, out string) map[string]any {
	t.Helper()
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("decode: %v\n%s", err, out)
	}
	b, _ := r["budget"].(map[string]any)
	return b
}

// --budget-file records every private release against the input's
// fingerprint, across fit kinds, and refuses the one that would pass the
// total, naming spent, requested and total; without it the output says
// that repeated runs add up.
func TestFitBudgetFile(t *testing.T) {
	t.Parallel()
	bf := filepath.Join(t.TempDir(), "budget.json")
	km := []string{"fit", "km", "--input", "../../../data/lung_tte.csv", "--epsilon", "1", "--cohorts", "1,2", "--time-max", "1100"}
	o, e, code := run(t, km...)
	if code != 0 || !strings.Contains(budgetOf(t, o)["note"].(string), "add up their epsilon") || !strings.Contains(e, "add up") {
		t.Fatalf("without --budget-file: exit %d, budget %v, stderr %s", code, budgetOf(t, o), e)
	}
	withFile := append(append([]string{}, km...), "--budget-file", bf, "--budget-total", "2.5")
	for i, want := range []float64{1, 2} {
		o, e, code := run(t, withFile...)
		if code != 0 {
			t.Fatalf("run %d: %s", i, e)
		}
		if b := budgetOf(t, o); b["spent"] != want || b["total"] != 2.5 || !strings.HasPrefix(b["input_fingerprint"].(string), "sha256:") {
			t.Fatalf("run %d: budget %v", i, b)
		}
	}
	o, e, code = run(t, withFile...)
	if code == 0 || o != "" || !strings.Contains(e, "spent 2, requested 1, total 2.5") {
		t.Fatalf("past the total: exit %d, stdout %q, stderr %s", code, o, e)
	}
	// the same input's account across fit kinds
	o, e, code = run(t, "fit", "weibull", "--input", "../../../data/lung_tte.csv", "--epsilon", "0.5", "--cohorts", "1,2", "--time-max", "1100",
		"--interval-sims", "-1", "--budget-file", bf)
	if code != 0 || budgetOf(t, o)["spent"] != 2.5 {
		t.Fatalf("weibull: exit %d, %s, %s", code, o, e)
	}
	_, e, code = run(t, "fit", "discrete", "--input", "../../../data/lung_tte.csv", "--epsilon", "0.1", "--cohorts", "1,2", "--time-max", "1100",
		"--covariates", "age", "--centre", "62", "--scale", "10", "--budget-file", bf)
	if code == 0 || !strings.Contains(e, "spent 2.5, requested 0.1, total 2.5") {
		t.Fatalf("discrete past the total: exit %d, %s", code, e)
	}
	d, err := budgetfile.Read(bf)
	if err != nil || len(d.Inputs) != 1 {
		t.Fatalf("file: %+v %v", d, err)
	}
	for _, en := range d.Inputs {
		if len(en.Releases) != 3 || en.Spent != 2.5 {
			t.Fatalf("file: %+v", en)
		}
	}
}

// The charge is the release's whole loss: LNTE at epsilon 0.01 per time
// point over 150 bins spends 1.51. The second such release passes the
// check before the work (1.52 <= 2) but not the charge after it (3.02 >
// 2): it is withheld, nothing printed.
func TestFitBudgetChargesTotalLoss(t *testing.T) {
	bf := filepath.Join(t.TempDir(), "budget.json")
	args := []string{"fit", "km", "--input", "../../../data/lung_tte.csv", "--epsilon", "0.01", "--cohorts", "1,2", "--time-max", "1500",
		"--method", "lnte", "--budget-file", bf, "--budget-total", "2"}
	o, e, code := run(t, args...)
	if code != 0 {
		t.Fatal(e)
	}
	if b := budgetOf(t, o); b["spent"].(float64) < 1.5 {
		t.Fatalf("charged %v, want the total loss 1.51", b)
	}
	o, e, code = run(t, args...)
	if code == 0 || o != "" || !strings.Contains(e, "release withheld") || !strings.Contains(e, "total 2") {
		t.Fatalf("second lnte: exit %d, stdout %q, stderr %s", code, o, e)
	}
}

// Two fits at once against a total that holds one of them: exactly one is
// released.
func TestFitBudgetConcurrent(t *testing.T) {
	t.Parallel()
	bf := filepath.Join(t.TempDir(), "budget.json")
	args := []string{"fit", "km", "--input", "../../../data/lung_tte.csv", "--epsilon", "1", "--cohorts", "1,2", "--time-max", "1100",
		"--budget-file", bf, "--budget-total", "1.5"}
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, codes[i] = run(t, args...)
		}()
	}
	wg.Wait()
	ok := 0
	for _, c := range codes {
		if c == 0 {
			ok++
		}
	}
	d, err := budgetfile.Read(bf)
	if err != nil {
		t.Fatal(err)
	}
	if ok != 1 {
		t.Fatalf("%d of 4 concurrent fits released (exit codes %v), want 1; file %+v", ok, codes, d)
	}
}
