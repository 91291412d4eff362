// SPDX-License-Identifier: Apache-2.0
// What a crash or a full disk must never cost: a job that ends while the daemon's disk is full
// is settled by its exit once space returns (one run, succeeded, never lost), and jobs
// submitted to a daemon that is killed with SIGKILL again and again each run exactly once.
// The disk-full test mounts a small tmpfs over the daemon's home, which needs root; elsewhere
// it is skipped with a message.
#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "harness.h"
#include "unix_http.h"

namespace gpuq::testing {
namespace {

namespace fs = std::filesystem;

nlohmann::json health(const Harness& h) {
  HttpAnswer a = unix_get(h.home() + "/gpuq.sock", "/v1/health");
  EXPECT_EQ(a.status, 200) << a.body;
  return nlohmann::json::parse(a.body, nullptr, false);
}

int count_kind(const std::vector<nlohmann::json>& events, const std::string& kind, int64_t job) {
  int n = 0;
  for (const auto& e : events) n += e["kind"] == kind && e["job"] == job;
  return n;
}

// A tmpfs of `size` mounted over the harness's (still empty) home for the test's length. Its
// destructor stops the daemon first (its lock file is on the tmpfs), then unmounts.
class TmpfsHome {
 public:
  TmpfsHome(Harness& h, const std::string& size) : h_(h) {
    std::string options = "size=" + size + ",mode=0700";
    if (::mount("tmpfs", h.home().c_str(), "tmpfs", 0, options.c_str()) == 0) {
      mounted_ = true;
    } else {
      why_ = std::strerror(errno);
    }
  }
  ~TmpfsHome() {
    if (!mounted_) return;
    h_.stop();
    ::umount2(h_.home().c_str(), MNT_DETACH);
  }
  TmpfsHome(const TmpfsHome&) = delete;
  TmpfsHome& operator=(const TmpfsHome&) = delete;

  bool mounted() const { return mounted_; }
  const std::string& why() const { return why_; }

 private:
  Harness& h_;
  bool mounted_ = false;
  std::string why_;
};

// Writes `path` until the file system says it is full; returns whether it did (ENOSPC).
bool fill_disk(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return errno == ENOSPC;
  std::vector<char> block(64 << 10, 'x');
  bool full = false;
  while (true) {
    ssize_t n = ::write(fd, block.data(), block.size());
    if (n < 0) {
      full = errno == ENOSPC;
      break;
    }
    if (static_cast<size_t>(n) < block.size()) block.resize(block.size() / 2 + 1);
  }
  ::close(fd);
  return full;
}

TEST(DiskFull, AJobThatEndsWhileTheDiskIsFullSucceedsOnceWithoutBeingLost) {
  Harness h("fake:1");
  TmpfsHome tmpfs(h, "16m");
  if (!tmpfs.mounted()) {
    GTEST_SKIP() << "cannot mount a tmpfs over the daemon's home (" << tmpfs.why()
                 << "); this test needs root";
  }
  h.start();
  // The job's files are in the work directory, on another file system: only the daemon's home
  // (its store, the run directory, the log) fills up. The job writes nothing once it is full
  // (an echo into a full output.log fails, and so would the job).
  int64_t id = h.submit_sh("echo $$ > pid; while [ ! -e go ]; do sleep 0.02; done; exit 0",
                           {"--gpus", "1"});
  ASSERT_TRUE(h.wait_for(id, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  ASSERT_TRUE(wait_until([&] { return fs::exists(h.path("pid")); }));
  std::string job_pid;
  ASSERT_TRUE(wait_until([&] {
    std::ifstream in(h.path("pid"));
    return static_cast<bool>(in >> job_pid);
  }));

  std::string filler = h.home() + "/filler";
  ASSERT_TRUE(fill_disk(filler)) << "the tmpfs never said it was full";
  h.touch("go");
  // The job's shell ends and its shim reaps it; the exit record cannot be written.
  ASSERT_TRUE(wait_until([&] { return !fs::exists("/proc/" + job_pid); }));
  std::string run_dir = h.home() + "/jobs/" + std::to_string(id) + "/run-1";
  EXPECT_FALSE(fs::exists(run_dir + "/exit.json")) << "written on a full disk?";
  // Its shim is alive and keeps trying, so the run is not lost however long the disk stays
  // full (the daemon calls a run lost only when its shim is gone).
  EXPECT_EQ(h.show(id)["state"], "running");
  EXPECT_TRUE(health(h)["ok"].get<bool>());

  fs::remove(filler);  // space returns
  ASSERT_TRUE(h.wait_for(id, [](const nlohmann::json& j) { return j["state"] == "succeeded"; }))
      << h.show(id).dump();
  auto job = h.show(id);
  ASSERT_EQ(job["runs"].size(), 1u) << job.dump();
  EXPECT_EQ(job["runs"][0]["exit_code"], 0);
  EXPECT_EQ(job["runs"][0]["outcome"], "succeeded");
  EXPECT_EQ(job["runs"][0]["log_incomplete"], true) << job.dump();
  EXPECT_NE(job["runs"][0]["log_note"].get<std::string>().find("the disk was full"), std::string::npos);
  auto events = h.events();
  EXPECT_EQ(count_kind(events, "job.lost", id), 0);
  EXPECT_EQ(count_kind(events, "job.started", id), 1);
  EXPECT_EQ(count_kind(events, "job.succeeded", id), 1);
  // The store takes writes again: nothing for `gpuq check` to report about it.
  EXPECT_TRUE(wait_until([&] { return health(h)["store_error"].is_null(); }));
}

// 60 jobs in 5 rounds: each round submits 12 (each answered 201, so each is durable), lets the
// daemon work for a random moment, and kills it with SIGKILL; a new daemon starts and adopts
// what runs. Every job ends succeeded, its script ran exactly once, and no run is lost. A kill
// between recording a start and letting its shim go leaves a run that did not start (its shim
// says so), before the one that succeeded.
TEST(KillNine, SixtyJobsAcrossFiveSigkillsEachRunExactlyOnce) {
  Harness h("fake:4");
  h.start();
  std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> moment_ms(0, 700);
  std::uniform_int_distribution<int> work_ms(50, 400);
  std::vector<int64_t> ids;
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 12; ++i) {
      // Appends to a log the test reads: one line per run of the script.
      std::string script =
          fmt::format("echo \"$GPUQ_JOB_ID\" >> ran.log; sleep {:.3f}; echo done", work_ms(random) / 1000.0);
      std::vector<std::string> flags = {"--gpus", i % 3 == 0 ? "0" : "1"};
      int64_t id = h.submit_sh(script, flags);
      ASSERT_GT(id, 0);
      ids.push_back(id);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(moment_ms(random)));  // a random moment
    h.kill_daemon();
    h.start();
  }
  std::vector<std::string> wait = {"wait", "--timeout", "120s"};
  for (int64_t id : ids) wait.push_back(std::to_string(id));
  auto waited = h.gpuq(wait, 180'000);
  ASSERT_EQ(waited.status, 0) << waited.out << waited.err;

  std::map<int64_t, int> runs_of;
  std::ifstream ran(h.path("ran.log"));
  for (int64_t id; ran >> id;) ++runs_of[id];
  auto events = h.events();
  for (int64_t id : ids) {
    EXPECT_EQ(runs_of[id], 1) << "job " << id << "'s script ran " << runs_of[id] << " times";
    auto job = h.show(id);
    EXPECT_EQ(job["state"], "succeeded") << job.dump();
    const auto& runs = job["runs"];
    ASSERT_GE(runs.size(), 1u) << job.dump();
    for (size_t i = 0; i + 1 < runs.size(); ++i) {
      EXPECT_EQ(runs[i]["outcome"], "not-started") << job.dump();
    }
    EXPECT_EQ(runs.back()["outcome"], "succeeded") << job.dump();
    int not_started = count_kind(events, "job.not_started", id);
    EXPECT_EQ(not_started, static_cast<int>(runs.size()) - 1) << "job " << id;
    EXPECT_EQ(count_kind(events, "job.started", id), static_cast<int>(runs.size())) << "job " << id;
    EXPECT_EQ(count_kind(events, "job.lost", id), 0) << "job " << id;
  }
  EXPECT_EQ(runs_of.size(), ids.size()) << "a job that was never submitted ran";
}

}  // namespace
}  // namespace gpuq::testing
