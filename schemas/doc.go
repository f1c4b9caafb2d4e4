// Package schemas defines the Arrow schemas of dpsurv's topics and files
// (tte.v1 input, tte.sanitized.v1 output, the km curve table
// dpsurv.fit.km.v1), their metadata, reason codes and dead letters, and the
// validation that splits a batch into good rows in canonical form and
// dead-letter rows with a reason, with its entry point per format
// (DecodeIPC and DecodeJSON per Kafka message, ReadFile and ReadTable per
// file). The codecs it validates on top of live in codecs/arrowipc (Arrow
// IPC, with the flatbuffer verifier and the zero-copy loader),
// codecs/csvrec (CSV records) and codecs/jsonrec (strict JSON rows).
// Decoding and validation never panic on input.
//
// Contract:
//
//   - This package is the one owner of dpsurv's wire formats: schema names,
//     the metadata keys (Meta*), the sanitized schema (SanitizedSchema, used
//     by the sanitizer chain and the baselines), the fit message's schema
//     name, the km curve table (KMCurveSchema), the km curve's JSON
//     (KMCurve, used by the fit topic and `dpsurv fit km`) and R's NA in
//     JSON (NullableFloat: NaN and ±Inf as null). Other packages import
//     these rather than repeat them.
//   - Canonical records (CanonicalSchema) are what sanitizers and aggregators
//     read: id utf8, time float64 (finite, >= 0, not clamped), event bool,
//     cohort dictionary<int32, utf8> whose dictionary is exactly
//     Spec.Cohorts (index == label code), one float64 per covariate in Spec
//     order, then site (utf8, or dictionary<int32, utf8> of the entries the
//     good rows use when the input's site is a dictionary: an entry is never
//     copied per row) and observed_at timestamp[us, UTC] when the input has
//     them and the Spec does not skip them, or, all null, when the Spec
//     makes them nullable and the input lacks them. No column has nulls but
//     a nullable site or observed_at. Ids are unique within a message
//     (within a file for ReadFile). Good rows keep their input order.
//   - Memory follows the bytes on the wire: a column the Spec does not
//     read is never materialised; dictionaries count against the decode
//     bound (4 bytes an entry, from the batch headers, before decoding);
//     JSON keeps the configured keys only, as slices of one copy of the
//     message, and counts against the same bound; a dead letter's row
//     carries the configured fields (MaxDeadFieldBytes each) and a
//     MaxDeadValueBytes prefix of anything else.
//   - Every input row ends up either in the canonical record or in exactly
//     one DeadLetter; nothing is dropped silently. Reason codes are the
//     Reason* constants and are stable. A whole message that cannot be used
//     (undecodable bytes; for DecodeIPC also a schema that does not fit
//     tte.v1) gives one DeadLetter with RowIndex -1 and the raw bytes.
//     Row-level checks run in the order id, time, event, cohort, covariates,
//     site, observed_at; the first failure names the reason. Only good rows
//     claim ids: later good rows with a claimed id are duplicate_id.
//   - Dead letters carry raw patient values (Row, Raw, Detail): the
//     dead-letter sink is as sensitive as the input topic. Nothing in this
//     package logs values.
//   - Decoding is hardened against hostile bytes: the IPC framing and
//     flatbuffer metadata are verified before Arrow reads them (forged
//     lengths and cyclic schemas would otherwise be fatal), decoded memory is
//     bounded, and buffers are checked against lengths before they are read
//     (codecs/arrowipc). FuzzDecodeIPC and FuzzDecodeJSON exercise this with
//     the validation; the codecs' own fuzz targets exercise them alone.
//   - ReadTable reads a whole file into Go columns (Table), the fits'
//     input: exactly the rows and dead-letter reasons of ReadFile, counted
//     instead of kept. Arrow IPC files are loaded without copying their
//     buffers when their layout allows (zero-copy, arrowipc.OpenFile), with the
//     same verification.
//   - Records are reference counted: every returned record is owned by the
//     caller (Release it), except the one ReadFile passes to its callback,
//     which is released when the callback returns. A Validator is safe for
//     concurrent use.
//   - Lenient CSV cells: numbers as strconv reads them; an empty cell and
//     "NA" are null; event accepts 0/1, 0.0/1.0 and true/false; an integer
//     cohort or id matches by its decimal text; observed_at is RFC 3339 (no
//     zone means UTC) or a date.
//   - Strict JSON (RFC 8259, docs/producers.md): a row is one object whose
//     grammar is checked; a key twice is wrong_schema; a string id with
//     invalid UTF-8 or an escaped lone surrogate is invalid_id; time and
//     covariates are JSON numbers or strings holding exactly one; event is
//     true, false, 0, 1, "0" or "1"; an integer literal cohort or id
//     matches by its decimal text. Whole-message dead letters carry the
//     rows the message declares (DeadLetter.Rows).
package schemas
