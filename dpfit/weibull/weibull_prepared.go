package weibull

import (
	"fmt"
	"math"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/survival"
)

// Prepared is a sample made ready for many releases (the evaluation's
// utility study draws hundreds per epsilon): normalised once, with the LSP
// ladder, the SAA block count and the clamped MLE computed once (none
// depends on epsilon). Each Release draws a fresh release of the same
// mechanism as FitWeibull's, consuming the source in the same order.
type Prepared struct {
	cfg            WeibullConfig
	d              weibullData
	lad            WeibullLadder
	blocks         int
	pClamp, lClamp float64
}

// Prepare normalises c under cfg (cfg.Epsilon is ignored: Release takes it)
// and computes what every release shares.
func Prepare(c survival.Compressed, cfg WeibullConfig) (*Prepared, error) {
	cfg = cfg.WithDefaults()
	cfg.Epsilon = 1
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("weibull prepare: %w", err)
	}
	d, err := normaliseWeibull(c, cfg)
	if err != nil {
		return nil, fmt.Errorf("weibull prepare: %w", err)
	}
	p := &Prepared{cfg: cfg, d: d, lad: weibullComputeLadder(d, cfg), blocks: weibullSAABlocks(d.n, cfg.BlockSize)}
	p.pClamp, p.lClamp = weibullClampedMLE(d.compressed(), cfg.Gamma, cfg.ScaleBound)
	return p, nil
}

// MLE is the non-private maximum-likelihood fit of the normalised, clamped
// data (shape, and scale in normalised units): the reference a utility
// study measures releases against. Its error says the sample has no finite
// MLE.
func (p *Prepared) MLE() (shape, scale float64, err error) {
	ref, err := survival.FitWeibull(p.d.compressed())
	if err != nil {
		return 0, 0, err
	}
	return ref.Shape, ref.Scale, nil
}

// Release draws one private release by method (WeibullMethodLSP,
// WeibullMethodLaplace or WeibullMethodSAA) at total epsilon (positive and
// finite).
func (p *Prepared) Release(src dp.Source, method string, epsilon float64) (WeibullFit, error) {
	if !(epsilon > 0) || math.IsInf(epsilon, 0) {
		return WeibullFit{}, fmt.Errorf("weibull release: epsilon must be positive and finite, got %v", epsilon)
	}
	ce := p.cfg
	ce.Epsilon = epsilon
	switch method {
	case WeibullMethodLSP:
		return weibullFitLSP(src, p.d, p.lad, ce)
	case WeibullMethodLaplace:
		return weibullRelease(src, p.pClamp, p.lClamp, ce.Gamma, ce.ScaleBound, ce, method, 1)
	case WeibullMethodSAA:
		B := p.blocks
		mp, ml := weibullSAAMeans(src, p.d, B, ce)
		return weibullRelease(src, mp, ml, ce.Gamma/float64(B), ce.ScaleBound/float64(B), ce, method, B)
	}
	return WeibullFit{}, fmt.Errorf("weibull release: unknown method %q", method)
}
