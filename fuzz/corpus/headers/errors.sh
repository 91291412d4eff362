#!/bin/bash
#gpuq gpus=two colour=red =x priority=urgent
#gpuq gpus=1 gpus=2 est=3 hours lane=a,,b requires="unbalanced
#gpuq-lane=net
# gpuq: gpus=1
#gpuq restart-within=5m preempt=yield not-before=2026-13-40T99:00:00Z
echo body
#gpuq gpus=1
  #gpuq in a heredoc
