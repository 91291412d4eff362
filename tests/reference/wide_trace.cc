// SPDX-License-Identifier: Apache-2.0
#include "wide_trace.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

namespace gpuq::reference {
namespace {

constexpr int64_t kMinute = 60'000;

// Uniform in (0, 1), from 53 random bits.
double uniform(std::mt19937_64& rng) {
  return (static_cast<double>(rng() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

double standard_normal(std::mt19937_64& rng) {  // Box-Muller
  return std::sqrt(-2.0 * std::log(uniform(rng))) * std::cos(2.0 * M_PI * uniform(rng));
}

int draw_gpus(std::mt19937_64& rng) {
  // Mostly powers of two, with some 12s and 24s so that wide jobs do not tile perfectly.
  static constexpr int kWidths[] = {4, 4, 4, 4, 8, 8, 8, 8, 8, 12, 16, 16, 16, 24, 32, 32};
  return kWidths[rng() % std::size(kWidths)];
}

}  // namespace

int64_t power_of_two_minutes(int64_t runtime_ms) {
  int64_t estimate = kMinute;
  while (estimate < runtime_ms) estimate *= 2;
  return estimate;
}

std::vector<RefJob> generate_wide_trace(const WideTraceOptions& options) {
  std::mt19937_64 rng(options.seed);
  std::vector<RefJob> jobs(static_cast<size_t>(std::max(0, options.jobs)));
  double gpu_seconds = 0;
  for (RefJob& job : jobs) {
    job.gpus = std::min(draw_gpus(rng), options.gpus);
    // Log-normal: median 30 minutes, sigma 1.6 (a few jobs run for days), 1 min to 5 days.
    double minutes = 30.0 * std::exp(1.6 * standard_normal(rng));
    int64_t seconds = std::clamp<int64_t>(std::llround(minutes * 60.0), 60, 5 * 24 * 3600);
    job.runtime_ms = seconds * 1000;
    job.estimate_ms = power_of_two_minutes(job.runtime_ms);
    gpu_seconds += static_cast<double>(job.gpus) * static_cast<double>(seconds);
  }
  // Exponential gaps whose mean offers `load` of the machine over the arrival period.
  const double mean_gap_s = gpu_seconds / static_cast<double>(jobs.size() == 0 ? 1 : jobs.size()) /
                            (static_cast<double>(options.gpus) * options.load);
  double clock_s = 0;
  for (RefJob& job : jobs) {
    job.submit_ms = std::llround(clock_s) * 1000;
    clock_s += -std::log(uniform(rng)) * mean_gap_s;
  }
  return jobs;
}

std::string wide_trace_csv(const std::vector<RefJob>& jobs) {
  std::ostringstream out;
  out << "id,submit_s,gpus,duration_s,est_s\n";
  for (size_t i = 0; i < jobs.size(); ++i) {
    const RefJob& j = jobs[i];
    out << 'j' << i + 1 << ',' << j.submit_ms / 1000 << ',' << j.gpus << ',' << j.runtime_ms / 1000
        << ',' << j.estimate_ms / 1000 << '\n';
  }
  return out.str();
}

}  // namespace gpuq::reference
