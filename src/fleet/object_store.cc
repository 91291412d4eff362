#include "fleet/object_store.h"

#include <fmt/format.h>

namespace gpuq::fleet {

Status check_key(std::string_view key) {
  bool valid = !key.empty() && key.size() <= 900 && key.front() != '/' && key.back() != '/';
  for (char c : key) {
    valid = valid && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-' || c == '/');
  }
  size_t start = 0;
  while (valid && start <= key.size()) {
    size_t end = key.find('/', start);
    std::string_view segment = key.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    valid = !segment.empty() && segment != "." && segment != "..";
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  if (valid) return ok();
  return fail(Code::kInvalidArgument,
              fmt::format("key '{}' is refused: keys are 1 to 900 of [A-Za-z0-9._-/] without an "
                          "empty, '.' or '..' segment",
                          clip_for_message(key)));
}

}  // namespace gpuq::fleet
