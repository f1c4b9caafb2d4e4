// Package dpsurv holds the release version of the module: the VERSION file
// beside this one is its single source of truth (semantic versioning,
// without the "v" of the git tag). The service's code lives in the
// packages below; see buildinfo for what a binary reports.
package dpsurv

import (
	_ "embed"
	"strings"
)

//go:embed VERSION
var versionFile string

// Version is the release version in the VERSION file ("0.1.0").
func Version() string { return strings.TrimSpace(versionFile) }
