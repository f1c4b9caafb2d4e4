package doccmd

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
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
// on a copy.
func copyTree(t *testing.T, src, dst string) {
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
		if !d.Type().IsRegular() {
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
// the repository's files), with dpsurv and dpsurv-eval on PATH and `go run
// ./cmd/X` taken as the built X. Commands of one file run in order in one
// directory, so a file's earlier commands (a key, a sanitized output) serve
// its later ones. A command fails the test when it exits non-zero; a
// `server` command when it exits non-zero within its first seconds.
func TestDocumentedCommands(t *testing.T) {
	root := repoRoot(t)
	files := []string{filepath.Join(root, "README.md")}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, more...)

	bin := t.TempDir()
	// One build of both binaries: the go command compiles their packages
	// once, in parallel.
	build := exec.Command("go", "build", "-o", bin+string(os.PathSeparator), "./cmd/dpsurv", "./cmd/dpsurv-eval")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build dpsurv, dpsurv-eval: %v\n%s", err, out)
	}
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	var total, skipped atomic.Int64
	// Each document runs in its own copy of the repository with its own
	// ports, in parallel with the other documents (at most -parallel at
	// once); a document's commands run in order, so its earlier commands
	// (a key, a sanitized output, a broker in the background) serve its
	// later ones. No document may rely on another's files or processes.
	t.Cleanup(func() {
		t.Logf("%d documented commands, %d not run here (each names its reason)", total.Load(), skipped.Load())
	})
	for _, f := range files {
		cmds, _, named, err := ParseAll(f)
		if err != nil {
			t.Fatal(err)
		}
		total.Add(int64(len(cmds)))
		if len(cmds) == 0 {
			continue
		}
		rel, _ := filepath.Rel(root, f)
		t.Run(strings.ReplaceAll(rel, "/", "_"), func(t *testing.T) {
			t.Parallel()
			work := t.TempDir()
			copyTree(t, root, work)
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
						if testing.Short() {
							skipped.Add(1)
							t.Skipf("full tier only (%s): %s", c.Reason, c.Text)
						}
					}
					c.Text = ports.rewrite(c.Text)
					runDocumented(t, work, env, c, func(stop func()) { stops = append(stops, stop) })
				})
			}
		})
	}
	if total.Load() == 0 {
		t.Fatal("no documented commands found")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// runDocumented runs one documented command in dir; started gets the stop
// of its process group as soon as it runs (a command may leave a process
// in the background for the document's next commands: the document's
// cleanup stops it, even when this command fails).
func runDocumented(t *testing.T, dir string, env []string, c Command, started func(stop func())) {
	text := c.Text
	text = strings.ReplaceAll(text, "go run ./cmd/dpsurv-eval", "dpsurv-eval")
	text = strings.ReplaceAll(text, "go run ./cmd/dpsurv ", "dpsurv ")
	limit := 15 * time.Minute
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
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s:%d: %q exited early: %v\n%s", c.File, c.Line, c.Text, err, tail(out.String()))
			}
		case <-time.After(4 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
			}
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
	t.Logf("%q ok in %.1fs", c.Text, time.Since(start).Seconds())
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
