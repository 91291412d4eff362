// SPDX-License-Identifier: Apache-2.0
#include "runner/container_commands.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "base/ascii.h"
#include "os/command.h"

namespace gpuq::runner {
namespace {

// The most of a failed pull's output read back for its message.
constexpr std::streamoff kMostMessageBytes = 64 << 10;

std::string trimmed(std::string_view text) {
  size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return "";
  size_t end = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(begin, end - begin + 1));
}

// What the runtime said about its failure: from its last line that starts with "Error" (docker's
// "Error response from daemon: ...", podman's "Error: ...") to the end, else its last line; on
// one line.
std::string runtime_words(std::string_view output) {
  std::string text = trimmed(output);
  size_t from = std::string::npos;
  for (size_t at = text.rfind("Error"); at != std::string::npos;
       at = at == 0 ? std::string::npos : text.rfind("Error", at - 1)) {
    if (at == 0 || text[at - 1] == '\n') {
      from = at;
      break;
    }
  }
  if (from == std::string::npos) {
    size_t newline = text.rfind('\n');
    from = newline == std::string::npos ? 0 : newline + 1;
  }
  std::string words = text.substr(from);
  std::replace(words.begin(), words.end(), '\n', ' ');
  if (words.size() > 1000) words = words.substr(0, 1000) + "...";
  return words;
}

// "podman stop gpuq-...": the command, for messages (its binary by the runtime's name).
std::string command_text(const ContainerRuntime& runtime, const std::vector<std::string>& argv) {
  std::string text(to_string(runtime.kind));
  for (size_t i = 1; i < argv.size(); ++i) text += " " + argv[i];
  return text;
}

// Why a command that ran did not succeed, in the runtime's words where it said any.
std::string failure(const ContainerRuntime& runtime, const std::vector<std::string>& argv,
                    const os::CommandResult& result, Millis timeout) {
  std::string command = command_text(runtime, argv);
  if (result.timed_out)
    return fmt::format("{}: no answer within {}", command, format_duration(timeout));
  if (result.cancelled) return fmt::format("{}: cancelled", command);
  std::string words = runtime_words(result.err.empty() ? result.out : result.err);
  if (words.empty() && result.signal != 0)
    words = fmt::format("killed by signal {}", result.signal);
  if (words.empty()) words = fmt::format("exit status {}", result.exit_code);
  return fmt::format("{}: {}", command, words);
}

bool succeeded(const os::CommandResult& result) {
  return result.exit_code == 0 && !result.timed_out && !result.cancelled;
}

Result<os::CommandResult> call(const std::vector<std::string>& argv, Millis timeout,
                               int cancel_fd = -1) {
  os::CommandOptions options;
  options.cancel_fd = cancel_fd;
  return os::run_command_with(argv, timeout, options);
}

// The container is gone, or not running: nothing to stop.
bool nothing_to_stop(const os::CommandResult& result) {
  std::string said = ascii_lower(result.err + result.out);
  return said.find("no such container") != std::string::npos ||
         said.find("is not running") != std::string::npos ||
         said.find("container state improper") != std::string::npos;
}

std::vector<ContainerRef> parse_listing(std::string_view text) {
  std::vector<ContainerRef> refs;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string line = trimmed(text.substr(start, end - start));
    start = end + 1;
    if (line.empty()) continue;
    size_t space = line.find(' ');
    if (space == std::string::npos) {
      refs.push_back({line, ""});
    } else {
      refs.push_back({line.substr(0, space), trimmed(line.substr(space + 1))});
    }
  }
  return refs;
}

// What was appended to the file open at `fd` after `offset`, at most its last kMostMessageBytes.
std::string appended(int fd, int64_t offset) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return "";
  int64_t end = static_cast<int64_t>(st.st_size);
  int64_t from = std::max<int64_t>(offset, end - kMostMessageBytes);
  if (from >= end) return "";
  std::string text(static_cast<size_t>(end - from), '\0');
  ssize_t got = ::pread(fd, text.data(), text.size(), from);
  text.resize(got > 0 ? static_cast<size_t>(got) : 0);
  return text;
}

}  // namespace

Status stop_container(const ContainerRuntime& runtime, const std::string& name, Millis grace,
                      Millis timeout) {
  int grace_seconds = static_cast<int>((std::max<int64_t>(grace.count(), 0) + 999) / 1000);
  auto stop_argv = container_stop_argv(runtime, name, grace_seconds);
  Millis stop_timeout = Millis(int64_t{grace_seconds} * 1000) + timeout;
  auto stopped = call(stop_argv, stop_timeout);
  if (!stopped) return tl::unexpected(stopped.error());
  if (succeeded(*stopped)) return ok();
  if (!stopped->timed_out && nothing_to_stop(*stopped)) return ok();
  std::string stop_failure = failure(runtime, stop_argv, *stopped, stop_timeout);
  auto kill_argv = container_kill_argv(runtime, name);
  auto killed = call(kill_argv, timeout);
  if (!killed) return tl::unexpected(killed.error());
  if (succeeded(*killed) || (!killed->timed_out && nothing_to_stop(*killed))) return ok();
  return fail(Code::kUnavailable,
              fmt::format("cannot stop container {}: {}; then {}", name, stop_failure,
                          failure(runtime, kill_argv, *killed, timeout)));
}

Result<std::vector<ContainerRef>> list_run_containers(const ContainerRuntime& runtime,
                                                      const std::string& run_id, Millis timeout) {
  auto argv = container_ps_argv(runtime, run_id);
  auto listed = call(argv, timeout);
  if (!listed) return tl::unexpected(listed.error());
  if (!succeeded(*listed))
    return fail(Code::kUnavailable, failure(runtime, argv, *listed, timeout));
  return parse_listing(listed->out);
}

Result<ContainerCleanup> cleanup_run_containers(const ContainerRuntime& runtime,
                                                const std::string& run_id, Millis timeout) {
  auto found = list_run_containers(runtime, run_id, timeout);
  if (!found) return tl::unexpected(found.error());
  ContainerCleanup cleanup;
  if (found->empty()) return cleanup;
  std::vector<std::string> ids;
  for (const ContainerRef& ref : *found) ids.push_back(ref.id);
  auto rm_argv = container_rm_argv(runtime, ids);
  auto removed = call(rm_argv, timeout);
  if (!removed) return tl::unexpected(removed.error());
  auto still = list_run_containers(runtime, run_id, timeout);
  if (!still) return tl::unexpected(still.error());
  std::set<std::string> left_ids;
  for (const ContainerRef& ref : *still) left_ids.insert(ref.id);
  for (const ContainerRef& ref : *found) {
    if (!left_ids.count(ref.id)) cleanup.removed.push_back(ref);
  }
  cleanup.left = std::move(*still);
  if (!cleanup.left.empty()) {
    cleanup.message = succeeded(*removed) ? fmt::format("{} succeeded, but they are still listed",
                                                        command_text(runtime, rm_argv))
                                          : failure(runtime, rm_argv, *removed, timeout);
  }
  return cleanup;
}

Result<bool> image_present(const ContainerRuntime& runtime, const std::string& image,
                           Millis timeout) {
  auto argv = image_present_argv(runtime, image);
  auto looked = call(argv, timeout);
  if (!looked) return tl::unexpected(looked.error());
  if (succeeded(*looked)) return true;
  if (!looked->timed_out) {
    // podman image exists: 1 absent, 125 an error; docker image inspect: 1 for both, its
    // message tells them apart.
    if (runtime.kind == RuntimeKind::kPodman && looked->exit_code == 1) return false;
    if (runtime.kind == RuntimeKind::kDocker &&
        ascii_lower(looked->err).find("no such image") != std::string::npos) {
      return false;
    }
  }
  return fail(Code::kUnavailable, failure(runtime, argv, *looked, timeout));
}

Status pull_image(const ContainerRuntime& runtime, const std::string& image, int log_fd,
                  Millis timeout, int cancel_fd) {
  auto argv = image_pull_argv(runtime, image);
  os::CommandOptions options;
  options.cancel_fd = cancel_fd;
  // The runtime writes its progress straight to the log, as it comes; its message is read back
  // from there.
  options.output_fd = log_fd;
  struct stat st {};
  int64_t offset = log_fd >= 0 && ::fstat(log_fd, &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
  auto pulled = os::run_command_with(argv, timeout, options);
  if (!pulled) return tl::unexpected(pulled.error());
  if (succeeded(*pulled)) return ok();
  os::CommandResult seen = *pulled;
  if (log_fd >= 0) seen.err = appended(log_fd, offset);
  return fail(Code::kUnavailable, failure(runtime, argv, seen, timeout));
}

}  // namespace gpuq::runner
