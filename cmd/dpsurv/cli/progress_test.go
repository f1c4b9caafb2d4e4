package cli

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// progressLine is the only form a progress line may take: the command, a
// phase in words, optionally steps of a total, the elapsed seconds. No
// record value can appear in it.
var progressLine = regexp.MustCompile(`^dpsurv fit [a-z]+: (([a-z][a-z ,-]*)(: \d+ of about \d+)?|done) \(\d+ s\)$`)

// Long work reports progress on stderr: quick work prints nothing at the
// default threshold (2 s); with the threshold at 0, a private Weibull with
// intervals prints the simulated releases done of their total, then
// "done"; every progress line has the fixed form above.
func TestFitProgress(t *testing.T) {
	if _, e, code := run(t, "fit", "km", "--input", "../../../data/lung_tte.csv", "--epsilon", "inf"); code != 0 || e != "" {
		t.Fatalf("quick fit: exit %d, stderr %q", code, e)
	}
	progressAfter.Store(0)
	progressEvery.Store(int64(5 * time.Millisecond))
	t.Cleanup(func() {
		progressAfter.Store(int64(2 * time.Second))
		progressEvery.Store(int64(2 * time.Second))
	})
	_, e, code := run(t, "fit", "weibull", "--input", "../../../data/lung_tte.csv", "--epsilon", "1", "--cohorts", "1,2", "--time-max", "1100")
	if code != 0 {
		t.Fatal(e)
	}
	var prog []string
	for _, l := range strings.Split(strings.TrimSpace(e), "\n") {
		if strings.Contains(l, ": privacy budget not recorded") {
			continue // the budget note
		}
		if !progressLine.MatchString(l) {
			t.Errorf("stderr line not of the progress form: %q", l)
		}
		prog = append(prog, l)
	}
	t.Logf("%d progress lines, e.g. %q", len(prog), prog[len(prog)/2])
	if !strings.Contains(e, "simulated releases of the mechanism: ") || !strings.HasSuffix(prog[len(prog)-1], ")") ||
		!strings.Contains(prog[len(prog)-1], ": done (") {
		t.Fatalf("no step counts or no final done line:\n%s", e)
	}
}
