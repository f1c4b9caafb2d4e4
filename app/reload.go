package app

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/ledger"
)

// reloadState is what a configuration reload (SIGHUP) changes in a running
// Service, and the metrics registered at start.
type reloadState struct {
	mu      sync.Mutex
	running *Config            // the configuration in force (nil before Run)
	budget  map[string]float64 // ledger.budget in force (raised by reloads)
	limit   *prometheus.GaugeVec
	ledger  atomic.Pointer[ledger.Ledger] // the open ledger (lease holder)
	agg     *aggregators.Metrics
}

// ReloadReport says what a reload did with each changed setting.
type ReloadReport struct {
	// Applied: changes in force now ("log.level: info -> debug").
	Applied []string
	// NeedRestart: changed settings that only a restart applies.
	NeedRestart []string
	// Refused: changes that are not made, with the reason (a budget
	// lowered); the running value stays.
	Refused []string
}

// Changed is true when the new configuration differed from the running one.
func (r ReloadReport) Changed() bool {
	return len(r.Applied)+len(r.NeedRestart)+len(r.Refused) > 0
}

// budgetFor is the ledger.budget a ledger opened now gets: the config's,
// raised by reloads.
func (s *Service) budgetFor(cfg Config) map[string]float64 {
	s.reload.mu.Lock()
	defer s.reload.mu.Unlock()
	if s.reload.budget == nil {
		return cfg.Ledger.Budget
	}
	out := make(map[string]float64, len(s.reload.budget))
	for k, v := range s.reload.budget {
		out[k] = v
	}
	return out
}

// Reload applies what can change in a running service from a new
// configuration (already loaded and validated) and key, and reports the
// rest: log.level (when the logger has a LogLevel), ledger.budget raised
// for an existing scope (the open ledger and the next one). A budget
// lowered, a scope added or removed, and every other setting need a
// restart. Alert thresholds live in the Helm chart's PrometheusRule, not in
// the service. The report is logged too.
func (s *Service) Reload(next Config, key []byte) ReloadReport {
	s.reload.mu.Lock()
	defer s.reload.mu.Unlock()
	var rep ReloadReport
	if s.reload.running == nil {
		rep.NeedRestart = append(rep.NeedRestart, "the service is not running yet")
		return rep
	}
	cur := s.reload.running

	if next.Log.Level != cur.Log.Level {
		var lvl zapcore.Level
		switch err := lvl.UnmarshalText([]byte(next.Log.Level)); {
		case err != nil:
			rep.Refused = append(rep.Refused, fmt.Sprintf("log.level: %v", err))
		case s.LogLevel == nil:
			rep.NeedRestart = append(rep.NeedRestart, "log.level")
		default:
			s.LogLevel.SetLevel(lvl)
			rep.Applied = append(rep.Applied, fmt.Sprintf("log.level: %s -> %s", cur.Log.Level, next.Log.Level))
			cur.Log.Level = next.Log.Level
		}
	}

	scopes := map[string]bool{}
	for k := range s.reload.budget {
		scopes[k] = true
	}
	for k := range next.Ledger.Budget {
		scopes[k] = true
	}
	for _, sc := range slices.Sorted(maps.Keys(scopes)) {
		old, had := s.reload.budget[sc]
		v, has := next.Ledger.Budget[sc]
		path := "ledger.budget." + sc
		switch {
		case had && has && v > old:
			if l := s.reload.ledger.Load(); l != nil {
				if err := l.RaiseBudget(sc, v); err != nil {
					rep.Refused = append(rep.Refused, fmt.Sprintf("%s: %v", path, err))
					continue
				}
			}
			s.reload.budget[sc] = v
			if s.reload.limit != nil {
				s.reload.limit.WithLabelValues(sc).Set(v)
			}
			rep.Applied = append(rep.Applied, fmt.Sprintf("%s: %v -> %v", path, old, v))
			s.statementChanged() // the per-patient statement's cap may change
		case had && has && v < old:
			rep.Refused = append(rep.Refused, fmt.Sprintf("%s: %v is below the running %v; a budget is only raised by a reload (lowering needs a restart)", path, v, old))
		case had != has:
			rep.NeedRestart = append(rep.NeedRestart, path)
		}
	}

	// Everything else: compared with the reloadable settings masked.
	a, b := *cur, next
	a.Log, b.Log = LogConfig{}, LogConfig{}
	a.Ledger.Budget, b.Ledger.Budget = nil, nil
	rep.NeedRestart = append(rep.NeedRestart, diffPaths("", reflect.ValueOf(a), reflect.ValueOf(b))...)
	if !bytes.Equal(key, s.Key) {
		rep.NeedRestart = append(rep.NeedRestart, "sanitizers.key_file (contents)")
	}

	switch {
	case !rep.Changed():
		s.Log.Info("config reloaded: nothing changed")
	default:
		s.Log.Info("config reloaded", zap.Strings("applied", rep.Applied), zap.Strings("need_restart", rep.NeedRestart), zap.Strings("refused", rep.Refused))
		if len(rep.NeedRestart) > 0 {
			s.Log.Warn("config changes need a restart to take effect", zap.Strings("settings", rep.NeedRestart))
		}
	}
	return rep
}

// diffPaths names the differing fields of two values of one struct type by
// their YAML paths, one level of nesting into structs (a list or a map is
// named whole).
func diffPaths(prefix string, a, b reflect.Value) []string {
	if reflect.DeepEqual(a.Interface(), b.Interface()) {
		return nil
	}
	if a.Kind() != reflect.Struct || strings.Count(prefix, ".") >= 2 {
		return []string{strings.TrimSuffix(prefix, ".")}
	}
	var out []string
	t := a.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			name = strings.ToLower(f.Name)
		}
		out = append(out, diffPaths(prefix+name+".", a.Field(i), b.Field(i))...)
	}
	return out
}
