package servicecmd

import (
	"encoding/json"
	"fmt"
	"io"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/sanitizers"
)

// Load is what `dpsurv run` checks before it runs, the same in both
// binaries: the config, the PRF key, every Kafka secret and certificate
// file (with the PRF key's checks), and the guarantees the configured
// sanitizers state.
func Load(path string) (app.Config, []byte, []sanitizers.Guarantee, error) {
	cfg, err := app.LoadConfig(path)
	if err != nil {
		return cfg, nil, nil, err
	}
	key, err := app.ReadKeyFile(cfg.Sanitizers.KeyFile, cfg.Sanitizers.AllowGroupReadableKeyFile)
	if err != nil {
		return cfg, nil, nil, err
	}
	if err := cfg.Kafka.CheckFiles(); err != nil {
		return cfg, nil, nil, err
	}
	g, err := app.Guarantees(cfg, key)
	if err != nil {
		return cfg, nil, nil, err
	}
	return cfg, key, g, nil
}

// DryRun writes what `dpsurv run --dry-run` prints, one JSON line: the
// config is ok, the guarantees, the per-patient statement and the Kafka
// settings' warnings (when there are any).
func DryRun(w io.Writer, cfg app.Config, g []sanitizers.Guarantee) error {
	st, err := app.Statement(cfg)
	if err != nil {
		return fmt.Errorf("statement: %w", err)
	}
	doc := map[string]any{"config": "ok", "guarantees": g, "patient_statement": st}
	if warn := cfg.Kafka.Warnings(); len(warn) > 0 {
		doc["warnings"] = warn
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("dry run: %w", err)
	}
	_, err = fmt.Fprintln(w, string(out))
	return err
}

// NewLogger is the service's JSON logger (ISO 8601 times) on w at level,
// with the level adjustable while it runs (the SIGHUP reload sets it).
func NewLogger(w io.Writer, level string) (*zap.Logger, zap.AtomicLevel, error) {
	lvl, err := zap.ParseAtomicLevel(level)
	if err != nil {
		return nil, lvl, fmt.Errorf("log.level: %w", err)
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(w), lvl)), lvl, nil
}
