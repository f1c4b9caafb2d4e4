package privacy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/internal/gofiles"
)

// floatNoiseAllowed lists the production functions that may hold
// floating-point randomness, each with the reason, keyed "file:Func" (a
// method is "file:Type.Method", a function literal belongs to the function
// declaring it, package-level code is "file:<package>"). Every other
// function of every non-test Go file of the module is a private path
// (default-deny) and must draw noise only through the exact samplers of
// package dp (integer arithmetic, Bernoulli(e^-x) steps, lattice-snapped
// continuous noise). Allowing functions, not files, keeps the private code
// that shares a file with post-processing under the linter.
var floatNoiseAllowed = map[string]string{
	// Permanent: not on a private path.
	"dp/source.go:<package>":                                    "the secure source is math/rand/v2's ChaCha8 (a CSPRNG), seeded from crypto/rand",
	"dp/source.go:NewSecureSource":                              "seeds ChaCha8 from crypto/rand: the production source",
	"dp/source.go:Float64":                                      "defines dp.Float64 (a 53-bit float uniform); its callers are what this linter checks",
	"synth/synth.go:Generate":                                   "synthetic test and evaluation data, no release",
	"synth/discrete.go:DiscreteWorld.Draw":                      "synthetic test and evaluation data (the regression studies' discrete-time world), no release",
	"cmd/dpsurv/cli/gen.go:runGen":                              "`dpsurv gen`: synthetic data for tests and demos, no release",
	"dp/te.go:TE.VersionPairLoss":                               "computes a reported loss from the sampled table's big.Int entries (big.Int.Uint64 is a conversion, not a draw)",
	"dp/source.go:NewSeededSource":                              "the seeded ChaCha8 that tests inject",
	"projection/projection.go:gaussianPair":                     "HPPCox random projection: release kind `none (heuristic)`, not a DP mechanism",
	"ops/memory.go:ReadMem":                                     "runtime/metrics Value.Uint64 converted to float: a memory figure, not randomness",
	"dpfit/km/km_inference.go:simulateNoiseSD":                  "post-processing: the noise-aware interval widths simulate the mechanism from the released counts, seeded by a hash of those counts (a deterministic function of the release)",
	"dpfit/km/km_interval.go:simultaneousBand":                  "post-processing: the simultaneous band's critical value simulates Greenwood sampling paths with the generator simulateNoiseSD seeds from a hash of the released counts",
	"dpfit/km/logrank_dp.go:calibrateLogRank":                   "post-processing: the calibrated log-rank p-value's Monte-Carlo null is simulated from the released counts, seeded by a hash of them (a deterministic function of the release)",
	"dpfit/binomial_btrs.go:binomial":                           "post-processing: binomial draws of the log-rank null and Weibull interval simulations at small means (caller: BinomialSim)",
	"dpfit/binomial_btrs.go:binomialSim":                        "post-processing: binomial draws of the Weibull interval simulation's binned worlds and the KM log-rank's null data sets (callers: BinomialSim, BinomialProb.Sim)",
	"schemas/schemastest/schemastest.go:GenerateHugeCohortDict": "test support: a seeded generator of adversarial inputs, no release",
	"regression/inference.go:bootstrap.run":                     "post-processing: the coefficient intervals' parametric bootstrap simulates the mechanism from the released coefficients and Hessians, seeded by a hash of the release",
	"cmd/dpsurv-eval/inference/km.go:RunKM":                     "evaluation: coverage and size studies (bootstrap worlds), no release",
	"cmd/dpsurv-eval/inference/weibull.go:RunWeibull":           "evaluation: coverage study of the Weibull intervals (bootstrap world), no release",
	"cmd/dpsurv-eval/inference/regression.go:worldRand":         "evaluation: the synthetic regression world of the coverage and side-by-side studies (RunRegression, RunCompare), no release",
	"cmd/dpsurv-eval/inference/logrank.go:RunLogRank":           "evaluation: coverage and size studies (permuted labels), no release",

	// the Weibull family (package dpfit/weibull)
	"dpfit/weibull/weibull_inference.go:weibullInversion.eval":    "post-processing: the noise-aware Weibull intervals simulate the mechanism from the released fit, seeded by a hash of the release",
	"dpfit/weibull/weibull_inference.go:weibullLadderSampleFloat": "post-processing: the interval simulation's LSP shape draw (float inverse CDF over the ladder's levels; releases use the exact sampler)",
	"dpfit/weibull/weibull_inference.go:weibullInversion.pivots":  "post-processing: the Weibull interval's scale pivots rerun TLL on the simulated data sets, from streams seeded by a hash of the release",
	"dpfit/weibull/weibull_simside.go:weibullSimShapeSide":        "post-processing: the interval simulation's LSP level draw (the float inverse CDF's uniform, as weibullLadderSampleFloat; releases use the exact sampler)",
}

// A finding is one use of floating-point randomness in a function.
type finding struct {
	pos  token.Position
	fn   string // the enclosing function: "Func", "Type.Method" or "<package>"
	what string
}

// randomWordMethods are the method and function names that return random
// integers or words (dp.Source, math/rand, dp.Uint64n, crypto/rand.Int).
// A selector call of one of these names is a random word (an
// over-approximation: binary.LittleEndian.Uint64 matches too, which costs
// an allow-list entry, never a miss).
var randomWordMethods = map[string]bool{
	"Uint64": true, "Uint32": true, "Uint64n": true, "Uint32n": true, "Uint64N": true, "Uint32N": true,
	"Int63": true, "Int63n": true, "Int31": true, "Int31n": true, "Intn": true, "IntN": true, "Int64N": true, "Int32N": true,
}

// floatNoise reports, in one parsed file, the patterns that mean
// floating-point or non-cryptographic randomness:
//   - using math/rand or math/rand/v2 (a non-cryptographic or float
//     sampler: NormFloat64, ExpFloat64, Float64, ...), reported in the
//     function that uses it, and calling .Float64() or .Float32() with no
//     argument on anything (a generator's float uniform);
//   - calling dp.Float64 (a 53-bit float uniform: the basis of log(u),
//     float inverse CDFs, float Gaussians);
//   - a random word reaching a float: float64(...), float32(...),
//     math.Float64frombits / Float32frombits, big.Float's SetInt / SetUint64 /
//     SetInt64, applied to an expression that holds a random-word call
//     (Source.Uint64, dp.Uint64n, crypto/rand.Int or .Read, ...) or a
//     variable assigned from one, directly or through other variables of the
//     same function (a random word assigned before its conversion);
//   - calling NormFloat64 or ExpFloat64 on anything;
//   - sampling a gonum distribution (distuv / distmv .Rand).
func floatNoise(fset *token.FileSet, f *ast.File, pkg string) []finding {
	var out []finding
	gonumDist := false
	cryptoRand := map[string]bool{} // local names of crypto/rand
	mathRand := map[string]string{} // local names of math/rand and math/rand/v2
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		switch {
		case p == "math/rand" || p == "math/rand/v2":
			name := path.Base(p)
			if p == "math/rand/v2" {
				name = "rand"
			}
			if im.Name != nil {
				name = im.Name.Name
			}
			mathRand[name] = p
		case p == "crypto/rand":
			name := "rand"
			if im.Name != nil {
				name = im.Name.Name
			}
			cryptoRand[name] = true
		case strings.HasPrefix(p, "gonum.org/v1/gonum/stat/distuv") || strings.HasPrefix(p, "gonum.org/v1/gonum/stat/distmv"):
			gonumDist = true
		}
	}
	isRandomCall := func(c *ast.CallExpr) bool {
		switch fn := c.Fun.(type) {
		case *ast.SelectorExpr:
			if x, ok := fn.X.(*ast.SelectorExpr); ok {
				if id, ok := x.X.(*ast.Ident); ok && id.Name == "binary" {
					return false // binary.LittleEndian.Uint64(b): decoding bytes, not drawing
				}
			}
			if randomWordMethods[fn.Sel.Name] {
				return true
			}
			if id, ok := fn.X.(*ast.Ident); ok && cryptoRand[id.Name] && (fn.Sel.Name == "Int" || fn.Sel.Name == "Read" || fn.Sel.Name == "Prime") {
				return true
			}
		case *ast.Ident:
			if pkg == "dp" && randomWordMethods[fn.Name] {
				return true
			}
		}
		return false
	}
	// holdsRandom: e contains a random-word call or a tainted variable.
	holdsRandom := func(e ast.Node, tainted map[string]bool) bool {
		found := false
		ast.Inspect(e, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CallExpr:
				if isRandomCall(x) {
					found = true
				}
			case *ast.Ident:
				if tainted[x.Name] {
					found = true
				}
			}
			return !found
		})
		return found
	}
	// taint computes, for one function body, the variables that hold
	// random words: assigned (=, :=, op=, var) from an expression holding
	// one, or filled by crypto/rand.Read; to a fixed point.
	taint := func(body ast.Node) map[string]bool {
		tainted := map[string]bool{}
		mark := func(lhs ast.Expr) bool {
			id := assignedVar(lhs)
			if id == nil || id.Name == "_" || tainted[id.Name] {
				return false
			}
			tainted[id.Name] = true
			return true
		}
		// assigned marks each left side whose right side (its own, or the
		// one multi-value call of the statement) holds randomness.
		assigned := func(lhs, rhs []ast.Expr) (marked bool) {
			for i, l := range lhs {
				var r ast.Expr
				if len(rhs) == len(lhs) {
					r = rhs[i]
				} else if len(rhs) == 1 {
					r = rhs[0]
				}
				if r != nil && holdsRandom(r, tainted) && mark(l) {
					marked = true
				}
			}
			return marked
		}
		for changed := true; changed; {
			changed = false
			ast.Inspect(body, func(n ast.Node) bool {
				switch s := n.(type) {
				case *ast.AssignStmt:
					if assigned(s.Lhs, s.Rhs) {
						changed = true
					}
				case *ast.ValueSpec:
					names := make([]ast.Expr, len(s.Names))
					for i, id := range s.Names {
						names[i] = id
					}
					if assigned(names, s.Values) {
						changed = true
					}
				case *ast.CallExpr:
					// crypto/rand.Read(buf) fills buf with random bytes.
					if sel, ok := s.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Read" && len(s.Args) == 1 {
						if id, ok := sel.X.(*ast.Ident); ok && cryptoRand[id.Name] && mark(s.Args[0]) {
							changed = true
						}
					}
				}
				return true
			})
		}
		return tainted
	}
	scan := func(fnName string, body ast.Node) {
		add := func(n ast.Node, what string) { out = append(out, finding{fset.Position(n.Pos()), fnName, what}) }
		tainted := taint(body)
		twoValued := map[*ast.CallExpr]bool{} // x, ok := r.Float64(): big.Rat/big.Float, exact conversions
		ast.Inspect(body, func(n ast.Node) bool {
			if a, ok := n.(*ast.AssignStmt); ok && len(a.Lhs) == 2 && len(a.Rhs) == 1 {
				if c, ok := a.Rhs[0].(*ast.CallExpr); ok {
					twoValued[c] = true
				}
			}
			return true
		})
		ast.Inspect(body, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && mathRand[id.Name] != "" {
					add(sel, "uses "+mathRand[id.Name]+"."+sel.Sel.Name)
				}
			}
			c, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			switch fn := c.Fun.(type) {
			case *ast.SelectorExpr:
				if id, ok := fn.X.(*ast.Ident); ok && id.Name == "dp" && fn.Sel.Name == "Float64" {
					add(c, "dp.Float64 (float uniform)")
				}
				if (fn.Sel.Name == "Float64" || fn.Sel.Name == "Float32") && len(c.Args) == 0 && !twoValued[c] {
					add(c, "."+fn.Sel.Name+"() (float uniform of a generator)")
				}
				switch fn.Sel.Name {
				case "NormFloat64", "ExpFloat64":
					add(c, fn.Sel.Name+" (float sampler)")
				case "Rand":
					if gonumDist {
						add(c, "gonum distribution .Rand (float sampler)")
					}
				case "Float64frombits", "Float32frombits", "SetInt", "SetUint64", "SetInt64":
					if len(c.Args) == 1 && holdsRandom(c.Args[0], tainted) {
						add(c, "random word converted to float by "+fn.Sel.Name)
					}
				}
			case *ast.Ident:
				if pkg == "dp" && fn.Name == "Float64" {
					add(c, "Float64 (float uniform)")
				}
				if (fn.Name == "float64" || fn.Name == "float32") && len(c.Args) == 1 && holdsRandom(c.Args[0], tainted) {
					add(c, "random word converted to "+fn.Name)
				}
			}
			return true
		})
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Body == nil {
				continue
			}
			name := d.Name.Name
			if d.Recv != nil && len(d.Recv.List) == 1 {
				t := d.Recv.List[0].Type
				if s, ok := t.(*ast.StarExpr); ok {
					t = s.X
				}
				if ix, ok := t.(*ast.IndexExpr); ok {
					t = ix.X
				}
				if id, ok := t.(*ast.Ident); ok {
					name = id.Name + "." + name
				}
			}
			scan(name, d.Body)
		case *ast.GenDecl:
			scan("<package>", d)
		}
	}
	return out
}

// TestNoFloatNoiseOnPrivatePaths fails if floating-point randomness (a
// float uniform, log(u), a float inverse CDF, a float Gaussian, math/rand)
// appears in any production file outside floatNoiseAllowed.
func TestNoFloatNoiseOnPrivatePaths(t *testing.T) {
	root := gofiles.Root(t)
	fset := token.NewFileSet()
	flagged := map[string][]finding{}
	for _, rel := range gofiles.Production(t) {
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, fd := range floatNoise(fset, f, f.Name.Name) {
			key := rel + ":" + fd.fn
			flagged[key] = append(flagged[key], fd)
		}
	}
	var bad []string
	for rel, fs := range flagged {
		if _, ok := floatNoiseAllowed[rel]; ok {
			continue
		}
		for _, f := range fs {
			bad = append(bad, f.pos.String()+" in "+rel+": "+f.what)
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("floating-point randomness on a private path: %s", b)
	}
	for rel, why := range floatNoiseAllowed {
		if _, ok := flagged[rel]; ok {
			continue
		}
		if strings.HasPrefix(why, "being fixed") {
			t.Logf("%s no longer draws float noise: remove it from floatNoiseAllowed", rel)
			continue
		}
		t.Errorf("allow-list entry %s matches nothing: remove it", rel)
	}
}

// The linter finds each pattern it claims to (a test that can fail).
func TestFloatNoiseLinterCatches(t *testing.T) {
	for _, c := range []struct{ name, src string }{
		{"log of a uniform", "package x\nimport (\"math\"; \"github.com/dpsurv/dpsurv/dp\")\nfunc f(s dp.Source) float64 { return -math.Log(dp.Float64(s)) }"},
		{"math/rand", "package x\nimport \"math/rand\"\nfunc f() float64 { return rand.NormFloat64() }"},
		{"math/rand/v2", "package x\nimport \"math/rand/v2\"\nfunc f() float64 { return rand.Float64() }"},
		{"word to float", "package x\nfunc f(s interface{ Uint64() uint64 }) float64 { return float64(s.Uint64()>>11) / (1 << 53) }"},
		{"gonum sampler", "package x\nimport \"gonum.org/v1/gonum/stat/distuv\"\nfunc f() float64 { return distuv.Normal{Sigma: 1}.Rand() }"},
		{"float uniform inside dp", "package dp\nfunc f(s Source) float64 { return Float64(s) * 2 }"},
		// The four patterns an independent review found the file-level linter missed:
		{"word assigned before conversion", "package x\nfunc f(s interface{ Uint64() uint64 }) float64 { w := s.Uint64() >> 11; v := w; return float64(v) / (1 << 53) }"},
		{"Float64frombits", "package x\nimport \"math\"\nfunc f(s interface{ Uint64() uint64 }) float64 { return math.Float64frombits(0x3ff<<52|s.Uint64()>>12) - 1 }"},
		{"dp.Uint64n to float", "package x\nimport \"github.com/dpsurv/dpsurv/dp\"\nfunc f(s dp.Source) float64 { return float64(dp.Uint64n(s, 1<<53)) / (1 << 53) }"},
		{"crypto/rand Int to float", "package x\nimport (\"crypto/rand\"; \"math/big\")\nfunc f() float64 { n, _ := rand.Int(rand.Reader, big.NewInt(1<<53)); return float64(n.Int64()) / (1 << 53) }"},
		{"crypto/rand Int to big.Float", "package x\nimport (cr \"crypto/rand\"; \"math/big\")\nfunc f() *big.Float { n, _ := cr.Int(cr.Reader, big.NewInt(1<<53)); return new(big.Float).SetInt(n) }"},
		{"crypto/rand Read to float", "package x\nimport (\"crypto/rand\"; \"encoding/binary\"; \"math\")\nfunc f() float64 { var b [8]byte; rand.Read(b[:]); w := binary.LittleEndian.Uint64(b[:]); return math.Float64frombits(w) }"},
		{"word kept in an array element", "package x\nfunc f(s interface{ Uint64() uint64 }) float64 { var a [2]uint64; (a[0]) = s.Uint64() >> 11; return float64(a[0]) / (1 << 53) }"},
		{"generator Float64", "package x\nfunc f(r interface{ Float64() float64 }) float64 { return r.Float64() }"},
	} {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "x.go", c.src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(floatNoise(fset, f, f.Name.Name)) == 0 {
			t.Errorf("%s: not flagged", c.name)
		}
	}
	// Decoding bytes and exact rational conversions are not randomness.
	for _, src := range []string{
		"package x\nimport (\"encoding/binary\"; \"math\")\nfunc f(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) }",
		"package x\nimport \"math/big\"\nfunc f(r *big.Rat) float64 { v, _ := r.Float64(); return v }",
	} {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "x.go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if fs := floatNoise(fset, f, "x"); len(fs) != 0 {
			t.Errorf("deterministic conversion flagged: %+v", fs)
		}
	}
	// Findings name their function, so one function of a file can be
	// allowed while the rest of the file stays under the linter.
	{
		src := "package x\nimport \"math/rand/v2\"\nfunc post() float64 { return rand.Float64() }\nfunc private() float64 { return rand.NormFloat64() }"
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "x.go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		fns := map[string]bool{}
		for _, fd := range floatNoise(fset, f, "x") {
			fns[fd.fn] = true
		}
		if !fns["post"] || !fns["private"] || len(fns) != 2 {
			t.Errorf("findings not attributed to their functions: %v", fns)
		}
	}
	clean := "package x\nimport (\"math\"; \"github.com/dpsurv/dpsurv/dp\")\nfunc f(s dp.Source) (int64, error) { _ = math.Log(2); return dp.DiscreteLaplace(s, 2) }"
	fset := token.NewFileSet()
	f, _ := parser.ParseFile(fset, "x.go", clean, 0)
	if fs := floatNoise(fset, f, "x"); len(fs) != 0 {
		t.Errorf("exact sampler flagged: %+v", fs)
	}
}

// assignedVar is the variable an assignment to e writes: x of x, x[i],
// x[i:j], &x and (x), however nested; nil when e names none (a field, a
// call's result).
func assignedVar(e ast.Expr) *ast.Ident {
	for {
		switch x := e.(type) {
		case *ast.Ident:
			return x
		case *ast.IndexExpr:
			e = x.X
		case *ast.SliceExpr:
			e = x.X
		case *ast.UnaryExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		default:
			return nil
		}
	}
}
