// SPDX-License-Identifier: Apache-2.0
#include "cli/submit_directory.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>

namespace gpuq::cli {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kJobFileSuffix = ".sh";

struct DirectoryFiles {
  std::vector<std::string> jobs;   // DIR/NAME.sh, in name order
  std::vector<std::string> other;  // names of what is not a job file
};

Outcome<DirectoryFiles> list_files(const std::string& dir) {
  DirectoryFiles files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.starts_with(".")) continue;  // hidden: an editor's or a tool's, never a job
    std::error_code type_ec;
    if (name.ends_with(kJobFileSuffix) && name.size() > kJobFileSuffix.size() &&
        it->is_regular_file(type_ec)) {
      files.jobs.push_back((fs::path(dir) / name).string());
    } else {
      files.other.push_back(name);
    }
  }
  if (ec) return cli_fail(kExitUsage, fmt::format("{}: cannot list it: {}", dir, ec.message()));
  std::sort(files.jobs.begin(), files.jobs.end());
  std::sort(files.other.begin(), files.other.end());
  return files;
}

}  // namespace

bool is_directory_submit(const SubmitOptions& options) {
  std::error_code ec;
  return !options.command_mode && !options.words.empty() &&
         fs::is_directory(options.words.front(), ec);
}

Outcome<Json> directory_plan_request(const SubmitOptions& options, const Io& io,
                                     std::ostream& err) {
  const std::string& dir = options.words.front();
  if (options.words.size() > 1) {
    return cli_fail(kExitUsage,
                    fmt::format("{} is a directory, whose job files take no arguments; put flags "
                                "before it, as in gpuq submit --replace {}",
                                dir, dir));
  }
  if (!options.name.empty()) {
    return cli_fail(kExitUsage, fmt::format("--name with the directory {}: each of its jobs is "
                                            "named after its file",
                                            dir));
  }
  auto files = list_files(dir);
  if (!files) return tl::unexpected(files.error());
  if (files->jobs.empty()) {
    return cli_fail(kExitUsage, fmt::format("{} holds no job files (*.sh); nothing submitted", dir));
  }
  if (!files->other.empty()) {
    err << fmt::format("{}: not job files (*.sh), not submitted: {}\n", dir,
                       fmt::join(files->other, ", "));
  }
  SubmitOptions one = options;
  one.replace = false;  // the plan's, not each job's
  Json jobs = Json::array();
  for (const std::string& path : files->jobs) {
    one.words = {path};
    auto request = build_submit_request(one, io.environ, io.cwd, io.wall_ms());
    if (!request) return tl::unexpected(request.error());
    if (!request->contains("name")) {
      std::string file = fs::path(path).filename().string();
      (*request)["name"] = file.substr(0, file.size() - kJobFileSuffix.size());
    }
    (*request)["source"] = path;  // the daemon's findings name the file
    jobs.push_back(std::move(*request));
  }
  return Json{{"jobs", std::move(jobs)}, {"reservations", Json::array()}};
}

}  // namespace gpuq::cli
