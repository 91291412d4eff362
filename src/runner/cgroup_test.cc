// SPDX-License-Identifier: Apache-2.0
// The containment logic over an in-memory cgroup tree: choosing the containment, preparing the
// tree (the daemon moved into a leaf before controllers are enabled), placing a run, and the
// cgroup cleanup's kill / populated / accounting rules, including peak memory where the
// memory controller exists (this machine's hierarchy has none).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

#include "runner/cgroup.h"
#include "runner/cgroup_cleanup.h"

namespace gpuq::runner {
namespace {

// Files are a map of path to content; groups a set of directories. Writes to cgroup.procs
// move a pid; writes to cgroup.kill empty the group (and its `populated`) unless `stuck`.
class FakeCgroupFiles : public CgroupFiles {
 public:
  std::map<std::string, std::string> files;
  std::set<std::string> groups;
  std::vector<std::pair<std::string, std::string>> writes;
  std::set<std::string> refuse;  // paths whose writes fail
  bool stuck = false;

  void add_group(const std::string& path, const std::string& controllers = "") {
    groups.insert(path);
    files[path + "/cgroup.procs"] = "";
    files[path + "/cgroup.events"] = "populated 0\nfrozen 0\n";
    files[path + "/cgroup.controllers"] = controllers;
    files[path + "/cpu.stat"] = "usage_usec 0\nuser_usec 0\n";
  }
  Result<std::string> read(const std::string& path) override {
    auto it = files.find(path);
    if (it == files.end()) return fail(Code::kNotFound, path);
    return it->second;
  }
  Status write(const std::string& path, const std::string& text) override {
    writes.emplace_back(path, text);
    if (refuse.count(path) || !files.count(path)) return fail(Code::kPermissionDenied, path);
    std::string dir = path.substr(0, path.rfind('/'));
    if (path.ends_with("/cgroup.procs")) {
      for (auto& [name, content] : files) {
        if (name.ends_with("/cgroup.procs")) content = "";
      }
      files[path] = text + "\n";
      files[dir + "/cgroup.events"] = "populated 1\nfrozen 0\n";
    } else if (path.ends_with("/cgroup.kill") && !stuck) {
      files[dir + "/cgroup.procs"] = "";
      files[dir + "/cgroup.events"] = "populated 0\nfrozen 0\n";
    } else if (!path.ends_with("/cgroup.kill")) {
      files[path] += text + "\n";
    }
    return ok();
  }
  Status make_group(const std::string& path) override {
    if (groups.count(path)) return fail(Code::kConflict, path);
    // As the kernel does: a new group is offered what its parent enabled for its children.
    std::string offered;
    std::istringstream enabled(files[path.substr(0, path.rfind('/')) + "/cgroup.subtree_control"]);
    for (std::string word; enabled >> word;) offered += (offered.empty() ? "" : " ") + word.substr(1);
    add_group(path, offered);
    files[path + "/cgroup.kill"] = "";
    files[path + "/cgroup.subtree_control"] = "";
    return ok();
  }
  Status remove_group(const std::string& path) override {
    groups.erase(path);
    std::erase_if(files, [&](const auto& f) { return f.first.starts_with(path + "/"); });
    return ok();
  }
  bool exists(const std::string& path) override { return groups.count(path) || files.count(path); }
};

TEST(Cgroup, ParsesEventsAndFlatKeys) {
  EXPECT_EQ(parse_populated("populated 1\nfrozen 0\n"), true);
  EXPECT_EQ(parse_populated("populated 0\nfrozen 0\n"), false);
  EXPECT_EQ(parse_populated("frozen 0\n"), std::nullopt);
  EXPECT_EQ(parse_flat_key("usage_usec 1234\nuser_usec 1000\n", "user_usec"), 1000);
  EXPECT_EQ(parse_flat_key("usage_usec 1234\n", "system_usec"), std::nullopt);
}

TEST(Cgroup, FindsItsOwnCgroupFromMountinfo) {
  std::string mountinfo =
      "30 23 0:26 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory\n"
      "35 23 0:31 / /sys/fs/cgroup/unified rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n";
  EXPECT_EQ(own_cgroup_dir(mountinfo, "4:memory:/x\n0::/system.slice/gpuq.service\n"),
            "/sys/fs/cgroup/unified/system.slice/gpuq.service");
  EXPECT_EQ(own_cgroup_dir(mountinfo, "0::/\n"), "/sys/fs/cgroup/unified");
  EXPECT_EQ(own_cgroup_dir("30 23 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw\n", "0::/\n"),
            std::nullopt);
}

TEST(Cgroup, ChoosesTheMarkerSweepWithAReason) {
  FakeCgroupFiles fs;
  fs.add_group("/cg");  // the hierarchy's root has no cgroup.events
  fs.files.erase("/cg/cgroup.events");
  fs.add_group("/cg/svc");
  EXPECT_EQ(choose_containment(fs, "off", "/cg/svc", "/cg/svc").kind, "marker");
  auto none = choose_containment(fs, "", std::nullopt, std::nullopt);
  EXPECT_EQ(none.kind, "marker");
  EXPECT_NE(none.reason.find("no cgroup v2"), std::string::npos);
  auto in_root = choose_containment(fs, "", "/cg", "/cg");
  EXPECT_NE(in_root.reason.find("root cgroup"), std::string::npos);
  auto undelegated = choose_containment(fs, "", "/cg/svc", std::nullopt);
  EXPECT_EQ(undelegated.kind, "marker");
  EXPECT_NE(undelegated.reason.find("not delegated"), std::string::npos);
  auto missing = choose_containment(fs, "/nowhere", std::nullopt, std::nullopt);
  EXPECT_EQ(missing.kind, "marker");
  EXPECT_NE(missing.reason.find("not a cgroup v2 directory"), std::string::npos);
}

TEST(Cgroup, ADelegatedCgroupWithoutASubgroupEnablesNoControllers) {
  FakeCgroupFiles fs;
  fs.add_group("/cg/svc", "cpu memory pids");
  fs.files["/cg/svc/cgroup.procs"] = "4242\n";
  fs.files["/cg/svc/cgroup.subtree_control"] = "";
  auto chosen = choose_containment(fs, "", "/cg/svc", "/cg/svc");
  ASSERT_EQ(chosen.kind, "cgroup") << chosen.reason;
  EXPECT_NE(chosen.reason.find("DelegateSubgroup=daemon"), std::string::npos);
  EXPECT_EQ(fs.files["/cg/svc/cgroup.procs"], "4242\n");  // a restarted daemon lands here again
  EXPECT_EQ(fs.files["/cg/svc/cgroup.subtree_control"], "");
  EXPECT_TRUE(fs.groups.count("/cg/svc/runs"));
}

TEST(Cgroup, ARootWithProcessesMovesThemIntoALeafBeforeEnablingControllers) {
  FakeCgroupFiles fs;
  fs.add_group("/cg/svc", "cpu memory pids");
  fs.files["/cg/svc/cgroup.procs"] = "4242\n";
  fs.files["/cg/svc/cgroup.subtree_control"] = "";
  auto chosen = choose_containment(fs, "/cg/svc", "/cg/svc", std::nullopt);
  ASSERT_EQ(chosen.kind, "cgroup") << chosen.reason;
  EXPECT_EQ(chosen.root, "/cg/svc");
  EXPECT_EQ(fs.files["/cg/svc/daemon/cgroup.procs"], "4242\n");
  EXPECT_TRUE(fs.groups.count("/cg/svc/runs"));
  std::vector<std::string> order;
  for (const auto& [path, text] : fs.writes) order.push_back(path + " " + text);
  auto moved = std::find(order.begin(), order.end(), "/cg/svc/daemon/cgroup.procs 4242");
  auto enabled = std::find(order.begin(), order.end(), "/cg/svc/cgroup.subtree_control +memory");
  ASSERT_NE(moved, order.end());
  ASSERT_NE(enabled, order.end());
  EXPECT_LT(moved, enabled);
  EXPECT_EQ(fs.files["/cg/svc/cgroup.subtree_control"], "+cpu\n+memory\n");
}

TEST(Cgroup, ADaemonInTheDelegatedSubgroupUsesTheParentWithControllers) {
  FakeCgroupFiles fs;
  fs.add_group("/cg/svc", "cpu memory");
  fs.files["/cg/svc/cgroup.subtree_control"] = "";
  fs.add_group("/cg/svc/daemon");
  fs.files["/cg/svc/daemon/cgroup.procs"] = "4242\n";
  auto chosen = choose_containment(fs, "", "/cg/svc/daemon", "/cg/svc");
  ASSERT_EQ(chosen.kind, "cgroup") << chosen.reason;
  EXPECT_EQ(chosen.root, "/cg/svc");
  EXPECT_EQ(chosen.reason.find("DelegateSubgroup"), std::string::npos);
  EXPECT_EQ(fs.files["/cg/svc/cgroup.subtree_control"], "+cpu\n+memory\n");
}

TEST(Cgroup, PlacesARunInItsOwnGroup) {
  FakeCgroupFiles fs;
  fs.add_group("/cg/root");
  RunCgroups tree(fs, "/cg/root");
  ASSERT_TRUE(tree.prepare());
  ASSERT_TRUE(tree.place("7-1-ab", 999));
  EXPECT_TRUE(tree.existing_group("7-1-ab").has_value());
  EXPECT_EQ(fs.files["/cg/root/runs/7-1-ab/cgroup.procs"], "999\n");
  fs.refuse.insert("/cg/root/runs/7-2-cd/cgroup.procs");
  EXPECT_FALSE(tree.place("7-2-cd", 1000));
  EXPECT_FALSE(tree.existing_group("7-2-cd").has_value());  // removed again
}

TEST(Cgroup, AUsersRunsShareTheirOwnParentWithTheControllersOffered) {
  FakeCgroupFiles fs;
  fs.add_group("/cg/root", "cpu memory");
  fs.files["/cg/root/cgroup.subtree_control"] = "";
  RunCgroups tree(fs, "/cg/root");
  ASSERT_TRUE(tree.prepare());
  EXPECT_EQ(fs.files["/cg/root/users/cgroup.subtree_control"], "+cpu\n+memory\n");
  ASSERT_TRUE(tree.place("7-1-ab", 999, "ann"));
  ASSERT_TRUE(tree.place("8-1-cd", 1000, "ann"));
  EXPECT_TRUE(fs.groups.count("/cg/root/users/ann/7-1-ab"));
  EXPECT_EQ(fs.files["/cg/root/users/ann/8-1-cd/cgroup.procs"], "1000\n");
  EXPECT_EQ(fs.files["/cg/root/users/ann/cgroup.subtree_control"], "+cpu\n+memory\n");  // once
  EXPECT_EQ(tree.existing_group("7-1-ab", "ann"), "/cg/root/users/ann/7-1-ab");
  EXPECT_EQ(tree.existing_group("7-1-ab"), std::nullopt);
  // The daemon's own runs, and an older daemon's runs of a user, under runs/.
  ASSERT_TRUE(tree.place("9-1-ef", 1001));
  EXPECT_EQ(tree.existing_group("9-1-ef", "ann"), "/cg/root/runs/9-1-ef");
  EXPECT_FALSE(fs.groups.count("/cg/root/users/ann/9-1-ef"));
}

TEST(CgroupCleanup, AnEmptyGroupIsConfirmedAtOnceWithItsAccounting) {
  FakeCgroupFiles fs;
  fs.add_group("/cg/runs/r");
  fs.files["/cg/runs/r/cpu.stat"] = "usage_usec 2500000\nuser_usec 2400000\n";
  fs.files["/cg/runs/r/memory.peak"] = "104857600\n";
  CgroupCleanup cleanup(fs, CleanupLimits{});
  auto outcome = cleanup.add(5, "/cg/runs/r", 0);
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->confirmed);
  EXPECT_TRUE(outcome->by_cgroup);
  EXPECT_EQ(outcome->usage.cpu_usec, 2'500'000);
  EXPECT_EQ(outcome->usage.peak_bytes, 104'857'600);
  EXPECT_TRUE(outcome->killed.empty());
  EXPECT_FALSE(fs.groups.count("/cg/runs/r"));  // removed once read
}

TEST(CgroupCleanup, PeakMemoryFallsBackToMaxUsageAndIsAbsentWithoutTheController) {
  FakeCgroupFiles fs;
  fs.add_group("/a");
  fs.files["/a/memory.max_usage_in_bytes"] = "4096\n";
  fs.add_group("/b");
  CgroupCleanup cleanup(fs, CleanupLimits{});
  EXPECT_EQ(cleanup.add(1, "/a", 0)->usage.peak_bytes, 4096);
  auto b = cleanup.add(2, "/b", 0);
  EXPECT_EQ(b->usage.peak_bytes, std::nullopt);
  EXPECT_EQ(b->usage.cpu_usec, 0);
}

// A run's cgroup /r holding `procs` (a pid a line) that a kill does not empty at once.
void add_populated_run_group(FakeCgroupFiles& fs, const std::string& procs) {
  fs.add_group("/r");
  fs.files["/r/cgroup.kill"] = "";
  fs.files["/r/cgroup.procs"] = procs;
  fs.files["/r/cgroup.events"] = "populated 1\n";
  fs.stuck = true;  // the kill takes a moment: still populated right after it
}

TEST(CgroupCleanup, APopulatedGroupIsKilledAndConfirmedOnceEmpty) {
  FakeCgroupFiles fs;
  add_populated_run_group(fs, "77\n78\n");
  fs.files["/proc/77/cmdline"] = std::string("sleep\0" "100\0", 10);
  CgroupCleanup cleanup(fs, CleanupLimits{50, 1000, 5000});
  EXPECT_FALSE(cleanup.add(1, "/r", 0));
  EXPECT_EQ(fs.writes.back(), std::make_pair(std::string("/r/cgroup.kill"), std::string("1")));
  EXPECT_TRUE(cleanup.check(10).empty());
  EXPECT_EQ(cleanup.next_due_ms(), 1000);  // the kill is repeated after the grace
  fs.files["/r/cgroup.events"] = "populated 0\n";
  auto done = cleanup.check(20);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(done[0].confirmed);
  ASSERT_EQ(done[0].killed.size(), 2u);
  EXPECT_EQ(done[0].killed[0].cmdline, "sleep 100");
  EXPECT_TRUE(cleanup.idle());
}

TEST(CgroupCleanup, AGroupStillPopulatedAtTheLimitIsUnconfirmedNamingItsProcesses) {
  FakeCgroupFiles fs;
  add_populated_run_group(fs, "90\n");
  CgroupCleanup cleanup(fs, CleanupLimits{50, 1000, 2500});
  EXPECT_FALSE(cleanup.add(1, "/r", 0));
  EXPECT_TRUE(cleanup.check(1000).empty());
  int kills = 0;
  for (const auto& [path, text] : fs.writes) kills += path == "/r/cgroup.kill";
  EXPECT_EQ(kills, 2);
  auto done = cleanup.check(2500);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_FALSE(done[0].confirmed);
  ASSERT_EQ(done[0].remaining.size(), 1u);
  EXPECT_EQ(done[0].remaining[0].pid, 90);
  EXPECT_TRUE(fs.groups.count("/r"));  // kept: a person looks at it
}

}  // namespace
}  // namespace gpuq::runner
