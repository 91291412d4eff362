// SPDX-License-Identifier: Apache-2.0
#include "cli/service_unit.h"

#include <fmt/format.h>

#include <cerrno>

namespace gpuq::cli {
namespace {

bool has_line_break(std::string_view text) {
  return text.find_first_of("\n\r") != std::string_view::npos;
}

// systemd's escaping for a value that is not a command line (Environment=): `%` doubled, and
// the whole assignment quoted when it holds a blank or a quote.
std::string environment_assignment(std::string_view entry) {
  std::string escaped;
  bool quote = false;
  for (char c : entry) {
    if (c == '%') escaped += '%';
    if (c == '"' || c == '\\') escaped += '\\';
    if (c == ' ' || c == '\t' || c == '"' || c == '\'' || c == '\\') quote = true;
    escaped += c;
  }
  return quote ? "\"" + escaped + "\"" : escaped;
}

bool valid_user_name(std::string_view name) {
  // useradd's portable set: letters, digits, '.', '_', '-' (not first), a trailing '$'.
  if (name.empty() || name.size() > 32 || name.front() == '-') return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
    if (!plain && !(c == '$' && i + 1 == name.size())) return false;
  }
  return true;
}

}  // namespace

std::string systemd_quote(std::string_view word) {
  std::string escaped;
  bool quote = word.empty();
  for (char c : word) {
    if (c == '%' || c == '$') escaped += c;  // "%%" and "$$" are a literal % and $
    if (c == '"' || c == '\\') escaped += '\\';
    if (c == ' ' || c == '\t' || c == '"' || c == '\'' || c == '\\' || c == ';') quote = true;
    escaped += c;
  }
  return quote ? "\"" + escaped + "\"" : escaped;
}

Status check_service_unit(const ServiceUnit& unit) {
  auto bad = [](std::string message) { return fail(Code::kInvalidArgument, std::move(message)); };
  if (unit.executable.empty() || unit.executable.front() != '/') {
    return bad(fmt::format("the gpuq binary's path '{}' is not absolute", unit.executable));
  }
  if (!unit.home.empty() && unit.home.front() != '/') {
    return bad(fmt::format("--home '{}' must be an absolute directory in a unit", unit.home));
  }
  for (std::string_view text :
       {std::string_view(unit.executable), std::string_view(unit.home), std::string_view(unit.gpus),
        std::string_view(unit.documentation)}) {
    if (has_line_break(text)) return bad(fmt::format("'{}' holds a line break", text));
  }
  if (!unit.user && !unit.system && !valid_user_name(unit.run_as)) {
    return bad(fmt::format("--run-as '{}' is not a user name", unit.run_as));
  }
  for (const auto& entry : unit.environment) {
    size_t eq = entry.find('=');
    if (eq == 0 || eq == std::string::npos || has_line_break(entry)) {
      return bad(fmt::format("--env '{}' is not KEY=VALUE on one line", entry));
    }
  }
  return ok();
}

std::string render_service_unit(const ServiceUnit& unit) {
  std::string exec = systemd_quote(unit.executable) + " daemon";
  if (unit.system) exec += " --system";
  if (!unit.home.empty()) exec += " --home " + systemd_quote(unit.home);
  if (!unit.gpus.empty()) exec += " --gpus " + systemd_quote(unit.gpus);

  std::string text = fmt::format(
      "# gpuq's queue daemon as a systemd {kind} unit, written by `gpuq service install{flag}`.\n"
      "# To change it, run that command again with other options and --force.\n"
      "# What to do when something is wrong: docs/runbook.md.\n"
      "\n"
      "[Unit]\n"
      "Description=gpuq GPU job queue daemon\n",
      fmt::arg("kind", unit.user ? "user" : "system"),
      fmt::arg("flag", unit.user ? " --user" : ""));
  if (!unit.documentation.empty()) text += "Documentation=" + unit.documentation + "\n";
  text +=
      "\n"
      "[Service]\n"
      "# In the foreground (no --detach): systemd supervises it and the journal keeps its log.\n"
      "Type=simple\n";
  text += "ExecStart=" + exec + "\n";
  if (unit.system) {
    text +=
        "# As root: it serves the box's users on /run/gpuq/gpuq.sock (members of [users] group)\n"
        "# and starts each job as the user who submitted it (docs/lab.md).\n";
  } else if (!unit.user) {
    text += "User=" + unit.run_as + "\n";
  }
  text +=
      "# KillMode=process: stopping or restarting the service stops the daemon only. Each run\n"
      "# belongs to its own `gpuq shim` (its own session and process group), keeps going while\n"
      "# no daemon runs, and is re-adopted by the next daemon (pid and start time). The default,\n"
      "# control-group, would kill every running job at each restart or upgrade.\n"
      "KillMode=process\n"
      "# Delegate=yes: the daemon may manage this unit's cgroup, so each run gets its own cgroup\n"
      "# (docs/containment.md): nothing a job starts escapes it, cgroup.kill stops it and the\n"
      "# daemon knows the moment it is empty. On systemd 254+ a drop-in with\n"
      "# DelegateSubgroup=daemon also gives runs peak memory (docs/containment.md); Debian 12's\n"
      "# systemd 252 does not know that key.\n"
      "Delegate=yes\n"
      "Restart=always\n"
      "RestartSec=2\n"
      "# On SIGTERM the daemon stops at once; it does not wait for runs.\n"
      "TimeoutStopSec=30\n"
      "# Jobs run in this unit's control group and inherit its limits: pinned memory for CUDA\n"
      "# and NCCL, many open files for data loaders, no cap on threads and processes. A job\n"
      "# killed by the kernel for memory must not stop the daemon (OOMPolicy=continue).\n"
      "LimitMEMLOCK=infinity\n"
      "LimitNOFILE=1048576\n"
      "TasksMax=infinity\n"
      "OOMPolicy=continue\n"
      "# The daemon must see the processes on its GPUs: run it in the host's PID namespace (in a\n"
      "# container: --pid=host), or every GPU process looks foreign or invisible. Do not add\n"
      "# sandboxing (PrivateTmp=, ProtectSystem=, ProtectHome=, PrivatePIDs=): jobs need the\n"
      "# machine as the person who submitted them sees it.\n"
      "# Each job gets the environment of the `gpuq submit` that queued it; the daemon itself\n"
      "# needs none. Environment= lines (gpuq service install --env K=V) reach the daemon and\n"
      "# its hooks.\n";
  for (const auto& entry : unit.environment) {
    text += "Environment=" + environment_assignment(entry) + "\n";
  }
  text += fmt::format(
      "\n"
      "[Install]\n"
      "WantedBy={}\n",
      service_wanted_by(unit.user));
  return text;
}

std::string service_write_error(const std::string& path, int err, bool system_dir) {
  std::string message = errno_error("cannot write " + path, err).value().message;
  if (system_dir && (err == EACCES || err == EPERM || err == EROFS)) {
    message +=
        "\nA system unit needs root: run this again with sudo, or install a unit for your own "
        "user with --user.";
  }
  return message;
}

std::string environment_value(const std::vector<std::string>& environ, std::string_view name) {
  for (const auto& entry : environ) {
    if (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
        entry[name.size()] == '=') {
      return entry.substr(name.size() + 1);
    }
  }
  return "";
}

Result<std::string> service_unit_dir(bool user, const std::string& unit_dir,
                                     const std::vector<std::string>& environ) {
  if (!unit_dir.empty()) return unit_dir;
  if (!user) return std::string(kSystemUnitDir);
  std::string config = environment_value(environ, "XDG_CONFIG_HOME");
  if (!config.empty() && config.front() == '/') return config + "/systemd/user";
  std::string home = environment_value(environ, "HOME");
  if (!home.empty() && home.front() == '/') return home + "/.config/systemd/user";
  return fail(Code::kInvalidArgument,
              "cannot find the user unit directory: set $HOME or $XDG_CONFIG_HOME, or give "
              "--unit-dir DIR");
}

std::string_view service_wanted_by(bool user) {
  return user ? "default.target" : "multi-user.target";
}

std::string systemctl_command(bool user, std::string_view verb_and_args) {
  return fmt::format("systemctl {}{}", user ? "--user " : "", verb_and_args);
}

}  // namespace gpuq::cli
