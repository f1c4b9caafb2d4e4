package sanitize

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/pipeline"
	"github.com/dpsurv/dpsurv/schemas"
)

// DeadLetters routes what failed to RouteDeadLetter (pipeline.Failures):
// a message the processor failed on becomes a dead letter of reason
// ReasonUnprocessable with the raw message (or a reference to it); a
// sanitized message the sink refuses as too large a dead letter of reason
// ReasonOutputTooLarge; a dead letter the sink refuses a reference to its
// source message. Each is at most MaxMessageBytes (default
// DefaultMaxMessageBytes).
type DeadLetters struct {
	MaxMessageBytes int
}

// Failed implements pipeline.Failures. The error may quote record values:
// it goes to the dead letter only.
func (d DeadLetters) Failed(src message.Message, err error) []pipeline.Routed {
	dl := schemas.DeadLetter{Reason: ReasonUnprocessable, RowIndex: -1, Raw: src.Value,
		Detail: fmt.Sprintf("processing failed: %v", err)}
	return []pipeline.Routed{deadRouted(dl, src, maxBytesOr(d.MaxMessageBytes), 0)}
}

// Rejected implements pipeline.Failures.
func (d DeadLetters) Rejected(src message.Message, r pipeline.Routed) []pipeline.Routed {
	size := len(r.Msg.Key) + len(r.Msg.Value)
	if r.Route != RouteDeadLetter {
		dl := schemas.DeadLetter{Reason: ReasonOutputTooLarge, RowIndex: 0, Count: r.Rows,
			Detail: fmt.Sprintf("the sink rejected a sanitized message of %d bytes as too large (set output.max_message_bytes to at most the topic's max.message.bytes); replay the source message", size)}
		return []pipeline.Routed{deadRouted(dl, src, maxBytesOr(d.MaxMessageBytes), r.Rows)}
	}
	dl := schemas.DeadLetter{Reason: r.Reason, RowIndex: -1,
		Detail: fmt.Sprintf("the dead-letter sink rejected this dead letter (%d bytes) as too large; replay the source message", size)}
	v, _ := deadLetterValue(dl, src)
	return []pipeline.Routed{{Route: RouteDeadLetter, Msg: message.Message{Value: v, Headers: r.Msg.Headers}, Rows: r.Rows, Reason: r.Reason}}
}

// deadRouted is the dead-letter message of d on RouteDeadLetter, standing
// for rows input records.
func deadRouted(d schemas.DeadLetter, src message.Message, max, rows int) pipeline.Routed {
	return pipeline.Routed{Route: RouteDeadLetter, Msg: deadLetterMessage(d, src, max), Rows: rows, Reason: d.Reason}
}

// outKey is the input key, unless it is too long to copy.
func outKey(msg message.Message) []byte {
	if len(msg.Key) > maxKeyBytes {
		return nil
	}
	return msg.Key
}

func headerBytes(h []message.Header) int {
	n := 0
	for _, x := range h {
		n += len(x.Key) + len(x.Value) + 8
	}
	return n
}

func sourceHeader(msg message.Message) message.Header {
	return message.Header{Key: HeaderSource, Value: []byte(msg.Topic + "/" + strconv.Itoa(msg.Partition) + "/" + strconv.FormatInt(msg.Offset, 10))}
}

// deadLetterValue is the dead-letter message: the dead letter's JSON
// (schemas.DeadLetter.MarshalJSON) with the source position appended as
// "source": {"topic", "partition", "offset"}.
func deadLetterValue(d schemas.DeadLetter, msg message.Message) ([]byte, error) {
	inner, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	if len(inner) < 2 || inner[0] != '{' || inner[len(inner)-1] != '}' {
		return nil, errors.New("encode dead letter: not a JSON object")
	}
	topic, err := json.Marshal(msg.Topic)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(inner)+len(topic)+64)
	b = append(b, inner[:len(inner)-1]...)
	if len(inner) > 2 {
		b = append(b, ',')
	}
	b = append(b, `"source":{"topic":`...)
	b = append(b, topic...)
	b = append(b, `,"partition":`...)
	b = strconv.AppendInt(b, int64(msg.Partition), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, msg.Offset, 10)
	return append(b, "}}"...), nil
}

// Bounds of the parts of a dead letter that did not fit whole.
const (
	maxDeadDetail   = 4096
	maxDeadRowValue = 1024
)

// deadLetterMessage is the dead-letter message of d, at most max bytes
// (key, value and headers). A dead letter that does not fit is cut down
// in steps: raw bytes replaced by their size, SHA-256 and a prefix (the
// source position is the reference to the full message), long row values
// and the detail truncated, and at last only the reason, detail and
// source kept.
func deadLetterMessage(d schemas.DeadLetter, msg message.Message, max int) message.Message {
	hdr := outHeaders(msg)
	key := outKey(msg)
	budget := max - messageOverhead - len(key) - headerBytes(hdr)
	var v []byte
	var err error
	full := len(d.Detail) + base64.StdEncoding.EncodedLen(len(d.Raw))
	if full <= budget { // else its raw bytes alone do not fit: no need to encode them whole
		v, err = deadLetterValue(d, msg)
		if err == nil && len(v) <= budget {
			return message.Message{Key: key, Value: v, Headers: hdr}
		}
		full = len(v)
	}
	note := fmt.Sprintf(" [dead letter truncated: %d bytes exceed the %d-byte message limit", full, max)
	if d.Raw != nil {
		sum := sha256.Sum256(d.Raw)
		note += fmt.Sprintf("; raw message of %d bytes, sha256 %s, kept as a prefix only: replay it from the source position", len(d.Raw), hex.EncodeToString(sum[:]))
		d.Raw = d.Raw[:min(len(d.Raw), budget/4)]
	}
	note += "]"
	if len(d.Detail) > maxDeadDetail {
		d.Detail = truncUTF8(d.Detail, maxDeadDetail) + "…"
	}
	d.Detail += note
	if d.Row != nil {
		row := make(map[string]any, len(d.Row))
		for k, x := range d.Row {
			switch y := x.(type) {
			case string:
				if len(y) > maxDeadRowValue {
					x = fmt.Sprintf("%s… (%d bytes)", truncUTF8(y, maxDeadRowValue), len(y))
				}
			case []byte:
				if len(y) > maxDeadRowValue {
					x = y[:maxDeadRowValue]
				}
			}
			row[k] = x
		}
		d.Row = row
	}
	if v, err = deadLetterValue(d, msg); err == nil && len(v) <= budget {
		return message.Message{Key: key, Value: v, Headers: hdr}
	}
	// Last resort: a reference only.
	ref := schemas.DeadLetter{Reason: d.Reason, RowIndex: d.RowIndex, Count: d.Count,
		Detail: truncUTF8(d.Detail, 1024) + fmt.Sprintf(" [dead letter of %d bytes reduced to a reference]", full)}
	v, _ = deadLetterValue(ref, msg)
	return message.Message{Value: v, Headers: hdr}
}

// truncUTF8 cuts s to at most n bytes at a rune boundary.
func truncUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
