// SPDX-License-Identifier: Apache-2.0
#include "fleet/layout.h"

#include <fmt/format.h>

#include <charconv>
#include <random>

#include "base/json_depth.h"
#include "base/random.h"
#include "model/spec_json.h"

// Returns the error of a Status-returning expression from the enclosing function.
#define GPUQ_TRY(expr)                                 \
  do {                                                 \
    if (auto status_ = (expr); !status_) {             \
      return tl::unexpected(std::move(status_.error())); \
    }                                                  \
  } while (false)

namespace gpuq::fleet {
namespace {

// Objects of the fleet nest a few levels; anything deeper is refused before it is parsed.
constexpr int kMaxObjectDepth = 16;

using nlohmann::json;

constexpr size_t kMaxName = 100;
constexpr std::string_view kBase36 = "0123456789abcdefghijklmnopqrstuvwxyz";
constexpr size_t kRandomIdChars = 5;

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

std::mt19937_64& generator() {
  thread_local std::mt19937_64 engine{random_seed()};
  return engine;
}

std::optional<int64_t> parse_digits(std::string_view text) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

Result<Dependency::Kind> dep_kind(std::string_view text) {
  if (text == "afterok") return Dependency::Kind::kAfterOk;
  if (text == "afterany") return Dependency::Kind::kAfterAny;
  if (text == "afternotok") return Dependency::Kind::kAfterNotOk;
  return fail(Code::kCorruption, fmt::format("unknown dependency kind '{}'", clip_for_message(text)));
}

// Reads a field of a document the fleet wrote: a wrong type is corruption naming the field.
template <class T>
Status read_field(const json& doc, const char* field, T& out, bool required = true) {
  auto it = doc.find(field);
  if (it == doc.end() || it->is_null()) {
    if (!required) return ok();
    return fail(Code::kCorruption, fmt::format("field '{}' is missing", field));
  }
  try {
    out = it->get<T>();
  } catch (const json::exception&) {
    return fail(Code::kCorruption, fmt::format("field '{}' has the wrong type", field));
  }
  return ok();
}

}  // namespace

Status check_name(std::string_view what, std::string_view name) {
  bool valid = !name.empty() && name.size() <= kMaxName && name.front() != '.' && name.front() != '-';
  for (char c : name) valid = valid && name_char(c);
  if (valid) return ok();
  return fail(Code::kInvalidArgument,
              fmt::format("{} '{}' is not valid: use 1 to {} letters, digits, '.', '_' or '-', not "
                          "beginning with '.' or '-'",
                          what, clip_for_message(name), kMaxName));
}

std::string new_job_id(int64_t now_ms) {
  std::string time;
  for (uint64_t v = static_cast<uint64_t>(now_ms < 0 ? 0 : now_ms); v > 0; v /= 36) time.insert(time.begin(), kBase36[v % 36]);
  while (time.size() < 8) time.insert(time.begin(), '0');
  std::uniform_int_distribution<size_t> pick(0, kBase36.size() - 1);
  for (size_t i = 0; i < kRandomIdChars; ++i) time.push_back(kBase36[pick(generator())]);
  return time;
}

bool looks_like_job_id(std::string_view text) {
  if (text.size() < 8 + kRandomIdChars || text.size() > 20) return false;
  return text.find_first_not_of(kBase36) == std::string_view::npos;
}

std::string random_token() {
  return fmt::format("{:016x}", generator()());
}

namespace keys {
std::string heartbeat(std::string_view node) { return fmt::format("nodes/{}/heartbeat.json", node); }
std::string drain(std::string_view node) { return fmt::format("nodes/{}/drain", node); }
std::string name(std::string_view job_name) { return fmt::format("names/{}", job_name); }
std::string spec(std::string_view id) { return fmt::format("jobs/{}/spec.json", id); }
std::string outputs(std::string_view id) { return fmt::format("jobs/{}/outputs.json", id); }
std::string claim(std::string_view id) { return fmt::format("jobs/{}/claim.json", id); }
std::string cancel(std::string_view id) { return fmt::format("jobs/{}/cancel", id); }
std::string log(std::string_view id, int attempt) { return fmt::format("jobs/{}/logs/{}.log", id, attempt); }
std::string class_queue(std::string_view klass) { return fmt::format("{}{}/", kClassQueues, klass); }
std::string node_queue(std::string_view node) { return fmt::format("{}{}/", kNodeQueues, node); }
}  // namespace keys

std::string entry_key(std::string_view queue_prefix, int priority, int64_t submitted_ms,
                      std::string_view id) {
  return fmt::format("{}{:04d}-{:013d}-{}", queue_prefix, priority, submitted_ms, id);
}

std::optional<QueueEntry> parse_entry(std::string_view queue_prefix, std::string_view key) {
  if (key.substr(0, queue_prefix.size()) != queue_prefix) return std::nullopt;
  std::string_view rest = key.substr(queue_prefix.size());
  if (rest.size() < 4 + 1 + 13 + 1 + 1 || rest[4] != '-' || rest[18] != '-') return std::nullopt;
  auto priority = parse_digits(rest.substr(0, 4));
  auto submitted = parse_digits(rest.substr(5, 13));
  std::string_view id = rest.substr(19);
  if (!priority || !submitted || !looks_like_job_id(id)) return std::nullopt;
  return QueueEntry{std::string(key), static_cast<int>(*priority), *submitted, std::string(id)};
}

std::string ended_key(int64_t ended_ms, std::string_view id) {
  return fmt::format("{}{:013d}-{}", keys::kEnded, ended_ms, id);
}

std::optional<std::pair<int64_t, std::string>> parse_ended_key(std::string_view key) {
  if (key.substr(0, keys::kEnded.size()) != keys::kEnded) return std::nullopt;
  std::string_view rest = key.substr(keys::kEnded.size());
  if (rest.size() < 15 || rest[13] != '-') return std::nullopt;
  auto ended = parse_digits(rest.substr(0, 13));
  if (!ended || !looks_like_job_id(rest.substr(14))) return std::nullopt;
  return std::make_pair(*ended, std::string(rest.substr(14)));
}

std::string FleetJob::queue_prefix() const {
  return node.empty() ? keys::class_queue(klass) : keys::node_queue(node);
}

std::string FleetJob::entry() const { return entry_key(queue_prefix(), spec.priority, submitted_ms, id); }

json to_json(const FleetJob& job) {
  json after = json::array();
  for (const auto& dep : job.after) {
    after.push_back({{"kind", std::string(to_string(dep.kind))}, {"target", dep.target}});
  }
  json doc = {{"id", job.id},           {"submitted_ms", job.submitted_ms},
              {"submitted_by", job.submitted_by}, {"spec", spec_to_json(job.spec)},
              {"after", after}};
  doc["name"] = job.name.empty() ? json() : json(job.name);
  doc["class"] = job.klass.empty() ? json() : json(job.klass);
  doc["node"] = job.node.empty() ? json() : json(job.node);
  return doc;
}

Result<FleetJob> fleet_job_from_json(const json& doc) {
  if (!doc.is_object()) return fail(Code::kCorruption, "a job's spec.json is not a JSON object");
  FleetJob job;
  GPUQ_TRY(read_field(doc, "id", job.id));
  GPUQ_TRY(read_field(doc, "name", job.name, false));
  GPUQ_TRY(read_field(doc, "class", job.klass, false));
  GPUQ_TRY(read_field(doc, "node", job.node, false));
  GPUQ_TRY(read_field(doc, "submitted_ms", job.submitted_ms));
  GPUQ_TRY(read_field(doc, "submitted_by", job.submitted_by, false));
  if (job.klass.empty() == job.node.empty()) {
    return fail(Code::kCorruption, "a job's spec.json must name exactly one of 'class' and 'node'");
  }
  auto spec = doc.find("spec");
  if (spec == doc.end()) return fail(Code::kCorruption, "field 'spec' is missing");
  auto parsed = spec_from_json(*spec, SpecOrigin::kStore);
  if (!parsed) return fail(Code::kCorruption, parsed.error().message);
  job.spec = std::move(*parsed);
  auto after = doc.find("after");
  if (after != doc.end() && !after->is_array()) return fail(Code::kCorruption, "field 'after' is not a list");
  if (after != doc.end()) {
    for (const auto& item : *after) {
      if (!item.is_object()) return fail(Code::kCorruption, "an 'after' entry is not an object");
      std::string kind;
      FleetDep dep;
      GPUQ_TRY(read_field(item, "kind", kind));
      GPUQ_TRY(read_field(item, "target", dep.target));
      auto k = dep_kind(kind);
      if (!k) return tl::unexpected(k.error());
      dep.kind = *k;
      job.after.push_back(std::move(dep));
    }
  }
  return job;
}

bool same_fleet_work(const FleetJob& a, const FleetJob& b) {
  return same_work(a.spec, b.spec) && a.spec.env == b.spec.env && a.klass == b.klass &&
         a.node == b.node && a.after == b.after;
}

bool is_final_state(std::string_view state) {
  return state == kSucceeded || state == kFailed || state == kCancelled;
}

json to_json(const Claim& claim) {
  json doc = {{"job", claim.job},         {"node", claim.node},         {"attempt", claim.attempt},
              {"token", claim.token},     {"renewal", claim.renewal},   {"state", claim.state},
              {"local_id", claim.local_id}, {"runs", claim.runs},       {"reason", claim.reason},
              {"updated_ms", claim.updated_ms}, {"lease_ms", claim.lease_ms}};
  doc["exit_code"] = claim.exit_code ? json(*claim.exit_code) : json();
  return doc;
}

Result<Claim> claim_from_json(const json& doc) {
  if (!doc.is_object()) return fail(Code::kCorruption, "a claim is not a JSON object");
  Claim claim;
  GPUQ_TRY(read_field(doc, "job", claim.job));
  GPUQ_TRY(read_field(doc, "node", claim.node));
  GPUQ_TRY(read_field(doc, "attempt", claim.attempt));
  GPUQ_TRY(read_field(doc, "token", claim.token));
  GPUQ_TRY(read_field(doc, "renewal", claim.renewal));
  GPUQ_TRY(read_field(doc, "state", claim.state));
  GPUQ_TRY(read_field(doc, "local_id", claim.local_id, false));
  GPUQ_TRY(read_field(doc, "runs", claim.runs, false));
  GPUQ_TRY(read_field(doc, "reason", claim.reason, false));
  GPUQ_TRY(read_field(doc, "updated_ms", claim.updated_ms, false));
  GPUQ_TRY(read_field(doc, "lease_ms", claim.lease_ms, false));
  int exit_code = 0;
  if (doc.contains("exit_code") && !doc["exit_code"].is_null()) {
    GPUQ_TRY(read_field(doc, "exit_code", exit_code));
    claim.exit_code = exit_code;
  }
  if (claim.state != kRunning && !is_final_state(claim.state)) {
    return fail(Code::kCorruption, fmt::format("a claim's state '{}' is unknown", clip_for_message(claim.state)));
  }
  return claim;
}

namespace {
constexpr std::string_view kGpuReservation = "fleet-gpu";

json known_or_null(int64_t value) { return value < 0 ? json() : json(value); }
}  // namespace

std::string gpu_reservation(int index) { return fmt::format("{}{}", kGpuReservation, index); }

std::optional<int> pinned_gpu(const JobSpec& spec) {
  std::string_view name = spec.reservation;
  if (!name.starts_with(kGpuReservation)) return std::nullopt;
  auto index = parse_digits(name.substr(kGpuReservation.size()));
  if (!index || *index > 1'000'000 || gpu_reservation(static_cast<int>(*index)) != name) return std::nullopt;
  return static_cast<int>(*index);
}

json to_json(const Heartbeat& beat) {
  json gpus = json::array();
  for (const auto& gpu : beat.gpus) {
    gpus.push_back({{"name", gpu.name}, {"model", gpu.model}, {"memory_mib", gpu.memory_mib}, {"busy", gpu.busy},
                    {"memory_used_mib", known_or_null(gpu.memory_used_mib)},
                    {"utilization", known_or_null(gpu.utilization)}});
  }
  json doc = {{"node", beat.node},         {"version", beat.version},   {"time_ms", beat.time_ms},
              {"interval_ms", beat.interval_ms}, {"classes", beat.classes}, {"gpus", gpus},
              {"free_gpus", beat.free_gpus}, {"running", beat.running},   {"draining", beat.draining},
              {"workdir_free_bytes", known_or_null(beat.workdir_free_bytes)},
              {"shm_free_bytes", known_or_null(beat.shm_free_bytes)},
              {"min_free_disk_bytes", beat.min_free_disk_bytes}};
  doc["not_taking"] = beat.not_taking.empty() ? json() : json(beat.not_taking);
  return doc;
}

Result<Heartbeat> heartbeat_from_json(const json& doc) {
  if (!doc.is_object()) return fail(Code::kCorruption, "a heartbeat is not a JSON object");
  Heartbeat beat;
  GPUQ_TRY(read_field(doc, "node", beat.node));
  GPUQ_TRY(read_field(doc, "version", beat.version, false));
  GPUQ_TRY(read_field(doc, "time_ms", beat.time_ms));
  GPUQ_TRY(read_field(doc, "interval_ms", beat.interval_ms));
  GPUQ_TRY(read_field(doc, "classes", beat.classes, false));
  GPUQ_TRY(read_field(doc, "free_gpus", beat.free_gpus, false));
  GPUQ_TRY(read_field(doc, "running", beat.running, false));
  GPUQ_TRY(read_field(doc, "draining", beat.draining, false));
  GPUQ_TRY(read_field(doc, "workdir_free_bytes", beat.workdir_free_bytes, false));
  GPUQ_TRY(read_field(doc, "shm_free_bytes", beat.shm_free_bytes, false));
  GPUQ_TRY(read_field(doc, "min_free_disk_bytes", beat.min_free_disk_bytes, false));
  GPUQ_TRY(read_field(doc, "not_taking", beat.not_taking, false));
  auto gpus = doc.find("gpus");
  if (gpus != doc.end() && gpus->is_array()) {
    for (const auto& item : *gpus) {
      HeartbeatGpu gpu;
      if (!item.is_object()) return fail(Code::kCorruption, "a heartbeat's GPU is not an object");
      GPUQ_TRY(read_field(item, "name", gpu.name));
      GPUQ_TRY(read_field(item, "model", gpu.model, false));
      GPUQ_TRY(read_field(item, "memory_mib", gpu.memory_mib, false));
      GPUQ_TRY(read_field(item, "busy", gpu.busy, false));
      GPUQ_TRY(read_field(item, "memory_used_mib", gpu.memory_used_mib, false));
      GPUQ_TRY(read_field(item, "utilization", gpu.utilization, false));
      beat.gpus.push_back(std::move(gpu));
    }
  }
  return beat;
}

Result<json> parse_object(std::string_view key, std::string_view body) {
  if (json_nesting_beyond(body, kMaxObjectDepth)) {
    return fail(Code::kCorruption, fmt::format("{} nests deeper than {} levels", key, kMaxObjectDepth));
  }
  json doc = json::parse(body, nullptr, false);
  if (doc.is_discarded()) {
    return fail(Code::kCorruption, fmt::format("{} is not valid JSON ({} bytes)", key, body.size()));
  }
  return doc;
}

}  // namespace gpuq::fleet
