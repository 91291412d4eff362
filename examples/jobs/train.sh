#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A stand-in training job: prints the GPUs it holds and counts steps.
steps=20
lr=3e-4
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps="$2"; shift 2 ;;
    --lr) lr="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
echo "job $GPUQ_JOB_ID ($GPUQ_JOB_NAME) run $GPUQ_RUN_NUMBER on GPUs [$CUDA_VISIBLE_DEVICES], lr=$lr"
if command -v nvidia-smi >/dev/null 2>&1 && [ -n "$CUDA_VISIBLE_DEVICES" ]; then
  nvidia-smi --query-gpu=index,name,memory.used --format=csv,noheader -i "$CUDA_VISIBLE_DEVICES" || true
fi
for ((step = 1; step <= steps; step++)); do
  echo "step $step/$steps loss=$(awk -v s="$step" 'BEGIN { printf "%.3f", 2.5 / (1 + s / 10) }')"
  sleep 0.1
done
