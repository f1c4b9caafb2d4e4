package regression

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"

	"github.com/dpsurv/dpsurv/dp"
)

// MRE is the papers' accuracy measure ||f_priv - f*|| / ||f*||.
func MRE(fPriv, fStar []float64) float64 {
	var d, s float64
	for j := range fStar {
		d += (fPriv[j] - fStar[j]) * (fPriv[j] - fStar[j])
		s += fStar[j] * fStar[j]
	}
	return math.Sqrt(d / s)
}

// MRECell summarises the MRE of one method at one budget over repetitions.
type MRECell struct {
	Method  Method  `json:"method"`
	Epsilon float64 `json:"epsilon"`
	Lambda  float64 `json:"lambda,omitempty"`
	Reps    int     `json:"reps"`
	Mean    float64 `json:"mean"`
	SD      float64 `json:"sd"`
	Median  float64 `json:"median"`
}

// MREReport is the output of EvaluateMRE and LambdaSweep.
type MREReport struct {
	// Reference is f* = (alpha, beta), the non-private, unregularised MLE
	// on the same preprocessing.
	Reference []float64 `json:"reference"`
	Cells     []MRECell `json:"cells"`
}

func summarise(m Method, eps, lambda float64, xs []float64) MRECell {
	c := MRECell{Method: m, Epsilon: eps, Lambda: lambda, Reps: len(xs)}
	for _, x := range xs {
		c.Mean += x
	}
	c.Mean /= float64(len(xs))
	for _, x := range xs {
		c.SD += (x - c.Mean) * (x - c.Mean)
	}
	if len(xs) > 1 {
		c.SD = math.Sqrt(c.SD / float64(len(xs)-1))
	} else {
		c.SD = 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		c.Median = s[len(s)/2]
	} else {
		c.Median = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return c
}

func reference(data Data, base DiscreteOptions) ([]float64, error) {
	ref := base
	ref.Method, ref.Ridge, ref.Link = MethodMLE, false, LinkLogit
	r, err := FitDiscrete(data, ref, nil)
	if err != nil {
		return nil, fmt.Errorf("reference fit: %w", err)
	}
	return append(append([]float64(nil), r.Alpha...), r.Beta...), nil
}

// EvaluateMRE runs each private method (base.Method is ignored; methods
// nil means output, objective and psgld) reps times at each budget and
// summarises MRE against the non-private MLE with the same preprocessing
// (base's TimeMax, Scaling, Intervals, Knots; Lambda for the perturbation
// methods; PSGLD settings). This is the paper's Figure 5. Each repetition
// draws fresh noise from src; pSGLD's repetitions run in parallel, each on
// a seeded stream drawn from src (parallelReps).
func EvaluateMRE(data Data, base DiscreteOptions, methods []Method, epsilons []float64, reps int, src dp.Source) (MREReport, error) {
	if reps < 1 {
		return MREReport{}, fmt.Errorf("evaluate mre: reps must be >= 1, got %d", reps)
	}
	if len(epsilons) == 0 {
		return MREReport{}, errors.New("evaluate mre: no budgets")
	}
	if methods == nil {
		methods = []Method{MethodOutput, MethodObjective, MethodPSGLD}
	}
	for _, m := range methods {
		if m == MethodMLE { // refused before the reference fit is paid for
			return MREReport{}, errors.New("evaluate mre: mle is the reference, not a private method")
		}
	}
	fStar, err := reference(data, base)
	if err != nil {
		return MREReport{}, fmt.Errorf("evaluate mre: %w", err)
	}
	rep := MREReport{Reference: fStar}
	for _, m := range methods {
		// Ext-Out-Pert's noise-free minimiser is the same at every budget
		// and repetition: computed once, each repetition draws its noise
		var memo *outputMemo
		if m == MethodOutput {
			memo = new(outputMemo)
		}
		for _, eps := range epsilons {
			opts := base
			opts.Method, opts.Epsilon = m, eps
			xs := make([]float64, reps)
			lambdas := make([]float64, reps)
			fit := func(r int, s dp.Source) error {
				res, err := fitDiscrete(data, opts, s, memo)
				if err != nil {
					return fmt.Errorf("evaluate mre: %s at epsilon %v: fit discrete (%s): %w", m, eps, m, err)
				}
				xs[r] = MRE(append(append([]float64(nil), res.Alpha...), res.Beta...), fStar)
				lambdas[r] = res.Lambda
				return nil
			}
			var err error
			if m == MethodPSGLD {
				err = parallelReps(reps, src, fit)
			} else {
				for r := range xs {
					if err = fit(r, src); err != nil {
						break
					}
				}
			}
			if err != nil {
				return MREReport{}, err
			}
			rep.Cells = append(rep.Cells, summarise(m, eps, lambdas[reps-1], xs))
		}
	}
	return rep, nil
}

// parallelReps runs fit(r, s) for r = 0..reps-1 on up to GOMAXPROCS
// goroutines. Repetition r draws from its own stream s, a
// dp.NewSeededSource whose seed is the r-th draw of src (all drawn before
// any repetition starts), so the results are a function of src's state
// alone, whatever the scheduling. Evaluation only: used for pSGLD, whose
// chain is sequential (the other methods' fits already use every core),
// and by the noisy Newton coverage study's test (whose test files may
// start no goroutine: internal/archtest).
func parallelReps(reps int, src dp.Source, fit func(r int, s dp.Source) error) error {
	seeds := make([]uint64, reps)
	for r := range seeds {
		seeds[r] = src.Uint64()
	}
	workers := max(1, min(runtime.GOMAXPROCS(0), reps))
	errs := make([]error, reps)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range next {
				errs[r] = fit(r, dp.NewSeededSource(seeds[r]))
			}
		}()
	}
	for r := range reps {
		next <- r
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// LambdaSweep is the paper's Table 2: the MRE of Ext-Out-Pert (or another
// perturbation method) at one budget for each ridge Lambda.
func LambdaSweep(data Data, base DiscreteOptions, method Method, lambdas []float64, epsilon float64, reps int, src dp.Source) (MREReport, error) {
	if method != MethodOutput && method != MethodObjective {
		return MREReport{}, fmt.Errorf("lambda sweep: method must be output or objective, got %q", method)
	}
	var rep MREReport
	for _, l := range lambdas {
		opts := base
		opts.Lambda = l
		r, err := EvaluateMRE(data, opts, []Method{method}, []float64{epsilon}, reps, src)
		if err != nil {
			return MREReport{}, fmt.Errorf("lambda sweep: lambda %v: %w", l, err)
		}
		rep.Reference = r.Reference
		rep.Cells = append(rep.Cells, r.Cells...)
	}
	return rep, nil
}

// CoxComparison is the paper's Table 3 for one data set.
type CoxComparison struct {
	BetaDiscrete []float64 `json:"beta_discrete"`
	BetaCox      []float64 `json:"beta_cox"`
	// RelativeError is ||beta_discrete - beta_cox|| / ||beta_cox||.
	RelativeError float64 `json:"relative_error"`
}

// CoxVsDiscrete fits the non-private discrete-time logit model (base's
// preprocessing, no ridge) and Cox with Efron ties on the same
// preprocessed (centred, scaled, clipped) covariates, and compares beta.
func CoxVsDiscrete(data Data, base DiscreteOptions) (CoxComparison, error) {
	opts := base
	opts.Method, opts.Ridge, opts.Link = MethodMLE, false, LinkLogit
	d, err := FitDiscrete(data, opts, nil)
	if err != nil {
		return CoxComparison{}, fmt.Errorf("cox vs discrete: %w", err)
	}
	sc := d.Scaling
	c, err := FitCox(data, CoxOptions{Ties: TiesEfron, Scaling: &sc}, nil)
	if err != nil {
		return CoxComparison{}, fmt.Errorf("cox vs discrete: %w", err)
	}
	return CoxComparison{BetaDiscrete: d.Beta, BetaCox: c.Beta, RelativeError: MRE(d.Beta, c.Beta)}, nil
}
