#!/usr/bin/env bash
# Profile hybrid vs dense (same size) on one CUDA GPU at 1K..32K tokens: prints the GPU's name,
# the T_prefill / S_kv / Phi_kv table with the dense/hybrid Phi_kv ratio, and writes both
# profiles as TOML. Usage (repo root or anywhere):
#   benchmarks/gpu_profile.sh                 # medium (~0.25B params), bf16
#   SIZE=large OUT=out/gpu benchmarks/gpu_profile.sh
# Needs torch with CUDA (pip install 'prfaas-tui[torch]'). Runtime on an H200: well under 2 min.
set -euo pipefail

cd "$(dirname "$0")/.."
SIZE="${SIZE:-medium}"
LENGTHS="${LENGTHS:-1K,2K,4K,8K,16K,32K}"
REPEATS="${REPEATS:-5}"
OUT="${OUT:-out/gpu_profile}"
PYTHON="${PYTHON:-python}"

nvidia-smi --query-gpu=name --format=csv
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export COLUMNS="${COLUMNS:-120}"
"$PYTHON" -m prfaas_tui.commands.profile --backend torch --device cuda \
    --model "hybrid-$SIZE" --compare "dense-$SIZE" --lengths "$LENGTHS" \
    --repeats "$REPEATS" --warmup 2 \
    --out "$OUT/hybrid-$SIZE.toml" --compare-out "$OUT/dense-$SIZE.toml"
