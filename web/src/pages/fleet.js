// SPDX-License-Identifier: Apache-2.0
// The fleet (a daemon started with --fleet): GET /v1/fleet, what `gpuq fleet status --json`
// prints (nodes with their heartbeats, jobs by queue: the class and node queues), read by the
// daemon off its API thread. Below it, what reached this daemon: the fleet jobs it runs
// (fleet_id) and its fleet events (nodes stale or back, claims, reclaims, lost claims).
import { html, useState, useCallback } from '../lib/html.js';
import { getJson } from '../lib/api.js';
import { useRefresh } from '../lib/live.js';
import { time, ago, jobLabel } from '../lib/format.js';

const FLEET_KINDS = /^(node\.|fleet\.|job\.(claimed|reclaimed|claim_lost))/;

export function FleetPage() {
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  const load = useCallback(async () => {
    try {
      const [status, probe, fleet] = await Promise.all([getJson('/v1/status?finished=50'),
        getJson('/v1/events?after=9007199254740991&limit=1'),
        getJson('/v1/fleet').catch((e) => (e.status === 404 ? null : { error: e.message, nodes: [], jobs: [] }))]);
      const after = Math.max(0, (probe.last_seq || 0) - 5000);
      const events = [];
      for (let a = after, i = 0; i < 5; i++) {
        const r = await getJson(`/v1/events?after=${a}&limit=1000`);
        events.push(...r.events.filter((e) => FLEET_KINDS.test(e.kind)));
        if (r.events.length < 1000) break;
        a = r.events[r.events.length - 1].seq;
      }
      setData({ fleet, jobs: (status.jobs || []).filter((j) => j.fleet_id != null), events });
      setError(null);
    } catch (e) { setError(e.message); }
  }, []);
  useRefresh(load, [], { ms: 2000, filter: (e) => e.kind === 'stream.open' || FLEET_KINDS.test(e.kind) || e.kind.startsWith('job.') });
  if (!data) return html`<p class=${error ? 'error' : 'muted'}>${error || 'Loading…'}</p>`;
  const nodes = new Map();
  for (const e of data.events) {
    if (e.kind === 'node.stale' || e.kind === 'node.back') nodes.set(e.data.node, e);
    if (e.kind === 'job.reclaimed' && e.data.from && !nodes.has(e.data.from)) nodes.set(e.data.from, e);
  }
  const stopped = [...data.events].reverse().find((e) => e.kind === 'fleet.stopped' || e.kind === 'daemon.started');
  const inFleet = data.fleet || data.jobs.length || data.events.length;
  return html`<div class="fleet-page">
    <h1>Fleet</h1>
    ${error && html`<p class="error">${error}</p>`}
    ${data.fleet && html`<${FleetStatus} fleet=${data.fleet} />`}
    ${!inFleet && html`<p class="muted">This daemon shows no sign of a fleet: no fleet job, no fleet event.
      A daemon joins one with <code>gpuq daemon --fleet ...</code> (docs/fleet.md); <code>gpuq fleet status</code> shows every node.</p>`}
    ${stopped && stopped.kind === 'fleet.stopped' && html`<p class="error">The fleet agent stopped: ${stopped.data.why}</p>`}
    <section class="card"><h2>Nodes this daemon judged <span class="count">${nodes.size}</span></h2>
      ${nodes.size ? html`<div class="table-wrap"><table><thead><tr><th>node</th><th>heartbeat</th><th>since</th><th>why</th></tr></thead>
        <tbody>${[...nodes.entries()].map(([n, e]) => html`<tr><td>${n}</td>
          <td><span class=${`badge ${e.kind === 'node.stale' ? 'failed' : 'succeeded'}`}>${e.kind === 'node.stale' ? 'stale' : e.kind === 'node.back' ? 'live' : 'took over from'}</span></td>
          <td>${ago(e.time_ms)}</td><td>${(e.data && e.data.why) || ''}</td></tr>`)}</tbody></table></div>`
        : html`<p class="muted small">Nodes appear here when this daemon judges one stale or back (heartbeats, docs/fleet.md).</p>`}
    </section>
    <section class="card"><h2>Fleet jobs here <span class="count">${data.jobs.length}</span></h2>
      ${data.jobs.length ? html`<ul class="rows">${data.jobs.map((j) => html`<li class="row">
        <span class=${`badge ${j.state}`}>${j.state}</span><a href=${`#/job/${j.id}`}>${j.id} ${jobLabel(j)}</a>
        <span class="muted">fleet:${j.fleet_id}</span><span class="reason">${j.reason}</span></li>`)}</ul>`
        : html`<p class="muted small">None.</p>`}
    </section>
    <section class="card"><h2>Claims and nodes <span class="count">${data.events.length}</span></h2>
      <ul class="events compact">${[...data.events].reverse().slice(0, 200).map((e) => html`<li>
        <span class="muted">${time(e.time_ms)}</span> <span class="kind">${e.kind}</span>
        ${e.job != null ? html`<a href=${`#/job/${e.job}`}>job ${e.job}</a>` : ''}
        <code class="data">${JSON.stringify(e.data)}</code></li>`)}</ul>
    </section>
  </div>`;
}

function FleetStatus({ fleet }) {
  const queues = new Map();
  for (const j of fleet.jobs || []) {
    const q = j.queue || (j.state === 'queued' ? 'queued' : 'ended');
    if (!queues.has(q)) queues.set(q, []);
    queues.get(q).push(j);
  }
  return html`<section class="card"><h2>Nodes <span class="count">${(fleet.nodes || []).length}</span>
      <span class="muted small">${fleet.url || ''} · this node ${fleet.node || '?'} · ${fleet.as_of_ms ? `read ${ago(fleet.as_of_ms)}` : 'reading…'}</span></h2>
    ${fleet.error && html`<p class="error">The last reading failed: ${fleet.error}</p>`}
    <div class="table-wrap"><table><thead><tr><th>node</th><th>heartbeat</th><th>GPUs free</th><th>classes</th><th>running</th><th>state</th></tr></thead>
      <tbody>${(fleet.nodes || []).map((n) => html`<tr><td><b>${n.name}</b>${n.name === fleet.node ? html` <span class="muted small">(this one)</span>` : ''}</td>
        <td>${n.heartbeat_age_s != null ? `${Math.round(n.heartbeat_age_s)}s ago` : '—'}</td>
        <td>${n.free_gpus ?? '—'}/${n.gpus ?? '—'}</td><td>${(n.classes || []).join(', ')}</td>
        <td>${(n.running || []).length}</td>
        <td><span class=${`badge ${n.stale ? 'failed' : n.draining ? 'draining' : 'succeeded'}`}>${n.stale ? 'stale' : 'up'}</span>
          ${n.draining && html` <span class="badge draining">draining</span>`}</td></tr>`)}</tbody></table></div>
  </section>
  <section class="card"><h2>Fleet queues</h2>
    ${[...queues.entries()].map(([q, jobs]) => html`<h3>${q} <span class="count">${jobs.length}</span></h3>
      <ul class="rows">${jobs.map((j) => html`<li class="row"><span class=${`badge ${j.state === 'queued' ? 'pending' : j.state}`}>${j.state}</span>
        <b>${j.name || j.id}</b><span class="muted">${j.id}</span><span>${j.node ? `on ${j.node}` : ''}</span>
        <span class="muted">attempt ${j.attempt ?? 1}</span><span class="reason">${j.reason || ''}</span></li>`)}</ul>`)}
    ${!queues.size && html`<p class="muted">No fleet job.</p>`}
  </section>`;
}
