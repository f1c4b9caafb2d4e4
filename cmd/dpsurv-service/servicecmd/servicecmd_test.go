package servicecmd_test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv"
	"github.com/dpsurv/dpsurv/app/apptest"
	"github.com/dpsurv/dpsurv/cmd/dpsurv-service/servicecmd"
	"github.com/dpsurv/dpsurv/cmd/dpsurv-service/servicecmd/configtest"
)

func main(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	code := servicecmd.Main(args, &out, &errb)
	return out.String(), errb.String(), code
}

// The slim binary runs `run` (here --dry-run) and `version`, and refuses
// every other command with its usage.
func TestSlimCommandLine(t *testing.T) {
	dir := t.TempDir()
	key := apptest.KeyFile(t)
	cfg := configtest.Write(t, filepath.Join(dir, "c.yaml"), configtest.Config{Key: key}.YAML())
	if o, e, code := main("run", "--config", cfg, "--dry-run"); code != 0 || !strings.Contains(o, `"config":"ok"`) || !strings.Contains(o, "worst_case_loss") {
		t.Errorf("run --dry-run: exit %d\n%s\n%s", code, o, e)
	}
	if o, _, code := main("--version"); code != 0 || !strings.HasPrefix(o, "dpsurv "+dpsurv.Version()+" (revision ") {
		t.Errorf("--version: exit %d, %q", code, o)
	}
	if o, _, code := main("version", "--json"); code != 0 || !strings.Contains(o, `"version": "`+dpsurv.Version()+`"`) {
		t.Errorf("version --json: exit %d, %q", code, o)
	}
	for _, args := range [][]string{{"demo"}, {"broker"}, {}} {
		if _, e, code := main(args...); code != 2 || !strings.Contains(e, "usage: dpsurv run --config FILE") {
			t.Errorf("%v: exit %d, %q", args, code, e)
		}
	}
	if _, e, code := main("run"); code != 2 || !strings.Contains(e, "--config FILE is required") {
		t.Errorf("run without --config: exit %d, %q", code, e)
	}
}

// The slim binary links neither the embedded broker nor the plotting
// stack: that is what makes it smaller (docs/deploy.md has the sizes).
func TestSlimBinaryLinksNoBrokerOrPlots(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./cmd/dpsurv-service")
	cmd.Dir = filepath.Join("..", "..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := string(out)
	if !strings.Contains(deps, "github.com/dpsurv/dpsurv/app\n") {
		t.Fatalf("go list output lacks the app package:\n%.500s", deps)
	}
	for _, banned := range []string{"github.com/twmb/franz-go/pkg/kfake", "gonum.org/v1/plot", "github.com/dpsurv/dpsurv/plots", "github.com/dpsurv/dpsurv/broker", "github.com/dpsurv/dpsurv/cmd/dpsurv/cli"} {
		if strings.Contains(deps, banned) {
			t.Errorf("cmd/dpsurv-service links %s", banned)
		}
	}
}
