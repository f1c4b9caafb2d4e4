package baselines

import (
	"fmt"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/schemas"
)

// FileSummary is what SanitizeFile did.
type FileSummary struct {
	RecordsIn         int            `json:"records_in"`
	DeadLettered      int            `json:"dead_lettered"`
	DeadLetterReasons map[string]int `json:"dead_letter_reasons"`
	RecordsOut        int64          `json:"records_out"`
	Release           *Release       `json:"release"`
}

// SanitizeFile reads input (CSV, Arrow IPC or JSON lines) through the schema
// validator, applies the baseline and writes the regenerated records to
// output (format by extension), keeping the input's column names. Rows the
// validator rejects are counted by reason (they are not part of the
// release). spec.Cohorts must equal cfg.Cohorts.
func SanitizeFile(input, output string, spec schemas.Spec, cfg Config, src dp.Source) (FileSummary, error) {
	sum := FileSummary{DeadLetterReasons: map[string]int{}}
	if len(spec.Cohorts) != len(cfg.Cohorts) {
		return sum, fmt.Errorf("baselines sanitize: spec has %d cohorts, config %d", len(spec.Cohorts), len(cfg.Cohorts))
	}
	for i := range spec.Cohorts {
		if spec.Cohorts[i] != cfg.Cohorts[i] {
			return sum, fmt.Errorf("baselines sanitize: cohort %d differs between spec and config", i)
		}
	}
	s, err := New(cfg)
	if err != nil {
		return sum, err
	}
	mem := memory.DefaultAllocator
	v, err := schemas.NewValidator(spec, mem)
	if err != nil {
		return sum, fmt.Errorf("baselines sanitize: %w", err)
	}
	err = schemas.ReadFile(input, v, 8192, func(good arrow.Record, dead []schemas.DeadLetter) error {
		sum.RecordsIn += int(good.NumRows())
		for _, d := range dead {
			if d.RowIndex >= 0 {
				sum.RecordsIn++
			}
			sum.DeadLettered++
			sum.DeadLetterReasons[d.Reason]++
		}
		return s.Add(good)
	})
	if err != nil {
		return sum, fmt.Errorf("baselines sanitize %s: %w", input, err)
	}
	rel, err := s.Release(src)
	if err != nil {
		return sum, err
	}
	sum.Release = rel
	rec, err := rel.Records(mem)
	if err != nil {
		return sum, err
	}
	defer rec.Release()
	if err := schemas.WriteFile(output, rec, spec.RenameToInput(), mem); err != nil {
		return sum, fmt.Errorf("baselines sanitize: %w", err)
	}
	sum.RecordsOut = rec.NumRows()
	return sum, nil
}
