#include "model/spec_json.h"

#include <fmt/format.h>
#include <set>

#include "base/duration.h"
#include "base/time.h"

namespace gpuq {
namespace {

using nlohmann::json;

const std::set<std::string>& known_fields() {
  static const std::set<std::string> fields = {
      "name",     "gpus",      "priority",    "cwd",         "env",          "argv",
      "script",   "after",     "after_any",   "after_notok", "requires",     "wait_file",
      "deps",     "done_if",   "lane",        "lanes",       "retries",      "retry_delay",
      "retry_delay_ms", "timeout", "timeout_ms", "est",      "est_ms",       "gpu_mem",
      "share",    "not_before", "not_before_ms", "hold",     "reservation",  "inputs",
      "outputs",  "source",    "preempt",     "restart_within", "restart_within_ms",
      "requires_warn", "requires_warn_ms", "quiet", "quiet_ms", "warn_after", "warn_after_ms"};
  return fields;
}

class Reader {
 public:
  explicit Reader(const json& body) : body_(body) {
    if (body.is_object() && body.contains("source") && body["source"].is_string()) {
      where_ = body["source"].get<std::string>() + ": ";
    }
  }

  tl::unexpected<Error> error(const std::string& message) const {
    return fail(Code::kInvalidArgument, where_ + message);
  }

  Status string(const char* key, std::string& out) const {
    if (!body_.contains(key)) return ok();
    if (!body_[key].is_string()) return error(fmt::format("field '{}' must be a string", key));
    out = body_[key].get<std::string>();
    return ok();
  }

  Status boolean(const char* key, bool& out) const {
    if (!body_.contains(key)) return ok();
    if (!body_[key].is_boolean()) return error(fmt::format("field '{}' must be true or false", key));
    out = body_[key].get<bool>();
    return ok();
  }

  Status integer(const char* key, int64_t& out, int64_t min, int64_t max) const {
    if (!body_.contains(key)) return ok();
    if (!body_[key].is_number_integer()) return error(fmt::format("field '{}' must be an integer", key));
    int64_t v = body_[key].get<int64_t>();
    if (v < min || v > max) {
      return error(fmt::format("field '{}' is {}; it must be between {} and {}", key, v, min, max));
    }
    out = v;
    return ok();
  }

  // A list of strings, or one string standing for a list of one.
  Status strings(const char* key, std::vector<std::string>& out) const {
    if (!body_.contains(key)) return ok();
    const json& v = body_[key];
    if (v.is_string()) {
      out.push_back(v.get<std::string>());
      return ok();
    }
    if (!v.is_array()) return error(fmt::format("field '{}' must be a list of strings", key));
    for (const auto& item : v) {
      if (!item.is_string()) return error(fmt::format("field '{}' must be a list of strings", key));
      out.push_back(item.get<std::string>());
    }
    return ok();
  }

  // A duration given as "2h30m" under `key` or as milliseconds under `key`_ms.
  Status duration(const char* key, int64_t& out) const {
    std::string ms_key = std::string(key) + "_ms";
    if (body_.contains(key) && body_.contains(ms_key)) {
      return error(fmt::format("give '{}' or '{}', not both", key, ms_key));
    }
    if (body_.contains(ms_key)) return integer(ms_key.c_str(), out, 0, INT64_MAX / 4);
    if (!body_.contains(key)) return ok();
    if (!body_[key].is_string()) return error(fmt::format("field '{}' must be a duration such as \"2h\"", key));
    auto parsed = parse_duration(body_[key].get<std::string>());
    if (!parsed) return error(fmt::format("field '{}': {}", key, parsed.error().message));
    out = parsed->count();
    return ok();
  }

 private:
  const json& body_;
  std::string where_;
};

#define GPUQ_TRY(expr)                                         \
  do {                                                         \
    if (auto st_ = (expr); !st_) return tl::unexpected(st_.error()); \
  } while (0)

Status read_deps(const Reader& r, const json& body, JobSpec& spec) {
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
  if (!body.contains("deps")) return ok();
  if (!body["deps"].is_array()) return r.error("field 'deps' must be a list of {kind, target}");
  for (const auto& d : body["deps"]) {
    if (!d.is_object() || !d.contains("kind") || !d.contains("target") || !d["kind"].is_string() ||
        !d["target"].is_string()) {
      return r.error("each entry of 'deps' must be {\"kind\": ..., \"target\": ...}");
    }
    Dependency dep;
    std::string kind = d["kind"].get<std::string>();
    bool known = false;
    for (auto k : {Dependency::Kind::kAfterOk, Dependency::Kind::kAfterAny, Dependency::Kind::kAfterNotOk,
                   Dependency::Kind::kFile, Dependency::Kind::kRequires}) {
      if (to_string(k) == kind) {
        dep.kind = k;
        known = true;
      }
    }
    if (!known) {
      return r.error(fmt::format("unknown dependency kind '{}'; use afterok, afterany, afternotok, "
                                 "file or requires",
                                 kind));
    }
    dep.target = d["target"].get<std::string>();
    if (d.contains("job_id") && d["job_id"].is_number_integer()) dep.job_id = d["job_id"].get<int64_t>();
    spec.deps.push_back(std::move(dep));
  }
  return ok();
}

Status read_script(const Reader& r, const json& body, JobSpec& spec) {
  if (!body.contains("script")) return ok();
  const json& script = body["script"];
  if (!script.is_object()) return r.error("field 'script' must be an object {name, text, args}");
  for (const auto& [key, value] : script.items()) {
    if (key != "name" && key != "text" && key != "args") {
      return r.error(fmt::format("unknown field 'script.{}'; known: name, text, args", key));
    }
  }
  if (!script.contains("text") || !script["text"].is_string()) {
    return r.error("field 'script.text' must be the script's content");
  }
  spec.script_text = script["text"].get<std::string>();
  spec.script_name = script.value("name", std::string("script"));
  if (script.contains("args")) {
    Reader args(script);
    GPUQ_TRY(args.strings("args", spec.script_args));
  }
  return ok();
}

// `preempt` and `restart_within`: the second only means something for restartable jobs, so
// it is refused anywhere else rather than silently ignored.
Status read_preemption(const Reader& r, const json& body, JobSpec& spec) {
  if (body.contains("preempt")) {
    if (!body["preempt"].is_string()) {
      return r.error("field 'preempt' must be \"yield\", \"restart\" or \"never\"");
    }
    auto mode = parse_preempt_mode(body["preempt"].get<std::string>());
    if (!mode) return r.error(mode.error().message);
    spec.preempt = *mode;
  }
  GPUQ_TRY(r.duration("restart_within", spec.restart_within_ms));
  bool within = body.contains("restart_within") || body.contains("restart_within_ms");
  if (within && spec.preempt != PreemptMode::kRestart) {
    return r.error(fmt::format(
        "'restart_within' applies only to \"preempt\": \"restart\" (this job's mode is {}); "
        "add \"preempt\": \"restart\" or remove it",
        to_string(spec.preempt)));
  }
  return ok();
}

}  // namespace

Result<JobSpec> spec_from_json(const json& body) {
  if (!body.is_object()) return fail(Code::kInvalidArgument, "a job must be a JSON object");
  Reader r(body);
  for (const auto& [key, value] : body.items()) {
    if (!known_fields().count(key)) {
      return r.error(fmt::format("unknown field '{}' (see docs/api.md, \"Submit request\")", key));
    }
  }
  JobSpec spec;
  GPUQ_TRY(r.string("name", spec.name));
  if (spec.name.find_first_of(" /\t\n:,") != std::string::npos ||
      (!spec.name.empty() && spec.name.find_first_not_of("0123456789") == std::string::npos)) {
    return r.error(fmt::format("bad job name '{}': use letters, digits, '-', '_' or '.', not only "
                               "digits (numbers are job ids)",
                               spec.name));
  }
  int64_t gpus = 0;
  GPUQ_TRY(r.integer("gpus", gpus, 0, 1024));
  spec.gpus = static_cast<int>(gpus);
  if (body.contains("priority")) {
    const json& p = body["priority"];
    auto parsed = p.is_string() ? parse_priority(p.get<std::string>())
                  : p.is_number_integer() ? parse_priority(std::to_string(p.get<int64_t>()))
                                          : parse_priority("?");
    if (!parsed) return r.error(parsed.error().message);
    spec.priority = *parsed;
  }
  GPUQ_TRY(r.string("cwd", spec.cwd));
  if (body.contains("env")) {
    if (!body["env"].is_object()) return r.error("field 'env' must be an object of strings");
    for (const auto& [k, v] : body["env"].items()) {
      if (!v.is_string()) return r.error(fmt::format("env value of '{}' must be a string", k));
      spec.env[k] = v.get<std::string>();
    }
  }
  GPUQ_TRY(r.strings("argv", spec.argv));
  if (body.contains("argv") && spec.argv.empty()) return r.error("field 'argv' is empty: name a command to run");
  GPUQ_TRY(read_script(r, body, spec));
  if (body.contains("argv") == body.contains("script")) {
    return r.error("give exactly one of 'argv' (a command) or 'script'");
  }
  GPUQ_TRY(read_deps(r, body, spec));
  GPUQ_TRY(r.string("done_if", spec.done_if));
  GPUQ_TRY(r.strings("lane", spec.lanes));
  GPUQ_TRY(r.strings("lanes", spec.lanes));
  int64_t retries = 0;
  GPUQ_TRY(r.integer("retries", retries, 0, 1000));
  spec.retries = static_cast<int>(retries);
  GPUQ_TRY(r.duration("retry_delay", spec.retry_delay_ms));
  GPUQ_TRY(r.duration("timeout", spec.timeout_ms));
  GPUQ_TRY(r.duration("est", spec.estimate_ms));
  GPUQ_TRY(r.integer("gpu_mem", spec.gpu_mem_mib, 0, int64_t{1} << 30));
  GPUQ_TRY(r.boolean("share", spec.share));
  if (spec.share && spec.gpu_mem_mib == 0) {
    return r.error("'share' needs 'gpu_mem': say how much GPU memory the job uses, so sharing jobs fit");
  }
  if (body.contains("not_before") && body["not_before"].is_string()) {
    auto t = parse_rfc3339(body["not_before"].get<std::string>());
    if (!t) return r.error(t.error().message);
    // The stored form is not_before_ms, which must be >= 0; an earlier time means "now" anyway.
    if (*t < 0) {
      return r.error(fmt::format("field 'not_before' is before 1970 ({}); give a later time, or "
                                 "leave it out to start as soon as possible",
                                 body["not_before"].get<std::string>()));
    }
    spec.not_before_ms = *t;
  } else if (body.contains("not_before")) {
    GPUQ_TRY(r.integer("not_before", spec.not_before_ms, 0, INT64_MAX / 4));
  }
  GPUQ_TRY(r.integer("not_before_ms", spec.not_before_ms, 0, INT64_MAX / 4));
  GPUQ_TRY(r.boolean("hold", spec.hold));
  GPUQ_TRY(r.string("reservation", spec.reservation));
  GPUQ_TRY(read_preemption(r, body, spec));
  GPUQ_TRY(r.duration("requires_warn", spec.requires_warn_ms));
  GPUQ_TRY(r.duration("quiet", spec.quiet_ms));
  GPUQ_TRY(r.duration("warn_after", spec.warn_after_ms));
  GPUQ_TRY(r.strings("inputs", spec.inputs));
  GPUQ_TRY(r.strings("outputs", spec.outputs));
  GPUQ_TRY(r.string("source", spec.source));
  return spec;
}

json spec_to_json(const JobSpec& spec) {
  json j = {{"gpus", spec.gpus}, {"priority", spec.priority}, {"cwd", spec.cwd}, {"env", spec.env}};
  if (!spec.name.empty()) j["name"] = spec.name;
  if (spec.script_text.empty()) {
    j["argv"] = spec.argv;
  } else {
    j["script"] = {{"name", spec.script_name}, {"text", spec.script_text}, {"args", spec.script_args}};
  }
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
  if (!spec.source.empty()) j["source"] = spec.source;
  return j;
}

}  // namespace gpuq
