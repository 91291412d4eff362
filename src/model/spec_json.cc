// SPDX-License-Identifier: Apache-2.0
#include "model/spec_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <unordered_set>

#include "base/duration.h"
#include "base/time.h"
#include "model/dependency_kind.h"
#include "model/image_ref.h"
#include "model/limits.h"

namespace gpuq {
namespace {

using nlohmann::json;

const std::unordered_set<std::string_view>& known_fields() {
  static const std::unordered_set<std::string_view> fields = {
      "name",     "gpus",      "priority",    "cwd",         "env",          "argv",
      "script",   "after",     "after_any",   "after_notok", "requires",     "wait_file",
      "deps",     "done_if",   "lane",        "lanes",       "retries",      "retry_delay",
      "retry_delay_ms", "timeout", "timeout_ms", "est",      "est_ms",       "gpu_mem",
      "share",    "not_before", "not_before_ms", "hold",     "reservation",  "inputs",
      "outputs",  "source",    "preempt",     "restart_within", "restart_within_ms",
      "requires_warn", "requires_warn_ms", "quiet", "quiet_ms", "warn_after", "warn_after_ms", "fleet_id",
      "resume", "fleet_resume", "claim_deadline_file", "steps", "image", "pull", "container_user"};
  return fields;
}

// Reads the fields of one JSON object. A request names a handful of the ~50 fields a spec has,
// so most lookups are of absent keys: each costs a few string compares in the object's map.
// The reader first notes a 64-bit signature of the keys present (one bit per key, from its
// length and its first and last characters), and a key whose bit is clear is absent without a
// lookup; a set bit is then confirmed by the map. One lookup per field read, not three.
class Reader {
 public:
  Reader(const json& body, SpecOrigin origin) : body_(body), stored_(origin == SpecOrigin::kStore) {
    if (!body.is_object()) return;
    for (const auto& item : body.items()) present_ |= signature(item.key());
    if (const json* source = find("source"); source && source->is_string()) {
      where_ = source->get<std::string>() + ": ";
    }
  }

  // The value of `key`, or nullptr when the object has no such key.
  const json* find(std::string_view key) const {
    if (!(present_ & signature(key))) return nullptr;
    auto found = body_.find(key);
    return found == body_.end() ? nullptr : &*found;
  }
  bool has(std::string_view key) const { return find(key) != nullptr; }

  tl::unexpected<Error> error(const std::string& message) const {
    return fail(Code::kInvalidArgument, where_ + message);
  }

  // A NUL byte would silently cut the text short where the daemon hands it to the OS (argv,
  // paths, the environment), so it is refused wherever it could end up there.
  Status no_nul(std::string_view field, const std::string& text) const {
    if (text.find('\0') == std::string::npos) return ok();
    return error(fmt::format("field '{}' contains a NUL byte; remove it", field));
  }

  Status string(const char* key, std::string& out) const {
    const json* value = find(key);
    if (!value) return ok();
    if (!value->is_string()) return error(fmt::format("field '{}' must be a string", key));
    if (auto st = no_nul(key, value->get_ref<const std::string&>()); !st) return st;
    out = value->get<std::string>();
    return ok();
  }

  // A container image (model/image_ref.h). A stored one is taken as it was accepted, so that a
  // stricter check later cannot make a job unreadable.
  Status image(const char* key, std::string& out) const {
    if (auto st = string(key, out); !st) return st;
    if (stored_ || !has(key)) return ok();
    if (auto st = check_image_reference(out); !st) {
      return error(fmt::format("field '{}': {}", key, st.error().message));
    }
    return ok();
  }

  Status boolean(const char* key, bool& out) const {
    const json* value = find(key);
    if (!value) return ok();
    if (!value->is_boolean()) return error(fmt::format("field '{}' must be true or false", key));
    out = value->get<bool>();
    return ok();
  }

  // `meaning` follows the range in the message, e.g. " (365 days)".
  Status integer(std::string_view key, int64_t& out, int64_t min, int64_t max,
                 std::string_view meaning = "") const {
    const json* found = find(key);
    if (!found) return ok();
    const json& value = *found;
    if (!value.is_number_integer()) return error(fmt::format("field '{}' must be an integer", key));
    auto v = json_int64(value);
    // A stored spec was accepted under the limits of its day; a later, tighter limit must not
    // make a job unreadable (the daemon handles any int64 safely: saturating times, timers).
    if (stored_) max = INT64_MAX;
    if (!v || *v < min || *v > max) {
      return error(fmt::format("field '{}' is {}; it must be between {} and {}{}", key,
                               value.dump(), min, max, meaning));
    }
    out = *v;
    return ok();
  }

  // A list of strings, or one string standing for a list of one.
  Status strings(const char* key, std::vector<std::string>& out) const {
    const json* found = find(key);
    if (!found) return ok();
    const json& v = *found;
    if (v.is_string()) {
      if (auto st = no_nul(key, v.get_ref<const std::string&>()); !st) return st;
      out.push_back(v.get<std::string>());
      return ok();
    }
    if (!v.is_array()) return error(fmt::format("field '{}' must be a list of strings", key));
    for (const auto& item : v) {
      if (!item.is_string()) return error(fmt::format("field '{}' must be a list of strings", key));
      if (auto st = no_nul(key, item.get_ref<const std::string&>()); !st) return st;
      out.push_back(item.get<std::string>());
    }
    return ok();
  }

  // A duration given as "2h30m" under `key` or as milliseconds under `key`_ms, at most
  // limits::kMaxDurationMs.
  Status duration(const char* key, int64_t& out) const {
    char ms_key[40];  // `key` + "_ms": every duration field's name is short
    size_t length = std::min(std::strlen(key), sizeof ms_key - 3);
    std::memcpy(ms_key, key, length);
    std::memcpy(ms_key + length, "_ms", 3);
    std::string_view ms(ms_key, length + 3);
    const json* text = find(key);
    const json* millis = find(ms);
    if (text && millis) return error(fmt::format("give '{}' or '{}', not both", key, ms));
    if (millis) {
      return integer(ms, out, 0, limits::kMaxDurationMs,
                     fmt::format(" ({})", limits::kMaxDurationText));
    }
    if (!text) return ok();
    if (!text->is_string()) return error(fmt::format("field '{}' must be a duration such as \"2h\"", key));
    auto parsed = parse_duration(text->get<std::string>());
    if (!parsed) return error(fmt::format("field '{}': {}", key, parsed.error().message));
    if (parsed->count() > limits::kMaxDurationMs) {
      return error(fmt::format("field '{}' is {}; it must be at most {}", key,
                               format_duration(*parsed), limits::kMaxDurationText));
    }
    out = parsed->count();
    return ok();
  }

 private:
  static uint64_t signature(std::string_view key) {
    if (key.empty()) return 1;
    auto c = [](char ch) { return static_cast<uint64_t>(static_cast<unsigned char>(ch)); };
    return uint64_t{1} << ((key.size() * 7 + c(key.front()) + c(key.back()) * 3) & 63);
  }

  const json& body_;
  bool stored_ = false;
  uint64_t present_ = 0;  // signature() of every key of body_, or'ed
  std::string where_;
};

#define GPUQ_TRY(expr)                                         \
  do {                                                         \
    if (auto st_ = (expr); !st_) return tl::unexpected(st_.error()); \
  } while (0)

Status read_deps(const Reader& r, JobSpec& spec) {
  struct Form { const char* key; Dependency::Kind kind; };
  for (Form f : {Form{"after", Dependency::Kind::kAfterOk}, Form{"after_any", Dependency::Kind::kAfterAny},
                 Form{"after_notok", Dependency::Kind::kAfterNotOk}, Form{"wait_file", Dependency::Kind::kFile},
                 Form{"requires", Dependency::Kind::kRequires}}) {
    std::vector<std::string> targets;
    GPUQ_TRY(r.strings(f.key, targets));
    for (auto& t : targets) {
      if (t.empty()) return r.error(fmt::format("field '{}' has an empty entry", f.key));
      spec.deps.push_back({f.kind, std::move(t), 0});
    }
  }
  if (!r.has("deps")) return ok();
  if (!(*r.find("deps")).is_array()) return r.error("field 'deps' must be a list of {kind, target}");
  for (const auto& d : (*r.find("deps"))) {
    if (!d.is_object() || !d.contains("kind") || !d.contains("target") || !d["kind"].is_string() ||
        !d["target"].is_string()) {
      return r.error("each entry of 'deps' must be {\"kind\": ..., \"target\": ...}");
    }
    for (const auto& [key, value] : d.items()) {
      if (key != "kind" && key != "target" && key != "job_id") {
        return r.error(fmt::format("unknown field 'deps[].{}'; known: kind, target, job_id",
                                   clip_for_message(key)));
      }
    }
    Dependency dep;
    std::string kind = d["kind"].get<std::string>();
    auto parsed = parse_dependency_kind(kind);
    if (parsed) dep.kind = *parsed;
    if (!parsed) {
      return r.error(fmt::format("unknown dependency kind '{}'; use afterok, afterany, afternotok, "
                                 "file or requires",
                                 clip_for_message(kind)));
    }
    dep.target = d["target"].get<std::string>();
    GPUQ_TRY(r.no_nul("deps[].target", dep.target));
    if (d.contains("job_id")) {
      auto id = json_int64(d["job_id"]);
      if (!d["job_id"].is_number_integer() || !id || *id < 1) {
        return r.error(fmt::format("field 'deps[].job_id' must be a job id (1 to {})", limits::kMaxId));
      }
      dep.job_id = *id;
    }
    spec.deps.push_back(std::move(dep));
  }
  return ok();
}

Status read_script(const Reader& r, JobSpec& spec) {
  if (!r.has("script")) return ok();
  const json& script = (*r.find("script"));
  if (!script.is_object()) return r.error("field 'script' must be an object {name, text, args}");
  for (const auto& [key, value] : script.items()) {
    if (key != "name" && key != "text" && key != "args") {
      return r.error(fmt::format("unknown field 'script.{}'; known: name, text, args",
                                   clip_for_message(key)));
    }
  }
  if (!script.contains("text") || !script["text"].is_string()) {
    return r.error("field 'script.text' must be the script's content");
  }
  // The text itself may hold any byte: the daemon judges scripts (empty, binary) itself.
  spec.script_text = script["text"].get<std::string>();
  spec.script_name = "script";
  if (script.contains("name")) {
    if (!script["name"].is_string()) return r.error("field 'script.name' must be a string");
    spec.script_name = script["name"].get<std::string>();
    GPUQ_TRY(r.no_nul("script.name", spec.script_name));
  }
  if (auto args = Reader(script, SpecOrigin::kRequest).strings("args", spec.script_args); !args) {
    return r.error("field 'script.args' must be a list of strings without NUL bytes");
  }
  return ok();
}

// One entry of `steps`: {"name"?, "argv" | "script", "timeout"/"timeout_ms"?, "done_if"?,
// "image"?}. Errors say what is wrong with the step; the caller says which step it is.
Status read_step(const json& body, JobStep& step, SpecOrigin origin) {
  if (!body.is_object())
    return fail(Code::kInvalidArgument, "a step must be an object with \"argv\" or \"script\"");
  for (const auto& [key, value] : body.items()) {
    if (key != "name" && key != "argv" && key != "script" && key != "timeout" && key != "timeout_ms" &&
        key != "done_if" && key != "image") {
      return fail(
          Code::kInvalidArgument,
          fmt::format("unknown field '{}'; known: name, argv, script, timeout, done_if, image",
                      clip_for_message(key)));
    }
  }
  Reader r(body, origin);
  JobSpec holder;
  GPUQ_TRY(r.strings("argv", step.argv));
  if (r.has("argv") && step.argv.empty())
    return r.error("field 'argv' is empty: name a command to run");
  GPUQ_TRY(read_script(r, holder));
  if (r.has("argv") == r.has("script")) {
    return r.error("give exactly one of 'argv' (a command) or 'script'");
  }
  step.script_name = std::move(holder.script_name);
  step.script_text = std::move(holder.script_text);
  step.script_args = std::move(holder.script_args);
  GPUQ_TRY(r.string("name", step.name));
  if (step.name.empty()) step.name = default_step_name(step);
  GPUQ_TRY(r.duration("timeout", step.timeout_ms));
  GPUQ_TRY(r.string("done_if", step.done_if));
  GPUQ_TRY(r.image("image", step.image));
  return ok();
}

Status read_steps(const Reader& r, JobSpec& spec, SpecOrigin origin) {
  if (!r.has("steps")) return ok();
  const json& steps = (*r.find("steps"));
  if (!steps.is_array()) return r.error("field 'steps' must be a list of steps ({\"argv\": [...]} or {\"script\": ...})");
  if (steps.empty()) return r.error("field 'steps' is empty: give at least one step, or use 'argv' or 'script'");
  if (steps.size() > static_cast<size_t>(limits::kMaxSteps)) {
    return r.error(fmt::format("field 'steps' has {} steps; a job has at most {}", steps.size(), limits::kMaxSteps));
  }
  if (r.has("argv") || r.has("script")) {
    return r.error("give 'steps' or 'argv'/'script', not both: with steps, each step says what it runs");
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    JobStep step;
    if (auto st = read_step(steps[i], step, origin); !st) {
      return r.error(fmt::format("steps[{}]: {}", i, st.error().message));
    }
    spec.steps.push_back(std::move(step));
  }
  return ok();
}

Status read_container(const Reader& r, JobSpec& spec, SpecOrigin origin) {
  GPUQ_TRY(r.image("image", spec.image));
  std::string pull;
  GPUQ_TRY(r.string("pull", pull));
  if (!pull.empty()) {
    auto policy = parse_pull_policy(pull);
    if (!policy) return r.error("field 'pull': " + policy.error().message);
    spec.pull = *policy;
  }
  GPUQ_TRY(r.string("container_user", spec.container_user));
  if (origin != SpecOrigin::kStore && r.has("container_user")) {
    if (auto st = check_container_user(spec.container_user); !st) {
      return r.error("field 'container_user': " + st.error().message);
    }
  }
  if (!uses_image(spec) && (r.has("pull") || !spec.container_user.empty())) {
    return r.error(fmt::format("field '{}' applies only to container jobs; add \"image\" or remove it",
                               r.has("pull") ? "pull" : "container_user"));
  }
  return ok();
}

// `preempt` and `restart_within`: the second only means something for restartable jobs, so
// it is refused anywhere else rather than silently ignored.
Status read_preemption(const Reader& r, JobSpec& spec) {
  if (r.has("preempt")) {
    if (!(*r.find("preempt")).is_string()) {
      return r.error("field 'preempt' must be \"yield\", \"restart\" or \"never\"");
    }
    auto mode = parse_preempt_mode((*r.find("preempt")).get<std::string>());
    if (!mode) return r.error(mode.error().message);
    spec.preempt = *mode;
  }
  GPUQ_TRY(r.duration("restart_within", spec.restart_within_ms));
  bool within = r.has("restart_within") || r.has("restart_within_ms");
  if (within && spec.preempt != PreemptMode::kRestart) {
    return r.error(fmt::format(
        "'restart_within' applies only to \"preempt\": \"restart\" (this job's mode is {}); "
        "add \"preempt\": \"restart\" or remove it",
        to_string(spec.preempt)));
  }
  return ok();
}

// The GPU lane (model/job.h, `# LANE=gpu`) is no lane of config.toml: taken out of the lanes, it
// gives the job a GPU unless it asks for more; with 'gpus' 0 it is a contradiction.
Status read_gpu_lane(const Reader& r, JobSpec& spec) {
  if (std::erase(spec.lanes, kGpuLaneName) == 0 || spec.gpus > 0) return ok();
  if (r.has("gpus")) return r.error("lane 'gpu' is the GPU lane, whose jobs hold a GPU, and 'gpus' is 0: "
                                     "remove the lane, or ask for one GPU or more");
  spec.gpus = 1;
  return ok();
}

Status read_priority(const Reader& r, JobSpec& spec) {
  if (!r.has("priority")) return ok();
  auto parsed = priority_from_json((*r.find("priority")));
  if (!parsed) return r.error(parsed.error().message);
  spec.priority = *parsed;
  return ok();
}

Status read_env(const Reader& r, JobSpec& spec) {
  if (!r.has("env")) return ok();
  if (!(*r.find("env")).is_object()) return r.error("field 'env' must be an object of strings");
  for (const auto& [k, v] : (*r.find("env")).items()) {
    if (!v.is_string()) return r.error(fmt::format("env value of '{}' must be a string", k));
    if (auto valid = check_env_var(k, v.get_ref<const std::string&>()); !valid) {
      return r.error(valid.error().message);
    }
    spec.env[k] = v.get<std::string>();
  }
  return ok();
}

// `not_before` as RFC 3339 or epoch ms, or `not_before_ms`: before limits::kEndOfTimeMs, so
// the daemon's timers never see an instant they cannot represent.
Status read_not_before(const Reader& r, JobSpec& spec) {
  if (r.has("not_before") && r.has("not_before_ms")) {
    return r.error("give 'not_before' or 'not_before_ms', not both");
  }
  if (!r.has("not_before") && !r.has("not_before_ms")) return ok();
  std::string range = fmt::format(" (before {})", limits::kEndOfTimeText);
  if (!r.has("not_before") || !(*r.find("not_before")).is_string()) {
    GPUQ_TRY(r.integer("not_before", spec.not_before_ms, 0, limits::kEndOfTimeMs - 1, range));
    return r.integer("not_before_ms", spec.not_before_ms, 0, limits::kEndOfTimeMs - 1, range);
  }
  auto t = parse_rfc3339((*r.find("not_before")).get<std::string>());
  if (!t) return r.error("field 'not_before': " + t.error().message);
  if (*t < 0 || *t >= limits::kEndOfTimeMs) {
    return r.error(fmt::format("field 'not_before' is {}; it must be after 1970 and before {}",
                               (*r.find("not_before")).get<std::string>().substr(0, 40),
                               limits::kEndOfTimeText));
  }
  spec.not_before_ms = *t;
  return ok();
}

}  // namespace

std::optional<int64_t> json_int64(const json& value) {
  if (value.is_number_unsigned()) {
    auto v = value.get<uint64_t>();
    if (v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(v);
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  return std::nullopt;
}

Result<int> priority_from_json(const json& value) {
  Result<int> parsed = fail(Code::kInvalidArgument, "");
  if (value.is_string()) {
    parsed = parse_priority(value.get<std::string>());
  } else if (auto v = json_int64(value); value.is_number_integer() && v) {
    parsed = parse_priority(std::to_string(*v));
  } else {
    return fail(Code::kInvalidArgument,
                fmt::format("field 'priority' must be high, normal, low or an integer {}..{}",
                            limits::kMinPriority, limits::kMaxPriority));
  }
  if (!parsed) return fail(Code::kInvalidArgument, "field 'priority': " + parsed.error().message);
  return parsed;
}

Status check_env_var(std::string_view name, std::string_view value) {
  auto bad = [](std::string message) { return fail(Code::kInvalidArgument, std::move(message)); };
  if (name.empty()) return bad("env has a variable with an empty name; remove it");
  if (name.find('\0') != std::string_view::npos) {
    return bad("env variable name contains a NUL byte; remove it");
  }
  if (name.find('=') != std::string_view::npos) {
    return bad(fmt::format("env variable name '{}' contains '=': a name cannot hold '=' (the "
                           "run would see a different variable); rename it",
                           name.substr(0, 80)));
  }
  if (value.find('\0') != std::string_view::npos) {
    return bad(fmt::format("env value of '{}' contains a NUL byte; remove it", name.substr(0, 80)));
  }
  return ok();
}

Result<JobSpec> spec_from_json(const json& body, SpecOrigin origin) {
  if (!body.is_object()) return fail(Code::kInvalidArgument, "a job must be a JSON object");
  Reader r(body, origin);
  for (const auto& [key, value] : body.items()) {
    if (!known_fields().count(key)) {
      return r.error(fmt::format("unknown field '{}' (see docs/api.md, \"Submit request\")",
                                 clip_for_message(key)));
    }
  }
  JobSpec spec;
  GPUQ_TRY(r.string("name", spec.name));
  // An element of an array or grid is BASE[...] (docs/sweeps.md): its brackets may hold the
  // ',' and '=' of NAME[lr=3e-4,seed=2]; the base follows the rule of every name.
  std::string_view base = spec.name, suffix;
  if (size_t open = spec.name.find('['); open != std::string::npos && spec.name.back() == ']') {
    base = std::string_view(spec.name).substr(0, open);
    suffix = std::string_view(spec.name).substr(open + 1, spec.name.size() - open - 2);
  }
  bool bad_suffix = spec.name.find('[') != std::string::npos &&
                    (suffix.empty() || suffix.find_first_of(" /\t\n:[]") != std::string_view::npos);
  if (base.find_first_of(" /\t\n:,]") != std::string_view::npos || bad_suffix ||
      (!spec.name.empty() && spec.name.find_first_not_of("0123456789") == std::string::npos)) {
    return r.error(fmt::format("bad job name '{}': use letters, digits, '-', '_' or '.', not only "
                               "digits (numbers are job ids)",
                               spec.name));
  }
  int64_t gpus = 0;
  GPUQ_TRY(r.integer("gpus", gpus, 0, limits::kMaxJobGpus));
  spec.gpus = static_cast<int>(gpus);
  GPUQ_TRY(read_priority(r, spec));
  GPUQ_TRY(r.string("cwd", spec.cwd));
  GPUQ_TRY(read_env(r, spec));
  GPUQ_TRY(r.strings("argv", spec.argv));
  if (r.has("argv") && spec.argv.empty()) return r.error("field 'argv' is empty: name a command to run");
  GPUQ_TRY(read_script(r, spec));
  GPUQ_TRY(read_steps(r, spec, origin));
  if (!r.has("steps") && r.has("argv") == r.has("script")) {
    return r.error("give exactly one of 'argv' (a command), 'script' or 'steps'");
  }
  GPUQ_TRY(read_container(r, spec, origin));
  GPUQ_TRY(read_deps(r, spec));
  GPUQ_TRY(r.string("done_if", spec.done_if));
  GPUQ_TRY(r.strings("lane", spec.lanes));
  GPUQ_TRY(r.strings("lanes", spec.lanes));
  GPUQ_TRY(read_gpu_lane(r, spec));
  int64_t retries = 0;
  GPUQ_TRY(r.integer("retries", retries, 0, limits::kMaxRetries));
  spec.retries = static_cast<int>(retries);
  GPUQ_TRY(r.duration("retry_delay", spec.retry_delay_ms));
  GPUQ_TRY(r.duration("timeout", spec.timeout_ms));
  GPUQ_TRY(r.duration("est", spec.estimate_ms));
  GPUQ_TRY(r.integer("gpu_mem", spec.gpu_mem_mib, 0, limits::kMaxGpuMemMib));
  GPUQ_TRY(r.boolean("share", spec.share));
  if (spec.share && spec.gpu_mem_mib == 0) {
    return r.error("'share' needs 'gpu_mem': say how much GPU memory the job uses, so sharing jobs fit");
  }
  GPUQ_TRY(read_not_before(r, spec));
  GPUQ_TRY(r.boolean("hold", spec.hold));
  GPUQ_TRY(r.string("reservation", spec.reservation));
  GPUQ_TRY(read_preemption(r, spec));
  GPUQ_TRY(r.duration("requires_warn", spec.requires_warn_ms));
  GPUQ_TRY(r.duration("quiet", spec.quiet_ms));
  GPUQ_TRY(r.duration("warn_after", spec.warn_after_ms));
  GPUQ_TRY(r.strings("inputs", spec.inputs));
  GPUQ_TRY(r.strings("outputs", spec.outputs));
  GPUQ_TRY(r.boolean("resume", spec.resume));
  GPUQ_TRY(r.string("source", spec.source));
  GPUQ_TRY(r.string("fleet_id", spec.fleet_id));
  GPUQ_TRY(r.boolean("fleet_resume", spec.fleet_resume));
  // The fleet agent's own: a request may not name a file for the shim to read.
  if (origin == SpecOrigin::kRequest && r.has("claim_deadline_file")) {
    return r.error("field 'claim_deadline_file' is set by a node's fleet agent only");
  }
  GPUQ_TRY(r.string("claim_deadline_file", spec.claim_deadline_file));
  return spec;
}

Result<JobStep> step_from_json(const json& body) {
  JobStep step;
  if (auto st = read_step(body, step, SpecOrigin::kRequest); !st) return tl::unexpected(st.error());
  return step;
}

json job_step_to_json(const JobStep& step) {
  json j = {{"name", step.name}};
  if (step.script_text.empty() && step.script_name.empty()) {
    j["argv"] = step.argv;
  } else {
    j["script"] = {{"name", step.script_name}, {"text", step.script_text}, {"args", step.script_args}};
  }
  if (step.timeout_ms) j["timeout_ms"] = step.timeout_ms;
  if (!step.done_if.empty()) j["done_if"] = step.done_if;
  if (!step.image.empty()) j["image"] = step.image;
  return j;
}

json spec_to_json(const JobSpec& spec) {
  json j = {{"gpus", spec.gpus}, {"priority", spec.priority}, {"cwd", spec.cwd}, {"env", spec.env}};
  if (!spec.name.empty()) j["name"] = spec.name;
  if (!spec.steps.empty()) {
    json steps = json::array();
    for (const auto& step : spec.steps) steps.push_back(job_step_to_json(step));
    j["steps"] = std::move(steps);
  } else if (spec.script_text.empty()) {
    j["argv"] = spec.argv;
  } else {
    j["script"] = {{"name", spec.script_name}, {"text", spec.script_text}, {"args", spec.script_args}};
  }
  if (!spec.image.empty()) j["image"] = spec.image;
  if (spec.pull != PullPolicy::kMissing) j["pull"] = to_string(spec.pull);
  if (!spec.container_user.empty()) j["container_user"] = spec.container_user;
  if (!spec.deps.empty()) {
    json deps = json::array();
    for (const auto& d : spec.deps) {
      json entry = {{"kind", to_string(d.kind)}, {"target", d.target}};
      if (d.job_id) entry["job_id"] = d.job_id;
      deps.push_back(std::move(entry));
    }
    j["deps"] = std::move(deps);
  }
  if (!spec.done_if.empty()) j["done_if"] = spec.done_if;
  if (!spec.lanes.empty()) j["lanes"] = spec.lanes;
  if (spec.retries) j["retries"] = spec.retries;
  if (spec.retry_delay_ms >= 0) j["retry_delay_ms"] = spec.retry_delay_ms;
  if (spec.timeout_ms) j["timeout_ms"] = spec.timeout_ms;
  if (spec.estimate_ms) j["est_ms"] = spec.estimate_ms;
  if (spec.gpu_mem_mib) j["gpu_mem"] = spec.gpu_mem_mib;
  if (spec.share) j["share"] = true;
  if (spec.not_before_ms) j["not_before_ms"] = spec.not_before_ms;
  if (spec.hold) j["hold"] = true;
  if (!spec.reservation.empty()) j["reservation"] = spec.reservation;
  // Defaults are left out, so specs stored before preemption existed read the same.
  if (spec.preempt != PreemptMode::kNever) j["preempt"] = to_string(spec.preempt);
  if (spec.restart_within_ms) j["restart_within_ms"] = spec.restart_within_ms;
  if (spec.requires_warn_ms >= 0) j["requires_warn_ms"] = spec.requires_warn_ms;
  if (spec.quiet_ms >= 0) j["quiet_ms"] = spec.quiet_ms;
  if (spec.warn_after_ms) j["warn_after_ms"] = spec.warn_after_ms;
  if (!spec.inputs.empty()) j["inputs"] = spec.inputs;
  if (!spec.outputs.empty()) j["outputs"] = spec.outputs;
  if (!spec.resume) j["resume"] = false;
  if (!spec.source.empty()) j["source"] = spec.source;
  if (!spec.fleet_id.empty()) j["fleet_id"] = spec.fleet_id;
  if (spec.fleet_resume) j["fleet_resume"] = true;
  if (!spec.claim_deadline_file.empty()) j["claim_deadline_file"] = spec.claim_deadline_file;
  return j;
}

}  // namespace gpuq
