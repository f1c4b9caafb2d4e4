package arrowipc

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

var arrowFileMagic = []byte("ARROW1")

// OpenFile opens an Arrow IPC file (file or stream format, told apart by
// the magic bytes): the messages of the file format are read as a stream
// from the region before the footer, every message's metadata checked
// before it is decoded. A file of up to inMemoryMax bytes is read at once
// and its columns are slices of it (zcRecords) when its layout allows and
// zeroCopy is true, otherwise it goes through verifyingReader and Arrow's
// reader. maxRows is the most rows the file's batches can hold in all: a
// batch's rows are backed by the file's bytes, at least a bit each once
// decompressed (at most 256 x the file, LimitAllocator). The caller
// releases recs; a panic of Arrow's reader on a corrupt file is the
// caller's to recover while it reads the records.
func OpenFile(f *os.File, zeroCopy bool) (recs Records, maxRows int64, err error) {
	defer func() {
		if p := recover(); p != nil {
			recs, maxRows, err = nil, 0, fmt.Errorf("arrow: corrupt file: %v", p)
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	size := fi.Size()
	start, end := int64(0), size
	magic := make([]byte, len(arrowFileMagic))
	if n, _ := f.ReadAt(magic, 0); n == len(magic) && bytes.Equal(magic, arrowFileMagic) {
		// File format: magic, padding to 8, stream messages, footer,
		// int32 footer length, magic.
		tail := make([]byte, 10)
		if size < 18 {
			return nil, 0, errors.New("arrow: file too short")
		}
		if _, err := f.ReadAt(tail, size-10); err != nil {
			return nil, 0, fmt.Errorf("arrow: %w", err)
		}
		if !bytes.Equal(tail[4:], arrowFileMagic) {
			return nil, 0, errors.New("arrow: file does not end with the arrow magic")
		}
		footer := int64(int32(binary.LittleEndian.Uint32(tail)))
		start, end = 8, size-10-footer
		if footer < 0 || end < start {
			return nil, 0, errors.New("arrow: corrupt footer length")
		}
	}
	var sr Records
	if zeroCopy && size <= inMemoryMax {
		// One read of the file; the columns are slices of it.
		data := make([]byte, size)
		if _, err := io.ReadFull(io.NewSectionReader(f, 0, size), data); err != nil {
			return nil, 0, fmt.Errorf("arrow: %w", err)
		}
		z, err := newZCRecords(data[start:end])
		switch {
		case err == nil:
			sr = z
		case errors.Is(err, errZCUnsupported):
			sr, err = arrowStream(bytes.NewReader(data[start:end]), end-start)
			if err != nil {
				return nil, 0, err
			}
		default:
			return nil, 0, fmt.Errorf("arrow: %w", err)
		}
	} else {
		sr, err = arrowStream(bufio.NewReaderSize(io.NewSectionReader(f, start, end-start), 1<<16), end-start)
		if err != nil {
			return nil, 0, err
		}
	}
	return sr, 2048*size + maxBodilessRows, nil
}

// inMemoryMax is the largest Arrow file read into memory and loaded
// without copying its buffers (zcRecords); a larger one is streamed through
// Arrow's reader, which copies each buffer but holds one batch at a time.
const inMemoryMax = 4 << 30

// arrowStream reads the IPC messages of r (size bytes) through
// verifyingReader and Arrow's stream reader.
func arrowStream(r io.Reader, size int64) (Records, error) {
	mem := &limitAllocator{mem: memory.NewGoAllocator(), max: min(8<<30, 1<<20+256*size)}
	mr := newVerifyingReader(r, size, mem)
	sr, err := ipc.NewReaderFromMessageReader(mr, ipc.WithAllocator(mem))
	if err != nil {
		mr.Release()
		return nil, fmt.Errorf("arrow: %w", err)
	}
	return sr, nil
}
