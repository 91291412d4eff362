#!/bin/bash
# LANE=net
# REQUIRES="test -f ckpt/READY"
# DONE_IF=test -s out.json
# RETRIES=3
# gpuq-in: "data dir/x.json"
echo hi
