// SPDX-License-Identifier: Apache-2.0
// `gpuq service install|uninstall`: writes or removes the systemd unit that runs this gpuq's
// daemon (cli/service_unit.h has the text). It never runs systemctl: it says what to run.
#include <fcntl.h>
#include <fmt/format.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/gpu_selection.h"
#include "cli/commands.h"
#include "cli/light_client.h"
#include "cli/service_unit.h"

namespace gpuq::cli {
namespace {

namespace fs = std::filesystem;

// This process's binary. A binary replaced since it started reads "PATH (deleted)": a unit
// naming it would start whatever is there now, so the person runs the new one instead.
Result<std::string> running_executable() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return fail(Code::kIoError, "cannot read /proc/self/exe: " + ec.message());
  std::string path = exe.string();
  if (path.ends_with(" (deleted)")) {
    return fail(Code::kFailedPrecondition,
                fmt::format("this gpuq binary ({}) was replaced or deleted since it started; run "
                            "the installed gpuq to install the service",
                            path));
  }
  // The full binary (gpuqd) runs this command for bin/gpuq: the unit names gpuq, as people do.
  if (std::string client = client_binary_for(path); !client.empty()) return client;
  return path;
}

// Whether `path` can go into a file: URI of Documentation= as it is (no blank, quote, % or \).
bool plain_path(const std::string& path) { return path.find_first_of(" \t\"'%\\") == std::string::npos; }

// The runbook as a file: URI, found beside a build (build/bin/gpuq → docs/) or an install
// (bin/gpuq → share/doc/gpuq/); empty when there is none or its path would need escaping.
std::string runbook_uri(const std::string& executable) {
  fs::path bin = fs::path(executable).parent_path();
  for (const fs::path& candidate : {bin / "../../docs/runbook.md", bin / "../docs/runbook.md",
                                    bin / "../share/doc/gpuq/runbook.md"}) {
    std::error_code ec;
    if (!fs::is_regular_file(candidate, ec)) continue;
    std::string path = fs::weakly_canonical(candidate, ec).string();
    if (ec || !plain_path(path)) continue;
    return "file:" + path;
  }
  return "";
}

// The name of this process's user: the password database's, else $USER.
std::string process_user(const std::vector<std::string>& environ) {
  if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_name != nullptr) {
    return pw->pw_name;
  }
  return environment_value(environ, "USER");
}

// A word for a POSIX shell: as it is when it is plain, else in single quotes.
std::string shell_quote(const std::string& word) {
  bool plain = !word.empty() && word.find_first_not_of(
                                    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                    "0123456789/._-+=:,@") == std::string::npos;
  if (plain) return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

Result<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return errno_error("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Writes `text` to `path` atomically: a temporary file in the same directory, fsync, rename,
// fsync of the directory. A reader sees the old file or the new one, never a part. Returns 0
// or the errno of the step that failed.
int write_atomically(const std::string& path, const std::string& text) {
  std::string dir = fs::path(path).parent_path().string();
  std::string temp = dir + "/.gpuq.service.XXXXXX";
  int fd = ::mkstemp(temp.data());
  if (fd < 0) return errno;
  auto give_up = [&](int err) {
    if (fd >= 0) ::close(fd);
    ::unlink(temp.c_str());
    return err;
  };
  for (size_t done = 0; done < text.size();) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return give_up(errno);
    done += static_cast<size_t>(n);
  }
  if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0) return give_up(errno);
  int closed = ::close(fd);
  fd = -1;
  if (closed != 0) return give_up(errno);
  if (::rename(temp.c_str(), path.c_str()) != 0) return give_up(errno);
  if (int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return 0;
}

void print_next_steps(Context& ctx, const ServiceOptions& options, const ServiceUnit& unit) {
  bool user = options.user;
  auto& out = ctx.out();
  out << "Next:\n  " << systemctl_command(user, "daemon-reload") << " && "
      << systemctl_command(user, "enable --now gpuq") << '\n';
  if (user) {
    std::string name = process_user(ctx.io().environ);
    out << "  loginctl enable-linger " << (name.empty() ? "$USER" : name)
        << "   # keep it running without a login session, and start it at boot\n";
  }
  out << "Then:\n  " << systemctl_command(user, "status gpuq") << "   # is it running?\n"
      << "  journalctl " << (user ? "--user " : "") << "-u gpuq -f   # its log\n"
      << "  gpuq " << (unit.home.empty() ? "" : "--home " + shell_quote(unit.home) + " ")
      << "status\n"
      << "Stop a daemon started by hand first: it holds the state directory's lock, and the\n"
         "service's daemon would fail and be restarted every 2 s until it is gone.\n";
}

// The unit the options describe, checked; a usage error names the bad value.
Result<ServiceUnit> unit_from_options(Context& ctx, const ServiceOptions& options) {
  const auto& environ = ctx.io().environ;
  ServiceUnit unit;
  unit.user = options.user;
  if (!options.gpus.empty()) {
    if (auto st = check_gpu_selection(options.gpus); !st) return tl::unexpected(st.error());
    unit.gpus = options.gpus;
  }
  // The state directory is written into the unit when the person chose it: the service
  // manager has neither this shell's GPUQ_HOME nor its XDG_STATE_HOME. Otherwise the daemon
  // takes its default for the user it runs as, which is where that user's `gpuq` looks.
  bool chosen = options.home_given || !environment_value(environ, "GPUQ_HOME").empty() ||
                (options.user && !environment_value(environ, "XDG_STATE_HOME").empty());
  if (chosen) unit.home = ctx.home();
  if (!options.user) {
    // Without --run-as, the box's daemon: root, each job as its submitter (docs/lab.md).
    unit.system = options.run_as.empty();
    unit.run_as = options.run_as.empty() ? "root" : options.run_as;
  }
  unit.environment = options.env;
  if (options.executable.empty()) {
    auto executable = running_executable();
    if (!executable) return tl::unexpected(executable.error());
    unit.executable = *executable;
    unit.documentation = runbook_uri(unit.executable);
  } else {
    // Packaging: the binary is not installed yet, so its docs cannot be looked for; they
    // will be where an install puts them, beside it.
    unit.executable = options.executable;
    std::string runbook =
        (fs::path(options.executable).parent_path() / "../share/doc/gpuq/runbook.md").lexically_normal().string();
    if (plain_path(runbook)) unit.documentation = "file:" + runbook;
  }
  if (auto st = check_service_unit(unit); !st) return tl::unexpected(st.error());
  return unit;
}

}  // namespace

int run_service_install(Context& ctx, const ServiceOptions& options) {
  auto unit = unit_from_options(ctx, options);
  if (!unit) {
    bool usage = unit.error().code == Code::kInvalidArgument;
    return ctx.report(usage ? kExitUsage : kExitFailed, unit.error().message);
  }
  std::string text = render_service_unit(*unit);
  if (options.print) {
    ctx.out() << text;
    return kExitOk;
  }
  auto dir = service_unit_dir(options.user, options.unit_dir, ctx.io().environ);
  if (!dir) return ctx.report(kExitUsage, dir.error().message);
  std::string path = *dir + "/" + std::string(kServiceUnitName);

  std::error_code ec;
  if (fs::exists(path, ec)) {
    auto existing = read_text(path);
    if (!existing) return ctx.report(kExitFailed, existing.error().message);
    if (*existing == text) {
      ctx.out() << "already installed: " << path << " (unchanged)\n";
      print_next_steps(ctx, options, *unit);
      return kExitOk;
    }
    if (!options.force) {
      return ctx.report(
          kExitFailed,
          fmt::format("{} exists and differs from the unit these options make; see the new one "
                      "with --print, and replace the file with --force",
                      path));
    }
  }
  fs::create_directories(*dir, ec);  // a failure shows in the write below
  if (int err = write_atomically(path, text); err != 0) {
    bool system_dir = !options.user && options.unit_dir.empty();
    return ctx.report(kExitFailed, service_write_error(path, err, system_dir));
  }
  ctx.out() << "wrote " << path << '\n';
  print_next_steps(ctx, options, *unit);
  return kExitOk;
}

int run_service_uninstall(Context& ctx, const ServiceOptions& options) {
  auto dir = service_unit_dir(options.user, options.unit_dir, ctx.io().environ);
  if (!dir) return ctx.report(kExitUsage, dir.error().message);
  std::string path = *dir + "/" + std::string(kServiceUnitName);
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) {
    ctx.out() << "not installed: there is no " << path << '\n';
    return kExitOk;
  }
  // An enabled unit has a link in its target's .wants/: removing the file under it would
  // leave a dangling link and a daemon systemd can no longer stop by name.
  std::string wants =
      fmt::format("{}/{}.wants/{}", *dir, service_wanted_by(options.user), kServiceUnitName);
  if (fs::exists(fs::symlink_status(wants, ec)) && !options.force) {
    return ctx.report(kExitFailed,
                      fmt::format("gpuq.service is still enabled ({}). Run first:\n  {}\nthen "
                                  "`gpuq service uninstall{}` again (or --force to remove the "
                                  "file anyway)",
                                  wants, systemctl_command(options.user, "disable --now gpuq"),
                                  options.user ? " --user" : ""));
  }
  if (!fs::remove(path, ec) && ec) {
    std::string message = fmt::format("cannot remove {}: {}", path, ec.message());
    if (!options.user && options.unit_dir.empty()) message += "; run this again with sudo";
    return ctx.report(kExitFailed, message);
  }
  ctx.out() << "removed " << path << "\nNext: " << systemctl_command(options.user, "daemon-reload")
            << "   (and `" << systemctl_command(options.user, "stop gpuq")
            << "` if it still runs)\n";
  return kExitOk;
}

}  // namespace gpuq::cli
