#!/usr/bin/env bash
# One prepared GPU run of the torch backend (one CUDA GPU, bf16, batch 1, TP1). It prints the
# GPU's name and, for each step, the table; it writes every profile as TOML under $OUT and a
# log ($OUT/gpu_profile.log). Steps:
#   1. hybrid-$SIZE vs dense-$SIZE (compact family) at $LENGTHS: T_prefill, S_kv, Phi_kv and the
#      dense/hybrid Phi_kv ratio; the hybrid should prefill faster from 16K on;
#   2. a published dense config ($CONFIG, Llama-3.1-8B) at $CONFIG_LENGTHS by two depths per
#      layer kind, beside the roofline's kernel time for the same model on the GPU's card
#      (--compare-card; the card is found from the GPU's name, or set GPU=h200);
#   3. a published hybrid config ($HYBRID_CONFIG, Qwen3.5-35B-A3B), the same way: its time is an
#      upper bound (the torch linear-attention and expert loops stand for fla and grouped GEMMs).
# Usage (repo root or anywhere):
#   benchmarks/gpu_profile.sh                      # large, 1K..32K; Llama-3.1-8B at 4K..32K
#   SIZE=xl OUT=out/gpu benchmarks/gpu_profile.sh
#   DEVICE=cpu SIZE=tiny LENGTHS=64,256 CONFIG=tiny/config.json CONFIG_LENGTHS=64,256 \
#       HYBRID_CONFIG= REPEATS=1 THREADS=1 benchmarks/gpu_profile.sh   # the same steps on a CPU
# Needs torch with CUDA (pip install 'prfaas-tui[torch]'). Runtime on an H200: a few minutes.
set -euo pipefail

cd "$(dirname "$0")/.."
DEVICE="${DEVICE:-cuda}"
SIZE="${SIZE:-large}"
LENGTHS="${LENGTHS:-1K,2K,4K,8K,16K,32K}"
CONFIG="${CONFIG:-tests/configs/llama-3.1-8b.json}"
CONFIG_LENGTHS="${CONFIG_LENGTHS:-4K,8K,16K,32K}"
HYBRID_CONFIG="${HYBRID_CONFIG-tests/configs/qwen3.5-35b-a3b.json}"
REPEATS="${REPEATS:-5}"
WARMUP="${WARMUP:-2}"
OUT="${OUT:-out/gpu_profile}"
PYTHON="${PYTHON:-python}"
GPU_FLAGS=()
if [[ "$DEVICE" == cuda ]]; then
    nvidia-smi --query-gpu=name,driver_version --format=csv
    GPU_FLAGS=(--compare-card ${GPU:+--gpu "$GPU"})
elif [[ -n "${GPU:-}" ]]; then
    GPU_FLAGS=(--compare-card --gpu "$GPU")
fi
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export COLUMNS="${COLUMNS:-160}"
LOG="$OUT/gpu_profile.log"
date -u +"%Y-%m-%d %H:%M UTC" | tee "$LOG"
profile() { "$PYTHON" -m prfaas_tui.commands.profile --backend torch --device "$DEVICE" \
    --repeats "$REPEATS" --warmup "$WARMUP" ${THREADS:+--threads "$THREADS"} "$@" 2>&1 \
    | tee -a "$LOG"; }

profile --model "hybrid-$SIZE" --compare "dense-$SIZE" --lengths "$LENGTHS" \
    --out "$OUT/hybrid-$SIZE.toml" --compare-out "$OUT/dense-$SIZE.toml"
for cfg in "$CONFIG" ${HYBRID_CONFIG:+"$HYBRID_CONFIG"}; do
    name="$(basename "$(dirname "$cfg")")"
    [[ "$(basename "$cfg")" == config.json ]] || name="$(basename "$cfg" .json)"
    profile --config "$cfg" --lengths "$CONFIG_LENGTHS" "${GPU_FLAGS[@]}" \
        --out "$OUT/$name.toml"
done
