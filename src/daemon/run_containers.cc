// SPDX-License-Identifier: Apache-2.0
// A container job's run directory (docs/containers.md): the run's spec, built as for the host,
// made to run each container step as `RUNTIME run` (runner/container_run_spec.h) before it is
// written; when the daemon is not the containers' user, the run directory is given to that user
// and the job directory opened for reading (both stay under the owner-only home; a bind mount
// does not need its parents to be open).
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <optional>
#include <utility>

#include <fmt/format.h>

#include "daemon/run_lifecycle.h"
#include "model/image_ref.h"
#include "os/identity.h"
#include "runner/container_run_spec.h"

namespace gpuq::daemon {
namespace {

using Ids = std::pair<uid_t, gid_t>;

// The host's uid and gid of a login name.
std::optional<Ids> ids_of_login(const std::string& name) {
  struct passwd pw;
  struct passwd* found = nullptr;
  char buffer[4096];
  if (name.empty() || ::getpwnam_r(name.c_str(), &pw, buffer, sizeof buffer, &found) != 0 || !found) {
    return std::nullopt;
  }
  return Ids{found->pw_uid, found->pw_gid};
}

// The host ids a --container-user of the form UID or UID:GID names; nullopt for a name, which
// only the image knows.
std::optional<Ids> ids_of_container_user(const std::string& user) {
  auto ids = container_user_ids(user);
  if (!ids) return std::nullopt;
  return Ids{ids->first, ids->second};
}

}  // namespace

Result<runner::ContainerRuntime> RunLifecycle::create_container_run_dir(
    const Job& job, const runner::RunContext& context, const runner::RunSpec& spec) {
  auto runtime = world_.container_runtime(config_.containers);
  if (!runtime) return tl::unexpected(runtime.error());
  // The submitter's ids (the daemon's own when it runs for one person, or for an older job).
  Ids submitter{::geteuid(), ::getegid()};
  if (auto ids = ids_of_login(job.spec.user)) submitter = *ids;
  std::string user = runner::container_user_arg(job.spec, submitter.first, submitter.second);
  std::optional<Ids> owner = job.spec.container_user.empty() ? std::optional<Ids>(submitter)
                                                             : ids_of_container_user(job.spec.container_user);
  runner::RunSpec contained = spec;
  // The containers get the user's groups, and run.json keeps them for the shim.
  if (contained.run_as && contained.run_as->groups.empty()) {
    auto groups = os::groups_of(contained.run_as->login, contained.run_as->gid);
    if (!groups) return tl::unexpected(groups.error());
    contained.run_as->groups = std::move(*groups);
  }
  if (auto st = runner::containerize_run_spec(contained, job.spec, context, *runtime, user); !st) {
    return tl::unexpected(st.error());
  }
  if (auto st = world_.create_run_dir(context.run_dir, contained); !st) return tl::unexpected(st.error());
  // A job that runs as its submitter (a root daemon's, docs/lab.md) has both directories as
  // that user's already: the job directory since its submit, the run directory from its shim.
  if (spec.run_as) return runtime;
  // Else a user that is not the daemon's gets the run directory to write; the job directory
  // (script snapshots, the pull's log, which the daemon writes) it may only read. Both stay
  // under the owner-only home, which no one else can enter.
  if (owner && owner->first != ::geteuid()) {
    if (auto st = world_.give_dir(context.run_dir, owner->first, owner->second); !st) {
      return tl::unexpected(st.error());
    }
  }
  if (!owner || owner->first != ::geteuid()) {
    if (auto st = world_.set_dir_mode(context.job_dir, 0755); !st) return tl::unexpected(st.error());
  }
  return runtime;
}

}  // namespace gpuq::daemon
