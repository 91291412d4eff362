// SPDX-License-Identifier: Apache-2.0
#include "fleet/s3_xml.h"

#include <fmt/format.h>

#include <charconv>
#include <sstream>
#include <pugixml.hpp>

#include "base/time.h"

namespace gpuq::fleet {
namespace {

// S3's messages are a sentence; a longer one is cut so that an error stays readable.
constexpr size_t kMaxMessageBytes = 200;

Result<int64_t> parse_size(std::string_view text, std::string_view key) {
  int64_t size = 0;
  auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), size);
  if (err != std::errc() || end != text.data() + text.size() || size < 0) {
    return fail(Code::kIoError, fmt::format("S3 listed {} with the size \"{}\"",
                                            clip_for_message(key), clip_for_message(text)));
  }
  return size;
}

}  // namespace

std::string unquote_etag(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  return std::string(etag);
}

Result<ListPage> parse_list_page(std::string_view xml) {
  pugi::xml_document doc;
  const pugi::xml_parse_result parsed = doc.load_buffer(xml.data(), xml.size());
  const pugi::xml_node root = doc.child("ListBucketResult");
  if (!parsed || !root) {
    return fail(Code::kIoError, fmt::format("S3 answered a listing with what is not one: {}",
                                            parsed ? clip_for_message(xml) : parsed.description()));
  }
  ListPage page;
  for (pugi::xml_node item : root.children("Contents")) {
    ObjectInfo info;
    info.key = item.child_value("Key");
    info.etag = unquote_etag(item.child_value("ETag"));
    auto size = parse_size(item.child_value("Size"), info.key);
    if (!size) return tl::unexpected(size.error());
    info.size = *size;
    auto modified = parse_rfc3339(item.child_value("LastModified"));
    info.modified_ms = modified ? *modified : 0;
    page.objects.push_back(std::move(info));
  }
  page.truncated = std::string_view(root.child_value("IsTruncated")) == "true";
  page.next_token = root.child_value("NextContinuationToken");
  if (page.truncated && page.next_token.empty()) {
    return fail(Code::kIoError,
                "S3 said the listing goes on (IsTruncated) but gave no NextContinuationToken");
  }
  return page;
}

S3ErrorBody parse_error_body(std::string_view xml) {
  pugi::xml_document doc;
  if (!doc.load_buffer(xml.data(), xml.size())) return {};
  const pugi::xml_node error = doc.child("Error");
  std::string message = error.child_value("Message");
  if (message.size() > kMaxMessageBytes) message = message.substr(0, kMaxMessageBytes) + "...";
  return {error.child_value("Code"), std::move(message)};
}

Result<std::string> parse_upload_id(std::string_view xml) {
  pugi::xml_document doc;
  (void)doc.load_buffer(xml.data(), xml.size());
  std::string id = doc.child("InitiateMultipartUploadResult").child_value("UploadId");
  if (id.empty()) {
    return fail(Code::kIoError, fmt::format("S3 answered CreateMultipartUpload without an UploadId: {}",
                                            clip_for_message(xml)));
  }
  return id;
}

std::string complete_upload_body(const std::vector<UploadedPart>& parts) {
  pugi::xml_document doc;
  pugi::xml_node root = doc.append_child("CompleteMultipartUpload");
  root.append_attribute("xmlns") = "http://s3.amazonaws.com/doc/2006-03-01/";
  for (const UploadedPart& part : parts) {
    pugi::xml_node node = root.append_child("Part");
    node.append_child("PartNumber").text().set(part.number);
    node.append_child("ETag").text().set(("\"" + part.etag + "\"").c_str());
  }
  std::ostringstream out;
  doc.save(out, "", pugi::format_raw);
  return out.str();
}

Result<std::string> parse_complete_upload(std::string_view xml) {
  pugi::xml_document doc;
  (void)doc.load_buffer(xml.data(), xml.size());
  if (const pugi::xml_node error = doc.child("Error")) {
    const S3ErrorBody body = parse_error_body(xml);
    const bool transient = body.code == "InternalError" || body.code == "SlowDown" ||
                           body.code == "ServiceUnavailable";
    return fail(transient ? Code::kUnavailable : Code::kIoError,
                fmt::format("CompleteMultipartUpload failed ({}): {}", body.code, body.message));
  }
  // S3 names the root CompleteMultipartUploadResult; some compatible servers name it otherwise.
  std::string etag = unquote_etag(doc.document_element().child_value("ETag"));
  if (etag.empty()) {
    return fail(Code::kIoError, fmt::format("S3 answered CompleteMultipartUpload without an ETag: {}",
                                            clip_for_message(xml)));
  }
  return etag;
}

}  // namespace gpuq::fleet
