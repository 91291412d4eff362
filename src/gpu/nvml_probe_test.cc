// SPDX-License-Identifier: Apache-2.0
#include "gpu/nvml_probe.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace gpuq::gpu {
namespace {

// Steers a fake libnvidia-ml (gpu/testing/fake_nvml.cc) by loading the same file as the probe:
// the loader shares one copy, so its controls act on what the probe sees.
class FakeNvml {
 public:
  explicit FakeNvml(const char* path) : handle_(::dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
    EXPECT_NE(handle_, nullptr) << ::dlerror();
    call<void (*)()>("fake_nvml_reset")();
  }
  FakeNvml(const FakeNvml&) = delete;
  FakeNvml& operator=(const FakeNvml&) = delete;
  ~FakeNvml() {
    if (handle_ != nullptr) ::dlclose(handle_);
  }

  void set_init_result(int result) { call<void (*)(int)>("fake_nvml_set_init_result")(result); }
  void set_memory_result(unsigned index, int result) {
    call<void (*)(unsigned, int)>("fake_nvml_set_memory_result")(index, result);
  }
  void set_processes(unsigned index, unsigned count) {
    call<void (*)(unsigned, unsigned)>("fake_nvml_set_processes")(index, count);
  }
  void set_growth(unsigned count) { call<void (*)(unsigned)>("fake_nvml_set_growth")(count); }
  int inits() { return call<int (*)()>("fake_nvml_inits")(); }
  int shutdowns() { return call<int (*)()>("fake_nvml_shutdowns")(); }
  int insufficient_answers() { return call<int (*)()>("fake_nvml_insufficient_answers")(); }
  std::string process_function() { return call<const char* (*)()>("fake_nvml_process_function")(); }

 private:
  template <class Fn>
  Fn call(const char* symbol) {
    void* address = handle_ != nullptr ? ::dlsym(handle_, symbol) : nullptr;
    if (address == nullptr) {
      ADD_FAILURE() << "fake NVML lacks " << symbol;
      std::abort();
    }
    return reinterpret_cast<Fn>(address);
  }

  void* handle_;
};

class NvmlProbeTest : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("GPUQ_NVML_LIBRARY", GPUQ_FAKE_NVML, 1); }
  void TearDown() override { ::unsetenv("GPUQ_NVML_LIBRARY"); }

  FakeNvml fake_{GPUQ_FAKE_NVML};
};

std::unique_ptr<GpuProbe> open_or_fail() {
  auto probe = open_nvml_probe();
  EXPECT_TRUE(probe.has_value()) << probe.error().message;
  return probe ? std::move(*probe) : nullptr;
}

void expect_canned(const ProbeSample& sample) {
  ASSERT_EQ(sample.gpus.size(), 2u);
  const GpuSample& first = sample.gpus[0];
  EXPECT_EQ(first.index, 0);
  EXPECT_EQ(first.memory_used_mib, 20480);  // 20480.5 MiB in bytes, rounded down
  EXPECT_EQ(first.utilization, 37);
  EXPECT_EQ(first.temperature_c, 64);
  EXPECT_EQ(first.power_w, 287.5);  // 287500 mW
  ASSERT_EQ(first.processes.size(), 2u);
  EXPECT_EQ(first.processes[0].pid, 4242);
  EXPECT_EQ(first.processes[0].used_memory_mib, 12288);
  EXPECT_EQ(first.processes[1].pid, 4343);
  EXPECT_EQ(first.processes[1].used_memory_mib, 0);  // NVML_VALUE_NOT_AVAILABLE
  const GpuSample& second = sample.gpus[1];
  EXPECT_EQ(second.index, 1);
  EXPECT_EQ(second.memory_used_mib, 1);
  EXPECT_EQ(second.utilization, -1);  // NOT_SUPPORTED
  EXPECT_EQ(second.temperature_c, -1);  // NOT_SUPPORTED: unknown, and the sample still holds
  EXPECT_EQ(second.power_w, -1);
  EXPECT_TRUE(second.processes.empty());
}

TEST_F(NvmlProbeTest, SamplesMemoryUtilisationSensorsAndProcesses) {
  auto probe = open_or_fail();
  ASSERT_NE(probe, nullptr);
  EXPECT_EQ(probe->name(), "nvml");
  auto sample = probe->sample();
  ASSERT_TRUE(sample.has_value()) << sample.error().message;
  expect_canned(*sample);
  // GPU 0's list was sized through INSUFFICIENT_SIZE; GPU 1 (none) needed no second call.
  EXPECT_EQ(fake_.insufficient_answers(), 1);
  // _v2, not _v3: the fake's _v3 writes R535's longer struct, which would misread pid 4343.
  EXPECT_EQ(fake_.process_function(), "nvmlDeviceGetComputeRunningProcesses_v2");
  auto again = probe->sample();
  ASSERT_TRUE(again.has_value()) << again.error().message;
  expect_canned(*again);
}

TEST_F(NvmlProbeTest, InitialisesOnceAndShutsDownWhenDestroyed) {
  auto probe = open_or_fail();
  ASSERT_NE(probe, nullptr);
  EXPECT_EQ(fake_.inits(), 1);
  EXPECT_EQ(fake_.shutdowns(), 0);
  ASSERT_TRUE(probe->sample().has_value());
  probe.reset();
  EXPECT_EQ(fake_.shutdowns(), 1);
}

TEST_F(NvmlProbeTest, GrowsTheBufferForALongProcessList) {
  fake_.set_processes(1, 40);
  auto probe = open_or_fail();
  ASSERT_NE(probe, nullptr);
  auto sample = probe->sample();
  ASSERT_TRUE(sample.has_value()) << sample.error().message;
  const GpuSample& gpu = sample->gpus.at(1);
  ASSERT_EQ(gpu.processes.size(), 40u);
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(gpu.processes[i].pid, 5000 + i);
    EXPECT_EQ(gpu.processes[i].used_memory_mib, i + 1);
  }
}

TEST_F(NvmlProbeTest, ProcessesStartingBetweenTheTwoCallsAreCounted) {
  fake_.set_growth(3);  // three start right after NVML said how many there were
  auto probe = open_or_fail();
  ASSERT_NE(probe, nullptr);
  auto sample = probe->sample();
  ASSERT_TRUE(sample.has_value()) << sample.error().message;
  const GpuSample& gpu = sample->gpus.at(0);
  ASSERT_EQ(gpu.processes.size(), 5u);
  EXPECT_EQ(gpu.processes[0].pid, 4242);
  EXPECT_EQ(gpu.processes[2].pid, 9002);
  EXPECT_EQ(gpu.processes[4].pid, 9004);
  EXPECT_EQ(gpu.processes[4].used_memory_mib, 1);
}

TEST_F(NvmlProbeTest, AProcessListThatKeepsGrowingIsAnError) {
  fake_.set_growth(100);
  auto probe = open_or_fail();
  ASSERT_NE(probe, nullptr);
  auto sample = probe->sample();
  ASSERT_FALSE(sample.has_value());
  EXPECT_EQ(sample.error().code, Code::kUnavailable);
  EXPECT_NE(sample.error().message.find("nvmlDeviceGetComputeRunningProcesses_v2 for GPU 0"),
            std::string::npos)
      << sample.error().message;
  EXPECT_NE(sample.error().message.find("kept growing"), std::string::npos);
}

TEST_F(NvmlProbeTest, ALostGpuFailsTheSampleNamingFunctionGpuAndError) {
  fake_.set_memory_result(1, 15);  // NVML_ERROR_GPU_IS_LOST
  auto probe = open_or_fail();
  ASSERT_NE(probe, nullptr);
  auto sample = probe->sample();
  ASSERT_FALSE(sample.has_value());
  EXPECT_EQ(sample.error().code, Code::kUnavailable);
  EXPECT_EQ(sample.error().message,
            "nvmlDeviceGetMemoryInfo for GPU 1: GPU is lost (NVML error 15)");
}

TEST_F(NvmlProbeTest, MemoryNvmlDoesNotSupportReadsAsZero) {
  fake_.set_memory_result(0, 3);  // NOT_SUPPORTED, as on unified-memory boards
  auto probe = open_or_fail();
  ASSERT_NE(probe, nullptr);
  auto sample = probe->sample();
  ASSERT_TRUE(sample.has_value()) << sample.error().message;
  EXPECT_EQ(sample->gpus.at(0).memory_used_mib, 0);
  EXPECT_EQ(sample->gpus.at(0).processes.size(), 2u);
}

TEST_F(NvmlProbeTest, FailedInitialisationSaysWhyAndUnloads) {
  fake_.set_init_result(9);  // NVML_ERROR_DRIVER_NOT_LOADED
  auto probe = open_nvml_probe();
  ASSERT_FALSE(probe.has_value());
  EXPECT_EQ(probe.error().code, Code::kUnavailable);
  EXPECT_EQ(probe.error().message,
            std::string(GPUQ_FAKE_NVML) + ": nvmlInit_v2 failed: Driver Not Loaded (NVML error 9)");
  EXPECT_EQ(fake_.shutdowns(), 0);  // nothing to shut down
}

TEST_F(NvmlProbeTest, AMissingLibraryIsAClearError) {
  ::setenv("GPUQ_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  auto probe = open_nvml_probe();
  ASSERT_FALSE(probe.has_value());
  EXPECT_EQ(probe.error().code, Code::kUnavailable);
  const std::string& message = probe.error().message;
  EXPECT_EQ(message.rfind("cannot load /nonexistent/libnvidia-ml.so.1: ", 0), 0u) << message;
  EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
}

TEST_F(NvmlProbeTest, ALibraryThatIsNotNvmlIsRefused) {
  ::setenv("GPUQ_NVML_LIBRARY", "libm.so.6", 1);
  auto probe = open_nvml_probe();
  ASSERT_FALSE(probe.has_value());
  EXPECT_EQ(probe.error().code, Code::kUnavailable);
  EXPECT_EQ(probe.error().message, "libm.so.6: not an NVML library: it lacks nvmlInit_v2");
}

TEST_F(NvmlProbeTest, TheLibraryDefaultsToTheDriversSoname) {
  ::unsetenv("GPUQ_NVML_LIBRARY");
  EXPECT_EQ(nvml_library(), "libnvidia-ml.so.1");
  ::setenv("GPUQ_NVML_LIBRARY", "", 1);
  EXPECT_EQ(nvml_library(), "libnvidia-ml.so.1");
  ::setenv("GPUQ_NVML_LIBRARY", "/opt/nvml/libnvidia-ml.so.1", 1);
  EXPECT_EQ(nvml_library(), "/opt/nvml/libnvidia-ml.so.1");
}

TEST(NvmlProbeV1Test, AnOldLibraryWithOnlyThePlainProcessFunctionWorks) {
  FakeNvml fake(GPUQ_FAKE_NVML_V1);
  ::setenv("GPUQ_NVML_LIBRARY", GPUQ_FAKE_NVML_V1, 1);
  auto probe = open_nvml_probe();
  ::unsetenv("GPUQ_NVML_LIBRARY");
  ASSERT_TRUE(probe.has_value()) << probe.error().message;
  auto sample = (*probe)->sample();
  ASSERT_TRUE(sample.has_value()) << sample.error().message;
  expect_canned(*sample);
  EXPECT_EQ(fake.process_function(), "nvmlDeviceGetComputeRunningProcesses");
  EXPECT_EQ(fake.insufficient_answers(), 1);
}

}  // namespace
}  // namespace gpuq::gpu
