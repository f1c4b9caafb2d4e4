package doccmd

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// brokerAddrRe matches a loopback broker address as the documents print
// it: after a -brokers flag or in a YAML brokers list.
var brokerAddrRe = regexp.MustCompile(`brokers\W{1,6}((?:127\.0\.0\.1|localhost):[0-9]{2,5})\b`)

// servingEvents is what shows that a documented server command serves:
// each broker it names that nothing runs (the test listens there in the
// broker's place, and closes the connection at once: a connection held
// unanswered kept `dpsurv run` from stopping on SIGTERM for over 10 s)
// has had a connection from it, and each other loopback
// address it names (the config's http.listen) accepts connections. The
// addresses are those of the command's text and of the config files it
// names (a .yaml, .yml or .json word of the command that is a file of dir).
type servingEvents struct {
	standIns []net.Listener
	reached  chan struct{} // one value per stand-in's first connection
	serves   []string
}

// watchServing starts the stand-ins of text's (ports rewritten) absent
// brokers; ok is false when text names no address to watch.
func watchServing(t *testing.T, dir, text string) (ev *servingEvents, ok bool) {
	t.Helper()
	all := text
	for _, w := range strings.Fields(text) {
		if ext := filepath.Ext(w); ext == ".yaml" || ext == ".yml" || ext == ".json" {
			if b, err := os.ReadFile(filepath.Join(dir, w)); err == nil {
				all += "\n" + string(b)
			}
		}
	}
	ev = &servingEvents{reached: make(chan struct{}, 8)}
	var brokers []string
	for _, m := range brokerAddrRe.FindAllStringSubmatch(all, -1) {
		if slices.Contains(brokers, m[1]) {
			continue
		}
		brokers = append(brokers, m[1])
		ln, err := net.Listen("tcp", m[1])
		if err != nil {
			continue // a broker the document runs: not a stand-in's to watch
		}
		t.Cleanup(func() { ln.Close() })
		ev.standIns = append(ev.standIns, ln)
		go func() {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Close()
			ev.reached <- struct{}{}
		}()
	}
	for _, addr := range loopbackPortRe.FindAllString(all, -1) {
		if !slices.Contains(brokers, addr) && !slices.Contains(ev.serves, addr) {
			ev.serves = append(ev.serves, addr)
		}
	}
	return ev, len(ev.standIns)+len(ev.serves) > 0
}

// wait returns nil once every event has happened, or the error with which
// the command exited first (done), or a timeout error after limit.
func (ev *servingEvents) wait(done <-chan error, limit time.Duration) (exited bool, err error) {
	deadline := time.After(limit)
	for range ev.standIns {
		select {
		case <-ev.reached:
		case err := <-done:
			return true, err
		case <-deadline:
			return false, errors.New("no connection to its broker (a stand-in listens there)")
		}
	}
	for _, ln := range ev.standIns {
		ln.Close()
	}
	for _, addr := range ev.serves {
		for {
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				conn.Close()
				break
			}
			select {
			case err := <-done:
				return true, err
			case <-deadline:
				return false, errors.New("nothing listens on " + addr)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return false, nil
}

// stopServer sends the process group SIGTERM and waits for it (SIGKILL
// after 10 s).
func stopServer(pgid int, done <-chan error) {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
	}
}

// TestServingEvents: a server command serves once it has connected to the
// stand-in of the broker it names and answers on the address its config
// names; one that does neither is not serving, one that exits with an
// error is named so.
func TestServingEvents(t *testing.T) {
	dir := t.TempDir()
	broker, listen := "127.0.0.1:"+freePort(t), "127.0.0.1:"+freePort(t)
	cfg := "kafka:\n  brokers: [\"" + broker + "\"]\nhttp: {listen: \"" + listen + "\"}\n"
	if err := os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	text := "dpsurv run --config c.yaml"

	ev, ok := watchServing(t, dir, text)
	if !ok || len(ev.standIns) != 1 || !slices.Equal(ev.serves, []string{listen}) {
		t.Fatalf("watching %d stand-ins, serves %v; want 1 and [%s]", len(ev.standIns), ev.serves, listen)
	}
	if exited, err := ev.wait(make(chan error), 100*time.Millisecond); exited || err == nil {
		t.Fatalf("nothing connected or listened: exited %v, err %v; want not serving", exited, err)
	}
	for _, ln := range ev.standIns {
		ln.Close()
	}

	ev, _ = watchServing(t, dir, text)
	done := make(chan error, 1)
	done <- errors.New("exit status 1")
	if exited, err := ev.wait(done, time.Minute); !exited || err == nil {
		t.Fatalf("the command exited 1: exited %v, err %v", exited, err)
	}
	for _, ln := range ev.standIns {
		ln.Close()
	}

	ev, _ = watchServing(t, dir, text)
	srv, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go func() {
		for {
			c, err := srv.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	conn, err := net.Dial("tcp", broker)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if exited, err := ev.wait(make(chan error), time.Minute); exited || err != nil {
		t.Fatalf("connected and listening: exited %v, err %v; want serving", exited, err)
	}

	if _, ok := watchServing(t, dir, "consumer --idle 1s"); ok {
		t.Error("a command naming no address is watched")
	}
}
