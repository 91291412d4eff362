// SPDX-License-Identifier: Apache-2.0
// Container image references and container users, checked when a job is submitted (docs/jobs.md,
// "Containers"), so that a typo is refused at the desk rather than by a pull at run time.
// An image reference follows the grammar container runtimes read (docker's
// distribution/reference):
//   [HOST[:PORT]/]PATH[:TAG][@sha256:DIGEST]
// HOST is a registry (a first component with a '.' or a ':', or "localhost"); PATH is one or
// more lowercase components [a-z0-9]+ joined by '.', '_', '__' or dashes, separated by '/';
// TAG is [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}; DIGEST is 64 lowercase hex digits. Nothing is
// resolved or pulled here. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "base/status.h"

namespace gpuq {

// ok() for a well-formed reference; otherwise kInvalidArgument whose message quotes the text,
// says what is wrong and how such a reference is written. Callers prefix the field or flag.
Status check_image_reference(std::string_view reference);

// The user a container runs as (`--container-user`, "container_user"): UID[:GID] with numbers,
// or NAME[:GROUP] with names of letters, digits, '_', '.' and '-'. ok() or kInvalidArgument
// naming the form.
Status check_container_user(std::string_view user);

// The host uid and gid a container user of numbers names (UID: the gid is the uid; UID:GID);
// nullopt for NAME[:GROUP] (only the image knows those) and for anything else.
std::optional<std::pair<uint32_t, uint32_t>> container_user_ids(std::string_view user);

// Whether a daemon running as `daemon_uid` can run containers as `user` (a job's
// container_user, "" for the submitter's): the run directory is given to a numeric user
// (daemon/run_containers.cc), which takes root unless the uid is the daemon's own. ok(), or
// kInvalidArgument naming the daemon's uid and the fix.
Status check_container_user_on(std::string_view user, uint32_t daemon_uid);

}  // namespace gpuq
