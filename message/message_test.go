package message

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

func TestMark(t *testing.T) {
	base := &fs.PathError{Op: "read", Path: "x", Err: fs.ErrNotExist}
	wrapped := fmt.Errorf("kafka source in: read: %w", base)
	m := Mark(wrapped, ErrNotConnected)
	if m.Error() != wrapped.Error() {
		t.Errorf("text %q, want %q unchanged", m.Error(), wrapped.Error())
	}
	if !errors.Is(m, ErrNotConnected) || !errors.Is(m, fs.ErrNotExist) {
		t.Errorf("errors.Is sees sentinel %v, cause %v; want both", errors.Is(m, ErrNotConnected), errors.Is(m, fs.ErrNotExist))
	}
	if errors.Is(m, ErrFatal) || errors.Is(m, ErrEndOfInput) || errors.Is(m, ErrTooLarge) {
		t.Error("a marked error matches a sentinel it was not marked with")
	}
	var pe *fs.PathError
	if !errors.As(m, &pe) || pe != base {
		t.Error("errors.As does not reach the cause")
	}
	if Mark(nil, ErrFatal) != nil {
		t.Error("Mark(nil) != nil")
	}
	if again := Mark(m, ErrNotConnected); again != m {
		t.Error("marking twice with the same sentinel wraps again")
	}
	if w := fmt.Errorf("ctx: %w", Mark(wrapped, ErrFatal)); !errors.Is(w, ErrFatal) {
		t.Error("the mark is lost under a further wrap")
	}
}
