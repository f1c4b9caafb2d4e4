package benchtest

import (
	"os"
	"testing"
)

// CSVFile is the CSV file named by DPSURV_BENCH_CSV (e.g. from `dpsurv gen
// --n 1000000 --covariates 3 --seed 1`, the file of scripts/bench_fits.sh:
// cohorts A,B,C, covariates age,female,bmi) and its size in bytes; b is
// skipped when the variable is unset.
func CSVFile(b *testing.B) (path string, size int64) {
	b.Helper()
	path = os.Getenv("DPSURV_BENCH_CSV")
	if path == "" {
		b.Skip("set DPSURV_BENCH_CSV to a CSV file written by dpsurv gen --covariates 3")
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return path, fi.Size()
}
