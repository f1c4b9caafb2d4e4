// Package archtest holds tests of the repository's structure (which
// packages may import what); it has no production code.
package archtest
