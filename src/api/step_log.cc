// SPDX-License-Identifier: Apache-2.0
#include "api/step_log.h"

#include <fmt/format.h>

#include <algorithm>

#include "model/job_steps.h"

namespace gpuq::api {
namespace {

// "job 7 (pipe)", or "job 7".
std::string job_words(const Job& job) {
  return job.spec.name.empty() ? fmt::format("job {}", job.id)
                               : fmt::format("job {} ({})", job.id, job.spec.name);
}

StepSlice slice_of(const Run& run, const StepRun& step) {
  return {run.number, std::string(to_string(step.state)), step.log_offset, step_log_end(run, step)};
}

}  // namespace

Result<StepSlice> step_slice(const Job& job, int step, std::optional<int> run) {
  const int count = static_cast<int>(job.spec.steps.size());
  if (count == 0) {
    return fail(
        Code::kInvalidArgument,
        fmt::format(
            "{} has no steps (it was not submitted with --step); leave out step to read its "
            "whole log (gpuq logs {})",
            job_words(job), job.id));
  }
  if (step < 0 || step >= count) {
    return fail(
        Code::kInvalidArgument,
        fmt::format("{} has {} step{}, numbered 0 to {}; there is no step {}: ask for one of those "
                    "(gpuq show {} lists them)",
                    job_words(job), count, count == 1 ? "" : "s", count - 1, step, job.id));
  }
  if (!run) {
    auto found = newest_run_of_step(job, step);
    if (!found) return StepSlice{};
    return slice_of(*found->run, *found->step);
  }
  auto it = std::find_if(job.runs.begin(), job.runs.end(),
                         [&](const Run& r) { return r.number == *run; });
  if (it == job.runs.end()) {
    return fail(
        Code::kNotFound,
        fmt::format("{} has no run {} (it has run {} time{}); leave out run for the "
                    "newest run that reached step {}",
                    job_words(job), *run, job.runs.size(), job.runs.size() == 1 ? "" : "s", step));
  }
  if (const StepRun* reached = reached_step(*it, step)) return slice_of(*it, *reached);
  if (it->outcome == RunOutcome::kRunning && step >= it->first_step) {
    return StepSlice{*run, "pending", 0, std::nullopt};  // it may yet reach it
  }
  auto newest = newest_run_of_step(job, step);
  return fail(
      Code::kNotFound,
      fmt::format("run {} of {} did not reach step {}; {}", *run, job_words(job), step,
                  newest ? fmt::format("run {} did (leave out run for it)", newest->run->number)
                         : std::string("no run has yet")));
}

SliceRead read_in_slice(const StepSlice& slice, int64_t log_size, int64_t offset, int64_t limit) {
  if (slice.run == 0 || slice.state == "pending") return {};  // not reached (yet): nothing of it
  int64_t begin = std::min(slice.begin, log_size);
  int64_t end = std::clamp(slice.end.value_or(log_size), begin, log_size);
  SliceRead read;
  read.size = end - begin;
  read.first = begin + std::min(offset, read.size);
  read.count = std::max<int64_t>(0, std::min(limit, end - read.first));
  return read;
}

}  // namespace gpuq::api
