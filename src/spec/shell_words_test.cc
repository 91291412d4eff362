// SPDX-License-Identifier: Apache-2.0
#include "spec/shell_words.h"

#include <gtest/gtest.h>

namespace gpuq::spec {
namespace {

using Words = std::vector<std::string>;

Words split(std::string_view text, ShellWordsRules rules = {}) {
  auto words = split_shell_words(text, rules);
  EXPECT_TRUE(words) << text << " -> " << words.error().message;
  return words ? *words : Words{};
}

std::string refusal(std::string_view text, ShellWordsRules rules = {}) {
  auto words = split_shell_words(text, rules);
  EXPECT_FALSE(words) << text;
  return words ? "" : words.error().message;
}

constexpr ShellWordsRules kStep{.refuse_shell_syntax = true};

TEST(ShellWords, QuotesAsAPosixShell) {
  EXPECT_EQ(split("train.sh --lr 3e-4"), (Words{"train.sh", "--lr", "3e-4"}));
  EXPECT_EQ(split("  a\t b  "), (Words{"a", "b"}));
  EXPECT_EQ(split(""), Words{});
  EXPECT_EQ(split("   "), Words{});
  EXPECT_EQ(split("echo 'a  b' \"c d\""), (Words{"echo", "a  b", "c d"}));
  EXPECT_EQ(split("x'a'\"b\"c"), (Words{"xabc"}));  // one word of three parts
  EXPECT_EQ(split("'' \"\""), (Words{"", ""}));     // empty quotes are words
  EXPECT_EQ(split(R"('a\b' "a\b" "\"\\\$\`")"), (Words{R"(a\b)", R"(a\b)", R"("\$`)"}));
  EXPECT_EQ(split(R"(a\ b \'c\")"), (Words{"a b", "'c\""}));        // backslash keeps one char
  EXPECT_EQ(split("a\\"), (Words{"a\\"}));                          // a lone backslash at the end
  EXPECT_EQ(split("a \\\nb \"c\\\nd\""), (Words{"a", "b", "cd"}));  // continuations removed
  EXPECT_EQ(split("a \\\n b"), (Words{"a", "b"}));
}

TEST(ShellWords, CommentsOnlyWhenAsked) {
  EXPECT_EQ(split("a b # c d", {.comments = true}), (Words{"a", "b"}));
  EXPECT_EQ(split("a b#c", {.comments = true}), (Words{"a", "b#c"}));
  EXPECT_EQ(split("a '#b'", {.comments = true}), (Words{"a", "#b"}));
  EXPECT_EQ(split("a # c"), (Words{"a", "#", "c"}));
}

TEST(ShellWords, UnbalancedQuotesAreErrors) {
  EXPECT_EQ(refusal("train.sh --lr \"3e-4"), "unbalanced double quote in \"3e-4");
  EXPECT_EQ(refusal("a 'b c  "), "unbalanced single quote in 'b c");
  EXPECT_EQ(refusal("a x\"b\\\""), "unbalanced double quote in x\"b\\\"");
}

TEST(ShellWords, AStepRefusesWhatAShellWouldInterpret) {
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c : {
           Case{"a && b", "'&&' is shell syntax"},
           Case{"a | b", "'|' is shell syntax"},
           Case{"a >out.txt", "'>' is shell syntax"},
           Case{"a 2>&1", "'>&' is shell syntax"},
           Case{"a; b", "';' is shell syntax"},
           Case{"a &", "'&' is shell syntax"},
           Case{"(a)", "'(' is shell syntax"},
           Case{"a $OUT/x", "'$OUT' would be expanded by a shell"},
           Case{"a \"${OUT}\"", "'${OUT}' would be expanded"},
           Case{"a `date`", "'`' would be expanded"},
           Case{"a\nb", "a newline separates commands"},
           Case{"a # note", "'#' begins a comment"},
           Case{"python ~/x.py", "'~' would be a home directory"},
           Case{"CUDA_VISIBLE_DEVICES=0 python x.py",
                "'CUDA_VISIBLE_DEVICES=0' would set a variable"},
       }) {
    std::string message = refusal(c.text, kStep);
    EXPECT_NE(message.find(c.says), std::string::npos) << c.text << " -> " << message;
  }
  EXPECT_NE(refusal("a | b", kStep).find("bash -c"), std::string::npos);
}

TEST(ShellWords, AStepTakesTheSameSyntaxQuoted) {
  EXPECT_EQ(split("a '&&' '$OUT' \"#x\" \\| '~/x'", kStep),
            (Words{"a", "&&", "$OUT", "#x", "|", "~/x"}));
  EXPECT_EQ(split("bash -c 'prep && train > log'", kStep),
            (Words{"bash", "-c", "prep && train > log"}));
  EXPECT_EQ(split("python x.py --opt=a b#c x~y", kStep),
            (Words{"python", "x.py", "--opt=a", "b#c", "x~y"}));  // only at a word's start
  EXPECT_EQ(split("'X=1' cmd", kStep), (Words{"X=1", "cmd"}));    // quoted: a command's name
  EXPECT_EQ(split("cmd X=1", kStep), (Words{"cmd", "X=1"}));      // an argument
  EXPECT_EQ(split("1X=1 cmd", kStep), (Words{"1X=1", "cmd"}));    // not a variable's name
  EXPECT_EQ(split("echo {i} {lr}", kStep), (Words{"echo", "{i}", "{lr}"}));
}

}  // namespace
}  // namespace gpuq::spec
