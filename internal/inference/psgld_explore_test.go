package inference

import (
	"os"
	"strconv"
	"testing"

	"github.com/dpsurv/dpsurv/regression"
)

func TestExplorePSGLD(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("XN"))
	if n == 0 {
		t.Skip()
	}
	reps, _ := strconv.Atoi(os.Getenv("XREPS"))
	for i, eps := range []float64{0.5, 1, 2} {
		c, err := RunRegression(RegressionConfig{Method: regression.MethodPSGLD, Epsilon: eps, Records: n, Reps: reps, Seed: uint64(80 + i)})
		if err != nil {
			t.Fatal(err)
		}
		logRegression(t, "psgld", eps, c)
	}
}
