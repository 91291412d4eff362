#!/bin/bash
#gpuq name=café lane=réseau
# gpuq-out: ✓/out
true
