// The fleet client's view of nodes (heartbeats, drain markers) and `fleet status`.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <set>

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

// The queue prefix of an entry key ("queues/class/any/"), or "" for a stray key.
std::string queue_of(std::string_view key) {
  for (std::string_view base : {keys::kClassQueues, keys::kNodeQueues}) {
    if (!key.starts_with(base)) continue;
    size_t slash = key.find('/', base.size());
    if (slash == std::string_view::npos) return "";
    return std::string(key.substr(0, slash + 1));
  }
  return "";
}

// A status row for job `id` from its spec and claim. A spec or claim that is missing or
// unreadable still gives a row (with the reason); an unreachable store is an error.
Result<JobStatus> job_row(ObjectStore& store, const std::string& id) {
  JobStatus row;
  row.id = id;
  auto job = read_job(store, id);
  if (job) {
    row.name = job->name;
    row.klass = job->klass;
    row.node = job->node;
    row.priority = job->spec.priority;
    row.submitted_ms = job->submitted_ms;
  } else if (is_code(job.error(), Code::kNotFound) || is_code(job.error(), Code::kCorruption)) {
    row.reason = job.error().message;
  } else {
    return tl::unexpected(job.error());
  }
  auto claim = read_claim(store, id);
  std::optional<Claim> held;
  if (claim && *claim) held = (*claim)->claim;
  if (!claim && !is_code(claim.error(), Code::kCorruption)) return tl::unexpected(claim.error());
  if (!claim) row.reason = claim.error().message;
  row.state = job_state(held);
  if (held) {
    if (!held->node.empty()) row.node = held->node;
    row.attempt = held->attempt;
    row.runs = held->runs;
    row.exit_code = held->exit_code;
    if (row.reason.empty()) row.reason = held->reason;
  }
  return row;
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

Result<FleetStatus> status(ObjectStore& store) {
  FleetStatus result;
  auto nodes = read_nodes(store);
  if (!nodes) return tl::unexpected(nodes.error());
  result.nodes = std::move(*nodes);

  auto queues = store.list("queues/");
  if (!queues) return tl::unexpected(queues.error());
  std::set<std::string> seen;
  for (const auto& info : queues->objects) {
    std::string queue = queue_of(info.key);
    auto entry = queue.empty() ? std::nullopt : parse_entry(queue, info.key);
    if (!entry || !seen.insert(entry->id).second) continue;
    auto row = job_row(store, entry->id);
    if (!row) return tl::unexpected(row.error());
    row->queue = queue;
    row->priority = entry->priority;
    row->submitted_ms = entry->submitted_ms;
    if (auto cancel = detail::cancel_requested(store, entry->id); cancel) {
      row->cancel_requested = *cancel;
    }
    result.jobs.push_back(std::move(*row));
  }

  auto ends = store.list(std::string(keys::kEnded));
  if (!ends) return tl::unexpected(ends.error());
  size_t shown = 0;
  for (auto it = ends->objects.rbegin(); it != ends->objects.rend() && shown < kRecentEnds; ++it) {
    auto ended = parse_ended_key(it->key);
    if (!ended || !seen.insert(ended->second).second) continue;
    auto row = job_row(store, ended->second);
    if (!row) return tl::unexpected(row.error());
    row->queue = std::string(keys::kEnded);
    row->ended_ms = ended->first;
    result.jobs.push_back(std::move(*row));
    ++shown;
  }
  return result;
}

}  // namespace gpuq::fleet
