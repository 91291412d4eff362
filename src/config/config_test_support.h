// SPDX-License-Identifier: Apache-2.0
// Test support for the config reader's tests: the path their messages name and a check that a
// config.toml is refused at a line:column with given words. Included by config tests only.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>

#include "config/config.h"

namespace gpuq::config {

inline constexpr std::string_view kPath = "/home/ann/.gpuq/config.toml";

// A config.toml that must be refused, where (line:column) and with what words.
struct Mistake {
  std::string text;
  std::string where;
  std::string says;
};

inline void expect_refused(std::initializer_list<Mistake> mistakes) {
  for (const Mistake& m : mistakes) {
    auto config = parse_config(m.text, kPath);
    ASSERT_FALSE(config.has_value()) << m.text;
    EXPECT_NE(config.error().message.find(std::string(kPath) + ":" + m.where), std::string::npos)
        << config.error().message;
    EXPECT_NE(config.error().message.find(m.says), std::string::npos) << config.error().message;
  }
}

}  // namespace gpuq::config
