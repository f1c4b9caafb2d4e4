package app_test

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/internal/doctable"
	"github.com/dpsurv/dpsurv/schemas"
)

// Every JSON field of the privacy statement document the service publishes
// on the fit topic (app.StatementDocument and the statement's parts) is
// named in the field table of docs/analysts.md's
// dpsurv.patient_statement.v1 section, and the section names the schema
// and key the service uses.
func TestAnalystsDocNamesEveryStatementField(t *testing.T) {
	t.Parallel()
	sec := doctable.Section(t, "../docs/analysts.md", "## `"+schemas.PatientStatementSchemaName+"`: the per-patient privacy statement (JSON)")
	if !strings.Contains(sec, "`"+schemas.PatientStatementKey+"`") {
		t.Errorf("the section does not name the key %q", schemas.PatientStatementKey)
	}
	named := doctable.Names(sec)
	var missing []string
	for _, v := range []any{app.StatementDocument{}, app.PatientStatement{}, app.StatementField{}, app.StatementAggregate{}} {
		rt := reflect.TypeOf(v)
		for i := 0; i < rt.NumField(); i++ {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" {
				t.Fatalf("%s.%s has no JSON name", rt.Name(), rt.Field(i).Name)
			}
			if !named[name] {
				missing = append(missing, rt.Name()+"."+name)
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("statement fields not in docs/analysts.md's %s table: %v", schemas.PatientStatementSchemaName, missing)
	}
}
