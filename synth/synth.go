package synth

import (
	"fmt"
	"math"

	"github.com/dpsurv/dpsurv/dp"
)

// Options configures a synthetic cohort.
type Options struct {
	N        int
	Cohorts  []string // labels; cohort k has scale BaseScale*(1+0.35k)
	TimeMax  float64  // administrative censoring and public bound
	Shape    float64  // Weibull shape (default 1.3)
	Scale    float64  // base Weibull scale in time units (default TimeMax/4)
	Censor   float64  // mean of the exponential censoring time (default TimeMax)
	Seed     uint64
	IDPrefix string // default "p"
}

// Data is a generated cohort; Age is a covariate with a hazard effect.
type Data struct {
	ID     []string
	Time   []float64
	Event  []bool
	Cohort []int32
	Age    []float64
}

// Generate draws a cohort. The same options give the same data.
func Generate(o Options) (Data, error) {
	if o.N < 0 {
		return Data{}, fmt.Errorf("synth: n must be >= 0, got %d", o.N)
	}
	if len(o.Cohorts) == 0 {
		return Data{}, fmt.Errorf("synth: at least one cohort label required")
	}
	if !(o.TimeMax > 1) {
		return Data{}, fmt.Errorf("synth: time max must be > 1, got %v", o.TimeMax)
	}
	if o.Shape == 0 {
		o.Shape = 1.3
	}
	if o.Scale == 0 {
		o.Scale = o.TimeMax / 4
	}
	if o.Censor == 0 {
		o.Censor = o.TimeMax
	}
	if o.IDPrefix == "" {
		o.IDPrefix = "p"
	}
	src := dp.NewSeededSource(o.Seed)
	u := func() float64 { return (float64(src.Uint64()>>11) + 0.5) / (1 << 53) }
	d := Data{
		ID: make([]string, o.N), Time: make([]float64, o.N), Event: make([]bool, o.N),
		Cohort: make([]int32, o.N), Age: make([]float64, o.N),
	}
	for i := range o.N {
		k := int(dp.Uint64n(src, uint64(len(o.Cohorts))))
		age := math.Round(40 + 40*u())
		// Proportional hazards in age: scale shrinks by exp(-0.02 (age-60)/shape).
		scale := o.Scale * (1 + 0.35*float64(k)) * math.Exp(-0.02*(age-60)/o.Shape)
		t := scale * math.Pow(-math.Log(u()), 1/o.Shape)
		c := -o.Censor * math.Log(u())
		ev := t <= c && t <= o.TimeMax
		obs := math.Min(math.Min(t, c), o.TimeMax)
		obs = math.Max(1, math.Ceil(obs))
		d.ID[i] = fmt.Sprintf("%s%07d", o.IDPrefix, i)
		d.Time[i] = obs
		d.Event[i] = ev
		d.Cohort[i] = int32(k)
		d.Age[i] = age
	}
	return d, nil
}
