package sanitize

import "github.com/dpsurv/dpsurv/message"

// HeaderSource is the header naming the input position a sanitized or
// dead-letter message came from ("topic/partition/offset"); a redelivered
// duplicate carries the same value.
const HeaderSource = "dpsurv-source"

// SourcePosition is the value of the HeaderSource header of every message
// derived from msg: "topic/partition/offset" of the input.
func SourcePosition(msg message.Message) string {
	return string(sourceHeader(msg).Value)
}
