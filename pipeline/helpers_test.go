package pipeline_test

import "github.com/dpsurv/dpsurv/sanitizers"

func sanitizersTime() sanitizers.TimeConfig {
	return sanitizers.TimeConfig{Mechanism: "te", Epsilon: 0.5, Window: 10}
}
