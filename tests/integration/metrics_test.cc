// GET /metrics end to end: the text parses as the Prometheus exposition format and its numbers
// agree with what the CLI shows.
#include <cstdlib>
#include <map>
#include <regex>
#include <set>
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

Exposition scrape(const Harness& h) {
  auto answer = unix_get(h.home() + "/gpuq.sock", "/metrics");
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

TEST(Metrics, OnlyAtRoot) {
  Harness h("fake:1");
  h.start();
  EXPECT_EQ(unix_get(h.home() + "/gpuq.sock", "/v1/metrics").status, 404);
}

}  // namespace
}  // namespace gpuq::testing
