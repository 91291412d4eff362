// SPDX-License-Identifier: Apache-2.0
// Sweeps: the elements of a job array (`--array 0-99:2%4`, `--array 1,4,9`) or of a parameter
// grid (`--grid lr=1e-4,3e-4 --grid seed=0..4`), as the CLI, plans, script headers and the
// daemon read them (docs/sweeps.md). Parsing is strict: every malformed range, step, cap,
// name or value list is an error that says what to write instead, and a sweep larger than
// the limit is refused with its count before any element is made. Elements are numbered
// 0..n-1 in a grid (the last parameter varies fastest) and by their index in an array.
// Pure functions over values; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace gpuq::spec {

// The elements a sweep may have unless `[sweeps] max_elements` says otherwise.
constexpr size_t kDefaultMaxSweepElements = 10'000;
// The most that `[sweeps] max_elements` may allow (config::kMostSweepElements, the same): what a
// client that does not know the daemon's setting checks a sweep's form against.
constexpr size_t kMostSweepElements = 1'000'000;

// One parameter of a grid: a name (letters, digits and `_`, not starting with a digit, so that
// GPUQ_PARAM_<NAME> is a variable) and its values, in the order given, none repeated.
struct SweepParam {
  std::string name;
  std::vector<std::string> values;
  bool operator==(const SweepParam&) const = default;
};

struct Sweep {
  std::vector<int64_t> indexes;    // an array's indexes, in the order given; empty for a grid
  std::vector<SweepParam> params;  // a grid's parameters, in the order given; empty for an array
  int max_running = 0;             // `%MAX`: at most this many elements run at once; 0: no cap
  bool is_grid() const { return !params.empty(); }
  size_t size() const;  // the number of elements
  bool operator==(const Sweep&) const = default;
};

// One element: its index (an array's own index; a grid's position in the product) and, in a
// grid, the value of each parameter.
struct SweepElement {
  int64_t index = 0;
  std::vector<std::pair<std::string, std::string>> params;
  // Whether its name shows its values: false for every element of a grid with a value that a
  // job name cannot hold (a space, '/' or ':', as in a path): those are named by index.
  bool named_by_values = true;
  // What follows the sweep's name in the element's name: "[3]", or "[lr=3e-4,seed=2]".
  std::string suffix() const;
  bool operator==(const SweepElement&) const = default;
};

// `--array` text: comma-separated items, each an index N or a range A-B with an optional step
// (A-B:S, every S-th from A to at most B), then an optional `%MAX`. Indexes are whole numbers
// from 0; none may repeat. Refused over `max_elements` elements.
Result<Sweep> parse_array(std::string_view text, size_t max_elements = kDefaultMaxSweepElements);

// One `--grid` parameter: NAME=V1,V2,... or NAME=A..B[:S] (whole numbers from A to at most B).
// A range of more than `max_elements` values is refused before it is made.
Result<SweepParam> parse_grid_param(std::string_view text,
                                    size_t max_elements = kDefaultMaxSweepElements);

// A grid of `params` (their cartesian product) capped at `max_running` (0: no cap): refuses a
// repeated parameter name and more than `max_elements` elements, with the count.
Result<Sweep> make_grid(std::vector<SweepParam> params, int max_running = 0,
                        size_t max_elements = kDefaultMaxSweepElements);

// `%MAX` given on its own (a grid's `--grid-max`, a plan's "max_running"): a whole number > 0.
Result<int> parse_max_running(std::string_view text);

// What a check (`gpuq lint`, a plan's) says of a sweep's size, with its count: `daemon_max` is
// the daemon's `[sweeps] max_elements` when known, and a larger sweep an error; unknown (0), a
// sweep over kDefaultMaxSweepElements is a warning, since only the daemon's config.toml can
// allow that many. No message for a sweep within the limit.
struct SweepSizeFinding {
  bool error = false;
  std::string message;  // empty: nothing to say
};
SweepSizeFinding sweep_size_finding(const Sweep& sweep, size_t daemon_max = 0);

// Every element of the sweep, in order (indexes as given; a grid's product, last parameter
// fastest). A grid with a value a job name cannot hold names every element by its index.
std::vector<SweepElement> sweep_elements(const Sweep& sweep);

// `arg` with `{i}` replaced by the element's index and `{NAME}` by its value of parameter NAME;
// `{{` and `}}` stand for a brace. A `{` right after `$` is left alone (`${i}` is the shell's),
// and so is any `{...}` that names nothing of the element.
std::string substitute_element(std::string_view arg, const SweepElement& element);

// The environment variables of an element's runs besides GPUQ_ARRAY_ID (which the daemon
// knows): GPUQ_ARRAY_INDEX, and GPUQ_PARAM_<NAME> (upper case) for each parameter.
std::vector<std::pair<std::string, std::string>> element_variables(const SweepElement& element);

}  // namespace gpuq::spec
