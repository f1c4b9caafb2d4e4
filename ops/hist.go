package ops

import (
	"math"
	"sync"
	"time"
)

// Histogram records durations in logarithmic buckets (ratio 1.02 from
// 10 µs to about 1000 s) in constant memory, so a long load run does not
// grow with the number of observations. A quantile is reported as its
// bucket's upper edge: at most 2 % above the exact value, never below it
// (values under 10 µs report 10 µs, values above the range report the
// maximum observed).
type Histogram struct {
	mu     sync.Mutex
	counts []uint64
	n      uint64
	sum    float64
	max    time.Duration
}

const (
	histMin   = 10 * time.Microsecond
	histRatio = 1.02
	histBins  = 931 // histMin * 1.02^931 ~ 1000 s
)

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram { return &Histogram{counts: make([]uint64, histBins+1)} }

var logRatio = math.Log(histRatio)

func bucketOf(d time.Duration) int {
	if d <= histMin {
		return 0
	}
	b := int(math.Ceil(math.Log(float64(d)/float64(histMin)) / logRatio))
	if b > histBins {
		return histBins
	}
	return b
}

func upperEdge(b int) time.Duration {
	return time.Duration(float64(histMin) * math.Pow(histRatio, float64(b)))
}

// Observe adds one duration; weight counts it that many times (records
// sharing one message's latency).
func (h *Histogram) Observe(d time.Duration, weight int) {
	if weight <= 0 {
		return
	}
	if d < 0 {
		d = 0
	}
	h.mu.Lock()
	h.counts[bucketOf(d)] += uint64(weight)
	h.n += uint64(weight)
	h.sum += d.Seconds() * float64(weight)
	h.max = max(h.max, d)
	h.mu.Unlock()
}

// Count is the total weight observed.
func (h *Histogram) Count() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// Mean is the exact mean of the observations.
func (h *Histogram) Mean() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n) * float64(time.Second))
}

// Max is the largest observation.
func (h *Histogram) Max() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.max
}

// Quantile returns the q-quantile (0 < q <= 1): the smallest bucket edge
// with at least ceil(q n) observations at or below it; 0 when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == 0 || !(q > 0) {
		return 0
	}
	q = min(q, 1)
	rank := uint64(math.Ceil(q * float64(h.n)))
	var c uint64
	for b, k := range h.counts {
		c += k
		if c >= rank {
			if b == histBins {
				return h.max
			}
			return min(upperEdge(b), max(h.max, histMin))
		}
	}
	return h.max
}

// Reset empties the histogram.
func (h *Histogram) Reset() {
	h.mu.Lock()
	clear(h.counts)
	h.n, h.sum, h.max = 0, 0, 0
	h.mu.Unlock()
}
