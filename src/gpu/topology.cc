// SPDX-License-Identifier: Apache-2.0
#include "gpu/topology.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>
#include <string>

namespace gpuq::gpu {
namespace {

constexpr std::string_view kWhitespace = " \t\r\n\v\f";
// Long enough for any quoted line to identify itself, short enough for one log line.
constexpr size_t kMaxQuotedLine = 160;
constexpr size_t kMaxQuotedCell = 24;

// Removes ANSI escape sequences: CSI "ESC [ params final" and two-byte "ESC x". nvidia-smi
// underlines the header with them even when its output is not a terminal.
std::string strip_ansi(std::string_view text) {
  std::string clean;
  clean.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\x1b') {
      clean += text[i];
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '[') {
      size_t j = i + 2;
      while (j < text.size() && !(text[j] >= '@' && text[j] <= '~')) ++j;
      i = j;  // the final byte (or the end), skipped by the loop's ++i
    } else {
      ++i;
    }
  }
  return clean;
}

std::vector<std::string_view> split_words(std::string_view line) {
  std::vector<std::string_view> words;
  size_t begin = line.find_first_not_of(kWhitespace);
  while (begin != std::string_view::npos) {
    size_t end = line.find_first_of(kWhitespace, begin);
    words.push_back(line.substr(begin, end - begin));
    if (end == std::string_view::npos) break;
    begin = line.find_first_not_of(kWhitespace, end);
  }
  return words;
}

std::optional<int> parse_number(std::string_view text) {
  if (text.empty() || text.size() > 4 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  int value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

// "GPU12" → 12; anything else (including "GPU" of "GPU NUMA ID") → nullopt.
std::optional<int> gpu_label(std::string_view word) {
  constexpr std::string_view kPrefix = "GPU";
  if (word.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  return parse_number(word.substr(kPrefix.size()));
}

// The score of one matrix cell; nullopt for "X" (self) and for anything unknown, told apart by
// the caller.
std::optional<int> link_score(std::string_view cell) {
  if (cell == "PIX") return kLinkPix;
  if (cell == "PXB") return kLinkPxb;
  if (cell == "PHB") return kLinkPhb;
  if (cell == "NODE") return kLinkNode;
  if (cell == "SYS" || cell == "SOC") return kLinkSys;
  constexpr std::string_view kNvLink = "NV";
  if (cell.substr(0, kNvLink.size()) == kNvLink) {
    auto count = parse_number(cell.substr(kNvLink.size()));
    if (count && *count >= 1) return kLinkNvLinkBase + *count;
  }
  return std::nullopt;
}

struct Line {
  int number = 0;
  std::string text;  // without ANSI escapes and surrounding whitespace
};

std::vector<Line> split_lines(std::string_view output) {
  std::vector<Line> lines;
  int number = 0;
  while (!output.empty()) {
    size_t newline = output.find('\n');
    std::string text = strip_ansi(output.substr(0, newline));
    output = newline == std::string_view::npos ? std::string_view{} : output.substr(newline + 1);
    ++number;
    size_t begin = text.find_first_not_of(kWhitespace);
    if (begin == std::string::npos) {
      text.clear();
    } else {
      text = text.substr(begin, text.find_last_not_of(kWhitespace) - begin + 1);
    }
    lines.push_back(Line{number, std::move(text)});
  }
  return lines;
}

std::string shorten(std::string_view text, size_t limit) {
  return text.size() > limit ? std::string(text.substr(0, limit)) + "..." : std::string(text);
}

tl::unexpected<Error> corrupt(const Line& line, std::string_view why) {
  return fail(Code::kCorruption, fmt::format("nvidia-smi topo -m output line {}: {}: \"{}\"",
                                             line.number, why, shorten(line.text, kMaxQuotedLine)));
}

// The header: GPU0..GPU<n-1> first, then the other columns, whose names label the rows to skip.
struct Header {
  int gpus = 0;
  std::set<std::string, std::less<>> other_columns;
};

Result<Header> parse_header(const Line& line) {
  Header header;
  for (std::string_view word : split_words(line.text)) {
    auto index = gpu_label(word);
    if (index && header.other_columns.empty()) {
      if (*index != header.gpus) {
        return corrupt(
            line, fmt::format("the header names GPU{} where GPU{} belongs", *index, header.gpus));
      }
      ++header.gpus;
    } else {
      header.other_columns.insert(std::string(word));
    }
  }
  return header;
}

// One GPU's row: its label, then one cell per GPU column; later cells (NICs, affinities) are
// not read.
Result<std::vector<int>> parse_row(const Line& line, int self, int gpus) {
  std::vector<std::string_view> words = split_words(line.text);
  if (static_cast<int>(words.size()) < 1 + gpus) {
    return corrupt(line, fmt::format("{} GPU columns expected, {} found", gpus,
                                     static_cast<int>(words.size()) - 1));
  }
  std::vector<int> row(gpus, kLinkSelf);
  for (int other = 0; other < gpus; ++other) {
    std::string_view cell = words[1 + other];
    if (cell == "X") {
      if (other != self) {
        return corrupt(line, fmt::format("\"X\" (self) in the GPU{} column", other));
      }
      continue;
    }
    if (other == self) {
      return corrupt(
          line, fmt::format("\"{}\" where \"X\" (self) belongs", shorten(cell, kMaxQuotedCell)));
    }
    auto score = link_score(cell);
    if (!score) {
      return corrupt(line, fmt::format("unknown connection \"{}\" in the GPU{} column (expected "
                                       "X, NV<n>, PIX, PXB, PHB, NODE or SYS)",
                                       shorten(cell, kMaxQuotedCell), other));
    }
    row[other] = *score;
  }
  return row;
}

bool is_legend(std::string_view text) {
  constexpr std::string_view kLegend = "Legend";
  return text.substr(0, kLegend.size()) == kLegend;
}

}  // namespace

Result<Links> parse_nvidia_smi_topo(std::string_view output) {
  std::vector<Line> lines = split_lines(output);
  auto header_line = std::find_if(lines.begin(), lines.end(), [](const Line& line) {
    std::vector<std::string_view> words = split_words(line.text);
    return !words.empty() && gpu_label(words[0]) == 0;
  });
  if (header_line == lines.end()) {
    auto first = std::find_if(lines.begin(), lines.end(),
                              [](const Line& line) { return !line.text.empty(); });
    if (first == lines.end()) {
      return fail(Code::kCorruption, "nvidia-smi topo -m printed nothing");
    }
    return corrupt(*first, "no topology matrix (a header line starting with GPU0)");
  }
  auto header = parse_header(*header_line);
  if (!header) return tl::unexpected(header.error());

  Links links(header->gpus);
  std::vector<bool> seen(header->gpus, false);
  for (auto line = std::next(header_line); line != lines.end(); ++line) {
    if (line->text.empty()) continue;
    if (is_legend(line->text)) break;
    std::string_view label = split_words(line->text)[0];
    auto gpu = gpu_label(label);
    if (!gpu) {
      if (header->other_columns.count(label) != 0) continue;  // a NIC's row
      return corrupt(*line, "neither a GPU row nor a row of a header column");
    }
    if (*gpu >= header->gpus) {
      return corrupt(*line, fmt::format("a row for GPU{}, which the header does not name", *gpu));
    }
    if (seen[*gpu]) return corrupt(*line, fmt::format("a second row for GPU{}", *gpu));
    auto row = parse_row(*line, *gpu, header->gpus);
    if (!row) return tl::unexpected(row.error());
    links[*gpu] = std::move(*row);
    seen[*gpu] = true;
  }
  auto missing = std::find(seen.begin(), seen.end(), false);
  if (missing != seen.end()) {
    return corrupt(*header_line, fmt::format("the header names GPU{} but no row for it follows",
                                             missing - seen.begin()));
  }
  return links;
}

Links fake_links(int count) {
  Links links(std::max(count, 0), std::vector<int>(std::max(count, 0), kLinkSys));
  for (int i = 0; i < count; ++i) {
    links[i][i] = kLinkSelf;
    int partner = i ^ 1;
    if (partner < count) links[i][partner] = kFakePairLink;
  }
  return links;
}

Result<Links> select_links(const Links& machine, const std::vector<int>& indices) {
  for (int index : indices) {
    if (index < 0 || index >= static_cast<int>(machine.size()) ||
        machine[index].size() != machine.size()) {
      return fail(Code::kCorruption,
                  fmt::format("nvidia-smi topo -m has no row for GPU{} (its matrix has {} GPU{})",
                              index, machine.size(), machine.size() == 1 ? "" : "s"));
    }
  }
  Links links(indices.size(), std::vector<int>(indices.size(), kLinkSelf));
  for (size_t i = 0; i < indices.size(); ++i) {
    for (size_t j = 0; j < indices.size(); ++j) links[i][j] = machine[indices[i]][indices[j]];
  }
  return links;
}

}  // namespace gpuq::gpu
