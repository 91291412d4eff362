// `gpuq submit`: checks the command line, snapshots the script, environment and working
// directory into a submit request (docs/api.md), and sends it.
#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "cli/commands.h"
#include "cli/format.h"
#include "model/job.h"
#include "model/run_variables.h"
#include "spec/script.h"

namespace gpuq::cli {
namespace {

// Variables gpuq sets itself for every run (docs/jobs.md); a submitted value would be a lie.
// Other GPUQ_* settings (GPUQ_HOME) pass through, so a job can drive its own daemon.
bool is_reserved_variable(std::string_view key) { return is_run_variable(key); }

Outcome<std::map<std::string, std::string>> build_env(const std::vector<std::string>& environ,
                                                      const std::vector<std::string>& overrides) {
  std::map<std::string, std::string> env;
  for (const auto& entry : environ) {
    size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& entry : overrides) {
    size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) {
      return cli_fail(kExitUsage,
                      fmt::format("bad --env '{}': write it as --env KEY=VALUE", entry));
    }
    std::string key = entry.substr(0, eq);
    if (is_reserved_variable(key)) {
      return cli_fail(kExitUsage,
                      fmt::format("--env {}: gpuq sets {} itself for every run", key, key));
    }
    env[key] = entry.substr(eq + 1);
  }
  std::erase_if(env, [](const auto& kv) { return is_reserved_variable(kv.first); });
  return env;
}

Outcome<std::string> working_directory(const std::string& flag, const std::string& cwd) {
  namespace fs = std::filesystem;
  fs::path dir = flag.empty() ? fs::path(cwd) : fs::path(flag);
  if (dir.is_relative()) dir = fs::path(cwd) / dir;
  dir = dir.lexically_normal();
  std::string text = dir.string();
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return cli_fail(kExitUsage,
                    fmt::format("--cwd {}: no such directory", flag.empty() ? text : flag));
  }
  return text;
}

}  // namespace

Outcome<Json> build_submit_request(const SubmitOptions& options,
                                   const std::vector<std::string>& environ,
                                   const std::string& cwd) {
  if (options.gpus < 0) {
    return cli_fail(kExitUsage, fmt::format("--gpus must be 0 or more, not {}", options.gpus));
  }
  Json request = Json::object();
  if (!options.name.empty()) request["name"] = options.name;
  request["gpus"] = options.gpus;
  if (!options.priority.empty()) {
    auto priority = parse_priority(options.priority);
    if (!priority) return cli_fail(kExitUsage, priority.error().message);
    request["priority"] = *priority;
  }
  auto dir = working_directory(options.cwd, cwd);
  if (!dir) return tl::unexpected(dir.error());
  request["cwd"] = *dir;
  auto env = build_env(environ, options.env);
  if (!env) return tl::unexpected(env.error());
  request["env"] = Json(*env);

  if (options.words.empty()) {
    return cli_fail(kExitUsage,
                    options.command_mode
                        ? "nothing to run after '--': give a command, as in "
                          "'gpuq submit -- python train.py'"
                        : "nothing to run: give a script ('gpuq submit train.sh ARGS...') or a "
                          "command after -- ('gpuq submit -- python train.py')");
  }
  if (options.command_mode) {
    request["argv"] = options.words;
    return request;
  }
  const std::string& script = options.words.front();
  auto text = spec::read_script(script);
  if (!text) return cli_fail(kExitUsage, text.error().message);
  request["script"] = {
      {"name", script},
      {"text", *text},
      {"args", std::vector<std::string>(options.words.begin() + 1, options.words.end())},
  };
  return request;
}

int run_submit(Context& ctx, const SubmitOptions& options) {
  auto request = build_submit_request(options, ctx.io().environ, ctx.io().cwd);
  if (!request) return ctx.report(request.error());
  auto response = ctx.client().post("/v1/jobs", json_text(*request));
  if (!response) return ctx.report(response.error());
  if (options.json) {
    return print_body(ctx, response->body);
  }
  auto job = parse_json(response->body);
  if (!job) return ctx.report(job.error());
  ctx.out() << "submitted " << job_label(*job) << '\n';
  return kExitOk;
}

}  // namespace gpuq::cli
