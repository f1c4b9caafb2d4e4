package doccmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dpsurv/dpsurv/internal/testtier"
)

// repoRoot walks up to the directory holding go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatal("no go.mod above the test's directory")
		}
	}
}

// copyTree copies the repository (without .git and build outputs) so that
// documented commands that write files (docs regenerations, outputs) run
// on a copy. Without goSource it leaves out the Go files (633 of the 820
// files of the tree), which only a command that runs the go tool on the
// copy reads (see needsGoSource): the documented `go run`s run prebuilt.
func copyTree(t *testing.T, src, dst string, goSource bool) {
	t.Helper()
	skip := map[string]bool{".git": true, "bin": true, "dpsurv-demo": true, "node_modules": true, "out": true}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if skip[d.Name()] && rel != "." {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() || (!goSource && strings.HasSuffix(d.Name(), ".go")) {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		info, _ := d.Info()
		out, err := os.OpenFile(filepath.Join(dst, rel), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatalf("copy repository: %v", err)
	}
}

// TestParse checks the extraction on a small document.
func TestParse(t *testing.T) {
	dir := t.TempDir()
	md := "# x\n\n<!-- doccmd: skip dpsurv run -- needs a cluster -->\n\n```sh\n" +
		"dpsurv fit km --input a.csv \\\n   --epsilon inf   # the reference\n" +
		"echo not ours\ndpsurv run --config c.yaml\n```\n\n```yaml\ndpsurv: 1\n```\n\n" +
		"    go run ./cmd/dpsurv demo\n"
	p := filepath.Join(dir, "x.md")
	if err := os.WriteFile(p, []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	cmds, dirs, err := Parse(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []Command{
		{File: p, Line: 6, Text: "dpsurv fit km --input a.csv --epsilon inf", Mode: Run},
		{File: p, Line: 9, Text: "dpsurv run --config c.yaml", Mode: Skip, Reason: "needs a cluster"},
		{File: p, Line: 16, Text: "go run ./cmd/dpsurv demo", Mode: Run},
	}
	if len(dirs) != 1 || len(cmds) != len(want) {
		t.Fatalf("got %d directives, commands %+v", len(dirs), cmds)
	}
	for i := range want {
		if cmds[i] != want[i] {
			t.Errorf("command %d = %+v, want %+v", i, cmds[i], want[i])
		}
	}
	if err := os.WriteFile(p, []byte("<!-- doccmd: skip dpsurv -->\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Parse(p); err == nil {
		t.Error("a directive without a reason was accepted")
	}
}

// TestDocumentedCommands runs every command printed in README.md and
// docs/*.md, as printed, from a copy of the repository (so it reads only
// the repository's files; a `full` `go test` that writes nothing into the
// tree runs in the repository itself, see inRepository), with dpsurv and dpsurv-eval on PATH and `go run
// ./DIR` taken as DIR's main package built once from the repository (see
// goRunTargets). Commands of one file run in order in one directory, so a
// file's earlier commands (a key, a sanitized output) serve its later
// ones. A command fails the test when it exits non-zero; a `server`
// command when it exits non-zero before it serves (watchServing: it
// connects to the broker it names, where the test listens if no document
// runs one, and answers on the addresses its config names) or, naming no
// address, within its first seconds.
//
// The `full` commands (regenerations, benchmarks, a fuzzing run: minutes
// of number crunching in binaries that are never race-built) run in the
// long tier only, without -short and -race: `make stats` runs this test so
// (its stats-docs target). A `full` command printed identically in several
// documents runs once, in the first.
func TestDocumentedCommands(t *testing.T) {
	root := repoRoot(t)
	files := []string{filepath.Join(root, "README.md")}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, more...)

	type parsed struct {
		cmds  []Command
		named []File
	}
	docs := make([]parsed, len(files))
	var all []Command
	for i, f := range files {
		cmds, _, named, err := ParseAll(f)
		if err != nil {
			t.Fatal(err)
		}
		docs[i] = parsed{cmds, named}
		all = append(all, cmds...)
	}
	firstFull := firstFullCommands(all)

	bin := t.TempDir()
	targets := goRunTargets(all)
	buildTargets(t, root, bin, targets)
	// DPSURV: scripts that build dpsurv (scripts/figures.sh) take this
	// build of the same checkout instead, as they document.
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"DPSURV="+filepath.Join(bin, "dpsurv"))

	var total, skipped atomic.Int64
	// Each document runs in its own copy of the repository with its own
	// ports, in parallel with the other documents (docsAtOnce at once:
	// more than -parallel's two on two cores, because a document's
	// `server` command mostly waits); a document's commands run in order,
	// so its earlier commands (a key, a sanitized output, a broker in the
	// background) serve its later ones. No document may rely on another's
	// files or processes.
	t.Cleanup(func() {
		t.Logf("%d documented commands, %d not run here (each names its reason)", total.Load(), skipped.Load())
	})
	const docsAtOnce = 4
	slots := make(chan struct{}, docsAtOnce)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i, f := range files {
		cmds, named := docs[i].cmds, docs[i].named
		total.Add(int64(len(cmds)))
		if len(cmds) == 0 {
			continue
		}
		rel, _ := filepath.Rel(root, f)
		slots <- struct{}{}
		wg.Add(1)
		run := func(name string, f func(*testing.T)) {
			defer func() { <-slots; wg.Done() }()
			t.Run(name, f) // the slot is freed even when -run skips f
		}
		go run(strings.ReplaceAll(rel, "/", "_"), func(t *testing.T) {
			// The copy is made only for a document with a command that
			// runs in this tier (under -short, five documents have none),
			// and holds the Go source only when such a command needs it.
			work := t.TempDir()
			if runs := slices.DeleteFunc(runsHere(cmds, firstFull), inRepository); len(runs) > 0 {
				copyTree(t, root, work, needsGoSource(runs, targets))
			}
			ports := newPortMap(t)
			var stops []func()
			t.Cleanup(func() {
				for _, f := range stops {
					f()
				}
			})
			for _, nf := range named {
				if err := os.WriteFile(filepath.Join(work, nf.Name), []byte(ports.rewrite(nf.Content)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			seen := map[string]int{}
			for _, c := range cmds {
				// A command printed again in the same document (a generated
				// page repeats its regeneration command per section) runs once.
				if first, dup := seen[c.Text]; dup {
					t.Logf("%s:%d: same command as line %d, run once", rel, c.Line, first)
					continue
				}
				seen[c.Text] = c.Line
				t.Run(itoa(c.Line), func(t *testing.T) {
					switch c.Mode {
					case Skip:
						skipped.Add(1)
						t.Skipf("not run (%s): %s", c.Reason, c.Text)
					case Full:
						if !testtier.Long() {
							skipped.Add(1)
							t.Skipf("long tier only, without -short and -race (make stats runs it; %s): %s", c.Reason, c.Text)
						}
						if first := firstFull[c.Text]; first != c {
							t.Skipf("same command as %s:%d, run there once", relTo(root, first.File), first.Line)
						}
					}
					c.Text = ports.rewrite(c.Text)
					dir := work
					if inRepository(c) {
						dir = root
					}
					runDocumented(t, dir, env, targets, c, func(stop func()) { stops = append(stops, stop) })
				})
			}
		})
	}
	wg.Wait()
	if total.Load() == 0 {
		t.Fatal("no documented commands found")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// runsHere lists the commands of cmds that run in this tier: every
// command but a skipped one, a `full` one only in the long tier and there
// only at its first place (firstFull).
func runsHere(cmds []Command, firstFull map[string]Command) []Command {
	var out []Command
	for _, c := range cmds {
		switch c.Mode {
		case Skip:
			continue
		case Full:
			if !testtier.Long() || firstFull[c.Text] != c {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// readOnlyGoTestRe matches a command that is one `go test` writing no file
// of its own into the tree: no shell operator, redirection or substitution,
// and none of the flags that write a file (-c, -o, -outputdir, -trace, a
// profile).
var readOnlyGoTestRe = regexp.MustCompile(`^go test\s[^;&|<>` + "`" + `]*$`)

var goTestWriteRe = regexp.MustCompile(`\$[({A-Za-z_]|(^|\s)-{1,2}(c|o|outputdir|trace|[a-z]*profile)(=|\s|$)`)

// inRepository reports whether c runs in the repository itself rather than
// in the document's copy: a `full` `go test` that writes nothing into the
// tree (readOnlyGoTestRe), so that the go command compiles its packages in
// the repository's directory, where this test's buildTargets (and the
// suite's other non-race lanes) already compiled them: the cache keys a
// package on its directory, so in a copy, fresh at every run, the
// documented benchmarks recompiled every package they import (about 10
// CPU-s) and the fuzzing run its whole instrumented build (about 20 CPU-s,
// cached from then on in the repository). A fuzzing run writes into the
// tree only a failing input (testdata/fuzz/...), as it does for a user who
// runs it, and the test fails then anyway.
func inRepository(c Command) bool {
	return c.Mode == Full && readOnlyGoTestRe.MatchString(c.Text) && !goTestWriteRe.MatchString(c.Text)
}

// goToolRe matches what in a command (after its `go run`s are rewritten to
// the prebuilt binaries) reads the Go source of the copy: the go tool,
// make, a script (scripts/figures.sh builds dpsurv), or a Go file named.
var goToolRe = regexp.MustCompile(`(^|[\s;&|(])(go\s|make(\s|$)|scripts/)|\.go\b`)

// needsGoSource reports whether a command of cmds reads the Go source.
func needsGoSource(cmds []Command, built []string) bool {
	return slices.ContainsFunc(cmds, func(c Command) bool { return goToolRe.MatchString(rewriteGoRun(c.Text, built)) })
}

// buildTargets puts one build of every binary the documents run (dpsurv,
// dpsurv-eval and each `go run ./DIR`, targets[0] being dpsurv) in bin,
// built in the repository itself: the go command compiles their packages
// once and its cache keeps them across runs (a build in a document's copy
// would compile them afresh each time: the cache keys a package on its
// directory). -s -w: no symbol table or DWARF, which halves the link.
//
// Each is built by `go run -exec cp DIR bin/NAME`, not `go build -o bin/`:
// the go command caches the executables of go run (Go 1.24 on), so a run
// on an unchanged tree links nothing, where `go build -o` into this fresh
// directory relinked all four binaries every run (about 4.5 CPU-s). The
// first target, whose packages include every other target's but their
// main packages, is built alone, so that on a cold cache the others, built
// together after it, find its packages compiled rather than compile them
// each at once.
func buildTargets(t *testing.T, root, bin string, targets []string) {
	t.Helper()
	build := func(target string) error {
		cmd := exec.Command("go", "run", "-ldflags=-s -w", "-exec", "cp", target, filepath.Join(bin, path.Base(target)))
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go run -exec cp %s: %v\n%s", target, err, out)
		}
		return nil
	}
	if err := build(targets[0]); err != nil {
		t.Fatal(err)
	}
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, target := range targets[1:] {
		wg.Go(func() { errs[i] = build(target) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// goRunRe matches `go run ./DIR` (DIR a main package of the repository).
var goRunRe = regexp.MustCompile(`\bgo run (\./[A-Za-z0-9_./-]*[A-Za-z0-9_-])(?:\s|$)`)

// goRunTargets lists the packages the test builds once: dpsurv,
// dpsurv-eval and every `go run ./DIR` of a command the test may run (not
// a skipped one), each run as the built DIR (its last path element on
// PATH).
func goRunTargets(cmds []Command) []string {
	targets := []string{"./cmd/dpsurv", "./cmd/dpsurv-eval"}
	for _, c := range cmds {
		if c.Mode == Skip {
			continue
		}
		for _, m := range goRunRe.FindAllStringSubmatch(c.Text, -1) {
			if !slices.Contains(targets, m[1]) {
				targets = append(targets, m[1])
			}
		}
	}
	return targets
}

// rewriteGoRun replaces each `go run ./DIR` of text whose DIR is built by
// the built binary's name.
func rewriteGoRun(text string, built []string) string {
	return goRunRe.ReplaceAllStringFunc(text, func(m string) string {
		target := goRunRe.FindStringSubmatch(m)[1]
		if !slices.Contains(built, target) {
			return m
		}
		return strings.Replace(m, "go run "+target, path.Base(target), 1)
	})
}

// TestGoRunTargets: every `go run ./DIR` of a command that runs is built
// once and runs as the built binary; a skipped command's is not built.
func TestGoRunTargets(t *testing.T) {
	cmds := []Command{
		{Text: "go run ./cmd/dpsurv demo", Mode: Run},
		{Text: "go run ./examples/consumer", Mode: Server},
		{Text: "go run ./cmd/dpsurv-eval km -data x.csv && go run ./examples/producer -topic t", Mode: Full},
		{Text: "go run ./ops/windowsrun -kind km", Mode: Skip},
	}
	got := goRunTargets(cmds)
	want := []string{"./cmd/dpsurv", "./cmd/dpsurv-eval", "./examples/consumer", "./examples/producer"}
	if !slices.Equal(got, want) {
		t.Fatalf("targets %v, want %v", got, want)
	}
	for in, out := range map[string]string{
		"go run ./cmd/dpsurv demo":                                  "dpsurv demo",
		"go run ./cmd/dpsurv-eval km && go run ./examples/consumer": "dpsurv-eval km && consumer",
		"go run ./ops/windowsrun -kind km":                          "go run ./ops/windowsrun -kind km",
		"go run ./cmd/dpsurvx":                                      "go run ./cmd/dpsurvx",
	} {
		if r := rewriteGoRun(in, got); r != out {
			t.Errorf("%q ran as %q, want %q", in, r, out)
		}
	}
}

// TestInRepository: only a `full` `go test` that writes no file of its own
// runs in the repository; every other command runs in the document's copy.
func TestInRepository(t *testing.T) {
	for text, want := range map[string]bool{
		"go test -run XXX -bench PrivateVsExact -benchtime 3x ./dpfit/km ./dpfit/weibull ./regression": true,
		"go test -run '^$' -fuzz FuzzSanitizeProcessor -fuzztime 10s ./processors/sanitize/":           true,
		"go test -run XXX -bench . ./dpfit/km > bench.txt":                                             false,
		"go test -bench . -cpuprofile cpu.out ./dpfit/km":                                              false,
		"go test -c -o km.test ./dpfit/km":                                                             false,
		"go test -bench . -o=km.test ./dpfit/km":                                                       false,
		"go test -bench . -trace t.out ./dpfit/km":                                                     false,
		"go test ./dpfit/km && rm -rf docs":                                                            false,
		"go test ./dpfit/km; touch x":                                                                  false,
		"go test -run X $(cat flags) ./dpfit/km":                                                       false,
		"go run ./cmd/dpsurv-eval km -write docs/evaluation-fits.md":                                   false,
		"scripts/figures.sh":                                                                           false,
		"cd tools/helm && go test ./promcheck":                                                         false,
	} {
		if got := inRepository(Command{Text: text, Mode: Full}); got != want {
			t.Errorf("%q: runs in the repository %v, want %v", text, got, want)
		}
	}
	if inRepository(Command{Text: "go test -run X ./dpfit/km", Mode: Run}) {
		t.Error("a command of the short tier runs in the repository")
	}
}

// TestNeedsGoSource: a document's copy holds the Go files only for a
// command that runs the go tool, make or a script, or names a Go file; a
// `go run` of a prebuilt binary needs none.
func TestNeedsGoSource(t *testing.T) {
	built := []string{"./cmd/dpsurv", "./cmd/dpsurv-eval"}
	for text, want := range map[string]bool{
		"go run ./cmd/dpsurv demo":                                 false,
		"dpsurv fit km --input data/lung_tte.csv --epsilon inf":    false,
		"(umask 077; head -c 32 /dev/urandom > prf.key)":           false,
		"go run ./cmd/dpsurv-eval km -data x.csv -write docs/x.md": false,
		"go run ./ops/windowsrun -rate 1000":                       true,
		"go test -run XXX -bench . ./dpfit/km":                     true,
		"cd tools/helm && go test ./promcheck":                     true,
		"make stats":                                               true,
		"scripts/figures.sh":                                       true,
		"head -n 5 cmd/dpsurv/main.go":                             true,
		"dpsurv demo --out-dir gobble":                             false,
	} {
		if got := needsGoSource([]Command{{Text: text}}, built); got != want {
			t.Errorf("%q: needs the Go source %v, want %v", text, got, want)
		}
	}
}

// firstFullCommands maps the text of each `full` command to its first
// place in cmds (documents in order): a full command is a regeneration or
// a benchmark, whose output no later command reads, so one run of a
// command printed in several documents proves them all.
func firstFullCommands(cmds []Command) map[string]Command {
	first := map[string]Command{}
	for _, c := range cmds {
		if _, ok := first[c.Text]; c.Mode == Full && !ok {
			first[c.Text] = c
		}
	}
	return first
}

func relTo(root, p string) string {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return rel
}

// commandLimit bounds one documented command: 15 minutes, or up to two
// minutes before the test binary's deadline (-timeout) when that leaves
// more, so that on a loaded machine a slow command runs to the end while a
// hung one is still named before the binary's timeout stops everything
// (the long tier's regenerations took over 15 minutes at load 30).
func commandLimit(t *testing.T) time.Duration {
	limit := 15 * time.Minute
	if d, ok := t.Deadline(); ok {
		limit = max(limit, time.Until(d)-2*time.Minute)
	}
	return limit
}

// runDocumented runs one documented command in dir; started gets the stop
// of its process group as soon as it runs (a command may leave a process
// in the background for the document's next commands: the document's
// cleanup stops it, even when this command fails).
func runDocumented(t *testing.T, dir string, env []string, built []string, c Command, started func(stop func())) {
	text := rewriteGoRun(c.Text, built)
	limit := commandLimit(t)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", "set -o pipefail; "+text)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Output goes to a file, not a pipe: a process the command leaves in
	// the background keeps writing to it after the command returns.
	outFile, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer outFile.Close()
	cmd.Stdout = outFile
	cmd.Stderr = outFile
	out := fileText{outFile}
	var serving *servingEvents
	watch := false
	if c.Mode == Server {
		serving, watch = watchServing(t, dir, text)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s:%d: start %q: %v", c.File, c.Line, c.Text, err)
	}
	// A documented command may leave a process in the background ("dpsurv
	// broker ... &") for the document's next commands: its process group is
	// stopped when the document ends.
	pgid := cmd.Process.Pid
	started(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if c.Mode == Server {
		if !watch {
			// nothing to watch: it must still run after a few seconds
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("%s:%d: %q exited early: %v\n%s", c.File, c.Line, c.Text, err, tail(out.String()))
				}
			case <-time.After(4 * time.Second):
				stopServer(pgid, done)
			}
			return
		}
		// It serves once it has reached its broker and answers on the
		// addresses it serves (watchServing); then it is stopped.
		exited, err := serving.wait(done, 2*time.Minute)
		switch {
		case exited && err != nil:
			t.Fatalf("%s:%d: %q exited early: %v\n%s", c.File, c.Line, c.Text, err, tail(out.String()))
		case exited:
			t.Logf("%q exited 0 before serving", c.Text)
		case err != nil:
			stopServer(pgid, done)
			t.Fatalf("%s:%d: %q not serving after two minutes: %v\n%s", c.File, c.Line, c.Text, err, tail(out.String()))
		default:
			t.Logf("%q serving after %.1fs", c.Text, time.Since(start).Seconds())
			stopServer(pgid, done)
		}
		return
	}
	err = <-done
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("%s:%d: %q still running after %v", c.File, c.Line, c.Text, limit)
	}
	if err != nil {
		t.Fatalf("%s:%d: %q failed: %v\n%s", c.File, c.Line, c.Text, err, tail(out.String()))
	}
	// A command that leaves a server in the background ("dpsurv broker
	// --listen ADDR &") is done when its addresses answer, as a user sees
	// it start before typing the next command (which, built beforehand,
	// starts at once).
	if strings.HasSuffix(strings.TrimSpace(c.Text), "&") {
		for _, m := range loopbackPortRe.FindAllString(c.Text, -1) {
			waitListening(t, m, out)
		}
	}
	t.Logf("%q ok in %.1fs", c.Text, time.Since(start).Seconds())
}

// waitListening waits until addr accepts a connection (two minutes at
// most: a loaded machine may be slow to start a server).
func waitListening(t *testing.T, addr string, out fileText) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s two minutes after the command: %v\n%s", addr, err, tail(out.String()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func tail(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}

// fileText reads back a command's output file.
type fileText struct{ f *os.File }

func (o fileText) String() string {
	b, err := os.ReadFile(o.f.Name())
	if err != nil {
		return "(output unreadable: " + err.Error() + ")"
	}
	return string(b)
}
