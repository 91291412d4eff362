// SPDX-License-Identifier: Apache-2.0
// The nvidia-smi probe, for machines where NVML cannot be loaded: each sample runs two queries
// through the injected CommandFn, each with kNvidiaSmiTimeout,
//   nvidia-smi --query-gpu=index,uuid,memory.used,utilization.gpu,temperature.gpu,power.draw
//              --format=csv,noheader,nounits
//   nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory --format=csv,noheader,nounits
// and joins them on the GPU UUID. The nvidia-smi run is nvidia_smi_program() (gpu/nvidia_smi.h:
// $GPUQ_NVIDIA_SMI or "nvidia-smi"), read at every sample.
// The parsers are pure functions over text, tested on recorded outputs (testdata/probe_*.txt).
// The probe owns its CommandFn; call one probe's sample() from one thread at a time (off the
// actor's thread: it may block up to twice kNvidiaSmiTimeout).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "gpu/probe.h"

namespace gpuq::gpu {

// The query arguments whose outputs the parsers read; the column order matters. Both are run
// with kNvidiaSmiFormat (gpu/nvidia_smi.h).
inline constexpr std::string_view kSmiProbeGpuQuery =
    "--query-gpu=index,uuid,memory.used,utilization.gpu,temperature.gpu,power.draw";
inline constexpr std::string_view kSmiProbeAppsQuery =
    "--query-compute-apps=gpu_uuid,pid,used_memory";

// One line of the GPU query.
struct SmiGpuRow {
  int index = 0;
  std::string uuid;
  int64_t memory_used_mib = 0;  // "[N/A]" / "[Not Supported]" read as 0
  int utilization = -1;         // "[N/A]" / "[Not Supported]" read as -1
  int temperature_c = -1;       // degrees C; "[N/A]" / "[Not Supported]" read as -1
  double power_w = -1;          // watts, with decimals; "[N/A]" / "[Not Supported]" read as -1
};

// One line of the compute-apps query.
struct SmiComputeApp {
  std::string gpu_uuid;
  int pid = 0;
  int64_t used_memory_mib = 0;  // "[N/A]" (MIG, WDDM) read as 0
  int line = 0;                 // its line number in the output, for messages
};

// Parses the GPU query, one GPU per line. Tolerates CRLF, surrounding whitespace and blank
// lines. Anything else (not 6 columns, a bad index, an empty UUID, a duplicate index or UUID,
// utilisation outside 0..100, a temperature or power that is not a non-negative number) is Code::kCorruption quoting the line number and the line.
Result<std::vector<SmiGpuRow>> parse_smi_probe_gpus(std::string_view output);

// Parses the compute-apps query, one process per line, with the same tolerance; empty output
// (or nvidia-smi's "No running processes found") is no process. A bad line is Code::kCorruption
// quoting its number and text.
Result<std::vector<SmiComputeApp>> parse_smi_compute_apps(std::string_view output);

// Joins the two into a sample in index order. A process whose GPU UUID matches no listed GPU is
// Code::kCorruption naming its line, the process and the UUID: a misread must not hide a foreign
// process.
Result<ProbeSample> merge_smi_probe(const std::vector<SmiGpuRow>& gpus,
                                    const std::vector<SmiComputeApp>& apps);

// The probe. sample() fails with Code::kUnavailable naming the command when nvidia-smi cannot
// be run, times out (saying so when even SIGKILL did not end it), or exits non-zero (with the
// first line of what it printed on stderr, else stdout), and with the parsers'
// Code::kCorruption when its output cannot be read. While os::kMaxStuckHelpers helpers are stuck
// in the kernel, os::run_command refuses to start nvidia-smi and sample() fails at once with
// that refusal (os/stuck_helpers.h): a wedged driver does not collect one more stuck
// nvidia-smi per sample.
std::unique_ptr<GpuProbe> make_smi_probe(CommandFn run = os::run_command);

}  // namespace gpuq::gpu
