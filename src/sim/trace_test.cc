// SPDX-License-Identifier: Apache-2.0
#include "sim/trace.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace gpuq::sim {
namespace {

using ::testing::HasSubstr;

std::string write_temp(const std::string& text) {
  std::string path = ::testing::TempDir() + "trace_test_" + std::to_string(getpid()) + ".csv";
  std::ofstream(path) << text;
  return path;
}

TEST(Trace, PlainLines) {
  std::string path =
      write_temp("a,0,1,60\nb,1.5,2,30.25,high\nc,2,4,100,90,80\n\n# comment\nd,3,1,10,,5\n");
  auto jobs = read_trace_csv(path);
  std::remove(path.c_str());
  ASSERT_TRUE(jobs) << jobs.error().message;
  ASSERT_EQ(jobs->size(), 4u);
  const SimJob& a = (*jobs)[0];
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.submit_ms, 0);
  EXPECT_EQ(a.gpus, 1);
  EXPECT_EQ(a.duration_ms, 60000);
  EXPECT_EQ(a.estimate_ms, 60000);  // no est_s: the duration
  EXPECT_EQ(a.priority, 50);
  const SimJob& b = (*jobs)[1];
  EXPECT_EQ(b.submit_ms, 1500);
  EXPECT_EQ(b.duration_ms, 30250);
  EXPECT_EQ(b.priority, 10);
  EXPECT_EQ((*jobs)[2].priority, 90);
  EXPECT_EQ((*jobs)[2].estimate_ms, 80000);
  EXPECT_EQ((*jobs)[3].priority, 50);
  EXPECT_EQ((*jobs)[3].estimate_ms, 5000);
}

TEST(Trace, HeaderMayReorderAndOmit) {
  auto jobs = parse_trace_csv("gpus,id,duration_s,submit_s,est_s\n2,x,10,0,20\n", "t.csv");
  ASSERT_TRUE(jobs) << jobs.error().message;
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].name, "x");
  EXPECT_EQ((*jobs)[0].gpus, 2);
  EXPECT_EQ((*jobs)[0].duration_ms, 10000);
  EXPECT_EQ((*jobs)[0].estimate_ms, 20000);
  auto standard =
      parse_trace_csv("id,submit_s,gpus,duration_s,priority,est_s\ny,0,1,1,low,2\n", "t.csv");
  ASSERT_TRUE(standard) << standard.error().message;
  EXPECT_EQ((*standard)[0].priority, 90);
}

TEST(Trace, BadLinesNameFileAndLine) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"a,0,1,60\nb,zero,1,60\n", "t.csv:2: submit_s 'zero' is not a number"},
      {"a,0,1,60\n\nb,0,1.5,60\n", "t.csv:3: gpus '1.5' is not an integer"},
      {"a,0,1\n", "t.csv:1: 3 fields"},
      {"a,0,1,60,50,1,9\n", "t.csv:1: 7 fields"},
      {"a,0,1,-4\n", "t.csv:1: duration_s '-4'"},
      {"a,0,1,4,urgent\n", "t.csv:1: "},
      {"a,0,1,4\na,1,1,4\n", "t.csv:2: id 'a' appears twice"},
      {"id,submit_s,gpus,when\n", "t.csv:1: unknown column 'when'"},
      {"id,submit_s,gpus\n", "t.csv:1: the header lacks column 'duration_s'"},
      {"a,0,1,4\nid,submit_s,gpus,duration_s\n", "t.csv:2: submit_s 'submit_s'"},
  };
  for (const Case& c : cases) {
    auto jobs = parse_trace_csv(c.text, "t.csv");
    ASSERT_FALSE(jobs) << c.text;
    EXPECT_THAT(jobs.error().message, HasSubstr(c.message)) << c.text;
  }
}

TEST(Trace, MissingFile) {
  auto jobs = read_trace_csv("/nonexistent/trace.csv");
  ASSERT_FALSE(jobs);
  EXPECT_THAT(jobs.error().message, HasSubstr("/nonexistent/trace.csv"));
}

}  // namespace
}  // namespace gpuq::sim
