// SPDX-License-Identifier: Apache-2.0
#include "gpu/smi_probe.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gpu/nvidia_smi.h"
#include "gpu/testdata.h"
#include "os/stuck_helpers.h"

namespace gpuq::gpu {
namespace {

using testing::read_testdata;

using testing::exited;

// Answers the compute-apps query with `apps` and the GPU query with `gpus`.
class FakeCommand : public testing::FakeCommand {
 public:
  FakeCommand(Result<os::CommandResult> gpus, Result<os::CommandResult> apps)
      : testing::FakeCommand(std::move(gpus), std::string(kSmiProbeAppsQuery), std::move(apps)) {}
};

// Answers the GPU query with the recorded H100 box and the compute-apps query with `apps`.
FakeCommand eight_h100(Result<os::CommandResult> apps) {
  return FakeCommand(exited(0, read_testdata("probe_h100x8_gpus.txt")), std::move(apps));
}

class SmiProbeTest : public ::testing::Test {
 protected:
  void SetUp() override { ::unsetenv("GPUQ_NVIDIA_SMI"); }
  void TearDown() override { ::unsetenv("GPUQ_NVIDIA_SMI"); }
};

void expect_corrupt(const Error& error, std::string_view needle) {
  EXPECT_EQ(error.code, Code::kCorruption);
  EXPECT_NE(error.message.find(needle), std::string::npos) << error.message;
}

TEST(ParseSmiProbeTest, GpuQueryOfAnEightH100Box) {
  auto rows = parse_smi_probe_gpus(read_testdata("probe_h100x8_gpus.txt"));
  ASSERT_TRUE(rows.has_value()) << rows.error().message;
  ASSERT_EQ(rows->size(), 8u);
  EXPECT_EQ((*rows)[0].index, 0);
  EXPECT_EQ((*rows)[0].uuid, "GPU-5c3a8f2e-1b4d-7e90-a2c6-3f8d9e1b4a70");
  EXPECT_EQ((*rows)[0].memory_used_mib, 1);
  EXPECT_EQ((*rows)[0].utilization, 0);
  EXPECT_EQ((*rows)[2].memory_used_mib, 74213);
  EXPECT_EQ((*rows)[2].utilization, 100);
  EXPECT_EQ((*rows)[4].memory_used_mib, 18437);
  EXPECT_EQ((*rows)[4].utilization, 41);
  EXPECT_EQ((*rows)[0].temperature_c, 31);
  EXPECT_EQ((*rows)[0].power_w, 71.82);
  EXPECT_EQ((*rows)[2].temperature_c, 67);
  EXPECT_EQ((*rows)[2].power_w, 612.35);
}

TEST(ParseSmiProbeTest, ComputeAppsOfAnEightH100Box) {
  auto apps = parse_smi_compute_apps(read_testdata("probe_h100x8_apps.txt"));
  ASSERT_TRUE(apps.has_value()) << apps.error().message;
  ASSERT_EQ(apps->size(), 4u);
  EXPECT_EQ((*apps)[0].gpu_uuid, "GPU-1f7d4a93-c8e2-4b56-9d30-a7e1c5f82b04");
  EXPECT_EQ((*apps)[0].pid, 48211);
  EXPECT_EQ((*apps)[0].used_memory_mib, 74202);
  EXPECT_EQ((*apps)[3].pid, 51902);
  EXPECT_EQ((*apps)[3].line, 4);
}

TEST(ParseSmiProbeTest, UnavailableValuesAndCrlf) {
  auto rows = parse_smi_probe_gpus(read_testdata("probe_rtx4090x2_na_gpus.txt"));
  ASSERT_TRUE(rows.has_value()) << rows.error().message;
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].memory_used_mib, 0);  // [N/A]
  EXPECT_EQ((*rows)[0].utilization, -1);     // [Not Supported]
  EXPECT_EQ((*rows)[1].uuid, "GPU-c41f8d26-a9e3-7b05-d2c8-6f1e4a9b7d30");
  EXPECT_EQ((*rows)[1].utilization, 7);
  EXPECT_EQ((*rows)[0].temperature_c, -1);  // [N/A]
  EXPECT_EQ((*rows)[0].power_w, -1);
  EXPECT_EQ((*rows)[1].temperature_c, 44);
  EXPECT_EQ((*rows)[1].power_w, -1);        // [Not Supported]
  auto apps = parse_smi_compute_apps(read_testdata("probe_rtx4090x2_na_apps.txt"));
  ASSERT_TRUE(apps.has_value()) << apps.error().message;
  ASSERT_EQ(apps->size(), 2u);
  EXPECT_EQ((*apps)[0].pid, 7731);
  EXPECT_EQ((*apps)[0].used_memory_mib, 0);  // [N/A]
  EXPECT_EQ((*apps)[1].used_memory_mib, 2048);
}

TEST(ParseSmiProbeTest, EmptyOutputIsNoProcess) {
  auto apps = parse_smi_compute_apps(read_testdata("probe_apps_empty.txt"));
  ASSERT_TRUE(apps.has_value()) << apps.error().message;
  EXPECT_TRUE(apps->empty());
  apps = parse_smi_compute_apps("No running processes found\n");
  ASSERT_TRUE(apps.has_value()) << apps.error().message;
  EXPECT_TRUE(apps->empty());
}

TEST(ParseSmiProbeTest, UnreadableGpuLinesAreCorruption) {
  auto rows = parse_smi_probe_gpus("0, GPU-a, 1, 0, 30, 60\n1, GPU-b, 12, 0\n");
  ASSERT_FALSE(rows.has_value());
  expect_corrupt(rows.error(), "line 2: not 6 comma-separated columns: \"1, GPU-b, 12, 0\"");
  rows = parse_smi_probe_gpus("0, GPU-a, 1, 120, 30, 60\n");
  ASSERT_FALSE(rows.has_value());
  expect_corrupt(rows.error(), "line 1: bad utilization.gpu");
  rows = parse_smi_probe_gpus("0, GPU-a, lots, 0, 30, 60\n");
  ASSERT_FALSE(rows.has_value());
  expect_corrupt(rows.error(), "bad memory.used");
  rows = parse_smi_probe_gpus("0, GPU-a, 1, 0, -4, 60\n");
  ASSERT_FALSE(rows.has_value());
  expect_corrupt(rows.error(), "line 1: bad temperature.gpu");
  rows = parse_smi_probe_gpus("0, GPU-a, 1, 0, 30, 60 W\n");
  ASSERT_FALSE(rows.has_value());
  expect_corrupt(rows.error(), "line 1: bad power.draw: \"0, GPU-a, 1, 0, 30, 60 W\" (expected "
                               "\"index, uuid, memory.used MiB, utilization.gpu %, temperature.gpu "
                               "C, power.draw W\")");
  rows = parse_smi_probe_gpus("0, GPU-a, 1, 0, 30, 60\n0, GPU-b, 1, 0, 30, 60\n");
  ASSERT_FALSE(rows.has_value());
  expect_corrupt(rows.error(), "line 2: duplicate GPU index");
  rows = parse_smi_probe_gpus("0, GPU-a, 1, 0, 30, 60\n1, GPU-a, 1, 0, 30, 60\n");
  ASSERT_FALSE(rows.has_value());
  expect_corrupt(rows.error(), "line 2: duplicate GPU UUID");
}

TEST(ParseSmiProbeTest, UnreadableProcessLinesAreCorruption) {
  auto apps = parse_smi_compute_apps("GPU-a, python, 100\n");
  ASSERT_FALSE(apps.has_value());
  expect_corrupt(apps.error(), "line 1: bad pid: \"GPU-a, python, 100\"");
  apps = parse_smi_compute_apps("GPU-a, 12, 100, extra\n");
  ASSERT_FALSE(apps.has_value());
  expect_corrupt(apps.error(), "not 3 comma-separated columns");
  apps = parse_smi_compute_apps("GPU-a, 12, -5\n");
  ASSERT_FALSE(apps.has_value());
  expect_corrupt(apps.error(), "bad used_memory");
}

TEST(MergeSmiProbeTest, ProcessesLandOnTheirGpus) {
  auto rows = parse_smi_probe_gpus(read_testdata("probe_h100x8_gpus.txt"));
  auto apps = parse_smi_compute_apps(read_testdata("probe_h100x8_apps.txt"));
  ASSERT_TRUE(rows && apps);
  auto sample = merge_smi_probe(*rows, *apps);
  ASSERT_TRUE(sample.has_value()) << sample.error().message;
  ASSERT_EQ(sample->gpus.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(sample->gpus[i].index, i);
  ASSERT_EQ(sample->gpus[2].processes.size(), 1u);
  EXPECT_EQ(sample->gpus[2].processes[0].pid, 48211);
  ASSERT_EQ(sample->gpus[3].processes.size(), 1u);
  EXPECT_EQ(sample->gpus[3].processes[0].pid, 48212);
  ASSERT_EQ(sample->gpus[4].processes.size(), 2u);
  EXPECT_EQ(sample->gpus[4].processes[0].pid, 51877);
  EXPECT_EQ(sample->gpus[4].processes[0].used_memory_mib, 12210);
  EXPECT_EQ(sample->gpus[4].processes[1].pid, 51902);
  EXPECT_EQ(sample->gpus[4].processes[1].used_memory_mib, 6216);
  EXPECT_EQ(sample->gpus[4].memory_used_mib, 18437);
  EXPECT_EQ(sample->gpus[4].utilization, 41);
  EXPECT_EQ(sample->gpus[4].temperature_c, 52);
  EXPECT_EQ(sample->gpus[4].power_w, 301.9);
  for (int i : {0, 1, 5, 6, 7}) EXPECT_TRUE(sample->gpus[i].processes.empty()) << i;
}

TEST(MergeSmiProbeTest, OrdersGpusByIndex) {
  auto rows = parse_smi_probe_gpus("3, GPU-d, 5, 1, 30, 60\n1, GPU-b, 7, 2, 30, 60\n");
  ASSERT_TRUE(rows.has_value()) << rows.error().message;
  auto sample = merge_smi_probe(*rows, {});
  ASSERT_TRUE(sample.has_value());
  ASSERT_EQ(sample->gpus.size(), 2u);
  EXPECT_EQ(sample->gpus[0].index, 1);
  EXPECT_EQ(sample->gpus[0].memory_used_mib, 7);
  EXPECT_EQ(sample->gpus[1].index, 3);
}

TEST(MergeSmiProbeTest, AProcessOnAnUnlistedGpuIsCorruption) {
  auto rows = parse_smi_probe_gpus(read_testdata("probe_h100x8_gpus.txt"));
  auto apps = parse_smi_compute_apps(read_testdata("probe_apps_foreign_gpu.txt"));
  ASSERT_TRUE(rows && apps);
  auto sample = merge_smi_probe(*rows, *apps);
  ASSERT_FALSE(sample.has_value());
  expect_corrupt(sample.error(),
                 "--query-compute-apps output line 2: process 60001 is on GPU "
                 "GPU-00000000-dead-beef-0000-000000000000, which nvidia-smi --query-gpu does "
                 "not list");
}

TEST_F(SmiProbeTest, RunsBothQueriesWithTheTimeoutAndJoinsThem) {
  ::setenv("GPUQ_NVIDIA_SMI", "/opt/nvidia/bin/nvidia-smi", 1);
  FakeCommand command = eight_h100(exited(0, read_testdata("probe_h100x8_apps.txt")));
  auto probe = make_smi_probe(command.fn());
  EXPECT_EQ(probe->name(), "nvidia-smi");
  auto sample = probe->sample();
  ASSERT_TRUE(sample.has_value()) << sample.error().message;
  ASSERT_EQ(sample->gpus.size(), 8u);
  EXPECT_EQ(sample->gpus[4].processes.size(), 2u);
  std::vector<std::vector<std::string>> expected = {
      {"/opt/nvidia/bin/nvidia-smi",
       "--query-gpu=index,uuid,memory.used,utilization.gpu,temperature.gpu,power.draw", "--format=csv,noheader,nounits"},
      {"/opt/nvidia/bin/nvidia-smi", "--query-compute-apps=gpu_uuid,pid,used_memory",
       "--format=csv,noheader,nounits"}};
  EXPECT_EQ(command.calls(), expected);
  EXPECT_EQ(command.timeouts(), (std::vector<Millis>{kNvidiaSmiTimeout, kNvidiaSmiTimeout}));
}

TEST_F(SmiProbeTest, NoProcessesAtAll) {
  FakeCommand command = eight_h100(exited(0, ""));
  auto sample = make_smi_probe(command.fn())->sample();
  ASSERT_TRUE(sample.has_value()) << sample.error().message;
  ASSERT_EQ(sample->gpus.size(), 8u);
  for (const GpuSample& gpu : sample->gpus) EXPECT_TRUE(gpu.processes.empty());
}

TEST_F(SmiProbeTest, ATimeoutIsUnavailable) {
  os::CommandResult hung;
  hung.timed_out = true;
  FakeCommand command(hung, exited(0, ""));
  auto sample = make_smi_probe(command.fn())->sample();
  ASSERT_FALSE(sample.has_value());
  EXPECT_EQ(sample.error().code, Code::kUnavailable);
  EXPECT_EQ(sample.error().message,
            "nvidia-smi --query-gpu=index,uuid,memory.used,utilization.gpu,temperature.gpu,"
            "power.draw: no answer within 10s");
  EXPECT_EQ(command.calls().size(), 1u);  // the second query is not tried
}

TEST_F(SmiProbeTest, ANvidiaSmiThatSigkillCannotEndIsCalledStuck) {
  os::CommandResult hung;
  hung.timed_out = true;
  hung.stuck = true;
  FakeCommand command(hung, exited(0, ""));
  auto sample = make_smi_probe(command.fn())->sample();
  ASSERT_FALSE(sample.has_value());
  EXPECT_EQ(sample.error().code, Code::kUnavailable);
  EXPECT_EQ(sample.error().message,
            "nvidia-smi --query-gpu=index,uuid,memory.used,utilization.gpu,temperature.gpu,"
            "power.draw: no answer within 10s, "
            "and SIGKILL did not end it: it is stuck in the kernel (a wedged driver?)");
}

// With the real run_command: once os::kMaxStuckHelpers helpers are stuck, a sample fails at
// once, naming them, and nvidia-smi is not started; when one ends, sampling works again.
TEST_F(SmiProbeTest, WhileHelpersAreStuckASampleFailsWithoutStartingNvidiaSmi) {
  namespace fs = std::filesystem;
  std::string pattern = (fs::temp_directory_path() / "gpuq-smi-XXXXXX").string();
  std::string dir = ::mkdtemp(pattern.data());
  std::string starts = dir + "/starts";
  std::string smi = dir + "/nvidia-smi";
  std::ofstream(smi) << "#!/bin/sh\necho started >> '" << starts << "'\n"
                     << "case \"$1\" in --query-gpu=*) echo '0, GPU-aaa, 10, 5, 40, 120.5';; esac\n";
  ::chmod(smi.c_str(), 0755);
  ::setenv("GPUQ_NVIDIA_SMI", smi.c_str(), 1);
  auto probe = make_smi_probe();
  auto before = probe->sample();
  ASSERT_TRUE(before) << before.error().message;
  ASSERT_EQ(before->gpus.size(), 1u);

  os::testing::StuckHelperGate gate;
  auto filled = gate.fill();
  ASSERT_TRUE(filled) << filled.error().message;
  const std::vector<pid_t>& stuck = *filled;
  fs::remove(starts);
  auto refused = probe->sample();
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, Code::kUnavailable);
  const std::string& message = refused.error().message;
  EXPECT_TRUE(message.starts_with(smi + " --query-gpu=")) << message;
  EXPECT_NE(message.find("4 helper commands are stuck in the kernel"), std::string::npos) << message;
  for (pid_t pid : stuck) EXPECT_NE(message.find("pid " + std::to_string(pid)), std::string::npos);
  EXPECT_FALSE(fs::exists(starts)) << "nvidia-smi was started";

  ASSERT_TRUE(gate.release(stuck.front()));
  auto after = probe->sample();
  EXPECT_TRUE(after) << after.error().message;
  EXPECT_TRUE(fs::exists(starts));
  fs::remove_all(dir);
}

TEST_F(SmiProbeTest, AFailureQuotesTheFirstLineOfStderr) {
  FakeCommand command =
      eight_h100(exited(15, "",
                        "\nUnable to determine the device handle for GPU0000:3B:00.0: Unknown "
                        "Error\nsecond line\n"));
  auto sample = make_smi_probe(command.fn())->sample();
  ASSERT_FALSE(sample.has_value());
  EXPECT_EQ(sample.error().code, Code::kUnavailable);
  EXPECT_EQ(sample.error().message,
            "nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory failed (exit 15): Unable "
            "to determine the device handle for GPU0000:3B:00.0: Unknown Error");
}

TEST_F(SmiProbeTest, AFailureWithNothingOnStderrQuotesStdout) {
  FakeCommand command(exited(9, read_testdata("driver_missing.txt")), exited(0, ""));
  auto sample = make_smi_probe(command.fn())->sample();
  ASSERT_FALSE(sample.has_value());
  EXPECT_EQ(sample.error().code, Code::kUnavailable);
  EXPECT_NE(sample.error().message.find("failed (exit 9): NVIDIA-SMI has failed"),
            std::string::npos)
      << sample.error().message;
}

TEST_F(SmiProbeTest, AKilledNvidiaSmiIsUnavailable) {
  os::CommandResult killed;
  killed.signal = 9;
  FakeCommand command(killed, exited(0, ""));
  auto sample = make_smi_probe(command.fn())->sample();
  ASSERT_FALSE(sample.has_value());
  EXPECT_NE(sample.error().message.find("failed (killed by signal 9): no output"),
            std::string::npos)
      << sample.error().message;
}

TEST_F(SmiProbeTest, AMissingNvidiaSmiIsUnavailable) {
  FakeCommand command(fail(Code::kNotFound, "nvidia-smi: program not found in PATH"),
                      exited(0, ""));
  auto sample = make_smi_probe(command.fn())->sample();
  ASSERT_FALSE(sample.has_value());
  EXPECT_EQ(sample.error().code, Code::kUnavailable);
  EXPECT_EQ(sample.error().message,
            "nvidia-smi --query-gpu=index,uuid,memory.used,utilization.gpu,temperature.gpu,"
            "power.draw: nvidia-smi: program "
            "not found in PATH");
}

TEST_F(SmiProbeTest, UnreadableOutputIsCorruption) {
  FakeCommand command = eight_h100(exited(0, read_testdata("probe_apps_foreign_gpu.txt")));
  auto sample = make_smi_probe(command.fn())->sample();
  ASSERT_FALSE(sample.has_value());
  expect_corrupt(sample.error(), "process 60001");
}

}  // namespace
}  // namespace gpuq::gpu
