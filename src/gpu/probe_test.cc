// SPDX-License-Identifier: Apache-2.0
#include "gpu/probe.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "gpu/smi_probe.h"
#include "gpu/testdata.h"

namespace gpuq::gpu {
namespace {

using testing::read_testdata;

// The inventory discovery gives for `flag`, without any nvidia-smi.
Inventory inventory_for(std::string_view flag) {
  auto inventory = discover(flag, [](const std::vector<std::string>&, Millis) {
    return Result<os::CommandResult>(fail(Code::kNotFound, "nvidia-smi: not found"));
  });
  EXPECT_TRUE(inventory.has_value()) << inventory.error().message;
  return inventory ? *inventory : Inventory{};
}

Inventory nvidia_inventory() {
  Inventory inventory;
  inventory.mode = "nvidia";
  return inventory;
}

// Answers the smi probe's two queries from recorded outputs and counts the calls.
struct RecordedSmi {
  int calls = 0;
  CommandFn fn() {
    return [this](const std::vector<std::string>& argv, Millis) -> Result<os::CommandResult> {
      ++calls;
      os::CommandResult result;
      result.exit_code = 0;
      result.out = read_testdata(argv.at(1) == kSmiProbeAppsQuery ? "probe_h100x8_apps.txt"
                                                                  : "probe_h100x8_gpus.txt");
      return result;
    };
  }
};

class MakeProbeTest : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    ::unsetenv("GPUQ_NVML_LIBRARY");
    ::unsetenv("GPUQ_FAKE_GPU_STATE");
    ::unsetenv("GPUQ_NVIDIA_SMI");
  }
};

TEST_F(MakeProbeTest, NvidiaPrefersNvmlWhenItLoads) {
  ::setenv("GPUQ_NVML_LIBRARY", GPUQ_FAKE_NVML, 1);
  RecordedSmi smi;
  ProbeChoice choice = choose_probe(nvidia_inventory(), smi.fn());
  ASSERT_NE(choice.probe, nullptr);
  EXPECT_EQ(choice.probe->name(), "nvml");
  EXPECT_EQ(choice.note, std::string("nvml (") + GPUQ_FAKE_NVML + ")");
  auto sample = choice.probe->sample();
  ASSERT_TRUE(sample.has_value()) << sample.error().message;
  EXPECT_EQ(sample->gpus.size(), 2u);  // the fake library's two GPUs
  EXPECT_EQ(smi.calls, 0);
}

TEST_F(MakeProbeTest, NvidiaFallsBackToNvidiaSmiWithoutNvml) {
  ::setenv("GPUQ_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  RecordedSmi smi;
  ProbeChoice choice = choose_probe(nvidia_inventory(), smi.fn());
  ASSERT_NE(choice.probe, nullptr);
  EXPECT_EQ(choice.probe->name(), "nvidia-smi");
  EXPECT_EQ(choice.note.rfind("nvidia-smi (NVML unavailable: cannot load "
                              "/nonexistent/libnvidia-ml.so.1: ",
                              0),
            0u)
      << choice.note;
  auto sample = choice.probe->sample();
  ASSERT_TRUE(sample.has_value()) << sample.error().message;
  EXPECT_EQ(sample->gpus.size(), 8u);
  EXPECT_EQ(sample->gpus[4].processes.size(), 2u);
  EXPECT_EQ(smi.calls, 2);
}

TEST_F(MakeProbeTest, FakeCoversTheInventorysSimulatedGpus) {
  auto probe = make_probe(inventory_for("fake:3"));
  ASSERT_NE(probe, nullptr);
  EXPECT_EQ(probe->name(), "fake");
  auto sample = probe->sample();
  ASSERT_TRUE(sample.has_value()) << sample.error().message;
  ASSERT_EQ(sample->gpus.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(sample->gpus[i].index, i);
    EXPECT_EQ(sample->gpus[i].utilization, 0);
  }
}

TEST_F(MakeProbeTest, LaneAndNoneProbeNothing) {
  for (std::string_view flag : {"auto", "none"}) {  // auto without nvidia-smi: the lane
    Inventory inventory = inventory_for(flag);
    EXPECT_EQ(inventory.mode, flag == "auto" ? "lane" : "none");
    ProbeChoice choice = choose_probe(inventory);
    ASSERT_NE(choice.probe, nullptr);
    EXPECT_EQ(choice.probe->name(), "none");
    EXPECT_NE(choice.note.find(inventory.mode), std::string::npos) << choice.note;
    auto sample = choice.probe->sample();
    ASSERT_TRUE(sample.has_value()) << sample.error().message;
    EXPECT_TRUE(sample->gpus.empty());
  }
  auto probe = make_none_probe();
  EXPECT_EQ(probe->name(), "none");
  auto sample = probe->sample();
  ASSERT_TRUE(sample.has_value());
  EXPECT_TRUE(sample->gpus.empty());
}

}  // namespace
}  // namespace gpuq::gpu
