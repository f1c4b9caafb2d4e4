package cli

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Progress timing: nothing is printed for work that ends within
// progressAfter; longer work gets a line every progressEvery. Tests
// shorten them.
var (
	progressAfter atomic.Int64 // nanoseconds
	progressEvery atomic.Int64
)

func init() {
	progressAfter.Store(int64(2 * time.Second))
	progressEvery.Store(int64(2 * time.Second))
}

// progress reports long work on stderr: the command, its phase, the steps
// done of a known total where there is one, and the elapsed time. It never
// prints a record value or a result (phases and counts of simulated work
// only).
type progress struct {
	w       io.Writer
	name    string
	start   time.Time
	mu      sync.Mutex
	phase   string
	total   int64
	done    atomic.Int64
	printed bool
	stop    chan struct{}
	wg      sync.WaitGroup
}

// lockedWriter serialises writes (the reporter's and the command's own
// lines on stderr).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// startProgress starts the reporter of the command name on env's stderr,
// which it replaces by a writer shared with the reporter; finish stops it.
func startProgress(env *Env, name string) *progress {
	lw := &lockedWriter{w: env.Stderr}
	env.Stderr = lw
	p := &progress{w: lw, name: name, start: time.Now(), stop: make(chan struct{})}
	after, every := time.Duration(progressAfter.Load()), time.Duration(progressEvery.Load())
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTimer(after)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.print()
				t.Reset(every)
			}
		}
	}()
	return p
}

// setPhase names the current work and its number of steps (0: unknown).
func (p *progress) setPhase(phase string, total int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.phase, p.total = phase, int64(total)
	p.done.Store(0)
	p.mu.Unlock()
}

// step counts one step of the current phase.
func (p *progress) step() {
	if p != nil {
		p.done.Add(1)
	}
}

func (p *progress) print() {
	p.mu.Lock()
	defer p.mu.Unlock()
	el := time.Since(p.start).Seconds()
	if p.total > 0 {
		fmt.Fprintf(p.w, "dpsurv %s: %s: %d of about %d (%.0f s)\n", p.name, p.phase, min(p.done.Load(), p.total), p.total, el)
	} else {
		fmt.Fprintf(p.w, "dpsurv %s: %s (%.0f s)\n", p.name, p.phase, el)
	}
	p.printed = true
}

// finish stops the reporter (it waits for its goroutine) and, when it has
// printed anything, says the work is done.
func (p *progress) finish() {
	if p == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.printed {
		fmt.Fprintf(p.w, "dpsurv %s: done (%.0f s)\n", p.name, time.Since(p.start).Seconds())
	}
}
