// SPDX-License-Identifier: Apache-2.0
// The plan checker's GPU reservations (plan_checker.h): {"name"?, "gpus": [indices], "jobs":
// [ids]}, each job in at most one, and none asking for more GPUs than its reservation has.
#include <fmt/format.h>

#include <algorithm>

#include "spec/plan_checker.h"

namespace gpuq::spec::plan_check {

using nlohmann::json;

void PlanChecker::read_reservation(
    const json& r, const std::string& pointer, size_t index,
    std::map<std::string, std::pair<std::string, int>>& reserved_jobs) {
  int at = line(pointer);
  if (!r.is_object())
    return error(path_, at,
                 "each reservation must be {\"name\"?, \"gpus\": [...], \"jobs\": [...]}");
  for (const auto& [key, value] : r.items()) {
    if (key != "name" && key != "gpus" && key != "jobs") {
      error(path_, line(JsonLines::child(pointer, key)),
            fmt::format("unknown key '{}' in a reservation; known: name, gpus, jobs", key));
    }
  }
  std::string name = fmt::format("r{}", index);
  if (r.contains("name")) {
    if (!r["name"].is_string() || r["name"].get<std::string>().empty()) {
      return error(path_, line(JsonLines::child(pointer, "name")),
                   "a reservation's \"name\" must be a non-empty string");
    }
    name = r["name"].get<std::string>();
  }
  for (const auto& existing : out_.reservations) {
    if (existing.name == name) {
      return error(
          path_, at,
          fmt::format("duplicate reservation name '{}' (also at line {})", name, existing.line));
    }
  }
  PlanReservation reservation{name, {}, at};
  const json gpus = r.value("gpus", json());
  bool gpus_ok = gpus.is_array() && !gpus.empty();
  for (const auto& g : gpus_ok ? gpus : json::array())
    gpus_ok = gpus_ok && g.is_number_integer() && g.get<int64_t>() >= 0 && g.get<int64_t>() < 1024;
  if (!gpus_ok)
    return error(
        path_, line(JsonLines::child(pointer, "gpus")),
        fmt::format(
            "reservation '{}': \"gpus\" must be a non-empty list of GPU indices, as in [0, 1]",
            name));
  for (const auto& g : gpus) {
    int gpu = g.get<int>();
    if (std::count(reservation.gpus.begin(), reservation.gpus.end(), gpu)) {
      return error(path_, line(JsonLines::child(pointer, "gpus")),
                   fmt::format("reservation '{}' lists GPU {} twice", name, gpu));
    }
    reservation.gpus.push_back(gpu);
  }
  auto jobs = r.contains("jobs") && r["jobs"].is_array() ? string_list(r["jobs"]) : std::nullopt;
  if (!jobs || jobs->empty())
    return error(
        path_, line(JsonLines::child(pointer, "jobs")),
        fmt::format("reservation '{}': \"jobs\" must be a non-empty list of plan ids", name));
  for (size_t k = 0; k < jobs->size(); ++k) {
    const std::string& id = (*jobs)[k];
    int job_at = line(JsonLines::child(JsonLines::child(pointer, "jobs"), k));
    auto found = job_index_.find(id);
    if (found == job_index_.end()) {
      error(path_, job_at,
            fmt::format("reservation '{}' names job '{}', which is not in this plan", name, id));
      continue;
    }
    if (auto other = reserved_jobs.find(id); other != reserved_jobs.end()) {
      error(path_, job_at,
            fmt::format("job '{}' is already in reservation '{}' (line {}); a job can be in one "
                        "reservation",
                        id, other->second.first, other->second.second));
      continue;
    }
    reserved_jobs.emplace(id, std::make_pair(name, at));
    JobSpec& spec = out_.specs[found->second];
    if (!spec.reservation.empty() && spec.reservation != name) {
      error(path_, job_at,
            fmt::format("job '{}' sets \"reservation\": \"{}\" but is listed in reservation '{}'",
                        id, spec.reservation, name));
      continue;
    }
    spec.reservation = name;
    if (context_.keep_request) built_[found->second].request["reservation"] = name;
    const PlanJob& info = out_.jobs[found->second];
    if (info.gpus > static_cast<int>(reservation.gpus.size())) {
      error(path_, job_at,
            fmt::format("job '{}' needs {} GPUs but reservation '{}' has {}; it could never start",
                        id, info.gpus, name, reservation.gpus.size()));
    }
  }
  reservation_requests_.push_back({{"name", name}, {"gpus", reservation.gpus}, {"jobs", *jobs}});
  out_.reservations.push_back(std::move(reservation));
}

void PlanChecker::read_reservations(const json& list, const std::string& pointer) {
  if (!list.is_array())
    return error(path_, line(pointer),
                 "\"reservations\" must be a list of {\"name\"?, \"gpus\", \"jobs\"}");
  std::map<std::string, std::pair<std::string, int>> reserved_jobs;  // job id -> reservation, line
  for (size_t i = 0; i < list.size(); ++i)
    read_reservation(list[i], JsonLines::child(pointer, i), i, reserved_jobs);
}
}  // namespace gpuq::spec::plan_check
