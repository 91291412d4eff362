// SPDX-License-Identifier: Apache-2.0
#include "fleet/s3_call.h"

#include <fmt/format.h>

#include "fleet/backoff.h"
#include "fleet/s3_xml.h"

namespace gpuq::fleet {
namespace {

bool may_have_applied(const S3Answer& answer) {
  return answer.status == 0 ? answer.maybe_applied : answer.status >= 500;
}

Code code_for_status(long status, std::string_view s3_code) {
  if (status == 404) return s3_code == "NoSuchBucket" ? Code::kIoError : Code::kNotFound;
  if (status == 412) return Code::kConflict;
  if (status >= 500 || status == 409 || status == 429) return Code::kUnavailable;
  return Code::kIoError;
}

}  // namespace

bool worth_retrying(const S3Answer& answer) {
  if (answer.status == 0) return answer.transient;
  return answer.status >= 500 || answer.status == 409 || answer.status == 429;
}

S3Outcome call_with_retries(S3Http& http, const S3Request& request, const StoreOptions& options) {
  Backoff backoff(options.backoff_ms);
  S3Outcome outcome;
  while (true) {
    outcome.answer = http.send(request);
    ++outcome.attempts;
    if (!worth_retrying(outcome.answer) || outcome.attempts > options.retries) return outcome;
    if (may_have_applied(outcome.answer)) outcome.ambiguous = true;
    backoff.wait();
  }
}

Error s3_failure(std::string_view store, std::string_view op, std::string_view key,
                 const S3Outcome& outcome) {
  const S3Answer& answer = outcome.answer;
  const std::string tries =
      outcome.attempts > 1 ? fmt::format(" (after {} attempts)", outcome.attempts) : "";
  if (answer.status == 0) {
    return {answer.transient ? Code::kUnavailable : Code::kIoError,
            fmt::format("{}: {} {}: no answer{}: {}", store, op, key, tries,
                        answer.transport_error)};
  }
  const S3ErrorBody error = parse_error_body(answer.body);
  std::string text = fmt::format("{}: {} {}: HTTP {}", store, op, key, answer.status);
  if (!error.code.empty()) text += " (" + error.code + ")";
  if (!error.message.empty()) text += ": " + error.message;
  return {code_for_status(answer.status, error.code), text + tries};
}

}  // namespace gpuq::fleet
