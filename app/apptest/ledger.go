package apptest

import (
	"github.com/dpsurv/dpsurv/ledger"
	"github.com/dpsurv/dpsurv/ledger/kafkaledger"
)

// OpenLedger opens the ledger the fixture's config names (ledger.file, or
// else ledger.topic on the fixture's broker) with its budgets, to check
// what the services charged; it is closed at cleanup.
func (f *Fixture) OpenLedger() *ledger.Ledger {
	f.T.Helper()
	var (
		lb  ledger.Backend
		err error
	)
	if f.Config.Ledger.File != "" {
		lb, err = ledger.OpenFile(f.Config.Ledger.File, nil)
	} else {
		lb, err = kafkaledger.Open(f.Ctx, f.Config.Kafka, f.Config.Ledger.Topic, nil)
	}
	if err != nil {
		f.T.Fatal(err)
	}
	led, err := ledger.Open(f.Ctx, lb, ledger.Options{Budget: f.Config.Ledger.Budget})
	if err != nil {
		f.T.Fatal(err)
	}
	f.T.Cleanup(func() { _ = led.Close() })
	return led
}
