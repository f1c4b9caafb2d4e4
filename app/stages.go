package app

import (
	"fmt"

	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/sanitizers"
	"github.com/dpsurv/dpsurv/schemas"
)

// Stages builds cfg's two record stages outside a running service: the
// input validator (cfg.Spec, default limits) and the sanitizer chain keyed
// by key (cfg.SanitizerConfig). The caller releases the chain. The bench,
// the ops reference and tests run messages through them as the service
// would.
func (c Config) Stages(key []byte, mem memory.Allocator) (*schemas.Validator, *sanitizers.Chain, error) {
	v, err := schemas.NewValidator(c.Spec(), mem)
	if err != nil {
		return nil, nil, fmt.Errorf("validator: %w", err)
	}
	chain, err := sanitizers.New(c.SanitizerConfig(key), mem)
	if err != nil {
		return nil, nil, fmt.Errorf("sanitizer chain: %w", err)
	}
	return v, chain, nil
}
