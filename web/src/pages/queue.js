// SPDX-License-Identifier: Apache-2.0
// The queue at a glance: every GPU and lane, the watchers' open episodes, the pending jobs in
// serving order (paged by the daemon), held and blocked jobs, and the last finished jobs.
// Reloads on every event (debounced) and ticks elapsed times each second. A job's buttons show
// where the page may act on it (lib/me.js); on a box's daemon every row names its owner.
import { html, useState, useCallback } from '../lib/html.js';
import { getJson } from '../lib/api.js';
import { useRefresh, useNow } from '../lib/live.js';
import { jobAction } from '../lib/actions.js';
import { mayAct, showsOwners } from '../lib/me.js';
import { GpuTable } from '../components/gpus.js';
import { PendingList, isDragging } from '../components/pending.js';
import { dur, time, jobLabel, lastRun, ms } from '../lib/format.js';

const PAGE = 100;

// Serving order: the daemon's serving_position when it sends one, else priority then id.
function servingOrder(a, b) {
  if (a.serving_position != null && b.serving_position != null) return a.serving_position - b.serving_position;
  return a.priority - b.priority || a.id - b.id;
}

function Episodes({ watch }) {
  if (!watch || !watch.length) return null;
  return html`<section class="card warn"><h2>Needs a look</h2><ul class="episodes">
    ${watch.map((e) => html`<li><b>${e.kind}</b> ${e.job != null ? html`<a href=${`#/job/${e.job}`}>job ${e.job}</a>` : ''}
      for ${dur(e.for_ms)} — ${e.detail || e.why || e.key || ''}</li>`)}
  </ul></section>`;
}

function Waiting({ jobs, reload }) {
  if (!jobs.length) return null;
  return html`<section class="card"><h2>Held and blocked <span class="count">${jobs.length}</span></h2>
    <ul class="rows">${jobs.map((j) => html`<li class="row" data-id=${j.id}>
      <span class=${`badge ${j.state}`}>${j.state}</span>
      <a href=${`#/job/${j.id}`}>${j.id} ${jobLabel(j)}</a>
      ${showsOwners() && html`<span class="muted user">${j.user || ''}</span>`}
      <span class="reason">${j.reason}</span>
      ${mayAct(j) && html`<span class="actions">
        ${j.state === 'held' && html`<button onClick=${() => jobAction('release', j, reload)}>Release</button>`}
        ${j.state === 'blocked' && html`<button onClick=${() => jobAction('retry', j, reload)}>Retry</button>`}
        <button class="danger" onClick=${() => jobAction('cancel', j, reload)}>Cancel</button>
      </span>`}</li>`)}</ul></section>`;
}

function Finished({ jobs, total, reload }) {
  return html`<section class="card"><h2>Finished <span class="count">${total ?? jobs.length}</span></h2>
    ${!jobs.length ? html`<p class="muted">Nothing has finished yet.</p>` : html`<ul class="rows">${jobs.map((j) => {
      const run = lastRun(j);
      const took = run && run.started_at_ms && run.ended_at_ms ? run.ended_at_ms - run.started_at_ms : null;
      return html`<li class="row" data-id=${j.id}>
        <span class=${`badge ${run ? run.outcome : j.state}`}>${run ? run.outcome : j.state}</span>
        <a href=${`#/job/${j.id}`}>${j.id} ${jobLabel(j)}</a>
        <span class="muted user">${j.user || ''}</span>
        <span>${took != null ? dur(took) : ''}</span>
        <span class="muted">${time(ms(j.finished_at))}</span>
        ${['failed', 'cancelled'].includes(j.state) && mayAct(j) && html`<span class="actions"><button onClick=${() => jobAction('retry', j, reload)}>Retry</button></span>`}
      </li>`;
    })}</ul>`}</section>`;
}

export function QueuePage() {
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  const [offset, setOffset] = useState(0);
  const now = useNow({ paused: isDragging });
  const load = useCallback(async () => {
    if (isDragging()) { setTimeout(load, 300); return; }
    try {
      setData(await getJson(`/v1/status?finished=10&pending_limit=${PAGE}&pending_offset=${offset}`));
      setError(null);
    } catch (e) { setError(e.message); }
  }, [offset]);
  useRefresh(load, [offset]);
  if (!data) return html`<p class="muted">${error || 'Loading…'}</p>`;
  const jobs = data.jobs || [];
  const byId = new Map(jobs.map((j) => [j.id, j]));
  let pending = jobs.filter((j) => j.state === 'pending').sort(servingOrder);
  let total = data.pending_total;
  let pageOffset = offset;
  if (total == null) {  // a daemon that does not page: page here
    total = pending.length;
    pending = pending.slice(offset, offset + PAGE);
  } else if (data.pending_offset != null) pageOffset = data.pending_offset;
  const running = jobs.filter((j) => j.state === 'running');
  const waiting = jobs.filter((j) => j.state === 'held' || j.state === 'blocked');
  const finished = jobs.filter((j) => !['pending', 'held', 'blocked', 'running'].includes(j.state))
    .sort((a, b) => (ms(b.finished_at) || 0) - (ms(a.finished_at) || 0));
  return html`<div class="queue">
    ${error && html`<p class="error">${error}</p>`}
    <section class="card"><h2>GPUs <span class="muted small">${data.gpu_note || data.gpu_mode || ''}</span>
      ${data.draining && html`<span class="badge draining">draining: no new starts</span>`}</h2>
      <${GpuTable} resources=${data.resources || []} jobsById=${byId} lanes=${data.lanes} draining=${data.draining} reload=${load} now=${now} />
      <p class="muted small">${running.length} running · ${total} pending · ${waiting.length} held or blocked</p>
    </section>
    ${running.some((j) => !j.gpus_requested) && html`<section class="card"><h2>Running without a GPU</h2>
      <ul class="rows">${running.filter((j) => !j.gpus_requested).map((j) => html`<li class="row" data-id=${j.id}>
        <span class="badge running">running</span><a href=${`#/job/${j.id}`}>${j.id} ${jobLabel(j)}</a>
        <span class="muted user">${j.user || ''}</span><span>${dur(now - ((lastRun(j) || {}).started_at_ms || now))}</span>
        ${mayAct(j) && html`<span class="actions"><button class="danger" onClick=${() => jobAction('cancel', j, load)}>Cancel</button></span>`}</li>`)}</ul></section>`}
    <${Episodes} watch=${data.watch} />
    <section class="card"><h2>Pending <span class="count">${total}</span>
      ${data.eta_note && html`<span class="muted small">${data.eta_note}</span>`}</h2>
      <${PendingList} jobs=${pending} total=${total} offset=${pageOffset} pageSize=${PAGE} setOffset=${setOffset} reload=${load} now=${now} />
    </section>
    <${Waiting} jobs=${waiting} reload=${load} />
    <${Finished} jobs=${finished} total=${data.finished_total} reload=${load} />
  </div>`;
}
