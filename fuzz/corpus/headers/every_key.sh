#gpuq name=n1 gpus=0 priority=7
#gpuq after=a,b after-any=c after-notok=d,e
#gpuq requires='test -d x' requires=true
#gpuq done-if=false wait-file=ckpt/READY wait-file=data/x
#gpuq lane=net,cpu lane=disk retries=3 retry-delay=30s
#gpuq timeout=1h est=90m gpu-mem=16000 share
#gpuq not-before=2026-11-29T10:00:00Z hold
#gpuq preempt=restart restart-within=30m requires-warn=10m quiet=1h warn-after=2h30m
run
