// SPDX-License-Identifier: Apache-2.0
#include "fleet/log_tail.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace gpuq::fleet {
namespace {

// One piece of the log: a header's text, or a file of `size` bytes.
struct Piece {
  std::string text;
  std::string path;  // empty: the text
  uint64_t size = 0;
};

std::vector<Piece> pieces_of(const std::vector<std::string>& paths) {
  std::vector<Piece> pieces;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (paths.size() > 1) {
      std::string header = fmt::format("=== run {} ===\n", i + 1);
      uint64_t size = header.size();
      pieces.push_back({std::move(header), "", size});
    }
    std::error_code ec;
    uint64_t size = std::filesystem::file_size(paths[i], ec);
    pieces.push_back({"", paths[i], ec ? 0 : size});
  }
  return pieces;
}

// `count` bytes of the file from `offset` (fewer when it was cut meanwhile).
std::string read_range(const std::string& path, uint64_t offset, uint64_t count) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(static_cast<std::streamoff>(offset));
  std::string out(count, '\0');
  in.read(out.data(), static_cast<std::streamsize>(count));
  out.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  return out;
}

}  // namespace

uint64_t log_size(const std::vector<std::string>& paths) {
  uint64_t total = 0;
  for (const Piece& piece : pieces_of(paths)) total += piece.size;
  return total;
}

std::string log_tail(const std::vector<std::string>& paths, uint64_t max_bytes) {
  std::vector<Piece> pieces = pieces_of(paths);
  uint64_t total = 0;
  for (const Piece& piece : pieces) total += piece.size;
  const uint64_t skip = total > max_bytes ? total - max_bytes : 0;
  std::string out;
  if (skip > 0) {
    out = fmt::format("[the first {} bytes are left out: the fleet keeps the last {}]\n", skip,
                      max_bytes);
  }
  uint64_t at = 0;  // where the piece begins in the whole log
  for (const Piece& piece : pieces) {
    const uint64_t begin = skip > at ? std::min(skip - at, piece.size) : 0;
    if (begin < piece.size) {
      if (piece.path.empty()) {
        out.append(piece.text, static_cast<size_t>(begin));
      } else {
        out += read_range(piece.path, begin, piece.size - begin);
      }
    }
    at += piece.size;
  }
  return out;
}

}  // namespace gpuq::fleet
