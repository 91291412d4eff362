#include "base/time.h"

#include <chrono>
#include <cctype>
#include <cstdio>
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

Result<int64_t> parse_rfc3339(std::string_view text) {
  auto bad = [&] {
    return fail(Code::kInvalidArgument,
                fmt::format("bad time '{}': use RFC 3339, e.g. 2026-11-29T22:00:00Z or "
                            "2026-11-29T23:00:00+01:00",
                            text));
  };
  int year, month, day, hour, minute, second;
  char sep;
  int consumed = 0;
  std::string s(text);
  if (std::sscanf(s.c_str(), "%4d-%2d-%2d%c%2d:%2d:%2d%n", &year, &month, &day, &sep, &hour, &minute,
                  &second, &consumed) != 7 ||
      (sep != 'T' && sep != 't' && sep != ' ')) {
    return bad();
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return bad();
  }
  std::string_view rest = text.substr(static_cast<size_t>(consumed));
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
    int oh = 0, om = 0;
    if (std::sscanf(std::string(rest.substr(1)).c_str(), "%2d:%2d", &oh, &om) != 2) return bad();
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
