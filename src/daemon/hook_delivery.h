// SPDX-License-Identifier: Apache-2.0
// One delivery attempt of one event to one hook (daemon/hooks.h): running the hook's command
// with the event on stdin and in GPUQ_EVENT_* variables, or POSTing the event JSON to its URL.
// An attempt succeeds (exit 0, HTTP 2xx) or fails with a message a person can act on (the exit
// status and the tail of stderr; the HTTP status and the start of the answer); it never throws.
// Every attempt is bounded by the hook's timeout and can be cut short by the caller (a cancel
// fd for commands, a flag for URLs) so that a daemon shutting down is not held.
// Free functions holding no state; safe to call from many threads at once (call
// init_url_delivery() once, before the first thread starts).
#pragma once

#include <atomic>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "daemon/config.h"
#include "model/event.h"

namespace gpuq::daemon {

// How much of a failed command's stderr, or of an HTTP error answer, goes into the error.
constexpr size_t kHookErrorExcerpt = 300;

// The event as hooks get it: the object GET /v1/events returns, on one line.
std::string hook_event_body(const Event& event);

// The largest GPUQ_EVENT_DATA: the kernel refuses to exec with a variable over 128 KiB, and a
// hook that can never start would hold its events for ever. Larger data is on stdin only.
constexpr size_t kMaxHookDataVariable = 64 << 10;

// GPUQ_HOOK, GPUQ_EVENT_SEQ, GPUQ_EVENT_KIND, GPUQ_EVENT_TIME (RFC 3339), GPUQ_EVENT_JOB and
// GPUQ_EVENT_RUN (empty when the event has none), GPUQ_EVENT_DATA (JSON; empty when longer
// than kMaxHookDataVariable), as "NAME=VALUE".
std::vector<std::string> hook_event_environment(std::string_view hook_name, const Event& event);

// Runs `/bin/sh -c hook.command` in its own process group, the body plus a newline on stdin.
// `cancel_fd` (or -1): when it becomes readable the group is killed and the attempt fails.
Status deliver_by_command(const HookConfig& hook, const Event& event, int cancel_fd);

// Prepares libcurl for use by several threads; call once on the main thread before any
// deliver_by_url().
void init_url_delivery();

// POSTs the body to hook.url (Content-Type: application/json, X-Gpuq-Event: the kind). Stops
// early, as a failure, once `cancel` is set.
Status deliver_by_url(const HookConfig& hook, const Event& event, const std::atomic<bool>& cancel);

}  // namespace gpuq::daemon
