// SPDX-License-Identifier: Apache-2.0
#include "spec/lint.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

#include "os/command.h"
#include "spec/headers.h"
#include "spec/plan.h"
#include "spec/script.h"

namespace gpuq::spec {
namespace {

namespace fs = std::filesystem;

constexpr Millis kBashTimeout{10'000};

// A script's findings; `alone` when it is linted for itself, not as a plan's (whose job is
// judged as a whole: check_done_if_in_containers).
std::vector<Diagnostic> lint_script_file(const std::string& path, const LintOptions& options,
                                         ScriptRole role, bool alone);

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Whether gpuq runs the script with a shell whose syntax `bash -n` can check: scripts without
// a shebang are run with bash (runner/run_env.cc), others with their interpreter.
bool is_shell_script(std::string_view text) {
  if (text.rfind("#!", 0) != 0) return true;
  std::string first(text.substr(
      2, text.find('\n') == std::string_view::npos ? std::string_view::npos : text.find('\n') - 2));
  std::vector<std::string> words;
  std::istringstream in(first);
  for (std::string w; in >> w;) words.push_back(w);
  if (words.empty()) return true;
  std::string interpreter = fs::path(words[0]).filename().string();
  if (interpreter == "env") {
    interpreter.clear();
    for (size_t i = 1; i < words.size(); ++i) {
      if (words[i].rfind('-', 0) != 0 && words[i].find('=') == std::string::npos) {
        interpreter = fs::path(words[i]).filename().string();
        break;
      }
    }
  }
  return interpreter == "bash" || interpreter == "sh";
}

// Runs `bash -n` and turns its "PATH: line N: message" lines into diagnostics.
void check_shell_syntax(const std::string& path, std::vector<Diagnostic>& out) {
  auto result = os::run_command({"bash", "-n", "--", path}, kBashTimeout);
  if (!result) {
    out.push_back(
        warning_at(path, 0, fmt::format("shell syntax not checked: {}", result.error().message)));
    return;
  }
  if (result->timed_out) {
    out.push_back(
        warning_at(path, 0, "shell syntax not checked: `bash -n` did not finish in time"));
    return;
  }
  if (result->exit_code == 0) return;
  static const std::regex kLine(R"(^.*: line ([0-9]+): (.*)$)");
  std::istringstream err(result->err);
  bool any = false;
  for (std::string text; std::getline(err, text);) {
    std::smatch m;
    if (!std::regex_match(text, m, kLine)) {
      if (!text.empty()) out.push_back(error_at(path, 0, fmt::format("bash -n: {}", text)));
      any = any || !text.empty();
      continue;
    }
    int line = std::stoi(m[1].str());
    std::string message = m[2].str();
    // bash follows "syntax error near ..." with the offending line in `quotes'.
    if (!out.empty() && out.back().file == path && out.back().line == line && message.size() >= 2 &&
        message.front() == '`' && message.back() == '\'') {
      out.back().message +=
          fmt::format(" (the line reads: {})", message.substr(1, message.size() - 2));
      continue;
    }
    out.push_back(error_at(path, line, "shell syntax: " + message));
    any = true;
  }
  if (!any)
    out.push_back(
        error_at(path, 0, fmt::format("`bash -n` failed with exit code {}", result->exit_code)));
}

void check_gpus(const std::string& file, int line, const std::string& what, int gpus,
                const LintOptions& options, std::vector<Diagnostic>& out) {
  if (options.machine_gpus < 0 || gpus <= options.machine_gpus) return;
  out.push_back(error_at(
      file, line,
      fmt::format("{} asks for {} GPUs; this machine has {}", what, gpus, options.machine_gpus)));
}

// Splits a shell command into words, removing quotes; good enough to find `test -f PATH`.
std::vector<std::string> shell_words(const std::string& command) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (char c : command) {
    if (quote) {
      if (c == quote) {
        quote = 0;
      } else {
        word += c;
      }
    } else if (c == '"' || c == '\'') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == ';' || c == '\n') {
      if (in_word) words.push_back(word);
      if (c == ';') words.push_back(";");
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

fs::path resolve(const std::string& path, const std::string& cwd) {
  fs::path p(path);
  if (p.is_relative() && !cwd.empty()) p = fs::path(cwd) / p;
  return p.lexically_normal();
}

// Whether an output declaration (a path or a glob, or a directory that holds the path) covers
// the path a job waits for.
bool declares(const fs::path& output, const fs::path& wanted) {
  std::string glob = output.string();
  while (glob.size() > 1 && glob.back() == '/') glob.pop_back();
  std::string path = wanted.string();
  if (fnmatch(glob.c_str(), path.c_str(), 0) == 0) return true;
  return path.size() > glob.size() && path.compare(0, glob.size(), glob) == 0 &&
         path[glob.size()] == '/';
}

// A done-if test runs on the host before its job or step starts, never in the container, so in
// a container job it sees the host's files and commands, not the image's: worth a warning, not
// an error (testing a file in a directory the host shares is what it is for).
Diagnostic host_done_if(const std::string& file, int line, const std::string& what,
                        const std::string& image) {
  return warning_at(file, line,
                    fmt::format("{}'s done-if runs on the host before it starts, not in its "
                                "container (image {}): it sees the host's files and commands, not "
                                "the image's; test a file the job writes to a directory the host "
                                "shares, or remove done-if",
                                what, image));
}

// Every done-if of a plan's job and its steps that would run for a container.
void check_done_if_in_containers(const PlanCheck& plan, const std::string& path,
                                 std::vector<Diagnostic>& out) {
  for (size_t i = 0; i < plan.jobs.size() && i < plan.specs.size(); ++i) {
    const PlanJob& job = plan.jobs[i];
    const JobSpec& spec = plan.specs[i];
    std::string any_image = spec.image;
    for (const auto& step : spec.steps) {
      if (any_image.empty()) any_image = step.image;
    }
    if (!spec.done_if.empty() && !any_image.empty()) {
      out.push_back(host_done_if(path, job.line, fmt::format("job '{}'", job.id), any_image));
    }
    for (size_t k = 0; k < spec.steps.size() && k < job.steps.size(); ++k) {
      const JobStep& step = spec.steps[k];
      const std::string& image = step.image.empty() ? spec.image : step.image;
      if (step.done_if.empty() || image.empty()) continue;
      out.push_back(host_done_if(path, job.steps[k].line,
                                 fmt::format("job '{}', step {} ({})", job.id, k, step.name),
                                 image));
    }
  }
}

void check_declared_outputs(const PlanCheck& plan, const std::string& default_cwd,
                            std::vector<Diagnostic>& out) {
  struct Output {
    size_t job;
    fs::path glob;
  };
  std::vector<Output> outputs;
  for (size_t i = 0; i < plan.jobs.size(); ++i) {
    const std::string& cwd = plan.jobs[i].cwd.empty() ? default_cwd : plan.jobs[i].cwd;
    for (const auto& o : plan.jobs[i].outputs) outputs.push_back({i, resolve(o, cwd)});
  }
  for (size_t i = 0; i < plan.jobs.size(); ++i) {
    const PlanJob& job = plan.jobs[i];
    const std::string& cwd = job.cwd.empty() ? default_cwd : job.cwd;
    auto check = [&](const std::string& path, const Located& where, const std::string& how) {
      if (path.find_first_of("$`") != std::string::npos) return;
      fs::path wanted = resolve(path, cwd);
      std::error_code ec;
      if (fs::exists(wanted, ec)) return;
      for (const auto& o : outputs) {
        if (o.job != i && declares(o.glob, wanted)) return;
      }
      out.push_back(warning_at(
          where.file, where.line,
          fmt::format("job {} waits for {}{}, which no job in this plan declares as output "
                      "(# gpuq-out:)",
                      job.id, path, how)));
    };
    for (const auto& w : job.wait_files) check(w.text, w, "");
    for (const auto& r : job.requires_) {
      for (const auto& path : paths_tested_by(r.text))
        check(path, r, fmt::format(" (REQUIRES {})", r.text));
    }
  }
}

std::vector<Diagnostic> lint_plan(const std::string& path, const LintOptions& options) {
  std::error_code ec;
  std::string cwd = fs::current_path(ec).string();
  PlanContext context{cwd, {}, options.max_sweep_elements};
  context.shell = options.shell;
  PlanCheck plan = check_plan(path, context);
  std::vector<Diagnostic> out = std::move(plan.diagnostics);
  std::set<std::pair<ScriptRole, std::string>> scripts;
  // Each script once in each role; its done-if in a container is judged with the plan's job.
  auto lint_once = [&](const std::string& script, ScriptRole role) {
    if (script.empty() || !scripts.emplace(role, script).second) return;
    for (auto& d : lint_script_file(script, options, role, false)) out.push_back(std::move(d));
  };
  for (const auto& job : plan.jobs) {
    check_gpus(path, job.line, fmt::format("job '{}'", job.id), job.gpus, options, out);
    lint_once(job.script_path, ScriptRole::kJob);
    for (const auto& step : job.steps) lint_once(step.script_path, ScriptRole::kStep);
  }
  check_done_if_in_containers(plan, path, out);
  for (const auto& r : plan.reservations) {
    for (int gpu : r.gpus) {
      if (options.machine_gpus >= 0 && gpu >= options.machine_gpus) {
        out.push_back(
            error_at(path, r.line,
                     fmt::format("reservation '{}' names GPU {}; this machine has {} "
                                 "(indices 0 to {})",
                                 r.name, gpu, options.machine_gpus, options.machine_gpus - 1)));
      }
    }
  }
  check_declared_outputs(plan, cwd, out);
  return out;
}

}  // namespace

std::vector<std::string> paths_tested_by(const std::string& command) {
  static const std::set<std::string> kFileTests = {"-e", "-f", "-s", "-d", "-r"};
  std::vector<std::string> words = shell_words(command);
  std::vector<std::string> paths;
  for (size_t i = 0; i + 2 < words.size(); ++i) {
    const std::string& w = words[i];
    if (w != "test" && w != "[" && w != "[[") continue;
    if (i > 0 && words[i - 1] == "!") continue;
    if (!kFileTests.count(words[i + 1])) continue;
    paths.push_back(words[i + 2]);
  }
  return paths;
}

std::vector<Diagnostic> lint_script(const std::string& path, const LintOptions& options,
                                    ScriptRole role) {
  return lint_script_file(path, options, role, true);
}

namespace {

std::vector<Diagnostic> lint_script_file(const std::string& path, const LintOptions& options,
                                         ScriptRole role, bool alone) {
  std::vector<Diagnostic> out;
  auto text = read_script(path);
  if (!text) {
    out.push_back(error_from_message(path, text.error().message));
    return out;
  }
  HeaderScan scan = scan_script_headers(path, *text, role);
  out = std::move(scan.errors);
  const auto& fields = scan.headers.fields;
  if (alone && fields.contains("done_if") && fields.contains("image")) {
    out.push_back(host_done_if(path, scan.headers.lines["done_if"],
                               role == ScriptRole::kStep ? "the step" : "the job",
                               fields["image"].get<std::string>()));
  }
  if (fields.contains("gpus")) {
    check_gpus(path, scan.headers.lines["gpus"], "the script", fields["gpus"].get<int>(), options,
               out);
  }
  if (scan.sweep) {
    auto size = sweep_size_finding(*scan.sweep, options.max_sweep_elements);
    if (!size.message.empty()) {
      const char* key = scan.sweep->is_grid() ? "grid" : "array";
      int line = scan.headers.lines[key];
      out.push_back(size.error ? error_at(path, line, size.message)
                               : warning_at(path, line, size.message));
    }
  }
  if (is_shell_script(*text)) check_shell_syntax(path, out);
  return out;
}

}  // namespace

std::vector<Diagnostic> lint_files(const std::vector<std::string>& paths,
                                   const LintOptions& options) {
  std::vector<Diagnostic> out;
  for (const auto& path : paths) {
    auto found = ends_with(path, ".json") ? lint_plan(path, options) : lint_script(path, options);
    for (auto& d : found) out.push_back(std::move(d));
  }
  sort_diagnostics(out);
  return out;
}

}  // namespace gpuq::spec
