// SPDX-License-Identifier: Apache-2.0
#include "cli/table.h"

#include <gtest/gtest.h>

#include "cli/format.h"

namespace gpuq::cli {
namespace {

TEST(Table, AlignsColumnsToTheWidestCellWithoutTrailingBlanks) {
  Table table({"ID", "NAME", "STATE"});
  table.add_row({"7", "train-a15", "running"});
  table.add_row({"12", "-", "pending"});
  EXPECT_EQ(table.render(false),
            "ID  NAME       STATE\n"
            "7   train-a15  running\n"
            "12  -          pending\n");
}

TEST(Table, EmptyTrailingCellsLeaveNoBlanks) {
  Table table({"A", "B"});
  table.add_row({"long value", ""});
  table.add_row({"x"});
  EXPECT_EQ(table.render(false), "A           B\nlong value\nx\n");
}

TEST(Table, NoColourCodesWhenColourIsOff) {
  Table table({"STATE"});
  table.add_row({Cell("failed", Style::kRed)});
  std::string text = table.render(false);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
}

TEST(Table, ColourDoesNotCountTowardsWidth) {
  Table table({"STATE", "ID"});
  table.add_row({Cell("ok", Style::kGreen), "1"});
  table.add_row({Cell("failed", Style::kRed), "2"});
  EXPECT_EQ(table.render(true),
            "STATE   ID\n"
            "\x1b[32mok\x1b[0m      1\n"
            "\x1b[31mfailed\x1b[0m  2\n");
}

TEST(Table, WidthCountsCodePointsNotBytes) {
  EXPECT_EQ(display_width("naïve"), 5u);
  Table table({"X", "Y"});
  table.add_row({"é", "1"});
  EXPECT_EQ(table.render(false), "X  Y\né  1\n");
}

TEST(Table, HeaderlessTableForKeyValueLines) {
  Table table({});
  table.add_row({"id:", "7"});
  table.add_row({"command:", "train.sh"});
  EXPECT_EQ(table.render(false), "id:       7\ncommand:  train.sh\n");
}

TEST(Table, ControlCharactersInACellAreShownAsEscapes) {
  Table t({"GPU", "NOTE"});
  // A process's command line that would clear the screen, retitle the window and ring the bell.
  t.add_row({"gpu0", "pid 7 evil\x1b[2J\x1b]0;owned\x07 \xc2\x9b" "31m ok \xc3\xa9"});
  EXPECT_EQ(t.render(false),
            "GPU   NOTE\ngpu0  pid 7 evil\\x1b[2J\\x1b]0;owned\\x07 \\u009b31m ok \xc3\xa9\n");
  EXPECT_EQ(terminal_text("tab\there\x7f"), "tab\\x09here\\x7f");
}

TEST(Colour, OnlyOnATerminalWithoutNoColor) {
  EXPECT_TRUE(want_color(true, false));
  EXPECT_FALSE(want_color(false, false));
  EXPECT_FALSE(want_color(true, true));
  EXPECT_FALSE(want_color(false, true));
}

TEST(Colour, StatesHaveTheirColours) {
  EXPECT_EQ(state_style("succeeded"), Style::kGreen);
  EXPECT_EQ(state_style("running"), Style::kGreen);
  EXPECT_EQ(state_style("failed"), Style::kRed);
  EXPECT_EQ(state_style("pending"), Style::kYellow);
  EXPECT_EQ(state_style("cancelled"), Style::kDim);
  EXPECT_EQ(paint("x", Style::kDim, true), "\x1b[2mx\x1b[0m");
  EXPECT_EQ(paint("x", Style::kDim, false), "x");
}

TEST(Format, TruncateKeepsShortTextAndMarksCuts) {
  EXPECT_EQ(truncate("abc", 3), "abc");
  EXPECT_EQ(truncate("abcd", 3), "ab…");
  EXPECT_EQ(truncate("", 3), "");
}

TEST(Format, JobTimesAndLabels) {
  Json pending = Json::parse(R"({"id":7,"name":null,"state":"pending","submitted_at_ms":1000})");
  EXPECT_EQ(job_label(pending), "job 7");
  EXPECT_EQ(job_time(pending, 193'000), "3m12s");
  Json done = Json::parse(R"({"id":8,"name":"eval","state":"succeeded","runs":[
      {"number":1,"started_at_ms":1000,"ended_at_ms":6000,"outcome":"failed"},
      {"number":2,"started_at_ms":10000,"ended_at_ms":100000,"outcome":"succeeded"}]})");
  EXPECT_EQ(job_label(done), "job 8 (eval)");
  EXPECT_EQ(job_time(done, 999'999'999), "1m30s");
  Json running = Json::parse(R"({"id":9,"state":"running","runs":[
      {"number":1,"started_at_ms":1000,"ended_at_ms":null,"outcome":"running"}]})");
  EXPECT_EQ(job_time(running, 46'000), "45s");
  EXPECT_EQ(gpu_list(Json::parse("[0,1]")), "0,1");
  EXPECT_EQ(gpu_list(Json::parse(R"(["gpu0"])")), "gpu0");
  EXPECT_EQ(gpu_list(Json::array()), "-");
}

}  // namespace
}  // namespace gpuq::cli
