// SPDX-License-Identifier: Apache-2.0
// Arrays and grids (spec/sweep.h): every form, every refusal and its message, the elements,
// substitution in arguments and the elements' variables.
#include "spec/sweep.h"

#include <gtest/gtest.h>

namespace gpuq::spec {
namespace {

std::vector<int64_t> indexes(std::string_view text) {
  auto sweep = parse_array(text);
  EXPECT_TRUE(sweep) << text << ": " << sweep.error().message;
  return sweep ? sweep->indexes : std::vector<int64_t>{};
}

// The message of the refusal of `result`, or "" when it was accepted.
template <typename T>
std::string refusal(const Result<T>& result) {
  return result ? "" : result.error().message;
}

TEST(SweepArray, RangesStepsListsAndTheCap) {
  EXPECT_EQ(indexes("0-4"), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(indexes("0-9:3"), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(indexes("1-10:4"), (std::vector<int64_t>{1, 5, 9}));
  EXPECT_EQ(indexes("1,4,9"), (std::vector<int64_t>{1, 4, 9}));
  EXPECT_EQ(indexes("7"), (std::vector<int64_t>{7}));
  EXPECT_EQ(indexes("0-2,10,20-21"), (std::vector<int64_t>{0, 1, 2, 10, 20, 21}));
  auto capped = parse_array("0-99%4");
  ASSERT_TRUE(capped);
  EXPECT_EQ(capped->size(), 100u);
  EXPECT_EQ(capped->max_running, 4);
  EXPECT_FALSE(capped->is_grid());
  EXPECT_EQ(parse_array("1,4,9%2")->max_running, 2);
  EXPECT_EQ(parse_array("0-3")->max_running, 0);
}

TEST(SweepArray, EveryRefusalSaysWhatToWrite) {
  EXPECT_EQ(refusal(parse_array("9-0")), "--array range '9-0' ends before it starts; write 0-9");
  EXPECT_EQ(refusal(parse_array("0-9:0")), "--array range '0-9:0': the step is 0; give 1 or more");
  EXPECT_EQ(refusal(parse_array("0-9%0")), "%0 would never run an element; give 1 or more, as in %4");
  EXPECT_EQ(refusal(parse_array("0-9%x")),
            "%x: the cap on running elements is a whole number, as in %4");
  EXPECT_EQ(refusal(parse_array("")), "--array needs indexes, as in 0-99, 0-99:2, 1,4,9 or 0-99%4");
  EXPECT_EQ(refusal(parse_array("%3")), "--array needs indexes, as in 0-99, 0-99:2, 1,4,9 or 0-99%4");
  EXPECT_EQ(refusal(parse_array("1,,2")),
            "--array '1,,2' has an empty item (two commas?); as in 0-99, 0-99:2, 1,4,9 or 0-99%4");
  EXPECT_EQ(refusal(parse_array("1,")),
            "--array '1,' has an empty item (two commas?); as in 0-99, 0-99:2, 1,4,9 or 0-99%4");
  EXPECT_EQ(refusal(parse_array("-3")),
            "--array '-3': '-3' is not an index (whole numbers from 0), as in 0-99, 0-99:2, "
            "1,4,9 or 0-99%4");
  EXPECT_EQ(refusal(parse_array("a-b")),
            "--array range 'a-b': a range is two whole numbers from 0 and an optional step, as "
            "in 0-9 or 0-9:3");
  EXPECT_EQ(refusal(parse_array("1-5,4")), "--array '1-5,4' names index 4 twice; each element "
                                           "needs its own");
}

TEST(SweepArray, TooManyElementsIsRefusedWithTheCountBeforeAnyIsMade) {
  EXPECT_EQ(refusal(parse_array("0-10000")),
            "the array has 10001 elements, more than [sweeps] max_elements (10000); split it, or "
            "raise max_elements in config.toml");
  // A range of a trillion is counted, not made.
  EXPECT_NE(refusal(parse_array("0-999999999999")).find("1000000000000 elements"), std::string::npos);
  EXPECT_EQ(refusal(parse_array("0-9,20-29", 15)).substr(0, 30), "the array has 20 elements, mor");
  EXPECT_TRUE(parse_array("0-9999"));
}

TEST(SweepGrid, ListsRangesAndTheProductInOrder) {
  auto lr = parse_grid_param("lr=1e-4,3e-4,1e-3");
  ASSERT_TRUE(lr) << lr.error().message;
  EXPECT_EQ(*lr, (SweepParam{"lr", {"1e-4", "3e-4", "1e-3"}}));
  auto seed = parse_grid_param("seed=0..4");
  ASSERT_TRUE(seed);
  EXPECT_EQ(seed->values, (std::vector<std::string>{"0", "1", "2", "3", "4"}));
  EXPECT_EQ(parse_grid_param("bs=16..64:16")->values, (std::vector<std::string>{"16", "32", "48", "64"}));
  EXPECT_EQ(parse_grid_param("data=../a,../b")->values, (std::vector<std::string>{"../a", "../b"}));
  EXPECT_EQ(parse_grid_param("path=../data")->values, (std::vector<std::string>{"../data"}));

  auto grid = make_grid({*lr, *seed}, 3);
  ASSERT_TRUE(grid) << grid.error().message;
  EXPECT_TRUE(grid->is_grid());
  EXPECT_EQ(grid->size(), 15u);
  EXPECT_EQ(grid->max_running, 3);
  auto elements = sweep_elements(*grid);
  ASSERT_EQ(elements.size(), 15u);
  EXPECT_EQ(elements[0].suffix(), "[lr=1e-4,seed=0]");
  EXPECT_EQ(elements[1].suffix(), "[lr=1e-4,seed=1]");  // the last parameter varies fastest
  EXPECT_EQ(elements[7].suffix(), "[lr=3e-4,seed=2]");
  EXPECT_EQ(elements[7].index, 7);
  EXPECT_EQ(elements[14].suffix(), "[lr=1e-3,seed=4]");
}

TEST(SweepGrid, EveryRefusalSaysWhatToWrite) {
  EXPECT_EQ(refusal(parse_grid_param("lr")),
            "--grid 'lr' has no '='; write NAME=VALUES, as in lr=1e-4,3e-4 or seed=0..4");
  EXPECT_EQ(refusal(parse_grid_param("lr=")),
            "--grid 'lr=' has no values; list them (lr=1e-4,3e-4) or give a range (seed=0..4)");
  EXPECT_EQ(refusal(parse_grid_param("=1,2")),
            "--grid '=1,2': a parameter's name is letters, digits and _, not starting with a "
            "digit (it becomes GPUQ_PARAM_NAME)");
  EXPECT_NE(refusal(parse_grid_param("l-r=1")).find("letters, digits and _"), std::string::npos);
  EXPECT_NE(refusal(parse_grid_param("2lr=1")).find("letters, digits and _"), std::string::npos);
  EXPECT_EQ(refusal(parse_grid_param("i=1,2")),
            "--grid 'i=1,2': {i} is the element's index; give the parameter another name");
  EXPECT_EQ(refusal(parse_grid_param("lr=1,,2")),
            "--grid 'lr=1,,2': value '' is empty or has a bracket, '=' or a control character, "
            "which element names cannot show");
  EXPECT_NE(refusal(parse_grid_param("x=a]b")).find("value 'a]b'"), std::string::npos);
  EXPECT_EQ(refusal(parse_grid_param("lr=1,2,1")), "--grid 'lr=1,2,1' lists 1 twice; each value once");
  EXPECT_EQ(refusal(parse_grid_param("seed=4..0")), "--grid seed '4..0' ends before it starts; write 0..4");
  EXPECT_EQ(refusal(parse_grid_param("seed=0..4:0")), "--grid seed '0..4:0': the step is 0; give 1 or more");
  EXPECT_EQ(refusal(parse_grid_param("lr=1e-4..1e-2")),
            "--grid lr '1e-4..1e-2': a range is two whole numbers from 0 and an optional step, as "
            "in 0..9 or 0..9:3");
  EXPECT_NE(refusal(parse_grid_param("seed=0..99999999999")).find("100000000000 elements"),
            std::string::npos);

  SweepParam a{"lr", {"1", "2"}}, b{"seed", {"0"}}, upper{"LR", {"3"}};
  EXPECT_EQ(refusal(make_grid({a, b, a})),
            "--grid lr is given twice; give each parameter once, with all its values");
  EXPECT_EQ(refusal(make_grid({a, upper})), "--grid lr and LR would both be GPUQ_PARAM_LR; rename one");
  EXPECT_EQ(refusal(make_grid({})), "a grid needs at least one --grid NAME=VALUES");
}

TEST(SweepGrid, TooManyElementsIsRefusedWithTheCount) {
  SweepParam a{"a", std::vector<std::string>(200, "")}, b{"b", std::vector<std::string>(100, "")};
  for (size_t k = 0; k < 200; ++k) a.values[k] = std::to_string(k);
  for (size_t k = 0; k < 100; ++k) b.values[k] = std::to_string(k);
  EXPECT_EQ(refusal(make_grid({a, b})),
            "the grid (a 200 × b 100) has 20000 elements, more than [sweeps] max_elements "
            "(10000); split it, or raise max_elements in config.toml");
  EXPECT_TRUE(make_grid({a, b}, 0, 20'000));
  // Many parameters whose product overflows is still a count over the limit, not a wrap.
  std::vector<SweepParam> many;
  for (int k = 0; k < 12; ++k) many.push_back({"p" + std::to_string(k), a.values});
  EXPECT_NE(refusal(make_grid(many)).find("has about 4.1e+27 elements, more than [sweeps]"),
            std::string::npos)
      << refusal(make_grid(many));
}

TEST(SweepElements, ArrayElementsAreTheirIndexes) {
  auto elements = sweep_elements(*parse_array("3,5-7"));
  ASSERT_EQ(elements.size(), 4u);
  EXPECT_EQ(elements[0], (SweepElement{3, {}, true}));
  EXPECT_EQ(elements[3].index, 7);
  EXPECT_EQ(elements[3].suffix(), "[7]");
}

TEST(SweepElements, AGridWithAValueANameCannotHoldIsNamedByIndex) {
  auto data = parse_grid_param("data=/data/a,/data/b");
  auto seed = parse_grid_param("seed=0..1");
  ASSERT_TRUE(data && seed);
  auto elements = sweep_elements(*make_grid({*data, *seed}));
  ASSERT_EQ(elements.size(), 4u);
  EXPECT_EQ(elements[2].suffix(), "[2]");
  EXPECT_EQ(elements[2].params[0].second, "/data/b") << "its values are all still there";
  EXPECT_EQ(substitute_element("--data {data}", elements[2]), "--data /data/b");
}

TEST(SweepElements, SubstitutionReplacesOnlyWhatTheElementNames) {
  SweepElement array{12, {}};
  EXPECT_EQ(substitute_element("--shard={i}", array), "--shard=12");
  EXPECT_EQ(substitute_element("out/{i}/{i}.json", array), "out/12/12.json");
  EXPECT_EQ(substitute_element("{{i}} {i}", array), "{i} 12");
  EXPECT_EQ(substitute_element("${i} $i", array), "${i} $i");  // the shell's own
  EXPECT_EQ(substitute_element("{lr} {", array), "{lr} {");  // names nothing here
  EXPECT_EQ(substitute_element("}}{i}}", array), "}12}");

  SweepElement grid{7, {{"lr", "3e-4"}, {"seed", "2"}}};
  EXPECT_EQ(substitute_element("--lr={lr} --seed={seed} --run={i}", grid),
            "--lr=3e-4 --seed=2 --run=7");
  EXPECT_EQ(substitute_element("{lr}{seed}", grid), "3e-42");
  EXPECT_EQ(substitute_element("{LR}", grid), "{LR}");  // names are case-sensitive
}

TEST(SweepElements, VariablesNameTheIndexAndEachParameterInUpperCase) {
  SweepElement grid{7, {{"lr", "3e-4"}, {"batch_size", "32"}}};
  EXPECT_EQ(element_variables(grid),
            (std::vector<std::pair<std::string, std::string>>{
                {"GPUQ_ARRAY_INDEX", "7"}, {"GPUQ_PARAM_LR", "3e-4"}, {"GPUQ_PARAM_BATCH_SIZE", "32"}}));
  EXPECT_EQ(element_variables(SweepElement{4, {}}),
            (std::vector<std::pair<std::string, std::string>>{{"GPUQ_ARRAY_INDEX", "4"}}));
}

}  // namespace
}  // namespace gpuq::spec
