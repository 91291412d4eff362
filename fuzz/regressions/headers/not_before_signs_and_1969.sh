#!/bin/bash
#gpuq not-before=2026-01-01T-1:-5:00Z
#gpuq not-before=1969-12-31T23:00:00Z
true
