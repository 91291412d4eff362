#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A CPU-only job (no GPU): it runs at once, beside GPU work.
echo "fetching data into $GPUQ_JOB_DIR"
for i in 1 2 3; do echo "shard $i/3"; sleep 0.5; done
