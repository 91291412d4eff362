// SPDX-License-Identifier: Apache-2.0
// A stand-alone shim executable for runner tests: the same code that `gpuq shim` runs.
#include "runner/shim.h"

int main(int argc, char** argv) { return gpuq::runner::shim_main(argc - 1, argv + 1); }
