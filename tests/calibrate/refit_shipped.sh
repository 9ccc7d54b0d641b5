#!/bin/bash
# Refits the measurements behind each shipped coefficient file (scenarios/coefficients/, the commands of their
# commit messages, plus --prior none / robust-loss / validate variants) with one stepcast build, into OUTDIR,
# with dates removed. Run it with two builds and diff the folders to show a change to the fit changes nothing:
#   tests/calibrate/refit_shipped.sh OLD/build/cli/stepcast /tmp/before
#   tests/calibrate/refit_shipped.sh build/cli/stepcast /tmp/after
#   diff -r /tmp/before /tmp/after
# Not a ctest test: it compares two builds (the golden tests in this folder pin the shipped numbers).
set -u
B=$(realpath "$1"); O=$(realpath -m "$2"); mkdir -p "$O"
cd "$(dirname "$0")/../.." || exit 2
M=measurements/records
HF="$M/h200-hf-peft-host.jsonl $M/h200-hf-peft-host-m3.jsonl $M/h200-hf-peft-host-m4.jsonl $M/h200-hf-peft.jsonl
    $M/h200-hf-peft-runs.jsonl $M/h200-hf-peft-runs-m3.jsonl $M/h200-hf-peft-runs-m4.jsonl $M/h200-hf-peft-jit.jsonl"
GQA=$M/h200-gemma-4-26b-a4b-gqa-expand.jsonl
# The 6 records the shipped sdpa-auto/grouped/gqa-expand file was calibrated on (1x1024, 1x16384, 4x2048, 2x8192,
# 2x4096 padded 50 %, 1x8192 padded 25 %).
GQA6=$O/gqa6.jsonl
sed -n '5p;6p;8p;11p;13p;18p' "$GQA" > "$GQA6"
G="--model gemma-4-26b-a4b"
run() { local name=$1; shift; "$B" "$@" > "$O/$name.txt" 2>&1; echo "rc=$?" >> "$O/$name.txt"; }
# Full double precision: the same fit as JSON (nlohmann writes round-trip doubles), date removed.
runj() { local name=$1; shift; "$B" "$@" --format json 2>&1 | sed -E 's/"date": ?"[^"]*",?//' > "$O/$name.json"; }
run hf-peft calibrate --measurements $HF --prior none --out "$O/hf-peft.yaml" --force
runj hf-peft calibrate --measurements $HF --prior none
run seed calibrate $G --measurements $M/seed-sm120.jsonl --out "$O/seed.yaml" --force
runj seed calibrate $G --measurements $M/seed-sm120.jsonl
run seed-none calibrate $G --measurements $M/seed-sm120.jsonl --prior none --out "$O/seed-none.yaml" --force
runj seed-none calibrate $G --measurements $M/seed-sm120.jsonl --prior none
run gqa6 calibrate $G --tier sdpa-auto/grouped/gqa-expand --measurements "$GQA6" --out "$O/gqa6.yaml" --force
run gqa6-none calibrate $G --tier sdpa-auto/grouped/gqa-expand --measurements "$GQA6" --prior none --out "$O/gqa6-none.yaml" --force
runj gqa6-none calibrate $G --tier sdpa-auto/grouped/gqa-expand --measurements "$GQA6" --prior none
run gqa21-prior calibrate $G --measurements $GQA --out "$O/gqa21-prior.yaml" --force
runj gqa21-prior calibrate $G --measurements $GQA
run gqa21-huber calibrate $G --measurements $GQA --prior none --loss huber --residuals absolute --out "$O/gqa21-huber.yaml" --force
run harness-host calibrate $G --measurements $M/h200-harness-host.jsonl --prior none --out "$O/harness-host.yaml" --force
run val-gqa validate --measurements $GQA --prior none
runj val-gqa validate --measurements $GQA --prior none
run val-seed validate --measurements $M/seed-sm120.jsonl
# Paths that name the build's own checkout or OUTDIR, not the fit.
for f in "$O"/*.yaml "$O"/*.txt "$O"/*.json; do
  sed -i -E '/^date:/d; s#[^ "]*/scenarios/coefficients/#scenarios/coefficients/#g' "$f"
  sed -i "s#$O/#OUT/#g" "$f"
done
