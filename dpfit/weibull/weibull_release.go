package weibull

import (
	"fmt"
	"math"
	"slices"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/survival"
)

// Releasing a Weibull fit: TLL's scale given the shape, the LSP, Laplace
// and subsample-and-aggregate mechanisms, and the noise release they share.

// tll releases delta = E + Lap(4/eps) and tau = sum t^p + Lap(4/eps) (each
// with epsilon/4) and returns them with the post-processed scale.
func weibullTLL(src dp.Source, d weibullData, p, epsilon, omega float64) (delta, tau, scale float64, err error) {
	delta, err = dp.LaplaceMechanism(src, d.e, 1, epsilon/4)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("tll event count: %w", err)
	}
	tau, err = dp.LaplaceMechanism(src, d.sumPow(p), 1, epsilon/4)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("tll sum of t^p: %w", err)
	}
	return delta, tau, weibullTLLScale(delta, tau, p, omega), nil
}

// weibullTLLScale is the post-processing lambda = (tau/delta)^(1/p) with
// delta >= 1, tau >= exp(-omega p), p >= 1e-12 and |ln lambda| <= 700.
func weibullTLLScale(delta, tau, p, omega float64) float64 {
	p = max(p, 1e-12)
	delta = max(delta, 1)
	tau = max(tau, math.Exp(-omega*p))
	ll := (math.Log(tau) - math.Log(delta)) / p
	return math.Exp(min(max(ll, -700), 700))
}

// privateInput is a private release's configuration (defaults filled in,
// validated, a finite epsilon) and its normalised data; errors name op.
func privateInput(c survival.Compressed, cfg WeibullConfig, op string) (WeibullConfig, weibullData, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return cfg, weibullData{}, fmt.Errorf("%s: %w", op, err)
	}
	if math.IsInf(cfg.Epsilon, 1) {
		return cfg, weibullData{}, fmt.Errorf("%s: epsilon must be finite (use FitWeibull for the non-private fit)", op)
	}
	d, err := normaliseWeibull(c, cfg)
	if err != nil {
		return cfg, weibullData{}, fmt.Errorf("%s: %w", op, err)
	}
	return cfg, d, nil
}

// FitWeibullLSP releases the Weibull shape by LSP (epsilon/2) and the scale
// by TLL (epsilon/4 + epsilon/4): epsilon-DP under add/remove-one (and so
// 2 epsilon under replace-one).
func FitWeibullLSP(src dp.Source, c survival.Compressed, cfg WeibullConfig) (WeibullFit, error) {
	cfg, d, err := privateInput(c, cfg, "weibull lsp")
	if err != nil {
		return WeibullFit{}, err
	}
	return weibullFitLSP(src, d, weibullComputeLadder(d, cfg), cfg)
}

func weibullFitLSP(src dp.Source, d weibullData, lad WeibullLadder, cfg WeibullConfig) (WeibullFit, error) {
	p, err := lad.Sample(src, cfg.Epsilon)
	if err != nil {
		return WeibullFit{}, fmt.Errorf("weibull lsp: %w", err)
	}
	delta, _, scale, err := weibullTLL(src, d, p, cfg.Epsilon, cfg.Omega)
	if err != nil {
		return WeibullFit{}, fmt.Errorf("weibull lsp: %w", err)
	}
	params := cfg.params()
	params["shape_grid"] = lad.Grid
	params["tll_grid"] = dp.LaplaceGrid(4 / cfg.Epsilon) // dp.LaplaceMechanism's grid at sensitivity 1, epsilon/4
	return WeibullFit{
		Shape: p, Scale: scale, Method: WeibullMethodLSP, Epsilon: cfg.Epsilon,
		Guarantee: weibullGuaranteePureDP, Neighbouring: WeibullNeighbouringAddRemove,
		N: delta, Params: params,
	}, nil
}

// weibullClampedMLE returns the MLE clamped into [0, gamma] x [0, scaleBound], or
// the midpoints when the MLE does not exist (no events, no finite maximum).
// Any fixed fallback keeps the sensitivity bound.
func weibullClampedMLE(c survival.Compressed, gamma, scaleBound float64) (p, lambda float64) {
	m, err := survival.FitWeibull(c)
	if err != nil || math.IsNaN(m.Shape) || math.IsNaN(m.Scale) {
		return gamma / 2, scaleBound / 2
	}
	return min(max(m.Shape, 0), gamma), min(max(m.Scale, 0), scaleBound)
}

// FitWeibullLaplace is the Laplace baseline: the MLE on the normalised data,
// clamped into [0, gamma] x [0, scale bound], plus Laplace noise with
// sensitivity gamma (resp. scale bound) and epsilon/2 each. Outputs are
// clamped back into the boxes (post-processing).
func FitWeibullLaplace(src dp.Source, c survival.Compressed, cfg WeibullConfig) (WeibullFit, error) {
	cfg, d, err := privateInput(c, cfg, "weibull laplace")
	if err != nil {
		return WeibullFit{}, err
	}
	p, l := weibullClampedMLE(d.compressed(), cfg.Gamma, cfg.ScaleBound)
	return weibullRelease(src, p, l, cfg.Gamma, cfg.ScaleBound, cfg, WeibullMethodLaplace, 1)
}

func weibullRelease(src dp.Source, p, l, sensP, sensL float64, cfg WeibullConfig, method string, blocks int) (WeibullFit, error) {
	np, err := dp.LaplaceMechanism(src, p, sensP, cfg.Epsilon/2)
	if err != nil {
		return WeibullFit{}, fmt.Errorf("weibull %s shape: %w", method, err)
	}
	nl, err := dp.LaplaceMechanism(src, l, sensL, cfg.Epsilon/2)
	if err != nil {
		return WeibullFit{}, fmt.Errorf("weibull %s scale: %w", method, err)
	}
	params := cfg.params()
	params["scale_bound"] = cfg.ScaleBound
	params["blocks"] = float64(blocks)
	params["shape_grid"] = dp.LaplaceGrid(sensP / (cfg.Epsilon / 2)) // dp.LaplaceMechanism's grids
	params["scale_grid"] = dp.LaplaceGrid(sensL / (cfg.Epsilon / 2))
	return WeibullFit{
		Shape:        min(max(np, 0), cfg.Gamma),
		Scale:        min(max(nl, 0), cfg.ScaleBound),
		Method:       method,
		Epsilon:      cfg.Epsilon,
		Guarantee:    weibullGuaranteePureDP,
		Neighbouring: weibullNeighbouringOf(method),
		Params:       params,
	}, nil
}

// weibullNeighbouringOf is the relation of a baseline release: the Laplace
// baseline's sensitivity (the clamping box) holds for any two data sets, so
// under add/remove-one; SAA's block count depends on n.
func weibullNeighbouringOf(method string) string {
	if method == WeibullMethodSAA {
		return WeibullNeighbouringReplace
	}
	return WeibullNeighbouringAddRemove
}

// weibullSAABlocks is the number of sample-and-aggregate blocks for n records:
// floor(n / blockSize), at least 1. n is equal on replace-one neighbours.
func weibullSAABlocks(n float64, blockSize int) int {
	return max(1, int(n/float64(blockSize)))
}

// FitWeibullSAA is the sample-and-aggregate baseline: the records are
// shuffled with src and dealt into B = max(1, floor(n/BlockSize)) blocks of
// (almost) equal size; each block's MLE is clamped into [0, gamma] x
// [0, scale bound] (midpoints when a block has none); the block means get
// Laplace noise with sensitivity gamma/B (resp. scale bound/B) and epsilon/2
// each. A replaced record changes one block, so one clamped estimate.
func FitWeibullSAA(src dp.Source, c survival.Compressed, cfg WeibullConfig) (WeibullFit, error) {
	cfg, d, err := privateInput(c, cfg, "weibull saa")
	if err != nil {
		return WeibullFit{}, err
	}
	if d.n > 1<<31-1 {
		return WeibullFit{}, fmt.Errorf("weibull saa: %v records is too many", d.n)
	}
	B := weibullSAABlocks(d.n, cfg.BlockSize)
	mp, ml := weibullSAAMeans(src, d, B, cfg)
	return weibullRelease(src, mp, ml, cfg.Gamma/float64(B), cfg.ScaleBound/float64(B), cfg, WeibullMethodSAA, B)
}

// weibullSAAMeans returns the means of the clamped block estimates.
func weibullSAAMeans(src dp.Source, d weibullData, B int, cfg WeibullConfig) (mp, ml float64) {
	n := int(d.n)
	// Record r is (group, event); events first within a group.
	rec := make([]int32, 0, n) // group index*2 + event flag
	for g := range d.t {
		ne := int(d.events[g])
		for i := 0; i < int(d.count[g]); i++ {
			flag := int32(0)
			if i < ne {
				flag = 1
			}
			rec = append(rec, int32(g)*2+flag)
		}
	}
	for i := len(rec) - 1; i > 0; i-- { // Fisher–Yates with the injected source
		j := int(dp.Uint64n(src, uint64(i+1)))
		rec[i], rec[j] = rec[j], rec[i]
	}
	var bc survival.Compressed
	for b := 0; b < B; b++ {
		blk := rec[b*n/B : (b+1)*n/B]
		slices.Sort(blk)
		bc.Time, bc.Events, bc.Count = bc.Time[:0], bc.Events[:0], bc.Count[:0]
		for i, v := range blk {
			g := v / 2
			if i == 0 || blk[i-1]/2 != g {
				bc.Time = append(bc.Time, d.t[g])
				bc.Events = append(bc.Events, 0)
				bc.Count = append(bc.Count, 0)
			}
			bc.Count[len(bc.Count)-1]++
			bc.Events[len(bc.Events)-1] += float64(v & 1)
		}
		p, l := weibullClampedMLE(bc, cfg.Gamma, cfg.ScaleBound)
		mp += p
		ml += l
	}
	return mp / float64(B), ml / float64(B)
}
