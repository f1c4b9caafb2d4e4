package cli

import (
	"context"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/kafkaconn"
)

// stringsFlag collects a repeated flag.
type stringsFlag []string

func (s *stringsFlag) String() string     { return strings.Join(*s, ",") }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }

// runStatement prints the per-patient privacy statement of a configuration:
// a service config (--config) or a Helm chart's values (--chart-values,
// repeated, merged as Helm merges them: maps key by key, the rest
// replaced; the statement reads their `config:`).
func runStatement(_ context.Context, env Env, args []string) error {
	fs := newFlags("statement", env)
	path := fs.String("config", "", "YAML config file")
	var values stringsFlag
	fs.Var(&values, "chart-values", "Helm values file (repeat: the chart's values.yaml, then an example)")
	asJSON := fs.Bool("json", false, "print JSON instead of Markdown")
	if err := parse(fs, args); err != nil {
		return err
	}
	if (*path == "") == (len(values) == 0) {
		fmt.Fprintln(env.Stderr, "dpsurv statement: give --config FILE or --chart-values FILE [--chart-values FILE]")
		return errUsage
	}
	var cfg app.Config
	var err error
	if *path != "" {
		cfg, err = app.LoadConfig(*path)
	} else {
		cfg, err = chartConfig(values)
	}
	if err != nil {
		return err
	}
	st, err := app.Statement(cfg)
	if err != nil {
		return fmt.Errorf("statement: %w", err)
	}
	if *asJSON {
		return printJSON(env.Stdout, st)
	}
	fmt.Fprint(env.Stdout, st.Markdown())
	return nil
}

// chartConfig merges the values files and parses their config: section
// (the chart supplies the secret file paths, so they are filled in).
func chartConfig(files []string) (app.Config, error) {
	var merged map[string]any
	for _, f := range files {
		b, err := kafkaconn.ReadRegularFile(f, app.MaxConfigBytes, nil)
		if err != nil {
			return app.Config{}, fmt.Errorf("chart values: %w", err)
		}
		var v map[string]any
		if err := yaml.Unmarshal(b, &v); err != nil {
			return app.Config{}, fmt.Errorf("chart values %s: %w", f, err)
		}
		merged = mergeValues(merged, v)
	}
	c, _ := merged["config"].(map[string]any)
	if c == nil {
		return app.Config{}, fmt.Errorf("chart values: no config section")
	}
	san, _ := c["sanitizers"].(map[string]any)
	if san == nil {
		san = map[string]any{}
		c["sanitizers"] = san
	}
	// The chart points these at its mounted Secrets (templates/configmap.yaml);
	// the statement reads no secret.
	san["key_file"] = "/etc/dpsurv/secrets/prf.key"
	if k, _ := c["kafka"].(map[string]any); k != nil {
		if sasl, _ := k["sasl"].(map[string]any); sasl != nil {
			if m, _ := sasl["mechanism"].(string); m != "" {
				sasl["password_file"] = "/etc/dpsurv/kafka/password"
			}
		}
	}
	b, err := yaml.Marshal(c)
	if err != nil {
		return app.Config{}, err
	}
	cfg, err := app.ParseConfig(b)
	if err != nil {
		return app.Config{}, fmt.Errorf("chart values: %w", err)
	}
	return cfg, nil
}

// mergeValues merges b over a as Helm merges values files.
func mergeValues(a, b map[string]any) map[string]any {
	if a == nil {
		a = map[string]any{}
	}
	for k, v := range b {
		if bm, ok := v.(map[string]any); ok {
			if am, ok := a[k].(map[string]any); ok {
				a[k] = mergeValues(am, bm)
				continue
			}
		}
		a[k] = v
	}
	return a
}
