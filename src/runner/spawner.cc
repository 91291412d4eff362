// SPDX-License-Identifier: Apache-2.0
#include "runner/spawner.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "os/process.h"
#include "runner/shim.h"

namespace gpuq::runner {
namespace {

constexpr size_t kMaxRunDir = 4096;

// Sends `text` with `fd` attached.
bool send_with_fd(int socket, const std::string& text, int fd) {
  iovec iov{const_cast<char*>(text.data()), text.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
  ssize_t n;
  do {
    n = ::sendmsg(socket, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(text.size());
}

// Receives a message and its attached fd; false at end of file.
bool receive_with_fd(int socket, std::string& text, int& fd) {
  std::string buffer(kMaxRunDir, '\0');
  iovec iov{buffer.data(), buffer.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return false;
  fd = -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
  }
  text.assign(buffer.data(), static_cast<size_t>(n));
  return true;
}

// The spawner's loop: one shim per request, until the daemon goes away.
[[noreturn]] void serve(int socket) {
  ::setsid();  // a Ctrl-C meant for a foreground daemon must not reach the spawner
  ::signal(SIGCHLD, SIG_IGN);  // shims are reaped by the kernel; their ends reach the daemon by pidfd
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGTERM, SIG_DFL);
  int null_fd = ::open("/dev/null", O_RDONLY);
  ::dup2(null_fd, 0);
  while (true) {
    std::string run_dir;
    int go_fd = -1;
    if (!receive_with_fd(socket, run_dir, go_fd)) ::_exit(0);
    // Prepared here, not in the child: see PreparedShim.
    auto shim = PreparedShim::prepare(run_dir);
    pid_t child = ::fork();
    if (child == 0) {
      ::signal(SIGCHLD, SIG_DFL);
      ::signal(SIGINT, SIG_DFL);
      ::setsid();
      ::dup2(go_fd, 3);
      ::close_range(4, ~0U, 0);
      ::_exit(shim.run(3));
    }
    if (go_fd >= 0) ::close(go_fd);
    int32_t answer = child > 0 ? child : -errno;
    (void)!::send(socket, &answer, sizeof answer, MSG_NOSIGNAL);
  }
}

}  // namespace

Result<std::unique_ptr<ShimSpawner>> ShimSpawner::start() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) return errno_error("socketpair");
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return errno_error("fork", err);
  }
  if (pid == 0) {
    ::close(fds[0]);
    ::dup2(fds[1], 4);
    ::close_range(5, ~0U, 0);
    // Keep stdout/stderr (the daemon's log); drop everything else the daemon had open.
    ::close(3);
    serve(4);
  }
  ::close(fds[1]);
  return std::unique_ptr<ShimSpawner>(new ShimSpawner(fds[0], pid));
}

ShimSpawner::~ShimSpawner() {
  ::close(socket_);
  ::waitpid(pid_, nullptr, 0);
}

Result<LaunchedShim> ShimSpawner::launch(const std::string& run_dir) {
  if (run_dir.size() >= kMaxRunDir) return fail(Code::kInvalidArgument, "run directory path too long");
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return errno_error("pipe");
  bool sent = send_with_fd(socket_, run_dir, pipe_fds[0]);
  ::close(pipe_fds[0]);
  int32_t answer = 0;
  ssize_t n = sent ? ::recv(socket_, &answer, sizeof answer, 0) : -1;
  if (n != sizeof answer || answer <= 0) {
    ::close(pipe_fds[1]);
    if (n != sizeof answer) return fail(Code::kUnavailable, "the shim spawner is gone");
    return errno_error("forking a shim", -answer);
  }
  auto ticks = os::process_start_ticks(answer);
  if (!ticks) {
    ::close(pipe_fds[1]);
    return tl::unexpected(ticks.error());
  }
  return LaunchedShim(answer, *ticks, pipe_fds[1]);
}

}  // namespace gpuq::runner
