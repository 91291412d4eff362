// SPDX-License-Identifier: Apache-2.0
// The Prober over the real nvidia-smi probe and the real run_command: when helper commands are
// stuck in the kernel up to the bound (os/stuck_helpers.h), the Prober reports the probe failed,
// naming them, and starts no nvidia-smi.
#include "daemon/prober.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>

#include "gpu/smi_probe.h"
#include "os/stuck_helpers.h"

namespace gpuq::daemon {
namespace {

namespace fs = std::filesystem;

TEST(ProberTest, ReportsTheProbeFailedWhileHelpersAreStuck) {
  std::string pattern = (fs::temp_directory_path() / "gpuq-prober-XXXXXX").string();
  std::string dir = ::mkdtemp(pattern.data());
  std::string starts = dir + "/starts";
  std::string smi = dir + "/nvidia-smi";
  std::ofstream(smi) << "#!/bin/sh\necho started >> '" << starts << "'\n";
  ::chmod(smi.c_str(), 0755);
  ::setenv("GPUQ_NVIDIA_SMI", smi.c_str(), 1);

  os::testing::StuckHelperGate gate;
  auto filled = gate.fill();
  ASSERT_TRUE(filled) << filled.error().message;
  const std::vector<pid_t>& stuck = *filled;

  std::mutex mutex;
  std::condition_variable reported;
  std::optional<Result<gpu::ProbeSample>> first;
  {
    Prober prober(gpu::make_smi_probe(), 60'000, [&](Result<gpu::ProbeSample> sample) {
      std::lock_guard lock(mutex);
      if (!first) first = std::move(sample);
      reported.notify_all();
    });
    std::unique_lock lock(mutex);
    ASSERT_TRUE(reported.wait_for(lock, std::chrono::seconds(30), [&] { return first.has_value(); }));
  }
  ASSERT_FALSE(first->has_value()) << "the probe reported a sample";
  const std::string& message = first->error().message;
  EXPECT_NE(message.find(std::to_string(os::kMaxStuckHelpers) +
                         " helper commands are stuck in the kernel"),
            std::string::npos)
      << message;
  for (pid_t pid : stuck) EXPECT_NE(message.find("pid " + std::to_string(pid)), std::string::npos);
  EXPECT_FALSE(fs::exists(starts)) << "nvidia-smi was started";
  ::unsetenv("GPUQ_NVIDIA_SMI");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuq::daemon
