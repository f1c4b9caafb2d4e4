// Package archtest holds tests of the repository's structure (which
// packages may import what; the README's layout table matches the tree); it has no production code.
package archtest
