// SPDX-License-Identifier: Apache-2.0
// The tables config.toml's reader takes from their own files (config_fleet.cc, config_http.cc,
// config_cgroup.cc, config_sweeps.cc, config_containers.cc): what each reads, and each mistake's line and fix.
#include "config/config.h"

#include <gtest/gtest.h>

#include "config/config_test_support.h"

namespace gpuq::config {
namespace {

TEST(ParseConfigTest, TheFleetTable) {
  auto config = parse_config(R"([fleet]
url = "s3://bucket/team"
node = "gpu-7"
classes = ["a100", "big"]
heartbeat = "10s"
poll = "1s"
lease = "30s"
sync_every = "1m"
timeout = "5s"
workdir = "/srv/work"
min_free_disk = "500MiB"
part_size = "16MiB"
transfers = 8
data = "s3://data-bucket/team"
endpoint = "https://s3.example.com"
region = "eu-central-1"
access_key_id = "AKIA"
secret_access_key = "secret"
)", kPath);
  ASSERT_TRUE(config.has_value()) << config.error().message;
  const FleetConfig& fleet = config->fleet;
  EXPECT_EQ(fleet.url, "s3://bucket/team");
  EXPECT_EQ(fleet.node, "gpu-7");
  EXPECT_EQ(fleet.classes, (std::vector<std::string>{"a100", "big"}));
  EXPECT_EQ(fleet.heartbeat_ms, 10'000);
  EXPECT_EQ(fleet.poll_ms, 1'000);
  EXPECT_EQ(fleet.lease_ms, 30'000);
  EXPECT_EQ(fleet.sync_every_ms, 60'000);
  EXPECT_EQ(fleet.timeout_ms, 5'000);
  EXPECT_EQ(fleet.workdir, "/srv/work");
  EXPECT_EQ(fleet.min_free_disk_bytes, int64_t{500} << 20);
  EXPECT_EQ(fleet.part_size, int64_t{16} << 20);
  EXPECT_EQ(fleet.transfers, 8);
  EXPECT_EQ(fleet.data, "s3://data-bucket/team");
  EXPECT_EQ(fleet.region, "eu-central-1");
  EXPECT_EQ(fleet.secret_access_key, "secret");
  FleetConfig defaults;
  EXPECT_EQ(defaults.heartbeat_ms, 30'000);
  EXPECT_EQ(defaults.poll_ms, 2'000);
  EXPECT_EQ(defaults.lease_ms, 60'000);
  EXPECT_EQ(defaults.sync_every_ms, 120'000);
  EXPECT_EQ(defaults.min_free_disk_bytes, int64_t{10} << 30);
  EXPECT_EQ(defaults.part_size, int64_t{64} << 20);
  EXPECT_EQ(defaults.transfers, 4);
  EXPECT_EQ(parse_config("[fleet]\nmin_free_disk = \"0\"\n", kPath)->fleet.min_free_disk_bytes, 0);
}

TEST(ParseConfigTest, FleetMistakesNameTheLineAndTheFix) {
  expect_refused({{"[fleet]\nlease = 60\n", "2:9", "fleet.lease must be a duration in quotes"},
                  {"[fleet]\nclasses = \"a,b\"\n", "2:11", "fleet.classes must be a list"},
                  {"[fleet]\nworkdir = \"work\"\n", "2:1", "fleet.workdir must be an absolute path"},
                  {"[fleet]\nmin_free_disk = 10\n", "2:17", "fleet.min_free_disk must be a size in quotes"},
                  {"[fleet]\nmin_free_disk = \"lots\"\n", "2:17", "fleet.min_free_disk: "},
                  {"[fleet]\npart_size = \"1MiB\"\n", "2:13", "fleet.part_size must be a size in quotes from 5MiB to 5GiB"},
                  {"[fleet]\npart_size = \"6GiB\"\n", "2:13", "from 5MiB to 5GiB (S3's bounds on a part)"},
                  {"[fleet]\ntransfers = 0\n", "2:13", "fleet.transfers must be a whole number from 1 to 64"},
                  {"[fleet]\ntransfers = \"4\"\n", "2:13", "fleet.transfers must be a whole number"},
                  {"[fleet]\nbucket = \"x\"\n", "2:1", "unknown setting"}});
}

TEST(ParseConfigTest, TheSweepsTable) {
  EXPECT_EQ(parse_config("", kPath)->sweeps_max_elements, 10'000);
  EXPECT_EQ(parse_config("[sweeps]\nmax_elements = 50\n", kPath)->sweeps_max_elements, 50);
  expect_refused({{"[sweeps]\nmax_elements = 0\n", "2:16", "sweeps.max_elements must be a whole number from 1 to 1000000"},
                  {"[sweeps]\nmax_elements = \"10k\"\n", "2:16", "sweeps.max_elements must be"},
                  {"[sweeps]\nmax_elements = 1000001\n", "2:16", "from 1 to 1000000"},
                  {"[sweeps]\nmax = 3\n", "2:1", "unknown setting sweeps.max"}});
}

TEST(ParseConfigTest, TheHttpTable) {
  auto config = parse_config("[http]\nlisten = \"0.0.0.0:0\"\nallowed_hosts = [\"box.lan\", \"[fe80::1]\"]\n"
                             "allow_submit = true\n",
                             kPath);
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->http.listen, "0.0.0.0:0");
  EXPECT_EQ(config->http.allowed_hosts, (std::vector<std::string>{"box.lan", "[fe80::1]"}));
  EXPECT_TRUE(config->http.allow_submit);
  HttpConfig defaults;
  EXPECT_EQ(defaults.listen, "");
  EXPECT_FALSE(defaults.allow_submit);
  auto off = parse_config("[http]\nlisten = \"off\"\n", kPath);
  ASSERT_TRUE(off.has_value());
  EXPECT_EQ(off->http.listen, "off");
}

TEST(ParseConfigTest, HttpMistakesNameTheLineAndTheFix) {
  expect_refused({{"[http]\nlisten = 7878\n", "2:10", "http.listen must be a string"},
                  {"[http]\nlisten = \"box.lan:7878\"\n", "2:10", "ADDR:PORT"},
                  {"[http]\nallowed_hosts = \"box.lan\"\n", "2:17", "http.allowed_hosts must be a list"},
                  {"[http]\nallowed_hosts = [\"box.lan:80\"]\n", "2:18", "without a port"},
                  {"[http]\nallow_submit = \"yes\"\n", "2:16", "true or false"},
                  {"[http]\nport = 1\n", "2:1", "unknown setting http.port"}});
}

TEST(ParseConfigTest, TheCgroupTable) {
  EXPECT_EQ(parse_config("", kPath)->cgroup_root, "");  // automatic
  EXPECT_EQ(parse_config("[cgroup]\nroot = \"off\"\n", kPath)->cgroup_root, "off");
  EXPECT_EQ(parse_config("[cgroup]\nroot = \"/sys/fs/cgroup/gpuq\"\n", kPath)->cgroup_root,
            "/sys/fs/cgroup/gpuq");
  expect_refused({{"[cgroup]\nroot = \"gpuq\"\n", "2:8", "cgroup.root must be \"off\" or an absolute"},
                  {"[cgroup]\nroot = 1\n", "2:8", "cgroup.root must be"},
                  {"[cgroup]\nparent = \"/x\"\n", "2:", "parent"}});
}

TEST(ParseConfigTest, TheContainersTable) {
  auto defaults = parse_config("", kPath);
  ASSERT_TRUE(defaults) << defaults.error().message;
  EXPECT_EQ(defaults->containers.runtime, "");  // whichever is on PATH, docker first
  EXPECT_TRUE(defaults->containers.extra_args.empty());
  auto config = parse_config(
      "[containers]\nruntime = \"podman\"\nextra_args = [\"--runtime\", \"runc\", \"--ulimit\", "
      "\"nofile=1024:1024\"]\n",
      kPath);
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->containers.runtime, "podman");
  EXPECT_EQ(config->containers.extra_args,
            (std::vector<std::string>{"--runtime", "runc", "--ulimit", "nofile=1024:1024"}));
  EXPECT_EQ(parse_config("[containers]\nruntime = \"docker\"\n", kPath)->containers.runtime, "docker");
  EXPECT_TRUE(parse_config("[containers]\nextra_args = []\n", kPath)->containers.extra_args.empty());
  expect_refused(
      {{"[containers]\nruntime = \"nerdctl\"\n", "2:11", "containers.runtime must be \"docker\" or \"podman\""},
       {"[containers]\nruntime = 1\n", "2:11", "containers.runtime must be"},
       {"[containers]\nextra_args = \"--runtime runc\"\n", "2:14", "containers.extra_args must be a list of strings"},
       {"[containers]\nextra_args = [\"--init\", 2]\n", "2:25", "one argument each"},
       {"[containers]\nextra_args = [\"\"]\n", "2:15", "an argument is empty"},
       {"[containers]\nimage = \"x\"\n", "2:1", "unknown setting containers.image; the settings of "
                                             "[containers] are runtime, extra_args"},
       {"[runs]\nruntime = \"podman\"\n", "2:1", "runtime is not a setting of [runs]; move it under [containers]"},
       {"runtime = \"podman\"\n", "1:1", "runtime belongs in a table: write it under [containers]"}});
}

}  // namespace
}  // namespace gpuq::config
