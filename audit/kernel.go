package audit

import (
	"fmt"

	"github.com/dpsurv/dpsurv/dp"
)

// Kernel is the adversary's knowledge of the mechanism: the distribution
// P(t̂ | t) of a sanitized time given the true one (paper 001 assumes the
// mechanism and its parameters are public).
type Kernel interface {
	// Outcomes calls fn for every sanitized time t̂ with P(t̂ | t) > 0; the
	// same t̂ may be reported more than once (its probabilities add up).
	Outcomes(t int64, fn func(tHat int64, p float64))
	// Name describes the mechanism and its parameters.
	Name() string
}

// TEKernel is TE-Sanitizer's exact sampled pmf (dp.TE.PMF), including the
// sanitizer's clamping of the input into [0, TimeMax] before the noise and
// of the output after it (sanitizers.Chain does both).
type TEKernel struct {
	epsilon float64
	w       int
	tmax    int64 // <= 0: no upper clamp
	pmf     []float64
}

// NewTEKernel builds the kernel of TE-Sanitizer(epsilon, window) on the
// public domain [0, timeMax]; timeMax <= 0 means no upper clamp (use it only
// when the domain bound is unknown: the edges are then slightly off).
func NewTEKernel(epsilon float64, window int, timeMax int64) (*TEKernel, error) {
	te, err := dp.NewTE(epsilon, window)
	if err != nil {
		return nil, fmt.Errorf("te kernel: %w", err)
	}
	return &TEKernel{epsilon: epsilon, w: window, tmax: timeMax, pmf: te.PMF()}, nil
}

// Outcomes implements Kernel.
func (k *TEKernel) Outcomes(t int64, fn func(int64, float64)) {
	t = k.clamp(t)
	for d := -k.w; d <= k.w; d++ {
		fn(k.clamp(t+int64(d)), k.pmf[d+k.w])
	}
}

func (k *TEKernel) clamp(t int64) int64 {
	if t < 0 {
		return 0
	}
	if k.tmax > 0 && t > k.tmax {
		return k.tmax
	}
	return t
}

// Name implements Kernel.
func (k *TEKernel) Name() string {
	return fmt.Sprintf("te-sanitizer(epsilon=%g, window=%d)", k.epsilon, k.w)
}

// BinKernel is the deterministic rounding of BinSup and DPTime: t̂ is the
// start of t's bin, floor(t / width) * width, after clamping t into
// [0, TimeMax] (the baselines' histogram does the same).
type BinKernel struct {
	width, tmax int64
	name        string
}

// NewBinKernel builds the rounding kernel for bins of width >= 1 on
// [0, timeMax] (timeMax <= 0: no upper clamp). name labels the mechanism
// (e.g. "binsup(time_bin=5, size_bin=5)").
func NewBinKernel(width, timeMax int64, name string) (*BinKernel, error) {
	if width < 1 {
		return nil, fmt.Errorf("bin kernel: width must be >= 1, got %d", width)
	}
	return &BinKernel{width: width, tmax: timeMax, name: name}, nil
}

// Outcomes implements Kernel.
func (k *BinKernel) Outcomes(t int64, fn func(int64, float64)) {
	if t < 0 {
		t = 0
	}
	if k.tmax > 0 && t > k.tmax {
		t = k.tmax
	}
	fn(t/k.width*k.width, 1)
}

// Name implements Kernel.
func (k *BinKernel) Name() string { return k.name }

// IdentityKernel is the non-private release t̂ = t.
type IdentityKernel struct{}

// Outcomes implements Kernel.
func (IdentityKernel) Outcomes(t int64, fn func(int64, float64)) { fn(t, 1) }

// Name implements Kernel.
func (IdentityKernel) Name() string { return "none (identity)" }
