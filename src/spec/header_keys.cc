// SPDX-License-Identifier: Apache-2.0
#include "spec/header_keys.h"

#include <fmt/format.h>

#include <algorithm>

#include "spec/headers.h"

namespace gpuq::spec::header_keys {

const std::vector<Key>& keys() {
  static const std::vector<Key> table = {
      {"name", "name", Kind::kString},
      {"gpus", "gpus", Kind::kInteger, 0, 1024},
      {"priority", "priority", Kind::kPriority},
      {"after", "after", Kind::kCommaList},
      {"after-any", "after_any", Kind::kCommaList},
      {"after-notok", "after_notok", Kind::kCommaList},
      {"requires", "requires", Kind::kList},
      {"done-if", "done_if", Kind::kString},
      {"wait-file", "wait_file", Kind::kList},
      {"lane", "lanes", Kind::kCommaList},
      {"retries", "retries", Kind::kInteger, 0, 1000},
      {"retry-delay", "retry_delay", Kind::kDuration},
      {"timeout", "timeout", Kind::kDuration},
      {"est", "est", Kind::kDuration},
      {"gpu-mem", "gpu_mem", Kind::kInteger, 0, int64_t{1} << 30},
      {"share", "share", Kind::kBool},
      {"not-before", "not_before", Kind::kTime},
      {"hold", "hold", Kind::kBool},
      {"preempt", "preempt", Kind::kPreempt},
      {"restart-within", "restart_within", Kind::kDuration},
      {"requires-warn", "requires_warn", Kind::kDuration},
      {"quiet", "quiet", Kind::kDuration},
      {"warn-after", "warn_after", Kind::kDuration},
      {"array", "array", Kind::kArray},
      {"grid", "grid", Kind::kGridParam},
      {"max-running", "max_running", Kind::kInteger, 1, 1'000'000},
      {"image", "image", Kind::kImage},
      {"pull", "pull", Kind::kPull},
      {"container-user", "container_user", Kind::kContainerUser},
  };
  return table;
}

// Accepts the request spelling (done_if) and `lanes` as well as the flag spelling.
const Key* find_key(std::string name) {
  std::replace(name.begin(), name.end(), '_', '-');
  if (name == "lanes") name = "lane";
  for (const Key& k : keys()) {
    if (name == k.flag) return &k;
  }
  return nullptr;
}

namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string suggestion(std::string_view unknown) {
  const Key* best = nullptr;
  size_t best_distance = 3;
  for (const Key& k : keys()) {
    if (k.kind == Kind::kUnsupported) continue;
    size_t d = edit_distance(unknown, k.flag);
    if (d < best_distance) {
      best_distance = d;
      best = &k;
    }
  }
  return best ? fmt::format("did you mean '{}'? ", best->flag) : "";
}

// How a field of the headers is written: "gpus=", "# gpuq-in:".
std::string directive_of(const std::string& field) {
  if (field == "inputs") return "# gpuq-in:";
  if (field == "outputs") return "# gpuq-out:";
  if (field == "resume") return "# gpuq-resume:";
  const Key* key = find_key(field);
  return key ? fmt::format("{}=", key->flag) : field;
}

}  // namespace gpuq::spec::header_keys

namespace gpuq::spec {

using header_keys::Key;
using header_keys::keys;
using header_keys::Kind;

std::string known_header_keys() {
  std::string out;
  for (const Key& k : keys()) {
    if (k.kind == Kind::kUnsupported) continue;
    if (!out.empty()) out += ", ";
    out += k.flag;
  }
  return out;
}

}  // namespace gpuq::spec
