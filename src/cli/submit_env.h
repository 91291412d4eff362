// SPDX-License-Identifier: Apache-2.0
// What of the submitter's environment `gpuq submit` sends as a job's environment, which the
// daemon stores with the job (in gpuq.db, private to the daemon's user) and gives to every run
// (docs/jobs.md, "What gpuq stores").
//
// By default: all of it, because jobs need their PATH, conda/venv variables, CUDA paths and
// tokens (HF_TOKEN, WANDB_API_KEY), except kSessionVariables: variables that describe the login
// session `gpuq submit` ran in, and that are wrong or harmful in a job that runs later, after
// that session may have ended. With --clean-env: only kCleanEnvVariables (and LC_*), for people
// who do not want their tokens stored. Either way `--env K=V` adds or replaces a variable, also
// one of those lists (an explicit choice wins), and gpuq's own run variables are never taken.
// Pure functions; thread-safe.
#pragma once

#include <array>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace gpuq::cli {

// Left out of every job's environment, each for a reason:
// - SSH_AUTH_SOCK, SSH_AGENT_PID: the ssh agent of the login session. A job that runs hours
//   later must not sign with the user's keys through it, and the socket is gone (or reused)
//   once the session ends.
// - SSH_CONNECTION, SSH_CLIENT, SSH_TTY: describe a connection and a terminal the job is not on.
// - GPG_AGENT_INFO, GPG_TTY: the session's gpg agent and terminal, as for ssh.
// - DBUS_SESSION_BUS_ADDRESS, XDG_SESSION_ID, XDG_SESSION_TYPE, XDG_SESSION_CLASS, XDG_SEAT,
//   XDG_VTNR: the desktop/logind session; a job would talk to (or be counted in) a session that
//   may be closed.
// - DISPLAY, WAYLAND_DISPLAY: a display the job cannot rely on; with them set, plotting and GUI
//   toolkits pick an interactive backend and fail once the session is gone.
// - TMUX, TMUX_PANE, STY, WINDOW: the tmux or screen session; a job's `tmux`/`screen` command
//   would act on the user's terminal session.
// - OLDPWD, SHLVL, _, PS1, PROMPT_COMMAND: interactive shell state (the previous directory, the
//   shell depth, the last command, the prompt), meaningless to a job and only noise.
inline constexpr std::array<std::string_view, 24> kSessionVariables = {
    "SSH_AUTH_SOCK", "SSH_AGENT_PID",     "SSH_CONNECTION", "SSH_CLIENT",
    "SSH_TTY",       "GPG_AGENT_INFO",    "GPG_TTY",        "DBUS_SESSION_BUS_ADDRESS",
    "XDG_SESSION_ID", "XDG_SESSION_TYPE", "XDG_SESSION_CLASS", "XDG_SEAT",
    "XDG_VTNR",      "DISPLAY",           "WAYLAND_DISPLAY", "TMUX",
    "TMUX_PANE",     "STY",               "WINDOW",         "OLDPWD",
    "SHLVL",         "_",                 "PS1",            "PROMPT_COMMAND"};

// What --clean-env keeps (with every LC_* variable): what a program needs to find its tools
// (PATH), its user and files (HOME, USER, LOGNAME, SHELL), its language and time zone (LANG,
// LANGUAGE, LC_*, TZ), and where the site wants temporary files (TMPDIR). Not TERM: a job has
// no terminal; its output goes to a log.
inline constexpr std::array<std::string_view, 9> kCleanEnvVariables = {
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR"};

// True for a variable of kSessionVariables.
bool is_session_variable(std::string_view name);

// The job's environment from the submitter's `environ` ("KEY=VALUE" strings) and the `--env`
// `overrides`; with `clean`, only the kCleanEnvVariables of `environ`. A bad override (not
// KEY=VALUE, or one of gpuq's run variables) is Code::kInvalidArgument saying why.
Result<std::map<std::string, std::string>> job_environment(const std::vector<std::string>& environ,
                                                           const std::vector<std::string>& overrides,
                                                           bool clean);

// Every variable of `environ` ("KEY=VALUE" strings), as a map: what `~` and `$NAME` in a plan's
// paths expand from (spec::PlanContext::shell).
std::map<std::string, std::string> environment_map(const std::vector<std::string>& environ);

}  // namespace gpuq::cli
