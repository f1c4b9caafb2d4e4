# syntax=docker/dockerfile:1
#
# dpsurv container image: a static Go binary on a distroless base.
#
#   docker build -t dpsurv:dev .
#   docker run --rm dpsurv:dev run --config /etc/dpsurv/config.yaml --dry-run
#
# tools/helm/dockercheck tests this file without a Docker engine: it parses
# it, runs the `go build` line below on the build context that .dockerignore
# leaves, and checks that the binary is static, that the final stage runs no
# command and sets a numeric non-root USER.

# ---- build stage ------------------------------------------------------------
FROM golang:1.26 AS build
WORKDIR /src
# Module downloads first, so that source edits do not invalidate them.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/dpsurv ./cmd/dpsurv

# ---- run stage --------------------------------------------------------------
# distroless/static: no shell, no package manager, CA certificates and tzdata
# included, uid 65532 "nonroot". Pin it by digest in release builds.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/dpsurv /dpsurv
# Numeric, so that Kubernetes' runAsNonRoot can verify it.
USER 65532:65532
# Health, readiness and metrics (config http.listen).
EXPOSE 8080
# No HEALTHCHECK: the image has no shell or HTTP client to run one. The Helm
# chart probes /healthz and /readyz over HTTP instead.
ENTRYPOINT ["/dpsurv"]
