package km

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/varint"
)

// TreeCounter is the binary-tree counter for continual release (Dwork,
// Naor, Pitassi and Rothblum 2010; Chan, Shi and Song 2011, "binary
// mechanism"), over a vector of cells. At each of at most Horizon steps the
// caller adds one step's increments per cell; after every step Prefix
// releases the running totals with noise. Step t's increments enter the
// dyadic node of every level that covers t, so one item touches
// Levels = floor(log2 Horizon) + 1 nodes; each node gets two-sided geometric
// noise of scale Levels x sensitivity / epsilon when it completes, and a
// prefix sum adds the noisy nodes of the binary digits of t (at most Levels,
// so the error variance is popcount(t) x Var(node noise) = O(log^2 T / eps^2)
// per cell, against O(T / eps^2) for fresh noise per release and
// composition). The whole stream of Horizon releases is epsilon-DP, with
// sensitivity the L1 change of all increments of the stream when one record
// is added or removed (1 for a histogram under add/remove-one).
//
// Noise is drawn once per node and stored; MarshalBinary keeps the drawn
// noise, so a counter restored after a restart releases the same values and
// never draws a node twice (redrawing would let an observer average noise
// away). The serialized state also holds the exact partial sums the
// mechanism needs: it is as sensitive as the input data.
type TreeCounter struct {
	horizon     int
	levels      int
	cells       int
	epsilon     float64
	sensitivity float64
	scale       float64
	t           int
	// alpha[l] is the exact sum of the node of level l that is complete or
	// in progress; noisy[l] its noisy value, valid while bit l of t is set.
	alpha [][]int64
	noisy [][]int64
}

// NewTreeCounter returns a counter for at most horizon steps over cells
// cells, epsilon-DP for the whole stream given the stream's L1 sensitivity.
func NewTreeCounter(horizon, cells int, sensitivity, epsilon float64) (*TreeCounter, error) {
	if horizon < 1 {
		return nil, fmt.Errorf("tree counter: horizon must be >= 1, got %d", horizon)
	}
	if cells < 1 {
		return nil, fmt.Errorf("tree counter: need at least one cell, got %d", cells)
	}
	if !(epsilon > 0) || math.IsInf(epsilon, 0) {
		return nil, fmt.Errorf("tree counter: epsilon must be positive and finite, got %v", epsilon)
	}
	if !(sensitivity > 0) || math.IsInf(sensitivity, 0) {
		return nil, fmt.Errorf("tree counter: sensitivity must be positive and finite, got %v", sensitivity)
	}
	levels := bits.Len(uint(horizon)) // floor(log2 horizon) + 1
	if float64(levels)*float64(cells) > kmMaxCells {
		return nil, fmt.Errorf("tree counter: %d levels x %d cells too large", levels, cells)
	}
	c := &TreeCounter{horizon: horizon, levels: levels, cells: cells, epsilon: epsilon,
		sensitivity: sensitivity, scale: float64(levels) * sensitivity / epsilon}
	if c.scale > 1<<32 { // dp.DiscreteLaplace's limit
		return nil, fmt.Errorf("tree counter: node noise scale %v too large", c.scale)
	}
	c.alloc()
	return c, nil
}

func (c *TreeCounter) alloc() {
	flat := make([]int64, 2*c.levels*c.cells)
	c.alpha = make([][]int64, c.levels)
	c.noisy = make([][]int64, c.levels)
	for l := 0; l < c.levels; l++ {
		c.alpha[l] = flat[(2*l)*c.cells : (2*l+1)*c.cells : (2*l+1)*c.cells]
		c.noisy[l] = flat[(2*l+1)*c.cells : (2*l+2)*c.cells : (2*l+2)*c.cells]
	}
}

// Horizon, Levels, Cells, Steps and Epsilon describe the counter.
func (c *TreeCounter) Horizon() int { return c.horizon }

// Levels is floor(log2 Horizon) + 1, the nodes one item touches.
func (c *TreeCounter) Levels() int { return c.levels }

// Cells is the length of the counted vector.
func (c *TreeCounter) Cells() int { return c.cells }

// Steps is the number of steps taken so far.
func (c *TreeCounter) Steps() int { return c.t }

// Epsilon is the budget of the whole stream.
func (c *TreeCounter) Epsilon() float64 { return c.epsilon }

// NodeScale is the noise scale of each node, Levels x sensitivity / epsilon.
func (c *TreeCounter) NodeScale() float64 { return c.scale }

// NoiseVariance is the variance of the noise in each cell of Prefix after
// the current step: popcount(Steps) node noises.
func (c *TreeCounter) NoiseVariance() float64 {
	return float64(bits.OnesCount(uint(c.t))) * discreteLaplaceVariance(c.scale)
}

// ErrHorizonReached is returned by Step after Horizon steps.
var ErrHorizonReached = errors.New("tree counter: horizon reached")

// Step adds one step's increments (len == Cells) and draws the noise of the
// node that completes. The increments are not retained beyond the node sums.
func (c *TreeCounter) Step(src dp.Source, inc []int64) error {
	if c.t >= c.horizon {
		return ErrHorizonReached
	}
	if len(inc) != c.cells {
		return fmt.Errorf("tree counter step: %d increments, want %d", len(inc), c.cells)
	}
	if src == nil {
		return fmt.Errorf("tree counter step: nil randomness source")
	}
	lap, err := dp.NewLaplaceSampler(c.scale)
	if err != nil {
		return fmt.Errorf("tree counter step: %w", err)
	}
	t := c.t + 1
	i := bits.TrailingZeros(uint(t))
	// alpha_i = sum_{j<i} alpha_j + x_t; the lower nodes are absorbed.
	ai, ni := c.alpha[i], c.noisy[i]
	copy(ai, inc)
	for j := 0; j < i; j++ {
		aj, nj := c.alpha[j], c.noisy[j]
		for k := range ai {
			ai[k] += aj[k]
			aj[k], nj[k] = 0, 0
		}
	}
	for k := range ai {
		ni[k] = ai[k] + lap.Draw(src)
	}
	c.t = t
	return nil
}

// Prefix writes the noisy running totals after the current step into dst
// (len == Cells; allocated if nil) and returns it. It draws nothing: calling
// it again, or after a restore, gives the same values.
func (c *TreeCounter) Prefix(dst []int64) []int64 {
	if dst == nil || len(dst) != c.cells {
		dst = make([]int64, c.cells)
	}
	clear(dst)
	for l := 0; l < c.levels; l++ {
		if c.t&(1<<l) == 0 {
			continue
		}
		for k, v := range c.noisy[l] {
			dst[k] += v
		}
	}
	return dst
}

const treeMagic = "DPTREE01"

// MarshalBinary encodes the counter, drawn noise included.
func (c *TreeCounter) MarshalBinary() ([]byte, error) {
	out := []byte(treeMagic)
	putU := func(v uint64) { out = binary.AppendUvarint(out, v) }
	putI := func(v int64) { out = binary.AppendVarint(out, v) }
	putU(uint64(c.horizon))
	putU(uint64(c.cells))
	putU(math.Float64bits(c.epsilon))
	putU(math.Float64bits(c.sensitivity))
	putU(uint64(c.t))
	for l := 0; l < c.levels; l++ {
		for k := 0; k < c.cells; k++ {
			putI(c.alpha[l][k])
			putI(c.noisy[l][k])
		}
	}
	return out, nil
}

// UnmarshalBinary restores a counter written by MarshalBinary.
func (c *TreeCounter) UnmarshalBinary(data []byte) error {
	if len(data) < len(treeMagic) || string(data[:len(treeMagic)]) != treeMagic {
		return fmt.Errorf("tree counter decode: bad magic")
	}
	r := varint.NewDecoder(data[len(treeMagic):])
	getU, getI := r.Uvarint, r.Varint
	horizon, cells := getU(), getU()
	eps, sens := math.Float64frombits(getU()), math.Float64frombits(getU())
	t := getU()
	if err := r.Err(); err != nil {
		return fmt.Errorf("tree counter decode: header: %w", err)
	}
	if horizon > math.MaxInt32 || cells > math.MaxInt32 {
		return fmt.Errorf("tree counter decode: implausible size (horizon %d, cells %d)", horizon, cells)
	}
	if t > horizon {
		return fmt.Errorf("tree counter decode: %d steps beyond horizon %d", t, horizon)
	}
	// each node value takes at least one byte: check before allocating
	if uint64(r.Len()) < 2*uint64(bits.Len64(horizon))*cells {
		return fmt.Errorf("tree counter decode: truncated state")
	}
	fresh, err := NewTreeCounter(int(horizon), int(cells), sens, eps)
	if err != nil {
		return fmt.Errorf("tree counter decode: %w", err)
	}
	fresh.t = int(t)
	for l := 0; l < fresh.levels; l++ {
		for k := 0; k < fresh.cells; k++ {
			fresh.alpha[l][k] = getI()
			fresh.noisy[l][k] = getI()
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("tree counter decode: nodes: %w", err)
	}
	if r.Len() != 0 {
		return fmt.Errorf("tree counter decode: %d trailing bytes", r.Len())
	}
	*c = *fresh
	return nil
}
