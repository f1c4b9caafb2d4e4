package app_test

import (
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/schemas"
)

// Every JSON field of the privacy statement document the service publishes
// on the fit topic (app.StatementDocument and the statement's parts) is
// named in the field table of docs/analysts.md's
// dpsurv.patient_statement.v1 section, and the section names the schema
// and key the service uses.
func TestAnalystsDocNamesEveryStatementField(t *testing.T) {
	doc, err := os.ReadFile("../docs/analysts.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "## `"+schemas.PatientStatementSchemaName+"`: the per-patient privacy statement (JSON)")
	if !ok {
		t.Fatal("docs/analysts.md has no dpsurv.patient_statement.v1 section")
	}
	if i := strings.Index(sec, "\n## "); i >= 0 {
		sec = sec[:i]
	}
	if !strings.Contains(sec, "`"+schemas.PatientStatementKey+"`") {
		t.Errorf("the section does not name the key %q", schemas.PatientStatementKey)
	}
	named := map[string]bool{}
	tick := regexp.MustCompile("`([a-z_0-9.]+)`")
	for _, l := range strings.Split(sec, "\n") {
		if !strings.HasPrefix(l, "| ") {
			continue
		}
		first := strings.SplitN(l, "|", 3)[1]
		for _, m := range tick.FindAllStringSubmatch(first, -1) {
			parts := strings.Split(m[1], ".")
			named[parts[len(parts)-1]] = true
		}
	}
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
