// Package sbom writes a CycloneDX 1.5 JSON software bill of materials of
// the Go module graph: every module of `go list -m -json all` is a
// component with its package URL and go.sum hash; the modules whose
// packages are linked into the shipped binary (`go list -deps` of its main
// package) have scope "required", the others (tests, tools) "optional".
// The main module is the BOM's metadata component, Apache-2.0 licensed.
package sbom

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"time"
)

// Module is one entry of `go list -m -json all`.
type Module struct {
	Path     string
	Version  string
	Main     bool
	Indirect bool
	Sum      string
	Replace  *Module
}

// List runs `go list -m -json all` in dir and returns the module graph.
func List(ctx context.Context, goCmd, dir string) ([]Module, error) {
	out, err := run(ctx, goCmd, dir, "list", "-m", "-json", "all")
	if err != nil {
		return nil, fmt.Errorf("go list -m: %w", err)
	}
	var mods []Module
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var m Module
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decode go list -m output: %w", err)
		}
		mods = append(mods, m)
	}
	return mods, nil
}

// Linked returns the paths of the modules whose packages pkg imports,
// directly or not (the modules compiled into its binary).
func Linked(ctx context.Context, goCmd, dir, pkg string) (map[string]bool, error) {
	out, err := run(ctx, goCmd, dir, "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", pkg)
	if err != nil {
		return nil, fmt.Errorf("go list -deps %s: %w", pkg, err)
	}
	linked := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			linked[l] = true
		}
	}
	return linked, nil
}

func run(ctx context.Context, goCmd, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// BOM is the subset of CycloneDX 1.5 that this package writes.
type BOM struct {
	BOMFormat    string       `json:"bomFormat"`
	SpecVersion  string       `json:"specVersion"`
	Version      int          `json:"version"`
	Metadata     Metadata     `json:"metadata"`
	Components   []Component  `json:"components"`
	Dependencies []Dependency `json:"dependencies"`
}

// Metadata says what the BOM describes and what made it.
type Metadata struct {
	Timestamp string    `json:"timestamp"`
	Tools     Tools     `json:"tools"`
	Component Component `json:"component"`
}

// Tools lists the generator.
type Tools struct {
	Components []Component `json:"components"`
}

// Component is one module (or the application itself).
type Component struct {
	Type       string      `json:"type"`
	BOMRef     string      `json:"bom-ref,omitempty"`
	Name       string      `json:"name"`
	Version    string      `json:"version,omitempty"`
	PURL       string      `json:"purl,omitempty"`
	Scope      string      `json:"scope,omitempty"`
	Licenses   []LicenseOf `json:"licenses,omitempty"`
	Properties []Property  `json:"properties,omitempty"`
}

// LicenseOf wraps an SPDX license id.
type LicenseOf struct {
	License License `json:"license"`
}

// License is an SPDX license id.
type License struct {
	ID string `json:"id"`
}

// Property is a name/value pair.
type Property struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Dependency says which components a component depends on.
type Dependency struct {
	Ref       string   `json:"ref"`
	DependsOn []string `json:"dependsOn"`
}

// PURL is the package URL of a Go module version.
func PURL(path, version string) string {
	if version == "" {
		return "pkg:golang/" + path
	}
	return "pkg:golang/" + path + "@" + version
}

// Options are the BOM's fixed inputs.
type Options struct {
	// Version is the main module's release version ("0.1.0"); its
	// component gets "v0.1.0", as the git tag.
	Version string
	// Time stamps the BOM (the caller passes SOURCE_DATE_EPOCH for a
	// reproducible one).
	Time time.Time
}

// Build returns the BOM of mods; linked marks the modules compiled into the
// binary.
func Build(mods []Module, linked map[string]bool, opt Options) (*BOM, error) {
	var main *Module
	var comps []Component
	for i := range mods {
		m := mods[i]
		if m.Main {
			main = &mods[i]
			continue
		}
		path, ver, sum := m.Path, m.Version, m.Sum
		if m.Replace != nil {
			path, ver, sum = m.Replace.Path, m.Replace.Version, m.Replace.Sum
		}
		scope := "optional"
		if linked[m.Path] {
			scope = "required"
		}
		c := Component{Type: "library", BOMRef: PURL(path, ver), Name: path, Version: ver, PURL: PURL(path, ver), Scope: scope}
		if sum != "" {
			c.Properties = append(c.Properties, Property{Name: "dpsurv:go:sum", Value: sum})
		}
		if m.Replace != nil {
			c.Properties = append(c.Properties, Property{Name: "dpsurv:go:replaces", Value: m.Path + "@" + m.Version})
		}
		comps = append(comps, c)
	}
	if main == nil {
		return nil, errors.New("sbom: no main module in the module list")
	}
	sort.Slice(comps, func(i, j int) bool { return comps[i].BOMRef < comps[j].BOMRef })
	ver := ""
	if opt.Version != "" {
		ver = "v" + strings.TrimPrefix(opt.Version, "v")
	}
	app := Component{Type: "application", BOMRef: PURL(main.Path, ver), Name: main.Path, Version: ver,
		PURL: PURL(main.Path, ver), Licenses: []LicenseOf{{License{ID: "Apache-2.0"}}}}
	dep := Dependency{Ref: app.BOMRef, DependsOn: []string{}}
	for _, c := range comps {
		if c.Scope == "required" {
			dep.DependsOn = append(dep.DependsOn, c.BOMRef)
		}
	}
	return &BOM{
		BOMFormat: "CycloneDX", SpecVersion: "1.5", Version: 1,
		Metadata: Metadata{
			Timestamp: opt.Time.UTC().Format(time.RFC3339),
			Tools:     Tools{Components: []Component{{Type: "application", Name: "dpsurv-sbom", Version: ver}}},
			Component: app,
		},
		Components:   comps,
		Dependencies: []Dependency{dep},
	}, nil
}
