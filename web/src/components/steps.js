// SPDX-License-Identifier: Apache-2.0
// A job's steps (docs/jobs.md, "Steps"), each as the latest run that reached it left it: its
// index (from 0, as gpuq show, gpuq logs --step and the API number them), name, state, start, duration (ticking while it runs),
// exit, the run and the image; the step running now is marked. Nothing for a job without steps.
import { html } from '../lib/html.js';
import { dur, time, ms } from '../lib/format.js';

// The step running now, or null.
function current(job) {
  return job.step != null ? (job.steps || []).find((s) => s.index === job.step) || null : null;
}

// "step 1 of 0–3: train" while a step runs, else null.
export function stepProgress(job) {
  const s = current(job);
  return s ? `step ${s.index} of 0–${job.steps.length - 1}: ${s.name}` : null;
}

export function Steps({ job, now }) {
  const steps = job.steps || [];
  if (!steps.length) return null;
  const running = current(job);
  const images = steps.some((s) => s.image) || job.image;
  return html`<section class="card"><h2>Steps <span class="count">${steps.length}</span></h2>
    <div class="table-wrap"><table class="steps">
      <thead><tr><th>#</th><th>name</th><th>state</th><th>started</th><th>took</th><th>exit</th><th>run</th>
        ${images && html`<th>image</th>`}</tr></thead>
      <tbody>${steps.map((s) => {
        const live = s === running;
        const start = ms(s.started);
        const end = ms(s.ended) || (live ? now : null);
        return html`<tr class=${live ? 'current' : ''} aria-current=${live ? 'step' : null}>
          <td>${s.index}</td><td class="name">${s.name}</td>
          <td><span class=${`badge ${s.state.replace('_', '-')}`}>${s.state}</span></td>
          <td>${time(start)}</td><td>${start && end ? dur(end - start) : '—'}</td>
          <td>${s.exit_code != null ? s.exit_code : s.signal ? `signal ${s.signal}` : '—'}</td>
          <td>${s.run != null ? s.run : '—'}</td>
          ${images && html`<td><code>${s.image || job.image || '—'}</code></td>`}
        </tr>`;
      })}</tbody></table></div></section>`;
}
