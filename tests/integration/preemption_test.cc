// SPDX-License-Identifier: Apache-2.0
// Preemption end to end: a better job takes the GPU of a worse one that yields (and resumes
// from its checkpoint), is restarted, or is never interrupted; deadlines, natural exits and
// cancels that race a preemption.
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

#include "harness.h"

namespace gpuq::testing {
namespace {

void configure(const Harness& h, const std::string& extra = "") {
  std::ofstream(h.home() + "/config.toml") << "[cleanup]\npoll = \"20ms\"\n" << extra;
}

std::string log_of(const Harness& h, int64_t id, int run) {
  return h.gpuq({"logs", std::to_string(id), "--run", std::to_string(run)}).out;
}

// The position of the first event of `kind` for `job` (and run, when > 0); -1 when none.
int position(const std::vector<nlohmann::json>& events, const std::string& kind, int64_t job, int run = 0) {
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    if (e["kind"] == kind && e["job"] == job && (run == 0 || e["run"] == run)) return static_cast<int>(i);
  }
  return -1;
}

bool any_event(const Harness& h, const std::string& kind) {
  for (const auto& e : h.events()) {
    if (e["kind"] == kind) return true;
  }
  return false;
}

int count_events(const Harness& h, const std::string& kind) {
  int n = 0;
  for (const auto& e : h.events()) n += e["kind"] == kind;
  return n;
}

// A process's state letter in /proc/PID/stat ('T' stopped, 'Z' zombie); ' ' when it is gone.
char process_state(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? ' ' : stat[close + 2];
}

// The parent pid in /proc/PID/stat; 0 when the process is gone.
int parent_of(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 2));
  char state = 0;
  int ppid = 0;
  rest >> state >> ppid;
  return ppid;
}

// Run 1 of `job`'s script (submitted as a file, it runs as HOME/jobs/ID/script), stopped with
// SIGSTOP: a checkpointing example paced by the clock is frozen between two of its checks for
// the yield file, so a preemption requested now is surely seen at its next check however slow
// the machine (unfrozen, it could finish all its units first). Returns its pid, 0 if not found.
// The shell forks for each command it runs, and a fork shows the script's command line until
// it execs: of the processes that show it, the script is the one whose parent does not.
int freeze_script(const Harness& h, int64_t job) {
  std::string script = h.home() + "/jobs/" + std::to_string(job) + "/script";
  std::vector<int> showing;
  for (int pid : h.run_processes(job, 1)) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find(script) != std::string::npos) showing.push_back(pid);
  }
  int found = 0;
  for (int pid : showing) {
    if (std::find(showing.begin(), showing.end(), parent_of(pid)) != showing.end()) continue;
    EXPECT_EQ(found, 0) << "two scripts run " << script;
    found = pid;
  }
  if (found == 0) return 0;
  EXPECT_EQ(::kill(found, SIGSTOP), 0);
  // Stopped for sure: its output so far is all in the log (its stdout is the log file).
  EXPECT_TRUE(wait_until([&] { return process_state(found) == 'T'; })) << "pid " << found;
  return found;
}

// Submits a better job that preempts run 1 of `low` (frozen by freeze_script) and waits until
// the request is there, the yield file in the run's directory; then lets the script go on.
int64_t preempt_frozen(const Harness& h, int64_t low, int frozen) {
  int64_t high =
      h.submit_sh("echo high ran on $CUDA_VISIBLE_DEVICES", {"--gpus", "1", "--priority", "high"});
  std::string yield_file = h.home() + "/jobs/" + std::to_string(low) + "/run-1/yield";
  EXPECT_TRUE(wait_until([&] { return std::filesystem::exists(yield_file); }))
      << h.show(low).dump(2);
  EXPECT_EQ(::kill(frozen, SIGCONT), 0);
  return high;
}

// The units a count.sh or count.py log says were done ("unit N" lines), in order.
std::vector<int> units_in(const std::string& log) {
  std::vector<int> units;
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("unit ", 0) == 0) units.push_back(std::stoi(line.substr(5)));
  }
  return units;
}

// The logs of a count.sh or count.py job of `units` units that was frozen (its log then was
// `frozen_log`), asked to yield, and resumed: it yielded at its first check after the request
// (the unit after the last one it had begun, or one more when it was frozen between a check
// and the "unit" line that follows), and every unit ran exactly once over the two runs, the
// second resuming where the first stopped.
void expect_yielded_and_resumed(const std::string& first, const std::string& second,
                                const std::string& frozen_log, int units) {
  std::vector<int> begun = units_in(frozen_log);
  ASSERT_FALSE(begun.empty()) << frozen_log;
  size_t yielding = first.rfind("yielding at unit ");
  ASSERT_NE(yielding, std::string::npos) << first;
  int yielded_at = std::stoi(first.substr(yielding + 17));
  EXPECT_TRUE(yielded_at == begun.back() + 1 || yielded_at == begun.back() + 2)
      << "frozen after unit " << begun.back() << ":\n" << first;
  EXPECT_EQ(first.rfind(frozen_log, 0), 0u) << "not the frozen log and more:\n" << first;
  std::string want_first, want_second = fmt::format("resumed at unit {} (run 2)\n", yielded_at);
  for (int u = 1; u < yielded_at; ++u) want_first += fmt::format("unit {}\n", u);
  want_first += fmt::format("yielding at unit {}\n", yielded_at);
  for (int u = yielded_at; u <= units; ++u) want_second += fmt::format("unit {}\n", u);
  want_second += fmt::format("done: {} units\n", units);
  EXPECT_EQ(first, want_first);
  EXPECT_EQ(second, want_second);
}

TEST(Preemption, YieldThenResume) {
  Harness h("fake:1");
  configure(h, "[preemption]\nyield_grace = \"60s\"\n");
  h.start();
  setenv("COUNT_UNIT_SECONDS", "0.4", 1);
  auto low_json = h.gpuq_json({"submit", "--json", "--gpus", "1", "--priority", "low", "--name", "counter",
                               std::string(GPUQ_EXAMPLES_DIR) + "/checkpoint/count.sh", "20"});
  unsetenv("COUNT_UNIT_SECONDS");
  int64_t low = low_json.value("id", int64_t{0});
  ASSERT_GT(low, 0) << low_json.dump();
  EXPECT_EQ(low_json["preempt"], "yield") << "the script's header asks for yield";
  ASSERT_TRUE(wait_until([&] { return log_of(h, low, 1).find("unit 5\n") != std::string::npos; }))
      << log_of(h, low, 1);
  // Which unit it yields at depends on the machine's speed (a unit is 0.4 s of the clock), so
  // the script is frozen while the request is made, and the log says which unit it was at.
  int frozen = freeze_script(h, low);
  ASSERT_GT(frozen, 0) << "no process of run 1 runs the script";
  std::string frozen_log = log_of(h, low, 1);
  int64_t high = preempt_frozen(h, low, frozen);
  ASSERT_EQ(h.gpuq({"wait", std::to_string(low), std::to_string(high), "--timeout", "60s"}).status, 0)
      << h.show(low).dump(2);

  auto job = h.show(low);
  ASSERT_EQ(job["runs"].size(), 2u) << job.dump(2);
  EXPECT_EQ(job["runs"][0]["outcome"], "preempted");
  EXPECT_EQ(job["runs"][0]["exit_code"], 75);
  EXPECT_EQ(job["runs"][0]["preempted_by"], high);
  EXPECT_EQ(job["runs"][1]["outcome"], "succeeded");
  expect_yielded_and_resumed(log_of(h, low, 1), log_of(h, low, 2), frozen_log, 20);

  auto events = h.events();
  int requested = position(events, "job.preempt_requested", low, 1);
  int preempted = position(events, "job.preempted", low, 1);
  int high_started = position(events, "job.started", high);
  int high_done = position(events, "job.succeeded", high);
  int resumed = position(events, "job.resumed", low, 2);
  int low_done = position(events, "job.succeeded", low);
  ASSERT_GE(requested, 0);
  EXPECT_LT(requested, preempted);
  EXPECT_LT(preempted, high_started);
  EXPECT_LT(high_started, high_done);
  EXPECT_LT(high_done, resumed);
  EXPECT_LT(resumed, low_done);
  EXPECT_EQ(events[requested]["data"]["by"], high);
  EXPECT_EQ(events[preempted]["data"]["by"], high);
  EXPECT_EQ(events[preempted]["data"]["how"], "yielded");
}

TEST(Preemption, PythonExampleYields) {
  if (std::system("python3 -c 'pass' 2>/dev/null") != 0) GTEST_SKIP() << "no python3";
  Harness h("fake:1");
  configure(h);
  h.start();
  setenv("COUNT_UNIT_SECONDS", "0.3", 1);
  int64_t low = h.gpuq_json({"submit", "--json", "--gpus", "1", "--priority", "low",
                             std::string(GPUQ_EXAMPLES_DIR) + "/checkpoint/count.py", "8"})
                    .value("id", int64_t{0});
  unsetenv("COUNT_UNIT_SECONDS");
  ASSERT_TRUE(wait_until([&] { return log_of(h, low, 1).find("unit 2\n") != std::string::npos; }));
  int frozen = freeze_script(h, low);
  ASSERT_GT(frozen, 0) << "no process of run 1 runs the script";
  std::string frozen_log = log_of(h, low, 1);
  int64_t high = preempt_frozen(h, low, frozen);
  ASSERT_EQ(h.gpuq({"wait", std::to_string(low), std::to_string(high), "--timeout", "60s"}).status, 0);
  auto job = h.show(low);
  ASSERT_EQ(job["runs"].size(), 2u) << job.dump(2);
  EXPECT_EQ(job["runs"][0]["outcome"], "preempted");
  expect_yielded_and_resumed(log_of(h, low, 1), log_of(h, low, 2), frozen_log, 8);
}

TEST(Preemption, RestartMode) {
  Harness h("fake:1");
  configure(h, "[runs]\nkill_grace = \"1s\"\n");
  h.start();
  int64_t low = h.submit_sh("echo run $GPUQ_RUN_NUMBER resume $GPUQ_RESUME; "
                            "if [ \"$GPUQ_RUN_NUMBER\" = 1 ]; then sleep 300; fi",
                            {"--gpus", "1", "--priority", "low", "--preempt", "restart"});
  ASSERT_TRUE(h.wait_for(low, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  int64_t high = h.submit_sh("true", {"--gpus", "1", "--priority", "high"});
  ASSERT_EQ(h.gpuq({"wait", std::to_string(low), std::to_string(high), "--timeout", "60s"}).status, 0);
  auto job = h.show(low);
  ASSERT_EQ(job["runs"].size(), 2u) << job.dump(2);
  EXPECT_EQ(job["runs"][0]["outcome"], "preempted");
  EXPECT_EQ(job["runs"][0]["signal"], 15);
  EXPECT_EQ(job["runs"][1]["outcome"], "succeeded");
  EXPECT_EQ(log_of(h, low, 2), "run 2 resume 0\n");
  auto events = h.events();
  int preempted = position(events, "job.preempted", low, 1);
  ASSERT_GE(preempted, 0);
  EXPECT_EQ(events[preempted]["data"]["how"], "stopped");
  EXPECT_EQ(events[preempted]["data"]["mode"], "restart");
  EXPECT_LT(preempted, position(events, "job.started", high));
  EXPECT_EQ(position(events, "job.resumed", low), -1) << "a restart is not a resume";
}

TEST(Preemption, NeverMode) {
  Harness h("fake:1");
  configure(h);
  h.start();
  int64_t low = h.submit_sh("while [ ! -e go ]; do sleep 0.02; done",
                            {"--gpus", "1", "--priority", "low", "--preempt", "never"});
  ASSERT_TRUE(h.wait_for(low, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  int64_t high = h.submit_sh("true", {"--gpus", "1", "--priority", "high"});
  h.wait_passes(2);  // two scheduling passes have seen the better job
  EXPECT_EQ(h.show(high)["state"], "pending");
  EXPECT_EQ(h.show(low)["state"], "running");
  EXPECT_FALSE(any_event(h, "job.preempt_requested"));
  EXPECT_FALSE(std::filesystem::exists(h.home() + "/jobs/" + std::to_string(low) + "/run-1/yield"));
  h.touch("go");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(low), std::to_string(high), "--timeout", "30s"}).status, 0);
  EXPECT_EQ(h.show(low)["runs"].size(), 1u);
  EXPECT_FALSE(any_event(h, "job.preempt_requested"));
}

TEST(Preemption, RestartWindow) {
  Harness h("fake:2");
  configure(h, "[runs]\nkill_grace = \"1s\"\n");
  h.start();
  // The older run may be restarted for an hour; the younger one only in its first second.
  int64_t open = h.submit_sh("[ \"$GPUQ_RUN_NUMBER\" = 1 ] && sleep 300; true",
                             {"--gpus", "1", "--priority", "low", "--preempt", "restart", "--restart-within", "1h"});
  ASSERT_TRUE(h.wait_for(open, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  int64_t closed = h.submit_sh("while [ ! -e go ]; do sleep 0.02; done",
                               {"--gpus", "1", "--priority", "low", "--preempt", "restart", "--restart-within", "1s"});
  ASSERT_TRUE(h.wait_for(closed, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  // Its window closes a second after its run started, on the daemon's clock.
  int64_t closes_at_ms = h.show(closed)["runs"][0]["started_at_ms"].get<int64_t>() + 1000;
  ASSERT_TRUE(wait_until([&] { return h.health().value("now_ms", int64_t{0}) >= closes_at_ms; }));
  int64_t high = h.submit_sh("true", {"--gpus", "1", "--priority", "high"});
  ASSERT_EQ(h.gpuq({"wait", std::to_string(high), "--timeout", "30s"}).status, 0);
  // The youngest run is the cheapest victim, but its window had closed.
  EXPECT_EQ(h.show(open)["runs"][0]["outcome"], "preempted");
  EXPECT_EQ(h.show(closed)["state"], "running");
  EXPECT_EQ(h.show(closed)["runs"].size(), 1u);
  auto events = h.events();
  EXPECT_EQ(count_events(h, "job.preempt_requested"), 1);
  int requested = position(events, "job.preempt_requested", open, 1);
  ASSERT_GE(requested, 0);
  EXPECT_EQ(events[requested]["data"]["by"], high);
  h.touch("go");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(open), std::to_string(closed), "--timeout", "30s"}).status, 0);
}

TEST(Preemption, DeadlineStops) {
  Harness h("fake:1");
  configure(h, "[preemption]\nyield_grace = \"500ms\"\n[runs]\nkill_grace = \"500ms\"\n");
  h.start();
  int64_t low = h.submit_sh("if [ \"$GPUQ_RESUME\" = 1 ]; then echo resumed; exit 0; fi; "
                            "trap '' TERM; while :; do sleep 0.05; done",
                            {"--gpus", "1", "--priority", "low", "--preempt", "yield"});
  ASSERT_TRUE(h.wait_for(low, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  int64_t high = h.submit_sh("true", {"--gpus", "1", "--priority", "high"});
  ASSERT_EQ(h.gpuq({"wait", std::to_string(low), std::to_string(high), "--timeout", "60s"}).status, 0)
      << h.show(low).dump(2);
  auto job = h.show(low);
  ASSERT_EQ(job["runs"].size(), 2u);
  EXPECT_EQ(job["runs"][0]["outcome"], "preempted");
  EXPECT_EQ(job["runs"][0]["signal"], 9) << "it ignored SIGTERM, so SIGKILL ended it";
  EXPECT_EQ(log_of(h, low, 2), "resumed\n");
  auto events = h.events();
  int preempted = position(events, "job.preempted", low, 1);
  ASSERT_GE(preempted, 0);
  EXPECT_EQ(events[preempted]["data"]["how"], "stopped");
  EXPECT_EQ(position(events, "job.failed", low), -1);
}

TEST(Preemption, NaturalExitWins) {
  Harness h("fake:1");
  configure(h, "[preemption]\nyield_grace = \"30s\"\n");
  h.start();
  // Asked to yield, it finishes its work instead and exits 0.
  int64_t low = h.submit_sh("while [ ! -e \"$GPUQ_YIELD_FILE\" ]; do sleep 0.02; done; echo finished",
                            {"--gpus", "1", "--priority", "low", "--preempt", "yield"});
  ASSERT_TRUE(h.wait_for(low, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  int64_t high = h.submit_sh("true", {"--gpus", "1", "--priority", "high"});
  ASSERT_EQ(h.gpuq({"wait", std::to_string(low), std::to_string(high), "--timeout", "30s"}).status, 0);
  auto job = h.show(low);
  EXPECT_EQ(job["state"], "succeeded");
  ASSERT_EQ(job["runs"].size(), 1u);
  EXPECT_EQ(job["runs"][0]["outcome"], "succeeded");
  EXPECT_EQ(log_of(h, low, 1), "finished\n");
  EXPECT_FALSE(any_event(h, "job.preempted"));
}

TEST(Preemption, CancelWithdraws) {
  Harness h("fake:1");
  configure(h, "[preemption]\nyield_grace = \"60s\"\n");
  h.start();
  int64_t low = h.submit_sh("while [ ! -e go ]; do sleep 0.02; done; "
                            "if [ -e \"$GPUQ_YIELD_FILE\" ]; then echo still asked; fi; echo done",
                            {"--gpus", "1", "--priority", "low", "--preempt", "yield"});
  ASSERT_TRUE(h.wait_for(low, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  int64_t high = h.submit_sh("true", {"--gpus", "1", "--priority", "high"});
  ASSERT_TRUE(wait_until([&] { return any_event(h, "job.preempt_requested"); }));
  ASSERT_EQ(h.gpuq({"cancel", std::to_string(high)}).status, 0);
  ASSERT_TRUE(wait_until([&] { return any_event(h, "job.preemption_withdrawn"); }));
  // The daemon removes the yield file just after recording the withdrawal.
  std::string yield_file = h.home() + "/jobs/" + std::to_string(low) + "/run-1/yield";
  ASSERT_TRUE(wait_until([&] { return !std::filesystem::exists(yield_file); }))
      << "the yield file stays";
  h.touch("go");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(low), "--timeout", "30s"}).status, 0);
  auto job = h.show(low);
  ASSERT_EQ(job["runs"].size(), 1u);
  EXPECT_EQ(job["runs"][0]["outcome"], "succeeded");
  EXPECT_EQ(log_of(h, low, 1), "done\n") << "the yield file is removed when the request is withdrawn";
  EXPECT_FALSE(any_event(h, "job.preempted"));
}

TEST(Preemption, SmallGapNothing) {
  Harness h("fake:1");
  configure(h);
  h.start();
  int64_t normal = h.submit_sh("while [ ! -e go ]; do sleep 0.02; done",
                               {"--gpus", "1", "--priority", "normal", "--preempt", "yield"});
  ASSERT_TRUE(h.wait_for(normal, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  int64_t better = h.submit_sh("true", {"--gpus", "1", "--priority", "20"});  // better by 30 < 40
  h.wait_passes(2);  // two scheduling passes have seen the better job
  EXPECT_FALSE(any_event(h, "job.preempt_requested"));
  EXPECT_EQ(h.show(better)["state"], "pending");
  EXPECT_EQ(h.show(normal)["state"], "running");
  h.touch("go");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(normal), std::to_string(better), "--timeout", "30s"}).status, 0);
}

TEST(Preemption, OneVictimIsEnoughForOneGpu) {
  Harness h("fake:2");
  configure(h, "[preemption]\nyield_grace = \"60s\"\n");
  h.start();
  std::vector<int64_t> low;
  for (int i = 0; i < 2; ++i) {
    low.push_back(h.submit_sh("while [ ! -e \"$GPUQ_YIELD_FILE\" ] && [ ! -e go ]; do sleep 0.02; done; "
                              "[ -e \"$GPUQ_YIELD_FILE\" ] && exit 75; true",
                              {"--gpus", "1", "--priority", "low", "--preempt", "yield"}));
    ASSERT_TRUE(h.wait_for(low.back(), [](const nlohmann::json& j) { return j["state"] == "running"; }));
  }
  int64_t high = h.submit_sh("true", {"--gpus", "1", "--priority", "high"});
  ASSERT_EQ(h.gpuq({"wait", std::to_string(high), "--timeout", "30s"}).status, 0);
  h.wait_passes(2);  // and two more passes after the better job finished
  EXPECT_EQ(count_events(h, "job.preempt_requested"), 1)
      << "the victim's GPU, still being cleaned up, is promised to the better job";
  // One victim yielded and went back to the queue; the other was never asked and runs on.
  auto events = h.events();
  bool first_is_victim = position(events, "job.preempt_requested", low[0]) >= 0;
  int64_t victim = first_is_victim ? low[0] : low[1], spared = first_is_victim ? low[1] : low[0];
  EXPECT_EQ(position(events, "job.preempt_requested", spared), -1);
  EXPECT_EQ(h.show(victim)["runs"][0]["outcome"], "preempted");
  auto untouched = h.show(spared);
  EXPECT_EQ(untouched["state"], "running");
  EXPECT_EQ(untouched["runs"].size(), 1u) << untouched.dump(2);
  h.touch("go");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(low[0]), std::to_string(low[1]), "--timeout", "30s"}).status, 0);
  EXPECT_EQ(h.show(spared)["runs"].size(), 1u);
  EXPECT_EQ(h.show(victim)["runs"].size(), 2u);
}

TEST(Preemption, FifoNeverPreempts) {
  Harness h("fake:1");
  configure(h, "[scheduler]\npolicy = \"fifo\"\n");
  h.start();
  int64_t low = h.submit_sh("while [ ! -e go ]; do sleep 0.02; done",
                            {"--gpus", "1", "--priority", "low", "--preempt", "yield"});
  ASSERT_TRUE(h.wait_for(low, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  int64_t high = h.submit_sh("true", {"--gpus", "1", "--priority", "high"});
  h.wait_passes(2);  // two scheduling passes have seen the better job
  EXPECT_FALSE(any_event(h, "job.preempt_requested")) << "under fifo a preempted job is first in line again";
  EXPECT_EQ(h.show(high)["state"], "pending");
  EXPECT_EQ(h.show(low)["state"], "running");
  h.touch("go");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(low), std::to_string(high), "--timeout", "30s"}).status, 0);
}

}  // namespace
}  // namespace gpuq::testing
