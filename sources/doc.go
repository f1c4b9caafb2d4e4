// Package sources reads input messages: Kafka (a kafka-go consumer group
// with manual commits) and files. A batch read from a source carries an Ack
// that commits it; callers ack only after every output derived from the batch
// is durable.
package sources
