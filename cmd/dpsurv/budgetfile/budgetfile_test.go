package budgetfile

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func charge(eps, total float64) Charge {
	return Charge{Fingerprint: "sha256:abc", Input: "lung.csv", Command: "fit km", Epsilon: eps, Total: total}
}

// Spending adds up per input; a release past the total is refused with
// spent, requested and total in the message, and nothing is recorded.
func TestSpendAndRefuse(t *testing.T) {
	p := filepath.Join(t.TempDir(), "budget.json")
	if _, err := Spend(p, charge(1, 0)); err == nil || !strings.Contains(err.Error(), "--budget-total") {
		t.Fatalf("first charge without a total: %v", err)
	}
	for i := 0; i < 2; i++ {
		if _, err := Spend(p, charge(1, 2.5)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Spend(p, charge(1, 0))
	if !errors.Is(err, ErrExhausted) || !strings.Contains(err.Error(), "spent 2, requested 1, total 2.5") {
		t.Fatalf("third charge: %v", err)
	}
	if _, err := Check(p, charge(0.5, 0)); err != nil {
		t.Fatalf("0.5 fits: %v", err)
	}
	if _, err := Spend(p, charge(0.5, 3)); err == nil || !strings.Contains(err.Error(), "recorded total 2.5") {
		t.Fatalf("another total: %v", err)
	}
	e, err := Spend(p, charge(0.5, 2.5))
	if err != nil || e.Spent != 2.5 || len(e.Releases) != 3 || e.Remaining() != 0 {
		t.Fatalf("after 0.5: %+v, %v", e, err)
	}
	// another input has its own account
	other := charge(1, 1)
	other.Fingerprint = "sha256:def"
	if _, err := Spend(p, other); err != nil {
		t.Fatal(err)
	}
	d, err := Read(p)
	if err != nil || len(d.Inputs) != 2 || d.Inputs["sha256:abc"].Spent != 2.5 {
		t.Fatalf("file: %+v, %v", d, err)
	}
	// no temporary file is left behind
	ents, _ := os.ReadDir(filepath.Dir(p))
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// A file that is not a budget file is refused and left as it is; bad
// epsilons and totals are refused.
func TestRefusesBadInput(t *testing.T) {
	p := filepath.Join(t.TempDir(), "budget.json")
	os.WriteFile(p, []byte("not json"), 0o600)
	if _, err := Spend(p, charge(1, 2)); err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Fatalf("corrupt file: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "not json" {
		t.Fatalf("corrupt file overwritten: %q", b)
	}
	q := filepath.Join(t.TempDir(), "budget.json")
	for _, c := range []Charge{charge(0, 1), charge(-1, 1), charge(1, -1)} {
		if _, err := Spend(q, c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// The fingerprint is the SHA-256 of the bytes: a changed file is another
// input.
func TestFingerprint(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.csv")
	os.WriteFile(p, []byte("id,time\n1,2\n"), 0o600)
	a, err := Fingerprint(p)
	if err != nil || !strings.HasPrefix(a, "sha256:") || len(a) != len("sha256:")+64 {
		t.Fatalf("%v %v", a, err)
	}
	os.WriteFile(p, []byte("id,time\n1,3\n"), 0o600)
	if b, _ := Fingerprint(p); b == a {
		t.Fatal("a changed file has the same fingerprint")
	}
}

// Concurrent fits, in separate processes (this test binary re-run as a
// helper) and goroutines, each try to spend 0.5 six times against a total
// of 10: exactly 20 charges succeed, the file records exactly 20 releases
// and spent 10, and every refusal is ErrExhausted (no lost update, no torn
// file).
func TestConcurrentSpend(t *testing.T) {
	p := filepath.Join(t.TempDir(), "budget.json")
	if _, err := Spend(p, charge(0.5, 10)); err != nil { // states the total
		t.Fatal(err)
	}
	const procs, goroutines, each = 3, 2, 6
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, refused := 1, 0
	for i := 0; i < procs; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "BUDGETFILE_HELPER="+p, "BUDGETFILE_N="+strconv.Itoa(each))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("helper: %v\n%s", err, out)
				return
			}
			var a, b int
			if _, err := fmt.Sscanf(lastLine(string(out)), "ok %d refused %d", &a, &b); err != nil {
				t.Errorf("helper output %q: %v", out, err)
			}
			mu.Lock()
			ok, refused = ok+a, refused+b
			mu.Unlock()
		}()
	}
	for i := 0; i < goroutines; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, b, err := spendN(p, each)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			ok, refused = ok+a, refused+b
			mu.Unlock()
		}()
	}
	wg.Wait()
	d, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	e := d.Inputs["sha256:abc"]
	t.Logf("%d charges succeeded, %d refused; file: spent %v, %d releases", ok, refused, e.Spent, len(e.Releases))
	if ok != 20 || refused != (procs+goroutines)*each+1-20 || e.Spent != 10 || len(e.Releases) != 20 {
		t.Errorf("want 20 charges and spent 10: got %d ok, %d refused, spent %v, %d releases", ok, refused, e.Spent, len(e.Releases))
	}
}

func spendN(p string, n int) (ok, refused int, err error) {
	for i := 0; i < n; i++ {
		_, err := Spend(p, charge(0.5, 0))
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrExhausted):
			refused++
		default:
			return ok, refused, err
		}
	}
	return ok, refused, nil
}

func lastLine(s string) string {
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if strings.HasPrefix(l, "ok ") {
			return l
		}
	}
	return ""
}

// TestMain runs this binary as TestConcurrentSpend's helper process when
// BUDGETFILE_HELPER names a budget file: it spends BUDGETFILE_N times and
// prints its counts.
func TestMain(m *testing.M) {
	if p := os.Getenv("BUDGETFILE_HELPER"); p != "" {
		n, _ := strconv.Atoi(os.Getenv("BUDGETFILE_N"))
		ok, refused, err := spendN(p, n)
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Printf("ok %d refused %d\n", ok, refused)
		os.Exit(0)
	}
	os.Exit(m.Run())
}
