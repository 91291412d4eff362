// SPDX-License-Identifier: Apache-2.0
// The live GPU probe: what is on the GPUs right now (memory in use, utilisation, temperature,
// power draw, the compute processes and their memory), sampled on demand, as opposed to discovery (gpu/discovery.h),
// which decides once at start-up which GPUs exist.
//
// One interface, four implementations, chosen by make_probe from the Inventory's mode:
//   nvml        libnvidia-ml.so.1 loaded at run time with dlopen (gpu/nvml_probe.h);
//   nvidia-smi  two nvidia-smi queries through the CommandFn, where NVML cannot be loaded
//               (gpu/smi_probe.h);
//   fake        simulated GPUs whose state a test writes to a JSON file (gpu/fake_probe.h);
//   none        no GPUs (the stand-in lane and --gpus none): every sample is empty.
// A probe owns what its implementation needs (the NVML library handle, the CommandFn) and
// releases it when destroyed.
// Thread rules: sample() may block up to the probe's timeout (nvidia-smi: kNvidiaSmiTimeout), so
// call it off the queue actor's thread; call one probe's sample() from one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "gpu/discovery.h"
#include "os/command.h"

namespace gpuq::gpu {

struct GpuProcess {
  int pid = 0;
  int64_t used_memory_mib = 0;  // 0 when unknown (MIG, WDDM, a driver that does not say)
};

struct GpuSample {
  int index = 0;  // the device index (nvidia-smi / NVML index; fake: 0..N-1)
  int64_t memory_used_mib = 0;
  int utilization = -1;               // percent 0..100; -1 unknown
  int temperature_c = -1;             // the GPU's core temperature, degrees C; -1 unknown
  double power_w = -1;                // power draw, watts; -1 unknown
  std::vector<GpuProcess> processes;  // compute processes on this GPU
};

struct ProbeSample {
  std::vector<GpuSample> gpus;  // one entry per probed GPU, in index order
};

class GpuProbe {
 public:
  virtual ~GpuProbe() = default;
  // What is on the GPUs now. May block up to the probe's timeout (call off the actor thread).
  virtual Result<ProbeSample> sample() = 0;
  // "nvml", "nvidia-smi", "fake", "none".
  virtual std::string name() const = 0;
};

// A probe that finds no GPUs: sample() returns an empty ProbeSample. For the stand-in lane and
// --gpus none, where there is no device to look at.
std::unique_ptr<GpuProbe> make_none_probe();

// A chosen probe and one line for people saying which and why ("nvml (libnvidia-ml.so.1)",
// "nvidia-smi (NVML unavailable: ...)"), for the daemon's log.
struct ProbeChoice {
  std::unique_ptr<GpuProbe> probe;  // never null
  std::string note;
};

// Chooses the probe for an Inventory (gpu/discovery.h): mode "nvidia" -> NVML if
// libnvidia-ml.so.1 (or $GPUQ_NVML_LIBRARY) loads and initialises, else nvidia-smi through `run`;
// "fake" -> the fake probe over inventory.resources.size() GPUs; "lane", "none" and anything
// else -> the none probe. The nvidia probes report every GPU of the machine, also those outside
// a `--gpus 0,2` selection; callers pick the indices they schedule.
ProbeChoice choose_probe(const Inventory& inventory, CommandFn run = os::run_command);

// choose_probe without the note.
std::unique_ptr<GpuProbe> make_probe(const Inventory& inventory, CommandFn run = os::run_command);

}  // namespace gpuq::gpu
