// Command consumer is an example of an analyst-side reader of dpsurv's
// output topics, written only against the wire formats (kafka-go and Arrow,
// no dpsurv packages), as a consumer in another code base would be:
//
//   - the sanitized topic (tte.sanitized.v1): one Arrow IPC stream per
//     message (schema + record batches); each field's mechanism, epsilon and
//     guarantee are in the field metadata (dpsurv.mechanism,
//     dpsurv.guarantee, dpsurv.epsilon, dpsurv.window,
//     dpsurv.worst_case_loss), the time unit in the schema metadata;
//   - the fit topic (dpsurv.fit.v1): one JSON document per release, key
//     <aggregate>/<window_start_unix>/<cohort>, field names as R's survfit;
//     null stands for R's NA; beside the releases, the service's per-patient
//     privacy statement (dpsurv.patient_statement.v1, key
//     patient_statement): what one patient can lose across every output,
//     computed from the configuration. Dispatch on "schema";
//   - the fit Arrow topic (dpsurv.fit.km.v1, default <fit topic>.arrow): the
//     curve of each km release as an Arrow IPC stream, the release's
//     metadata in the schema metadata.
//
// It prints the sanitized rows as CSV and one line per release and
// statement, then stops
// after -idle without a new message:
//
//	go run ./examples/consumer -brokers 127.0.0.1:9092 \
//	    -sanitized-topic ehr.tte.sanitized -fit-topic ehr.tte.fits
//
// Delivery is at least once: a release can arrive twice (byte-identical),
// so keep the last message per key.
package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/segmentio/kafka-go"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "consumer:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("consumer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	brokers := fs.String("brokers", "127.0.0.1:9092", "bootstrap brokers, comma separated")
	sanTopic := fs.String("sanitized-topic", "ehr.tte.sanitized", "sanitized topic (empty: skip)")
	fitTopic := fs.String("fit-topic", "ehr.tte.fits", "fit topic (empty: skip)")
	curveTopic := fs.String("fit-arrow-topic", "", "fit Arrow topic (default: fit topic + \".arrow\"; \"-\": skip)")
	group := fs.String("group", "dpsurv-example-consumer", "consumer group (offsets are committed)")
	idle := fs.Duration("idle", 5*time.Second, "stop reading a topic after this long without a message")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *curveTopic == "" && *fitTopic != "" {
		*curveTopic = *fitTopic + ".arrow"
	}
	ctx := context.Background()
	bl := strings.Split(*brokers, ",")
	if *sanTopic != "" {
		w := csv.NewWriter(stdout)
		header := false
		n, err := ReadTopic(ctx, bl, *sanTopic, *group, *idle, func(m kafka.Message) error {
			b, err := DecodeSanitized(m.Value)
			if err != nil {
				return err
			}
			if !header {
				fmt.Fprintf(stdout, "# %s, time unit %s\n", b.Schema, b.TimeUnit)
				for _, f := range b.Fields {
					fmt.Fprintf(stdout, "# field %s: mechanism %q, guarantee %q, epsilon %q, window %q\n",
						f.Name, f.Meta["dpsurv.mechanism"], f.Meta["dpsurv.guarantee"], f.Meta["dpsurv.epsilon"], f.Meta["dpsurv.window"])
				}
				_ = w.Write(b.Columns)
				header = true
			}
			return w.WriteAll(b.Rows)
		})
		w.Flush()
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "consumer: %d sanitized messages from %s\n", n, *sanTopic)
	}
	if *fitTopic != "" {
		n, err := ReadTopic(ctx, bl, *fitTopic, *group, *idle, func(m kafka.Message) error {
			if SchemaOf(m.Value) == StatementSchema {
				st, err := DecodeStatement(m.Value)
				if err != nil {
					return err
				}
				fmt.Fprintln(stdout, st.Line())
				return nil
			}
			f, err := DecodeFit(m.Value)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "fit %s: %s %s epsilon %g (%s), n %s, median %s [%s, %s]\n", m.Key, f.Kind, f.Method, f.Epsilon,
				f.Guarantee, f.N, f.Median, f.MedianLower, f.MedianUpper)
			return nil
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "consumer: %d fit messages from %s\n", n, *fitTopic)
	}
	if *curveTopic != "" && *curveTopic != "-" {
		n, err := ReadTopic(ctx, bl, *curveTopic, *group, *idle, func(m kafka.Message) error {
			c, err := DecodeCurve(m.Value)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "curve %s: %d rows, columns %s\n", c.Meta["dpsurv.key"], len(c.Rows), strings.Join(c.Columns, ","))
			return nil
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "consumer: %d curve messages from %s\n", n, *curveTopic)
	}
	return nil
}

// ReadTopic reads topic in consumer group group, calling fn for every
// message and committing it afterwards, until no message arrived for idle.
// It returns the number of messages handled.
func ReadTopic(ctx context.Context, brokers []string, topic, group string, idle time.Duration, fn func(kafka.Message) error) (int, error) {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, GroupID: group, Topic: topic,
		StartOffset: kafka.FirstOffset, MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 200 * time.Millisecond})
	defer r.Close()
	n := 0
	for {
		mctx, cancel := context.WithTimeout(ctx, idle)
		m, err := r.FetchMessage(mctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("read %s: %w", topic, err)
		}
		if err := fn(m); err != nil {
			return n, fmt.Errorf("read %s offset %d: %w", topic, m.Offset, err)
		}
		if err := r.CommitMessages(ctx, m); err != nil {
			return n, fmt.Errorf("commit %s: %w", topic, err)
		}
		n++
	}
}

// Field is one column of a sanitized batch with its metadata.
type Field struct {
	Name string
	Type string
	Meta map[string]string
}

// Table is a decoded Arrow message: column names, rows as text (Arrow's
// ValueStr; "(null)" for nulls) and metadata.
type Table struct {
	Schema   string
	TimeUnit string
	Fields   []Field
	Columns  []string
	Rows     [][]string
	Meta     map[string]string
}

// DecodeSanitized decodes one sanitized-topic message.
func DecodeSanitized(value []byte) (Table, error) {
	return decodeTable(value, "decode sanitized", "tte.sanitized.v1")
}

// DecodeCurve decodes one fit-Arrow-topic message (a km curve table).
func DecodeCurve(value []byte) (Table, error) {
	return decodeTable(value, "decode curve", "dpsurv.fit.km.v1")
}

// decodeTable decodes an Arrow message whose schema metadata must name
// schema; op prefixes the error of another schema.
func decodeTable(value []byte, op, schema string) (Table, error) {
	t, err := decodeArrow(value)
	if err != nil {
		return t, err
	}
	if t.Schema != schema {
		return t, fmt.Errorf("%s: schema %q, want %s", op, t.Schema, schema)
	}
	return t, nil
}

func decodeArrow(value []byte) (t Table, err error) {
	defer func() {
		if p := recover(); p != nil { // a corrupt message must not crash the consumer
			err = fmt.Errorf("decode arrow: corrupt message: %v", p)
		}
	}()
	r, err := ipc.NewReader(bytes.NewReader(value), ipc.WithAllocator(memory.NewGoAllocator()))
	if err != nil {
		return t, fmt.Errorf("decode arrow: %w", err)
	}
	defer r.Release()
	sc := r.Schema()
	t.Meta = meta(sc.Metadata())
	t.Schema, t.TimeUnit = t.Meta["dpsurv.schema"], t.Meta["dpsurv.time_unit"]
	for _, f := range sc.Fields() {
		t.Fields = append(t.Fields, Field{Name: f.Name, Type: f.Type.String(), Meta: meta(f.Metadata)})
		t.Columns = append(t.Columns, f.Name)
	}
	for r.Next() {
		rec := r.Record()
		for i := 0; i < int(rec.NumRows()); i++ {
			row := make([]string, rec.NumCols())
			for j, col := range rec.Columns() {
				row[j] = col.ValueStr(i)
			}
			t.Rows = append(t.Rows, row)
		}
	}
	if err := r.Err(); err != nil {
		return t, fmt.Errorf("decode arrow: %w", err)
	}
	return t, nil
}

func meta(md arrow.Metadata) map[string]string {
	out := map[string]string{}
	for i, k := range md.Keys() {
		out[k] = md.Values()[i]
	}
	return out
}

// Num is a JSON number where null (R's NA) decodes as NaN.
type Num float64

// UnmarshalJSON implements json.Unmarshaler.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	*n = Num(v)
	return err
}

func (n Num) String() string {
	if math.IsNaN(float64(n)) {
		return "NA"
	}
	return strconv.FormatFloat(float64(n), 'g', 6, 64)
}

// Fit is the part of a dpsurv.fit.v1 message this example uses; the full
// document has more (see docs/analysts.md).
type Fit struct {
	Schema       string  `json:"schema"`
	Key          string  `json:"key"`
	Aggregate    string  `json:"aggregate"`
	Kind         string  `json:"kind"`
	WindowStart  string  `json:"window_start"`
	WindowEnd    string  `json:"window_end"`
	Cohort       string  `json:"cohort"`
	Method       string  `json:"method"`
	Epsilon      float64 `json:"epsilon"`
	Guarantee    string  `json:"guarantee"`
	Neighbouring string  `json:"neighbouring"`
	N            Num     `json:"n"`
	TimeUnit     string  `json:"time_unit"`
	// km
	Time        []Num `json:"time"`
	Surv        []Num `json:"surv"`
	Lower       []Num `json:"lower"`
	Upper       []Num `json:"upper"`
	Median      Num   `json:"median"`
	MedianLower Num   `json:"median_lower"`
	MedianUpper Num   `json:"median_upper"`
	// weibull
	Shape Num `json:"shape"`
	Scale Num `json:"scale"`
}

// DecodeFit decodes one fit-topic message.
func DecodeFit(value []byte) (Fit, error) {
	f := Fit{N: Num(math.NaN()), Median: Num(math.NaN()), MedianLower: Num(math.NaN()), MedianUpper: Num(math.NaN()),
		Shape: Num(math.NaN()), Scale: Num(math.NaN())}
	if err := json.Unmarshal(value, &f); err != nil {
		return f, fmt.Errorf("decode fit: %w", err)
	}
	if f.Schema != "dpsurv.fit.v1" {
		return f, fmt.Errorf("decode fit: schema %q, want dpsurv.fit.v1", f.Schema)
	}
	return f, nil
}

// StatementSchema names the per-patient privacy statement the service
// publishes on the fit topic (message key patient_statement).
const StatementSchema = "dpsurv.patient_statement.v1"

// SchemaOf is the "schema" of a fit-topic JSON document ("" if none).
func SchemaOf(value []byte) string {
	var d struct {
		Schema string `json:"schema"`
	}
	_ = json.Unmarshal(value, &d)
	return d.Schema
}

// Statement is the part of a dpsurv.patient_statement.v1 message this
// example uses: what one patient's record can lose across every output of
// the service over the budget's life (docs/analysts.md). A null total is
// unbounded (no central budget binds).
type Statement struct {
	Schema    string `json:"schema"`
	Key       string `json:"key"`
	Statement struct {
		Relation             string   `json:"relation"`
		SanitizedPerVersion  float64  `json:"sanitized_loss_per_version"`
		SanitizedTwoVersions float64  `json:"sanitized_loss_two_versions"`
		CentralCap           *float64 `json:"central_cap"`
		CentralCapScope      string   `json:"central_cap_scope"`
		TotalOneVersion      *float64 `json:"total_one_version"`
		TotalTwoVersions     *float64 `json:"total_two_versions"`
	} `json:"statement"`
	Markdown string `json:"markdown"`
}

// DecodeStatement decodes the fit topic's privacy statement.
func DecodeStatement(value []byte) (Statement, error) {
	var s Statement
	if err := json.Unmarshal(value, &s); err != nil {
		return s, fmt.Errorf("decode statement: %w", err)
	}
	if s.Schema != StatementSchema {
		return s, fmt.Errorf("decode statement: schema %q, want %s", s.Schema, StatementSchema)
	}
	return s, nil
}

// Line is the statement in one line.
func (s Statement) Line() string {
	f := func(v *float64) string {
		if v == nil {
			return "unbounded"
		}
		return strconv.FormatFloat(*v, 'f', 2, 64)
	}
	st := s.Statement
	central := f(st.CentralCap)
	if st.CentralCapScope != "" {
		central += " (budget " + st.CentralCapScope + ")"
	}
	return fmt.Sprintf("statement %s: one patient loses at most %s with one version of the record, %s with two; central releases %s; sanitized topic %.2f per version",
		s.Key, f(st.TotalOneVersion), f(st.TotalTwoVersions), central, st.SanitizedPerVersion)
}
