package weibull

import (
	"math"
	"math/rand/v2"
	"testing"
)

// weibullSimShapeSide puts every simulated shape on the same side of the
// released shape as the whole ladder's draw from the same random numbers,
// and leaves the stream where the whole draw leaves it; weibullCoarseSide,
// when it settles the side from the groups' counts before the cells are
// drawn, gives the whole ladder's side of the data set the cells then
// make (unless the draw falls on the last level, where the sampler gives
// up to weibullSimTopMass, 1e-12, of probability): on data simulated
// from candidate shapes far from and near the released one, on a large
// release (300,000 events, where nearly every far draw is settled from
// rung K) and a small one (2,000 records), at the simulation's rung cut
// and at a cut of 20 rungs (where the last level is too heavy to skip, so
// every draw takes the rewind to the whole ladder).
func TestWeibullSimSideMatchesLadder(t *testing.T) {
	t.Parallel()
	params := map[string]float64{"gamma": 10, "omega": 6, "rungs": 500, "time_max": 5000, "tolerance": 1e-09}
	for _, tc := range []struct {
		name  string
		fit   WeibullFit
		rungs int // 0: weibullSimRungs
		res   int
		draws int
	}{
		{"large", WeibullFit{Shape: 1.623620764, Scale: 1.1579631610542005, Epsilon: 1, N: 300148}, 0, 256, 8},
		{"large-2048", WeibullFit{Shape: 1.623620764, Scale: 1.1579631610542005, Epsilon: 1, N: 300148}, 0, 2048, 4},
		{"small", WeibullFit{Shape: 1.3, Scale: 0.6, Epsilon: 2, N: 1500}, 0, 256, 6},
		{"cut-20", WeibullFit{Shape: 1.623620764, Scale: 1.1579631610542005, Epsilon: 1, N: 300148}, 20, 256, 4},
	} {
		cfg := WeibullConfig{Epsilon: tc.fit.Epsilon, TimeMax: params["time_max"], Omega: params["omega"], Gamma: params["gamma"],
			Rungs: int(params["rungs"]), Tolerance: params["tolerance"]}.WithDefaults()
		simCfg := cfg
		simCfg.Rungs = weibullSimRungs(cfg)
		if tc.rungs > 0 {
			simCfg.Rungs = tc.rungs
		}
		ratio := math.Pow(tc.fit.Scale, tc.fit.Shape)
		side := func(v float64) int {
			switch {
			case v < tc.fit.Shape:
				return -1
			case v > tc.fit.Shape:
				return 1
			}
			return 0
		}
		cheap, whole, settled := 0, 0, 0
		for ci, f := range []float64{0.05, 0.5, 0.9, 0.96, 0.97, 0.98, 0.985, 0.99, 0.995, 1, 1.005, 1.01, 1.015, 1.02, 1.025, 1.03, 1.04, 1.1, 2, 5} {
			p := min(tc.fit.Shape*f, cfg.Gamma)
			sim := newWeibullSim(p, weibullMatchScale(p, tc.fit.Shape, ratio), tc.fit.N, tc.res, 0, cfg.TimeMax)
			src := rand.NewChaCha8([32]byte{byte(ci), 9})
			sim.prepare(cfg)
			sim.coarsePrep(simCfg, tc.fit.Shape)
			for r := 0; r < tc.draws; r++ {
				e := sim.countsCoarse(src)
				coarse := weibullCoarseSide(sim, e, simCfg, tc.fit.Shape)
				sim.refine(src)
				d := sim.data(e)
				a, b := *src, *src
				got, ok := weibullSimShapeSide(d, simCfg, &a, tc.fit.Shape)
				want := weibullLadderSampleFloat(weibullComputeLadderOpt(d, simCfg, true), &b, cfg.Epsilon)
				if coarse != 0 && tc.rungs == 0 { // (at a cut of 20 the last level is heavy: the side is S^K's only)
					settled++
					if coarse != side(want) && !math.IsInf(want, 0) {
						t.Errorf("%s: candidate %v draw %d: side %d (shape %v) from the whole ladder, %d from the groups' counts", tc.name, p, r, side(want), want, coarse)
					}
				}
				if ok {
					cheap++
				} else {
					whole++
					if got != want {
						t.Errorf("%s: candidate %v draw %d: shape %v from the whole ladder, %v through weibullSimShapeSide", tc.name, p, r, want, got)
					}
				}
				if side(got) != side(want) {
					t.Errorf("%s: candidate %v draw %d: side %d (shape %v) from the whole ladder, %d through weibullSimShapeSide", tc.name, p, r, side(want), want, side(got))
				}
				if x, y := a.Uint64(), b.Uint64(); x != y {
					t.Errorf("%s: candidate %v draw %d: the stream is out of step after the draw", tc.name, p, r)
				}
				*src = a
			}
		}
		t.Logf("%s: %d draws settled from rung K, %d from the whole ladder; %d from the groups' counts", tc.name, cheap, whole, settled)
		if tc.name == "large" && settled < cheap/2 {
			t.Errorf("%s: only %d draws settled from the groups' counts", tc.name, settled)
		}
		if tc.rungs > 0 && cheap > 0 {
			t.Errorf("%s: %d draws settled from rung K with a last level of mass %v", tc.name, cheap, weibullSimTopMass(simCfg))
		}
		if tc.rungs == 0 && tc.name != "small" && cheap < whole {
			t.Errorf("%s: only %d of %d draws settled from rung K", tc.name, cheap, cheap+whole)
		}
		if whole == 0 {
			t.Errorf("%s: no draw took the whole ladder: the near candidates are not exercised", tc.name)
		}
	}
}
