package aggregators

import (
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/dpfit/weibull"
)

// A weibull release's composition text names the same relation as its
// neighbouring field (review finding 9: it said replace-one for the
// add/remove-one lsp and laplace methods).
func TestWeibullCompositionMatchesNeighbouring(t *testing.T) {
	for _, method := range []string{weibull.WeibullMethodLSP, weibull.WeibullMethodLaplace, weibull.WeibullMethodSAA} {
		nb, comp := weibullNeighbouring(method), weibullComposition(method)
		for _, rel := range []string{"add/remove-one", "replace-one"} {
			if strings.HasPrefix(nb, rel) != strings.Contains(comp, "under "+rel) {
				t.Errorf("%s: neighbouring %q but composition %q", method, nb, comp)
			}
		}
	}
}
