// SPDX-License-Identifier: Apache-2.0
// `gpuq fleet ...` command lines against an in-memory store (Io::open_fleet): usage errors that
// touch nothing, what submit reads from scripts and writes, and the --json shapes.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <gtest/gtest.h>

#include <set>

#include "cli/app.h"
#include "cli/fake_transport.h"
#include "fleet/client.h"
#include "fleet/testing/memory_store.h"

namespace gpuq::cli {
namespace {

using fleet::testing::Bucket;
using fleet::testing::MemoryStore;

class FleetCli : public ::testing::Test {
 protected:
  FleetCli() : bucket_(std::make_shared<Bucket>()), store_(bucket_) {
    process_.io.open_fleet = [this](const std::string& url)
        -> Result<std::unique_ptr<fleet::ObjectStore>> {
      opened_.push_back(url);
      return std::unique_ptr<fleet::ObjectStore>(new MemoryStore(bucket_));
    };
    process_.io.environ.push_back("USER=me");
  }

  int run(std::vector<std::string> args) {
    args.insert(args.begin(), "fleet");
    return run_raw(std::move(args));
  }
  int run_raw(const std::vector<std::string>& args) {
    process_.out.str("");
    process_.err.str("");
    return run_cli(args, Hooks{}, process_.io);
  }
  int fleet(std::vector<std::string> args) {
    args.insert(args.begin() + 1, {"--fleet", "s3://bucket/team"});
    return run(std::move(args));
  }
  void expect_usage_error(std::vector<std::string> args, std::string_view part) {
    SCOPED_TRACE(::testing::PrintToString(args));
    opened_.clear();
    EXPECT_EQ(run(std::move(args)), kExitUsage);
    EXPECT_TRUE(opened_.empty());
    EXPECT_NE(err().find(part), std::string::npos) << err();
  }
  std::string out() const { return process_.out.str(); }
  std::string err() const { return process_.err.str(); }
  void heartbeat(const std::string& node) {
    fleet::Heartbeat beat;
    beat.node = node;
    beat.interval_ms = 10'000;
    beat.classes = {"any", "big"};
    beat.gpus = {{"gpu0", "H100", 80'000, false}, {"gpu1", "H100", 80'000, true}};
    beat.free_gpus = 1;
    beat.running = {"x"};
    ASSERT_TRUE(store_.put(fleet::keys::heartbeat(node), fleet::to_json(beat).dump()));
  }
  std::optional<fleet::FleetJob> stored(const std::string& ref) {
    auto id = fleet::resolve_job(store_, ref);
    if (!id) return std::nullopt;
    auto job = fleet::read_job(store_, *id);
    return job ? std::optional(*job) : std::nullopt;
  }

  testing::FakeProcess process_;
  testing::TempDir dir_;
  std::shared_ptr<Bucket> bucket_;
  MemoryStore store_;
  std::vector<std::string> opened_;
};

TEST_F(FleetCli, UsageErrorsTouchNothing) {
  std::string script = dir_.write("a.sh", "#!/bin/bash\necho a\n");
  expect_usage_error({"status"}, "--fleet s3://BUCKET/PREFIX");
  expect_usage_error({"status"}, "GPUQ_FLEET");
  expect_usage_error({"submit", "--fleet", "s3://b/p", "--chain", script, script}, "--chain needs --node");
  expect_usage_error({"submit", "--fleet", "s3://b/p", "--class", "big", "--node", "n1", script},
                     "--class and --node together");
  expect_usage_error({"logs", "--fleet", "s3://b/p", "-f", "--json", "x"}, "leave out -f");
  expect_usage_error({"move", "--fleet", "s3://b/p", "--from", "n1"}, "--to");
  expect_usage_error({"submit", "--fleet", "s3://b/p"}, "file");
}

TEST_F(FleetCli, GpuqFleetIsTheDefaultStore) {
  process_.io.environ.push_back("GPUQ_FLEET=dir:///shared/fleet");
  EXPECT_EQ(run({"status"}), kExitOk) << err();
  ASSERT_EQ(opened_.size(), 1u);
  EXPECT_EQ(opened_[0], "dir:///shared/fleet");
  EXPECT_EQ(fleet({"status"}), kExitOk);
  EXPECT_EQ(opened_.back(), "s3://bucket/team");
}

TEST_F(FleetCli, SubmitReadsTheScriptsHeadersAndSendsOnlyEnv) {
  std::string prep = dir_.write("prep.sh", "#!/bin/bash\necho prep\n");
  std::string train = dir_.write("train.sh",
                                 "#!/bin/bash\n#gpuq gpus=2\n#gpuq after=prep\n"
                                 "#gpuq wait-file=/data/ready\n# gpuq-in: data/x.json\n"
                                 "# gpuq-out: out/\n# gpuq-resume: no\necho train\n");
  ASSERT_EQ(fleet({"submit", "--name", "prep", prep}), kExitOk) << err();
  EXPECT_TRUE(out().starts_with("submitted ")) << out();
  EXPECT_NE(out().find(" prep to class any\n"), std::string::npos) << out();
  ASSERT_EQ(fleet({"submit", "--class", "big", "--name", "train", "--env", "HF_HOME=/hf",
                   "--priority", "high", train}),
            kExitOk)
      << err();
  auto job = stored("train");
  ASSERT_TRUE(job);
  EXPECT_EQ(job->klass, "big");
  EXPECT_EQ(job->spec.gpus, 2);
  EXPECT_EQ(job->spec.priority, kPriorityHigh);
  EXPECT_EQ(job->spec.cwd, "");
  EXPECT_EQ(job->spec.env, (std::map<std::string, std::string>{{"HF_HOME", "/hf"}}));
  ASSERT_EQ(job->after.size(), 1u);
  EXPECT_EQ(job->after[0].target, "prep");
  ASSERT_EQ(job->spec.deps.size(), 1u);  // wait-file stays with the spec
  EXPECT_EQ(job->spec.deps[0].kind, Dependency::Kind::kFile);
  EXPECT_EQ(job->spec.inputs, std::vector<std::string>{"data/x.json"});
  EXPECT_EQ(job->spec.outputs, std::vector<std::string>{"out/"});
  EXPECT_FALSE(job->spec.resume) << "# gpuq-resume: no travels in spec.json";
  EXPECT_TRUE(stored("prep")->spec.resume);
  EXPECT_EQ(job->submitted_by.substr(0, 3), "me@");

  // The same submit again is the same job; other work under the name is refused.
  ASSERT_EQ(fleet({"submit", "--class", "big", "--name", "train", "--env", "HF_HOME=/hf",
                   "--priority", "high", train}),
            kExitOk);
  EXPECT_EQ(out(), "existing " + job->id + " train in class big\n");
  EXPECT_EQ(fleet({"submit", "--class", "big", "--name", "train", train}), kExitFailed);
  EXPECT_NE(err().find("other work"), std::string::npos) << err();
}

TEST_F(FleetCli, ASweepIsOneFleetJobPerElementNamedByItsIndexAndHasNoCap) {
  std::string shard = dir_.write("shard.sh",
                                 "#!/bin/bash\n#gpuq grid=lr=1e-4,3e-4\n"
                                 "echo $GPUQ_ARRAY_INDEX $GPUQ_PARAM_LR\n");
  ASSERT_EQ(fleet({"submit", "--name", "sh", "--array", "0-2", shard}), kExitOk) << err();
  std::string printed = out();
  EXPECT_EQ(std::count(printed.begin(), printed.end(), '\n'), 3) << printed;
  auto third = stored("sh.2");
  ASSERT_TRUE(third);
  EXPECT_EQ(third->spec.name, "sh.2");
  EXPECT_EQ(third->spec.env.at("GPUQ_ARRAY_INDEX"), "2");
  EXPECT_FALSE(third->spec.env.count("GPUQ_PARAM_LR")) << "--array replaces the header's grid";
  ASSERT_EQ(fleet({"submit", "--name", "lr", shard}), kExitOk) << err();
  auto second = stored("lr.1");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->spec.env.at("GPUQ_PARAM_LR"), "3e-4");
  EXPECT_FALSE(stored("lr.2"));

  EXPECT_EQ(fleet({"submit", "--name", "c", "--array", "0-2%2", shard}), kExitUsage);
  EXPECT_NE(err().find("a sweep in the fleet has no cap"), std::string::npos) << err();
  EXPECT_EQ(fleet({"submit", "--array", "0-1", shard}), kExitUsage);
  EXPECT_NE(err().find("a sweep in the fleet needs a name"), std::string::npos) << err();
  EXPECT_FALSE(stored("c.0"));
}

TEST_F(FleetCli, StepsAndAnImageMakeOneJobWhoseSpecTravelsWhole) {
  std::string prep = dir_.write("prep.sh", "#!/bin/bash\n#gpuq timeout=10m\nmake data\n");
  ASSERT_EQ(fleet({"submit", "--name", "pipe", "--gpus", "1", "--image", "busybox", "--pull",
                   "always", "--step", prep + " --fast", "--step", "python eval.py"}),
            kExitOk)
      << err();
  EXPECT_NE(out().find(" pipe to class any\n"), std::string::npos) << out();
  auto job = stored("pipe");  // read back from the store as a node's agent reads it
  ASSERT_TRUE(job);
  ASSERT_EQ(job->spec.steps.size(), 2u);
  EXPECT_EQ(job->spec.steps[0].script_text, "#!/bin/bash\n#gpuq timeout=10m\nmake data\n");
  EXPECT_EQ(job->spec.steps[0].script_args, std::vector<std::string>{"--fast"});
  EXPECT_EQ(job->spec.steps[0].timeout_ms, 10 * 60 * 1000);
  EXPECT_EQ(job->spec.steps[1].argv, (std::vector<std::string>{"python", "eval.py"}));
  EXPECT_EQ(job->spec.image, "busybox");
  EXPECT_EQ(job->spec.pull, PullPolicy::kAlways);
  EXPECT_TRUE(job->spec.argv.empty());

  // A sweep of steps: each element's steps with its index.
  ASSERT_EQ(fleet({"submit", "--name", "sh", "--array", "0-1", "--step", "prep --shard {i}"}),
            kExitOk)
      << err();
  auto second = stored("sh.1");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->spec.steps[0].argv, (std::vector<std::string>{"prep", "--shard", "1"}));

  expect_usage_error({"submit", "--fleet", "s3://b/p", "--step", "true", prep},
                     "--step and job scripts (file ...) together");
  EXPECT_EQ(fleet({"submit", "--step", "a && b"}), kExitUsage);
  EXPECT_NE(err().find("--step 'a && b' (step 1): '&&' is shell syntax"), std::string::npos)
      << err();
  EXPECT_EQ(fleet({"submit", "--pull", "never", prep}), kExitUsage);
  EXPECT_NE(err().find("--pull applies only to a job that runs in a container"), std::string::npos)
      << err();
  EXPECT_EQ(fleet({"submit", "--image", "Busybox", prep}), kExitUsage);
  EXPECT_NE(err().find("--image: 'Busybox' is not an image reference"), std::string::npos) << err();
}

TEST_F(FleetCli, ChainPinsEachFileAfterTheOneBefore) {
  std::vector<std::string> args = {"submit", "--node", "n1", "--chain", "--name", "step", "--json"};
  for (const char* name : {"a.sh", "b.sh", "c.sh"}) {
    args.push_back(dir_.write(name, std::string("#!/bin/bash\necho ") + name + "\n"));
  }
  ASSERT_EQ(fleet(args), kExitOk) << err();
  auto printed = nlohmann::json::parse(out());
  ASSERT_EQ(printed.size(), 3u);
  EXPECT_EQ(printed[1]["name"], "step-2");
  EXPECT_EQ(printed[1]["node"], "n1");
  EXPECT_EQ(printed[1]["result"], "submitted");
  EXPECT_EQ(printed[0]["after"].size(), 0u);
  EXPECT_EQ(printed[2]["after"][0]["target"], "step-2");
  EXPECT_EQ(printed[2]["after"][0]["kind"], "afterok");
  auto third = stored("step-3");
  ASSERT_TRUE(third);
  EXPECT_TRUE(third->entry().starts_with("queues/node/n1/"));
}

TEST_F(FleetCli, TheFleetOfTheHomesConfigIsTheLastDefault) {
  std::string home = dir_.path() + "/home";
  std::filesystem::create_directories(home);
  std::ofstream(home + "/config.toml") << "[fleet]\nurl = \"s3://from-config/team\"\n";
  opened_.clear();
  ASSERT_EQ(run_raw({"--home", home, "fleet", "status", "--json"}), kExitOk) << err();
  EXPECT_EQ(opened_, std::vector<std::string>{"s3://from-config/team"});
  opened_.clear();
  ASSERT_EQ(run_raw({"--home", home, "fleet", "status", "--fleet", "s3://flag/x", "--json"}), kExitOk) << err();
  EXPECT_EQ(opened_, std::vector<std::string>{"s3://flag/x"}) << "--fleet wins";
}

TEST_F(FleetCli, AfterTakesTheKindsOfDependencyAsAPrefix) {
  for (const char* name : {"prep", "train"}) {
    ASSERT_EQ(fleet({"submit", "--name", name, dir_.write(std::string(name) + ".sh", "#!/bin/bash\ntrue\n")}),
              kExitOk)
        << err();
  }
  ASSERT_EQ(fleet({"submit", "--name", "report", "--after", "prep", "--after", "afterany:train", "--after",
                   "afternotok:prep", "--after", "afterok:train", dir_.write("report.sh", "#!/bin/bash\ntrue\n")}),
            kExitOk)
      << err();
  auto report = stored("report");
  ASSERT_TRUE(report);
  std::vector<fleet::FleetDep> want = {{Dependency::Kind::kAfterOk, "prep"},
                                       {Dependency::Kind::kAfterOk, "train"},
                                       {Dependency::Kind::kAfterAny, "train"},
                                       {Dependency::Kind::kAfterNotOk, "prep"}};
  auto sorted = [](std::vector<fleet::FleetDep> deps) {
    std::sort(deps.begin(), deps.end(), [](const auto& a, const auto& b) {
      return std::tie(a.kind, a.target) < std::tie(b.kind, b.target);
    });
    return deps;
  };
  EXPECT_EQ(sorted(report->after), sorted(want));
}

TEST_F(FleetCli, StatusJsonHasTheDocumentedShape) {
  heartbeat("n1");
  std::string script = dir_.write("a.sh", "#!/bin/bash\necho a\n");
  ASSERT_EQ(fleet({"submit", "--name", "a", script}), kExitOk) << err();
  ASSERT_EQ(fleet({"status", "--json"}), kExitOk) << err();
  auto status = nlohmann::json::parse(out());
  ASSERT_TRUE(status.contains("nodes") && status.contains("jobs"));
  ASSERT_EQ(status["nodes"].size(), 1u);
  const auto& node = status["nodes"][0];
  for (const char* key : {"name", "stale", "heartbeat_age_s", "gpus", "free_gpus", "classes", "running"}) {
    EXPECT_TRUE(node.contains(key)) << key;
  }
  EXPECT_EQ(node["name"], "n1");
  EXPECT_EQ(node["stale"], false);
  EXPECT_EQ(node["gpus"], 2);
  EXPECT_EQ(node["free_gpus"], 1);
  EXPECT_EQ(node["heartbeat_age_s"], 0.0);
  ASSERT_EQ(status["jobs"].size(), 1u);
  const auto& job = status["jobs"][0];
  for (const char* key : {"id", "name", "state", "class", "node", "runs", "exit_code"}) {
    EXPECT_TRUE(job.contains(key)) << key;
  }
  EXPECT_EQ(job["state"], "queued");
  EXPECT_EQ(job["class"], "any");
  EXPECT_EQ(job["name"], "a");
  EXPECT_TRUE(job["node"].is_null());
  EXPECT_TRUE(job["exit_code"].is_null());

  ASSERT_EQ(fleet({"status"}), kExitOk);
  EXPECT_NE(out().find("NODE  AGE"), std::string::npos) << out();
  EXPECT_NE(out().find("1/2"), std::string::npos) << out();
  EXPECT_NE(out().find("queued  class any"), std::string::npos) << out();
}

TEST_F(FleetCli, NodeDashGpuKPinsToOneGpuOfThatNodeUnlessANodeHasThatWholeName) {
  heartbeat("n1");      // gpu0 and gpu1
  heartbeat("n2-gpu0");  // a node whose own name ends like a pin
  std::string script = dir_.write("a.sh", "#!/bin/bash\necho a\n");
  ASSERT_EQ(fleet({"submit", "--node", "n1-gpu1", "--name", "a", script}), kExitOk) << err();
  EXPECT_NE(out().find("to node n1 gpu1"), std::string::npos) << out();
  auto a = stored("a");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->node, "n1");
  EXPECT_EQ(a->spec.reservation, "fleet-gpu1");
  EXPECT_EQ(a->spec.gpus, 1) << "a pinned job holds its GPU";
  EXPECT_EQ(fleet::pinned_gpu(a->spec), 1);
  EXPECT_TRUE(store_.get(a->entry())) << "in n1's pinned queue";
  EXPECT_EQ(a->entry().rfind("queues/node/n1/", 0), 0u);

  ASSERT_EQ(fleet({"submit", "--node", "n2-gpu0", "--name", "b", script}), kExitOk) << err();
  EXPECT_EQ(stored("b")->node, "n2-gpu0") << "the node named so wins";
  EXPECT_TRUE(stored("b")->spec.reservation.empty());

  ASSERT_EQ(fleet({"submit", "--node", "later-gpu0", "--name", "c", script}), kExitOk) << err();
  EXPECT_EQ(stored("c")->node, "later-gpu0") << "neither is known: the name as given";

  EXPECT_EQ(fleet({"submit", "--node", "n1-gpu5", "--name", "d", script}), kExitUsage);
  EXPECT_NE(err().find("node n1 has no gpu5; its GPUs are gpu0, gpu1"), std::string::npos) << err();
  EXPECT_EQ(fleet({"submit", "--node", "n1-gpu0", "--gpus", "2", "--name", "e", script}), kExitUsage);
  EXPECT_NE(err().find("pins a job to one GPU"), std::string::npos) << err();
  EXPECT_FALSE(stored("d") || stored("e")) << "nothing was submitted";

  ASSERT_EQ(fleet({"show", "a"}), kExitOk) << err();
  EXPECT_NE(out().find("node n1, gpu1 only"), std::string::npos) << out();
  ASSERT_EQ(fleet({"status", "--json"}), kExitOk) << err();
  auto status = nlohmann::json::parse(out());
  auto row = std::find_if(status["jobs"].begin(), status["jobs"].end(),
                          [&](const auto& job) { return job["id"] == a->id; });
  ASSERT_NE(row, status["jobs"].end());
  EXPECT_EQ((*row)["gpu"], 1);
  EXPECT_EQ((*row)["gpus"], 1);
}

TEST_F(FleetCli, StatusShowsGpuUseFreeDiskAndWarnsOfANodeShortOfDisk) {
  fleet::Heartbeat beat;
  beat.node = "n1";
  beat.gpus = {{"gpu0", "H100", 81'559, true, 61'000, 87}};
  beat.free_gpus = 0;
  beat.workdir_free_bytes = int64_t{3} << 30;
  beat.shm_free_bytes = int64_t{32} << 30;
  beat.min_free_disk_bytes = int64_t{10} << 30;
  beat.not_taking = "its workdir /w has 3221225472 bytes free, under [fleet] min_free_disk (10737418240 bytes)";
  ASSERT_TRUE(store_.put(fleet::keys::heartbeat("n1"), fleet::to_json(beat).dump()));
  ASSERT_EQ(fleet({"status"}), kExitOk) << err();
  EXPECT_NE(out().find("3.0 GiB"), std::string::npos) << out();
  EXPECT_NE(out().find("32.0 GiB"), std::string::npos) << out();
  EXPECT_NE(out().find("87%"), std::string::npos) << out();
  EXPECT_NE(out().find("warning: node n1 takes no new jobs: its workdir /w"), std::string::npos) << out();
  ASSERT_EQ(fleet({"status", "--json"}), kExitOk) << err();
  auto node = nlohmann::json::parse(out())["nodes"][0];
  EXPECT_EQ(node["low_disk"], true);
  EXPECT_EQ(node["workdir_free_bytes"], int64_t{3} << 30);
  EXPECT_EQ(node["shm_free_bytes"], int64_t{32} << 30);
  EXPECT_EQ(node["min_free_disk_bytes"], int64_t{10} << 30);
  EXPECT_EQ(node["gpu_usage"][0]["utilization"], 87);
  EXPECT_EQ(node["gpu_usage"][0]["memory_used_mib"], 61'000);
  EXPECT_TRUE(node["not_taking"].is_string());
}

TEST_F(FleetCli, StatusShowsTheBestWaitingJobsAndCountsTheRest) {
  std::string script = dir_.write("a.sh", "#!/bin/bash\necho a\n");
  for (const char* name : {"a", "b", "c"}) ASSERT_EQ(fleet({"submit", "--name", name, script}), kExitOk) << err();
  ASSERT_EQ(fleet({"status", "--limit", "1"}), kExitOk) << err();
  EXPECT_NE(out().find("... and 2 more in class any (3 entries)"), std::string::npos) << out();
  EXPECT_NE(out().find("--all shows every one"), std::string::npos) << out();
  ASSERT_EQ(fleet({"status", "--limit", "1", "--json"}), kExitOk) << err();
  auto status = nlohmann::json::parse(out());
  EXPECT_EQ(status["jobs"].size(), 1u);
  EXPECT_EQ(status["not_shown"], 2);
  EXPECT_EQ(status["queues"], nlohmann::json::parse(R"([{"queue": "queues/class/any/", "entries": 3, "shown": 1}])"));
  ASSERT_EQ(fleet({"status", "--all", "--json"}), kExitOk) << err();
  EXPECT_EQ(nlohmann::json::parse(out())["jobs"].size(), 3u);
  expect_usage_error({"status", "--all", "--limit", "5"}, "--all and --limit together");
}

TEST_F(FleetCli, CancelDrainMoveAndShow) {
  heartbeat("n1");
  heartbeat("n2");
  std::string script = dir_.write("a.sh", "#!/bin/bash\necho a\n");
  ASSERT_EQ(fleet({"submit", "--node", "n1", "--name", "a", script}), kExitOk) << err();
  ASSERT_EQ(fleet({"submit", "--node", "n1", "--name", "b", script}), kExitOk) << err();
  ASSERT_EQ(fleet({"move", "--from", "n1", "--to", "n2"}), kExitOk) << err();
  EXPECT_NE(out().find("moved "), std::string::npos) << out();
  EXPECT_EQ(stored("a")->node, "n2");
  ASSERT_EQ(fleet({"cancel", "a", "--json"}), kExitOk) << err();
  auto cancelled = nlohmann::json::parse(out());
  EXPECT_EQ(cancelled["result"], "cancelled");
  EXPECT_EQ(fleet({"cancel", "a"}), kExitFailed);
  EXPECT_NE(err().find("already ended: cancelled"), std::string::npos) << err();
  ASSERT_EQ(fleet({"show", "a", "--json"}), kExitOk);
  auto shown = nlohmann::json::parse(out());
  EXPECT_EQ(shown["state"], "cancelled");
  EXPECT_EQ(shown["cancel_requested"], true);
  EXPECT_EQ(shown["claim"]["state"], "cancelled");
  ASSERT_EQ(fleet({"show", "b"}), kExitOk);
  EXPECT_NE(out().find("state:       queued"), std::string::npos) << out();
  EXPECT_EQ(fleet({"drain", "n2"}), kExitOk);
  EXPECT_EQ(out(), "node n2 drains: it takes no new jobs; running ones finish\n");
  EXPECT_EQ(fleet({"undrain", "n2", "--json"}), kExitOk);
  EXPECT_EQ(out(), "{\"node\":\"n2\",\"draining\":false}\n");
  EXPECT_EQ(fleet({"drain", "n9"}), kExitFailed);
  EXPECT_EQ(fleet({"show", "nope"}), kExitFailed);
  EXPECT_NE(err().find("no fleet job has the name or id 'nope'"), std::string::npos) << err();
}

TEST_F(FleetCli, LogsFollowUntilTheClaimEnds) {
  std::string script = dir_.write("a.sh", "#!/bin/bash\necho a\n");
  ASSERT_EQ(fleet({"submit", "--name", "a", script}), kExitOk) << err();
  std::string id = stored("a")->id;
  fleet::Claim claim;
  claim.job = id;
  claim.node = "n1";
  claim.attempt = 1;
  claim.token = "t";
  ASSERT_TRUE(store_.put(fleet::keys::claim(id), fleet::to_json(claim).dump()));
  ASSERT_TRUE(store_.put(fleet::keys::log(id, 1), "one\n"));
  int polls = 0;
  process_.io.sleep = [&](Millis) {
    ++polls;
    if (polls == 1) {
      ASSERT_TRUE(store_.put(fleet::keys::log(id, 1), "one\ntwo\n"));
    }
    if (polls == 3) {
      ASSERT_TRUE(store_.put(fleet::keys::log(id, 1), "one\ntwo\nthree\n"));
      claim.state = "succeeded";
      ASSERT_TRUE(store_.put(fleet::keys::claim(id), fleet::to_json(claim).dump()));
    }
  };
  ASSERT_EQ(fleet({"logs", "a", "-f"}), kExitOk) << err();
  EXPECT_EQ(out(), "one\ntwo\nthree\n");
  EXPECT_EQ(polls, 3);
  ASSERT_EQ(fleet({"logs", id, "--attempt", "1"}), kExitOk);
  EXPECT_EQ(out(), "one\ntwo\nthree\n");
  EXPECT_EQ(fleet({"logs", id, "--attempt", "2"}), kExitFailed);
}

TEST_F(FleetCli, AnUnreachableStoreExitsThree) {
  bucket_->unreachable = true;
  EXPECT_EQ(fleet({"status"}), kExitNoDaemon);
  EXPECT_NE(err().find("cannot connect"), std::string::npos) << err();
}

TEST_F(FleetCli, PushAndPullMoveAFileThroughTheDataStore) {
  std::string file = dir_.write("train.json", "[1,2,3]");
  ASSERT_EQ(fleet({"push", file, "in/train.json", "--json"}), kExitOk) << err();
  auto pushed = nlohmann::json::parse(out());
  EXPECT_EQ(pushed["path"], "in/train.json");
  EXPECT_EQ(pushed["key"], "data/in/train.json");
  EXPECT_EQ(pushed["size"], 7);
  EXPECT_EQ(store_.get("data/in/train.json")->body, "[1,2,3]") << "under PREFIX/data/, where a node pulls inputs";
  const std::string back = dir_.path() + "/back/train.json";
  ASSERT_EQ(fleet({"pull", "in/train.json", back}), kExitOk) << err();
  EXPECT_NE(out().find("pulled in/train.json"), std::string::npos) << out();
  std::ifstream in(back);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "[1,2,3]");
  // A path a job could not declare is a usage error; a missing one is not found.
  EXPECT_EQ(fleet({"push", file, "../escape"}), kExitUsage);
  EXPECT_NE(err().find("must be relative to the workdir"), std::string::npos) << err();
  EXPECT_EQ(fleet({"pull", "in/none.json", back}), kExitFailed);
  EXPECT_NE(err().find("data/in/none.json"), std::string::npos) << err();
}

}  // namespace
}  // namespace gpuq::cli
