// Package datasets locates the repository's copies of the survival datasets
// (data/flchain_tte.csv, data/kidney_tte.csv, data/lung_tte.csv; see
// data/README.md for their licence and provenance) for tests. It walks up
// from the working directory to the module root; nothing outside the
// repository is read. Dir and Path locate the files; Read loads one whole
// (header and rows) so that every test parses the same bytes. A test that needs a dataset fails (never skips) when
// it is missing.
package datasets
