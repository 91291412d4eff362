// SPDX-License-Identifier: Apache-2.0
#include "gpu/fake_probe.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace gpuq::gpu {
namespace {

namespace fs = std::filesystem;

// A temporary directory for state files; GPUQ_FAKE_GPU_STATE is unset before and after.
class FakeProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("GPUQ_FAKE_GPU_STATE");
    std::string pattern = (fs::temp_directory_path() / "gpuq-fake-probe-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    state_ = (dir_ / "state.json").string();
  }
  void TearDown() override {
    ::unsetenv("GPUQ_FAKE_GPU_STATE");
    fs::remove_all(dir_);
  }

  // Writes the state file the way tests should: a temporary file renamed over the old one.
  void write_state(const std::string& text, const std::string& path = "") {
    std::string target = path.empty() ? state_ : path;
    std::string temporary = target + ".tmp";
    {
      std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
      out << text;
    }
    fs::rename(temporary, target);
  }

  void point_at_state() { ::setenv("GPUQ_FAKE_GPU_STATE", state_.c_str(), 1); }

  fs::path dir_;
  std::string state_;
};

void expect_idle(const GpuSample& gpu, int index) {
  EXPECT_EQ(gpu.index, index);
  EXPECT_EQ(gpu.memory_used_mib, 0);
  EXPECT_EQ(gpu.utilization, 0);
  EXPECT_TRUE(gpu.processes.empty());
}

void expect_all_idle(const Result<ProbeSample>& sample, int count) {
  ASSERT_TRUE(sample.has_value()) << sample.error().message;
  ASSERT_EQ(sample->gpus.size(), static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) expect_idle(sample->gpus[i], i);
}

// The error for `text` as the state of 4 GPUs: kInvalidArgument naming the file and `needle`.
void expect_bad_state(const std::string& text, std::string_view needle) {
  auto sample = parse_fake_gpu_state(text, 4, "/run/state.json");
  ASSERT_FALSE(sample.has_value()) << text;
  EXPECT_EQ(sample.error().code, Code::kInvalidArgument);
  const std::string& message = sample.error().message;
  EXPECT_EQ(message.rfind("GPUQ_FAKE_GPU_STATE file /run/state.json: ", 0), 0u) << message;
  EXPECT_NE(message.find(needle), std::string::npos) << message;
  EXPECT_NE(message.find("write it as {\"gpus\":[{\"index\":0,"), std::string::npos) << message;
  EXPECT_NE(message.find("GPU indices 0..3"), std::string::npos) << message;
}

TEST_F(FakeProbeTest, WithoutTheVariableEveryGpuIsIdle) {
  auto probe = make_fake_probe(4);
  EXPECT_EQ(probe->name(), "fake");
  expect_all_idle(probe->sample(), 4);
}

TEST_F(FakeProbeTest, AMissingFileMeansEveryGpuIsIdle) {
  point_at_state();
  expect_all_idle(make_fake_probe(2)->sample(), 2);
}

TEST_F(FakeProbeTest, ListedGpusTakeTheFilesStateOthersStayIdle) {
  write_state(R"({"gpus":[{"index":1,"memory_used_mib":900,"utilization":0,)"
              R"("processes":[{"pid":123,"used_memory_mib":900}]}]})");
  point_at_state();
  auto sample = make_fake_probe(3)->sample();
  ASSERT_TRUE(sample.has_value()) << sample.error().message;
  ASSERT_EQ(sample->gpus.size(), 3u);
  expect_idle(sample->gpus[0], 0);
  expect_idle(sample->gpus[2], 2);
  const GpuSample& gpu = sample->gpus[1];
  EXPECT_EQ(gpu.index, 1);
  EXPECT_EQ(gpu.memory_used_mib, 900);
  EXPECT_EQ(gpu.utilization, 0);
  EXPECT_EQ(gpu.temperature_c, -1);  // not given: unknown
  EXPECT_EQ(gpu.power_w, -1);
  ASSERT_EQ(gpu.processes.size(), 1u);
  EXPECT_EQ(gpu.processes[0].pid, 123);
  EXPECT_EQ(gpu.processes[0].used_memory_mib, 900);
}

TEST_F(FakeProbeTest, TemperatureAndPowerAreReadWhenGiven) {
  write_state(R"({"gpus":[{"index":0,"temperature_c":71,"power_w":312.25},)"
              R"({"index":1,"power_w":90}]})");
  point_at_state();
  auto sample = make_fake_probe(2)->sample();
  ASSERT_TRUE(sample.has_value()) << sample.error().message;
  EXPECT_EQ(sample->gpus[0].temperature_c, 71);
  EXPECT_EQ(sample->gpus[0].power_w, 312.25);
  EXPECT_EQ(sample->gpus[1].temperature_c, -1);
  EXPECT_EQ(sample->gpus[1].power_w, 90);
}

TEST_F(FakeProbeTest, TheFileIsReadAgainAtEverySample) {
  auto probe = make_fake_probe(2);
  point_at_state();
  expect_all_idle(probe->sample(), 2);  // not there yet

  write_state(R"({"gpus":[{"index":0,"processes":[{"pid":77}]}]})");
  auto appeared = probe->sample();
  ASSERT_TRUE(appeared.has_value()) << appeared.error().message;
  ASSERT_EQ(appeared->gpus[0].processes.size(), 1u);
  EXPECT_EQ(appeared->gpus[0].processes[0].pid, 77);

  write_state(R"({"gpus":[{"index":0,"utilization":55,"processes":[{"pid":78}]}]})");
  auto changed = probe->sample();
  ASSERT_TRUE(changed.has_value()) << changed.error().message;
  EXPECT_EQ(changed->gpus[0].utilization, 55);
  ASSERT_EQ(changed->gpus[0].processes.size(), 1u);
  EXPECT_EQ(changed->gpus[0].processes[0].pid, 78);

  fs::remove(state_);
  expect_all_idle(probe->sample(), 2);  // the process left
}

TEST_F(FakeProbeTest, TheVariableIsReadAgainAtEverySample) {
  auto probe = make_fake_probe(2);
  std::string other = (dir_ / "other.json").string();
  write_state(R"({"gpus":[{"index":1,"memory_used_mib":5}]})", other);
  expect_all_idle(probe->sample(), 2);
  ::setenv("GPUQ_FAKE_GPU_STATE", other.c_str(), 1);
  auto sample = probe->sample();
  ASSERT_TRUE(sample.has_value()) << sample.error().message;
  EXPECT_EQ(sample->gpus[1].memory_used_mib, 5);
  ::unsetenv("GPUQ_FAKE_GPU_STATE");
  expect_all_idle(probe->sample(), 2);
}

TEST_F(FakeProbeTest, OnlyTheIndexIsRequired) {
  auto sample = parse_fake_gpu_state(R"({"gpus":[{"index":3},{"index":0,"utilization":-1,)"
                                     R"("processes":[{"pid":9,"used_memory_mib":0}]}]})",
                                     4, "state.json");
  ASSERT_TRUE(sample.has_value()) << sample.error().message;
  ASSERT_EQ(sample->gpus.size(), 4u);
  expect_idle(sample->gpus[3], 3);
  EXPECT_EQ(sample->gpus[0].utilization, -1);
  ASSERT_EQ(sample->gpus[0].processes.size(), 1u);
  EXPECT_EQ(sample->gpus[0].processes[0].used_memory_mib, 0);
  auto empty = parse_fake_gpu_state(R"({"gpus":[]})", 2, "state.json");
  expect_all_idle(empty, 2);
}

TEST_F(FakeProbeTest, TextThatIsNotJsonNamesTheFileAndThePosition) {
  write_state("{\"gpus\":[\n  {\"index\": 1,}\n]}");
  point_at_state();
  auto sample = make_fake_probe(2)->sample();
  ASSERT_FALSE(sample.has_value());
  EXPECT_EQ(sample.error().code, Code::kInvalidArgument);
  const std::string& message = sample.error().message;
  EXPECT_NE(message.find("GPUQ_FAKE_GPU_STATE file " + state_ + ": not valid JSON"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("line 2, column 15"), std::string::npos) << message;
  EXPECT_NE(message.find("write it as"), std::string::npos) << message;
}

// Found by fuzz/fake_gpu_state_fuzz.cc: a number too large for a double is nlohmann's
// out_of_range, not parse_error, and escaped parse_fake_gpu_state (std::terminate in the prober).
TEST_F(FakeProbeTest, ANumberTooLargeIsAnErrorNotACrash) {
  expect_bad_state(R"({"gpus":[{"index":1e400}]})", "not valid JSON");
  expect_bad_state(R"({"gpus":[{"index":1e400}]})", "number overflow parsing '1e400'");
}

// A value nested 100,000 deep overflowed the stack when its message quoted it (dump() recurses
// per level): deep text is refused before parsing, and a long wrong value is quoted in part.
TEST_F(FakeProbeTest, DeepTextIsRefusedAndLongValuesAreQuotedInPart) {
  std::string deep = R"({"gpus":[{"index":)" + std::string(100'000, '[') +
                     std::string(100'000, ']') + "}]}";
  expect_bad_state(deep, "the text nests more than 16 levels deep");
  std::string list = "[1";
  for (int i = 0; i < 10'000; ++i) list += ",1";
  auto sample = parse_fake_gpu_state(R"({"gpus":[{"index":)" + list + "]}]}", 4, "s.json");
  ASSERT_FALSE(sample.has_value());
  EXPECT_NE(sample.error().message.find("gpus[0].index is [1,1,1,"), std::string::npos);
  EXPECT_LT(sample.error().message.size(), 400u) << sample.error().message;
}

TEST_F(FakeProbeTest, WrongShapesSayWhatToFix) {
  expect_bad_state(R"({"gpus":[{"index":4}]})", "gpus[0].index is 4, outside 0..3");
  expect_bad_state(R"({"gpus":[{"index":-1}]})", "gpus[0].index is -1, outside 0..3");
  expect_bad_state(R"({"gpus":[{"memory_used_mib":1}]})", "gpus[0] has no \"index\"");
  expect_bad_state(R"({"gpus":[{"index":"1"}]})", "gpus[0].index is \"1\", not an integer");
  expect_bad_state(R"({"gpus":[{"index":0},{"index":0}]})", "gpus[1] lists GPU 0 a second time");
  expect_bad_state(R"({"gpus":[{"index":2,"memory_used_mib":-5}]})",
                   "gpus[0].memory_used_mib is -5, outside at least 0");
  expect_bad_state(R"({"gpus":[{"index":2,"utilization":101}]})",
                   "gpus[0].utilization is 101, outside -1..100");
  expect_bad_state(R"({"gpus":[{"index":2,"temperature_c":40.5}]})",
                   "gpus[0].temperature_c is 40.5, not an integer");
  expect_bad_state(R"({"gpus":[{"index":2,"power_w":"300"}]})",
                   "gpus[0].power_w is \"300\", not a number");
  expect_bad_state(R"({"gpus":[{"index":2,"power_w":-3}]})",
                   "gpus[0].power_w is -3, outside -1..1000000");
  expect_bad_state(R"({"gpus":[{"index":2,"processes":[{"pid":1.5}]}]})",
                   "gpus[0].processes[0].pid is 1.5, not an integer");
  expect_bad_state(R"({"gpus":[{"index":2,"processes":[{"pid":"123"}]}]})",
                   "gpus[0].processes[0].pid is \"123\", not an integer");
  expect_bad_state(R"({"gpus":[{"index":2,"processes":[{"pid":0}]}]})",
                   "gpus[0].processes[0].pid is 0, outside 1..");
  expect_bad_state(R"({"gpus":[{"index":2,"processes":[{"used_memory_mib":3}]}]})",
                   "gpus[0].processes[0] has no \"pid\"");
  expect_bad_state(R"({"gpus":[{"index":2,"processes":[{"pid":5,"used_memory_mib":-1}]}]})",
                   "gpus[0].processes[0].used_memory_mib is -1");
  expect_bad_state(R"({"gpus":[{"index":2,"processes":{"pid":5}}]})",
                   "gpus[0].processes is not an array");
  expect_bad_state(R"({"gpus":[{"index":2,"memory_used":5}]})",
                   "gpus[0] has an unknown key \"memory_used\"");
  expect_bad_state(R"({"gpus":[3]})", "gpus[0] is not an object");
  expect_bad_state(R"({"gpus":{"index":1}})", "\"gpus\" is not a list");
  expect_bad_state(R"({})", "there is no \"gpus\" list");
  expect_bad_state(R"([{"index":1}])", "the top level is not an object");
  expect_bad_state(R"({"gpus":[],"extra":1})", "the top level has an unknown key \"extra\"");
}

TEST_F(FakeProbeTest, AnUnreadableFileIsAnError) {
  fs::create_directory(state_);  // a directory where the file should be
  point_at_state();
  auto sample = make_fake_probe(2)->sample();
  ASSERT_FALSE(sample.has_value());
  EXPECT_EQ(sample.error().code, Code::kIoError);
  EXPECT_NE(sample.error().message.find("GPUQ_FAKE_GPU_STATE file " + state_), std::string::npos)
      << sample.error().message;
}

}  // namespace
}  // namespace gpuq::gpu
