#!/usr/bin/env bash
# Runs every Go speed benchmark of docs/performance.md once, in one go, and
# the stream benchmark (CPU per record of passthrough, validator, chain and
# pipeline on the embedded broker). The fits against R are separate:
# scripts/bench_fits.sh.
# Usage: scripts/perf.sh > perf.txt   (about 10 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run XXX -benchtime 2s -bench 'BenchmarkChain' -cpu 1 ./sanitizers
go test -run XXX -benchtime 2s -bench 'BenchmarkProcess' -cpu 1 ./pipeline
go test -run XXX -benchtime 2s -bench 'BenchmarkTESample|BenchmarkPRFRecordTwoFields' ./dp
go test -run XXX -benchtime 2s -bench 'BenchmarkValidate' ./schemas
go test -run XXX -benchtime 10x -count 3 -cpu 1,2 -bench 'BenchmarkReadFileCSV' ./schemas
go test -run XXX -benchtime 10x -count 3 -cpu 1 -bench 'BenchmarkReadFileArrow' ./schemas
go test -run XXX -benchtime 10x -bench 'BenchmarkKaplanMeier1M|BenchmarkLogRank1M' ./survival
go test -run XXX -benchtime 10x -bench 'BenchmarkDPKM1M|BenchmarkHistogramAdd' ./dpfit/km
go test -run XXX -benchtime 5x -bench 'BenchmarkWeibullCompress1M|BenchmarkWeibullLadder1M|BenchmarkWeibullLSP1M' ./dpfit/weibull
go test -run XXX -benchtime 3x -bench 'BenchmarkFitDiscreteMLE50k' ./regression
go test -run XXX -benchtime 3x -cpu 1 -bench 'BenchmarkCoxEfron1M' ./regression
go test -run XXX -benchtime 3x -bench 'BenchmarkCoxEfron1M|BenchmarkFitDiscreteMLE1M' ./regression
go test -run XXX -benchtime 3x -bench 'PrivateVsExact' ./dpfit ./dpfit/weibull ./regression
go test -run XXX -benchtime 1x -bench 'BenchmarkAggregatorBytesPerRecord' ./aggregators
go test -run XXX -benchtime 1x -timeout 15m -bench 'BenchmarkReleaseLatency' ./aggregators
go test -run XXX -benchtime 1x -bench 'BenchmarkStreamCPU' ./cmd/dpsurv/cli
go run ./cmd/dpsurv bench --records 1000000 --rounds 3 --json
