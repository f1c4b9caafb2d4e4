// Package jsonrec is the strict JSON reader of dpsurv's JSON input rows
// (RFC 8259, docs/producers.md): SplitArray splits a message that is one
// array into its rows, ParseSlots reads a row's configured keys into
// Values (slices of the row, no copy), ParseObject reads a whole row for
// a dead letter, every value bounded. It knows nothing of dpsurv's
// fields: schemas' Validator.DecodeJSON gives the Values their meaning.
//
// Contract:
//
//   - Every value is checked against the grammar (numbers, literals,
//     strings and their escapes, nesting up to 64 deep), also the values
//     of keys that are not kept; no input panics.
//   - A key twice in an object is a DupKeyError, a row that is not an
//     object a NotObjectError (the row's schema is wrong); any other error
//     is undecodable text.
//   - A string holding invalid UTF-8 or an escaped lone surrogate is a
//     Bad Value (BadText in ParseObject), never silently rewritten.
//   - FuzzParseSlots checks the grammar against encoding/json.
package jsonrec
