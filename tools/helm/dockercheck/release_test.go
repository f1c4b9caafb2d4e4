package dockercheck

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// testRevision stands for `git rev-parse HEAD` in the build args.
const testRevision = "0123456789abcdef0123456789abcdef01234567"

// releaseBuildArgs are the --build-arg values of a release build (the
// Dockerfile's header): VERSION from the VERSION file.
func releaseBuildArgs(t *testing.T) map[string]string {
	t.Helper()
	v, err := os.ReadFile(filepath.Join(repoRoot, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{"VERSION": strings.TrimSpace(string(v)), "REVISION": testRevision, "CREATED": "2026-11-25T00:00:00Z"}
}

// Every FROM pins its base image by digest (a tag can be re-pointed).
func TestBaseImagesPinnedByDigest(t *testing.T) {
	d := loadDockerfile(t)
	pinned := regexp.MustCompile(`^[^@\s]+@sha256:[0-9a-f]{64}$`)
	for _, st := range d.Stages {
		if st.Base == "scratch" {
			continue
		}
		if _, isStage := d.Stage(st.Base); isStage {
			continue
		}
		if !pinned.MatchString(st.Base) {
			t.Errorf("line %d: FROM %s is not pinned by digest (IMAGE[:TAG]@sha256:...)", st.Line, st.Base)
		}
	}
}

// The final stage carries the OCI annotations, with version and revision
// from the build args.
func TestOCILabels(t *testing.T) {
	d := loadDockerfile(t)
	final := d.Final()
	args := StageArgs(final, releaseBuildArgs(t))
	labels := map[string]string{}
	for _, l := range final.Find("LABEL") {
		words, err := ShellWords(ExpandArgs(l.Args, args))
		if err != nil {
			t.Fatalf("LABEL at line %d: %v", l.Line, err)
		}
		for _, w := range words {
			k, v, ok := strings.Cut(w, "=")
			if !ok {
				t.Fatalf("LABEL at line %d: %q is not key=value", l.Line, w)
			}
			labels[k] = v
		}
	}
	want := map[string]string{
		"org.opencontainers.image.title":    "dpsurv",
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.version":  args["VERSION"],
		"org.opencontainers.image.revision": testRevision,
		"org.opencontainers.image.created":  "2026-11-25T00:00:00Z",
	}
	for k, v := range want {
		if labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, labels[k], v)
		}
	}
	for _, k := range []string{"org.opencontainers.image.source", "org.opencontainers.image.description", "org.opencontainers.image.base.name"} {
		if labels[k] == "" {
			t.Errorf("label %s missing", k)
		}
	}
	if base := labels["org.opencontainers.image.base.name"]; !strings.HasPrefix(final.Base, base+"@") {
		t.Errorf("base.name %q is not the final stage's base %s", base, final.Base)
	}
}

// checkStampedVersion runs the image's binary: it reports the build args'
// version and revision.
func checkStampedVersion(t *testing.T, bin string) {
	t.Helper()
	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatalf("dpsurv version --json: %v", err)
	}
	var got struct{ Version, Revision string }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("version --json: %v\n%s", err, out)
	}
	want := releaseBuildArgs(t)
	if got.Version != want["VERSION"] || got.Revision != want["REVISION"] {
		t.Errorf("image binary reports %+v, want version %s revision %s", got, want["VERSION"], want["REVISION"])
	}
}

func TestExpandArgs(t *testing.T) {
	args := map[string]string{"V": "1.2", "R": "abc"}
	for in, want := range map[string]string{
		"-X a=${V} -X b=$R":   "-X a=1.2 -X b=abc",
		"$(git describe)":     "$(git describe)",
		"${UNKNOWN} $HOME $V": "${UNKNOWN} $HOME 1.2",
	} {
		if got := ExpandArgs(in, args); got != want {
			t.Errorf("ExpandArgs(%q) = %q, want %q", in, got, want)
		}
	}
}
