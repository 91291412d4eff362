// SPDX-License-Identifier: Apache-2.0
#include "spec/script.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

#include <fmt/format.h>

namespace gpuq::spec {
namespace {

// Length of the UTF-8 sequence starting at text[i], or 0 when it is not valid UTF-8 as RFC 3629
// defines it: no overlong forms (C0, C1, E0 80..9F, F0 80..8F), no surrogates (ED A0..BF),
// nothing above U+10FFFF (F4 90.., F5..FF). nlohmann's dump() refuses exactly these, and a
// script's text and header values travel as JSON.
size_t utf8_sequence_length(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t len = 0;
  unsigned char second_low = 0x80, second_high = 0xBF;  // the range allowed for the next byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) second_low = 0xA0;
    if (c == 0xED) second_high = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) second_low = 0x90;
    if (c == 0xF4) second_high = 0x8F;
  }
  if (len == 0 || i + len > text.size()) return 0;
  if (byte(i + 1) < second_low || byte(i + 1) > second_high) return 0;
  for (size_t k = 2; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return len;
}

}  // namespace

Status check_script_text(std::string_view name, std::string_view text) {
  if (text.size() > kMaxScriptBytes) {
    return fail(Code::kInvalidArgument,
                fmt::format("{}: script is {} bytes, more than the {} allowed; keep data out of "
                            "the script and read it from a file",
                            name, text.size(), kMaxScriptBytes));
  }
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return fail(Code::kInvalidArgument,
                fmt::format("{}: script is empty; an empty job would 'succeed' without doing "
                            "anything, so gpuq refuses it",
                            name));
  }
  size_t line = 1;
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '\0') {
      return fail(Code::kInvalidArgument,
                  fmt::format("{}:{}: script contains a NUL byte: it looks like a binary file; "
                              "submit a program with `gpuq submit -- PROGRAM ARGS` instead",
                              name, line));
    }
    size_t len = utf8_sequence_length(text, i);
    if (len == 0) {
      return fail(Code::kInvalidArgument,
                  fmt::format("{}:{}: script is not UTF-8 text (byte 0x{:02x}); convert it with "
                              "iconv, or submit a binary with `gpuq submit -- PROGRAM ARGS`",
                              name, line, static_cast<unsigned char>(text[i])));
    }
    if (text[i] == '\n') ++line;
    i += len;
  }
  return ok();
}

Result<std::string> read_script(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOENT) {
      return fail(Code::kInvalidArgument,
                  fmt::format("{}: no such script; check the path (relative paths are taken from "
                              "the current directory)",
                              path));
    }
    return errno_error(path, err);
  }
  if (S_ISDIR(st.st_mode)) {
    return fail(Code::kInvalidArgument, fmt::format("{}: is a directory, not a script", path));
  }
  if (!S_ISREG(st.st_mode)) {
    return fail(Code::kInvalidArgument,
                fmt::format("{}: is not a regular file (a pipe or device?); save the script to a "
                            "file and submit that",
                            path));
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    return fail(Code::kInvalidArgument,
                fmt::format("{}: cannot read the script: {}; check its mode with `ls -l {}`", path,
                            err != 0 ? std::strerror(err) : "it cannot be opened", path));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  if (auto checked = check_script_text(path, text); !checked) return tl::unexpected(checked.error());
  return text;
}

}  // namespace gpuq::spec
