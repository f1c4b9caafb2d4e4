package aggregators

import (
	"encoding/json"
	"fmt"

	"github.com/dpsurv/dpsurv/dp"
)

// cumulativeKind is the km kind with window.cumulative: the cumulative
// curve re-published every window through a binary-tree counter
// (dpfit.ContinualKM), epsilon charged once for the horizon. Its params
// and their defaults are km's.
type cumulativeKind struct{ kmKind }

func (cumulativeKind) messages(a *aggregate, c *closing, _ dp.Source, remaining map[string]float64) ([]FitMessage, error) {
	return a.cumulativeMessages(c, remaining)
}

func (a *aggregate) cumulativeMessages(c *closing, remaining map[string]float64) ([]FitMessage, error) {
	if c.step != a.tree.Releases() {
		return nil, fmt.Errorf("aggregate %q: cumulative window at step %d, counter at %d", a.cfg.Name, c.step, a.tree.Releases())
	}
	res, err := a.tree.Current()
	if err != nil {
		return nil, fmt.Errorf("aggregate %q: %w", a.cfg.Name, err)
	}
	msgs := a.fromKM(c, res, remaining, 0, compositionCumulative)
	for i := range msgs {
		msgs[i].ReleaseIndex, msgs[i].Horizon = c.step, a.cfg.Window.Horizon
		msgs[i].Contribution = ContributionCumulative
	}
	return msgs, nil
}

// cumulativeChargeDoc is the ledger release of a cumulative aggregate's one
// charge (nothing is published from it).
func (a *aggregate) cumulativeChargeDoc(remaining map[string]float64) ([]byte, error) {
	return json.Marshal(map[string]any{
		"aggregate": a.cfg.Name, "kind": a.cfg.Kind, "cumulative": true, "horizon": a.cfg.Window.Horizon,
		"epsilon": a.cfg.Epsilon, "budget_remaining": remaining,
		"note": "one charge for all horizon releases of the binary-tree counter",
	})
}
