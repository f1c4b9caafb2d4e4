package cli

import (
	"io"
	"testing"

	"github.com/dpsurv/dpsurv/internal/benchtest"
)

// BenchmarkFitCoxFile is `dpsurv fit cox` (Efron, the file's covariates
// age,female,bmi, cohorts A,B,C) on the CSV file named by DPSURV_BENCH_CSV
// (e.g. from `dpsurv gen --n 1000000 --covariates 3 --seed 1`, the file of
// scripts/bench_fits.sh), in process: with -cpuprofile it shows where the
// command's time goes (the file read against the Newton steps).
func BenchmarkFitCoxFile(b *testing.B) {
	path, size := benchtest.CSVFile(b)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		if rc := Main([]string{"fit", "cox", "--input", path, "--cohorts", "A,B,C", "--covariates", "age,female,bmi", "--epsilon", "inf"}, io.Discard, io.Discard); rc != 0 {
			b.Fatalf("exit %d", rc)
		}
	}
}
