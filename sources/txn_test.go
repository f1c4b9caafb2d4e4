package sources_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dpsurv/dpsurv/broker"
	"github.com/dpsurv/dpsurv/broker/brokertest"
	"github.com/dpsurv/dpsurv/kafkaconn"
	"github.com/dpsurv/dpsurv/sources"
)

// txnProduce writes values "<prefix>-<i>" for i in [0, n) to partition 0
// of topic in one transaction of a franz-go transactional producer (an
// independent client), then commits it or aborts it.
func txnProduce(ctx context.Context, t *testing.T, addrs []string, topic, txnID, prefix string, n int, commit bool) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.TransactionalID(txnID), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("begin transaction: %v", err)
	}
	for i := range n {
		r := &kgo.Record{Value: []byte(fmt.Sprintf("%s-%d", prefix, i)), Partition: 0}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce in transaction: %v", err)
		}
	}
	end := kgo.TryAbort
	if commit {
		end = kgo.TryCommit
	}
	if err := cl.EndTransaction(ctx, end); err != nil {
		t.Fatalf("end transaction (commit=%v): %v", commit, err)
	}
}

// plainProduce writes values "<prefix>-<i>" for i in [0, n) to partition 0
// without a transaction.
func plainProduce(ctx context.Context, t *testing.T, addrs []string, topic, prefix string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("%s-%d", prefix, i)), Partition: 0}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
}

// A transactional producer commits 20 records, aborts 25, then a plain
// producer writes 5: the source returns exactly the 25 committed and plain
// records, never an aborted record or a transaction marker; its commits
// move past the markers to the end of the partition, so the group's lag
// (against the last stable offset) is 0. With read_uncommitted it returns
// the aborted records too, but still no marker.
func TestReadCommittedSkipsAbortedAndMarkers(t *testing.T) {
	t.Parallel()
	c, conn := brokertest.Start(t, broker.Options{Topics: map[string]int{"tx": 1}})
	ctx := testCtx(t, 60*time.Second)
	txnProduce(ctx, t, c.Addrs(), "tx", "hospital-nifi", "committed", 20, true)
	txnProduce(ctx, t, c.Addrs(), "tx", "hospital-nifi", "aborted", 25, false)
	plainProduce(ctx, t, c.Addrs(), "tx", "plain", 5)
	want := slices.Concat(values("committed", 0, 20), values("plain", 0, 5))
	sort.Strings(want)

	for _, tc := range []struct {
		isolation string
		want      []string
	}{
		{"", want},
		{"read_uncommitted", func() []string {
			w := slices.Concat(want, values("aborted", 0, 25))
			sort.Strings(w)
			return w
		}()},
	} {
		t.Run("isolation="+tc.isolation, func(t *testing.T) {
			t.Parallel() // its own group
			group := "g-" + tc.isolation
			k := newSource(t, sources.KafkaConfig{Conn: conn, Topic: "tx", GroupID: group, MaxBatch: 7, IsolationLevel: tc.isolation})
			got := readN(ctx, t, k, len(tc.want), true)
			// Nothing more arrives: no marker, no aborted record late.
			short, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			if b, err := k.ReadBatch(short); err == nil {
				t.Fatalf("an extra batch after the %d records: %d messages, first %q", len(tc.want), len(b.Messages), b.Messages[0].Value)
			}
			sort.Strings(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("read %d records %v,\nwant %d %v", len(got), got, len(tc.want), tc.want)
			}
			aborted, control := k.Skipped()
			if control != 2 || (tc.isolation == "" && aborted != 25) || (tc.isolation != "" && aborted != 0) {
				t.Errorf("Skipped() = %d aborted, %d control records", aborted, control)
			}
			// The commit covers the trailing records, and the lag (LSO
			// based) is 0.
			lag, err := kafkaconn.GroupLag(ctx, conn, group, "tx")
			if err != nil {
				t.Fatal(err)
			}
			if len(lag) != 1 || lag[0].Lag() != 0 || lag[0].Committed != 52 {
				t.Errorf("group lag %+v, want committed 52 (20 + marker + 25 + marker + 5), lag 0", lag)
			}
			if l := k.Lag(); l != 0 {
				t.Errorf("source Lag() = %d, want 0", l)
			}
		})
	}
}

// A transaction still open is invisible under read_committed (the last
// stable offset stops before it) and what follows it waits for it; once it
// commits, everything arrives. A marker that is the last record of the
// partition is committed past although no message follows it.
func TestReadCommittedOpenTransactionAndTrailingMarker(t *testing.T) {
	t.Parallel()
	c, conn := brokertest.Start(t, broker.Options{Topics: map[string]int{"tx": 1}})
	ctx := testCtx(t, 60*time.Second)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.TransactionalID("open"), kgo.DefaultProduceTopic("tx"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("open-%d", i)), Partition: 0}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	plainProduce(ctx, t, c.Addrs(), "tx", "after", 2)
	k := newSource(t, sources.KafkaConfig{Conn: conn, Topic: "tx", GroupID: "g", MaxBatch: 100})
	// Nothing is read while the transaction is open, however long the
	// source fetches; Unstable() counts the 5 records once it has fetched
	// (its group join and first fetch take a while on a loaded machine).
	for deadline := time.Now().Add(20 * time.Second); ; {
		short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		b, err := k.ReadBatch(short)
		cancel()
		if err == nil {
			t.Fatalf("read %d messages (first %q) while a transaction before them is open", len(b.Messages), b.Messages[0].Value)
		}
		if u := k.Unstable(); u == 5 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("Unstable() = %d with a 3-record transaction open and 2 records after it, want 5", u)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	got := readN(ctx, t, k, 5, true)
	if u := k.Unstable(); u != 0 {
		t.Errorf("Unstable() = %d once the transaction committed, want 0", u)
	}
	sort.Strings(got)
	if want := []string{"after-0", "after-1", "open-0", "open-1", "open-2"}; !slices.Equal(got, want) {
		t.Fatalf("read %v, want %v", got, want)
	}
	// A committed transaction whose marker ends the partition.
	txnProduce(ctx, t, c.Addrs(), "tx", "last", "last", 2, true)
	got = readN(ctx, t, k, 2, true)
	if want := []string{"last-0", "last-1"}; !slices.Equal(got, want) {
		t.Fatalf("read %v, want %v", got, want)
	}
	// An aborted transaction after everything acknowledged: nothing to
	// read, but the commit still moves past it and its marker.
	txnProduce(ctx, t, c.Addrs(), "tx", "last", "dropped", 3, false)
	deadline := time.Now().Add(10 * time.Second)
	for {
		lag, err := kafkaconn.GroupLag(ctx, conn, "g", "tx")
		if err == nil && len(lag) == 1 && lag[0].Lag() == 0 && lag[0].Committed == lag[0].End && lag[0].End == 13 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("group lag %+v (%v): want committed = end = 13 (3 open + 2 plain + marker, 2 + marker, 3 aborted + marker)", lag, err)
		}
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		if b, err := k.ReadBatch(short); err == nil {
			t.Fatalf("read %q from an aborted transaction", b.Messages[0].Value)
		}
		cancel()
	}
}

// Three transactional producers interleave transactions on two partitions,
// each randomly committed or aborted (fixed seed), beside a plain
// producer: the source returns every committed and plain record exactly
// once (acknowledging each batch) and no aborted one, and the group ends
// committed at the end of both partitions.
func TestReadCommittedInterleavedProducers(t *testing.T) {
	t.Parallel()
	c, conn := brokertest.Start(t, broker.Options{Topics: map[string]int{"mix": 2}})
	ctx := testCtx(t, 90*time.Second)
	var mu sync.Mutex
	var want []string
	aborted := map[string]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 21))
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.TransactionalID(fmt.Sprintf("tx-%d", w)),
				kgo.DefaultProduceTopic("mix"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err != nil {
				errs <- err
				return
			}
			defer cl.Close()
			for tx := range 8 {
				if err := cl.BeginTransaction(); err != nil {
					errs <- err
					return
				}
				commit := rng.IntN(2) == 0
				var vals []string
				for i := range 1 + rng.IntN(6) {
					v := fmt.Sprintf("w%d-t%d-%d", w, tx, i)
					if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v), Partition: int32(rng.IntN(2))}).FirstErr(); err != nil {
						errs <- err
						return
					}
					vals = append(vals, v)
				}
				if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				if commit {
					want = append(want, vals...)
				} else {
					for _, v := range vals {
						aborted[v] = true
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic("mix"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			errs <- err
			return
		}
		defer cl.Close()
		for i := range 20 {
			v := fmt.Sprintf("plain-%d", i)
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v), Partition: int32(i % 2)}).FirstErr(); err != nil {
				errs <- err
				return
			}
			mu.Lock()
			want = append(want, v)
			mu.Unlock()
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("produce: %v", err)
	}
	if len(aborted) == 0 || len(want) <= 20 {
		t.Fatalf("the seed made %d aborted and %d committed+plain records: want both kinds", len(aborted), len(want))
	}

	k := newSource(t, sources.KafkaConfig{Conn: conn, Topic: "mix", GroupID: "g", MaxBatch: 5})
	got := readN(ctx, t, k, len(want), true)
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if b, err := k.ReadBatch(short); err == nil {
		t.Fatalf("an extra batch after the %d records: first %q", len(want), b.Messages[0].Value)
	}
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
		if aborted[v] {
			t.Errorf("aborted record %s returned", v)
		}
	}
	for _, v := range want {
		if seen[v] != 1 {
			t.Errorf("record %s returned %d times, want once", v, seen[v])
		}
	}
	lag, err := kafkaconn.GroupLag(ctx, conn, "g", "mix")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range lag {
		if p.Lag() != 0 || p.Committed != p.End {
			t.Errorf("partition %d: committed %d, end %d: want the commit at the end", p.Partition, p.Committed, p.End)
		}
	}
	a, m := k.Skipped()
	t.Logf("%d committed+plain records, %d aborted (skipped %d), %d markers", len(want), len(aborted), a, m)
	if a != int64(len(aborted)) {
		t.Errorf("Skipped() aborted = %d, want %d", a, len(aborted))
	}
}
