// SPDX-License-Identifier: Apache-2.0
// Test support for the gpu module's tests: reads a recorded nvidia-smi output from testdata/
// (GPUQ_GPU_TESTDATA is set by CMake for the gpu tests), and stands in for os::run_command
// with canned answers. Not part of gpuq_gpu. One thread.
#pragma once

#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/discovery.h"

namespace gpuq::gpu::testing {

inline std::string read_testdata(const std::string& name) {
  std::ifstream file(std::string(GPUQ_GPU_TESTDATA) + "/" + name, std::ios::binary);
  EXPECT_TRUE(file) << "missing testdata " << name;
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

inline os::CommandResult exited(int code, std::string out, std::string err = "") {
  os::CommandResult result;
  result.exit_code = code;
  result.out = std::move(out);
  result.err = std::move(err);
  return result;
}

// Stands in for os::run_command: answers a call whose first argument is `special_arg` (e.g.
// "topo") with one canned result and every other call with another, and records what it was
// asked to run.
class FakeCommand {
 public:
  FakeCommand(Result<os::CommandResult> answer, std::string special_arg,
              Result<os::CommandResult> special_answer)
      : answer_(std::move(answer)),
        special_arg_(std::move(special_arg)),
        special_answer_(std::move(special_answer)) {}

  CommandFn fn() {
    return [this](const std::vector<std::string>& argv, Millis timeout) {
      calls_.push_back(argv);
      timeouts_.push_back(timeout);
      return argv.size() > 1 && argv[1] == special_arg_ ? special_answer_ : answer_;
    };
  }
  const std::vector<std::vector<std::string>>& calls() const { return calls_; }
  const std::vector<Millis>& timeouts() const { return timeouts_; }

 private:
  Result<os::CommandResult> answer_;
  std::string special_arg_;
  Result<os::CommandResult> special_answer_;
  std::vector<std::vector<std::string>> calls_;
  std::vector<Millis> timeouts_;
};

}  // namespace gpuq::gpu::testing
