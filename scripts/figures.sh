#!/usr/bin/env bash
# Regenerates the figures of docs/figures.md in docs/img (issue 19): every
# one is drawn by a dpsurv command, exactly as a user would draw it.
# Private figures are a fresh release each time (the noise comes from a
# cryptographic source; no private path takes a seed), so they change
# from run to run within their intervals.
#
#   scripts/figures.sh            # or: make figures
#
# Builds dpsurv from this checkout (an older dpsurv on PATH would draw
# older figures); DPSURV=path/to/dpsurv uses that binary instead.
set -euo pipefail
cd "$(dirname "$0")/.."
out=docs/img
mkdir -p "$out"
if [ -n "${DPSURV:-}" ]; then
  dpsurv=$DPSURV
else
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  go build -o "$tmp/dpsurv" ./cmd/dpsurv
  dpsurv="$tmp/dpsurv"
fi
flchain=1,2,3,4,5,6,7,8,9,10

# Kaplan–Meier: the non-private reference and private releases.
$dpsurv fit km --input data/lung_tte.csv --epsilon inf --plot "$out/fig_km_lung_reference.png" >/dev/null
$dpsurv fit km --input data/lung_tte.csv --cohorts 1,2 --epsilon 1 --time-max 1100 --plot "$out/fig_km_lung_private.png" >/dev/null
$dpsurv fit km --input data/lung_tte.csv --cohorts 1,2 --epsilon 0.1 --time-max 1100 --plot "$out/fig_km_lung_private_eps0.1.png" >/dev/null
$dpsurv fit km --input data/flchain_tte.csv --epsilon inf --cohorts $flchain --plot "$out/fig_km_flchain_reference.png" >/dev/null
$dpsurv fit km --input data/flchain_tte.csv --cohorts $flchain --epsilon 1 --time-max 5500 --plot "$out/fig_km_flchain_private.png" >/dev/null

# Weibull over Kaplan–Meier (non-private) and a private Weibull release.
$dpsurv fit weibull --input data/lung_tte.csv --cohorts 1,2 --cohort 1 --epsilon inf --plot "$out/fig_weibull_lung_reference.png" >/dev/null
$dpsurv fit weibull --input data/flchain_tte.csv --cohorts $flchain --epsilon 1 --time-max 5500 --plot "$out/fig_weibull_flchain_private.png" >/dev/null

# The discrete-time model's survival at the covariates' centre over KM.
$dpsurv fit discrete --input data/lung_tte.csv --cohorts 1,2 --covariates age,ph.ecog --centre 62,1 --scale 40,4 --epsilon inf --plot "$out/fig_discrete_lung_reference.png" >/dev/null

# The demo's two figures (synthetic cohort A, B, C).
demo=$(mktemp -d)
$dpsurv demo --out-dir "$demo" >/dev/null
cp "$demo/km_sanitized.png" "$out/fig_demo_km_sanitized.png"
cp "$demo/km_release.png" "$out/fig_demo_km_release.png"
rm -rf "$demo"
echo "figures written to $out"
