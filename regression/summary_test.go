package regression

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// summaryGolden is regression/testdata/summary_<name>.json
// (scripts/golden_summary.R): what R's summary() prints for coxph and the
// person-period glm.
type summaryGolden struct {
	Cox struct {
		Coef, SE, Z, P []float64
		ExpCoef        []float64 `json:"exp_coef"`
		ExpCoefLower   []float64 `json:"exp_coef_lower"`
		ExpCoefUpper   []float64 `json:"exp_coef_upper"`
		LRChiSq        float64   `json:"lr_chisq"`
		LRDF           int       `json:"lr_df"`
		LRP            float64   `json:"lr_p"`
	} `json:"cox"`
	Discrete []struct {
		Link               Link
		Coef               []float64
		SEExpected         []float64 `json:"se_expected"`
		SEObserved         []float64 `json:"se_observed"`
		Z, P, Lower, Upper []float64
	} `json:"discrete"`
}

func loadSummaryGolden(t *testing.T, name string) summaryGolden {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "summary_"+name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var g summaryGolden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

func checkVec(t *testing.T, what string, got, want []float64, rel, abs float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, R %d", what, len(got), len(want))
	}
	for j := range want {
		if !closeRel(got[j], want[j], rel, abs) {
			t.Errorf("%s[%d] = %.12g, R %.12g", what, j, got[j], want[j])
		}
	}
}

// TestCoxSummaryGoldenR checks exp(coef), its 95% interval, z, p and the
// likelihood-ratio test against summary.coxph.
func TestCoxSummaryGoldenR(t *testing.T) {
	for _, name := range []string{"lung", "kidney", "flchain"} {
		t.Run(name, func(t *testing.T) {
			g := loadGolden(t, name)
			s := loadSummaryGolden(t, name)
			res, err := FitCox(loadCSV(t, g.File, g.Covariates), CoxOptions{Ties: TiesEfron, Covariates: g.Covariates}, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkVec(t, "exp_coef", res.ExpCoef, s.Cox.ExpCoef, 1e-6, 0)
			checkVec(t, "exp_coef_lower", res.ExpCoefLower, s.Cox.ExpCoefLower, 1e-5, 0)
			checkVec(t, "exp_coef_upper", res.ExpCoefUpper, s.Cox.ExpCoefUpper, 1e-5, 0)
			checkVec(t, "z", res.Z, s.Cox.Z, 1e-5, 1e-9)
			checkVec(t, "p", res.P, s.Cox.P, 1e-4, 1e-12)
			if res.Conf != 0.95 || res.LRTest == nil || res.LRTest.DF != s.Cox.LRDF ||
				!closeRel(res.LRTest.ChiSq, s.Cox.LRChiSq, 1e-8, 0) || !closeRel(res.LRTest.P, s.Cox.LRP, 1e-6, 1e-15) {
				t.Errorf("conf %v, lr test %+v, R chisq %v df %d p %v", res.Conf, res.LRTest, s.Cox.LRChiSq, s.Cox.LRDF, s.Cox.LRP)
			}
		})
	}
}

// TestDiscreteMLEWaldGoldenR checks the non-private discrete fit's standard
// errors (observed information), z, p and Wald limits against R: for the
// logit link against summary.glm and confint.default (observed and
// expected information coincide), for cloglog and probit against the
// observed information of the same likelihood (optimHess in the script;
// summary.glm prints the expected one, which differs by a few per cent).
func TestDiscreteMLEWaldGoldenR(t *testing.T) {
	t.Parallel() // heavy: runs beside the other heavy tests
	for _, name := range []string{"lung", "kidney", "flchain"} {
		g := loadGolden(t, name)
		s := loadSummaryGolden(t, name)
		data := loadCSV(t, g.File, g.Covariates)
		for _, want := range s.Discrete {
			t.Run(name+"/"+string(want.Link), func(t *testing.T) {
				t.Parallel() // the fits are independent (goldenMLE: each once per binary)
				res := goldenMLE(t, g, data, want.Link)
				if res.IntervalMethod != IntervalWald {
					t.Fatalf("interval method %q", res.IntervalMethod)
				}
				e := g.Knots
				se := append(append([]float64(nil), res.AlphaSE...), res.BetaSE...)
				// optimHess differentiates the gradient numerically: 1e-5
				checkVec(t, "se (observed)", se, want.SEObserved, 1e-5, 0)
				if want.Link == LinkLogit {
					checkVec(t, "se (summary.glm)", se, want.SEExpected, 1e-6, 0)
					checkVec(t, "beta z", res.BetaZ, want.Z[e:], 1e-5, 1e-9)
					checkVec(t, "beta p", res.BetaP, want.P[e:], 1e-4, 1e-12)
					checkVec(t, "alpha lower", res.AlphaLower, want.Lower[:e], 1e-6, 1e-5)
					checkVec(t, "alpha upper", res.AlphaUpper, want.Upper[:e], 1e-6, 1e-5)
					checkVec(t, "beta lower", res.BetaLower, want.Lower[e:], 1e-6, 1e-5)
					checkVec(t, "beta upper", res.BetaUpper, want.Upper[e:], 1e-6, 1e-5)
				}
			})
		}
	}
}
