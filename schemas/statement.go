package schemas

// The per-patient privacy statement (app.Statement, `dpsurv statement`) is
// published on the fit topic beside the releases, as one JSON document:
// schema PatientStatementSchemaName, kind PatientStatementKind, message key
// PatientStatementKey. A fit release's key is
// <aggregate>/<window_start_unix>/<cohort>, which always holds a '/': the
// statement's key holds none, so the two never collide, and a compacted fit
// topic keeps the newest statement.
const (
	PatientStatementSchemaName = "dpsurv.patient_statement.v1"
	PatientStatementKind       = "patient_statement"
	PatientStatementKey        = "patient_statement"
)

// IsPatientStatementKey reports whether a fit-topic message key is the
// per-patient statement's (not a release's).
func IsPatientStatementKey(key []byte) bool { return string(key) == PatientStatementKey }
