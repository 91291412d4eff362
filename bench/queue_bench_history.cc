// SPDX-License-Identifier: Apache-2.0
// queue_bench's history part (queue_bench_parts.h): a store seeded with finished jobs, and
// what `gpuq status` and the daemon's memory cost over it.
#include "model/job.h"
#include "queue_bench_parts.h"
#include "store/store.h"

namespace gpuq::bench {

void seed_history(const std::string& home, int count) {
  auto store = gpuq::store::Store::open(home + "/gpuq.db", false);
  if (!store) {
    std::fprintf(stderr, "cannot open the store: %s\n", store.error().message.c_str());
    std::exit(1);
  }
  gpuq::Job job;
  job.spec.cwd = "/home/me/experiments/llm-eval";
  job.spec.argv = {"python", "eval.py", "--model", "ckpt/step-12000", "--tasks", "mbpp,humaneval"};
  job.spec.gpus = 1;
  job.spec.estimate_ms = 3'600'000;
  for (int i = 0; i < 40; ++i) {
    job.spec.env[fmt::format("VAR_{:02}", i)] = std::string(40, static_cast<char>('a' + i % 26));
  }
  job.spec.env["PATH"] = "/home/me/.local/bin:/opt/conda/bin:/usr/local/bin:/usr/bin:/bin";
  int64_t now = gpuq::wall_now_ms();
  auto seeded = (*store)->transaction([&]() -> gpuq::Status {
    for (int i = 0; i < count; ++i) {
      bool failed = i % 10 == 9;
      int64_t ended = now - static_cast<int64_t>(count - i) * 60'000;
      job.spec.name = fmt::format("eval-{}", i);
      job.state = failed ? gpuq::JobState::kFailed : gpuq::JobState::kSucceeded;
      job.submitted_at_ms = ended - 3'700'000;
      job.finished_at_ms = ended;
      job.reason = failed ? "exit code 1" : "";
      job.queue_order = i + 1;
      auto id = (*store)->insert_job(job);
      if (!id) return tl::unexpected(id.error());
      gpuq::Run run;
      run.job_id = *id;
      run.number = 1;
      run.gpus = {fmt::format("gpu{}", i % 8)};
      run.gpu_indices = {i % 8};
      run.shim_pid = 100'000 + i;
      run.started_at_ms = ended - 3'600'000;
      run.run_dir = fmt::format("{}/jobs/{}/run-1", home, *id);
      run.run_id = fmt::format("{}-1-{:08x}", *id, i);
      auto run_id = (*store)->insert_run(run, job.spec.name);
      if (!run_id) return tl::unexpected(run_id.error());
      auto st = (*store)->finish_run(*run_id, ended, failed ? 1 : 0, std::nullopt,
                                failed ? gpuq::RunOutcome::kFailed : gpuq::RunOutcome::kSucceeded);
      if (st) st = (*store)->set_cleanup(*run_id, gpuq::store::CleanupState::kDone);
      if (!st) return st;
      gpuq::Event e;
      e.job = *id;
      e.time_ms = job.submitted_at_ms;
      e.kind = "job.submitted";
      e.data = {{"name", job.spec.name}, {"gpus", 1}, {"priority", 50}};
      if (auto seq = (*store)->append_event(e); !seq) return tl::unexpected(seq.error());
      e.run = 1;
      e.time_ms = run.started_at_ms;
      e.kind = "job.started";
      e.data = {{"gpus", run.gpu_indices}, {"pid", run.shim_pid}, {"run_dir", run.run_dir}};
      if (auto seq = (*store)->append_event(e); !seq) return tl::unexpected(seq.error());
      e.time_ms = ended;
      e.kind = failed ? "job.failed" : "job.succeeded";
      e.data = {{"exit_code", failed ? 1 : 0}, {"duration_ms", 3'600'000}, {"outcome", e.kind.substr(4)}};
      if (auto seq = (*store)->append_event(e); !seq) return tl::unexpected(seq.error());
    }
    return gpuq::ok();
  });
  if (!seeded) {
    std::fprintf(stderr, "cannot seed the store: %s\n", seeded.error().message.c_str());
    std::exit(1);
  }
}

StatusCost measure_status(Daemon& d, int calls) {
  StatusCost cost;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // let the daemon settle
  int pid = d.pid();
  cost.rss_start = rss_mib(pid);
  for (int i = 0; i < calls; ++i) {
    auto t0 = Clock::now();
    auto r = gpuq::os::run_command({d.binary, "--home", d.home, "status"}, gpuq::Millis(120'000));
    cost.ms.push_back(ms_since(t0));
    if (!r || r->exit_code != 0) {
      std::fprintf(stderr, "gpuq status failed: %s\n", r ? r->err.c_str() : r.error().message.c_str());
      d.fail();
    }
  }
  for (int i = 0; i < calls; ++i) {
    auto t0 = Clock::now();
    d.call(gpuq::cli::Method::kGet, "/v1/status", "", 120'000);
    cost.api_ms.push_back(ms_since(t0));
  }
  cost.rss_after = rss_mib(pid);
  return cost;
}

}  // namespace gpuq::bench
