// Package aggregators assigns validated records to windows, keeps compact
// sufficient statistics per (time bin, cohort) — or, for the discrete-time
// regression, a capped compact record state — and produces the DP releases
// (Kaplan–Meier, Weibull, discrete-time regression) of each window,
// charging the privacy ledger before anything is written.
//
// Contract:
//   - Windows are tumbling, epoch-aligned, of a whole number of seconds, on
//     processing time (the injected Clock when a record is read) or event
//     time (the record's observed_at). Window [s, e) closes when the clock
//     reaches e + lateness. With event time a record whose window has
//     closed is counted in dpsurv_aggregator_late_records_total; one without
//     observed_at, or observed in a window that has not started by the
//     clock, in dpsurv_aggregator_records_skipped_total{reason}. Nothing is
//     dropped silently.
//   - Which windows exist depends only on the clock and the uptime: every
//     window the clock reaches while the engine runs is registered and
//     released, empty or not, so the existence and timing of a release
//     reveal nothing about the records.
//   - State is one km.Histogram (events and censorings per bin and
//     cohort) per open window — O(open windows x bins x cohorts), never
//     records; open windows are at most lateness/size + 2 (<= 64). A
//     discrete aggregate instead keeps, per open window, at most
//     params.max_records records (a public cap; later ones are counted in
//     dpsurv_aggregator_records_skipped_total{reason="window_cap"}), each
//     as its interval and event bit (4 bytes) and its covariates centred
//     and scaled by the public params and projected onto the unit ball
//     (float32): 4 + 4d bytes.
//   - A window's release covers all cohorts: km by the hierarchical
//     (default) or the flat noisy-histogram method (one noise draw for the
//     window's whole histogram; the log-rank test rides along as
//     post-processing), weibull by one fit per cohort. It is one ledger
//     entry keyed <aggregate>/<window_start_unix> charging epsilon to
//     "stream", "aggregate:<name>" and every "cohort:<label>" (parallel
//     composition across disjoint cohorts and bins; sequential across
//     windows). km releases are epsilon-DP under add/remove-one (the
//     window's record count is protected); weibull lsp and laplace too,
//     saa under replace-one within a cohort (the cohort's count public). A discrete window is one fit of all cohorts'
//     records (regression.FitDiscrete: output perturbation, pure-dp
//     conditional on certification;
//     objective perturbation and pSGLD, approximate) under replace-one
//     among the included records, whose number n is public and released
//     exactly, published as one message keyed <aggregate>/<start>/all;
//     fewer than two records, or a failed fit, give the fixed fallback
//     release (zero plus output noise; never a retry with fresh noise).
//     Every message lists what it treats as public ("public"). An over-budget window is withheld, logged and counted in
//     dpsurv_releases_withheld_total{aggregate,reason}; the engine goes on.
//   - Cumulative km aggregates step a km.ContinualKM (binary-tree
//     counter) at each window close; its epsilon is charged once, under
//     <aggregate>/cumulative, for Horizon windows; later windows are
//     withheld with reason horizon_reached. Each patient is counted in one
//     window of the horizon only (a horizon-wide, checkpointed patient
//     table; later windows skip them, reason cumulative_seen), so the
//     counter's sensitivity 1 holds per patient. A window value
//     superseded under a lease fault is charged the horizon's epsilon,
//     and another holder's first value of a window (a different draw)
//     withholds the rest of the horizon (reason cumulative_foreign).
//   - Fit messages: one per (aggregate, window, cohort), key
//     <aggregate>/<window_start_unix>/<cohort>, JSON FitMessage (R field
//     names, window bounds, epsilon and epsilon_charged, budget_remaining,
//     guarantee, neighbouring, composition); km curves also as an Arrow
//     table (CurveTable). They are cut from the bytes the ledger stored, so
//     a replay publishes identical bytes.
//   - Crash safety (Engine): a window's counts are checkpointed (with the
//     input offsets they cover) before its noise is drawn; the ledger is
//     consulted before any draw. After a restart, messages below the
//     checkpoint's offsets are skipped (Skip), closing windows are released
//     — re-emitted from the ledger if they were — and released windows not
//     yet published are published. Delivery to the fit topic is at least
//     once with byte-identical duplicates; the release itself happens once.
//   - Checkpoints hold exact counts and discrete windows' records: as
//     sensitive as the input topic.
//   - Config is the one aggregate configuration type (the service's YAML
//     aggregators entries decode into it; app.AggregatorConfig is an
//     alias). Its Params are the kind's own typed struct (KMParams,
//     WeibullParams, DiscreteParams), decoded from YAML by the kind
//     (DecodeParams: each kind names the keys it accepts; another kind's
//     params in a Config are an error). Config errors are
//     *FieldError{Path, Err}, Err matching ErrUnknownField, ErrRequired,
//     ErrWrongType or ErrInvalid; Prefix moves them under a parent path.
//
// Layout: one type per kind behind the internal kind interface (kind.go):
// params (params reads the kind's YAML keys, each with its type, through
// DecodeParams' paramDecoder; defaults, check), window state (open, add,
// restore; a window snapshots itself) and release. Optional capabilities
// are looked up once when the aggregate is built: exactCounter (n public),
// planner (how the engine releases: async fits, a one-time charge, one
// window at a time), counter (state that outlives the windows) and
// horizonKeyer (a charge keyed by the ledger). Each kind's file holds its
// params, its release and its release's fields: km.go (kmKind, KMParams,
// KMFields, LogRank), cumulative.go (cumulativeKind: km with
// window.cumulative, a counter), weibull.go (weibullKind, WeibullParams,
// WeibullFields), discrete.go (discreteKind, DiscreteParams,
// DiscreteFields; its window state in discrete_window.go); hist.go holds
// the histogram window state the km and weibull kinds embed (histKind),
// rows.go what every kind's add reads from a record, release.go the
// message envelope (FitMessage) and the window document.
// The engine (engine.go) releases every kind through its plan and never
// asks which kind it holds. A new kind: a type implementing kind
// (embedding histKind if its state is the window histogram), its typed
// params (a struct implementing Params, decoded by its params method, read
// back with paramsOf, written into the fingerprint's flatParams), a case in
// kindOf, and its release text; the engine, the ledger protocol and the
// checkpoint format need no change.
package aggregators
