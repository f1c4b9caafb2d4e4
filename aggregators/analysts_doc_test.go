package aggregators_test

import (
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/aggregators"
)

// jsonFields returns the JSON names of t's fields, embedded structs
// flattened (as encoding/json does).
func jsonFields(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

// Every field a fit document can carry (aggregators.FitMessage with its km,
// weibull and discrete parts) is named in the field table of
// docs/analysts.md, so an analyst can look up any key a document has (on
// the old main: contribution and the discrete release's covariates,
// fallback, intervals, knots, link, max_records and scaling were missing).
func TestAnalystsDocNamesEveryFitField(t *testing.T) {
	doc, err := os.ReadFile("../docs/analysts.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "## `dpsurv.fit.v1`: the releases (JSON)")
	if !ok {
		t.Fatal("docs/analysts.md has no dpsurv.fit.v1 section")
	}
	if i := strings.Index(table, "\n## "); i >= 0 {
		table = table[:i]
	}
	named := map[string]bool{}
	tick := regexp.MustCompile("`([a-z_0-9]+)")
	for _, l := range strings.Split(table, "\n") {
		if !strings.HasPrefix(l, "| ") {
			continue
		}
		first := strings.SplitN(l, "|", 3)[1]
		for _, m := range tick.FindAllStringSubmatch(first, -1) {
			named[m[1]] = true
		}
	}
	fields := jsonFields(reflect.TypeOf(aggregators.FitMessage{}))
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
