package aggregators

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the aggregators' Prometheus metrics. Labels carry aggregate
// names and reasons, never record values.
type Metrics struct {
	Records          *prometheus.CounterVec // by aggregate: counted into a window
	Versions         *prometheus.CounterVec // by aggregate: records of a patient already in the window (latest version wins)
	Late             *prometheus.CounterVec // by aggregate: observed in a window already closed
	Skipped          *prometheus.CounterVec // by aggregate, reason
	Clamped          *prometheus.CounterVec // by aggregate: discrete covariate rows projected onto the unit ball
	Releases         *prometheus.CounterVec // by aggregate: windows released (noise drawn, charged)
	Replayed         *prometheus.CounterVec // by aggregate: windows re-emitted from the ledger
	Withheld         *prometheus.CounterVec // by aggregate, reason
	Published        *prometheus.CounterVec // by aggregate: fit messages written
	OpenWindows      *prometheus.GaugeVec   // by aggregate
	PendingWindows   *prometheus.GaugeVec   // by aggregate: closed, not yet released or published
	FitsRunning      prometheus.Gauge
	FitSeconds       *prometheus.HistogramVec // by aggregate: time to draw and fit one window's release
	StateBytes       prometheus.Gauge
	Checkpoints      prometheus.Counter
	CheckpointErrors prometheus.Counter
	Redelivered      prometheus.Counter
	// HorizonsRestarted counts, by aggregate, cumulative horizons started
	// anew (and charged anew) because an earlier horizon's state was lost.
	HorizonsRestarted *prometheus.CounterVec

	// CensoredAtHorizon counts, by aggregate, records followed beyond
	// time_max and counted as (time_max, censored). An operator's count of
	// private records, never released.
	CensoredAtHorizon *prometheus.CounterVec

	// ReleaseDelay is, by aggregate, the time from a window's close (its
	// end + lateness, by the engine's clock) to its release's publication
	// on the fit topic; TickSeconds the time one Tick holds the intake
	// (closing, checkpoint, ledger, publishing: no fit runs in it).
	ReleaseDelay *prometheus.HistogramVec
	TickSeconds  prometheus.Histogram
}

// Withholding reasons.
const (
	ReasonBudgetExceeded = "budget_exceeded"
	ReasonHorizonReached = "horizon_reached"
	ReasonError          = "error"
	// ReasonPendingLimit: the window closed while its aggregate already
	// had EngineConfig.MaxPendingWindows windows waiting (WithheldPendingLimit).
	ReasonPendingLimit = "pending_limit"
	// ReasonCumulativeForeign: a cumulative window's ledger key held
	// another holder's value (drawn from a different tree state), so this
	// aggregate's later releases of the horizon would expose its own node
	// noise beside the other's; they are withheld.
	ReasonCumulativeForeign = "cumulative_foreign"
	// ReasonMaxPatients: a patient bound (MaxPatientsPerWindow, or a
	// cumulative aggregate's MaxPatientsPerHorizon) bound in the window, so
	// one patient could displace another: the window is not released.
	ReasonMaxPatients = "max_patients"
)

// NewMetrics creates the metrics and registers them on reg (if not nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	cv := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	m := &Metrics{
		Records:   cv("dpsurv_aggregator_records_total", "Records counted into a window, by aggregate.", "aggregate"),
		Versions:  cv("dpsurv_aggregator_record_versions_total", "Records of a patient already counted in their window: the latest version replaced the counted one (one patient, one record per window), by aggregate.", "aggregate"),
		Late:      cv("dpsurv_aggregator_late_records_total", "Records whose window had already closed (counted here, not in any release), by aggregate.", "aggregate"),
		Skipped:   cv("dpsurv_aggregator_records_skipped_total", "Records not counted, by aggregate and reason (no_observed_at, future_observed_at, max_patients, cumulative_seen; discrete: window_cap, invalid_covariate).", "aggregate", "reason"),
		Clamped:   cv("dpsurv_aggregator_values_clamped_total", "Discrete: covariate rows projected onto the unit ball, by aggregate (times beyond time_max: dpsurv_aggregator_censored_at_horizon_total).", "aggregate"),
		Releases:  cv("dpsurv_releases_total", "Window releases drawn and charged to the ledger, by aggregate.", "aggregate"),
		Replayed:  cv("dpsurv_releases_replayed_total", "Window releases re-emitted from the ledger without new noise, by aggregate.", "aggregate"),
		Withheld:  cv("dpsurv_releases_withheld_total", "Window releases withheld, by aggregate and reason (budget_exceeded, horizon_reached, cumulative_foreign, max_patients, pending_limit, error).", "aggregate", "reason"),
		Published: cv("dpsurv_fit_messages_total", "Fit messages written to the fit topic, by aggregate.", "aggregate"),
		OpenWindows: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dpsurv_aggregator_open_windows",
			Help: "Windows open (accepting records), by aggregate."}, []string{"aggregate"}),
		PendingWindows: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dpsurv_aggregator_pending_windows",
			Help: "Windows closed but not yet released and published (waiting for a fit, the ledger or the fit topic), by aggregate; a weibull or discrete aggregate's are bounded by ledger.max_pending_windows."}, []string{"aggregate"}),
		FitsRunning: prometheus.NewGauge(prometheus.GaugeOpts{Name: "dpsurv_aggregator_fits_running",
			Help: "Asynchronous window fits (km, weibull, discrete) running now."}),
		FitSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "dpsurv_aggregator_fit_seconds",
			Help:    "Time to draw and fit one window's release (noise, estimation, intervals), by aggregate.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 17)}, []string{"aggregate"}),
		ReleaseDelay: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "dpsurv_aggregator_release_delay_seconds",
			Help:    "Time from a window's close (its end + lateness) to the publication of its release on the fit topic, by aggregate: its fit, a fit slot, the ledger and the fit topic.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 16)}, []string{"aggregate"}),
		TickSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "dpsurv_aggregator_tick_seconds",
			Help:    "Time one aggregator Tick holds the intake (closing windows, checkpoint, ledger, publishing; window fits run on their own goroutines).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
		StateBytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "dpsurv_aggregator_state_bytes",
			Help: "Bytes of counts held by the aggregators (bounded by windows x bins x cohorts, not records)."}),
		Checkpoints: prometheus.NewCounter(prometheus.CounterOpts{Name: "dpsurv_aggregator_checkpoints_total",
			Help: "Aggregator checkpoints saved."}),
		CheckpointErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "dpsurv_aggregator_checkpoint_errors_total",
			Help: "Aggregator checkpoints that failed (retried)."}),
		Redelivered: prometheus.NewCounter(prometheus.CounterOpts{Name: "dpsurv_aggregator_redelivered_skipped_total",
			Help: "Input messages skipped because the checkpoint already counted them."}),
		HorizonsRestarted: cv("dpsurv_aggregator_horizons_restarted_total", "Cumulative horizons started anew and charged anew because the ledger held an earlier horizon's charge whose state was lost (checkpoint missing, aggregate removed and re-added), by aggregate.", "aggregate"),
	}
	m.CensoredAtHorizon = cv("dpsurv_aggregator_censored_at_horizon_total",
		"Records followed beyond the public time_max, counted as censored at time_max (administrative censoring, never an event at the horizon), by aggregate.", "aggregate")
	if reg != nil {
		reg.MustRegister(m.CensoredAtHorizon)
		reg.MustRegister(m.Records, m.Versions, m.Late, m.Skipped, m.Clamped, m.Releases, m.Replayed, m.Withheld, m.Published,
			m.OpenWindows, m.PendingWindows, m.FitsRunning, m.FitSeconds, m.ReleaseDelay, m.TickSeconds, m.StateBytes, m.Checkpoints, m.CheckpointErrors, m.Redelivered,
			m.HorizonsRestarted)
	}
	return m
}
