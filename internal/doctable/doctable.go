package doctable

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// Section is the text of the section of the Markdown file at path that
// starts with heading (a whole "## ..." line), up to the next "## "
// heading; a file that cannot be read or has no such heading fails the
// test.
func Section(t testing.TB, path, heading string) string {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), heading)
	if !ok {
		t.Fatalf("%s has no section %q", path, heading)
	}
	if i := strings.Index(sec, "\n## "); i >= 0 {
		sec = sec[:i]
	}
	return sec
}

// tick matches a back-quoted name at its opening quote: the closing quote
// is not required, so "`logrank: {chisq, df}`" names logrank.
var tick = regexp.MustCompile("`([a-z_0-9.]+)")

// Names are the names back-quoted in the first column of the table rows
// ("| ..." lines) of sec; a dotted name ("statement.central") names its
// last part.
func Names(sec string) map[string]bool {
	named := map[string]bool{}
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
	return named
}

// JSONFields are the JSON names of the fields of typ (a struct or a
// pointer to one), embedded structs without a JSON name flattened as
// encoding/json does; unexported and "-" fields are left out, and a field
// without a tag is named by its Go name.
func JSONFields(typ reflect.Type) []string {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	var out []string
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" {
			out = append(out, JSONFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}
