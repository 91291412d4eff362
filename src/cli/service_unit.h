// SPDX-License-Identifier: Apache-2.0
// The systemd unit that runs `gpuq daemon` as a service (`gpuq service install`): its text,
// rendered from plain options, and where a user or system unit lives. The unit carries what a
// GPU job needs of its service manager: runs must outlive a daemon restart (KillMode=process:
// they belong to their shims and are re-adopted), locked memory and open files without a low
// ceiling, no task limit and no stop of the daemon when the kernel kills a job for memory.
// Pure functions of their arguments (the environment is passed in); thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace gpuq::cli {

inline constexpr std::string_view kServiceUnitName = "gpuq.service";
inline constexpr std::string_view kSystemUnitDir = "/etc/systemd/system";

struct ServiceUnit {
  bool user = false;                     // a user unit (systemctl --user), else a system unit
  std::string executable;                // absolute path of the gpuq binary
  std::string home;                      // --home for the daemon; empty: the daemon's default
  std::string gpus;                      // --gpus for the daemon; empty: its default (auto)
  std::string run_as;                    // User= of a system unit; unused for a user unit
  // A system unit that serves the box's users (`gpuq daemon --system`, docs/lab.md): run as
  // root, each job as its submitter. Set for a system unit without --run-as.
  bool system = false;
  std::vector<std::string> environment;  // KEY=VALUE, one Environment= line each
  std::string documentation;             // a URI (file:/..., https://...); empty: none
};

// The unit file's text. The values must have been checked (check_service_unit).
std::string render_service_unit(const ServiceUnit& unit);

// Refuses what systemd could not take or would misread: a relative or missing executable, a
// relative home, an environment entry that is not KEY=VALUE, a user name with odd characters,
// a line break anywhere. Code::kInvalidArgument with a message that says how to fix it.
Status check_service_unit(const ServiceUnit& unit);

// One word of a command line in systemd's syntax: `%` and `$` doubled (no specifier or variable
// expansion), and double-quoted with `\` escapes when it holds a blank, a quote or a backslash.
std::string systemd_quote(std::string_view word);

// Where the unit goes: `unit_dir` when given; else for a user unit
// $XDG_CONFIG_HOME/systemd/user (default $HOME/.config/systemd/user), read from `environ`
// ("KEY=VALUE" strings); else /etc/systemd/system. kInvalidArgument when neither variable
// gives an absolute directory for a user unit.
Result<std::string> service_unit_dir(bool user, const std::string& unit_dir,
                                     const std::vector<std::string>& environ);

// The target whose .wants/ holds the unit once it is enabled: default.target for a user unit,
// multi-user.target for a system unit.
std::string_view service_wanted_by(bool user);

// The commands a person runs after an install or before an uninstall ("systemctl --user ...").
std::string systemctl_command(bool user, std::string_view verb_and_args);

// Why the unit could not be written to `path` (errno `err`); for the system unit directory a
// refused permission adds the fix: sudo, or a user unit with --user.
std::string service_write_error(const std::string& path, int err, bool system_dir);

// The value of `name` in `environ` ("KEY=VALUE" strings), or "" when unset.
std::string environment_value(const std::vector<std::string>& environ, std::string_view name);

}  // namespace gpuq::cli
