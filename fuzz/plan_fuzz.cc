// SPDX-License-Identifier: Apache-2.0
// Fuzz target: plan files. The input is a plan's text in any form spec::check_plan_text
// accepts (the {"jobs": [...], "reservations": [...]} object or a bare list of jobs), read as
// /fuzz/plans/plan.json; the scripts it may name are served from memory (kScripts), so that
// header merging, header errors, unreadable and missing scripts are all reached without files.
// Invariants: every finding names the plan or one of its scripts and a line within that file; a
// plan without errors has one request per job, each accepted by spec_from_json, whose stored
// form (spec_to_json) reads back as the same work, and it dumps as JSON (it is sent over HTTP).
#include <map>
#include <nlohmann/json.hpp>

#include "fuzz_check.h"
#include "model/spec_json.h"
#include "spec/plan.h"
#include "spec/script.h"

namespace {

using gpuq::fuzz::line_count;
using nlohmann::json;

constexpr std::string_view kPlanPath = "/fuzz/plans/plan.json";

// The scripts a plan may name, by their normalised path (relative names resolve against the
// plan's folder): headers of every kind, a header error, and text check_script_text refuses.
const std::map<std::string, std::string>& scripts() {
  static const std::map<std::string, std::string> table = {
      {"/fuzz/plans/train.sh",
       "#!/bin/bash\n#gpuq gpus=2 priority=high est=3h timeout=12h retries=2\n"
       "#gpuq after=prep wait-file=data/READY lane=net\n# gpuq-out: ckpt/\npython train.py\n"},
      {"/fuzz/plans/jobs/eval.sh",
       "#!/bin/bash\n# LANE=net\n# REQUIRES=test -f ckpt/READY\n# DONE_IF=test -s out.json\n"
       "#gpuq name=eval preempt=restart restart-within=30m\n# gpuq-in: data/x.json\npython e.py\n"},
      {"/fuzz/plans/bad.sh", "#!/bin/bash\n#gpuq gpus=two\n#gpuq colour=red\necho bad\n"},
      {"/fuzz/plans/empty.sh", "\n\n"},
      {"/fuzz/plans/binary.sh", std::string("#!/bin/sh\n\0\x01", 12)},
  };
  return table;
}

gpuq::Result<std::string> read_script(const std::string& path) {
  auto found = scripts().find(path);
  if (found == scripts().end()) return gpuq::fail(gpuq::Code::kNotFound, path);
  if (auto checked = gpuq::spec::check_script_text(path, found->second); !checked) {
    return tl::unexpected(checked.error());
  }
  return found->second;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = gpuq::fuzz::as_text(data, size);
  const gpuq::spec::PlanContext context{"/fuzz/exp", {{"PATH", "/usr/bin:/bin"}}};
  gpuq::spec::PlanCheck check =
      gpuq::spec::check_plan_text(std::string(kPlanPath), text, context, read_script);

  for (const auto& d : check.diagnostics) {
    FUZZ_CHECK(!d.message.empty() &&
                   (d.severity == gpuq::spec::kError || d.severity == gpuq::spec::kWarning),
               "a malformed finding: {}", d.text());
    int lines = 0;
    if (d.file == kPlanPath) {
      lines = line_count(text);
    } else {
      auto script = scripts().find(d.file);
      FUZZ_CHECK(script != scripts().end(), "a finding about an unknown file: {}", d.text());
      lines = line_count(script->second);
    }
    FUZZ_CHECK(d.line >= 0 && d.line <= lines, "{} names line {} of {}", d.text(), d.line, lines);
  }
  if (check.has_errors()) return 0;

  const json& jobs = check.request.at("jobs");
  FUZZ_CHECK(jobs.size() == check.jobs.size(), "{} requests for {} jobs", jobs.size(),
             check.jobs.size());
  FUZZ_CHECK(check.request.at("reservations").size() == check.reservations.size(),
             "reservation requests and reservations differ");
  std::string dumped = check.request.dump();
  for (size_t i = 0; i < jobs.size(); ++i) {
    FUZZ_CHECK(jobs[i].value("name", "") == check.jobs[i].id, "job {} is named {}",
               check.jobs[i].id, jobs[i].value("name", ""));
    auto spec = gpuq::spec_from_json(jobs[i]);
    FUZZ_CHECK(spec.has_value(), "a plan without errors has a job spec_from_json refuses: {}\n{}",
               spec ? "" : spec.error().message, jobs[i].dump());
    json stored = gpuq::spec_to_json(*spec);
    auto again = gpuq::spec_from_json(stored);
    FUZZ_CHECK(again.has_value(), "the stored form of job {} does not read back: {}\n{}",
               check.jobs[i].id, again ? "" : again.error().message, stored.dump());
    // same_work leaves out what does not change the work; the store keeps those too.
    FUZZ_CHECK(gpuq::same_work(*spec, *again) && again->name == spec->name &&
                   again->env == spec->env && again->not_before_ms == spec->not_before_ms &&
                   again->hold == spec->hold && again->source == spec->source,
               "the stored form of job {} reads back as another job:\n{}", check.jobs[i].id,
               stored.dump());
  }
  return 0;
}
