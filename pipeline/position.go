package pipeline

import "github.com/dpsurv/dpsurv/message"

// SourcePosition is the value of the HeaderSource header of every message
// derived from msg: "topic/partition/offset" of the input.
func SourcePosition(msg message.Message) string {
	return string(sourceHeader(msg).Value)
}
