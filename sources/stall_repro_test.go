package sources_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/internal/testtier"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/ops"
	"github.com/dpsurv/dpsurv/sinks"
	"github.com/dpsurv/dpsurv/sources"
)

const reproChildEnv = "DPSURV_STALL_REPRO_CHILD"

// TestStallReproChild is not a test: re-executed with reproChildEnv set
// (broker,group,topic) it consumes and acks until killed.
func TestStallReproChild(t *testing.T) {
	raw := os.Getenv(reproChildEnv)
	if raw == "" {
		return
	}
	f := strings.Split(raw, ",")
	k, err := sources.NewKafka(sources.KafkaConfig{Conn: kafkaconn.Config{Brokers: []string{f[0]}, ClientID: "child"}, Topic: f[2], GroupID: f[1],
		MaxBatch: 4, SessionTimeout: 6 * time.Second, HeartbeatInterval: 2 * time.Second, RebalanceTimeout: 6 * time.Second}, nil)
	if err != nil {
		os.Exit(2)
	}
	for {
		b, err := k.ReadBatch(context.Background())
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		_ = b.Ack(context.Background())
	}
}

func TestStallRepro(t *testing.T) {
	testtier.Full(t, "stall reproduction")
	if os.Getenv("DPSURV_STALL_REPRO") == "" {
		t.Skip("set DPSURV_STALL_REPRO=N to run N kill iterations")
	}
	iters, _ := strconv.Atoi(os.Getenv("DPSURV_STALL_REPRO"))
	cl := broker.StartForTest(t, broker.Options{Partitions: 4})
	conn := kafkaconn.Config{Brokers: cl.Addrs(), ClientID: "repro"}
	const topic = "repro.in"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := kafkaconn.EnsureTopics(ctx, conn, map[string]int{topic: 4}, nil); err != nil {
		t.Fatal(err)
	}
	// Steady production over all partitions.
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() {
		defer pwg.Done()
		s, err := sinks.NewKafka(sinks.KafkaConfig{Conn: conn, Topic: topic}, nil)
		if err != nil {
			return
		}
		defer s.Close()
		for i := 0; ctx.Err() == nil; i++ {
			var msgs []sinks.Message
			for j := range 8 {
				msgs = append(msgs, sinks.Message{Key: []byte(fmt.Sprintf("k%d-%d", i, j)), Value: []byte("v")})
			}
			_ = s.Write(ctx, msgs)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	defer pwg.Wait()
	defer cancel()

	stalls := 0
	for it := range iters {
		group := fmt.Sprintf("repro-%d", it)
		child := exec.Command(os.Args[0], "-test.run=^TestStallReproChild$", "-test.count=1")
		child.Env = append(os.Environ(), reproChildEnv+"="+cl.Addrs()[0]+","+group+","+topic)
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		var logBuf strings.Builder
		var logMu sync.Mutex
		logger := zap.New(zapCoreTo(&logBuf, &logMu))
		b, err := sources.NewKafka(sources.KafkaConfig{Conn: conn, Topic: topic, GroupID: group, MaxBatch: 4,
			SessionTimeout: 6 * time.Second, HeartbeatInterval: 2 * time.Second, RebalanceTimeout: 6 * time.Second}, logger)
		if err != nil {
			t.Fatal(err)
		}
		bctx, bcancel := context.WithCancel(ctx)
		var bwg sync.WaitGroup
		var mu sync.Mutex
		lastRead := map[int]time.Time{}
		bwg.Add(1)
		go func() {
			defer bwg.Done()
			for bctx.Err() == nil {
				bt, err := b.ReadBatch(bctx)
				if err != nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				mu.Lock()
				for _, m := range bt.Messages {
					lastRead[m.Partition] = time.Now()
				}
				mu.Unlock()
				_ = bt.Ack(bctx)
			}
		}()
		if os.Getenv("DPSURV_STALL_EARLY") != "" {
			// Kill at any point of the first joins and rebalances.
			time.Sleep(time.Duration(it%8) * 700 * time.Millisecond)
		} else {
			if _, err := ops.WaitForGroup(ctx, conn, group, topic, 2, 40*time.Second); err != nil {
				t.Fatalf("iter %d: %v", it, err)
			}
			time.Sleep(time.Duration(it%5) * 300 * time.Millisecond)
		}
		_ = child.Process.Kill()
		_ = child.Wait()
		killed := time.Now()
		var child2 *exec.Cmd
		if os.Getenv("DPSURV_STALL_RESTART") != "" {
			child2 = exec.Command(os.Args[0], "-test.run=^TestStallReproChild$", "-test.count=1")
			child2.Env = child.Env
			if err := child2.Start(); err != nil {
				t.Fatal(err)
			}
		}
		var ownAll, caught time.Duration
		var endAtKill map[int]int64 // end offsets 7 s after the kill
		var lastState string
		for time.Since(killed) < 45*time.Second {
			st, err := ops.DescribeGroup(ctx, conn, group, topic)
			if err == nil {
				lastState = fmt.Sprintf("%s %+v", st.State, st.Members)
				want := 1
				if child2 != nil {
					want = 2
				}
				if ownAll == 0 && st.State == "Stable" && len(st.Members) == want && st.Assigned() == want {
					ownAll = time.Since(killed)
				}
			}
			if endAtKill == nil && time.Since(killed) > 7*time.Second {
				if pl, err := kafkaconn.GroupLag(ctx, conn, group, topic); err == nil && len(pl) == 4 {
					endAtKill = map[int]int64{}
					for _, p := range pl {
						endAtKill[p.Partition] = p.End
					}
				}
			}
			if pl, err := kafkaconn.GroupLag(ctx, conn, group, topic); err == nil && endAtKill != nil {
				ok := true
				for _, p := range pl {
					if p.Committed < endAtKill[p.Partition] {
						ok = false
					}
				}
				if ok {
					caught = time.Since(killed)
					break
				}
			}
			time.Sleep(250 * time.Millisecond)
		}
		pl, _ := kafkaconn.GroupLag(ctx, conn, group, topic)
		mu.Lock()
		var reads []string
		for p, at := range lastRead {
			reads = append(reads, fmt.Sprintf("p%d:%.1fs ago", p, time.Since(at).Seconds()))
		}
		mu.Unlock()
		sort.Strings(reads)
		t.Logf("iter %d: own-all after %v, caught up after %v; group %s; lag %+v; last reads %v", it, ownAll, caught, lastState, pl, reads)
		if caught == 0 {
			stalls++
			logMu.Lock()
			t.Logf("iter %d STALL; B log:\n%s", it, logBuf.String())
			logMu.Unlock()
		}
		if child2 != nil {
			_ = child2.Process.Kill()
			_ = child2.Wait()
		}
		bcancel()
		bwg.Wait()
		_ = b.Close()
	}
	t.Logf("stalls: %d of %d", stalls, iters)
}

type lockedWriter struct {
	b  *strings.Builder
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w lockedWriter) Sync() error { return nil }

func zapCoreTo(b *strings.Builder, mu *sync.Mutex) zapcore.Core {
	enc := zap.NewDevelopmentEncoderConfig()
	return zapcore.NewCore(zapcore.NewConsoleEncoder(enc), lockedWriter{b, mu}, zapcore.DebugLevel)
}
