// Command producer is an example of a hospital-side producer for dpsurv's
// input topic, written only against the wire format (kafka-go and Arrow, no
// dpsurv packages), as a producer in another code base would be. It reads a
// CSV with the columns id,time,event,cohort (plus any numeric covariates)
// and sends it as tte.v1 Arrow IPC messages of -rows rows each, keyed by a
// message sequence number (never by patient: the key is not sanitized data,
// so a patient identifier must not be in it):
//
//	go run ./examples/producer -brokers 127.0.0.1:9092 -topic ehr.tte \
//	    -input data/lung_tte.csv -covariates age
//
// The input contract (docs/producers.md): id utf8 (or an integer), time a
// number >= 0 in the configured unit, event bool or 0/1, cohort utf8 (or an
// integer) from the configured label list, covariates numbers; either Arrow
// IPC format (the stream format by default, -format file for the Feather v2
// file format); a message must stay under the topic's max.message.bytes.
package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/segmentio/kafka-go"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "producer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("producer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	brokers := fs.String("brokers", "127.0.0.1:9092", "bootstrap brokers, comma separated")
	topic := fs.String("topic", "ehr.tte", "input topic")
	input := fs.String("input", "", "CSV with a header: id,time,event,cohort[,covariates...] (required)")
	covs := fs.String("covariates", "", "numeric covariate columns to send, comma separated")
	rows := fs.Int("rows", 1000, "rows per message (keep messages under the topic's max.message.bytes)")
	format := fs.String("format", "stream", "Arrow IPC format: stream or file (Feather v2)")
	timeUnit := fs.String("time-unit", "days", "time unit, sent as schema metadata dpsurv.time_unit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *input == "" {
		return errors.New("-input is required")
	}
	if *rows <= 0 || (*format != "stream" && *format != "file") {
		return errors.New("-rows must be positive and -format stream or file")
	}
	var covNames []string
	if *covs != "" {
		covNames = strings.Split(*covs, ",")
	}
	msgs, err := Encode(*input, covNames, *rows, *format, *timeUnit)
	if err != nil {
		return err
	}
	w := &kafka.Writer{
		Addr:         kafka.TCP(strings.Split(*brokers, ",")...),
		Topic:        *topic,
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: 10 * time.Millisecond,
		Transport:    &kafka.Transport{},
		// Topics are normally created by the platform team; a broker that
		// allows it (the embedded one) creates a missing one.
		AllowAutoTopicCreation: true,
	}
	defer w.Close()
	for i, v := range msgs {
		m := kafka.Message{Key: []byte(strconv.Itoa(i)), Value: v}
		if err := w.WriteMessages(ctx, m); err != nil {
			return fmt.Errorf("write message %d: %w", i, err)
		}
	}
	fmt.Fprintf(stdout, "sent %d messages to %s\n", len(msgs), *topic)
	return nil
}

// Encode reads the CSV and returns one Arrow IPC message per chunk of rows.
// Cells are sent as they are typed: time and covariates as float64 (an
// empty cell as null, which the service dead-letters with a reason), event
// as 0/1 in an int8 column, id and cohort as strings.
func Encode(path string, covariates []string, rowsPer int, format, timeUnit string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("read header: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	names := append([]string{"id", "time", "event", "cohort"}, covariates...)
	for _, n := range names {
		if _, ok := col[n]; !ok {
			return nil, fmt.Errorf("column %q not in the header", n)
		}
	}
	fields := []arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "time", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "event", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "cohort", Type: arrow.BinaryTypes.String},
	}
	for _, c := range covariates {
		fields = append(fields, arrow.Field{Name: c, Type: arrow.PrimitiveTypes.Float64, Nullable: true})
	}
	md := arrow.NewMetadata([]string{"dpsurv.schema", "dpsurv.time_unit"}, []string{"tte.v1", timeUnit})
	schema := arrow.NewSchema(fields, &md)
	mem := memory.NewGoAllocator()
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()

	var out [][]byte
	flush := func() error {
		rec := b.NewRecord()
		defer rec.Release()
		if rec.NumRows() == 0 {
			return nil
		}
		var buf bytes.Buffer
		if format == "file" {
			var fb seekBuffer
			w, err := ipc.NewFileWriter(&fb, ipc.WithSchema(schema), ipc.WithAllocator(mem))
			if err != nil {
				return err
			}
			if err := w.Write(rec); err != nil {
				return err
			}
			if err := w.Close(); err != nil {
				return err
			}
			buf.Write(fb.b)
		} else {
			w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
			if err := w.Write(rec); err != nil {
				return err
			}
			if err := w.Close(); err != nil {
				return err
			}
		}
		out = append(out, buf.Bytes())
		return nil
	}
	num := func(bld array.Builder, s string) {
		x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			bld.AppendNull()
			return
		}
		bld.(*array.Float64Builder).Append(x)
	}
	n := 0
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read row %d: %w", n+1, err)
		}
		b.Field(0).(*array.StringBuilder).Append(rec[col["id"]])
		num(b.Field(1), rec[col["time"]])
		switch strings.TrimSpace(rec[col["event"]]) {
		case "1", "true":
			b.Field(2).(*array.Int8Builder).Append(1)
		case "0", "false":
			b.Field(2).(*array.Int8Builder).Append(0)
		default:
			b.Field(2).AppendNull()
		}
		b.Field(3).(*array.StringBuilder).Append(rec[col["cohort"]])
		for k, c := range covariates {
			num(b.Field(4+k), rec[col[c]])
		}
		n++
		if n%rowsPer == 0 {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// seekBuffer is the in-memory io.WriteSeeker Arrow's file writer wants.
type seekBuffer struct {
	b   []byte
	pos int
}

func (s *seekBuffer) Write(p []byte) (int, error) {
	if need := s.pos + len(p); need > len(s.b) {
		s.b = append(s.b, make([]byte, need-len(s.b))...)
	}
	copy(s.b[s.pos:], p)
	s.pos += len(p)
	return len(p), nil
}

func (s *seekBuffer) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		off += int64(s.pos)
	case io.SeekEnd:
		off += int64(len(s.b))
	}
	if off < 0 {
		return 0, errors.New("seek before start")
	}
	s.pos = int(off)
	return off, nil
}
