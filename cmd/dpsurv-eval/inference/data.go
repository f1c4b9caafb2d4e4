package inference

import (
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
)

// Data is a time-to-event dataset with cohorts mapped to 0..k-1 in the
// sorted order of their labels.
type Data struct {
	Time   []float64
	Event  []bool
	Cohort []int
	Labels []string
}

// Load reads a CSV with columns time, event (1 = event) and cohort (others
// are ignored), such as data/flchain_tte.csv.
func Load(path string) (Data, error) {
	f, err := os.Open(path)
	if err != nil {
		return Data{}, fmt.Errorf("load %s: %w", path, err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return Data{}, fmt.Errorf("load %s: %w", path, err)
	}
	if len(recs) < 2 {
		return Data{}, fmt.Errorf("load %s: no records", path)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, c := range []string{"time", "event", "cohort"} {
		if _, ok := col[c]; !ok {
			return Data{}, fmt.Errorf("load %s: no %q column", path, c)
		}
	}
	seen := map[string]bool{}
	var d Data
	for _, r := range recs[1:] {
		if l := r[col["cohort"]]; !seen[l] {
			seen[l] = true
			d.Labels = append(d.Labels, l)
		}
	}
	sort.Strings(d.Labels)
	idx := map[string]int{}
	for i, l := range d.Labels {
		idx[l] = i
	}
	for i, r := range recs[1:] {
		tm, err := strconv.ParseFloat(r[col["time"]], 64)
		if err != nil {
			return Data{}, fmt.Errorf("load %s: row %d: time: %w", path, i+2, err)
		}
		d.Time = append(d.Time, tm)
		d.Event = append(d.Event, r[col["event"]] == "1")
		d.Cohort = append(d.Cohort, idx[r[col["cohort"]]])
	}
	return d, nil
}

// byCohort returns the record indices of each cohort.
func (d Data) byCohort() [][]int {
	out := make([][]int, len(d.Labels))
	for i, c := range d.Cohort {
		out[c] = append(out[c], i)
	}
	return out
}

// resample draws len(idx) records with replacement from the records idx of
// d (one bootstrap sample of a cohort): their times and events.
func (d Data) resample(rng *rand.Rand, idx []int) ([]float64, []bool) {
	tt := make([]float64, len(idx))
	ee := make([]bool, len(idx))
	for j := range idx {
		i := idx[rng.IntN(len(idx))]
		tt[j], ee[j] = d.Time[i], d.Event[i]
	}
	return tt, ee
}
