// Package configtest writes the configuration files the `run` tests of
// both binaries (dpsurv and dpsurv-service) start from: the smallest
// config `run --dry-run` accepts — one unreachable broker, an input topic,
// a two-cohort schema, the TE and RRR sanitizers, a sanitized and a
// dead-letter topic — with the parts a test varies as fields. Test support
// only: no production code imports it.
package configtest

import (
	"os"
	"testing"
)

// Config is the smallest service configuration `run` accepts; every field
// but Key has a default, and the YAML states the rest in full.
type Config struct {
	// Key is sanitizers.key_file (apptest.KeyFile writes one).
	Key string
	// Kafka holds more fields of the kafka map after brokers, in flow
	// style ("sasl: {mechanism: plain, ...}"); "" adds none.
	Kafka string
	// Topic is input.topic ("" is "in").
	Topic string
	// Schema is the schema map in flow style ("" is "{time_max: 100,
	// cohorts: [a, b]}").
	Schema string
	// FitTopic adds output.fit_topic "fits" (aggregators need it).
	FitTopic bool
	// More is YAML appended after output: aggregators, ledger, http, log.
	More string
}

// YAML is the configuration file's text.
func (c Config) YAML() string {
	kafka := `{brokers: ["127.0.0.1:1"]}`
	if c.Kafka != "" {
		kafka = `{brokers: ["127.0.0.1:1"], ` + c.Kafka + `}`
	}
	topic := c.Topic
	if topic == "" {
		topic = "in"
	}
	schema := c.Schema
	if schema == "" {
		schema = "{time_max: 100, cohorts: [a, b]}"
	}
	output := "{sanitized_topic: out, dead_letter_topic: dlq}"
	if c.FitTopic {
		output = "{sanitized_topic: out, dead_letter_topic: dlq, fit_topic: fits}"
	}
	return "kafka: " + kafka + "\n" +
		"input: {topic: " + topic + "}\n" +
		"schema: " + schema + "\n" +
		"sanitizers:\n" +
		"  key_file: " + c.Key + "\n" +
		"  time: {mechanism: te, epsilon: 0.1, window: 10}\n" +
		"  cohort: {mechanism: rrr, epsilon: 1}\n" +
		"output: " + output + "\n" +
		c.More
}

// Write writes yaml to path (mode 0600), failing the test if it cannot,
// and returns path.
func Write(t testing.TB, path, yaml string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
