package aggregators_test

import (
	"reflect"
	"sort"
	"testing"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/internal/doctable"
)

// Every field a fit document can carry (aggregators.FitMessage with its km,
// weibull and discrete parts) is named in the field table of
// docs/analysts.md, so an analyst can look up any key a document has (on
// the old main: contribution and the discrete release's covariates,
// fallback, intervals, knots, link, max_records and scaling were missing).
func TestAnalystsDocNamesEveryFitField(t *testing.T) {
	named := doctable.Names(doctable.Section(t, "../docs/analysts.md", "## `dpsurv.fit.v1`: the releases (JSON)"))
	fields := doctable.JSONFields(reflect.TypeOf(aggregators.FitMessage{}))
	if len(fields) < 60 {
		t.Fatalf("found %d fit fields; the reflection walk is broken", len(fields))
	}
	var missing []string
	for _, f := range fields {
		if !named[f] {
			missing = append(missing, f)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("fit fields not in docs/analysts.md's dpsurv.fit.v1 table: %v", missing)
	}
}
