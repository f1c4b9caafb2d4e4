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
// after -idle without a new message (with -to-end: as soon as each topic is
// read up to where it ended when the consumer started):
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
	toEnd := fs.Bool("to-end", false, "stop reading a topic once it is read up to its end offsets at the start (or after -idle)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *curveTopic == "" && *fitTopic != "" {
		*curveTopic = *fitTopic + ".arrow"
	}
	ctx := context.Background()
	bl := strings.Split(*brokers, ",")
	until := Until{Idle: *idle, End: *toEnd}
	done := func(n int, atEnd bool, what, topic string) {
		how := "idle for " + idle.String()
		if atEnd {
			how = "read to its end"
		}
		fmt.Fprintf(stderr, "consumer: %d %s messages from %s (%s)\n", n, what, topic, how)
	}
	if *sanTopic != "" {
		w := csv.NewWriter(stdout)
		header := false
		n, atEnd, err := ReadTopic(ctx, bl, *sanTopic, *group, until, func(m kafka.Message) error {
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
		done(n, atEnd, "sanitized", *sanTopic)
	}
	if *fitTopic != "" {
		n, atEnd, err := ReadTopic(ctx, bl, *fitTopic, *group, until, func(m kafka.Message) error {
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
		done(n, atEnd, "fit", *fitTopic)
	}
	if *curveTopic != "" && *curveTopic != "-" {
		n, atEnd, err := ReadTopic(ctx, bl, *curveTopic, *group, until, func(m kafka.Message) error {
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
		done(n, atEnd, "curve", *curveTopic)
	}
	return nil
}

// Until says when ReadTopic stops: after Idle without a message, or, with
// End, as soon as every partition is read up to the end offset it had when
// ReadTopic started (Idle still stops a partition that never gets there,
// e.g. one assigned to another member of the group).
type Until struct {
	Idle time.Duration
	End  bool
}

// ReadTopic reads topic in consumer group group, calling fn for every
// message and committing it afterwards, until until says to stop. It
// returns the number of messages handled and whether it stopped at the end
// offsets.
func ReadTopic(ctx context.Context, brokers []string, topic, group string, until Until, fn func(kafka.Message) error) (int, bool, error) {
	var left map[int]int64 // partition -> end offset still to reach
	if until.End {
		var err error
		if left, err = unread(ctx, brokers, topic, group); err != nil {
			return 0, false, err
		}
		if len(left) == 0 {
			return 0, true, nil
		}
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, GroupID: group, Topic: topic,
		StartOffset: kafka.FirstOffset, MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 200 * time.Millisecond})
	defer r.Close()
	n := 0
	for {
		mctx, cancel := context.WithTimeout(ctx, until.Idle)
		m, err := r.FetchMessage(mctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return n, false, nil
		}
		if err != nil {
			return n, false, fmt.Errorf("read %s: %w", topic, err)
		}
		if err := fn(m); err != nil {
			return n, false, fmt.Errorf("read %s offset %d: %w", topic, m.Offset, err)
		}
		if err := r.CommitMessages(ctx, m); err != nil {
			return n, false, fmt.Errorf("commit %s: %w", topic, err)
		}
		n++
		if end, ok := left[m.Partition]; ok && m.Offset+1 >= end {
			delete(left, m.Partition)
			if len(left) == 0 {
				return n, true, nil
			}
		}
	}
}

// unread is, per partition of topic with messages group has not read yet,
// the partition's end offset: where a reader in group starts (the group's
// committed offset, else the first offset) is before it. A topic not
// created yet has none.
func unread(ctx context.Context, brokers []string, topic, group string) (map[int]int64, error) {
	// A transport of its own: the default one caches the cluster's metadata
	// for seconds, and would not see a topic created since.
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second, Transport: tr}
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	if len(md.Topics) == 1 && errors.Is(md.Topics[0].Error, kafka.UnknownTopicOrPartition) {
		return nil, nil // not created yet: nothing to read
	}
	if len(md.Topics) != 1 || md.Topics[0].Error != nil {
		return nil, fmt.Errorf("end offsets of %s: topic metadata %+v", topic, md.Topics)
	}
	var parts []int
	var req []kafka.OffsetRequest
	for _, p := range md.Topics[0].Partitions {
		parts = append(parts, p.ID)
		req = append(req, kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
	}
	offs, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: req}})
	if err != nil {
		return nil, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	committed, err := cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err == nil && committed.Error != nil && !errors.Is(committed.Error, kafka.GroupIdNotFound) { // a new group: no commits
		err = committed.Error
	}
	if err != nil {
		return nil, fmt.Errorf("committed offsets of %s in group %s: %w", topic, group, err)
	}
	start := map[int]int64{}
	for _, p := range committed.Topics[topic] {
		if p.Error != nil {
			return nil, fmt.Errorf("committed offset of %s/%d in group %s: %w", topic, p.Partition, group, p.Error)
		}
		start[p.Partition] = p.CommittedOffset // -1: none
	}
	left := map[int]int64{}
	for _, p := range offs.Topics[topic] {
		if p.Error != nil {
			return nil, fmt.Errorf("end offsets of %s/%d: %w", topic, p.Partition, p.Error)
		}
		from := p.FirstOffset
		if c, ok := start[p.Partition]; ok && c > from {
			from = c
		}
		if from < p.LastOffset {
			left[p.Partition] = p.LastOffset
		}
	}
	return left, nil
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
