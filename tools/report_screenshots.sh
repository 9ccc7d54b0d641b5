#!/usr/bin/env bash
# Renders `stepcast plan --report` for the README's scenario (a 6 h run) and for a 100-sample corpus of it
# (a ~40 s run) in headless Chromium at 760 and 1400 px wide, into docs/images/. Usage (after building):
#   tools/report_screenshots.sh [build/cli/stepcast]
# Needs Debian's chromium (tools/setup.sh installs it). The PNGs are what docs/planner.md shows.
set -euo pipefail
cd "$(dirname "$0")/.."
stepcast="${1:-build/cli/stepcast}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
out=docs/images
mkdir -p "$out"
# The first 100 samples of the shipped corpus: a run short enough to read in seconds.
head -n 101 scenarios/corpora/seed-like-20k.csv > "$work/short.csv"
"$stepcast" plan scenarios/h200-gemma-4-26b-a4b.yaml --report "$work/plan.html" > /dev/null
"$stepcast" plan scenarios/h200-gemma-4-26b-a4b.yaml --corpus "$work/short.csv" --top 5 --report "$work/short.html" > /dev/null
shot() {  # html width height png
  chromium --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update \
    --disable-sync --no-first-run --hide-scrollbars --user-data-dir="$(mktemp -d -p "$work")" \
    --screenshot="$4" --window-size="$2,$3" "file://$1" 2> /dev/null
}
shot "$work/plan.html" 760 2700 "$out/plan-report-760.png"
shot "$work/plan.html" 1400 2100 "$out/plan-report-1400.png"
shot "$work/short.html" 760 1000 "$out/plan-report-short-760.png"
ls -l "$out"/plan-report-*.png
