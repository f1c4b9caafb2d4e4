package regression

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/dpsurv/dpsurv/dp"
)

// SamplerConfig drives the pSGLD sampler core (Algorithm 4 of paper 000,
// after Li et al. 2015). The step size at step t = 1, 2, ... is
// StepScale * (StepOffset + t)^(-Tau); the preconditioner is
// G = 1 / (Lambda + sqrt(V)) with V the exponential average (weight Mu) of the
// squared per-record gradient (the oracle's output divided by GradScale).
//
// V starts at 0 as in the paper, and is divided by 1 - Mu^t (the bias
// correction of Adam) unless NoBiasCorrection is set. Without it the first
// steps use a preconditioner 1/sqrt(1 - Mu^t) times too large (10x at t = 1
// for Mu = 0.99) and throw the chain far from its start, where a
// tanh-sanitized loss is flat and the chain can stay stranded. The
// correction fades (1 - Mu^t -> 1) and does not change the stationary regime.
type SamplerConfig struct {
	Steps            int
	StepScale        float64
	StepOffset       float64
	Tau              float64
	Lambda           float64
	Mu               float64
	GradScale        float64
	NoBiasCorrection bool
	// Noise draws the Langevin noise of standard deviation sigma; nil
	// means dp.GaussianOnGrid (an exact discrete Gaussian on a
	// power-of-two grid near sigma 2^-10: no float Gaussian, no log(u),
	// on this private path). Tests of the update rule may inject another.
	Noise func(src dp.Source, sigma float64) (float64, error)
}

func (c SamplerConfig) validate() error {
	switch {
	case c.Steps < 1:
		return fmt.Errorf("steps must be >= 1, got %d", c.Steps)
	case !(c.StepScale > 0) || math.IsInf(c.StepScale, 0):
		return fmt.Errorf("step scale must be positive and finite, got %v", c.StepScale)
	case !(c.StepOffset >= 0) || math.IsInf(c.StepOffset, 0):
		return fmt.Errorf("step offset must be >= 0, got %v", c.StepOffset)
	case !(c.Tau > 0.5 && c.Tau <= 1):
		return fmt.Errorf("tau must be in (0.5, 1], got %v", c.Tau)
	case !(c.Lambda > 0) || math.IsInf(c.Lambda, 0):
		return fmt.Errorf("lambda must be positive and finite, got %v", c.Lambda)
	case !(c.Mu >= 0 && c.Mu < 1):
		return fmt.Errorf("mu must be in [0, 1), got %v", c.Mu)
	case !(c.GradScale > 0) || math.IsInf(c.GradScale, 0):
		return fmt.Errorf("grad scale must be positive and finite, got %v", c.GradScale)
	}
	return nil
}

// errDiverged marks a chain whose iterate left the finite numbers.
var errDiverged = errors.New("iterate diverged")

// GradientOracle writes into out a stochastic estimate of the gradient of
// the negative log target density, -grad log pi(f), at step t (1-based).
type GradientOracle func(t int, f, out []float64) error

// RunPSGLD runs the preconditioned stochastic-gradient Langevin chain from
// start and returns the last iterate (never an average: an average of
// samples is not a sample of pi). The update is
//
//	f <- f - (eps_t/2) G (.) grad + N(0, eps_t G)
//
// Erratum: the paper's line 8 drops the 1/2 in the drift, which makes the
// chain's stationary law pi^2 instead of pi (for the exponential mechanism,
// twice the nominal epsilon). trace, if non-nil, sees every iterate.
func RunPSGLD(start []float64, cfg SamplerConfig, oracle GradientOracle, src dp.Source, trace func(t int, f []float64)) ([]float64, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("psgld: %w", err)
	}
	if oracle == nil {
		return nil, errors.New("psgld: nil gradient oracle")
	}
	dim := len(start)
	f := append([]float64(nil), start...)
	g := make([]float64, dim)
	v := make([]float64, dim)
	noise := cfg.Noise
	if noise == nil {
		noise = dp.GaussianOnGrid
	}
	decay := stepDecay(cfg.StepOffset, cfg.Tau, cfg.Steps)
	muT := 1.0 // Mu^t
	for t := 1; t <= cfg.Steps; t++ {
		if err := oracle(t, f, g); err != nil {
			return nil, fmt.Errorf("psgld: step %d: %w", t, err)
		}
		var eps float64
		if decay != nil {
			eps = cfg.StepScale * decay[t-1]
		} else {
			eps = cfg.StepScale * math.Pow(cfg.StepOffset+float64(t), -cfg.Tau)
		}
		muT *= cfg.Mu
		corr := 1.0
		if !cfg.NoBiasCorrection && muT > 0 {
			corr = 1 / (1 - muT)
		}
		for j := range f {
			gb := g[j] / cfg.GradScale
			v[j] = cfg.Mu*v[j] + (1-cfg.Mu)*gb*gb
			G := 1 / (cfg.Lambda + math.Sqrt(v[j]*corr))
			sigma := math.Sqrt(eps * G)
			if !(sigma > 0) || math.IsInf(sigma, 0) {
				return nil, fmt.Errorf("psgld: step %d: noise scale %v: %w", t, sigma, errDiverged)
			}
			z, err := noise(src, sigma)
			if err != nil {
				return nil, fmt.Errorf("psgld: step %d: %w", t, err)
			}
			f[j] += -0.5*eps*G*g[j] + z
		}
		for _, x := range f {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("psgld: step %d: %w", t, errDiverged)
			}
		}
		if trace != nil {
			trace(t, f)
		}
	}
	return f, nil
}

// maxDecaySteps bounds the chains whose step decay is kept (stepDecay):
// 64k steps, 512 KiB.
const maxDecaySteps = 1 << 16

// decaySchedule is (b + t)^-tau for t = 1..len(pow).
type decaySchedule struct {
	offset, tau float64
	pow         []float64
}

// lastDecay is the schedule of the last chain that asked for one: chains
// run with one configuration again and again (a window's releases, a
// study's replicates) and need not each take Steps powers.
var lastDecay atomic.Pointer[decaySchedule]

// stepDecay returns (offset + t)^-tau for t = 1..steps, the same
// math.Pow values the chain would take step by step, or nil for a chain
// longer than maxDecaySteps (which then takes them step by step).
func stepDecay(offset, tau float64, steps int) []float64 {
	if steps > maxDecaySteps {
		return nil
	}
	if d := lastDecay.Load(); d != nil && d.offset == offset && d.tau == tau && len(d.pow) >= steps {
		return d.pow[:steps]
	}
	d := &decaySchedule{offset: offset, tau: tau, pow: make([]float64, steps)}
	for t := range d.pow {
		d.pow[t] = math.Pow(offset+float64(t+1), -tau)
	}
	lastDecay.Store(d)
	return d.pow
}
