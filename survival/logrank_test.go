package survival

import (
	"fmt"
	"math"
	"testing"
)

func TestLogRankMatchesR(t *testing.T) {
	overall := readCSV(t, "testdata/logrank_overall.csv")
	pairwise := readCSV(t, "testdata/logrank_pairwise.csv")
	ods, ochi, odf, op := overall.strings(t, "dataset"), overall.floats(t, "chisq"), overall.floats(t, "df"), overall.floats(t, "p")
	pds, pa, pb := pairwise.strings(t, "dataset"), pairwise.strings(t, "a"), pairwise.strings(t, "b")
	pchi, pdf, pp := pairwise.floats(t, "chisq"), pairwise.floats(t, "df"), pairwise.floats(t, "p")
	dev := maxDev{}
	checked := 0
	for _, ds := range []string{"flchain", "kidney", "lung"} {
		t.Run(ds, func(t *testing.T) {
			d := loadTTE(t, ds)
			labels, group := d.groups()
			lr, err := LogRankTest(d.time, d.event, group, len(labels))
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for i := range ods {
				if ods[i] != ds {
					continue
				}
				found = true
				dev.check(t, "chisq", ds+" chisq", lr.ChiSq, ochi[i], tolValue)
				if float64(lr.DF) != odf[i] {
					t.Errorf("%s df %d, want %v", ds, lr.DF, odf[i])
				}
				dev.check(t, "p", ds+" p", lr.P, op[i], tolCI)
				// p-values far below 1e-6 are compared relatively too.
				if rel := math.Abs(lr.P-op[i]) / op[i]; rel > 1e-6 {
					t.Errorf("%s p %v, want %v (relative deviation %.3g)", ds, lr.P, op[i], rel)
				}
				checked++
			}
			if !found {
				t.Fatalf("no golden overall test for %s", ds)
			}
			pw, err := PairwiseLogRank(d.time, d.event, group, len(labels))
			if err != nil {
				t.Fatal(err)
			}
			if want := len(labels) * (len(labels) - 1) / 2; len(pw) != want {
				t.Fatalf("%d pairs, want %d", len(pw), want)
			}
			got := map[string]Pairwise{}
			for _, p := range pw {
				got[labels[p.A]+"/"+labels[p.B]] = p
			}
			n := 0
			for i := range pds {
				if pds[i] != ds {
					continue
				}
				n++
				key := pa[i] + "/" + pb[i]
				p, ok := got[key]
				if !ok {
					t.Fatalf("%s: pair %s missing", ds, key)
				}
				what := fmt.Sprintf("%s pair %s", ds, key)
				dev.check(t, "chisq", what+" chisq", p.ChiSq, pchi[i], tolValue)
				dev.check(t, "p", what+" p", p.P, pp[i], tolCI)
				if rel := math.Abs(p.P-pp[i]) / pp[i]; rel > 1e-6 {
					t.Errorf("%s p %v, want %v (relative deviation %.3g)", what, p.P, pp[i], rel)
				}
				if float64(p.DF) != pdf[i] {
					t.Errorf("%s df %d, want %v", what, p.DF, pdf[i])
				}
				checked++
			}
			if n != len(pw) {
				t.Errorf("%s: golden has %d pairs, computed %d", ds, n, len(pw))
			}
		})
	}
	t.Logf("checked %d tests; largest relative deviation from R: %v", checked, dev)
}

// A group that is only censored before the first death has expected count 0:
// survdiff drops it from the chi-square and from df.
func TestLogRankEdgeMatchesR(t *testing.T) {
	data := readCSV(t, "testdata/logrank_edge_data.csv")
	overall := readCSV(t, "testdata/logrank_overall.csv")
	time := data.floats(t, "time")
	ev := data.floats(t, "event")
	gl := data.strings(t, "group")
	event := make([]bool, len(ev))
	group := make([]int, len(gl))
	for i := range ev {
		event[i] = ev[i] == 1
		group[i] = int(gl[i][0] - 'a')
	}
	lr, err := LogRankTest(time, event, group, 3)
	if err != nil {
		t.Fatal(err)
	}
	ds := overall.strings(t, "dataset")
	chi, df, p := overall.floats(t, "chisq"), overall.floats(t, "df"), overall.floats(t, "p")
	for i := range ds {
		if ds[i] != "edge" {
			continue
		}
		if math.Abs(lr.ChiSq-chi[i]) > tolValue || float64(lr.DF) != df[i] || math.Abs(lr.P-p[i]) > tolCI {
			t.Fatalf("got chisq %v df %d p %v; want %v %v %v", lr.ChiSq, lr.DF, lr.P, chi[i], df[i], p[i])
		}
		if lr.Expected[2] != 0 {
			t.Errorf("expected count of the censored-only group %v, want 0", lr.Expected[2])
		}
		return
	}
	t.Fatal("no golden edge log-rank")
}

func TestLogRankFromCountsMatchesRecords(t *testing.T) {
	d := loadTTE(t, "kidney")
	labels, group := d.groups()
	want, err := LogRankTest(d.time, d.event, group, len(labels))
	if err != nil {
		t.Fatal(err)
	}
	// Build counts on the full integer grid 0..max (with many empty times).
	maxT := 0
	for _, x := range d.time {
		maxT = max(maxT, int(x))
	}
	nRisk := make([][]float64, len(labels))
	nEvent := make([][]float64, len(labels))
	for g := range nRisk {
		nRisk[g] = make([]float64, maxT+1)
		nEvent[g] = make([]float64, maxT+1)
	}
	for i, x := range d.time {
		for k := 0; k <= int(x); k++ {
			nRisk[group[i]][k]++
		}
		if d.event[i] {
			nEvent[group[i]][int(x)]++
		}
	}
	got, err := LogRankFromCounts(nRisk, nEvent)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got.ChiSq-want.ChiSq) > 1e-12*want.ChiSq || got.DF != want.DF {
		t.Errorf("from counts chisq %v df %d, from records %v %d", got.ChiSq, got.DF, want.ChiSq, want.DF)
	}
	pw, err := PairwiseLogRankFromCounts(nRisk, nEvent)
	if err != nil {
		t.Fatal(err)
	}
	pw2, err := PairwiseLogRank(d.time, d.event, group, len(labels))
	if err != nil {
		t.Fatal(err)
	}
	for i := range pw {
		if pw[i].A != pw2[i].A || pw[i].B != pw2[i].B || math.Abs(pw[i].ChiSq-pw2[i].ChiSq) > 1e-12*math.Max(1, pw2[i].ChiSq) {
			t.Errorf("pair %d: %+v vs %+v", i, pw[i], pw2[i])
		}
	}
}

func TestLogRankRejectsBadInput(t *testing.T) {
	f := func(x ...float64) []float64 { return x }
	tests := []struct {
		name   string
		nRisk  [][]float64
		nEvent [][]float64
	}{
		{"one group", [][]float64{f(3, 2)}, [][]float64{f(1, 1)}},
		{"ragged", [][]float64{f(3, 2), f(3)}, [][]float64{f(1, 1), f(1)}},
		{"events above at risk", [][]float64{f(3, 2), f(3, 1)}, [][]float64{f(1, 1), f(1, 2)}},
		{"negative", [][]float64{f(3, 2), f(3, 1)}, [][]float64{f(1, -1), f(1, 0)}},
		{"NaN", [][]float64{f(3, math.NaN()), f(3, 1)}, [][]float64{f(1, 0), f(1, 0)}},
		{"group count mismatch", [][]float64{f(3, 2), f(3, 1)}, [][]float64{f(1, 0)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := LogRankFromCounts(tc.nRisk, tc.nEvent); err == nil {
				t.Fatal("expected an error")
			}
			if _, err := PairwiseLogRankFromCounts(tc.nRisk, tc.nEvent); err == nil {
				t.Fatal("expected an error (pairwise)")
			}
		})
	}
	recs := []struct {
		name    string
		time    []float64
		event   []bool
		group   []int
		nGroups int
	}{
		{"one group", f(1, 2), []bool{true, true}, []int{0, 0}, 1},
		{"group out of range", f(1, 2), []bool{true, true}, []int{0, 2}, 2},
		{"negative group", f(1, 2), []bool{true, true}, []int{0, -1}, 2},
		{"length mismatch", f(1, 2), []bool{true}, []int{0, 1}, 2},
		{"empty", nil, nil, nil, 2},
		{"negative time", f(-1, 2), []bool{true, true}, []int{0, 1}, 2},
	}
	for _, tc := range recs {
		t.Run("records "+tc.name, func(t *testing.T) {
			if _, err := LogRankTest(tc.time, tc.event, tc.group, tc.nGroups); err == nil {
				t.Fatal("expected an error")
			}
			if _, err := PairwiseLogRank(tc.time, tc.event, tc.group, tc.nGroups); err == nil {
				t.Fatal("expected an error (pairwise)")
			}
		})
	}
}

// With a single group having events the test is undefined: P is NaN, no error.
func TestLogRankDegenerate(t *testing.T) {
	lr, err := LogRankFromCounts([][]float64{{3, 2}, {0, 0}}, [][]float64{{1, 1}, {0, 0}})
	if err != nil {
		t.Fatal(err)
	}
	if lr.ChiSq != 0 || lr.DF != 0 || !math.IsNaN(lr.P) {
		t.Errorf("got %+v, want chisq 0, df 0, p NaN", lr)
	}
}
