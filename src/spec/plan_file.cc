// SPDX-License-Identifier: Apache-2.0
// The file-reading side of plan.h: check_plan and load_plan read the plan file and hand its
// text to check_plan_text, and read_plan_script reads the scripts a plan names. Kept apart from
// plan.cc so that the checker itself works on text (tests, the fuzzer) and stays one concern.
#include "spec/plan.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "spec/script.h"

namespace gpuq::spec {
namespace {

namespace fs = std::filesystem;

// The plan's text, or the finding that says why it cannot be read.
Result<std::string> read_plan_file(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return fail(Code::kNotFound, "no such plan file; check the path");
  if (fs::is_directory(path, ec)) {
    return fail(Code::kInvalidArgument, "is a directory, not a plan file");
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    return fail(Code::kInvalidArgument,
                fmt::format("cannot read the plan file: {}; check its mode with `ls -l {}`",
                            err != 0 ? std::strerror(err) : "it cannot be opened", path));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace

Result<std::string> read_plan_script(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return fail(Code::kNotFound, path + ": no such script");
  return read_script(path);
}

PlanCheck check_plan(const std::string& path, const PlanContext& context) {
  auto text = read_plan_file(path);
  if (!text) {
    PlanCheck check;
    check.diagnostics.push_back(error_at(path, 0, text.error().message));
    return check;
  }
  return check_plan_text(path, *text, context);
}

Result<Plan> load_plan(const std::string& path, const PlanContext& context) {
  PlanCheck check = check_plan(path, context);
  Plan plan;
  for (auto& d : check.diagnostics) {
    if (d.severity == kError) return fail(Code::kInvalidArgument, d.located_message());
    plan.warnings.push_back(std::move(d));
  }
  sort_diagnostics(plan.warnings);
  plan.request = std::move(check.request);
  plan.specs = std::move(check.specs);
  plan.reservations = std::move(check.reservations);
  plan.sweeps = std::move(check.sweeps);
  plan.simulation = std::move(check.simulation);
  return plan;
}

}  // namespace gpuq::spec
