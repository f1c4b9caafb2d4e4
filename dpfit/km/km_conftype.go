package km

// The pointwise interval type of a KM curve's lower/upper, under R
// survfit's conf.type names (stated in every release as conf_type).
const (
	// ConfTypeLog is the non-private curve's: S exp(-/+ z se), R's default.
	ConfTypeLog = "log"
	// ConfTypeLogLog is a private release's: the log-log Greenwood
	// interval S^exp(-/+ z g / |log S|) combined with the noise
	// (km_interval.go), which keeps its level near S = 1.
	ConfTypeLogLog = "log-log"
)
