package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/audit/audittest"
)

func auditMain(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return out.String(), errb.String(), code
}

// auditFixture writes 600 records whose cohort is the parity of the day
// (each day belongs to one cohort: the attack is perfect on the original)
// and a PRF key.
func auditFixture(t *testing.T) (dir, input, key string) {
	t.Helper()
	dir = t.TempDir()
	var b strings.Builder
	b.WriteString("id,time,event,cohort\n")
	for i := range 600 {
		fmt.Fprintf(&b, "r%d,%d,%d,%s\n", i, i, (i/3)%2, []string{"even", "odd"}[i%2])
	}
	input = filepath.Join(dir, "orig.csv")
	key = filepath.Join(dir, "prf.key")
	if err := os.WriteFile(input, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, []byte(strings.Repeat("3c", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, input, key
}

func TestAuditCommand(t *testing.T) {
	t.Parallel()
	dir, input, key := auditFixture(t)
	for _, ext := range []string{"csv", "arrow"} {
		san := filepath.Join(dir, "san."+ext)
		if _, stderr, code := auditMain(t, "sanitize", "--input", input, "--output", san, "--cohorts", "even,odd",
			"--time-max", "700", "--te-epsilon", "0.5", "--te-window", "10", "--key-file", key, "--public", "event,cohort"); code != 0 {
			t.Fatalf("sanitize %s: exit %d: %s", ext, code, stderr)
		}
		t.Run(ext, func(t *testing.T) {
			args := []string{"audit", "--original", input, "--sanitized", san, "--json", "--seed", "9", "--time-max", "700", "--key-file", key}
			if ext == "csv" { // CSV carries no metadata: the mechanism comes from the flags
				args = append(args, "--te-epsilon", "0.5", "--te-window", "10")
			}
			out, stderr, code := auditMain(t, args...)
			if code != 0 {
				t.Fatalf("audit: exit %d: %s", code, stderr)
			}
			got := audittest.Decode(t, []byte(out))
			if got.Mechanism != "te-sanitizer(epsilon=0.5, window=10)" {
				t.Errorf("mechanism %q", got.Mechanism)
			}
			for _, c := range []string{"even", "odd"} {
				p, np, lr := got.Attack.Precision[c], got.Attack.PrecisionNonPrivate[c], got.Utility.LogRank[c]
				if p == nil || np == nil || lr == nil {
					t.Fatalf("cohort %s missing: %s", c, out)
				}
				if *np != 1 || !(*p < 0.75) {
					t.Errorf("cohort %s: precision %v (non-private %v), want < 0.75 and 1", c, *p, *np)
				}
			}
			if got.Utility.KL == nil || got.Utility.MAE == nil || got.Utility.Joined == nil || *got.Utility.Joined != 600 {
				t.Errorf("utility: %s", out)
			}
			// Seeded: the same report twice.
			again, _, _ := auditMain(t, args...)
			if again != out {
				t.Error("seeded audit is not reproducible")
			}
		})
	}
	// The readable table.
	out, stderr, code := auditMain(t, "audit", "--original", input, "--sanitized", filepath.Join(dir, "san.csv"), "--te-epsilon", "0.5", "--te-window", "10", "--resamples", "10")
	if code != 0 {
		t.Fatalf("audit text: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"cohort inference attack", "non-private", "even", "odd", "log-rank chisq"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	// The original audited against itself with the identity mechanism:
	// precision equals the non-private one, utility is perfect.
	out, stderr, code = auditMain(t, "audit", "--original", input, "--sanitized", input, "--mechanism", "none", "--json", "--seed", "1")
	if code != 0 {
		t.Fatalf("audit identity: exit %d: %s", code, stderr)
	}
	id := audittest.Decode(t, []byte(out))
	if *id.Attack.Precision["odd"] != 1 || *id.Utility.KL != 0 || *id.Utility.MAE != 0 || *id.Utility.LogRank["odd"] != 0 {
		t.Errorf("identity audit: %s", out)
	}
}

func TestAuditUsageErrors(t *testing.T) {
	dir, input, _ := auditFixture(t)
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no inputs", []string{"audit"}, 2, "required"},
		{"no mechanism", []string{"audit", "--original", input, "--sanitized", input}, 2, "which mechanism"},
		{"unknown mechanism", []string{"audit", "--original", input, "--sanitized", input, "--mechanism", "magic"}, 2, "unknown --mechanism"},
		{"missing file", []string{"audit", "--original", filepath.Join(dir, "nope.csv"), "--sanitized", input, "--mechanism", "none"}, 1, "nope.csv"},
		{"bad te", []string{"audit", "--original", input, "--sanitized", input, "--te-epsilon", "0.5", "--te-window", "0"}, 1, "window"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := auditMain(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.msg) {
				t.Errorf("exit %d, stderr %q; want exit %d mentioning %q", code, stderr, tc.code, tc.msg)
			}
		})
	}
	// A sanitized file without the cohort: explained, not a crash.
	noCohort := filepath.Join(dir, "nocohort.csv")
	if err := os.WriteFile(noCohort, []byte("id,time,event\na,1,1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := auditMain(t, "audit", "--original", input, "--sanitized", noCohort, "--mechanism", "none")
	if code != 1 || !strings.Contains(stderr, "--public event,cohort") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}
