// Package pipeline wires sources, validation, sanitizers, sinks and
// aggregators into one service: YAML configuration validated with field-path
// errors, lifecycle (sinks start first, sources last; stop in reverse with a
// drain), backpressure, acknowledgement (a source offset is committed only
// after every branch that received the batch has acknowledged it), Prometheus
// metrics and the /healthz and /readyz endpoints.
package pipeline
