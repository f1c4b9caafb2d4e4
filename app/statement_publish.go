package app

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/retry"
	"github.com/dpsurv/dpsurv/schemas"
)

// StatementSource says what the statement document is computed from.
const StatementSource = "the configuration only: no record data is read and nothing is charged to the privacy ledger"

// StatementDocument is the per-patient privacy statement as the service
// publishes it on the fit topic (schemas.PatientStatementSchemaName, key
// schemas.PatientStatementKey): Statement is app.Statement of the running
// configuration, the JSON `dpsurv statement --json` prints, and Markdown the
// text `dpsurv statement` prints.
type StatementDocument struct {
	Schema    string           `json:"schema"`
	Key       string           `json:"key"`
	Kind      string           `json:"kind"`
	Source    string           `json:"source"`
	Statement PatientStatement `json:"statement"`
	Markdown  string           `json:"markdown"`
}

// StatementMessage is the fit-topic message of cfg's per-patient
// statement: a deterministic function of the configuration (the same
// config gives the same bytes), keyed so that a compacted topic keeps the
// newest.
func StatementMessage(cfg Config) (message.Message, error) {
	m, _, err := statementMessage(cfg)
	return m, err
}

func statementMessage(cfg Config) (message.Message, PatientStatement, error) {
	st, err := Statement(cfg)
	if err != nil {
		return message.Message{}, st, fmt.Errorf("privacy statement: %w", err)
	}
	doc := StatementDocument{Schema: schemas.PatientStatementSchemaName, Key: schemas.PatientStatementKey,
		Kind: schemas.PatientStatementKind, Source: StatementSource, Statement: st, Markdown: st.Markdown()}
	b, err := json.Marshal(doc)
	if err != nil {
		return message.Message{}, st, fmt.Errorf("privacy statement: %w", err)
	}
	return message.Message{Key: []byte(schemas.PatientStatementKey), Value: b}, st, nil
}

// publishStatementAtStart publishes the statement when the aggregators'
// holder starts, before the engine can publish a release, so the statement
// in force precedes the releases it covers. A fit topic that refuses the
// write does not stop the aggregators (their releases wait in the ledger
// for the topic, as always): republishStatements retries in the background.
func (s *Service) publishStatementAtStart(ctx context.Context, cfg Config, fits message.Sink) {
	if err := s.publishStatement(ctx, cfg, fits); err != nil {
		s.Log.Warn("privacy statement not published; retrying in the background", zap.Error(err))
		s.statementChanged()
	}
}

// publishStatement writes the per-patient statement of cfg, with the
// ledger budgets in force, to the fit topic: at every start of the
// aggregators' holder and again after a reload raised a budget
// (republishStatements).
func (s *Service) publishStatement(ctx context.Context, cfg Config, fits message.Sink) error {
	cfg.Ledger.Budget = s.budgetFor(cfg) // raised by reloads: the budgets in force
	m, st, err := statementMessage(cfg)
	if err != nil {
		return err
	}
	if err := fits.Write(ctx, []message.Message{m}); err != nil {
		return fmt.Errorf("output.fit_topic: publish the privacy statement: %w", err)
	}
	fields := []zap.Field{zap.String("fit_topic", cfg.Output.FitTopic), zap.String("key", schemas.PatientStatementKey)}
	if st.TotalTwoVersions != nil {
		fields = append(fields, zap.Float64("one_patient_loss_two_versions", *st.TotalTwoVersions))
	} else {
		fields = append(fields, zap.String("one_patient_loss", "unbounded (no central budget)"))
	}
	s.Log.Info("per-patient privacy statement published", fields...)
	return nil
}

// statementChanged tells the running aggregators' holder, if any, that the
// statement changed (a reload raised a budget): republishStatements
// publishes it again. It never blocks.
func (s *Service) statementChanged() {
	select {
	case s.statementDirty() <- struct{}{}:
	default: // one is pending already
	}
}

func (s *Service) statementDirty() chan struct{} {
	s.statementOnce.Do(func() { s.statementCh = make(chan struct{}, 1) })
	return s.statementCh
}

// republishStatements publishes the statement again each time
// statementChanged is called, until ctx ends; a failed write is retried
// with backoff. The caller waits for it to return before closing fits.
func (s *Service) republishStatements(ctx context.Context, cfg Config, fits message.Sink) {
	ch := s.statementDirty()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
		bo := retry.New(500*time.Millisecond, 30*time.Second)
		for {
			err := s.publishStatement(ctx, cfg, fits)
			if err == nil || ctx.Err() != nil {
				break
			}
			s.Log.Warn("privacy statement not republished; retrying", zap.Error(err), zap.Duration("backoff", bo.Current()))
			if !bo.Wait(ctx) {
				return
			}
		}
	}
}

// serialSink serialises the writes of the fit topic's two writers (the
// engine's releases and republishStatements), since a message.Sink need
// not be safe for concurrent use.
type serialSink struct {
	message.Sink
	mu sync.Mutex
}

func (s *serialSink) Write(ctx context.Context, msgs []message.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Sink.Write(ctx, msgs)
}
