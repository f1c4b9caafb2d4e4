// Package audittest reads back an audit's JSON report (`dpsurv audit
// --json`, audit.Report.WriteJSON) the way the tests of the audit and of
// the command check it: every number nullable, so that a null (NaN or
// ±Inf) is told apart from a zero. Test support only: no production code
// imports it.
package audittest

import (
	"encoding/json"
	"testing"
)

// JSONReport is the part of an audit's JSON report the tests check; a
// number is nil where the report has null, or lacks the field.
type JSONReport struct {
	Mechanism string `json:"mechanism"`
	Attack    struct {
		Precision           map[string]*float64 `json:"precision"`
		PrecisionNonPrivate map[string]*float64 `json:"precision_nonprivate"`
	} `json:"attack"`
	Utility struct {
		KL           *float64            `json:"kl"`
		MAE          *float64            `json:"mae"`
		LogRank      map[string]*float64 `json:"logrank"`
		MAEPerRecord *float64            `json:"mae_per_record"`
		Joined       *int                `json:"joined"`
	} `json:"utility"`
}

// Decode decodes an audit's JSON report, failing the test (with the text)
// if it does not parse.
func Decode(t testing.TB, report []byte) JSONReport {
	t.Helper()
	var r JSONReport
	if err := json.Unmarshal(report, &r); err != nil {
		t.Fatalf("audit report: %v: %s", err, report)
	}
	return r
}
