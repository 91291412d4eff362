// SPDX-License-Identifier: Apache-2.0
// Container jobs through a real daemon and a real podman (docs/containers.md): steps that run in
// an image see /gpuq/job, /gpuq/run, gpuq's variables and the job's own, and their exit status is
// the step's; cancel, timeout and a yield reach a container; a daemon killed with SIGKILL while a
// container runs adopts its run when it comes back; no run leaves a container or a process; an
// image that is not present is pulled before the job is scheduled (its progress in pull.log), and
// a failed pull fails the job with the runtime's message.
//
// The daemon finds `podman` first on its PATH in a directory the test makes: a script that logs
// its arguments, drops the CDI GPU flags (the fake GPUs have no devices), answers `pull` of the
// test's pull image by tagging the local one (there is no registry), and runs the real podman.
// Every test SKIPs, saying why, where podman cannot run. Everything carries the label
// gpuq.test=PID and is removed at the end, with the images.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness.h"
#include "os/command.h"

namespace gpuq::testing {
namespace {

std::string ulimit_arg(const char* name, int resource) {
  rlimit limit{};
  ::getrlimit(resource, &limit);
  rlim_t n = std::min<rlim_t>(limit.rlim_cur, 1024);
  return fmt::format("{}={}:{}", name, n, n);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct PodmanSetup {
  std::string podman;      // the real one
  std::string image;       // present
  std::string pull_image;  // absent until the stand-in's `pull` tags it
  std::string bin_dir;     // holds the stand-in
  std::string skip;
};

PodmanSetup& setup() {
  static PodmanSetup s;
  return s;
}

std::string label() { return fmt::format("gpuq.test={}", ::getpid()); }

class DaemonPodmanTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    PodmanSetup& s = setup();
    if (::geteuid() != 0) {
      s.skip = "container jobs are tested as root only (rootless podman needs a user session)";
      return;
    }
    for (const char* dir : {"/usr/bin", "/usr/local/bin", "/bin"}) {
      if (std::filesystem::exists(std::string(dir) + "/podman")) {
        s.podman = std::string(dir) + "/podman";
        break;
      }
    }
    if (s.podman.empty()) {
      s.skip = "podman is not installed (Debian: apt-get install podman runc busybox-static)";
      return;
    }
    s.image = fmt::format("localhost/gpuq-daemon-test:{}", ::getpid());
    s.pull_image = fmt::format("localhost/gpuq-daemon-pulled:{}", ::getpid());
    auto made = os::run_command({GPUQ_MAKE_TEST_IMAGE, s.image}, Millis(120'000));
    if (!made || made->exit_code != 0) {
      s.skip = "cannot make the test image: " + (made ? made->err : made.error().message);
      return;
    }
    s.bin_dir = (std::filesystem::temp_directory_path() / fmt::format("gpuq-podman-bin-{}", ::getpid())).string();
    std::filesystem::create_directories(s.bin_dir);
    std::string stand_in = s.bin_dir + "/podman";
    std::ofstream(stand_in)
        << "#!/bin/sh\n"
           "echo \"$*\" >> \"" << s.bin_dir << "/calls\"\n"
           "if [ \"$1\" = pull ] && [ \"$2\" = \"" << s.pull_image << "\" ]; then\n"
           "  echo \"Trying to pull $2...\"; exec \"" << s.podman << "\" tag \"" << s.image << "\" \"$2\"\n"
           "fi\n"
           "held=\n"
           "for a; do\n"
           "  shift\n"
           "  if [ -n \"$held\" ]; then\n"
           "    held=\n"
           "    case \"$a\" in nvidia.com/gpu=*) continue ;; esac\n"
           "    set -- \"$@\" --device\n"
           "  fi\n"
           "  if [ \"$a\" = --device ]; then held=1; continue; fi\n"
           "  set -- \"$@\" \"$a\"\n"
           "done\n"
           "exec \"" << s.podman << "\" \"$@\"\n";
    std::filesystem::permissions(stand_in, std::filesystem::perms::owner_all);
    std::vector<std::string> probe = {s.podman, "run", "--rm", "--runtime", "runc", "--network", "none",
                                      "--ulimit", ulimit_arg("nofile", RLIMIT_NOFILE),
                                      "--ulimit", ulimit_arg("nproc", RLIMIT_NPROC), s.image, "true"};
    auto ran = os::run_command(probe, Millis(60'000));
    if (!ran || ran->exit_code != 0) {
      s.skip = "podman cannot run a container here: " + (ran ? ran->err : ran.error().message);
    }
  }

  static void TearDownTestSuite() {
    PodmanSetup& s = setup();
    if (s.podman.empty()) return;
    auto left = os::run_command({s.podman, "ps", "-a", "-q", "--filter", "label=" + label()}, Millis(30'000));
    if (left && !left->out.empty()) {
      std::vector<std::string> rm = {s.podman, "rm", "-f", "-t", "0"};
      std::istringstream ids(left->out);
      for (std::string id; ids >> id;) rm.push_back(id);
      (void)os::run_command(rm, Millis(30'000));
    }
    for (const auto& image : {s.image, s.pull_image}) {
      if (!image.empty()) (void)os::run_command({s.podman, "rmi", "-f", image}, Millis(30'000));
    }
    if (!s.bin_dir.empty()) std::filesystem::remove_all(s.bin_dir);
  }

 protected:
  void SetUp() override {
    if (!setup().skip.empty()) GTEST_SKIP() << setup().skip;
    const char* path = std::getenv("PATH");
    saved_path_ = path ? path : "";
    ::setenv("PATH", (setup().bin_dir + ":" + saved_path_).c_str(), 1);
    h_ = std::make_unique<Harness>("fake:1");
    std::ofstream(h_->home() + "/config.toml")
        << "[cleanup]\npoll = \"20ms\"\n"
        << "[preemption]\nyield_grace = \"60s\"\n"
        << "[runs]\nkill_grace = \"2s\"\n"
        << "[lanes.net]\ncapacity = 1\n"
        << "[containers]\nruntime = \"podman\"\nextra_args = [\"--runtime\", \"runc\", \"--network\", \"none\", "
        << "\"--ulimit\", \"" << ulimit_arg("nofile", RLIMIT_NOFILE) << "\", \"--ulimit\", \""
        << ulimit_arg("nproc", RLIMIT_NPROC) << "\", \"--label\", \"" << label() << "\"]\n";
    h_->start();
  }
  void TearDown() override {
    h_.reset();
    ::setenv("PATH", saved_path_.c_str(), 1);
  }

  // The containers of the job's runs that podman still lists.
  std::string containers_of(int64_t id) const {
    std::string listed;
    nlohmann::json job = h_->show(id);
    for (const auto& run : job["runs"]) {
      auto ps = os::run_command({setup().podman, "ps", "-a", "--format", "{{.Names}}", "--filter",
                                 "label=gpuq.run=" + run["run_id"].get<std::string>()},
                                Millis(30'000));
      if (!ps || ps->exit_code != 0) {
        listed += "(podman ps failed: " + (ps ? ps->err : ps.error().message) + ")";
      } else {
        listed += ps->out;
      }
    }
    return listed;
  }
  // Waits for a file a container writes under /gpuq/run of run `run`.
  bool wait_run_file(int64_t id, int run, const std::string& name) const {
    std::string path = fmt::format("{}/jobs/{}/run-{}/{}", h_->home(), id, run, name);
    return wait_until([&] { return std::filesystem::exists(path); }, 120'000);
  }
  std::string log_of(int64_t id) const { return h_->gpuq({"logs", std::to_string(id)}).out; }
  int64_t submit(const std::vector<std::string>& args) const {
    std::vector<std::string> all = {"submit", "--json", "--image", setup().image};
    all.insert(all.end(), args.begin(), args.end());
    auto out = h_->gpuq_json(all);
    return out["id"].get<int64_t>();
  }
  bool wait_state(int64_t id, const std::string& state, int timeout_ms = 120'000) const {
    return h_->wait_for(id, [&](const nlohmann::json& j) { return j["state"] == state; }, timeout_ms);
  }

  std::unique_ptr<Harness> h_;
  std::string saved_path_;
};

TEST_F(DaemonPodmanTest, StepsRunInTheImageWithTheJobsDirectoriesAndVariables) {
  int64_t id = submit({"--env", "MODEL_TOKEN=t0ken", "--step",
                       "sh -c 'echo pwd=$(pwd) run=$GPUQ_RUN_DIR step=$GPUQ_STEP_INDEX/$GPUQ_STEP_COUNT "
                       "token=$MODEL_TOKEN; echo made > /gpuq/run/made; id -u > /gpuq/job/uid'",
                       "--step", "sh -c 'echo second saw $(cat /gpuq/run/made); exit 3'",
                       "--step", "sh -c 'echo never'"});
  ASSERT_TRUE(wait_state(id, "failed")) << h_->show(id).dump(2);
  std::string log = log_of(id);
  EXPECT_NE(log.find("pwd=/gpuq/job run=/gpuq/run step=0/3 token=t0ken"), std::string::npos) << log;
  EXPECT_NE(log.find("second saw made"), std::string::npos) << log;
  EXPECT_EQ(log.find("never"), std::string::npos) << log;
  auto job = h_->show(id);
  EXPECT_NE(job["reason"].get<std::string>().find("step 1"), std::string::npos) << job.dump(2);
  EXPECT_EQ(job["steps"][1]["exit_code"], 3);
  EXPECT_EQ(job["steps"][2]["state"], "pending");
  EXPECT_EQ(read_file(fmt::format("{}/jobs/{}/uid", h_->home(), id)), "0\n") << "the submitter's uid (root)";
  std::string calls = read_file(setup().bin_dir + "/calls");
  EXPECT_NE(calls.find("--name gpuq-" + job["runs"][0]["run_id"].get<std::string>() + "-1"), std::string::npos)
      << calls;
  EXPECT_EQ(containers_of(id), "");
}

TEST_F(DaemonPodmanTest, ACancelledContainerJobLeavesNoContainerAndNoProcess) {
  int64_t id = submit({"--gpus", "1", "--", "sh", "-c", "touch /gpuq/run/started; exec sleep 7001"});
  ASSERT_TRUE(wait_run_file(id, 1, "started")) << h_->show(id).dump(2);
  auto job = h_->show(id);
  std::string run_id = job["runs"][0]["run_id"];
  ASSERT_NE(containers_of(id), "") << "running: podman lists it";
  ASSERT_EQ(h_->gpuq({"cancel", std::to_string(id)}).status, 0);
  ASSERT_TRUE(wait_state(id, "cancelled"));
  // The GPU is free only once cleanup is confirmed: a job that needs it starts after that.
  int64_t next = h_->submit_sh("true", {"--gpus", "1"});
  ASSERT_TRUE(wait_state(next, "succeeded"));
  EXPECT_EQ(containers_of(id), "");
  auto sleeping = os::run_command({"pgrep", "-f", "sleep 7001"}, Millis(10'000));
  ASSERT_TRUE(sleeping);
  EXPECT_EQ(sleeping->out, "") << "the container's process is gone";
  std::string calls = read_file(setup().bin_dir + "/calls");
  EXPECT_NE(calls.find("stop -t"), std::string::npos) << "stopped through the runtime: " << calls;
}

TEST_F(DaemonPodmanTest, ATimeoutStopsTheContainer) {
  int64_t id = submit({"--gpus", "1", "--timeout", "3s", "--", "sh", "-c", "touch /gpuq/run/started; exec sleep 7002"});
  ASSERT_TRUE(wait_state(id, "failed")) << h_->show(id).dump(2);
  EXPECT_EQ(h_->show(id)["runs"][0]["outcome"], "timed-out");
  int64_t next = h_->submit_sh("true", {"--gpus", "1"});  // starts once cleanup is confirmed
  ASSERT_TRUE(wait_state(next, "succeeded"));
  EXPECT_EQ(containers_of(id), "");
  auto sleeping = os::run_command({"pgrep", "-f", "sleep 7002"}, Millis(10'000));
  ASSERT_TRUE(sleeping);
  EXPECT_EQ(sleeping->out, "");
}

TEST_F(DaemonPodmanTest, AContainerYieldsItsGpuAndResumes) {
  // Waits for the yield file, saves, exits 75; the next run finds GPUQ_RESUME=1.
  int64_t low = submit({"--gpus", "1", "--priority", "low", "--preempt", "yield", "--", "sh", "-c",
                        "if [ \"$GPUQ_RESUME\" = 1 ]; then echo resumed from $(cat /gpuq/job/ckpt); exit 0; fi; "
                        "touch /gpuq/run/started; while [ ! -e \"$GPUQ_YIELD_FILE\" ]; do sleep 0.1; done; "
                        "echo 42 > /gpuq/job/ckpt; exit 75"});
  ASSERT_TRUE(wait_run_file(low, 1, "started")) << h_->show(low).dump(2);
  int64_t high = h_->submit_sh("echo high", {"--gpus", "1", "--priority", "high"});
  ASSERT_TRUE(wait_state(high, "succeeded"));
  ASSERT_TRUE(wait_state(low, "succeeded")) << h_->show(low).dump(2);
  auto job = h_->show(low);
  EXPECT_EQ(job["runs"][0]["outcome"], "preempted");
  EXPECT_NE(h_->gpuq({"logs", std::to_string(low), "--run", "2"}).out.find("resumed from 42"), std::string::npos);
  EXPECT_EQ(containers_of(low), "");
}

TEST_F(DaemonPodmanTest, ADaemonKilledWhileAContainerRunsAdoptsItsRun) {
  int64_t id = submit({"--", "sh", "-c",
                       "touch /gpuq/run/started; while [ ! -e /gpuq/job/go ]; do sleep 0.1; done; echo went"});
  ASSERT_TRUE(wait_run_file(id, 1, "started"));
  h_->kill_daemon();
  h_->start();
  std::ofstream(fmt::format("{}/jobs/{}/go", h_->home(), id)) << "";
  ASSERT_TRUE(wait_state(id, "succeeded")) << h_->show(id).dump(2);
  auto job = h_->show(id);
  EXPECT_EQ(job["runs"].size(), 1u) << "the same run, adopted";
  bool adopted = false;
  for (const auto& e : h_->events()) adopted = adopted || (e["kind"] == "job.adopted" && e["job"] == id);
  EXPECT_TRUE(adopted);
  EXPECT_NE(log_of(id).find("went"), std::string::npos);
  EXPECT_EQ(containers_of(id), "");
}

TEST_F(DaemonPodmanTest, AnImageNotPresentIsPulledBeforeTheJobIsScheduled) {
  std::vector<std::string> args = {"submit", "--json", "--image", setup().pull_image, "--gpus", "1",
                                   "--", "sh", "-c", "echo ran in the pulled image"};
  int64_t id = h_->gpuq_json(args)["id"];
  ASSERT_TRUE(wait_state(id, "succeeded")) << h_->show(id).dump(2);
  auto events = h_->events();
  int pulling = -1, pulled = -1, started = -1;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i]["job"] != id) continue;
    if (events[i]["kind"] == "job.image_pulling") pulling = static_cast<int>(i);
    if (events[i]["kind"] == "job.image_pulled") pulled = static_cast<int>(i);
    if (events[i]["kind"] == "job.started") started = static_cast<int>(i);
  }
  ASSERT_GE(pulling, 0);
  EXPECT_LT(pulling, pulled);
  EXPECT_LT(pulled, started) << "the pull ends before the job takes its GPU";
  EXPECT_NE(read_file(fmt::format("{}/jobs/{}/pull.log", h_->home(), id)).find("Trying to pull"),
            std::string::npos);
}

TEST_F(DaemonPodmanTest, AFailedPullOrAMissingImageUnderNeverFailsTheJob) {
  std::vector<std::string> never = {"submit", "--json", "--image", "localhost/gpuq-absent:1", "--pull", "never",
                                    "--", "true"};
  int64_t a = h_->gpuq_json(never)["id"];
  std::vector<std::string> missing = {"submit", "--json", "--image", "localhost/gpuq-absent:2", "--", "true"};
  int64_t b = h_->gpuq_json(missing)["id"];
  ASSERT_TRUE(wait_state(a, "failed"));
  ASSERT_TRUE(wait_state(b, "failed"));
  std::string why_a = h_->show(a)["reason"];
  std::string why_b = h_->show(b)["reason"];
  EXPECT_NE(why_a.find("pull policy is never"), std::string::npos) << why_a;
  EXPECT_NE(why_b.find("localhost/gpuq-absent:2"), std::string::npos) << why_b;
  EXPECT_TRUE(h_->show(a)["runs"].empty()) << "nothing ran";
  // Without a run, the job's log is its pull's.
  std::string pull_log = log_of(b);
  EXPECT_NE(pull_log.find("localhost/gpuq-absent:2"), std::string::npos) << pull_log << " / " << h_->show(b).dump();
}

}  // namespace
}  // namespace gpuq::testing
