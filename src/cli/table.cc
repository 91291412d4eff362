// SPDX-License-Identifier: Apache-2.0
#include "cli/table.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpuq::cli {

Table::Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}

std::string terminal_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    auto byte = static_cast<unsigned char>(text[i]);
    auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else if (byte == 0xc2 && next >= 0x80 && next <= 0x9f) {  // U+0080..U+009F in UTF-8
      out += fmt::format("\\u{:04x}", next);
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

void Table::add_row(std::vector<Cell> cells) {
  for (Cell& cell : cells) {
    if (std::any_of(cell.text.begin(), cell.text.end(), [](char c) {
          auto b = static_cast<unsigned char>(c);
          return b < 0x20 || b == 0x7f || b == 0xc2;
        }))
      cell.text = terminal_text(cell.text);
  }
  cells.resize(std::max(cells.size(), headers_.size()), Cell(""));
  rows_.push_back(std::move(cells));
}

std::string Table::render(bool color) const {
  size_t columns = headers_.size();
  for (const auto& row : rows_) columns = std::max(columns, row.size());
  std::vector<size_t> widths(columns, 0);
  for (size_t c = 0; c < headers_.size(); ++c) widths[c] = display_width(headers_[c]);
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size(); ++c) {
      widths[c] = std::max(widths[c], display_width(row[c].text));
    }
  }

  std::string out;
  auto emit_line = [&](const std::vector<Cell>& cells) {
    std::string line;
    size_t pending_blanks = 0;  // padding is written only when something follows it
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c > 0) pending_blanks += 2;
      const Cell& cell = cells[c];
      if (!cell.text.empty()) {
        line.append(pending_blanks, ' ');
        pending_blanks = 0;
        line += paint(cell.text, cell.style, color);
      }
      pending_blanks += widths[c] - display_width(cell.text);
    }
    out += line;
    out += '\n';
  };
  std::vector<Cell> header_cells;
  for (const auto& h : headers_) header_cells.emplace_back(h);
  if (!header_cells.empty()) emit_line(header_cells);
  for (const auto& row : rows_) emit_line(row);
  return out;
}

std::string paint(std::string_view text, Style style, bool color) {
  if (!color || style == Style::kPlain || text.empty()) return std::string(text);
  std::string_view code;
  switch (style) {
    case Style::kGreen:
      code = "\x1b[32m";
      break;
    case Style::kRed:
      code = "\x1b[31m";
      break;
    case Style::kYellow:
      code = "\x1b[33m";
      break;
    case Style::kDim:
      code = "\x1b[2m";
      break;
    case Style::kPlain:
      break;
  }
  return std::string(code) + std::string(text) + "\x1b[0m";
}

size_t display_width(std::string_view text) {
  size_t width = 0;
  for (char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++width;
  }
  return width;
}

Style state_style(std::string_view state) {
  if (state == "succeeded" || state == "running" || state == "skipped") return Style::kGreen;
  // A step's states too (model/step.h): "timed_out", "stopped".
  if (state == "failed" || state == "blocked" || state == "timed-out" || state == "timed_out" ||
      state == "lost") {
    return Style::kRed;
  }
  if (state == "pending" || state == "held") return Style::kYellow;
  if (state == "cancelled" || state == "preempted" || state == "stopped") return Style::kDim;
  return Style::kPlain;
}

bool want_color(bool stdout_is_tty, bool no_color_set) { return stdout_is_tty && !no_color_set; }

}  // namespace gpuq::cli
