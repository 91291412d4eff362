#include <gtest/gtest.h>
#include <limits>

#include "api/metrics.h"

namespace gpuq::api {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

TEST(MetricsText, LabelValuesAndNumbersFollowTheFormat) {
  EXPECT_EQ(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(format_metric_value(3), "3");
  EXPECT_EQ(format_metric_value(0.005), "0.005");
  EXPECT_EQ(format_metric_value(86400), "86400");
  EXPECT_EQ(format_metric_value(1.5), "1.5");
  EXPECT_EQ(format_metric_value(std::numeric_limits<double>::infinity()), "+Inf");
  Exposition x;
  x.family("f", "gauge", "two\nlines \\ here");
  x.sample("f", {{"a", "x\"y"}, {"b", ""}}, 2);
  EXPECT_EQ(x.text(), "# HELP f two\\nlines \\\\ here\n# TYPE f gauge\nf{a=\"x\\\"y\",b=\"\"} 2\n");
}

TEST(MetricsText, EveryStateIsShownAndHistogramsAreCumulative) {
  MetricsInputs in;
  in.jobs_by_state = {{"succeeded", 2}, {"failed", 1}};
  in.gpus = {"busy", "free", "free"};
  in.counters.runs_started = 3;
  in.counters.runs_finished = {{"succeeded", 2}};
  in.counters.events_by_kind = {{"job.submitted", 3}};
  in.counters.queue_wait.observe(0.002);
  in.counters.queue_wait.observe(7200);
  in.hook_lags = {{"slack \"ops\"", 4}};
  std::string text = render_metrics(in);
  EXPECT_TRUE(has_line(text, "gpuq_up 1")) << text;
  EXPECT_TRUE(has_line(text, "gpuq_jobs{state=\"succeeded\"} 2"));
  EXPECT_TRUE(has_line(text, "gpuq_jobs{state=\"skipped\"} 0"));
  EXPECT_TRUE(has_line(text, "gpuq_gpus{state=\"free\"} 2"));
  EXPECT_TRUE(has_line(text, "gpuq_gpus{state=\"attention\"} 0"));
  EXPECT_TRUE(has_line(text, "gpuq_runs_started_total 3"));
  EXPECT_TRUE(has_line(text, "gpuq_runs_finished_total{outcome=\"succeeded\"} 2"));
  EXPECT_TRUE(has_line(text, "gpuq_runs_finished_total{outcome=\"timed-out\"} 0"));
  EXPECT_TRUE(has_line(text, "gpuq_queue_wait_seconds_bucket{le=\"0.005\"} 1"));
  EXPECT_TRUE(has_line(text, "gpuq_queue_wait_seconds_bucket{le=\"3600\"} 1"));
  EXPECT_TRUE(has_line(text, "gpuq_queue_wait_seconds_bucket{le=\"14400\"} 2"));
  EXPECT_TRUE(has_line(text, "gpuq_queue_wait_seconds_bucket{le=\"+Inf\"} 2"));
  EXPECT_TRUE(has_line(text, "gpuq_queue_wait_seconds_count 2"));
  EXPECT_TRUE(has_line(text, "gpuq_submit_to_start_seconds_count 0"));
  EXPECT_TRUE(has_line(text, "# TYPE gpuq_submit_to_start_seconds histogram"));
  EXPECT_TRUE(has_line(text, "gpuq_events_total{kind=\"job.submitted\"} 3"));
  EXPECT_TRUE(has_line(text, "gpuq_hook_lag_events{hook=\"slack \\\"ops\\\"\"} 4"));
  EXPECT_TRUE(has_line(text, "# TYPE gpuq_hook_lag_events gauge"));
}

}  // namespace
}  // namespace gpuq::api
