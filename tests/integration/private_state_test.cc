// SPDX-License-Identifier: Apache-2.0
// Private state, end to end: the daemon's files are its user's alone while jobs keep the umask
// the daemon was started with; a home that other users could change is refused and one they
// could read is tightened; files an older daemon left wide are tightened at start; and the CLI
// talks to no socket of another user. Tests that need to own files as another user need root
// and say so when skipped.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <thread>

#include "harness.h"
#include "os/process.h"

namespace gpuq::testing {
namespace {

namespace fs = std::filesystem;

// Throwaway users: nobody, and a uid with no name.
constexpr uid_t kNobody = 65534;
constexpr uid_t kStranger = 65533;

mode_t mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

std::string octal(mode_t mode) { return fmt::format("{:04o}", mode); }

CliResult start_daemon(const Harness& h) {
  return h.gpuq({"daemon", "--gpus", "fake:1", "--detach", "--http", "off"});
}

// Runs the gpuq binary as `uid` (setpriv, no supplementary groups).
CliResult gpuq_as(uid_t uid, const std::vector<std::string>& args) {
  // A copy any user may run: the checkout holding the binary may be closed to `uid`. It is
  // removed when the test process exits (the binary is large: copies must not pile up).
  struct BinaryCopy {
    std::string path = fmt::format("/tmp/gpuq-as-{}", ::getpid());
    BinaryCopy() {
      fs::copy_file(GPUQ_BINARY, path, fs::copy_options::overwrite_existing);
      fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                fs::perms::others_read | fs::perms::others_exec);
    }
    ~BinaryCopy() {
      std::error_code ignored;
      fs::remove(path, ignored);
    }
  };
  static const BinaryCopy copy;
  const std::string& binary = copy.path;
  std::vector<std::string> argv = {"setpriv", fmt::format("--reuid={}", uid),
                                   fmt::format("--regid={}", uid), "--clear-groups",
                                   // From /: the test's own directory may be closed to `uid`.
                                   "sh", "-c", "cd / && exec \"$0\" \"$@\"", binary};
  argv.insert(argv.end(), args.begin(), args.end());
  auto result = os::run_command(argv, Millis(60'000));
  if (!result) {
    ADD_FAILURE() << "cannot run setpriv: " << result.error().message;
    return {};
  }
  return {result->exit_code, result->out, result->err};
}

// Every directory under the home is 0700 and no file there is open to anyone else; returns
// how many files there are.
int expect_home_private(const Harness& h) {
  EXPECT_EQ(octal(mode_of(h.home())), "0700");
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(h.home())) {
    std::string path = entry.path().string();
    mode_t mode = mode_of(path);
    if (entry.is_directory()) {
      EXPECT_EQ(octal(mode), "0700") << path;
    } else {
      ++files;
      EXPECT_EQ(mode & 077, 0u) << path << " is " << octal(mode);
    }
  }
  return files;
}

TEST(PrivateState, TheDaemonsFilesArePrivateAndTheJobKeepsItsUmask) {
  mode_t before = ::umask(022);  // the user's umask, which the daemon records for its jobs
  Harness h("fake:1");
  h.start();
  ::umask(before);
  std::ofstream(h.path("job.sh")) << "#!/bin/sh\numask\necho data > made.txt\n";
  auto submitted = h.gpuq_json({"submit", "--json", "job.sh"});
  int64_t id = submitted.value("id", int64_t{0});
  ASSERT_TRUE(h.wait_for(id, [](const nlohmann::json& j) { return j["state"] == "succeeded"; }));

  // db, socket, lock, log, script, run.json, output.log, exit.json
  EXPECT_GE(expect_home_private(h), 8);
  std::string job_dir = h.home() + "/jobs/" + std::to_string(id);
  EXPECT_EQ(octal(mode_of(job_dir + "/script")), "0700");
  EXPECT_EQ(octal(mode_of(h.home() + "/gpuq.db")), "0600");
  EXPECT_EQ(octal(mode_of(h.home() + "/gpuq.sock")), "0600");
  EXPECT_EQ(octal(mode_of(job_dir + "/run-1/output.log")), "0600");
  EXPECT_EQ(octal(mode_of(job_dir + "/run-1/exit.json")), "0600");
  EXPECT_EQ(octal(mode_of(job_dir + "/run-1/run.json")), "0600");

  // The job did not inherit the daemon's 077: what it writes is as its user expects.
  EXPECT_EQ(*os::read_file(job_dir + "/run-1/output.log"), "0022\n");
  EXPECT_EQ(octal(mode_of(h.path("made.txt"))), "0644");
}

// A daemon started under umask 027 records it as its jobs' umask: a file a job creates in its
// work directory is 0640 (and a directory 0750), while the daemon's own files stay 0600 and
// its directories 0700.
TEST(PrivateState, AJobGetsTheUmask027TheDaemonWasStartedWith) {
  Harness h("fake:1");
  mode_t before = ::umask(027);
  h.start();
  ::umask(before);
  std::ofstream(h.path("job.sh")) << "#!/bin/sh\numask\necho data > made.txt\nmkdir made.d\n";
  int64_t id = h.gpuq_json({"submit", "--json", "job.sh"}).value("id", int64_t{0});
  ASSERT_TRUE(h.wait_for(id, [](const nlohmann::json& j) { return j["state"] == "succeeded"; }))
      << h.show(id).dump(2);

  EXPECT_EQ(octal(mode_of(h.path("made.txt"))), "0640");
  EXPECT_EQ(octal(mode_of(h.path("made.d"))), "0750");
  std::string job_dir = h.home() + "/jobs/" + std::to_string(id);
  EXPECT_EQ(*os::read_file(job_dir + "/run-1/output.log"), "0027\n");
  EXPECT_GE(expect_home_private(h), 8);
  EXPECT_EQ(octal(mode_of(h.home() + "/gpuq.db")), "0600");
  EXPECT_EQ(octal(mode_of(h.home() + "/gpuq.sock")), "0600");
  EXPECT_EQ(octal(mode_of(h.home() + "/daemon.log")), "0600");
  EXPECT_EQ(octal(mode_of(job_dir + "/script")), "0700");
  EXPECT_EQ(octal(mode_of(job_dir + "/run-1/output.log")), "0600");
  EXPECT_EQ(octal(mode_of(job_dir + "/run-1/exit.json")), "0600");
}

TEST(PrivateState, AHomeOtherUsersCanWriteIsRefused) {
  for (mode_t mode : {0777, 0770, 0703}) {
    Harness h("fake:1");
    ASSERT_EQ(::chmod(h.home().c_str(), mode), 0);
    auto r = start_daemon(h);
    EXPECT_NE(r.status, 0) << octal(mode) << " accepted";
    EXPECT_NE(r.err.find(fmt::format("the state directory {} can be written by other users (mode {})",
                                     h.home(), octal(mode))),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("chmod 700 " + h.home()), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(h.home() + "/gpuq.db"));
    EXPECT_EQ(mode_of(h.home()), mode) << "a refused home was changed";
  }
}

TEST(PrivateState, AHomeOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to give the directory to another user";
  Harness h("fake:1");
  ASSERT_EQ(::chmod(h.home().c_str(), 0700), 0);
  ASSERT_EQ(::chown(h.home().c_str(), kNobody, kNobody), 0);
  auto r = start_daemon(h);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find(fmt::format("the state directory {} belongs to nobody (uid 65534), not to "
                                   "root (uid 0) who runs this daemon",
                                   h.home())),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("chown root " + h.home()), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(h.home() + "/gpuq.db"));
}

TEST(PrivateState, AHomeOtherUsersCanReadIsMadePrivateWithAWarning) {
  Harness h("fake:1");
  ASSERT_EQ(::chmod(h.home().c_str(), 0755), 0);
  auto r = start_daemon(h);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find(fmt::format("gpuq daemon: warning: the state directory {} was readable by "
                                   "other users (mode 0755); made it 0700",
                                   h.home())),
            std::string::npos)
      << r.err;
  EXPECT_EQ(octal(mode_of(h.home())), "0700");
  EXPECT_EQ(h.gpuq({"status"}).status, 0);
}

TEST(PrivateState, AnOlderDaemonsWideFilesAreTightenedAtStart) {
  Harness h("fake:1");
  h.start();
  h.stop();
  std::ofstream(h.home() + "/config.toml") << "# lanes and hooks\n";
  std::vector<std::string> wide = {"gpuq.db", "daemon.log", "config.toml"};
  std::ofstream(h.home() + "/daemon.log", std::ios::app) << "an older daemon's log\n";
  for (const auto& name : wide) ASSERT_EQ(::chmod((h.home() + "/" + name).c_str(), 0644), 0);
  auto r = start_daemon(h);
  ASSERT_EQ(r.status, 0) << r.err;
  for (const auto& name : wide) {
    std::string path = h.home() + "/" + name;
    EXPECT_EQ(octal(mode_of(path)), "0600") << path;
    EXPECT_NE(r.err.find(fmt::format("warning: {} was readable by other users (mode 0644); made "
                                     "it 0600",
                                     path)),
              std::string::npos)
        << r.err;
  }
}

// A listening socket `dir`/gpuq.sock that anyone may connect to, owned by `owner`.
class PlantedSocket {
 public:
  PlantedSocket(const std::string& dir, uid_t owner) : path_(dir + "/gpuq.sock") {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(fd_, 8), 0);
    EXPECT_EQ(::chmod(path_.c_str(), 0666), 0);
    EXPECT_EQ(::chown(path_.c_str(), owner, owner), 0);
  }
  ~PlantedSocket() { ::close(fd_); }
  // Whether a client connected within `limit` (0: is one waiting in the backlog now); its
  // connection is closed at once, so the client fails instead of waiting for an answer.
  bool connected(Millis limit = Millis(0)) {
    pollfd entry{fd_, POLLIN, 0};
    if (::poll(&entry, 1, static_cast<int>(limit.count())) != 1) return false;
    int conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) return false;
    ::close(conn);
    return true;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

TEST(PrivateState, TheCliRefusesASocketOfAnotherUserBeforeConnecting) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to own a socket as one user and run the CLI as another";
  Harness h("fake:1");
  std::string dir = h.work();
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(fs::path(dir).parent_path().c_str(), 0755), 0);
  PlantedSocket socket(dir, kStranger);

  auto r = gpuq_as(kNobody, {"--home", dir, "submit", "--", "true"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(fmt::format("refusing the socket {}: it belongs to uid 65533, not to you "
                                   "(nobody (uid 65534))",
                                   socket.path())),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("--home DIR or $GPUQ_HOME"), std::string::npos) << r.err;
  // The CLI has exited; had it connected, the connection would wait in the backlog.
  EXPECT_FALSE(socket.connected()) << "the CLI connected to another user's socket";

  // Its owner may use it, and so may root (a root CLI may talk to any daemon).
  for (uid_t uid : {kStranger, uid_t{0}}) {
    bool connected = false;
    std::thread server([&] { connected = socket.connected(Millis(30'000)); });
    auto used = gpuq_as(uid, {"--home", dir, "status"});
    server.join();
    EXPECT_EQ(used.err.find("refusing the socket"), std::string::npos) << used.err;
    EXPECT_TRUE(connected) << "uid " << uid << " did not connect: " << used.err;
  }
}

}  // namespace
}  // namespace gpuq::testing
