// Command dpsurv-service is the slim service binary of the container image
// variant built with --build-arg CMD=./cmd/dpsurv-service: `dpsurv run` and
// `dpsurv version` only, without the embedded broker, the plotting stack
// and the batch commands (docs/deploy.md has the measured sizes).
package main

import (
	"os"

	"github.com/dpsurv/dpsurv/cmd/dpsurv-service/servicecmd"
)

func main() { os.Exit(servicecmd.Main(os.Args[1:], os.Stdout, os.Stderr)) }
