// SPDX-License-Identifier: Apache-2.0
// Who may do what: see permissions.h.
#include "api/permissions.h"

#include <fmt/format.h>

namespace gpuq::api {

Need need_of(Endpoint endpoint) {
  switch (endpoint) {
    case Endpoint::kCancel:
    case Endpoint::kControl:
    case Endpoint::kArrayControl:
    case Endpoint::kLog:
      return Need::kOwner;
    case Endpoint::kDrain:
    case Endpoint::kGc:
    case Endpoint::kReleaseGpu:
    case Endpoint::kHooks:
      return Need::kAdmin;
    default:
      return Need::kAnyone;
  }
}

std::string action_words(Endpoint endpoint, std::string_view verb) {
  switch (endpoint) {
    case Endpoint::kCancel: return "cancel";
    case Endpoint::kLog: return "read the log of";
    case Endpoint::kControl:
    case Endpoint::kArrayControl: return std::string(verb);
    case Endpoint::kDrain: return std::string(verb);  // drain or undrain
    case Endpoint::kGc: return "collect garbage (gpuq gc)";
    case Endpoint::kReleaseGpu: return "release GPUs from attention";
    case Endpoint::kHooks: return "read the hooks";
    default: return "do this";
  }
}

Status permit(const Caller& caller, Need need, std::string_view action, std::string_view what,
              std::string_view owner) {
  if (caller.admin || need == Need::kAnyone) return ok();
  if (need == Need::kOwner && !owner.empty() && owner == caller.user) return ok();
  if (need == Need::kAdmin) {
    return fail(Code::kPermissionDenied,
                fmt::format("only an admin may {}; {} is not one (admins are root, the daemon's "
                            "user and [users] admins in the daemon's config.toml)",
                            action, caller.user));
  }
  std::string whose = owner.empty() ? std::string("no user (it was queued before users were recorded)")
                                    : fmt::format("'{}'", owner);
  return fail(Code::kPermissionDenied,
              fmt::format("{} belongs to {}: only {}an admin may {} it",
                          what, whose, owner.empty() ? "" : fmt::format("'{}' or ", owner), action));
}

Status may_submit(const Caller& caller, const JobSpec& spec) {
  if (caller.admin || spec.container_user.empty()) return ok();
  return fail(Code::kPermissionDenied,
              fmt::format("only an admin may choose who a container runs as (--container-user {}); "
                          "leave it out: {}'s containers run as {}'s uid and gid",
                          spec.container_user, caller.user, caller.user));
}

}  // namespace gpuq::api
