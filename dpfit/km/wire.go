package km

import "github.com/dpsurv/dpsurv/schemas"

// Inference is the wire form of the cohort's inference beyond its curve
// (schemas.KMInference), as every private km release states it; the noise
// tail threshold is DefaultNoiseTailSD, the one the releases use.
func (c CohortKM) Inference() schemas.KMInference {
	f, fs := func(x float64) schemas.NullableFloat { return schemas.NullableFloat(x) }, schemas.NullableFloats
	return schemas.KMInference{
		SamplingStdErr: fs(c.SamplingStdErr), SamplingLower: fs(c.SamplingLower), SamplingUpper: fs(c.SamplingUpper),
		MedianNote: c.MedianNote, NoiseDominatedFrom: f(c.NoiseDominatedFrom), NoiseTailSD: DefaultNoiseTailSD,
		LowInformationThreshold: f(c.LowInformationThreshold),
		BandLower:               fs(c.BandLower), BandUpper: fs(c.BandUpper), BandFrom: f(c.BandFrom), BandTo: f(c.BandTo),
		BandCritical: f(c.BandCritical), BandMethod: c.BandMethod,
	}
}
