package schemas

import (
	"fmt"
	"math"
	"strconv"

	"github.com/apache/arrow/go/v15/arrow"
)

// NullableFloat is a float64 that encodes NaN and ±Inf as JSON null (R's NA)
// and decodes null as NaN. Every JSON output of dpsurv that carries R-style
// NA values (fit messages, the CLI's fits, audit reports) encodes them with
// it or with AppendNullableFloat.
type NullableFloat float64

// MarshalJSON implements json.Marshaler: the shortest decimal that reads
// back exactly ('g' format), or null.
func (f NullableFloat) MarshalJSON() ([]byte, error) {
	return AppendNullableFloat(nil, float64(f), -1), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (f *NullableFloat) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = NullableFloat(math.NaN())
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("decode number: %w", err)
	}
	*f = NullableFloat(v)
	return nil
}

// AppendNullableFloat appends v to dst as a JSON number with prec
// significant digits ('g' format; -1 is the shortest exact form), or null
// when v is NaN or infinite.
func AppendNullableFloat(dst []byte, v float64, prec int) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(dst, "null"...)
	}
	return strconv.AppendFloat(dst, v, 'g', prec, 64)
}

// NullableFloats converts a slice (NaN stays NaN, i.e. null).
func NullableFloats(x []float64) []NullableFloat {
	out := make([]NullableFloat, len(x))
	for i, v := range x {
		out[i] = NullableFloat(v)
	}
	return out
}

// NullableSeries is a run of NullableFloat written as one JSON array, each
// value as NullableFloat writes it, a nil series as null (as encoding/json
// writes a nil []NullableFloat): the same bytes for one encoder call per
// array instead of one per value (a km curve carries thousands).
type NullableSeries []NullableFloat

// MarshalJSON implements json.Marshaler.
func (s NullableSeries) MarshalJSON() ([]byte, error) {
	if s == nil {
		return []byte("null"), nil
	}
	b := make([]byte, 0, 2+len(s)*12)
	b = append(b, '[')
	for i, v := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendNullableFloat(b, float64(v), -1)
	}
	return append(b, ']'), nil
}

// KMCurve is the wire form of a Kaplan–Meier curve, with survfit's names:
// one value per reported time, then the median and its interval; NaN (R's
// NA) encodes as null. It is the curve of a km fit message (the fit topic,
// aggregators.KMFields) and of each cohort `dpsurv fit km` prints; the
// numeric curve (survival.KMCurve) converts to it with its Wire method.
type KMCurve struct {
	Time        NullableSeries `json:"time"`
	NRisk       NullableSeries `json:"n_risk"`
	NEvent      NullableSeries `json:"n_event"`
	NCensor     NullableSeries `json:"n_censor"`
	Surv        NullableSeries `json:"surv"`
	StdErr      NullableSeries `json:"std_err"`
	Lower       NullableSeries `json:"lower"`
	Upper       NullableSeries `json:"upper"`
	Median      NullableFloat  `json:"median"`
	MedianLower NullableFloat  `json:"median_lower"`
	MedianUpper NullableFloat  `json:"median_upper"`
}

// FitSchemaName names the JSON document of every fit-topic message (its
// "schema" field).
const FitSchemaName = "dpsurv.fit.v1"

// KMCurveSchemaName names the Arrow table of a km release's curve (schema
// metadata key MetaSchema).
const KMCurveSchemaName = "dpsurv.fit.km.v1"

// Schema-level metadata keys of the km curve table, besides MetaSchema,
// MetaTimeUnit, MetaEpsilon, MetaGuarantee and MetaNeighbouring.
const (
	MetaFitKey         = "dpsurv.key"
	MetaFitAggregate   = "dpsurv.aggregate"
	MetaFitWindowStart = "dpsurv.window_start"
	MetaFitWindowEnd   = "dpsurv.window_end"
	MetaFitCohort      = "dpsurv.cohort"
	MetaFitMethod      = "dpsurv.method"
	MetaFitN           = "dpsurv.n"
	MetaFitMedian      = "dpsurv.median"
	MetaFitMedianLower = "dpsurv.median_lower"
	MetaFitMedianUpper = "dpsurv.median_upper"
	MetaFitCumulative  = "dpsurv.cumulative"
	// MetaFitPublic lists the release's public quantities, comma-separated.
	// (Schema-level; the field-level MetaPublicField has the same string.)
	MetaFitPublic = "dpsurv.public"
	// Per-cohort inference fields of the release (docs/analysts.md):
	// MetaFitConf the level of lower/upper and of the band, MetaFitTruncatedAt,
	// MetaFitNoiseDominatedFrom, MetaFitNoiseTailSD, MetaFitLowInformation
	// ("true"/"false"), MetaFitLowInformationThreshold, MetaFitMedianNote
	// (why median is null; "" when released), and the simultaneous band's
	// MetaFitBandFrom, MetaFitBandTo, MetaFitBandCritical, MetaFitBandMethod.
	// Numbers are the shortest exact decimal, "NaN" for the JSON's null.
	MetaFitConf                    = "dpsurv.conf"
	MetaFitTruncatedAt             = "dpsurv.truncated_at"
	MetaFitNoiseDominatedFrom      = "dpsurv.noise_dominated_from"
	MetaFitNoiseTailSD             = "dpsurv.noise_tail_sd"
	MetaFitLowInformation          = "dpsurv.low_information"
	MetaFitLowInformationThreshold = "dpsurv.low_information_threshold"
	MetaFitMedianNote              = "dpsurv.median_note"
	MetaFitBandFrom                = "dpsurv.band_from"
	MetaFitBandTo                  = "dpsurv.band_to"
	MetaFitBandCritical            = "dpsurv.band_critical_value"
	MetaFitBandMethod              = "dpsurv.band_method"
)

// KMCurveColumns are the float64 columns of the km curve table, in order;
// a value is null where the fit message's JSON has null (R's NA). The
// table's last column, KMCurveNoiseDominatedColumn, is boolean.
var KMCurveColumns = []string{"time", "n_risk", "n_event", "n_censor", "surv", "std_err", "lower", "upper", "noise_std_err",
	"sampling_std_err", "sampling_lower", "sampling_upper", "band_lower", "band_upper"}

// KMCurveNoiseDominatedColumn is the km curve table's boolean column: true
// in the rows at or after the release's noise_dominated_from (the
// noise-dominated tail, to be drawn as indicative only).
const KMCurveNoiseDominatedColumn = "noise_dominated"

// KMCurveSchema is the km curve table's schema with the given schema-level
// metadata (which should name KMCurveSchemaName under MetaSchema):
// KMCurveColumns (float64), then KMCurveNoiseDominatedColumn (bool).
func KMCurveSchema(md arrow.Metadata) *arrow.Schema {
	fields := make([]arrow.Field, len(KMCurveColumns), len(KMCurveColumns)+1)
	for i, name := range KMCurveColumns {
		fields[i] = arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Float64, Nullable: true}
	}
	fields = append(fields, arrow.Field{Name: KMCurveNoiseDominatedColumn, Type: arrow.FixedWidthTypes.Boolean})
	return arrow.NewSchema(fields, &md)
}
