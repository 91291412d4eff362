// SPDX-License-Identifier: Apache-2.0
// A test fixture for the plan checker's tests: plans checked from text (as /p/plan.json, in
// directory /p) with scripts from a map instead of files, and their findings as
// "file:line: severity: message". `shell_` is what `~` and `$NAME` expand from. Tests only.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "spec/plan.h"

namespace gpuq::spec {

class PlanTextFixture : public ::testing::Test {
 protected:
  PlanCheck check(const std::string& text) {
    ScriptReader reader = [this](const std::string& path) -> Result<std::string> {
      auto found = scripts_.find(path);
      if (found == scripts_.end()) return fail(Code::kNotFound, path + ": no such script");
      return found->second;
    };
    PlanContext context{"/p", {}};
    context.shell = shell_;
    return check_plan_text("/p/plan.json", text, context, reader);
  }
  // Every finding, as "file:line: severity: message".
  std::vector<std::string> findings(const std::string& text) {
    std::vector<std::string> out;
    for (const auto& d : check(text).diagnostics) out.push_back(d.text());
    return out;
  }
  std::string only_finding(const std::string& text) {
    auto all = findings(text);
    EXPECT_EQ(all.size(), 1u) << ::testing::PrintToString(all);
    return all.empty() ? "" : all.front();
  }
  std::map<std::string, std::string> scripts_;
  std::map<std::string, std::string> shell_;
};

}  // namespace gpuq::spec
