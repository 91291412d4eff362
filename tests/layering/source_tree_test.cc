// SPDX-License-Identifier: Apache-2.0
// The project itself against the module table of docs/architecture.md: every include and every
// CMake link between modules must be an edge the table allows. A failure names the file, the
// line and the edge; the fix is the code, or the table first when the edge is a design change.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "layering.h"

namespace gpuq::layering {
namespace {

constexpr const char* kTablePage = "docs/architecture.md";

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

class LayeringOfThisTree : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string page = read(std::string(GPUQ_SOURCE_DIR) + "/" + kTablePage);
    ASSERT_FALSE(page.empty()) << "cannot read " << GPUQ_SOURCE_DIR << "/" << kTablePage;
    TableResult parsed = parse_module_table(page, kTablePage);
    ASSERT_EQ(parsed.error, "");
    table_ = std::move(parsed.table);
    tree_ = load_tree(GPUQ_SOURCE_DIR, table_);
  }

  ModuleTable table_;
  Tree tree_;
};

TEST_F(LayeringOfThisTree, FollowsTheModuleTable) {
  EXPECT_EQ(joined(check_tree(table_, tree_)), "");
}

// A self-check on the real table and tree: the check is live (it found the files, and an edge
// the table forbids is reported), so the test above cannot pass by reading nothing.
TEST_F(LayeringOfThisTree, AForbiddenEdgeWouldBeReported) {
  ASSERT_TRUE(tree_.count("src/sched/scheduler.h"));
  ASSERT_TRUE(tree_.count("src/daemon/queue.h"));
  Tree tree = tree_;
  tree["src/sched/layering_probe.cc"] = "#include \"daemon/queue.h\"\n";
  tree["src/base/CMakeLists.txt"] += "\ntarget_link_libraries(gpuq_base PUBLIC gpuq_store)\n";
  const std::string problems = joined(check_tree(table_, tree));
  EXPECT_NE(problems.find("src/sched/layering_probe.cc:1: #include \"daemon/queue.h\": sched may "
                          "not use daemon"),
            std::string::npos)
      << problems;
  EXPECT_NE(problems.find("src/base/CMakeLists.txt"), std::string::npos) << problems;
  EXPECT_NE(problems.find("links gpuq_store: base may not use store"), std::string::npos)
      << problems;
}

}  // namespace
}  // namespace gpuq::layering
