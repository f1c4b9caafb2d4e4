package app

import (
	"github.com/apache/arrow/go/v15/arrow"

	"github.com/dpsurv/dpsurv/schemas"
)

// goodRows decodes an input message in format (arrow | json) with v and
// returns its good rows (the aggregators' input; the bad rows are the
// sanitizing stream's to dead-letter).
func goodRows(v *schemas.Validator, format string) func([]byte) arrow.Record {
	if format == "json" {
		return func(b []byte) arrow.Record { good, _ := v.DecodeJSON(b); return good }
	}
	return func(b []byte) arrow.Record { good, _ := v.DecodeIPC(b); return good }
}
