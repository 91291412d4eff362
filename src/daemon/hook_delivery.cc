// SPDX-License-Identifier: Apache-2.0
#include "daemon/hook_delivery.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <memory>

#include "base/duration.h"
#include "base/libcurl.h"
#include "base/time.h"
#include "os/command.h"

namespace gpuq::daemon {
namespace {

// The last `limit` bytes of `text` without surrounding blank space, on one line.
std::string tail_excerpt(std::string_view text, size_t limit) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  bool cut = text.size() > limit;
  if (cut) text = text.substr(text.size() - limit);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  std::string out = cut ? "..." : "";
  for (char c : text) out += (c == '\n' || c == '\r') ? ' ' : c;
  return out;
}

std::string head_excerpt(std::string_view text, size_t limit) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  bool cut = text.size() > limit;
  if (cut) text = text.substr(0, limit);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  std::string out;
  for (char c : text) out += (c == '\n' || c == '\r') ? ' ' : c;
  return cut ? out + "..." : out;
}

// What a command's end says, e.g. "exit status 3" or "killed by signal 9".
std::string command_outcome(const HookConfig& hook, const os::CommandResult& result) {
  if (result.cancelled) return "stopped: the daemon is shutting down";
  if (result.timed_out) {
    return fmt::format("timed out after {} (the hook's timeout); its process group was killed",
                       format_duration(Millis(hook.timeout_ms)));
  }
  if (result.signal != 0) return fmt::format("killed by signal {}", result.signal);
  return fmt::format("exit status {}", result.exit_code);
}

// libcurl's write callback: keeps the start of the answer for error messages, drops the rest.
size_t keep_excerpt(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<std::string*>(user);
  size_t bytes = size * count;
  if (sink->size() < 4 * kHookErrorExcerpt)
    sink->append(data, std::min(bytes, 4 * kHookErrorExcerpt));
  return bytes;
}

// libcurl's progress callback: a non-zero answer aborts the transfer.
int abort_when_cancelled(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(user)->load() ? 1 : 0;
}

struct CurlDeleter {
  const CurlApi* lib;
  void operator()(CURL* curl) const { lib->easy_cleanup(curl); }
};
struct HeaderListDeleter {
  const CurlApi* lib;
  void operator()(curl_slist* list) const { lib->slist_free_all(list); }
};

}  // namespace

// Event data can hold text that is not UTF-8 (a process's command line): replace such bytes
// rather than let the JSON library throw.
std::string json_text(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string hook_event_body(const Event& event) { return json_text(event_to_json(event)); }

std::vector<std::string> hook_event_environment(std::string_view hook_name, const Event& event) {
  std::string data = json_text(event.data);
  return {
      fmt::format("GPUQ_HOOK={}", hook_name),
      fmt::format("GPUQ_EVENT_SEQ={}", event.seq),
      fmt::format("GPUQ_EVENT_KIND={}", event.kind),
      fmt::format("GPUQ_EVENT_TIME={}", format_rfc3339(event.time_ms)),
      fmt::format("GPUQ_EVENT_JOB={}", event.job ? std::to_string(*event.job) : ""),
      fmt::format("GPUQ_EVENT_RUN={}", event.run ? std::to_string(*event.run) : ""),
      fmt::format("GPUQ_EVENT_DATA={}", data.size() <= kMaxHookDataVariable ? data : ""),
  };
}

Status deliver_by_command(const HookConfig& hook, const Event& event, int cancel_fd) {
  os::CommandOptions options;
  options.input = hook_event_body(event) + "\n";
  options.env = hook_event_environment(hook.name, event);
  options.cancel_fd = cancel_fd;
  auto result =
      os::run_command_with({"/bin/sh", "-c", hook.command}, Millis(hook.timeout_ms), options);
  if (!result) {
    return fail(result.error().code,
                fmt::format("cannot run the command: {}", result.error().message));
  }
  if (result->exit_code == 0 && !result->timed_out && !result->cancelled) return ok();
  std::string message = "the command failed: " + command_outcome(hook, *result);
  std::string err = tail_excerpt(result->err, kHookErrorExcerpt);
  if (!err.empty()) message += "; stderr: " + err;
  return fail(Code::kUnavailable, message);
}

void init_url_delivery() {
  // Loads libcurl now, on the main thread; when it is missing, each delivery says so.
  (void)curl_api();
}

Status deliver_by_url(const HookConfig& hook, const Event& event, const std::atomic<bool>& cancel) {
  auto loaded = curl_api();
  if (!loaded) return fail(loaded.error().code, "POST failed: " + loaded.error().message);
  const CurlApi* lib = *loaded;
  std::unique_ptr<CURL, CurlDeleter> curl(lib->easy_init(), CurlDeleter{lib});
  if (!curl) return fail(Code::kInternal, "libcurl could not create a handle");
  std::string body = hook_event_body(event);
  // "Expect:" turns off libcurl's 100-continue round trip for larger bodies.
  curl_slist* list = nullptr;
  for (const std::string& header :
       {std::string("Content-Type: application/json"), "X-Gpuq-Event: " + event.kind,
        fmt::format("X-Gpuq-Seq: {}", event.seq), std::string("Expect:")}) {
    curl_slist* grown = lib->slist_append(list, header.c_str());
    if (grown == nullptr) {
      lib->slist_free_all(list);
      return fail(Code::kInternal, "libcurl could not build the headers");
    }
    list = grown;
  }
  std::unique_ptr<curl_slist, HeaderListDeleter> headers(list, HeaderListDeleter{lib});
  std::string answer;
  char detail[CURL_ERROR_SIZE] = "";
  CURL* handle = curl.get();
  lib->easy_setopt(handle, CURLOPT_URL, hook.url.c_str());
  lib->easy_setopt(handle, CURLOPT_POST, 1L);
  lib->easy_setopt(handle, CURLOPT_POSTFIELDS, body.data());
  lib->easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  lib->easy_setopt(handle, CURLOPT_HTTPHEADER, headers.get());
  lib->easy_setopt(handle, CURLOPT_USERAGENT, "gpuq-hook");
  lib->easy_setopt(handle, CURLOPT_TIMEOUT_MS, static_cast<long>(hook.timeout_ms));
  // Worker threads: no SIGALRM-based DNS timeouts.
  lib->easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
  lib->easy_setopt(handle, CURLOPT_WRITEFUNCTION, keep_excerpt);
  lib->easy_setopt(handle, CURLOPT_WRITEDATA, &answer);
  lib->easy_setopt(handle, CURLOPT_NOPROGRESS, 0L);
  lib->easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, abort_when_cancelled);
  lib->easy_setopt(handle, CURLOPT_XFERINFODATA, &cancel);
  lib->easy_setopt(handle, CURLOPT_ERRORBUFFER, detail);
  CURLcode code = lib->easy_perform(handle);
  if (code == CURLE_ABORTED_BY_CALLBACK) {
    return fail(Code::kUnavailable, "stopped: the daemon is shutting down");
  }
  if (code != CURLE_OK) {
    std::string what = *detail != '\0' ? detail : lib->easy_strerror(code);
    if (code == CURLE_OPERATION_TIMEDOUT) {
      what = fmt::format("no answer within {} (the hook's timeout): {}",
                         format_duration(Millis(hook.timeout_ms)), what);
    }
    return fail(Code::kUnavailable, "POST failed: " + what);
  }
  long status = 0;
  lib->easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status);
  if (status >= 200 && status < 300) return ok();
  std::string message = fmt::format("POST answered HTTP {}", status);
  std::string excerpt = head_excerpt(answer, kHookErrorExcerpt);
  if (!excerpt.empty()) message += ": " + excerpt;
  return fail(Code::kUnavailable, message);
}

}  // namespace gpuq::daemon
