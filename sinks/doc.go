// Package sinks writes output messages: Kafka (kafka-go writers, one
// Transport each, RequiredAcks=all), files and stdout. Write returns only once
// every message is durable (acknowledged by all in-sync replicas).
package sinks
