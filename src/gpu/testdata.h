// Test support for the gpu module's tests: reads a recorded nvidia-smi output from testdata/
// (GPUQ_GPU_TESTDATA is set by CMake for gpu_test). Not part of gpuq_gpu. One thread.
#pragma once

#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>

namespace gpuq::gpu::testing {

inline std::string read_testdata(const std::string& name) {
  std::ifstream file(std::string(GPUQ_GPU_TESTDATA) + "/" + name, std::ios::binary);
  EXPECT_TRUE(file) << "missing testdata " << name;
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace gpuq::gpu::testing
