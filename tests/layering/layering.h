// SPDX-License-Identifier: Apache-2.0
// The layering rule of docs/architecture.md, checked by the build: the module table there
// ("folder | what | may use") says which module may use which, and a module that reaches past
// its column is a design change to be made in the table first. This reads the table itself
// (so the page stays true), every `#include` of the C++ files in the table's folders and in
// every folder under src/ and tests/, and the gpuq_* libraries each folder's CMake files link,
// and names every edge the table does not allow, by file and line.
//
// The rules, exactly:
//  - every folder directly under src/ or tests/ that holds files is a row of the table, and
//    every row's folder holds files;
//  - an include resolves as the compiler would: "x.h" first beside the including file, then
//    under src/ (the one include root); <x.h> under src/ only. One that resolves to no file of
//    the tree still counts when its first component is a module under src/ ("sched/x.h"), so a
//    guarded include (__has_include) cannot hide an edge; anything else is a system or
//    third-party header. An include from module A into module B needs B in A's column;
//  - a gpuq_B that A's CMake files link (target_link_libraries, or the LIBS of gpuq_test)
//    needs B in A's column too, and every module A includes must be linked by A, directly or
//    through the modules A links, whenever that module has a library of its own.
//
// Works on an in-memory tree (path -> text) so its tests need no files; load_tree() reads one
// from disk. Plain functions and values; thread-safe.
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gpuq::layering {

struct Module {
  std::string folder;             // "src/sched", "bench", "tests/integration"
  std::string name;               // how "may use" names it: "sched", "bench", "tests/integration"
  std::set<std::string> may_use;  // names of the modules it may use (itself not included)
  std::string may_use_text;       // the cell as written, for messages
  int line = 0;                   // its row's line in the table's file
};

struct ModuleTable {
  std::string source;           // the file it came from, for messages
  std::vector<Module> modules;  // in table order

  const Module* by_name(std::string_view name) const;
  // The module whose folder holds `path` (the longest folder that is a prefix), or nullptr.
  const Module* owner_of(std::string_view path) const;
};

struct TableResult {
  ModuleTable table;
  std::string error;  // why the table could not be read ("" when it could), naming the line
};

// Reads the first markdown table whose header has a "folder" column and a "may use" column.
// Folder cells may be in backticks. A "may use" cell is module names separated by commas, or
// "—" (none), "all" (every other row) or "all above" (every earlier row); text in parentheses
// is a note and is ignored. A name that is no row's name is an error, so is a row whose cell
// count differs from the header's, a folder listed twice, or no rows at all.
TableResult parse_module_table(std::string_view markdown, std::string source);

// A tree of files: path relative to the repository root ('/'-separated) -> contents. Files
// whose contents do not matter (data, docs) may map to "": they only say the path exists.
using Tree = std::map<std::string, std::string>;

// Every breach of the rules above, one line each ("file:line: what"); empty when the tree
// follows the table.
std::vector<std::string> check_tree(const ModuleTable& table, const Tree& tree);

// The files check_tree needs from the repository at `root`: everything under src/, tests/ and
// every folder the table lists, with the contents of C++ files and CMakeLists.txt.
Tree load_tree(const std::filesystem::path& root, const ModuleTable& table);

}  // namespace gpuq::layering
