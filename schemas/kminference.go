package schemas

// KMInference is the wire form of what a private Kaplan–Meier release
// states about a cohort's curve beyond the curve itself (KMCurve): the
// sampling-only (Greenwood) interval, the median note, where the noise
// dominates, the low-information threshold and the simultaneous band;
// NaN encodes as null. It is part of a km fit message (the fit topic,
// aggregators.KMFields) and of each private cohort `dpsurv fit km`
// prints; the estimator's cohort (km.CohortKM) converts to it with its
// Inference method. docs/analysts.md describes each field.
type KMInference struct {
	SamplingStdErr NullableSeries `json:"sampling_std_err"`
	SamplingLower  NullableSeries `json:"sampling_lower"`
	SamplingUpper  NullableSeries `json:"sampling_upper"`
	// MedianNote says why median is null ("" when it is released).
	MedianNote string `json:"median_note"`
	// NoiseDominatedFrom is the first time from which the noise alone gives
	// S a standard deviation above NoiseTailSD; null if none.
	NoiseDominatedFrom NullableFloat `json:"noise_dominated_from"`
	NoiseTailSD        float64       `json:"noise_tail_sd"`
	// LowInformationThreshold is the public noisy-count threshold below
	// which the cohort is flagged low_information: the curve is released,
	// the median is not.
	LowInformationThreshold NullableFloat `json:"low_information_threshold"`
	// BandLower and BandUpper are a simultaneous conf-level band for the
	// curve over the released times in [BandFrom, BandTo] (null outside
	// it); BandCritical is its critical value and BandMethod says how it
	// was obtained; all null, with the reason in BandMethod, where no band
	// is computed.
	BandLower    NullableSeries `json:"band_lower"`
	BandUpper    NullableSeries `json:"band_upper"`
	BandFrom     NullableFloat  `json:"band_from"`
	BandTo       NullableFloat  `json:"band_to"`
	BandCritical NullableFloat  `json:"band_critical_value"`
	BandMethod   string         `json:"band_method"`
}
