package regression

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
)

// naiveClippedSums is clippedSums written per person-period with no
// rewriting (no product form, no prefix sums, one worker): the reference
// for the released sums.
func naiveClippedSums(m *discreteModel, f []float64, cl [nBlocks]float64) newtonSums {
	e, p := m.e, m.p
	d := e + p
	score := make([]float64, d)
	hess := make([]float64, d*d)
	for i := 0; i < m.n; i++ {
		xi := m.x[i*p : (i+1)*p]
		ga := make([]float64, e)
		gb := make([]float64, p)
		haa := make([]float64, e*e)
		hab := make([]float64, e*p)
		hbb := make([]float64, p*p)
		for s := 0; s < int(m.s[i]); s++ {
			row := m.basis[s*e : (s+1)*e]
			z := 0.0
			for j, b := range row {
				z += f[j] * b
			}
			for j, xv := range xi {
				z += f[e+j] * xv
			}
			_, g, h := m.link.pair(z, s == int(m.s[i])-1 && m.event[i])
			for a, ra := range row {
				ga[a] += g * ra
				for b, rb := range row {
					haa[a*e+b] += h * ra * rb
				}
				for j, xv := range xi {
					hab[a*p+j] += h * ra * xv
				}
			}
			for j, xv := range xi {
				gb[j] += g * xv
				for k, xk := range xi {
					hbb[j*p+k] += h * xv * xk
				}
			}
		}
		var tra, trb float64
		for a := range e {
			tra += haa[a*e+a]
		}
		for j := range p {
			trb += hbb[j*p+j]
		}
		ca := clipFactor(math.Sqrt(sqNorm(ga)), cl[blkScoreA])
		cb := clipFactor(math.Sqrt(sqNorm(gb)), cl[blkScoreB])
		caa := clipFactor(tra, cl[blkHessAA])
		cbb := clipFactor(trb, cl[blkHessBB])
		cab := math.Min(clipFactor(math.Sqrt(sqNorm(hab)), cl[blkHessAB]), math.Sqrt(caa*cbb))
		for a := range e {
			score[a] += ca * ga[a]
			for b := range e {
				hess[a*d+b] += caa * haa[a*e+b]
			}
			for j := range p {
				hess[a*d+e+j] += cab * hab[a*p+j]
			}
		}
		for j := range p {
			score[e+j] += cb * gb[j]
			for k := range p {
				hess[(e+j)*d+e+k] += cbb * hbb[j*p+k]
			}
		}
	}
	var out newtonSums
	out[blkScoreA] = score[:e]
	out[blkScoreB] = score[e:]
	aa := make([]float64, e*e)
	bb := make([]float64, p*p)
	ab := make([]float64, e*p)
	for a := range e {
		copy(aa[a*e:(a+1)*e], hess[a*d:a*d+e])
		copy(ab[a*p:(a+1)*p], hess[a*d+e:a*d+d])
	}
	for j := range p {
		copy(bb[j*p:(j+1)*p], hess[(e+j)*d+e:(e+j+1)*d])
	}
	out[blkHessAA] = upperOf(aa, e)
	out[blkHessAB] = ab
	out[blkHessBB] = upperOf(bb, p)
	return out
}

// smallNewtonProblem returns a prepared problem of n records on q
// intervals (covariates in the unit ball) for brute force.
func smallNewtonProblem(t *testing.T, rng *rand.Rand, n, q int, link Link) *discreteModel {
	t.Helper()
	d := Data{Time: make([]float64, n), Event: make([]bool, n), X: make([][]float64, n)}
	for i := range n {
		d.Time[i] = float64(1+rng.IntN(q)) / float64(q)
		d.Event[i] = rng.IntN(2) == 0
		d.X[i] = []float64{rng.Float64()*1.4 - 0.7, rng.Float64()*1.4 - 0.7}
	}
	pr, err := prepareDiscrete(d, &DiscreteOptions{Method: MethodNewton, Link: link, TimeMax: 1, Intervals: q})
	if err != nil {
		t.Fatal(err)
	}
	return pr.m
}

// newtonPoints are the points the sensitivities are checked at: the
// start, moderate, and extreme (large hazards, large coefficients).
var newtonPoints = [][]float64{
	{-3, 0, 0, 0, 0},
	{-1, 0.5, -0.3, 1, -1},
	{2, -3, 4, 5, -5},
	{-12, 6, -8, -6, 4},
	{0.5, 1, 1, 15, 15},
}

// TestNewtonClippedSumsExact: the released sums (product form, prefix
// sums, workers) equal the per-period definition.
func TestNewtonClippedSumsExact(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 9))
	cl := NewtonOptions{}
	cl, _ = cl.resolve(30)
	for _, link := range []Link{LinkLogit, LinkCloglog, LinkProbit} {
		m := smallNewtonProblem(t, rng, 5000, 30, link)
		for _, f := range newtonPoints {
			got, want := m.clippedSums(f, cl.clips()), naiveClippedSums(m, f, cl.clips())
			for b := range nBlocks {
				for j := range want[b] {
					if math.Abs(got[b][j]-want[b][j]) > 1e-9*(1+math.Abs(want[b][j])) {
						t.Errorf("%s at %v: block %d[%d] = %v, per-period %v", link, f, b, j, got[b][j], want[b][j])
					}
				}
			}
		}
	}
}

// TestNewtonReplaceOneSensitivity brute-forces the replace-one neighbours
// of small data sets with adversarial records (first and last interval,
// event or censored, covariates at the unit sphere and the origin), at
// ordinary and extreme points, under every link: each released block moves
// by at most twice its clip in L2, the bound its noise is calibrated to;
// the start's counts move by at most 1 and q - 1. The largest move seen is
// also required to reach 0.9 clip (the clips bind, so a broken clip would
// show; the score blocks reach about 2 clip, the PSD Hessian blocks at
// most sqrt(2) clip, their difference being of two PSD matrices).
func TestNewtonReplaceOneSensitivity(t *testing.T) {
	const q = 20
	rng := rand.New(rand.NewPCG(4, 4))
	o, _ := NewtonOptions{}.resolve(q)
	cl := o.clips()
	var advS = []int{1, q / 2, q}
	var advX = [][]float64{{0, 0}, {1, 0}, {0, -1}, {-0.7071, 0.7071}, {0.6, 0.8}}
	worst := [nBlocks]float64{}
	for _, link := range []Link{LinkLogit, LinkCloglog, LinkProbit} {
		m := smallNewtonProblem(t, rng, 12, q, link)
		for _, f := range newtonPoints {
			base := m.clippedSums(f, cl)
			for i := 0; i < m.n; i += 3 {
				for _, s := range advS {
					for _, ev := range []bool{false, true} {
						for _, x := range advX {
							m2 := *m
							m2.s = append([]int32(nil), m.s...)
							m2.event = append([]bool(nil), m.event...)
							m2.x = append([]float64(nil), m.x...)
							m2.s[i], m2.event[i] = int32(s), ev
							copy(m2.x[i*m.p:], x)
							nb := m2.clippedSums(f, cl)
							for b := range nBlocks {
								var d2 float64
								for j := range base[b] {
									d2 += (base[b][j] - nb[b][j]) * (base[b][j] - nb[b][j])
								}
								dd := math.Sqrt(d2)
								worst[b] = math.Max(worst[b], dd/cl[b])
								if dd > 2*cl[b]*(1+1e-9) {
									t.Errorf("%s at %v, record %d -> (s %d, event %v, x %v): block %d moved %v > 2 x clip %v", link, f, i, s, ev, x, b, dd, cl[b])
								}
							}
							if ds := math.Abs(float64(m.s[i] - m2.s[i])); ds > q-1 {
								t.Errorf("person-periods moved by %v", ds)
							}
						}
					}
				}
			}
		}
	}
	t.Logf("largest move / clip per block: %.3f", worst)
	for b, w := range worst {
		if w < 0.9 {
			t.Errorf("block %d: largest move %.3f clip: the adversarial records never reach the clip", b, w)
		}
	}
}

// TestNewtonBudget: the releases of a fit compose to its epsilon exactly
// (sum of L1 sensitivity / scale over every release <= epsilon), each
// calibrated to twice its clip at its dimension.
func TestNewtonBudget(t *testing.T) {
	d := newtonWorld(rand.NewPCG(1, 1), 3000, LinkLogit)
	for _, eps := range []float64{0.3, 1, 7} {
		res, err := FitDiscrete(d, DiscreteOptions{Method: MethodNewton, Epsilon: eps, TimeMax: 1}, dp.NewSeededSource(2))
		if err != nil {
			t.Fatal(err)
		}
		var spent float64
		for _, b := range res.NewtonStart {
			spent += b.Noise.L1 / b.Noise.Scale
		}
		cl := res.Newton.clips()
		dims := blockDims(3, 2)
		for _, st := range res.NewtonSteps {
			for b, blk := range st.blocks() {
				n := blk.Noise
				spent += n.L1 / n.Scale
				if min := math.Sqrt(float64(dims[b])) * 2 * cl[b]; n.L1 < min || len(blk.Value) != dims[b] {
					t.Errorf("block %d: L1 %v < sqrt(dim) 2 clip = %v (len %d)", b, n.L1, min, len(blk.Value))
				}
			}
		}
		if spent > eps*(1+1e-9) || spent < eps*(1-1e-9) {
			t.Errorf("epsilon %v: releases spend %v", eps, spent)
		}
		if len(res.NewtonSteps) != DefaultNewtonSteps || res.Neighbouring != NeighbouringReplaceOne {
			t.Errorf("steps %d, neighbouring %q", len(res.NewtonSteps), res.Neighbouring)
		}
	}
}
