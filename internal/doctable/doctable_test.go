package doctable

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"testing"
)

func TestSectionAndNames(t *testing.T) {
	md := "# doc\n\n## `a.v1`: first\n\n| field | meaning |\n|---|---|\n" +
		"| `schema`, `key` | names `not_me` |\n" +
		"| `statement.central`: `name` | dotted |\n" +
		"| km: `logrank: {chisq, df}` | open quote only |\n" +
		"plain `outside` a table\n" +
		"\n## `b.v1`: second\n\n| `other` | x |\n"
	path := filepath.Join(t.TempDir(), "doc.md")
	if err := os.WriteFile(path, []byte(md), 0o600); err != nil {
		t.Fatal(err)
	}
	named := Names(Section(t, path, "## `a.v1`: first"))
	var got []string
	for n := range named {
		got = append(got, n)
	}
	sort.Strings(got)
	want := []string{"central", "key", "logrank", "name", "schema"}
	if !slices.Equal(got, want) {
		t.Errorf("Names = %v, want %v (first column only, last dotted part, this section only)", got, want)
	}
}

type inner struct {
	B int `json:"b"`
}

type outer struct {
	A int `json:"a,omitempty"`
	inner
	C      int `json:"-"`
	D      int
	hidden int
	E      *inner `json:"e"`
}

func TestJSONFields(t *testing.T) {
	got := JSONFields(reflect.TypeOf(&outer{}))
	want := []string{"a", "b", "D", "e"}
	if !slices.Equal(got, want) {
		t.Errorf("JSONFields = %v, want %v", got, want)
	}
	_ = outer{}.hidden
}
