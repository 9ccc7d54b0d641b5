#!/usr/bin/env bash
# CI's dry run of every campaign file (docs/campaigns.md), so that a broken campaign fails here and not in a device
# call. For each measurements/campaigns/*.yaml: `stepcast campaign check`, `stepcast campaign predict --out` into a
# temporary folder (the committed prediction is never touched), and tools/device/campaign.sh --dry-run on that plan:
# harness processes on the CPU with a tiny config of their family when this build has the harness (else skipped),
# hf-peft ones through the executor's --dry-run (no torch).
#   tests/tools/campaign_dry_run.sh build/cli/stepcast
set -uo pipefail
exe=$(realpath "${1:?usage: campaign_dry_run.sh STEPCAST}")
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
n=0
for f in "$root"/measurements/campaigns/*.yaml; do
  [[ -e $f ]] || continue
  name=$(basename "$f" .yaml)
  n=$((n + 1))
  echo "== $name"
  if ! "$exe" campaign check "$f" || ! "$exe" campaign predict "$f" --out "$tmp/$name"; then
    status=1
    continue
  fi
  OUT="$tmp/$name/out" STEPCAST="$exe" bash "$root/tools/device/campaign.sh" "$tmp/$name/$name.plan.json" --dry-run ||
    status=1
done
echo "campaign_dry_run: $n campaign file(s), exit $status"
exit "$status"
