// SPDX-License-Identifier: Apache-2.0
// The fleet client's view of nodes: heartbeats and drain markers.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "fleet/client.h"
#include "fleet/client_internal.h"

namespace gpuq::fleet {

using detail::is_code;

namespace {

constexpr std::string_view kHeartbeatFile = "/heartbeat.json";
constexpr std::string_view kDrainFile = "/drain";

// The NODE of nodes/NODE/<file>, or "" when `key` is not that.
std::string node_of(std::string_view key, std::string_view file) {
  if (!key.starts_with(keys::kNodes) || !key.ends_with(file)) return "";
  std::string_view node = key.substr(keys::kNodes.size(), key.size() - keys::kNodes.size() - file.size());
  return node.find('/') == std::string_view::npos ? std::string(node) : "";
}

// Fills `node` from its heartbeat object; the age uses the listing's clock when it has one.
Status read_heartbeat(ObjectStore& store, const ObjectInfo& info, int64_t listing_now_ms,
                      NodeStatus& node) {
  auto object = store.get(info.key);
  if (!object) {
    if (is_code(object.error(), Code::kNotFound)) return ok();  // gone since the listing
    return tl::unexpected(object.error());
  }
  auto doc = parse_object(info.key, object->body);
  if (!doc) return tl::unexpected(doc.error());
  auto beat = heartbeat_from_json(*doc);
  if (!beat) return fail(Code::kCorruption, fmt::format("{}: {}", info.key, beat.error().message));
  node.has_heartbeat = true;
  node.heartbeat_age_ms = listing_now_ms > 0
                              ? detail::store_age_ms(listing_now_ms, info.modified_ms)
                              : detail::store_age_ms(object->store_now_ms, object->modified_ms);
  node.interval_ms = beat->interval_ms;
  node.stale = node.heartbeat_age_ms < 0 ||
               node.heartbeat_age_ms > kStaleIntervals * std::max<int64_t>(beat->interval_ms, 1);
  node.version = beat->version;
  node.gpus = static_cast<int>(beat->gpus.size());
  node.free_gpus = beat->free_gpus;
  node.classes = beat->classes;
  node.running = beat->running;
  node.draining = node.draining || beat->draining;
  node.gpu_list = beat->gpus;
  node.workdir_free_bytes = beat->workdir_free_bytes;
  node.shm_free_bytes = beat->shm_free_bytes;
  node.min_free_disk_bytes = beat->min_free_disk_bytes;
  node.low_disk = beat->workdir_free_bytes >= 0 && beat->workdir_free_bytes < beat->min_free_disk_bytes;
  node.not_taking = beat->not_taking;
  return ok();
}

Result<std::vector<NodeStatus>> read_nodes_under(ObjectStore& store, const std::string& prefix) {
  auto listing = store.list(prefix);
  if (!listing) return tl::unexpected(listing.error());
  std::map<std::string, NodeStatus> nodes;
  for (const auto& info : listing->objects) {  // drain markers first: a heartbeat ORs into them
    if (std::string name = node_of(info.key, kDrainFile); !name.empty()) {
      nodes[name].name = name;
      nodes[name].draining = true;
    }
  }
  for (const auto& info : listing->objects) {
    if (std::string name = node_of(info.key, kHeartbeatFile); !name.empty()) {
      NodeStatus& node = nodes[name];
      node.name = name;
      GPUQ_FLEET_TRY(read_heartbeat(store, info, listing->store_now_ms, node));
    }
  }
  std::vector<NodeStatus> result;
  for (auto& [name, node] : nodes) {
    if (node.has_heartbeat || node.draining) result.push_back(std::move(node));
  }
  return result;
}

}  // namespace

Result<std::vector<NodeStatus>> read_nodes(ObjectStore& store) {
  return read_nodes_under(store, std::string(keys::kNodes));
}

Result<NodeStatus> read_node(ObjectStore& store, std::string_view node) {
  GPUQ_FLEET_TRY(check_name("node", node));
  auto nodes = read_nodes_under(store, fmt::format("{}{}/", keys::kNodes, node));
  if (!nodes) return tl::unexpected(nodes.error());
  for (auto& found : *nodes) {
    if (found.name == node) return std::move(found);
  }
  auto all = read_nodes(store);
  if (!all) return tl::unexpected(all.error());
  std::vector<std::string> names;
  for (const auto& found : *all) names.push_back(found.name);
  return fail(Code::kNotFound,
              fmt::format("no node '{}' in {}: it has never sent a heartbeat; the nodes are: {}",
                          node, store.describe(),
                          names.empty() ? std::string("none yet") : fmt::format("{}", fmt::join(names, ", "))));
}

Result<NodeTarget> resolve_node_target(ObjectStore& store, std::string_view text) {
  GPUQ_FLEET_TRY(check_name("node", text));
  NodeTarget named{std::string(text), std::nullopt};
  size_t dash = text.rfind("-gpu");
  std::string_view digits = dash == std::string_view::npos ? "" : text.substr(dash + 4);
  int index = -1;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  bool pin_form = dash != std::string_view::npos && dash > 0 && !digits.empty() && ec == std::errc() &&
                  end == digits.data() + digits.size() && std::to_string(index) == digits;
  if (!pin_form) return named;
  auto exact = read_nodes_under(store, fmt::format("{}{}/", keys::kNodes, text));
  if (!exact) return tl::unexpected(exact.error());
  for (const auto& node : *exact) {
    if (node.name == text) return named;  // a node named so wins over a pin
  }
  std::string base(text.substr(0, dash));
  auto nodes = read_nodes_under(store, fmt::format("{}{}/", keys::kNodes, base));
  if (!nodes) return tl::unexpected(nodes.error());
  auto found = std::find_if(nodes->begin(), nodes->end(), [&](const NodeStatus& n) { return n.name == base; });
  if (found == nodes->end()) return named;
  std::vector<std::string> gpus;
  for (const auto& gpu : found->gpu_list) gpus.push_back(gpu.name);
  std::string wanted = fmt::format("gpu{}", index);
  if (found->has_heartbeat && std::find(gpus.begin(), gpus.end(), wanted) == gpus.end()) {
    return fail(Code::kInvalidArgument,
                fmt::format("--node {}: node {} has no {}; its GPUs are {}", text, base, wanted,
                            gpus.empty() ? std::string("none") : fmt::format("{}", fmt::join(gpus, ", "))));
  }
  return NodeTarget{base, index};
}

Status drain(ObjectStore& store, std::string_view node, bool on) {
  GPUQ_FLEET_TRY(check_name("node", node));
  if (on) {
    auto known = read_node(store, node);
    if (!known) return tl::unexpected(known.error());
    auto written = store.put(keys::drain(node), "{}");
    if (!written) return tl::unexpected(written.error());
  } else {
    GPUQ_FLEET_TRY(store.remove(keys::drain(node)));
  }
  return detail::bump_signal(store);
}

}  // namespace gpuq::fleet
