package regression

import (
	"reflect"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
)

// TestOutputMemoSameReleases: Ext-Out-Pert releases drawn through an
// outputMemo (the minimiser computed in the first, reused after) equal
// those of FitDiscrete from the same stream, field for field, with and
// without the interval release, across budgets; the memo's copy is not
// changed by the noise added to a release. A memo with noIntervals gives
// the same release but for its limits: setIntervals (then
// AssessInformation) applied to it gives FitDiscrete's, and it leaves the
// stream where FitDiscrete does.
func TestOutputMemoSameReleases(t *testing.T) {
	t.Parallel()
	data := synthetic(dp.NewSeededSource(3), 400, 2, 10, -2, []float64{1, -1})
	for phi, budgets := range map[float64][]float64{0: {0.5, 2, 0.5, 8}, 0.5: {0.5, 2}} {
		plain, memoSrc, bareSrc := dp.NewSeededSource(17), dp.NewSeededSource(17), dp.NewSeededSource(17)
		memo := new(outputMemo)
		bare := &outputMemo{noIntervals: true}
		for r, eps := range budgets {
			opts := DiscreteOptions{Method: MethodOutput, Epsilon: eps, TimeMax: 1, Intervals: 10, IntervalFraction: phi}
			want, err := FitDiscrete(data, opts, plain)
			if err != nil {
				t.Fatal(err)
			}
			got, err := fitDiscrete(data, opts, memoSrc, memo)
			if err != nil {
				t.Fatal(err)
			}
			if !memo.done || !memo.ok {
				t.Fatalf("phi %v release %d: memo not filled (%+v)", phi, r, memo)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("phi %v release %d (eps %v): memo release differs:\n got %+v\nwant %+v", phi, r, eps, got, want)
			}
			noLim, err := fitDiscrete(data, opts, bareSrc, bare)
			if err != nil {
				t.Fatal(err)
			}
			if noLim.BetaDebiased != nil || noLim.NoiseOnlyBetaLower != nil || !bare.noIntervals {
				t.Errorf("phi %v release %d: noIntervals release has limits (%+v) or lost the flag", phi, r, noLim)
			}
			setIntervals(&noLim)
			noLim.LowInformation, noLim.LowInformationReason = AssessInformation(noLim)
			if !reflect.DeepEqual(noLim, want) {
				t.Errorf("phi %v release %d (eps %v): noIntervals release plus its limits differs:\n got %+v\nwant %+v", phi, r, eps, noLim, want)
			}
		}
		if plain.Uint64() != bareSrc.Uint64() {
			t.Errorf("phi %v: noIntervals releases left the stream elsewhere than FitDiscrete's", phi)
		}
	}
}

// TestParallelRepsDeterministic: EvaluateMRE's pSGLD repetitions run in
// parallel on substreams seeded from src, so the report is the same with
// one or several workers, and the source is left where a sequential run
// would leave it (one seed drawn per repetition).
func TestParallelRepsDeterministic(t *testing.T) {
	data := synthetic(dp.NewSeededSource(5), 300, 2, 10, -2, []float64{1, -1})
	base := DiscreteOptions{TimeMax: 1, Intervals: 10, PSGLD: PSGLDOptions{Steps: 200}}
	run := func(procs int) (MREReport, uint64) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		src := dp.NewSeededSource(11)
		rep, err := EvaluateMRE(data, base, []Method{MethodPSGLD}, []float64{1, 4}, 3, src)
		if err != nil {
			t.Fatal(err)
		}
		return rep, src.Uint64()
	}
	one, next1 := run(1)
	two, next2 := run(2)
	four, next4 := run(4)
	if !reflect.DeepEqual(one, two) || !reflect.DeepEqual(one, four) {
		t.Errorf("reports differ with the worker count:\n1: %+v\n2: %+v\n4: %+v", one, two, four)
	}
	if next1 != next2 || next1 != next4 {
		t.Error("the source's state after the run depends on the worker count")
	}
	ref := dp.NewSeededSource(11)
	for range 2 * 3 { // two budgets, three seeds each
		ref.Uint64()
	}
	if next1 != ref.Uint64() {
		t.Error("EvaluateMRE drew more than one seed per pSGLD repetition from src")
	}
	if one.Cells[0].Mean == one.Cells[1].Mean {
		t.Error("two budgets gave the same mean MRE: the substreams are not distinct")
	}

	// every repetition runs exactly once, each on its own stream
	var calls atomic.Int64
	firsts := make([]uint64, 16)
	err := parallelReps(16, dp.NewSeededSource(2), func(r int, s dp.Source) error {
		calls.Add(1)
		firsts[r] = s.Uint64()
		return nil
	})
	if err != nil || calls.Load() != 16 {
		t.Fatalf("parallelReps: %d calls, err %v", calls.Load(), err)
	}
	seen := map[uint64]bool{}
	for _, v := range firsts {
		seen[v] = true
	}
	if len(seen) != 16 {
		t.Errorf("%d distinct streams of 16", len(seen))
	}
}
