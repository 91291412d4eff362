// SPDX-License-Identifier: Apache-2.0
// Who may do what (docs/lab.md, "Who may do what"): one pure function of the caller, the
// endpoint and whose job it touches, beside the TCP listener's policy (api/http_policy.h).
// Everyone let in may see the queue (names, owners, GPUs, states, reasons) and submit; a job's
// owner or an admin may cancel, hold, release, retry and move it and read its log; only an
// admin may collect garbage, drain, release GPUs from attention or read the hooks (their
// commands and URLs are the daemon's configuration). Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "api/caller.h"
#include "api/http.h"
#include "base/status.h"
#include "model/job.h"

namespace gpuq::api {

enum class Need {
  kAnyone,  // seeing the queue, submitting
  kOwner,   // acting on a job or array, reading its log: its owner, or an admin
  kAdmin,   // acting on the daemon
};

// What `endpoint` (with `verb`, for the endpoints that have one) asks of its caller.
Need need_of(Endpoint endpoint);

// What the request does, in words for a refusal: "cancel", "read the log of", "drain".
std::string action_words(Endpoint endpoint, std::string_view verb);

// Whether `caller` may do what `need` asks on something `owner` owns ("" for nobody's: jobs of
// daemons older than users, which only admins may act on). A refusal is kPermissionDenied
// (403) that names the owner and says who may: `what` is the thing in words ("job 12").
Status permit(const Caller& caller, Need need, std::string_view action, std::string_view what,
              std::string_view owner);

// Whether `caller` may submit `spec`: anyone may, but only an admin may choose who a container
// runs as (`--container-user`): everyone else's containers run as their own uid and gid.
Status may_submit(const Caller& caller, const JobSpec& spec);

}  // namespace gpuq::api
