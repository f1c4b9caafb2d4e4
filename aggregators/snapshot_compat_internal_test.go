package aggregators

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/dp"
)

// compatGolden is a set of aggregate checkpoints (one per kind: km,
// weibull, discrete, cumulative km; open and closing windows, patient
// tables, the tree counter and the horizon table) written by the version
// before the kinds were moved behind the kind interface (commit 5b22588).
// Regenerate only on a deliberate checkpoint format change:
// DPSURV_WRITE_COMPAT_GOLDEN=1 go test -run TestCheckpointCompat ./aggregators/
const compatGolden = "testdata/checkpoint_compat.json"

// compatConfigs are the aggregates of compatGolden.
func compatConfigs() []Config {
	base := func(name, kind string) Config {
		return Config{Name: name, Kind: kind, Window: Window{Size: time.Minute, Lateness: time.Minute}, Epsilon: 1,
			Cohorts: []string{"A", "B"}, TimeMax: 9, TimeUnit: "days"}
	}
	km := base("km", KindKM)
	km.Params = KMParams{BinWidth: 1}
	wb := base("wb", KindWeibull)
	dt := base("dt", KindDiscrete)
	dt.Covariates = []string{"age"}
	dt.Params = DiscreteParams{Method: "output", Covariates: []string{"age"}, Centre: []float64{60}, Scale: []float64{20}, Intervals: 9}
	cum := base("cum", KindKM)
	cum.Window.Cumulative, cum.Window.Horizon = true, 8
	cum.Params = KMParams{Method: MethodNoisyHistogram, BinWidth: 1}
	return []Config{km, wb, dt, cum}
}

// buildCompatState counts a few patients into two windows of each
// aggregate and closes the first (stepping the cumulative counter), so that
// each checkpoint holds one closing and two open windows.
func buildCompatState(t *testing.T) map[string]*aggSnapshot {
	mem := checkedMem(t)
	key := bytes.Repeat([]byte{7}, PatientKeyBytes)
	out := map[string]*aggSnapshot{}
	for _, cfg := range compatConfigs() {
		a := keyedAggregate(t, cfg, key, nil)
		batch := func(ids []string, times []float64, events []bool, cohorts []int32) {
			rows := patientBatch(t, mem, ids, times, events, cohorts)
			if cfg.Kind == KindDiscrete {
				rows = withAge(rows)
			}
			addRows(t, a, mem, rows, time.Unix(600, 0).UnixNano())
		}
		batch([]string{"p1", "p2", "p3"}, []float64{3, 4, 8}, []bool{false, true, true}, []int32{0, 1, 1})
		batch([]string{"p1"}, []float64{7}, []bool{true}, []int32{0})
		next := time.Unix(660, 0).UnixNano()
		a.register(next)
		rows := patientBatch(t, mem, []string{"p4", "p2"}, []float64{2, 5}, []bool{true, false}, []int32{0, 1})
		if cfg.Kind == KindDiscrete {
			rows = withAge(rows)
		}
		addRows(t, a, mem, rows, next)
		c, err := a.closeWindow(a.windowStart(time.Unix(600, 0).UnixNano()), dp.NewSeededSource(3))
		if err != nil {
			t.Fatal(err)
		}
		a.closing = append(a.closing, c)
		a.register(next + int64(time.Minute))
		s, err := a.snapshot()
		if err != nil {
			t.Fatal(err)
		}
		out[cfg.Name] = s
	}
	return out
}

// A checkpoint written before the kind interface restores, and the
// restored aggregates checkpoint to the same bytes; the current version
// writes the same bytes for the same input.
func TestCheckpointCompat(t *testing.T) {
	if os.Getenv("DPSURV_WRITE_COMPAT_GOLDEN") == "1" {
		b, err := json.MarshalIndent(buildCompatState(t), "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(compatGolden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(compatGolden, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile(compatGolden)
	if err != nil {
		t.Fatal(err)
	}
	var saved map[string]*aggSnapshot
	if err := json.Unmarshal(golden, &saved); err != nil {
		t.Fatal(err)
	}
	key := bytes.Repeat([]byte{7}, PatientKeyBytes)
	for _, cfg := range compatConfigs() {
		s := saved[cfg.Name]
		if s == nil || len(s.Open) == 0 || len(s.Closing) != 1 {
			t.Fatalf("%s: golden holds no open or closing windows", cfg.Name)
		}
		again, err := keyedAggregate(t, cfg, key, s).snapshot()
		if err != nil {
			t.Fatal(err)
		}
		want, got := canonicalSnapshot(t, s), canonicalSnapshot(t, again)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: restored aggregate checkpoints differently:\n got %s\nwant %s", cfg.Name, got, want)
		}
	}
	for name, s := range buildCompatState(t) {
		if got, want := canonicalSnapshot(t, s), canonicalSnapshot(t, saved[name]); !bytes.Equal(got, want) {
			t.Errorf("%s: the current version writes a different checkpoint for the same input:\n got %s\nwant %s", name, got, want)
		}
	}
}

// canonicalSnapshot is s as JSON with its patient tables (written in map
// order) re-encoded in fingerprint order.
func canonicalSnapshot(t *testing.T, s *aggSnapshot) []byte {
	t.Helper()
	sorted := func(b []byte) []byte {
		if len(b) == 0 {
			return b
		}
		tbl, err := decodePatientsMax(b, MaxPatientsPerHorizon)
		if err != nil {
			t.Fatal(err)
		}
		fps := slices.Collect(maps.Keys(tbl))
		slices.SortFunc(fps, func(x, y [2]uint64) int {
			if c := cmp.Compare(x[0], y[0]); c != 0 {
				return c
			}
			return cmp.Compare(x[1], y[1])
		})
		var out []byte
		for _, fp := range fps {
			out = binary.LittleEndian.AppendUint64(out, fp[0])
			out = binary.LittleEndian.AppendUint64(out, fp[1])
			out = binary.AppendUvarint(out, tbl[fp])
		}
		return out
	}
	c := *s
	c.Horizon = sorted(s.Horizon)
	c.Open = slices.Clone(s.Open)
	for i := range c.Open {
		c.Open[i].Patients = sorted(c.Open[i].Patients)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
