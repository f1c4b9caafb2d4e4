package weibull

import "math"

// WeibullScaleLimitMax is the largest scale limit (normalised units,
// t / time_max) a Weibull release publishes. The LSP interval's scale comes
// from matching the released tau/delta over candidate shapes; near shape 0
// the scale is not identified and the search runs to its bracket (exp(50),
// about 5e21): such a limit is an artefact of the search, not a statement
// about the data. 1e15 time_max is past any meaningful time for any time
// unit from a second up, so a limit above it is published as null with
// WeibullScaleUnboundedNote: the release does not bound the scale there
// (and, symmetrically, a lower limit below 1e-15 time_max as 0).
const WeibullScaleLimitMax = 1e15

// WeibullScaleUnboundedNote is the scale_limit_note of a release whose
// scale limit exceeded WeibullScaleLimitMax.
const WeibullScaleUnboundedNote = "scale_upper is null: the release does not bound the scale from above " +
	"(the limit exceeded 1e15 time_max, where the scale is not identified by the data; read it as unbounded)"

// WeibullScaleUnidentifiedNote is the note when the interval lies outside
// [1/WeibullScaleLimitMax, WeibullScaleLimitMax] (both limits null).
const WeibullScaleUnidentifiedNote = "scale_lower and scale_upper are null: the interval lay outside [1e-15, 1e15] time_max " +
	"(the release does not identify the scale)"

// WeibullScaleLowerZeroNote is the note when the lower limit was below
// 1/WeibullScaleLimitMax: it is published as 0 (a true, uninformative
// bound: the scale is positive).
const WeibullScaleLowerZeroNote = "scale_lower is 0: the limit was below 1e-15 time_max (the release does not bound the scale from below)"

// BoundScaleLimits keeps the scale limits of a release within
// [1/WeibullScaleLimitMax, WeibullScaleLimitMax] time_max, where they can
// mean something: an upper limit above the maximum is NaN (null in JSON:
// unbounded), a lower limit below its reciprocal is 0, and an interval
// entirely outside the range is NaN on both sides; note says which ("" when
// nothing was changed).
func (iv WeibullInterval) BoundScaleLimits() (out WeibullInterval, note string) {
	out = iv
	lo, hi := 1/WeibullScaleLimitMax, WeibullScaleLimitMax
	switch {
	case out.ScaleUpper < lo || out.ScaleLower > hi:
		out.ScaleLower, out.ScaleUpper, note = math.NaN(), math.NaN(), WeibullScaleUnidentifiedNote
	case out.ScaleUpper > hi && out.ScaleLower < lo:
		out.ScaleLower, out.ScaleUpper, note = 0, math.NaN(), WeibullScaleLowerZeroNote+"; "+WeibullScaleUnboundedNote
	case out.ScaleUpper > hi:
		out.ScaleUpper, note = math.NaN(), WeibullScaleUnboundedNote
	case out.ScaleLower < lo:
		out.ScaleLower, note = 0, WeibullScaleLowerZeroNote
	}
	return out, note
}
