# dpsurv — the two commands a newcomer needs are `make demo` and `make test`.
GO ?= go
STATICCHECK_VERSION ?= v0.8.2
# The release version (VERSION is its single source of truth) and the source
# revision, stamped into the binary; the Dockerfile takes both as build args.
VERSION := $(shell cat VERSION)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X github.com/dpsurv/dpsurv/buildinfo.version=$(VERSION) -X github.com/dpsurv/dpsurv/buildinfo.revision=$(REVISION)

.PHONY: demo test gated check vet staticcheck unit stats stats-sequential stats-regression stats-docs helm build bench figures sbom

demo:
	$(GO) run ./cmd/dpsurv demo

# figures: the figures of docs/figures.md, redrawn into docs/img.
figures:
	scripts/figures.sh

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/dpsurv ./cmd/dpsurv

# sbom: a CycloneDX 1.5 JSON bill of materials of the module graph
# (go list -m -json all; components linked into cmd/dpsurv are scope
# "required", the rest "optional"), written to bin/dpsurv.cdx.json.
sbom:
	@mkdir -p bin
	$(GO) run ./cmd/dpsurv-sbom -version $(VERSION) -o bin/dpsurv.cdx.json

# test: formatting, vet, staticcheck, every package under the race detector,
# the long statistical studies (without -race: pure number crunching), and
# the Helm chart tests (a separate module under tools/helm). gofmt and vet
# run first and alone: vet compiles every package, and the lanes after it
# find that work in the build cache instead of compiling the same packages
# at the same moment in two processes. Then two lanes run side by side so
# that both cores stay busy to the end: staticcheck, unit and helm one
# after another (gated), beside the three stats targets (pure computation,
# the longest first) run at the lowest CPU priority (STATS_NICE): they take
# whatever CPU the unit tests, whose broker round trips have deadlines,
# leave idle.
test:
	@$(MAKE) --no-print-directory vet
	@$(MAKE) --no-print-directory -j4 --output-sync=target STATS_NICE='nice -n 19' gated stats-sequential stats-regression stats-docs

gated:
	@$(MAKE) --no-print-directory staticcheck
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory helm

check: vet staticcheck

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

staticcheck:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# SEQUENTIAL: the number-crunching packages run once, without -race, in
# stats: the race detector slows them tenfold and has nothing to find where
# no goroutine starts. Their code and tests start none (internal/archtest
# checks it), except the packages in RACED: PKG=TEST|TEST names the tests
# that run the package's concurrent code, and those also run under -race
# in unit.
SEQUENTIAL := cmd/dpsurv-eval/inference cmd/dpsurv-eval/eval dpfit/weibull dpfit/km dp plots dpfit regression
SEQUENTIAL_RE := /($(subst $(eval) ,|,$(SEQUENTIAL)))$$
RACED := dpfit/weibull=TestWeibullIntervalEarlyAcceptance regression=TestCoxEvalWorkers|TestCoxManyRunsScan|TestParallelRepsDeterministic|TestNewtonCompactSums|TestFitDiscreteGroupedMatchesRecords

# unit: every other package under -race, and the RACED tests.
unit:
	$(GO) test -vet=off -race -count=1 -timeout 30m $$($(GO) list ./... | grep -v -E '$(SEQUENTIAL_RE)')
	$(foreach r,$(RACED),$(GO) test -vet=off -race -count=1 -timeout 20m -run '^($(word 2,$(subst =, ,$(r))))$$' ./$(word 1,$(subst =, ,$(r)))/ &&) true

# stats: the sequential packages without -race, their coverage and size
# studies at full size (testtier.Long: not -short, not -race), regression
# (whose noisy Newton coverage study alone takes minutes) beside them, and
# the documented commands of the long tier (stats-docs), two at a time
# (each output kept whole).
# unit and stats run -vet=off: check has vetted every package.
stats:
	$(MAKE) --no-print-directory -j2 --output-sync=target stats-sequential stats-regression stats-docs

stats-sequential:
	$(STATS_NICE) $(GO) test -vet=off -count=1 -timeout 60m $(addprefix ./,$(addsuffix /,$(filter-out regression,$(SEQUENTIAL))))

stats-regression:
	$(STATS_NICE) $(GO) test -vet=off -count=1 -timeout 60m ./regression/

# stats-docs: the documented commands marked `full` (regenerations,
# benchmarks, a fuzzing run), which internal/doccmd runs only without
# -short and -race: their binaries are never race-built.
stats-docs:
	$(STATS_NICE) $(GO) test -vet=off -count=1 -timeout 60m -run '^TestDocumentedCommands$$' ./internal/doccmd/

helm:
	@if [ -f tools/helm/go.mod ]; then cd tools/helm && $(GO) test -count=1 -timeout 20m ./...; fi

bench:
	$(GO) test -run XXX -bench . -benchtime 2s ./sanitizers ./dp ./schemas
	$(GO) run ./cmd/dpsurv bench
