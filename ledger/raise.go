package ledger

import (
	"fmt"
	"math"

	"go.uber.org/zap"
)

// RaiseBudget raises the total epsilon of a budgeted scope of the open
// ledger (a configuration reload). A budget never goes down in a running
// ledger and a scope is never added or removed: those need a restart,
// where the ledger is read again under the new budgets. Raising is the one
// change that cannot invalidate a release already made under the old
// budget.
func (l *Ledger) RaiseBudget(scope string, v float64) error {
	if !(v > 0) || math.IsInf(v, 0) {
		return fmt.Errorf("raise budget of scope %q: must be positive and finite, got %v", scope, v)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	old, ok := l.budget[scope]
	if !ok {
		return fmt.Errorf("raise budget of scope %q: not a budgeted scope of the running ledger (a new scope needs a restart)", scope)
	}
	if v < old {
		return fmt.Errorf("raise budget of scope %q: %v is below the running %v (lowering needs a restart)", scope, v, old)
	}
	if v == old {
		return nil
	}
	l.budget[scope] = v
	l.updateGauges(scope)
	l.log.Info("privacy budget raised", zap.String("scope", scope), zap.Float64("from", old), zap.Float64("to", v))
	return nil
}
