// SPDX-License-Identifier: Apache-2.0
#include "app/serve.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

extern char** environ;

#include <fmt/format.h>

#include "api/server.h"
#include "app/fleet_node.h"
#include "app/http_listener.h"
#include "app/private_home.h"
#include "app/system_mode.h"
#include "base/asio.h"
#include "base/paths.h"
#include "base/time.h"
#include "base/token_file.h"
#include "daemon/config.h"
#include "daemon/hooks.h"
#include "daemon/instance_lock.h"
#include "daemon/prober.h"
#include "daemon/queue.h"
#include "daemon/real_world.h"
#include "gpu/discovery.h"
#include "gpu/probe.h"
#include "os/process.h"
#include "model/run_variables.h"
#include "store/store.h"

#ifndef GPUQ_VERSION
#define GPUQ_VERSION "0.0.0"
#endif

namespace gpuq::app {
namespace {

namespace asio = boost::asio;

// Forks into the background. The parent waits for the child's first line on a pipe and
// returns its exit status; the child returns -1 and keeps the pipe's write end in `ready_fd`.
int detach(const HomeLayout& layout, int& ready_fd) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    std::perror("gpuq daemon: pipe");
    return 1;
  }
  pid_t child = ::fork();
  if (child < 0) {
    std::perror("gpuq daemon: fork");
    return 1;
  }
  if (child > 0) {
    ::close(fds[1]);
    std::string message;
    char buffer[512];
    ssize_t n;
    while ((n = ::read(fds[0], buffer, sizeof buffer)) > 0) message.append(buffer, static_cast<size_t>(n));
    if (message.rfind("ok ", 0) == 0) {
      std::fputs(message.substr(3).c_str(), stdout);
      return 0;
    }
    std::fputs(message.empty() ? fmt::format("gpuq daemon: failed to start; see {}\n", layout.daemon_log()).c_str()
                               : message.c_str(),
               stderr);
    // The pipe's end came with the child's exit, whose teardown may still run: reap it, so that
    // when a start is reported failed no process of it is left (a script that starts another
    // daemon next, or looks for this one, finds none).
    while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
    return 1;
  }
  ::close(fds[0]);
  ::setsid();
  int null_fd = ::open("/dev/null", O_RDONLY);
  ::dup2(null_fd, 0);
  int log_fd = ::open(layout.daemon_log().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd >= 0) {
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
  }
  ready_fd = fds[1];
  return -1;
}

void say(int ready_fd, const std::string& message) {
  if (ready_fd >= 0) {
    (void)!::write(ready_fd, message.data(), message.size());
  } else {
    std::fputs(message.c_str() + (message.rfind("ok ", 0) == 0 ? 3 : 0), message.rfind("ok ", 0) == 0 ? stdout : stderr);
    std::fflush(stdout);
  }
}

// Returns false when there was nothing to remove; otherwise execs and returns true only if
// that failed.
bool reexec_without_run_variables() {
  std::vector<std::string> kept;
  bool found = false;
  for (char** e = environ; *e; ++e) {
    std::string entry(*e);
    std::string name = entry.substr(0, entry.find('='));
    // CUDA_VISIBLE_DEVICES may be how a person limits the daemon's view; keep it.
    if (is_run_variable(name) && name != "CUDA_VISIBLE_DEVICES" && name != "CUDA_DEVICE_ORDER") {
      found = true;
    } else {
      kept.push_back(std::move(entry));
    }
  }
  if (!found) return false;
  auto cmdline = os::read_file("/proc/self/cmdline");
  if (!cmdline) return false;
  std::vector<std::string> args;
  for (size_t start = 0; start < cmdline->size();) {
    size_t end = cmdline->find('\0', start);
    if (end == std::string::npos) end = cmdline->size();
    args.push_back(cmdline->substr(start, end - start));
    start = end + 1;
  }
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : kept) envp.push_back(e.data());
  envp.push_back(nullptr);
  ::execve("/proc/self/exe", argv.data(), envp.data());
  std::perror("gpuq daemon: re-exec without the run variables");
  return true;
}

}  // namespace

int serve(const cli::DaemonFlags& flags) {
  // A daemon started from inside a gpuq job must not carry that job's run variables (its
  // cleanup marker above all): its children inherit them, and /proc/PID/environ keeps showing
  // them even after unsetenv(). So start again, once, with them removed from the environment.
  if (reexec_without_run_variables()) return 1;
  // Everything the daemon creates is private from birth: the store holds every job's
  // environment. Jobs get back the umask the daemon was started with (QueueOptions::job_umask),
  // so their own outputs are as the user expects.
  mode_t job_umask = ::umask(077);
  auto home = resolve_home(flags.home);
  if (!home) {
    std::fprintf(stderr, "gpuq daemon: %s\n", home.error().message.c_str());
    return 1;
  }
  if (flags.system) {
    if (auto root = check_system_user(); !root) {
      std::fprintf(stderr, "gpuq daemon: %s\n", root.error().message.c_str());
      return 1;
    }
  }
  HomeLayout layout{*home};
  if (auto made = os::make_dirs(layout.home, 0700); !made) {
    std::fprintf(stderr, "gpuq daemon: %s\n", made.error().message.c_str());
    return 1;
  }
  auto private_home = make_home_private(layout.home, ::geteuid(), flags.system);
  if (!private_home) {
    std::fprintf(stderr, "gpuq daemon: %s\n", private_home.error().message.c_str());
    return 1;
  }
  auto lock = daemon::InstanceLock::acquire(layout.lock(), layout.home);
  if (!lock) {
    std::fprintf(stderr, "gpuq daemon: %s\n", lock.error().message.c_str());
    return 1;
  }
  // Under the lock: the files are this daemon's now, not a running one's.
  for (const std::string& warning : tighten_state_files(layout)) private_home->push_back(warning);
  for (const std::string& warning : *private_home) {
    std::fprintf(stderr, "gpuq daemon: %s\n", warning.c_str());
  }
  auto config = daemon::load_config(layout.home + "/" + std::string(daemon::kConfigFileName));
  if (!config) {
    std::fprintf(stderr, "gpuq daemon: %s\n", config.error().message.c_str());
    return 1;
  }
  // A system daemon (docs/lab.md): its users reach their job directories through the home, and
  // its socket is the box's, open to [users] group.
  std::optional<SystemSocket> system_socket;
  if (flags.system) {
    auto opened = open_home_to_users(layout);
    auto socket = opened ? prepare_system_socket(system_socket_path(), config->users.group)
                         : Result<SystemSocket>(tl::unexpected(opened.error()));
    if (!socket) {
      std::fprintf(stderr, "gpuq daemon: %s\n", socket.error().message.c_str());
      return 1;
    }
    system_socket = *socket;
  }
  // The TCP listener's address and token, checked before the daemon detaches: a token file
  // others could read is refused here, on the terminal.
  auto http = prepare_http(flags, config->http, layout);
  if (!http) {
    std::fprintf(stderr, "gpuq daemon: %s\n", http.error().message.c_str());
    return 1;
  }
  auto inventory = gpu::discover(flags.gpus);
  if (!inventory) {
    std::fprintf(stderr, "gpuq daemon: --gpus %s: %s\n", flags.gpus.c_str(),
                 inventory.error().message.c_str());
    return 1;
  }
  auto executable = os::self_executable();
  if (!executable) {
    std::fprintf(stderr, "gpuq daemon: %s\n", executable.error().message.c_str());
    return 1;
  }
  int ready_fd = -1;
  if (flags.detach) {
    int parent_status = detach(layout, ready_fd);
    if (parent_status >= 0) return parent_status;
    lock->write_pid();
  }
  // Big, short-lived buffers (a pass over 100k jobs, a large plan) go to mmap and back to the
  // system when freed; a fixed threshold stops glibc from raising it after the first free.
  ::mallopt(M_MMAP_THRESHOLD, 256 << 10);
  ::mallopt(M_ARENA_MAX, 2);
  // Free memory at the top of the heap is kept up to 4 MiB: with glibc's 128 KiB (fixed once the
  // mmap threshold is set) every run's work gave the heap back (brk down, a TLB shootdown) and
  // faulted it in again: 15-24 page faults per trivial run, 2 with this.
  ::mallopt(M_TRIM_THRESHOLD, 4 << 20);
  // Containment (docs/containment.md) is chosen first: when the daemon's own cgroup holds the
  // runs, the daemon moves into its leaf, and the spawner forked next is born there too.
  auto cgroup_files = runner::make_real_cgroup_files();
  runner::Containment containment = runner::detect_containment(*cgroup_files, config->cgroup_root);
  // Each run's shim: gpuq-shim beside this binary, started with posix_spawn; without it (a
  // gpuqd copied alone), forked by the spawner, forked now while this process has a single
  // thread (see runner/spawner.h).
  const std::string shim_binary = runner::shim_binary_beside(*executable);
  std::unique_ptr<runner::ShimSpawner> spawner;
  std::string shims_note = shim_binary;
  if (shim_binary.empty()) {
    auto started = runner::ShimSpawner::start();
    if (started) {
      spawner = std::move(*started);
      shims_note = fmt::format("forked by a spawner (no gpuq-shim beside {})", *executable);
    } else {
      shims_note = fmt::format("{} shim, by exec (no gpuq-shim beside it, and no spawner: {})",
                               *executable, started.error().message);
    }
  }
  ::signal(SIGPIPE, SIG_IGN);
  auto fail_start = [&](const std::string& what) {
    say(ready_fd, fmt::format("gpuq daemon: {}\n", what));
    return 1;
  };
  auto store = store::Store::open(layout.database(), false);
  if (!store) return fail_start(store.error().message);
  auto read_store = store::Store::open(layout.database(), true);
  if (!read_store) return fail_start(read_store.error().message);

  asio::io_context actor_ioc(1);
  asio::io_context api_ioc(1);
  daemon::RealWorldOptions world_options;
  world_options.shim_executable = shim_binary.empty() ? *executable : shim_binary;
  world_options.spawner = spawner.get();
  world_options.cleanup = {config->cleanup_poll_ms, config->kill_grace_ms, config->cleanup_limit_ms};
  world_options.containment = containment;
  // One spare shim per GPU (at most 8): while starts come less than 10 s apart (spares older
  // than that are replaced), a burst of them onto idle GPUs starts every run on one.
  world_options.spare_shims = std::clamp<size_t>(inventory->resources.size(), 1, 8);
  daemon::RealWorld world(actor_ioc, **store, world_options);
  daemon::QueueOptions options;
  options.layout = layout;
  options.boot_id = os::boot_id();
  options.job_umask = job_umask;
  daemon::Queue queue(world, **store, *inventory, *config, std::move(options));
  // Event hooks (docs/hooks.md): their cursors are read, and a new hook placed at the end of
  // the log, before the queue's start writes the events of this start.
  daemon::HookRunnerOptions hook_options;
  hook_options.database = layout.database();
  daemon::HookRunner hooks(config->hooks, actor_ioc, **store, hook_options);
  if (auto loaded = hooks.load(); !loaded) return fail_start(loaded.error().message);
  api::ServerContext server_context{api_ioc, actor_ioc, queue, layout, GPUQ_VERSION};
  server_context.max_sweep_elements = static_cast<size_t>(config->sweeps_max_elements);
  server_context.peers = {flags.system, config->users.group, config->users.admins};
  if (flags.system) server_context.sessions = std::make_shared<api::UserSessions>(layout.home + "/sessions");
  server_context.browser_sessions =
      std::make_shared<api::BrowserSessions>(layout.home + "/browser-sessions", wall_now_ms());
  const runner::Containment& contained = world.containment();
  std::fprintf(stderr, "gpuq daemon: containment: %s%s (%s)\n", contained.kind.c_str(),
               contained.root.empty() ? "" : (" at " + contained.root).c_str(), contained.reason.c_str());
  server_context.containment = {{"kind", contained.kind},
                                {"root", contained.root.empty() ? nlohmann::json(nullptr) : nlohmann::json(contained.root)},
                                {"reason", contained.reason}};
  server_context.hooks = &hooks;
  server_context.hook_lags = [&hooks] {
    std::vector<std::pair<std::string, int64_t>> lags;
    for (const auto& status : hooks.statuses()) lags.emplace_back(status.name, status.lag);
    return lags;
  };
  // Retention never prunes an event a hook has not handled yet.
  queue.set_event_floor([&hooks] {
    int64_t floor = INT64_MAX;
    for (const auto& status : hooks.statuses()) floor = std::min(floor, status.cursor);
    return floor;
  });
  // Filled once the fleet is joined, below; the API thread starts after that.
  std::unique_ptr<FleetNode> fleet_node;
  server_context.fleet = [&fleet_node]() -> std::optional<nlohmann::json> {
    if (!fleet_node) return std::nullopt;
    return fleet_node->view();
  };
  api::Server server(std::move(server_context), std::move(*read_store));
  queue.set_event_listener([&server, &hooks](int64_t seq) {
    server.notify_events(seq);
    hooks.notify(seq);
  });
  if (auto started = queue.start(); !started) return fail_start(started.error().message);
  // The fleet (docs/fleet.md), when one is named: its store is checked before the daemon says
  // it is ready, so a bad URL, key or store is an error of this start.
  auto fleet = FleetNode::join(flags, config->fleet, layout, actor_ioc, queue, GPUQ_VERSION);
  if (!fleet) return fail_start(fleet.error().message);
  fleet_node = std::move(*fleet);
  // The GPU probe samples on its own thread (a sick driver can make one call hang); each
  // sample is handed to the actor.
  auto probe = gpu::choose_probe(*inventory);
  std::fprintf(stderr, "gpuq daemon: GPU probe: %s\n", probe.note.c_str());
  std::unique_ptr<daemon::Prober> prober;
  if (probe.probe) {
    prober = std::make_unique<daemon::Prober>(
        std::move(probe.probe), config->probe_interval_ms, [&](Result<gpu::ProbeSample> sample) {
          asio::post(actor_ioc, [&queue, sample = std::move(sample)]() mutable {
            queue.on_probe(std::move(sample));
          });
        });
  }
  if (auto listening = server.listen_unix(layout.socket()); !listening) {
    return fail_start(listening.error().message);
  }
  // A system daemon also serves the box's socket; its home's stays root's (--home).
  if (system_socket) {
    if (auto listening = server.listen_unix(system_socket->path, system_socket->group); !listening) {
      return fail_start(listening.error().message);
    }
  }
  auto http_note = start_http(*http, server, queue);
  if (!http_note) return fail_start(http_note.error().message);
  // Started last: a start that fails after this point would skip storing their cursors.
  hooks.start();

  asio::signal_set signals(actor_ioc, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (ec) return;
    if (fleet_node) fleet_node->close();
    queue.stop();
    server.close();
    api_ioc.stop();
    actor_ioc.stop();
  });
  auto api_guard = asio::make_work_guard(api_ioc);
  std::thread api_thread([&] { api_ioc.run(); });
  std::string fleet_note = fleet_node ? fmt::format("  fleet: {}\n", fleet_node->describe()) : "";
  std::string box_note = system_socket ? fmt::format("  the box's socket: {} (group {})\n", system_socket->path,
                                                   config->users.group)
                                     : "";
  say(ready_fd, fmt::format("ok gpuq daemon {} (pid {}) serving {}\n  socket: {}\n{}{}  gpus: {}\n  shims: {}\n{}",
                            GPUQ_VERSION, ::getpid(), layout.home, layout.socket(), box_note, *http_note,
                            inventory->note, shims_note, fleet_note));
  if (fleet_node) fleet_node->start();
  if (ready_fd >= 0) ::close(ready_fd);
  auto actor_guard = asio::make_work_guard(actor_ioc);
  actor_ioc.run();
  prober.reset();  // no more samples for a stopped actor
  if (fleet_node) fleet_node->stop();
  // The actor has stopped: hook threads end (a delivery in flight gets a short grace), and the
  // cursors their last deliveries reached are written here, on what was the actor's thread.
  hooks.stop();
  if (auto committed = hooks.commit_after_stop(); !committed) {
    std::fprintf(stderr, "gpuq daemon: storing the hooks' cursors failed: %s\n",
                 committed.error().message.c_str());
  }
  api_ioc.stop();
  api_thread.join();
  ::unlink(layout.socket().c_str());
  if (system_socket) ::unlink(system_socket->path.c_str());
  // The port may be another program's next: `gpuq --url` sends the token to no one there.
  if (auto removed = remove_token_listen(layout.token_listen()); !removed) {
    std::fprintf(stderr, "gpuq daemon: %s\n", removed.error().message.c_str());
  }
  std::fprintf(stderr, "gpuq daemon: stopped; runs keep going and will be adopted at the next start\n");
  return 0;
}

}  // namespace gpuq::app
