// SPDX-License-Identifier: Apache-2.0
// How well a machine's GPUs are connected to each other, as scores for the scheduler's placement
// (sched::Snapshot::links): multi-GPU jobs go to the best-connected free GPUs, and one-GPU jobs
// keep well-connected pairs whole. The scores come from the matrix `nvidia-smi topo -m` prints,
// or, for simulated GPUs, from a fixed pattern of NVLink pairs.
// Pure functions over text and values (running nvidia-smi is discovery's job); owns nothing;
// thread-safe.
#pragma once

#include <string_view>
#include <vector>

#include "base/status.h"

namespace gpuq::gpu {

// links[a][b]: the connection score of GPUs a and b; higher is better, 0 is the worst (across
// the CPUs' interconnect) and also the score of a GPU with itself. Empty means "all equal".
using Links = std::vector<std::vector<int>>;

// The scores of nvidia-smi's connection kinds. NVLink outranks every PCIe path, and more bonded
// links outrank fewer (NV18 → 118); the PCIe kinds are ordered by how few bridges lie between.
constexpr int kLinkNvLinkBase = 100;  // NV<n> → kLinkNvLinkBase + n
constexpr int kLinkPix = 40;          // at most one PCIe bridge
constexpr int kLinkPxb = 30;          // several PCIe bridges, no host bridge
constexpr int kLinkPhb = 20;          // through a PCIe host bridge (the CPU)
constexpr int kLinkNode = 10;         // between host bridges within one NUMA node
constexpr int kLinkSys = 0;           // across NUMA nodes (QPI/UPI, Infinity Fabric)
constexpr int kLinkSelf = 0;          // a GPU with itself: never a pair to place on
// What fake_links gives the two GPUs of a simulated pair: an NVLink bridge of 4 links.
constexpr int kFakePairLink = kLinkNvLinkBase + 4;

// The arguments after the nvidia-smi program whose output parse_nvidia_smi_topo reads.
inline constexpr std::string_view kNvidiaSmiTopoArg = "topo";
inline constexpr std::string_view kNvidiaSmiTopoMatrixArg = "-m";

// Parses the GPU part of `nvidia-smi topo -m` into links indexed by device index: the header
// must name GPU0..GPU<n-1> first and in order, and each of them needs one row. Columns after the
// GPUs (NICs, "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"), rows of NICs, blank lines, ANSI
// escapes (nvidia-smi underlines the header), tabs or spaces, CRLF, lines before the header
// (driver warnings) and everything from "Legend:" on are ignored. "SOC", the name older drivers
// gave SYS, is read as SYS. Anything else is Code::kCorruption naming the line number and
// quoting the line; output without a matrix (e.g. "No devices were found") is such an error.
Result<Links> parse_nvidia_smi_topo(std::string_view output);

// The simulated topology of `count` GPUs: pairs (0,1), (2,3), ... score kFakePairLink inside a
// pair and kLinkSys across pairs; with an odd count the last GPU has no partner.
Links fake_links(int count);

// The links among the GPUs with the given device indices, in that order (the daemon's resource
// order), so that result[i][j] = machine[indices[i]][indices[j]]. Code::kCorruption when the
// matrix lacks one of the indices.
Result<Links> select_links(const Links& machine, const std::vector<int>& indices);

}  // namespace gpuq::gpu
