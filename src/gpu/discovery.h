// SPDX-License-Identifier: Apache-2.0
// Deciding which GPUs the daemon schedules onto, from its `--gpus` flag:
//   auto     the machine's NVIDIA GPUs, or, where there are none, one exclusive stand-in lane
//            `gpu0` without a device index, so the queue still runs one job at a time;
//   none     no GPU resources at all;
//   fake:N   N simulated GPUs (1..64) for demos and tests: nothing runs on a real GPU;
//   0,2,3    only those NVIDIA device indices; an index the machine lacks is an error.
// Discovery happens once at start-up. It runs nvidia-smi through the injected CommandFn (tests
// pass a fake) with a timeout, because a hung driver must not hang the daemon's start: first the
// GPU list, then, for NVIDIA GPUs, `nvidia-smi topo -m` for their topology. Simulated GPUs get
// a fake topology of NVLink pairs (gpu/topology.h: fake_links).
// Returns plain values and owns nothing. Thread-safe as long as the CommandFn is; it reads the
// environment variable GPUQ_NVIDIA_SMI (the nvidia-smi to run, default "nvidia-smi" from PATH).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/duration.h"
#include "base/status.h"
#include "model/job.h"
#include "os/command.h"

namespace gpuq::gpu {

// How long nvidia-smi may take; past this the machine is treated as having no usable GPU.
constexpr Millis kNvidiaSmiTimeout{10000};
constexpr int kMaxFakeGpus = 64;
// What a simulated GPU claims to have: an 80 GiB card, the common size of the field's boxes.
constexpr int64_t kFakeGpuMemoryMib = 81920;

inline constexpr std::string_view kGpusFlagForms = "auto|none|fake:N|0,2,3";
inline constexpr std::string_view kLaneModel = "stand-in lane (no NVIDIA GPU)";

struct Inventory {
  std::string mode;  // "nvidia", "fake", "lane" (one stand-in gpu0 without an index), "none"
  std::string note;  // one line for people: what was found and why this mode
  std::vector<Resource> resources;
  // links[i][j]: how well resources[i] and resources[j] are connected (gpu/topology.h scores;
  // feeds sched::Snapshot::links). Empty = all equal: for lanes, for "none", and when
  // `nvidia-smi topo -m` could not be read (the note says why; discovery still succeeds).
  std::vector<std::vector<int>> links;
};

using CommandFn = std::function<Result<os::CommandResult>(const std::vector<std::string>&, Millis)>;

// Resolves the flag into an Inventory. Errors are Code::kInvalidArgument for a malformed flag
// (the message lists kGpusFlagForms), for a list naming an index the machine lacks, or for a list
// on a machine where nvidia-smi finds no GPU; Code::kCorruption when nvidia-smi succeeds but
// prints what cannot be read; Code::kUnavailable when nvidia-smi fails in a way that does not
// mean "no GPU here" (a GPU fallen off the bus must not be silently replaced by a lane).
Result<Inventory> discover(std::string_view flag, const CommandFn& run = os::run_command);

}  // namespace gpuq::gpu
