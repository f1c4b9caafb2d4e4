package sanitize_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/codecs/arrowipc"
	"github.com/dpsurv/dpsurv/message"
	"github.com/dpsurv/dpsurv/pipeline/pipelinetest"
	"github.com/dpsurv/dpsurv/processors/sanitize"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/sanitizers"
	"github.com/dpsurv/dpsurv/schemas"
)

// fuzzMaxMessageBytes is small so that the fuzzer exercises the splitting
// of sanitized batches and the truncation of dead letters.
const fuzzMaxMessageBytes = 16 << 10

// FuzzSanitizeProcessor fuzzes the whole per-message path of `dpsurv run`
// (decode -> validate -> sanitize -> encode, with splitting and dead-letter
// bounding), not only the decoders. For every input: no error and no
// panic; no "unprocessable" dead letter (a stage after validation failing
// means validation let through what that stage cannot handle); every
// output decodes and fits the message limit; rows in = rows out + rows
// dead-lettered. The seed corpus holds the crash class the adversarial run
// found (a negative null count on `event`). Run it for a bounded time:
//
//	go test -run '^$' -fuzz FuzzSanitizeProcessor -fuzztime 10s ./processors/sanitize/
func FuzzSanitizeProcessor(f *testing.F) {
	spec := schemas.Spec{Cohorts: pipelinetest.Cohorts, TimeUnit: "days", Columns: schemas.DefaultColumns()}
	f.Add(pipelinetest.NegativeNullCountMessage(f, spec, "nc-", 13))
	f.Add(pipelinetest.RowsMessage(f, pipelinetest.SeqIDs("ok-", 50), false))
	f.Add(pipelinetest.RowsMessage(f, pipelinetest.SeqIDs("site-", 50), true))
	f.Add(pipelinetest.RowsMessage(f, []string{strings.Repeat("x", 70_000), "y"}, false))
	f.Add(pipelinetest.RowsMessage(f, append(pipelinetest.SeqIDs("dup-", 3), make([]string, 300)...), false))
	f.Add(pipelinetest.RowsMessage(f, pipelinetest.SeqIDs("split-", 3000), false))
	f.Add([]byte("not arrow at all"))
	// Two services' wiring (Config.Spec, Config.SanitizerConfig): event
	// public, and event and the optional site public.
	var procs []*sanitize.Processor
	for _, public := range [][]string{{"event"}, {"event", "site"}} {
		procs = append(procs, fuzzProcessor(f, public))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, p := range procs {
			res, err := process(p, message.Message{Topic: "in", Partition: 0, Offset: 7, Key: []byte("k"), Value: data})
			if err != nil {
				t.Fatalf("process: %v", err)
			}
			if err := checkResult(res, fuzzMaxMessageBytes); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func fuzzProcessor(f *testing.F, public []string) *sanitize.Processor {
	cfg := app.DefaultConfig()
	cfg.Schema = app.SchemaConfig{TimeUnit: "days", TimeMax: 4000, Cohorts: pipelinetest.Cohorts, Public: public}
	cfg.Sanitizers.Time = pipelinetest.TimeConfig()
	cfg.Sanitizers.Cohort = sanitizers.CohortConfig{Mechanism: "rrr", Epsilon: 1}
	mem := memory.NewGoAllocator()
	v, err := schemas.NewValidator(cfg.Spec(), mem)
	if err != nil {
		f.Fatal(err)
	}
	v.SetMaxDeadRows(sanitize.DefaultMaxDeadRows)
	v.SetMaxDecodeBytes(16 << 20)
	chain, err := sanitizers.New(cfg.SanitizerConfig(bytes.Repeat([]byte{3}, 32)), mem)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(chain.Release)
	return &sanitize.Processor{Validator: v, Chain: chain, Mem: mem, Metrics: sanitize.NewMetrics(prometheus.NewRegistry()),
		MaxMessageBytes: fuzzMaxMessageBytes}
}

// checkResult checks the invariants of one processed message.
func checkResult(res result, maxBytes int) error {
	rows := 0
	for i, m := range res.Out {
		if size := len(m.Key) + len(m.Value); size > maxBytes {
			return fmt.Errorf("output %d: %d bytes exceed %d", i, size, maxBytes)
		}
		recs, err := arrowipc.DecodeRecords(m.Value, memory.NewGoAllocator())
		if err != nil {
			return fmt.Errorf("output %d does not decode: %w", i, err)
		}
		n := 0
		for _, r := range recs {
			n += int(r.NumRows())
			r.Release()
		}
		if i < len(res.OutRows) && res.OutRows[i] != n {
			return fmt.Errorf("output %d: %d rows, accounted %d", i, n, res.OutRows[i])
		}
		rows += n
	}
	if rows != res.Records {
		return fmt.Errorf("%d rows in outputs, Records %d", rows, res.Records)
	}
	if len(res.DeadInfo) != len(res.Dead) {
		return fmt.Errorf("%d dead letters, %d accounted", len(res.Dead), len(res.DeadInfo))
	}
	dead := 0
	for i, d := range res.DeadInfo {
		if d.Reason == sanitize.ReasonUnprocessable {
			return fmt.Errorf("unprocessable dead letter (a stage failed after validation): %.300s", res.Dead[i].Value)
		}
		if size := len(res.Dead[i].Key) + len(res.Dead[i].Value); size > maxBytes {
			return fmt.Errorf("dead letter %d: %d bytes exceed %d", i, size, maxBytes)
		}
		dead += d.Rows
	}
	if res.RecordsIn != res.Records+dead {
		return fmt.Errorf("rows in %d != out %d + dead-lettered %d", res.RecordsIn, res.Records, dead)
	}
	return nil
}
