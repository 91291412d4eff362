// Bad input gets a clear error, a non-zero status, and nothing queued.
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

namespace gpuq::testing {
namespace {

size_t job_count(const Harness& h) { return h.gpuq_json({"status", "--json"})["jobs"].size(); }

void expect_refused(const Harness& h, const std::vector<std::string>& args, const std::string& message) {
  auto r = h.gpuq(args);
  EXPECT_NE(r.status, 0) << "accepted: " << ::testing::PrintToString(args);
  EXPECT_NE(r.err.find(message), std::string::npos)
      << ::testing::PrintToString(args) << "\nstderr: " << r.err;
}

TEST(BadInput, ScriptsThatCannotRunAreRefused) {
  Harness h("fake:2");
  h.start();
  std::ofstream(h.path("empty.sh")) << "";
  std::ofstream(h.path("binary.sh"), std::ios::binary) << std::string("\x7f" "ELF\x02\x01\0\0\0", 9);
  std::filesystem::create_directory(h.path("adir"));
  expect_refused(h, {"submit", "missing.sh"}, "missing.sh: no such script");
  expect_refused(h, {"submit", "empty.sh"}, "script is empty");
  expect_refused(h, {"submit", "binary.sh"}, "binary");
  expect_refused(h, {"submit", "adir"}, "is a directory");
  if (geteuid() != 0) {
    std::ofstream(h.path("secret.sh")) << "echo hi\n";
    chmod(h.path("secret.sh").c_str(), 0);
    expect_refused(h, {"submit", "secret.sh"}, "cannot read");
  }
  EXPECT_EQ(job_count(h), 0u);
}

TEST(BadInput, FlagsAndCountsAreChecked) {
  Harness h("fake:2");
  h.start();
  expect_refused(h, {"submit", "--gpus", "-1", "--", "true"}, "");
  expect_refused(h, {"submit", "--gpus", "3", "--", "true"}, "job asks for 3 GPUs; this machine has 2");
  expect_refused(h, {"submit", "--frobnicate", "--", "true"}, "frobnicate");
  expect_refused(h, {"submit", "--priority", "urgent", "--", "true"}, "bad priority");
  expect_refused(h, {"submit", "--cwd", "/no/such/dir", "--", "true"}, "/no/such/dir");
  expect_refused(h, {"submit"}, "");
  EXPECT_EQ(job_count(h), 0u);
  auto r = h.gpuq({"submit", "--gpus", "-1", "--", "true"});
  EXPECT_EQ(r.status, 2);  // usage error
}

TEST(BadInput, NoDaemonSaysHowToStartOne) {
  Harness h("fake:1");
  auto r = h.gpuq({"status"});
  EXPECT_EQ(r.status, 3);
  EXPECT_NE(r.err.find("gpuq daemon --detach"), std::string::npos) << r.err;
}

TEST(BadInput, ASecondDaemonOnTheSameHomeRefuses) {
  Harness h("fake:1");
  h.start();
  int pid = h.daemon_pid();
  auto r = h.gpuq({"daemon", "--gpus", "fake:1"});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("already running"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(std::to_string(pid)), std::string::npos) << r.err;
  EXPECT_EQ(h.daemon_pid(), pid);
  EXPECT_EQ(h.gpuq({"status"}).status, 0);  // the first one still serves
}

TEST(BadInput, ANameIsUniqueUnlessTheSpecIsTheSame) {
  Harness h("fake:1");
  h.start();
  auto first = h.gpuq_json({"submit", "--json", "--name", "train", "--", "true"});
  auto same = h.gpuq_json({"submit", "--json", "--name", "train", "--", "true"});
  EXPECT_EQ(first["id"], same["id"]);  // idempotent
  expect_refused(h, {"submit", "--name", "train", "--", "false"}, "already exists");
  EXPECT_EQ(job_count(h), 1u);
}

}  // namespace
}  // namespace gpuq::testing

namespace gpuq::testing {
namespace {

TEST(BadInput, AHomeTooLongForAUnixSocketIsRefusedWithTheFix) {
  Harness h("fake:1");
  std::string home = h.work() + "/" + std::string(120, 'h');
  auto r = os::run_command({GPUQ_BINARY, "--home", home, "daemon", "--gpus", "fake:1", "--detach"},
                           Millis(30'000));
  ASSERT_TRUE(r);
  EXPECT_NE(r->exit_code, 0);
  EXPECT_NE(r->err.find("a unix socket path may have at most 107"), std::string::npos) << r->err;
  EXPECT_NE(r->err.find("use a shorter --home"), std::string::npos) << r->err;
}

}  // namespace
}  // namespace gpuq::testing
