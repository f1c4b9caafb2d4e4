// Package schemas defines the Arrow schemas of dpsurv's topics and files
// (tte.v1 input, tte.sanitized.v1 output), their codecs (Arrow IPC stream per
// Kafka message, CSV, JSON lines) and the validation that splits a batch into
// good rows in canonical form and dead-letter rows with a reason. Decoding and
// validation never panic on input.
package schemas
