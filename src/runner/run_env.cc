// SPDX-License-Identifier: Apache-2.0
#include "runner/run_env.h"

namespace gpuq::runner {
namespace {

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += ',';
    out += p;
  }
  return out;
}

}  // namespace

std::map<std::string, std::string> build_run_env(const JobSpec& spec, const RunContext& c) {
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : spec.env) {
    if (!is_run_variable(k)) env[k] = v;
  }
  // The shell's idea of the working directory: the job's, not where the submitter's shell was
  // (a plan's job, or `--cwd`, runs elsewhere; a stale PWD misleads `pwd` and scripts).
  if (!spec.cwd.empty()) env["PWD"] = spec.cwd;
  std::vector<std::string> indices, names;
  for (const Resource* r : c.held) {
    if (r->index) indices.push_back(std::to_string(*r->index));
    names.push_back(r->name);
  }
  // nvidia-smi numbers GPUs in PCI bus order; CUDA's default order differs, so pin it.
  env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
  env["CUDA_VISIBLE_DEVICES"] = join(indices);
  if (!indices.empty()) env["TDPRM_GPU0"] = indices.front();  // unset without a GPU
  env["GPUQ_GPUS"] = indices.size() == names.size() ? join(indices) : join(names);
  env["GPUQ_JOB_ID"] = std::to_string(c.job_id);
  env["GPUQ_JOB_NAME"] = spec.name;
  env["GPUQ_RUN_NUMBER"] = std::to_string(c.run_number);
  env["GPUQ_JOB_DIR"] = c.job_dir;
  env["GPUQ_RUN_DIR"] = c.run_dir;
  // A std::string, not a const char*: the latter trips GCC 12's false -Wrestrict at -O3.
  // Or the first run of a reclaimed fleet attempt, whose earlier outputs were pulled.
  const bool resume = c.resume || (spec.fleet_resume && c.run_number == 1);
  env["GPUQ_RESUME"] = std::string(resume ? "1" : "0");
  env["GPUQ_YIELD_FILE"] = c.run_dir + "/yield";
  env["GPUQ_RUN_ID"] = c.run_id;
  if (c.array_id != 0) env["GPUQ_ARRAY_ID"] = std::to_string(c.array_id);
  return env;
}

std::string script_snapshot_path(const std::string& job_dir) { return job_dir + "/script"; }

namespace {

std::vector<std::string> script_argv(const std::string& text, const std::string& path,
                                     const std::vector<std::string>& args) {
  std::vector<std::string> argv;
  if (text.rfind("#!", 0) != 0) argv.push_back("bash");
  argv.push_back(path);
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

}  // namespace

std::vector<std::string> run_argv(const JobSpec& spec, const std::string& job_dir) {
  if (spec.script_text.empty()) return spec.argv;
  return script_argv(spec.script_text, script_snapshot_path(job_dir), spec.script_args);
}

std::string step_script_snapshot_path(const std::string& job_dir, int index) {
  return job_dir + "/step-" + std::to_string(index);
}

std::vector<std::pair<std::string, std::string>> script_snapshots(const JobSpec& spec,
                                                                  const std::string& job_dir) {
  std::vector<std::pair<std::string, std::string>> files;
  if (!spec.script_text.empty()) files.emplace_back(script_snapshot_path(job_dir), spec.script_text);
  for (size_t i = 0; i < spec.steps.size(); ++i) {
    const JobStep& step = spec.steps[i];
    if (step.script_text.empty()) continue;
    files.emplace_back(step_script_snapshot_path(job_dir, static_cast<int>(i)), step.script_text);
  }
  return files;
}

std::vector<StepSpec> run_steps(const JobSpec& spec, const std::string& job_dir) {
  std::vector<StepSpec> steps;
  for (size_t i = 0; i < spec.steps.size(); ++i) {
    const JobStep& step = spec.steps[i];
    StepSpec s;
    s.name = step.name;
    s.argv = step.script_text.empty()
                 ? step.argv
                 : script_argv(step.script_text, step_script_snapshot_path(job_dir, static_cast<int>(i)),
                               step.script_args);
    s.timeout_ms = step.timeout_ms;
    s.done_if = step.done_if;
    steps.push_back(std::move(s));
  }
  return steps;
}

}  // namespace gpuq::runner
