// SPDX-License-Identifier: Apache-2.0
#include "cli/cli_docs.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>

namespace gpuq::cli {
namespace {

// One option as help shows it.
struct OptionDoc {
  std::vector<std::string> names;  // "-h", "--help"
  std::string value;               // "N", "DIR"; empty for a flag
  std::string description;
  bool positional = false;         // then `value` is its name and `names` is empty
  bool repeats = false;            // a positional that takes any number of words
};

// One command: its words after `gpuq` ("fleet submit"; "" for gpuq itself), what it does, its
// options and the commands under it.
struct CommandDoc {
  std::vector<std::string> words;
  std::string description;
  std::string footer;
  std::vector<OptionDoc> options;
  std::vector<size_t> children;  // indexes into the list of every command
};

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

void collect_options(const CLI::App& app, std::vector<OptionDoc>& out) {
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_group().empty()) continue;  // hidden from help
    OptionDoc doc;
    doc.description = one_line(opt->get_description());
    if (!opt->nonpositional()) {
      doc.positional = true;
      doc.value = opt->get_name(true);
      doc.repeats = opt->get_items_expected_max() > 1;
    } else {
      for (const auto& s : opt->get_snames()) doc.names.push_back("-" + s);
      for (const auto& l : opt->get_lnames()) doc.names.push_back("--" + l);
      // A flag expects no value (CLI11 sets expected 0; help's own flag keeps a type size).
      bool takes_value = opt->get_type_size_max() > 0 && opt->get_expected_max() > 0;
      if (takes_value) doc.value = opt->get_type_name().empty() ? "VALUE" : opt->get_type_name();
    }
    out.push_back(std::move(doc));
  }
  // Option groups are nameless apps: their options belong to this command.
  for (const CLI::App* group : app.get_subcommands([](const CLI::App* sub) {
         return sub->get_name().empty();
       })) {
    collect_options(*group, out);
  }
}

void collect(const CLI::App& app, std::vector<std::string> words, std::vector<CommandDoc>& out) {
  size_t at = out.size();
  out.push_back({words, one_line(app.get_description()), app.get_footer(), {}, {}});
  collect_options(app, out[at].options);
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App* sub) {
         return !sub->get_name().empty() && !sub->get_group().empty();
       })) {
    std::vector<std::string> deeper = words;
    deeper.push_back(sub->get_name());
    out[at].children.push_back(out.size());
    collect(*sub, std::move(deeper), out);
  }
}

std::vector<CommandDoc> commands_of(const CLI::App& root) {
  std::vector<CommandDoc> out;
  collect(root, {}, out);
  return out;
}

std::string joined(const std::vector<std::string>& words, std::string_view separator) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : std::string(separator)) + w;
  return out;
}

// --- man pages ------------------------------------------------------------------------------

// The code point of the UTF-8 sequence at text[i], advancing i past it; U+FFFD for a broken one.
char32_t next_code_point(std::string_view text, size_t& i) {
  auto byte = [&](size_t at) { return static_cast<unsigned char>(text[at]); };
  unsigned char lead = byte(i++);
  int more = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
  char32_t cp = more == 0 ? lead : lead & (0x3F >> more);
  for (int k = 0; k < more; ++k, ++i) {
    if (i >= text.size() || (byte(i) & 0xC0) != 0x80) return 0xFFFD;
    cp = (cp << 6) | (byte(i) & 0x3F);
  }
  return more == 0 && lead >= 0x80 ? 0xFFFD : cp;
}

// Text as roff reads it: backslashes written as \e, every '-' as a minus sign (options are
// typed, so a hyphen must not become a dash), anything past ASCII as a \[uXXXX] escape (troff
// reads bytes), no line that starts as a request.
std::string roff(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) >= 0x80) {
      out += fmt::format("\\[u{:04X}]", static_cast<uint32_t>(next_code_point(text, i)));
      continue;
    }
    char c = text[i++];
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
  }
  return out;
}

std::string roff_paragraphs(std::string_view text) {
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    std::string_view line = text.substr(start, end == text.npos ? text.npos : end - start);
    if (line.empty()) {
      if (!out.empty() && !out.ends_with(".PP\n")) out += ".PP\n";
    } else {
      if (line.front() == '.' || line.front() == '\'') out += "\\&";
      out += roff(line) + "\n";
    }
    if (end == text.npos) break;
    start = end + 1;
  }
  return out;
}

std::string page_name(const CommandDoc& c) {
  std::vector<std::string> words = {"gpuq"};
  words.insert(words.end(), c.words.begin(), c.words.end());
  return joined(words, "-");
}

std::string uppercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

std::string option_synopsis(const OptionDoc& o) {
  if (o.positional) return fmt::format("\\fI{}\\fR{}", roff(o.value), o.repeats ? "..." : "");
  std::string names;
  for (const auto& n : o.names) names += (names.empty() ? "" : ", ") + ("\\fB" + roff(n) + "\\fR");
  if (!o.value.empty()) names += " \\fI" + roff(o.value) + "\\fR";
  return names;
}

std::string man_page(const std::vector<CommandDoc>& all, const CommandDoc& c,
                     const ManualInfo& info) {
  std::string name = page_name(c);
  std::string command = joined(c.words, " ");
  std::string text = fmt::format(".TH {} 1 \"{}\" \"{}\" \"gpuq manual\"\n", roff(uppercase(name)),
                                 info.date, roff(info.source));
  std::string what = c.description;
  if (c.words.empty()) {
    // The root's description says what every command needs; the NAME line says what gpuq is.
    what = "a GPU job queue for the machines you own";
  }
  text += fmt::format(".SH NAME\n{} \\- {}\n", roff(name), roff(what));
  text += ".SH SYNOPSIS\n";
  text += fmt::format(".B gpuq{}\n", command.empty() ? "" : " " + roff(command));
  if (!c.children.empty()) text += "\\fICOMMAND\\fR ";
  text += "[\\fIOPTIONS\\fR]";
  for (const auto& o : c.options) {
    if (o.positional) text += " " + option_synopsis(o);
  }
  text += "\n.SH DESCRIPTION\n" + roff_paragraphs(c.description) + "\n";
  if (!c.footer.empty()) text += ".PP\n" + roff_paragraphs(c.footer);
  if (!c.children.empty()) {
    text += ".SH COMMANDS\n";
    for (size_t i : c.children) {
      const CommandDoc& sub = all[i];
      text += fmt::format(".TP\n.BR {} (1)\n{}\n", roff(page_name(sub)), roff(sub.description));
    }
  }
  bool any_option = std::any_of(c.options.begin(), c.options.end(),
                                [](const OptionDoc& o) { return !o.positional; });
  if (any_option) {
    text += ".SH OPTIONS\n";
    for (const auto& o : c.options) {
      if (o.positional) continue;
      text += fmt::format(".TP\n{}\n{}\n", option_synopsis(o), roff(o.description));
    }
  }
  text += ".SH SEE ALSO\n";
  std::vector<std::string> see;
  if (!c.words.empty()) {
    std::vector<std::string> parent = {"gpuq"};
    parent.insert(parent.end(), c.words.begin(), c.words.end() - 1);
    see.push_back(".BR " + roff(joined(parent, "-")) + " (1)");
  }
  see.push_back(
      "The documentation in share/doc/gpuq of the prefix gpuq is installed in (/usr/share/doc/gpuq "
      "from the .deb), or docs/ beside the source.");
  text += joined(see, ",\n") + "\n";
  return text;
}

// --- completions ---------------------------------------------------------------------------

// `text` in single quotes for a POSIX shell or zsh.
std::string sh_quote(std::string_view text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// `text` in single quotes for fish (which escapes \ and ' inside them).
std::string fish_quote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

// Every command's path as the scripts match it: "" for gpuq, "fleet submit".
std::vector<std::string> paths(const std::vector<CommandDoc>& all) {
  std::vector<std::string> out;
  for (const auto& c : all) out.push_back(joined(c.words, " "));
  return out;
}

std::string child_names(const std::vector<CommandDoc>& all, const CommandDoc& c) {
  std::vector<std::string> names;
  for (size_t i : c.children) names.push_back(all[i].words.back());
  return joined(names, " ");
}

std::string option_names(const CommandDoc& c, bool with_value_only) {
  std::vector<std::string> names;
  for (const auto& o : c.options) {
    if (o.positional || (with_value_only && o.value.empty())) continue;
    names.insert(names.end(), o.names.begin(), o.names.end());
  }
  return joined(names, " ");
}

// The loop that finds which command the words so far name: a word extends the path only when
// the longer path is a command (an option's value never does, unless it is a command's name
// right after it: a rare miss that only offers the wrong options).
std::string path_cases(const std::vector<CommandDoc>& all, std::string_view indent) {
  std::vector<std::string> known;
  for (const auto& p : paths(all)) {
    if (!p.empty()) known.push_back(sh_quote(" " + p));
  }
  return fmt::format("{}case \"$cmdpath $w\" in\n{}  {}) cmdpath=\"$cmdpath $w\" ;;\n{}esac\n",
                     indent, indent, joined(known, "|"), indent);
}

std::string bash_script(const std::vector<CommandDoc>& all, std::string_view source) {
  std::string text = fmt::format(
      "# bash completion for gpuq, made by `gpuq completion bash` from the command line of {}.\n"
      "_gpuq() {{\n"
      "  local cur=\"${{COMP_WORDS[COMP_CWORD]}}\" prev=\"${{COMP_WORDS[COMP_CWORD-1]}}\"\n"
      "  local cmdpath=\"\" w i\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    w=\"${{COMP_WORDS[i]}}\"\n"
      "    [[ $w == -* ]] && continue\n"
      "{}"
      "  done\n"
      "  local commands=\"\" options=\"\" valued=\"\"\n"
      "  case \"$cmdpath\" in\n",
      source, path_cases(all, "    "));
  for (const auto& c : all) {
    std::string p = joined(c.words, " ");
    text += fmt::format("    {}) commands={} options={} valued={} ;;\n", sh_quote(p.empty() ? "" : " " + p),
                        sh_quote(child_names(all, c)), sh_quote(option_names(c, false)),
                        sh_quote(option_names(c, true)));
  }
  text +=
      "  esac\n"
      "  # After an option that takes a value, the value: a file name will often do.\n"
      "  if [[ \" $valued \" == *\" $prev \"* ]]; then\n"
      "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
      "    return\n"
      "  fi\n"
      "  if [[ $cur == -* ]]; then\n"
      "    COMPREPLY=($(compgen -W \"$options\" -- \"$cur\"))\n"
      "  elif [[ -n $commands ]]; then\n"
      "    COMPREPLY=($(compgen -W \"$commands\" -- \"$cur\"))\n"
      "  else\n"
      "    COMPREPLY=($(compgen -f -- \"$cur\"))  # a script, a plan, a job's arguments\n"
      "  fi\n"
      "}\n"
      "complete -o filenames -F _gpuq gpuq\n";
  return text;
}

std::string zsh_describe_list(const std::vector<std::pair<std::string, std::string>>& items) {
  std::vector<std::string> quoted;
  for (const auto& [name, what] : items) {
    std::string escaped;
    for (char c : name) escaped += c == ':' ? std::string("\\:") : std::string(1, c);
    quoted.push_back(sh_quote(escaped + ":" + what));
  }
  return "(" + joined(quoted, " ") + ")";
}

std::string zsh_script(const std::vector<CommandDoc>& all, std::string_view source) {
  std::string text = fmt::format(
      "#compdef gpuq\n"
      "# zsh completion for gpuq, made by `gpuq completion zsh` from the command line of {}.\n"
      "_gpuq() {{\n"
      "  local cmdpath=\"\" w i\n"
      "  for ((i = 2; i < CURRENT; i++)); do\n"
      "    w=${{words[i]}}\n"
      "    [[ $w == -* ]] && continue\n"
      "{}"
      "  done\n"
      "  local -a commands options\n"
      "  local valued=\"\"\n"
      "  case \"$cmdpath\" in\n",
      source, path_cases(all, "    "));
  for (const auto& c : all) {
    std::vector<std::pair<std::string, std::string>> commands, options;
    for (size_t i : c.children) commands.emplace_back(all[i].words.back(), all[i].description);
    for (const auto& o : c.options) {
      for (const auto& n : o.names) options.emplace_back(n, o.description);
    }
    std::string p = joined(c.words, " ");
    text += fmt::format("    {}) commands={} options={} valued={} ;;\n",
                        sh_quote(p.empty() ? "" : " " + p), zsh_describe_list(commands),
                        zsh_describe_list(options), sh_quote(option_names(c, true)));
  }
  text +=
      "  esac\n"
      "  if [[ \" $valued \" == *\" ${words[CURRENT-1]} \"* ]]; then\n"
      "    _files\n"
      "  elif [[ ${words[CURRENT]} == -* ]]; then\n"
      "    _describe -t options option options\n"
      "  elif (( ${#commands} )); then\n"
      "    _describe -t commands command commands\n"
      "  else\n"
      "    _files\n"
      "  fi\n"
      "}\n"
      // Autoloaded from $fpath, the file's body is the completion function's first call;
      // sourced (source <(gpuq completion zsh)), it registers the function instead.
      "if [[ ${zsh_eval_context[-1]} == loadautofunc ]]; then\n"
      "  _gpuq \"$@\"\n"
      "else\n"
      "  compdef _gpuq gpuq\n"
      "fi\n";
  return text;
}

std::string fish_script(const std::vector<CommandDoc>& all, std::string_view source) {
  std::vector<std::string> known;
  for (const auto& p : paths(all)) {
    if (!p.empty()) known.push_back(fish_quote("gpuq " + p));
  }
  std::string text = fmt::format(
      "# fish completion for gpuq, made by `gpuq completion fish` from the command line of {}.\n"
      "# The command the words so far name, as \"gpuq fleet submit\".\n"
      "function __gpuq_command\n"
      "    set -l cmdpath gpuq\n"
      "    for w in (commandline -opc)[2..-1]\n"
      "        string match -q -- '-*' $w; and continue\n"
      "        if contains -- \"$cmdpath $w\" {}\n"
      "            set cmdpath \"$cmdpath $w\"\n"
      "        end\n"
      "    end\n"
      "    echo $cmdpath\n"
      "end\n",
      source, joined(known, " "));
  for (const auto& c : all) {
    std::string p = joined(c.words, " ");
    std::string here = fish_quote(p.empty() ? "gpuq" : "gpuq " + p);
    std::string condition = "-n " + fish_quote("test (__gpuq_command) = " + here);
    for (size_t i : c.children) {
      text += fmt::format("complete -c gpuq {} -f -a {} -d {}\n", condition,
                          fish_quote(all[i].words.back()), fish_quote(all[i].description));
    }
    for (const auto& o : c.options) {
      if (o.positional) continue;
      std::string flags;
      for (const auto& n : o.names) {
        flags += n.starts_with("--") ? " -l " + fish_quote(n.substr(2)) : " -s " + fish_quote(n.substr(1));
      }
      text += fmt::format("complete -c gpuq {}{}{} -d {}\n", condition, flags,
                          o.value.empty() ? "" : " -r", fish_quote(o.description));
    }
  }
  return text;
}

}  // namespace

std::vector<ManPage> man_pages(const CLI::App& root, const ManualInfo& info) {
  std::vector<CommandDoc> all = commands_of(root);
  std::vector<ManPage> out;
  for (const auto& c : all) out.push_back({page_name(c) + ".1", man_page(all, c, info)});
  return out;
}

Result<std::string> completion_script(const CLI::App& root, std::string_view shell,
                                      std::string_view source) {
  std::vector<CommandDoc> all = commands_of(root);
  if (shell == "bash") return bash_script(all, source);
  if (shell == "zsh") return zsh_script(all, source);
  if (shell == "fish") return fish_script(all, source);
  return fail(Code::kInvalidArgument,
              fmt::format("no completion for shell '{}': give bash, zsh or fish", shell));
}

}  // namespace gpuq::cli
