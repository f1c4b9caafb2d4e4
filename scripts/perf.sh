#!/usr/bin/env bash
# Runs every speed benchmark of docs/performance.md once, in one go, and the
# stream benchmark (pipeline vs passthrough on the embedded broker).
# Usage: scripts/perf.sh > perf.txt   (takes a few minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run XXX -benchtime 2s -bench 'BenchmarkChain' -cpu 1 ./sanitizers
go test -run XXX -benchtime 2s -bench 'BenchmarkProcess' -cpu 1 ./pipeline
go test -run XXX -benchtime 2s -bench 'BenchmarkTESample|BenchmarkPRFRecordTwoFields' ./dp
go test -run XXX -benchtime 2s -bench 'BenchmarkValidate' ./schemas
go test -run XXX -benchtime 10x -bench 'BenchmarkKaplanMeier1M|BenchmarkLogRank1M' ./survival
go test -run XXX -benchtime 10x -bench 'BenchmarkDPKM1M|BenchmarkHistogramAdd' ./dpfit
go test -run XXX -benchtime 5x -bench 'BenchmarkWeibullCompress1M|BenchmarkWeibullLadder1M|BenchmarkWeibullLSP1M' ./dpfit
go test -run XXX -benchtime 3x -bench 'BenchmarkFitDiscreteMLE50k' ./regression
go test -run XXX -benchtime 1x -bench 'BenchmarkAggregatorBytesPerRecord' ./aggregators
go run ./cmd/dpsurv bench --records 1000000 --rounds 3 --json
