// Package csvrec is the CSV record layer of dpsurv's file readers: a
// Chunker cuts a reader into runs of complete records (bounded buffers,
// reused), Header, Line, ScanLine and ParseRecord split them into fields,
// ParseFloat reads a number cell with an exact fast path, and ScanColumn
// streams one column. It knows nothing of dpsurv's schemas: schemas'
// ReadFile and ReadTable validate the fields (the null cells "" and NA,
// the lenient cell rules) on top of it.
//
// Contract:
//
//   - The records are exactly those encoding/csv gives with LazyQuotes and
//     a variable field count: empty lines skipped, \r\n normalised, quotes
//     only at the start of a field, "" inside quotes, a bare quote kept
//     literally. TestScanCSVColumnMatchesEncodingCSV and FuzzScanColumn
//     check it against encoding/csv.
//   - The raw text held is a few chunks whatever the file size: a Chunker
//     hands out at most its InFlight chunks, each given back with Put.
//   - ParseFloat gives strconv.ParseFloat's value bit for bit (surrounding
//     space allowed); no input panics.
package csvrec
