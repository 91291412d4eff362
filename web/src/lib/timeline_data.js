// SPDX-License-Identifier: Apache-2.0
// The timeline's data: GET /v1/timeline for the window, or, from a daemon without that
// endpoint, the same shape built from /v1/status (the runs of the last 500 finished jobs and
// of every unfinished one; no predictions, no idle shading).
import { getJson } from './api.js';

const gpuName = (g) => (typeof g === 'number' ? `gpu${g}` : g);

export async function timeline(fromMs, toMs) {
  try {
    return await getJson(`/v1/timeline?from_ms=${Math.round(fromMs)}&to_ms=${Math.round(toMs)}`);
  } catch (e) {
    if (e.status !== 404) throw e;
  }
  const s = await getJson('/v1/status?finished=500');
  const runs = [];
  for (const j of s.jobs || []) {
    for (const r of j.runs || []) {
      const end = r.ended_at_ms;
      if (!r.started_at_ms || r.started_at_ms > toMs || (end != null && end < fromMs)) continue;
      runs.push({ job: j.id, name: j.name, user: j.user, run: r.number, gpus: (r.gpus || []).map(gpuName),
        start_ms: r.started_at_ms, end_ms: end, outcome: r.outcome });
    }
  }
  return { from_ms: fromMs, to_ms: toMs, now_ms: Date.now(), gpus: (s.resources || []).map((r) => r.name),
    runs, predicted: [], idle_while_waiting: [], fallback: true };
}
