package dockercheck

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/dpsurv/dpsurv/tools/helm/internal/chartrender"
)

// Paths relative to this package.
const (
	repoRoot = "../../.."
	chartDir = "../../../deploy/helm/dpsurv"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name    string
		src     string
		wantErr string
		check   func(t *testing.T, d *Dockerfile)
	}{
		{name: "stages, flags, continuation, comments", src: `# syntax=docker/dockerfile:1
ARG GO=1.26
FROM golang:${GO} AS build
# a comment
RUN --mount=type=cache,target=/go/pkg/mod \
    # comment inside a continuation
    go build -o /out/x ./cmd/x
FROM scratch
COPY --from=build /out/x /x
ENTRYPOINT ["/x", "serve"]
`, check: func(t *testing.T, d *Dockerfile) {
			if len(d.Global) != 1 || d.Global[0].Cmd != "ARG" {
				t.Errorf("global %v", d.Global)
			}
			if len(d.Stages) != 2 || d.Stages[0].Name != "build" || d.Stages[1].Base != "scratch" {
				t.Fatalf("stages %+v", d.Stages)
			}
			run := d.Stages[0].Find("RUN")
			if len(run) != 1 || run[0].Args != "go build -o /out/x ./cmd/x" || run[0].Line != 5 {
				t.Errorf("run %+v", run)
			}
			if v, ok := run[0].Flag("mount"); !ok || v != "type=cache,target=/go/pkg/mod" {
				t.Errorf("mount flag %q", v)
			}
			cp := d.Final().Find("COPY")[0]
			if v, _ := cp.Flag("from"); v != "build" || cp.Args != "/out/x /x" {
				t.Errorf("copy %+v", cp)
			}
			if ep, ok := d.Final().Find("ENTRYPOINT")[0].ExecForm(); !ok || !slices.Equal(ep, []string{"/x", "serve"}) {
				t.Errorf("entrypoint %v", ep)
			}
		}},
		{name: "shell form is not exec form", src: "FROM scratch\nENTRYPOINT /x serve\n", check: func(t *testing.T, d *Dockerfile) {
			if _, ok := d.Final().Find("ENTRYPOINT")[0].ExecForm(); ok {
				t.Errorf("shell form taken for exec form")
			}
		}},
		{name: "no FROM", src: "# nothing\n", wantErr: "no FROM"},
		{name: "RUN before FROM", src: "RUN true\nFROM scratch\n", wantErr: "before the first FROM"},
		{name: "bad FROM", src: "FROM a b c d\n", wantErr: "want IMAGE [AS NAME]"},
		{name: "heredoc", src: "FROM scratch\nRUN <<EOF\necho\nEOF\n", wantErr: "heredocs not supported"},
		{name: "escape directive", src: "# escape=`\nFROM scratch\n", wantErr: "escape directive"},
		{name: "dangling continuation", src: "FROM scratch\nRUN a \\\n", wantErr: "continuation at end of file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Parse(strings.NewReader(tc.src))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, d)
		})
	}
}

func TestShellWords(t *testing.T) {
	cases := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: `CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/dpsurv ./cmd/dpsurv`,
			want: []string{"CGO_ENABLED=0", "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", "/out/dpsurv", "./cmd/dpsurv"}},
		{in: `a 'b c' "d\"e" f\ g`, want: []string{"a", "b c", `d"e`, "f g"}},
		{in: `go build && rm -rf /`, wantErr: true},
		{in: `go build; true`, wantErr: true},
		{in: `go build > log`, wantErr: true},
		{in: `go build -o $OUT`, wantErr: true},
		{in: `go build -ldflags "-X main.v=$(git describe)"`, wantErr: true},
		{in: `go build ./...`, want: []string{"go", "build", "./..."}},
		{in: `go build "unterminated`, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ShellWords(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr && !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	env, cmd := SplitAssignments([]string{"CGO_ENABLED=0", "GOOS=linux", "go", "build", "-o=x"})
	if !slices.Equal(env, []string{"CGO_ENABLED=0", "GOOS=linux"}) || !slices.Equal(cmd, []string{"go", "build", "-o=x"}) {
		t.Errorf("SplitAssignments: env %q cmd %q", env, cmd)
	}
}

func TestIgnore(t *testing.T) {
	ig, err := ParseIgnore(strings.NewReader(`
# comment
.git
/bin
dpsurv
**/*.test
docs/*.md
!docs/keep.md
tmp?
`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path     string
		excluded bool
	}{
		{".git", true},
		{".git/objects/ab", true},
		{"bin/dpsurv", true},
		{"dpsurv", true},
		{"cmd/dpsurv", false}, // patterns are anchored at the root
		{"cmd/dpsurv/main.go", false},
		{"pkg/x.test", true},
		{"x.test", true},
		{"pkg/x_test.go", false},
		{"docs/a.md", true},
		{"docs/keep.md", false},
		{"docs/sub/a.md", false},
		{"tmp1", true},
		{"tmp12", false},
		{"go.mod", false},
	}
	for _, tc := range cases {
		if got := ig.Excluded(tc.path); got != tc.excluded {
			t.Errorf("Excluded(%q) = %v, want %v", tc.path, got, tc.excluded)
		}
	}
}

// TestInspectDynamic checks that the static check can fail: a dynamically
// linked system binary is reported as such.
func TestInspectDynamic(t *testing.T) {
	var bin string
	for _, p := range []string{"/bin/sh", "/bin/ls", "/usr/bin/env"} {
		if _, err := os.Stat(p); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Fatal("no system binary to inspect")
	}
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		t.Fatal(err)
	}
	rep, _ := InspectBinary(real) // not a Go binary: build info is absent
	if rep.Static() {
		t.Errorf("%s reported static (interp %v, dynamic %v)", real, rep.Interp, rep.Dynamic)
	}
}

func loadDockerfile(t *testing.T) *Dockerfile {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	d, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// chartDefaults reads the chart's values.yaml.
func chartDefaults(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestFinalStage checks the image the Dockerfile produces: no shell base, no
// RUN, a numeric non-root USER matching the chart, exec-form ENTRYPOINT.
func TestFinalStage(t *testing.T) {
	d := loadDockerfile(t)
	if len(d.Stages) < 2 {
		t.Fatalf("want a multi-stage build, got %d stage(s)", len(d.Stages))
	}
	final := d.Final()
	distroless := regexp.MustCompile(`^gcr\.io/distroless/static(-debian\d+)?(:[\w.-]+)?(@sha256:[0-9a-f]{64})?$`)
	switch {
	case distroless.MatchString(final.Base):
	case final.Base == "scratch":
		// scratch has no CA bundle: one must be copied in.
		found := false
		for _, c := range final.Find("COPY") {
			found = found || strings.Contains(c.Args, "ca-certificates")
		}
		if !found {
			t.Errorf("FROM scratch without CA certificates")
		}
	default:
		t.Errorf("final stage FROM %s: want distroless/static or scratch (no shell)", final.Base)
	}
	for _, cmd := range []string{"RUN", "SHELL", "ADD"} {
		if ins := final.Find(cmd); len(ins) > 0 {
			t.Errorf("final stage has %s at line %d", cmd, ins[0].Line)
		}
	}
	for _, hc := range final.Find("HEALTHCHECK") {
		if strings.TrimSpace(hc.Args) != "NONE" {
			t.Errorf("HEALTHCHECK at line %d cannot run without a shell", hc.Line)
		}
	}

	users := final.Find("USER")
	if len(users) == 0 {
		t.Fatal("final stage sets no USER")
	}
	user := users[len(users)-1].Args
	uidText, gidText, _ := strings.Cut(user, ":")
	uid, err := strconv.Atoi(uidText)
	if err != nil || uid <= 0 {
		t.Errorf("USER %q: want a numeric non-root uid (Kubernetes runAsNonRoot cannot verify names)", user)
	}
	if gidText != "" {
		if gid, err := strconv.Atoi(gidText); err != nil || gid <= 0 {
			t.Errorf("USER %q: want a numeric non-root gid", user)
		}
	}
	vals := chartDefaults(t)
	if chartUID, _ := chartrender.Get(vals, "securityContext", "runAsUser"); fmt.Sprint(chartUID) != uidText {
		t.Errorf("Dockerfile USER %s, chart securityContext.runAsUser %v", uidText, chartUID)
	}

	eps := final.Find("ENTRYPOINT")
	if len(eps) != 1 {
		t.Fatalf("final stage has %d ENTRYPOINT, want 1", len(eps))
	}
	if ep, ok := eps[0].ExecForm(); !ok || !slices.Equal(ep, []string{"/dpsurv"}) {
		t.Errorf("ENTRYPOINT %s, want [\"/dpsurv\"] in exec form", eps[0].Args)
	}
	if cmds := final.Find("CMD"); len(cmds) > 0 {
		t.Errorf("final stage has CMD; the chart passes args")
	}
	listen, _ := chartrender.Get(vals, "config", "http", "listen")
	port := fmt.Sprint(listen)[strings.LastIndex(fmt.Sprint(listen), ":")+1:]
	exposed := false
	for _, e := range final.Find("EXPOSE") {
		exposed = exposed || slices.Contains(strings.Fields(e.Args), port)
	}
	if !exposed {
		t.Errorf("final stage does not EXPOSE the chart's http port %s", port)
	}
}

// buildSpec is the `go build` the Dockerfile runs.
type buildSpec struct {
	env    []string // ENV of the stage and assignments on the RUN line
	args   []string // go build arguments, -o value included
	outArg int      // index in args of the -o value
	stage  Stage
}

// dockerBuild finds the stage and RUN line that build the binary the final
// stage copies to /dpsurv.
func dockerBuild(t *testing.T, d *Dockerfile) buildSpec {
	t.Helper()
	var from, src string
	for _, c := range d.Final().Find("COPY") {
		f, ok := c.Flag("from")
		parts := strings.Fields(c.Args)
		if ok && len(parts) == 2 && parts[1] == "/dpsurv" {
			from, src = f, parts[0]
		}
	}
	if from == "" {
		t.Fatal("final stage does not COPY --from=<stage> <binary> /dpsurv")
	}
	stage, ok := d.Stage(from)
	if !ok {
		t.Fatalf("no stage named %q", from)
	}
	var spec *buildSpec
	buildArgs := StageArgs(stage, releaseBuildArgs(t))
	for _, run := range stage.Find("RUN") {
		words, err := ShellWords(ExpandArgs(run.Args, buildArgs))
		if err != nil {
			continue
		}
		env, cmd := SplitAssignments(words)
		if len(cmd) < 2 || cmd[0] != "go" || cmd[1] != "build" {
			continue
		}
		if spec != nil {
			t.Fatalf("stage %s runs go build twice", from)
		}
		s := buildSpec{args: cmd[1:], outArg: -1, stage: stage}
		for _, e := range stage.Find("ENV") {
			for _, kv := range strings.Fields(e.Args) {
				if strings.Contains(kv, "=") {
					s.env = append(s.env, kv)
				}
			}
		}
		s.env = append(s.env, env...)
		for i, a := range s.args {
			if a == "-o" && i+1 < len(s.args) {
				s.outArg = i + 1
			}
		}
		spec = &s
	}
	if spec == nil {
		t.Fatalf("stage %s has no simple `go build` RUN line", from)
	}
	if spec.outArg < 0 || spec.args[spec.outArg] != src {
		t.Fatalf("go build output is not the copied %s: %q", src, spec.args)
	}
	return *spec
}

// buildLikeDocker copies the build context that .dockerignore leaves and
// runs the Dockerfile's go build on it; it returns the binary's path and the
// context directory.
func buildLikeDocker(t *testing.T) (bin, ctxDir string, spec buildSpec) {
	t.Helper()
	d := loadDockerfile(t)
	spec = dockerBuild(t, d)
	for _, want := range []string{"CGO_ENABLED=0"} {
		if !slices.Contains(spec.env, want) {
			t.Errorf("go build runs without %s: env %q", want, spec.env)
		}
	}
	for _, want := range []string{"-trimpath"} {
		if !slices.Contains(spec.args, want) {
			t.Errorf("go build without %s: %q", want, spec.args)
		}
	}

	f, err := os.Open(filepath.Join(repoRoot, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ig, err := ParseIgnore(f)
	if err != nil {
		t.Fatal(err)
	}
	ctxDir = filepath.Join(t.TempDir(), "src")
	n, err := CopyContext(repoRoot, ctxDir, ig)
	if err != nil {
		t.Fatal(err)
	}
	for _, must := range []string{"go.mod", "go.sum", "cmd/dpsurv/main.go"} {
		if _, err := os.Stat(filepath.Join(ctxDir, must)); err != nil {
			t.Fatalf(".dockerignore leaves %s out of the build context", must)
		}
	}
	for _, mustNot := range []string{".git", "tools", "deploy"} {
		if _, err := os.Stat(filepath.Join(ctxDir, mustNot)); err == nil {
			t.Errorf(".dockerignore lets %s into the build context", mustNot)
		}
	}
	t.Logf("build context: %d files", n)

	bin = filepath.Join(t.TempDir(), "dpsurv")
	args := slices.Clone(spec.args)
	args[spec.outArg] = bin
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = ctxDir
	// The builder image's environment: no GOFLAGS or workspace from this
	// machine, and no .git in the context (so no VCS stamping).
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOFLAGS", "GOWORK", "CGO_ENABLED", "GOOS", "GOARCH", "GOEXPERIMENT":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, "GOWORK=off")
	cmd.Env = append(cmd.Env, spec.env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	t.Logf("go %s: %v", strings.Join(spec.args, " "), time.Since(start).Round(time.Millisecond))
	return bin, ctxDir, spec
}

// TestDockerBuild runs the Dockerfile's build, checks the binary is static
// and stripped, and runs it with the chart's rendered config for every
// example deployment (`dpsurv run --config ... --dry-run`).
func TestDockerBuild(t *testing.T) {
	bin, ctxDir, spec := buildLikeDocker(t)

	rep, err := InspectBinary(bin)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Interp || rep.Dynamic {
		t.Errorf("binary is dynamically linked (PT_INTERP %v, dynamic %v)", rep.Interp, rep.Dynamic)
	}
	if rep.Settings["CGO_ENABLED"] != "0" {
		t.Errorf("binary built with CGO_ENABLED=%q", rep.Settings["CGO_ENABLED"])
	}
	if rep.Settings["-trimpath"] != "true" {
		t.Errorf("binary built without -trimpath")
	}
	if ld := rep.Settings["-ldflags"]; strings.Contains(strings.Join(spec.args, " "), "-s -w") && (rep.SymbolTable || rep.DWARF) {
		t.Errorf("binary not stripped (ldflags %q, symtab %v, dwarf %v)", ld, rep.SymbolTable, rep.DWARF)
	}
	raw, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(ctxDir)) {
		t.Errorf("binary embeds the build directory %s despite -trimpath", ctxDir)
	}
	t.Logf("binary: %d bytes, %s, static %v", len(raw), rep.GoVersion, rep.Static())
	checkStampedVersion(t, bin)

	// The image runs ENTRYPOINT + the chart's container args.
	cases := []string{""}
	files, _ := filepath.Glob(filepath.Join(chartDir, "examples", "*.yaml"))
	cases = append(cases, files...)
	for _, file := range cases {
		name := "default"
		if file != "" {
			name = filepath.Base(file)
		}
		t.Run("dry-run/"+name, func(t *testing.T) {
			dryRun(t, bin, file)
		})
	}
}

// dryRun renders the chart with a values file, lays the secret files out
// in a temporary directory, and runs the container's command line with
// --dry-run.
func dryRun(t *testing.T, bin, valuesFile string) {
	t.Helper()
	vals, err := chartrender.Values(valuesFile)
	if err != nil {
		t.Fatal(err)
	}
	r, err := chartrender.Render(chartDir, "dpsurv", "dpsurv", vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	cfg, err := r.ServiceConfig()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	const mountRoot = "/var/run/dpsurv/"
	cfg = strings.ReplaceAll(cfg, mountRoot, root+"/")
	// Secret files: a fixed test key (32 bytes), a placeholder password, a
	// self-signed certificate and its key (--dry-run parses every Kafka
	// file, issue 21).
	key := sha256.Sum256([]byte("dpsurv chart dry-run test key"))
	certPEM, keyPEM := selfSigned(t)
	files := map[string][]byte{
		"key/prf.key":     key[:],
		"kafka/password":  []byte("not-a-real-password\n"),
		"tls/ca.crt":      certPEM,
		"tls/tls.crt":     certPEM,
		"tls/tls.key":     keyPEM,
		"etc/config.yaml": []byte(cfg),
	}
	for rel, b := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	deps := r.ByKind("Deployment")
	if len(deps) != 1 {
		t.Fatalf("want one Deployment, got %d", len(deps))
	}
	rawArgs, _ := chartrender.Get(deps[0], "spec", "template", "spec", "containers", 0, "args")
	list, _ := rawArgs.([]any)
	var args []string
	for _, a := range list {
		s := fmt.Sprint(a)
		if s == "/etc/dpsurv/config.yaml" {
			s = filepath.Join(root, "etc/config.yaml")
		}
		args = append(args, s)
	}
	if !slices.Contains(args, filepath.Join(root, "etc/config.yaml")) {
		t.Fatalf("container args %v do not name /etc/dpsurv/config.yaml", list)
	}
	args = append(args, "--dry-run")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("dpsurv %s: %v\nstderr: %s\nconfig:\n%s", strings.Join(args, " "), err, stderr.String(), cfg)
	}
	if !strings.Contains(stdout.String(), `"config":"ok"`) {
		t.Errorf("dry-run output %q lacks \"config\":\"ok\"", stdout.String())
	}
}

// selfSigned returns a self-signed CA certificate and its private key, PEM.
func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "dpsurv-chart-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}
