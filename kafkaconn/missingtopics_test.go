package kafkaconn_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/kafkaconn"
)

// A broker that will not create topics (no CreateTopics API, as
// librdkafka's mock cluster, or a refusal): EnsureTopics returns a
// *MissingTopicsError naming exactly the missing topics, for the service
// to report while it retries; once they exist, EnsureTopics succeeds.
func TestEnsureTopicsMissingTopicsError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		control func(kmsg.Request) (kmsg.Response, error, bool)
	}{
		{"request refused", func(kmsg.Request) (kmsg.Response, error, bool) {
			return nil, errors.New("no CreateTopics here"), true // closes the connection
		}},
		{"every topic refused", func(r kmsg.Request) (kmsg.Response, error, bool) {
			req := r.(*kmsg.CreateTopicsRequest)
			resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
			for _, tp := range req.Topics {
				rt := kmsg.NewCreateTopicsResponseTopic()
				rt.Topic = tp.Topic
				rt.ErrorCode = kerr.PolicyViolation.Code
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil, true
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, conn := brokertest.Start(t, broker.Options{Topics: map[string]int{"exists": 1}})
			c.Kfake().ControlKey(int16(kmsg.CreateTopics), tc.control)
			err := kafkaconn.EnsureTopics(ctx, conn, map[string]int{"exists": 1, "out": 1, "dlq": 1}, nil)
			var mt *kafkaconn.MissingTopicsError
			if !errors.As(err, &mt) {
				t.Fatalf("EnsureTopics = %v, want a *MissingTopicsError", err)
			}
			if !slices.Equal(mt.Topics, []string{"dlq", "out"}) {
				t.Errorf("missing topics %v, want [dlq out]", mt.Topics)
			}
			if !strings.Contains(err.Error(), "dlq, out") || errors.Is(err, kafkaconn.ErrAuth) {
				t.Errorf("error %q: want it to name dlq, out and not to be an authentication error", err)
			}
			// The operator creates them: now it succeeds.
			if err := kafkaconn.EnsureTopics(ctx, conn, map[string]int{"dlq": 1, "out": 1}, nil); err != nil {
				t.Fatalf("EnsureTopics once the broker creates topics again: %v", err)
			}
		})
	}
}
