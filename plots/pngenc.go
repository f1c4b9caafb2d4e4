package plots

import (
	"bufio"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"image"
	"io"
)

// encodeOpaquePNG writes img as an 8-bit RGB PNG when every pixel is
// opaque (a figure on its white background always is) and reports false,
// having written nothing, otherwise. Each row is stored with PNG's Up
// filter (the difference from the row above) and deflated at the fastest
// level: png.Encoder tries all five filters on every row and keeps the
// smallest sum, which took about two thirds of a figure's encoding; on a
// figure (long runs of equal rows and of white) Up compresses about as
// well (TestPNGSamePixelsAsDefaultLevel logs both sizes).
func encodeOpaquePNG(w io.Writer, img *image.RGBA) (bool, error) {
	r := img.Bounds()
	width, height := r.Dx(), r.Dy()
	if width <= 0 || height <= 0 || int64(width)*3+1 > 1<<31 {
		return false, nil
	}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		row := img.Pix[img.PixOffset(r.Min.X, y):][: 4*width : 4*width]
		for i := 3; i < len(row); i += 4 {
			if row[i] != 0xff {
				return false, nil
			}
		}
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	if _, err := io.WriteString(bw, "\x89PNG\r\n\x1a\n"); err != nil {
		return true, err
	}
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(width))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(height))
	ihdr[8], ihdr[9] = 8, 2 // bit depth 8, colour type RGB; deflate, adaptive filtering, no interlace
	if err := writeChunk(bw, "IHDR", ihdr[:]); err != nil {
		return true, err
	}
	// zlib's output goes to the file in IDAT chunks of up to 64 KiB.
	idat := bufio.NewWriterSize(chunkWriter{w: bw, typ: "IDAT"}, 1<<16)
	zw, err := zlib.NewWriterLevel(idat, zlib.BestSpeed)
	if err != nil {
		return true, err
	}
	prev, cur := make([]byte, 3*width), make([]byte, 3*width)
	line := make([]byte, 1+3*width)
	line[0] = 2 // Up
	for y := r.Min.Y; y < r.Max.Y; y++ {
		src := img.Pix[img.PixOffset(r.Min.X, y):]
		for x := range width {
			copy(cur[3*x:3*x+3], src[4*x:4*x+3])
		}
		for i, v := range cur {
			line[1+i] = v - prev[i]
		}
		if _, err := zw.Write(line); err != nil {
			return true, err
		}
		prev, cur = cur, prev
	}
	if err := zw.Close(); err != nil {
		return true, err
	}
	if err := idat.Flush(); err != nil {
		return true, err
	}
	if err := writeChunk(bw, "IEND", nil); err != nil {
		return true, err
	}
	return true, bw.Flush()
}

// chunkWriter writes each Write as one PNG chunk of type typ.
type chunkWriter struct {
	w   io.Writer
	typ string
}

func (c chunkWriter) Write(p []byte) (int, error) {
	if err := writeChunk(c.w, c.typ, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// writeChunk writes one PNG chunk: length, type, data and the CRC-32 of
// type and data.
func writeChunk(w io.Writer, typ string, data []byte) error {
	var head [8]byte
	binary.BigEndian.PutUint32(head[:4], uint32(len(data)))
	copy(head[4:], typ)
	crc := crc32.NewIEEE()
	crc.Write(head[4:])
	crc.Write(data)
	var tail [4]byte
	binary.BigEndian.PutUint32(tail[:], crc.Sum32())
	for _, b := range [][]byte{head[:], data, tail[:]} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}
