// SPDX-License-Identifier: Apache-2.0
// The fleet's data at real size, end to end (docs/fleet.md, "Declared data", "Resume
// elsewhere"): real daemons on moto push and pull a 300 MiB output in 5 MiB parts in bounded
// memory; a counter job whose node is killed resumes on another node from the last checkpoint
// it pushed; an output that cannot be pushed is retried, named in the job's reason and in an
// event while it fails, and in the outcome when the job ends without it.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <thread>
#include <iostream>
#include <string>

#include "fleet/partial_file.h"
#include "fleet_e2e_fixture.h"

namespace gpuq::fleet {
namespace {

using namespace e2e;

// The daemon's peak resident memory (VmHWM) in bytes; -1 when unreadable.
int64_t peak_rss(int pid) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

std::string md5_of_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "unreadable " + path;
  struct stat st {};
  ::fstat(fd, &st);
  auto digest = md5_of_range(fd, 0, st.st_size, path);
  ::close(fd);
  return digest ? to_hex(*digest) : digest.error().message;
}

constexpr int64_t kMiB = int64_t{1} << 20;

// Timings for nodes that move large files. moto serves one request at a time: a claim's
// renewal waits behind the parts in flight, so the lease and the timeout are longer than the
// other tests' 3 s and 1 s (what these tests prove is the transfer, not the lease).
const std::string kLargeFileTimings =
    "poll = \"200ms\"\nheartbeat = \"1s\"\nlease = \"30s\"\nsync_every = \"1s\"\ntimeout = \"10s\"\n";

TEST_F(FleetE2E, A300MiBOutputGoesInFiveMiBPartsAndComesBackByteIdenticalInBoundedMemory) {
  const std::string config = kLargeFileTimings + "part_size = \"5MiB\"\ntransfers = 4\n";
  FleetDaemon& a = node("a", {}, "", false, config);
  const int64_t a_before = peak_rss(a.pid());
  ASSERT_GT(a_before, 0);
  std::string writer = script("write.sh",
                              "# gpuq-out: out/big.bin\n"
                              "mkdir -p out\n"
                              "head -c 314572800 /dev/urandom > out/big.bin\n");
  auto ids = submit({"--node", "a", writer});
  ASSERT_EQ(ids.size(), 1u);
  ASSERT_TRUE(wait_until([&] { return claim(ids[0]) && is_final_state(claim(ids[0])->state); }, 180'000))
      << claim_text(ids[0]);
  ASSERT_EQ(claim(ids[0])->state, kSucceeded) << claim(ids[0])->reason;
  const int64_t a_growth = peak_rss(a.pid()) - a_before;
  auto listing = store_->list("data/out/");
  ASSERT_TRUE(listing) << listing.error().message;
  ASSERT_EQ(listing->objects.size(), 1u);
  EXPECT_EQ(listing->objects[0].size, 300 * kMiB);
  EXPECT_NE(listing->objects[0].etag.find("-60"), std::string::npos)
      << "300 MiB in 5 MiB parts is 60 parts: " << listing->objects[0].etag;

  // Pulled by another node's daemon as an input, and checked there.
  FleetDaemon& b = node("b", {}, "", false, config);
  const int64_t b_before = peak_rss(b.pid());
  std::string reader = script("read.sh", fmt::format("# gpuq-in: out/big.bin\n"
                                                     "md5sum out/big.bin | cut -d' ' -f1 > {}\n",
                                                     shared("pulled.md5")));
  auto read_ids = submit({"--node", "b", reader});
  ASSERT_EQ(read_ids.size(), 1u);
  ASSERT_TRUE(wait_until([&] { return claim(read_ids[0]) && is_final_state(claim(read_ids[0])->state); }, 180'000))
      << claim_text(read_ids[0]);
  ASSERT_EQ(claim(read_ids[0])->state, kSucceeded) << claim(read_ids[0])->reason;
  const int64_t b_growth = peak_rss(b.pid()) - b_before;

  const std::string original = md5_of_file(a.work() + "/out/big.bin");
  EXPECT_EQ(read_lines(shared("pulled.md5")), std::vector<std::string>{original});
  EXPECT_EQ(md5_of_file(b.work() + "/out/big.bin"), original);
  std::cout << fmt::format("[ data     ] 300 MiB output, 5 MiB parts: daemon peak RSS grew {:.1f} MiB pushing, "
                           "{:.1f} MiB pulling\n",
                           a_growth / double(kMiB), b_growth / double(kMiB));
  EXPECT_LT(a_growth, 64 * kMiB);
  EXPECT_LT(b_growth, 64 * kMiB);

  // `fleet show` lists the output: size, time pushed, state.
  auto shown = fleet_json({"show", ids[0]});
  ASSERT_EQ(shown["outputs"].size(), 1u) << shown.dump();
  EXPECT_EQ(shown["outputs"][0]["path"], "out/big.bin");
  EXPECT_EQ(shown["outputs"][0]["size"], 300 * kMiB);
  EXPECT_EQ(shown["outputs"][0]["state"], "pushed");
  EXPECT_GT(shown["outputs"][0]["pushed_ms"].get<int64_t>(), 0);
}

TEST_F(FleetE2E, AKilledNodesCounterJobResumesElsewhereFromItsLastPushedCheckpoint) {
  FleetDaemon& a = node("a");
  // Counts to 40, a step each 50 ms, checkpointing each step (write and rename); attempt 1
  // stops moving after step 10 until its node is killed.
  std::string counter = script(
      "counter.sh",
      fmt::format("# gpuq-out: ckpt/count.txt\n"
                  "mkdir -p ckpt\n"
                  "n=0\n"
                  "if [ \"$GPUQ_RESUME\" = 1 ] && [ -f ckpt/count.txt ]; then n=$(cat ckpt/count.txt); fi\n"
                  "echo \"start $GPUQ_ATTEMPT $GPUQ_RESUME $n\" >> {0}\n"
                  "while [ $n -lt 40 ]; do\n"
                  "  n=$((n+1)); echo $n > ckpt/count.tmp; mv ckpt/count.tmp ckpt/count.txt\n"
                  "  echo \"$GPUQ_ATTEMPT $n\" >> {1}\n"
                  "  if [ \"$GPUQ_ATTEMPT\" = 1 ] && [ $n -ge 10 ]; then while :; do sleep 0.05; done; fi\n"
                  "  sleep 0.05\n"
                  "done\n"
                  "echo $n > {2}\n",
                  shared("starts.txt"), shared("steps.txt"), shared("final.txt")));
  auto ids = submit({"--class", "any", counter});
  ASSERT_EQ(ids.size(), 1u);
  ASSERT_TRUE(wait_until([&] {
    auto pushed = store_->get("data/ckpt/count.txt");
    return pushed && pushed->body == "10\n";
  }, kWaitMs)) << "step 10's checkpoint was never pushed";
  ASSERT_TRUE(claim_is(ids[0], kRunning));
  a.kill();
  node("b");
  ASSERT_TRUE(wait_until([&] { return claim(ids[0]) && is_final_state(claim(ids[0])->state); }, kWaitMs))
      << claim_text(ids[0]);
  EXPECT_EQ(claim(ids[0])->state, kSucceeded) << claim(ids[0])->reason;
  EXPECT_EQ(claim(ids[0])->node, "b");
  EXPECT_EQ(claim(ids[0])->attempt, 2);
  EXPECT_EQ(read_lines(shared("final.txt")), std::vector<std::string>{"40"});
  EXPECT_EQ(read_lines(shared("starts.txt")), (std::vector<std::string>{"start 1 0 0", "start 2 1 10"}))
      << "attempt 2 did not resume from the checkpoint of step 10";
  int second_attempt_steps = 0;
  for (const auto& line : read_lines(shared("steps.txt"))) second_attempt_steps += line.rfind("2 ", 0) == 0;
  EXPECT_EQ(second_attempt_steps, 30) << "attempt 2 ran steps 11..40 only";
  auto shown = fleet_json({"show", ids[0]});
  ASSERT_EQ(shown["outputs"].size(), 1u) << shown.dump();
  EXPECT_EQ(shown["outputs"][0]["attempt"], 2);
  EXPECT_EQ(shown["outputs"][0]["node"], "b");
  EXPECT_EQ(shown["outputs"][0]["state"], "pushed");
}

// examples/fleet/checkpointing.sh, as docs/fleet.md shows it: its node dies, and it goes on
// from its last pushed checkpoint on the node that takes it over.
TEST_F(FleetE2E, TheCheckpointingExampleGoesOnFromItsLastPushedCheckpointElsewhere) {
  FleetDaemon& a = node("a");
  auto ids = submit({"--class", "any", "--env", "STEPS=60", "--env", "CKPT_EVERY=1", "--env", "STEP_SECONDS=0.1",
                     std::string(GPUQ_SOURCE_DIR) + "/examples/fleet/checkpointing.sh"});
  ASSERT_EQ(ids.size(), 1u);
  int pushed_step = 0;
  ASSERT_TRUE(wait_until([&] {
    auto object = store_->get("data/ckpt/latest.state");
    pushed_step = object ? std::atoi(object->body.c_str()) : 0;
    return pushed_step >= 10;
  }, kWaitMs)) << "no checkpoint was pushed";
  a.kill();
  node("b");
  ASSERT_TRUE(wait_until([&] { return claim(ids[0]) && is_final_state(claim(ids[0])->state); }, kWaitMs))
      << claim_text(ids[0]);
  EXPECT_EQ(claim(ids[0])->state, kSucceeded) << claim(ids[0])->reason;
  EXPECT_EQ(claim(ids[0])->attempt, 2);
  auto log = fleet({"logs", ids[0]});
  ASSERT_EQ(log.status, 0) << log.err;
  const size_t resumed = log.out.find("attempt 2: resuming after step ");
  ASSERT_NE(resumed, std::string::npos) << log.out;
  const int from = std::atoi(log.out.c_str() + resumed + 31);
  EXPECT_GE(from, pushed_step) << "it went on from the checkpoint pushed before the node died, or a later one";
  EXPECT_LT(from, 60);
  EXPECT_NE(log.out.find("done: 60 steps"), std::string::npos) << log.out;
  EXPECT_EQ(log.out.find("starting at step 1"), std::string::npos) << "attempt 2 did not start over";
}

TEST_F(FleetE2E, AnOutputThatCannotBePushedIsRetriedNamedWhileItFailsAndInTheOutcome) {
  // The data store is a bucket that does not exist: every push is refused (NoSuchBucket).
  FleetDaemon& a = node("a", {}, "", true, "data = \"s3://gpuq-no-such-bucket/data\"\n");
  std::string job = script("out.sh", fmt::format("# gpuq-out: out/x.txt\n"
                                                 "mkdir -p out\n"
                                                 "echo x > out/x.txt\n"
                                                 "while [ ! -f {} ]; do sleep 0.05; done\n",
                                                 shared("go")));
  auto ids = submit({"--node", "a", job});
  ASSERT_EQ(ids.size(), 1u);
  // While it runs, the failure is in the job's reason and in an event.
  ASSERT_TRUE(wait_until([&] {
    auto c = claim(ids[0]);
    return c && c->state == kRunning && c->reason.find("output out/x.txt could not be pushed") != std::string::npos;
  }, kWaitMs)) << claim_text(ids[0]);
  auto failed = a.event("job.output_failed", "path", "out/x.txt");
  ASSERT_TRUE(failed) << "no job.output_failed event";
  EXPECT_EQ((*failed)["data"]["fleet_id"], ids[0]);
  EXPECT_NE((*failed)["data"]["error"].get<std::string>().find("NoSuchBucket"), std::string::npos) << failed->dump();

  std::ofstream(shared("go")) << "go\n";
  ASSERT_TRUE(wait_until([&] { return claim(ids[0]) && is_final_state(claim(ids[0])->state); }, kWaitMs))
      << claim_text(ids[0]);
  const Claim end = *claim(ids[0]);
  EXPECT_EQ(end.state, kSucceeded);
  EXPECT_NE(end.reason.find("output out/x.txt was not pushed"), std::string::npos) << end.reason;
  auto shown = fleet_json({"show", ids[0]});
  ASSERT_EQ(shown["outputs"].size(), 1u) << shown.dump();
  EXPECT_EQ(shown["outputs"][0]["state"], "not_pushed");
  EXPECT_GE(shown["outputs"][0]["failures"].get<int>(), 2) << "it was retried";
}


// ---- At size, outside the suite: bench/fleet_data_at_size.sh runs these (minutes each, GiBs).

// Above S3's 5 GiB limit on one PUT, at the default part size.
TEST_F(FleetE2E, DISABLED_ASixGiBOutputAboveTheSinglePutLimitGoesAndComesBackByteIdentical) {
  FleetDaemon& a = node("a", {}, "", false, kLargeFileTimings);
  const int64_t a_before = peak_rss(a.pid());
  std::string writer = script("write.sh", "# gpuq-out: out/six.bin\nmkdir -p out\ndd if=/dev/urandom of=out/six.bin bs=1M count=6144 status=none\n");
  auto ids = submit({"--node", "a", writer});
  ASSERT_EQ(ids.size(), 1u);
  ASSERT_TRUE(wait_until([&] { return claim(ids[0]) && is_final_state(claim(ids[0])->state); }, 1'800'000))
      << claim_text(ids[0]);
  ASSERT_EQ(claim(ids[0])->state, kSucceeded) << claim(ids[0])->reason;
  const int64_t a_growth = peak_rss(a.pid()) - a_before;
  auto listing = store_->list("data/out/six.bin");
  ASSERT_TRUE(listing && listing->objects.size() == 1u);
  EXPECT_EQ(listing->objects[0].size, 6 * 1024 * kMiB);
  EXPECT_NE(listing->objects[0].etag.find("-96"), std::string::npos) << "6 GiB in 64 MiB parts: " << listing->objects[0].etag;
  FleetDaemon& b = node("b", {}, "", false, kLargeFileTimings);
  const int64_t b_before = peak_rss(b.pid());
  std::string reader = script("read.sh", fmt::format("# gpuq-in: out/six.bin\nmd5sum out/six.bin | cut -d' ' -f1 > {}\n",
                                                     shared("pulled.md5")));
  auto read_ids = submit({"--node", "b", reader});
  ASSERT_TRUE(wait_until([&] { return claim(read_ids[0]) && is_final_state(claim(read_ids[0])->state); }, 1'800'000));
  ASSERT_EQ(claim(read_ids[0])->state, kSucceeded) << claim(read_ids[0])->reason;
  const int64_t b_growth = peak_rss(b.pid()) - b_before;
  EXPECT_EQ(read_lines(shared("pulled.md5")), std::vector<std::string>{md5_of_file(a.work() + "/out/six.bin")});
  std::cout << fmt::format("[ data     ] 6 GiB output, 64 MiB parts: daemon peak RSS grew {:.1f} MiB pushing, "
                           "{:.1f} MiB pulling\n", a_growth / double(kMiB), b_growth / double(kMiB));
  EXPECT_LT(a_growth, 64 * kMiB);
  EXPECT_LT(b_growth, 64 * kMiB);
}

// A node killed while a large output is half pushed: no partial object is visible, and the
// attempt that takes the job over pushes it whole.
TEST_F(FleetE2E, DISABLED_ANodeKilledHalfwayThroughAPushLeavesNoPartialObjectAndTheNextPushCompletesIt) {
  const std::string config = kLargeFileTimings + "part_size = \"5MiB\"\ntransfers = 1\n";
  FleetDaemon& a = node("a", {}, "", false, config);
  std::string writer = script("write.sh", fmt::format("# gpuq-out: out/big.bin\n"
                                                      "mkdir -p out\n"
                                                      "[ -f out/big.bin ] || dd if=/dev/urandom of=out/big.bin bs=1M count=1024 status=none\n"
                                                      "echo \"$GPUQ_FLEET_NODE $GPUQ_ATTEMPT\" >> {}\n",
                                                      shared("ran.txt")));
  auto ids = submit({"--class", "any", writer});
  ASSERT_EQ(ids.size(), 1u);
  // Halfway: parts of the upload have landed (moto counts the PUTs), the object is not there.
  ASSERT_TRUE(wait_until([&] {
    auto counts = server_->counts();
    int parts = 0;
    if (counts) {
      for (const auto& r : counts->requests) parts += r.key.find("out/big.bin") != std::string::npos && r.method == "PUT";
    }
    return parts >= 60;
  }, 600'000)) << "the upload never got halfway";
  a.kill();
  auto listing = store_->list("data/out/");
  ASSERT_TRUE(listing);
  EXPECT_TRUE(listing->objects.empty()) << "a partial object is visible";
  FleetDaemon& b = node("b", {}, "", false, config);
  ASSERT_TRUE(wait_until([&] { return claim(ids[0]) && is_final_state(claim(ids[0])->state); }, 1'200'000))
      << claim_text(ids[0]);
  EXPECT_EQ(claim(ids[0])->state, kSucceeded) << claim(ids[0])->reason;
  EXPECT_EQ(read_lines(shared("ran.txt")), (std::vector<std::string>{"a 1", "b 2"}));
  listing = store_->list("data/out/");
  ASSERT_TRUE(listing && listing->objects.size() == 1u);
  EXPECT_EQ(listing->objects[0].size, 1024 * kMiB);
  auto pulled = store_->get_file("data/out/big.bin", root_ + "/pulled.bin");
  ASSERT_TRUE(pulled) << pulled.error().message;
  EXPECT_EQ(md5_of_file(root_ + "/pulled.bin"), md5_of_file(b.work() + "/out/big.bin"));
}

// A counter that checkpoints every second; its node is SIGKILLed twice. It ends with the
// right count, and after each kill the next attempt ran fewer than all the steps.
TEST_F(FleetE2E, DISABLED_ACounterJobWhoseNodeIsKilledTwiceEndsWithTheRightCount) {
  constexpr int kSteps = 60;
  std::string counter = script(
      "counter.sh",
      fmt::format("# gpuq-out: ckpt/count.txt\n"
                  "mkdir -p ckpt\n"
                  "n=0\n"
                  "if [ \"$GPUQ_RESUME\" = 1 ] && [ -f ckpt/count.txt ]; then n=$(cat ckpt/count.txt); fi\n"
                  "while [ $n -lt {0} ]; do\n"
                  "  sleep 1; n=$((n+1)); echo $n > ckpt/count.tmp; mv ckpt/count.tmp ckpt/count.txt\n"
                  "  echo \"$GPUQ_ATTEMPT $n\" >> {1}\n"
                  "done\n"
                  "echo $n > {2}\n",
                  kSteps, shared("steps.txt"), shared("final.txt")));
  FleetDaemon& a = node("a");
  auto ids = submit({"--class", "any", counter});
  ASSERT_EQ(ids.size(), 1u);
  auto pushed_at_least = [&](int n) {
    auto object = store_->get("data/ckpt/count.txt");
    return object && std::atoi(object->body.c_str()) >= n;
  };
  ASSERT_TRUE(wait_until([&] { return pushed_at_least(15); }, 120'000));
  a.kill();
  FleetDaemon& b = node("b");
  ASSERT_TRUE(wait_until([&] { return claim(ids[0]) && claim(ids[0])->attempt == 2 && pushed_at_least(30); }, 180'000))
      << claim_text(ids[0]);
  b.kill();
  node("c");
  ASSERT_TRUE(wait_until([&] { return claim(ids[0]) && is_final_state(claim(ids[0])->state); }, 300'000))
      << claim_text(ids[0]);
  EXPECT_EQ(claim(ids[0])->state, kSucceeded) << claim(ids[0])->reason;
  EXPECT_EQ(claim(ids[0])->attempt, 3);
  EXPECT_EQ(read_lines(shared("final.txt")), std::vector<std::string>{std::to_string(kSteps)});
  std::map<int, int> steps_of_attempt;
  for (const auto& line : read_lines(shared("steps.txt"))) steps_of_attempt[std::atoi(line.c_str())] += 1;
  std::cout << fmt::format("[ data     ] steps run by attempts 1, 2, 3: {}, {}, {} (of {})\n", steps_of_attempt[1],
                           steps_of_attempt[2], steps_of_attempt[3], kSteps);
  EXPECT_LT(steps_of_attempt[2], kSteps);
  EXPECT_LT(steps_of_attempt[3], kSteps);
  EXPECT_GE(steps_of_attempt[1] + steps_of_attempt[2] + steps_of_attempt[3], kSteps);
}

// The store unreachable for 15 s while outputs are pushed: nothing is lost, and every job
// succeeds exactly once (its claim's lease outlasts the outage).
TEST_F(FleetE2E, DISABLED_AStoreOutageOfFifteenSecondsDuringPushesLosesNothing) {
  auto started = testing::TcpProxy::start(server_->port());
  ASSERT_TRUE(started) << started.error().message;
  proxies_.push_back(std::move(*started));
  testing::TcpProxy& proxy = *proxies_.back();
  const std::string timings =
      "poll = \"200ms\"\nheartbeat = \"1s\"\nlease = \"60s\"\nsync_every = \"500ms\"\ntimeout = \"2s\"\n"
      "part_size = \"5MiB\"\n";
  FleetDaemon& a = node("a", {}, proxy.endpoint(), false, timings);
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) {
    std::string job = script(fmt::format("out{}.sh", i),
                             fmt::format("# gpuq-out: out/{0}.bin\n"
                                         "mkdir -p out\n"
                                         "echo \"$GPUQ_FLEET_ID $GPUQ_ATTEMPT\" >> {1}\n"
                                         "head -c 31457280 /dev/urandom > out/{0}.bin\n"
                                         "sleep 2\n",
                                         i, shared("ran.txt")));
    auto submitted = submit({"--node", "a", job});
    ASSERT_EQ(submitted.size(), 1u);
    ids.push_back(submitted[0]);
  }
  ASSERT_TRUE(wait_until([&] { return read_lines(shared("ran.txt")).size() >= 2; }, 120'000));
  proxy.cut();
  std::this_thread::sleep_for(std::chrono::seconds(15));
  ASSERT_TRUE(proxy.restore());
  for (const auto& id : ids) {
    ASSERT_TRUE(wait_until([&] { return claim(id) && is_final_state(claim(id)->state); }, 600'000)) << claim_text(id);
    EXPECT_EQ(claim(id)->state, kSucceeded) << claim(id)->reason;
    EXPECT_EQ(claim(id)->attempt, 1) << "ran once";
  }
  EXPECT_EQ(read_lines(shared("ran.txt")).size(), ids.size()) << "each job ran exactly once";
  for (int i = 0; i < 6; ++i) {
    auto pulled = store_->get_file(fmt::format("data/out/{}.bin", i), root_ + "/check.bin");
    ASSERT_TRUE(pulled) << pulled.error().message;
    EXPECT_EQ(md5_of_file(root_ + "/check.bin"), md5_of_file(a.work() + fmt::format("/out/{}.bin", i)));
  }
}

}  // namespace
}  // namespace gpuq::fleet
