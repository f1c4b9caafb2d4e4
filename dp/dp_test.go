package dp

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// falseAlarm is the per-test false-alarm rate of every goodness-of-fit test
// in this package. With fixed seeds the outcome is deterministic; the rate
// says how unlucky a seed would have to be to fail a correct sampler.
const falseAlarm = 1e-4

// chiSquare returns the statistic and the critical value for observed counts
// against expected probabilities, pooling cells with expectation < 5.
func chiSquare(t *testing.T, counts []int, probs []float64) (stat, crit float64) {
	t.Helper()
	n := 0
	for _, c := range counts {
		n += c
	}
	var pooledC, pooledE float64
	df := -1
	for i, c := range counts {
		e := probs[i] * float64(n)
		pooledC += float64(c)
		pooledE += e
		if pooledE >= 5 {
			stat += (pooledC - pooledE) * (pooledC - pooledE) / pooledE
			df++
			pooledC, pooledE = 0, 0
		}
	}
	if pooledE > 0 {
		stat += (pooledC - pooledE) * (pooledC - pooledE) / pooledE
		df++
	}
	crit = distuv.ChiSquared{K: float64(df)}.Quantile(1 - falseAlarm)
	return stat, crit
}

func TestDiscreteLaplaceMatchesPMF(t *testing.T) {
	for _, scale := range []float64{0.5, 2, 20.000000000000004, 7.3} {
		t.Run(fmt.Sprint(scale), func(t *testing.T) {
			src := NewSeededSource(11)
			a := math.Exp(-1 / scale)
			const n = 100000
			lim := int(10*scale) + 5
			counts := make([]int, 2*lim+1)
			probs := make([]float64, 2*lim+1)
			for i := range n {
				_ = i
				z, err := DiscreteLaplace(src, scale)
				if err != nil {
					t.Fatal(err)
				}
				if z < int64(-lim) {
					z = int64(-lim)
				}
				if z > int64(lim) {
					z = int64(lim)
				}
				counts[z+int64(lim)]++
			}
			for z := -lim; z <= lim; z++ {
				az := math.Abs(float64(z))
				p := (1 - a) / (1 + a) * math.Pow(a, az)
				if z == -lim || z == lim {
					p = math.Pow(a, az) / (1 + a) // tail mass P(Z >= lim)
				}
				probs[z+lim] = p
			}
			stat, crit := chiSquare(t, counts, probs)
			if stat > crit {
				t.Fatalf("chi-square %.1f > critical %.1f", stat, crit)
			}
		})
	}
}

func TestDiscreteLaplaceRejectsBadScale(t *testing.T) {
	for _, s := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := DiscreteLaplace(NewSeededSource(1), s); err == nil {
			t.Errorf("scale %v accepted", s)
		}
	}
}

func TestLaplaceMechanismGridAndScale(t *testing.T) {
	src := NewSeededSource(5)
	const n = 50000
	var sumAbs float64
	for range n {
		v, err := LaplaceMechanism(src, 10.123456789, 1, 0.5)
		if err != nil {
			t.Fatal(err)
		}
		g := LaplaceGrid(2)
		if r := v / g; r != math.Round(r) {
			t.Fatalf("output %v not on grid %v", v, g)
		}
		sumAbs += math.Abs(v - 10.123456789)
	}
	// mean |Laplace(b)| = b = 2 (slightly above through the grid)
	if m := sumAbs / n; math.Abs(m-2) > 0.06 { // 5 sigma: sd of |L| is b, sd of mean 2/sqrt(n)=0.009
		t.Fatalf("mean abs noise %.4f, want 2", m)
	}
}

func TestTELossErratum(t *testing.T) {
	cases := []struct {
		eps  float64
		w    int
		want float64
	}{
		{0.1, 10, -math.Log(math.Expm1(0.1))}, // 2.2521..., not eps*W = 1
		{1, 5, 5 + math.Log1p(-math.Exp(-1))},
		{2, 3, 2*3 + math.Log1p(-math.Exp(-2))},
	}
	for _, c := range cases {
		got := TELoss(c.eps, c.w)
		if math.Abs(got-c.want) > 1e-12 {
			t.Errorf("TELoss(%v,%d) = %v, want %v", c.eps, c.w, got, c.want)
		}
		te, err := NewTE(c.eps, c.w)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(te.Loss()-got) > 1e-9 {
			t.Errorf("sampled table loss %v, formula %v", te.Loss(), got)
		}
		// Brute force over all pairs of the formula pmf.
		pmf := TEPMF(c.eps, c.w)
		bf := 0.0
		for _, a := range pmf {
			for _, b := range pmf {
				bf = math.Max(bf, math.Log(a/b))
			}
		}
		if math.Abs(bf-got) > 1e-12 {
			t.Errorf("brute force %v, formula %v", bf, got)
		}
	}
	if l := TELoss(0.1, 10); math.Abs(l-2.2521) > 1e-3 {
		t.Errorf("L(0.1,10) = %v, want about 2.25", l)
	}
}

// The loss of the clamped output, by brute force over every input and
// output of a small domain from the sampled table, equals ClampedLoss; on a
// long domain it is max(L, eps W) (mechanisms.md §1, erratum on the clamp).
func TestTEClampedLossBruteForce(t *testing.T) {
	for _, c := range []struct {
		eps  float64
		w    int
		tmax int64
	}{{0.5, 10, 40}, {2, 3, 20}, {0.1, 10, 45}, {1, 5, 7}, {0.7, 4, 3}, {0.3, 2, 1}, {1, 1, 5}} {
		te, err := NewTE(c.eps, c.w)
		if err != nil {
			t.Fatal(err)
		}
		pmf := te.PMF()
		// P[t][o] for inputs t and outputs o in [0, tmax]
		p := make([][]float64, c.tmax+1)
		for ti := range p {
			p[ti] = make([]float64, c.tmax+1)
			for d := -c.w; d <= c.w; d++ {
				o := min(max(int64(ti)+int64(d), 0), c.tmax)
				p[ti][o] += pmf[d+c.w]
			}
		}
		bf := 0.0
		for o := int64(0); o <= c.tmax; o++ {
			for a := max(0, o-int64(c.w)); a <= min(c.tmax, o+int64(c.w)); a++ {
				for b := max(0, o-int64(c.w)); b <= min(c.tmax, o+int64(c.w)); b++ {
					bf = math.Max(bf, math.Log(p[a][o]/p[b][o]))
				}
			}
		}
		if got := te.ClampedLoss(c.tmax); math.Abs(got-bf) > 1e-9 {
			t.Errorf("eps=%v W=%d tmax=%d: ClampedLoss %v, brute force %v", c.eps, c.w, c.tmax, got, bf)
		}
		if c.tmax >= 2*int64(c.w) {
			want := math.Max(TELoss(c.eps, c.w), c.eps*float64(c.w))
			if math.Abs(bf-want) > 1e-9 || math.Abs(TEClampedLoss(c.eps, c.w, c.tmax)-want) > 1e-15 {
				t.Errorf("eps=%v W=%d: brute force %v, max(L, eps W) %v", c.eps, c.w, bf, want)
			}
		} else if f := TEClampedLoss(c.eps, c.w, c.tmax); f < bf-1e-9 {
			t.Errorf("eps=%v W=%d tmax=%d: formula bound %v below the exact loss %v", c.eps, c.w, c.tmax, f, bf)
		}
	}
}

func TestTEPMFSumsToOne(t *testing.T) {
	for _, w := range []int{1, 2, 10, 30} {
		te, err := NewTE(0.7, w)
		if err != nil {
			t.Fatal(err)
		}
		s := 0.0
		for i, p := range te.PMF() {
			s += p
			if f := TEPMF(0.7, w)[i]; math.Abs(p-f) > 1e-15 {
				t.Errorf("w=%d d=%d: table %v formula %v", w, i-w, p, f)
			}
		}
		if math.Abs(s-1) > 1e-12 {
			t.Errorf("w=%d: pmf sums to %v", w, s)
		}
	}
}

// teDraws samples D through the keyed PRF path the sanitizer uses, over
// distinct record ids with a fixed key (the fixed seed of this test).
func teDraws(t *testing.T, te *TE, n int, key byte) []int {
	t.Helper()
	prf := testPRF(t, key)
	out := make([]int, n)
	var rs RecordState // prf.Record's state, reused
	id := append(make([]byte, 0, 24), "rec-"...)
	for i := range n {
		id = strconv.AppendInt(id[:4], int64(i), 10)
		if err := rs.Reset(prf, string(id)); err != nil {
			t.Fatal(err)
		}
		u, _ := rs.Tag(FieldTime, TEVersion, 100)
		out[i] = te.Sample(u)
	}
	return out
}

func testPRF(t *testing.T, b byte) *PRF {
	t.Helper()
	key := make([]byte, 32)
	for i := range key {
		key[i] = b + byte(i)
	}
	p, err := NewPRF(key)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTEDistributionAndWorstCaseRatio(t *testing.T) {
	for _, c := range []struct {
		eps float64
		w   int
	}{{0.1, 10}, {1, 5}, {0.5, 3}, {2, 2}} {
		t.Run(fmt.Sprintf("eps=%v,W=%d", c.eps, c.w), func(t *testing.T) {
			t.Parallel()
			te, err := NewTE(c.eps, c.w)
			if err != nil {
				t.Fatal(err)
			}
			const n = 400000
			counts := make([]int, 2*c.w+1)
			for _, d := range teDraws(t, te, n, 1) {
				counts[d+c.w]++
			}
			stat, crit := chiSquare(t, counts, te.PMF())
			if stat > crit {
				t.Fatalf("chi-square %.1f > critical %.1f", stat, crit)
			}
			// Empirical worst-case ratio over outcomes (all pairs of
			// offsets are reachable for inputs within W of the output).
			mx, mn := 0, n
			for _, k := range counts {
				mx = max(mx, k)
				mn = min(mn, k)
			}
			emp := math.Log(float64(mx) / float64(mn))
			// The standard error of the log of a count k is about
			// 1/sqrt(k); allow 5 of them for both ends (false alarm < 1e-6).
			tol := 5 * (1/math.Sqrt(float64(mx)) + 1/math.Sqrt(float64(mn)))
			if math.Abs(emp-te.Loss()) > tol {
				t.Fatalf("empirical worst-case loss %.4f, computed %.4f (tol %.4f)", emp, te.Loss(), tol)
			}
			if c.eps == 0.1 && emp < 2 {
				t.Fatalf("empirical loss %.3f does not show the erratum (paper says eps*W = 1)", emp)
			}
		})
	}
}

func TestTEEpsilonForLoss(t *testing.T) {
	for _, w := range []int{1, 3, 10} {
		for _, target := range []float64{1, 2.5, 5} {
			eps, err := TEEpsilonForLoss(target, w, 1000)
			if err != nil {
				if w == 10 && target == 1 {
					continue // L(eps,10) >= about 1.9 for every eps; the error is the answer
				}
				t.Fatalf("W=%d target=%v: %v", w, target, err)
			}
			if l := TEClampedLoss(eps, w, 1000); l > target+1e-9 || l < target-1e-6 {
				t.Errorf("W=%d target=%v: eps %v gives L %v", w, target, eps, l)
			}
		}
	}
	if _, err := TEEpsilonForLoss(1, 10, 1000); err == nil {
		t.Error("target 1 at W=10 is unreachable, want error")
	}
}

func TestNewTERejects(t *testing.T) {
	for _, c := range []struct {
		eps float64
		w   int
	}{{0, 5}, {-1, 5}, {math.NaN(), 5}, {1, 0}, {1, -3}, {5, 20}} {
		if _, err := NewTE(c.eps, c.w); err == nil {
			t.Errorf("NewTE(%v,%d) accepted", c.eps, c.w)
		}
	}
}

func TestRRRDistributionAndRatio(t *testing.T) {
	for _, n := range []int{2, 3, 5} {
		for _, eps := range []float64{0.5, 1, 2} {
			t.Run(fmt.Sprintf("n=%d,eps=%v", n, eps), func(t *testing.T) {
				t.Parallel()
				r, err := NewRRR(eps, n)
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(r.Epsilon()-eps) > 1e-9 || r.Epsilon() > eps+1e-15 {
					t.Fatalf("exact epsilon %v, configured %v", r.Epsilon(), eps)
				}
				// true ratio formula
				p := r.P()
				if got := math.Log(1 + float64(n)*p/(1-p)); math.Abs(got-eps) > 1e-12 {
					t.Fatalf("ln(1+np/(1-p)) = %v", got)
				}
				prf := testPRF(t, 7)
				const draws = 200000
				// counts[true][reported]
				counts := make([][]int, n)
				var rs RecordState // one state, Reset per record: the ids of prf.Record(fmt.Sprintf("r%d-%d", c, i)) without its allocations
				id := make([]byte, 0, 16)
				for c := range n {
					counts[c] = make([]int, n)
					for i := range draws {
						id = strconv.AppendInt(append(strconv.AppendInt(append(id[:0], 'r'), int64(c), 10), '-'), int64(i), 10)
						if err := rs.Reset(prf, string(id)); err != nil {
							t.Fatal(err)
						}
						u, _ := rs.Tag(FieldCohort, RRRVersion, uint64(c))
						counts[c][r.Sample(c, u)]++
					}
					probs := make([]float64, n)
					for o := range n {
						probs[o] = r.ReportProb(c, o)
					}
					stat, crit := chiSquare(t, counts[c], probs)
					if stat > crit {
						t.Fatalf("true %d: chi-square %.1f > %.1f", c, stat, crit)
					}
				}
				// empirical worst case: P(report o | true o) / P(report o | true c)
				worst := 0.0
				for o := range n {
					for c := range n {
						worst = math.Max(worst, math.Log(float64(counts[o][o])/float64(counts[c][o])))
					}
				}
				// log-count standard error 1/sqrt(k) each side; 5 sigma
				minK := float64(draws) * r.ReportProb(0, 1)
				tol := 10 / math.Sqrt(minK)
				if math.Abs(worst-eps) > tol {
					t.Fatalf("empirical worst-case %.4f vs epsilon %.4f (tol %.4f)", worst, eps, tol)
				}
				if n > 2 {
					paper := RRRPaperEpsilon(n, p)
					if math.Abs((eps-paper)-math.Log(float64(n-1))) > 1e-9 {
						t.Fatalf("paper formula %v should understate by ln(n-1)", paper)
					}
				}
			})
		}
	}
}

func TestCMACVector(t *testing.T) {
	// RFC 4493 example 2 (AES-128, one complete block) through cmacFinal.
	key, _ := hex.DecodeString("2b7e151628aed2a6abf7158809cf4f3c")
	msg, _ := hex.DecodeString("6bc1bee22e409f96e93d7e117393172a")
	want := "070a16b46b4d4144f79bdd9dd04a287c"
	p, err := newPRFFromKeys(key, key)
	if err != nil {
		t.Fatal(err)
	}
	var state, blk [16]byte
	copy(blk[:], msg)
	p.cmacFinal(&state, &blk)
	if got := hex.EncodeToString(blk[:]); got != want {
		t.Fatalf("cmac = %s, want %s", got, want)
	}
}

func TestPRFDeterminismAndSeparation(t *testing.T) {
	p1, p2 := testPRF(t, 1), testPRF(t, 2)
	tag := func(p *PRF, id string, f byte, v uint64) uint64 {
		rs, err := p.Record(id)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := rs.Tag(f, 1, v)
		return a
	}
	base := tag(p1, "patient-1", FieldTime, 100)
	if tag(p1, "patient-1", FieldTime, 100) != base {
		t.Fatal("same input, different output")
	}
	for name, other := range map[string]uint64{
		"key":   tag(p2, "patient-1", FieldTime, 100),
		"id":    tag(p1, "patient-2", FieldTime, 100),
		"field": tag(p1, "patient-1", FieldCohort, 100),
		"value": tag(p1, "patient-1", FieldTime, 101),
		// ids that only differ by padding must not collide
		"pad":  tag(p1, "patient-1\x00", FieldTime, 100),
		"long": tag(p1, "a-very-long-record-identifier-0000000000000000001", FieldTime, 100),
	} {
		if other == base {
			t.Errorf("changing %s did not change the output", name)
		}
	}
	if _, err := NewPRF(make([]byte, 16)); err == nil {
		t.Error("short key accepted")
	}
	// Stream extends deterministically past the tag words.
	rs, _ := p1.Record("x")
	s1 := rs.Stream(FieldTime, 1, 5)
	s2 := rs.Stream(FieldTime, 1, 5)
	for i := range 10 {
		if a, b := s1.Uint64(), s2.Uint64(); a != b {
			t.Fatalf("stream word %d differs", i)
		}
	}
}

func TestStreamUniformity(t *testing.T) {
	p := testPRF(t, 3)
	rs, _ := p.Record("stream")
	s := rs.Stream(FieldProject, 1, 0)
	const n = 200000
	counts := make([]int, 64)
	probs := make([]float64, 64)
	for i := range probs {
		probs[i] = 1.0 / 64
	}
	for range n {
		counts[s.Uint64()>>58]++
	}
	stat, crit := chiSquare(t, counts, probs)
	if stat > crit {
		t.Fatalf("chi-square %.1f > %.1f", stat, crit)
	}
}

func BenchmarkTESample(b *testing.B) {
	te, _ := NewTE(0.5, 10)
	var s int
	src := NewSeededSource(1)
	for b.Loop() {
		s += te.Sample(src.Uint64())
	}
	_ = s
}

func BenchmarkPRFRecordTwoFields(b *testing.B) {
	key := make([]byte, 32)
	p, _ := NewPRF(key)
	ids := make([]string, 1024)
	for i := range ids {
		ids[i] = "patient-" + strconv.Itoa(100000+i)
	}
	var x uint64
	i := 0
	for b.Loop() {
		rs, _ := p.Record(ids[i&1023])
		a, _ := rs.Tag(FieldTime, 1, 42)
		c, _ := rs.Tag(FieldCohort, 1, 1)
		x += a ^ c
		i++
	}
	_ = x
}
