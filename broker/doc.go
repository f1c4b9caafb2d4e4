// Package broker runs an in-process Kafka-protocol cluster (franz-go's
// kfake) for the demo, local development and tests, so the real kafka-go
// client code is what runs against it.
package broker
