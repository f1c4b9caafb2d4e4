package aggregators_test

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/dpfit/km"
	"github.com/dpsurv/dpsurv/schemas"
)

// TestCurveTableColumns: every per-row array of a km release's JSON reads
// back from the Arrow curve table under its name (null where the JSON has
// null), the noise-dominated flag marks exactly the rows at or after
// noise_dominated_from, and the per-cohort inference fields are in the
// schema metadata. The release is a real private one (hierarchical, with
// its simulated intervals and band), so the band and the tail are present.
func TestCurveTableColumns(t *testing.T) {
	h, err := km.NewHistogram(5, 1000, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 400; i++ {
		if err := h.Add(float64((i*37)%1000), i%3 != 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	res, err := km.HierarchicalKM(h, dp.NewSeededSource(5), km.KMOptions{Epsilon: 0.5, LogRankSims: -1, IntervalSims: 40})
	if err != nil {
		t.Fatal(err)
	}
	ck := res.Cohorts[0]
	if ck.BandMethod != km.BandMethodSimulated || math.IsNaN(ck.NoiseDominatedFrom) {
		t.Fatalf("test release has band %q, noise-dominated from %v: want both", ck.BandMethod, ck.NoiseDominatedFrom)
	}
	fs := schemas.NullableFloats
	msg := aggregators.FitMessage{Schema: schemas.FitSchemaName, Key: "km/1/A", Aggregate: "km", Kind: "km", Cohort: "A",
		Method: res.Method, Epsilon: 1, N: aggregators.F(ck.N), TimeUnit: "days", LowInformation: ck.LowInformation,
		KMFields: &aggregators.KMFields{KMCurve: ck.Curve.Wire(), Conf: ck.Curve.Conf, NoiseStdErr: fs(ck.NoiseStdErr),
			TruncatedAt: aggregators.F(ck.TruncatedAt), KMInference: ck.Inference()}}
	value, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	// what a reader of the fit topic sees
	var m aggregators.FitMessage
	if err := json.Unmarshal(value, &m); err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tab, err := aggregators.CurveTable(value, mem)
	if err != nil {
		t.Fatal(err)
	}
	recs := decodeTable(t, tab, mem)
	defer releaseAll(recs)
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	rec := recs[0]
	n := len(m.Time)
	if int(rec.NumRows()) != n || n == 0 {
		t.Fatalf("%d rows, %d times", rec.NumRows(), n)
	}
	want := map[string][]aggregators.F{
		"time": m.Time, "n_risk": m.NRisk, "n_event": m.NEvent, "n_censor": m.NCensor, "surv": m.Surv,
		"std_err": m.StdErr, "lower": m.Lower, "upper": m.Upper, "noise_std_err": m.NoiseStdErr,
		"sampling_std_err": m.SamplingStdErr, "sampling_lower": m.SamplingLower, "sampling_upper": m.SamplingUpper,
		"band_lower": m.BandLower, "band_upper": m.BandUpper,
	}
	sc := rec.Schema()
	if len(want) != len(schemas.KMCurveColumns) {
		t.Fatalf("test checks %d columns, the schema has %d float columns", len(want), len(schemas.KMCurveColumns))
	}
	nulls := map[string]int{}
	for name, col := range want {
		idx := sc.FieldIndices(name)
		if len(idx) != 1 {
			t.Fatalf("column %q: %d fields", name, len(idx))
		}
		a := rec.Column(idx[0]).(*array.Float64)
		for i := 0; i < n; i++ {
			v := float64(col[i])
			switch {
			case math.IsNaN(v):
				nulls[name]++
				if !a.IsNull(i) {
					t.Fatalf("%s[%d] = %v, JSON null", name, i, a.Value(i))
				}
			case a.IsNull(i) || a.Value(i) != v:
				t.Fatalf("%s[%d] = %v (null %v), JSON %v", name, i, a.Value(i), a.IsNull(i), v)
			}
		}
	}
	// the band is null after its range, the tail flag set from its start
	if nulls["band_lower"] == 0 || nulls["band_lower"] == n {
		t.Errorf("band_lower has %d nulls of %d rows: want the band over part of the curve", nulls["band_lower"], n)
	}
	idx := sc.FieldIndices(schemas.KMCurveNoiseDominatedColumn)
	if len(idx) != 1 {
		t.Fatalf("no %s column", schemas.KMCurveNoiseDominatedColumn)
	}
	nd := rec.Column(idx[0]).(*array.Boolean)
	flagged := 0
	for i := 0; i < n; i++ {
		if want := float64(m.Time[i]) >= float64(m.NoiseDominatedFrom); nd.Value(i) != want {
			t.Fatalf("noise_dominated[%d] = %v at time %v (from %v)", i, nd.Value(i), m.Time[i], m.NoiseDominatedFrom)
		}
		if nd.Value(i) {
			flagged++
		}
	}
	if flagged == 0 || flagged == n {
		t.Errorf("%d of %d rows flagged noise-dominated", flagged, n)
	}
	md := sc.Metadata()
	g := func(v aggregators.F) string { return strconv.FormatFloat(float64(v), 'g', -1, 64) }
	for key, v := range map[string]string{
		schemas.MetaFitConf:                    strconv.FormatFloat(m.Conf, 'g', -1, 64),
		schemas.MetaFitTruncatedAt:             g(m.TruncatedAt),
		schemas.MetaFitNoiseDominatedFrom:      g(m.NoiseDominatedFrom),
		schemas.MetaFitNoiseTailSD:             strconv.FormatFloat(m.NoiseTailSD, 'g', -1, 64),
		schemas.MetaFitLowInformation:          strconv.FormatBool(m.LowInformation),
		schemas.MetaFitLowInformationThreshold: g(m.LowInformationThreshold),
		schemas.MetaFitMedianNote:              m.MedianNote,
		schemas.MetaFitBandFrom:                g(m.BandFrom),
		schemas.MetaFitBandTo:                  g(m.BandTo),
		schemas.MetaFitBandCritical:            g(m.BandCritical),
		schemas.MetaFitBandMethod:              km.BandMethodSimulated,
		schemas.MetaFitKey:                     "km/1/A",
	} {
		if got, ok := md.GetValue(key); !ok || got != v {
			t.Errorf("metadata %s = %q (present %v), want %q", key, got, ok, v)
		}
	}
}
