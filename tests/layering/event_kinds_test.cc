// SPDX-License-Identifier: Apache-2.0
// The dashboard listens for every event kind the daemon writes: the event stream names each
// event by its kind, and the browser's EventSource hands a named event only to a listener for
// that name, so a kind missing from web/src/lib/kinds.js never reaches a page live. The kinds
// are those of docs/api.md's table ("Every kind the daemon writes").
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace gpuq::layering {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The first column of the table that follows `anchor` in the page: "| `kind` | ...".
std::set<std::string> documented_kinds(const std::string& page, const std::string& anchor) {
  std::set<std::string> kinds;
  size_t at = page.find(anchor);
  if (at == std::string::npos) return kinds;
  std::istringstream lines(page.substr(at));
  std::string line;
  std::regex row(R"(^\| `([a-z_]+\.[a-z_]+)` \|)");
  bool in_table = false;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_search(line, m, row)) {
      kinds.insert(m[1]);
      in_table = true;
    } else if (in_table && !line.starts_with("|")) {
      break;
    }
  }
  return kinds;
}

TEST(EventKinds, TheDashboardListensForEveryDocumentedKind) {
  const std::string root = GPUQ_SOURCE_DIR;
  std::set<std::string> documented = documented_kinds(read(root + "/docs/api.md"), "Every kind the daemon writes");
  ASSERT_GT(documented.size(), 20u) << "the table of docs/api.md was not found";
  std::string script = read(root + "/web/src/lib/kinds.js");
  size_t start = script.find("EVENT_KINDS");
  ASSERT_NE(start, std::string::npos);
  std::string list = script.substr(start, script.find("];", start) - start);
  std::set<std::string> listened;
  std::regex quoted(R"('([a-z_]+\.[a-z_]+)')");
  for (auto it = std::sregex_iterator(list.begin(), list.end(), quoted); it != std::sregex_iterator(); ++it) {
    listened.insert((*it)[1]);
  }
  for (const std::string& kind : documented) {
    EXPECT_TRUE(listened.count(kind)) << kind << " is in docs/api.md but not in web/src/lib/kinds.js";
  }
}

}  // namespace
}  // namespace gpuq::layering
