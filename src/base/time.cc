#include "base/time.h"

#include <chrono>
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
