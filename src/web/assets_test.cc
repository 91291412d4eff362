// SPDX-License-Identifier: Apache-2.0
#include "web/assets.h"

#include <gtest/gtest.h>

namespace gpuq::web {
namespace {

TEST(Assets, RootServesTheIndexPage) {
  const Asset* root = find_asset("/");
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->path, "/index.html");
  EXPECT_EQ(root->content_type, "text/html; charset=utf-8");
  EXPECT_NE(root->body.find("<!doctype html>"), std::string_view::npos);
  EXPECT_EQ(root, find_asset("/index.html"));
}

TEST(Assets, EachHasAGzipCopyAndAQuotedEtag) {
  ASSERT_FALSE(all_assets().empty());
  for (const Asset& asset : all_assets()) {
    ASSERT_GE(asset.gzip_body.size(), 2u) << asset.path;
    EXPECT_EQ(static_cast<unsigned char>(asset.gzip_body[0]), 0x1f) << asset.path;
    EXPECT_EQ(static_cast<unsigned char>(asset.gzip_body[1]), 0x8b) << asset.path;
    EXPECT_EQ(asset.etag.front(), '"');
    EXPECT_EQ(asset.etag.back(), '"');
    EXPECT_EQ(asset.etag.size(), 34u);
  }
}

// The daemon serves the pages under Content-Security-Policy "default-src 'self'": the index
// must load its script and styles from files, with no inline script, style block or attribute.
TEST(Assets, IndexLoadsOnlyExternalScriptAndStyles) {
  const Asset* index = find_asset("/");
  ASSERT_NE(index, nullptr);
  EXPECT_NE(index->body.find("<script src=\"app.js\""), std::string_view::npos);
  EXPECT_NE(index->body.find("<link rel=\"stylesheet\" href=\"app.css\">"), std::string_view::npos);
  EXPECT_EQ(index->body.find("<script>"), std::string_view::npos);
  EXPECT_EQ(index->body.find("<style"), std::string_view::npos);
  EXPECT_EQ(index->body.find("style="), std::string_view::npos);
  const Asset* app = find_asset("/app.js");
  ASSERT_NE(app, nullptr);
  EXPECT_EQ(app->content_type, "text/javascript; charset=utf-8");
  const Asset* css = find_asset("/app.css");
  ASSERT_NE(css, nullptr);
  EXPECT_EQ(css->content_type, "text/css; charset=utf-8");
}

TEST(Assets, UnknownPathsAreNotServed) {
  EXPECT_EQ(find_asset("/nope.js"), nullptr);
  EXPECT_EQ(find_asset("index.html"), nullptr);
  EXPECT_EQ(find_asset("/../index.html"), nullptr);
  EXPECT_EQ(find_asset(""), nullptr);
}

}  // namespace
}  // namespace gpuq::web
