package aggregators

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/codecs/arrowipc"
	"github.com/dpsurv/dpsurv/schemas"
)

// KMCurveSchema names the Arrow table of a km release's curve; the schema
// itself is schemas.KMCurveSchema.
const KMCurveSchema = schemas.KMCurveSchemaName

// CurveTable encodes the curve of a km fit message (its JSON value) as one
// Arrow IPC stream: one row per reported time with the JSON's per-row
// arrays (schemas.KMCurveColumns: the curve, its noise-aware and
// sampling-only intervals, the noise SD, the simultaneous band) and the
// noise-dominated-tail flag, the release's metadata and per-cohort
// inference fields (conf, truncated_at, noise_dominated_from,
// low_information, median_note, the band's range, critical value and
// method) in the schema metadata. It is a pure function of the JSON, so a replayed
// release gives identical bytes. Non-km messages give nil.
func CurveTable(value []byte, mem memory.Allocator) ([]byte, error) {
	var m FitMessage
	if err := json.Unmarshal(value, &m); err != nil {
		return nil, fmt.Errorf("curve table: %w", err)
	}
	if m.KMFields == nil {
		return nil, nil
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	cols := [][]F{m.Time, m.NRisk, m.NEvent, m.NCensor, m.Surv, m.StdErr, m.Lower, m.Upper, m.NoiseStdErr,
		m.SamplingStdErr, m.SamplingLower, m.SamplingUpper, m.BandLower, m.BandUpper}
	if len(cols) != len(schemas.KMCurveColumns) {
		return nil, fmt.Errorf("curve table: %d columns for %d names", len(cols), len(schemas.KMCurveColumns))
	}
	n := len(m.Time)
	f := func(v F) string { return strconv.FormatFloat(float64(v), 'g', -1, 64) }
	md := arrow.NewMetadata(
		[]string{schemas.MetaSchema, schemas.MetaTimeUnit, schemas.MetaFitKey, schemas.MetaFitAggregate, schemas.MetaFitWindowStart, schemas.MetaFitWindowEnd,
			schemas.MetaFitCohort, schemas.MetaFitMethod, schemas.MetaEpsilon, schemas.MetaGuarantee, schemas.MetaNeighbouring,
			schemas.MetaFitN, schemas.MetaFitMedian, schemas.MetaFitMedianLower, schemas.MetaFitMedianUpper, schemas.MetaFitCumulative, schemas.MetaFitPublic,
			schemas.MetaFitConf, schemas.MetaFitTruncatedAt, schemas.MetaFitNoiseDominatedFrom, schemas.MetaFitNoiseTailSD,
			schemas.MetaFitLowInformation, schemas.MetaFitLowInformationThreshold, schemas.MetaFitMedianNote,
			schemas.MetaFitBandFrom, schemas.MetaFitBandTo, schemas.MetaFitBandCritical, schemas.MetaFitBandMethod},
		[]string{KMCurveSchema, m.TimeUnit, m.Key, m.Aggregate, m.WindowStart, m.WindowEnd,
			m.Cohort, m.Method, strconv.FormatFloat(m.Epsilon, 'g', -1, 64), m.Guarantee, m.Neighbouring,
			f(m.N), f(m.Median), f(m.MedianLower), f(m.MedianUpper), strconv.FormatBool(m.Cumulative), strings.Join(m.Public, ","),
			strconv.FormatFloat(m.Conf, 'g', -1, 64), f(m.TruncatedAt), f(m.NoiseDominatedFrom), strconv.FormatFloat(m.NoiseTailSD, 'g', -1, 64),
			strconv.FormatBool(m.LowInformation), f(m.LowInformationThreshold), m.MedianNote,
			f(m.BandFrom), f(m.BandTo), f(m.BandCritical), m.BandMethod})
	b := array.NewRecordBuilder(mem, schemas.KMCurveSchema(md))
	defer b.Release()
	for i, col := range cols {
		fb := b.Field(i).(*array.Float64Builder)
		fb.Reserve(n)
		for r := range n {
			if r >= len(col) || math.IsNaN(float64(col[r])) {
				fb.AppendNull()
				continue
			}
			fb.Append(float64(col[r]))
		}
	}
	// the noise-dominated tail: rows at or after noise_dominated_from
	nd := b.Field(len(cols)).(*array.BooleanBuilder)
	nd.Reserve(n)
	from := float64(m.NoiseDominatedFrom)
	for r := range n {
		nd.Append(!math.IsNaN(from) && float64(m.Time[r]) >= from)
	}
	rec := b.NewRecord()
	defer rec.Release()
	out, err := arrowipc.Encode(rec, mem)
	if err != nil {
		return nil, fmt.Errorf("curve table: %w", err)
	}
	return out, nil
}
