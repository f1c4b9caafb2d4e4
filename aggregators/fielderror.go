package aggregators

import (
	"errors"
	"fmt"
)

// Sentinels of the config errors: a FieldError's Err wraps one of them, so
// callers and tests can tell the kind of problem with errors.Is.
var (
	// ErrUnknownField: a key the aggregate's kind does not have.
	ErrUnknownField = errors.New("unknown")
	// ErrRequired: a field that must be set is missing.
	ErrRequired = errors.New("required")
	// ErrWrongType: a value of the wrong YAML type (a string for a
	// number, a fraction for an integer).
	ErrWrongType = errors.New("wrong type")
	// ErrInvalid: a value of the right type out of its range or set.
	ErrInvalid = errors.New("invalid value")
)

// FieldError is a config error of one field. Path is the field's dotted
// path ("params.bin_width", "window.size"), relative to the aggregate when
// aggregators returns it; callers prefix it with Prefix. Error() is
// "path: err".
type FieldError struct {
	Path string
	Err  error
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Err.Error() }

// Unwrap returns Err (its sentinel is then visible to errors.Is).
func (e *FieldError) Unwrap() error { return e.Err }

// sentinelError carries a message of its own and matches a sentinel with
// errors.Is without repeating the sentinel's text.
type sentinelError struct {
	sentinel error
	msg      string
}

func (e *sentinelError) Error() string        { return e.msg }
func (e *sentinelError) Is(target error) bool { return target == e.sentinel }

// fieldErr is a FieldError at path whose message is the formatted text and
// which matches sentinel.
func fieldErr(path string, sentinel error, format string, a ...any) *FieldError {
	return &FieldError{Path: path, Err: &sentinelError{sentinel: sentinel, msg: fmt.Sprintf(format, a...)}}
}

// Prefix returns err with every FieldError in it (itself, or the errors
// it joins) moved under prefix: "params.x" under "aggregators[0]" becomes
// "aggregators[0].params.x". Other errors are prefixed as "prefix: err".
func Prefix(prefix string, err error) error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs := j.Unwrap()
		out := make([]error, len(errs))
		for i, e := range errs {
			out[i] = Prefix(prefix, e)
		}
		return errors.Join(out...)
	}
	if fe, ok := err.(*FieldError); ok {
		return &FieldError{Path: prefix + "." + fe.Path, Err: fe.Err}
	}
	return &FieldError{Path: prefix, Err: err}
}

// Errors splits an error joined by errors.Join into its parts (itself when
// it joins nothing).
func Errors(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
