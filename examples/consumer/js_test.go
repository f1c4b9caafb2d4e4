package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// jsConsumerDir copies examples/consumer-js into a per-user cache folder
// keyed by its lock file and installs its pinned dependencies there once
// (npm ci from the npm registry); it returns the folder.
func jsConsumerDir(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed, so the JavaScript consumer is not run (apt-get install nodejs npm)", tool)
		}
	}
	src := filepath.Join("..", "consumer-js")
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "dpsurv", "consumer-js-"+hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"package.json", "package-lock.json", "consume.mjs"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "kafkajs", "package.json")); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	return dir
}

// checkJSConsumer runs examples/consumer-js/consume.mjs (kafkajs and Apache
// Arrow JS, as docs/analysts.md shows) on the service's topics: every
// sanitized row, its int64 time printed as an integer (a BigInt in Arrow
// JS), one line per release and per curve table.
func checkJSConsumer(t *testing.T, brokers []string, n int, cohorts []string, statement string) {
	dir := jsConsumerDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "consume.mjs", "--brokers", strings.Join(brokers, ","), "--sanitized-topic", "tte.sanitized",
		"--fit-topic", "tte.fits", "--group", "js", "--to-end", "1", "--idle", "60000")
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("node consume.mjs: %v\n%s", err, errb.String())
	}
	var rows, fits, curves, statements int
	header := false
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		switch {
		case strings.HasPrefix(l, "# "):
		case l == "id,time,cohort,event":
			header = true
		case strings.HasPrefix(l, "fit km/"):
			fits++
			if !strings.Contains(l, "epsilon 1 (") {
				t.Errorf("fit line %q", l)
			}
		case strings.HasPrefix(l, "curve km/"):
			curves++
		case strings.HasPrefix(l, "statement "):
			statements++
			if l != statement {
				t.Errorf("JS statement line\n%s\nwant (the Go consumer's)\n%s", l, statement)
			}
		default:
			rows++
			f := strings.Split(l, ",")
			if len(f) != 4 || len(f[0]) != 32 {
				t.Fatalf("row %q", l)
			}
			if x, err := strconv.Atoi(f[1]); err != nil || x < 0 || x > 400 {
				t.Fatalf("time %q is not an integer in the public domain (BigInt not converted?)", f[1])
			}
			if f[3] != "true" && f[3] != "false" {
				t.Fatalf("event %q", f[3])
			}
		}
	}
	if !header || rows != n || fits != len(cohorts) || curves != len(cohorts) || statements != 1 {
		t.Errorf("JS consumer: header %v, %d rows (want %d), %d fits and %d curves (want %d), %d statements (want 1)\n%s",
			header, rows, n, fits, curves, len(cohorts), statements, errb.String())
	}
	if got := strings.Count(errb.String(), "(read to its end)"); got != 3 {
		t.Errorf("%d of 3 topics read to their end offsets, want all (it waited out --idle):\n%s", got, errb.String())
	}
	for _, want := range []string{"# tte.sanitized.v1, time unit days", `mechanism "te-sanitizer"`, `guarantee "local-dp"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("JS consumer output lacks %q", want)
		}
	}
}
