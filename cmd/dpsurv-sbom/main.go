// Command dpsurv-sbom writes the CycloneDX JSON bill of materials of the
// dpsurv module (make sbom): run it from the module root.
//
//	go run ./cmd/dpsurv-sbom -version "$(cat VERSION)" -o bin/dpsurv.cdx.json
//
// The timestamp is SOURCE_DATE_EPOCH when set (a reproducible BOM), else
// the current time.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/dpsurv/dpsurv/cmd/dpsurv-sbom/sbom"
)

func main() {
	out := flag.String("o", "-", "output file (- for stdout)")
	version := flag.String("version", "", "release version of the main module (the VERSION file)")
	pkg := flag.String("binary", "./cmd/dpsurv", "main package whose linked modules are scope required")
	flag.Parse()
	if err := run(*out, *version, *pkg); err != nil {
		fmt.Fprintln(os.Stderr, "dpsurv-sbom:", err)
		os.Exit(1)
	}
}

func run(out, version, pkg string) error {
	ctx := context.Background()
	mods, err := sbom.List(ctx, "go", ".")
	if err != nil {
		return err
	}
	linked, err := sbom.Linked(ctx, "go", ".", pkg)
	if err != nil {
		return err
	}
	t := time.Now()
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH: %w", err)
		}
		t = time.Unix(sec, 0)
	}
	bom, err := sbom.Build(mods, linked, sbom.Options{Version: version, Time: t})
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(bom, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if out == "-" {
		_, err = os.Stdout.Write(b)
		return err
	}
	return os.WriteFile(out, b, 0o644)
}
