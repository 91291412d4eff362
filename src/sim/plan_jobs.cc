// SPDX-License-Identifier: Apache-2.0
#include "sim/plan_jobs.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "model/spec_json.h"

namespace gpuq::sim {
namespace {

using nlohmann::json;

Status check_shape(const json& plan) {
  if (!plan.is_object() || !plan.contains("jobs") || !plan["jobs"].is_array()) {
    return invalid_argument("a plan request is {\"jobs\": [...], \"reservations\": [...]}");
  }
  if (plan.contains("reservations") && !plan["reservations"].is_array()) {
    return invalid_argument("'reservations' must be a list of {\"name\", \"gpus\", \"jobs\"}");
  }
  return ok();
}

// Which reservation each job belongs to, from the reservations' `jobs` lists.
Result<std::map<std::string, std::string>> reservation_members(const json& plan) {
  std::map<std::string, std::string> member;
  auto reservations = reservations_from_plan(plan);
  if (!reservations) return tl::unexpected(reservations.error());
  if (!plan.contains("reservations")) return member;
  const json& list = plan["reservations"];
  for (size_t r = 0; r < list.size(); ++r) {
    if (!list[r].contains("jobs")) continue;
    const json& jobs = list[r]["jobs"];
    if (!jobs.is_array())
      return invalid_argument(fmt::format("reservation '{}': 'jobs' must be a list of job names",
                                 (*reservations)[r].name));
    for (const json& j : jobs) {
      if (!j.is_string())
        return invalid_argument(fmt::format("reservation '{}': 'jobs' must be a list of job names",
                                   (*reservations)[r].name));
      auto [it, fresh] = member.emplace(j.get<std::string>(), (*reservations)[r].name);
      if (!fresh && it->second != (*reservations)[r].name) {
        return invalid_argument(fmt::format("job {} is in reservations '{}' and '{}'", it->first, it->second,
                                   (*reservations)[r].name));
      }
    }
  }
  return member;
}

// The entry as spec_from_json accepts it: est_hours folded into est_ms, a stand-in command.
Result<json> as_submit_request(const json& entry, const std::string& name) {
  json body = entry;
  if (body.contains("est_hours")) {
    const json& h = body["est_hours"];
    if (!h.is_number() || h.get<double>() < 0 || !std::isfinite(h.get<double>())) {
      return invalid_argument(fmt::format("job {}: 'est_hours' must be a number of hours >= 0", name));
    }
    if (body.contains("est") || body.contains("est_ms")) {
      return invalid_argument(fmt::format("job {}: give one of 'est_hours', 'est' or 'est_ms'", name));
    }
    body["est_ms"] = static_cast<int64_t>(std::llround(h.get<double>() * 3600.0 * 1000.0));
    body.erase("est_hours");
  }
  // Something to run, for a plan written for simulation alone; a job with steps has its own.
  if (!body.contains("argv") && !body.contains("script") && !body.contains("steps")) {
    body["argv"] = json::array({"true"});
  }
  return body;
}

}  // namespace

Result<std::vector<sched::Reservation>> reservations_from_plan(const json& plan) {
  if (auto st = check_shape(plan); !st) return tl::unexpected(st.error());
  std::vector<sched::Reservation> out;
  if (!plan.contains("reservations")) return out;
  const json& list = plan["reservations"];
  for (size_t r = 0; r < list.size(); ++r) {
    const json& entry = list[r];
    if (!entry.is_object())
      return invalid_argument(fmt::format("reservations[{}] must be an object {{name, gpus, jobs}}", r));
    sched::Reservation res;
    res.name = fmt::format("reservation-{}", r + 1);
    if (entry.contains("name")) {
      if (!entry["name"].is_string() || entry["name"].get<std::string>().empty()) {
        return invalid_argument(fmt::format("reservations[{}]: 'name' must be a non-empty string", r));
      }
      res.name = entry["name"].get<std::string>();
    }
    if (!entry.contains("gpus") || !entry["gpus"].is_array()) {
      return invalid_argument(
          fmt::format("reservation '{}': 'gpus' must be a list of GPU indices", res.name));
    }
    for (const json& g : entry["gpus"]) {
      if (!g.is_number_integer() || g.get<int64_t>() < 0 || g.get<int64_t>() > 4096) {
        return invalid_argument(
            fmt::format("reservation '{}': 'gpus' must be a list of GPU indices", res.name));
      }
      res.slots.push_back(static_cast<int>(g.get<int64_t>()));
    }
    for (const auto& other : out) {
      if (other.name == res.name)
        return invalid_argument(fmt::format("two reservations are named '{}'", res.name));
    }
    out.push_back(std::move(res));
  }
  return out;
}

Result<SimJob> job_from_spec(const JobSpec& spec) {
  const std::string& name = spec.name;
  if (spec.estimate_ms == 0) {
    return invalid_argument(
        fmt::format("job {} has no estimate (est_hours or est): a simulation needs one", name));
  }
  SimJob job;
  job.name = name;
  job.gpus = spec.gpus;
  job.priority = spec.priority;
  job.duration_ms = job.estimate_ms = spec.estimate_ms;
  job.lanes = spec.lanes;
  job.gpu_mem_mib = spec.gpu_mem_mib;
  job.share = spec.share;
  job.reservation = spec.reservation;
  for (const Dependency& d : spec.deps) {
    switch (d.kind) {
      case Dependency::Kind::kAfterOk:
        job.after.push_back(d.target);
        break;
      case Dependency::Kind::kAfterAny:
        job.after_any.push_back(d.target);
        break;
      case Dependency::Kind::kAfterNotOk:
        return invalid_argument(fmt::format(
            "job {} waits for {} to fail (afternotok); a simulation assumes every job "
            "succeeds, so it would never run",
            name, d.target));
      case Dependency::Kind::kFile:
      case Dependency::Kind::kRequires:
        break;  // external conditions: assumed met
    }
  }
  return job;
}

Result<std::vector<SimJob>> jobs_from_specs(const std::vector<JobSpec>& specs) {
  std::vector<SimJob> jobs;
  jobs.reserve(specs.size());
  for (const JobSpec& spec : specs) {
    auto job = job_from_spec(spec);
    if (!job) return tl::unexpected(job.error());
    jobs.push_back(std::move(*job));
  }
  return jobs;
}

Result<std::vector<SimJob>> jobs_from_plan(const json& plan) {
  if (auto st = check_shape(plan); !st) return tl::unexpected(st.error());
  auto members = reservation_members(plan);
  if (!members) return tl::unexpected(members.error());
  std::vector<SimJob> jobs;
  const json& entries = plan["jobs"];
  for (size_t i = 0; i < entries.size(); ++i) {
    const json& entry = entries[i];
    if (!entry.is_object())
      return invalid_argument(fmt::format("jobs[{}] must be an object (a submit request)", i));
    if (!entry.contains("name") || !entry["name"].is_string() ||
        entry["name"].get<std::string>().empty()) {
      return invalid_argument(fmt::format("jobs[{}] has no name: each job of a plan needs one", i));
    }
    std::string name = entry["name"].get<std::string>();
    auto body = as_submit_request(entry, name);
    if (!body) return tl::unexpected(body.error());
    auto spec = spec_from_json(*body);
    if (!spec) return invalid_argument(fmt::format("job {}: {}", name, spec.error().message));
    auto converted = job_from_spec(*spec);
    if (!converted) return tl::unexpected(converted.error());
    SimJob& job = *converted;
    if (auto it = members->find(name); it != members->end()) {
      if (!job.reservation.empty() && job.reservation != it->second) {
        return invalid_argument(
            fmt::format("job {} names reservation '{}' but is listed in reservation '{}'", name,
                        job.reservation, it->second));
      }
      job.reservation = it->second;
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

}  // namespace gpuq::sim
