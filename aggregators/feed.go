package aggregators

import (
	"github.com/apache/arrow/go/v15/arrow"

	"github.com/dpsurv/dpsurv/message"
)

// Feed is an Engine fed whole input messages (pipeline.AggregatorRunner's
// Aggregator): Decode turns a message's value into its good rows in
// canonical form (never nil; Feed releases it). Bad rows are the
// sanitizing stream's to dead-letter, so Feed ignores them.
type Feed struct {
	*Engine
	Decode func(value []byte) arrow.Record
}

// Consume observes msg, unless the restored checkpoint already counted it
// (then it only counts the redelivery).
func (f Feed) Consume(msg message.Message) error {
	if f.Skip(msg.Partition, msg.Offset) {
		_ = f.Observe(msg.Partition, msg.Offset, nil) // counts the redelivery
		return nil
	}
	good := f.Decode(msg.Value)
	defer good.Release()
	return f.Observe(msg.Partition, msg.Offset, good)
}
