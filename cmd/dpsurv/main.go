package main

import (
	"os"

	"github.com/dpsurv/dpsurv/cmd/dpsurv/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
