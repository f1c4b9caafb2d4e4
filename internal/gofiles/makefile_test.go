package gofiles

import (
	"strings"
	"testing"
)

// MakeVar returns a variable's value as written (unexpanded), and a name
// does not match a longer one that starts with it (SEQUENTIAL is not
// SEQUENTIAL_RE, which the Makefile derives from it).
func TestMakeVar(t *testing.T) {
	if got := MakeVar(t, "VERSION"); !strings.HasPrefix(got, "$(") {
		t.Errorf("MakeVar(VERSION) = %q, want the unexpanded $(...) the Makefile writes", got)
	}
	seq, re := MakeVar(t, "SEQUENTIAL"), MakeVar(t, "SEQUENTIAL_RE")
	if strings.Contains(seq, "$(") || !strings.Contains(re, "$(SEQUENTIAL)") {
		t.Errorf("MakeVar(SEQUENTIAL) = %q, MakeVar(SEQUENTIAL_RE) = %q: mixed up", seq, re)
	}
}
