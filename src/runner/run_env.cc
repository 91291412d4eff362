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

std::vector<std::string> run_argv(const JobSpec& spec, const std::string& job_dir) {
  if (spec.script_text.empty()) return spec.argv;
  std::vector<std::string> argv;
  if (spec.script_text.rfind("#!", 0) != 0) argv.push_back("bash");
  argv.push_back(script_snapshot_path(job_dir));
  argv.insert(argv.end(), spec.script_args.begin(), spec.script_args.end());
  return argv;
}

}  // namespace gpuq::runner
