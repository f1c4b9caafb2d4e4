package gofiles

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// MakeVar returns the value of the module Makefile's `name := value` line
// (the value as written, unexpanded); a missing Makefile or line fails the
// test. Tests that check the tree against the Makefile (the packages run
// sequentially, the linker flags) read it here.
func MakeVar(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(Root(t), "Makefile")
	mk, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` := (.*)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatalf("%s has no %s := line", path, name)
	}
	return string(m[1])
}
