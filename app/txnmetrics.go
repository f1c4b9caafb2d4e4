package app

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpsurv/dpsurv/message"
)

// skipper is what the input source reports of the messages it skipped
// under read_committed, and of those it cannot read yet (sources.Kafka).
type skipper interface {
	Skipped() (aborted, control int64)
	Unstable() int64
}

// registerSkipped exports the input source's skipped messages as
// dpsurv_input_transaction_messages_skipped_total{kind}: "aborted" (a
// message of an aborted transaction: never sanitized, published or
// counted) and "marker" (a transaction's commit or abort marker, which is
// not a message), and dpsurv_input_unstable_messages: input messages past
// the last stable offset (a transaction still open, and what follows it),
// which wait for the transaction to end and are not lag. A source without
// the counts (files) exports nothing; a second Run replaces the first's
// series.
func registerSkipped(reg prometheus.Registerer, src message.Source) {
	var sk skipper
	for src != nil && sk == nil {
		if s, ok := src.(skipper); ok {
			sk = s
			break
		}
		u, ok := src.(interface{ Unwrap() message.Source })
		if !ok {
			return
		}
		src = u.Unwrap()
	}
	if sk == nil {
		return
	}
	register := func(c prometheus.Collector) {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				reg.Unregister(are.ExistingCollector)
				_ = reg.Register(c)
			}
		}
	}
	register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dpsurv_input_unstable_messages",
		Help: "Input messages past the last stable offset of the partitions this replica fetches: in transactions still open and after them; read once the transactions end (not counted as lag)."},
		func() float64 { return float64(sk.Unstable()) }))
	for kind, f := range map[string]func() float64{
		"aborted": func() float64 { a, _ := sk.Skipped(); return float64(a) },
		"marker":  func() float64 { _, c := sk.Skipped(); return float64(c) },
	} {
		c := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "dpsurv_input_transaction_messages_skipped_total",
			Help:        "Input messages skipped under input.isolation_level read_committed: of aborted transactions (kind=aborted), and transaction markers (kind=marker).",
			ConstLabels: prometheus.Labels{"kind": kind}}, f)
		register(c)
	}
}
