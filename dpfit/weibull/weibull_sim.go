package weibull

import (
	"math"
	"math/rand/v2"

	"github.com/dpsurv/dpsurv/dpfit"
	"github.com/dpsurv/dpsurv/survival"
)

// The interval simulation's data sets (see WeibullIntervals).

// weibullSim simulates data sets from a released fit (normalised units).
// The event times of a data set are drawn already binned: the counts of
// the public time cells are a multinomial draw (conditional binomials by
// dpfit.BinomialSim, each O(1) or O(mean) with mean at most
// binomialWaitingMean), so a data set costs O(cells), whatever the record
// count (issue 19: at 1 M records the per-event draws made a private fit
// with intervals 300 times slower than the fit itself). The distribution
// is the one of drawing every event time from the truncated Weibull and
// binning it. The multinomial is drawn in two stages over a partition of
// the cells into groups of consecutive cells whose times span a factor of
// at most exp(weibullGroupSpan) (or a few cells: weibullGroupCells; 191
// groups of 2,048 cells): the groups' counts first (sequential
// conditional binomials), then each group's count split among its cells
// the same way (countsCoarse, refine): a multinomial drawn along a
// partition tree is the multinomial. The groups' counts alone often settle
// a simulated shape's side of the released one (weibullCoarseSide), and
// then the cells are drawn only if the scale's pivot needs them.
type weibullSim struct {
	shape, scale, f1, timeMax float64
	n                         int64
	res                       int
	bw                        float64              // > 0: times at bin starts
	group                     []int                // group g is cells group[g] .. group[g+1]-1
	gcond                     []float64            // P(group g | event, not in groups < g)
	f1z                       dpfit.BinomialProb   // f1, gcond and cond as countsCoarse and refine
	gz, cz                    []dpfit.BinomialProb // draw with them (logarithms taken once)
	cond                      []float64            // P(cell j | event in j's group, not in its cells < j)
	gcnt                      []float64            // countsCoarse: events per group
	cnt                       []float64
	nt, nlt                   []float64   // sampleData: normalised time and its log per cell (res: time_max)
	buf                       weibullData // sampleData's arrays, reused
	pc                        *weibullPowCache
	tq                        []float64 // sumPowCells: t^tqExp per cell
	tqExp                     float64
	// coarsePrep's tables for weibullCoarseSide: the groups' end powers
	// at the scan's grid points (cgrid[j]) and at the pieces of the cells
	// next to the released shape (csub[m - csub0])
	cgrid []weibullGroupPows
	csub  []weibullGroupPows
	csub0 int
}

// weibullGroupSpan is the largest ln(t_last / t_first) of the cells'
// times within a group of weibullSim, unless the group holds fewer than
// res/weibullGroupCells cells (8 of 2,048: the first cells' times span
// more each); a cell whose time is 0 is a group of its own.
const (
	weibullGroupSpan  = 0.01
	weibullGroupCells = 256
)

func newWeibullSim(shape, scale, events float64, res int, bw, timeMax float64) *weibullSim {
	f1 := -math.Expm1(-math.Pow(1/scale, shape))
	n := int64(math.Round(events / math.Max(f1, 1e-300)))
	n = min(max(n, 1), 1<<40)
	s := &weibullSim{shape: shape, scale: scale, f1: f1, timeMax: timeMax, n: n, res: res, bw: bw}
	width := 1 / float64(res) // cell width, normalised units
	if bw > 0 {
		s.res = int(math.Ceil(timeMax / bw))
		width = bw / timeMax
	}
	s.cnt = make([]float64, s.res)
	// the groups: consecutive cells whose times span at most a factor
	// exp(weibullGroupSpan)
	s.group = append(s.group, 0)
	first := s.cellTime(0)
	minCells := max(1, s.res/weibullGroupCells)
	for j := 1; j < s.res; j++ {
		if tj := s.cellTime(j); !(first > 0) || (math.Log(tj/first) > weibullGroupSpan && j-s.group[len(s.group)-1] >= minCells) {
			s.group = append(s.group, j)
			first = tj
		}
	}
	s.group = append(s.group, s.res)
	s.gcnt = make([]float64, len(s.group)-1)
	// H(u) = (u/scale)^shape, the cumulative hazard; cell j is
	// [j width, (j+1) width) within (0, 1), the last one up to 1. Given
	// an event not in the cells before a (a cell's or a group's start),
	// it falls in [a, b) with probability (S(a) - S(b)) / (S(a) - S(c)) =
	// expm1(-(H(b)-H(a))) / expm1(-(H(c)-H(a))), c = 1 for the groups and
	// the end of its group for a cell.
	hz := make([]float64, s.res+1) // H at the start of cell j (j = res: 1)
	for j := range hz {
		u := 1.0
		if j < s.res {
			u = float64(j) * width
		}
		hz[j] = math.Pow(u/scale, shape)
	}
	cond := func(a, b, c int, last bool) float64 {
		ha := hz[a]
		den := math.Expm1(-(hz[c] - ha))
		v := 1.0
		if den != 0 && !last {
			v = math.Expm1(-(hz[b] - ha)) / den
		}
		if math.IsNaN(v) {
			v = 1 // the tail mass underflows: put what is left here
		}
		return min(max(v, 0), 1)
	}
	ng := len(s.gcnt)
	s.gcond = make([]float64, ng)
	s.cond = make([]float64, s.res)
	for g := range ng {
		lo, hi := s.group[g], s.group[g+1]
		s.gcond[g] = cond(lo, hi, s.res, g == ng-1)
		for j := lo; j < hi; j++ {
			s.cond[j] = cond(j, j+1, hi, j == hi-1)
		}
	}
	s.f1z = dpfit.NewBinomialProb(f1)
	s.gz = make([]dpfit.BinomialProb, ng)
	for g, v := range s.gcond {
		s.gz[g] = dpfit.NewBinomialProb(v)
	}
	s.cz = make([]dpfit.BinomialProb, s.res)
	for j, v := range s.cond {
		s.cz[j] = dpfit.NewBinomialProb(v)
	}
	return s
}

// counts draws one data set's event counts per cell into s.cnt and
// returns the number of events.
func (s *weibullSim) counts(src *rand.ChaCha8) int64 {
	e := s.countsCoarse(src)
	s.refine(src)
	return e
}

// countsCoarse draws one data set's event count and its split among the
// groups (s.gcnt); refine then draws the cells' counts (s.cnt) from the
// same stream.
func (s *weibullSim) countsCoarse(src *rand.ChaCha8) int64 {
	clear(s.gcnt)
	e := s.f1z.Sim(src, s.n)
	left := e
	for g := 0; g < len(s.gcnt) && left > 0; g++ {
		k := left
		if g < len(s.gcnt)-1 {
			k = s.gz[g].Sim(src, left)
		}
		s.gcnt[g] = float64(k)
		left -= k
	}
	return e
}

// refine splits each group's count (countsCoarse) among its cells.
func (s *weibullSim) refine(src *rand.ChaCha8) {
	clear(s.cnt)
	for g, c := range s.gcnt {
		left := int64(c)
		hi := s.group[g+1]
		for j := s.group[g]; j < hi && left > 0; j++ {
			k := left
			if j < hi-1 {
				k = s.cz[j].Sim(src, left)
			}
			s.cnt[j] = float64(k)
			left -= k
		}
	}
}

// cellTime is cell j's time in data units (its midpoint, or its bin's
// start).
func (s *weibullSim) cellTime(j int) float64 {
	if s.bw > 0 {
		return float64(j) * s.bw
	}
	return (float64(j) + 0.5) / float64(s.res) * s.timeMax
}

// sample draws one data set (times in data units).
func (s *weibullSim) sample(src *rand.ChaCha8) survival.Compressed {
	e := s.counts(src)
	var c survival.Compressed
	for j, k := range s.cnt {
		if k > 0 {
			c.Time = append(c.Time, s.cellTime(j))
			c.Events = append(c.Events, k)
			c.Count = append(c.Count, k)
		}
	}
	if cens := float64(s.n - e); cens > 0 {
		c.Time = append(c.Time, s.timeMax)
		c.Events = append(c.Events, 0)
		c.Count = append(c.Count, cens)
	}
	return c
}

// sampleData draws one data set as normaliseWeibull(sample(src), cfg)
// returns it, from the cells' normalised times and logs computed once.
func (s *weibullSim) sampleData(src *rand.ChaCha8, cfg WeibullConfig) weibullData {
	s.prepare(cfg)
	return s.data(s.counts(src))
}

// prepare computes the cells' normalised times and their logs (index res:
// the censored group at time_max) and the powers' cache, once.
func (s *weibullSim) prepare(cfg WeibullConfig) {
	if s.nt != nil {
		return
	}
	lo := math.Exp(-cfg.Omega)
	s.nt, s.nlt = make([]float64, s.res+1), make([]float64, s.res+1)
	for j := 0; j <= s.res; j++ {
		raw := s.timeMax // j == res: the censored group
		if j < s.res {
			raw = s.cellTime(j)
		}
		t := raw / cfg.TimeMax
		if !(t > lo) {
			t = lo
		}
		t = min(t, 1)
		s.nt[j], s.nlt[j] = t, max(math.Log(t), -cfg.Omega)
	}
	s.pc = &weibullPowCache{lt: s.nlt}
}

// data returns the data set of the cells' counts s.cnt with e events
// (normalised as normaliseWeibull would; prepare first).
func (s *weibullSim) data(e int64) weibullData {
	// the data set reuses the previous one's arrays: the caller is done
	// with it (eval's loop)
	d := weibullData{t: s.buf.t[:0], lt: s.buf.lt[:0], count: s.buf.count[:0], events: s.buf.events[:0], cell: s.buf.cell[:0], pc: s.pc}
	defer func() { s.buf = d }()
	add := func(j int, count, events float64) {
		if k := len(d.t) - 1; k >= 0 && d.t[k] == s.nt[j] {
			d.count[k] += count
			d.events[k] += events
		} else {
			d.t = append(d.t, s.nt[j])
			d.lt = append(d.lt, s.nlt[j])
			d.cell = append(d.cell, int32(j))
			d.count = append(d.count, count)
			d.events = append(d.events, events)
		}
		d.n += count
		d.e += events
	}
	for j, k := range s.cnt {
		if k > 0 {
			add(j, k, k)
		}
	}
	if cens := float64(s.n - e); cens > 0 {
		add(s.res, cens, 0)
	}
	for i := range d.t {
		d.sumDLog += d.events[i] * d.lt[i]
	}
	return d
}
