// SPDX-License-Identifier: Apache-2.0
// GET /metrics end to end: the text parses as the Prometheus exposition format and its numbers
// agree with what the CLI shows.
#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <gtest/gtest.h>

#include "harness.h"
#include "unix_http.h"

namespace gpuq::testing {
namespace {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// The text format, strictly enough to catch what Prometheus would refuse.
struct Exposition {
  std::map<std::string, std::string> types;  // family → type
  std::set<std::string> helps;
  std::vector<Sample> samples;
  std::vector<std::string> errors;

  // The sample's value, or NaN when there is none; `labels` must match exactly.
  double value(const std::string& name, const std::map<std::string, std::string>& labels = {}) const {
    for (const auto& s : samples) {
      if (s.name == name && s.labels == labels) return s.value;
    }
    return std::nan("");
  }
  double sum(const std::string& name) const {
    double total = 0;
    for (const auto& s : samples) total += s.name == name ? s.value : 0;
    return total;
  }
};

bool valid_name(const std::string& name) {
  static const std::regex re("[a-zA-Z_:][a-zA-Z0-9_:]*");
  return std::regex_match(name, re);
}

// Parses `{a="x",b="y\"z"}` at text[pos]; advances pos past the closing brace.
bool parse_labels(const std::string& text, size_t& pos, std::map<std::string, std::string>& out) {
  ++pos;  // '{'
  while (pos < text.size() && text[pos] != '}') {
    size_t eq = text.find('=', pos);
    if (eq == std::string::npos) return false;
    std::string name = text.substr(pos, eq - pos);
    if (!valid_name(name) || name.rfind("__", 0) == 0 || out.count(name)) return false;
    pos = eq + 1;
    if (pos >= text.size() || text[pos] != '"') return false;
    ++pos;
    std::string value;
    while (pos < text.size() && text[pos] != '"') {
      if (text[pos] == '\\') {
        if (pos + 1 >= text.size()) return false;
        char e = text[pos + 1];
        if (e == 'n') {
          value += '\n';
        } else if (e == '\\' || e == '"') {
          value += e;
        } else {
          return false;
        }
        pos += 2;
      } else if (text[pos] == '\n') {
        return false;
      } else {
        value += text[pos++];
      }
    }
    if (pos >= text.size()) return false;
    ++pos;  // closing quote
    out[name] = value;
    if (pos < text.size() && text[pos] == ',') ++pos;
  }
  if (pos >= text.size()) return false;
  ++pos;  // '}'
  return true;
}

std::string family_of(const Exposition& x, const std::string& name) {
  if (x.types.count(name)) return name;
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    std::string s(suffix);
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      std::string base = name.substr(0, name.size() - s.size());
      auto it = x.types.find(base);
      if (it != x.types.end() && (it->second == "histogram" || it->second == "summary")) return base;
    }
  }
  return "";
}

Exposition parse(const std::string& text) {
  Exposition x;
  std::set<std::string> sampled;  // families whose samples began (TYPE must come first)
  size_t start = 0;
  int number = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) {
      x.errors.push_back("the text does not end with a newline");
      nl = text.size();
    }
    std::string line = text.substr(start, nl - start);
    start = nl + 1;
    ++number;
    std::string where = "line " + std::to_string(number) + ": " + line;
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::smatch m;
      static const std::regex meta("# (HELP|TYPE) (\\S+) ?(.*)");
      if (!std::regex_match(line, m, meta)) continue;  // a plain comment
      std::string name = m[2];
      if (!valid_name(name)) x.errors.push_back("bad metric name: " + where);
      if (m[1] == "TYPE") {
        static const std::set<std::string> kinds = {"counter", "gauge", "histogram", "summary", "untyped"};
        if (!kinds.count(m[3])) x.errors.push_back("bad type: " + where);
        if (x.types.count(name)) x.errors.push_back("second TYPE: " + where);
        if (sampled.count(name)) x.errors.push_back("TYPE after samples: " + where);
        x.types[name] = m[3];
      } else {
        if (!x.helps.insert(name).second) x.errors.push_back("second HELP: " + where);
      }
      continue;
    }
    Sample s;
    size_t pos = 0;
    while (pos < line.size() && line[pos] != '{' && line[pos] != ' ') ++pos;
    s.name = line.substr(0, pos);
    if (!valid_name(s.name)) x.errors.push_back("bad sample name: " + where);
    if (pos < line.size() && line[pos] == '{' && !parse_labels(line, pos, s.labels)) {
      x.errors.push_back("bad labels: " + where);
      continue;
    }
    if (pos >= line.size() || line[pos] != ' ') {
      x.errors.push_back("no value: " + where);
      continue;
    }
    std::string value = line.substr(pos + 1);
    value = value.substr(0, value.find(' '));  // an optional timestamp follows
    if (value == "+Inf") {
      s.value = INFINITY;
    } else if (value == "-Inf") {
      s.value = -INFINITY;
    } else if (value == "NaN") {
      s.value = std::nan("");
    } else {
      char* end = nullptr;
      s.value = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0') x.errors.push_back("bad value: " + where);
    }
    std::string family = family_of(x, s.name);
    if (family.empty()) x.errors.push_back("sample without a TYPE before it: " + where);
    if (!x.helps.count(family)) x.errors.push_back("sample without a HELP: " + where);
    sampled.insert(family);
    x.samples.push_back(std::move(s));
  }
  // Histograms: cumulative buckets ending at le="+Inf", which equals _count.
  for (const auto& [family, type] : x.types) {
    if (type != "histogram") continue;
    std::vector<std::pair<double, double>> buckets;  // (le, count), in the order written
    for (const auto& s : x.samples) {
      if (s.name != family + "_bucket") continue;
      auto le = s.labels.find("le");
      if (le == s.labels.end()) {
        x.errors.push_back(family + ": a bucket without le");
        continue;
      }
      buckets.emplace_back(le->second == "+Inf" ? INFINITY : std::stod(le->second), s.value);
    }
    if (buckets.empty() || buckets.back().first != INFINITY) {
      x.errors.push_back(family + ": the last bucket is not le=\"+Inf\"");
      continue;
    }
    for (size_t i = 1; i < buckets.size(); ++i) {
      if (buckets[i].first <= buckets[i - 1].first) x.errors.push_back(family + ": le not increasing");
      if (buckets[i].second < buckets[i - 1].second) x.errors.push_back(family + ": buckets not cumulative");
    }
    if (buckets.back().second != x.value(family + "_count")) x.errors.push_back(family + ": +Inf != _count");
    if (std::isnan(x.value(family + "_sum"))) x.errors.push_back(family + ": no _sum");
  }
  return x;
}

Exposition scrape(const Harness& h, std::string* body = nullptr) {
  auto answer = unix_get(h.home() + "/gpuq.sock", "/metrics");
  if (body != nullptr) *body = answer.body;
  EXPECT_EQ(answer.curl_code, 0);
  EXPECT_EQ(answer.status, 200) << answer.body;
  EXPECT_EQ(answer.content_type.rfind("text/plain; version=0.0.4", 0), 0u) << answer.content_type;
  Exposition x = parse(answer.body);
  for (const auto& e : x.errors) ADD_FAILURE() << e << "\n" << answer.body;
  return x;
}

TEST(Metrics, Scrape) {
  Harness h("fake:2");
  h.start();
  int64_t ok = h.submit_sh("true");
  int64_t bad = h.submit_sh("exit 4");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(ok), std::to_string(bad), "--timeout", "60s"}).status, 1);
  int64_t held = h.submit_sh("while [ ! -e go ]; do sleep 0.02; done", {"--gpus", "1"});
  ASSERT_TRUE(h.wait_for(held, [](const nlohmann::json& j) { return j["state"] == "running"; }));

  Exposition x = scrape(h);
  EXPECT_EQ(x.value("gpuq_up"), 1);
  EXPECT_GE(x.value("gpuq_runs_finished_total", {{"outcome", "succeeded"}}), 1);
  EXPECT_GE(x.value("gpuq_runs_finished_total", {{"outcome", "failed"}}), 1);
  EXPECT_EQ(x.value("gpuq_runs_finished_total", {{"outcome", "lost"}}), 0);
  EXPECT_EQ(x.value("gpuq_runs_started_total"), 3);
  EXPECT_EQ(x.value("gpuq_events_total", {{"kind", "job.submitted"}}), 3);
  EXPECT_EQ(x.value("gpuq_events_total", {{"kind", "job.started"}}), 3);
  EXPECT_EQ(x.value("gpuq_events_total", {{"kind", "daemon.started"}}), 1);
  EXPECT_EQ(x.value("gpuq_queue_wait_seconds_count"), 3);
  EXPECT_EQ(x.value("gpuq_submit_to_start_seconds_count"), 3);
  EXPECT_EQ(x.types["gpuq_queue_wait_seconds"], "histogram");
  EXPECT_EQ(x.types["gpuq_hook_lag_events"], "gauge");
  // GPUs and jobs agree with gpuq status.
  auto status = h.gpuq_json({"status", "--json"});
  EXPECT_EQ(x.sum("gpuq_gpus"), static_cast<double>(status["resources"].size()));
  std::map<std::string, int> gpu_states;
  for (const auto& r : status["resources"]) ++gpu_states[r["state"]];
  for (const char* state : {"free", "busy", "cleaning", "attention", "foreign"}) {
    EXPECT_EQ(x.value("gpuq_gpus", {{"state", state}}), gpu_states[state]) << state;
  }
  EXPECT_EQ(x.value("gpuq_gpus", {{"state", "busy"}}), 1);
  std::map<std::string, int> job_states;
  for (const auto& j : status["jobs"]) ++job_states[j["state"]];
  for (const char* state : {"pending", "held", "running", "succeeded", "failed", "cancelled", "blocked", "skipped"}) {
    EXPECT_EQ(x.value("gpuq_jobs", {{"state", state}}), job_states[state]) << state;
  }
  EXPECT_EQ(x.value("gpuq_jobs", {{"state", "succeeded"}}), 1);
  h.touch("go");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(held), "--timeout", "60s"}).status, 0);

  // The counters are all-time: a restarted daemon starts from the record.
  h.stop();
  h.start();
  Exposition again = scrape(h);
  EXPECT_EQ(again.value("gpuq_events_total", {{"kind", "job.submitted"}}), 3);
  EXPECT_EQ(again.value("gpuq_events_total", {{"kind", "daemon.started"}}), 2);
  EXPECT_EQ(again.value("gpuq_runs_started_total"), 3);
  EXPECT_EQ(again.value("gpuq_runs_finished_total", {{"outcome", "succeeded"}}), 2);
  EXPECT_EQ(again.value("gpuq_jobs", {{"state", "succeeded"}}), 2);
  EXPECT_EQ(again.value("gpuq_queue_wait_seconds_count"), 0);  // histograms are per process
}

// What `promtool check metrics` (Prometheus' own reader and linter) says of `text`: "" when it
// passes, else its exit status and words.
std::string promtool_verdict(const Harness& h, const std::string& text) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
    return "promtool is not installed: scripts/install-deps.sh --tests installs it (Debian's "
           "prometheus package)";
  }
  const std::string in = h.path("metrics.prom");
  const std::string out = h.path("promtool.out");
  std::ofstream(in) << text;
  int rc = std::system(("promtool check metrics < '" + in + "' > '" + out + "' 2>&1").c_str());
  std::ifstream said(out);
  std::string words((std::istreambuf_iterator<char>(said)), std::istreambuf_iterator<char>());
  return rc == 0 ? "" : "promtool exit " + std::to_string(rc) + ": " + words;
}

// What is wrong with docs/grafana/gpuq.json against a scrape `x` of a daemon with GPUs and a
// running job: a query naming a family the daemon does not serve or a label no sample has, or
// one Prometheus cannot parse (each query is checked as a recording rule by promtool).
std::vector<std::string> dashboard_problems(const Harness& h, const Exposition& x) {
  std::vector<std::string> problems;
  std::ifstream file(std::string(GPUQ_DOCS_DIR) + "/grafana/gpuq.json");
  const nlohmann::json dashboard = nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
  if (dashboard.is_discarded()) return {"docs/grafana/gpuq.json is not JSON"};
  if (dashboard.value("uid", "") != "gpuq-overview") problems.push_back("the uid is not gpuq-overview");
  std::set<std::string> labels = {"instance", "le"};  // added by Prometheus / of histograms
  for (const auto& s : x.samples) {
    for (const auto& [name, value] : s.labels) labels.insert(name);
  }
  const std::regex family_re(R"(\b(gpuq_[a-z_]+|DCGM_FI_[A-Z_]+)\b)");
  const std::regex matcher_re(R"(([A-Za-z_]+)\s*(=~|!~|!=|=))");
  const std::regex grouping_re(R"(\b(by|on|group_left|group_right)\s*\(([^)]*)\))");
  std::string rules = "groups:\n  - name: dashboard\n    rules:\n";
  int queries = 0;
  for (const auto& panel : dashboard.value("panels", nlohmann::json::array())) {
    if (panel.value("type", "") == "row") continue;
    const std::string title = panel.value("title", "?");
    if (panel.value("targets", nlohmann::json::array()).empty()) problems.push_back(title + ": no query");
    for (const auto& target : panel.value("targets", nlohmann::json::array())) {
      std::string expr = std::regex_replace(target.value("expr", ""), std::regex(R"(\$instance)"), ".+");
      ++queries;
      for (std::sregex_iterator m(expr.begin(), expr.end(), family_re), end; m != end; ++m) {
        std::string family = (*m)[1];
        for (const char* suffix : {"_bucket", "_count", "_sum"}) {
          const std::string base = family.substr(0, family.size() - std::string(suffix).size());
          if (family.ends_with(suffix) && x.types.count(base)) family = base;
        }
        if (!x.types.count(family)) problems.push_back(title + ": the daemon serves no " + family);
      }
      std::vector<std::string> used;
      for (std::sregex_iterator m(expr.begin(), expr.end(), matcher_re), end; m != end; ++m) used.push_back((*m)[1]);
      for (std::sregex_iterator m(expr.begin(), expr.end(), grouping_re), end; m != end; ++m) {
        std::stringstream list((*m)[2].str());
        for (std::string name; std::getline(list >> std::ws, name, ',');) {
          while (!name.empty() && name.back() == ' ') name.pop_back();
          used.push_back(name);
        }
      }
      for (const auto& name : used) {
        if (!labels.count(name)) problems.push_back(title + ": no sample has the label " + name);
      }
      std::string indented;
      std::stringstream lines(expr);
      for (std::string line; std::getline(lines, line);) indented += "          " + line + "\n";
      rules += "      - record: gpuq_dashboard:query_" + std::to_string(queries) + "\n        expr: |\n" + indented;
    }
  }
  if (queries < 10) problems.push_back("only " + std::to_string(queries) + " queries");
  const std::string in = h.path("dashboard-rules.yml"), out = h.path("dashboard-rules.out");
  std::ofstream(in) << rules;
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
    problems.push_back("promtool is not installed: scripts/install-deps.sh --tests installs it");
  } else if (int rc = std::system(("promtool check rules '" + in + "' > '" + out + "' 2>&1").c_str()); rc != 0) {
    std::ifstream said(out);
    problems.push_back("promtool check rules: " + std::string(std::istreambuf_iterator<char>(said), {}) + rules);
  }
  return problems;
}

// Per GPU: the probe's readings under the DCGM exporter's names, each GPU's state and the job
// holding it; and the whole text passes promtool.
TEST(Metrics, EachGpuShowsItsReadingsStateAndHolder) {
  Harness h("fake:2");
  std::ofstream(h.home() + "/config.toml") << "[gpu]\nprobe_interval = \"50ms\"\n";
  const std::string state = h.path("gpu-state.json");
  std::ofstream(state) << R"({"gpus":[{"index":0,"memory_used_mib":700,"utilization":41,)"
                          R"("temperature_c":63,"power_w":211.5},{"index":1,"temperature_c":30}]})";
  setenv("GPUQ_FAKE_GPU_STATE", state.c_str(), 1);
  h.start();
  int64_t job = h.submit_sh("while [ ! -e go ]; do sleep 0.02; done",
                            {"--gpus", "1", "--name", "train.big-1"});
  ASSERT_TRUE(h.wait_for(job, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  auto shown = h.gpuq_json({"show", std::to_string(job), "--json"});
  const int gpu = shown["runs"][0]["gpus"][0].get<int>();
  const std::string held = std::to_string(gpu), other = std::to_string(1 - gpu);
  const struct passwd* me = ::getpwuid(::geteuid());
  ASSERT_NE(me, nullptr);

  std::string body;
  Exposition x;
  // A family's sample for GPU `index` (its other labels are checked below); NaN when none.
  auto reading = [&](const std::string& name, const std::string& index) {
    for (const auto& s : x.samples) {
      if (s.name == name && s.labels.count("gpu") && s.labels.at("gpu") == index) return s.value;
    }
    return std::nan("");
  };
  ASSERT_TRUE(wait_until([&] {
    x = scrape(h, &body);
    return reading("gpuq_gpu_job_info", held) == 1 && reading("DCGM_FI_DEV_GPU_TEMP", "0") == 63;
  })) << body;
  unsetenv("GPUQ_FAKE_GPU_STATE");
  for (const auto& s : x.samples) {
    if (s.name.rfind("DCGM_", 0) != 0) continue;
    const std::string index = s.labels.at("gpu");
    EXPECT_EQ(s.labels, (std::map<std::string, std::string>{{"gpu", index},
                                                            {"UUID", "GPU-fake-" + index},
                                                            {"device", "gpu" + index},
                                                            {"model_name", "simulated GPU"},
                                                            {"Hostname", s.labels.at("Hostname")}}))
        << s.name;
    EXPECT_FALSE(s.labels.at("Hostname").empty()) << s.name;
  }
  EXPECT_EQ(x.value("gpuq_gpu_job_info", {{"gpu", held},
                                          {"UUID", "GPU-fake-" + held},
                                          {"job_id", std::to_string(job)},
                                          {"job_name", "train.big-1"},
                                          {"user", me->pw_name}}),
            1)
      << body;
  EXPECT_EQ(reading("DCGM_FI_DEV_GPU_UTIL", "0"), 41) << body;
  EXPECT_EQ(reading("DCGM_FI_DEV_FB_USED", "0"), 700) << body;
  EXPECT_EQ(reading("DCGM_FI_DEV_POWER_USAGE", "0"), 211.5) << body;
  EXPECT_EQ(reading("DCGM_FI_DEV_GPU_TEMP", "1"), 30) << body;
  EXPECT_EQ(reading("DCGM_FI_DEV_FB_USED", "1"), 0) << body;  // idle: the fake's default
  EXPECT_TRUE(std::isnan(reading("DCGM_FI_DEV_POWER_USAGE", "1"))) << "GPU 1's power is unknown\n" << body;
  EXPECT_EQ(reading("DCGM_FI_DEV_FB_TOTAL", "0"), 81920) << body;  // a fake GPU's size
  EXPECT_EQ(reading("DCGM_FI_DEV_FB_FREE", "0"), 81920 - 700) << body;
  EXPECT_EQ(x.types["DCGM_FI_DEV_GPU_UTIL"], "gauge");
  // GET /v1/gpus shows the same readings; null where the probe does not know.
  auto gpus = h.gpuq_json({"gpus", "--json"});
  for (const auto& r : gpus["resources"]) {
    if (r["index"] == 0) {
      EXPECT_EQ(r["temperature_c"], 63) << r.dump();
      EXPECT_EQ(r["power_w"], 211.5) << r.dump();
    } else {
      EXPECT_EQ(r["temperature_c"], 30) << r.dump();
      EXPECT_TRUE(r["power_w"].is_null()) << r.dump();
    }
  }
  EXPECT_EQ(gpus["resources"].size(), 2u) << gpus.dump();
  // The states agree with gpuq_gpus and GET /v1/gpus; the free GPU has no holder.
  for (const char* s : {"free", "busy", "cleaning", "attention", "foreign"}) {
    const double want_held = std::string(s) == "busy" ? 1 : 0;
    const double want_other = std::string(s) == "free" ? 1 : 0;
    EXPECT_EQ(x.value("gpuq_gpu_state", {{"gpu", held}, {"UUID", "GPU-fake-" + held}, {"state", s}}), want_held) << s;
    EXPECT_EQ(x.value("gpuq_gpu_state", {{"gpu", other}, {"UUID", "GPU-fake-" + other}, {"state", s}}), want_other) << s;
  }
  for (const auto& s : x.samples) {
    if (s.name == "gpuq_gpu_job_info") {
      EXPECT_EQ(s.labels.at("gpu"), held) << body;
    }
  }
  EXPECT_EQ(promtool_verdict(h, body), "");
  // The Grafana dashboard of docs/ asks for what this scrape serves, in queries Prometheus takes.
  EXPECT_EQ(dashboard_problems(h, x), std::vector<std::string>{});
  h.touch("go");
  ASSERT_EQ(h.gpuq({"wait", std::to_string(job), "--timeout", "60s"}).status, 0);
}

TEST(Metrics, OnlyAtRoot) {
  Harness h("fake:1");
  h.start();
  EXPECT_EQ(unix_get(h.home() + "/gpuq.sock", "/v1/metrics").status, 404);
}

}  // namespace
}  // namespace gpuq::testing
