// Package sinks writes output messages: Kafka (kafka-go writers, one
// Transport each, RequiredAcks=all), files and stdout. Write returns only once
// every message is durable (acknowledged by all in-sync replicas). Both
// implement message.Sink; message.Header is converted to kafka-go's header
// here, and a size refusal is marked message.ErrTooLarge.
//
// Contract:
//   - Kafka.Connect dials a broker and authenticates (a rejected credential
//     or TLS handshake is marked message.ErrFatal, anything else
//     message.ErrNotConnected); the writer itself connects on its first
//     write and redials by itself.
//   - Kafka.Write is synchronous: nil means every message was acknowledged
//     with acks=all; on error some messages may have been written (a retry
//     may duplicate them: delivery is at least once). Messages with the same
//     key always go to the same partition (kafka-go's Hash balancer, FNV-1a;
//     note Java clients default to murmur2). Messages without a key are
//     spread round-robin.
//   - A message larger than BatchBytes is rejected (the broker's default
//     limit is about 1 MB); the error gives its size, never its content.
//   - Write is safe for concurrent use; Close waits for in-flight writes and
//     closes the writer's own Transport.
//   - Writer writes each message value followed by a newline to an
//     io.Writer (stdout); Close does not close the io.Writer.
package sinks
