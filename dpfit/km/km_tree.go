package km

import (
	"fmt"
	"math"

	"github.com/dpsurv/dpsurv/dp"
)

// MethodHierarchicalKM is the method name of HierarchicalKM.
const MethodHierarchicalKM = "hierarchical-histogram-km"

// Design of HierarchicalKM (see its doc comment for the reasons).
const (
	// HierarchicalBranching is the fan-out of the trees.
	HierarchicalBranching = 16
	// HierarchicalLevelRatio: level l (0 = the bins) gets a share of
	// epsilon proportional to HierarchicalLevelRatio^l.
	HierarchicalLevelRatio = 0.5
)

// HierarchicalKM is a private Kaplan–Meier from hierarchical (tree) noise,
// mechanisms.md §3's "cumulative events and censorings as prefix sums
// released with hierarchical noise". It is the default method of
// `dpsurv fit km`; NoisyHistogramKM remains selectable.
//
// Mechanism. Per cohort, one tree over the B bins for the event counts and
// one for the censoring counts, of fan-out HierarchicalBranching = 16:
// level 0 holds the bins, node i of level l+1 the sum of nodes
// 16i .. 16i+15 of level l (the last node of a level may have fewer
// children; nothing is padded), up to a root holding the cohort's total:
// L = 1 + ceil(log16 B) levels (3 for 174 bins, 4 for 743, 5 for 5000).
// Every node count gets independent two-sided geometric noise
// (dp.DiscreteLaplace) of scale 1/epsilon_l, where level l's budget is
// epsilon_l = epsilon rho^l / sum_{j<L} rho^j, rho = HierarchicalLevelRatio
// = 1/2, so sum_l epsilon_l = epsilon (the bins get just over half).
//
// Privacy. Each level of the trees partitions the records: a record is
// counted in exactly one node per level — the nodes on its bin's
// leaf-to-root path in the event or the censoring tree of its cohort. Under
// add/remove-one, the record's path gains or loses it, so level l's node
// vector over all cohorts and both kinds changes by exactly 1 in L1, and
// noise of scale 1/epsilon_l makes it epsilon_l-DP; the L levels compose
// sequentially to epsilon (the whole node vector has L1 sensitivity L and
// loss sum_l epsilon_l = epsilon). Records in different cohorts touch
// disjoint trees (parallel composition). Everything after the noise is
// post-processing: the release — curves, counts, noise SDs, log-rank tests,
// the noisy record count — is epsilon-DP ("pure-dp", add/remove-one; a
// replaced record, two steps, costs 2 epsilon).
//
// Estimation. Each noisy tree is replaced by its least-squares consistent
// version (Hay, Rastogi, Miklau and Suciu 2010, weighted by the public
// level variances; linear time). N_hat is the sum of the inferred roots,
// and a prefix sum is the sum of at most 15 node estimates per level — equal
// to the sum of the inferred bins, since the tree is consistent. The
// inferred bins go through the post-processing of NoisyHistogramKM (steps
// 1–4 there: monotone at-risk n_b = N_hat - prefix, signed hazards,
// isotonic curve, consistent counts with 0 <= d_b <= n_b), with two
// changes. (a) The inferred bins' noise is correlated, so the truncation
// rule of KMOptions.MaxNoiseStdErr and CohortKM.NoiseStdErr use the exact
// variance of sum_{b' <= b} e_b'/n_b' under the inference (from the public
// level variances and the post-processed at-risk numbers, O(L) per bin);
// a bin's own share is Var(e_b)/n_b^2 with the inferred bin's variance.
// (b) Each product-limit factor 1 - d_b/n_b is multiplied by
// exp(min(Var(e_b)/n_b^2, 1/64) / 2): E log(1 - (d + e)/n) is about
// log(1 - d/n) - Var(e)/(2 n^2) when n is uncorrelated with e, which the
// isotonic at-risk step (it pools neighbouring bins) nearly makes it. An
// inferred bin carries several times a flat cell's noise variance, so
// without the correction the curve drifts low (flchain, epsilon 0.3: by
// 0.03 at 3500 days; with it within 0.006, TestHierarchicalKMUnbiased). The
// cap, the default single-bin truncation bound, keeps the expansion where
// it holds; untruncated tails (MaxNoiseStdErr = +Inf) can still be biased.
//
// Why fan-out 16 and rho = 1/2. With constrained inference a fan-out near
// 16 minimises the variance of range sums in one dimension (Qardaji, Yang
// and Li 2013); a prefix sum uses at most 15 nodes per level, while the
// product-limit curve and the single-bin truncation rule use every bin's own
// noise, so the bins get the largest share (with equal shares, at 174 bins,
// the tree left more empty curves than the histogram at epsilon 0.1 and
// had a larger error at epsilon 2). Evaluated on flchain
// (docs/evaluation-fits.md: 10 cohorts of about 650, 30-day bins, 174 of
// them): mean sup error 0.100 against NoisyHistogramKM's 0.124 at
// epsilon 0.5, 0.064 against 0.078 at 1, 0.044 against 0.048 at 2, at about
// equal coverage; at epsilon 0.1 half the empty curves (76 against 160 of
// 1000), coverage 0.30 against 0.23, and over the untruncated first 1000
// days a sup error of 0.112 against 0.156 (over each curve's own, longer,
// covered domain its mean sup is 0.16 against 0.15). The gain grows with the
// number of bins, since the histogram's at-risk noise grows like sqrt(B)
// and the tree's like log B (7-day bins at epsilon 0.5: 0.135 at coverage
// 0.94 against 0.165 at 0.71). With few coarse bins (under about 100) and
// epsilon >= 1 the flat histogram is as good or slightly better (90-day
// bins, epsilon 1: 0.053 against 0.048): in the tail, where few remain at
// risk, its at-risk error (the noise of the few bins after b) is smaller.
func HierarchicalKM(h *Histogram, src dp.Source, opts KMOptions) (KMResult, error) {
	return hierarchicalKM(h, src, opts, defaultHierConfig)
}

// hierConfig is the design of HierarchicalKM, a parameter for the tests.
type hierConfig struct {
	branch int
	rho    float64
	// noBiasCorrection drops (b) of HierarchicalKM's estimation (tests only)
	noBiasCorrection bool
}

var defaultHierConfig = hierConfig{branch: HierarchicalBranching, rho: HierarchicalLevelRatio}

// levelShares returns the budget shares rho^l / sum_j rho^j of L levels.
func levelShares(L int, rho float64) []float64 {
	sh := make([]float64, L)
	tot := 0.0
	for l := range sh {
		sh[l] = math.Pow(rho, float64(l))
		tot += sh[l]
	}
	for l := range sh {
		sh[l] /= tot
	}
	return sh
}

// hierTrees is the public part of a release: the tree shape, the noise
// scale of each level (0 for epsilon = +Inf) and the tree with the levels'
// noise variances for the inference.
type hierTrees struct {
	tree   *binTree
	scales []float64
	// lap[l] draws level l's noise (scales[l]; nil for epsilon = +Inf)
	lap []dp.LaplaceSampler
	// mechanism is the release's Mechanism text (private trees), written
	// once for the release and its simulated releases
	mechanism string
}

func newHierTrees(bins int, cfg hierConfig, epsilon float64) (*hierTrees, error) {
	probe, err := newBinTree(bins, cfg.branch, nil)
	if err != nil {
		return nil, err
	}
	L := probe.levels()
	share := levelShares(L, cfg.rho)
	ht := &hierTrees{scales: make([]float64, L)}
	if math.IsInf(epsilon, 1) {
		ht.tree = probe
		return ht, nil
	}
	vars := make([]float64, L)
	ht.lap = make([]dp.LaplaceSampler, L)
	for l := range share {
		ht.scales[l] = KMCellSensitivity / (share[l] * epsilon)
		if ht.scales[l] > 1<<32 { // dp.DiscreteLaplace's limit
			return nil, fmt.Errorf("node noise scale %v of level %d too large (epsilon %v)", ht.scales[l], l, epsilon)
		}
		if ht.lap[l], err = dp.NewLaplaceSampler(ht.scales[l]); err != nil {
			return nil, fmt.Errorf("level %d: %w", l, err)
		}
		vars[l] = discreteLaplaceVariance(ht.scales[l])
		if !(vars[l] > 1e-200) {
			// the inference needs positive weights; below scale ~1/700 the
			// discrete variance underflows (the noise is 0 but for
			// probability ~1e-300) and the continuous 2 scale^2 stands in
			vars[l] = 2 * ht.scales[l] * ht.scales[l]
		}
	}
	if ht.tree, err = newBinTree(bins, cfg.branch, vars); err != nil {
		return nil, err
	}
	eps := make([]string, L)
	for l, sc := range ht.scales {
		eps[l] = fmt.Sprintf("%.6g", KMCellSensitivity/sc) // epsilon_l = sensitivity/scale
	}
	ht.mechanism = fmt.Sprintf("per cohort, a %d-ary tree of %d levels over the bins for events and one for censorings; "+
		"two-sided geometric noise of scale 1/epsilon_l on every node of level l, epsilon_l = %v from the bins up "+
		"(each level has L1 sensitivity 1 under add/remove-one; sum = epsilon); least-squares consistent trees, "+
		"signed post-processing with second-order bias correction, isotonic curve", cfg.branch, L, eps)
	return ht, nil
}

// noisyNodes writes the exact node counts of the tree over leaves plus
// level-l noise of scale scales[l] into y (len nodes); nodes is scratch.
func (ht *hierTrees) noisyNodes(src dp.Source, leaves, nodes []int64, y []float64) {
	t := ht.tree
	t.counts(leaves, nodes)
	for l := range t.size {
		lap := ht.lap[l]
		for v := t.off[l]; v < t.off[l]+t.size[l]; v++ {
			y[v] = float64(nodes[v] + lap.Draw(src))
		}
	}
}

// release returns the inferred bins of one noisy tree over leaves (the
// exact counts for epsilon = +Inf).
func (ht *hierTrees) release(src dp.Source, leaves, nodes []int64, y, buf []float64) ([]float64, error) {
	out := make([]float64, len(leaves))
	if ht.scales[0] == 0 {
		for b, v := range leaves {
			out[b] = float64(v)
		}
		return out, nil
	}
	ht.noisyNodes(src, leaves, nodes, y)
	ht.tree.infer(y, buf)
	for b := range out {
		x := y[b]
		// floating-point residue of the inference: a value within a
		// relative 1e-9 of an integer is that integer (with negligible
		// noise, the exact count; otherwise a tiny change, harmless
		// post-processing)
		if r := math.Round(x); math.Abs(x-r) <= kmSnap*max(1, math.Abs(r)) {
			x = r
		}
		out[b] = x
	}
	return out, nil
}

func hierarchicalKM(h *Histogram, src dp.Source, opts KMOptions, cfg hierConfig) (KMResult, error) {
	return hierarchicalKMTrees(h, src, opts, cfg, nil)
}

// hierarchicalKMTrees is hierarchicalKM with the trees' public shape and
// scales given (nil: built from h, cfg and the epsilon): the simulated
// releases of simulateNoiseSD and calibrateLogRank share their release's
// (same bins, design and epsilon), instead of building them again each.
func hierarchicalKMTrees(h *Histogram, src dp.Source, opts KMOptions, cfg hierConfig, ht *hierTrees) (KMResult, error) {
	o, err := centralOptions(h, src, opts)
	if err != nil {
		return KMResult{}, fmt.Errorf("hierarchical km: %w", err)
	}
	exact := math.IsInf(o.Epsilon, 1)
	if ht == nil {
		if ht, err = newHierTrees(h.Bins, cfg, o.Epsilon); err != nil {
			return KMResult{}, fmt.Errorf("hierarchical km: %w", err)
		}
	}
	k := h.Cohorts()
	ev := make([][]float64, k)
	ce := make([][]float64, k)
	nodes := make([]int64, ht.tree.nodes)
	y := make([]float64, ht.tree.nodes)
	buf := make([]float64, ht.tree.nodes)
	for c := 0; c < k; c++ {
		if ev[c], err = ht.release(src, h.Events[c], nodes, y, buf); err != nil {
			return KMResult{}, fmt.Errorf("hierarchical km: %w", err)
		}
		if ce[c], err = ht.release(src, h.Censor[c], nodes, y, buf); err != nil {
			return KMResult{}, fmt.Errorf("hierarchical km: %w", err)
		}
	}
	res := KMResult{
		Method:       MethodHierarchicalKM,
		Epsilon:      o.Epsilon,
		EpsilonTotal: o.Epsilon,
		Guarantee:    GuaranteePureDP,
		Neighbouring: NeighbouringAddRemove,
		BinWidth:     h.BinWidth,
	}
	noise := func(pooled int) logSNoise {
		pn := newPrefixNoise(ht.tree, float64(pooled))
		if cfg.noBiasCorrection {
			return uncorrected{pn}
		}
		return pn
	}
	if exact {
		res.Guarantee = GuaranteeNone
		res.Mechanism = "exact histogram (no noise)"
		noise = func(int) logSNoise { return &cellNoise{eventVar: func(int) float64 { return 0 }} }
	} else {
		res.Mechanism = ht.mechanism
		// N_hat is the sum of the event and censoring trees' inferred roots
		res.countNoiseSD = math.Sqrt(2 * ht.tree.s[ht.tree.nodes-1])
	}
	if err := fillKMResultNoise(&res, h, ev, ce, noise, o); err != nil {
		return KMResult{}, fmt.Errorf("hierarchical km: %w", err)
	}
	refit := func(hs *Histogram, src dp.Source, os KMOptions) (KMResult, error) {
		return hierarchicalKMTrees(hs, src, os, cfg, ht)
	}
	if err := simulateNoiseSD(&res, h, o, refit); err != nil {
		return KMResult{}, fmt.Errorf("hierarchical km: %w", err)
	}
	if err := calibrateLogRank(&res, h, o, refit); err != nil {
		return KMResult{}, fmt.Errorf("hierarchical km: %w", err)
	}
	return res, nil
}

// binTree is the shape of a b-ary tree over the bins 0..bins-1 and the
// structural quantities of its least-squares inference. Level 0 holds the
// leaves (one per bin); node i of level l+1 covers nodes
// [i*branch, min((i+1)*branch, size[l])) of level l; the top level is the
// root. Every level partitions the bins, so a record counted in one bin is
// counted in exactly one node per level: len(size) nodes.
//
// The tree is not padded to a power of branch: the last node of a level may
// have fewer children (bins beyond the domain do not exist, so nothing is
// spent on them and no noise from them reaches the estimates).
type binTree struct {
	branch int
	size   []int // nodes per level, level 0 = leaves
	off    []int // index of level l's first node in the node arrays
	nodes  int
	// nodeVar[l] is the noise variance of level l's nodes (the release's
	// discrete Laplace variances; any common unit gives the same estimates)
	nodeVar []float64
	// bottom-up inference, structural: s[v] is the variance of z[v], the
	// estimate of node v from the observations inside its subtree, and
	// sumS[v] = sum of s over v's children (0 for leaves); alpha[v] is
	// s[v] / sumS[parent(v)] (0 for the root).
	s, sumS, alpha []float64
	// leafVars[b] is leafVar(b)
	leafVars []float64
	// parent[v] is the node-array index of v's parent (-1 for the root)
	parent []int
}

// newBinTree builds the shape for bins leaves with the given branching and
// per-level relative observation variances (nil: 1 on every level).
func newBinTree(bins, branch int, levelVar []float64) (*binTree, error) {
	if bins < 1 {
		return nil, fmt.Errorf("bin tree: need at least one bin, got %d", bins)
	}
	if branch < 2 {
		return nil, fmt.Errorf("bin tree: branching must be >= 2, got %d", branch)
	}
	t := &binTree{branch: branch}
	for n := bins; ; n = (n + branch - 1) / branch {
		t.off = append(t.off, t.nodes)
		t.size = append(t.size, n)
		t.nodes += n
		if n == 1 {
			break
		}
	}
	L := len(t.size)
	if levelVar == nil {
		levelVar = make([]float64, L)
		for l := range levelVar {
			levelVar[l] = 1
		}
	}
	if len(levelVar) != L {
		return nil, fmt.Errorf("bin tree: %d level variances for %d levels", len(levelVar), L)
	}
	for _, v := range levelVar {
		if !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("bin tree: level variance %v must be positive and finite", v)
		}
	}
	t.nodeVar = append([]float64(nil), levelVar...)
	t.s = make([]float64, t.nodes)
	t.sumS = make([]float64, t.nodes)
	t.alpha = make([]float64, t.nodes)
	for i := 0; i < t.size[0]; i++ {
		t.s[i] = t.nodeVar[0]
	}
	for l := 1; l < L; l++ {
		for i := 0; i < t.size[l]; i++ {
			v := t.off[l] + i
			lo, hi := t.children(l, i)
			S := 0.0
			for c := lo; c < hi; c++ {
				S += t.s[c]
			}
			t.sumS[v] = S
			// inverse-variance combination of the node's own observation
			// with the sum of its children's subtree estimates
			t.s[v] = 1 / (1/t.nodeVar[l] + 1/S)
			for c := lo; c < hi; c++ {
				t.alpha[c] = t.s[c] / S
			}
		}
	}
	t.parent = make([]int, t.nodes)
	t.parent[t.nodes-1] = -1
	for l := 0; l+1 < L; l++ {
		for i := 0; i < t.size[l]; i++ {
			t.parent[t.off[l]+i] = t.off[l+1] + i/t.branch
		}
	}
	t.leafVars = make([]float64, t.size[0])
	for b := range t.leafVars {
		t.leafVars[b] = t.leafVarOf(b)
	}
	return t, nil
}

// levels is the number of levels, the nodes one record is counted in.
func (t *binTree) levels() int { return len(t.size) }

// children returns the node-array range of node i of level l (l >= 1).
func (t *binTree) children(l, i int) (lo, hi int) {
	lo = t.off[l-1] + i*t.branch
	hi = t.off[l-1] + min((i+1)*t.branch, t.size[l-1])
	return lo, hi
}

// sumOf is the sum of x, added left to right.
func sumOf(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s
}

// counts writes the exact count of every node of the tree over leaves into
// dst (len nodes).
func (t *binTree) counts(leaves []int64, dst []int64) {
	copy(dst, leaves)
	for l := 1; l < len(t.size); l++ {
		for i := 0; i < t.size[l]; i++ {
			lo, hi := t.children(l, i)
			var sum int64
			for c := lo; c < hi; c++ {
				sum += dst[c]
			}
			dst[t.off[l]+i] = sum
		}
	}
}

// infer replaces the noisy node values y (len nodes) by their generalised
// least-squares estimates under the tree's consistency constraints (every
// node equals the sum of its children), with independent observation noise
// of variance proportional to nodeVar per level. This is the two-pass
// algorithm of Hay, Rastogi, Miklau and Suciu (2010), "Boosting the accuracy
// of differentially private histograms through consistency", generalised to
// unequal variances and incomplete nodes: bottom-up, z[v] combines v's own
// observation with the sum of its children's z by inverse variance;
// top-down, the root keeps z and each child gets z[c] plus its variance
// share alpha[c] of the parent's discrepancy. Linear time; post-processing
// of the noisy nodes. buf is scratch space (len nodes).
func (t *binTree) infer(y, buf []float64) {
	z := buf
	copy(z[:t.size[0]], y[:t.size[0]])
	L := len(t.size)
	for l := 1; l < L; l++ {
		w := t.nodeVar[l]
		for i := 0; i < t.size[l]; i++ {
			v := t.off[l] + i
			lo, hi := t.children(l, i)
			Z := sumOf(z[lo:hi])
			S := t.sumS[v]
			z[v] = (S*y[v] + w*Z) / (S + w)
		}
	}
	root := t.nodes - 1
	y[root] = z[root]
	for l := L - 1; l >= 1; l-- {
		for i := 0; i < t.size[l]; i++ {
			v := t.off[l] + i
			lo, hi := t.children(l, i)
			Z := sumOf(z[lo:hi])
			d := y[v] - Z
			for c := lo; c < hi; c++ {
				y[c] = z[c] + t.alpha[c]*d
			}
		}
	}
}

// prefixNoise is the logSNoise of the inferred bins of one tree (scale 1)
// or of the sum of k independent trees of the same shape (scale k): the
// exact variance of sum_{b' <= b} e_b' / m_b' for the inferred bins' errors
// e, which are correlated. The inference error decomposes as
// e_v = r_v + alpha_v e_parent(v): the r of different families are
// uncorrelated, siblings' r have covariance s_u [u = u'] - s_u s_u' / S_p,
// and e_root has variance s_root. A linear functional sum_t a_t e_t is then
// sum_v A_v r_v + A_root e_root with A_leaf = a and A_v = sum_c alpha_c A_c,
// of variance sum over internal nodes p of
// sum_c s_c A_c^2 - (sum_c s_c A_c)^2 / S_p, plus s_root A_root^2. Adding a
// bin changes A on one leaf-to-root path only: O(levels) per bin.
type prefixNoise struct {
	t     *binTree
	scale float64
	A     []float64 // per node
	p1    []float64 // per internal node: sum_c s_c A_c^2
	p2    []float64 // per internal node: sum_c s_c A_c
	v     float64   // variance at scale 1
}

func newPrefixNoise(t *binTree, scale float64) *prefixNoise {
	n := t.nodes
	back := make([]float64, 3*n) // one allocation (one per cohort and simulated release)
	return &prefixNoise{t: t, scale: scale, A: back[:n:n], p1: back[n : 2*n : 2*n], p2: back[2*n:]}
}

func (p *prefixNoise) term(v int) float64 {
	return p.p1[v] - p.p2[v]*p.p2[v]/p.t.sumS[v]
}

func (p *prefixNoise) add(b int, m float64) (cum, own float64) {
	t := p.t
	w := 1 / m
	own = t.leafVar(b) * w * w * p.scale
	u, delta := b, w
	for l := 0; l+1 < len(t.size); l++ {
		par := t.parent[u]
		old := p.term(par)
		a0 := p.A[u]
		a1 := a0 + delta
		p.A[u] = a1
		p.p1[par] += t.s[u] * (a1*a1 - a0*a0)
		p.p2[par] += t.s[u] * delta
		p.v += p.term(par) - old
		delta *= t.alpha[u]
		u = par
	}
	root := t.nodes - 1
	a0 := p.A[root]
	a1 := a0 + delta
	p.A[root] = a1
	p.v += t.s[root] * (a1*a1 - a0*a0)
	if p.v < 0 { // rounding
		p.v = 0
	}
	return p.v * p.scale, own
}

// factor is the second-order bias correction of a product-limit factor
// (logSBiasCorrected): exp(Var(e_b) / (2 m_b^2)).
func (p *prefixNoise) factor(own float64) float64 { return math.Exp(min(own, maxBiasShare) / 2) }

// uncorrected hides prefixNoise's factor method (tests only).
type uncorrected struct{ p *prefixNoise }

func (u uncorrected) add(b int, m float64) (cum, own float64) { return u.p.add(b, m) }

// maxBiasShare caps the correction where the expansion stops holding: at
// own = (1/8)^2, the default bound of the single-bin truncation rule.
const maxBiasShare = 1.0 / 64

// leafVar is the variance of the inferred bin b's error (structural:
// computed once per tree, read for every bin of every curve drawn on it,
// the simulated ones included).
func (t *binTree) leafVar(b int) float64 { return t.leafVars[b] }

// leafVarOf computes leafVar(b).
func (t *binTree) leafVarOf(b int) float64 {
	v, A, u := 0.0, 1.0, b
	for l := 0; l+1 < len(t.size); l++ {
		par := t.parent[u]
		su := t.s[u]
		v += su * A * A * (1 - su/t.sumS[par])
		A *= t.alpha[u]
		u = par
	}
	return v + t.s[t.nodes-1]*A*A
}
