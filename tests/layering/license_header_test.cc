// SPDX-License-Identifier: Apache-2.0
// Every source file of the project says its license in its first lines, as
// `SPDX-License-Identifier: Apache-2.0` (LICENSE, NOTICE): C++, JavaScript, CSS, HTML, shell,
// Python, CMake and the package's maintainer scripts. Data (the fuzzers' corpora, test
// configurations, JSON) carries none. A failure names each file without it; the fix is the line,
// after a script's `#!` line and its `#gpuq` header lines.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace gpuq::layering {
namespace {

namespace fs = std::filesystem;

constexpr const char* kTag = "SPDX-License-Identifier: Apache-2.0";
constexpr int kFirstLines = 5;

// Whether `path` (relative to the tree's root) is source that must carry the tag.
bool is_source(const std::string& path) {
  static const std::set<std::string> kExtensions = {".cc", ".h",  ".js",    ".mjs", ".css",
                                                    ".html", ".sh", ".py", ".cmake"};
  static const std::set<std::string> kNames = {"CMakeLists.txt", "postinst", "prerm", "postrm"};
  const fs::path p(path);
  if (path == ".ci/run" || kNames.count(p.filename().string())) return true;
  return kExtensions.count(p.extension().string()) > 0;
}

// Folders that hold no source of the project's: build trees, packages, data, generated output.
bool is_skipped_dir(const std::string& path) {
  static const std::set<std::string> kSkipped = {"fuzz/corpus", "fuzz/regressions", "web/dist"};
  const std::string name = fs::path(path).filename().string();
  return kSkipped.count(path) || name == "node_modules" || name.rfind("build", 0) == 0 ||
         (!name.empty() && name[0] == '.' && name != ".ci");
}

bool has_tag(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  for (int i = 0; i < kFirstLines && std::getline(in, line); ++i) {
    if (line.find(kTag) != std::string::npos) return true;
  }
  return false;
}

struct Survey {
  int checked = 0;
  std::vector<std::string> missing;
};

Survey survey(const fs::path& root) {
  Survey out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it) {
    const std::string rel = fs::relative(it->path(), root).generic_string();
    if (it->is_directory()) {
      if (is_skipped_dir(rel)) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file() || !is_source(rel)) continue;
    ++out.checked;
    if (!has_tag(it->path())) out.missing.push_back(rel);
  }
  return out;
}

TEST(LicenseHeaders, EverySourceFileNamesItsLicense) {
  const Survey found = survey(GPUQ_SOURCE_DIR);
  std::string missing;
  for (const std::string& f : found.missing) missing += f + ": no \"" + kTag + "\" line\n";
  EXPECT_EQ(missing, "");
  // The survey is live: it found the project's files of every kind.
  EXPECT_GT(found.checked, 700);
}

// The check itself: a file without the line is named, one with it (after its #! line) is not,
// and data is not read.
TEST(LicenseHeaders, AFileWithoutTheLineIsNamed) {
  const fs::path root = fs::temp_directory_path() / ("gpuq-license-" + std::to_string(::getpid()));
  fs::create_directories(root / "src" / "x");
  fs::create_directories(root / "fuzz" / "corpus");
  std::ofstream(root / "src" / "x" / "bare.cc") << "// A file.\nint x;\n";
  std::ofstream(root / "src" / "x" / "ok.sh") << "#!/bin/sh\n# " << kTag << "\necho\n";
  std::ofstream(root / "src" / "x" / "data.toml") << "a = 1\n";
  std::ofstream(root / "fuzz" / "corpus" / "seed.sh") << "echo\n";
  const Survey found = survey(root);
  fs::remove_all(root);
  EXPECT_EQ(found.checked, 2);
  EXPECT_EQ(found.missing, std::vector<std::string>{"src/x/bare.cc"});
}

}  // namespace
}  // namespace gpuq::layering
