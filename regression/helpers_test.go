package regression

import (
	"encoding/json"
	"github.com/dpsurv/dpsurv/internal/datasets"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/dpsurv/dpsurv/dp"
)

// loadCSV reads time, event and the named covariates of one shared data
// set (a tiny local reader: this package does not depend on schemas).
// Rows with an empty or NA value in a used column are dropped, as R's
// complete.cases does.
func loadCSV(t testing.TB, file string, covs []string) Data {
	t.Helper()
	tb := datasets.Read(t, file)
	col := tb.Columns()
	need := append([]string{"time", "event"}, covs...)
	for _, c := range need {
		if _, ok := col[c]; !ok {
			t.Fatalf("%s: no column %q", file, c)
		}
	}
	var d Data
rows:
	for _, r := range tb.Rows {
		vals := make([]float64, len(need))
		for k, c := range need {
			s := r[col[c]]
			if s == "" || s == "NA" {
				continue rows
			}
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("%s: column %s: %v", file, c, err)
			}
			vals[k] = v
		}
		d.Time = append(d.Time, vals[0])
		d.Event = append(d.Event, vals[1] == 1)
		d.X = append(d.X, vals[2:])
	}
	return d
}

// golden is one file written by scripts/golden_regression.R.
type golden struct {
	Dataset    string    `json:"dataset"`
	File       string    `json:"file"`
	Covariates []string  `json:"covariates"`
	Centre     []float64 `json:"centre"`
	Scale      []float64 `json:"scale"`
	TimeMax    float64   `json:"time_max"`
	Intervals  int       `json:"intervals"`
	Knots      int       `json:"knots"`
	N          int       `json:"n"`
	Clipped    int       `json:"clipped_rows"`
	Discrete   []struct {
		Link   Link      `json:"link"`
		Alpha  []float64 `json:"alpha"`
		Beta   []float64 `json:"beta"`
		LogLik float64   `json:"loglik"`
	} `json:"discrete"`
	Cox []struct {
		Ties   Ties      `json:"ties"`
		Beta   []float64 `json:"beta"`
		SE     []float64 `json:"se"`
		LogLik []float64 `json:"loglik"`
	} `json:"cox"`
}

// checkCoefficientsR: res's alpha and beta agree with R's to 1e-6
// relative (1e-9 absolute).
func checkCoefficientsR(t *testing.T, res DiscreteResult, alpha, beta []float64) {
	t.Helper()
	for j, w := range alpha {
		if !closeRel(res.Alpha[j], w, 1e-6, 1e-9) {
			t.Errorf("alpha[%d] = %.10g, R %.10g", j, res.Alpha[j], w)
		}
	}
	for j, w := range beta {
		if !closeRel(res.Beta[j], w, 1e-6, 1e-9) {
			t.Errorf("beta[%d] = %.10g, R %.10g", j, res.Beta[j], w)
		}
	}
}

func loadGolden(t testing.TB, name string) golden {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatalf("read golden: %v", err)
	}
	var g golden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("parse golden %s: %v", name, err)
	}
	return g
}

// closeRel reports |got - want| <= rel * |want| + abs.
func closeRel(got, want, rel, abs float64) bool {
	return math.Abs(got-want) <= rel*math.Abs(want)+abs
}

// synthetic draws n records from a discrete-time logistic model with p
// covariates uniform in the unit ball's cube [-1/sqrt(p), 1/sqrt(p)]^p, the
// given beta and a constant baseline hazard, censoring uniform over the
// q intervals. Times are interval ends in [0, 1] (time max 1).
func synthetic(src dp.Source, n, p, q int, alpha0 float64, beta []float64) Data {
	d := Data{Time: make([]float64, n), Event: make([]bool, n), X: make([][]float64, n)}
	h := 1 / math.Sqrt(float64(p))
	for i := 0; i < n; i++ {
		x := make([]float64, p)
		var u float64
		for j := range x {
			x[j] = (2*dp.Float64(src) - 1) * h
			u += beta[j] * x[j]
		}
		c := 1 + int(dp.Uint64n(src, uint64(q)))
		pr := sigmoid(alpha0 + u)
		s, ev := c, false
		for k := 1; k <= c; k++ {
			if dp.Float64(src) < pr {
				s, ev = k, true
				break
			}
		}
		d.Time[i] = float64(s) / float64(q)
		d.Event[i] = ev
		d.X[i] = x
	}
	return d
}
