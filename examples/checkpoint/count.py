#!/usr/bin/env python3
#gpuq preempt=yield
# SPDX-License-Identifier: Apache-2.0
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
import sys
import time

YIELD_EXIT = 75  # "I saved my state and gave the GPUs back"


def save(state, unit):
    """Saves the next unit to do: a temporary file renamed over the state, so a crash at any
    moment leaves the old checkpoint or the new one, never half of one."""
    tmp = f"{state}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(f"{unit}\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, state)


def main():
    try:
        units = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    except ValueError:
        print(f"count.py: UNITS must be a whole number, not '{sys.argv[1]}'", file=sys.stderr)
        return 2
    unit_seconds = float(os.environ.get("COUNT_UNIT_SECONDS", "1"))
    state = os.path.join(os.environ.get("GPUQ_JOB_DIR", "."), "count.state")
    yield_file = os.environ.get("GPUQ_YIELD_FILE", "")

    unit = 1
    if os.environ.get("GPUQ_RESUME") == "1" and os.path.exists(state):
        with open(state) as f:
            saved = f.read().strip()
        if saved.isdigit():
            unit = int(saved)
        else:
            print(f"count.py: ignoring a bad state file ({state}: '{saved}')", file=sys.stderr)
        run = os.environ.get("GPUQ_RUN_NUMBER", "?")
        print(f"resumed at unit {unit} (run {run})", flush=True)

    # gpuq's last resort after the yield grace (and a cancel or timeout) is SIGTERM: save what
    # we have and stop. The unit under way is not finished, so it is the next one to do.
    def on_term(signum, frame):
        save(state, unit)
        print(f"stopped by SIGTERM at unit {unit}", flush=True)
        sys.exit(YIELD_EXIT)

    signal.signal(signal.SIGTERM, on_term)

    while unit <= units:
        # Between units: has gpuq asked for the GPUs? Only the file's existence matters.
        if yield_file and os.path.exists(yield_file):
            save(state, unit)
            print(f"yielding at unit {unit}", flush=True)
            return YIELD_EXIT
        print(f"unit {unit}", flush=True)
        time.sleep(unit_seconds)
        unit += 1
    print(f"done: {units} units", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
