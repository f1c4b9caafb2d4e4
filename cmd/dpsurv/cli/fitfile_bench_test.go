package cli

import (
	"io"
	"os"
	"testing"
)

// BenchmarkFitCoxFile is `dpsurv fit cox` (Efron, the file's covariates
// age,female,bmi, cohorts A,B,C) on the CSV file named by DPSURV_BENCH_CSV
// (e.g. from `dpsurv gen --n 1000000 --covariates 3 --seed 1`, the file of
// scripts/bench_fits.sh), in process: with -cpuprofile it shows where the
// command's time goes (the file read against the Newton steps).
func BenchmarkFitCoxFile(b *testing.B) {
	path := os.Getenv("DPSURV_BENCH_CSV")
	if path == "" {
		b.Skip("set DPSURV_BENCH_CSV to a CSV file written by dpsurv gen --covariates 3")
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	for b.Loop() {
		if rc := Main([]string{"fit", "cox", "--input", path, "--cohorts", "A,B,C", "--covariates", "age,female,bmi", "--epsilon", "inf"}, io.Discard, io.Discard); rc != 0 {
			b.Fatalf("exit %d", rc)
		}
	}
}
