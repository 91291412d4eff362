// SPDX-License-Identifier: Apache-2.0
#include "model/image_ref.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace gpuq {
namespace {

constexpr size_t kMaxNameLength = 255;  // registry and path together, as the runtimes limit it
constexpr size_t kMaxTagLength = 128;
constexpr size_t kDigestHexLength = 64;
constexpr const char* kForm =
    "an image is [HOST[:PORT]/]PATH[:TAG][@sha256:DIGEST], as in busybox, ubuntu:24.04 or "
    "nvcr.io/nvidia/pytorch:24.01-py3";

bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex_lower(char c) { return is_digit(c) || (c >= 'a' && c <= 'f'); }

tl::unexpected<Error> bad(std::string_view reference, const std::string& why) {
  return fail(Code::kInvalidArgument, fmt::format("'{}' is not an image reference: {}; {}",
                                                  clip_for_message(reference), why, kForm));
}

// One path component: [a-z0-9]+ joined by '.', '_', '__' or one or more '-'.
Status check_path_component(std::string_view reference, std::string_view component) {
  if (component.empty()) {
    return bad(reference, "it has an empty path component (two '/' in a row, or one at an end)");
  }
  if (std::any_of(component.begin(), component.end(),
                  [](char c) { return c >= 'A' && c <= 'Z'; })) {
    std::string lower(component);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return bad(reference,
               fmt::format("the path '{}' has capital letters; image paths are lowercase ('{}')",
                           component, lower));
  }
  if (!is_lower_alnum(component.front()) || !is_lower_alnum(component.back())) {
    return bad(reference,
               fmt::format("the path component '{}' must begin and end with a letter or digit",
                           component));
  }
  for (size_t i = 0; i < component.size();) {
    if (is_lower_alnum(component[i])) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < component.size() && !is_lower_alnum(component[end])) ++end;
    std::string_view separator = component.substr(i, end - i);
    bool dashes = separator.find_first_not_of('-') == std::string_view::npos;
    if (separator != "." && separator != "_" && separator != "__" && !dashes) {
      return bad(reference,
                 fmt::format("'{}' in the path '{}' is not a separator; between letters and "
                             "digits a path has '.', '_', '__' or dashes",
                             separator, component));
    }
    i = end;
  }
  return ok();
}

// A registry: a host name (components of letters, digits and inner dashes, joined by '.') or
// an IPv6 address in brackets, then an optional port.
Status check_registry(std::string_view reference, std::string_view registry) {
  std::string_view host = registry;
  std::string_view port;
  size_t colon = registry.starts_with('[') ? registry.find("]:") : registry.rfind(':');
  if (colon != std::string_view::npos) {
    size_t port_at = colon + (registry.starts_with('[') ? 2 : 1);
    host = registry.substr(0, port_at - 1);
    port = registry.substr(port_at);
    if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), is_digit)) {
      return bad(reference, fmt::format("the registry's port '{}' is not a number", port));
    }
  }
  if (host.starts_with('[')) {
    bool address = host.size() > 2 && host.back() == ']' &&
                   std::all_of(host.begin() + 1, host.end() - 1, [](char c) {
                     return std::isxdigit(static_cast<unsigned char>(c)) || c == ':';
                   });
    if (address) return ok();
    return bad(reference,
               fmt::format("the registry '{}' is not an IPv6 address in brackets", host));
  }
  size_t start = 0;
  while (true) {
    size_t dot = host.find('.', start);
    std::string_view label = host.substr(start, dot == std::string_view::npos ? dot : dot - start);
    bool fine =
        !label.empty() && is_alnum(label.front()) && is_alnum(label.back()) &&
        std::all_of(label.begin(), label.end(), [](char c) { return is_alnum(c) || c == '-'; });
    if (!fine) {
      return bad(reference,
                 fmt::format("the registry '{}' is not a host name (letters, digits, inner "
                             "dashes, parts joined by '.')",
                             host));
    }
    if (dot == std::string_view::npos) return ok();
    start = dot + 1;
  }
}

Status check_tag(std::string_view reference, std::string_view tag) {
  bool fine = !tag.empty() && tag.size() <= kMaxTagLength &&
              (is_alnum(tag.front()) || tag.front() == '_') &&
              std::all_of(tag.begin(), tag.end(),
                          [](char c) { return is_alnum(c) || c == '_' || c == '.' || c == '-'; });
  if (fine) return ok();
  return bad(reference, fmt::format("the tag '{}' is not a tag (up to {} letters, digits, '_', '.' "
                                    "and '-', not starting with '.' or '-')",
                                    clip_for_message(tag), kMaxTagLength));
}

Status check_digest(std::string_view reference, std::string_view digest) {
  std::string_view hex = digest.substr(std::min(digest.size(), std::string_view("sha256:").size()));
  bool fine = digest.starts_with("sha256:") && hex.size() == kDigestHexLength &&
              std::all_of(hex.begin(), hex.end(), is_hex_lower);
  if (fine) return ok();
  return bad(reference,
             fmt::format("the digest '{}' is not sha256: followed by {} lowercase hex digits",
                         clip_for_message(digest), kDigestHexLength));
}

}  // namespace

Status check_image_reference(std::string_view reference) {
  if (reference.empty()) return bad(reference, "it is empty");
  if (auto at = std::find_if(reference.begin(), reference.end(),
                             [](char c) {
                               return std::isspace(static_cast<unsigned char>(c)) ||
                                      std::iscntrl(static_cast<unsigned char>(c));
                             });
      at != reference.end()) {
    return bad(reference, "it holds a space or a control character");
  }
  std::string_view name = reference;
  if (size_t at = reference.find('@'); at != std::string_view::npos) {
    if (auto st = check_digest(reference, reference.substr(at + 1)); !st) return st;
    name = reference.substr(0, at);
  }
  size_t last_slash = name.rfind('/');
  size_t tag_colon = name.find(':', last_slash == std::string_view::npos ? 0 : last_slash);
  if (tag_colon != std::string_view::npos) {
    if (auto st = check_tag(reference, name.substr(tag_colon + 1)); !st) return st;
    name = name.substr(0, tag_colon);
  }
  if (name.size() > kMaxNameLength) {
    return bad(reference,
               fmt::format("its name is {} characters, more than {}", name.size(), kMaxNameLength));
  }
  std::string_view path = name;
  size_t first_slash = name.find('/');
  if (first_slash != std::string_view::npos) {
    std::string_view first = name.substr(0, first_slash);
    if (first.find_first_of(".:") != std::string_view::npos || first == "localhost" ||
        first.starts_with('[')) {
      if (auto st = check_registry(reference, first); !st) return st;
      path = name.substr(first_slash + 1);
    }
  }
  size_t start = 0;
  while (true) {
    size_t slash = path.find('/', start);
    if (auto st = check_path_component(
            reference, path.substr(start, slash == std::string_view::npos ? slash : slash - start));
        !st)
      return st;
    if (slash == std::string_view::npos) return ok();
    start = slash + 1;
  }
}

Status check_container_user(std::string_view user) {
  auto part_ok = [](std::string_view part) {
    if (part.empty() || part.size() > 32) return false;
    if (std::all_of(part.begin(), part.end(), is_digit)) {
      // An id the kernel has: 4294967295 means "unchanged" to chown, and more does not fit.
      uint32_t id = 0;
      auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), id);
      return ec == std::errc() && end == part.data() + part.size() && id != UINT32_MAX;
    }
    return (is_alnum(part.front()) || part.front() == '_') &&
           std::all_of(part.begin(), part.end(),
                       [](char c) { return is_alnum(c) || c == '_' || c == '.' || c == '-'; });
  };
  size_t colon = user.find(':');
  bool fine = part_ok(user.substr(0, colon)) &&
              (colon == std::string_view::npos || part_ok(user.substr(colon + 1)));
  if (fine) return ok();
  return fail(
      Code::kInvalidArgument,
      fmt::format(
          "'{}' is not a container user: write UID:GID (as 1000:1000; ids below 4294967295), UID, "
          "or NAME[:GROUP]",
          clip_for_message(user)));
}

std::optional<std::pair<uint32_t, uint32_t>> container_user_ids(std::string_view user) {
  auto number = [](std::string_view text) -> std::optional<uint32_t> {
    uint32_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
  };
  size_t colon = user.find(':');
  auto uid = number(user.substr(0, colon));
  if (!uid) return std::nullopt;
  if (colon == std::string_view::npos) return std::pair{*uid, *uid};
  auto gid = number(user.substr(colon + 1));
  if (!gid) return std::nullopt;
  return std::pair{*uid, *gid};
}

Status check_container_user_on(std::string_view user, uint32_t daemon_uid) {
  auto ids = container_user_ids(user);
  if (daemon_uid == 0 || !ids || ids->first == daemon_uid) return ok();
  return fail(Code::kInvalidArgument,
              fmt::format("--container-user {}: this daemon runs as uid {}, not as root, so it cannot "
                          "give the run directory to uid {} (docs/containers.md); leave "
                          "--container-user out (the containers then run as you), or run the job on "
                          "a daemon run by root",
                          clip_for_message(user), daemon_uid, ids->first));
}

}  // namespace gpuq
