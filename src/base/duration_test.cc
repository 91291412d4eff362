// SPDX-License-Identifier: Apache-2.0
#include "base/duration.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <limits>

namespace gpuq {
namespace {

TEST(ParseDuration, AcceptsTheDocumentedForms) {
  struct Case { const char* text; int64_t ms; };
  for (Case c : {Case{"250ms", 250}, Case{"45s", 45'000}, Case{"3m12s", 192'000},
                 Case{"2h30m", 9'000'000}, Case{"1d", 86'400'000}, Case{"90", 90'000},
                 Case{"1h0m5s", 3'605'000}, Case{"1.5h", 5'400'000}, Case{"0.3s", 300},
                 Case{"2.5m", 150'000}, Case{"1.5", 1'500}, Case{".5s", 500}, Case{"1h0.5m", 3'630'000},
                 Case{"1.0004s", 1'000}, Case{"1.0005s", 1'001}, Case{"0.25ms", 0}}) {
    auto parsed = parse_duration(c.text);
    ASSERT_TRUE(parsed.has_value()) << c.text << ": " << parsed.error().message;
    EXPECT_EQ(parsed->count(), c.ms) << c.text;
  }
}

TEST(ParseDuration, RejectsWithAnActionableMessage) {
  for (const char* text : {"", "3x", "m", "5m3h", "3m 2s", "-5s", "1.5.2h", "3m12", ".h", "1,5h"}) {
    auto parsed = parse_duration(text);
    ASSERT_FALSE(parsed.has_value()) << text;
    EXPECT_EQ(parsed.error().code, Code::kInvalidArgument);
    EXPECT_NE(parsed.error().message.find(fmt::format("bad duration '{}': ", text)), std::string::npos) << text;
    EXPECT_NE(parsed.error().message.find("use forms like"), std::string::npos) << text;
  }
  // What is wrong, exactly.
  auto why = [](const char* text) { return parse_duration(text).error().message; };
  EXPECT_NE(why("3x").find("unknown unit 'x' (ms, s, m, h or d)"), std::string::npos);
  EXPECT_NE(why("3m12").find("12 has no unit"), std::string::npos);
  EXPECT_NE(why("1.5.2h").find("unexpected '.' after 1.5"), std::string::npos);
  EXPECT_NE(why("1,5h").find("unexpected ',' after 1"), std::string::npos);
  EXPECT_NE(why("5m3h").find("units must go from largest to smallest"), std::string::npos);
  EXPECT_NE(why("-5s").find("it does not start with a number"), std::string::npos);
  EXPECT_NE(why("3m 2s").find("expected a number at ' 2s'"), std::string::npos);
}

TEST(FormatDuration, KeepsTwoUnits) {
  EXPECT_EQ(format_duration(Millis(850)), "850ms");
  EXPECT_EQ(format_duration(Millis(45'000)), "45s");
  EXPECT_EQ(format_duration(Millis(192'000)), "3m12s");
  EXPECT_EQ(format_duration(Millis(3'900'000)), "1h05m");
  EXPECT_EQ(format_duration(Millis(183'600'000)), "2d03h");
  EXPECT_EQ(format_duration(Millis(-45'000)), "-45s");
}

// The most negative count has no positive counterpart in int64: negating it must not be how
// the sign is handled.
TEST(FormatDuration, ShowsEveryNegativeCount) {
  EXPECT_EQ(format_duration(Millis(-850)), "-850ms");
  EXPECT_EQ(format_duration(Millis(-183'600'000)), "-2d03h");
  EXPECT_EQ(format_duration(Millis(std::numeric_limits<int64_t>::min())), "-106751991167d07h");
  EXPECT_EQ(format_duration(Millis(std::numeric_limits<int64_t>::max())), "106751991167d07h");
}

}  // namespace
}  // namespace gpuq

#include "base/time.h"

namespace gpuq {
namespace {
TEST(Rfc3339, ParsesUtcOffsetsAndFractions) {
  EXPECT_EQ(*parse_rfc3339("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(*parse_rfc3339("1970-01-01T01:00:00+01:00"), 0);
  EXPECT_EQ(*parse_rfc3339("1970-01-01 00:00:01.250Z"), 1250);
  EXPECT_EQ(*parse_rfc3339(format_rfc3339(1795951344915)), 1795951344915);
  for (const char* bad : {"tomorrow", "2026-13-01T00:00:00Z", "2026-11-29T10:00:00", "2026-11-29"}) {
    EXPECT_FALSE(parse_rfc3339(bad)) << bad;
  }
}

// A day the month does not have was taken and rolled into the next month (2026-02-31 read as
// 2026-03-03): a --not-before typed wrong ran days later than meant.
TEST(Rfc3339, RefusesADayTheMonthDoesNotHave) {
  for (const char* bad : {"2026-02-29T00:00:00Z", "2026-02-31T00:00:00Z", "2026-04-31T00:00:00Z",
                          "1900-02-29T00:00:00Z"}) {
    EXPECT_FALSE(parse_rfc3339(bad)) << bad;
  }
  EXPECT_TRUE(parse_rfc3339("2028-02-29T00:00:00Z"));
  EXPECT_TRUE(parse_rfc3339("2000-02-29T00:00:00Z"));
  EXPECT_TRUE(parse_rfc3339("2026-12-31T23:59:59Z"));
}

// sscanf's %2d took signs and spaces, so "T-1:-5:00Z" read as hour -1, minute -5 (seen beside
// the pre-1970 not_before that fuzz_plan's round trip found): each field is exactly its digits.
TEST(Rfc3339, RefusesSignsSpacesAndShortFields) {
  for (const char* bad :
       {"2026-11-29T-1:00:00Z", "2026-11-29T10:-5:00Z", "2026-11-29T10:00:-1Z", "+026-11-29T10:00:00Z",
        "2026-11-29T 1:00:00Z", "2026-1-29T10:00:00Z", "2026-11-29T10:00:00+-1:00",
        "2026-11-29T10:00:00+01:-1", "2026-11-29T10:00:00.Z", "2026-11-29T10:00:00Zjunk"}) {
    EXPECT_FALSE(parse_rfc3339(bad)) << bad;
  }
  EXPECT_EQ(*parse_rfc3339("2026-11-29t10:00:00.5z"), *parse_rfc3339("2026-11-29T10:00:00.500Z"));
  EXPECT_EQ(*parse_rfc3339("1970-01-01T00:00:00-00:30"), 1'800'000);
}
}  // namespace
}  // namespace gpuq

namespace gpuq {
namespace {
TEST(ParseDuration, RefusesValuesThatWouldOverflow) {
  for (const char* text : {"999999999999d", "99999999999h30m", "999999999999", "36500.5d",
                           "9999999999999999999s"}) {
    auto parsed = parse_duration(text);
    ASSERT_FALSE(parsed.has_value()) << text << " = " << parsed->count();
    EXPECT_NE(parsed.error().message.find("too large"), std::string::npos) << text;
  }
  EXPECT_TRUE(parse_duration("36500d"));  // a hundred years is still a duration
}
}  // namespace
}  // namespace gpuq

namespace gpuq {
namespace {

TEST(FormatDurationExact, WritesEveryNonZeroUnitAndReadsBack) {
  EXPECT_EQ(format_duration_exact(Millis(30LL * 86'400'000)), "30d");
  EXPECT_EQ(format_duration_exact(Millis(5'400'000)), "1h30m");
  EXPECT_EQ(format_duration_exact(Millis(120'000)), "2m");
  EXPECT_EQ(format_duration_exact(Millis(1500)), "1s500ms");
  EXPECT_EQ(format_duration_exact(Millis(0)), "0s");
  for (int64_t ms : {int64_t{1}, int64_t{61'001}, int64_t{86'400'000 + 1}, int64_t{365} * 86'400'000}) {
    auto back = parse_duration(format_duration_exact(Millis(ms)));
    ASSERT_TRUE(back) << ms;
    EXPECT_EQ(back->count(), ms);
  }
}

}  // namespace
}  // namespace gpuq
