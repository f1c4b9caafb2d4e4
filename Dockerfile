# syntax=docker/dockerfile:1
#
# dpsurv container image: a static Go binary on a distroless base.
#
#   docker build -t dpsurv:dev \
#     --build-arg VERSION="$(cat VERSION)" --build-arg REVISION="$(git rev-parse HEAD)" \
#     --build-arg CREATED="$(date -u +%Y-%m-%dT%H:%M:%SZ)" .
#   docker run --rm dpsurv:dev run --config /etc/dpsurv/config.yaml --dry-run
#
# VERSION and REVISION are stamped into the binary (dpsurv --version, the
# dpsurv_build_info metric) and the image's OCI labels. .dockerignore keeps
# .git out of the context, so without them the binary reports the VERSION
# file of the context and revision "unknown".
#
# Base images are pinned by digest (tag kept for readers). The digests were
# not pulled on the machine that wrote this file (it has no registry
# access): they are the multi-arch index digests published for the tags,
# taken from public Dockerfiles that pin them (distroless static-debian12
# nonroot as of 2026-08; golang:1.26). Verify and update with
#   crane digest golang:1.26
#   crane digest gcr.io/distroless/static-debian12:nonroot
# (or let Renovate/Dependabot do it).
#
# tools/helm/dockercheck tests this file without a Docker engine: it parses
# it, runs the `go build` line below on the build context that .dockerignore
# leaves, and checks that the binary is static, that the final stage runs no
# command and sets a numeric non-root USER.

# ---- build stage ------------------------------------------------------------
FROM golang:1.26@sha256:3aff6657219a4d9c14e27fb1d8976c49c29fddb70ba835014f477e1c70636647 AS build
ARG VERSION
ARG REVISION
# CMD=./cmd/dpsurv-service builds the slim service image: `run` and
# `version` only, without the embedded broker, the plotting stack and the
# batch commands (18.2 MB stripped against 30.8 MB; docs/deploy.md).
ARG CMD=./cmd/dpsurv
WORKDIR /src
# Module downloads first, so that source edits do not invalidate them.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/dpsurv/dpsurv/buildinfo.version=${VERSION} -X github.com/dpsurv/dpsurv/buildinfo.revision=${REVISION}" -o /out/dpsurv ${CMD}

# ---- run stage --------------------------------------------------------------
# distroless/static: no shell, no package manager, CA certificates and tzdata
# included, uid 65532 "nonroot".
FROM gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab
ARG VERSION
ARG REVISION
ARG CREATED
# OCI image annotations (github.com/opencontainers/image-spec annotations.md).
LABEL org.opencontainers.image.title="dpsurv" \
      org.opencontainers.image.description="Differentially private survival analysis on Kafka streams" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/dpsurv/dpsurv" \
      org.opencontainers.image.url="https://github.com/dpsurv/dpsurv" \
      org.opencontainers.image.documentation="https://github.com/dpsurv/dpsurv/tree/main/docs" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.base.name="gcr.io/distroless/static-debian12:nonroot"
COPY --from=build /out/dpsurv /dpsurv
# Numeric, so that Kubernetes' runAsNonRoot can verify it.
USER 65532:65532
# Health, readiness and metrics (config http.listen).
EXPOSE 8080
# No HEALTHCHECK: the image has no shell or HTTP client to run one. The Helm
# chart probes /healthz and /readyz over HTTP instead.
ENTRYPOINT ["/dpsurv"]
