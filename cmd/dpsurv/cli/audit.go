package cli

import (
	"context"
	"flag"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/dpsurv/dpsurv/app"
	"github.com/dpsurv/dpsurv/audit"
	"github.com/dpsurv/dpsurv/baselines"
	"github.com/dpsurv/dpsurv/dp"
	"github.com/dpsurv/dpsurv/sanitizers"
	"github.com/dpsurv/dpsurv/schemas"
)

// runAudit is `dpsurv audit --original F --sanitized G [--json]`: the
// cohort inference attack of paper 001 and the utility measures (package
// audit). It reads the original data, so its output is an auditor's report,
// not a DP release.
func runAudit(ctx context.Context, env Env, args []string) error {
	fs := newFlags("audit", env)
	original := fs.String("original", "", "original file (.csv, .arrow, .jsonl)")
	sanitized := fs.String("sanitized", "", "sanitized file, as written by dpsurv sanitize or a baseline")
	asJSON := fs.Bool("json", false, "print one JSON object instead of tables")
	cohorts := fs.String("cohorts", "", "cohort label list, comma separated (default: the labels of the original file)")
	timeUnit := fs.String("time-unit", "days", "time unit")
	timeMax := fs.Float64("time-max", 0, "public time bound T_max the sanitizer used (0: unknown, no clamping modelled)")
	mech := fs.String("mechanism", "", "mechanism the adversary assumes: te, binsup, dptime or none (default: from an Arrow file's metadata, else te when --te-epsilon is set)")
	teEps := fs.Float64("te-epsilon", 0, "TE-Sanitizer epsilon used to sanitize")
	teW := fs.Int("te-window", 10, "TE-Sanitizer window W used to sanitize")
	timeBin := fs.Int64("time-bin", 1, "bin width of BinSup / DPTime")
	keyFile := fs.String("key-file", "", "optional PRF key: join records by recomputing pseudonyms and report the per-record MAE")
	seed := fs.Uint64("seed", 0, "seed the resampling for a reproducible report (0: secure random source)")
	perCohort := fs.Int("per-cohort", 100, "targets drawn per cohort for each balanced test set")
	resamples := fs.Int("resamples", 100, "number of test sets")
	quantile := fs.Float64("quantile", 0.95, "assignment threshold: score at or above this quantile of the test set")
	klBin := fs.Int64("kl-bin", 1, "bin width of the KL divergence histograms, in time units")
	cf := addColumnFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *original == "" || *sanitized == "" {
		fmt.Fprintln(env.Stderr, "dpsurv audit: --original and --sanitized are required")
		return errUsage
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	cols := cf.columns()
	labels := splitList(*cohorts)
	if len(labels) == 0 {
		var err error
		if labels, err = audit.ScanLabels(*original, cols.Cohort); err != nil {
			return err
		}
	}
	spec := schemas.Spec{Cohorts: labels, TimeUnit: *timeUnit, Covariates: splitList(*cf.covariates), Columns: cols}
	tmax := int64(0)
	if *timeMax > 0 {
		tmax = int64(math.Floor(*timeMax))
	}

	// Mechanism parameters: flags first, then the Arrow schema metadata.
	md := map[string]string{}
	if f, err := schemas.FormatFromPath(*sanitized); err == nil && (f == schemas.FormatArrowFile || f == schemas.FormatArrowStream) {
		fmd, _, err := audit.ArrowFieldMetadata(*sanitized, cols.Time)
		if err != nil {
			return err
		}
		md = fmd
	} else if sd, ok, err := schemas.ReadSidecar(*sanitized); err != nil {
		return err
	} else if ok && sd.Fields[cols.Time] != nil {
		md = sd.Fields[cols.Time] // a CSV written by dpsurv sanitize: its metadata file
	}

	kind := *mech
	if kind == "" {
		switch md[schemas.MetaMechanism] {
		case sanitizers.MechTE:
			kind = "te"
		case baselines.MethodBinSup, baselines.MethodDPTime:
			kind = md[schemas.MetaMechanism]
		default:
			if *teEps > 0 {
				kind = "te"
			}
		}
	}
	fromMeta := func(flagName, key string) (string, bool) {
		if set[flagName] {
			return "", false
		}
		v, ok := md[key]
		return v, ok
	}
	var kernel audit.Kernel
	switch kind {
	case "te":
		eps, w := *teEps, *teW
		if v, ok := fromMeta("te-epsilon", schemas.MetaEpsilon); ok {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return fmt.Errorf("sanitized file metadata %s: %w", schemas.MetaEpsilon, err)
			}
			eps = x
		}
		if v, ok := fromMeta("te-window", schemas.MetaWindow); ok {
			x, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("sanitized file metadata %s: %w", schemas.MetaWindow, err)
			}
			w = x
		}
		if !(eps > 0) {
			fmt.Fprintln(env.Stderr, "dpsurv audit: --te-epsilon is required for a TE-Sanitizer release in CSV")
			return errUsage
		}
		k, err := audit.NewTEKernel(eps, w, tmax)
		if err != nil {
			return err
		}
		kernel = k
	case baselines.MethodBinSup, baselines.MethodDPTime:
		width := *timeBin
		if v, ok := fromMeta("time-bin", baselines.MetaTimeBin); ok {
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("sanitized file metadata %s: %w", baselines.MetaTimeBin, err)
			}
			width = x
		}
		k, err := audit.NewBinKernel(width, tmax, fmt.Sprintf("%s(time_bin=%d)", kind, width))
		if err != nil {
			return err
		}
		kernel = k
	case "none":
		kernel = audit.IdentityKernel{}
	case "":
		fmt.Fprintln(env.Stderr, "dpsurv audit: say which mechanism produced the sanitized file (--mechanism, or --te-epsilon for TE-Sanitizer)")
		return errUsage
	default:
		fmt.Fprintf(env.Stderr, "dpsurv audit: unknown --mechanism %q (want te, binsup, dptime or none)\n", kind)
		return errUsage
	}

	var key []byte
	if *keyFile != "" {
		k, err := app.ReadKey(*keyFile)
		if err != nil {
			return err
		}
		key = k
	}
	orig, ost, err := audit.ReadFile(*original, spec)
	if err != nil {
		return err
	}
	san, sst, err := audit.ReadFile(*sanitized, spec)
	if err != nil {
		return err
	}
	for _, x := range []struct {
		name string
		st   audit.ReadStats
		n    int
	}{{*original, ost, orig.Len()}, {*sanitized, sst, san.Len()}} {
		if x.st.DeadLettered > 0 {
			fmt.Fprintf(env.Stderr, "dpsurv audit: %s: %d rows rejected (%s)\n", filepath.Base(x.name), x.st.DeadLettered, reasons(x.st.Reasons))
		}
		if x.n == 0 {
			return fmt.Errorf("audit %s: no usable records (the audit needs id, time, event and cohort columns; "+
				"a TE-only release keeps the cohort with dpsurv sanitize --public event,cohort)", filepath.Base(x.name))
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	src := dp.NewSecureSource()
	if *seed != 0 {
		src = dp.NewSeededSource(*seed)
	}
	rep, err := audit.Run(orig, san, audit.Config{
		Kernel:  kernel,
		Attack:  audit.AttackOptions{PerCohort: *perCohort, Resamples: *resamples, Quantile: *quantile},
		Utility: audit.UtilityOptions{KLBin: *klBin, TimeMax: tmax},
		Key:     key,
	}, src)
	if err != nil {
		return err
	}
	if *asJSON {
		return rep.WriteJSON(env.Stdout)
	}
	return rep.WriteText(env.Stdout)
}

func reasons(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
