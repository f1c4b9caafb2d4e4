package jsonrec

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A strict RFC 8259 reader for JSON input rows (issue 21): one object per
// row; every value is checked against the grammar (numbers, literals,
// strings and their escapes, nesting); a key repeated in an object fails
// the row (wrong_schema, as a column twice in an Arrow schema); a string
// holding invalid UTF-8 or an escaped lone surrogate is kept as BadText, so
// that an id is invalid_id rather than silently rewritten to U+FFFD. Only
// the configured keys are kept (the others are skipped: they cost nothing
// but their bytes on the wire); a dead-lettered row is parsed again with
// every key, the others bounded (MaxDeadValueBytes).

// BadText is a JSON string that is not valid Unicode text: invalid UTF-8
// or an escaped lone surrogate. S is the text with each bad part replaced
// by U+FFFD (what a dead letter shows).
type BadText struct{ S string }

// MarshalJSON renders the replaced text (dead-letter path).
func (b BadText) MarshalJSON() ([]byte, error) { return json.Marshal(b.S) }

// RawJSON is a nested value (object or array) of a configured key: kept as
// its text (bounded), which no field accepts.
type RawJSON string

// maxJSONDepth bounds nesting (objects and arrays) in a row.
const maxJSONDepth = 64

var errJSONDepth = errors.New("nesting deeper than 64")

type jsonReader struct {
	b   string
	pos int
}

func (r *jsonReader) errorf(format string, a ...any) error {
	return fmt.Errorf("offset %d: %s", r.pos, fmt.Sprintf(format, a...))
}

func (r *jsonReader) ws() {
	for r.pos < len(r.b) {
		switch r.b[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

// str reads a string at r.pos (the opening quote); ok is false when it is
// not valid Unicode text (the returned text has U+FFFD there).
func (r *jsonReader) str() (s string, ok bool, err error) {
	r.pos++ // "
	start := r.pos
	// fast path: no escape, ASCII or valid UTF-8
	for r.pos < len(r.b) {
		c := r.b[r.pos]
		if c == '"' {
			raw := r.b[start:r.pos] // no copy: a substring of the row
			r.pos++
			if utf8.ValidString(raw) {
				return raw, true, nil
			}
			return string([]rune(raw)), false, nil // invalid bytes -> U+FFFD
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", false, r.errorf("control character in string")
		}
		r.pos++
	}
	if r.pos >= len(r.b) {
		return "", false, r.errorf("unterminated string")
	}
	out := []byte(r.b[start:r.pos])
	ok = utf8.Valid(out)
	if !ok {
		out = []byte(string([]rune(string(out))))
	}
	for r.pos < len(r.b) {
		c := r.b[r.pos]
		switch {
		case c == '"':
			r.pos++
			return string(out), ok, nil
		case c < 0x20:
			return "", false, r.errorf("control character in string")
		case c == '\\':
			if r.pos+1 >= len(r.b) {
				return "", false, r.errorf("unterminated escape")
			}
			e := r.b[r.pos+1]
			r.pos += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				u, err := r.hex4()
				if err != nil {
					return "", false, err
				}
				switch {
				case utf16.IsSurrogate(u) && u < 0xDC00 && r.pos+6 <= len(r.b) && r.b[r.pos] == '\\' && r.b[r.pos+1] == 'u':
					save := r.pos
					r.pos += 2
					lo, err := r.hex4()
					if err == nil && lo >= 0xDC00 && lo <= 0xDFFF {
						out = utf8.AppendRune(out, utf16.DecodeRune(u, lo))
						continue
					}
					r.pos = save
					out, ok = utf8.AppendRune(out, utf8.RuneError), false
				case utf16.IsSurrogate(u):
					out, ok = utf8.AppendRune(out, utf8.RuneError), false
				default:
					out = utf8.AppendRune(out, u)
				}
			default:
				return "", false, r.errorf("invalid escape \\%c", e)
			}
		default:
			k := r.pos
			for k < len(r.b) && r.b[k] != '"' && r.b[k] != '\\' && r.b[k] >= 0x20 {
				k++
			}
			seg := r.b[r.pos:k]
			if utf8.ValidString(seg) {
				out = append(out, seg...)
			} else {
				out, ok = append(out, string([]rune(seg))...), false
			}
			r.pos = k
		}
	}
	return "", false, r.errorf("unterminated string")
}

func (r *jsonReader) hex4() (rune, error) {
	if r.pos+4 > len(r.b) {
		return 0, r.errorf("short \\u escape")
	}
	var u rune
	for _, c := range []byte(r.b[r.pos : r.pos+4]) {
		u <<= 4
		switch {
		case '0' <= c && c <= '9':
			u |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			u |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			u |= rune(c - 'A' + 10)
		default:
			return 0, r.errorf("invalid \\u escape")
		}
	}
	r.pos += 4
	return u, nil
}

// number reads a number literal (RFC 8259 section 6) and returns its text.
func (r *jsonReader) number() (string, error) {
	start := r.pos
	if n := jsonNumberLen(r.b[r.pos:]); n > 0 {
		r.pos += n
		return r.b[start:r.pos], nil
	}
	return "", r.errorf("invalid number")
}

// jsonNumberLen is the length of the JSON number literal at the start of b
// (0 if none): -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func jsonNumberLen(b string) int {
	i := 0
	digits := func() int {
		k := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i - k
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		digits()
	default:
		return 0
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return 0
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return 0
		}
	}
	return i
}

// isJSONNumber reports whether s is exactly one JSON number literal.
func IsNumber(s string) bool { return s != "" && jsonNumberLen(s) == len(s) }

// isJSONInteger reports whether s is a JSON number literal without
// fraction or exponent.
func IsInteger(s string) bool {
	if !IsNumber(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '.' || s[i] == 'e' || s[i] == 'E' {
			return false
		}
	}
	return true
}

func (r *jsonReader) literal(word string) error {
	if len(r.b)-r.pos >= len(word) && r.b[r.pos:r.pos+len(word)] == word {
		r.pos += len(word)
		return nil
	}
	return r.errorf("invalid literal")
}

// value reads one value. keep false skips it (nil); otherwise strings are
// string or BadText, numbers json.Number, literals bool or nil, nested
// values RawJSON of their text cut to limit bytes (limit <= 0: whole).
func (r *jsonReader) value(depth int, keep bool, limit int) (any, error) {
	r.ws()
	if r.pos >= len(r.b) {
		return nil, r.errorf("unexpected end of input")
	}
	switch c := r.b[r.pos]; {
	case c == '"':
		s, ok, err := r.str()
		if err != nil || !keep {
			return nil, err
		}
		if !ok {
			return BadText{S: s}, nil
		}
		return s, nil
	case c == '-' || '0' <= c && c <= '9':
		s, err := r.number()
		if err != nil || !keep {
			return nil, err
		}
		return json.Number(s), nil
	case c == 't':
		return true, r.literal("true")
	case c == 'f':
		return false, r.literal("false")
	case c == 'n':
		return nil, r.literal("null")
	case c == '{' || c == '[':
		start := r.pos
		if err := r.skipNested(depth + 1); err != nil {
			return nil, err
		}
		if !keep {
			return nil, nil
		}
		text := r.b[start:r.pos]
		if limit > 0 && len(text) > limit {
			return RawJSON(CutString(text[:limit], limit) + fmt.Sprintf("… (%d bytes, cut)", len(text))), nil
		}
		return RawJSON(text), nil
	}
	return nil, r.errorf("unexpected character %q", r.b[r.pos])
}

// skipNested checks and skips an object or array.
func (r *jsonReader) skipNested(depth int) error {
	if depth > maxJSONDepth {
		return errJSONDepth
	}
	open := r.b[r.pos]
	r.pos++
	r.ws()
	closing := byte(']')
	if open == '{' {
		closing = '}'
	}
	if r.pos < len(r.b) && r.b[r.pos] == closing {
		r.pos++
		return nil
	}
	for {
		if open == '{' {
			r.ws()
			if r.pos >= len(r.b) || r.b[r.pos] != '"' {
				return r.errorf("object key is not a string")
			}
			if _, _, err := r.str(); err != nil {
				return err
			}
			r.ws()
			if r.pos >= len(r.b) || r.b[r.pos] != ':' {
				return r.errorf("missing colon after object key")
			}
			r.pos++
		}
		if _, err := r.value(depth, false, 0); err != nil {
			return err
		}
		r.ws()
		if r.pos >= len(r.b) {
			return r.errorf("unexpected end of input")
		}
		switch r.b[r.pos] {
		case ',':
			r.pos++
		case closing:
			r.pos++
			return nil
		default:
			return r.errorf("expected , or %c", closing)
		}
	}
}

// DupKeyError is a row with a key twice (RFC 8259 leaves its meaning to the
// reader; dpsurv refuses the row).
type DupKeyError struct{ Key string }

func (e DupKeyError) Error() string { return fmt.Sprintf("key %q appears twice in the object", e.Key) }

// NotObjectError is a row whose JSON value is not an object.
type NotObjectError struct{ Kind string }

func (e NotObjectError) Error() string { return fmt.Sprintf("row is %s, not an object", e.Kind) }

// parseObject reads one row: a JSON object, the whole of b (surrounding
// whitespace allowed). keep says which keys to keep (with values cut to
// limit(key) bytes when nested); seen is scratch for duplicate keys.
// The returned cost is about what the kept values take in memory.
func ParseObject(b string, keep func(string) bool, limit func(string) int, seen map[string]struct{}) (map[string]any, int, error) {
	r := &jsonReader{b: b}
	more, err := r.openRow(seen)
	if err != nil {
		return nil, 0, err
	}
	row := map[string]any{}
	cost := 64
	for more {
		key, err := r.key(seen)
		if err != nil {
			return nil, 0, err
		}
		k := keep(key)
		val, err := r.value(1, k, limit(key))
		if err != nil {
			return nil, 0, err
		}
		if k {
			if s, ok := val.(string); ok && limit(key) > 0 {
				val = CutString(s, limit(key))
			}
			row[key] = val
			cost += 48 + len(key) + valueBytes(val)
		}
		if more, err = r.next(); err != nil {
			return nil, 0, err
		}
	}
	if err := r.closeRow(); err != nil {
		return nil, 0, err
	}
	return row, cost, nil
}

// openRow reads the start of a row up to its first key: more is false when
// the object is empty ("{}"); a row that is another JSON value is a
// NotObjectError (or the error of its grammar). seen, the keys read, is
// cleared.
func (r *jsonReader) openRow(seen map[string]struct{}) (more bool, err error) {
	r.ws()
	if r.pos >= len(r.b) {
		return false, r.errorf("empty row")
	}
	if r.b[r.pos] != '{' {
		v, err := r.value(0, true, 64)
		if err != nil {
			return false, err
		}
		if err := r.closeRow(); err != nil {
			return false, err
		}
		return false, NotObjectError{Kind: kindOf(v)}
	}
	clear(seen)
	r.pos++
	r.ws()
	if r.pos < len(r.b) && r.b[r.pos] == '}' {
		r.pos++
		return false, nil
	}
	return true, nil
}

// keyString reads an object key (a string).
func (r *jsonReader) keyString() (string, error) {
	r.ws()
	if r.pos >= len(r.b) || r.b[r.pos] != '"' {
		return "", r.errorf("object key is not a string")
	}
	key, _, err := r.str()
	return key, err
}

// colon reads the colon after an object key.
func (r *jsonReader) colon() error {
	r.ws()
	if r.pos >= len(r.b) || r.b[r.pos] != ':' {
		return r.errorf("missing colon after object key")
	}
	r.pos++
	return nil
}

// key reads an object key and its colon, adding the key to seen; a key
// already in seen is a DupKeyError once the rest of the object is read
// (a grammar error after it comes first: such a row is undecodable).
func (r *jsonReader) key(seen map[string]struct{}) (string, error) {
	key, err := r.keyString()
	if err != nil {
		return "", err
	}
	if _, dup := seen[key]; dup {
		if err := r.rest(); err != nil {
			return "", err
		}
		return "", DupKeyError{Key: key}
	}
	seen[key] = struct{}{}
	return key, r.colon()
}

// next reads what follows a member's value: more is true after a comma
// (another key follows), false after the closing brace.
func (r *jsonReader) next() (more bool, err error) {
	r.ws()
	if r.pos >= len(r.b) {
		return false, r.errorf("unexpected end of input")
	}
	switch r.b[r.pos] {
	case ',':
		r.pos++
		return true, nil
	case '}':
		r.pos++
		return false, nil
	}
	return false, r.errorf("expected , or }")
}

// closeRow checks that nothing but whitespace follows the row's value.
func (r *jsonReader) closeRow() error {
	r.ws()
	if r.pos != len(r.b) {
		return errors.New("trailing data after the value")
	}
	return nil
}

// rest checks the remainder of an object after a key (its value and the
// keys and values after it), for parseObject's duplicate-key path.
func (r *jsonReader) rest() error {
	for {
		if err := r.colon(); err != nil {
			return err
		}
		if _, err := r.value(1, false, 0); err != nil {
			return err
		}
		more, err := r.next()
		if err != nil {
			return err
		}
		if !more {
			return r.closeRow()
		}
		if _, err := r.keyString(); err != nil {
			return err
		}
	}
}

func valueBytes(v any) int {
	switch x := v.(type) {
	case string:
		return len(x)
	case json.Number:
		return len(x)
	case BadText:
		return len(x.S)
	case RawJSON:
		return len(x)
	}
	return 0
}

// splitArray returns the elements of a top-level JSON array (b trimmed,
// starting with '['), checked against the grammar.
func SplitArray(b string) ([]string, error) {
	r := &jsonReader{b: b}
	r.pos++
	var elems []string
	r.ws()
	if r.pos < len(b) && b[r.pos] == ']' {
		r.pos++
	} else {
		for {
			r.ws()
			start := r.pos
			if _, err := r.value(1, false, 0); err != nil {
				return nil, err
			}
			elems = append(elems, b[start:r.pos])
			r.ws()
			if r.pos >= len(b) {
				return nil, r.errorf("unexpected end of input")
			}
			if b[r.pos] == ',' {
				r.pos++
				continue
			}
			if b[r.pos] == ']' {
				r.pos++
				break
			}
			return nil, r.errorf("expected , or ]")
		}
	}
	r.ws()
	if r.pos != len(b) {
		return nil, errors.New("trailing data after the array")
	}
	return elems, nil
}

// Value is one configured value of a JSON row, its text a substring of
// the row (no copy) unless it had escapes.
type Value struct {
	Kind Kind
	S    string // string text, number literal, nested value's text
}

// Kind is what a Value holds.
type Kind uint8

// Value kinds.
const (
	Absent Kind = iota // the key is not in the row
	Null
	String
	Bad // a string that is not valid Unicode text; S has U+FFFD there
	Number
	True
	False
	Nested // an object or array: S is its text
)

// jvalue reads one value as a Value.
func (r *jsonReader) jvalue(depth int) (Value, error) {
	r.ws()
	if r.pos >= len(r.b) {
		return Value{}, r.errorf("unexpected end of input")
	}
	switch c := r.b[r.pos]; {
	case c == '"':
		s, ok, err := r.str()
		if !ok {
			return Value{Bad, s}, err
		}
		return Value{String, s}, err
	case c == '-' || '0' <= c && c <= '9':
		s, err := r.number()
		return Value{Number, s}, err
	case c == 't':
		return Value{Kind: True}, r.literal("true")
	case c == 'f':
		return Value{Kind: False}, r.literal("false")
	case c == 'n':
		return Value{Kind: Null}, r.literal("null")
	case c == '{' || c == '[':
		start := r.pos
		err := r.skipNested(depth + 1)
		return Value{Nested, r.b[start:r.pos]}, err
	}
	return Value{}, r.errorf("unexpected character %q", r.b[r.pos])
}

// parseSlots reads one row, a JSON object (the whole of b), into vals: the
// value of each configured key at its slot (slotOf; -1 for a key outside
// the configuration, whose value is checked and skipped). seen is scratch
// for duplicate keys.
func ParseSlots(b string, slotOf func(string) int, vals []Value, seen map[string]struct{}) error {
	r := &jsonReader{b: b}
	more, err := r.openRow(seen)
	if err != nil {
		return err
	}
	for more {
		key, err := r.key(seen)
		if err != nil {
			return err
		}
		val, err := r.jvalue(1)
		if err != nil {
			return err
		}
		if k := slotOf(key); k >= 0 {
			vals[k] = val
		}
		if more, err = r.next(); err != nil {
			return err
		}
	}
	return r.closeRow()
}

// kindOf names the kind of a parsed value (for errors).
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string, BadText:
		return "a string"
	case RawJSON:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}

// CutString copies s (never aliasing input memory), cut to at most limit
// bytes on a rune boundary and marked with its length when cut ("… (N
// bytes, cut)"): the marker of schemas' dead-letter cells too, which show
// these values.
func CutString(s string, limit int) string {
	if len(s) <= limit {
		return strings.Clone(s)
	}
	k := limit
	for k > 0 && k > limit-utf8.UTFMax && !utf8.RuneStart(s[k]) {
		k--
	}
	return strings.ToValidUTF8(s[:k], "\uFFFD") + fmt.Sprintf("… (%d bytes, cut)", len(s))
}
