// SPDX-License-Identifier: Apache-2.0
#include "base/time.h"

#include <chrono>
#include <cctype>
#include <ctime>
#include <fmt/format.h>

namespace gpuq {

int64_t wall_now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string format_rfc3339(int64_t epoch_ms) {
  if (epoch_ms == 0) return "";
  std::time_t seconds = static_cast<std::time_t>(epoch_ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, epoch_ms % 1000);
}

}  // namespace gpuq

namespace gpuq {

namespace {

// The number written with exactly the digits text[at, at + count), or -1 when one is not a digit
// (sscanf's %2d would also take a sign or a leading space).
int digits_at(std::string_view text, size_t at, size_t count) {
  if (at + count > text.size()) return -1;
  int value = 0;
  for (size_t i = at; i < at + count; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return -1;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

int days_in_month(int year, int month) {
  constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : kDays[month - 1];
}

}  // namespace

Result<int64_t> parse_rfc3339(std::string_view text) {
  auto bad = [&] {
    return fail(Code::kInvalidArgument,
                fmt::format("bad time '{}': use RFC 3339, e.g. 2026-11-29T22:00:00Z or "
                            "2026-11-29T23:00:00+01:00",
                            text));
  };
  // YYYY-MM-DDTHH:MM:SS, every field exactly its digits.
  constexpr size_t kFixedLength = 19;
  if (text.size() < kFixedLength || text[4] != '-' || text[7] != '-' || text[13] != ':' ||
      text[16] != ':') {
    return bad();
  }
  char sep = text[10];
  int year = digits_at(text, 0, 4), month = digits_at(text, 5, 2), day = digits_at(text, 8, 2);
  int hour = digits_at(text, 11, 2), minute = digits_at(text, 14, 2),
      second = digits_at(text, 17, 2);
  if (year < 0 || (sep != 'T' && sep != 't' && sep != ' ') || month < 1 || month > 12 ||
      day < 1 || day > days_in_month(year, month) || hour < 0 || hour > 23 || minute < 0 ||
      minute > 59 || second < 0 || second > 60) {
    return bad();
  }
  std::string_view rest = text.substr(kFixedLength);
  int64_t millis = 0;
  if (!rest.empty() && rest[0] == '.') {
    size_t i = 1;
    int64_t scale = 100;
    while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i]))) {
      millis += (rest[i] - '0') * scale;
      scale /= 10;
      ++i;
    }
    if (i == 1) return bad();
    rest = rest.substr(i);
  }
  int64_t offset_minutes = 0;
  if (rest == "Z" || rest == "z") {
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':') {
    int oh = digits_at(rest, 1, 2), om = digits_at(rest, 4, 2);
    if (oh < 0 || om < 0 || oh > 23 || om > 59) return bad();
    offset_minutes = (rest[0] == '+' ? 1 : -1) * (oh * 60 + om);
  } else {
    return bad();
  }
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  int64_t seconds = static_cast<int64_t>(timegm(&tm)) - offset_minutes * 60;
  return seconds * 1000 + millis;
}

}  // namespace gpuq
