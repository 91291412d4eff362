#!/usr/bin/env python3
#gpuq preempt=yield
# A job that counts units of work and can give its GPUs back between any two units, then
# carry on where it stopped: the checkpoint example of docs/jobs.md ("Checkpoints: yielding a
# GPU and resuming"). count.sh does exactly the same in bash.
#
#   count.py [UNITS]     UNITS (default 20) units of COUNT_UNIT_SECONDS (default 1) seconds each
#
# Its state, the next unit to do, lives in "$GPUQ_JOB_DIR/count.state": the same directory in
# every run of the job. Outside gpuq (no GPUQ_JOB_DIR) it keeps it in the current directory.
import os
import signal
