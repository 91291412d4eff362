#include "cli/transport.h"

#include <fmt/format.h>
#include <pwd.h>

#include <cctype>

namespace gpuq::cli {
namespace {

// "alice (uid 1000)", or "uid 1000" for a uid without a name. The CLI is one thread, so the
// non-reentrant getpwuid will do.
std::string user_label(uid_t uid) {
  const passwd* entry = ::getpwuid(uid);
  if (entry == nullptr || entry->pw_name == nullptr || *entry->pw_name == '\0') {
    return fmt::format("uid {}", uid);
  }
  return fmt::format("{} (uid {})", entry->pw_name, uid);
}

}  // namespace

Status check_socket_owner(const std::string& path, uid_t owner, uid_t cli_uid) {
  if (owner == cli_uid || owner == 0 || cli_uid == 0) return ok();
  return fail(Code::kFailedPrecondition,
              fmt::format("refusing the socket {}: it belongs to {}, not to you ({}), so a "
                          "daemon of that user, or whatever put the socket there, would receive "
                          "what gpuq sends (your jobs' environments included). Use your own "
                          "daemon's home (--home DIR or $GPUQ_HOME); if this socket should be "
                          "yours, remove it and start your daemon: gpuq daemon --detach",
                          path, user_label(owner), user_label(cli_uid)));
}

std::string HttpResponse::header(std::string_view name) const {
  std::string key(name);
  for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto it = headers.find(key);
  return it == headers.end() ? std::string() : it->second;
}

}  // namespace gpuq::cli
