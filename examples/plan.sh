#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# An example plan: a small research backlog submitted with `gpuq submit`. Prints the job ids.
# Run from the repository root with gpuq on PATH and GPUQ_HOME set (scripts/demo.sh does).
set -euo pipefail
cd "$(dirname "$0")/jobs"
submit() { gpuq submit --json "$@" | sed -n 's/.*"id":\([0-9]*\).*/\1/p'; }

submit --name fetch-data --gpus 0 --priority normal fetch_data.sh
submit --name train-a15 --gpus 2 --priority normal train.sh --steps 30
submit --name sweep-lr-1 --gpus 1 --priority low train.sh --steps 10 --lr 1e-4
submit --name sweep-lr-2 --gpus 1 --priority low train.sh --steps 10 --lr 3e-4
submit --name sweep-lr-3 --gpus 1 --priority low train.sh --steps 10 --lr 1e-3
submit --name eval-a15 --gpus 1 --priority high eval.sh
submit --name smoke-test --gpus 1 --priority high -- sh -c 'echo "smoke test on GPU $CUDA_VISIBLE_DEVICES"; sleep 1'
