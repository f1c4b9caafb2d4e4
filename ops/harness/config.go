package harness

import (
	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/kafkaconn"
)

// StreamConfig is the pipeline the demo, the benchmark and the load test
// run on the embedded broker: topics named <prefix>.in, <prefix>.sanitized
// and <prefix>.deadletter (the demo overrides them with the ehr.tte names),
// TE-Sanitizer (epsilon 0.5, W 10) on the time and RRR (rrrEpsilon) on the
// cohort, an ephemeral key (the caller makes one and says so).
func StreamConfig(addrs []string, clientID, prefix string, cohorts []string, timeMax, rrrEpsilon float64) app.Config {
	cfg := app.DefaultConfig()
	cfg.Kafka = kafkaconn.Config{Brokers: addrs, ClientID: clientID}
	cfg.Input.Topic = prefix + ".in"
	cfg.Input.GroupID = clientID
	cfg.Schema.TimeMax = timeMax
	cfg.Schema.Cohorts = cohorts
	cfg.Sanitizers.KeyFile = "(ephemeral)"
	cfg.Sanitizers.Time.Mechanism = "te"
	cfg.Sanitizers.Time.Epsilon = 0.5
	cfg.Sanitizers.Time.Window = 10
	cfg.Sanitizers.Cohort.Mechanism = "rrr"
	cfg.Sanitizers.Cohort.Epsilon = rrrEpsilon
	cfg.Output.SanitizedTopic = prefix + ".sanitized"
	cfg.Output.DeadLetterTopic = prefix + ".deadletter"
	cfg.HTTP.Listen = ""
	return cfg
}
