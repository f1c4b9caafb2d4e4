package app

import (
	"errors"
	"fmt"
	"time"

	"github.com/dpsurv/dpsurv/aggregators"
	"github.com/dpsurv/dpsurv/ledger"
	"github.com/dpsurv/dpsurv/pipeline"
)

// AggregatorGroupID is the consumer group of the aggregators on the input
// topic: the input group with "-agg" appended.
func (c Config) AggregatorGroupID() string { return c.Input.GroupID + "-agg" }

// FitCurveTopic is the topic of the Arrow curve tables:
// output.fit_arrow_topic, or output.fit_topic + ".arrow".
func (c Config) FitCurveTopic() string {
	if c.Output.FitArrowTopic != "" {
		return c.Output.FitArrowTopic
	}
	return c.Output.FitTopic + ".arrow"
}

// DefaultLeaseSessionTimeout is the aggregator lease group's session
// timeout when ledger.lease_session_timeout is not set.
const DefaultLeaseSessionTimeout = 10 * time.Second

// LeaseSessionTimeout is ledger.lease_session_timeout or its default.
func (c Config) LeaseSessionTimeout() time.Duration {
	if c.Ledger.LeaseSessionTimeout > 0 {
		return c.Ledger.LeaseSessionTimeout
	}
	return DefaultLeaseSessionTimeout
}

// LedgerStateTopic and LedgerStateFile locate the aggregators' checkpoint
// next to the ledger.
func (c Config) LedgerStateTopic() string { return c.Ledger.Topic + ".state" }

// LedgerStateFile is the checkpoint file in file mode.
func (c Config) LedgerStateFile() string { return c.Ledger.File + ".state" }

// MaxPendingWindowsLimit bounds ledger.max_pending_windows (each pending
// window holds its counts: bins x cohorts, or a discrete window's records).
const MaxPendingWindowsLimit = 1024

// CheckpointInterval is ledger.checkpoint_interval or its default.
func (c Config) CheckpointInterval() time.Duration {
	if c.Ledger.CheckpointInterval > 0 {
		return c.Ledger.CheckpointInterval
	}
	return pipeline.DefaultCheckpointInterval
}

// DefaultAggregatorDrainTimeout bounds the aggregators' stop when
// ledger.drain_timeout is not set.
const DefaultAggregatorDrainTimeout = 10 * time.Second

// AggregatorDrainTimeout is ledger.drain_timeout or its default.
func (c Config) AggregatorDrainTimeout() time.Duration {
	if c.Ledger.DrainTimeout > 0 {
		return c.Ledger.DrainTimeout
	}
	return DefaultAggregatorDrainTimeout
}

// AggregatorConfigs returns the aggregators section with its params
// decoded and the public schema bounds filled in.
func (c Config) AggregatorConfigs() ([]aggregators.Config, error) {
	out := make([]aggregators.Config, 0, len(c.Aggregators))
	publicCounts := false // some aggregate releases exact counts (ledger.allow_public_counts)
	for i := range c.Aggregators {
		ac, err := c.aggregatorConfig(i)
		if err != nil {
			return nil, err
		}
		out = append(out, ac)
		publicCounts = publicCounts || ac.ReleasesExactCount()
	}
	for i := range out {
		out[i].CountsPublicElsewhere = publicCounts && !out[i].ReleasesExactCount()
		// (a replace-one release already states that n is public and
		// presence not protected)
		out[i].PresencePublicViaSanitized = c.Output.SanitizedTopic != "" && !out[i].ReleasesExactCount()
		out[i].ReplaceOneAccounting = publicCounts || c.Output.SanitizedTopic != ""
	}
	return out, nil
}

// aggregatorConfig is aggregators[i] with its params decoded (errors are
// FieldErrors under aggregators[i]) and the schema bounds filled in.
func (c Config) aggregatorConfig(i int) (aggregators.Config, error) {
	ac, err := c.Aggregators[i].Resolved()
	ac.Cohorts, ac.TimeMax, ac.TimeUnit, ac.Covariates = c.Schema.Cohorts, c.Schema.TimeMax, c.Schema.TimeUnit, c.Schema.Covariates
	return ac, aggregators.Prefix(fmt.Sprintf("aggregators[%d]", i), err)
}

// validateAggregation checks the aggregators, the ledger and the fit
// topics; every error names its field path.
func (c Config) validateAggregation() []error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	names := map[string]bool{}
	exact, protected := -1, -1 // first aggregate releasing exact counts, first add/remove-one one
	for i, a := range c.Aggregators {
		path := fmt.Sprintf("aggregators[%d]", i)
		if a.Name != "" && names[a.Name] {
			add("%s.name: duplicate %q", path, a.Name)
		}
		names[a.Name] = true
		ac, err := c.aggregatorConfig(i)
		errs = append(errs, aggregators.Errors(err)...)
		if err == nil {
			switch {
			case ac.ReleasesExactCount():
				if exact < 0 {
					exact = i
				}
			case protected < 0:
				protected = i
			}
		}
		for _, e := range ac.Check() {
			var fe *aggregators.FieldError
			if errors.As(e, &fe) && (fe.Path == "cohorts" || fe.Path == "time_max") {
				continue // reported under schema.*
			}
			errs = append(errs, aggregators.Prefix(path, e))
		}
	}
	if exact >= 0 && protected >= 0 && !c.Ledger.AllowPublicCounts {
		field := "kind"
		if c.Aggregators[exact].Kind == aggregators.KindWeibull {
			field = "params.method"
		}
		add("aggregators[%d].%s: %q releases its window's exact record count (n public, replace-one) while aggregators[%d] (%q) "+
			"claims add/remove-one on the same input (presence and count protected): the exact count undoes that protection; "+
			"run them on separate inputs, or set ledger.allow_public_counts: true to accept it (the add/remove-one releases then "+
			"list the count as public and state that presence is not protected)",
			exact, field, c.Aggregators[exact].Name, protected, c.Aggregators[protected].Name)
	}
	if len(c.Aggregators) == 0 {
		return errs
	}
	if c.Output.FitTopic == "" {
		add("output.fit_topic: required when aggregators are configured")
	}
	for _, t := range []string{c.Output.FitTopic, c.FitCurveTopic()} {
		if t != "" && (t == c.Input.Topic || t == c.Output.SanitizedTopic || t == c.Output.DeadLetterTopic) {
			add("output.fit_topic: %q must differ from the input, sanitized and dead-letter topics", t)
		}
	}
	switch {
	case c.Ledger.Topic == "" && c.Ledger.File == "":
		add("ledger: set ledger.topic (an uncompacted topic kept forever, service mode) or ledger.file (file mode): every release is charged to the ledger before it is written")
	case c.Ledger.Topic != "" && c.Ledger.File != "":
		add("ledger: set ledger.topic or ledger.file, not both")
	}
	if _, ok := c.Ledger.Budget[ledger.ScopeStream]; !ok {
		add("ledger.budget.stream: required when aggregators are configured (the total epsilon of all releases)")
	}
	if c.Ledger.CheckpointInterval < 0 {
		add("ledger.checkpoint_interval: must be >= 0")
	}
	if c.Ledger.DrainTimeout < 0 {
		add("ledger.drain_timeout: must be >= 0")
	}
	// Kafka brokers refuse sessions under group.min.session.timeout.ms (6 s
	// by default), and a refused lease group would never elect a holder.
	if t := c.Ledger.LeaseSessionTimeout; t != 0 && (t < 6*time.Second || t > 5*time.Minute) {
		add("ledger.lease_session_timeout: must be between 6s and 5m, got %v", t)
	}
	if m := c.Ledger.MaxPendingWindows; m < 0 || m > MaxPendingWindowsLimit {
		add("ledger.max_pending_windows: must be between 1 and %d (0: %d), got %d", MaxPendingWindowsLimit, aggregators.DefaultMaxPendingWindows, m)
	}
	if c.Ledger.LeaseSessionTimeout != 0 && c.Ledger.Topic == "" {
		add("ledger.lease_session_timeout: only with ledger.topic (the lease elects the aggregating replica in Kafka-ledger mode)")
	}
	return errs
}
