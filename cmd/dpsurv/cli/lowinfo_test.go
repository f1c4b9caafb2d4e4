package cli

import (
	"math"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/internal/datasets"
)

type lowInfoOut struct {
	Shape                float64 `json:"shape"`
	LowInformation       *bool   `json:"low_information"`
	LowInformationReason *string `json:"low_information_reason"`
}

// A small-sample private Weibull (lung, epsilon 1: shapes 7.2, 4.5, 6.9,
// 3.5, 8.8 over five runs on main, true 1.37, interval [0, 10]) is flagged
// low_information with a reason; at a large epsilon the same fit is not.
// The flag's rule (weibull.WeibullLowInformation) is tested there; here the
// CLI field, JSON key exactly "low_information".
func TestFitWeibullSmallSampleFlagged(t *testing.T) {
	lung := datasets.Path(t, "lung_tte.csv")
	got := decodeOut[lowInfoOut](t, runOK(t, "fit", "weibull", "--input", lung, "--epsilon", "1", "--cohorts", "1,2", "--time-max", "1100"))
	if got.LowInformation == nil || !*got.LowInformation || got.LowInformationReason == nil || *got.LowInformationReason == "" {
		t.Fatalf("lung at epsilon 1: low_information %v, reason %v; want flagged with a reason", got.LowInformation, got.LowInformationReason)
	}
	if got := decodeOut[lowInfoOut](t, runOK(t, "fit", "weibull", "--input", lung, "--epsilon", "inf", "--time-max", "1100")); got.LowInformation == nil || *got.LowInformation {
		t.Fatalf("non-private: low_information %v, want false", got.LowInformation)
	}
}

// A private discrete fit on lung (210 records) by the output-perturbation
// baseline is noise: its beta interval spans strong effects of both signs,
// and it is flagged. (The default method, newton, is judged by the same
// rule on its own interval.)
func TestFitDiscreteNoiseFlagged(t *testing.T) {
	lung := datasets.Path(t, "lung_tte.csv")
	o := runOK(t, "fit", "discrete", "--input", lung, "--epsilon", "1", "--cohorts", "1,2", "--time-max", "1100",
		"--covariates", "age,ph.ecog", "--centre", "62,1", "--scale", "40,4", "--intervals", "20", "--method", "output")
	got := decodeOut[lowInfoOut](t, o)
	if got.LowInformation == nil || !*got.LowInformation || !strings.Contains(*got.LowInformationReason, "noise dominates") {
		t.Fatalf("low_information %v, reason %v; want flagged\n%s", got.LowInformation, got.LowInformationReason, o)
	}
}

// A private KM cohort of a handful of records is flagged with a reason.
func TestFitKMLowInformationReason(t *testing.T) {
	lung := datasets.Path(t, "lung_tte.csv")
	o := runOK(t, "fit", "km", "--input", lung, "--epsilon", "0.05", "--cohorts", "1,2", "--time-max", "1100")
	type kmLow struct {
		Cohorts []struct {
			LowInformation       bool    `json:"low_information"`
			LowInformationReason *string `json:"low_information_reason"`
		} `json:"cohorts"`
	}
	for i, c := range decodeOut[kmLow](t, o).Cohorts {
		if !c.LowInformation || c.LowInformationReason == nil || !strings.Contains(*c.LowInformationReason, "threshold") {
			t.Fatalf("cohort %d at epsilon 0.05 (threshold about 900 records, cohorts of 125 and 85): low_information %v, reason %v",
				i, c.LowInformation, c.LowInformationReason)
		}
	}
}

// Public scaling where it matters (issue 19): a private fit discrete
// without --centre/--scale is refused with an example (on main it ran with
// centre 0, scale 1 and clipped every row); the non-private fit without
// them uses the data's own scaling, says so, clips no row, and gives the
// age effect per year of the public-scaling fit (0.0117, as R).
func TestFitDiscreteScaling(t *testing.T) {
	lung := datasets.Path(t, "lung_tte.csv")
	_, e, code := run(t, "fit", "discrete", "--input", lung, "--epsilon", "1", "--cohorts", "1,2", "--time-max", "1100", "--covariates", "age,ph.ecog")
	if code != 2 || !strings.Contains(e, "--centre and --scale") || !strings.Contains(e, "example: dpsurv fit discrete") {
		t.Fatalf("private without scaling: exit %d, stderr:\n%s", code, e)
	}
	type dOut struct {
		Beta    []float64 `json:"beta"`
		Scaling struct {
			Centre []float64 `json:"centre"`
			Scale  []float64 `json:"scale"`
		} `json:"scaling"`
		ScalingSource string `json:"scaling_source"`
		ClippedRows   *int   `json:"clipped_rows"`
	}
	data := decodeOut[dOut](t, runOK(t, "fit", "discrete", "--input", lung, "--epsilon", "inf", "--covariates", "age,ph.ecog"))
	if !strings.HasPrefix(data.ScalingSource, "data") || data.ClippedRows == nil || *data.ClippedRows != 0 ||
		len(data.Scaling.Scale) != 2 || math.Abs(data.Scaling.Centre[0]-62.4) > 0.1 {
		t.Fatalf("non-private without scaling: source %q, clipped %v, scaling %+v", data.ScalingSource, data.ClippedRows, data.Scaling)
	}
	pub := decodeOut[dOut](t, runOK(t, "fit", "discrete", "--input", lung, "--epsilon", "inf", "--covariates", "age,ph.ecog", "--centre", "62,1", "--scale", "40,4"))
	perYear, perYearPub := data.Beta[0]/data.Scaling.Scale[0], pub.Beta[0]/pub.Scaling.Scale[0]
	if math.Abs(perYear-0.0117) > 0.0005 || math.Abs(perYear-perYearPub) > 0.0005 || pub.ClippedRows == nil || !strings.HasPrefix(pub.ScalingSource, "public") {
		t.Fatalf("age per year %v (data scaling), %v (public scaling, clipped %v); want both about 0.0117", perYear, perYearPub, pub.ClippedRows)
	}
	_, e, code = run(t, "fit", "discrete", "--input", lung, "--epsilon", "inf", "--covariates", "age,ph.ecog", "--centre", "0,0", "--scale", "1,1")
	if code != 0 || !strings.Contains(e, "rows lie outside the unit ball") {
		t.Fatalf("scaling that clips every row: exit %d, no warning:\n%s", code, e)
	}
}
