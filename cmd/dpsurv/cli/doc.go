// Package cli wires the dpsurv subcommands (process wiring only).
package cli
