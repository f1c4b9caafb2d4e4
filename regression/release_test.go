package regression

import (
	"math"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
)

// TestDiscretePrivateReleaseNPublic: a private discrete release treats the
// record count as public (its sensitivities are functions of n under
// replace-one), so it publishes n exactly, says so in "public", and spends
// the whole budget on the fit. The old release spent 5% of epsilon on a
// noisy n while its noise scale, delta, epsilon' and psgld.v gave n away.
func TestDiscretePrivateReleaseNPublic(t *testing.T) {
	src := dp.NewSeededSource(9)
	data := synthetic(src, 300, 2, 20, -2, []float64{1, -1})
	for _, m := range []Method{MethodOutput, MethodObjective, MethodPSGLD} {
		res, err := FitDiscrete(data, DiscreteOptions{Method: m, Epsilon: 2, TimeMax: 1, Intervals: 20,
			PSGLD: PSGLDOptions{Steps: 50}}, src)
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if res.N != int64(data.Len()) || res.NNoisy || res.EpsilonFit != 2 {
			t.Errorf("%s: n %d (noisy %v), epsilon_fit %v; want exact n %d and the whole budget on the fit", m, res.N, res.NNoisy, res.EpsilonFit, data.Len())
		}
		if len(res.Public) == 0 || res.Public[0] != "n" {
			t.Errorf("%s: public %v does not list n", m, res.Public)
		}
		if res.Iterations != 0 {
			t.Errorf("%s: publishes the Newton iteration count %d (a function of the data)", m, res.Iterations)
		}
		if m == MethodPSGLD && res.PSGLD.V != 2*math.Log(float64(data.Len())) {
			t.Errorf("psgld v %v is not 2 ln n", res.PSGLD.V)
		}
	}
}

// TestDiscreteFailureFallback: a fit that fails (Newton stopped before its
// certificate, a diverging chain) does not return an error — which made the
// aggregator retry with fresh noise until success, i.e. publish a value
// conditioned on success — but the fixed fallback release: zero plus
// output-perturbation noise at the same public n, lambda and epsilon,
// labelled fallback. Its coefficients are checked against that law (KS).
func TestDiscreteFailureFallback(t *testing.T) {
	t.Parallel()
	src := dp.NewSeededSource(21)
	data := synthetic(src, 300, 2, 20, -2, []float64{1, -1})
	basis, _ := SplineBasis(20, DefaultKnots)
	sens, _ := OutputSensitivity(basis, data.Len(), DefaultLambda)
	want, err := OutputNoise(sens+2*CertificateTolerance/DefaultLambda, DefaultKnots+2, 1.5)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		opts DiscreteOptions
	}{
		{"output, newton stopped", DiscreteOptions{Method: MethodOutput, MaxIter: 1}},
		{"objective, newton stopped", DiscreteOptions{Method: MethodObjective, MaxIter: 1}},
		{"psgld diverged", DiscreteOptions{Method: MethodPSGLD, PSGLD: PSGLDOptions{Steps: 30, StepScale: 1e307}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := c.opts
			o.Epsilon, o.TimeMax, o.Intervals = 1.5, 1, 20
			bs := make([][]float64, 300)
			for i := range bs {
				res, err := FitDiscrete(data, o, src)
				if err != nil {
					t.Fatalf("failed fit returned an error (the caller would retry with fresh noise): %v", err)
				}
				if !res.Fallback || res.Noise == nil || *res.Noise != want {
					t.Fatalf("fallback %v noise %+v, want the fallback with %+v", res.Fallback, res.Noise, want)
				}
				if res.N != int64(data.Len()) || res.Guarantee == "" {
					t.Fatalf("metadata n %d guarantee %q", res.N, res.Guarantee)
				}
				bs[i] = append(append([]float64(nil), res.Alpha...), res.Beta...)
			}
			checkLatticeNoise(t, c.name, bs, want, true)
		})
	}
}
