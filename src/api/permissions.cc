// SPDX-License-Identifier: Apache-2.0
// Who may do what: see permissions.h.
#include "api/permissions.h"

#include <fmt/format.h>

#include "model/image_ref.h"

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

Status may_submit(const Caller& caller, const JobSpec& spec, uid_t daemon_uid) {
  if (spec.container_user.empty()) return ok();
  if (!caller.admin) {
    return fail(Code::kPermissionDenied,
                fmt::format("only an admin may choose who a container runs as (--container-user {}); "
                            "leave it out: {}'s containers run as {}'s uid and gid",
                            spec.container_user, caller.user, caller.user));
  }
  // The run directory is given to the container's uid (daemon/run_containers.cc), which takes
  // root; a name is the image's to resolve, and the directory is then only opened for reading.
  auto ids = container_user_ids(spec.container_user);
  if (daemon_uid == 0 || !ids || ids->first == daemon_uid) return ok();
  return fail(Code::kInvalidArgument,
              fmt::format("--container-user {}: this daemon runs as uid {}, not as root, so it cannot "
                          "give the run directory to uid {} (docs/containers.md); leave "
                          "--container-user out (the containers run as uid {}), or run the job on "
                          "a daemon run by root",
                          spec.container_user, daemon_uid, ids->first, daemon_uid));
}

}  // namespace gpuq::api
