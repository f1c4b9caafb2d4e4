package apptest

import (
	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/pipeline/pipelinetest"
	"github.com/dpsurv/dpsurv/sanitizers"
)

// Config is a test service's config, for a test to adjust: Arrow messages
// on input topic "in" (client and group id name, batches of 8; Partitions
// 0: set it for New and the service to make the topic), cohorts over
// [0, timeMax] days with the event public, the tests' TE-Sanitizer
// (pipelinetest.TimeConfig) and RRR at ε = 1 on the cohort, the key
// supplied by the caller (KeyFile "(test)"), sanitized rows on "out", dead
// letters on "dlq", and no HTTP listener. It names no broker: New starts
// one.
func Config(name string, cohorts []string, timeMax float64) app.Config {
	cfg := app.DefaultConfig()
	cfg.Kafka = kafkaconn.Config{ClientID: name}
	cfg.Input = app.InputConfig{Topic: "in", GroupID: name, Format: "arrow", MaxBatch: 8}
	cfg.Schema = app.SchemaConfig{TimeUnit: "days", TimeMax: timeMax, Cohorts: cohorts, Public: []string{"event"}}
	cfg.Sanitizers.KeyFile = "(test)"
	cfg.Sanitizers.Time = pipelinetest.TimeConfig()
	cfg.Sanitizers.Cohort = sanitizers.CohortConfig{Mechanism: "rrr", Epsilon: 1}
	cfg.Output = app.OutputConfig{SanitizedTopic: "out", DeadLetterTopic: "dlq"}
	cfg.HTTP.Listen = ""
	return cfg
}
