package aggregators

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/dpsurv/dpsurv/regression"
)

// The window state of the discrete kind (discreteKind, discrete.go): the
// window's included records, compact, up to params.max_records.

// discreteWindow is a discrete window's record state: per record its
// interval and event bit packed as s<<1 | event, and its covariates already
// centred, scaled and projected onto the unit ball, as float32. 4 + 4d
// bytes per record; at most max_records records.
type discreteWindow struct {
	d      int
	packed []uint32
	x      []float32
}

func (w *discreteWindow) len() int { return len(w.packed) }

func (w *discreteWindow) bytes() int { return 4*cap(w.packed) + 4*cap(w.x) }

// recordBytes is the state one record takes.
func (w *discreteWindow) recordBytes() int { return 4 + 4*w.d }

// push appends a record, growing the storage geometrically but never past
// limit records.
func (w *discreteWindow) push(s int, event bool, x []float32, limit int) {
	if len(w.packed) == cap(w.packed) {
		n := min(max(2*cap(w.packed), 1024), limit)
		p := make([]uint32, len(w.packed), n)
		copy(p, w.packed)
		xs := make([]float32, len(w.x), n*w.d)
		copy(xs, w.x)
		w.packed, w.x = p, xs
	}
	v := uint32(s) << 1
	if event {
		v |= 1
	}
	w.packed = append(w.packed, v)
	w.x = append(w.x, x...)
}

// set overwrites record i (a newer version of its patient).
func (w *discreteWindow) set(i, s int, event bool, x []float32) {
	v := uint32(s) << 1
	if event {
		v |= 1
	}
	w.packed[i] = v
	copy(w.x[i*w.d:(i+1)*w.d], x)
}

// encode writes the records little-endian: per record the packed uint32
// then d float32 bits.
func (w *discreteWindow) encode() []byte {
	out := make([]byte, 0, w.len()*w.recordBytes())
	for i, v := range w.packed {
		out = binary.LittleEndian.AppendUint32(out, v)
		for _, f := range w.x[i*w.d : (i+1)*w.d] {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(f))
		}
	}
	return out
}

// decodeDiscrete reads an encoded window of d covariates, q intervals.
func decodeDiscrete(data []byte, d, q, limit int) (*discreteWindow, error) {
	w := &discreteWindow{d: d}
	rb := w.recordBytes()
	if len(data)%rb != 0 {
		return nil, fmt.Errorf("malformed discrete window: %d bytes is not a multiple of %d", len(data), rb)
	}
	n := len(data) / rb
	if n > limit {
		return nil, fmt.Errorf("malformed discrete window: %d records above the cap %d", n, limit)
	}
	w.packed = make([]uint32, n)
	w.x = make([]float32, n*d)
	for i := range n {
		rec := data[i*rb : (i+1)*rb]
		v := binary.LittleEndian.Uint32(rec)
		if s := int(v >> 1); s < 1 || s > q {
			return nil, fmt.Errorf("malformed discrete window: interval %d out of [1, %d]", s, q)
		}
		w.packed[i] = v
		for j := range d {
			f := math.Float32frombits(binary.LittleEndian.Uint32(rec[4+4*j:]))
			if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				return nil, errors.New("malformed discrete window: covariate not finite")
			}
			w.x[i*d+j] = f
		}
	}
	return w, nil
}

// data rebuilds the window as regression.Data: each record's time is the
// middle of its interval (so FitDiscrete maps it back to the same
// interval) and its covariates are the stored, already scaled ones (fit
// with identity scaling; FitDiscrete re-projects rows whose float32
// rounding left them a hair outside the unit ball).
func (w *discreteWindow) data(q int, timeMax float64) regression.Data {
	n := w.len()
	d := regression.Data{Time: make([]float64, n), Event: make([]bool, n), X: make([][]float64, n)}
	flat := make([]float64, n*w.d)
	for i, v := range w.packed {
		s := float64(v >> 1)
		d.Time[i] = (s - 0.5) / float64(q) * timeMax
		d.Event[i] = v&1 == 1
		row := flat[i*w.d : (i+1)*w.d : (i+1)*w.d]
		for j := range row {
			row[j] = float64(w.x[i*w.d+j])
		}
		d.X[i] = row
	}
	return d
}

// discreteInterval maps a time to the model's interval s = min(q, max(1,
// ceil(t/time_max q))) (mechanisms.md section 5), t taken into [0,
// time_max]; beyond reports a time past the horizon, which the caller
// counts as censored in the last interval (administrative censoring,
// mechanisms.md section 0), never as an event there.
func discreteInterval(t, timeMax float64, q int) (s int, beyond bool) {
	tc := math.Min(math.Max(t, 0), timeMax)
	s = int(math.Ceil(tc / timeMax * float64(q)))
	return min(max(s, 1), q), t > timeMax
}

// snapshot implements window: no cells, the records (encode).
func (w *discreteWindow) snapshot() (cells, records []byte) { return []byte{}, w.encode() }
