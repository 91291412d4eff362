// SPDX-License-Identifier: Apache-2.0
// The three binaries (docs/architecture.md, "Three binaries"): the light gpuq runs the client
// commands by itself, hands every other line to gpuqd, says where it looked when gpuqd is
// missing, and answers its commands' mistakes exactly as the full grammar does; gpuqd starts
// each run's shim as gpuq-shim, or forks it from itself when gpuq-shim is not beside it.
#include <gtest/gtest.h>

#include <filesystem>

#include "harness.h"

namespace gpuq::testing {
namespace {

namespace fs = std::filesystem;

CliResult run(const std::vector<std::string>& argv) {
  auto result = os::run_command(argv, Millis(60'000));
  if (!result) {
    ADD_FAILURE() << "cannot run " << argv.front() << ": " << result.error().message;
    return {};
  }
  return {result->exit_code, result->out, result->err};
}

std::vector<std::string> line(const std::string& binary, const Harness& h,
                              std::vector<std::string> args) {
  args.insert(args.begin(), {binary, "--home", h.home()});
  return args;
}

// A copy of the light client with no gpuqd anywhere it looks: its commands still work, since
// it never execs gpuqd for them; any other command fails with where it looked. gpuqd put in
// ../libexec/gpuq/ (an install's layout) then serves that command.
TEST(LightClient, RunsItsCommandsWithoutTheFullBinaryAndNamesItWhenAnotherNeedsIt) {
  Harness h("fake:2");
  h.start();
  const std::string bin = h.path("prefix/bin");
  fs::create_directories(bin);
  const std::string gpuq = bin + "/gpuq";
  fs::copy_file(GPUQ_BINARY, gpuq);

  auto submitted = run(line(gpuq, h, {"submit", "--id-only", "--name", "alone", "--", "true"}));
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  const std::string id = submitted.out.substr(0, submitted.out.find('\n'));
  auto waited = run(line(gpuq, h, {"wait", id}));
  EXPECT_EQ(waited.status, 0) << waited.err;
  auto shown = run(line(gpuq, h, {"show", "alone", "--json"}));
  ASSERT_EQ(shown.status, 0) << shown.err;
  EXPECT_EQ(nlohmann::json::parse(shown.out)["state"], "succeeded") << shown.out;
  auto status = run(line(gpuq, h, {"status", "--json"}));
  ASSERT_EQ(status.status, 0) << status.err;
  EXPECT_EQ(nlohmann::json::parse(status.out)["jobs"].size(), 1u) << status.out;
  auto held = run(line(gpuq, h, {"submit", "--id-only", "--hold", "--", "true"}));
  ASSERT_EQ(held.status, 0) << held.err;
  const std::string held_id = held.out.substr(0, held.out.find('\n'));
  auto cancelled = run(line(gpuq, h, {"cancel", held_id, "--json"}));
  EXPECT_EQ(cancelled.status, 0) << cancelled.err;

  auto gpus = run(line(gpuq, h, {"gpus", "--json"}));
  EXPECT_EQ(gpus.status, 1);
  EXPECT_NE(gpus.err.find("cannot run the full gpuq binary (" + bin + "/gpuqd or " + bin +
                          "/../libexec/gpuq/gpuqd)"),
            std::string::npos)
      << gpus.err;
  EXPECT_NE(gpus.err.find("No such file or directory"), std::string::npos) << gpus.err;
  // --url needs curl, which only gpuqd loads: that line goes to gpuqd too, even for a status.
  auto remote = run(line(gpuq, h, {"--url", "http://127.0.0.1:1", "status"}));
  EXPECT_EQ(remote.status, 1);
  EXPECT_NE(remote.err.find("cannot run the full gpuq binary"), std::string::npos) << remote.err;

  const std::string libexec = h.path("prefix/libexec/gpuq");
  fs::create_directories(libexec);
  fs::copy_file(fs::path(GPUQ_BINARY).parent_path() / "gpuqd", libexec + "/gpuqd");
  gpus = run(line(gpuq, h, {"gpus", "--json"}));
  ASSERT_EQ(gpus.status, 0) << gpus.err;
  EXPECT_EQ(nlohmann::json::parse(gpus.out)["resources"].size(), 2u) << gpus.out;
}

// The light client's grammar is the full one's for its commands: the same mistakes get the same
// words and exit status from gpuq (which runs them itself) and from gpuqd.
TEST(LightClient, AnswersItsCommandsMistakesAsTheFullGrammarDoes) {
  Harness h("fake:1");
  h.start();
  const std::string full = (fs::path(GPUQ_BINARY).parent_path() / "gpuqd").string();
  const std::vector<std::vector<std::string>> lines = {
      {"status", "--nope"},
      {"submit"},
      {"submit", "--gpus", "two", "--", "true"},
      {"submit", "--timeout", "1.5x", "--", "true"},
      {"show"},
      {"show", "404", "--json"},
      {"wait", "--timeout", "soon", "1"},
      {"cancel", "404"},
      {"logs", "404"},
      {"move", "404", "--top"},
      {"release"},
      {"retry", "404", "--json"},
      {"drain", "extra"},
  };
  for (const auto& args : lines) {
    auto light = run(line(GPUQ_BINARY, h, args));
    auto heavy = run(line(full, h, args));
    std::string text;
    for (const auto& a : args) text += a + " ";
    EXPECT_EQ(light.status, heavy.status) << text;
    EXPECT_EQ(light.out, heavy.out) << text;
    EXPECT_EQ(light.err, heavy.err) << text;
    EXPECT_NE(light.status, 0) << text;
  }
}

// The daemon starts each run's shim as gpuq-shim, the static binary beside gpuqd, and its start
// says so; a gpuqd with no gpuq-shim beside it forks its shims from itself (the spawner), and
// says that. The job's parent is the shim: its /proc/PPID/exe names the binary.
TEST(ShimBinary, RunsGoThroughTheGpuqShimBesideGpuqdAndAGpuqdAloneForksItsOwn) {
  const fs::path built = fs::path(GPUQ_BINARY).parent_path();
  auto shim_of_a_run = [](Harness& h, const std::string& gpuqd) {
    auto started = run({gpuqd, "daemon", "--home", h.home(), "--gpus", "fake:1", "--http", "off",
                        "--detach"});
    EXPECT_EQ(started.status, 0) << started.out << started.err;
    const int64_t id = h.submit_sh("readlink /proc/$PPID/exe");
    auto waited = h.gpuq({"wait", std::to_string(id)});
    EXPECT_EQ(waited.status, 0) << waited.out << waited.err;
    auto log = h.gpuq({"logs", std::to_string(id)});
    h.stop();
    return std::make_pair(started.out, log.out);
  };

  Harness beside("fake:1");
  auto [start_text, parent] = shim_of_a_run(beside, (built / "gpuqd").string());
  EXPECT_NE(start_text.find("\n  shims: " + (built / "gpuq-shim").string() + "\n"), std::string::npos)
      << start_text;
  EXPECT_EQ(parent, (built / "gpuq-shim").string() + "\n");

  // A hard link, not a 160 MB copy: the same file, alone in its directory.
  Harness alone("fake:1");
  const std::string dir = alone.path("alone");
  fs::create_directories(dir);
  std::error_code linked;
  fs::create_hard_link(built / "gpuqd", dir + "/gpuqd", linked);
  if (linked) fs::copy_file(built / "gpuqd", dir + "/gpuqd");
  auto [fallback_text, fallback_parent] = shim_of_a_run(alone, dir + "/gpuqd");
  EXPECT_NE(fallback_text.find("\n  shims: forked by a spawner (no gpuq-shim beside " + dir + "/gpuqd)\n"),
            std::string::npos)
      << fallback_text;
  EXPECT_EQ(fallback_parent, dir + "/gpuqd\n");
}

}  // namespace
}  // namespace gpuq::testing
