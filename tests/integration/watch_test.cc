// SPDX-License-Identifier: Apache-2.0
// The watchers and `gpuq check` with a real daemon: a job waiting on a file raises
// job.requires_wait once, across a restart, and ends it when the file appears; a silent run
// is quiet and overdue; GPUs idle behind a lane raise queue.idle_with_work naming the head
// job; `gpuq check` is healthy, reports problems, and answers within its timeout when the
// daemon is stopped or hung (SIGSTOP).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>

#include "harness.h"

namespace gpuq::testing {
namespace {

using nlohmann::json;

// Fast watchers for tests; everything else as shipped.
constexpr const char* kFastWatch =
    "[watch]\ninterval = \"100ms\"\nheartbeat = \"200ms\"\nrepeat = \"1h\"\n"
    "[runs]\nrequires_poll = \"100ms\"\nrequires_poll_max = \"200ms\"\n";

std::vector<json> events_of(const Harness& h, const std::string& kind, int64_t job = 0) {
  std::vector<json> out;
  for (const auto& e : h.events()) {
    if (e["kind"] != kind) continue;
    if (job && (!e["job"].is_number() || e["job"].get<int64_t>() != job)) continue;
    out.push_back(e);
  }
  return out;
}

std::vector<std::string> phases(const std::vector<json>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e["data"]["phase"].get<std::string>());
  return out;
}

using Phases = std::vector<std::string>;

TEST(Watch, RequiresWaitOncePerEpisode) {
  Harness h;
  std::ofstream(h.home() + "/config.toml") << kFastWatch;
  h.start();
  int64_t id = h.submit_sh("true", {"--wait-file", h.path("ready"), "--requires-warn", "300ms"});
  ASSERT_TRUE(wait_until([&] { return !events_of(h, "job.requires_wait", id).empty(); }));
  auto started = events_of(h, "job.requires_wait", id);
  EXPECT_EQ(started[0]["data"]["phase"], "start");
  EXPECT_NE(started[0]["data"]["why"].get<std::string>().find("ready"), std::string::npos)
      << started[0].dump();

  h.stop();
  h.start();
  // Looks of the new daemon while the condition still holds. It has checked the file again
  // (the reason says so); a job submitted after that, waiting on a file that never comes, is
  // reported in a later look, which judged our job too; a second such job, in a later one.
  ASSERT_TRUE(h.wait_for(id, [](const json& j) {
    return j["reason"].get<std::string>().find("does not exist") != std::string::npos;
  })) << h.show(id).dump();
  for (const char* never : {"never-1", "never-2"}) {
    int64_t witness =
        h.submit_sh("true", {"--wait-file", h.path(never), "--requires-warn", "100ms"});
    ASSERT_TRUE(wait_until([&] { return !events_of(h, "job.requires_wait", witness).empty(); }));
  }
  EXPECT_EQ(phases(events_of(h, "job.requires_wait", id)), (Phases{"start"}))
      << "reported again after the restart";
  h.touch("ready");
  ASSERT_TRUE(h.wait_for(id, [](const json& j) { return j["state"] == "succeeded"; }));
  ASSERT_TRUE(wait_until([&] { return events_of(h, "job.requires_wait", id).size() >= 2; }));
  EXPECT_EQ(phases(events_of(h, "job.requires_wait", id)), (Phases{"start", "end"}));
}

// The time a condition has been false before its episode opens survives a restart too.
TEST(Watch, RequiresWaitCountsAcrossRestart) {
  Harness h;
  std::ofstream(h.home() + "/config.toml") << kFastWatch;
  h.start();
  int64_t id = h.submit_sh("true", {"--wait-file", h.path("ready"), "--requires-warn", "2s"});
  ASSERT_TRUE(h.wait_for(id, [](const json& j) {
    return j["reason"].get<std::string>().find("does not exist") != std::string::npos;
  }));
  h.stop();
  h.start();
  int64_t restarted_ms = events_of(h, "daemon.started").back()["time_ms"].get<int64_t>();
  ASSERT_TRUE(wait_until([&] { return !events_of(h, "job.requires_wait", id).empty(); }));
  json started = events_of(h, "job.requires_wait", id)[0];
  // Counted from the first daemon's finding, not from the restart.
  EXPECT_LT(started["time_ms"].get<int64_t>() - started["data"]["for_ms"].get<int64_t>(), restarted_ms)
      << started.dump() << " restarted at " << restarted_ms;
}

// A job whose DONE_IF is never checked because its dependency is held waits for a person.
TEST(Watch, RequiresWaitOnAHeldJob) {
  Harness h;
  std::ofstream(h.home() + "/config.toml") << kFastWatch;
  h.start();
  int64_t held = h.submit_sh("true", {"--hold"});
  int64_t id = h.submit_sh("true", {"--after", std::to_string(held), "--done-if", "false",
                                    "--requires-warn", "300ms"});
  ASSERT_TRUE(wait_until([&] { return !events_of(h, "job.requires_wait", id).empty(); }));
  json started = events_of(h, "job.requires_wait", id)[0];
  EXPECT_NE(started["data"]["why"].get<std::string>().find("held"), std::string::npos) << started.dump();
  h.gpuq({"release", std::to_string(held)});
  ASSERT_TRUE(wait_until([&] { return events_of(h, "job.requires_wait", id).size() >= 2; }));
  EXPECT_EQ(phases(events_of(h, "job.requires_wait", id)), (Phases{"start", "end"}));
}

TEST(Watch, QuietAndOverdue) {
  Harness h;
  std::ofstream(h.home() + "/config.toml") << kFastWatch;
  h.start();
  int64_t id = h.submit_sh("echo started; exec sleep 30",
                           {"--quiet", "300ms", "--warn-after", "400ms"});
  ASSERT_TRUE(wait_until([&] {
    return !events_of(h, "job.quiet", id).empty() && !events_of(h, "job.overdue", id).empty();
  }));
  EXPECT_EQ(events_of(h, "job.overdue", id)[0]["data"]["limit_ms"], 400);
  h.gpuq({"cancel", std::to_string(id)});
  ASSERT_TRUE(wait_until([&] {
    return events_of(h, "job.quiet", id).size() >= 2 && events_of(h, "job.overdue", id).size() >= 2;
  }));
  EXPECT_EQ(phases(events_of(h, "job.quiet", id)), (Phases{"start", "end"}));
  EXPECT_EQ(phases(events_of(h, "job.overdue", id)), (Phases{"start", "end"}));
}

// Alive but doing nothing: its GPU at 0 % (from the fake probe) and its log quiet.
TEST(Watch, GpuIdle) {
  Harness h("fake:1");
  std::string state = h.path("gpu-state.json");
  setenv("GPUQ_FAKE_GPU_STATE", state.c_str(), 1);
  std::ofstream(state) << R"({"gpus":[{"index":0,"memory_used_mib":0,"utilization":0}]})";
  std::ofstream(h.home() + "/config.toml")
      << "[watch]\ninterval = \"100ms\"\ngpu_idle = \"400ms\"\n[gpu]\nprobe_interval = \"100ms\"\n";
  h.start();
  unsetenv("GPUQ_FAKE_GPU_STATE");  // the daemon has it; later daemons of other tests must not
  int64_t id = h.submit_sh("echo loading; exec sleep 30", {"--gpus", "1"});
  ASSERT_TRUE(wait_until([&] { return !events_of(h, "job.gpu_idle", id).empty(); }));
  json idle = events_of(h, "job.gpu_idle", id)[0];
  EXPECT_EQ(idle["data"]["phase"], "start");
  EXPECT_EQ(idle["data"]["utilization"], 0);
  std::ofstream(state) << R"({"gpus":[{"index":0,"memory_used_mib":0,"utilization":85}]})";
  ASSERT_TRUE(wait_until([&] { return events_of(h, "job.gpu_idle", id).size() >= 2; }));
  EXPECT_EQ(phases(events_of(h, "job.gpu_idle", id)), (Phases{"start", "end"}));
  h.gpuq({"cancel", std::to_string(id)});
}

TEST(Watch, IdleWithWorkAndCheck) {
  Harness h("fake:1");
  std::ofstream(h.home() + "/config.toml")
      << "[watch]\ninterval = \"100ms\"\nheartbeat = \"200ms\"\nidle_with_work = \"300ms\"\n"
      << "[lanes.net]\ncapacity = 1\nexcludes = [\"gpu\"]\n";
  h.start();
  EXPECT_EQ(h.gpuq({"check"}).status, 0);
  int64_t download = h.submit_sh("exec sleep 30", {"--lane", "net"});
  ASSERT_TRUE(h.wait_for(download, [](const json& j) { return j["state"] == "running"; }));
  // A second download waits for the lane too, but it could not use the free GPU: not counted.
  h.submit_sh("true", {"--lane", "net"});
  int64_t train = h.submit_sh("true", {"--gpus", "1"});
  ASSERT_TRUE(wait_until([&] { return !events_of(h, "queue.idle_with_work").empty(); }));
  json idle = events_of(h, "queue.idle_with_work")[0];
  EXPECT_EQ(idle["data"]["phase"], "start");
  EXPECT_EQ(idle["data"]["free_gpus"], 1);
  EXPECT_EQ(idle["data"]["waiting_jobs"], 1);
  ASSERT_FALSE(idle["data"]["heads"].empty()) << idle.dump();
  EXPECT_EQ(idle["data"]["heads"][0]["job"], train);
  EXPECT_NE(idle["data"]["heads"][0]["reason"].get<std::string>().find("net"), std::string::npos)
      << idle.dump();

  CliResult check = h.gpuq({"check"});
  EXPECT_EQ(check.status, 1) << check.out << check.err;
  EXPECT_NE(check.out.find("idle with work"), std::string::npos) << check.out;
  json answer = json::parse(h.gpuq({"check", "--json"}).out);
  EXPECT_EQ(answer["ok"], false);
  EXPECT_EQ(answer["problems"][0]["kind"], "idle_with_work");

  h.gpuq({"cancel", std::to_string(download)});
  ASSERT_TRUE(h.wait_for(train, [](const json& j) { return j["state"] == "succeeded"; }));
  ASSERT_TRUE(wait_until([&] { return events_of(h, "queue.idle_with_work").size() >= 2; }));
  EXPECT_EQ(events_of(h, "queue.idle_with_work")[1]["data"]["phase"], "end");
  EXPECT_EQ(h.gpuq({"check"}).status, 0);
}

TEST(Watch, CheckStoppedAndHung) {
  Harness h;
  std::ofstream(h.home() + "/config.toml") << kFastWatch;
  h.start();
  CliResult healthy = h.gpuq({"check"});
  EXPECT_EQ(healthy.status, 0) << healthy.out << healthy.err;
  EXPECT_EQ(healthy.out.rfind("ok: daemon pid", 0), 0u) << healthy.out;

  int pid = h.daemon_pid();
  ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  // The harness kills the CLI after 20 s; check must give up by itself after its 2 s.
  CliResult hung = h.gpuq({"check", "--timeout", "2s"}, 20'000);
  ::kill(pid, SIGCONT);
  EXPECT_EQ(hung.status, 3) << hung.out << hung.err;
  EXPECT_EQ(hung.out.rfind("daemon unreachable: ", 0), 0u) << hung.out;
  // Resumed, it is healthy again once its queue has run: until its next heartbeat, check says
  // truly that the heartbeat is stale (2 s old).
  CliResult resumed;
  EXPECT_TRUE(wait_until([&] {
    resumed = h.gpuq({"check"});
    return resumed.status == 0;
  })) << resumed.out << resumed.err;

  h.stop();
  CliResult stopped = h.gpuq({"check", "--json"}, 20'000);
  EXPECT_EQ(stopped.status, 3) << stopped.out << stopped.err;
  json answer = json::parse(stopped.out);
  EXPECT_EQ(answer["problems"][0]["kind"], "unreachable");
}

}  // namespace
}  // namespace gpuq::testing
