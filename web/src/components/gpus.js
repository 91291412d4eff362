// SPDX-License-Identifier: Apache-2.0
// One row per GPU (and per lane): its state, the job running on it with its user and elapsed
// time against its estimate, memory, utilisation, and the processes on it that no run owns
// (foreign) or that a run's cleanup left (attention), each flagged; release for a GPU in
// attention (an admin's act).
import { html } from '../lib/html.js';
import { releaseGpu } from '../lib/actions.js';
import { isAdmin } from '../lib/me.js';
import { dur, mib, jobLabel, lastRun } from '../lib/format.js';

function Progress({ elapsed, estimate }) {
  if (!estimate) return html`<span class="elapsed">${dur(elapsed)}</span>`;
  const f = Math.min(1, elapsed / estimate);
  return html`<span class="elapsed">${dur(elapsed)} / ${dur(estimate)}
    <span class=${`bar ${elapsed > estimate ? 'over' : ''}`}><span class="fill" style=${{ width: `${(f * 100).toFixed(1)}%` }}></span></span>
  </span>`;
}

function Processes({ r }) {
  const foreign = (r.foreign && r.foreign.processes) || [];
  const left = (r.attention && r.attention.processes) || [];
  if (!foreign.length && !left.length) return null;
  return html`<ul class="procs">
    ${foreign.map((p) => html`<li class="flag foreign" title="a process no run owns">
      pid ${p.pid} ${p.user ? `(${p.user})` : ''} ${p.command} ${p.used_memory_mib != null ? mib(p.used_memory_mib) : ''} <b>not a gpuq run</b></li>`)}
    ${left.map((p) => html`<li class="flag attention" title="left by a run whose cleanup was not confirmed">
      pid ${p.pid} ${p.user ? `(${p.user})` : ''} ${p.command} <b>left by job ${r.attention.job}</b></li>`)}
  </ul>`;
}

export function GpuTable({ resources, jobsById, lanes, draining, reload, now }) {
  return html`<div class="table-wrap"><table class="gpus">
    <thead><tr><th>GPU</th><th>state</th><th>job</th><th>user</th><th>elapsed / est.</th><th>memory</th><th>util.</th></tr></thead>
    <tbody>
      ${resources.map((r) => {
        const job = r.job != null ? jobsById.get(r.job) : null;
        const run = lastRun(job);
        const state = draining && r.state === 'free' ? 'draining' : r.state;
        const why = (r.attention && r.attention.why) || (r.foreign && r.foreign.why) || '';
        return html`<tr class=${`gpu state-${r.state}`} data-gpu=${r.name}>
          <td><b>${r.name}</b><div class="muted small">${r.model || ''}</div></td>
          <td><span class=${`badge ${state}`}>${state}</span>
            ${r.preempting_for != null && html`<div class="small">preempting for <a href=${`#/job/${r.preempting_for}`}>job ${r.preempting_for}</a></div>`}
            ${why && html`<div class="small">${why}</div>`}
            ${r.state === 'attention' && isAdmin() && html`<button class="danger small" onClick=${() => releaseGpu(r.name, reload)}>Release…</button>`}
          </td>
          <td>${r.job != null ? html`<a href=${`#/job/${r.job}`}>${r.job} ${job ? jobLabel(job) : ''}</a>` : ''}
            <${Processes} r=${r} /></td>
          <td>${job && job.user ? job.user : ''}</td>
          <td>${run && run.started_at_ms ? html`<${Progress} elapsed=${now - run.started_at_ms} estimate=${job.est_ms} />` : ''}</td>
          <td>${mib(r.memory_used_mib)} <span class="muted">/ ${mib(r.memory_total_mib)}</span></td>
          <td>${r.utilization == null ? '—' : `${r.utilization}%`}</td>
        </tr>`;
      })}
      ${(lanes || []).map((l) => html`<tr class="lane">
        <td><b>lane ${l.name}</b></td>
        <td><span class=${`badge ${l.used >= l.capacity ? 'busy' : 'free'}`}>${l.used}/${l.capacity} used</span></td>
        <td colspan="5">${(l.jobs || []).map((id) => html`<a href=${`#/job/${id}`}>job ${id}</a> `)}</td>
      </tr>`)}
    </tbody>
  </table></div>`;
}
