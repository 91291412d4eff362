// SPDX-License-Identifier: Apache-2.0
// Which lines the light client runs itself, and where it looks for gpuqd (cli/light_client.h).
#include "cli/light_client.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace gpuq::cli {
namespace {

namespace fs = std::filesystem;

TEST(LightClient, ServesTheClientCommandsAndNothingThatNeedsTheFullBinary) {
  for (const char* command : {"submit", "status", "show", "logs", "wait", "cancel", "hold",
                              "release", "retry", "move", "drain", "undrain"}) {
    EXPECT_TRUE(light_client_serves({command}, "")) << command;
    EXPECT_TRUE(light_client_serves({"--home", "/h", command, "--json"}, "")) << command;
  }
  EXPECT_TRUE(light_client_serves({"submit", "--", "train.sh", "--lr", "3"}, ""));
  EXPECT_TRUE(light_client_serves({"status", "--user", "alice"}, ""));

  EXPECT_FALSE(light_client_serves({}, ""));  // the list of commands
  EXPECT_FALSE(light_client_serves({"daemon", "--gpus", "fake:2"}, ""));
  EXPECT_FALSE(light_client_serves({"shim", "--run-dir", "/r"}, ""));
  EXPECT_FALSE(light_client_serves({"gpus"}, ""));
  EXPECT_FALSE(light_client_serves({"--version"}, ""));
  EXPECT_FALSE(light_client_serves({"status", "--help"}, ""));
  EXPECT_FALSE(light_client_serves({"-h", "submit"}, ""));
  EXPECT_FALSE(light_client_serves({"status", "--mine"}, ""));               // NSS
  EXPECT_FALSE(light_client_serves({"--url", "http://h:1", "status"}, ""));  // curl
  EXPECT_FALSE(light_client_serves({"--url=http://h:1", "status"}, ""));
  EXPECT_FALSE(light_client_serves({"--token", "t", "status"}, ""));
  EXPECT_FALSE(light_client_serves({"--token=t", "status"}, ""));
  EXPECT_FALSE(light_client_serves({"status"}, "http://h:1"));          // $GPUQ_URL
  EXPECT_FALSE(light_client_serves({"--home", "submit", "gpus"}, ""));  // submit is --home's value
}

TEST(LightClient, LooksForTheFullBinaryBesideItThenInLibexec) {
  EXPECT_EQ(
      full_binary_candidates("/opt/gpuq/bin/gpuq"),
      (std::vector<std::string>{"/opt/gpuq/bin/gpuqd", "/opt/gpuq/bin/../libexec/gpuq/gpuqd"}));
  EXPECT_EQ(full_binary_candidates("gpuq"),
            (std::vector<std::string>{"./gpuqd", "./../libexec/gpuq/gpuqd"}));
}

TEST(LightClient, TheFullBinaryNamesTheClientThatRunsItWhenThereIsOne) {
  const fs::path root =
      fs::temp_directory_path() / ("light_client_test." + std::to_string(::getpid()));
  fs::create_directories(root / "bin");
  fs::create_directories(root / "libexec/gpuq");
  fs::create_directories(root / "build/bin");
  auto executable = [](const fs::path& file) {
    std::ofstream(file) << "#!/bin/sh\n";
    fs::permissions(file, fs::perms::owner_all);
  };
  executable(root / "bin/gpuq");
  executable(root / "libexec/gpuq/gpuqd");
  executable(root / "build/bin/gpuqd");
  EXPECT_EQ(client_binary_for((root / "libexec/gpuq/gpuqd").string()),
            (root / "bin/gpuq").string());
  EXPECT_EQ(client_binary_for((root / "build/bin/gpuqd").string()), "");  // no gpuq beside it
  executable(root / "build/bin/gpuq");
  EXPECT_EQ(client_binary_for((root / "build/bin/gpuqd").string()),
            (root / "build/bin/gpuq").string());
  EXPECT_EQ(client_binary_for("/usr/bin/gpuq"), "");  // not a gpuqd
  fs::remove_all(root);
}

}  // namespace
}  // namespace gpuq::cli
