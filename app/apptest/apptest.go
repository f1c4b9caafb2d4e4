// Package apptest is the end-to-end fixture of the service (package app):
// Start (or New, Produce, Run) gives a test an in-process broker, its
// topics, a searchable debug log, a checked allocator, a fake clock and
// running services with their own metrics, all closed by t.Cleanup; and
// Transport lets a test see and alter a service's traffic through the
// app.Transport interface, as a caller would, instead of through hooks on
// app.Service. It is imported by tests only.
package apptest

import (
	"context"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/message"
)

// Transport is an app.Transport decorated per role: WrapSource and
// WrapSink, when set, receive what the inner transport opened and return
// what the service uses instead (the service closes what they return).
// A source decorator that should keep the stall monitor healing
// implements Unwrap() message.Source.
type Transport struct {
	app.Transport
	WrapSource func(app.Role, message.Source) message.Source
	WrapSink   func(app.Role, message.Sink) message.Sink
}

// Kafka is the service's Kafka transport on cfg, decorated.
func Kafka(cfg app.Config, wrapSource func(app.Role, message.Source) message.Source, wrapSink func(app.Role, message.Sink) message.Sink) *Transport {
	return &Transport{Transport: app.KafkaTransport{Config: cfg}, WrapSource: wrapSource, WrapSink: wrapSink}
}

// Source implements app.Transport.
func (t *Transport) Source(ctx context.Context, role app.Role) (message.Source, error) {
	src, err := t.Transport.Source(ctx, role)
	if err != nil || t.WrapSource == nil {
		return src, err
	}
	return t.WrapSource(role, src), nil
}

// Sink implements app.Transport.
func (t *Transport) Sink(ctx context.Context, role app.Role, maxMessageBytes int) (message.Sink, error) {
	sink, err := t.Transport.Sink(ctx, role, maxMessageBytes)
	if err != nil || t.WrapSink == nil {
		return sink, err
	}
	return t.WrapSink(role, sink), nil
}
