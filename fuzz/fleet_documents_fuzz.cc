// SPDX-License-Identifier: Apache-2.0
// Fuzz target: what a fleet node reads from a bucket that anyone with its key may write: the
// JSON documents (a job's spec.json, a claim, a heartbeat) through fleet::parse_object and their
// readers, queue entry and ended/ keys, and S3's XML replies (a ListObjectsV2 page, an <Error>).
// Invariants: a reader fails only with kCorruption (a list page only with kIoError); a document
// that reads is written back (to_json) and reads the same; an entry that parses is the key its
// fields make; a list page that parses has a token whenever it is truncated.
#include "fleet/layout.h"
#include "fleet/s3_xml.h"
#include "fuzz_check.h"

namespace {

using gpuq::Code;
using gpuq::fuzz::parsed_or_failed_with;

void documents(std::string_view text) {
  auto doc = gpuq::fleet::parse_object("fuzz.json", text);
  if (!parsed_or_failed_with(doc, Code::kCorruption)) return;
  auto job = gpuq::fleet::fleet_job_from_json(*doc);
  if (parsed_or_failed_with(job, Code::kCorruption)) {
    auto again = gpuq::fleet::fleet_job_from_json(gpuq::fleet::to_json(*job));
    FUZZ_CHECK(again.has_value() && gpuq::fleet::same_fleet_work(*job, *again) && again->id == job->id &&
                   again->entry() == job->entry(),
               "a spec.json read back differently: {}", again ? "" : again.error().message);
  }
  auto claim = gpuq::fleet::claim_from_json(*doc);
  if (parsed_or_failed_with(claim, Code::kCorruption)) {
    auto again = gpuq::fleet::claim_from_json(gpuq::fleet::to_json(*claim));
    FUZZ_CHECK(again.has_value() && gpuq::fleet::to_json(*again) == gpuq::fleet::to_json(*claim),
               "a claim read back differently: {}", again ? "" : again.error().message);
  }
  auto beat = gpuq::fleet::heartbeat_from_json(*doc);
  if (parsed_or_failed_with(beat, Code::kCorruption)) {
    auto again = gpuq::fleet::heartbeat_from_json(gpuq::fleet::to_json(*beat));
    FUZZ_CHECK(again.has_value() && gpuq::fleet::to_json(*again) == gpuq::fleet::to_json(*beat),
               "a heartbeat read back differently: {}", again ? "" : again.error().message);
  }
}

void keys(std::string_view text) {
  std::string queue = gpuq::fleet::keys::class_queue("any");
  auto entry = gpuq::fleet::parse_entry(queue, queue + std::string(text));
  if (entry) {
    FUZZ_CHECK(gpuq::fleet::entry_key(queue, entry->priority, entry->submitted_ms, entry->id) == entry->key,
               "entry '{}' is not the key its fields make", entry->key);
  }
  std::string ended = std::string(gpuq::fleet::keys::kEnded) + std::string(text);
  if (auto parsed = gpuq::fleet::parse_ended_key(ended)) {
    FUZZ_CHECK(gpuq::fleet::ended_key(parsed->first, parsed->second) == ended,
               "ended key '{}' is not the key its fields make", ended);
  }
}

void replies(std::string_view text) {
  auto page = gpuq::fleet::parse_list_page(text);
  if (parsed_or_failed_with(page, Code::kIoError)) {
    FUZZ_CHECK(!page->truncated || !page->next_token.empty(), "a truncated page without a token");
  }
  (void)gpuq::fleet::parse_error_body(text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = gpuq::fuzz::as_text(data, size);
  documents(text);
  keys(text);
  replies(text);
  return 0;
}
