// Package doctable reads the field tables of the repository's Markdown
// (docs/analysts.md's sections on the fit and statement documents) so that
// a test can check that every JSON field a document carries is named in
// its table. It is test support: only tests import it.
package doctable
