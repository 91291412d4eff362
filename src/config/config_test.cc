// SPDX-License-Identifier: Apache-2.0
#include "config/config.h"
#include "config/config_hooks.h"
#include "config/config_test_support.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace gpuq::config {
namespace {

constexpr std::string_view kFullExample = R"([lanes.net]
capacity = 1
excludes = ["gpu"]    # a download and GPU work never run at the same time
[lanes.cpu]
capacity = 2

[scheduler]
policy = "backfill"            # fifo | priority | backfill
backfill_unknown_limit = "0s"  # jobs without an estimate backfill only before reservations this far off

[retries]
delay = "10s"                  # first delay; doubles each retry
backoff = 2.0
max_delay = "1h"

[runs]
kill_grace = "10s"             # SIGTERM to SIGKILL
requires_timeout = "30s"       # one REQUIRES / DONE_IF check
requires_poll = "5s"           # first recheck of a false REQUIRES / file dependency
requires_poll_max = "5m"       # backoff cap
max_not_started = 5            # runs in a row that never began before the job is held

[preemption]
gap = 40                       # a job preempts only runs whose priority is worse by this
yield_grace = "5m"             # how long a yield may take before SIGTERM

[cleanup]
poll = "10ms"                  # between the two empty scans that free a GPU after a run
limit = "2m"                   # unconfirmed by then: the GPU goes to attention

[gpu]
probe_interval = "10s"         # how often the GPU probe reads usage and processes
foreign_repeat = "10m"         # resource.foreign is repeated this often while it lasts
foreign_memory_mib = 1024      # used memory with no process listed: foreign (0 = off)
)";

void expect_defaults(const Config& config) {
  EXPECT_TRUE(config.lanes.empty());
  EXPECT_EQ(config.policy, "backfill");
  EXPECT_EQ(config.backfill_unknown_limit_ms, 0);
  EXPECT_EQ(config.retry_delay_ms, 10'000);
  EXPECT_EQ(config.retry_backoff, 2.0);
  EXPECT_EQ(config.retry_max_delay_ms, 3'600'000);
  EXPECT_EQ(config.kill_grace_ms, 10'000);
  EXPECT_EQ(config.requires_timeout_ms, 30'000);
  EXPECT_EQ(config.requires_poll_ms, 5'000);
  EXPECT_EQ(config.requires_poll_max_ms, 300'000);
  EXPECT_EQ(config.max_not_started, 5);
  EXPECT_EQ(config.preemption_gap, 40);
  EXPECT_EQ(config.yield_grace_ms, 300'000);
  EXPECT_EQ(config.cleanup_poll_ms, 10);
  EXPECT_EQ(config.cleanup_limit_ms, 120'000);
  EXPECT_EQ(config.probe_interval_ms, 10'000);
  EXPECT_EQ(config.foreign_repeat_ms, 600'000);
  EXPECT_EQ(config.foreign_memory_mib, 1024);
}

// A fresh directory per test, removed afterwards.
class LoadConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "gpuq-config-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, std::string_view text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  std::string dir_;
};

TEST_F(LoadConfigTest, MissingFileGivesTheDefaults) {
  auto config = load_config(dir_ + "/config.toml");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  expect_defaults(*config);
}

// A file a person named (gpuq simulate --config FILE) must be there: the defaults would hide
// a typo in its name.
TEST_F(LoadConfigTest, AMissingFileNamedOnPurposeIsAnError) {
  std::string path = dir_ + "/conifg.toml";
  auto config = load_config(path, IfMissing::kError);
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().code, Code::kNotFound);
  EXPECT_EQ(config.error().message,
            "cannot read the config file " + path + ": No such file or directory");
}

TEST_F(LoadConfigTest, EmptyFileGivesTheDefaults) {
  auto config = load_config(write("config.toml", "# nothing set yet\n\n"));
  ASSERT_TRUE(config.has_value()) << config.error().message;
  expect_defaults(*config);
}

TEST_F(LoadConfigTest, ReadsTheFile) {
  auto config = load_config(write("config.toml", "[scheduler]\npolicy = \"fifo\"\n"));
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->policy, "fifo");
  EXPECT_EQ(config->retry_delay_ms, 10'000);
}

TEST_F(LoadConfigTest, ErrorsNameTheFile) {
  std::string path = write("config.toml", "[scheduler]\npolicy = \"lifo\"\n");
  auto config = load_config(path);
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().code, Code::kInvalidArgument);
  EXPECT_EQ(config.error().message.rfind(path + ":2:10: ", 0), 0u) << config.error().message;
}

TEST_F(LoadConfigTest, ADirectoryIsAnError) {
  auto config = load_config(dir_);
  ASSERT_FALSE(config.has_value());
  EXPECT_NE(config.error().message.find("cannot read the config file " + dir_), std::string::npos)
      << config.error().message;
}

TEST(ParseConfigTest, TheFullExample) {
  auto config = parse_config(kFullExample, kPath);
  ASSERT_TRUE(config.has_value()) << config.error().message;
  expect_defaults(Config{});
  ASSERT_EQ(config->lanes.size(), 2u);
  EXPECT_EQ(config->lanes[0].name, "cpu");
  EXPECT_EQ(config->lanes[0].capacity, 2);
  EXPECT_TRUE(config->lanes[0].excludes.empty());
  EXPECT_EQ(config->lanes[1].name, "net");
  EXPECT_EQ(config->lanes[1].capacity, 1);
  EXPECT_EQ(config->lanes[1].excludes, (std::vector<std::string>{"gpu"}));
  Config rest = *config;
  rest.lanes.clear();
  expect_defaults(rest);
}

TEST(ParseConfigTest, EverySettingIsRead) {
  auto config = parse_config(R"(
[scheduler]
policy = "priority"
backfill_unknown_limit = "2h"
[retries]
delay = "30s"
backoff = 3
max_delay = "2h30m"
[runs]
kill_grace = "1m"
requires_timeout = "250ms"
requires_poll = "10s"
requires_poll_max = "10m"
max_not_started = 12
[lanes.dl]
excludes = ["gpu", "io"]
[lanes.io]
capacity = 4
excludes = ["dl"]
[preemption]
gap = 80
yield_grace = "90s"
[cleanup]
poll = "20ms"
limit = "30s"
[gpu]
probe_interval = "1s"
foreign_repeat = "1m"
foreign_memory_mib = 0
)",
                             kPath);
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->policy, "priority");
  EXPECT_EQ(config->backfill_unknown_limit_ms, 7'200'000);
  EXPECT_EQ(config->retry_delay_ms, 30'000);
  EXPECT_EQ(config->retry_backoff, 3.0);
  EXPECT_EQ(config->retry_max_delay_ms, 9'000'000);
  EXPECT_EQ(config->kill_grace_ms, 60'000);
  EXPECT_EQ(config->requires_timeout_ms, 250);
  EXPECT_EQ(config->requires_poll_ms, 10'000);
  EXPECT_EQ(config->requires_poll_max_ms, 600'000);
  EXPECT_EQ(config->max_not_started, 12);
  ASSERT_EQ(config->lanes.size(), 2u);
  EXPECT_EQ(config->lanes[0].name, "dl");
  EXPECT_EQ(config->lanes[0].capacity, 1);
  EXPECT_EQ(config->lanes[0].excludes, (std::vector<std::string>{"gpu", "io"}));
  EXPECT_EQ(config->lanes[1].capacity, 4);
  EXPECT_EQ(config->preemption_gap, 80);
  EXPECT_EQ(config->yield_grace_ms, 90'000);
  EXPECT_EQ(config->cleanup_poll_ms, 20);
  EXPECT_EQ(config->cleanup_limit_ms, 30'000);
  EXPECT_EQ(config->probe_interval_ms, 1'000);
  EXPECT_EQ(config->foreign_repeat_ms, 60'000);
  EXPECT_EQ(config->foreign_memory_mib, 0);
}

TEST(ParseConfigTest, InlineLaneTablesAndLaneNameCharacters) {
  auto config = parse_config("lanes.hf-download_2 = { capacity = 3 }\n", kPath);
  ASSERT_TRUE(config.has_value()) << config.error().message;
  ASSERT_EQ(config->lanes.size(), 1u);
  EXPECT_EQ(config->lanes[0].name, "hf-download_2");
  EXPECT_EQ(config->lanes[0].capacity, 3);
}

struct BadCase {
  std::string_view text;
  std::string_view where;  // "line:column"
  std::string_view says;
};

void PrintTo(const BadCase& bad, std::ostream* out) { *out << "\n" << bad.text; }

class ParseConfigErrorTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(ParseConfigErrorTest, NamesLineColumnAndFix) {
  const BadCase& bad = GetParam();
  auto config = parse_config(bad.text, kPath);
  ASSERT_FALSE(config.has_value()) << "accepted:\n" << bad.text;
  EXPECT_EQ(config.error().code, Code::kInvalidArgument);
  std::string prefix = std::string(kPath) + ":" + std::string(bad.where) + ": ";
  EXPECT_EQ(config.error().message.rfind(prefix, 0), 0u)
      << "want " << prefix << "\ngot  " << config.error().message;
  EXPECT_NE(config.error().message.find(bad.says), std::string::npos) << config.error().message;
  EXPECT_EQ(config.error().message.find('\n'), std::string::npos) << config.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Syntax, ParseConfigErrorTest,
    ::testing::Values(
        BadCase{"[scheduler\npolicy = \"fifo\"\n", "1:11", "not valid TOML"},
        BadCase{"[runs]\nkill_grace = \"1s\"\nkill_grace = \"2s\"\n", "3:14",
                "not valid TOML: Error while parsing key-value pair: cannot redefine existing "
                "string 'kill_grace'; see https://toml.io"},
        BadCase{"[scheduler]\npolicy = fifo\n", "2:11",
                "not valid TOML: Error while parsing boolean: expected 'false', saw 'fi'; text "
                "values need double quotes, e.g. delay = \"10s\", policy = \"fifo\"; see "
                "https://toml.io"},
        BadCase{"[retries]\ndelay = 10s\n", "2:11", "text values need double quotes"},
        BadCase{"[scheduler]\npolicy = lifo\n", "2:10", "text values need double quotes"}));

INSTANTIATE_TEST_SUITE_P(
    UnknownNames, ParseConfigErrorTest,
    ::testing::Values(
        BadCase{"[sched]\npolicy = \"fifo\"\n", "1:2", "unknown table [sched]; the tables are"},
        BadCase{"verbose = true\n", "1:1", "unknown setting verbose; settings belong in"},
        BadCase{"\npolicy = \"fifo\"\n", "2:1",
                "policy belongs in a table: write it under "
                "[scheduler]"},
        BadCase{"capacity = 2\n", "1:1", "capacity belongs to a lane: write it under [lanes.NAME]"},
        BadCase{"[scheduler]\npolcy = \"fifo\"\n", "2:1",
                "unknown setting scheduler.polcy; the settings of [scheduler] are policy, "
                "backfill_unknown_limit"},
        BadCase{"[retries]\ndelay = \"1s\"\n  policy = \"fifo\"\n", "3:3",
                "policy is not a setting of [retries]; move it under [scheduler]"},
        BadCase{"[runs]\nrequires_poll = \"1s\"\n[runs.extra]\n", "3:7",
                "unknown setting runs.extra"},
        BadCase{"[lanes.net]\ncap = 1\n", "2:1",
                "unknown setting lanes.net.cap; the settings of a lane are capacity, excludes"}));

INSTANTIATE_TEST_SUITE_P(
    Types, ParseConfigErrorTest,
    ::testing::Values(
        BadCase{"scheduler = 3\n", "1:1", "scheduler must be a table: write [scheduler]"},
        BadCase{"[[lanes]]\nname = \"net\"\n", "1:3", "write [lanes.NAME]"},
        BadCase{"[lanes]\nnet = 2\n", "2:1", "lanes.net must be a table"},
        BadCase{"[scheduler]\npolicy = \"lifo\"\n", "2:10",
                "scheduler.policy must be one of \"fifo\", \"priority\", \"backfill\""},
        BadCase{"[scheduler]\npolicy = 1\n", "2:10", "scheduler.policy must be one of"},
        BadCase{"[scheduler]\nbackfill_unknown_limit = 30\n", "2:26",
                "scheduler.backfill_unknown_limit must be a duration in quotes, e.g. "
                "backfill_unknown_limit = \"10s\""},
        BadCase{"[retries]\ndelay = \"10 s\"\n", "2:9", "retries.delay: bad duration '10 s'"},
        BadCase{"[retries]\ndelay = \"45d\"\n", "2:9",
                "retries.delay = \"45d\" is too long; use at most 30d"},
        BadCase{"[retries]\nbackoff = 0.5\n", "2:11", "retries.backoff must be a number >= 1"},
        BadCase{"[retries]\nbackoff = \"2\"\n", "2:11", "retries.backoff must be a number >= 1"},
        BadCase{"[retries]\nbackoff = nan\n", "2:11", "retries.backoff must be a number >= 1"}));

INSTANTIATE_TEST_SUITE_P(
    Ranges, ParseConfigErrorTest,
    ::testing::Values(
        BadCase{"[retries]\ndelay = \"2m\"\nmax_delay = \"1m\"\n", "3:13",
                "retries.max_delay (1m00s) is shorter than retries.delay (2m00s); raise "
                "max_delay or lower delay"},
        BadCase{"[retries]\ndelay = \"2h\"\n", "2:9", "retries.max_delay (1h00m) is shorter"},
        BadCase{"[runs]\nrequires_poll = \"0s\"\n", "2:17",
                "runs.requires_poll must be longer than 0s, e.g. requires_poll = \"5s\""},
        BadCase{"[runs]\nrequires_timeout = \"0ms\"\n", "2:20",
                "runs.requires_timeout must be longer than 0s"},
        BadCase{"[runs]\nrequires_poll = \"10m\"\n", "2:17",
                "runs.requires_poll_max (5m00s) is shorter than runs.requires_poll (10m00s)"},
        BadCase{"[runs]\nmax_not_started = 0\n", "2:19",
                "runs.max_not_started must be a whole number from 1 to 1000 (how many runs in a "
                "row may never begin before the job is held), e.g. max_not_started = 5"},
        BadCase{"[runs]\nmax_not_started = 1001\n", "2:19",
                "runs.max_not_started must be a whole number from 1 to 1000"},
        BadCase{"[runs]\nmax_not_started = \"5\"\n", "2:19",
                "runs.max_not_started must be a whole number from 1 to 1000"},
        BadCase{"[runs]\nmax_not_started = 2.5\n", "2:19",
                "runs.max_not_started must be a whole number from 1 to 1000"},
        BadCase{"[retries]\nmax_not_started = 3\n", "2:1",
                "max_not_started is not a setting of [retries]; move it under [runs]"},
        BadCase{"[lanes.net]\ncapacity = 0\n", "2:12",
                "lanes.net.capacity must be a whole number from 1 to 1000000"},
        BadCase{"[lanes.net]\ncapacity = 1.5\n", "2:12", "lanes.net.capacity must be a whole"},
        BadCase{"[lanes.net]\ncapacity = \"2\"\n", "2:12", "lanes.net.capacity must be a whole"},
        BadCase{"[lanes.net]\ncapacity = 9999999999\n", "2:12", "must be a whole number"},
        BadCase{"[preemption]\ngap = 0\n", "2:7",
                "preemption.gap must be a whole number from 1 to 1000"},
        BadCase{"[preemption]\nyield_grace = \"0s\"\n", "2:15",
                "preemption.yield_grace must be longer than 0s, e.g. yield_grace = \"5m00s\""},
        BadCase{"[cleanup]\npoll = \"1s\"\nlimit = \"500ms\"\n", "3:9",
                "cleanup.limit (500ms) must be longer than cleanup.poll (1s)"},
        BadCase{"[gpu]\nforeign_memory_mib = -1\n", "2:22", "gpu.foreign_memory_mib must be a whole"},
        BadCase{"[gpu]\nprobe = \"1s\"\n", "2:1",
                "unknown setting gpu.probe; the settings of [gpu] are probe_interval, "
                "foreign_repeat, foreign_memory_mib"}));

INSTANTIATE_TEST_SUITE_P(
    Lanes, ParseConfigErrorTest,
    ::testing::Values(
        BadCase{"[lanes.Net]\n", "1:8", "lane name \"Net\" may use only a-z, 0-9, _ and -"},
        BadCase{"[lanes.\"a b\"]\n", "1:8", "lane name \"a b\" may use only"},
        BadCase{"[lanes.\"\"]\n", "1:8", "lane name \"\" may use only"},
        BadCase{"[lanes.gpu]\n", "1:8", "the lane name gpu is reserved"},
        BadCase{"[lanes.gpu1]\n", "1:8", "the lane name gpu1 is the name of a GPU"},
        BadCase{"[lanes.net]\nexcludes = \"gpu\"\n", "2:12",
                "lanes.net.excludes must be a list of lane names in quotes"},
        BadCase{"[lanes.net]\nexcludes = [\"gpu\", 1]\n", "2:20",
                "lanes.net.excludes holds lane names in quotes; the names are \"gpu\""},
        BadCase{"[lanes.net]\nexcludes = [\"net\"]\n", "2:13", "lane net cannot exclude itself"},
        BadCase{"[lanes.net]\nexcludes = [\"dl\"]\n[lanes.cpu]\n", "2:13",
                "lanes.net.excludes names \"dl\", which is no lane; define [lanes.dl] or use one "
                "of \"gpu\", \"cpu\""},
        BadCase{"[lanes.net]\nexcludes = [\"gpu\", \"gpu\"]\n", "2:20",
                "lanes.net.excludes names \"gpu\" twice; remove one"}));

TEST(ParseConfigTest, RetentionAndTheLogCap) {
  auto defaults = parse_config("", kPath);
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->retention_keep_ms, 30LL * 24 * 3'600'000);
  EXPECT_EQ(defaults->max_log_bytes, int64_t{2} << 30);
  auto set = parse_config("[runs]\nmax_log = \"512MiB\"\n[retention]\nkeep = \"400d\"\n", kPath);
  ASSERT_TRUE(set) << set.error().message;
  EXPECT_EQ(set->max_log_bytes, int64_t{512} << 20);
  EXPECT_EQ(set->retention_keep_ms, 400LL * 24 * 3'600'000);
  auto off = parse_config("[runs]\nmax_log = \"0\"\n[retention]\nkeep = \"forever\"\n", kPath);
  ASSERT_TRUE(off) << off.error().message;
  EXPECT_EQ(off->max_log_bytes, 0);
  EXPECT_EQ(off->retention_keep_ms, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Retention, ParseConfigErrorTest,
    ::testing::Values(
        BadCase{"[retention]\nkeep = \"0s\"\n", "2:8",
                "retention.keep = \"0s\": must be a duration in quotes from \"1m\" to \"36500d\", "
                "or \"forever\""},
        BadCase{"[retention]\nkeep = 30\n", "2:8", "retention.keep must be a duration in quotes"},
        BadCase{"[retention]\nkeep = \"always\"\n", "2:8", "or \"forever\" to keep finished jobs"},
        BadCase{"[retention]\nmax_log = \"1GiB\"\n", "2:1",
                "max_log is not a setting of [retention]; move it under [runs]"},
        BadCase{"[runs]\nmax_log = 1024\n", "2:11", "runs.max_log must be a size in quotes"},
        BadCase{"[runs]\nmax_log = \"2 GiB\"\n", "2:11", "runs.max_log: bad size '2 GiB'"},
        BadCase{"[runs]\nmax_log = \"100B\"\n", "2:11", "too small to hold a line of output"}));

// Found by fuzz/config_fuzz.cc: toml++'s description of a syntax error quotes what it saw,
// newline included ("saw 'i\n'"), and messages quote values as the file spells them after
// TOML's escapes ("1\n2" holds a newline): an error, meant as one line, came out as two.
INSTANTIATE_TEST_SUITE_P(
    OneLine, ParseConfigErrorTest,
    ::testing::Values(
        BadCase{"s=i\n", "1:4", "expected 'inf', saw 'i\\n'"},
        BadCase{"[retries]\ndelay = \"1\\n2\"\n", "2:9", "retries.delay: bad duration '1\\n2'"},
        BadCase{"[lanes.\"a\\nb\"]\n", "1:8", "lane name \"a\\nb\" may use only"},
        BadCase{"[[hook]]\nurl = \"ftp://\\r\\n\"\n", "2:7",
                "url \"ftp://\\r\\n\" must start with"},
        BadCase{"[retention]\nkeep = \"\\u001b[31m\"\n", "2:8",
                "retention.keep = \"\\u001B[31m\""}));

TEST(ParseConfigTest, Watch) {
  auto config = parse_config(R"([watch]
interval = "250ms"
repeat = "5m"
heartbeat = "10s"
requires_warn = "0s"
quiet = "20m"
overdue_factor = 3
gpu_idle = "1h"
gpu_idle_utilization = 10
idle_with_work = "2m"
empty = "1h"
)",
                             kPath);
  ASSERT_TRUE(config) << config.error().message;
  const WatchConfig& w = config->watch;
  EXPECT_EQ(w.interval_ms, 250);
  EXPECT_EQ(w.repeat_ms, 300'000);
  EXPECT_EQ(w.heartbeat_ms, 10'000);
  EXPECT_EQ(w.requires_warn_ms, 0);
  EXPECT_EQ(w.quiet_ms, 1'200'000);
  EXPECT_EQ(w.overdue_factor, 3.0);
  EXPECT_EQ(w.gpu_idle_ms, 3'600'000);
  EXPECT_EQ(w.gpu_idle_utilization, 10);
  EXPECT_EQ(w.idle_with_work_ms, 120'000);
  EXPECT_EQ(w.empty_ms, 3'600'000);
  WatchConfig defaults = parse_config("", kPath)->watch;
  EXPECT_EQ(defaults.requires_warn_ms, 3'600'000);
  EXPECT_EQ(defaults.heartbeat_ms, 30'000);
  EXPECT_EQ(defaults.empty_ms, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Watch, ParseConfigErrorTest,
    ::testing::Values(
        BadCase{"[watch]\ninterval = \"0s\"\n", "2:12", "watch.interval must be longer than 0s"},
        BadCase{"[watch]\noverdue_factor = 0.5\n", "2:18", "watch.overdue_factor must be 0 (off)"},
        BadCase{"[watch]\ngpu_idle_utilization = 101\n", "2:24",
                "watch.gpu_idle_utilization must be a whole number from 0 to 100"},
        BadCase{"[watch]\nquiet = 30\n", "2:9", "watch.quiet must be a duration in quotes"},
        BadCase{"[watch]\nquite = \"1m\"\n", "2:1", "unknown setting watch.quite; the settings of [watch] are"}));

TEST(ParseConfigTest, Hooks) {
  auto config = parse_config(R"([[hook]]
url = "http://127.0.0.1:8080/gpuq"

[[hook]]
name = "log"
events = ["job.*", "queue.idle_with_work"]
command = "cat >> /tmp/events.jsonl"
timeout = "5s"
retry_min = "250ms"
retry_max = "1m"
)",
                             kPath);
  ASSERT_TRUE(config.has_value()) << config.error().message;
  ASSERT_EQ(config->hooks.size(), 2u);
  const HookConfig& web = config->hooks[0];
  // An unnamed hook is named by a digest of its target: stable, and no token shown.
  EXPECT_EQ(web.name.rfind("url-", 0), 0u) << web.name;
  EXPECT_EQ(web.name.size(), 12u) << web.name;
  EXPECT_EQ(web.name, default_hook_name(web));
  EXPECT_EQ(web.url, "http://127.0.0.1:8080/gpuq");
  EXPECT_EQ(web.command, "");
  EXPECT_EQ(web.events, std::vector<std::string>{"*"});
  EXPECT_EQ(web.timeout_ms, 30'000);
  EXPECT_EQ(web.retry_min_ms, 1'000);
  EXPECT_EQ(web.retry_max_ms, 300'000);
  const HookConfig& log = config->hooks[1];
  EXPECT_EQ(log.name, "log");
  EXPECT_EQ(log.command, "cat >> /tmp/events.jsonl");
  EXPECT_EQ(log.events, (std::vector<std::string>{"job.*", "queue.idle_with_work"}));
  EXPECT_EQ(log.timeout_ms, 5'000);
  EXPECT_EQ(log.retry_min_ms, 250);
  EXPECT_EQ(log.retry_max_ms, 60'000);
  EXPECT_TRUE(parse_config("", kPath)->hooks.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Hooks, ParseConfigErrorTest,
    ::testing::Values(
        BadCase{"[hook]\nurl = \"http://x\"\n", "1:1", "hook must be written [[hook]], with two brackets"},
        BadCase{"hook = 1\n", "1:8", "hook must be written [[hook]]"},
        BadCase{"[[hook]]\nurl = \"http://x\"\nevent = [\"*\"]\n", "3:1",
                "unknown setting event of hook 1; the settings of a [[hook]] are name, events, "
                "command, url, timeout, retry_min, retry_max"},
        BadCase{"[[hook]]\ncommand = \"true\"\nurl = \"http://x\"\n", "3:7",
                "hook 1 has both command and url"},
        BadCase{"[[hook]]\nurl = \"http://x\"\n[[hook]]\nname = \"n\"\n", "3:1",
                "hook 2 has neither command nor url"},
        BadCase{"[[hook]]\nurl = \"ftp://x\"\n", "2:7", "url \"ftp://x\" must start with http://"},
        BadCase{"[[hook]]\ncommand = \"\"\n", "2:11", "hook 1: command must be a non-empty text"},
        BadCase{"[[hook]]\ncommand = [\"a\"]\n", "2:11", "hook 1: command must be a non-empty"},
        BadCase{"[[hook]]\ncommand = \"true\"\nname = 3\n", "3:8", "hook 1: name must be a non-empty"},
        BadCase{"[[hook]]\ncommand = \"true\"\nevents = \"job.*\"\n", "3:10",
                "hook 1: events must be a list"},
        BadCase{"[[hook]]\ncommand = \"true\"\nevents = []\n", "3:10", "hook 1: events is empty"},
        BadCase{"[[hook]]\ncommand = \"true\"\nevents = [\"a\", 2]\n", "3:16",
                "hook 1: events must be a list"},
        BadCase{"[[hook]]\ncommand = \"true\"\ntimeout = 30\n", "3:11",
                "hook 1: timeout must be a duration in quotes, e.g. timeout = \"30s\""},
        BadCase{"[[hook]]\ncommand = \"true\"\ntimeout = \"0s\"\n", "3:11",
                "hook 1: timeout = \"0s\" must be longer than 0s"},
        BadCase{"[[hook]]\ncommand = \"true\"\nretry_min = \"soon\"\n", "3:13", "hook 1: retry_min:"},
        BadCase{"[[hook]]\ncommand = \"true\"\nretry_min = \"1m\"\nretry_max = \"10s\"\n", "4:13",
                "hook 1: retry_max (10s) is shorter than retry_min (1m00s)"},
        BadCase{"[[hook]]\ncommand = \"true\"\n[[hook]]\ncommand = \"true\"\n", "4:11",
                "hooks 1 and 2 are both named \"command-"},
        BadCase{"[[hook]]\nname = \"a\"\nurl = \"http://x\"\n[[hook]]\nname = \"a\"\ncommand = \"b\"\n",
                "5:8", "hooks 1 and 2 are both named \"a\"; the name keys"}));

}  // namespace
}  // namespace gpuq::config

namespace gpuq::config {
namespace {

}  // namespace
}  // namespace gpuq::config
