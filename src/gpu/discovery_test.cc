// SPDX-License-Identifier: Apache-2.0
#include "gpu/discovery.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/testdata.h"

namespace gpuq::gpu {
namespace {

using testing::read_testdata;

using testing::exited;

// Answers `nvidia-smi topo ...` with `topo_answer` and every other call with `answer`.
class FakeCommand : public testing::FakeCommand {
 public:
  explicit FakeCommand(Result<os::CommandResult> answer,
                       Result<os::CommandResult> topo_answer = exited(0, ""))
      : testing::FakeCommand(std::move(answer), "topo", std::move(topo_answer)) {}
};

FakeCommand eight_h100() {
  return FakeCommand(exited(0, read_testdata("h100x8.txt")),
                     exited(0, read_testdata("topo_h100x8.txt")));
}

FakeCommand four_gpus() {
  return FakeCommand(exited(0,
                            "0, GPU-a, NVIDIA A100-SXM4-80GB, 81920, 0\n"
                            "1, GPU-b, NVIDIA A100-SXM4-80GB, 81920, 0\n"
                            "2, GPU-c, NVIDIA A100-SXM4-80GB, 81920, 0\n"
                            "3, GPU-d, NVIDIA A100-SXM4-80GB, 81920, 0\n"),
                     exited(0, read_testdata("topo_nvlink_pairs4.txt")));
}

FakeCommand not_installed() {
  return FakeCommand(fail(Code::kNotFound, "nvidia-smi: program not found in PATH"));
}

// Every test leaves GPUQ_NVIDIA_SMI as it found it: unset.
class DiscoveryTest : public ::testing::Test {
 protected:
  void SetUp() override { ::unsetenv("GPUQ_NVIDIA_SMI"); }
  void TearDown() override { ::unsetenv("GPUQ_NVIDIA_SMI"); }
};

void expect_lane(const Result<Inventory>& inventory, std::string_view reason) {
  ASSERT_TRUE(inventory.has_value()) << inventory.error().message;
  EXPECT_EQ(inventory->mode, "lane");
  ASSERT_EQ(inventory->resources.size(), 1u);
  const Resource& lane = inventory->resources[0];
  EXPECT_EQ(lane.name, "gpu0");
  EXPECT_FALSE(lane.index.has_value());
  EXPECT_EQ(lane.model, "stand-in lane (no NVIDIA GPU)");
  EXPECT_NE(inventory->note.find("no NVIDIA GPU found"), std::string::npos) << inventory->note;
  EXPECT_NE(inventory->note.find(reason), std::string::npos) << inventory->note;
  EXPECT_NE(inventory->note.find("exclusive lane gpu0"), std::string::npos) << inventory->note;
  EXPECT_EQ(inventory->note.find('\n'), std::string::npos) << inventory->note;
  EXPECT_TRUE(inventory->links.empty());
}

TEST_F(DiscoveryTest, AutoFindsNvidiaGpus) {
  FakeCommand smi = eight_h100();
  auto inventory = discover("auto", smi.fn());
  ASSERT_TRUE(inventory.has_value()) << inventory.error().message;
  EXPECT_EQ(inventory->mode, "nvidia");
  ASSERT_EQ(inventory->resources.size(), 8u);
  EXPECT_EQ(inventory->resources[7].name, "gpu7");
  EXPECT_EQ(inventory->resources[7].index, 7);
  EXPECT_EQ(inventory->note, "8 NVIDIA GPUs (8x NVIDIA H100 80GB HBM3)");

  ASSERT_EQ(smi.calls().size(), 2u);
  EXPECT_EQ(smi.calls()[0],
            (std::vector<std::string>{"nvidia-smi",
                                      "--query-gpu=index,uuid,name,memory.total,memory.used",
                                      "--format=csv,noheader,nounits"}));
  EXPECT_EQ(smi.timeouts()[0], Millis{10000});
  EXPECT_EQ(smi.calls()[1], (std::vector<std::string>{"nvidia-smi", "topo", "-m"}));
  EXPECT_EQ(smi.timeouts()[1], Millis{10000});
  ASSERT_EQ(inventory->links.size(), 8u);
  EXPECT_EQ(inventory->links[0], (std::vector<int>{0, 118, 118, 118, 118, 118, 118, 118}));
  EXPECT_EQ(inventory->links[7][6], 118);
}

TEST_F(DiscoveryTest, AutoDescribesMixedModels) {
  FakeCommand smi(exited(0,
                         "0, GPU-a, NVIDIA A100-SXM4-80GB, 81920, 0\n"
                         "1, GPU-b, NVIDIA RTX A6000, 49140, 0\n"
                         "2, GPU-c, NVIDIA A100-SXM4-80GB, 81920, 0\n"),
                  exited(0,
                         "\tGPU0\tGPU1\tGPU2\tCPU Affinity\n"
                         "GPU0\t X \tSYS\tNV12\t0-7\n"
                         "GPU1\tSYS\t X \tSYS\t0-7\n"
                         "GPU2\tNV12\tSYS\t X \t0-7\n"));
  auto inventory = discover("auto", smi.fn());
  ASSERT_TRUE(inventory.has_value()) << inventory.error().message;
  EXPECT_EQ(inventory->note, "3 NVIDIA GPUs (2x NVIDIA A100-SXM4-80GB, 1x NVIDIA RTX A6000)");
  EXPECT_EQ(inventory->links, (std::vector<std::vector<int>>{{0, 0, 112}, {0, 0, 0}, {112, 0, 0}}));
}

TEST_F(DiscoveryTest, AutoUsesConfiguredNvidiaSmi) {
  ::setenv("GPUQ_NVIDIA_SMI", "/opt/nvidia/bin/nvidia-smi", 1);
  FakeCommand smi = eight_h100();
  auto inventory = discover("auto", smi.fn());
  ASSERT_TRUE(inventory.has_value()) << inventory.error().message;
  ASSERT_EQ(smi.calls().size(), 2u);
  EXPECT_EQ(smi.calls()[0][0], "/opt/nvidia/bin/nvidia-smi");
  EXPECT_EQ(smi.calls()[1][0], "/opt/nvidia/bin/nvidia-smi");
}

TEST_F(DiscoveryTest, AutoWithoutNvidiaSmiIsALane) {
  FakeCommand smi = not_installed();
  expect_lane(discover("auto", smi.fn()), "nvidia-smi: not found");
}

TEST_F(DiscoveryTest, AutoWithDriverMissingIsALane) {
  FakeCommand smi(exited(9, read_testdata("driver_missing.txt")));
  expect_lane(discover("auto", smi.fn()), "couldn't communicate with the NVIDIA driver");
}

TEST_F(DiscoveryTest, AutoWithDriverMismatchIsALane) {
  FakeCommand smi(exited(18, read_testdata("version_mismatch.txt")));
  expect_lane(discover("auto", smi.fn()), "Driver/library version mismatch");
}

TEST_F(DiscoveryTest, AutoWithExitNineAndNoTextIsALane) {
  FakeCommand smi(exited(9, ""));
  expect_lane(discover("auto", smi.fn()), "NVIDIA driver not loaded");
}

TEST_F(DiscoveryTest, AutoWithNoDevicesIsALane) {
  FakeCommand smi(exited(6, read_testdata("no_devices.txt")));
  expect_lane(discover("auto", smi.fn()), "No devices were found");
}

TEST_F(DiscoveryTest, AutoWithEmptyListIsALane) {
  FakeCommand smi(exited(0, "\n"));
  expect_lane(discover("auto", smi.fn()), "listed no GPUs");
}

TEST_F(DiscoveryTest, AutoWithTimeoutIsALane) {
  os::CommandResult hung;
  hung.timed_out = true;
  hung.signal = 9;
  FakeCommand smi(hung);
  expect_lane(discover("auto", smi.fn()), "no answer within 10s");
}

TEST_F(DiscoveryTest, AutoWithUnknownFailureIsAnError) {
  FakeCommand smi(exited(15,
                         "Unable to determine the device handle for GPU0000:1B:00.0: "
                         "GPU is lost.  Reboot the system to recover this GPU\n"));
  auto inventory = discover("auto", smi.fn());
  ASSERT_FALSE(inventory.has_value());
  EXPECT_EQ(inventory.error().code, Code::kUnavailable);
  EXPECT_NE(inventory.error().message.find("exit 15"), std::string::npos);
  EXPECT_NE(inventory.error().message.find("GPU is lost"), std::string::npos);
  EXPECT_NE(inventory.error().message.find("--gpus none"), std::string::npos);
}

TEST_F(DiscoveryTest, AutoWithGarbageOutputIsCorruption) {
  FakeCommand smi(exited(0, read_testdata("garbage_line.txt")));
  auto inventory = discover("auto", smi.fn());
  ASSERT_FALSE(inventory.has_value());
  EXPECT_EQ(inventory.error().code, Code::kCorruption);
  EXPECT_NE(inventory.error().message.find("line 2"), std::string::npos);
}

TEST_F(DiscoveryTest, NoneHasNoResourcesAndRunsNothing) {
  FakeCommand smi = eight_h100();
  auto inventory = discover("none", smi.fn());
  ASSERT_TRUE(inventory.has_value()) << inventory.error().message;
  EXPECT_EQ(inventory->mode, "none");
  EXPECT_TRUE(inventory->resources.empty());
  EXPECT_TRUE(inventory->links.empty());
  EXPECT_FALSE(inventory->note.empty());
  EXPECT_TRUE(smi.calls().empty());
}

TEST_F(DiscoveryTest, FakeMakesSimulatedGpus) {
  FakeCommand smi = not_installed();
  auto inventory = discover("fake:4", smi.fn());
  ASSERT_TRUE(inventory.has_value()) << inventory.error().message;
  EXPECT_EQ(inventory->mode, "fake");
  EXPECT_EQ(inventory->note, "4 simulated GPUs (fake:4); nothing runs on a real GPU");
  ASSERT_EQ(inventory->resources.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const Resource& gpu = inventory->resources[i];
    EXPECT_EQ(gpu.name, "gpu" + std::to_string(i));
    EXPECT_EQ(gpu.index, i);
    EXPECT_EQ(gpu.uuid, "GPU-fake-" + std::to_string(i));
    EXPECT_EQ(gpu.model, "simulated GPU");
    EXPECT_EQ(gpu.memory_total_mib, 81920);
    EXPECT_EQ(gpu.memory_used_mib, 0);
  }
  EXPECT_EQ(inventory->links, (std::vector<std::vector<int>>{
                                  {0, 104, 0, 0}, {104, 0, 0, 0}, {0, 0, 0, 104}, {0, 0, 104, 0}}));
  EXPECT_TRUE(smi.calls().empty());
}

TEST_F(DiscoveryTest, FakeBounds) {
  FakeCommand smi = not_installed();
  auto one = discover("fake:1", smi.fn());
  ASSERT_TRUE(one.has_value()) << one.error().message;
  EXPECT_EQ(one->resources.size(), 1u);
  EXPECT_EQ(one->note, "1 simulated GPU (fake:1); nothing runs on a real GPU");
  auto most = discover("fake:64", smi.fn());
  ASSERT_TRUE(most.has_value()) << most.error().message;
  EXPECT_EQ(most->resources.size(), 64u);
  EXPECT_EQ(most->resources.back().name, "gpu63");
}

TEST_F(DiscoveryTest, BadFlagsListTheAcceptedForms) {
  FakeCommand smi = eight_h100();
  for (const char* flag : {"",        "fake:0",  "fake:65",
                           "fake:",   "fake",    "fake:4x",
                           "fake:-1", "fake:+2", "fake:99999999999",
                           "all",     "AUTO",    "gpu0",
                           "0,",      ",1",      "0,,2",
                           "0, 2",    "0,x",     "1-3",
                           "0,2,0",   "3,3"}) {
    auto inventory = discover(flag, smi.fn());
    ASSERT_FALSE(inventory.has_value()) << "accepted --gpus " << flag;
    EXPECT_EQ(inventory.error().code, Code::kInvalidArgument) << flag;
    EXPECT_NE(inventory.error().message.find("auto|none|fake:N|0,2,3"), std::string::npos)
        << inventory.error().message;
  }
  EXPECT_TRUE(smi.calls().empty()) << "a malformed flag must fail before nvidia-smi runs";
}

TEST_F(DiscoveryTest, DuplicateIndexIsNamed) {
  FakeCommand smi = four_gpus();
  auto inventory = discover("0,2,0", smi.fn());
  ASSERT_FALSE(inventory.has_value());
  EXPECT_NE(inventory.error().message.find("GPU 0 is listed twice"), std::string::npos)
      << inventory.error().message;
}

TEST_F(DiscoveryTest, ListKeepsOnlyThoseIndices) {
  FakeCommand smi = eight_h100();
  auto inventory = discover("0,2,3", smi.fn());
  ASSERT_TRUE(inventory.has_value()) << inventory.error().message;
  EXPECT_EQ(inventory->mode, "nvidia");
  ASSERT_EQ(inventory->resources.size(), 3u);
  EXPECT_EQ(inventory->resources[0].name, "gpu0");
  EXPECT_EQ(inventory->resources[1].name, "gpu2");
  EXPECT_EQ(inventory->resources[1].index, 2);
  EXPECT_EQ(inventory->resources[1].uuid, "GPU-1f7d4a93-c8e2-4b56-9d30-a7e1c5f82b04");
  EXPECT_EQ(inventory->resources[2].name, "gpu3");
  EXPECT_EQ(inventory->note, "3 of 8 NVIDIA GPUs (--gpus 0,2,3: 3x NVIDIA H100 80GB HBM3)");
  EXPECT_EQ(smi.calls().size(), 2u);
  EXPECT_EQ(inventory->links,
            (std::vector<std::vector<int>>{{0, 118, 118}, {118, 0, 118}, {118, 118, 0}}));
}

TEST_F(DiscoveryTest, SingleIndexIsAList) {
  FakeCommand smi = eight_h100();
  auto inventory = discover("5", smi.fn());
  ASSERT_TRUE(inventory.has_value()) << inventory.error().message;
  ASSERT_EQ(inventory->resources.size(), 1u);
  EXPECT_EQ(inventory->resources[0].name, "gpu5");
}

TEST_F(DiscoveryTest, ListNamingAMissingIndexSaysWhatExists) {
  FakeCommand smi = four_gpus();
  auto inventory = discover("0,5", smi.fn());
  ASSERT_FALSE(inventory.has_value());
  EXPECT_EQ(inventory.error().code, Code::kInvalidArgument);
  EXPECT_EQ(inventory.error().message,
            "--gpus 0,5: no GPU 5 on this machine; this machine has GPUs 0-3");
}

TEST_F(DiscoveryTest, ListNamingSeveralMissingIndices) {
  FakeCommand smi(exited(0,
                         "0, GPU-a, X, 1, 0\n"
                         "2, GPU-c, X, 1, 0\n"
                         "3, GPU-d, X, 1, 0\n"
                         "5, GPU-f, X, 1, 0\n"));
  auto inventory = discover("7,1,2,9", smi.fn());
  ASSERT_FALSE(inventory.has_value());
  EXPECT_EQ(inventory.error().message,
            "--gpus 7,1,2,9: no GPUs 1,7,9 on this machine; this machine has GPUs 0,2-3,5");
}

TEST_F(DiscoveryTest, ListWithoutNvidiaSmiIsAnError) {
  FakeCommand smi = not_installed();
  auto inventory = discover("0,1", smi.fn());
  ASSERT_FALSE(inventory.has_value());
  EXPECT_EQ(inventory.error().code, Code::kInvalidArgument);
  EXPECT_NE(inventory.error().message.find("--gpus 0,1"), std::string::npos);
  EXPECT_NE(inventory.error().message.find("nvidia-smi: not found"), std::string::npos);
}

TEST_F(DiscoveryTest, ListWithDriverMissingIsAnError) {
  FakeCommand smi(exited(9, read_testdata("driver_missing.txt")));
  auto inventory = discover("0", smi.fn());
  ASSERT_FALSE(inventory.has_value());
  EXPECT_EQ(inventory.error().code, Code::kInvalidArgument);
  EXPECT_NE(inventory.error().message.find("NVIDIA driver"), std::string::npos);
}

TEST_F(DiscoveryTest, FakeWithAnOddCountLeavesTheLastGpuUnpaired) {
  FakeCommand smi = not_installed();
  auto inventory = discover("fake:3", smi.fn());
  ASSERT_TRUE(inventory.has_value()) << inventory.error().message;
  EXPECT_EQ(inventory->links, (std::vector<std::vector<int>>{{0, 104, 0}, {104, 0, 0}, {0, 0, 0}}));
}

TEST_F(DiscoveryTest, ListRestrictsTopologyToTheSelectedGpusInResourceOrder) {
  FakeCommand smi = four_gpus();
  auto inventory = discover("3,1,2", smi.fn());
  ASSERT_TRUE(inventory.has_value()) << inventory.error().message;
  ASSERT_EQ(inventory->resources.size(), 3u);
  EXPECT_EQ(inventory->resources[0].name, "gpu1");
  EXPECT_EQ(inventory->resources[2].name, "gpu3");
  // gpu1-gpu2 PHB, gpu1-gpu3 SYS, gpu2-gpu3 NV4.
  EXPECT_EQ(inventory->links,
            (std::vector<std::vector<int>>{{0, 20, 0}, {20, 0, 104}, {0, 104, 0}}));
  EXPECT_EQ(inventory->note, "3 of 4 NVIDIA GPUs (--gpus 3,1,2: 3x NVIDIA A100-SXM4-80GB)");
}

// A topology that cannot be read costs placement quality, never the daemon's start.
void expect_unknown_topology(Result<os::CommandResult> topo_answer, std::string_view reason) {
  FakeCommand smi(exited(0,
                         "0, GPU-a, NVIDIA A100-SXM4-80GB, 81920, 0\n"
                         "1, GPU-b, NVIDIA A100-SXM4-80GB, 81920, 0\n"),
                  std::move(topo_answer));
  for (const char* flag : {"auto", "1"}) {
    auto inventory = discover(flag, smi.fn());
    ASSERT_TRUE(inventory.has_value()) << inventory.error().message;
    EXPECT_EQ(inventory->mode, "nvidia");
    EXPECT_FALSE(inventory->resources.empty());
    EXPECT_TRUE(inventory->links.empty());
    EXPECT_NE(inventory->note.find("; GPU topology unknown ("), std::string::npos)
        << inventory->note;
    EXPECT_NE(inventory->note.find(reason), std::string::npos) << inventory->note;
    EXPECT_NE(inventory->note.find("all GPUs count as equally connected"), std::string::npos);
    EXPECT_EQ(inventory->note.find('\n'), std::string::npos) << inventory->note;
  }
}

TEST_F(DiscoveryTest, TopologyCommandMissing) {
  expect_unknown_topology(fail(Code::kNotFound, "nvidia-smi: program not found in PATH"),
                          "nvidia-smi topo -m: nvidia-smi: program not found in PATH");
}

TEST_F(DiscoveryTest, TopologyCommandHangs) {
  os::CommandResult hung;
  hung.timed_out = true;
  hung.signal = 9;
  expect_unknown_topology(hung, "nvidia-smi topo -m: no answer within 10s");
}

TEST_F(DiscoveryTest, TopologyCommandFails) {
  expect_unknown_topology(exited(3, "", "Unable to determine the device handle\nmore\n"),
                          "nvidia-smi topo -m failed (exit 3): Unable to determine the device "
                          "handle)");
  expect_unknown_topology(exited(6, read_testdata("topo_no_devices.txt")),
                          "failed (exit 6): No devices were found");
}

TEST_F(DiscoveryTest, TopologyUnreadable) {
  expect_unknown_topology(exited(0, "\tGPU0\tGPU1\nGPU0\t X \tQPI\n"),
                          "nvidia-smi topo -m output line 2: unknown connection \"QPI\"");
  expect_unknown_topology(exited(0, ""), "nvidia-smi topo -m printed nothing");
}

TEST_F(DiscoveryTest, TopologyLackingASelectedGpu) {
  expect_unknown_topology(exited(0, "\tGPU0\tCPU Affinity\nGPU0\t X \t0-7\n"),
                          "no row for GPU1 (its matrix has 1 GPU)");
}

TEST_F(DiscoveryTest, TopologyIsNotAskedWithoutNvidiaGpus) {
  FakeCommand smi(exited(6, read_testdata("no_devices.txt")),
                  exited(0, read_testdata("topo_h100x8.txt")));
  expect_lane(discover("auto", smi.fn()), "No devices were found");
  EXPECT_EQ(smi.calls().size(), 1u);
}

}  // namespace
}  // namespace gpuq::gpu
