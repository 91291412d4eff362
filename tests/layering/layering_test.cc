// SPDX-License-Identifier: Apache-2.0
// The layering checker on small synthetic trees: that it reads the table the way the page
// writes it, fails loudly when it cannot, and names every forbidden edge by file and line.
// Contents are written as "...\n" strings so that no line of this file starts with an include
// the checker would read as this folder's own.
#include "layering.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuq::layering {
namespace {

// A table in the page's own form: backticks, notes in parentheses, "—", "all", "all above".
constexpr std::string_view kTable = R"(# Architecture

Some prose, and a table that is not the module table:

| what | why |
|---|---|
| a | b |

## Folders

| folder | what | may use |
|---|---|---|
| `src/base` | status, durations | — |
| `src/model` | jobs | base |
| `src/sched` | the scheduler | model, base |
| `src/spec` | headers | model, sched (for its types), base |
| `src/daemon` | the actor | all above |
| `src/app` | main | all |
| `bench` | benchmarks | sched, base |
| `docs` | pages | — |

Text after the table.
)";

ModuleTable table() {
  TableResult parsed = parse_module_table(kTable, "docs/architecture.md");
  EXPECT_EQ(parsed.error, "");
  return parsed.table;
}

// The tree every check below starts from: it follows kTable.
Tree good_tree() {
  return {
      {"src/base/CMakeLists.txt", "add_library(gpuq_base status.cc)\n"},
      {"src/base/status.h", "#pragma once\n#include <string>\n"},
      {"src/model/CMakeLists.txt",
       "add_library(gpuq_model job.cc)\ntarget_link_libraries(gpuq_model PUBLIC gpuq_base)\n"},
      {"src/model/job.h", "#pragma once\n#include \"base/status.h\"\n"},
      {"src/model/job.cc", "#include \"model/job.h\"\n#include \"job.h\"\n"},
      {"src/sched/CMakeLists.txt",
       "add_library(gpuq_sched s.cc)\n"
       "# a comment naming gpuq_daemon links nothing\n"
       "target_link_libraries(gpuq_sched PUBLIC gpuq_model\n"
       "                                 gpuq_base)\n"
       "gpuq_test(sched_test s_test.cc LIBS gpuq_sched gpuq_fake_helper)\n"},
      {"src/sched/s.cc",
       "#include \"sched/s.h\"\n#include <vector>\n#include \"nlohmann/json.hpp\"\n"},
      {"src/sched/s.h", "#pragma once\n#include \"model/job.h\"\n"},
      {"src/sched/testing/helper.h", "#include \"../s.h\"\n"},
      {"src/spec/CMakeLists.txt",
       "add_library(gpuq_spec h.cc)\ntarget_link_libraries(gpuq_spec PUBLIC gpuq_sched)\n"},
      {"src/spec/h.cc", "#include \"sched/s.h\"\n#include \"base/status.h\"\n"},
      {"src/daemon/CMakeLists.txt",
       "add_library(gpuq_daemon q.cc)\ntarget_link_libraries(gpuq_daemon PUBLIC gpuq_spec)\n"},
      {"src/daemon/q.cc", "#include \"spec/h.h\"\n#include \"sched/s.h\"\n"},
      {"src/app/CMakeLists.txt",
       "add_executable(gpuq m.cc)\ntarget_link_libraries(gpuq gpuq_daemon)\n"},
      {"src/app/m.cc", "#include \"daemon/q.h\"\n#include \"base/status.h\"\n"},
      {"bench/CMakeLists.txt",
       "add_executable(b b.cc)\ntarget_link_libraries(b PRIVATE gpuq_sched)\n"},
      {"bench/b.cc", "#include \"sched/s.h\"\n"},
      {"docs/page.md", ""},
  };
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

TEST(LayeringTable, ReadsTheRowsAndTheirMayUseColumn) {
  ModuleTable t = table();
  ASSERT_EQ(t.modules.size(), 8u);
  const Module* spec = t.by_name("spec");
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(spec->folder, "src/spec");
  EXPECT_EQ(spec->may_use, (std::set<std::string>{"model", "sched", "base"}));  // note dropped
  EXPECT_EQ(spec->line, 16);
  EXPECT_TRUE(t.by_name("base")->may_use.empty());
  EXPECT_EQ(t.by_name("daemon")->may_use,
            (std::set<std::string>{"base", "model", "sched", "spec"}));
  EXPECT_EQ(t.by_name("app")->may_use.size(), 7u);  // every other row
  EXPECT_FALSE(t.by_name("app")->may_use.count("app"));
  EXPECT_EQ(t.by_name("bench")->folder, "bench");
  EXPECT_EQ(t.owner_of("src/sched/testing/helper.h")->name, "sched");
  EXPECT_EQ(t.owner_of("src/schedule/x.h"), nullptr);
  EXPECT_EQ(t.owner_of("README.md"), nullptr);
}

TEST(LayeringTable, FailsClearlyWhenItCannotBeRead) {
  struct Bad {
    std::string markdown;
    std::string error;
  };
  std::vector<Bad> cases = {
      {"# Architecture\nno table here\n",
       "docs/architecture.md: cannot read the module table: no table with a \"folder\" and a "
       "\"may use\" column"},
      {"| folder | what | may use |\n|---|---|---|\n",
       "docs/architecture.md:1: cannot read the module table: the table has no rows"},
      {"| folder | what | may use |\n|---|---|---|\n| `src/a` | a | — |\n| `src/b` | b | a, web "
       "|\n",
       "docs/architecture.md:4: cannot read the module table: src/b may use \"web\", which names "
       "no row of the table"},
      {"| folder | what | may use |\n|---|---|---|\n| `src/a` | a \\| b | — |\n",
       "docs/architecture.md:3: cannot read the module table: a row of 4 cells under a header "
       "of 3"},
      {"| folder | what | may use |\n|---|---|---|\n| `src/a` | a | — |\n| `src/a/` | again | — "
       "|\n",
       "docs/architecture.md:4: cannot read the module table: folder src/a is listed twice"},
  };
  for (const Bad& c : cases) {
    TableResult parsed = parse_module_table(c.markdown, "docs/architecture.md");
    EXPECT_EQ(parsed.error, c.error);
    EXPECT_TRUE(parsed.table.modules.empty());
  }
}

TEST(Layering, ATreeThatFollowsTheTableHasNoProblems) {
  EXPECT_EQ(joined(check_tree(table(), good_tree())), "");
}

TEST(Layering, AForbiddenIncludeIsNamedByFileLineAndEdge) {
  Tree tree = good_tree();
  tree["src/sched/s.cc"] = "// the scheduler\n#include \"sched/s.h\"\n  #  include \"spec/h.h\"\n";
  EXPECT_EQ(joined(check_tree(table(), tree)),
            "src/sched/s.cc:3: #include \"spec/h.h\": sched may not use spec "
            "(docs/architecture.md:15: sched may use: model, base)\n");
}

TEST(Layering, EveryWayOfSpellingAnIncludeCounts) {
  Tree tree = good_tree();
  tree["src/model/a.cc"] = "#include <sched/s.h>\n";       // angle brackets
  tree["src/model/b.cc"] = "#include \"../sched/s.h\"\n";  // relative
  tree["src/model/c.cc"] =
      "#if __has_include(\"sched/gone.h\")\n#include \"sched/gone.h\"\n#endif\n";
  tree["src/base/d.h"] = "#include \"model/job.h\"  // a comment\n";
  EXPECT_EQ(joined(check_tree(table(), tree)),
            "src/base/d.h:1: #include \"model/job.h\": base may not use model "
            "(docs/architecture.md:13: base may use: —)\n"
            "src/model/a.cc:1: #include <sched/s.h>: model may not use sched "
            "(docs/architecture.md:14: model may use: base)\n"
            "src/model/b.cc:1: #include \"../sched/s.h\": model may not use sched "
            "(docs/architecture.md:14: model may use: base)\n"
            "src/model/c.cc:2: #include \"sched/gone.h\": model may not use sched "
            "(docs/architecture.md:14: model may use: base)\n");
}

TEST(Layering, SystemAndLocalIncludesAreNoEdges) {
  Tree tree = good_tree();
  tree["src/base/e.cc"] =
      "#include <fmt/format.h>\n#include \"gtest/gtest.h\"\n#include \"status.h\"\n";
  tree["src/base/f.cc"] = "const char* text = \"#include \\\"model/job.h\\\"\";\n";  // a string
  EXPECT_EQ(joined(check_tree(table(), tree)), "");
}

TEST(Layering, FoldersMustBeRowsAndRowsMustBeFolders) {
  Tree tree = good_tree();
  tree["src/fleet/agent.cc"] = "#include \"daemon/q.h\"\n";
  tree["src/fleet/agent.h"] = "";
  tree["tests/fuzz/fuzz_headers.cc"] = "";
  tree["src/stray.cc"] = "";
  tree.erase("docs/page.md");
  EXPECT_EQ(joined(check_tree(table(), tree)),
            "src/fleet: a module folder that the module table of docs/architecture.md does not "
            "list: add its row (folder, what, may use) first\n"
            "src/stray.cc: a file outside every module folder of docs/architecture.md\n"
            "tests/fuzz: a module folder that the module table of docs/architecture.md does not "
            "list: add its row (folder, what, may use) first\n"
            "docs/architecture.md:20: the module table lists docs, which holds no files\n");
}

TEST(Layering, AFolderAddedWithItsRowIsChecked) {
  std::string markdown(kTable);
  markdown.insert(markdown.find("| `src/daemon`"), "| `src/config` | config.toml | base |\n");
  TableResult parsed = parse_module_table(markdown, "docs/architecture.md");
  ASSERT_EQ(parsed.error, "");
  EXPECT_TRUE(parsed.table.by_name("daemon")->may_use.count("config"));  // "all above"
  Tree tree = good_tree();
  tree["src/config/CMakeLists.txt"] =
      "add_library(gpuq_config c.cc)\ntarget_link_libraries(gpuq_config PUBLIC gpuq_base)\n";
  tree["src/config/c.cc"] = "#include \"base/status.h\"\n";
  EXPECT_EQ(joined(check_tree(parsed.table, tree)), "");
  tree["src/config/c.cc"] = "#include \"sched/s.h\"\n";
  EXPECT_EQ(joined(check_tree(parsed.table, tree)),
            "src/config/c.cc:1: #include \"sched/s.h\": config may not use sched "
            "(docs/architecture.md:17: config may use: base)\n");
}

TEST(Layering, AForbiddenLinkIsNamedByItsLine) {
  Tree tree = good_tree();
  tree["src/sched/CMakeLists.txt"] =
      "add_library(gpuq_sched s.cc)\n"
      "target_link_libraries(gpuq_sched PUBLIC gpuq_model\n"
      "                      gpuq_spec)  # and a comment: gpuq_daemon\n"
      "gpuq_test(sched_test s_test.cc LIBS gpuq_sched $<TARGET_NAME_IF_EXISTS:gpuq_app>)\n";
  EXPECT_EQ(joined(check_tree(table(), tree)),
            "src/sched/CMakeLists.txt:3: links gpuq_spec: sched may not use spec "
            "(docs/architecture.md:15: sched may use: model, base)\n"
            "src/sched/CMakeLists.txt:4: links gpuq_app: sched may not use app "
            "(docs/architecture.md:15: sched may use: model, base)\n");
}

TEST(Layering, AnIncludedModuleMustBeLinkedDirectlyOrThroughAnother) {
  Tree tree = good_tree();
  // spec reaches base through sched -> model -> base, and daemon and app reach sched and base
  // through spec: drop spec's link and none of them does.
  tree["src/spec/CMakeLists.txt"] = "add_library(gpuq_spec h.cc)\n";
  EXPECT_EQ(joined(check_tree(table(), tree)),
            "src/app/m.cc:2: #include \"base/status.h\": app uses base, but "
            "src/app/CMakeLists.txt links no gpuq_base, directly or through the modules it links\n"
            "src/daemon/q.cc:2: #include \"sched/s.h\": daemon uses sched, but "
            "src/daemon/CMakeLists.txt links no gpuq_sched, directly or through the modules it "
            "links\n"
            "src/spec/h.cc:1: #include \"sched/s.h\": spec uses sched, but "
            "src/spec/CMakeLists.txt links no gpuq_sched, directly or through the modules it "
            "links\n"
            "src/spec/h.cc:2: #include \"base/status.h\": spec uses base, but "
            "src/spec/CMakeLists.txt links no gpuq_base, directly or through the modules it "
            "links\n");
}

}  // namespace
}  // namespace gpuq::layering
