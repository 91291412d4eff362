// SPDX-License-Identifier: Apache-2.0
#include "layering.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace gpuq::layering {
namespace {

constexpr std::string_view kIncludeRoot = "src/";
constexpr std::string_view kLibraryPrefix = "gpuq_";

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// The cells of a markdown table row ("| a | b |" -> {"a", "b"}), trimmed.
std::vector<std::string> cells_of(std::string_view row) {
  std::string s = trim(row);
  if (!s.empty() && s.front() == '|') s.erase(0, 1);
  if (!s.empty() && s.back() == '|') s.pop_back();
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(s);
  while (std::getline(in, cell, '|')) cells.push_back(trim(cell));
  if (!s.empty() && s.back() == '|') cells.emplace_back();
  return cells;
}

bool is_separator(const std::vector<std::string>& cells) {
  for (const std::string& c : cells) {
    if (c.empty() || c.find_first_not_of("-: ") != std::string::npos) return false;
  }
  return !cells.empty();
}

std::string without(std::string s, char c) {
  s.erase(std::remove(s.begin(), s.end(), c), s.end());
  return s;
}

// "model, os (bash -n), base" -> {"model", "os", "base"}.
std::vector<std::string> names_in(std::string cell) {
  std::string plain;
  int depth = 0;
  for (char c : without(std::move(cell), '`')) {
    if (c == '(') ++depth;
    if (depth == 0) plain += c;
    if (c == ')' && depth > 0) --depth;
  }
  std::vector<std::string> names;
  std::string name;
  std::istringstream in(plain);
  while (std::getline(in, name, ',')) {
    name = trim(name);
    if (!name.empty() && name != "—" && name != "–" && name != "-") names.push_back(name);
  }
  return names;
}

std::string module_name(const std::string& folder) {
  return starts_with(folder, kIncludeRoot) ? folder.substr(kIncludeRoot.size()) : folder;
}

}  // namespace

const Module* ModuleTable::by_name(std::string_view name) const {
  for (const Module& m : modules) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

const Module* ModuleTable::owner_of(std::string_view path) const {
  const Module* best = nullptr;
  for (const Module& m : modules) {
    if (starts_with(path, m.folder + "/") &&
        (best == nullptr || m.folder.size() > best->folder.size())) {
      best = &m;
    }
  }
  return best;
}

TableResult parse_module_table(std::string_view markdown, std::string source) {
  TableResult result;
  result.table.source = source;
  auto fail = [&](int line, const std::string& why) {
    result.error = source + (line > 0 ? ":" + std::to_string(line) : "") +
                   ": cannot read the module table: " + why;
    result.table.modules.clear();
    return result;
  };
  const std::vector<std::string> lines = split_lines(markdown);
  size_t header = lines.size();
  int folder_col = -1, may_use_col = -1;
  for (size_t i = 0; i + 1 < lines.size() && header == lines.size(); ++i) {
    if (!starts_with(trim(lines[i]), "|")) continue;
    std::vector<std::string> cells = cells_of(lines[i]);
    folder_col = may_use_col = -1;
    for (size_t c = 0; c < cells.size(); ++c) {
      std::string name = lower(cells[c]);
      if (name == "folder") folder_col = static_cast<int>(c);
      if (name == "may use") may_use_col = static_cast<int>(c);
    }
    if (folder_col >= 0 && may_use_col >= 0 && is_separator(cells_of(lines[i + 1]))) header = i;
  }
  if (header == lines.size()) {
    return fail(0, "no table with a \"folder\" and a \"may use\" column");
  }
  const size_t columns = cells_of(lines[header]).size();

  // The rows, with their "may use" cells kept as names until every row is known.
  std::vector<std::vector<std::string>> wanted;
  for (size_t i = header + 2; i < lines.size() && starts_with(trim(lines[i]), "|"); ++i) {
    const int line = static_cast<int>(i) + 1;
    std::vector<std::string> cells = cells_of(lines[i]);
    if (cells.size() != columns) {
      return fail(line, "a row of " + std::to_string(cells.size()) + " cells under a header of " +
                            std::to_string(columns));
    }
    Module m;
    m.folder = without(cells[folder_col], '`');
    while (!m.folder.empty() && m.folder.back() == '/') m.folder.pop_back();
    if (m.folder.empty()) return fail(line, "a row without a folder");
    for (const Module& earlier : result.table.modules) {
      if (earlier.folder == m.folder) return fail(line, "folder " + m.folder + " is listed twice");
    }
    m.name = module_name(m.folder);
    m.may_use_text = cells[may_use_col];
    m.line = line;
    wanted.push_back(names_in(m.may_use_text));
    result.table.modules.push_back(std::move(m));
  }
  if (result.table.modules.empty()) {
    return fail(static_cast<int>(header) + 1, "the table has no rows");
  }

  std::vector<Module>& modules = result.table.modules;
  for (size_t r = 0; r < modules.size(); ++r) {
    for (const std::string& name : wanted[r]) {
      if (name == "all" || name == "all above") {
        const size_t end = name == "all" ? modules.size() : r;
        for (size_t o = 0; o < end; ++o) {
          if (o != r) modules[r].may_use.insert(modules[o].name);
        }
      } else if (result.table.by_name(name) != nullptr) {
        if (name != modules[r].name) modules[r].may_use.insert(name);
      } else {
        return fail(modules[r].line, modules[r].folder + " may use \"" + name +
                                         "\", which names no row of the table");
      }
    }
  }
  return result;
}

namespace {

bool is_cpp(std::string_view path) {
  for (std::string_view ext : {".h", ".hh", ".hpp", ".cc", ".cpp", ".cxx", ".c", ".inc", ".ipp"}) {
    if (path.size() > ext.size() && path.substr(path.size() - ext.size()) == ext) return true;
  }
  return false;
}

bool is_cmake(std::string_view path) {
  return path == "CMakeLists.txt" || path.ends_with("/CMakeLists.txt") || path.ends_with(".cmake");
}

// "a/b/../c/./d.h" -> "a/c/d.h"; "" when it climbs above the root.
std::string normalize(std::string_view path) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in{std::string(path)};
  while (std::getline(in, part, '/')) {
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (parts.empty()) return "";
      parts.pop_back();
    } else {
      parts.push_back(part);
    }
  }
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "/") + p;
  return out;
}

struct Include {
  int line = 0;
  std::string spelled;             // as written, with its quotes or brackets
  std::string target;              // the file it resolves to, or "" when none in the tree
  const Module* module = nullptr;  // the module it uses, or nullptr (system, third-party)
};

std::vector<Include> includes_of(const std::string& path, const std::string& text,
                                 const ModuleTable& table, const Tree& tree) {
  std::vector<Include> out;
  const std::string dir = path.substr(0, path.rfind('/') + 1);
  const std::vector<std::string> lines = split_lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string s = trim(lines[i]);
    if (!starts_with(s, "#")) continue;
    s = trim(std::string_view(s).substr(1));
    if (!starts_with(s, "include")) continue;
    s = trim(std::string_view(s).substr(7));
    if (s.empty() || (s[0] != '"' && s[0] != '<')) continue;
    const size_t close = s.find(s[0] == '"' ? '"' : '>', 1);
    if (close == std::string::npos) continue;
    Include inc;
    inc.line = static_cast<int>(i) + 1;
    inc.spelled = s.substr(0, close + 1);
    const std::string name = s.substr(1, close - 1);
    std::vector<std::string> candidates;
    if (s[0] == '"') candidates.push_back(normalize(dir + name));
    candidates.push_back(normalize(std::string(kIncludeRoot) + name));
    for (const std::string& c : candidates) {
      if (!c.empty() && tree.count(c)) {
        inc.target = c;
        break;
      }
    }
    if (!inc.target.empty()) {
      inc.module = table.owner_of(inc.target);
    } else if (size_t slash = name.find('/'); slash != std::string::npos) {
      // Not in the tree (a guarded or stale include): it still names a module under src/.
      inc.module = table.owner_of(std::string(kIncludeRoot) + name);
    }
    if (inc.module != nullptr) out.push_back(std::move(inc));
  }
  return out;
}

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// One CMake command: its name (lower case), its arguments without comments, and its line.
struct CMakeCommand {
  std::string name;
  std::string args;
  int line = 0;
};

std::vector<CMakeCommand> cmake_commands(const std::string& text) {
  std::vector<CMakeCommand> out;
  int line = 1;
  size_t i = 0;
  auto skip_comment = [&] {
    while (i < text.size() && text[i] != '\n') ++i;
  };
  while (i < text.size()) {
    char c = text[i];
    if (c == '\n') ++line;
    if (c == '#') {
      skip_comment();
      continue;
    }
    if (!(std::isalpha(static_cast<unsigned char>(c)) || c == '_')) {
      ++i;
      continue;
    }
    size_t start = i;
    while (i < text.size() && is_word_char(text[i])) ++i;
    CMakeCommand cmd{lower(text.substr(start, i - start)), "", line};
    size_t j = i;
    while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
    if (j >= text.size() || text[j] != '(') continue;
    i = j + 1;
    int depth = 1;
    bool quoted = false;
    for (; i < text.size() && depth > 0; ++i) {
      char a = text[i];
      if (a == '\n') ++line;
      if (a == '"' && (i == 0 || text[i - 1] != '\\')) quoted = !quoted;
      if (!quoted && a == '#') {
        skip_comment();
        --i;
        continue;
      }
      if (!quoted && a == '(') ++depth;
      if (!quoted && a == ')' && --depth == 0) break;
      cmd.args += a;
    }
    ++i;
    out.push_back(std::move(cmd));
  }
  return out;
}

struct LibraryUse {
  std::string module;  // "sched" for gpuq_sched
  int line = 0;
};

// The gpuq_* names in a command's arguments, past its first (the target or test it defines).
std::vector<LibraryUse> libraries_in(const CMakeCommand& cmd) {
  const std::string& args = cmd.args;
  std::vector<LibraryUse> out;
  size_t first_end = args.find_first_of(" \t\n", args.find_first_not_of(" \t\n"));
  for (size_t at =
           args.find(kLibraryPrefix, first_end == std::string::npos ? args.size() : first_end);
       at != std::string::npos; at = args.find(kLibraryPrefix, at + 1)) {
    if (at > 0 && is_word_char(args[at - 1])) continue;
    size_t end = at + kLibraryPrefix.size();
    while (end < args.size() && is_word_char(args[end])) ++end;
    const int line = cmd.line + static_cast<int>(std::count(args.begin(), args.begin() + at, '\n'));
    out.push_back(
        {args.substr(at + kLibraryPrefix.size(), end - at - kLibraryPrefix.size()), line});
  }
  return out;
}

struct Links {
  std::map<std::string, std::set<std::string>> linked;  // module name -> modules it links
  std::set<std::string> with_library;                   // modules that build a gpuq_<name>
  std::map<std::string, std::string> cmake_file;        // module name -> its CMake file
};

std::string edge_problem(const ModuleTable& table, const Module& from, const std::string& to) {
  return from.name + " may not use " + to + " (" + table.source + ":" + std::to_string(from.line) +
         ": " + from.name + " may use: " + from.may_use_text + ")";
}

Links read_links(const ModuleTable& table, const Tree& tree, std::vector<std::string>& problems) {
  Links links;
  for (const auto& [path, text] : tree) {
    const Module* owner = table.owner_of(path);
    if (owner == nullptr || !is_cmake(path)) continue;
    links.cmake_file.emplace(owner->name, path);
    for (const CMakeCommand& cmd : cmake_commands(text)) {
      if (cmd.name == "add_library") {
        std::string target = trim(cmd.args).substr(0, trim(cmd.args).find_first_of(" \t\n"));
        if (target == std::string(kLibraryPrefix) + owner->name)
          links.with_library.insert(owner->name);
      }
      if (cmd.name != "target_link_libraries" && cmd.name != "gpuq_test" &&
          cmd.name != "gpuq_fuzz_target") {
        continue;
      }
      for (const LibraryUse& lib : libraries_in(cmd)) {
        const Module* used = table.by_name(lib.module);
        if (used == nullptr || used == owner) continue;  // not a module's library (a test helper)
        links.linked[owner->name].insert(used->name);
        if (!owner->may_use.count(used->name)) {
          problems.push_back(path + ":" + std::to_string(lib.line) + ": links gpuq_" + lib.module +
                             ": " + edge_problem(table, *owner, used->name));
        }
      }
    }
  }
  return links;
}

// Every module `from` links, directly or through the modules it links.
std::set<std::string> linked_closure(const Links& links, const std::string& from) {
  std::set<std::string> seen;
  std::vector<std::string> todo = {from};
  while (!todo.empty()) {
    std::string m = todo.back();
    todo.pop_back();
    auto it = links.linked.find(m);
    if (it == links.linked.end()) continue;
    for (const std::string& next : it->second) {
      if (seen.insert(next).second) todo.push_back(next);
    }
  }
  return seen;
}

void check_folders(const ModuleTable& table, const Tree& tree, std::vector<std::string>& problems) {
  std::set<std::string> reported;
  for (const auto& [path, text] : tree) {
    for (std::string_view root : {"src/", "tests/"}) {
      if (!starts_with(path, root) || table.owner_of(path) != nullptr) continue;
      size_t slash = path.find('/', root.size());
      if (slash == std::string::npos) {
        problems.push_back(path + ": a file outside every module folder of " + table.source);
        continue;
      }
      std::string folder = path.substr(0, slash);
      if (reported.insert(folder).second) {
        problems.push_back(folder + ": a module folder that the module table of " + table.source +
                           " does not list: add its row (folder, what, may use) first");
      }
    }
  }
  for (const Module& m : table.modules) {
    auto it = tree.lower_bound(m.folder + "/");
    if (it == tree.end() || !starts_with(it->first, m.folder + "/")) {
      problems.push_back(table.source + ":" + std::to_string(m.line) + ": the module table lists " +
                         m.folder + ", which holds no files");
    }
  }
}

}  // namespace

std::vector<std::string> check_tree(const ModuleTable& table, const Tree& tree) {
  std::vector<std::string> problems;
  check_folders(table, tree, problems);
  const Links links = read_links(table, tree, problems);
  std::map<std::string, std::set<std::string>> closures;
  for (const auto& [path, text] : tree) {
    const Module* owner = table.owner_of(path);
    if (owner == nullptr || !is_cpp(path)) continue;
    for (const Include& inc : includes_of(path, text, table, tree)) {
      const Module& used = *inc.module;
      if (&used == owner) continue;
      const std::string where =
          path + ":" + std::to_string(inc.line) + ": #include " + inc.spelled + ": ";
      if (!owner->may_use.count(used.name)) {
        problems.push_back(where + edge_problem(table, *owner, used.name));
        continue;
      }
      auto cmake = links.cmake_file.find(owner->name);
      if (cmake == links.cmake_file.end() || !links.with_library.count(used.name)) continue;
      auto [closure, fresh] = closures.try_emplace(owner->name);
      if (fresh) closure->second = linked_closure(links, owner->name);
      if (!closure->second.count(used.name)) {
        problems.push_back(where + owner->name + " uses " + used.name + ", but " + cmake->second +
                           " links no gpuq_" + used.name +
                           ", directly or through the modules it links");
      }
    }
  }
  return problems;
}

Tree load_tree(const std::filesystem::path& root, const ModuleTable& table) {
  namespace fs = std::filesystem;
  std::set<std::string> folders = {"src", "tests"};
  for (const Module& m : table.modules) folders.insert(m.folder);
  Tree tree;
  for (const std::string& folder : folders) {
    std::error_code ec;
    if (!fs::is_directory(root / folder, ec)) continue;
    for (auto it = fs::recursive_directory_iterator(root / folder, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (!it->is_regular_file(ec)) continue;
      std::string path = it->path().lexically_relative(root).generic_string();
      std::string& text = tree[path];
      if (!is_cpp(path) && !is_cmake(path)) continue;
      std::ifstream in(it->path(), std::ios::binary);
      std::ostringstream contents;
      contents << in.rdbuf();
      text = contents.str();
    }
  }
  return tree;
}

}  // namespace gpuq::layering
