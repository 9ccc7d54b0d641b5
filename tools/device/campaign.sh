#!/usr/bin/env bash
# The one device runner of measurement campaigns (docs/campaigns.md): runs every process of a device plan
# (NAME.plan.json, written by `stepcast campaign predict`) in a fresh process under its time limit (`timeout`),
# keeps going past a failed or timed-out process (records are appended as they are measured, so a killed one keeps
# what it measured), and packs everything into ONE archive, $OUT/NAME.tar.gz: records/<process>.jsonl,
# kernels/<process>/, logs/<process>.log, items.tsv (process, stack, exit code, seconds, status), gpu.csv and
# nvidia-smi.txt, the plan and console.log; the console log is also $OUT/NAME.log.
#   harness processes: `stepcast measure MEASURE_ARGS --out ... --kernel-dir ...` (a run reads the plan's
#                      corpus_lengths on standard input); the tree is built (tools/device/build.sh) only when the
#                      plan has one
#   hf-peft processes: python3 tools/device/hf_campaign.py PLAN OUTDIR --only ID (the transformers + peft
#                      executor; $HF_EXECUTOR names another, e.g. a test's stand-in)
# The registration gate is `stepcast campaign ready` run HERE, before the device call (docs/campaigns.md): the
# device's copy of the tree may carry a stale .git, so this runner never asks git; it prints the plan's
# stepcast_commit (the stepcast that wrote the prediction) into the console log.
#
#   tools/device/campaign.sh measurements/predictions/NAME.plan.json            on the GPU machine
#   tools/device/campaign.sh PLAN.json --dry-run   here: harness processes on the CPU with a tiny config of the
#       family (the plan's dry_run_args; needs a harness build, else skipped), hf-peft ones through the executor's
#       --dry-run; no build ($STEPCAST or build/cli/stepcast)
#   tools/device/campaign.sh PLAN.json --only ITEM[,ITEM...]   only the processes of these campaign items (a campaign
#       longer than one device command runs in several; total_limit_s then bounds each command)
# Exit: 0 every process ran, 1 one failed, timed out or was skipped for time, 2 a bad plan.
set -uo pipefail
cd "$(dirname "$0")/../.."
plan=${1:?usage: tools/device/campaign.sh PLAN.json [--dry-run] [--only ITEM,...]}
shift
dry=0
only=""
while (( $# )); do
  case $1 in
    --dry-run) dry=1 ;;
    --only) only=${2:?--only needs item ids}; shift ;;
    *) echo "campaign.sh: unknown argument $1"; exit 2 ;;
  esac
  shift
done
OUT=${OUT:-/tmp/out}
executor=${HF_EXECUTOR:-tools/device/hf_campaign.py}
mkdir -p "$OUT"
work=$(mktemp -d)
mkdir -p "$work/records" "$work/kernels" "$work/logs" "$work/args"
exec 3>&1 4>&2 > >(tee "$work/console.log") 2>&1
tee_pid=$!
t0=$(date +%s)

# The plan, read once: one line per process (id, stack, limit, allocator, records file, whether it runs a corpus)
# and its measure arguments NUL-separated in args/<n>.measure (args/<n>.dry for a dry run), a run's corpus in
# args/<n>.corpus. The plan holds every decision; this only unpacks it.
if ! python3 - "$plan" "$work/args" >"$work/processes.tsv" <<'EOF'; then
import json, math, sys
plan = json.load(open(sys.argv[1]))
assert plan.get("schema_version") == 1, "schema_version must be 1"
print(plan["campaign"], plan["campaign_file"], math.ceil(plan["total_limit_s"]), sep="\t",
      file=open(sys.argv[2] + "/campaign", "w"))
for n, item in enumerate(plan["items"]):
    for key, name in (("measure_args", "measure"), ("dry_run_args", "dry")):
        if key in item:
            open("%s/%d.%s" % (sys.argv[2], n, name), "w").write("\0".join(item[key]) + "\0")
    run = item.get("run")
    if run is not None:
        open("%s/%d.corpus" % (sys.argv[2], n), "w").write("".join("%d\n" % x for x in run["corpus_lengths"]))
    print(n, item["id"], item["stack"], math.ceil(item["time_limit_s"]), item.get("allocator", "default"), item["records"],
          int(run is not None), sep="\t")
EOF
  echo "campaign.sh: cannot read the plan $plan"; exit 2
fi
IFS=$'\t' read -r name campaign_file total_limit <"$work/args/campaign"
cp "$plan" "$work/plan.json"

stepcast=${STEPCAST:-build/cli/stepcast}
# The console log is complete once tee has seen the end of it: back to the real stdout first.
pack() {
  exec 1>&3 2>&4
  wait "$tee_pid" 2>/dev/null
  tar czf "$OUT/$name.tar.gz" -C "$work" .
  cp "$work/console.log" "$OUT/$name.log"
  echo "campaign.sh: $OUT/$name.tar.gz ($(tar tzf "$OUT/$name.tar.gz" | grep -c 'records/.*jsonl$') records files)"
}

registered=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("stepcast_commit", "?"))' "$plan")
echo "campaign $name: predicted by stepcast $registered (registration is checked before the call: stepcast campaign ready)"

if (( dry )); then
  echo "dry run of $name: $(wc -l <"$work/processes.tsv") processes, nothing built"
  measure_ok=0
  [[ -x ${STEPCAST_MEASURE_EXE:-$(dirname "$stepcast")/stepcast-measure} ]] && measure_ok=1
elif cut -f3 "$work/processes.tsv" | grep -qx harness; then
  stepcast=$(LOG_DIR="$work/logs" tools/device/build.sh | tail -1) || { echo "campaign.sh: build failed"; pack; exit 1; }
  echo "built $stepcast in $(( $(date +%s) - t0 )) s"
fi
if (( !dry )); then
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,memory.used --format=csv \
    >"$work/gpu.csv" 2>&1
  nvidia-smi -q >"$work/nvidia-smi.txt" 2>&1
fi

status=0
printf 'process\tstack\trc\tseconds\tstatus\n' >"$work/items.tsv"
while IFS=$'\t' read -r n id stack limit allocator records has_run; do
  if [[ -n $only ]] && ! [[ ",$only," == *",${id%%/*},"* ]]; then continue; fi
  log="$work/logs/${records%.jsonl}.log"
  left=$(( total_limit - ($(date +%s) - t0) ))
  secs=$limit
  (( secs > left )) && secs=$left
  started=$(date +%s)
  if (( secs <= 0 )); then
    rc=124; state="skipped: total_limit_s spent"
  elif [[ $stack == hf-peft ]]; then
    flags=(--only "$id"); (( dry )) && flags+=(--dry-run)
    alloc=default; [[ $allocator == expandable-segments ]] && alloc=expandable_segments:True
    if [[ $alloc == default ]]; then
      timeout -k 30 "$secs" python3 "$executor" "$plan" "$work/records" "${flags[@]}" >"$log" 2>&1 </dev/null
    else
      PYTORCH_CUDA_ALLOC_CONF=$alloc timeout -k 30 "$secs" python3 "$executor" "$plan" "$work/records" "${flags[@]}" \
        >"$log" 2>&1 </dev/null
    fi
    rc=$?; state=ran
  else
    kind=measure; (( dry )) && kind=dry
    if [[ ! -e $work/args/$n.$kind ]]; then
      rc=1; state="no dry_run_args: no tiny config of this model_type under tests/data/configs (dry_run_config)"
    elif (( dry && !measure_ok )); then
      rc=0; state="skipped: no harness build here (-DSTEPCAST_HARNESS=ON)"
    else
      mapfile -d '' args <"$work/args/$n.$kind"
      input=/dev/null; (( has_run && !dry )) && input=$work/args/$n.corpus
      alloc_env=(); [[ $allocator == expandable-segments ]] && alloc_env=(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)
      env "${alloc_env[@]}" timeout -k 30 "$secs" "$stepcast" measure "${args[@]}" --out "$work/records/$records" \
        --kernel-dir "$work/kernels/${records%.jsonl}" >"$log" 2>&1 <"$input"
      rc=$?; state=ran
    fi
  fi
  # timeout: 124 after SIGTERM, 137 when the process ignored it and was killed 30 s later.
  (( rc == 124 || rc == 137 )) && [[ $state == ran ]] && state="timed out after $secs s (records so far kept)"
  (( rc != 0 )) && status=1
  seconds=$(( $(date +%s) - started ))
  printf '%s\t%s\t%s\t%s\t%s\n' "$id" "$stack" "$rc" "$seconds" "$state" >>"$work/items.tsv"
  echo "== $id ($stack): rc=$rc in $seconds s, $state"
  [[ -e $log ]] && tail -5 "$log"
done <"$work/processes.tsv"

echo "campaign $name done in $(( $(date +%s) - t0 )) s, exit $status"
pack
rm -rf "$work"
exit "$status"
