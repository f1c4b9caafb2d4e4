package dockercheck

import (
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"strings"
)

// BinaryReport is what an ELF executable reveals about how it was built.
type BinaryReport struct {
	Interp      bool // has a PT_INTERP program header (needs a dynamic loader)
	Dynamic     bool // has a PT_DYNAMIC header or a .dynamic section
	SymbolTable bool // has .symtab (not stripped with -s)
	DWARF       bool // has .debug_* / .zdebug_* sections (not stripped with -w)
	// Settings are the Go build settings embedded in the binary
	// (CGO_ENABLED, -trimpath, -ldflags, GOOS, ...).
	Settings map[string]string
	// GoVersion is the toolchain that built the binary.
	GoVersion string
}

// Static reports whether the binary runs without a dynamic loader or shared
// libraries, as a distroless/static or scratch image requires.
func (r BinaryReport) Static() bool { return !r.Interp && !r.Dynamic }

// InspectBinary reads the ELF headers and Go build information of path.
func InspectBinary(path string) (BinaryReport, error) {
	f, err := elf.Open(path)
	if err != nil {
		return BinaryReport{}, fmt.Errorf("inspect binary: %w", err)
	}
	defer f.Close()
	var rep BinaryReport
	for _, p := range f.Progs {
		switch p.Type {
		case elf.PT_INTERP:
			rep.Interp = true
		case elf.PT_DYNAMIC:
			rep.Dynamic = true
		}
	}
	for _, s := range f.Sections {
		switch {
		case s.Name == ".dynamic" || s.Name == ".interp":
			rep.Dynamic = rep.Dynamic || s.Name == ".dynamic"
			rep.Interp = rep.Interp || s.Name == ".interp"
		case s.Name == ".symtab":
			rep.SymbolTable = true
		case strings.HasPrefix(s.Name, ".debug_") || strings.HasPrefix(s.Name, ".zdebug_"):
			rep.DWARF = true
		}
	}
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return rep, fmt.Errorf("inspect binary: build info: %w", err)
	}
	rep.GoVersion = bi.GoVersion
	rep.Settings = map[string]string{}
	for _, s := range bi.Settings {
		rep.Settings[s.Key] = s.Value
	}
	return rep, nil
}
