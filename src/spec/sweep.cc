// SPDX-License-Identifier: Apache-2.0
#include "spec/sweep.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <optional>

#include <fmt/format.h>

namespace gpuq::spec {
namespace {

constexpr std::string_view kArrayForms = "as in 0-99, 0-99:2, 1,4,9 or 0-99%4";

// A whole number from 0 written with digits only, or nullopt.
std::optional<int64_t> whole_number(std::string_view text) {
  if (text.empty() || text.size() > 15) return std::nullopt;
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

// A range A-B[:S] (separator `-`) or A..B[:S] (separator `..`): its start, end and step.
struct Range {
  int64_t start = 0, end = 0, step = 1;
  size_t count() const { return static_cast<size_t>((end - start) / step) + 1; }
};

Result<Range> parse_range(std::string_view text, std::string_view separator, std::string_view what) {
  size_t at = text.find(separator);
  std::string_view start = text.substr(0, at);
  std::string_view rest = text.substr(at + separator.size());
  std::string_view step = "1";
  if (size_t colon = rest.find(':'); colon != std::string_view::npos) {
    step = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
  }
  auto a = whole_number(start), b = whole_number(rest), s = whole_number(step);
  if (!a || !b || !s) {
    return invalid_argument(fmt::format("{} '{}': a range is two whole numbers from 0 and an optional step, "
                               "as in 0{}9 or 0{}9:3",
                               what, text, separator, separator));
  }
  if (*b < *a) {
    return invalid_argument(fmt::format("{} '{}' ends before it starts; write {}{}{}", what, text, *b,
                               separator, *a));
  }
  if (*s == 0) return invalid_argument(fmt::format("{} '{}': the step is 0; give 1 or more", what, text));
  return Range{*a, *b, *s};
}

tl::unexpected<Error> too_many(std::string_view what, size_t count, size_t max_elements) {
  return invalid_argument(fmt::format("the {} has {} elements, more than [sweeps] max_elements ({}); split "
                             "it, or raise max_elements in config.toml",
                             what, count, max_elements));
}

// A value that would make an element's name ambiguous or unprintable.
bool bad_value(std::string_view value) {
  return value.empty() || std::any_of(value.begin(), value.end(), [](char c) {
           return c == '[' || c == ']' || c == '=' || c == ',' ||
                  std::iscntrl(static_cast<unsigned char>(c));
         });
}

// Whether `text` is a number as strtod reads it (for telling "1e-4..1e-2" from "../data").
bool looks_numeric(std::string_view text) {
  if (text.empty()) return false;
  std::string copy(text);
  char* end = nullptr;
  std::strtod(copy.c_str(), &end);
  return end == copy.c_str() + copy.size();
}

std::string env_name(std::string_view param) {
  std::string name = "GPUQ_PARAM_";
  for (char c : param) name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

}  // namespace

size_t Sweep::size() const {
  if (!is_grid()) return indexes.size();
  size_t n = 1;
  for (const auto& p : params) n *= p.values.size();
  return n;
}

std::string SweepElement::suffix() const {
  if (params.empty() || !named_by_values) return fmt::format("[{}]", index);
  std::string out = "[";
  for (size_t k = 0; k < params.size(); ++k) {
    if (k > 0) out += ',';
    out += params[k].first + "=" + params[k].second;
  }
  return out + "]";
}

Result<int> parse_max_running(std::string_view text) {
  auto value = whole_number(text);
  if (!value || *value > 1'000'000) {
    return invalid_argument(fmt::format("%{}: the cap on running elements is a whole number, as in %4",
                               text));
  }
  if (*value == 0) return invalid_argument("%0 would never run an element; give 1 or more, as in %4");
  return static_cast<int>(*value);
}

Result<Sweep> parse_array(std::string_view text, size_t max_elements) {
  Sweep sweep;
  if (size_t percent = text.rfind('%'); percent != std::string_view::npos) {
    auto max = parse_max_running(text.substr(percent + 1));
    if (!max) return tl::unexpected(max.error());
    sweep.max_running = *max;
    text = text.substr(0, percent);
  }
  if (text.empty()) return invalid_argument(fmt::format("--array needs indexes, {}", kArrayForms));
  // The items first, and their count, so that a huge range is refused before it is made.
  std::vector<Range> ranges;
  size_t count = 0;
  for (size_t begin = 0; begin <= text.size();) {
    size_t comma = std::min(text.find(',', begin), text.size());
    std::string_view item = text.substr(begin, comma - begin);
    if (item.empty()) {
      return invalid_argument(fmt::format("--array '{}' has an empty item (two commas?); {}", text,
                                 kArrayForms));
    }
    if (item.find('-', 1) != std::string_view::npos && item.front() != '-') {
      auto range = parse_range(item, "-", "--array range");
      if (!range) return tl::unexpected(range.error());
      ranges.push_back(*range);
    } else if (auto index = whole_number(item)) {
      ranges.push_back(Range{*index, *index, 1});
    } else {
      return invalid_argument(fmt::format("--array '{}': '{}' is not an index (whole numbers from 0), {}",
                                 text, item, kArrayForms));
    }
    count += ranges.back().count();
    if (count > max_elements) return too_many("array", count, max_elements);
    begin = comma + 1;
  }
  for (const Range& r : ranges) {
    for (int64_t i = r.start; i <= r.end; i += r.step) sweep.indexes.push_back(i);
  }
  std::vector<int64_t> sorted = sweep.indexes;
  std::sort(sorted.begin(), sorted.end());
  if (auto twice = std::adjacent_find(sorted.begin(), sorted.end()); twice != sorted.end()) {
    return invalid_argument(fmt::format("--array '{}' names index {} twice; each element needs its own",
                               text, *twice));
  }
  return sweep;
}

Result<SweepParam> parse_grid_param(std::string_view text, size_t max_elements) {
  size_t equals = text.find('=');
  if (equals == std::string_view::npos) {
    return invalid_argument(fmt::format("--grid '{}' has no '='; write NAME=VALUES, as in lr=1e-4,3e-4 or "
                               "seed=0..4",
                               text));
  }
  SweepParam param{std::string(text.substr(0, equals)), {}};
  std::string_view values = text.substr(equals + 1);
  const std::string& name = param.name;
  bool good_name = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                   std::all_of(name.begin(), name.end(), [](char c) {
                     return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                   });
  if (!good_name) {
    return invalid_argument(fmt::format("--grid '{}': a parameter's name is letters, digits and _, not "
                               "starting with a digit (it becomes GPUQ_PARAM_NAME)",
                               text));
  }
  if (name == "i") {
    return invalid_argument(fmt::format("--grid '{}': {{i}} is the element's index; give the parameter "
                               "another name",
                               text));
  }
  if (values.empty()) {
    return invalid_argument(fmt::format("--grid '{}' has no values; list them (lr=1e-4,3e-4) or give a "
                               "range (seed=0..4)",
                               text));
  }
  size_t dots = values.find("..");
  if (values.find(',') == std::string_view::npos && dots != std::string_view::npos &&
      looks_numeric(values.substr(0, dots))) {
    auto range = parse_range(values, "..", "--grid " + name);
    if (!range) return tl::unexpected(range.error());
    if (range->count() > max_elements) {
      return too_many("range " + std::string(values), range->count(), max_elements);
    }
    for (int64_t v = range->start; v <= range->end; v += range->step) {
      param.values.push_back(std::to_string(v));
    }
    return param;
  }
  for (size_t begin = 0; begin <= values.size();) {
    size_t comma = std::min(values.find(',', begin), values.size());
    std::string_view value = values.substr(begin, comma - begin);
    if (bad_value(value)) {
      return invalid_argument(fmt::format("--grid '{}': value '{}' is empty or has a bracket, '=' or a "
                                 "control character, which element names cannot show",
                                 text, value));
    }
    if (std::find(param.values.begin(), param.values.end(), value) != param.values.end()) {
      return invalid_argument(fmt::format("--grid '{}' lists {} twice; each value once", text, value));
    }
    param.values.emplace_back(value);
    begin = comma + 1;
  }
  return param;
}

Result<Sweep> make_grid(std::vector<SweepParam> params, int max_running, size_t max_elements) {
  if (params.empty()) return invalid_argument("a grid needs at least one --grid NAME=VALUES");
  std::string counts;
  long double count = 1;  // exact below 2^64; a grid past that is only ever refused
  for (size_t k = 0; k < params.size(); ++k) {
    for (size_t j = 0; j < k; ++j) {
      if (env_name(params[j].name) == env_name(params[k].name)) {
        return invalid_argument(params[j].name == params[k].name
                           ? fmt::format("--grid {} is given twice; give each parameter once, "
                                         "with all its values",
                                         params[k].name)
                           : fmt::format("--grid {} and {} would both be {}; rename one",
                                         params[j].name, params[k].name, env_name(params[k].name)));
      }
    }
    counts += fmt::format("{}{} {}", k ? " × " : "", params[k].name, params[k].values.size());
    count *= static_cast<long double>(params[k].values.size());
  }
  if (count > static_cast<long double>(max_elements)) {
    std::string shown = count < 1e15L ? fmt::format("{:.0f}", static_cast<double>(count))
                                      : fmt::format("about {:.2g}", static_cast<double>(count));
    return invalid_argument(fmt::format("the grid ({}) has {} elements, more than [sweeps] max_elements "
                               "({}); split it, or raise max_elements in config.toml",
                               counts, shown, max_elements));
  }
  Sweep sweep;
  sweep.params = std::move(params);
  sweep.max_running = max_running;
  return sweep;
}

SweepSizeFinding sweep_size_finding(const Sweep& sweep, size_t daemon_max) {
  const char* what = sweep.is_grid() ? "grid" : "array";
  if (daemon_max > 0) {
    if (sweep.size() <= daemon_max) return {};
    return {true,
            fmt::format("the {} has {} elements, more than the daemon's [sweeps] max_elements "
                        "({}): split it, or raise max_elements in its config.toml",
                        what, sweep.size(), daemon_max)};
  }
  if (sweep.size() <= kDefaultMaxSweepElements) return {};
  return {false,
          fmt::format("the {} has {} elements, more than the default [sweeps] max_elements ({}): "
                      "the daemon refuses it unless its config.toml allows that many",
                      what, sweep.size(), kDefaultMaxSweepElements)};
}

std::vector<SweepElement> sweep_elements(const Sweep& sweep) {
  std::vector<SweepElement> out;
  out.reserve(sweep.size());
  if (!sweep.is_grid()) {
    for (int64_t index : sweep.indexes) out.push_back(SweepElement{index, {}, true});
    return out;
  }
  bool by_values = std::none_of(sweep.params.begin(), sweep.params.end(), [](const SweepParam& p) {
    return std::any_of(p.values.begin(), p.values.end(), [](const std::string& v) {
      return v.find_first_of(" /\t\n:") != std::string::npos;
    });
  });
  std::vector<size_t> at(sweep.params.size(), 0);  // an odometer over the parameters' values
  for (size_t n = 0; n < sweep.size(); ++n) {
    SweepElement element{static_cast<int64_t>(n), {}, by_values};
    for (size_t k = 0; k < at.size(); ++k) {
      element.params.emplace_back(sweep.params[k].name, sweep.params[k].values[at[k]]);
    }
    out.push_back(std::move(element));
    for (size_t k = at.size(); k-- > 0;) {
      if (++at[k] < sweep.params[k].values.size()) break;
      at[k] = 0;
    }
  }
  return out;
}

std::string substitute_element(std::string_view arg, const SweepElement& element) {
  std::string out;
  for (size_t i = 0; i < arg.size(); ++i) {
    char c = arg[i];
    if ((c == '{' || c == '}') && i + 1 < arg.size() && arg[i + 1] == c) {
      out += c;  // `{{` or `}}`
      ++i;
      continue;
    }
    size_t close = c == '{' ? arg.find('}', i) : std::string_view::npos;
    if (close == std::string_view::npos || (i > 0 && arg[i - 1] == '$')) {
      out += c;
      continue;
    }
    std::string_view name = arg.substr(i + 1, close - i - 1);
    std::optional<std::string> value;
    if (name == "i") value = std::to_string(element.index);
    for (const auto& [param, v] : element.params) {
      if (param == name) value = v;
    }
    if (!value) {
      out += c;  // names nothing: left as written
      continue;
    }
    out += *value;
    i = close;
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> element_variables(const SweepElement& element) {
  std::vector<std::pair<std::string, std::string>> vars;
  vars.emplace_back("GPUQ_ARRAY_INDEX", std::to_string(element.index));
  for (const auto& [name, value] : element.params) vars.emplace_back(env_name(name), value);
  return vars;
}

}  // namespace gpuq::spec
