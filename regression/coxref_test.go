package regression

import (
	"math"
	"math/rand/v2"
	"testing"
)

// coxEvalRef is the previous, direct evaluation of the log partial
// likelihood, its score and information (row by row, one Efron term at a
// time): the reference the grouped closed form of coxData.eval is checked
// against. x is centred and sorted by time descending; groups are the runs
// of equal time.
func coxEvalRef(x []float64, p int, event []bool, groups [][2]int, beta []float64, ties Ties, u, imat []float64) float64 {
	n := len(event)
	cd := struct {
		n, p  int
		x     []float64
		event []bool
	}{n, p, x, event}
	eta := make([]float64, n)
	maxEta := math.Inf(-1)
	for i := 0; i < n; i++ {
		var v float64
		for j := 0; j < p; j++ {
			v += beta[j] * cd.x[i*p+j]
		}
		eta[i] = v
		maxEta = math.Max(maxEta, v)
	}
	want := u != nil
	if want {
		for j := range u {
			u[j] = 0
		}
		for j := range imat {
			imat[j] = 0
		}
	}
	s1 := make([]float64, p)
	s2 := make([]float64, p*p)
	d1 := make([]float64, p)
	d2 := make([]float64, p*p)
	a1 := make([]float64, p)
	var s0, ll float64
	for _, g := range groups {
		var d0 float64
		var nd int
		for j := range d1 {
			d1[j] = 0
		}
		for j := range d2 {
			d2[j] = 0
		}
		for i := g[0]; i < g[1]; i++ {
			r := math.Exp(eta[i] - maxEta)
			xi := cd.x[i*p : (i+1)*p]
			s0 += r
			for a := 0; a < p; a++ {
				s1[a] += r * xi[a]
				if want {
					for b := 0; b <= a; b++ {
						s2[a*p+b] += r * xi[a] * xi[b]
					}
				}
			}
			if cd.event[i] {
				nd++
				d0 += r
				ll += eta[i] - maxEta
				for a := 0; a < p; a++ {
					d1[a] += r * xi[a]
					if want {
						u[a] += xi[a]
						for b := 0; b <= a; b++ {
							d2[a*p+b] += r * xi[a] * xi[b]
						}
					}
				}
			}
		}
		if nd == 0 {
			continue
		}
		// The nd terms log(t0) are summed as the logs of products of up to
		// 8 terms (kept within 1e±150): one log per 8 tied events.
		prod := 1.0
		for k := 0; k < nd; k++ {
			frac := 0.0
			if ties == TiesEfron {
				frac = float64(k) / float64(nd)
			}
			t0 := s0 - frac*d0
			prod *= t0
			if k&7 == 7 || !(prod > 1e-150 && prod < 1e150) {
				ll -= math.Log(prod)
				prod = 1
			}
			if !want {
				continue
			}
			for a := 0; a < p; a++ {
				a1[a] = (s1[a] - frac*d1[a]) / t0
				u[a] -= a1[a]
			}
			for a := 0; a < p; a++ {
				for b := 0; b <= a; b++ {
					imat[a*p+b] += (s2[a*p+b]-frac*d2[a*p+b])/t0 - a1[a]*a1[b]
				}
			}
		}
		if prod != 1 {
			ll -= math.Log(prod)
		}
	}
	if want {
		for a := 0; a < p; a++ {
			for b := 0; b < a; b++ {
				imat[b*p+a] = imat[a*p+b]
			}
		}
	}
	return ll
}

// randomCoxRows draws n records of p covariates from r: integer times in
// [0, distinct), two events in three, covariate j normal with mean j and
// SD j+1.
func randomCoxRows(r *rand.Rand, n, p, distinct int) (time []float64, event []bool, rows [][]float64) {
	time = make([]float64, n)
	event = make([]bool, n)
	rows = make([][]float64, n)
	for i := range n {
		time[i] = float64(r.IntN(distinct))
		event[i] = r.IntN(3) != 0
		rows[i] = make([]float64, p)
		for j := range p {
			rows[i][j] = r.NormFloat64()*float64(j+1) + float64(j)
		}
	}
	return time, event, rows
}

// refGroups is cd's runs of tied times as coxEvalRef reads them: each
// run's rows [start, end), and which sorted rows are events.
func refGroups(cd *coxData) (groups [][2]int, ev []bool) {
	groups = make([][2]int, len(cd.groups))
	ev = make([]bool, cd.n)
	for k, g := range cd.groups {
		groups[k] = [2]int{int(g.start), int(g.end)}
		for i := g.start; i < g.start+g.nd; i++ {
			ev[i] = true
		}
	}
	return groups, ev
}

// checkEvalRef: an evaluation's log-likelihood ll, score u and information
// imat agree with coxEvalRef's (want, ru, rimat) for n records.
func checkEvalRef(t *testing.T, what string, n int, ll float64, u, imat []float64, want float64, ru, rimat []float64) {
	t.Helper()
	if !closeRel(ll, want, 1e-11, 1e-9) {
		t.Fatalf("%s: loglik %.15g, reference %.15g", what, ll, want)
	}
	for j := range u {
		if !closeRel(u[j], ru[j], 1e-8, 1e-9*math.Sqrt(float64(n))) {
			t.Fatalf("%s: u[%d] = %.15g, reference %.15g", what, j, u[j], ru[j])
		}
	}
	for j := range imat {
		if !closeRel(imat[j], rimat[j], 1e-9, 1e-9) {
			t.Fatalf("%s: imat[%d] = %.15g, reference %.15g", what, j, imat[j], rimat[j])
		}
	}
}
