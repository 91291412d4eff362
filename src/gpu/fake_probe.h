// SPDX-License-Identifier: Apache-2.0
// The fake probe, for simulated GPUs (--gpus fake:N): nothing runs on a real GPU, so what the
// GPUs hold is whatever a test says. When $GPUQ_FAKE_GPU_STATE names a file, every sample()
// reads it afresh (the variable too is read at every sample, never cached):
//   {"gpus":[{"index":1,"memory_used_mib":900,"utilization":0,
//             "processes":[{"pid":123,"used_memory_mib":900}]}]}
// Inside a gpu entry only "index" (0..N-1) is required; a missing field takes the idle value
// (0 MiB, utilisation 0, no processes), and so does every GPU the file does not list. The
// sensors, "temperature_c" (degrees C, an integer) and "power_w" (watts, decimals allowed), are
// unknown (-1) unless given. An unset
// variable or a file that does not exist means every GPU is idle, so a test can create and
// delete the file to make a process appear and leave. Write the file atomically (write a
// temporary file, then rename it over the old one): a half-written file is an error.
// Owns nothing but its GPU count; sample() may be called from any thread.
#pragma once

#include <memory>
#include <string_view>

#include "base/status.h"
#include "gpu/probe.h"

namespace gpuq::gpu {

inline constexpr std::string_view kFakeGpuStateEnv = "GPUQ_FAKE_GPU_STATE";

// A fake probe over GPUs 0..gpu_count-1.
std::unique_ptr<GpuProbe> make_fake_probe(int gpu_count);

// Reads a state file's text for GPUs 0..gpu_count-1 into a sample with one entry per GPU, in
// index order. `source` names the file in messages. Text that is not JSON is
// Code::kInvalidArgument with the parser's position; a wrong shape (a missing or out-of-range
// index, a GPU listed twice, negative memory, utilisation outside -1..100, a pid that is not a
// positive integer, a temperature or power that is not a number in range, an unknown key) is Code::kInvalidArgument saying which field and the form
// expected.
Result<ProbeSample> parse_fake_gpu_state(std::string_view text, int gpu_count,
                                         std::string_view source);

}  // namespace gpuq::gpu
