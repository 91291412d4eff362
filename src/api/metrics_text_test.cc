// SPDX-License-Identifier: Apache-2.0
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

// Per GPU: the DCGM exporter's names and labels for what the probe read, a sample only for
// what it knows, every state of every GPU, and the holder of each held GPU.
TEST(MetricsText, EachGpuHasItsReadingsStateAndHolder) {
  MetricsInputs in;
  in.gpus = {"busy", "free"};
  in.hostname = "box1";
  GpuMetricsRow held;
  held.index = 0;
  held.uuid = "GPU-a";
  held.device = "nvidia0";
  held.model = "NVIDIA H100 80GB HBM3";
  held.memory_total_mib = 81559;
  held.reading = {20480, 37, 64, 287.5};
  held.state = "busy";
  held.job = 12;
  held.job_name = "train \"big\"";
  held.user = "alice";
  GpuMetricsRow idle;
  idle.index = 3;
  idle.uuid = "GPU-b";
  idle.device = "nvidia3";
  idle.model = "NVIDIA H100 80GB HBM3";
  idle.reading = {1, -1, -1, -1};  // no total, utilisation, temperature or power known
  idle.state = "free";
  in.gpu_rows = {held, idle};
  const std::string text = render_metrics(in);
  const std::string a = "gpu=\"0\",UUID=\"GPU-a\",device=\"nvidia0\","
                        "model_name=\"NVIDIA H100 80GB HBM3\",Hostname=\"box1\"";
  const std::string b = "gpu=\"3\",UUID=\"GPU-b\",device=\"nvidia3\","
                        "model_name=\"NVIDIA H100 80GB HBM3\",Hostname=\"box1\"";
  EXPECT_TRUE(has_line(text, "# TYPE DCGM_FI_DEV_GPU_UTIL gauge")) << text;
  EXPECT_TRUE(has_line(text, "DCGM_FI_DEV_GPU_UTIL{" + a + "} 37")) << text;
  EXPECT_TRUE(has_line(text, "DCGM_FI_DEV_FB_USED{" + a + "} 20480")) << text;
  EXPECT_TRUE(has_line(text, "DCGM_FI_DEV_FB_USED{" + b + "} 1")) << text;
  EXPECT_TRUE(has_line(text, "DCGM_FI_DEV_FB_FREE{" + a + "} 61079")) << text;
  EXPECT_TRUE(has_line(text, "DCGM_FI_DEV_FB_TOTAL{" + a + "} 81559")) << text;
  EXPECT_TRUE(has_line(text, "DCGM_FI_DEV_GPU_TEMP{" + a + "} 64")) << text;
  EXPECT_TRUE(has_line(text, "DCGM_FI_DEV_POWER_USAGE{" + a + "} 287.5")) << text;
  for (const char* family : {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_TOTAL",
                             "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE"}) {
    EXPECT_EQ(text.find(std::string(family) + "{" + b), std::string::npos) << family << "\n" << text;
  }
  EXPECT_TRUE(has_line(text, "gpuq_gpu_state{gpu=\"0\",UUID=\"GPU-a\",state=\"busy\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "gpuq_gpu_state{gpu=\"0\",UUID=\"GPU-a\",state=\"free\"} 0")) << text;
  EXPECT_TRUE(has_line(text, "gpuq_gpu_state{gpu=\"3\",UUID=\"GPU-b\",state=\"free\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "gpuq_gpu_state{gpu=\"3\",UUID=\"GPU-b\",state=\"attention\"} 0")) << text;
  EXPECT_TRUE(has_line(text, "gpuq_gpu_job_info{gpu=\"0\",UUID=\"GPU-a\",job_id=\"12\","
                             "job_name=\"train \\\"big\\\"\",user=\"alice\"} 1"))
      << text;
  EXPECT_EQ(text.find("gpuq_gpu_job_info{gpu=\"3\""), std::string::npos) << text;
}

// A daemon without GPUs (the stand-in lane, --gpus none) has no per-GPU family at all.
TEST(MetricsText, NoGpusNoPerGpuFamilies) {
  MetricsInputs in;
  const std::string text = render_metrics(in);
  EXPECT_EQ(text.find("DCGM_"), std::string::npos) << text;
  EXPECT_EQ(text.find("gpuq_gpu_state"), std::string::npos) << text;
  EXPECT_EQ(text.find("gpuq_gpu_job_info"), std::string::npos) << text;
}

}  // namespace
}  // namespace gpuq::api
