package weibull

import (
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/internal/stattest"
	"github.com/dpsurv/dpsurv/survival"
)

// wbRecords is a record-level sample (for building neighbours).
type wbRecords struct {
	time   []float64
	event  []bool
	cohort []string
}

func (r wbRecords) compress() survival.Compressed { return survival.Compress(r.time, r.event) }

func (r wbRecords) clone() wbRecords {
	return wbRecords{time: slices.Clone(r.time), event: slices.Clone(r.event), cohort: slices.Clone(r.cohort)}
}

func (r wbRecords) subset(cohort string) wbRecords {
	var out wbRecords
	for i := range r.time {
		if cohort == "" || r.cohort[i] == cohort {
			out.time = append(out.time, r.time[i])
			out.event = append(out.event, r.event[i])
			out.cohort = append(out.cohort, r.cohort[i])
		}
	}
	return out
}

// wbCase is a data set of the ladder tests with its time max.
type wbCase struct {
	name string
	r    wbRecords
	tmax float64
}

// kidneyLung are the two small data sets the ladder's neighbour tests
// run on.
func kidneyLung(t testing.TB) []wbCase {
	t.Helper()
	kid, kidMax := loadWB(t, "kidney")
	lung, lungMax := loadWB(t, "lung")
	return []wbCase{{"kidney", kid, kidMax}, {"lung", lung, lungMax}}
}

// wbEngine is the ladder engine of r's records under cfg.
func wbEngine(t testing.TB, r wbRecords, cfg WeibullConfig) *weibullLadderEngine {
	t.Helper()
	d, err := normaliseWeibull(r.compress(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return newWeibullLadderEngine(d, cfg)
}

// shapeGrid is the shapes 0.05, 0.05 step, 0.05 step^2, ... up to gamma at
// which the bound functions are compared.
func shapeGrid(gamma, step float64) []float64 {
	var ps []float64
	for p := 0.05; p <= gamma; p *= step {
		ps = append(ps, p)
	}
	return ps
}

// checkLemma1BothWays: Lemma 1's inequalities hold from a to b and from b
// to a (lemma1Violation) at the shapes ps.
func checkLemma1BothWays(t testing.TB, what string, a, b *weibullLadderEngine, ps []float64) {
	t.Helper()
	if msg := lemma1Violation(a, b, ps); msg != "" {
		t.Fatalf("%s: %s", what, msg)
	}
	if msg := lemma1Violation(b, a, ps); msg != "" {
		t.Fatalf("%s (reverse): %s", what, msg)
	}
}

// loadWB reads the testdata copy of a shared dataset (written by
// scripts/golden_weibull.R) and returns it with its maximum time.
func loadWB(t testing.TB, name string) (wbRecords, float64) {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "survival", "testdata", "weibull_"+name+".csv"))
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	t.Cleanup(func() { f.Close() })
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	var r wbRecords
	mx := 0.0
	for _, row := range rows[1:] {
		v, err := strconv.ParseFloat(row[0], 64)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r.time = append(r.time, v)
		r.event = append(r.event, row[1] == "1")
		r.cohort = append(r.cohort, row[2])
		mx = max(mx, v)
	}
	return r, mx
}

func wbLadder(t testing.TB, c survival.Compressed, cfg WeibullConfig) WeibullLadder {
	t.Helper()
	lad, err := ComputeWeibullLadder(c, cfg)
	if err != nil {
		t.Fatalf("ladder: %v", err)
	}
	return lad
}

func TestWeibullConfigValidate(t *testing.T) {
	t.Parallel()
	ok := WeibullConfig{Epsilon: 1, TimeMax: 100}.WithDefaults()
	tests := []struct {
		name   string
		mutate func(*WeibullConfig)
		valid  bool
	}{
		{"defaults", func(*WeibullConfig) {}, true},
		{"epsilon inf allowed", func(c *WeibullConfig) { c.Epsilon = math.Inf(1) }, true},
		{"epsilon zero", func(c *WeibullConfig) { c.Epsilon = 0 }, false},
		{"epsilon nan", func(c *WeibullConfig) { c.Epsilon = math.NaN() }, false},
		{"time max zero", func(c *WeibullConfig) { c.TimeMax = 0 }, false},
		{"time max inf", func(c *WeibullConfig) { c.TimeMax = math.Inf(1) }, false},
		{"omega negative", func(c *WeibullConfig) { c.Omega = -1 }, false},
		{"gamma nan", func(c *WeibullConfig) { c.Gamma = math.NaN() }, false},
		{"omega*gamma underflows", func(c *WeibullConfig) { c.Omega, c.Gamma = 50, 20 }, false},
		{"rungs too many", func(c *WeibullConfig) { c.Rungs = 200_000 }, false},
		{"rungs zero", func(c *WeibullConfig) { c.Rungs = 0 }, false},
		{"tolerance too big", func(c *WeibullConfig) { c.Tolerance = 5 }, false},
		{"scale bound negative", func(c *WeibullConfig) { c.ScaleBound = -2 }, false},
		{"block size zero", func(c *WeibullConfig) { c.BlockSize = 0 }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mutate(&c)
			if err := c.Validate(); (err == nil) != tc.valid {
				t.Fatalf("Validate() = %v, want valid=%v", err, tc.valid)
			}
		})
	}
	d := WeibullConfig{}.WithDefaults()
	if d.Omega != 6 || d.Gamma != 10 || d.Rungs != 500 || d.ScaleBound != 10 || d.BlockSize != 500 {
		t.Fatalf("defaults %+v", d)
	}
}

// TestWeibullLadderNestedAndContainsMLE: on every dataset and cohort, the
// rungs are nested, lie in [0, gamma], the last is [0, gamma], and each
// contains the MLE of the same normalised data (rung 0 is that point).
func TestWeibullLadderNestedAndContainsMLE(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"flchain", "lung", "kidney"} {
		r, mx := loadWB(t, name)
		cohorts := []string{""}
		for _, c := range r.cohort {
			if !slices.Contains(cohorts, c) {
				cohorts = append(cohorts, c)
			}
		}
		for _, co := range cohorts {
			t.Run(name+"/"+co, func(t *testing.T) {
				cfg := WeibullConfig{TimeMax: mx}.WithDefaults()
				sub := r.subset(co)
				lad := wbLadder(t, sub.compress(), cfg)
				d, err := normaliseWeibull(sub.compress(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				mle, err := survival.FitWeibull(d.compressed())
				if err != nil {
					t.Fatalf("mle: %v", err)
				}
				if lad.Lower[0] != mle.Shape || lad.Upper[0] != mle.Shape {
					t.Fatalf("rung 0 = [%v, %v], MLE %v", lad.Lower[0], lad.Upper[0], mle.Shape)
				}
				K := lad.Rungs()
				if lad.Lower[K+1] != 0 || lad.Upper[K+1] != cfg.Gamma {
					t.Fatalf("rung K+1 = [%v, %v]", lad.Lower[K+1], lad.Upper[K+1])
				}
				for k := 1; k <= K+1; k++ {
					lo, up := lad.Lower[k], lad.Upper[k]
					if lo < 0 || up > cfg.Gamma || lo > up {
						t.Fatalf("rung %d = [%v, %v] outside [0, gamma] or empty", k, lo, up)
					}
					if !(lo <= mle.Shape && mle.Shape <= up) {
						t.Fatalf("rung %d = [%v, %v] misses the MLE %v", k, lo, up, mle.Shape)
					}
					if k >= 2 && (lo > lad.Lower[k-1] || up < lad.Upper[k-1]) {
						t.Fatalf("rung %d = [%v, %v] does not contain rung %d = [%v, %v]", k, lo, up, k-1, lad.Lower[k-1], lad.Upper[k-1])
					}
					if float64(k) >= mle.Events && (lo != 0 || up != cfg.Gamma) {
						t.Fatalf("rung %d >= events %v is [%v, %v], want [0, gamma]", k, mle.Events, lo, up)
					}
				}
				if w := lad.Upper[1] - lad.Lower[1]; !(w > 0) {
					t.Fatalf("rung 1 has no width: %v", w)
				}
			})
		}
	}
}

// directLadder recomputes the computed rungs with the same grid-and-bisect
// rule but every bound evaluated by direct sums over the sample (no moment
// expansion). It is the reference for the fast engine.
func directLadder(d weibullData, cfg WeibullConfig) (lo, up []float64) {
	e := newWeibullLadderEngine(d, cfg)
	K := cfg.Rungs
	lo, up = make([]float64, K+1), make([]float64, K+1)
	G := 16
	for float64(G) < 4*cfg.Omega*cfg.Gamma {
		G *= 2
	}
	w := cfg.Gamma / float64(G)
	iters := 0
	for x := w; x > cfg.Tolerance; x /= 2 {
		iters++
	}
	pre := make([]float64, len(e.cutG))
	grp := make([]float64, len(e.cutG))
	hA := func(k int, p float64) float64 { s, nn := e.sums(p, pre, grp); return e.hA(k, p, s, nn) }
	hB := func(k int, p float64) float64 {
		_, nn := e.sums(p, pre, grp)
		g := e.cutOf[k]
		return e.hB(k, p, nn, pre[g]+e.cutR[k]*grp[g])
	}
	tol := cfg.Tolerance
	for k := 1; k <= e.kmax; k++ {
		lo[k], up[k] = cfg.Gamma, cfg.Gamma
		for j := 1; j <= G; j++ {
			if hA(k, float64(j)*w) > 0 {
				a, b := float64(j-1)*w, float64(j)*w
				for it := 0; it < iters; it++ {
					m := a + (b-a)/2
					if hA(k, m) > 0 {
						b = m
					} else {
						a = m
					}
				}
				lo[k] = max(math.Floor(a/tol-1)*tol, 0)
				break
			}
		}
		for j := 1; j <= G; j++ {
			if hB(k, float64(j)*w) >= 0 {
				a, b := float64(j-1)*w, float64(j)*w
				for it := 0; it < iters; it++ {
					m := a + (b-a)/2
					if hB(k, m) >= 0 {
						b = m
					} else {
						a = m
					}
				}
				up[k] = min(math.Ceil(b/tol+1)*tol, cfg.Gamma)
				break
			}
		}
	}
	for k := 2; k <= e.kmax; k++ {
		lo[k] = min(lo[k], lo[k-1])
		up[k] = max(up[k], up[k-1])
	}
	return lo, up
}

// TestWeibullLadderMatchesDirect: the moment-expansion engine finds the same
// interval ends as direct evaluation, to within two tolerance steps.
func TestWeibullLadderMatchesDirect(t *testing.T) {
	t.Parallel()
	fl, flMax := loadWB(t, "flchain")
	lung, lungMax := loadWB(t, "lung")
	kid, kidMax := loadWB(t, "kidney")
	tests := []struct {
		name string
		r    wbRecords
		tmax float64
		K    int
	}{
		{"kidney", kid, kidMax, 80},
		{"lung", lung, lungMax, 60},
		{"flchain cohort 3", fl.subset("3"), flMax, 60},
		{"flchain", fl, flMax, 25},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := WeibullConfig{TimeMax: tc.tmax, Rungs: tc.K, Tolerance: 1e-9}.WithDefaults()
			d, err := normaliseWeibull(tc.r.compress(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			lad := weibullComputeLadder(d, cfg)
			lo, up := directLadder(d, cfg)
			worst := 0.0
			for k := 1; k < int(d.e) && k <= tc.K; k++ {
				worst = max(worst, math.Abs(lad.Lower[k]-lo[k]), math.Abs(lad.Upper[k]-up[k]))
			}
			if worst > 2.5*cfg.Tolerance {
				t.Fatalf("engine and direct evaluation differ by %v (tolerance %v)", worst, cfg.Tolerance)
			}
		})
	}
}

// extremeRecords are the records an adversary would insert: events and
// censorings at both ends of the clamped time range, in data units.
func extremeRecords(tmax float64) []struct {
	t float64
	d bool
} {
	return []struct {
		t float64
		d bool
	}{{tmax, true}, {tmax, false}, {0, true}, {0, false}, {tmax / 2, true}}
}

// TestWeibullLadderCoversDistanceK is the definition of the local-sensitivity
// interval checked empirically: for datasets D' at distance k from D (k
// records replaced, adversarially or at random) the MLE of D' lies in
// S^k(D). This is what makes the bound functions of section IV-A1 valid.
func TestWeibullLadderCoversDistanceK(t *testing.T) {
	t.Parallel()
	src := dp.NewSeededSource(11)
	for _, tc := range kidneyLung(t) {
		t.Run(tc.name, func(t *testing.T) {
			cfg := WeibullConfig{TimeMax: tc.tmax, Rungs: 40}.WithDefaults()
			lad := wbLadder(t, tc.r.compress(), cfg)
			// Order records by time so "replace the k largest/smallest" is easy.
			idx := make([]int, len(tc.r.time))
			for i := range idx {
				idx[i] = i
			}
			slices.SortFunc(idx, func(a, b int) int { return int(tc.r.time[a] - tc.r.time[b]) })
			checked := 0
			for _, k := range []int{1, 2, 3, 5, 8, 13, 20, 40} {
				var variants []wbRecords
				for _, x := range extremeRecords(tc.tmax) {
					for _, which := range []string{"smallest", "largest", "events", "random"} {
						v := tc.r.clone()
						var victims []int
						switch which {
						case "smallest":
							victims = idx[:k]
						case "largest":
							victims = idx[len(idx)-k:]
						case "events":
							for _, i := range idx {
								if len(victims) < k && v.event[i] {
									victims = append(victims, i)
								}
							}
						case "random":
							for len(victims) < k {
								i := int(dp.Uint64n(src, uint64(len(idx))))
								if !slices.Contains(victims, i) {
									victims = append(victims, i)
								}
							}
						}
						for _, i := range victims {
							v.time[i], v.event[i] = x.t, x.d
						}
						variants = append(variants, v)
					}
				}
				for _, v := range variants {
					d, err := normaliseWeibull(v.compress(), cfg)
					if err != nil {
						t.Fatal(err)
					}
					m, err := survival.FitWeibull(d.compressed())
					if err != nil || m.Shape > cfg.Gamma {
						continue // no MLE in [0, gamma]: nothing to cover
					}
					if m.Shape < lad.Lower[k] || m.Shape > lad.Upper[k] {
						t.Fatalf("k=%d: MLE of a distance-%d dataset %v outside S^k = [%v, %v]", k, k, m.Shape, lad.Lower[k], lad.Upper[k])
					}
					checked++
				}
			}
			if checked < 100 {
				t.Fatalf("only %d neighbours checked", checked)
			}
		})
	}
}

// TestWeibullBoundsLemma1 checks Lemma 1 of paper 002 for the bound
// differences as implemented, pointwise on a grid of p: for neighbours D, D'
// (one record replaced), hA_{k+1}(D') >= hA_k(D) and hB_{k+1}(D') <= hB_k(D).
// Together with the monotone root rule this is the ladder constraint. The
// replacements include t = exp(-1/p) (where t^p ln t is smallest), which
// breaks the paper's uncapped f_U when its numerator is positive.
func TestWeibullBoundsLemma1(t *testing.T) {
	t.Parallel()
	src := dp.NewSeededSource(21)
	for _, tc := range kidneyLung(t) {
		t.Run(tc.name, func(t *testing.T) {
			cfg := WeibullConfig{TimeMax: tc.tmax, Rungs: 150}.WithDefaults()
			e := wbEngine(t, tc.r, cfg)
			ps := shapeGrid(cfg.Gamma, 1.15)
			repl := extremeRecords(tc.tmax)
			for _, p := range []float64{0.3, 1, 3} {
				repl = append(repl, struct {
					t float64
					d bool
				}{tc.tmax * math.Exp(-1/p), false}, struct {
					t float64
					d bool
				}{tc.tmax * math.Exp(-1/p), true})
			}
			pairs := 0
			for w := 0; w < 10; w++ {
				i := int(dp.Uint64n(src, uint64(len(tc.r.time))))
				if w == 0 { // the record with the largest time
					for j := range tc.r.time {
						if tc.r.time[j] > tc.r.time[i] {
							i = j
						}
					}
				}
				for _, x := range repl {
					v := tc.r.clone()
					v.time[i], v.event[i] = x.t, x.d
					if msg := lemma1Violation(e, wbEngine(t, v, cfg), ps); msg != "" {
						t.Fatalf("record %d -> %+v, %s", i, x, msg)
					}
					pairs++
				}
			}
			if pairs < 50 {
				t.Fatalf("only %d pairs", pairs)
			}
		})
	}
}

// wbLogZ returns ln sum_k length_k exp(-k eps/4).
func wbLogZ(l WeibullLadder, eps float64) float64 {
	lw := l.LogWeights(eps)
	mx := slices.Max(lw)
	s := 0.0
	for _, v := range lw {
		s += math.Exp(v - mx)
	}
	return mx + math.Log(s)
}

// maxLogDensityRatio enumerates every segment between the interval ends of
// two ladders and returns the largest |ln f_D(p) - ln f_D'(p)| of the LSP
// output densities, and the largest rung difference |k_D(p) - k_D'(p)|.
func maxLogDensityRatio(a, b WeibullLadder, eps float64) (float64, int) {
	pts := []float64{0, a.Gamma}
	pts = append(pts, a.Lower[1:]...)
	pts = append(pts, a.Upper[1:]...)
	pts = append(pts, b.Lower[1:]...)
	pts = append(pts, b.Upper[1:]...)
	slices.Sort(pts)
	pts = slices.Compact(pts)
	za, zb := wbLogZ(a, eps), wbLogZ(b, eps)
	worst, worstK := 0.0, 0
	for i := 1; i < len(pts); i++ {
		if !(pts[i] > pts[i-1]) {
			continue
		}
		m := pts[i-1] + (pts[i]-pts[i-1])/2
		ka, kb := a.Level(m), b.Level(m)
		lr := -float64(ka-kb)*eps/4 - za + zb
		worst = max(worst, math.Abs(lr))
		worstK = max(worstK, ka-kb, kb-ka)
	}
	return worst, worstK
}

// TestWeibullLSPWorstCaseRatio: for neighbouring datasets (one record
// replaced, including the most extreme replacements), the rung levels differ
// by at most one everywhere and the LSP output density ratio, enumerated over
// all rung segments, is at most exp(epsilon/2).
func TestWeibullLSPWorstCaseRatio(t *testing.T) {
	t.Parallel()
	kid, kidMax := loadWB(t, "kidney")
	lung, lungMax := loadWB(t, "lung")
	fl, flMax := loadWB(t, "flchain")
	src := dp.NewSeededSource(5)
	tests := []struct {
		name string
		r    wbRecords
		tmax float64
		K    int
		who  int // records to try replacing (sampled)
	}{
		{"kidney", kid, kidMax, 100, 12},
		{"lung", lung, lungMax, 200, 8},
		{"flchain cohort 1", fl.subset("1"), flMax, 150, 4},
	}
	epsilons := []float64{0.05, 0.5, 2, 8}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := WeibullConfig{TimeMax: tc.tmax, Rungs: tc.K}.WithDefaults()
			base := wbLadder(t, tc.r.compress(), cfg)
			pairs := 0
			worstSeen := 0.0
			for w := 0; w < tc.who; w++ {
				i := int(dp.Uint64n(src, uint64(len(tc.r.time))))
				for _, x := range extremeRecords(tc.tmax) {
					v := tc.r.clone()
					v.time[i], v.event[i] = x.t, x.d
					nb := wbLadder(t, v.compress(), cfg)
					for _, eps := range epsilons {
						lr, dk := maxLogDensityRatio(base, nb, eps)
						if dk > 1 {
							t.Fatalf("record %d -> %+v: rung levels differ by %d", i, x, dk)
						}
						if lr > eps/2+1e-9 {
							t.Fatalf("record %d -> %+v, eps %v: log density ratio %v > eps/2 = %v", i, x, eps, lr, eps/2)
						}
						worstSeen = max(worstSeen, lr/(eps/2))
					}
					pairs++
				}
			}
			t.Logf("%d neighbour pairs, worst ln-ratio / (eps/2) = %.4f", pairs, worstSeen)
		})
	}
}

// TestWeibullRungSamplingChiSquare: rung draws follow length_k exp(-k eps/4)
// (chi-square goodness of fit, seeded; false-alarm rate 1e-4 per case), and
// p is uniform within the chosen level (Kolmogorov-Smirnov against the exact
// piecewise-uniform CDF, false-alarm rate about 1e-3 per case).
func TestWeibullRungSamplingChiSquare(t *testing.T) {
	t.Parallel()
	kid, kidMax := loadWB(t, "kidney")
	cfg := WeibullConfig{TimeMax: kidMax, Rungs: 12}.WithDefaults()
	lad := wbLadder(t, kid.compress(), cfg)
	const draws = 40000
	for _, tc := range []struct {
		eps  float64
		seed uint64
	}{{0.3, 1}, {2, 2}, {6, 3}} {
		t.Run(strconv.FormatFloat(tc.eps, 'g', -1, 64), func(t *testing.T) {
			src := dp.NewSeededSource(tc.seed)
			probs := lad.RungProbabilities(tc.eps)
			obs := make([]float64, len(probs))
			ps := make([]float64, draws)
			for i := range ps {
				p, err := lad.Sample(src, tc.eps)
				if err != nil {
					t.Fatal(err)
				}
				ps[i] = p
				obs[lad.Level(p)]++
			}
			// Chi-square, pooling cells with expected count < 5 into one.
			exp := make([]float64, len(probs))
			for k, p := range probs {
				exp[k] = p * draws
				if p == 0 && obs[k] > 0 {
					t.Fatalf("level %d has probability 0 but was drawn %v times", k, obs[k])
				}
			}
			chi, df := stattest.PooledChiSquare(obs, exp)
			pval := 1 - distuv.ChiSquared{K: float64(df)}.CDF(chi)
			if pval < 1e-4 {
				t.Fatalf("chi-square %v on %d df, p = %v", chi, df, pval)
			}
			// KS against the exact CDF of the LSP output.
			cdf := func(x float64) float64 {
				lens := lad.LevelLengths()
				s := 0.0
				for k := 1; k < len(lens); k++ {
					if lens[k] == 0 {
						continue
					}
					dens := probs[k] / lens[k]
					// measure of level k below x
					var m float64
					if k == 1 || lad.Lower[k-1] > lad.Upper[k-1] {
						m = clamp01(x, lad.Lower[k], lad.Upper[k])
					} else {
						m = clamp01(x, lad.Lower[k], lad.Lower[k-1]) + clamp01(x, lad.Upper[k-1], lad.Upper[k])
					}
					s += dens * m
				}
				return s
			}
			dmax := stattest.KS(ps, cdf)
			if crit := stattest.KSCritical(draws, 1e-3); dmax > crit {
				t.Fatalf("KS distance %v > %v", dmax, crit)
			}
			t.Logf("chi-square %.2f on %d df (p = %.3f), KS %.4f", chi, df, pval, dmax)
		})
	}
}

// clamp01 returns the length of [a, b] below x.
func clamp01(x, a, b float64) float64 { return max(0, min(x, b)-a) }

// TestWeibullLSPLargeEpsilon: with a huge budget LSP+TLL returns (almost) the
// MLE: p inside rung 1 and lambda within 0.5%.
func TestWeibullLSPLargeEpsilon(t *testing.T) {
	t.Parallel()
	fl, flMax := loadWB(t, "flchain")
	lung, lungMax := loadWB(t, "lung")
	for _, tc := range []struct {
		name string
		r    wbRecords
		tmax float64
	}{{"flchain", fl, flMax}, {"lung", lung, lungMax}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := WeibullConfig{Epsilon: 1e5, TimeMax: tc.tmax}
			ref, err := FitWeibull(nil, tc.r.compress(), WeibullConfig{Epsilon: math.Inf(1), TimeMax: tc.tmax}, "")
			if err != nil {
				t.Fatal(err)
			}
			lad := wbLadder(t, tc.r.compress(), cfg)
			d, err := normaliseWeibull(tc.r.compress(), cfg.WithDefaults())
			if err != nil {
				t.Fatal(err)
			}
			src := dp.NewSeededSource(3)
			for i := 0; i < 20; i++ {
				var f WeibullFit
				if i == 0 { // the public entry point once, the precomputed ladder after
					f, err = FitWeibullLSP(src, tc.r.compress(), cfg)
				} else {
					f, err = weibullFitLSP(src, d, lad, cfg.WithDefaults())
				}
				if err != nil {
					t.Fatal(err)
				}
				if f.Shape < lad.Lower[1] || f.Shape > lad.Upper[1] {
					t.Fatalf("shape %v outside rung 1 [%v, %v]", f.Shape, lad.Lower[1], lad.Upper[1])
				}
				if e := math.Abs(f.Scale-ref.Scale) / ref.Scale; e > 5e-3 {
					t.Fatalf("scale %v vs MLE %v (rel %v)", f.Scale, ref.Scale, e)
				}
				if math.Abs(f.N-ref.N) > 0.01 {
					t.Fatalf("noisy event count %v vs %v", f.N, ref.N)
				}
				if f.Method != WeibullMethodLSP || f.Guarantee != "pure-dp" || f.Neighbouring != WeibullNeighbouringAddRemove || f.Epsilon != 1e5 {
					t.Fatalf("metadata %+v", f)
				}
				for _, k := range []string{"omega", "gamma", "rungs", "time_max"} {
					if _, ok := f.Params[k]; !ok {
						t.Fatalf("params lack %q: %v", k, f.Params)
					}
				}
			}
		})
	}
}

// TestWeibullTLLNoiseScale: delta and tau carry independent Laplace noise
// of scale 4/epsilon: the mean absolute deviation is 4/epsilon within 4%
// (standard error 0.7% at 20000 draws, false-alarm rate < 1e-7) and the mean
// is 0 within 0.05 * 4/epsilon (5 standard errors).
func TestWeibullTLLNoiseScale(t *testing.T) {
	t.Parallel()
	lung, lungMax := loadWB(t, "lung")
	cfg := WeibullConfig{TimeMax: lungMax}.WithDefaults()
	d, err := normaliseWeibull(lung.compress(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	const draws = 20000
	for _, tc := range []struct{ eps, p float64 }{{0.4, 1.3}, {4, 0.7}} {
		src := dp.NewSeededSource(uint64(tc.eps * 100))
		b := 4 / tc.eps
		exactTau := d.sumPow(tc.p)
		var sd, st, ad, at float64
		for i := 0; i < draws; i++ {
			delta, tau, scale, err := weibullTLL(src, d, tc.p, tc.eps, cfg.Omega)
			if err != nil {
				t.Fatal(err)
			}
			if !(scale > 0) || math.IsInf(scale, 0) {
				t.Fatalf("scale %v", scale)
			}
			sd += delta - d.e
			st += tau - exactTau
			ad += math.Abs(delta - d.e)
			at += math.Abs(tau - exactTau)
		}
		for name, v := range map[string]float64{"delta": ad / draws, "tau": at / draws} {
			if math.Abs(v/b-1) > 0.04 {
				t.Errorf("eps %v: mean |noise| of %s = %v, want %v", tc.eps, name, v, b)
			}
		}
		for name, v := range map[string]float64{"delta": sd / draws, "tau": st / draws} {
			if math.Abs(v) > 0.05*b {
				t.Errorf("eps %v: mean noise of %s = %v", tc.eps, name, v)
			}
		}
	}
	// Post-processing floors.
	if got := weibullTLLScale(-5, -5, 2, 6); got != math.Exp((-12-0)/2.0) {
		t.Errorf("floored scale %v", got)
	}
	if got := weibullTLLScale(10, 1e6, 0, 6); math.IsInf(got, 0) || math.IsNaN(got) {
		t.Errorf("p = 0 gave scale %v", got)
	}
}

// flchainMLE is flchain's sample (records, compressed, time bound) and
// FitWeibull's non-private fit of it (the clamped MLE) with method.
func flchainMLE(t *testing.T, method string) (wbRecords, survival.Compressed, float64, WeibullFit) {
	t.Helper()
	fl, flMax := loadWB(t, "flchain")
	c := fl.compress()
	mle, err := FitWeibull(nil, c, WeibullConfig{Epsilon: math.Inf(1), TimeMax: flMax}, method)
	if err != nil {
		t.Fatal(err)
	}
	return fl, c, flMax, mle
}

// TestWeibullLaplaceBaseline: with a huge budget the baseline returns the
// clamped MLE; at a moderate budget its shape noise has mean absolute value
// 2 gamma / epsilon (sensitivity gamma, epsilon/2), within 5%.
func TestWeibullLaplaceBaseline(t *testing.T) {
	t.Parallel()
	_, c, flMax, ref := flchainMLE(t, WeibullMethodLaplace)
	src := dp.NewSeededSource(8)
	f, err := FitWeibull(src, c, WeibullConfig{Epsilon: 1e7, TimeMax: flMax}, WeibullMethodLaplace)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(f.Shape-ref.Shape) > 1e-4 || math.Abs(f.Scale-ref.Scale) > 1e-4 || f.Method != "laplace" {
		t.Fatalf("laplace at huge epsilon: %+v vs MLE %+v", f, ref)
	}
	cfg := WeibullConfig{Epsilon: 400, TimeMax: flMax}.WithDefaults()
	const draws = 10000
	sum := 0.0
	for i := 0; i < draws; i++ {
		g, err := weibullRelease(src, 5, 5, cfg.Gamma, cfg.ScaleBound, cfg, WeibullMethodLaplace, 1)
		if err != nil {
			t.Fatal(err)
		}
		sum += math.Abs(g.Shape - 5)
	}
	if want := 2 * cfg.Gamma / cfg.Epsilon; math.Abs(sum/draws/want-1) > 0.05 {
		t.Fatalf("mean |noise| %v, want %v", sum/draws, want)
	}
	// Tiny budget: outputs stay in the public boxes.
	for i := 0; i < 200; i++ {
		g, err := FitWeibullLaplace(src, c, WeibullConfig{Epsilon: 0.01, TimeMax: flMax})
		if err != nil {
			t.Fatal(err)
		}
		if g.Shape < 0 || g.Shape > 10 || g.Scale < 0 || g.Scale > 10 {
			t.Fatalf("out of box: %+v", g)
		}
	}
}

// TestWeibullSAABaseline: blocks of about 500 records; with a huge budget
// the release is the mean of the block MLEs, which is close to the full
// MLE; the block assignment comes from the injected source (same seed, same
// answer; different seed, different blocks).
func TestWeibullSAABaseline(t *testing.T) {
	t.Parallel()
	fl, c, flMax, ref := flchainMLE(t, "")
	cfg := WeibullConfig{Epsilon: 1e7, TimeMax: flMax}
	a, err := FitWeibullSAA(dp.NewSeededSource(1), c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := FitWeibullSAA(dp.NewSeededSource(1), c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	other, err := FitWeibullSAA(dp.NewSeededSource(2), c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a.Shape != b.Shape || a.Scale != b.Scale {
		t.Fatalf("same seed, different answers: %+v %+v", a, b)
	}
	if a.Shape == other.Shape {
		t.Fatalf("different seeds gave the same block means")
	}
	if want := float64(len(fl.time) / 500); a.Params["blocks"] != want {
		t.Fatalf("blocks %v, want %v", a.Params["blocks"], want)
	}
	if math.Abs(a.Shape-ref.Shape) > 0.05 || math.Abs(a.Scale-ref.Scale)/ref.Scale > 0.1 {
		t.Fatalf("saa %v/%v far from MLE %v/%v", a.Shape, a.Scale, ref.Shape, ref.Scale)
	}
	// Small sample: one block, equal to the clamped MLE.
	lung, lungMax := loadWB(t, "lung")
	s, err := FitWeibullSAA(dp.NewSeededSource(3), lung.compress(), WeibullConfig{Epsilon: 1e7, TimeMax: lungMax})
	if err != nil {
		t.Fatal(err)
	}
	lref, _ := FitWeibull(nil, lung.compress(), WeibullConfig{Epsilon: math.Inf(1), TimeMax: lungMax}, "")
	if s.Params["blocks"] != 1 || math.Abs(s.Shape-lref.Shape) > 1e-4 {
		t.Fatalf("one-block saa %+v vs %+v", s, lref)
	}
}

// TestWeibullFitDispatchAndErrors covers the non-private path, the method
// switch and bad input.
func TestWeibullFitDispatchAndErrors(t *testing.T) {
	t.Parallel()
	_, c, flMax, mle := flchainMLE(t, "lsp")
	// R survreg on the clamped flchain sample (survival/testdata/weibull_golden.json).
	var g struct {
		Cases []struct {
			Dataset, Subset, Variant string
			Shape, Scale             float64
		} `json:"cases"`
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "survival", "testdata", "weibull_golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, gc := range g.Cases {
		if gc.Dataset == "flchain" && gc.Subset == "all" && gc.Variant == "clamped" {
			found = true
			if math.Abs(mle.Shape/gc.Shape-1) > 1e-9 || math.Abs(mle.Scale/gc.Scale-1) > 1e-9 {
				t.Fatalf("mle %v/%v, R %v/%v", mle.Shape, mle.Scale, gc.Shape, gc.Scale)
			}
		}
	}
	if !found || mle.Method != "mle" || mle.Guarantee != "none (non-private)" {
		t.Fatalf("mle fit %+v (golden found %v)", mle, found)
	}
	src := dp.NewSeededSource(1)
	for _, m := range []string{"lsp", "laplace", "saa"} {
		f, err := FitWeibull(src, c, WeibullConfig{Epsilon: 1, TimeMax: flMax}, m)
		if err != nil || f.Method != m || f.Guarantee != "pure-dp" {
			t.Fatalf("method %s: %+v, %v", m, f, err)
		}
	}
	bad := []struct {
		name   string
		c      survival.Compressed
		cfg    WeibullConfig
		method string
	}{
		{"unknown method", c, WeibullConfig{Epsilon: 1, TimeMax: flMax}, "bayes"},
		{"no time max", c, WeibullConfig{Epsilon: 1}, "lsp"},
		{"negative epsilon", c, WeibullConfig{Epsilon: -1, TimeMax: flMax}, "saa"},
		{"broken sample", survival.Compressed{Time: []float64{2, 1}, Events: []float64{0, 0}, Count: []float64{1, 1}}, WeibullConfig{Epsilon: 1, TimeMax: 10}, "lsp"},
		{"events > count", survival.Compressed{Time: []float64{1}, Events: []float64{2}, Count: []float64{1}}, WeibullConfig{Epsilon: 1, TimeMax: 10}, "laplace"},
		{"mle without events", survival.Compress([]float64{1, 2}, []bool{false, false}), WeibullConfig{Epsilon: math.Inf(1), TimeMax: 10}, ""},
	}
	for _, tc := range bad {
		if _, err := FitWeibull(src, tc.c, tc.cfg, tc.method); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if _, err := FitWeibullLSP(src, c, WeibullConfig{Epsilon: math.Inf(1), TimeMax: flMax}); err == nil {
		t.Error("FitWeibullLSP accepted epsilon = inf")
	}
}

// TestWeibullNoEvents: without events every rung is [0, gamma]; LSP still
// releases (p uniform on [0, gamma]); time values beyond the public bounds
// are clamped.
func TestWeibullNoEvents(t *testing.T) {
	t.Parallel()
	c := survival.Compress([]float64{-3, 0, 5, 50, 500}, []bool{false, false, false, false, false})
	cfg := WeibullConfig{Epsilon: 1, TimeMax: 100, Rungs: 20}
	lad := wbLadder(t, c, cfg)
	for k := 1; k <= 21; k++ {
		if lad.Lower[k] != 0 || lad.Upper[k] != 10 {
			t.Fatalf("rung %d = [%v, %v]", k, lad.Lower[k], lad.Upper[k])
		}
	}
	src := dp.NewSeededSource(4)
	for i := 0; i < 50; i++ {
		f, err := FitWeibullLSP(src, c, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if f.Shape < 0 || f.Shape > 10 || !(f.Scale >= 0) || math.IsInf(f.Scale, 0) {
			t.Fatalf("fit %+v", f)
		}
	}
	d, err := normaliseWeibull(c, WeibullConfig{TimeMax: 100}.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	if d.t[0] != math.Exp(-6) || d.t[len(d.t)-1] != 1 || d.n != 5 || len(d.t) != 4 || d.count[0] != 2 {
		t.Fatalf("normalised %+v", d)
	}
}

// TestPreparedReleaseMatchesFit: a release from Prepare is FitWeibull's
// release (same mechanism, same draws from the same seed) for every
// private method; Release refuses a non-finite epsilon and an unknown
// method.
func TestPreparedReleaseMatchesFit(t *testing.T) {
	t.Parallel()
	fl, flMax := loadWB(t, "flchain")
	cfg := WeibullConfig{TimeMax: flMax}
	prep, err := Prepare(fl.compress(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{WeibullMethodLSP, WeibullMethodLaplace, WeibullMethodSAA} {
		c := cfg
		c.Epsilon = 0.7
		want, err := FitWeibull(dp.NewSeededSource(11), fl.compress(), c, m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := prep.Release(dp.NewSeededSource(11), m, 0.7)
		if err != nil {
			t.Fatal(err)
		}
		if got.Shape != want.Shape || got.Scale != want.Scale || got.Method != want.Method || got.Epsilon != want.Epsilon {
			t.Errorf("%s: prepared release %v/%v (%s, eps %v), fit %v/%v (%s, eps %v)", m, got.Shape, got.Scale, got.Method, got.Epsilon, want.Shape, want.Scale, want.Method, want.Epsilon)
		}
	}
	if _, err := prep.Release(dp.NewSeededSource(1), WeibullMethodLSP, math.Inf(1)); err == nil {
		t.Error("epsilon +Inf accepted")
	}
	if _, err := prep.Release(dp.NewSeededSource(1), "mle", 1); err == nil {
		t.Error("unknown method accepted")
	}
}
