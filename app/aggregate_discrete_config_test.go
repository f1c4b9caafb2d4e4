package app

import (
	"testing"

	"github.com/dpsurv/dpsurv/aggregators"
)

const discreteYAML = validYAML + `  fit_topic: ehr.tte.fits
aggregators:
  - name: discrete-daily
    kind: discrete
    epsilon: 2
    window: {size: 24h}
    params:
      covariates: [age]
      centre: [60]
      scale: [15]
      method: objective
      intervals: 100
      lambda: 0.05
      max_records: 50000
ledger:
  file: /var/lib/dpsurv/ledger.jsonl
  budget: {stream: 20}
`

func TestParseDiscreteAggregatorConfig(t *testing.T) {
	t.Parallel()
	_, acs := aggregatorConfigs(t, discreteYAML)
	p, _ := acs[0].Params.(aggregators.DiscreteParams)
	if acs[0].Kind != "discrete" || p.Method != "objective" || p.Intervals != 100 || p.Lambda != 0.05 || p.MaxRecords != 50000 ||
		len(p.Covariates) != 1 || p.Centre[0] != 60 || p.Scale[0] != 15 || len(acs[0].Covariates) != 1 {
		t.Fatalf("parsed %+v", acs[0])
	}
	if err := acs[0].Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestDiscreteAggregatorErrorsNameFieldPath(t *testing.T) {
	t.Parallel()
	wantEditsRefused(t, discreteYAML, []configEdit{
		{"no covariates", "      covariates: [age]\n", "", "aggregators[0].params.covariates: required"},
		{"covariate not in schema", "      covariates: [age]", "      covariates: [weight]", `aggregators[0].params.covariates[0]: "weight" is not in schema.covariates`},
		{"no centre", "      centre: [60]\n", "", "aggregators[0].params.centre: required"},
		{"scale length", "scale: [15]", "scale: [15, 2]", "aggregators[0].params.scale: 2 values for 1 covariates"},
		{"method", "method: objective", "method: lsp", "aggregators[0].params.method"},
		{"link", "method: objective", "method: objective\n      link: probit", "aggregators[0].params.link"},
		{"km param", "lambda: 0.05", "bin_width: 7", "aggregators[0].params.bin_width: unknown for kind discrete"},
		{"cap", "max_records: 50000", "max_records: 0.5", "aggregators[0].params.max_records: want an integer"},
		{"zero interval fraction", "max_records: 50000", "max_records: 50000\n      interval_epsilon_fraction: 0", "aggregators[0].params.interval_epsilon_fraction: "},
		{"psgld interval fraction", "method: objective", "method: psgld\n      interval_epsilon_fraction: 0.2", "aggregators[0].params.interval_epsilon_fraction: psgld releases publish no limits"},
	})
}
