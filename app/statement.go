package app

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/dpsurv/dpsurv/ledger"
)

// PatientStatement is what one patient's record can lose across every
// output of a service configuration over the budget's life, computed from
// the configuration (docs/privacy.md, "What one patient can lose"). Losses
// are worst-case log ratios (nats). The sanitized topic's loss is per
// record version (versions are not bounded by the service); the central
// releases' loss is bounded by the ledger budget that binds first, in the
// relation the service accounts under.
type PatientStatement struct {
	// Relation is the neighbouring relation the budget is accounted under.
	Relation string `json:"relation"`
	// Sanitized lists the per-record mechanisms of the sanitized topic
	// (empty without output.sanitized_topic).
	Sanitized []StatementField `json:"sanitized_topic"`
	// SanitizedPerVersion is one record version's loss on the sanitized
	// topic (the fields' losses add); SanitizedTwoVersions the exact loss
	// of two versions of the record (version_pair_loss, added).
	SanitizedPerVersion  float64 `json:"sanitized_loss_per_version"`
	SanitizedTwoVersions float64 `json:"sanitized_loss_two_versions"`
	// Central lists the aggregates: what each release is charged.
	Central []StatementAggregate `json:"central"`
	// CentralCap bounds the central releases' total loss for one patient
	// (nil: no budget binds, the loss grows with every window);
	// CentralCapScope names the budget that binds.
	CentralCap      *float64 `json:"central_cap"`
	CentralCapScope string   `json:"central_cap_scope,omitempty"`
	// TotalOneVersion and TotalTwoVersions add the sanitized topic's loss
	// and the central cap (nil when the cap is unbounded).
	TotalOneVersion  *float64 `json:"total_one_version"`
	TotalTwoVersions *float64 `json:"total_two_versions"`
	Notes            []string `json:"notes"`
}

// StatementField is one sanitized field's loss.
type StatementField struct {
	Field        string  `json:"field"`
	Mechanism    string  `json:"mechanism"`
	Kind         string  `json:"kind"`
	PerVersion   float64 `json:"loss_per_version"`
	TwoVersions  float64 `json:"loss_two_versions"`
	Neighbouring string  `json:"neighbouring"`
}

// StatementAggregate is one aggregate's charge.
type StatementAggregate struct {
	Name    string  `json:"name"`
	Kind    string  `json:"kind"`
	Epsilon float64 `json:"epsilon"`
	// Charged is what each release (Per) is charged to every scope.
	Charged float64 `json:"charged"`
	Per     string  `json:"per"`
	// Budget is the aggregate's own scope budget (0: none).
	Budget float64 `json:"budget,omitempty"`
}

// Statement computes the per-patient statement of a validated config.
func Statement(cfg Config) (PatientStatement, error) {
	var st PatientStatement
	acs, err := cfg.AggregatorConfigs()
	if err != nil {
		return st, err
	}
	replaceOne := cfg.Output.SanitizedTopic != ""
	for _, ac := range acs {
		replaceOne = replaceOne || ac.ReplaceOneAccounting || ac.ReleasesExactCount()
	}
	st.Relation = "add/remove-one (presence and the record count protected)"
	switch {
	case len(acs) == 0:
		st.Relation = "none: no central releases (the sanitized topic's guarantees are per record version)"
	case replaceOne:
		st.Relation = "replace-one (presence and the record count are public in this service; an add/remove-one release is charged 2 epsilon)"
	}
	if cfg.Output.SanitizedTopic != "" {
		g, err := Guarantees(cfg, make([]byte, 32)) // the losses do not depend on the key
		if err != nil {
			return st, err
		}
		for _, f := range g {
			if f.WorstCaseLoss == nil {
				continue
			}
			sf := StatementField{Field: f.Field, Mechanism: f.Mechanism, Kind: f.Kind, PerVersion: *f.WorstCaseLoss,
				TwoVersions: 2 * *f.WorstCaseLoss, Neighbouring: "one record version's value of this field"}
			if f.VersionPairLoss != nil {
				sf.TwoVersions = *f.VersionPairLoss
			}
			if f.Field == "time" {
				sf.Neighbouring = fmt.Sprintf("two true times both within W = %d %s of the published one (times more than 2W apart are distinguishable)", *f.Window, cfg.Schema.TimeUnit)
			}
			st.Sanitized = append(st.Sanitized, sf)
			st.SanitizedPerVersion += sf.PerVersion
			st.SanitizedTwoVersions += sf.TwoVersions
		}
		st.Notes = append(st.Notes,
			"sanitized topic: each further version of a patient's record is a further release (counted in dpsurv_record_versions_total); the service does not bound the number of versions",
			"sanitized topic: the pseudonym, the event flag and the number of versions are published as they are: presence and counts are public")
	} else {
		st.Notes = append(st.Notes, "no sanitized topic: central releases only")
	}
	budget := cfg.Ledger.Budget
	aggCap, allAgg := 0.0, len(acs) > 0
	for _, ac := range acs {
		sa := StatementAggregate{Name: ac.Name, Kind: ac.Kind, Epsilon: ac.Epsilon, Charged: ac.ChargedEpsilon(), Per: "window of " + ac.Window.Size.String()}
		if ac.Window.Cumulative {
			sa.Per = fmt.Sprintf("horizon of %d windows of %s", ac.Window.Horizon, ac.Window.Size)
		}
		if b, ok := budget[ledger.ScopeAggregate(ac.Name)]; ok {
			sa.Budget = b
			aggCap += b
		} else {
			allAgg = false
		}
		st.Central = append(st.Central, sa)
	}
	if len(acs) > 0 {
		capV, scope := math.Inf(1), ""
		if b, ok := budget[ledger.ScopeStream]; ok {
			capV, scope = b, ledger.ScopeStream
		}
		// every release charges every cohort scope, so each cohort budget
		// caps them all
		var cohortScopes []string
		for k := range budget {
			if strings.HasPrefix(k, "cohort:") {
				cohortScopes = append(cohortScopes, k)
			}
		}
		sort.Strings(cohortScopes)
		for _, k := range cohortScopes {
			if budget[k] < capV {
				capV, scope = budget[k], k
			}
		}
		if allAgg && aggCap < capV {
			capV, scope = aggCap, "the sum of the aggregate scopes"
		}
		if !math.IsInf(capV, 1) {
			st.CentralCap, st.CentralCapScope = &capV, scope
		}
		st.Notes = append(st.Notes, "central releases: a patient counts once per window and aggregate (once per horizon when cumulative); every release is charged to the ledger before it is published, so their total loss for one patient is at most the budget that binds first")
	} else {
		zero := 0.0
		st.CentralCap = &zero
	}
	if st.CentralCap != nil {
		one, two := st.SanitizedPerVersion+*st.CentralCap, st.SanitizedTwoVersions+*st.CentralCap
		st.TotalOneVersion, st.TotalTwoVersions = &one, &two
	}
	return st, nil
}

// Markdown renders the statement as the tables docs/privacy.md shows.
func (st PatientStatement) Markdown() string {
	var b strings.Builder
	f := func(v float64) string { return fmt.Sprintf("%.2f", v) }
	fmt.Fprintf(&b, "Accounting relation: %s.\n\n", st.Relation)
	if len(st.Sanitized) > 0 {
		b.WriteString("| sanitized field | mechanism | guarantee | loss, one version | loss, two versions |\n|---|---|---|---|---|\n")
		for _, s := range st.Sanitized {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", s.Field, s.Mechanism, s.Kind, f(s.PerVersion), f(s.TwoVersions))
		}
		fmt.Fprintf(&b, "| **sanitized topic** | | | **%s** | **%s** |\n\n", f(st.SanitizedPerVersion), f(st.SanitizedTwoVersions))
	}
	if len(st.Central) > 0 {
		b.WriteString("| aggregate | kind | epsilon | charged per release | release | own budget |\n|---|---|---|---|---|---|\n")
		for _, a := range st.Central {
			own := "—"
			if a.Budget > 0 {
				own = f(a.Budget)
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", a.Name, a.Kind, f(a.Epsilon), f(a.Charged), a.Per, own)
		}
		b.WriteString("\n")
	}
	switch {
	case len(st.Central) == 0:
		b.WriteString("Central releases: none.\n")
	case st.CentralCap == nil:
		b.WriteString("Central releases: **no budget binds: the loss grows with every window**.\n")
	default:
		fmt.Fprintf(&b, "Central releases: at most **%s** in all (budget `%s`).\n", f(*st.CentralCap), st.CentralCapScope)
	}
	if st.TotalOneVersion != nil {
		fmt.Fprintf(&b, "One patient, everything this service publishes: **%s** with one version of the record, **%s** with two.\n",
			f(*st.TotalOneVersion), f(*st.TotalTwoVersions))
	} else {
		b.WriteString("One patient, everything this service publishes: **unbounded** (no central budget).\n")
	}
	for _, n := range st.Notes {
		fmt.Fprintf(&b, "\n- %s", n)
	}
	b.WriteString("\n")
	return b.String()
}
