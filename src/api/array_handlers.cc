// GET /v1/arrays/{ref} (docs/sweeps.md): an array or grid by name or id, with its elements'
// states and their counts, read from the API thread's own store.
#include <charconv>

#include <fmt/format.h>

#include "api/server.h"
#include "model/json.h"

namespace gpuq::api {

Response Server::array(const std::string& ref) {
  int64_t id = 0;
  auto [end, error] = std::from_chars(ref.data(), ref.data() + ref.size(), id);
  bool numeric = !ref.empty() && error == std::errc() && end == ref.data() + ref.size();
  auto found = numeric ? store_->find_array(id) : store_->find_array_by_name(ref);
  if (!found) return error_response(found.error());
  if (!*found) {
    return error_response({Code::kNotFound, fmt::format("no array {}", numeric ? ref : "named '" + ref + "'")});
  }
  const JobArray& array = **found;
  auto ids = store_->array_elements(array.id);
  if (!ids) return error_response(ids.error());
  nlohmann::json counts = nlohmann::json::object();
  nlohmann::json jobs = nlohmann::json::array();
  for (int64_t element : *ids) {
    auto job = store_->find_job(element, false);
    if (!job) return error_response(job.error());
    if (!*job) continue;  // pruned meanwhile
    std::string state(to_string((*job)->state));
    counts[state] = counts.value(state, 0) + 1;
    jobs.push_back({{"id", element}, {"name", (*job)->spec.name}, {"state", state}});
  }
  return json_response(http::status::ok,
                       {{"array", array_to_json(array)}, {"counts", counts}, {"jobs", jobs}});
}

}  // namespace gpuq::api
