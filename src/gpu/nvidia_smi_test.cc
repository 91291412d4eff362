// SPDX-License-Identifier: Apache-2.0
#include "gpu/nvidia_smi.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "gpu/testdata.h"

namespace gpuq::gpu {
namespace {

using testing::read_testdata;

TEST(ParseNvidiaSmiTest, EightH100Box) {
  auto gpus = parse_nvidia_smi_gpus(read_testdata("h100x8.txt"));
  ASSERT_TRUE(gpus.has_value()) << gpus.error().message;
  ASSERT_EQ(gpus->size(), 8u);
  for (int i = 0; i < 8; ++i) {
    const Resource& gpu = (*gpus)[i];
    EXPECT_EQ(gpu.name, "gpu" + std::to_string(i));
    EXPECT_EQ(gpu.index, i);
    EXPECT_EQ(gpu.model, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(gpu.memory_total_mib, 81559);
  }
  EXPECT_EQ((*gpus)[0].uuid, "GPU-5c3a8f2e-1b4d-7e90-a2c6-3f8d9e1b4a70");
  EXPECT_EQ((*gpus)[0].memory_used_mib, 1);
  EXPECT_EQ((*gpus)[2].memory_used_mib, 74213);
}

TEST(ParseNvidiaSmiTest, ConsumerBoxWithUnavailableUsedMemoryAndCrlf) {
  auto gpus = parse_nvidia_smi_gpus(read_testdata("rtx4090x2_na.txt"));
  ASSERT_TRUE(gpus.has_value()) << gpus.error().message;
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[1].name, "gpu1");
  EXPECT_EQ((*gpus)[1].model, "NVIDIA GeForce RTX 4090");
  EXPECT_EQ((*gpus)[1].uuid, "GPU-c41f8d26-a9e3-7b05-d2c8-6f1e4a9b7d30");
  EXPECT_EQ((*gpus)[1].memory_total_mib, 24564);
  EXPECT_EQ((*gpus)[1].memory_used_mib, 0);
}

TEST(ParseNvidiaSmiTest, CrlfTrailingSpaceAndBlankLines) {
  auto gpus = parse_nvidia_smi_gpus(
      "\r\n  0, GPU-a, NVIDIA A100-SXM4-80GB, 81920, 5  \r\n\r\n\t\n"
      "1, GPU-b, NVIDIA RTX A6000, 49140, [Not Supported]\r\n");
  ASSERT_TRUE(gpus.has_value()) << gpus.error().message;
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[0].model, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ((*gpus)[0].memory_used_mib, 5);
  EXPECT_EQ((*gpus)[1].uuid, "GPU-b");
  EXPECT_EQ((*gpus)[1].memory_used_mib, 0);
}

TEST(ParseNvidiaSmiTest, NameWithCommaKeepsMemoryColumns) {
  auto gpus = parse_nvidia_smi_gpus("3, GPU-c, Some Vendor, Board X, 16384, 12\n");
  ASSERT_TRUE(gpus.has_value()) << gpus.error().message;
  ASSERT_EQ(gpus->size(), 1u);
  EXPECT_EQ((*gpus)[0].name, "gpu3");
  EXPECT_EQ((*gpus)[0].model, "Some Vendor, Board X");
  EXPECT_EQ((*gpus)[0].memory_total_mib, 16384);
  EXPECT_EQ((*gpus)[0].memory_used_mib, 12);
}

TEST(ParseNvidiaSmiTest, EmptyOutputIsNoGpus) {
  auto gpus = parse_nvidia_smi_gpus(" \n\r\n");
  ASSERT_TRUE(gpus.has_value()) << gpus.error().message;
  EXPECT_TRUE(gpus->empty());
}

TEST(ParseNvidiaSmiTest, GarbageLineIsCorruptionQuotingLine) {
  auto gpus = parse_nvidia_smi_gpus(read_testdata("garbage_line.txt"));
  ASSERT_FALSE(gpus.has_value());
  EXPECT_EQ(gpus.error().code, Code::kCorruption);
  EXPECT_NE(gpus.error().message.find("line 2"), std::string::npos) << gpus.error().message;
  EXPECT_NE(gpus.error().message.find("Unable to determine the device handle"), std::string::npos)
      << gpus.error().message;
}

TEST(ParseNvidiaSmiTest, DriverMissingTextIsNotAGpuList) {
  auto gpus = parse_nvidia_smi_gpus(read_testdata("driver_missing.txt"));
  ASSERT_FALSE(gpus.has_value());
  EXPECT_EQ(gpus.error().code, Code::kCorruption);
  EXPECT_NE(gpus.error().message.find("line 1"), std::string::npos);
}

TEST(ParseNvidiaSmiTest, RejectsBadFields) {
  for (const char* line : {
           "x, GPU-a, NVIDIA H100, 81559, 1",      // index not a number
           "-1, GPU-a, NVIDIA H100, 81559, 1",     // negative index
           "0, , NVIDIA H100, 81559, 1",           // no uuid
           "0, GPU-a, , 81559, 1",                 // no name
           "0, GPU-a, NVIDIA H100, 81559 MiB, 1",  // units where none were asked for
           "0, GPU-a, NVIDIA H100, 81559, [Unknown Error]",
           "0, GPU-a, NVIDIA H100, 81559",  // a column short
           "0, GPU-a, NVIDIA H100",
       }) {
    auto gpus = parse_nvidia_smi_gpus(line);
    ASSERT_FALSE(gpus.has_value()) << line;
    EXPECT_EQ(gpus.error().code, Code::kCorruption) << line;
    EXPECT_NE(gpus.error().message.find(line), std::string::npos) << gpus.error().message;
  }
}

TEST(ParseNvidiaSmiTest, DuplicateIndexIsCorruption) {
  auto gpus = parse_nvidia_smi_gpus("0, GPU-a, X, 1, 0\n0, GPU-b, X, 1, 0\n");
  ASSERT_FALSE(gpus.has_value());
  EXPECT_EQ(gpus.error().code, Code::kCorruption);
  EXPECT_NE(gpus.error().message.find("line 2"), std::string::npos);
}

TEST(NvidiaSmiTextTest, RecognisesDriverMissing) {
  EXPECT_TRUE(is_driver_missing_text(read_testdata("driver_missing.txt")));
  EXPECT_TRUE(is_driver_missing_text(read_testdata("version_mismatch.txt")));
  EXPECT_TRUE(
      is_driver_missing_text("NVIDIA-SMI couldn't find libnvidia-ml.so library in your "
                             "system. NVML Shared Library Not Found"));
  EXPECT_FALSE(is_driver_missing_text(read_testdata("h100x8.txt")));
  EXPECT_FALSE(is_driver_missing_text(read_testdata("no_devices.txt")));
}

TEST(NvidiaSmiTextTest, RecognisesNoDevices) {
  EXPECT_TRUE(is_no_devices_text(read_testdata("no_devices.txt")));
  EXPECT_FALSE(is_no_devices_text(read_testdata("driver_missing.txt")));
  EXPECT_FALSE(is_no_devices_text(read_testdata("rtx4090x2_na.txt")));
}

TEST(NvidiaSmiTextTest, FirstLineSkipsBlankLines) {
  EXPECT_EQ(first_line("\n  \r\n  No devices were found \r\nmore\n"), "No devices were found");
  EXPECT_EQ(first_line(""), "");
  EXPECT_EQ(first_line(" \n\n"), "");
}

}  // namespace
}  // namespace gpuq::gpu
