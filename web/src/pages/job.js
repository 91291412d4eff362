// SPDX-License-Identifier: Apache-2.0
// One job: its steps (components/steps.js; the one running now in the title), its spec (script
// text when the daemon sends it, command, directory, scheduling fields, dependencies), every
// run (GPUs given and GPUs its processes were seen on, a mismatch flagged; times, exit,
// outcome, peak memory, a utilisation sparkline), its events, its log, the actions its state
// allows, and (with --http-allow-submit) "resubmit with changes". On a box's daemon the title
// says who submitted it; another user's job (for a user who is no admin) shows no actions, and
// in place of its log a line that says whose it is to read (lib/me.js).
import { html, useState, useCallback, useEffect, useRef } from '../lib/html.js';
import { getJson } from '../lib/api.js';
import { useRefresh, useNow, onEvent } from '../lib/live.js';
import { jobAction } from '../lib/actions.js';
import { mayAct, showsOwners } from '../lib/me.js';
import { jobEvents } from '../lib/jobevents.js';
import { useShared } from '../lib/state.js';
import { LogView } from '../components/logview.js';
import { Sparkline } from '../components/sparkline.js';
import { Resubmit } from '../components/resubmit.js';
import { Steps, stepProgress } from '../components/steps.js';
import { dur, time, mib, jobLabel, runGpus, priorityName, lastRun, ms } from '../lib/format.js';

function Spec({ job }) {
  const rows = [
    ['command', job.command], ['directory', job.cwd], ['user', job.user],
    ['priority', `${priorityName(job.priority)} (${job.priority})`], ['GPUs', job.gpus_requested],
    ['estimate', job.est_ms != null ? dur(job.est_ms) : null], ['timeout', job.timeout_ms != null ? dur(job.timeout_ms) : null],
    ['retries', job.retries || null], ['lanes', (job.lanes || []).join(', ') || null],
    ['not before', job.not_before], ['preempt', job.preempt !== 'never' ? job.preempt : null],
    ['done if', job.done_if], ['image', job.image], ['source', job.source], ['fleet job', job.fleet_id],
    ['learned GPU memory', job.gpu_mem_learned ? `${mib(job.gpu_mem_learned.mib)} (from ${job.gpu_mem_learned.runs} runs)` : null],
    ['submitted', time(job.submitted_at_ms)], ['finished', job.finished_at ? time(ms(job.finished_at)) : null],
  ].filter(([, v]) => v != null && v !== '');
  const deps = job.deps || [];
  return html`<section class="card"><h2>Spec</h2>
    <dl class="spec">${rows.map(([k, v]) => html`<dt>${k}</dt><dd>${String(v)}</dd>`)}</dl>
    ${deps.length > 0 && html`<h3>Dependencies</h3><ul>${deps.map((d) => html`<li>
      ${d.kind || d.type || 'after'} ${d.job_id != null ? html`<a href=${`#/job/${d.job_id}`}>job ${d.job_id}</a>` : ''} ${d.ref || d.name || ''}
      ${d.state ? html`<span class=${`badge ${d.state}`}>${d.state}</span>` : ''}</li>`)}</ul>`}
    ${job.script && job.script.text && html`<h3>Script <span class="muted small">${job.script.name}</span></h3>
      <pre class="script">${job.script.text}</pre>`}
  </section>`;
}

function Runs({ job, now }) {
  const runs = job.runs || [];
  if (!runs.length) return html`<section class="card"><h2>Runs</h2><p class="muted">No run yet.</p></section>`;
  return html`<section class="card"><h2>Runs <span class="count">${runs.length}</span></h2>
    <div class="table-wrap"><table class="runs">
      <thead><tr><th>#</th><th>GPUs</th><th>seen on</th><th>started</th><th>took</th><th>exit</th><th>outcome</th><th>peak mem.</th><th>utilisation</th></tr></thead>
      <tbody>${runs.slice().reverse().map((r) => {
        const end = r.ended_at_ms || (r.outcome === 'running' ? now : null);
        return html`<tr>
          <td>${r.number}${r.first_step > 0 && html`<div class="small muted">from step ${r.first_step}</div>`}</td><td>${runGpus(r)}</td>
          <td>${r.seen_gpus && r.seen_gpus.length ? runGpus({ gpus: r.seen_gpus }) : '—'}
            ${r.gpu_mismatch && html` <span class="badge attention" title="its processes were seen on a GPU the run was not given">mismatch</span>`}</td>
          <td>${time(r.started_at_ms)}</td><td>${end && r.started_at_ms ? dur(end - r.started_at_ms) : '—'}</td>
          <td>${r.exit_code != null ? r.exit_code : r.signal ? `signal ${r.signal}` : '—'}</td>
          <td><span class=${`badge ${r.outcome}`}>${r.outcome}</span>${r.log_note && html`<div class="small">${r.log_note}</div>`}</td>
          <td>${mib(r.peak_gpu_mem_mib)}</td>
          <td class="spark-cell"><${Sparkline} samples=${r.samples} /></td>
        </tr>`;
      })}</tbody></table></div></section>`;
}

function Events({ events, complete }) {
  if (!events) return html`<section class="card"><h2>Events</h2><p class="muted">Loading…</p></section>`;
  return html`<section class="card"><h2>Events <span class="count">${events.length}</span></h2>
    <p class="small"><a href=${`#/events?job=${events.length ? events[0].job : ''}`}>in the live feed</a></p>
    <ul class="events compact">${events.map((e) => html`<li>
      <span class="muted">${time(e.time_ms)}</span> <span class=${`kind k-${e.kind.split('.')[0]}`}>${e.kind}</span>
      ${e.run != null ? html`<span class="muted">run ${e.run}</span>` : ''}
      <code class="data">${JSON.stringify(e.data)}</code></li>`)}</ul>
    ${!complete && html`<p class="muted small">More events exist than this page reads; see the Events page.</p>`}
  </section>`;
}

export function JobPage({ id }) {
  const [job, setJob] = useState(null);
  const [error, setError] = useState(null);
  const [events, setEvents] = useState(null);
  const [run, setRun] = useState(null);
  const s = useShared();
  const jobId = useRef(null);
  const now = useNow({ active: !!job && job.state === 'running' });
  const load = useCallback(async () => {
    try {
      const j = await getJson(`/v1/jobs/${encodeURIComponent(id)}`);
      setJob(j);
      jobId.current = j.id;
      setError(null);
    } catch (e) { setError(e.status === 404 ? `No job ${id}.` : e.message); }
  }, [id]);
  // Its events: those stored (lib/jobevents.js), then each one the stream brings.
  useEffect(() => {
    let alive = true;
    let mine = null;  // the job's id, once known
    const early = [];
    const off = onEvent((e) => {
      if (e.job == null || !e.seq || (mine != null && e.job !== mine)) return;
      if (mine == null) { early.push(e); return; }
      setEvents((r) => (r ? { ...r, events: [...r.events, e] } : r));
    });
    getJson(`/v1/jobs/${encodeURIComponent(id)}`).then(async (j) => {
      const r = await jobEvents(j);
      if (!alive) return;
      mine = j.id;
      const seen = new Set(r.events.map((e) => e.seq));
      setEvents({ ...r, events: r.events.concat(early.filter((e) => e.job === mine && !seen.has(e.seq))) });
    }).catch(() => {});
    return () => { alive = false; off(); };
  }, [id]);
  useRefresh(load, [id], { filter: (e) => e.kind === 'stream.open' || e.job == null || e.job === jobId.current || String(e.job) === String(id) });
  if (!job) return html`<p class=${error ? 'error' : 'muted'}>${error || 'Loading…'}</p>`;
  const latest = lastRun(job);
  const shownRun = run || (latest ? latest.number : null);
  const reload = load;
  const progress = stepProgress(job);
  const mine = mayAct(job);
  return html`<div class="job-page">
    <div class="title-row"><h1>${job.id} ${jobLabel(job)} <span class=${`badge ${job.state}`}>${job.state}</span>
      ${progress && html` <span class="step-progress">${progress}</span>`}</h1>
      ${showsOwners() && html`<span class="owner muted">submitted by ${job.user || 'an unknown user'}</span>`}
      ${mine && html`<span class="actions">
        ${job.state === 'pending' && html`<button onClick=${() => jobAction('hold', job, reload)}>Hold</button>`}
        ${job.state === 'held' && html`<button onClick=${() => jobAction('release', job, reload)}>Release</button>`}
        ${['failed', 'cancelled', 'blocked'].includes(job.state) && html`<button onClick=${() => jobAction('retry', job, reload)}>Retry</button>`}
        ${['pending', 'held', 'running', 'blocked'].includes(job.state) && html`<button class="danger" onClick=${() => jobAction('cancel', job, reload)}>Cancel</button>`}
      </span>`}</div>
    ${job.reason && html`<p class="reason">${job.reason}</p>`}
    ${error && html`<p class="error">${error}</p>`}
    <${Steps} job=${job} now=${now} />
    <${Runs} job=${job} now=${now} />
    <section class="card"><h2>Log
      ${mine && job.runs && job.runs.length > 1 && html` <select aria-label="run" value=${shownRun} onChange=${(e) => setRun(Number(e.target.value))}>
        ${job.runs.map((r) => html`<option value=${r.number}>run ${r.number}</option>`)}</select>`}</h2>
      ${!mine ? html`<p class="muted log-refused">This is ${job.user || 'another user'}'s job: only ${job.user || 'its owner'} or an admin may read its log.</p>`
        : shownRun ? html`<${LogView} jobId=${job.id} run=${shownRun}
          running=${!!(latest && latest.outcome === 'running' && latest.number === shownRun)} />`
        : html`<p class="muted">No run yet, so no log.</p>`}
    </section>
    <${Spec} job=${job} />
    ${s.allowSubmit && html`<${Resubmit} job=${job} />`}
    <${Events} events=${events && events.events} complete=${events && events.complete} />
  </div>`;
}
