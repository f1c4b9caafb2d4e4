//go:build tools

// This file pins the project's dependencies for go mod tidy while packages
// that use them are written.
package tools

import (
	_ "github.com/apache/arrow/go/v15/arrow"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/segmentio/kafka-go"
	_ "github.com/twmb/franz-go/pkg/kfake"
	_ "go.uber.org/zap"
	_ "golang.org/x/crypto/blake2b"
	_ "gonum.org/v1/gonum/optimize"
	_ "gonum.org/v1/plot"
	_ "gopkg.in/yaml.v3"
)
