// SPDX-License-Identifier: Apache-2.0
// Replays one fuzz target in the normal build, without libFuzzer: the target's
// LLVMFuzzerTestOneInput (fuzz/<target>_fuzz.cc, linked beside this file into
// fuzz_replay_<target>) runs over every file of its seed corpus (fuzz/corpus/<target>/) and of
// its regressions (fuzz/regressions/<target>/, the inputs of past crashes, hangs and leaks). So
// every target keeps compiling, and every bug a fuzzer found stays fixed. A crash or a broken
// invariant aborts the binary; the file being replayed is printed first, so ctest's log names
// it. Compiled once for all targets: the target's name comes from the binary's name
// (fuzz_replay_<target>), GPUQ_FUZZ_DIR from fuzz/CMakeLists.txt.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

// The regular files of `folder`, sorted so that runs replay in the same order; none when the
// folder does not exist (a target without regressions has no folder).
std::vector<fs::path> inputs_in(const fs::path& folder) {
  std::vector<fs::path> files;
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return files;
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

void replay(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  ASSERT_TRUE(in) << "cannot read " << file;
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::fprintf(stderr, "replaying %s (%zu bytes)\n", file.c_str(), bytes.size());
  // A copy of exactly the input's size, as libFuzzer passes it, so an overread is an overread.
  std::vector<uint8_t> exact(bytes);
  EXPECT_EQ(LLVMFuzzerTestOneInput(exact.data(), exact.size()), 0) << file;
}

const fs::path kFuzzDir = GPUQ_FUZZ_DIR;
constexpr std::string_view kBinaryPrefix = "fuzz_replay_";
std::string target_name;  // set by main from the binary's name

TEST(FuzzReplay, EmptyInput) { EXPECT_EQ(LLVMFuzzerTestOneInput(nullptr, 0), 0); }

TEST(FuzzReplay, SeedCorpus) {
  auto files = inputs_in(kFuzzDir / "corpus" / target_name);
  ASSERT_FALSE(files.empty()) << "no seed corpus in " << kFuzzDir / "corpus" / target_name
                              << "; every target keeps a few real inputs there (docs/fuzzing.md)";
  for (const auto& file : files) replay(file);
}

TEST(FuzzReplay, Regressions) {
  for (const auto& file : inputs_in(kFuzzDir / "regressions" / target_name)) replay(file);
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::string binary = fs::path(argv[0]).filename().string();
  if (binary.rfind(kBinaryPrefix, 0) != 0) {
    std::fprintf(stderr, "%s: the binary must be named %s<target>\n", argv[0],
                 std::string(kBinaryPrefix).c_str());
    return 2;
  }
  target_name = binary.substr(kBinaryPrefix.size());
  return RUN_ALL_TESTS();
}
