// SPDX-License-Identifier: Apache-2.0
#include "gpu/discovery.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>

#include "gpu/nvidia_smi.h"
#include "gpu/topology.h"

namespace gpuq::gpu {
namespace {

// What nvidia-smi told us: the GPUs, or (when there are none) why, in a few words for the note.
struct SmiAnswer {
  std::vector<Resource> gpus;
  std::string no_gpu_reason;
};

Result<SmiAnswer> ask_nvidia_smi(const CommandFn& run) {
  std::string smi = nvidia_smi_program();
  auto result =
      run({smi, std::string(kNvidiaSmiQuery), std::string(kNvidiaSmiFormat)}, kNvidiaSmiTimeout);
  if (!result) {
    // Not installed (or not runnable) is the ordinary state of a machine without NVIDIA GPUs.
    if (result.error().code == Code::kNotFound) return SmiAnswer{{}, smi + ": not found"};
    return SmiAnswer{{}, result.error().message};
  }
  if (result->timed_out) {
    return SmiAnswer{
        {}, fmt::format("{}: no answer within {}", smi, format_duration(kNvidiaSmiTimeout))};
  }
  // nvidia-smi prints its failures on stdout, so both streams are read.
  std::string text = result->out + "\n" + result->err;
  std::string said = first_line(text);
  if (is_no_devices_text(text) || result->exit_code == kNvidiaSmiExitNotFound) {
    return SmiAnswer{{}, fmt::format("{}: {}", smi, said.empty() ? "no devices" : said)};
  }
  if (is_driver_missing_text(text) || result->exit_code == kNvidiaSmiExitDriverNotLoaded ||
      result->exit_code == kNvidiaSmiExitNoNvmlLibrary) {
    return SmiAnswer{{},
                     fmt::format("{}: {}", smi, said.empty() ? "NVIDIA driver not loaded" : said)};
  }
  if (result->exit_code != 0) {
    // Anything else (a GPU fallen off the bus, a permission problem) is not "no GPU here":
    // replacing the machine's GPUs with a lane would hide it, so start-up stops and says so.
    std::string how = result->signal != 0 ? fmt::format("killed by signal {}", result->signal)
                                          : fmt::format("exit {}", result->exit_code);
    return fail(Code::kUnavailable,
                fmt::format("{} failed ({}): {}; fix the NVIDIA driver, or start with --gpus "
                            "none or --gpus fake:N",
                            smi, how, said.empty() ? "no output" : said));
  }
  auto gpus = parse_nvidia_smi_gpus(result->out);
  if (!gpus) return tl::unexpected(gpus.error());
  if (gpus->empty()) return SmiAnswer{{}, smi + " listed no GPUs"};
  return SmiAnswer{std::move(*gpus), {}};
}

// Why the topology of the selected GPUs is unknown, or nothing when `links` holds it.
struct TopologyAnswer {
  Links links;
  std::string unknown_reason;
};

TopologyAnswer topology_failure(std::string reason) {
  return TopologyAnswer{{}, std::move(reason)};
}

// Reads `nvidia-smi topo -m` for the GPUs in resource order. Any failure only costs placement
// quality, never the start: the links stay empty ("all equal") and the reason goes in the note.
TopologyAnswer ask_topology(const CommandFn& run, const std::vector<Resource>& gpus) {
  std::string smi = nvidia_smi_program();
  std::string command = fmt::format("{} {} {}", smi, kNvidiaSmiTopoArg, kNvidiaSmiTopoMatrixArg);
  auto result = run({smi, std::string(kNvidiaSmiTopoArg), std::string(kNvidiaSmiTopoMatrixArg)},
                    kNvidiaSmiTimeout);
  if (!result) return topology_failure(fmt::format("{}: {}", command, result.error().message));
  if (result->timed_out) {
    return topology_failure(
        fmt::format("{}: no answer within {}", command, format_duration(kNvidiaSmiTimeout)));
  }
  if (result->exit_code != 0) {
    std::string how = result->signal != 0 ? fmt::format("killed by signal {}", result->signal)
                                          : fmt::format("exit {}", result->exit_code);
    std::string said = first_line(result->out + "\n" + result->err);
    return topology_failure(
        fmt::format("{} failed ({}): {}", command, how, said.empty() ? "no output" : said));
  }
  auto machine = parse_nvidia_smi_topo(result->out);
  if (!machine) return topology_failure(machine.error().message);
  std::vector<int> indices;
  for (const Resource& gpu : gpus) indices.push_back(*gpu.index);
  auto links = select_links(*machine, indices);
  if (!links) return topology_failure(links.error().message);
  return TopologyAnswer{std::move(*links), {}};
}

// An Inventory of NVIDIA GPUs with their topology, when it can be read.
Inventory nvidia_inventory(const CommandFn& run, std::string note, std::vector<Resource> gpus) {
  TopologyAnswer topology = ask_topology(run, gpus);
  if (!topology.unknown_reason.empty()) {
    note += fmt::format("; GPU topology unknown ({}), so all GPUs count as equally connected",
                        topology.unknown_reason);
  }
  return Inventory{"nvidia", std::move(note), std::move(gpus), std::move(topology.links)};
}

// "8x NVIDIA H100 80GB HBM3" or "2x NVIDIA A100-SXM4-80GB, 1x NVIDIA RTX A6000".
std::string describe_models(const std::vector<Resource>& gpus) {
  std::vector<std::pair<std::string, int>> counts;
  for (const Resource& gpu : gpus) {
    auto it = std::find_if(counts.begin(), counts.end(),
                           [&](const auto& entry) { return entry.first == gpu.model; });
    if (it == counts.end()) {
      counts.emplace_back(gpu.model, 1);
    } else {
      ++it->second;
    }
  }
  std::string text;
  for (const auto& [model, count] : counts) {
    if (!text.empty()) text += ", ";
    text += fmt::format("{}x {}", count, model);
  }
  return text;
}

// Sorted indices as people read them: "0-3", "0,2,5-7".
std::string format_indices(std::vector<int> indices) {
  std::sort(indices.begin(), indices.end());
  std::string text;
  for (size_t i = 0; i < indices.size();) {
    size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    if (!text.empty()) text += ",";
    text += j == i ? fmt::format("{}", indices[i]) : fmt::format("{}-{}", indices[i], indices[j]);
    i = j + 1;
  }
  return text;
}

std::string flag_for_messages(std::string_view flag) {
  return flag.empty() ? std::string("(empty)") : std::string(flag);
}

tl::unexpected<Error> bad_flag(std::string_view flag, std::string_view why) {
  return fail(Code::kInvalidArgument, fmt::format("--gpus {}: {}; accepted forms: {}",
                                                  flag_for_messages(flag), why, kGpusFlagForms));
}

std::optional<int> parse_count(std::string_view text) {
  if (text.empty() ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

Inventory lane_inventory(std::string_view why) {
  Resource lane;
  lane.name = "gpu0";
  lane.model = std::string(kLaneModel);
  return Inventory{"lane",
                   fmt::format("no NVIDIA GPU found ({}); using one exclusive lane gpu0 without "
                               "a device index",
                               why),
                   {std::move(lane)},
                   {}};
}

Result<Inventory> fake_inventory(std::string_view flag, std::string_view count_text) {
  auto count = parse_count(count_text);
  if (!count || *count < 1 || *count > kMaxFakeGpus) {
    return bad_flag(flag, fmt::format("the number of simulated GPUs must be 1..{}", kMaxFakeGpus));
  }
  Inventory inventory;
  inventory.mode = "fake";
  inventory.note = fmt::format("{} simulated GPU{} (fake:{}); nothing runs on a real GPU", *count,
                               *count == 1 ? "" : "s", *count);
  for (int i = 0; i < *count; ++i) {
    Resource gpu;
    gpu.name = fmt::format("gpu{}", i);
    gpu.index = i;
    gpu.uuid = fmt::format("GPU-fake-{}", i);
    gpu.model = "simulated GPU";
    gpu.memory_total_mib = kFakeGpuMemoryMib;
    inventory.resources.push_back(std::move(gpu));
  }
  inventory.links = fake_links(*count);
  return inventory;
}

Result<Inventory> auto_inventory(const CommandFn& run) {
  auto answer = ask_nvidia_smi(run);
  if (!answer) return tl::unexpected(answer.error());
  if (answer->gpus.empty()) return lane_inventory(answer->no_gpu_reason);
  size_t count = answer->gpus.size();
  std::string note = fmt::format("{} NVIDIA GPU{} ({})", count, count == 1 ? "" : "s",
                                 describe_models(answer->gpus));
  return nvidia_inventory(run, std::move(note), std::move(answer->gpus));
}

Result<std::vector<int>> parse_index_list(std::string_view flag) {
  std::vector<int> indices;
  std::set<int> seen;
  std::string_view rest = flag;
  while (true) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    auto index = parse_count(item);
    if (!index) {
      return bad_flag(flag, item.empty() ? "an empty item in the GPU list"
                                         : fmt::format("\"{}\" is not a GPU index", item));
    }
    if (!seen.insert(*index).second) {
      return bad_flag(flag, fmt::format("GPU {} is listed twice", *index));
    }
    indices.push_back(*index);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return indices;
}

Result<Inventory> listed_inventory(std::string_view flag, const CommandFn& run) {
  auto wanted = parse_index_list(flag);
  if (!wanted) return tl::unexpected(wanted.error());
  auto answer = ask_nvidia_smi(run);
  if (!answer) return tl::unexpected(answer.error());
  if (answer->gpus.empty()) {
    return fail(Code::kInvalidArgument,
                fmt::format("--gpus {}: no NVIDIA GPU found ({}); use --gpus auto, none or "
                            "fake:N on this machine",
                            flag, answer->no_gpu_reason));
  }
  std::vector<int> present;
  for (const Resource& gpu : answer->gpus) present.push_back(*gpu.index);
  std::vector<int> missing;
  for (int index : *wanted) {
    if (std::find(present.begin(), present.end(), index) == present.end()) {
      missing.push_back(index);
    }
  }
  if (!missing.empty()) {
    return fail(Code::kInvalidArgument,
                fmt::format("--gpus {}: no GPU{} {} on this machine; this machine has GPU{} {}",
                            flag, missing.size() == 1 ? "" : "s", format_indices(missing),
                            present.size() == 1 ? "" : "s", format_indices(present)));
  }
  std::vector<Resource> kept;
  for (Resource& gpu : answer->gpus) {
    if (std::find(wanted->begin(), wanted->end(), *gpu.index) != wanted->end()) {
      kept.push_back(std::move(gpu));
    }
  }
  std::string note = fmt::format("{} of {} NVIDIA GPUs (--gpus {}: {})", kept.size(),
                                 present.size(), flag, describe_models(kept));
  return nvidia_inventory(run, std::move(note), std::move(kept));
}

}  // namespace

Result<Inventory> discover(std::string_view flag, const CommandFn& run) {
  if (flag == "auto") return auto_inventory(run);
  if (flag == "none") {
    return Inventory{"none", "no GPUs (--gpus none); only jobs that need no GPU run", {}, {}};
  }
  constexpr std::string_view kFakePrefix = "fake:";
  if (flag.substr(0, kFakePrefix.size()) == kFakePrefix) {
    return fake_inventory(flag, flag.substr(kFakePrefix.size()));
  }
  if (!flag.empty() && flag.front() >= '0' && flag.front() <= '9') {
    return listed_inventory(flag, run);
  }
  return bad_flag(flag, "unknown value");
}

}  // namespace gpuq::gpu
