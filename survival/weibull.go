package survival

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Compressed is a time-to-event sample grouped by distinct time: Time is
// strictly increasing, Events[i] is the number of events (uncensored records)
// at Time[i] and Count[i] the number of records (events plus censorings)
// there. Counts are float64 so that sums over the form need no conversions;
// they hold whole numbers.
type Compressed struct {
	Time, Events, Count []float64
}

// Compress groups records by distinct time. time[i] and event[i] describe
// record i; only the first min(len(time), len(event)) records are read, and
// records whose time is NaN or infinite are skipped (callers validate input
// before it gets here; CompressChecked reports both problems instead). The
// cost is linear in the number of records plus m log m for the m distinct
// times, so the Weibull fits downstream cost O(m), not O(records).
func Compress(time []float64, event []bool) Compressed {
	n := min(len(time), len(event))
	idx := make(map[float64]int32, 64)
	var ts, evs, cnt []float64
	for i := 0; i < n; i++ {
		t := time[i]
		if math.IsNaN(t) || math.IsInf(t, 0) {
			continue
		}
		if t == 0 {
			t = 0 // fold -0 into +0
		}
		j, ok := idx[t]
		if !ok {
			j = int32(len(ts))
			idx[t] = j
			ts = append(ts, t)
			evs = append(evs, 0)
			cnt = append(cnt, 0)
		}
		cnt[j]++
		if event[i] {
			evs[j]++
		}
	}
	order := make([]int32, len(ts))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		switch {
		case ts[a] < ts[b]:
			return -1
		case ts[a] > ts[b]:
			return 1
		}
		return 0
	})
	out := Compressed{
		Time:   make([]float64, len(ts)),
		Events: make([]float64, len(ts)),
		Count:  make([]float64, len(ts)),
	}
	for i, j := range order {
		out.Time[i], out.Events[i], out.Count[i] = ts[j], evs[j], cnt[j]
	}
	return out
}

// CompressChecked is Compress that refuses, instead of skipping, records it
// cannot use: slices of different lengths and non-finite times.
func CompressChecked(time []float64, event []bool) (Compressed, error) {
	if len(time) != len(event) {
		return Compressed{}, fmt.Errorf("compress: %d times but %d event flags", len(time), len(event))
	}
	for i, t := range time {
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return Compressed{}, fmt.Errorf("compress: record %d: time is not finite", i)
		}
	}
	return Compress(time, event), nil
}

// Records returns the number of records (the sum of Count).
func (c Compressed) Records() float64 {
	s := 0.0
	for _, v := range c.Count {
		s += v
	}
	return s
}

// TotalEvents returns the number of events (the sum of Events).
func (c Compressed) TotalEvents() float64 {
	s := 0.0
	for _, v := range c.Events {
		s += v
	}
	return s
}

// Validate checks the structural invariants: equal lengths, strictly
// increasing finite times, whole non-negative counts and 0 <= Events <= Count.
func (c Compressed) Validate() error {
	if len(c.Time) != len(c.Events) || len(c.Time) != len(c.Count) {
		return fmt.Errorf("compressed sample: lengths differ (time %d, events %d, count %d)",
			len(c.Time), len(c.Events), len(c.Count))
	}
	for i, t := range c.Time {
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return fmt.Errorf("compressed sample: time %d is not finite", i)
		}
		if i > 0 && !(t > c.Time[i-1]) {
			return fmt.Errorf("compressed sample: times not strictly increasing at %d", i)
		}
		n, d := c.Count[i], c.Events[i]
		if !(n >= 0) || n != math.Trunc(n) || math.IsInf(n, 0) {
			return fmt.Errorf("compressed sample: count %d is not a whole non-negative number", i)
		}
		if !(d >= 0) || d != math.Trunc(d) || d > n {
			return fmt.Errorf("compressed sample: events %d not a whole number in [0, count]", i)
		}
	}
	return nil
}

// WeibullMLE is the non-private maximum-likelihood Weibull fit,
// S(t) = exp(-(t/Scale)^Shape), in the time unit of the input.
type WeibullMLE struct {
	Shape, Scale float64
	// LogLik is the log-likelihood of the times at the optimum,
	// sum d (ln p + (p-1) ln t - p ln lambda) - sum (t/lambda)^p; it equals
	// R survreg's loglik.
	LogLik float64
	// Records and Events are the sample's record and event counts.
	Records, Events float64
	// Iterations is the number of Newton/bisection steps taken.
	Iterations int
}

// ErrWeibullNoEvents is returned by FitWeibull for a sample without events.
var ErrWeibullNoEvents = errors.New("no events")

// ErrWeibullNoFiniteMLE is returned when the profile score has no root in
// (0, infinity): the likelihood increases without bound in the shape, which
// happens when every record sits at one time, or every event is at the
// largest time.
var ErrWeibullNoFiniteMLE = errors.New("likelihood has no finite maximum in the shape")

// FitWeibull computes the Weibull MLE: the shape p solves
//
//	sum t^p ln t / sum t^p = 1/p + sum d ln t / sum d
//
// and lambda^p = sum t^p / sum d, every sum weighted by the counts of the
// compressed form. It agrees with R's survreg(Surv(time, event) ~ 1,
// dist = "weibull") with p = 1/scale and lambda = exp(intercept). Times must
// be positive. Internally times are divided by their maximum (the shape is
// invariant under rescaling, lambda scales with it), which keeps t^p in
// (0, 1]; this data-derived scaling is fine because this is the non-private
// path.
func FitWeibull(c Compressed) (WeibullMLE, error) {
	if err := c.Validate(); err != nil {
		return WeibullMLE{}, fmt.Errorf("weibull mle: %w", err)
	}
	// Drop empty groups so that the largest time carries weight.
	var kept Compressed
	for i, n := range c.Count {
		if n > 0 {
			kept.Time = append(kept.Time, c.Time[i])
			kept.Events = append(kept.Events, c.Events[i])
			kept.Count = append(kept.Count, n)
		}
	}
	c = kept
	if len(c.Time) == 0 {
		return WeibullMLE{}, fmt.Errorf("weibull mle: %w", ErrWeibullNoEvents)
	}
	if c.Time[0] <= 0 {
		// The value itself stays out of the message: it is a record's time.
		return WeibullMLE{}, fmt.Errorf("weibull mle: times must be positive")
	}
	tmax := c.Time[len(c.Time)-1]
	lt := make([]float64, len(c.Time)) // ln(t / tmax) <= 0
	var events, records, sumDLog float64
	for i, t := range c.Time {
		lt[i] = math.Log(t / tmax)
		events += c.Events[i]
		records += c.Count[i]
		sumDLog += c.Events[i] * lt[i]
	}
	if events == 0 {
		return WeibullMLE{}, fmt.Errorf("weibull mle: %w", ErrWeibullNoEvents)
	}
	meanDLog := sumDLog / events

	// score(p) = E_w[ln t] - 1/p - meanDLog with weights w = count * t^p; it is
	// strictly increasing (derivative Var_w(ln t) + 1/p^2), -> -inf at 0.
	score := func(p float64) (f, df float64) {
		var s0, s1, s2 float64
		for i, l := range lt {
			w := c.Count[i] * math.Exp(p*l)
			s0 += w
			s1 += w * l
			s2 += w * l * l
		}
		m := s1 / s0
		return m - 1/p - meanDLog, s2/s0 - m*m + 1/(p*p)
	}

	lo, hi := 0.0, 1.0
	iters := 0
	for {
		f, _ := score(hi)
		iters++
		if f > 0 {
			break
		}
		lo = hi
		hi *= 2
		if hi > 1e7 {
			return WeibullMLE{}, fmt.Errorf("weibull mle: %w", ErrWeibullNoFiniteMLE)
		}
	}
	// Safeguarded Newton inside the bracket [lo, hi], score(lo) <= 0 < score(hi).
	p := hi
	if lo > 0 {
		p = (lo + hi) / 2
	}
	for it := 0; it < 200; it++ {
		iters++
		f, df := score(p)
		if f > 0 {
			hi = p
		} else {
			lo = p
		}
		next := p - f/df
		if !(next > lo && next < hi) {
			next = (lo + hi) / 2
		}
		if math.Abs(next-p) <= 4e-16*p || hi-lo <= 4e-16*hi {
			p = next
			break
		}
		p = next
	}

	var sw float64
	for i, l := range lt {
		sw += c.Count[i] * math.Exp(p*l)
	}
	logScale := math.Log(tmax) + (math.Log(sw)-math.Log(events))/p
	scale := math.Exp(logScale)
	return WeibullMLE{
		Shape:      p,
		Scale:      scale,
		LogLik:     WeibullLogLik(c, p, scale),
		Records:    records,
		Events:     events,
		Iterations: iters,
	}, nil
}

// WeibullLogLik returns the Weibull log-likelihood of the compressed sample at
// (shape, scale): sum d (ln p + (p-1) ln t - p ln lambda) - sum (t/lambda)^p.
// Times must be positive; the result is -Inf or NaN otherwise.
func WeibullLogLik(c Compressed, shape, scale float64) float64 {
	ll := 0.0
	lp, ls := math.Log(shape), math.Log(scale)
	for i, t := range c.Time {
		l := math.Log(t)
		ll += c.Events[i]*(lp+(shape-1)*l-shape*ls) - c.Count[i]*math.Exp(shape*(l-ls))
	}
	return ll
}
