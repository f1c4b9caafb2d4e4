package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/dpsurv/dpsurv/buildinfo"
)

// runVersion prints the build's version line, or its JSON object with
// --json (the labels of the dpsurv_build_info metric).
func runVersion(_ context.Context, env Env, args []string) error {
	fs := newFlags("version", env)
	asJSON := fs.Bool("json", false, "print {\"version\",\"revision\",\"goversion\"} as JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	in := buildinfo.Get()
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(in)
	}
	_, err := fmt.Fprintln(env.Stdout, in)
	return err
}
