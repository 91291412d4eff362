// SPDX-License-Identifier: Apache-2.0
#include "api/bodies.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <limits>
#include <fmt/format.h>

#include "base/duration.h"
#include "base/time.h"
#include "model/limits.h"
#include "model/spec_json.h"
#include "spec/sweep.h"

namespace gpuq::api {
namespace {

using nlohmann::json;

std::string clip(std::string_view text) { return clip_for_message(text); }

// Thrown by the parser callback to stop at the first container past the nesting limit, before
// anything below it is read or built; caught in parse_json_body, never beyond it.
struct TooDeep {};

// `text` as a whole number in [min, max]; `what` names it in the error ("query parameter
// 'after'").
Result<int64_t> whole_number(std::string_view what, std::string_view text, int64_t min, int64_t max) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < min ||
      value > max) {
    return invalid_argument(fmt::format("{} must be a whole number from {} to {}, not '{}'", what, min, max,
                               clip(text)));
  }
  return value;
}

// A query parameter that must be a whole number in [min, max]; `fallback` when absent.
Result<int64_t> query_number(const Target& target, std::string_view key, int64_t fallback,
                             int64_t min, int64_t max = INT64_MAX) {
  const std::string* text = target.find(key);
  if (text == nullptr) return fallback;
  return whole_number(fmt::format("query parameter '{}'", key), *text, min, max);
}

Result<daemon::PlanReservation> decode_reservation(const json& entry, size_t index) {
  std::string field = fmt::format("reservations[{}]", index);
  if (!entry.is_object()) {
    return invalid_argument(field + " must be {\"name\", \"gpus\": [indices], \"jobs\": [names]}");
  }
  for (const auto& [key, value] : entry.items()) {
    if (key != "name" && key != "gpus" && key != "jobs") {
      return invalid_argument(fmt::format("unknown field '{}.{}'; known: name, gpus, jobs", field, clip(key)));
    }
  }
  daemon::PlanReservation reservation;
  reservation.name = "r" + std::to_string(index);
  if (entry.contains("name")) {
    if (!entry["name"].is_string() || entry["name"].get_ref<const std::string&>().empty()) {
      return invalid_argument(fmt::format("field '{}.name' must be a name (a non-empty string)", field));
    }
    reservation.name = entry["name"].get<std::string>();
  }
  std::string gpus_error = fmt::format("field '{}.gpus' must be a list of GPU indices (0 to {})",
                                       field, limits::kMaxJobGpus - 1);
  if (!entry.contains("gpus") || !entry["gpus"].is_array()) return invalid_argument(gpus_error);
  for (const json& gpu : entry["gpus"]) {
    auto index_value = json_int64(gpu);
    if (!gpu.is_number_integer() || !index_value || *index_value < 0 ||
        *index_value >= limits::kMaxJobGpus) {
      return invalid_argument(gpus_error);
    }
    reservation.gpus.push_back(static_cast<int>(*index_value));
  }
  std::string jobs_error = fmt::format("field '{}.jobs' must be a list of job names", field);
  if (!entry.contains("jobs") || !entry["jobs"].is_array()) return invalid_argument(jobs_error);
  for (const json& name : entry["jobs"]) {
    if (!name.is_string() || name.get_ref<const std::string&>().empty()) return invalid_argument(jobs_error);
    reservation.jobs.push_back(name.get<std::string>());
  }
  return reservation;
}

}  // namespace

Result<json> parse_json_body(std::string_view body) {
  if (body.size() > limits::kMaxBodyBytes) {
    return invalid_argument(fmt::format("the body is larger than {} MiB, the most the daemon reads",
                               limits::kMaxBodyBytes >> 20));
  }
  // The callback sees each container before its contents, with the number of containers
  // around it: the first one past the limit stops the parse.
  auto limit_depth = [](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= limits::kMaxJsonDepth) {
      throw TooDeep{};
    }
    return true;
  };
  try {
    return json::parse(body.begin(), body.end(), limit_depth);
  } catch (const TooDeep&) {
    return invalid_argument(fmt::format("the body nests arrays and objects more than {} deep; no request "
                               "of docs/api.md needs more than 4",
                               limits::kMaxJsonDepth));
  } catch (const json::parse_error& e) {
    // Not e.what(): it quotes the last token read, which may be most of the body.
    return invalid_argument(fmt::format("the body is not valid JSON (the parser stopped at byte {} of {})",
                               e.byte, body.size()));
  } catch (const json::out_of_range&) {
    // nlohmann's complaint about a number too large for a double (1e400), which is no
    // parse_error; not e.what() either: it quotes the number, which may be most of the body.
    return invalid_argument("the body is not valid JSON: it holds a number too large for a double");
  }
}

Result<JobSpec> decode_submit(std::string_view body) {
  auto parsed = parse_json_body(body);
  if (!parsed) return tl::unexpected(parsed.error());
  return spec_from_json(*parsed);
}

Result<std::optional<daemon::SweepRequest>> decode_sweep_submit(std::string_view text,
                                                                size_t max_elements) {
  auto body = parse_json_body(text);
  if (!body) return tl::unexpected(body.error());
  return decode_sweep_submit(*body, max_elements);
}

Result<std::optional<daemon::SweepRequest>> decode_sweep_submit(json& parsed, size_t max_elements) {
  constexpr size_t kMaxSweepText = 4096;  // keeps every message that quotes it short
  constexpr size_t kMaxParams = 32;
  json* body = &parsed;
  if (!body->is_object() || (!body->contains("array") && !body->contains("grid"))) {
    return std::optional<daemon::SweepRequest>();
  }
  if (body->contains("array") && body->contains("grid")) {
    return invalid_argument("give \"array\" or \"grid\", not both (a grid is an array of parameters)");
  }
  auto sweep_field = [&](const std::string& field) -> Result<spec::Sweep> {
    auto fail_in = [&](const Error& e) { return invalid_argument(fmt::format("field '{}': {}", field, e.message)); };
    const json& value = (*body)[field];
    if (field == "array") {
      if (!value.is_string() || value.get_ref<const std::string&>().size() > kMaxSweepText) {
        return invalid_argument("field 'array' must be a string such as \"0-99\", \"0-99:2%4\" or \"1,4,9\"");
      }
      auto sweep = spec::parse_array(value.get<std::string>(), max_elements);
      if (!sweep) return fail_in(sweep.error());
      return sweep;
    }
    if (!value.is_array() || value.empty() || value.size() > kMaxParams) {
      return invalid_argument(fmt::format("field 'grid' must be a list of 1 to {} parameters such as "
                                 "[\"lr=1e-4,3e-4\", \"seed=0..4\"]",
                                 kMaxParams));
    }
    std::vector<spec::SweepParam> params;
    for (const json& entry : value) {
      if (!entry.is_string() || entry.get_ref<const std::string&>().size() > kMaxSweepText) {
        return invalid_argument("field 'grid': each parameter is a string NAME=VALUES, as \"seed=0..4\"");
      }
      auto param = spec::parse_grid_param(entry.get<std::string>(), max_elements);
      if (!param) return fail_in(param.error());
      params.push_back(std::move(*param));
    }
    auto sweep = spec::make_grid(std::move(params), 0, max_elements);
    if (!sweep) return fail_in(sweep.error());
    return sweep;
  };
  std::string field = body->contains("array") ? "array" : "grid";
  auto sweep = sweep_field(field);
  if (!sweep) return tl::unexpected(sweep.error());
  if (body->contains("max_running")) {
    auto cap = json_int64((*body)["max_running"]);
    if (!cap || *cap < 1 || *cap > 1'000'000) {
      return invalid_argument("field 'max_running' must be a whole number from 1 (elements run at once)");
    }
    if (sweep->max_running != 0 && sweep->max_running != *cap) {
      return invalid_argument(fmt::format("the array says %{} and 'max_running' {}; give one", sweep->max_running, *cap));
    }
    sweep->max_running = static_cast<int>(*cap);
  }
  daemon::SweepRequest request;
  request.sweep = std::move(*sweep);
  // Stored in one form, so that "0-9%3" and "0-9" with "max_running": 3 are the same array.
  json sweep_json = {{field, (*body)[field]}};
  if (field == "array") {
    const std::string& given = (*body)[field].get_ref<const std::string&>();
    sweep_json[field] = given.substr(0, given.rfind('%'));
  }
  if (request.sweep.max_running > 0) sweep_json["max_running"] = request.sweep.max_running;
  request.sweep_json = sweep_json.dump();
  for (const char* key : {"array", "grid", "max_running"}) body->erase(key);
  auto spec = spec_from_json(*body);
  if (!spec) return tl::unexpected(spec.error());
  request.base = std::move(*spec);
  return std::optional<daemon::SweepRequest>(std::move(request));
}

Result<MoveBody> decode_move(std::string_view text) {
  constexpr std::string_view kForms =
      "move takes one of {\"before\": ref}, {\"after\": ref}, {\"top\": true}, {\"bottom\": "
      "true}, {\"priority\": P}";
  auto body = parse_json_body(text);
  if (!body) return tl::unexpected(body.error());
  if (!body->is_object() || body->size() != 1) return invalid_argument(std::string(kForms));
  const std::string& key = body->begin().key();
  const json& value = body->begin().value();
  MoveBody move;
  using W = daemon::MoveRequest::Where;
  if (key == "before" || key == "after") {
    move.where = key == "before" ? W::kBefore : W::kAfter;
    auto id = json_int64(value);
    if (value.is_string() && !value.get_ref<const std::string&>().empty()) {
      move.other = value.get<std::string>();
    } else if (value.is_number_integer() && id && *id >= 1) {
      move.other = std::to_string(*id);
    } else {
      return invalid_argument(fmt::format("field '{}' must be a job id (1 or more) or name, not {}", key,
                                 value.is_string() ? "an empty string" : value.type_name()));
    }
  } else if (key == "top" || key == "bottom") {
    if (value != true) return invalid_argument(fmt::format("field '{}' must be true; {}", key, kForms));
    move.where = key == "top" ? W::kTop : W::kBottom;
  } else if (key == "priority") {
    auto priority = priority_from_json(value);
    if (!priority) return tl::unexpected(priority.error());
    move.where = W::kPriority;
    move.priority = *priority;
  } else {
    return invalid_argument(fmt::format("unknown field '{}'; {}", clip(key), kForms));
  }
  return move;
}

Result<ReleaseBody> decode_release(std::string_view text) {
  constexpr std::string_view kHow =
      "release a GPU with {\"attention\": true}: it says a person checked that nothing is left on "
      "it (gpuq release --attention GPU)";
  if (text.empty()) return invalid_argument(fmt::format("field 'attention' is missing; {}", kHow));
  auto body = parse_json_body(text);
  if (!body) return tl::unexpected(body.error());
  if (!body->is_object()) return invalid_argument(fmt::format("the body must be a JSON object; {}", kHow));
  for (const auto& [key, value] : body->items()) {
    if (key != "attention") return invalid_argument(fmt::format("unknown field '{}'; {}", clip(key), kHow));
  }
  if (!body->contains("attention")) return invalid_argument(fmt::format("field 'attention' is missing; {}", kHow));
  const json& attention = (*body)["attention"];
  if (!attention.is_boolean()) {
    return invalid_argument(fmt::format("field 'attention' must be true, not {}; {}", attention.type_name(), kHow));
  }
  if (!attention.get<bool>()) return invalid_argument(fmt::format("field 'attention' is false; {}", kHow));
  return ReleaseBody{};
}

Result<GcBody> decode_gc(std::string_view text) {
  constexpr std::string_view kHow = "send {\"dry_run\": true} to see what would go, or {} to prune now";
  GcBody out;
  if (text.empty()) return out;
  auto body = parse_json_body(text);
  if (!body) return tl::unexpected(body.error());
  if (!body->is_object()) return invalid_argument(fmt::format("the body must be a JSON object; {}", kHow));
  for (const auto& [key, value] : body->items()) {
    if (key != "dry_run") return invalid_argument(fmt::format("unknown field '{}'; {}", clip(key), kHow));
    if (!value.is_boolean()) {
      return invalid_argument(fmt::format("field 'dry_run' must be true or false, not {}; {}", value.type_name(), kHow));
    }
    out.dry_run = value.get<bool>();
  }
  return out;
}

Result<ArrayActionRequest> decode_array_action(std::string_view verb, std::string_view text) {
  using A = daemon::ArrayAction;
  bool retry = verb == "retry";
  if (!retry && verb != "cancel" && verb != "hold" && verb != "release") {
    return invalid_argument(fmt::format("an array takes move, cancel, hold, release or retry, not '{}'", clip(verb)));
  }
  std::string how =
      retry
          ? "send {}, {\"failed\": true} (the failed elements only) and/or {\"from_start\": true} "
            "(every step again), and {\"brief\": true} for the elements' ids instead of their jobs"
          : "send {} or no body, or {\"brief\": true} for the elements' ids instead of their jobs";
  ArrayActionRequest out;
  out.action = verb == "cancel"    ? A::kCancel
               : verb == "hold"    ? A::kHold
               : verb == "release" ? A::kRelease
                                   : A::kRetry;
  if (text.empty()) return out;
  auto body = parse_json_body(text);
  if (!body) return tl::unexpected(body.error());
  if (!body->is_object()) return invalid_argument(fmt::format("the body must be a JSON object; {}", how));
  for (const auto& [key, value] : body->items()) {
    if (key != "brief" && (!retry || (key != "failed" && key != "from_start"))) {
      return invalid_argument(fmt::format("unknown field '{}'; {}", clip(key), how));
    }
    if (!value.is_boolean()) {
      return invalid_argument(
          fmt::format("field '{}' must be true or false, not {}; {}", key, value.type_name(), how));
    }
    if (key == "brief") {
      out.brief = value.get<bool>();
    } else if (key == "from_start") {
      out.from_start = value.get<bool>();
    } else if (value.get<bool>()) {
      out.action = A::kRetryFailed;
    }
  }
  return out;
}

Result<bool> decode_job_retry(std::string_view text) {
  const char* how = "send {} or {\"from_start\": true}";
  if (text.empty()) return false;
  auto body = parse_json_body(text);
  if (!body) return tl::unexpected(body.error());
  if (!body->is_object()) return invalid_argument(fmt::format("the body must be a JSON object; {}", how));
  bool from_start = false;
  for (const auto& [key, value] : body->items()) {
    if (key != "from_start") return invalid_argument(fmt::format("unknown field '{}'; {}", clip(key), how));
    if (!value.is_boolean()) {
      return invalid_argument(fmt::format("field 'from_start' must be true or false, not {}; {}", value.type_name(), how));
    }
    from_start = value.get<bool>();
  }
  return from_start;
}

Result<daemon::PlanRequest> decode_plan(std::string_view text, size_t max_sweep_elements) {
  auto body = parse_json_body(text);
  if (!body) return tl::unexpected(body.error());
  if (!body->is_object()) return invalid_argument("a plan must be a JSON object {\"jobs\", \"reservations\", \"replace\"}");
  for (const auto& [key, value] : body->items()) {
    if (key != "jobs" && key != "reservations" && key != "replace") {
      return invalid_argument(fmt::format("unknown field '{}' in a plan; known: jobs, reservations, replace", clip(key)));
    }
  }
  daemon::PlanRequest plan;
  if (body->contains("replace")) {
    if (!(*body)["replace"].is_boolean()) return invalid_argument("field 'replace' must be true or false");
    plan.replace = (*body)["replace"].get<bool>();
  }
  if (!body->contains("jobs") || !(*body)["jobs"].is_array() || (*body)["jobs"].empty()) {
    return invalid_argument("a plan needs a non-empty 'jobs' list");
  }
  size_t index = 0;
  for (json& entry : (*body)["jobs"]) {
    // A job with a `source` is named by it already; one without, by its place in the list.
    bool named = entry.is_object() && entry.contains("source") && entry["source"].is_string();
    auto located = [&](const Error& error) {
      return invalid_argument(named ? error.message : fmt::format("jobs[{}]: {}", index, error.message));
    };
    auto sweep = decode_sweep_submit(entry, max_sweep_elements);
    if (!sweep) return located(sweep.error());
    if (*sweep) {
      plan.jobs.push_back(std::move((*sweep)->base));
      plan.sweeps.resize(index);
      plan.sweeps.push_back(
          daemon::PlanSweep{std::move((*sweep)->sweep), std::move((*sweep)->sweep_json)});
      ++index;
      continue;
    }
    auto spec = spec_from_json(entry);
    if (!spec) return located(spec.error());
    plan.jobs.push_back(std::move(*spec));
    ++index;
  }
  if (body->contains("reservations")) {
    const json& reservations = (*body)["reservations"];
    if (!reservations.is_array()) return invalid_argument("field 'reservations' must be a list");
    for (size_t i = 0; i < reservations.size(); ++i) {
      auto reservation = decode_reservation(reservations[i], i);
      if (!reservation) return tl::unexpected(reservation.error());
      plan.reservations.push_back(std::move(*reservation));
    }
  }
  return plan;
}

Result<EventsQuery> decode_events_query(const Target& target) {
  EventsQuery query;
  auto after = query_number(target, "after", 0, 0, limits::kMaxId);
  if (!after) return tl::unexpected(after.error());
  auto limit = query_number(target, "limit", limits::kDefaultEventsPerPage, 0);
  if (!limit) return tl::unexpected(limit.error());
  auto wait_ms = query_number(target, "wait_ms", 0, 0);
  if (!wait_ms) return tl::unexpected(wait_ms.error());
  query.after = *after;
  query.limit = std::min(*limit, limits::kMaxEventsPerPage);
  query.wait_ms = std::min(*wait_ms, limits::kMaxEventWaitMs);
  return query;
}

Result<LogQuery> decode_log_query(const Target& target) {
  LogQuery query;
  if (target.find("run") != nullptr) {
    auto run = query_number(target, "run", 0, 1, INT_MAX);
    if (!run) return tl::unexpected(run.error());
    query.run = static_cast<int>(*run);
  }
  if (target.find("step") != nullptr) {
    auto step = query_number(target, "step", 0, 0, INT_MAX);  // step_slice names the job's steps
    if (!step) return tl::unexpected(step.error());
    query.step = static_cast<int>(*step);
  }
  auto offset = query_number(target, "offset", 0, 0);
  if (!offset) return tl::unexpected(offset.error());
  auto limit = query_number(target, "limit", limits::kDefaultLogChunk, 0);
  if (!limit) return tl::unexpected(limit.error());
  query.offset = *offset;
  query.limit = std::min(*limit, limits::kMaxLogChunk);
  return query;
}

namespace {

constexpr int64_t kDayMs = 86'400'000;

// A report bound: a duration back from now ("7d", "36h") or an RFC 3339 time; `fallback` when
// absent. Durations stop at 36500d and RFC 3339 years at 9999, so `now_ms - ago` cannot overflow.
Result<int64_t> instant_param(const Target& target, std::string_view key, int64_t fallback,
                              int64_t now_ms) {
  const std::string* text = target.find(key);
  if (text == nullptr) return fallback;
  if (auto ago = parse_duration(*text)) return now_ms - ago->count();
  if (auto at = parse_rfc3339(*text)) return *at;
  return invalid_argument(fmt::format("query parameter '{}' must be a duration back from now (7d, 36h; at "
                             "most 36500d) or an RFC 3339 time (2026-11-01T00:00:00Z), not '{}'",
                             key, clip(*text)));
}

// Both ends come from checked ranges, so `to - from` cannot overflow.
Result<Window> checked_window(int64_t from_ms, int64_t to_ms, std::string_view from,
                              std::string_view to) {
  if (to_ms <= from_ms) return invalid_argument(fmt::format("{} must come before {}", from, to));
  if (to_ms - from_ms > limits::kMaxReportWindowMs) {
    return invalid_argument(fmt::format("the window from {} to {} is longer than {}, the most one request "
                               "reads: ask for a shorter one",
                               from, to, limits::kMaxReportWindowText));
  }
  return Window{from_ms, to_ms};
}

}  // namespace

Result<Window> decode_timeline_query(const Target& target, int64_t now_ms) {
  auto epoch_ms = [&](std::string_view key, int64_t fallback) {
    return query_number(target, key, fallback, 0, limits::kEndOfTimeMs);
  };
  auto to = epoch_ms("to_ms", now_ms);
  if (!to) return tl::unexpected(to.error());
  // A day before the end, but not before the epoch: an end within the first day of 1970 (to_ms=0
  // too) gives a window from 0, which from_ms could name, or none.
  auto from = epoch_ms("from_ms", std::max<int64_t>(0, *to - kDayMs));
  if (!from) return tl::unexpected(from.error());
  return checked_window(*from, *to, "from_ms", "to_ms");
}

Result<ReportQuery> decode_report_query(const Target& target, int64_t now_ms) {
  auto until = instant_param(target, "until", now_ms, now_ms);
  if (!until) return tl::unexpected(until.error());
  auto since = instant_param(target, "since", now_ms - 7 * kDayMs, now_ms);
  if (!since) return tl::unexpected(since.error());
  auto window = checked_window(*since, std::min(*until, now_ms), "since", "until");
  if (!window) return tl::unexpected(window.error());
  ReportQuery query{*window};
  if (const std::string* text = target.find("by"); text != nullptr && !parse_group_by(*text, query.by)) {
    return invalid_argument(fmt::format("query parameter 'by' must be user, name, outcome or gpu, not '{}'",
                               clip(*text)));
  }
  return query;
}

Result<std::optional<size_t>> decode_status_finished(const Target& target) {
  std::string text = target.param("finished");
  if (text.empty()) return std::optional<size_t>(kStatusFinished);
  if (text == "all") return std::optional<size_t>();
  // At most INT32_MAX: the store's LIMIT reads a value past int64 as negative, "all".
  constexpr size_t kMost = std::numeric_limits<int32_t>::max();
  size_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value > kMost) {
    return invalid_argument(fmt::format(
        "finished={}: give the number of finished jobs to list, from 0 to {}, or all", clip(text), kMost));
  }
  return std::optional<size_t>(value);
}

namespace {

// ?key=N, a whole number from 0 to `max`.
Result<size_t> count_param(const Target& target, std::string_view key, size_t max) {
  std::string text = target.param(key);
  size_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value > max) {
    return invalid_argument(fmt::format("{}={}: give a whole number from 0 to {}", key, clip(text), max));
  }
  return value;
}

}  // namespace

Result<std::optional<PendingPage>> decode_pending_page(const Target& target) {
  if (!target.find("pending_limit")) {
    for (const char* key : {"pending_offset", "held_limit"}) {
      if (target.find(key)) return invalid_argument(fmt::format("{} needs pending_limit (the page's size)", key));
    }
    return std::optional<PendingPage>();
  }
  PendingPage page;
  auto limit = count_param(target, "pending_limit", kMaxPendingLimit);
  if (!limit) return tl::unexpected(limit.error());
  page.limit = *limit;
  if (target.find("pending_offset")) {
    auto offset = count_param(target, "pending_offset", std::numeric_limits<int32_t>::max());
    if (!offset) return tl::unexpected(offset.error());
    page.offset = *offset;
  }
  if (target.find("held_limit")) {
    auto held = count_param(target, "held_limit", kMaxPendingLimit);
    if (!held) return tl::unexpected(held.error());
    page.held_limit = *held;
  }
  return std::optional<PendingPage>(page);
}

Result<int64_t> decode_stream_cursor(const Request& request, const Target& target) {
  // An empty Last-Event-ID is the SSE spec's "no id yet": the query decides.
  if (auto it = request.find("Last-Event-ID"); it != request.end() && !it->value().empty()) {
    std::string_view text(it->value().data(), it->value().size());
    return whole_number("Last-Event-ID (an event seq)", text, 0, limits::kMaxId);
  }
  return query_number(target, "after", 0, 0, limits::kMaxId);
}

Result<JobRef> parse_job_ref(std::string_view ref) {
  if (ref.empty()) return invalid_argument("a job reference is empty: give a job id or name");
  if (ref.find_first_not_of("0123456789") != std::string_view::npos) {
    return JobRef{0, std::string(ref)};  // a name (names are never only digits)
  }
  auto id = whole_number("a job id", ref, 1, limits::kMaxId);
  if (!id) return tl::unexpected(id.error());
  return JobRef{*id, ""};
}

}  // namespace gpuq::api
