// SPDX-License-Identifier: Apache-2.0
// The plan checker's job arrays and grids (plan_checker.h, docs/sweeps.md): a plan job's
// "array", "grid" and "max_running" (or its script's `#gpuq array=` / `grid=` / `max_running=`
// headers) checked with the parsers `gpuq submit --array/--grid` uses, each error at the line
// that wrote it; and dependencies on an array's elements ("shards[3]"), which must exist.
#include <fmt/format.h>

#include "spec/plan_checker.h"

namespace gpuq::spec::plan_check {
namespace {

using nlohmann::json;

constexpr const char* kSweepKeys[] = {"array", "grid", "max_running"};
constexpr int64_t kMostMaxRunning = 1'000'000;

// The names of an array's elements ("shards[3]", "g[lr=3e-4,seed=2]"), made on first use.
const std::set<std::string>& element_names(const std::string& name, PlanArray& array) {
  if (!array.element_names) {
    array.element_names.emplace();
    for (const auto& element : sweep_elements(array.sweep)) {
      array.element_names->insert(name + element.suffix());
    }
  }
  return *array.element_names;
}

// The plan's array that `target` ("shards[3]") names an element of, or arrays.end().
std::map<std::string, PlanArray>::iterator array_of_element(
    std::map<std::string, PlanArray>& arrays, const std::string& target) {
  size_t open = target.find('[');
  if (open == std::string::npos || target.back() != ']') return arrays.end();
  return arrays.find(target.substr(0, open));
}

}  // namespace

std::optional<Sweep> PlanChecker::take_sweep(const WrittenKeys& written, const std::string& pointer,
                                             const std::string& id, const HeaderFields& headers,
                                             const std::string& script_path, json& request,
                                             json& sweep_fields) {
  for (const char* key : kSweepKeys) {
    if (auto it = request.find(key); it != request.end()) {
      sweep_fields[key] = std::move(*it);
      request.erase(key);
    }
  }
  if (sweep_fields.empty()) return std::nullopt;
  // Where `key` (its entry `item`) was written: the plan's entry, else the script's headers.
  auto where = [&](const std::string& key, std::optional<size_t> item) {
    if (written.contains(key)) {
      std::string key_pointer = JsonLines::child(pointer, key);
      return std::pair(path_, line(item ? JsonLines::child(key_pointer, *item) : key_pointer));
    }
    auto items = headers.item_lines.find(key);
    auto first = headers.lines.find(key);
    if (item && items != headers.item_lines.end() && *item < items->second.size()) {
      return std::pair(script_path, items->second[*item]);
    }
    return std::pair(script_path, first == headers.lines.end() ? 0 : first->second);
  };
  auto fail_at = [&](const std::string& key, std::optional<size_t> item, std::string message) {
    auto [file, at] = where(key, item);
    error(file, at, fmt::format("job '{}': {}", id, message));
    return std::optional<Sweep>();
  };
  const bool is_array = sweep_fields.contains("array"), is_grid = sweep_fields.contains("grid");
  if (is_array && is_grid) {
    return fail_at("grid", std::nullopt,
                   "give \"array\" or \"grid\", not both (a grid's elements are numbered as an "
                   "array's)");
  }
  if (!is_array && !is_grid) {
    return fail_at("max_running", std::nullopt,
                   "\"max_running\" caps how many elements of a job array or grid run at once; "
                   "add \"array\" or \"grid\", or remove it");
  }
  Result<Sweep> sweep;
  if (is_array) {
    const json& text = sweep_fields["array"];
    if (!text.is_string()) {
      return fail_at("array", std::nullopt,
                     "\"array\" must be a string such as \"0-9\", \"0-99:2%4\" or \"1,4,9\"");
    }
    sweep = parse_array(text.get<std::string>(), kMostSweepElements);
    if (!sweep) return fail_at("array", std::nullopt, "\"array\": " + sweep.error().message);
  } else {
    const json& list = sweep_fields["grid"];
    auto texts = list.is_array() ? string_list(list) : std::nullopt;
    if (!texts || texts->empty()) {
      return fail_at("grid", std::nullopt,
                     "\"grid\" must be a list of parameters in the order they vary, as "
                     "[\"lr=1e-4,3e-4\", \"seed=0..4\"] (one NAME=VALUES string each)");
    }
    std::vector<SweepParam> params;
    for (size_t k = 0; k < texts->size(); ++k) {
      auto param = parse_grid_param((*texts)[k], kMostSweepElements);
      if (!param) return fail_at("grid", k, "\"grid\": " + param.error().message);
      params.push_back(std::move(*param));
    }
    sweep = make_grid(std::move(params), 0, kMostSweepElements);
    if (!sweep) return fail_at("grid", std::nullopt, "\"grid\": " + sweep.error().message);
  }
  if (sweep_fields.contains("max_running")) {
    const json& cap = sweep_fields["max_running"];
    if (!cap.is_number_integer() || cap.get<int64_t>() < 1 ||
        cap.get<int64_t>() > kMostMaxRunning) {
      return fail_at("max_running", std::nullopt,
                     fmt::format("\"max_running\" must be a whole number from 1 to {}, as 4",
                                 kMostMaxRunning));
    }
    int max_running = static_cast<int>(cap.get<int64_t>());
    if (sweep->max_running != 0 && sweep->max_running != max_running) {
      return fail_at("max_running", std::nullopt,
                     fmt::format("the array says %{} and \"max_running\" {}; give one",
                                 sweep->max_running, max_running));
    }
    sweep->max_running = max_running;
  }
  const char* kind = is_array ? "array" : "grid";
  if (id.find_first_of("[]") != std::string::npos) {
    return fail_at(kind, std::nullopt,
                   "an array's id cannot hold [ or ]: its elements are named ID[3] or "
                   "ID[lr=3e-4]; choose another id");
  }
  if (auto size = sweep_size_finding(*sweep, context_.max_sweep_elements); !size.message.empty()) {
    if (size.error) return fail_at(kind, std::nullopt, size.message);
    auto [file, at] = where(kind, std::nullopt);
    warning(file, at, fmt::format("job '{}': {}", id, size.message));
  }
  arrays_.emplace(id, PlanArray{*sweep, line(pointer), std::nullopt});
  return std::move(*sweep);
}

bool PlanChecker::names_plan_element(const std::string& job_id, const DependencyRef& ref) {
  const std::string& target = ref.where.text;
  auto array = array_of_element(arrays_, target);
  if (array == arrays_.end()) return false;
  if (element_names(array->first, array->second).count(target)) return true;
  auto elements = sweep_elements(array->second.sweep);
  error(ref.where.file, ref.where.line,
        fmt::format("job '{}': dep '{}': array '{}' (line {}) has no such element; its {} "
                    "element{} are {}{} to {}{}",
                    job_id, target, array->first, array->second.line, elements.size(),
                    elements.size() == 1 ? "" : "s", array->first, elements.front().suffix(),
                    array->first, elements.back().suffix()));
  return true;
}

std::string PlanChecker::dependency_node(const std::string& target) {
  auto array = array_of_element(arrays_, target);
  return array == arrays_.end() ? target : array->first;
}

void PlanChecker::check_element_names() {
  for (const auto& [id, at] : id_lines_) {
    auto array = array_of_element(arrays_, id);
    if (array == arrays_.end() || !element_names(array->first, array->second).count(id)) continue;
    error(path_, at,
          fmt::format("job '{}' has the name of an element of array '{}' (line {}); rename it", id,
                      array->first, array->second.line));
  }
}

}  // namespace gpuq::spec::plan_check
