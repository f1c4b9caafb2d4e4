package benchtest

import (
	"errors"
	"flag"
	"runtime"
	"testing"
	"time"
)

// spin burns CPU: n rounds of a xorshift that the compiler cannot drop.
func spin(n int) uint64 {
	x := uint64(88172645463325252)
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

var sink uint64

// ProcessCPU counts the CPU the process burns (on unix; elsewhere it
// reads 0 by contract): it never decreases, and it advances while the
// test spins (bounded by a minute of wall time, never by a tight limit).
func TestProcessCPUAdvances(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("ProcessCPU is 0 off unix by contract")
	}
	c0 := ProcessCPU()
	deadline := time.Now().Add(time.Minute)
	prev := c0
	for prev == c0 {
		if time.Now().After(deadline) {
			t.Fatalf("ProcessCPU stayed at %d ns over a minute of spinning", c0)
		}
		sink += spin(1 << 16)
		c := ProcessCPU()
		if c < prev {
			t.Fatalf("ProcessCPU went back from %d to %d", prev, c)
		}
		prev = c
	}
}

// PairedRatio reports its six metrics, the ratio of a twice-as-long
// private twin above 1 (wall), and fails the benchmark when a twin fails.
//
// 100 pairs, not testing.Benchmark's second of them: the test only reads
// the metrics (-test.benchtime is restored after).
func TestPairedRatio(t *testing.T) {
	bt := flag.Lookup("test.benchtime")
	if bt == nil {
		t.Fatal("no -test.benchtime flag")
	}
	prev := bt.Value.String()
	if err := bt.Value.Set("100x"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bt.Value.Set(prev) })
	const work = 1 << 17
	r := testing.Benchmark(func(b *testing.B) {
		PairedRatio(b, func() error { sink += spin(work); return nil }, func() error { sink += spin(4 * work); return nil })
	})
	if r.N < 1 {
		t.Fatalf("benchmark did not run: %+v", r)
	}
	for _, k := range []string{"exact-ms/op", "private-ms/op", "exact-cpu-ms/op", "private-cpu-ms/op", "private/exact"} {
		if _, ok := r.Extra[k]; !ok {
			t.Errorf("metric %q not reported: %v", k, r.Extra)
		}
	}
	t.Logf("%d pairs: private/exact %.2f (wall), %.2f (CPU)", r.N, r.Extra["private/exact"], r.Extra["private/exact-cpu"])
	if q := r.Extra["private/exact"]; !(q > 1) {
		t.Errorf("private/exact = %v for a private twin of four times the work: want > 1", q)
	}
	failed := testing.Benchmark(func(b *testing.B) {
		PairedRatio(b, func() error { return errors.New("exact failed") }, func() error { return nil })
	})
	if failed.N != 0 {
		t.Errorf("a failing twin still gave a result: %+v", failed)
	}
}
