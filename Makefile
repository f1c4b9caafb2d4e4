# dpsurv — the two commands a newcomer needs are `make demo` and `make test`.
GO ?= go
STATICCHECK_VERSION ?= v0.8.2

.PHONY: demo test check unit stats helm build bench

demo:
	$(GO) run ./cmd/dpsurv demo

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/dpsurv ./cmd/dpsurv

# test: formatting, vet, staticcheck, every package under the race detector,
# the long statistical studies (without -race: pure number crunching), and
# the Helm chart tests (a separate module under tools/helm).
test: check unit stats helm

check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# unit: every package under -race but the simulation studies, which have
# no concurrency to check and run tenfold slower under -race (stats).
unit:
	$(GO) test -race -count=1 -timeout 20m $$($(GO) list ./... | grep -v /internal/inference$$)

# stats: the coverage and size studies at full size (testtier.Long: not
# -short, not -race).
stats:
	$(GO) test -count=1 -timeout 30m ./internal/inference/
	$(GO) test -count=1 -timeout 30m -run 'CoverageStudy' ./regression/

helm:
	@if [ -f tools/helm/go.mod ]; then cd tools/helm && $(GO) test -count=1 -timeout 20m ./...; fi

bench:
	$(GO) test -run XXX -bench . -benchtime 2s ./sanitizers ./dp ./schemas
	$(GO) run ./cmd/dpsurv bench
