package csvrec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// ChunkSize is the size of one read of a Chunker a reader of CSV files
// uses; a record longer than that grows the buffer.
const ChunkSize = 2 << 20

// Chunk is a run of complete records of a file, a slice of Buf (give Buf
// back with Chunker.Put once the chunk is no longer used). Quotes tells
// whether Data holds a quote (then its records need ParseRecord).
type Chunk struct {
	Buf    []byte
	Data   []byte
	Quotes bool
}

// Header parses the first record of data; nil when data has none.
func Header(data []byte) ([]string, int) {
	pos := 0
	for pos < len(data) {
		line, next, nl := Line(data, pos)
		if len(line) == 0 {
			if !nl {
				break
			}
			pos = next
			continue
		}
		f, _, next := ParseRecord(data, pos, nil, nil)
		h := make([]string, len(f))
		for k, b := range f {
			h[k] = string(b)
		}
		return h, next
	}
	return nil, 0
}

// csvLine returns the line at pos without its line end ("\n" or "\r\n"; a
// '\r' ending the data is dropped as encoding/csv does), the start of the
// next line and whether the line had a '\n'.
func Line(data []byte, pos int) (line []byte, next int, nl bool) {
	rest := data[pos:]
	i := bytes.IndexByte(rest, '\n')
	if i < 0 {
		line = rest
		next = len(data)
	} else {
		line = rest[:i]
		next = pos + i + 1
		nl = true
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, next, nl
}

// parseRecord parses the record starting at pos (not an empty line) as
// encoding/csv does with LazyQuotes, appending its fields to f. Quoted
// fields are unescaped into arena; unquoted fields alias data.
func ParseRecord(data []byte, pos int, f [][]byte, arena []byte) ([][]byte, []byte, int) {
	line, next, nl := Line(data, pos)
	for {
		if len(line) == 0 || line[0] != '"' {
			i := bytes.IndexByte(line, ',')
			if i < 0 {
				return append(f, line), arena, next
			}
			f = append(f, line[:i])
			line = line[i+1:]
			continue
		}
		// Quoted field.
		line = line[1:]
		start := len(arena)
		for {
			i := bytes.IndexByte(line, '"')
			if i >= 0 {
				arena = append(arena, line[:i]...)
				line = line[i+1:]
				switch {
				case len(line) > 0 && line[0] == '"':
					arena = append(arena, '"')
					line = line[1:]
				case len(line) > 0 && line[0] == ',':
					line = line[1:]
					f = append(f, arena[start:len(arena):len(arena)])
					goto nextField
				case len(line) == 0:
					return append(f, arena[start:len(arena):len(arena)]), arena, next
				default: // a bare quote is kept (LazyQuotes)
					arena = append(arena, '"')
				}
			} else if len(line) > 0 || nl {
				arena = append(arena, line...)
				if nl {
					arena = append(arena, '\n')
				}
				if next >= len(data) { // end of data inside quotes
					return append(f, arena[start:len(arena):len(arena)]), arena, next
				}
				line, next, nl = Line(data, next)
			} else { // end of data inside quotes
				return append(f, arena[start:len(arena):len(arena)]), arena, next
			}
		}
	nextField:
	}
}

// scanRecord returns the length of the record at the start of b (its line
// end included), or false when b ends before the record does (b is not the
// end of the file).
func scanRecord(b []byte) (int, bool) {
	i := 0
	for {
		if i < len(b) && b[i] == '"' {
			i++
		quoted:
			for {
				q := bytes.IndexByte(b[i:], '"')
				if q < 0 {
					return 0, false
				}
				i += q + 1
				if i >= len(b) {
					return 0, false
				}
				switch b[i] {
				case '"':
					i++
				case ',':
					i++
					break quoted
				case '\n':
					return i + 1, true
				case '\r':
					if i+1 >= len(b) {
						return 0, false
					}
					if b[i+1] == '\n' {
						return i + 2, true
					}
				}
			}
			continue
		}
		for i < len(b) && b[i] != ',' && b[i] != '\n' {
			i++
		}
		if i >= len(b) {
			return 0, false
		}
		if b[i] == '\n' {
			return i + 1, true
		}
		i++
	}
}

var ErrCancelled = errors.New("chunker: cancelled")

// Chunker cuts a reader into runs of complete records.
type Chunker struct {
	r     io.Reader
	size  int
	slots chan struct{} // one token per chunk in flight: bounds the chunks held
	mu    sync.Mutex
	spare [][]byte // buffers given back, reused before new ones are allocated
	carry []byte   // the incomplete record at the end of the last read
	eof   bool
}

func NewChunker(r io.Reader, size, inFlight int) *Chunker {
	return &Chunker{r: r, size: size, slots: make(chan struct{}, inFlight)}
}

// put gives back the buffer of a chunk that is no longer used.
func (c *Chunker) Put(buf []byte) {
	c.mu.Lock()
	if buf != nil {
		c.spare = append(c.spare, buf)
	}
	c.mu.Unlock()
	<-c.slots
}

// take waits for a free slot and returns a spare buffer (nil if none).
func (c *Chunker) take(done <-chan struct{}) ([]byte, bool) {
	select {
	case c.slots <- struct{}{}:
	case <-done:
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var buf []byte
	if n := len(c.spare); n > 0 {
		buf = c.spare[n-1]
		c.spare = c.spare[:n-1]
	}
	return buf, true
}

func (c *Chunker) Next(done <-chan struct{}) (Chunk, error) {
	for {
		if c.eof && len(c.carry) == 0 {
			return Chunk{}, io.EOF
		}
		buf, ok := c.take(done)
		if !ok {
			return Chunk{}, ErrCancelled
		}
		want := max(c.size, 2*len(c.carry))
		if cap(buf) < want {
			buf = make([]byte, want)
		}
		buf = buf[:cap(buf)]
		n := copy(buf, c.carry)
		for n < len(buf) && !c.eof {
			m, err := c.r.Read(buf[n:])
			n += m
			if errors.Is(err, io.EOF) {
				c.eof = true
			} else if err != nil {
				c.Put(buf)
				return Chunk{}, err
			}
		}
		data := buf[:n]
		cut := len(data)
		quotes := bytes.IndexByte(data, '"') >= 0
		if !c.eof {
			if !quotes {
				cut = bytes.LastIndexByte(data, '\n') + 1
			} else {
				cut = lastRecordEnd(data)
			}
			if cut == 0 { // a record longer than the buffer
				c.carry = append(c.carry[:0], data...)
				c.Put(buf[:0])
				continue
			}
		}
		c.carry = append(c.carry[:0], data[cut:]...)
		data = data[:cut]
		if quotes && cut < n {
			quotes = bytes.IndexByte(data, '"') >= 0
		}
		return Chunk{Buf: buf, Data: data, Quotes: quotes}, nil
	}
}

func lastRecordEnd(data []byte) int {
	pos := 0
	for pos < len(data) {
		n, ok := scanRecord(data[pos:])
		if !ok {
			break
		}
		pos += n
	}
	return pos
}

// ScanLine appends to bd the start (relative to pos) of each field after
// the first of the unquoted line at pos, and returns the position of its
// '\n' (len(data) when there is none). Eight bytes at a time: a byte of
// w is zero exactly when the high bit of zeroBytes(w) is set in it.
func ScanLine(data []byte, pos int, bd []int32) ([]int32, int) {
	const commas, newlines = 0x2c2c2c2c2c2c2c2c, 0x0a0a0a0a0a0a0a0a
	j := pos
	for ; j+8 <= len(data); j += 8 {
		w := binary.LittleEndian.Uint64(data[j:])
		m := zeroBytes(w^commas) | zeroBytes(w^newlines)
		for m != 0 {
			k := j + bits.TrailingZeros64(m)>>3
			if data[k] == '\n' {
				return bd, k
			}
			bd = append(bd, int32(k+1-pos))
			m &= m - 1
		}
	}
	for ; j < len(data); j++ {
		switch data[j] {
		case ',':
			bd = append(bd, int32(j+1-pos))
		case '\n':
			return bd, j
		}
	}
	return bd, j
}

// zeroBytes has the high bit of each zero byte of x set, and no other bit.
func zeroBytes(x uint64) uint64 {
	const low7 = 0x7f7f7f7f7f7f7f7f
	return ^((x&low7 + low7) | x | low7)
}

// ParseFloat parses the cell text as strconv.ParseFloat does (surrounding
// space allowed), with an exact fast path for plain
// decimals ([-]digits[.digits], at most 15 digits): the digits m < 2^53
// and 10^k (k <= 15) are exact doubles, so m / 10^k is the correctly
// rounded value strconv.ParseFloat gives (Clinger's fast path). Anything
// else goes to strconv.ParseFloat.
func ParseFloat(b []byte) (float64, bool) {
	n := len(b)
	if n == 0 || n > 17 {
		return slowFloat(b)
	}
	i, neg := 0, b[0] == '-'
	if neg {
		i = 1
	}
	var m uint64
	start := i
	for ; i < n; i++ {
		d := b[i] - '0'
		if d > 9 {
			break
		}
		m = m*10 + uint64(d)
	}
	ints := i - start
	if ints == 0 || ints > 15 {
		return slowFloat(b)
	}
	x := float64(m)
	if i < n {
		if b[i] != '.' {
			return slowFloat(b)
		}
		i++
		fs := i
		for ; i < n; i++ {
			d := b[i] - '0'
			if d > 9 {
				return slowFloat(b)
			}
			m = m*10 + uint64(d)
		}
		frac := i - fs
		if frac == 0 || ints+frac > 15 {
			return slowFloat(b)
		}
		x = float64(m) / pow10[frac]
	}
	if neg {
		x = -x
	}
	return x, true
}

var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// slowFloat is ParseFloat's general path: strconv.ParseFloat of the cell
// text without surrounding space.
func slowFloat(b []byte) (float64, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(bstr(b)), 64)
	return f, err == nil
}

// Drained tells whether the reader is exhausted and no record is left to
// give: Next would return io.EOF.
func (c *Chunker) Drained() bool { return c.eof && len(c.carry) == 0 }

// InFlight is the most chunks handed out and not yet given back.
func (c *Chunker) InFlight() int { return cap(c.slots) }

// bstr views b as a string without a copy; the string must not outlive b.
func bstr(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
