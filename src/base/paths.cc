// SPDX-License-Identifier: Apache-2.0
#include "base/paths.h"

#include <cstdlib>
#include <filesystem>

namespace gpuq {

Result<std::string> resolve_home(const std::string& flag) {
  std::string home = flag;
  if (home.empty()) {
    if (const char* v = std::getenv("GPUQ_HOME"); v && *v) home = v;
  }
  if (home.empty()) {
    if (const char* v = std::getenv("XDG_STATE_HOME"); v && *v) home = std::string(v) + "/gpuq";
  }
  if (home.empty()) {
    const char* user_home = std::getenv("HOME");
    if (!user_home || !*user_home) {
      return fail(Code::kInvalidArgument,
                  "cannot find a state directory: set --home DIR, $GPUQ_HOME or $HOME");
    }
    home = std::string(user_home) + "/.local/state/gpuq";
  }
  std::error_code ec;
  auto absolute = std::filesystem::absolute(home, ec);
  if (ec) return fail(Code::kInvalidArgument, "bad state directory '" + home + "': " + ec.message());
  return absolute.lexically_normal().string();
}

std::string system_socket_path() {
  const char* set = std::getenv("GPUQ_SYSTEM_SOCKET");
  return set != nullptr && *set != 0 ? std::string(set) : std::string("/run/gpuq/gpuq.sock");
}

}  // namespace gpuq
