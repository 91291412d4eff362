// SPDX-License-Identifier: Apache-2.0
// Human output of the CLI: tables whose columns are as wide as their widest cell, and colour
// that is used only when stdout is a terminal and NO_COLOR is unset (the caller decides once,
// see Io::color). Widths count what a terminal shows: colour codes and UTF-8 continuation
// bytes take no room. A Table owns copies of its cells; values, no thread rules.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpuq::cli {

enum class Style { kPlain, kGreen, kRed, kYellow, kDim };

struct Cell {
  Cell(std::string text_in, Style style_in = Style::kPlain)  // NOLINT: implicit from text
      : text(std::move(text_in)), style(style_in) {}
  Cell(const char* text_in) : text(text_in) {}  // NOLINT: implicit from text
  std::string text;
  Style style = Style::kPlain;
};

class Table {
 public:
  explicit Table(std::vector<std::string> headers);

  // A row may have fewer cells than there are headers; missing cells are empty. Control
  // characters in a cell are shown as escapes (terminal_text).
  void add_row(std::vector<Cell> cells);
  size_t row_count() const { return rows_.size(); }

  // The header line then one line per row, each ending in '\n'; columns are separated by two
  // spaces and lines carry no trailing blanks.
  std::string render(bool color) const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<Cell>> rows_;
};

// `text` wrapped in the style's ANSI codes when `color`; `text` itself otherwise.
std::string paint(std::string_view text, Style style, bool color);

// `text` with every control character written as an escape a terminal shows as text: C0
// controls and DEL as \xHH, C1 controls (U+0080 to U+009F) as \uHHHH. What other users and
// their processes name (a command line on a GPU, a job's command) can then not move the
// cursor, retitle the window or hide a line.
std::string terminal_text(std::string_view text);

// Columns a terminal uses for UTF-8 `text` (one per code point).
size_t display_width(std::string_view text);

// The colour of a job state or run outcome: green succeeded/running/skipped, red failed and
// the like, yellow pending/held, dim cancelled/preempted.
Style state_style(std::string_view state);

// Whether to colour: only on a terminal, and only when NO_COLOR is unset.
bool want_color(bool stdout_is_tty, bool no_color_set);

}  // namespace gpuq::cli
