package privacy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// floatNoiseAllowed lists the production files that may hold floating-point
// randomness, each with the reason. Every other non-test Go file of the
// module is a private path (default-deny) and must draw noise only through
// the exact samplers of package dp (integer arithmetic, Bernoulli(e^-x)
// steps, lattice-snapped continuous noise).
var floatNoiseAllowed = map[string]string{
	// Permanent: not on a private path.
	"dp/source.go":                     "defines the ChaCha8 CSPRNG (math/rand/v2's ChaCha8) and dp.Float64; the callers of dp.Float64 are what this linter checks",
	"synth/synth.go":                   "synthetic test and evaluation data, no release",
	"projection/projection.go":         "HPPCox random projection: release kind `none (heuristic)`, not a DP mechanism",
	"ops/memory.go":                    "runtime/metrics Value.Uint64 converted to float: a memory figure, not randomness",
	"dpfit/km_inference.go":            "post-processing: the noise-aware interval widths simulate the mechanism from the released counts, seeded by a hash of those counts (a deterministic function of the release)",
	"dpfit/km_interval.go":             "post-processing: the simultaneous band's critical value simulates Greenwood sampling paths with the same source km_inference.go seeds from a hash of the released counts (a deterministic function of the release)",
	"dpfit/logrank_dp.go":              "post-processing: the calibrated log-rank p-value's Monte-Carlo null is simulated from the released counts, seeded by a hash of them (a deterministic function of the release)",
	"dpfit/weibull_inference.go":       "post-processing: the noise-aware Weibull intervals simulate the mechanism from the released fit, seeded by a hash of the release (a deterministic function of the release)",
	"regression/inference.go":          "post-processing: the coefficient intervals' parametric bootstrap simulates the mechanism from the released coefficients and Hessians, seeded by a hash of the release (a deterministic function of the release)",
	"internal/inference/km.go":         "evaluation: coverage and size studies (bootstrap worlds), no release",
	"internal/inference/weibull.go":    "evaluation: coverage study of the Weibull intervals (bootstrap world), no release",
	"internal/inference/regression.go": "evaluation: coverage study of the regression coefficient intervals (synthetic world), no release",
	"internal/inference/logrank.go":    "evaluation: coverage and size studies (permuted labels), no release",
}

// A finding is one use of floating-point randomness in a file.
type finding struct {
	pos  token.Position
	what string
}

// floatNoise reports, in one parsed file, the patterns that mean
// floating-point or non-cryptographic randomness:
//   - importing math/rand or math/rand/v2 (a non-cryptographic or float
//     sampler: NormFloat64, ExpFloat64, Float64, ...);
//   - calling dp.Float64 (a 53-bit float uniform: the basis of log(u),
//     float inverse CDFs, float Gaussians);
//   - converting a random word to float, float64(<... .Uint64() ...>);
//   - calling NormFloat64 or ExpFloat64 on anything;
//   - sampling a gonum distribution (distuv / distmv .Rand).
func floatNoise(fset *token.FileSet, f *ast.File, pkg string) []finding {
	var out []finding
	add := func(n ast.Node, what string) { out = append(out, finding{fset.Position(n.Pos()), what}) }
	gonumDist := false
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		switch {
		case p == "math/rand" || p == "math/rand/v2":
			add(im, "imports "+p)
		case strings.HasPrefix(p, "gonum.org/v1/gonum/stat/distuv") || strings.HasPrefix(p, "gonum.org/v1/gonum/stat/distmv"):
			gonumDist = true
		}
	}
	containsUint64Call := func(e ast.Expr) bool {
		found := false
		ast.Inspect(e, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if s, ok := c.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Uint64" {
					found = true
				}
			}
			return !found
		})
		return found
	}
	ast.Inspect(f, func(n ast.Node) bool {
		c, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		switch fn := c.Fun.(type) {
		case *ast.SelectorExpr:
			if id, ok := fn.X.(*ast.Ident); ok && id.Name == "dp" && fn.Sel.Name == "Float64" {
				add(c, "dp.Float64 (float uniform)")
			}
			switch fn.Sel.Name {
			case "NormFloat64", "ExpFloat64":
				add(c, fn.Sel.Name+" (float sampler)")
			case "Rand":
				if gonumDist {
					add(c, "gonum distribution .Rand (float sampler)")
				}
			}
		case *ast.Ident:
			if pkg == "dp" && fn.Name == "Float64" {
				add(c, "Float64 (float uniform)")
			}
			if fn.Name == "float64" && len(c.Args) == 1 && containsUint64Call(c.Args[0]) {
				add(c, "random word converted to float64")
			}
		}
		return true
	})
	return out
}

// TestNoFloatNoiseOnPrivatePaths fails if floating-point randomness (a
// float uniform, log(u), a float inverse CDF, a float Gaussian, math/rand)
// appears in any production file outside floatNoiseAllowed.
func TestNoFloatNoiseOnPrivatePaths(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	flagged := map[string][]finding{}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if fs := floatNoise(fset, f, f.Name.Name); len(fs) > 0 {
			flagged[rel] = fs
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("scanned only %d files under %s: wrong root?", files, root)
	}
	var bad []string
	for rel, fs := range flagged {
		if _, ok := floatNoiseAllowed[rel]; ok {
			continue
		}
		for _, f := range fs {
			bad = append(bad, f.pos.String()+": "+f.what)
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
	clean := "package x\nimport (\"math\"; \"github.com/dpsurv/dpsurv/dp\")\nfunc f(s dp.Source) (int64, error) { _ = math.Log(2); return dp.DiscreteLaplace(s, 2) }"
	fset := token.NewFileSet()
	f, _ := parser.ParseFile(fset, "x.go", clean, 0)
	if fs := floatNoise(fset, f, "x"); len(fs) != 0 {
		t.Errorf("exact sampler flagged: %+v", fs)
	}
}
