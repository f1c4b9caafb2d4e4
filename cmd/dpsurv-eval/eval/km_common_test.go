package eval

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/internal/datasets"
)

func fitsDataPath(t *testing.T, name string) string {
	t.Helper()
	return datasets.Path(t, name)
}

func TestFitsReadCSV(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		covs    []string
		wantErr string
		check   func(t *testing.T, d *fitsData)
	}{
		{
			name: "numeric labels sorted numerically",
			in:   "id,time,event,cohort,age\n1,5,1,10,50\n2,7,0,2,60\n3,9,1,10,70\n",
			covs: []string{"age"},
			check: func(t *testing.T, d *fitsData) {
				if strings.Join(d.Labels, ",") != "2,10" {
					t.Errorf("labels %v, want [2 10]", d.Labels)
				}
				if d.Cohort[0] != 1 || d.Cohort[1] != 0 || d.Cohort[2] != 1 {
					t.Errorf("cohort indices %v", d.Cohort)
				}
				if !d.Event[0] || d.Event[1] || d.X[2][0] != 70 || d.Time[1] != 7 {
					t.Errorf("parsed %+v", d)
				}
				tt, ee := d.cohort(1)
				if len(tt) != 2 || tt[1] != 9 || !ee[1] {
					t.Errorf("cohort(1) = %v %v", tt, ee)
				}
			},
		},
		{name: "missing column", in: "id,time,event\n1,5,1\n", wantErr: `no column "cohort"`},
		{name: "bad time", in: "id,time,event,cohort\n1,-3,1,a\n", wantErr: "row 1: time"},
		{name: "bad event", in: "id,time,event,cohort\n1,3,2,a\n", wantErr: "row 1: event"},
		{name: "missing covariate", in: "id,time,event,cohort,age\n1,3,1,a,NA\n", covs: []string{"age"}, wantErr: `covariate "age"`},
		{name: "empty", in: "id,time,event,cohort\n", wantErr: "no records"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := fitsReadCSV(strings.NewReader(tc.in), tc.covs)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				// errors name the row, never the value
				if strings.Contains(err.Error(), "-3") || strings.Contains(err.Error(), "NA") {
					t.Errorf("error leaks a value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, d)
		})
	}
}

func TestFitsWriteBlock(t *testing.T) {
	begin, end := fitsMarkers("x")
	tests := []struct {
		name, before, body, want string
		wantErr                  bool
	}{
		{name: "replace", before: "# P\n\nintro\n" + begin + "\nold\n" + end + "\ntail\n", body: "new\n",
			want: "# P\n\nintro\n" + begin + "\nnew\n" + end + "\ntail\n"},
		{name: "append", before: "# P\n", body: "new",
			want: "# P\n\n" + begin + "\nnew\n" + end + "\n"},
		{name: "create", before: "", body: "new\n", want: begin + "\nnew\n" + end + "\n"},
		{name: "unmatched", before: "a\n" + end + "\n", body: "new\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "page.md")
			if tc.before != "" {
				if err := os.WriteFile(path, []byte(tc.before), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := fitsWriteBlock(path, "x", []byte(tc.body))
			if tc.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("page:\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestFitsHelpers(t *testing.T) {
	if q := fitsQuantile([]float64{4, 1, 3, 2}, 0.5); q != 2.5 {
		t.Errorf("median %v", q)
	}
	if q := fitsQuantile([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.9); math.Abs(q-9.1) > 1e-12 {
		t.Errorf("90%% quantile %v, want 9.1 (R type 7)", q)
	}
	if !math.IsNaN(fitsQuantile(nil, 0.5)) || !math.IsNaN(fitsMean(nil)) {
		t.Error("empty summaries must be NaN")
	}
	l, err := fitsFloatList("0.1, inf,2", true)
	if err != nil || len(l) != 3 || !math.IsInf(l[1], 1) {
		t.Errorf("list %v %v", l, err)
	}
	if _, err := fitsFloatList("0.1,inf", false); err == nil {
		t.Error("inf accepted where not allowed")
	}
	if c := fitsCommand("km", []string{"-data", "a b.csv"}); c != `go run ./cmd/dpsurv-eval km -data "a b.csv"` {
		t.Errorf("command %q", c)
	}
	for v, want := range map[float64]string{0.0123456: "0.0123", 1364.2: "1364", 2e-4: "2.00e-04", math.NaN(): "—"} {
		if got := fitsFmt(v); got != want {
			t.Errorf("fitsFmt(%v) = %q, want %q", v, got, want)
		}
	}
}
