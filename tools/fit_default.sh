#!/usr/bin/env bash
# The H200 default predictor, refitted from the committed whole-run measurements (docs/method.md, "The default
# predictor"): the five families' kernel tables give each category's rate (tools/kernel_efficiency.py: a prior),
# then one pooled fit over their recorded runs (stepcast calibrate --pooled) keeps the rates within 1 % of the
# tables and fits the run terms and the memory model to the runs. The adapters' rank dependence is not fitted
# here: the roofline's constants come from the lora-rank kernel tables (docs/method.md, "LoRA by rank").
#
#   tools/fit_default.sh OUT.yaml                      # the shipped file: all five families
#   tools/fit_default.sh OUT.yaml --leave-out phi-4    # leave one family out: the honest transfer check
#
# Needs build/cli/stepcast. Writes OUT.yaml and its prior, OUT.prior.yaml (the calibrate header names it).
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: tools/fit_default.sh OUT.yaml [--leave-out MODEL]" >&2; exit 2; }
[[ $# -eq 1 || ( $# -eq 3 && $2 == --leave-out ) ]] || usage
out=$1 leave=${3:-}
[[ $out == *.yaml ]] || usage
prior=${out%.yaml}.prior.yaml
records=measurements/records
# The runs: transformers 5.17 + peft 0.21, one H200, corpus seed-like-64a (measurements/campaigns/families-runs*.yaml).
campaigns=("$records/h200-families-runs" "$records/h200-families-runs-deepseek")
# LoRA r16 on what each family's runs trained (the campaign files' lora: targets).
all7=q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj
qkvo=q_proj,k_proj,v_proj,o_proj
lora=(--lora "mixtral-8x7b=$qkvo" --lora "qwen3-30b-a3b=$qkvo" --lora "llama-3-8b=$all7" --lora "qwen1.5-moe-a2.7b=$all7" --lora "gemma-2-9b=$all7"
      --lora "phi-4=qkv_proj,o_proj,gate_up_proj,down_proj"
      --lora "deepseek-v2-lite=q_proj,kv_a_proj_with_mqa,kv_b_proj,o_proj")
pick() {  # the files under $1/<dir>/ of every campaign, less the left-out family's
  local f
  for c in "${campaigns[@]}"; do
    for f in "$c"/$1/*.jsonl; do
      [[ -n $leave && $f == */"$leave"__* ]] || echo "$f"
    done
  done
}
mapfile -t tables < <(pick 'kernels/*')
# Kernel tables of two more MoE families (Mixtral-8x7B, Qwen3-30B-A3B; probes, no runs): the experts' rate is
# measured over four expert widths (docs/method.md, "Experts by tokens per expert"). Their records are not fitted.
for f in "$records"/h200-moe-kernels/kernels/*/*.jsonl; do
  [[ -n $leave && $f == */"$leave"__* ]] || tables+=("$f")
done
# Llama-3-8B and OLMo-2-7B with LoRA on all linear layers, on attention only and on the MLP only (probes, no runs):
# what LoRA's own elementwise work costs per wrapped module (docs/method.md, "Memory-bound work").
for f in "$records"/h200-lora-targets/kernels/*/*.jsonl; do
  [[ -n $leave && $f == */"$leave"-*__* ]] || tables+=("$f")
done
for m in llama-3-8b olmo-2-7b; do
  lora+=(--lora "$m-all=$all7" --lora "$m-attention=$qkvo" --lora "$m-mlp=gate_proj,up_proj,down_proj")
done
mapfile -t runs < <(pick records)
[[ ${#tables[@]} -gt 0 && ${#runs[@]} -gt 0 ]] || { echo "fit_default.sh: no kernel tables or records left" >&2; exit 2; }
# The base file supplies the terms no table measures (memory constants, the efficient kernels' rates).
python3 tools/kernel_efficiency.py --coefficients scenarios/coefficients/h200-gemma4-categories.yaml "${lora[@]}" \
  --free fixed_s --free token_kib --prior-out "$prior" "${tables[@]}"
build/cli/stepcast calibrate --pooled --dtype bfloat16 --measurements "${runs[@]}" \
  --prior "$prior" --prior-sigma 0.01 --out "$out" --force
