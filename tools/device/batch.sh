#!/usr/bin/env bash
# One device call, several device scripts: builds once (tools/device/build.sh; each script's own build then
# finds /tmp/sc-full up to date), runs each script with OUT=$OUT/<script name>, and packs every script's
# folder into one tar file, so that nothing is left out (the device returns at most 8 files). The console
# tail of each script also goes to $OUT/<name>.log.
#
# Usage: tools/device/batch.sh [--dry-run] SCRIPT[:ARGS] ...   e.g. tools/device/batch.sh packing2.sh transfer3.sh
#   a script is a name under tools/device/; ARGS (comma-separated) are passed to it. --dry-run builds
#   nothing and passes --dry-run to every script (their CPU mode on this machine's build).
# Unpack here with: tar xzf <name>.tar.gz -C <folder>
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
t0=$(date +%s)
DRY=()
[[ "${1:-}" == "--dry-run" ]] && { DRY=(--dry-run); shift; }
if (( ${#DRY[@]} )); then
  echo "dry run: no build"
elif ! LOG_DIR="$OUT" tools/device/build.sh >/dev/null; then
  echo "build failed"; tail -40 "$OUT/build-full.log"; exit 1
fi
echo "built in $(( $(date +%s) - t0 )) s (cold compile of the tree, not part of any figure)"
status=0
for spec in "$@"; do
  script=${spec%%:*}
  args=()
  [[ $spec == *:* ]] && IFS=, read -ra args <<<"${spec#*:}"
  name=${script%.sh}
  dir=/tmp/batch-out/$name
  rm -rf "$dir"; mkdir -p "$dir"
  t1=$(date +%s)
  OUT=$dir bash "tools/device/$script" "${DRY[@]}" "${args[@]}" >"$dir/console.log" 2>&1
  rc=$?
  (( rc == 0 )) || status=1
  echo "== $script ${args[*]}: rc=$rc in $(( $(date +%s) - t1 )) s"
  tail -25 "$dir/console.log"
  tail -200 "$dir/console.log" >"$OUT/$name.log"
  tar czf "$OUT/$name.tar.gz" -C /tmp/batch-out "$name"
done
ls -la "$OUT"
echo "batch done in $(( $(date +%s) - t0 )) s"
exit $status
