package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dpsurv/dpsurv/internal/datasets"
	"github.com/dpsurv/dpsurv/internal/doccmd"
)

// docs/privacy.md's per-patient statements are the output of the command
// each block names (<!-- statement: ARGS --> ... <!-- /statement -->):
// regenerated here and compared, so the document cannot drift from the
// configuration or the code. "README:config.yaml" stands for the README's
// config.yaml block. DPSURV_WRITE_STATEMENTS=1 rewrites the blocks.
func TestPrivacyDocStatementsAreGenerated(t *testing.T) {
	root := filepath.Dir(datasets.Dir(t))
	t.Chdir(root)
	_, _, files, err := doccmd.ParseAll("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(t.TempDir(), "config.yaml")
	for _, f := range files {
		if f.Name == "config.yaml" {
			if err := os.WriteFile(readme, []byte(f.Content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := os.Stat(readme); err != nil {
		t.Fatal("README has no config.yaml block")
	}
	doc, err := os.ReadFile("docs/privacy.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?s)<!-- statement: ([^>]*?) -->\n(.*?)<!-- /statement -->`)
	blocks := re.FindAllSubmatchIndex(doc, -1)
	if len(blocks) < 6 {
		t.Fatalf("docs/privacy.md has %d statement blocks, want the README's and one per chart example (6)", len(blocks))
	}
	out := []byte{}
	last := 0
	for _, b := range blocks {
		args := strings.Fields(string(doc[b[2]:b[3]]))
		for i, a := range args {
			if a == "README:config.yaml" {
				args[i] = readme
			}
		}
		stdout := runOK(t, append([]string{"statement"}, args...)...)
		if got := string(doc[b[4]:b[5]]); got != stdout {
			if os.Getenv("DPSURV_WRITE_STATEMENTS") != "1" {
				t.Errorf("docs/privacy.md statement for %v is stale:\n got  %q\n want %q", args, got, stdout)
			}
		}
		out = append(out, doc[last:b[4]]...)
		out = append(out, stdout...)
		last = b[5]
	}
	out = append(out, doc[last:]...)
	if os.Getenv("DPSURV_WRITE_STATEMENTS") == "1" {
		if err := os.WriteFile("docs/privacy.md", out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// every chart example has its statement
	examples, _ := filepath.Glob("deploy/helm/dpsurv/examples/*.yaml")
	for _, e := range examples {
		if !strings.Contains(string(doc), "--chart-values "+e+" -->") {
			t.Errorf("docs/privacy.md has no statement for %s", e)
		}
	}
}

// The dry run prints the statement with the guarantees; a config without a
// budget has an unbounded central loss, said so.
func TestDryRunPrintsPatientStatement(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "prf.key")
	if err := os.WriteFile(key, []byte(strings.Repeat("k", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "c.yaml")
	y := "kafka: {brokers: [\"127.0.0.1:1\"]}\ninput: {topic: in}\nschema: {time_unit: days, time_max: 1000, cohorts: [a, b, c]}\n" +
		"sanitizers: {key_file: " + key + ", time: {mechanism: te, epsilon: 0.5, window: 10}, cohort: {mechanism: rrr, epsilon: 1}}\n" +
		"output: {sanitized_topic: s, dead_letter_topic: d, fit_topic: f}\n" +
		"aggregators: [{name: km, kind: km, epsilon: 1, window: {size: 1h}}]\nledger: {topic: l, budget: {stream: 4}}\n"
	if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout := runOK(t, "run", "--config", cfg, "--dry-run")
	var got struct {
		Statement struct {
			SanitizedPerVersion  float64 `json:"sanitized_loss_per_version"`
			SanitizedTwoVersions float64 `json:"sanitized_loss_two_versions"`
			Central              []struct {
				Charged float64 `json:"charged"`
			} `json:"central"`
			CentralCap *float64 `json:"central_cap"`
			Total      *float64 `json:"total_one_version"`
		} `json:"patient_statement"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	s := got.Statement
	// TE at 0.5, W 10 (5.00, two versions 10.41) + RRR at 1 over 3 labels (1, 2.55)
	if d := s.SanitizedPerVersion - 6; d*d > 1e-12 || s.SanitizedTwoVersions < 12.9 || s.SanitizedTwoVersions > 13.0 {
		t.Errorf("sanitized loss %v per version, %v for two", s.SanitizedPerVersion, s.SanitizedTwoVersions)
	}
	if len(s.Central) != 1 || s.Central[0].Charged != 2 || s.CentralCap == nil || *s.CentralCap != 4 || s.Total == nil || math.Abs(*s.Total-10) > 1e-9 {
		t.Errorf("central %+v cap %v total %v; want charged 2 (replace-one beside the sanitized topic), cap 4, total 10", s.Central, deref(s.CentralCap), deref(s.Total))
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
