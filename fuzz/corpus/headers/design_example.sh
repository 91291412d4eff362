#!/bin/bash
#gpuq gpus=2 priority=high preempt=yield est=3h timeout=12h retries=2
#gpuq after=train-a15 requires="test -f ckpt/READY" done_if="test -s out/eval.json"
#gpuq lane=net quiet=30m name=eval-a15
# gpuq-in:  results-loop/mbpp_data.json
# gpuq-out: results-loop/eval_*.json

python eval.py
